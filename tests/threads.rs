//! Parallel scanning (issue 6): the release does not depend on `--threads`. With the same
//! insecure seed, the same aggregate gives the same noise, so the whole JSON output must be
//! identical for 1 thread, N threads and standard input (which the csv reader reads alone).

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;

use common::{fails_with, fixture, json_of, seeded, unseeded};
use dpstat::data::fingerprint::fingerprint_of;
use tempfile::TempDir;

const QUERIES: &[&[&str]] = &[
    &["count"],
    &["count", "--where", "region=north"],
    &["count", "--where", "urban_rural=2", "--where", "region=west"],
    &["sum", "--col", "income", "--lower", "0", "--upper", "200000"],
    &["mean", "--col", "income", "--lower", "0", "--upper", "200000"],
    &["mean", "--col", "score", "--lower", "0", "--upper", "100", "--neighbours", "replace"],
    &["histogram", "--col", "region", "--categories", "north,south,east,west,central"],
    &["histogram", "--col", "age", "--bins", "8", "--lower", "0", "--upper", "100"],
];

fn release(query: &[&str], threads: &str, file: &Path) -> serde_json::Value {
    json_of(seeded(42).args(query).args(["--eps", "0.5", "--threads", threads]).arg(file))
}

/// The same JSON for 1, 2, 3, 4 and 7 threads, and from standard input.
fn same_for_any_thread_count(query: &[&str], file: &Path) {
    let one = release(query, "1", file);
    for threads in ["2", "3", "4", "7"] {
        assert_eq!(
            release(query, threads, file),
            one,
            "{query:?} on {} with {threads} threads",
            file.display()
        );
    }
    let bytes = fs::read(file).unwrap();
    let piped = json_of(seeded(42).args(query).args(["--eps", "0.5"]).write_stdin(bytes));
    assert_eq!(piped, one, "{query:?} on {} from stdin", file.display());
}

#[test]
fn crlf_and_byte_order_mark_give_the_same_release_for_any_thread_count() {
    for query in QUERIES {
        same_for_any_thread_count(query, &fixture("threads_crlf_bom.csv"));
    }
}

#[test]
fn quoted_line_ends_give_the_same_release_for_any_thread_count() {
    for query in QUERIES {
        same_for_any_thread_count(query, &fixture("threads_quoted.csv"));
    }
}

#[test]
fn no_header_semicolons_and_lone_cr_give_the_same_release_for_any_thread_count() {
    let queries: &[&[&str]] = &[
        &["count", "--where", "4=north"],
        &["mean", "--col", "3", "--lower", "0", "--upper", "200000"],
        &["histogram", "--col", "4", "--categories", "north,south,east,west"],
    ];
    for query in queries {
        let query: Vec<&str> = query.iter().copied().chain(["--no-header", "--delimiter", ";"]).collect();
        same_for_any_thread_count(&query, &fixture("threads_semicolon.csv"));
    }
}

#[test]
fn the_same_data_gives_the_same_release_in_any_file() {
    let query = ["mean", "--col", "income", "--lower", "0", "--upper", "200000"];
    let plain = release(&query, "4", &fixture("people.csv"));
    for other in ["threads_crlf_bom.csv", "threads_quoted.csv"] {
        // The quoted fixture has other regions, the same incomes.
        assert_eq!(release(&query, "4", &fixture(other)), plain, "{other}");
    }
}

#[test]
fn a_bad_cell_is_reported_at_its_row_whatever_the_thread_count() {
    let message = |threads: &str| {
        fails_with(
            seeded(1)
                .args(["mean", "--col", "income", "--lower", "0", "--upper", "1", "--eps", "1"])
                .args(["--threads", threads])
                .arg(fixture("threads_bad_cell.csv")),
            &["row 150 (line 151), column 'income': '12k' is not a finite number"],
        )
    };
    let one = message("1");
    assert_eq!(message("4"), one);
}

#[test]
fn threads_must_be_at_least_one() {
    fails_with(
        seeded(1).args(["count", "--eps", "1", "--threads", "0"]).arg(fixture("people.csv")),
        &["--threads"],
    );
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn gzip_input_is_read_by_name_or_by_magic_bytes() {
    let dir = TempDir::new().unwrap();
    let bytes = fs::read(fixture("threads_crlf_bom.csv")).unwrap();
    let named = dir.path().join("people.csv.gz");
    let unnamed = dir.path().join("people.data");
    fs::write(&named, gzip(&bytes)).unwrap();
    fs::write(&unnamed, gzip(&bytes)).unwrap();
    for query in QUERIES {
        let plain = release(query, "1", &fixture("threads_crlf_bom.csv"));
        assert_eq!(release(query, "4", &named), plain, "{query:?}: .gz");
        assert_eq!(release(query, "4", &unnamed), plain, "{query:?}: gzip magic bytes");
        let piped = json_of(seeded(42).args(*query).args(["--eps", "0.5"]).write_stdin(gzip(&bytes)));
        assert_eq!(piped, plain, "{query:?}: gzip on stdin");
    }
}

/// The fingerprint a ledger records is that of the records, computed alongside the parallel
/// scan, by the csv reader's rescan of a quoted file, from gzip and from a pipe alike.
#[test]
fn the_fingerprint_is_of_every_record_whatever_the_thread_count() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let file = fixture("threads_crlf_bom.csv");
    let bytes = fs::read(&file).unwrap();
    let gz = dir.path().join("same.csv.gz");
    fs::write(&gz, gzip(&bytes)).unwrap();
    let last_fingerprint = || {
        let text = fs::read_to_string(&ledger).unwrap();
        let record: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(record["type"], "released", "{record}");
        record["fingerprint"].as_str().unwrap().to_string()
    };
    let charge = |threads: &str, file: &Path| {
        let mut cmd = unseeded();
        cmd.args(["count", "--eps", "0.01", "--budget", "1", "--threads", threads, "--ledger"])
            .arg(&ledger)
            .arg(file);
        json_of(&mut cmd);
        last_fingerprint()
    };
    let want = fingerprint_of(&bytes[..], b',').unwrap();
    assert_eq!(charge("1", &file), want);
    assert_eq!(charge("4", &file), want);
    assert_eq!(charge("4", &gz), want, "gzip input is the same data as its CSV");
    let budget = json_of(seeded(1).args(["budget", "--ledger"]).arg(&ledger).arg(&gz));
    assert_eq!(
        budget["file"]["fingerprint"],
        want.as_str(),
        "dpstat budget fingerprints gzip input the same way"
    );
    assert_eq!(budget["file"]["matches"].as_array().map(Vec::len), Some(3), "{budget}");
    let mut piped = unseeded();
    piped.args(["count", "--eps", "0.01", "--budget", "1", "--ledger"]).arg(&ledger).write_stdin(bytes);
    json_of(&mut piped);
    assert_eq!(last_fingerprint(), want);
    // A file with a quote is rescanned (and fingerprinted again) by the csv reader.
    let quoted = fixture("threads_quoted.csv");
    let want = fingerprint_of(&fs::read(&quoted).unwrap()[..], b',').unwrap();
    assert_eq!(charge("4", &quoted), want);
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let out = seeded(1).args(["count", "--eps", "1"]).arg(fixture("people.csv")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.lines().all(|l| l.contains("DPSTAT_INSECURE_SEED")), "only the seed warning: {stderr}");
}
