//! `dpstat plan`: it states the bound the release will state, it never touches data, noise or
//! a ledger, and its bound is the C-quantile of the real binary's error over seeded runs.

use crate::common;

use common::{dpstat, fails_with, fixture, json_of, seeded, stdout_of};
use serde_json::Value;

/// Flags of a query, as given to both `dpstat QUERY` and `dpstat plan QUERY`.
const SHARED_FLAGS: &[&str] = &[
    "count --eps 0.1",
    "count --eps 2 --neighbours replace --confidence 0.9",
    "sum --col income --lower 0 --upper 200000 --eps 0.5",
    "sum --col income --lower -1000 --upper 150000 --eps 0.03 --neighbours replace",
    "sum --col score --lower 0.5 --upper 99.5 --eps 7 --confidence 0.99",
    "histogram --col age --bins 8 --lower 0 --upper 80 --eps 0.5",
    "histogram --col region --categories north,south,east,west --eps 1.3 --neighbours replace",
    "mean --col age --lower 0 --upper 100 --eps 1 --neighbours replace",
    "mean --col income --lower 0 --upper 500000 --eps 0.05 --neighbours replace --confidence 0.8",
    "quantile --col age --q 0.1,0.5,0.9 --lower 0 --upper 120 --eps 1",
    "median --col age --lower 0 --upper 120 --resolution 121 --eps 0.3 --neighbours replace",
    "median --col income --lower 0 --upper 200000 --eps 0.5",
];

/// Rows of fixtures/people.csv: public under replace, so plan mean takes it as --rows.
const PEOPLE_ROWS: u64 = 200;

fn args(flags: &str) -> Vec<String> {
    flags.split_whitespace().map(String::from).collect()
}

fn release_json(flags: &str, seed: u64) -> Value {
    json_of(seeded(seed).args(args(flags)).arg(fixture("people.csv")))
}

fn plan_json(flags: &str) -> Value {
    let mut cmd = dpstat();
    cmd.arg("plan").args(args(flags));
    if flags.starts_with("mean") {
        cmd.args(["--rows", &PEOPLE_ROWS.to_string()]);
    }
    json_of(&mut cmd)
}

#[test]
fn plan_bound_equals_the_release_bound_for_the_same_flags() {
    for flags in SHARED_FLAGS {
        let plan = plan_json(flags);
        let release = release_json(flags, 1);
        for field in ["sensitivity", "scale", "grid", "bounds"] {
            assert_eq!(plan.get(field), release.get(field), "{flags}: {field}");
        }
        assert_eq!(plan["accuracy"], release["accuracy"], "{flags}");
        assert_eq!(plan["epsilon_exact"], release["epsilon_exact"], "{flags}");
        // The text form prints the same bound (in full: by default it is rounded up, as a
        // release's text rounds it).
        let text = stdout_of(
            dpstat()
                .arg("plan")
                .args(args(flags))
                .arg("--full-precision")
                .args(if flags.starts_with("mean") { vec!["--rows", "200"] } else { vec![] }),
        );
        // Read the JSON number with Rust's exact parser (serde_json's default one may be off by an ulp).
        let raw =
            stdout_of(seeded(1).args(args(flags)).args(["--format", "json"]).arg(fixture("people.csv")));
        let bound: f64 = raw
            .split("\"error_bound\":")
            .nth(1)
            .and_then(|t| t.split([',', '}']).next())
            .unwrap()
            .parse()
            .unwrap();
        let line = text.lines().find(|l| l.starts_with("error bound")).expect("an error bound line");
        let printed = line.split('±').nth(1).and_then(|t| t.split([' ', ':']).next()).unwrap();
        assert_eq!(printed.parse::<f64>().ok(), Some(bound), "{flags}: text plan says {line}");
    }
}

#[test]
fn add_remove_mean_plan_is_the_widest_bound_a_release_with_that_count_states() {
    let flags = "mean --col income --lower 0 --upper 200000 --eps 0.4";
    for seed in 1..=12 {
        let release = release_json(flags, seed);
        let count = release["parts"][1]["value"].as_f64().unwrap();
        assert_eq!(release["parts"][1]["name"], "count");
        if count < 1.0 {
            continue;
        }
        let plan = json_of(dpstat().arg("plan").args(args(flags)).args(["--rows", &format!("{count}")]));
        let planned = plan["accuracy"]["error_bound"].as_f64().unwrap();
        let stated = release["accuracy"]["error_bound"].as_f64().unwrap();
        assert!(stated <= planned, "seed {seed}: release states {stated} > planned {planned} at n = {count}");
        assert_eq!(plan["parts"][0]["scale"], release["parts"][0]["scale"]);
        assert_eq!(plan["parts"][1]["scale"], release["parts"][1]["scale"]);
    }
}

/// A variance's bound depends on its noisy sum and sum of squares as well as its count: the plan
/// states the largest over possible data, which covers what seeded releases with that count
/// state (the public n under replace; the noisy count under add-remove).
#[test]
fn variance_plan_covers_the_bounds_releases_with_that_count_state() {
    for (flags, count_part) in [
        ("variance --col age --lower 0 --upper 100 --eps 1 --neighbours replace", None),
        ("variance --col score --lower 0 --upper 100 --eps 2", Some(0)),
        ("variance --col income --lower 0 --upper 200000 --eps 0.5", Some(0)),
    ] {
        for seed in 1..=10 {
            let release = release_json(flags, seed);
            let rows = match count_part {
                None => PEOPLE_ROWS as f64,
                Some(i) => release["parts"][i]["value"].as_f64().unwrap(),
            };
            if rows < 1.0 {
                continue;
            }
            let plan = json_of(dpstat().arg("plan").args(args(flags)).args(["--rows", &format!("{rows}")]));
            let planned = plan["accuracy"]["error_bound"].as_f64().unwrap();
            let stated = release["accuracy"]["error_bound"].as_f64().unwrap();
            assert!(stated <= planned, "{flags} seed {seed}: release states {stated} > planned {planned}");
            assert_eq!(plan["parts"].as_array().map(Vec::len), release["parts"].as_array().map(Vec::len));
            for (p, r) in plan["parts"].as_array().unwrap().iter().zip(release["parts"].as_array().unwrap()) {
                assert_eq!(
                    (&p["name"], &p["scale"], &p["grid"]),
                    (&r["name"], &r["scale"], &r["grid"]),
                    "{flags}"
                );
            }
        }
    }
    let text =
        stdout_of(dpstat().args(args("plan variance --lower 0 --upper 100 --eps 1")).args(["--rows", "500"]));
    assert!(text.contains("at β/3") && text.contains("21 x 21"), "{text}");
    fails_with(dpstat().args(args("plan variance --lower 0 --upper 100 --eps 1")), &["--rows N"]);
}

/// Quantiles plan a rank bound and say that their value's error cannot be planned.
#[test]
fn quantile_plans_state_a_rank_bound_and_what_they_cannot_know() {
    let text = stdout_of(dpstat().args(args("plan median --lower 0 --upper 120 --error 20")));
    assert!(text.contains("target       error at most 20 rows of rank"), "{text}");
    assert!(text.contains("cannot be planned without data"), "{text}");
    let eps = text.lines().find(|l| l.starts_with("epsilon")).unwrap().split_whitespace().nth(1).unwrap();
    let release = release_json(&format!("median --col age --lower 0 --upper 120 --eps {eps}"), 3);
    assert!(release["accuracy"]["error_bound"].as_f64().unwrap() <= 20.0, "{release}");
    assert_eq!(release["accuracy"]["scope"], "rank (rows), per quantile");
}

#[test]
fn solving_for_epsilon_gives_a_short_decimal_that_meets_the_target_in_a_release() {
    let plan = json_of(dpstat().args(args("plan sum --lower 0 --upper 200000 --error 500000")));
    assert_eq!(plan["solved_for"], "epsilon");
    assert_eq!(plan["target_error"], 500000.0);
    let eps = plan["epsilon_decimal"].as_str().unwrap().to_string();
    let digits = eps.trim_start_matches(['0', '.']).replace('.', "");
    assert!(digits.len() <= 3, "ε {eps} has more than 3 significant digits");
    assert!(plan["method"].as_str().unwrap().contains("bisection"));
    let release = release_json(&format!("sum --col income --lower 0 --upper 200000 --eps {eps}"), 1);
    let bound = release["accuracy"]["error_bound"].as_f64().unwrap();
    assert!(bound <= 500000.0, "release at ε {eps} states {bound}");
    assert_eq!(release["accuracy"], plan["accuracy"]);

    let text = stdout_of(dpstat().args(args("plan count --error 10")));
    assert!(text.contains("target       error at most 10 at confidence 0.95"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("epsilon")), "{text}");
}

#[test]
fn plan_never_reads_data_draws_noise_or_charges_a_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("budget.jsonl");
    // The insecure seed is set: building a random generator would say so on stderr.
    let out = dpstat()
        .args(args("plan histogram --bins 4 --lower 0 --upper 1 --eps 1"))
        .env("DPSTAT_LEDGER", &ledger)
        .write_stdin("this is not read")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "plan wrote to stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!ledger.exists(), "plan touched the ledger");
    let plan = json_of(dpstat().args(args("plan count --eps 1")));
    for field in ["reads_data", "draws_noise", "charges_ledger"] {
        assert_eq!(plan[field], Value::Bool(false), "{field}");
    }
}

#[test]
fn plan_errors_name_the_flag_that_fixes_them() {
    fails_with(dpstat().args(args("plan count")), &["--eps E", "--error E"]);
    fails_with(dpstat().args(args("plan mean --lower 0 --upper 1 --eps 1")), &["--rows N"]);
    fails_with(dpstat().args(args("plan mean --lower 0 --upper 1 --eps 1 --rows 0")), &["--rows"]);
    fails_with(
        dpstat().args(args("plan sum --lower 0 --eps 1")),
        &["--upper U", "never takes them from the data"],
    );
    fails_with(dpstat().args(args("plan histogram --eps 1")), &["--categories", "--bins K"]);
    fails_with(dpstat().args(args("plan count --error -3")), &["--error", "greater than 0"]);
    fails_with(dpstat().args(args("plan count --eps 1 --error 3")), &["--error", "--eps"]);
    fails_with(dpstat().args(args("plan sum --lower 0 --upper 1e12 --error 1e-9")), &["raise --error"]);
    fails_with(dpstat().args(args("plan count --eps 1 --format chart")), &["--format"]);
    fails_with(dpstat().args(args("plan count --eps 1 people.csv")), &["people.csv"]);
}

// ---- plan vs release, statistically --------------------------------------------------------

/// Seeded runs per query: enough for the C-quantile's order-statistic interval to be tight.
const RUNS: u64 = 500;

/// The columns of fixtures/people.csv, parsed once.
fn people() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(fixture("people.csv")).unwrap();
    text.lines().skip(1).map(|l| l.split(',').map(String::from).collect()).collect()
}

fn column(rows: &[Vec<String>], i: usize) -> Vec<f64> {
    rows.iter().map(|r| r[i].parse().unwrap()).collect()
}

/// Runs `flags` with seeds 1..=RUNS (two processes of a seed range each) and returns every
/// |release − truth|.
fn errors(flags: &'static str, truth: &(dyn Fn(&Value) -> Vec<f64> + Sync)) -> (Vec<f64>, f64) {
    let mut all = args(flags);
    all.extend([fixture("people.csv").display().to_string(), "--format".into(), "json".into()]);
    let runs = common::seeded_json_values(1, RUNS as usize, 2, &all);
    let planned = plan_json(flags)["accuracy"]["error_bound"].as_f64().unwrap();
    (runs.iter().flat_map(truth).collect(), planned)
}

/// The planned bound lies inside a distribution-free interval for the C-quantile of the
/// errors: between the order statistics at ranks N·C ∓ 4·sqrt(N·C·(1−C)).
fn assert_quantile_matches(name: &str, mut errs: Vec<f64>, planned: f64, confidence: f64) {
    errs.sort_by(f64::total_cmp);
    let n = errs.len() as f64;
    let spread = 4.0 * (n * confidence * (1.0 - confidence)).sqrt();
    let lo = ((n * confidence - spread).floor() as usize).min(errs.len() - 1);
    let hi = ((n * confidence + spread).ceil() as usize).min(errs.len() - 1);
    let covered = errs.iter().filter(|&&e| e <= planned).count() as f64 / n;
    let quantile = errs[((n * confidence).ceil() as usize).saturating_sub(1)];
    assert!(
        errs[lo] <= planned && planned <= errs[hi],
        "{name}: planned bound {planned} outside [{}, {}] (empirical {confidence}-quantile {quantile}, \
         coverage {covered:.4}, {} errors)",
        errs[lo],
        errs[hi],
        errs.len()
    );
}

#[test]
fn empirical_error_quantile_matches_the_planned_bound() {
    let rows = people();
    let (age, income) = (column(&rows, 1), column(&rows, 2));
    let clamp = |x: f64, l: f64, u: f64| x.clamp(l, u);

    let n = rows.len() as f64;
    assert_eq!(rows.len() as u64, PEOPLE_ROWS);
    let flags = "count --eps 0.1";
    let (errs, planned) = errors(flags, &|r| vec![(r["value"].as_f64().unwrap() - n).abs()]);
    assert_quantile_matches(flags, errs, planned, 0.95);

    let true_sum: f64 = income.iter().map(|&x| clamp(x, 0.0, 200000.0)).sum();
    let flags = "sum --col income --lower 0 --upper 200000 --eps 0.5";
    let (errs, planned) = errors(flags, &|r| vec![(r["value"].as_f64().unwrap() - true_sum).abs()]);
    assert_quantile_matches(flags, errs, planned, 0.95);

    let true_mean: f64 = age.iter().map(|&x| clamp(x, 0.0, 100.0)).sum::<f64>() / n;
    let flags = "mean --col age --lower 0 --upper 100 --eps 0.05 --neighbours replace --confidence 0.9";
    let (errs, planned) = errors(flags, &|r| vec![(r["value"].as_f64().unwrap() - true_mean).abs()]);
    assert!(planned < 50.0, "the clamp into [0, 100] must not shape the errors");
    assert_quantile_matches(flags, errs, planned, 0.9);

    let regions = ["north", "south", "east", "west"];
    let mut truth = [0f64; 5];
    for r in &rows {
        truth[regions.iter().position(|c| *c == r[3]).unwrap_or(4)] += 1.0;
    }
    let flags = "histogram --col region --categories north,south,east,west --eps 0.3";
    let (errs, planned) = errors(flags, &|r| {
        let bins = r["bins"].as_array().unwrap();
        bins.iter().zip(truth).map(|(b, t)| (b["count"].as_f64().unwrap() - t).abs()).collect()
    });
    assert_eq!(errs.len() as u64, RUNS * 5, "one error per bin per run");
    assert_quantile_matches(flags, errs, planned, 0.95);
}

/// Covariance and the slope are not planned, and the refusal says why and what to plan instead.
#[test]
fn two_column_statistics_say_why_they_are_not_planned() {
    for query in ["covariance", "regress"] {
        fails_with(
            dpstat().args(["plan", query, "--eps", "1"]),
            &["does not plan covariance or regress", "depends on the data", "dpstat plan mean"],
        );
    }
}

/// `--max-rows-per-id K1,K2,...` plans a release per person at each K: the bound at K is the
/// row-level bound at ε/K (here a count: the discrete Laplace tail at scale K/ε), K = 1 is the
/// row-level plan, and solving for ε multiplies it by K.
#[test]
fn plans_per_person_at_each_k() {
    let json = |args: &[&str]| -> serde_json::Value {
        let out = common::stdout_of(common::dpstat().args(["plan"]).args(args).args(["--format", "json"]));
        serde_json::from_str(&out).unwrap()
    };
    let plan = json(&["count", "--eps", "1", "--max-rows-per-id", "1,4"]);
    let rows = plan["per_person"].as_array().unwrap();
    assert_eq!(rows[0]["error_bound"], plan["accuracy"]["error_bound"]);
    let at_quarter = json(&["count", "--eps", "0.25"]);
    assert_eq!(
        rows[1]["error_bound"], at_quarter["accuracy"]["error_bound"],
        "K = 4 at ε = 1 is a row at ε = 1/4"
    );
    let solved = json(&["count", "--error", "10", "--max-rows-per-id", "1,10"]);
    let eps: Vec<f64> = solved["per_person"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["epsilon_decimal"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!((eps[1] / eps[0] - 10.0).abs() < 0.05, "{eps:?}");
    common::fails_with(
        common::dpstat().args([
            "plan",
            "count",
            "--eps",
            "1",
            "--max-rows-per-id",
            "2",
            "--neighbours",
            "replace",
        ]),
        &["--max-rows-per-id", "add-remove"],
    );
}

/// `plan --format csv`: a header and one row with the JSON plan's numbers; `plan run`: a row
/// per query with both bounds. Nothing else on stdout.
#[test]
fn csv_format_has_the_json_numbers() {
    use common::{csv_records, printed_as};
    let args = ["plan", "sum", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "0.5"];
    let records = csv_records(&stdout_of(dpstat().args(args).args(["--format", "csv", "--delta", "1e-6"])));
    assert_eq!(records.len(), 2);
    let json = json_of(dpstat().args(args).args(["--delta", "1e-6"]));
    let cell = |name: &str| {
        let i = records[0].iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
        records[1][i].clone()
    };
    assert_eq!(
        (cell("plan"), cell("column"), cell("epsilon")),
        ("sum".into(), "income".into(), "0.5".into())
    );
    assert!(printed_as(&cell("error(95%)"), json["accuracy"]["error_bound"].as_f64().unwrap()));
    assert!(printed_as(&cell("scale"), json["scale"].as_f64().unwrap()));
    assert!(printed_as(&cell("sensitivity"), json["sensitivity"].as_f64().unwrap()));
    let gaussian = json["comparison"]["gaussian_error_bound"].as_f64().unwrap();
    assert!(printed_as(&cell("gaussian_error(95%)"), gaussian));
    assert_eq!(cell("less_error"), json["comparison"]["less_error"].as_str().unwrap());

    // A small workload: the variance of compose_gaussian.toml takes a minute to plan in a
    // debug build.
    let dir = tempfile::TempDir::new().unwrap();
    let workload = dir.path().join("w.toml");
    std::fs::write(
        &workload,
        "epsilon = 1\n\n[[query]]\nname = \"rows\"\nkind = \"count\"\n\n[[query]]\nname = \"ages\"\n\
         kind = \"sum\"\ncolumn = \"age\"\nlower = 0\nupper = 100\n\n[[query]]\nname = \"regions\"\n\
         kind = \"histogram\"\ncolumn = \"region\"\ncategories = [\"north\", \"south\"]\n",
    )
    .unwrap();
    let run = |format: &str| {
        dpstat()
            .args(["plan", "run"])
            .arg(&workload)
            .args(["--delta", "1e-6", "--rows", "200", "--format", format])
            .output()
            .unwrap()
    };
    let out = run("csv");
    assert!(out.status.success());
    let records = csv_records(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(records[0], ["query", "kind", "laplace_error(95%)", "gaussian_error(95%)", "less_error"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("verdict"), "the verdict is a note on stderr");
    let json: Value = serde_json::from_slice(&run("json").stdout).unwrap();
    let queries = json["queries"].as_array().unwrap();
    assert_eq!(records.len(), 1 + queries.len());
    for (row, q) in records[1..].iter().zip(queries) {
        assert_eq!(row[0], q["name"].as_str().unwrap());
        assert!(printed_as(&row[2], q["laplace_error_bound"].as_f64().unwrap()), "{row:?}");
        assert!(printed_as(&row[3], q["gaussian_error_bound"].as_f64().unwrap()), "{row:?}");
        assert_eq!(row[4], q["less_error"].as_str().unwrap());
    }
}

/// The longest run of digits after a point in any number of `text`.
fn longest_fraction(text: &str) -> usize {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|token| token.split_once('.').map(|(_, fraction)| fraction.len()))
        .max()
        .unwrap_or(0)
}

/// A plan prints its bounds as a release does: rounded up to two significant digits (rank
/// bounds to whole rows), its scales to four; in full with --full-precision; JSON exact.
#[test]
fn plan_rounds_its_numbers_as_releases_do() {
    let sum = ["plan", "sum", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "0.5"];
    let text = stdout_of(dpstat().args(sum));
    assert!(text.contains("error bound  ±1200000: |release − true value| <= 1200000 "), "{text}");
    let full = stdout_of(dpstat().args(sum).arg("--full-precision"));
    assert!(full.contains("±1198292.9094216824"), "{full}");
    let digits = stdout_of(dpstat().args(sum).args(["--digits", "4"]));
    assert!(digits.contains("±1199000"), "{digits}");
    let json = json_of(dpstat().args(sum));
    assert_eq!(json["accuracy"]["error_bound"].as_f64(), Some(1198292.9094216824), "{json}");
    // CSV is for programs: every number in full, as JSON has it.
    let csv = stdout_of(dpstat().args(sum).args(["-f", "csv"]));
    assert!(csv.contains(",1198292.9094216824,"), "{csv}");

    let histogram = stdout_of(
        dpstat()
            .args(["plan", "histogram", "--col", "age", "--bins", "8", "--lower", "0"])
            .args(["--upper", "80", "--error", "5"]),
    );
    assert!(histogram.contains("noise scale  ~1.855 = "), "{histogram}");
    let median = stdout_of(
        dpstat().args(["plan", "median", "--col", "age", "--lower", "0", "--upper", "120", "--error", "20"]),
    );
    assert!(median.contains("±20 rows of rank"), "{median}");
    let mean = stdout_of(
        dpstat().args(["plan", "mean", "--lower", "0", "--upper", "100", "--rows", "500", "--eps", "0.3"]),
    );
    let workload = stdout_of(dpstat().args([
        "plan",
        "run",
        "fixtures/compose_gaussian.toml",
        "--delta",
        "1e-6",
        "--rows",
        "200",
    ]));
    assert!(workload.contains("±3000 ") && !workload.contains("2995.73"), "{workload}");
    for text in [&text, &histogram, &median, &mean] {
        assert!(longest_fraction(text) <= 6, "{text}");
    }
    assert!(longest_fraction(&full) > 6, "{full}");
}
