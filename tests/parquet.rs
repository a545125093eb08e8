//! Parquet input: the same table as CSV, as one Parquet file, as Parquet parts and as hive
//! partitions gives bit-identical releases under the same seed.

mod common;
#[path = "common/parquet.rs"]
mod tables;

use common::*;
use tables::{Table, Values};

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

#[test]
fn csv_and_parquet_give_the_same_mean() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(500);
    std::fs::write(dir.path().join("t.csv"), t.csv()).unwrap();
    t.write_parquet(&dir.path().join("t.parquet"), 128);
    t.write_parts(&dir.path().join("parts"), 3, 100);
    let run = |file: &std::path::Path, col: &str| {
        stdout_of(
            dpstat()
                .args([
                    "mean",
                    "--col",
                    col,
                    "--lower",
                    "0",
                    "--upper",
                    "10000",
                    "--eps",
                    "1",
                    "--invalid",
                    "skip",
                    "-o",
                    "json",
                ])
                .arg(file),
        )
    };
    for col in ["income", "price", "id"] {
        let csv = run(&dir.path().join("t.csv"), col);
        assert_eq!(csv, run(&dir.path().join("t.parquet"), col), "{col}");
        assert_eq!(csv, run(&dir.path().join("parts"), col), "{col}");
    }
}
