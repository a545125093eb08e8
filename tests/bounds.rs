//! Private bounds: sum, mean and numeric histogram without --lower/--upper.

mod common;

use std::fs;

use common::{dpstat, fails_with, fixture, json_of, stdout_of, unseeded};
use tempfile::TempDir;

/// The headline usage: no bounds, ε = 0.1 in total, bounds reported on stderr after the release.
#[test]
fn mean_without_bounds_charges_exactly_epsilon_and_reports_the_bounds() {
    let out = dpstat()
        .args(["mean", "--col", "income", "--eps", "0.1", "--format", "json"])
        .arg(fixture("incomes_20k.csv"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bounds [8192, 131072] were estimated privately with epsilon 0.01 of 0.1"),
        "{stderr}"
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["epsilon_exact"], "1/10");
    assert_eq!(json["bounds"]["source"], "private");
    assert_eq!(json["bounds"]["epsilon_exact"], "1/100");
    assert_eq!(
        (json["bounds"]["lower"].as_f64(), json["bounds"]["upper"].as_f64()),
        (Some(8192.0), Some(131072.0))
    );
    // The rest, 9/100, is split between the shifted sum and the count.
    assert_eq!(json["parts"][0]["epsilon_exact"], "9/200");
    assert_eq!(json["parts"][1]["epsilon_exact"], "9/200");
    // The clamped true mean of the fixture is 46 986.2; the release is within its stated bound
    // for this seed.
    let bound = json["accuracy"]["error_bound"].as_f64().unwrap();
    assert!((json["value"].as_f64().unwrap() - 46_986.2).abs() <= bound);
    // With a ledger (and the operating system's noise, as the test seed is refused there):
    // exactly one charge, of exactly 1/10, completed by one released record.
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(
        unseeded()
            .args([
                "mean",
                "--col",
                "income",
                "--eps",
                "0.1",
                "--invalid",
                "skip",
                "--budget",
                "1",
                "--ledger",
            ])
            .arg(&ledger)
            .arg(fixture("incomes_20k.csv")),
    );
    let ledger = fs::read_to_string(&ledger).unwrap();
    let records: Vec<serde_json::Value> =
        ledger.lines().skip(1).map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).collect();
    let charges: Vec<_> = records.iter().filter(|r| r["type"] == "charge").collect();
    assert_eq!(charges.len(), 1);
    assert_eq!(charges[0]["epsilon"], "1/10");
    assert_eq!(records.iter().filter(|r| r["type"] == "released").count(), 1);
}

#[test]
fn sum_and_histogram_find_bounds_too() {
    let mut sum = dpstat();
    sum.args(["sum", "--col", "income", "--eps", "1"]).arg(fixture("incomes_20k.csv"));
    let json = json_of(&mut sum);
    assert_eq!(json["bounds"]["source"], "private");
    assert_eq!(json["bounds"]["epsilon_exact"], "1/10");
    // Δ = max(|L|, |U|) at ε = 9/10 for the query itself.
    let upper = json["bounds"]["upper"].as_f64().unwrap();
    assert_eq!(json["sensitivity"].as_f64().unwrap(), upper);
    assert!((json["scale"].as_f64().unwrap() - upper / 0.9).abs() < 1e-6 * upper);

    let mut hist = dpstat();
    hist.args(["histogram", "--col", "income", "--bins", "4", "--eps", "1", "--bounds-eps", "0.25"])
        .arg(fixture("incomes_20k.csv"));
    let json = json_of(&mut hist);
    assert_eq!(json["bounds"]["epsilon_exact"], "1/4");
    let bins = json["bins"].as_array().unwrap();
    assert_eq!(bins.len(), 4);
    assert_eq!(bins[0]["lower"].as_f64(), json["bounds"]["lower"].as_f64());
    // Scale of each bin: Δ = 1 at the remaining ε = 3/4.
    assert!((json["scale"].as_f64().unwrap() - 4.0 / 3.0).abs() < 1e-12);
}

/// A numeric histogram that reads its file twice is charged once, before the first pass, and
/// records the fingerprint of the data it read (the second pass keeps the first's).
#[test]
fn two_pass_histogram_is_charged_once_before_it_reads() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let mut cmd = unseeded();
    cmd.args(["histogram", "--col", "income", "--bins", "4", "--eps", "1", "--invalid", "skip"])
        .args(["--budget", "1", "--ledger"])
        .arg(&ledger)
        .arg(fixture("incomes_20k.csv"));
    let json = json_of(&mut cmd);
    assert_eq!(json["budget"]["spent_exact"], "1/1");
    let mut same = unseeded();
    same.args(["count", "--eps", "0.1", "--ledger"]).arg(&ledger).arg(fixture("incomes_20k.csv"));
    let out = same.output().unwrap();
    assert_eq!(out.status.code(), Some(3), "the budget is spent");
    let text = fs::read_to_string(&ledger).unwrap();
    let records: Vec<serde_json::Value> =
        text.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = records.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["budget", "charge", "released"]);
    let want = json_of(unseeded().args(["budget", "--ledger"]).arg(&ledger).arg(fixture("incomes_20k.csv")));
    assert_eq!(want["file"]["matches"], serde_json::json!([2]), "{want}");
}

#[test]
fn sparse_data_falls_back_to_the_widest_public_bounds() {
    let out = dpstat()
        .args(["mean", "--col", "income", "--eps", "0.1"])
        .arg(fixture("people.csv"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no range of values was dense enough"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

#[test]
fn bad_bounds_flags() {
    let run = |args: &[&str]| {
        let mut cmd = dpstat();
        cmd.args(args).arg(fixture("incomes_20k.csv"));
        cmd
    };
    fails_with(&mut run(&["mean", "--col", "income", "--eps", "0.1", "--lower", "0"]), &["--upper"]);
    fails_with(&mut run(&["sum", "--col", "income", "--eps", "0.1", "--upper", "5"]), &["--lower"]);
    fails_with(
        &mut run(&["mean", "--col", "income", "--eps", "0.1", "--bounds-eps", "0.1"]),
        &["--bounds-eps"],
    );
    fails_with(
        &mut run(&["mean", "--col", "income", "--eps", "0.1", "--bounds-eps", "0.2"]),
        &["--bounds-eps"],
    );
    fails_with(
        &mut run(&[
            "mean",
            "--col",
            "income",
            "--eps",
            "1",
            "--lower",
            "0",
            "--upper",
            "9",
            "--bounds-eps",
            "0.1",
        ]),
        &["--bounds-eps"],
    );
    let bytes = fs::read(fixture("incomes_20k.csv")).unwrap();
    let mut stdin = dpstat();
    stdin.args(["histogram", "--col", "income", "--bins", "4", "--eps", "1"]).write_stdin(bytes.clone());
    fails_with(&mut stdin, &["FILE", "--lower"]);
    // Named, but not a regular file: the first pass would empty the pipe, and the second would
    // count nothing. Refused before reading, by the file's metadata rather than its name.
    #[cfg(target_os = "linux")]
    {
        let mut stdin = dpstat();
        stdin
            .args(["histogram", "--col", "income", "--bins", "4", "--eps", "1", "/dev/stdin"])
            .write_stdin(bytes);
        fails_with(&mut stdin, &["regular FILE", "--lower"]);
    }
}

/// Issue 11, finding 5: bounds found privately could fail the query's grid after the data were
/// read (an uncharged answer). Every outcome of the search is now tried before reading: with a
/// ledger, the refusal comes before the charge.
#[test]
fn private_bounds_that_could_fail_are_refused_before_reading() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    for query in ["sum", "mean"] {
        let mut cmd = unseeded();
        cmd.args([
            query,
            "--col",
            "income",
            "--eps",
            "10000000",
            "--invalid",
            "skip",
            "--budget",
            "1e8",
            "--ledger",
        ])
        .arg(&ledger)
        .arg(fixture("incomes_20k.csv"));
        fails_with(&mut cmd, &["some bounds the search can return", "give --lower/--upper"]);
        assert!(!ledger.exists() || fs::read_to_string(&ledger).unwrap().is_empty(), "nothing charged");
    }
}
