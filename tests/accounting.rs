//! One ε accountant: for every statistic × privacy unit × way of running it (plain, `--by`
//! groups, inside a workload, with bounds found privately), the parts a release prints under
//! `accounting` compose exactly (sequential parts add up, parallel groups take the largest) to
//! the ε the release prints, and that is exactly what the ledger is charged (before the data are
//! read; numeric queries say how to treat bad cells, as a ledger requires).

mod common;

use std::fs;

use common::{fixture, stdout_of, unseeded, UNITS};
use num_bigint::BigInt;
use num_rational::BigRational;
use serde_json::Value;
use tempfile::TempDir;

fn exact(text: &str) -> BigRational {
    let (n, d) = text.split_once('/').unwrap_or_else(|| panic!("not n/d: {text}"));
    BigRational::new(n.parse::<BigInt>().unwrap(), d.parse::<BigInt>().unwrap())
}

/// Checks one node of an accounting tree and returns its exact total.
fn check_tree(node: &Value) -> BigRational {
    let total = exact(node["epsilon_exact"].as_str().unwrap_or_else(|| panic!("no epsilon_exact: {node}")));
    if let Some(parts) = node.get("parts").and_then(Value::as_array) {
        let totals: Vec<BigRational> = parts.iter().map(check_tree).collect();
        let composed = match node["composition"].as_str() {
            Some("sequential") => totals.iter().fold(BigRational::from_integer(0.into()), |a, t| a + t),
            Some("parallel") => totals.iter().max().cloned().expect("parallel parts"),
            other => panic!("composition {other:?} in {node}"),
        };
        assert_eq!(composed, total, "parts do not compose to the node's epsilon: {node}");
    }
    total
}

/// The release's printed ε, checked against its own accounting tree.
fn printed(release: &Value) -> BigRational {
    let total = check_tree(&release["accounting"]);
    assert_eq!(exact(release["epsilon_exact"].as_str().unwrap()), total, "{release}");
    total
}

/// The ε of the ledger's last charge, which the record after it says was released.
fn last_charge(ledger: &std::path::Path) -> BigRational {
    let text = fs::read_to_string(ledger).unwrap();
    let records: Vec<Value> = text.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let [.., charge, released] = records.as_slice() else { panic!("no charge in {text}") };
    assert_eq!(charge["type"], "charge", "{charge}");
    assert_eq!(
        (released["type"].as_str(), &released["charge"]),
        (Some("released"), &charge["seq"]),
        "{released}"
    );
    exact(charge["epsilon"].as_str().unwrap())
}

struct Kind {
    args: &'static [&'static str],
    /// The same statistic as a workload query, or None where workloads do not take it.
    workload: Option<&'static str>,
    grouped: bool,
    private_bounds: Option<&'static [&'static str]>,
    /// Statistics that divide by the row count cannot be grouped under replace.
    grouped_under_replace: bool,
}

const KINDS: &[Kind] = &[
    Kind {
        args: &["count"],
        workload: Some("kind = \"count\""),
        grouped: true,
        private_bounds: None,
        grouped_under_replace: true,
    },
    Kind {
        args: &["sum", "--col", "income", "--lower", "0", "--upper", "200000", "--invalid", "impute=0"],
        workload: Some("kind = \"sum\"\ncolumn = \"income\"\nlower = 0\nupper = 200000\ninvalid = \"impute=0\""),
        grouped: true,
        private_bounds: Some(&["sum", "--col", "income", "--invalid", "impute=0"]),
        grouped_under_replace: true,
    },
    Kind {
        args: &["mean", "--col", "age", "--lower", "0", "--upper", "100", "--invalid", "impute=0"],
        workload: Some("kind = \"mean\"\ncolumn = \"age\"\nlower = 0\nupper = 100\ninvalid = \"impute=0\""),
        grouped: true,
        private_bounds: Some(&["mean", "--col", "income", "--invalid", "impute=0"]),
        grouped_under_replace: false,
    },
    Kind {
        args: &["variance", "--col", "age", "--lower", "0", "--upper", "100", "--invalid", "impute=0"],
        workload: Some("kind = \"variance\"\ncolumn = \"age\"\nlower = 0\nupper = 100\ninvalid = \"impute=0\""),
        grouped: true,
        private_bounds: None,
        grouped_under_replace: false,
    },
    Kind {
        args: &["histogram", "--col", "age", "--bins", "4", "--lower", "0", "--upper", "100", "--invalid", "impute=0"],
        workload: Some("kind = \"histogram\"\ncolumn = \"age\"\nbins = 4\nlower = 0\nupper = 100\ninvalid = \"impute=0\""),
        grouped: true,
        private_bounds: Some(&["histogram", "--col", "income", "--bins", "4", "--invalid", "impute=0"]),
        grouped_under_replace: true,
    },
    Kind {
        args: &["quantile", "--col", "age", "--q", "0.1,0.5,0.9", "--lower", "0", "--upper", "100", "--invalid", "impute=0"],
        workload: Some("kind = \"quantile\"\ncolumn = \"age\"\nq = [0.1, 0.5, 0.9]\nlower = 0\nupper = 100\ninvalid = \"impute=0\""),
        grouped: true,
        private_bounds: None,
        grouped_under_replace: true,
    },
    Kind {
        args: &["covariance", "--cols", "age,income", "--lower", "0,0", "--upper", "100,200000", "--invalid", "impute=0"],
        workload: Some(
            "kind = \"covariance\"\ncolumn = [\"age\", \"income\"]\nlower = [0, 0]\nupper = [100, 200000]\ninvalid = \"impute=0\"",
        ),
        grouped: true,
        private_bounds: None,
        grouped_under_replace: false,
    },
    Kind {
        args: &["regress", "--x", "age", "--y", "income", "--lower", "0,0", "--upper", "100,200000", "--invalid", "impute=0"],
        workload: Some(
            "kind = \"regress\"\ncolumn = [\"age\", \"income\"]\nlower = [0, 0]\nupper = [100, 200000]\ninvalid = \"impute=0\"",
        ),
        grouped: true,
        private_bounds: None,
        grouped_under_replace: false,
    },
    // Without bounds: AboveThreshold, with a noisy count under add-remove and two halves a level.
    Kind {
        args: &["quantile", "--col", "age", "--q", "0.1,0.5,0.9", "--invalid", "impute=0"],
        workload: Some("kind = \"quantile\"\ncolumn = \"age\"\nq = [0.1, 0.5, 0.9]\ninvalid = \"impute=0\""),
        grouped: false,
        private_bounds: None,
        grouped_under_replace: false,
    },
    Kind {
        args: &["median", "--col", "age", "--invalid", "impute=0"],
        workload: Some("kind = \"median\"\ncolumn = \"age\"\ninvalid = \"impute=0\""),
        grouped: false,
        private_bounds: None,
        grouped_under_replace: false,
    },
    Kind {
        args: &["median", "--col", "age", "--lower", "0", "--upper", "100", "--invalid", "impute=0"],
        workload: Some("kind = \"median\"\ncolumn = \"age\"\nlower = 0\nupper = 100\ninvalid = \"impute=0\""),
        grouped: true,
        private_bounds: None,
        grouped_under_replace: true,
    },
];

/// Runs a release with a fresh ledger; returns its JSON and the ledger's charge.
fn charged(args: &[&str], unit: &str, eps: &str) -> (Value, BigRational) {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let out = stdout_of(
        unseeded()
            .args(args)
            .args(["--eps", eps, "--neighbours", unit, "--budget", "100", "--format", "json", "--ledger"])
            .arg(&ledger)
            .arg(fixture("people.csv")),
    );
    let json: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    (json, last_charge(&ledger))
}

#[test]
fn plain_and_private_bounds_releases_print_what_they_charge() {
    for kind in KINDS {
        for unit in UNITS {
            // An ε with a thirds split that does not terminate as a decimal: exactness shows.
            let (json, charge) = charged(kind.args, unit, "0.7");
            assert_eq!(printed(&json), charge, "{:?} {unit}", kind.args);
            assert_eq!(charge, exact("7/10"));
            if let Some(args) = kind.private_bounds {
                let (json, charge) = charged(args, unit, "0.9");
                assert_eq!(printed(&json), charge, "{args:?} {unit}");
                assert_eq!(json["accounting"]["parts"][0]["name"], "bounds", "{json}");
                assert_eq!(charge, exact("9/10"));
            }
        }
    }
}

#[test]
fn grouped_releases_compose_in_parallel_and_charge_once() {
    for kind in KINDS.iter().filter(|k| k.grouped) {
        for unit in UNITS.iter().filter(|u| **u == "add-remove" || kind.grouped_under_replace) {
            let mut args = kind.args.to_vec();
            args.extend(["--by", "region", "--keys", "north,south,east"]);
            let (json, charge) = charged(&args, unit, "0.3");
            assert_eq!(json["accounting"]["composition"], "parallel", "{json}");
            assert_eq!(json["accounting"]["parts"].as_array().map(Vec::len), Some(4), "{json}");
            for group in json["groups"].as_array().unwrap() {
                assert_eq!(printed(group), exact("3/10"), "{group}");
            }
            assert_eq!(printed(&json), charge, "{args:?} {unit}");
            assert_eq!(charge, exact("3/10"));
        }
    }
}

#[test]
fn workload_queries_compose_in_sequence_to_the_total_charged() {
    for kind in KINDS.iter().filter(|k| k.workload.is_some()) {
        for unit in UNITS {
            let dir = TempDir::new().unwrap();
            let (workload, ledger) = (dir.path().join("w.toml"), dir.path().join("ledger.jsonl"));
            let body = kind.workload.unwrap();
            fs::write(
                &workload,
                format!(
                    "epsilon = \"1\"\nneighbours = \"{unit}\"\n\n[[query]]\nname = \"a\"\n{body}\nshare = \"0.3\"\n\n\
                     [[query]]\nname = \"b\"\nkind = \"count\"\n\n[[query]]\nname = \"c\"\n{body}\n"
                ),
            )
            .unwrap();
            let out = stdout_of(
                unseeded()
                    .arg("run")
                    .arg(&workload)
                    .args(["--format", "json", "--budget", "5", "--ledger"])
                    .arg(&ledger)
                    .arg(fixture("people.csv")),
            );
            let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            let shares: Vec<BigRational> = lines.iter().map(printed).collect();
            assert_eq!(shares, vec![exact("3/10"), exact("7/20"), exact("7/20")], "{body}");
            let sum = shares.iter().fold(BigRational::from_integer(0.into()), |a, s| a + s);
            assert_eq!(sum, last_charge(&ledger), "{body} {unit}");
            assert_eq!(sum, exact("1/1"));
        }
    }
}

/// `dpstat describe`: its queries (a mean and the quantiles per column) print exact shares that
/// add up to `--eps`, and that is the one charge, under both units, with an even split, with
/// `--shares`, and with bounds found privately.
#[test]
fn describe_composes_in_sequence_to_the_total_charged() {
    let cases: [(&[&str], &str, Vec<&str>); 3] = [
        (
            &["--cols", "income:0:200000,age:0:100", "--q", "0.1,0.5,0.9", "--eps", "0.7"],
            "7/10",
            vec!["7/40"; 4],
        ),
        (
            &["--cols", "income:0:200000,age:0:100,score:0:100", "--shares", "0.5,0.3,0.2", "--eps", "1"],
            "1/1",
            vec!["1/4", "1/4", "3/20", "3/20", "1/10", "1/10"],
        ),
        (&["--cols", "income,age:0:100", "--eps", "1"], "1/1", vec!["1/4"; 4]),
    ];
    for unit in UNITS {
        for (args, total, shares) in &cases {
            let dir = TempDir::new().unwrap();
            let ledger = dir.path().join("ledger.jsonl");
            let out = stdout_of(
                unseeded()
                    .arg("describe")
                    .args(*args)
                    .args([
                        "--neighbours",
                        unit,
                        "--invalid",
                        "impute=0",
                        "--format",
                        "json",
                        "--budget",
                        "5",
                    ])
                    .arg("--ledger")
                    .arg(&ledger)
                    .arg(fixture("people.csv")),
            );
            let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            let printed_shares: Vec<BigRational> = lines.iter().map(printed).collect();
            let want: Vec<BigRational> = shares.iter().map(|s| exact(s)).collect();
            assert_eq!(printed_shares, want, "{args:?} {unit}");
            let sum = printed_shares.iter().fold(BigRational::from_integer(0.into()), |a, s| a + s);
            let text = fs::read_to_string(&ledger).unwrap();
            let charge = text.lines().find(|l| l.contains("\"type\":\"charge\"")).unwrap();
            let record: Value = serde_json::from_str(charge).unwrap();
            assert_eq!(record["query"], "describe", "{record}");
            assert_eq!(sum, last_charge(&ledger), "{args:?} {unit}");
            assert_eq!(sum, exact(total));
            assert!(lines.iter().all(|l| l["total_epsilon_exact"] == *total));
        }
    }
}
