//! The conversation so far: the messages of earlier requests, with tool calls and results.
//!
//! Messages are stored as they were sent (a user message includes the per-send notes that were
//! placed in it then), so that replaying them gives the provider the same bytes and its cache
//! keeps hitting. The current send's user message is not part of the conversation: the builders
//! append it, with this send's notes, from the send context.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};

/// The largest conversation file accepted, in bytes.
pub const MAX_CONVERSATION_BYTES: usize = 64 * 1024 * 1024;

/// Earlier messages of a thread, oldest first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "promptstack conversation")]
pub struct Conversation {
    /// The messages, oldest first.
    #[serde(default)]
    pub messages: Vec<Message>,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// What the user sent (including any notes placed in it).
    User {
        /// The text.
        text: String,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The text (may be empty when the turn is only tool calls).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        text: String,
        /// Tool calls, in the order the model made them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The id of the call it answers.
        call_id: String,
        /// The result as the model reads it (fenced already if untrusted).
        content: String,
        /// Whether the call failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The provider's id for the call.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments (a JSON object).
    #[serde(default = "empty_object")]
    pub arguments: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

impl Conversation {
    /// Reads a conversation from JSON and checks it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Request`] with `name:line:column` and the key path for malformed JSON, and
    /// with the message index for an inconsistent conversation (see [`Conversation::check`]).
    pub fn from_json(bytes: &[u8], name: &str) -> Result<Self, Error> {
        if bytes.len() > MAX_CONVERSATION_BYTES {
            return Err(Error::new(
                ErrorKind::Request,
                format!(
                    "{name}: the conversation is {} bytes; the limit is {MAX_CONVERSATION_BYTES}",
                    bytes.len()
                ),
            ));
        }
        let mut deserializer = serde_json::Deserializer::from_slice(bytes);
        let conversation: Conversation = serde_path_to_error::deserialize(&mut deserializer)
            .map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                Error::new(
                    ErrorKind::Request,
                    format!(
                        "{name}:{}:{}: {} (at `{path}`)",
                        inner.line(),
                        inner.column(),
                        crate::spec::load::lowercase_first(&inner.to_string())
                    ),
                )
            })?;
        conversation
            .check()
            .map_err(|e| Error::new(ErrorKind::Request, format!("{name}: {e}")))?;
        Ok(conversation)
    }

    /// Checks what every provider requires: tool-call ids are unique, tool arguments are objects,
    /// every tool result answers an earlier call of the latest assistant message, and every call
    /// is answered before the next user or assistant message.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Request`] naming the message (`messages[3]`) and what is wrong.
    pub fn check(&self) -> Result<(), Error> {
        let bad =
            |i: usize, why: String| Error::new(ErrorKind::Request, format!("messages[{i}]: {why}"));
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut open: Vec<&str> = Vec::new();
        for (i, message) in self.messages.iter().enumerate() {
            match message {
                Message::User { .. } | Message::Assistant { .. } if !open.is_empty() => {
                    return Err(bad(
                        i,
                        format!("tool call `{}` has no result before this message", open[0]),
                    ));
                }
                Message::User { .. } => {}
                Message::Assistant { text, tool_calls } => {
                    if text.is_empty() && tool_calls.is_empty() {
                        return Err(bad(
                            i,
                            "an assistant message needs text or tool calls".into(),
                        ));
                    }
                    for call in tool_calls {
                        if !call.arguments.is_object() {
                            return Err(bad(
                                i,
                                format!(
                                    "the arguments of tool call `{}` are not an object",
                                    call.id
                                ),
                            ));
                        }
                        if call.id.is_empty() || !seen.insert(&call.id) {
                            return Err(bad(
                                i,
                                format!("tool call id `{}` is empty or used twice", call.id),
                            ));
                        }
                        if !crate::toolset::valid_tool_name(&call.name) {
                            return Err(bad(
                                i,
                                format!("`{}` is not a valid tool name", call.name),
                            ));
                        }
                        open.push(&call.id);
                    }
                }
                Message::Tool { call_id, .. } => {
                    let Some(at) = open.iter().position(|id| id == call_id) else {
                        return Err(bad(
                            i,
                            format!(
                                "tool result for `{call_id}` answers no open call of the latest assistant message"
                            ),
                        ));
                    };
                    open.remove(at);
                }
            }
        }
        Ok(())
    }

    /// The name of the tool a call id belongs to.
    pub(crate) fn tool_name(&self, call_id: &str) -> Option<&str> {
        self.messages.iter().find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| c.id == call_id)
                .map(|c| c.name.as_str()),
            _ => None,
        })
    }

    /// Whether the last message is a tool result or an assistant message whose calls are still
    /// open — the next request continues a tool-call turn rather than starting a new one.
    pub fn continues_tool_turn(&self) -> bool {
        matches!(self.messages.last(), Some(Message::Tool { .. }))
    }
}
