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

/// The most names one call of [`escape_end_tags`] takes, and the longest name.
pub(crate) const MAX_END_TAG_NAMES: usize = 16;
/// The longest tag name [`escape_end_tags`] takes, in bytes.
pub(crate) const MAX_END_TAG_NAME_BYTES: usize = 64;

/// Whether `name` is a tag name [`escape_end_tags`] takes: an ASCII letter or `_`, then ASCII
/// letters, digits, `_`, `-`, `.` or `:`, at most [`MAX_END_TAG_NAME_BYTES`] bytes.
pub(crate) fn is_tag_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match bytes.first() {
        Some(first) if first.is_ascii_alphabetic() || *first == b'_' => {}
        _ => return false,
    }
    bytes.len() <= MAX_END_TAG_NAME_BYTES && bytes.iter().all(|&b| is_name_byte(b))
}

/// A byte that may continue a tag name.
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.' | b':')
}

/// The positions of the `<` that open an end tag of one of `names` in `text`: `</`, optional
/// ASCII whitespace, the name in any ASCII case, then a byte that cannot continue a name (or the
/// end of the text). Linear in the text: each `</` is looked at once, and the whitespace after
/// one ends before the next.
fn end_tag_starts<'t>(text: &'t str, names: &'t [&'t str]) -> impl Iterator<Item = usize> + 't {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while let Some(found) = bytes
            .get(at..)
            .and_then(|rest| rest.windows(2).position(|w| w == b"</"))
        {
            let start = at + found;
            at = start + 2;
            let mut name_at = at;
            while bytes.get(name_at).is_some_and(u8::is_ascii_whitespace) {
                name_at += 1;
            }
            let rest = &bytes[name_at..];
            let closes = names.iter().any(|name| {
                let name = name.as_bytes();
                rest.len() >= name.len()
                    && rest[..name.len()].eq_ignore_ascii_case(name)
                    && !rest.get(name.len()).copied().is_some_and(is_name_byte)
            });
            if closes {
                return Some(start);
            }
        }
        at = bytes.len();
        None
    })
}

/// Escapes every end tag of one of `names` in `text` by writing its `<` as `&lt;`, so text placed
/// inside those elements cannot close them. Matching is forgiving, as a model reading the prompt
/// may be: the name in any ASCII case, ASCII whitespace allowed after `</`, anything after the
/// name (`>`, whitespace, attributes, the end of the text) except a byte that would make it a
/// longer name. Nothing else changes (other tags, entities, `&` are kept), so text without such
/// an end tag is returned unchanged (borrowed).
pub(crate) fn escape_end_tags<'t>(text: &'t str, names: &[&str]) -> Cow<'t, str> {
    let mut starts = end_tag_starts(text, names).peekable();
    if starts.peek().is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut copied = 0;
    for start in starts {
        out.push_str(&text[copied..start]);
        out.push_str("&lt;");
        copied = start + 1;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The length of `text` once [`escape_end_tags`] has escaped it, computed without allocating.
pub(crate) fn end_tags_escaped_len(text: &str, names: &[&str]) -> usize {
    let count = end_tag_starts(text, names).count();
    text.len().saturating_add(count.saturating_mul(3))
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
        let names = ["project_instructions", "project_context"];
        assert_eq!(
            escape_end_tags(
                "a</project_instructions>b</Project_Context >c</ project_instructions",
                &names
            ),
            "a&lt;/project_instructions>b&lt;/Project_Context >c&lt;/ project_instructions"
        );
        assert!(matches!(
            escape_end_tags(
                "</project_instructions_x> </div> <project_context> &lt;/project_context>",
                &names
            ),
            Cow::Borrowed(_)
        ));
        assert_eq!(end_tags_escaped_len("</x></x\n", &["x"]), 14);
        assert_eq!(escape_end_tags("é</x>ü</", &["x"]), "é&lt;/x>ü</");
        assert!(is_tag_name("project_context") && is_tag_name("a:b.c-d"));
        assert!(
            !is_tag_name("") && !is_tag_name("1a") && !is_tag_name("a b") && !is_tag_name("a>")
        );
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

        /// After escaping no end tag of the names is left, the length is counted exactly, and
        /// only `<` became `&lt;`: undoing that gives back the text with its own `&lt;` undone.
        #[test]
        fn no_end_tag_survives(text in "(</|<|/|[xXyY_ >\t&;lté])*") {
            let names = ["xy", "x"];
            let escaped = escape_end_tags(&text, &names);
            proptest::prop_assert_eq!(end_tag_starts(&escaped, &names).count(), 0);
            proptest::prop_assert_eq!(end_tags_escaped_len(&text, &names), escaped.len());
            proptest::prop_assert_eq!(escaped.replace("&lt;", "<"), text.replace("&lt;", "<"));
        }
    }
}
