//! Bad and awkward input that a fuzzer of flags and files found mishandled (see CHANGELOG):
//! each runs the real binary and holds the standard (one clear refusal, exit 2, nothing on
//! stdout; no raw terminal control from the data; no `inf`; no wait on a pipe).

use crate::common;

use std::fs;
use std::process::Stdio;
use std::time::Duration;

use common::{dpstat, fails_with, fixture, stdout_of};

/// A scratch folder of this test process, one per test (`process_dir` empties its folder on
/// every call, and the tests run at once).
fn scratch(name: &str) -> std::path::PathBuf {
    common::process_dir(&format!("robustness-{name}"))
}

/// A stream of NUL bytes has no line end: it is refused as binary at once, not read forever.
#[test]
fn an_endless_binary_stream_is_refused_at_once() {
    let mut cmd = dpstat();
    cmd.args(["count", "--eps", "1", "/dev/zero"]).timeout(Duration::from_secs(20));
    fails_with(&mut cmd, &["/dev/zero is not CSV text", "NUL byte"]);
}

/// A pipe inside a data folder would block its reader forever: it is refused by name.
#[test]
fn a_pipe_in_a_data_folder_is_refused() {
    let dir = scratch("fifo");
    fs::write(dir.join("a.csv"), "id,age\n1,20\n").unwrap();
    let fifo = dir.join("b.csv");
    if !fifo.exists() {
        let made = std::process::Command::new("mkfifo").arg(&fifo).stderr(Stdio::null()).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("no mkfifo here: skipped");
            return;
        }
    }
    let mut cmd = dpstat();
    cmd.args(["count", "--eps", "1"]).arg(&dir).timeout(Duration::from_secs(20));
    fails_with(&mut cmd, &["b.csv is not a regular file"]);
}

/// Keys found in the data are printed with the characters that drive a terminal escaped;
/// JSON keeps them exactly, escaped as JSON does.
#[test]
fn keys_found_in_the_data_cannot_drive_the_terminal() {
    let dir = scratch("keys");
    let rows: String =
        (0..200).map(|i| format!("{i},{}\n", if i % 2 == 1 { "no\u{1b}[31mrth" } else { "south" })).collect();
    let file = dir.join("keys.csv");
    fs::write(&file, format!("id,region\n{rows}")).unwrap();
    let args = ["count", "--by", "region", "--discover", "--eps", "1", "--delta", "1e-5"];
    let text = stdout_of(dpstat().args(args).arg(&file));
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(text.contains("no\\x1b[31mrth,"), "{text:?}");
    let json = stdout_of(dpstat().args(args).args(["--format", "json"]).arg(&file));
    assert!(json.contains("no\\u001b[31mrth"), "{json}");
}

/// A file's name found in a folder is escaped where a message names it.
#[test]
fn a_file_name_in_a_message_is_escaped() {
    let dir = scratch("names");
    fs::write(dir.join("a.csv"), "id,age\n1,20\n").unwrap();
    fs::write(dir.join("b\u{1b}[2J\u{202e}.csv"), "id,x\n1,20\n").unwrap();
    let error = fails_with(dpstat().args(["count", "--eps", "1"]).arg(&dir), &["its header differs"]);
    assert!(!error.contains('\u{1b}') && !error.contains('\u{202e}'), "{error:?}");
    assert!(error.contains("b\\x1b[2J\\u{202e}.csv"), "{error}");
}

/// A slope whose bound is not finite prints `unbounded` in text and CSV, never `inf` (JSON: null).
#[test]
fn an_unbounded_slope_never_prints_inf() {
    let args = [
        "regress",
        "--x",
        "score",
        "--y",
        "urban_rural",
        "--eps",
        "10",
        "--lower",
        "0,0",
        "--upper",
        "1,100",
    ];
    let mut cmd = common::seeded(7);
    let csv = stdout_of(cmd.args(args).args(["--format", "csv"]).arg(fixture("people.csv")));
    assert!(csv.ends_with(",unbounded\n") && !csv.contains("inf"), "{csv}");
    let mut cmd = common::seeded(7);
    let json = common::json_of(cmd.args(args).arg(fixture("people.csv")));
    assert!(json["accuracy"]["error_bound"].is_null(), "{json}");
}

/// Bounds too wide for a variance are named on the first line, in short numbers.
#[test]
fn bounds_too_wide_are_named_on_the_first_line() {
    let mut cmd = dpstat();
    cmd.args(["variance", "-c", "age", "-l", "-1e288", "-u", "1e288", "--eps", "1"])
        .arg(fixture("people.csv"));
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().find(|l| l.starts_with("dpstat: ") && !l.contains("warning")).unwrap();
    assert!(first.contains("bounds [-1e288, 1e288] are too wide for a variance"), "{stderr}");
}

/// The warning for a large ε comes once nothing can refuse the run: a refusal's first line is
/// its problem.
#[test]
fn a_refusal_comes_before_the_large_epsilon_warning() {
    let out = dpstat().args(["count", "--eps", "11", "no-such-file.csv"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("is large"), "{stderr}");
    let out = dpstat().args(["count", "--eps", "11"]).arg(fixture("people.csv")).output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--eps 11 is large"), "{stderr}");
}

/// describe cuts ε into parts below the 1e-9 a flag must reach: they are released, not an
/// internal error after the charge.
#[test]
fn describe_at_the_smallest_epsilon_releases() {
    stdout_of(
        dpstat()
            .args(["describe", "--cols", "age:0:100,income:0:1e5", "--eps", "1e-9"])
            .arg(fixture("people.csv")),
    );
}

/// A folder of CSV files under hive folders is checked against its files' own header.
#[test]
fn check_reads_csv_hive_folders_as_the_queries_do() {
    let dir = scratch("hive").join("region=a");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("p.csv"), "id,age\n1,20\n2,30\n").unwrap();
    let report = stdout_of(dpstat().arg("check").arg(dir.parent().unwrap()));
    assert!(report.contains("2 rows") && report.contains("ok: no problems found"), "{report}");
}

/// Two links back up a data folder made its walk branch without end: a loop is refused.
#[test]
fn a_loop_of_symbolic_links_in_a_data_folder_is_refused() {
    let dir = scratch("loops").join("d");
    for sub in ["loop0", "loop1"] {
        fs::create_dir_all(dir.join(sub)).unwrap();
        let link = dir.join(sub).join("up");
        if fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink("..", &link).unwrap();
        }
    }
    fs::write(dir.join("a.csv"), "id,age\n1,20\n").unwrap();
    let mut cmd = dpstat();
    cmd.args(["count", "--eps", "1"]).arg(&dir).timeout(Duration::from_secs(20));
    fails_with(&mut cmd, &["a loop of symbolic links"]);
}

/// `--eps 1e-9` less the tenth that finds bounds is below the 1e-9 a flag must reach but is a
/// part of ε: the search runs (and here finds none: exit 5), rather than a refusal that blamed
/// a `--bounds-eps` no one gave.
#[test]
fn the_smallest_epsilon_leaves_a_part_for_the_bounds_search() {
    let out =
        dpstat().args(["mean", "-c", "age", "--eps", "1e-9"]).arg(fixture("people.csv")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(!stderr.contains("must be less than"), "{stderr}");
}

/// A plot that cannot be written after the ledger was charged is the system's failure (exit 1),
/// not bad input (exit 2 says nothing was charged).
#[test]
fn a_plot_unwritable_after_the_charge_exits_1() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let dir = scratch("plot");
    let plot = dir.join("full.svg");
    if fs::symlink_metadata(&plot).is_err() {
        std::os::unix::fs::symlink("/dev/full", &plot).unwrap();
    }
    let ledger = dir.join(format!("ledger-{}.jsonl", std::process::id()));
    let _ = fs::remove_file(&ledger);
    let out = common::unseeded()
        .args([
            "histogram",
            "-c",
            "age",
            "-l",
            "0",
            "-u",
            "100",
            "--bins",
            "5",
            "--eps",
            "1",
            "--invalid",
            "skip",
        ])
        .arg("--plot")
        .arg(&plot)
        .arg("--ledger")
        .arg(&ledger)
        .args(["--budget", "5"])
        .arg(fixture("people.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the ledger was already charged"));
}

/// A FILE named on the command line (a shell glob expands to such names) is escaped in messages.
#[test]
fn a_file_name_given_as_file_is_escaped() {
    let dir = scratch("given");
    let file = dir.join("b\u{1b}]0;x\u{7}.csv");
    fs::write(&file, "id,age\n1,20\n").unwrap();
    let error = fails_with(
        dpstat().args(["sum", "--col", "zz", "-l", "0", "-u", "1", "-e", "1"]).arg(&file),
        &["no column"],
    );
    assert!(!error.contains('\u{1b}') && !error.contains('\u{7}'), "{error:?}");
}
