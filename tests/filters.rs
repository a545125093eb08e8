//! `--where` filters through the real binary: every operator on fixtures/filters.csv (numbers
//! in several spellings, text, empty and blank cells, NaN, a column named `a<b`), read both by
//! the parallel scan (a file) and by the csv reader (standard input); mistakes are one line and
//! exit 2 before any row is read; workloads take the same filters.
//!
//! fixtures/filters.csv:
//!
//! ```text
//! id,age,region,score,a<b,note
//! 1,25,north,3.5,1,x
//! 2,65,south,,0,
//! 3,70,east,-2,1,y
//! 4,64.9,north, 10 ,1,
//! 5,,west,NaN,0,z
//! 6,abc,north,1e1,1,␠
//! 7,65.0,south,0.5,0,x
//! 8,90,North,7,1,w
//! ```

use crate::common;

use std::fs;

use common::{dpstat, fails_with, fixture, stdout_of, Source};
use serde_json::Value;
use tempfile::TempDir;

/// The exact count of the rows passing `filters` (ε = 1000: the noise is 0 but with
/// probability about 2e^-1000), read from the file and from standard input.
fn count(filters: &[&str]) -> i64 {
    let mut seen = vec![];
    for source in Source::ALL {
        let mut cmd = dpstat();
        cmd.args(["count", "--eps", "1000"]);
        for f in filters {
            cmd.args(["--where", f]);
        }
        let text = stdout_of(source.feed(&mut cmd, "filters.csv"));
        seen.push(text.trim().parse::<i64>().unwrap_or_else(|e| panic!("{e}: {text}")));
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{filters:?}: file and stdin disagree: {seen:?}");
    seen[0]
}

#[test]
fn every_operator_keeps_the_rows_it_names() {
    let cases: &[(&[&str], i64)] = &[
        (&["age>=65"], 4), // 65, 70, 65.0, 90; not 64.9, empty, abc
        (&["age >= 65"], 4),
        (&["age>65"], 2),
        (&["age<65"], 2),  // 25, 64.9
        (&["age<=65"], 4), // 25, 65, 64.9, 65.0
        (&["age=65"], 1),  // text: "65.0" is another text
        (&["age!=65"], 7), // the empty cell differs too
        (&["region=north"], 3),
        (&["region!=north"], 5),
        (&["region in north,south"], 5), // case-sensitive: not North
        (&["region in north, south ,east"], 6),
        (&["region not in north,south"], 3),
        (&["score is empty"], 1),
        (&["score="], 1),
        (&["score is not empty"], 7),
        (&["note is empty"], 3), // a blank cell is empty once trimmed
        (&["note!="], 5),
        (&["score>=5"], 3),    // " 10 ", 1e1, 7; not NaN, not empty
        (&["score<0"], 1),     // -2
        (&["score>=-1e9"], 6), // every number; NaN and empty do not compare
        (&["\"a<b\"=1"], 5),
        (&["\"a<b\" in 0"], 3),
        (&["region=north", "age>=60"], 1), // all must hold: 64.9 in the north
        (&["region in north,south", "age<65", "note is empty"], 1),
    ];
    for (filters, want) in cases {
        assert_eq!(count(filters), *want, "{filters:?}");
    }
}

#[test]
fn releases_list_their_filters_as_written_back() {
    let json: Value = serde_json::from_str(&stdout_of(
        dpstat()
            .args(["count", "--eps", "1", "--format", "json", "--where", "age >= 65.0", "--where"])
            .args(["region in north,south", "--where", "\"a<b\"!=0", "--where", "note="])
            .arg(fixture("filters.csv")),
    ))
    .unwrap();
    assert_eq!(
        json["where"],
        serde_json::json!(["age>=65", "region in north,south", "\"a<b\"!=0", "note is empty"])
    );
}

#[test]
fn filters_work_with_every_statistic_and_group() {
    // Ages >= 65 with a number: 65, 70, 65.0, 90; their mean is 72.5.
    let text = stdout_of(
        dpstat()
            .args(["mean", "--col", "age", "--lower", "0", "--upper", "100", "--eps", "1000000"])
            .args(["--where", "age>=65"])
            .arg(fixture("filters.csv")),
    );
    let mean: f64 = text.trim().parse().unwrap();
    assert!((mean - 72.5).abs() < 0.01, "{mean}");
    let text = stdout_of(
        dpstat()
            .args(["count", "--eps", "1000", "--by", "region", "--keys", "north,south", "--where", "age<70"])
            .arg(fixture("filters.csv")),
    );
    // age < 70 (numbers only): 25 north, 65 south, 64.9 north, 65.0 south.
    assert_eq!(text, "key,value\nnorth,2\nsouth,2\nother,0\n");
}

#[test]
fn mistakes_are_one_line_and_exit_2_before_any_row_is_read() {
    // bad_cells.csv would fail on its rows; a bad filter must be found first.
    for (filter, needles) in [
        ("age>=abc", &["--where", "compares numbers", "'abc'"][..]),
        ("age=>65", &["--where", "starts with '>'"]),
        ("age==65", &["--where", "starts with '='"]),
        ("age", &["--where", "no operator"]),
        ("=north", &["--where", "no column"]),
        ("born in city=Paris", &["--where", "ambiguous", "double quotes"]),
        ("region in north,,south", &["--where", "empty"]),
        ("\"a<b=1", &["--where", "closing quote"]),
        ("age!3", &["--where", "!="]),
    ] {
        fails_with(
            dpstat()
                .args([
                    "sum", "--col", "income", "--lower", "0", "--upper", "10", "--eps", "1", "--where",
                    filter,
                ])
                .arg(fixture("bad_cells.csv")),
            needles,
        );
    }
    // A column the header does not have is named, with the header's columns.
    fails_with(
        dpstat().args(["count", "--eps", "1", "--where", "nope>=3"]).arg(fixture("filters.csv")),
        &["'nope'", "--where", "age"],
    );
}

#[test]
fn workloads_take_the_same_filters() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("w.toml");
    fs::write(
        &path,
        "epsilon = 2000\n[[query]]\nname = \"old\"\nkind = \"count\"\nwhere = [\"age>=65\"]\n\
         [[query]]\nname = \"listed\"\nkind = \"count\"\nwhere = [\"region in north,south\", \"note is not empty\"]\n",
    )
    .unwrap();
    let text = stdout_of(dpstat().args(["run", "--format", "json"]).arg(&path).arg(fixture("filters.csv")));
    let values: Vec<i64> =
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["value"].as_i64().unwrap()).collect();
    // north/south with a note: rows 1 (x), 7 (x).
    assert_eq!(values, vec![4, 2]);
    fs::write(&path, "epsilon = 1\n[[query]]\nname = \"c\"\nkind = \"count\"\nwhere = [\"age>=x\"]\n")
        .unwrap();
    fails_with(
        dpstat().arg("run").arg(&path).arg(fixture("filters.csv")),
        &["w.toml line 5", "query 'c'", "where", "compares numbers"],
    );
}
