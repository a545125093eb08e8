//! `dpstat histogram`: noisy counts over public bins — K equal-width bins over [L, U] with
//! out-of-range values clamped into the edge bins, or a public category list plus `other`.
//! L1 sensitivity 1 under add-remove, 2 under replace; integer counts.
//!
//! Hand-checked truths:
//! - income.csv ages 30, 45, 22, 67, 51, 38, 29, 74; 3 bins over [25, 70] (edges 40, 55):
//!   22 is below and 74 above the range, so [4, 2, 2] (dropping them would give [3, 2, 1]).
//! - income.csv incomes over [0, 60000] in 2 bins: 1000, 2500, -500, 12000, 0 | 300000, 45000.5,
//!   60000 = [5, 3] (0 is L, 60000 is U).
//! - people.csv ages in 8 bins over [0, 80] (awk): [0, 5, 30, 23, 32, 21, 25, 64]; regions:
//!   north 53, south 56, east 41, west 47, central 3.
//! - categories.csv colours: red 3, green 2, blue 2, and purple, an empty cell and `Red` in
//!   `other`; rows with size=1: green and red.

use crate::common;

use assert_cmd::Command;
use common::*;
use predicates::str::contains;
use serde_json::Value;

/// Text output of a histogram: the CSV header `bin,count`, then one `label,count` row per bin.
fn table(text: &str) -> Vec<(String, i64)> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("bin,count"), "header: {text:?}");
    assert!(text.ends_with('\n'), "final newline: {text:?}");
    lines
        .map(|line| {
            let (bin, count) = line.rsplit_once(',').unwrap_or_else(|| panic!("not bin,count: {line:?}"));
            let count = count.parse().unwrap_or_else(|e| panic!("count is not an integer ({e}): {line:?}"));
            (bin.to_string(), count)
        })
        .collect()
}

fn counts(text: &str) -> Vec<i64> {
    table(text).into_iter().map(|(_, c)| c).collect()
}

/// `dpstat histogram --col C --bins K --lower L --upper U`.
fn numeric(col: &str, bins: &str, lower: &str, upper: &str) -> Command {
    let mut cmd = dpstat();
    cmd.args(["histogram", "--col", col, "--bins", bins, "--lower", lower, "--upper", upper]);
    cmd
}

/// `dpstat histogram --col C --categories LIST`.
fn categorical(col: &str, categories: &str) -> Command {
    let mut cmd = dpstat();
    cmd.args(["histogram", "--col", col, "--categories", categories]);
    cmd
}

/// The JSON of a histogram checked against the text release of the same seed.
fn assert_histogram_json(j: &Value, text: &str, col: &str, unit: &str, eps: f64) {
    assert_eq!(j["query"], "histogram", "{j}");
    assert_eq!(j["column"], col, "{j}");
    let bins = j["bins"].as_array().unwrap_or_else(|| panic!("bins: {j}"));
    let rows = table(text);
    assert_eq!(bins.len(), rows.len(), "{j}");
    for (bin, (label, count)) in bins.iter().zip(&rows) {
        assert_eq!(bin["bin"], label.as_str(), "{j}");
        assert_eq!(bin["count"], *count, "{j}");
    }
    let delta = if unit == "replace" { 2.0 } else { 1.0 };
    assert_eq!(j["epsilon"], eps, "{j}");
    assert_eq!(j["neighbours"], unit, "{j}");
    assert!(j["mechanism"].as_str().is_some_and(|m| m.contains("laplace")), "{j}");
    assert_eq!(j["sensitivity"], delta, "L1 sensitivity under {unit}: {j}");
    assert_eq!(j["scale"], delta / eps, "{j}");
    assert_eq!(j["accuracy"]["confidence"], 0.95, "{j}");
    assert!(j["accuracy"]["error_bound"].as_f64().is_some_and(|b| b > 0.0), "{j}");
    assert!(j["accuracy"].to_string().contains("per bin"), "the bound is per bin: {j}");
    if unit == "add-remove" {
        assert!(j.get("rows").is_none(), "n is private under add-remove: {j}");
    }
}

#[test]
fn numeric_bins_in_every_unit_format_and_source() {
    for unit in UNITS {
        let mut texts = vec![];
        for source in Source::ALL {
            let args = ["--eps", "1", "--neighbours", unit];
            let text = released(source.feed(numeric("age", "3", "25", "70").args(args), "income.csv"));
            assert_eq!(table(&text).len(), 3, "{text}");
            let j = json_of(source.feed(numeric("age", "3", "25", "70").args(args), "income.csv"));
            assert_histogram_json(&j, &text, "age", unit, 1.0);
            texts.push(text);
        }
        assert!(texts.iter().all(|t| *t == texts[0]), "{unit}: {texts:?}");
    }
}

#[test]
fn categories_in_every_unit_format_and_source() {
    for unit in UNITS {
        let mut texts = vec![];
        for source in Source::ALL {
            let args = ["--eps", "1", "--neighbours", unit];
            let text =
                released(source.feed(categorical("colour", "red,green,blue").args(args), "categories.csv"));
            let labels: Vec<String> = table(&text).into_iter().map(|(b, _)| b).collect();
            assert_eq!(labels, ["red", "green", "blue", "other"], "one row per category, then other");
            let j =
                json_of(source.feed(categorical("colour", "red,green,blue").args(args), "categories.csv"));
            assert_histogram_json(&j, &text, "colour", unit, 1.0);
            texts.push(text);
        }
        assert!(texts.iter().all(|t| *t == texts[0]), "{unit}: {texts:?}");
    }
}

#[test]
fn large_epsilon_counts_are_the_hand_computed_counts() {
    let age_3 = ["--col", "age", "--bins", "3", "--lower", "25", "--upper", "70"];
    let age_1 = ["--col", "age", "--bins", "1", "--lower", "25", "--upper", "70"];
    let income_2 = ["--col", "income", "--bins", "2", "--lower", "0", "--upper", "60000"];
    let people_age = ["--col", "age", "--bins", "8", "--lower", "0", "--upper", "80"];
    let cases: [(&[&str], &str, &[i64]); 7] = [
        (&age_3, "income.csv", &[4, 2, 2]),
        (&age_1, "income.csv", &[8]),
        (&income_2, "income.csv", &[5, 3]),
        (&people_age, "people.csv", &[0, 5, 30, 23, 32, 21, 25, 64]),
        (&["--col", "colour", "--categories", "red,green,blue"], "categories.csv", &[3, 2, 2, 3]),
        (&["--col", "colour", "--categories", "blue"], "categories.csv", &[2, 8]),
        (&["--col", "region", "--categories", "north,south,east,west"], "people.csv", &[53, 56, 41, 47, 3]),
    ];
    for (args, file, want) in cases {
        for unit in UNITS {
            let assert = dpstat()
                .arg("histogram")
                .args(args)
                .args(["--eps", "1000", "--neighbours", unit])
                .arg(fixture(file))
                .assert()
                .success()
                .stderr(contains("protect"));
            let text = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
            assert_eq!(counts(&text), want, "{args:?} {file} {unit}: {text}");
        }
    }
}

#[test]
fn out_of_range_values_are_clamped_into_the_edge_bins() {
    // Edges 1000 | 25500 | 50000. Below the range: -500, 0; above: 300000, 60000; 1000 is L.
    // So 1000, 2500, -500, 12000, 0 | 300000, 45000.5, 60000; dropping them would give [3, 1].
    let text =
        stdout_of(numeric("income", "2", "1000", "50000").args(["--eps", "1000"]).arg(fixture("income.csv")));
    assert_eq!(counts(&text), [5, 3], "{text}");
    let total: i64 = counts(&text).iter().sum();
    assert_eq!(total, 8, "every row lands in exactly one bin");
}

#[test]
fn where_filters_rows_in_both_units() {
    for unit in UNITS {
        let mut cmd = categorical("colour", "red,green,blue");
        cmd.args(["--eps", "1000", "--neighbours", unit, "--where", "size=1"]);
        let text = stdout_of(cmd.arg(fixture("categories.csv")));
        assert_eq!(counts(&text), [1, 1, 0, 0], "{unit}: {text}");
    }
}

#[test]
fn values_on_interior_edges_land_in_the_bin_they_open() {
    let text =
        stdout_of(numeric("x", "100", "0", "100").args(["--eps", "1000"]).arg(fixture("bin_edges.csv")));
    let got = counts(&text);
    let mut want = vec![0; 100];
    for x in [28, 29, 30, 57, 58] {
        want[x] = 1;
    }
    let wrong: Vec<(usize, i64, i64)> =
        (0..100).filter(|&i| got[i] != want[i]).map(|i| (i, got[i], want[i])).collect();
    assert!(wrong.is_empty(), "(bin, got, want): {wrong:?}");
}

#[test]
fn integer_bin_edges_print_as_integers() {
    let text = stdout_of(numeric("x", "100", "0", "100").args(["--eps", "1"]).arg(fixture("bin_edges.csv")));
    let labels: Vec<String> = table(&text).into_iter().map(|(b, _)| b).collect();
    let want: Vec<String> = (0..100).map(|i| format!("{i}..{}", i + 1)).collect();
    let wrong: Vec<(&String, &String)> = labels.iter().zip(&want).filter(|(g, w)| g != w).collect();
    assert!(wrong.is_empty(), "(got, want): {wrong:?}");
}

#[test]
fn sensitivity_is_one_or_two_and_scale_is_sensitivity_over_epsilon() {
    for (eps, e) in [("0.5", 0.5), ("4", 4.0)] {
        for (unit, delta) in [("add-remove", 1.0), ("replace", 2.0)] {
            for mut cmd in [numeric("age", "3", "25", "70"), categorical("region", "north,south")] {
                let j = json_of(cmd.args(["--eps", eps, "--neighbours", unit]).arg(fixture("income.csv")));
                assert_eq!(j["sensitivity"], delta, "{j}");
                assert_eq!(j["scale"], delta / e, "{j}");
            }
        }
    }
}

#[test]
fn accuracy_bound_is_per_bin_discrete_laplace_tail() {
    // Scale s: P(|Z| > t) = 2p^(t+1)/(1+p) with p = e^(-1/s). s = 1: t = 3; s = 2 (replace): t = 6.
    for (unit, bound) in [("add-remove", 3.0), ("replace", 6.0)] {
        let mut cmd = categorical("region", "north,south");
        let j = json_of(cmd.args(["--eps", "1", "--neighbours", unit]).arg(fixture("income.csv")));
        assert_eq!(j["accuracy"]["error_bound"], bound, "{unit}: {j}");
    }
}

#[test]
fn header_only_file_releases_noise_around_zero() {
    for unit in UNITS {
        let text = stdout_of(
            numeric("amount", "2", "0", "1")
                .args(["--eps", "1000", "--neighbours", unit])
                .arg(fixture("header_only.csv")),
        );
        assert_eq!(counts(&text), [0, 0], "{unit}");
        let text = stdout_of(
            categorical("label", "a,b")
                .args(["--eps", "1000", "--neighbours", unit])
                .arg(fixture("header_only.csv")),
        );
        assert_eq!(counts(&text), [0, 0, 0], "{unit}");
    }
}

#[test]
fn bad_cells_in_numeric_bins_follow_the_invalid_policy() {
    let run = |policy: &str, unit: &str| {
        let mut cmd = numeric("reading", "2", "0", "100");
        cmd.args(["--eps", "1000", "--neighbours", unit, "--invalid", policy]);
        counts(&stdout_of(cmd.arg(fixture("bad_cells.csv"))))
    };
    // 10 and 20 in [0, 50); six cells are not numbers.
    assert_eq!(run("skip", "add-remove"), [2, 0]);
    for unit in UNITS {
        assert_eq!(run("impute=70", unit), [2, 6], "{unit}");
        assert_eq!(run("impute=-5", unit), [8, 0], "{unit}: the imputed value is clamped too");
    }
    fails_with(
        numeric("reading", "2", "0", "100").args(["--eps", "1"]).arg(fixture("bad_cells.csv")),
        &["bad_cells.csv", "row 2", "reading", "'abc'", "--invalid"],
    );
    fails_with(
        numeric("reading", "2", "0", "100")
            .args(["--eps", "1", "--neighbours", "replace", "--invalid", "skip"])
            .arg(fixture("bad_cells.csv")),
        &["--invalid skip", "replace"],
    );
}

#[test]
fn bins_and_categories_are_validated() {
    let income = fixture("income.csv");
    fails_with(numeric("age", "0", "0", "80").args(["--eps", "1"]).arg(&income), &["--bins"]);
    fails_with(
        numeric("age", "18446744073709551615", "0", "80").args(["--eps", "1"]).arg(&income),
        &["--bins"],
    );
    fails_with(numeric("age", "3", "80", "0").args(["--eps", "1"]).arg(&income), &["--lower", "--upper"]);
    fails_with(
        dpstat()
            .args(["histogram", "--col", "age", "--bins", "3", "--lower", "0", "--eps", "1"])
            .arg(&income),
        &["--lower", "--upper"],
    );
    fails_with(
        dpstat().args(["histogram", "--col", "age", "--eps", "1"]).arg(&income),
        &["--bins", "--categories"],
    );
    for list in ["north,,south", "north,", ",north", ""] {
        fails_with(categorical("region", list).args(["--eps", "1"]).arg(&income), &["--categories"]);
    }
    fails_with(
        categorical("region", "north,south,north").args(["--eps", "1"]).arg(&income),
        &["--categories", "north"],
    );
    fails_with(
        categorical("region", "north,other").args(["--eps", "1"]).arg(&income),
        &["--categories", "other"],
    );
}

/// Bounds whose bin edges would overflow a double (printing `-inf..NaN`) are refused before any
/// data is read: the file named does not even exist.
#[test]
fn huge_bounds_are_refused_before_reading() {
    for (lower, upper) in [("-1e308", "1e308"), ("0", "1e289"), ("-1e300", "0")] {
        fails_with(
            numeric("x", "8", lower, upper).args(["--eps", "1", "no-such-file.csv"]),
            &["--lower/--upper must lie within ±1e288"],
        );
    }
    let text =
        stdout_of(numeric("age", "2", "-1e288", "1e288").args(["--eps", "1"]).arg(fixture("income.csv")));
    assert!(!text.contains("inf") && !text.contains("NaN"), "{text}");
}

/// Bins times `--by` groups are capped, so flags alone cannot exhaust memory: refused before
/// anything is allocated or read (the file named does not even exist).
#[test]
fn bins_times_keys_are_capped_before_reading() {
    let keys: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    let mut cmd = numeric("x", "100000", "0", "1");
    cmd.args(["--by", "k", "--keys", &keys.join(","), "--eps", "1", "no-such-file.csv"]);
    fails_with(&mut cmd, &["100100000 counts", "more than the 256 MiB", "fewer bins"]);
}

#[test]
fn same_seed_same_release_and_different_seeds_differ() {
    let run = |seed| {
        let mut cmd = seeded(seed);
        cmd.args(["histogram", "--col", "region", "--categories", "north,south,east,west"]);
        stdout_of(cmd.args(["--eps", "0.01"]).arg(fixture("people.csv")))
    };
    assert_eq!(run(9), run(9));
    assert_ne!(run(1), run(2));
}
