//! What the four wire formats have in common: the [`Wire`] trait each format implements, the
//! units a builder lays out ([`Piece`]), and the message loop they share.
//!
//! A format decides how one message is written (its JSON, its role, its label, whether the
//! provider accepts a breakpoint on it); the loop here decides everything else the same way for
//! all of them: which provider message a unit belongs to, the label's message number, and which
//! unit closes the history boundary. The loop does constant work per message, so laying out a
//! conversation is linear in its size.

use crate::caches::ToolUnit;
use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::conversation::{Conversation, Message, ToolCall};
use super::plan::{Boundary, Region};
use super::{Format, RequestOptions, canonical};
use crate::error::{Error, ErrorKind};
use crate::fingerprint::Fingerprint;
use crate::toolset::Tool;

/// One wire format: how a request's units are laid out, marked, located and written.
pub(crate) trait Wire: Sync {
    /// The format this implementation writes.
    fn format(&self) -> Format;

    /// A tool definition.
    fn tool(&self, tool: &Tool) -> Value;

    /// Checks the options only some formats take. By default a Gemini cached content is refused.
    fn check(&self, options: &RequestOptions) -> Result<(), Error> {
        match &options.cached_content {
            Some(name) => Err(cached_content_error(name, self.format())),
            None => Ok(()),
        }
    }

    /// The units before the messages (tools and system text), in the format's prefix order.
    fn head<'a>(&self, inputs: &Inputs<'a>, pieces: &mut Vec<Piece<'a>>);

    /// How the units of the messages are grouped into provider messages.
    fn grouping(&self) -> Grouping;

    /// The units of one message, in order.
    fn message<'a>(&self, message: &'a Message, cx: &MessageCx<'a>, out: &mut Vec<Part<'a>>);

    /// Puts a breakpoint with lifetime `ttl` on a unit's JSON.
    fn mark(&self, value: &mut Value, ttl: &str);

    /// Where a unit sits in the body, as a JSON pointer.
    fn pointer(&self, place: &Place) -> String;

    /// The body with every unit as a placeholder for its canonical text.
    fn skeleton(&self, pieces: &[Piece<'_>], body: &BodyConfig<'_>) -> Value;
}

/// How units of messages become provider messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grouping {
    /// Consecutive units of one provider role form one message (Anthropic, Gemini).
    RoleRuns,
    /// Every unit is a message or an input item of its own (OpenAI).
    PerUnit,
}

/// The error for a cached-content name a format cannot take.
pub(crate) fn cached_content_error(name: &str, format: Format) -> Error {
    Error::new(
        ErrorKind::Request,
        format!(
            "a cached content reference is a Gemini name like `cachedContents/abc123`, got `{name}` for {}",
            format.as_str()
        ),
    )
}

/// A contiguous piece of the system text, closed by a stability boundary (or the end).
#[derive(Debug, Clone)]
pub(crate) struct Chunk<'a> {
    pub text: &'a str,
    pub label: String,
    pub boundary: Option<Boundary>,
}

/// What every format reads to lay out a request.
pub(crate) struct Inputs<'a> {
    pub chunks: Vec<Chunk<'a>>,
    pub tools: Vec<Arc<ToolUnit>>,
    pub messages: Vec<&'a Message>,
    pub conversation: &'a Conversation,
    /// The index in `messages` of the last message the previous request sent, if any.
    pub history_end: Option<usize>,
    /// Whether the model family takes explicit breakpoints.
    pub explicit: bool,
    /// Gemini: the system text and tools are in an explicit cached content.
    pub cached_content: bool,
}

/// One unit as a format lays it out, before planning.
#[derive(Debug, Clone)]
pub(crate) struct Piece<'a> {
    pub value: Value,
    pub region: Region,
    /// The provider message it belongs to (for grouping), in the provider's message list.
    pub group: usize,
    /// The provider's role of that message.
    pub role: &'static str,
    pub label: String,
    /// The text whose tokens the unit costs; `None`: its canonical JSON (tool definitions).
    pub count: Option<Cow<'a, str>>,
    pub boundary: Option<Boundary>,
    pub markable: bool,
    /// A memoised tool definition: `value` is then unused until the unit is marked.
    pub shared: Option<Arc<ToolUnit>>,
}

impl<'a> Piece<'a> {
    /// One unit per tool definition, in canonical order; the last one closes the tools region.
    pub(crate) fn tools<'i>(
        inputs: &'i Inputs<'a>,
        markable: bool,
    ) -> impl Iterator<Item = Piece<'a>> + 'i {
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

    /// A unit of the system text: `value` is the chunk as the format writes it.
    pub(crate) fn system(chunk: &Chunk<'a>, value: Value, markable: bool) -> Piece<'a> {
        Piece {
            value,
            region: Region::System,
            group: 0,
            role: "",
            label: chunk.label.clone(),
            count: Some(Cow::Borrowed(chunk.text)),
            boundary: chunk.boundary,
            markable,
            shared: None,
        }
    }
}

/// One unit of a message as a format writes it.
pub(crate) struct Part<'a> {
    pub value: Value,
    /// The provider role of the message the unit belongs to (units of one role run are merged
    /// into one message by [`Grouping::RoleRuns`]).
    pub role: &'static str,
    pub label: Label<'a>,
    /// The text whose tokens the unit costs.
    pub count: Cow<'a, str>,
    pub markable: bool,
}

/// What a message unit's label says after `message N: `.
pub(crate) enum Label<'a> {
    /// A role or item type (`user`, `function_call`).
    Role(&'static str),
    /// A tool call, by tool name.
    Call(&'a str),
    /// A tool result, by call id.
    Result(&'a str),
}

impl Label<'_> {
    fn write(&self, index: usize) -> String {
        match self {
            Label::Role(role) => format!("message {index}: {role}"),
            Label::Call(name) => format!("message {index}: call {name}"),
            Label::Result(id) => format!("message {index}: result {id}"),
        }
    }
}

/// What a format may ask about the conversation while writing one message.
pub(crate) struct MessageCx<'a> {
    conversation: &'a Conversation,
    /// Tool names by call id, built the first time a format asks (Gemini results name the tool).
    names: OnceCell<HashMap<&'a str, &'a str>>,
    pub explicit: bool,
}

impl<'a> MessageCx<'a> {
    /// The name of the tool a call id belongs to (the first call with that id).
    pub(crate) fn tool_name(&self, call_id: &str) -> Option<&'a str> {
        let names = self.names.get_or_init(|| {
            let mut names = HashMap::new();
            for message in &self.conversation.messages {
                if let Message::Assistant { tool_calls, .. } = message {
                    for call in tool_calls {
                        names.entry(call.id.as_str()).or_insert(call.name.as_str());
                    }
                }
            }
            names
        });
        names.get(call_id).copied()
    }
}

/// The contents of a message in order, for the formats that write one unit per content.
#[derive(Clone, Copy)]
pub(crate) enum Content<'a> {
    /// The user's text.
    User(&'a str),
    /// The model's text (never empty).
    Assistant(&'a str),
    /// A tool call.
    Call(&'a ToolCall),
    /// A tool result.
    Result {
        call_id: &'a str,
        content: &'a str,
        is_error: bool,
    },
}

impl<'a> Content<'a> {
    /// The text whose tokens the content costs: the text, the call's arguments as canonical
    /// JSON, or the result.
    pub(crate) fn count(self) -> Cow<'a, str> {
        match self {
            Content::User(text) | Content::Assistant(text) => Cow::Borrowed(text),
            Content::Call(call) => Cow::Owned(canonical::to_string(&call.arguments)),
            Content::Result { content, .. } => Cow::Borrowed(content),
        }
    }

    /// The label of a format that names a message's text by its provider role, a call by its
    /// tool and a result by its call id.
    pub(crate) fn label(self, role: &'static str) -> Label<'a> {
        match self {
            Content::User(_) | Content::Assistant(_) => Label::Role(role),
            Content::Call(call) => Label::Call(&call.name),
            Content::Result { call_id, .. } => Label::Result(call_id),
        }
    }

    /// Calls `each` for every content of a message: its text (an assistant's only when not
    /// empty), then its tool calls, or its tool result.
    pub(crate) fn each(message: &'a Message, mut each: impl FnMut(Content<'a>)) {
        match message {
            Message::User { text } => each(Content::User(text)),
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    each(Content::Assistant(text));
                }
                for call in tool_calls {
                    each(Content::Call(call));
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
            } => each(Content::Result {
                call_id,
                content,
                is_error: *is_error,
            }),
        }
    }
}

/// Numbers the runs of consecutive messages that share a provider role.
#[derive(Default)]
struct RoleRuns {
    group: usize,
    role: &'static str,
}

impl RoleRuns {
    /// The group of the next unit, which has this role.
    fn next(&mut self, role: &'static str) -> usize {
        if !self.role.is_empty() && role != self.role {
            self.group += 1;
        }
        self.role = role;
        self.group
    }
}

/// Lays out every message after the head: the loop all formats share.
pub(crate) fn messages<'a>(wire: &dyn Wire, inputs: &Inputs<'a>, pieces: &mut Vec<Piece<'a>>) {
    let cx = MessageCx {
        conversation: inputs.conversation,
        names: OnceCell::new(),
        explicit: inputs.explicit,
    };
    let grouping = wire.grouping();
    let mut runs = RoleRuns::default();
    let mut item = 0usize;
    let mut parts = Vec::new();
    for (index, message) in inputs.messages.iter().enumerate() {
        wire.message(message, &cx, &mut parts);
        let start = pieces.len();
        for part in parts.drain(..) {
            let group = match grouping {
                Grouping::RoleRuns => runs.next(part.role),
                Grouping::PerUnit => {
                    item += 1;
                    item - 1
                }
            };
            pieces.push(Piece {
                value: part.value,
                region: Region::Messages,
                group,
                role: part.role,
                label: part.label.write(index),
                count: Some(part.count),
                boundary: None,
                markable: part.markable,
                shared: None,
            });
        }
        if inputs.history_end == Some(index)
            && let Some(last) = pieces[start..].last_mut()
        {
            last.boundary = Some(Boundary::History);
        }
    }
}

/// Where a unit is, as the builder counts while laying units out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    pub region: Region,
    /// Its index among the units of its region.
    pub nth: usize,
    /// The provider message it belongs to.
    pub group: usize,
    /// Its index among the units of that message.
    pub part: usize,
    /// Whether a system unit comes before it (OpenAI: the system message is then the first).
    pub after_system: bool,
    /// Whether the model family takes explicit breakpoints.
    pub explicit: bool,
}

/// What a body needs besides its units.
pub(crate) struct BodyConfig<'a> {
    pub model: &'a str,
    pub options: &'a RequestOptions,
    /// Whether the model family takes explicit breakpoints.
    pub explicit: bool,
    /// Whether any breakpoint was placed.
    pub marked: bool,
    /// Automatic retention asked for (OpenAI), if any.
    pub retention: Option<&'a str>,
    /// The agent's name and the assembly's fingerprint (the default OpenAI cache key).
    pub agent: &'a str,
    pub fingerprint: Fingerprint,
}

/// A `{"type": kind, "text": text}` content part (Anthropic blocks, OpenAI parts).
pub(crate) fn text_part(kind: &str, text: &str) -> Value {
    object([
        ("type", Value::String(kind.to_owned())),
        ("text", Value::String(text.to_owned())),
    ])
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

/// The message units as placeholders, grouped into provider messages
/// `{"role": …, list: [units]}` (Anthropic `content`, Gemini `parts`).
pub(crate) fn grouped(pieces: &[Piece<'_>], list: &str) -> Vec<Value> {
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut current = usize::MAX;
    for (i, piece) in pieces.iter().enumerate() {
        if piece.region != Region::Messages {
            continue;
        }
        let unit = canonical::placeholder(i);
        match messages.last_mut() {
            Some((_, units)) if piece.group == current => units.push(unit),
            _ => {
                current = piece.group;
                messages.push((piece.role, vec![unit]));
            }
        }
    }
    messages
        .into_iter()
        .map(|(role, units)| {
            object([
                ("role", Value::String(role.to_owned())),
                (list, Value::Array(units)),
            ])
        })
        .collect()
}
