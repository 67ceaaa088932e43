//! What the modules share: the chat assistant example, compiled, and its sends, read.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};

use promptstack_core::{Agent, SendContext, SpecFormat};

/// The bundled examples, loaded as the benches load them.
#[path = "../../benches/support/examples.rs"]
pub mod examples;

/// The chat assistant example's directory.
pub fn chat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant")
}

/// The chat assistant example's agent.
pub fn chat_agent() -> Agent {
    let spec = std::fs::read(chat_dir().join("agent.toml")).unwrap();
    Agent::from_source(&spec, "agent.toml", SpecFormat::Toml).unwrap()
}

/// The chat assistant example's send `sends/{name}.json`.
pub fn chat_send(name: &str) -> SendContext {
    let file = format!("{name}.json");
    let bytes = std::fs::read(chat_dir().join("sends").join(&file)).unwrap();
    SendContext::from_json(&bytes, &file).unwrap()
}

/// The request for `assembly` with an empty conversation and the bundled rules.
pub fn fresh_request(
    agent: &Agent,
    assembly: &promptstack_core::Assembly,
    options: &promptstack_core::provider::RequestOptions,
) -> Result<promptstack_core::provider::Request, promptstack_core::Error> {
    use promptstack_core::provider::{Conversation, Rules};
    agent.request(
        assembly,
        &Conversation::default(),
        Rules::bundled(),
        options,
    )
}

/// Runs `target` over 3,000 deterministic byte strings of up to 200 bytes: a fuzz target's
/// smoke run, so `cargo test` exercises what the fuzzer does.
pub fn fuzz_smoke(target: impl Fn(&[u8])) {
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..3000 {
        let bytes = prop::collection::vec(any::<u8>(), 0..200)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        target(&bytes);
    }
}
