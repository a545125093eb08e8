//! The privacy budget ε as an exact rational number.
//!
//! `--eps 0.1` means exactly 1/10, not the f64 nearest to it: every split, sum and
//! comparison of budgets is done in rational arithmetic, so ten releases at 0.1
//! cost exactly 1. Only what is *printed* about a cost is a float, and that float
//! is rounded up so a reader never under-estimates what was spent.

use std::fmt;
use std::str::FromStr;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed};

use crate::numeric::exact::{decimal, parse_ratio, rational_to_f64_up};

/// Smallest ε the tool accepts (docs/PRIVACY.md, "The privacy model in plain words"): below it the noise drowns any statistic
/// and the grid arithmetic would need needlessly large integers.
const MIN_EPSILON_DECIMALS: u32 = 9;
/// Above this the release protects little; allowed, with a warning.
pub const LARGE_EPSILON: u32 = 10;

/// A validated privacy budget: an exact rational with 1e-9 <= ε (finite by construction).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Epsilon(BigRational);

impl Epsilon {
    /// Wraps a rational already known to be positive (used for exact splits of a validated ε).
    fn from_positive(r: BigRational) -> Epsilon {
        debug_assert!(r.is_positive());
        Epsilon(r)
    }

    pub fn as_rational(&self) -> &BigRational {
        &self.0
    }

    /// ε divided into `parts` exactly equal shares (sequential composition: the shares add up to ε).
    pub fn split(&self, parts: u32) -> Epsilon {
        Epsilon::from_positive(&self.0 / BigInt::from(parts.max(1)))
    }

    /// ε·numer/denom exactly (0 < numer <= denom): a fixed share, e.g. the nine tenths left
    /// after a tenth is split off.
    pub fn share(&self, numer: u32, denom: u32) -> Epsilon {
        let (numer, denom) = (numer.clamp(1, denom.max(1)), denom.max(1));
        Epsilon::from_positive(&self.0 * BigRational::new(BigInt::from(numer), BigInt::from(denom)))
    }

    /// A part made by exact arithmetic on the shares of a validated ε (their sum, or a share
    /// less another part of it): like [`Epsilon::split`]'s shares it may lie below the 1e-9 a
    /// flag must reach, which is a floor for what a user asks, not for the parts a release is
    /// cut into. None when it is not positive.
    pub fn from_part(r: BigRational) -> Option<Epsilon> {
        r.is_positive().then_some(Epsilon(r))
    }

    /// ε − other, if that is positive: a part of ε, which like [`Epsilon::from_part`]'s may lie
    /// below the 1e-9 a flag must reach (`--eps 1e-9` less its tenth for bounds).
    pub fn minus(&self, other: &Epsilon) -> Option<Epsilon> {
        Epsilon::from_part(&self.0 - &other.0)
    }

    pub fn is_large(&self) -> bool {
        self.0 > BigRational::from_integer(BigInt::from(LARGE_EPSILON))
    }

    /// The smallest f64 that is >= ε: what is printed as "ε charged" never understates the cost.
    pub fn to_f64_up(&self) -> f64 {
        rational_to_f64_up(&self.0)
    }

    /// Exact form for records and audits, e.g. "1/10".
    pub fn exact_string(&self) -> String {
        format!("{}/{}", self.0.numer(), self.0.denom())
    }
}

impl fmt::Display for Epsilon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&decimal(&self.0))
    }
}

impl FromStr for Epsilon {
    type Err = String;

    fn from_str(s: &str) -> Result<Epsilon, String> {
        let r = parse_ratio(s).ok_or_else(|| match s.trim().parse::<f64>() {
            Ok(_) => "epsilon must be a finite decimal no larger than 1.7e308".to_string(),
            Err(_) => format!("'{s}' is not a number (write epsilon like 0.1, 1, 5e-3 or 1/4)"),
        })?;
        Epsilon::from_rational(r)
    }
}

impl Epsilon {
    /// An exact rational as a budget, under the same rule as `--eps` (1e-9 <= ε <= f64::MAX).
    pub fn from_rational(r: BigRational) -> Result<Epsilon, String> {
        if r > BigRational::from_float(f64::MAX).unwrap_or_default() {
            return Err("epsilon must be a finite decimal no larger than 1.7e308".into());
        }
        let min = BigRational::new(BigInt::one(), BigInt::from(10u32).pow(MIN_EPSILON_DECIMALS));
        if !r.is_positive() {
            return Err("epsilon must be greater than 0".into());
        }
        if r < min {
            return Err("epsilon must be at least 1e-9".into());
        }
        Ok(Epsilon(r))
    }
}

/// What ε > 10 means for the people in the data: the warning a release prints on stderr and
/// `dpstat plan` puts in its report.
pub fn large_epsilon_warning(eps: &Epsilon) -> String {
    let factor = eps.to_f64_up().exp();
    let factor = if factor.is_finite() { format!("{factor:.1e}") } else { "more than 1e308".to_string() };
    format!(
        "--eps {eps} is large: the release still runs, but it protects little. With ε = {eps} an observer's \
         odds about whether any one person's row is in the data (or what it holds) can change by a factor \
         of up to e^{eps} ≈ {factor}; ε of 1 or less is the usual range for meaningful protection (lower --eps)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_traits::Zero;

    fn ratio(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    #[test]
    fn epsilon_range() {
        assert!("0".parse::<Epsilon>().is_err());
        assert!("-1".parse::<Epsilon>().is_err());
        assert!("0.0000000009".parse::<Epsilon>().is_err());
        assert!("0.000000001".parse::<Epsilon>().is_ok());
        assert!("1e-9".parse::<Epsilon>().is_ok());
        assert!("nan".parse::<Epsilon>().is_err());
        assert!("1e308".parse::<Epsilon>().is_ok());
        assert!("1e309".parse::<Epsilon>().is_err());
        assert!("1e401".parse::<Epsilon>().unwrap_err().contains("finite"));
        assert!("inf".parse::<Epsilon>().is_err());
        assert!("11".parse::<Epsilon>().unwrap().is_large());
        assert!(!"10".parse::<Epsilon>().unwrap().is_large());
    }

    #[test]
    fn ten_tenths_are_exactly_one() {
        let e: Epsilon = "0.1".parse().unwrap();
        let sum = (0..10).fold(BigRational::zero(), |acc, _| acc + e.as_rational());
        assert_eq!(sum, ratio(1, 1));
    }

    #[test]
    fn halves_are_exact() {
        let e: Epsilon = "0.3".parse().unwrap();
        let half = e.split(2);
        assert_eq!(half.as_rational() + half.as_rational(), *e.as_rational());
    }

    #[test]
    fn printed_epsilon_is_rounded_up() {
        for s in ["0.1", "0.3", "1e-9", "2", "0.7"] {
            let e: Epsilon = s.parse().unwrap();
            let f = e.to_f64_up();
            assert!(BigRational::from_float(f).unwrap() >= *e.as_rational(), "{s}");
            assert!(BigRational::from_float(f.next_down()).unwrap() < *e.as_rational(), "{s}");
        }
    }
}
