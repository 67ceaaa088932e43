//! What the modules share: the chat assistant example, compiled, and its sends, read.

#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use promptstack_core::{Agent, SendContext, SpecFormat};

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
