//! Reading a coding agent's context files (AGENTS.md, CLAUDE.md) from disk.
//!
//! The chain, in the order the files apply: the agent's own directory first (its global rules),
//! then every directory from the filesystem root down to the working directory, so the rules
//! nearest the work come last. In each directory the first of [`FILE_NAMES`] that exists is read;
//! a directory contributes at most one file. The core receives the result as data
//! ([`promptstack_core::context::ContextFile`]) and caps, relativises and escapes it there.

use std::path::{Path, PathBuf};

use promptstack_core::context::ContextFile;

/// The file names looked for in each directory, in order of preference.
pub const FILE_NAMES: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// The most read of one file, in bytes; the core's caps are far smaller, so reading more would only
/// cost memory.
pub const MAX_READ_BYTES: u64 = 1024 * 1024;

/// Why the chain could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ContextFilesError {
    /// The working directory does not exist or is not a directory.
    #[error("the working directory {path} cannot be used: {source}")]
    Cwd {
        /// The directory given.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A context file exists but cannot be read.
    #[error("cannot read the context file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
}

/// The working directory made absolute, and the context files of the chain (see the module docs).
///
/// Invalid UTF-8 in a file is replaced with U+FFFD. A file larger than [`MAX_READ_BYTES`] is read
/// up to that size (the core's caps then cut it further and say so).
///
/// # Errors
///
/// [`ContextFilesError::Cwd`] when `cwd` is not an existing directory, and
/// [`ContextFilesError::Read`] when a context file exists but cannot be read.
pub fn load_chain(
    agent_dir: Option<&Path>,
    cwd: &Path,
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
            if !path.is_file() {
                continue;
            }
            // The agent directory may also lie on the chain; each file is read once.
            let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if seen.insert(key) {
                files.push(ContextFile {
                    path: path.display().to_string(),
                    content: read_capped(&path)?,
                });
            }
            break;
        }
    }
    Ok((cwd, files))
}

fn read_capped(path: &Path) -> Result<String, ContextFilesError> {
    use std::io::Read as _;
    let fail = |source| ContextFilesError::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
