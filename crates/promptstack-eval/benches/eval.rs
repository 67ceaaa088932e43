//! The cost of the statistics and the reports for suites of growing size: two versions on one
//! model, three repetitions per scenario, 10 000 bootstrap resamples (the default).
//!
//! Rows are made deterministically: each version passes a scenario's repetition by a fixed rule
//! of the scenario and repetition index, so every size has mixed cells and discordant pairs.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use promptstack_eval::report::{Report, TerminalConfig};
use promptstack_eval::row::{AssertionResult, ResultRow, RowKey, Run, Verdict};
use promptstack_eval::stats::{Statistics, StatsConfig};

fn run(scenarios: usize) -> Run {
    let mut rows = Vec::new();
    for scenario in 0..scenarios {
        for (v, version) in ["baseline", "candidate"].into_iter().enumerate() {
            for repetition in 0..3u32 {
                let passed = !(scenario * 7 + v * 3 + repetition as usize).is_multiple_of(5);
                let key = RowKey {
                    agent: "browser-agent".into(),
                    version_id: version.into(),
                    fingerprint: format!("fp-{version}"),
                    rules_version: "1".into(),
                    model: "local".into(),
                    tier: "small".into(),
                    scenario: format!("scenario-{scenario:04}"),
                    repetition,
                };
                let verdict = if passed { Verdict::Pass } else { Verdict::Fail };
                rows.push(
                    ResultRow::new(key, passed).with_assertion(AssertionResult::new(
                        "canary",
                        "injection.canary",
                        verdict,
                        "checked",
                    )),
                );
            }
        }
    }
    Run::new("bench", rows)
}

fn bench(c: &mut Criterion) {
    let config = StatsConfig::default();
    let mut group = c.benchmark_group("eval");
    group.sample_size(10);
    for scenarios in [20, 100, 500] {
        let run = run(scenarios);
        group.bench_with_input(BenchmarkId::new("statistics", scenarios), &run, |b, run| {
            b.iter(|| Statistics::compute(black_box(run), &config).unwrap())
        });
        let report = Report::new(run, &config).unwrap();
        group.bench_with_input(BenchmarkId::new("html", scenarios), &report, |b, report| {
            b.iter(|| black_box(report).to_html())
        });
        group.bench_with_input(BenchmarkId::new("json", scenarios), &report, |b, report| {
            b.iter(|| black_box(report).to_json().unwrap())
        });
        group.bench_with_input(
            BenchmarkId::new("terminal", scenarios),
            &report,
            |b, report| b.iter(|| black_box(report).to_terminal(&TerminalConfig::new(100))),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
