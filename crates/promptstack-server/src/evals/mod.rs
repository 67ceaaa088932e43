//! Eval runs in the service: started per agent for one suite over versions and models, run as
//! cells by the workers of every instance (see `worker`), read while they run, compared
//! version against version, and read by the gate on `production` (see `compare`).
//!
//! ```text
//! POST   /v1/agents/{name}/evals                 start a run (editors): refs resolved, suite read from the first ref's bundle
//! GET    /v1/agents/{name}/evals                 the agent's runs, newest first
//! GET    /v1/agents/{name}/evals/{run}           a run: progress, completed cells, statistics so far
//! GET    /v1/agents/{name}/evals/{run}/cells/{i} one cell: its row, its send and target (the inspector's drill-down)
//! DELETE /v1/agents/{name}/evals/{run}           cancel (editors)
//! GET    /v1/agents/{name}/evals/compare         two versions' latest finished runs, paired
//! ```
// utoipa's `path` macro writes the parameter types it is given fully qualified.
#![allow(unused_qualifications)]

mod compare;
mod context;
mod worker;

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use promptstack_eval::row::ResultRow;
use promptstack_eval::stats::{Statistics, StatsConfig};
use promptstack_store::{
    AgentName, CellResult, MAX_RUN_REFS, NewRun, PageRequest, Role, RunId, RunInfo, RunRef, Tenant,
    VersionId,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub(crate) use compare::{CompareView, GateView};
pub(crate) use compare::{evaluated_together, gate};
pub(crate) use worker::spawn as spawn_workers;

use crate::auth::Auth;
use crate::engine::store_problem;
use crate::engine::{agent_name, require_agent};
use crate::page::{PageOf, PageQuery, query};
use crate::problem::{Problem, json_rejection, printable};
use crate::state::AppState;

/// The most rows a run's statistics are computed over in one answer.
const MAX_STATISTICS_ROWS: usize = 10_000;

/// A run to start.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalRunCreate {
    /// The suite: its file in the bundle of the first reference's version (`evals/NAME.toml`).
    /// That bundle's suite and example sends are the run's, for every version.
    #[schema(min_length = 1, max_length = 255)]
    pub suite: String,
    /// Labels or version ids of the agent, the first being the baseline.
    #[schema(min_items = 1, max_items = 16, value_type = Vec<crate::contract::ReferenceSchema>)]
    pub refs: Vec<String>,
    /// The models, by the suite's names (default: the suite's `matrix.models`).
    pub models: Option<Vec<String>>,
    /// The scenarios (default: every one).
    pub scenarios: Option<Vec<String>>,
    /// Repetitions of each cell (default: the suite's `matrix.repeats`).
    #[schema(minimum = 1, maximum = 100)]
    #[serde(default, deserialize_with = "crate::contract::whole")]
    pub repeats: Option<u32>,
}

/// A reference of a run and the version it resolved to.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunRefView {
    /// The reference as given.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The version id.
    pub version: String,
}

/// How far a run is.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProgressView {
    /// Cells in the run.
    pub total: u64,
    /// Cells completed, failed ones included.
    pub done: u64,
    /// Completed cells that could not complete (a model or turn failure).
    pub failed: u64,
    /// An estimate of the seconds left: the cells left × the mean seconds per completed cell ÷
    /// this instance's eval workers; none before the first cell or when done.
    pub eta_seconds: Option<f64>,
}

/// An eval run.
#[derive(Debug, Serialize, ToSchema)]
pub struct EvalRunView {
    /// Its id.
    pub id: String,
    /// The agent.
    pub agent: String,
    /// The suite's file in the baseline's bundle.
    pub suite: String,
    /// The references and their versions.
    pub refs: Vec<RunRefView>,
    /// The models.
    pub models: Vec<String>,
    /// The scenarios.
    pub scenarios: Vec<String>,
    /// Repetitions of each cell.
    pub repeats: u32,
    /// `queued`, `running`, `done`, `cancelled` or `failed`.
    pub state: String,
    /// Why it failed.
    pub message: Option<String>,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// The key that created it.
    pub created_by: Option<String>,
    /// When its first cell was claimed.
    pub started_at: Option<String>,
    /// When it finished.
    pub finished_at: Option<String>,
    /// Its progress.
    pub progress: ProgressView,
}

impl EvalRunView {
    fn of(run: &RunInfo, workers: usize) -> EvalRunView {
        let p = &run.progress;
        let left = p.total.saturating_sub(p.done);
        EvalRunView {
            id: run.id.to_string(),
            agent: run.agent.to_string(),
            suite: run.suite.clone(),
            refs: run
                .refs
                .iter()
                .map(|r| RunRefView {
                    reference: r.reference.clone(),
                    version: r.version.to_string(),
                })
                .collect(),
            models: run.models.clone(),
            scenarios: run.scenarios.clone(),
            repeats: run.repeats,
            state: run.state.to_string(),
            message: run.message.clone(),
            created_at: run.created_at.to_string(),
            created_by: run.created_by.as_ref().map(ToString::to_string),
            started_at: run.started_at.map(|t| t.to_string()),
            finished_at: run.finished_at.map(|t| t.to_string()),
            progress: ProgressView {
                total: p.total,
                done: p.done,
                failed: p.failed,
                eta_seconds: p
                    .mean_cell_seconds
                    .filter(|_| left > 0 && run.state.is_active())
                    .map(|mean| mean * left as f64 / workers.max(1) as f64),
            },
        }
    }
}

/// A completed cell, in brief.
#[derive(Debug, Serialize, ToSchema)]
pub struct CellSummary {
    /// Its index in the run (versions, then models, then scenarios, then repetitions).
    pub index: u32,
    /// The version.
    pub version: String,
    /// The model.
    pub model: String,
    /// The scenario.
    pub scenario: String,
    /// The repetition, from 0.
    pub repetition: u32,
    /// Whether it passed.
    pub passed: bool,
    /// Why it could not complete.
    pub error: Option<String>,
    /// When it was completed (RFC 3339).
    pub completed_at: String,
}

/// A run with its completed cells and the statistics so far.
#[derive(Debug, Serialize, ToSchema)]
pub struct EvalRunDetail {
    /// The run.
    #[serde(flatten)]
    pub run: EvalRunView,
    /// The completed cells, by index.
    pub results: Vec<CellSummary>,
    /// The statistics over the completed rows (cells, summaries, comparisons, as in the eval
    /// report); none before the first.
    #[schema(value_type = Option<Object>)]
    pub statistics: Option<serde_json::Value>,
}

/// One completed cell in full.
#[derive(Debug, Serialize, ToSchema)]
pub struct CellView {
    /// Its index.
    pub index: u32,
    /// The version.
    pub version: String,
    /// The model.
    pub model: String,
    /// The scenario.
    pub scenario: String,
    /// The repetition.
    pub repetition: u32,
    /// When it was completed (RFC 3339).
    pub completed_at: String,
    /// The result row: assertions and verdicts, usage, cost, latency, the transcript (request
    /// as sent, answer as processed, tool calls) and the turn's record.
    #[schema(value_type = Object)]
    pub row: serde_json::Value,
    /// The scenario's send context as the suite gives it (none when it cannot be read).
    #[schema(value_type = Option<Object>)]
    pub send: Option<serde_json::Value>,
    /// The target its request was composed for.
    pub target: Option<String>,
}

fn run_id(run: &str) -> Result<RunId, Problem> {
    RunId::parse(run).map_err(|_| Problem::not_found(format!("no eval run `{}`", printable(run))))
}

/// The run of `agent`, 404 for another agent's or tenant's.
async fn agent_run(
    state: &AppState,
    tenant: &Tenant,
    agent: &AgentName,
    run: &str,
) -> Result<RunInfo, Problem> {
    let id = run_id(run)?;
    let info = state
        .inner
        .store
        .run(tenant, &id)
        .await
        .map_err(|e| store_problem(state, e))?;
    if info.agent != *agent {
        return Err(Problem::not_found(format!(
            "agent `{agent}` has no eval run `{id}`"
        )));
    }
    Ok(info)
}

/// Calls `each` with every completed cell of a run, by index, a page at a time.
pub(crate) async fn each_result(
    state: &AppState,
    tenant: &Tenant,
    run: &RunId,
    mut each: impl FnMut(CellResult) -> Result<(), Problem>,
) -> Result<(), Problem> {
    let mut page = PageRequest::first().limit(u32::MAX);
    loop {
        let found = state
            .inner
            .store
            .run_results(tenant, run, &page)
            .await
            .map_err(|e| store_problem(state, e))?;
        found.items.into_iter().try_for_each(&mut each)?;
        match found.next {
            Some(next) => page = PageRequest::first().limit(u32::MAX).after(next),
            None => return Ok(()),
        }
    }
}

fn view(state: &AppState, run: &RunInfo) -> EvalRunView {
    EvalRunView::of(run, state.inner.config.eval.workers)
}

/// Resolves a reference of `agent` to its version (compiling it, which also checks it).
async fn version_of(
    state: &AppState,
    tenant: &Tenant,
    agent: &AgentName,
    reference: &str,
) -> Result<VersionId, Problem> {
    Ok(
        crate::engine::resolve(state, tenant, agent.as_str(), Some(reference))
            .await?
            .version,
    )
}

/// `POST /v1/agents/{name}/evals`: start an eval run (editor or admin; audited).
#[utoipa::path(post, path = "/v1/agents/{name}/evals", tag = "evals",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent")),
    request_body = EvalRunCreate,
    responses((status = 201, body = EvalRunView, description = "Created, queued for the workers"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "An unknown suite, model or scenario, a model the server may not call, a missing credential, or a quota"),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn create_run(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<EvalRunCreate>, JsonRejection>,
) -> Result<Response, Problem> {
    let agent = agent_name(&name)?;
    let tenant = &auth.0.tenant;
    // Another tenant's agent is a 404 for every role, as on every route naming one.
    require_agent(&state, tenant, &agent).await?;
    auth.require(Role::Editor, "starting eval runs")?;
    let Json(body) = body.map_err(json_rejection)?;
    if body.refs.is_empty() || body.refs.len() > MAX_RUN_REFS {
        return Err(Problem::unprocessable(
            "invalid-run",
            format!(
                "a run names 1 to {MAX_RUN_REFS} references, got {}",
                body.refs.len()
            ),
        ));
    }
    let mut refs = Vec::with_capacity(body.refs.len());
    for reference in &body.refs {
        refs.push(RunRef {
            reference: reference.clone(),
            version: version_of(&state, tenant, &agent, reference).await?,
        });
    }
    let source = context::load_suite(&state, tenant, &agent, &refs[0].version, &body.suite).await?;
    let suite = &source.suite;
    let models = body.models.unwrap_or_else(|| suite.matrix.models.clone());
    if let Some(unknown) = models.iter().find(|m| !suite.models.contains_key(*m)) {
        return Err(Problem::unprocessable(
            "unknown-model",
            format!(
                "the suite declares no model `{}` (it has: {})",
                printable(unknown),
                suite.models.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let scenarios = match body.scenarios {
        None => suite.scenario_names().map(str::to_owned).collect(),
        Some(names) => {
            if let Some(unknown) = names
                .iter()
                .find(|n| !suite.scenario_names().any(|s| s == n.as_str()))
            {
                return Err(Problem::unprocessable(
                    "unknown-scenario",
                    format!("the suite has no scenario `{}`", printable(unknown)),
                ));
            }
            names
        }
    };
    let repeats = body.repeats.unwrap_or(suite.matrix.repeats);
    if !(1..=promptstack_eval::suite::MAX_REPEATS).contains(&repeats) {
        return Err(Problem::unprocessable(
            "invalid-run",
            format!(
                "repeats must be 1 to {}, got {repeats}",
                promptstack_eval::suite::MAX_REPEATS
            ),
        ));
    }
    for (name, model) in context::called_models(suite, &models, &scenarios) {
        let model = state
            .inner
            .config
            .eval
            .model(name, model)
            .map_err(|why| Problem::unprocessable("model-not-allowed", why))?;
        if let Some(credential) = &model.credential {
            if state.inner.config.credentials_key.is_none() {
                return Err(Problem::unprocessable(
                    "credentials-not-configured",
                    format!(
                        "model `{name}` needs credential `{credential}`, and this server stores \
                         no credentials"
                    ),
                ));
            }
            if !context::has_credential(&state, tenant, credential).await? {
                return Err(Problem::unprocessable(
                    "unknown-credential",
                    format!(
                        "model `{name}` needs credential `{credential}`, which the tenant does not have (`PUT /v1/credentials/{credential}`)"
                    ),
                ));
            }
        }
    }
    let new = NewRun::new(agent.clone(), body.suite, refs, models, scenarios, repeats);
    let info = state
        .inner
        .store
        .create_run(tenant, &new, Some(&auth.0.key_id))
        .await
        .map_err(|e| store_problem(&state, e))?;
    worker::wake(&state);
    let location = format!("/v1/agents/{agent}/evals/{}", info.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view(&state, &info)),
    )
        .into_response())
}

/// `GET /v1/agents/{name}/evals`: the agent's runs, newest first.
#[utoipa::path(get, path = "/v1/agents/{name}/evals", tag = "evals",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent"), PageQuery),
    responses((status = 200, body = PageOf<EvalRunView>),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn list_runs(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    page: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<PageOf<EvalRunView>>, Problem> {
    let agent = agent_name(&name)?;
    let tenant = &auth.0.tenant;
    let page = query(page)?.request()?;
    let found = state
        .inner
        .store
        .runs(tenant, Some(&agent), &page)
        .await
        .map_err(|e| store_problem(&state, e))?;
    Ok(Json(PageOf {
        items: found.items.iter().map(|r| view(&state, r)).collect(),
        next: found.next.map(|c| c.as_str().to_owned()),
    }))
}

/// `GET /v1/agents/{name}/evals/{run}`: a run, its completed cells and its statistics so far.
#[utoipa::path(get, path = "/v1/agents/{name}/evals/{run}", tag = "evals",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent"), ("run" = inline(crate::contract::RunIdSchema), Path, description = "The run")),
    responses((status = 200, body = EvalRunDetail),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn get_run(
    State(state): State<AppState>,
    auth: Auth,
    Path((name, run)): Path<(String, String)>,
) -> Result<Json<EvalRunDetail>, Problem> {
    let agent = agent_name(&name)?;
    let tenant = &auth.0.tenant;
    let info = agent_run(&state, tenant, &agent, &run).await?;
    let mut results = Vec::new();
    let mut rows = Vec::new();
    each_result(&state, tenant, &info.id, |cell| {
        let row: Option<ResultRow> = serde_json::from_value(cell.row).ok();
        results.push(CellSummary {
            index: cell.cell.index,
            version: cell.cell.version.to_string(),
            model: cell.cell.model.clone(),
            scenario: cell.cell.scenario.clone(),
            repetition: cell.cell.repetition,
            passed: row.as_ref().is_some_and(|r| r.passed),
            error: row.as_ref().and_then(|r| r.error.clone()),
            completed_at: cell.completed_at.to_string(),
        });
        if let Some(mut row) = row
            && rows.len() < MAX_STATISTICS_ROWS
        {
            row.transcript = None;
            row.turn = None;
            rows.push(row);
        }
        Ok(())
    })
    .await?;
    let statistics = if rows.is_empty() {
        None
    } else {
        let run = promptstack_eval::row::Run::new(info.suite.clone(), rows);
        crate::engine::blocking(&state, move || {
            Statistics::compute(&run, &StatsConfig::default())
                .ok()
                .and_then(|s| serde_json::to_value(s).ok())
        })
        .await?
    };
    Ok(Json(EvalRunDetail {
        run: view(&state, &info),
        results,
        statistics,
    }))
}

/// `GET /v1/agents/{name}/evals/{run}/cells/{index}`: one completed cell with its row, its send
/// and target: what the inspector opens in its other tabs.
#[utoipa::path(get, path = "/v1/agents/{name}/evals/{run}/cells/{index}", tag = "evals",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent"), ("run" = inline(crate::contract::RunIdSchema), Path, description = "The run"),
        ("index" = u32, Path, description = "The cell's index")),
    responses((status = 200, body = CellView),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "No such run, or the cell is not completed"),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn get_cell(
    State(state): State<AppState>,
    auth: Auth,
    Path((name, run, index)): Path<(String, String, String)>,
) -> Result<Json<CellView>, Problem> {
    let agent = agent_name(&name)?;
    let tenant = &auth.0.tenant;
    let info = agent_run(&state, tenant, &agent, &run).await?;
    let not_completed = || {
        Problem::not_found(format!(
            "run {} has no completed cell `{}`",
            info.id,
            printable(&index)
        ))
    };
    let index: u32 = index.parse().map_err(|_| not_completed())?;
    let cell = state
        .inner
        .store
        .cell_result(tenant, &info.id, index)
        .await
        .map_err(|e| store_problem(&state, e))?
        .ok_or_else(not_completed)?;
    let (send, target) = match info.refs.first() {
        Some(first) => {
            match context::load_suite(&state, tenant, &agent, &first.version, &info.suite).await {
                Ok(source) => {
                    let send = context::scenario_send(&source, &cell.cell.scenario);
                    let target =
                        crate::engine::compiled(&state, tenant, &agent, &cell.cell.version)
                            .await
                            .ok()
                            .and_then(|c| c.agent.target_ids().next().map(str::to_owned));
                    (send, target)
                }
                Err(_) => (None, None),
            }
        }
        None => (None, None),
    };
    Ok(Json(CellView {
        index,
        version: cell.cell.version.to_string(),
        model: cell.cell.model.clone(),
        scenario: cell.cell.scenario.clone(),
        repetition: cell.cell.repetition,
        completed_at: cell.completed_at.to_string(),
        row: cell.row,
        send,
        target,
    }))
}

/// `DELETE /v1/agents/{name}/evals/{run}`: cancel a queued or running run (editor or admin;
/// audited). Cancelling a cancelled run answers it as it is.
#[utoipa::path(delete, path = "/v1/agents/{name}/evals/{run}", tag = "evals",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent"), ("run" = inline(crate::contract::RunIdSchema), Path, description = "The run")),
    responses((status = 200, body = EvalRunView),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "The run is done or failed"),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn cancel_run(
    State(state): State<AppState>,
    auth: Auth,
    Path((name, run)): Path<(String, String)>,
) -> Result<Json<EvalRunView>, Problem> {
    let agent = agent_name(&name)?;
    let tenant = &auth.0.tenant;
    let info = agent_run(&state, tenant, &agent, &run).await?;
    auth.require(Role::Editor, "cancelling eval runs")?;
    let info = state
        .inner
        .store
        .cancel_run(tenant, &info.id, Some(&auth.0.key_id))
        .await
        .map_err(|e| store_problem(&state, e))?;
    state.inner.eval_runners.forget(tenant, &info.id);
    Ok(Json(view(&state, &info)))
}

/// What to compare.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    /// The base: a label or version id (default `production`).
    #[param(value_type = Option<crate::contract::ReferenceSchema>, inline)]
    pub base: Option<String>,
    /// The candidate: a label or version id.
    #[param(value_type = crate::contract::ReferenceSchema, inline)]
    pub candidate: String,
    /// The suite (needed when the candidate ran several).
    pub suite: Option<String>,
    /// The model (needed when the candidate ran several on the suite).
    pub model: Option<String>,
}

/// `GET /v1/agents/{name}/evals/compare`: the paired statistics of two versions' latest
/// finished runs of one suite on one model, and the gate's reading when the base is
/// `production`.
#[utoipa::path(get, path = "/v1/agents/{name}/evals/compare", tag = "evals",
    params(("name" = inline(crate::contract::AgentNameSchema), Path, description = "The agent"), CompareQuery),
    responses((status = 200, body = CompareView),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "The candidate ran several suites or models: name one"),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn compare_versions(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    params: Result<Query<CompareQuery>, QueryRejection>,
) -> Result<Json<CompareView>, Problem> {
    let agent = agent_name(&name)?;
    let tenant = &auth.0.tenant;
    require_agent(&state, tenant, &agent).await?;
    let params = query(params)?;
    let base_ref = params
        .base
        .as_deref()
        .unwrap_or(crate::engine::PROTECTED_LABEL);
    let base = version_of(&state, tenant, &agent, base_ref).await?;
    let candidate = version_of(&state, tenant, &agent, &params.candidate).await?;
    let question = compare::Question {
        base: (base_ref, &base),
        candidate: (&params.candidate, &candidate),
        suite: params.suite.as_deref(),
        model: params.model.as_deref(),
        confidence: StatsConfig::default().confidence,
    };
    let mut compared = compare::compare(&state, tenant, &agent, &question)
        .await?
        .view;
    if base_ref == crate::engine::PROTECTED_LABEL {
        compared.gate = gate(&state, tenant, &agent, Some(&base), &candidate).await?;
    }
    Ok(Json(compared))
}
