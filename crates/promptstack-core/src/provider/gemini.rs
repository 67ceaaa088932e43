//! Gemini `generateContent` (the REST body): `systemInstruction`, `tools` with function
//! declarations (JSON Schema parameters), and `contents`. Gemini caches prefixes implicitly; with
//! an explicit cached content, the request names it and omits the system text and the tools,
//! which the cached content holds.

use serde_json::Value;

use super::canonical;
use super::conversation::Message;
use super::plan::Region;
use super::wire::{
    BodyConfig, Content, Grouping, Inputs, MessageCx, Part, Piece, Place, Wire,
    cached_content_error, grouped, object,
};
use super::{Format, RequestOptions};
use crate::error::Error;
use crate::toolset::Tool;

/// The Gemini `generateContent` format.
pub(crate) struct Gemini;

/// The prefix of every cached-content name.
const CACHED_CONTENTS: &str = "cachedContents/";

impl Wire for Gemini {
    fn format(&self) -> Format {
        Format::Gemini
    }

    fn tool(&self, tool: &Tool) -> Value {
        object([
            ("name", Value::String(tool.name.clone())),
            ("description", Value::String(tool.description.clone())),
            ("parametersJsonSchema", (*tool.parameters).clone()),
        ])
    }

    /// A cached content is named `cachedContents/…`.
    fn check(&self, options: &RequestOptions) -> Result<(), Error> {
        match &options.cached_content {
            Some(name)
                if !name.starts_with(CACHED_CONTENTS) || name.len() <= CACHED_CONTENTS.len() =>
            {
                Err(cached_content_error(name, self.format()))
            }
            _ => Ok(()),
        }
    }

    /// The system text, then the tools (none of them takes a breakpoint); neither with an
    /// explicit cached content, which holds both.
    fn head<'a>(&self, inputs: &Inputs<'a>, pieces: &mut Vec<Piece<'a>>) {
        if inputs.cached_content {
            return;
        }
        for chunk in &inputs.chunks {
            pieces.push(Piece::system(
                chunk,
                Value::String(chunk.text.to_owned()),
                false,
            ));
        }
        pieces.extend(Piece::tools(inputs, false));
    }

    fn grouping(&self) -> Grouping {
        Grouping::RoleRuns
    }

    /// One part per text, function call and function response; responses are user content and
    /// carry `{"output": …}` or `{"error": …}`.
    fn message<'a>(&self, message: &'a Message, cx: &MessageCx<'a>, out: &mut Vec<Part<'a>>) {
        let role = match message {
            Message::User { .. } | Message::Tool { .. } => "user",
            Message::Assistant { .. } => "model",
        };
        Content::each(message, |content| {
            let value = match content {
                Content::User(text) | Content::Assistant(text) => {
                    object([("text", Value::String(text.to_owned()))])
                }
                Content::Call(call) => object([(
                    "functionCall",
                    object([
                        ("id", Value::String(call.id.clone())),
                        ("name", Value::String(call.name.clone())),
                        ("args", call.arguments.clone()),
                    ]),
                )]),
                Content::Result {
                    call_id,
                    content,
                    is_error,
                } => {
                    let name = cx.tool_name(call_id).unwrap_or_default();
                    let key = if is_error { "error" } else { "output" };
                    object([(
                        "functionResponse",
                        object([
                            ("id", Value::String(call_id.to_owned())),
                            ("name", Value::String(name.to_owned())),
                            (
                                "response",
                                object([(key, Value::String(content.to_owned()))]),
                            ),
                        ]),
                    )])
                }
            };
            out.push(Part {
                value,
                role,
                label: content.label(role),
                count: content.count(),
                markable: false,
            });
        });
    }

    /// Gemini takes no breakpoints.
    fn mark(&self, _: &mut Value, _: &str) {}

    fn pointer(&self, place: &Place) -> String {
        match place.region {
            Region::Tools => format!("/tools/0/functionDeclarations/{}", place.nth),
            Region::System => "/systemInstruction/parts/0".into(),
            Region::Messages => format!("/contents/{}/parts/{}", place.group, place.part),
        }
    }

    /// The system text is one part (the chunks joined: the composed text); tools and contents
    /// are placeholders.
    fn skeleton(&self, pieces: &[Piece<'_>], body: &BodyConfig<'_>) -> Value {
        let mut system = String::new();
        let mut declarations = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            match piece.region {
                Region::System => {
                    if let Value::String(text) = &piece.value {
                        system.push_str(text);
                    }
                }
                Region::Tools => declarations.push(canonical::placeholder(i)),
                Region::Messages => {}
            }
        }
        let contents = grouped(pieces, "parts");
        let mut skeleton = object([
            ("contents", Value::Array(contents)),
            (
                "generationConfig",
                object([("maxOutputTokens", Value::from(body.options.max_tokens))]),
            ),
        ]);
        if !system.is_empty() {
            skeleton["systemInstruction"] = object([(
                "parts",
                Value::Array(vec![object([("text", Value::String(system))])]),
            )]);
        }
        if !declarations.is_empty() {
            skeleton["tools"] = Value::Array(vec![object([(
                "functionDeclarations",
                Value::Array(declarations),
            )])]);
        }
        if let Some(name) = &body.options.cached_content {
            skeleton["cachedContent"] = Value::String(name.clone());
        }
        skeleton
    }
}
