//! The reports of a run: one [`Report`] (the run and its statistics) written as the `--json`
//! document, JUnit XML, a self-contained HTML page or a terminal summary.
//!
//! Every format lists rows in one order (model, version, scenario, repetition), whatever order
//! the runner wrote them in, so two reports of the same run are byte-identical.

mod escape;
mod html;
mod junit;
mod terminal;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};
use crate::row::{ResultRow, Run, RunModel};
use crate::stats::{Statistics, StatsConfig};

pub use terminal::{MAX_FAILURE_LINES, TerminalConfig};

/// The name in the `format` field of the JSON document.
pub const FORMAT_NAME: &str = "promptstack-eval-report";

/// The version of the JSON document's layout; it changes whenever a field changes meaning or
/// goes away (a new field does not change it).
pub const FORMAT_VERSION: u32 = 1;

/// A run together with the statistics computed from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    run: Run,
    statistics: Statistics,
}

impl Report {
    /// Computes the statistics of `run` and keeps both. The rows are put in report order
    /// (model, version, scenario, repetition).
    ///
    /// # Errors
    ///
    /// Those of [`Statistics::compute`].
    pub fn new(mut run: Run, config: &StatsConfig) -> Result<Report, Error> {
        let statistics = Statistics::compute(&run, config)?;
        run.rows.sort_by(|x, y| {
            (&x.model, &x.version_id, &x.scenario, x.repetition).cmp(&(
                &y.model,
                &y.version_id,
                &y.scenario,
                y.repetition,
            ))
        });
        Ok(Report { run, statistics })
    }

    /// The run, rows in report order.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The statistics.
    pub fn statistics(&self) -> &Statistics {
        &self.statistics
    }

    /// The `--json` document: `format`, `version`, the `run` (suite, start), every row and the
    /// statistics, pretty-printed.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Report`] if serialisation fails (it does not for values this crate made).
    pub fn to_json(&self) -> Result<String, Error> {
        let document = DocumentRef {
            format: FORMAT_NAME,
            version: FORMAT_VERSION,
            run: RunInfoRef {
                suite: &self.run.suite,
                started_at: self.run.started_at.as_deref(),
                models: &self.run.models,
            },
            rows: &self.run.rows,
            statistics: &self.statistics,
        };
        serde_json::to_string_pretty(&document)
            .map_err(|e| Error::new(ErrorKind::Report, format!("cannot write the report: {e}")))
    }

    /// Reads a `--json` document back (its statistics as stored, not recomputed).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Report`] when the text is not such a document or has another
    /// [`FORMAT_VERSION`].
    pub fn from_json(text: &str) -> Result<Report, Error> {
        let header: Header = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Report, format!("not an eval report: {e}")))?;
        if header.format != FORMAT_NAME {
            return Err(Error::new(
                ErrorKind::Report,
                format!(
                    "not an eval report: the format is `{}`, not `{FORMAT_NAME}`",
                    promptstack_core::diagnostic::quote(&header.format)
                ),
            ));
        }
        if header.version != FORMAT_VERSION {
            return Err(Error::new(
                ErrorKind::Report,
                format!(
                    "eval report version {} cannot be read; this build reads version {FORMAT_VERSION}",
                    header.version
                ),
            ));
        }
        let document: Document = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Report, format!("malformed eval report: {e}")))?;
        let mut run = Run::new(document.run.suite, document.rows);
        run.started_at = document.run.started_at;
        run.models = document.run.models;
        Ok(Report {
            run,
            statistics: document.statistics,
        })
    }

    /// The JUnit XML document: one `testsuite` per version on a model, one `testcase` per row.
    pub fn to_junit_xml(&self) -> String {
        junit::write(self)
    }

    /// The self-contained HTML page: no script, no outside resource, a strict
    /// Content-Security-Policy, every string escaped.
    pub fn to_html(&self) -> String {
        html::write(self)
    }

    /// The terminal summary: the cell table, the version summaries, the comparisons and the
    /// failures, fitted to `config.width` columns, every string stripped of control characters.
    pub fn to_terminal(&self, config: &TerminalConfig) -> String {
        terminal::write(self, config)
    }
}

#[derive(Serialize)]
struct DocumentRef<'a> {
    format: &'a str,
    version: u32,
    run: RunInfoRef<'a>,
    rows: &'a [ResultRow],
    statistics: &'a Statistics,
}

#[derive(Serialize)]
struct RunInfoRef<'a> {
    suite: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<&'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    models: &'a BTreeMap<String, RunModel>,
}

#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
}

#[derive(Deserialize)]
struct Document {
    run: RunInfo,
    rows: Vec<ResultRow>,
    statistics: Statistics,
}

#[derive(Deserialize)]
struct RunInfo {
    suite: String,
    #[serde(default)]
    started_at: Option<String>,
    #[serde(default)]
    models: BTreeMap<String, RunModel>,
}

/// A token sum that may be unknown: the number, or `—` when no row reported it.
pub(crate) fn known(value: Option<u64>) -> String {
    value.map_or_else(|| "—".to_owned(), |v| v.to_string())
}

/// A version's cost: the priced rows' total, and how many rows were unpriced.
pub(crate) fn cost_text(accounting: &crate::stats::Accounting) -> String {
    match (accounting.cost, accounting.unpriced_runs) {
        (None, _) => "unpriced".to_owned(),
        (Some(total), 0) => total.to_string(),
        (Some(total), unpriced) => format!("{total} + {unpriced} unpriced runs"),
    }
}

/// A rate as a percentage with one decimal (`83.3 %`).
pub(crate) fn percent(rate: f64) -> String {
    format!("{:.1} %", rate * 100.0)
}

/// A confidence or power level as a percentage, without a decimal when it is whole (`95 %`,
/// `99.9 %`).
pub(crate) fn level(value: f64) -> String {
    let tenths = (value * 1000.0).round();
    if tenths % 10.0 == 0.0 {
        format!("{:.0} %", tenths / 10.0)
    } else {
        format!("{:.1} %", tenths / 10.0)
    }
}

/// A signed difference in percentage points with one decimal (`+12.5 pp`, `−3.0 pp`).
pub(crate) fn points(difference: f64) -> String {
    let value = difference * 100.0;
    // Round first so that -0.04 prints as +0.0, not as a negative zero.
    let rounded = (value * 10.0).round() / 10.0;
    if rounded < 0.0 {
        format!("\u{2212}{:.1} pp", -rounded)
    } else {
        format!("+{rounded:.1} pp")
    }
}

/// A minimum detectable difference in unsigned points: `{planned} planned`, then
/// `, {observed}{observed_words}` when the observed differences vary.
pub(crate) fn mde_text(mde: &crate::stats::Mde, observed_words: &str) -> String {
    let planned = points(mde.planned);
    let mut text = format!("{} planned", planned.trim_start_matches('+'));
    if let Some(observed) = mde.observed {
        let observed = points(observed);
        text.push_str(&format!(
            ", {}{observed_words}",
            observed.trim_start_matches('+')
        ));
    }
    text
}

/// Rows in report order grouped by scenario: each scenario's name with its rows.
pub(crate) fn rows_by_scenario(run: &Run) -> Vec<(&str, Vec<&ResultRow>)> {
    let mut scenarios: BTreeMap<&str, Vec<&ResultRow>> = Default::default();
    for row in &run.rows {
        scenarios.entry(&row.scenario).or_default().push(row);
    }
    scenarios.into_iter().collect()
}
