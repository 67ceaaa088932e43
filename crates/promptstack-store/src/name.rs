//! The validated names of the data model: tenants, agents, labels, versions, keys, and roles.
//!
//! Every name is checked once, when it is parsed, so a value of one of these types is always
//! safe to put in a URL path, a log line, a NOTIFY payload or a terminal. One table below drives
//! the rules, the parsing and the messages of all of them.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The characters and length one kind of name allows.
struct Rule {
    /// What the name is, for messages ("tenant slug").
    what: &'static str,
    min: usize,
    max: usize,
    /// Allowed bytes anywhere.
    body: fn(u8) -> bool,
    /// Allowed first and last bytes.
    ends: fn(u8) -> bool,
    /// The allowed set, spelled out for messages.
    spelled: &'static str,
    /// Another kind of name this one may not look like, and why.
    unlike: Option<(&'static Rule, &'static str)>,
}

fn lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

impl Rule {
    fn check(&self, text: &str) -> Result<()> {
        let bytes = text.as_bytes();
        if bytes.len() < self.min || bytes.len() > self.max {
            let length = if self.min == self.max {
                format!("exactly {}", self.min)
            } else {
                format!("{} to {}", self.min, self.max)
            };
            return Err(Error::invalid(format!(
                "{} must be {length} characters long, got {}",
                self.what,
                text.chars().count()
            )));
        }
        let first_last_ok = bytes.first().is_some_and(|b| (self.ends)(*b))
            && bytes.last().is_some_and(|b| (self.ends)(*b));
        if !bytes.iter().all(|b| (self.body)(*b)) || !first_last_ok {
            return Err(Error::invalid(format!(
                "{} must be {}, got {:?}",
                self.what,
                self.spelled,
                Truncated(text)
            )));
        }
        if let Some((other, why)) = self.unlike
            && other.check(text).is_ok()
        {
            return Err(Error::invalid(format!(
                "{} cannot be {} ({} characters): {why}",
                self.what, other.spelled, other.max
            )));
        }
        Ok(())
    }
}

/// Shows at most 80 characters of hostile input in a message.
struct Truncated<'a>(&'a str);

impl fmt::Debug for Truncated<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(80) {
            Some((end, _)) => write!(f, "{:?}…", &self.0[..end]),
            None => write!(f, "{:?}", self.0),
        }
    }
}

const TENANT: Rule = Rule {
    what: "tenant slug",
    min: 1,
    max: 63,
    body: |b| lower_alnum(b) || b == b'-',
    ends: lower_alnum,
    spelled: "lowercase letters, digits and '-', starting and ending with a letter or digit",
    unlike: None,
};

const AGENT: Rule = Rule {
    what: "agent name",
    min: 1,
    max: 64,
    body: |b| lower_alnum(b) || matches!(b, b'-' | b'_' | b'.'),
    ends: lower_alnum,
    spelled: "lowercase letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
    unlike: None,
};

/// A reference is read as a version id when it has that shape, so a label of that shape could
/// never be reached.
const LABEL: Rule = Rule {
    what: "label name",
    unlike: Some((
        &VERSION,
        "a reference of that shape is read as a version id",
    )),
    ..AGENT
};

const VERSION: Rule = Rule {
    what: "version id",
    min: 64,
    max: 64,
    body: lower_hex,
    ends: lower_hex,
    spelled: "a SHA-256 in lowercase hex",
    unlike: None,
};

const KEY_ID: Rule = Rule {
    what: "key id",
    min: 16,
    max: 16,
    body: lower_hex,
    ends: lower_hex,
    spelled: "16 lowercase hex digits",
    unlike: None,
};

const RUN_ID: Rule = Rule {
    what: "run id",
    ..KEY_ID
};

const CREDENTIAL: Rule = Rule {
    what: "credential name",
    ..AGENT
};

macro_rules! names {
    ($($(#[$doc:meta])* $name:ident => $rule:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Checks `text` and wraps it.
            ///
            /// # Errors
            ///
            /// [`ErrorKind::Invalid`](crate::ErrorKind::Invalid) naming the rule it breaks.
            pub fn parse(text: &str) -> Result<Self> {
                $rule.check(text)?;
                Ok(Self(text.to_owned()))
            }

            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Wraps text read back from the database, which was checked when written.
            pub(crate) fn from_db(text: String) -> Result<Self> {
                $rule.check(&text).map_err(|_| {
                    Error::internal(concat!("the database holds a malformed ", stringify!($name)))
                })?;
                Ok(Self(text))
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(text: &str) -> Result<Self> {
                Self::parse(text)
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(text: String) -> Result<Self> {
                $rule.check(&text)?;
                Ok(Self(text))
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::try_from(text).map_err(serde::de::Error::custom)
            }
        }
    )*};
}

names! {
    /// A tenant's slug: 1 to 63 lowercase letters, digits and `-`, starting and ending with a
    /// letter or digit (the shape of a DNS label).
    Tenant => TENANT;
    /// An agent's name within a tenant: 1 to 64 lowercase letters, digits, `-`, `_` and `.`,
    /// starting and ending with a letter or digit.
    AgentName => AGENT;
    /// A label's name within an agent (`production`, `staging`); the same rule as agent names,
    /// except that it may not have a version id's shape (64 lowercase hex digits), which a
    /// reference is read as.
    LabelName => LABEL;
    /// A version's id: the SHA-256 of its canonical bundle in lowercase hex (64 digits), computed
    /// by the caller.
    VersionId => VERSION;
    /// The public part of an API key: 16 lowercase hex digits. It identifies a key in listings
    /// and the audit log and is not secret.
    KeyId => KEY_ID;
    /// An eval run's id: 16 lowercase hex digits, random, made by the store.
    RunId => RUN_ID;
    /// A provider credential's name within a tenant (`openai`, `anthropic-prod`): the same rule
    /// as agent names.
    CredentialName => CREDENTIAL;
}

impl RunId {
    /// A new random id.
    pub(crate) fn generate() -> Result<RunId> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::internal(format!("no randomness for a run id: {e}")))?;
        Ok(RunId(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }
}

/// What a key may do. The store records it; the server enforces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Everything an editor may do, plus moving protected labels, writing settings, reading the
    /// audit log.
    Admin,
    /// Publishes versions and moves unprotected labels.
    Editor,
    /// Reads and renders.
    Viewer,
}

impl Role {
    /// Every role, most powerful first.
    pub const ALL: [Role; 3] = [Role::Admin, Role::Editor, Role::Viewer];

    /// The role's name: `admin`, `editor` or `viewer`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Editor => "editor",
            Role::Viewer => "viewer",
        }
    }

    pub(crate) fn from_db(text: &str) -> Result<Role> {
        text.parse()
            .map_err(|_| Error::internal("the database holds an unknown role"))
    }
}

impl FromStr for Role {
    type Err = Error;

    fn from_str(text: &str) -> Result<Role> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "role must be admin, editor or viewer, got {:?}",
                    Truncated(text)
                ))
            })
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A key's name, given by a person to recognise it in listings: 1 to 100 characters, one line,
/// no control or invisible characters (it is printed in terminals).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyName(String);

impl KeyName {
    /// The longest name, in characters.
    pub const MAX_CHARS: usize = 100;

    /// Checks `text` and wraps it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Invalid`](crate::ErrorKind::Invalid) naming the rule it breaks.
    pub fn parse(text: &str) -> Result<KeyName> {
        check_text("key name", text, KeyName::MAX_CHARS)?;
        Ok(KeyName(text.to_owned()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for KeyName {
    type Err = Error;

    fn from_str(text: &str) -> Result<KeyName> {
        KeyName::parse(text)
    }
}

impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a free-text label a person gives (a key's name): bounded, printable, one line.
pub(crate) fn check_text(what: &str, text: &str, max_chars: usize) -> Result<()> {
    let count = text.chars().count();
    if count == 0 || count > max_chars {
        return Err(Error::invalid(format!(
            "{what} must be 1 to {max_chars} characters long, got {count}"
        )));
    }
    if text.chars().any(|c| c.is_control() || is_invisible(c)) {
        return Err(Error::invalid(format!(
            "{what} must not contain control or invisible characters"
        )));
    }
    Ok(())
}

/// Characters that change how a terminal shows the text around them (bidirectional controls,
/// zero-width characters): refused in names a person will later read in a listing.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_rules() {
        for good in ["a", "acme", "acme-2", "0", &"a".repeat(63)] {
            assert!(Tenant::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "Acme",
            "a_b",
            "a.b",
            "a b",
            "é",
            &"a".repeat(64),
        ] {
            assert!(Tenant::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn messages_are_bounded() {
        let long = "X".repeat(10_000);
        let message = Tenant::parse(&long).unwrap_err().to_string();
        assert_eq!(
            message,
            "tenant slug must be 1 to 63 characters long, got 10000"
        );
        let message = AgentName::parse(&format!("A{}", "b".repeat(50)))
            .unwrap_err()
            .to_string();
        assert!(message.len() < 300, "{message}");
    }

    #[test]
    fn a_label_cannot_look_like_a_version_id() {
        let id = "0123456789abcdef".repeat(4);
        assert!(VersionId::parse(&id).is_ok());
        let message = LabelName::parse(&id).unwrap_err().to_string();
        assert!(message.contains("version id"), "{message}");
        assert!(LabelName::from_db(id.clone()).is_err());
        assert!(serde_json::from_value::<LabelName>(serde_json::json!(id)).is_err());
        // One digit fewer, or a letter past `f`, is a label like any other.
        for fine in [id[1..].to_owned(), format!("g{}", &id[1..])] {
            assert!(LabelName::parse(&fine).is_ok(), "{fine}");
        }
        assert!(AgentName::parse(&id).is_ok());
    }

    #[test]
    fn key_names() {
        assert!(KeyName::parse("ci deploy").is_ok());
        assert!(KeyName::parse(&"é".repeat(100)).is_ok());
        for bad in ["", "a\nb", "a\u{202e}b", "a\u{1b}[31m", &"n".repeat(101)] {
            assert!(KeyName::parse(bad).is_err(), "{bad:?}");
        }
    }
}
