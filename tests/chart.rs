//! `--format chart` and `--plot FILE.svg`: snapshots of a fixed seeded release at two
//! terminal widths, the SVG as parsed XML, and when the plot is (not) written.

use crate::common;

use common::{dpstat, fails_with, fixture, json_of, seeded, stdout_of, unseeded};

const AGE: &[&str] =
    &["histogram", "--col", "age", "--bins", "8", "--lower", "0", "--upper", "80", "--eps", "0.5"];

const CHART_60: &str = r#"histogram of age: noisy counts, eps 0.5, add-remove
█▓ noisy count   ▓░ ±6: 95% accuracy bound, per bin
[0, 10)  │█▓▓▓▓░░░                                      7 ±6
[10, 20) │█▓▓▓▓░░░                                      7 ±6
[20, 30) │████████████████▓▓▓▓░░░░                     31 ±6
[30, 40) │██████████▓▓▓▓░░░░                           22 ±6
[40, 50) │██████████████▓▓▓▓░░░░                       28 ±6
[50, 60) │███████▓▓▓▓░░░░                              17 ±6
[60, 70) │██████████▓▓▓▓░░░                            21 ±6
[70, 80] │████████████████████████████████████▓▓▓▓░░░░ 62 ±6
         0                                          68
"#;

const CHART_100: &str = r#"histogram of age: noisy counts, eps 0.5, add-remove
█▓ noisy count   ▓░ ±6: 95% accuracy bound, per bin
[0, 10)  │█▓▓▓▓▓▓▓▓░░░░░░░                                                                      7 ±6
[10, 20) │█▓▓▓▓▓▓▓▓░░░░░░░                                                                      7 ±6
[20, 30) │███████████████████████████████▓▓▓▓▓▓▓░░░░░░░░                                       31 ±6
[30, 40) │████████████████████▓▓▓▓▓▓▓░░░░░░░░                                                  22 ±6
[40, 50) │███████████████████████████▓▓▓▓▓▓▓▓░░░░░░░                                           28 ±6
[50, 60) │██████████████▓▓▓▓▓▓▓░░░░░░░                                                         17 ±6
[60, 70) │███████████████████▓▓▓▓▓▓▓░░░░░░░                                                    21 ±6
[70, 80] │█████████████████████████████████████████████████████████████████████▓▓▓▓▓▓▓▓░░░░░░░ 62 ±6
         0                                                                                  68
"#;

fn chart_at(columns: &str) -> String {
    stdout_of(
        dpstat().args(AGE).args(["--format", "chart"]).arg(fixture("people.csv")).env("COLUMNS", columns),
    )
}

fn assert_fits(chart: &str, width: usize) {
    for line in chart.lines() {
        assert!(line.chars().count() <= width, "line wider than {width}: {line:?}");
    }
}

#[test]
fn chart_snapshot_at_60_columns() {
    let chart = chart_at("60");
    assert_eq!(chart, CHART_60, "\n--- expected ---\n{CHART_60}\n--- got ---\n{chart}");
    assert_fits(&chart, 60);
}

#[test]
fn chart_snapshot_at_100_columns() {
    let chart = chart_at("100");
    assert_eq!(chart, CHART_100, "\n--- expected ---\n{CHART_100}\n--- got ---\n{chart}");
    assert_fits(&chart, 100);
}

#[test]
fn chart_draws_the_noisy_release_and_nothing_else() {
    let release = json_of(dpstat().args(AGE).arg(fixture("people.csv")));
    let chart = chart_at("80");
    let bins = release["bins"].as_array().unwrap();
    let bound = release["accuracy"]["error_bound"].as_f64().unwrap();
    let rows: Vec<&str> = chart.lines().filter(|l| l.contains('│')).collect();
    assert_eq!(rows.len(), bins.len(), "one bar per bin:\n{chart}");
    assert!(chart.starts_with("histogram of age: noisy counts"), "{chart}");
    for (i, (row, bin)) in rows.iter().zip(bins).enumerate() {
        // The bin as a range: [L, U), the last one closed.
        let close = if i + 1 == bins.len() { ']' } else { ')' };
        let (lower, upper) = (bin["lower"].as_f64().unwrap(), bin["upper"].as_f64().unwrap());
        let label = format!("[{lower}, {upper}{close}");
        assert!(row.starts_with(&label), "{row:?} should start with {label}");
        assert!(row.ends_with(&format!(" {} ±{bound}", bin["count"])), "{row:?} vs {bin}");
    }
}

#[test]
fn chart_fits_narrow_and_wide_terminals_and_cuts_long_labels() {
    let categories = "apple,pear,fig & date,a very long fruit name that needs cutting";
    for width in [30usize, 45, 72, 150] {
        let chart = stdout_of(
            dpstat()
                .args(["histogram", "--col", "fruit", "--categories", categories, "--eps", "0.3"])
                .args(["--format", "chart"])
                .arg(fixture("ux_fruit.csv"))
                .env("COLUMNS", width.to_string()),
        );
        assert_fits(&chart, width);
        assert_eq!(chart.lines().filter(|l| l.contains('│')).count(), 5, "{chart}");
        if width < 120 {
            assert!(chart.contains('…'), "a long label is cut at width {width}:\n{chart}");
        }
    }
}

#[test]
fn a_chart_needs_several_numbers() {
    for one in [
        &["count", "--eps", "1"][..],
        &["mean", "--col", "age", "--lower", "0", "--upper", "9", "--eps", "1"],
        &["median", "--col", "age", "--lower", "0", "--upper", "9", "--eps", "1"],
        &["quantile", "--col", "age", "--q", "0.5", "--eps", "1"],
    ] {
        fails_with(
            dpstat().args(one).args(["--format", "chart"]).arg(fixture("people.csv")),
            &["several numbers", "this release is one number", "--with-error"],
        );
        fails_with(
            dpstat().args(one).args(["--plot", "x.svg"]).arg(fixture("people.csv")),
            &["several numbers", "this release is one number"],
        );
    }
}

/// Bar rows of a terminal chart, as (label, printed number).
fn chart_rows(chart: &str) -> Vec<(String, String)> {
    chart
        .lines()
        .filter(|l| l.contains('│'))
        .map(|l| {
            let glyphs = ['│', '░', '▓', '█', '▒', '●', '○', '─', '▸', '◂'];
            let label = l.split(' ').next().unwrap().to_string();
            let number = l.rsplit(glyphs).next().unwrap().trim().to_string();
            (label, number)
        })
        .collect()
}

#[test]
fn grouped_releases_chart_one_bar_per_group_with_its_own_bound() {
    let people = fixture("people.csv");
    let mean = ["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "1"];
    let by = ["--by", "region", "--keys", "north,south,east,west"];
    let json = json_of(dpstat().args(mean).args(by).arg(&people));
    let chart = stdout_of(
        dpstat()
            .args(mean)
            .args(by)
            .args(["--format", "chart", "--full-precision"])
            .arg(&people)
            .env("COLUMNS", "90"),
    );
    assert!(chart.starts_with("mean of income by region: eps 1, add-remove\n"), "{chart}");
    let rows = chart_rows(&chart);
    let groups = json["groups"].as_array().unwrap();
    assert_eq!(rows.len(), groups.len(), "{chart}");
    for ((label, number), group) in rows.iter().zip(groups) {
        assert_eq!(label, group["key"].as_str().unwrap());
        let (value, bound) = number.split_once(" ±").unwrap();
        let (value, bound): (f64, f64) = (value.parse().unwrap(), bound.parse().unwrap());
        let (want, want_bound) =
            (group["value"].as_f64().unwrap(), group["accuracy"]["error_bound"].as_f64().unwrap());
        assert!((value - want).abs() <= want.abs() * 1e-3 + 1.0, "{number} vs {want}");
        assert!((bound - want_bound).abs() <= want_bound * 1e-3 + 1.0, "{number} vs {want_bound}");
    }
    // A grouped histogram: one panel per group, headed by its key, all on one scale.
    let histogram = ["histogram", "--col", "region", "--categories", "north,south", "--by", "urban_rural"];
    let chart = stdout_of(
        dpstat().args(histogram).args(["--keys", "1,2", "--eps", "1", "--format", "chart"]).arg(&people),
    );
    for heading in ["urban_rural = 1", "urban_rural = 2", "urban_rural = other"] {
        assert!(chart.lines().any(|l| l == heading), "{heading}:\n{chart}");
    }
    assert_eq!(chart_rows(&chart).len(), 9, "{chart}");
    let axes: Vec<usize> = chart
        .lines()
        .filter(|l| l.contains('│'))
        .map(|l| l.chars().position(|c| c == '│').unwrap())
        .collect();
    assert!(axes.iter().all(|&a| a == axes[0]), "one scale, one zero axis:\n{chart}");
}

#[test]
fn quantile_sets_chart_their_values_with_their_rank_bounds() {
    let args = [
        "quantile",
        "--col",
        "income",
        "--q",
        "0.1,0.5,0.9",
        "--lower",
        "0",
        "--upper",
        "200000",
        "--eps",
        "1",
    ];
    let file = fixture("incomes_20k.csv");
    let json = json_of(dpstat().args(args).arg(&file));
    let chart = stdout_of(dpstat().args(args).args(["--format", "chart"]).arg(&file));
    assert!(chart.contains("±N rows: 95% bound on rank, not drawn") && !chart.contains('░'), "{chart}");
    for ((label, number), q) in chart_rows(&chart).iter().zip(json["quantiles"].as_array().unwrap()) {
        assert_eq!(label, &format!("q={}", q["q"]));
        let rows = q["rank_error_bound"].as_f64().unwrap().ceil();
        assert_eq!(number, &format!("{} ±{rows} rows", q["value"].as_f64().unwrap()), "{chart}");
    }
}

#[test]
fn workloads_chart_one_panel_per_query_each_on_its_own_scale() {
    let chart = stdout_of(
        dpstat()
            .args(["run", "--format", "chart"])
            .arg(fixture("compose_grouped.toml"))
            .arg(fixture("people.csv"))
            .env("COLUMNS", "80"),
    );
    assert!(chart.starts_with("workload: 2 queries, eps 0.5 in all, add-remove\n"), "{chart}");
    assert!(chart.contains("\nincome_by_area: mean of income by urban_rural\n"), "{chart}");
    assert!(chart.contains("\nregions: histogram of region\n"), "{chart}");
    let labels: Vec<String> = chart_rows(&chart).into_iter().map(|r| r.0).collect();
    assert_eq!(labels, ["1", "2", "other", "north", "south", "east", "west", "other"], "{chart}");
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("w.svg");
    stdout_of(
        dpstat()
            .args(["run", "--plot"])
            .arg(&svg)
            .arg(fixture("compose_grouped.toml"))
            .arg(fixture("people.csv")),
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed");
    assert_eq!(bars(&doc), 5, "a bar per count");
    assert_eq!(with_class(&doc, "point").len() + with_class(&doc, "clip").len(), 3, "a point per mean");
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).map(str::trim).collect();
    for label in
        ["urban_rural", "region", "noisy mean of income", "noisy count", "regions: histogram of region"]
    {
        assert!(texts.contains(&label), "{label} labels an axis or a panel: {texts:?}");
    }
}

// ---- SVG -----------------------------------------------------------------------------------

fn plot(dir: &std::path::Path, name: &str, extra: &[&str], file: &str, seed: u64) -> (String, String) {
    let path = dir.join(name);
    let out = stdout_of(seeded(seed).args(extra).args(["--plot"]).arg(&path).arg(fixture(file)));
    (out, std::fs::read_to_string(&path).expect("the plot is written"))
}

/// Bars and bins, `other`'s included (shares are not bars).
fn bars(doc: &roxmltree::Document) -> usize {
    doc.descendants()
        .filter(|n| {
            n.has_tag_name("rect")
                && n.attribute("class").is_some_and(|c| c.starts_with("bar") || c.starts_with("bin"))
        })
        .count()
}

#[test]
fn svg_is_well_formed_xml_with_one_bar_per_bin() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, svg) = plot(dir.path(), "age.svg", AGE, "people.csv", 1);
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    assert_eq!(bars(&doc), 8, "one bar per bin");
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).map(str::trim).collect();
    let ticks: Vec<&str> = with_class(&doc, "tick-x").iter().filter_map(|n| n.text()).collect();
    let bins = with_class(&doc, "bin");
    for (line, bin) in csv.lines().skip(1).zip(&bins) {
        // Each bin's edges are values on the x axis, and its count is its tooltip.
        let (range, count) = line.split_once(',').unwrap();
        let (lower, upper) = range.split_once("..").unwrap();
        assert!(ticks.contains(&lower) && ticks.contains(&upper), "{range} on the axis: {ticks:?}");
        let title = bin.children().find_map(|c| c.text()).unwrap();
        assert!(
            title.starts_with(&format!("[{lower}, {upper}")) && title.contains(&format!(": {count} ±6")),
            "{title}"
        );
    }
    assert!(texts.contains(&"age") && texts.contains(&"noisy count"), "the axes are titled");
    assert!(texts.iter().any(|t| t.contains("error bars ±6")), "the axis says what the error bars are");
}

#[test]
fn svg_escapes_category_names() {
    let dir = tempfile::tempdir().unwrap();
    let categories = "apple,pear,fig & date,a very long fruit name that needs cutting";
    let args = ["histogram", "--col", "fruit", "--categories", categories, "--eps", "0.3"];
    let (_, svg) = plot(dir.path(), "fruit.svg", &args, "ux_fruit.csv", 4);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed despite '&' in a category");
    assert_eq!(bars(&doc), 5, "four categories and other");
    assert!(doc.descendants().any(|n| n.text().map(str::trim) == Some("fig & date")));
}

#[test]
fn plot_is_written_after_the_ledger_charge_and_never_for_a_refused_release() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("budget.jsonl");
    let svg = dir.path().join("age.svg");
    let mut cmd = unseeded();
    cmd.args(AGE)
        .args(["--invalid", "skip", "--ledger"])
        .arg(&ledger)
        .args(["--budget", "0.7", "--plot"])
        .arg(&svg);
    stdout_of(cmd.arg(fixture("people.csv")));
    assert!(svg.exists() && std::fs::read_to_string(&ledger).unwrap().contains("histogram"));
    std::fs::remove_file(&svg).unwrap();
    // 0.5 of 0.7 is spent: a second release at 0.5 is refused with exit 3 and draws nothing.
    let out = unseeded()
        .args(AGE)
        .args(["--invalid", "skip", "--ledger"])
        .arg(&ledger)
        .args(["--plot"])
        .arg(&svg)
        .arg(fixture("people.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty() && !svg.exists(), "a refused release writes no plot");
}

#[test]
fn a_grouped_plot_has_labelled_axes_error_bars_and_a_light_grid() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["count", "--by", "region", "--keys", "north,south,east,west", "--eps", "0.5"];
    let (csv, svg) = plot(dir.path(), "c.svg", &args, "people.csv", 1);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed");
    assert_eq!(bars(&doc), csv.lines().count() - 1, "a bar per group, other included");
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).map(str::trim).collect();
    for label in ["region", "noisy count", "count by region: eps 0.5, add-remove", "other"] {
        assert!(texts.contains(&label), "{label} is drawn: {texts:?}");
    }
    assert!(texts.iter().any(|t| t.starts_with("error bars ±6: 95% accuracy bound")), "{texts:?}");
    // The grid: one light line per value tick, none between them.
    let grid = doc.descendants().filter(|n| n.attribute("stroke") == Some("#E4E4E4")).count();
    assert!((3..=12).contains(&grid), "{grid} grid lines");
}

#[test]
fn plot_errors_come_before_any_data_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/age.svg");
    fails_with(
        dpstat().args(AGE).args(["--plot"]).arg(&missing).arg(fixture("people.csv")),
        &["--plot", "does not exist"],
    );
    fails_with(
        dpstat().args(AGE).args(["--plot"]).arg(dir.path()).arg(fixture("people.csv")),
        &["--plot", "directory"],
    );
    // Only SVG is written: a .png (or no extension) is refused, not filled with SVG bytes.
    for name in ["age.png", "age", "age.svg.pdf"] {
        let path = dir.path().join(name);
        fails_with(
            dpstat().args(AGE).args(["--plot"]).arg(&path).arg(fixture("people.csv")),
            &["--plot", "SVG only", ".svg"],
        );
        assert!(!path.exists());
    }
    stdout_of(dpstat().args(AGE).args(["--plot"]).arg(dir.path().join("AGE.SVG")).arg(fixture("people.csv")));
    // A release that fails on its data writes no plot either.
    let svg = dir.path().join("bad.svg");
    let region_bins =
        ["histogram", "--col", "region", "--bins", "3", "--lower", "0", "--upper", "3", "--eps", "1"];
    fails_with(
        dpstat().args(region_bins).args(["--plot"]).arg(&svg).arg(fixture("people.csv")),
        &["--invalid"],
    );
    assert!(!svg.exists());
}

// ---- What the SVG looks like: each chart kind, parsed and rasterised -------------------------

/// The SVG drawn as a viewer would (resvg), encoded as PNG and read back with an independent
/// decoder (png): (width, height, RGBA). Text is drawn only with `fonts` (the system's, for
/// the PNGs a person looks at); the tests' pixel checks do not need it.
fn rasterise(svg: &str, fonts: bool) -> (Vec<u8>, u32, u32, Vec<u8>) {
    let mut options = resvg::usvg::Options::default();
    if fonts {
        let fonts = options.fontdb_mut();
        fonts.load_system_fonts();
        // `sans-serif` is a viewer's choice; here, one that Debian installs.
        fonts.set_sans_serif_family("DejaVu Sans");
    }
    let tree = resvg::usvg::Tree::from_str(svg, &options).expect("resvg parses the SVG");
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("a non-empty size");
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    let png = pixmap.encode_png().expect("PNG encoding");
    let mut reader = png::Decoder::new(std::io::Cursor::new(&png)).read_info().expect("a PNG header");
    let mut rgba = vec![0; reader.output_buffer_size().expect("a buffer size")];
    let frame = reader.next_frame(&mut rgba).expect("a PNG frame");
    assert_eq!(frame.color_type, png::ColorType::Rgba);
    rgba.truncate(frame.buffer_size());
    (png, frame.width, frame.height, rgba)
}

/// Pixels in the rectangle [x0, x1) × [y0, y1) that are not white.
fn inked(rgba: &[u8], width: u32, (x0, y0, x1, y1): (f64, f64, f64, f64)) -> usize {
    let height = rgba.len() as u32 / 4 / width;
    let (x0, x1) = (x0.max(0.0) as u32, (x1 as u32).min(width));
    let (y0, y1) = (y0.max(0.0) as u32, (y1 as u32).min(height));
    let mut n = 0;
    for y in y0..y1 {
        for x in x0..x1 {
            let i = ((y * width + x) * 4) as usize;
            if rgba[i..i + 3].iter().any(|&c| c < 200) {
                n += 1;
            }
        }
    }
    n
}

fn attr(node: &roxmltree::Node, name: &str) -> f64 {
    node.attribute(name).unwrap_or_else(|| panic!("{name} of {node:?}")).parse().unwrap()
}

fn with_class<'a>(doc: &'a roxmltree::Document, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.attribute("class").is_some_and(|c| c.split(' ').next() == Some(class)))
        .collect()
}

fn is_other(node: &roxmltree::Node) -> bool {
    node.attribute("class").is_some_and(|c| c.split(' ').any(|w| w == "other"))
}

/// The value→pixel map of the x axis below a plot, read off its tick labels (value, x).
fn x_axis(doc: &roxmltree::Document, nth_panel: usize) -> impl Fn(f64) -> f64 {
    // Panels' ticks come in order; a panel's are the run whose y is the same.
    let ticks = with_class(doc, "tick-x");
    let mut runs: Vec<Vec<(f64, f64)>> = vec![];
    let mut last_y = f64::NAN;
    for t in ticks {
        let y = attr(&t, "y");
        let text = t.text().unwrap().trim_end_matches('%');
        let point = (text.parse::<f64>().unwrap(), attr(&t, "x"));
        if y == last_y {
            runs.last_mut().unwrap().push(point);
        } else {
            runs.push(vec![point]);
            last_y = y;
        }
    }
    let run = &runs[nth_panel];
    let ((v0, x0), (v1, x1)) = (run[0], run[run.len() - 1]);
    move |v| x0 + (v - v0) / (v1 - v0) * (x1 - x0)
}

/// One chart of each kind through the real binary: its name, its arguments, its input.
const KINDS: &[(&str, &[&str], &str)] = &[
    ("histogram", AGE, "people.csv"),
    (
        "histogram_by_group",
        &[
            "histogram",
            "--col",
            "age",
            "--bins",
            "8",
            "--lower",
            "0",
            "--upper",
            "80",
            "--by",
            "urban_rural",
            "--keys",
            "1,2",
            "--eps",
            "1",
        ],
        "people.csv",
    ),
    (
        "means_by_group",
        &[
            "mean",
            "--col",
            "income",
            "--lower",
            "0",
            "--upper",
            "200000",
            "--by",
            "region",
            "--keys",
            "north,south,east,west",
            "--eps",
            "1",
            // Every digit, so the printed value and bound can be checked against the whiskers.
            "--full-precision",
        ],
        "people.csv",
    ),
    (
        "quantiles",
        &[
            "quantile",
            "--col",
            "income",
            "--q",
            "0.1,0.25,0.5,0.75,0.9",
            "--lower",
            "0",
            "--upper",
            "200000",
            "--eps",
            "1",
        ],
        "incomes_20k.csv",
    ),
    (
        "counts_by_group",
        &["count", "--by", "region", "--keys", "north,south,east,west", "--eps", "0.5"],
        "people.csv",
    ),
    (
        "categories_by_group",
        &[
            "histogram",
            "--col",
            "region",
            "--categories",
            "north,south",
            "--by",
            "urban_rural",
            "--keys",
            "1,2",
            "--eps",
            "1",
        ],
        "people.csv",
    ),
    (
        "categories",
        &["histogram", "--col", "fruit", "--categories", "apple,pear,fig & date", "--eps", "0.3"],
        "ux_fruit.csv",
    ),
];

/// A chart kind is written, parses, rasterises to a PNG whose marks are inked, and draws what
/// its kind should. With `DPSTAT_CHART_PNG_DIR` set, the PNG (with text, in the system's fonts)
/// is written there to look at.
fn check_kind(kind: &str) {
    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("DPSTAT_CHART_PNG_DIR").map(std::path::PathBuf::from);
    let plots: Vec<(&str, String)> = if kind == "workload" {
        let workload = dir.path().join("workload.svg");
        stdout_of(
            seeded(1)
                .args(["run", "--plot"])
                .arg(&workload)
                .arg(fixture("compose_grouped.toml"))
                .arg(fixture("people.csv")),
        );
        vec![("workload", std::fs::read_to_string(&workload).unwrap())]
    } else {
        let &(name, args, file) = KINDS.iter().find(|k| k.0 == kind).unwrap();
        vec![(name, plot(dir.path(), &format!("{name}.svg"), args, file, 1).1)]
    };
    for (name, svg) in &plots {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (png, width, height, rgba) = rasterise(svg, keep.is_some());
        assert_eq!(
            (width as f64, height as f64),
            (attr(&doc.root_element(), "width"), attr(&doc.root_element(), "height"))
        );
        // Every mark is drawn where it is said to be: ink inside each bar, bin and point.
        let marks: Vec<_> = ["bin", "bar", "share"].iter().flat_map(|c| with_class(&doc, c)).collect();
        for m in &marks {
            let (x, y, w, h) = (attr(m, "x"), attr(m, "y"), attr(m, "width"), attr(m, "height"));
            if w >= 2.0 && h >= 2.0 {
                assert!(
                    inked(&rgba, width, (x + 0.5, y + 0.5, x + w - 0.5, y + h - 0.5)) > 0,
                    "{name}: {m:?} is blank"
                );
            }
        }
        for p in with_class(&doc, "point") {
            let (cx, cy, r) = (attr(&p, "cx"), attr(&p, "cy"), attr(&p, "r"));
            assert!(inked(&rgba, width, (cx - r, cy - r, cx + r, cy + r)) > 0, "{name}: {p:?} is blank");
        }
        assert!(!marks.is_empty() || !with_class(&doc, "point").is_empty(), "{name} draws nothing");
        match *name {
            "histogram" | "histogram_by_group" => {
                // Bins touch: each one's right edge is the next one's left, panel by panel.
                let bins = with_class(&doc, "bin");
                assert_eq!(bins.len() % 8, 0, "{name}");
                for panel in bins.chunks(8) {
                    for pair in panel.windows(2) {
                        let right = attr(&pair[0], "x") + attr(&pair[0], "width");
                        assert!(
                            (right - attr(&pair[1], "x")).abs() < 1e-6,
                            "{name}: {right} vs {:?}",
                            pair[1]
                        );
                    }
                }
            }
            "means_by_group" => {
                // Each whisker spans the mean ± its bound (cut at [0, 200000]) on the axis's scale.
                let x = x_axis(&doc, 0);
                let whiskers: Vec<_> = with_class(&doc, "error")
                    .into_iter()
                    .filter(|n| attr(n, "y1") == attr(n, "y2"))
                    .collect();
                let values: Vec<_> = with_class(&doc, "value").into_iter().filter_map(|n| n.text()).collect();
                assert_eq!((whiskers.len(), values.len()), (5, 5), "{name}");
                for (w, text) in whiskers.iter().zip(values).filter(|(w, _)| !is_other(w)) {
                    let (v, e) = text.split_once(" ±").unwrap();
                    let (v, e): (f64, f64) = (v.parse().unwrap(), e.parse().unwrap());
                    let (lo, hi) = ((v - e).max(0.0), (v + e).min(200000.0));
                    assert!(
                        (attr(w, "x1") - x(lo)).abs() < 0.5 && (attr(w, "x2") - x(hi)).abs() < 0.5,
                        "{text}: {w:?}"
                    );
                }
            }
            "categories_by_group" => {
                // `other` does not set the scale: a listed bar fills much of its axis, and an
                // `other` beyond the axis is clipped with its number printed.
                let listed = with_class(&doc, "bar").into_iter().filter(|b| !is_other(b));
                let widest = listed.map(|b| attr(&b, "width")).fold(0.0, f64::max);
                let axis = with_class(&doc, "axis")[0];
                assert!(widest > 0.6 * (attr(&axis, "x2") - attr(&axis, "x1")), "{name}: {widest}");
                let clipped: Vec<_> =
                    with_class(&doc, "clipped").into_iter().filter_map(|n| n.text()).collect();
                assert!(!clipped.is_empty() && with_class(&doc, "clip").len() == clipped.len(), "{name}");
                assert!(!with_class(&doc, "share").is_empty(), "{name}: shares are drawn");
            }
            _ => {}
        }
        if let Some(keep) = &keep {
            std::fs::create_dir_all(keep).unwrap();
            std::fs::write(keep.join(format!("{name}.png")), &png).unwrap();
        }
    }
}

#[test]
fn plot_a_histogram() {
    check_kind("histogram");
}

#[test]
fn plot_a_histogram_by_group() {
    check_kind("histogram_by_group");
}

#[test]
fn plot_means_by_group() {
    check_kind("means_by_group");
}

#[test]
fn plot_quantiles() {
    check_kind("quantiles");
}

#[test]
fn plot_counts_by_group() {
    check_kind("counts_by_group");
}

#[test]
fn plot_categories_by_group() {
    check_kind("categories_by_group");
}

#[test]
fn plot_categories() {
    check_kind("categories");
}

#[test]
fn plot_a_workload() {
    check_kind("workload");
}
