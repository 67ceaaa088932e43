//! The replies of a scripted OpenAI-compatible model, for the eval tests that serve one on the
//! loopback: a streamed answer or tool call, as the server-sent events the eval's wire reader
//! reads.

use serde_json::{Value, json};

/// The closing chunk of a reply, with the reason the model stopped.
fn finish(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

/// `chunks` as an event stream, ended by `[DONE]`.
fn sse(chunks: &[Value]) -> String {
    let mut body = String::new();
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// The chunk reporting the tokens of a reply: `prompt` read, `completion` written.
pub fn usage(prompt: u64, completion: u64) -> Value {
    json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})
}

/// A streamed answer of `text`, then `usage` when there is one.
pub fn text_reply(text: &str, usage: Option<&Value>) -> String {
    let mut chunks = vec![
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
        finish("stop"),
    ];
    chunks.extend(usage.cloned());
    sse(&chunks)
}

/// A streamed call of tool `name` with `arguments` (a JSON object's text), then `usage`.
pub fn tool_call_reply(name: &str, arguments: &str, usage: &Value) -> String {
    sse(&[
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}]}, "finish_reason": null}]}),
        finish("tool_calls"),
        usage.clone(),
    ])
}
