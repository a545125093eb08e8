//! `--format chart` and `--plot FILE.svg`: snapshots of a fixed seeded release at two
//! terminal widths, the SVG as parsed XML, and when the plot is (not) written.

mod common;

use common::{dpstat, fails_with, fixture, json_of, seeded, stdout_of, unseeded};

const AGE: &[&str] =
    &["histogram", "--col", "age", "--bins", "8", "--lower", "0", "--upper", "80", "--eps", "0.5"];

const CHART_60: &str = r#"age: noisy counts, eps 0.5, add-remove
█▓ noisy count   ▓░ ±6: 95% accuracy bound, per bin
0..10  │█▓▓▓▓░░░░                                       7 ±6
10..20 │█▓▓▓▓░░░░                                       7 ±6
20..30 │█████████████████▓▓▓▓░░░░                      31 ±6
30..40 │███████████▓▓▓▓░░░░                            22 ±6
40..50 │███████████████▓▓▓▓░░░░                        28 ±6
50..60 │███████▓▓▓▓▓░░░░                               17 ±6
60..70 │██████████▓▓▓▓░░░░                             21 ±6
70..80 │██████████████████████████████████████▓▓▓▓░░░░ 62 ±6
       0                                            68
"#;

const CHART_100: &str = r#"age: noisy counts, eps 0.5, add-remove
█▓ noisy count   ▓░ ±6: 95% accuracy bound, per bin
0..10  │█▓▓▓▓▓▓▓▓░░░░░░░                                                                        7 ±6
10..20 │█▓▓▓▓▓▓▓▓░░░░░░░                                                                        7 ±6
20..30 │████████████████████████████████▓▓▓▓▓▓▓░░░░░░░░                                        31 ±6
30..40 │████████████████████▓▓▓▓▓▓▓▓░░░░░░░                                                    22 ±6
40..50 │████████████████████████████▓▓▓▓▓▓▓░░░░░░░░                                            28 ±6
50..60 │██████████████▓▓▓▓▓▓▓▓░░░░░░░                                                          17 ±6
60..70 │███████████████████▓▓▓▓▓▓▓▓░░░░░░░                                                     21 ±6
70..80 │███████████████████████████████████████████████████████████████████████▓▓▓▓▓▓▓░░░░░░░░ 62 ±6
       0                                                                                    68
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
    for (row, bin) in rows.iter().zip(bins) {
        let label = bin["bin"].as_str().unwrap();
        assert!(row.starts_with(label), "{row:?} should start with {label}");
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
fn chart_is_only_for_histograms() {
    fails_with(
        dpstat().args(["count", "--eps", "1", "--format", "chart"]).arg(fixture("people.csv")),
        &["--format chart", "--format text"],
    );
    fails_with(
        dpstat().args([
            "mean", "--col", "age", "--lower", "0", "--upper", "9", "--eps", "1", "--format", "chart",
        ]),
        &["--format"],
    );
}

// ---- SVG -----------------------------------------------------------------------------------

fn plot(dir: &std::path::Path, name: &str, extra: &[&str], file: &str, seed: u64) -> (String, String) {
    let path = dir.join(name);
    let out = stdout_of(seeded(seed).args(extra).args(["--plot"]).arg(&path).arg(fixture(file)));
    (out, std::fs::read_to_string(&path).expect("the plot is written"))
}

fn bars(doc: &roxmltree::Document) -> usize {
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(dpstat::report::svg::BAR_FILL))
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
    for line in csv.lines().skip(1) {
        let bin = line.split(',').next().unwrap();
        assert!(texts.contains(&bin), "bin {bin} is labelled");
    }
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
