//! One scan for every input (issues 6 and 12): the release does not depend on `--threads` nor
//! on how the bytes arrive. With the same insecure seed, the same aggregate gives the same
//! noise, so the whole JSON output must be identical for 1 thread, N threads, standard input,
//! gzip and zstd, and for the same data with every field quoted.

use crate::common;

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

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(bytes, 3).unwrap()
}

/// The same JSON for 1, 2, 3, 4 and 7 threads, from standard input, and from the file
/// compressed with gzip and zstd.
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
    let piped = json_of(seeded(42).args(query).args(["--eps", "0.5"]).write_stdin(bytes.clone()));
    assert_eq!(piped, one, "{query:?} on {} from stdin", file.display());
    let dir = TempDir::new().unwrap();
    for (name, packed) in [("data.gz", gzip(&bytes)), ("data.zst", zstd(&bytes))] {
        let path = dir.path().join(name);
        fs::write(&path, packed).unwrap();
        assert_eq!(release(query, "3", &path), one, "{query:?} on {} as {name}", file.display());
    }
}

/// Every field in double quotes, the way spreadsheets and R's write.csv write them.
fn quote_every_field(text: &str) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix("\r\n") {
            Some(body) => (body, "\r\n"),
            None => line.strip_suffix('\n').map_or((line, ""), |body| (body, "\n")),
        };
        let body = body.strip_prefix('\u{feff}').unwrap_or(body);
        let fields: Vec<String> =
            body.split(',').map(|f| format!("\"{}\"", f.replace('"', "\"\""))).collect();
        out.push_str(&fields.join(","));
        out.push_str(end);
    }
    out
}

/// Quoting every field (the header too) changes no release, for any thread count or source.
#[test]
fn every_field_quoted_gives_the_same_release() {
    let dir = TempDir::new().unwrap();
    let plain = fixture("people.csv");
    let quoted = dir.path().join("quoted.csv");
    fs::write(&quoted, quote_every_field(&fs::read_to_string(&plain).unwrap())).unwrap();
    for query in QUERIES {
        let want = release(query, "1", &plain);
        assert_eq!(release(query, "1", &quoted), want, "{query:?}");
        same_for_any_thread_count(query, &quoted);
    }
}

/// Messages name the physical line on standard input and in gzip too, with CR or CRLF line ends.
#[test]
fn a_bad_cell_is_named_by_its_line_from_any_source() {
    let dir = TempDir::new().unwrap();
    let lf = fs::read_to_string(fixture("threads_bad_cell.csv")).unwrap();
    for end in ["\r", "\r\n"] {
        let text = lf.replace('\n', end);
        let gz = dir.path().join("bad.csv.gz");
        fs::write(&gz, gzip(text.as_bytes())).unwrap();
        let args = ["mean", "--col", "income", "--lower", "0", "--upper", "1", "--eps", "1"];
        let want = "row 150 (line 151), column 'income': '12k' is not a finite number";
        fails_with(seeded(1).args(args).write_stdin(text.clone()), &[want]);
        fails_with(seeded(1).args(args).arg(&gz), &[want]);
    }
}

/// Compressed formats dpstat does not read are named, with the command that decompresses them.
#[test]
fn other_compressed_formats_are_refused_with_a_hint() {
    let dir = TempDir::new().unwrap();
    for (magic, format, command) in [
        (&b"\xfd7zXZ\x00\x00\x04\xe6\xd6"[..], "xz", "xz -dc"),
        (b"BZh91AY&SY\x01\x02", "bzip2", "bzip2 -dc"),
        (b"\x04\x22\x4d\x18\x64\x40\xa7", "lz4", "lz4 -dc"),
        (b"PK\x03\x04\x14\x00\x00\x00", "zip", "unzip -p"),
    ] {
        let path = dir.path().join(format!("data.{format}"));
        fs::write(&path, magic).unwrap();
        let shown = path.display().to_string();
        fails_with(
            seeded(1).args(["count", "--eps", "1"]).arg(&path),
            &[&format!("{shown} is compressed with {format}, which dpstat does not read; decompress it first (e.g. {command} {shown} | dpstat …)")],
        );
        fails_with(
            seeded(1).args(["count", "--eps", "1"]).write_stdin(magic.to_vec()),
            &[&format!("<stdin> is compressed with {format}")],
        );
    }
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

/// The fingerprint a ledger records is that of the records, computed as the scan reads the
/// bytes, whatever the thread count, for a quoted file, from gzip and from a pipe alike.
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

/// `rows` generated rows (id, age, income, region), every 997th income empty and every 1009th
/// age not a number; with `bad`, that row's income reads `12k` instead.
fn many_rows(rows: usize, bad: Option<usize>) -> String {
    let mut text = String::from("id,age,income,region\n");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in 1..=rows {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let age = if i % 1009 == 0 { "n/a".to_string() } else { (state >> 57).to_string() };
        let income = match i {
            _ if Some(i) == bad => "12k".to_string(),
            _ if i % 997 == 0 => String::new(),
            _ => format!("{}.{:02}", (state >> 20) % 250_000, (state >> 8) % 100),
        };
        let region = ["north", "south", "east"][(state >> 40) as usize % 3];
        text.push_str(&format!("{i},{age},{income},{region}\n"));
    }
    text
}

/// A workload of sums, means and variances (fed by column in batches), each query with
/// `extra` added to it.
fn batch_workload(dir: &Path, name: &str, income_invalid: &str, extra: &str) -> std::path::PathBuf {
    let query = |name: &str, kind: &str, column: &str, upper: u32, invalid: &str| {
        format!(
            "[[query]]\nname = \"{name}\"\nkind = \"{kind}\"\ncolumn = \"{column}\"\nlower = 0\n\
             upper = {upper}\ninvalid = \"{invalid}\"\n{extra}\n"
        )
    };
    let text = [
        "epsilon = 2\n".to_string(),
        query("income_mean", "mean", "income", 250_000, income_invalid),
        query("income_variance", "variance", "income", 250_000, "impute=1000"),
        query("income_sum", "sum", "income", 250_000, "skip"),
        query("age_mean", "mean", "age", 100, "skip"),
        query("age_variance", "variance", "age", 100, "impute=40"),
        query("age_mean_again", "mean", "age", 100, "impute=40"),
    ]
    .concat();
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

/// The values and noisy parts of a workload's JSON lines (what the aggregates decide).
fn released_values(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!("{} {} {}", v["name"], v["value"], v["parts"])
        })
        .collect()
}

/// A workload over a file of several scan parts gives the same output for any thread count and
/// source (stdin, gzip, zstd, every field quoted), and the same releases as the same queries
/// behind a `--where` that every row passes (which feeds each its rows, one by one).
#[test]
fn a_workload_gives_the_same_release_by_batches_and_by_rows_from_any_source() {
    let dir = TempDir::new().unwrap();
    let text = many_rows(60_000, None);
    let csv = dir.path().join("many.csv");
    fs::write(&csv, &text).unwrap();
    let batched = batch_workload(dir.path(), "batched.toml", "skip", "");
    let by_rows = batch_workload(dir.path(), "rows.toml", "skip", "where = [\"region!=none\"]\n");
    let run = |toml: &Path, threads: &str| {
        common::stdout_of(
            seeded(42).arg("run").arg(toml).args(["--format", "json", "--threads", threads]).arg(&csv),
        )
    };
    let one = run(&batched, "1");
    assert_eq!(released_values(&run(&by_rows, "1")), released_values(&one));
    assert_eq!(released_values(&run(&by_rows, "3")), released_values(&one));
    for threads in ["2", "3", "4", "7"] {
        assert_eq!(run(&batched, threads), one, "{threads} threads");
    }
    let from_stdin =
        seeded(42).arg("run").arg(&batched).args(["--format", "json"]).write_stdin(text.clone()).output();
    assert_eq!(String::from_utf8(from_stdin.unwrap().stdout).unwrap(), one, "stdin");
    for (name, packed) in [
        ("many.csv.gz", gzip(text.as_bytes())),
        ("many.csv.zst", zstd(text.as_bytes())),
        ("quoted.csv", quote_every_field(&text).into_bytes()),
    ] {
        let path = dir.path().join(name);
        fs::write(&path, packed).unwrap();
        let out = common::stdout_of(
            seeded(42).arg("run").arg(&batched).args(["--format", "json", "--threads", "3"]).arg(&path),
        );
        assert_eq!(out, one, "{name}");
    }
}

/// A refused cell deep in a workload's input is named by its row, whatever the thread count and
/// source, and the same way by batches as by rows.
#[test]
fn a_workload_names_the_first_refused_cell_from_any_source() {
    let dir = TempDir::new().unwrap();
    let text = many_rows(60_000, Some(41_234));
    let csv = dir.path().join("bad.csv");
    fs::write(&csv, &text).unwrap();
    // Rows 997, 1994, ... have an empty income: refused before row 41234 under `error`.
    let empty_first = batch_workload(dir.path(), "error.toml", "error", "");
    let want = "row 997 (line 998), column 'income': the cell is empty";
    for threads in ["1", "4"] {
        fails_with(seeded(1).arg("run").arg(&empty_first).args(["--threads", threads]).arg(&csv), &[want]);
    }
    let filtered = batch_workload(dir.path(), "error_rows.toml", "error", "where = [\"region!=none\"]\n");
    fails_with(seeded(1).arg("run").arg(&filtered).arg(&csv), &[want]);
    // With the empty incomes filled in, the `12k` row is the first refused one.
    let text = text.replace(",,", ",0,");
    fs::write(&csv, &text).unwrap();
    let want = "row 41234 (line 41235), column 'income': '12k' is not a finite number";
    for threads in ["1", "2", "7"] {
        fails_with(seeded(1).arg("run").arg(&empty_first).args(["--threads", threads]).arg(&csv), &[want]);
    }
    fails_with(seeded(1).arg("run").arg(&empty_first).write_stdin(text.clone()), &[want]);
    fails_with(seeded(1).arg("run").arg(&filtered).arg(&csv), &[want]);
}
