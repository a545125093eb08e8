//! One value per person (`query::per_id`): `--total-per-id L,U` clamps each person's total
//! (sum, mean over persons), `--average-per-id` takes the mean of per-person averages clamped to
//! [--lower, --upper]. Through the binary: the exact value at a huge ε, one heavy person moving
//! each noisy number by at most the sensitivity the release states (the clamp's, not K times a
//! row's), the unit and factor stated, the same release whatever the order or the spill, the
//! refusals before anything is read, and the same estimands in a workload.

use crate::common;

use std::collections::BTreeMap;

use common::{fails_with, fixture, json_of, seeded, stdout_of};
use serde_json::Value;

/// `fixtures/visits.csv`: 60 patients with 1 to 30 visits each (cost 1 to ~500), shuffled.
const VISITS: &str = "visits.csv";

fn release(seed: u64, file: &std::path::Path, args: &[&str]) -> Value {
    json_of(seeded(seed).args(args).arg(file))
}

/// Each patient's costs in `visits.csv`.
fn costs() -> BTreeMap<String, Vec<f64>> {
    let text = std::fs::read_to_string(fixture(VISITS)).unwrap();
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        out.entry(cells[0].to_string()).or_default().push(cells[2].parse().unwrap());
    }
    out
}

/// The rows of `visits.csv` with one more patient who has `rows` visits of `cost` each.
fn with_patient(rows: usize, cost: f64) -> tempfile::NamedTempFile {
    let mut text = std::fs::read_to_string(fixture(VISITS)).unwrap();
    for i in 0..rows {
        text.push_str(&format!("NEW,{},{cost}\n", ["north", "south", "east"][i % 3]));
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

const TOTAL_SUM: &[&str] = &["sum", "--col", "cost", "--total-per-id", "0,2000"];
const TOTAL_MEAN: &[&str] = &["mean", "--col", "cost", "--total-per-id", "0,2000"];
const AVERAGE: &[&str] = &["mean", "--col", "cost", "--average-per-id", "--lower", "0", "--upper", "300"];

fn args<'a>(statistic: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    statistic.iter().chain(more).copied().collect()
}

/// At ε = 10^6 (noise below 0.01) and K = 30 (every row kept), the releases are the estimands
/// computed here from the file: the sum and the mean of clamped totals, the mean of clamped
/// averages. They differ from the row-level sum and mean, so the test sees which was computed.
#[test]
fn the_releases_are_the_per_person_estimands() {
    let costs = costs();
    let totals: Vec<f64> = costs.values().map(|c| c.iter().sum::<f64>().clamp(0.0, 2000.0)).collect();
    let averages: Vec<f64> =
        costs.values().map(|c| (c.iter().sum::<f64>() / c.len() as f64).clamp(0.0, 300.0)).collect();
    let n = costs.len() as f64;
    let person = ["--eps", "1000000", "--privacy-id", "patient", "--max-rows-per-id", "30"];
    let value = |statistic: &[&str]| {
        release(1, &fixture(VISITS), &args(statistic, &person))["value"].as_f64().unwrap()
    };
    let sum: f64 = totals.iter().sum();
    assert!((value(TOTAL_SUM) - sum).abs() < 0.1, "{} vs {sum}", value(TOTAL_SUM));
    assert!((value(TOTAL_MEAN) - sum / n).abs() < 0.01, "{} vs {}", value(TOTAL_MEAN), sum / n);
    let mean_of_averages = averages.iter().sum::<f64>() / n;
    assert!((value(AVERAGE) - mean_of_averages).abs() < 0.01, "{} vs {mean_of_averages}", value(AVERAGE));
    // Not the row-level mean, which weighs a patient by their visits.
    let rows: Vec<f64> = costs.values().flatten().copied().collect();
    let row_mean = rows.iter().sum::<f64>() / rows.len() as f64;
    assert!((mean_of_averages - row_mean).abs() > 1.0, "the fixture must tell them apart");
}

/// The noisy numbers of a release: its value, or its parts' values when it has parts.
fn parts(v: &Value) -> Vec<(f64, f64)> {
    match v["parts"].as_array() {
        Some(parts) => {
            parts.iter().map(|p| (p["value"].as_f64().unwrap(), p["sensitivity"].as_f64().unwrap())).collect()
        }
        None => vec![(v["value"].as_f64().unwrap(), v["sensitivity"].as_f64().unwrap())],
    }
}

/// Neighbours through the binary: one more patient with 1, K or 10,000 visits at the top of the
/// range moves every noisy number (same seed, same noise) by at most the sensitivity the release
/// states, which is the clamp's (2000 for the sum, 1000 and 1 for the mean of totals, 150 and 1
/// for the mean of averages) whatever K; the unit states factor 1 and what each person gives.
#[test]
fn one_person_moves_each_release_by_at_most_the_clamp() {
    let person = ["--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", "8"];
    for (statistic, deltas, value) in [
        (TOTAL_SUM, vec![2000.0], "total"),
        (TOTAL_MEAN, vec![1000.0, 1.0], "total"),
        (AVERAGE, vec![150.0, 1.0], "average"),
    ] {
        let args = args(statistic, &person);
        let base = release(9, &fixture(VISITS), &args);
        assert_eq!(base["factor"], 1, "{statistic:?}");
        assert_eq!(base["value_per_id"], value, "{statistic:?}");
        assert_eq!(base["epsilon_exact"], "1/1", "{statistic:?}");
        let stated: Vec<f64> = parts(&base).iter().map(|p| p.1).collect();
        assert_eq!(stated, deltas, "{statistic:?}: the clamp's sensitivity, not K times a row's");
        let mut moved_any = false;
        for rows in [1, 8, 10_000] {
            let file = with_patient(rows, 1e6);
            let next = release(9, file.path(), &args);
            for ((a, d), (b, _)) in parts(&base).into_iter().zip(parts(&next)) {
                assert!((a - b).abs() <= d + 1e-6, "{statistic:?}, {rows} rows: {a} -> {b}, stated {d}");
                moved_any |= a != b;
            }
        }
        assert!(moved_any, "{statistic:?}: the added person must show");
    }
}

/// With `--by`, one person moves at most min(G, K) groups by one value each: that is the
/// factor, and the groups' parts add up to ε exactly.
#[test]
fn grouped_releases_are_divided_by_min_g_k() {
    let keys = ["--by", "clinic", "--keys", "north,south,east"];
    for (k, g, factor) in [("5", "2", 2), ("1", "3", 1), ("8", "3", 3)] {
        let person =
            ["--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", k, "--max-groups-per-id", g];
        let v = release(2, &fixture(VISITS), &args(&args(TOTAL_SUM, &keys), &person));
        assert_eq!(v["factor"], factor, "K {k}, G {g}");
        assert_eq!(v["epsilon_exact"], "1/1");
        for group in v["groups"].as_array().unwrap() {
            assert_eq!(group["sensitivity"].as_f64().unwrap(), 2000.0 * f64::from(factor), "K {k}, G {g}");
        }
    }
}

/// The rows kept, and so the release, do not depend on the rows' order, the spill or threads.
#[test]
fn per_person_releases_do_not_depend_on_order_or_the_spill() {
    let person = ["--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", "3"];
    for statistic in [TOTAL_SUM, TOTAL_MEAN, AVERAGE] {
        let args = args(statistic, &person);
        let want = release(4, &fixture(VISITS), &args);
        assert_eq!(release(4, &fixture("visits_sorted.csv"), &args), want, "{statistic:?} sorted");
        let spilled = json_of(seeded(4).env("DPSTAT_ID_MEMORY", "0").args(&args).arg(fixture(VISITS)));
        assert_eq!(spilled, want, "{statistic:?} spilled");
        let one_thread = json_of(seeded(4).args(&args).args(["--threads", "1"]).arg(fixture(VISITS)));
        assert_eq!(one_thread, want, "{statistic:?} one thread");
    }
}

/// Titles name the unit and K, in charts and on the note line.
#[test]
fn titles_name_the_person_and_k() {
    let chart = stdout_of(
        seeded(1)
            .args(args(
                TOTAL_SUM,
                &["--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", "5", "--by", "clinic"],
            ))
            .args(["--keys", "north,south", "--format", "chart"])
            .arg(fixture(VISITS)),
    );
    let title = chart.lines().next().unwrap();
    assert!(
        title.starts_with("sum of cost by clinic: eps 1, add-remove, per person (patient), K=5"),
        "{title}"
    );
    let row_level = stdout_of(
        seeded(1)
            .args(["sum", "--col", "cost", "-l", "0", "-u", "9", "--eps", "1"])
            .args(["--by", "clinic", "--keys", "north,south", "--format", "chart"])
            .arg(fixture(VISITS)),
    );
    assert!(row_level.lines().next().unwrap().ends_with("eps 1, add-remove"), "{row_level}");
}

/// Refused before anything is read, with one line and exit 2.
#[test]
fn misuses_are_refused_before_reading() {
    let file = fixture(VISITS);
    let cases: [(&[&str], &[&str]); 8] = [
        (&["sum", "-c", "cost", "--total-per-id", "0,10", "-e", "1"], &["--total-per-id", "--privacy-id"]),
        (
            &["mean", "-c", "cost", "--average-per-id", "-l", "0", "-u", "9", "-e", "1"],
            &["--average-per-id", "--privacy-id"],
        ),
        (
            &["variance", "-c", "cost", "--total-per-id", "0,10", "--privacy-id", "patient", "-e", "1"],
            &["variance does not take it"],
        ),
        (
            &[
                "sum",
                "-c",
                "cost",
                "--average-per-id",
                "-l",
                "0",
                "-u",
                "9",
                "--privacy-id",
                "patient",
                "-e",
                "1",
            ],
            &["sum does not take it"],
        ),
        (
            &[
                "sum",
                "-c",
                "cost",
                "--total-per-id",
                "0,10",
                "-l",
                "0",
                "-u",
                "9",
                "--privacy-id",
                "patient",
                "-e",
                "1",
            ],
            &["--lower/--upper"],
        ),
        (
            &["mean", "-c", "cost", "--average-per-id", "--privacy-id", "patient", "-e", "1"],
            &["--lower/--upper"],
        ),
        (
            &["sum", "-c", "cost", "--total-per-id", "10,0", "--privacy-id", "patient", "-e", "1"],
            &["--total-per-id"],
        ),
        (
            &[
                "sum",
                "-c",
                "cost",
                "--total-per-id",
                "0,10",
                "--privacy-id",
                "patient",
                "-e",
                "1",
                "--by",
                "clinic",
                "--discover",
                "--delta",
                "1e-6",
            ],
            &["--discover"],
        ),
    ];
    for (args, needles) in cases {
        fails_with(seeded(1).args(args).arg(&file), needles);
    }
}

/// The same estimands in a workload: `total_per_id = [L, U]` and `average_per_id = true`, each
/// query at its share divided by its own factor (1 here, K for the others), stated per person,
/// and refused with its line without `privacy_id` or on a kind that does not take it.
#[test]
fn workloads_take_the_same_estimands() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.toml");
    let head = "epsilon = \"2\"\nprivacy_id = \"patient\"\nmax_rows_per_id = 30\n";
    let queries = "[[query]]\nname = \"total\"\nkind = \"sum\"\ncolumn = \"cost\"\ntotal_per_id = [0, 2000]\n\n\
                   [[query]]\nname = \"avg\"\nkind = \"mean\"\ncolumn = \"cost\"\nlower = 0\nupper = 300\naverage_per_id = true\n";
    std::fs::write(&path, format!("{head}{queries}")).unwrap();
    let text = stdout_of(seeded(3).arg("run").arg(&path).arg(fixture(VISITS)).args(["--format", "json"]));
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!((lines[0]["value_per_id"].as_str(), lines[0]["factor"].as_u64()), (Some("total"), Some(1)));
    assert_eq!(lines[0]["sensitivity"].as_f64(), Some(2000.0));
    assert_eq!((lines[1]["value_per_id"].as_str(), lines[1]["factor"].as_u64()), (Some("average"), Some(1)));
    // The same release as the command line at the same share and seed would give is not
    // required (one scan draws the noise of both), but the clamp's value is: at a huge ε the
    // sum is the file's sum of clamped totals.
    let big = format!("{}{queries}", head.replace("\"2\"", "\"2000000\""));
    std::fs::write(&path, big).unwrap();
    let text = stdout_of(seeded(3).arg("run").arg(&path).arg(fixture(VISITS)).args(["--format", "json"]));
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let sum: f64 = costs().values().map(|c| c.iter().sum::<f64>().clamp(0.0, 2000.0)).sum();
    assert!((first["value"].as_f64().unwrap() - sum).abs() < 0.1, "{first}");

    std::fs::write(&path, format!("epsilon = \"1\"\n{queries}")).unwrap();
    let error = fails_with(seeded(3).arg("run").arg(&path).arg(fixture(VISITS)), &["privacy_id", "line 6"]);
    assert!(error.contains("total-per-id"), "{error}");
    let variance = "[[query]]\nname = \"v\"\nkind = \"variance\"\ncolumn = \"cost\"\nlower = 0\nupper = 9\ntotal_per_id = [0, 1]\n";
    std::fs::write(&path, format!("{head}{variance}")).unwrap();
    fails_with(
        seeded(3).arg("run").arg(&path).arg(fixture(VISITS)),
        &["variance does not take total_per_id", "line 10"],
    );
}
