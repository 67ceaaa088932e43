//! Provider requests: one Assembly and the conversation so far in, the exact request body out.
//!
//! The pipeline, per request: compose the target (the system text and the notes for the last user
//! message) → split the system text at its stability boundaries → lay the request out as units in
//! the provider's prefix order (tools, system text, messages; see [`plan::Unit`]) → count tokens →
//! place cache breakpoints from the [`rules::Rules`] row of the model ([`plan`]) → write the body as
//! canonical JSON (sorted keys), so equal inputs give equal bytes.
//!
//! Four formats: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, and Gemini
//! `generateContent` (REST). Per-send notes of the target's user slot go into the new user message,
//! never into the system text; tools keep the toolset's canonical order.

mod anthropic;
pub mod canonical;
pub mod conversation;
pub mod diff;
mod gemini;
mod openai;
pub mod plan;
pub mod rules;
pub mod sim;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::agent::Agent;
use crate::assemble::Assembly;
use crate::compose::{Composition, Slot};
use crate::context::SendContext;
use crate::diagnostic::Diagnostic;
use crate::error::{Error, ErrorKind};
use crate::spec::{Stability, Trust};
use crate::toolset::Tool;

pub use conversation::{Conversation, Message, ToolCall};
pub use plan::{Boundary, Breakpoint, CachePlan, CacheState, Cost, Region, Unit};
pub use rules::{Family, Rule, Rules};

/// A request format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Anthropic Messages (`POST /v1/messages`).
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
            max_tokens: 4096,
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
    pub units: Vec<Unit>,
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

/// A contiguous piece of the system text, closed by a stability boundary (or the end).
#[derive(Debug, Clone)]
pub(crate) struct Chunk<'a> {
    pub text: &'a str,
    pub label: String,
    pub boundary: Option<Boundary>,
}

/// One unit as a builder lays it out, before planning.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    pub value: Value,
    pub region: Region,
    /// The message it belongs to (for grouping), in the provider's message list.
    pub group: usize,
    /// The provider's role of that message.
    pub role: &'static str,
    pub label: String,
    /// The text whose tokens the unit costs; `None`: its canonical JSON (tool definitions).
    pub count: Option<String>,
    pub boundary: Option<Boundary>,
    pub markable: bool,
    /// A memoised tool definition: `value` is then unused until the unit is marked.
    pub shared: Option<Arc<ToolUnit>>,
}

impl Piece {
    /// One unit per tool definition, in canonical order; the last one closes the tools region.
    pub(crate) fn tools<'a>(
        inputs: &'a Inputs<'_>,
        markable: bool,
    ) -> impl Iterator<Item = Piece> + 'a {
        let count = inputs.tools.len();
        inputs.tools.iter().enumerate().map(move |(i, tool)| Piece {
            count: None,
            value: Value::Null,
            region: Region::Tools,
            group: 0,
            role: "",
            label: tool.name.clone(),
            boundary: (i + 1 == count).then_some(Boundary::Tools),
            markable,
            shared: Some(tool.clone()),
        })
    }

    /// A unit of a message: `count` is the text whose tokens it costs.
    pub(crate) fn message(
        value: Value,
        group: usize,
        role: &'static str,
        label: String,
        count: String,
        markable: bool,
    ) -> Piece {
        Piece {
            value,
            region: Region::Messages,
            group,
            role,
            label,
            count: Some(count),
            boundary: None,
            markable,
            shared: None,
        }
    }

    /// A unit of the system text: `value` is the chunk as the format writes it.
    pub(crate) fn system(
        chunk: &Chunk<'_>,
        value: Value,
        role: &'static str,
        markable: bool,
    ) -> Piece {
        Piece {
            value,
            region: Region::System,
            group: 0,
            role,
            label: chunk.label.clone(),
            count: Some(chunk.text.to_owned()),
            boundary: chunk.boundary,
            markable,
            shared: None,
        }
    }
}

/// Numbers the runs of consecutive messages that share a provider role. Formats that merge such a
/// run into one message (Anthropic, Gemini) group its units by this number.
#[derive(Default)]
pub(crate) struct RoleRuns {
    group: usize,
    role: &'static str,
}

impl RoleRuns {
    /// The group of the next message, which has this role.
    pub(crate) fn next(&mut self, role: &'static str) -> usize {
        if !self.role.is_empty() && role != self.role {
            self.group += 1;
        }
        self.role = role;
        self.group
    }
}

/// A `{"type": kind, "text": text}` content part (Anthropic blocks, OpenAI parts).
pub(crate) fn text_part(kind: &str, text: &str) -> Value {
    object([
        ("type", Value::String(kind.to_owned())),
        ("text", Value::String(text.to_owned())),
    ])
}

/// A tool definition as a request unit: its JSON, canonical text and tokens.
#[derive(Debug)]
pub(crate) struct ToolUnit {
    pub name: String,
    pub value: Value,
    pub bytes: String,
    pub tokens: u32,
}

/// Tool units by (format, encoding, tool address). Each entry holds its `Arc<Tool>`, so an address
/// cannot be reused by another tool while its entry lives.
pub(crate) type ToolUnits =
    std::collections::HashMap<(Format, crate::tokens::Encoding, usize), (Arc<Tool>, Arc<ToolUnit>)>;

/// Beyond this many entries the tool-unit memo starts over.
const TOOL_UNITS_CAPACITY: usize = 4096;

/// A tool's definition in a format.
fn tool_value(format: Format, tool: &Tool) -> Value {
    let name = Value::String(tool.name.clone());
    let description = Value::String(tool.description.clone());
    match format {
        Format::Anthropic => object([
            ("name", name),
            ("description", description),
            ("input_schema", (*tool.parameters).clone()),
        ]),
        Format::OpenaiChat => object([
            ("type", Value::String("function".into())),
            (
                "function",
                object([
                    ("name", name),
                    ("description", description),
                    ("parameters", (*tool.parameters).clone()),
                ]),
            ),
        ]),
        Format::OpenaiResponses => object([
            ("type", Value::String("function".into())),
            ("name", name),
            ("description", description),
            ("parameters", (*tool.parameters).clone()),
            ("strict", Value::Bool(false)),
        ]),
        Format::Gemini => object([
            ("name", name),
            ("description", description),
            ("parametersJsonSchema", (*tool.parameters).clone()),
        ]),
    }
}

/// What every builder reads.
pub(crate) struct Inputs<'a> {
    pub chunks: Vec<Chunk<'a>>,
    pub tools: Vec<Arc<ToolUnit>>,
    pub messages: Vec<&'a Message>,
    pub conversation: &'a Conversation,
    /// The index in `messages` of the last message the previous request sent, if any.
    pub history_end: Option<usize>,
    pub explicit: bool,
}

impl Agent {
    /// Builds the request body of one send for a provider, with its cache plan.
    ///
    /// The system text is the target's composition, split at its stability boundaries; the user
    /// slot's notes are placed around the send's `user_message`, which becomes the last message.
    /// Without a `user_message` the request continues the conversation as it is (a tool-call turn).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] for an unknown target, [`ErrorKind::Rules`] when the rules have no
    /// row for the model, [`ErrorKind::Request`] when there is nothing to send, when a new user
    /// message would follow unanswered tool calls, or for a malformed Gemini cached-content name.
    pub fn request(
        &self,
        ctx: &SendContext,
        assembly: &Assembly,
        conversation: &Conversation,
        rules: &Rules,
        options: &RequestOptions,
    ) -> Result<Request, Error> {
        let composition = assembly.compose(&options.target)?;
        let chunks = split_system(&composition);
        self.build_request(
            ctx,
            assembly,
            &composition,
            chunks,
            assembly.toolset().tools(),
            conversation,
            rules,
            options,
        )
    }

    /// Builds a request from explicit system chunks and tools (the simulator's naive baseline
    /// uses this with its own order).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn build_request(
        &self,
        ctx: &SendContext,
        assembly: &Assembly,
        composition: &Composition,
        chunks: Vec<Chunk<'_>>,
        tools: &[Arc<Tool>],
        conversation: &Conversation,
        rules: &Rules,
        options: &RequestOptions,
    ) -> Result<Request, Error> {
        let model = options
            .model
            .clone()
            .unwrap_or_else(|| ctx.model.id.clone());
        let rule = rules.find(options.format.family(), &model)?;
        let mut diagnostics = composition.diagnostics.clone();
        let user_message = match &ctx.user_message {
            Some(text) => Some(composition.user_message(text, assembly.separator())),
            None => {
                if !composition.user.is_empty() {
                    diagnostics.push(
                        Diagnostic::warning(
                            "notes-without-message",
                            format!(
                                "the send has no user message, so the user-slot notes of `{}` are not placed on this request",
                                options.target
                            ),
                        )
                        .hint("notes belong to the user message that starts a turn; a tool-call continuation replays that message from the conversation"),
                    );
                }
                None
            }
        };
        if let Some(Message::Assistant { tool_calls, .. }) = conversation.messages.last()
            && !tool_calls.is_empty()
        {
            return Err(Error::new(
                ErrorKind::Request,
                format!(
                    "the conversation ends with tool call `{}`, which needs a result before the next request",
                    tool_calls[0].id
                ),
            ));
        }
        let appended = user_message.clone().map(|text| Message::User { text });
        let messages: Vec<&Message> = conversation
            .messages
            .iter()
            .chain(appended.iter())
            .collect();
        if messages.is_empty() {
            return Err(Error::new(
                ErrorKind::Request,
                "nothing to send: the conversation is empty and the send has no user message",
            ));
        }
        if let Some(name) = &options.cached_content
            && (options.format != Format::Gemini
                || !name.starts_with("cachedContents/")
                || name.len() <= "cachedContents/".len())
        {
            return Err(Error::new(
                ErrorKind::Request,
                format!(
                    "a cached content reference is a Gemini name like `cachedContents/abc123`, got `{name}` for {}",
                    options.format.as_str()
                ),
            ));
        }
        let history_end = messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
            .and_then(|i| i.checked_sub(1));
        let counting = assembly.counting();
        let tool_units = self.tool_units_of(options.format, counting, tools);
        let inputs = Inputs {
            chunks,
            tools: tool_units,
            messages,
            conversation,
            history_end,
            explicit: rule.explicit_breakpoints,
        };
        let mut pieces = match options.format {
            Format::Anthropic => anthropic::pieces(&inputs),
            Format::OpenaiChat => openai::chat_pieces(&inputs),
            Format::OpenaiResponses => openai::responses_pieces(&inputs),
            Format::Gemini => gemini::pieces(&inputs, options.cached_content.is_some()),
        };
        if let Some(last) = pieces.last_mut()
            && last.region == Region::Messages
        {
            last.boundary = Some(Boundary::Tail);
        }
        let mut units = Vec::with_capacity(pieces.len());
        let mut prefix = 0u128;
        let mut message_index = usize::MAX;
        let mut part = 0usize;
        for piece in &pieces {
            let (bytes, tokens) = match &piece.shared {
                Some(shared) => (shared.bytes.clone(), shared.tokens),
                None => {
                    let bytes = canonical::to_string(&piece.value);
                    let text = piece.count.as_deref().unwrap_or(&bytes);
                    let tokens = self.counter.count(counting, text).count;
                    (bytes, tokens)
                }
            };
            prefix = plan::chain(prefix, bytes.as_bytes());
            if piece.region == Region::Messages {
                if piece.group != message_index {
                    message_index = piece.group;
                    part = 0;
                } else {
                    part += 1;
                }
            }
            units.push(Unit {
                at: unit_pointer(
                    options.format,
                    rule.explicit_breakpoints,
                    piece,
                    part,
                    &units,
                ),
                label: piece.label.clone(),
                region: piece.region,
                tokens,
                boundary: piece.boundary,
                markable: piece.markable,
                prefix,
                bytes,
            });
        }
        let tool_turn = ctx.user_message.is_none() && conversation.continues_tool_turn();
        let (placed, skipped) = plan::place(&units, rule, options.expected_gap_seconds, tool_turn);
        let at: Vec<usize> = placed.iter().map(|p| p.unit).collect();
        let unit_bytes: Vec<&str> = units.iter().map(|u| u.bytes.as_str()).collect();
        let fingerprints = plan::fingerprints(&[options.format.as_str(), &model], &unit_bytes, &at);
        let prefix_tokens = plan::prefix_tokens(&units);
        let breakpoints: Vec<Breakpoint> = placed
            .iter()
            .zip(fingerprints)
            .map(|(p, fingerprint)| Breakpoint {
                unit: p.unit,
                at: units[p.unit].at.clone(),
                boundary: p.boundary,
                ttl: rule.ttls[p.ttl].name.clone(),
                prefix_tokens: prefix_tokens[p.unit],
                fingerprint,
            })
            .collect();
        for p in &placed {
            if let Some(shared) = &pieces[p.unit].shared {
                pieces[p.unit].value = shared.value.clone();
            }
            let ttl = &rule.ttls[p.ttl].name;
            match options.format {
                Format::Anthropic => anthropic::mark(&mut pieces[p.unit].value, ttl),
                Format::OpenaiChat | Format::OpenaiResponses => {
                    openai::mark(&mut pieces[p.unit].value, ttl)
                }
                Format::Gemini => {}
            }
        }
        // An explicit breakpoint lifetime and `prompt_cache_retention` are never sent together.
        let retention = if placed.is_empty() {
            options
                .expected_gap_seconds
                .filter(|gap| *gap >= rule.automatic_seconds)
                .and_then(|gap| rule.retention.iter().find(|r| r.seconds > gap))
        } else {
            None
        };
        let body = match options.format {
            Format::Anthropic => anthropic::assemble(&pieces, &model, options.max_tokens),
            Format::OpenaiChat | Format::OpenaiResponses => openai::assemble(
                &pieces,
                &model,
                options,
                &cache_key(self, assembly, options),
                !placed.is_empty(),
                rule.explicit_breakpoints,
                retention.map(|r| r.name.as_str()),
            ),
            Format::Gemini => gemini::assemble(&pieces, options),
        };
        // Units are written once: unmarked ones from their canonical text, marked ones again
        // with their marker.
        let marked: Vec<(usize, String)> = placed
            .iter()
            .map(|p| (p.unit, canonical::to_string(&pieces[p.unit].value)))
            .collect();
        let texts: Vec<&str> = units
            .iter()
            .enumerate()
            .map(|(i, u)| {
                marked
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map_or(u.bytes.as_str(), |(_, text)| text.as_str())
            })
            .collect();
        let capacity = texts.iter().map(|t| t.len()).sum::<usize>() + 1024;
        let body = canonical::to_string_spliced(&body, &texts, capacity);
        let retention_seconds = retention.map(|r| r.seconds);
        let mut state = CacheState::new();
        let cold = state.apply(&units, &placed, rule, retention_seconds, 0);
        let repeat = state.apply(&units, &placed, rule, retention_seconds, 1);
        let plan = CachePlan {
            rules_version: rules.version.clone(),
            rule: plan::RuleSummary {
                provider: rule.provider.as_str(),
                models: rule.models.clone(),
                min_tokens: rule.min_tokens,
                source: rule.source.clone(),
                date: rule.date.clone(),
            },
            breakpoints,
            skipped,
            retention: retention.map(|r| r.name.clone()),
            total_tokens: prefix_tokens.last().copied().unwrap_or(0),
            cold,
            repeat,
        };
        Ok(Request {
            format: options.format,
            model,
            target: composition.target.clone(),
            body,
            user_message,
            plan,
            units,
            diagnostics,
            placed,
            retention_seconds,
        })
    }
}

/// The OpenAI `prompt_cache_key`: the caller's, or the agent's name and the fingerprint's start.
fn cache_key(agent: &Agent, assembly: &Assembly, options: &RequestOptions) -> String {
    if let Some(key) = &options.cache_key {
        return key.clone();
    }
    let name: String = agent
        .name()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    format!("{name}-{}", &assembly.fingerprint().to_string()[..16])
}

/// Where a unit sits in the body, as a JSON pointer.
fn unit_pointer(
    format: Format,
    explicit: bool,
    piece: &Piece,
    part: usize,
    earlier: &[Unit],
) -> String {
    let same_region = earlier.iter().filter(|u| u.region == piece.region).count();
    let system = usize::from(earlier.iter().any(|u| u.region == Region::System));
    match (format, piece.region) {
        (Format::Anthropic, Region::Tools) => format!("/tools/{same_region}"),
        (Format::Anthropic, Region::System) => format!("/system/{same_region}"),
        (Format::Anthropic, Region::Messages) => {
            format!("/messages/{}/content/{part}", piece.group)
        }
        (Format::OpenaiChat, Region::Tools) => format!("/tools/{same_region}"),
        (Format::OpenaiChat, Region::System) if explicit => {
            format!("/messages/0/content/{same_region}")
        }
        (Format::OpenaiChat, Region::System) => "/messages/0/content".into(),
        (Format::OpenaiChat, Region::Messages) => format!("/messages/{}", piece.group + system),
        (Format::OpenaiResponses, Region::Tools) => format!("/tools/{same_region}"),
        (Format::OpenaiResponses, Region::System) if explicit => {
            format!("/input/0/content/{same_region}")
        }
        (Format::OpenaiResponses, Region::System) => "/input/0/content".into(),
        (Format::OpenaiResponses, Region::Messages) => format!("/input/{}", piece.group + system),
        (Format::Gemini, Region::Tools) => {
            format!("/tools/0/functionDeclarations/{same_region}")
        }
        (Format::Gemini, Region::System) => "/systemInstruction/parts/0".into(),
        (Format::Gemini, Region::Messages) => format!("/contents/{}/parts/{part}", piece.group),
    }
}

/// Splits a target's system text at its stability boundaries: after the leading run of
/// platform- and author-controlled stable parts (agent-wide), after the leading stable run up to
/// tenant-controlled parts (tenant-wide), and at the end of the stable prefix. Each chunk ends at a
/// part's end, so a separator starts the next chunk and the chunks join to the system text.
pub(crate) fn split_system(composition: &Composition) -> Vec<Chunk<'_>> {
    let system = &composition.system;
    if system.is_empty() {
        return Vec::new();
    }
    let parts: Vec<_> = composition
        .parts
        .iter()
        .filter(|p| p.slot == Slot::System)
        .collect();
    let stable_run = parts
        .iter()
        .take_while(|p| p.stability == Stability::Stable)
        .count();
    let run_while = |limit: Trust| {
        parts[..stable_run]
            .iter()
            .take_while(|p| p.trust <= limit)
            .count()
    };
    let agent = run_while(Trust::Author);
    let tenant = run_while(Trust::Tenant);
    let mut cuts: Vec<(usize, Boundary)> = Vec::new();
    for (count, boundary) in [
        (agent, Boundary::Agent),
        (tenant, Boundary::Tenant),
        (stable_run, Boundary::Stable),
    ] {
        if count == 0 {
            continue;
        }
        let end = parts[count - 1].range.end;
        match cuts.last_mut() {
            // Two boundaries at one place: the end of the stable half names it; otherwise the
            // wider reuse (agent-wide over tenant-wide) does.
            Some(last) if last.0 == end => {
                if boundary == Boundary::Stable {
                    last.1 = boundary;
                }
            }
            _ => cuts.push((end, boundary)),
        }
    }
    let mut chunks = Vec::new();
    let mut start = 0;
    let label = |from: usize, to: usize| {
        let ids: Vec<&str> = parts
            .iter()
            .filter(|p| p.range.start >= from && p.range.end <= to)
            .map(|p| &*p.id)
            .collect();
        match ids.as_slice() {
            [] => String::new(),
            [one] => (*one).to_owned(),
            [first, .., last] => format!("{first} … {last}"),
        }
    };
    for (end, boundary) in cuts {
        if end > start {
            chunks.push(Chunk {
                text: &system[start..end],
                label: label(start, end),
                boundary: Some(boundary),
            });
            start = end;
        }
    }
    if start < system.len() {
        chunks.push(Chunk {
            text: &system[start..],
            label: label(start, system.len()),
            boundary: None,
        });
    }
    chunks
}

/// A JSON object from key–value pairs. Inserted one by one: for the few keys of a request
/// object that is cheaper than collecting (which sorts a temporary vector first).
pub(crate) fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let mut map = serde_json::Map::new();
    for (key, value) in entries {
        map.insert(key.to_owned(), value);
    }
    Value::Object(map)
}

impl Agent {
    /// The tools as request units of a format, memoised per tool (tool lists repeat on every
    /// request of a thread).
    fn tool_units_of(
        &self,
        format: Format,
        counting: crate::tokens::Counting,
        tools: &[Arc<Tool>],
    ) -> Vec<Arc<ToolUnit>> {
        // The memo holds only complete entries, so a poisoned lock is still consistent.
        let mut memo = self.tool_units.lock().unwrap_or_else(|e| e.into_inner());
        if memo.len() + tools.len() > TOOL_UNITS_CAPACITY {
            memo.clear();
        }
        tools
            .iter()
            .map(|tool| {
                let key = (format, counting.encoding, Arc::as_ptr(tool) as usize);
                memo.entry(key)
                    .or_insert_with(|| {
                        let value = tool_value(format, tool);
                        let bytes = canonical::to_string(&value);
                        let tokens = self.counter.count(counting, &bytes).count;
                        (
                            tool.clone(),
                            Arc::new(ToolUnit {
                                name: tool.name.clone(),
                                value,
                                bytes,
                                tokens,
                            }),
                        )
                    })
                    .1
                    .clone()
            })
            .collect()
    }
}
