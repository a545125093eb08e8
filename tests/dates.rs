//! Dates and timestamps in cells are numbers (DESIGN §2.6): a date its day since 1970-01-01, a
//! timestamp its seconds since 1970-01-01T00:00:00Z.
//!
//! fixtures/dates.csv holds each value twice: `day` (dates, 1969 to 2025, 2024-02-29 among them)
//! beside `daynum` (its day number), and `at` (timestamps with `T` or a space, zones `Z`,
//! `+01:00`, `-0530`, `+09` or none, fractions of 1 to 9 digits, one before 1970) beside `atnum`
//! (its seconds as a decimal), the numbers computed by Python's datetime and decimal. With the
//! same seed a release over the dates must then be the release over the numbers, to the bit.

use crate::common;

use common::*;
use serde_json::Value;

/// The release of `args` over fixtures/dates.csv as JSON, its column name taken out (the one
/// field that may differ between a date column and its number column).
fn release(args: &[&str]) -> Value {
    let mut j = json_of(dpstat().args(args).arg(fixture("dates.csv")));
    j.as_object_mut().expect("a JSON object").remove("column");
    j
}

/// The column `name` of fixtures/dates.csv as written.
fn column(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(fixture("dates.csv")).expect("the fixture reads");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let i = header.iter().position(|h| *h == name).expect("the column exists");
    lines.map(|line| line.split(',').nth(i).expect("a full row").to_string()).collect()
}

#[test]
fn dates_release_what_their_day_numbers_release() {
    for unit in UNITS {
        for query in ["mean", "sum"] {
            let flags = |col| {
                [
                    query,
                    "--col",
                    col,
                    "--lower",
                    "-1000",
                    "--upper",
                    "21000",
                    "--eps",
                    "1",
                    "--neighbours",
                    unit,
                ]
            };
            let (dates, numbers) = (release(&flags("day")), release(&flags("daynum")));
            assert_eq!(dates, numbers, "{query} {unit}");
            // Both read every row: no cell was refused, skipped or imputed.
            let text = released(dpstat().args(flags("day")).arg(fixture("dates.csv")));
            assert!(one_number(&text).is_finite(), "{text}");
        }
    }
    // The day numbers themselves: a mean with little noise lands on the true mean of the days.
    let days: Vec<f64> = column("daynum").iter().map(|d| d.parse().unwrap()).collect();
    let truth = days.iter().sum::<f64>() / days.len() as f64;
    let flags = [
        "mean",
        "--col",
        "day",
        "--lower",
        "-1000",
        "--upper",
        "21000",
        "--eps",
        "1000",
        "--neighbours",
        "replace",
    ];
    let got = one_number(&released(dpstat().args(flags).arg(fixture("dates.csv"))));
    assert!((got - truth).abs() < 5.0, "mean day {got}, true {truth}");
}

#[test]
fn timestamps_release_what_their_seconds_release() {
    for unit in UNITS {
        for (query, lower, upper) in
            [("mean", "-20000000", "1800000000"), ("sum", "1600000000.5", "1800000000")]
        {
            let flags = |col| {
                [query, "--col", col, "--lower", lower, "--upper", upper, "--eps", "1", "--neighbours", unit]
            };
            assert_eq!(release(&flags("at")), release(&flags("atnum")), "{query} {unit}");
        }
    }
}

#[test]
fn filters_compare_dates_and_timestamps_as_their_numbers() {
    let pairs = [
        ("day>=2025-01-01", "daynum>=20089"),
        ("day<1970-01-01", "daynum<0"),
        ("at<2024-01-01T00:00:00Z", "atnum<1704067200"),
        ("at>=2024-02-29 02:52:36.5+02:00", "atnum>=1709167956.5"),
    ];
    for (dates, numbers) in pairs {
        for eps in ["1", "1000"] {
            let count = |filter| {
                released(dpstat().args(["count", "--where", filter, "--eps", eps]).arg(fixture("dates.csv")))
            };
            assert_eq!(count(dates), count(numbers), "{dates} at eps {eps}");
        }
    }
    // Not two empty selections: with little noise the count is the number of later days.
    let later = column("daynum").iter().filter(|d| d.parse::<i64>().unwrap() >= 20089).count();
    let text = released(
        dpstat().args(["count", "--where", "day>=2025-01-01", "--eps", "1000"]).arg(fixture("dates.csv")),
    );
    assert_eq!(one_number(&text), later as f64, "{text}");
    assert!(later > 0 && later < column("day").len());
}

#[test]
fn a_cell_that_only_looks_like_a_date_is_not_a_number() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("days.csv");
    std::fs::write(&path, "day\n2025-01-05\n2025-02-30\n2025-01-07T24:00\n2025-01-07\n").expect("written");
    let mean = || {
        let mut cmd = dpstat();
        cmd.args(["mean", "--col", "day", "--lower", "20000", "--upper", "20200", "--eps", "1"]).arg(&path);
        cmd
    };
    fails_with(&mut mean(), &["row 2 (line 3)", "'2025-02-30' is not a finite number"]);
    // Skipped, as any text would be; the two real dates remain.
    let text = released(mean().args(["--invalid", "skip"]));
    assert!((20000.0..=20200.0).contains(&one_number(&text)), "{text}");
    assert!(fails_with(
        dpstat().args(["count", "--where", "day>=2025-02-30", "--eps", "1"]).arg(&path),
        &["--where"]
    )
    .contains("not a finite number"));
}

#[test]
fn check_counts_dates_and_timestamps_as_numbers() {
    let out = dpstat().arg("check").arg(fixture("dates.csv")).output().expect("dpstat runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    let rows = column("day").len();
    for name in ["day", "daynum", "at", "atnum"] {
        assert!(
            report.contains(&format!("column '{name}': {rows} numbers, 0 other, 0 empty")),
            "{name}: {report}"
        );
    }
}
