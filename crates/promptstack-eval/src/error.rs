//! The crate's one error type: what went wrong, located at the row or setting that caused it.

use std::fmt;

/// Why statistics could not be computed or a report could not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// The kind of an [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The run holds no result rows.
    NoRows,
    /// A setting of [`crate::stats::StatsConfig`] is out of range.
    InvalidConfig,
    /// A row is malformed (an empty name, a repeated repetition).
    InvalidRow,
    /// The input is larger than the statistics are bounded to handle.
    TooLarge,
    /// A report could not be serialised.
    Report,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, lowercase, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
