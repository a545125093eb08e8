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
use num_traits::{One, Signed, ToPrimitive, Zero};

/// Smallest ε the tool accepts (CLI.md): below it the noise drowns any statistic
/// and the grid arithmetic would need needlessly large integers.
const MIN_EPSILON_DECIMALS: u32 = 9;
/// Above this the release protects little; allowed, with a warning.
pub const LARGE_EPSILON: u32 = 10;
/// A decimal exponent beyond this is a typo or an attack on the big integers.
const MAX_EXPONENT: i64 = 400;

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

    /// ε − other, if that is still a valid (positive, >= 1e-9) budget.
    pub fn minus(&self, other: &Epsilon) -> Option<Epsilon> {
        let rest = &self.0 - &other.0;
        let min = BigRational::new(BigInt::one(), BigInt::from(10u32).pow(MIN_EPSILON_DECIMALS));
        (rest >= min).then_some(Epsilon(rest))
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

/// Smallest f64 >= r (r finite and representable in range; saturates to f64::MAX).
pub fn rational_to_f64_up(r: &BigRational) -> f64 {
    let mut f = r.to_f64().unwrap_or(f64::MAX);
    if !f.is_finite() {
        return f64::MAX;
    }
    // to_f64 rounds to nearest; step up until the float is no smaller than the exact value.
    while let Some(exact) = BigRational::from_float(f) {
        if exact >= *r {
            break;
        }
        f = f.next_up();
    }
    f
}

/// Largest f64 <= r, for figures where rounding down is the conservative side.
pub fn rational_to_f64_down(r: &BigRational) -> f64 {
    // + 0.0 turns the -0.0 of a zero into 0.0.
    -rational_to_f64_up(&-r) + 0.0
}

/// A rational for people: the exact decimal when it terminates within 30 digits (1/5 is
/// "0.2", not 0.19999999999999998), else 15 significant digits marked with a leading "~".
pub fn decimal(r: &BigRational) -> String {
    let ten = BigInt::from(10u32);
    if r.abs() >= BigRational::from_integer(ten.pow(21)) {
        return format!("~{:e}", r.to_f64().unwrap_or(f64::MAX));
    }
    let mut scaled = r.clone();
    for digits in 0..=30usize {
        if scaled.is_integer() {
            let sign = if r.is_negative() { "-" } else { "" };
            let text = scaled.to_integer().abs().to_string();
            if digits == 0 {
                return format!("{sign}{text}");
            }
            let padded = format!("{text:0>width$}", width = digits + 1);
            let (int, frac) = padded.split_at(padded.len() - digits);
            return format!("{sign}{int}.{}", frac.trim_end_matches('0'));
        }
        scaled *= &ten;
    }
    format!("~{:.15e}", r.to_f64().unwrap_or(f64::NAN))
}

impl fmt::Display for Epsilon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&decimal(&self.0))
    }
}

impl FromStr for Epsilon {
    type Err = String;

    fn from_str(s: &str) -> Result<Epsilon, String> {
        let r = parse_decimal(s).ok_or_else(|| match s.trim().parse::<f64>() {
            Ok(_) => "epsilon must be a finite decimal no larger than 1.7e308".to_string(),
            Err(_) => format!("'{s}' is not a decimal number (write epsilon like 0.1, 1, or 5e-3)"),
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

/// Parses a plain decimal (`12`, `0.25`, `.5`, `1e-3`, `+2.5E2`) into an exact rational.
/// Refuses everything f64 parsing would accept but that is not a finite decimal: `inf`, `NaN`, hex.
pub fn parse_decimal(s: &str) -> Option<BigRational> {
    let s = s.trim();
    let (negative, s) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i64>().ok()?),
        None => (s, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if int_part.is_empty() && frac_part.is_empty()
        || !all_digits(int_part)
        || !all_digits(frac_part)
        || exponent.abs() > MAX_EXPONENT
    {
        return None;
    }
    let digits: BigInt = format!("{int_part}{frac_part}0").parse().ok()?;
    let digits = digits / 10; // the trailing 0 lets an empty digit string parse
    let scale = exponent - frac_part.len() as i64;
    let ten = BigInt::from(10u32);
    let mut r = if scale >= 0 {
        BigRational::from_integer(digits * ten.pow(scale as u32))
    } else {
        BigRational::new(digits, ten.pow((-scale) as u32))
    };
    if negative {
        r = -r;
    }
    Some(r)
}

/// Sum of budgets, exact (sequential composition).
pub fn total(parts: &[Epsilon]) -> BigRational {
    parts.iter().fold(BigRational::zero(), |acc, e| acc + &e.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratio(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    #[test]
    fn parses_decimals_exactly() {
        assert_eq!(parse_decimal("0.1"), Some(ratio(1, 10)));
        assert_eq!(parse_decimal("1"), Some(ratio(1, 1)));
        assert_eq!(parse_decimal(".5"), Some(ratio(1, 2)));
        assert_eq!(parse_decimal("5."), Some(ratio(5, 1)));
        assert_eq!(parse_decimal("1e-3"), Some(ratio(1, 1000)));
        assert_eq!(parse_decimal("+2.5E2"), Some(ratio(250, 1)));
        assert_eq!(parse_decimal("-0.25"), Some(ratio(-1, 4)));
    }

    #[test]
    fn refuses_non_decimals() {
        for s in ["", ".", "inf", "NaN", "infinity", "0x10", "1e", "e5", "1.2.3", "1e999", "--1", "1 2"] {
            assert_eq!(parse_decimal(s), None, "{s}");
        }
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
        let parts = vec![e; 10];
        assert_eq!(total(&parts), ratio(1, 1));
    }

    #[test]
    fn halves_are_exact() {
        let e: Epsilon = "0.3".parse().unwrap();
        let half = e.split(2);
        assert_eq!(half.as_rational() + half.as_rational(), *e.as_rational());
    }

    #[test]
    fn decimals_print_exactly() {
        assert_eq!(decimal(&ratio(1, 5)), "0.2");
        assert_eq!(decimal(&ratio(-3, 4)), "-0.75");
        assert_eq!(decimal(&ratio(7, 1)), "7");
        assert_eq!(decimal(&ratio(1, 1_000_000_000)), "0.000000001");
        assert!(decimal(&ratio(1, 3)).starts_with("~3.33333"));
        assert_eq!(rational_to_f64_down(&ratio(0, 1)).to_bits(), 0.0f64.to_bits());
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
