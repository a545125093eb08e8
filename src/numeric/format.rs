//! How a real number is printed everywhere: the shortest decimal that reads back as the same
//! f64, in exponent form only for very large or small magnitudes, so ordinary values stay plain
//! for `awk` and spreadsheets; and a value beside its error bound, rounded ([`Rounding`]) to
//! the digits the noise leaves meaningful.

/// A finite f64 as text.
pub fn real(x: f64) -> String {
    match x {
        0.0 => "0".to_string(),
        x if (1e-5..1e16).contains(&x.abs()) => format!("{x}"),
        x => format!("{x:e}"),
    }
}

/// How a value is rounded for text output. Rounding is post-processing of the released value:
/// it reads nothing but the release, so the privacy guarantee is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Rounding {
    /// The default: the decimal place of the error bound's second significant digit, the
    /// digits the noise leaves meaningful: 84664.649 ± 3,100 → 84700 (the hundreds, 3,100's
    /// second digit); 53915.34 ± 301 → 53920; a count 1234 ± 31 → 1234, and a count never gets
    /// decimals (7 ± 2.9 → 7). A bound of 0 (an exact, public value) leaves the value in full.
    #[default]
    Accuracy,
    /// `--digits N`: N significant digits (1 to 17), whatever the bound; a count still gets no
    /// decimals.
    Significant(u8),
    /// `--full-precision`: the shortest decimal that reads back as the same f64.
    Full,
}

/// A value and its error bound as text, the value rounded as `rounding` says. The bound is
/// rounded up, never printed smaller than it is: to two significant digits (to N with
/// `--digits N`). A rounded value moved by at most half a step, and the printed bound covers
/// that too: |printed value − truth| <= printed bound whenever |value − truth| <= bound.
/// `integer` values (counts) are never given decimals. A value or bound too large or small for
/// plain decimals is printed as it is; so is a value whose bound is 0. A bound that is not finite
/// (a slope whose x variance may be 0: null in JSON) is `unbounded`, never `inf`.
pub fn with_error(value: f64, error: f64, integer: bool, rounding: Rounding) -> (String, String) {
    let as_is = || (real(value), if error.is_finite() { real(error) } else { "unbounded".to_string() });
    // Beyond these, plain decimals stop being shorter than `real`'s exponent form.
    let plain = 1e-12..1e16;
    if !(error.is_finite() && error >= 0.0 && value.is_finite() && value.abs() < plain.end) {
        return as_is();
    }
    if let Rounding::Significant(n) = rounding {
        let (shown, moved) = significant(value, n, integer);
        return (shown, rounded_up(error + moved, i32::from(n), integer));
    }
    if !plain.contains(&error) {
        return as_is();
    }
    // The place of the bound's second significant digit: the value's (by default) and the
    // bound's own.
    let mut k = error.log10().floor() as i32 - 1;
    if integer {
        k = k.max(0);
    }
    let (shown, moved) = match rounding {
        Rounding::Accuracy => round_at(value, k),
        _ => (if integer { format!("{value:.0}") } else { real(value) }, 0.0),
    };
    (shown, rounded_up_at(error + moved, k))
}

/// An error bound printed without a value beside it (`dpstat plan`), as [`with_error`] prints a
/// release's: rounded up, never smaller than it is, to two significant digits (N with
/// `--digits N`); in full with `--full-precision`, or when it is not finite or too large or
/// small for plain decimals.
pub fn bound_up(error: f64, rounding: Rounding) -> String {
    if !(error.is_finite() && (1e-12..1e16).contains(&error)) {
        return real(error);
    }
    let text = match rounding {
        Rounding::Full => return real(error),
        Rounding::Significant(n) => rounded_up(error, i32::from(n), false),
        Rounding::Accuracy => rounded_up(error, 2, false),
    };
    // With no value beside it, a zero after the point says nothing: `3`, not `3.0`.
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// `value` to `n` significant digits (no decimals for an `integer`), and how far that moved it.
/// Rounded from the double's exact binary value (Rust's `{:.*e}`), so even 17 digits are right.
pub fn significant(value: f64, n: u8, integer: bool) -> (String, f64) {
    if value == 0.0 || !value.is_finite() || !(1e-12..1e16).contains(&value.abs()) {
        return (real(value), 0.0);
    }
    let n = i32::from(n.max(1));
    let sci = format!("{:.*e}", (n - 1) as usize, value);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let (Ok(exponent), Ok(mut m)) = (exponent.parse::<i32>(), digits.parse::<i128>()) else {
        return (real(value), 0.0);
    };
    if value < 0.0 {
        m = -m;
    }
    let k = exponent - n + 1;
    if integer && k < 0 {
        return round_at(value, 0);
    }
    let shown = plain(m, k);
    let moved = (shown.parse::<f64>().unwrap_or(value) - value).abs();
    (shown, moved)
}

/// `value` rounded to a multiple of 10^k (half away from zero), as a plain decimal, and how
/// far that moved it.
fn round_at(value: f64, k: i32) -> (String, f64) {
    let step = 10f64.powi(k);
    let m = (value / step).round();
    ((plain(m as i128, k)), (m * step - value).abs())
}

/// m · 10^k as a plain decimal without trailing zeros after the point: a value rounded up to
/// the next power of ten keeps only its digits (9.96 to two digits is `10`, not `10.0`).
fn plain(mut m: i128, mut k: i32) -> String {
    while k < 0 && m != 0 && m % 10 == 0 {
        m /= 10;
        k += 1;
    }
    decimal_at(m, k)
}

/// `need` rounded up to a multiple of 10^k, as a plain decimal that reads back as no less.
fn rounded_up_at(need: f64, k: i32) -> String {
    let mut e = (need / 10f64.powi(k)).ceil() as i128;
    while decimal_at(e, k).parse::<f64>().is_ok_and(|printed| printed < need) {
        e += 1;
    }
    decimal_at(e, k)
}

/// `need` rounded up to `digits` significant digits (no decimals for an `integer`'s bound).
fn rounded_up(need: f64, digits: i32, integer: bool) -> String {
    if need == 0.0 {
        return "0".to_string();
    }
    if !(1e-300..1e16).contains(&need) {
        return real(need);
    }
    // The place of the last digit, from the exact decimal of `need` (a log10 can be off by one
    // just below a power of ten).
    let sci = format!("{:.*e}", (digits.max(1) - 1) as usize, need);
    let exponent = sci.split_once('e').and_then(|(_, e)| e.parse::<i32>().ok()).unwrap_or(0);
    let mut k = exponent - digits.max(1) + 1;
    if integer {
        k = k.max(0);
    }
    rounded_up_at(need, k)
}

/// m · 10^k as a plain decimal.
fn decimal_at(m: i128, k: i32) -> String {
    if m == 0 {
        return "0".to_string();
    }
    if k >= 0 {
        return format!("{m}{}", "0".repeat(k as usize));
    }
    let digits = m.unsigned_abs().to_string();
    let places = (-k) as usize;
    let padded = format!("{digits:0>width$}", width = places + 1);
    let (whole, fraction) = padded.split_at(padded.len() - places);
    format!("{}{whole}.{fraction}", if m < 0 { "-" } else { "" })
}

/// Bytes as lowercase hex, two digits each (digests in ledgers and fingerprints).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_alone_rounds_up_as_beside_a_value() {
        assert_eq!(bound_up(1198292.9094216824, Rounding::Accuracy), "1200000");
        assert_eq!(bound_up(2995.7322735539638, Rounding::Accuracy), "3000");
        assert_eq!(bound_up(29.0, Rounding::Accuracy), "29");
        assert_eq!(bound_up(3.0, Rounding::Accuracy), "3");
        assert_eq!(bound_up(2.5, Rounding::Accuracy), "2.5");
        assert_eq!(bound_up(9.96, Rounding::Accuracy), "10");
        assert_eq!(bound_up(0.001234, Rounding::Accuracy), "0.0013");
        assert_eq!(bound_up(2995.7322735539638, Rounding::Significant(4)), "2996");
        assert_eq!(bound_up(2995.7322735539638, Rounding::Full), "2995.7322735539638");
        // Beside a value that did not move, the same text as a release's bound.
        for e in [301.0, 3100.5, 0.0421, 117283.80085895176] {
            assert_eq!(
                bound_up(e, Rounding::Accuracy),
                with_error(0.0, e, false, Rounding::Accuracy).1,
                "{e}"
            );
            assert!(bound_up(e, Rounding::Accuracy).parse::<f64>().unwrap() >= e);
        }
    }

    fn s(v: &str, e: &str) -> (String, String) {
        (v.to_string(), e.to_string())
    }

    #[test]
    fn errors_round_up_and_values_to_the_same_place() {
        use Rounding::{Accuracy, Full};
        assert_eq!(with_error(53915.336273357, 301.2, false, Accuracy), s("53920", "310"));
        assert_eq!(with_error(53915.336273357, 301.2, false, Full), s("53915.336273357", "310"));
        assert_eq!(with_error(-2.0, 6.0, true, Accuracy), s("-2", "6"));
        assert_eq!(with_error(54.0, 5.3, true, Full), s("54", "6"));
        assert_eq!(with_error(1234.0, 301.0, true, Accuracy), s("1230", "310"));
        assert_eq!(with_error(0.123456, 0.0042, false, Accuracy), s("0.1235", "0.0043"));
        assert_eq!(with_error(-0.00049, 0.0042, false, Accuracy), s("-0.0005", "0.0043"));
        assert_eq!(with_error(7.0, 0.0, false, Accuracy), s("7", "0"));
        assert_eq!(with_error(f64::MAX, 1e300, false, Accuracy), (real(f64::MAX), real(1e300)));
    }

    /// The default rule at several magnitudes: the value to the place of its bound's second
    /// significant digit, the bound rounded up and covering the move.
    #[test]
    fn the_accuracy_rule_at_every_magnitude() {
        let r = |v: f64, e: f64| with_error(v, e, false, Rounding::Accuracy);
        assert_eq!(r(84664.64927318387, 3014.2), s("84700", "3100"));
        assert_eq!(r(55259.919981036386, 18300.0), s("55000", "19000"));
        assert_eq!(r(4.56789, 0.0271), s("4.568", "0.028"));
        assert_eq!(r(1.5e9, 2.4e7), s("1500000000", "24000000"));
        assert_eq!(r(0.000123456, 0.00000089), s("0.00012346", "0.00000090"));
        // Negative values round symmetrically, and a value rounded to zero is never "-0".
        assert_eq!(r(-84664.64927318387, 3014.2), s("-84700", "3100"));
        assert_eq!(r(-0.3, 41.0), s("0", "42"));
        assert_eq!(r(-0.004, 0.5), s("0", "0.51"));
        // Decimals that round to a whole step drop their trailing zeros: 19.996 ± 0.41 → 20.
        assert_eq!(r(19.996, 0.41), s("20", "0.42"));
    }

    /// A count's grid is the integers: whatever its bound, it is never printed with decimals, and
    /// an exact count (bound 0, a public n under replace) is printed as it is.
    #[test]
    fn counts_stay_integers() {
        let r = |v: f64, e: f64| with_error(v, e, true, Rounding::Accuracy);
        assert_eq!(r(1234.0, 31.0), s("1234", "31"));
        assert_eq!(r(1234.0, 2.9), s("1234", "3"));
        assert_eq!(r(1234.0, 0.4), s("1234", "1"));
        assert_eq!(r(1234.0, 0.0), s("1234", "0"));
        assert_eq!(r(-3.0, 0.0), s("-3", "0"));
        assert_eq!(r(123456.0, 3100.0), s("123500", "3200"));
        assert_eq!(with_error(1234.0, 31.0, true, Rounding::Significant(2)), s("1200", "65"));
        assert_eq!(with_error(1234.0, 31.0, true, Rounding::Significant(9)), s("1234", "31"));
    }

    #[test]
    fn digits_give_n_significant_digits_whatever_the_bound() {
        let d = |v: f64, e: f64, n: u8| with_error(v, e, false, Rounding::Significant(n));
        assert_eq!(d(84664.64927318387, 3014.2, 3), s("84700", "3050"));
        assert_eq!(d(84664.64927318387, 3014.2, 7), s("84664.65", "3014.201"));
        assert_eq!(d(84664.64927318387, 3014.2, 1), s("80000", "8000"));
        assert_eq!(d(-0.0123456, 0.5, 2), s("-0.012", "0.51"));
        assert_eq!(d(9.96, 0.1, 2), s("10", "0.14"));
        assert_eq!(d(0.0, 0.1, 3), s("0", "0.100"));
        let (v, e) = d(84664.64927318387, 3014.2, 17);
        assert_eq!(v, "84664.649273183866", "the double's own 17 digits");
        assert!(e.parse::<f64>().unwrap() >= 3014.2, "{e}");
        assert_eq!(significant(-0.00004, 1, false).0, "-0.00004");
        assert_eq!(significant(-0.4, 1, true).0, "0");
    }

    #[test]
    fn full_precision_is_the_value_as_it_reads_back() {
        for x in [84664.64927318387, -0.1, 1e-7, 123456789.125] {
            let (v, _) = with_error(x, 3.0, false, Rounding::Full);
            assert_eq!(v, real(x));
            assert_eq!(v.parse::<f64>().unwrap(), x);
        }
    }

    /// Whatever the value and error, the printed error covers the printed value's distance from
    /// anything the error covered, and is never more than one step plus the rounding too large.
    #[test]
    fn a_rounded_release_keeps_its_bound() {
        use proptest::prelude::*;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::default();
        let case = (-1e9f64..1e9, 1e-6f64..1e8, any::<bool>(), 0u8..=17);
        runner
            .run(&case, |(value, error, integer, digits)| {
                let value = if integer { value.round() } else { value };
                let rounding = match digits {
                    0 => Rounding::Accuracy,
                    17 => Rounding::Full,
                    n => Rounding::Significant(n),
                };
                let (v, e) = with_error(value, error, integer, rounding);
                prop_assert!(v != "-0", "{v}");
                let (v, e): (f64, f64) = (v.parse().unwrap(), e.parse().unwrap());
                prop_assert!(e >= error, "{e} < {error}");
                prop_assert!(
                    (v - value).abs() + error <= e * (1.0 + 1e-12),
                    "{v} ± {e} vs {value} ± {error}"
                );
                match rounding {
                    Rounding::Accuracy => {
                        let k = error.log10().floor() as i32 - 1;
                        let step = 10f64.powi(if integer { k.max(0) } else { k });
                        prop_assert!(
                            e <= error + 1.5 * step * (1.0 + 1e-9),
                            "{e} for {error} at step {step}"
                        );
                        prop_assert!((v - value).abs() <= step / 2.0 * (1.0 + 1e-9));
                    }
                    Rounding::Full => prop_assert_eq!(v, value),
                    Rounding::Significant(n) => {
                        let k = value.abs().max(1e-300).log10().floor() as i32 - i32::from(n) + 1;
                        let step = 10f64.powi(if integer { k.max(0) } else { k });
                        // At 16 or 17 digits the step can be below the double's own spacing: the
                        // printed decimal is within half a step, its double within one more ulp.
                        let ulp = value.abs() * f64::EPSILON;
                        prop_assert!((v - value).abs() <= step / 2.0 * (1.0 + 1e-9) + ulp, "{v} vs {value}");
                    }
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn numbers_read_back_exactly() {
        for x in [0.1, 123456.789, -2.5, 1e20, 3.3e-9, 9007199254740993.0, -0.0] {
            let s = real(x);
            assert_eq!(s.parse::<f64>().unwrap(), x, "{s}");
        }
        assert_eq!(real(200000.0), "200000");
        assert_eq!(real(1e300), "1e300");
    }
}
