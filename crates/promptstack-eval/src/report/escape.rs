//! Escaping for the markup reports: every string from a suite, a model or a provider passes
//! through here before it reaches XML or HTML.

use std::fmt::Write as _;

/// Writes `text` as XML/HTML character data or an attribute value (the same escaping serves
/// both, quotes included).
///
/// `&`, `<`, `>`, `"` and `'` become references; tab, line feed and carriage return become
/// numeric references, so an attribute keeps them and a carriage return survives line-end
/// normalisation; every other character that XML 1.0 does not allow (the C0 controls,
/// U+FFFE, U+FFFF) and the C1 controls and DEL, which it allows but no reader wants, become
/// U+FFFD. The output is well-formed in any element or double- or single-quoted attribute.
pub(crate) fn write_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c if c < ' ' || ('\u{7f}'..='\u{9f}').contains(&c) => out.push('\u{fffd}'),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

/// Like [`write_escaped`], but keeps tabs and line feeds as they are, for `<pre>` blocks and
/// XML element text, where they are layout (a carriage return is still written as a
/// reference).
pub(crate) fn write_escaped_text(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\t' | '\n' => out.push(c),
            c => {
                let mut buffer = [0u8; 4];
                write_escaped(out, c.encode_utf8(&mut buffer));
            }
        }
    }
}

/// `text` escaped by [`write_escaped`].
pub(crate) fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    write_escaped(&mut out, text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup_and_no_forbidden_character() {
        let out = escaped("<a href=\"x\" b='y'>&\u{0}\u{1b}\u{7f}\u{85}\u{fffe}\t\n\r</a>");
        assert_eq!(
            out,
            "&lt;a href=&quot;x&quot; b=&#39;y&#39;&gt;&amp;\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}&#9;&#10;&#13;&lt;/a&gt;"
        );
        let mut text = String::new();
        write_escaped_text(&mut text, "a\tb\nc\rd<");
        assert_eq!(text, "a\tb\nc&#13;d&lt;");
    }
}
