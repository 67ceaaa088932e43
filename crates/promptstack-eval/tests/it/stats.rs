//! The statistics against published and exactly computed values, and their handling of
//! degenerate runs.

use promptstack_eval::ErrorKind;
use promptstack_eval::row::{AssertionResult, ResultRow, Run, Verdict};
use promptstack_eval::stats::{
    Difference, MAX_BOOTSTRAP_DRAWS, Outcome, PLANNING_SD, Paired, Statistics, StatsConfig,
    bootstrap_mean, mcnemar_exact, minimum_detectable_difference, wilson,
};

use crate::{fixture, key, paired_rows};

fn close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} is not within {tolerance} of {expected}"
    );
}

fn config() -> StatsConfig {
    StatsConfig::default().with_resamples(2000).with_seed(7)
}

fn only_comparison(run: &Run, config: &StatsConfig) -> Outcome {
    let stats = Statistics::compute(run, config).expect("statistics");
    assert_eq!(stats.comparisons.len(), 1);
    stats.comparisons[0].outcome.clone()
}

fn compared(outcome: Outcome) -> Paired {
    match outcome {
        Outcome::Compared(paired) => paired,
        other => panic!("expected a comparison, got {other:?}"),
    }
}

/// Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I,
/// method 3 (the score interval without continuity correction), at 95 %.
#[test]
fn wilson_matches_newcombe_table() {
    for (passes, runs, low, high) in [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ] {
        let interval = wilson(passes, runs, 0.95).unwrap();
        close(interval.low, low, 5e-5);
        close(interval.high, high, 5e-5);
    }
}

#[test]
fn wilson_is_exact_at_the_ends_and_symmetric() {
    let none = wilson(0, 7, 0.9).unwrap();
    let all = wilson(7, 7, 0.9).unwrap();
    assert_eq!(none.low, 0.0);
    assert_eq!(all.high, 1.0);
    close(none.high, 1.0 - all.low, 1e-12);
    // z² / (n + z²) is the upper bound at zero passes.
    let z: f64 = 1.959_963_984_540_054;
    close(
        wilson(0, 10, 0.95).unwrap().high,
        z * z / (10.0 + z * z),
        1e-9,
    );
}

#[test]
fn wilson_refuses_impossible_counts_and_levels() {
    assert_eq!(
        wilson(0, 0, 0.95).unwrap_err().kind(),
        ErrorKind::InvalidConfig
    );
    assert_eq!(
        wilson(4, 3, 0.95).unwrap_err().kind(),
        ErrorKind::InvalidConfig
    );
    for level in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
        let error = wilson(1, 3, level).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidConfig);
        assert!(error.message().contains("confidence"), "{error}");
    }
}

/// `P(X ≤ k)` for `X ~ Binomial(n, ½)`, summed exactly in integers.
fn exact_lower_tail(n: u32, k: u32) -> f64 {
    let mut coefficient: u128 = 1;
    let mut sum: u128 = 0;
    for i in 0..=k {
        if i > 0 {
            coefficient = coefficient * u128::from(n - i + 1) / u128::from(i);
        }
        sum += coefficient;
    }
    sum as f64 / 2f64.powi(n as i32)
}

#[test]
fn mcnemar_matches_known_values() {
    close(mcnemar_exact(0, 5), 0.0625, 1e-15);
    close(mcnemar_exact(1, 9), 22.0 / 1024.0, 1e-14);
    close(mcnemar_exact(9, 1), 22.0 / 1024.0, 1e-14);
    assert_eq!(mcnemar_exact(0, 0), 1.0);
    assert_eq!(mcnemar_exact(3, 3), 1.0);
    assert_eq!(mcnemar_exact(4, 5), 1.0);
}

#[test]
fn mcnemar_matches_exact_binomial_tails() {
    for b in 0..=60u32 {
        for c in 0..=60u32 {
            let n = b + c;
            let expected = (2.0 * exact_lower_tail(n, b.min(c))).min(1.0);
            let actual = mcnemar_exact(u64::from(b), u64::from(c));
            let tolerance = 1e-9 * expected.max(1e-300);
            assert!(
                (actual - expected).abs() <= tolerance.max(1e-15),
                "b={b} c={c}: {actual} against {expected}"
            );
        }
    }
}

#[test]
fn mcnemar_stays_in_range_for_large_counts() {
    for (b, c) in [
        (5_000, 5_200),
        (0, 100_000),
        (49_000, 51_000),
        (u64::MAX, 1),
        (u64::MAX, u64::MAX),
    ] {
        let p = mcnemar_exact(b, c);
        assert!((0.0..=1.0).contains(&p), "({b}, {c}): {p}");
    }
    assert!(mcnemar_exact(0, 100_000) < 1e-300);
}

#[test]
fn minimum_detectable_difference_follows_the_formula() {
    // (z₀.₉₇₅ + z₀.₈) · √(½ / 20).
    let planned = minimum_detectable_difference(20, PLANNING_SD, 0.95, 0.8).unwrap();
    close(planned, 0.442_969_5, 1e-6);
    // Four times the scenarios halve it.
    let larger = minimum_detectable_difference(80, PLANNING_SD, 0.95, 0.8).unwrap();
    close(larger * 2.0, planned, 1e-12);
    assert_eq!(
        minimum_detectable_difference(0, 0.5, 0.95, 0.8)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidConfig
    );
    assert!(minimum_detectable_difference(5, -1.0, 0.95, 0.8).is_err());
    assert!(minimum_detectable_difference(5, f64::NAN, 0.95, 0.8).is_err());
    assert!(minimum_detectable_difference(5, 0.5, 0.95, 1.0).is_err());
    // Below one half the sum of the quantiles could be negative.
    assert!(minimum_detectable_difference(5, 0.5, 0.5, 0.1).is_err());
    assert!(minimum_detectable_difference(5, 0.5, 0.3, 0.8).is_err());
    // At power ½ only the confidence quantile (0.674 at 50 %) remains.
    close(
        minimum_detectable_difference(5, 0.5, 0.5, 0.5).unwrap(),
        0.674_489_750_196_081_7 * 0.5 / 5f64.sqrt(),
        1e-12,
    );
}

#[test]
fn bootstrap_is_reproducible_and_seed_dependent() {
    let values: Vec<f64> = (0..40).map(|i| f64::from(i % 7) / 7.0 - 0.3).collect();
    let first = bootstrap_mean(&values, 5000, 0.95, 42, 1).unwrap();
    let again = bootstrap_mean(&values, 5000, 0.95, 42, 1).unwrap();
    assert_eq!(first, again);
    assert_ne!(first, bootstrap_mean(&values, 5000, 0.95, 43, 1).unwrap());
    assert_ne!(first, bootstrap_mean(&values, 5000, 0.95, 42, 2).unwrap());
}

#[test]
fn bootstrap_agrees_with_the_normal_interval_on_a_large_sample() {
    // 200 clusters, half 0 and half 1: mean ½, standard error ½/√200.
    let values: Vec<f64> = (0..200).map(|i| f64::from(i % 2)).collect();
    let interval = bootstrap_mean(&values, 20_000, 0.95, 1, 0).unwrap();
    let half = 1.959_964 * 0.5 / 200f64.sqrt();
    close(interval.low, 0.5 - half, 0.01);
    close(interval.high, 0.5 + half, 0.01);
}

#[test]
fn bootstrap_of_a_constant_is_that_constant() {
    let interval = bootstrap_mean(&[0.25; 9], 100, 0.95, 0, 0).unwrap();
    assert_eq!((interval.low, interval.high), (0.25, 0.25));
}

#[test]
fn bootstrap_refuses_degenerate_input() {
    assert!(bootstrap_mean(&[], 100, 0.95, 0, 0).is_err());
    assert!(bootstrap_mean(&[0.1, f64::NAN], 100, 0.95, 0, 0).is_err());
    assert!(bootstrap_mean(&[0.1, f64::INFINITY], 100, 0.95, 0, 0).is_err());
    assert!(bootstrap_mean(&[0.1], 0, 0.95, 0, 0).is_err());
    assert!(bootstrap_mean(&[0.1], 2_000_000, 0.95, 0, 0).is_err());
    assert!(bootstrap_mean(&[0.1], 10, 1.0, 0, 0).is_err());
}

#[test]
fn a_run_without_rows_is_an_error() {
    let error = Statistics::compute(&Run::new("empty", Vec::new()), &config()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoRows);
    assert_eq!(error.to_string(), "the run has no result rows");
}

#[test]
fn bad_settings_are_errors() {
    let run = Run::new("s", paired_rows(&[(&[true], &[false])]));
    for bad in [
        config().with_confidence(1.0),
        config().with_confidence(f64::NAN),
        config().with_power(0.0),
        config().with_power(0.2),
        config().with_confidence(0.4),
        config().with_resamples(0),
        config().with_min_scenarios(1),
    ] {
        let error = Statistics::compute(&run, &bad).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidConfig, "{error}");
    }
}

#[test]
fn malformed_rows_are_located() {
    let mut repeated = paired_rows(&[(&[true, false], &[true])]);
    repeated.push(ResultRow::new(key("a", "m", "s00", 1), true));
    let error = Statistics::compute(&Run::new("s", repeated), &config()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidRow);
    assert_eq!(
        error.message(),
        "row 4: repetition 1 of scenario `s00` for version `a` on model `m` is already row 2"
    );

    let empty = vec![ResultRow::new(key("a", "m", "", 0), true)];
    let error = Statistics::compute(&Run::new("s", empty), &config()).unwrap_err();
    assert_eq!(error.message(), "row 1: the scenario is empty");

    let mut other_tier = ResultRow::new(key("b", "m", "s", 0), true);
    other_tier.tier = "large\u{1b}[2J".into();
    let rows = vec![ResultRow::new(key("a", "m", "s", 0), true), other_tier];
    let error = Statistics::compute(&Run::new("s", rows), &config()).unwrap_err();
    assert_eq!(
        error.message(),
        "row 2: model `m` has tier `large\\u{1b}[2J` here and `small` in row 1"
    );

    let mut erred = ResultRow::new(key("a", "m", "s", 0), true).with_error("timed out");
    assert!(!erred.passed);
    erred.passed = true;
    let error = Statistics::compute(&Run::new("s", vec![erred]), &config()).unwrap_err();
    assert_eq!(
        error.message(),
        "row 1: a run that ended in an error cannot pass"
    );

    let twice = ResultRow::new(key("a", "m", "s", 0), true)
        .with_assertion(AssertionResult::new("x", "contains", Verdict::Pass, ""))
        .with_assertion(AssertionResult::new("x", "regex", Verdict::Fail, ""));
    let error = Statistics::compute(&Run::new("s", vec![twice]), &config()).unwrap_err();
    assert_eq!(error.message(), "row 1: the assertion id `x` appears twice");
}

#[test]
fn too_much_bootstrap_work_is_refused() {
    let cells: Vec<(&[bool], &[bool])> = vec![(&[true], &[false]); 300];
    let run = Run::new("s", paired_rows(&cells));
    let heavy = config().with_resamples(1_000_000);
    const { assert!(300 * 1_000_000 > MAX_BOOTSTRAP_DRAWS) };
    let error = Statistics::compute(&run, &heavy).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::TooLarge);
}

#[test]
fn too_many_versions_are_refused() {
    // 142 versions on one model make 10 011 pairs.
    let rows = (0..142)
        .map(|v| ResultRow::new(key(&format!("v{v}"), "m", "s", 0), true))
        .collect();
    let error = Statistics::compute(&Run::new("s", rows), &config()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::TooLarge);
    assert!(error.message().contains("10011 comparisons"), "{error}");
}

#[test]
fn one_scenario_is_not_compared() {
    let run = Run::new("s", paired_rows(&[(&[true, true], &[false, false])]));
    let stats = Statistics::compute(&run, &config()).unwrap();
    assert_eq!(stats.cells.len(), 2);
    match &stats.comparisons[0].outcome {
        Outcome::NotCompared { reason } => assert_eq!(
            reason,
            "1 scenario was run under both versions; a paired comparison needs at least 2"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn identical_versions_show_no_difference() {
    let cells: Vec<(&[bool], &[bool])> = vec![(&[true, true, true], &[true, true, true]); 10];
    let paired = compared(only_comparison(
        &Run::new("s", paired_rows(&cells)),
        &config(),
    ));
    assert_eq!(paired.difference, 0.0);
    assert_eq!((paired.interval.low, paired.interval.high), (0.0, 0.0));
    assert_eq!(paired.verdict, Difference::NoDifferenceShown);
    assert_eq!(paired.mde.observed, None);
    assert_eq!(paired.mcnemar[0].p_value, 1.0);
}

#[test]
fn a_clear_difference_names_the_better_version() {
    let cells: Vec<(&[bool], &[bool])> = vec![(&[false, false], &[true, true]); 8];
    let paired = compared(only_comparison(
        &Run::new("s", paired_rows(&cells)),
        &config(),
    ));
    assert_eq!(paired.difference, 1.0);
    assert_eq!(
        paired.verdict,
        Difference::Favours {
            version_id: "b".into()
        }
    );
    let overall = &paired.mcnemar[0];
    assert_eq!((overall.pairs, overall.a_only, overall.b_only), (16, 0, 16));
    close(overall.p_value, 2.0 / 65536.0, 1e-15);

    let reversed: Vec<(&[bool], &[bool])> = vec![(&[true], &[false]); 8];
    let paired = compared(only_comparison(
        &Run::new("s", paired_rows(&reversed)),
        &config(),
    ));
    assert_eq!(
        paired.verdict,
        Difference::Favours {
            version_id: "a".into()
        }
    );
}

#[test]
fn mixed_results_span_zero() {
    let cells: Vec<(&[bool], &[bool])> = vec![
        (&[true, false], &[true, true]),
        (&[true, true], &[false, true]),
        (&[false, false], &[true, false]),
        (&[true, true], &[true, false]),
        (&[false, true], &[false, true]),
        (&[true, false], &[false, false]),
    ];
    let paired = compared(only_comparison(
        &Run::new("s", paired_rows(&cells)),
        &config(),
    ));
    assert!(paired.interval.spans_zero(), "{:?}", paired.interval);
    assert_eq!(paired.verdict, Difference::NoDifferenceShown);
    assert!(paired.mde.observed.is_some());
}

#[test]
fn few_scenarios_give_no_verdict() {
    let cells: Vec<(&[bool], &[bool])> = vec![(&[false], &[true]); 3];
    let paired = compared(only_comparison(
        &Run::new("s", paired_rows(&cells)),
        &config(),
    ));
    assert_eq!(paired.interval.low, 1.0);
    assert_eq!(paired.verdict, Difference::TooFewScenarios { needed: 5 });
    let paired = compared(only_comparison(
        &Run::new("s", paired_rows(&cells)),
        &config().with_min_scenarios(3),
    ));
    assert!(matches!(paired.verdict, Difference::Favours { .. }));
}

#[test]
fn unequal_repetitions_weigh_scenarios_equally() {
    // Scenario 0: a 1/1, b 0/3. Scenario 1: a 0/4, b 2/2. Scenario 2 only under a.
    let mut rows = paired_rows(&[
        (&[true], &[false, false, false]),
        (&[false, false, false, false], &[true, true]),
    ]);
    rows.push(ResultRow::new(key("a", "m", "only-a", 0), true));
    let paired = compared(only_comparison(&Run::new("s", rows), &config()));
    assert_eq!(paired.scenarios, 2);
    assert_eq!(paired.unshared_scenarios, 1);
    close(paired.mean_a, 0.5, 1e-15);
    close(paired.mean_b, 0.5, 1e-15);
    close(paired.difference, 0.0, 1e-15);
    // Only repetitions both versions ran are paired: 1 in scenario 0, 2 in scenario 1.
    let overall = &paired.mcnemar[0];
    assert_eq!((overall.pairs, overall.a_only, overall.b_only), (3, 1, 2));
}

#[test]
fn statistics_do_not_depend_on_row_order() {
    let run = fixture();
    let mut reversed = run.clone();
    reversed.rows.reverse();
    assert_eq!(
        Statistics::compute(&run, &config()).unwrap(),
        Statistics::compute(&reversed, &config()).unwrap()
    );
}

#[test]
fn the_fixture_compares_both_assertions() {
    let stats = Statistics::compute(&fixture(), &config()).unwrap();
    // Two versions on the small model make one comparison; the large model runs one version.
    assert_eq!(stats.comparisons.len(), 1);
    assert_eq!(stats.summaries.len(), 3);
    let paired = compared(stats.comparisons[0].outcome.clone());
    let names: Vec<Option<&str>> = paired
        .mcnemar
        .iter()
        .map(|t| t.assertion.as_deref())
        .collect();
    assert_eq!(names, [None, Some("no-canary"), Some("tool-used")]);
    assert_eq!(paired.mcnemar[0].pairs, 21);
    // kernel-en passes 16 of 21, kernel-zh 10 of 21, each scenario three times.
    close(paired.difference, (10.0 - 16.0) / 21.0, 1e-12);
}

#[test]
fn accounting_adds_what_rows_reported_and_keeps_unknown_apart_from_zero() {
    use promptstack_eval::row::{MicroUsd, Usage};
    let usage = |read: Option<u64>| Usage {
        input_tokens: 100,
        output_tokens: 10,
        cache_read_tokens: read,
        cache_write_tokens: None,
    };
    let rows = vec![
        ResultRow::new(key("a", "m", "s", 0), true)
            .with_usage(usage(Some(60)))
            .with_cost(MicroUsd(7))
            .with_predicted_cache_read_tokens(64),
        ResultRow::new(key("a", "m", "s", 1), true)
            .with_usage(usage(None))
            .with_predicted_cache_read_tokens(0),
        ResultRow::new(key("a", "m", "t", 0), false).with_usage(usage(Some(0))),
        ResultRow::new(key("b", "m", "s", 0), true).with_usage(usage(None)),
    ];
    let stats = Statistics::compute(&Run::new("x", rows), &config()).unwrap();
    let a = &stats.summaries[0].accounting;
    assert_eq!((a.input_tokens, a.output_tokens), (300, 30));
    // Two rows reported cache reads (60 and 0); one said nothing.
    assert_eq!(a.cache_read_tokens, Some(60));
    assert_eq!(a.cache_write_tokens, None);
    assert_eq!(a.predicted_cache_read_tokens, Some(64));
    assert_eq!((a.cost, a.unpriced_runs), (Some(MicroUsd(7)), 2));
    let b = &stats.summaries[1].accounting;
    assert_eq!(
        (b.cache_read_tokens, b.predicted_cache_read_tokens),
        (None, None)
    );
    assert_eq!((b.cost, b.unpriced_runs), (None, 1));
}
