//! A real model on CPU through the wire reader: one streamed OpenAI Chat Completions request to
//! the server `scripts/local-model` starts (its base URL in `PROMPTSTACK_LOCAL_MODEL_URL`, which
//! `scripts/test` always sets), read with [`Stream`] exactly as a live run reads it.
//!
//! The client is plain HTTP/1.1 over a `TcpStream` (the server is on the loopback), so the test
//! checks the bytes the model server sends and nothing in between.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use promptstack_eval::wire::{Answer, Stream, StreamFormat};

const MODEL: &str = "smollm2-135m-instruct";
const MAX_BODY: usize = 4 << 20;
const TIMEOUT: Duration = Duration::from_secs(120);
const MAX_TOKENS: u64 = 48;

/// `host:port` and path prefix of an `http://host:port/prefix` URL.
fn split_url(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").unwrap_or_else(|| {
        panic!("PROMPTSTACK_LOCAL_MODEL_URL must be http://host:port/v1, got {url:?}")
    });
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    assert!(!authority.is_empty(), "no host in {url:?}");
    (authority.to_owned(), path.trim_end_matches('/').to_owned())
}

/// Sends one request and returns the status and the body as it arrived, each piece of the
/// chunked transfer encoding fed to `on_piece` in order.
fn post(url: &str, path: &str, body: &str, mut on_piece: impl FnMut(&[u8])) -> u16 {
    let (authority, prefix) = split_url(url);
    let deadline = Instant::now() + TIMEOUT;
    let socket = TcpStream::connect(&authority)
        .unwrap_or_else(|e| panic!("cannot reach the local model at {authority}: {e}"));
    socket.set_read_timeout(Some(TIMEOUT)).unwrap();
    socket.set_write_timeout(Some(TIMEOUT)).unwrap();
    let mut writer = socket.try_clone().unwrap();
    write!(
        writer,
        "POST {prefix}{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {line:?}"));
    let mut chunked = false;
    let mut length = None;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((header, ""));
        let (name, value) = (name.to_ascii_lowercase(), value.trim().to_ascii_lowercase());
        if name == "transfer-encoding" && value.contains("chunked") {
            chunked = true;
        } else if name == "content-length" {
            length = value.parse::<usize>().ok();
        }
    }
    let mut total = 0;
    if chunked {
        loop {
            assert!(
                Instant::now() < deadline,
                "the answer took longer than {TIMEOUT:?}"
            );
            line.clear();
            reader.read_line(&mut line).unwrap();
            let size_field = line.trim_end().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_field, 16)
                .unwrap_or_else(|_| panic!("bad chunk size line {line:?}"));
            if size == 0 {
                break;
            }
            total += size;
            assert!(
                total <= MAX_BODY,
                "the answer is longer than {MAX_BODY} bytes"
            );
            let mut piece = vec![0; size];
            reader.read_exact(&mut piece).unwrap();
            on_piece(&piece);
            let mut crlf = [0; 2];
            reader.read_exact(&mut crlf).unwrap();
            assert_eq!(&crlf, b"\r\n", "a chunk does not end in CRLF");
        }
    } else {
        let mut all = Vec::new();
        let limit = length.unwrap_or(MAX_BODY).min(MAX_BODY) as u64 + 1;
        reader.take(limit).read_to_end(&mut all).unwrap();
        assert!(
            all.len() <= MAX_BODY,
            "the answer is longer than {MAX_BODY} bytes"
        );
        on_piece(&all);
    }
    status
}

/// One streamed chat completion, read with the eval's own wire reader.
fn ask(url: &str, question: &str, seed: u64) -> Answer {
    let body = serde_json::json!({
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are a concise assistant."},
            {"role": "user", "content": question},
        ],
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
        "seed": seed,
    })
    .to_string();
    let mut stream = Stream::new(StreamFormat::OpenaiChat);
    let mut raw = Vec::new();
    let mut failure = None;
    let status = post(url, "/chat/completions", &body, |piece| {
        raw.extend_from_slice(piece);
        if failure.is_none()
            && let Err(e) = stream.feed(piece)
        {
            failure = Some(e);
        }
    });
    let shown = String::from_utf8_lossy(&raw[..raw.len().min(2000)]).into_owned();
    assert_eq!(status, 200, "the model answered HTTP {status}: {shown}");
    if let Some(e) = failure {
        panic!("the wire reader refused the stream: {e}\n{shown}");
    }
    stream
        .finish()
        .unwrap_or_else(|e| panic!("the stream did not end properly: {e}\n{shown}"))
}

fn local_model_url() -> Option<String> {
    promptstack_eval::testing::local_model_url("local_model: the real-model test")
}

#[test]
fn a_real_model_streams_an_answer_with_usage() {
    let Some(url) = local_model_url() else {
        return;
    };
    let answer = ask(
        &url,
        "What is the capital of France? Answer in one sentence.",
        7,
    );
    assert!(!answer.text.trim().is_empty(), "empty answer: {answer:?}");
    assert!(
        answer.tool_calls.is_empty(),
        "no tools were offered: {answer:?}"
    );
    assert!(
        answer.usage.input_tokens > 0,
        "no prompt tokens counted: {answer:?}"
    );
    assert!(
        (1..=MAX_TOKENS).contains(&answer.usage.output_tokens),
        "completion tokens out of 1..={MAX_TOKENS}: {answer:?}"
    );
    assert!(
        matches!(answer.stop_reason.as_deref(), Some("stop" | "length")),
        "stop reason: {answer:?}"
    );
    assert_eq!(
        answer.usage.output_tokens == MAX_TOKENS,
        answer.stop_reason.as_deref() == Some("length"),
        "the stop reason disagrees with the token count: {answer:?}"
    );
}

#[test]
fn the_same_greedy_request_gives_the_same_answer() {
    let Some(url) = local_model_url() else {
        return;
    };
    let first = ask(&url, "Name three primary colours.", 11);
    let second = ask(&url, "Name three primary colours.", 11);
    assert_eq!(
        first.text, second.text,
        "greedy decoding with one seed drifted"
    );
    // The same tokens in and out; the cache reads depend on what else the server has answered
    // in between (its prompt cache is shared with every other test), so they are not compared.
    assert_eq!(
        (first.usage.input_tokens, first.usage.output_tokens),
        (second.usage.input_tokens, second.usage.output_tokens)
    );
}
