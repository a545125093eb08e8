//! `--format chart` and the model `--plot` draws: every release of several numbers as labelled
//! bars with their ± accuracy bound (histograms, `--by` groups, sets of quantiles, workloads),
//! drawn here for the terminal with Unicode blocks and in [`svg`](crate::report::svg) as SVG.
//!
//! A [`Chart`] is built from the finished, noisy release only ([`of_published`],
//! [`of_workload`]): nothing here sees data or true values. It is one or more [`Panel`]s of
//! [`Bar`]s; the panels of one release (the groups of a grouped histogram) share one scale, the
//! panels of a workload (different statistics, different units) each have their own.
//!
//! Reading a row: `█` is the bar up to the edge of its band, `▓` the rest of the bar inside
//! the band, `░` the band beyond the bar. So the bar ends where the value is (`█▓` together),
//! and `▓░` together span value ± error. A zero axis `│` separates negative noisy values
//! (drawn to its left) from positive ones. A quantile's bound is on its rank, in rows, not on its
//! value: its bar has no band, and its number says `±N rows`.

use std::fmt::Write;

use crate::report::figure::{figure, percent, Style};
use crate::report::release::{Number, Published, Release, PER_BIN};

/// Width when neither `COLUMNS` nor a terminal says otherwise.
pub const DEFAULT_WIDTH: usize = 80;
/// Narrower than this, a chart has no room for bars; it is drawn at this width.
pub const MIN_WIDTH: usize = 30;
/// The bar area never gets narrower than this many cells.
const MIN_BAR_CELLS: usize = 8;

const SOLID: char = '█';
const INSIDE_BAND: char = '▓';
const OUTSIDE_BAND: char = '░';
const AXIS: char = '│';

/// A chart: a title, and panels of bars.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// What is drawn: statistic, column, grouping, ε and privacy unit.
    pub title: String,
    /// The accuracy bounds' confidence level.
    pub confidence: f64,
    pub panels: Vec<Panel>,
    /// One scale for all panels (the groups of one release), or one per panel (a workload).
    pub shared_scale: bool,
}

/// Bars on one scale, under an optional heading (a group, a workload query).
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    pub heading: Option<String>,
    /// What the bars are labelled by: the column of a histogram's bins, the `--by` column, `q`.
    pub category: String,
    /// What the length of a bar is: `noisy count`, `noisy mean of income`.
    pub measure: String,
    /// Whether the bound holds per bin.
    pub per_bin: bool,
    pub bars: Vec<Bar>,
}

/// One labelled value with its accuracy bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub band: Band,
    /// The interval every value of the statistic lies in, when public ([`Release::range`]):
    /// the band is drawn within it, never over values the statistic cannot take.
    pub range: Option<[f64; 2]>,
    /// The value and its bound as the chart prints them beside the bar.
    pub text: String,
}

impl Bar {
    /// The ends of the band as drawn: value ± error, within the statistic's range; the value
    /// alone for a bar without a band.
    pub fn band_ends(&self) -> (f64, f64) {
        match self.band {
            Band::Value(e) if e.is_finite() && e > 0.0 => {
                let (low, high) = (self.value - e, self.value + e);
                match self.range {
                    Some([l, h]) => (low.max(l), high.min(h)),
                    None => (low, high),
                }
            }
            _ => (self.value, self.value),
        }
    }
}

/// What a bar's bound is about.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Band {
    /// |value − truth| <= this, at the chart's confidence: drawn as a band.
    Value(f64),
    /// The released quantile's rank is within this many rows of the truth's: not drawn.
    Rank(f64),
}

/// Why a release has no chart, for a refusal.
pub const ONE_NUMBER: &str = "--format chart and --plot draw releases of several numbers (histograms, --by \
    groups, several --q levels, workloads); this release is one number: print it with its bound with --with-error";

/// The chart of a release; None for a release of one number.
pub fn of_published(published: &Published, style: Style) -> Option<Chart> {
    match published {
        Published::One(release) => {
            let panel = release_panel(release, None, style)?;
            // Keys found in the data: as many bars as keys were released, none or one included
            // (whether a chart is drawn must not depend on the data).
            (panel.bars.len() > 1 || release.discovery.is_some()).then(|| Chart {
                title: release_title(release, None),
                confidence: release.noise.accuracy.confidence,
                panels: vec![panel],
                shared_scale: true,
            })
        }
        Published::Grouped(grouped) if grouped.groups.is_empty() && grouped.discovery.is_some() => {
            Some(Chart {
                title: format!("{} by {}: no key reached the threshold", grouped.query, grouped.by),
                confidence: 0.0,
                panels: vec![],
                shared_scale: true,
            })
        }
        Published::Grouped(grouped) => {
            let first = &grouped.groups.first()?.release;
            let title = release_title(first, Some(&grouped.by));
            let per_group = first.bins.is_some() || first.quantiles.is_some() && first.value.is_none();
            let panels = if per_group {
                grouped
                    .groups
                    .iter()
                    .map(|g| release_panel(&g.release, Some(format!("{} = {}", grouped.by, g.key)), style))
                    .collect::<Option<Vec<_>>>()?
            } else {
                let bars = grouped
                    .groups
                    .iter()
                    .filter_map(|g| Some(scalar_bar(&g.key, &g.release, g.release.value?, style)))
                    .collect();
                vec![Panel {
                    heading: None,
                    category: grouped.by.clone(),
                    measure: measure(first),
                    per_bin: false,
                    bars,
                }]
            };
            Some(Chart { title, confidence: first.noise.accuracy.confidence, panels, shared_scale: true })
        }
    }
}

/// The chart of a workload's `(name, release)` queries, at `total` (as printed: `eps 1`) and
/// `confidence`: one panel per query (per group for a grouped histogram), each on its own scale,
/// since the queries measure different things.
pub fn of_workload(queries: &[(&str, &Published)], total: &str, confidence: f64, style: Style) -> Chart {
    let mut panels = vec![];
    let mut neighbours = "";
    for &(name, release) in queries {
        match release {
            Published::One(r) => {
                neighbours = r.noise.neighbours;
                let heading = Some(format!("{name}: {}", what(r)));
                match release_panel(r, heading, style) {
                    Some(panel) => panels.push(panel),
                    None => {
                        // One value: its bar is labelled with the query's name.
                        if let Some(value) = r.value {
                            panels.push(Panel {
                                heading: None,
                                category: "query".into(),
                                measure: measure(r),
                                per_bin: false,
                                bars: vec![scalar_bar(name, r, value, style)],
                            });
                        }
                    }
                }
            }
            Published::Grouped(g) => {
                neighbours = g.neighbours;
                let Some(first) = g.groups.first() else { continue };
                if first.release.value.is_none() {
                    for group in &g.groups {
                        let heading = format!("{name}: {} = {}", g.by, group.key);
                        panels.extend(release_panel(&group.release, Some(heading), style));
                    }
                } else {
                    let bars = g
                        .groups
                        .iter()
                        .filter_map(|group| {
                            Some(scalar_bar(&group.key, &group.release, group.release.value?, style))
                        })
                        .collect();
                    panels.push(Panel {
                        heading: Some(format!("{name}: {} by {}", what(&first.release), g.by)),
                        category: g.by.clone(),
                        measure: measure(&first.release),
                        per_bin: false,
                        bars,
                    });
                }
            }
        }
    }
    let n = queries.len();
    Chart {
        title: format!(
            "workload: {n} quer{}, {total} in all, {neighbours}",
            if n == 1 { "y" } else { "ies" }
        ),
        confidence,
        panels,
        shared_scale: false,
    }
}

/// `mean of income`, `count`.
fn what(r: &Release) -> String {
    match &r.column {
        Some(c) => format!("{} of {c}", r.query),
        None => r.query.to_string(),
    }
}

/// What a bar's length is: `noisy count`, `noisy mean of income`.
fn measure(r: &Release) -> String {
    if r.bins.is_some() || r.query == "count" {
        return "noisy count".into();
    }
    format!("noisy {}", what(r))
}

fn release_title(r: &Release, by: Option<&str>) -> String {
    let g = &r.noise.guarantee;
    let unit = match (g.rho, g.delta) {
        (Some(rho), _) => format!("rho {} (eps {}), {}", number(rho), number(g.epsilon), r.noise.neighbours),
        (None, Some(delta)) => format!("eps {}, delta {delta:e}, {}", number(g.epsilon), r.noise.neighbours),
        (None, None) => format!("eps {}, {}", number(g.epsilon), r.noise.neighbours),
    };
    let column = r.column.as_deref().unwrap_or(r.query);
    match (by, r.bins.is_some(), r.quantiles.is_some() && r.value.is_none()) {
        (None, true, _) => format!("{column}: noisy counts, {unit}"),
        (None, _, true) => format!("quantiles of {column}: {unit}"),
        (None, _, _) => format!("{}: {unit}", what(r)),
        (Some(by), true, _) => format!("{column} by {by}: noisy counts, {unit}"),
        (Some(by), _, _) => format!("{} by {by}: {unit}", what(r)),
    }
}

/// A release's own bars: its bins or its quantiles; None for a single value.
fn release_panel(r: &Release, heading: Option<String>, style: Style) -> Option<Panel> {
    let accuracy = &r.noise.accuracy;
    let column = r.column.clone().unwrap_or_else(|| r.query.to_string());
    if let Some(bins) = &r.bins {
        let bars = bins.iter().map(|b| scalar_bar(&b.bin, r, Number::Integer(b.count), style)).collect();
        return Some(Panel {
            heading,
            category: column,
            measure: measure(r),
            per_bin: accuracy.scope == PER_BIN,
            bars,
        });
    }
    let quantiles = r.quantiles.as_ref().filter(|q| q.len() > 1 || heading.is_some())?;
    let bars = quantiles
        .iter()
        .map(|q| Bar {
            label: format!("q={}", number(q.q)),
            value: q.value,
            band: Band::Rank(q.rank_error_bound),
            range: None,
            text: format!("{} ±{} rows", number(q.value), number(q.rank_error_bound.ceil())),
        })
        .collect();
    Some(Panel {
        heading,
        category: "quantile level q".into(),
        measure: format!("noisy quantile of {column}"),
        per_bin: false,
        bars,
    })
}

/// One value with its bound, as the chart prints it (`31 ±6`, or rounded as `--round` says).
fn scalar_bar(label: &str, r: &Release, value: Number, style: Style) -> Bar {
    let accuracy = &r.noise.accuracy;
    let x = match value {
        Number::Integer(i) => i as f64,
        Number::Real(x) => x,
    };
    let text = if style.round {
        let (v, e) = figure(value, accuracy, style);
        format!("{v} ±{e}")
    } else {
        format!("{} ±{}", number(x), number(accuracy.error_bound))
    };
    Bar { label: label.to_string(), value: x, band: Band::Value(accuracy.error_bound), range: r.range, text }
}

/// The line that says how to read the bars and bands.
fn legend(chart: &Chart) -> String {
    let bars = || chart.panels.iter().flat_map(|p| &p.bars);
    let mut measures: Vec<&str> = chart.panels.iter().map(|p| p.measure.as_str()).collect();
    measures.dedup();
    let measure = match measures.as_slice() {
        [one] => one.to_string(),
        _ => "noisy value".into(),
    };
    let errors: Vec<f64> =
        bars().filter_map(|b| if let Band::Value(e) = b.band { Some(e) } else { None }).collect();
    let confidence = percent(chart.confidence);
    let mut line = if errors.is_empty() {
        format!("{SOLID} {measure}")
    } else {
        format!("{SOLID}{INSIDE_BAND} {measure}")
    };
    if let Some(&first) = errors.first() {
        if errors.iter().all(|&e| e == first) {
            let per_bin = if chart.panels.iter().any(|p| p.per_bin) { ", per bin" } else { "" };
            let _ = write!(
                line,
                "   {INSIDE_BAND}{OUTSIDE_BAND} ±{}: {confidence}% accuracy bound{per_bin}",
                number(first)
            );
        } else {
            let _ =
                write!(line, "   {INSIDE_BAND}{OUTSIDE_BAND} ± each value's {confidence}% accuracy bound");
        }
    }
    if bars().any(|b| matches!(b.band, Band::Rank(_))) {
        let _ = write!(line, "   ±N rows: {confidence}% bound on rank, not drawn");
    }
    line
}

/// The chart width: `COLUMNS` when set to a number, else the terminal's width when standard
/// output is a terminal, else [`DEFAULT_WIDTH`]; never below [`MIN_WIDTH`].
pub fn terminal_width() -> usize {
    let from_env = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok());
    let width = from_env
        .filter(|&w| w > 0)
        .or_else(|| terminal_size::terminal_size().map(|(w, _)| w.0 as usize))
        .unwrap_or(DEFAULT_WIDTH);
    width.max(MIN_WIDTH)
}

/// A chart drawn `width` columns wide: the title and legend, then each panel (its heading, one
/// row per bar, a ruler). Every line is at most `width` characters (given width >=
/// [`MIN_WIDTH`] and numbers that fit; labels and title lines are cut with `…`).
pub fn render(chart: &Chart, width: usize) -> String {
    let width = width.max(MIN_WIDTH);
    let all: Vec<&Bar> = chart.panels.iter().flat_map(|p| &p.bars).collect();
    let number_width = all.iter().map(|b| b.text.chars().count()).max().unwrap_or(0);
    let longest_label = all.iter().map(|b| b.label.chars().count()).max().unwrap_or(0);
    // label, space, bars, axis, space, numbers
    let fixed = number_width + 3;
    let mut label_width = longest_label.min(width / 3).max(1);
    if width < fixed + label_width + MIN_BAR_CELLS {
        label_width = width.saturating_sub(fixed + MIN_BAR_CELLS).max(3).min(longest_label.max(1));
    }
    let cells = width.saturating_sub(fixed + label_width).max(MIN_BAR_CELLS);
    let shared = Scale::new(all.iter().copied(), cells);

    let mut out = String::new();
    for line in [chart.title.clone(), legend(chart)] {
        out.push_str(&fit(&line, width));
        out.push('\n');
    }
    for panel in &chart.panels {
        if let Some(heading) = &panel.heading {
            out.push_str(&fit(heading, width));
            out.push('\n');
        }
        let own;
        let scale = if chart.shared_scale {
            &shared
        } else {
            own = Scale::new(panel.bars.iter(), cells);
            &own
        };
        for bar in &panel.bars {
            let _ = write!(out, "{} ", pad(&fit(&bar.label, label_width), label_width));
            for k in (0..scale.negative).rev() {
                out.push(cell(bar, -(k as f64 + 0.5) * scale.unit));
            }
            out.push(AXIS);
            for j in 0..cells - scale.negative {
                out.push(cell(bar, (j as f64 + 0.5) * scale.unit));
            }
            let _ = writeln!(out, " {:>number_width$}", bar.text);
        }
        out.push_str(&scale.ruler(label_width + 1, cells));
    }
    out
}

/// Which glyph fills the cell centred at `c`.
fn cell(bar: &Bar, c: f64) -> char {
    let in_bar = if bar.value >= 0.0 { c > 0.0 && c <= bar.value } else { c < 0.0 && c >= bar.value };
    let (low, high) = bar.band_ends();
    let in_band = low < high && (low..=high).contains(&c);
    match (in_bar, in_band) {
        (true, true) => INSIDE_BAND,
        (true, false) => SOLID,
        (false, true) => OUTSIDE_BAND,
        (false, false) => ' ',
    }
}

/// Cells of the bar area: `negative` to the left of the axis, the rest to its right, each `unit` wide.
struct Scale {
    unit: f64,
    negative: usize,
    lowest: f64,
    highest: f64,
}

impl Scale {
    /// Spans 0 and every bar's band.
    fn new<'a>(bars: impl Iterator<Item = &'a Bar> + Clone, cells: usize) -> Scale {
        let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
        let lowest = bars.clone().map(|b| finite(b.band_ends().0)).fold(0.0, f64::min);
        let mut highest = bars.map(|b| finite(b.band_ends().1)).fold(0.0, f64::max);
        if highest - lowest <= 0.0 {
            highest = lowest + 1.0;
        }
        let unit = (highest - lowest) / cells as f64;
        let negative = ((-lowest / unit).round() as usize).min(cells);
        Scale { unit, negative, lowest, highest }
    }

    /// The line under the bars: the values at the left end, the axis and the right end.
    fn ruler(&self, indent: usize, cells: usize) -> String {
        let mut line: Vec<char> = vec![' '; indent + cells + 1];
        let put = |at: usize, text: &str, line: &mut Vec<char>| {
            let end = at + text.chars().count();
            if end <= line.len() && line[at..end].iter().all(|&c| c == ' ') {
                for (i, ch) in text.chars().enumerate() {
                    line[at + i] = ch;
                }
            }
        };
        let axis = indent + self.negative;
        put(axis, "0", &mut line);
        let high = number(self.highest);
        if let Some(at) = (indent + cells + 1).checked_sub(high.chars().count()) {
            put(at.max(axis + 2), &high, &mut line);
        }
        if self.negative > 0 {
            let low = number(self.lowest);
            if indent + low.chars().count() + 1 < axis {
                put(indent, &low, &mut line);
            }
        }
        let mut text: String = line.into_iter().collect();
        text.truncate(text.trim_end().len());
        text.push('\n');
        text
    }
}

/// A number as people read it: whole numbers without decimals, others to 4 significant digits.
pub(crate) fn number(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let digits = 4 - (x.abs().log10().floor() as i32 + 1);
    if digits < 0 {
        return format!("{x:.0}");
    }
    if digits <= 12 {
        trim_number(format!("{x:.prec$}", prec = digits as usize).parse().unwrap_or(x))
    } else {
        format!("{x:.3e}")
    }
}

/// Shortest decimal of a value already rounded, with binary noise (95.00000000000001) removed.
fn trim_number(x: f64) -> String {
    let rounded = (x * 1e9).round() / 1e9;
    format!("{rounded}")
}

/// `text` cut to `width` characters, ending in `…` when cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn pad(text: &str, width: usize) -> String {
    let n = text.chars().count();
    format!("{text}{}", " ".repeat(width.saturating_sub(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, value: f64, error: f64) -> Bar {
        Bar {
            label: label.into(),
            value,
            band: Band::Value(error),
            range: None,
            text: format!("{value} ±{error}"),
        }
    }

    fn chart(title: &str, panels: Vec<Vec<Bar>>, shared_scale: bool) -> Chart {
        let panels = panels
            .into_iter()
            .enumerate()
            .map(|(i, bars)| Panel {
                heading: (panels_named(i)).then(|| format!("panel {i}")),
                category: "c".into(),
                measure: "noisy count".into(),
                per_bin: false,
                bars,
            })
            .collect();
        Chart { title: title.into(), confidence: 0.95, panels, shared_scale }
    }

    fn panels_named(i: usize) -> bool {
        i > 0
    }

    fn widths(chart: &str) -> Vec<usize> {
        chart.lines().map(|l| l.chars().count()).collect()
    }

    fn rows(chart: &str) -> Vec<&str> {
        chart.lines().filter(|l| l.contains(AXIS)).collect()
    }

    #[test]
    fn every_line_fits_and_every_bar_is_drawn() {
        let bars = vec![
            bar("north", 31.0, 6.0),
            bar("a very long category name indeed", 12.0, 6.0),
            bar("other", -3.0, 6.0),
        ];
        for width in [30, 45, 60, 80, 100, 200] {
            let drawn = render(&chart(&"title ".repeat(40), vec![bars.clone()], true), width);
            assert!(widths(&drawn).iter().all(|&w| w <= width), "width {width}:\n{drawn}");
            assert_eq!(rows(&drawn).len(), 3, "{drawn}");
            assert!(drawn.contains("31 ±6") && drawn.contains("-3 ±6"), "{drawn}");
        }
    }

    #[test]
    fn bands_straddle_the_end_of_each_bar() {
        let drawn = render(&chart("t", vec![vec![bar("a", 40.0, 10.0), bar("b", 0.0, 10.0)]], true), 60);
        let rows = rows(&drawn);
        let a = rows[0];
        // solid, then the band inside the bar, then the band beyond it
        let first = |c: char| a.find(c).unwrap();
        assert!(first(SOLID) < first(INSIDE_BAND) && first(INSIDE_BAND) < first(OUTSIDE_BAND), "{a}");
        let inside = a.matches(INSIDE_BAND).count() as i64;
        let outside = a.matches(OUTSIDE_BAND).count() as i64;
        assert!((inside - outside).abs() <= 1, "band not centred on the value: {a}");
        // a zero bar is all band, on both sides of the axis
        assert!(!rows[1].contains(SOLID) && rows[1].contains(OUTSIDE_BAND), "{}", rows[1]);
        assert!(rows[1].find(OUTSIDE_BAND).unwrap() < rows[1].find(AXIS).unwrap(), "{}", rows[1]);
    }

    /// Panels of one release share a scale (equal values, equal bars); a workload's do not.
    #[test]
    fn panels_share_a_scale_only_when_asked() {
        let panels = || vec![vec![bar("a", 10.0, 1.0), bar("b", 20.0, 1.0)], vec![bar("c", 1000.0, 1.0)]];
        let length = |row: &str| row.chars().filter(|&c| c == SOLID || c == INSIDE_BAND).count();
        let shared = render(&chart("t", panels(), true), 80);
        let own = render(&chart("t", panels(), false), 80);
        let (shared, own) = (rows(&shared), rows(&own));
        assert!(length(shared[1]) < 3, "20 is tiny next to 1000 on one scale: {}", shared[1]);
        assert!(length(own[1]) > 20, "20 fills its own panel: {}", own[1]);
        assert!(length(own[2]) > 20 && length(shared[2]) > 20);
        assert!(render(&chart("t", panels(), false), 80).contains("panel 1\n"), "headings are printed");
    }

    #[test]
    fn a_quantile_bar_has_no_band_and_its_legend_says_why() {
        let q = |label: &str, value: f64| Bar {
            label: label.into(),
            value,
            band: Band::Rank(12.0),
            range: None,
            text: format!("{value} ±12 rows"),
        };
        let drawn = render(&chart("t", vec![vec![q("q=0.1", 10.0), q("q=0.9", 90.0)]], true), 100);
        assert!(!drawn.contains(OUTSIDE_BAND), "{drawn}");
        assert!(
            drawn.contains("±N rows: 95% bound on rank, not drawn") && drawn.contains("90 ±12 rows"),
            "{drawn}"
        );
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(12.0), "12");
        assert_eq!(number(-3.0), "-3");
        assert_eq!(number(1198293.0), "1198293");
        assert_eq!(number(0.123456), "0.1235");
        assert_eq!(number(12.345678), "12.35");
        assert_eq!(trim_number(0.95 * 100.0), "95");
        assert_eq!(fit("abcdef", 4), "abc…");
    }
}
