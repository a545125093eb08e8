//! Opt-in approximate DP through the binary (docs/DESIGN.md §9): the flags that choose Gaussian
//! noise or keys found in the data and every combination they refuse, the cap on distinct keys,
//! the ledger's currencies (exit 3 before any data is read when the budget cannot pay, and
//! `dpstat budget` stating ρ and (ε, δ)), and `dpstat plan`'s comparison.

mod common;

use std::fs;
use std::path::Path;

use common::{dpstat, fails_with, fixture, json_of, stdout_of, unseeded};
use serde_json::Value;
use tempfile::TempDir;

fn people() -> std::path::PathBuf {
    fixture("people.csv")
}

#[test]
fn flag_combinations_that_name_no_single_guarantee_are_refused() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["count", "--noise", "gaussian", "--eps", "1"], &["--noise gaussian needs --delta"]),
        (&["count", "--noise", "gaussian", "--rho", "0.1"], &["--noise gaussian needs --delta"]),
        (&["count", "--rho", "0.1"], &["--rho is the budget of --noise gaussian"]),
        (&["count", "--eps", "1", "--delta", "1e-6"], &["--delta is for --noise gaussian or --discover"]),
        (&["count", "--by", "region", "--discover", "--eps", "1"], &["--discover needs --delta"]),
        (&["count", "--discover", "--eps", "1", "--delta", "1e-6"], &["add --by COL"]),
        (
            &[
                "count",
                "--by",
                "region",
                "--discover",
                "--noise",
                "gaussian",
                "--eps",
                "1",
                "--delta",
                "1e-6",
            ],
            &["not zCDP"],
        ),
        (
            &["count", "--by", "region", "--keys", "north", "--discover", "--eps", "1", "--delta", "1e-6"],
            &["give one of them"],
        ),
        (&["count", "--by", "region", "--eps", "1"], &["--keys"]),
        (
            &["median", "--col", "age", "--noise", "gaussian", "--eps", "1", "--delta", "1e-6"],
            &["median has no Gaussian form"],
        ),
        (
            &["sum", "--col", "income", "--noise", "gaussian", "--eps", "1", "--delta", "1e-6"],
            &["no Gaussian form"],
        ),
        (
            &[
                "sum",
                "--col",
                "income",
                "--lower",
                "0",
                "--upper",
                "1",
                "--by",
                "region",
                "--discover",
                "--eps",
                "1",
                "--delta",
                "1e-6",
                "--neighbours",
                "replace",
            ],
            &["covers count only"],
        ),
        (
            &[
                "histogram",
                "--col",
                "region",
                "--categories",
                "a",
                "--discover",
                "--eps",
                "1",
                "--delta",
                "1e-6",
            ],
            &["leave out --categories"],
        ),
        (
            &["histogram", "--col", "region", "--discover", "--normalize", "--eps", "1", "--delta", "1e-6"],
            &["--normalize"],
        ),
        (
            &["count", "--noise", "gaussian", "--eps", "1e-9", "--delta", "1e-300"],
            &["--eps 0.000000001 at --delta", "raise --eps or --delta"],
        ),
        (
            &["count", "--by", "region", "--discover", "--eps", "1", "--delta", "1e-6", "--max-keys", "0"],
            &["--max-keys"],
        ),
        (&["count", "--noise", "gaussian", "--delta", "1", "--rho", "1"], &["delta must be less than 1"]),
    ];
    for (args, needles) in cases {
        fails_with(dpstat().args(*args).arg(people()), needles);
    }
}

/// A Gaussian release states what it is: ρ exactly, the (ε, δ) it converts to, σ and Δ₂, and its
/// accuracy; with --eps, ρ is the largest that meets (ε, δ).
#[test]
fn a_gaussian_release_states_rho_sigma_and_its_epsilon_delta() {
    let json = json_of(
        dpstat()
            .args(["sum", "--col", "age", "--lower", "0", "--upper", "100"])
            .args(["--noise", "gaussian", "--eps", "1", "--delta", "1e-6"])
            .arg(people()),
    );
    assert_eq!(json["mechanism"], "discrete-gaussian");
    assert_eq!(json["delta_exact"], "1/1000000");
    let (eps, rho) = (json["epsilon"].as_f64().unwrap(), json["rho"].as_f64().unwrap());
    assert!(eps <= 1.0 && eps > 0.999, "ε(ρ, δ) is at most the ε asked for: {eps}");
    assert!((rho - 0.0243).abs() < 1e-4, "{rho}");
    // σ = Δ₂/√(2ρ) = 100/√(2ρ).
    let sigma = json["sigma"].as_f64().unwrap();
    assert!((sigma - 100.0 / (2.0 * rho).sqrt()).abs() < 1e-9 * sigma, "{sigma}");
    assert_eq!(json["l2_sensitivity"], 100.0);
    assert!(json["sensitivity"].is_null() && json["scale"].is_null());
    let bound = json["accuracy"]["error_bound"].as_f64().unwrap();
    assert!(bound > 1.95 * sigma && bound < 1.97 * sigma, "the normal quantile at 95%: {bound} vs σ {sigma}");
}

/// Keys found in the data: released sorted, with the threshold and δ, and counts at or above it;
/// a key held by one row at a strict δ never shows.
#[test]
fn discovered_keys_are_sorted_and_state_the_threshold() {
    let json = json_of(
        dpstat()
            .args(["histogram", "--col", "region", "--discover", "--eps", "1", "--delta", "1e-7"])
            .arg(people()),
    );
    // The selection runs at 9/10 of ε and δ (a tenth pays for the key cap's test): τ at
    // (0.9, 9e-8) is 1 + ⌈(ln(1/9e-8) − ln(1 + e^-0.9))/0.9⌉ = 1 + ⌈17.76⌉ = 19.
    assert_eq!(json["discovery"]["threshold"], 19);
    assert_eq!(json["discovery"]["delta_exact"], "9/100000000");
    assert_eq!(json["discovery"]["key_cap"]["epsilon_exact"], "1/10");
    assert_eq!(json["discovery"]["key_cap"]["delta_exact"], "1/100000000");
    assert_eq!(json["discovery"]["key_cap"]["margin"], 185);
    let keys: Vec<&str> =
        json["bins"].as_array().unwrap().iter().map(|b| b["bin"].as_str().unwrap()).collect();
    assert_eq!(keys, ["east", "north", "south", "west"]);
    assert_eq!(json["accounting"]["epsilon_exact"], "1/1");
    let dir = TempDir::new().unwrap();
    let csv = dir.path().join("keys.csv");
    let mut text = String::from("city\n");
    for _ in 0..60 {
        text.push_str("big\n");
    }
    text.push_str("lonely\n");
    fs::write(&csv, text).unwrap();
    // Whether a chart is drawn never depends on how many keys were released, none included.
    const NONE_PASS: [&str; 5] = ["--discover", "--eps", "0.01", "--delta", "1e-9"];
    let none = stdout_of(
        dpstat().args(["count", "--by", "region"]).args(NONE_PASS).args(["--format", "chart"]).arg(people()),
    );
    assert!(none.starts_with("count by region: no key reached the threshold"), "{none}");
    let json = json_of(dpstat().args(["histogram", "--col", "region"]).args(NONE_PASS).arg(people()));
    assert_eq!(json["discovery"]["keys_released"], 0);
    stdout_of(
        dpstat()
            .args(["histogram", "--col", "region"])
            .args(NONE_PASS)
            .args(["--format", "chart"])
            .arg(people()),
    );
    for seed in 0..40 {
        let out = stdout_of(
            common::seeded(seed)
                .args(["count", "--by", "city", "--discover", "--eps", "1", "--delta", "1e-7"])
                .arg(&csv),
        );
        assert!(out.starts_with("key,value\nbig,"), "{out}");
        assert!(!out.contains("lonely"), "seed {seed}: {out}");
    }
}

/// The key cap decides nothing the rows could answer exactly (issue 24, item 1): a cap the noisy
/// test cannot pass is refused before anything is read; more keys than the cap is a withheld
/// release (exit 5, a line naming only flags, nothing on stdout) that a ledger charges and
/// records as released; the review's membership attack (`--where 'k in …' --max-keys 1`) is
/// refused before the charge, and a roomy cap gives the two neighbours the same exit code; a key
/// longer than 256 bytes counts under its first 256 bytes instead of stopping the run.
#[test]
fn the_cap_on_distinct_keys_is_part_of_the_release() {
    let dir = TempDir::new().unwrap();
    let write = |name: &str, keys: &mut dyn Iterator<Item = String>| {
        let path = dir.path().join(name);
        let text: String = std::iter::once("k\n".to_string()).chain(keys.map(|k| format!("{k}\n"))).collect();
        fs::write(&path, text).unwrap();
        path
    };
    let many = write("many.csv", &mut (0..50).map(|i| format!("key{i}")));
    let without_17 = write("without17.csv", &mut (0..50).filter(|&i| i != 17).map(|i| format!("key{i}")));
    // ε = 10, δ = 1e-6: the test has ε_c = 1, δ_c = 1e-7, m = 17.
    let roomy = ["count", "--by", "k", "--discover", "--eps", "10", "--delta", "1e-6"];
    let ledger = dir.path().join("ledger.jsonl");
    let budget = ["--budget", "100", "--budget-delta", "1e-3", "--ledger"];
    // The review's attack: refused before anything is read or charged.
    let attack = [&roomy[..], &["--where", "k in key17,key18", "--max-keys", "1"]].concat();
    fails_with(dpstat().args(&attack).arg(&many), &["--max-keys 1", "must exceed 17"]);
    let out = unseeded().args(&attack).args(budget).arg(&ledger).arg(&many).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!ledger.exists() || fs::read_to_string(&ledger).unwrap().lines().all(|l| !l.contains("charge")));
    // With a cap that has room, both neighbours release (two keys, far below 40 − 17).
    let fair = [&roomy[..], &["--where", "k in key17,key18", "--max-keys", "40"]].concat();
    for data in [&many, &without_17] {
        let out = unseeded().args(&fair).args(budget).arg(&ledger).arg(data).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // 50 keys over a cap of 40: withheld, whatever the seed, without naming a key.
    let over = [&roomy[..], &["--max-keys", "40"]].concat();
    for seed in 0..3 {
        let out = common::seeded(seed).args(&over).arg(&many).output().unwrap();
        assert_eq!(out.status.code(), Some(5));
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.lines().find(|l| !l.contains("INSECURE")).unwrap();
        assert!(
            line.starts_with("dpstat: ") && line.contains("--max-keys 40") && !line.contains("key1"),
            "{line}"
        );
    }
    let out = unseeded().args(&over).args(budget).arg(&ledger).arg(&many).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    let listing = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    assert!(!listing.contains("charged, not released"), "a withheld release is a release: {listing}");
    // A memory cap too large for the fold is still refused before anything is read.
    let huge = [&roomy[..], &["--max-keys", "10000000"]].concat();
    fails_with(dpstat().args(&huge).arg(&many), &["MiB", "more than the"]);
    // One 300-byte key among short ones: no stop; it counts under its first 256 bytes.
    let long = "L".repeat(300);
    let mixed =
        write("long.csv", &mut (0..60).map(|i| if i % 2 == 0 { long.clone() } else { "short".into() }));
    let out = stdout_of(dpstat().args(roomy).args(["--max-keys", "100"]).arg(&mixed));
    assert!(out.contains(&format!("{},", "L".repeat(256))) && !out.contains(&"L".repeat(257)), "{out}");
}

fn ledger_run(ledger: &Path, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = unseeded();
    cmd.args(args).arg("--ledger").arg(ledger).arg(people());
    cmd
}

/// The ledger's currencies end to end: a ρ charge needs a budget δ (exit 3, nothing read or
/// written), composes with pure charges in ρ, and `dpstat budget` states the spend in ρ and as
/// (ε, δ); (ε, δ) charges of keys found in the data cannot join a ρ history.
#[test]
fn the_ledger_accounts_in_rho_and_refuses_what_it_cannot_compose() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let gaussian = ["count", "--noise", "gaussian", "--rho", "0.015", "--delta", "1e-6"];
    stdout_of(&mut ledger_run(&ledger, &["count", "--eps", "0.1", "--budget", "1"]));
    let before = fs::read(&ledger).unwrap();
    let out = ledger_run(&ledger, &gaussian).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--budget-delta"));
    assert!(out.stdout.is_empty());
    assert_eq!(fs::read(&ledger).unwrap(), before, "nothing written");
    let mut with_delta = gaussian.to_vec();
    with_delta.extend(["--budget", "1", "--budget-delta", "1e-6", "--change-budget"]);
    stdout_of(&mut ledger_run(&ledger, &with_delta));
    // ρ of the history: 0.1²/2 + 0.015 = 0.02, about (0.9, 1e-6)-DP: another 0.015 is too much.
    let out = ledger_run(&ledger, &gaussian).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("budget exhausted"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out =
        ledger_run(&ledger, &["count", "--by", "region", "--discover", "--eps", "0.01", "--delta", "1e-9"])
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot share a budget"));
    let text = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    assert!(text.contains("budget     1 with delta 0.000001"), "{text}");
    assert!(text.contains("every release together is rho 0.02-zCDP"), "{text}");
    assert!(text.contains("rho 0.015") && text.contains("eps 0.1"), "{text}");
    let json: Value = serde_json::from_str(&stdout_of(
        unseeded().args(["budget", "--format", "json", "--ledger"]).arg(&ledger),
    ))
    .unwrap();
    let d = &json["datasets"][0];
    assert_eq!(
        (d["spent_rho_exact"].as_str(), d["spent_delta_exact"].as_str()),
        (Some("1/50"), Some("1/1000000"))
    );
    let spent = d["spent"].as_f64().unwrap();
    let rho = num_rational::BigRational::new(1.into(), 50.into());
    let want = dpstat::privacy::zcdp::epsilon_for(&rho, &"1e-6".parse().unwrap());
    assert_eq!(spent, dpstat::numeric::exact::rational_to_f64_up(&want), "the conversion at the budget's δ");
    assert!(spent > 0.85 && spent < 0.95, "ε(0.02, 1e-6) ≈ 0.9: {spent}");
    assert_eq!(d["releases"][1]["rho"], "3/200");
}

#[test]
fn plan_compares_laplace_and_gaussian() {
    let text = stdout_of(dpstat().args(["plan", "count", "--eps", "1", "--delta", "1e-6"]));
    assert!(text.contains("compare      at (epsilon 1, delta 0.000001): laplace ±3, gaussian ±9"), "{text}");
    assert!(text.contains("laplace gives less error"), "{text}");
    let json = json_of(dpstat().args([
        "plan",
        "histogram",
        "--bins",
        "4",
        "--lower",
        "0",
        "--upper",
        "1",
        "--noise",
        "gaussian",
        "--eps",
        "1",
        "--delta",
        "1e-6",
    ]));
    assert_eq!(json["mechanism"], "discrete-gaussian");
    assert_eq!(json["comparison"]["less_error"], "laplace");
    assert_eq!(json["error_bound"], Value::Null, "the bound is under accuracy");
    assert_eq!(json["comparison"]["gaussian_error_bound"], json["accuracy"]["error_bound"]);
    fails_with(dpstat().args(["plan", "count", "--noise", "gaussian", "--eps", "1"]), &["--delta"]);
    let dir = TempDir::new().unwrap();
    let workload = dir.path().join("w.toml");
    let queries: String =
        (0..30).map(|i| format!("[[query]]\nname = \"q{i}\"\nkind = \"count\"\n")).collect();
    fs::write(&workload, format!("epsilon = 1\n{queries}")).unwrap();
    let text = stdout_of(dpstat().args(["plan", "run"]).arg(&workload).args(["--delta", "1e-6"]));
    assert!(
        text.contains("verdict     gaussian gives less error for every one of the 30 planned queries"),
        "{text}"
    );
}
