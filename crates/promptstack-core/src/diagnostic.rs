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

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use serde::Serialize;

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

/// The most characters of one input [`quote`] shows; the rest is replaced by `…`.
pub const QUOTE_MAX_CHARS: usize = 120;

/// Whether a character must not reach a terminal raw: control characters (C0, DEL, C1), the
/// bidirectional marks, embeddings, overrides and isolates (which reorder what is shown), and the
/// Unicode line and paragraph separators.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// Writes `c` escaped: `\n`, `\r`, `\t`, or `\u{…}` with the code point in hex.
fn write_escaped(out: &mut impl fmt::Write, c: char) -> fmt::Result {
    match c {
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        '\t' => out.write_str("\\t"),
        c => write!(out, "\\u{{{:x}}}", u32::from(c)),
    }
}

/// Input quoted for a message: see [`quote`].
#[derive(Debug, Clone, Copy)]
pub struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.0.chars().enumerate() {
            if i == QUOTE_MAX_CHARS {
                return f.write_str("…");
            }
            if is_unsafe(c) {
                write_escaped(f, c)?;
            } else {
                f.write_char(c)?;
            }
        }
        Ok(())
    }
}

/// Quotes input (a key, a value, a file name) for a message.
///
/// Every character a terminal could act on — control characters such as ESC and BEL, line breaks,
/// bidirectional overrides — is written as an escape (`\u{1b}`, `\n`), and input longer than
/// [`QUOTE_MAX_CHARS`] characters is cut with `…`, so a message is one line of bounded length
/// whatever the input holds.
///
/// ```
/// use promptstack_core::diagnostic::quote;
///
/// assert_eq!(quote("ti\u{1b}[2Jtle").to_string(), "ti\\u{1b}[2Jtle");
/// ```
pub fn quote(input: &str) -> Quoted<'_> {
    Quoted(input)
}

/// A whole message made safe to print: every character [`quote`] escapes is escaped, except the
/// line feeds and tabs that lay the message out. Nothing is cut.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) && c != '\n' && c != '\t' {
            let _ = write_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_and_cuts() {
        assert_eq!(
            quote("a\u{7}b\u{9b}c\u{202e}d\ne").to_string(),
            "a\\u{7}b\\u{9b}c\\u{202e}d\\ne"
        );
        let long = "x".repeat(QUOTE_MAX_CHARS + 5);
        let quoted = quote(&long).to_string();
        assert_eq!(quoted.chars().count(), QUOTE_MAX_CHARS + 1);
        assert!(quoted.ends_with('…'));
    }

    #[test]
    fn terminal_safe_keeps_layout() {
        assert_eq!(terminal_safe("a\n\tb"), "a\n\tb");
        assert_eq!(terminal_safe("a\u{1b}[31m\r"), "a\\u{1b}[31m\\r");
        assert_eq!(terminal_safe("\u{85}\u{2028}"), "\\u{85}\\u{2028}");
    }
}
