//! Intervals and the normal-quantile formulas: the Wilson score interval of a pass rate and the
//! minimum detectable difference of a paired comparison.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use crate::error::{Error, ErrorKind};

/// A closed interval `[low, high]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The lower bound.
    pub low: f64,
    /// The upper bound.
    pub high: f64,
}

impl Interval {
    /// Whether `x` lies in the interval, bounds included.
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }

    /// Whether zero lies in the interval, bounds included: an interval that touches zero does not
    /// show a difference.
    pub fn spans_zero(&self) -> bool {
        self.contains(0.0)
    }
}

/// The standard normal quantile `z` with `P(|Z| ≤ z) = confidence`.
pub(crate) fn z_two_sided(confidence: f64) -> Result<f64, Error> {
    check_probability("confidence", confidence)?;
    finite_quantile(1.0 - (1.0 - confidence) / 2.0)
}

/// The standard normal quantile `z` with `P(Z ≤ z) = power`.
pub(crate) fn z_one_sided(power: f64) -> Result<f64, Error> {
    check_probability("power", power)?;
    finite_quantile(power)
}

fn finite_quantile(p: f64) -> Result<f64, Error> {
    let z = Normal::standard().inverse_cdf(p);
    if z.is_finite() {
        Ok(z)
    } else {
        Err(Error::new(
            ErrorKind::InvalidConfig,
            format!("the normal quantile of {p} is not finite; choose a level further from 1"),
        ))
    }
}

/// Levels below one half make no sense for an interval or a power (the minimum detectable
/// difference could come out negative).
pub(crate) fn check_at_least_half(name: &str, value: f64) -> Result<(), Error> {
    if value >= 0.5 {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidConfig,
            format!("{name} must be at least 0.5, not {value}"),
        ))
    }
}

pub(crate) fn check_probability(name: &str, value: f64) -> Result<(), Error> {
    if value.is_finite() && value > 0.0 && value < 1.0 {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidConfig,
            format!("{name} must be strictly between 0 and 1, not {value}"),
        ))
    }
}

/// The Wilson score interval of `passes` out of `runs` at `confidence` (for example `0.95`).
///
/// With `p̂ = passes / runs` and `z` the two-sided normal quantile of `confidence`:
///
/// ```text
/// centre = (p̂ + z²/2n) / (1 + z²/n)
/// half   = z / (1 + z²/n) · √(p̂(1 − p̂)/n + z²/4n²)
/// ```
///
/// Unlike `p̂ ± z·√(p̂(1 − p̂)/n)`, it stays inside `[0, 1]` and does not collapse to a point at
/// 0 or all passes. The bounds are exactly 0 when nothing passed and exactly 1 when everything
/// did, and the interval always contains `p̂`.
///
/// # Errors
///
/// [`ErrorKind::InvalidConfig`] when `runs` is 0, `passes > runs`, or `confidence` is not
/// strictly between 0 and 1.
///
/// # Example
///
/// ```
/// use promptstack_eval::stats::wilson;
///
/// // Newcombe (1998), 81 of 263: 0.2553 to 0.3662.
/// let interval = wilson(81, 263, 0.95).unwrap();
/// assert!((interval.low - 0.2553).abs() < 5e-5 && (interval.high - 0.3662).abs() < 5e-5);
/// ```
pub fn wilson(passes: u64, runs: u64, confidence: f64) -> Result<Interval, Error> {
    if runs == 0 {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            "a pass rate needs at least one run",
        ));
    }
    if passes > runs {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            format!("{passes} passes out of {runs} runs is more than all of them"),
        ));
    }
    let z = z_two_sided(confidence)?;
    let n = runs as f64;
    let p = passes as f64 / n;
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // Rounding can push a bound a hair past p̂ or outside [0, 1]; the exact interval does
    // neither, so the bounds are clamped to the exact facts.
    let low = if passes == 0 {
        0.0
    } else {
        (centre - half).clamp(0.0, p)
    };
    let high = if passes == runs {
        1.0
    } else {
        (centre + half).clamp(p, 1.0)
    };
    Ok(Interval { low, high })
}

/// The smallest true difference in mean pass rate that a paired comparison over `scenarios`
/// scenarios detects with probability `power`, testing two-sided at `confidence`:
///
/// ```text
/// MDE = (z₁₋α/₂ + z_power) · σ / √n
/// ```
///
/// where `σ` is the standard deviation of the per-scenario differences. The normal
/// approximation is used (no t correction), so for a handful of scenarios the true MDE is
/// larger still.
///
/// # Errors
///
/// [`ErrorKind::InvalidConfig`] when `scenarios` is 0, `sd` is negative or not finite, or a
/// level is below 0.5 or not below 1.
pub fn minimum_detectable_difference(
    scenarios: u64,
    sd: f64,
    confidence: f64,
    power: f64,
) -> Result<f64, Error> {
    if scenarios == 0 {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            "a minimum detectable difference needs at least one scenario",
        ));
    }
    if !(sd.is_finite() && sd >= 0.0) {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            format!("a standard deviation must be finite and not negative, not {sd}"),
        ));
    }
    check_at_least_half("confidence", confidence)?;
    check_at_least_half("power", power)?;
    let z = z_two_sided(confidence)? + z_one_sided(power)?;
    Ok(z * sd / (scenarios as f64).sqrt())
}

/// The planning standard deviation of a per-scenario difference: `√(2 · ½ · ½)`, the spread of
/// the difference of two independent pass/fail outcomes at a pass rate of ½ (the largest for
/// independent outcomes of one scenario). Pairing that correlates the two versions lowers it; a
/// suite where versions disagree in opposite directions from scenario to scenario can have more
/// (up to 1), which the observed minimum detectable difference shows.
pub const PLANNING_SD: f64 = std::f64::consts::FRAC_1_SQRT_2;
