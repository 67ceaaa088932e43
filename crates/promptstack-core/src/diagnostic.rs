//! Diagnostics: recoverable findings returned as data with a result, never logged.
//!
//! An excluded block, a variable that rendered empty, a note some target forgot: each is a
//! [`Diagnostic`] in the [`Assembly`](crate::Assembly) or in a lint report. Severity `error` marks a
//! lint error (`promptstack lint` fails on it) without stopping the assembly.

use std::fmt;

use serde::Serialize;

use crate::spec::Location;

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
            self.message
        )?;
        if let Some(location) = &self.location {
            write!(f, "\n  --> {location}")?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n   = hint: {hint}")?;
        }
        Ok(())
    }
}
