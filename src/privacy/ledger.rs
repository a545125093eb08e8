//! The privacy-budget ledger: sequential composition across invocations (docs/DESIGN.md §5).
//!
//! An append-only JSON-lines file. One `budget` record sets (or, with `--change-budget`,
//! changes) a dataset's total; one `release` record per release charges its exact ε. Under an
//! exclusive lock on the file: read and validate every record, sum the exact ε spent on the
//! dataset, refuse (exit 3, nothing written) if spent + ε > total, else append and fsync; the
//! release is printed only after the lock is released. A crash after the append loses budget,
//! never under-counts it. A corrupt ledger is an error naming the line, never a reset.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::SystemTime;

use anyhow::{Context, Result};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};
use serde::{Deserialize, Serialize};

use crate::error::{bad_input, Error};
use crate::numeric::exact::{decimal, parse_decimal, rational_to_f64_down, rational_to_f64_up};
use crate::privacy::epsilon::Epsilon;

/// `--budget`: a positive exact decimal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget(BigRational);

impl FromStr for Budget {
    type Err = String;
    fn from_str(s: &str) -> Result<Budget, String> {
        match parse_decimal(s) {
            Some(r) if r.is_positive() => Ok(Budget(r)),
            Some(_) => Err("the budget must be greater than 0".into()),
            None => Err(format!("'{s}' is not a decimal number (write a budget like 1 or 2.5)")),
        }
    }
}

/// The longest line a ledger may hold: a record is a few hundred bytes, and a line read without
/// a limit could take all memory (`--ledger /dev/zero`).
const MAX_LINE: usize = 64 << 10;

/// What the ledger flags ask for.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerSpec {
    pub path: PathBuf,
    pub budget: Option<Budget>,
    pub change_budget: bool,
    /// `--dataset NAME`; without it the dataset is the SHA-256 of the input bytes.
    pub dataset: Option<String>,
}

/// The ledger flags as given (`--ledger`, `--budget`, `--change-budget`, `--dataset`).
#[derive(Clone, Debug, Default)]
pub struct LedgerFlags {
    pub path: Option<PathBuf>,
    pub budget: Option<Budget>,
    pub change_budget: bool,
    pub dataset: Option<String>,
}

impl LedgerSpec {
    /// The ledger flags make sense only together: a budget, a dataset name or a change of
    /// budget without a ledger is refused, before any data is read.
    pub fn from_flags(args: &LedgerFlags) -> Result<Option<LedgerSpec>, Error> {
        let Some(path) = &args.path else {
            let stray = [
                (args.budget.is_some(), "--budget"),
                (args.change_budget, "--change-budget"),
                (args.dataset.is_some(), "--dataset"),
            ];
            return match stray.iter().find(|(given, _)| *given) {
                Some((_, flag)) => Err(Error::usage(format!(
                    "{flag} needs a ledger: add --ledger PATH (or set DPSTAT_LEDGER)"
                ))),
                None => Ok(None),
            };
        };
        if args.change_budget && args.budget.is_none() {
            return Err(Error::usage("--change-budget needs the new total: add --budget TOTAL"));
        }
        if args.dataset.as_deref().is_some_and(|d| d.trim().is_empty()) {
            return Err(Error::usage("--dataset must not be empty"));
        }
        Ok(Some(LedgerSpec {
            path: path.clone(),
            budget: args.budget.clone(),
            change_budget: args.change_budget,
            dataset: args.dataset.clone(),
        }))
    }
}

/// One line of the ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Record {
    /// Sets the dataset's total budget (the latest one counts).
    Budget { time: String, dataset: String, total: String, total_decimal: f64 },
    /// Charges one release.
    Release {
        time: String,
        dataset: String,
        query: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        column: Option<String>,
        neighbours: String,
        /// Exact ε as numerator/denominator.
        epsilon: String,
        /// ε rounded up, for reading.
        epsilon_decimal: f64,
    },
}

/// What a release would charge.
#[derive(Clone, Debug)]
pub struct Charge {
    pub query: String,
    pub column: Option<String>,
    pub neighbours: String,
    pub eps: Epsilon,
}

/// The state of one dataset after reading the whole ledger.
#[derive(Clone, Debug, Default)]
pub struct Account {
    pub total: Option<BigRational>,
    pub spent: BigRational,
    pub releases: Vec<Record>,
}

impl Account {
    pub fn remaining(&self) -> Option<BigRational> {
        self.total.as_ref().map(|t| t - &self.spent)
    }
}

/// Summary printed with a release and by `dpstat budget`.
#[derive(Clone, Debug, Serialize)]
pub struct BudgetSummary {
    pub dataset: String,
    pub total: Option<f64>,
    pub total_exact: Option<String>,
    pub spent: f64,
    pub spent_exact: String,
    pub remaining: Option<f64>,
    pub remaining_exact: Option<String>,
}

impl BudgetSummary {
    pub fn new(dataset: &str, account: &Account) -> BudgetSummary {
        BudgetSummary {
            dataset: dataset.to_string(),
            total: account.total.as_ref().map(rational_to_f64_down),
            total_exact: account.total.as_ref().map(exact_string),
            spent: rational_to_f64_up(&account.spent),
            spent_exact: exact_string(&account.spent),
            // Rounded down: what is left is never overstated.
            remaining: account.remaining().as_ref().map(rational_to_f64_down),
            remaining_exact: account.remaining().as_ref().map(exact_string),
        }
    }
}

fn exact_string(r: &BigRational) -> String {
    format!("{}/{}", r.numer(), r.denom())
}

/// Reads the exact `n/d` form of the records.
pub fn parse_exact(s: &str) -> Option<BigRational> {
    let (n, d) = s.split_once('/')?;
    let (n, d): (BigInt, BigInt) = (n.parse().ok()?, d.parse().ok()?);
    (!d.is_zero()).then(|| BigRational::new(n, d))
}

/// Charges a release to the ledger, or refuses it. On `Ok` the record is on disk (fsynced)
/// and the lock released; the caller prints the release only then.
pub fn charge(spec: &LedgerSpec, dataset: &str, charge: &Charge) -> Result<BudgetSummary> {
    let file = open_locked(&spec.path)?;
    let mut account = read_account(&file, &spec.path, dataset)?;
    let mut lines = Vec::new();
    let total = match (&account.total, &spec.budget) {
        (None, None) => {
            return Err(bad_input(format!(
                "{}: no budget is recorded for dataset {dataset}; set one with --budget TOTAL",
                spec.path.display()
            )))
        }
        (Some(total), None) => total.clone(),
        (Some(total), Some(Budget(asked))) if total == asked => total.clone(),
        (Some(total), Some(Budget(asked))) if !spec.change_budget => {
            return Err(bad_input(format!(
                "{}: dataset {dataset} has budget {} recorded, not {}; add --change-budget to change it",
                spec.path.display(),
                decimal(total),
                decimal(asked)
            )))
        }
        (_, Some(Budget(asked))) => {
            lines.push(Record::Budget {
                time: now(),
                dataset: dataset.to_string(),
                total: exact_string(asked),
                total_decimal: rational_to_f64_down(asked),
            });
            asked.clone()
        }
    };
    let asked = charge.eps.as_rational();
    if &account.spent + asked > total {
        let remaining = &total - &account.spent;
        return Err(Error::Budget(format!(
            "budget exhausted for dataset {dataset}: spent {} of {}, asked {}, remaining {}; \
             nothing was released or charged (ask for at most the remaining --eps, or raise the \
             total with --budget TOTAL --change-budget)",
            decimal(&account.spent),
            decimal(&total),
            charge.eps,
            decimal(&remaining.max(BigRational::zero()))
        ))
        .into());
    }
    lines.push(Record::Release {
        time: now(),
        dataset: dataset.to_string(),
        query: charge.query.clone(),
        column: charge.column.clone(),
        neighbours: charge.neighbours.clone(),
        epsilon: charge.eps.exact_string(),
        epsilon_decimal: charge.eps.to_f64_up(),
    });
    append(&file, &spec.path, &lines)?;
    account.total = Some(total);
    account.spent += asked;
    Ok(BudgetSummary::new(dataset, &account))
    // The lock is released when `file` is dropped here, before the caller prints.
}

/// Reads a dataset's account under a shared lock (for `dpstat budget`), opening the ledger
/// read-only: a ledger the reader may not write can still be read.
pub fn account(path: &Path, dataset: &str) -> Result<Account> {
    match std::fs::metadata(path) {
        Err(_) => return Err(bad_input(format!("{}: no such ledger", path.display()))),
        // Opening a FIFO to read would block until a writer comes: refuse it unopened.
        Ok(meta) if !meta.is_file() => return Err(not_regular(path)),
        Ok(_) => {}
    }
    let file =
        File::open(path).map_err(|e| bad_input(format!("cannot open ledger {}: {e}", path.display())))?;
    check_regular(&file, path)?;
    file.lock_shared().with_context(|| format!("locking ledger {}", path.display()))?;
    read_account(&file, path, dataset)
}

/// Opens the ledger to read and append, under an exclusive lock.
fn open_locked(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| bad_input(format!("cannot open ledger {}: {e}", path.display())))?;
    check_regular(&file, path)?;
    file.lock().with_context(|| format!("locking ledger {}", path.display()))?;
    Ok(file)
}

/// A ledger is a regular file: a FIFO would block the run forever, a device would never end.
/// Checked on the opened handle, so nothing can swap the file in between.
fn check_regular(file: &File, path: &Path) -> Result<()> {
    let meta =
        file.metadata().map_err(|e| bad_input(format!("cannot open ledger {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    Ok(())
}

fn not_regular(path: &Path) -> anyhow::Error {
    bad_input(format!("ledger {} is not a regular file; give --ledger the path of a file", path.display()))
}

/// Validates every line and sums what this dataset has spent, exactly.
fn read_account(file: &File, path: &Path, dataset: &str) -> Result<Account> {
    let mut account = Account::default();
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_line(&mut line)
            .map_err(|e| corrupt(path, number + 1, &format!("cannot be read: {e}")))?;
        if read == 0 {
            break;
        }
        number += 1;
        if read > MAX_LINE {
            return Err(corrupt(path, number, &format!("is longer than {MAX_LINE} bytes")));
        }
        if !line.ends_with('\n') {
            return Err(corrupt(path, number, "is truncated (no newline at its end)"));
        }
        let record: Record = serde_json::from_str(line.trim_end())
            .map_err(|e| corrupt(path, number, &format!("is not a valid record: {e}")))?;
        match &record {
            Record::Budget { dataset: d, total, .. } => {
                let total = parse_exact(total)
                    .filter(|t| t.is_positive())
                    .ok_or_else(|| corrupt(path, number, "has a budget that is not a positive n/d"))?;
                if d == dataset {
                    account.total = Some(total);
                }
            }
            Record::Release { dataset: d, epsilon, .. } => {
                let eps = parse_exact(epsilon)
                    .filter(|e| e.is_positive())
                    .ok_or_else(|| corrupt(path, number, "has an epsilon that is not a positive n/d"))?;
                if d == dataset {
                    account.spent += eps;
                    account.releases.push(record);
                }
            }
        }
    }
    Ok(account)
}

fn corrupt(path: &Path, line: usize, what: &str) -> anyhow::Error {
    bad_input(format!(
        "ledger {} is corrupt: line {line} {what}; fix or restore the file (it is never reset)",
        path.display()
    ))
}

fn append(mut file: &File, path: &Path, records: &[Record]) -> Result<()> {
    let mut bytes = Vec::new();
    for record in records {
        serde_json::to_writer(&mut bytes, record)?;
        bytes.push(b'\n');
    }
    // One write, then fsync: the record is durable before anything is printed.
    file.write_all(&bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing ledger {}", path.display()))?;
    Ok(())
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &tempfile::TempDir, budget: Option<&str>) -> LedgerSpec {
        LedgerSpec {
            path: dir.path().join("ledger.jsonl"),
            budget: budget.map(|b| b.parse().unwrap()),
            change_budget: false,
            dataset: None,
        }
    }

    fn release(eps: &str) -> Charge {
        Charge {
            query: "count".into(),
            column: None,
            neighbours: "add-remove".into(),
            eps: eps.parse().unwrap(),
        }
    }

    #[test]
    fn ten_tenths_spend_exactly_one() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(&dir, Some("1"));
        for _ in 0..10 {
            charge(&s, "d", &release("0.1")).unwrap();
        }
        let a = account(&s.path, "d").unwrap();
        assert_eq!(a.remaining(), Some(BigRational::zero()));
        let before = std::fs::read(&s.path).unwrap();
        let err = charge(&s, "d", &release("0.1")).unwrap_err();
        assert!(matches!(err.downcast_ref::<Error>(), Some(Error::Budget(_))));
        assert_eq!(std::fs::read(&s.path).unwrap(), before, "a refusal writes nothing");
    }

    #[test]
    fn datasets_are_separate_and_budget_must_be_set() {
        let dir = tempfile::tempdir().unwrap();
        charge(&spec(&dir, Some("0.5")), "a", &release("0.5")).unwrap();
        assert!(charge(&spec(&dir, None), "a", &release("0.1")).is_err());
        let err = charge(&spec(&dir, None), "b", &release("0.1")).unwrap_err();
        assert!(err.to_string().contains("--budget"), "{err}");
        charge(&spec(&dir, Some("1")), "b", &release("1")).unwrap();
    }

    #[test]
    fn a_different_budget_needs_change_budget() {
        let dir = tempfile::tempdir().unwrap();
        charge(&spec(&dir, Some("1")), "d", &release("1")).unwrap();
        let err = charge(&spec(&dir, Some("2")), "d", &release("0.5")).unwrap_err();
        assert!(err.to_string().contains("--change-budget"), "{err}");
        let mut raise = spec(&dir, Some("2"));
        raise.change_budget = true;
        charge(&raise, "d", &release("0.5")).unwrap();
        let a = account(&raise.path, "d").unwrap();
        assert_eq!(a.remaining(), Some(BigRational::new(1.into(), 2.into())));
    }

    #[test]
    fn corrupt_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(&dir, Some("1"));
        charge(&s, "d", &release("0.1")).unwrap();
        let good = std::fs::read_to_string(&s.path).unwrap();
        for (bad, needle) in [
            (format!("{good}{{\"type\":\"release\""), "line 3 is truncated"),
            (format!("{good}not json\n"), "line 3 is not a valid record"),
            (format!("{good}{{\"type\":\"gift\"}}\n"), "line 3 is not a valid record"),
            (good.replace("\"1/10\"", "\"-1/10\""), "line 2 has an epsilon"),
            (good.replace("\"1/1\"", "\"x\""), "line 1 has a budget"),
        ] {
            std::fs::write(&s.path, &bad).unwrap();
            let err = charge(&s, "d", &release("0.1")).unwrap_err();
            assert!(err.to_string().contains(needle), "{needle}: {err}");
            assert_eq!(std::fs::read_to_string(&s.path).unwrap(), bad, "never reset");
        }
    }
}
