//! The eval crate's tests: the suite format, statistics against known values, properties of the
//! statistics, and every report format (snapshots and hostile input).

mod assess;
mod independence;
mod local_model;
mod properties;
mod record;
mod reports;
mod run;
mod stats;
mod suite;
mod wire;

use promptstack_eval::row::{ResultRow, RowKey, Run};

/// The browser-agent fixture: two kernels on a small local model over seven scenarios × three
/// repetitions, and one kernel on a larger model with one failed run.
pub fn fixture() -> Run {
    serde_json::from_str(include_str!("../data/run.json")).expect("the fixture is a run")
}

/// A row key with the fixed fields filled in.
pub fn key(version: &str, model: &str, scenario: &str, repetition: u32) -> RowKey {
    RowKey {
        agent: "agent".into(),
        version_id: version.into(),
        fingerprint: "fp".into(),
        rules_version: "1".into(),
        model: model.into(),
        tier: "small".into(),
        scenario: scenario.into(),
        repetition,
    }
}

/// Rows of two versions `a` and `b` on one model: for each scenario, the pass flags of its
/// repetitions under each version.
pub fn paired_rows(cells: &[(&[bool], &[bool])]) -> Vec<ResultRow> {
    let mut rows = Vec::new();
    for (index, (a, b)) in cells.iter().enumerate() {
        let scenario = format!("s{index:02}");
        for (repetition, passed) in a.iter().enumerate() {
            rows.push(ResultRow::new(
                key("a", "m", &scenario, repetition as u32),
                *passed,
            ));
        }
        for (repetition, passed) in b.iter().enumerate() {
            rows.push(ResultRow::new(
                key("b", "m", &scenario, repetition as u32),
                *passed,
            ));
        }
    }
    rows
}
