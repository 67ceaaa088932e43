//! Fence nonces: the [`Nonce`] value and the [`NonceSource`] interface that supplies fresh ones.
//!
//! The core draws no randomness. Applications pass a source backed by the operating system's
//! CSPRNG (the `promptstack` facade ships one); tests pass [`FixedNonce`] or [`NonceSequence`].
//! A nonce that must survive a transcript re-render is stored next to the content when the
//! content first enters, and handed back to [`Fence::rewrap`](super::Fence::rewrap); it is never
//! re-derived from a message id or anything else an attacker could guess.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::{FenceError, FenceErrorKind};

/// The shortest nonce accepted, in hexadecimal digits (64 bits).
pub const MIN_NONCE_HEX: usize = 16;
/// The longest nonce accepted, in hexadecimal digits (256 bits).
pub const MAX_NONCE_HEX: usize = 64;

/// A fence nonce: 16 to 64 lowercase hexadecimal digits (64 to 256 bits).
///
/// Serialises as its string form, so it can be stored next to the content it fenced.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Nonce(String);

impl Nonce {
    /// Parses a stored nonce.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::InvalidNonce`] unless the text is 16 to 64 lowercase hexadecimal digits.
    pub fn parse(text: &str) -> Result<Nonce, FenceError> {
        let len_ok = (MIN_NONCE_HEX..=MAX_NONCE_HEX).contains(&text.len());
        let digits_ok = text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if len_ok && digits_ok {
            Ok(Nonce(text.to_owned()))
        } else {
            Err(FenceError::new(
                FenceErrorKind::InvalidNonce,
                format!(
                    "expected {MIN_NONCE_HEX} to {MAX_NONCE_HEX} lowercase hexadecimal digits, got {:?}",
                    truncate_for_message(text)
                ),
            ))
        }
    }

    /// Encodes random bytes as a nonce, two lowercase hexadecimal digits per byte.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::InvalidNonce`] for fewer than 8 or more than 32 bytes.
    pub fn from_random_bytes(bytes: &[u8]) -> Result<Nonce, FenceError> {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = String::with_capacity(bytes.len() * 2);
        for &b in bytes {
            text.push(char::from(HEX[usize::from(b >> 4)]));
            text.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
        Nonce::parse(&text)
    }

    /// The nonce as lowercase hexadecimal text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Nonce({})", self.0)
    }
}

impl TryFrom<String> for Nonce {
    type Error = FenceError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Nonce::parse(&value)
    }
}

impl From<Nonce> for String {
    fn from(value: Nonce) -> Self {
        value.0
    }
}

impl std::str::FromStr for Nonce {
    type Err = FenceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Nonce::parse(s)
    }
}

/// Supplies a fresh nonce for every wrap.
///
/// Implementations for production must draw at least 64 bits from a cryptographically secure
/// generator on every call. `&self` (not `&mut self`) so one source can serve concurrent turns.
pub trait NonceSource: Send + Sync {
    /// Draws the next nonce.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::NonceUnavailable`] when no randomness can be had.
    fn draw(&self) -> Result<Nonce, FenceError>;
}

/// A nonce source that always returns the same nonce. For tests and reproducible examples only:
/// a fixed nonce is known to whoever reads the code, so it stops nothing.
#[derive(Debug, Clone)]
pub struct FixedNonce(Nonce);

impl FixedNonce {
    /// A source that always returns `nonce`.
    pub fn new(nonce: Nonce) -> Self {
        FixedNonce(nonce)
    }
}

impl NonceSource for FixedNonce {
    fn draw(&self) -> Result<Nonce, FenceError> {
        Ok(self.0.clone())
    }
}

/// A nonce source that returns the given nonces in order and then starts over. For tests (for
/// example, to show that a nonce found in the content is drawn again).
#[derive(Debug)]
pub struct NonceSequence {
    nonces: Vec<Nonce>,
    next: AtomicUsize,
}

impl NonceSequence {
    /// A source cycling through `nonces`.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::NonceUnavailable`] when `nonces` is empty.
    pub fn new(nonces: Vec<Nonce>) -> Result<Self, FenceError> {
        if nonces.is_empty() {
            return Err(FenceError::new(
                FenceErrorKind::NonceUnavailable,
                "a nonce sequence needs at least one nonce",
            ));
        }
        Ok(NonceSequence {
            nonces,
            next: AtomicUsize::new(0),
        })
    }
}

impl NonceSource for NonceSequence {
    fn draw(&self) -> Result<Nonce, FenceError> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        Ok(self.nonces[i % self.nonces.len()].clone())
    }
}

fn truncate_for_message(text: &str) -> &str {
    match text.char_indices().nth(80) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}
