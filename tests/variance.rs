//! `dpstat variance`: the real binary on fixtures.

use crate::common;

use common::{dpstat, fails_with, fixture, json_of, seeded, stdout_of};

/// The values of column `x` of compose_values.csv (some far outside [0, 100], ±0, subnormals,
/// ±1e308, 2^53+1).
fn values() -> Vec<f64> {
    let text = std::fs::read_to_string(fixture("compose_values.csv")).unwrap();
    text.lines().skip(1).map(|l| l.split(',').nth(2).unwrap().parse().unwrap()).collect()
}

/// Population variance of the values clamped to [lower, upper].
fn clamped_variance(values: &[f64], lower: f64, upper: f64) -> f64 {
    let xs: Vec<f64> = values.iter().map(|x| x.clamp(lower, upper)).collect();
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n
}

fn variance_cmd(seed: u64, neighbours: &str, eps: &str) -> assert_cmd::Command {
    let mut cmd = seeded(seed);
    cmd.args(["variance", "--col", "x", "--lower", "0", "--upper", "100", "--eps", eps])
        .args(["--neighbours", neighbours])
        .arg(fixture("compose_values.csv"));
    cmd
}

/// The stated accuracy bound covers the true variance of the clamped values in at least the
/// stated share of seeded runs, under both privacy units and two confidence levels.
#[test]
fn accuracy_bound_covers_the_true_variance() {
    let truth = clamped_variance(&values(), 0.0, 100.0);
    for (neighbours, confidence, eps) in [("add-remove", 0.95, "1"), ("replace", 0.8, "0.5")] {
        let runs = 150usize;
        let mut covered = 0;
        let mut widths = vec![];
        let mut args: Vec<String> =
            ["variance", "--col", "x", "--lower", "0", "--upper", "100", "--eps", eps]
                .map(String::from)
                .to_vec();
        args.extend(["--neighbours", neighbours, "--confidence", &confidence.to_string()].map(String::from));
        args.extend([fixture("compose_values.csv").display().to_string(), "--format".into(), "json".into()]);
        for json in common::seeded_json_values(0, runs, 2, &args) {
            let value = json["value"].as_f64().unwrap();
            let bound = json["accuracy"]["error_bound"].as_f64().unwrap();
            assert!((0.0..=2500.0).contains(&value), "clamped into [0, h²]: {value}");
            assert!(bound <= 2500.0, "the bound never exceeds h²: {bound}");
            widths.push(bound);
            if (value - truth).abs() <= bound {
                covered += 1;
            }
        }
        let needed = (confidence * runs as f64).floor() as u64;
        assert!(
            covered >= needed,
            "{neighbours}: covered {covered} of {runs}, need {needed} (truth {truth})"
        );
        // Not vacuous: the bound is well below the trivial h² = 2500 on 300 rows.
        let median = {
            widths.sort_by(f64::total_cmp);
            widths[widths.len() / 2]
        };
        assert!(median < 1500.0, "{neighbours}: median bound {median} is close to vacuous");
    }
}

/// The parts, their ε and sensitivities as the doc comment states them.
#[test]
fn parts_epsilon_and_sensitivities() {
    let json = json_of(&mut variance_cmd(1, "add-remove", "0.3"));
    assert_eq!(json["query"], "variance");
    assert_eq!(json["epsilon_exact"], "3/10");
    let parts = json["parts"].as_array().unwrap();
    let names: Vec<&str> = parts.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["count", "shifted_sum", "sum_of_squares"]);
    for p in parts {
        assert_eq!(p["epsilon_exact"], "1/10", "three exact thirds");
    }
    // h = 50: count 1, shifted sum h, squares h².
    let sens: Vec<f64> = parts.iter().map(|p| p["sensitivity"].as_f64().unwrap()).collect();
    assert_eq!(sens, [1.0, 50.0, 2500.0]);
    assert!(json.get("rows").is_none(), "n is private under add-remove");

    let json = json_of(&mut variance_cmd(1, "replace", "0.3"));
    let parts = json["parts"].as_array().unwrap();
    let names: Vec<&str> = parts.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["shifted_sum", "sum_of_squares"]);
    for p in parts {
        assert_eq!(p["epsilon_exact"], "3/20", "two exact halves");
    }
    // Replace: shifted sum 2h = U − L, squares h².
    let sens: Vec<f64> = parts.iter().map(|p| p["sensitivity"].as_f64().unwrap()).collect();
    assert_eq!(sens, [100.0, 2500.0]);
    assert_eq!(json["rows"], 300);
    // Each part's value is a multiple of its own grid.
    for p in parts {
        let spacing = p["grid"]["spacing"].as_f64().unwrap();
        let units: f64 = p["value_units"].as_str().unwrap().parse().unwrap();
        assert_eq!(units * spacing, p["value"].as_f64().unwrap());
    }
}

#[test]
fn text_output_is_one_number_and_the_clamp_is_stated() {
    let text = stdout_of(&mut variance_cmd(3, "add-remove", "1"));
    assert_eq!(text.lines().count(), 1);
    let v: f64 = text.trim().parse().unwrap();
    assert!((0.0..=2500.0).contains(&v));
    // At a tiny ε the noise dominates and the release must be clamped into [0, h²].
    let clamped = (0..20).any(|seed| {
        let json = json_of(&mut variance_cmd(seed, "add-remove", "0.001"));
        json["post_processing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("clamped into [0, 2500]"))
    });
    assert!(clamped, "a clamp note appears when the clamp changes the release");
}

#[test]
fn refusals_exit_2_with_empty_stdout() {
    fails_with(
        dpstat()
            .args(["variance", "--col", "x", "--lower", "0", "--eps", "1"])
            .arg(fixture("compose_values.csv")),
        &["variance needs public clamping bounds"],
    );
    fails_with(
        dpstat()
            .args(["variance", "--col", "x", "--lower", "-1e300", "--upper", "1e300", "--eps", "1"])
            .arg(fixture("compose_values.csv")),
        &["too wide for a variance"],
    );
    fails_with(
        dpstat()
            .args(["variance", "--col", "x", "--lower", "0", "--upper", "1", "--eps", "1e12"])
            .arg(fixture("compose_values.csv")),
        &["2^62"],
    );
    fails_with(
        dpstat()
            .args(["variance", "--col", "x", "--lower", "0", "--upper", "1", "--eps", "1"])
            .args(["--neighbours", "replace", "--where", "grp=a"])
            .arg(fixture("compose_values.csv")),
        &["--where with --neighbours replace"],
    );
    fails_with(
        dpstat()
            .args(["variance", "--col", "x", "--lower", "0", "--upper", "1", "--eps", "1"])
            .args(["--neighbours", "replace", "--invalid", "skip"])
            .arg(fixture("compose_values.csv")),
        &["--invalid skip"],
    );
    fails_with(
        dpstat()
            .args([
                "variance",
                "--col",
                "x",
                "--lower",
                "0",
                "--upper",
                "1",
                "--eps",
                "1",
                "--neighbours",
                "replace",
            ])
            .write_stdin("x\n"),
        &["n = 0 has no variance"],
    );
}

/// An empty dataset under add-remove releases noise (clamped), never an error that reveals n.
#[test]
fn empty_input_under_add_remove_releases() {
    let text = stdout_of(
        dpstat()
            .args(["variance", "--col", "x", "--lower", "0", "--upper", "10", "--eps", "1"])
            .write_stdin("x\n"),
    );
    let v: f64 = text.trim().parse().unwrap();
    assert!((0.0..=25.0).contains(&v), "{v}");
}
