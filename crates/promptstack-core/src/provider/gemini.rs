//! Gemini `generateContent` (the REST body): `systemInstruction`, `tools` with function
//! declarations (JSON Schema parameters), and `contents`. Gemini caches prefixes implicitly; with
//! an explicit cached content, the request names it and omits the system text and the tools,
//! which the cached content holds.

use serde_json::Value;

use super::conversation::Message;
use super::plan::{Boundary, Region};
use super::{Inputs, Piece, RequestOptions, RoleRuns, canonical, object};

/// The units in Gemini's prefix order: system text, tools, contents.
pub(crate) fn pieces(inputs: &Inputs<'_>, cached_content: bool) -> Vec<Piece> {
    let mut pieces = Vec::new();
    if !cached_content {
        for chunk in &inputs.chunks {
            pieces.push(Piece::system(
                chunk,
                Value::String(chunk.text.to_owned()),
                "",
                false,
            ));
        }
        pieces.extend(Piece::tools(inputs, false));
    }
    let mut runs = RoleRuns::default();
    for (index, message) in inputs.messages.iter().enumerate() {
        let message_role = match message {
            Message::User { .. } | Message::Tool { .. } => "user",
            Message::Assistant { .. } => "model",
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
                false,
            ));
        };
        match message {
            Message::User { text } => push(
                object([("text", Value::String(text.clone()))]),
                format!("message {index}: user"),
                text.clone(),
            ),
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    push(
                        object([("text", Value::String(text.clone()))]),
                        format!("message {index}: model"),
                        text.clone(),
                    );
                }
                for call in tool_calls {
                    push(
                        object([(
                            "functionCall",
                            object([
                                ("id", Value::String(call.id.clone())),
                                ("name", Value::String(call.name.clone())),
                                ("args", call.arguments.clone()),
                            ]),
                        )]),
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
                let name = inputs.conversation.tool_name(call_id).unwrap_or_default();
                let key = if *is_error { "error" } else { "output" };
                push(
                    object([(
                        "functionResponse",
                        object([
                            ("id", Value::String(call_id.clone())),
                            ("name", Value::String(name.to_owned())),
                            ("response", object([(key, Value::String(content.clone()))])),
                        ]),
                    )]),
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

/// The request skeleton: tools and contents are placeholders for their canonical text.
pub(crate) fn assemble(pieces: &[Piece], options: &RequestOptions) -> Value {
    let mut system = String::new();
    let mut declarations = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    let mut current: Option<(usize, &'static str, Vec<Value>)> = None;
    for (i, piece) in pieces.iter().enumerate() {
        match piece.region {
            Region::System => {
                if let Value::String(text) = &piece.value {
                    system.push_str(text);
                }
            }
            Region::Tools => declarations.push(canonical::placeholder(i)),
            Region::Messages => {
                let unit = canonical::placeholder(i);
                match &mut current {
                    Some((group, _, parts)) if *group == piece.group => parts.push(unit),
                    _ => {
                        if let Some((_, role, parts)) = current.take() {
                            contents.push(content(role, parts));
                        }
                        current = Some((piece.group, piece.role, vec![unit]));
                    }
                }
            }
        }
    }
    if let Some((_, role, parts)) = current {
        contents.push(content(role, parts));
    }
    let mut body = object([
        ("contents", Value::Array(contents)),
        (
            "generationConfig",
            object([("maxOutputTokens", Value::from(options.max_tokens))]),
        ),
    ]);
    if !system.is_empty() {
        body["systemInstruction"] = object([(
            "parts",
            Value::Array(vec![object([("text", Value::String(system))])]),
        )]);
    }
    if !declarations.is_empty() {
        body["tools"] = Value::Array(vec![object([(
            "functionDeclarations",
            Value::Array(declarations),
        )])]);
    }
    if let Some(name) = &options.cached_content {
        body["cachedContent"] = Value::String(name.clone());
    }
    body
}

fn content(role: &str, parts: Vec<Value>) -> Value {
    object([
        ("role", Value::String(role.to_owned())),
        ("parts", Value::Array(parts)),
    ])
}
