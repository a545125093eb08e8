//! `dpstat count`: the noisy number of rows (after `--where`), sensitivity 1 under both privacy
//! units, integer output. Hand-checked truths come from fixtures/income.csv (8 rows; region
//! north: ann, cy, gus; south: bob, eve; east: dee, hal; west: fay) and fixtures/people.csv.

use crate::common;

use common::*;
use predicates::str::contains;
use serde_json::Value;

/// At this ε a count's noise (scale 1/1000) is nonzero with probability about 2e^-1000, so the
/// release is the exact count: a wrong filter or a lost row shows as a wrong integer.
const BIG_EPS: &str = "1000";

/// Text output of a count: exactly one integer on one line.
fn one_integer(text: &str) -> i64 {
    let line = text.strip_suffix('\n').unwrap_or_else(|| panic!("no final newline: {text:?}"));
    assert!(!line.contains('\n'), "more than one line: {text:?}");
    line.parse().unwrap_or_else(|e| panic!("not an integer ({e}): {text:?}"))
}

fn count_at(eps: &str, args: &[&str], file: &str) -> i64 {
    one_integer(&stdout_of(dpstat().args(["count", "--eps", eps]).args(args).arg(fixture(file))))
}

fn assert_count_json(j: &Value, unit: &str, eps: f64) {
    assert_eq!(j["query"], "count", "{j}");
    assert!(j["value"].is_i64(), "integer value: {j}");
    assert_eq!(j["epsilon"], eps, "{j}");
    assert_eq!(j["neighbours"], unit, "{j}");
    assert!(j["mechanism"].as_str().is_some_and(|m| m.contains("laplace")), "mechanism: {j}");
    assert_eq!(j["sensitivity"], 1.0, "count sensitivity is 1 under {unit}: {j}");
    assert_eq!(j["scale"], 1.0 / eps, "scale = 1/ε: {j}");
    assert_eq!(j["accuracy"]["confidence"], 0.95, "{j}");
    assert!(j["accuracy"]["error_bound"].as_f64().is_some_and(|b| b >= 0.0), "error bound: {j}");
    if unit == "add-remove" {
        assert!(j.get("rows").is_none(), "n is private under add-remove: {j}");
    }
}

#[test]
fn every_unit_format_and_source_gives_one_well_formed_release() {
    // (filter, true count): all 8 rows, or the 3 in the north.
    for (filter, truth) in [(None, 8), (Some("region=north"), 3)] {
        for unit in UNITS {
            let mut texts = vec![];
            for source in Source::ALL {
                let release = || {
                    let mut cmd = dpstat();
                    cmd.args(["count", "--eps", "0.5", "--neighbours", unit]);
                    if let Some(f) = filter {
                        cmd.args(["--where", f]);
                    }
                    cmd
                };
                let text = released(source.feed(&mut release(), "income.csv"));
                let value = one_integer(&text);
                assert!((value - truth).abs() <= 40, "{unit} {source:?}: {value} is far from {truth}");
                let j = json_of(source.feed(&mut release(), "income.csv"));
                assert_count_json(&j, unit, 0.5);
                assert_eq!(j["value"], value, "text and JSON of the same seed agree ({unit} {source:?})");
                texts.push(text);
            }
            assert!(
                texts.iter().all(|t| *t == texts[0]),
                "path, `-` and no FILE give the same release with the same seed ({filter:?} {unit}): {texts:?}"
            );
        }
    }
}

#[test]
fn large_epsilon_releases_the_exact_count_with_a_warning() {
    for unit in UNITS {
        for source in Source::ALL {
            let assert = source
                .feed(dpstat().args(["count", "--eps", BIG_EPS, "--neighbours", unit]), "income.csv")
                .assert()
                .success()
                .stderr(contains("protect"))
                .stderr(contains("1000"));
            let text = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
            assert_eq!(text, "8\n", "{unit} {source:?}");
        }
    }
    assert_eq!(count_at(BIG_EPS, &[], "people.csv"), 200);
}

#[test]
fn where_keeps_only_rows_matching_every_filter() {
    for unit in UNITS {
        let with = |filters: &[&str], file: &str| {
            let mut args = vec!["--neighbours", unit];
            for f in filters {
                args.extend(["--where", f]);
            }
            count_at(BIG_EPS, &args, file)
        };
        assert_eq!(with(&["region=north"], "income.csv"), 3, "{unit}");
        assert_eq!(with(&["region=west"], "income.csv"), 1, "{unit}");
        assert_eq!(with(&["region=nowhere"], "income.csv"), 0, "{unit}");
        assert_eq!(with(&["region=north", "age=30"], "income.csv"), 1, "{unit}: both must hold");
        assert_eq!(with(&["region=north", "region=south"], "income.csv"), 0, "{unit}");
        // people.csv, counted with awk: urban_rural=2 on 106 rows; north and urban_rural=1 on 25.
        assert_eq!(with(&["urban_rural=2"], "people.csv"), 106, "{unit}");
        assert_eq!(with(&["region=north", "urban_rural=1"], "people.csv"), 25, "{unit}");
    }
}

#[test]
fn where_shows_in_the_json_release() {
    let j = json_of(
        dpstat().args(["count", "--eps", BIG_EPS, "--where", "region=north"]).arg(fixture("income.csv")),
    );
    assert_eq!(j["value"], 3, "{j}");
    assert!(j.to_string().contains("region=north"), "the filter is part of what was released: {j}");
}

#[test]
fn json_states_sensitivity_scale_and_exact_epsilon() {
    for (eps, scale, exact) in [("0.25", 4.0, "1/4"), ("0.1", 10.0, "1/10"), ("2", 0.5, "2/1")] {
        for unit in UNITS {
            let j = json_of(
                dpstat().args(["count", "--eps", eps, "--neighbours", unit]).arg(fixture("income.csv")),
            );
            assert_eq!(j["sensitivity"], 1.0, "{j}");
            assert_eq!(j["scale"], scale, "scale = 1/ε at ε = {eps}: {j}");
            assert_eq!(j["epsilon_exact"], exact, "ε is read as an exact decimal: {j}");
            assert!(j["epsilon"].as_f64().unwrap() >= eps.parse::<f64>().unwrap(), "{j}");
        }
    }
}

#[test]
fn accuracy_bound_is_the_discrete_laplace_tail_at_the_confidence() {
    // Scale 1, p = e^-1: P(|Z| > t) = 2p^(t+1)/(1+p). At β = 0.05 the smallest t is 3
    // (t = 2 gives 0.073); at β = 0.5 it is 1 (t = 0 gives 0.54).
    let j = json_of(dpstat().args(["count", "--eps", "1"]).arg(fixture("income.csv")));
    assert_eq!(j["accuracy"]["confidence"], 0.95, "{j}");
    assert_eq!(j["accuracy"]["error_bound"], 3.0, "{j}");
    let j = json_of(dpstat().args(["count", "--eps", "1", "--confidence", "0.5"]).arg(fixture("income.csv")));
    assert_eq!(j["accuracy"]["confidence"], 0.5, "{j}");
    assert_eq!(j["accuracy"]["error_bound"], 1.0, "{j}");
}

#[test]
fn same_seed_same_release_and_different_seeds_differ() {
    // Every digit: rounded to its bound (±3000), two seeds would agree far more often.
    let run = |seed| {
        stdout_of(
            seeded(seed).args(["count", "--eps", "0.001", "--full-precision"]).arg(fixture("people.csv")),
        )
    };
    assert_eq!(run(7), run(7));
    // Noise of scale 1000: two seeds agree with probability about 1/4000.
    let values: Vec<String> = (1..=3).map(run).collect();
    assert_ne!(values[0], values[1], "{values:?}");
    assert_ne!(values[1], values[2], "{values:?}");
}

#[test]
fn header_only_and_empty_files_are_empty_datasets() {
    assert_eq!(count_at(BIG_EPS, &[], "header_only.csv"), 0);
    assert_eq!(count_at(BIG_EPS, &[], "empty.csv"), 0);
    // At ε = 1 the release is noise around 0 (scale 1; |Z| > 15 has probability < 1e-6).
    for seed in 1..=3 {
        let text = stdout_of(seeded(seed).args(["count", "--eps", "1"]).arg(fixture("header_only.csv")));
        assert!(one_integer(&text).abs() <= 15, "seed {seed}: {text}");
    }
    assert_eq!(count_at(BIG_EPS, &["--neighbours", "replace"], "header_only.csv"), 0);
}

#[test]
fn without_header_every_line_is_a_row() {
    assert_eq!(count_at(BIG_EPS, &["--no-header"], "no_header.csv"), 4);
    assert_eq!(count_at(BIG_EPS, &["--no-header", "--where", "2=x"], "no_header.csv"), 2);
    assert_eq!(count_at(BIG_EPS, &[], "no_header.csv"), 3, "with a header, line 1 names the columns");
}

#[test]
fn count_takes_no_col() {
    fails_with(dpstat().args(["count", "--col", "age", "--eps", "1"]).arg(fixture("income.csv")), &["--col"]);
}

#[test]
fn where_under_replace_is_allowed_for_count() {
    let j = json_of(
        dpstat()
            .args(["count", "--eps", BIG_EPS, "--neighbours", "replace", "--where", "region=south"])
            .arg(fixture("income.csv")),
    );
    assert_eq!(j["value"], 2, "{j}");
    assert_eq!(j["neighbours"], "replace", "{j}");
}
