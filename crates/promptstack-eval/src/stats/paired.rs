//! The paired tests: the cluster bootstrap of a mean difference and the exact McNemar test.

use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use statrs::distribution::{Binomial, DiscreteCDF};

use super::interval::{Interval, check_probability};
use crate::error::{Error, ErrorKind};

/// The most resamples a bootstrap may draw ([`super::StatsConfig::resamples`]).
pub const MAX_RESAMPLES: u32 = 1_000_000;

/// The percentile bootstrap interval of the mean of `values`, each value one cluster.
///
/// Each of `resamples` resamples draws `values.len()` clusters with replacement and takes their
/// mean; the interval runs from the `(1 − confidence)/2` to the `(1 + confidence)/2` quantile of
/// those means (linear interpolation between order statistics). In the paired comparison a
/// cluster is a scenario and its value the difference of the two versions' pass rates over its
/// repetitions, so repetitions stay together, as they are not independent of their scenario.
///
/// The generator is ChaCha8 seeded with `seed` on the stream `stream`, and indices are drawn by
/// widening multiplication with rejection from its 64-bit outputs; the same inputs give the same
/// interval on every platform and every version of this crate that keeps that rule.
///
/// # Errors
///
/// [`ErrorKind::InvalidConfig`] when `values` is empty or holds a value that is not finite,
/// `resamples` is 0 or above [`MAX_RESAMPLES`], or `confidence` is not strictly between 0 and 1.
pub fn bootstrap_mean(
    values: &[f64],
    resamples: u32,
    confidence: f64,
    seed: u64,
    stream: u64,
) -> Result<Interval, Error> {
    check_probability("confidence", confidence)?;
    if values.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            "a bootstrap needs at least one cluster",
        ));
    }
    if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            format!("a bootstrap value must be finite, not {bad}"),
        ));
    }
    check_resamples(resamples)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    let n = values.len() as u64;
    let mut means: Vec<f64> = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let mut sum = 0.0;
        for _ in 0..n {
            // `below` returns an index under `n`, which is `values.len()`.
            sum += values[below(&mut rng, n) as usize];
        }
        means.push(sum / n as f64);
    }
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    Ok(Interval {
        low: quantile(&means, tail),
        high: quantile(&means, 1.0 - tail),
    })
}

pub(crate) fn check_resamples(resamples: u32) -> Result<(), Error> {
    if resamples == 0 || resamples > MAX_RESAMPLES {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            format!("resamples must be between 1 and {MAX_RESAMPLES}, not {resamples}"),
        ));
    }
    Ok(())
}

/// A uniform integer in `0..n` (`n > 0`), by Lemire's widening multiplication with rejection.
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    // 2^64 mod n: outputs whose low half falls under it would make some indices likelier.
    let threshold = n.wrapping_neg() % n;
    loop {
        let product = u128::from(rng.next_u64()) * u128::from(n);
        if product as u64 >= threshold {
            return (product >> 64) as u64;
        }
    }
}

/// The `p` quantile of sorted, non-empty `sorted` (type 7: linear between order statistics).
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let below = h.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let fraction = h - below as f64;
    let value = sorted[below] + fraction * (sorted[above] - sorted[below]);
    // Interpolation cannot leave the two order statistics, but rounding could by an ulp.
    value.clamp(sorted[below], sorted[above])
}

/// The two-sided p-value of the exact McNemar test on the discordant pairs: `a_only` pairs
/// where only the first passed, `b_only` where only the second did.
///
/// Under no difference each discordant pair is a fair coin, so with `n = a_only + b_only` and
/// `X ~ Binomial(n, ½)` the p-value is `min(1, 2 · P(X ≤ min(a_only, b_only)))`. With no
/// discordant pairs it is 1. The value is symmetric in its arguments and lies in `[0, 1]`.
///
/// # Example
///
/// ```
/// use promptstack_eval::stats::mcnemar_exact;
///
/// // 0 against 5: 2 · (1/2)^5.
/// assert!((mcnemar_exact(0, 5) - 0.0625).abs() < 1e-12);
/// assert_eq!(mcnemar_exact(3, 3), 1.0);
/// ```
pub fn mcnemar_exact(a_only: u64, b_only: u64) -> f64 {
    let Some(n) = a_only.checked_add(b_only) else {
        // More discordant pairs than a u64 holds cannot come from a bounded run; the most
        // cautious answer is "nothing shown".
        return 1.0;
    };
    if n == 0 {
        return 1.0;
    }
    let smaller = a_only.min(b_only);
    let Ok(binomial) = Binomial::new(0.5, n) else {
        return 1.0;
    };
    let p = 2.0 * binomial.cdf(smaller);
    if p.is_finite() {
        p.clamp(0.0, 1.0)
    } else {
        1.0
    }
}
