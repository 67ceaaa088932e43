//! Anthropic Messages: system text blocks, tools and message content blocks, each of which can
//! carry a `cache_control` breakpoint.

use serde_json::Value;

use super::Format;
use super::canonical;
use super::conversation::Message;
use super::plan::Region;
use super::wire::{
    BodyConfig, Content, Grouping, Inputs, MessageCx, Part, Piece, Place, Wire, grouped, object,
    text_part,
};
use crate::toolset::Tool;

/// The Anthropic Messages format.
pub(crate) struct Anthropic;

impl Wire for Anthropic {
    fn format(&self) -> Format {
        Format::Anthropic
    }

    fn tool(&self, tool: &Tool) -> Value {
        object([
            ("name", Value::String(tool.name.clone())),
            ("description", Value::String(tool.description.clone())),
            ("input_schema", (*tool.parameters).clone()),
        ])
    }

    /// Tools, then system text blocks; all take breakpoints.
    fn head<'a>(&self, inputs: &Inputs<'a>, pieces: &mut Vec<Piece<'a>>) {
        pieces.extend(Piece::tools(inputs, true));
        for chunk in &inputs.chunks {
            pieces.push(Piece::system(chunk, text_part("text", chunk.text), true));
        }
    }

    fn grouping(&self) -> Grouping {
        Grouping::RoleRuns
    }

    /// One content block per text, tool call and tool result; tool results are user content.
    fn message<'a>(&self, message: &'a Message, _: &MessageCx<'a>, out: &mut Vec<Part<'a>>) {
        let role = match message {
            Message::User { .. } | Message::Tool { .. } => "user",
            Message::Assistant { .. } => "assistant",
        };
        Content::each(message, |content| {
            let value = match content {
                Content::User(text) | Content::Assistant(text) => text_part("text", text),
                Content::Call(call) => object([
                    ("type", Value::String("tool_use".into())),
                    ("id", Value::String(call.id.clone())),
                    ("name", Value::String(call.name.clone())),
                    ("input", call.arguments.clone()),
                ]),
                Content::Result {
                    call_id,
                    content,
                    is_error,
                } => {
                    let mut value = object([
                        ("type", Value::String("tool_result".into())),
                        ("tool_use_id", Value::String(call_id.to_owned())),
                        ("content", Value::String(content.to_owned())),
                    ]);
                    if is_error {
                        value["is_error"] = Value::Bool(true);
                    }
                    value
                }
            };
            out.push(Part {
                value,
                role,
                label: content.label(role),
                count: content.count(),
                markable: true,
            });
        });
    }

    fn mark(&self, value: &mut Value, ttl: &str) {
        value["cache_control"] = object([
            ("type", Value::String("ephemeral".into())),
            ("ttl", Value::String(ttl.to_owned())),
        ]);
    }

    fn pointer(&self, place: &Place) -> String {
        match place.region {
            Region::Tools => format!("/tools/{}", place.nth),
            Region::System => format!("/system/{}", place.nth),
            Region::Messages => format!("/messages/{}/content/{}", place.group, place.part),
        }
    }

    fn skeleton(&self, pieces: &[Piece<'_>], body: &BodyConfig<'_>) -> Value {
        let mut tools = Vec::new();
        let mut system = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            match piece.region {
                Region::Tools => tools.push(canonical::placeholder(i)),
                Region::System => system.push(canonical::placeholder(i)),
                Region::Messages => {}
            }
        }
        let messages = grouped(pieces, "content");
        let mut skeleton = object([
            ("model", Value::String(body.model.to_owned())),
            ("max_tokens", Value::from(body.options.max_tokens)),
            ("messages", Value::Array(messages)),
        ]);
        if !system.is_empty() {
            skeleton["system"] = Value::Array(system);
        }
        if !tools.is_empty() {
            skeleton["tools"] = Value::Array(tools);
        }
        skeleton
    }
}
