//! Rendering a release as text or JSON into a buffer. Nothing is written to stdout until the
//! whole release is rendered, so a failure leaves stdout empty.
//!
//! Text is a bare number (or a CSV) by default, so it pipes into `awk`, `sort` and spreadsheets
//! unchanged, rounded to the digits the noise leaves meaningful; [`Style`] adds what the
//! release knows about its own accuracy, the error bound beside each value (`--with-error`),
//! and says how values are rounded (`--digits N`, `--full-precision`). The rounding is
//! post-processing of the release and leaves its privacy as it is. JSON always carries the
//! full value and its bound.

use anyhow::Result;

use crate::error::{bad_input, shown, terminal_safe};
use crate::numeric::format::{bound_up, real, Rounding};
use crate::report::chart;
pub use crate::report::figure::{
    error_heading, figure, format_number, percent, quantile_value, rank_rows, Style,
};
use crate::report::release::{BinCount, GroupedRelease, Number, Published, Release};

/// How a release is printed (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// One number on a line; a histogram as CSV `bin,count`.
    #[default]
    Text,
    /// One JSON object with the release and how to read it.
    Json,
    /// Bars of a release of several numbers, each with its ± accuracy band.
    Chart,
    /// CSV, one header line, every value next to its error bound in a column of its own.
    Csv,
}

/// `bytes` rendered in `format`, as they may reach a terminal: JSON as it is (it escapes
/// control characters itself), any other format with the characters that could drive a
/// terminal escaped ([`terminal_safe`]): a key found in the data or a column name is data.
pub fn for_terminal(bytes: Vec<u8>, format: Format) -> Vec<u8> {
    if format == Format::Json {
        return bytes;
    }
    match String::from_utf8(bytes) {
        Ok(text) => terminal_safe(&text).into_bytes(),
        Err(e) => terminal_safe(&String::from_utf8_lossy(e.as_bytes())).into_bytes(),
    }
}

/// The bytes to print for a release.
pub fn render(published: &Published, format: Format, style: Style) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match (format, published) {
        (Format::Json, _) => {
            serde_json::to_writer(&mut out, published)?;
            out.push(b'\n');
        }
        (Format::Text, Published::One(release)) => render_text(release, style, &mut out)?,
        (Format::Text, Published::Grouped(grouped)) => render_grouped_text(grouped, style, &mut out)?,
        // CSV is the text's CSV with its error column always there; a lone number gets a header.
        (Format::Csv, Published::One(release)) => render_csv(release, style, &mut out)?,
        (Format::Csv, Published::Grouped(grouped)) => {
            render_grouped_text(grouped, Style { with_error: true, ..style }, &mut out)?
        }
        (Format::Chart, _) => {
            let chart = chart::of_published(published, style).ok_or_else(|| bad_input(chart::ONE_NUMBER))?;
            out.extend_from_slice(chart::render(&chart, chart::terminal_width()).as_bytes());
        }
    }
    Ok(out)
}

/// One CSV with the key first: `key,value` for scalars, `key,bin,count` for histograms,
/// `key,q,value` for several quantile levels; with `--with-error` an `error(95%)` column last
/// (for quantile levels, their rank bound in rows).
fn render_grouped_text(grouped: &GroupedRelease, style: Style, out: &mut Vec<u8>) -> Result<()> {
    let histogram = grouped.groups.iter().any(|g| g.release.bins.is_some());
    let levels = grouped.groups.iter().any(|g| g.release.value.is_none() && g.release.quantiles.is_some());
    let mut writer = csv::Writer::from_writer(out);
    if levels {
        let mut heading = vec!["key", "q", "value"];
        if style.with_error {
            heading.push("rank_error(rows)");
        }
        writer.write_record(&heading)?;
        for group in &grouped.groups {
            for q in group.release.quantiles.iter().flatten() {
                let (level, value) = (format_number(Number::Real(q.q)), quantile_value(q.value, style));
                let mut cells = vec![group.key.clone(), level, value];
                if style.with_error {
                    cells.push(rank_rows(q.rank_error_bound));
                }
                writer.write_record(&cells)?;
            }
        }
        writer.flush()?;
        return Ok(());
    }
    let normalized =
        grouped.groups.iter().flat_map(|g| g.release.bins.iter().flatten()).any(|b| b.proportion.is_some());
    let mut heading: Vec<String> = if histogram {
        vec!["key".into(), "bin".into(), if normalized { "proportion" } else { "count" }.into()]
    } else {
        vec!["key".into(), "value".into()]
    };
    if let (true, Some(first)) = (style.with_error, grouped.groups.first()) {
        heading.push(error_heading(&first.release.noise.accuracy));
    }
    writer.write_record(&heading)?;
    for group in &grouped.groups {
        let accuracy = &group.release.noise.accuracy;
        let mut record = |mut cells: Vec<String>, value: Number| -> Result<()> {
            let (shown, error) = figure(value, accuracy, style);
            cells.push(shown);
            if style.with_error {
                cells.push(error);
            }
            writer.write_record(&cells)?;
            Ok(())
        };
        if let Some(value) = group.release.value {
            record(vec![group.key.clone()], value)?;
        }
        for bin in group.release.bins.iter().flatten() {
            record(vec![group.key.clone(), bin.bin.clone()], bin_number(bin))?;
        }
    }
    writer.flush()?;
    Ok(())
}

/// Scalars: one number on one line (`53920 ± 310 (95%)` with `--with-error`). Quantiles: CSV
/// `q,value` (a rank error column with `--with-error`). Histograms: CSV `bin,count` (an
/// `error(95%)` column with `--with-error`).
fn render_text(release: &Release, style: Style, out: &mut Vec<u8>) -> Result<()> {
    let accuracy = &release.noise.accuracy;
    let rank = release.quantiles.is_some();
    if let Some(value) = release.value {
        let line = match (style.with_error, rank) {
            (false, _) => figure(value, accuracy, style).0,
            (true, false) => {
                let (shown, error) = figure(value, accuracy, style);
                format!("{shown} ± {error} ({}%)", percent(accuracy.confidence))
            }
            (true, true) => format!(
                "{} (rank within ±{} rows, {}%)",
                figure(value, accuracy, style).0,
                rank_rows(accuracy.error_bound),
                percent(accuracy.confidence)
            ),
        };
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    if let (None, Some(quantiles)) = (release.value, &release.quantiles) {
        let mut writer = csv::Writer::from_writer(&mut *out);
        let mut heading = vec!["q".to_string(), "value".to_string()];
        if style.with_error {
            heading.push(format!("rank_error({}%)", percent(accuracy.confidence)));
        }
        writer.write_record(&heading)?;
        for q in quantiles {
            let mut cells = vec![format_number(Number::Real(q.q)), quantile_value(q.value, style)];
            if style.with_error {
                cells.push(rank_rows(q.rank_error_bound));
            }
            writer.write_record(&cells)?;
        }
        writer.flush()?;
    }
    if let Some(bins) = &release.bins {
        let mut writer = csv::Writer::from_writer(out);
        let normalized = bins.iter().any(|b| b.proportion.is_some());
        let mut heading =
            vec!["bin".to_string(), if normalized { "proportion" } else { "count" }.to_string()];
        if style.with_error {
            heading.push(error_heading(accuracy));
        }
        writer.write_record(&heading)?;
        for bin in bins {
            let (shown, error) = figure(bin_number(bin), accuracy, style);
            let mut cells = vec![bin.bin.clone(), shown];
            if style.with_error {
                cells.push(error);
            }
            writer.write_record(&cells)?;
        }
        writer.flush()?;
    }
    Ok(())
}

/// `--format csv` of one release: a lone number as `value,error(95%)` (a median's
/// `value,rank_error(95%)`, in rows of rank), anything else as its text CSV with the error
/// column. The numbers are the text's.
fn render_csv(release: &Release, style: Style, out: &mut Vec<u8>) -> Result<()> {
    let style = Style { with_error: true, ..style };
    let Some(value) = release.value else { return render_text(release, style, out) };
    let accuracy = &release.noise.accuracy;
    let mut writer = csv::Writer::from_writer(out);
    if release.quantiles.is_some() {
        writer
            .write_record(["value".to_string(), format!("rank_error({}%)", percent(accuracy.confidence))])?;
        writer.write_record([format_number(value), rank_rows(accuracy.error_bound)])?;
    } else {
        writer.write_record(["value".to_string(), error_heading(accuracy)])?;
        let (shown, error) = figure(value, accuracy, style);
        writer.write_record([shown, error])?;
    }
    writer.flush()?;
    Ok(())
}

/// Warnings for stderr about releases whose value ± error bound covers every value the statistic
/// can take ([`Release::range`], from public quantities only: the bounds, never the data): such
/// a release says nothing its bounds did not. `name` prefixes each (a workload query's name).
pub fn warnings(published: &Published, name: Option<&str>) -> Vec<String> {
    // value ± bound covers the whole range: the release says nothing its public bounds did not.
    let wide = |r: &Release| {
        let (Some([low, high]), Some(value)) = (r.range, r.value) else { return None };
        let value = match value {
            Number::Integer(i) => i as f64,
            Number::Real(x) => x,
        };
        let e = r.noise.accuracy.error_bound;
        (value - e <= low && value + e >= high).then_some([low, high])
    };
    let prefix = name.map(|n| format!("{n}: ")).unwrap_or_default();
    let what = |r: &Release| match &r.column {
        Some(c) => format!("the {} of {}", r.query, c),
        None => format!("the {}", r.query),
    };
    let say = |r: &Release, [low, high]: [f64; 2], groups: String| {
        format!(
            "{prefix}{}{groups}: the {}% error bound ±{} covers every value it can take, [{}, {}] \
             (from the public bounds): the release is noise and says nothing the bounds did not; \
             a larger --eps (or more rows) narrows it, and `dpstat plan` shows by how much",
            what(r),
            percent(r.noise.accuracy.confidence),
            // Rounded up as a printed bound is: never below the one that covers the range.
            bound_up(r.noise.accuracy.error_bound, Rounding::Accuracy),
            real(low),
            real(high)
        )
    };
    match published {
        Published::One(r) => wide(r).map(|range| say(r, range, String::new())).into_iter().collect(),
        Published::Grouped(g) => {
            let wide_groups: Vec<(&str, &Release, [f64; 2])> = g
                .groups
                .iter()
                .filter_map(|group| {
                    wide(&group.release).map(|range| (group.key.as_str(), &group.release, range))
                })
                .collect();
            let Some(&(key, first, range)) = wide_groups.first() else { return vec![] };
            // Keys may be found in the data: escaped and cut as a message shows data.
            let keys: Vec<String> = wide_groups.iter().map(|w| w.0.to_string()).collect();
            let groups = match keys.as_slice() {
                [one] => format!(" in group {}", shown(one, 40)),
                _ => {
                    let listed: Vec<String> = keys.iter().take(5).map(|k| shown(k, 40)).collect();
                    let more = if keys.len() > 5 { ", …" } else { "" };
                    format!(
                        " in {} of {} groups ({}{more}; shown for {})",
                        keys.len(),
                        g.groups.len(),
                        listed.join(", "),
                        shown(key, 40)
                    )
                }
            };
            vec![say(first, range, groups)]
        }
    }
}

/// A bin as released: its proportion (`--normalize`), else its count.
fn bin_number(bin: &BinCount) -> Number {
    match bin.proportion {
        Some(p) => Number::Real(p),
        None => Number::Integer(bin.count),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_normalized_bin_is_its_proportion() {
        let bin = BinCount { bin: "a".into(), lower: None, upper: None, count: 7, proportion: None };
        assert_eq!(format_number(bin_number(&bin)), "7");
        let share = BinCount { proportion: Some(0.25), ..bin };
        assert_eq!(format_number(bin_number(&share)), "0.25");
    }
}
