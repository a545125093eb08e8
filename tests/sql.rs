//! `dpstat sql "QUERY"`: GoogleSQL's differential-privacy queries, translated into the workload
//! `dpstat run` executes. BigQuery's documented example queries (over `fixtures/professors.csv`,
//! the documentation's `professors` table with more rows) and SmartNoise SQL's README query
//! (over `fixtures/pums.csv`, PUMS's columns) run; every seeded release equals the one
//! `dpstat run` gives for the workload `--explain` prints; refusals come before anything is read
//! or charged; under a ledger a query is one record.

use crate::common;

use std::fs;
use std::path::Path;

use common::{dpstat, fails_with, fixture, refused_under_a_ledger, seeded, stdout_of, unseeded};
use tempfile::TempDir;

const ITEMS: &str = "pen,pencil,scissors";

/// BigQuery's example queries of the DP aggregate functions (COUNT(*) as written and with
/// bounds, COUNT(expr), SUM, AVG, PERCENTILE_CONT with its per-row bounds) and of the clause,
/// with `FROM professors` and the public groups as `--keys`, or in the query as
/// `WHERE item IN (…)`.
const BIGQUERY: [&str; 7] = [
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=10, delta=.01, max_groups_contributed=1, privacy_unit_column=id) \
     item, COUNT(*) times_requested FROM professors GROUP BY item",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=10, delta=.01, max_groups_contributed=1, privacy_unit_column=id) \
     item, AVG(quantity, contribution_bounds_per_group => (0,100)) average_quantity FROM professors GROUP BY item",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=10, delta=.01, max_groups_contributed=1, privacy_unit_column=id) \
     item, COUNT(*, contribution_bounds_per_group=>(0, 100)) times_requested FROM professors GROUP BY item",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=10, delta=.01, max_groups_contributed=1, privacy_unit_column=id) \
     item, COUNT(item, contribution_bounds_per_group => (0,100)) times_requested FROM professors GROUP BY item",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=10, delta=.01, max_groups_contributed=1, privacy_unit_column=id) \
     item, PERCENTILE_CONT(quantity, 0.5, contribution_bounds_per_row => (0,100)) percentile_requested \
     FROM professors GROUP BY item",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=10, delta=.01, max_groups_contributed=1, privacy_unit_column=id) \
     item, SUM(quantity, contribution_bounds_per_group => (0,100)) quantity FROM professors GROUP BY item",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon=10, delta=.01, max_groups_contributed=2, privacy_unit_column=id) \
     item, AVG(quantity, contribution_bounds_per_group=>(0,100)) average_quantity FROM professors \
     WHERE item IN ('pen', 'pencil', 'scissors') GROUP BY item",
];

/// The ledger's records after its header line.
fn ledger_records(ledger: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(ledger).unwrap().lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `dpstat sql QUERY` with `args`, seeded.
fn sql(seed: u64, query: &str, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = seeded(seed);
    cmd.arg("sql").arg(query).args(args);
    cmd
}

/// The workload `--explain` prints, written to `dir`.
fn explained(dir: &Path, query: &str, args: &[&str]) -> std::path::PathBuf {
    let text = stdout_of(sql(1, query, args).arg("--explain"));
    let path = dir.join("explained.toml");
    fs::write(&path, text).unwrap();
    path
}

/// The seeded output of the query equals `dpstat run`'s of its explained workload, in text
/// and JSON; returns the text.
fn same_as_run(query: &str, keys: &[&str], file: &Path) -> String {
    let dir = TempDir::new().unwrap();
    let workload = explained(dir.path(), query, keys);
    let mut text = String::new();
    for format in ["text", "json"] {
        for seed in [1, 2] {
            let got = stdout_of(sql(seed, query, keys).args(["--format", format]).arg(file));
            let want = stdout_of(seeded(seed).arg("run").arg(&workload).args(["--format", format]).arg(file));
            assert_eq!(got, want, "{query}");
            if format == "text" {
                text = got;
            }
        }
    }
    text
}

/// Every example runs, releases exactly the three public groups (no `other`), and equals the
/// workload run.
#[test]
fn bigquerys_examples_run_and_equal_their_workload() {
    let file = fixture("professors.csv");
    for (i, query) in BIGQUERY.iter().enumerate() {
        let keys: &[&str] = if query.contains(" IN (") { &[] } else { &["--keys", ITEMS] };
        let text = same_as_run(query, keys, &file);
        let rows: Vec<&str> =
            text.lines().skip(1).filter(|l| !l.starts_with("total") && !l.starts_with("unit:")).collect();
        let groups: Vec<&str> = rows.iter().map(|l| l.split_whitespace().nth(3).unwrap()).collect();
        assert_eq!(groups, ["pen", "pencil", "scissors"], "example {i}: {text}");
        assert!(text.lines().any(|l| l.starts_with("total") && l.contains(" 10 ")), "{text}");
    }
}

/// The JSON of a person-level query states the person unit, and each aggregate's ε is its
/// even share: three aggregates at ε = 1 get exactly 1/3 each.
#[test]
fn epsilon_is_split_evenly_and_exactly() {
    let query = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1, privacy_unit_column = id, max_groups_contributed = 2) \
                 item, COUNT(*) n, SUM(quantity, contribution_bounds_per_group => (0, 50)) total, \
                 AVG(quantity, contribution_bounds_per_group => (0, 50)) mean FROM professors GROUP BY item";
    let text =
        stdout_of(sql(1, query, &["--keys", ITEMS, "--format", "json"]).arg(fixture("professors.csv")));
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    for (line, name) in lines.iter().zip(["n", "total", "mean"]) {
        assert_eq!(line["name"], name);
        assert_eq!(line["epsilon_exact"], "1/3", "{line}");
        assert_eq!(line["total_epsilon_exact"], "1/1");
        assert_eq!(line["unit"], "person", "{line}");
    }
    let explain = stdout_of(&mut sql(1, query, &["--keys", ITEMS, "--explain"]));
    assert!(explain.contains("max_rows_per_id = 2\n"), "{explain}");
    for name in ["n", "total", "mean"] {
        assert!(explain.contains(&format!("#   {name}: epsilon 1/3\n")), "{explain}");
    }
}

/// Per person, BigQuery's bounds clamp each person's total in a group (SUM) and AVG is the
/// mean of per-person averages: person 1's three pencils of 40 count as min(120, 100) in the
/// sum (row clamping would give 120) and as one average of 40 in the mean (not three rows).
/// At ε = 1000 the noise is far below the differences.
#[test]
fn per_person_sum_clamps_totals_and_avg_averages_averages() {
    let query = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1000, max_groups_contributed = 3, \
                 privacy_unit_column = id) item, SUM(quantity, contribution_bounds_per_group => (0, 100)) total, \
                 AVG(quantity, contribution_bounds_per_group => (0, 100)) mean FROM t \
                 WHERE item IN ('pencil') GROUP BY item";
    let file = fixture("sql_per_person.csv");
    let text = same_as_run(query, &[], &file);
    let value = |name: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap();
        line.split_whitespace().nth(5).unwrap().parse().unwrap()
    };
    assert!((value("total") - 130.0).abs() < 5.0, "{text}");
    assert!((value("mean") - 35.0).abs() < 2.0, "{text}");
    let explain = stdout_of(&mut sql(1, query, &["--explain"]));
    assert!(explain.contains("total_per_id = [\"0\", \"100\"]\n"), "{explain}");
    assert!(explain.contains("average_per_id = true\n"), "{explain}");
}

/// `max_groups_contributed = G` keeps, as BigQuery, every row of a person in at most G groups
/// (`fixtures/sql_groups.csv`, no person with two groups of equal rows): with G = 1 each person
/// keeps the group holding most of their rows, all of it, and SUM clamps each person's total
/// there (person 1's three pens of 10 count 30, not one row of 10 as a bound of G rows in all
/// gave); with G = 2 person 2's scissors come back. COUNT's (0, U) keeps U rows of a person in
/// a group: person 3's four scissors count 2. At ε = 10⁵ the noise is far below 1.
#[test]
fn max_groups_contributed_keeps_all_rows_in_a_persons_groups() {
    let file = fixture("sql_groups.csv");
    let run = |options: &str, select: &str| {
        let query = format!(
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 100000, privacy_unit_column = id{options}) \
             item, {select} FROM t WHERE item IN ('pen', 'pencil', 'scissors') GROUP BY item"
        );
        let text = same_as_run(&query, &[], &file);
        let values: Vec<f64> = text
            .lines()
            .filter(|l| l.starts_with("v "))
            .map(|l| l.split_whitespace().nth(5).unwrap().parse().unwrap())
            .collect();
        (values, text)
    };
    let sum = "SUM(quantity, contribution_bounds_per_group => (0, 100)) v";
    for (options, select, want) in [
        ("", sum, [30.0, 67.0, 10.0]),
        (", max_groups_contributed = 1", sum, [30.0, 67.0, 10.0]),
        (", max_groups_contributed = 2", sum, [37.0, 117.0, 15.0]),
        (
            ", max_groups_contributed = 2",
            "COUNT(*, contribution_bounds_per_group => (0, 2)) v",
            [3.0, 5.0, 3.0],
        ),
    ] {
        let (got, text) = run(options, select);
        assert_eq!(got.len(), 3, "{text}");
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 0.5, "{options} {select}: {got:?}, want {want:?}\n{text}");
        }
    }
    // ZetaSQL's max_rows_contributed bounds rows in all: one row of each person.
    let (got, text) = run(", max_rows_contributed = 1", sum);
    assert!(got.iter().sum::<f64>() < 100.0, "{text}");
}

/// SmartNoise SQL's README query, `SELECT sex, AVG(age) AS age FROM PUMS.PUMS GROUP BY sex`:
/// as written it is refused with what to add (the clause; then the bounds, which SmartNoise
/// keeps in a metadata file and dpstat asks for in the query; then the public groups).
/// Rewritten, it runs over the PUMS-like fixture, FROM PUMS.PUMS naming FILE.
#[test]
fn smartnoises_readme_query_runs_once_bounds_and_groups_are_public() {
    let pums = fixture("pums.csv");
    fails_with(
        dpstat().arg("sql").arg("SELECT sex, AVG(age) AS age FROM PUMS.PUMS GROUP BY sex").arg(&pums),
        &["WITH DIFFERENTIAL_PRIVACY OPTIONS"],
    );
    let with_clause = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1) sex, AVG(age) AS age FROM PUMS.PUMS GROUP BY sex";
    fails_with(dpstat().arg("sql").arg(with_clause).arg(&pums), &["contribution_bounds_per_group => (L, U)"]);
    let bounded = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1) \
                   sex, AVG(age, contribution_bounds_per_group => (0, 100)) AS age FROM PUMS.PUMS GROUP BY sex";
    fails_with(dpstat().arg("sql").arg(bounded).arg(&pums), &["--keys", "WHERE sex IN"]);
    let public = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1) \
                  sex, AVG(age, contribution_bounds_per_group => (0, 100)) AS age FROM PUMS.PUMS \
                  WHERE sex IN (0, 1) GROUP BY sex";
    let text = same_as_run(public, &[], &pums);
    let ages: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("age "))
        .map(|l| l.split_whitespace().nth(5).unwrap().parse().unwrap())
        .collect();
    assert_eq!(ages.len(), 2, "{text}");
    // The fixture's ages are 18 to 93 with a mean near 55; 500 rows a group at ε 1 is close.
    assert!(ages.iter().all(|a| (45.0..65.0).contains(a)), "{text}");
}

/// FROM names the data: a path in backticks (CSV, Parquet, a directory of hive parts), stdin,
/// or a `--table` binding; FILE arguments take the place of any FROM name. The same rows give
/// the same seeded release.
#[test]
fn from_names_a_path_stdin_a_table_or_the_files() {
    let query = |from: &str| {
        format!(
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1) region, COUNT(*) n, \
             SUM(age, contribution_bounds_per_group => (0, 100)) FROM {from} WHERE region IN ('north', 'south') \
             GROUP BY region"
        )
    };
    let want = stdout_of(sql(3, &query("people"), &[]).arg(fixture("people.csv")));
    assert_eq!(stdout_of(&mut sql(3, &query("`fixtures/people.csv`"), &[])), want);
    assert_eq!(stdout_of(&mut sql(3, &query("people"), &["--table", "people=fixtures/people.csv"])), want);
    let bytes = fs::read(fixture("people.csv")).unwrap();
    assert_eq!(stdout_of(sql(3, &query("stdin"), &[]).write_stdin(bytes.clone())), want);
    assert_eq!(stdout_of(sql(3, &query("`-`"), &[]).write_stdin(bytes)), want);
    assert_eq!(stdout_of(&mut sql(3, &query("`fixtures/people.parquet`"), &[])), want);
    assert_eq!(stdout_of(&mut sql(3, &query("`fixtures/people_by_region`"), &[])), want);
    fails_with(&mut sql(3, &query("people"), &["--table", "other=fixtures/people.csv"]), &["FROM people"]);
    fails_with(
        sql(3, &query("people"), &["--table", "people=fixtures/people.csv"]).arg(fixture("people.csv")),
        &["--table", "FILE"],
    );
}

/// Everything outside the subset: exit 2, nothing on stdout, one line naming the construct and
/// what to write instead, and nothing read (the FROM file does not exist).
#[test]
fn outside_the_subset_is_refused_before_reading() {
    let dp = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1)";
    for (rest, needles) in [
        ("* FROM `missing.csv`", &["SELECT *", "select the GROUP BY column"][..]),
        ("COUNT(*) FROM `missing.csv` a JOIN b ON a.id = b.id", &["JOIN", "join the tables before dpstat"]),
        ("COUNT(*) FROM (SELECT * FROM `missing.csv`)", &["subquery in FROM"]),
        ("COUNT(*) FROM `missing.csv` WHERE id IN (SELECT id FROM t)", &["subquery"]),
        ("SUM(x, contribution_bounds_per_group => (0, 1)) OVER () FROM `missing.csv`", &["window function"]),
        ("MAX(x) FROM `missing.csv`", &["MAX", "PERCENTILE_CONT"]),
        ("STDDEV(x) FROM `missing.csv`", &["STDDEV", "dpstat variance"]),
        ("SUM(x) FROM `missing.csv`", &["without contribution_bounds_per_group", "(L, U)"]),
        ("x FROM `missing.csv`", &["outside an aggregate"]),
        ("COUNT(*) FROM `missing.csv` WHERE a = 1 OR b = 2", &["OR in WHERE", "IN ("]),
        ("k, COUNT(*) FROM `missing.csv` GROUP BY k", &["public groups", "--keys"]),
        ("COUNT(*) FROM `missing.csv` ORDER BY 1", &["ORDER BY"]),
    ] {
        fails_with(&mut sql(1, &format!("{dp} {rest}"), &[]), needles);
    }
    for options in ["OPTIONS(epsilon = 1, noise_kind = 2)", "OPTIONS(delta = 1e-6)"] {
        let query = format!("SELECT WITH DIFFERENTIAL_PRIVACY {options} COUNT(*) FROM `missing.csv`");
        fails_with(&mut sql(1, &query, &[]), &["OPTIONS"]);
    }
    fails_with(&mut sql(1, "SELECT COUNT(*) FROM `missing.csv`", &[]), &["differential privacy clause"]);
}

/// Under a ledger a query is one charge of its total, recorded as query `sql` with the
/// aggregates' names; a refused one charges nothing and prints nothing.
#[test]
fn under_a_ledger_a_query_is_one_record() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("l.jsonl");
    let query = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 0.5) COUNT(*) n, \
                 AVG(age, contribution_bounds_per_group => (0, 100)) age FROM people";
    let text = stdout_of(
        unseeded()
            .arg("sql")
            .arg(query)
            .args(["--budget", "2", "--ledger"])
            .arg(&ledger)
            .arg(fixture("people.csv")),
    );
    assert_eq!(text.lines().count(), 4, "{text}");
    let records = ledger_records(&ledger);
    let charges: Vec<&serde_json::Value> = records.iter().filter(|r| r["type"] == "charge").collect();
    assert_eq!(charges.len(), 1, "{records:?}");
    assert_eq!(charges[0]["query"], "sql");
    assert_eq!(charges[0]["column"], "n,age");
    assert_eq!(charges[0]["epsilon"], "1/2");
    let (error, _) = refused_under_a_ledger(
        dir.path(),
        &["sql", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1) MIN(age) FROM people"],
        &[&fixture("people.csv")],
    );
    assert!(error.contains("MIN"), "{error}");
}

/// `--explain` reads no data (its FROM need not exist) and prints a workload `dpstat run`
/// takes; `dpstat plan sql` states the bound a release at the same share states.
#[test]
fn explain_and_plan_read_no_data() {
    let query = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1) COUNT(*) n, \
                 SUM(age, contribution_bounds_per_group => (0, 100)) FROM `no/such/file.csv`";
    let explain = stdout_of(&mut sql(1, query, &["--explain"]));
    assert!(explain.starts_with("# dpstat sql --explain"), "{explain}");
    assert!(
        explain.contains("kind = \"sum\"\ncolumn = \"age\"\nlower = \"0\"\nupper = \"100\"\n"),
        "{explain}"
    );
    let plan = stdout_of(dpstat().args(["plan", "sql", query]));
    let single = stdout_of(dpstat().args(["plan", "sum", "--lower", "0", "--upper", "100", "--eps", "0.5"]));
    let bound = single.lines().find(|l| l.starts_with("error bound")).unwrap();
    let bound = bound.split_whitespace().nth(2).unwrap().trim_end_matches(':');
    assert!(plan.lines().any(|l| l.contains("sum_age") && l.ends_with(bound)), "{plan}\n{single}");
    assert!(plan.contains("no data read"), "{plan}");
}

/// `fixtures/sql_discover.csv`: `pen` held by 120 persons (one row each), `pencil` by 80 (two
/// rows each), `rare` by 2 persons with 60 rows each.
const FOUND: &str = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 3, delta = 1e-6, max_groups_contributed = 1, \
                     privacy_unit_column = id) item, COUNT(*) n, SUM(quantity, contribution_bounds_per_group => (0, 50)) \
                     total FROM t GROUP BY item";

/// The groups each JSON line released, by line name.
fn released_groups(text: &str) -> Vec<(String, Vec<String>)> {
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let keys = v["groups"].as_array().unwrap().iter().map(|g| g["key"].as_str().unwrap().to_string());
            (v["name"].as_str().unwrap().to_string(), keys.collect())
        })
        .collect()
}

/// A GROUP BY without public keys finds its groups in the data (BigQuery's default) as the
/// workload's selection, `discover = true`: the seeded release equals `dpstat run`'s of the
/// explained workload, the selection is its own part (all of delta), and every aggregate is
/// released on the selected keys only. A key held by 2 persons is never released, with or
/// without one of them (neighbouring datasets), though its 120 rows would pass a row-level
/// threshold, which the same query without the privacy unit shows.
#[test]
fn groups_found_in_the_data_are_selected_once_per_person() {
    let file = fixture("sql_discover.csv");
    same_as_run(FOUND, &[], &file);
    let dir = TempDir::new().unwrap();
    let text = fs::read_to_string(&file).unwrap();
    let neighbour = dir.path().join("neighbour.csv");
    let without: Vec<&str> = text.lines().filter(|l| !l.starts_with("201,")).collect();
    fs::write(&neighbour, without.join("\n") + "\n").unwrap();
    for data in [&file, &neighbour] {
        for seed in 1..=12 {
            let out = stdout_of(sql(seed, FOUND, &["--format", "json"]).arg(data));
            let lines = released_groups(&out);
            let names: Vec<&str> = lines.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, ["selection", "n", "total"], "{out}");
            for (_, keys) in &lines {
                assert_eq!(keys, &["pen", "pencil"], "seed {seed}: {out}");
            }
        }
    }
    let rows = FOUND.replace(", max_groups_contributed = 1, privacy_unit_column = id", "");
    let out = stdout_of(sql(1, &rows, &["--format", "json"]).arg(&file));
    for (_, keys) in released_groups(&out) {
        assert_eq!(keys, ["pen", "pencil", "rare"], "{out}");
    }
    // Per person in found groups, SUM clamps each person's total (a person closes in the fold
    // of every key they touched): pen's 120 persons of one row each add up to 2660.
    let precise = FOUND.replace("epsilon = 3", "epsilon = 3000");
    let out = stdout_of(sql(1, &precise, &["--format", "json"]).arg(&file));
    let total: serde_json::Value = serde_json::from_str(out.lines().nth(2).unwrap()).unwrap();
    let pen = total["groups"].as_array().unwrap().iter().find(|g| g["key"] == "pen").unwrap();
    let value = pen["value"].as_f64().unwrap();
    assert!((value - 2660.0).abs() < 5.0, "{pen}");
    let explain = stdout_of(&mut sql(1, FOUND, &["--explain"]));
    for line in ["delta = \"1e-6\"\n", "by = \"item\"\ndiscover = true\n", "#   selection: epsilon 1, delta"]
    {
        assert!(explain.contains(line), "{line}: {explain}");
    }
    let plan = stdout_of(dpstat().args(["plan", "sql", FOUND]));
    assert!(plan.lines().any(|l| l.contains("selection") && l.contains("noisy count of persons")), "{plan}");
}

/// Under a ledger the query is one charge of (epsilon, delta), and the parts its JSON lines
/// state (the selection's and each aggregate's) add up to exactly that.
#[test]
fn found_groups_parts_add_up_to_the_charge() {
    use num_rational::BigRational;
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("l.jsonl");
    for (query, eps) in [(FOUND.to_string(), "3/1"), (FOUND.replace("epsilon = 3", "epsilon = 1.1"), "11/10")]
    {
        let out = stdout_of(
            unseeded()
                .arg("sql")
                .arg(&query)
                .args(["--format", "json", "--budget", "10", "--budget-delta", "1e-3", "--ledger"])
                .arg(&ledger)
                .arg(fixture("sql_discover.csv")),
        );
        let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let part =
            |v: &serde_json::Value| v["epsilon_exact"].as_str().unwrap().parse::<BigRational>().unwrap();
        let sum = lines.iter().map(part).fold(BigRational::from_integer(0.into()), |a, b| a + b);
        assert_eq!(sum, eps.parse::<BigRational>().unwrap(), "{out}");
        assert_eq!(lines[0]["delta_exact"], lines[0]["total_delta_exact"], "{out}");
        assert!(lines[1..].iter().all(|l| l.get("delta_exact").is_none_or(|d| d.is_null())), "{out}");
        let records = ledger_records(&ledger);
        let charge = records.iter().rfind(|r| r["type"] == "charge").unwrap();
        assert_eq!(charge["epsilon"].as_str().unwrap().parse::<BigRational>().unwrap(), sum, "{charge}");
        assert_eq!(charge["delta"], "1/1000000", "{charge}");
    }
}

/// A GROUP BY without public groups needs delta: refused in one line before anything is
/// read or charged.
#[test]
fn found_groups_without_delta_are_refused_before_the_charge() {
    let query = FOUND.replace("delta = 1e-6, ", "");
    fails_with(&mut sql(1, &query, &[]), &["needs delta", "--keys"]);
    let dir = TempDir::new().unwrap();
    let (error, _) =
        refused_under_a_ledger(dir.path(), &["sql", query.as_str()], &[&fixture("sql_discover.csv")]);
    assert!(error.contains("delta"), "{error}");
}

/// A query whose private outcome is "no value" (a bounds-free quantile on the 36 rows of one
/// region) keeps its row in the table, marked withheld, and says why on stderr; the run exits 0
/// and its other queries release.
#[test]
fn a_withheld_aggregate_keeps_its_row_and_says_why() {
    let query = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1) region, COUNT(*) n, \
                 PERCENTILE_CONT(income, 0.5) m FROM t WHERE region IN ('north') GROUP BY region";
    let out = sql(7, query, &[]).arg(fixture("people.csv")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    let row = stdout.lines().find(|l| l.starts_with("m ")).unwrap_or_else(|| panic!("no row m:\n{stdout}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[5], "-", "{row}");
    assert_eq!(cells.last(), Some(&"withheld"), "{row}");
    assert!(stdout.lines().any(|l| l.starts_with("n ")), "{stdout}");
    assert!(stderr.contains("dpstat: note: m: q=0.5 of income: too few rows"), "{stderr}");
}
