//! `--plot FILE.svg`: a [`Chart`] as SVG, written directly (no fonts or bitmaps: text is left to
//! the SVG viewer, and escaped here). What each panel [`Kind`] draws:
//!
//! - a histogram of numeric bins: adjacent rectangles whose horizontal extent is each bin's
//!   edges, on an x axis of the column's values (ticks, the column's name as its title), a y axis
//!   `noisy count` with ticks, and an error bar per bin at the accuracy bound;
//! - counts of categories or groups: horizontal bars from zero with their error bars, and (when
//!   the chart asks) a panel of shares: one 100% stacked bar per panel, each category's share of
//!   the drawn noisy total;
//! - any other value (means, sums, quantiles…): a dot plot, one row per level or group, a dot at
//!   the value and a whisker to ± its bound, on an axis that need not hold 0. A quantile's bound
//!   is in rows of rank and has no whisker; its label states it.
//!
//! `other` is drawn apart (below a dashed rule, or as its own panel), in grey, and left out of
//! the scale; a value beyond the scale is drawn clipped to the axis end, with its number.
//! Elements carry a `class` (`bin`, `bar`, `point`, `error`, `other`, `share`, `tick-x`, …) so
//! that what is drawn can be checked.
//!
//! Nothing here sees data: the chart comes from the finished, noisy release.

use std::fmt::Write;

use anyhow::Result;

use crate::report::chart::{self, nice_step, number, Band, Bar, Chart, Kind, Panel};
use crate::report::figure::percent;

/// The fill of every listed bar and bin, and only of them: the SVG writes it as [`BAR_FILL`].
pub const BAR_FILL: &str = "#2E6FAB";
/// The fill of `other`'s bar or bins, and of its hollow point's outline.
pub const OTHER_FILL: &str = "#B4B4B4";
/// The second fill of alternate share segments.
const SHARE_FILL: &str = "#8CB3D9";
/// The stroke of every error bar of a listed value.
pub const ERROR_STROKE: &str = "#222222";
const OTHER_ERROR: &str = "#7A7A7A";
const POINT_FILL: &str = "#1B4F80";
const GRID: &str = "#E4E4E4";
const AXIS: &str = "#555555";
const NOTE: &str = "#444444";
const MUTED: &str = "#8A8A8A";

const WIDTH: f64 = 800.0;
const MARGIN: f64 = 16.0;
/// Pixels per row of bars or points, within these limits as the number of rows grows.
const ROW: (f64, f64) = (6.0, 28.0);
/// A histogram's plot height: taller when it is one of few panels.
const HISTOGRAM: (f64, f64) = (150.0, 230.0);
const HEADING: f64 = 26.0;
/// Below a plot: tick labels and the axis title.
const X_AXIS: f64 = 44.0;
/// Left of a plot: the rotated axis title.
const Y_TITLE: f64 = 22.0;
const GAP: f64 = 18.0;
/// Between the listed rows and `other`'s.
const OTHER_GAP: f64 = 14.0;
const SHARE_ROW: f64 = 24.0;

/// The SVG of a chart.
pub fn render(chart: &Chart) -> Result<String> {
    let mut svg = Svg::default();
    let mut y = MARGIN;
    svg.text("title", MARGIN, y + 18.0, "start", 20.0, "#000000", &chart.title);
    y += 30.0;
    for line in wrap(&legend(chart), 112) {
        svg.text("legend", MARGIN, y + 12.0, "start", 13.0, NOTE, &line);
        y += 18.0;
    }
    y += 8.0;
    let rows: usize = chart.panels.iter().filter(|p| p.kind != Kind::Histogram).map(|p| p.bars.len()).sum();
    let layout = Layout::of(chart, rows);
    let shared = chart.shared_scale.then(|| Scales::of(chart.panels.iter()));
    for panel in &chart.panels {
        let own;
        let scales = match &shared {
            Some(s) => s,
            None => {
                own = Scales::of(std::iter::once(panel));
                &own
            }
        };
        y = match panel.kind {
            Kind::Histogram => histogram(&mut svg, panel, scales, &layout, y),
            Kind::Bars | Kind::Points => rows_panel(&mut svg, panel, scales, &layout, y),
        };
    }
    if chart.shares {
        y = shares_panel(&mut svg, chart, &layout, y);
    }
    let height = (y + MARGIN - GAP).ceil();
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\">\n\
         <rect class=\"background\" x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#FFFFFF\"/>\n"
    );
    out.push_str(&svg.body);
    out.push_str("</svg>\n");
    Ok(out)
}

/// Widths shared by the panels of a chart.
struct Layout {
    /// Room for the row labels of bar and point panels.
    labels: f64,
    /// Room for the column of values at the right.
    texts: f64,
    per_row: f64,
    histogram: f64,
}

impl Layout {
    fn of(chart: &Chart, rows: usize) -> Layout {
        let bars = || chart.panels.iter().filter(|p| p.kind != Kind::Histogram).flat_map(|p| &p.bars);
        let longest = bars().map(|b| b.label.chars().count()).max().unwrap_or(0);
        let widest = bars().map(|b| b.text.chars().count()).max().unwrap_or(0);
        let histograms = chart.panels.iter().filter(|p| p.kind == Kind::Histogram).count();
        Layout {
            labels: (longest as f64 * 7.5 + 12.0).clamp(30.0, 260.0),
            texts: (widest as f64 * 7.5 + 20.0).min(WIDTH / 3.0),
            per_row: (6000.0 / rows.max(1) as f64).clamp(ROW.0, ROW.1),
            histogram: if histograms <= 2 { HISTOGRAM.1 } else { HISTOGRAM.0 },
        }
    }
}

/// The value ranges of some panels, from all but `other`'s values.
struct Scales {
    /// Bars from zero: spans 0 and every band.
    counts: (f64, f64),
    /// Points: spans every band, not necessarily 0.
    points: (f64, f64),
    /// Numeric bins: from the lowest edge to the highest.
    edges: (f64, f64),
}

impl Scales {
    fn of<'a>(panels: impl Iterator<Item = &'a Panel>) -> Scales {
        let bars: Vec<&Bar> = panels.flat_map(|p| &p.bars).collect();
        let scaled = chart::scaled(&bars);
        let finite = |x: f64| x.is_finite();
        let bands =
            || scaled.iter().flat_map(|b| [b.band_ends().0, b.band_ends().1, b.value]).filter(|&x| finite(x));
        let (low, high) = bands().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(x), h.max(x)));
        let (low, high) = if low <= high { (low, high) } else { (0.0, 1.0) };
        let counts = (low.min(0.0), high.max(0.0));
        let counts = if counts.1 > counts.0 { counts } else { (counts.0, counts.0 + 1.0) };
        let points = if high > low {
            let pad = (high - low) * 0.04;
            (low - pad, high + pad)
        } else {
            let room = (low.abs() * 0.1).max(1.0);
            (low - room, high + room)
        };
        // Never widened past the values the statistics can take (a mean of [0, U] is not drawn
        // on an axis from -20000).
        let ranges: Vec<[f64; 2]> = scaled.iter().filter_map(|b| b.range).collect();
        let points = if ranges.len() == scaled.len() && !ranges.is_empty() {
            let lo = ranges.iter().map(|r| r[0]).fold(f64::INFINITY, f64::min);
            let hi = ranges.iter().map(|r| r[1]).fold(f64::NEG_INFINITY, f64::max);
            let clamped = (points.0.max(lo), points.1.min(hi));
            if clamped.0 < clamped.1 {
                clamped
            } else {
                points
            }
        } else {
            points
        };
        let edges = scaled
            .iter()
            .filter_map(|b| b.edges)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), [a, b]| (l.min(a), h.max(b)));
        let edges = if edges.0 < edges.1 { edges } else { (0.0, 1.0) };
        Scales { counts, points, edges }
    }
}

/// A linear map of values in [low, high] to pixels in [from, to] (`to` < `from` for a y axis).
#[derive(Clone, Copy)]
struct Axis {
    low: f64,
    high: f64,
    from: f64,
    to: f64,
}

impl Axis {
    /// The axis over `range` widened to whole ticks (about `n` of them), and those ticks; with
    /// `exact`, the range is kept as given (a histogram's outer edges) and only ticks inside it drawn.
    fn nice(range: (f64, f64), n: usize, (from, to): (f64, f64), exact: bool) -> (Axis, Vec<f64>) {
        let step = nice_step((range.1 - range.0) / n as f64);
        let (low, high) =
            if exact { range } else { ((range.0 / step).floor() * step, (range.1 / step).ceil() * step) };
        let first = (low / step).ceil() as i64;
        let last = (high / step).floor() as i64;
        let ticks = (first..=last).map(|i| i as f64 * step).collect();
        (Axis { low, high, from, to }, ticks)
    }

    /// The pixel of `x`, rounded to 1/100 px as written.
    fn at(&self, x: f64) -> f64 {
        let span = self.high - self.low;
        px(self.from + (x - self.low) / span * (self.to - self.from))
    }

    /// `x` within the axis.
    fn clamp(&self, x: f64) -> f64 {
        x.clamp(self.low, self.high)
    }
}

fn px(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A numeric bin histogram: contiguous bins on the column's value axis.
fn histogram(svg: &mut Svg, panel: &Panel, scales: &Scales, layout: &Layout, mut y: f64) -> f64 {
    let muted = panel.bars.iter().all(|b| b.other);
    y = heading(svg, panel, muted, y);
    let (left, right) = (MARGIN + Y_TITLE + 52.0, WIDTH - MARGIN - 8.0);
    let (top, bottom) = (y + 8.0, y + 8.0 + layout.histogram);
    let (ya, yticks) = Axis::nice(scales.counts, 5, (bottom, top), false);
    let bins: Vec<&Bar> = panel.bars.iter().filter(|b| b.edges.is_some()).collect();
    let (xa, mut xticks) = Axis::nice(scales.edges, 8, (left, right), true);
    // The bin edges as ticks where they fit (their labels ~7 px per character apart).
    let edges: Vec<f64> = bins
        .iter()
        .filter_map(|b| b.edges.map(|e| e[0]))
        .chain(bins.last().and_then(|b| b.edges.map(|e| e[1])))
        .collect();
    let widest = edges.iter().map(|&e| number(e).chars().count()).max().unwrap_or(1) as f64 * 7.0 + 6.0;
    if edges.len() >= 2 && edges.windows(2).all(|w| xa.at(w[1]) - xa.at(w[0]) >= widest) {
        xticks = edges;
    }
    for &t in &yticks {
        svg.line("grid", left, ya.at(t), right, ya.at(t), GRID, 1.0, false);
        svg.text("tick-y", left - 6.0, ya.at(t) + 4.5, "end", 12.0, NOTE, &number(t));
    }
    let (fill, error) = if muted { (OTHER_FILL, OTHER_ERROR) } else { (BAR_FILL, ERROR_STROKE) };
    for bar in &bins {
        let [lo, hi] = bar.edges.unwrap_or([0.0, 0.0]);
        let (x0, x1) = (xa.at(lo), xa.at(hi));
        let v = ya.clamp(bar.value);
        let class = if bar.other { "bin other" } else { "bin" };
        svg.rect(
            class,
            x0,
            ya.at(v.max(0.0)),
            x1,
            ya.at(v.min(0.0)),
            fill,
            Some(&format!("{}: {}", bar.label, bar.text)),
        );
        let (b0, b1) = bar.band_ends();
        let (b0, b1) = (ya.clamp(b0), ya.clamp(b1));
        if b0 < b1 {
            let cx = px((x0 + x1) / 2.0);
            let tick = ((x1 - x0) * 0.2).min(6.0);
            let class = if bar.other { "error other" } else { "error" };
            svg.line(class, cx, ya.at(b0), cx, ya.at(b1), error, 1.5, false);
            let (e0, e1) = bar.band_ends();
            for (end, cut) in [(b0, b0 != e0), (b1, b1 != e1)] {
                if !cut {
                    svg.line(class, cx - tick, ya.at(end), cx + tick, ya.at(end), error, 1.5, false);
                }
            }
        }
        if bar.value > ya.high || bar.value < ya.low {
            let at = if bar.value > ya.high { top - 4.0 } else { bottom + 12.0 };
            svg.text("clipped", px((x0 + x1) / 2.0), at, "middle", 11.0, NOTE, &number(bar.value));
        }
    }
    if ya.low < 0.0 {
        svg.line("zero", left, ya.at(0.0), right, ya.at(0.0), AXIS, 1.0, false);
    }
    svg.line("axis", left, bottom, right, bottom, AXIS, 1.0, false);
    svg.line("axis", left, top, left, bottom, AXIS, 1.0, false);
    for &t in &xticks {
        svg.line("tick", xa.at(t), bottom, xa.at(t), bottom + 4.0, AXIS, 1.0, false);
        svg.text("tick-x", xa.at(t), bottom + 17.0, "middle", 12.0, NOTE, &number(t));
    }
    axis_titles(svg, [left, right, top, bottom], &panel.category, &panel.measure)
}

/// The titles of a plot area's axes (`left`, `right`, `top`, `bottom`): `x` under it, `y`
/// turned along its left side; returns where the next panel starts.
fn axis_titles(svg: &mut Svg, [left, right, top, bottom]: [f64; 4], x: &str, y: &str) -> f64 {
    svg.text("axis-title", px((left + right) / 2.0), bottom + 36.0, "middle", 14.0, "#000000", x);
    svg.vtext("axis-title", MARGIN + 8.0, px((top + bottom) / 2.0), 14.0, y);
    bottom + X_AXIS + GAP
}

/// Rows of bars from zero, or of points with whiskers, labelled at the left, with each value
/// and bound in a column at the right.
fn rows_panel(svg: &mut Svg, panel: &Panel, scales: &Scales, layout: &Layout, mut y: f64) -> f64 {
    let muted = !panel.bars.is_empty() && panel.bars.iter().all(|b| b.other);
    y = heading(svg, panel, muted, y);
    let points = panel.kind == Kind::Points;
    let (left, right) = (MARGIN + Y_TITLE + layout.labels, WIDTH - MARGIN - layout.texts);
    let listed = panel.bars.iter().filter(|b| !b.other).count();
    let apart = panel.bars.len() - listed;
    let gap = if listed > 0 && apart > 0 { OTHER_GAP } else { 0.0 };
    let row = layout.per_row;
    let top = y + 4.0;
    let bottom = top + row * panel.bars.len().max(1) as f64 + gap;
    let range = if points { scales.points } else { scales.counts };
    let (xa, ticks) = Axis::nice(range, 6, (left, right), false);
    for &t in &ticks {
        svg.line("grid", xa.at(t), top, xa.at(t), bottom, GRID, 1.0, false);
        svg.line("tick", xa.at(t), bottom, xa.at(t), bottom + 4.0, AXIS, 1.0, false);
        svg.text("tick-x", xa.at(t), bottom + 17.0, "middle", 12.0, NOTE, &number(t));
    }
    if !points && xa.low < 0.0 {
        svg.line("zero", xa.at(0.0), top, xa.at(0.0), bottom, AXIS, 1.0, false);
    }
    if gap > 0.0 {
        let at = px(top + row * listed as f64 + gap / 2.0);
        svg.line("other-rule", MARGIN + Y_TITLE, at, WIDTH - MARGIN, at, MUTED, 1.0, true);
    }
    let rows = Rows { xa, left, row, points };
    for (i, bar) in panel.bars.iter().enumerate() {
        let cy = px(top + row * (i as f64 + 0.5) + if bar.other { gap } else { 0.0 });
        rows.draw(svg, bar, cy);
    }
    svg.line("axis", left, bottom, right, bottom, AXIS, 1.0, false);
    axis_titles(svg, [left, right, top, bottom], &panel.measure, &panel.category)
}

/// What every row of a bars or points panel is drawn against: the value axis, where the plot
/// starts (the labels end there), the height of a row, and whether the rows are points (else
/// bars from zero).
struct Rows {
    xa: Axis,
    left: f64,
    row: f64,
    points: bool,
}

impl Rows {
    /// One row centred at `cy`: its label, its value and bound at the right, its bar or point,
    /// its error bar, and a mark where it lies beyond the scale.
    fn draw(&self, svg: &mut Svg, bar: &Bar, cy: f64) {
        let (xa, row, points) = (self.xa, self.row, self.points);
        let (fill, error, ink) =
            if bar.other { (OTHER_FILL, OTHER_ERROR, MUTED) } else { (BAR_FILL, ERROR_STROKE, "#000000") };
        let font = (row * 0.55).clamp(9.0, 14.0);
        svg.text("label", self.left - 8.0, cy + font / 3.0, "end", font, ink, &bar.label);
        svg.text(
            "value",
            WIDTH - MARGIN,
            cy + font / 3.0,
            "end",
            font.min(13.0),
            if bar.other { MUTED } else { NOTE },
            &bar.text,
        );
        let v = xa.clamp(bar.value);
        let title = format!("{}: {}", bar.label, bar.text);
        let other = if bar.other { " other" } else { "" };
        let half = row / 3.0;
        if !points {
            svg.rect(
                &format!("bar{other}"),
                xa.at(v.min(0.0)),
                cy - half,
                xa.at(v.max(0.0)),
                cy + half,
                fill,
                Some(&title),
            );
        }
        self.error_bar(svg, bar, cy, &format!("error{other}"), error);
        if points && v == bar.value {
            let r = (row / 5.0).clamp(2.0, 5.0);
            let (fill, stroke) = if bar.other { ("#FFFFFF", OTHER_FILL) } else { (POINT_FILL, POINT_FILL) };
            svg.circle(&format!("point{other}"), xa.at(v), cy, r, fill, stroke, &title);
        }
        if v != bar.value {
            self.clipped(svg, bar, v, cy, other);
        }
    }

    /// The whisker of a value's bound (a quantile's, on rank, has none), ticked at each end the
    /// axis does not cut.
    fn error_bar(&self, svg: &mut Svg, bar: &Bar, cy: f64, class: &str, stroke: &str) {
        let xa = self.xa;
        let (b0, b1) = bar.band_ends();
        let (b0, b1) = (xa.clamp(b0), xa.clamp(b1));
        if matches!(bar.band, Band::Value(_)) && b0 < b1 {
            let tick = (self.row / 4.0).max(2.0);
            svg.line(class, xa.at(b0), cy, xa.at(b1), cy, stroke, 1.5, false);
            // An end cut by the axis has no tick: the band goes on.
            let (e0, e1) = bar.band_ends();
            for (end, cut) in [(b0, b0 != e0), (b1, b1 != e1)] {
                if !cut {
                    svg.line(class, xa.at(end), cy - tick, xa.at(end), cy + tick, stroke, 1.5, false);
                }
            }
        }
    }

    /// A value beyond the scale (only `other` can be), clamped to `v` at the axis end: an
    /// arrowhead at the edge, and the number.
    fn clipped(&self, svg: &mut Svg, bar: &Bar, v: f64, cy: f64, other: &str) {
        let (xa, row, points) = (self.xa, self.row, self.points);
        let (x, dir) = (xa.at(v), if bar.value > v { 1.0 } else { -1.0 });
        let (s, h) = (6.0 * dir, (row / 3.0).min(6.0));
        let _ = writeln!(
            svg.body,
            "<path class=\"clip{other}\" d=\"M{} {} L{} {} L{} {} Z\" fill=\"{}\"/>",
            px(x - s),
            px(cy - h),
            px(x),
            cy,
            px(x - s),
            px(cy + h),
            if points { OTHER_FILL } else { NOTE }
        );
        let anchor = if dir > 0.0 { "end" } else { "start" };
        // Above the bar, or beside the point's arrow.
        let above = if points { h } else { row / 3.0 };
        svg.text("clipped", px(x - 9.0 * dir), px(cy - above - 3.0), anchor, 11.0, NOTE, &number(bar.value));
    }
}

/// Each counts panel's categories as shares of its drawn noisy total: one 100% stacked bar per
/// panel, `other` last and grey, every segment labelled where it fits and listed where not.
fn shares_panel(svg: &mut Svg, chart: &Chart, layout: &Layout, mut y: f64) -> f64 {
    let rows: Vec<(&Panel, Vec<f64>)> = chart
        .panels
        .iter()
        .filter(|p| p.kind == Kind::Bars)
        .filter_map(|p| Some((p, chart::shares(p)?)))
        .collect();
    if rows.is_empty() {
        return y;
    }
    svg.text(
        "heading",
        MARGIN,
        y + 16.0,
        "start",
        15.0,
        "#000000",
        "share of the drawn noisy total (counts below 0 as 0)",
    );
    y += HEADING;
    let names: Vec<String> =
        rows.iter().map(|(p, _)| p.heading.clone().unwrap_or_else(|| "all".into())).collect();
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as f64 * 7.5 + 12.0;
    let (left, right) = (MARGIN + layout.labels.max(longest).min(WIDTH / 3.0), WIDTH - MARGIN - layout.texts);
    let xa = Axis { low: 0.0, high: 1.0, from: left, to: right };
    let top = y + 4.0;
    let bottom = top + SHARE_ROW * rows.len() as f64;
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        svg.line("grid", xa.at(t), top, xa.at(t), bottom, GRID, 1.0, false);
        svg.text("tick-x", xa.at(t), bottom + 17.0, "middle", 12.0, NOTE, &format!("{}%", t * 100.0));
    }
    let mut unlabelled = vec![];
    for (r, (panel, shares)) in rows.iter().enumerate() {
        let cy = top + SHARE_ROW * (r as f64 + 0.5);
        svg.text("label", left - 8.0, px(cy + 4.5), "end", 13.0, "#000000", &names[r]);
        unlabelled.extend(share_segments(svg, xa, cy, panel, shares));
    }
    svg.line("axis", left, bottom, right, bottom, AXIS, 1.0, false);
    too_narrow_note(svg, &unlabelled, bottom + 36.0) + GAP
}

/// One panel's 100% stacked bar, centred at `cy`: a segment per category with a share above 0,
/// listed ones in alternate fills and `other` grey, each labelled inside where its text fits;
/// returns the labels that did not fit.
fn share_segments(svg: &mut Svg, xa: Axis, cy: f64, panel: &Panel, shares: &[f64]) -> Vec<String> {
    let mut unlabelled = vec![];
    let mut at = 0.0;
    let mut listed = 0;
    for (bar, &share) in panel.bars.iter().zip(shares) {
        let (x0, x1) = (xa.at(at), xa.at(at + share));
        at += share;
        if share <= 0.0 {
            continue;
        }
        let fill = if bar.other {
            OTHER_FILL
        } else {
            listed += 1;
            if listed % 2 == 1 {
                BAR_FILL
            } else {
                SHARE_FILL
            }
        };
        let text = format!("{} {}", bar.label, chart::share_text(share));
        let class = if bar.other { "share other" } else { "share" };
        svg.rect(class, x0, px(cy - SHARE_ROW * 0.36), x1, px(cy + SHARE_ROW * 0.36), fill, Some(&text));
        if text.chars().count() as f64 * 6.6 + 6.0 <= x1 - x0 {
            let ink = if fill == BAR_FILL { "#FFFFFF" } else { "#000000" };
            svg.text("share-label", px((x0 + x1) / 2.0), px(cy + 4.0), "middle", 11.0, ink, &text);
        } else {
            unlabelled.push(text);
        }
    }
    unlabelled
}

/// The share labels too narrow to fit their segments, listed under the shares' axis from `y`,
/// so that none is lost; returns where the list ends.
fn too_narrow_note(svg: &mut Svg, unlabelled: &[String], mut y: f64) -> f64 {
    if !unlabelled.is_empty() {
        for line in wrap(&[format!("too narrow to label: {}", unlabelled.join(", "))], 112) {
            svg.text("note", MARGIN + Y_TITLE, y, "start", 12.0, NOTE, &line);
            y += 16.0;
        }
    }
    y
}

fn heading(svg: &mut Svg, panel: &Panel, muted: bool, y: f64) -> f64 {
    match &panel.heading {
        Some(h) => {
            svg.text("heading", MARGIN, y + 16.0, "start", 15.0, if muted { MUTED } else { "#000000" }, h);
            y + HEADING
        }
        None => y,
    }
}

/// What the marks are, as parts to wrap under the title.
fn legend(chart: &Chart) -> Vec<String> {
    let confidence = percent(chart.confidence);
    let bars = || chart.panels.iter().flat_map(|p| &p.bars);
    let errors: Vec<f64> =
        bars().filter_map(|b| if let Band::Value(e) = b.band { Some(e) } else { None }).collect();
    let mut parts = vec![];
    if let Some(&first) = errors.first() {
        if errors.iter().all(|&e| e == first) {
            let per_bin = if chart.panels.iter().any(|p| p.per_bin) { ", per bin" } else { "" };
            parts.push(format!("error bars ±{}: {confidence}% accuracy bound{per_bin}", number(first)));
        } else {
            parts.push(format!("error bars: each value's {confidence}% accuracy bound"));
        }
    }
    if bars().any(|b| matches!(b.band, Band::Rank(_))) {
        parts.push(format!(
            "quantiles: the {confidence}% bound is on rank (rows), not on the value: no whisker"
        ));
    }
    if bars().any(|b| b.other) {
        parts.push(
            "other (grey): rows outside the listed categories or keys, drawn apart and not in the scale"
                .into(),
        );
    }
    parts.push("noisy values only: nothing here is a true value".into());
    parts
}

/// Parts joined with `; ` into lines of at most about `width` characters.
fn wrap(parts: &[String], width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    for part in parts {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 2 + part.chars().count() <= width => {
                line.push_str("; ");
                line.push_str(part);
            }
            _ => lines.push(part.clone()),
        }
    }
    lines
}

/// SVG elements, written as they are drawn.
#[derive(Default)]
struct Svg {
    body: String,
}

impl Svg {
    /// A rectangle between two corners (in any order), with a tooltip.
    #[allow(clippy::too_many_arguments)]
    fn rect(&mut self, class: &str, x0: f64, y0: f64, x1: f64, y1: f64, fill: &str, title: Option<&str>) {
        let (x, w) = (x0.min(x1), (x1 - x0).abs());
        let (y, h) = (y0.min(y1), (y1 - y0).abs());
        let _ = write!(
            self.body,
            "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"",
            px(x),
            px(y),
            px(w),
            px(h)
        );
        match title {
            Some(t) => {
                let _ = writeln!(self.body, "><title>{}</title></rect>", escape(t));
            }
            None => self.body.push_str("/>\n"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn line(
        &mut self,
        class: &str,
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
        stroke: &str,
        width: f64,
        dashed: bool,
    ) {
        let dash = if dashed { " stroke-dasharray=\"4 3\"" } else { "" };
        let _ = writeln!(
            self.body,
            "<line class=\"{class}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{stroke}\" stroke-width=\"{width}\"{dash}/>",
            px(x1),
            px(y1),
            px(x2),
            px(y2)
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn circle(&mut self, class: &str, cx: f64, cy: f64, r: f64, fill: &str, stroke: &str, title: &str) {
        let _ = writeln!(
            self.body,
            "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.5\"><title>{}</title></circle>",
            px(cx),
            px(cy),
            px(r),
            escape(title)
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn text(&mut self, class: &str, x: f64, y: f64, anchor: &str, size: f64, fill: &str, text: &str) {
        let _ = writeln!(
            self.body,
            "<text class=\"{class}\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" font-size=\"{}\" fill=\"{fill}\">{}</text>",
            px(x),
            px(y),
            px(size),
            escape(text)
        );
    }

    /// Text turned to read upwards, centred on (x, y): a vertical axis's title.
    fn vtext(&mut self, class: &str, x: f64, y: f64, size: f64, text: &str) {
        let _ = writeln!(
            self.body,
            "<text class=\"{class}\" x=\"0\" y=\"0\" transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\" \
             font-size=\"{}\" fill=\"#000000\">{}</text>",
            px(x + size / 3.0),
            px(y),
            px(size),
            escape(text)
        );
    }
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0 text.
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::chart::tests::bar;

    fn chart(kind: Kind, bars: Vec<Bar>) -> Chart {
        let panel = Panel {
            heading: None,
            kind,
            category: "region <&>".into(),
            measure: "noisy count".into(),
            per_bin: true,
            bars,
        };
        Chart {
            title: "t <&>".into(),
            confidence: 0.95,
            panels: vec![panel],
            shared_scale: true,
            shares: kind == Kind::Bars,
        }
    }

    /// The SVG parsed, rasterised by resvg (without fonts: text is not drawn) and the PNG read
    /// back by the png crate; returns the document text and the RGBA pixels and width.
    fn drawn(chart: &Chart) -> (String, Vec<u8>, u32) {
        let svg = render(chart).unwrap();
        roxmltree::Document::parse(&svg).expect("well-formed XML");
        let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default()).unwrap();
        let size = tree.size().to_int_size();
        let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
        resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
        let png = pixmap.encode_png().unwrap();
        let mut reader = png::Decoder::new(std::io::Cursor::new(png)).read_info().unwrap();
        let mut rgba = vec![0; reader.output_buffer_size().unwrap()];
        let frame = reader.next_frame(&mut rgba).unwrap();
        (svg, rgba, frame.width)
    }

    fn nodes<'a>(doc: &'a roxmltree::Document, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
        doc.descendants().filter(|n| n.attribute("class") == Some(class)).collect()
    }

    fn num(n: &roxmltree::Node, name: &str) -> f64 {
        n.attribute(name).unwrap().parse().unwrap()
    }

    /// The value → pixel map of an axis, from its first and last tick labels.
    fn axis(doc: &roxmltree::Document, class: &str, coordinate: &str, offset: f64) -> impl Fn(f64) -> f64 {
        // The first panel's ticks: those on the first tick's line.
        let all = nodes(doc, class);
        let across = if coordinate == "x" { "y" } else { "x" };
        let ticks: Vec<_> = all.iter().filter(|t| num(t, across) == num(&all[0], across)).collect();
        let read =
            |n: &roxmltree::Node| (n.text().unwrap().parse::<f64>().unwrap(), num(n, coordinate) - offset);
        let ((v0, p0), (v1, p1)) = (read(ticks[0]), read(ticks[ticks.len() - 1]));
        move |v| p0 + (v - v0) / (v1 - v0) * (p1 - p0)
    }

    /// Pixels that are not white in a rectangle of the PNG.
    fn ink(rgba: &[u8], width: u32, (x0, y0, x1, y1): (f64, f64, f64, f64)) -> usize {
        let mut n = 0;
        for y in y0 as u32..y1 as u32 {
            for x in x0 as u32..(x1 as u32).min(width) {
                let i = ((y * width + x) * 4) as usize;
                n += usize::from(rgba[i..i + 3].iter().any(|&c| c < 200));
            }
        }
        n
    }

    #[test]
    fn a_histogram_is_contiguous_bins_with_error_bars_at_the_bound() {
        let counts = [7.0, -2.0, 31.0, 22.0];
        let bins = counts
            .iter()
            .enumerate()
            .map(|(i, &c)| Bar { edges: Some([i as f64 * 10.0, (i + 1) as f64 * 10.0]), ..bar("b", c, 6.0) })
            .collect();
        let (svg, rgba, width) = drawn(&chart(Kind::Histogram, bins));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let rects = nodes(&doc, "bin");
        assert_eq!(rects.len(), 4);
        for pair in rects.windows(2) {
            let right = num(&pair[0], "x") + num(&pair[0], "width");
            assert!((right - num(&pair[1], "x")).abs() < 1e-6, "bins touch: {right} vs {:?}", pair[1]);
        }
        // x: the bins' edges on the value axis (tick labels at the edges 0..40).
        let x = axis(&doc, "tick-x", "x", 0.0);
        assert!(
            (num(&rects[0], "x") - x(0.0)).abs() < 0.02
                && (num(&rects[3], "x") + num(&rects[3], "width") - x(40.0)).abs() < 0.02
        );
        // y: counts; a rect spans 0 to its count, an error bar count ± 6.
        let y = axis(&doc, "tick-y", "y", 4.5);
        for (rect, &c) in rects.iter().zip(&counts) {
            let (top, bottom) = (num(rect, "y"), num(rect, "y") + num(rect, "height"));
            assert!(
                (top - y(c.max(0.0))).abs() < 0.05 && (bottom - y(c.min(0.0))).abs() < 0.05,
                "{c}: {top}..{bottom}"
            );
        }
        let errors: Vec<_> =
            nodes(&doc, "error").into_iter().filter(|n| num(n, "x1") == num(n, "x2")).collect();
        assert_eq!(errors.len(), 4, "one vertical error bar per bin");
        for (e, &c) in errors.iter().zip(&counts) {
            let (a, b) = (num(e, "y1").max(num(e, "y2")), num(e, "y1").min(num(e, "y2")));
            assert!((a - y(c - 6.0)).abs() < 0.05 && (b - y(c + 6.0)).abs() < 0.05, "{c}: {a}..{b}");
        }
        for label in ["region &lt;&amp;&gt;", "noisy count", "t &lt;&amp;&gt;"] {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}");
        }
        // The plot area is drawn: the tallest bin is ink in the PNG.
        let r = &rects[2];
        let area = (
            num(r, "x") + 2.0,
            num(r, "y") + 2.0,
            num(r, "x") + num(r, "width") - 2.0,
            num(r, "y") + num(r, "height") - 2.0,
        );
        assert!(ink(&rgba, width, area) as f64 > 0.9 * (area.2 - area.0) * (area.3 - area.1));
    }

    #[test]
    fn other_is_apart_muted_clipped_and_not_in_the_scale() {
        let (svg, rgba, width) = drawn(&chart(
            Kind::Bars,
            vec![bar("a", 10.0, 2.0), bar("b", 40.0, 2.0), bar("other", 900.0, 2.0)],
        ));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let bars = nodes(&doc, "bar");
        let other = nodes(&doc, "bar other");
        assert_eq!((bars.len(), other.len()), (2, 1));
        assert!(
            bars.iter().all(|b| b.attribute("fill") == Some(BAR_FILL))
                && other[0].attribute("fill") == Some(OTHER_FILL)
        );
        let x = axis(&doc, "tick-x", "x", 0.0);
        // b's bar is 40 long on an axis that ends near 40, not near 900.
        let ticks = nodes(&doc, "tick-x");
        let last: f64 = ticks
            .iter()
            .filter(|t| num(t, "y") == num(&ticks[0], "y"))
            .map(|t| t.text().unwrap().parse::<f64>().unwrap())
            .fold(0.0, f64::max);
        assert!((42.0..=60.0).contains(&last), "the scale ends at {last}");
        assert!((num(&bars[1], "width") - (x(40.0) - x(0.0))).abs() < 0.05);
        // other ends at the axis end, with a clip mark and its value, below a rule.
        assert!((num(&other[0], "x") + num(&other[0], "width") - x(last)).abs() < 0.05);
        assert_eq!(nodes(&doc, "clip other").len(), 1);
        assert!(nodes(&doc, "clipped").iter().any(|t| t.text() == Some("900")));
        let rule = &nodes(&doc, "other-rule")[0];
        assert!(
            num(rule, "y1") > num(&bars[1], "y") + num(&bars[1], "height")
                && num(rule, "y1") < num(&other[0], "y")
        );
        // Error bars: value ± 2 in pixels for the listed bars.
        let errors: Vec<_> =
            nodes(&doc, "error").into_iter().filter(|n| num(n, "y1") == num(n, "y2")).collect();
        assert_eq!(errors.len(), 2);
        for (e, v) in errors.iter().zip([10.0, 40.0]) {
            assert!((num(e, "x1") - x(v - 2.0)).abs() < 0.05 && (num(e, "x2") - x(v + 2.0)).abs() < 0.05);
        }
        // Shares: one stacked bar of the plot's width, each segment its share of 950.
        let shares: Vec<_> = doc
            .descendants()
            .filter(|n| {
                n.attribute("class").is_some_and(|c| c.starts_with("share") && n.has_tag_name("rect"))
            })
            .collect();
        assert_eq!(shares.len(), 3);
        let total: f64 = shares.iter().map(|s| num(s, "width")).sum();
        for (s, v) in shares.iter().zip([10.0, 40.0, 900.0]) {
            assert!((num(s, "width") / total - v / 950.0).abs() < 1e-3);
        }
        let b = &bars[1];
        assert!(
            ink(
                &rgba,
                width,
                (
                    num(b, "x") + 1.0,
                    num(b, "y") + 1.0,
                    num(b, "x") + num(b, "width") - 1.0,
                    num(b, "y") + num(b, "height") - 1.0
                )
            ) > 100
        );
    }

    #[test]
    fn points_have_whiskers_at_the_bound_and_quantiles_none() {
        let means = vec![
            Bar { range: Some([0.0, 100.0]), ..bar("north", 60.0, 5.0) },
            Bar { range: Some([0.0, 100.0]), ..bar("south", 98.0, 10.0) },
        ];
        let (svg, rgba, width) = drawn(&chart(Kind::Points, means));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert!(nodes(&doc, "bar").is_empty(), "no bars from zero");
        let points = nodes(&doc, "point");
        assert_eq!(points.len(), 2);
        let x = axis(&doc, "tick-x", "x", 0.0);
        let ticks: Vec<f64> =
            nodes(&doc, "tick-x").iter().map(|t| t.text().unwrap().parse().unwrap()).collect();
        assert!(
            ticks[0] > 0.0 && *ticks.last().unwrap() <= 100.0,
            "the axis holds the values, not 0, within [0, 100]: {ticks:?}"
        );
        let whiskers: Vec<_> =
            nodes(&doc, "error").into_iter().filter(|n| num(n, "y1") == num(n, "y2")).collect();
        // south's band is cut at 100, the top of its range.
        for (w, (lo, hi)) in whiskers.iter().zip([(55.0, 65.0), (88.0, 100.0)]) {
            assert!(
                (num(w, "x1") - x(lo)).abs() < 0.05 && (num(w, "x2") - x(hi)).abs() < 0.05,
                "{lo}..{hi}: {w:?}"
            );
        }
        for (p, v) in points.iter().zip([60.0, 98.0]) {
            assert!((num(p, "cx") - x(v)).abs() < 0.05);
            let (cx, cy) = (num(p, "cx"), num(p, "cy"));
            assert!(ink(&rgba, width, (cx - 2.0, cy - 2.0, cx + 2.0, cy + 2.0)) >= 12, "the dot is drawn");
        }
        let quantiles = vec![
            Bar { band: Band::Rank(40.0), text: "10 ±40 rows".into(), ..bar("q=0.1", 10.0, 0.0) },
            Bar { band: Band::Rank(40.0), text: "90 ±40 rows".into(), ..bar("q=0.9", 90.0, 0.0) },
        ];
        let (svg, _, _) = drawn(&chart(Kind::Points, quantiles));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert_eq!((nodes(&doc, "point").len(), nodes(&doc, "error").len()), (2, 0));
        assert!(svg.contains(">90 ±40 rows</text>") && svg.contains("bound is on rank (rows)"));
    }
}
