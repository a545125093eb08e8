//! How a real number is printed everywhere: the shortest decimal that reads back as the same
//! f64, in exponent form only for very large or small magnitudes, so ordinary values stay plain
//! for `awk` and spreadsheets; and a value beside its error bound, rounded (`--round`) to the
//! digits the noise leaves meaningful.

/// A finite f64 as text.
pub fn real(x: f64) -> String {
    match x {
        0.0 => "0".to_string(),
        x if (1e-5..1e16).contains(&x.abs()) => format!("{x}"),
        x => format!("{x:e}"),
    }
}

/// A value and its error bound as text: the error rounded up to two significant digits (never
/// printed smaller than it is), and with `round` the value rounded to that same decimal place,
/// the digits the noise leaves meaningful. The rounding moves the value by at most half a step,
/// so the printed error then covers that too: |printed value − truth| <= printed error whenever
/// |value − truth| <= error. `integer` values (counts) are never given decimals. A value or error
/// that is not finite and positive, or too large or small to round, is printed as it is.
pub fn with_error(value: f64, error: f64, integer: bool, round: bool) -> (String, String) {
    let as_is = || (real(value), real(error));
    // Beyond these, plain decimals stop being shorter than `real`'s exponent form.
    let plain = 1e-12..1e16;
    if !(plain.contains(&error) && value.abs() < plain.end) {
        return as_is();
    }
    let mut k = error.log10().floor() as i32 - 1;
    if integer {
        k = k.max(0);
    }
    let step = 10f64.powi(k);
    let (shown, moved) = if round {
        let m = (value / step).round() as i128;
        (decimal_at(m, k), (m as f64 * step - value).abs())
    } else {
        (if integer { format!("{value:.0}") } else { real(value) }, 0.0)
    };
    let need = error + moved;
    let mut e = (need / step).ceil() as i128;
    while (e as f64) * step < need {
        e += 1;
    }
    (shown, decimal_at(e, k))
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
    fn errors_round_up_and_values_to_the_same_place() {
        let s = |v: &str, e: &str| (v.to_string(), e.to_string());
        assert_eq!(with_error(53915.336273357, 301.2, false, true), s("53920", "310"));
        assert_eq!(with_error(53915.336273357, 301.2, false, false), s("53915.336273357", "310"));
        assert_eq!(with_error(-2.0, 6.0, true, true), s("-2", "6"));
        assert_eq!(with_error(54.0, 5.3, true, false), s("54", "6"));
        assert_eq!(with_error(1234.0, 301.0, true, true), s("1230", "310"));
        assert_eq!(with_error(0.123456, 0.0042, false, true), s("0.1235", "0.0043"));
        assert_eq!(with_error(-0.00049, 0.0042, false, true), s("-0.0005", "0.0043"));
        assert_eq!(with_error(7.0, 0.0, false, true), s("7", "0"));
        assert_eq!(with_error(f64::MAX, 1e300, false, true), (real(f64::MAX), real(1e300)));
    }

    /// Whatever the value and error, the printed error covers the printed value's distance from
    /// anything the error covered, and is never more than one step plus the rounding too large.
    #[test]
    fn a_rounded_release_keeps_its_bound() {
        use proptest::prelude::*;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::default();
        let case = (-1e9f64..1e9, 1e-6f64..1e8, any::<bool>(), any::<bool>());
        runner
            .run(&case, |(value, error, integer, round)| {
                let value = if integer { value.round() } else { value };
                let (v, e) = with_error(value, error, integer, round);
                let (v, e): (f64, f64) = (v.parse().unwrap(), e.parse().unwrap());
                prop_assert!(e >= error, "{e} < {error}");
                prop_assert!(
                    (v - value).abs() + error <= e * (1.0 + 1e-12),
                    "{v} ± {e} vs {value} ± {error}"
                );
                let k = error.log10().floor() as i32 - 1;
                let step = 10f64.powi(if integer { k.max(0) } else { k });
                prop_assert!(e <= error + 1.5 * step * (1.0 + 1e-9), "{e} for {error} at step {step}");
                if !round {
                    prop_assert_eq!(v, value);
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
