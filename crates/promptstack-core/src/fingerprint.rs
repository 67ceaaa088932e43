//! Fingerprints: SHA-256 identities of what a provider cache keys on.
//!
//! An assembly's fingerprint covers exactly the stable half's bytes and the model descriptor, so it
//! changes if and only if one of them changes: an application can key a per-thread harness or a
//! cache entry on it and rebuild exactly when the cacheable part changed.

use std::fmt;

use serde::{Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::context::ModelDescriptor;

/// A SHA-256 digest, shown as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a stable half for a model.
    ///
    /// The input is length-prefixed and domain-separated, so no two different (model, text) pairs
    /// share a preimage.
    pub fn of_stable(model: &ModelDescriptor, stable: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"promptstack/stable/v1\0");
        for part in [
            model.id.as_str(),
            model.name.as_str(),
            model.provider.as_str(),
            match model.tool_usage {
                crate::context::ToolUsage::None => "none",
                crate::context::ToolUsage::Native => "native",
            },
        ] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        match model.context_window {
            Some(window) => {
                hasher.update([1]);
                hasher.update(window.to_le_bytes());
            }
            None => hasher.update([0]),
        }
        hasher.update((stable.len() as u64).to_le_bytes());
        hasher.update(stable.as_bytes());
        Self(hasher.finalize().into())
    }

    /// The fingerprint of arbitrary bytes under a domain label (for prefixes, requests, …).
    pub fn of_bytes(domain: &str, bytes: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update((domain.len() as u64).to_le_bytes());
        hasher.update(domain.as_bytes());
        hasher.update(bytes);
        Self(hasher.finalize().into())
    }

    /// A fingerprint from a finished SHA-256 digest.
    pub(crate) fn from_digest(digest: [u8; 32]) -> Self {
        Self(digest)
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The first 12 hex digits, for tables.
    pub fn short(&self) -> String {
        self.to_string()[..12].to_owned()
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

impl Serialize for Fingerprint {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
