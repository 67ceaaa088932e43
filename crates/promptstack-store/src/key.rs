//! API keys: the string shown once, its hash, and what a key proves.
//!
//! A key reads `psk_<id>_<secret>`: `id` is 16 hex digits (64 random bits, public, the row to
//! look up), `secret` is 64 hex digits (256 bits from the operating system's CSPRNG). The store
//! keeps only `SHA-256("promptstack api key v1\0" ‖ key)`. A fast hash is right here: slow
//! password hashes exist to make guessing *low-entropy* secrets expensive, and guessing 256
//! random bits is already out of reach, so a slow hash would only add latency to every request.
//! The stored hash is compared with the presented key's in constant time.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::{Error, Result};
use crate::name::{KeyId, Role, Tenant};

const PREFIX: &str = "psk_";
const ID_BYTES: usize = 8;
const SECRET_BYTES: usize = 32;
/// `psk_` + 16 hex + `_` + 64 hex.
const KEY_LEN: usize = PREFIX.len() + 2 * ID_BYTES + 1 + 2 * SECRET_BYTES;
const DOMAIN: &[u8] = b"promptstack api key v1\0";

/// A full API key, secret included. It exists only between creation and being shown once;
/// `Debug` and `Display` show the public id and hide the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    id: KeyId,
    text: String,
}

impl ApiKey {
    /// Draws a new key from the operating system's CSPRNG.
    pub(crate) fn generate() -> Result<ApiKey> {
        let mut bytes = [0u8; ID_BYTES + SECRET_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| {
            Error::internal(format!("the operating system gave no randomness: {e}"))
        })?;
        let mut text = String::with_capacity(KEY_LEN);
        text.push_str(PREFIX);
        push_hex(&mut text, &bytes[..ID_BYTES]);
        text.push('_');
        push_hex(&mut text, &bytes[ID_BYTES..]);
        let id = KeyId::parse(&text[PREFIX.len()..PREFIX.len() + 2 * ID_BYTES])?;
        Ok(ApiKey { id, text })
    }

    /// The whole key, to show once to the person who created it.
    pub fn expose(&self) -> &str {
        &self.text
    }

    /// The key's public id.
    pub fn id(&self) -> &KeyId {
        &self.id
    }

    pub(crate) fn hash(&self) -> [u8; 32] {
        hash(&self.text)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({PREFIX}{}_<redacted>)", self.id())
    }
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(HEX[usize::from(byte >> 4)] as char);
        out.push(HEX[usize::from(byte & 0xf)] as char);
    }
}

fn hash(key: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(DOMAIN);
    hasher.update(key.as_bytes());
    hasher.finalize().into()
}

/// A key as presented by a client, parsed but not yet checked.
pub(crate) struct Presented<'a> {
    pub(crate) id: KeyId,
    text: &'a str,
}

impl<'a> Presented<'a> {
    /// Parses the shape of a key; `None` for anything that is not one.
    pub(crate) fn parse(text: &'a str) -> Option<Presented<'a>> {
        // ASCII first, so that the fixed offsets below fall on character boundaries.
        if text.len() != KEY_LEN || !text.is_ascii() || !text.starts_with(PREFIX) {
            return None;
        }
        let rest = &text[PREFIX.len()..];
        let (id, secret) = rest.split_at(2 * ID_BYTES);
        let secret = secret.strip_prefix('_')?;
        let lower_hex = |s: &str| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !lower_hex(secret) {
            return None;
        }
        let id = KeyId::parse(id).ok()?;
        Some(Presented { id, text })
    }

    /// Whether this key hashes to `stored`, compared in constant time.
    pub(crate) fn matches(&self, stored: &[u8]) -> bool {
        let presented = hash(self.text);
        stored.len() == presented.len() && bool::from(presented.ct_eq(stored))
    }
}

/// Who a request is: what an authenticated key proves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// The tenant the key belongs to; every object the request touches is in this tenant.
    pub tenant: Tenant,
    /// What the key may do.
    pub role: Role,
    /// The key, for the audit log.
    pub key_id: KeyId,
}

/// A key as listed: never the secret, never the hash.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyInfo {
    /// The public id.
    pub id: KeyId,
    /// The tenant it belongs to.
    pub tenant: Tenant,
    /// What it may do.
    pub role: Role,
    /// A name a person gave it, if any.
    pub name: Option<String>,
    /// When it was created.
    pub created_at: jiff::Timestamp,
    /// When it was revoked, if it was.
    pub revoked_at: Option<jiff::Timestamp>,
}

/// A key just created: the full key, shown once, and its listing.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NewKey {
    /// The key, secret included. It is not stored anywhere: show it once.
    pub key: ApiKey,
    /// What `keys list` will show for it.
    pub info: KeyInfo,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_parse_and_match() {
        let key = ApiKey::generate().unwrap();
        assert_eq!(key.expose().len(), KEY_LEN);
        let presented = Presented::parse(key.expose()).unwrap();
        assert_eq!(&presented.id, key.id());
        assert!(presented.matches(&key.hash()));
        assert!(!presented.matches(&[0; 32]));
        assert!(!presented.matches(&key.hash()[..31]));
    }

    #[test]
    fn debug_hides_the_secret() {
        let key = ApiKey::generate().unwrap();
        let secret = &key.expose()[PREFIX.len() + 2 * ID_BYTES + 1..];
        let shown = format!("{key:?}");
        assert!(!shown.contains(secret), "{shown}");
        assert!(shown.contains(key.id().as_str()));
    }

    #[test]
    fn malformed_keys_do_not_parse() {
        let key = ApiKey::generate().unwrap();
        let text = key.expose();
        assert!(Presented::parse(&text.to_uppercase()).is_none());
        assert!(Presented::parse(&text[1..]).is_none());
        assert!(Presented::parse(&format!("{text}0")).is_none());
        assert!(Presented::parse(&text.replacen("psk_", "pxk_", 1)).is_none());
        let mut swapped = text.to_owned();
        swapped.replace_range(20..21, "-");
        assert!(Presented::parse(&swapped).is_none());
        assert!(Presented::parse("").is_none());
        // A multi-byte character where the separator belongs must not split a char boundary.
        let odd = format!("psk_{}é{}", "a".repeat(15), "b".repeat(64));
        assert!(Presented::parse(&odd).is_none());
    }
}
