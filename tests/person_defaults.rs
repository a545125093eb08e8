//! Defaults that keep the data (`--privacy-id`): G (`--max-groups-per-id`) defaults to every
//! group of `--keys`, which costs no noise while K_g = K, and `--max-rows-per-id auto` chooses K
//! by the bias–variance rule, saying when the persons are too few for it.

use crate::common;

use common::{fixture, json_of, seeded, stdout_of};
use serde_json::Value;

fn release(seed: u64, file: &std::path::Path, args: &[&str]) -> Value {
    json_of(seeded(seed).args(args).arg(file))
}

/// The sum of a grouped release's values.
fn total(v: &Value) -> f64 {
    v["groups"].as_array().unwrap().iter().map(|g| g["value"].as_f64().unwrap()).sum()
}

/// With K = 30 (every visit of visits.csv) and G left out, every visit counts in its clinic at
/// the noise of K rows; G = 1, the old default, drops the visits of every clinic but one per
/// patient at the same noise.
#[test]
fn g_defaults_to_every_group_at_no_cost() {
    let args = ["count", "--eps", "100000", "--privacy-id", "patient", "--max-rows-per-id", "30"];
    let by = ["--by", "clinic", "--keys", "north,south,east"];
    let all: Vec<&str> = args.iter().chain(&by).copied().collect();
    let default = release(1, &fixture("visits.csv"), &all);
    assert_eq!(default["max_groups_per_id"], 4, "three keys and other");
    assert_eq!(default["factor"], 30);
    assert!((total(&default) - 375.0).abs() < 1.0, "every visit kept: {}", total(&default));
    let one: Vec<&str> = all.iter().copied().chain(["--max-groups-per-id", "1"]).collect();
    let g1 = release(1, &fixture("visits.csv"), &one);
    assert_eq!(g1["factor"], 30, "the same noise");
    assert!(total(&g1) < 300.0, "G = 1 drops rows: {}", total(&g1));
    let help = stdout_of(seeded(1).args(["count", "--help"]));
    assert!(help.contains("every") && help.contains("costs no noise"), "{help}");
}

/// 6,000 persons: 5,400 with 1 to 3 rows and 600 with 40. The 0.9 quantile of rows per person
/// (the old rule) is 3, which drops 37 of the 40 rows of one person in ten; the bias–variance
/// rule keeps them: K = 40, the first candidate with few persons above it (600 is well above
/// its threshold, about 224 at ε = 1, so the choice's noise does not stop it earlier).
#[test]
fn auto_keeps_the_rows_of_many_heavy_persons() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("skewed.csv");
    let mut text = String::from("id,x\n");
    for p in 0..6000 {
        let rows = if p < 600 { 40 } else { 1 + p % 3 };
        for r in 0..rows {
            text.push_str(&format!("p{p},{}\n", (p + r) % 10));
        }
    }
    std::fs::write(&path, text).unwrap();
    let args = ["count", "--eps", "1", "--privacy-id", "id", "--max-rows-per-id", "auto"];
    for seed in 1..=3 {
        let v = release(seed, &path, &args);
        assert_eq!(v["max_rows_per_id"], 40, "seed {seed}: {v}");
        assert!(v["auto"]["too_few_persons"].is_null(), "{v}");
        assert!(v["auto"]["threshold"].as_u64().unwrap() < 600);
        assert_eq!(v["epsilon_exact"], "1/1");
    }
}

/// `dpstat plan` per person takes `--by` (each group's bound, at the factor of the person's
/// bounds across groups: G·K_g below K lowers it) and `auto` (each K at the nine tenths of ε
/// auto leaves), and says what `--rows` is.
#[test]
fn plan_per_person_takes_by_and_auto() {
    let plan = |args: &[&str]| -> Value {
        let text = stdout_of(seeded(1).arg("plan").args(args).args(["--format", "json"]));
        serde_json::from_str(&text).unwrap()
    };
    let bound = |v: &Value, i: usize| v["per_person"][i]["error_bound"].as_f64().unwrap();
    let count = ["count", "--eps", "1"];
    let ungrouped = plan(&[&count[..], &["--max-rows-per-id", "4,10"]].concat());
    let by = ["--by", "clinic", "--keys", "north,south,east"];
    let grouped = plan(&[&count[..], &by, &["--max-rows-per-id", "4,10"]].concat());
    assert_eq!(bound(&grouped, 1), bound(&ungrouped, 1), "every group by default: the noise of K rows");
    let narrow = plan(&[&count[..], &by, &["--max-rows-per-id", "10", "--max-groups-per-id", "2"]].concat());
    assert_eq!(bound(&narrow, 0), bound(&ungrouped, 1), "G alone changes nothing while K_g = K");
    let capped = plan(
        &[
            &count[..],
            &by,
            &["--max-rows-per-id", "10", "--max-groups-per-id", "2", "--max-rows-per-group", "2"],
        ]
        .concat(),
    );
    assert_eq!(bound(&capped, 0), bound(&ungrouped, 0), "T = min(10, 2·2) = 4: the bound at K = 4");
    let auto = plan(&[&count[..], &["--max-rows-per-id", "10,auto"]].concat());
    assert_eq!(auto["per_person"][1]["auto"], true);
    assert_eq!(auto["per_person"][1]["epsilon_decimal"], "0.9");
    assert!(bound(&auto, 1) > bound(&auto, 0), "nine tenths of ε: a wider bound");
    let text = stdout_of(
        seeded(1)
            .args(["plan", "mean", "-l", "0", "-u", "9", "--rows", "100", "--eps", "1"])
            .args(["--max-rows-per-id", "5"]),
    );
    assert!(text.contains("--rows is the rows kept"), "{text}");
}
