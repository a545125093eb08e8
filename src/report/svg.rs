//! `--plot FILE.svg`: a [`Chart`] as SVG, drawn with `plotters` (only its SVG backend, no fonts
//! or bitmaps: text is left to the SVG viewer, and plotters escapes it). Horizontal bars with an
//! error bar of ± the stated accuracy bound, one panel per group or workload query, both axes
//! labelled, and a light grid at the value ticks only.
//!
//! Nothing here sees data: the chart comes from the finished, noisy release.

use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::report::chart::{self, Band, Chart, Panel};

/// The fill of every bar, and only of bars: the SVG writes it as [`BAR_FILL`].
pub const BAR_COLOR: RGBColor = RGBColor(0x2E, 0x6F, 0xAB);
/// [`BAR_COLOR`] as it appears in the SVG's `fill` attributes.
pub const BAR_FILL: &str = "#2E6FAB";
const ERROR_COLOR: RGBColor = RGBColor(0x22, 0x22, 0x22);
const GRID_COLOR: RGBColor = RGBColor(0xE4, 0xE4, 0xE4);
const AXIS_COLOR: RGBColor = RGBColor(0x55, 0x55, 0x55);
const NOTE_COLOR: RGBColor = RGBColor(0x44, 0x44, 0x44);

const WIDTH: u32 = 800;
/// Pixels per bar, within these limits as the number of bars grows.
const BAR_PIXELS: (u32, u32) = (4, 28);
/// The chart's title and legend line.
const TITLE: u32 = 64;
/// A panel's heading, and its value axis (tick labels and description).
const HEADING: u32 = 30;
const X_AXIS: u32 = 46;
const GAP: u32 = 14;

/// The SVG of a chart.
pub fn render(chart: &Chart) -> Result<String> {
    let total_bars: usize = chart.panels.iter().map(|p| p.bars.len().max(1)).sum();
    let per_bar = (6000 / total_bars.max(1) as u32).clamp(BAR_PIXELS.0, BAR_PIXELS.1);
    let heights: Vec<u32> = chart
        .panels
        .iter()
        .map(|p| {
            let heading = if p.heading.is_some() { HEADING } else { 0 };
            heading + per_bar * p.bars.len().max(2) as u32 + X_AXIS + GAP
        })
        .collect();
    let height = TITLE + heights.iter().sum::<u32>() + 8;
    let longest =
        chart.panels.iter().flat_map(|p| &p.bars).map(|b| b.label.chars().count()).max().unwrap_or(1);
    let label_area = (longest as u32 * 8 + 16).clamp(40, 320) + 26;
    let widest_text =
        chart.panels.iter().flat_map(|p| &p.bars).map(|b| b.text.chars().count()).max().unwrap_or(0);
    let text_area = (widest_text as u32 * 7 + 24).min(WIDTH / 3);
    let shared = chart.shared_scale.then(|| range(chart.panels.iter()));

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        root.draw(&Text::new(chart.title.clone(), (16, 12), ("sans-serif", 20).into_font()))
            .map_err(plot_error)?;
        root.draw(&Text::new(legend(chart), (16, 40), ("sans-serif", 13).into_font().color(&NOTE_COLOR)))
            .map_err(plot_error)?;
        let mut top = TITLE;
        for (panel, h) in chart.panels.iter().zip(&heights) {
            let area = root.clone().shrink((0, top), (WIDTH, *h));
            let (low, high) = shared.unwrap_or_else(|| range(std::iter::once(panel)));
            draw_panel(&area, panel, (low, high), per_bar, (label_area, text_area))?;
            top += h;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// The value axis of some panels: 0 and every bar's band, with a margin.
fn range<'a>(panels: impl Iterator<Item = &'a Panel>) -> (f64, f64) {
    let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
    let bars: Vec<_> = panels.flat_map(|p| &p.bars).collect();
    let low = bars.iter().map(|b| finite(b.band_ends().0)).fold(0.0, f64::min);
    let mut high = bars.iter().map(|b| finite(b.band_ends().1)).fold(0.0, f64::max);
    if high <= low {
        high = low + 1.0;
    }
    let pad = (high - low) * 0.05;
    (if low < 0.0 { low - pad } else { 0.0 }, if high > 0.0 { high + pad } else { 0.0 })
}

/// The legend under the title: what the bars and error bars are.
fn legend(chart: &Chart) -> String {
    let confidence = crate::report::figure::percent(chart.confidence);
    let bars = || chart.panels.iter().flat_map(|p| &p.bars);
    let errors: Vec<f64> =
        bars().filter_map(|b| if let Band::Value(e) = b.band { Some(e) } else { None }).collect();
    let mut parts = vec![];
    if let Some(&first) = errors.first() {
        if errors.iter().all(|&e| e == first) {
            let per_bin = if chart.panels.iter().any(|p| p.per_bin) { ", per bin" } else { "" };
            parts
                .push(format!("error bars ±{}: {confidence}% accuracy bound{per_bin}", chart::number(first)));
        } else {
            parts.push(format!("error bars: each value's {confidence}% accuracy bound"));
        }
    }
    if bars().any(|b| matches!(b.band, Band::Rank(_))) {
        parts.push(format!("quantiles: the {confidence}% bound is on rank (rows), not drawn"));
    }
    parts.push("noisy values only: nothing here is a true value".into());
    parts.join("; ")
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    (low, high): (f64, f64),
    per_bar: u32,
    (label_area, text_area): (u32, u32),
) -> Result<()> {
    let k = panel.bars.len().max(1);
    let mut builder = ChartBuilder::on(area);
    builder
        .margin_left(12)
        .margin_right(text_area)
        .margin_bottom(GAP)
        .x_label_area_size(X_AXIS)
        .y_label_area_size(label_area);
    if let Some(heading) = &panel.heading {
        builder.caption(heading, ("sans-serif", 16));
    }
    // plotters' integer ranges include their end: 0..k−1 gives the k rows (a single bar gets an
    // empty row above it, as 0..0 has no extent).
    let mut plot =
        builder.build_cartesian_2d(low..high, (0..k.max(2) - 1).into_segmented()).map_err(plot_error)?;
    let bars = &panel.bars;
    // Row j from the bottom holds bar k − 1 − j, so the first bar is at the top.
    let label = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(j) if *j < k => {
            bars.get(k - 1 - j).map(|b| b.label.clone()).unwrap_or_default()
        }
        _ => String::new(),
    };
    plot.configure_mesh()
        .disable_y_mesh()
        .x_max_light_lines(0)
        .bold_line_style(GRID_COLOR.stroke_width(1))
        .axis_style(AXIS_COLOR.stroke_width(1))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 14))
        .x_labels(8)
        .y_labels(k)
        .y_label_formatter(&label)
        .x_label_formatter(&|x| chart::number(*x))
        .x_desc(&panel.measure)
        .y_desc(&panel.category)
        .draw()
        .map_err(plot_error)?;
    let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
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
    // A zero line where negative noisy values are drawn, so bars can be read from it.
    if low < 0.0 {
        let zero = [(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Last)];
        plot.draw_series([PathElement::new(zero, AXIS_COLOR.stroke_width(1))]).map_err(plot_error)?;
    }
    // Error bars: a line over the band with a short tick at each end (no marker at the value,
    // which is where the bar ends).
    let tick = (per_bar / 3).max(3) as i32;
    let style = ERROR_COLOR.stroke_width(2);
    for (j, b) in rows() {
        let (low, high) = b.band_ends();
        if low >= high {
            continue;
        }
        let y = SegmentValue::CenterOf(j);
        let ticks = [low, high]
            .map(|x| EmptyElement::at((x, y.clone())) + PathElement::new(vec![(0, -tick), (0, tick)], style));
        plot.draw_series([PathElement::new(vec![(low, y.clone()), (high, y.clone())], style)])
            .map_err(plot_error)?;
        plot.draw_series(ticks).map_err(plot_error)?;
    }
    // Each bar's value and bound as text, in a column at the right, as the terminal chart has.
    let (base_x, base_y) = area.get_base_pixel();
    let font = ("sans-serif", 13).into_font().color(&NOTE_COLOR).pos(Pos::new(HPos::Right, VPos::Center));
    for (j, b) in rows() {
        let (_, y) = plot.backend_coord(&(low, SegmentValue::CenterOf(j)));
        let at = (WIDTH as i32 - 12 - base_x, y - base_y);
        area.draw(&Text::new(b.text.clone(), at, font.clone())).map_err(plot_error)?;
    }
    Ok(())
}

fn plot_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing the plot: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::chart::Bar;

    fn bar(label: &str, value: f64, band: Band) -> Bar {
        Bar { label: label.into(), value, band, range: None, text: format!("{value} ±3") }
    }

    #[test]
    fn one_bar_per_value_escaped_labels_and_one_error_bar_per_band() {
        let panel = |heading: Option<&str>, bars| Panel {
            heading: heading.map(String::from),
            category: "region".into(),
            measure: "noisy count".into(),
            per_bin: true,
            bars,
        };
        let chart = Chart {
            title: "t <&>".into(),
            confidence: 0.95,
            panels: vec![
                panel(
                    None,
                    vec![bar("a&b <c>", 10.0, Band::Value(3.0)), bar("north", -2.0, Band::Value(3.0))],
                ),
                panel(Some("second"), vec![bar("q=0.5", 4.0, Band::Rank(7.0))]),
            ],
            shared_scale: false,
        };
        let svg = render(&chart).unwrap();
        assert_eq!(svg.matches(&format!("fill=\"{BAR_FILL}\"")).count(), 3, "{svg}");
        assert!(svg.contains("a&amp;b &lt;c&gt;") && svg.contains("t &lt;&amp;&gt;"), "{svg}");
        // A band is a line and two end ticks; a rank bound draws none.
        assert_eq!(svg.matches("stroke=\"#222222\"").count(), 2 * 3, "{svg}");
        for label in ["region", "noisy count", "second", "10 ±3"] {
            assert!(svg.contains(&format!(">\n{label}\n</text>")), "{label}: {svg}");
        }
    }
}
