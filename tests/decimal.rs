//! Decimal commas (`--decimal ,`, `decimal = ","` in a workload): a semicolon-separated file
//! that writes `228,04` releases exactly what the same table written with points releases under
//! the same seed, and without the flag such a cell is refused with the flag that reads it.

use crate::common;

use common::{dpstat, fails_with, fixture, seeded, stdout_of, unseeded};
use tempfile::TempDir;

/// The same 40 rows: `,` decimals separated by `;`, and `.` decimals separated by `,`.
const COMMA: &str = "decimal_comma.csv";
const POINT: &str = "decimal_point.csv";

/// A release's stdout for the comma file (with `--decimal , -d ;`) and the point file, at one
/// seed.
fn both(args: &[&str], seed: u64) -> (String, String) {
    let comma = stdout_of(seeded(seed).args(args).args(["--decimal", ",", "-d", ";"]).arg(fixture(COMMA)));
    let point = stdout_of(seeded(seed).args(args).arg(fixture(POINT)));
    (comma, point)
}

#[test]
fn a_decimal_comma_file_releases_what_the_point_file_releases() {
    let releases: &[&[&str]] = &[
        &["mean", "--col", "amount", "--lower", "0", "--upper", "400", "--eps", "1", "-f", "json"],
        &["sum", "--col", "rate", "--lower", "0", "--upper", "1", "--eps", "1", "-f", "json"],
        &["variance", "--col", "amount", "--lower", "0", "--upper", "400", "--eps", "1", "-f", "json"],
        &[
            "histogram",
            "--col",
            "rate",
            "--bins",
            "4",
            "--lower",
            "0",
            "--upper",
            "1",
            "--eps",
            "1",
            "-f",
            "json",
        ],
        &[
            "quantile",
            "--col",
            "amount",
            "--q",
            "0.25,0.75",
            "--lower",
            "0",
            "--upper",
            "400",
            "--eps",
            "1",
            "-f",
            "json",
        ],
        &[
            "covariance",
            "--cols",
            "amount,rate",
            "--lower",
            "0,0",
            "--upper",
            "400,1",
            "--eps",
            "1",
            "-f",
            "json",
        ],
        // Filters read the cells with the file's mark too (their N is written with a point).
        &["count", "--where", "amount>190.5", "--where", "rate<=0.5", "--eps", "1", "-f", "json"],
        &[
            "mean",
            "--col",
            "amount",
            "--where",
            "day>=2025-03-10",
            "--lower",
            "0",
            "--upper",
            "400",
            "--eps",
            "1",
            "-f",
            "json",
        ],
        // Text columns keep their commas: a key is text, not a number.
        &[
            "mean",
            "--col",
            "amount",
            "--by",
            "name",
            "--keys",
            "\"Smith, Ann\",Lee",
            "--lower",
            "0",
            "--upper",
            "400",
            "--eps",
            "1",
            "-f",
            "json",
        ],
        // Bounds found privately, and a person's rows bounded and replayed.
        &["mean", "--col", "amount", "--eps", "50", "-f", "json"],
        // (K below the heavier persons' row counts: which rows a person keeps past K is chosen
        // from the values read, so `192,9` and `192.9` keep the same rows.)
        &[
            "sum",
            "--col",
            "amount",
            "--lower",
            "0",
            "--upper",
            "400",
            "--privacy-id",
            "name",
            "--max-rows-per-id",
            "2",
            "--eps",
            "1",
            "-f",
            "json",
        ],
    ];
    for args in releases {
        for seed in [1, 7] {
            let (comma, point) = both(args, seed);
            assert!(comma.contains("\"epsilon_exact\""), "{args:?}: {comma}");
            assert_eq!(comma, point, "{args:?} at seed {seed}");
        }
    }
}

#[test]
fn a_decimal_comma_without_the_flag_is_refused_with_the_flag_that_reads_it() {
    let error = fails_with(
        dpstat()
            .args(["mean", "--col", "amount", "--lower", "0", "--upper", "400", "--eps", "1", "-d", ";"])
            .arg(fixture(COMMA)),
        &["row 5", "column 'amount'", "'192,9'", "--decimal ,"],
    );
    // Skipping such cells would release the mean of the integer rows alone.
    assert!(!error.contains("--invalid skip"), "{error}");
    // A cell that is no number in any spelling still points at --invalid.
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("text.csv");
    std::fs::write(&path, "amount\n1\nabc\n").unwrap();
    fails_with(
        dpstat().args(["mean", "--col", "amount", "--lower", "0", "--upper", "9", "--eps", "1"]).arg(&path),
        &["'abc'", "--invalid skip"],
    );
}

#[test]
fn under_a_decimal_comma_a_point_is_refused_not_misread() {
    let dir = TempDir::new().unwrap();
    for (cell, needles) in [
        ("1.234,5", &["'1.234,5'", "thousands separator"][..]),
        ("1.234", &["'1.234'", "thousands separator"][..]),
    ] {
        let path = dir.path().join("thousands.csv");
        std::fs::write(&path, format!("id;amount\n1;2,5\n2;{cell}\n")).unwrap();
        let error = fails_with(
            dpstat()
                .args([
                    "sum",
                    "--col",
                    "amount",
                    "--lower",
                    "0",
                    "--upper",
                    "9",
                    "--eps",
                    "1",
                    "-d",
                    ";",
                    "--decimal",
                    ",",
                ])
                .arg(&path),
            needles,
        );
        assert!(error.contains("row 2") && !error.contains("--invalid skip"), "{error}");
    }
}

#[test]
fn a_comma_delimited_file_reads_quoted_decimal_commas() {
    let dir = TempDir::new().unwrap();
    let quoted = dir.path().join("quoted.csv");
    std::fs::write(&quoted, "id,amount\n1,\"2,5\"\n2,\"7,25\"\n3,4\n").unwrap();
    let plain = dir.path().join("plain.csv");
    std::fs::write(&plain, "id,amount\n1,2.5\n2,7.25\n3,4\n").unwrap();
    let args = ["sum", "--col", "amount", "--lower", "0", "--upper", "9", "--eps", "1", "-f", "json"];
    let comma = stdout_of(dpstat().args(args).args(["--decimal", ","]).arg(&quoted));
    assert_eq!(comma, stdout_of(dpstat().args(args).arg(&plain)));
}

#[test]
fn a_workload_takes_the_decimal_mark() {
    let dir = TempDir::new().unwrap();
    let body = "epsilon = 1\n\n[[query]]\nname = \"m\"\nkind = \"mean\"\ncolumn = \"amount\"\nlower = 0\nupper = 400\n\n\
                [[query]]\nname = \"big\"\nkind = \"count\"\nwhere = [\"rate>0.5\"]\n";
    let comma = dir.path().join("comma.toml");
    std::fs::write(&comma, format!("decimal = \",\"\n{body}")).unwrap();
    let point = dir.path().join("point.toml");
    std::fs::write(&point, body).unwrap();
    let by_key =
        stdout_of(dpstat().arg("run").arg(&comma).args(["-d", ";", "-f", "json"]).arg(fixture(COMMA)));
    let by_flag = stdout_of(
        dpstat().arg("run").arg(&point).args(["-d", ";", "--decimal", ",", "-f", "json"]).arg(fixture(COMMA)),
    );
    let dotted = stdout_of(dpstat().arg("run").arg(&point).args(["-f", "json"]).arg(fixture(POINT)));
    assert_eq!(by_key, dotted);
    assert_eq!(by_flag, dotted);
    // The file's point against the flag's comma: one of them is wrong.
    let clash = dir.path().join("clash.toml");
    std::fs::write(&clash, format!("decimal = \".\"\n{body}")).unwrap();
    fails_with(
        dpstat().arg("run").arg(&clash).args(["-d", ";", "--decimal", ","]).arg(fixture(COMMA)),
        &["clash.toml line 1", "--decimal ,"],
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, format!("decimal = \";\"\n{body}")).unwrap();
    fails_with(dpstat().arg("run").arg(&bad).arg(fixture(COMMA)), &["bad.toml line 1", "decimal"]);
}

#[test]
fn a_decimal_comma_under_a_ledger_is_charged_and_released() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let out = stdout_of(
        unseeded()
            .args([
                "mean",
                "--col",
                "amount",
                "--lower",
                "0",
                "--upper",
                "400",
                "--eps",
                "0.5",
                "--invalid",
                "skip",
            ])
            .args(["--decimal", ",", "-d", ";", "--ledger"])
            .arg(&ledger)
            .args(["--dataset", "sales", "--budget", "1"])
            .arg(fixture(COMMA)),
    );
    assert!(out.trim().parse::<f64>().is_ok(), "{out}");
    let budget = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    assert!(budget.contains("spent      0.5"), "{budget}");
}

#[test]
fn parquet_refuses_a_decimal_comma() {
    fails_with(
        dpstat().args(["count", "--eps", "1", "--decimal", ","]).arg(fixture("people.parquet")),
        &["--decimal ,", "Parquet"],
    );
}

#[test]
fn check_names_the_decimal_comma_and_reads_it_with_the_flag() {
    let out = dpstat().args(["check", "-d", ";"]).arg(fixture(COMMA)).output().unwrap();
    let report = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(4), "{report}");
    assert!(report.contains("column 'amount': 29 numbers, 11 other"), "{report}");
    assert!(report.contains("decimal comma: add --decimal ,") && report.contains("'192,9'"), "{report}");
    let read = stdout_of(dpstat().args(["check", "-d", ";", "--decimal", ","]).arg(fixture(COMMA)));
    assert!(read.contains("column 'amount': 40 numbers, 0 other") && !read.contains("problem:"), "{read}");
    assert!(read.contains("column 'rate': 40 numbers"), "{read}");
}
