//! Reading the inputs every command shares: the agent spec and send contexts, from files.

use std::path::{Path, PathBuf};

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

/// Where a coding agent runs: `--cwd` (and `--agent-dir`) fill the send's `cwd` and
/// `context_files` from disk.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Workspace {
    /// Set the send's `cwd` to DIR and read its context files: the first of AGENTS.md, CLAUDE.md in
    /// each directory from the filesystem root down to DIR (replacing the send's own).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// With --cwd: the agent's own directory, whose AGENTS.md or CLAUDE.md comes first.
    #[arg(long, value_name = "DIR", requires = "cwd")]
    pub agent_dir: Option<PathBuf>,
}

/// Reads a send context and applies `--cwd` / `--agent-dir`.
pub fn send_in(path: &Path, workspace: &Workspace) -> anyhow::Result<SendContext> {
    let mut send = send(path)?;
    if let Some(cwd) = &workspace.cwd {
        let (cwd, files) =
            promptstack::context_files::load_chain(workspace.agent_dir.as_deref(), cwd)
                .map_err(bad_input)?;
        send.cwd = Some(cwd.display().to_string());
        send.context_files = files;
    }
    Ok(send)
}
