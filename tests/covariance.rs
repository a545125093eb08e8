//! `dpstat covariance` and `dpstat regress`: the real binary on fixtures.

use crate::common;

use common::{dpstat, fails_with, fixture, json_of, seeded, stdout_of};

/// Columns `experience` and `wage` of wages_5k.csv (5 000 rows, wage ≈ 12 + 0.6·experience).
fn wages() -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(fixture("wages_5k.csv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect()
}

/// Population covariance and variance of x of the pairs clamped to [0, 40] × [0, 80].
fn truth(rows: &[(f64, f64)]) -> (f64, f64) {
    let rows: Vec<(f64, f64)> = rows.iter().map(|&(x, y)| (x.clamp(0.0, 40.0), y.clamp(0.0, 80.0))).collect();
    let n = rows.len() as f64;
    let mx = rows.iter().map(|r| r.0).sum::<f64>() / n;
    let my = rows.iter().map(|r| r.1).sum::<f64>() / n;
    let cov = rows.iter().map(|(x, y)| (x - mx) * (y - my)).sum::<f64>() / n;
    let var = rows.iter().map(|(x, _)| (x - mx) * (x - mx)).sum::<f64>() / n;
    (cov, var)
}

fn pair_args(query: &str, neighbours: &str, eps: &str) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = match query {
        "covariance" => ["covariance", "--cols", "experience,wage"].map(Into::into).to_vec(),
        _ => ["regress", "--x", "experience", "--y", "wage"].map(Into::into).to_vec(),
    };
    args.extend(
        ["--lower", "0,0", "--upper", "40,80", "--eps", eps, "--neighbours", neighbours].map(Into::into),
    );
    args.push(fixture("wages_5k.csv").into());
    args
}

fn pair_cmd(seed: u64, query: &str, neighbours: &str, eps: &str) -> assert_cmd::Command {
    let mut cmd = seeded(seed);
    cmd.args(pair_args(query, neighbours, eps));
    cmd
}

/// The stated bound covers the true covariance and slope in at least the stated share of
/// seeded runs, under both units; and it is informative (far below the trivial bound).
#[test]
fn accuracy_bounds_cover_the_truth() {
    let (cov, var) = truth(&wages());
    for query in ["covariance", "regress"] {
        for neighbours in ["add-remove", "replace"] {
            let runs = 100;
            let (mut covered, mut widths) = (0, vec![]);
            let mut args = pair_args(query, neighbours, "1");
            args.extend(["--format".into(), "json".into()]);
            for json in common::seeded_json_values(0, runs, 2, &args) {
                let value = json["value"].as_f64().unwrap();
                let bound = json["accuracy"]["error_bound"].as_f64().expect("a finite bound on 5 000 rows");
                let want = if query == "covariance" { cov } else { cov / var };
                covered += ((value - want).abs() <= bound) as u64;
                widths.push(bound);
                if query == "covariance" {
                    assert!(value.abs() <= 20.0 * 40.0, "clamped into ±h_x·h_y: {value}");
                }
            }
            assert!(covered >= 95, "{query} {neighbours}: covered {covered} of {runs}");
            widths.sort_by(f64::total_cmp);
            let median = widths[widths.len() / 2];
            let informative = if query == "covariance" { cov / 5.0 } else { 0.2 };
            assert!(median < informative, "{query} {neighbours}: median bound {median}");
        }
    }
}

/// At a large ε the releases are the exact covariance and slope of the clamped values.
#[test]
fn large_epsilon_gives_the_truth() {
    let (cov, var) = truth(&wages());
    for (query, want) in [("covariance", cov), ("regress", cov / var)] {
        let json = json_of(&mut pair_cmd(1, query, "add-remove", "1e6"));
        let value = json["value"].as_f64().unwrap();
        assert!((value - want).abs() < 1e-3 * want.abs(), "{query}: {value} vs {want}");
        assert!(json["accuracy"]["error_bound"].as_f64().unwrap() < 1e-2 * want.abs());
    }
}

#[test]
fn parts_split_epsilon_exactly_and_name_both_columns() {
    for (query, unit, names) in [
        ("covariance", "add-remove", &["count", "shifted_sum_x", "shifted_sum_y", "sum_of_products"][..]),
        ("covariance", "replace", &["shifted_sum_x", "shifted_sum_y", "sum_of_products"][..]),
        (
            "regress",
            "add-remove",
            &["count", "shifted_sum_x", "shifted_sum_y", "sum_of_squares_x", "sum_of_products"][..],
        ),
        (
            "regress",
            "replace",
            &["shifted_sum_x", "shifted_sum_y", "sum_of_squares_x", "sum_of_products"][..],
        ),
    ] {
        let json = json_of(&mut pair_cmd(3, query, unit, "0.7"));
        assert_eq!(json["epsilon_exact"], "7/10");
        assert_eq!(json["column"], "experience,wage");
        let parts = json["parts"].as_array().unwrap();
        let got: Vec<&str> = parts.iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(got, names, "{query} {unit}");
        let share = format!("7/{}", 10 * names.len());
        for p in parts {
            assert_eq!(p["epsilon_exact"], share.as_str(), "{query} {unit}: {p}");
        }
        assert_eq!(json["bounds"]["upper"], 40.0);
        assert_eq!(json["bounds_y"]["upper"], 80.0);
        assert_eq!(json["rows"].as_u64(), (unit == "replace").then_some(5000));
        // Sensitivities: h_x = 20, h_y = 40; products 800 (add-remove) or 1600 (replace).
        let delta =
            |name: &str| parts.iter().find(|p| p["name"] == name).unwrap()["sensitivity"].as_f64().unwrap();
        let doubled = if unit == "replace" { 2.0 } else { 1.0 };
        assert_eq!(delta("shifted_sum_x"), 20.0 * doubled);
        assert_eq!(delta("shifted_sum_y"), 40.0 * doubled);
        assert_eq!(delta("sum_of_products"), 800.0 * doubled);
        if query == "regress" {
            assert_eq!(delta("sum_of_squares_x"), 400.0);
        }
    }
}

#[test]
fn text_output_is_one_number() {
    let out = stdout_of(&mut {
        let mut cmd = dpstat();
        cmd.args(["regress", "--x", "experience", "--y", "wage", "--lower", "0,0", "--upper", "40,80"])
            .args(["--eps", "1"])
            .arg(fixture("wages_5k.csv"));
        cmd
    });
    let slope = common::one_number(&out);
    assert!((0.4..0.8).contains(&slope), "{slope}");
}

/// With a cell missing, `--invalid skip` drops its whole row (both columns), as the same file
/// without that row would give; `--invalid error` names the row.
#[test]
fn a_missing_cell_drops_its_row_or_is_an_error() {
    let run = |invalid: &str| {
        let mut cmd = dpstat();
        cmd.args(["covariance", "--cols", "x,y", "--lower", "0,0", "--upper", "10,10", "--eps", "1e6"])
            .args(["--invalid", invalid])
            .arg(fixture("pairs_gap.csv"));
        cmd
    };
    // Rows (1, 2), (2, 4), (4, 8): means 7/3 and 14/3, covariance 2·(14/9)·... = 28/9.
    let json = json_of(&mut run("skip"));
    let value = json["value"].as_f64().unwrap();
    assert!((value - 28.0 / 9.0).abs() < 1e-3, "{value}");
    fails_with(&mut run("error"), &["row 3", "y"]);
}

#[test]
fn by_groups_under_add_remove() {
    let mut cmd = dpstat();
    cmd.args(["covariance", "--cols", "age,income", "--lower", "0,0", "--upper", "100,200000", "--eps", "1"])
        .args(["--by", "urban_rural", "--keys", "1,2"])
        .arg(fixture("people.csv"));
    let json = json_of(&mut cmd);
    assert_eq!(json["accounting"]["composition"], "parallel");
    assert_eq!(json["groups"].as_array().unwrap().len(), 3);
}

#[test]
fn no_header_takes_indices() {
    let mut cmd = dpstat();
    cmd.args([
        "covariance",
        "--cols",
        "2,3",
        "--lower",
        "0,0",
        "--upper",
        "40,80",
        "--eps",
        "1",
        "--no-header",
    ])
    .arg(fixture("wages_5k.csv"))
    .args(["--invalid", "skip"]);
    assert_eq!(json_of(&mut cmd)["column"], "2,3");
}

/// On a few rows at a small ε the noisy variance of x can come out at or below 0: the slope is
/// then meaningless, which a warning says, and its bound is null rather than a number.
#[test]
fn too_few_rows_for_a_slope_are_reported() {
    let mut warned = 0;
    for seed in 0..30 {
        let out = seeded(seed)
            .args(["regress", "--x", "x", "--y", "y", "--lower", "0,0", "--upper", "10,10", "--eps", "0.1"])
            .args(["--format", "json"])
            .arg(fixture("pairs_gap.csv"))
            .args(["--invalid", "skip"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(json["value"].as_f64().is_some_and(f64::is_finite), "{json}");
        // Three rows at ε/5 each: no bound can tell the variance of x from 0.
        assert!(json["accuracy"]["error_bound"].is_null(), "{json}");
        if stderr.contains("the noisy variance of x is not positive") {
            warned += 1;
            assert!(json["post_processing"].to_string().contains("raised to it"), "{json}");
        }
    }
    assert!(warned > 0, "no run had a non-positive noisy variance");
}

#[test]
fn bad_pair_flags() {
    let base = |args: &[&str]| {
        let mut cmd = dpstat();
        cmd.args(args).args(["--eps", "1"]).arg(fixture("wages_5k.csv"));
        cmd
    };
    fails_with(
        &mut base(&["covariance", "--cols", "experience", "--lower", "0,0", "--upper", "40,80"]),
        &["--cols"],
    );
    fails_with(
        &mut base(&["covariance", "--cols", "experience,wage", "--lower", "0", "--upper", "40,80"]),
        &["--lower"],
    );
    fails_with(
        &mut base(&["covariance", "--cols", "experience,wage"]),
        &["clamping bounds for both columns", "--lower LX,LY"],
    );
    fails_with(
        &mut base(&["covariance", "--cols", "experience,wage", "--lower", "0,0"]),
        &["--upper UX,UY is missing"],
    );
    fails_with(
        &mut base(&["covariance", "--cols", "experience,wagez", "--lower", "0,0", "--upper", "40,80"]),
        &["no column 'wagez' (--cols)"],
    );
    fails_with(
        &mut base(&["regress", "--x", "experience", "--y", "wagez", "--lower", "0,0", "--upper", "40,80"]),
        &["(--y)"],
    );
    fails_with(
        &mut base(&["regress", "--x", "experience", "--y", "wage", "--lower", "0,50", "--upper", "40,10"]),
        &["--lower"],
    );
    fails_with(
        &mut base(&[
            "regress",
            "--x",
            "experience",
            "--y",
            "wage",
            "--lower",
            "0,0",
            "--upper",
            "40,80",
            "--neighbours",
            "replace",
            "--where",
            "id=3",
        ]),
        &["--where with --neighbours replace"],
    );
    fails_with(
        &mut base(&[
            "covariance",
            "--cols",
            "experience,wage",
            "--lower",
            "0,0",
            "--upper",
            "40,80",
            "--neighbours",
            "replace",
            "--by",
            "id",
            "--keys",
            "1",
        ]),
        &["--by with --neighbours replace"],
    );
    let mut cmd = dpstat();
    cmd.args([
        "covariance",
        "--cols",
        "id,amount",
        "--lower",
        "0,0",
        "--upper",
        "1,1",
        "--eps",
        "1",
        "--neighbours",
        "replace",
    ])
    .arg(fixture("header_only.csv"));
    fails_with(&mut cmd, &["at least one row"]);
}
