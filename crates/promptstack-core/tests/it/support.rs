//! What the modules share: the chat assistant example, compiled, and its sends, read.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use promptstack_core::{Agent, SendContext};

/// The bundled examples, loaded as the benches load them.
#[path = "../../benches/support/examples.rs"]
pub mod examples;

pub use examples::{chat_agent, chat_dir};

/// The chat assistant example's send `sends/{name}.json`.
pub fn chat_send(name: &str) -> SendContext {
    let bytes = examples::chat_send_bytes(name);
    SendContext::from_json(&bytes, &format!("{name}.json")).unwrap()
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
