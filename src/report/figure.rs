//! How one released number is printed beside its accuracy: shared by the text, chart,
//! workload and describe table renderers. By default a value is rounded to the digits its
//! accuracy supports (`numeric::format::Rounding`); `--digits N` and `--full-precision` say
//! otherwise. Rounding is post-processing: the privacy guarantee is the release's, unchanged.

use crate::numeric::format::{real, significant, with_error, Rounding};
use crate::report::release::{Accuracy, Number};

/// What text output shows besides the values (`--with-error`), and how it rounds them
/// (`--digits`, `--full-precision`). Rounding is post-processing of the released values: it
/// reads nothing but the release, so the privacy guarantee is unchanged. JSON ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// Each value with its error bound: `53920 ± 310 (95%)`, or an `error(95%)` column.
    pub with_error: bool,
    /// Values rounded (the default): to the decimal place of their error bound's second
    /// significant digit, or to `digits`. False with `--full-precision`: every value in full.
    pub round: bool,
    /// `--digits N`: N significant digits for every value, instead of the accuracy rule.
    pub digits: Option<u8>,
}

impl Default for Style {
    /// Bare values, rounded to the digits their accuracy supports.
    fn default() -> Style {
        Style { with_error: false, round: true, digits: None }
    }
}

impl Style {
    /// Every value in full (`--full-precision`): the shortest decimal that reads back exactly.
    pub fn full() -> Style {
        Style { round: false, ..Style::default() }
    }

    /// How values are rounded.
    pub fn rounding(&self) -> Rounding {
        match (self.round, self.digits) {
            (false, _) => Rounding::Full,
            (true, Some(n)) => Rounding::Significant(n),
            (true, None) => Rounding::Accuracy,
        }
    }
}

/// A value as printed under `style`, and its error bound (rounded up). A quantile's bound is in
/// rows of rank, not in the value's units: its value is never rounded by it, but printed as the
/// public candidate it is ([`grid_value`]; N digits with `--digits N`).
pub fn figure(value: Number, accuracy: &Accuracy, style: Style) -> (String, String) {
    if accuracy.scope.starts_with("rank") {
        let shown = match value {
            Number::Real(x) => quantile_value(x, style),
            Number::Integer(_) => format_number(value),
        };
        return (shown, rank_rows(accuracy.error_bound));
    }
    let (x, integer) = match value {
        Number::Integer(i) => (i as f64, true),
        Number::Real(x) => (x, false),
    };
    let (rounded, error) = with_error(x, accuracy.error_bound, integer, style.rounding());
    (if style.round { rounded } else { format_number(value) }, error)
}

/// A released quantile: the public candidate it is, with no binary noise ([`grid_value`]); N
/// significant digits with `--digits N`; in full with `--full-precision`.
pub fn quantile_value(x: f64, style: Style) -> String {
    match style.rounding() {
        Rounding::Full => real(x),
        Rounding::Significant(n) => significant(x, n, false).0,
        Rounding::Accuracy => grid_value(x),
    }
}

/// A value of a public grid (a quantile candidate, a bin edge) computed in binary, printed to
/// 15 significant digits, which drops the binary noise of its computation: 0.5999999999999999
/// (the candidate 0.6 as a weighted mean of the bounds) prints as `0.6`. Any decimal of up to
/// 15 digits prints as itself.
pub fn grid_value(x: f64) -> String {
    match format!("{x:.14e}").parse::<f64>() {
        Ok(y) if y.is_finite() => real(y),
        _ => real(x),
    }
}

/// `error(95%)`: the heading of an error column at this confidence.
pub fn error_heading(accuracy: &Accuracy) -> String {
    format!("error({}%)", percent(accuracy.confidence))
}

/// A confidence level as a percentage without binary noise: 0.95 → `95`.
pub fn percent(confidence: f64) -> String {
    real((confidence * 100.0 * 1e9).round() / 1e9)
}

/// A rank bound in whole rows, rounded up.
pub fn rank_rows(bound: f64) -> String {
    if bound.is_finite() && bound.abs() < 1e15 {
        format!("{}", bound.ceil())
    } else {
        real(bound)
    }
}

/// A number as printed: integers as they are, reals by [`real`].
pub fn format_number(value: Number) -> String {
    match value {
        Number::Integer(i) => i.to_string(),
        Number::Real(x) => real(x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_back_exactly() {
        assert_eq!(format_number(Number::Real(200000.0)), "200000");
        assert_eq!(format_number(Number::Real(1e300)), "1e300");
        assert_eq!(format_number(Number::Integer(-3)), "-3");
        assert_eq!(percent(0.95), "95");
        assert_eq!(percent(0.999), "99.9");
        assert_eq!(rank_rows(57.2), "58");
    }

    fn accuracy(bound: f64, scope: &'static str) -> Accuracy {
        Accuracy { confidence: 0.95, error_bound: bound, scope }
    }

    /// The default rounds; --digits N and --full-precision override it; a count stays whole.
    #[test]
    fn the_style_chooses_the_rounding() {
        let mean = accuracy(3014.2, crate::report::release::VALUE);
        let x = Number::Real(84664.64927318387);
        let both = |style: Style| figure(x, &mean, style);
        assert_eq!(both(Style::default()), ("84700".into(), "3100".into()));
        assert_eq!(both(Style { digits: Some(3), ..Style::default() }), ("84700".into(), "3050".into()));
        assert_eq!(both(Style { digits: Some(2), ..Style::default() }), ("85000".into(), "3400".into()));
        assert_eq!(both(Style::full()), ("84664.64927318387".into(), "3100".into()));
        // A public count under replace: error 0, printed whole, ±0.
        let exact = accuracy(0.0, crate::report::release::VALUE);
        assert_eq!(figure(Number::Integer(1234), &exact, Style::default()), ("1234".into(), "0".into()));
        let bin = accuracy(6.0, crate::report::release::PER_BIN);
        assert_eq!(figure(Number::Integer(-3), &bin, Style::default()), ("-3".into(), "6".into()));
    }

    /// A quantile's bound is in rows, not the value's units: its value prints as the candidate.
    #[test]
    fn a_quantile_prints_as_its_candidate() {
        let rank = accuracy(57.2, crate::report::release::RANK);
        let q = |x: f64, style: Style| figure(Number::Real(x), &rank, style);
        assert_eq!(q(0.5999999999999999, Style::default()), ("0.6".into(), "58".into()));
        assert_eq!(q(0.5999999999999999, Style::full()).0, "0.5999999999999999");
        assert_eq!(q(44470.857142857145, Style::default()).0, "44470.8571428571");
        assert_eq!(q(52183.0, Style { digits: Some(2), ..Style::default() }).0, "52000");
        assert_eq!(grid_value(-0.0), "0");
        assert_eq!(grid_value(1e300), "1e300");
    }
}
