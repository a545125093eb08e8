//! Rendering a release as text or JSON into a buffer. Nothing is written to stdout until the
//! whole release is rendered, so a failure leaves stdout empty.

use anyhow::Result;

use crate::error::bad_input;
use crate::numeric::format::real;
use crate::report::chart;
use crate::report::release::{GroupedRelease, Number, Published, Release};

/// How a release is printed (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// One number on a line; a histogram as CSV `bin,count`.
    #[default]
    Text,
    /// One JSON object with the release and how to read it.
    Json,
    /// Histograms only: a bar chart of the noisy counts with their ± accuracy band.
    Chart,
}

/// The bytes to print for a release.
pub fn render(published: &Published, format: Format) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match (format, published) {
        (Format::Json, _) => {
            serde_json::to_writer(&mut out, published)?;
            out.push(b'\n');
        }
        (Format::Text, Published::One(release)) => render_text(release, &mut out)?,
        (Format::Text, Published::Grouped(grouped)) => render_grouped_text(grouped, &mut out)?,
        (Format::Chart, Published::One(release)) => {
            let chart = chart::render_release(release, chart::terminal_width()).ok_or_else(|| {
                bad_input("--format chart draws histograms; use --format text or --format json")
            })?;
            out.extend_from_slice(chart.as_bytes());
        }
        (Format::Chart, Published::Grouped(_)) => {
            return Err(bad_input("--format chart draws one histogram; with --by use --format text or json"));
        }
    }
    Ok(out)
}

/// One CSV with the key first: `key,value` for scalars, `key,bin,count` for histograms,
/// `key,q,value` for several quantile levels.
fn render_grouped_text(grouped: &GroupedRelease, out: &mut Vec<u8>) -> Result<()> {
    let histogram = grouped.groups.iter().any(|g| g.release.bins.is_some());
    let levels = grouped.groups.iter().any(|g| g.release.value.is_none() && g.release.quantiles.is_some());
    let mut writer = csv::Writer::from_writer(out);
    if levels {
        writer.write_record(["key", "q", "value"])?;
        for group in &grouped.groups {
            for q in group.release.quantiles.iter().flatten() {
                let (level, value) = (format_number(Number::Real(q.q)), format_number(Number::Real(q.value)));
                writer.write_record([group.key.as_str(), &level, &value])?;
            }
        }
        writer.flush()?;
        return Ok(());
    }
    if histogram {
        writer.write_record(["key", "bin", "count"])?;
    } else {
        writer.write_record(["key", "value"])?;
    }
    for group in &grouped.groups {
        if let Some(value) = group.release.value {
            writer.write_record([group.key.as_str(), &format_number(value)])?;
        }
        for bin in group.release.bins.iter().flatten() {
            writer.write_record([group.key.as_str(), bin.bin.as_str(), &bin.count.to_string()])?;
        }
    }
    writer.flush()?;
    Ok(())
}

/// Scalars: one number on one line. Histograms: CSV with header `bin,count`.
fn render_text(release: &Release, out: &mut Vec<u8>) -> Result<()> {
    if let Some(value) = release.value {
        out.extend_from_slice(format_number(value).as_bytes());
        out.push(b'\n');
    }
    if let (None, Some(quantiles)) = (release.value, &release.quantiles) {
        let mut writer = csv::Writer::from_writer(&mut *out);
        writer.write_record(["q", "value"])?;
        for q in quantiles {
            writer.write_record([format_number(Number::Real(q.q)), format_number(Number::Real(q.value))])?;
        }
        writer.flush()?;
    }
    if let Some(bins) = &release.bins {
        let mut writer = csv::Writer::from_writer(out);
        writer.write_record(["bin", "count"])?;
        for bin in bins {
            writer.write_record([bin.bin.as_str(), &bin.count.to_string()])?;
        }
        writer.flush()?;
    }
    Ok(())
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
    }
}
