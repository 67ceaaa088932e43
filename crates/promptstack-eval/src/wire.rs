//! What a model's streamed answer says, read from the bytes on the wire.
//!
//! [`SseDecoder`] splits a server-sent-events body into events, whatever the chunking of the
//! bytes; [`Stream`] reads the events of one provider format into an [`Answer`]: the text, the
//! tool calls with their arguments, the token usage and why the model stopped. Both are bounded:
//! an event, the text, a call's arguments and the number of calls each have a limit, and what
//! passes one is an error, never unbounded memory. Nothing here opens a connection; the
//! connectors feed it what they read.

use std::fmt;

use crate::row::{ToolCallRecord, Usage};
use crate::suite::ModelFormat;

/// The largest event (its data lines together) accepted, in bytes.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// The longest answer text accepted, in bytes.
pub const MAX_TEXT_BYTES: usize = 4 * 1024 * 1024;

/// The most tool calls one answer may hold.
pub const MAX_TOOL_CALLS: usize = 256;

/// The longest arguments of one tool call, in bytes.
pub const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// Why a stream could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// An event, the text, the calls or a call's arguments passed their bound.
    TooLarge(&'static str),
    /// An event's data is not the JSON the format sends.
    BadEvent(String),
    /// The provider reported an error inside the stream (an `error` event).
    Provider(String),
    /// The stream ended before the format's last event.
    Truncated,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::TooLarge(what) => write!(f, "the stream's {what} passed its bound"),
            WireError::BadEvent(why) => write!(f, "a stream event could not be read: {why}"),
            WireError::Provider(why) => write!(f, "the provider reported an error: {why}"),
            WireError::Truncated => f.write_str("the stream ended before its last event"),
        }
    }
}

impl std::error::Error for WireError {}

/// One server-sent event: its type (`message` when none was named) and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, or `message`.
    pub name: String,
    /// The `data:` lines, joined with line feeds.
    pub data: String,
}

/// Splits a server-sent-events body into events (the WHATWG event-stream grammar: lines end in
/// CR, LF or CRLF; `data:` lines join; a blank line dispatches; `:` starts a comment).
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    name: String,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    /// A decoder at the start of a body.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `bytes`, appending every event they complete to `out`.
    ///
    /// # Errors
    ///
    /// [`WireError::TooLarge`] when one line or one event passes [`MAX_EVENT_BYTES`].
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), WireError> {
        for &byte in bytes {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    self.end_line(out)?;
                }
                _ => {
                    if self.line.len() >= MAX_EVENT_BYTES {
                        return Err(WireError::TooLarge("event"));
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(())
    }

    /// Ends the body. As the grammar says, an event the body ends in the middle of (before its
    /// blank line) is not dispatched: it may be cut short.
    pub fn finish(&mut self) {
        self.line.clear();
        self.data.clear();
        self.name.clear();
        self.has_data = false;
    }

    fn end_line(&mut self, out: &mut Vec<Event>) -> Result<(), WireError> {
        let mut line = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if line.starts_with(b"\xEF\xBB\xBF") {
                line.drain(..3);
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let line = String::from_utf8_lossy(&line);
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(WireError::TooLarge("event"));
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => value.clone_into(&mut self.name),
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<Event>) {
        let name = std::mem::take(&mut self.name);
        if std::mem::take(&mut self.has_data) {
            out.push(Event {
                name: if name.is_empty() {
                    "message".to_owned()
                } else {
                    name
                },
                data: std::mem::take(&mut self.data),
            });
        }
    }
}

/// What a streamed answer said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// The text, as streamed (before the citation processor).
    pub text: String,
    /// The tool calls, in the order the stream opened them.
    pub tool_calls: Vec<ToolCallRecord>,
    /// The tokens the provider reported.
    pub usage: Usage,
    /// Why the model stopped, as the provider names it (`end_turn`, `tool_use`, `stop`,
    /// `tool_calls`, `length`; for OpenAI Responses the response's status, `completed`, or the
    /// reason it is incomplete, `max_output_tokens`; for Gemini the `finishReason`, `STOP`,
    /// `MAX_TOKENS`, or the `blockReason` of a refused prompt).
    pub stop_reason: Option<String>,
}

/// The stream formats read here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFormat {
    /// OpenAI Chat Completions (`data: {chunk}` … `data: [DONE]`), and every server that speaks
    /// it (llama.cpp's, Ollama, vLLM).
    OpenaiChat,
    /// Anthropic Messages (`message_start` … `message_stop`).
    Anthropic,
    /// OpenAI Responses (`response.created` … `response.completed`).
    OpenaiResponses,
    /// Gemini `streamGenerateContent?alt=sse` (chunks of `GenerateContentResponse`, the last
    /// with a `finishReason`).
    Gemini,
}

impl From<ModelFormat> for StreamFormat {
    fn from(format: ModelFormat) -> Self {
        match format {
            ModelFormat::Anthropic => StreamFormat::Anthropic,
            ModelFormat::OpenaiChat => StreamFormat::OpenaiChat,
            ModelFormat::OpenaiResponses => StreamFormat::OpenaiResponses,
            ModelFormat::Gemini => StreamFormat::Gemini,
        }
    }
}

/// Reads one answer's events.
#[derive(Debug)]
pub struct Stream {
    format: StreamFormat,
    decoder: SseDecoder,
    events: Vec<Event>,
    answer: Answer,
    /// OpenAI Chat's call index, Anthropic's content-block index, OpenAI Responses' output
    /// index, or Gemini's count of calls, of each call in `answer`.
    slots: Vec<u64>,
    done: bool,
    argument_bytes: usize,
}

impl Stream {
    /// A reader of one answer in `format`.
    pub fn new(format: StreamFormat) -> Self {
        Self {
            format,
            decoder: SseDecoder::new(),
            events: Vec::new(),
            answer: Answer::default(),
            slots: Vec::new(),
            done: false,
            argument_bytes: 0,
        }
    }

    /// Reads the next bytes of the body; returns the text they added (for a caller streaming the
    /// answer on, and to time the first token).
    ///
    /// # Errors
    ///
    /// A [`WireError`]: a bound passed, an event that is not the format's JSON, or an error the
    /// provider reported.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<&str, WireError> {
        let before = self.answer.text.len();
        self.decoder.feed(bytes, &mut self.events)?;
        self.read_events()?;
        Ok(&self.answer.text[before..])
    }

    /// Ends the body and returns the answer.
    ///
    /// # Errors
    ///
    /// [`WireError::Truncated`] when the format's last event never came.
    pub fn finish(mut self) -> Result<Answer, WireError> {
        self.decoder.finish();
        if !self.done {
            return Err(WireError::Truncated);
        }
        Ok(self.answer)
    }

    fn read_events(&mut self) -> Result<(), WireError> {
        let events = std::mem::take(&mut self.events);
        for event in &events {
            // A Gemini stream has no closing event: it is whole when its last chunk says why the
            // model stopped, so every chunk is read.
            if self.done && self.format != StreamFormat::Gemini {
                break;
            }
            match self.format {
                StreamFormat::OpenaiChat => self.openai(event)?,
                StreamFormat::Anthropic => self.anthropic(event)?,
                StreamFormat::OpenaiResponses => self.responses(event)?,
                StreamFormat::Gemini => self.gemini(event)?,
            }
        }
        Ok(())
    }

    fn push_text(&mut self, text: &str) -> Result<(), WireError> {
        if self.answer.text.len() + text.len() > MAX_TEXT_BYTES {
            return Err(WireError::TooLarge("text"));
        }
        self.answer.text.push_str(text);
        Ok(())
    }

    /// The call at `slot`, opened if new.
    fn call(&mut self, slot: u64) -> Result<&mut ToolCallRecord, WireError> {
        let at = match self.slots.iter().position(|s| *s == slot) {
            Some(at) => at,
            None => {
                if self.slots.len() >= MAX_TOOL_CALLS {
                    return Err(WireError::TooLarge("tool calls"));
                }
                self.slots.push(slot);
                self.answer.tool_calls.push(ToolCallRecord::new("", ""));
                self.slots.len() - 1
            }
        };
        Ok(&mut self.answer.tool_calls[at])
    }

    fn push_arguments(&mut self, slot: u64, part: &str) -> Result<(), WireError> {
        self.argument_bytes += part.len();
        if self.argument_bytes > MAX_ARGUMENT_BYTES * 4 {
            return Err(WireError::TooLarge("tool arguments"));
        }
        let call = self.call(slot)?;
        if call.arguments.len() + part.len() > MAX_ARGUMENT_BYTES {
            return Err(WireError::TooLarge("tool arguments"));
        }
        call.arguments.push_str(part);
        Ok(())
    }

    fn set_name(&mut self, slot: u64, name: &str) -> Result<(), WireError> {
        if name.len() > 256 {
            return Err(WireError::TooLarge("tool name"));
        }
        self.call(slot)?.name = name.to_owned();
        Ok(())
    }

    fn openai(&mut self, event: &Event) -> Result<(), WireError> {
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: serde_json::Value = json(&event.data)?;
        if let Some(error) = chunk.get("error") {
            return Err(WireError::Provider(message_of(error)));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.answer.usage.input_tokens = number(usage, "prompt_tokens");
            self.answer.usage.output_tokens = number(usage, "completion_tokens");
            if let Some(cached) = usage
                .get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens"))
                .and_then(serde_json::Value::as_u64)
            {
                self.answer.usage.cache_read_tokens = Some(cached);
            }
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(|c| c.as_array())
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(|r| r.as_str()) {
            self.answer.stop_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(|c| c.as_str()) {
            self.push_text(text)?;
        }
        for call in delta
            .get("tool_calls")
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            let slot = call.get("index").and_then(|i| i.as_u64()).unwrap_or(0);
            let function = call.get("function");
            if let Some(name) = function
                .and_then(|f| f.get("name"))
                .and_then(|n| n.as_str())
            {
                let record = self.call(slot)?;
                if record.name.len() + name.len() > 256 {
                    return Err(WireError::TooLarge("tool name"));
                }
                record.name.push_str(name);
            }
            match function
                .and_then(|f| f.get("arguments"))
                .and_then(|a| a.as_str())
            {
                Some(part) => self.push_arguments(slot, part)?,
                None => {
                    self.call(slot)?;
                }
            }
        }
        Ok(())
    }

    fn anthropic(&mut self, event: &Event) -> Result<(), WireError> {
        if event.name == "ping" {
            return Ok(());
        }
        let data: serde_json::Value = json(&event.data)?;
        let kind = data
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or(event.name.as_str());
        match kind {
            "message_start" => {
                let usage = data.get("message").and_then(|m| m.get("usage"));
                if let Some(usage) = usage {
                    let read = usage
                        .get("cache_read_input_tokens")
                        .and_then(serde_json::Value::as_u64);
                    let write = usage
                        .get("cache_creation_input_tokens")
                        .and_then(serde_json::Value::as_u64);
                    let u = &mut self.answer.usage;
                    u.input_tokens = number(usage, "input_tokens")
                        .saturating_add(read.unwrap_or(0))
                        .saturating_add(write.unwrap_or(0));
                    u.output_tokens = number(usage, "output_tokens");
                    u.cache_read_tokens = read;
                    u.cache_write_tokens = write;
                }
            }
            "content_block_start" => {
                let slot = data.get("index").and_then(|i| i.as_u64()).unwrap_or(0);
                let block = data.get("content_block");
                match block.and_then(|b| b.get("type")).and_then(|t| t.as_str()) {
                    Some("tool_use") => {
                        let name = block
                            .and_then(|b| b.get("name"))
                            .and_then(|n| n.as_str())
                            .unwrap_or_default();
                        if name.len() > 256 {
                            return Err(WireError::TooLarge("tool name"));
                        }
                        self.call(slot)?.name = name.to_owned();
                    }
                    Some("text") => {
                        let text = block
                            .and_then(|b| b.get("text"))
                            .and_then(|t| t.as_str())
                            .unwrap_or_default();
                        self.push_text(text)?;
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let slot = data.get("index").and_then(|i| i.as_u64()).unwrap_or(0);
                let delta = data.get("delta");
                match delta.and_then(|d| d.get("type")).and_then(|t| t.as_str()) {
                    Some("text_delta") => {
                        let text = delta
                            .and_then(|d| d.get("text"))
                            .and_then(|t| t.as_str())
                            .unwrap_or_default();
                        self.push_text(text)?;
                    }
                    Some("input_json_delta") => {
                        let part = delta
                            .and_then(|d| d.get("partial_json"))
                            .and_then(|t| t.as_str())
                            .unwrap_or_default();
                        if self.slots.contains(&slot) {
                            self.push_arguments(slot, part)?;
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = data
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(|r| r.as_str())
                {
                    self.answer.stop_reason = Some(reason.to_owned());
                }
                if let Some(output) = data
                    .get("usage")
                    .and_then(|u| u.get("output_tokens"))
                    .and_then(serde_json::Value::as_u64)
                {
                    self.answer.usage.output_tokens = output;
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                return Err(WireError::Provider(message_of(
                    data.get("error").unwrap_or(&data),
                )));
            }
            _ => {}
        }
        Ok(())
    }
}

impl Stream {
    fn responses(&mut self, event: &Event) -> Result<(), WireError> {
        let data: serde_json::Value = json(&event.data)?;
        let kind = data
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or(event.name.as_str());
        let slot = data.get("output_index").and_then(serde_json::Value::as_u64);
        match kind {
            "response.output_text.delta" => {
                let text = data
                    .get("delta")
                    .and_then(|d| d.as_str())
                    .unwrap_or_default();
                self.push_text(text)?;
            }
            "response.output_item.added" => {
                let item = data.get("item");
                if item.and_then(|i| i.get("type")).and_then(|t| t.as_str())
                    == Some("function_call")
                {
                    let name = item
                        .and_then(|i| i.get("name"))
                        .and_then(|n| n.as_str())
                        .unwrap_or_default();
                    let slot = slot.unwrap_or(self.slots.len() as u64);
                    self.set_name(slot, name)?;
                    // The item may open with arguments already (a server that does not stream
                    // them).
                    if let Some(arguments) = item
                        .and_then(|i| i.get("arguments"))
                        .and_then(|a| a.as_str())
                        .filter(|a| !a.is_empty())
                    {
                        self.push_arguments(slot, arguments)?;
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                let part = data
                    .get("delta")
                    .and_then(|d| d.as_str())
                    .unwrap_or_default();
                if let Some(slot) = slot.filter(|slot| self.slots.contains(slot)) {
                    self.push_arguments(slot, part)?;
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = data.get("response");
                if let Some(usage) = response
                    .and_then(|r| r.get("usage"))
                    .filter(|u| u.is_object())
                {
                    self.answer.usage.input_tokens = number(usage, "input_tokens");
                    self.answer.usage.output_tokens = number(usage, "output_tokens");
                    self.answer.usage.cache_read_tokens = usage
                        .get("input_tokens_details")
                        .and_then(|d| d.get("cached_tokens"))
                        .and_then(serde_json::Value::as_u64);
                }
                let reason = response
                    .and_then(|r| r.get("incomplete_details"))
                    .and_then(|d| d.get("reason"))
                    .or_else(|| response.and_then(|r| r.get("status")))
                    .and_then(|r| r.as_str())
                    .unwrap_or(if kind == "response.completed" {
                        "completed"
                    } else {
                        "incomplete"
                    });
                self.answer.stop_reason = Some(clip_reason(reason));
                self.done = true;
            }
            "response.failed" => {
                let error = data
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .filter(|e| !e.is_null())
                    .unwrap_or(&data);
                return Err(WireError::Provider(message_of(error)));
            }
            "error" => {
                return Err(WireError::Provider(message_of(
                    data.get("error").unwrap_or(&data),
                )));
            }
            _ => {}
        }
        Ok(())
    }

    fn gemini(&mut self, event: &Event) -> Result<(), WireError> {
        let chunk: serde_json::Value = json(&event.data)?;
        if let Some(error) = chunk.get("error") {
            return Err(WireError::Provider(message_of(error)));
        }
        if let Some(usage) = chunk.get("usageMetadata").filter(|u| u.is_object()) {
            // The prompt count already holds the cached tokens; the thoughts are output too.
            self.answer.usage.input_tokens = number(usage, "promptTokenCount");
            self.answer.usage.output_tokens = number(usage, "candidatesTokenCount")
                .saturating_add(number(usage, "thoughtsTokenCount"));
            self.answer.usage.cache_read_tokens = usage
                .get("cachedContentTokenCount")
                .and_then(serde_json::Value::as_u64);
        }
        if let Some(reason) = chunk
            .get("promptFeedback")
            .and_then(|f| f.get("blockReason"))
            .and_then(|r| r.as_str())
        {
            self.answer.stop_reason = Some(clip_reason(reason));
            self.done = true;
        }
        let Some(candidate) = chunk
            .get("candidates")
            .and_then(|c| c.as_array())
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        for part in candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(|p| p.as_array())
            .into_iter()
            .flatten()
        {
            // Thought summaries are not the answer.
            if part.get("thought").and_then(serde_json::Value::as_bool) == Some(true) {
                continue;
            }
            if let Some(text) = part.get("text").and_then(|t| t.as_str()) {
                self.push_text(text)?;
            }
            if let Some(call) = part.get("functionCall") {
                let name = call
                    .get("name")
                    .and_then(|n| n.as_str())
                    .unwrap_or_default();
                let slot = self.slots.len() as u64;
                self.set_name(slot, name)?;
                let arguments = call
                    .get("args")
                    .map_or_else(|| "{}".to_owned(), serde_json::Value::to_string);
                self.push_arguments(slot, &arguments)?;
            }
        }
        match candidate.get("finishReason").and_then(|r| r.as_str()) {
            Some(reason) => {
                self.answer.stop_reason = Some(clip_reason(reason));
                self.done = true;
            }
            // A chunk after the last (usage alone) leaves the stream whole; one that carries
            // content does not.
            None => self.done = false,
        }
        Ok(())
    }
}

/// A stop reason, at most 64 characters.
fn clip_reason(reason: &str) -> String {
    reason.chars().take(64).collect()
}

fn json(data: &str) -> Result<serde_json::Value, WireError> {
    serde_json::from_str(data).map_err(|e| WireError::BadEvent(e.to_string()))
}

fn number(value: &serde_json::Value, key: &str) -> u64 {
    value
        .get(key)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0)
}

/// A provider error's message, at most 500 characters.
fn message_of(error: &serde_json::Value) -> String {
    let message = error
        .get("message")
        .and_then(|m| m.as_str())
        .map_or_else(|| error.to_string(), str::to_owned);
    message.chars().take(500).collect()
}
