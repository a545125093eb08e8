//! `dpstat run WORKLOAD.toml [FILE]`: several queries, one pass, one charge.

use crate::common;

use std::fs;
use std::path::Path;

use common::{dpstat, fails_with, fixture, seeded, stdout_of, unseeded};
use tempfile::TempDir;

/// Runs a workload with `--format json` and returns one JSON value per line.
fn json_lines(cmd: &mut assert_cmd::Command) -> Vec<serde_json::Value> {
    let text = stdout_of(cmd.args(["--format", "json"]));
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect()
}

fn run(workload: &Path) -> assert_cmd::Command {
    let mut cmd = dpstat();
    cmd.arg("run").arg(workload).arg(fixture("people.csv"));
    cmd
}

/// [`run`] with the operating system's noise, for runs with a ledger.
fn run_charged(workload: &Path) -> assert_cmd::Command {
    let mut cmd = unseeded();
    cmd.arg("run").arg(workload).arg(fixture("people.csv"));
    cmd
}

fn ledger_records(path: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(path).unwrap().lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A copy of a workload whose numeric queries skip invalid cells, as a ledger requires.
fn skipping(workload: &Path, dir: &TempDir) -> std::path::PathBuf {
    let text = fs::read_to_string(workload).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if line.starts_with("lower =") {
            out.push_str("invalid = \"skip\"\n");
        }
    }
    let path = dir.path().join(format!("skipping-{}", workload.file_name().unwrap().to_string_lossy()));
    fs::write(&path, out).unwrap();
    path
}

/// The ε charged equals the declared total exactly, once, whatever the split: an even split
/// into quarters, uneven decimal shares, and thirds (which no decimal or f64 writes exactly).
#[test]
fn the_epsilon_charged_equals_the_declared_total_exactly() {
    let dir = TempDir::new().unwrap();
    let thirds = dir.path().join("thirds.toml");
    fs::write(
        &thirds,
        "epsilon = 0.1\n\n[[query]]\nname = \"a\"\nkind = \"count\"\n\n[[query]]\nname = \"b\"\nkind = \"count\"\n\n\
         [[query]]\nname = \"c\"\nkind = \"histogram\"\ncolumn = \"region\"\ncategories = [\"north\"]\n",
    )
    .unwrap();
    let tenths = dir.path().join("tenths.toml");
    // 0.1 + 0.2 is not 0.3 in f64; exactly, it is.
    fs::write(
        &tenths,
        "epsilon = 0.3\n[[query]]\nname = \"a\"\nkind = \"count\"\nshare = 0.1\n\
         [[query]]\nname = \"b\"\nkind = \"count\"\nshare = 0.2\n",
    )
    .unwrap();
    let cases = [
        (fixture("compose_two_columns.toml"), "1/1", vec!["1/4"; 4]),
        (fixture("compose_shares.toml"), "1/1", vec!["1/10", "2/5", "1/2"]),
        (thirds, "1/10", vec!["1/30"; 3]),
        (tenths, "3/10", vec!["1/10", "1/5"]),
    ];
    for (workload, total, shares) in cases {
        let ledger = dir.path().join("ledger.jsonl");
        let _ = fs::remove_file(&ledger);
        let workload = skipping(&workload, &dir);
        let lines = json_lines(run_charged(&workload).args(["--budget", "5", "--ledger"]).arg(&ledger));
        let got: Vec<&str> = lines.iter().map(|l| l["epsilon_exact"].as_str().unwrap()).collect();
        assert_eq!(got, shares, "{}", workload.display());
        assert!(lines.iter().all(|l| l["total_epsilon_exact"] == total));
        let releases: Vec<_> =
            ledger_records(&ledger).into_iter().filter(|r| r["type"] == "charge").collect();
        assert_eq!(releases.len(), 1, "charged once");
        assert_eq!(releases[0]["epsilon"], total, "{}", workload.display());
        assert_eq!(releases[0]["query"], "workload");
    }
}

/// Variance of discrete Laplace noise of scale s: 2p/(1−p)² with p = e^(−1/s).
fn dlap_variance(scale: f64) -> f64 {
    let p = (-1.0 / scale).exp();
    2.0 * p / ((1.0 - p) * (1.0 - p))
}

/// Over 300 seeded runs of the binary, each count's noise has the variance of discrete Laplace
/// with scale 1/share: 0.1 and 0.4 of the total, not the even split (1/3) nor the total.
#[test]
fn each_query_noise_scale_matches_its_share() {
    let text = fs::read_to_string(fixture("people.csv")).unwrap();
    let rows = text.lines().skip(1).count() as f64;
    let north = text.lines().skip(1).filter(|l| l.split(',').nth(3) == Some("north")).count() as f64;
    let runs = 300usize;
    let (mut all, mut northern) = (vec![], vec![]);
    let per_run =
        json_lines(seeded(0).arg("run").arg(fixture("compose_shares.toml")).arg(fixture("people.csv"))).len();
    // Seeds 0..runs in one process (`DPSTAT_INSECURE_SEED=A..B`), `per_run` lines each.
    let mut ranged = seeded(0);
    ranged.env("DPSTAT_INSECURE_SEED", format!("0..{runs}"));
    let every = json_lines(ranged.arg("run").arg(fixture("compose_shares.toml")).arg(fixture("people.csv")));
    assert_eq!(every.len(), runs * per_run);
    for lines in every.chunks(per_run) {
        assert_eq!(lines[0]["name"], "rows");
        assert_eq!(lines[0]["scale"].as_f64(), Some(10.0), "declared scale 1/0.1");
        assert_eq!(lines[1]["scale"].as_f64(), Some(2.5), "declared scale 1/0.4");
        all.push(lines[0]["value"].as_f64().unwrap() - rows);
        northern.push(lines[1]["value"].as_f64().unwrap() - north);
    }
    for (noise, eps) in [(&all, 0.1), (&northern, 0.4)] {
        let n = noise.len() as f64;
        let mean = noise.iter().sum::<f64>() / n;
        let var = noise.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
        let expected = dlap_variance(1.0 / eps);
        // The spread of the ratio over 300 draws is about ±0.13; 1/3 instead of 0.1 would give
        // a ratio near 0.09, 1/3 instead of 0.4 about 1.45.
        assert!((0.75..1.33).contains(&(var / expected)), "share {eps}: variance {var}, expected {expected}");
        assert!(mean.abs() < 4.0 * (expected / n).sqrt(), "share {eps}: mean {mean}");
    }
}

/// A one-query workload is the same release as the same command line (same seed, same noise).
#[test]
fn a_one_query_workload_equals_the_command_line() {
    let dir = TempDir::new().unwrap();
    let w = dir.path().join("one.toml");
    fs::write(
        &w,
        "epsilon = \"0.7\"\nneighbours = \"replace\"\n[[query]]\nname = \"v\"\nkind = \"variance\"\n\
         column = \"score\"\nlower = 0\nupper = 100\n",
    )
    .unwrap();
    let from_workload = stdout_of(seeded(11).arg("run").arg(&w).arg(fixture("people.csv")));
    let value = from_workload.lines().nth(1).unwrap().split_whitespace().nth(5).unwrap().to_string();
    let direct = stdout_of(
        seeded(11)
            .args(["variance", "--col", "score", "--lower", "0", "--upper", "100", "--eps", "0.7"])
            .args(["--neighbours", "replace"])
            .arg(fixture("people.csv")),
    );
    assert_eq!(value, direct.trim());
}

#[test]
fn text_table_lists_every_query_and_the_total() {
    let text = stdout_of(&mut run(&fixture("compose_two_columns.toml")));
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["name", "query", "column", "group", "bin", "value", "epsilon", "sensitivity", "error(95%)"]
    );
    let names: Vec<&str> = lines[1..].iter().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(names, ["income_mean", "income_variance", "age_mean", "age_variance", "total"]);
    assert!(lines[2].contains("count=1 shifted_sum=100000 sum_of_squares=10000000000"), "{}", lines[2]);
    assert!(lines[5].split_whitespace().any(|c| c == "1"), "total epsilon: {}", lines[5]);
    for l in &lines[1..5] {
        assert_eq!(l.split_whitespace().nth(6), Some("0.25"), "{l}");
    }
}

#[test]
fn groups_and_histograms_inside_a_workload() {
    let lines = json_lines(&mut run(&fixture("compose_grouped.toml")));
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["name"], "income_by_area");
    assert_eq!(lines[0]["epsilon_exact"], "1/4");
    let groups = lines[0]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 3);
    assert!(groups.iter().all(|g| g["epsilon_exact"] == "1/4"), "each group has the query's full share");
    assert_eq!(lines[1]["bins"].as_array().unwrap().len(), 5);
}

/// Bad workload files: exit 2, empty stdout, one line naming the file's line that is wrong.
#[test]
fn bad_workloads_name_the_line() {
    let cases = [
        (
            "compose_bad_kind.toml",
            "line 5",
            "unknown kind 'mode': use one of count, sum, mean, variance, covariance, regress, histogram, quantile, median",
        ),
        (
            "compose_bad_shares.toml",
            "line 1",
            "the shares (lines 6, 11) add up to 0.9, not to the total epsilon 1",
        ),
        ("compose_bad_bounds.toml", "line 8", "mean needs clamping bounds"),
        ("compose_bad_duplicate.toml", "line 8", "query name 'rows' is used twice (first on line 4)"),
        ("compose_bad_unknown_key.toml", "line 9", "unknown field `uper`"),
        ("compose_bad_syntax.toml", "line 5", "invalid basic string"),
    ];
    for (file, line, needle) in cases {
        let at = format!("{file} {line}:");
        fails_with(&mut run(&fixture(file)), &[&at, needle]);
    }
    let dir = TempDir::new().unwrap();
    let more = [
        ("epsilon = 1\n[[query]]\nname = \"a\"\nkind = \"count\"\nlower = 0\n", "line 5", "count does not take lower"),
        ("epsilon = 0\n[[query]]\nname = \"a\"\nkind = \"count\"\n", "line 1", "greater than 0"),
        ("epsilon = nan\n[[query]]\nname = \"a\"\nkind = \"count\"\n", "line 1", "not a decimal"),
        ("epsilon = 1\nneighbours = \"swap\"\n[[query]]\nname = \"a\"\nkind = \"count\"\n", "line 2", "swap"),
        ("epsilon = 1\n[[query]]\nname = \"a\"\nkind = \"count\"\nshare = 2\n", "line 1", "add up to 2"),
        ("epsilon = 1\n[[query]]\nname = \"a\"\nkind = \"count\"\nshare = 1\n[[query]]\nname = \"b\"\nkind = \"count\"\n", "line 1", "leaves nothing"),
        (
            "epsilon = 1\nneighbours = \"replace\"\n[[query]]\nname = \"m\"\nkind = \"mean\"\ncolumn = \"age\"\nlower = 0\nupper = 1\nby = \"region\"\nkeys = [\"north\"]\n",
            "line 4",
            "group sizes are private",
        ),
        ("epsilon = 1\n[[query]]\nname = \"s\"\nkind = \"sum\"\ncolumn = \"nope\"\nlower = 0\nupper = 1\n", "line 3", "no column 'nope'"),
        ("epsilon = 1\n", "toml:", "no queries"),
    ];
    for (i, (text, line, needle)) in more.iter().enumerate() {
        let path = dir.path().join(format!("w{i}.toml"));
        fs::write(&path, text).unwrap();
        fails_with(&mut run(&path), &[line, needle]);
    }
}

/// Budget refusal: nothing read, printed or charged; `--invalid error` refused with a ledger
/// before anything is read; bad data under a ledger is handled by the workload's policy.
#[test]
fn failures_print_and_charge_nothing() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    stdout_of(
        unseeded()
            .args(["count", "--eps", "0.5", "--budget", "1", "--ledger"])
            .arg(&ledger)
            .arg(fixture("people.csv")),
    );
    let before = fs::read(&ledger).unwrap();
    let workload = skipping(&fixture("compose_two_columns.toml"), &dir);
    let out = run_charged(&workload).arg("--ledger").arg(&ledger).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    assert_eq!(fs::read(&ledger).unwrap(), before);

    let bad = dir.path().join("bad.csv");
    fs::write(&bad, "age,income\n30,100\n40,oops\n").unwrap();
    let mut cmd = unseeded();
    cmd.arg("run")
        .arg(fixture("compose_two_columns.toml"))
        .arg(&bad)
        .args(["--dataset", "x", "--budget", "1", "--ledger"])
        .arg(&ledger);
    fails_with(&mut cmd, &["line 6: query 'income_mean': with --ledger, add --invalid skip"]);
    assert_eq!(fs::read(&ledger).unwrap(), before);
    let mut cmd = unseeded();
    cmd.arg("run")
        .arg(&workload)
        .arg(&bad)
        .args(["--dataset", "x", "--budget", "1", "--ledger"])
        .arg(&ledger);
    stdout_of(&mut cmd);
    // Without a ledger the bad cell is named, and nothing is printed.
    fails_with(
        dpstat().arg("run").arg(fixture("compose_two_columns.toml")).arg(&bad),
        &["row 2 (line 3), column 'income'"],
    );
}

/// Standard input works like a file, and one pass reads it (it cannot be rewound).
#[test]
fn reads_standard_input_once() {
    let bytes = fs::read(fixture("people.csv")).unwrap();
    let text = stdout_of(dpstat().arg("run").arg(fixture("compose_two_columns.toml")).write_stdin(bytes));
    assert_eq!(text.lines().count(), 6);
}

/// covariance and regress take column, lower and upper as pairs [x, y]; a one-column kind
/// refuses pairs, a two-column kind a single column, each naming the line.
#[test]
fn two_column_queries_take_pairs() {
    let dir = TempDir::new().unwrap();
    let body = "column = [\"age\", \"income\"]\nlower = [0, 0]\nupper = [100, 200000]\n";
    let good = dir.path().join("pairs.toml");
    fs::write(
        &good,
        format!(
            "epsilon = 1\n[[query]]\nname = \"c\"\nkind = \"covariance\"\n{body}\n\
             [[query]]\nname = \"r\"\nkind = \"regress\"\n{body}share = 0.5\n"
        ),
    )
    .unwrap();
    let lines = json_lines(&mut run(&good));
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (lines[0]["query"].as_str(), lines[1]["query"].as_str()),
        (Some("covariance"), Some("regress"))
    );
    for line in &lines {
        assert_eq!(line["column"], "age,income");
        assert_eq!(line["epsilon_exact"], "1/2");
        assert_eq!(line["bounds_y"]["upper"], 200000.0);
    }
    // The same release as the command line at the same share and seed.
    let single = stdout_of(
        seeded(1)
            .args([
                "covariance",
                "--cols",
                "age,income",
                "--lower",
                "0,0",
                "--upper",
                "100,200000",
                "--eps",
                "0.5",
            ])
            .args(["--format", "json"])
            .arg(fixture("people.csv")),
    );
    let single: serde_json::Value = serde_json::from_str(&single).unwrap();
    assert_eq!(single["parts"][3]["sensitivity"], lines[0]["parts"][3]["sensitivity"]);
    let bad = [
        ("kind = \"mean\"\ncolumn = [\"age\", \"income\"]\nlower = 0\nupper = 1\n", "not pairs"),
        ("kind = \"mean\"\ncolumn = \"age\"\nlower = [0, 0]\nupper = [1, 1]\n", "not pairs"),
        ("kind = \"covariance\"\ncolumn = \"age\"\nlower = 0\nupper = 1\n", "covariance reads two columns"),
        ("kind = \"covariance\"\ncolumn = [\"age\", \"income\", \"score\"]\nlower = [0, 0]\nupper = [1, 1]\n", "found 3 values"),
    ];
    for (i, (query, needle)) in bad.iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.toml"));
        fs::write(&path, format!("epsilon = 1\n[[query]]\nname = \"q\"\n{query}")).unwrap();
        fails_with(&mut run(&path), &["line", needle]);
    }
}

/// Quantiles and medians in a workload: the same release as the command line at the query's
/// share, bounds optional (bounds-free candidates, as on the command line), groups allowed, and
/// their own mistakes named by line.
#[test]
fn quantiles_and_medians_inside_a_workload() {
    let dir = TempDir::new().unwrap();
    let one = dir.path().join("one.toml");
    fs::write(
        &one,
        "epsilon = \"0.6\"\n[[query]]\nname = \"q\"\nkind = \"quantile\"\ncolumn = \"age\"\n\
         q = [0.1, \"0.5\", 0.9]\nlower = 0\nupper = 120\nresolution = 121\n",
    )
    .unwrap();
    let table = stdout_of(seeded(5).arg("run").arg(&one).arg(fixture("people.csv")));
    let from_workload: Vec<String> = table
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("q "))
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            format!("{},{}", cells[4].trim_start_matches("q="), cells[5])
        })
        .collect();
    let direct = stdout_of(
        seeded(5)
            .args(["quantile", "--col", "age", "--q", "0.1,0.5,0.9", "--lower", "0", "--upper", "120"])
            .args(["--resolution", "121", "--eps", "0.6"])
            .arg(fixture("people.csv")),
    );
    assert_eq!(from_workload, direct.lines().skip(1).collect::<Vec<_>>(), "{table}");
    assert!(table.lines().nth(1).unwrap().contains("score=9"), "{table}");
    assert!(table.lines().nth(1).unwrap().ends_with(" rows"), "{table}");

    // GUIDE.md's example.
    let lines = json_lines(&mut run(&fixture("compose_quantiles.toml")));
    assert_eq!(lines[0]["quantiles"].as_array().map(Vec::len), Some(3));
    assert_eq!(lines[0]["quantiles"][0]["epsilon_exact"], "1/6");
    assert_eq!(lines[1]["groups"][0]["where"], serde_json::json!(["income>=20000"]), "{}", lines[1]);

    let mixed = dir.path().join("mixed.toml");
    fs::write(
        &mixed,
        "epsilon = 1\nneighbours = \"replace\"\n[[query]]\nname = \"m\"\nkind = \"median\"\ncolumn = \"income\"\n\
         [[query]]\nname = \"g\"\nkind = \"quantile\"\ncolumn = \"age\"\nq = 0.9\nlower = 0\nupper = 120\n\
         by = \"region\"\nkeys = [\"north\", \"south\"]\n",
    )
    .unwrap();
    let lines = json_lines(dpstat().arg("run").arg(&mixed).arg(fixture("people.csv")));
    assert_eq!(lines[0]["candidates"]["grid"], "log", "bounds-free: {}", lines[0]);
    assert_eq!(lines[0]["quantiles"][0]["score_sensitivity"], 2, "median under replace");
    assert_eq!(lines[0]["epsilon_exact"], "1/2");
    let groups = lines[1]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 3);
    for g in groups {
        // q = 9/10 by group under replace: 2·max(9, 1) (a row may move between groups).
        assert_eq!(g["quantiles"][0]["score_sensitivity"], 18, "{g}");
        assert_eq!(g["epsilon_exact"], "1/2", "{g}");
    }

    for (text, line, needle) in [
        ("kind = \"quantile\"\ncolumn = \"age\"\n", "line 3", "quantile needs levels"),
        ("kind = \"median\"\ncolumn = \"age\"\nq = [0.3]\n", "line 3", "median is the level 0.5"),
        ("kind = \"median\"\ncolumn = \"age\"\nlower = 0\n", "line 3", "both lower and upper"),
        ("kind = \"median\"\ncolumn = \"age\"\nresolution = 10\n", "line 3", "or neither"),
        ("kind = \"quantile\"\ncolumn = \"age\"\nq = [0.5, 1.5]\n", "line 6", "strictly between 0 and 1"),
        ("kind = \"quantile\"\ncolumn = \"age\"\nq = []\n", "line 6", "empty"),
        ("kind = \"count\"\nq = [0.5]\n", "line 5", "count does not take q"),
        (
            "kind = \"mean\"\ncolumn = \"age\"\nlower = 0\nupper = 9\nresolution = 5\n",
            "line 8",
            "mean does not take resolution",
        ),
    ] {
        let path = dir.path().join("bad.toml");
        fs::write(&path, format!("epsilon = 1\n[[query]]\nname = \"x\"\n{text}")).unwrap();
        fails_with(dpstat().arg("run").arg(&path).arg(fixture("people.csv")), &[line, needle]);
    }
}

/// `run --format csv`: the text table's rows (one header, a row per value, the total), read by
/// a CSV reader, with the numbers of the JSON release of the same seed.
#[test]
fn csv_format_has_the_table_rows_and_the_json_numbers() {
    use common::{csv_records, printed_as};
    let run = |format: &str| {
        stdout_of(
            seeded(7)
                // Every digit, to compare with the JSON (text_output.rs tests the rounding).
                .args(["run", "--full-precision", "--format", format])
                .arg(fixture("compose_grouped.toml"))
                .arg(fixture("people.csv")),
        )
    };
    let records = csv_records(&run("csv"));
    assert_eq!(
        records[0],
        ["name", "query", "column", "group", "bin", "value", "epsilon", "sensitivity", "error(95%)"]
    );
    // income_by_area: groups 1, 2, other; regions: 4 categories and other; the total.
    assert_eq!(records.len(), 1 + 3 + 5 + 1);
    assert_eq!(records[9][..7], ["total", "", "", "", "", "", "0.5"]);
    let lines: Vec<serde_json::Value> =
        run("json").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut expected: Vec<(String, String, f64, f64)> = vec![];
    for line in &lines {
        let name = line["name"].as_str().unwrap().to_string();
        if let Some(groups) = line["groups"].as_array() {
            for g in groups {
                let bound = g["accuracy"]["error_bound"].as_f64().unwrap();
                expected.push((
                    name.clone(),
                    g["key"].as_str().unwrap().into(),
                    g["value"].as_f64().unwrap(),
                    bound,
                ));
            }
        }
        if let Some(bins) = line["bins"].as_array() {
            let bound = line["accuracy"]["error_bound"].as_f64().unwrap();
            for b in bins {
                expected.push((
                    name.clone(),
                    b["bin"].as_str().unwrap().into(),
                    b["count"].as_f64().unwrap(),
                    bound,
                ));
            }
        }
    }
    assert_eq!(expected.len(), 8);
    for (row, (name, key, value, bound)) in records[1..9].iter().zip(&expected) {
        assert_eq!(&row[0], name);
        assert!(row[3] == *key || row[4] == *key, "{row:?} against {key}");
        assert!(printed_as(&row[5], *value), "{row:?}: value {value}");
        assert!(printed_as(&row[8], *bound), "{row:?}: bound {bound}");
        assert_eq!(row[6], "0.25");
    }
    // Nothing but the CSV on stdout: every line is a record of nine cells.
    assert!(records.iter().all(|r| r.len() == 9));
}

/// A workload of queries on groups found in the data, over `fixtures/sql_discover.csv`
/// (`pen` 120 persons, `pencil` 80, `rare` 2 with 60 rows each), `head` before the queries.
fn found_workload(dir: &TempDir, head: &str, queries: &str) -> std::path::PathBuf {
    let path = dir.path().join("found.toml");
    fs::write(&path, format!("{head}\n{queries}")).unwrap();
    path
}

const FOUND_QUERIES: &str = "[[query]]\nname = \"n\"\nkind = \"count\"\nby = \"item\"\ndiscover = true\n\n\
     [[query]]\nname = \"mean\"\nkind = \"mean\"\ncolumn = \"quantity\"\nlower = 0\nupper = 50\nby = \"item\"\n\
     discover = true\nshare = \"0.5\"\ninvalid = \"skip\"\n\n[[query]]\nname = \"all\"\nkind = \"count\"\n";

/// `discover = true`: one selection of the keys of `by`, its own part of the total (an even
/// part of what the shares leave, or `selection_share`, and all of delta), shared by every
/// discovered query, which is released on the selected keys only; a query on no groups runs
/// as before. The parts the output states add up exactly to what the ledger is charged.
#[test]
fn discovered_queries_share_one_selection_charged_once() {
    use num_rational::BigRational;
    let dir = TempDir::new().unwrap();
    let head = "epsilon = \"2\"\ndelta = \"1e-6\"\nprivacy_id = \"id\"\nmax_rows_per_id = 2\n";
    for (extra, selection) in [("", "1/2"), ("selection_share = \"0.9\"\n", "9/10")] {
        let workload = found_workload(&dir, &format!("{head}{extra}"), FOUND_QUERIES);
        let ledger = dir.path().join("ledger.jsonl");
        let lines = json_lines(
            unseeded()
                .arg("run")
                .arg(&workload)
                .args(["--budget", "100", "--budget-delta", "1e-3", "--ledger"])
                .arg(&ledger)
                .arg(fixture("sql_discover.csv")),
        );
        let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["selection", "n", "mean", "all"]);
        assert_eq!(lines[0]["epsilon_exact"], selection, "{}", lines[0]);
        assert_eq!(lines[0]["delta_exact"], "1/1000000");
        assert_eq!(lines[0]["discovery"]["per_person"]["keys_per_person"], 2, "{}", lines[0]);
        assert_eq!(lines[2]["epsilon_exact"], "1/2");
        for line in &lines[..3] {
            let keys: Vec<&str> =
                line["groups"].as_array().unwrap().iter().map(|g| g["key"].as_str().unwrap()).collect();
            assert_eq!(keys, ["pen", "pencil"], "{line}");
            assert_eq!(line["unit"], "person", "{line}");
        }
        let part =
            |v: &serde_json::Value| v["epsilon_exact"].as_str().unwrap().parse::<BigRational>().unwrap();
        let sum = lines.iter().map(part).fold(BigRational::from_integer(0.into()), |a, b| a + b);
        assert_eq!(sum, BigRational::from_integer(2.into()));
        let charge = ledger_records(&ledger).into_iter().rfind(|r| r["type"] == "charge").unwrap();
        assert_eq!(charge["epsilon"], "2/1", "{charge}");
        assert_eq!(charge["delta"], "1/1000000", "{charge}");
        fs::remove_file(&ledger).unwrap();
    }
}

/// The same seeded workload on neighbouring datasets (one of `rare`'s two persons removed):
/// `rare` is released in neither, whatever the seed; at row level its 120 rows pass.
#[test]
fn a_key_of_few_persons_is_never_released() {
    let dir = TempDir::new().unwrap();
    let text = fs::read_to_string(fixture("sql_discover.csv")).unwrap();
    let neighbour = dir.path().join("neighbour.csv");
    fs::write(
        &neighbour,
        text.lines().filter(|l| !l.starts_with("202,")).collect::<Vec<_>>().join("\n") + "\n",
    )
    .unwrap();
    let persons =
        found_workload(&dir, "epsilon = \"2\"\ndelta = \"1e-6\"\nprivacy_id = \"id\"\n", FOUND_QUERIES);
    for data in [fixture("sql_discover.csv"), neighbour] {
        for seed in 1..=10 {
            let lines = json_lines(seeded(seed).arg("run").arg(&persons).arg(&data));
            for line in &lines[..3] {
                let keys: Vec<&str> =
                    line["groups"].as_array().unwrap().iter().map(|g| g["key"].as_str().unwrap()).collect();
                assert!(!keys.contains(&"rare"), "seed {seed}: {line}");
            }
        }
    }
    let rows = found_workload(&dir, "epsilon = \"2\"\ndelta = \"1e-6\"\n", FOUND_QUERIES);
    let lines = json_lines(seeded(1).arg("run").arg(&rows).arg(fixture("sql_discover.csv")));
    assert!(lines[1]["groups"].as_array().unwrap().iter().any(|g| g["key"] == "rare"), "{}", lines[1]);
}

/// What discovery in a workload refuses, each in one line before anything is read (the data
/// file does not exist).
#[test]
fn discovery_refusals_come_before_reading() {
    let dir = TempDir::new().unwrap();
    let q = FOUND_QUERIES;
    let other = q.replace(
        "column = \"quantity\"\nlower = 0\nupper = 50\nby = \"item\"",
        "column = \"quantity\"\nlower = 0\nupper = 50\nby = \"id\"",
    );
    for (head, queries, needles) in [
        ("epsilon = \"1\"\n", q.to_string(), &["discover = true needs delta"][..]),
        ("epsilon = \"1\"\ndelta = \"1e-6\"\nnoise = \"gaussian\"\n", q.to_string(), &["not zCDP"]),
        ("epsilon = \"1\"\ndelta = \"1e-6\"\nneighbours = \"replace\"\n", q.to_string(), &["replace"]),
        (
            "epsilon = \"1\"\ndelta = \"1e-6\"\n",
            q.replace("discover = true\n\n", "discover = true\nkeys = [\"pen\"]\n\n"),
            &["give one of them"],
        ),
        ("epsilon = \"1\"\ndelta = \"1e-6\"\n", other, &["one selection finds the keys of one column"]),
        (
            "epsilon = \"1\"\ndelta = \"1e-6\"\n",
            q.replace("name = \"all\"", "name = \"selection\""),
            &["rename the query"],
        ),
        ("epsilon = \"1\"\ndelta = \"1e-6\"\nmax_keys = 3\n", q.to_string(), &["max_keys 3 leaves no room"]),
        (
            "epsilon = \"1\"\ndelta = \"1e-6\"\n",
            q.replace("discover = true", "discover = false"),
            &["delta belong"],
        ),
    ] {
        let workload = found_workload(&dir, head, &queries);
        fails_with(dpstat().arg("run").arg(&workload).arg(dir.path().join("missing.csv")), needles);
    }
    let workload = found_workload(&dir, "epsilon = \"1\"\ndelta = \"1e-6\"\n", q);
    fails_with(dpstat().args(["plan", "run"]).arg(&workload), &["discover = true", "nothing to compare"]);
}

/// Memory holds at most `max_keys` keys: past what the key cap's noisy test lets through (202
/// ids against max_keys 250, whose margin is about 242) the whole workload is withheld, exit 5,
/// nothing on stdout, as `--discover` withholds.
#[test]
fn more_keys_than_max_keys_withhold_the_workload() {
    let dir = TempDir::new().unwrap();
    let queries = "[[query]]\nname = \"n\"\nkind = \"count\"\nby = \"id\"\ndiscover = true\n";
    let workload = found_workload(&dir, "epsilon = \"2\"\ndelta = \"1e-6\"\nmax_keys = 250\n", queries);
    let out = seeded(1).arg("run").arg(&workload).arg(fixture("sql_discover.csv")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(out.stdout.is_empty(), "{stderr}");
    assert!(stderr.contains("more distinct keys than --max-keys 250"), "{stderr}");
}
