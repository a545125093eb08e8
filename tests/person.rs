//! `--privacy-id`: every release protects one person with all their rows. The rows kept per
//! person depend on the rows alone (order, the spill and the cut into parts change nothing),
//! one person moves a noisy aggregate by at most the sensitivity the release states, and the
//! release states its unit and an accounting that adds up to the ε charged.

use crate::common;

use common::{fails_with, fixture, json_of, seeded};
use serde_json::Value;

/// `fixtures/visits.csv`: 60 patients with 1 to 30 visits each, shuffled; its sorted copy is
/// `visits_sorted.csv`.
const VISITS: &str = "visits.csv";

fn release(seed: u64, file: &std::path::Path, args: &[&str]) -> Value {
    json_of(seeded(seed).args(args).arg(file))
}

/// The noisy values a release shows: its value, its parts' values and its bins' counts (each
/// of which is exact aggregate + noise).
fn noisy_numbers(v: &Value) -> Vec<f64> {
    let mut out: Vec<f64> = v["value"].as_f64().into_iter().collect();
    for p in v["parts"].as_array().into_iter().flatten() {
        out.extend(p["value"].as_f64());
    }
    for b in v["bins"].as_array().into_iter().flatten() {
        out.extend(b["count"].as_f64());
    }
    out
}

const STATISTICS: [&[&str]; 5] = [
    &["count"],
    &["sum", "--col", "cost", "--lower", "0", "--upper", "500"],
    &["mean", "--col", "cost", "--lower", "0", "--upper", "500"],
    &["histogram", "--col", "clinic", "--categories", "north,south,east"],
    &["median", "--col", "cost", "--lower", "0", "--upper", "500"],
];

fn with(statistic: &[&str], more: &[&'static str]) -> Vec<String> {
    statistic.iter().chain(more).map(|s| s.to_string()).collect()
}

/// A sorted and a shuffled copy of the same rows, in memory or through the temporary files,
/// give the same release under the same seed, for every statistic.
#[test]
fn the_release_does_not_depend_on_row_order_or_the_spill() {
    let person = ["--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", "3"];
    for statistic in STATISTICS {
        let args = with(statistic, &person);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let want = release(4, &fixture(VISITS), &args);
        assert_eq!(release(4, &fixture("visits_sorted.csv"), &args), want, "{statistic:?} sorted");
        let spilled = json_of(seeded(4).env("DPSTAT_ID_MEMORY", "0").args(&args).arg(fixture(VISITS)));
        assert_eq!(spilled, want, "{statistic:?} spilled");
        let one_thread = json_of(seeded(4).args(&args).args(["--threads", "1"]).arg(fixture(VISITS)));
        assert_eq!(one_thread, want, "{statistic:?} one thread");
    }
}

/// The rows of `visits.csv` with one more patient who has `rows` visits.
fn with_patient(rows: usize) -> tempfile::NamedTempFile {
    let mut text = std::fs::read_to_string(fixture(VISITS)).unwrap();
    for i in 0..rows {
        text.push_str(&format!("NEW,{},{}\n", ["north", "south", "east"][i % 3], 100 + i % 300));
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

/// Neighbours: one more patient with 1, K or 10,000 visits moves every noisy number (same seed,
/// so the same noise) by at most the sensitivity the release states for it, however many rows
/// the patient has; row-level, 10,000 visits move the count by 10,000.
#[test]
fn one_person_moves_a_release_by_at_most_its_stated_sensitivity() {
    let k = "4";
    let person = ["--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", k];
    for statistic in &STATISTICS[..4] {
        let args = with(statistic, &person);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let base = release(9, &fixture(VISITS), &args);
        for rows in [1, 4, 10_000] {
            let file = with_patient(rows);
            let next = release(9, file.path(), &args);
            // A release's own Δ, or each part's.
            let deltas: Vec<f64> = match base["parts"].as_array() {
                Some(parts) => parts.iter().map(|p| p["sensitivity"].as_f64().unwrap()).collect(),
                None => vec![base["sensitivity"].as_f64().unwrap(); noisy_numbers(&base).len()],
            };
            let (a, b) = (noisy_numbers(&base), noisy_numbers(&next));
            assert_eq!(a.len(), b.len());
            let moved: f64 = if base["bins"].is_array() {
                // A histogram's Δ is the L1 distance over its bins.
                a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum()
            } else {
                0.0
            };
            if base["bins"].is_array() {
                assert!(moved <= deltas[0] && moved > 0.0, "{statistic:?}, {rows} rows: moved {moved}");
                continue;
            }
            let skip = usize::from(base["parts"].is_array() && base["value"].is_number());
            for ((x, y), d) in a.iter().skip(skip).zip(b.iter().skip(skip)).zip(&deltas) {
                assert!((x - y).abs() <= d + 1e-6, "{statistic:?}, {rows} rows: {x} -> {y}, stated {d}");
            }
        }
    }
    // Row level, the same patient moves the count by all of their rows.
    let (base, file) = (release(9, &fixture(VISITS), &["count", "--eps", "1"]), with_patient(10_000));
    let next = release(9, file.path(), &["count", "--eps", "1"]);
    assert_eq!(next["value"].as_f64().unwrap() - base["value"].as_f64().unwrap(), 10_000.0);
}

/// Every release says what it protects; a person-level one states its bounds and factor, its
/// sensitivity is the row-level one times the factor, and its accounting adds up exactly to ε:
/// the row-level parts at ε/factor, multiplied by the factor.
#[test]
fn releases_state_their_unit_and_an_accounting_that_adds_up() {
    let row = release(
        1,
        &fixture(VISITS),
        &["sum", "--col", "cost", "--lower", "0", "--upper", "500", "--eps", "1"],
    );
    assert_eq!(row["unit"], "row");
    assert_eq!(row["sensitivity"], 500.0);
    let args = ["sum", "--col", "cost", "--lower", "0", "--upper", "500", "--eps", "3/4"];
    let person = release(
        1,
        &fixture(VISITS),
        &[&args[..], &["--privacy-id", "patient", "--max-rows-per-id", "6"]].concat(),
    );
    assert_eq!(person["unit"], "person");
    assert_eq!(person["privacy_id"], serde_json::json!(["patient"]));
    assert_eq!((person["max_rows_per_id"].as_u64(), person["factor"].as_u64()), (Some(6), Some(6)));
    assert_eq!(person["sensitivity"], 3000.0);
    assert_eq!(person["scale"], 4000.0, "Δ/ε = 3000/(3/4)");
    assert_eq!(person["epsilon_exact"], "3/4");
    let accounting = &person["accounting"];
    assert_eq!(
        (accounting["composition"].as_str(), accounting["rows_factor"].as_u64()),
        (Some("per person"), Some(6))
    );
    assert_eq!(accounting["epsilon_exact"], "3/4");
    assert_eq!(accounting["row_level"]["epsilon_exact"], "1/8", "ε/6 at row level");
    // Grouped: T = min(K, G·K_g) = min(10, 2·3) = 6.
    let grouped = release(
        1,
        &fixture(VISITS),
        &[
            "count",
            "--eps",
            "1",
            "--by",
            "clinic",
            "--keys",
            "north,south",
            "--privacy-id",
            "patient",
            "--max-rows-per-id",
            "10",
            "--max-groups-per-id",
            "2",
            "--max-rows-per-group",
            "3",
        ],
    );
    assert_eq!((grouped["unit"].as_str(), grouped["factor"].as_u64()), (Some("person"), Some(6)));
    assert_eq!(grouped["epsilon_exact"], "1/1");
    assert_eq!(grouped["accounting"]["row_level"]["epsilon_exact"], "1/6");
    for g in grouped["groups"].as_array().unwrap() {
        assert_eq!((g["sensitivity"].as_f64(), g["epsilon_exact"].as_str()), (Some(6.0), Some("1/1")));
    }
}

/// A count of people: with one row per person (the default), a count counts patients.
#[test]
fn the_default_counts_each_person_once() {
    let people = release(2, &fixture(VISITS), &["count", "--eps", "1000", "--privacy-id", "patient"]);
    assert_eq!(people["value"], 60, "60 patients (ε 1000: the noise is 0 or ±1 rarely)");
    assert_eq!(people["max_rows_per_id"], 1);
}

#[test]
fn flags_that_cannot_hold_are_refused_before_reading() {
    let file = fixture(VISITS);
    fails_with(
        seeded(1)
            .args(["count", "--eps", "1", "--privacy-id", "patient", "--neighbours", "replace"])
            .arg(&file),
        &["--privacy-id with --neighbours replace"],
    );
    fails_with(
        seeded(1)
            .args(["count", "--eps", "1", "--privacy-id", "patient", "--max-groups-per-id", "2"])
            .arg(&file),
        &["--max-groups-per-id", "--by"],
    );
    fails_with(
        seeded(1)
            .args(["count", "--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", "0"])
            .arg(&file),
        &["--max-rows-per-id 0"],
    );
    fails_with(seeded(1).args(["count", "--eps", "1", "--privacy-id", "nobody"]).arg(&file), &["nobody"]);
    fails_with(
        seeded(1).args(["count", "--eps", "1", "--max-rows-per-id", "3"]).arg(&file),
        &["--privacy-id"],
    );
}

/// `--max-rows-per-id auto` spends a tenth of ε choosing K (the bias–variance rule,
/// `privacy::contribution::choose_rows`), states it, and its accounting still adds up to ε: the
/// choice's tenth, then the release per person at nine tenths. On the 60 patients of
/// visits.csv it says they are too few and uses K = 1 (tests/person_defaults.rs has data with
/// enough persons).
#[test]
fn auto_chooses_k_privately_and_accounts_for_it() {
    let args = ["count", "--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", "auto"];
    let v = release(5, &fixture(VISITS), &args);
    assert_eq!(v["max_rows_per_id"].as_u64(), Some(1));
    assert_eq!(v["auto"]["too_few_persons"], true);
    assert_eq!(v["auto"]["epsilon_exact"], "1/10");
    assert_eq!(v["epsilon_exact"], "1/1");
    let parts = v["accounting"]["parts"].as_array().unwrap();
    assert_eq!(parts[0]["epsilon_exact"], "1/10");
    assert_eq!(parts[1]["epsilon_exact"], "9/10");
    // The same seed chooses the same K on the sorted copy and through the spill.
    assert_eq!(release(5, &fixture("visits_sorted.csv"), &args), v);
    assert_eq!(json_of(seeded(5).env("DPSTAT_ID_MEMORY", "0").args(args).arg(fixture(VISITS))), v);
    fails_with(
        seeded(1)
            .args(["count", "--noise", "gaussian", "--eps", "1", "--delta", "1e-6"])
            .args(["--privacy-id", "patient", "--max-rows-per-id", "auto"])
            .arg(fixture(VISITS)),
        &["--max-rows-per-id auto", "gaussian"],
    );
    fails_with(
        seeded(1)
            .args(["count", "--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", "many"])
            .arg(fixture(VISITS)),
        &["'many'", "auto"],
    );
}

/// `--count-truncated` releases how many people had rows dropped (Δ = 1 per person) at a tenth
/// of ε, and the accounting still adds up to ε. At a huge ε its noise is ~0: 24 of the 60
/// patients in visits.csv have more than 3 visits.
#[test]
fn the_people_truncated_are_counted_and_charged() {
    let args = [
        "count",
        "--eps",
        "100000",
        "--privacy-id",
        "patient",
        "--max-rows-per-id",
        "3",
        "--count-truncated",
    ];
    let v = release(6, &fixture(VISITS), &args);
    assert_eq!(v["truncated"]["persons"], 24);
    assert_eq!(v["truncated"]["epsilon_exact"], "10000/1");
    assert_eq!(v["epsilon_exact"], "100000/1");
    let parts = v["accounting"]["parts"].as_array().unwrap();
    assert_eq!(
        (parts[0]["name"].as_str(), parts[0]["epsilon_exact"].as_str()),
        (Some("persons truncated"), Some("10000/1"))
    );
    assert_eq!(parts[1]["epsilon_exact"], "90000/1");
    let none = release(
        6,
        &fixture(VISITS),
        &[
            "count",
            "--eps",
            "100000",
            "--privacy-id",
            "patient",
            "--max-rows-per-id",
            "30",
            "--count-truncated",
        ],
    );
    assert_eq!(none["truncated"]["persons"], 0, "no patient has more than 30 visits");
    fails_with(
        seeded(1)
            .args([
                "count",
                "--noise",
                "gaussian",
                "--eps",
                "1",
                "--delta",
                "1e-6",
                "--privacy-id",
                "patient",
                "--count-truncated",
            ])
            .arg(fixture(VISITS)),
        &["--count-truncated", "gaussian"],
    );
}

/// `visits.csv` with `rows` more rows for each of `persons`, each with the id `id(i)`.
fn with_rows(extra: &[(&str, usize)]) -> tempfile::NamedTempFile {
    let mut text = std::fs::read_to_string(fixture(VISITS)).unwrap();
    for (id, rows) in extra {
        for i in 0..*rows {
            text.push_str(&format!("{id},{},{}\n", ["north", "south", "east"][i % 3], 100 + i % 300));
        }
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

/// Issue 35: rows with an empty id were one pseudo-person, whom a real person B's id-less rows
/// joined, and a K = 3 histogram moved by 4 in L1. They are left out now: with ten id-less
/// rows, the neighbour with B's ten rows also without an id (empty, blank or quoted empty) is
/// the same release under the same seed, for every statistic; the release states the policy,
/// never a count.
#[test]
fn rows_without_an_id_are_left_out_and_move_nothing() {
    let person = ["--eps", "1", "--privacy-id", "patient", "--max-rows-per-id", "3"];
    let base = with_rows(&[("", 10)]);
    for b in ["", "  ", "\"\""] {
        let neighbour = with_rows(&[("", 10), (b, 10)]);
        for statistic in &STATISTICS[..4] {
            let args = with(statistic, &person);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let want = release(5, base.path(), &args);
            assert_eq!(want["rows_without_id"], "left out");
            assert_eq!(release(5, neighbour.path(), &args), want, "{statistic:?}, B's id {b:?}");
            // And the same as the data without any id-less row.
            assert_eq!(release(5, &fixture(VISITS), &args), want, "{statistic:?}");
        }
    }
    // The note says it, as a rule.
    let out =
        seeded(5).args(["count", "--eps", "1", "--privacy-id", "patient"]).arg(base.path()).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("rows without an id are left out"), "{stderr}");
    assert!(!stderr.contains("10 rows"), "{stderr}");
    // With an id, B counts as a person again: the histogram moves by at most its Δ = 3.
    let args = with(STATISTICS[3], &person);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let with_b = release(5, with_rows(&[("", 10), ("B", 10)]).path(), &args);
    let (a, b) = (noisy_numbers(&release(5, base.path(), &args)), noisy_numbers(&with_b));
    let moved: f64 = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum();
    assert!(moved > 0.0 && moved <= 3.0, "moved {moved}");
}
