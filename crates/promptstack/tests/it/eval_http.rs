//! The eval HTTP endpoint against a scripted fake server on 127.0.0.1: bodies byte for byte,
//! paths and headers per format, retries and their waits, limits, timeouts and bounds.
//!
//! The fake speaks HTTP/1.1 on a raw socket, so a test can cut frames anywhere, stall, or break
//! the connection mid-answer. The waits are real (the sockets are), and kept to a second or two.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use promptstack::eval::HttpEndpoint;
use promptstack_eval::endpoint::{Call, Endpoint as _, EndpointErrorKind, Reply};
use promptstack_eval::record::MAX_RECORDING_BYTES;
use promptstack_eval::suite::{Model, ModelFormat};
use promptstack_eval::wire::{Stream, StreamFormat};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

const OPENAI: &[u8] = include_bytes!("../../../promptstack-eval/tests/it/wire/openai-chat.sse");
const ANTHROPIC: &[u8] = include_bytes!("../../../promptstack-eval/tests/it/wire/anthropic.sse");
const KEY: &str = "sk-test-5f1c0de-secret";

/// What the fake does for one request.
#[derive(Clone, Debug)]
enum Step {
    /// Writes these bytes.
    Write(Vec<u8>),
    /// Waits.
    Sleep(Duration),
}

/// A request as the fake received it.
#[derive(Clone, Debug)]
struct Received {
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    at: Instant,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type Script = Arc<dyn Fn(usize) -> Vec<Step> + Send + Sync>;

/// A fake model server: answers the n-th request with `script(n)`, then closes the connection.
struct Fake {
    base: String,
    received: Arc<Mutex<Vec<Received>>>,
    most_in_flight: Arc<AtomicUsize>,
}

impl Fake {
    async fn start(script: impl Fn(usize) -> Vec<Step> + Send + Sync + 'static) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let most_in_flight = Arc::new(AtomicUsize::new(0));
        let script: Script = Arc::new(script);
        let (r, i, m) = (received.clone(), in_flight, most_in_flight.clone());
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let (script, r, i, m) = (script.clone(), r.clone(), i.clone(), m.clone());
                tokio::spawn(async move {
                    serve(socket, script, r, i, m).await;
                });
            }
        });
        Fake {
            base,
            received,
            most_in_flight,
        }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    script: Script,
    received: Arc<Mutex<Vec<Received>>>,
    in_flight: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
) {
    let mut buffer = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let Ok(n) = socket.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let target = lines
        .next()
        .unwrap()
        .split(' ')
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the request body ended early");
        body.extend_from_slice(&chunk[..n]);
    }
    let index = {
        let mut all = received.lock().unwrap();
        all.push(Received {
            target,
            headers,
            body,
            at: Instant::now(),
        });
        all.len() - 1
    };
    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    most.fetch_max(now, Ordering::SeqCst);
    let steps = script(index);
    let last = steps.len().saturating_sub(1);
    let mut counted = true;
    for (at, step) in steps.into_iter().enumerate() {
        // The request stops counting as in flight before its last bytes are written: once the
        // client has them it may start its next request, which must not overlap this one.
        if at == last {
            in_flight.fetch_sub(1, Ordering::SeqCst);
            counted = false;
        }
        match step {
            Step::Write(bytes) => {
                if socket.write_all(&bytes).await.is_err() {
                    break;
                }
                let _ = socket.flush().await;
            }
            Step::Sleep(wait) => tokio::time::sleep(wait).await,
        }
    }
    if counted {
        in_flight.fetch_sub(1, Ordering::SeqCst);
    }
    let _ = socket.shutdown().await;
}

/// A whole answer with a `Content-Length`.
fn plain(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<Step> {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    vec![Step::Write(bytes)]
}

/// The head of a chunked event stream.
fn stream_head(status: u16) -> Step {
    Step::Write(
        format!(
            "HTTP/1.1 {status} X\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
        .into_bytes(),
    )
}

/// One chunk of a chunked body.
fn chunk(bytes: &[u8]) -> Step {
    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    Step::Write(out)
}

/// `body` streamed in pieces of `size` bytes, `pause` apart, and ended properly.
fn streamed(body: &[u8], size: usize, pause: Duration) -> Vec<Step> {
    let mut steps = vec![stream_head(200)];
    for piece in body.chunks(size) {
        steps.push(chunk(piece));
        steps.push(Step::Sleep(pause));
    }
    steps.push(Step::Write(b"0\r\n\r\n".to_vec()));
    steps
}

fn model(format: ModelFormat, base: &str) -> Model {
    Model {
        format,
        base_url: base.to_owned(),
        model: "m-1".into(),
        tier: None,
        api_key_env: Some("EVAL_TEST_KEY".into()),
        credential: None,
        max_concurrency: 4,
        requests_per_minute: None,
        timeout_seconds: 5,
        retries: 2,
    }
}

fn endpoint(model: &Model) -> HttpEndpoint {
    HttpEndpoint::with_env(model, |name| {
        (name == "EVAL_TEST_KEY").then(|| KEY.to_owned())
    })
    .unwrap()
}

fn request() -> serde_json::Value {
    serde_json::json!({
        "model": "m-1",
        "messages": [{"role": "user", "content": "Is Rust 1.95 out? 中文 \u{1F680}"}],
        "stream": true,
        "z_last": 1, "a_first": [1.5, null, "\"quoted\""]
    })
}

async fn exchange(endpoint: &HttpEndpoint, body: &serde_json::Value) -> Result<Reply, String> {
    endpoint
        .exchange(Call {
            repetition: 0,
            body,
        })
        .await
        .map_err(|e| {
            assert!(!e.message().contains(KEY), "the key leaked: {e}");
            format!("{:?}: {}", e.kind(), e.message())
        })
}

fn kind_of(result: &Result<Reply, String>) -> &str {
    match result {
        Ok(_) => "Ok",
        Err(message) => message.split(':').next().unwrap(),
    }
}

#[tokio::test]
async fn a_stream_cut_into_small_pieces_arrives_byte_for_byte() {
    let fake = Fake::start(|_| streamed(OPENAI, 37, Duration::from_millis(5))).await;
    let endpoint = endpoint(&model(
        ModelFormat::OpenaiChat,
        &format!("{}/v1", fake.base),
    ));
    let reply = exchange(&endpoint, &request()).await.unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, OPENAI);
    assert_eq!(reply.attempts, 1);
    let first = reply.first_byte.expect("a body has a first byte");
    assert!(first <= reply.elapsed, "{first:?} <= {:?}", reply.elapsed);
    // The pieces were paused between: the whole answer took longer than its first byte.
    assert!(reply.elapsed >= first + Duration::from_millis(50));
    let mut stream = Stream::new(StreamFormat::OpenaiChat);
    stream.feed(&reply.body).unwrap();
    assert_eq!(
        stream.finish().unwrap().text,
        "Rust 1.95 is out [1]. 中文 🚀"
    );
}

#[tokio::test]
async fn each_format_posts_the_body_as_given_to_its_path_with_its_key_header() {
    let body = request();
    let sent = serde_json::to_vec(&body).unwrap();
    let cases = [
        (
            ModelFormat::OpenaiChat,
            "/v1",
            "POST /v1/chat/completions",
            "authorization",
            format!("Bearer {KEY}"),
        ),
        (
            ModelFormat::OpenaiResponses,
            "/v1/",
            "POST /v1/responses",
            "authorization",
            format!("Bearer {KEY}"),
        ),
        (
            ModelFormat::Anthropic,
            "",
            "POST /v1/messages",
            "x-api-key",
            KEY.to_owned(),
        ),
        (
            ModelFormat::Gemini,
            "/v1beta",
            "POST /v1beta/models/m-1:streamGenerateContent?alt=sse",
            "x-goog-api-key",
            KEY.to_owned(),
        ),
    ];
    for (format, suffix, target, key_header, key_value) in cases {
        let fake = Fake::start(|_| {
            plain(
                200,
                &[("content-type", "text/event-stream")],
                b"data: x\n\n",
            )
        })
        .await;
        let endpoint = endpoint(&model(format, &format!("{}{suffix}", fake.base)));
        let reply = exchange(&endpoint, &body).await.unwrap();
        assert_eq!(
            (reply.status, reply.body.as_slice()),
            (200, &b"data: x\n\n"[..])
        );
        let received = fake.received();
        assert_eq!(received.len(), 1);
        let request = &received[0];
        assert_eq!(request.target, target, "{format:?}");
        assert_eq!(
            request.body, sent,
            "{format:?}: the body is sent byte for byte"
        );
        assert_eq!(
            request.header(key_header),
            Some(key_value.as_str()),
            "{format:?}"
        );
        assert_eq!(request.header("content-type"), Some("application/json"));
        assert_eq!(request.header("accept"), Some("text/event-stream"));
        assert_eq!(
            request.header("anthropic-version"),
            (format == ModelFormat::Anthropic).then_some("2023-06-01")
        );
        // The key travels in its one header only.
        let elsewhere = request
            .headers
            .iter()
            .filter(|(name, value)| name != key_header && value.contains(KEY))
            .count();
        assert_eq!(elsewhere, 0, "{format:?}");
        assert!(!request.target.contains(KEY));
    }
}

#[tokio::test]
async fn a_local_server_without_a_key_gets_no_key_header() {
    let fake = Fake::start(|_| plain(200, &[], b"data: [DONE]\n\n")).await;
    let mut model = model(ModelFormat::OpenaiChat, &format!("{}/v1", fake.base));
    model.api_key_env = None;
    let endpoint = HttpEndpoint::with_env(&model, |_| panic!("no variable is read")).unwrap();
    exchange(&endpoint, &request()).await.unwrap();
    assert_eq!(fake.received()[0].header("authorization"), None);
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_as_its_retry_after_says() {
    let fake = Fake::start(|n| match n {
        0 => plain(429, &[("retry-after", "1")], b"{\"error\":\"slow down\"}"),
        _ => plain(200, &[], OPENAI),
    })
    .await;
    let endpoint = endpoint(&model(ModelFormat::OpenaiChat, &fake.base));
    let reply = exchange(&endpoint, &request()).await.unwrap();
    assert_eq!((reply.status, reply.attempts), (200, 2));
    assert_eq!(reply.body, OPENAI);
    assert!(
        reply.elapsed >= Duration::from_secs(1),
        "{:?}",
        reply.elapsed
    );
    let received = fake.received();
    assert_eq!(received.len(), 2);
    assert!(received[1].at - received[0].at >= Duration::from_secs(1));
}

#[tokio::test]
async fn server_errors_past_the_retries_exhaust_the_call() {
    let fake = Fake::start(|_| {
        plain(
            503,
            &[],
            format!("{{\"error\":\"unavailable for {KEY}\"}}").as_bytes(),
        )
    })
    .await;
    let endpoint = endpoint(&model(ModelFormat::OpenaiChat, &fake.base));
    let error = exchange(&endpoint, &request()).await.unwrap_err();
    assert!(error.starts_with("Exhausted:"), "{error}");
    assert!(error.contains("HTTP 503 after 3 attempts"), "{error}");
    assert!(error.contains("unavailable for [redacted]"), "{error}");
    assert_eq!(
        fake.received().len(),
        3,
        "the first attempt and two retries"
    );
}

#[tokio::test]
async fn an_overloaded_event_opening_an_anthropic_stream_is_retried() {
    let overloaded = b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let fake = Fake::start(move |n| match n {
        0 => plain(200, &[], overloaded),
        _ => plain(200, &[], ANTHROPIC),
    })
    .await;
    let endpoint = endpoint(&model(ModelFormat::Anthropic, &fake.base));
    let reply = exchange(&endpoint, &request()).await.unwrap();
    assert_eq!((reply.status, reply.attempts), (200, 2));
    assert_eq!(reply.body, ANTHROPIC);
}

#[tokio::test]
async fn a_client_error_comes_back_as_a_reply_without_the_key() {
    let echo = format!("{{\"error\":{{\"message\":\"bad key {KEY}\"}}}}");
    let fake = Fake::start(move |_| plain(400, &[], echo.as_bytes())).await;
    let endpoint = endpoint(&model(ModelFormat::OpenaiChat, &fake.base));
    let reply = exchange(&endpoint, &request()).await.unwrap();
    assert_eq!((reply.status, reply.attempts), (400, 1));
    assert_eq!(
        String::from_utf8(reply.body).unwrap(),
        "{\"error\":{\"message\":\"bad key [redacted]\"}}"
    );
    assert_eq!(fake.received().len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let fake =
        Fake::start(|_| plain(307, &[("location", "http://127.0.0.1:9/elsewhere")], b"")).await;
    let endpoint = endpoint(&model(ModelFormat::Anthropic, &fake.base));
    let reply = exchange(&endpoint, &request()).await.unwrap();
    assert_eq!(reply.status, 307);
    assert_eq!(fake.received().len(), 1);
}

#[tokio::test]
async fn a_slow_answer_times_out() {
    let fake = Fake::start(|_| {
        vec![
            stream_head(200),
            chunk(b"data: {}\n\n"),
            Step::Sleep(Duration::from_secs(4)),
            Step::Write(b"0\r\n\r\n".to_vec()),
        ]
    })
    .await;
    let mut model = model(ModelFormat::OpenaiChat, &fake.base);
    model.timeout_seconds = 1;
    let endpoint = endpoint(&model);
    let started = Instant::now();
    let result = exchange(&endpoint, &request()).await;
    assert_eq!(kind_of(&result), "Timeout", "{result:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(fake.received().len(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn an_answer_past_the_bound_is_too_large() {
    let bound = usize::try_from(MAX_RECORDING_BYTES).unwrap();
    // Announced by its length…
    let fake = Fake::start(move |_| {
        vec![Step::Write(
            format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\ndata:",
                bound + 1
            )
            .into_bytes(),
        )]
    })
    .await;
    let endpoint = endpoint(&model(ModelFormat::OpenaiChat, &fake.base));
    let result = exchange(&endpoint, &request()).await;
    assert_eq!(kind_of(&result), "TooLarge", "{result:?}");
    // …or streamed without one.
    let fake = Fake::start(move |_| {
        let piece = vec![b'x'; 1024 * 1024];
        let mut steps = vec![stream_head(200)];
        for _ in 0..=bound / piece.len() {
            steps.push(chunk(&piece));
        }
        steps.push(Step::Write(b"0\r\n\r\n".to_vec()));
        steps
    })
    .await;
    let endpoint = self::endpoint(&model(ModelFormat::OpenaiChat, &fake.base));
    let result = exchange(&endpoint, &request()).await;
    assert_eq!(kind_of(&result), "TooLarge", "{result:?}");
    assert_eq!(fake.received().len(), 1, "too large is not retried");
}

#[tokio::test]
async fn a_connection_cut_mid_stream_is_retried_then_reported() {
    let cut = |_| {
        vec![
            stream_head(200),
            chunk(&OPENAI[..100]),
            Step::Sleep(Duration::from_millis(20)),
        ]
    };
    // Cut every time: a connection error once the retries are spent.
    let fake = Fake::start(cut).await;
    let mut model = model(ModelFormat::OpenaiChat, &fake.base);
    model.retries = 1;
    let endpoint = endpoint(&model);
    let result = exchange(&endpoint, &request()).await;
    assert_eq!(kind_of(&result), "Connect", "{result:?}");
    assert!(result.unwrap_err().contains("after 2 attempts"));
    assert_eq!(fake.received().len(), 2);
    // Cut once: the retry answers.
    let fake = Fake::start(move |n| {
        if n == 0 {
            cut(n)
        } else {
            plain(200, &[], OPENAI)
        }
    })
    .await;
    let endpoint = self::endpoint(&self::model(ModelFormat::OpenaiChat, &fake.base));
    let reply = exchange(&endpoint, &request()).await.unwrap();
    assert_eq!((reply.attempts, reply.body.as_slice()), (2, OPENAI));
}

#[tokio::test]
async fn an_endpoint_that_is_not_listening_is_a_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let mut model = model(ModelFormat::OpenaiChat, &base);
    model.retries = 0;
    let result = exchange(&endpoint(&model), &request()).await;
    assert_eq!(kind_of(&result), "Connect", "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_calls_are_in_flight_than_the_model_allows() {
    let fake = Fake::start(|_| {
        let mut steps = vec![Step::Sleep(Duration::from_millis(150))];
        steps.extend(plain(200, &[], b"data: [DONE]\n\n"));
        steps
    })
    .await;
    let mut model = model(ModelFormat::OpenaiChat, &fake.base);
    model.max_concurrency = 2;
    let endpoint = endpoint(&model);
    let body = request();
    let calls = (0..6).map(|_| exchange(&endpoint, &body));
    let replies = futures::future::join_all(calls).await;
    assert!(replies.iter().all(Result::is_ok), "{replies:?}");
    assert_eq!(fake.received().len(), 6);
    assert_eq!(fake.most_in_flight.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn calls_per_minute_start_evenly_spaced() {
    let fake = Fake::start(|_| plain(200, &[], b"data: [DONE]\n\n")).await;
    let mut model = model(ModelFormat::OpenaiChat, &fake.base);
    model.requests_per_minute = Some(600);
    let endpoint = endpoint(&model);
    let body = request();
    let replies = futures::future::join_all((0..4).map(|_| exchange(&endpoint, &body))).await;
    assert!(replies.iter().all(Result::is_ok));
    let mut starts: Vec<Instant> = fake.received().iter().map(|r| r.at).collect();
    starts.sort();
    // 60 s / 600 = 100 ms apart. The fake sees each start a moment after it is made, and that
    // moment varies, so each start is measured from the first, less a margin for it.
    for (k, start) in starts.iter().enumerate() {
        let due = Duration::from_millis(100) * k as u32;
        assert!(
            *start - starts[0] + Duration::from_millis(30) >= due,
            "{starts:?}"
        );
    }
}

#[test]
fn an_unset_key_variable_is_a_config_error_naming_it() {
    let model = model(ModelFormat::Anthropic, "https://api.anthropic.com");
    let error = HttpEndpoint::with_env(&model, |_| None).unwrap_err();
    assert_eq!(error.kind(), EndpointErrorKind::Config);
    assert!(error.message().contains("`EVAL_TEST_KEY`"), "{error}");
    let error = HttpEndpoint::with_env(&model, |_| Some("  ".into())).unwrap_err();
    assert_eq!(error.kind(), EndpointErrorKind::Config);
    let error = HttpEndpoint::with_env(&model, |_| Some(format!("{KEY}\n"))).unwrap_err();
    assert_eq!(error.kind(), EndpointErrorKind::Config);
    assert!(!error.message().contains(KEY), "{error}");
    // The endpoint's debug form names its URL, never the key.
    let endpoint = endpoint(&model);
    let debug = format!("{endpoint:?}");
    assert!(
        debug.contains("https://api.anthropic.com/v1/messages"),
        "{debug}"
    );
    assert!(!debug.contains(KEY), "{debug}");
}

type Change = Box<dyn Fn(&mut Model)>;

#[test]
fn bad_settings_are_config_errors() {
    let good = model(ModelFormat::OpenaiChat, "https://api.openai.com/v1");
    let bad: [(&str, Change); 6] = [
        (
            "not a URL",
            Box::new(|m| m.base_url = "api.openai.com".into()),
        ),
        ("ftp", Box::new(|m| m.base_url = "ftp://host/v1".into())),
        (
            "credentials",
            Box::new(|m| m.base_url = format!("https://user:{KEY}@host/v1")),
        ),
        ("concurrency", Box::new(|m| m.max_concurrency = 0)),
        ("rate", Box::new(|m| m.requests_per_minute = Some(0))),
        ("timeout", Box::new(|m| m.timeout_seconds = 0)),
    ];
    for (what, change) in bad {
        let mut model = good.clone();
        change(&mut model);
        let error = HttpEndpoint::with_env(&model, |_| Some(KEY.into())).unwrap_err();
        assert_eq!(error.kind(), EndpointErrorKind::Config, "{what}");
        assert!(!error.message().contains(KEY), "{what}: {error}");
    }
    let mut gemini = model(
        ModelFormat::Gemini,
        "https://generativelanguage.googleapis.com/v1beta",
    );
    gemini.model = "models/../x".into();
    let error = HttpEndpoint::with_env(&gemini, |_| Some(KEY.into())).unwrap_err();
    assert_eq!(error.kind(), EndpointErrorKind::Config);
}
