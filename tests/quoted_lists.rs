//! List flags read their items as one CSV record, through the real binary: keys, categories,
//! `in` lists and column names that hold commas, quotes and spaces are the ones asked for, the
//! same as a workload file's; a list that is not CSV is one line on stderr naming the flag,
//! exit 2, and nothing charged.
//!
//! fixtures/names.csv (the `name` cells as the CSV reader gives them, then trimmed):
//!
//! ```text
//! name          team   pay, net  age
//! Smith, Ann    north  50        30
//! Smith, Ann    south  60        41
//! Lee           north  40        25
//! say "hi"      north  30        52
//! Smith         east   70        38
//! Ann           east   80        60
//! Wong, Kim     south  90        45      (the cell is "  Wong, Kim  ")
//! O'Brien       north  10        33
//! ```

use crate::common;

use std::fs;

use common::{dpstat, fails_with, fixture, json_of, stdout_of, unseeded};
use serde_json::Value;
use tempfile::TempDir;

/// At ε = 1000 the discrete Laplace noise is 0 but with probability about 2e^-1000: the
/// released counts are the exact ones.
const EXACT: [&str; 2] = ["--eps", "1000"];

/// The (key, value) pairs of a grouped JSON release.
fn groups(json: &Value) -> Vec<(String, i64)> {
    json["groups"]
        .as_array()
        .unwrap_or_else(|| panic!("no groups: {json}"))
        .iter()
        .map(|g| (g["key"].as_str().unwrap().to_string(), g["value"].as_i64().unwrap()))
        .collect()
}

fn pairs(list: &[(&str, i64)]) -> Vec<(String, i64)> {
    list.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The keys asked for, not the pieces of a key cut at its comma: `"Smith` and `Ann"` never
/// appear, and the rows of `Smith` and `Ann` are not counted as `Smith, Ann`.
#[test]
fn keys_with_commas_quotes_and_spaces_are_the_keys_asked_for() {
    for (keys, want) in [
        ("\"Smith, Ann\",Lee", &[("Smith, Ann", 2), ("Lee", 1), ("other", 5)][..]),
        (" \"Smith, Ann\" , Smith ,Ann", &[("Smith, Ann", 2), ("Smith", 1), ("Ann", 1), ("other", 4)]),
        (
            "\"say \"\"hi\"\"\",\"Wong, Kim\",O'Brien",
            &[("say \"hi\"", 1), ("Wong, Kim", 1), ("O'Brien", 1), ("other", 5)],
        ),
    ] {
        let json = json_of(
            dpstat().args(["count", "--by", "name", "--keys", keys]).args(EXACT).arg(fixture("names.csv")),
        );
        assert_eq!(groups(&json), pairs(want), "--keys {keys}");
    }
}

#[test]
fn categories_with_commas_and_quotes_are_the_bins_asked_for() {
    let text = stdout_of(
        dpstat()
            .args(["histogram", "--col", "name", "--categories", "\"Smith, Ann\",\"say \"\"hi\"\"\",Lee"])
            .args(EXACT)
            .arg(fixture("names.csv")),
    );
    // The text output is CSV too: the bins read back as the categories.
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<(String, i64)> =
        reader.records().map(|r| r.unwrap()).map(|r| (r[0].to_string(), r[1].parse().unwrap())).collect();
    assert_eq!(rows, pairs(&[("Smith, Ann", 2), ("say \"hi\"", 1), ("Lee", 1), ("other", 4)]));
}

/// The exact count of the rows of fixtures/names.csv that pass the filter.
fn count_where(filter: &str) -> i64 {
    let text = stdout_of(dpstat().args(["count", "--where", filter]).args(EXACT).arg(fixture("names.csv")));
    text.trim().parse().unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn in_lists_match_quoted_texts() {
    for (filter, want) in [
        ("name in \"Smith, Ann\",Lee", 3),
        ("name not in \"Smith, Ann\",Lee", 5),
        ("name in Smith,Ann", 2),
        ("name in \"say \"\"hi\"\"\"", 1),
        ("name in \"Wong, Kim\", O'Brien", 2),
        ("\"pay, net\" in 50,60", 2),
    ] {
        assert_eq!(count_where(filter), want, "{filter}");
    }
    // The release lists the filter as it reads back.
    let json = json_of(
        dpstat()
            .args(["count", "--where", "name in  \"Smith, Ann\" ,Lee"])
            .args(EXACT)
            .arg(fixture("names.csv")),
    );
    assert_eq!(json["where"][0], "name in \"Smith, Ann\",Lee");
}

/// A workload file's keys (an array of strings, or one string read as the flag is) and
/// `where` give the same groups and rows as the command line.
#[test]
fn a_workload_reads_the_same_keys_and_filters() {
    let dir = TempDir::new().unwrap();
    let workload = dir.path().join("names.toml");
    fs::write(
        &workload,
        r#"epsilon = "2000"

[[query]]
name = "array"
kind = "count"
by = "name"
keys = ["Smith, Ann", " Lee ", 'say "hi"']

[[query]]
name = "string"
kind = "count"
by = "name"
keys = '"Smith, Ann",Lee,"say ""hi"""'

[[query]]
name = "where"
kind = "count"
where = ['name in "Smith, Ann",Lee']
share = "1000"
"#,
    )
    .unwrap();
    let text =
        stdout_of(dpstat().arg("run").arg(&workload).arg(fixture("names.csv")).args(["--format", "json"]));
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let want = pairs(&[("Smith, Ann", 2), ("Lee", 1), ("say \"hi\"", 1), ("other", 4)]);
    assert_eq!(groups(&lines[0]), want);
    assert_eq!(groups(&lines[1]), want);
    assert_eq!(lines[2]["value"], 3);
}

/// Column names are lists too: covariance's pair and describe's columns.
#[test]
fn column_names_with_commas_are_quoted() {
    let json = json_of(
        dpstat()
            .args(["covariance", "--cols", "\"pay, net\",age", "--lower", "0,0", "--upper", "100,100"])
            .args(EXACT)
            .arg(fixture("names.csv")),
    );
    // The pair reads back as its two columns.
    assert_eq!(json["column"], "\"pay, net\",age");
    let text = stdout_of(
        dpstat()
            .args(["describe", "--cols", "\"pay, net:0:100\",age:0:100", "--format", "json"])
            .args(EXACT)
            .arg(fixture("names.csv")),
    );
    let names: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["count", "pay, net.mean", "pay, net.quantile", "age.mean", "age.quantile"]);
}

/// A list that is not CSV is refused before anything is read or charged: one line naming the
/// flag, exit 2, no output, no ledger written.
#[test]
fn lists_that_are_not_csv_are_usage_errors_naming_the_flag() {
    let cases: [(&[&str], &[&str]); 9] = [
        (&["count", "--by", "name", "--keys", "\"Smith, Ann,Lee"], &["--keys", "never closed"]),
        (&["count", "--by", "name", "--keys", "Smith\"Ann"], &["--keys", "holds a quote"]),
        (&["count", "--by", "name", "--keys", "\" Lee\""], &["--keys", "match no row"]),
        (&["histogram", "--col", "name", "--categories", "\"a\" b,c"], &["--categories", "followed by"]),
        (&["count", "--where", "name in \"Smith, Ann,Lee"], &["--where", "never closed"]),
        (&["quantile", "--col", "age", "--q", "\"0.5\""], &["--q", "no quotes"]),
        (
            &["covariance", "--cols", "\"pay, net,age", "--lower", "0,0", "--upper", "1,1"],
            &["--cols", "never closed"],
        ),
        (
            &["covariance", "--cols", "age,age", "--lower", "\"0\",0", "--upper", "1,1"],
            &["--lower", "no quotes"],
        ),
        (&["describe", "--cols", "\"pay, net:0:1,age"], &["--cols", "never closed"]),
    ];
    for (args, needles) in cases {
        let dir = TempDir::new().unwrap();
        let ledger = dir.path().join("ledger.jsonl");
        fails_with(
            unseeded()
                .args(args)
                .args(["--eps", "1", "--budget", "2", "--ledger"])
                .arg(&ledger)
                .arg(fixture("names.csv")),
            needles,
        );
        assert!(!ledger.exists(), "{args:?}: a refused list wrote the ledger");
    }
    fails_with(
        dpstat()
            .args(["describe", "--cols", "age", "--shares", "\"1\"", "--eps", "1"])
            .arg(fixture("names.csv")),
        &["--shares", "no quotes"],
    );
}
