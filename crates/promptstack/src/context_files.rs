//! Reading a coding agent's context files (AGENTS.md, CLAUDE.md) from disk.
//!
//! The chain, in the order the files apply: the agent's own directory first (its global rules),
//! then every directory from the filesystem root down to the working directory, so the rules
//! nearest the work come last. In each directory the first of [`FILE_NAMES`] that exists is read;
//! a directory contributes at most one file. The core receives the result as data
//! ([`promptstack_core::context::ContextFile`]) and caps, relativises and escapes it there.
//!
//! Every file is read through [`limits::read_within`](crate::limits::read_within) with its own
//! directory as the root: a context file that is a symlink to a file outside its directory, or
//! that is not a regular file (a FIFO, a device), is refused rather than put into the prompt.

use std::path::{Path, PathBuf};

use promptstack_core::context::ContextFile;

use crate::limits::{InputError, InputKind, Limits, read_within, resolve_within};

/// The file names looked for in each directory, in order of preference.
pub const FILE_NAMES: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// Why the chain could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContextFilesError {
    /// The working directory does not exist or is not a directory.
    #[error("the working directory {} cannot be used: {source}", promptstack_core::diagnostic::terminal_safe(&path.display().to_string()))]
    Cwd {
        /// The directory given.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A context file exists but cannot be read: unreadable, not a regular file, or a symlink
    /// out of its directory.
    #[error(transparent)]
    Input(#[from] InputError),
}

/// The working directory made absolute, and the context files of the chain (see the module docs).
///
/// Invalid UTF-8 in a file is replaced with U+FFFD. Only the first
/// [`Limit::ContextFileBytes`](crate::limits::Limit::ContextFileBytes) of a file are read (the
/// core's caps then cut it further and say so).
///
/// # Errors
///
/// [`ContextFilesError::Cwd`] when `cwd` is not an existing directory, and
/// [`ContextFilesError::Input`] when a context file exists but cannot be read, is not a regular
/// file, or resolves outside its directory.
pub fn load_chain(
    agent_dir: Option<&Path>,
    cwd: &Path,
    limits: &Limits,
) -> Result<(PathBuf, Vec<ContextFile>), ContextFilesError> {
    let cwd = std::fs::canonicalize(cwd).map_err(|source| ContextFilesError::Cwd {
        path: cwd.to_owned(),
        source,
    })?;
    if !cwd.is_dir() {
        return Err(ContextFilesError::Cwd {
            path: cwd.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = agent_dir {
        // Absolute, so its files can be shown relative to the working directory.
        dirs.push(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned()));
    }
    let mut ancestors: Vec<&Path> = cwd.ancestors().collect();
    ancestors.reverse();
    dirs.extend(ancestors.into_iter().map(Path::to_owned));
    let mut files = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for dir in dirs {
        for name in FILE_NAMES {
            let path = dir.join(name);
            // Whatever the name is (a file, a link, a FIFO), it is this directory's choice.
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            let real = resolve_within(&path, &dir, InputKind::ContextFile)?;
            // The agent directory may also lie on the chain; each file is read once.
            if seen.insert(real) {
                let bytes = read_within(&path, &dir, InputKind::ContextFile, limits)?;
                files.push(ContextFile {
                    path: path.display().to_string(),
                    content: String::from_utf8_lossy(&bytes).into_owned(),
                });
            }
            break;
        }
    }
    Ok((cwd, files))
}
