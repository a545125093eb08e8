//! `--format chart`: a horizontal bar chart for the terminal, one bar per (label, value, error),
//! drawn with Unicode blocks and the ± accuracy band shaded around the end of each bar.
//!
//! It draws a list of [`Bar`]s, not a histogram type, so any release of labelled values
//! (histograms now, group-by releases later) can be drawn. The bars come from the noisy
//! release only: nothing here sees data or true counts.
//!
//! Reading a row: `█` is the bar up to the edge of its band, `▓` the rest of the bar inside
//! the band, `░` the band beyond the bar. So the bar ends where the value is (`█▓` together),
//! and `▓░` together span value ± error. A zero axis `│` separates negative noisy counts
//! (drawn to its left) from positive ones.

use std::fmt::Write;

use crate::report::release::Release;

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

/// One labelled value with its accuracy bound (|value − truth| <= error at the stated confidence).
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub error: f64,
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

/// The bars of a histogram release: its noisy counts, each with the per-bin bound.
pub fn bars_of(release: &Release) -> Option<Vec<Bar>> {
    let error = release.noise.accuracy.error_bound;
    let bins = release.bins.as_ref()?;
    Some(bins.iter().map(|b| Bar { label: b.bin.clone(), value: b.count as f64, error }).collect())
}

/// The two heading lines of a release's chart: what is drawn, and how to read the band.
pub fn title_of(release: &Release) -> Vec<String> {
    let column = release.column.as_deref().unwrap_or(release.query);
    let confidence = trim_number(release.noise.accuracy.confidence * 100.0);
    vec![
        format!("{column}: noisy counts, eps {}, {}", number(release.noise.epsilon), release.noise.neighbours),
        format!(
            "{SOLID}{INSIDE_BAND} noisy count   {INSIDE_BAND}{OUTSIDE_BAND} ±{}: {confidence}% accuracy bound, {}",
            number(release.noise.accuracy.error_bound),
            release.noise.accuracy.scope
        ),
    ]
}

/// A release drawn as a chart `width` columns wide.
pub fn render_release(release: &Release, width: usize) -> Option<String> {
    Some(render(&title_of(release), &bars_of(release)?, width))
}

/// Draws `bars` under `title`, every line at most `width` characters (given width >=
/// [`MIN_WIDTH`] and numbers that fit; labels and title lines are cut with `…`).
pub fn render(title: &[String], bars: &[Bar], width: usize) -> String {
    let width = width.max(MIN_WIDTH);
    let numbers: Vec<String> =
        bars.iter().map(|b| format!("{} ±{}", number(b.value), number(b.error))).collect();
    let number_width = numbers.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let longest_label = bars.iter().map(|b| b.label.chars().count()).max().unwrap_or(0);
    // label, space, bars, axis, space, numbers
    let fixed = number_width + 3;
    let mut label_width = longest_label.min(width / 3).max(1);
    if width < fixed + label_width + MIN_BAR_CELLS {
        label_width = width.saturating_sub(fixed + MIN_BAR_CELLS).max(3).min(longest_label.max(1));
    }
    let cells = width.saturating_sub(fixed + label_width).max(MIN_BAR_CELLS);
    let scale = Scale::new(bars, cells);

    let mut out = String::new();
    for line in title {
        out.push_str(&fit(line, width));
        out.push('\n');
    }
    for (bar, text) in bars.iter().zip(&numbers) {
        let _ = write!(out, "{} ", pad(&fit(&bar.label, label_width), label_width));
        for k in (0..scale.negative).rev() {
            out.push(cell(bar, -(k as f64 + 0.5) * scale.unit));
        }
        out.push(AXIS);
        for j in 0..cells - scale.negative {
            out.push(cell(bar, (j as f64 + 0.5) * scale.unit));
        }
        let _ = writeln!(out, " {text:>number_width$}");
    }
    out.push_str(&scale.ruler(label_width + 1, cells));
    out
}

/// Which glyph fills the cell centred at `c`.
fn cell(bar: &Bar, c: f64) -> char {
    let in_bar = if bar.value >= 0.0 { c > 0.0 && c <= bar.value } else { c < 0.0 && c >= bar.value };
    let in_band = (bar.value - bar.error..=bar.value + bar.error).contains(&c);
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
    fn new(bars: &[Bar], cells: usize) -> Scale {
        let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
        let lowest = bars.iter().map(|b| finite(b.value - b.error)).fold(0.0, f64::min);
        let mut highest = bars.iter().map(|b| finite(b.value + b.error)).fold(0.0, f64::max);
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
        Bar { label: label.into(), value, error }
    }

    fn widths(chart: &str) -> Vec<usize> {
        chart.lines().map(|l| l.chars().count()).collect()
    }

    #[test]
    fn every_line_fits_and_every_bar_is_drawn() {
        let bars = vec![
            bar("north", 31.0, 6.0),
            bar("a very long category name indeed", 12.0, 6.0),
            bar("other", -3.0, 6.0),
        ];
        for width in [30, 45, 60, 80, 100, 200] {
            let chart = render(&["title ".repeat(40)], &bars, width);
            assert!(widths(&chart).iter().all(|&w| w <= width), "width {width}:\n{chart}");
            assert_eq!(chart.lines().filter(|l| l.contains(AXIS)).count(), 3, "{chart}");
            assert!(chart.contains("31 ±6") && chart.contains("-3 ±6"), "{chart}");
        }
    }

    #[test]
    fn bands_straddle_the_end_of_each_bar() {
        let chart = render(&[], &[bar("a", 40.0, 10.0), bar("b", 0.0, 10.0)], 60);
        let rows: Vec<&str> = chart.lines().collect();
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
