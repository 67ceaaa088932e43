//! `{{capability_config.<key>}}` substitution in capability texts.
//!
//! Capability texts (built-in defaults, registry fragments and authors' custom texts) are plain
//! text with one kind of placeholder, substituted from the stage's configuration of that
//! capability. This is deliberately not a template language: a fragment cannot read anything but
//! its own configuration, and a placeholder without a value is an error, never an empty string.

use serde_json::{Map, Value};

/// A placeholder had no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingKey {
    /// The configuration key.
    pub key: String,
}

impl std::fmt::Display for MissingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`capability_config.{}` has no value", self.key)
    }
}

const PREFIX: &str = "capability_config.";

/// Replaces every `{{capability_config.<key>}}` (spaces inside the braces allowed) with the
/// configured value: strings as they are, other values as JSON. Anything else between `{{` and
/// `}}` is left untouched.
///
/// # Errors
///
/// The first placeholder whose key is not configured.
pub fn substitute(text: &str, config: &Map<String, Value>) -> Result<String, MissingKey> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            break;
        };
        let inner = after[..close].trim();
        let Some(key) = inner.strip_prefix(PREFIX) else {
            out.push_str(&rest[..open + 2]);
            rest = after;
            continue;
        };
        let value = config.get(key).ok_or_else(|| MissingKey {
            key: key.to_owned(),
        })?;
        out.push_str(&rest[..open]);
        match value {
            Value::String(s) => out.push_str(s),
            other => out.push_str(&other.to_string()),
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The configuration keys a text reads, in order of first appearance.
pub fn keys(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            break;
        };
        if let Some(key) = after[..close].trim().strip_prefix(PREFIX)
            && !out.iter().any(|k| k == key)
        {
            out.push(key.to_owned());
        }
        rest = &after[close + 2..];
    }
    out
}
