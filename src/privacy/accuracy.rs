//! Accuracy statements: the confidence level a release states its bound at, and the bound of
//! one discrete-Laplace or discrete-Gaussian release. A statistic's own combination of bounds (the mean's corners,
//! the variance's intervals, the quantile's rank bound) lives beside that statistic; `dpstat
//! plan` calls the same functions with no data, so a plan states what a release would.

use std::str::FromStr;

use num_bigint::BigInt;
use num_rational::BigRational;

use super::noise::Calibrated;
use crate::numeric::exact::rational_to_f64_up;

/// `--confidence`: a level strictly between 0 and 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Confidence(f64);

impl Confidence {
    pub fn level(self) -> f64 {
        self.0
    }
    /// β = 1 − C: the allowed failure probability of the bound.
    pub fn beta(self) -> f64 {
        1.0 - self.0
    }
}

impl FromStr for Confidence {
    type Err = String;
    fn from_str(s: &str) -> Result<Confidence, String> {
        match s.trim().parse::<f64>() {
            Ok(c) if c > 0.0 && c < 1.0 => Ok(Confidence(c)),
            _ => Err("confidence must be a number strictly between 0 and 1, like 0.95".into()),
        }
    }
}

/// Bound of one noisy release (a count, a sum, each bin of a histogram) in the statistic's
/// units: |release − true value| <= bound with probability >= confidence. From the discrete
/// Laplace tail (docs/DESIGN.md §4) or the discrete Gaussian's (§9.3).
pub fn single(noise: &Calibrated, confidence: Confidence) -> f64 {
    noise.error_bound(confidence.beta())
}

/// A figure in the statistic's units divided by the public row count n >= 1, rounded up
/// (mean under replace: its bound, sensitivity and scale are the sum's over n).
pub fn per_row(value: f64, n: u64) -> f64 {
    let n = BigRational::from_integer(BigInt::from(n.max(1)));
    rational_to_f64_up(&(BigRational::from_float(value).unwrap_or_default() / n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_row_divides_and_rounds_up() {
        assert_eq!(per_row(10.0, 4), 2.5);
        let third = per_row(1.0, 3);
        assert!(BigRational::from_float(third).unwrap() >= BigRational::new(1.into(), 3.into()));
    }

    #[test]
    fn confidence_is_strictly_between_0_and_1() {
        assert!("1".parse::<Confidence>().is_err());
        assert!("0".parse::<Confidence>().is_err());
        assert_eq!("0.9".parse::<Confidence>().map(|c| c.level()), Ok(0.9));
    }
}
