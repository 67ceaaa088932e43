//! The terminal summary: a table of cells fitted to the terminal's width, the versions'
//! summaries, the comparisons and the first failures.
//!
//! Every string from the run (names, reasons, which may quote the model's answer) goes through
//! [`quote`], so no control character, line break or bidirectional override reaches the
//! terminal and no single name is longer than [`promptstack_core::diagnostic::QUOTE_MAX_CHARS`].

use std::fmt::Write as _;

use promptstack_core::diagnostic::quote;
use unicode_width::UnicodeWidthChar;

use super::{Report, cost_text, known, level, mde_text, percent, points};
use crate::stats::{Outcome, Statistics};

/// The most failure lines the summary lists; the rest are counted.
pub const MAX_FAILURE_LINES: usize = 40;

/// How the terminal summary is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TerminalConfig {
    /// The terminal's width in columns (at least 40 is used).
    pub width: usize,
}

impl TerminalConfig {
    /// A layout for a terminal `width` columns wide.
    pub fn new(width: usize) -> Self {
        Self { width }
    }
}

impl Default for TerminalConfig {
    fn default() -> Self {
        Self::new(100)
    }
}

/// The narrowest layout: below it the table would be unreadable anyway.
const MIN_WIDTH: usize = 40;
/// The narrowest a text column is shrunk to.
const MIN_COLUMN: usize = 6;

pub(super) fn write(report: &Report, config: &TerminalConfig) -> String {
    let width = config.width.max(MIN_WIDTH);
    let run = report.run();
    let stats = report.statistics();
    let confidence = level(stats.config.confidence);
    let mut out = String::new();

    let mut header = format!("eval {} · {} rows", safe(&run.suite), run.rows.len());
    if let Some(started) = &run.started_at {
        let _ = write!(header, " · started {}", safe(started));
    }
    let _ = write!(
        header,
        " · confidence {confidence} · seed {}",
        stats.config.seed
    );
    line(&mut out, &header, width);
    for (name, model) in &run.models {
        line(
            &mut out,
            &format!(
                "model {} = {} ({})",
                safe(name),
                safe(&model.model),
                safe(&model.format)
            ),
            width,
        );
    }
    out.push('\n');

    cell_table(&mut out, stats, &confidence, width);
    out.push('\n');
    summary_table(&mut out, stats, width);
    out.push('\n');
    accounting_table(&mut out, stats, width);
    comparisons(&mut out, stats, &confidence, width);
    failures(&mut out, report, width);
    out
}

/// `text` made safe for a terminal: control characters, line breaks and bidirectional
/// overrides escaped, cut to a bounded length.
fn safe(text: &str) -> String {
    quote(text).to_string()
}

fn display_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` cut to at most `max` columns, ending in `…` when cut.
fn fit(text: &str, max: usize) -> String {
    if display_width(text) <= max {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

fn line(out: &mut String, text: &str, width: usize) {
    out.push_str(&fit(text, width));
    out.push('\n');
}

/// A table column: its header, whether it is right-aligned, whether it may shrink.
struct Column {
    header: &'static str,
    right: bool,
    shrinks: bool,
}

impl Column {
    /// A name: left-aligned, cut (with `…`) when the table is too wide.
    fn name(header: &'static str) -> Self {
        Self {
            header,
            right: false,
            shrinks: true,
        }
    }

    /// A figure: right-aligned, never cut.
    fn number(header: &'static str) -> Self {
        Self {
            header,
            right: true,
            shrinks: false,
        }
    }

    /// Left-aligned text that is never cut (an interval).
    fn fixed(header: &'static str) -> Self {
        Self {
            header,
            right: false,
            shrinks: false,
        }
    }
}

fn table(out: &mut String, columns: &[Column], rows: &[Vec<String>], width: usize) {
    let mut widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.iter()
                .map(|r| display_width(&r[i]))
                .chain([display_width(c.header)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let gaps = 2 * columns.len().saturating_sub(1);
    // Shrink the widest shrinkable column one column at a time until the table fits; names are
    // bounded by `quote`, so this loop is too.
    while widths.iter().sum::<usize>() + gaps > width {
        let widest = columns
            .iter()
            .enumerate()
            .filter(|(i, c)| c.shrinks && widths[*i] > MIN_COLUMN)
            .max_by_key(|(i, _)| (widths[*i], std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        match widest {
            Some(i) => widths[i] -= 1,
            None => break,
        }
    }
    let headers: Vec<String> = columns.iter().map(|c| c.header.to_owned()).collect();
    for cells in std::iter::once(&headers).chain(rows) {
        let mut text = String::new();
        for (i, (cell, column)) in cells.iter().zip(columns).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let cell = fit(cell, widths[i]);
            let pad = " ".repeat(widths[i].saturating_sub(display_width(&cell)));
            if column.right {
                text.push_str(&pad);
                text.push_str(&cell);
            } else {
                text.push_str(&cell);
                if i + 1 < columns.len() {
                    text.push_str(&pad);
                }
            }
        }
        line(out, text.trim_end(), width);
    }
}

fn cell_table(out: &mut String, stats: &Statistics, confidence: &str, width: usize) {
    let interval_header: &'static str = if confidence == "95 %" {
        "95 % interval"
    } else {
        "interval"
    };
    let columns = [
        Column::name("model"),
        Column::name("tier"),
        Column::name("version"),
        Column::name("scenario"),
        Column::number("passed"),
        Column::number("rate"),
        Column::fixed(interval_header),
    ];
    let rows: Vec<Vec<String>> = stats
        .cells
        .iter()
        .map(|c| {
            vec![
                safe(&c.model),
                safe(&c.tier),
                safe(&c.version_id),
                safe(&c.scenario),
                format!("{}/{}", c.passes, c.runs),
                percent(c.pass_rate),
                format!(
                    "[{}, {}]",
                    percent(c.interval.low),
                    percent(c.interval.high)
                ),
            ]
        })
        .collect();
    table(out, &columns, &rows, width);
}

fn summary_table(out: &mut String, stats: &Statistics, width: usize) {
    let columns = [
        Column::name("model"),
        Column::name("version"),
        Column::number("scenarios"),
        Column::number("passed"),
        Column::number("mean pass rate"),
    ];
    let rows: Vec<Vec<String>> = stats
        .summaries
        .iter()
        .map(|s| {
            vec![
                safe(&s.model),
                safe(&s.version_id),
                s.scenarios.to_string(),
                format!("{}/{}", s.passes, s.runs),
                percent(s.mean_pass_rate),
            ]
        })
        .collect();
    table(out, &columns, &rows, width);
}

/// Tokens, cache reads beside their prediction, and cost, per version on a model.
fn accounting_table(out: &mut String, stats: &Statistics, width: usize) {
    let columns = [
        Column::name("model"),
        Column::name("version"),
        Column::number("tokens in"),
        Column::number("tokens out"),
        Column::number("cache read"),
        Column::number("predicted"),
        Column::number("cost"),
    ];
    let rows: Vec<Vec<String>> = stats
        .summaries
        .iter()
        .map(|s| {
            let a = &s.accounting;
            vec![
                safe(&s.model),
                safe(&s.version_id),
                a.input_tokens.to_string(),
                a.output_tokens.to_string(),
                known(a.cache_read_tokens),
                known(a.predicted_cache_read_tokens),
                cost_text(a),
            ]
        })
        .collect();
    table(out, &columns, &rows, width);
}

fn comparisons(out: &mut String, stats: &Statistics, confidence: &str, width: usize) {
    if stats.comparisons.is_empty() {
        return;
    }
    out.push('\n');
    line(
        out,
        &format!("comparisons (second − first, mean over shared scenarios, {confidence} interval)"),
        width,
    );
    for comparison in &stats.comparisons {
        let (a, b) = (safe(&comparison.a), safe(&comparison.b));
        match &comparison.outcome {
            Outcome::NotCompared { reason } => {
                line(
                    out,
                    &format!(
                        "{}: {a} vs {b}: not compared: {reason}",
                        safe(&comparison.model)
                    ),
                    width,
                );
            }
            Outcome::Compared(paired) => {
                line(
                    out,
                    &format!(
                        "{}: {a} vs {b} ({} scenarios)",
                        safe(&comparison.model),
                        paired.scenarios
                    ),
                    width,
                );
                line(
                    out,
                    &format!(
                        "  {b} − {a}: {} [{}, {}]: {}",
                        points(paired.difference),
                        points(paired.interval.low),
                        points(paired.interval.high),
                        safe(&paired.verdict.describe())
                    ),
                    width,
                );
                let mde = format!(
                    "  minimum detectable difference at {} power: {}",
                    level(stats.config.power),
                    mde_text(&paired.mde, " observed")
                );
                line(out, &mde, width);
                for test in &paired.mcnemar {
                    let name = test
                        .assertion
                        .as_deref()
                        .map_or_else(|| "overall pass".to_owned(), safe);
                    line(
                        out,
                        &format!(
                            "  McNemar {name}: {} vs {} discordant of {} pairs, p = {:.4}",
                            test.a_only, test.b_only, test.pairs, test.p_value
                        ),
                        width,
                    );
                }
            }
        }
    }
}

fn failures(out: &mut String, report: &Report, width: usize) {
    let mut lines = Vec::new();
    for row in &report.run().rows {
        if row.passed && row.error.is_none() {
            continue;
        }
        let at = format!(
            "{} {} on {} #{}",
            safe(&row.scenario),
            safe(&row.version_id),
            safe(&row.model),
            row.repetition
        );
        if let Some(error) = &row.error {
            lines.push(format!("ERROR {at}: {}", safe(error)));
        }
        let mut any = false;
        for assertion in row.assertions.iter().filter(|a| !a.verdict.is_pass()) {
            any = true;
            lines.push(format!(
                "{} {at}: {}: {}",
                assertion.verdict.as_str().to_uppercase(),
                safe(&assertion.id),
                safe(&assertion.reason)
            ));
        }
        if !any && row.error.is_none() {
            lines.push(format!("FAIL {at}: the run did not pass"));
        }
    }
    if lines.is_empty() {
        return;
    }
    out.push('\n');
    line(out, &format!("failures ({})", lines.len()), width);
    for text in lines.iter().take(MAX_FAILURE_LINES) {
        line(out, text, width);
    }
    if lines.len() > MAX_FAILURE_LINES {
        line(
            out,
            &format!("… and {} more", lines.len() - MAX_FAILURE_LINES),
            width,
        );
    }
}
