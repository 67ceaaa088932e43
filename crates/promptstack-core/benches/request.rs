//! Planning and building one provider request on top of an assembly, for every chat-assistant
//! send and every format (the assembly itself is measured by the `assemble` bench).
//!
//! Each iteration builds the request for one send from its (already made) assembly: compose the
//! target, split the system text, lay out the units, count tokens (memoised), place breakpoints,
//! fingerprint the prefixes, write canonical JSON, and price the request cold and repeated.
//!
//! `request_conversation` builds the `research` send's request on conversations of 1,000, 10,000
//! and 100,000 messages (the five-message tool turn of the CLI tests, repeated with fresh call
//! ids), in every format: ten times the messages should cost about ten times the time.

// Benchmarks read the examples from disk; the library itself does no IO.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use promptstack_core::provider::{Conversation, Format, RequestOptions, Rules};
use promptstack_core::{Agent, SendContext, SpecFormat};

#[path = "support/repeated.rs"]
mod repeated;
use repeated::repeated;

fn model(format: Format) -> &'static str {
    match format {
        Format::Anthropic => "claude-sonnet-4-5",
        Format::OpenaiChat | Format::OpenaiResponses => "gpt-5.6",
        Format::Gemini => "gemini-2.5-flash",
    }
}

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant");
    let spec = root.join("agent.toml");
    let agent = Agent::from_source(
        &std::fs::read(&spec).unwrap(),
        &spec.display().to_string(),
        SpecFormat::Toml,
    )
    .unwrap();
    let mut paths: Vec<_> = std::fs::read_dir(root.join("sends"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    paths.sort();
    let conversation_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../promptstack-cli/tests/data/conversations/tool-turn.json");
    let conversation = Conversation::from_json(
        &std::fs::read(&conversation_path).unwrap(),
        "tool-turn.json",
    )
    .unwrap();
    let rules = Rules::bundled();
    let mut group = c.benchmark_group("request");
    for path in paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let ctx = SendContext::from_json(&std::fs::read(&path).unwrap(), &name).unwrap();
        let assembly = agent.assemble(&ctx).unwrap();
        for format in Format::ALL {
            let mut options = RequestOptions::new(format, "legacy");
            options.model = Some(model(format).to_owned());
            options.expected_gap_seconds = Some(60);
            for (label, conv) in [
                ("new", Conversation::default()),
                ("conversation", conversation.clone()),
            ] {
                group.bench_with_input(
                    BenchmarkId::new(format!("{}/{label}", format.as_str()), &name),
                    &(),
                    |b, _| b.iter(|| agent.request(&assembly, &conv, rules, &options).unwrap()),
                );
            }
        }
    }
    group.finish();
    conversations(c, &agent, &root, &conversation);
}

/// Conversation sizes, in messages.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn conversations(c: &mut Criterion, agent: &Agent, root: &Path, turn: &Conversation) {
    let ctx = SendContext::from_json(
        &std::fs::read(root.join("sends/research.json")).unwrap(),
        "research",
    )
    .unwrap();
    let assembly = agent.assemble(&ctx).unwrap();
    let rules = Rules::bundled();
    let mut group = c.benchmark_group("request_conversation");
    group.sample_size(10);
    for size in SIZES {
        let conv = repeated(turn, size);
        group.throughput(criterion::Throughput::Elements(size as u64));
        for format in Format::ALL {
            let mut options = RequestOptions::new(format, "legacy");
            options.model = Some(model(format).to_owned());
            options.expected_gap_seconds = Some(60);
            group.bench_with_input(BenchmarkId::new(format.as_str(), size), &(), |b, _| {
                b.iter(|| agent.request(&assembly, &conv, rules, &options).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
