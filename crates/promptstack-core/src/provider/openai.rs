//! OpenAI Chat Completions and Responses. Prefix caching is automatic; from the model families the
//! rules mark as explicit, text content parts also carry `prompt_cache_breakpoint`s. The request
//! names a `prompt_cache_key`, and asks for `prompt_cache_retention` only when it places no
//! explicit breakpoint (a lifetime is then never given twice).

use serde_json::Value;

use super::conversation::Message;
use super::plan::{Boundary, Region};
use super::{Format, Inputs, Piece, RequestOptions, canonical, object, text_part};

/// Tools (never markable), then the system text as text parts (markable when the model family
/// takes explicit breakpoints), in both OpenAI formats.
fn head(inputs: &Inputs<'_>, part: &str) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = Piece::tools(inputs, false).collect();
    for chunk in &inputs.chunks {
        pieces.push(Piece::system(
            chunk,
            text_part(part, chunk.text),
            "system",
            inputs.explicit,
        ));
    }
    pieces
}

/// Chat Completions units: tools, system parts, then one unit per message.
pub(crate) fn chat_pieces(inputs: &Inputs<'_>) -> Vec<Piece> {
    let mut pieces = head(inputs, "text");
    for (index, message) in inputs.messages.iter().enumerate() {
        let (value, role, count, markable) = match message {
            Message::User { text } => (
                object([
                    ("role", Value::String("user".into())),
                    ("content", Value::Array(vec![text_part("text", text)])),
                ]),
                "user",
                text.clone(),
                true,
            ),
            Message::Assistant { text, tool_calls } => {
                let mut value = object([("role", Value::String("assistant".into()))]);
                if !text.is_empty() {
                    value["content"] = Value::Array(vec![text_part("text", text)]);
                }
                let mut count = text.clone();
                if !tool_calls.is_empty() {
                    let calls = tool_calls
                        .iter()
                        .map(|c| {
                            let arguments = canonical::to_string(&c.arguments);
                            count.push_str(&arguments);
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
                (value, "assistant", count, !text.is_empty())
            }
            Message::Tool {
                call_id, content, ..
            } => (
                object([
                    ("role", Value::String("tool".into())),
                    ("tool_call_id", Value::String(call_id.clone())),
                    ("content", Value::Array(vec![text_part("text", content)])),
                ]),
                "tool",
                content.clone(),
                true,
            ),
        };
        let mut piece = Piece::message(
            value,
            index,
            role,
            format!("message {index}: {role}"),
            count,
            markable && inputs.explicit,
        );
        piece.boundary = (inputs.history_end == Some(index)).then_some(Boundary::History);
        pieces.push(piece);
    }
    pieces
}

/// Responses units: tools, system parts, then one unit per input item (a tool call is an item).
pub(crate) fn responses_pieces(inputs: &Inputs<'_>) -> Vec<Piece> {
    let mut pieces = head(inputs, "input_text");
    let mut item = 0usize;
    for (index, message) in inputs.messages.iter().enumerate() {
        let start = pieces.len();
        let mut push = |value: Value, role: &'static str, count: String, markable: bool| {
            pieces.push(Piece::message(
                value,
                item,
                role,
                format!("message {index}: {role}"),
                count,
                markable && inputs.explicit,
            ));
            item += 1;
        };
        match message {
            Message::User { text } => push(
                object([
                    ("type", Value::String("message".into())),
                    ("role", Value::String("user".into())),
                    ("content", Value::Array(vec![text_part("input_text", text)])),
                ]),
                "user",
                text.clone(),
                true,
            ),
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    push(
                        object([
                            ("type", Value::String("message".into())),
                            ("role", Value::String("assistant".into())),
                            ("content", Value::String(text.clone())),
                        ]),
                        "assistant",
                        text.clone(),
                        false,
                    );
                }
                for call in tool_calls {
                    let arguments = canonical::to_string(&call.arguments);
                    push(
                        object([
                            ("type", Value::String("function_call".into())),
                            ("call_id", Value::String(call.id.clone())),
                            ("name", Value::String(call.name.clone())),
                            ("arguments", Value::String(arguments.clone())),
                        ]),
                        "function_call",
                        arguments,
                        false,
                    );
                }
            }
            Message::Tool {
                call_id, content, ..
            } => push(
                object([
                    ("type", Value::String("function_call_output".into())),
                    ("call_id", Value::String(call_id.clone())),
                    (
                        "output",
                        Value::Array(vec![text_part("input_text", content)]),
                    ),
                ]),
                "function_call_output",
                content.clone(),
                true,
            ),
        }
        if inputs.history_end == Some(index)
            && let Some(last) = pieces[start..].last_mut()
        {
            last.boundary = Some(Boundary::History);
        }
    }
    pieces
}

/// Puts an explicit breakpoint on the last text part of a unit (a message with text parts, a
/// tool output list, or a text part itself).
pub(crate) fn mark(value: &mut Value, ttl: &str) {
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

/// The fields both OpenAI formats share: the cache key and the cache lifetime.
fn caching(body: &mut Value, key: &str, explicit: bool, retention: Option<&str>) {
    body["prompt_cache_key"] = Value::String(key.to_owned());
    if explicit {
        body["prompt_cache_options"] = object([("mode", Value::String("explicit".into()))]);
    } else if let Some(retention) = retention {
        body["prompt_cache_retention"] = Value::String(retention.to_owned());
    }
}

/// The Chat Completions or Responses body: the two differ only in the names of the message list
/// and the output limit, and in the system message's item type (`options.format` tells which).
pub(crate) fn assemble(
    pieces: &[Piece],
    model: &str,
    options: &RequestOptions,
    key: &str,
    explicit: bool,
    parts: bool,
    retention: Option<&str>,
) -> Value {
    let (list, limit, item_type) = if options.format == Format::OpenaiResponses {
        ("input", "max_output_tokens", Some("message"))
    } else {
        ("messages", "max_completion_tokens", None)
    };
    let (tools, system, mut messages) = split(pieces, parts);
    if !is_empty(&system) {
        messages.insert(0, system_message(system, item_type));
    }
    let mut body = object([
        ("model", Value::String(model.to_owned())),
        (limit, Value::from(options.max_tokens)),
        (list, Value::Array(messages)),
    ]);
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    caching(&mut body, key, explicit, retention);
    body
}

/// Tools, system parts and messages as placeholders; the system parts' texts when they are sent
/// as one string instead.
fn split(pieces: &[Piece], as_parts: bool) -> (Vec<Value>, Value, Vec<Value>) {
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
