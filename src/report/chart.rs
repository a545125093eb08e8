//! `--format chart` and the model `--plot` draws: every release of several numbers (histograms,
//! `--by` groups, sets of quantiles, workloads), drawn here for the terminal with Unicode
//! glyphs and in [`svg`](crate::report::svg) as SVG. Each [`Panel`] is of one [`Kind`]:
//!
//! - [`Kind::Histogram`], noisy counts of numeric bins: contiguous bins on the column's value
//!   axis (in the terminal, one row per bin labelled with its range `[L, U)`);
//! - [`Kind::Bars`], noisy counts of categories or `--by` groups: bars from zero, with each
//!   one's share of the drawn noisy total ([`shares`]) beside them when the chart asks for it;
//! - [`Kind::Points`], any other value (means, sums, quantiles, variances…): a dot at the value
//!   with a whisker to ± its bound, on a value axis that does not start at zero.
//!
//! `other`, the bin or group of rows outside the listed categories or keys, is drawn apart and
//! muted, and left out of the scale, so its size (often noise, or everything the keys missed)
//! cannot squash the rest: a value beyond the scale is drawn clipped, with its number.
//!
//! A [`Chart`] is built from the finished, noisy release only ([`of_published`],
//! [`of_workload`]): nothing here sees data or true values, and the shares are ratios of
//! released noisy counts (post-processing). The panels of one release (the groups of a grouped
//! histogram) share one scale, the panels of a workload (different statistics, different units)
//! each have their own.
//!
//! Reading a terminal row of counts: `█` is the bar up to the edge of its band, `▓` the rest of
//! the bar inside the band, `░` the band beyond the bar. So the bar ends where the value is
//! (`█▓` together), and `▓░` together span value ± error. A zero axis `│` separates negative
//! noisy values (drawn to its left) from positive ones. A row of points has `●` at the value
//! and `─` over value ± error; the ruler under it gives the ends of its axis. A quantile's bound
//! is on its rank, in rows, not on its value (the release carries no interval of values): it
//! has no whisker, and its number says `±N rows`.

use std::fmt::Write;

use crate::numeric::bins::OTHER;
use crate::numeric::format::real;
use crate::report::figure::{figure, percent, Style};
use crate::report::release::{Group, GroupedRelease, Number, Published, Release, PER_BIN};

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
/// `other`'s bar, lighter than [`SOLID`].
const OTHER_SOLID: char = '▒';
const POINT: char = '●';
const OTHER_POINT: char = '○';
const WHISKER: char = '─';
/// The rule between the listed keys and `other`.
const RULE: char = '┈';
/// A value beyond the scale (only `other`'s can be): drawn to the edge, ending in this.
const CLIPPED_HIGH: char = '▸';
const CLIPPED_LOW: char = '◂';

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
    /// Whether each [`Kind::Bars`] panel also shows its categories' [`shares`] of its total.
    pub shares: bool,
}

/// Bars on one scale, under an optional heading (a group, a workload query).
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    pub heading: Option<String>,
    pub kind: Kind,
    /// What the bars are labelled by: the column of a histogram's bins, the `--by` column, `q`.
    pub category: String,
    /// What the length of a bar (or the place of a point) is: `noisy count`, `noisy mean of income`.
    pub measure: String,
    /// Whether the bound holds per bin.
    pub per_bin: bool,
    pub bars: Vec<Bar>,
}

/// How a panel's values are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Noisy counts of categories or groups: bars from zero.
    Bars,
    /// Noisy counts of numeric bins ([`Bar::edges`]): contiguous bins on a value axis.
    Histogram,
    /// Any other value: a point with a whisker to ± its bound, on an axis that need not hold 0.
    Points,
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
    /// A numeric bin's lower and upper edge.
    pub edges: Option<[f64; 2]>,
    /// The bin or group `other` (rows outside the listed categories or keys): drawn apart,
    /// muted, and left out of the scale.
    pub other: bool,
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

/// The bars a scale is computed from: all but `other`, unless there is nothing else.
pub fn scaled<'a>(bars: &[&'a Bar]) -> Vec<&'a Bar> {
    let listed: Vec<&Bar> = bars.iter().copied().filter(|b| !b.other).collect();
    if listed.is_empty() {
        bars.to_vec()
    } else {
        listed
    }
}

/// Each bar's share of the panel's drawn total, counts below 0 taken as 0 (a noisy count below
/// 0 is a count near 0); None when no count is above 0. `other` is part of the total.
pub fn shares(panel: &Panel) -> Option<Vec<f64>> {
    let total: f64 = panel.bars.iter().map(|b| b.value.max(0.0)).sum();
    (total > 0.0 && total.is_finite()).then(|| panel.bars.iter().map(|b| b.value.max(0.0) / total).collect())
}

/// A share as a percentage: whole percents from 10%, one decimal below.
pub fn share_text(share: f64) -> String {
    let p = share * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p >= 9.95 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// Why a release has no chart, for a refusal.
pub const ONE_NUMBER: &str = "--format chart and --plot draw releases of several numbers (histograms, --by \
    groups, several --q levels, workloads); this release is one number: print it with its bound with --with-error";

/// The chart of a release; None for a release of one number.
pub fn of_published(published: &Published, style: Style) -> Option<Chart> {
    match published {
        Published::One(release) => one_chart(release, style),
        Published::Grouped(grouped) if grouped.groups.is_empty() && grouped.discovery.is_some() => {
            Some(Chart {
                title: format!("{} by {}: no key reached the threshold", grouped.query, grouped.by),
                confidence: 0.0,
                panels: vec![],
                shared_scale: true,
                shares: false,
            })
        }
        Published::Grouped(grouped) => grouped_chart(grouped, style),
    }
}

/// The chart of a release that is not grouped: its bins or quantiles as one panel; None for a
/// single value, or for at most one bar unless its keys were found in the data.
fn one_chart(release: &Release, style: Style) -> Option<Chart> {
    let panel = release_panel(release, None, style)?;
    // Keys found in the data: as many bars as keys were released, none or one included
    // (whether a chart is drawn must not depend on the data).
    (panel.bars.len() > 1 || release.discovery.is_some()).then(|| Chart {
        title: release_title(release, None),
        confidence: release.noise.accuracy.confidence,
        shares: panel.kind == Kind::Bars,
        panels: vec![panel],
        shared_scale: true,
    })
}

/// The chart of a grouped release with groups: a panel per group when each group has bars of
/// its own (bins, quantiles), else one panel with a bar per group, all on one scale.
fn grouped_chart(grouped: &GroupedRelease, style: Style) -> Option<Chart> {
    let first = &grouped.groups.first()?.release;
    let title = release_title(first, Some(&grouped.by));
    let per_group = first.bins.is_some() || first.quantiles.is_some() && first.value.is_none();
    let panels = if per_group {
        grouped
            .groups
            .iter()
            .map(|g| group_panel(grouped, g, format!("{} = {}", grouped.by, g.key), style))
            .collect::<Option<Vec<_>>>()?
    } else {
        vec![scalar_panel(None, first, grouped.by.clone(), group_bars(grouped, style))]
    };
    let shares = panels.iter().all(|p| p.kind == Kind::Bars);
    Some(Chart { title, confidence: first.noise.accuracy.confidence, panels, shared_scale: true, shares })
}

/// The chart of a workload's `(name, release)` queries, at `total` (as printed: `eps 1`) and
/// `confidence`: one panel per query (per group for a grouped histogram), each on its own scale,
/// since the queries measure different things.
pub fn of_workload(queries: &[(&str, &Published)], total: &str, confidence: f64, style: Style) -> Chart {
    let mut panels = vec![];
    let mut neighbours = "";
    let mut person = None;
    for &(name, release) in queries {
        person = person.or_else(|| release.unit().person_title());
        match release {
            Published::One(r) => {
                neighbours = r.noise.neighbours;
                panels.extend(query_panel(name, r, style));
            }
            Published::Grouped(g) => {
                neighbours = g.neighbours;
                panels.extend(grouped_query_panels(name, g, style));
            }
        }
    }
    let n = queries.len();
    Chart {
        title: format!(
            "workload: {n} quer{}, {total} in all, {neighbours}{}",
            if n == 1 { "y" } else { "ies" },
            person.map(|p| format!(", {p}")).unwrap_or_default()
        ),
        confidence,
        panels,
        shared_scale: false,
        shares: false,
    }
}

/// The panel of a workload query `name` that is not grouped: its bins or quantiles under the
/// query's name, else its value; None for a release without one.
fn query_panel(name: &str, r: &Release, style: Style) -> Option<Panel> {
    let heading = Some(format!("{name}: {}", what(r)));
    release_panel(r, heading, style).or_else(|| {
        // One value: its bar is labelled with the query's name.
        let value = r.value?;
        Some(scalar_panel(None, r, "query".into(), vec![scalar_bar(name, r, value, style)]))
    })
}

/// The panels of a grouped workload query `name`: one per group when the groups have no single
/// value (bins, quantiles), else one with a bar per group; none for a release without groups.
fn grouped_query_panels(name: &str, g: &GroupedRelease, style: Style) -> Vec<Panel> {
    let Some(first) = g.groups.first() else { return vec![] };
    if first.release.value.is_none() {
        g.groups
            .iter()
            .filter_map(|group| group_panel(g, group, format!("{name}: {} = {}", g.by, group.key), style))
            .collect()
    } else {
        let heading = format!("{name}: {} by {}", what(&first.release), g.by);
        vec![scalar_panel(Some(heading), &first.release, g.by.clone(), group_bars(g, style))]
    }
}

/// Whether `key` is `other`, the group of rows outside the listed keys; keys found in the data
/// have none.
fn is_other(grouped: &GroupedRelease, key: &str) -> bool {
    key == OTHER && grouped.discovery.is_none()
}

/// One group's own bars (bins, quantiles) under `heading`, all drawn as `other`'s when it is
/// that group; None for a group of a single value.
fn group_panel(grouped: &GroupedRelease, group: &Group, heading: String, style: Style) -> Option<Panel> {
    let mut panel = release_panel(&group.release, Some(heading), style)?;
    if is_other(grouped, &group.key) {
        panel.bars.iter_mut().for_each(|b| b.other = true);
    }
    Some(panel)
}

/// A bar per group, labelled with its key, for the groups that released a single value.
fn group_bars(grouped: &GroupedRelease, style: Style) -> Vec<Bar> {
    grouped
        .groups
        .iter()
        .filter_map(|g| {
            let bar = scalar_bar(&g.key, &g.release, g.release.value?, style);
            Some(Bar { other: is_other(grouped, &g.key), ..bar })
        })
        .collect()
}

/// A panel of single values, each a bar or point of the statistic `first` releases, labelled by
/// `category`.
fn scalar_panel(heading: Option<String>, first: &Release, category: String, bars: Vec<Bar>) -> Panel {
    Panel { heading, kind: scalar_kind(first), category, measure: measure(first), per_bin: false, bars }
}

/// Counts are bars from zero; every other value is a point on its own value axis.
fn scalar_kind(r: &Release) -> Kind {
    if r.query == "count" {
        Kind::Bars
    } else {
        Kind::Points
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
    let mut unit = match (g.rho, g.delta) {
        (Some(rho), _) => format!("rho {} (eps {}), {}", number(rho), number(g.epsilon), r.noise.neighbours),
        (None, Some(delta)) => format!("eps {}, delta {delta:e}, {}", number(g.epsilon), r.noise.neighbours),
        (None, None) => format!("eps {}, {}", number(g.epsilon), r.noise.neighbours),
    };
    // A person-level release names its unit and K: `eps 1, add-remove, per person (id), K=5`.
    if let Some(person) = r.unit.title() {
        unit = format!("{unit}, {person}");
    }
    let column = r.column.as_deref().unwrap_or(r.query);
    let numeric = r
        .bins
        .as_ref()
        .is_some_and(|b| !b.is_empty() && b.iter().all(|b| b.lower.is_some() && b.upper.is_some()));
    match (by, r.bins.is_some(), r.quantiles.is_some() && r.value.is_none()) {
        (None, true, _) if numeric => format!("histogram of {column}: noisy counts, {unit}"),
        (None, true, _) => format!("{column}: noisy counts, {unit}"),
        (None, _, true) => format!("quantiles of {column}: {unit}"),
        (None, _, _) => format!("{}: {unit}", what(r)),
        (Some(by), true, _) if numeric => format!("histogram of {column} by {by}: noisy counts, {unit}"),
        (Some(by), true, _) => format!("{column} by {by}: noisy counts, {unit}"),
        (Some(by), _, _) => format!("{} by {by}: {unit}", what(r)),
    }
}

/// A numeric bin as a range: `[0, 10)`, the last one closed (`[70, 80]`), as the bins count.
fn range_label(lower: f64, upper: f64, last: bool) -> String {
    format!("[{}, {}{}", real(lower), real(upper), if last { ']' } else { ')' })
}

/// A release's own bars: its bins or its quantiles; None for a single value.
fn release_panel(r: &Release, heading: Option<String>, style: Style) -> Option<Panel> {
    let accuracy = &r.noise.accuracy;
    let column = r.column.clone().unwrap_or_else(|| r.query.to_string());
    if let Some(bins) = &r.bins {
        let numeric = !bins.is_empty() && bins.iter().all(|b| b.lower.is_some() && b.upper.is_some());
        // Categories (not keys found in the data) end in `other`.
        let categorical_other = !numeric && r.discovery.is_none();
        let bars = bins
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let bar = scalar_bar(&b.bin, r, Number::Integer(b.count), style);
                match (b.lower, b.upper) {
                    (Some(lo), Some(hi)) if numeric => {
                        Bar { label: range_label(lo, hi, i + 1 == bins.len()), edges: Some([lo, hi]), ..bar }
                    }
                    _ => Bar { other: categorical_other && b.bin == OTHER, ..bar },
                }
            })
            .collect();
        return Some(Panel {
            heading,
            kind: if numeric { Kind::Histogram } else { Kind::Bars },
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
            edges: None,
            other: false,
        })
        .collect();
    Some(Panel {
        heading,
        kind: Kind::Points,
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
    Bar {
        label: label.to_string(),
        value: x,
        band: Band::Value(accuracy.error_bound),
        range: r.range,
        text,
        edges: None,
        other: false,
    }
}

/// The lines that say how to read the bars, points and bands (one line unless `other` or
/// shares need their own).
fn legend(chart: &Chart) -> Vec<String> {
    let bars = || chart.panels.iter().flat_map(|p| &p.bars);
    let mut measures: Vec<&str> = chart.panels.iter().map(|p| p.measure.as_str()).collect();
    measures.dedup();
    let measure = match measures.as_slice() {
        [one] => one.to_string(),
        _ => "noisy value".into(),
    };
    let has = |kind: Kind| chart.panels.iter().any(|p| p.kind == kind);
    let counts = has(Kind::Bars) || has(Kind::Histogram);
    let points = has(Kind::Points);
    let errors: Vec<f64> =
        bars().filter_map(|b| if let Band::Value(e) = b.band { Some(e) } else { None }).collect();
    let confidence = percent(chart.confidence);
    let mut glyphs = String::new();
    if counts {
        glyphs.push(SOLID);
        if !errors.is_empty() {
            glyphs.push(INSIDE_BAND);
        }
    }
    if points {
        if !glyphs.is_empty() {
            glyphs.push('/');
        }
        glyphs.push(POINT);
    }
    let mut line = format!("{glyphs} {measure}");
    let mut band = String::new();
    if counts {
        band.push(INSIDE_BAND);
        band.push(OUTSIDE_BAND);
    }
    if points && bars().any(|b| matches!(b.band, Band::Value(_))) {
        if !band.is_empty() {
            band.push('/');
        }
        band.push(WHISKER);
    }
    if let Some(&first) = errors.first() {
        if errors.iter().all(|&e| e == first) {
            let per_bin = if chart.panels.iter().any(|p| p.per_bin) { ", per bin" } else { "" };
            let _ = write!(line, "   {band} ±{}: {confidence}% accuracy bound{per_bin}", number(first));
        } else {
            let _ = write!(line, "   {band} ± each value's {confidence}% accuracy bound");
        }
    }
    if bars().any(|b| matches!(b.band, Band::Rank(_))) {
        let _ = write!(line, "   ±N rows: {confidence}% bound on rank, not drawn");
    }
    let mut lines = vec![line];
    if chart.shares && chart.panels.iter().any(|p| p.kind == Kind::Bars) {
        lines.push("%: share of the drawn noisy total (counts below 0 as 0)".into());
    }
    if bars().any(|b| b.other) {
        lines.push(format!("{OTHER}: rows outside the listed keys, not in the scale"));
    }
    lines
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
    // Each row's number, and its share where the chart shows shares.
    let texts: Vec<Vec<String>> = chart
        .panels
        .iter()
        .map(|panel| {
            let shares = if chart.shares && panel.kind == Kind::Bars { shares(panel) } else { None };
            panel
                .bars
                .iter()
                .enumerate()
                .map(|(i, b)| match &shares {
                    Some(s) => format!("{} {:>5}", b.text, share_text(s[i])),
                    None => b.text.clone(),
                })
                .collect()
        })
        .collect();
    let number_width = texts.iter().flatten().map(|t| t.chars().count()).max().unwrap_or(0);
    let longest_label = all.iter().map(|b| b.label.chars().count()).max().unwrap_or(0);
    // label, space, bars, axis, space, numbers
    let fixed = number_width + 3;
    let mut label_width = longest_label.min(width / 3).max(1);
    if width < fixed + label_width + MIN_BAR_CELLS {
        label_width = width.saturating_sub(fixed + MIN_BAR_CELLS).max(3).min(longest_label.max(1));
    }
    let cells = width.saturating_sub(fixed + label_width).max(MIN_BAR_CELLS);
    let scale_of = |panels: &[&Panel]| {
        let bars: Vec<&Bar> = panels.iter().flat_map(|p| &p.bars).collect();
        let scaled = scaled(&bars);
        if panels.iter().all(|p| p.kind == Kind::Points) {
            Scale::points(&scaled, cells)
        } else {
            Scale::bars(&scaled, cells)
        }
    };
    let shared = scale_of(&chart.panels.iter().collect::<Vec<_>>());

    let mut out = String::new();
    for line in std::iter::once(chart.title.clone()).chain(legend(chart)) {
        out.push_str(&fit(&line, width));
        out.push('\n');
    }
    for (panel, texts) in chart.panels.iter().zip(&texts) {
        if let Some(heading) = &panel.heading {
            out.push_str(&fit(heading, width));
            out.push('\n');
        }
        let scale = if chart.shared_scale { shared.clone() } else { scale_of(&[panel]) };
        let listed = panel.bars.iter().any(|b| !b.other);
        let mut ruled = false;
        for (bar, text) in panel.bars.iter().zip(texts) {
            if bar.other && listed && !ruled {
                ruled = true;
                let _ = writeln!(out, "{}{}", " ".repeat(label_width + 1), rule(cells + 1));
            }
            let _ = write!(out, "{} ", pad(&fit(&bar.label, label_width), label_width));
            let row = if panel.kind == Kind::Points { scale.point_row(bar) } else { scale.bar_row(bar) };
            out.push_str(&row);
            let _ = writeln!(out, " {text:>number_width$}");
        }
        out.push_str(&scale.ruler(label_width + 1, cells));
    }
    out
}

/// The line between the listed keys and `other`.
fn rule(cells: usize) -> String {
    std::iter::repeat_n(RULE, cells).collect()
}

/// Which glyph fills the cell centred at `c` of a bar.
fn cell(bar: &Bar, c: f64) -> char {
    let in_bar = if bar.value >= 0.0 { c > 0.0 && c <= bar.value } else { c < 0.0 && c >= bar.value };
    let (low, high) = bar.band_ends();
    let in_band = low < high && (low..=high).contains(&c);
    match (in_bar, in_band) {
        (true, true) => INSIDE_BAND,
        (true, false) if bar.other => OTHER_SOLID,
        (true, false) => SOLID,
        (false, true) => OUTSIDE_BAND,
        (false, false) => ' ',
    }
}

/// The cells of a row: `cells` of them, each `unit` wide, the first starting at `lowest`; for
/// bars `negative` of them left of a zero axis (drawn between them and the rest), for points
/// none, with a frame `│` before the first.
#[derive(Clone)]
struct Scale {
    unit: f64,
    cells: usize,
    negative: usize,
    lowest: f64,
    highest: f64,
    /// Bars from zero, or points on an axis from `lowest`.
    zero_axis: bool,
}

impl Scale {
    /// Spans 0 and every bar's band.
    fn bars(bars: &[&Bar], cells: usize) -> Scale {
        let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
        let lowest = bars.iter().map(|b| finite(b.band_ends().0)).fold(0.0, f64::min);
        let mut highest = bars.iter().map(|b| finite(b.band_ends().1)).fold(0.0, f64::max);
        if highest - lowest <= 0.0 {
            highest = lowest + 1.0;
        }
        let unit = (highest - lowest) / cells as f64;
        let negative = ((-lowest / unit).round() as usize).min(cells);
        Scale { unit, cells, negative, lowest, highest, zero_axis: true }
    }

    /// Spans every point's band, with a little room at each end (not 0 unless it is near).
    fn points(bars: &[&Bar], cells: usize) -> Scale {
        let ends: Vec<f64> = bars
            .iter()
            .flat_map(|b| {
                let (l, h) = b.band_ends();
                [l, h, b.value]
            })
            .filter(|x| x.is_finite())
            .collect();
        let (mut lowest, mut highest) =
            ends.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
        if ends.is_empty() {
            (lowest, highest) = (0.0, 1.0);
        }
        if highest - lowest <= 0.0 {
            let room = (lowest.abs() * 0.1).max(1.0);
            (lowest, highest) = (lowest - room, highest + room);
        }
        // Ends on round numbers, so that the ruler reads well.
        let step = nice_step((highest - lowest) / 5.0);
        let (lowest, highest) = ((lowest / step).floor() * step, (highest / step).ceil() * step);
        Scale {
            unit: (highest - lowest) / cells as f64,
            cells,
            negative: 0,
            lowest,
            highest,
            zero_axis: false,
        }
    }

    /// The value at the centre of cell `j` (from the left).
    fn centre(&self, j: usize) -> f64 {
        if self.zero_axis {
            (j as f64 - self.negative as f64 + 0.5) * self.unit
        } else {
            self.lowest + (j as f64 + 0.5) * self.unit
        }
    }

    /// The cell holding `x`, or which side it is off the scale.
    fn cell_of(&self, x: f64) -> Result<usize, bool> {
        let from = if self.zero_axis { -(self.negative as f64) * self.unit } else { self.lowest };
        let j = ((x - from) / self.unit).floor();
        if j < 0.0 {
            Err(false)
        } else if j >= self.cells as f64 {
            // The top of the scale is a value too: its cell is the last.
            if x <= self.highest {
                Ok(self.cells - 1)
            } else {
                Err(true)
            }
        } else {
            Ok(j as usize)
        }
    }

    /// A bar's row: cells left of the zero axis, the axis, the cells right of it; a bar beyond
    /// the scale ends in a clip mark at the edge.
    fn bar_row(&self, bar: &Bar) -> String {
        let mut glyphs: Vec<char> = (0..self.cells).map(|j| cell(bar, self.centre(j))).collect();
        match self.cell_of(bar.value) {
            Err(true) if bar.value > 0.0 => glyphs[self.cells - 1] = CLIPPED_HIGH,
            Err(false) if bar.value < 0.0 && self.negative > 0 => glyphs[0] = CLIPPED_LOW,
            _ => {}
        }
        let mut row: String = glyphs[..self.negative].iter().collect();
        row.push(AXIS);
        row.extend(&glyphs[self.negative..]);
        row
    }

    /// A point's row: the frame, the whisker over the band, the point; a point off the scale
    /// is a clip mark at the edge it is beyond.
    fn point_row(&self, bar: &Bar) -> String {
        let (low, high) = bar.band_ends();
        let mut glyphs: Vec<char> = (0..self.cells)
            .map(|j| {
                let c = self.centre(j);
                if low < high && (low..=high).contains(&c) {
                    WHISKER
                } else {
                    ' '
                }
            })
            .collect();
        match self.cell_of(bar.value) {
            Ok(j) => glyphs[j] = if bar.other { OTHER_POINT } else { POINT },
            Err(true) => glyphs[self.cells - 1] = CLIPPED_HIGH,
            Err(false) => glyphs[0] = CLIPPED_LOW,
        }
        let mut row = String::from(AXIS);
        row.extend(glyphs);
        row
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
        let first = if self.zero_axis { "0".to_string() } else { number(self.lowest) };
        put(axis, &first, &mut line);
        let high = number(self.highest);
        if let Some(at) = (indent + cells + 1).checked_sub(high.chars().count()) {
            put(at.max(axis + first.chars().count() + 1), &high, &mut line);
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

/// 1, 2 or 5 times a power of ten, at least `raw`: the step of an axis's round values.
pub(crate) fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let m = raw / power;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
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
pub(crate) mod tests {
    use super::*;

    /// A bar with a band of ± `error` (`other` when so labelled), for the tests of both renderers.
    pub(crate) fn bar(label: &str, value: f64, error: f64) -> Bar {
        Bar {
            label: label.into(),
            value,
            band: Band::Value(error),
            range: None,
            text: format!("{value} ±{error}"),
            edges: None,
            other: label == OTHER,
        }
    }

    fn of_kind(kind: Kind, bars: Vec<Bar>) -> Chart {
        let mut c = chart("t", vec![bars], true);
        c.panels[0].kind = kind;
        c.shares = kind == Kind::Bars;
        c
    }

    fn chart(title: &str, panels: Vec<Vec<Bar>>, shared_scale: bool) -> Chart {
        let panels = panels
            .into_iter()
            .enumerate()
            .map(|(i, bars)| Panel {
                heading: (panels_named(i)).then(|| format!("panel {i}")),
                kind: Kind::Bars,
                category: "c".into(),
                measure: "noisy count".into(),
                per_bin: false,
                bars,
            })
            .collect();
        Chart { title: title.into(), confidence: 0.95, panels, shared_scale, shares: false }
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
            edges: None,
            other: false,
        };
        let drawn = render(&chart("t", vec![vec![q("q=0.1", 10.0), q("q=0.9", 90.0)]], true), 100);
        assert!(!drawn.contains(OUTSIDE_BAND), "{drawn}");
        assert!(
            drawn.contains("±N rows: 95% bound on rank, not drawn") && drawn.contains("90 ±12 rows"),
            "{drawn}"
        );
    }

    /// `other` is ruled off, lighter, and not in the scale: the listed bars fill the width, and
    /// `other`, ten times larger, is clipped at the edge with its number beside it.
    #[test]
    fn other_is_drawn_apart_and_left_out_of_the_scale() {
        let drawn = render(
            &of_kind(Kind::Bars, vec![bar("a", 10.0, 1.0), bar("b", 20.0, 1.0), bar(OTHER, 200.0, 1.0)]),
            60,
        );
        let lines: Vec<&str> = drawn.lines().collect();
        let at = |label: &str| lines.iter().position(|l| l.starts_with(label)).unwrap();
        let length = |row: &str| row.chars().filter(|&c| c == SOLID || c == INSIDE_BAND).count();
        let (b, other) = (lines[at("b ")], lines[at("other ")]);
        assert!(lines[at("other ") - 1].contains(&rule(10)), "a rule above other:\n{drawn}");
        assert!(length(b) * 10 > length(lines[at("a ")]) * 18, "b is twice a: {drawn}");
        let cells = b.chars().filter(|&c| c != ' ').count();
        assert!(length(b) + 5 >= cells - 10, "b spans the scale, not other: {drawn}");
        assert!(
            other.contains(CLIPPED_HIGH) && other.contains(OTHER_SOLID) && !other.contains(SOLID),
            "{other}"
        );
        assert!(other.contains("200 ±1") && other.ends_with("87%"), "its number and share: {other}");
        assert!(
            drawn.contains("share of the drawn noisy total") && drawn.contains("not in the scale"),
            "{drawn}"
        );
    }

    /// Means are a dot and a whisker of ± error on an axis of their own values, not bars from 0.
    #[test]
    fn points_are_dots_with_whiskers_on_their_own_axis() {
        let drawn = render(&of_kind(Kind::Points, vec![bar("x", 1000.0, 10.0), bar("y", 1040.0, 20.0)]), 80);
        let rows = rows(&drawn);
        assert!(rows.iter().all(|r| r.matches(POINT).count() == 1 && !r.contains(SOLID)), "{drawn}");
        let whisker = |r: &str| r.matches([WHISKER, POINT]).count();
        // y's whisker is twice x's (within a cell at each end).
        let (x, y) = (whisker(rows[0]) as i64, whisker(rows[1]) as i64);
        assert!((y - 2 * x).abs() <= 3, "{x} {y}:\n{drawn}");
        // The point sits in the middle of its whisker.
        let centre = |r: &str| {
            let cells: Vec<char> = r.chars().collect();
            let first = cells.iter().position(|&c| c == WHISKER || c == POINT).unwrap() as i64;
            let last = cells.iter().rposition(|&c| c == WHISKER || c == POINT).unwrap() as i64;
            let point = cells.iter().position(|&c| c == POINT).unwrap() as i64;
            (point - first - (last - point)).abs()
        };
        assert!(centre(rows[0]) <= 1 && centre(rows[1]) <= 1, "{drawn}");
        let ruler = drawn.lines().last().unwrap().trim();
        assert!(
            !ruler.starts_with("0 ") && ruler.starts_with("9"),
            "the axis starts near the values: {ruler}"
        );
    }

    #[test]
    fn numeric_bins_are_labelled_as_ranges_and_shares_ignore_negatives() {
        assert_eq!(range_label(0.0, 10.0, false), "[0, 10)");
        assert_eq!(range_label(70.0, 80.5, true), "[70, 80.5]");
        let panel = |values: &[f64]| Panel {
            heading: None,
            kind: Kind::Bars,
            category: "c".into(),
            measure: "noisy count".into(),
            per_bin: true,
            bars: values.iter().map(|&v| bar("k", v, 1.0)).collect(),
        };
        assert_eq!(shares(&panel(&[30.0, -5.0, 10.0])), Some(vec![0.75, 0.0, 0.25]));
        assert_eq!(shares(&panel(&[-3.0, 0.0])), None);
        assert_eq!(
            (share_text(0.0), share_text(0.0421), share_text(0.5)),
            ("0%".into(), "4.2%".into(), "50%".into())
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
