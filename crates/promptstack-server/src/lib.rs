//! promptstack over HTTP: versioned agents, labels, tenant settings and every engine operation,
//! on the promptstack store.
//!
//! ```text
//! router(AppState) ─► /v1/agents/{name}/versions   publish (compile + lint + cache impact), list, get
//!                    /v1/agents/{name}/labels      list, move (production: admins; audited)
//!                    /v1/settings, …/settings      tenant instructions, agent overrides (admins write)
//!                    /v1/audit                     who moved what, when (admins)
//!                    /v1/credentials/{name}        provider credentials, sealed (admins; audited)
//!                    /v1/agents/{name}/evals       eval runs: start, read, cancel, compare (see `evals`)
//!                    /v1/agents/{name}/render|request|explain|tools|diff|lint
//!                    /v1/fence, /v1/cite (streamed)
//!                    /healthz /readyz /metrics /openapi.json
//!                    / and /inspector/*, /v1/me, …/cache-sim   the inspector's page and its needs
//! ```
//!
//! Every answer of a render-like endpoint names the agent, version, label, fingerprint and
//! provider rules version, in its body and in `promptstack-*` headers. Errors are
//! `application/problem+json`. See `docs/server.md`.

mod answer;
mod api;
mod auth;
pub mod bundle;
mod config;
mod contract;
mod credentials;
mod engine;
mod evals;
mod examples;
mod inspector;
mod metrics;
mod ops;
mod page;
mod problem;
mod render;
mod settings;
mod state;

use std::future::IntoFuture as _;
use std::sync::Arc;
use std::time::Instant;

use axum::Extension;
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use utoipa::OpenApi as _;

pub use bundle::{BUNDLE_MEDIA_TYPE, Bundle, BundleFormat};
pub use config::{EvalConfig, ServerConfig};
pub use examples::{FolderError, publish_to_production};
pub use problem::{PROBLEM_JSON, Problem};
pub use state::AppState;

/// The OpenAPI document of every route [`router`] serves.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(title = "promptstack", description = "Versioned agents, tenant settings and every engine operation over HTTP."),
    paths(
        api::list_agents, api::publish, api::list_versions, api::get_version,
        api::list_labels, api::move_label,
        api::get_tenant_settings, api::put_tenant_settings,
        api::get_agent_settings, api::put_agent_settings, api::audit,
        credentials::put_credential, credentials::list_credentials, credentials::delete_credential,
        evals::create_run, evals::list_runs, evals::get_run, evals::get_cell, evals::cancel_run,
        evals::compare_versions,
        render::render, render::request, render::explain, render::tools, render::diff, render::lint,
        ops::fence, ops::cite, ops::healthz, ops::readyz, ops::metrics, ops::openapi,
        inspector::me, inspector::cache_sim,
    ),
    modifiers(&Security),
)]
struct ApiDoc;

struct Security;

impl utoipa::Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        utoipa::Modify::modify(&contract::Unavailable, openapi);
    }
}

/// The OpenAPI document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The OpenAPI document as this server serves it: [`openapi`], whose bounds are the
/// default limits, with the bounds of `limits` in their place.
pub(crate) fn served(limits: &promptstack::limits::Limits) -> serde_json::Value {
    let mut document = serde_json::to_value(openapi()).unwrap_or_default();
    let turns = limits.get(promptstack::limits::Limit::SimTurns);
    if let Some(serde_json::Value::Object(schema)) =
        document.pointer_mut("/components/schemas/CacheSimRequest/properties/turns")
    {
        schema.insert("maximum".to_owned(), turns.into());
    }
    document
}

/// The server's routes over `state`, with the body limit, the request timeout and the metrics
/// around every one. Serve it with [`serve`] or any axum server.
pub fn router(state: AppState) -> Router {
    let max_body = state.inner.config.max_body_bytes;
    let document = served(&state.inner.config.limits);
    Router::new()
        .route("/v1/agents", get(api::list_agents))
        .route(
            "/v1/agents/{name}/versions",
            post(api::publish).get(api::list_versions),
        )
        .route(
            "/v1/agents/{name}/versions/{version}",
            get(api::get_version),
        )
        .route("/v1/agents/{name}/labels", get(api::list_labels))
        .route("/v1/agents/{name}/labels/{label}", put(api::move_label))
        .route(
            "/v1/settings",
            get(api::get_tenant_settings).put(api::put_tenant_settings),
        )
        .route(
            "/v1/agents/{name}/settings",
            get(api::get_agent_settings).put(api::put_agent_settings),
        )
        .route("/v1/audit", get(api::audit))
        .route("/v1/credentials", get(credentials::list_credentials))
        .route(
            "/v1/credentials/{name}",
            put(credentials::put_credential).delete(credentials::delete_credential),
        )
        .route(
            "/v1/agents/{name}/evals",
            post(evals::create_run).get(evals::list_runs),
        )
        .route(
            "/v1/agents/{name}/evals/compare",
            get(evals::compare_versions),
        )
        .route(
            "/v1/agents/{name}/evals/{run}",
            get(evals::get_run).delete(evals::cancel_run),
        )
        .route(
            "/v1/agents/{name}/evals/{run}/cells/{index}",
            get(evals::get_cell),
        )
        .route("/v1/agents/{name}/render", post(render::render))
        .route("/v1/agents/{name}/request", post(render::request))
        .route("/v1/agents/{name}/explain", post(render::explain))
        .route("/v1/agents/{name}/tools", post(render::tools))
        .route("/v1/agents/{name}/diff", post(render::diff))
        .route("/v1/agents/{name}/lint", post(render::lint))
        .route("/v1/fence", post(ops::fence))
        .route("/v1/cite", post(ops::cite))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route(
            "/openapi.json",
            get(ops::openapi).layer(Extension(Arc::new(document))),
        )
        // The inspector: its page, who a key is, and the cache simulation it charts.
        .route("/", get(inspector::index))
        .route("/inspector/{*path}", get(inspector::asset))
        .route("/v1/me", get(inspector::me))
        .route("/v1/agents/{name}/cache-sim", post(inspector::cache_sim))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(middleware::from_fn_with_state(state.clone(), bounded_body))
        .layer(middleware::from_fn_with_state(state.clone(), around))
        .with_state(state)
}

async fn not_found() -> Problem {
    Problem::not_found("no such route")
}

async fn method_not_allowed() -> Problem {
    Problem::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this route does not take this method",
    )
}

/// Times every request out, and counts it under its route template.
async fn around(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let timeout = state.inner.config.request_timeout;
    let response =
        match tokio::time::timeout(timeout, engine::with_tenant_slot(next.run(request))).await {
            Ok(response) => response,
            Err(_) => Problem::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "timeout",
                format!("the request took longer than {} ms", timeout.as_millis()),
            )
            .into_response(),
        };
    state.inner.metrics.record(
        route.as_ref().map_or("unmatched", MatchedPath::as_str),
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// The route whose body is a stream with bounds of its own (`ServerConfig::max_stream_bytes`).
const STREAMED_ROUTE: &str = "/v1/cite";

/// The most bytes of a body over the limit read and thrown away after the 413 answer, so that a
/// client still sending reads the answer instead of a reset connection.
const DRAIN_BYTES: u64 = 64 * 1024 * 1024;

/// The longest such a body is read for.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads a request's body up to `--max-body-bytes` before its handler runs. A body over the
/// limit (declared by `Content-Length`, or found while reading) is answered 413 with a problem
/// at once, with `Connection: close`, and the rest of it is read and thrown away in the
/// background, up to [`DRAIN_BYTES`] and [`DRAIN_TIME`], by at most [`MAX_DRAINS`] bodies at
/// once: closing a socket with unread data makes the kernel reset the connection, and the client
/// would see the reset instead of the answer.
async fn bounded_body(State(state): State<AppState>, request: Request, next: Next) -> Response {
    use futures::StreamExt as _;
    let streamed = request
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|m| m.as_str() == STREAMED_ROUTE);
    if streamed {
        return next.run(request).await;
    }
    let limit = state.inner.config.max_body_bytes;
    let (parts, body) = request.into_parts();
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut stream = body.into_data_stream();
    if declared.is_some_and(|n| n > limit as u64) {
        drain(&state, stream);
        return too_large(limit);
    }
    let mut held = Vec::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => {
                if held.len() + chunk.len() > limit {
                    drain(&state, stream);
                    return too_large(limit);
                }
                held.extend_from_slice(&chunk);
            }
            Err(error) => {
                return Problem::bad_request(format!(
                    "the request body could not be read: {error}"
                ))
                .into_response();
            }
        }
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(held)))
        .await
}

/// How many bodies over the limit may be drained at once; past it, the connection is closed at
/// once (and may be reset).
const MAX_DRAINS: usize = 64;

fn drain(state: &AppState, mut stream: axum::body::BodyDataStream) {
    use futures::StreamExt as _;
    let Ok(permit) = Arc::clone(&state.inner.drains).try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let mut read = 0u64;
        let _ = tokio::time::timeout(DRAIN_TIME, async {
            while let Some(Ok(chunk)) = stream.next().await {
                read += chunk.len() as u64;
                if read > DRAIN_BYTES {
                    break;
                }
            }
        })
        .await;
    });
}

fn too_large(limit: usize) -> Response {
    let mut response = Problem::new(
        axum::http::StatusCode::PAYLOAD_TOO_LARGE,
        "too-large",
        format!("the request body is larger than the limit of {limit} bytes (`--max-body-bytes`)"),
    )
    .into_response();
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

/// Serves `router(state)` on `listener`, with [`EvalConfig::workers`] eval workers running the
/// cells of every tenant's runs, until `shutdown` completes: the workers then stop (a cell in
/// flight is left to its lease, and claimed again by the next instance to run), and requests in
/// flight have [`ServerConfig::shutdown_grace`] to finish, after which this returns without waiting
/// for them (they are dropped when the runtime ends).
///
/// # Errors
///
/// The listener failed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let grace = state.inner.config.shutdown_grace;
    let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
    let (stop_workers, workers_stop) = tokio::sync::watch::channel(false);
    evals::spawn_workers(&state, &workers_stop);
    let server = axum::serve(listener, router(state)).with_graceful_shutdown(async move {
        shutdown.await;
        let _ = stop_workers.send(true);
        let _ = stopping.send(());
    });
    let deadline = async move {
        if stopped.await.is_ok() {
            tokio::time::sleep(grace).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        result = server.into_future() => result,
        () = deadline => {
            tracing::warn!(
                grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
                "requests still in flight after the shutdown grace period are dropped"
            );
            Ok(())
        }
    }
}
