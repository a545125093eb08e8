//! Exact rationals: decimals parsed without rounding, printed exactly where they terminate, and
//! converted to f64 in a chosen direction, so no printed figure understates what it stands for.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive};

/// A decimal exponent beyond this is a typo or an attack on the big integers.
const MAX_EXPONENT: i64 = 400;

/// The exact rational value of a finite f64.
pub fn exact(x: f64) -> BigRational {
    BigRational::from_float(x).unwrap_or_else(|| BigRational::from_integer(BigInt::from(0)))
}

/// 2^exp as an exact rational.
pub fn pow2(exp: i64) -> BigRational {
    let two = BigInt::from(2u32);
    if exp >= 0 {
        BigRational::from_integer(two.pow(exp as u32))
    } else {
        BigRational::new(BigInt::one(), two.pow((-exp) as u32))
    }
}

/// floor(log2(r)) for r > 0, exactly.
pub fn floor_log2(r: &BigRational) -> i64 {
    let (n, d) = (r.numer().abs(), r.denom().abs());
    let estimate = n.bits() as i64 - d.bits() as i64;
    // n/d lies in [2^(estimate−1), 2^(estimate+1)); one comparison settles which side.
    let at_least =
        if estimate >= 0 { n >= (d << estimate as usize) } else { (n << (-estimate) as usize) >= d };
    if at_least {
        estimate
    } else {
        estimate - 1
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

/// A decimal ([`parse_decimal`]) or a fraction of two decimals, `1/4` or `0.5/3`, exactly: what
/// ε and δ may be written as (they are exact rationals inside, so a fraction loses nothing). A
/// zero or negative denominator is not a number.
pub fn parse_ratio(s: &str) -> Option<BigRational> {
    match s.split_once('/') {
        None => parse_decimal(s),
        Some((numer, denom)) => {
            let (numer, denom) = (parse_decimal(numer)?, parse_decimal(denom)?);
            denom.is_positive().then(|| numer / denom)
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ratio(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    #[test]
    fn parses_fractions_exactly() {
        assert_eq!(parse_ratio("1/4"), Some(ratio(1, 4)));
        assert_eq!(parse_ratio(" 1 / 3 "), Some(ratio(1, 3)));
        assert_eq!(parse_ratio("0.5/3"), Some(ratio(1, 6)));
        assert_eq!(parse_ratio("0.25"), Some(ratio(1, 4)));
        assert_eq!(parse_ratio("1/0"), None);
        assert_eq!(parse_ratio("1/-2"), None);
        assert_eq!(parse_ratio("1/2/3"), None);
        assert_eq!(parse_ratio("/2"), None);
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
    fn decimals_print_exactly() {
        assert_eq!(decimal(&ratio(1, 5)), "0.2");
        assert_eq!(decimal(&ratio(-3, 4)), "-0.75");
        assert_eq!(decimal(&ratio(7, 1)), "7");
        assert_eq!(decimal(&ratio(1, 1_000_000_000)), "0.000000001");
        assert!(decimal(&ratio(1, 3)).starts_with("~3.33333"));
        assert_eq!(rational_to_f64_down(&ratio(0, 1)).to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn floor_log2_exact() {
        let r = |n: i64, d: i64| BigRational::new(n.into(), d.into());
        assert_eq!(floor_log2(&r(1, 1)), 0);
        assert_eq!(floor_log2(&r(2, 1)), 1);
        assert_eq!(floor_log2(&r(3, 1)), 1);
        assert_eq!(floor_log2(&r(4, 1)), 2);
        assert_eq!(floor_log2(&r(1, 2)), -1);
        assert_eq!(floor_log2(&r(1, 3)), -2);
        assert_eq!(floor_log2(&r(7, 8)), -1);
    }
}
