//! Statistics over a run's rows: the pass rate of every cell with its Wilson interval, and a
//! paired comparison of every two versions on the same model.
//!
//! ```text
//! rows ─► check (names, repeated repetitions, tiers) ─► cells (version × model × scenario)
//!      ─► Wilson interval per cell ─► per model, per pair of versions: shared scenarios
//!      ─► per-scenario differences ─► cluster bootstrap interval, verdict, MDE
//!      ─► exact McNemar on (scenario, repetition) pairs, overall and per assertion
//! ```
//!
//! Nothing here depends on the order of the rows, and the bootstrap is seeded, so the same run
//! and the same [`StatsConfig`] give byte-identical statistics.

mod interval;
mod paired;

use std::collections::{BTreeMap, BTreeSet};

use promptstack_core::diagnostic::quote;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};
use crate::row::{MicroUsd, ResultRow, Run};

pub use interval::{Interval, PLANNING_SD, minimum_detectable_difference, wilson};
pub use paired::{MAX_RESAMPLES, bootstrap_mean, mcnemar_exact};

/// The most rows the statistics accept.
pub const MAX_ROWS: usize = 1_000_000;

/// The most scenario draws all bootstraps of one computation may make together (resamples ×
/// shared scenarios, summed over the compared pairs); past it the computation is refused rather
/// than left to run for minutes.
pub const MAX_BOOTSTRAP_DRAWS: u64 = 200_000_000;

/// The most comparisons (pairs of versions on one model, over all models) one computation makes;
/// past it the computation is refused, since their number grows with the square of the versions.
pub const MAX_COMPARISONS: usize = 10_000;

/// How the statistics are computed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StatsConfig {
    /// The confidence level of every interval, and `1 − α` of the minimum detectable difference
    /// (at least 0.5, below 1).
    pub confidence: f64,
    /// The power at which the minimum detectable difference is stated (at least 0.5, below 1).
    pub power: f64,
    /// Bootstrap resamples per comparison.
    pub resamples: u32,
    /// The bootstrap seed; the same seed gives the same intervals.
    pub seed: u64,
    /// The fewest shared scenarios a comparison needs before its verdict may name a better
    /// version; with fewer, a percentile bootstrap interval is too narrow to trust.
    pub min_scenarios: u32,
}

impl Default for StatsConfig {
    fn default() -> Self {
        Self {
            confidence: 0.95,
            power: 0.8,
            resamples: 10_000,
            seed: 0,
            min_scenarios: 5,
        }
    }
}

impl StatsConfig {
    /// Sets the confidence level.
    #[must_use]
    pub fn with_confidence(mut self, confidence: f64) -> Self {
        self.confidence = confidence;
        self
    }

    /// Sets the power of the minimum detectable difference.
    #[must_use]
    pub fn with_power(mut self, power: f64) -> Self {
        self.power = power;
        self
    }

    /// Sets the number of bootstrap resamples.
    #[must_use]
    pub fn with_resamples(mut self, resamples: u32) -> Self {
        self.resamples = resamples;
        self
    }

    /// Sets the bootstrap seed.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the fewest shared scenarios a verdict needs.
    #[must_use]
    pub fn with_min_scenarios(mut self, min_scenarios: u32) -> Self {
        self.min_scenarios = min_scenarios;
        self
    }

    fn check(&self) -> Result<(), Error> {
        interval::check_probability("confidence", self.confidence)?;
        interval::check_probability("power", self.power)?;
        interval::check_at_least_half("confidence", self.confidence)?;
        interval::check_at_least_half("power", self.power)?;
        paired::check_resamples(self.resamples)?;
        if self.min_scenarios < 2 {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                format!(
                    "min_scenarios must be at least 2, not {}",
                    self.min_scenarios
                ),
            ));
        }
        Ok(())
    }
}

/// Everything [`Statistics::compute`] derives from a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Statistics {
    /// The settings used.
    pub config: StatsConfig,
    /// Every cell, ordered by model, version, scenario.
    pub cells: Vec<Cell>,
    /// Every version on every model, ordered by model, version.
    pub summaries: Vec<Summary>,
    /// Every pair of versions on the same model, ordered by model, then version pair.
    pub comparisons: Vec<Comparison>,
}

/// One cell: a version on a model on a scenario, over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Cell {
    /// The model.
    pub model: String,
    /// The model's tier.
    pub tier: String,
    /// The version.
    pub version_id: String,
    /// The scenario.
    pub scenario: String,
    /// Repetitions run.
    pub runs: u64,
    /// Repetitions that passed.
    pub passes: u64,
    /// `passes / runs`.
    pub pass_rate: f64,
    /// The Wilson interval of the pass rate.
    pub interval: Interval,
}

/// A version on a model, over all its scenarios.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Summary {
    /// The model.
    pub model: String,
    /// The model's tier.
    pub tier: String,
    /// The version.
    pub version_id: String,
    /// Scenarios run.
    pub scenarios: u64,
    /// Rows (scenario runs).
    pub runs: u64,
    /// Rows that passed.
    pub passes: u64,
    /// The mean of the cells' pass rates: each scenario weighs the same, however many
    /// repetitions it has.
    pub mean_pass_rate: f64,
    /// What the runs used and cost, added up.
    pub accounting: Accounting,
}

/// What a version's runs on a model used and cost, added up over its rows (saturating).
///
/// A sum whose every row said nothing is absent, never zero: a provider that reports no cache
/// figures and an unpriced model stay visibly unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Accounting {
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache reads the provider reported, over the rows that reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Cache writes the provider reported, over the rows that reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Cache reads the rules table predicted for the same requests, over the rows that hold a
    /// prediction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_cache_read_tokens: Option<u64>,
    /// The cost of the priced rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<MicroUsd>,
    /// Rows without a cost (their model is unpriced).
    pub unpriced_runs: u64,
}

impl Accounting {
    fn add(&mut self, row: &ResultRow) {
        fn plus(sum: &mut Option<u64>, value: Option<u64>) {
            if let Some(value) = value {
                *sum = Some(sum.unwrap_or(0).saturating_add(value));
            }
        }
        self.input_tokens = self.input_tokens.saturating_add(row.usage.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(row.usage.output_tokens);
        plus(&mut self.cache_read_tokens, row.usage.cache_read_tokens);
        plus(&mut self.cache_write_tokens, row.usage.cache_write_tokens);
        plus(
            &mut self.predicted_cache_read_tokens,
            row.predicted_cache_read_tokens,
        );
        match row.cost {
            Some(cost) => self.cost = Some(self.cost.unwrap_or_default().saturating_add(cost)),
            None => self.unpriced_runs += 1,
        }
    }
}

/// Two versions compared on one model. `a` sorts before `b`; differences are `b − a`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Comparison {
    /// The model.
    pub model: String,
    /// The first version (the smaller id).
    pub a: String,
    /// The second version.
    pub b: String,
    /// The comparison, or why there is none.
    pub outcome: Outcome,
}

/// The result of comparing two versions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// The versions were compared.
    Compared(Paired),
    /// They could not be: fewer than two scenarios were run under both.
    NotCompared {
        /// Why, in a sentence.
        reason: String,
    },
}

/// A paired comparison of two versions over the scenarios both ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Paired {
    /// Scenarios run under both versions; the comparison is over these.
    pub scenarios: u64,
    /// Scenarios run under only one of them (left out).
    pub unshared_scenarios: u64,
    /// The mean pass rate of `a` over the shared scenarios.
    pub mean_a: f64,
    /// The mean pass rate of `b` over the shared scenarios.
    pub mean_b: f64,
    /// The mean over shared scenarios of `rate(b) − rate(a)`.
    pub difference: f64,
    /// The cluster-bootstrap interval of `difference`.
    pub interval: Interval,
    /// What the interval shows.
    pub verdict: Difference,
    /// The minimum detectable difference for this many scenarios.
    pub mde: Mde,
    /// Exact McNemar tests: the overall pass first, then each assertion both versions ran.
    pub mcnemar: Vec<McNemar>,
}

/// What a comparison shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Difference {
    /// The interval spans zero: the data do not show either version to be better. It does not
    /// show them equal either; the minimum detectable difference says how large a difference
    /// could have gone unseen.
    NoDifferenceShown,
    /// The interval lies wholly on one side of zero.
    Favours {
        /// The version with the higher pass rate.
        version_id: String,
    },
    /// Too few shared scenarios for any verdict ([`StatsConfig::min_scenarios`]).
    TooFewScenarios {
        /// The number of shared scenarios a verdict needs.
        needed: u32,
    },
}

impl Difference {
    /// The verdict as a sentence for reports.
    pub fn describe(&self) -> String {
        match self {
            Difference::NoDifferenceShown => "no difference shown".to_owned(),
            Difference::Favours { version_id } => format!("favours {version_id}"),
            Difference::TooFewScenarios { needed } => {
                format!("too few scenarios for a verdict (needs {needed})")
            }
        }
    }
}

/// The minimum detectable difference of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Mde {
    /// With the planning spread [`PLANNING_SD`]: depends only on the number of scenarios and
    /// the levels, so it can be stated before a run.
    pub planned: f64,
    /// With the spread of the observed per-scenario differences, when they vary at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<f64>,
}

/// An exact McNemar test on the `(scenario, repetition)` pairs both versions ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct McNemar {
    /// The assertion tested; none for the overall pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion: Option<String>,
    /// Pairs compared.
    pub pairs: u64,
    /// Pairs where only `a` passed.
    pub a_only: u64,
    /// Pairs where only `b` passed.
    pub b_only: u64,
    /// The two-sided exact p-value.
    pub p_value: f64,
}

/// A cell's rows, keyed by repetition.
type CellRows<'a> = BTreeMap<u32, &'a ResultRow>;

impl Statistics {
    /// Computes every statistic of `run` with `config`.
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::NoRows`]: the run has no rows.
    /// - [`ErrorKind::InvalidConfig`]: a setting is out of range.
    /// - [`ErrorKind::InvalidRow`]: a row has an empty version, model or scenario, passes
    ///   although it ended in an error, repeats a repetition of its cell or an assertion id, or
    ///   gives its model another tier than an earlier row.
    /// - [`ErrorKind::TooLarge`]: more than [`MAX_ROWS`] rows, more than [`MAX_COMPARISONS`]
    ///   pairs of versions, or bootstraps that would draw more than [`MAX_BOOTSTRAP_DRAWS`]
    ///   scenarios.
    pub fn compute(run: &Run, config: &StatsConfig) -> Result<Statistics, Error> {
        config.check()?;
        if run.rows.is_empty() {
            return Err(Error::new(ErrorKind::NoRows, "the run has no result rows"));
        }
        if run.rows.len() > MAX_ROWS {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!(
                    "the run has {} rows; the statistics take at most {MAX_ROWS}",
                    run.rows.len()
                ),
            ));
        }
        let grouped = group(&run.rows)?;
        let tiers = tiers(&run.rows)?;

        let mut cells = Vec::new();
        let mut summaries = Vec::new();
        for (model, versions) in &grouped {
            let tier = tiers.get(*model).copied().unwrap_or_default();
            for (version, scenarios) in versions {
                let mut runs = 0;
                let mut passes = 0;
                let mut rate_sum = 0.0;
                let mut accounting = Accounting::default();
                for (scenario, rows) in scenarios {
                    rows.values().for_each(|row| accounting.add(row));
                    let cell_runs = rows.len() as u64;
                    let cell_passes = rows.values().filter(|r| r.passed).count() as u64;
                    let pass_rate = cell_passes as f64 / cell_runs as f64;
                    cells.push(Cell {
                        model: (*model).to_owned(),
                        tier: tier.to_owned(),
                        version_id: (*version).to_owned(),
                        scenario: (*scenario).to_owned(),
                        runs: cell_runs,
                        passes: cell_passes,
                        pass_rate,
                        interval: wilson(cell_passes, cell_runs, config.confidence)?,
                    });
                    runs += cell_runs;
                    passes += cell_passes;
                    rate_sum += pass_rate;
                }
                summaries.push(Summary {
                    model: (*model).to_owned(),
                    tier: tier.to_owned(),
                    version_id: (*version).to_owned(),
                    scenarios: scenarios.len() as u64,
                    runs,
                    passes,
                    mean_pass_rate: rate_sum / scenarios.len() as f64,
                    accounting,
                });
            }
        }

        check_bootstrap_work(&grouped, config)?;
        let mut comparisons = Vec::new();
        for (model, versions) in &grouped {
            let ids: Vec<&&str> = versions.keys().collect();
            for (i, a) in ids.iter().enumerate() {
                for b in &ids[i + 1..] {
                    let outcome = compare(model, a, b, &versions[**a], &versions[**b], config)?;
                    comparisons.push(Comparison {
                        model: (*model).to_owned(),
                        a: (**a).to_owned(),
                        b: (**b).to_owned(),
                        outcome,
                    });
                }
            }
        }
        Ok(Statistics {
            config: config.clone(),
            cells,
            summaries,
            comparisons,
        })
    }
}

/// Rows grouped model → version → scenario → repetition.
type Grouped<'a> = BTreeMap<&'a str, BTreeMap<&'a str, BTreeMap<&'a str, CellRows<'a>>>>;

fn group(rows: &[ResultRow]) -> Result<Grouped<'_>, Error> {
    let mut grouped: Grouped<'_> = BTreeMap::new();
    let mut first_index: BTreeMap<(&str, &str, &str, u32), usize> = BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        for (name, value) in [
            ("version id", &row.version_id),
            ("model", &row.model),
            ("scenario", &row.scenario),
        ] {
            if value.is_empty() {
                return Err(Error::new(
                    ErrorKind::InvalidRow,
                    format!("row {}: the {name} is empty", index + 1),
                ));
            }
        }
        if row.passed && row.error.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidRow,
                format!(
                    "row {}: a run that ended in an error cannot pass",
                    index + 1
                ),
            ));
        }
        let mut ids = BTreeSet::new();
        for assertion in &row.assertions {
            if !ids.insert(assertion.id.as_str()) {
                return Err(Error::new(
                    ErrorKind::InvalidRow,
                    format!(
                        "row {}: the assertion id `{}` appears twice",
                        index + 1,
                        quote(&assertion.id)
                    ),
                ));
            }
        }
        let key = (
            row.model.as_str(),
            row.version_id.as_str(),
            row.scenario.as_str(),
            row.repetition,
        );
        if let Some(first) = first_index.insert(key, index) {
            return Err(Error::new(
                ErrorKind::InvalidRow,
                format!(
                    "row {}: repetition {} of scenario `{}` for version `{}` on model `{}` is already row {}",
                    index + 1,
                    row.repetition,
                    quote(&row.scenario),
                    quote(&row.version_id),
                    quote(&row.model),
                    first + 1
                ),
            ));
        }
        grouped
            .entry(&row.model)
            .or_default()
            .entry(&row.version_id)
            .or_default()
            .entry(&row.scenario)
            .or_default()
            .insert(row.repetition, row);
    }
    Ok(grouped)
}

/// Each model's tier; a model given two tiers is an error, located at the second row.
fn tiers(rows: &[ResultRow]) -> Result<BTreeMap<&str, &str>, Error> {
    let mut tiers: BTreeMap<&str, (&str, usize)> = BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        let (tier, first) = *tiers
            .entry(row.model.as_str())
            .or_insert((row.tier.as_str(), index));
        if tier != row.tier {
            return Err(Error::new(
                ErrorKind::InvalidRow,
                format!(
                    "row {}: model `{}` has tier `{}` here and `{}` in row {}",
                    index + 1,
                    quote(&row.model),
                    quote(&row.tier),
                    quote(tier),
                    first + 1
                ),
            ));
        }
    }
    Ok(tiers.into_iter().map(|(m, (t, _))| (m, t)).collect())
}

fn check_bootstrap_work(grouped: &Grouped<'_>, config: &StatsConfig) -> Result<(), Error> {
    let comparisons: usize = grouped
        .values()
        .map(|versions| versions.len() * (versions.len() - 1) / 2)
        .sum();
    if comparisons > MAX_COMPARISONS {
        return Err(Error::new(
            ErrorKind::TooLarge,
            format!(
                "the run would make {comparisons} comparisons of two versions on a model; \
                 the statistics make at most {MAX_COMPARISONS}"
            ),
        ));
    }
    let mut draws: u64 = 0;
    for versions in grouped.values() {
        let sets: Vec<&BTreeMap<&str, CellRows<'_>>> = versions.values().collect();
        for (i, a) in sets.iter().enumerate() {
            for b in &sets[i + 1..] {
                let shared = a.keys().filter(|s| b.contains_key(*s)).count() as u64;
                draws = draws.saturating_add(shared.saturating_mul(u64::from(config.resamples)));
                if draws > MAX_BOOTSTRAP_DRAWS {
                    return Err(Error::new(
                        ErrorKind::TooLarge,
                        format!(
                            "the comparisons would draw more than {MAX_BOOTSTRAP_DRAWS} scenarios \
                             in their bootstraps; lower resamples (now {})",
                            config.resamples
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn compare(
    model: &str,
    a: &str,
    b: &str,
    rows_a: &BTreeMap<&str, CellRows<'_>>,
    rows_b: &BTreeMap<&str, CellRows<'_>>,
    config: &StatsConfig,
) -> Result<Outcome, Error> {
    let shared: Vec<&str> = rows_a
        .keys()
        .filter(|s| rows_b.contains_key(*s))
        .copied()
        .collect();
    let all: BTreeSet<&str> = rows_a.keys().chain(rows_b.keys()).copied().collect();
    let unshared = (all.len() - shared.len()) as u64;
    if shared.len() < 2 {
        return Ok(Outcome::NotCompared {
            reason: format!(
                "{} scenario{} run under both versions; a paired comparison needs at least 2",
                shared.len(),
                if shared.len() == 1 { " was" } else { "s were" }
            ),
        });
    }
    let rate =
        |rows: &CellRows<'_>| rows.values().filter(|r| r.passed).count() as f64 / rows.len() as f64;
    let rates_a: Vec<f64> = shared.iter().map(|s| rate(&rows_a[s])).collect();
    let rates_b: Vec<f64> = shared.iter().map(|s| rate(&rows_b[s])).collect();
    let differences: Vec<f64> = rates_a
        .iter()
        .zip(&rates_b)
        .map(|(ra, rb)| rb - ra)
        .collect();
    let n = shared.len() as f64;
    let mean = |values: &[f64]| values.iter().sum::<f64>() / n;
    let difference = mean(&differences);
    let interval = bootstrap_mean(
        &differences,
        config.resamples,
        config.confidence,
        config.seed,
        stream_of(model, a, b),
    )?;
    let verdict = if (shared.len() as u64) < u64::from(config.min_scenarios) {
        Difference::TooFewScenarios {
            needed: config.min_scenarios,
        }
    } else if interval.spans_zero() {
        Difference::NoDifferenceShown
    } else if interval.low > 0.0 {
        Difference::Favours {
            version_id: b.to_owned(),
        }
    } else {
        Difference::Favours {
            version_id: a.to_owned(),
        }
    };
    let variance = differences
        .iter()
        .map(|d| (d - difference).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    let sd = variance.sqrt();
    let scenarios = shared.len() as u64;
    let mde = Mde {
        planned: minimum_detectable_difference(
            scenarios,
            PLANNING_SD,
            config.confidence,
            config.power,
        )?,
        observed: if sd > 0.0 && sd.is_finite() {
            Some(minimum_detectable_difference(
                scenarios,
                sd,
                config.confidence,
                config.power,
            )?)
        } else {
            None
        },
    };
    Ok(Outcome::Compared(Paired {
        scenarios,
        unshared_scenarios: unshared,
        mean_a: mean(&rates_a),
        mean_b: mean(&rates_b),
        difference,
        interval,
        verdict,
        mde,
        mcnemar: mcnemar_tests(&shared, rows_a, rows_b),
    }))
}

/// The overall pass and each assertion id both versions ran, each as an exact McNemar test over
/// the `(scenario, repetition)` pairs both have.
fn mcnemar_tests(
    shared: &[&str],
    rows_a: &BTreeMap<&str, CellRows<'_>>,
    rows_b: &BTreeMap<&str, CellRows<'_>>,
) -> Vec<McNemar> {
    let mut pairs: Vec<(&ResultRow, &ResultRow)> = Vec::new();
    for scenario in shared {
        let (cell_a, cell_b) = (&rows_a[scenario], &rows_b[scenario]);
        for (repetition, row_a) in cell_a {
            if let Some(row_b) = cell_b.get(repetition) {
                pairs.push((row_a, row_b));
            }
        }
    }
    let mut tests = vec![tally(None, pairs.iter().map(|(a, b)| (a.passed, b.passed)))];
    let ids: BTreeSet<&str> = pairs
        .iter()
        .flat_map(|(a, b)| {
            a.assertions
                .iter()
                .filter(|x| b.assertion(&x.id).is_some())
                .map(|x| x.id.as_str())
        })
        .collect();
    for id in ids {
        let outcomes = pairs.iter().filter_map(|(a, b)| {
            Some((
                a.assertion(id)?.verdict.is_pass(),
                b.assertion(id)?.verdict.is_pass(),
            ))
        });
        tests.push(tally(Some(id), outcomes));
    }
    tests
}

fn tally(assertion: Option<&str>, outcomes: impl Iterator<Item = (bool, bool)>) -> McNemar {
    let (mut pairs, mut a_only, mut b_only) = (0, 0, 0);
    for (a, b) in outcomes {
        pairs += 1;
        match (a, b) {
            (true, false) => a_only += 1,
            (false, true) => b_only += 1,
            _ => {}
        }
    }
    McNemar {
        assertion: assertion.map(str::to_owned),
        pairs,
        a_only,
        b_only,
        p_value: mcnemar_exact(a_only, b_only),
    }
}

/// The bootstrap stream of one comparison: FNV-1a (64 bit) over the model and the two version
/// ids, each followed by a zero byte. Each comparison draws its own stream, so adding a version
/// or a model leaves the other comparisons' intervals as they were.
fn stream_of(model: &str, a: &str, b: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [model, a, b] {
        for byte in part.bytes().chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}
