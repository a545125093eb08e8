//! `--by COL --keys ...`: one release per public key (plus `other`), each at the full ε.

use crate::common;

use std::collections::HashMap;
use std::fs;

use common::{dpstat, fails_with, fixture, json_of, seeded, stdout_of, unseeded};
use proptest::prelude::*;
use tempfile::TempDir;

const REGIONS: [&str; 5] = ["north", "south", "east", "west", "other"];

/// True row counts of people.csv per region (keys north,south,east,west; the rest `other`).
fn true_region_counts() -> HashMap<String, f64> {
    let text = fs::read_to_string(fixture("people.csv")).unwrap();
    let mut counts: HashMap<String, f64> = REGIONS.iter().map(|r| (r.to_string(), 0.0)).collect();
    for line in text.lines().skip(1) {
        let region = line.split(',').nth(3).unwrap().trim();
        let key = if REGIONS[..4].contains(&region) { region } else { "other" };
        *counts.get_mut(key).unwrap() += 1.0;
    }
    counts
}

/// Variance of discrete Laplace noise of scale s: 2p/(1−p)² with p = e^(−1/s).
fn dlap_variance(scale: f64) -> f64 {
    let p = (-1.0 / scale).exp();
    2.0 * p / ((1.0 - p) * (1.0 - p))
}

/// Over 300 seeded runs, every group's noise has the variance of discrete Laplace at the FULL
/// ε (scale Δ/ε with Δ = 1 under add-remove, 2 under replace), not a split of it.
#[test]
fn every_group_gets_the_noise_of_the_full_epsilon() {
    let truth = true_region_counts();
    for (neighbours, delta) in [("add-remove", 1.0), ("replace", 2.0)] {
        let eps = 0.5;
        let runs = 300usize;
        let mut noise: HashMap<String, Vec<f64>> = HashMap::new();
        let mut args: Vec<std::ffi::OsString> = [
            "count",
            "--by",
            "region",
            "--keys",
            "north,south,east,west",
            "--eps",
            "0.5",
            "--neighbours",
            neighbours,
        ]
        .map(Into::into)
        .to_vec();
        args.extend([fixture("people.csv").into(), "--format".into(), "json".into()]);
        for json in common::seeded_json_values(0, runs, 2, &args) {
            let groups = json["groups"].as_array().unwrap();
            assert_eq!(groups.len(), 5);
            for g in groups {
                let key = g["key"].as_str().unwrap().to_string();
                assert_eq!(g["epsilon_exact"], "1/2", "every group has the full ε");
                assert_eq!(g["sensitivity"].as_f64().unwrap(), delta);
                let v = g["value"].as_f64().unwrap() - truth[&key];
                noise.entry(key).or_default().push(v);
            }
        }
        let expected = dlap_variance(delta / eps);
        let mut pooled = vec![];
        for (key, v) in &noise {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (v.len() - 1) as f64;
            let ratio = var / expected;
            // A split ε (ε/5 per group) would give a ratio near 25; the sampling spread of
            // the ratio over 300 draws is about ±0.13.
            assert!(
                (0.6..1.6).contains(&ratio),
                "{neighbours} group {key}: variance {var}, expected {expected}"
            );
            assert!(mean.abs() < 4.0 * (expected / v.len() as f64).sqrt() + 0.5, "{key}: mean {mean}");
            pooled.extend(v.iter().map(|x| x - mean));
        }
        let var = pooled.iter().map(|x| x * x).sum::<f64>() / pooled.len() as f64;
        assert!(
            (0.8..1.25).contains(&(var / expected)),
            "{neighbours}: pooled variance {var}, expected {expected}"
        );
    }
}

/// A dataset row for the property test: a key (a, b, c listed; z goes to `other`) and a value.
fn row() -> impl Strategy<Value = (char, f64)> {
    let value = prop_oneof![
        -20.0f64..20.0,
        Just(1e308),
        Just(-1e308),
        Just(-0.0),
        Just(5e-324),
        Just(9007199254740993.0),
    ];
    (prop::sample::select(vec!['a', 'b', 'c', 'z']), value)
}

fn csv_of(rows: &[(char, f64)]) -> String {
    let mut s = String::from("grp,x\n");
    for (k, x) in rows {
        s.push_str(&format!("{k},{x:e}\n"));
    }
    s
}

/// Per group: the released value in grid units (exact), and the declared sensitivity in units.
fn group_units(query: &[&str], neighbours: &str, csv: &str) -> (Vec<i128>, i128) {
    let mut cmd = seeded(7);
    cmd.args(query).args(["--by", "grp", "--keys", "a,b,c", "--eps", "1", "--neighbours", neighbours]);
    let json = json_of(cmd.write_stdin(csv.to_string()));
    let groups = json["groups"].as_array().unwrap();
    let mut delta = 0;
    let units = groups
        .iter()
        .map(|g| {
            let spacing = g["grid"]["spacing"].as_f64().unwrap_or(1.0);
            delta = (g["sensitivity"].as_f64().unwrap() / spacing).round() as i128;
            match g["value_units"].as_str() {
                Some(u) => u.parse().unwrap(),
                None => g["value"].as_i64().unwrap() as i128,
            }
        })
        .collect();
    (units, delta)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The real binary, same seed (so the same noise) on neighbouring datasets: the releases
    /// differ by exactly the aggregates' difference. Under replace a row that moves to another
    /// group changes two groups, and the L1 change over all groups stays within the declared
    /// sensitivity (count 2, sum 2·max(|L|,|U|)); under add-remove one group changes, within Δ.
    #[test]
    fn a_row_moved_between_groups_is_covered_by_the_declared_sensitivity(
        rows in proptest::collection::vec(row(), 1..25),
        other in row(),
        at in any::<prop::sample::Index>(),
    ) {
        let i = at.index(rows.len());
        let mut moved = rows.clone();
        moved[i] = other;
        let mut removed = rows.clone();
        removed.remove(i);
        let sum: &[&str] = &["sum", "--col", "x", "--lower", "-5", "--upper", "10"];
        let count: &[&str] = &["count"];
        for query in [sum, count] {
            let (base, delta) = group_units(query, "replace", &csv_of(&rows));
            let (next, _) = group_units(query, "replace", &csv_of(&moved));
            let l1: i128 = base.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
            prop_assert!(l1 <= delta, "{:?}: L1 {} > Δ {}", query, l1, delta);

            let (base, delta) = group_units(query, "add-remove", &csv_of(&rows));
            let (next, _) = group_units(query, "add-remove", &csv_of(&removed));
            let changed = base.iter().zip(&next).filter(|(a, b)| a != b).count();
            let l1: i128 = base.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
            prop_assert!(changed <= 1 && l1 <= delta, "{:?}: {} groups, L1 {} > Δ {}", query, changed, l1, delta);
        }
    }
}

#[test]
fn declared_sensitivities_under_replace_cover_moves() {
    let json = json_of(
        dpstat()
            .args(["sum", "--col", "income", "--lower", "-10", "--upper", "200000", "--eps", "1"])
            .args(["--by", "urban_rural", "--keys", "1,2", "--neighbours", "replace"])
            .arg(fixture("people.csv")),
    );
    for g in json["groups"].as_array().unwrap() {
        assert_eq!(g["sensitivity"].as_f64().unwrap(), 400000.0, "2·max(|L|,|U|)");
    }
    assert!(json["composition"].as_str().unwrap().contains("leave one group and enter another"));
    let json = json_of(
        dpstat()
            .args(["histogram", "--col", "region", "--categories", "north,south", "--eps", "1"])
            .args(["--by", "urban_rural", "--keys", "1", "--neighbours", "replace"])
            .arg(fixture("people.csv")),
    );
    for g in json["groups"].as_array().unwrap() {
        assert_eq!(g["sensitivity"].as_f64().unwrap(), 2.0);
        assert_eq!(g["accuracy"]["scope"], "per bin");
    }
}

#[test]
fn text_output_is_csv_with_the_key_first() {
    let text = stdout_of(
        dpstat()
            .args(["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "1"])
            .args(["--by", "urban_rural", "--keys", "1,2"])
            .arg(fixture("people.csv")),
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "key,value");
    let keys: Vec<&str> = lines[1..].iter().map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(keys, ["1", "2", "other"]);
    for l in &lines[1..] {
        let v: f64 = l.split(',').nth(1).unwrap().parse().unwrap();
        assert!((0.0..=200000.0).contains(&v));
    }

    let text = stdout_of(
        dpstat()
            .args([
                "histogram",
                "--col",
                "age",
                "--bins",
                "2",
                "--lower",
                "0",
                "--upper",
                "100",
                "--eps",
                "1",
            ])
            .args(["--by", "region", "--keys", "north,south"])
            .arg(fixture("people.csv")),
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "key,bin,count");
    assert_eq!(lines.len(), 1 + 3 * 2);
    assert!(lines[1].starts_with("north,0..50,"), "{}", lines[1]);
    assert!(lines[6].starts_with("other,50..100,"), "{}", lines[6]);

    let text = stdout_of(
        dpstat()
            .args(["variance", "--col", "age", "--lower", "0", "--upper", "100", "--eps", "1"])
            .args(["--by", "region", "--keys", "north,south,east,west"])
            .arg(fixture("people.csv")),
    );
    assert_eq!(text.lines().count(), 1 + 5);
}

#[test]
fn json_has_groups_and_the_composition_note() {
    let json = json_of(
        dpstat()
            .args(["count", "--by", "region", "--keys", "north, south", "--eps", "0.25"])
            .arg(fixture("people.csv")),
    );
    assert_eq!(json["query"], "count");
    assert_eq!(json["by"], "region");
    assert_eq!(json["epsilon_exact"], "1/4");
    assert!(json["composition"].as_str().unwrap().starts_with("parallel composition"));
    let keys: Vec<&str> =
        json["groups"].as_array().unwrap().iter().map(|g| g["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["north", "south", "other"]);
}

/// Parallel composition: the ledger is charged ε once, not once per group.
#[test]
fn the_ledger_is_charged_epsilon_once() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(
        unseeded()
            .args([
                "sum",
                "--col",
                "age",
                "--lower",
                "0",
                "--upper",
                "100",
                "--eps",
                "0.4",
                "--invalid",
                "skip",
            ])
            .args(["--by", "region", "--keys", "north,south,east,west", "--budget", "1", "--ledger"])
            .arg(&ledger)
            .arg(fixture("people.csv")),
    );
    let records: Vec<serde_json::Value> = fs::read_to_string(&ledger)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let releases: Vec<_> = records.iter().filter(|r| r["type"] == "charge").collect();
    assert_eq!(releases.len(), 1);
    assert_eq!(releases[0]["epsilon"], "2/5");
    assert_eq!(releases[0]["query"], "sum by region");
}

#[test]
fn refusals() {
    for query in [
        &["mean", "--col", "income", "--lower", "0", "--upper", "1"][..],
        &["variance", "--col", "income", "--lower", "0", "--upper", "1"][..],
    ] {
        fails_with(
            dpstat()
                .args(query)
                .args(["--eps", "1", "--neighbours", "replace", "--by", "region", "--keys", "north"])
                .arg(fixture("people.csv")),
            &["--by with --neighbours replace", "group sizes are private"],
        );
    }
    fails_with(
        dpstat().args(["count", "--eps", "1", "--by", "region"]).arg(fixture("people.csv")),
        &["--keys"],
    );
    fails_with(
        dpstat()
            .args(["count", "--eps", "1", "--by", "region", "--keys", "north,other"])
            .arg(fixture("people.csv")),
        &["'other' names the group"],
    );
    fails_with(
        dpstat().args(["count", "--eps", "1", "--by", "nope", "--keys", "a"]).arg(fixture("people.csv")),
        &["no column 'nope' (--by)"],
    );
}

/// A CSV of regions a and b, and optionally one more row whose region is `extra`.
fn closed_csv(dir: &TempDir, name: &str, extra: Option<&str>) -> std::path::PathBuf {
    let mut text = String::from("id,region,age\n");
    for i in 0..30 {
        text.push_str(&format!("{i},{},{}\n", if i % 3 == 0 { "a" } else { "b" }, 20 + i));
    }
    if let Some(region) = extra {
        text.push_str(&format!("99,{region},50\n"));
    }
    let path = dir.path().join(name);
    fs::write(&path, text).unwrap();
    path
}

/// The (key, value) pairs of a grouped JSON release.
fn groups_of(json: &serde_json::Value) -> Vec<(String, f64)> {
    json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["key"].as_str().unwrap().to_string(), g["value"].as_f64().unwrap()))
        .collect()
}

/// `--closed`: no group `other`; a row whose key is not listed is invalid input. Neighbouring
/// datasets under one seed: a skipped row releases what the data without it releases, an
/// imputed row what the data with that row's key set to V releases, and `--invalid error` stops
/// with one line naming the row and the column.
#[test]
fn closed_keys_have_no_other_and_a_key_outside_is_invalid_input() {
    let dir = TempDir::new().unwrap();
    let without = closed_csv(&dir, "without.csv", None);
    let outside = closed_csv(&dir, "outside.csv", Some("zz"));
    let as_b = closed_csv(&dir, "as_b.csv", Some("b"));
    let count = |seed: u64, file: &std::path::Path, extra: &[&str]| {
        groups_of(&json_of(
            seeded(seed)
                .args(["count", "--eps", "1", "--by", "region", "--keys", "a,b", "--closed"])
                .args(extra)
                .arg(file),
        ))
    };
    for seed in 0..5 {
        let skipped = count(seed, &outside, &["--invalid", "skip"]);
        let keys: Vec<&str> = skipped.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b"], "no group other");
        assert_eq!(skipped, count(seed, &without, &[]), "seed {seed}: skip drops the row");
        assert_eq!(count(seed, &outside, &["--invalid", "impute=b"]), count(seed, &as_b, &[]), "seed {seed}");
        // The closed release differs from the open one only by the group it leaves out.
        let open = groups_of(&json_of(
            seeded(seed).args(["count", "--eps", "1", "--by", "region", "--keys", "a,b"]).arg(&without),
        ));
        assert_eq!(open.len(), 3);
        assert_eq!(open[2].0, "other");
    }
    let text = stdout_of(
        dpstat().args(["count", "--eps", "1", "--by", "region", "--keys", "a,b", "--closed"]).arg(&without),
    );
    assert!(!text.contains("other"), "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
    fails_with(
        dpstat().args(["count", "--eps", "1", "--by", "region", "--keys", "a,b", "--closed"]).arg(&outside),
        &["row 31", "column 'region'", "'zz' is not one of the --keys listed", "--invalid skip"],
    );
    // A numeric statistic reads its value column under the same policy: impute=V must be a
    // number there, and skip drops the row whose key is outside.
    let sum = |file: &std::path::Path, invalid: &str| {
        groups_of(&json_of(
            seeded(3)
                .args(["sum", "--col", "age", "--lower", "0", "--upper", "100", "--eps", "1"])
                .args(["--by", "region", "--keys", "a,b", "--closed", "--invalid", invalid])
                .arg(file),
        ))
    };
    assert_eq!(sum(&outside, "skip"), sum(&without, "skip"));
    fails_with(
        dpstat()
            .args(["sum", "--col", "age", "--lower", "0", "--upper", "100", "--eps", "1"])
            .args(["--by", "region", "--keys", "a,b", "--closed", "--invalid", "impute=a"])
            .arg(&outside),
        &["--invalid impute=a", "not a finite number"],
    );
}

/// A histogram's `--categories` close the same way: no bin `other`.
#[test]
fn closed_categories_have_no_other_bin() {
    let dir = TempDir::new().unwrap();
    let without = closed_csv(&dir, "without.csv", None);
    let outside = closed_csv(&dir, "outside.csv", Some("zz"));
    let as_a = closed_csv(&dir, "as_a.csv", Some("a"));
    let histogram = |file: &std::path::Path, extra: &[&str]| {
        stdout_of(
            dpstat()
                .args(["histogram", "--col", "region", "--categories", "a,b", "--closed", "--eps", "1"])
                .args(extra)
                .arg(file),
        )
    };
    let text = histogram(&without, &[]);
    let bins: Vec<&str> = text.lines().map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(bins, ["bin", "a", "b"]);
    assert_eq!(histogram(&outside, &["--invalid", "skip"]), text);
    assert_eq!(histogram(&outside, &["--invalid", "impute=a"]), histogram(&as_a, &[]));
    fails_with(
        dpstat()
            .args(["histogram", "--col", "region", "--categories", "a,b", "--closed", "--eps", "1"])
            .arg(&outside),
        &["row 31", "column 'region'", "'zz' is not one of the --categories listed"],
    );
}

/// `--closed` is refused, before anything is read or charged, without a list, with
/// `--discover`, with an imputed key not listed, and with `--invalid error` under a ledger.
#[test]
fn closed_refusals() {
    let dir = TempDir::new().unwrap();
    let file = closed_csv(&dir, "data.csv", Some("zz"));
    fails_with(dpstat().args(["count", "--eps", "1", "--closed"]).arg(&file), &["--closed", "--keys"]);
    fails_with(
        dpstat()
            .args(["sum", "--col", "age", "--lower", "0", "--upper", "9", "--eps", "1", "--closed"])
            .arg(&file),
        &["--closed", "--keys"],
    );
    fails_with(
        dpstat()
            .args(["count", "--eps", "1", "--by", "region", "--discover", "--delta", "1e-6", "--closed"])
            .arg(&file),
        &["--closed", "--discover"],
    );
    fails_with(
        dpstat()
            .args(["histogram", "--col", "region", "--discover", "--delta", "1e-6", "--eps", "1", "--closed"])
            .arg(&file),
        &["--closed", "--discover"],
    );
    fails_with(
        dpstat()
            .args([
                "count",
                "--eps",
                "1",
                "--by",
                "region",
                "--keys",
                "a,b",
                "--closed",
                "--invalid",
                "impute=c",
            ])
            .arg(&file),
        &["--invalid impute=c", "'c' is not one of the --keys listed"],
    );
    fails_with(
        dpstat()
            .args(["count", "--eps", "1", "--by", "region", "--keys", "a,b", "--closed", "--invalid", "skip"])
            .args(["--neighbours", "replace"])
            .arg(&file),
        &["--invalid skip is refused with --neighbours replace"],
    );
    let ledger = dir.path().join("ledger.jsonl");
    fails_with(
        unseeded()
            .args(["count", "--eps", "1", "--by", "region", "--keys", "a,b", "--closed", "--budget", "1"])
            .arg("--ledger")
            .arg(&ledger)
            .arg(&file),
        &["with --ledger, add --invalid skip or --invalid impute=V"],
    );
    assert!(!ledger.exists(), "nothing is charged");
    // Under a ledger, skip and impute are taken, and the release is charged once.
    stdout_of(
        unseeded()
            .args([
                "count",
                "--eps",
                "1",
                "--by",
                "region",
                "--keys",
                "a,b",
                "--closed",
                "--invalid",
                "impute=a",
            ])
            .args(["--budget", "1", "--ledger"])
            .arg(&ledger)
            .arg(&file),
    );
    assert!(fs::read_to_string(&ledger).unwrap().contains("\"charge\""));
}

/// A workload query takes `closed = true` with the same rules.
#[test]
fn closed_in_a_workload() {
    let dir = TempDir::new().unwrap();
    let file = closed_csv(&dir, "data.csv", Some("zz"));
    let workload = |query: &str| {
        let path = dir.path().join("w.toml");
        fs::write(&path, format!("epsilon = 1\n\n[[query]]\nname = \"q\"\n{query}\n")).unwrap();
        path
    };
    let text = stdout_of(
        dpstat()
            .arg("run")
            .arg(workload(
                "kind = \"count\"\nby = \"region\"\nkeys = [\"a\", \"b\"]\nclosed = true\ninvalid = \"skip\"",
            ))
            .arg(&file),
    );
    assert!(!text.contains("other"), "{text}");
    assert!(text.contains('a') && text.contains('b'), "{text}");
    let text = stdout_of(
        dpstat()
            .arg("run")
            .arg(workload("kind = \"histogram\"\ncolumn = \"region\"\ncategories = [\"a\", \"b\"]\nclosed = true\ninvalid = \"impute=b\""))
            .arg(&file),
    );
    assert!(!text.contains("other"), "{text}");
    fails_with(
        dpstat().arg("run").arg(workload("kind = \"count\"\nclosed = true")).arg(&file),
        &["closed = true", "by and keys"],
    );
    fails_with(
        dpstat()
            .arg("run")
            .arg(workload("kind = \"count\"\nby = \"region\"\nkeys = [\"a\", \"b\"]\nclosed = true\ninvalid = \"impute=c\""))
            .arg(&file),
        &["'c' is not one of the --keys listed"],
    );
    fails_with(
        dpstat()
            .arg("run")
            .arg(workload("kind = \"count\"\nby = \"region\"\nkeys = [\"a\", \"b\"]\nclosed = true"))
            .arg(&file),
        &["'zz' is not one of the --keys listed"],
    );
}

/// Per person, a row imputed to key V is bounded in V's group with the person's other rows of
/// V: person 1's rows `b` and `zz` (imputed to `b`) give group b one row at
/// --max-rows-per-group 1, as two rows `b` would; bounded under a group `other` of their own
/// they would give b two.
#[test]
fn a_persons_imputed_row_is_bounded_in_its_key_group() {
    let dir = TempDir::new().unwrap();
    let mut released = vec![];
    for (name, rows) in [("imputed", "1,b\n1,zz\n"), ("listed", "1,b\n1,b\n")] {
        let path = dir.path().join(format!("{name}.csv"));
        fs::write(&path, format!("pid,region\n{rows}2,a\n3,b\n4,a\n")).unwrap();
        let json = json_of(
            seeded(3)
                .args(["count", "--eps", "1000", "--by", "region", "--keys", "a,b", "--closed"])
                .args(["--invalid", "impute=b", "--privacy-id", "pid", "--max-rows-per-id", "2"])
                .args(["--max-groups-per-id", "2", "--max-rows-per-group", "1"])
                .arg(&path),
        );
        released.push(groups_of(&json));
    }
    assert_eq!(released[0], released[1]);
    assert_eq!(released[0], [("a".to_string(), 2.0), ("b".to_string(), 2.0)]);
}
