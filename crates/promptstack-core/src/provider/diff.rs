//! Why a cache broke: where two compositions or two requests first diverge, and which of the
//! first request's breakpoints the second one can still read.

use serde::Serialize;

use crate::compose::{Composition, Slot};
use crate::provider::Request;
use crate::provider::plan::Boundary;

/// How many bytes of each side an excerpt shows.
const EXCERPT: usize = 48;

/// The first place two texts differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// The block (or request unit) the first differing byte is in, on the first side.
    pub block: String,
    /// The byte offset of the first difference: in the system text, or in the unit's canonical
    /// JSON for requests.
    pub offset: usize,
    /// The first side from the difference on (a short excerpt).
    pub left: String,
    /// The second side from the difference on.
    pub right: String,
}

/// Whether one of the first request's breakpoints can still be read by the second request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Survival {
    /// The breakpoint's boundary.
    pub boundary: Boundary,
    /// Where it is in the first request.
    pub at: String,
    /// Its prefix tokens.
    pub prefix_tokens: u32,
    /// Whether the second request has the same prefix (so it can read that cache entry).
    pub survives: bool,
}

/// The byte offset of the first difference, if any (at a character boundary of both texts).
pub fn first_difference(a: &str, b: &str) -> Option<usize> {
    let mut at = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    if at == a.len() && at == b.len() {
        return None;
    }
    while !a.is_char_boundary(at) || !b.is_char_boundary(at) {
        at -= 1;
    }
    Some(at)
}

fn excerpt(text: &str, at: usize) -> String {
    let mut end = (at + EXCERPT).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[at..end].to_owned()
}

/// Where two compositions' system texts first differ, named by the block of the first side
/// (or of the second, when the first side ends there).
pub fn compositions(a: &Composition, b: &Composition) -> Option<Divergence> {
    let at = first_difference(&a.system, &b.system)?;
    let owner = |c: &Composition| {
        c.parts
            .iter()
            .filter(|p| p.slot == Slot::System)
            .find(|p| at < p.range.end || (at == p.range.end && p.range.is_empty()))
            .or_else(|| c.parts.iter().rfind(|p| p.slot == Slot::System))
            .map(|p| p.id.to_string())
    };
    Some(Divergence {
        block: owner(a).or_else(|| owner(b)).unwrap_or_default(),
        offset: at,
        left: excerpt(&a.system, at),
        right: excerpt(&b.system, at),
    })
}

/// The first unit (in prefix order) where two requests differ, with the byte offset of the first
/// difference in that unit's canonical JSON; or the request fields after the units (model,
/// limits, cache options) when every unit is equal.
pub fn requests(a: &Request, b: &Request) -> Option<Divergence> {
    let count = a.units.len().max(b.units.len());
    for i in 0..count {
        match (a.units.get(i), b.units.get(i)) {
            (Some(x), Some(y)) if x.prefix == y.prefix => continue,
            (x, y) => {
                let left = x.map_or("", |u| u.bytes.as_str());
                let right = y.map_or("", |u| u.bytes.as_str());
                let at = first_difference(left, right).unwrap_or(0);
                let named = x.or(y).map(|u| format!("{} ({})", u.label, u.at));
                return Some(Divergence {
                    block: named.unwrap_or_default(),
                    offset: at,
                    left: excerpt(left, at),
                    right: excerpt(right, at),
                });
            }
        }
    }
    let at = first_difference(&a.body, &b.body)?;
    Some(Divergence {
        block: "request fields".into(),
        offset: at,
        left: excerpt(&a.body, at),
        right: excerpt(&b.body, at),
    })
}

/// For each breakpoint of `a`, whether `b` holds the same prefix.
pub fn survivals(a: &Request, b: &Request) -> Vec<Survival> {
    a.plan
        .breakpoints
        .iter()
        .map(|p| {
            let prefix = a.units[p.unit].prefix;
            Survival {
                boundary: p.boundary,
                at: p.at.clone(),
                prefix_tokens: p.prefix_tokens,
                survives: b.units.iter().any(|u| u.prefix == prefix),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_respects_characters() {
        assert_eq!(first_difference("abc", "abc"), None);
        assert_eq!(first_difference("abc", "abd"), Some(2));
        assert_eq!(first_difference("ab", "abc"), Some(2));
        // "é" and "è" share their first byte; the offset stays on a character boundary.
        assert_eq!(first_difference("xé", "xè"), Some(1));
    }
}
