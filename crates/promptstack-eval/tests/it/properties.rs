//! Invariants of the statistics over generated inputs.

use proptest::prelude::*;

use promptstack_eval::row::{AssertionResult, ResultRow, Run, Verdict};
use promptstack_eval::stats::{
    Difference, Outcome, Statistics, StatsConfig, bootstrap_mean, mcnemar_exact, wilson,
};

use crate::key;

fn finite_in(x: f64, low: f64, high: f64) -> bool {
    x.is_finite() && low <= x && x <= high
}

/// Rows over small name sets, so versions, models and scenarios collide and share.
fn rows() -> impl Strategy<Value = Vec<ResultRow>> {
    let row = (
        0..3usize,
        0..2usize,
        0..6usize,
        0..4u32,
        any::<bool>(),
        any::<bool>(),
    );
    proptest::collection::vec(row, 0..80).prop_map(|specs| {
        let mut seen = std::collections::BTreeSet::new();
        specs
            .into_iter()
            .filter(|(v, m, s, r, _, _)| seen.insert((*v, *m, *s, *r)))
            .map(|(v, m, s, r, passed, asserted)| {
                let row = ResultRow::new(
                    key(&format!("v{v}"), &format!("m{m}"), &format!("s{s}"), r),
                    passed,
                );
                if asserted {
                    let verdict = if passed { Verdict::Pass } else { Verdict::Fail };
                    row.with_assertion(AssertionResult::new("a", "contains", verdict, ""))
                } else {
                    row
                }
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn wilson_contains_the_rate_within_the_unit_interval(
        runs in 1u64..1_000_000,
        share in 0.0f64..=1.0,
        confidence in 0.5f64..0.9999,
    ) {
        let passes = ((runs as f64) * share).floor() as u64;
        let interval = wilson(passes, runs, confidence).unwrap();
        let rate = passes as f64 / runs as f64;
        prop_assert!(finite_in(interval.low, 0.0, 1.0) && finite_in(interval.high, 0.0, 1.0));
        prop_assert!(interval.contains(rate), "{interval:?} misses {rate}");
    }

    #[test]
    fn wilson_widens_with_confidence(passes in 0u64..50, extra in 0u64..50) {
        let runs = passes + extra + 1;
        let narrow = wilson(passes, runs, 0.8).unwrap();
        let wide = wilson(passes, runs, 0.99).unwrap();
        prop_assert!(wide.low <= narrow.low && narrow.high <= wide.high);
    }

    #[test]
    fn mcnemar_is_a_symmetric_probability(b in 0u64..5_000, c in 0u64..5_000) {
        let p = mcnemar_exact(b, c);
        prop_assert!(finite_in(p, 0.0, 1.0));
        prop_assert_eq!(p, mcnemar_exact(c, b));
    }

    #[test]
    fn mcnemar_falls_as_the_imbalance_grows(b in 0u64..300, c in 0u64..300) {
        let (low, high) = (b.min(c), b.max(c));
        prop_assert!(mcnemar_exact(low, high + 1) <= mcnemar_exact(low, high) + 1e-12);
    }

    #[test]
    fn bootstrap_is_reproducible_bounded_and_contains_the_mean(
        values in proptest::collection::vec(-1.0f64..=1.0, 1..30),
        seed in any::<u64>(),
        stream in any::<u64>(),
    ) {
        let interval = bootstrap_mean(&values, 2000, 0.95, seed, stream).unwrap();
        prop_assert_eq!(interval, bootstrap_mean(&values, 2000, 0.95, seed, stream).unwrap());
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // A resampled mean lies between the extremes, up to the rounding of its sum.
        prop_assert!(min - 1e-12 <= interval.low && interval.low <= interval.high);
        prop_assert!(interval.high <= max + 1e-12);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        // A percentile interval need not hold the mean in general, but the resampled means of
        // such samples fall below and above it far more often than 2.5 % of the time each
        // (one outlier, the most lopsided case, is left out with probability (1 − 1/n)^n ≥ ¼).
        prop_assert!(
            interval.low <= mean + 1e-12 && mean - 1e-12 <= interval.high,
            "{interval:?} misses {mean}"
        );
    }

    #[test]
    fn statistics_never_panic_and_stay_in_range(rows in rows(), seed in any::<u64>()) {
        let config = StatsConfig::default().with_resamples(200).with_seed(seed);
        let run = Run::new("generated", rows);
        let Ok(stats) = Statistics::compute(&run, &config) else {
            prop_assert!(run.rows.is_empty());
            return Ok(());
        };
        for cell in &stats.cells {
            prop_assert!(cell.interval.contains(cell.pass_rate));
            prop_assert!(finite_in(cell.interval.low, 0.0, 1.0) && finite_in(cell.interval.high, 0.0, 1.0));
        }
        for comparison in &stats.comparisons {
            let Outcome::Compared(paired) = &comparison.outcome else { continue };
            prop_assert!(finite_in(paired.difference, -1.0, 1.0));
            prop_assert!(finite_in(paired.interval.low, -1.0, 1.0));
            prop_assert!(finite_in(paired.interval.high, -1.0, 1.0));
            prop_assert!(paired.mde.planned.is_finite() && paired.mde.planned > 0.0);
            for test in &paired.mcnemar {
                prop_assert!(finite_in(test.p_value, 0.0, 1.0));
                prop_assert!(test.a_only + test.b_only <= test.pairs);
            }
            match &paired.verdict {
                Difference::NoDifferenceShown => prop_assert!(paired.interval.spans_zero()),
                Difference::Favours { version_id } => {
                    prop_assert!(!paired.interval.spans_zero());
                    let better = if paired.interval.low > 0.0 { &comparison.b } else { &comparison.a };
                    prop_assert_eq!(version_id, better);
                }
                Difference::TooFewScenarios { needed } => {
                    prop_assert!(paired.scenarios < u64::from(*needed));
                }
                other => prop_assert!(false, "unexpected verdict {:?}", other),
            }
        }
        // Same run, same seed: the same statistics, whatever the order of the rows.
        let mut reversed = run.clone();
        reversed.rows.reverse();
        prop_assert_eq!(&stats, &Statistics::compute(&reversed, &config).unwrap());
    }
}
