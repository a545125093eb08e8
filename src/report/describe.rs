//! `dpstat describe`'s text: one row per column with its ε, its bounds, and each value next to
//! its error bound, then a row with the total. (Its JSON is a workload's: one line per query.)
//! Values are rounded as a single release's are ([`Style`]: the place of their bound's second
//! significant digit by default, post-processing that leaves the privacy as it is), and bounds
//! rounded up, which keeps them bounds: to two significant digits covering the rounding, or,
//! with `--full-precision`, the values in full and the bounds to three significant digits.
//! Rank bounds (quantiles) keep three significant digits. The JSON has them in full.

use crate::numeric::format::{real, with_error};
use crate::privacy::accuracy::Confidence;
use crate::privacy::epsilon::Epsilon;
use crate::report::figure::percent;
use crate::report::release::{Number, Release};
use crate::report::table::exact_decimal;
use crate::report::text::{format_number, quantile_value, Style};

/// What `describe` released, column by column.
pub struct Described {
    pub total: Epsilon,
    pub confidence: Confidence,
    pub columns: Vec<Column>,
}

/// One column's releases: the mean (whose noisy count, its own or the shared one, is the
/// column's count under add-remove) and the quantiles.
pub struct Column {
    pub name: String,
    pub eps: Epsilon,
    pub count: Count,
    pub mean: Release,
    pub quantiles: Release,
}

/// The count of rows a column's mean was taken over.
pub enum Count {
    /// The mean's noisy count (add-remove; its own or the shared one), exactly, with its error bound.
    Noisy { value: String, bound: f64 },
    /// The public row count (replace): exact, no noise.
    Public(u64),
    /// None: the mean that carries the count was withheld (no bounds found privately).
    Withheld,
}

/// The table: `column epsilon bounds count mean q…`, each value followed by `±bound` (rows of
/// rank for quantiles), and a last row with the total ε and the confidence of the bounds.
pub fn render_text(d: &Described, style: Style) -> Vec<u8> {
    let levels = levels(d);
    let mut header =
        vec!["column".to_string(), "epsilon".into(), "bounds".into(), "count".into(), "mean".into()];
    header.extend(levels.iter().cloned());
    let mut rows = vec![header];
    for c in &d.columns {
        let bounds = match &c.mean.noise.bounds {
            Some(b) if b.source == "private" => format!("[{}, {}] private", real(b.lower), real(b.upper)),
            Some(b) => format!("[{}, {}]", real(b.lower), real(b.upper)),
            None => "-".to_string(),
        };
        let shown = |(v, e): (String, String)| format!("{v} ±{e}");
        let count = match &c.count {
            Count::Public(n) => format!("{n} ±0"),
            Count::Withheld => "-".to_string(),
            noisy => count_pair(noisy, style).map(shown).unwrap_or_default(),
        };
        let mean = match c.mean.value {
            Some(v) => shown(value_pair(v, c.mean.noise.accuracy.error_bound, style)),
            None => "-".to_string(),
        };
        let mut row = vec![c.name.clone(), exact_decimal(c.eps.as_rational()), bounds, count, mean];
        match &c.quantiles.quantiles {
            // A rank bound is in rows, not the value's units: three significant digits, as
            // always (a bound well below one row says so).
            Some(qs) => row.extend(qs.iter().map(|q| {
                format!("{} ±{} rows", quantile_value(q.value, style), rounded_up(q.rank_error_bound))
            })),
            None => row.extend(levels.iter().map(|_| "-".to_string())),
        }
        rows.push(row);
    }
    let mut total = vec!["total".to_string(), exact_decimal(d.total.as_rational()), "-".into(), "-".into()];
    total.push(format!("bounds at confidence {}", d.confidence.level()));
    rows.push(total);
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = Vec::new();
    for row in &rows {
        let cells: Vec<String> =
            row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}", w = *w)).collect();
        out.extend_from_slice(cells.join("  ").trim_end().as_bytes());
        out.push(b'\n');
    }
    // Per person (`--privacy-id`), every ε and bound above is one person's.
    if let Some(line) = d.columns.first().and_then(|c| c.mean.unit.line()) {
        out.extend_from_slice(format!("unit: {line}\n").as_bytes());
    }
    out
}

/// The quantile levels' column names, `q0.5`, …: every column asks for the same levels; a
/// column whose quantiles were withheld has none, so they come from the first that has them.
fn levels(d: &Described) -> Vec<String> {
    d.columns
        .iter()
        .find_map(|c| c.quantiles.quantiles.as_ref())
        .map(|qs| qs.iter().map(|q| format!("q{}", real(q.q))).collect())
        .unwrap_or_default()
}

/// A value and its bound as printed: rounded as `style` says, or both as they were before
/// rounding was the default (`--full-precision`).
fn value_pair(value: Number, bound: f64, style: Style) -> (String, String) {
    match (style.round, value) {
        (false, _) => (format_number(value), rounded_up(bound)),
        (true, Number::Integer(i)) => with_error(i as f64, bound, true, style.rounding()),
        (true, Number::Real(x)) => with_error(x, bound, false, style.rounding()),
    }
}

/// A noisy count and its bound as printed (None for a public or withheld count).
fn count_pair(count: &Count, style: Style) -> Option<(String, String)> {
    let Count::Noisy { value, bound } = count else { return None };
    Some(match value.parse::<i128>() {
        Ok(v) if style.round => value_pair(Number::Integer(v), *bound, style),
        _ => (value.clone(), rounded_up(*bound)),
    })
}

/// `--format csv`: the text table's rows with every value and its bound in columns of their own
/// (`count`, `count_error(95%)`, `mean`, `mean_error(95%)`, `q0.5`, `q0.5_rank_error(95%)` in
/// rows of rank), the bounds as `lower`, `upper` and their source, and the total row; the
/// numbers as the text prints them. The unit line is a note for stderr.
pub fn render_csv(d: &Described, style: Style) -> anyhow::Result<Vec<u8>> {
    let levels = levels(d);
    let percent = percent(d.confidence.level());
    let mut header: Vec<String> =
        ["column", "epsilon", "lower", "upper", "bounds", "count"].iter().map(|s| s.to_string()).collect();
    header.push(format!("count_error({percent}%)"));
    header.push("mean".into());
    header.push(format!("mean_error({percent}%)"));
    for level in &levels {
        header.push(level.clone());
        header.push(format!("{level}_rank_error({percent}%)"));
    }
    let width = header.len();
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(&header)?;
    for c in &d.columns {
        let mut row = vec![c.name.clone(), exact_decimal(c.eps.as_rational())];
        match &c.mean.noise.bounds {
            Some(b) => row.extend([real(b.lower), real(b.upper), b.source.to_string()]),
            None => row.extend([String::new(), String::new(), String::new()]),
        }
        match &c.count {
            Count::Public(n) => row.extend([n.to_string(), "0".into()]),
            Count::Withheld => row.extend([String::new(), String::new()]),
            noisy => row.extend(count_pair(noisy, style).map(|(v, e)| [v, e]).unwrap_or_default()),
        }
        match c.mean.value {
            Some(v) => {
                let (v, e) = value_pair(v, c.mean.noise.accuracy.error_bound, style);
                row.extend([v, e]);
            }
            None => row.extend([String::new(), String::new()]),
        }
        match &c.quantiles.quantiles {
            Some(qs) => {
                for q in qs {
                    row.extend([quantile_value(q.value, style), rounded_up(q.rank_error_bound)]);
                }
            }
            None => row.extend(levels.iter().flat_map(|_| [String::new(), String::new()])),
        }
        writer.write_record(&row)?;
    }
    let mut total = vec!["total".to_string(), exact_decimal(d.total.as_rational())];
    total.resize(width, String::new());
    writer.write_record(&total)?;
    writer.into_inner().map_err(|e| anyhow::anyhow!("writing CSV: {e}"))
}

/// The unit line of a person-level summary (every ε and bound is one person's); None at row
/// level.
pub fn unit_line(d: &Described) -> Option<String> {
    d.columns.first().and_then(|c| c.mean.unit.line())
}

/// A bound for people: rounded up to three significant digits, never down.
fn rounded_up(x: f64) -> String {
    if !(x.is_finite() && x > 0.0) {
        return real(x);
    }
    // Digits kept after the point (negative: zeros before it); the division by an exact power
    // of ten gives the double nearest the decimal, which is not below x (a double below it).
    let k = 2 - x.log10().floor() as i32;
    let r = if k > 0 {
        let p = 10f64.powi(k);
        (x * p).ceil() / p
    } else {
        let p = 10f64.powi(-k);
        (x / p).ceil() * p
    };
    real(if r < x { x } else { r })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_rounded_up_to_three_digits() {
        for (x, want) in [
            (24945.98, "25000"),
            (12.0478, "12.1"),
            (84.777, "84.8"),
            (84.8, "84.8"),
            (152.59, "153"),
            (7.0, "7"),
            (0.012345, "0.0124"),
            (0.0, "0"),
        ] {
            assert_eq!(rounded_up(x), want, "{x}");
        }
        for i in 1..2000 {
            let x = i as f64 * 0.7317e-3;
            assert!(rounded_up(x).parse::<f64>().unwrap() >= x, "{x}");
        }
    }
}
