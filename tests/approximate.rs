//! Opt-in approximate DP through the binary (docs/DESIGN.md §9): the flags that choose Gaussian
//! noise or keys found in the data and every combination they refuse, the cap on distinct keys,
//! the ledger's currencies (exit 3 before any data is read when the budget cannot pay, and
//! `dpstat budget` stating ρ and (ε, δ)), and `dpstat plan`'s comparison.

use crate::common;

use std::fs;
use std::path::Path;

use common::{dpstat, fails_with, fixture, json_of, stdout_of, unseeded};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, Zero};
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
/// (ε, δ); (ε, δ) charges of keys found in the data cannot join a ρ history. The budget's δ is
/// all for zCDP (`--budget-delta-for zcdp`), so the Rényi rule runs at δ_total.
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
    with_delta.extend([
        "--budget",
        "1",
        "--budget-delta",
        "1e-6",
        "--budget-delta-for",
        "zcdp",
        "--change-budget",
    ]);
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
    assert!(common::the_error(&String::from_utf8_lossy(&out.stderr)).contains("cannot share a budget"));
    let text = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    assert!(text.contains("budget     1 with delta 0.000001, all for zCDP releases"), "{text}");
    // At the budget's order α* = 23: min(0.1, 23·0.1²/2) + 23·0.015 = 0.445.
    assert!(text.contains("Renyi divergence 0.445 at order 23 (the budget allows 0.55"), "{text}");
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
    assert_eq!(
        (d["renyi_order_exact"].as_str(), d["spent_renyi_exact"].as_str()),
        (Some("23/1"), Some("89/200"))
    );
    let spent = exact(&d["spent_exact"]);
    check_conversion(&spent, &ratio(89, 200), &ratio(23, 1), &ratio(1, 1_000_000));
    assert_eq!(d["spent"].as_f64().unwrap(), dpstat::numeric::exact::rational_to_f64_up(&spent));
    let spent = d["spent"].as_f64().unwrap();
    assert!(spent > 0.85 && spent < 0.9, "0.445 + (1 − B) ≈ 0.886: {spent}");
    assert_eq!(d["releases"][1]["rho"], "3/200");
}

fn ratio(n: i64, d: i64) -> BigRational {
    BigRational::new(BigInt::from(n), BigInt::from(d))
}

fn exact(v: &Value) -> BigRational {
    let (n, d) = v.as_str().unwrap().split_once('/').unwrap();
    BigRational::new(n.parse().unwrap(), d.parse().unwrap())
}

/// ln x between two rationals 2^-200 apart, by the Mercator series (not the atanh series the
/// crate uses): x = 2^k·m, m in [3/4, 3/2), ln m = Σ (−1)^(n+1)(m − 1)^n/n, ln 2 = Σ 1/(n·2^n).
fn ln_between(x: &BigRational) -> (BigRational, BigRational) {
    let (mut m, mut k) = (x.clone(), 0i64);
    while m >= ratio(3, 2) {
        m /= BigInt::from(2);
        k += 1;
    }
    while m < ratio(3, 4) {
        m *= BigInt::from(2);
        k -= 1;
    }
    let small = BigRational::new(BigInt::one(), BigInt::one() << 208);
    // Returns the partial sum and a bound on the tail's size, 2·|u|^n/n for |u| <= 1/2.
    let series = |u: &BigRational, alternating: bool| {
        let (mut sum, mut power, mut n) = (BigRational::zero(), u.clone(), 1i64);
        loop {
            let t = &power / BigInt::from(n);
            sum += if alternating && n % 2 == 0 { -t } else { t };
            power *= u;
            n += 1;
            let tail = power.abs() * ratio(2, n);
            if tail < small {
                return (sum, tail);
            }
        }
    };
    let (ln2, t2) = series(&ratio(1, 2), false);
    let (lnm, tm) = series(&(m - BigRational::one()), true);
    let k = BigRational::from_integer(k.into());
    let (lo2, hi2) = (ln2.clone(), &ln2 + &t2);
    let (k_lo, k_hi) = if k.is_negative() { (&k * &hi2, &k * &lo2) } else { (&k * &lo2, &k * &hi2) };
    (k_lo + &lnm - &tm, k_hi + &lnm + &tm)
}

/// A printed spend is never below the exact CKS 2020 Cor. 13 conversion of RDP value r at
/// order α and δ, r + (ln(1/δ) + (α−1)ln(α−1) − α ln α)/(α−1), computed here at 200 bits, and
/// is within 2^-60 relative above it (its 64-bit rounding up).
fn check_conversion(spent: &BigRational, r: &BigRational, alpha: &BigRational, delta: &BigRational) {
    let m = alpha - BigRational::one();
    let (l, lm, la) = (ln_between(&delta.recip()), ln_between(&m), ln_between(alpha));
    // α − 1 > 0 and α > 0: each end of the bracket from the matching ends of the logarithms.
    let exact_lo = r + (&l.0 + &m * &lm.0 - alpha * &la.1) / &m;
    let exact_hi = r + (&l.1 + &m * &lm.1 - alpha * &la.0) / &m;
    assert!(spent >= &exact_lo, "{spent} below the exact conversion");
    let slack = exact_hi * (BigRational::one() + BigRational::new(BigInt::one(), BigInt::one() << 60));
    assert!(spent <= &slack, "{spent} far above the exact conversion");
}

/// Issue 24, item 3: under (1.3, 1e-6) a pure ε 0.5 release and then a ρ 0.01 one. The zCDP rule
/// counted the pure one as ρ 0.125 and refused the second ((2.52, 1e-6)). At the budget's order
/// α* = 17 the pure one counts min(0.5, 17·0.125) = 0.5: R = 0.67 <= B ≈ 0.674, admitted, and
/// the spend is R converted at α* (≈ 1.296: above the 1.12 of plain sequential composition,
/// since α* is fixed by the budget, not chosen for this history). A further ρ 0.001 is refused.
/// All of the budget's δ is for zCDP (`--budget-delta-for zcdp`).
#[test]
fn a_pure_release_next_to_gaussian_ones_counts_at_the_budget_order() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let budget = ["--budget", "1.3", "--budget-delta", "1e-6", "--budget-delta-for", "zcdp"];
    let mut first = vec!["count", "--eps", "0.5"];
    first.extend(budget);
    stdout_of(&mut ledger_run(&ledger, &first));
    let gaussian = ["count", "--noise", "gaussian", "--rho", "0.01", "--delta", "1e-6", "--format", "json"];
    let release: Value = serde_json::from_str(&stdout_of(&mut ledger_run(&ledger, &gaussian))).unwrap();
    let b = &release["budget"];
    assert_eq!(
        (b["renyi_order_exact"].as_str(), b["spent_renyi_exact"].as_str(), b["spent_rho_exact"].as_str()),
        (Some("17/1"), Some("67/100"), Some("27/200"))
    );
    let (alpha, r, delta) = (ratio(17, 1), ratio(67, 100), ratio(1, 1_000_000));
    let spent = exact(&b["spent_exact"]);
    check_conversion(&spent, &r, &alpha, &delta);
    // B: the largest R whose conversion at 17 is at most 1.3; R sits just below it.
    let limit = exact(&b["total_renyi_exact"]);
    assert!(limit >= r && limit < ratio(68, 100), "{limit}");
    let spent = b["spent"].as_f64().unwrap();
    assert!(spent > 1.12 && spent <= 1.3, "{spent}");
    assert!((b["remaining"].as_f64().unwrap() - (1.3 - spent)).abs() < 1e-12);
    // The same numbers from `dpstat budget`, as text and JSON.
    let text = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    assert!(text.contains("budget     1.3 with delta 0.000001"), "{text}");
    assert!(text.contains(": Renyi divergence 0.67 at order 17 (the budget allows 0.674"), "{text}");
    // The text rounds the spend up to 9 decimals.
    let shown: f64 = text.split("spent      ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(shown >= spent && shown < spent + 1e-9, "{shown} for {spent}");
    let json: Value = serde_json::from_str(&stdout_of(
        unseeded().args(["budget", "--format", "json", "--ledger"]).arg(&ledger),
    ))
    .unwrap();
    let d = &json["datasets"][0];
    for key in ["spent_exact", "renyi_order_exact", "spent_renyi_exact", "total_renyi_exact"] {
        assert_eq!(d[key], b[key], "{key}");
    }
    // R would be 0.67 + 17·0.001 = 0.687 > B: refused before any data is read, nothing written.
    let before = fs::read(&ledger).unwrap();
    let out = ledger_run(&ledger, &["count", "--noise", "gaussian", "--rho", "0.001", "--delta", "1e-6"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Renyi divergence at order 17 is 0.687, above the 0.674"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(fs::read(&ledger).unwrap(), before);
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

/// Exit 3, nothing on stdout and nothing written; the refusal on stderr.
fn refused(ledger: &Path, args: &[&str]) -> String {
    let before = fs::read(ledger).unwrap();
    let out = ledger_run(ledger, args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(fs::read(ledger).unwrap(), before, "a refusal writes nothing");
    common::the_error(&stderr)
}

/// Issue 35, item 3: a budget's δ has a use fixed with it (`--budget-delta-for`), so that after
/// pure releases the analyst cannot choose between a ρ and an (ε, δ) continuation that each
/// use all of δ. `thresholds` gives all of δ to keys found in the data and refuses Gaussian
/// noise, `zcdp` the reverse; changing the use needs --change-budget; the use needs a δ beside
/// it; `dpstat budget` states it (the split case: tests/accounting.rs).
#[test]
fn the_use_of_the_budget_delta_is_fixed_with_it() {
    let dir = TempDir::new().unwrap();
    let budget =
        |usage: &'static str| ["--budget", "1", "--budget-delta", "1e-6", "--budget-delta-for", usage];
    let count = ["count", "--eps", "0.1"];
    let gaussian = ["count", "--noise", "gaussian", "--rho", "0.001", "--delta", "1e-6"];
    let discover = ["count", "--by", "region", "--discover", "--eps", "0.1", "--delta", "1e-6"];
    let unused = dir.path().join("unused.jsonl");
    fails_with(
        &mut ledger_run(&unused, &["count", "--eps", "0.1", "--budget", "1", "--budget-delta-for", "zcdp"]),
        &["--budget-delta-for", "--budget-delta D"],
    );
    fails_with(
        unseeded().args(["count", "--eps", "0.1", "--budget-delta-for", "split"]).arg(people()),
        &["--budget-delta-for needs a ledger"],
    );
    fails_with(
        &mut ledger_run(&unused, &[&count[..], &budget("gaussian")].concat()),
        &["zcdp", "thresholds"],
    );
    assert!(!unused.exists());

    let thresholds = dir.path().join("thresholds.jsonl");
    stdout_of(&mut ledger_run(&thresholds, &[&count[..], &budget("thresholds")].concat()));
    assert!(refused(&thresholds, &gaussian)
        .contains("all for keys found in the data (--budget-delta-for thresholds)"));
    stdout_of(&mut ledger_run(&thresholds, &discover));
    fails_with(
        &mut ledger_run(&thresholds, &[&count[..], &budget("zcdp")].concat()),
        &["(for thresholds)", "--change-budget"],
    );

    let zcdp = dir.path().join("zcdp.jsonl");
    stdout_of(&mut ledger_run(&zcdp, &[&count[..], &budget("zcdp")].concat()));
    assert!(refused(&zcdp, &discover).contains("all for zCDP releases (--budget-delta-for zcdp)"));
    stdout_of(&mut ledger_run(&zcdp, &gaussian));
    // The recorded use stays when later runs give the budget without it.
    stdout_of(&mut ledger_run(&zcdp, &[&count[..], &["--budget", "1", "--budget-delta", "1e-6"]].concat()));

    let text = stdout_of(unseeded().args(["budget", "--ledger"]).arg(&thresholds));
    assert!(
        text.contains("budget     1 with delta 0.000001, all for keys found in the data (--discover)"),
        "{text}"
    );
    let json: Value = serde_json::from_str(&stdout_of(
        unseeded().args(["budget", "--format", "json", "--ledger"]).arg(&zcdp),
    ))
    .unwrap();
    assert_eq!(json["datasets"][0]["total_delta_for"], "zcdp");
    // With all of δ for zCDP the spend is stated at δ_total.
    assert_eq!(json["datasets"][0]["spent_delta_exact"], "1/1000000");
}
