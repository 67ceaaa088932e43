//! The eval model connectors: one HTTP endpoint per suite model.
//!
//! [`HttpEndpoint`] implements [`promptstack_eval::endpoint::Endpoint`] over HTTP for the four
//! request formats a suite names. It posts the body it is given byte for byte, reads the
//! streamed answer whole (bounded by [`MAX_RECORDING_BYTES`]) and keeps the endpoint's limits:
//!
//! | format             | URL                                                      | key header                |
//! |--------------------|----------------------------------------------------------|---------------------------|
//! | `openai-chat`      | `{base_url}/chat/completions`                            | `Authorization: Bearer …` |
//! | `openai-responses` | `{base_url}/responses`                                   | `Authorization: Bearer …` |
//! | `anthropic`        | `{base_url}/v1/messages` (+ `anthropic-version`)         | `x-api-key`               |
//! | `gemini`           | `{base_url}/models/{model}:streamGenerateContent?alt=sse` | `x-goog-api-key`          |
//!
//! - **Retries**: a 429, a 5xx (529 included), an Anthropic `overloaded_error` as the first
//!   event of a 200 stream, and a connection that failed or broke are tried again, at most
//!   `retries` times, after `Retry-After` (seconds or an HTTP date; `retry-after-ms` too), capped
//!   at [`MAX_RETRY_AFTER`], or else after an exponential backoff with full jitter (base
//!   [`BACKOFF_BASE`], cap [`BACKOFF_CAP`]). When every retry met a retryable status the call
//!   fails with [`EndpointErrorKind::Exhausted`], naming the last status with an excerpt of its
//!   body. Any other status (a 400, a 401, a redirect: redirects are never followed, so a key
//!   never travels to another host) comes back as a [`Reply`] with that status.
//! - **Limits**: at most `max_concurrency` calls in flight (a call holds its place through its
//!   retries); with `requests_per_minute`, attempts start evenly spaced, `60 s / rpm` apart.
//! - **Timeouts**: each attempt, from sending the request to the last byte of the answer, has
//!   `timeout_seconds`; a timed-out attempt fails the call with
//!   [`EndpointErrorKind::Timeout`] (not retried: a model that is slow once is slow again).
//! - **Secrets**: the key is read once from the variable `api_key_env` names, travels only in a
//!   header marked sensitive, and is never in a message, a `Debug` output or a URL; an error
//!   body that echoes it has it replaced by `[redacted]`.
//!
//! Time is tokio's clock, so a test can pause it.

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use promptstack_eval::endpoint::{
    Call, Endpoint, EndpointError, EndpointErrorKind, Reply, ReplyFuture,
};
use promptstack_eval::record::MAX_RECORDING_BYTES;
use promptstack_eval::suite::{Model, ModelFormat};
use promptstack_eval::wire::{Event, SseDecoder};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// The first backoff ceiling; the n-th retry waits a random time up to `BACKOFF_BASE × 2ⁿ`.
pub const BACKOFF_BASE: Duration = Duration::from_millis(500);

/// The largest backoff ceiling.
pub const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// The longest wait a `Retry-After` header is honoured for; a longer one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// The longest excerpt of an error body kept in a message, in characters.
const EXCERPT_CHARS: usize = 300;

/// The `anthropic-version` header sent to Anthropic.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// An HTTP model endpoint: one per suite model, shared by every call to it.
pub struct HttpEndpoint {
    client: reqwest::Client,
    format: ModelFormat,
    url: reqwest::Url,
    /// The URL as messages show it: no query, no credentials.
    shown: String,
    headers: HeaderMap,
    /// The key, only to redact it from error bodies.
    key: Option<String>,
    in_flight: Semaphore,
    pace: Option<Pace>,
    timeout: Duration,
    retries: u32,
}

impl fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEndpoint")
            .field("format", &self.format)
            .field("url", &self.shown)
            .field("key", &self.key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

/// Evenly spaced starts: the earliest time the next attempt may start.
#[derive(Debug)]
struct Pace {
    interval: Duration,
    next: Mutex<Option<Instant>>,
}

impl Pace {
    async fn wait(&self) {
        let at = {
            let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let at = next.map_or(now, |next| next.max(now));
            *next = Some(at + self.interval);
            at
        };
        tokio::time::sleep_until(at).await;
    }
}

fn config(message: impl Into<String>) -> EndpointError {
    EndpointError::new(EndpointErrorKind::Config, message)
}

impl HttpEndpoint {
    /// The endpoint of `model`, its key read from the environment variable `api_key_env` names.
    ///
    /// # Errors
    ///
    /// [`EndpointErrorKind::Config`]: the variable is not set (the message names the variable,
    /// never a value), the base URL is not an http(s) URL or carries credentials, or a limit is
    /// zero.
    pub fn new(model: &Model) -> Result<HttpEndpoint, EndpointError> {
        Self::with_env(model, |name| std::env::var(name).ok())
    }

    /// The endpoint of `model`, reading variables through `env` (for tests).
    ///
    /// # Errors
    ///
    /// As [`HttpEndpoint::new`].
    pub fn with_env(
        model: &Model,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<HttpEndpoint, EndpointError> {
        let key = match &model.api_key_env {
            None => None,
            Some(var) => match env(var) {
                None => {
                    return Err(config(format!(
                        "the environment variable `{var}` (the model's `api_key_env`) is not set"
                    )));
                }
                Some(value) if value.trim().is_empty() => {
                    return Err(config(format!(
                        "the environment variable `{var}` (the model's `api_key_env`) is empty"
                    )));
                }
                Some(value) => Some((format!("`{var}`"), value)),
            },
        };
        Self::with_key(model, key)
    }

    /// The endpoint of `model` with its key given rather than read: `key` is where the key came
    /// from, as messages name it (`` `ANTHROPIC_API_KEY` ``, `credential anthropic`), and the key.
    /// The model's `api_key_env` is not read.
    ///
    /// # Errors
    ///
    /// [`EndpointErrorKind::Config`]: the key holds characters a header cannot carry, the base
    /// URL is not an http(s) URL or carries credentials, or a limit is zero.
    pub fn with_key(
        model: &Model,
        key: Option<(String, String)>,
    ) -> Result<HttpEndpoint, EndpointError> {
        if model.max_concurrency == 0 {
            return Err(config("`max_concurrency` is 0; it must be at least 1"));
        }
        if model.requests_per_minute == Some(0) {
            return Err(config("`requests_per_minute` is 0; it must be at least 1"));
        }
        if model.timeout_seconds == 0 {
            return Err(config("`timeout_seconds` is 0; it must be at least 1"));
        }
        let (url, shown) = endpoint_url(model)?;

        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if model.format == ModelFormat::Anthropic {
            headers.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        if let Some((var, value)) = &key {
            let (name, value) = match model.format {
                ModelFormat::OpenaiChat | ModelFormat::OpenaiResponses => {
                    (reqwest::header::AUTHORIZATION, format!("Bearer {value}"))
                }
                ModelFormat::Anthropic => (HeaderName::from_static("x-api-key"), value.clone()),
                ModelFormat::Gemini => (HeaderName::from_static("x-goog-api-key"), value.clone()),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                config(format!(
                    "the key in {var} holds characters a header cannot carry"
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }

        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| config(format!("the HTTP client could not be built: {e}")))?;
        let pace = model.requests_per_minute.map(|rpm| Pace {
            interval: Duration::from_secs(60) / rpm,
            next: Mutex::new(None),
        });
        Ok(HttpEndpoint {
            client,
            format: model.format,
            url,
            shown,
            headers,
            key: key.map(|(_, value)| value),
            in_flight: Semaphore::new(model.max_concurrency as usize),
            pace,
            timeout: Duration::from_secs(u64::from(model.timeout_seconds)),
            retries: model.retries,
        })
    }

    async fn call(&self, call: Call<'_>) -> Result<Reply, EndpointError> {
        let body = serde_json::to_vec(call.body).map_err(|e| {
            EndpointError::new(
                EndpointErrorKind::Config,
                format!("the request body could not be written: {e}"),
            )
        })?;
        let _place = self.in_flight.acquire().await.map_err(|_| {
            EndpointError::new(EndpointErrorKind::Config, "the endpoint was closed")
        })?;
        let mut first_start: Option<Instant> = None;
        let mut attempts: u32 = 0;
        loop {
            if let Some(pace) = &self.pace {
                pace.wait().await;
            }
            let start = Instant::now();
            let first_start = *first_start.get_or_insert(start);
            attempts += 1;
            let retry_left = attempts <= self.retries;
            let outcome = match tokio::time::timeout(self.timeout, self.attempt(&body, start)).await
            {
                Ok(outcome) => outcome,
                Err(_) => {
                    return Err(EndpointError::new(
                        EndpointErrorKind::Timeout,
                        format!(
                            "POST {}: no whole answer within {} s (attempt {attempts})",
                            self.shown,
                            self.timeout.as_secs()
                        ),
                    ));
                }
            };
            let answer = match outcome {
                Ok(answer) => answer,
                Err(Failure::Fatal(error)) => return Err(error),
                Err(Failure::Connect(why)) => {
                    if retry_left {
                        tokio::time::sleep(backoff(attempts - 1)).await;
                        continue;
                    }
                    return Err(EndpointError::new(
                        EndpointErrorKind::Connect,
                        format!("POST {}: {why} (after {})", self.shown, count(attempts)),
                    ));
                }
            };
            let retryable = match answer.status {
                429 | 500..=599 => Some(format!("HTTP {}", answer.status)),
                200 if self.format == ModelFormat::Anthropic && overloaded(&answer.body) => {
                    Some("HTTP 200 with an overloaded_error event".to_owned())
                }
                _ => None,
            };
            if let Some(what) = retryable {
                if retry_left {
                    let wait = answer.retry_after.unwrap_or_else(|| backoff(attempts - 1));
                    tokio::time::sleep(wait).await;
                    continue;
                }
                return Err(EndpointError::new(
                    EndpointErrorKind::Exhausted,
                    format!(
                        "POST {}: {what} after {}: {}",
                        self.shown,
                        count(attempts),
                        self.excerpt(&answer.body)
                    ),
                ));
            }
            let body = if (200..300).contains(&answer.status) {
                answer.body
            } else {
                self.redact(answer.body)
            };
            return Ok(Reply {
                status: answer.status,
                body,
                first_byte: answer.first_byte,
                elapsed: first_start.elapsed(),
                attempts,
            });
        }
    }

    /// One attempt: the request sent and its answer read whole.
    async fn attempt(&self, body: &[u8], start: Instant) -> Result<Answered, Failure> {
        let mut response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| Failure::Connect(describe(&e, "the request could not be sent")))?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let too_large = || {
            Failure::Fatal(EndpointError::new(
                EndpointErrorKind::TooLarge,
                format!(
                    "POST {}: the answer is larger than {MAX_RECORDING_BYTES} bytes",
                    self.shown
                ),
            ))
        };
        if response
            .content_length()
            .is_some_and(|length| length > MAX_RECORDING_BYTES)
        {
            return Err(too_large());
        }
        let mut out = Vec::new();
        let mut first_byte = None;
        loop {
            match response.chunk().await {
                Ok(Some(bytes)) => {
                    if bytes.is_empty() {
                        continue;
                    }
                    first_byte.get_or_insert_with(|| start.elapsed());
                    if (out.len() + bytes.len()) as u64 > MAX_RECORDING_BYTES {
                        return Err(too_large());
                    }
                    out.extend_from_slice(&bytes);
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(Failure::Connect(describe(
                        &e,
                        "the connection broke while the answer was read",
                    )));
                }
            }
        }
        Ok(Answered {
            status,
            body: out,
            first_byte,
            retry_after,
        })
    }

    /// `body` with every occurrence of the key replaced by `[redacted]`.
    fn redact(&self, body: Vec<u8>) -> Vec<u8> {
        let Some(key) = self.key.as_deref().map(str::as_bytes) else {
            return body;
        };
        if key.is_empty() || body.len() < key.len() {
            return body;
        }
        let mut out = Vec::with_capacity(body.len());
        let mut at = 0;
        while at < body.len() {
            if body[at..].starts_with(key) {
                out.extend_from_slice(b"[redacted]");
                at += key.len();
            } else {
                out.push(body[at]);
                at += 1;
            }
        }
        out
    }

    /// The start of an error body, on one line, without the key.
    fn excerpt(&self, body: &[u8]) -> String {
        let head = &body[..body.len().min(EXCERPT_CHARS * 4)];
        let text = String::from_utf8_lossy(&self.redact(head.to_vec())).into_owned();
        let mut excerpt: String = text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(EXCERPT_CHARS)
            .collect();
        if excerpt.is_empty() {
            excerpt.push_str("(empty body)");
        }
        excerpt
    }
}

impl Endpoint for HttpEndpoint {
    fn exchange<'a>(&'a self, call: Call<'a>) -> ReplyFuture<'a> {
        Box::pin(self.call(call))
    }
}

/// What one attempt read.
struct Answered {
    status: u16,
    body: Vec<u8>,
    first_byte: Option<Duration>,
    retry_after: Option<Duration>,
}

/// Why one attempt read nothing.
enum Failure {
    /// Not connected, or the connection broke: tried again.
    Connect(String),
    /// Not tried again.
    Fatal(EndpointError),
}

/// The URL a model's requests go to, and the same URL as messages show it.
fn endpoint_url(model: &Model) -> Result<(reqwest::Url, String), EndpointError> {
    let mut url = reqwest::Url::parse(model.base_url.trim()).map_err(|e| {
        config(format!(
            "`base_url` is not a URL ({e}): `{}`",
            clip(&model.base_url)
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(config(format!(
            "`base_url` is not an http or https URL: `{}`",
            clip(&model.base_url)
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(config(
            "`base_url` carries credentials; name the variable that holds the key in `api_key_env`",
        ));
    }
    url.set_fragment(None);
    let suffix = match model.format {
        ModelFormat::OpenaiChat => vec!["chat".to_owned(), "completions".to_owned()],
        ModelFormat::OpenaiResponses => vec!["responses".to_owned()],
        ModelFormat::Anthropic => vec!["v1".to_owned(), "messages".to_owned()],
        ModelFormat::Gemini => {
            // The name as Gemini's SDKs take it, with or without its `models/` prefix.
            let name = model.model.trim();
            let name = name.strip_prefix("models/").unwrap_or(name);
            if name.is_empty() || name.contains('/') {
                return Err(config(format!(
                    "the Gemini model name `{}` is not one path segment",
                    clip(&model.model)
                )));
            }
            vec!["models".to_owned(), format!("{name}:streamGenerateContent")]
        }
    };
    {
        let mut segments = url
            .path_segments_mut()
            .map_err(|()| config("`base_url` cannot take a path"))?;
        segments.pop_if_empty();
        for segment in &suffix {
            segments.push(segment);
        }
    }
    if model.format == ModelFormat::Gemini {
        url.query_pairs_mut().append_pair("alt", "sse");
    }
    let mut shown = url.clone();
    shown.set_query(None);
    Ok((url, shown.to_string()))
}

/// `n attempts`, or `1 attempt`.
fn count(attempts: u32) -> String {
    if attempts == 1 {
        "1 attempt".to_owned()
    } else {
        format!("{attempts} attempts")
    }
}

/// A text cut to 100 characters, for messages.
fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(100).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// A transport error as a message: its chain of causes, without the URL (shown by the caller).
fn describe(error: &reqwest::Error, what: &str) -> String {
    let mut message = what.to_owned();
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    let mut seen = 0;
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&clip(&cause.to_string()));
        source = cause.source();
        seen += 1;
        if seen == 4 {
            break;
        }
    }
    if error.is_timeout() {
        message.push_str(" (timed out)");
    }
    message
}

/// The wait a `retry-after-ms` or `Retry-After` header asks for, capped at [`MAX_RETRY_AFTER`].
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let wait = if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<u64>().ok()) {
        Duration::from_millis(ms)
    } else {
        let value = text("retry-after")?;
        if let Ok(seconds) = value.parse::<u64>() {
            Duration::from_secs(seconds)
        } else {
            let at = jiff::fmt::rfc2822::DateTimeParser::new()
                .parse_timestamp(value)
                .ok()?;
            let now = jiff::Timestamp::now();
            let ahead = at.duration_since(now);
            Duration::try_from(ahead).unwrap_or(Duration::ZERO)
        }
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// The wait before retry `n` (0 for the first): uniform in `[0, min(cap, base × 2ⁿ)]`.
fn backoff(n: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1u32.checked_shl(n.min(16)).unwrap_or(u32::MAX))
        .min(BACKOFF_CAP);
    let draw = getrandom::u64().unwrap_or(u64::MAX / 2);
    let fraction = (draw >> 11) as f64 / (1u64 << 53) as f64;
    ceiling.mul_f64(fraction)
}

/// Whether an Anthropic stream opens with an `overloaded_error` event.
fn overloaded(body: &[u8]) -> bool {
    let mut decoder = SseDecoder::new();
    let mut events: Vec<Event> = Vec::new();
    for piece in body.chunks(4096) {
        if decoder.feed(piece, &mut events).is_err() {
            return false;
        }
        if let Some(first) = events.first() {
            if first.name != "error" && !first.data.contains("\"error\"") {
                return false;
            }
            let Ok(data) = serde_json::from_str::<serde_json::Value>(&first.data) else {
                return false;
            };
            return data
                .get("error")
                .and_then(|e| e.get("type"))
                .and_then(|t| t.as_str())
                == Some("overloaded_error");
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_in_seconds_in_milliseconds_and_as_a_date() {
        let wait = |pairs: &[(&'static str, &str)]| retry_after(&headers(pairs));
        assert_eq!(wait(&[]), None);
        assert_eq!(wait(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(wait(&[("retry-after", " 0 ")]), Some(Duration::ZERO));
        assert_eq!(
            wait(&[("retry-after", "7"), ("retry-after-ms", "1500")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(wait(&[("retry-after", "86400")]), Some(MAX_RETRY_AFTER));
        assert_eq!(wait(&[("retry-after", "soon")]), None);
        assert_eq!(wait(&[("retry-after", "-3")]), None);

        let printer = jiff::fmt::rfc2822::DateTimePrinter::new();
        let date = |ahead: i64| {
            let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(ahead);
            printer.timestamp_to_rfc9110_string(&at).unwrap()
        };
        let ahead = wait(&[("retry-after", &date(60))]).unwrap();
        assert!(
            ahead > Duration::from_secs(57) && ahead <= Duration::from_secs(60),
            "{ahead:?}"
        );
        assert_eq!(wait(&[("retry-after", &date(-60))]), Some(Duration::ZERO));
        assert_eq!(wait(&[("retry-after", &date(3600))]), Some(MAX_RETRY_AFTER));
        assert_eq!(
            wait(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn backoff_is_full_jitter_under_a_doubling_capped_ceiling() {
        for n in 0..40 {
            let ceiling = (BACKOFF_BASE * 2u32.saturating_pow(n.min(20))).min(BACKOFF_CAP);
            let waits: Vec<Duration> = (0..50).map(|_| backoff(n)).collect();
            assert!(waits.iter().all(|w| *w <= ceiling), "{n}: {waits:?}");
            // Jittered: fifty draws are not all the same.
            assert!(waits.iter().any(|w| *w != waits[0]), "{n}: {waits:?}");
        }
    }

    #[test]
    fn only_an_opening_overloaded_error_is_an_overload() {
        let event = b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        assert!(overloaded(event));
        let other = b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\"}}\n\n";
        assert!(!overloaded(other));
        let mut later = b"event: message_start\ndata: {\"type\":\"message_start\"}\n\n".to_vec();
        later.extend_from_slice(event);
        assert!(!overloaded(&later));
        assert!(!overloaded(b""));
        assert!(!overloaded(b"event: error\ndata: {not json\n\n"));
    }

    #[test]
    fn urls_per_format() {
        let model = |format, base: &str, name: &str| Model {
            format,
            base_url: base.into(),
            model: name.into(),
            tier: None,
            api_key_env: None,
            credential: None,
            max_concurrency: 1,
            requests_per_minute: None,
            timeout_seconds: 1,
            retries: 0,
        };
        let url = |format, base: &str, name: &str| {
            let (url, shown) = endpoint_url(&model(format, base, name)).unwrap();
            (url.to_string(), shown)
        };
        assert_eq!(
            url(ModelFormat::OpenaiChat, "http://127.0.0.1:8080/v1/", "x").0,
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        assert_eq!(
            url(ModelFormat::Anthropic, "https://api.anthropic.com", "x").0,
            "https://api.anthropic.com/v1/messages"
        );
        let (gemini, shown) = url(
            ModelFormat::Gemini,
            "https://generativelanguage.googleapis.com/v1beta?tenant=a#f",
            "models/gemini 2.5",
        );
        assert_eq!(
            gemini,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini%202.5:streamGenerateContent?tenant=a&alt=sse"
        );
        assert_eq!(
            shown,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini%202.5:streamGenerateContent"
        );
    }
}
