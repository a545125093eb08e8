//! `--privacy-id` in workloads (`dpstat run`, `privacy_id` in the file) and `dpstat describe`:
//! each person's rows bounded once, to K, for every query; each query at its share divided by
//! K on the bounded rows and stated per person; the parts adding up to the charge exactly.

use crate::common;

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use common::{dpstat, fails_with, fixture, json_of, seeded, stdout_of, unseeded};
use num_bigint::BigInt;
use num_rational::BigRational;
use serde_json::Value;
use tempfile::TempDir;

const VISITS: &str = "visits_workload.csv";

/// The JSON lines of a workload or describe run.
fn lines(cmd: &mut assert_cmd::Command) -> Vec<Value> {
    let text = stdout_of(cmd.args(["--format", "json"]));
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect()
}

fn run(seed: u64, toml: &Path) -> Vec<Value> {
    lines(seeded(seed).arg("run").arg(toml).arg(fixture(VISITS)))
}

/// An exact `n/d` of a release.
fn exact(v: &Value) -> BigRational {
    let text = v.as_str().unwrap_or_else(|| panic!("not an exact number: {v}"));
    let (n, d) = text.split_once('/').unwrap_or_else(|| panic!("not n/d: {text}"));
    BigRational::new(n.parse::<BigInt>().unwrap(), d.parse::<BigInt>().unwrap())
}

/// A workload file in `dir` with these lines.
fn workload(dir: &TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    fs::write(&path, text).unwrap();
    path
}

/// Each patient's rows in the fixture: the true number of rows K lets through is Σ min(rows, K).
fn rows_per_patient() -> HashMap<String, usize> {
    let text = fs::read_to_string(fixture(VISITS)).unwrap();
    let mut rows = HashMap::new();
    for line in text.lines().skip(1) {
        *rows.entry(line.split(',').next().unwrap().to_string()).or_insert(0) += 1;
    }
    rows
}

#[test]
fn every_query_states_the_person_and_its_factor() {
    let lines = run(3, &fixture("compose_person.toml"));
    assert_eq!(lines.len(), 4);
    for line in &lines {
        assert_eq!(line["unit"], "person", "{line}");
        assert_eq!(line["privacy_id"], serde_json::json!(["patient"]), "{line}");
        assert_eq!(line["max_rows_per_id"], 3, "{line}");
        assert_eq!(line["factor"], 3, "{line}");
        assert_eq!(line["accounting"]["rows_factor"], 3, "{line}");
    }
    // A count moves by K rows; the grouped count's groups each state it too.
    assert_eq!(lines[0]["sensitivity"], 3.0);
    let groups = lines[3]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 4);
    assert!(groups.iter().all(|g| g["unit"] == "person" && g["sensitivity"] == 3.0), "{groups:?}");
    assert!(lines[3]["composition"].as_str().unwrap().contains("max_rows_per_id"), "{}", lines[3]);
    // The text table says the unit once, under the total.
    let text = stdout_of(dpstat().arg("run").arg(fixture("compose_person.toml")).arg(fixture(VISITS)));
    assert!(
        text.ends_with(
            "unit: one person (by patient), at most 3 rows each; rows without an id are left out\n"
        ),
        "{text}"
    );
    // Without privacy_id a workload is row-level, as before.
    let dir = TempDir::new().unwrap();
    let rows = workload(&dir, "rows.toml", "epsilon = 1\n[[query]]\nname = \"n\"\nkind = \"count\"\n");
    assert_eq!(run(3, &rows)[0]["unit"], "row");
}

/// What each query's accounting totals is its share, the K-fold of its row-level parts, and
/// the shares add up to the workload's total exactly: in ε, in ρ, and in the ledger's charge.
#[test]
fn the_parts_add_up_to_the_charge_exactly() {
    let dir = TempDir::new().unwrap();
    let gaussian = fs::read_to_string(fixture("compose_person.toml"))
        .unwrap()
        .replace("epsilon = \"1\"", "noise = \"gaussian\"\nrho = \"0.5\"\ndelta = \"1e-6\"")
        .replace("share = \"0.25\"", "share = \"0.125\"");
    let gaussian = workload(&dir, "gaussian.toml", &gaussian);
    for (toml, unit, factor, total) in
        [(fixture("compose_person.toml"), "epsilon_exact", 3, "1/1"), (gaussian, "rho_exact", 9, "1/2")]
    {
        let lines = run(5, &toml);
        let mut sum = BigRational::from_integer(BigInt::from(0));
        for line in &lines {
            let accounting = &line["accounting"];
            let share = exact(&accounting[unit]);
            let row_level = exact(&accounting["row_level"][unit]);
            assert_eq!(share, row_level * BigInt::from(factor), "{line}");
            sum += share;
        }
        assert_eq!(sum, exact(&Value::from(total)), "{}", toml.display());
    }
    // The ledger is charged the total once (a ledger needs the cells' policy to be skip).
    let ledger = dir.path().join("ledger.jsonl");
    let skip = fs::read_to_string(fixture("compose_person.toml"))
        .unwrap()
        .replace("column = \"cost\"", "column = \"cost\"\ninvalid = \"skip\"");
    let skip = workload(&dir, "skip.toml", &skip);
    stdout_of(
        unseeded()
            .arg("run")
            .arg(&skip)
            .args(["--budget", "5", "--ledger"])
            .arg(&ledger)
            .arg(fixture(VISITS)),
    );
    let budget = json_of(unseeded().args(["budget", "--ledger"]).arg(&ledger));
    assert_eq!(budget["datasets"][0]["spent_exact"], "1/1", "{budget}");
}

/// A workload of one query and the same single release, seeded alike, keep the same rows of each
/// person (same key, same cells) and draw the same noise: the same numbers. A different K
/// gives other numbers, so the comparison sees the bounding.
#[test]
fn a_one_query_workload_is_the_single_release() {
    let dir = TempDir::new().unwrap();
    let cases: [(&str, &[&str], &str); 4] = [
        ("count", &["count", "--eps", "0.7"], "epsilon = \"0.7\"\n[[query]]\nname = \"q\"\nkind = \"count\"\n"),
        (
            "sum",
            &["sum", "--column", "cost", "--lower", "0", "--upper", "500", "--eps", "1"],
            "epsilon = 1\n[[query]]\nname = \"q\"\nkind = \"sum\"\ncolumn = \"cost\"\nlower = 0\nupper = 500\n",
        ),
        (
            "mean",
            &["mean", "--column", "cost", "--lower", "0", "--upper", "500", "--eps", "2"],
            "epsilon = 2\n[[query]]\nname = \"q\"\nkind = \"mean\"\ncolumn = \"cost\"\nlower = 0\nupper = 500\n",
        ),
        (
            "gaussian sum",
            &[
                "sum", "--column", "cost", "--lower", "0", "--upper", "500", "--noise", "gaussian", "--eps", "1",
                "--delta", "1e-6",
            ],
            "noise = \"gaussian\"\nepsilon = 1\ndelta = \"1e-6\"\n[[query]]\nname = \"q\"\nkind = \"sum\"\n\
             column = \"cost\"\nlower = 0\nupper = 500\n",
        ),
    ];
    for (what, args, toml) in cases {
        let toml =
            workload(&dir, "one.toml", &format!("privacy_id = \"patient\"\nmax_rows_per_id = 4\n{toml}"));
        let single = |k: &str| {
            json_of(
                seeded(11)
                    .args(args)
                    .args(["--privacy-id", "patient", "--max-rows-per-id", k])
                    .arg(fixture(VISITS)),
            )
        };
        let (one, alone) = (&run(11, &toml)[0], single("4"));
        for key in
            ["value", "value_units", "sensitivity", "l2_sensitivity", "unit", "factor", "epsilon_exact"]
        {
            assert_eq!(one[key], alone[key], "{what}: {key}\nworkload: {one}\nsingle: {alone}");
        }
        assert!(one["value"].is_number(), "{what}: {one}");
        assert_ne!(one["value"], single("2")["value"], "{what}: K = 2 keeps other rows");
    }
}

/// Which rows are kept depends on the key, the ids and the rows only: the rows in reverse
/// order, and the spill to temporary files, give the same release.
#[test]
fn the_kept_rows_do_not_depend_on_order_or_memory() {
    let dir = TempDir::new().unwrap();
    let text = fs::read_to_string(fixture(VISITS)).unwrap();
    let mut rows: Vec<&str> = text.lines().collect();
    rows[1..].reverse();
    let reversed = dir.path().join("reversed.csv");
    fs::write(&reversed, rows.join("\n") + "\n").unwrap();
    let toml = fixture("compose_person.toml");
    let out = |file: &Path, cap: Option<&str>| {
        let mut cmd = seeded(8);
        if let Some(cap) = cap {
            cmd.env("DPSTAT_ID_MEMORY", cap);
        }
        stdout_of(cmd.args(["run", "--format", "json"]).arg(&toml).arg(file))
    };
    let first = out(&fixture(VISITS), None);
    assert_eq!(out(&reversed, None), first, "reversed rows");
    assert_eq!(out(&fixture(VISITS), Some("64")), first, "spilled");
    assert_eq!(out(&reversed, Some("64")), first, "reversed and spilled");
}

/// The rows are bounded once, before any query's filter or groups: a person keeps K rows of
/// all their rows, and each query filters those. So a query on north visits and one on the rest
/// split the kept rows exactly, and so do the groups of a grouped count; with each query
/// bounding its own filtered rows, the parts would add up to more. (A very large ε makes the
/// noise vanish, so the counts are the true ones.)
#[test]
fn bounding_comes_before_each_querys_filter() {
    let dir = TempDir::new().unwrap();
    let k = 3;
    let toml = workload(
        &dir,
        "split.toml",
        &format!(
            "epsilon = \"300000\"\nprivacy_id = \"patient\"\nmax_rows_per_id = {k}\n\
             [[query]]\nname = \"all\"\nkind = \"count\"\n\
             [[query]]\nname = \"north\"\nkind = \"count\"\nwhere = [\"clinic=north\"]\n\
             [[query]]\nname = \"rest\"\nkind = \"count\"\nwhere = [\"clinic!=north\"]\n\
             [[query]]\nname = \"by\"\nkind = \"count\"\nby = \"clinic\"\nkeys = [\"north\", \"south\", \"east\"]\n"
        ),
    );
    let lines = run(4, &toml);
    let count = |line: &Value| line["value"].as_i64().unwrap();
    let kept: usize = rows_per_patient().values().map(|&r| r.min(k)).sum();
    assert_eq!(count(&lines[0]) as usize, kept, "{}", lines[0]);
    assert_eq!(count(&lines[1]) + count(&lines[2]), count(&lines[0]));
    let groups: i64 = lines[3]["groups"].as_array().unwrap().iter().map(count).sum();
    assert_eq!(groups, count(&lines[0]));
    assert!(count(&lines[1]) > 0 && count(&lines[2]) > 0);
}

/// With `max_groups_per_id` and `max_rows_per_group` a workload bounds each person's rows by
/// the groups of its one `by` column, as a single grouped release with the same G, K_g and K
/// does: under one seed the same rows are kept and the same noise drawn, so a one-query
/// workload releases exactly what `dpstat sum --by … --max-groups-per-id …` does. Two `by`
/// columns are refused: one bounding serves every query.
#[test]
fn a_workload_bounded_by_group_releases_what_the_single_release_does() {
    let dir = TempDir::new().unwrap();
    let head = "epsilon = \"1\"\nprivacy_id = \"patient\"\nmax_groups_per_id = 2\nmax_rows_per_group = 3\n\
                max_rows_per_id = 5\n";
    let sum = "[[query]]\nname = \"s\"\nkind = \"sum\"\ncolumn = \"cost\"\nlower = 0\nupper = 500\n\
               by = \"clinic\"\nkeys = [\"east\", \"north\", \"south\"]\n";
    let toml = workload(&dir, "grouped.toml", &format!("{head}{sum}"));
    let groups = |line: &Value| line["groups"].clone();
    for seed in [5, 6, 7] {
        let workload = run(seed, &toml);
        let single = lines(
            seeded(seed)
                .args([
                    "sum", "--col", "cost", "--lower", "0", "--upper", "500", "--eps", "1", "--by", "clinic",
                ])
                .args(["--keys", "east,north,south", "--privacy-id", "patient", "--max-groups-per-id", "2"])
                .args(["--max-rows-per-group", "3", "--max-rows-per-id", "5"])
                .arg(fixture(VISITS)),
        );
        assert_eq!(groups(&workload[0]), groups(&single[0]), "seed {seed}");
        assert_eq!(workload[0]["factor"], 5, "{}", workload[0]);
        assert_eq!(workload[0]["max_groups_per_id"], 2, "{}", workload[0]);
    }
    let other = "[[query]]\nname = \"t\"\nkind = \"count\"\nby = \"patient\"\nkeys = [\"p01\"]\n";
    let two = workload(&dir, "two.toml", &format!("{head}{sum}{other}"));
    fails_with(seeded(1).arg("run").arg(&two).arg(fixture(VISITS)), &["line 3", "'s' groups by", "'t' by"]);
    let fewer = "[[query]]\nname = \"n\"\nkind = \"count\"\nby = \"clinic\"\nkeys = [\"east\", \"north\"]\n";
    let other_keys = workload(&dir, "keys.toml", &format!("{head}{sum}{fewer}"));
    fails_with(seeded(1).arg("run").arg(&other_keys).arg(fixture(VISITS)), &["'s' and 'n'", "same keys"]);
}

#[test]
fn bounds_a_workload_cannot_keep_are_refused() {
    let dir = TempDir::new().unwrap();
    let query = "[[query]]\nname = \"n\"\nkind = \"count\"\n";
    let cases: [(&str, &[&str]); 8] = [
        (
            "privacy_id = \"patient\"\nmax_groups_per_id = 2\n",
            &["line 3", "max_groups_per_id", "no query has one", "max_rows_per_id = K"],
        ),
        (
            "privacy_id = \"patient\"\nmax_rows_per_group = 2\n",
            &["line 3", "max_rows_per_group", "no query has one"],
        ),
        ("max_rows_per_id = 3\n", &["line 2", "privacy_id = \"COL\""]),
        (
            "privacy_id = \"patient\"\nmax_rows_per_id = 0\n",
            &["line 3", "max_rows_per_id: give a whole number from 1"],
        ),
        ("privacy_id = \"patient\"\nmax_rows_per_id = \"3\"\n", &["line 3", "max_rows_per_id"]),
        ("privacy_id = \"patient\"\nneighbours = \"replace\"\n", &["line 2", "replace", "add-remove"]),
        ("privacy_id = []\n", &["line 2", "privacy_id"]),
        ("privacy_id = \"nobody\"\n", &["nobody", "patient, clinic, cost"]),
    ];
    for (head, needles) in cases {
        let toml = workload(&dir, "bad.toml", &format!("epsilon = 1\n{head}{query}"));
        fails_with(seeded(1).arg("run").arg(&toml).arg(fixture(VISITS)), needles);
        if !needles.contains(&"nobody") {
            // `plan run` reads the same file, and refuses it alike.
            fails_with(seeded(1).args(["plan", "run"]).arg(&toml).args(["--delta", "1e-6"]), needles);
        }
    }
    let describe: [(&[&str], &[&str]); 3] = [
        (
            &["--privacy-id", "patient", "--max-groups-per-id", "2"],
            &["--max-groups-per-id", "describe", "--max-rows-per-id K"],
        ),
        (&["--privacy-id", "patient", "--max-rows-per-group", "2"], &["--max-rows-per-group"]),
        (&["--privacy-id", "patient", "--neighbours", "replace"], &["replace"]),
    ];
    for (args, needles) in describe {
        fails_with(
            seeded(1)
                .args(["describe", "--cols", "cost:0:500", "--eps", "1"])
                .args(args)
                .arg(fixture(VISITS)),
            needles,
        );
    }
}

/// `describe --privacy-id`: every query per person, the parts adding up to --eps; a column's
/// count (its own noisy count, with `--invalid skip`) states the bound of the noise it was
/// drawn with, which is the bound a single count at that share states per person.
#[test]
fn describe_summarises_people() {
    let person = ["--privacy-id", "patient", "--max-rows-per-id", "3"];
    for invalid in ["error", "skip"] {
        let lines = lines(
            seeded(2)
                .args(["describe", "--cols", "cost:0:500", "--eps", "1", "--invalid", invalid])
                .args(person)
                .arg(fixture(VISITS)),
        );
        let mut sum = BigRational::from_integer(BigInt::from(0));
        for line in &lines {
            assert_eq!((&line["unit"], &line["factor"]), (&Value::from("person"), &Value::from(3)), "{line}");
            sum += exact(&line["accounting"]["epsilon_exact"]);
        }
        assert_eq!(sum, BigRational::from_integer(BigInt::from(1)), "{invalid}");
    }
    // With skip the mean keeps its own count, at a quarter of the column's ε: its bound is a
    // person-level count's at that ε.
    let text = stdout_of(
        seeded(2)
            .args(["describe", "--cols", "cost:0:500", "--eps", "1", "--invalid", "skip"])
            .args(person)
            .arg(fixture(VISITS)),
    );
    let count = json_of(seeded(2).args(["count", "--eps", "0.25"]).args(person).arg(fixture(VISITS)));
    let bound = format!("±{}", count["accuracy"]["error_bound"].as_f64().unwrap());
    let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[0], "cost", "{text}");
    assert_eq!(row[5], bound, "{text}");
    assert!(
        text.ends_with(
            "unit: one person (by patient), at most 3 rows each; rows without an id are left out\n"
        ),
        "{text}"
    );
}

/// A describe column whose bounds are not found (few kept rows at a small ε) is withheld inside
/// the person-level workload: no value, its share spent, and the whole still adds up.
#[test]
fn a_withheld_query_still_adds_up_per_person() {
    let out = seeded(3)
        .args([
            "describe",
            "--cols",
            "cost",
            "--eps",
            "0.3",
            "--privacy-id",
            "patient",
            "--max-rows-per-id",
            "3",
        ])
        .args(["--format", "json"])
        .arg(fixture(VISITS))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mean = lines.iter().find(|l| l["name"] == "cost.mean").unwrap();
    assert!(mean["value"].is_null(), "{mean}");
    assert_eq!(mean["unit"], "person");
    let sum = lines.iter().map(|l| exact(&l["accounting"]["epsilon_exact"])).sum::<BigRational>();
    assert_eq!(sum, BigRational::new(BigInt::from(3), BigInt::from(10)));
}

/// `plan run` plans each query at its share divided by K: the bound a person-level release of
/// the workload states, and it says so.
#[test]
fn plan_run_states_the_person_level_noise() {
    let toml = fixture("compose_person.toml");
    let plan = json_of(seeded(1).args(["plan", "run"]).arg(&toml).args(["--delta", "1e-6"]));
    assert_eq!((&plan["unit"], &plan["factor"]), (&Value::from("person"), &Value::from(3)), "{plan}");
    let released = run(3, &toml);
    for (name, at) in [("visits", 0), ("cost_sum", 1)] {
        let planned = plan["queries"].as_array().unwrap().iter().find(|q| q["name"] == name).unwrap();
        assert_eq!(planned["laplace_error_bound"], released[at]["accuracy"]["error_bound"], "{name}");
    }
    let text = stdout_of(seeded(1).args(["plan", "run"]).arg(&toml).args(["--delta", "1e-6"]));
    assert!(text.contains("unit        one person (by patient), at most 3 rows each"), "{text}");
}
