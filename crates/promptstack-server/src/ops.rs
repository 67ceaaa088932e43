//! The endpoints that need no version: health, readiness, metrics, the OpenAPI document, the
//! fence and the citation stream.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::StreamExt as _;
use promptstack::command::{self, CiteRequest, FenceRequest, FenceResult};
use promptstack::stream::{Processor, SourceSnapshot};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::auth::Auth;
use crate::problem::{Problem, json_rejection};
use crate::state::AppState;

/// `GET /healthz`: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "Alive", body = String, content_type = "text/plain")))]
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// `GET /readyz`: the store answers.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, description = "Ready", body = String, content_type = "text/plain"),
        (status = 503, body = Problem, content_type = "application/problem+json")))]
pub async fn readyz(State(state): State<AppState>) -> Result<&'static str, Problem> {
    /// How long a ping's answer is reused, so that probes cannot load the store.
    const REUSE_FOR: Duration = Duration::from_secs(1);
    let lock = || state.inner.ready.lock().unwrap_or_else(|e| e.into_inner());
    let reused = lock()
        .as_ref()
        .filter(|(at, _)| at.elapsed() < REUSE_FOR)
        .map(|(_, answer)| answer.clone());
    let answer = match reused {
        Some(answer) => answer,
        None => {
            let answer = state.inner.store.ping().await.map_err(|error| {
                state
                    .inner
                    .metrics
                    .store_errors
                    .fetch_add(1, Ordering::Relaxed);
                error.to_string()
            });
            *lock() = Some((tokio::time::Instant::now(), answer.clone()));
            answer
        }
    };
    answer
        .map(|()| "ready\n")
        .map_err(|error| Problem::unavailable(format!("the store cannot be reached: {error}")))
}

/// `GET /metrics`: Prometheus text.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text exposition", body = String, content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> Response {
    let inner = &state.inner;
    let (hits, misses) = inner.compiled.fold((0, 0), |(h, m), compiled| {
        let stats = compiled.agent.cache_stats();
        (h + stats.stable_hits, m + stats.stable_misses)
    });
    let text = inner.metrics.render(hits, misses, inner.compiled.len());
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}

/// `GET /openapi.json`: this API's OpenAPI document, generated from the handlers' types, with
/// the bounds this server was started with.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object)))]
pub async fn openapi(Extension(document): Extension<Arc<serde_json::Value>>) -> Response {
    Json(&*document).into_response()
}

/// `POST /v1/fence`: wrap untrusted text in a fence (as `promptstack fence`), or check one.
#[utoipa::path(post, path = "/v1/fence", tag = "render",
    request_body = crate::contract::FenceRequestSchema,
    responses((status = 200, body = FenceResult), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn fence(
    _auth: Auth,
    body: Result<Json<FenceRequest>, JsonRejection>,
) -> Result<Json<FenceResult>, Problem> {
    let Json(body) = body.map_err(json_rejection)?;
    Ok(Json(command::fence(&body)?))
}

/// The first line of a `cite` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CiteHeader {
    /// The sources the model may cite: `{"sources": [{"index", "url", "title"}]}`.
    #[schema(value_type = Object)]
    pub sources: SourceSnapshot,
    /// `links` (default): citations become Markdown links. `placeholders` is refused (422):
    /// its citation map cannot be returned over this endpoint (use `promptstack cite --json`).
    #[serde(default)]
    pub mode: CiteMode,
    /// Must be empty (422 otherwise): the widgets found could not be returned, and silently
    /// dropping them would lose content (use `promptstack cite --json`).
    #[serde(default)]
    pub widgets: Vec<String>,
}

/// How citations are written.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CiteMode {
    /// Placeholders with a citation map (refused over HTTP).
    Placeholders,
    /// Markdown links.
    #[default]
    Links,
}

/// `POST /v1/cite`: streams the model's text through the citation and math processor. The body
/// is one line of JSON ([`CiteHeader`]) and then the model's text, chunked as it arrives; the
/// answer is the processed text, flushed per chunk.
#[utoipa::path(post, path = "/v1/cite", tag = "render",
    request_body(content = crate::contract::CiteBodySchema, content_type = "text/plain", description = "A CiteHeader JSON line, then the model's text"),
    responses((status = 200, description = "The processed text, streamed", body = String, content_type = "text/plain"),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn cite(
    State(state): State<AppState>,
    _auth: Auth,
    body: Body,
) -> Result<Response, Problem> {
    let config = &state.inner.config;
    let permit = Arc::clone(&state.inner.streams)
        .try_acquire_owned()
        .map_err(|_| {
            let mut problem = Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too-many-streams",
                format!(
                    "{} streams are running, the most this server runs at once",
                    config.max_streams
                ),
            );
            problem.retry_after = Some(1);
            problem
        })?;
    let max_header = config.max_body_bytes;
    let limits = config.limits.clone();
    let bounds = StreamBounds {
        idle: config.stream_idle_timeout,
        bytes: config.max_stream_bytes,
        deadline: tokio::time::Instant::now() + config.max_stream_duration,
    };
    let mut stream = body.into_data_stream();
    let mut head = Vec::new();
    let rest = loop {
        let Some(chunk) = bounds.next(&mut stream).await? else {
            return Err(Problem::bad_request(
                "the body must start with one line of JSON (the sources) ended by a newline",
            ));
        };
        match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => {
                head.extend_from_slice(&chunk[..at]);
                break chunk.slice(at + 1..);
            }
            None => head.extend_from_slice(&chunk),
        }
        if head.len() > max_header {
            return Err(Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too-large",
                format!("the first line (the sources) is longer than {max_header} bytes"),
            ));
        }
    };
    if head.len() > max_header {
        return Err(Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            format!("the first line (the sources) is longer than {max_header} bytes"),
        ));
    }
    let header: CiteHeader = serde_json::from_slice(&head)
        .map_err(|e| Problem::unprocessable("invalid-body", format!("the first line: {e}")))?;
    if !header.widgets.is_empty() {
        return Err(Problem::unprocessable(
            "invalid-body",
            "the first line: `widgets` is not offered over HTTP: the widgets found cannot be \
             returned (use `promptstack cite --widgets … --json`)",
        ));
    }
    if let CiteMode::Placeholders = header.mode {
        return Err(Problem::unprocessable(
            "invalid-body",
            "the first line: `mode: placeholders` is not offered over HTTP: its citation map \
             cannot be returned (use `\"mode\": \"links\"`, or `promptstack cite --json`)",
        ));
    }
    // No widgets, and the runs taken after every chunk: neither could be returned.
    let request = CiteRequest {
        sources: header.sources,
        mode: command::CiteMode::Links,
        ..CiteRequest::default()
    };
    let processor = command::cite(&request, &limits)?;
    let read = head.len() as u64 + 1 + rest.len() as u64;
    let state = CiteState {
        processor,
        stream,
        first: Some(rest),
        read,
        bounds,
        done: false,
        _permit: permit,
    };
    let output = futures::stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        let mut out = String::new();
        let next = match st.first.take() {
            Some(first) => Ok(Some(first)),
            None => st.bounds.next(&mut st.stream).await,
        };
        match next {
            Ok(Some(chunk)) => {
                st.read += chunk.len() as u64;
                if st.read > st.bounds.bytes {
                    st.done = true;
                    let error = std::io::Error::other(format!(
                        "the body is longer than {} bytes, the most a stream may carry",
                        st.bounds.bytes
                    ));
                    return Some((Err(error), st));
                }
                st.processor.push_bytes_into(&chunk, &mut out);
            }
            Ok(None) => {
                st.processor.finish_into(&mut out);
                st.done = true;
            }
            Err(problem) => {
                st.done = true;
                return Some((Err(std::io::Error::other(problem.detail)), st));
            }
        }
        // Neither is offered over HTTP (see `CiteHeader`); nothing is kept between chunks.
        st.processor.take_widgets();
        st.processor.take_citations();
        if let Some(overflow) = st.processor.overflow() {
            let error = std::io::Error::other(format!(
                "at byte {}: a limit of the citation processor was passed",
                overflow.at
            ));
            st.done = true;
            return Some((Err(error), st));
        }
        Some((Ok(Bytes::from(out)), st))
    });
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        Body::from_stream(output),
    )
        .into_response())
}

/// What a streamed body may take: the wait for each chunk, its bytes, and when it must end.
#[derive(Clone, Copy)]
struct StreamBounds {
    idle: Duration,
    bytes: u64,
    deadline: tokio::time::Instant,
}

impl StreamBounds {
    /// The next chunk; a problem when it does not come within the idle wait or the deadline,
    /// or when reading fails.
    async fn next(
        &self,
        stream: &mut axum::body::BodyDataStream,
    ) -> Result<Option<Bytes>, Problem> {
        let wait = tokio::time::Instant::now() + self.idle;
        let (until, why) = if wait < self.deadline {
            (
                wait,
                format!("no data came for {} ms", self.idle.as_millis()),
            )
        } else {
            (
                self.deadline,
                "the stream lasted longer than it may".to_owned(),
            )
        };
        match tokio::time::timeout_at(until, stream.next()).await {
            Ok(Some(Ok(chunk))) => Ok(Some(chunk)),
            Ok(Some(Err(e))) => Err(Problem::bad_request(format!(
                "reading the body failed: {e}"
            ))),
            Ok(None) => Ok(None),
            Err(_) => Err(Problem::new(StatusCode::REQUEST_TIMEOUT, "timeout", why)),
        }
    }
}

/// The state of one cite stream; the permit is held until the stream is dropped.
struct CiteState {
    processor: Processor,
    stream: axum::body::BodyDataStream,
    first: Option<Bytes>,
    read: u64,
    bounds: StreamBounds,
    done: bool,
    _permit: tokio::sync::OwnedSemaphorePermit,
}
