//! XML-ish escaping for text placed inside tags and attributes of a prompt.
//!
//! Exactly five characters are replaced, `&` first so existing entities are escaped again (which
//! is what makes the escaping reversible): `&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`,
//! `"` → `&quot;`, `'` → `&apos;`. Nothing else changes: newlines and control characters pass
//! through, so an element's text may span lines.

use std::borrow::Cow;

/// Escapes `& < > " '`. Returns the input unchanged (borrowed) when it has none of them.
pub fn escape_xml(text: &str) -> Cow<'_, str> {
    let Some(first) = next_special(text.as_bytes()) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    escape_runs(&text[first..], &mut out);
    Cow::Owned(out)
}

/// Appends `text` to `out`, escaped as [`escape_xml`] escapes it.
pub fn escape_xml_into(text: &str, out: &mut String) {
    out.reserve(text.len());
    escape_runs(text, out);
}

/// Appends `text` escaped. The five are ASCII, so they never occur inside a multi-byte character:
/// the text is copied in runs between them.
fn escape_runs(mut text: &str, out: &mut String) {
    while let Some(i) = next_special(text.as_bytes()) {
        out.push_str(&text[..i]);
        // Each entity written as a literal, so it is copied as the few bytes it is rather than
        // through a call for a copy of any length.
        match text.as_bytes()[i] {
            b'&' => out.push_str("&amp;"),
            b'<' => out.push_str("&lt;"),
            b'>' => out.push_str("&gt;"),
            b'"' => out.push_str("&quot;"),
            _ => out.push_str("&apos;"),
        }
        text = &text[i + 1..];
    }
    out.push_str(text);
}

/// The five bytes and the entities that replace them, `&` first.
const ENTITIES: [(u8, &str); 5] = [
    (b'&', "&amp;"),
    (b'<', "&lt;"),
    (b'>', "&gt;"),
    (b'"', "&quot;"),
    (b'\'', "&apos;"),
];

/// The entity that replaces a byte, if it is one of the five.
fn entity(byte: u8) -> Option<&'static str> {
    match byte {
        b'&' => Some(ENTITIES[0].1),
        b'<' => Some(ENTITIES[1].1),
        b'>' => Some(ENTITIES[2].1),
        b'"' => Some(ENTITIES[3].1),
        b'\'' => Some(ENTITIES[4].1),
        _ => None,
    }
}

/// Whether a byte is one of the five.
fn is_special(byte: u8) -> bool {
    entity(byte).is_some()
}

/// The position of the first byte to escape, looked for eight bytes at a time.
fn next_special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The zero bytes of `y`: `(y - ONES) & !y & HIGHS` marks every zero byte, and may mark a byte
    // above one by the borrow, never one below, so the lowest mark of any of the terms below is
    // the first match.
    let zeros = |y: u64| y.wrapping_sub(ONES) & !y & HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        // The five fall in three classes: `"` (0x22) alone; `&` and `'` (0x26, 0x27), the bytes
        // that are 0x27 with the lowest bit set; `<` and `>` (0x3C, 0x3E), the bytes that are
        // 0x3E with the second bit set. No other byte is in a class.
        let found = zeros(word ^ (0x22 * ONES))
            | zeros((word | ONES) ^ (0x27 * ONES))
            | zeros((word | (2 * ONES)) ^ (0x3E * ONES));
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let rest = chunks.remainder();
    rest.iter().position(|&b| is_special(b)).map(|i| offset + i)
}

/// The length of `text` once [`escape_xml`] has escaped it, computed without allocating.
pub fn escaped_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut len = bytes.len();
    let mut at = 0;
    while let Some(i) = bytes.get(at..).and_then(next_special) {
        // Each entity replaces one byte.
        len = len.saturating_add(entity(bytes[at + i]).map_or(0, |e| e.len() - 1));
        at += i + 1;
    }
    len
}

/// Reverses [`escape_xml`]: the five entities it writes become their characters again, in one
/// left-to-right pass (so `&amp;lt;` is `&lt;`, not `<`). Any other `&` is kept as is.
pub fn unescape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let mut matched = false;
        for (c, entity) in ENTITIES {
            if let Some(after) = rest.strip_prefix(entity) {
                out.push(char::from(c));
                rest = after;
                matched = true;
                break;
            }
        }
        if !matched {
            out.push('&');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_the_five_and_entities_again() {
        assert_eq!(
            escape_xml(r#"a & b < c > d " e ' f &amp;"#),
            "a &amp; b &lt; c &gt; d &quot; e &apos; f &amp;amp;"
        );
        assert!(matches!(escape_xml("plain\ntext"), Cow::Borrowed(_)));
        assert_eq!(escape_xml("é<ü>ß'"), "é&lt;ü&gt;ß&apos;");
        assert_eq!(unescape_xml("&amp;lt; &lt; &x; &"), "&lt; < &x; &");
    }

    proptest::proptest! {
        /// The word-at-a-time search finds the first of the five wherever it is, in text of any
        /// length with multi-byte characters and bytes that differ from the five by one bit (or
        /// share a class with them but for one bit).
        #[test]
        fn finds_the_first_byte_to_escape(text in "[a&<>\"'é%=.~!#$;?( ]{0,40}") {
            let expected = text.bytes().position(is_special);
            proptest::prop_assert_eq!(next_special(text.as_bytes()), expected);
            proptest::prop_assert_eq!(escaped_len(&text), escape_xml(&text).len());
            let replaced: String = text
                .chars()
                .map(|c| match c {
                    '&' => "&amp;".to_owned(),
                    '<' => "&lt;".to_owned(),
                    '>' => "&gt;".to_owned(),
                    '"' => "&quot;".to_owned(),
                    '\'' => "&apos;".to_owned(),
                    c => c.to_string(),
                })
                .collect();
            proptest::prop_assert_eq!(escape_xml(&text), replaced);
        }
    }
}
