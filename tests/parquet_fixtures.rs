//! The Parquet files shipped in fixtures/ hold the rows of fixtures/people.csv: GUIDE.md's
//! Parquet examples read them. `DPSTAT_WRITE_FIXTURES=1 cargo test --test integration parquet_fixtures::`
//! writes them anew from the CSV.

use crate::common;
use crate::common::tables;

use common::*;
use tables::{Table, Values};

/// fixtures/people.csv as typed columns: integers, income as a decimal with two digits, score
/// as a double, region as text.
fn people() -> Table {
    let text = std::fs::read_to_string(fixture("people.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let column = |name: &str| {
        let i = header.iter().position(|h| *h == name).unwrap();
        rows.iter().map(move |r| r[i])
    };
    let int = |name: &str| Values::Int(column(name).map(|c| c.parse().ok()).collect());
    let cents = |c: &str| {
        let (sign, digits) = c.strip_prefix('-').map_or((1, c), |d| (-1, d));
        let (whole, frac) = digits.split_once('.').unwrap_or((digits, "0"));
        let frac = format!("{frac:0<2}");
        Some(sign * (whole.parse::<i128>().ok()? * 100 + frac.parse::<i128>().ok()?))
    };
    Table {
        columns: vec![
            ("id".into(), int("id")),
            ("age".into(), int("age")),
            ("income".into(), Values::Decimal(column("income").map(cents).collect(), 10, 2)),
            ("urban_rural".into(), int("urban_rural")),
            ("score".into(), Values::Float(column("score").map(|c| c.parse().ok()).collect())),
            ("region".into(), Values::Text(column("region").map(|c| Some(c.to_string())).collect())),
        ],
    }
}

#[test]
fn shipped_parquet_files_hold_the_people_csv() {
    let table = people();
    if std::env::var_os("DPSTAT_WRITE_FIXTURES").is_some() {
        table.write_parquet(&fixture("people.parquet"), 64);
        let dir = fixture("people_by_region");
        let _ = std::fs::remove_dir_all(&dir);
        table.write_hive(&dir, 64);
    }
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("people.csv");
    std::fs::write(&csv, table.csv()).unwrap();
    for args in [
        &["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "1", "-f", "json"][..],
        &["sum", "--col", "score", "--lower", "0", "--upper", "100", "--eps", "1", "-f", "json"],
        &["count", "--by", "region", "--keys", "north,south,east,west", "--eps", "1", "-f", "json"],
        &[
            "histogram",
            "--col",
            "age",
            "--lower",
            "0",
            "--upper",
            "100",
            "--bins",
            "5",
            "--eps",
            "1",
            "-f",
            "json",
        ],
        // Bounds found privately: the histogram reads the files a second time.
        &["histogram", "--col", "age", "--bins", "5", "--eps", "8", "-f", "json"],
    ] {
        let want = stdout_of(dpstat().args(args).arg(&csv));
        assert!(want.contains("\"query\""), "{want}");
        // The typed table's CSV is the shipped CSV's rows, cell for cell as numbers.
        assert_eq!(want, stdout_of(dpstat().args(args).arg(fixture("people.csv"))), "{args:?}");
        assert_eq!(want, stdout_of(dpstat().args(args).arg(fixture("people.parquet"))), "{args:?}");
        assert_eq!(want, stdout_of(dpstat().args(args).arg(fixture("people_by_region"))), "{args:?}");
    }
}

/// fixtures/people_brotli.parquet is fixtures/people.csv as pyarrow 26 writes it with brotli
/// pages (`pyarrow.parquet.write_table(pyarrow.csv.read_csv("fixtures/people.csv"),
/// "fixtures/people_brotli.parquet", compression="brotli", row_group_size=64)`, which is what
/// pandas' `to_parquet(compression="brotli")` calls): its types are pyarrow's guesses (income
/// and score doubles), and it reads as the CSV does.
#[test]
fn a_brotli_file_from_pyarrow_reads_as_its_csv() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let file = fixture("people_brotli.parquet");
    let reader = SerializedFileReader::new(std::fs::File::open(&file).unwrap()).unwrap();
    let chunks: Vec<_> = reader.metadata().row_groups().iter().flat_map(|g| g.columns().to_vec()).collect();
    assert!(chunks.len() >= 6, "{} column chunks", chunks.len());
    for chunk in &chunks {
        assert!(matches!(chunk.compression(), parquet::basic::Compression::BROTLI(_)), "{chunk:?}");
    }
    for args in [
        &["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "1", "-f", "json"][..],
        &["sum", "--col", "score", "--lower", "0", "--upper", "100", "--eps", "1", "-f", "json"],
        &["count", "--by", "region", "--keys", "north,south,east,west", "--eps", "1", "-f", "json"],
        &["histogram", "--col", "age", "--bins", "5", "--eps", "8", "-f", "json"],
    ] {
        let want = stdout_of(dpstat().args(args).arg(fixture("people.csv")));
        assert_eq!(stdout_of(dpstat().args(args).arg(&file)), want, "{args:?}");
    }
}
