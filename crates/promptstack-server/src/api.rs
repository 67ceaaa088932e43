//! The store-backed endpoints: agents, versions (publish), labels, settings, audit.
// utoipa's `path` macro writes the parameter types it is given fully qualified.
#![allow(unused_qualifications)]

use std::borrow::Cow;

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use promptstack_store::{
    AgentName, AuditEntry, Expected, Label, LabelName, NewVersion, Role, Settings, SettingsScope,
    VersionId, VersionInfo,
};
use serde::{Deserialize, Serialize};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::{IntoParams, PartialSchema, ToSchema};

use crate::auth::Auth;
use crate::bundle::{BUNDLE_MEDIA_TYPE, Bundle};
use crate::contract::{constrained, register};
use crate::engine::{
    DEFAULT_LABEL, PROTECTED_LABEL, agent_name, compiled, engine_problem, lookup_problem,
    require_agent, store_problem,
};
use crate::page::{NamePageQuery, PageOf, PageQuery, query};
use crate::problem::{Problem, json_rejection, printable};
use crate::render::{CacheDiff, ProviderFormat, RequestOptionsBody};
use crate::state::AppState;

/// The longest reason a forced move of `production` may give, in characters.
const MAX_FORCE_REASON: usize = 1000;

/// An agent.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentView {
    /// Its name.
    pub name: String,
    /// When its first version was published (RFC 3339).
    pub created_at: String,
}

/// A version, without its bundle.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionView {
    /// The agent.
    pub agent: String,
    /// The version id.
    pub id: String,
    /// The bundle's length in bytes.
    pub size: u64,
    /// When it was published (RFC 3339).
    pub created_at: String,
    /// The key that published it (none for the operator).
    pub created_by: Option<String>,
    /// The warnings publishing found.
    #[schema(value_type = Vec<Object>)]
    pub warnings: serde_json::Value,
}

impl From<&VersionInfo> for VersionView {
    fn from(v: &VersionInfo) -> Self {
        VersionView {
            agent: v.agent.to_string(),
            id: v.id.to_string(),
            size: v.size,
            created_at: v.created_at.to_string(),
            created_by: v.created_by.as_ref().map(ToString::to_string),
            warnings: v.warnings.clone(),
        }
    }
}

/// A version with its bundle.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionDetail {
    /// The version.
    #[serde(flatten)]
    pub version: VersionView,
    /// The bundle as published (canonical form).
    pub bundle: Bundle,
}

/// A label.
#[derive(Debug, Serialize, ToSchema)]
pub struct LabelView {
    /// The agent.
    pub agent: String,
    /// The label's name.
    pub name: String,
    /// The version it points at.
    pub version: String,
    /// When it last moved (RFC 3339).
    pub updated_at: String,
    /// The key that last moved it (none for the operator).
    pub updated_by: Option<String>,
}

impl From<&Label> for LabelView {
    fn from(l: &Label) -> Self {
        LabelView {
            agent: l.agent.to_string(),
            name: l.name.to_string(),
            version: l.version.to_string(),
            updated_at: l.updated_at.to_string(),
            updated_by: l.updated_by.as_ref().map(ToString::to_string),
        }
    }
}

/// `GET /v1/agents`: the tenant's agents.
#[utoipa::path(get, path = "/v1/agents", tag = "versions", params(NamePageQuery),
    responses((status = 200, body = PageOf<AgentView>), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn list_agents(
    State(state): State<AppState>,
    auth: Auth,
    page: Result<Query<NamePageQuery>, QueryRejection>,
) -> Result<Json<PageOf<AgentView>>, Problem> {
    let page = query(page)?.request()?;
    let found = state
        .inner
        .store
        .agents(&auth.0.tenant, &page)
        .await
        .map_err(|e| store_problem(&state, e))?;
    Ok(Json(PageOf {
        items: found
            .items
            .iter()
            .map(|a| AgentView {
                name: a.name.to_string(),
                created_at: a.created_at.to_string(),
            })
            .collect(),
        next: found.next.map(|c| c.as_str().to_owned()),
    }))
}

/// Where to measure a publish's cache impact.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PublishQuery {
    /// The label whose version the new one is compared with (default `production`).
    #[param(value_type = Option<crate::contract::LabelNameSchema>, inline)]
    pub label: Option<String>,
    /// The provider format whose breakpoints are compared (default `anthropic`).
    #[param(value_type = Option<promptstack::command::ProviderFormatSchema>)]
    pub format: Option<ProviderFormat>,
}

/// The answer to a publish.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublishResponse {
    /// The version as stored.
    pub version: VersionView,
    /// Whether this call created it (`false`: the same bundle was published before).
    pub created: bool,
    /// The warnings compiling and linting found, located.
    #[schema(value_type = Vec<Object>)]
    pub warnings: Vec<serde_json::Value>,
    /// What the new version would do to provider caches, against the labelled version; `null`
    /// when it could not be measured (the version is published all the same, and a warning in
    /// `warnings` says why).
    pub impact: Option<CacheImpact>,
    /// Whether the version has been evaluated against `production`; `null` when it could not be
    /// read (a warning says why).
    pub evaluation: Option<EvaluationView>,
}

/// Where a version stands against `production` in eval runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct EvaluationView {
    /// The version `production` points at (none before it is first moved).
    pub production: Option<String>,
    /// Whether a finished eval run holds both this version and `production` (always true for
    /// the production version itself).
    pub evaluated: bool,
    /// What the gate would say to moving `production` to this version, when the production
    /// version's bundle declares a gate suite.
    pub gate: Option<crate::evals::GateView>,
}

/// A publish's cache impact against the version behind a label.
#[derive(Debug, Serialize, ToSchema)]
pub struct CacheImpact {
    /// The label compared with.
    pub label: String,
    /// The version behind it (none when the label does not exist yet).
    pub against: Option<String>,
    /// Per example send of the bundle: whether the stable prefix changes, where it first
    /// diverges and which breakpoints survive.
    pub sends: Vec<SendImpact>,
}

/// The cache impact on one example send.
#[derive(Debug, Serialize, ToSchema)]
pub struct SendImpact {
    /// The example send's name.
    pub send: String,
    /// Whether the stable prefix (the cacheable part) changes.
    pub stable_prefix_changed: Option<bool>,
    /// The comparison of the system text and the request (as `diff`).
    pub diff: Option<crate::render::CacheDiff>,
    /// Why this send could not be compared (it does not assemble on one side, several targets).
    pub error: Option<String>,
}

/// `POST /v1/agents/{name}/versions`: publish a bundle (editor or admin).
#[utoipa::path(post, path = "/v1/agents/{name}/versions", tag = "versions",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent"), PublishQuery),
    request_body = Bundle,
    responses((status = 201, body = PublishResponse), (status = 200, body = PublishResponse, description = "Already published"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "The spec has errors; every located diagnostic"),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn publish(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    params: Result<Query<PublishQuery>, QueryRejection>,
    body: Result<Json<Bundle>, JsonRejection>,
) -> Result<Response, Problem> {
    auth.require(Role::Editor, "publishing")?;
    let params = query(params)?;
    let name = AgentName::parse(&name)
        .map_err(|e| Problem::unprocessable("invalid-name", e.to_string()))?;
    let Json(bundle) = body.map_err(json_rejection)?;
    let label_text = params.label.as_deref().unwrap_or(DEFAULT_LABEL);
    let label = LabelName::parse(label_text)
        .map_err(|e| Problem::unprocessable("invalid-label", e.to_string()))?;
    let format = params.format.unwrap_or_default();
    let published = publish_bundle(
        &state,
        &auth.0.tenant,
        &name,
        &bundle,
        Some(&auth.0.key_id),
        &label,
        format,
    )
    .await?;
    let status = if published.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(published)).into_response())
}

/// Compiles, lints and publishes `bundle` as a version of `name`, and measures its cache impact
/// against `label`: what `POST /v1/agents/{name}/versions` does, for the operator too.
pub(crate) async fn publish_bundle(
    state: &AppState,
    tenant: &promptstack_store::Tenant,
    name: &AgentName,
    bundle: &Bundle,
    by: Option<&promptstack_store::KeyId>,
    label: &LabelName,
    format: ProviderFormat,
) -> Result<PublishResponse, Problem> {
    bundle.check_shape()?;
    let limits = state.inner.config.limits.clone();
    let owned = bundle.clone();
    let (agent, sends, findings) = crate::engine::blocking(state, move || {
        // Suites compile their patterns: engine work, within the tenant's share like the spec.
        owned.check_suites()?;
        let agent = owned.compile(&limits)?;
        let mut sends = Vec::new();
        for (send_name, value) in &owned.sends {
            let bytes = serde_json::to_vec(value).unwrap_or_default();
            let what = format!("sends/{send_name}");
            let ctx = promptstack::SendContext::from_json_for(&bytes, &what, agent.spec())
                .map_err(|e| crate::bundle::spec_problem("invalid-send", &e))?;
            sends.push((what, ctx));
        }
        let findings =
            promptstack::report::lint(&agent, sends.iter().map(|(n, s)| (n.as_str(), s)));
        Ok::<_, Problem>((agent, sends, findings))
    })
    .await??;
    let (errors, warnings): (Vec<_>, Vec<_>) = findings
        .iter()
        .filter(|f| f.diagnostic.severity >= promptstack::diagnostic::Severity::Warning)
        .filter_map(|f| {
            serde_json::to_value(f)
                .ok()
                .map(|v| (f.diagnostic.severity, v))
        })
        .partition(|(severity, _)| *severity == promptstack::diagnostic::Severity::Error);
    if !errors.is_empty() {
        return Err(Problem::unprocessable(
            "lint-errors",
            format!(
                "the bundle has {} lint error(s); nothing was published",
                errors.len()
            ),
        )
        .with_diagnostics(errors.into_iter().map(|(_, v)| v).collect()));
    }
    let warnings: Vec<serde_json::Value> = warnings.into_iter().map(|(_, v)| v).collect();
    let id = VersionId::parse(&bundle.id())
        .map_err(|e| Problem::unprocessable("invalid-bundle", e.to_string()))?;
    let version = NewVersion::new(id.clone(), BUNDLE_MEDIA_TYPE, bundle.canonical())
        .warnings(serde_json::Value::Array(warnings.clone()));
    let published = state
        .inner
        .store
        .publish(tenant, name, &version, by)
        .await
        .map_err(|e| store_problem(state, e))?;
    let agent = std::sync::Arc::new(agent);
    state.inner.compiled.insert(
        (tenant.clone(), name.clone(), id),
        crate::state::Compiled::new(std::sync::Arc::clone(&agent)),
    );
    // The version is committed: from here on nothing may turn the answer into an error.
    let mut warnings = warnings;
    let impact = match impact(state, tenant, name, label, agent, sends, format).await {
        Ok(impact) => Some(impact),
        Err(problem) => {
            warnings.push(serde_json::json!({
                "severity": "warning",
                "code": "impact-unavailable",
                "message": format!(
                    "the version was published, but its cache impact against `{label}` could not \
                     be measured: {}",
                    problem.detail
                ),
            }));
            None
        }
    };
    let version = &published.version.id;
    let evaluation = match evaluation(state, tenant, name, version).await {
        Ok(evaluation) => Some(evaluation),
        Err(problem) => {
            warnings.push(serde_json::json!({
                "severity": "warning",
                "code": "evaluation-unavailable",
                "message": format!(
                    "the version was published, but whether it was evaluated against \
                     `production` could not be read: {}",
                    problem.detail
                ),
            }));
            None
        }
    };
    Ok(PublishResponse {
        version: VersionView::from(&published.version),
        created: published.created,
        warnings,
        impact,
        evaluation,
    })
}

/// Where `version` stands against `production` in eval runs.
async fn evaluation(
    state: &AppState,
    tenant: &promptstack_store::Tenant,
    name: &AgentName,
    version: &VersionId,
) -> Result<EvaluationView, Problem> {
    let production = current_production(state, tenant, name).await?;
    let Some(production) = production else {
        return Ok(EvaluationView {
            production: None,
            evaluated: false,
            gate: None,
        });
    };
    let evaluated = production == *version
        || crate::evals::evaluated_together(state, tenant, name, &production, version).await?;
    let gate = crate::evals::gate(state, tenant, name, Some(&production), version).await?;
    Ok(EvaluationView {
        production: Some(production.to_string()),
        evaluated,
        gate,
    })
}

/// The version `production` points at, read from the store (not a cache: a gate must read it
/// as the move will find it).
async fn current_production(
    state: &AppState,
    tenant: &promptstack_store::Tenant,
    name: &AgentName,
) -> Result<Option<VersionId>, Problem> {
    let label = LabelName::parse(PROTECTED_LABEL)
        .map_err(|e| Problem::unprocessable("invalid-label", e.to_string()))?;
    match state.inner.store.label(tenant, name, &label).await {
        Ok(found) => Ok(Some(found.version)),
        Err(e) if e.kind() == promptstack_store::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(store_problem(state, e)),
    }
}

async fn impact(
    state: &AppState,
    tenant: &promptstack_store::Tenant,
    name: &AgentName,
    label: &LabelName,
    agent: std::sync::Arc<promptstack::Agent>,
    sends: Vec<(String, promptstack::SendContext)>,
    format: ProviderFormat,
) -> Result<CacheImpact, Problem> {
    let against = match state.inner.store.label(tenant, name, label).await {
        Ok(found) => Some(found.version),
        Err(e) if e.kind() == promptstack_store::ErrorKind::NotFound => None,
        Err(e) => return Err(store_problem(state, e)),
    };
    let mut impact = CacheImpact {
        label: label.to_string(),
        against: against.as_ref().map(ToString::to_string),
        sends: Vec::new(),
    };
    let Some(against) = against else {
        return Ok(impact);
    };
    let old = compiled(state, tenant, name, &against).await?.agent;
    let limits = state.inner.config.limits.clone();
    impact.sends = crate::engine::blocking(state, move || {
        sends
            .iter()
            .map(|(send_name, ctx)| send_impact(&old, &agent, send_name, ctx, format, &limits))
            .collect::<Vec<_>>()
    })
    .await?;
    Ok(impact)
}

/// What publishing `agent` over `old` does to one example send's cache.
fn send_impact(
    old: &promptstack::Agent,
    agent: &promptstack::Agent,
    send_name: &str,
    ctx: &promptstack::SendContext,
    format: ProviderFormat,
    limits: &promptstack::limits::Limits,
) -> SendImpact {
    let send = send_name.trim_start_matches("sends/").to_owned();
    let compared = (|| {
        let new_assembly = agent.assemble(ctx).map_err(engine_problem)?;
        let old_assembly = old.assemble(ctx).map_err(engine_problem)?;
        let targets: Vec<&str> = new_assembly.target_ids().collect();
        let target = targets.first().copied().unwrap_or_default().to_owned();
        let changed = old_assembly.stable() != new_assembly.stable();
        let side = |agent, assembly| promptstack::command::Assembled {
            agent,
            send: ctx,
            assembly,
        };
        let diff = CacheDiff::compare(
            &side(old, &old_assembly),
            &side(agent, &new_assembly),
            &target,
            format,
            &RequestOptionsBody::default(),
            &promptstack::command::Env::bundled(limits),
        )?;
        Ok::<_, Problem>((changed, diff))
    })();
    match compared {
        Ok((changed, diff)) => SendImpact {
            send,
            stable_prefix_changed: Some(changed),
            diff: Some(diff),
            error: None,
        },
        Err(problem) => SendImpact {
            send,
            stable_prefix_changed: None,
            diff: None,
            error: Some(problem.detail),
        },
    }
}

/// `GET /v1/agents/{name}/versions`: an agent's versions, newest first.
#[utoipa::path(get, path = "/v1/agents/{name}/versions", tag = "versions",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent"), PageQuery),
    responses((status = 200, body = PageOf<VersionView>), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn list_versions(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    page: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<PageOf<VersionView>>, Problem> {
    let name = agent_name(&name)?;
    let page = query(page)?.request()?;
    require_agent(&state, &auth.0.tenant, &name).await?;
    let found = state
        .inner
        .store
        .versions(&auth.0.tenant, &name, &page)
        .await
        .map_err(|e| store_problem(&state, e))?;
    Ok(Json(PageOf {
        items: found.items.iter().map(VersionView::from).collect(),
        next: found.next.map(|c| c.as_str().to_owned()),
    }))
}

/// `GET /v1/agents/{name}/versions/{version}`: one version with its bundle.
#[utoipa::path(get, path = "/v1/agents/{name}/versions/{version}", tag = "versions",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent"), ("version" = inline(crate::contract::VersionIdSchema), Path, description = "The version id")),
    responses((status = 200, body = VersionDetail), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn get_version(
    State(state): State<AppState>,
    auth: Auth,
    Path((name, version)): Path<(String, String)>,
) -> Result<Json<VersionDetail>, Problem> {
    let name = agent_name(&name)?;
    let id = VersionId::parse(&version).map_err(|_| {
        Problem::not_found(format!(
            "agent `{name}` has no version `{}`",
            printable(&version)
        ))
    })?;
    let found = state
        .inner
        .store
        .version(&auth.0.tenant, &name, &id)
        .await
        .map_err(|e| lookup_problem(&state, e, format!("agent `{name}` has no such version")))?;
    Ok(Json(VersionDetail {
        version: VersionView::from(&found.info),
        bundle: Bundle::from_stored(&found.bundle)?,
    }))
}

/// `GET /v1/agents/{name}/labels`: an agent's labels.
#[utoipa::path(get, path = "/v1/agents/{name}/labels", tag = "labels",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    responses((status = 200, body = Vec<LabelView>), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn list_labels(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
) -> Result<Json<Vec<LabelView>>, Problem> {
    let name = agent_name(&name)?;
    require_agent(&state, &auth.0.tenant, &name).await?;
    let labels = state
        .inner
        .store
        .labels(&auth.0.tenant, &name)
        .await
        .map_err(|e| store_problem(&state, e))?;
    Ok(Json(labels.iter().map(LabelView::from).collect()))
}

/// A label move.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelMoveRequest {
    /// The version the label is to point at.
    #[schema(value_type = crate::contract::VersionIdSchema)]
    pub version: String,
    /// Compare-and-set: the version the label must point at now, or `"absent"` when it must
    /// not exist yet. Omitted: move whatever it points at.
    #[schema(value_type = Option<crate::contract::ExpectedVersionSchema>)]
    pub expected: Option<String>,
    /// Move `production` even though its gate refuses (admins), with `reason`; audited as
    /// `label.force` with the comparison overridden.
    #[serde(default)]
    pub force: bool,
    /// Why the gate is overridden; required with `force`.
    #[schema(max_length = 1000)]
    pub reason: Option<String>,
}

/// The answer to a label move.
#[derive(Debug, Serialize, ToSchema)]
pub struct LabelMoveResponse {
    /// The label after the move.
    pub label: LabelView,
    /// What it pointed at before (none when created).
    pub from: Option<String>,
    /// Whether anything changed.
    pub changed: bool,
    /// The gate's reading of the move (`production` only, when the version it pointed at
    /// declares a gate suite).
    pub gate: Option<crate::evals::GateView>,
    /// Whether the move went past a gate that refused it.
    pub forced: bool,
}

/// `PUT /v1/agents/{name}/labels/{label}`: move a label (the deploy and the rollback).
/// `production` is admins' only; every move is audited.
#[utoipa::path(put, path = "/v1/agents/{name}/labels/{label}", tag = "labels",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent"), ("label" = inline(crate::contract::LabelNameSchema), Path, description = "The label")),
    request_body = LabelMoveSchema,
    responses((status = 200, body = LabelMoveResponse), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn move_label(
    State(state): State<AppState>,
    auth: Auth,
    Path((name, label)): Path<(String, String)>,
    body: Result<Json<LabelMoveRequest>, JsonRejection>,
) -> Result<Json<LabelMoveResponse>, Problem> {
    let name = agent_name(&name)?;
    let tenant = &auth.0.tenant;
    require_agent(&state, tenant, &name).await?;
    // The name's rule refuses 64 hex digits too: a reference of that shape names a version.
    let label = LabelName::parse(&label)
        .map_err(|e| Problem::unprocessable("invalid-label", e.to_string()))?;
    if label.as_str() == PROTECTED_LABEL {
        auth.require(Role::Admin, "moving `production`")?;
    } else {
        auth.require(Role::Editor, "moving a label")?;
    }
    let Json(body) = body.map_err(json_rejection)?;
    let to = VersionId::parse(&body.version)
        .map_err(|e| Problem::unprocessable("invalid-version", e.to_string()))?;
    let expected = match body.expected.as_deref() {
        None => Expected::Any,
        Some("absent") => Expected::Absent,
        Some(id) => Expected::Version(
            VersionId::parse(id)
                .map_err(|e| Problem::unprocessable("invalid-version", e.to_string()))?,
        ),
    };
    let reason = body
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    if body.force && reason.is_none_or(|r| r.chars().count() > MAX_FORCE_REASON) {
        return Err(Problem::unprocessable(
            "invalid-force",
            format!("`force` needs a `reason` of 1 to {MAX_FORCE_REASON} characters"),
        ));
    }
    let mut gate = None;
    let mut expected = expected;
    if label.as_str() == PROTECTED_LABEL {
        let current = current_production(&state, tenant, &name).await?;
        gate = crate::evals::gate(&state, tenant, &name, current.as_ref(), &to).await?;
        // The gate read `current`: the move happens only if it is still what production holds.
        if gate.is_some()
            && let (Expected::Any, Some(current)) = (&expected, &current)
        {
            expected = Expected::Version(current.clone());
        }
    }
    let refused = gate.as_ref().is_some_and(|g| !g.passes);
    if !body.force
        && let Some(gate) = gate.as_ref().filter(|g| !g.passes)
    {
        return Err(Problem::new(
            StatusCode::CONFLICT,
            "gate-refused",
            format!(
                "`production` does not move to this version: its gate suite `{}` says {}; an \
                 admin may move it anyway with `force` and a `reason`",
                gate.suite, gate.reason
            ),
        )
        .with_gate(serde_json::to_value(gate).unwrap_or_default()));
    }
    let store = &state.inner.store;
    let by = Some(&auth.0.key_id);
    let moved = if let Some(gate) = gate.as_ref().filter(|g| !g.passes) {
        let note = gate.audit_note(reason.unwrap_or_default());
        store
            .force_label(tenant, &name, &label, &to, &expected, by, &note)
            .await
    } else {
        store
            .move_label(tenant, &name, &label, &to, &expected, by)
            .await
    }
    .map_err(|e| store_problem(&state, e))?;
    state
        .inner
        .labels
        .expire(&(tenant.clone(), name.clone(), label.clone()));
    Ok(Json(LabelMoveResponse {
        label: LabelView::from(&moved.label),
        from: moved.from.as_ref().map(ToString::to_string),
        changed: moved.changed,
        gate,
        forced: refused && moved.changed,
    }))
}

/// The body of a label move, with what `force` requires: a `reason` that is not blank.
pub struct LabelMoveSchema;

impl PartialSchema for LabelMoveSchema {
    fn schema() -> RefOr<Schema> {
        constrained::<LabelMoveRequest>(serde_json::json!([
            { "not": { "properties": { "force": { "const": true } }, "required": ["force"] } },
            {
                "properties": { "reason": { "type": "string", "pattern": "\\S" } },
                "required": ["reason"],
            },
        ]))
    }
}

impl ToSchema for LabelMoveSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("LabelMoveBody")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        register::<LabelMoveRequest>(schemas);
    }
}

/// A settings document with its revision.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsView {
    /// The document: `{"instructions": {"enabled", "text"}}` for a tenant,
    /// `{"auto_injections": {...}}` for an agent. Empty when never written.
    #[schema(value_type = Object)]
    pub document: serde_json::Value,
    /// 0 when never written, then one more per write.
    pub revision: u64,
    /// When it was last written (RFC 3339).
    pub updated_at: Option<String>,
    /// The key that last wrote it.
    pub updated_by: Option<String>,
}

impl SettingsView {
    fn of(settings: Option<&Settings>) -> SettingsView {
        match settings {
            Some(s) => SettingsView {
                document: s.document.clone(),
                revision: s.revision,
                updated_at: Some(s.updated_at.to_string()),
                updated_by: s.updated_by.as_ref().map(ToString::to_string),
            },
            None => SettingsView {
                document: serde_json::json!({}),
                revision: 0,
                updated_at: None,
                updated_by: None,
            },
        }
    }
}

/// A settings write (its schemas: `contract::TenantSettingsWriteSchema` and
/// `contract::AgentSettingsWriteSchema`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsWrite {
    /// The new document.
    pub document: serde_json::Value,
    /// Compare-and-set: the revision being replaced (0: never written).
    #[serde(default, deserialize_with = "crate::contract::whole")]
    pub expected_revision: Option<u64>,
}

async fn read_settings(
    state: &AppState,
    auth: &Auth,
    scope: SettingsScope,
) -> Result<Json<SettingsView>, Problem> {
    let found = state
        .inner
        .store
        .settings(&auth.0.tenant, &scope)
        .await
        .map_err(|e| store_problem(state, e))?;
    Ok(Json(SettingsView::of(found.as_ref())))
}

async fn write_settings(
    state: &AppState,
    auth: &Auth,
    scope: SettingsScope,
    body: Result<Json<SettingsWrite>, JsonRejection>,
) -> Result<Json<SettingsView>, Problem> {
    auth.require(Role::Admin, "writing settings")?;
    let Json(body) = body.map_err(json_rejection)?;
    crate::settings::check_document(&scope, &body.document)?;
    let tenant = &auth.0.tenant;
    let written = state
        .inner
        .store
        .put_settings(
            tenant,
            &scope,
            &body.document,
            body.expected_revision,
            Some(&auth.0.key_id),
        )
        .await
        .map_err(|e| store_problem(state, e))?;
    let agent = match &scope {
        SettingsScope::Agent(agent) => Some(agent.clone()),
        _ => None,
    };
    state.inner.settings.expire(&(tenant.clone(), agent));
    Ok(Json(SettingsView::of(Some(&written))))
}

/// `GET /v1/settings`: the tenant's settings (its instructions).
#[utoipa::path(get, path = "/v1/settings", tag = "settings",
    responses((status = 200, body = SettingsView), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn get_tenant_settings(
    State(state): State<AppState>,
    auth: Auth,
) -> Result<Json<SettingsView>, Problem> {
    read_settings(&state, &auth, SettingsScope::Tenant).await
}

/// `PUT /v1/settings`: write the tenant's settings (admins; audited).
#[utoipa::path(put, path = "/v1/settings", tag = "settings",
    request_body = crate::contract::TenantSettingsWriteSchema,
    responses((status = 200, body = SettingsView), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn put_tenant_settings(
    State(state): State<AppState>,
    auth: Auth,
    body: Result<Json<SettingsWrite>, JsonRejection>,
) -> Result<Json<SettingsView>, Problem> {
    write_settings(&state, &auth, SettingsScope::Tenant, body).await
}

/// `GET /v1/agents/{name}/settings`: an agent's settings (its `[auto_injections]` overrides).
#[utoipa::path(get, path = "/v1/agents/{name}/settings", tag = "settings",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    responses((status = 200, body = SettingsView), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn get_agent_settings(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
) -> Result<Json<SettingsView>, Problem> {
    let name = agent_name(&name)?;
    require_agent(&state, &auth.0.tenant, &name).await?;
    read_settings(&state, &auth, SettingsScope::Agent(name)).await
}

/// `PUT /v1/agents/{name}/settings`: write an agent's settings (admins; audited).
#[utoipa::path(put, path = "/v1/agents/{name}/settings", tag = "settings",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = crate::contract::AgentSettingsWriteSchema,
    responses((status = 200, body = SettingsView), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn put_agent_settings(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<SettingsWrite>, JsonRejection>,
) -> Result<Json<SettingsView>, Problem> {
    let name = agent_name(&name)?;
    require_agent(&state, &auth.0.tenant, &name).await?;
    write_settings(&state, &auth, SettingsScope::Agent(name), body).await
}

/// An audit entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditView {
    /// When (RFC 3339).
    pub at: String,
    /// The key that did it (none for the operator).
    pub actor: Option<String>,
    /// What was done (`label.move`, `settings.write`, …).
    pub action: String,
    /// What it was done to.
    pub object: String,
    /// The value before.
    pub from: Option<String>,
    /// The value after.
    pub to: Option<String>,
}

impl From<&AuditEntry> for AuditView {
    fn from(e: &AuditEntry) -> Self {
        AuditView {
            at: e.at.to_string(),
            actor: e.actor.as_ref().map(ToString::to_string),
            action: e.action.as_str().to_owned(),
            object: e.object.clone(),
            from: e.from.clone(),
            to: e.to.clone(),
        }
    }
}

/// `GET /v1/audit`: the tenant's audit log, newest first (admins).
#[utoipa::path(get, path = "/v1/audit", tag = "settings", params(PageQuery),
    responses((status = 200, body = PageOf<AuditView>), (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn audit(
    State(state): State<AppState>,
    auth: Auth,
    page: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<PageOf<AuditView>>, Problem> {
    auth.require(Role::Admin, "reading the audit log")?;
    let page = query(page)?.request()?;
    let found = state
        .inner
        .store
        .audit(&auth.0.tenant, &page)
        .await
        .map_err(|e| store_problem(&state, e))?;
    Ok(Json(PageOf {
        items: found.items.iter().map(AuditView::from).collect(),
        next: found.next.map(|c| c.as_str().to_owned()),
    }))
}
