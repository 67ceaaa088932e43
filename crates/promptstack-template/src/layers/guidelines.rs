//! Guidelines: a list of one-line rules, normalised so that overlapping sources never repeat one.
//!
//! [`normalize`] trims each entry, drops the ones left empty, and removes exact duplicates with the
//! first position winning. Comparison is exact (case-sensitive, code point by code point) after
//! trimming; inner whitespace, including newlines, is kept.
//!
//! # Which characters are whitespace
//!
//! Trimming strips, from both ends, exactly the characters ECMAScript's `String.prototype.trim`
//! strips (WhiteSpace and LineTerminator, Unicode 15), so a list normalised here equals one
//! normalised by a JavaScript harness:
//!
//! | code points | names |
//! |---|---|
//! | U+0009, U+000B, U+000C, U+0020, U+00A0, U+FEFF | tab, vertical tab, form feed, space, no-break space, byte order mark |
//! | U+000A, U+000D, U+2028, U+2029 | line feed, carriage return, line separator, paragraph separator |
//! | U+1680, U+2000–U+200A, U+202F, U+205F, U+3000 | the other `Space_Separator` characters |
//!
//! This differs from Rust's `str::trim` (Unicode `White_Space`) in two places: U+FEFF is stripped
//! here and U+0085 (next line) is not. U+180E and U+200B (zero-width space) are not whitespace.

/// Whether `c` is ECMAScript whitespace or a line terminator (see the module docs).
pub fn is_trim_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// Trims [`is_trim_whitespace`] characters from both ends.
pub fn trim(text: &str) -> &str {
    text.trim_matches(is_trim_whitespace)
}

/// Trims every entry, drops empty ones, and keeps the first of each exact duplicate, in order.
pub fn normalize<S: AsRef<str>>(entries: &[S]) -> Vec<String> {
    kept(entries.iter().map(AsRef::as_ref))
        .into_iter()
        .map(|(_, text)| text.to_owned())
        .collect()
}

/// Up to this many entries, a duplicate is found by comparing an entry with the ones kept before
/// it, which is cheaper than hashing them all; a longer list is deduplicated through a hash set,
/// so the work stays linear.
const COMPARED: usize = 16;

/// What [`normalize`] keeps, without copying: each kept entry's position and its trimmed text.
pub(crate) fn kept<'a>(entries: impl ExactSizeIterator<Item = &'a str>) -> Vec<(usize, &'a str)> {
    let mut out: Vec<(usize, &str)> = Vec::with_capacity(entries.len());
    if entries.len() <= COMPARED {
        for (i, entry) in entries.enumerate().take(COMPARED) {
            let trimmed = trim(entry);
            if !trimmed.is_empty() && out.iter().all(|(_, kept)| *kept != trimmed) {
                out.push((i, trimmed));
            }
        }
        return out;
    }
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    for (i, entry) in entries.enumerate() {
        let trimmed = trim(entry);
        if !trimmed.is_empty() && seen.insert(trimmed) {
            out.push((i, trimmed));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Short lists (compared) and long ones (hashed) keep exactly the first of each trimmed
        /// entry, in order.
        #[test]
        fn keeps_the_first_of_each(
            entries in prop::collection::vec(
                prop::sample::select(vec!["", " ", "a", " a", "a\u{3000}", "b", "ab", "B"]),
                0..40,
            )
        ) {
            let mut expected: Vec<(usize, &str)> = Vec::new();
            for (i, entry) in entries.iter().enumerate() {
                let trimmed = trim(entry);
                if !trimmed.is_empty() && !expected.iter().any(|(_, kept)| *kept == trimmed) {
                    expected.push((i, trimmed));
                }
            }
            prop_assert_eq!(kept(entries.iter().copied()), expected);
        }
    }

    #[test]
    fn trims_dedupes_first_wins() {
        let got = normalize(&[
            "  Be brief ",
            "",
            "\u{FEFF}Be brief\u{3000}",
            "be brief",
            "\u{0085}Be brief",
            "\t\n",
            "Two\n lines",
        ]);
        assert_eq!(
            got,
            ["Be brief", "be brief", "\u{0085}Be brief", "Two\n lines"]
        );
    }
}
