//! Keys found in the data per person (`--by COL --discover --privacy-id ID`) through the binary:
//! the selection counts distinct persons per key, so a key held by one person with many rows is
//! not released where the same key is released at row level; the JSON states the unit, what
//! the selection counts and its per-key threshold; the parts add up to the charge; and the
//! combinations the guarantee does not cover are refused before anything is read.
//!
//! fixtures/visits_discover.csv: 140 patients with 1 to 4 visits each, patients p001–p080 at
//! clinic `north`, p061–p140 at `south` (p061–p080 at both), and one patient, p999, with 50
//! visits at clinic `rare`.

use crate::common;

use common::{fails_with, fixture, json_of, seeded};
use serde_json::Value;

fn visits() -> std::path::PathBuf {
    fixture("visits_discover.csv")
}

/// `count --by clinic --discover` at ε = 1, δ = 1e-7, with `extra` flags, under `seed`.
fn count_by_clinic(seed: u64, extra: &[&str]) -> Value {
    let mut cmd = seeded(seed);
    cmd.args(["count", "--by", "clinic", "--discover", "--eps", "1", "--delta", "1e-7"])
        .args(extra)
        .arg(visits());
    json_of(&mut cmd)
}

fn keys(release: &Value) -> Vec<&str> {
    release["groups"].as_array().unwrap().iter().map(|g| g["key"].as_str().unwrap()).collect()
}

/// At row level `rare` has 50 rows and is released (τ = 19, scale 10/9); per person it has one
/// person, whose chance of showing is at most δ, while `north` and `south` (about 70 persons
/// each with one group per person) are released. Over several seeds.
#[test]
fn a_key_of_one_person_with_fifty_rows_is_released_per_row_but_not_per_person() {
    for seed in 1..=4 {
        let rows = count_by_clinic(seed, &[]);
        assert_eq!(rows["unit"], "row");
        assert!(rows["discovery"].get("per_person").is_none(), "{rows}");
        assert_eq!(keys(&rows), ["north", "rare", "south"], "seed {seed}: {rows}");

        let persons = count_by_clinic(seed, &["--privacy-id", "patient"]);
        assert_eq!(keys(&persons), ["north", "south"], "seed {seed}: {persons}");
        assert_eq!(persons["unit"], "person");
        assert_eq!(persons["privacy_id"], serde_json::json!(["patient"]));
        assert_eq!(persons["discovery"]["per_person"]["counts"], "distinct persons");
        assert_eq!(persons["discovery"]["per_person"]["keys_per_person"], 1);
        // A count of one row per person and key is the selection's own: its threshold is the
        // row-level one at the same ε and δ.
        assert_eq!(persons["discovery"]["threshold"], rows["discovery"]["threshold"]);
        for group in persons["groups"].as_array().unwrap() {
            assert_eq!(group["unit"], "person", "{group}");
            // Persons, not rows: north has 80 patients (182 visits), of whom 20 are also at
            // south and count in one of the two; the noise has scale 10/9.
            let value = group["value"].as_i64().unwrap();
            assert!((50..=90).contains(&value), "seed {seed}: {group}");
        }
        for release in [&rows, &persons] {
            assert_eq!(release["epsilon_exact"], "1/1");
            assert_eq!(release["delta_exact"], "1/10000000");
        }
    }
}

/// A person may add to g = min(G, K) keys: each key is thresholded at the selection's ε/g and
/// δ/g (so τ grows), the key cap's margin grows, the count in the groups (two rows per person
/// and key allowed) runs at its half of ε divided by the factor T, and the accounting's parts
/// add up to exactly the (ε, δ) charged.
#[test]
fn a_person_in_g_keys_raises_the_threshold_and_the_parts_add_up() {
    let one = count_by_clinic(5, &["--privacy-id", "patient", "--max-rows-per-id", "4"]);
    let two = count_by_clinic(
        5,
        &["--privacy-id", "patient", "--max-rows-per-id", "4", "--max-groups-per-id", "2"],
    );
    let (p1, p2) = (&one["discovery"]["per_person"], &two["discovery"]["per_person"]);
    assert_eq!((p1["keys_per_person"].as_u64(), p2["keys_per_person"].as_u64()), (Some(1), Some(2)));
    // Half of the nine tenths of ε for the selection; each key a g-th of it.
    assert_eq!(p1["epsilon_exact"], "9/20");
    assert_eq!(
        (p1["epsilon_per_key_exact"].as_str(), p1["delta_per_key_exact"].as_str()),
        (Some("9/20"), Some("9/100000000"))
    );
    assert_eq!(
        (p2["epsilon_per_key_exact"].as_str(), p2["delta_per_key_exact"].as_str()),
        (Some("9/40"), Some("9/200000000"))
    );
    let tau = |r: &Value| r["discovery"]["threshold"].as_i64().unwrap();
    assert!(tau(&two) > tau(&one) + 30, "{} {}", tau(&one), tau(&two));
    let margin = |r: &Value| r["discovery"]["key_cap"]["margin"].as_i64().unwrap();
    // ⌈ln(1e8)/0.1⌉ = 185; g = 2: ⌈2·ln(1e8)/0.1⌉ + 1 = 370.
    assert_eq!((margin(&one), margin(&two)), (185, 370));
    assert_eq!(keys(&two), ["north", "south"]);
    for release in [&one, &two] {
        assert_eq!(release["epsilon_exact"], "1/1");
        assert_eq!(release["delta_exact"], "1/10000000");
        let parts = release["accounting"]["parts"].as_array().unwrap();
        let names: Vec<&str> = parts.iter().map(|p| p["name"].as_str().unwrap_or("")).collect();
        assert_eq!(names, ["key cap", "keys", ""], "{release}");
        assert_eq!(
            (parts[0]["epsilon_exact"].as_str(), parts[0]["delta_exact"].as_str()),
            (Some("1/10"), Some("1/100000000"))
        );
        assert_eq!(
            (parts[1]["epsilon_exact"].as_str(), parts[1]["delta_exact"].as_str()),
            (Some("9/20"), Some("9/100000000"))
        );
        assert_eq!(parts[2]["composition"], "per person");
        assert_eq!(parts[2]["epsilon_exact"], "9/20");
    }
    // T = min(K, G·K_g): 4 either way; the groups' row-level count runs at 9/20 / 4.
    assert_eq!(two["factor"], 4);
    assert_eq!(two["accounting"]["parts"][2]["row_level"]["epsilon_exact"], "9/80");
    for group in two["groups"].as_array().unwrap() {
        assert_eq!(group["unit"], "person");
        assert_eq!(group["sensitivity"], 4.0, "{group}");
    }
}

/// A mean by keys found per person: the groups are released per person at half the rest of ε,
/// the whole is exactly (ε, δ), and a run with the rows of the file reversed (another order of
/// the same multiset) gives the same release under the same seed.
#[test]
fn a_mean_per_person_is_exact_and_order_free() {
    let args = [
        "mean",
        "--col",
        "cost",
        "--lower",
        "0",
        "--upper",
        "100",
        "--by",
        "clinic",
        "--discover",
        "--eps",
        "1",
        "--delta",
        "1e-7",
        "--privacy-id",
        "patient",
        "--max-rows-per-id",
        "3",
    ];
    let release = json_of(seeded(9).args(args).arg(visits()));
    assert_eq!(release["epsilon_exact"], "1/1");
    assert_eq!(release["unit"], "person");
    assert_eq!(keys(&release), ["north", "south"]);
    for group in release["groups"].as_array().unwrap() {
        assert_eq!(group["epsilon_exact"], "9/20", "{group}");
        let value = group["value"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&value), "{group}");
    }
    let text = std::fs::read_to_string(visits()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1..].reverse();
    let dir = tempfile::tempdir().unwrap();
    let reversed = dir.path().join("reversed.csv");
    std::fs::write(&reversed, lines.join("\n") + "\n").unwrap();
    let again = json_of(seeded(9).args(args).arg(&reversed));
    assert_eq!(again["groups"], release["groups"]);
    // Every row through the temporary files: the same persons, the same release.
    let spilled = json_of(seeded(9).env("DPSTAT_ID_MEMORY", "0").args(args).arg(visits()));
    assert_eq!(spilled["groups"], release["groups"]);
}

/// The key cap per person: over the cap, the release is withheld (exit 5, nothing on stdout),
/// the outcome of its noisy test; with g = 2 the same cap is below the larger margin
/// (⌈2·ln(1e8)/10⌉ + 1 = 5 at ε_c = 10) and refused before anything is read.
#[test]
fn the_key_cap_per_person_withholds_or_refuses() {
    let over = ["--eps", "100", "--max-keys", "3", "--privacy-id", "patient"];
    let mut cmd = seeded(1);
    cmd.args(["count", "--by", "clinic", "--discover", "--delta", "1e-7"]).args(over).arg(visits());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("more distinct keys than --max-keys 3"));
    let mut cmd = seeded(1);
    cmd.args(["count", "--by", "clinic", "--discover", "--delta", "1e-7"])
        .args(over)
        .args(["--max-rows-per-id", "2", "--max-groups-per-id", "2"])
        .arg(visits());
    fails_with(&mut cmd, &["--max-keys 3", "must exceed 5"]);
}

/// What the guarantee does not cover is refused before anything is read: replace with a
/// privacy id, a histogram's discovery per person, and a --max-keys that the key cap's larger
/// margin per person (g = 2 here) leaves no room in, though it would do at row level.
#[test]
fn uncovered_combinations_are_refused() {
    let base = ["--by", "clinic", "--discover", "--eps", "1", "--delta", "1e-7", "--privacy-id", "patient"];
    fails_with(
        seeded(1).arg("count").args(base).args(["--neighbours", "replace"]).arg(visits()),
        &["--privacy-id with --neighbours replace"],
    );
    fails_with(
        seeded(1)
            .args(["histogram", "--col", "clinic", "--discover", "--eps", "1", "--delta", "1e-7"])
            .args(["--privacy-id", "patient"])
            .arg(visits()),
        &["histogram --discover with --privacy-id"],
    );
    let g2 = ["--max-rows-per-id", "2", "--max-groups-per-id", "2", "--max-keys", "300"];
    fails_with(seeded(1).arg("count").args(base).args(g2).arg(visits()), &["--max-keys 300", "370"]);
    let row_level = count_by_clinic(1, &["--max-keys", "300"]);
    assert_eq!(row_level["discovery"]["max_keys"], 300);
}
