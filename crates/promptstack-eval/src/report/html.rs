//! The self-contained HTML report: the matrix, the A/B comparisons with their intervals drawn in
//! inline SVG, and a drill-down per scenario.
//!
//! The page holds no script and loads nothing: its Content-Security-Policy allows no source at
//! all except its one stylesheet, named by hash. Every string from the run is escaped, and the
//! page is also well-formed XML (void elements closed, only XML's own entities), so a strict
//! XML reader can check it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use sha2::{Digest, Sha256};

use super::escape::{escaped, write_escaped_text};
use super::{Report, cost_text, known, level, mde_text, percent, points, rows_by_scenario};
use crate::row::ResultRow;
use crate::stats::{Cell, Comparison, Interval, Outcome, Paired, Summary};

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1b1f24;background:#fff}
h1{font-size:1.5rem}h2{margin-top:2.5rem;border-bottom:1px solid #d0d7de}h3{margin-top:1.5rem}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#116329}.fail{color:#a40e26}.error{color:#9a6700}
.note{color:#57606a}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.5rem;max-height:24rem;overflow:auto}
details{margin:.25rem 0;border:1px solid #d0d7de;padding:.25rem .5rem}summary{cursor:pointer}
svg{display:block}.track{fill:#eaeef2}.fill{fill:#4a8fd8}.ci{stroke:#1b1f24;stroke-width:1.5}
.zero{stroke:#a40e26;stroke-width:1}.mde{fill:#fff8c5}.point{fill:#1b1f24}.axis{font-size:9px;fill:#57606a}
";

pub(super) fn write(report: &Report) -> String {
    let run = report.run();
    let stats = report.statistics();
    let style_hash = BASE64_STANDARD.encode(Sha256::digest(STYLE.as_bytes()));
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    let _ = writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'sha256-{style_hash}'; img-src 'none'; base-uri 'none'; form-action 'none'\"/>"
    );
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\"/>\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
    let _ = writeln!(out, "<title>eval: {}</title>", escaped(&run.suite));
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");

    let _ = writeln!(out, "<h1>eval: {}</h1>", escaped(&run.suite));
    if !run.models.is_empty() {
        out.push_str("<p class=\"note\">models: ");
        for (i, (name, model)) in run.models.iter().enumerate() {
            if i > 0 {
                out.push_str(" · ");
            }
            let _ = write!(
                out,
                "{} = {} ({})",
                escaped(name),
                escaped(&model.model),
                escaped(&model.format)
            );
        }
        out.push_str("</p>\n");
    }
    out.push_str("<p class=\"note\">");
    if let Some(started) = &run.started_at {
        let _ = write!(out, "started {} · ", escaped(started));
    }
    let _ = writeln!(
        out,
        "{} rows · intervals at {} confidence · minimum detectable difference at {} power · \
         {} bootstrap resamples, seed {}</p>",
        run.rows.len(),
        level(stats.config.confidence),
        level(stats.config.power),
        stats.config.resamples,
        stats.config.seed
    );

    let scenarios = rows_by_scenario(run);
    matrix(&mut out, report, &scenarios);
    comparisons(&mut out, report);
    drill_down(&mut out, &scenarios);
    out.push_str("</body>\n</html>\n");
    out
}

/// The most cells (versions × scenarios) one model's table draws; a larger one is left to the
/// JSON report rather than written as megabytes of "not run".
const MAX_MATRIX_CELLS: usize = 20_000;

/// One model's part of the matrix.
#[derive(Default)]
struct MatrixModel<'a> {
    tier: &'a str,
    versions: Vec<&'a Summary>,
    cells: BTreeMap<&'a str, BTreeMap<&'a str, &'a Cell>>,
}

/// One table per model: scenarios down, versions across, each cell its pass count, rate and
/// Wilson interval as a bar.
fn matrix(out: &mut String, report: &Report, scenarios: &[(&str, Vec<&ResultRow>)]) {
    let stats = report.statistics();
    out.push_str("<h2 id=\"matrix\">Matrix</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">Each cell: passes of runs, the pass rate (bar) and its Wilson interval \
         at {} confidence (line).</p>",
        level(stats.config.confidence)
    );
    let anchors: BTreeMap<&str, usize> = scenarios
        .iter()
        .enumerate()
        .map(|(index, (scenario, _))| (*scenario, index))
        .collect();
    // Per model: its tier, its versions (summaries) and its cells by scenario then version, each
    // gathered in one pass so that many models cost no more than many rows.
    let mut models: BTreeMap<&str, MatrixModel<'_>> = BTreeMap::new();
    for summary in &stats.summaries {
        let model = models.entry(&summary.model).or_default();
        model.tier = &summary.tier;
        model.versions.push(summary);
    }
    for cell in &stats.cells {
        if let Some(model) = models.get_mut(cell.model.as_str()) {
            model
                .cells
                .entry(&cell.scenario)
                .or_default()
                .insert(&cell.version_id, cell);
        }
    }
    for (model, matrix) in &models {
        let _ = writeln!(
            out,
            "<h3>{} <span class=\"note\">({})</span></h3>",
            escaped(model),
            escaped(matrix.tier)
        );
        let size = matrix.versions.len().saturating_mul(matrix.cells.len());
        if size > MAX_MATRIX_CELLS {
            let _ = writeln!(
                out,
                "<p>{} versions × {} scenarios is too large a table to draw here; every cell is \
                 in the JSON report.</p>",
                matrix.versions.len(),
                matrix.cells.len()
            );
            continue;
        }
        out.push_str("<table>\n<thead><tr><th scope=\"col\">scenario</th>");
        for version in &matrix.versions {
            let _ = write!(
                out,
                "<th scope=\"col\">{}</th>",
                escaped(&version.version_id)
            );
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (scenario, by_version) in &matrix.cells {
            let index = anchors.get(scenario).copied().unwrap_or_default();
            let cells: Vec<Option<&Cell>> = matrix
                .versions
                .iter()
                .map(|v| by_version.get(v.version_id.as_str()).copied())
                .collect();
            let _ = write!(
                out,
                "<tr><th scope=\"row\"><a href=\"#scenario-{index}\">{}</a></th>",
                escaped(scenario)
            );
            for cell in cells {
                match cell {
                    None => out.push_str("<td class=\"note\">not run</td>"),
                    Some(cell) => {
                        let _ = write!(
                            out,
                            "<td>{}/{} · {}<br/>[{}, {}]",
                            cell.passes,
                            cell.runs,
                            percent(cell.pass_rate),
                            percent(cell.interval.low),
                            percent(cell.interval.high)
                        );
                        rate_bar(out, cell.pass_rate, &cell.interval);
                        out.push_str("</td>");
                    }
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("<tr><th scope=\"row\">mean pass rate</th>");
        for version in &matrix.versions {
            let _ = write!(
                out,
                "<td>{} ({}/{} runs)</td>",
                percent(version.mean_pass_rate),
                version.passes,
                version.runs
            );
        }
        out.push_str("</tr>\n");
        accounting_rows(out, &matrix.versions);
        out.push_str("</tbody>\n</table>\n");
    }
}

/// The matrix's last rows: tokens, cache reads beside their prediction, and cost per version.
fn accounting_rows(out: &mut String, versions: &[&Summary]) {
    let mut tokens = Vec::new();
    let mut cache = Vec::new();
    let mut cost = Vec::new();
    for version in versions {
        let a = &version.accounting;
        tokens.push(format!("{} / {}", a.input_tokens, a.output_tokens));
        cache.push(format!(
            "{} / {}",
            known(a.cache_read_tokens),
            known(a.predicted_cache_read_tokens)
        ));
        cost.push(cost_text(a));
    }
    for (label, cells) in [
        ("tokens in / out", tokens),
        ("cache read: measured / predicted", cache),
        ("cost", cost),
    ] {
        let _ = write!(out, "<tr><th scope=\"row\">{label}</th>");
        for cell in cells {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>\n");
    }
}

/// A pass rate on a 0–100 % track, its interval as a line across it.
fn rate_bar(out: &mut String, rate: f64, interval: &Interval) {
    let _ = write!(
        out,
        "<svg class=\"bar\" width=\"120\" height=\"12\" viewBox=\"0 0 120 12\" role=\"img\" \
         aria-label=\"pass rate {rate} with interval {low} to {high}\">\
         <rect class=\"track\" x=\"0\" y=\"2\" width=\"120\" height=\"8\"/>\
         <rect class=\"fill\" x=\"0\" y=\"2\" width=\"{w:.2}\" height=\"8\"/>\
         <line class=\"ci\" x1=\"{x1:.2}\" y1=\"6\" x2=\"{x2:.2}\" y2=\"6\"/></svg>",
        rate = percent(rate),
        low = percent(interval.low),
        high = percent(interval.high),
        w = rate * 120.0,
        x1 = interval.low * 120.0,
        x2 = interval.high * 120.0,
    );
}

fn comparisons(out: &mut String, report: &Report) {
    let stats = report.statistics();
    out.push_str("<h2 id=\"comparisons\">A/B comparisons</h2>\n");
    if stats.comparisons.is_empty() {
        out.push_str("<p>No model ran two versions, so there is nothing to compare.</p>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<p class=\"note\">For each two versions on one model: the mean over the scenarios both \
         ran of the second's pass rate minus the first's, with a cluster-bootstrap interval at {} \
         confidence (scenarios resampled, repetitions kept with their scenario). The shaded band \
         is ± the planned minimum detectable difference at {} power: a true difference inside it \
         can easily go unseen. An interval that touches zero shows no difference.</p>",
        level(stats.config.confidence),
        level(stats.config.power)
    );
    for comparison in &stats.comparisons {
        comparison_section(out, comparison);
    }
}

fn comparison_section(out: &mut String, comparison: &Comparison) {
    let (a, b) = (escaped(&comparison.a), escaped(&comparison.b));
    let _ = writeln!(out, "<h3>{}: {a} vs {b}</h3>", escaped(&comparison.model));
    let paired = match &comparison.outcome {
        Outcome::NotCompared { reason } => {
            let _ = writeln!(out, "<p>Not compared: {}</p>", escaped(reason));
            return;
        }
        Outcome::Compared(paired) => paired,
    };
    let _ = writeln!(
        out,
        "<p><strong>{}</strong>: {b} − {a} = {} (interval {} to {}) over {} shared scenarios{}; \
         mean pass rate {a} {}, {b} {}.</p>",
        escaped(&paired.verdict.describe()),
        points(paired.difference),
        points(paired.interval.low),
        points(paired.interval.high),
        paired.scenarios,
        if paired.unshared_scenarios > 0 {
            format!(
                " ({} run under only one version left out)",
                paired.unshared_scenarios
            )
        } else {
            String::new()
        },
        percent(paired.mean_a),
        percent(paired.mean_b),
    );
    difference_chart(out, paired);
    let _ = writeln!(
        out,
        "<p>Minimum detectable difference: {}.</p>",
        mde_text(&paired.mde, " with the observed spread")
    );
    let _ = writeln!(
        out,
        "<table>\n<thead><tr><th scope=\"col\">exact McNemar</th><th scope=\"col\">pairs</th>\
         <th scope=\"col\">only {a} passed</th><th scope=\"col\">only {b} passed</th>\
         <th scope=\"col\">p</th></tr></thead>\n<tbody>"
    );
    for test in &paired.mcnemar {
        let name = test
            .assertion
            .as_deref()
            .map_or_else(|| "overall pass".to_owned(), escaped);
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{name}</th><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{:.4}</td></tr>",
            test.pairs, test.a_only, test.b_only, test.p_value
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

/// The difference on a −100 … +100 pp axis: the planned MDE band around zero, the zero line,
/// the interval and the point estimate.
fn difference_chart(out: &mut String, paired: &Paired) {
    // x = 20 + (d + 1) · 200: the axis spans 20..420, zero at 220.
    let x = |d: f64| 20.0 + (d.clamp(-1.0, 1.0) + 1.0) * 200.0;
    let mde = paired.mde.planned.min(1.0);
    let _ = writeln!(
        out,
        "<svg width=\"440\" height=\"44\" viewBox=\"0 0 440 44\" role=\"img\" \
         aria-label=\"difference {d} with interval {low} to {high}\">\
         <rect class=\"track\" x=\"20\" y=\"8\" width=\"400\" height=\"16\"/>\
         <rect class=\"mde\" x=\"{mx:.2}\" y=\"8\" width=\"{mw:.2}\" height=\"16\"/>\
         <line class=\"zero\" x1=\"220\" y1=\"4\" x2=\"220\" y2=\"28\"/>\
         <line class=\"ci\" x1=\"{x1:.2}\" y1=\"16\" x2=\"{x2:.2}\" y2=\"16\"/>\
         <line class=\"ci\" x1=\"{x1:.2}\" y1=\"11\" x2=\"{x1:.2}\" y2=\"21\"/>\
         <line class=\"ci\" x1=\"{x2:.2}\" y1=\"11\" x2=\"{x2:.2}\" y2=\"21\"/>\
         <circle class=\"point\" cx=\"{px:.2}\" cy=\"16\" r=\"3.5\"/>\
         <text class=\"axis\" x=\"20\" y=\"40\">\u{2212}100 pp</text>\
         <text class=\"axis\" x=\"212\" y=\"40\">0</text>\
         <text class=\"axis\" x=\"392\" y=\"40\">+100 pp</text></svg>",
        d = points(paired.difference),
        low = points(paired.interval.low),
        high = points(paired.interval.high),
        mx = x(-mde),
        mw = x(mde) - x(-mde),
        x1 = x(paired.interval.low),
        x2 = x(paired.interval.high),
        px = x(paired.difference),
    );
}

/// Per scenario, every row: verdicts, usage, the tool calls, the request and the answer.
fn drill_down(out: &mut String, scenarios: &[(&str, Vec<&ResultRow>)]) {
    out.push_str("<h2 id=\"scenarios\">Scenarios</h2>\n");
    for (index, (scenario, rows)) in scenarios.iter().enumerate() {
        let _ = writeln!(
            out,
            "<section id=\"scenario-{index}\">\n<h3>{}</h3>",
            escaped(scenario)
        );
        for row in rows {
            row_details(out, row);
        }
        out.push_str("</section>\n");
    }
}

fn row_details(out: &mut String, row: &ResultRow) {
    let (class, label) = if row.error.is_some() {
        ("error", "ERROR")
    } else if row.passed {
        ("pass", "PASS")
    } else {
        ("fail", "FAIL")
    };
    let _ = writeln!(
        out,
        "<details>\n<summary><span class=\"{class}\">{label}</span> {} on {} · repetition {}</summary>",
        escaped(&row.version_id),
        escaped(&row.model),
        row.repetition
    );
    if let Some(error) = &row.error {
        out.push_str("<p class=\"error\">");
        write_escaped_text(out, error);
        out.push_str("</p>\n");
    }
    let usage = &row.usage;
    let optional =
        |value: Option<u64>| value.map_or_else(|| "not reported".to_owned(), |v| v.to_string());
    let _ = writeln!(
        out,
        "<table>\n<tbody>\n\
         <tr><th scope=\"row\">agent</th><td>{}</td></tr>\n\
         <tr><th scope=\"row\">fingerprint</th><td>{}</td></tr>\n\
         <tr><th scope=\"row\">rules version</th><td>{}</td></tr>\n\
         <tr><th scope=\"row\">latency</th><td>first token {}, total {} ms</td></tr>\n\
         <tr><th scope=\"row\">tokens</th><td>{} in, {} out; cache read {}, cache write {}</td></tr>\n\
         <tr><th scope=\"row\">cost</th><td>{}</td></tr>\n\
         </tbody>\n</table>",
        escaped(&row.agent),
        escaped(&row.fingerprint),
        escaped(&row.rules_version),
        row.latency.first_token_us.map_or_else(
            || "not measured".to_owned(),
            |us| format!("{} ms", milliseconds(us))
        ),
        milliseconds(row.latency.total_us),
        usage.input_tokens,
        usage.output_tokens,
        optional(usage.cache_read_tokens),
        optional(usage.cache_write_tokens),
        row.cost
            .map_or_else(|| "not priced".to_owned(), |c| c.to_string()),
    );
    if !row.assertions.is_empty() {
        out.push_str(
            "<table>\n<thead><tr><th scope=\"col\">assertion</th><th scope=\"col\">kind</th>\
             <th scope=\"col\">verdict</th><th scope=\"col\">reason</th></tr></thead>\n<tbody>\n",
        );
        for assertion in &row.assertions {
            let verdict = assertion.verdict.as_str();
            let _ = write!(
                out,
                "<tr><th scope=\"row\">{}</th><td>{}</td><td class=\"{verdict}\">{verdict}</td><td>",
                escaped(&assertion.id),
                escaped(&assertion.kind)
            );
            write_escaped_text(out, &assertion.reason);
            out.push_str("</td></tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
    }
    if let Some(transcript) = &row.transcript {
        if !transcript.tool_calls.is_empty() {
            out.push_str("<h4>Tool calls</h4>\n<ol>\n");
            for call in &transcript.tool_calls {
                let _ = write!(out, "<li><code>{}</code><pre>", escaped(&call.name));
                write_escaped_text(out, &call.arguments);
                out.push_str("</pre></li>\n");
            }
            out.push_str("</ol>\n");
        }
        out.push_str("<h4>Answer</h4>\n<pre>");
        write_escaped_text(out, &transcript.answer);
        out.push_str("</pre>\n<h4>Request</h4>\n<pre>");
        write_escaped_text(out, &transcript.request);
        out.push_str("</pre>\n");
    }
    out.push_str("</details>\n");
}

/// Microseconds as milliseconds with three decimals.
fn milliseconds(us: u64) -> String {
    format!("{}.{:03}", us / 1000, us % 1000)
}
