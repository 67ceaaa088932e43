//! What the front ends share around the engine's calls: the names a command's options take, the
//! request options with their defaults, the diff report, and the target a command works on.
//!
//! The command line, the HTTP server and the Node and Python packages each read their input in
//! their own way (arguments, a JSON body, a JavaScript object, keyword arguments) and print in
//! their own way; what lies between is defined here once, so that the four agree:
//!
//! - [`RenderFormat`] names what `render` answers with (text, JSON, or a provider request body);
//!   the provider formats are [`provider::Format`](crate::provider::Format) and the slots
//!   [`compose::Slot`](crate::compose::Slot), each with `FromStr`, `Display` and serde under the
//!   same names;
//! - [`RequestSettings`] are the options of a provider request with their defaults, and
//!   [`read_conversation`] reads the conversation within the [`Limits`];
//! - the target is [`compose::choose_target`](crate::compose::choose_target);
//! - [`SendsDiff`] is the report of `diff` (and of a publish's cache impact);
//! - an engine error's kind is named by [`ErrorKind::as_str`](crate::ErrorKind::as_str);
//! - each command has one typed request and one typed result, and one function that runs it
//!   over an [`Assembled`] send: [`render`] ([`RenderRequest`] → [`RenderResult`]; the full
//!   prompt also over a send not yet assembled, [`render_full`]), [`request`]
//!   ([`RequestRequest`] → [`RequestResult`]; over a conversation read by the front end,
//!   [`request_with`]), [`explain`] ([`ExplainRequest`] →
//!   [`Explanation`](crate::report::Explanation)), [`tools`] ([`ToolsResult`]), [`diff`]
//!   ([`DiffRequest`] → [`SendsDiff`]) and [`lint`] ([`LintResult`]), and over several sends
//!   [`cache_sim`] ([`CacheSimRequest`] → [`CacheSimResult`]); over a text, [`fence`]
//!   ([`FenceRequest`] → [`FenceResult`]) and [`cite`] ([`CiteRequest`] → [`CiteResult`], the
//!   processor the text streams through); each refuses with an
//!   [`Error`] that a front end words in its own terms.
//!
//! With the `schema` feature each serialisable type also derives its OpenAPI schema.

use promptstack_core::compose::{Composition, UnknownName};
use promptstack_core::provider::diff::{self, Divergence, Survival};
use promptstack_core::provider::{
    Conversation, DEFAULT_MAX_TOKENS, Format, Request, RequestOptions,
};
use serde::{Deserialize, Serialize};

use crate::limits::Limits;

mod run;
mod text;

pub use run::{
    Assembled, CacheSimRequest, CacheSimResult, Diagnosed, DiffRequest, Env, Error, ExplainRequest,
    LintResult, OutOfRange, RenderRequest, RenderResult, Rendered, RequestRequest, RequestResult,
    SimOption, ToolsResult, cache_sim, diff, explain, lint, render, render_full, request,
    request_with, tools,
};
pub use text::{
    CiteMode, CiteRequest, CiteResult, FenceKind, FenceRequest, FenceResult, cite, fence,
};

/// What `render` answers with: a text, every composition as JSON, or a provider request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum RenderFormat {
    /// The text of one target (`text`).
    #[default]
    Text,
    /// Every composition with its parts (`compositions`).
    Json,
    /// An Anthropic Messages request body (`body`).
    Anthropic,
    /// An OpenAI Chat Completions request body.
    OpenaiChat,
    /// An OpenAI Responses request body.
    OpenaiResponses,
    /// A Gemini generateContent request body.
    Gemini,
}

impl RenderFormat {
    /// Every format, in the order they are listed.
    pub const ALL: [RenderFormat; 6] = [
        RenderFormat::Text,
        RenderFormat::Json,
        RenderFormat::Anthropic,
        RenderFormat::OpenaiChat,
        RenderFormat::OpenaiResponses,
        RenderFormat::Gemini,
    ];

    /// The provider format, for a request body.
    pub fn provider(self) -> Option<Format> {
        match self {
            RenderFormat::Text | RenderFormat::Json => None,
            RenderFormat::Anthropic => Some(Format::Anthropic),
            RenderFormat::OpenaiChat => Some(Format::OpenaiChat),
            RenderFormat::OpenaiResponses => Some(Format::OpenaiResponses),
            RenderFormat::Gemini => Some(Format::Gemini),
        }
    }

    /// The format's name (`text`, `json`, or the provider format's).
    pub fn as_str(self) -> &'static str {
        match self.provider() {
            Some(format) => format.as_str(),
            None if self == RenderFormat::Json => "json",
            None => "text",
        }
    }

    /// What the format prints, in a few words.
    pub fn summary(self) -> &'static str {
        match self {
            RenderFormat::Text => "The text itself",
            RenderFormat::Json => {
                "Every composed text with its parts, the fingerprint and the diagnostics, as JSON"
            }
            RenderFormat::Anthropic => "An Anthropic Messages request body",
            RenderFormat::OpenaiChat => "An OpenAI Chat Completions request body",
            RenderFormat::OpenaiResponses => "An OpenAI Responses request body",
            RenderFormat::Gemini => "A Gemini generateContent request body (REST)",
        }
    }
}

impl std::fmt::Display for RenderFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RenderFormat {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<RenderFormat, UnknownName> {
        RenderFormat::ALL
            .into_iter()
            .find(|format| format.as_str() == name)
            .ok_or_else(|| UnknownName::new("format", name, RenderFormat::ALL.map(|f| f.as_str())))
    }
}

/// An OpenAPI schema of a type named by strings, built from its one list of names, for a type of
/// the core (which knows no OpenAPI).
#[cfg(feature = "schema")]
macro_rules! named_schema {
    ($(#[$doc:meta])* $schema:ident, $name:literal, $description:literal, $names:expr) => {
        $(#[$doc])*
        pub struct $schema;

        impl utoipa::PartialSchema for $schema {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
                ObjectBuilder::new()
                    .schema_type(SchemaType::new(Type::String))
                    .description(Some($description))
                    .enum_values(Some($names))
                    .into()
            }
        }

        impl utoipa::ToSchema for $schema {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($name)
            }
        }
    };
}

#[cfg(feature = "schema")]
named_schema!(
    /// The OpenAPI schema of a [`Format`] (`ProviderFormat`): its names, from [`Format::ALL`].
    ProviderFormatSchema,
    "ProviderFormat",
    "A provider format.",
    Format::ALL.map(Format::as_str)
);

#[cfg(feature = "schema")]
named_schema!(
    /// The OpenAPI schema of a [`Slot`](crate::compose::Slot) (`Slot`): its names.
    SlotSchema,
    "Slot",
    "Which text of a target.",
    crate::compose::Slot::ALL.map(crate::compose::Slot::as_str)
);

/// The OpenAPI schema of a whole number a `u64` holds (`U64`), which utoipa states as a signed
/// 64-bit integer.
#[cfg(feature = "schema")]
pub struct U64Schema;

#[cfg(feature = "schema")]
impl utoipa::PartialSchema for U64Schema {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::extensions::Extensions;
        use utoipa::openapi::schema::{Object, Schema, SchemaType};
        // Carried as raw JSON Schema: utoipa's own numbers cannot state `u64::MAX`.
        let mut extensions = Extensions::default();
        extensions.extend([
            ("type".to_owned(), serde_json::json!("integer")),
            ("minimum".to_owned(), serde_json::json!(0)),
            ("maximum".to_owned(), serde_json::json!(u64::MAX)),
        ]);
        let mut object = Object::default();
        object.schema_type = SchemaType::AnyValue;
        object.extensions = Some(extensions);
        utoipa::openapi::RefOr::T(Schema::Object(object))
    }
}

#[cfg(feature = "schema")]
impl utoipa::ToSchema for U64Schema {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("U64")
    }
}

/// Options of a provider request (the command line's `--conversation`, `--model`, …), each
/// absent one taking its default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = RequestOptionsBody))]
#[serde(deny_unknown_fields)]
pub struct RequestSettings {
    /// The conversation so far: `{"messages": [...]}`.
    #[cfg_attr(feature = "schema", schema(value_type = Option<Object>))]
    pub conversation: Option<serde_json::Value>,
    /// The model id sent (default: the send's).
    pub model: Option<String>,
    /// The output token limit (default 4096).
    #[serde(default, deserialize_with = "whole_u32")]
    pub max_tokens: Option<u32>,
    /// Expected seconds until the thread's next request.
    #[serde(default, deserialize_with = "whole_u32")]
    pub gap_seconds: Option<u32>,
    /// OpenAI `prompt_cache_key`.
    pub cache_key: Option<String>,
    /// Gemini explicit cached content.
    pub cached_content: Option<String>,
}

/// Reads an optional whole number as JSON states one (see [`whole_number`]) that a `u32` holds.
fn whole_u32<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    use serde::de::Error as _;
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    whole_number(&number).map(Some).ok_or_else(|| {
        D::Error::custom(format!(
            "expected a whole number from 0 to {}, got {number}",
            u32::MAX
        ))
    })
}

/// Reads an optional whole number the way the OpenAPI document states it (JSON Schema's
/// `integer`): a number without a fractional part, written `400` or `400.0` alike, that `T`
/// holds.
///
/// # Errors
///
/// Not a number, a fractional one, or one out of `T`'s range.
pub fn whole<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64>,
{
    use serde::de::Error as _;
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    whole_number(&number).map(Some).ok_or_else(|| {
        D::Error::custom(format!(
            "expected a whole number that a {} holds, got {number}",
            std::any::type_name::<T>()
        ))
    })
}

/// The whole number a JSON number states, when `T` holds it: a number without a fractional part,
/// written `400` or `400.0` alike (JSON Schema's `integer`, and the same number in JSON). None
/// for a fractional number, a negative one, or one out of `T`'s range.
pub fn whole_number<T: TryFrom<u64>>(number: &serde_json::Number) -> Option<T> {
    /// The largest whole number every float at most it is exactly (2^53).
    const EXACT: f64 = 9_007_199_254_740_992.0;
    number
        .as_u64()
        .or_else(|| {
            number
                .as_f64()
                // A float is that whole number only when it is one exactly (at most 2^53).
                .filter(|f| f.fract() == 0.0 && (0.0..=EXACT).contains(f))
                .map(|f| f as u64)
        })
        .and_then(|n| T::try_from(n).ok())
}

impl RequestSettings {
    /// The options of a request in `format` for `target`, with the defaults filled in
    /// ([`DEFAULT_MAX_TOKENS`]; the send's model id).
    pub fn options(&self, format: Format, target: impl Into<String>) -> RequestOptions {
        RequestOptions {
            format,
            target: target.into(),
            model: self.model.clone(),
            max_tokens: self.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            expected_gap_seconds: self.gap_seconds,
            cache_key: self.cache_key.clone(),
            cached_content: self.cached_content.clone(),
        }
    }

    /// The conversation given as JSON (an empty one when none is), read within `limits`.
    ///
    /// # Errors
    ///
    /// A [`Request`](crate::ErrorKind::Request) error when it is not a conversation or passes
    /// its bounds.
    pub fn conversation(&self, limits: &Limits) -> Result<Conversation, crate::Error> {
        match &self.conversation {
            Some(value) => {
                let bytes = serde_json::to_vec(value).unwrap_or_default();
                read_conversation(&bytes, "conversation", limits)
            }
            None => Ok(Conversation::default()),
        }
    }
}

/// Reads a conversation (`{"messages": [...]}` as JSON) named `name` in messages, within the
/// conversation bounds of `limits`.
///
/// # Errors
///
/// A [`Request`](crate::ErrorKind::Request) error when it is not a conversation or passes its
/// bounds.
pub fn read_conversation(
    bytes: &[u8],
    name: &str,
    limits: &Limits,
) -> Result<Conversation, crate::Error> {
    Conversation::from_json_with(bytes, name, &limits.conversation())
}

/// What changed between two renders, for the cache: the first divergence of the system text and
/// of the request, and which breakpoints of the first request survive.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = CacheDiff))]
pub struct SendsDiff {
    /// The target compared.
    pub target: String,
    /// The provider format compared.
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    pub format: Format,
    /// Where the system texts first differ (none when identical).
    #[cfg_attr(feature = "schema", schema(value_type = Option<Object>))]
    pub system: Option<Divergence>,
    /// Where the request bodies first differ (none when identical).
    #[cfg_attr(feature = "schema", schema(value_type = Option<Object>))]
    pub request: Option<Divergence>,
    /// Each breakpoint of the first request, and whether it survives in the second.
    #[cfg_attr(feature = "schema", schema(value_type = Vec<Object>))]
    pub breakpoints: Vec<Survival>,
}

impl SendsDiff {
    /// Compares the compositions and requests of the two sides (both of `target` in one format).
    pub fn new(a: (&Composition, &Request), b: (&Composition, &Request)) -> SendsDiff {
        SendsDiff {
            target: a.1.target.clone(),
            format: a.1.format,
            system: diff::compositions(a.0, b.0),
            request: diff::requests(a.1, b.1),
            breakpoints: diff::survivals(a.1, b.1),
        }
    }

    /// Whether the two sides send the same system text and request.
    pub fn is_same(&self) -> bool {
        self.system.is_none() && self.request.is_none()
    }
}
