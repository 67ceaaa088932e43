//! The render-like endpoints: `render`, `request`, `explain`, `tools`, `diff`, `lint`, each the
//! HTTP form of the CLI command of the same name, over a published version.
//!
//! Each body is the command's request ([`promptstack::command`]) beside what names its version
//! and send: `ref`, `send` (or `sends`) and `settings`, declared once by [`render_like!`]. Each
//! handler takes an [`Op`], the one extractor: the key authenticated, the body read, the reference
//! resolved to a compiled version and the sends read for it with the tenant's settings. It then
//! runs the command through [`Op::run`], the one way engine work runs (on the request's thread or
//! the blocking pool, as the version's recent cost decides), and turns the command's result into
//! its answer.

use std::borrow::Cow;
use std::sync::Arc;

use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use promptstack::Assembly;
use promptstack::command::{self, Assembled, Env, Rendered};
// The commands' own requests, beside the bodies of the same names that carry them.
use promptstack::command::{
    ExplainRequest as ExplainCommand, RenderRequest as RenderCommand,
    RequestRequest as RequestCommand,
};
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::auth::Auth;
use crate::engine::{
    Attribution, NamedSend, Overrides, Resolved, blocking, engine, engine_problem, read_kept_send,
    read_sends, resolve,
};
use crate::problem::{Problem, json_rejection};
use crate::settings::SettingsPreview;
use crate::state::AppState;

pub use promptstack::command::{
    RenderFormat, RequestSettings as RequestOptionsBody, SendsDiff as CacheDiff,
};
pub use promptstack::compose::Slot;
pub use promptstack::provider::Format as ProviderFormat;

/// Declares the body of a render-like endpoint that names one version and one send: `ref` and
/// `send`, then the fields of its command's request, then `settings`; and how it splits into
/// [`Names`] and the command's request.
macro_rules! render_like {
    ($(#[$doc:meta])* $body:ident => $command:ident {
        $($(#[$attr:meta])* $field:ident: $ty:ty,)*
    }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $body {
            /// A label or a version id (default `production`).
            #[serde(rename = "ref")]
            #[schema(value_type = Option<crate::contract::ReferenceSchema>)]
            pub reference: Option<String>,
            /// The send context.
            #[schema(value_type = crate::contract::SendContextSchema)]
            pub send: Box<RawValue>,
            $($(#[$attr])* pub $field: $ty,)*
            /// Unsaved settings to preview in place of the stored ones, for this answer only (stage
            /// agents; any role that may render). Checked as a settings write is; nothing is stored,
            /// and the answer's `preview` is true.
            #[schema(value_type = Option<SettingsPreview>)]
            pub settings: Option<serde_json::Value>,
        }

        impl Body for $body {
            type Command = $command;

            fn split(self) -> Result<(Names, $command), Problem> {
                let names = Names::one(self.reference, self.send, self.settings);
                Ok((names, $command { $($field: self.$field,)* }))
            }
        }
    };
}

render_like! {
    /// The body of `render`, `request`, `explain` and `tools`.
    RenderRequest => RenderCommand {
        /// The target (default: the only one; required when there are several).
        target: Option<String>,
        /// The answer's format.
        #[serde(default)]
        format: RenderFormat,
        /// Which text of the target, for `text`.
        #[serde(default)]
        #[schema(value_type = command::SlotSchema)]
        slot: Slot,
        /// The full prompt (authored text plus every platform append), as `render --full`.
        #[serde(default)]
        full: bool,
        /// Options of provider requests.
        #[serde(default)]
        options: RequestOptionsBody,
    }
}

render_like! {
    /// The body of `request`.
    RequestRequest => RequestCommand {
        /// The target (default: the only one).
        target: Option<String>,
        /// The provider format (default `anthropic`).
        #[serde(default)]
        #[schema(value_type = command::ProviderFormatSchema)]
        format: ProviderFormat,
        /// Options of the request.
        #[serde(default)]
        options: RequestOptionsBody,
    }
}

render_like! {
    /// The body of `explain`.
    ExplainRequest => ExplainCommand {
        /// Only this target (default: every target).
        target: Option<String>,
        /// Also plan the breakpoints of each target's request in this provider format.
        #[schema(value_type = Option<command::ProviderFormatSchema>)]
        format: Option<ProviderFormat>,
    }
}

render_like! {
    /// The body of `tools`.
    ToolsRequest => NoRequest {}
}

/// The request of a command that takes none beyond its sends (`tools`, `lint`).
pub(crate) struct NoRequest {}

/// What a body names besides its command's request: the version, the sends (each with the name
/// its problems are located in), and the settings to preview.
pub(crate) struct Names {
    reference: Option<String>,
    sends: Vec<(Cow<'static, str>, Box<RawValue>)>,
    settings: Option<serde_json::Value>,
}

impl Names {
    /// A body's names with one send, `send`.
    fn one(
        reference: Option<String>,
        send: Box<RawValue>,
        settings: Option<serde_json::Value>,
    ) -> Names {
        Names {
            reference,
            sends: vec![(Cow::Borrowed("send"), send)],
            settings,
        }
    }
}

/// A render-like body: what it names, and its command's request.
pub(crate) trait Body: DeserializeOwned + Send {
    /// The command's request.
    type Command: Send + 'static;

    /// Splits the body, refusing what its schema cannot state.
    fn split(self) -> Result<(Names, Self::Command), Problem>;
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

/// `items`, then one warning for each of `warnings` (why parts of the answer come from the last
/// good value).
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

impl From<command::Error> for Problem {
    fn from(error: command::Error) -> Problem {
        match error {
            command::Error::TargetRequired(several) => Problem::unprocessable(
                "target-required",
                several.message("choose one with `target`"),
            ),
            command::Error::Conversation(e) => {
                Problem::unprocessable("invalid-conversation", e.to_string())
            }
            command::Error::FullInProviderFormat => Problem::unprocessable(
                "invalid-format",
                "`full` renders text or JSON; use format `text` or `json`",
            ),
            command::Error::OutOfRange(range) => Problem::unprocessable(
                "invalid-body",
                range.message(&format!("`{}`", range.option.as_str())),
            ),
            command::Error::FenceKindRequired => {
                Problem::unprocessable("invalid-body", "`kind` is required to wrap")
            }
            command::Error::Provenance(e) => Problem::unprocessable("invalid-body", e.to_string()),
            command::Error::Fence(e) => Problem::unprocessable("fence-failed", e.to_string()),
            command::Error::Engine(e) => engine_problem(e),
            other => Problem::unprocessable("render-failed", other.to_string()),
        }
    }
}

/// A version resolved and its sends read for it, with the tenant's settings applied.
pub(crate) struct Prepared {
    pub(crate) resolved: Resolved,
    /// Each send with the name its problems are located in (`send`, `sends[i]`).
    pub(crate) sends: Vec<NamedSend>,
    /// Why parts of the answer come from the last good value.
    pub(crate) warnings: Vec<String>,
    /// Whether the request's `settings` stood in for the stored ones.
    pub(crate) preview: bool,
}

impl Prepared {
    /// Resolves `reference` of agent `name` in the key's tenant and reads `sends` for it. The
    /// sends are checked before the tenant's settings are read, so an invalid one costs no store
    /// read; `settings`, when given, are previewed in place of the stored ones.
    pub(crate) async fn new(
        state: &AppState,
        auth: &Auth,
        name: &str,
        reference: Option<&str>,
        sends: &[(Cow<'static, str>, &RawValue)],
        settings: Option<&serde_json::Value>,
    ) -> Result<Prepared, Problem> {
        let preview = crate::settings::preview(settings)?;
        let tenant = &auth.0.tenant;
        let resolved = resolve(state, tenant, name, reference).await?;
        let mut warnings = resolved.stale.clone();
        let mut read = match sends {
            // The one send of a render-like body: read once per distinct text, then kept.
            [(what, send)] if what == "send" => {
                vec![(
                    what.clone(),
                    read_kept_send(state, tenant, &resolved, send).await?,
                )]
            }
            _ => read_sends(state, &resolved.agent, sends).await?,
        };
        let overrides = Overrides::read(state, tenant, &resolved, &preview, &mut warnings).await?;
        for (_, send) in &mut read {
            overrides.apply_shared(send);
        }
        Ok(Prepared {
            resolved,
            sends: read,
            warnings,
            preview: !preview.is_empty(),
        })
    }

    /// The one send of a body that names one.
    fn send(&self) -> Result<&promptstack::SendContext, Problem> {
        self.sends.first().map(|(_, send)| &**send).ok_or_else(|| {
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the body named no send",
            )
        })
    }

    /// Assembles the send (engine work: call it within [`Op::run`]) and runs `work` on it.
    fn assembled<T>(
        &self,
        work: impl FnOnce(&Assembled<'_>) -> Result<T, Problem>,
    ) -> Result<T, Problem> {
        let agent = &self.resolved.agent;
        let send = self.send()?;
        let assembly = agent.assemble(send).map_err(engine_problem)?;
        work(&Assembled {
            agent,
            send,
            assembly: &assembly,
        })
    }

    /// An answer from `assembly` (none for `lint`), with its attribution marked as a preview when
    /// it is one, and `items` then the stale warnings as its diagnostics.
    fn answer<'a>(
        &self,
        assembly: Option<&Assembly>,
        items: impl Iterator<Item = &'a promptstack::diagnostic::Diagnostic>,
    ) -> RenderResponse {
        let mut response = RenderResponse::new(self.attribution(assembly));
        response.diagnostics = diagnostics(items, &self.warnings);
        response
    }

    /// The attribution of an answer from `assembly`, marked as a preview when it is one.
    fn attribution(&self, assembly: Option<&Assembly>) -> Attribution {
        let fingerprint = assembly.map_or_else(String::new, |a| {
            crate::engine::hex(a.fingerprint().as_bytes())
        });
        let mut attribution = self.resolved.attribution(fingerprint);
        attribution.preview = self.preview;
        attribution
    }
}

/// What every render-like handler starts from: the key, the command's request, and the version
/// and sends the body names, resolved and read. Rejections are problems: 401 before anything
/// else is read, then the body's 400/413/415/422, then the reference's and the sends'.
pub(crate) struct Op<B: Body> {
    pub(crate) auth: Auth,
    pub(crate) name: String,
    /// What the body names.
    pub(crate) names: Names,
    /// The command's request.
    pub(crate) command: B::Command,
    pub(crate) prepared: Prepared,
}

impl<B: Body> FromRequest<AppState> for Op<B> {
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
        let (names, command) = body.split()?;
        let sends: Vec<_> = names
            .sends
            .iter()
            .map(|(what, send)| (what.clone(), &**send))
            .collect();
        let prepared = Prepared::new(
            state,
            &auth,
            &name,
            names.reference.as_deref(),
            &sends,
            names.settings.as_ref(),
        )
        .await?;
        Ok(Op {
            auth,
            name,
            names,
            command,
            prepared,
        })
    }
}

impl<B: Body> Op<B> {
    /// Runs `work` on the prepared sends and the command's request with the server's limits and
    /// the bundled rules. Work over one send runs on the request's thread or the blocking pool as
    /// the version's recent cost decides (see `engine`), and is timed into that cost; work over
    /// several (`lint`) always runs on the blocking pool, since it may be long and its time says
    /// nothing about one send's.
    async fn run<T: Send + 'static>(
        self,
        state: &AppState,
        work: impl FnOnce(&Prepared, &B::Command, &Env<'_>) -> Result<T, Problem> + Send + 'static,
    ) -> Result<T, Problem> {
        let limits = state.inner.config.limits.clone();
        let cost = Arc::clone(&self.prepared.resolved.cost);
        let one = self.prepared.sends.len() == 1;
        let (prepared, command) = (self.prepared, self.command);
        let work = move || work(&prepared, &command, &Env::bundled(&limits));
        if one {
            engine(state, &cost, work).await?
        } else {
            blocking(state, work).await?
        }
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
    op.run(&state, |p, body, env| {
        body.check(env.limits)?;
        p.assembled(|on| {
            let result = command::render(on, body, env)?;
            let mut response = p.answer(Some(on.assembly), result.diagnostics.iter());
            response.target = result.target;
            response.put(result.rendered, body.format == RenderFormat::Json);
            Ok(response)
        })
    })
    .await
}

impl RenderResponse {
    /// Puts what `render` rendered in its place: the text, or the request body, and the detail
    /// (the full prompt's parts only in `json`).
    fn put(&mut self, rendered: Rendered, json: bool) {
        match rendered {
            Rendered::Full(full) => {
                if json {
                    self.detail = to_value(&full);
                }
                self.text = Some(full.text);
            }
            Rendered::Request(request) => {
                self.detail = Some(serde_json::json!({
                    "format": request.format.as_str(),
                    "model": request.model,
                    "plan": to_value(&request.plan),
                }));
                self.body = Some(request.body);
            }
            Rendered::Compositions(compositions) => {
                self.detail = Some(serde_json::json!({ "targets": to_value(&compositions) }));
            }
            Rendered::Text(text) => self.text = Some(text),
        }
    }
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
    op.run(&state, |p, body, env| {
        p.assembled(|on| {
            let command::Diagnosed {
                value: request,
                diagnostics,
            } = command::request(on, body, env)?;
            let mut response = p.answer(Some(on.assembly), diagnostics.iter());
            response.detail = Some(serde_json::json!({
                "format": request.format.as_str(),
                "model": request.model,
                "plan": to_value(&request.plan),
                "units": to_value(&request.units),
            }));
            response.target = Some(request.target);
            response.body = Some(request.body);
            Ok(response)
        })
    })
    .await
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
    op.run(&state, |p, body, env| {
        p.assembled(|on| {
            let explanation = command::explain(on, body, env)?;
            let mut response = p.answer(Some(on.assembly), std::iter::empty());
            response.target.clone_from(&body.target);
            response.detail = to_value(&explanation);
            Ok(response)
        })
    })
    .await
}

/// The answer of `tools`: the attribution, and the report of `promptstack tools --json`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolsResponse {
    /// Which version produced it.
    #[serde(flatten)]
    pub attribution: Attribution,
    /// The toolset, as `promptstack tools --json` prints it.
    pub detail: promptstack::report::ToolsReport,
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
    op.run(&state, |p, NoRequest {}, _| {
        p.assembled(|on| {
            let result = command::tools(on);
            Ok(ToolsResponse {
                attribution: p.attribution(Some(on.assembly)),
                detail: result.value,
                diagnostics: diagnostics(result.diagnostics.iter(), &p.warnings),
            })
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
    #[schema(value_type = command::ProviderFormatSchema)]
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

/// The second side of a `diff`: its reference and send, each defaulting to the first side's.
pub(crate) struct SecondSide {
    reference: Option<String>,
    send: Option<Box<RawValue>>,
}

impl Body for DiffRequest {
    type Command = (SecondSide, command::DiffRequest);

    fn split(self) -> Result<(Names, Self::Command), Problem> {
        let second = SecondSide {
            reference: self.ref_b,
            send: self.send_b,
        };
        let request = command::DiffRequest {
            target: self.target,
            format: self.format,
            options: self.options,
        };
        let names = Names::one(self.reference, self.send, self.settings);
        Ok((names, (second, request)))
    }
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
    let b = op.second_side(&state).await?;
    op.run(&state, move |a, (_, request), env| {
        a.assembled(|on_a| {
            b.assembled(|on_b| {
                let result = command::diff(on_a, on_b, request, env)?;
                let warnings = [a.warnings.as_slice(), b.warnings.as_slice()].concat();
                let mut response = RenderResponse::new(a.attribution(Some(on_a.assembly)));
                response.diagnostics = diagnostics(std::iter::empty(), &warnings);
                response.target = Some(result.target.clone());
                response.detail = to_value(&result);
                Ok(response)
            })
        })
    })
    .await
}

impl Op<DiffRequest> {
    /// Resolves and reads the second side of a `diff`: its reference and send, each the first
    /// side's unless the body gives one, with the same settings.
    async fn second_side(&self, state: &AppState) -> Result<Prepared, Problem> {
        let (second, names) = (&self.command.0, &self.names);
        let reference = second.reference.as_deref().or(names.reference.as_deref());
        let first = names.sends.iter().map(|(_, send)| &**send);
        let sends: Vec<_> = (second.send.as_deref().into_iter().chain(first))
            .take(1)
            .map(|send| (Cow::Borrowed("send"), send))
            .collect();
        let settings = names.settings.as_ref();
        Prepared::new(state, &self.auth, &self.name, reference, &sends, settings).await
    }
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

impl Body for LintRequest {
    type Command = NoRequest;

    /// Refuses more than [`crate::bundle::MAX_ENTRIES`] sends.
    fn split(self) -> Result<(Names, NoRequest), Problem> {
        if self.sends.len() > crate::bundle::MAX_ENTRIES {
            return Err(Problem::unprocessable(
                "invalid-body",
                format!(
                    "`sends` holds {} entries; at most {} are checked at once",
                    self.sends.len(),
                    crate::bundle::MAX_ENTRIES
                ),
            ));
        }
        let sends = (self.sends.into_iter().enumerate())
            .map(|(i, send)| (Cow::Owned(format!("sends[{i}]")), send))
            .collect();
        let names = Names {
            reference: self.reference,
            sends,
            settings: self.settings,
        };
        Ok((names, NoRequest {}))
    }
}

/// `POST /v1/agents/{name}/lint`: the findings of `promptstack lint --json`.
#[utoipa::path(post, path = "/v1/agents/{name}/lint", tag = "render",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = LintRequest,
    responses((status = 200, body = RenderResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn lint(
    State(state): State<AppState>,
    op: Op<LintRequest>,
) -> Result<RenderResponse, Problem> {
    op.run(&state, |p, NoRequest {}, _| {
        let sends = p.sends.iter().map(|(what, send)| (what.as_ref(), &**send));
        let result = command::lint(&p.resolved.agent, sends);
        let mut response = p.answer(None, std::iter::empty());
        response.detail = to_value(&result);
        Ok(response)
    })
    .await
}
