//! How one released number is printed beside its accuracy: shared by the text, chart and
//! workload table renderers.

use crate::numeric::format::{real, with_error};
use crate::report::release::{Accuracy, Number};

/// What text output shows besides the values (`--with-error`, `--round`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Style {
    /// Each value with its error bound: `53920 ± 310 (95%)`, or an `error(95%)` column.
    pub with_error: bool,
    /// Values rounded to the decimal place of their error bound's second significant digit.
    pub round: bool,
}

/// A value as printed under `style`, and its error bound (rounded up). A quantile's bound is in
/// rows of rank, not in the value's units: its value is never rounded by it.
pub fn figure(value: Number, accuracy: &Accuracy, style: Style) -> (String, String) {
    if accuracy.scope.starts_with("rank") {
        return (format_number(value), rank_rows(accuracy.error_bound));
    }
    let (x, integer) = match value {
        Number::Integer(i) => (i as f64, true),
        Number::Real(x) => (x, false),
    };
    let (rounded, error) = with_error(x, accuracy.error_bound, integer, style.round);
    (if style.round { rounded } else { format_number(value) }, error)
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
}
