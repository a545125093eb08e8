//! `dpstat check`: the custodian's pre-flight names every problem by row and column, exits 4
//! when it finds one, never touches a ledger and says that its report is not private.

use crate::common;

use common::{dpstat, fixture};

fn check(file: &std::path::Path) -> (Option<i32>, String, String) {
    let out = dpstat().arg("check").arg(file).output().expect("dpstat runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_clean_file_passes() {
    let (code, report, _) = check(&fixture("people.csv"));
    assert_eq!(code, Some(0), "{report}");
    assert!(
        report.starts_with("people.csv: 200 rows, 6 columns") || report.contains(": 200 rows, 6 columns"),
        "{report}"
    );
    assert!(report.contains("column 'income': 200 numbers, 0 other, 0 empty"), "{report}");
    assert!(report.contains("ok: no problems found") && report.contains("not private"), "{report}");
}

#[test]
fn bad_cells_ragged_rows_and_bytes_are_named_by_row_and_column() {
    let (code, report, stderr) = check(&fixture("bad_cells.csv"));
    assert_eq!(code, Some(4), "{report}");
    assert!(report.contains("column 'reading': 2 numbers, 5 other, 1 empty"), "{report}");
    for row in ["row 2 (line 3): 'abc'", "row 3 (line 4): 'NaN'", "row 6 (line 7): '1e400'"] {
        assert!(report.contains(row), "{row}: {report}");
    }
    assert!(stderr.contains("6 problem(s) found"), "{stderr}");

    let (code, report, _) = check(&fixture("ragged.csv"));
    assert_eq!(code, Some(4), "{report}");
    assert!(report.contains("row 2 (line 3): 2 fields, not 3"), "{report}");

    let dir = tempfile::TempDir::new().unwrap();
    let bytes = dir.path().join("bytes.csv");
    std::fs::write(&bytes, b"a,b\n1,\xff\xfe\n2,\x1b[31m\n3,5\n").unwrap();
    let (code, report, _) = check(&bytes);
    assert_eq!(code, Some(4), "{report}");
    assert!(report.contains("column 'b': 1 cells are not UTF-8 (rows 1)"), "{report}");
    assert!(report.contains("'\\x1b[31m'") && !report.contains('\x1b'), "escaped: {report:?}");
}

#[test]
fn check_never_touches_a_ledger_and_says_it_is_not_private() {
    let dir = tempfile::TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let out =
        dpstat().arg("check").arg(fixture("people.csv")).env("DPSTAT_LEDGER", &ledger).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!ledger.exists(), "check created or charged a ledger");
    let help = dpstat().args(["check", "--help"]).output().unwrap();
    // Help wraps at 80 columns: compare the words, not where the lines break.
    let help = String::from_utf8_lossy(&help.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("NOT private") && help.contains("never touches a ledger"), "{help}");
    assert!(
        dpstat().args(["check", "--ledger", "x"]).arg(fixture("people.csv")).output().unwrap().status.code()
            == Some(2)
    );
}
