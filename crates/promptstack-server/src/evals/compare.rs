//! Comparing two versions from their finished runs, and the gate on `production` that reads the
//! comparison.
//!
//! The comparison takes, for one suite and one model, the latest finished run holding the
//! candidate and the latest holding the base (the same run when the candidate's holds both),
//! and computes the eval statistics over those rows: each version's summary and the paired
//! difference over the scenarios both ran, with its cluster-bootstrap interval.

use promptstack_eval::row::{ResultRow, Run};
use promptstack_eval::stats::{Comparison, Outcome, Statistics, StatsConfig, Summary};
use promptstack_store::{AgentName, PageRequest, RunInfo, RunState, Tenant, VersionId};
use serde::Serialize;
use utoipa::ToSchema;

use crate::engine::store_problem;
use crate::problem::{Problem, printable};
use crate::state::AppState;

/// How many of an agent's most recent runs a comparison looks through.
pub const SCAN_RUNS: usize = 1000;

/// One side of a comparison.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SideView {
    /// The reference as given.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The version it resolved to.
    pub version: String,
    /// The finished run its rows come from; none when it has no finished run of the suite on
    /// the model.
    pub run: Option<String>,
}

/// Two versions compared on one suite and model.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CompareView {
    /// The suite (none when the candidate has no finished run to name one).
    pub suite: Option<String>,
    /// The model (none as for `suite`).
    pub model: Option<String>,
    /// The base.
    pub base: SideView,
    /// The candidate.
    pub candidate: SideView,
    /// Each side's summary on the model: pass rates and accounting (`stats` of the eval report).
    #[schema(value_type = Vec<Object>)]
    pub summaries: Vec<serde_json::Value>,
    /// The paired comparison (`a` and `b` ordered by version id, differences `b − a`); none
    /// when a side has no rows or both are the same version.
    #[schema(value_type = Option<Object>)]
    pub comparison: Option<serde_json::Value>,
    /// The confidence of the intervals.
    pub confidence: f64,
    /// The gate's reading of this comparison, when the base is `production` and the agent
    /// declares a gate suite.
    pub gate: Option<GateView>,
}

/// What a gate decided.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GateView {
    /// The gate suite (declared by the version `production` points at).
    pub suite: String,
    /// The largest drop in mean pass rate tolerated.
    pub max_drop: f64,
    /// The confidence of the interval it reads.
    pub confidence: f64,
    /// Whether the candidate may become `production`.
    pub passes: bool,
    /// Why, in a sentence per model.
    pub reason: String,
    /// The comparison on each gate model, as the compare route answers it (its own `gate`
    /// null).
    #[schema(value_type = Vec<Object>)]
    pub comparisons: Vec<CompareView>,
}

impl GateView {
    /// What a forced move audits: the reason, the gate and, per model, the runs and the
    /// difference it read (within the store's bound on a note).
    pub(crate) fn audit_note(&self, reason: &str) -> String {
        let comparisons: Vec<serde_json::Value> = self
            .comparisons
            .iter()
            .map(|c| {
                let outcome = c.comparison.as_ref().and_then(|c| c.get("outcome"));
                serde_json::json!({
                    "model": c.model,
                    "base": c.base,
                    "candidate": c.candidate,
                    "a": c.comparison.as_ref().and_then(|c| c.get("a")),
                    "b": c.comparison.as_ref().and_then(|c| c.get("b")),
                    "difference": outcome.and_then(|o| o.get("difference")),
                    "interval": outcome.and_then(|o| o.get("interval")),
                    "scenarios": outcome.and_then(|o| o.get("scenarios")),
                })
            })
            .collect();
        let mut note = serde_json::json!({
            "reason": reason,
            "suite": self.suite,
            "max_drop": self.max_drop,
            "confidence": self.confidence,
            "gate": self.reason,
            "comparisons": comparisons,
        });
        let mut text = note.to_string();
        while text.len() > promptstack_store::MAX_FORCE_NOTE {
            let Some(list) = note["comparisons"].as_array_mut().filter(|l| !l.is_empty()) else {
                break;
            };
            list.pop();
            note["truncated"] = serde_json::Value::Bool(true);
            text = note.to_string();
        }
        text.chars()
            .scan(0usize, |bytes, c| {
                *bytes += c.len_utf8();
                (*bytes <= promptstack_store::MAX_FORCE_NOTE).then_some(c)
            })
            .collect()
    }
}

/// The rows and statistics of a comparison.
pub(crate) struct Compared {
    pub(crate) view: CompareView,
    comparison: Option<Comparison>,
}

/// What to compare: two references and the versions they resolved to, the suite and model when
/// named, and the confidence of the intervals.
pub(crate) struct Question<'a> {
    pub(crate) base: (&'a str, &'a VersionId),
    pub(crate) candidate: (&'a str, &'a VersionId),
    pub(crate) suite: Option<&'a str>,
    pub(crate) model: Option<&'a str>,
    pub(crate) confidence: f64,
}

/// Compares the question's candidate with its base on the suite and model (each named or,
/// when only one has finished runs of the candidate, found).
pub(crate) async fn compare(
    state: &AppState,
    tenant: &Tenant,
    agent: &AgentName,
    question: &Question<'_>,
) -> Result<Compared, Problem> {
    let &Question {
        base,
        candidate,
        suite,
        model,
        confidence,
    } = question;
    let runs = recent_done_runs(state, tenant, agent).await?;
    let holds = |run: &RunInfo, version: &VersionId| run.refs.iter().any(|r| r.version == *version);
    let of_candidate: Vec<&RunInfo> = runs
        .iter()
        .filter(|r| holds(r, candidate.1))
        .filter(|r| suite.is_none_or(|s| r.suite == s))
        .filter(|r| model.is_none_or(|m| r.models.iter().any(|x| x == m)))
        .collect();
    let suite = match suite {
        Some(suite) => Some(suite.to_owned()),
        None => only("suite", of_candidate.iter().map(|r| r.suite.as_str()))?,
    };
    let model = match model {
        Some(model) => Some(model.to_owned()),
        None => only(
            "model",
            of_candidate
                .iter()
                .filter(|r| suite.as_deref().is_none_or(|s| r.suite == s))
                .flat_map(|r| r.models.iter().map(String::as_str)),
        )?,
    };
    let fits = |run: &&RunInfo| {
        suite.as_deref().is_some_and(|s| run.suite == s)
            && model
                .as_deref()
                .is_some_and(|m| run.models.iter().any(|x| x == m))
    };
    let candidate_run = runs.iter().filter(fits).find(|r| holds(r, candidate.1));
    let base_run = match candidate_run {
        Some(run) if holds(run, base.1) => Some(run),
        _ => runs.iter().filter(fits).find(|r| holds(r, base.1)),
    };
    let mut sides = vec![(candidate_run, candidate.1)];
    if base.1 != candidate.1 {
        sides.push((base_run, base.1));
    }
    let mut rows = Vec::new();
    if let Some(model) = &model {
        for (run, version) in sides {
            if let Some(run) = run {
                rows.extend(run_rows(state, tenant, run, version, model).await?);
            }
        }
    }
    let side = |(reference, version): (&str, &VersionId), run: Option<&RunInfo>| SideView {
        reference: reference.to_owned(),
        version: version.to_string(),
        run: run.map(|r| r.id.to_string()),
    };
    let mut view = CompareView {
        suite: suite.clone(),
        model: model.clone(),
        base: side(base, base_run),
        candidate: side(candidate, candidate_run),
        summaries: Vec::new(),
        comparison: None,
        confidence,
        gate: None,
    };
    if rows.is_empty() {
        return Ok(Compared {
            view,
            comparison: None,
        });
    }
    let run = Run::new(suite.unwrap_or_default(), rows);
    let config = StatsConfig::default().with_confidence(confidence);
    let stats = crate::engine::blocking(state, move || Statistics::compute(&run, &config))
        .await?
        .map_err(|e| Problem::unprocessable("invalid-rows", e.to_string()))?;
    let ordered = |s: &Summary| s.version_id != base.1.as_str();
    let mut summaries: Vec<&Summary> = stats.summaries.iter().collect();
    summaries.sort_by_key(|s| ordered(s));
    view.summaries = summaries
        .into_iter()
        .filter_map(|s| serde_json::to_value(s).ok())
        .collect();
    let comparison = stats.comparisons.into_iter().next();
    view.comparison = comparison
        .as_ref()
        .and_then(|c| serde_json::to_value(c).ok());
    Ok(Compared { view, comparison })
}

/// The single value of `values`, none when there is none; 422 naming them when there are
/// several.
fn only<'a>(what: &str, values: impl Iterator<Item = &'a str>) -> Result<Option<String>, Problem> {
    let mut distinct: Vec<&str> = Vec::new();
    for value in values {
        if !distinct.contains(&value) {
            distinct.push(value);
        }
    }
    match distinct.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).to_owned())),
        many => Err(Problem::unprocessable(
            "ambiguous",
            format!(
                "the candidate has finished runs on several of its {what}s ({}); name one with `{what}`",
                many.iter()
                    .map(|v| printable(v))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The agent's finished runs among its [`SCAN_RUNS`] most recent, newest first.
async fn recent_done_runs(
    state: &AppState,
    tenant: &Tenant,
    agent: &AgentName,
) -> Result<Vec<RunInfo>, Problem> {
    let mut done = Vec::new();
    let mut seen = 0usize;
    let mut page = PageRequest::first().limit(u32::MAX);
    while seen < SCAN_RUNS {
        let found = state
            .inner
            .store
            .runs(tenant, Some(agent), &page)
            .await
            .map_err(|e| store_problem(state, e))?;
        seen += found.items.len();
        done.extend(
            found
                .items
                .into_iter()
                .filter(|r| r.state == RunState::Done),
        );
        match found.next {
            Some(next) => page = PageRequest::first().limit(u32::MAX).after(next),
            None => break,
        }
    }
    Ok(done)
}

/// The rows of `version` on `model` in a run, without their transcripts (the statistics read
/// verdicts and accounting only).
async fn run_rows(
    state: &AppState,
    tenant: &Tenant,
    run: &RunInfo,
    version: &VersionId,
    model: &str,
) -> Result<Vec<ResultRow>, Problem> {
    let mut rows = Vec::new();
    super::each_result(state, tenant, &run.id, |cell| {
        if cell.cell.version != *version || cell.cell.model != model {
            return Ok(());
        }
        let mut row: ResultRow = serde_json::from_value(cell.row).map_err(|e| {
            Problem::unprocessable(
                "invalid-rows",
                format!("run {}: a stored row does not read: {e}", run.id),
            )
        })?;
        row.transcript = None;
        row.turn = None;
        rows.push(row);
        Ok(())
    })
    .await?;
    Ok(rows)
}

/// Reads the gate of an agent for moving `production` from `current` to `candidate`: none
/// when no gate applies (no current version, the same version, or no gate suite in the current
/// version's bundle).
pub(crate) async fn gate(
    state: &AppState,
    tenant: &Tenant,
    agent: &AgentName,
    current: Option<&VersionId>,
    candidate: &VersionId,
) -> Result<Option<GateView>, Problem> {
    let Some(current) = current.filter(|c| *c != candidate) else {
        return Ok(None);
    };
    let stored = state
        .inner
        .store
        .version(tenant, agent, current)
        .await
        .map_err(|e| store_problem(state, e))?;
    let found = crate::engine::blocking(state, move || {
        crate::bundle::Bundle::from_stored(&stored.bundle)
            .ok()
            .and_then(|b| super::context::gate_suite(&b))
    })
    .await?;
    let Some((path, suite)) = found else {
        return Ok(None);
    };
    let Some(gate) = suite.gate.clone() else {
        return Ok(None);
    };
    let confidence = gate.confidence.unwrap_or(suite.matrix.confidence);
    let models = if gate.models.is_empty() {
        suite.matrix.models.clone()
    } else {
        gate.models.clone()
    };
    let mut passes = true;
    let mut reasons = Vec::new();
    let mut comparisons = Vec::new();
    for model in &models {
        let question = Question {
            base: ("production", current),
            candidate: (candidate.as_str(), candidate),
            suite: Some(&path),
            model: Some(model),
            confidence,
        };
        let compared = compare(state, tenant, agent, &question).await?;
        let (ok, reason) = judge(&compared, candidate, gate.max_drop);
        passes &= ok;
        reasons.push(format!("{model}: {reason}"));
        comparisons.push(compared.view);
    }
    Ok(Some(GateView {
        suite: path,
        max_drop: gate.max_drop,
        confidence,
        passes,
        reason: reasons.join("; "),
        comparisons,
    }))
}

/// Whether one model's comparison lets the candidate through, and why.
fn judge(compared: &Compared, candidate: &VersionId, max_drop: f64) -> (bool, String) {
    let view = &compared.view;
    if view.candidate.run.is_none() {
        return (
            false,
            "the candidate has no finished run of the gate suite on this model".into(),
        );
    }
    if view.base.run.is_none() {
        return (
            false,
            "the current production version has no finished run of the gate suite on this \
             model; run both in one run"
                .into(),
        );
    }
    let Some(comparison) = &compared.comparison else {
        return (false, "the runs could not be compared".into());
    };
    let paired = match &comparison.outcome {
        Outcome::Compared(paired) => paired,
        Outcome::NotCompared { reason } => return (false, format!("not compared: {reason}")),
        _ => return (false, "not compared".into()),
    };
    if let promptstack_eval::stats::Difference::TooFewScenarios { needed } = &paired.verdict {
        return (
            false,
            format!(
                "{} shared scenarios are too few for a verdict (the gate needs {needed})",
                paired.scenarios
            ),
        );
    }
    // The interval of candidate − production.
    let (low, high, difference) = if comparison.b == candidate.as_str() {
        (paired.interval.low, paired.interval.high, paired.difference)
    } else {
        (
            -paired.interval.high,
            -paired.interval.low,
            -paired.difference,
        )
    };
    let text = format!(
        "difference {:+.1} pp [{:+.1}, {:+.1}] over {} scenarios",
        difference * 100.0,
        low * 100.0,
        high * 100.0,
        paired.scenarios
    );
    if high < -max_drop {
        (
            false,
            format!(
                "worse: {text}, wholly below the {:.1} pp tolerated",
                -max_drop * 100.0
            ),
        )
    } else {
        (true, format!("not shown worse: {text}"))
    }
}

/// Whether a finished run among the agent's recent ones holds both versions.
pub(crate) async fn evaluated_together(
    state: &AppState,
    tenant: &Tenant,
    agent: &AgentName,
    a: &VersionId,
    b: &VersionId,
) -> Result<bool, Problem> {
    let runs = recent_done_runs(state, tenant, agent).await?;
    Ok(runs
        .iter()
        .any(|r| r.refs.iter().any(|x| x.version == *a) && r.refs.iter().any(|x| x.version == *b)))
}
