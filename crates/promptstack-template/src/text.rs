//! Input quoted for a message: whatever a key, a value or a file name holds, a message prints it
//! on one line of bounded length, with nothing a terminal would obey. [`quote`] is the one way a
//! message quotes input; [`terminal_safe`] applies the same escaping to a whole message.
//!
//! Re-exported by the core at `promptstack_core::diagnostic`.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

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
/// use promptstack_template::text::quote;
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
