//! Text output that shows what is known: `--with-error` prints each value with its error bound,
//! `--round` rounds it to the digits the noise leaves meaningful, and a release whose bound
//! covers every value the statistic can take says so on stderr. The bare number stays the
//! default.

mod common;

use common::{dpstat, fixture, json_of, one_number, stdout_of};

const MEAN: &[&str] = &["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "0.5"];

/// `V ± E (95%)` split into V and E.
fn with_error(line: &str) -> (f64, f64) {
    let line = line.trim_end().strip_suffix(" (95%)").unwrap_or_else(|| panic!("no (95%): {line:?}"));
    let (v, e) = line.split_once(" ± ").unwrap_or_else(|| panic!("no ±: {line:?}"));
    (v.parse().unwrap(), e.parse().unwrap())
}

#[test]
fn the_bare_number_stays_the_default() {
    let people = fixture("people.csv");
    let bare = one_number(&stdout_of(dpstat().args(MEAN).arg(&people)));
    let json = json_of(dpstat().args(MEAN).arg(&people));
    assert_eq!(bare, json["value"].as_f64().unwrap());
}

#[test]
fn with_error_prints_the_value_and_its_bound_rounded_up() {
    let people = fixture("people.csv");
    let json = json_of(dpstat().args(MEAN).arg(&people));
    let (value, bound) = (json["value"].as_f64().unwrap(), json["accuracy"]["error_bound"].as_f64().unwrap());
    let (v, e) = with_error(&stdout_of(dpstat().args(MEAN).arg("--with-error").arg(&people)));
    assert_eq!(v, value, "without --round the value is printed in full");
    assert!(e >= bound && e <= bound * 1.1, "{e} is {bound} rounded up to two significant digits");
    // --round: the value to the place of the bound's second digit, and the bound covers the move.
    let (v, e) = with_error(&stdout_of(dpstat().args(MEAN).args(["-E", "-r"]).arg(&people)));
    let step = 10f64.powi(bound.log10().floor() as i32 - 1);
    assert!((v - value).abs() <= step / 2.0 + 1e-9, "{v} is {value} rounded to {step}");
    assert_eq!((v / step).round() * step, v, "{v} is a multiple of {step}");
    assert!(e >= bound + (v - value).abs(), "{e} covers {bound} and the rounding");
    // --round alone: the same rounded value, bare.
    let rounded = one_number(&stdout_of(dpstat().args(MEAN).arg("--round").arg(&people)));
    assert_eq!(rounded, v);
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
