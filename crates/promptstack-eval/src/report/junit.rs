//! JUnit XML: one `testsuite` per version on a model, one `testcase` per result row, a
//! `failure` for a row that ran and did not pass and an `error` for one that could not run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Report;
use super::escape::{write_escaped, write_escaped_text};
use crate::row::ResultRow;
use crate::stats::Summary;

pub(super) fn write(report: &Report) -> String {
    let run = report.run();
    let mut suites: BTreeMap<(&str, &str), Vec<&ResultRow>> = BTreeMap::new();
    for row in &run.rows {
        suites
            .entry((&row.model, &row.version_id))
            .or_default()
            .push(row);
    }
    let summaries: BTreeMap<(&str, &str), &Summary> = report
        .statistics()
        .summaries
        .iter()
        .map(|s| ((s.model.as_str(), s.version_id.as_str()), s))
        .collect();
    let (failures, errors) = count(run.rows.iter());
    let total_us = total_latency(run.rows.iter());

    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str("<testsuites name=\"");
    write_escaped(&mut out, &run.suite);
    let _ = writeln!(
        out,
        "\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{}\">",
        run.rows.len(),
        seconds(total_us)
    );
    for ((model, version), rows) in &suites {
        let (failures, errors) = count(rows.iter().copied());
        let time = total_latency(rows.iter().copied());
        out.push_str("  <testsuite name=\"");
        write_escaped(&mut out, &format!("{version} on {model}"));
        let _ = writeln!(
            out,
            "\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{}\">",
            rows.len(),
            seconds(time)
        );
        out.push_str("    <properties>\n");
        let first = rows[0];
        for (name, value) in [
            ("agent", first.agent.as_str()),
            ("model", model),
            ("tier", first.tier.as_str()),
            ("version_id", version),
        ] {
            property(&mut out, name, value);
        }
        if let Some(summary) = summaries.get(&(*model, *version)) {
            property(
                &mut out,
                "mean_pass_rate",
                &format!("{:.6}", summary.mean_pass_rate),
            );
        }
        out.push_str("    </properties>\n");
        for row in rows {
            testcase(&mut out, row);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn count<'a>(rows: impl Iterator<Item = &'a ResultRow>) -> (usize, usize) {
    let (mut failures, mut errors) = (0, 0);
    for row in rows {
        if row.error.is_some() {
            errors += 1;
        } else if !row.passed {
            failures += 1;
        }
    }
    (failures, errors)
}

/// The rows' total latency, saturating (a hostile row may claim any duration).
fn total_latency<'a>(rows: impl Iterator<Item = &'a ResultRow>) -> u64 {
    rows.fold(0, |total, row| total.saturating_add(row.latency.total_us))
}

fn property(out: &mut String, name: &str, value: &str) {
    out.push_str("      <property name=\"");
    write_escaped(out, name);
    out.push_str("\" value=\"");
    write_escaped(out, value);
    out.push_str("\"/>\n");
}

fn testcase(out: &mut String, row: &ResultRow) {
    out.push_str("    <testcase name=\"");
    write_escaped(out, &format!("{} #{}", row.scenario, row.repetition));
    out.push_str("\" classname=\"");
    write_escaped(
        out,
        &format!("{}.{}.{}", row.agent, row.version_id, row.model),
    );
    let _ = write!(out, "\" time=\"{}\"", seconds(row.latency.total_us));
    let failed: Vec<_> = row
        .assertions
        .iter()
        .filter(|a| !a.verdict.is_pass())
        .collect();
    let answer = row.transcript.as_ref().map(|t| t.answer.as_str());
    if row.error.is_none() && row.passed && answer.is_none_or(str::is_empty) {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    if let Some(error) = &row.error {
        out.push_str("      <error type=\"run\" message=\"");
        write_escaped(out, error);
        out.push_str("\">");
        write_escaped_text(out, error);
        out.push_str("</error>\n");
    } else if !row.passed {
        let message = if failed.is_empty() {
            "the run did not pass".to_owned()
        } else {
            format!(
                "{} of {} assertions did not pass",
                failed.len(),
                row.assertions.len()
            )
        };
        let _ = write!(
            out,
            "      <failure type=\"assertions\" message=\"{message}\">"
        );
        for assertion in &failed {
            let line = format!(
                "{} ({}): {}: {}\n",
                assertion.id,
                assertion.kind,
                assertion.verdict.as_str(),
                assertion.reason
            );
            write_escaped_text(out, &line);
        }
        out.push_str("</failure>\n");
    }
    if let Some(answer) = answer.filter(|a| !a.is_empty()) {
        out.push_str("      <system-out>");
        write_escaped_text(out, answer);
        out.push_str("</system-out>\n");
    }
    out.push_str("    </testcase>\n");
}

/// Microseconds as seconds with six decimals, the unit JUnit readers expect.
fn seconds(us: u64) -> String {
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}
