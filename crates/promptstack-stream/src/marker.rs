//! The `[N]` citation marker: `[3]`, and lists `[1, 2]` / `[1,2]`.

use crate::{Indices, Parse};

/// The longest marker, in bytes from `[` to `]` inclusive; anything longer is plain text.
pub(crate) const MARKER_MAX: usize = 64;

/// A recognised `[N]` marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marker {
    /// Its length in bytes.
    pub len: usize,
    /// The source numbers it lists, in order.
    pub indices: Indices,
}

/// Parses the marker at the start of `s` (which starts with `[`).
///
/// The grammar is `[` NUMBER (`,` SPACES NUMBER)* `]`, each number one to six ASCII digits.
/// `eof` says that no more input will come, so a marker still open at the end is plain text.
pub(crate) fn parse(s: &[u8], eof: bool) -> Parse<Marker> {
    debug_assert_eq!(s.first(), Some(&b'['));
    let mut indices = Indices::new();
    let mut i = 1;
    let mut value = 0u32;
    let mut digits = 0;
    loop {
        if i >= MARKER_MAX {
            return Parse::No;
        }
        let Some(&b) = s.get(i) else {
            return if eof { Parse::No } else { Parse::Incomplete };
        };
        match b {
            b'0'..=b'9' if digits < 6 => {
                value = value * 10 + u32::from(b - b'0');
                digits += 1;
            }
            b',' | b']' if digits > 0 => {
                if !indices.push(value) {
                    return Parse::No;
                }
                value = 0;
                digits = 0;
                if b == b']' {
                    return Parse::Yes(Marker {
                        len: i + 1,
                        indices,
                    });
                }
            }
            // Spaces may only follow a comma.
            b' ' if digits == 0 && !indices.as_slice().is_empty() => {}
            _ => return Parse::No,
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> Option<Vec<u32>> {
        match parse(s.as_bytes(), true) {
            Parse::Yes(m) => {
                assert_eq!(m.len, s.find(']').unwrap() + 1);
                Some(m.indices.as_slice().to_vec())
            }
            Parse::No => None,
            Parse::Incomplete => unreachable!("eof decides"),
        }
    }

    #[test]
    fn markers() {
        assert_eq!(m("[1]"), Some(vec![1]));
        assert_eq!(m("[1, 2]x"), Some(vec![1, 2]));
        assert_eq!(m("[10,2]"), Some(vec![10, 2]));
        for s in [
            "[]",
            "[ 1]",
            "[1 ]",
            "[1,]",
            "[^1]",
            "[a]",
            "[1234567]",
            "[1",
            "[1,, 2]",
        ] {
            assert_eq!(m(s), None, "{s}");
        }
        assert!(matches!(parse(b"[12", false), Parse::Incomplete));
        assert!(matches!(parse(b"[1, ", false), Parse::Incomplete));
    }
}
