//! The privacy-budget ledger: sequential composition across invocations (docs/DESIGN.md §5).
//!
//! **A ledger is a budget for a population, not for a file.** It holds one budget per dataset
//! name (`--dataset NAME`, else `default`), and every release charged to that name draws on it,
//! whatever bytes the data file has today: re-saving the file, converting its line endings or
//! appending next month's rows never opens a fresh budget. Each release's record also keeps a
//! fingerprint of the records it read ([`crate::data::fingerprint`]), for audit only.
//!
//! **Charged before the data are read.** A release appends its `charge` record (and fsyncs it)
//! after its flags and the header are checked and before the first data row is read, so
//! anything the run shows after that — the release, an error, its exit code — has been paid
//! for. When the release is complete a `released` record names the charge and the fingerprint.
//! A run that dies in between has spent its ε: budget is lost, never under-counted.
//!
//! **A chain, keyless or keyed.** The file is JSON lines. Line 1 is a header rewritten in place
//! (fixed width) after every append: the number of records and the chain's head. Every record
//! carries its sequence number, the link of the record before it (`prev`), and a charge carries
//! its dataset's running total (`spent`). So a record deleted or edited breaks the chain or a
//! running total, and a file cut at a line boundary holds fewer records than its header says:
//! each is refused with the line that is wrong, never rolled back. Who this stops depends on
//! the link (docs/DESIGN.md §5.3):
//! - keyless (format 2): the link is the SHA-256 of the line and the head that of the last
//!   line. Anyone can recompute them: this shows accidents, not an adversary, who can cut the
//!   last records and rewrite the header;
//! - keyed (format 3, `--ledger-key FILE`): the link is an HMAC-SHA256 of the line under the
//!   custodian's key ([`super::ledger_key`]) and the head an HMAC of the count and the last
//!   link, so no record can be forged, edited or cut without the key. Without the key a keyed
//!   ledger may be listed, marked as not verified, but not charged;
//! - keyed with the key's state file: a whole older copy put back is refused too, since the
//!   state file beside the key remembers the count and head of the last append.
//!
//! **Currencies.** A dataset's budget is (ε_total, δ_total), δ_total = 0 unless `--budget-delta`
//! recorded one. A charge states its spend in the currency of its release's guarantee: pure ε
//! (Laplace), ρ (Gaussian, zCDP) or (ε, δ) (keys found in the data); the running totals are kept
//! exactly per currency (`spent` is Σε, `spent_rho` Σρ, `spent_delta` Σδ). A charge is admitted
//! only if the dataset's whole history with it composes within the budget
//! ([`super::currency::History`], docs/DESIGN.md §9.7):
//! - pure only: Σε <= ε_total;
//! - with ρ: at the budget's fixed Rényi order α*, R(α*) = Σ min(ε, α*ε²/2) + α*Σρ is at most
//!   the B whose CKS 2020 Cor. 13 conversion at δ_total is ε_total ([`super::renyi`]); the
//!   spend shown is R(α*) converted, rounded up, re-derived from the charges on every read (no
//!   record states it, so ledgers written under the earlier zCDP rule read unchanged, and that
//!   rule admitted nothing this one refuses); refused while δ_total = 0;
//! - with (ε, δ): Σε <= ε_total and Σδ <= δ_total (basic composition);
//! - ρ together with (ε, δ) in one dataset: refused (no sound composition is implemented).
//!
//! The budget record also fixes how δ_total is used (`--budget-delta-for`,
//! [`super::delta_use`]): all for ρ (the Rényi rule at δ_total; (ε, δ) charges refused), all
//! for (ε, δ) (ρ refused), or half each (the default, and how a δ recorded without the field
//! reads): the rules above then run at δ_total/2, since a choice between the two made after
//! pure releases spends both halves.
//!
//! Ledgers written before these fields existed read unchanged: their charges are pure ε.
//!
//! **One privacy unit per dataset.** A charge records the unit its release protects
//! ([`crate::privacy::contribution::Unit::ledger_name`]): `row`, or `person:COL[,COL]` under
//! `--privacy-id`. The ε of a budget is a guarantee about one unit, and ε spent per row is not
//! ε per person (a person with K rows is only Kε-protected by it), so a dataset's budget is
//! spent in the unit of its first charge, and a charge in another unit is refused (exit 3)
//! before anything is written or read. The field is written only for a person (`"unit":
//! "person:patient"`), so row-level records are as they always were and a record without it
//! reads as `row`; like every field it is covered by the chain, and an older dpstat refuses a
//! record that has it instead of reading a person-level budget as a row-level one.
//!
//! Every change happens under an exclusive lock on the file (`flock`), readers take a shared
//! one; the file must be a regular file and a line may hold at most 64 KiB. With a key, a
//! change also holds the key's lock (`KEYFILE.lock`, taken first), which does not depend on
//! the inode the ledger's path names, and a keyed charge records the id of its run's nonce, by
//! which that run's completion finds it ([`key`], docs/DESIGN.md §5.3, §5.4).
//!
//! The module's files: `record` (the header, the records and the chain's links), `read`
//! (validating a whole ledger), `file` (opening, locking, the key's state, appending),
//! `budget` (budgets, accounts and the admission of a charge), [`key`] (the key and its
//! state file); this file holds the flags and the two steps of a release, [`reserve`] and
//! [`complete`].

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::SystemTime;

use anyhow::{Context, Result};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{bad_input, shown, Error};
use crate::numeric::exact::{decimal, parse_decimal, rational_to_f64_down, rational_to_f64_up};
use crate::numeric::format::hex;
use crate::privacy::currency::{History, Spend};
use crate::privacy::delta::Delta;
use crate::privacy::delta_use::DeltaUse;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::ledger_key::{self, LedgerKey, State};
use crate::privacy::renyi::{measure, Measure, Rule};
use crate::privacy::rng;
use crate::privacy::zcdp::Rho;

mod budget;
mod file;
pub mod key;
mod read;
mod record;
#[cfg(test)]
mod tests;

pub use budget::*;
pub use file::*;
pub use read::*;
pub use record::*;

/// The dataset a release draws on without `--dataset`.
pub const DEFAULT_DATASET: &str = "default";

/// The unit of a charge record without a `unit` field: every release before `--privacy-id`.
pub const ROW_UNIT: &str = "row";

/// The longest line a ledger may hold: a record is a few hundred bytes, and a line read without
/// a limit could take all memory (`--ledger /dev/zero`).
const MAX_LINE: usize = 64 << 10;

/// The format of a keyless ledger (line 1 says which).
const FORMAT: u32 = 2;

/// The format of a keyed ledger: links and head are HMACs under the custodian's key. A number
/// of its own, so that an earlier dpstat refuses it by its header instead of failing its chain.
const KEYED_FORMAT: u32 = 3;

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
    nonce: Option<[u8; 32]>,
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
    let same_use = spec.budget_delta_for.is_none_or(|u| u == account.delta_for);
    let (total, delta, delta_for) = match (&account.total, &spec.budget) {
        (None, None) => return Err(no_budget(ledger, dataset, &spec.path)),
        (Some(total), None) => (total.clone(), account.delta.clone(), account.delta_for),
        (Some(total), Some(Budget(asked)))
            if total == asked
                && spec.budget_delta.as_ref().is_none_or(|d| Some(d) == account.delta.as_ref())
                && same_use =>
        {
            (total.clone(), account.delta.clone(), account.delta_for)
        }
        (Some(total), Some(Budget(asked))) if !spec.change_budget => {
            let recorded = |t: &BigRational, d: Option<&Delta>, u: DeltaUse| match d {
                Some(d) => format!("{} with delta {d} (for {u})", decimal(t)),
                None => decimal(t),
            };
            let asked_use = spec.budget_delta_for.unwrap_or(account.delta_for);
            return Err(bad_input(format!(
                "{}: dataset {dataset} has budget {} recorded, not {}; add --change-budget to change it",
                spec.path.display(),
                recorded(total, account.delta.as_ref(), account.delta_for),
                recorded(asked, spec.budget_delta.as_ref().or(account.delta.as_ref()), asked_use)
            )));
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
            (asked.clone(), delta, delta_for)
        }
    };
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
