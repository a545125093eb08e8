//! `dpstat mean`: the noisy mean of a column clamped to [L, U].
//! - replace: n is public; noisy clamped sum / n, sensitivity (U − L)/n; JSON has `rows` = n.
//! - add-remove: n is private; ε is split in two exact halves between a noisy midpoint-shifted
//!   sum (sensitivity (U − L)/2) and a noisy count (sensitivity 1), listed as `parts`.
//!
//! fixtures/income.csv, column income (8 rows): clamped to [0, 200000] the sum is 320500.5, so
//! the mean is 40062.5625 (unclamped it would be 52500.0625); north (3 rows) 46000.5 / 3 =
//! 15333.5. Clamped to [-3, 5]: 27 / 8 = 3.375; north 7 / 3.

use crate::common;

use assert_cmd::Command;
use common::*;
use predicates::str::contains;
use serde_json::Value;

/// `dpstat mean --col C --lower L --upper U --eps E --neighbours UNIT`.
fn mean(col: &str, lower: &str, upper: &str, eps: &str, unit: &str) -> Command {
    let mut cmd = dpstat();
    cmd.args(["mean", "--col", col, "--lower", lower, "--upper", upper]).args([
        "--eps",
        eps,
        "--neighbours",
        unit,
    ]);
    cmd
}

fn assert_near(got: f64, want: f64, tolerance: f64, what: &str) {
    assert!((got - want).abs() <= tolerance, "{what}: got {got}, want {want} ± {tolerance}");
}

/// An exact ε as printed in `epsilon_exact` ("numerator/denominator").
fn ratio(j: &Value) -> (u128, u128) {
    let text = j.as_str().unwrap_or_else(|| panic!("epsilon_exact is a string: {j}"));
    let (n, d) = text.split_once('/').unwrap_or_else(|| panic!("not n/d: {text}"));
    (n.parse().unwrap(), d.parse().unwrap())
}

/// The part of an add-remove mean whose name mentions `word`.
fn part<'a>(j: &'a Value, word: &str) -> &'a Value {
    let parts = j["parts"].as_array().unwrap_or_else(|| panic!("parts: {j}"));
    let found: Vec<&Value> =
        parts.iter().filter(|p| p["name"].as_str().is_some_and(|n| n.contains(word))).collect();
    assert_eq!(found.len(), 1, "one part named like {word:?}: {j}");
    found[0]
}

#[test]
fn every_unit_format_and_source_gives_one_well_formed_release() {
    for unit in UNITS {
        let mut texts = vec![];
        for source in Source::ALL {
            // The exact value, to compare with JSON's (text is rounded by default).
            let text = released(
                source.feed(mean("income", "0", "200000", "1", unit).arg("--full-precision"), "income.csv"),
            );
            let value = one_number(&text);
            assert!((0.0..=200000.0).contains(&value), "{unit} {source:?}: {value}");
            let j = json_of(source.feed(&mut mean("income", "0", "200000", "1", unit), "income.csv"));
            assert_eq!(j["query"], "mean", "{j}");
            assert_eq!(j["column"], "income", "{j}");
            // serde_json (without float_roundtrip) may read a float 1 ulp off what was printed.
            let json_value = j["value"].as_f64().unwrap_or_else(|| panic!("numeric value: {j}"));
            assert_near(json_value, value, value.abs() * 4.0 * f64::EPSILON, "text and JSON agree");
            assert_eq!(j["epsilon"], 1.0, "{j}");
            assert_eq!(j["neighbours"], unit, "{j}");
            assert!(j["mechanism"].as_str().is_some_and(|m| m.contains("laplace")), "{j}");
            assert_eq!(j["accuracy"]["confidence"], 0.95, "{j}");
            assert!(j["accuracy"]["error_bound"].as_f64().is_some_and(|b| b > 0.0), "{j}");
            texts.push(text);
        }
        assert!(
            texts.iter().all(|t| *t == texts[0]),
            "path, `-` and no FILE give the same release with the same seed ({unit}): {texts:?}"
        );
    }
}

#[test]
fn add_remove_splits_epsilon_into_two_exact_halves_and_hides_n() {
    let j = json_of(mean("income", "0", "200000", "1", "add-remove").arg(fixture("income.csv")));
    assert_eq!(j["epsilon"], 1.0, "{j}");
    assert_eq!(j["epsilon_exact"], "1/1", "{j}");
    assert!(j.get("rows").is_none(), "n is private under add-remove: {j}");
    assert_eq!(j["parts"].as_array().map(Vec::len), Some(2), "{j}");
    let sum = part(&j, "sum");
    assert_eq!(sum["epsilon"], 0.5, "{j}");
    assert_eq!(sum["epsilon_exact"], "1/2", "{j}");
    assert_eq!(sum["sensitivity"], 100000.0, "shifted sum: (U − L)/2: {j}");
    assert_eq!(sum["scale"], 200000.0, "Δ/(ε/2): {j}");
    let count = part(&j, "count");
    assert_eq!(count["epsilon"], 0.5, "{j}");
    assert_eq!(count["epsilon_exact"], "1/2", "{j}");
    assert_eq!(count["sensitivity"], 1.0, "{j}");
    assert_eq!(count["scale"], 2.0, "1/(ε/2): {j}");

    // The halves add up to ε exactly, also when ε/2 is not a short binary fraction.
    let j = json_of(mean("income", "-3", "5", "0.3", "add-remove").arg(fixture("income.csv")));
    let (n, d) = ratio(&j["epsilon_exact"]);
    let (a, b) = ratio(&part(&j, "sum")["epsilon_exact"]);
    let (c, e) = ratio(&part(&j, "count")["epsilon_exact"]);
    assert_eq!((a, b), (c, e), "equal halves: {j}");
    assert_eq!(n * b * e, d * (a * e + c * b), "halves sum to ε: {j}");
    assert_eq!((n, d), (3, 10), "{j}");
    assert_eq!(part(&j, "sum")["sensitivity"], 4.0, "(5 − (−3))/2: {j}");
}

#[test]
fn add_remove_uses_a_noisy_count_never_the_true_n() {
    // Count part at ε/2 = 0.05: scale 20. Five seeds all landing exactly on n = 8 would be a
    // sign the true n was used.
    let counts: Vec<f64> = (1..=5)
        .map(|seed| {
            let mut cmd = seeded(seed);
            cmd.args(["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "0.1"]);
            let j = json_of(cmd.arg(fixture("income.csv")));
            assert!(j.get("rows").is_none(), "{j}");
            let value = part(&j, "count")["value"].as_f64().expect("count part has a value");
            assert_eq!(value.fract(), 0.0, "a noisy count is an integer: {j}");
            value
        })
        .collect();
    assert!(counts.iter().any(|&c| c != 8.0), "{counts:?}");
}

#[test]
fn replace_publishes_n_and_divides_the_sensitivity_by_it() {
    let cases = [
        ("income.csv", "income", "0", "200000", 8, 25000.0),
        ("income.csv", "income", "-3", "5", 8, 1.0),
        ("people.csv", "income", "0", "200000", 200, 1000.0),
    ];
    for (file, col, lower, upper, n, delta) in cases {
        for (eps, e) in [("1", 1.0), ("0.5", 0.5)] {
            let j = json_of(mean(col, lower, upper, eps, "replace").arg(fixture(file)));
            assert_eq!(j["rows"], n, "{file}: {j}");
            assert_eq!(j["sensitivity"], delta, "(U − L)/n, {file} [{lower}, {upper}]: {j}");
            assert_eq!(j["scale"], delta / e, "Δ/ε: {j}");
            assert_eq!(j["neighbours"], "replace", "{j}");
        }
    }
}

#[test]
fn large_epsilon_mean_is_the_hand_computed_clamped_mean() {
    // (L, U, filter, n, true clamped mean). Both units: the noise of the mean is about
    // (U − L)/(n ε) (add-remove: shifted sum of scale (U − L)/ε over a count that is exact here).
    let cases: [(&str, &str, Option<&str>, f64, f64); 4] = [
        ("0", "200000", None, 8.0, 40062.5625),
        ("-3", "5", None, 8.0, 3.375),
        ("0", "200000", Some("region=north"), 3.0, 15333.5),
        ("-3", "5", Some("region=north"), 3.0, 7.0 / 3.0),
    ];
    for (lower, upper, filter, n, truth) in cases {
        for unit in UNITS {
            if filter.is_some() && unit == "replace" {
                continue; // refused: see replace_refuses_where_and_skip
            }
            let mut cmd = mean("income", lower, upper, "1000", unit);
            if let Some(f) = filter {
                cmd.args(["--where", f]);
            }
            let assert = cmd.arg(fixture("income.csv")).assert().success().stderr(contains("protect"));
            let value = one_number(&String::from_utf8_lossy(&assert.get_output().stdout));
            let width = upper.parse::<f64>().unwrap() - lower.parse::<f64>().unwrap();
            let what = format!("[{lower}, {upper}] {filter:?} {unit}");
            assert_near(value, truth, 10.0 * width / (n * 1000.0), &what);
        }
    }
}

#[test]
fn the_release_is_clamped_into_the_bounds_and_says_so() {
    // At ε = 0.001 the noise dwarfs the range, so almost every release is clamped.
    let mut clamped = 0;
    for unit in UNITS {
        for seed in 1..=4 {
            let mut cmd = seeded(seed);
            cmd.args(["mean", "--col", "income", "--lower", "0", "--upper", "200000"]);
            cmd.args(["--eps", "0.001", "--neighbours", unit]).arg(fixture("income.csv"));
            let j = json_of(&mut cmd);
            let value = j["value"].as_f64().unwrap_or_else(|| panic!("{j}"));
            assert!((0.0..=200000.0).contains(&value), "{unit} seed {seed}: {j}");
            if value == 0.0 || value == 200000.0 {
                clamped += 1;
                assert!(
                    j.to_string().contains("clamp"),
                    "post-processing that changes the release is stated: {j}"
                );
            }
        }
    }
    assert!(clamped > 0, "no release was clamped at ε = 0.001");
}

#[test]
fn header_only_file_under_replace_is_refused_and_under_add_remove_stays_in_bounds() {
    fails_with(
        mean("amount", "0", "100", "1", "replace").arg(fixture("header_only.csv")),
        &["header_only.csv", "replace"],
    );
    let text = stdout_of(mean("amount", "0", "100", "1", "add-remove").arg(fixture("header_only.csv")));
    let value = one_number(&text);
    assert!((0.0..=100.0).contains(&value), "{value}");
}

#[test]
fn replace_refuses_where_and_skip() {
    fails_with(
        mean("income", "0", "200000", "1", "replace")
            .args(["--where", "region=north"])
            .arg(fixture("income.csv")),
        &["--where", "replace", "add-remove"],
    );
    fails_with(
        mean("reading", "0", "100", "1", "replace").args(["--invalid", "skip"]).arg(fixture("bad_cells.csv")),
        &["--invalid skip", "replace", "impute"],
    );
}

#[test]
fn invalid_skip_and_impute_give_the_hand_computed_mean() {
    // bad_cells.csv: 10 and 20 are numbers, six cells are not.
    let run = |policy: &str, unit: &str| {
        let mut cmd = mean("reading", "0", "100", "1000", unit);
        cmd.args(["--invalid", policy]).arg(fixture("bad_cells.csv"));
        one_number(&stdout_of(&mut cmd))
    };
    assert_near(run("skip", "add-remove"), 15.0, 10.0 * 100.0 / (2.0 * 1000.0), "skip");
    for unit in UNITS {
        assert_near(run("impute=5", unit), 60.0 / 8.0, 10.0 * 100.0 / (8.0 * 1000.0), unit);
    }
    let j = json_of(
        mean("reading", "0", "100", "1", "replace")
            .args(["--invalid", "impute=5"])
            .arg(fixture("bad_cells.csv")),
    );
    assert_eq!(j["rows"], 8, "imputed rows count in the public n: {j}");
    fails_with(
        mean("reading", "0", "100", "1", "add-remove").arg(fixture("bad_cells.csv")),
        &["bad_cells.csv", "row 2", "reading", "'abc'", "--invalid"],
    );
}

#[test]
fn bounds_come_in_pairs_and_in_order() {
    let mut cmd = dpstat();
    cmd.args(["mean", "--col", "income", "--eps", "1", "--lower", "0"]);
    fails_with(cmd.arg(fixture("income.csv")), &["--lower", "--upper"]);
    fails_with(
        mean("income", "10", "10", "1", "add-remove").arg(fixture("income.csv")),
        &["--lower", "--upper"],
    );
}

#[test]
fn same_seed_same_release_and_different_seeds_differ() {
    for unit in UNITS {
        let run = |seed| {
            let mut cmd = seeded(seed);
            cmd.args(["mean", "--col", "income", "--lower", "0", "--upper", "200000"]);
            stdout_of(cmd.args(["--eps", "1", "--neighbours", unit]).arg(fixture("people.csv")))
        };
        assert_eq!(run(5), run(5), "{unit}");
        assert_ne!(run(1), run(2), "{unit}");
    }
}
