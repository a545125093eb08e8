//! δ, the probability with which an approximate-DP guarantee may fail, as an exact rational.
//! `--delta`, `--budget-delta` and a workload's `delta` (docs/DESIGN.md §9).
//!
//! `--delta 1e-7` is exactly 1/10^7, so that thresholds and conversions computed from it are
//! functions of the number the user wrote, rounded only where the arithmetic leaves no choice
//! and then in the safe direction.

use std::fmt;
use std::str::FromStr;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed};

use crate::numeric::exact::{decimal, parse_ratio, rational_to_f64_up};

/// Smallest δ accepted: a δ below 10^-300 asks for thresholds and conversions at magnitudes no
/// one needs, and would let a typo make the integers of the exact arithmetic needlessly large.
const MIN_DELTA_DECIMALS: u32 = 300;

/// A validated δ: an exact rational with 10^-300 <= δ < 1.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Delta(BigRational);

impl Delta {
    /// An exact rational as a δ: 10^-300 <= δ < 1.
    pub fn from_rational(r: BigRational) -> Result<Delta, String> {
        if !r.is_positive() {
            return Err("delta must be greater than 0".into());
        }
        if r >= BigRational::one() {
            return Err("delta must be less than 1 (and is usually far below 1/n for n rows)".into());
        }
        if r < BigRational::new(BigInt::one(), BigInt::from(10u32).pow(MIN_DELTA_DECIMALS)) {
            return Err("delta must be at least 1e-300".into());
        }
        Ok(Delta(r))
    }

    pub fn as_rational(&self) -> &BigRational {
        &self.0
    }

    /// δ/2, exactly: a budget's δ split between its two tracks (`privacy::delta_use`). Not
    /// checked against the 1e-300 floor, which is for what a user types, not for arithmetic.
    pub fn halved(&self) -> Delta {
        Delta(&self.0 / BigInt::from(2))
    }

    /// The smallest f64 that is >= δ: a printed δ never understates the failure probability.
    pub fn to_f64_up(&self) -> f64 {
        rational_to_f64_up(&self.0)
    }

    /// Exact form for records and audits, e.g. "1/10000000".
    pub fn exact_string(&self) -> String {
        format!("{}/{}", self.0.numer(), self.0.denom())
    }
}

impl fmt::Display for Delta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&decimal(&self.0))
    }
}

impl FromStr for Delta {
    type Err = String;

    fn from_str(s: &str) -> Result<Delta, String> {
        let r = parse_ratio(s)
            .ok_or_else(|| format!("'{s}' is not a number (write delta like 1e-7, 0.000001 or 1/1000000)"))?;
        Delta::from_rational(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_range_and_exactness() {
        assert_eq!("1e-7".parse::<Delta>().unwrap().exact_string(), "1/10000000");
        assert!("0".parse::<Delta>().is_err());
        assert!("1".parse::<Delta>().is_err());
        assert!("-1e-5".parse::<Delta>().is_err());
        assert!("1e-301".parse::<Delta>().is_err());
        assert!("1e-300".parse::<Delta>().is_ok());
        assert!("0.999".parse::<Delta>().is_ok());
        assert!("nan".parse::<Delta>().is_err());
        let d: Delta = "1e-7".parse().unwrap();
        assert!(BigRational::from_float(d.to_f64_up()).unwrap() >= *d.as_rational());
        assert_eq!(d.to_string(), "0.0000001");
    }
}
