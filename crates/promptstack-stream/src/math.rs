//! LaTeX math delimiters: `\(…\)` becomes `$…$` and `\[…\]` becomes `$$…$$`; `$$…$$` on its
//! own line becomes a block; a `$` that is a currency sign is escaped.
//!
//! A display block is written as a block (`$$`, the formula, `$$`, each on its own line) only when
//! `\[` starts its line and `\]` ends its line. A `\[…\]` that starts or ends mid-line sits inside a
//! sentence, so it becomes inline math `$…$` rather than a `$$` fence that would split the
//! paragraph (or, in renderers that read `$$` at a line start as a fence, swallow the rest of it).
//!
//! Inline math is written on one line: a line break inside `\(a +` / `b\)` becomes one space
//! (`$a + b$`), the continuation line's indentation and quote markers dropped. To TeX a line
//! break is a space, so the formula means the same; on one line it also renders the same in
//! every renderer, where a `$` formula across lines is read as text by some, and its second
//! line can start a list item or a heading in others. A formula holding a TeX comment (`%`) keeps
//! its line breaks, since there a line break ends the comment; so does one holding a backtick,
//! which may open a code span (or a fence line) that must come out byte for byte.

use crate::Parse;

/// The longest formula, in bytes from the opening `\` to the end of the closing delimiter.
pub(crate) const MATH_MAX: usize = 4000;

/// How far past `\]` the processor looks for the end of the line (whitespace only).
const TRAIL_MAX: usize = 64;

/// A recognised formula.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Math {
    /// Its length in bytes, delimiters included.
    pub len: usize,
    /// Written as a `$$` block rather than inline `$…$`.
    pub block: bool,
}

/// Parses the formula at the start of `s`, which starts with `\(` or `\[`.
///
/// `line_start` says that nothing but the line's indentation and container markers precedes it.
/// The closing delimiter must come within [`MATH_MAX`] bytes and before a blank line; an empty
/// formula is plain text. `eof` says that no more input will come.
pub(crate) fn parse(s: &[u8], line_start: bool, eof: bool) -> Parse<Math> {
    let close = match s[1] {
        b'(' => b')',
        b'[' => b']',
        _ => unreachable!("math::parse called on a non-delimiter"),
    };
    let need = |eof: bool| if eof { Parse::No } else { Parse::Incomplete };
    let mut i = 2;
    let end = loop {
        if i >= MATH_MAX {
            return Parse::No;
        }
        let Some(&b) = s.get(i) else { return need(eof) };
        match b {
            b'\\' => {
                let Some(&next) = s.get(i + 1) else {
                    return need(eof);
                };
                if next == close {
                    break i + 2;
                }
                if next == s[1] {
                    // A second opener before any closer: the first one was never closed.
                    return Parse::No;
                }
                // A control sequence such as `\\` or `\{`: its second byte never closes.
                i += 2;
            }
            b'\n' => {
                // A blank line ends the paragraph, and the formula with it.
                match next_line(s, i + 1, eof) {
                    Parse::Yes(()) => i += 1,
                    Parse::Incomplete => return Parse::Incomplete,
                    Parse::No => return Parse::No,
                }
            }
            _ => i += 1,
        }
    };
    if content(s, end).trim_ascii().is_empty() {
        return Parse::No;
    }
    // A block only if the closing delimiter also ends its line.
    let block = close == b']' && line_start && {
        let Some(ends) = ends_line(s, end, eof) else {
            return Parse::Incomplete;
        };
        ends
    };
    Parse::Yes(Math { len: end, block })
}

/// Parses a display formula `$$…$$` at the start of `s` that starts its line (after the line's
/// indentation and container markers): a block exactly when the closing `$$` ends its line too,
/// like `\[…\]`. A formula whose closing `$$` is followed by text is found with `block: false`
/// and is left as written, whole. Anything else is [`Parse::No`]. The same limits hold as for
/// [`parse`]: [`MATH_MAX`] bytes, no blank line, not empty.
pub(crate) fn parse_dollars(s: &[u8], eof: bool) -> Parse<Math> {
    debug_assert!(s.starts_with(b"$$"));
    let need = |eof: bool| if eof { Parse::No } else { Parse::Incomplete };
    let mut i = 2;
    let end = loop {
        if i >= MATH_MAX {
            return Parse::No;
        }
        let Some(&b) = s.get(i) else { return need(eof) };
        match b {
            // An escaped character (`\$`) never closes.
            b'\\' => i += 2,
            b'$' => match s.get(i + 1) {
                None => return need(eof),
                Some(b'$') => break i + 2,
                Some(_) => i += 1,
            },
            b'\n' => {
                // A blank line ends the paragraph, and the formula with it.
                match next_line(s, i + 1, eof) {
                    Parse::Yes(()) => i += 1,
                    Parse::Incomplete => return Parse::Incomplete,
                    Parse::No => return Parse::No,
                }
            }
            _ => i += 1,
        }
    };
    if content(s, end).trim_ascii().is_empty() {
        return Parse::No;
    }
    // When text follows the closing `$$` the formula stays as written, closer included, so that
    // closer is never read again as the opener of another block.
    let Some(block) = ends_line(s, end, eof) else {
        return Parse::Incomplete;
    };
    Parse::Yes(Math { len: end, block })
}

/// How far past a `$` before a digit the processor looks for a `$` that closes a formula.
pub(crate) const CURRENCY_MAX: usize = 256;

/// What a `$` before a digit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dollar {
    /// A currency sign.
    Currency,
    /// The opening delimiter of a formula `len` bytes long, both `$` included.
    Formula { len: usize },
}

/// Decides what the `$` at the start of `s` (followed by a digit) is: a currency sign unless
/// the next `$` on the same line, within [`CURRENCY_MAX`] bytes and before any backtick, closes
/// a formula — it follows a character other than a space and no digit follows it (the rule of
/// Pandoc's `tex_math_dollars`). An escaped `\$` is skipped.
///
/// `$5 and $10` is two prices (the second `$` follows a space); `$5–$10` too (a digit follows
/// the second); `$2^n$` is a formula.
pub(crate) fn dollar(s: &[u8], eof: bool) -> Parse<Dollar> {
    debug_assert_eq!(s.first(), Some(&b'$'));
    let currency = |eof: bool| {
        if eof {
            Parse::Yes(Dollar::Currency)
        } else {
            Parse::Incomplete
        }
    };
    let mut i = 1;
    loop {
        if i >= CURRENCY_MAX {
            return Parse::Yes(Dollar::Currency);
        }
        let Some(&b) = s.get(i) else {
            return currency(eof);
        };
        match b {
            b'\n' | b'`' => return Parse::Yes(Dollar::Currency),
            b'\\' => i += 2,
            b'$' => {
                if matches!(s[i - 1], b' ' | b'\t') {
                    return Parse::Yes(Dollar::Currency);
                }
                let formula = Parse::Yes(Dollar::Formula { len: i + 1 });
                return match s.get(i + 1) {
                    // The text ends with the closing `$`.
                    None if eof => formula,
                    None => Parse::Incomplete,
                    Some(b'0'..=b'9') => Parse::Yes(Dollar::Currency),
                    Some(_) => formula,
                };
            }
            _ => i += 1,
        }
    }
}

/// Writes an inline formula's body on one line: each line break, with the spaces around it and
/// the continuation line's quote markers (as many as the container `prefix` holds), becomes one
/// space. A body with a TeX comment or a backtick is written as it is (see the module docs).
fn write_inline(body: &str, prefix: &str, out: &mut String) {
    if !body.contains('\n') || body.contains('`') || has_comment(body) {
        out.push_str(body);
        return;
    }
    let quotes = prefix.bytes().filter(|&b| b == b'>').count();
    for (i, line) in body.split('\n').enumerate() {
        let mut line = line.trim_end_matches([' ', '\t', '\r']);
        if i > 0 {
            line = line.trim_start_matches([' ', '\t']);
            for _ in 0..quotes {
                match line.strip_prefix('>') {
                    Some(rest) => line = rest.trim_start_matches([' ', '\t']),
                    None => break,
                }
            }
            if line.is_empty() {
                continue;
            }
            out.push(' ');
        }
        out.push_str(line);
    }
}

/// Whether a formula holds a TeX comment: a `%` not escaped by a backslash.
fn has_comment(body: &str) -> bool {
    let bytes = body.as_bytes();
    memchr::memchr_iter(b'%', bytes).any(|at| {
        let backslashes = bytes[..at]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        backslashes % 2 == 0
    })
}

/// Whether only whitespace (at most [`TRAIL_MAX`] bytes) stands between `s[end]` and the end of
/// its line or of the text; `None` until that is known.
fn ends_line(s: &[u8], end: usize, eof: bool) -> Option<bool> {
    let mut j = end;
    loop {
        match s.get(j) {
            None if eof => return Some(true),
            None => return None,
            Some(b' ' | b'\t' | b'\r') if j - end < TRAIL_MAX => j += 1,
            Some(b'\n') => return Some(true),
            Some(_) => return Some(false),
        }
    }
}

/// Whether the line starting at `s[from]` goes on with text (`Yes`), or is blank (`No`: the
/// paragraph ends there, and any formula with it); `Incomplete` until that is known, `No` at the
/// end of the text or past [`MATH_MAX`].
fn next_line(s: &[u8], from: usize, eof: bool) -> Parse<()> {
    let mut j = from;
    loop {
        match s.get(j) {
            None if eof => return Parse::No,
            None => return Parse::Incomplete,
            Some(b' ' | b'\t' | b'\r') => j += 1,
            Some(b'\n') => return Parse::No,
            Some(_) => return Parse::Yes(()),
        }
        if j >= MATH_MAX {
            return Parse::No;
        }
    }
}

/// The formula between the delimiters.
fn content(s: &[u8], end: usize) -> &[u8] {
    &s[2..end - 2]
}

/// Writes the formula `source` (delimiters included) in dollar style.
///
/// `prefix` is the container prefix of the line (indentation and `>` markers) used to indent the
/// lines a block adds, so the block stays inside its list item or quote.
pub(crate) fn write(source: &str, math: &Math, prefix: &str, out: &mut String) {
    let body = &source[2..math.len - 2];
    if !math.block {
        out.push('$');
        write_inline(body.trim(), prefix, out);
        out.push('$');
        return;
    }
    out.push_str("$$");
    let start = body.trim_start_matches([' ', '\t', '\r']);
    if !start.starts_with('\n') {
        out.push('\n');
        out.push_str(prefix);
    }
    let mut body = start.trim_end_matches([' ', '\t', '\r']);
    // A closing delimiter on its own line inside a quote leaves that line's container prefix
    // (`> `) at the end of the body; the closing `$$` line writes the prefix again, so drop it
    // here rather than leave an empty quoted line (and so a second pass changes nothing).
    if let Some(nl) = body.rfind('\n')
        && !prefix.trim().is_empty()
        && body[nl + 1..] == *prefix.trim_end()
    {
        body = &body[..=nl];
    }
    out.push_str(body);
    if !body.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(prefix);
    out.push_str("$$");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(s: &str, line_start: bool) -> Option<String> {
        match parse(s.as_bytes(), line_start, true) {
            Parse::Yes(m) => {
                let mut out = String::new();
                write(&s[..m.len], &m, "", &mut out);
                out.push_str(&s[m.len..]);
                Some(out)
            }
            _ => None,
        }
    }

    #[test]
    fn inline_and_block() {
        assert_eq!(rewrite(r"\( x^2 \) is", false).as_deref(), Some("$x^2$ is"));
        assert_eq!(rewrite(r"\(a \\ b\)", false).as_deref(), Some(r"$a \\ b$"));
        assert_eq!(rewrite(r"\[x\] mid", true).as_deref(), Some("$x$ mid"));
        assert_eq!(rewrite(r"\[x\]", true).as_deref(), Some("$$\nx\n$$"));
        assert_eq!(
            rewrite("\\[\nx\n\\]\n", true).as_deref(),
            Some("$$\nx\n$$\n")
        );
        assert_eq!(rewrite(r"\[x\]", false).as_deref(), Some("$x$"));
    }

    #[test]
    fn currency_signs() {
        let yes = |s: &str| {
            assert_eq!(
                dollar(s.as_bytes(), true),
                Parse::Yes(Dollar::Currency),
                "{s}"
            );
        };
        let formula = |s: &str, len: usize| {
            assert_eq!(
                dollar(s.as_bytes(), true),
                Parse::Yes(Dollar::Formula { len }),
                "{s}"
            );
        };
        yes("$5 and $10 total.");
        yes("$10 total.");
        yes("$5–$10");
        yes("$5 `$x$`");
        yes("$5\n$x$");
        yes(r"$5 \$ and");
        formula("$2^n$ grows", 5);
        formula("$5$", 3);
        assert_eq!(dollar(b"$5 and", false), Parse::Incomplete);
        assert_eq!(dollar(b"$5x$", false), Parse::Incomplete);
    }

    #[test]
    fn display_dollars() {
        let parse = |s: &str| parse_dollars(s.as_bytes(), true);
        assert_eq!(
            parse("$$x$$"),
            Parse::Yes(Math {
                len: 5,
                block: true
            })
        );
        assert_eq!(
            parse("$$x$$  \nnext"),
            Parse::Yes(Math {
                len: 5,
                block: true
            })
        );
        assert_eq!(
            parse("$$\nx\n$$\n"),
            Parse::Yes(Math {
                len: 7,
                block: true
            })
        );
        // Text after the closer: found, but not a block (left as written, closer included).
        assert_eq!(
            parse("$$x$$ mid"),
            Parse::Yes(Math {
                len: 5,
                block: false
            })
        );
        assert_eq!(parse("$$ $$"), Parse::No);
        assert_eq!(parse("$$x\n\ny$$"), Parse::No);
        assert_eq!(parse_dollars(b"$$x$", false), Parse::Incomplete);
    }

    #[test]
    fn inline_math_is_written_on_one_line() {
        let inline = |s: &str, prefix: &str| {
            let Parse::Yes(m) = parse(s.as_bytes(), false, true) else {
                panic!("{s:?} is math");
            };
            let mut out = String::new();
            write(&s[..m.len], &m, prefix, &mut out);
            out
        };
        assert_eq!(inline("\\(a +\nb\\)", ""), "$a + b$");
        assert_eq!(inline("\\(a +  \r\n   b\\)", ""), "$a + b$");
        assert_eq!(inline("\\(a\nb\nc\\)", ""), "$a b c$");
        assert_eq!(inline("\\[x =\ny\\] mid", ""), "$x = y$");
        // In a quote the continuation line's markers go; a `>` beyond them is the formula's.
        assert_eq!(inline("\\(a\n> b\\)", "> "), "$a b$");
        assert_eq!(inline("\\(a\n> > b\\)", "> > "), "$a b$");
        assert_eq!(inline("\\(a\n> > b\\)", "> "), "$a > b$");
        assert_eq!(inline("\\(a\n> b\\)", ""), "$a > b$");
        // In a list item the continuation's indentation goes.
        assert_eq!(inline("\\(a +\n   b\\)", "   "), "$a + b$");
        // A TeX comment ends at the line break, so the break stays.
        assert_eq!(inline("\\(a % note\nb\\)", ""), "$a % note\nb$");
        assert_eq!(inline("\\(50\\% +\nb\\)", ""), "$50\\% + b$");
        assert_eq!(inline("\\(a \\\\% c\nb\\)", ""), "$a \\\\% c\nb$");
        // A backtick may open a code span or a fence line: the text stays as written.
        assert_eq!(inline("\\(a `x\ny` b\\)", ""), "$a `x\ny` b$");
        assert_eq!(inline("\\(a\n```\nb\\)", ""), "$a\n```\nb$");
    }

    #[test]
    fn plain_text() {
        assert_eq!(rewrite(r"\(\)", false), None);
        assert_eq!(rewrite(r"\( x", false), None);
        assert_eq!(rewrite("\\( x\n\n y \\)", false), None);
        assert_eq!(rewrite(r"\(x\\)", false), None);
        assert_eq!(parse(br"\(x", false, false), Parse::Incomplete);
        assert_eq!(parse(br"\[x\]", true, false), Parse::Incomplete);
    }
}
