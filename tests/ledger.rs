//! The budget ledger across invocations of the real binary: charged before the data are read,
//! one budget per population whatever the file's bytes, tamper-evident (against accidents; keyed, against whoever lacks the key), and nothing shown after
//! the charge but the release.

use crate::common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};

use common::{fails_with, fixture, json_of, stdout_of, unseeded};
use tempfile::TempDir;

fn release(ledger: &Path, eps: &str) -> assert_cmd::Command {
    let mut cmd = unseeded();
    cmd.args(["count", "--eps", eps, "--ledger"]).arg(ledger).arg(fixture("people.csv"));
    cmd
}

/// The records (line 2 onwards; line 1 is the header).
fn records(path: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("every ledger line is JSON"))
        .collect()
}

fn of_type<'a>(records: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    records.iter().filter(|r| r["type"] == kind).collect()
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
    let budget = json_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    let dataset = &budget["datasets"][0];
    assert_eq!(dataset["dataset"], "default");
    assert_eq!(dataset["spent_exact"], "1/1");
    assert_eq!(dataset["remaining_exact"], "0/1");
    assert_eq!(dataset["releases"].as_array().unwrap().len(), 10);

    let before = fs::read(&ledger).unwrap();
    let out = release(&ledger, "0.1").output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spent 1 of 1, asked 0.1, remaining 0") && stderr.contains("nothing was read"),
        "message says spent, asked and remaining: {stderr}"
    );
    assert_eq!(fs::read(&ledger).unwrap(), before, "a refused release leaves the ledger unchanged");
}

#[test]
fn records_carry_exact_epsilon_running_totals_and_the_data_fingerprint() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let mut cmd = unseeded();
    cmd.args(["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "0.3"])
        .args(["--invalid", "skip", "--budget", "2", "--ledger"])
        .arg(&ledger)
        .arg(fixture("people.csv"));
    let release = json_of(&mut cmd);
    let header: serde_json::Value =
        serde_json::from_str(fs::read_to_string(&ledger).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(
        (header["type"].as_str(), header["format"].as_u64(), header["records"].as_u64()),
        (Some("ledger"), Some(2), Some(3))
    );
    let records = records(&ledger);
    assert_eq!(records.len(), 3);
    assert_eq!((records[0]["type"].as_str(), records[0]["total"].as_str()), (Some("budget"), Some("2/1")));
    let charge = &records[1];
    assert_eq!(charge["type"], "charge");
    assert_eq!(charge["query"], "mean");
    assert_eq!(charge["column"], "income");
    assert_eq!(charge["neighbours"], "add-remove");
    assert_eq!(charge["epsilon"], "3/10");
    assert_eq!(charge["spent"], "3/10");
    assert_eq!(charge["dataset"], "default");
    let released = &records[2];
    assert_eq!((released["type"].as_str(), &released["charge"]), (Some("released"), &charge["seq"]));
    let fingerprint = released["fingerprint"].as_str().unwrap();
    assert!(fingerprint.starts_with("csv-sha256:") && fingerprint.len() == 11 + 64, "{fingerprint}");
    assert_eq!(release["budget"]["remaining_exact"], "17/10");
    assert_eq!(release["budget"]["dataset"], "default");
}

/// The same people saved in other ways, and next month's extract with one more row, all draw
/// on the one budget of the ledger: none gets a fresh one. The fingerprints show which runs read
/// the same records (re-encodings) and which did not (the appended row).
#[test]
fn re_encodings_and_appended_rows_draw_on_one_budget() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let text = fs::read_to_string(fixture("people.csv")).unwrap();
    let crlf = text.replace('\n', "\r\n");
    let mut quoted = String::new();
    for line in text.lines() {
        let fields: Vec<String> = line.split(',').map(|f| format!("\"{f}\"")).collect();
        quoted.push_str(&fields.join(","));
        quoted.push('\n');
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    let variants: Vec<(&str, Vec<u8>, &[&str])> = vec![
        ("plain.csv", text.clone().into_bytes(), &[]),
        ("crlf.csv", crlf.into_bytes(), &[]),
        ("no-final-newline.csv", text.trim_end().as_bytes().to_vec(), &[]),
        ("blank-line.csv", format!("{text}\n").into_bytes(), &[]),
        ("quoted.csv", quoted.into_bytes(), &[]),
        ("semicolon.csv", text.replace(',', ";").into_bytes(), &["--delimiter", ";"]),
        ("gzip.csv.gz", gz.finish().unwrap(), &[]),
        ("appended.csv", format!("{text}201,40,50000,north,1,0.5\n").into_bytes(), &[]),
    ];
    let eps = "0.1";
    for (i, (name, bytes, flags)) in variants.iter().enumerate() {
        let path = dir.path().join(name);
        fs::write(&path, bytes).unwrap();
        let mut cmd = unseeded();
        cmd.args(["count", "--eps", eps, "--ledger"]).arg(&ledger).args(*flags).arg(&path);
        if i == 0 {
            cmd.args(["--budget", "0.8"]);
        }
        stdout_of(&mut cmd);
    }
    let records = records(&ledger);
    let fingerprints: Vec<&str> =
        of_type(&records, "released").iter().map(|r| r["fingerprint"].as_str().unwrap()).collect();
    assert_eq!(fingerprints.len(), 8);
    assert!(fingerprints[..7].iter().all(|f| *f == fingerprints[0]), "{fingerprints:?}");
    assert_ne!(fingerprints[7], fingerprints[0], "an appended row is other data");
    // The budget of 0.8 is spent: every form of the file is refused now, with exit 3.
    for (name, _, flags) in &variants {
        let out = unseeded()
            .args(["count", "--eps", eps, "--ledger"])
            .arg(&ledger)
            .args(*flags)
            .arg(dir.path().join(name))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let listing = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    assert_eq!(listing.matches("(changed since the release before)").count(), 1, "{listing}");
    let matches = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger).arg(fixture("people.csv")));
    assert!(matches.contains("the data read by #2, #4, #6, #8, #10, #12, #14\n"), "{matches}");
}

/// The oracle of issue 11: with a ledger, a bad cell could answer "does a row matching this
/// filter hold text in that column?" for free. Now both runs are charged before any row is
/// read and differ only in their noisy release; `--invalid error` is refused before reading.
#[test]
fn errors_are_no_oracle_under_a_ledger() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let run = |filter: &str, invalid: Option<&str>| {
        let mut cmd = unseeded();
        cmd.args(["sum", "--col", "name", "--where", filter, "--lower", "0", "--upper", "1", "--eps", "0.1"])
            .args(["--budget", "0.4", "--ledger"])
            .arg(&ledger)
            .arg(fixture("patients.csv"));
        if let Some(invalid) = invalid {
            cmd.args(["--invalid", invalid]);
        }
        cmd.output().unwrap()
    };
    // The default --invalid error: refused before reading, whatever the filter, nothing charged.
    let hiv = run("diagnosis=HIV", None);
    let cancer = run("diagnosis=cancer", None);
    for out in [&hiv, &cancer] {
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
    }
    assert_eq!(hiv.stderr, cancer.stderr);
    assert!(String::from_utf8_lossy(&hiv.stderr)
        .contains("with --ledger, add --invalid skip or --invalid impute=V"));
    assert!(!ledger.exists() || records(&ledger).is_empty(), "nothing charged");
    // With a policy: both release, both are charged, and nothing but the number differs.
    for invalid in ["skip", "impute=0"] {
        let before = of_type(&records_or_none(&ledger), "charge").len();
        let hiv = run("diagnosis=HIV", Some(invalid));
        let cancer = run("diagnosis=cancer", Some(invalid));
        for out in [&hiv, &cancer] {
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            common::one_number(&String::from_utf8_lossy(&out.stdout));
        }
        assert_eq!(hiv.stderr, cancer.stderr, "stderr does not depend on the rows");
        assert_eq!(of_type(&records(&ledger), "charge").len(), before + 2, "both are charged");
    }
    // Spent (4 × 0.1 of 0.4): both refused alike, before reading.
    let (hiv, cancer) = (run("diagnosis=HIV", Some("skip")), run("diagnosis=cancer", Some("skip")));
    assert_eq!((hiv.status.code(), cancer.status.code()), (Some(3), Some(3)));
    assert_eq!(hiv.stderr, cancer.stderr);
}

fn records_or_none(path: &Path) -> Vec<serde_json::Value> {
    if path.exists() {
        records(path)
    } else {
        vec![]
    }
}

/// Under a ledger a ragged row does not stop the release (a stop would depend on the rows): its
/// missing cells are invalid cells, which `--invalid` decides on.
#[test]
fn ragged_rows_are_tolerated_under_a_ledger() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let mut without = unseeded();
    without
        .args(["sum", "--col", "value", "--lower", "0", "--upper", "100", "--eps", "1"])
        .arg(fixture("ragged.csv"));
    fails_with(&mut without, &["fields"]);
    let out = unseeded()
        .args(["sum", "--col", "label", "--lower", "0", "--upper", "100", "--eps", "1", "--invalid", "skip"])
        .args(["--budget", "1", "--ledger"])
        .arg(&ledger)
        .arg(fixture("ragged.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A failure after the charge shows one fixed line, whatever caused it, and the charge stays.
#[test]
fn a_failure_after_the_charge_says_nothing_about_the_rows() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    // Under replace n is public and a mean over 0 rows has no value: it fails after reading.
    let out = unseeded()
        .args([
            "mean",
            "--col",
            "amount",
            "--lower",
            "0",
            "--upper",
            "1",
            "--eps",
            "0.5",
            "--neighbours",
            "replace",
        ])
        .args(["--invalid", "impute=0", "--budget", "1", "--ledger"])
        .arg(&ledger)
        .arg(fixture("header_only.csv"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("failed after epsilon 0.5 was charged") && stderr.contains("not shown"),
        "{stderr}"
    );
    assert!(!stderr.contains("row") && !stderr.contains("line"), "{stderr}");
    let records = records(&ledger);
    assert_eq!(of_type(&records, "charge").len(), 1);
    assert!(of_type(&records, "released").is_empty());
    let listing = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    assert!(listing.contains("charged, not released"), "{listing}");
    assert!(listing.contains("spent      0.5\n"), "{listing}");
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
    assert!(!ledger.exists() || records(&ledger).is_empty(), "nothing charged");
    stdout_of(named("0.5").args(["--budget", "1"]));
    fails_with(named("0.1").args(["--budget", "3"]), &["--change-budget"]);
    stdout_of(named("1").args(["--budget", "3", "--change-budget"]));
    // The same file under a second name: only on purpose (one table, one budget).
    stdout_of(release(&ledger, "0.25").args(["--budget", "1", "--new-dataset-for-same-data"]));
    let text = stdout_of(unseeded().args(["budget", "--dataset", "people-2026", "--ledger"]).arg(&ledger));
    assert!(text.contains("budget     3\n"), "{text}");
    assert!(text.contains("spent      1.5\n"), "{text}");
    assert!(text.contains("remaining  1.5\n"), "{text}");
    assert!(!text.contains("dataset    default"), "{text}");
    let all = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    assert!(all.contains("dataset    default\n") && all.contains("dataset    people-2026\n"), "{all}");
    fails_with(
        unseeded().args(["budget", "--dataset", "nope", "--ledger"]).arg(&ledger),
        &["no dataset 'nope'"],
    );
}

/// `dpstat budget` never waits on the terminal: without FILE it reads no data at all.
#[test]
fn budget_without_a_file_reads_no_standard_input() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(release(&ledger, "0.1").args(["--budget", "1"]));
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("dpstat"))
        .args(["budget", "--ledger"])
        .arg(&ledger)
        .env_remove("DPSTAT_LEDGER")
        .stdin(Stdio::piped()) // held open and never written: a read would block
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("remaining  0.9"));
}

#[test]
fn a_failed_query_charges_nothing() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(release(&ledger, "0.1").args(["--budget", "1"]));
    let before = fs::read(&ledger).unwrap();
    let mut bad = unseeded();
    bad.args(["sum", "--col", "nope", "--lower", "0", "--upper", "1", "--eps", "0.1", "--invalid", "skip"])
        .arg("--ledger")
        .arg(&ledger)
        .arg(fixture("people.csv"));
    fails_with(&mut bad, &["no column 'nope'"]);
    assert_eq!(fs::read(&ledger).unwrap(), before, "a header error comes before the charge");
}

/// A ledger cut at a line boundary, or with a record edited or removed, is refused and never
/// reset: the spend cannot be rolled back.
#[test]
fn corrupt_and_cut_ledgers_are_refused_with_the_line() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(release(&ledger, "0.1").args(["--budget", "1"]));
    stdout_of(&mut release(&ledger, "0.1"));
    let good = fs::read_to_string(&ledger).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let cut: String = lines[..lines.len() - 2].iter().map(|l| format!("{l}\n")).collect();
    let cases = [
        (cut, "cut short"),
        (format!("{good}{{\"type\":\"charge\",\"dataset\""), "line 7 is truncated"),
        (format!("{good}{{not json}}\n"), "line 7 is not a valid record"),
        (good.replacen("\"1/10\"", "\"-1/10\"", 1), "line 3 has an epsilon"),
        (good.replacen("\"1/10\"", "\"1/20\"", 1), "line 3 has a running total"),
        (good.replacen("\"count\"", "\"mean\"", 1), "line 4 does not follow"),
    ];
    for (content, needle) in cases {
        fs::write(&ledger, &content).unwrap();
        let message = fails_with(&mut release(&ledger, "0.1"), &[needle]);
        assert!(message.contains("never reset") || message.contains("never rolled back"), "{message}");
        assert_eq!(fs::read_to_string(&ledger).unwrap(), content, "never reset");
        fails_with(unseeded().args(["budget", "--ledger"]).arg(&ledger), &[needle]);
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
        budget.args(["budget", "--ledger"]).arg(ledger).timeout(std::time::Duration::from_secs(20));
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
    assert_eq!(records(&ledger).len(), 3);
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
                .env_remove("DPSTAT_INSECURE_SEED")
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
    let records = records(&ledger);
    let count = |kind: &str| of_type(&records, kind).len();
    assert_eq!((count("charge"), count("released"), count("budget")), (10, 10, 1));
}

/// `dpstat ledger init --key FILE` writes a random key readable by its owner only, and its
/// state file; it never overwrites either.
#[test]
fn ledger_init_makes_a_private_key_and_never_overwrites_it() {
    let dir = TempDir::new().unwrap();
    let key = dir.path().join("ledger.key");
    let said = stdout_of(unseeded().args(["ledger", "init", "--key"]).arg(&key));
    assert!(said.contains("key id ") && said.contains("--ledger-key"), "{said}");
    let text = fs::read_to_string(&key).unwrap();
    assert!(text.trim().len() == 64 && text.trim().bytes().all(|b| b.is_ascii_hexdigit()), "{text}");
    let state = dir.path().join("ledger.key.state");
    assert_eq!(fs::read_to_string(&state).unwrap().trim(), "{\"records\":0}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for file in [&key, &state] {
            assert_eq!(fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600, "{file:?}");
        }
    }
    fails_with(
        unseeded().args(["ledger", "init", "--key"]).arg(&key),
        &["already exists", "never overwritten"],
    );
    assert_eq!(fs::read_to_string(&key).unwrap(), text, "the key is kept");
    let other = dir.path().join("other.key");
    stdout_of(unseeded().args(["ledger", "init", "--key"]).arg(&other));
    assert_ne!(fs::read_to_string(&other).unwrap(), text, "every key is drawn anew");
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// What someone who can write the ledger but not read the key does to it: the `prev` of every
/// record from index `relink_from` on made the SHA-256 of the line before it (kept as written
/// when it is that already), and the header made to count the records and name the SHA-256 of
/// the last, in its fixed width.
fn forged(header: &str, records: &[String], relink_from: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let mut line = record.clone();
        if let Some(previous) = lines.last().filter(|_| i >= relink_from) {
            let link = sha256_hex(previous.as_bytes());
            let mut value: serde_json::Value = serde_json::from_str(record).unwrap();
            if value["prev"] != link.as_str() {
                value["prev"] = link.into();
                line = serde_json::to_string(&value).unwrap();
            }
        }
        lines.push(line);
    }
    // The header keeps its fixed width, as dpstat rewrites it in place.
    let start = header.find("\"records\":").unwrap() + 10;
    let head = sha256_hex(lines.last().unwrap().as_bytes());
    let mut text = format!("{}{:<20},\"head\":\"{head}\"}}\n", &header[..start], lines.len());
    assert_eq!(text.len(), header.len() + 1);
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// A ledger holding three releases of 0.25 from a budget of 1, keyed with `key` if given.
fn three_releases(ledger: &Path, key: Option<&Path>) -> String {
    for i in 0..3 {
        let mut cmd = release(ledger, "0.25");
        if i == 0 {
            cmd.args(["--budget", "1"]);
        }
        if let Some(key) = key {
            cmd.arg("--ledger-key").arg(key);
        }
        stdout_of(&mut cmd);
    }
    fs::read_to_string(ledger).unwrap()
}

/// Issue 24's finding: the last release cut away (or a record edited) and the SHA-256 chain and
/// header recomputed, as anyone who can write the ledger can. A keyless ledger accepts it, as
/// before: its chain shows accidents only. A keyed one refuses it, given its key by the flag
/// or by DPSTAT_LEDGER_KEY_FILE, and without the key it is charged nothing.
#[test]
fn a_forged_ledger_is_refused_with_a_key_and_accepted_without() {
    for keyed in [false, true] {
        let dir = TempDir::new().unwrap();
        let ledger = dir.path().join("ledger.jsonl");
        let key = dir.path().join("ledger.key");
        if keyed {
            stdout_of(unseeded().args(["ledger", "init", "--key"]).arg(&key));
        }
        let good = three_releases(&ledger, keyed.then_some(key.as_path()));
        let lines: Vec<String> = good.lines().map(String::from).collect();
        assert_eq!(lines.len(), 8);
        let cut = forged(&lines[0], &lines[1..6], usize::MAX);
        let mut edited = lines[1..].to_vec();
        // The second charge made 1/8 instead of 1/4, and the running totals after it made to follow.
        edited[3] =
            edited[3].replace("\"epsilon\":\"1/4\"", "\"epsilon\":\"1/8\"").replace("\"1/2\"", "\"3/8\"");
        edited[5] = edited[5].replace("\"spent\":\"3/4\"", "\"spent\":\"5/8\"");
        assert!(edited[3].contains("\"spent\":\"3/8\"") && edited[5].contains("\"spent\":\"5/8\""));
        let edited = forged(&lines[0], &edited, 4);
        for (what, bytes, needle) in
            [("cut", cut, "line 1 names a last record"), ("edited", edited, "line 6 does not follow")]
        {
            fs::write(&ledger, &bytes).unwrap();
            if !keyed {
                let listing = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
                assert!(!listing.contains("chain "), "{what}: a keyless listing is as before: {listing}");
                assert!(
                    listing.contains("spent      0.5") || listing.contains("spent      0.625"),
                    "{what}: {listing}"
                );
                stdout_of(&mut release(&ledger, "0.25"));
                continue;
            }
            fails_with(release(&ledger, "0.25").arg("--ledger-key").arg(&key), &[needle, "never reset"]);
            fails_with(release(&ledger, "0.25").env("DPSTAT_LEDGER_KEY_FILE", &key), &[needle]);
            fails_with(
                unseeded().args(["budget", "--ledger"]).arg(&ledger).arg("--ledger-key").arg(&key),
                &[needle],
            );
            fails_with(&mut release(&ledger, "0.25"), &["is keyed", "a charge needs its key"]);
            assert_eq!(fs::read_to_string(&ledger).unwrap(), bytes, "{what}: nothing written");
            let listing = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
            assert!(listing.contains("NOT verified: no --ledger-key given"), "{what}: {listing}");
            let json = json_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
            assert_eq!((&json["chain"]["keyed"], &json["chain"]["verified"]), (&true.into(), &false.into()));
        }
    }
}

/// A whole older copy of a keyed ledger verifies with the key; its state file refuses it. So
/// does a deleted ledger. `dpstat budget` with the key says the state was checked.
#[test]
fn a_rolled_back_copy_is_refused_with_the_state_file() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let key = dir.path().join("ledger.key");
    stdout_of(unseeded().args(["ledger", "init", "--key"]).arg(&key));
    let with_key = |eps: &str| {
        let mut cmd = release(&ledger, eps);
        cmd.arg("--ledger-key").arg(&key);
        cmd
    };
    stdout_of(with_key("0.5").args(["--budget", "1"]));
    let copy = fs::read(&ledger).unwrap();
    stdout_of(&mut with_key("0.5"));
    let json = json_of(unseeded().args(["budget", "--ledger"]).arg(&ledger).arg("--ledger-key").arg(&key));
    assert_eq!(json["chain"]["verified"], true);
    assert_eq!(json["chain"]["state"], "checked");
    let state: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("ledger.key.state")).unwrap()).unwrap();
    assert_eq!((&state["records"], &state["head"]), (&json["records"], &json["head"]));
    let text = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger).arg("--ledger-key").arg(&key));
    assert!(text.contains("verified with the key, and not older than the key's state file"), "{text}");
    let full = fs::read(&ledger).unwrap();
    fs::write(&ledger, &copy).unwrap();
    fails_with(
        &mut with_key("0.5"),
        &["holds 3 records, fewer than the 5 that the key's state file", "never rolled back"],
    );
    fails_with(
        unseeded().args(["budget", "--ledger"]).arg(&ledger).arg("--ledger-key").arg(&key),
        &["fewer than the 5"],
    );
    assert_eq!(fs::read(&ledger).unwrap(), copy, "nothing written");
    fs::remove_file(&ledger).unwrap();
    fails_with(with_key("0.5").args(["--budget", "1"]), &["holds 0 records, fewer than the 5"]);
    // The ledger as last written: its budget is spent, which is exit 3, not a refusal of the file.
    fs::write(&ledger, &full).unwrap();
    let out = with_key("0.5").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A count of fixtures/patients.csv charged to `ledger`, per person (`--privacy-id name`) or
/// per row.
fn patients(ledger: &Path, person: bool) -> assert_cmd::Command {
    let mut cmd = unseeded();
    cmd.args(["count", "--eps", "0.1", "--ledger"]).arg(ledger);
    if person {
        cmd.args(["--privacy-id", "name"]);
    }
    cmd.arg(fixture("patients.csv"));
    cmd
}

/// Expects exit 3 (a budget refusal), nothing on stdout, one line on stderr with every needle,
/// and the ledger's bytes as they were.
fn refused_by_unit(cmd: &mut assert_cmd::Command, ledger: &Path, needles: &[&str]) {
    let before = fs::read(ledger).unwrap();
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    let error = common::the_error(&stderr);
    for needle in needles {
        assert!(error.contains(needle), "{needle:?}: {stderr}");
    }
    assert_eq!(fs::read(ledger).unwrap(), before, "the ledger is unchanged");
}

/// A dataset's budget is spent in the privacy unit of its first release: a row-level release
/// after a person-level one is refused (exit 3, nothing printed or written), and the reverse
/// too; `dpstat budget` shows each dataset's unit and each release's.
#[test]
fn a_dataset_is_spent_per_person_or_per_row_never_both() {
    let dir = TempDir::new().unwrap();
    let people = dir.path().join("people.jsonl");
    stdout_of(patients(&people, true).args(["--budget", "1"]));
    stdout_of(&mut patients(&people, true));
    refused_by_unit(
        &mut patients(&people, false),
        &people,
        &["is spent per person:name; this release is per row: add --privacy-id name", "--dataset"],
    );
    // A workload is charged per row.
    let workload = dir.path().join("count.toml");
    fs::write(&workload, "epsilon = 0.1\n\n[[query]]\nname = \"n\"\nkind = \"count\"\n").unwrap();
    let mut run = unseeded();
    run.arg("run").arg(&workload).arg("--ledger").arg(&people).arg(fixture("patients.csv"));
    refused_by_unit(&mut run, &people, &["spent per person:name; this release is per row"]);
    let records = records(&people);
    let charges = of_type(&records, "charge");
    assert_eq!(charges.len(), 2);
    assert!(charges.iter().all(|c| c["unit"] == "person:name"), "{records:?}");

    let rows = dir.path().join("rows.jsonl");
    stdout_of(patients(&rows, false).args(["--budget", "1"]));
    let mut grouped = patients(&rows, true);
    grouped.args(["--by", "diagnosis", "--keys", "flu,HIV"]);
    refused_by_unit(
        &mut grouped,
        &rows,
        &["is spent per row; this release is per person:name: drop --privacy-id", "--dataset"],
    );
    assert!(!fs::read_to_string(&rows).unwrap().contains("unit"), "row-level records carry no unit");
    // Under another dataset name the person-level release has a budget of its own.
    stdout_of(grouped.args(["--dataset", "by-person", "--budget", "1", "--new-dataset-for-same-data"]));

    let json = json_of(unseeded().args(["budget", "--ledger"]).arg(&rows));
    let units: Vec<(&str, &str, Vec<&str>)> = json["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let releases = d["releases"].as_array().unwrap().iter().map(|r| r["unit"].as_str().unwrap());
            (d["dataset"].as_str().unwrap(), d["unit"].as_str().unwrap(), releases.collect())
        })
        .collect();
    assert_eq!(units, [("by-person", "person:name", vec!["person:name"]), ("default", "row", vec!["row"])]);
    let text = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&rows));
    let person = text.split("dataset    default").next().unwrap();
    assert!(person.contains("\nunit       person:name\n"), "{text}");
    assert!(
        !text.split("dataset    default").nth(1).unwrap().contains("unit"),
        "row: listed as before: {text}"
    );
}

/// A first command refused for its budget (none given, or more than it) leaves no file.
#[test]
fn a_refused_first_charge_leaves_no_ledger_file() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let out = release(&ledger, "0.5").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no --budget");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--budget TOTAL"));
    let out = release(&ledger, "3").args(["--budget", "2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "over the budget");
    assert!(!ledger.exists());
    stdout_of(release(&ledger, "0.5").args(["--budget", "2"]));
    assert!(ledger.exists());
}

/// A first Gaussian release on a budget without δ: the advice is to add --budget-delta beside
/// the --budget this command records (no --change-budget, nothing recorded yet); once a budget
/// is recorded, changing it needs --change-budget.
#[test]
fn a_zcdp_release_on_a_budget_without_delta_says_what_to_add() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let gaussian = || {
        let mut cmd = unseeded();
        cmd.args(["count", "--noise", "gaussian", "--eps", "1", "--delta", "1e-6", "--ledger"])
            .arg(&ledger)
            .arg(fixture("people.csv"));
        cmd
    };
    let out = gaussian().args(["--budget", "2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("add --budget-delta D") && !err.contains("--change-budget"), "{err}");
    assert!(!ledger.exists(), "a refused first command leaves no empty ledger behind");
    stdout_of(release(&ledger, "0.5").args(["--budget", "2"]));
    let out = gaussian().output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--budget-delta D --change-budget"), "{err}");
    stdout_of(gaussian().args(["--budget", "2", "--budget-delta", "1e-6", "--change-budget"]));
}

/// `budget --format csv`: a header and one row per release (a dataset's budget, spent and
/// remaining on each), the numbers of `--format json`; the ledger line is a note on stderr.
#[test]
fn budget_csv_has_a_row_per_release_and_the_json_numbers() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(release(&ledger, "0.25").args(["--budget", "1"]));
    stdout_of(release(&ledger, "0.5").args([
        "--budget",
        "2",
        "--dataset",
        "people-2026",
        "--new-dataset-for-same-data",
    ]));
    stdout_of(&mut release(&ledger, "0.125"));
    let budget = |format: &str| {
        unseeded()
            .args(["budget", "--format", format, "--ledger"])
            .arg(&ledger)
            .arg(fixture("people.csv"))
            .output()
            .unwrap()
    };
    let out = budget("csv");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("dpstat: note: ledger"));
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(header[..6], ["dataset", "unit", "budget", "spent", "remaining", "release"]);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 3);
    let json: serde_json::Value = serde_json::from_slice(&budget("json").stdout).unwrap();
    let mut expected = vec![];
    for dataset in json["datasets"].as_array().unwrap() {
        for r in dataset["releases"].as_array().unwrap() {
            expected.push((dataset.clone(), r.clone()));
        }
    }
    assert_eq!(expected.len(), rows.len());
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    for (row, (dataset, release)) in rows.iter().zip(&expected) {
        assert_eq!(&row[column("dataset")], dataset["dataset"].as_str().unwrap());
        for (cell, key) in [("budget", "total"), ("spent", "spent"), ("remaining", "remaining")] {
            assert_eq!(row[column(cell)].parse::<f64>().unwrap(), dataset[key].as_f64().unwrap(), "{cell}");
        }
        assert_eq!(row[column("release")], release["seq"].to_string());
        assert_eq!(
            row[column("epsilon")].parse::<f64>().unwrap(),
            release["epsilon_decimal"].as_f64().unwrap()
        );
        assert_eq!(&row[column("data")], release["fingerprint"].as_str().unwrap());
        assert_eq!(&row[column("query")], release["query"].as_str().unwrap());
    }
}

/// Whether process `pid` has `path` open (Linux, by its /proc fd links; elsewhere never, and
/// the test waits its time out): the moment a run holds the ledger.
fn holds(pid: u32, path: &Path) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else { return cfg!(not(target_os = "linux")) };
    fds.flatten().any(|fd| fs::read_link(fd.path()).is_ok_and(|p| p == path))
}

/// The first line's `head`: what the key's state file names after the last append.
fn header_head(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    header["head"].as_str().unwrap().to_string()
}

/// Issue 35, item 1. An analyst who can write the ledger's directory but cannot read the key
/// copies the ledger, starts an expensive release A (ε = 1) and a cheap one B (ε = 1/10000),
/// and renames the copy over the ledger the moment A holds it. Before the fix, A and B locked
/// different inodes, both read the key's state before either wrote it, B wrote it last, and
/// A's completion took B's open charge (same sequence number) for its own: A was printed and
/// the ledger the key vouches for held 1/10000 for it. Over 100 attempts with B 0 to 4 ms
/// after A, the ledger the key's state names must hold at least the ε of every release
/// printed.
#[test]
fn a_ledger_renamed_during_a_run_never_records_a_release_below_its_epsilon() {
    // On a disk, not a tmpfs: its fsyncs widen the window the race needs, so that the test
    // fails fast on the code before the fix (at attempts 1 and 3 when it was written).
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let (copy, kept) = (dir.path().join("copy.jsonl"), dir.path().join("kept.jsonl"));
    let key = dir.path().join("ledger.key");
    stdout_of(unseeded().args(["ledger", "init", "--key"]).arg(&key));
    stdout_of(release(&ledger, "0.0001").args(["--budget", "1000"]).arg("--ledger-key").arg(&key));
    let binary = assert_cmd::cargo::cargo_bin("dpstat");
    let start = |eps: &str| {
        StdCommand::new(&binary)
            .args(["count", "--eps", eps, "--ledger"])
            .arg(&ledger)
            .arg("--ledger-key")
            .arg(&key)
            .arg(fixture("people.csv"))
            .env_remove("DPSTAT_INSECURE_SEED")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let state = dir.path().join("ledger.key.state");
    let state_head = || {
        let named: serde_json::Value = serde_json::from_str(&fs::read_to_string(&state).unwrap()).unwrap();
        named["head"].as_str().unwrap().to_string()
    };
    // Printed releases in units of 1/10000: the first one, then A's and B's.
    // Each attempt starts from this ledger and state (one release of 1/10000), so that every
    // run reads a few records; the ledger the key's state names after it must hold at least
    // the epsilon printed.
    let (base, base_state) = (fs::read(&ledger).unwrap(), fs::read(&state).unwrap());
    let held = fs::canonicalize(&ledger).unwrap();
    let (mut caught, mut expensive) = (0, 0);
    // 100 attempts, then more (up to 1,000) until both outcomes were seen: on a loaded machine
    // the rename can land inside A's window every time, and a run where A never prints would
    // check nothing about an expensive release.
    for attempt in 0..1000u64 {
        if attempt >= 100 && expensive > 0 && caught > 0 {
            break;
        }
        let _ = fs::remove_file(&kept);
        fs::write(&ledger, &base).unwrap();
        fs::write(&state, &base_state).unwrap();
        fs::write(&copy, &base).unwrap();
        fs::hard_link(&ledger, &kept).unwrap();
        // B starts 0 to 4 ms after A; the copy replaces the ledger the moment A holds it.
        let mut a = start("1");
        std::thread::sleep(std::time::Duration::from_micros(attempt * 40 % 4000));
        let b = start("0.0001");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !holds(a.id(), &held) && a.try_wait().unwrap().is_none() && std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
        fs::rename(&copy, &ledger).unwrap();
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        // Printed releases in units of 1/10000: the first one, then A's and B's.
        let mut printed = 1u128;
        for (out, units) in [(&a, 10_000), (&b, 1)] {
            assert_eq!(out.status.success(), !out.stdout.is_empty(), "printed only when it exits 0");
            if out.status.success() {
                printed += units;
                expensive += usize::from(units > 1);
            }
        }
        caught += usize::from(!a.status.success() || !b.status.success());
        let named = state_head();
        let file = if header_head(&ledger) == named { &ledger } else { &kept };
        assert_eq!(header_head(file), named, "the key's state names one of the two files");
        let records = records(file);
        let spent = of_type(&records, "charge").last().unwrap()["spent"].as_str().unwrap().to_string();
        let (n, d) = spent.split_once('/').unwrap();
        let (n, d): (u128, u128) = (n.parse().unwrap(), d.parse().unwrap());
        assert!(
            n * 10_000 >= printed * d,
            "attempt {attempt}: the ledger the key's state names holds {spent} for releases printed worth \
             {printed}/10000"
        );
        if file == &kept {
            fs::rename(&kept, &ledger).unwrap();
        }
    }
    // The last attempt's ledger verifies with the key and its state.
    let json = json_of(unseeded().args(["budget", "--ledger"]).arg(&ledger).arg("--ledger-key").arg(&key));
    assert_eq!((&json["chain"]["verified"], &json["chain"]["state"]), (&true.into(), &"checked".into()));
    assert!(expensive > 0 && caught > 0, "{expensive} expensive releases printed, {caught} runs stopped");
}

/// Issue 35, item 5: a mistyped `--dataset` is refused with the recorded name closest to it,
/// and a new budget for data another dataset already drew on is refused before the charge,
/// naming that dataset, unless `--new-dataset-for-same-data` asks for it.
#[test]
fn one_table_draws_on_one_budget() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let on = |dataset: &str, file: &str| {
        let mut cmd = unseeded();
        cmd.args(["count", "--eps", "0.1", "--dataset", dataset, "--ledger"]).arg(&ledger).arg(fixture(file));
        cmd
    };
    stdout_of(on("people", "people.csv").args(["--budget", "1"]));
    fails_with(
        &mut on("peeple", "people.csv"),
        &["no budget is recorded for dataset peeple", "did you mean --dataset people?"],
    );
    fails_with(&mut on("zzz", "people.csv"), &["set one with --budget TOTAL"]);
    let before = fs::read(&ledger).unwrap();
    let out = on("peeple", "people.csv").args(["--budget", "1"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(out.stdout.is_empty());
    for needle in ["dataset people in ledger", "already draws on these data", "--new-dataset-for-same-data"] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    assert_eq!(fs::read(&ledger).unwrap(), before, "nothing written");
    // Other data open a budget of their own; the same data do with the flag.
    stdout_of(on("income", "income.csv").args(["--budget", "1"]));
    stdout_of(on("peeple", "people.csv").args(["--budget", "1", "--new-dataset-for-same-data"]));
    let records = records(&ledger);
    assert_eq!(of_type(&records, "budget").len(), 3);
    // A Parquet dataset's fingerprint is known from its footers, before any row.
    stdout_of(on("pq", "people.parquet").args(["--budget", "1"]));
    let out = on("pq2", "people.parquet").args(["--budget", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dataset pq in ledger"));
    fails_with(
        on("x", "people.csv").args(["--new-dataset-for-same-data"]),
        &["--new-dataset-for-same-data", "--budget TOTAL"],
    );
}

/// A budget δ recorded before its use could be chosen (a `delta` without `delta_for`) reads as
/// split, half for each kind of release (issue 35, item 3: the conservative reading); a use
/// that is not one of the three, or one without a δ, is a corrupt record.
#[test]
fn a_budget_delta_recorded_without_its_use_reads_as_split() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(release(&ledger, "0.1").args(["--budget", "1", "--budget-delta", "1e-6"]));
    let text = fs::read_to_string(&ledger).unwrap();
    assert!(text.contains(",\"delta_for\":\"split\""), "the default is written: {text}");
    let (header, rest) = text.split_once('\n').unwrap();
    let lines: Vec<String> = rest.lines().map(String::from).collect();
    let with_budget = |budget: String| {
        let mut edited = lines.clone();
        edited[0] = budget;
        forged(header, &edited, 1)
    };
    fs::write(&ledger, with_budget(lines[0].replace(",\"delta_for\":\"split\"", ""))).unwrap();
    let shown = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    let split = "with delta 0.000001, 0.0000005 for zCDP releases and 0.0000005 for keys found in the data";
    assert!(shown.contains(split), "{shown}");
    let discover = |delta: &str| {
        let mut cmd = unseeded();
        cmd.args(["count", "--by", "region", "--discover", "--eps", "0.1", "--delta", delta, "--ledger"])
            .arg(&ledger)
            .arg(fixture("people.csv"));
        cmd
    };
    let out = discover("1e-6").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    stdout_of(&mut discover("5e-7"));
    for bad in [
        lines[0].replace("\"delta_for\":\"split\"", "\"delta_for\":\"half\""),
        lines[0].replace(",\"delta\":\"1/1000000\"", ""),
    ] {
        fs::write(&ledger, with_budget(bad)).unwrap();
        fails_with(unseeded().args(["budget", "--ledger"]).arg(&ledger), &["corrupt", "line 2", "delta_for"]);
    }
}

/// `dpstat budget` lists the releases in aligned columns whatever their labels: a column name
/// with spaces longer than the listing's usual width, a workload's query names, short ones.
#[test]
fn the_budget_listing_stays_aligned_for_any_label() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let data = dir.path().join("regions.csv");
    fs::write(&data, "id,count by region of residence,x\n1,3,4\n2,5,6\n").unwrap();
    let workload = dir.path().join("w.toml");
    fs::write(
        &workload,
        "epsilon = \"0.25\"\n\n[[query]]\nname = \"count by region\"\nkind = \"count\"\n\n\
         [[query]]\nname = \"rows in the north and the east\"\nkind = \"count\"\n",
    )
    .unwrap();
    let runs: [&[&str]; 3] = [
        &["count", "--eps", "0.1", "--budget", "2"],
        &[
            "sum",
            "--col",
            "count by region of residence",
            "--lower",
            "0",
            "--upper",
            "9",
            "--invalid",
            "skip",
            "--eps",
            "0.2",
        ],
        &["mean", "--col", "x", "--lower", "0", "--upper", "9", "--invalid", "skip", "--eps", "0.3"],
    ];
    for args in runs {
        stdout_of(
            unseeded().args(args).args(["--dataset", "count by region", "--ledger"]).arg(&ledger).arg(&data),
        );
    }
    stdout_of(
        unseeded()
            .arg("run")
            .arg(&workload)
            .args(["--dataset", "count by region", "--ledger"])
            .arg(&ledger)
            .arg(&data),
    );
    let listing = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    let lines: Vec<&str> = listing.lines().filter(|l| l.starts_with("  #")).collect();
    assert_eq!(lines.len(), 4, "{listing}");
    // Where each column starts: the same in every line.
    let starts = |line: &str, word: &str| line.find(word).map(|b| line[..b].chars().count());
    for word in ["add-remove", "data "] {
        let at: Vec<Option<usize>> = lines.iter().map(|l| starts(l, word)).collect();
        assert!(at[0].is_some() && at.iter().all(|a| *a == at[0]), "{word} at {at:?}:\n{listing}");
    }
    let spends: Vec<Option<usize>> = lines.iter().map(|l| starts(l, " eps ").map(|a| a + 1)).collect();
    assert!(spends.iter().all(|a| *a == spends[0]), "{listing}");
    assert!(listing.contains("count by region of residence"), "{listing}");
}
