//! What a dataset's listing shows before the charge (DESIGN §7.7, §10). A file of 0 bytes is an
//! empty part, charged and released like a part of a header only. Under a ledger every refusal
//! before the charge names flags, the FILE arguments and the public schema only: never a
//! partition value nor a path below a directory or glob given; it is one line, exit 2, nothing
//! on stdout and nothing charged. Without a ledger the same refusals name the file to fix.
//! A file listed twice is refused; a directory is read recursively, leaving out hidden names.

use crate::common;
use crate::common::tables;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use tables::{Table, Values};
use tempfile::TempDir;

/// In every partition value and every name below the root: what no refusal under a ledger shows.
const SECRET: &str = "secret";

/// A ledger with a budget of 100 and one count charged to it.
/// The number of releases charged to the ledger's (only) dataset.
fn releases(ledger: &Path) -> usize {
    let text = stdout_of(unseeded().args(["budget", "-f", "json", "--ledger"]).arg(ledger));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["datasets"][0]["releases"].as_array().map_or(0, Vec::len)
}

/// Writes `bytes` at `root/relative`, making its folders.
fn put(root: &Path, relative: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, bytes).unwrap();
    path
}

/// A small table: `x` integers and `y` doubles.
fn table() -> Table {
    Table {
        columns: vec![
            ("x".into(), Values::Int((0..20).map(Some).collect())),
            ("y".into(), Values::Float((0..20).map(|i| Some(i as f64 / 4.0)).collect())),
        ],
    }
}

fn parquet(root: &Path, relative: &str, table: &Table) -> PathBuf {
    let path = put(root, relative, b"");
    table.write_parquet(&path, 8);
    path
}

const MEAN: [&str; 9] = ["mean", "--col", "x", "--lower", "0", "--upper", "100", "--eps", "1"];

/// Refused before the charge, under a ledger and without one. Under the ledger: exit 2, one
/// error naming nothing with [`SECRET`] in it, nothing on stdout, nothing charged (the ledger byte
/// for byte as it was), and every `ledger_needle` in the line. Without: every `plain_needle`.
/// Returns both lines.
fn refused(
    args: &[&str],
    files: &[&Path],
    ledger_needles: &[&str],
    plain_needles: &[&str],
) -> (String, String) {
    let dir = TempDir::new().unwrap();
    let (charged, stderr) = refused_under_a_ledger(dir.path(), args, files);
    assert!(!stderr.contains(SECRET), "under a ledger nothing below the root is named: {stderr}");
    for needle in ledger_needles {
        assert!(charged.contains(needle), "{needle:?} in {charged}");
    }
    let plain = fails_with(unseeded().args(args).args(files), plain_needles);
    (charged, plain)
}

#[test]
fn parts_whose_headers_differ_are_refused_naming_the_root_only() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("data");
    put(&root, "region=secret_north/part-secret-1.csv", "x,y\n1,2\n");
    put(&root, "region=secret_south/part-secret-2.csv", "x,z\n1,2\n");
    let shown = format!("a file under {}", root.display());
    let (charged, _) = refused(
        &MEAN,
        &[&root],
        &["its header differs from that of another file under", &shown],
        &["region=secret_south/part-secret-2.csv: its header differs from that of", "region=secret_north"],
    );
    assert!(charged.starts_with(&format!("dpstat: {shown}: ")), "{charged}");
}

#[test]
fn partition_folders_that_differ_are_refused_naming_their_names_only() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("data");
    put(&root, "region=secret_value/part-secret.csv", "x\n1\n");
    put(&root, "secret-top.csv", "x\n1\n");
    refused(
        &["count", "--eps", "1"],
        &[&root],
        &["its partition folders (none) differ from the first file's (region)"],
        &["secret-top.csv: its partition folders"],
    );
}

#[test]
fn mixed_formats_are_refused_naming_the_root_only() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("data");
    parquet(&root, "region=secret_a/part-secret.parquet", &table());
    put(&root, "region=secret_b/part-secret.csv", table().csv());
    refused(
        &MEAN,
        &[&root],
        &["mixes CSV and Parquet files (a file under", "is CSV)"],
        &["region=secret_b/part-secret.csv is CSV)"],
    );
}

#[test]
fn parquet_parts_that_differ_or_cannot_be_read_are_refused_naming_the_root_only() {
    let dir = TempDir::new().unwrap();
    let typed = dir.path().join("typed");
    parquet(&typed, "region=secret_a/part-secret.parquet", &table());
    let texts = Table { columns: vec![("x".into(), Values::Text(vec![Some("1".into())]))] };
    parquet(&typed, "region=secret_b/part-secret.parquet", &texts);
    refused(
        &MEAN,
        &[&typed],
        &["its columns differ from those of another file under", "column 'x' is Int64 there and Utf8 here"],
        &["region=secret_b/part-secret.parquet: its columns differ from those of", "region=secret_a"],
    );

    let corrupt = dir.path().join("corrupt");
    parquet(&corrupt, "region=secret_a/part-secret.parquet", &table());
    put(&corrupt, "region=secret_b/part-secret.parquet", [&b"PAR1"[..], &[0xAB; 64], b"PAR1"].concat());
    refused(
        &MEAN,
        &[&corrupt],
        &["not a readable Parquet file"],
        &["region=secret_b/part-secret.parquet: not a readable Parquet file"],
    );

    // A partition named like a column: the names are the schema, shown either way.
    let named = dir.path().join("named");
    parquet(&named, "x=secret_value/part-secret.parquet", &table());
    refused(
        &MEAN,
        &[&named],
        &["the partition folders name a column the files hold too: 'x'"],
        &["the partition folders name a column the files hold too: 'x'"],
    );
}

#[test]
fn csv_parts_that_are_not_csv_text_are_refused_naming_the_root_only() {
    let dir = TempDir::new().unwrap();
    let image = dir.path().join("image");
    put(&image, "region=secret_a/part-secret.csv", "x\n1\n");
    put(&image, "region=secret_b/part-secret.csv", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    refused(
        &MEAN,
        &[&image],
        &["is not CSV text: it looks like a PNG image"],
        &["region=secret_b/part-secret.csv is not CSV text"],
    );

    let xz = dir.path().join("xz");
    put(&xz, "region=secret_a/part-secret.csv", "x\n1\n");
    put(&xz, "region=secret_b/part-secret.csv", b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46");
    refused(
        &MEAN,
        &[&xz],
        &["is compressed with xz, which dpstat does not read"],
        &["region=secret_b/part-secret.csv is compressed with xz"],
    );
}

#[cfg(unix)]
#[test]
fn a_file_that_cannot_be_opened_is_refused_naming_the_root_only() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("data");
    put(&root, "region=secret_a/part-secret.csv", "x\n1\n");
    fs::create_dir_all(root.join("region=secret_b")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("gone.csv"), root.join("region=secret_b/part-secret.csv"))
        .unwrap();
    refused(
        &MEAN,
        &[&root],
        &[&format!("cannot open a file under {}", root.display())],
        &["cannot open", "region=secret_b/part-secret.csv"],
    );
}

/// A column compressed with a codec the reader lacks (LZO, which no Rust Parquet reader has) is
/// refused before the charge by the footer, naming the codec; reading its pages would fail after.
#[test]
fn a_column_in_a_codec_the_reader_lacks_is_refused_before_the_charge() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("data");
    let path = parquet(&root, "region=secret_a/part-secret.parquet", &table());
    // The footer's ColumnMetaData: path_in_schema ends with the name, then field 4 (codec,
    // compact i32: 0x15) SNAPPY (zigzag 1: 0x02); LZO is 3 (0x06).
    let mut bytes = fs::read(&path).unwrap();
    let (from, to) = (b"x\x15\x02", b"x\x15\x06");
    let at: Vec<usize> = bytes.windows(3).enumerate().filter(|(_, w)| w == from).map(|(i, _)| i).collect();
    assert!(!at.is_empty(), "the codec of column x found in the footer");
    for i in at {
        bytes[i..i + 3].copy_from_slice(to);
    }
    fs::write(&path, bytes).unwrap();
    let (charged, _) = refused(
        &MEAN,
        &[&root],
        &["column 'x' (--col) is compressed with LZO, which dpstat does not read"],
        &["region=secret_a/part-secret.parquet: column 'x' (--col) is compressed with LZO"],
    );
    assert!(charged.contains(&format!("a file under {}", root.display())), "{charged}");
    // A count reads no column: released.
    stdout_of(dpstat().args(["count", "--eps", "1"]).arg(&root));
}

/// The refusals that name a column: the FILE arguments and the schema (partition names
/// included), never a partition value.
#[test]
fn unknown_and_unreadable_columns_name_the_schema_only() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("data");
    put(&root, "region=secret_a/part-secret.csv", "x,y\n1,2\n");
    refused(
        &["mean", "--col", "z", "--lower", "0", "--upper", "1", "--eps", "1"],
        &[&root],
        &["no column 'z' (--col)", "the columns are: x, y, region"],
        &["no column 'z' (--col)"],
    );
    let typed = dir.path().join("typed");
    let flags = Table { columns: vec![("b".into(), Values::Bool(vec![Some(true), None]))] };
    parquet(&typed, "region=secret_a/part-secret.parquet", &flags);
    refused(
        &["mean", "--col", "b", "--lower", "0", "--upper", "1", "--eps", "1"],
        &[&typed],
        &["column 'b' (--col) is declared Boolean"],
        &["column 'b' (--col) is declared Boolean"],
    );
}

#[test]
fn a_bad_glob_is_refused_naming_the_pattern() {
    let dir = TempDir::new().unwrap();
    let pattern = dir.path().join("data/[oops");
    refused(&MEAN, &[&pattern], &["the pattern"], &["the pattern"]);
}

/// The same file twice, a file and its directory, or a link in a directory to a file beside
/// it: its rows would be counted twice. Refused before the charge, naming only the arguments.
#[test]
fn a_file_listed_twice_is_refused_before_the_charge() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("data");
    let file = put(&root, "region=north/part-0.csv", "x\n1\n2\n");
    put(&root, "region=south/part-0.csv", "x\n3\n");
    // The arguments are the analyst's own words: naming them shows nothing new.
    let twice = |files: &[PathBuf], needles: &[&str]| {
        let dir = TempDir::new().unwrap();
        let ledger = ledger_in(dir.path());
        let before = fs::read(&ledger).unwrap();
        let mut cmd = unseeded();
        cmd.args(MEAN).args(["--invalid", "skip", "--ledger"]).arg(&ledger).args(files);
        let line = fails_with(&mut cmd, needles);
        assert_eq!(fs::read(&ledger).unwrap(), before, "nothing charged: {line}");
        fails_with(unseeded().args(MEAN).args(files), needles)
    };
    let line = twice(&[file.clone(), file.clone()], &["listed twice", "counted twice"]);
    assert!(line.contains(&file.display().to_string()), "{line}");
    let line = twice(&[root.clone(), file.clone()], &["listed twice", "counted twice"]);
    assert!(line.contains(&file.display().to_string()), "{line}");
    let line = twice(&[root.join("*/*.csv"), root.clone()], &["listed twice", "counted twice"]);
    assert!(line.contains("region=north/part-0.csv"), "without a ledger the file is named: {line}");
    // A relative path and an absolute one are the same file too.
    let relative = file.strip_prefix(dir.path()).unwrap().to_path_buf();
    let out = unseeded().current_dir(dir.path()).args(MEAN).arg(&relative).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));

    #[cfg(unix)]
    {
        let linked = dir.path().join("linked");
        put(&linked, "region=secret_a/part-secret.csv", "x\n1\n");
        std::os::unix::fs::symlink("part-secret.csv", linked.join("region=secret_a/part-secret-link.csv"))
            .unwrap();
        refused(
            &MEAN,
            &[&linked],
            &[&format!("a file under {}: listed twice;", linked.display())],
            &["listed twice (also as", "region=secret_a/part-secret"],
        );
    }
}

/// Runs a release under a ledger: exit 0, one number, one more release charged; returns its
/// stderr.
fn charged(ledger: &Path, args: &[&str], file: &Path) -> String {
    let before = releases(ledger);
    let mut cmd = unseeded();
    cmd.args(args).arg("--ledger").arg(ledger).arg(file);
    if args[0] != "count" {
        cmd.args(["--invalid", "skip"]);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}: {stderr}", file.display());
    one_number(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(releases(ledger), before + 1, "charged: {}", file.display());
    stderr
}

/// A part of 0 bytes (what writers leave for a partition of no rows) is an empty part: the
/// release is the one of the same dataset with that part holding a header only, charged and
/// released under a ledger with nothing about the partition on stderr; first or not, CSV or
/// Parquet, and a part of empty lines too.
#[test]
fn a_part_of_zero_bytes_is_an_empty_part() {
    let dir = TempDir::new().unwrap();
    let ledger = ledger_in(dir.path());
    let rows = "x,y\n1,2\n5,6\n9,10\n";
    let layout = |name: &str, empty: &[u8]| {
        let root = dir.path().join(name);
        put(&root, "region=secret_a/part-0.csv", empty);
        put(&root, "region=secret_b/part-0.csv", rows);
        put(&root, "region=secret_c/part-0.csv", empty);
        root
    };
    let header_only = layout("header", b"x,y\n");
    let zero = layout("zero", b"");
    let blank = layout("blank", b"\n\r\n");
    for args in [&["count", "--eps", "1"][..], &MEAN] {
        let want = stdout_of(dpstat().args(args).arg(&header_only));
        for root in [&zero, &blank] {
            assert_eq!(stdout_of(dpstat().args(args).arg(root)), want, "{}", root.display());
            let stderr = charged(&ledger, args, root);
            assert!(!stderr.contains(SECRET) && !stderr.contains("region"), "{stderr}");
        }
    }

    let parquets = dir.path().join("parquets");
    parquet(&parquets, "region=secret_a/part-0.parquet", &table());
    put(&parquets, "region=secret_b/part-0.parquet", b"");
    let alone = dir.path().join("alone");
    parquet(&alone, "region=secret_a/part-0.parquet", &table());
    assert_eq!(stdout_of(dpstat().args(MEAN).arg(&parquets)), stdout_of(dpstat().args(MEAN).arg(&alone)));
    let stderr = charged(&ledger, &MEAN, &parquets);
    assert!(!stderr.contains(SECRET), "{stderr}");
}

/// When every part is empty the dataset has no rows and no header: released over no rows like
/// a directory that holds no file (any column), charged under a ledger; without one, a note.
#[test]
fn a_dataset_of_empty_parts_is_released_over_no_rows() {
    let dir = TempDir::new().unwrap();
    let ledger = ledger_in(dir.path());
    let root = dir.path().join("data");
    put(&root, "region=secret_a/part-0.csv", b"");
    put(&root, "region=secret_b/part-0.csv", b"\n");
    for args in [&["count", "--eps", "1"][..], &MEAN] {
        let stderr = charged(&ledger, args, &root);
        assert!(!stderr.contains(SECRET), "{stderr}");
    }
    let out = dpstat().args(MEAN).arg(&root).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("holds only empty files (2): the release is over no rows"), "{stderr}");
}

/// A directory is read recursively, in path order; names starting with `.` or `_` (files and
/// folders) are left out; any other file is a part, so a stray text file is read as CSV.
#[test]
fn a_directory_is_read_recursively_without_hidden_names() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("data");
    put(&root, "a.csv", "x\n1\n");
    put(&root, "deep/er/b.csv", "x\n2\n");
    put(&root, ".hidden.csv", "x\n1000\n");
    put(&root, "_SUCCESS", "");
    put(&root, "_temporary/c.csv", "x\n1000\n");
    put(&root, ".cache/d.csv", "x\n1000\n");
    let all = dir.path().join("all.csv");
    fs::write(&all, "x\n1\n2\n").unwrap();
    let sum = ["sum", "--col", "x", "--lower", "0", "--upper", "1000", "--eps", "1"];
    assert_eq!(stdout_of(dpstat().args(sum).arg(&root)), stdout_of(dpstat().args(sum).arg(&all)));
    put(&root, "notes.txt", "these are notes\n");
    fails_with(dpstat().args(sum).arg(&root), &["notes.txt: its header differs from that of"]);
}
