//! Parquet input that is wrong, and what the file system shows: every refusal is one line and
//! exit 2 before anything is charged; what a listing holds (no file, no row) is data and is
//! released, charged, like any other; corrupt bytes never make dpstat panic, and under a ledger
//! never release anything uncharged (DESIGN §5.1).

use crate::common;
use crate::common::tables;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;
use tables::{Table, Values};
use tempfile::TempDir;

/// Four columns (integers, doubles with nulls, decimals, text), `n` rows.
fn table(n: usize) -> Table {
    let regions = ["north", "south", "east, central", " west "];
    Table {
        columns: vec![
            ("id".into(), Values::Int((0..n as i64).map(|i| Some(i % 37)).collect())),
            (
                "income".into(),
                Values::Float(
                    (0..n).map(|i| if i % 11 == 0 { None } else { Some(i as f64 * 13.25) }).collect(),
                ),
            ),
            ("price".into(), Values::Decimal((0..n as i128).map(|i| Some(i * 1234 - 5000)).collect(), 12, 2)),
            ("region".into(), Values::Text((0..n).map(|i| Some(regions[i % 4].to_string())).collect())),
        ],
    }
}

fn mean(col: &str) -> Vec<String> {
    ["mean", "--col", col, "--lower", "0", "--upper", "10000", "--eps", "1"].map(String::from).to_vec()
}

/// The charge records of a ledger and its spent total, as `dpstat budget` reads them.
fn spent(ledger: &Path) -> (usize, String) {
    let text = stdout_of(unseeded().args(["budget", "-f", "json", "--ledger"]).arg(ledger));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let dataset = &json["datasets"][0];
    (dataset["releases"].as_array().map_or(0, Vec::len), dataset["spent_exact"].as_str().unwrap().to_string())
}

/// Refused with exit 2 and one line holding every needle, without a ledger and with one (with
/// `--invalid skip`, as a ledger asks): then the ledger is left byte for byte as it was.
fn refused_before_the_charge(args: &[String], file: &Path, needles: &[&str]) -> String {
    refused_naming(args, file, needles, &[])
}

/// [`refused_before_the_charge`], the line holding every `plain` needle too without a ledger:
/// under one a file below the directory given is not named (DESIGN §10; tests/listing.rs).
fn refused_naming(args: &[String], file: &Path, needles: &[&str], plain: &[&str]) -> String {
    let line = fails_with(unseeded().args(args).arg(file), &[needles, plain].concat());
    let dir = TempDir::new().unwrap();
    let (charged_line, _) = refused_under_a_ledger(dir.path(), args, &[file]);
    for needle in needles {
        assert!(charged_line.contains(needle), "{needle:?} in {charged_line}");
    }
    assert_eq!(spent(&dir.path().join("ledger.jsonl")), (1, "1/1".to_string()));
    line
}

#[test]
fn a_corrupt_footer_is_refused_before_the_charge() {
    let dir = TempDir::new().unwrap();
    let good = dir.path().join("good.parquet");
    table(300).write_parquet(&good, 64);
    let bytes = fs::read(&good).unwrap();
    let n = bytes.len();
    let footer_len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("cut-in-half", bytes[..n / 2].to_vec()),
        ("cut-by-one", bytes[..n - 1].to_vec()),
        ("magic-only", b"PAR1".to_vec()),
        ("garbage-after-magic", [b"PAR1".as_slice(), &[0xAB; 200]].concat()),
    ];
    let mut huge = bytes.clone();
    huge[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push(("length-too-large", huge));
    let mut zero = bytes.clone();
    zero[n - 8..n - 4].copy_from_slice(&0u32.to_le_bytes());
    cases.push(("length-zero", zero));
    let mut scrambled = bytes.clone();
    for b in &mut scrambled[n - 8 - footer_len..n - 8] {
        *b = b.wrapping_mul(31).wrapping_add(7);
    }
    cases.push(("footer-scrambled", scrambled));
    for (name, bytes) in cases {
        let path = dir.path().join(format!("{name}.parquet"));
        fs::write(&path, bytes).unwrap();
        let line = refused_before_the_charge(&mean("income"), &path, &["not a readable Parquet file"]);
        assert!(line.contains(&format!("{name}.parquet")), "names the file: {line}");
    }
}

#[test]
fn parts_with_other_types_or_columns_are_refused_before_the_charge() {
    let dir = TempDir::new().unwrap();
    let typed = dir.path().join("typed");
    fs::create_dir(&typed).unwrap();
    let ints = Table { columns: vec![("v".into(), Values::Int(vec![Some(1), Some(2)]))] };
    let texts = Table { columns: vec![("v".into(), Values::Text(vec![Some("1".into()), Some("2".into())]))] };
    ints.write_parquet(&typed.join("a.parquet"), 10);
    texts.write_parquet(&typed.join("b.parquet"), 10);
    refused_naming(&mean("v"), &typed, &["column 'v' is Int64 there and Utf8 here"], &["b.parquet"]);

    let columns = dir.path().join("columns");
    fs::create_dir(&columns).unwrap();
    let t = table(50);
    t.write_parquet(&columns.join("a.parquet"), 10);
    let mut fewer = t.clone();
    fewer.columns.remove(1);
    fewer.write_parquet(&columns.join("b.parquet"), 10);
    refused_naming(&mean("id"), &columns, &["its columns differ from those of"], &["b.parquet"]);
}

#[test]
fn unknown_columns_are_refused_with_the_schema() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("t.parquet");
    table(40).write_parquet(&file, 16);
    refused_before_the_charge(
        &mean("incom"),
        &file,
        &[
            "no column 'incom' (--col); did you mean --col income?",
            "the columns are: id, income, price, region",
        ],
    );
    let mut by_number = mean("5");
    by_number.push("--no-headers".into());
    refused_before_the_charge(
        &by_number,
        &file,
        &["column 5 does not exist (--col): the files have 4 columns"],
    );
    // Column 4 exists (region): read, as text that holds no number.
    by_number[2] = "4".into();
    let out = unseeded().args(&by_number).args(["--invalid", "skip"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn mixed_formats_and_partitions_that_differ_are_refused() {
    let dir = TempDir::new().unwrap();
    let mixed = dir.path().join("mixed");
    fs::create_dir(&mixed).unwrap();
    let t = table(30);
    t.write_parquet(&mixed.join("a.parquet"), 10);
    fs::write(mixed.join("b.csv"), t.csv()).unwrap();
    refused_naming(&mean("id"), &mixed, &["mixes CSV and Parquet files", "is CSV"], &["b.csv is CSV"]);

    let folders = dir.path().join("folders");
    fs::create_dir_all(folders.join("year=2025")).unwrap();
    t.write_parquet(&folders.join("year=2025").join("a.parquet"), 10);
    t.write_parquet(&folders.join("b.parquet"), 10);
    refused_naming(
        &mean("id"),
        &folders,
        &["its partition folders (year) differ from the first file's (none)"],
        &["year=2025/a.parquet: its partition folders"],
    );
}

/// A Utf8 column may hold numbers as text, like a CSV cell: read as CSV reads it, and a cell that
/// is not a number is a data error at its row (without a ledger) or an invalid cell.
#[test]
fn text_that_is_not_a_number_is_refused_at_its_row() {
    let dir = TempDir::new().unwrap();
    let n = 100;
    let t = Table {
        columns: vec![
            ("id".into(), Values::Int((0..n).map(Some).collect())),
            (
                "amount".into(),
                Values::Text(
                    (0..n).map(|i| Some(if i == 36 { "n/a".into() } else { format!("{}.5", i) })).collect(),
                ),
            ),
        ],
    };
    t.write_parts(&dir.path().join("parts"), 2, 16);
    fs::write(dir.path().join("t.csv"), t.csv()).unwrap();
    fails_with(
        dpstat().args(mean("amount")).arg(dir.path().join("parts")),
        &["part-000.parquet: row 37, column 'amount':", "n/a"],
    );
    let release = |file: PathBuf| {
        stdout_of(dpstat().args(mean("amount")).args(["--invalid", "skip", "--full-precision"]).arg(file))
    };
    assert_eq!(release(dir.path().join("parts")), release(dir.path().join("t.csv")));
}

/// What the file system holds is data: a glob that matches nothing, an empty directory and a
/// filter that keeps no row are released (noise on nothing), charged, like a CSV of a header
/// and no rows, and nothing on stderr tells them apart from data.
#[test]
fn no_files_and_no_rows_are_released_and_charged() {
    let dir = TempDir::new().unwrap();
    let ledger = ledger_in(dir.path());
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let nothing = dir.path().join("nothing").join("*.parquet");
    let header_only = dir.path().join("header.csv");
    fs::write(&header_only, "id,income,price,region\n").unwrap();
    let data = dir.path().join("t.parquet");
    table(200).write_parquet(&data, 50);
    let mut runs = 1;
    let charged = |args: &[String], file: &Path, runs: &mut usize| {
        let mut cmd = unseeded();
        cmd.args(args).arg("--ledger").arg(&ledger).arg(file);
        if args[0] != "count" {
            cmd.args(["--invalid", "skip"]);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", file.display());
        one_number(&String::from_utf8_lossy(&out.stdout));
        *runs += 1;
        assert_eq!(spent(&ledger), (*runs, format!("{runs}/1")), "charged: {}", file.display());
        // Its warnings may carry noisy numbers; their words are the release's, not the input's.
        stderr.replace(|c: char| c.is_ascii_digit() || c == '.', "")
    };
    let count = ["count", "--eps", "1"].map(String::from).to_vec();
    let mut filtered = mean("income");
    filtered.extend(["--where".into(), "region=nowhere".into()]);
    for args in [count, mean("income")] {
        let csv = charged(&args, &header_only, &mut runs);
        for file in [&empty, &nothing] {
            assert_eq!(charged(&args, file, &mut runs), csv, "stderr as for a CSV of no rows");
        }
    }
    let csv = charged(&filtered, &header_only, &mut runs);
    assert_eq!(charged(&filtered, &data, &mut runs), csv);

    // Without a ledger the custodian is told that nothing was found (a mistyped glob).
    for file in [&empty, &nothing] {
        let out = dpstat().args(["count", "--eps", "1"]).arg(file).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        one_number(&String::from_utf8_lossy(&out.stdout));
        let notes: Vec<String> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.contains("NOT private"))
            .map(String::from)
            .collect();
        assert_eq!(
            notes,
            [format!("dpstat: note: {} holds no file: the release is over no rows", file.display())]
        );
    }
    let workload = dir.path().join("w.toml");
    fs::write(&workload, "epsilon = 1\n[[query]]\nname = \"n\"\nkind = \"count\"\n").unwrap();
    let out = dpstat().arg("run").arg(&workload).arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no file"));
}

/// A partition column is a column like any other: `--by` it without keys is refused as for a
/// file's own column, and with keys it groups as the same rows' CSV does.
#[test]
fn a_partition_column_needs_keys_like_any_column() {
    let dir = TempDir::new().unwrap();
    let hive = dir.path().join("hive");
    let csv = dir.path().join("t.csv");
    fs::write(&csv, table(120).write_hive(&hive, 16)).unwrap();
    let mut by = mean("income");
    by.extend(["--by".into(), "region".into()]);
    let partition = fails_with(dpstat().args(&by).arg(&hive), &["--by COL needs its public keys"]);
    *by.last_mut().unwrap() = "id".into();
    let own = fails_with(dpstat().args(&by).arg(&hive), &["--by COL needs its public keys"]);
    assert_eq!(partition, own);
    *by.last_mut().unwrap() = "region".into();
    by.extend(["--keys", "north,south", "--invalid", "skip", "-f", "json"].map(String::from));
    let grouped = stdout_of(dpstat().args(&by).arg(&hive));
    assert_eq!(grouped, stdout_of(dpstat().args(&by).arg(&csv)));
    let json: serde_json::Value = serde_json::from_str(&grouped).unwrap();
    assert_eq!(json["groups"].as_array().map(Vec::len), Some(3), "two keys and the other rows");
}

#[test]
fn parquet_on_standard_input() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("t.parquet");
    table(300).write_parquet(&file, 64);
    let bytes = fs::read(&file).unwrap();
    for col in ["income", "price"] {
        let mut args = mean(col);
        args.extend(["--invalid".into(), "skip".into(), "-f".into(), "json".into()]);
        let from_file = stdout_of(dpstat().args(&args).arg(&file));
        let piped = stdout_of(dpstat().args(&args).arg("-").write_stdin(bytes.clone()));
        assert_eq!(from_file, piped, "{col}");
    }
    let garbage = [b"PAR1".as_slice(), &[7u8; 100]].concat();
    fails_with(
        dpstat().args(mean("income")).arg("-").write_stdin(garbage.clone()),
        &["not a readable Parquet file"],
    );
    let cut = bytes[..bytes.len() - 3].to_vec();
    fails_with(dpstat().args(mean("income")).arg("-").write_stdin(cut), &["not a readable Parquet file"]);
}

/// A small deterministic generator for the mutants (splitmix64).
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Mutant `i` of `bytes`: bytes flipped, the file cut, or a range overwritten, in the footer
/// (the last `footer` bytes) or anywhere (the pages).
fn mutant(bytes: &[u8], footer: usize, i: usize) -> Vec<u8> {
    let mut rng = Mix(i as u64 * 7919 + 1);
    let mut out = bytes.to_vec();
    let n = out.len();
    let at =
        |rng: &mut Mix| if rng.next().is_multiple_of(2) { n - 1 - rng.below(footer) } else { rng.below(n) };
    match i % 4 {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let k = at(&mut rng);
                out[k] ^= 1 << rng.below(8);
            }
        }
        1 => {
            for _ in 0..1 + rng.below(8) {
                let k = at(&mut rng);
                out[k] = rng.next() as u8;
            }
        }
        2 => out.truncate(at(&mut rng)),
        _ => {
            let start = at(&mut rng);
            let len = 1 + rng.below(64);
            for b in out.iter_mut().skip(start).take(len) {
                *b = rng.next() as u8;
            }
        }
    }
    out
}

/// Whether a run's outcome is one dpstat may have on corrupt input.
fn check_outcome(name: &str, out: &Output) -> Option<i32> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    assert!(!stderr.contains("panicked") && code != Some(101), "{name}: a panic: {stderr}");
    if code != Some(0) {
        assert!(out.stdout.is_empty(), "{name}: stdout with exit {code:?}");
        common::the_error(&stderr);
    }
    code
}

/// 300 mutants of a valid file (several columns, decimals and text, several row groups,
/// snappy): never a panic, exit 0 or 2, and a failure is one error (first line at most 200
/// characters) with nothing on stdout.
/// Under a ledger a subset is refused before the charge, or charged and then released or
/// failed with the fixed line: never released uncharged.
#[test]
fn corrupt_files_never_panic_nor_release_uncharged() {
    let dir = TempDir::new().unwrap();
    let good = dir.path().join("good.parquet");
    table(400).write_parquet(&good, 50);
    let bytes = fs::read(&good).unwrap();
    let n = bytes.len();
    let footer = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize + 8;
    let template = ledger_in(dir.path());
    let columns = ["income", "price", "id", "region"];
    let started = std::time::Instant::now();
    // More mutants for a longer search by hand: PARQUET_FUZZ_MUTANTS=5000.
    let mutants = std::env::var("PARQUET_FUZZ_MUTANTS").ok().and_then(|n| n.parse().ok()).unwrap_or(300);
    let codes = parallel_map(6, mutants, |i| {
        let path = dir.path().join(format!("m{i:03}.parquet"));
        fs::write(&path, mutant(&bytes, footer, i)).unwrap();
        let col = columns[i % columns.len()];
        let threads = (1 + i % 3).to_string();
        let mut cmd = unseeded();
        cmd.args(mean(col)).args(["--invalid", "skip", "--threads", &threads]).arg(&path);
        let out = cmd.output().unwrap();
        let code = check_outcome(&format!("mutant {i}"), &out);
        if i % 7 == 0 {
            // `dpstat check` reads every column on the calling thread: 0 (clean), 4 (problems).
            let out = unseeded().arg("check").arg(&path).output().unwrap();
            let name = format!("mutant {i} checked");
            match out.status.code() {
                Some(0 | 4) => {
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
                }
                _ => assert_eq!(check_outcome(&name, &out), Some(2), "{name}"),
            }
        }
        assert!(
            matches!(code, Some(0 | 2)),
            "mutant {i}: exit {code:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut charged = None;
        if i % 5 == 0 {
            let ledger = dir.path().join(format!("m{i:03}.jsonl"));
            fs::copy(&template, &ledger).unwrap();
            let before = fs::read(&ledger).unwrap();
            let out = unseeded()
                .args(mean(col))
                .args(["--invalid", "skip", "--ledger"])
                .arg(&ledger)
                .arg(&path)
                .output()
                .unwrap();
            let name = format!("mutant {i} under a ledger");
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            charged = check_outcome(&name, &out);
            match charged {
                Some(2) => assert_eq!(fs::read(&ledger).unwrap(), before, "{name}: charged: {stderr}"),
                Some(0) => {
                    one_number(&String::from_utf8_lossy(&out.stdout));
                    assert_eq!(spent(&ledger), (2, "2/1".to_string()), "{name}: released uncharged");
                }
                Some(1) => {
                    assert!(stderr.contains("failed after epsilon 1 was charged"), "{name}: {stderr}");
                    assert_eq!(spent(&ledger).1, "2/1", "{name}");
                }
                code => panic!("{name}: exit {code:?}: {stderr}"),
            }
        }
        (code, charged)
    });
    let refused = codes.iter().filter(|c| c.0 == Some(2)).count();
    let under_ledger = |code: i32| codes.iter().filter(|c| c.1 == Some(code)).count();
    assert!(
        refused > mutants / 10 && refused < mutants,
        "many mutants are refused, not all: {refused} of {mutants}"
    );
    eprintln!(
        "{mutants} mutants in {:?}: {refused} refused; under a ledger {} refused, {} released, {} failed after the charge",
        started.elapsed(),
        under_ledger(2),
        under_ledger(0),
        under_ledger(1)
    );
}

/// A column declared of a type that holds no number (Boolean, a list) is refused before the
/// charge by every query that reads numbers; text is not (it may hold numbers, as CSV does),
/// and a histogram over categories reads a Boolean's text.
#[test]
fn a_column_that_can_hold_no_number_is_refused_before_the_charge() {
    use arrow_array::builder::{Int64Builder, ListBuilder};
    use std::sync::Arc;
    let dir = TempDir::new().unwrap();
    let n = 60;
    let t = Table {
        columns: vec![
            ("id".into(), Values::Int((0..n).map(Some).collect())),
            ("flag".into(), Values::Bool((0..n).map(|i| Some(i % 3 == 0)).collect())),
        ],
    };
    let file = dir.path().join("t.parquet");
    t.write_parquet(&file, 16);
    let declared: [&str; 1] = ["column 'flag' (--col) is declared Boolean, which holds no numbers"];
    refused_before_the_charge(&mean("flag"), &file, &[declared[0], "mean reads numbers"]);
    let sum = ["sum", "--col", "flag", "--lower", "0", "--upper", "1", "--eps", "1"].map(String::from);
    refused_before_the_charge(&sum, &file, &[declared[0], "sum reads numbers"]);
    let mut grouped = mean("flag");
    grouped.extend(["--by", "id", "--keys", "1,2"].map(String::from));
    refused_before_the_charge(&grouped, &file, &declared);
    let bins = ["histogram", "--col", "flag", "--bins", "2", "--lower", "0", "--upper", "1", "--eps", "1"];
    refused_before_the_charge(&bins.map(String::from), &file, &["histogram reads numbers"]);
    let workload = dir.path().join("w.toml");
    fs::write(
        &workload,
        "epsilon = 1\n[[query]]\nname = \"ids\"\nkind = \"mean\"\ncolumn = \"id\"\nlower = 0\nupper = 100\ninvalid = \"skip\"\n\
         [[query]]\nname = \"flags\"\nkind = \"mean\"\ncolumn = \"flag\"\nlower = 0\nupper = 1\ninvalid = \"skip\"\n",
    )
    .unwrap();
    let run = ["run".to_string(), workload.display().to_string()];
    refused_before_the_charge(&run, &file, &["flags", declared[0]]);
    let categories = ["histogram", "--col", "flag", "--categories", "true,false", "--eps", "1", "-f", "json"];
    let csv = dir.path().join("t.csv");
    fs::write(&csv, t.csv()).unwrap();
    assert_eq!(
        stdout_of(dpstat().args(categories).arg(&file)),
        stdout_of(dpstat().args(categories).arg(&csv))
    );

    let mut lists = ListBuilder::new(Int64Builder::new());
    for i in 0..20 {
        lists.values().append_value(i);
        lists.append(true);
    }
    let batch =
        arrow_array::RecordBatch::try_from_iter([("xs", Arc::new(lists.finish()) as arrow_array::ArrayRef)])
            .unwrap();
    let listed = dir.path().join("lists.parquet");
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(fs::File::create(&listed).unwrap(), batch.schema(), None)
            .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    refused_before_the_charge(
        &mean("xs"),
        &listed,
        &["column 'xs' (--col) is declared List(", "has no cell to read"],
    );
}

/// CSV parts without a header: their width is their first row's, which is data. Under a ledger
/// a column past it, or a first row that looks binary, must not be an uncharged refusal: the
/// column reads as empty cells (as for one CSV file) and the run is charged and released.
#[test]
fn headerless_csv_parts_refuse_nothing_uncharged_for_their_rows() {
    let dir = TempDir::new().unwrap();
    let parts = dir.path().join("parts");
    fs::create_dir_all(parts.join("k=a")).unwrap();
    fs::create_dir_all(parts.join("k=b")).unwrap();
    fs::write(parts.join("k=a/p.csv"), "1,2\n3,4\n").unwrap();
    fs::write(parts.join("k=b/p.csv"), "5\0,6\n7,8\n").unwrap();
    let ledger = ledger_in(dir.path());
    for col in ["2", "4"] {
        let mut cmd = unseeded();
        cmd.args(["mean", "--col", col, "--lower", "0", "--upper", "10", "--eps", "1", "--invalid", "skip"])
            .args(["--no-headers", "--ledger"])
            .arg(&ledger)
            .arg(&parts);
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(one_number(&String::from_utf8_lossy(&out.stdout)).is_finite());
    }
    assert_eq!(spent(&ledger).0, 3, "both runs charged");
    // Without a ledger the binary row is refused, as in one CSV file; without it, the
    // partition column is column 3 in every part, after the first part's two fields.
    fs::write(parts.join("k=b/p.csv"), "5,6\n7,8\n").unwrap();
    let by = stdout_of(
        dpstat()
            .args(["count", "--by", "3", "--keys", "a,b", "--no-headers", "--eps", "1000", "-f", "json"])
            .arg(&parts),
    );
    let json: serde_json::Value = serde_json::from_str(&by).unwrap();
    let counts: Vec<i64> =
        json["groups"].as_array().unwrap().iter().map(|g| g["value"].as_i64().unwrap()).collect();
    assert_eq!(&counts[..2], [2, 2], "{by}");
}
