//! OpenAI Chat Completions and Responses. Prefix caching is automatic; from the model families the
//! rules mark as explicit, text content parts also carry `prompt_cache_breakpoint`s. The request
//! names a `prompt_cache_key`, and asks for `prompt_cache_retention` only when it places no
//! explicit breakpoint (a lifetime is then never given twice).
//!
//! The two APIs are one [`Wire`] implementation, [`Api`]: they share the head (tools, then the
//! system text), breakpoints, pointers and the body, and differ in the names of a few fields, in
//! the tool definition and in how a message becomes units: Chat Completions sends one unit per
//! message, Responses one input item per text, call and result.

use std::borrow::Cow;

use serde_json::Value;

use super::Format;
use super::canonical;
use super::conversation::Message;
use super::plan::Region;
use super::wire::{
    BodyConfig, Content, Grouping, Inputs, Label, MessageCx, Part, Piece, Place, Wire, object,
    text_part,
};
use crate::toolset::Tool;

/// One of the two OpenAI APIs: the names in which they differ, and how each writes a tool and
/// a message.
pub(crate) struct Api {
    format: Format,
    /// The message list (`messages`, `input`).
    list: &'static str,
    /// The output limit (`max_completion_tokens`, `max_output_tokens`).
    limit: &'static str,
    /// The type of a text content part (`text`, `input_text`).
    text: &'static str,
    /// The `type` of the system message, when items are typed (Responses: `message`).
    item_type: Option<&'static str>,
    tool: fn(&Tool) -> Value,
    message: for<'a> fn(&'a Message, bool, &mut Vec<Part<'a>>),
}

/// OpenAI Chat Completions.
pub(crate) static CHAT: Api = Api {
    format: Format::OpenaiChat,
    list: "messages",
    limit: "max_completion_tokens",
    text: "text",
    item_type: None,
    tool: chat_tool,
    message: chat_message,
};

/// OpenAI Responses.
pub(crate) static RESPONSES: Api = Api {
    format: Format::OpenaiResponses,
    list: "input",
    limit: "max_output_tokens",
    text: "input_text",
    item_type: Some("message"),
    tool: responses_tool,
    message: responses_message,
};

fn chat_tool(tool: &Tool) -> Value {
    object([
        ("type", Value::String("function".into())),
        (
            "function",
            object([
                ("name", Value::String(tool.name.clone())),
                ("description", Value::String(tool.description.clone())),
                ("parameters", (*tool.parameters).clone()),
            ]),
        ),
    ])
}

fn responses_tool(tool: &Tool) -> Value {
    object([
        ("type", Value::String("function".into())),
        ("name", Value::String(tool.name.clone())),
        ("description", Value::String(tool.description.clone())),
        ("parameters", (*tool.parameters).clone()),
        ("strict", Value::Bool(false)),
    ])
}

/// A message unit labelled by its role, markable only when the model family takes explicit
/// breakpoints.
fn part<'a>(value: Value, role: &'static str, count: Cow<'a, str>, markable: bool) -> Part<'a> {
    Part {
        value,
        role,
        label: Label::Role(role),
        count,
        markable,
    }
}

/// Chat Completions: one unit per message; an assistant message holds its text and its tool
/// calls (arguments as a JSON string), and takes a breakpoint only with text.
fn chat_message<'a>(message: &'a Message, explicit: bool, out: &mut Vec<Part<'a>>) {
    out.push(match message {
        Message::User { text } => part(
            object([
                ("role", Value::String("user".into())),
                ("content", Value::Array(vec![text_part("text", text)])),
            ]),
            "user",
            Cow::Borrowed(text),
            explicit,
        ),
        Message::Assistant { text, tool_calls } => {
            let mut value = object([("role", Value::String("assistant".into()))]);
            if !text.is_empty() {
                value["content"] = Value::Array(vec![text_part("text", text)]);
            }
            let mut count = Cow::Borrowed(text.as_str());
            if !tool_calls.is_empty() {
                let calls = tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = canonical::to_string(&c.arguments);
                        count.to_mut().push_str(&arguments);
                        object([
                            ("id", Value::String(c.id.clone())),
                            ("type", Value::String("function".into())),
                            (
                                "function",
                                object([
                                    ("name", Value::String(c.name.clone())),
                                    ("arguments", Value::String(arguments)),
                                ]),
                            ),
                        ])
                    })
                    .collect();
                value["tool_calls"] = Value::Array(calls);
            }
            part(value, "assistant", count, explicit && !text.is_empty())
        }
        Message::Tool {
            call_id, content, ..
        } => part(
            object([
                ("role", Value::String("tool".into())),
                ("tool_call_id", Value::String(call_id.clone())),
                ("content", Value::Array(vec![text_part("text", content)])),
            ]),
            "tool",
            Cow::Borrowed(content),
            explicit,
        ),
    });
}

/// Responses: one input item per text, function call and function call output; the
/// assistant's text and its calls take no breakpoint.
fn responses_message<'a>(message: &'a Message, explicit: bool, out: &mut Vec<Part<'a>>) {
    Content::each(message, |content| {
        out.push(match content {
            Content::User(text) => part(
                object([
                    ("type", Value::String("message".into())),
                    ("role", Value::String("user".into())),
                    ("content", Value::Array(vec![text_part("input_text", text)])),
                ]),
                "user",
                Cow::Borrowed(text),
                explicit,
            ),
            Content::Assistant(text) => part(
                object([
                    ("type", Value::String("message".into())),
                    ("role", Value::String("assistant".into())),
                    ("content", Value::String(text.to_owned())),
                ]),
                "assistant",
                Cow::Borrowed(text),
                false,
            ),
            Content::Call(call) => {
                let arguments = canonical::to_string(&call.arguments);
                part(
                    object([
                        ("type", Value::String("function_call".into())),
                        ("call_id", Value::String(call.id.clone())),
                        ("name", Value::String(call.name.clone())),
                        ("arguments", Value::String(arguments.clone())),
                    ]),
                    "function_call",
                    Cow::Owned(arguments),
                    false,
                )
            }
            Content::Result {
                call_id, content, ..
            } => part(
                object([
                    ("type", Value::String("function_call_output".into())),
                    ("call_id", Value::String(call_id.to_owned())),
                    (
                        "output",
                        Value::Array(vec![text_part("input_text", content)]),
                    ),
                ]),
                "function_call_output",
                Cow::Borrowed(content),
                explicit,
            ),
        });
    });
}

impl Wire for Api {
    fn format(&self) -> Format {
        self.format
    }

    fn tool(&self, tool: &Tool) -> Value {
        (self.tool)(tool)
    }

    /// Tools (never markable), then the system text as text parts (markable when the model
    /// family takes explicit breakpoints).
    fn head<'a>(&self, inputs: &Inputs<'a>, pieces: &mut Vec<Piece<'a>>) {
        pieces.extend(Piece::tools(inputs, false));
        for chunk in &inputs.chunks {
            pieces.push(Piece::system(
                chunk,
                text_part(self.text, chunk.text),
                inputs.explicit,
            ));
        }
    }

    fn grouping(&self) -> Grouping {
        Grouping::PerUnit
    }

    fn message<'a>(&self, message: &'a Message, cx: &MessageCx<'a>, out: &mut Vec<Part<'a>>) {
        (self.message)(message, cx.explicit, out);
    }

    /// Puts an explicit breakpoint on the last text part of a unit (a message with text parts,
    /// a tool output list, or a text part itself).
    fn mark(&self, value: &mut Value, ttl: &str) {
        let breakpoint = object([
            ("mode", Value::String("explicit".into())),
            ("ttl", Value::String(ttl.to_owned())),
        ]);
        let list = ["content", "output"]
            .into_iter()
            .find(|k| value.get(k).is_some_and(Value::is_array));
        match list {
            Some(key) => {
                if let Some(last) = value[key].as_array_mut().and_then(|l| l.last_mut()) {
                    last["prompt_cache_breakpoint"] = breakpoint;
                }
            }
            None => value["prompt_cache_breakpoint"] = breakpoint,
        }
    }

    /// The system message is the first of the list; it has parts only with explicit
    /// breakpoints.
    fn pointer(&self, place: &Place) -> String {
        let list = self.list;
        match place.region {
            Region::Tools => format!("/tools/{}", place.nth),
            Region::System if place.explicit => format!("/{list}/0/content/{}", place.nth),
            Region::System => format!("/{list}/0/content"),
            Region::Messages => {
                format!("/{list}/{}", place.group + usize::from(place.after_system))
            }
        }
    }

    /// The body: the two APIs differ only in the names of the message list and the output
    /// limit, and in the system message's item type.
    fn skeleton(&self, pieces: &[Piece<'_>], body: &BodyConfig<'_>) -> Value {
        let (tools, system, mut messages) = split(pieces, body.explicit);
        if !is_empty(&system) {
            messages.insert(0, system_message(system, self.item_type));
        }
        let mut skeleton = object([
            ("model", Value::String(body.model.to_owned())),
            (self.limit, Value::from(body.options.max_tokens)),
            (self.list, Value::Array(messages)),
        ]);
        if !tools.is_empty() {
            skeleton["tools"] = Value::Array(tools);
        }
        skeleton["prompt_cache_key"] = Value::String(cache_key(body));
        if body.marked {
            skeleton["prompt_cache_options"] = object([("mode", Value::String("explicit".into()))]);
        } else if let Some(retention) = body.retention {
            skeleton["prompt_cache_retention"] = Value::String(retention.to_owned());
        }
        skeleton
    }
}

/// The `prompt_cache_key`: the caller's, or the agent's name and the fingerprint's start (stable
/// for a thread, and no secret).
fn cache_key(body: &BodyConfig<'_>) -> String {
    if let Some(key) = &body.options.cache_key {
        return key.clone();
    }
    let name: String = body
        .agent
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
    format!("{name}-{}", &body.fingerprint.to_string()[..16])
}

/// Tools, system parts and messages as placeholders; the system parts' texts when they are sent
/// as one string instead.
fn split(pieces: &[Piece<'_>], as_parts: bool) -> (Vec<Value>, Value, Vec<Value>) {
    let mut tools = Vec::new();
    let mut system = Vec::new();
    let mut text = String::new();
    let mut rest = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        match piece.region {
            Region::Tools => tools.push(canonical::placeholder(i)),
            Region::System if as_parts => system.push(canonical::placeholder(i)),
            Region::System => text.push_str(
                piece
                    .value
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Region::Messages => rest.push(canonical::placeholder(i)),
        }
    }
    let system = if as_parts {
        Value::Array(system)
    } else {
        Value::String(text)
    };
    (tools, system, rest)
}

fn is_empty(system: &Value) -> bool {
    match system {
        Value::Array(parts) => parts.is_empty(),
        Value::String(text) => text.is_empty(),
        _ => true,
    }
}

/// The system message: text parts when the model family takes explicit breakpoints (so a part
/// can carry one), else one string: the parts joined, which is the composed system text.
fn system_message(content: Value, item_type: Option<&str>) -> Value {
    let mut message = object([
        ("role", Value::String("system".into())),
        ("content", content),
    ]);
    if let Some(kind) = item_type {
        message["type"] = Value::String(kind.to_owned());
    }
    message
}
