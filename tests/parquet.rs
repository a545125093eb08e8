//! Parquet input: the same table as CSV, as one Parquet file, as Parquet parts (a directory, a
//! glob, several FILE arguments) and as hive partitions gives bit-identical releases under the
//! same seed, for every statistic, with and without `--by`, `--discover`, `--where` and
//! `--privacy-id` (issue 26's equality suite). Built with `--features cluster`, the Parquet file
//! and the hive folders are also folded by a Ballista cluster of two dpstat executors, every case
//! (issue 27).
//!
//! The table is generated (a fixed hash of row and column, no randomness) with a null in every
//! column, a decimal, 32- and 64-bit integers and floats, non-finite doubles, text keys that
//! need CSV quoting (commas, quotes, spaces at the ends, which dpstat trims: " west " and
//! "west" are one key in both), dictionary-encoded and large strings, a date and a text
//! partition column last.

use crate::common;
#[cfg(feature = "cluster")]
use crate::common::cluster;
use crate::common::tables;

use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;

use common::*;
use tables::{Table, Values};

/// Rows of the generated table: a few per person and over a hundred per key, so that
/// truncation and discovery both have something to do.
const ROWS: usize = 1200;

/// splitmix64 of a row and a column's salt: the table's only source of variety.
fn mix(row: usize, salt: u64) -> u64 {
    let mut z = (row as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Column `salt`'s cells: `value` of the row's hash, or a null for about one row in `nulls`.
fn column<T>(salt: u64, nulls: u64, value: impl Fn(u64) -> T) -> Vec<Option<T>> {
    (0..ROWS)
        .map(|r| {
            let h = mix(r, salt);
            (!h.is_multiple_of(nulls)).then(|| value(h / nulls))
        })
        .collect()
}

/// Keys that CSV must quote or that only trimming makes equal: a tab before "north" (not quoted,
/// and trimmed), a line break, an empty text that is not a null.
const REGIONS: [&str; 10] = [
    "north",
    "south",
    "east, central",
    " west ",
    "west",
    "say \"hi\"",
    "Ünter-Nord",
    "\tnorth",
    "two\nlines",
    "",
];
/// The public keys of `--by region` ("\tnorth" counts as north; the other three regions, a line
/// break, "Ünter-Nord" and the empty text, as `other`).
const KEYS: &str = r#"north,south,"east, central",west,"say ""hi""""#;
const SEGMENTS: [&str; 4] = ["a", "b, c", " d ", "e\"f"];

fn texts(salt: u64, nulls: u64, of: &[&str]) -> Vec<Option<String>> {
    column(salt, nulls, |h| of[(h % of.len() as u64) as usize].to_string())
}

fn table() -> Table {
    let income = column(3, 17, |h| match h % 97 {
        // Non-finite doubles are what CSV's "NaN"/"inf" cells are: invalid, not numbers.
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => -0.0,
        _ => (h % 1_000_000) as f64 / 7.0,
    });
    Table {
        columns: vec![
            ("id".into(), Values::Int(column(1, 41, |h| (h % 300) as i64))),
            ("region".into(), Values::Text(texts(2, 23, &REGIONS))),
            ("income".into(), Values::Float(income)),
            ("price".into(), Values::Decimal(column(4, 19, |h| (h % 40_001) as i128 - 20_000), 12, 2)),
            ("age".into(), Values::Int32(column(5, 29, |h| (h % 90) as i32))),
            ("score".into(), Values::Float32(column(6, 31, |h| (h % 10_000) as f32 / 3.0))),
            ("segment".into(), Values::Dictionary(texts(7, 37, &SEGMENTS))),
            ("note".into(), Values::LargeText(texts(8, 43, &["x", "y y", "z,z"]))),
            ("day".into(), Values::Date(column(9, 47, |h| 19_800 + (h % 6) as i32))),
            ("member".into(), Values::Bool(column(11, 53, |h| h % 3 == 0))),
            // 2024-03-19T10:00:00 UTC, plus whole half hours and half seconds.
            (
                "at".into(),
                Values::Timestamp(column(12, 59, |h| {
                    1_710_842_400_000_000 + (h % 4) as i64 * 1_800_000_000 + (h / 4 % 2) as i64 * 500_000
                })),
            ),
            ("year".into(), Values::Text(texts(10, 13, &["2023", "2024", "2025"]))),
        ],
    }
}

/// The table written once per test process, in every layout, under cargo's scratch folder.
struct Files {
    csv: PathBuf,
    parquet: PathBuf,
    parts: PathBuf,
    hive_csv: PathBuf,
    hive: PathBuf,
}

fn files() -> &'static Files {
    static FILES: OnceLock<Files> = OnceLock::new();
    FILES.get_or_init(|| {
        let root = common::process_dir("parquet-equality");
        let t = table();
        let files = Files {
            csv: root.join("t.csv"),
            parquet: root.join("t.parquet"),
            parts: root.join("parts"),
            hive_csv: root.join("hive.csv"),
            hive: root.join("hive"),
        };
        std::fs::write(&files.csv, t.csv()).unwrap();
        // Row groups of 97 rows: a dozen of them, ending mid-way through the table.
        t.write_parquet(&files.parquet, 97);
        t.write_parts(&files.parts, 4, 64);
        std::fs::write(&files.hive_csv, t.write_hive(&files.hive, 50)).unwrap();
        files
    })
}

/// How the table is handed to dpstat.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    Csv,
    /// One Parquet file of several row groups, read on the default threads.
    Parquet,
    ParquetOneThread,
    /// The Parquet file as `-` on standard input.
    ParquetStdin,
    /// The directory of parts, on the default threads.
    Parts,
    /// The directory of parts on more threads than this machine may have cores, so that the
    /// merging of the threads' folds is tested anywhere.
    PartsFiveThreads,
    /// `parts/*.parquet`, quoted (dpstat expands it).
    Glob,
    /// The parts as several FILE arguments.
    PartArgs,
    /// The CSV of the rows in the order of the hive folders.
    HiveCsv,
    Hive,
    /// The Parquet file, folded on the cluster.
    #[cfg(feature = "cluster")]
    Cluster,
    /// The hive folders, folded on the cluster.
    #[cfg(feature = "cluster")]
    ClusterHive,
}

use Layout::*;

/// The cluster every cluster layout runs on, started once per test process and stopped when it
/// exits.
#[cfg(feature = "cluster")]
fn engine() -> &'static str {
    static CLUSTER: OnceLock<cluster::Cluster> = OnceLock::new();
    extern "C" fn stop() {
        if let Some(c) = CLUSTER.get() {
            c.stop();
        }
    }
    &CLUSTER
        .get_or_init(|| {
            // SAFETY: registers a plain function to run at exit; it only runs a script.
            unsafe { libc::atexit(stop) };
            cluster::Cluster::start("equality", 50510, 2, "")
        })
        .url
}

/// Layouts that hold the table in its own order (compared with the CSV), and those that hold it
/// in the hive folders' (compared with their CSV).
#[cfg(not(feature = "cluster"))]
const FLAT: &[Layout] =
    &[Csv, Parquet, ParquetOneThread, ParquetStdin, Parts, PartsFiveThreads, Glob, PartArgs];
#[cfg(not(feature = "cluster"))]
const HIVE: &[Layout] = &[HiveCsv, Hive];
#[cfg(feature = "cluster")]
const FLAT: &[Layout] =
    &[Csv, Parquet, ParquetOneThread, ParquetStdin, Parts, PartsFiveThreads, Glob, PartArgs, Cluster];
#[cfg(feature = "cluster")]
const HIVE: &[Layout] = &[HiveCsv, Hive, ClusterHive];

/// The layouts a case runs on: every case the main ones; the variants whose folds merge in
/// their own way (plain, keys found, people by group) also on one and on five threads; the
/// plain ones also on every other way of naming the same files. Each run is a process, and
/// the suite must stay quick.
const MAIN: &[Layout] = &[Csv, Parquet, Parts, HiveCsv, Hive];
const THREADS: &[Layout] = &[Csv, Parquet, ParquetOneThread, Parts, PartsFiveThreads, HiveCsv, Hive];
const EVERY: &[Layout] =
    &[Csv, Parquet, ParquetOneThread, ParquetStdin, Parts, PartsFiveThreads, Glob, PartArgs, HiveCsv, Hive];

impl Layout {
    fn feed(self, cmd: &mut assert_cmd::Command) -> &mut assert_cmd::Command {
        let f = files();
        let part = |p: usize| f.parts.join(format!("part-{p:03}.parquet"));
        match self {
            Csv => cmd.arg(&f.csv),
            Parquet => cmd.arg(&f.parquet),
            ParquetOneThread => cmd.args(["--threads", "1"]).arg(&f.parquet),
            ParquetStdin => cmd.arg("-").write_stdin(std::fs::read(&f.parquet).unwrap()),
            Parts => cmd.arg(&f.parts),
            PartsFiveThreads => cmd.args(["-j", "5"]).arg(&f.parts),
            Glob => cmd.arg(f.parts.join("*.parquet")),
            PartArgs => cmd.args((0..4).map(part)),
            HiveCsv => cmd.arg(&f.hive_csv),
            Hive => cmd.arg(&f.hive),
            #[cfg(feature = "cluster")]
            Cluster => cmd.args(["--engine", engine()]).arg(&f.parquet),
            #[cfg(feature = "cluster")]
            ClusterHive => cmd.args(["--engine", engine()]).arg(&f.hive),
        }
    }
}

/// A statistic's command line (with a workload file's name for `run`), without the FILEs.
#[derive(Clone, Debug)]
struct Case {
    name: String,
    args: Vec<String>,
    layouts: &'static [Layout],
}

fn words(s: &[&str]) -> Vec<String> {
    s.iter().map(|w| w.to_string()).collect()
}

/// What is added to a statistic's flags.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    Plain,
    ByKeys,
    Discover,
    WhereText,
    WhereNumber,
    Person,
    PersonBy,
}

impl Variant {
    const ALL: [Variant; 7] = [
        Variant::Plain,
        Variant::ByKeys,
        Variant::Discover,
        Variant::WhereText,
        Variant::WhereNumber,
        Variant::Person,
        Variant::PersonBy,
    ];

    fn layouts(self) -> &'static [Layout] {
        match self {
            Variant::Plain => EVERY,
            Variant::Discover | Variant::PersonBy => THREADS,
            _ => MAIN,
        }
    }

    fn args(self) -> Vec<String> {
        match self {
            Variant::Plain => vec![],
            Variant::ByKeys => words(&["--by", "region", "--keys", KEYS]),
            // Few keys held: quantiles hold their candidates' counts for every key held.
            Variant::Discover => {
                words(&["--by", "region", "--discover", "--delta", "1e-6", "--max-keys", "1000"])
            }
            // " west " and "west" both pass, in CSV and in Parquet.
            Variant::WhereText => words(&["--where", "region=west", "--where", r#"segment in "b, c",d"#]),
            Variant::WhereNumber => words(&["--where", "age>=30", "--where", "price<100.5"]),
            Variant::Person => words(&["--privacy-id", "id", "--max-rows-per-id", "3"]),
            Variant::PersonBy => words(&[
                "--privacy-id",
                "id",
                "--max-rows-per-id",
                "3",
                "--by",
                "region",
                "--keys",
                KEYS,
                "--max-groups-per-id",
                "2",
            ]),
        }
    }
}

/// Every statistic with the variants it takes.
fn statistics() -> Vec<(&'static str, Vec<String>, Vec<Variant>)> {
    let all = Variant::ALL.to_vec();
    let skip = ["--invalid", "skip", "--eps", "1"];
    let with = |base: &[&str]| words(&[base, &skip[..]].concat());
    vec![
        ("count", words(&["count", "--eps", "1"]), all.clone()),
        ("sum income", with(&["sum", "--col", "income", "--lower", "0", "--upper", "100000"]), all.clone()),
        ("mean price", with(&["mean", "--col", "price", "--lower", "-150", "--upper", "150"]), all.clone()),
        (
            "variance income",
            with(&["variance", "--col", "income", "--lower", "0", "--upper", "90000"]),
            all.clone(),
        ),
        (
            "histogram age",
            with(&["histogram", "--col", "age", "--bins", "6", "--lower", "0", "--upper", "90"]),
            all.clone(),
        ),
        (
            "histogram segment",
            words(&["histogram", "--col", "segment", "--categories", r#"a,"b, c",d,"e""f""#, "--eps", "1"]),
            all.clone(),
        ),
        (
            "quantile income",
            with(&[
                "quantile",
                "--col",
                "income",
                "--q",
                "0.25,0.75",
                "--lower",
                "0",
                "--upper",
                "150000",
                "--resolution",
                "500",
            ]),
            all.clone(),
        ),
        (
            "median score",
            with(&["median", "--col", "score", "--lower", "0", "--upper", "3500", "--resolution", "500"]),
            all.clone(),
        ),
        (
            "covariance",
            with(&["covariance", "--cols", "income,price", "--lower", "0,-200", "--upper", "150000,200"]),
            all.clone(),
        ),
        (
            "regress",
            with(&["regress", "--x", "age", "--y", "income", "--lower", "0,0", "--upper", "90,150000"]),
            all.clone(),
        ),
        (
            "describe",
            with(&[
                "describe",
                "--cols",
                "income:0:150000,price:-200:200,age:0:90",
                "--q",
                "0.5,0.9",
                "--resolution",
                "500",
            ]),
            // describe has no --by.
            all.into_iter()
                .filter(|v| !matches!(v, Variant::ByKeys | Variant::Discover | Variant::PersonBy))
                .collect(),
        ),
    ]
}

/// Single cases beyond the matrix: bounds found privately, bounds-free quantiles, other column
/// types, keys found in a dictionary column, a filter on a date and on the partition column.
fn extras() -> Vec<Case> {
    let case = |name: &str, args: &[&str]| Case { name: name.into(), args: words(args), layouts: MAIN };
    let person_sum = |k: &'static str| {
        let price = ["sum", "--col", "price", "--lower", "-200", "--upper", "200", "--privacy-id", "id"];
        [&price[..], &["--max-rows-per-id", k, "--count-truncated", "--invalid", "skip", "--eps", "1"]]
            .concat()
    };
    vec![
        case("sum, private bounds", &["sum", "--col", "price", "--invalid", "skip", "--eps", "1"]),
        case(
            "quantile, bounds-free",
            &["quantile", "--col", "income", "--q", "0.5", "--invalid", "skip", "--eps", "1"],
        ),
        case(
            "mean age (Int32)",
            &["mean", "--col", "age", "--lower", "0", "--upper", "90", "--invalid", "skip", "--eps", "1"],
        ),
        case(
            "histogram segment, discovered",
            &["histogram", "--col", "segment", "--discover", "--delta", "1e-6", "--eps", "1"],
        ),
        case(
            "count by note (LargeUtf8), discovered",
            &["count", "--by", "note", "--discover", "--delta", "1e-6", "--eps", "1"],
        ),
        case("count where day (Date32)", &["count", "--where", "day=2024-03-19", "--eps", "1"]),
        case(
            "count by day (Date32)",
            &["count", "--by", "day", "--keys", "2024-03-19,2024-03-20", "--eps", "1"],
        ),
        case("count where member (Boolean)", &["count", "--where", "member=true", "--eps", "1"]),
        case("count where at (Timestamp)", &["count", "--where", "at=2024-03-19T10:30:00", "--eps", "1"]),
        case(
            "count where year is empty (null partition)",
            &["count", "--where", "year is empty", "--eps", "1"],
        ),
        case(
            "count, composite person",
            &["count", "--privacy-id", "id,region", "--max-rows-per-id", "2", "--eps", "1"],
        ),
        case("sum, person, truncated counted", &person_sum("2")),
        case("sum, person auto, truncated counted", &person_sum("auto")),
        // Distinct people per key: the folds close each person (`person_end`) through every
        // executor's wrappers, on one thread and on five.
        Case {
            layouts: THREADS,
            ..case(
                "count by region, discovered, people",
                &[
                    "count",
                    "--privacy-id",
                    "id",
                    "--by",
                    "region",
                    "--discover",
                    "--delta",
                    "1e-6",
                    "--eps",
                    "1",
                ],
            )
        },
        Case {
            layouts: THREADS,
            ..case(
                "mean by year (partition), discovered, people",
                &[
                    "mean",
                    "--col",
                    "price",
                    "--lower",
                    "-200",
                    "--upper",
                    "200",
                    "--privacy-id",
                    "id",
                    "--max-rows-per-id",
                    "2",
                    "--by",
                    "year",
                    "--discover",
                    "--delta",
                    "1e-6",
                    "--max-keys",
                    "1000",
                    "--invalid",
                    "skip",
                    "--eps",
                    "1",
                ],
            )
        },
        case("count where year (partition)", &["count", "--where", "year>=2024", "--eps", "1"]),
        case(
            "mean by year (partition)",
            &[
                "mean",
                "--col",
                "score",
                "--lower",
                "0",
                "--upper",
                "3500",
                "--by",
                "year",
                "--keys",
                "2023,2024,2025",
                "--invalid",
                "skip",
                "--eps",
                "1",
            ],
        ),
        case(
            "replace, impute",
            &[
                "mean",
                "--col",
                "price",
                "--lower",
                "-150",
                "--upper",
                "150",
                "--neighbours",
                "replace",
                "--invalid",
                "impute=0",
                "--eps",
                "1",
            ],
        ),
        case(
            "gaussian by",
            &[
                "sum",
                "--col",
                "age",
                "--lower",
                "0",
                "--upper",
                "90",
                "--by",
                "region",
                "--keys",
                KEYS,
                "--noise",
                "gaussian",
                "--delta",
                "1e-6",
                "--invalid",
                "skip",
                "--eps",
                "1",
            ],
        ),
    ]
}

/// Workloads for `run`: every kind of query, per row and per person.
fn workloads() -> Vec<Case> {
    let queries = r#"
[[query]]
name = "rows"
kind = "count"

[[query]]
name = "income"
kind = "mean"
column = "income"
lower = 0
upper = 150000
invalid = "skip"
by = "region"
keys = ["north", "south", "east, central", "west", 'say "hi"']

[[query]]
name = "price"
kind = "variance"
column = "price"
lower = -200
upper = 200
invalid = "skip"
where = ["region=west"]

[[query]]
name = "ages"
kind = "histogram"
column = "age"
bins = 5
lower = 0
upper = 90
invalid = "skip"

[[query]]
name = "segments"
kind = "histogram"
column = "segment"
categories = ["a", "b, c", "d"]

[[query]]
name = "score"
kind = "quantile"
column = "score"
q = [0.1, 0.9]
lower = 0
upper = 3500
resolution = 500
invalid = "skip"

[[query]]
name = "pair"
kind = "covariance"
column = ["income", "price"]
lower = [0, -200]
upper = [150000, 200]
invalid = "skip"

[[query]]
name = "slope"
kind = "regress"
column = ["age", "income"]
lower = [0, 0]
upper = [90, 150000]
invalid = "skip"
"#;
    let root = files().csv.parent().unwrap().to_path_buf();
    [("run rows", "epsilon = 2\n"), ("run people", "epsilon = 2\nprivacy_id = \"id\"\nmax_rows_per_id = 3\n")]
        .iter()
        .map(|(name, head)| {
            let path = root.join(format!("{}.toml", name.replace(' ', "-")));
            std::fs::write(&path, format!("{head}{queries}")).unwrap();
            Case {
                name: name.to_string(),
                args: vec!["run".into(), path.to_string_lossy().into_owned()],
                layouts: EVERY,
            }
        })
        .collect()
}

fn every_case() -> Vec<Case> {
    let mut cases = Vec::new();
    for (name, base, variants) in statistics() {
        for variant in variants {
            let mut args = base.clone();
            args.extend(variant.args());
            cases.push(Case { name: format!("{name} {variant:?}"), args, layouts: variant.layouts() });
        }
    }
    cases.extend(extras());
    cases.extend(workloads());
    cases
}

fn run(seed: u64, args: &[String], layout: Layout) -> Output {
    layout.feed(seeded(seed).args(args).args(["--format", "json"])).output().expect("dpstat runs")
}

/// Every JSON value in `text` (one per line), each an object; panics otherwise.
fn objects(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|line| {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            assert!(v.is_object(), "not an object: {line}");
            v
        })
        .collect()
}

/// Whether a release holds at least one finite number released under `"value"` or `"count"`.
fn holds_a_value(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Object(map) => {
            ["value", "count"]
                .iter()
                .any(|k| map.get(*k).and_then(|x| x.as_f64()).is_some_and(f64::is_finite))
                || map.values().any(holds_a_value)
        }
        serde_json::Value::Array(items) => items.iter().any(holds_a_value),
        _ => false,
    }
}

/// A case's layouts: with the cluster built in, also the cluster's (but for
/// `--max-rows-per-id auto`, which it refuses: tests/cluster.rs).
fn layouts_of(case: &Case) -> Vec<Layout> {
    #[allow(unused_mut)]
    let mut layouts = case.layouts.to_vec();
    #[cfg(feature = "cluster")]
    if !case.args.windows(2).any(|w| w[0] == "--max-rows-per-id" && w[1] == "auto") {
        layouts.extend([Cluster, ClusterHive]);
    }
    layouts
}

/// Runs every case on its layouts (all runs in parallel) and compares stdout byte for byte
/// within the flat layouts and within the hive layouts.
fn equal_everywhere(cases: &[Case]) {
    let jobs: Vec<(usize, Layout)> = cases
        .iter()
        .enumerate()
        .flat_map(|(c, case)| layouts_of(case).into_iter().map(move |l| (c, l)))
        .collect();
    let outputs = parallel_map(6, jobs.len(), |i| run(1, &cases[jobs[i].0].args, jobs[i].1));
    let mut failures = Vec::new();
    for (c, case) in cases.iter().enumerate() {
        let of = |layout: Layout| jobs.iter().position(|&j| j == (c, layout)).map(|i| &outputs[i]);
        for group in [FLAT, HIVE] {
            let first = of(group[0]).expect("every case runs on both CSV files");
            let text = String::from_utf8_lossy(&first.stdout).into_owned();
            if !first.status.success() {
                let stderr = String::from_utf8_lossy(&first.stderr);
                failures.push(format!("{} on {:?} failed: {}", case.name, group[0], stderr.trim_end()));
                continue;
            }
            let released = objects(&text);
            if released.is_empty() || !released.iter().all(holds_a_value) {
                failures.push(format!("{}: no release: {text}", case.name));
            }
            for &layout in &group[1..] {
                let Some(out) = of(layout) else { continue };
                if out.status.code() != first.status.code() || out.stdout != first.stdout {
                    failures.push(format!(
                        "{} on {layout:?} differs from {:?} (exit {:?}):\n  {}\n  {}\n  stderr: {}",
                        case.name,
                        group[0],
                        out.status.code(),
                        text.trim_end(),
                        String::from_utf8_lossy(&out.stdout).trim_end(),
                        String::from_utf8_lossy(&out.stderr).trim_end()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_statistic_and_variant_is_the_same_release_in_every_layout() {
    equal_everywhere(&every_case());
}

#[test]
fn the_table_has_what_the_suite_claims() {
    let t = table();
    assert_eq!(t.rows(), ROWS);
    for (name, values) in &t.columns {
        let nulls = match values {
            Values::Int(v) => v.iter().filter(|x| x.is_none()).count(),
            Values::Int32(v) => v.iter().filter(|x| x.is_none()).count(),
            Values::Float(v) => v.iter().filter(|x| x.is_none()).count(),
            Values::Float32(v) => v.iter().filter(|x| x.is_none()).count(),
            Values::Text(v) | Values::LargeText(v) | Values::Dictionary(v) => {
                v.iter().filter(|x| x.is_none()).count()
            }
            Values::Decimal(v, _, _) => v.iter().filter(|x| x.is_none()).count(),
            Values::Date(v) => v.iter().filter(|x| x.is_none()).count(),
            Values::Timestamp(v) => v.iter().filter(|x| x.is_none()).count(),
            Values::Bool(v) => v.iter().filter(|x| x.is_none()).count(),
        };
        assert!(nulls > 0, "{name} has no null");
    }
    let csv = t.csv();
    for quoted in
        [r#"" west ""#, r#""east, central""#, r#""say ""hi""""#, r#""b, c""#, "\"two\nlines\"", ",\tnorth,"]
    {
        assert!(csv.contains(quoted), "the CSV quotes {quoted}");
    }
    // The flat layouts really are one file of several row groups and several parts.
    let f = files();
    assert!(std::fs::read_dir(&f.parts).unwrap().count() == 4);
    assert!(std::fs::read_dir(&f.hive).unwrap().count() == 4, "three years and the null folder");
    assert!(std::fs::metadata(&f.parquet).unwrap().len() > 0);
}

/// The comparisons can fail: another seed gives another release on the same files.
#[test]
fn another_seed_is_another_release() {
    let case = &statistics()[2].1;
    for layout in [Csv, Parquet, Hive] {
        let one = run(1, case, layout);
        let two = run(2, case, layout);
        assert!(one.status.success() && two.status.success());
        assert_ne!(one.stdout, two.stdout, "{layout:?}");
    }
}

/// A null under `--invalid error` stops the run in every layout, with exit 2 and nothing on
/// stdout (the messages name the row differently: a CSV line, a Parquet part's row).
#[test]
fn a_null_stops_an_invalid_error_run_everywhere() {
    let args = words(&["mean", "--col", "price", "--lower", "-150", "--upper", "150", "--eps", "1"]);
    for layout in FLAT.iter().chain(HIVE.iter()) {
        let out = run(1, &args, *layout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{layout:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{layout:?}");
        assert!(stderr.contains("price"), "{layout:?} names the column: {stderr}");
    }
}
