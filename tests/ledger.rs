//! The budget ledger across invocations of the real binary.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};

use common::{fails_with, fixture, json_of, stdout_of, unseeded};
use tempfile::TempDir;

fn release(ledger: &Path, eps: &str) -> assert_cmd::Command {
    let mut cmd = unseeded();
    cmd.args(["count", "--eps", eps, "--ledger"]).arg(ledger).arg(fixture("people.csv"));
    cmd
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every ledger line is JSON"))
        .collect()
}

#[test]
fn ten_tenths_exhaust_a_budget_of_one_exactly() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    for i in 0..10 {
        let mut cmd = release(&ledger, "0.1");
        if i == 0 {
            cmd.args(["--budget", "1"]);
        }
        stdout_of(&mut cmd);
    }
    let budget = json_of(unseeded().args(["budget", "--ledger"]).arg(&ledger).arg(fixture("people.csv")));
    assert_eq!(budget["spent_exact"], "1/1");
    assert_eq!(budget["remaining_exact"], "0/1");
    assert_eq!(budget["releases"].as_array().unwrap().len(), 10);

    let before = fs::read(&ledger).unwrap();
    let out = release(&ledger, "0.1").output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spent 1 of 1, asked 0.1, remaining 0"),
        "message says spent, asked and remaining: {stderr}"
    );
    assert_eq!(fs::read(&ledger).unwrap(), before, "a refused release leaves the ledger unchanged");
}

#[test]
fn records_carry_exact_epsilon_and_the_dataset_fingerprint() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let mut cmd = unseeded();
    cmd.args(["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "0.3"])
        .args(["--budget", "2", "--ledger"])
        .arg(&ledger)
        .arg(fixture("people.csv"));
    let release = json_of(&mut cmd);
    let records = lines(&ledger);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["type"], "budget");
    assert_eq!(records[0]["total"], "2/1");
    assert_eq!(records[1]["type"], "release");
    assert_eq!(records[1]["query"], "mean");
    assert_eq!(records[1]["column"], "income");
    assert_eq!(records[1]["neighbours"], "add-remove");
    assert_eq!(records[1]["epsilon"], "3/10");
    let dataset = records[1]["dataset"].as_str().unwrap();
    assert!(dataset.starts_with("sha256:") && dataset.len() == 7 + 64, "{dataset}");
    assert_eq!(release["budget"]["remaining_exact"], "17/10");
    assert_eq!(release["budget"]["dataset"], dataset);
}

#[test]
fn file_and_stdin_with_the_same_bytes_are_the_same_dataset() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(release(&ledger, "0.5").args(["--budget", "1"]));
    let bytes = fs::read(fixture("people.csv")).unwrap();
    stdout_of(unseeded().args(["count", "--eps", "0.5", "--ledger"]).arg(&ledger).write_stdin(bytes.clone()));
    let records = lines(&ledger);
    assert_eq!(records[1]["dataset"], records[2]["dataset"]);
    // The budget is now spent, for the file and for the same bytes on stdin alike.
    let out = unseeded()
        .args(["count", "--eps", "0.1", "--ledger"])
        .arg(&ledger)
        .write_stdin(bytes)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn named_datasets_and_budget_rules() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let named = |eps: &str| {
        let mut cmd = release(&ledger, eps);
        cmd.args(["--dataset", "people-2026"]);
        cmd
    };
    fails_with(&mut named("0.1"), &["no budget is recorded", "--budget"]);
    assert!(!ledger.exists() || fs::read(&ledger).unwrap().is_empty(), "nothing charged");
    stdout_of(named("0.5").args(["--budget", "1"]));
    fails_with(named("0.1").args(["--budget", "3"]), &["--change-budget"]);
    stdout_of(named("1").args(["--budget", "3", "--change-budget"]));
    let text = stdout_of(unseeded().args(["budget", "--dataset", "people-2026", "--ledger"]).arg(&ledger));
    assert!(text.contains("budget     3\n"), "{text}");
    assert!(text.contains("spent      1.5\n"), "{text}");
    assert!(text.contains("remaining  1.5\n"), "{text}");
}

#[test]
fn a_failed_query_charges_nothing() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(release(&ledger, "0.1").args(["--budget", "1"]));
    let before = fs::read(&ledger).unwrap();
    let mut bad = unseeded();
    bad.args(["sum", "--col", "nope", "--lower", "0", "--upper", "1", "--eps", "0.1", "--ledger"])
        .arg(&ledger)
        .arg(fixture("people.csv"));
    fails_with(&mut bad, &["no column 'nope'"]);
    assert_eq!(fs::read(&ledger).unwrap(), before);
}

#[test]
fn corrupt_ledgers_are_refused_with_the_line() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(release(&ledger, "0.1").args(["--budget", "1"]));
    let good = fs::read_to_string(&ledger).unwrap();
    let cases = [
        (format!("{good}{{\"type\":\"release\",\"dataset\""), "line 3 is truncated"),
        (format!("{good}{{not json}}\n"), "line 3 is not a valid record"),
        (format!("{good}{{\"type\":\"release\",\"dataset\":\"x\"}}\n"), "line 3 is not a valid record"),
        (good.replace("\"1/10\"", "\"-1/10\""), "line 2 has an epsilon"),
        (good.replace("\"1/10\"", "\"0/1\""), "line 2 has an epsilon"),
    ];
    for (content, needle) in cases {
        fs::write(&ledger, &content).unwrap();
        fails_with(&mut release(&ledger, "0.1"), &["corrupt", needle]);
        assert_eq!(fs::read_to_string(&ledger).unwrap(), content, "never reset");
    }
}

/// A ledger must be a regular file with lines of bounded length: a FIFO would block forever and
/// `/dev/zero` would be read into memory without end. Both are refused, by `dpstat budget` too,
/// before any data is read; an over-long line is named like any corrupt line.
#[cfg(target_os = "linux")]
#[test]
fn a_ledger_that_is_not_a_regular_file_or_has_an_endless_line_is_refused() {
    let dir = TempDir::new().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(StdCommand::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success());
    for ledger in [fifo.as_path(), Path::new("/dev/zero")] {
        let mut cmd = release(ledger, "0.1");
        fails_with(
            cmd.args(["--budget", "1"]).timeout(std::time::Duration::from_secs(20)),
            &["not a regular file"],
        );
        let mut budget = unseeded();
        budget
            .args(["budget", "--dataset", "d", "--ledger"])
            .arg(ledger)
            .timeout(std::time::Duration::from_secs(20));
        fails_with(&mut budget, &["not a regular file"]);
    }
    let ledger = dir.path().join("long.jsonl");
    fs::write(&ledger, format!("{}\n", "x".repeat(100_000))).unwrap();
    fails_with(
        release(&ledger, "0.1").args(["--budget", "1"]),
        &["corrupt", "line 1 is longer than 65536 bytes"],
    );
}

#[test]
fn ledger_from_the_environment() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("env.jsonl");
    let mut cmd = unseeded();
    cmd.env("DPSTAT_LEDGER", &ledger)
        .args(["count", "--eps", "1", "--budget", "1"])
        .arg(fixture("people.csv"));
    stdout_of(&mut cmd);
    assert_eq!(lines(&ledger).len(), 2);
}

/// 20 processes race for a budget that pays for exactly 10 releases.
#[test]
fn concurrent_releases_never_overspend() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let binary = assert_cmd::cargo::cargo_bin("dpstat");
    let children: Vec<_> = (0..20)
        .map(|_| {
            StdCommand::new(&binary)
                .args(["count", "--eps", "0.1", "--budget", "1", "--dataset", "race", "--ledger"])
                .arg(&ledger)
                .arg(fixture("people.csv"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let released: Vec<_> = outputs.iter().filter(|o| o.status.code() == Some(0)).collect();
    let refused: Vec<_> = outputs.iter().filter(|o| o.status.code() == Some(3)).collect();
    assert_eq!(released.len(), 10, "exactly ten releases");
    assert_eq!(refused.len(), 10, "exactly ten refusals with exit 3");
    assert!(released.iter().all(|o| !o.stdout.is_empty()));
    assert!(refused.iter().all(|o| o.stdout.is_empty()));
    let records = lines(&ledger);
    let releases = records.iter().filter(|r| r["type"] == "release").count();
    let budgets = records.iter().filter(|r| r["type"] == "budget").count();
    assert_eq!((releases, budgets), (10, 1));
}
