//! The inspector's routes: the page's embedded assets at `/` and `/inspector/*`, who the key is
//! (`/v1/me`, so the page can show what a viewer may not do) and the cache simulation the page
//! charts (`/v1/agents/{name}/cache-sim`).

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use promptstack::command::{self, Env};
use promptstack::provider::sim::SimCancel;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Auth;
use crate::bundle::Bundle;
use crate::engine::{Overrides, read_send, resolve};
use crate::problem::{Problem, json_rejection};
use crate::render::ProviderFormat;
use crate::settings::SettingsPreview;
use crate::state::AppState;

/// `GET /`: the inspector's page.
pub async fn index() -> Response {
    asset_response("index.html")
}

/// `GET /inspector/{path}`: one of the page's embedded files, or the send schema.
pub async fn asset(Path(path): Path<String>) -> Response {
    asset_response(&path)
}

fn asset_response(path: &str) -> Response {
    match promptstack_inspector::file(path) {
        Some((content_type, bytes)) => (
            [
                (header::CONTENT_TYPE, content_type),
                (header::CACHE_CONTROL, "no-cache"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
                ),
            ],
            bytes.into_owned(),
        )
            .into_response(),
        None => Problem::not_found("no such file of the inspector").into_response(),
    }
}

/// Who a key is.
#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    /// The key's tenant.
    pub tenant: String,
    /// Its role: `admin`, `editor` or `viewer`.
    pub role: String,
}

/// `GET /v1/me`: the tenant and role of the key making the request.
#[utoipa::path(get, path = "/v1/me", tag = "operations",
    responses((status = 200, body = Me), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn me(auth: Auth) -> Json<Me> {
    Json(Me {
        tenant: auth.0.tenant.to_string(),
        role: auth.0.role.as_str().to_owned(),
    })
}

/// The body of `cache-sim`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheSimRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    #[schema(value_type = Option<crate::contract::ReferenceSchema>)]
    pub reference: Option<String>,
    /// The target (default: the only one; required when there are several).
    pub target: Option<String>,
    /// The request format (default `anthropic`).
    #[serde(default)]
    #[schema(value_type = command::ProviderFormatSchema)]
    pub provider: ProviderFormat,
    /// The model id (default: the first send's).
    pub model: Option<String>,
    /// User turns (default 100, at most the `sim-turns` limit: 1000 unless the server was
    /// started with another, which the served document then states).
    #[schema(minimum = 1, maximum = 1000)]
    #[serde(default, deserialize_with = "crate::contract::whole")]
    pub turns: Option<u32>,
    /// Seconds between turns (default 60, at most 30 days).
    #[schema(maximum = 2_592_000)]
    #[serde(default, deserialize_with = "crate::contract::whole")]
    pub gap_seconds: Option<u32>,
    /// The chance per turn that a synthetic MCP server fails (default 0.05).
    #[schema(minimum = 0, maximum = 1)]
    pub mcp_failure_rate: Option<f64>,
    /// The generator's seed (default 1).
    #[serde(default, deserialize_with = "crate::contract::whole")]
    #[schema(value_type = Option<crate::contract::U64Schema>)]
    pub seed: Option<u64>,
    /// Unsaved settings to preview in place of the stored ones on every send, for this answer
    /// only (stage agents; any role that may render). Checked as a settings write is; nothing
    /// is stored, and the answer carries the header `promptstack-preview: settings`.
    #[schema(value_type = Option<SettingsPreview>)]
    pub settings: Option<serde_json::Value>,
}

impl CacheSimRequest {
    /// The command's request: the body's options, each absent one taking its default.
    fn request(&self) -> command::CacheSimRequest {
        let defaults = command::CacheSimRequest::default();
        command::CacheSimRequest {
            target: self.target.clone(),
            format: self.provider,
            model: self.model.clone(),
            turns: self.turns.unwrap_or(defaults.turns),
            gap_seconds: self.gap_seconds.unwrap_or(defaults.gap_seconds),
            mcp_failure_rate: self.mcp_failure_rate.unwrap_or(defaults.mcp_failure_rate),
            seed: self.seed.unwrap_or(defaults.seed),
        }
    }
}

/// `POST /v1/agents/{name}/cache-sim`: `promptstack cache-sim` over the version's example sends
/// (in name order, with the tenant's settings, or the previewed ones, applied): per turn and in total, the tokens read
/// from the cache, written and uncached, ours next to the naive baseline.
#[utoipa::path(post, path = "/v1/agents/{name}/cache-sim", tag = "render",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = CacheSimRequest,
    responses((status = 200, description = "The simulation report, as `cache-sim --json`", body = Object),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn cache_sim(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<CacheSimRequest>, JsonRejection>,
) -> Result<Response, Problem> {
    let Json(body) = body.map_err(json_rejection)?;
    let preview = crate::settings::preview(body.settings.as_ref())?;
    let tenant = &auth.0.tenant;
    let request = body.request();
    request.check(&state.inner.config.limits)?;
    let resolved = resolve(&state, tenant, &name, body.reference.as_deref()).await?;
    let stored = state
        .inner
        .store
        .version(tenant, &resolved.name, &resolved.version)
        .await
        .map_err(Problem::from)?;
    // Reading the bundle's sends, choosing the target and simulating are engine work: all of it
    // runs on the blocking pool, the sends checked before the settings are read.
    let agent = resolved.agent.clone();
    let mut sends = crate::engine::blocking(&state, move || {
        let bundle = Bundle::from_stored(&stored.bundle)?;
        if bundle.sends.is_empty() {
            return Err(Problem::unprocessable(
                "no-sends",
                "this version's bundle has no example sends to simulate a thread from",
            ));
        }
        bundle
            .sends
            .iter()
            .map(|(send_name, send)| {
                let bytes = serde_json::to_vec(send).unwrap_or_default();
                read_send(&agent, &bytes, &format!("sends.{send_name}"))
            })
            .collect::<Result<Vec<_>, Problem>>()
    })
    .await??;
    let mut warnings = Vec::new();
    let overrides = Overrides::read(&state, tenant, &resolved, &preview, &mut warnings).await?;
    for send in &mut sends {
        overrides.apply(send);
    }
    let agent = resolved.agent.clone();
    // A request dropped before the report (its timeout passed, its client went away) stops the
    // simulation before its next turn, so the blocking thread and the tenant's engine turn are
    // freed at once.
    let cancel = SimCancel::new();
    let _stop_when_dropped = StopWhenDropped(cancel.clone());
    let limits = state.inner.config.limits.clone();
    let report = crate::engine::blocking(&state, move || {
        command::cache_sim(&agent, &sends, &request, &Env::bundled(&limits), cancel)
    })
    .await??;
    let mut response = Json(report).into_response();
    if !preview.is_empty() {
        response.headers_mut().insert(
            header::HeaderName::from_static("promptstack-preview"),
            header::HeaderValue::from_static("settings"),
        );
    }
    Ok(response)
}

/// Cancels a simulation when the request that waits for it is dropped.
struct StopWhenDropped(SimCancel);

impl Drop for StopWhenDropped {
    fn drop(&mut self) {
        self.0.cancel();
    }
}
