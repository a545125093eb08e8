//! Text output that shows what is known: by default each value is rounded to the digits the
//! noise leaves meaningful (`--digits N` and `--full-precision` say otherwise), `--with-error`
//! prints each value with its error bound, and a release whose bound covers every value the
//! statistic can take says so on stderr. The bare number stays the default.

use crate::common;

use common::{dpstat, fails_with, fixture, json_of, one_number, stdout_of};

const MEAN: &[&str] = &["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "0.5"];

/// `V ± E (95%)` split into V and E.
fn with_error(line: &str) -> (f64, f64) {
    let line = line.trim_end().strip_suffix(" (95%)").unwrap_or_else(|| panic!("no (95%): {line:?}"));
    let (v, e) = line.split_once(" ± ").unwrap_or_else(|| panic!("no ±: {line:?}"));
    (v.parse().unwrap(), e.parse().unwrap())
}

/// The place of a bound's second significant digit: the step a value is rounded to.
fn step_of(bound: f64) -> f64 {
    10f64.powi(bound.log10().floor() as i32 - 1)
}

#[test]
fn the_default_is_the_bare_number_rounded_to_its_accuracy() {
    let people = fixture("people.csv");
    let json = json_of(dpstat().args(MEAN).arg(&people));
    let (value, bound) = (json["value"].as_f64().unwrap(), json["accuracy"]["error_bound"].as_f64().unwrap());
    let text = stdout_of(dpstat().args(MEAN).arg(&people));
    let bare = one_number(&text);
    let step = step_of(bound);
    assert!((bare - value).abs() <= step / 2.0 + 1e-9, "{bare} is {value} rounded to {step}");
    assert_eq!((bare / step).round() * step, bare, "{bare} is a multiple of {step}");
    assert_ne!(bare, value, "this seed's mean has digits below {step}");
    // --full-precision: every digit, the JSON's value exactly.
    let full = one_number(&stdout_of(dpstat().args(MEAN).arg("--full-precision").arg(&people)));
    assert_eq!(full, value);
    // --round (-r), the opt-in before it was the default, changes nothing.
    for flag in ["--round", "-r"] {
        assert_eq!(stdout_of(dpstat().args(MEAN).arg(flag).arg(&people)), text, "{flag}");
    }
}

#[test]
fn with_error_prints_the_value_and_its_bound_rounded_up() {
    let people = fixture("people.csv");
    let json = json_of(dpstat().args(MEAN).arg(&people));
    let (value, bound) = (json["value"].as_f64().unwrap(), json["accuracy"]["error_bound"].as_f64().unwrap());
    let (v, e) = with_error(&stdout_of(dpstat().args(MEAN).args(["-E", "--full-precision"]).arg(&people)));
    assert_eq!(v, value, "with --full-precision the value is printed in full");
    assert!(e >= bound && e <= bound * 1.1, "{e} is {bound} rounded up to two significant digits");
    // By default: the value to the place of the bound's second digit, and the bound covers the move.
    let (v, e) = with_error(&stdout_of(dpstat().args(MEAN).arg("-E").arg(&people)));
    let step = step_of(bound);
    assert!((v - value).abs() <= step / 2.0 + 1e-9, "{v} is {value} rounded to {step}");
    assert_eq!((v / step).round() * step, v, "{v} is a multiple of {step}");
    assert!(e >= bound + (v - value).abs(), "{e} covers {bound} and the rounding");
    assert!(e <= bound + (v - value).abs() + step, "{e} is rounded up by less than one step");
    // The bare default is the same rounded value.
    assert_eq!(one_number(&stdout_of(dpstat().args(MEAN).arg(&people))), v);
}

/// `--digits N`: N significant digits for every value, whatever the bound, and a bound that still
/// covers the rounding; out of 1..=17 it is refused in one line, before anything is read.
#[test]
fn digits_give_n_significant_digits_and_are_checked() {
    let people = fixture("people.csv");
    let json = json_of(dpstat().args(MEAN).arg(&people));
    let (value, bound) = (json["value"].as_f64().unwrap(), json["accuracy"]["error_bound"].as_f64().unwrap());
    for n in [1, 3, 6] {
        let (v, e) =
            with_error(&stdout_of(dpstat().args(MEAN).args(["-E", "--digits", &n.to_string()]).arg(&people)));
        let step = 10f64.powi(value.abs().log10().floor() as i32 - n + 1);
        assert!((v - value).abs() <= step / 2.0 + 1e-9, "--digits {n}: {v} is {value} to {step}");
        assert_eq!((v / step).round() * step, v, "--digits {n}: {v} is a multiple of {step}");
        assert!(e >= bound + (v - value).abs(), "--digits {n}: {e} covers {bound} and the rounding");
    }
    // 17 digits give the double back.
    assert_eq!(one_number(&stdout_of(dpstat().args(MEAN).args(["--digits", "17"]).arg(&people))), value);
    for bad in ["0", "18", "-1", "two"] {
        fails_with(dpstat().args(MEAN).args(["--digits", bad]).arg(&people), &["--digits", "1 to 17"]);
    }
    fails_with(
        dpstat().args(MEAN).args(["--digits", "3", "--full-precision"]).arg(&people),
        &["--digits", "--full-precision"],
    );
}

/// JSON has every value in full whatever the text flags say: the same bytes.
#[test]
fn json_ignores_the_rounding_flags() {
    let people = fixture("people.csv");
    let run =
        |extra: &[&str]| stdout_of(dpstat().args(MEAN).args(["--format", "json"]).args(extra).arg(&people));
    let plain = run(&[]);
    for extra in [&["--digits", "2"][..], &["--full-precision"], &["-r"]] {
        assert_eq!(run(extra), plain, "{extra:?}");
    }
    let describe = |extra: &[&str]| {
        stdout_of(
            dpstat()
                .args(["describe", "--cols", "income:0:200000", "--eps", "1", "-f", "json"])
                .args(extra)
                .arg(&people),
        )
    };
    assert_eq!(describe(&["--digits", "2"]), describe(&[]));
}

/// A count is never given decimals; an exact one (the public n under replace) prints whole with
/// ±0; histogram bins, --by groups, quantiles and the describe table follow the same rule.
#[test]
fn every_text_output_is_rounded_the_same_way() {
    let people = fixture("people.csv");
    let count = stdout_of(dpstat().args(["count", "--eps", "1", "-E"]).arg(&people));
    assert!(count.trim_end().ends_with(" (95%)") && !count.contains('.'), "{count}");
    let table = stdout_of(
        dpstat()
            .args(["describe", "--cols", "income:0:200000", "--eps", "1", "--neighbours", "replace"])
            .arg(&people),
    );
    let row: Vec<&str> = table.lines().nth(1).unwrap().split("  ").filter(|c| !c.is_empty()).collect();
    assert_eq!(row[3].trim(), "200 ±0", "the public n, exactly: {table}");
    // The mean, rounded: its digits stop at its bound's second one.
    let (mean, mean_bound) = row[4].trim().split_once(" ±").unwrap();
    let (mean, mean_bound): (f64, f64) = (mean.parse().unwrap(), mean_bound.parse().unwrap());
    let step = step_of(mean_bound);
    assert!((mean / step - (mean / step).round()).abs() < 1e-9, "{mean} at {step}: {table}");
    // describe takes the output flags as the statistics do.
    let full = stdout_of(
        dpstat()
            .args([
                "describe",
                "--cols",
                "income:0:200000",
                "--eps",
                "1",
                "--neighbours",
                "replace",
                "--full-precision",
            ])
            .arg(&people),
    );
    assert!(full.lines().nth(1).unwrap().split_whitespace().nth(6).unwrap().contains('.'), "in full: {full}");
    for flags in [&["-r"][..], &["--digits", "3"]] {
        stdout_of(
            dpstat().args(["describe", "--cols", "income:0:200000", "--eps", "1"]).args(flags).arg(&people),
        );
    }
    // Grouped and histogram CSVs: the value column is rounded, a count column stays whole.
    let grouped = stdout_of(
        dpstat()
            .args(["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "1"])
            .args(["--by", "region", "--keys", "north,south", "-E"])
            .arg(&people),
    );
    for line in grouped.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let (v, e): (f64, f64) = (cells[1].parse().unwrap(), cells[2].parse().unwrap());
        let step = 10f64.powi(e.log10().floor() as i32 - 1);
        assert!((v / step - (v / step).round()).abs() < 1e-9 || v.abs() < step, "{line}");
    }
    let normalized = stdout_of(
        dpstat()
            .args([
                "histogram",
                "--col",
                "region",
                "--categories",
                "north,south",
                "--eps",
                "1",
                "--normalize",
            ])
            .arg(&people),
    );
    for line in normalized.lines().skip(1) {
        let share = line.split(',').nth(1).unwrap();
        assert!(share.len() <= 6, "a proportion to the digits its bound supports: {normalized}");
    }
    // A quantile prints as the public candidate it is: 0.6, not 0.5999999999999999.
    let quantile = stdout_of(
        dpstat()
            .args(["quantile", "--col", "age", "--q", "0.1,0.3,0.7", "--lower", "0", "--upper", "0.7"])
            .args(["--resolution", "8", "--eps", "1"])
            .arg(&people),
    );
    let full = stdout_of(
        dpstat()
            .args(["quantile", "--col", "age", "--q", "0.1,0.3,0.7", "--lower", "0", "--upper", "0.7"])
            .args(["--resolution", "8", "--eps", "1", "--full-precision"])
            .arg(&people),
    );
    assert!(full.contains("99999"), "this seed's candidates carry binary noise in full: {full}");
    for (short, long) in quantile.lines().zip(full.lines()).skip(1) {
        let (a, b) = (short.split(',').nth(1).unwrap(), long.split(',').nth(1).unwrap());
        assert_eq!(
            a.parse::<f64>().unwrap(),
            format!("{:.14e}", b.parse::<f64>().unwrap()).parse::<f64>().unwrap()
        );
        assert!(a.len() <= 3, "{short}");
    }
}

#[test]
fn csv_releases_get_an_error_column_at_the_stated_confidence() {
    let people = fixture("people.csv");
    let histogram =
        ["histogram", "--col", "age", "--bins", "4", "--lower", "0", "--upper", "80", "--eps", "1"];
    let json = json_of(dpstat().args(histogram).args(["--confidence", "0.9"]).arg(&people));
    let bound = json["accuracy"]["error_bound"].as_f64().unwrap();
    let text = stdout_of(dpstat().args(histogram).args(["--confidence", "0.9", "-E"]).arg(&people));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("bin,count,error(90%)"));
    for (line, bin) in lines.zip(json["bins"].as_array().unwrap()) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[..2], [bin["bin"].as_str().unwrap(), &bin["count"].to_string()]);
        assert_eq!(cells[2].parse::<f64>().unwrap(), bound.ceil(), "{line}");
    }
    let grouped = ["count", "--by", "region", "--keys", "north,south", "--eps", "1", "-E"];
    let text = stdout_of(dpstat().args(grouped).arg(&people));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "key,value,error(95%)");
    assert_eq!(lines.len(), 4, "north, south and other:\n{text}");
    assert!(lines[3].starts_with("other,"), "{text}");
    let quantile =
        ["quantile", "--col", "age", "--q", "0.25,0.75", "--lower", "0", "--upper", "100", "--eps", "1"];
    let json = json_of(dpstat().args(quantile).arg(&people));
    let text = stdout_of(dpstat().args(quantile).arg("-E").arg(&people));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "q,value,rank_error(95%)");
    let rank = json["quantiles"][0]["rank_error_bound"].as_f64().unwrap();
    assert!(lines[1].ends_with(&format!(",{}", rank.ceil())), "{text} vs {rank}");
    let median = stdout_of(
        dpstat()
            .args(["median", "--col", "age", "--lower", "0", "--upper", "100"])
            .args(["--eps", "1", "-E"])
            .arg(&people),
    );
    assert!(median.contains(" (rank within ±") && median.ends_with(" rows, 95%)\n"), "{median}");
}

#[test]
fn a_release_whose_bound_covers_every_possible_value_warns() {
    let warning = "covers every value it can take, [0, 100]";
    for file in ["people.csv", "incomes_20k.csv"] {
        let out = dpstat()
            .args(["mean", "--col", "income", "--lower", "0", "--upper", "100", "--eps", "0.000000001"])
            .arg(fixture(file))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.contains(warning), "{file}: {stderr}");
        assert!(stderr.contains("the mean of income") && stderr.contains("--eps"), "{stderr}");
    }
    let out = dpstat().args(MEAN).arg(fixture("incomes_20k.csv")).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("covers every value"),
        "a useful release is quiet"
    );
    // Grouped: one line naming the groups; a workload names the query.
    let out = dpstat()
        .args(["variance", "--col", "age", "--lower", "0", "--upper", "100", "--eps", "0.001"])
        .args(["--by", "region", "--keys", "north,south"])
        .arg(fixture("people.csv"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("covers every value")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("the variance of age in ") && lines[0].contains("[0, 2500]"), "{stderr}");
}

/// `--format csv` of a single release: always a header and the error column; a lone number is
/// `value,error(95%)` (a median's bound in rows of rank), several numbers the text's CSV.
#[test]
fn csv_format_of_a_single_release_has_a_header_and_the_error() {
    use common::{csv_records, printed_as};
    let mean = ["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "0.5"];
    let records =
        csv_records(&stdout_of(dpstat().args(mean).args(["--format", "csv"]).arg(fixture("people.csv"))));
    let json = json_of(dpstat().args(mean).arg(fixture("people.csv")));
    assert_eq!(records.len(), 2);
    assert_eq!(records[0], ["value", "error(95%)"]);
    assert!(printed_as(&records[1][0], json["value"].as_f64().unwrap()), "{records:?}");
    let bound: f64 = records[1][1].parse().unwrap();
    assert!(bound >= json["accuracy"]["error_bound"].as_f64().unwrap(), "a rounded bound is rounded up");

    let median =
        ["median", "--col", "age", "--lower", "0", "--upper", "100", "--eps", "1", "--format", "csv"];
    let records = csv_records(&stdout_of(dpstat().args(median).arg(fixture("people.csv"))));
    assert_eq!(records[0], ["value", "rank_error(95%)"]);

    let histogram = ["histogram", "--col", "region", "--categories", "north,south", "--eps", "1"];
    let records = csv_records(&stdout_of(
        dpstat().args(histogram).args(["--format", "csv"]).arg(fixture("people.csv")),
    ));
    let json = json_of(dpstat().args(histogram).arg(fixture("people.csv")));
    assert_eq!(records[0], ["bin", "count", "error(95%)"]);
    let bins = json["bins"].as_array().unwrap();
    assert_eq!(records.len(), 1 + bins.len());
    for (row, bin) in records[1..].iter().zip(bins) {
        assert_eq!(row[0], bin["bin"].as_str().unwrap());
        assert_eq!(row[1], bin["count"].to_string());
    }
}

/// Bin edges print as the grid values they are, L + i·(U − L)/K, with no binary noise: in text
/// and JSON alike, and the same for bounds found privately (powers of two).
#[test]
fn bin_edges_print_as_their_grid_values() {
    let people = fixture("people.csv");
    let args = ["histogram", "--col", "score", "--bins", "5", "--lower", "0", "--upper", "0.7", "--eps", "1"];
    let text = stdout_of(dpstat().args(args).arg(&people));
    let labels: Vec<&str> = text.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(labels, ["0..0.14", "0.14..0.28", "0.28..0.42", "0.42..0.56", "0.56..0.7"], "{text}");
    let json = json_of(dpstat().args(args).arg(&people));
    let bins = json["bins"].as_array().unwrap();
    assert_eq!(bins[2]["upper"].as_f64(), Some(0.42), "{json}");
    assert_eq!(bins[3]["lower"].as_f64(), Some(0.42), "{json}");
    let private = ["histogram", "--col", "income", "--bins", "5", "--eps", "1"];
    let text = stdout_of(dpstat().args(private).arg(fixture("incomes_20k.csv")));
    let json = json_of(dpstat().args(private).arg(fixture("incomes_20k.csv")));
    assert_eq!(json["bounds"]["source"], "private", "{json}");
    for (line, bin) in text.lines().skip(1).zip(json["bins"].as_array().unwrap()) {
        let label = line.split(',').next().unwrap();
        let (lower, upper) = label.split_once("..").unwrap();
        assert_eq!(label, bin["bin"].as_str().unwrap());
        assert_eq!(lower.parse::<f64>().ok(), bin["lower"].as_f64(), "{line}");
        assert_eq!(upper.parse::<f64>().ok(), bin["upper"].as_f64(), "{line}");
        // (U − L)/5 of two powers of two has one decimal: no edge has binary noise.
        assert!(lower.split_once('.').is_none_or(|(_, f)| f.len() == 1), "{label}");
    }
}
