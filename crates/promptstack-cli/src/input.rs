//! Reading the inputs every command shares: the agent spec and send contexts, from files.

use std::path::Path;

use anyhow::Context as _;
use promptstack::{Agent, SendContext, SpecFormat};

use crate::exit::bad_input;

/// Reads a file, turning a missing or unreadable file into a bad-input error.
pub fn read(path: &Path, what: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path)
        .with_context(|| format!("cannot read {what} {}", path.display()))
        .map_err(bad_input)
}

/// Reads and compiles an agent spec (`.json` is JSON, anything else TOML).
pub fn agent(path: &Path) -> anyhow::Result<Agent> {
    let bytes = read(path, "spec")?;
    let name = path.display().to_string();
    promptstack::registry::compile(&bytes, path, SpecFormat::from_name(&name)).map_err(
        |e| match e {
            promptstack::registry::LoadError::Spec(e) => bad_input(e),
            other => bad_input(other),
        },
    )
}

/// Reads a send context (JSON).
pub fn send(path: &Path) -> anyhow::Result<SendContext> {
    let bytes = read(path, "send context")?;
    SendContext::from_json(&bytes, &path.display().to_string()).map_err(bad_input)
}
