//! The cluster engine (`--features cluster`): releases on a Ballista cluster of dpstat's own
//! scheduler and executors, started on loopback by scripts/cluster-up.sh, are the local scan's
//! byte for byte under the same seed; whatever the cluster cannot do is refused before the
//! charge; a lost executor never changes a release. (Every statistic and variant is compared in
//! tests/parquet.rs, whose layouts include the cluster in this build.)
#![cfg(feature = "cluster")]

#[path = "common/cluster.rs"]
mod cluster;
mod common;
#[path = "common/parquet.rs"]
mod tables;

use std::path::Path;
use std::process::Output;

use cluster::Cluster;
use common::*;
use tables::{Table, Values};

fn run(cmd: &mut assert_cmd::Command) -> Output {
    cmd.output().expect("dpstat runs")
}

fn same(local: &Output, remote: &Output, what: &str) {
    assert!(local.status.success(), "{what} locally: {}", String::from_utf8_lossy(&local.stderr));
    assert!(remote.status.success(), "{what} on the cluster: {}", String::from_utf8_lossy(&remote.stderr));
    assert_eq!(
        String::from_utf8_lossy(&local.stdout),
        String::from_utf8_lossy(&remote.stdout),
        "{what}: the cluster's release differs"
    );
}

#[test]
fn fixtures_give_the_local_release_on_two_executors() {
    let cluster = Cluster::start("fixtures", 50410, 2, "");
    let people = fixture("people.parquet");
    let regions = fixture("people_by_region");
    let cases: Vec<(&str, Vec<&str>, &Path)> = vec![
        ("count", vec!["count", "--eps", "1"], &people),
        // Every digit (text is rounded by default): the same release byte for byte.
        (
            "mean",
            vec!["mean", "-c", "income", "-l", "0", "-u", "200000", "-e", "1", "--full-precision"],
            &people,
        ),
        (
            "histogram by region",
            vec![
                "histogram",
                "-c",
                "age",
                "--bins",
                "4",
                "-l",
                "0",
                "-u",
                "100",
                "-e",
                "1",
                "--by",
                "region",
                "--discover",
                "--delta",
                "1e-6",
            ],
            &regions,
        ),
        (
            "quantile where",
            vec![
                "quantile",
                "-c",
                "income",
                "-q",
                "0.5",
                "-l",
                "0",
                "-u",
                "2e5",
                "-e",
                "1",
                "-w",
                "region=north",
            ],
            &regions,
        ),
        ("run", vec!["run", "fixtures/compose_two_columns.toml", "--full-precision"], &people),
    ];
    for (what, args, file) in cases {
        let local = run(dpstat().args(&args).arg(file));
        let remote = run(dpstat().args(&args).args(["--engine", &cluster.url]).arg(file));
        same(&local, &remote, what);
    }
}

/// Runs a release under a fresh ledger and expects exit 2 with `needle` on its one line, and
/// nothing charged.
fn refused_uncharged(args: &[String], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let out = run(unseeded().args(args).arg("--ledger").arg(&ledger).args(["--budget", "2"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} printed {}", String::from_utf8_lossy(&out.stdout));
    assert!(common::the_error(&stderr).contains(needle), "{args:?}: {stderr}");
    let budget = run(unseeded().args(["budget", "--ledger"]).arg(&ledger).args(["--format", "json"]));
    let text = String::from_utf8_lossy(&budget.stdout);
    assert!(!text.contains("\"count\""), "{args:?} charged the ledger: {text}");
}

#[test]
fn what_the_cluster_cannot_run_is_refused_before_the_charge() {
    let cluster = Cluster::start("refusals", 50430, 1, "");
    let people = fixture("people.parquet");
    let people = people.to_str().unwrap();
    let url = cluster.url.clone();
    let count = |more: &[&'static str]| -> Vec<String> {
        ["count", "--eps", "1"]
            .iter()
            .chain(more)
            .map(|s| s.to_string())
            .chain(["--engine".into(), url.clone()])
            .collect()
    };
    let with = |args: Vec<String>, file: &str| -> Vec<String> {
        args.into_iter().chain([file.to_string()]).collect()
    };
    let unreachable = ["count", "--eps", "1", "--engine", "ballista://127.0.0.1:1", people];
    refused_uncharged(&unreachable.map(String::from), "--engine");
    refused_uncharged(&with(count(&[]), fixture("people.csv").to_str().unwrap()), "CSV");
    refused_uncharged(&with(count(&["--privacy-id", "id", "--max-rows-per-id", "auto"]), people), "auto");
    // The file is there for this process, not for the executor: /proc/self/cwd is each
    // process's own directory.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("people.parquet"), dir.path().join("mine.parquet")).unwrap();
    let mut cmd = unseeded();
    cmd.current_dir(dir.path());
    let ledger = dir.path().join("ledger.jsonl");
    let out = run(cmd
        .args(count(&[]))
        .arg("/proc/self/cwd/mine.parquet")
        .arg("--ledger")
        .arg(&ledger)
        .args(["--budget", "2"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot read") && stderr.contains("mine.parquet"), "{stderr}");
}

#[test]
fn an_executor_without_dpstat_functions_is_refused_before_the_charge() {
    let cluster = Cluster::start("stock", 50450, 1, "--stock");
    let people = fixture("people.parquet");
    let args = ["count", "--eps", "1", "--engine", &cluster.url, people.to_str().unwrap()];
    refused_uncharged(&args.map(String::from), "--engine");
}

#[test]
fn a_lost_executor_never_changes_a_release() {
    // Enough rows that the query is still running when an executor dies.
    let rows: u64 = 400_000;
    let table = Table {
        columns: vec![
            (
                "x".into(),
                Values::Float((0..rows).map(|i| Some(((i * 7919) % 100_003) as f64 / 3.0)).collect()),
            ),
            ("k".into(), Values::Text((0..rows).map(|i| Some(format!("k{}", i % 7))).collect())),
        ],
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.parquet");
    table.write_parquet(&file, 20_000);
    let args = [
        "quantile",
        "-c",
        "x",
        "-q",
        "0.5",
        "-l",
        "0",
        "-u",
        "40000",
        "-e",
        "1",
        "--resolution",
        "200",
        "--by",
        "k",
        "--keys",
        "k0,k1,k2,k3",
    ];
    let local = run(dpstat().args(args).arg(&file));
    assert!(local.status.success(), "{}", String::from_utf8_lossy(&local.stderr));
    let cluster = Cluster::start("lost", 50470, 2, "");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dpstat"))
        .env("DPSTAT_INSECURE_SEED", "1")
        .args(args)
        .args(["--engine", &cluster.url])
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // After the probe (milliseconds), while the rows are read (over a second).
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(child.try_wait().unwrap().is_none(), "the run ended before the executor was lost");
    let started = std::time::Instant::now();
    cluster.kill_executor(2);
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "the run ended {:?} after the kill: {:?} {}",
        started.elapsed(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        same(&local, &out, "after an executor was lost");
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.stdout.is_empty(), "a failed run printed: {}", String::from_utf8_lossy(&out.stdout));
        assert!(common::the_error(&stderr).contains("cluster"), "{stderr}");
    }
}
