//! The render-like endpoints: `render`, `request`, `explain`, `tools`, `diff`, `lint`, each the
//! HTTP form of the CLI command of the same name, over a published version.
//!
//! Each handler takes an [`Op`]: the key authenticated, the body read, the reference resolved to a
//! compiled version and the send read for it with the tenant's settings. Its engine work
//! (assembling, composing, building requests, explaining, diffing, linting) then runs in one
//! turn on the blocking pool.

use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use promptstack::compose::Composition;
use promptstack::compose::choose_target;
use promptstack::provider::{Format, Rules};
use promptstack::report::ToolsReport;
use promptstack::{Agent, Assembly};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::auth::Auth;
use crate::engine::{
    Attribution, Overrides, Resolved, blocking, engine, engine_problem, read_kept_send, read_send,
    resolve,
};
use crate::problem::{Problem, json_rejection};
use crate::settings::SettingsPreview;
use crate::state::AppState;

pub use promptstack::command::{
    RenderFormat, RequestSettings as RequestOptionsBody, SendsDiff as CacheDiff,
};
pub use promptstack::compose::Slot;
pub use promptstack::provider::Format as ProviderFormat;

/// The body of `render`, `request`, `explain` and `tools`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenderRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    #[schema(value_type = Option<crate::contract::ReferenceSchema>)]
    pub reference: Option<String>,
    /// The send context.
    #[schema(value_type = crate::contract::SendContextSchema)]
    pub send: Box<RawValue>,
    /// The target (default: the only one; required when there are several).
    pub target: Option<String>,
    /// The answer's format.
    #[serde(default)]
    pub format: RenderFormat,
    /// Which text of the target, for `text`.
    #[serde(default)]
    #[schema(value_type = promptstack::command::SlotSchema)]
    pub slot: Slot,
    /// The full prompt (authored text plus every platform append), as `render --full`.
    #[serde(default)]
    pub full: bool,
    /// Options of provider requests.
    #[serde(default)]
    pub options: RequestOptionsBody,
    /// Unsaved settings to preview in place of the stored ones, for this answer only (stage
    /// agents; any role that may render). Checked as a settings write is; nothing is stored,
    /// and the answer's `preview` is true.
    #[schema(value_type = Option<SettingsPreview>)]
    pub settings: Option<serde_json::Value>,
}

/// A render-like answer: the attribution and what was asked for.
#[derive(Debug, Serialize, ToSchema)]
pub struct RenderResponse {
    /// Which version produced it.
    #[serde(flatten)]
    pub attribution: Attribution,
    /// The target rendered, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The text, byte for byte as sent (format `text`, or `full`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The provider request body, byte for byte as sent (provider formats).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Everything else the format carries (compositions, the cache plan, the full prompt's
    /// parts, an explanation, a toolset, findings).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub detail: Option<serde_json::Value>,
    /// Warnings and findings, located.
    #[schema(value_type = Vec<Object>)]
    pub diagnostics: Vec<serde_json::Value>,
}

impl RenderResponse {
    /// An answer with this attribution and nothing else yet.
    fn new(attribution: Attribution) -> RenderResponse {
        RenderResponse {
            attribution,
            target: None,
            text: None,
            body: None,
            detail: None,
            diagnostics: Vec::new(),
        }
    }
}

impl IntoResponse for RenderResponse {
    /// The same bytes and headers as `(headers, Json(self))`, written into one buffer sized for
    /// the answer (the text or body, its escapes, and the rest), where `Json` starts at 128 bytes
    /// and grows by copying; see [`crate::answer`].
    fn into_response(self) -> Response {
        let headers = self.attribution.headers();
        let carried =
            self.text.as_ref().map_or(0, String::len) + self.body.as_ref().map_or(0, String::len);
        let mut bytes = Vec::with_capacity(carried + carried / 8 + 1024);
        let answer = crate::answer::Answer {
            attribution: &self.attribution,
            target: self.target.as_deref(),
            text: self.text.as_deref(),
            body: self.body.as_deref(),
            detail: self.detail.as_ref(),
            diagnostics: &self.diagnostics,
        };
        let answer = match answer.write(&mut bytes) {
            Ok(()) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                bytes,
            )
                .into_response(),
            Err(error) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                )],
                error.to_string(),
            )
                .into_response(),
        };
        (headers, answer).into_response()
    }
}

fn diagnostics<'a>(
    items: impl Iterator<Item = &'a promptstack::diagnostic::Diagnostic>,
    warnings: &[String],
) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> =
        items.filter_map(|d| serde_json::to_value(d).ok()).collect();
    for warning in warnings {
        out.push(serde_json::json!({
            "severity": "warning",
            "code": "store-unavailable",
            "message": warning,
        }));
    }
    out
}

fn to_value(value: &impl Serialize) -> Option<serde_json::Value> {
    serde_json::to_value(value).ok()
}

/// The target to render: the one named, or the only one.
fn target(assembly: &Assembly, named: Option<&str>) -> Result<String, Problem> {
    choose_target(assembly.target_ids(), named).map_err(|several| {
        Problem::unprocessable(
            "target-required",
            several.message("choose one with `target`"),
        )
    })
}

fn compose(assembly: &Assembly, target: &str) -> Result<Composition, Problem> {
    assembly.compose(target).map_err(engine_problem)
}

/// Builds a provider request as `promptstack render --format F` does.
pub fn build_request(
    agent: &Agent,
    assembly: &Assembly,
    format: Format,
    target: &str,
    options: &RequestOptionsBody,
    limits: &promptstack::limits::Limits,
) -> Result<promptstack::provider::Request, Problem> {
    let conversation = options
        .conversation(limits)
        .map_err(|e| Problem::unprocessable("invalid-conversation", e.to_string()))?;
    agent
        .request(
            assembly,
            &conversation,
            Rules::bundled(),
            &options.options(format, target),
        )
        .map_err(engine_problem)
}

/// A body that names a version and a send.
pub(crate) trait Names {
    /// The label or version id (default `production`).
    fn reference(&self) -> Option<&str>;
    /// The send context, as given.
    fn send(&self) -> &RawValue;
    /// Unsaved settings to preview in place of the stored ones.
    fn settings(&self) -> Option<&serde_json::Value>;
}

macro_rules! names {
    ($($body:ty),*) => {$(
        impl Names for $body {
            fn reference(&self) -> Option<&str> {
                self.reference.as_deref()
            }
            fn send(&self) -> &RawValue {
                &self.send
            }
            fn settings(&self) -> Option<&serde_json::Value> {
                self.settings.as_ref()
            }
        }
    )*};
}

names!(
    RenderRequest,
    RequestRequest,
    ExplainRequest,
    ToolsRequest,
    DiffRequest
);

/// A version resolved and a send read for it, with the tenant's settings applied.
pub(crate) struct Prepared {
    pub(crate) resolved: Resolved,
    pub(crate) send: std::sync::Arc<promptstack::SendContext>,
    /// Why parts of the answer come from the last good value.
    pub(crate) warnings: Vec<String>,
    /// Whether the request's `settings` stood in for the stored ones.
    pub(crate) preview: bool,
}

impl Prepared {
    /// Resolves `reference` of agent `name` in the key's tenant and reads `send` for it. The send
    /// is checked before the tenant's settings are read, so an invalid one costs no store read;
    /// `settings`, when given, are previewed in place of the stored ones.
    pub(crate) async fn new(
        state: &AppState,
        auth: &Auth,
        name: &str,
        reference: Option<&str>,
        send: &RawValue,
        settings: Option<&serde_json::Value>,
    ) -> Result<Prepared, Problem> {
        let preview = crate::settings::preview(settings)?;
        let tenant = &auth.0.tenant;
        let resolved = resolve(state, tenant, name, reference).await?;
        let mut warnings = resolved.stale.clone();
        let mut send = read_kept_send(state, tenant, &resolved, send).await?;
        Overrides::read(state, tenant, &resolved, &preview, &mut warnings)
            .await?
            .apply_shared(&mut send);
        Ok(Prepared {
            resolved,
            send,
            warnings,
            preview: !preview.is_empty(),
        })
    }

    /// Assembles the send (engine work: call it on the blocking pool).
    fn assemble(&self) -> Result<Assembly, Problem> {
        self.resolved
            .agent
            .assemble(&self.send)
            .map_err(engine_problem)
    }

    /// The attribution of an answer from `assembly`, marked as a preview when it is one.
    fn attribution(&self, assembly: &Assembly) -> Attribution {
        let mut attribution = self
            .resolved
            .attribution(crate::engine::hex(assembly.fingerprint().as_bytes()));
        attribution.preview = self.preview;
        attribution
    }

    /// `items`, then the warnings about stale settings or labels.
    fn diagnostics<'a>(
        &self,
        items: impl Iterator<Item = &'a promptstack::diagnostic::Diagnostic>,
    ) -> Vec<serde_json::Value> {
        diagnostics(items, &self.warnings)
    }
}

/// What every render-like handler starts from: the key, the body, and the version and send the
/// body names, resolved and read. Rejections are problems: 401 before anything else is read,
/// then the body's 400/413/415/422, then the reference's and the send's.
pub(crate) struct Op<B> {
    pub(crate) auth: Auth,
    pub(crate) name: String,
    pub(crate) body: B,
    pub(crate) prepared: Prepared,
}

impl<B: Names + DeserializeOwned + Send> FromRequest<AppState> for Op<B> {
    type Rejection = Problem;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Problem> {
        let (mut parts, body) = request.into_parts();
        let auth = Auth::from_request_parts(&mut parts, state).await?;
        let Path(name) = Path::<String>::from_request_parts(&mut parts, state)
            .await
            .map_err(|e| Problem::bad_request(e.body_text()))?;
        let Json(body) = Json::<B>::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(json_rejection)?;
        let prepared = Prepared::new(
            state,
            &auth,
            &name,
            body.reference(),
            body.send(),
            body.settings(),
        )
        .await?;
        Ok(Op {
            auth,
            name,
            body,
            prepared,
        })
    }
}

impl<B: Send + 'static> Op<B> {
    /// Runs `work` on the prepared send and the body with the server's limits, on the request's
    /// thread or the blocking pool as the version's recent cost decides (see `engine`).
    async fn run<T: Send + 'static>(
        self,
        state: &AppState,
        work: fn(&Prepared, &B, &promptstack::limits::Limits) -> Result<T, Problem>,
    ) -> Result<T, Problem> {
        let limits = state.inner.config.limits.clone();
        let cost = std::sync::Arc::clone(&self.prepared.resolved.cost);
        engine(state, &cost, move || {
            work(&self.prepared, &self.body, &limits)
        })
        .await?
    }
}

/// `POST /v1/agents/{name}/render`: the exact text (or request body) a target sends.
#[utoipa::path(post, path = "/v1/agents/{name}/render", tag = "render",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = RenderRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn render(
    State(state): State<AppState>,
    op: Op<RenderRequest>,
) -> Result<RenderResponse, Problem> {
    op.run(&state, render_now).await
}

/// The engine work of `render`: composing, rendering in full, or building the request.
fn render_now(
    p: &Prepared,
    body: &RenderRequest,
    limits: &promptstack::limits::Limits,
) -> Result<RenderResponse, Problem> {
    let agent = &p.resolved.agent;
    if body.format.provider().is_none() && body.options.conversation.is_some() {
        // Text and JSON answers send no conversation, but one given is read all the same: the
        // request is refused as the document says, whatever the format.
        body.options
            .conversation(limits)
            .map_err(|e| Problem::unprocessable("invalid-conversation", e.to_string()))?;
    }
    let assembly = p.assemble()?;
    let mut response = RenderResponse::new(p.attribution(&assembly));
    if body.full {
        if body.format.provider().is_some() {
            return Err(Problem::unprocessable(
                "invalid-format",
                "`full` renders text or JSON; use format `text` or `json`",
            ));
        }
        let full = agent
            .render_full(&p.send, body.target.as_deref())
            .map_err(engine_problem)?;
        response.text = Some(full.text.clone());
        response.diagnostics = p.diagnostics(full.warnings.iter());
        if body.format == RenderFormat::Json {
            response.detail = to_value(&full);
        }
        return Ok(response);
    }
    if let Some(format) = body.format.provider() {
        let target = target(&assembly, body.target.as_deref())?;
        let request = build_request(agent, &assembly, format, &target, &body.options, limits)?;
        response.diagnostics =
            p.diagnostics(assembly.diagnostics().chain(request.diagnostics.iter()));
        response.detail = Some(serde_json::json!({
            "format": format.as_str(),
            "model": request.model,
            "plan": to_value(&request.plan),
        }));
        response.body = Some(request.body);
        response.target = Some(target);
        return Ok(response);
    }
    match body.format {
        RenderFormat::Json => {
            let targets: Vec<String> = match &body.target {
                Some(t) => vec![t.clone()],
                None => assembly.target_ids().map(str::to_owned).collect(),
            };
            let compositions = targets
                .iter()
                .map(|t| compose(&assembly, t))
                .collect::<Result<Vec<_>, _>>()?;
            response.diagnostics = p.diagnostics(
                assembly
                    .diagnostics()
                    .chain(compositions.iter().flat_map(|c| c.diagnostics.iter())),
            );
            response.detail = Some(serde_json::json!({ "targets": to_value(&compositions) }));
        }
        _ => {
            let target = target(&assembly, body.target.as_deref())?;
            let composition = compose(&assembly, &target)?;
            response.diagnostics =
                p.diagnostics(assembly.diagnostics().chain(composition.diagnostics.iter()));
            response.text = Some(composition.text(body.slot).to_owned());
            response.target = Some(target);
        }
    }
    Ok(response)
}

/// The body of `request`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    #[schema(value_type = Option<crate::contract::ReferenceSchema>)]
    pub reference: Option<String>,
    /// The send context.
    #[schema(value_type = crate::contract::SendContextSchema)]
    pub send: Box<RawValue>,
    /// The target (default: the only one).
    pub target: Option<String>,
    /// The provider format (default `anthropic`).
    #[serde(default)]
    #[schema(value_type = promptstack::command::ProviderFormatSchema)]
    pub format: ProviderFormat,
    /// Options of the request.
    #[serde(default)]
    pub options: RequestOptionsBody,
    /// Unsaved settings to preview in place of the stored ones, for this answer only (stage
    /// agents; any role that may render). Checked as a settings write is; nothing is stored,
    /// and the answer's `preview` is true.
    #[schema(value_type = Option<SettingsPreview>)]
    pub settings: Option<serde_json::Value>,
}

/// `POST /v1/agents/{name}/request`: the provider request body with its cache plan and units.
#[utoipa::path(post, path = "/v1/agents/{name}/request", tag = "render",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = RequestRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn request(
    State(state): State<AppState>,
    op: Op<RequestRequest>,
) -> Result<RenderResponse, Problem> {
    op.run(&state, request_now).await
}

/// The engine work of `request`.
fn request_now(
    p: &Prepared,
    body: &RequestRequest,
    limits: &promptstack::limits::Limits,
) -> Result<RenderResponse, Problem> {
    let assembly = p.assemble()?;
    let target = target(&assembly, body.target.as_deref())?;
    let request = build_request(
        &p.resolved.agent,
        &assembly,
        body.format,
        &target,
        &body.options,
        limits,
    )?;
    let mut response = RenderResponse::new(p.attribution(&assembly));
    response.diagnostics = p.diagnostics(assembly.diagnostics().chain(request.diagnostics.iter()));
    response.detail = Some(serde_json::json!({
        "format": request.format.as_str(),
        "model": request.model,
        "plan": to_value(&request.plan),
        "units": to_value(&request.units),
    }));
    response.body = Some(request.body);
    response.target = Some(target);
    Ok(response)
}

/// The body of `explain`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    #[schema(value_type = Option<crate::contract::ReferenceSchema>)]
    pub reference: Option<String>,
    /// The send context.
    #[schema(value_type = crate::contract::SendContextSchema)]
    pub send: Box<RawValue>,
    /// Only this target (default: every target).
    pub target: Option<String>,
    /// Also plan the breakpoints of each target's request in this provider format.
    #[schema(value_type = Option<promptstack::command::ProviderFormatSchema>)]
    pub format: Option<ProviderFormat>,
    /// Unsaved settings to preview in place of the stored ones, for this answer only (stage
    /// agents; any role that may render). Checked as a settings write is; nothing is stored,
    /// and the answer's `preview` is true.
    #[schema(value_type = Option<SettingsPreview>)]
    pub settings: Option<serde_json::Value>,
}

/// `POST /v1/agents/{name}/explain`: every block, why it is in or out, and what each target
/// composes (the JSON of `promptstack explain --json`).
#[utoipa::path(post, path = "/v1/agents/{name}/explain", tag = "render",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = ExplainRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn explain(
    State(state): State<AppState>,
    op: Op<ExplainRequest>,
) -> Result<RenderResponse, Problem> {
    op.run(&state, explain_now).await
}

/// The engine work of `explain`.
fn explain_now(
    p: &Prepared,
    body: &ExplainRequest,
    _: &promptstack::limits::Limits,
) -> Result<RenderResponse, Problem> {
    let assembly = p.assemble()?;
    let format = body
        .format
        .map(|format| promptstack::report::BreakpointFormat {
            format,
            rules: Rules::bundled(),
        });
    let explanation = promptstack::report::explain(
        &p.resolved.agent,
        &p.send,
        &assembly,
        body.target.as_deref(),
        format,
    )
    .map_err(engine_problem)?;
    let mut response = RenderResponse::new(p.attribution(&assembly));
    response.target.clone_from(&body.target);
    response.detail = to_value(&explanation);
    response.diagnostics = p.diagnostics(std::iter::empty());
    Ok(response)
}

/// The body of `tools`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    #[schema(value_type = Option<crate::contract::ReferenceSchema>)]
    pub reference: Option<String>,
    /// The send context.
    #[schema(value_type = crate::contract::SendContextSchema)]
    pub send: Box<RawValue>,
    /// Unsaved settings to preview in place of the stored ones, for this answer only (stage
    /// agents; any role that may render). Checked as a settings write is; nothing is stored,
    /// and the answer's `preview` is true.
    #[schema(value_type = Option<SettingsPreview>)]
    pub settings: Option<serde_json::Value>,
}

/// The answer of `tools`: the attribution, and the report of `promptstack tools --json`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolsResponse {
    /// Which version produced it.
    #[serde(flatten)]
    pub attribution: Attribution,
    /// The toolset, as `promptstack tools --json` prints it.
    pub detail: ToolsReport,
    /// The assembly's warnings, located.
    #[schema(value_type = Vec<Object>)]
    pub diagnostics: Vec<serde_json::Value>,
}

impl IntoResponse for ToolsResponse {
    fn into_response(self) -> Response {
        let headers = self.attribution.headers();
        (headers, Json(self)).into_response()
    }
}

/// `POST /v1/agents/{name}/tools`: the toolset a send resolves to, as `promptstack tools --json`:
/// every tool offered or left out, its origin (local or an MCP server) and why, and the send's MCP
/// servers.
#[utoipa::path(post, path = "/v1/agents/{name}/tools", tag = "render",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = ToolsRequest,
    responses((status = 200, body = ToolsResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn tools(
    State(state): State<AppState>,
    op: Op<ToolsRequest>,
) -> Result<ToolsResponse, Problem> {
    op.run(&state, |p, _, _| {
        let assembly = p.assemble()?;
        Ok(ToolsResponse {
            attribution: p.attribution(&assembly),
            detail: promptstack::report::tools(&p.resolved.agent, &p.send, &assembly),
            diagnostics: p.diagnostics(assembly.diagnostics()),
        })
    })
    .await
}

/// The body of `diff`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffRequest {
    /// The first side's label or version id (default `production`).
    #[serde(rename = "ref")]
    #[schema(value_type = Option<crate::contract::ReferenceSchema>)]
    pub reference: Option<String>,
    /// The first side's send.
    #[schema(value_type = crate::contract::SendContextSchema)]
    pub send: Box<RawValue>,
    /// The second side's label or version id (default: the first side's).
    #[schema(value_type = Option<crate::contract::ReferenceSchema>)]
    pub ref_b: Option<String>,
    /// The second side's send (default: the first side's).
    #[schema(value_type = Option<crate::contract::SendContextSchema>)]
    pub send_b: Option<Box<RawValue>>,
    /// The target (default: the only one).
    pub target: Option<String>,
    /// The provider format (default `anthropic`).
    #[serde(default)]
    #[schema(value_type = promptstack::command::ProviderFormatSchema)]
    pub format: ProviderFormat,
    /// Options of the requests.
    #[serde(default)]
    pub options: RequestOptionsBody,
    /// Unsaved settings to preview in place of the stored ones, on both sides, for this answer
    /// only (stage agents; any role that may render). Checked as a settings write is; nothing
    /// is stored, and the answer's `preview` is true.
    #[schema(value_type = Option<SettingsPreview>)]
    pub settings: Option<serde_json::Value>,
}

/// Compares two (agent, send) pairs as `promptstack diff` does.
pub fn cache_diff(
    a: (&Agent, &Assembly),
    b: (&Agent, &Assembly),
    target: &str,
    format: Format,
    options: &RequestOptionsBody,
    limits: &promptstack::limits::Limits,
) -> Result<CacheDiff, Problem> {
    let composed_a = compose(a.1, target)?;
    let composed_b = compose(b.1, target)?;
    let request_a = build_request(a.0, a.1, format, target, options, limits)?;
    let request_b = build_request(b.0, b.1, format, target, options, limits)?;
    Ok(CacheDiff::new(
        (&composed_a, &request_a),
        (&composed_b, &request_b),
    ))
}

/// `POST /v1/agents/{name}/diff`: why a cache would break between two sends, or two versions.
#[utoipa::path(post, path = "/v1/agents/{name}/diff", tag = "render",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = DiffRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn diff(
    State(state): State<AppState>,
    op: Op<DiffRequest>,
) -> Result<RenderResponse, Problem> {
    let body = &op.body;
    let b = Prepared::new(
        &state,
        &op.auth,
        &op.name,
        body.ref_b.as_deref().or(body.reference.as_deref()),
        body.send_b.as_deref().unwrap_or(&body.send),
        body.settings.as_ref(),
    )
    .await?;
    let limits = state.inner.config.limits.clone();
    blocking(&state, move || {
        diff_now(&op.prepared, &b, &op.body, &limits)
    })
    .await?
}

/// The engine work of `diff`: side `a` against side `b`.
fn diff_now(
    a: &Prepared,
    b: &Prepared,
    body: &DiffRequest,
    limits: &promptstack::limits::Limits,
) -> Result<RenderResponse, Problem> {
    let (assembly_a, assembly_b) = (a.assemble()?, b.assemble()?);
    let target = target(&assembly_a, body.target.as_deref())?;
    let result = cache_diff(
        (&a.resolved.agent, &assembly_a),
        (&b.resolved.agent, &assembly_b),
        &target,
        body.format,
        &body.options,
        limits,
    )?;
    let mut warnings = a.warnings.clone();
    warnings.extend(b.warnings.iter().cloned());
    let mut response = RenderResponse::new(a.attribution(&assembly_a));
    response.target = Some(target);
    response.detail = to_value(&result);
    response.diagnostics = diagnostics(std::iter::empty(), &warnings);
    Ok(response)
}

/// The body of `lint`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LintRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    #[schema(value_type = Option<crate::contract::ReferenceSchema>)]
    pub reference: Option<String>,
    /// Send contexts to check the spec against.
    #[serde(default)]
    #[schema(value_type = Vec<crate::contract::SendContextSchema>, max_items = 256)]
    pub sends: Vec<Box<RawValue>>,
    /// Unsaved settings to preview in place of the stored ones, for every send, for this answer
    /// only (stage agents; any role that may render). Checked as a settings write is; nothing
    /// is stored, and the answer's `preview` is true.
    #[schema(value_type = Option<SettingsPreview>)]
    pub settings: Option<serde_json::Value>,
}

/// `POST /v1/agents/{name}/lint`: the findings of `promptstack lint --json`.
#[utoipa::path(post, path = "/v1/agents/{name}/lint", tag = "render",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = LintRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn lint(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<LintRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<RenderResponse, Problem> {
    let Json(body) = body.map_err(json_rejection)?;
    let sends = Sends::new(&state, &auth, &name, body).await?;
    let agent = std::sync::Arc::clone(&sends.resolved.agent);
    let read = sends.sends;
    let findings = blocking(&state, move || {
        promptstack::report::lint(
            &agent,
            read.iter().map(|(name, send)| (name.as_str(), send)),
        )
    })
    .await?;
    let mut response = RenderResponse::new(sends.resolved.attribution(String::new()));
    response.attribution.preview = sends.preview;
    response.detail = Some(serde_json::json!({ "findings": to_value(&findings) }));
    response.diagnostics = diagnostics(std::iter::empty(), &sends.warnings);
    Ok(response)
}

/// A version resolved and several sends read for it (`lint`), with the tenant's settings applied.
struct Sends {
    resolved: Resolved,
    /// Each send with the name its problems are located in (`sends[i]`).
    sends: Vec<(String, promptstack::SendContext)>,
    /// Why parts of the answer come from the last good value.
    warnings: Vec<String>,
    /// Whether the request's `settings` stood in for the stored ones.
    preview: bool,
}

impl Sends {
    /// Resolves the body's reference and reads its sends, at most [`crate::bundle::MAX_ENTRIES`];
    /// every send is checked before the settings are read, as for one send.
    async fn new(
        state: &AppState,
        auth: &Auth,
        name: &str,
        body: LintRequest,
    ) -> Result<Sends, Problem> {
        if body.sends.len() > crate::bundle::MAX_ENTRIES {
            return Err(Problem::unprocessable(
                "invalid-body",
                format!(
                    "`sends` holds {} entries; at most {} are checked at once",
                    body.sends.len(),
                    crate::bundle::MAX_ENTRIES
                ),
            ));
        }
        let preview = crate::settings::preview(body.settings.as_ref())?;
        let tenant = &auth.0.tenant;
        let resolved = resolve(state, tenant, name, body.reference.as_deref()).await?;
        let agent = std::sync::Arc::clone(&resolved.agent);
        let mut sends = blocking(state, move || {
            body.sends
                .iter()
                .enumerate()
                .map(|(i, send)| {
                    let what = format!("sends[{i}]");
                    let ctx = read_send(&agent, send.get().as_bytes(), &what)?;
                    Ok((what, ctx))
                })
                .collect::<Result<Vec<_>, Problem>>()
        })
        .await??;
        let mut warnings = resolved.stale.clone();
        let overrides = Overrides::read(state, tenant, &resolved, &preview, &mut warnings).await?;
        for (_, send) in &mut sends {
            overrides.apply(send);
        }
        Ok(Sends {
            resolved,
            sends,
            warnings,
            preview: !preview.is_empty(),
        })
    }
}
