//! Provider credentials of a tenant: secret values sealed at rest with AES-256-GCM under a key
//! the server holds ([`CredentialKey`]), readable back only by a run of the same tenant
//! ([`Store::use_credential`](crate::Store::use_credential)).
//!
//! A sealed value is `1 ‖ nonce (12 bytes, random per write) ‖ ciphertext ‖ tag`, with
//! `promptstack credential v1 \0 TENANT \0 NAME` as associated data: a sealed value copied to
//! another tenant's row or another name does not open. A [`Secret`] never prints: its `Debug`
//! is `Secret(***)`, it has no `Display` and no `Serialize`, and no error message carries it.

use std::fmt;

use base64::Engine as _;
use jiff::Timestamp;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use crate::error::{Error, Result};
use crate::name::{CredentialName, KeyId, Tenant};

/// The environment variable the server reads the credentials key from: 32 bytes in base64.
pub const CREDENTIALS_KEY_ENV: &str = "PROMPTSTACK_CREDENTIALS_KEY";

/// The format byte of a sealed value.
const FORMAT: u8 = 1;

/// The key credentials are sealed with: 32 bytes (AES-256-GCM). Its `Debug` shows nothing of it.
pub struct CredentialKey(LessSafeKey);

impl CredentialKey {
    /// A key of these 32 bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> CredentialKey {
        // AES-256-GCM takes any 32 bytes: `new` fails only for another length.
        let key = UnboundKey::new(&AES_256_GCM, bytes).unwrap_or_else(|_| unreachable!());
        CredentialKey(LessSafeKey::new(key))
    }

    /// Reads a key from standard base64 (with or without padding) of exactly 32 bytes, as
    /// `PROMPTSTACK_CREDENTIALS_KEY` holds it (`openssl rand -base64 32`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Invalid`](crate::ErrorKind::Invalid) when the text is not base64 of 32
    /// bytes; the message never quotes the text.
    pub fn from_base64(text: &str) -> Result<CredentialKey> {
        let text = text.trim();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(text)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text))
            .map_err(|_| Error::invalid("the credentials key is not valid base64"))?;
        let bytes: [u8; 32] = decoded.as_slice().try_into().map_err(|_| {
            Error::invalid(format!(
                "the credentials key must be 32 bytes, got {}",
                decoded.len()
            ))
        })?;
        Ok(CredentialKey::from_bytes(&bytes))
    }

    fn aad(tenant: &Tenant, name: &CredentialName) -> Vec<u8> {
        let mut aad = b"promptstack credential v1\0".to_vec();
        aad.extend_from_slice(tenant.as_str().as_bytes());
        aad.push(0);
        aad.extend_from_slice(name.as_str().as_bytes());
        aad
    }

    pub(crate) fn seal(
        &self,
        tenant: &Tenant,
        name: &CredentialName,
        secret: &Secret,
    ) -> Result<Vec<u8>> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce)
            .map_err(|e| Error::internal(format!("no randomness for a nonce: {e}")))?;
        let mut sealed = Vec::with_capacity(1 + NONCE_LEN + secret.0.len() + 16);
        sealed.push(FORMAT);
        sealed.extend_from_slice(&nonce);
        let mut body = secret.0.as_bytes().to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(Self::aad(tenant, name)),
                &mut body,
            )
            .map_err(|_| Error::internal("the credential could not be sealed"))?;
        sealed.extend_from_slice(&body);
        Ok(sealed)
    }

    pub(crate) fn open(
        &self,
        tenant: &Tenant,
        name: &CredentialName,
        sealed: &[u8],
    ) -> Result<Secret> {
        let refused = || {
            Error::internal(format!(
                "credential {name} does not open with this server's credentials key (it was \
                 written under another key, or the stored value was altered)"
            ))
        };
        let (format, rest) = sealed.split_first().ok_or_else(refused)?;
        if *format != FORMAT || rest.len() < NONCE_LEN {
            return Err(refused());
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| refused())?;
        let mut body = body.to_vec();
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(Self::aad(tenant, name)), &mut body)
            .map_err(|_| refused())?;
        let text = String::from_utf8(plain.to_vec()).map_err(|_| refused())?;
        body.fill(0);
        Ok(Secret(text))
    }
}

impl fmt::Debug for CredentialKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CredentialKey(***)")
    }
}

/// A credential's secret value. Never printed: `Debug` shows `Secret(***)`; read it with
/// [`Secret::expose`] where it is sent, and nowhere else.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        // Overwrite the bytes before the allocation is freed (best effort: no copy the
        // allocator or a `Clone` made is reached).
        let mut bytes = std::mem::take(&mut self.0).into_bytes();
        bytes.fill(0);
        std::hint::black_box(&bytes);
    }
}

/// What can be read of a credential: never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CredentialInfo {
    /// Its name.
    pub name: CredentialName,
    /// When it was first written.
    pub created_at: Timestamp,
    /// When it was last written.
    pub updated_at: Timestamp,
    /// The key that last wrote it; `None` for the operator.
    pub updated_by: Option<KeyId>,
    /// When a run last used it.
    pub last_used_at: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> (Tenant, CredentialName) {
        (
            Tenant::parse("acme").unwrap(),
            CredentialName::parse("openai").unwrap(),
        )
    }

    #[test]
    fn sealed_values_open_only_where_they_were_sealed() {
        let key = CredentialKey::from_bytes(&[7; 32]);
        let (tenant, name) = names();
        let secret = Secret::new("sk-live-1234");
        let sealed = key.seal(&tenant, &name, &secret).unwrap();
        assert!(!sealed.windows(4).any(|w| w == b"live"));
        assert_eq!(key.open(&tenant, &name, &sealed).unwrap(), secret);
        // A random nonce per write: the same value seals differently.
        assert_ne!(key.seal(&tenant, &name, &secret).unwrap(), sealed);
        let other_tenant = Tenant::parse("globex").unwrap();
        let other_name = CredentialName::parse("anthropic").unwrap();
        assert!(key.open(&other_tenant, &name, &sealed).is_err());
        assert!(key.open(&tenant, &other_name, &sealed).is_err());
        assert!(
            CredentialKey::from_bytes(&[8; 32])
                .open(&tenant, &name, &sealed)
                .is_err()
        );
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(key.open(&tenant, &name, &flipped).is_err());
        assert!(key.open(&tenant, &name, &sealed[..5]).is_err());
        assert!(key.open(&tenant, &name, &[]).is_err());
    }

    #[test]
    fn keys_parse_from_base64_of_32_bytes() {
        let text = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
        assert!(CredentialKey::from_base64(&text).is_ok());
        assert!(CredentialKey::from_base64(text.trim_end_matches('=')).is_ok());
        for bad in ["not base64!", "AAAA"] {
            let message = CredentialKey::from_base64(bad).unwrap_err().to_string();
            assert!(!message.contains(bad), "{message}");
        }
        let secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQ=";
        let message = CredentialKey::from_base64(secret).unwrap_err().to_string();
        assert!(!message.contains(secret), "{message}");
        assert_eq!(
            format!("{:?}", CredentialKey::from_bytes(&[1; 32])),
            "CredentialKey(***)"
        );
        assert_eq!(format!("{:?}", Secret::new("hunter2")), "Secret(***)");
    }
}
