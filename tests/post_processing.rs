//! `--nonnegative` (count, histogram) and `--normalize` (histogram): post-processing of the
//! noisy release, stated in its JSON, run through the real binary.

use crate::common;

use common::{dpstat, fails_with, fixture, json_of, seeded, stdout_of};

/// A count of no rows is pure noise: about half the runs are negative without the flag, none
/// with it, and the JSON says what the flag did.
#[test]
fn nonnegative_counts_are_never_below_zero() {
    let run = |seed: u64, flag: bool| {
        let mut cmd = seeded(seed);
        cmd.args(["count", "--where", "region=nowhere", "--eps", "0.5"]).arg(fixture("people.csv"));
        if flag {
            cmd.arg("--nonnegative");
        }
        json_of(&mut cmd)
    };
    let mut negative_without = 0;
    for seed in 0..40 {
        let plain = run(seed, false)["value"].as_i64().unwrap();
        let json = run(seed, true);
        let clamped = json["value"].as_i64().unwrap();
        assert_eq!(clamped, plain.max(0), "seed {seed}");
        let note = json["post_processing"][0].as_str().unwrap();
        assert!(note.starts_with("nonnegative:"), "{note}");
        assert_eq!(note.contains("below 0 and is released as 0"), plain < 0, "{note}");
        negative_without += (plain < 0) as u32;
    }
    assert!(negative_without > 5, "the test needs negative noisy counts: {negative_without}");
}

/// Every bin of every group is at least 0.
#[test]
fn nonnegative_histograms_per_group() {
    for seed in 0..20 {
        let mut cmd = seeded(seed);
        cmd.args([
            "histogram",
            "--col",
            "age",
            "--bins",
            "10",
            "--lower",
            "0",
            "--upper",
            "200",
            "--eps",
            "0.3",
        ])
        .args(["--by", "region", "--keys", "north,south", "--nonnegative"])
        .arg(fixture("people.csv"));
        let json = json_of(&mut cmd);
        for group in json["groups"].as_array().unwrap() {
            for bin in group["bins"].as_array().unwrap() {
                assert!(bin["count"].as_i64().unwrap() >= 0, "{group}");
            }
            assert!(group["post_processing"][0].as_str().unwrap().starts_with("nonnegative:"));
        }
    }
}

/// The true shares of region in people.csv (north, south, east, west, other).
fn region_shares() -> Vec<f64> {
    let text = std::fs::read_to_string(fixture("people.csv")).unwrap();
    let regions: Vec<String> =
        text.lines().skip(1).map(|l| l.split(',').nth(3).unwrap().to_string()).collect();
    let n = regions.len() as f64;
    let share = |r: &str| regions.iter().filter(|x| *x == r).count() as f64 / n;
    let listed = ["north", "south", "east", "west"];
    let other = regions.iter().filter(|x| !listed.contains(&x.as_str())).count() as f64 / n;
    listed.iter().map(|r| share(r)).chain([other]).collect()
}

/// Proportions add up to 1, and every bin's share is within the stated bound of the true share
/// in at least the stated share of runs (the bound holds for every bin at once).
#[test]
fn normalized_shares_sum_to_one_and_are_covered() {
    let truth = region_shares();
    let runs = 100;
    let mut covered = 0;
    for seed in 0..runs {
        let mut cmd = seeded(seed);
        cmd.args(["histogram", "--col", "region", "--categories", "north,south,east,west", "--eps", "0.5"])
            .arg("--normalize")
            .arg(fixture("people.csv"));
        let json = json_of(&mut cmd);
        assert_eq!(json["accuracy"]["scope"], "every bin at once");
        let bound = json["accuracy"]["error_bound"].as_f64().unwrap();
        assert!(bound > 0.0 && bound < 0.2, "{bound}");
        let shares: Vec<f64> =
            json["bins"].as_array().unwrap().iter().map(|b| b["proportion"].as_f64().unwrap()).collect();
        assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{shares:?}");
        assert!(shares.iter().all(|&p| p >= 0.0));
        covered += shares.iter().zip(&truth).all(|(p, t)| (p - t).abs() <= bound) as u32;
        let post = json["post_processing"].to_string();
        assert!(post.contains("nonnegative:") && post.contains("normalize:"), "{post}");
    }
    assert!(covered >= 95, "covered {covered} of {runs}");
}

#[test]
fn normalized_text_prints_proportions() {
    let out = stdout_of(
        dpstat()
            .args([
                "histogram",
                "--col",
                "region",
                "--categories",
                "north,south",
                "--eps",
                "1",
                "--normalize",
                // Every digit, so that the proportions add up to 1 exactly.
                "--full-precision",
            ])
            .arg(fixture("people.csv")),
    );
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("bin,proportion"));
    let total: f64 = lines.map(|l| l.split(',').nth(1).unwrap().parse::<f64>().unwrap()).sum();
    assert!((total - 1.0).abs() < 1e-9, "{out}");
}

/// Charts draw counts, so a normalized histogram is refused before any data is read.
#[test]
fn normalized_histograms_are_not_charted() {
    for extra in [&["--format", "chart"][..], &["--plot", "out.svg"][..]] {
        let mut cmd = dpstat();
        cmd.args(["histogram", "--col", "region", "--categories", "a,b", "--eps", "1", "--normalize"])
            .args(extra)
            .arg("no-such-file.csv");
        fails_with(&mut cmd, &["--normalize releases proportions"]);
    }
}
