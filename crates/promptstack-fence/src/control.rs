//! Chat-template control tokens (`<|im_start|>`, `[INST]`, `<start_of_turn>`…): the second kind
//! of fence that untrusted content must not be able to forge.
//!
//! The list is data, in `data/control_tokens.txt`, compiled in with `include_str!`. Each token is
//! read through the [normalised view](super::normal) into a [`TokenShape`]: the bracket it opens
//! with and how many, the letters, bars and slashes of its body, and how many brackets close it.
//! The detector reads candidates in the content into the same shape and compares, so a token is
//! caught whatever its case, escapes, look-alike brackets or invisible characters. Any
//! `<|name|>` is caught even if it is not listed.

use std::ops::Range;
use std::sync::LazyLock;

use crate::normal::{Sym, unit_at};

/// The control-token list, one token per line (`#` starts a comment line).
pub const CONTROL_TOKENS_TXT: &str = include_str!("data/control_tokens.txt");

/// The longest token body (letters, bars, slashes) the detector reads.
pub(crate) const MAX_BODY: usize = 48;

/// A control token as the detector sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenShape {
    /// `true` for `[`…`]` tokens, `false` for `<`…`>` tokens.
    pub square: bool,
    /// How many opening brackets the token starts with.
    pub open: u32,
    /// The body: lowercase letters and digits, `|` and `/`; joiners and spaces dropped.
    pub body: Vec<u8>,
    /// How many closing brackets end the token.
    pub close: u32,
}

/// The body and closing run read after an opening bracket run.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub body: [u8; MAX_BODY],
    pub len: usize,
    pub close_weight: u32,
    pub close: Range<usize>,
}

impl Candidate {
    pub fn body(&self) -> &[u8] {
        &self.body[..self.len]
    }
}

/// Reads a token body starting at `pos` (just after an opening run) up to its closing bracket.
///
/// Returns `None` as soon as a unit cannot belong to a token: a line break, another opening
/// bracket, a quote, punctuation, or a body longer than [`MAX_BODY`]. Spaces, joiners and
/// invisible characters are skipped.
pub(crate) fn read_candidate(text: &str, mut pos: usize, square: bool) -> Option<Candidate> {
    let mut body = [0u8; MAX_BODY];
    let mut len = 0usize;
    let mut push = |b: u8, len: &mut usize| -> bool {
        if *len == MAX_BODY {
            return false;
        }
        body[*len] = b;
        *len += 1;
        true
    };
    while pos < text.len() {
        let unit = unit_at(text, pos);
        match unit.sym {
            Sym::Space | Sym::Ignorable | Sym::Joiner => {}
            Sym::Word(letters) => {
                for &b in letters.as_bytes() {
                    if !push(b, &mut len) {
                        return None;
                    }
                }
            }
            Sym::Bar => {
                if !push(b'|', &mut len) {
                    return None;
                }
            }
            Sym::Slash => {
                if !push(b'/', &mut len) {
                    return None;
                }
            }
            Sym::Close(_) if !square => {
                let (close, weight) = close_run(text, pos);
                return Some(Candidate {
                    body,
                    len,
                    close_weight: weight,
                    close,
                });
            }
            Sym::CloseSquare if square => {
                return Some(Candidate {
                    body,
                    len,
                    close_weight: 1,
                    close: unit.span,
                });
            }
            _ => return None,
        }
        pos = unit.span.end;
    }
    None
}

/// The run of closing angle brackets starting at `pos` (spaces and invisible characters between
/// them allowed, not after the last one), and its total weight.
pub(crate) fn close_run(text: &str, start: usize) -> (Range<usize>, u32) {
    run(text, start, |sym| match sym {
        Sym::Close(w) => Step::Count(u32::from(w)),
        Sym::Space | Sym::Ignorable => Step::Pass,
        _ => Step::End,
    })
}

/// The run of opening brackets of one sort starting at `start` (spaces, line breaks and
/// invisible characters between them allowed), as a byte range and a total weight.
pub(crate) fn open_run(text: &str, start: usize, square: bool) -> (Range<usize>, u32) {
    open_run_through(text, start, square, false)
}

/// [`open_run`], with joiners (`_ - .`) also allowed between the brackets when `joiners` is set
/// (a marker's run: a reader skips `<_<` as it skips `< <`).
pub(crate) fn open_run_through(
    text: &str,
    start: usize,
    square: bool,
    joiners: bool,
) -> (Range<usize>, u32) {
    run(text, start, |sym| match sym {
        Sym::Open(w) if !square => Step::Count(u32::from(w)),
        Sym::OpenSquare if square => Step::Count(1),
        Sym::Space | Sym::LineBreak | Sym::Ignorable => Step::Pass,
        Sym::Joiner if joiners => Step::Pass,
        _ => Step::End,
    })
}

/// What a run of brackets does with the next unit: counts it, with its weight, passes over it,
/// or ends before it.
enum Step {
    Count(u32),
    Pass,
    End,
}

/// The run starting at `start` that `step` describes, as a byte range (from `start` to the end of
/// its last counted unit) and the total weight of its counted units.
fn run(text: &str, start: usize, step: impl Fn(Sym) -> Step) -> (Range<usize>, u32) {
    let mut pos = start;
    let mut end = start;
    let mut weight = 0u32;
    while pos < text.len() {
        let unit = unit_at(text, pos);
        match step(unit.sym) {
            Step::Count(w) => {
                weight = weight.saturating_add(w);
                end = unit.span.end;
            }
            Step::Pass => {}
            Step::End => break,
        }
        pos = unit.span.end;
    }
    (start..end, weight)
}

/// Reads one token literal from the list into its shape, or `None` if it is not a token shape.
pub fn parse_token(literal: &str) -> Option<TokenShape> {
    if literal.is_empty() {
        return None;
    }
    let square = match unit_at(literal, 0).sym {
        Sym::Open(_) => false,
        Sym::OpenSquare => true,
        _ => return None,
    };
    let (run, open) = open_run(literal, 0, square);
    let candidate = read_candidate(literal, run.end, square)?;
    if candidate.close.end != literal.len() {
        return None;
    }
    Some(TokenShape {
        square,
        open,
        body: candidate.body().to_vec(),
        close: candidate.close_weight,
    })
}

/// The parsed control-token list.
pub fn token_shapes() -> &'static [TokenShape] {
    static SHAPES: LazyLock<Vec<TokenShape>> = LazyLock::new(|| {
        token_lines()
            .filter_map(parse_token)
            .collect::<Vec<TokenShape>>()
    });
    &SHAPES
}

/// The token literals of the list, comments and blank lines removed.
pub fn token_lines() -> impl Iterator<Item = &'static str> {
    CONTROL_TOKENS_TXT
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Whether a candidate read after an opening run of `weight` brackets is a control token.
pub(crate) fn is_control_token(square: bool, weight: u32, candidate: &Candidate) -> bool {
    let body = candidate.body();
    // Any `<|name|>`: the bar-delimited shape is reserved for special tokens across template
    // families, so unknown names are caught too.
    if !square
        && body.len() >= 3
        && body[0] == b'|'
        && body[body.len() - 1] == b'|'
        && body[1..body.len() - 1]
            .iter()
            .all(u8::is_ascii_alphanumeric)
    {
        return true;
    }
    token_shapes().iter().any(|shape| {
        shape.square == square
            && weight >= shape.open
            && candidate.close_weight >= shape.close
            && shape.body == body
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defang;

    #[test]
    fn every_listed_control_token_parses_and_is_caught() {
        let mut n = 0;
        for token in token_lines() {
            assert!(
                parse_token(token).is_some(),
                "{token:?} is not a token shape"
            );
            assert_ne!(defang(token), token, "{token:?} is not defanged");
            n += 1;
        }
        assert!(n >= 40, "{n} tokens");
    }
}
