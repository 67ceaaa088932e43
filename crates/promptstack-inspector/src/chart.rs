//! The cache chart: per turn, the tokens read from the cache, written to it and uncached, ours
//! next to the naive baseline, with the totals and relative cost below, as one self-contained SVG.
//!
//! The layout rules (sizes, labels, styles, patterns) live in `assets/cache-chart.json`, which the
//! page's `chart.js` reads as well; `chart.js` repeats this drawing step for step with the same
//! integer arithmetic, and the browser test checks that both produce the same bytes for one
//! report. Change the two together.

use std::fmt::Write as _;

use promptstack::provider::sim::{SimCounts, SimFigures, SimReport};
use serde::Deserialize;

/// The layout rules shared with the page.
#[derive(Debug, Deserialize)]
struct Layout {
    plot_top: u64,
    plot_height: u64,
    left: u64,
    right: u64,
    bar: u64,
    pair_gap: u64,
    turn_gap: u64,
    min_width: u64,
    line_height: u64,
    label_every: u32,
    series: Vec<Series>,
    style: String,
    defs: String,
}

#[derive(Debug, Deserialize)]
struct Series {
    key: String,
    label: String,
}

/// The layout rules' text, as embedded.
pub(crate) const LAYOUT: &str = include_str!("../assets/cache-chart.json");

fn layout() -> Layout {
    // The file is part of the crate and checked by the tests; it cannot be malformed at run time.
    serde_json::from_str(LAYOUT).unwrap_or_else(|e| unreachable!("cache-chart.json: {e}"))
}

/// Escapes text for an SVG text node or attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// `part / whole` in tenths of a percent, rounded half up, as "12.3 %".
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "0.0 %".to_owned();
    }
    let tenths = (part * 2000 + whole) / (2 * whole);
    format!("{}.{} %", tenths / 10, tenths % 10)
}

/// A non-negative factor with three decimals, as "0.213×".
fn factor(x: f64) -> String {
    let thousandths = (x * 1000.0).round().max(0.0) as u64;
    format!("{}.{:03}×", thousandths / 1000, thousandths % 1000)
}

fn counts(c: &SimCounts, key: &str) -> u64 {
    match key {
        "read" => c.read,
        "written" => c.written,
        _ => c.uncached,
    }
}

fn totals(side: &str, f: &SimFigures) -> String {
    format!(
        "{side}: {} requests, {} input tokens: read {}, written {}, uncached {}; cost {} of uncached",
        f.requests,
        f.input_tokens,
        percent(f.read, f.input_tokens),
        percent(f.written, f.input_tokens),
        percent(f.uncached, f.input_tokens),
        factor(f.relative_cost)
    )
}

/// Draws the cache chart of a simulation as a self-contained, accessible SVG document: a title
/// and a description for screen readers, every series named in text and told apart by pattern as
/// well as colour, a light and a dark scheme following the system setting.
pub fn cache_chart_svg(report: &SimReport) -> String {
    let l = layout();
    let turns = report.per_turn.len() as u64;
    let group = 2 * l.bar + l.pair_gap + l.turn_gap;
    let plot_width = turns * group;
    let width = l.min_width.max(l.left + plot_width + l.right);
    let bottom = l.plot_top + l.plot_height;
    let legend = bottom + 40;
    let height = legend + 4 * l.line_height + 8;
    let max = report
        .per_turn
        .iter()
        .flat_map(|t| [&t.ours, &t.naive])
        .map(|c| c.read + c.written + c.uncached)
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = |v: u64| (v * l.plot_height * 2 + max) / (2 * max);
    let title = format!(
        "Cache over a thread: {} {}, target {}, {} turns {} s apart",
        report.format, report.model, report.target, report.turns, report.gap_seconds
    );
    let ours = totals("ours", &report.ours);
    let naive = totals("naive", &report.naive);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"cc\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-labelledby=\"cc-title cc-desc\">"
    );
    let _ = writeln!(s, "<title id=\"cc-title\">{}</title>", escape(&title));
    let _ = writeln!(
        s,
        "<desc id=\"cc-desc\">Tokens per turn read from the cache, written to it and uncached; in each turn the left bar is ours and the right, lighter bar the naive baseline. {}. {}.</desc>",
        escape(&ours),
        escape(&naive)
    );
    let _ = writeln!(s, "<style>{}</style>", l.style);
    let _ = writeln!(s, "<defs>{}</defs>", l.defs);
    let _ = writeln!(
        s,
        "<rect class=\"bg\" width=\"{width}\" height=\"{height}\"/>"
    );
    let right = l.left + plot_width;
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\">tokens per turn</text>",
        l.left,
        l.plot_top - 10
    );
    for v in [0, max / 2, max] {
        let y = bottom - scale(v);
        let _ = writeln!(
            s,
            "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{right}\" y2=\"{y}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{v}</text>",
            l.left,
            l.left - 6,
            y + 4
        );
    }
    let _ = writeln!(
        s,
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{bottom}\"/>",
        l.left, l.plot_top, l.left
    );
    for (i, turn) in report.per_turn.iter().enumerate() {
        let x0 = l.left + i as u64 * group + l.turn_gap / 2;
        let _ = write!(
            s,
            "<g><title>turn {}{}: ours read {}, written {}, uncached {}; naive read {}, written {}, uncached {}</title>",
            turn.turn,
            if turn.mcp_failed {
                " (an MCP server failed)"
            } else {
                ""
            },
            turn.ours.read,
            turn.ours.written,
            turn.ours.uncached,
            turn.naive.read,
            turn.naive.written,
            turn.naive.uncached
        );
        for (side, c, x) in [
            ("ours", &turn.ours, x0),
            ("naive", &turn.naive, x0 + l.bar + l.pair_gap),
        ] {
            let mut below = 0;
            let mut sum = 0;
            for series in &l.series {
                sum += counts(c, &series.key);
                let top = scale(sum);
                if top > below {
                    let _ = write!(
                        s,
                        "<rect class=\"s-{} side-{side}\" x=\"{x}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                        series.key,
                        bottom - top,
                        l.bar,
                        top - below
                    );
                }
                below = top;
            }
        }
        s.push_str("</g>\n");
        if turn.turn == 1 || turn.turn % l.label_every == 0 {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                l.left + i as u64 * group + group / 2,
                bottom + 16,
                turn.turn
            );
        }
    }
    let _ = writeln!(
        s,
        "<line class=\"axis\" x1=\"{}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">turn</text>",
        l.left,
        l.left - 6,
        bottom + 16
    );
    for (k, series) in l.series.iter().enumerate() {
        let x = l.left + k as u64 * 190;
        let _ = writeln!(
            s,
            "<rect class=\"s-{} side-ours\" x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\"/><text x=\"{}\" y=\"{legend}\">{}</text>",
            series.key,
            legend - 10,
            x + 16,
            escape(&series.label)
        );
    }
    let lines = [
        "In each turn the left bar is ours, the right (lighter) bar the naive baseline.".to_owned(),
        ours,
        naive,
    ];
    for (k, line) in lines.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\">{}</text>",
            l.left,
            legend + (k as u64 + 1) * l.line_height,
            escape(line)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_round_half_up_in_tenths() {
        assert_eq!(percent(1, 8), "12.5 %");
        assert_eq!(percent(1, 3), "33.3 %");
        assert_eq!(percent(2, 3), "66.7 %");
        assert_eq!(percent(0, 0), "0.0 %");
        assert_eq!(factor(0.2125), "0.213×");
        assert_eq!(factor(1.25), "1.250×");
    }

    #[test]
    fn the_layout_parses() {
        let l = layout();
        assert_eq!(l.series.len(), 3);
        assert_eq!(
            l.turn_gap % 2,
            0,
            "the turn gap is split evenly around a pair"
        );
    }
}
