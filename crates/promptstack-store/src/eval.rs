//! Eval runs as the store holds them: a run of a suite over versions × models × scenarios ×
//! repetitions, split into cells that workers claim under a lease and complete once.
//!
//! ```text
//! create_run ─► queued ─ first claim ─► running ─ last cell completed ─► done
//!                  │                       ├─ cancel_run ─► cancelled
//!                  └───────────────────────┴─ fail_run ───► failed
//! claim_cell ─► ClaimedCell { claim } ─► renew_lease(claim)… ─► complete_cell(claim, row)
//!                                   └─ lease runs out (worker died) ─► claimable again
//! ```

use std::fmt;
use std::time::Duration;

use jiff::Timestamp;

use crate::error::{Error, Result};
use crate::name::{AgentName, KeyId, RunId, Tenant, VersionId, check_text};

/// The most references one run may name.
pub const MAX_RUN_REFS: usize = 16;
/// The most models one run may name.
pub const MAX_RUN_MODELS: usize = 64;
/// The most scenarios one run may name.
pub const MAX_RUN_SCENARIOS: usize = 1000;
/// The most repetitions of each cell.
pub const MAX_RUN_REPEATS: u32 = 1000;
/// The longest suite file name, reference, model or scenario name, in characters.
pub const MAX_RUN_TEXT: usize = 255;
/// The longest failure message kept for a run, in characters (longer ones are cut).
pub const MAX_RUN_MESSAGE: usize = 1000;
/// The shortest and longest lease a claim may take.
pub const LEASE_BOUNDS: (Duration, Duration) =
    (Duration::from_millis(10), Duration::from_secs(3600));

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunState {
    /// Created; no cell claimed yet.
    Queued,
    /// At least one cell was claimed; cells remain.
    Running,
    /// Every cell completed.
    Done,
    /// Cancelled: no cell is claimed or completed any more.
    Cancelled,
    /// Given up by its runner (see [`RunInfo::message`]): no cell is claimed or completed any
    /// more.
    Failed,
}

impl RunState {
    const ALL: [RunState; 5] = [
        RunState::Queued,
        RunState::Running,
        RunState::Done,
        RunState::Cancelled,
        RunState::Failed,
    ];

    /// The state's name: `queued`, `running`, `done`, `cancelled` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Queued => "queued",
            RunState::Running => "running",
            RunState::Done => "done",
            RunState::Cancelled => "cancelled",
            RunState::Failed => "failed",
        }
    }

    /// Whether cells may still be claimed and completed (queued or running).
    pub fn is_active(self) -> bool {
        matches!(self, RunState::Queued | RunState::Running)
    }

    pub(crate) fn from_db(text: &str) -> Result<RunState> {
        RunState::ALL
            .into_iter()
            .find(|state| state.as_str() == text)
            .ok_or_else(|| Error::internal("the database holds an unknown run state"))
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reference a run was asked for (a label or a version id, as given) and the version it
/// resolved to when the run was created.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunRef {
    /// The reference as given.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The version it resolved to.
    pub version: VersionId,
}

/// A run to create: the suite, the resolved references, the models and scenarios, and how many
/// times each cell repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    pub(crate) agent: AgentName,
    pub(crate) suite: String,
    pub(crate) refs: Vec<RunRef>,
    pub(crate) models: Vec<String>,
    pub(crate) scenarios: Vec<String>,
    pub(crate) repeats: u32,
}

impl NewRun {
    /// A run of `suite` (the suite's file name inside the version's bundle) of `agent`, over the
    /// versions `refs` resolved to, every model in `models` and every scenario in `scenarios`,
    /// each cell `repeats` times. Checked by [`Store::create_run`](crate::Store::create_run).
    pub fn new(
        agent: AgentName,
        suite: impl Into<String>,
        refs: Vec<RunRef>,
        models: Vec<String>,
        scenarios: Vec<String>,
        repeats: u32,
    ) -> NewRun {
        NewRun {
            agent,
            suite: suite.into(),
            refs,
            models,
            scenarios,
            repeats,
        }
    }

    /// The distinct versions, in the order the references name them first.
    pub(crate) fn versions(&self) -> Vec<&VersionId> {
        let mut seen: Vec<&VersionId> = Vec::new();
        for r in &self.refs {
            if !seen.contains(&&r.version) {
                seen.push(&r.version);
            }
        }
        seen
    }

    /// Checks the bounds of every part and returns the number of cells.
    pub(crate) fn check(&self, max_cells: usize) -> Result<usize> {
        check_text("suite file name", &self.suite, MAX_RUN_TEXT)?;
        let lists: [(&str, usize, usize); 3] = [
            ("references", self.refs.len(), MAX_RUN_REFS),
            ("models", self.models.len(), MAX_RUN_MODELS),
            ("scenarios", self.scenarios.len(), MAX_RUN_SCENARIOS),
        ];
        for (what, len, max) in lists {
            if len == 0 || len > max {
                return Err(Error::invalid(format!(
                    "a run needs 1 to {max} {what}, got {len}"
                )));
            }
        }
        for r in &self.refs {
            check_text("reference", &r.reference, MAX_RUN_TEXT)?;
        }
        for (what, names) in [("model", &self.models), ("scenario", &self.scenarios)] {
            for (i, name) in names.iter().enumerate() {
                check_text(what, name, MAX_RUN_TEXT)?;
                if names[..i].contains(name) {
                    return Err(Error::invalid(format!("{what} {name:?} is named twice")));
                }
            }
        }
        if self.repeats == 0 || self.repeats > MAX_RUN_REPEATS {
            return Err(Error::invalid(format!(
                "repeats must be 1 to {MAX_RUN_REPEATS}, got {}",
                self.repeats
            )));
        }
        let cells = [
            self.versions().len(),
            self.models.len(),
            self.scenarios.len(),
            self.repeats as usize,
        ]
        .into_iter()
        .try_fold(1usize, usize::checked_mul)
        .unwrap_or(usize::MAX);
        if cells > max_cells {
            return Err(Error::quota(format!(
                "the run has {cells} cells, more than the {max_cells} allowed \
                 (`max_cells_per_run`)"
            )));
        }
        Ok(cells)
    }

    /// Every cell, in order: versions, then models, then scenarios, then repetitions.
    pub(crate) fn cells(&self) -> Vec<Cell> {
        let mut cells = Vec::new();
        for version in self.versions() {
            for model in &self.models {
                for scenario in &self.scenarios {
                    for repetition in 0..self.repeats {
                        cells.push(Cell {
                            index: u32::try_from(cells.len()).unwrap_or(u32::MAX),
                            version: version.clone(),
                            model: model.clone(),
                            scenario: scenario.clone(),
                            repetition,
                        });
                    }
                }
            }
        }
        cells
    }
}

/// How far a run is.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RunProgress {
    /// Cells in the run.
    pub total: u64,
    /// Cells completed, failed ones included.
    pub done: u64,
    /// Completed cells whose row records that the cell could not complete.
    pub failed: u64,
    /// The mean time from claim to completion of the completed cells, in seconds (`None`
    /// before the first): with the cells left and the workers at hand, an estimate of the time
    /// left.
    pub mean_cell_seconds: Option<f64>,
}

/// A run as stored, with its progress.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunInfo {
    /// Its id.
    pub id: RunId,
    /// The agent whose versions it evaluates.
    pub agent: AgentName,
    /// The suite's file name inside the bundle.
    pub suite: String,
    /// The references and the versions they resolved to.
    pub refs: Vec<RunRef>,
    /// The models.
    pub models: Vec<String>,
    /// The scenarios.
    pub scenarios: Vec<String>,
    /// Repetitions of each cell.
    pub repeats: u32,
    /// Where it is.
    pub state: RunState,
    /// Why it failed, for a failed run.
    pub message: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// The key that created it; `None` for the operator.
    pub created_by: Option<KeyId>,
    /// When its first cell was claimed.
    pub started_at: Option<Timestamp>,
    /// When it became done, cancelled or failed.
    pub finished_at: Option<Timestamp>,
    /// Its cells' progress.
    pub progress: RunProgress,
}

/// One cell of a run: which version, model, scenario and repetition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Cell {
    /// Its position in the run, from 0.
    pub index: u32,
    /// The version.
    pub version: VersionId,
    /// The model.
    pub model: String,
    /// The scenario.
    pub scenario: String,
    /// The repetition, from 0.
    pub repetition: u32,
}

/// A worker's hold on one cell: what renewing a lease and completing the cell must show. Each
/// claim of a cell has a new `generation`, so a worker whose lease ran out and whose cell was
/// claimed again cannot complete it any more.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Claim {
    pub(crate) run: RunId,
    pub(crate) cell: u32,
    pub(crate) generation: i64,
    pub(crate) worker: String,
}

impl Claim {
    /// The run.
    pub fn run(&self) -> &RunId {
        &self.run
    }

    /// The cell's index.
    pub fn cell(&self) -> u32 {
        self.cell
    }

    /// Which claim of this cell it is: 1 for the first, one more for each claim after.
    pub fn generation(&self) -> u64 {
        u64::try_from(self.generation).unwrap_or(0)
    }

    /// The worker that holds it.
    pub fn worker(&self) -> &str {
        &self.worker
    }
}

/// A cell a worker claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimedCell {
    /// The cell.
    pub cell: Cell,
    /// The claim to renew and complete it with.
    pub claim: Claim,
    /// Until when no other worker may claim it, unless the lease is renewed.
    pub lease_until: Timestamp,
}

/// A completed cell and its result row.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CellResult {
    /// The cell.
    pub cell: Cell,
    /// Whether the row records that the cell could not complete.
    pub failed: bool,
    /// The result row, as completed.
    pub row: serde_json::Value,
    /// When it was completed.
    pub completed_at: Timestamp,
}

/// A run with cells to claim, of any tenant: what a worker looks for (see
/// [`Store::active_runs`](crate::Store::active_runs)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ActiveRun {
    /// The run's tenant.
    pub tenant: Tenant,
    /// The run.
    pub run: RunId,
}

/// Checks a worker's id: 1 to 128 printable characters.
pub(crate) fn check_worker(worker: &str) -> Result<()> {
    check_text("worker id", worker, 128)
}

/// Checks a lease and returns it in microseconds.
pub(crate) fn lease_micros(lease: Duration) -> Result<i64> {
    let (min, max) = LEASE_BOUNDS;
    if lease < min || lease > max {
        return Err(Error::invalid(format!(
            "a lease must be {} ms to {} s long",
            min.as_millis(),
            max.as_secs()
        )));
    }
    i64::try_from(lease.as_micros()).map_err(|_| Error::invalid("the lease is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(models: &[&str], repeats: u32) -> NewRun {
        let v = |n: u8| VersionId::parse(&format!("{n:064x}")).unwrap();
        NewRun::new(
            AgentName::parse("chat").unwrap(),
            "evals/smoke.toml",
            vec![
                RunRef {
                    reference: "production".into(),
                    version: v(1),
                },
                RunRef {
                    reference: "staging".into(),
                    version: v(2),
                },
                RunRef {
                    reference: "canary".into(),
                    version: v(1),
                },
            ],
            models.iter().map(|m| (*m).to_owned()).collect(),
            vec!["a".into(), "b".into()],
            repeats,
        )
    }

    #[test]
    fn cells_are_the_product_of_distinct_versions() {
        let r = run(&["m1", "m2"], 3);
        assert_eq!(r.check(100).unwrap(), 2 * 2 * 2 * 3);
        let cells = r.cells();
        assert_eq!(cells.len(), 24);
        assert!(cells.iter().enumerate().all(|(i, c)| c.index as usize == i));
        assert_eq!(cells[23].repetition, 2);
        assert_eq!(r.check(23).unwrap_err().kind(), crate::ErrorKind::Quota);
    }

    #[test]
    fn bounds_are_checked() {
        assert!(run(&[], 1).check(100).is_err());
        assert!(run(&["m", "m"], 1).check(100).is_err());
        assert!(run(&["m"], 0).check(100).is_err());
        assert!(run(&["m\n"], 1).check(100).is_err());
        assert!(run(&["m"], MAX_RUN_REPEATS + 1).check(usize::MAX).is_err());
        assert!(lease_micros(Duration::from_millis(1)).is_err());
        assert!(lease_micros(Duration::from_secs(7200)).is_err());
        assert_eq!(lease_micros(Duration::from_secs(1)).unwrap(), 1_000_000);
    }
}
