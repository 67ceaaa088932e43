//! Limits on fenced content: [`Fit`] says whether a body fits, [`MaxBytes`] is the byte limit,
//! and any closure `Fn(&str) -> bool` is a limit too (a token counter plugs in that way).
//!
//! Truncation happens before wrapping, on the defanged content: the body is cut on a character
//! boundary, a visible note `[truncated: N of M bytes not shown]` is appended inside the fence,
//! and the closing marker follows intact and last. The byte counts in the note are counted on the
//! defanged content.

use std::borrow::Cow;

use crate::detect::{contains_any, defang};

/// Decides whether a fence body fits its budget.
///
/// The body passed in is what will sit between the marker lines, truncation note included.
/// Implementations should be monotone (a shorter prefix never fits worse); the search for the
/// longest fitting prefix relies on it, and when it does not hold the result still fits but may
/// not be the longest.
pub trait Fit: Send + Sync {
    /// Whether `body` fits.
    fn fits(&self, body: &str) -> bool;

    /// An upper bound on the bytes of content that can fit, if the limit knows one; it narrows
    /// the search. `None` (the default) searches the whole content.
    fn max_bytes_hint(&self) -> Option<usize> {
        None
    }
}

/// A limit on the body's length in bytes (truncation note included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxBytes(pub usize);

impl Fit for MaxBytes {
    fn fits(&self, body: &str) -> bool {
        body.len() <= self.0
    }

    fn max_bytes_hint(&self) -> Option<usize> {
        Some(self.0)
    }
}

impl<F> Fit for F
where
    F: Fn(&str) -> bool + Send + Sync,
{
    fn fits(&self, body: &str) -> bool {
        self(body)
    }
}

/// How much of the content a truncated body kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    /// Bytes of the defanged content kept.
    pub kept_bytes: usize,
    /// Bytes of the defanged content in total.
    pub total_bytes: usize,
}

/// The note appended to a truncated body.
pub fn truncation_note(kept: usize, total: usize) -> String {
    format!("\n[truncated: {} of {total} bytes not shown]", total - kept)
}

/// Cuts the defanged `content` so that it fits `limit`, appending the truncation note.
///
/// Returns the content unchanged when it fits. Otherwise keeps the longest prefix (on a character
/// boundary) whose body, note included, fits; if not even the note alone fits, the body is the
/// note alone. The result never contains a marker or control token: if a cut happens to complete
/// an escape sequence into one (say `&#62` cut from `&#620;`), the cut moves back.
pub fn truncate<'a>(content: &'a str, limit: &dyn Fit) -> (Cow<'a, str>, Option<Truncation>) {
    if limit.fits(content) {
        return (Cow::Borrowed(content), None);
    }
    let total = content.len();
    let body_at = |cut: usize| -> String {
        let mut body = String::with_capacity(cut + 48);
        body.push_str(&content[..cut]);
        body.push_str(&truncation_note(cut, total));
        body
    };
    // The largest cut that fits, by binary search over character boundaries. `lo` always fits or
    // is zero; the answer lies in `lo..=hi`.
    let mut lo = 0;
    let mut hi = floor_boundary(
        content,
        limit
            .max_bytes_hint()
            .unwrap_or(total)
            .min(total.saturating_sub(1)),
    );
    while lo < hi {
        let mid = ceil_boundary(content, lo + (hi - lo).div_ceil(2)).min(hi);
        if limit.fits(&body_at(mid)) {
            lo = mid;
        } else {
            hi = floor_boundary(content, mid - 1);
        }
    }
    let mut cut = lo;
    loop {
        let body = body_at(cut);
        if cut == 0 || (!contains_any(&body) && limit.fits(&body)) {
            // At cut zero the body is the note alone, which holds no marker; a defang pass costs
            // nothing there and keeps the guarantee independent of the note's wording.
            let body = defang(&body).into_owned();
            return (
                Cow::Owned(body),
                Some(Truncation {
                    kept_bytes: cut,
                    total_bytes: total,
                }),
            );
        }
        cut = floor_boundary(content, cut - 1);
    }
}

/// The largest character boundary of `text` at or below `at`.
pub fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary of `text` at or above `at`.
pub fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}
