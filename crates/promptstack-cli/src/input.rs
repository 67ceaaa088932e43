//! Reading the inputs every command shares: the agent spec and send contexts, from files.
//!
//! Every file and stdin is read through [`promptstack::limits`] with the limits `--limit` set:
//! regular files only, size capped while reading, context files and manifests confined to their
//! folders. A refused input is bad input (exit 2), named with its path.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use promptstack::limits::{InputError, InputKind, Limits};
use promptstack::{Agent, SendContext, SpecFormat};

use crate::exit::bad_input;

static LIMITS: OnceLock<Limits> = OnceLock::new();

/// Sets the limits of this run (once, from `--limit`, before any command runs).
pub fn set_limits(limits: Limits) {
    let _ = LIMITS.set(limits);
}

/// The limits of this run.
pub fn limits() -> &'static Limits {
    LIMITS.get_or_init(Limits::default)
}

/// A refused input as bad input, saying how to raise a size limit when it can be raised.
pub fn refused(error: InputError) -> anyhow::Error {
    match &error {
        InputError::TooLarge { kind, .. }
            if kind.limit().ceiling() > limits().get(kind.limit()) =>
        {
            bad_input(anyhow::anyhow!(
                "{error}; raise it with --limit {}=SIZE (at most {})",
                kind.limit(),
                kind.limit().format_value(kind.limit().ceiling())
            ))
        }
        _ => bad_input(error),
    }
}

/// Reads a file of `kind`, bounded by its limit; a refused or unreadable file is bad input.
pub fn read(path: &Path, kind: InputKind) -> anyhow::Result<Vec<u8>> {
    promptstack::limits::read(path, kind, limits()).map_err(refused)
}

/// Reads stdin as `kind`, bounded by its limit.
pub fn read_stdin(kind: InputKind) -> anyhow::Result<Vec<u8>> {
    promptstack::limits::read_stdin(kind, limits()).map_err(refused)
}

/// Reads and compiles an agent spec (`.json` is JSON, anything else TOML).
pub fn agent(path: &Path) -> anyhow::Result<Agent> {
    let bytes = read(path, InputKind::Spec)?;
    let name = path.display().to_string();
    promptstack::registry::compile(&bytes, path, SpecFormat::from_name(&name), limits()).map_err(
        |e| match e {
            promptstack::registry::LoadError::Input(e) => refused(e),
            promptstack::registry::LoadError::Spec(e) => bad_input(e),
            other => bad_input(other),
        },
    )
}

/// The most eval suites checked beside one spec.
const MAX_SUITES: usize = 256;

/// Checks the eval suites beside a spec (`evals/*.toml` and `evals/*.json` in its folder) as
/// `promptstack eval` and a publish read them, every file they name looked up in the spec's
/// folder. Returns how many were checked; every problem of every bad suite is bad input.
pub fn suites(spec: &Path) -> anyhow::Result<usize> {
    let folder = match spec.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let evals = folder.join("evals");
    let Ok(entries) = std::fs::read_dir(&evals) else {
        return Ok(0);
    };
    let mut paths = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let suite = path.extension().is_some_and(|e| e == "toml" || e == "json");
        if suite && entry.file_type().is_ok_and(|t| t.is_file()) {
            if paths.len() == MAX_SUITES {
                return Err(bad_input(anyhow::anyhow!(
                    "{} holds more than {MAX_SUITES} suites",
                    evals.display()
                )));
            }
            paths.push(path);
        }
    }
    paths.sort();
    let exists = |path: &str| {
        promptstack::spec::check_relative_path(path).is_ok() && folder.join(path).is_file()
    };
    let mut refused = Vec::new();
    for path in &paths {
        let bytes = read(path, InputKind::Spec)?;
        if let Err(error) =
            promptstack_eval::suite::Suite::parse_for(&bytes, &path.display().to_string(), exists)
        {
            refused.push(error.to_string());
        }
    }
    if refused.is_empty() {
        Ok(paths.len())
    } else {
        Err(bad_input(anyhow::anyhow!("{}", refused.join("\n\n"))))
    }
}

/// Reads a send context (JSON) for `agent`: its variables must have the shapes the spec declares.
pub fn send(path: &Path, agent: &Agent) -> anyhow::Result<SendContext> {
    let bytes = read(path, InputKind::Send)?;
    SendContext::from_json_for(&bytes, &path.display().to_string(), agent.spec()).map_err(bad_input)
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
pub fn send_in(path: &Path, workspace: &Workspace, agent: &Agent) -> anyhow::Result<SendContext> {
    let mut send = send(path, agent)?;
    if let Some(cwd) = &workspace.cwd {
        let (cwd, files) =
            promptstack::context_files::load_chain(workspace.agent_dir.as_deref(), cwd, limits())
                .map_err(|e| match e {
                promptstack::context_files::ContextFilesError::Input(e) => refused(e),
                other => bad_input(other),
            })?;
        send.cwd = Some(cwd.display().to_string());
        *send.context_files = files;
    }
    Ok(send)
}
