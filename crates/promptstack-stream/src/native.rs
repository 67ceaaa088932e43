//! Provider-native citation shapes in black lenticular brackets: `【3】`, `【3†title】`, `【1,2】`,
//! `【1-3】` and the file-search shape `【4:0†source】`.
//!
//! Digits are required right after the opening bracket, so genuine CJK bracket text such as
//! `【注意】` is never taken for a citation.

use crate::{Indices, Parse};

/// The longest native shape, in bytes from `【` to `】` inclusive; anything longer is plain text.
pub(crate) const NATIVE_MAX: usize = 256;

const OPEN: &[u8] = "【".as_bytes();
const CLOSE: &[u8] = "】".as_bytes();
const DAGGER: &[u8] = "†".as_bytes();
const EN_DASH: &[u8] = "–".as_bytes();
const FULLWIDTH_COMMA: &[u8] = "，".as_bytes();
const IDEOGRAPHIC_COMMA: &[u8] = "、".as_bytes();

/// A recognised native shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Native {
    /// Its length in bytes.
    pub len: usize,
    /// The source numbers it names, ranges expanded, in order; empty for the file-search shape,
    /// whose numbers are the provider's own positions and never ours.
    pub indices: Indices,
}

/// Whether `s` starts with the opening bracket `【`.
pub(crate) fn starts(s: &[u8]) -> bool {
    s.starts_with(OPEN)
}

/// A cursor over the candidate that reports "need more input" at the end of the buffer.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
    eof: bool,
}

/// Why a step could not continue.
enum Stop {
    /// The buffer ended before the shape could be decided.
    Incomplete,
    /// The text is not a native citation.
    No,
}

impl Cursor<'_> {
    fn peek(&self) -> Result<u8, Stop> {
        if self.i >= NATIVE_MAX {
            Err(Stop::No)
        } else if self.i < self.s.len() {
            Ok(self.s[self.i])
        } else if self.eof {
            Err(Stop::No)
        } else {
            Err(Stop::Incomplete)
        }
    }

    /// Consumes `token` if the input continues with it. Multi-byte tokens are always complete in
    /// the buffer because the buffer holds whole characters, so a lead byte decides.
    fn eat(&mut self, token: &[u8]) -> Result<bool, Stop> {
        let b = self.peek()?;
        if b == token[0] && self.s[self.i..].starts_with(token) {
            self.i += token.len();
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn spaces(&mut self) -> Result<(), Stop> {
        while self.peek()? == b' ' {
            self.i += 1;
        }
        Ok(())
    }

    /// One to six ASCII digits.
    fn number(&mut self) -> Result<u32, Stop> {
        let mut value = 0u32;
        let mut digits = 0;
        loop {
            let b = self.peek()?;
            if b.is_ascii_digit() {
                if digits == 6 {
                    return Err(Stop::No);
                }
                value = value * 10 + u32::from(b - b'0');
                digits += 1;
                self.i += 1;
            } else if digits == 0 {
                return Err(Stop::No);
            } else {
                return Ok(value);
            }
        }
    }

    /// An optional `†title` tail, then the closing bracket.
    fn tail(&mut self) -> Result<(), Stop> {
        self.spaces()?;
        if self.eat(DAGGER)? {
            loop {
                // Only a newline or a lenticular bracket (lead byte E3) can end a title.
                let limit = self.s.len().min(NATIVE_MAX);
                if self.i < limit {
                    self.i = memchr::memchr2(b'\n', 0xE3, &self.s[self.i..limit])
                        .map_or(limit, |at| self.i + at);
                }
                let b = self.peek()?;
                if b == b'\n' || self.s[self.i..].starts_with(OPEN) {
                    return Err(Stop::No);
                }
                if self.eat(CLOSE)? {
                    return Ok(());
                }
                self.i += 1;
            }
        }
        if self.eat(CLOSE)? {
            Ok(())
        } else {
            Err(Stop::No)
        }
    }
}

/// Parses the native shape at the start of `s` (which starts with `【`).
///
/// `eof` says that no more input will come, so a shape still open at the end is plain text.
pub(crate) fn parse(s: &[u8], eof: bool) -> Parse<Native> {
    debug_assert!(starts(s));
    let mut cursor = Cursor {
        s,
        i: OPEN.len(),
        eof,
    };
    match shape(&mut cursor) {
        Ok(indices) => Parse::Yes(Native {
            len: cursor.i,
            indices,
        }),
        Err(Stop::Incomplete) => Parse::Incomplete,
        Err(Stop::No) => Parse::No,
    }
}

fn shape(c: &mut Cursor<'_>) -> Result<Indices, Stop> {
    c.spaces()?;
    let first = c.number()?;
    if c.eat(b":")? {
        // The file-search shape `【message:result†source】`: both numbers are the provider's.
        c.number()?;
        c.tail()?;
        return Ok(Indices::new());
    }
    let mut indices = Indices::new();
    let mut start = first;
    loop {
        let end = if c.eat(b"-")? || c.eat(EN_DASH)? || c.eat(b"~")? {
            c.spaces()?;
            c.number()?
        } else {
            start
        };
        if end < start || (end - start) as usize >= Indices::CAP {
            return Err(Stop::No);
        }
        for index in start..=end {
            if !indices.push(index) {
                return Err(Stop::No);
            }
        }
        c.spaces()?;
        if c.eat(b",")? || c.eat(FULLWIDTH_COMMA)? || c.eat(IDEOGRAPHIC_COMMA)? {
            c.spaces()?;
            start = c.number()?;
        } else {
            break;
        }
    }
    c.tail()?;
    Ok(indices)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yes(s: &str) -> Vec<u32> {
        match parse(s.as_bytes(), true) {
            Parse::Yes(n) => {
                assert_eq!(n.len, s.len(), "{s}");
                n.indices.as_slice().to_vec()
            }
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn shapes() {
        assert_eq!(yes("【1】"), [1]);
        assert_eq!(yes("【12†Rust book】"), [12]);
        assert_eq!(yes("【3†L1-L5】"), [3]);
        assert_eq!(yes("【4:0†source】"), Vec::<u32>::new());
        assert_eq!(yes("【1,2】"), [1, 2]);
        assert_eq!(yes("【1，2、3】"), [1, 2, 3]);
        assert_eq!(yes("【2-4】"), [2, 3, 4]);
        assert_eq!(yes("【2–3†a † b】"), [2, 3]);
    }

    #[test]
    fn not_citations() {
        for s in [
            "【注意】",
            "【】",
            "【1",
            "【1\n】",
            "【1234567】",
            "【5-2】",
            "【1-99】",
            "【1†a【2】",
        ] {
            assert_eq!(parse(s.as_bytes(), true), Parse::No, "{s}");
        }
        assert_eq!(parse("【1†ti".as_bytes(), false), Parse::Incomplete);
        assert_eq!(parse("【".as_bytes(), false), Parse::Incomplete);
    }
}
