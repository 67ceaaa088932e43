//! The conversation so far: the messages of earlier requests, with tool calls and results.
//!
//! Messages are stored as they were sent (a user message includes the per-send notes that were
//! placed in it then), so that replaying them gives the provider the same bytes and its cache
//! keeps hitting. The current send's user message is not part of the conversation: the builders
//! append it, with this send's notes, from the send context.
//!
//! A conversation read from bytes is bounded ([`ConversationLimits`]: bytes before parsing,
//! messages while parsing), and reading and checking it is linear in its size.

use std::collections::{HashMap, HashSet};
use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Error, ErrorKind};

/// The largest conversation accepted by default, in bytes of JSON.
pub const MAX_CONVERSATION_BYTES: usize = 64 * 1024 * 1024;

/// The most messages a conversation may have by default.
pub const MAX_CONVERSATION_MESSAGES: usize = 200_000;

/// Caps on a conversation read from bytes ([`Conversation::from_json_with`]).
///
/// Building a request is linear in the conversation's size; these caps bound the memory and time
/// one untrusted conversation can take. The defaults are [`MAX_CONVERSATION_BYTES`] and
/// [`MAX_CONVERSATION_MESSAGES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConversationLimits {
    /// The most bytes of JSON.
    pub max_bytes: usize,
    /// The most messages.
    pub max_messages: usize,
}

impl Default for ConversationLimits {
    fn default() -> Self {
        Self {
            max_bytes: MAX_CONVERSATION_BYTES,
            max_messages: MAX_CONVERSATION_MESSAGES,
        }
    }
}

impl ConversationLimits {
    /// The default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the most bytes of JSON.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Sets the most messages.
    pub fn max_messages(mut self, messages: usize) -> Self {
        self.max_messages = messages;
        self
    }
}

/// Earlier messages of a thread, oldest first.
///
/// Deserialising refuses unknown fields and more than [`MAX_CONVERSATION_MESSAGES`] messages.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "promptstack conversation")]
pub struct Conversation {
    /// The messages, oldest first.
    #[serde(default)]
    pub messages: Vec<Message>,
}

impl<'de> Deserialize<'de> for Conversation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Bounded(MAX_CONVERSATION_MESSAGES).deserialize(deserializer)
    }
}

/// Deserialises a conversation with at most this many messages, refusing the first message over
/// the limit before reading the rest.
struct Bounded(usize);

impl<'de> DeserializeSeed<'de> for Bounded {
    type Value = Conversation;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Conversation, D::Error> {
        deserializer.deserialize_struct("Conversation", &["messages"], self)
    }
}

impl<'de> Visitor<'de> for Bounded {
    type Value = Conversation;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct Conversation")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Conversation, A::Error> {
        let mut messages = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "messages" {
                return Err(de::Error::unknown_field(&key, &["messages"]));
            }
            if messages.is_some() {
                return Err(de::Error::duplicate_field("messages"));
            }
            messages = Some(map.next_value_seed(BoundedMessages(self.0))?);
        }
        Ok(Conversation {
            messages: messages.unwrap_or_default(),
        })
    }
}

/// The message list, at most this long.
struct BoundedMessages(usize);

impl<'de> DeserializeSeed<'de> for BoundedMessages {
    type Value = Vec<Message>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Message>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for BoundedMessages {
    type Value = Vec<Message>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Message>, A::Error> {
        let mut messages = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(message) = seq.next_element::<Message>()? {
            if messages.len() == self.0 {
                return Err(de::Error::custom(format_args!(
                    "too many messages: the limit is {}",
                    self.0
                )));
            }
            messages.push(message);
        }
        Ok(messages)
    }
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
    /// Reads a conversation from JSON with the default [`ConversationLimits`] and checks it.
    ///
    /// # Errors
    ///
    /// As [`Conversation::from_json_with`].
    pub fn from_json(bytes: &[u8], name: &str) -> Result<Self, Error> {
        Self::from_json_with(bytes, name, &ConversationLimits::default())
    }

    /// Reads a conversation from JSON within `limits` and checks it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Request`] naming `name` when the bytes are over the limit; with
    /// `name:line:column` and the key path for malformed JSON and for the first message over the
    /// limit; and with the message index for an inconsistent conversation (see
    /// [`Conversation::check`]).
    pub fn from_json_with(
        bytes: &[u8],
        name: &str,
        limits: &ConversationLimits,
    ) -> Result<Self, Error> {
        if bytes.len() > limits.max_bytes {
            return Err(Error::new(
                ErrorKind::Request,
                format!(
                    "{name}: the conversation is {} bytes; the limit is {}",
                    bytes.len(),
                    limits.max_bytes
                ),
            ));
        }
        let mut deserializer = serde_json::Deserializer::from_slice(bytes);
        let mut track = serde_path_to_error::Track::new();
        let parsed = Bounded(limits.max_messages).deserialize(
            serde_path_to_error::Deserializer::new(&mut deserializer, &mut track),
        );
        let conversation = parsed.map_err(|inner| {
            let path = track.path().to_string();
            Error::new(
                ErrorKind::Request,
                format!(
                    "{name}:{}:{}: {} (at `{path}`)",
                    inner.line(),
                    inner.column(),
                    crate::diagnostic::lowercase_first(&inner.to_string())
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
        let mut seen: HashSet<&str> = HashSet::new();
        // The calls of the latest assistant message in order, each with whether it is answered;
        // `first` is the earliest unanswered one. Answering looks the call up by id, so a
        // message with many calls is checked in linear time.
        let mut open: Vec<(&str, bool)> = Vec::new();
        let mut open_at: HashMap<&str, usize> = HashMap::new();
        let mut first = 0;
        for (i, message) in self.messages.iter().enumerate() {
            match message {
                Message::User { .. } | Message::Assistant { .. } if first < open.len() => {
                    return Err(bad(
                        i,
                        format!(
                            "tool call `{}` has no result before this message",
                            open[first].0
                        ),
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
                    open.clear();
                    open_at.clear();
                    first = 0;
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
                        open_at.insert(&call.id, open.len());
                        open.push((&call.id, false));
                    }
                }
                Message::Tool { call_id, .. } => {
                    let Some(at) = open_at.remove(call_id.as_str()) else {
                        return Err(bad(
                            i,
                            format!(
                                "tool result for `{call_id}` answers no open call of the latest assistant message"
                            ),
                        ));
                    };
                    open[at].1 = true;
                    while open.get(first).is_some_and(|(_, answered)| *answered) {
                        first += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether the last message is a tool result or an assistant message whose calls are still
    /// open — the next request continues a tool-call turn rather than starting a new one.
    pub fn continues_tool_turn(&self) -> bool {
        matches!(self.messages.last(), Some(Message::Tool { .. }))
    }
}
