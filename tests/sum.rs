//! `dpstat sum`: the noisy sum of a column clamped to [L, U]; sensitivity max(|L|,|U|) under
//! add-remove and U − L under replace.
//!
//! fixtures/income.csv, column income: 1000, 2500, -500, 300000, 12000, 0, 45000.5, 60000
//! (regions north, south, north, east, south, west, north, east). Clamped by hand:
//! - [0, 200000]:   1000 + 2500 + 0 + 200000 + 12000 + 0 + 45000.5 + 60000 = 320500.5
//!   (unclamped it would be 420000.5); north: 1000 + 0 + 45000.5 = 46000.5.
//! - [1000, 50000]: 1000 + 2500 + 1000 + 50000 + 12000 + 1000 + 45000.5 + 50000 = 162500.5.
//! - [-3, 5]:       six values clamp to 5, -500 to -3, 0 stays: 27; north 7, south 10.
//! - [-5, 5]:       30 - 5 = 25.

use crate::common;

use assert_cmd::Command;
use common::*;
use predicates::str::contains;
use serde_json::Value;

const BIG_EPS: f64 = 1000.0;

/// `dpstat sum --col income --lower L --upper U --eps E [extra]` on income.csv.
fn sum(lower: &str, upper: &str, eps: &str, extra: &[&str]) -> Command {
    let mut cmd = dpstat();
    cmd.args(["sum", "--col", "income", "--lower", lower, "--upper", upper, "--eps", eps]).args(extra);
    cmd
}

fn assert_near(got: f64, want: f64, tolerance: f64, what: &str) {
    assert!((got - want).abs() <= tolerance, "{what}: got {got}, want {want} ± {tolerance}");
}

/// Ten noise scales: a correct release is outside with probability e^-10 per draw.
fn tolerance(sensitivity: f64, eps: f64) -> f64 {
    10.0 * sensitivity / eps
}

#[test]
fn every_unit_format_and_source_gives_one_well_formed_release() {
    for unit in UNITS {
        let mut texts = vec![];
        for source in Source::ALL {
            // The exact value, to compare with JSON's (text is rounded by default).
            let text = released(source.feed(
                &mut sum("0", "200000", "1", &["--neighbours", unit, "--full-precision"]),
                "income.csv",
            ));
            let value = one_number(&text);
            let j = json_of(source.feed(&mut sum("0", "200000", "1", &["--neighbours", unit]), "income.csv"));
            assert_eq!(j["query"], "sum", "{j}");
            assert_eq!(j["column"], "income", "{j}");
            let json_value = j["value"].as_f64().unwrap_or_else(|| panic!("numeric value: {j}"));
            // serde_json (without float_roundtrip) may read a float 1 ulp off what was printed.
            assert_near(json_value, value, value.abs() * 4.0 * f64::EPSILON, "text and JSON agree");
            assert_eq!(j["epsilon"], 1.0, "{j}");
            assert_eq!(j["neighbours"], unit, "{j}");
            assert!(j["mechanism"].as_str().is_some_and(|m| m.contains("laplace")), "{j}");
            assert_eq!(j["sensitivity"], 200000.0, "{j}");
            assert_eq!(j["scale"], 200000.0, "{j}");
            assert_eq!(j["accuracy"]["confidence"], 0.95, "{j}");
            assert!(j["accuracy"]["error_bound"].as_f64().is_some_and(|b| b > 0.0), "{j}");
            if unit == "add-remove" {
                assert!(j.get("rows").is_none(), "n is private under add-remove: {j}");
            }
            texts.push(text);
        }
        assert!(
            texts.iter().all(|t| *t == texts[0]),
            "path, `-` and no FILE give the same release with the same seed ({unit}): {texts:?}"
        );
    }
}

#[test]
fn sensitivity_and_scale_follow_the_privacy_unit() {
    // (L, U, max(|L|,|U|), U − L): bounds on every grid, so Δ prints exactly.
    let cases = [
        ("0", "200000", 200000.0, 200000.0),
        ("-3", "5", 5.0, 8.0),
        ("-7", "5", 7.0, 12.0),
        ("2", "6", 6.0, 4.0),
    ];
    for (lower, upper, add_remove, replace) in cases {
        for (unit, delta) in [("add-remove", add_remove), ("replace", replace)] {
            for (eps, e) in [("0.5", 0.5), ("2", 2.0)] {
                let j = json_of(sum(lower, upper, eps, &["--neighbours", unit]).arg(fixture("income.csv")));
                assert_eq!(j["sensitivity"], delta, "[{lower}, {upper}] {unit}: {j}");
                assert_eq!(j["scale"], delta / e, "scale = Δ/ε, [{lower}, {upper}] {unit} ε {eps}: {j}");
            }
        }
    }
}

#[test]
fn large_epsilon_sum_is_the_hand_computed_clamped_sum() {
    // (L, U, filter, true clamped sum, max(|L|,|U|), U − L)
    let cases = [
        ("0", "200000", None, 320500.5, 200000.0, 200000.0),
        ("1000", "50000", None, 162500.5, 50000.0, 49000.0),
        ("-3", "5", None, 27.0, 5.0, 8.0),
        ("0", "200000", Some("region=north"), 46000.5, 200000.0, 200000.0),
        ("-3", "5", Some("region=north"), 7.0, 5.0, 8.0),
        ("-3", "5", Some("region=south"), 10.0, 5.0, 8.0),
    ];
    for (lower, upper, filter, truth, add_remove, replace) in cases {
        for (unit, delta) in [("add-remove", add_remove), ("replace", replace)] {
            if filter.is_some() && unit == "replace" {
                continue; // refused: see where_under_replace_is_refused
            }
            let mut cmd = sum(lower, upper, "1000", &["--neighbours", unit]);
            if let Some(f) = filter {
                cmd.args(["--where", f]);
            }
            let assert = cmd.arg(fixture("income.csv")).assert().success().stderr(contains("protect"));
            let value = one_number(&String::from_utf8_lossy(&assert.get_output().stdout));
            let what = format!("[{lower}, {upper}] {filter:?} {unit}");
            assert_near(value, truth, tolerance(delta, BIG_EPS), &what);
        }
    }
}

#[test]
fn negative_bounds_can_be_given_as_separate_or_attached_values() {
    let separate = stdout_of(sum("-5", "5", "1000", &[]).arg(fixture("income.csv")));
    let attached = stdout_of(
        dpstat()
            .args(["sum", "--col", "income", "--lower=-5", "--upper=5", "--eps=1000"])
            .arg(fixture("income.csv")),
    );
    assert_eq!(separate, attached);
    assert_near(one_number(&separate), 25.0, tolerance(5.0, BIG_EPS), "[-5, 5]");
}

#[test]
fn same_seed_same_release_and_different_seeds_differ() {
    let run = |seed| {
        let mut cmd = seeded(seed);
        cmd.args(["sum", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "1"]);
        stdout_of(cmd.arg(fixture("people.csv")))
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(1), run(2));
    assert_ne!(run(2), run(3));
}

#[test]
fn header_only_file_releases_noise_around_zero() {
    for unit in UNITS {
        let mut cmd = dpstat();
        cmd.args(["sum", "--col", "amount", "--lower", "-3", "--upper", "5", "--eps", "1000"]);
        let text = stdout_of(cmd.args(["--neighbours", unit]).arg(fixture("header_only.csv")));
        assert_near(one_number(&text), 0.0, tolerance(8.0, BIG_EPS), unit);
    }
}

#[test]
fn clamping_bounds_are_required_finite_and_ordered() {
    let income = fixture("income.csv");
    let base = || {
        let mut cmd = dpstat();
        cmd.args(["sum", "--col", "income", "--eps", "1"]);
        cmd
    };
    // One bound alone is refused. (Neither bound spends --bounds-eps on private bounds.)
    fails_with(base().args(["--upper", "5"]).arg(&income), &["--lower", "--upper"]);
    fails_with(base().args(["--lower", "5"]).arg(&income), &["--lower", "--upper"]);
    for (lower, upper) in [("5", "5"), ("6", "5"), ("0", "-1")] {
        fails_with(sum(lower, upper, "1", &[]).arg(&income), &["--lower", "--upper"]);
    }
    for bad in ["nan", "NaN", "inf", "-inf", "abc"] {
        fails_with(sum(bad, "5", "1", &[]).arg(&income), &["--lower", bad]);
        fails_with(sum("0", bad, "1", &[]).arg(&income), &["--upper", bad]);
    }
}

#[test]
fn where_under_replace_is_refused() {
    let mut cmd = sum("0", "200000", "1", &["--neighbours", "replace", "--where", "region=north"]);
    fails_with(cmd.arg(fixture("income.csv")), &["--where", "replace", "add-remove"]);
}

#[test]
fn bad_cells_are_errors_naming_file_row_line_column_and_text() {
    // bad_cells.csv: line 1 is the header, so data row r is on line r + 1.
    let cases =
        [("2", "'abc'"), ("3", "'NaN'"), ("4", "'inf'"), ("5", "'-inf'"), ("6", "'1e400'"), ("7", "empty")];
    for (id, text) in cases {
        let row = format!("row {id}");
        let line = format!("line {}", id.parse::<u32>().unwrap() + 1);
        let mut cmd = dpstat();
        cmd.args(["sum", "--col", "reading", "--lower", "0", "--upper", "100", "--eps", "1"]);
        cmd.args(["--where", &format!("id={id}")]).arg(fixture("bad_cells.csv"));
        fails_with(&mut cmd, &["bad_cells.csv", &row, &line, "reading", text, "--invalid"]);
    }
    // Without a filter the first bad cell is the one reported.
    let mut cmd = dpstat();
    cmd.args(["sum", "--col", "reading", "--lower", "0", "--upper", "100", "--eps", "1"]);
    fails_with(cmd.arg(fixture("bad_cells.csv")), &["row 2", "'abc'"]);
}

#[test]
fn invalid_skip_and_impute_give_the_hand_computed_sum() {
    // bad_cells.csv: 10 and 20 are numbers, six cells are not.
    let run = |policy: &str, unit: &str| {
        let mut cmd = dpstat();
        cmd.args(["sum", "--col", "reading", "--lower", "0", "--upper", "100", "--eps", "1000"]);
        cmd.args(["--invalid", policy, "--neighbours", unit]).arg(fixture("bad_cells.csv"));
        one_number(&stdout_of(&mut cmd))
    };
    let tol = tolerance(100.0, BIG_EPS);
    assert_near(run("skip", "add-remove"), 30.0, tol, "skip");
    for unit in UNITS {
        assert_near(run("impute=5", unit), 10.0 + 20.0 + 6.0 * 5.0, tol, unit);
        // An imputed value is clamped like any other.
        assert_near(run("impute=500", unit), 10.0 + 20.0 + 6.0 * 100.0, tol, unit);
    }
    let mut cmd = dpstat();
    cmd.args(["sum", "--col", "reading", "--lower", "0", "--upper", "100", "--eps", "1"]);
    cmd.args(["--invalid", "skip", "--neighbours", "replace"]).arg(fixture("bad_cells.csv"));
    fails_with(&mut cmd, &["--invalid skip", "replace"]);
    let mut cmd = dpstat();
    cmd.args(["sum", "--col", "reading", "--lower", "0", "--upper", "100", "--eps", "1"]);
    fails_with(cmd.args(["--invalid", "impute=nan"]).arg(fixture("bad_cells.csv")), &["--invalid"]);
}

#[test]
fn a_release_too_large_for_f64_is_refused_or_finite() {
    for format in ["text", "json"] {
        let mut cmd = sum("-1e308", "1e308", "1e-9", &["--format", format]);
        let out = cmd.arg(fixture("income.csv")).output().expect("dpstat runs");
        if out.status.code() == Some(2) {
            assert!(out.stdout.is_empty());
            continue;
        }
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let value = match format {
            "text" => one_number(&text),
            _ => serde_json::from_str::<Value>(&text).unwrap()["value"]
                .as_f64()
                .unwrap_or_else(|| panic!("JSON value is not a number: {text}")),
        };
        assert!(value.is_finite(), "{format}: {text}");
    }
}
