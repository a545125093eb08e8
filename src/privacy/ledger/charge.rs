//! Charging a release: the ledger flags, the reservation before the data are read and its
//! completion after the release.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use num_rational::BigRational;

use super::budget::{add_spend, admits, same_unit, Account, Budget, BudgetSummary, FIRST_DELTA, NEEDS_DELTA};
use super::file::{append, open_to_charge, Opened};
use super::read::Ledger;
use super::record::{run_id, Charge, Draft, DEFAULT_DATASET};
use crate::error::{bad_input, shown, Error};
use crate::numeric::exact::decimal;
use crate::privacy::delta::Delta;
use crate::privacy::delta_use::DeltaUse;
use crate::privacy::rng;

/// What the ledger flags ask for.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerSpec {
    pub path: PathBuf,
    pub budget: Option<Budget>,
    /// `--budget-delta`: δ_total recorded with the budget (None: keep the recorded one, 0 for a
    /// new budget).
    pub budget_delta: Option<Delta>,
    /// `--budget-delta-for`: how δ_total is used (None: keep the recorded use, split for a new δ).
    pub budget_delta_for: Option<DeltaUse>,
    pub change_budget: bool,
    /// `--dataset NAME`, else [`DEFAULT_DATASET`].
    pub dataset: String,
    /// `--ledger-key FILE`: the custodian's key of a keyed ledger.
    pub key: Option<PathBuf>,
    /// `--new-dataset-for-same-data`: a new budget may draw on data another dataset drew on.
    pub same_data: bool,
}

/// The ledger flags as given (`--ledger`, `--budget`, `--change-budget`, `--dataset`).
#[derive(Clone, Debug, Default)]
pub struct LedgerFlags {
    pub path: Option<PathBuf>,
    pub budget: Option<Budget>,
    pub budget_delta: Option<Delta>,
    pub budget_delta_for: Option<DeltaUse>,
    pub change_budget: bool,
    pub dataset: Option<String>,
    pub key: Option<PathBuf>,
    pub same_data: bool,
}

impl LedgerSpec {
    /// The ledger flags make sense only together: a budget, a dataset name or a change of
    /// budget without a ledger is refused, before any data is read.
    pub fn from_flags(args: &LedgerFlags) -> Result<Option<LedgerSpec>, Error> {
        let Some(path) = &args.path else {
            let stray = [
                (args.budget.is_some(), "--budget"),
                (args.budget_delta.is_some(), "--budget-delta"),
                (args.budget_delta_for.is_some(), "--budget-delta-for"),
                (args.change_budget, "--change-budget"),
                (args.dataset.is_some(), "--dataset"),
                (args.key.is_some(), "--ledger-key"),
                (args.same_data, "--new-dataset-for-same-data"),
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
        if args.budget_delta.is_some() && args.budget.is_none() {
            return Err(Error::usage(
                "--budget-delta is the delta of a budget: give it with --budget TOTAL (and --change-budget \
                 to change a recorded one)",
            ));
        }
        if args.same_data && args.budget.is_none() {
            return Err(Error::usage(
                "--new-dataset-for-same-data opens a new budget: give it with --budget TOTAL",
            ));
        }
        if args.budget_delta_for.is_some() && args.budget_delta.is_none() {
            return Err(Error::usage(
                "--budget-delta-for says how a budget's delta is used: give it with --budget TOTAL \
                 --budget-delta D",
            ));
        }
        let dataset = match &args.dataset {
            Some(name) => check_dataset_name(name)?,
            None => DEFAULT_DATASET.to_string(),
        };
        Ok(Some(LedgerSpec {
            path: path.clone(),
            budget: args.budget.clone(),
            budget_delta: args.budget_delta.clone(),
            budget_delta_for: args.budget_delta_for,
            change_budget: args.change_budget,
            dataset,
            key: args.key.clone(),
            same_data: args.same_data,
        }))
    }
}

/// A dataset name is a label a person types: printable, short, not empty.
pub fn check_dataset_name(name: &str) -> Result<String, Error> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::usage("--dataset must not be empty"));
    }
    if name.len() > 200 || name.chars().any(char::is_control) {
        return Err(Error::usage("--dataset takes a short printable name (at most 200 bytes)"));
    }
    Ok(name.to_string())
}

/// A charge on disk: the release it pays for may now read its data.
#[derive(Clone, Debug)]
pub struct Reservation {
    pub path: PathBuf,
    /// The key the ledger was charged with, which completing the release needs again.
    pub key: Option<PathBuf>,
    pub seq: u64,
    pub summary: BudgetSummary,
    /// Keyed ledgers: the nonce whose [`run_id`] the charge records, held by this run only.
    pub(super) nonce: Option<[u8; 32]>,
}

/// Charges a release before its data are read, or refuses it (exit 3 when the budget cannot
/// pay; nothing is written then). On `Ok` the charge is on disk (fsynced) and the lock released.
pub fn reserve(spec: &LedgerSpec, charge: &Charge) -> Result<Reservation> {
    reserve_for(spec, charge, &mut || Ok(None))
}

/// [`reserve`], where a new budget is refused when the data's fingerprint, which `data` gives
/// when it is known before the charge, is that of a release charged to another dataset
/// (`--new-dataset-for-same-data` allows it). `data` is called only then: on the run that
/// records a dataset's first budget, in a ledger that has completed releases.
pub fn reserve_for(
    spec: &LedgerSpec,
    charge: &Charge,
    data: &mut dyn FnMut() -> Result<Option<String>>,
) -> Result<Reservation> {
    let mut opened = open_to_charge(&spec.path, spec.key.as_deref())?;
    let reserved = charge_opened(spec, charge, &mut opened, data);
    if reserved.is_err() {
        opened.discard_if_new(&spec.path);
    }
    reserved
}

fn charge_opened(
    spec: &LedgerSpec,
    charge: &Charge,
    opened: &mut Opened,
    data: &mut dyn FnMut() -> Result<Option<String>>,
) -> Result<Reservation> {
    let Opened { file, ledger, key, .. } = opened;
    let dataset = &spec.dataset;
    let mut account = ledger.account(dataset);
    let mut records = Vec::new();
    let (total, delta, delta_for) = budget_to_charge(spec, ledger, &account, data, &mut records)?;
    // A budget this very command records needs no --change-budget to gain its delta.
    let first_budget = account.total.is_none();
    same_unit(account.unit.as_deref(), &charge.unit, dataset, &spec.path)
        .and_then(|()| admits(&account.history, &charge.spend, &total, delta.as_ref(), delta_for, dataset))
        .map_err(|why| match first_budget {
            true => why.replace(NEEDS_DELTA, FIRST_DELTA),
            false => why,
        })
        .map_err(|why| anyhow::Error::from(Error::Budget(why)))?;
    // Drawn only now that the charge is admitted: a refusal above needs no randomness.
    let nonce = key.as_ref().map(|_| rng::secret_bytes::<32>()).transpose()?;
    account.total = Some(total);
    account.delta = delta;
    account.delta_for = delta_for;
    add_spend(&mut account, &charge.spend);
    account.history.add(&charge.spend);
    records.push(Draft::Charge {
        dataset: dataset.clone(),
        charge: charge.clone(),
        spent: account.spent.clone(),
        spent_rho: account.spent_rho.clone(),
        spent_delta: account.spent_delta.clone(),
        run: nonce.as_ref().map(run_id),
    });
    let seqs = append(file, &spec.path, ledger, &records, key.as_ref())?;
    let seq = *seqs.last().context("internal error: a charge wrote no record")?;
    Ok(Reservation {
        path: spec.path.clone(),
        key: spec.key.clone(),
        seq,
        summary: BudgetSummary::new(dataset, &account),
        nonce,
    })
    // The lock is released when the caller drops `opened`.
}

/// The budget a charge is admitted against: the one recorded for the dataset (asked again or
/// not asked), or the one asked, recorded first (`records`) when the dataset has none or
/// `--change-budget` changes it. A dataset's first budget in a ledger of completed releases
/// must name data not charged to another dataset first (`same_data`).
fn budget_to_charge(
    spec: &LedgerSpec,
    ledger: &Ledger,
    account: &Account,
    data: &mut dyn FnMut() -> Result<Option<String>>,
    records: &mut Vec<Draft>,
) -> Result<(BigRational, Option<Delta>, DeltaUse)> {
    let dataset = &spec.dataset;
    let same_use = spec.budget_delta_for.is_none_or(|u| u == account.delta_for);
    match (&account.total, &spec.budget) {
        (None, None) => Err(no_budget(ledger, dataset, &spec.path)),
        (Some(total), None) => Ok((total.clone(), account.delta.clone(), account.delta_for)),
        (Some(total), Some(Budget(asked)))
            if total == asked
                && spec.budget_delta.as_ref().is_none_or(|d| Some(d) == account.delta.as_ref())
                && same_use =>
        {
            Ok((total.clone(), account.delta.clone(), account.delta_for))
        }
        (Some(total), Some(Budget(asked))) if !spec.change_budget => {
            let recorded = |t: &BigRational, d: Option<&Delta>, u: DeltaUse| match d {
                Some(d) => format!("{} with delta {d} (for {u})", decimal(t)),
                None => decimal(t),
            };
            let asked_use = spec.budget_delta_for.unwrap_or(account.delta_for);
            Err(bad_input(format!(
                "{}: dataset {dataset} has budget {} recorded, not {}; add --change-budget to change it",
                spec.path.display(),
                recorded(total, account.delta.as_ref(), account.delta_for),
                recorded(asked, spec.budget_delta.as_ref().or(account.delta.as_ref()), asked_use)
            )))
        }
        (_, Some(Budget(asked))) => {
            if account.total.is_none() && !spec.same_data {
                same_data(ledger, dataset, &spec.path, data)?;
            }
            let delta = spec.budget_delta.clone().or(account.delta.clone());
            // A recorded δ keeps its use unless one is given; a new δ is split.
            let recorded_use = account.delta.as_ref().map(|_| account.delta_for);
            let delta_for = spec.budget_delta_for.or(recorded_use).unwrap_or_default();
            records.push(Draft::Budget {
                dataset: dataset.clone(),
                total: asked.clone(),
                delta: delta.clone(),
                delta_for,
            });
            Ok((asked.clone(), delta, delta_for))
        }
    }
}

/// Records that the release charged by `reservation` is complete, read from data with this
/// fingerprint. Written before the release is printed.
pub fn complete(reservation: &Reservation, fingerprint: &str) -> Result<()> {
    let opened = open_to_charge(&reservation.path, reservation.key.as_deref())?;
    // Named by its sequence number and, in a keyed ledger, by the id of this run's nonce: a
    // ledger put in place of the one charged may hold another run's charge at that number.
    let ours = reservation.nonce.as_ref().map(run_id);
    if opened.ledger.open.get(&reservation.seq).is_none_or(|(_, run)| *run != ours) {
        opened.discard_if_new(&reservation.path);
        return Err(Error::internal(format!(
            "ledger {}: the charge of this release (record {}) is not in it; the file was changed or \
             replaced during the run, and nothing was released",
            reservation.path.display(),
            reservation.seq
        ))
        .into());
    }
    let Opened { file, mut ledger, key, .. } = opened;
    let draft = Draft::Released { charge: reservation.seq, fingerprint: fingerprint.to_string() };
    append(&file, &reservation.path, &mut ledger, &[draft], key.as_ref())?;
    Ok(())
}

/// The refusal of a release on a dataset without a budget, with the recorded name closest to
/// the one given when there is one (a typo, which `--budget` would turn into a second budget).
fn no_budget(ledger: &Ledger, dataset: &str, path: &Path) -> anyhow::Error {
    let lower = dataset.to_lowercase();
    let nearest = ledger
        .accounts
        .iter()
        .filter(|(_, account)| account.total.is_some())
        .map(|(name, _)| (strsim::jaro_winkler(&lower, &name.to_lowercase()), name))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name);
    match nearest {
        Some(name) => bad_input(format!(
            "{}: no budget is recorded for dataset {}; did you mean --dataset {}? (--budget TOTAL would \
             open a new budget of its own)",
            path.display(),
            shown(dataset, 40),
            shown(name, 40)
        )),
        None => bad_input(format!(
            "{}: no budget is recorded for dataset {dataset}; set one with --budget TOTAL",
            path.display()
        )),
    }
}

/// Refuses a first budget for `dataset` when the data it is charged for are those of a release
/// already charged to another dataset of the ledger: two budgets for one table protect its
/// people by their sum (docs/DESIGN.md §5.2).
fn same_data(
    ledger: &Ledger,
    dataset: &str,
    path: &Path,
    data: &mut dyn FnMut() -> Result<Option<String>>,
) -> Result<()> {
    if ledger.data.is_empty() {
        return Ok(());
    }
    let Some(fingerprint) = data()? else { return Ok(()) };
    let Some(other) = ledger.data.get(&fingerprint).filter(|other| *other != dataset) else { return Ok(()) };
    Err(Error::Budget(format!(
        "dataset {other} in ledger {} already draws on these data (the same fingerprint): a second \
         budget for them, dataset {}, would protect their people only by the sum of the two; charge \
         the release to --dataset {other}, or add --new-dataset-for-same-data if the data are meant to \
         have a budget of their own; nothing was released or charged",
        path.display(),
        shown(dataset, 40),
        other = shown(other, 40)
    ))
    .into())
}
