//! The render-like endpoints: `render`, `request`, `explain`, `tools`, `diff`, `lint`, each the
//! HTTP form of the CLI command of the same name, over a published version.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use promptstack::compose::Composition;
use promptstack::provider::{Conversation, ConversationLimits, Format, RequestOptions, Rules};
use promptstack::{Agent, Assembly};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Auth;
use crate::engine::{Attribution, Resolved, engine_problem, resolve, send_for};
use crate::problem::{Problem, json_rejection};
use crate::settings::SettingsPreview;
use crate::state::AppState;

/// What to render: the format of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RenderFormat {
    /// The text of one target (`text`).
    #[default]
    Text,
    /// Every composition with its parts (`compositions`).
    Json,
    /// An Anthropic Messages request body (`body`).
    Anthropic,
    /// An OpenAI Chat Completions request body.
    OpenaiChat,
    /// An OpenAI Responses request body.
    OpenaiResponses,
    /// A Gemini generateContent request body.
    Gemini,
}

impl RenderFormat {
    fn provider(self) -> Option<Format> {
        match self {
            RenderFormat::Text | RenderFormat::Json => None,
            RenderFormat::Anthropic => Some(Format::Anthropic),
            RenderFormat::OpenaiChat => Some(Format::OpenaiChat),
            RenderFormat::OpenaiResponses => Some(Format::OpenaiResponses),
            RenderFormat::Gemini => Some(Format::Gemini),
        }
    }
}

/// A provider format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderFormat {
    /// Anthropic Messages.
    #[default]
    Anthropic,
    /// OpenAI Chat Completions.
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Gemini generateContent.
    Gemini,
}

impl From<ProviderFormat> for Format {
    fn from(format: ProviderFormat) -> Format {
        match format {
            ProviderFormat::Anthropic => Format::Anthropic,
            ProviderFormat::OpenaiChat => Format::OpenaiChat,
            ProviderFormat::OpenaiResponses => Format::OpenaiResponses,
            ProviderFormat::Gemini => Format::Gemini,
        }
    }
}

/// Which text of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Slot {
    /// The system text.
    #[default]
    System,
    /// The notes for the last user message.
    User,
}

/// Options of a provider request (the CLI's `--conversation`, `--model`, …).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestOptionsBody {
    /// The conversation so far: `{"messages": [...]}`.
    #[schema(value_type = Option<Object>)]
    pub conversation: Option<serde_json::Value>,
    /// The model id sent (default: the send's).
    pub model: Option<String>,
    /// The output token limit (default 4096).
    pub max_tokens: Option<u32>,
    /// Expected seconds until the thread's next request.
    pub gap_seconds: Option<u32>,
    /// OpenAI `prompt_cache_key`.
    pub cache_key: Option<String>,
    /// Gemini explicit cached content.
    pub cached_content: Option<String>,
}

/// The body of `render`, `request`, `explain` and `tools`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenderRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// The send context.
    #[schema(value_type = Object)]
    pub send: serde_json::Value,
    /// The target (default: the only one; required when there are several).
    pub target: Option<String>,
    /// The answer's format.
    #[serde(default)]
    pub format: RenderFormat,
    /// Which text of the target, for `text`.
    #[serde(default)]
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

impl IntoResponse for RenderResponse {
    fn into_response(self) -> Response {
        let headers = self.attribution.headers();
        (headers, Json(self)).into_response()
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
    if let Some(target) = named {
        return Ok(target.to_owned());
    }
    let ids: Vec<&str> = assembly.target_ids().collect();
    match ids.as_slice() {
        [one] => Ok((*one).to_owned()),
        _ => Err(Problem::unprocessable(
            "target-required",
            format!(
                "this spec has several targets ({}); choose one with `target`",
                ids.join(", ")
            ),
        )),
    }
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
    use promptstack::limits::Limit;
    let conversation = match &options.conversation {
        Some(value) => {
            let bytes = serde_json::to_vec(value).unwrap_or_default();
            let caps = ConversationLimits::new()
                .max_bytes(
                    usize::try_from(limits.get(Limit::ConversationBytes)).unwrap_or(usize::MAX),
                )
                .max_messages(
                    usize::try_from(limits.get(Limit::ConversationMessages)).unwrap_or(usize::MAX),
                );
            Conversation::from_json_with(&bytes, "conversation", &caps)
                .map_err(|e| Problem::unprocessable("invalid-conversation", e.to_string()))?
        }
        None => Conversation::default(),
    };
    let request_options = RequestOptions {
        format,
        target: target.to_owned(),
        model: options.model.clone(),
        max_tokens: options.max_tokens.unwrap_or(4096),
        expected_gap_seconds: options.gap_seconds,
        cache_key: options.cache_key.clone(),
        cached_content: options.cached_content.clone(),
    };
    agent
        .request(assembly, &conversation, Rules::bundled(), &request_options)
        .map_err(engine_problem)
}

struct Prepared {
    resolved: Resolved,
    send: promptstack::SendContext,
    assembly: Assembly,
    warnings: Vec<String>,
    /// Whether the request's `settings` stood in for the stored ones.
    preview: bool,
}

impl Prepared {
    /// The answer's attribution: the version, the assembly's fingerprint, and whether it is a
    /// preview.
    fn attribution(&self) -> Attribution {
        let mut attribution = self
            .resolved
            .attribution(self.assembly.fingerprint().to_string());
        attribution.preview = self.preview;
        attribution
    }
}

async fn prepare(
    state: &AppState,
    auth: &Auth,
    name: &str,
    body: &RenderRequest,
) -> Result<Prepared, Problem> {
    let preview = crate::settings::preview(body.settings.as_ref())?;
    let tenant = &auth.0.tenant;
    let resolved = resolve(state, tenant, name, body.reference.as_deref()).await?;
    let mut warnings = resolved.stale.clone();
    let send = send_for(
        state,
        tenant,
        &resolved,
        &body.send,
        "send",
        &preview,
        &mut warnings,
    )
    .await?;
    let agent = std::sync::Arc::clone(&resolved.agent);
    let (send, assembly) = crate::engine::blocking(state, move || {
        let assembly = agent.assemble(&send);
        (send, assembly)
    })
    .await?;
    let assembly = assembly.map_err(engine_problem)?;
    Ok(Prepared {
        resolved,
        send,
        assembly,
        warnings,
        preview: !preview.is_empty(),
    })
}

/// `POST /v1/agents/{name}/render`: the exact text (or request body) a target sends.
#[utoipa::path(post, path = "/v1/agents/{name}/render", tag = "render",
    params(("name" = String, Path, description = "The agent")),
    request_body = RenderRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn render(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<RenderRequest>, JsonRejection>,
) -> Result<RenderResponse, Problem> {
    let Json(body) = body.map_err(json_rejection)?;
    let p = prepare(&state, &auth, &name, &body).await?;
    let limits = state.inner.config.limits.clone();
    crate::engine::blocking(&state, move || render_now(&p, &body, &limits)).await?
}

/// The synchronous part of `render`: composing, rendering in full, or building the request.
fn render_now(
    p: &Prepared,
    body: &RenderRequest,
    limits: &promptstack::limits::Limits,
) -> Result<RenderResponse, Problem> {
    let agent = &p.resolved.agent;
    let mut response = RenderResponse {
        attribution: p.attribution(),
        target: None,
        text: None,
        body: None,
        detail: None,
        diagnostics: Vec::new(),
    };
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
        response.diagnostics = diagnostics(full.warnings.iter(), &p.warnings);
        if body.format == RenderFormat::Json {
            response.detail = to_value(&full);
        }
        return Ok(response);
    }
    if let Some(format) = body.format.provider() {
        let target = target(&p.assembly, body.target.as_deref())?;
        let request = build_request(agent, &p.assembly, format, &target, &body.options, limits)?;
        response.diagnostics = diagnostics(
            p.assembly.diagnostics().chain(request.diagnostics.iter()),
            &p.warnings,
        );
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
                None => p.assembly.target_ids().map(str::to_owned).collect(),
            };
            let compositions = targets
                .iter()
                .map(|t| compose(&p.assembly, t))
                .collect::<Result<Vec<_>, _>>()?;
            response.diagnostics = diagnostics(
                p.assembly
                    .diagnostics()
                    .chain(compositions.iter().flat_map(|c| c.diagnostics.iter())),
                &p.warnings,
            );
            response.detail = Some(serde_json::json!({ "targets": to_value(&compositions) }));
        }
        _ => {
            let target = target(&p.assembly, body.target.as_deref())?;
            let composition = compose(&p.assembly, &target)?;
            response.diagnostics = diagnostics(
                p.assembly
                    .diagnostics()
                    .chain(composition.diagnostics.iter()),
                &p.warnings,
            );
            response.text = Some(match body.slot {
                Slot::System => composition.system,
                Slot::User => composition.user,
            });
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
    pub reference: Option<String>,
    /// The send context.
    #[schema(value_type = Object)]
    pub send: serde_json::Value,
    /// The target (default: the only one).
    pub target: Option<String>,
    /// The provider format (default `anthropic`).
    #[serde(default)]
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

impl RequestRequest {
    fn as_render(&self) -> RenderRequest {
        RenderRequest {
            reference: self.reference.clone(),
            send: self.send.clone(),
            target: self.target.clone(),
            format: RenderFormat::Text,
            slot: Slot::System,
            full: false,
            options: self.options.clone(),
            settings: self.settings.clone(),
        }
    }
}

/// `POST /v1/agents/{name}/request`: the provider request body with its cache plan and units.
#[utoipa::path(post, path = "/v1/agents/{name}/request", tag = "render",
    params(("name" = String, Path, description = "The agent")),
    request_body = RequestRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn request(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<RequestRequest>, JsonRejection>,
) -> Result<RenderResponse, Problem> {
    let Json(body) = body.map_err(json_rejection)?;
    let p = prepare(&state, &auth, &name, &body.as_render()).await?;
    let limits = state.inner.config.limits.clone();
    crate::engine::blocking(&state, move || request_now(&p, &body, &limits)).await?
}

/// The synchronous part of `request`.
fn request_now(
    p: &Prepared,
    body: &RequestRequest,
    limits: &promptstack::limits::Limits,
) -> Result<RenderResponse, Problem> {
    let target = target(&p.assembly, body.target.as_deref())?;
    let request = build_request(
        &p.resolved.agent,
        &p.assembly,
        body.format.into(),
        &target,
        &body.options,
        limits,
    )?;
    Ok(RenderResponse {
        attribution: p.attribution(),
        target: Some(target),
        diagnostics: diagnostics(
            p.assembly.diagnostics().chain(request.diagnostics.iter()),
            &p.warnings,
        ),
        detail: Some(serde_json::json!({
            "format": request.format.as_str(),
            "model": request.model,
            "plan": to_value(&request.plan),
            "units": to_value(&request.units),
        })),
        body: Some(request.body),
        text: None,
    })
}

/// The body of `explain`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// The send context.
    #[schema(value_type = Object)]
    pub send: serde_json::Value,
    /// Only this target (default: every target).
    pub target: Option<String>,
    /// Also plan the breakpoints of each target's request in this provider format.
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
    params(("name" = String, Path, description = "The agent")),
    request_body = ExplainRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn explain(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<ExplainRequest>, JsonRejection>,
) -> Result<RenderResponse, Problem> {
    let Json(body) = body.map_err(json_rejection)?;
    let render = RenderRequest {
        reference: body.reference.clone(),
        send: body.send.clone(),
        target: body.target.clone(),
        format: RenderFormat::Text,
        slot: Slot::System,
        full: false,
        options: RequestOptionsBody::default(),
        settings: body.settings.clone(),
    };
    let p = prepare(&state, &auth, &name, &render).await?;
    let format = body.format.map(|f| promptstack::report::BreakpointFormat {
        format: f.into(),
        rules: Rules::bundled(),
    });
    let explanation = promptstack::report::explain(
        &p.resolved.agent,
        &p.send,
        &p.assembly,
        body.target.as_deref(),
        format,
    )
    .map_err(engine_problem)?;
    Ok(RenderResponse {
        attribution: p.attribution(),
        target: body.target.clone(),
        text: None,
        body: None,
        detail: to_value(&explanation),
        diagnostics: diagnostics(std::iter::empty(), &p.warnings),
    })
}

/// The body of `tools`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// The send context.
    #[schema(value_type = Object)]
    pub send: serde_json::Value,
    /// Unsaved settings to preview in place of the stored ones, for this answer only (stage
    /// agents; any role that may render). Checked as a settings write is; nothing is stored,
    /// and the answer's `preview` is true.
    #[schema(value_type = Option<SettingsPreview>)]
    pub settings: Option<serde_json::Value>,
}

/// `POST /v1/agents/{name}/tools`: the toolset a send resolves to, and the tools left out with
/// the reason.
#[utoipa::path(post, path = "/v1/agents/{name}/tools", tag = "render",
    params(("name" = String, Path, description = "The agent")),
    request_body = ToolsRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn tools(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<ToolsRequest>, JsonRejection>,
) -> Result<RenderResponse, Problem> {
    let Json(body) = body.map_err(json_rejection)?;
    let render = RenderRequest {
        reference: body.reference.clone(),
        send: body.send.clone(),
        target: None,
        format: RenderFormat::Text,
        slot: Slot::System,
        full: false,
        options: RequestOptionsBody::default(),
        settings: body.settings.clone(),
    };
    let p = prepare(&state, &auth, &name, &render).await?;
    let toolset = p.assembly.toolset();
    let excluded: Vec<serde_json::Value> = toolset
        .excluded()
        .iter()
        .map(|e| serde_json::json!({"name": e.name, "reason": e.reason}))
        .collect();
    Ok(RenderResponse {
        attribution: p.attribution(),
        target: None,
        text: None,
        body: None,
        detail: Some(serde_json::json!({
            "tools": to_value(&toolset.tools()),
            "excluded": excluded,
        })),
        diagnostics: diagnostics(p.assembly.diagnostics(), &p.warnings),
    })
}

/// The body of `diff`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffRequest {
    /// The first side's label or version id (default `production`).
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// The first side's send.
    #[schema(value_type = Object)]
    pub send: serde_json::Value,
    /// The second side's label or version id (default: the first side's).
    pub ref_b: Option<String>,
    /// The second side's send (default: the first side's).
    #[schema(value_type = Option<Object>)]
    pub send_b: Option<serde_json::Value>,
    /// The target (default: the only one).
    pub target: Option<String>,
    /// The provider format (default `anthropic`).
    #[serde(default)]
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

/// What changed between two renders, for the cache: the first divergence of the system text and
/// of the request, and which breakpoints of the first request survive.
#[derive(Debug, Serialize, ToSchema)]
pub struct CacheDiff {
    /// The target compared.
    pub target: String,
    /// The provider format compared.
    pub format: String,
    /// Where the system texts first differ (none when identical).
    #[schema(value_type = Option<Object>)]
    pub system: Option<serde_json::Value>,
    /// Where the request bodies first differ (none when identical).
    #[schema(value_type = Option<Object>)]
    pub request: Option<serde_json::Value>,
    /// Each breakpoint of the first request, and whether it survives in the second.
    #[schema(value_type = Vec<Object>)]
    pub breakpoints: Vec<serde_json::Value>,
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
    use promptstack::provider::diff;
    let composed_a = compose(a.1, target)?;
    let composed_b = compose(b.1, target)?;
    let request_a = build_request(a.0, a.1, format, target, options, limits)?;
    let request_b = build_request(b.0, b.1, format, target, options, limits)?;
    Ok(CacheDiff {
        target: target.to_owned(),
        format: format.as_str().to_owned(),
        system: diff::compositions(&composed_a, &composed_b).and_then(|d| to_value(&d)),
        request: diff::requests(&request_a, &request_b).and_then(|d| to_value(&d)),
        breakpoints: diff::survivals(&request_a, &request_b)
            .iter()
            .filter_map(to_value)
            .collect(),
    })
}

/// `POST /v1/agents/{name}/diff`: why a cache would break between two sends, or two versions.
#[utoipa::path(post, path = "/v1/agents/{name}/diff", tag = "render",
    params(("name" = String, Path, description = "The agent")),
    request_body = DiffRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn diff(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<DiffRequest>, JsonRejection>,
) -> Result<RenderResponse, Problem> {
    let Json(body) = body.map_err(json_rejection)?;
    let first = RenderRequest {
        reference: body.reference.clone(),
        send: body.send.clone(),
        target: body.target.clone(),
        format: RenderFormat::Text,
        slot: Slot::System,
        full: false,
        options: RequestOptionsBody::default(),
        settings: body.settings.clone(),
    };
    let a = prepare(&state, &auth, &name, &first).await?;
    let second = RenderRequest {
        reference: body.ref_b.clone().or_else(|| body.reference.clone()),
        send: body.send_b.clone().unwrap_or_else(|| body.send.clone()),
        ..first
    };
    let b = prepare(&state, &auth, &name, &second).await?;
    let target = target(&a.assembly, body.target.as_deref())?;
    let result = cache_diff(
        (&a.resolved.agent, &a.assembly),
        (&b.resolved.agent, &b.assembly),
        &target,
        body.format.into(),
        &body.options,
        &state.inner.config.limits,
    )?;
    let attribution = a.attribution();
    let mut warnings = a.warnings;
    warnings.extend(b.warnings);
    Ok(RenderResponse {
        attribution,
        target: Some(target),
        text: None,
        body: None,
        detail: to_value(&result),
        diagnostics: diagnostics(std::iter::empty(), &warnings),
    })
}

/// The body of `lint`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LintRequest {
    /// A label or a version id (default `production`).
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Send contexts to check the spec against.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub sends: Vec<serde_json::Value>,
    /// Unsaved settings to preview in place of the stored ones, for every send, for this answer
    /// only (stage agents; any role that may render). Checked as a settings write is; nothing
    /// is stored, and the answer's `preview` is true.
    #[schema(value_type = Option<SettingsPreview>)]
    pub settings: Option<serde_json::Value>,
}

/// `POST /v1/agents/{name}/lint`: the findings of `promptstack lint --json`.
#[utoipa::path(post, path = "/v1/agents/{name}/lint", tag = "render",
    params(("name" = String, Path, description = "The agent")),
    request_body = LintRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn lint(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<LintRequest>, JsonRejection>,
) -> Result<RenderResponse, Problem> {
    let Json(body) = body.map_err(json_rejection)?;
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
    let resolved = resolve(&state, tenant, &name, body.reference.as_deref()).await?;
    let mut warnings = resolved.stale.clone();
    let mut sends = Vec::with_capacity(body.sends.len());
    for (i, send) in body.sends.iter().enumerate() {
        let what = format!("sends[{i}]");
        let ctx = send_for(
            &state,
            tenant,
            &resolved,
            send,
            &what,
            &preview,
            &mut warnings,
        )
        .await?;
        sends.push((what, ctx));
    }
    let agent = std::sync::Arc::clone(&resolved.agent);
    let findings = crate::engine::blocking(&state, move || {
        promptstack::report::lint(
            &agent,
            sends.iter().map(|(name, send)| (name.as_str(), send)),
        )
    })
    .await?;
    let mut attribution = resolved.attribution(String::new());
    attribution.preview = !preview.is_empty();
    Ok(RenderResponse {
        attribution,
        target: None,
        text: None,
        body: None,
        detail: Some(serde_json::json!({ "findings": to_value(&findings) })),
        diagnostics: diagnostics(std::iter::empty(), &warnings),
    })
}
