//! Builds the chat-assistant `research` request once on a long conversation, for measuring how
//! the cost of conversation building grows with the number of messages.
//!
//! `cargo run --release -p promptstack-core --example conversation_cost -- FORMAT MESSAGES`
//! (FORMAT: `anthropic`, `openai-chat`, `openai-responses` or `gemini`). Setup (loading the
//! spec, assembling, making the conversation, a warm-up build that fills the token memo) runs
//! outside [`build_once`], so an instruction counter limited to that function
//! (`scripts/conversation-cost` runs `valgrind --tool=callgrind --toggle-collect=…build_once…`)
//! counts only the building of one request. The conversation is the five-message tool turn of
//! `crates/promptstack-cli/tests/data/conversations/tool-turn.json` repeated with fresh call ids.

// The example reads the examples from disk; the library itself does no IO.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;
use std::process::ExitCode;

use promptstack_core::provider::{Conversation, Format, Message, RequestOptions, Rules};
use promptstack_core::{Agent, Assembly, SendContext, SpecFormat};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [format, size] = args.as_slice() else {
        eprintln!("usage: conversation_cost FORMAT MESSAGES");
        return ExitCode::from(2);
    };
    let Some(format) = Format::ALL.into_iter().find(|f| f.as_str() == format) else {
        eprintln!("conversation_cost: unknown format `{format}`");
        return ExitCode::from(2);
    };
    let Ok(size) = size.parse::<usize>() else {
        eprintln!("conversation_cost: MESSAGES must be a whole number, got `{size}`");
        return ExitCode::from(2);
    };

    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../../examples/chat-assistant");
    let spec = root.join("agent.toml");
    let agent = Agent::from_source(
        &std::fs::read(&spec).expect("read agent.toml"),
        &spec.display().to_string(),
        SpecFormat::Toml,
    )
    .expect("the example spec loads");
    let ctx = SendContext::from_json(
        &std::fs::read(root.join("sends/research.json")).expect("read research.json"),
        "research",
    )
    .expect("the example send loads");
    let assembly = agent.assemble(&ctx).expect("the example send assembles");
    let turn_path = manifest.join("../promptstack-cli/tests/data/conversations/tool-turn.json");
    let turn = Conversation::from_json(
        &std::fs::read(&turn_path).expect("read tool-turn.json"),
        "tool-turn.json",
    )
    .expect("the tool turn parses");
    let conversation = repeated(&turn, size);
    let mut options = RequestOptions::new(format, "legacy");
    options.model = Some(model(format).to_owned());
    options.expected_gap_seconds = Some(60);

    // Warm-up on one round of the turn: fills the token memo with the texts every round repeats,
    // as the earlier requests of a thread do.
    let warm = repeated(&turn, size.min(turn.messages.len()));
    build_once(&agent, &assembly, &warm, &options);
    let bytes = build_once(&agent, &assembly, &conversation, &options);
    println!("{} {size} {bytes}", format.as_str());
    ExitCode::SUCCESS
}

/// Builds the request once and returns the length of its body (canonical JSON).
#[inline(never)]
fn build_once(
    agent: &Agent,
    assembly: &Assembly,
    conversation: &Conversation,
    options: &RequestOptions,
) -> usize {
    let request = agent
        .request(assembly, conversation, Rules::bundled(), options)
        .expect("the request builds");
    request.body.len()
}

fn model(format: Format) -> &'static str {
    match format {
        Format::Anthropic => "claude-sonnet-4-5",
        Format::OpenaiChat | Format::OpenaiResponses => "gpt-5.6",
        Format::Gemini => "gemini-2.5-flash",
    }
}

/// `turn` repeated until the conversation has `size` messages, each repetition's call ids made
/// unique.
fn repeated(turn: &Conversation, size: usize) -> Conversation {
    let mut messages = Vec::with_capacity(size);
    let mut round = 0;
    while messages.len() < size {
        for message in turn.messages.iter().take(size - messages.len()) {
            let mut message = message.clone();
            match &mut message {
                Message::Assistant { tool_calls, .. } => {
                    for call in tool_calls {
                        call.id = format!("{}_{round}", call.id);
                    }
                }
                Message::Tool { call_id, .. } => *call_id = format!("{call_id}_{round}"),
                Message::User { .. } => {}
            }
            messages.push(message);
        }
        round += 1;
    }
    Conversation { messages }
}
