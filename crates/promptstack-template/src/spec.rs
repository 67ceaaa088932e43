//! The part of the agent spec's vocabulary templates are compiled against: a variable's
//! declaration ([`VariableSpec`], with its [`Stability`], [`Trust`] and [`Shape`]) and the limits
//! on what one template or expression may hold. Plain data with the spec's serde and schema
//! derives; the core's `promptstack_core::spec` re-exports each item, and the spec itself
//! (`AgentSpec`, its loader) stays in the core.

mod shape;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use shape::{Shape, describe};

/// The most operators one template tag (`{{ … }}`, `{% … %}`) or gate expression may hold.
///
/// An operator here is anything that nests the parsed expression one level deeper: arithmetic,
/// `~`, comparisons, `and`/`or`/`not`, `in`/`is`, `if`, a filter `|`, an attribute `.`, an index
/// `[` or a call `(`. The template compiler walks expressions recursively, so a long flat chain
/// (`1 + 1 + …`, `x|upper|upper|…`) would exhaust the stack; the spec is refused before any
/// template is compiled instead, located at the first operator past the limit. The limit keeps
/// the deepest such walk (a chain of `+`, each link guarded, three frames of the compiler a
/// link) within a 2 MiB thread stack even in an unoptimised build.
pub const MAX_EXPRESSION_OPERATORS: usize = 400;

/// The deepest nesting of containers a template may make (`[[[x]]]`, `xs | batch(1)`, …): a
/// render that nests a value deeper fails where the value is made, so dropping or writing any
/// value a render holds recurses a bounded number of times. A send's own values nest at most
/// `promptstack_core::spec::MAX_NESTING` deep, which leaves every template room to wrap them.
pub const MAX_TEMPLATE_NESTING: usize = 128;

/// Who controls a block's text. Ordered from most to least trusted.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Written by the platform running the agent.
    Platform,
    /// Written by the agent's author (this spec).
    Author,
    /// Written by a tenant administrator.
    Tenant,
    /// Written or influenced by the end user.
    User,
    /// From outside: web pages, files, third-party servers.
    Untrusted,
}

impl Trust {
    /// Whether text of this trust is controlled by someone other than the platform or the author.
    pub fn is_user_controlled(self) -> bool {
        self >= Trust::Tenant
    }

    /// The lowercase name used in specs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Platform => "platform",
            Trust::Author => "author",
            Trust::Tenant => "tenant",
            Trust::User => "user",
            Trust::Untrusted => "untrusted",
        }
    }
}

/// Whether a block may change from one send to the next in the same thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    /// Byte-identical across the sends of a thread: part of the cacheable prefix.
    Stable,
    /// May change on every send (the clock, per-send notes).
    Volatile,
}

impl Stability {
    /// The lowercase name used in specs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Stability::Stable => "stable",
            Stability::Volatile => "volatile",
        }
    }
}

/// A variable the templates may read as `variables.<name>`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VariableSpec {
    /// Whether the value may change between sends of a thread. Stable blocks may read only stable
    /// variables.
    pub stability: Stability,
    /// Who controls the value. A block that renders it must declare at least this trust.
    pub trust: Trust,
    /// The shape its value must have (`string`, `list of string`, …; `any` when absent). A send
    /// whose value does not fit is refused, located at the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
    /// The value used when the send context does not supply one. Without a default, a template that
    /// reads a missing variable is an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// What the variable means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}
