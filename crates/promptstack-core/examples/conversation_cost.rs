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

use promptstack_core::provider::{Conversation, Format, RequestOptions, Rules};
use promptstack_core::{Agent, Assembly, SendContext};

#[path = "../benches/support/examples.rs"]
mod examples;
#[path = "../benches/support/repeated.rs"]
mod repeated;
use repeated::repeated;

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
    let agent = examples::chat_agent();
    let send = examples::chat_send_bytes("research");
    let ctx = SendContext::from_json(&send, "research").expect("the example send loads");
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
