//! Exact counting, fast: the o200k pre-split of ASCII text by hand, and a per-thread memo of piece
//! counts.
//!
//! A text's count is the sum of the byte-pair counts of its pre-split pieces; that is how
//! `bpe_openai::Tokenizer::count` counts. Two things make it faster without changing a count:
//!
//! - **Splitting.** The library finds each piece by matching its split pattern, anchored, at the
//!   start of the rest of the text. For o200k, [`o200k_piece_end`] finds the same piece by hand
//!   whenever ASCII bytes decide it. Where the decision would need the class of a non-ASCII
//!   character (is it a letter, a digit, white space?), the piece is taken from the library's own
//!   split of the rest of the text, which is the very match the library makes there. cl100k
//!   text is split by the library throughout.
//! - **Counting.** Prose and code repeat their pieces (words, indentation, punctuation), so each
//!   thread keeps the counts of recent short pieces in a fixed table ([`Memo`]). An entry holds
//!   the piece's bytes and is compared in full, so a hit is the library's own count of that piece.
//!
//! Memory: one [`Memo`] per thread that counts, [`SLOTS`] × 32 bytes (512 KiB), allocated on the
//! thread's first count and never grown. Threads share nothing, so counting takes no lock. The
//! memo is the one cache outside an agent's `Caches`: it belongs to the thread, not to an agent,
//! and `TokenCounter::clear` empties the calling thread's.

use std::cell::RefCell;

use bpe_openai::Tokenizer;
use bpe_openai::byte_pair_encoding::BytePairEncoding;

use super::Encoding;

/// Counts `text` with `tokenizer`, the tokenizer of `encoding`: the library's count, piece by piece.
pub(super) fn count(encoding: Encoding, tokenizer: &Tokenizer, text: &str) -> usize {
    // A thread that is being torn down has no memo left, and counts without one.
    MEMO.try_with(|memo| count_pieces(encoding, tokenizer, text, Some(&mut memo.borrow_mut())))
        .unwrap_or_else(|_| count_pieces(encoding, tokenizer, text, None))
}

/// Sums the counts of `text`'s pieces, each from `memo` when it holds the piece.
fn count_pieces(
    encoding: Encoding,
    tokenizer: &Tokenizer,
    text: &str,
    mut memo: Option<&mut Memo>,
) -> usize {
    let bytes = text.as_bytes();
    let mut total = 0;
    let mut start = 0;
    while start < bytes.len() {
        let by_hand = match encoding {
            Encoding::O200k => o200k_piece_end(bytes, start),
            Encoding::Cl100k => None,
        };
        let end = by_hand.unwrap_or_else(|| {
            // The library splits the rest of the text as it does at this position; an empty
            // split cannot happen for a non-empty rest, but would end the text as one piece.
            let rest = &text[start..];
            start + tokenizer.split(rest).next().map_or(rest.len(), str::len)
        });
        let piece = &bytes[start..end];
        total += match memo.as_deref_mut() {
            Some(memo) => memo.count(encoding, &tokenizer.bpe, piece),
            None => tokenizer.bpe.count(piece),
        };
        start = end;
    }
    total
}

/// What the o200k split pattern sees in one ASCII byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `A`–`Z` (`\p{Lu}`).
    Upper,
    /// `a`–`z` (`\p{Ll}`).
    Lower,
    /// `0`–`9` (`\p{N}`).
    Digit,
    /// `\r` or `\n`.
    Newline,
    /// The rest of `\s`: space, tab, vertical tab, form feed.
    Space,
    /// Anything else: punctuation, symbols, control characters.
    Other,
    /// Past the end of the text.
    End,
}

/// The class of the byte at `i`; `None` for a byte of a non-ASCII character, whose class only
/// the library's split decides.
fn class(bytes: &[u8], i: usize) -> Option<Class> {
    match bytes.get(i) {
        None => Some(Class::End),
        Some(&byte) => ASCII_CLASSES.get(usize::from(byte)).copied(),
    }
}

/// The class of every ASCII byte, looked up rather than matched: the scanner asks once per byte.
static ASCII_CLASSES: [Class; 128] = {
    let mut classes = [Class::Other; 128];
    let mut byte = 0;
    while byte < classes.len() {
        classes[byte] = match byte as u8 {
            b'A'..=b'Z' => Class::Upper,
            b'a'..=b'z' => Class::Lower,
            b'0'..=b'9' => Class::Digit,
            b'\r' | b'\n' => Class::Newline,
            b' ' | b'\t' | 0x0b | 0x0c => Class::Space,
            _ => Class::Other,
        };
        byte += 1;
    }
    classes
};

/// The end of the run of bytes from `i` whose class is `in_run`.
fn run(bytes: &[u8], mut i: usize, in_run: impl Fn(Class) -> bool) -> Option<usize> {
    while in_run(class(bytes, i)?) {
        i += 1;
    }
    Some(i)
}

/// The end of the o200k pre-split piece that starts at `start` (< `bytes.len()`), when ASCII
/// bytes decide it; `None` leaves the piece to the library.
///
/// The pattern's alternatives, tried in order (the first that matches wins):
/// 1. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
/// 2. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
/// 3. `\p{N}{1,3}`
/// 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
/// 5. `\s*[\r\n]+`
/// 6. `\s+$`
/// 7. `\s+(?!\S)` (the library matches `\s+\s` and gives the last character back)
/// 8. `\s+`
fn o200k_piece_end(bytes: &[u8], start: usize) -> Option<usize> {
    let first = class(bytes, start)?;
    // 1 and 2: an optional prefix character, then a word. ASCII letters are upper or lower case
    // only, so a run of capitals then a run of small letters is the one way to match either.
    let word = match first {
        Class::Space | Class::Other => start + 1,
        _ => start,
    };
    let capitals_end = run(bytes, word, |c| c == Class::Upper)?;
    let word_end = run(bytes, capitals_end, |c| c == Class::Lower)?;
    if word_end > word {
        return contraction_end(bytes, word_end);
    }
    match first {
        // 3: at most three digits; a fourth is the next piece's.
        Class::Digit => {
            let mut end = start + 1;
            while end < start + 3 && class(bytes, end)? == Class::Digit {
                end += 1;
            }
            Some(end)
        }
        Class::Other => punctuation_end(bytes, start),
        Class::Space | Class::Newline => {
            // 4: one space before punctuation belongs to it.
            if bytes[start] == b' ' && class(bytes, start + 1)? == Class::Other {
                return punctuation_end(bytes, start + 1);
            }
            let end = run(bytes, start, |c| matches!(c, Class::Space | Class::Newline))?;
            let white = &bytes[start..end];
            // 5: up to and including the run's last line break.
            if let Some(last) = white.iter().rposition(|&b| b == b'\r' || b == b'\n') {
                return Some(start + last + 1);
            }
            // 6 at the end of the text, 8 for a single character; else 7 leaves the last
            // character to start the next piece.
            if end == bytes.len() || white.len() == 1 {
                Some(end)
            } else {
                Some(end - 1)
            }
        }
        Class::Upper | Class::Lower | Class::End => None,
    }
}

/// `[^\s\p{L}\p{N}]+[\r\n/]*` from `i`, where `bytes[i]` is ASCII punctuation.
fn punctuation_end(bytes: &[u8], i: usize) -> Option<usize> {
    let mut end = run(bytes, i, |c| c == Class::Other)?;
    // Non-ASCII characters are never `\r`, `\n` or `/`, so this run needs no class lookup.
    while matches!(bytes.get(end), Some(b'\r' | b'\n' | b'/')) {
        end += 1;
    }
    Some(end)
}

/// The end of `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `i`: after the contraction, or `i` itself.
/// Case-insensitive matching folds some non-ASCII letters onto these (`ſ` onto `s`), so a
/// non-ASCII byte where a letter is read leaves the piece to the library.
fn contraction_end(bytes: &[u8], i: usize) -> Option<usize> {
    if bytes.get(i) != Some(&b'\'') {
        return Some(i);
    }
    let letter = |k: usize| match bytes.get(k) {
        Some(&b) if !b.is_ascii() => None,
        Some(&b) => Some(b.to_ascii_lowercase()),
        None => Some(0),
    };
    let first = letter(i + 1)?;
    match first {
        b's' | b't' | b'm' | b'd' => return Some(i + 2),
        b'r' | b'v' | b'l' => {}
        _ => return Some(i),
    }
    Some(match (first, letter(i + 2)?) {
        (b'r', b'e') | (b'v', b'e') | (b'l', b'l') => i + 3,
        _ => i,
    })
}

/// The longest piece the memo keeps; longer pieces are rare and counted each time. With the
/// epoch, tag, length and count this makes a slot 32 bytes, so a two-way set is 64.
const KEY_MAX: usize = 28;

/// Entries per thread: two-way sets, so two pieces that hash alike can both stay.
const SLOTS: usize = 16_384;

/// One memoised piece: its bytes, its encoding, its count.
#[derive(Clone, Copy)]
struct Slot {
    /// The memo's epoch when the slot was written; a slot of another epoch is empty.
    epoch: u8,
    /// The encoding's tag ([`tag`]).
    tag: u8,
    len: u8,
    count: u8,
    key: [u8; KEY_MAX],
}

const _: () = assert!(size_of::<Slot>() == 32);

const EMPTY: Slot = Slot {
    epoch: 0,
    tag: 0,
    len: 0,
    count: 0,
    key: [0; KEY_MAX],
};

/// A fixed table of recent piece counts, one per thread.
struct Memo {
    slots: Box<[Slot]>,
    /// The slots written since the memo was last emptied carry this epoch (never 0, the
    /// epoch of [`EMPTY`]).
    epoch: u8,
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::new(Memo {
        slots: vec![EMPTY; SLOTS].into_boxed_slice(),
        epoch: 1,
    });
}

/// Empties this thread's memo, so its next counts start cold (for measuring them).
///
/// Emptying starts a new epoch, which leaves every slot written before it unread, instead of
/// writing the whole table (half a megabyte); the table is wiped only when the epochs wrap.
pub(super) fn forget() {
    // A thread that is being torn down has no memo to empty.
    let _ = MEMO.try_with(|memo| memo.borrow_mut().forget());
}

/// The encoding's tag in a slot (never 0, the tag of [`EMPTY`]).
fn tag(encoding: Encoding) -> u8 {
    match encoding {
        Encoding::O200k => 1,
        Encoding::Cl100k => 2,
    }
}

impl Memo {
    fn forget(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.slots.fill(EMPTY);
            self.epoch = 1;
        }
    }

    /// The byte-pair count of one piece, from the memo when the piece was counted lately.
    fn count(&mut self, encoding: Encoding, bpe: &BytePairEncoding, piece: &[u8]) -> usize {
        // Every single byte is a token of its own in a byte-level vocabulary.
        if piece.len() <= 1 {
            return piece.len();
        }
        let Some(len) = u8::try_from(piece.len())
            .ok()
            .filter(|&len| usize::from(len) <= KEY_MAX)
        else {
            return bpe.count(piece);
        };
        let tag = tag(encoding);
        let hash = xxhash_rust::xxh3::xxh3_64_with_seed(piece, u64::from(tag));
        // The low bits pick the set; truncating the hash is the point.
        let set = 2 * ((hash as usize) & (SLOTS / 2 - 1));
        let Some(pair) = self.slots.get_mut(set..set + 2) else {
            return bpe.count(piece);
        };
        let epoch = self.epoch;
        let holds = |slot: &Slot| {
            slot.epoch == epoch
                && slot.tag == tag
                && slot.len == len
                && slot.key.get(..piece.len()) == Some(piece)
        };
        if holds(&pair[0]) {
            return usize::from(pair[0].count);
        }
        if holds(&pair[1]) {
            // The most recently used entry of a set is kept first, and evicted last.
            pair.swap(0, 1);
            return usize::from(pair[0].count);
        }
        let count = bpe.count(piece);
        // A piece never has more tokens than bytes, so the count fits; if it did not, the
        // piece would simply not be kept.
        if let Ok(stored) = u8::try_from(count) {
            let mut key = [0; KEY_MAX];
            key[..piece.len()].copy_from_slice(piece);
            pair[1] = pair[0];
            pair[0] = Slot {
                epoch,
                tag,
                len,
                count: stored,
                key,
            };
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The pieces as the hand-written split finds them, the library's split filling its gaps.
    fn split(text: &str) -> Vec<&str> {
        let tokenizer = bpe_openai::o200k_base();
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let end = o200k_piece_end(text.as_bytes(), start).unwrap_or_else(|| {
                let rest = &text[start..];
                start + tokenizer.split(rest).next().map_or(rest.len(), str::len)
            });
            pieces.push(&text[start..end]);
            start = end;
        }
        pieces
    }

    fn library_split(text: &str) -> Vec<&str> {
        bpe_openai::o200k_base().split(text).collect()
    }

    #[test]
    fn ascii_split_matches_the_library_on_each_alternative() {
        for text in [
            "Hello world",
            "HELLOworld HELLO's HELLO HeLLo",
            "don't won'T they'RE we've I'm you'll he'd it'x '",
            "(Hello) [HELLO] .hello ..hello 'quoted'",
            "12345 1 12 123 1234567 x86_64 3.14",
            "a  b   c\t\td\n\ne \n f\r\n\r\ng  \n  h",
            "trailing spaces   ",
            "trailing newline\n",
            "path/to/file.rs // comment\n/// doc\n",
            " ... !!!\n\n/ ?? \u{0}\u{1}\u{7f}\u{1c}\u{1f}\u{b}\u{c}",
            "  ",
            " ",
            "x",
        ] {
            assert_eq!(split(text), library_split(text), "{text:?}");
        }
    }

    #[test]
    fn non_ascii_pieces_come_from_the_library() {
        for text in [
            "caf\u{e9} na\u{ef}ve \u{e9}t\u{e9}",
            "it\u{2019}s 'ſ 'S",
            "\u{a0}\u{a0}word\u{3000}x",
            "\u{661}\u{662}\u{663}4",
            "中文 text 中文",
            "😀 emoji 👍🏽",
            "A\u{301}B word\u{301}",
            "space \u{85} line\u{2028}sep",
        ] {
            assert_eq!(split(text), library_split(text), "{text:?}");
        }
    }

    /// One piece's count through this thread's memo.
    fn piece_count(encoding: Encoding, bpe: &BytePairEncoding, piece: &[u8]) -> usize {
        MEMO.with(|memo| memo.borrow_mut().count(encoding, bpe, piece))
    }

    #[test]
    fn forgetting_empties_this_threads_memo() {
        let bpe = &bpe_openai::o200k_base().bpe;
        piece_count(Encoding::O200k, bpe, b" remembered");
        // The slots this epoch can read.
        let held = || {
            MEMO.with(|memo| {
                let memo = memo.borrow();
                memo.slots
                    .iter()
                    .filter(|slot| slot.epoch == memo.epoch)
                    .count()
            })
        };
        assert!(held() > 0);
        forget();
        assert_eq!(held(), 0);
        assert_eq!(
            piece_count(Encoding::O200k, bpe, b" remembered"),
            bpe.count(b" remembered")
        );
        // A slot left alone while the epoch comes round again is not read: its count is made
        // wrong, which a read would return, and the epochs are run through a whole cycle.
        let corrupt = || {
            MEMO.with(|memo| {
                let mut memo = memo.borrow_mut();
                let epoch = memo.epoch;
                let slot = memo
                    .slots
                    .iter_mut()
                    .find(|slot| slot.epoch == epoch)
                    .expect("the piece is held");
                slot.count = 200;
            })
        };
        corrupt();
        assert_eq!(piece_count(Encoding::O200k, bpe, b" remembered"), 200);
        for _ in 0..usize::from(u8::MAX) {
            forget();
        }
        assert_eq!(
            piece_count(Encoding::O200k, bpe, b" remembered"),
            bpe.count(b" remembered")
        );
    }

    #[test]
    fn memo_counts_equal_the_library_counts() {
        let bpe = &bpe_openai::o200k_base().bpe;
        for piece in [
            " hello",
            " hello",
            "ab",
            "ba",
            "lengthy_identifier_name__",
            "a",
        ] {
            let first = piece_count(Encoding::O200k, bpe, piece.as_bytes());
            let again = piece_count(Encoding::O200k, bpe, piece.as_bytes());
            assert_eq!(first, bpe.count(piece.as_bytes()), "{piece:?}");
            assert_eq!(again, first, "{piece:?}");
        }
        // The same bytes under another encoding are another entry.
        let cl100k = &bpe_openai::cl100k_base().bpe;
        let piece = " unbelievable".as_bytes();
        piece_count(Encoding::O200k, bpe, piece);
        assert_eq!(
            piece_count(Encoding::Cl100k, cl100k, piece),
            cl100k.count(piece)
        );
    }

    /// Characters where the split is delicate: every ASCII byte, letters of every case and
    /// category, marks, digits of other scripts, white space the pattern knows, case-folding
    /// look-alikes of the contraction letters, and anything at all.
    fn character() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => (0u8..0x80).prop_map(|b| char::from(b).to_string()),
            2 => prop::sample::select(vec![
                "'s", "'T", "'re", "'VE", "'m", "'Ll", "'d", "'x", " the", " The", " THE", "HTTPServer",
                "\r\n", "  ", "\n\n", " //", "1234", "x86_64", "<|endoftext|>",
            ])
            .prop_map(str::to_owned),
            2 => prop::sample::select(vec![
                '\u{e9}', '\u{c9}', '\u{df}', '\u{1c5}', '\u{2b0}', '\u{301}', '\u{17f}', '\u{212a}',
                '\u{2019}', '\u{661}', '\u{bd}', '\u{2167}', '\u{a0}', '\u{85}', '\u{2028}', '\u{3000}',
                '\u{4e2d}', '\u{30a2}', '\u{1f600}', '\u{200d}', '\u{feff}', '\u{fb01}',
            ])
            .prop_map(String::from),
            1 => any::<char>().prop_map(String::from),
        ]
    }

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(character(), 0..48).prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn counts_equal_the_library_counts(text in text()) {
            for (encoding, tokenizer) in [
                (Encoding::O200k, bpe_openai::o200k_base()),
                (Encoding::Cl100k, bpe_openai::cl100k_base()),
            ] {
                prop_assert_eq!(count(encoding, tokenizer, &text), tokenizer.count(text.as_str()));
            }
            prop_assert_eq!(split(&text), library_split(&text));
        }

        #[test]
        fn counts_stay_exact_after_counting_other_texts(
            text in text(),
            cut in any::<prop::sample::Index>(),
        ) {
            // Counting one part after another warms the memo with pieces that are not the
            // whole text's; the whole count must not change for it.
            let tokenizer = bpe_openai::o200k_base();
            let mut at = cut.index(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let (head, tail) = text.split_at(at);
            prop_assert_eq!(count(Encoding::O200k, tokenizer, head), tokenizer.count(head));
            prop_assert_eq!(count(Encoding::O200k, tokenizer, tail), tokenizer.count(tail));
            prop_assert_eq!(count(Encoding::O200k, tokenizer, &text), tokenizer.count(text.as_str()));
        }
    }
}
