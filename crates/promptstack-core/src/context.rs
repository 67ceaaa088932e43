//! The send context: everything about one send that selects and fills the blocks.
//!
//! Plain data, deserialised from JSON (or built in Rust). The core never reads a clock, a file or an
//! environment variable: the time of the send, the user's profile and every other fact arrive here.
//! Each top-level field is read by templates through a root with a fixed stability and trust;
//! see [`Root`](crate::Root).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::spec::load::{
    Locator, SpecDiagnostic, SpecError, SpecFormat, lowercase_first, parse_tree, path_to_pointer,
    schema_diagnostics,
};

mod fact;
mod fast;
pub(crate) mod send;

/// Whole numbers of a send read as its JSON Schema reads them: `4379` and `4379.0` are the same
/// `integer`, so both are accepted; every other value is refused with serde's own message for
/// the type (`invalid type: floating point `1.5`, expected u32`, …).
/// Reads a unit enum from its name only. serde also takes `{"name": null}` for a unit variant,
/// which the send's schema refuses; the fast reader must refuse what the located reader does.
pub(crate) fn by_name<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::Deserialize as _;
    let name = String::deserialize(deserializer)?;
    T::deserialize(serde::de::value::StringDeserializer::<D::Error>::new(name))
}

mod whole {
    use std::fmt;

    use serde::de::{Error, Unexpected, Visitor};
    use serde::{Deserialize, Deserializer};

    /// A whole number of the type `T` names.
    struct Whole<T>(T);

    macro_rules! whole {
        ($ty:ident, $name:literal) => {
            impl<'de> Deserialize<'de> for Whole<$ty> {
                fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                    struct Read;
                    impl Visitor<'_> for Read {
                        type Value = $ty;
                        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                            f.write_str($name)
                        }
                        fn visit_u64<E: Error>(self, v: u64) -> Result<$ty, E> {
                            $ty::try_from(v)
                                .map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
                        }
                        fn visit_i64<E: Error>(self, v: i64) -> Result<$ty, E> {
                            $ty::try_from(v)
                                .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
                        }
                        fn visit_f64<E: Error>(self, v: f64) -> Result<$ty, E> {
                            // A float is that whole number only when it is one exactly: at most
                            // 2^53 from zero (a larger one may be a neighbour rounded to it).
                            #[allow(clippy::cast_precision_loss)]
                            let (min, max) = ($ty::MIN as f64, $ty::MAX as f64);
                            let exact = v.abs() <= 9_007_199_254_740_992.0;
                            if v.fract() == 0.0 && exact && v >= min && v <= max {
                                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                                return Ok(v as $ty);
                            }
                            Err(E::invalid_type(Unexpected::Float(v), &self))
                        }
                    }
                    deserializer.deserialize_any(Read).map(Whole)
                }
            }
        };
    }

    whole!(u32, "u32");
    whole!(i64, "i64");

    pub(super) fn i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
        Whole::<i64>::deserialize(deserializer).map(|w| w.0)
    }

    pub(super) fn option_u32<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u32>, D::Error> {
        Option::<Whole<u32>>::deserialize(deserializer).map(|w| w.map(|w| w.0))
    }
}

// The records templates read where they lie live with them (`promptstack-template`); this module
// is their public path.
pub use promptstack_template::context::{ContextFile, Now, NowError, Skill};

pub use fact::Fact;
pub(crate) use fact::Scope;
pub use fast::{SendTree, TreeKind};

// `SendContext` is public at the crate root only; `crate::context::SendContext` keeps naming it
// inside the crate.
pub(crate) use send::SendContext;

/// The largest send context accepted, in bytes.
pub const MAX_SEND_BYTES: usize = 32 * 1024 * 1024;

/// A tenant's instructions for every agent it runs, as read from its settings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct TenantInstructions {
    /// Whether the administrator switched the instructions on.
    #[serde(default)]
    pub enabled: bool,
    /// The instructions.
    #[serde(default)]
    pub text: String,
    /// Set when the source could not be read: the send goes on without tenant instructions and the
    /// assembly reports this reason as a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The tabs a browser-agent send is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct Tabs {
    /// The tab that was active when the user submitted the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<Tab>,
    /// Tabs the user referred to explicitly (e.g. with `@tab`), in the order referenced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub referenced: Vec<Tab>,
}

impl Tabs {
    /// Whether there is no tab at all.
    pub fn is_empty(&self) -> bool {
        self.active.is_none() && self.referenced.is_empty()
    }

    /// The active tab, then the referenced ones.
    pub fn all(&self) -> impl Iterator<Item = &Tab> {
        self.active.iter().chain(self.referenced.iter())
    }
}

/// One browser tab.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tab {
    /// The browser's id for the tab.
    #[serde(deserialize_with = "whole::i64")]
    pub id: i64,
    /// The tab's URL.
    pub url: String,
    /// The page title (page-controlled text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// The model a send goes to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelDescriptor {
    /// The provider's model id (`gpt-4o`, `claude-sonnet-4-5`, …).
    pub id: String,
    /// The name shown to people and told to the model.
    pub name: String,
    /// The provider (`openai`, `anthropic`, `google`, …).
    pub provider: String,
    /// Whether the model can call tools.
    #[serde(default, deserialize_with = "by_name")]
    pub tool_usage: ToolUsage,
    /// The context window in tokens, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole::option_u32"
    )]
    pub context_window: Option<u32>,
}

impl ModelDescriptor {
    /// A model by provider id, display name and provider, with the default tool usage and no
    /// known context window.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        provider: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            provider: provider.into(),
            tool_usage: ToolUsage::default(),
            context_window: None,
        }
    }

    /// Whether the model can call tools at all.
    pub fn can_use_tools(&self) -> bool {
        self.tool_usage == ToolUsage::Native
    }
}

/// Whether a model can call tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum ToolUsage {
    /// The model cannot call tools; everything it needs must be in the prompt.
    None,
    /// The model calls tools through the provider's native tool-call channel.
    #[default]
    Native,
}

/// The state of one integration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Integration {
    /// The user has connected the account.
    pub connected: bool,
    /// The integration is switched on. A connected but switched-off integration offers no tools.
    pub enabled: bool,
}

impl Integration {
    /// `enabled` (connected and on), `disabled` (connected, switched off) or `not_connected`.
    pub fn status(&self) -> &'static str {
        match (self.connected, self.enabled) {
            (true, true) => "enabled",
            (true, false) => "disabled",
            (false, _) => "not_connected",
        }
    }
}

/// What the user told the application about themselves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct UserProfile {
    /// The name the user wants to be called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where the user is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<UserLocation>,
    /// Preferred units (`metric`, `imperial`, or a free description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<String>,
    /// The language the user wants replies in, if they chose one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The language of the application's interface, used when `language` is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_language: Option<String>,
}

impl UserProfile {
    /// The language replies should be in: the user's choice, else the app's language.
    pub fn reply_language(&self) -> Option<&str> {
        self.language
            .as_deref()
            .filter(|l| !l.trim().is_empty())
            .or(self.app_language.as_deref())
    }
}

/// Where the user is. Coordinates of `0` are real coordinates (the equator, the prime meridian).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct UserLocation {
    /// A place name, e.g. `Quito, Ecuador`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Degrees north (negative: south), −90 to 90.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -90.0, max = 90.0))]
    pub latitude: Option<f64>,
    /// Degrees east (negative: west), −180 to 180.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -180.0, max = 180.0))]
    pub longitude: Option<f64>,
}

impl UserLocation {
    /// `"0.0000, -78.4678"` when both coordinates are present, whatever their value.
    pub fn coordinates(&self) -> Option<String> {
        match (self.latitude, self.longitude) {
            (Some(lat), Some(lon)) => Some(format!("{lat:.4}, {lon:.4}")),
            _ => None,
        }
    }
}

/// The project a thread belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Project {
    /// The project's name.
    pub name: String,
    /// Instructions the user wrote for every thread of the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Whether the project has other threads the model could search.
    #[serde(default)]
    pub has_sibling_threads: bool,
}

/// The `/slug` tokens of a message, in order of first appearance, without duplicates.
///
/// A slug token starts at the beginning of the message or after whitespace, is a `/` followed by
/// ASCII letters, digits, `-` or `_`, and ends at whitespace, punctuation or the end. Paths such as
/// `/usr/bin` are not tokens because the token must end where the slug characters end.
pub fn message_slugs(message: &str) -> Vec<&str> {
    let mut slugs: Vec<&str> = Vec::new();
    let bytes = message.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let at_start = i == 0 || (bytes[i - 1] as char).is_ascii_whitespace();
        if bytes[i] == b'/' && at_start {
            let start = i + 1;
            let mut end = start;
            while end < bytes.len()
                && (bytes[end].is_ascii_alphanumeric() || matches!(bytes[end], b'-' | b'_'))
            {
                end += 1;
            }
            let ends_cleanly =
                end == bytes.len() || !matches!(bytes[end], b'/' | b'.' | b':' | b'\\') || {
                    // Sentence punctuation after a slug is fine when followed by whitespace or the end.
                    bytes[end] == b'.' && bytes.get(end + 1).is_none_or(|b| b.is_ascii_whitespace())
                };
            if end > start && ends_cleanly {
                let slug = &message[start..end];
                if !slugs.contains(&slug) {
                    slugs.push(slug);
                }
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    slugs
}

/// A `bad-shape` diagnostic when the value of variable `name` (at `base/name`) does not have the
/// shape its declaration gives.
pub(crate) fn shape_misfit(
    declared: &crate::spec::VariableSpec,
    name: &str,
    value: &serde_json::Value,
    base: &str,
    locator: &Locator<'_>,
) -> Option<SpecDiagnostic> {
    let shape = declared.shape?;
    let inner = shape.mismatch(value)?;
    let pointer = format!("{}{inner}", crate::spec::span_pointer(base, name));
    let found = value.pointer(&inner).unwrap_or(value);
    let expected = shape.expected_at(&inner);
    let place = if inner.is_empty() {
        format!("`variables.{}`", crate::diagnostic::quote(name))
    } else {
        format!(
            "item `{}` of `variables.{}`",
            inner.trim_start_matches('/').replace('/', "."),
            crate::diagnostic::quote(name)
        )
    };
    Some(locator.at(
        "bad-shape",
        &pointer,
        false,
        format!(
            "{place} is {}; the spec declares {expected}",
            crate::spec::describe(found)
        ),
        Some(format!("send a value of shape `{shape}` (or leave it out)")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_read_as_the_schema_reads_them() {
        let model = |window: &str| {
            serde_json::from_str::<ModelDescriptor>(&format!(
                r#"{{"id": "m", "name": "m", "provider": "p", "context_window": {window}}}"#
            ))
            .map(|m| m.context_window)
            .map_err(|e| e.to_string())
        };
        assert_eq!(model("4379"), Ok(Some(4379)));
        assert_eq!(model("4379.0"), Ok(Some(4379)));
        assert_eq!(model("4.379e3"), Ok(Some(4379)));
        assert_eq!(model("null"), Ok(None));
        assert_eq!(model("4294967295.0"), Ok(Some(u32::MAX)));
        // Everything else is refused with serde's own message for a u32.
        let refused = |window: &str, message: &str| {
            let error = model(window).unwrap_err();
            assert!(error.starts_with(message), "{window}: {error}");
        };
        refused("1.5", "invalid type: floating point `1.5`, expected u32");
        refused(
            "4294967296.0",
            "invalid type: floating point `4294967296.0`, expected u32",
        );
        refused(
            "4294967296",
            "invalid value: integer `4294967296`, expected u32",
        );
        refused("-1", "invalid value: integer `-1`, expected u32");
        refused("\"7\"", "invalid type: string \"7\", expected u32");
        let tab = |id: &str| {
            serde_json::from_str::<Tab>(&format!(r#"{{"id": {id}, "url": "u"}}"#))
                .map(|t| t.id)
                .map_err(|e| e.to_string())
        };
        assert_eq!(tab("-7.0"), Ok(-7));
        assert_eq!(tab("9007199254740992.0"), Ok(9_007_199_254_740_992));
        assert_eq!(tab("-9223372036854775808"), Ok(i64::MIN));
        // A float past 2^53 may be a neighbour rounded to it: refused.
        assert!(tab("-9223372036854775809").is_err());
        assert!(tab("9007199254740994.0").is_err());
    }

    #[test]
    fn slugs_are_found_only_as_whole_tokens() {
        assert_eq!(message_slugs("/research the tides"), vec!["research"]);
        assert_eq!(
            message_slugs("please /search, then /search again /x."),
            vec!["search", "x"]
        );
        assert!(message_slugs("see /usr/bin and a/b and http://x").is_empty());
        assert!(message_slugs("see https://a.com/search and /usr/lib").is_empty());
        assert_eq!(message_slugs("/Research rust, please"), vec!["Research"]);
        assert_eq!(
            message_slugs("a /search? then\t/research."),
            vec!["search", "research"]
        );
        assert!(message_slugs("/").is_empty());
        assert_eq!(message_slugs("é /x"), vec!["x"]);
        // A file name or a label is not an intent.
        assert!(message_slugs("open /notes.md and /search: now").is_empty());
    }

    #[test]
    fn now_is_strict_rfc_3339() {
        for bad in [
            "2026-11-30T09:15:00+25:00",
            "2026-11-30T09:15:00+01:60",
            "2026-11-30T09:15:00+01:00:30",
            "-000001-11-30T09:15:00Z",
            "+002026-11-30T09:15:00Z",
            "2026-11-30T09:15:60Z",
            "2026-11-30T24:00:00Z",
            "2026-02-30T09:15:00Z",
            "2026-11-30T09:15Z",
            "2026-11-30T09:15:00.Z",
            "2026-11-30T09:15:00.1234567890Z",
            "2026-11-30T09:15:00+0100",
            "2026-11-30T09:15:00+01",
            "2026-11-30T09:15:00Z[Europe/Paris]",
            "2026-11-30T09:15:00",
            "2026-11-30T09:15:00+",
            "20261130T091500Z",
            "2026-11-30T09:15:00ZZ",
            "9999-12-31T23:59:59-23:59",
            "２026-11-30T09:15:00Z",
        ] {
            let error = bad.parse::<Now>().unwrap_err();
            assert!(error.to_string().contains("RFC 3339"), "{bad}: {error}");
        }
        for (good, shown) in [
            ("2026-11-30t09:15:00z", "2026-11-30T09:15:00Z"),
            ("2026-11-30 09:15:00-00:00", "2026-11-30T09:15:00Z"),
            ("2024-02-29T23:59:59.5+23:59", "2024-02-29T23:59:59.5+23:59"),
            ("0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z"),
            (
                "2026-11-30T09:15:00.123456789-09:30",
                "2026-11-30T09:15:00.123456789-09:30",
            ),
        ] {
            let now: Now = good.parse().unwrap();
            assert_eq!(now.to_string(), shown);
        }
        let error = "20\u{1b}[2J".parse::<Now>().unwrap_err().to_string();
        assert!(!error.contains('\u{1b}'), "{error}");
    }

    #[test]
    fn now_requires_an_offset() {
        assert!("2026-11-30T09:15:00".parse::<Now>().is_err());
        assert!("2026-11-30".parse::<Now>().is_err());
        let now: Now = "2026-11-30T09:15:00+01:00".parse().unwrap();
        assert_eq!(now.to_string(), "2026-11-30T09:15:00+01:00");
        assert_eq!(now.utc().strftime("%H:%M").to_string(), "08:15");
        let z: Now = "2026-11-30T09:15:00Z".parse().unwrap();
        assert_eq!(z.to_string(), "2026-11-30T09:15:00Z");
    }

    #[test]
    fn zero_is_a_coordinate() {
        let here = UserLocation {
            name: None,
            latitude: Some(0.0),
            longitude: Some(-78.5),
        };
        assert_eq!(here.coordinates().as_deref(), Some("0.0000, -78.5000"));
    }
}
