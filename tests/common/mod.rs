//! Shared helpers for the integration tests: the real binary, with reproducible noise and
//! paths under fixtures/.
#![allow(dead_code)]

#[cfg(feature = "cluster")]
pub mod cluster;
pub mod tables;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use assert_cmd::Command;

/// `dpstat` with `DPSTAT_INSECURE_SEED` set, run from the crate root.
pub fn dpstat() -> Command {
    seeded(1)
}

/// `dpstat` with the operating system's randomness, as in production: what a run with a
/// ledger needs, since the test seed is refused together with `--ledger`.
pub fn unseeded() -> Command {
    let mut cmd = Command::cargo_bin("dpstat").expect("the dpstat binary is built by cargo test");
    cmd.env_remove("DPSTAT_INSECURE_SEED")
        .env_remove("DPSTAT_LEDGER")
        .env_remove("DPSTAT_LEDGER_KEY_FILE")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// `dpstat` with a given insecure seed.
pub fn seeded(seed: u64) -> Command {
    let mut cmd = Command::cargo_bin("dpstat").expect("the dpstat binary is built by cargo test");
    cmd.env("DPSTAT_INSECURE_SEED", seed.to_string())
        .env_remove("DPSTAT_LEDGER")
        .env_remove("DPSTAT_LEDGER_KEY_FILE")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// Absolute path of a fixture file.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

/// Runs the command, expects exit 0, returns stdout as a string.
pub fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().expect("dpstat runs");
    assert!(
        out.status.success(),
        "dpstat failed: {:?}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// Runs the command, expects exit 0 and JSON on stdout.
pub fn json_of(cmd: &mut Command) -> serde_json::Value {
    let text = stdout_of(cmd.args(["--format", "json"]));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Expects exit 2, empty stdout and one `dpstat:` line on stderr containing every `needle`.
pub fn fails_with(cmd: &mut Command, needles: &[&str]) -> String {
    let out = cmd.output().expect("dpstat runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "exit code; stderr: {stderr}");
    assert!(out.stdout.is_empty(), "stdout must be empty, got: {}", String::from_utf8_lossy(&out.stdout));
    let error = the_error(&stderr);
    for needle in needles {
        assert!(error.contains(needle), "error should mention {needle:?}: {stderr}");
    }
    error
}

/// The one error of a failed run's stderr (warnings aside): a line `dpstat: …` of at most 200
/// characters naming the problem, and the indented lines of its details, if any, after it;
/// returned as one line, as a search for the words it names needs.
pub fn the_error(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.contains("warning:")).collect();
    let starts = lines.iter().filter(|l| !l.starts_with("  ")).count();
    assert_eq!(starts, 1, "one error expected, got: {stderr}");
    assert!(lines[0].starts_with("dpstat: "), "error line starts with 'dpstat: ': {stderr}");
    assert!(lines[0].chars().count() <= 200, "first line over 200 characters: {stderr}");
    lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
}

/// The two privacy units, as flag values.
pub const UNITS: [&str; 2] = ["add-remove", "replace"];

/// How a test hands the CSV to dpstat: as a path, as `-` on stdin, or with no FILE at all.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    Path,
    Dash,
    Absent,
}

impl Source {
    pub const ALL: [Source; 3] = [Source::Path, Source::Dash, Source::Absent];

    pub fn feed<'a>(self, cmd: &'a mut Command, name: &str) -> &'a mut Command {
        let bytes = || std::fs::read(fixture(name)).expect("fixture is readable");
        match self {
            Source::Path => cmd.arg(fixture(name)),
            Source::Dash => cmd.arg("-").write_stdin(bytes()),
            Source::Absent => cmd.write_stdin(bytes()),
        }
    }
}

/// Runs a release that must succeed and say on stderr that the seeded noise is not private.
pub fn released(cmd: &mut Command) -> String {
    let assert = cmd.assert().success().stderr(predicates::str::contains("NOT private"));
    String::from_utf8(assert.get_output().stdout.clone()).expect("stdout is UTF-8")
}

/// Text output of a scalar release: exactly one finite number on one line.
pub fn one_number(text: &str) -> f64 {
    let line = text.strip_suffix('\n').unwrap_or_else(|| panic!("no final newline: {text:?}"));
    assert!(!line.contains('\n'), "more than one line: {text:?}");
    let x: f64 = line.parse().unwrap_or_else(|e| panic!("not a number ({e}): {text:?}"));
    assert!(x.is_finite(), "not finite: {text:?}");
    x
}

/// Calls `f(0..n)` on `workers` threads and returns the results in order; a panic in any call
/// is resumed on the caller's thread. For tests that run many independent processes or draws:
/// a process spends much of its life waiting to start and to be reaped, so a few more workers
/// than cores keep the cores busy.
pub fn parallel_map<T: Send>(workers: usize, n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<T>> = (0..n).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.clamp(1, n.max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            return mine;
                        }
                        mine.push((i, f(i)));
                    }
                })
            })
            .collect();
        for handle in handles {
            match handle.join() {
                Ok(mine) => mine.into_iter().for_each(|(i, t)| results[i] = Some(t)),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    results.into_iter().map(|r| r.expect("every index ran")).collect()
}

/// A fresh directory `NAME-PID` under the tests' scratch folder for this test process alone:
/// runners that start a process per test (nextest) run several at once, and a shared folder
/// rewritten by each would change under the others. Folders left by processes that have ended
/// are removed where /proc tells.
pub fn process_dir(name: &str) -> PathBuf {
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    if let Ok(entries) = std::fs::read_dir(&scratch) {
        for entry in entries.flatten() {
            let file = entry.file_name();
            let pid =
                file.to_str().and_then(|f| f.strip_prefix(name)?.strip_prefix('-')?.parse::<u32>().ok());
            if pid.is_some_and(|pid| {
                std::path::Path::new("/proc/self").exists()
                    && !std::path::Path::new(&format!("/proc/{pid}")).exists()
            }) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = scratch.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The JSON documents each seeded run printed, for seeds `first..first + n`, in order: `args`
/// run under `DPSTAT_INSECURE_SEED=A..B` (one process makes the runs of a range, as separate
/// processes would: `seeded_ranges_equal_separate_runs` checks it), in `chunks` ranges on as
/// many threads.
pub fn seeded_json_runs(first: u64, n: usize, chunks: usize, args: &[&std::ffi::OsStr]) -> Vec<String> {
    let chunks = chunks.clamp(1, n.max(1));
    let per = n.div_ceil(chunks);
    let ranges: Vec<(u64, u64)> = (0..chunks)
        .map(|c| (first + (c * per).min(n) as u64, first + ((c + 1) * per).min(n) as u64))
        .filter(|(a, b)| b > a)
        .collect();
    let texts = parallel_map(ranges.len(), ranges.len(), |c| {
        let (a, b) = ranges[c];
        let mut cmd = seeded(0);
        cmd.env("DPSTAT_INSECURE_SEED", format!("{a}..{b}")).args(args);
        let text = stdout_of(&mut cmd);
        let docs = json_documents(&text);
        assert_eq!(docs.len() as u64, b - a, "one JSON document per seed {a}..{b}");
        docs
    });
    texts.concat()
}

/// [`seeded_json_runs`], parsed; `args` are strings or paths.
pub fn seeded_json_values<S: AsRef<std::ffi::OsStr>>(
    first: u64,
    n: usize,
    chunks: usize,
    args: &[S],
) -> Vec<serde_json::Value> {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(AsRef::as_ref).collect();
    seeded_json_runs(first, n, chunks, &args)
        .iter()
        .map(|text| serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")))
        .collect()
}

/// The JSON documents of a stream of them, each as its own text.
pub fn json_documents(text: &str) -> Vec<String> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    let mut docs = Vec::new();
    let mut start = 0;
    while let Some(doc) = stream.next() {
        doc.unwrap_or_else(|e| panic!("not a stream of JSON documents ({e}): {text}"));
        let end = stream.byte_offset();
        docs.push(text[start..end].trim().to_string());
        start = end;
    }
    docs
}

/// Whether a printed number is `value` as written to the digits it shows: within half a unit
/// of its last digit (a trailing zero before the point counts as not shown, so a value rounded
/// to significant digits still matches), and never further off than that.
pub fn printed_as(cell: &str, value: f64) -> bool {
    let Ok(x) = cell.parse::<f64>() else { return false };
    if x == value {
        return true;
    }
    let digits = cell.trim_start_matches('-');
    let unit = match digits.split_once('.') {
        Some((_, after)) => 10f64.powi(-(after.len() as i32)),
        None => 10f64.powi((digits.len() - digits.trim_end_matches('0').len()) as i32),
    };
    (x - value).abs() <= unit / 2.0 * (1.0 + 1e-9)
}

/// The records of a CSV text, header first, read by the csv crate (quoting included).
pub fn csv_records(text: &str) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(text.as_bytes());
    reader.records().map(|r| r.expect("valid CSV").iter().map(str::to_string).collect()).collect()
}

/// A ledger in `dir` with a budget of 100 and one count charged to it (on a CSV file of its
/// own), for tests of refusals before the charge.
pub fn ledger_in(dir: &std::path::Path) -> PathBuf {
    let ledger = dir.join("ledger.jsonl");
    let csv = dir.join("seed.csv");
    std::fs::write(&csv, "x\n1\n").unwrap();
    stdout_of(unseeded().args(["count", "--eps", "1", "--budget", "100", "--ledger"]).arg(&ledger).arg(&csv));
    ledger
}

/// `args` with `files` run under a fresh [`ledger_in`] in `dir` (with `--invalid skip`, as a
/// ledger asks, for the commands that take it): refused with exit 2, nothing on stdout, one
/// error, and the ledger byte for byte as it was. Returns the error as one line and the whole
/// stderr.
pub fn refused_under_a_ledger<S: AsRef<std::ffi::OsStr>>(
    dir: &std::path::Path,
    args: &[S],
    files: &[&std::path::Path],
) -> (String, String) {
    let ledger = ledger_in(dir);
    let before = std::fs::read(&ledger).unwrap();
    let mut cmd = unseeded();
    cmd.args(args).arg("--ledger").arg(&ledger).args(files);
    let first = args[0].as_ref().to_string_lossy();
    if first != "count" && first != "run" && first != "sql" {
        cmd.args(["--invalid", "skip"]);
    }
    let out = cmd.output().expect("dpstat runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "exit code: {stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {stderr}");
    let error = the_error(&stderr);
    assert_eq!(std::fs::read(&ledger).unwrap(), before, "nothing charged: {error}");
    (error, stderr)
}
