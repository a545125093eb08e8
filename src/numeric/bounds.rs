//! Clamping bounds as the flags give them: finite, L < U, and small enough that every release
//! prints as a finite double. They come from flags, never from the data (docs/DESIGN.md §1): a bound
//! read off the column would leak the rows that hold it.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

use num_rational::BigRational;
use num_traits::Signed;

use super::exact::exact;
use crate::error::Error;

/// Largest bound magnitude: 2^64 rows of it plus noise (a sum or mean), or a million times it (a
/// histogram edge or quantile candidate, computed as a weighted mean of the bounds), stay below
/// f64::MAX, so no release can print inf or NaN.
pub const MAX_PRINTABLE_BOUND: f64 = 1e288;

/// A finite bound value given by flag (`--lower`, `--upper`, `impute=V`).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct Finite(f64);

impl Finite {
    pub fn from_f64(x: f64) -> Option<Finite> {
        x.is_finite().then_some(Finite(x))
    }
    pub fn get(self) -> f64 {
        self.0
    }
}

impl FromStr for Finite {
    type Err = String;
    fn from_str(s: &str) -> Result<Finite, String> {
        match s.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Finite(v)),
            _ => Err(format!("'{s}' is not a finite number")),
        }
    }
}

/// Clamping bounds with L < U, both finite: made once, so nothing later can hold NaN or L >= U.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    lower: f64,
    upper: f64,
}

impl Bounds {
    pub fn new(lower: Finite, upper: Finite) -> Result<Bounds, Error> {
        if lower.0 < upper.0 {
            Ok(Bounds { lower: lower.0, upper: upper.0 })
        } else {
            Err(Error::usage(format!("--lower ({}) must be less than --upper ({})", lower.0, upper.0)))
        }
    }
    pub fn lower(&self) -> f64 {
        self.lower
    }
    pub fn upper(&self) -> f64 {
        self.upper
    }
    /// Refuses bounds so large that a sum of up to 2^64 clamped rows plus its noise, or an edge
    /// of up to a million bins, could exceed the largest f64, so that every release prints as a
    /// finite number.
    pub fn check_printable(&self) -> Result<(), Error> {
        if self.lower.abs() > MAX_PRINTABLE_BOUND || self.upper.abs() > MAX_PRINTABLE_BOUND {
            return Err(Error::usage(format!(
                "--lower/--upper must lie within ±{MAX_PRINTABLE_BOUND:e}, so that every release fits in a double"
            )));
        }
        Ok(())
    }

    /// max(|L|, |U|), exactly.
    pub fn max_abs(&self) -> BigRational {
        exact(self.lower).abs().max(exact(self.upper).abs())
    }
    /// U − L, exactly (an f64 subtraction could round or overflow).
    pub fn width(&self) -> BigRational {
        exact(self.upper) - exact(self.lower)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_ordered_finite_and_printable() {
        let f = |x: f64| Finite::from_f64(x).unwrap();
        assert!(Bounds::new(f(1.0), f(1.0)).is_err());
        assert!(Finite::from_f64(f64::NAN).is_none());
        assert!("inf".parse::<Finite>().is_err());
        let b = Bounds::new(f(-3.0), f(5.0)).unwrap();
        assert_eq!(b.width(), exact(8.0));
        assert_eq!(b.max_abs(), exact(5.0));
        assert!(Bounds::new(f(0.0), f(1e289)).unwrap().check_printable().is_err());
    }
}
