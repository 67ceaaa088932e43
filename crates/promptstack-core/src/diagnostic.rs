//! Diagnostics: recoverable findings returned as data with a result, never logged.
//!
//! An excluded block, a variable that rendered empty, a note some target forgot: each is a
//! [`Diagnostic`] in the [`Assembly`](crate::Assembly) or in a lint report. Severity `error` marks a
//! lint error (`promptstack lint` fails on it) without stopping the assembly.
//!
//! Messages quote input (keys, values, file names) that may hold anything, including escape
//! sequences a terminal would obey. [`quote`] is the one way a message quotes input: control
//! characters and bidirectional overrides are escaped and long input is cut. [`terminal_safe`]
//! applies the same escaping to a whole multi-line message before it is printed.

use std::fmt;

use serde::Serialize;

pub use promptstack_template::text::{QUOTE_MAX_CHARS, Quoted, quote, terminal_safe};

/// A position in a source file, one-based, with the column counted in characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Location {
    /// The file name as the caller gave it.
    pub file: String,
    /// One-based line number.
    pub line: usize,
    /// One-based column, in characters (not bytes).
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}",
            terminal_safe(&self.file),
            self.line,
            self.column
        )
    }
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// For information only.
    Info,
    /// Probably a mistake; the output is still what the spec says.
    Warning,
    /// A lint error: the spec breaks a rule, and `promptstack lint` fails.
    Error,
}

impl Severity {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding about a spec or an assembly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// How serious it is.
    pub severity: Severity,
    /// A short, stable, kebab-case code (`empty-variable`, `unplaced-note`, …).
    pub code: &'static str,
    /// What was found, in lowercase.
    pub message: String,
    /// The block, note, tool or target it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Where in the spec, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A new diagnostic.
    pub fn new(severity: Severity, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            severity,
            code,
            message: message.into(),
            subject: None,
            location: None,
            hint: None,
        }
    }

    /// A warning.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, code, message)
    }

    /// A lint error.
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, code, message)
    }

    /// Names what the finding is about.
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// Adds where it is.
    pub fn at(mut self, location: Option<Location>) -> Self {
        self.location = location;
        self
    }

    /// Adds what to do about it.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}]: {}",
            self.severity.as_str(),
            self.code,
            terminal_safe(&self.message)
        )?;
        if let Some(location) = &self.location {
            write!(f, "\n  --> {location}")?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n   = hint: {}", terminal_safe(hint))?;
        }
        Ok(())
    }
}

/// A message with its first letter lowercased (to follow a colon), unless it starts an acronym.
pub(crate) fn lowercase_first(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) if !chars.as_str().starts_with(|c: char| c.is_uppercase()) => {
            first.to_lowercase().chain(chars).collect()
        }
        _ => message.to_owned(),
    }
}
