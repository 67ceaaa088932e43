//! The one rule for the paths a spec's folder is named by: a bundle's files, a registry
//! manifest's path, an eval suite's sends and specs.

use std::fmt;

/// Why a path cannot name a file of a spec's folder (see [`check_relative_path`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    Empty,
    /// The path starts at the root (`/etc/passwd`).
    Absolute,
    /// The path holds a backslash, which some systems read as a separator.
    Backslash,
    /// The path holds a control character.
    Control,
    /// The path has an empty component (`a//b`, a trailing `/`).
    EmptyComponent,
    /// The path has a `.` or `..` component, so it is not normalised (`..` could leave the
    /// folder).
    DotComponent,
}

/// Checks that `path` is a normalised relative path below a spec's folder: not empty, not
/// absolute, no backslash, no control character, no empty, `.` or `..` component. Bundles held in
/// memory (the server's) name their files this way, and a registry reference's manifest path is
/// checked the same way before it is looked up, so no name can reach outside the folder.
///
/// # Errors
///
/// The first rule `path` breaks.
///
/// # Example
///
/// ```
/// use promptstack_core::spec::{PathError, check_relative_path};
/// assert!(check_relative_path("capabilities/payments.toml").is_ok());
/// assert_eq!(check_relative_path("capabilities/../../x.toml"), Err(PathError::DotComponent));
/// assert_eq!(check_relative_path("/etc/shadow"), Err(PathError::Absolute));
/// ```
pub fn check_relative_path(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.starts_with('/') {
        return Err(PathError::Absolute);
    }
    if path.contains('\\') {
        return Err(PathError::Backslash);
    }
    if path.chars().any(char::is_control) {
        return Err(PathError::Control);
    }
    for component in path.split('/') {
        match component {
            "" => return Err(PathError::EmptyComponent),
            "." | ".." => return Err(PathError::DotComponent),
            _ => {}
        }
    }
    Ok(())
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathError::Empty => "the path is empty",
            PathError::Absolute => "the path is absolute; name the file relative to the spec's folder",
            PathError::Backslash => "the path holds a backslash; separate folders with `/`",
            PathError::Control => "the path holds a control character",
            PathError::EmptyComponent => "the path has an empty component (`//` or a trailing `/`)",
            PathError::DotComponent => "the path has a `.` or `..` component; write it normalised, inside the spec's folder",
        })
    }
}

impl std::error::Error for PathError {}
