//! `--plot FILE.svg`: an SVG bar chart of a release's noisy values with error bars at the
//! stated accuracy bound, drawn with `plotters` (only its SVG backend, no fonts or bitmaps:
//! text is left to the SVG viewer, and plotters escapes it).
//!
//! Like the terminal chart it draws a list of [`Bar`]s (label, noisy value, error), so a
//! histogram today and a group-by release later draw the same way. Nothing here sees data:
//! the bars come from the finished, noisy release.

use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use crate::report::chart::{self, Bar};
use crate::report::release::Release;

/// The fill of every bar, and only of bars: the SVG writes it as [`BAR_FILL`].
pub const BAR_COLOR: RGBColor = RGBColor(0x2E, 0x6F, 0xAB);
/// [`BAR_COLOR`] as it appears in the SVG's `fill` attributes.
pub const BAR_FILL: &str = "#2E6FAB";
const ERROR_COLOR: RGBColor = RGBColor(0x22, 0x22, 0x22);

const WIDTH: u32 = 800;
/// Pixels per bar, within these limits as the number of bars grows.
const BAR_PIXELS: (u32, u32) = (4, 28);

/// The SVG of a histogram release; `None` for a release without bins.
pub fn render_release(release: &Release) -> Option<Result<String>> {
    let bars = chart::bars_of(release)?;
    let title = chart::title_of(release);
    Some(render(&title[0], &format!("noisy count; error bars {}", error_note(release)), &bars))
}

fn error_note(release: &Release) -> String {
    let confidence = release.noise.accuracy.confidence * 100.0;
    format!(
        "±{} ({}% accuracy bound, {})",
        release.noise.accuracy.error_bound,
        (confidence * 1e9).round() / 1e9,
        release.noise.accuracy.scope
    )
}

/// Horizontal bars, the first bar at the top, each with an error bar value ± error.
pub fn render(title: &str, axis: &str, bars: &[Bar]) -> Result<String> {
    let k = bars.len().max(1);
    let per_bar = (6000 / k as u32).clamp(BAR_PIXELS.0, BAR_PIXELS.1);
    let height = 120 + per_bar * k as u32;
    let longest = bars.iter().map(|b| b.label.chars().count()).max().unwrap_or(1) as u32;
    let label_area = (longest * 8 + 16).clamp(40, 320);
    let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
    let low = bars.iter().map(|b| finite(b.value - b.error)).fold(0.0, f64::min);
    let mut high = bars.iter().map(|b| finite(b.value + b.error)).fold(0.0, f64::max);
    if high <= low {
        high = low + 1.0;
    }
    let pad = (high - low) * 0.05;
    let (low, high) = (if low < 0.0 { low - pad } else { 0.0 }, high + pad);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut plot = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(label_area)
            // plotters' integer ranges include their end: 0..k−1 gives the k rows (a single bar
            // gets an empty row above it, as 0..0 has no extent).
            .build_cartesian_2d(low..high, (0..k.max(2) - 1).into_segmented())
            .map_err(plot_error)?;
        // Row j from the bottom holds bar k − 1 − j, so the first bar is at the top.
        let label = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(j) if *j < k => {
                bars.get(k - 1 - j).map(|b| b.label.clone()).unwrap_or_default()
            }
            _ => String::new(),
        };
        plot.configure_mesh()
            .disable_y_mesh()
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 15))
            .y_labels(k)
            .y_label_formatter(&label)
            .x_label_formatter(&|x| chart::number(*x))
            .x_desc(axis)
            .draw()
            .map_err(plot_error)?;
        let rows = || bars.iter().enumerate().map(|(i, b)| (k - 1 - i, b));
        plot.draw_series(rows().map(|(j, b)| {
            let mut rect = Rectangle::new(
                [(0.0, SegmentValue::Exact(j)), (finite(b.value), SegmentValue::Exact(j + 1))],
                BAR_COLOR.filled(),
            );
            rect.set_margin(per_bar / 6, per_bar / 6, 0, 0);
            rect
        }))
        .map_err(plot_error)?;
        plot.draw_series(rows().map(|(j, b)| {
            let v = finite(b.value);
            let e = finite(b.error);
            ErrorBar::new_horizontal(
                SegmentValue::CenterOf(j),
                v - e,
                v,
                v + e,
                ERROR_COLOR.stroke_width(2),
                per_bar / 2,
            )
        }))
        .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

fn plot_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing the plot: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_per_value_and_escaped_labels() {
        let bars = vec![
            Bar { label: "a&b <c>".into(), value: 10.0, error: 3.0 },
            Bar { label: "north".into(), value: -2.0, error: 3.0 },
            Bar { label: "other".into(), value: 0.0, error: 3.0 },
        ];
        let svg = render("t", "x", &bars).unwrap();
        assert_eq!(svg.matches(&format!("fill=\"{BAR_FILL}\"")).count(), 3, "{svg}");
        assert!(svg.contains("a&amp;b &lt;c&gt;"), "{svg}");
    }
}
