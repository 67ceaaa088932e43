//! Provider requests: one Assembly and the conversation so far in, the exact request body out.
//!
//! The pipeline, per request: compose the target (the system text and the notes for the last user
//! message) → split the system text at its stability boundaries → lay the request out as units in
//! the provider's prefix order (tools, system text, messages; see [`plan::PlanUnit`]) → count tokens →
//! place cache breakpoints from the [`rules::Rules`] row of the model ([`plan`]) → write the body as
//! canonical JSON (sorted keys), so equal inputs give equal bytes.
//!
//! Four formats: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, and Gemini
//! `generateContent` (REST). Per-send notes of the target's user slot go into the new user message,
//! never into the system text; tools keep the toolset's canonical order.
//!
//! Each format is one implementation of a small trait (`wire::Wire`: tool definitions, the head,
//! one message's units, markers, pointers, the body skeleton) in `anthropic`, `openai` and
//! `gemini`; `build` runs the steps they share, linear in the number of units, and
//! [`Agent::request`] is a thin call into it.

mod anthropic;
mod build;
pub(crate) mod canonical;
pub(crate) mod conversation;
pub mod diff;
mod gemini;
mod openai;
pub(crate) mod plan;
pub(crate) mod rules;
pub mod sim;
mod wire;

use serde::Serialize;
use serde_json::Value;

use crate::assemble::Assembly;
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::ir::AgentInner;

pub(crate) use build::{AgentParts, Layout, RequestConfig, build_layout};
pub(crate) use wire::Chunk;

pub use canonical::to_string as canonical_json;
pub use conversation::{
    Conversation, ConversationLimits, MAX_CONVERSATION_BYTES, MAX_CONVERSATION_MESSAGES, Message,
    ToolCall,
};
pub use plan::{
    Boundary, Breakpoint, CachePlan, CacheState, Cost, PlanUnit, Region, RuleSummary, Skipped,
};
pub use rules::{
    BUNDLED as BUNDLED_RULES, Family, Retention, Rule, Rules, Ttl, model_glob_matches,
};

/// A request format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Anthropic Messages (`POST /v1/messages`).
    #[default]
    Anthropic,
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    OpenaiChat,
    /// OpenAI Responses (`POST /v1/responses`).
    OpenaiResponses,
    /// Gemini `generateContent` (REST body).
    Gemini,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 4] = [
        Format::Anthropic,
        Format::OpenaiChat,
        Format::OpenaiResponses,
        Format::Gemini,
    ];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Anthropic => "anthropic",
            Format::OpenaiChat => "openai-chat",
            Format::OpenaiResponses => "openai-responses",
            Format::Gemini => "gemini",
        }
    }

    /// The API the format is the body of, in a few words.
    pub fn summary(self) -> &'static str {
        match self {
            Format::Anthropic => "Anthropic Messages",
            Format::OpenaiChat => "OpenAI Chat Completions",
            Format::OpenaiResponses => "OpenAI Responses",
            Format::Gemini => "Gemini generateContent (REST)",
        }
    }

    /// The provider family whose rules apply.
    pub fn family(self) -> Family {
        match self {
            Format::Anthropic => Family::Anthropic,
            Format::OpenaiChat | Format::OpenaiResponses => Family::Openai,
            Format::Gemini => Family::Gemini,
        }
    }

    /// The format for a provider name, if there is exactly one (`openai` means Chat Completions).
    pub fn for_provider(provider: &str) -> Option<Format> {
        match provider.to_ascii_lowercase().as_str() {
            "anthropic" => Some(Format::Anthropic),
            "openai" | "openai-chat" => Some(Format::OpenaiChat),
            "openai-responses" => Some(Format::OpenaiResponses),
            "gemini" | "google" => Some(Format::Gemini),
            _ => None,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Format {
    type Err = crate::compose::UnknownName;

    /// The format of this exact name ([`Format::as_str`]); [`Format::for_provider`] also takes
    /// provider names.
    fn from_str(name: &str) -> Result<Format, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|format| format.as_str() == name)
            .ok_or_else(|| {
                crate::compose::UnknownName::new("format", name, Format::ALL.map(Format::as_str))
            })
    }
}

/// The output token limit of a request when none is given.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// What to build, beyond the assembly and the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestOptions {
    /// The format.
    pub format: Format,
    /// The target whose composition is sent.
    pub target: String,
    /// The model id sent; default: the send's model id.
    pub model: Option<String>,
    /// The output token limit (`max_tokens`, `max_completion_tokens`, `max_output_tokens`,
    /// `maxOutputTokens`).
    pub max_tokens: u32,
    /// The expected time until the thread's next request, which picks the cache lifetime.
    pub expected_gap_seconds: Option<u32>,
    /// OpenAI `prompt_cache_key`; default: the agent's name and the first 16 hex digits of the
    /// assembly's fingerprint (stable for the thread, and no secret).
    pub cache_key: Option<String>,
    /// Gemini: the name of an explicit cached content (`cachedContents/…`) holding the system text
    /// and tools; the request then omits both.
    pub cached_content: Option<String>,
}

impl RequestOptions {
    /// Options for a format and target with defaults for the rest.
    pub fn new(format: Format, target: impl Into<String>) -> Self {
        Self {
            format,
            target: target.into(),
            model: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            expected_gap_seconds: None,
            cache_key: None,
            cached_content: None,
        }
    }
}

/// A built request.
#[derive(Debug, Clone, Serialize)]
pub struct Request {
    /// The format.
    pub format: Format,
    /// The model id.
    pub model: String,
    /// The target composed.
    pub target: String,
    /// The body, as canonical JSON bytes.
    pub body: String,
    /// The new user message as sent (the user's text with this send's notes): store it in the
    /// conversation so that later requests replay the same bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_message: Option<String>,
    /// Where the breakpoints are and what the request costs.
    pub plan: CachePlan,
    /// The request's units in prefix order.
    pub units: Vec<PlanUnit>,
    /// Findings (e.g. notes that had no user message to go into).
    pub diagnostics: Vec<Diagnostic>,
    #[serde(skip)]
    pub(crate) placed: Vec<plan::Placed>,
    #[serde(skip)]
    pub(crate) retention_seconds: Option<u32>,
}

impl Request {
    /// The body as a JSON value.
    pub fn body_value(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// Replays this request against a cache state at `now` (seconds): what it reads, writes and
    /// pays, with the same rules it was planned with.
    pub fn replay(&self, rules: &Rules, state: &mut CacheState, now: u64) -> Result<Cost, Error> {
        let rule = rules.find(self.format.family(), &self.model)?;
        Ok(state.apply(&self.units, &self.placed, rule, self.retention_seconds, now))
    }
}

impl AgentInner {
    /// The implementation of [`Agent::request`](crate::Agent::request).
    pub(crate) fn request(
        &self,
        assembly: &Assembly,
        conversation: &Conversation,
        rules: &Rules,
        options: &RequestOptions,
    ) -> Result<Request, Error> {
        let config = RequestConfig {
            assembly,
            conversation,
            rules,
            options,
        };
        build::build(&self.request_parts(), &config)
    }

    /// What building a request borrows from the agent.
    pub(crate) fn request_parts(&self) -> AgentParts<'_> {
        AgentParts {
            name: &self.spec.name,
            counter: &self.caches.counter,
            tool_units: &self.caches.tool_units,
        }
    }
}
