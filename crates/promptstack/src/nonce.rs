//! Fence nonces from the operating system's CSPRNG.

use promptstack_core::fence::FenceErrorKind;
use promptstack_core::fence::{FenceError, Nonce, NonceSource};

/// How many random bytes each nonce carries: 8 bytes, 64 bits, 16 hexadecimal digits.
pub const NONCE_BYTES: usize = 8;

/// Draws every nonce from the operating system's cryptographically secure generator
/// (`getrandom`): 64 fresh bits per call, written as 16 lowercase hexadecimal digits.
///
/// ```
/// use promptstack::fence::{Fence, Provenance};
/// use promptstack::nonce::OsNonces;
///
/// let fence = Fence::new(OsNonces);
/// let wrapped = fence.wrap("hello", &Provenance::tool_result("web_fetch")?)?;
/// assert_eq!(wrapped.nonce.as_str().len(), 16);
/// # Ok::<(), promptstack::fence::FenceError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct OsNonces;

impl NonceSource for OsNonces {
    fn draw(&self) -> Result<Nonce, FenceError> {
        let mut bytes = [0u8; NONCE_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| {
            FenceError::new(
                FenceErrorKind::NonceUnavailable,
                format!("the operating system refused randomness: {e}"),
            )
        })?;
        Nonce::from_random_bytes(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_sixteen_lowercase_hex_digits_and_differ() {
        let a = OsNonces.draw().unwrap();
        let b = OsNonces.draw().unwrap();
        for n in [&a, &b] {
            assert_eq!(n.as_str().len(), 16);
            assert!(
                n.as_str()
                    .bytes()
                    .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
            );
        }
        // Two independent 64-bit draws are equal with probability 2^-64.
        assert_ne!(a, b);
    }
}
