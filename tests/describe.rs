//! `dpstat describe`: several columns' count, mean and quantiles in one pass, through the real
//! binary on fixtures/people.csv (200 rows; columns id, age, income, region, urban_rural, score).

use crate::common;

use std::fs;

use common::{dpstat, fails_with, fixture, seeded, stdout_of};
use serde_json::Value;

/// A column of people.csv, as numbers.
fn column(name: &str) -> Vec<f64> {
    let text = fs::read_to_string(fixture("people.csv")).unwrap();
    let mut lines = text.lines();
    let at = lines.next().unwrap().split(',').position(|h| h == name).unwrap();
    lines.map(|l| l.split(',').nth(at).unwrap().parse().unwrap()).collect()
}

/// The table's cells, split on runs of two or more spaces.
fn table(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect())
        .collect()
}

/// "12.5 ±3" (or "12.5 ±3 rows") → (12.5, 3).
fn value_and_bound(cell: &str) -> (f64, f64) {
    let (value, rest) = cell.split_once(" ±").unwrap_or_else(|| panic!("no ± in {cell:?}"));
    let bound = rest.trim_end_matches(" rows");
    (value.parse().unwrap(), bound.parse().unwrap())
}

#[test]
fn text_is_one_aligned_row_per_column_with_each_values_bound() {
    // ε = 10000: a quarter each for the means and quantiles; the noise is negligible.
    let text = stdout_of(
        dpstat()
            .args(["describe", "--cols", "income:0:200000,age:0:120", "--q", "0.5,0.9", "--eps", "10000"])
            .arg(fixture("people.csv")),
    );
    let rows = table(&text);
    assert_eq!(rows[0], ["column", "epsilon", "bounds", "count", "mean", "q0.5", "q0.9"], "{text}");
    assert_eq!(rows.len(), 4, "{text}");
    assert_eq!(rows[3][..3], ["total", "10000", "-"], "{text}");
    // Aligned: the second and third cells start at the same offset on every line.
    let starts = |line: &str| {
        let mut at = vec![];
        let mut i = 0;
        for _ in 0..2 {
            i += line[i..].find(' ').unwrap();
            i += line[i..].find(|c| c != ' ').unwrap();
            at.push(i);
        }
        at
    };
    let first = starts(text.lines().next().unwrap());
    assert!(text.lines().all(|l| starts(l) == first), "{text}");
    for (row, name, bounds, upper) in
        [(&rows[1], "income", "[0, 200000]", 200000.0), (&rows[2], "age", "[0, 120]", 120.0)]
    {
        assert_eq!((row[0].as_str(), row[1].as_str(), row[2].as_str()), (name, "5000", bounds), "{text}");
        let (count, count_bound) = value_and_bound(&row[3]);
        assert_eq!(count, 200.0, "{text}");
        assert!(count_bound >= 0.0);
        let values = column(name);
        let truth = values.iter().map(|x| x.clamp(0.0, upper)).sum::<f64>() / values.len() as f64;
        let (mean, mean_bound) = value_and_bound(&row[4]);
        assert!(
            (mean - truth).abs() <= mean_bound && mean_bound < upper * 1e-4,
            "{name}: {mean} vs {truth}: {text}"
        );
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        for (cell, q) in [(&row[5], 0.5), (&row[6], 0.9)] {
            let (value, rank_bound) = value_and_bound(cell);
            let at = (q * 200.0) as usize;
            // Within two rows, in rank, of the true quantile (candidates are a grid).
            assert!(value >= sorted[at - 3] && value <= sorted[at + 2], "{name} q{q}: {value}: {text}");
            assert!(rank_bound > 0.0 && rank_bound < 1.0, "{text}");
        }
    }
}

#[test]
fn json_is_a_workload_one_line_per_query_with_exact_shares() {
    let text = stdout_of(
        dpstat()
            .args(["describe", "--cols", "income:0:200000,age:0:120", "--q", "0.25,0.75", "--eps", "1"])
            .args(["--where", "age>=30", "--format", "json"])
            .arg(fixture("people.csv")),
    );
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["count", "income.mean", "income.quantile", "age.mean", "age.quantile"]);
    // The count is the means' two count shares (1/8 each); each mean keeps its shifted sum's.
    let shares: Vec<&str> = lines.iter().map(|l| l["epsilon_exact"].as_str().unwrap()).collect();
    assert_eq!(shares, ["1/4", "1/8", "1/4", "1/8", "1/4"]);
    for line in &lines {
        assert_eq!(line["total_epsilon_exact"], "1/1", "{line}");
        assert_eq!(line["where"], serde_json::json!(["age>=30"]), "{line}");
        assert!(line["insecure_seed"].as_bool().unwrap(), "{line}");
    }
    let levels: Vec<f64> =
        lines[4]["quantiles"].as_array().unwrap().iter().map(|q| q["q"].as_f64().unwrap()).collect();
    assert_eq!(levels, [0.25, 0.75]);
    assert_eq!(lines[4]["quantiles"][0]["epsilon_exact"], "1/8");
}

/// Under add-remove with `--invalid error` or `impute=V` every mean is over the same rows, so
/// one noisy count is drawn (the query `count`) and every mean divides by it: the same draw,
/// listed as the part `shared_count`, not charged to the mean. With `skip` a row leaves one
/// column's mean only, so each mean draws its own count; under replace n is public.
#[test]
fn the_means_share_one_noisy_count_only_over_the_same_rows() {
    let lines = |extra: &[&str]| -> Vec<Value> {
        let text = stdout_of(
            dpstat()
                .args(["describe", "--cols", "income:0:200000,age:0:120,score:0:100", "--eps", "3"])
                .args(extra)
                .args(["--format", "json"])
                .arg(fixture("people.csv")),
        );
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let names = |lines: &[Value]| -> Vec<String> {
        lines.iter().map(|l| l["name"].as_str().unwrap().to_string()).collect()
    };
    for policy in ["error", "impute=0"] {
        let lines = lines(&["--invalid", policy]);
        assert_eq!(names(&lines)[0], "count", "{policy}");
        let count = &lines[0];
        assert_eq!((count["query"].as_str(), count["epsilon_exact"].as_str()), (Some("count"), Some("3/4")));
        let means: Vec<&Value> = lines.iter().filter(|l| l["query"] == "mean").collect();
        assert_eq!(means.len(), 3);
        for mean in means {
            let parts: Vec<&str> =
                mean["parts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
            assert_eq!(parts, ["shifted_sum", "shared_count"], "{mean}");
            assert_eq!(mean["parts"][1]["value_units"], count["value"].to_string(), "{mean}");
            assert_eq!(mean["parts"][1]["epsilon_exact"], "3/4", "{mean}");
            // Charged: the shifted sum only.
            assert_eq!(mean["epsilon_exact"], "1/4", "{mean}");
            assert_eq!(mean["accounting"]["epsilon_exact"], "1/4", "{mean}");
            assert!(mean["post_processing"][0].as_str().unwrap().contains("shared noisy count"), "{mean}");
        }
    }
    for extra in [&["--invalid", "skip"][..], &["--neighbours", "replace"]] {
        let lines = lines(extra);
        assert_eq!(
            names(&lines),
            ["income.mean", "income.quantile", "age.mean", "age.quantile", "score.mean", "score.quantile"],
            "{extra:?}"
        );
        for mean in lines.iter().filter(|l| l["query"] == "mean") {
            assert_eq!(mean["epsilon_exact"], "1/2", "{extra:?} {mean}");
            let shared = mean["parts"].as_array().into_iter().flatten().any(|p| p["name"] == "shared_count");
            assert!(!shared, "{extra:?} {mean}");
        }
    }
}

#[test]
fn a_column_without_bounds_finds_the_means_privately_and_says_so() {
    let out = dpstat()
        .args(["describe", "--cols", "income", "--eps", "1"])
        .arg(fixture("incomes_20k.csv"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(table(&text)[1][2].ends_with("private"), "{text}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("note: income.mean: bounds ["), "{stderr}");
}

#[test]
fn replace_prints_the_public_row_count() {
    let text = stdout_of(
        dpstat()
            .args(["describe", "--cols", "age:0:120", "--eps", "1", "--neighbours", "replace"])
            .arg(fixture("people.csv")),
    );
    assert_eq!(table(&text)[1][3], "200 ±0", "{text}");
}

#[test]
fn mistakes_are_refused_before_reading() {
    let people = fixture("people.csv");
    let cases: [(&[&str], &[&str]); 9] = [
        (&["--cols", "income:0"], &["--cols", "NAME:LOWER:UPPER"]),
        (&["--cols", "age:120:0"], &["--cols 'age'", "lower"]),
        (&["--cols", "nope:0:1"], &["--cols 'nope'", "no column 'nope'"]),
        (&["--cols", "age:0:120,age:0:100"], &["--cols", "twice"]),
        (&["--cols", "age:0:120,income:0:1", "--shares", "0.5"], &["--shares", "one per column"]),
        (&["--cols", "age:0:120,income:0:1", "--shares", "0.5,0.6"], &["--shares", "add up to 1.1"]),
        (&["--cols", "age:0:120", "--format", "chart"], &["chart"]),
        (&["--cols", "age:0:120", "--neighbours", "replace", "--where", "age>=3"], &["--where", "replace"]),
        (&["--cols", "age:0:120", "--q", "1.5"], &["--q", "between 0 and 1"]),
    ];
    for (args, needles) in cases {
        fails_with(dpstat().arg("describe").args(args).args(["--eps", "1"]).arg(&people), needles);
    }
}

/// A column whose mean and quantiles are withheld (no bounds on 200 rows at a small ε) keeps its
/// place in the table: "-" under mean and each level, the header's levels from the other
/// columns, and the shared count (the same rows) as its count.
#[test]
fn a_withheld_column_keeps_its_row_and_the_shared_count() {
    let out = seeded(3)
        .args(["describe", "--cols", "income,age:0:100", "--eps", "0.5", "--invalid", "impute=0"])
        .arg(fixture("people.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["column", "epsilon", "bounds", "count", "mean", "q0.5"], "{text}");
    let (income, age) = (&rows[1], &rows[2]);
    assert_eq!((income[0], income[2], income[5], income[6]), ("income", "-", "-", "-"), "{text}");
    assert_eq!(income[3..5], age[4..6], "one shared count (age's bounds are two words): {text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("income.quantile: q=0.5 of income: too few rows"));
}

/// `describe --format csv`: one header, a row per column and the total, each value and its
/// bound in columns of their own, with the numbers of the JSON release of the same seed.
#[test]
fn csv_format_splits_values_and_bounds_and_matches_json() {
    use common::{csv_records, printed_as};
    let describe = |format: &str| {
        stdout_of(
            seeded(4)
                .args(["describe", "--cols", "age:0:100,income:0:200000", "--q", "0.5,0.9", "--eps", "1"])
                // Every digit, to compare with the JSON (text_output.rs tests the rounding).
                .args(["--format", format, "--full-precision"])
                .arg(fixture("people.csv")),
        )
    };
    let records = csv_records(&describe("csv"));
    assert_eq!(
        records[0],
        [
            "column",
            "epsilon",
            "lower",
            "upper",
            "bounds",
            "count",
            "count_error(95%)",
            "mean",
            "mean_error(95%)",
            "q0.5",
            "q0.5_rank_error(95%)",
            "q0.9",
            "q0.9_rank_error(95%)"
        ]
    );
    assert_eq!(records.len(), 4);
    assert!(records.iter().all(|r| r.len() == 13));
    assert_eq!(records[3][..2], ["total", "1"]);
    let json: Vec<Value> = describe("json").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let by_name = |name: &str| json.iter().find(|l| l["name"] == name).unwrap_or_else(|| panic!("{name}"));
    let count = by_name("count");
    // A bound is rounded up to three significant digits: at least the JSON's, and close to it.
    let bound_of = |cell: &str, exact: f64| {
        let b: f64 = cell.parse().unwrap();
        assert!(b >= exact && b <= exact * 1.01 + 1e-9, "{cell} against {exact}");
    };
    for (row, column) in records[1..3].iter().zip(["age", "income"]) {
        assert_eq!(row[0], column);
        assert_eq!((row[2].as_str(), row[4].as_str()), ("0", "flags"));
        assert!(printed_as(&row[5], count["value"].as_f64().unwrap()));
        bound_of(&row[6], count["accuracy"]["error_bound"].as_f64().unwrap());
        let mean = by_name(&format!("{column}.mean"));
        assert!(printed_as(&row[7], mean["value"].as_f64().unwrap()), "{row:?}");
        bound_of(&row[8], mean["accuracy"]["error_bound"].as_f64().unwrap());
        let quantiles = by_name(&format!("{column}.quantile"))["quantiles"].as_array().unwrap().clone();
        for (i, q) in quantiles.iter().enumerate() {
            assert!(printed_as(&row[9 + 2 * i], q["value"].as_f64().unwrap()), "{row:?}");
            bound_of(&row[10 + 2 * i], q["rank_error_bound"].as_f64().unwrap());
        }
    }
}

/// The statistics' output flags are taken by describe: `-E` (its table always has the bounds)
/// and the precision flags, which change the digits and nothing else.
#[test]
fn describe_takes_the_statistics_output_flags() {
    let run = |extra: &[&str]| {
        stdout_of(
            seeded(3)
                .args(["describe", "--cols", "age:0:100", "--eps", "1"])
                .args(extra)
                .arg(fixture("people.csv")),
        )
    };
    let plain = run(&[]);
    assert_eq!(run(&["-E"]), plain);
    assert_eq!(run(&["-r"]), plain, "-r is the default");
    let full = run(&["--full-precision"]);
    let three = run(&["--digits", "3"]);
    assert!(full != plain && three != full, "{plain}\n{full}\n{three}");
}
