//! Anthropic Messages: system text blocks, tools and message content blocks, each of which can
//! carry a `cache_control` breakpoint.

use serde_json::Value;

use super::conversation::Message;
use super::plan::{Boundary, Region};
use super::{Inputs, Piece, RoleRuns, canonical, object, text_part};

/// The units of a request in Anthropic's prefix order: tools, system, messages.
pub(crate) fn pieces(inputs: &Inputs<'_>) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = Piece::tools(inputs, true).collect();
    for chunk in &inputs.chunks {
        pieces.push(Piece::system(
            chunk,
            text_part("text", chunk.text),
            "",
            true,
        ));
    }
    let mut runs = RoleRuns::default();
    for (index, message) in inputs.messages.iter().enumerate() {
        let message_role = match message {
            Message::User { .. } | Message::Tool { .. } => "user",
            Message::Assistant { .. } => "assistant",
        };
        let group = runs.next(message_role);
        let start = pieces.len();
        let mut push = |value: Value, label: String, count: String| {
            pieces.push(Piece::message(
                value,
                group,
                message_role,
                label,
                count,
                true,
            ));
        };
        match message {
            Message::User { text } => push(
                text_part("text", text),
                format!("message {index}: user"),
                text.clone(),
            ),
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    push(
                        text_part("text", text),
                        format!("message {index}: assistant"),
                        text.clone(),
                    );
                }
                for call in tool_calls {
                    push(
                        object([
                            ("type", Value::String("tool_use".into())),
                            ("id", Value::String(call.id.clone())),
                            ("name", Value::String(call.name.clone())),
                            ("input", call.arguments.clone()),
                        ]),
                        format!("message {index}: call {}", call.name),
                        canonical::to_string(&call.arguments),
                    );
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
            } => {
                let mut value = object([
                    ("type", Value::String("tool_result".into())),
                    ("tool_use_id", Value::String(call_id.clone())),
                    ("content", Value::String(content.clone())),
                ]);
                if *is_error {
                    value["is_error"] = Value::Bool(true);
                }
                push(
                    value,
                    format!("message {index}: result {call_id}"),
                    content.clone(),
                );
            }
        }
        if inputs.history_end == Some(index)
            && let Some(last) = pieces[start..].last_mut()
        {
            last.boundary = Some(Boundary::History);
        }
    }
    pieces
}

/// Puts a breakpoint on a content block.
pub(crate) fn mark(value: &mut Value, ttl: &str) {
    value["cache_control"] = object([
        ("type", Value::String("ephemeral".into())),
        ("ttl", Value::String(ttl.to_owned())),
    ]);
}

/// The request skeleton: every unit is a placeholder for its canonical text.
pub(crate) fn assemble(pieces: &[Piece], model: &str, max_tokens: u32) -> Value {
    let mut tools = Vec::new();
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    let mut current: Option<(usize, &'static str, Vec<Value>)> = None;
    for (i, piece) in pieces.iter().enumerate() {
        let unit = canonical::placeholder(i);
        match piece.region {
            Region::Tools => tools.push(unit),
            Region::System => system.push(unit),
            Region::Messages => match &mut current {
                Some((group, _, content)) if *group == piece.group => content.push(unit),
                _ => {
                    if let Some((_, role, content)) = current.take() {
                        messages.push(message(role, content));
                    }
                    current = Some((piece.group, piece.role, vec![unit]));
                }
            },
        }
    }
    if let Some((_, role, content)) = current {
        messages.push(message(role, content));
    }
    let mut body = object([
        ("model", Value::String(model.to_owned())),
        ("max_tokens", Value::from(max_tokens)),
        ("messages", Value::Array(messages)),
    ]);
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

fn message(role: &str, content: Vec<Value>) -> Value {
    object([
        ("role", Value::String(role.to_owned())),
        ("content", Value::Array(content)),
    ])
}
