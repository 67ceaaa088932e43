//! The detector: finds every marker-shaped sequence and control token in a text, and [`defang`]
//! rewrites their brackets so that nothing in the content can pass for a fence.
//!
//! # The grammar
//!
//! Read through the [normalised view](super::normal), a **marker** is
//!
//! ```text
//! open-run  (space | line break | invisible)*  ["/"]  keyword  … [close-run]
//! ```
//!
//! - `open-run`: opening angle brackets of total weight ≥ 2 (`<<`, `<<<`, `≪`, `⋘`, `&lt;&lt;`,
//!   `＜ ＜`, `<_<`…), with spaces, joiners and invisible characters allowed between them;
//! - `keyword`: the letters of a fence kind (`web_content`, `web_selection`, `file_content`,
//!   `mcp_resource`, `tool_result`), optionally preceded by `end`; joiners (`_ - .`), spaces, line
//!   breaks and invisible characters between the letters are ignored, and anything may follow (a
//!   nonce or none, attributes or none);
//! - or, after an open run of weight ≥ 3, any **nonce-shaped name**: an identifier, a joiner and
//!   at least eight hexadecimal digits (`<<<end_page_0123456789abcdef>>>`), whatever the kind
//!   word, so a made-up kind cannot pose as a boundary either;
//! - `close-run`: the first run of closing angle brackets after the keyword on the same line and
//!   outside double quotes (so `origin="a>>>b"` does not end it early).
//!
//! Defanging rewrites the open run to `‹‹‹` and the close run to `›››`; the text between stays.
//! A **control token** is an opening run followed by a token body and a closing bracket that
//! matches the [control-token list](super::control); its brackets are rewritten to `‹`/`›`
//! (angle) or `⟦`/`⟧` (square).
//!
//! Benign text stays byte-identical because the keyword is required: CUDA `<<<grid, block>>>`,
//! C++ `a << b`, heredocs `<<EOF`, git conflict markers and doctest `>>>` never spell a fence kind.
//!
//! # Why detection is linear
//!
//! The scanner keeps one cursor that only moves forward. A fast path (`memchr` over the bytes
//! that can start an opening bracket: `<`, `[`, `&`, `%`, `\` and the lead bytes of the
//! look-alike brackets, each group remembering its next hit) skips clean text. At a
//! candidate it decodes units, each in O(1) (an escape spans at most
//! [`MAX_UNIT_BYTES`](super::normal::MAX_UNIT_BYTES) bytes), in three regions: the opening run,
//! the region after it (keyword or token body), and the tail up to the closing run. Every region
//! stops at the first unit that could open another candidate, and the cursor resumes at or after
//! the end of the run (or of the match), so the regions of different candidates never overlap:
//! each unit is decoded a bounded number of times, whatever the input. Ten megabytes of `<`,
//! `&lt;` or `⋘` form a single run; a zero-width character costs one unit decode and starts
//! nothing. No backtracking, no nested loop over positions.

use std::borrow::Cow;
use std::ops::Range;

use crate::control::{close_run, is_control_token, open_run, open_run_through, read_candidate};
use crate::normal::{Sym, unit_at};

/// The fence kinds' keywords as letter skeletons (joiners removed).
const KEYWORDS: [&[u8]; 5] = [
    b"webcontent",
    b"webselection",
    b"filecontent",
    b"mcpresource",
    b"toolresult",
];

/// The most letters read for a keyword: `end` plus the longest kind.
const MAX_KEYWORD_LETTERS: usize = 16;

/// The fewest hexadecimal digits after a joiner that make a name nonce-shaped.
const MIN_NONCE_DIGITS: usize = 8;

/// How far after the keyword the closing run of a marker is looked for.
const MAX_TAIL_BYTES: usize = 4096;

/// What a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FindingKind {
    /// A fence-shaped marker (`<<<tool_result_…>>>`, `<<<end_web_content>>>`…), whatever its nonce.
    Marker,
    /// A chat-template control token (`<|im_start|>`, `[INST]`…).
    ControlToken,
}

/// One marker or control token found in a text, as byte ranges of the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What was found.
    pub kind: FindingKind,
    /// The opening bracket run (rewritten by [`defang`]).
    pub open: Range<usize>,
    /// The closing bracket run, if one was found (rewritten by [`defang`]).
    pub close: Option<Range<usize>>,
    /// Whether the brackets are square (`[INST]`) rather than angle.
    pub square: bool,
    /// The weight of the opening run (how many brackets it stands for).
    pub open_weight: u32,
    /// The weight of the closing run.
    pub close_weight: u32,
    /// Where the finding ends: after the closing run, or after the keyword when there is none.
    pub end: usize,
}

impl Finding {
    /// The whole finding, from its first opening bracket to its end.
    pub fn span(&self) -> Range<usize> {
        self.open.start..self.end
    }
}

/// The fast path: finds the next byte that can start an opening unit, with `memchr` over four
/// groups of bytes (ASCII brackets and escape introducers; the lead bytes of the non-ASCII
/// look-alike brackets). Each group remembers its next hit, and a group is searched again only
/// once the cursor has passed that hit, so every group scans each byte at most once and clean
/// text streams through at memory speed.
struct Triggers<'a> {
    bytes: &'a [u8],
    /// Per group: the next hit at or after the last search start, or `None` when there is none.
    next: [Option<usize>; 4],
    /// Per group: where its cached hit was searched from (`usize::MAX` before the first search).
    searched_from: [usize; 4],
    /// The end of the last marker run that matched no marker: no candidate starting before it
    /// can be a marker (see `next_finding`).
    no_marker_before: usize,
}

impl<'a> Triggers<'a> {
    fn new(text: &'a str) -> Self {
        Triggers {
            bytes: text.as_bytes(),
            next: [None; 4],
            searched_from: [usize::MAX; 4],
            no_marker_before: 0,
        }
    }

    fn search(&self, group: usize, from: usize) -> Option<usize> {
        let hay = self.bytes.get(from..)?;
        let hit = match group {
            0 => memchr::memchr3(b'<', b'[', b'&', hay),
            1 => memchr::memchr2(b'%', b'\\', hay),
            // Lead bytes of the non-ASCII openers (`NON_ASCII_OPENERS`; a test keeps the two in
            // step): U+2xxx and U+3xxx brackets, fullwidth and small forms.
            2 => memchr::memchr3(0xE2, 0xE3, 0xEF, hay),
            // `«` (U+00AB), `˂` (U+02C2), `ᐸ` (U+1438).
            _ => memchr::memchr3(0xC2, 0xCB, 0xE1, hay),
        };
        hit.map(|p| from + p)
    }

    /// The first trigger at or after `from`. `from` never decreases between calls.
    fn next_at(&mut self, from: usize) -> Option<usize> {
        let mut best: Option<usize> = None;
        for group in 0..4 {
            let stale = self.searched_from[group] == usize::MAX
                || self.next[group].is_some_and(|hit| hit < from);
            if stale {
                self.next[group] = self.search(group, from);
                self.searched_from[group] = from;
            }
            if let Some(hit) = self.next[group] {
                best = Some(best.map_or(hit, |b: usize| b.min(hit)));
            }
        }
        best
    }
}

/// Finds every marker and control token in `text`, in order, without overlaps.
pub fn find_all(text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut triggers = Triggers::new(text);
    while let Some((finding, next)) = next_finding(text, pos, &mut triggers) {
        out.push(finding);
        pos = next;
    }
    out
}

/// Whether `text` contains any marker or control token.
pub fn contains_any(text: &str) -> bool {
    next_finding(text, 0, &mut Triggers::new(text)).is_some()
}

/// Rewrites every marker and control token in `text` so that it no longer reads as one.
///
/// Marker brackets become `‹‹‹` and `›››`; control-token brackets become `‹`/`›` (one per
/// bracket, at most three) or `⟦`/`⟧`. Everything else is copied byte for byte, so text without
/// findings comes back borrowed and unchanged. Idempotent: `defang(defang(x)) == defang(x)`.
pub fn defang(text: &str) -> Cow<'_, str> {
    defang_counted(text).0
}

/// [`defang`], also returning how many findings were rewritten.
pub fn defang_counted(text: &str) -> (Cow<'_, str>, usize) {
    let mut triggers = Triggers::new(text);
    let Some((first, mut pos)) = next_finding(text, 0, &mut triggers) else {
        return (Cow::Borrowed(text), 0);
    };
    let mut out = String::with_capacity(text.len() + 16);
    let mut copied = 0;
    let mut count = 0;
    let mut current = Some(first);
    while let Some(finding) = current {
        count += 1;
        out.push_str(&text[copied..finding.open.start]);
        push_replacement(&mut out, &finding, true);
        copied = finding.open.end;
        if let Some(close) = &finding.close {
            out.push_str(&text[copied..close.start]);
            push_replacement(&mut out, &finding, false);
            copied = close.end;
        }
        current = match next_finding(text, pos, &mut triggers) {
            Some((f, next)) => {
                pos = next;
                Some(f)
            }
            None => None,
        };
    }
    out.push_str(&text[copied..]);
    (Cow::Owned(out), count)
}

fn push_replacement(out: &mut String, finding: &Finding, opening: bool) {
    let (glyph, n) = match (finding.kind, finding.square, opening) {
        (FindingKind::Marker, _, true) => ('\u{2039}', 3),
        (FindingKind::Marker, _, false) => ('\u{203A}', 3),
        (FindingKind::ControlToken, false, true) => ('\u{2039}', finding.open_weight),
        (FindingKind::ControlToken, false, false) => ('\u{203A}', finding.close_weight),
        (FindingKind::ControlToken, true, true) => ('\u{27E6}', finding.open_weight),
        (FindingKind::ControlToken, true, false) => ('\u{27E7}', finding.close_weight),
    };
    for _ in 0..n.clamp(1, 3) {
        out.push(glyph);
    }
}

/// Finds the first finding at or after `pos`; returns it and where the search resumes.
fn next_finding(
    text: &str,
    mut pos: usize,
    triggers: &mut Triggers<'_>,
) -> Option<(Finding, usize)> {
    let bytes = text.as_bytes();
    while pos < text.len() {
        let start = triggers.next_at(pos)?;
        let unit = unit_at(text, start);
        let square = match unit.sym {
            Sym::Open(_) => false,
            Sym::OpenSquare => true,
            _ => {
                // Not an opening bracket after all (`&amp;`, `%20`, `\n`…). Resume one byte on
                // for ASCII triggers, so an escape can never hide the byte after its first.
                pos = if bytes[start] < 0x80 {
                    start + 1
                } else {
                    unit.span.end
                };
                continue;
            }
        };
        let (run, weight) = open_run(text, start, square);
        if !square && start >= triggers.no_marker_before {
            // A marker's brackets may also be split by joiners (`<_<tool_result`), which a
            // reader skips as it skips spaces; a control token's may not.
            let (marker_run, marker_weight) = open_run_through(text, start, false, true);
            if marker_weight >= 2
                && let Some(found) = match_marker(text, marker_run.clone(), marker_weight)
            {
                let next = found.end;
                return Some((found, next));
            }
            // No suffix of this run can match where the whole run did not (the same follower,
            // a smaller weight), so candidates inside it are not read as markers again, and each
            // unit of a run such as `<_<_<_…` is decoded a bounded number of times.
            triggers.no_marker_before = marker_run.end;
        }
        if let Some(candidate) = read_candidate(text, run.end, square)
            && is_control_token(square, weight, &candidate)
        {
            let end = candidate.close.end;
            let found = Finding {
                kind: FindingKind::ControlToken,
                open: run,
                close: Some(candidate.close),
                square,
                open_weight: weight,
                close_weight: candidate.close_weight,
                end,
            };
            return Some((found, end));
        }
        // No suffix of a maximal run can match where the whole run did not: it has the same
        // follower and a smaller weight. So the search resumes after the run.
        pos = run.end;
    }
    None
}

/// Matches the keyword after an opening run and looks for the closing run.
fn match_marker(text: &str, run: Range<usize>, weight: u32) -> Option<Finding> {
    let mut pos = skip(text, run.end, |s| {
        matches!(s, Sym::Space | Sym::LineBreak | Sym::Ignorable)
    });
    if pos < text.len() && unit_at(text, pos).sym == Sym::Slash {
        pos = skip(text, unit_at(text, pos).span.end, |s| {
            matches!(s, Sym::Space | Sym::LineBreak | Sym::Ignorable)
        });
    }
    let name_start = pos;
    let mut letters = [0u8; MAX_KEYWORD_LETTERS];
    let mut ends = [0usize; MAX_KEYWORD_LETTERS];
    let mut n = 0;
    'read: while pos < text.len() && n < MAX_KEYWORD_LETTERS {
        let unit = unit_at(text, pos);
        match unit.sym {
            Sym::Word(w) => {
                for &b in w.as_bytes() {
                    if n == MAX_KEYWORD_LETTERS {
                        break 'read;
                    }
                    letters[n] = b;
                    ends[n] = unit.span.end;
                    n += 1;
                }
            }
            // A line break inside a keyword (`end` U+2028 `web_content`, `end_web` CRLF
            // `_content`) does not stop a reader who joins the pieces.
            Sym::Joiner | Sym::Space | Sym::LineBreak | Sym::Ignorable => {}
            _ => break,
        }
        pos = unit.span.end;
    }
    let keyword_end = match keyword_len(&letters[..n]) {
        Some(used) => ends[used - 1],
        None if weight >= 3 => nonce_shaped(text, name_start)?,
        None => return None,
    };
    let close = find_tail(text, keyword_end);
    let (close, close_weight, end) = match close {
        Some((range, w)) => {
            let end = range.end;
            (Some(range), w, end)
        }
        None => (None, 0, keyword_end),
    };
    Some(Finding {
        kind: FindingKind::Marker,
        open: run,
        close,
        square: false,
        open_weight: weight,
        close_weight,
        end,
    })
}

/// A marker-shaped name whatever its kind word: an identifier, a joiner and at least
/// [`MIN_NONCE_DIGITS`] hexadecimal digits (`end_page_0123456789abcdef`, `x_deadbeef_y`), read
/// from `pos` through the normalised view (spaces, line breaks and invisible characters between
/// the letters are skipped, as for a keyword). Returns where the hexadecimal segment ends.
///
/// The region read stops at the first unit that is not a letter, digit, joiner or blank, so it
/// never overlaps the next candidate and detection stays linear.
fn nonce_shaped(text: &str, mut pos: usize) -> Option<usize> {
    // Letters read before the current segment, and the current segment's length and hexness.
    let mut before = 0usize;
    let mut segment = 0usize;
    let mut all_hex = true;
    let mut segment_end = pos;
    let qualifies = |before: usize, segment: usize, all_hex: bool| {
        before > 0 && all_hex && segment >= MIN_NONCE_DIGITS
    };
    while pos < text.len() {
        let unit = unit_at(text, pos);
        match unit.sym {
            Sym::Word(w) => {
                segment += w.as_bytes().len();
                all_hex &= w.as_bytes().iter().all(u8::is_ascii_hexdigit);
                segment_end = unit.span.end;
            }
            Sym::Joiner => {
                if qualifies(before, segment, all_hex) {
                    return Some(segment_end);
                }
                before += segment;
                segment = 0;
                all_hex = true;
            }
            // A blank may end the digits (`page_0123456789abcdef origin="…"`) or sit between
            // them (`dead beef`): the segment qualifies at the blank or goes on after it.
            Sym::Space | Sym::LineBreak => {
                if qualifies(before, segment, all_hex) {
                    return Some(segment_end);
                }
            }
            Sym::Ignorable => {}
            _ => break,
        }
        pos = unit.span.end;
    }
    qualifies(before, segment, all_hex).then_some(segment_end)
}

/// How many letters of `letters` spell `[end]kind`, if they do.
fn keyword_len(letters: &[u8]) -> Option<usize> {
    let (skip, rest) = match letters.strip_prefix(b"end".as_slice()) {
        Some(rest) if KEYWORDS.iter().any(|k| rest.starts_with(k)) => (3, rest),
        _ => (0, letters),
    };
    KEYWORDS
        .iter()
        .find(|k| rest.starts_with(k))
        .map(|k| skip + k.len())
}

/// The closing run of a marker: the first run of closing brackets after `from` on the same
/// line, outside double quotes; failing that, the first one inside quotes. Stops at anything
/// that could open another candidate, so tails never overlap the next candidate.
fn find_tail(text: &str, from: usize) -> Option<(Range<usize>, u32)> {
    let limit = from.saturating_add(MAX_TAIL_BYTES).min(text.len());
    let mut pos = from;
    let mut in_quote = false;
    let mut fallback = None;
    while pos < limit {
        let unit = unit_at(text, pos);
        match unit.sym {
            Sym::LineBreak | Sym::Open(_) | Sym::OpenSquare => break,
            Sym::Quote => in_quote = !in_quote,
            Sym::Close(_) => {
                let (range, weight) = close_run(text, pos);
                if !in_quote {
                    return Some((range, weight));
                }
                pos = range.end;
                fallback = fallback.or(Some((range, weight)));
                continue;
            }
            _ => {}
        }
        pos = unit.span.end;
    }
    fallback
}

fn skip(text: &str, mut pos: usize, what: impl Fn(Sym) -> bool) -> usize {
    while pos < text.len() {
        let unit = unit_at(text, pos);
        if !what(unit.sym) {
            break;
        }
        pos = unit.span.end;
    }
    pos
}
