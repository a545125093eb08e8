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
//! one; the file must be a regular file and a line may hold at most 64 KiB.

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
use crate::privacy::zcdp::Rho;

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

/// Line 1: what the rest of the file must hold.
#[derive(Debug, Deserialize)]
struct Header {
    #[serde(rename = "type")]
    kind: String,
    format: u32,
    /// Format 3: the chain is keyed, by the key with this id.
    #[serde(default)]
    keyed: bool,
    #[serde(default)]
    key_id: Option<String>,
    records: u64,
    head: String,
}

impl Header {
    /// Always the same length, so it can be rewritten in place: JSON allows the spaces after
    /// the number.
    fn line(records: u64, head: &[u8; 32]) -> String {
        format!(
            "{{\"type\":\"ledger\",\"format\":{FORMAT},\"records\":{records:<20},\"head\":\"{}\"}}\n",
            hex(head)
        )
    }

    /// The header of a keyed ledger, as fixed in length as [`Header::line`].
    fn keyed_line(records: u64, head: &[u8; 32], key: &LedgerKey) -> String {
        format!(
            "{{\"type\":\"ledger\",\"format\":{KEYED_FORMAT},\"keyed\":true,\"key_id\":\"{}\",\"records\":{records:<20},\"head\":\"{}\"}}\n",
            key.id_hex(),
            hex(head)
        )
    }
}

/// What links the records: the SHA-256 of each line (keyless), an HMAC-SHA256 under the
/// custodian's key (keyed), or nothing that can be checked (a keyed ledger read without its key).
#[derive(Clone, Copy)]
enum Chain<'a> {
    Sha256,
    Keyed(&'a LedgerKey),
    Unverified,
}

/// The domains of the keyed chain's HMACs: its start, a record's link, the header's head. The
/// head is not a link, so the `prev` of record k + 1, which anyone can read, is not a head that
/// would make the file cut after record k verify.
const START: u8 = 0;
const LINK: u8 = 1;
const HEAD: u8 = 2;

impl Chain<'_> {
    /// What record 1's `prev` names.
    fn start(self) -> [u8; 32] {
        match self {
            Chain::Sha256 => genesis(),
            Chain::Keyed(key) => key.mac(START, &[b"dpstat ledger, format 3"]),
            Chain::Unverified => [0; 32],
        }
    }

    /// The link of a record's line: what the next record's `prev` names.
    fn link(self, line: &str) -> [u8; 32] {
        match self {
            Chain::Sha256 => Sha256::digest(line.as_bytes()).into(),
            Chain::Keyed(key) => key.mac(LINK, &[line.as_bytes()]),
            Chain::Unverified => [0; 32],
        }
    }

    /// The header's head after `records` records whose last link is `link`.
    fn head(self, records: u64, link: &[u8; 32]) -> [u8; 32] {
        match self {
            Chain::Sha256 => *link,
            Chain::Keyed(key) => key.mac(HEAD, &[&records.to_be_bytes(), link]),
            Chain::Unverified => [0; 32],
        }
    }
}

/// One record (line 2 onwards).
#[allow(clippy::large_enum_variant)] // one at a time, as each line is read
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Record {
    /// Sets a dataset's total budget (the latest one counts): ε_total and, if recorded, δ_total.
    Budget {
        seq: u64,
        time: String,
        dataset: String,
        total: String,
        total_decimal: f64,
        /// δ_total exactly (absent: 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta_decimal: Option<f64>,
        /// How δ_total is used (`DeltaUse::name`), written with every δ; a δ without it (written
        /// before the choice existed) reads as `split`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta_for: Option<String>,
        prev: String,
    },
    /// Charges one release, before its data are read: ε (pure), ρ (zCDP) or ε and δ.
    Charge {
        seq: u64,
        time: String,
        dataset: String,
        query: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        column: Option<String>,
        neighbours: String,
        /// The privacy unit, written only when it is not [`ROW_UNIT`] (absent: `row`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unit: Option<String>,
        /// Exact ε as numerator/denominator (pure and (ε, δ) charges).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epsilon: Option<String>,
        /// ε rounded up, for reading.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epsilon_decimal: Option<f64>,
        /// Exact ρ (zCDP charges).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rho: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rho_decimal: Option<f64>,
        /// Exact δ ((ε, δ) charges).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta_decimal: Option<f64>,
        /// The dataset's Σε, this charge included (exact).
        spent: String,
        /// The dataset's Σρ with this charge, once it is above 0 (exact).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spent_rho: Option<String>,
        /// The dataset's Σδ with this charge, once it is above 0 (exact).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spent_delta: Option<String>,
        prev: String,
    },
    /// The release charged by record `charge` was completed, from data with this fingerprint.
    Released { seq: u64, time: String, charge: u64, fingerprint: String, prev: String },
}

impl Record {
    fn seq(&self) -> u64 {
        match self {
            Record::Budget { seq, .. } | Record::Charge { seq, .. } | Record::Released { seq, .. } => *seq,
        }
    }

    fn prev(&self) -> &str {
        match self {
            Record::Budget { prev, .. } | Record::Charge { prev, .. } | Record::Released { prev, .. } => prev,
        }
    }
}

/// What a release would charge.
#[derive(Clone, Debug)]
pub struct Charge {
    pub query: String,
    pub column: Option<String>,
    pub neighbours: String,
    /// The privacy unit of the release: `row` or `person:COL[,COL]` (`Unit::ledger_name`).
    pub unit: String,
    pub spend: Spend,
}

/// One charge as `dpstat budget` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub seq: u64,
    pub time: String,
    pub query: String,
    pub column: Option<String>,
    pub neighbours: String,
    /// `row` or `person:COL[,COL]`.
    pub unit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon_decimal: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho_decimal: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_decimal: Option<f64>,
    /// The fingerprint of the data read, once the release was completed; None when the run
    /// stopped after its charge (the ε is spent all the same).
    pub fingerprint: Option<String>,
}

/// The state of one dataset after reading the whole ledger.
#[derive(Clone, Debug, Default)]
pub struct Account {
    pub total: Option<BigRational>,
    /// δ_total (None: 0).
    pub delta: Option<Delta>,
    /// How δ_total is shared between ρ and (ε, δ) charges (meaningful with a δ).
    pub delta_for: DeltaUse,
    /// Σε over the pure and (ε, δ) charges: the records' running `spent`.
    pub spent: BigRational,
    /// Σρ over the zCDP charges.
    pub spent_rho: BigRational,
    /// Σδ over the (ε, δ) charges.
    pub spent_delta: BigRational,
    /// Every charge by currency, for the composition rules.
    pub history: History,
    /// The privacy unit of every charge: that of the first one (None before it).
    pub unit: Option<String>,
    pub releases: Vec<Entry>,
}

impl Account {
    /// What the history has spent, as the ε of one (ε, δ) guarantee: Σε without ρ; with ρ, its
    /// measure under the budget's rule converted at δ_total, rounded up ([`Account::measure`]).
    /// None when a ρ history has no budget δ to convert at (a ledger never records one: such a
    /// charge is refused).
    pub fn spent_epsilon(&self) -> Option<BigRational> {
        if !self.history.has_zcdp() {
            return Some(self.history.epsilon_sum());
        }
        Some(self.measure()?.epsilon)
    }

    /// A history with ρ charges measured by its budget's rule (R(α*) at the budget's order;
    /// docs/DESIGN.md §9.7), re-derived from the charges whenever the ledger is read.
    pub fn measure(&self) -> Option<Measure> {
        measure(&self.history, self.total.as_ref()?, &self.zcdp_delta()?)
    }

    /// The δ of the budget's zCDP track (all, half or none of δ_total, `DeltaUse`).
    pub fn zcdp_delta(&self) -> Option<Delta> {
        self.delta_for.zcdp_delta(self.delta.as_ref()?)
    }

    /// ρ of the whole history (pure charges at ε²/2), when it has zCDP charges.
    pub fn spent_rho_total(&self) -> Option<BigRational> {
        self.history.has_zcdp().then(|| self.history.zcdp()).flatten()
    }

    /// ε_total minus what was spent (can be negative after a budget was lowered; 0 when a ρ
    /// history cannot be converted).
    pub fn remaining(&self) -> Option<BigRational> {
        let total = self.total.as_ref()?;
        Some(self.spent_epsilon().map_or_else(BigRational::zero, |spent| total - spent))
    }
}

/// A whole ledger, validated.
#[derive(Debug, Default)]
pub struct Ledger {
    pub accounts: BTreeMap<String, Account>,
    /// Records in the file and the link of the last one (what the next record's `prev` names;
    /// for a keyless ledger also the header's head).
    pub records: u64,
    pub head: [u8; 32],
    /// The id of the key of a keyed ledger.
    pub key_id: Option<String>,
    /// The chain was checked: false only for a keyed ledger read without its key.
    pub verified: bool,
    /// The ledger was compared with its key's state file (not older than the last append).
    pub state_checked: bool,
    /// The header's head as it should read (as it reads, when not verified).
    shown_head: String,
    /// The header's head after the record the key's state file counts.
    head_at_state: Option<[u8; 32]>,
    /// Bytes in the file.
    len: u64,
    /// Charges not yet completed, by sequence number: their dataset.
    open: HashMap<u64, String>,
}

impl Ledger {
    pub fn account(&self, dataset: &str) -> Account {
        self.accounts.get(dataset).cloned().unwrap_or_default()
    }

    /// The chain's head, as the header states it: worth keeping elsewhere, since without the
    /// key's state file it alone shows that the whole file was not replaced by an older copy.
    pub fn head_hex(&self) -> String {
        self.shown_head.clone()
    }
}

/// Summary printed with a release and by `dpstat budget`. `spent` is ε of the whole history as
/// one (ε, δ) guarantee (Σε for pure charges; with ρ charges their conversion at δ_total);
/// `spent_rho` and `spent_delta` appear when the history has such charges.
#[derive(Clone, Debug, Serialize)]
pub struct BudgetSummary {
    pub dataset: String,
    pub total: Option<f64>,
    pub total_exact: Option<String>,
    /// δ_total, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_delta: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_delta_exact: Option<String>,
    /// How δ_total is used, with it: `zcdp`, `thresholds` or `split` (half each).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_delta_for: Option<&'static str>,
    pub spent: f64,
    pub spent_exact: String,
    /// ρ of the whole history (Σρ + Σε²/2 over pure charges), when it has zCDP charges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spent_rho: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spent_rho_exact: Option<String>,
    /// With ρ charges: the budget's Rényi order α*, the history's R(α*) (rounded up) and the
    /// most the budget allows at α*, B (rounded down); absent where the zCDP rule applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renyi_order: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renyi_order_exact: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spent_renyi: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spent_renyi_exact: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_renyi: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_renyi_exact: Option<String>,
    /// The δ the spend is stated at: the zCDP track's δ with ρ charges (δ_total or half of it),
    /// Σδ with (ε, δ) ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spent_delta: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spent_delta_exact: Option<String>,
    pub remaining: Option<f64>,
    pub remaining_exact: Option<String>,
}

impl BudgetSummary {
    pub fn new(dataset: &str, account: &Account) -> BudgetSummary {
        let spent = account.spent_epsilon().unwrap_or_else(|| account.total.clone().unwrap_or_default());
        let rho = account.spent_rho_total();
        let delta = match (&rho, account.history.has_approx()) {
            (Some(_), _) => account.zcdp_delta().map(|d| d.as_rational().clone()),
            (None, true) => Some(account.history.delta_sum().clone()),
            (None, false) => None,
        };
        let (order, limit, value) = match account.measure() {
            Some(Measure { rule: Rule::Renyi { order, limit }, value, .. }) => {
                (Some(order.alpha), Some(limit), Some(value))
            }
            _ => (None, None, None),
        };
        BudgetSummary {
            dataset: dataset.to_string(),
            total: account.total.as_ref().map(rational_to_f64_down),
            total_exact: account.total.as_ref().map(exact_string),
            total_delta: account.delta.as_ref().map(Delta::to_f64_up),
            total_delta_exact: account.delta.as_ref().map(Delta::exact_string),
            total_delta_for: account.delta.as_ref().map(|_| account.delta_for.name()),
            spent: rational_to_f64_up(&spent),
            spent_exact: exact_string(&spent),
            spent_rho: rho.as_ref().map(rational_to_f64_up),
            spent_rho_exact: rho.as_ref().map(exact_string),
            renyi_order: order.as_ref().map(rational_to_f64_up),
            renyi_order_exact: order.as_ref().map(exact_string),
            spent_renyi: value.as_ref().map(rational_to_f64_up),
            spent_renyi_exact: value.as_ref().map(exact_string),
            total_renyi: limit.as_ref().map(rational_to_f64_down),
            total_renyi_exact: limit.as_ref().map(exact_string),
            spent_delta: delta.as_ref().map(rational_to_f64_up),
            spent_delta_exact: delta.as_ref().map(exact_string),
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

/// A charge on disk: the release it pays for may now read its data.
#[derive(Clone, Debug)]
pub struct Reservation {
    pub path: PathBuf,
    /// The key the ledger was charged with, which completing the release needs again.
    pub key: Option<PathBuf>,
    pub seq: u64,
    pub summary: BudgetSummary,
}

/// Charges a release before its data are read, or refuses it (exit 3 when the budget cannot
/// pay; nothing is written then). On `Ok` the charge is on disk (fsynced) and the lock released.
pub fn reserve(spec: &LedgerSpec, charge: &Charge) -> Result<Reservation> {
    let mut opened = open_to_charge(&spec.path, spec.key.as_deref())?;
    let reserved = charge_opened(spec, charge, &mut opened);
    if reserved.is_err() {
        opened.discard_if_new(&spec.path);
    }
    reserved
}

fn charge_opened(spec: &LedgerSpec, charge: &Charge, opened: &mut Opened) -> Result<Reservation> {
    let Opened { file, ledger, key, .. } = opened;
    let dataset = &spec.dataset;
    let mut account = ledger.account(dataset);
    let mut records = Vec::new();
    let same_use = spec.budget_delta_for.is_none_or(|u| u == account.delta_for);
    let (total, delta, delta_for) = match (&account.total, &spec.budget) {
        (None, None) => {
            return Err(bad_input(format!(
                "{}: no budget is recorded for dataset {dataset}; set one with --budget TOTAL",
                spec.path.display()
            )))
        }
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
    });
    let seqs = append(file, &spec.path, ledger, &records, key.as_ref())?;
    let seq = *seqs.last().context("internal error: a charge wrote no record")?;
    Ok(Reservation {
        path: spec.path.clone(),
        key: spec.key.clone(),
        seq,
        summary: BudgetSummary::new(dataset, &account),
    })
    // The lock is released when the caller drops `opened`.
}

/// Whether a charge in unit `asked` may draw on a dataset whose charges are in unit `spent_in`
/// (None: no charge yet); the refusal, with what to do, when it may not.
pub fn same_unit(spent_in: Option<&str>, asked: &str, dataset: &str, path: &Path) -> Result<(), String> {
    let Some(spent_in) = spent_in.filter(|u| *u != asked) else { return Ok(()) };
    let ids = |unit: &str| unit.strip_prefix("person:").map(|ids| shown(ids, 80));
    let fix = match ids(spent_in) {
        Some(ids) if asked == ROW_UNIT => format!("add --privacy-id {ids}"),
        Some(ids) => format!("give --privacy-id {ids} instead"),
        None => "drop --privacy-id".to_string(),
    };
    Err(format!(
        "dataset {dataset} in ledger {} is spent per {}; this release is per {}: {fix}, or charge it to \
         another --dataset; nothing was read, released or charged",
        path.display(),
        shown(spent_in, 80),
        shown(asked, 80)
    ))
}

/// What a budget without δ needs for a zCDP release: on a recorded budget,
const NEEDS_DELTA: &str = "record a delta with --budget TOTAL --budget-delta D --change-budget";
/// and on the budget the same command records (no --change-budget: nothing is changed).
const FIRST_DELTA: &str = "add --budget-delta D (e.g. 1e-6, well below 1/rows) beside --budget";

/// Whether a dataset's history `before` plus `spend` fits its budget (ε_total, δ_total), by the
/// composition rules of the module comment, with δ_total shared between ρ and (ε, δ) charges
/// as `delta_for` says ([`DeltaUse`]); the refusal for `dataset` when it does not.
pub fn admits(
    before: &History,
    spend: &Spend,
    total: &BigRational,
    delta: Option<&Delta>,
    delta_for: DeltaUse,
    dataset: &str,
) -> Result<(), String> {
    let mut history = before.clone();
    history.add(spend);
    let nothing = "nothing was read, released or charged";
    if history.has_zcdp() && history.has_approx() {
        return Err(format!(
            "dataset {dataset} cannot pay {spend}: zCDP releases (--noise gaussian) and releases of keys \
             found in the data (--discover) cannot share a budget, since dpstat cannot yet compose them \
             soundly; charge them to separate datasets (--dataset NAME); {nothing}"
        ));
    }
    if let Some(why) = delta.and_then(|_| delta_for.refusal(&history)) {
        return Err(format!("dataset {dataset} cannot pay {spend}: {why}; {nothing}"));
    }
    if history.has_zcdp() {
        let Some(delta) = delta.and_then(|d| delta_for.zcdp_delta(d)) else {
            return Err(format!(
                "dataset {dataset} cannot pay {spend}: its budget has delta 0 (pure epsilon-DP), which a \
                 zCDP release (--noise gaussian) cannot fit; {NEEDS_DELTA}; {nothing}"
            ));
        };
        let delta = &delta;
        let Some(m) = measure(&history, total, delta) else { unreachable!("ρ without (ε, δ)") };
        if m.fits {
            return Ok(());
        }
        let raise = "(lower --rho or --eps, or raise the total with --budget TOTAL --change-budget)";
        return Err(match &m.rule {
            Rule::Renyi { order, limit } => format!(
                "budget exhausted for dataset {dataset}: with {spend} the history's Renyi divergence at \
                 order {} is {}, above the {} that the budget ({}, {delta} for zCDP) allows there; \
                 {nothing} {raise}",
                decimal(&order.alpha),
                decimal(&m.value),
                rational_to_f64_down(limit),
                decimal(total)
            ),
            Rule::Zcdp => format!(
                "budget exhausted for dataset {dataset}: with {spend} the history is rho {}-zCDP, which \
                 is ({}, {delta})-DP, above the total epsilon {}; {nothing} {raise}",
                decimal(&m.value),
                rational_to_f64_up(&m.epsilon),
                decimal(total)
            ),
        });
    }
    let (spent, eps) = (before.epsilon_sum(), history.epsilon_sum());
    if &eps > total {
        let asked = match spend {
            Spend::Pure(e) | Spend::Approx { eps: e, .. } => e.to_string(),
            Spend::Zcdp(_) => unreachable!("handled above"),
        };
        return Err(format!(
            "budget exhausted for dataset {dataset}: spent {} of {}, asked {asked}, remaining {}; {nothing} \
             (ask for at most the remaining --eps, or raise the total with --budget TOTAL --change-budget)",
            decimal(&spent),
            decimal(total),
            decimal(&(total - &spent).max(BigRational::zero()))
        ));
    }
    let allowed = delta.map_or_else(BigRational::zero, |d| delta_for.thresholds_delta(d));
    if history.delta_sum() > &allowed {
        let share = match (delta, delta_for) {
            (Some(d), DeltaUse::Split) => format!(" (half of its delta {d}, --budget-delta-for split)"),
            _ => String::new(),
        };
        return Err(format!(
            "budget exhausted for dataset {dataset}: with {spend} the deltas add up to {}, above the \
             budget's delta {}{share}; {nothing} (record a larger one with --budget TOTAL --budget-delta D \
             --change-budget)",
            decimal(history.delta_sum()),
            decimal(&allowed)
        ));
    }
    Ok(())
}

/// Adds a spend to an account's running totals.
fn add_spend(account: &mut Account, spend: &Spend) {
    match spend {
        Spend::Pure(eps) => account.spent += eps.as_rational(),
        Spend::Zcdp(rho) => account.spent_rho += rho.as_rational(),
        Spend::Approx { eps, delta } => {
            account.spent += eps.as_rational();
            account.spent_delta += delta.as_rational();
        }
    }
}

/// Records that the release charged by `reservation` is complete, read from data with this
/// fingerprint. Written before the release is printed.
pub fn complete(reservation: &Reservation, fingerprint: &str) -> Result<()> {
    let Opened { file, mut ledger, key, created } =
        open_to_charge(&reservation.path, reservation.key.as_deref())?;
    if !ledger.open.contains_key(&reservation.seq) {
        if created {
            Opened { file, ledger, key, created }.discard_if_new(&reservation.path);
        }
        return Err(Error::internal(format!(
            "ledger {}: the charge of this release (record {}) is missing; the file was changed during the run",
            reservation.path.display(),
            reservation.seq
        ))
        .into());
    }
    let draft = Draft::Released { charge: reservation.seq, fingerprint: fingerprint.to_string() };
    append(&file, &reservation.path, &mut ledger, &[draft], key.as_ref())?;
    Ok(())
}

/// Opens a ledger to append to it, locked, read and validated: with the key a keyed ledger
/// needs (a keyless one refuses a key: its chain cannot show a forgery), and not older than
/// the key's state file. Everything refused here is refused before anything is written.
fn open_to_charge(path: &Path, key: Option<&Path>) -> Result<Opened> {
    let key = key.map(ledger_key::load).transpose()?;
    let (file, created) = open_locked(path)?;
    let checked = check_opened(&file, path, key.as_ref());
    match checked {
        Ok(ledger) => Ok(Opened { file, ledger, key, created }),
        Err(e) => {
            if created {
                remove_if_empty(&file, path);
            }
            Err(e)
        }
    }
}

/// A ledger opened to charge, under its exclusive lock (released when this is dropped).
struct Opened {
    file: File,
    ledger: Ledger,
    key: Option<LedgerKey>,
    /// Whether this run created the file: a refused first charge then removes it again.
    created: bool,
}

impl Opened {
    /// After a refusal: a ledger file this run created and left empty is removed, so a refused
    /// first command leaves no 0-byte ledger behind.
    fn discard_if_new(self, path: &Path) {
        if self.created {
            remove_if_empty(&self.file, path);
        }
    }
}

/// Removes `path` if it is still the (locked) `file` and empty. Called under the exclusive
/// lock; a run waiting for that lock on the same inode sees the path gone or replaced when it
/// gets the lock, and opens it again ([`open_locked`]), so no charge lands in a removed file.
fn remove_if_empty(file: &File, path: &Path) {
    if cfg!(unix) && file.metadata().is_ok_and(|m| m.len() == 0) && same_file(file, path) {
        // Best effort: a leftover empty file is only untidy, and reads as a new ledger.
        let _ = std::fs::remove_file(path);
    }
}

/// Whether `path` names the opened `file` now (same device and inode).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Without inodes to compare, a file this run created is never removed (see [`remove_if_empty`]).
#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.is_file()
}

fn check_opened(file: &File, path: &Path, key: Option<&LedgerKey>) -> Result<Ledger> {
    // Read under the ledger's lock, which every writer of the state file holds.
    let state = key.map(ledger_key::read_state).transpose()?.flatten();
    let ledger = read_ledger(file, path, false, key, state.as_ref().map(|s| s.records))?;
    if let (Some(id), false) = (&ledger.key_id, ledger.verified) {
        return Err(bad_input(format!(
            "ledger {} is keyed (key id {}): a charge needs its key: give --ledger-key FILE (or set \
             DPSTAT_LEDGER_KEY_FILE); nothing was read or charged",
            path.display(),
            &id[..16]
        )));
    }
    if let Some(key) = key {
        check_state(path, &ledger, key, state.as_ref(), true)?;
    }
    Ok(ledger)
}

/// Compares the ledger with what the key's state file remembers of the last append: fewer
/// records, or another head at that count, is an older copy put back or another ledger. A
/// missing state file is refused for a charge (`strict`) once the ledger has records.
fn check_state(
    path: &Path,
    ledger: &Ledger,
    key: &LedgerKey,
    state: Option<&State>,
    strict: bool,
) -> Result<()> {
    let state_file = key.state_path();
    let Some(state) = state else {
        if strict && ledger.records > 0 {
            return Err(bad_input(format!(
                "the key's state file {} is missing, so an older copy of ledger {} put back could not be \
                 told; restore it from a copy (or, only if you trust the ledger as it is, write into it \
                 {{\"records\":N,\"head\":\"…\"}} as dpstat budget --format json --ledger-key {} prints them); nothing was \
                 read or charged",
                state_file.display(),
                path.display(),
                key.path().display()
            )));
        }
        return Ok(());
    };
    if ledger.records < state.records {
        return Err(bad_input(format!(
            "ledger {} holds {} records, fewer than the {} that the key's state file {} counts: an older \
             copy was put back or records were removed; a spend is never rolled back: restore the ledger \
             as it was last written",
            path.display(),
            ledger.records,
            state.records,
            state_file.display()
        )));
    }
    if state.records > 0 && ledger.head_at_state.map(|h| hex(&h)) != state.head {
        return Err(bad_input(format!(
            "ledger {} does not hold the record {} that the key's state file {} names (its head differs): \
             it is another ledger or a replaced one; one key belongs to one ledger",
            path.display(),
            state.records,
            state_file.display()
        )));
    }
    Ok(())
}

/// Reads and validates a whole ledger under a shared lock (for `dpstat budget`), opening it
/// read-only: a ledger the reader may not write can still be read. A keyed ledger read without
/// its key is listed with `verified` false.
pub fn read(path: &Path) -> Result<Ledger> {
    read_keyed(path, None)
}

/// [`read`], with the key of a keyed ledger: its chain is verified, and it is compared with the
/// key's state file when there is one (`state_checked`).
pub fn read_keyed(path: &Path, key: Option<&Path>) -> Result<Ledger> {
    let key = key.map(ledger_key::load).transpose()?;
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
    let state = key.as_ref().map(ledger_key::read_state).transpose()?.flatten();
    let mut ledger = read_ledger(&file, path, true, key.as_ref(), state.as_ref().map(|s| s.records))?;
    if let Some(key) = &key {
        check_state(path, &ledger, key, state.as_ref(), false)?;
        ledger.state_checked = state.is_some();
    }
    Ok(ledger)
}

/// Opens the ledger to read and write, under an exclusive lock. Not in append mode: the header
/// is rewritten at offset 0, which append mode would turn into an append.
/// Also says whether this call created the file.
fn open_locked(path: &Path) -> Result<(File, bool)> {
    let cannot = |e: std::io::Error| bad_input(format!("cannot open ledger {}: {e}", path.display()));
    loop {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(not_regular(path));
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        let (file, created) = match options.clone().create_new(true).open(path) {
            Ok(file) => (file, true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => match options.open(path) {
                Ok(file) => (file, false),
                // Removed in between (a refused first charge): try again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(cannot(e)),
            },
            Err(e) => return Err(cannot(e)),
        };
        check_regular(&file, path)?;
        file.lock().with_context(|| format!("locking ledger {}", path.display()))?;
        // While this run waited for the lock, the run holding it may have removed the empty
        // file it created (a refused first charge): a charge written to that removed file
        // would be lost, so the path is opened again until it names the locked file.
        if same_file(&file, path) {
            return Ok((file, created));
        }
    }
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

/// The chain's start: what record 1's `prev` names.
fn genesis() -> [u8; 32] {
    Sha256::digest(b"dpstat ledger, format 2").into()
}

/// Validates every line: the header, the chain (with `key`, if the ledger is keyed), the
/// sequence numbers, the running totals. With `keep`, every charge is kept for listing; with
/// `state_at`, the head after that many records is kept for the key's state file.
fn read_ledger(
    file: &File,
    path: &Path,
    keep: bool,
    key: Option<&LedgerKey>,
    state_at: Option<u64>,
) -> Result<Ledger> {
    let mut ledger = Ledger { verified: true, ..Ledger::default() };
    let mut chain = Chain::Sha256;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    let mut number = 0usize;
    let mut header: Option<Header> = None;
    // The hash of the record the header names, once passed.
    let mut named: Option<[u8; 32]> = None;
    let mut listed: HashMap<u64, (String, usize)> = HashMap::new();
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
        ledger.len += read as u64;
        if read > MAX_LINE {
            return Err(corrupt(path, number, &format!("is longer than {MAX_LINE} bytes")));
        }
        if !line.ends_with('\n') {
            return Err(corrupt(
                path,
                number,
                "is truncated (no newline at its end; a run stopped while writing it: that \
                 release was never printed, so the line can be deleted)",
            ));
        }
        let text = line.trim_end_matches('\n');
        if number == 1 {
            let parsed = parse_header(text, path)?;
            chain = chain_of(&parsed, key, path, &mut ledger)?;
            ledger.head = chain.start();
            if parsed.records == 0 {
                named = Some(chain.head(0, &ledger.head));
            }
            if state_at == Some(0) {
                ledger.head_at_state = Some(chain.head(0, &ledger.head));
            }
            header = Some(parsed);
            continue;
        }
        let record: Record = serde_json::from_str(text)
            .map_err(|e| corrupt(path, number, &format!("is not a valid record: {e}")))?;
        let seq = ledger.records + 1;
        if record.seq() != seq {
            return Err(corrupt(
                path,
                number,
                &format!(
                    "is record {} where record {seq} belongs: a record was removed or moved",
                    record.seq()
                ),
            ));
        }
        if !matches!(chain, Chain::Unverified) && record.prev() != hex(&ledger.head) {
            return Err(corrupt(
                path,
                number,
                "does not follow from the record before it (its prev hash differs): a record was changed or removed",
            ));
        }
        apply(&mut ledger, &record, path, number, keep, &mut listed)?;
        ledger.records = seq;
        ledger.head = chain.link(text);
        if header.as_ref().is_some_and(|h| h.records == seq) {
            named = Some(chain.head(seq, &ledger.head));
        }
        if state_at == Some(seq) {
            ledger.head_at_state = Some(chain.head(seq, &ledger.head));
        }
    }
    let Some(header) = header else {
        // An empty file: a new ledger, keyed if a key was given.
        let chain = key.map_or(Chain::Sha256, Chain::Keyed);
        ledger.key_id = key.map(LedgerKey::id_hex);
        ledger.head = chain.start();
        ledger.shown_head = hex(&chain.head(0, &ledger.head));
        if state_at == Some(0) {
            ledger.head_at_state = Some(chain.head(0, &ledger.head));
        }
        return Ok(ledger);
    };
    if ledger.records < header.records {
        return Err(bad_input(format!(
            "ledger {} is cut short: its header counts {} records but the file holds {}; records were \
             removed (a spend is never rolled back): restore the file from a copy",
            path.display(),
            header.records,
            ledger.records
        )));
    }
    if ledger.verified && named.map(|h| hex(&h)) != Some(header.head.clone()) {
        return Err(corrupt(
            path,
            1,
            &format!(
                "names a last record (record {}) that the file does not hold: records were changed",
                header.records
            ),
        ));
    }
    // A header counting fewer records than the file holds (a run stopped between its append
    // and the header's update) is read as it is: the records are there, the next write mends it.
    ledger.shown_head =
        if ledger.verified { hex(&chain.head(ledger.records, &ledger.head)) } else { header.head.clone() };
    Ok(ledger)
}

/// The chain a header announces, checked against the key given: a keyed ledger needs its own
/// key to be verified, and a keyless one is refused with a key, since a key that silently
/// accepted a keyless ledger would accept one forged in place of a keyed ledger.
fn chain_of<'k>(
    header: &Header,
    key: Option<&'k LedgerKey>,
    path: &Path,
    ledger: &mut Ledger,
) -> Result<Chain<'k>> {
    let Some(id) = &header.key_id else {
        return match key {
            None => Ok(Chain::Sha256),
            Some(key) => Err(bad_input(format!(
                "ledger {} is not keyed (format 2), so --ledger-key {} cannot protect it: its SHA-256 chain \
                 shows accidents, not forgeries; keep it for audit and start a new ledger with the key, \
                 its budget lowered by what this one records as spent",
                path.display(),
                key.path().display()
            ))),
        };
    };
    ledger.key_id = Some(id.clone());
    match key {
        None => {
            ledger.verified = false;
            Ok(Chain::Unverified)
        }
        Some(key) if key.id_hex() == *id => Ok(Chain::Keyed(key)),
        Some(key) => Err(bad_input(format!(
            "ledger {} is keyed with key id {}, not with the key in {} (id {}): give --ledger-key the \
             ledger's own key",
            path.display(),
            &id[..16],
            key.path().display(),
            &key.id_hex()[..16]
        ))),
    }
}

fn parse_header(text: &str, path: &Path) -> Result<Header> {
    let hex64 = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    match serde_json::from_str::<Header>(text) {
        Ok(h)
            if h.kind == "ledger"
                && h.format == FORMAT
                && !h.keyed
                && h.key_id.is_none()
                && hex64(&h.head) =>
        {
            Ok(h)
        }
        Ok(h)
            if h.kind == "ledger"
                && h.format == KEYED_FORMAT
                && h.keyed
                && h.key_id.as_deref().is_some_and(hex64)
                && hex64(&h.head) =>
        {
            Ok(h)
        }
        Ok(h) if h.kind == "ledger" && (h.format == FORMAT || h.format == KEYED_FORMAT) => {
            Err(corrupt(path, 1, "is a ledger header whose fields do not go together"))
        }
        Ok(h) if h.kind == "ledger" => Err(corrupt(
            path,
            1,
            &format!("is a header of ledger format {}, which this dpstat does not read", h.format),
        )),
        _ => Err(old_format(text, path)),
    }
}

/// Ledgers written before format 2 kept one budget per SHA-256 of the file's bytes, which a
/// re-saved file could reset: their spend cannot be carried over to one budget soundly without
/// the custodian saying which datasets are one population, so they are refused.
fn old_format(first: &str, path: &Path) -> anyhow::Error {
    #[derive(Deserialize)]
    struct Old {
        #[serde(rename = "type")]
        kind: String,
        dataset: String,
    }
    match serde_json::from_str::<Old>(first) {
        Ok(old) if old.kind == "budget" || old.kind == "release" => bad_input(format!(
            "ledger {} was written by an earlier dpstat (format 1, one budget per file content, \
             starting with dataset {}), whose budgets a re-saved file could reset; it cannot be \
             charged any more. Keep it for audit and start a new ledger file with --budget TOTAL, \
             lowered by what the old one records as spent on the same people",
            path.display(),
            crate::error::shown(&old.dataset, 24)
        )),
        _ => corrupt(path, 1, "is not a ledger header"),
    }
}

/// Checks one record against the state before it and applies it.
fn apply(
    ledger: &mut Ledger,
    record: &Record,
    path: &Path,
    number: usize,
    keep: bool,
    listed: &mut HashMap<u64, (String, usize)>,
) -> Result<()> {
    match record {
        Record::Budget { dataset, total, delta, delta_for, .. } => {
            let total = parse_exact(total)
                .filter(|t| t.is_positive())
                .ok_or_else(|| corrupt(path, number, "has a budget that is not a positive n/d"))?;
            let delta = match delta {
                None => None,
                Some(d) => {
                    Some(parse_exact(d).and_then(|d| Delta::from_rational(d).ok()).ok_or_else(|| {
                        corrupt(path, number, "has a budget delta that is not an n/d in (0, 1)")
                    })?)
                }
            };
            let delta_for = match (&delta, delta_for.as_deref().map(str::parse::<DeltaUse>)) {
                (None, None) => DeltaUse::default(),
                (Some(_), None) => DeltaUse::Split,
                (Some(_), Some(Ok(usage))) => usage,
                _ => {
                    return Err(corrupt(
                        path,
                        number,
                        "has a delta_for that is not zcdp, thresholds or split beside a delta",
                    ))
                }
            };
            let account = ledger.accounts.entry(dataset.clone()).or_default();
            account.total = Some(total);
            account.delta = delta;
            account.delta_for = delta_for;
        }
        Record::Charge {
            seq,
            time,
            dataset,
            query,
            column,
            neighbours,
            unit,
            epsilon,
            epsilon_decimal,
            rho,
            rho_decimal,
            delta,
            delta_decimal,
            spent,
            spent_rho,
            spent_delta,
            ..
        } => {
            let spend = charged(epsilon.as_deref(), rho.as_deref(), delta.as_deref())
                .ok_or_else(|| corrupt(
                    path,
                    number,
                    "has an epsilon, rho or delta that is not a valid n/d, or not one of: epsilon; rho; epsilon and delta",
                ))?;
            let account = ledger.accounts.entry(dataset.clone()).or_default();
            if account.total.is_none() {
                return Err(corrupt(path, number, "charges a dataset with no budget recorded before it"));
            }
            let unit = unit.as_deref().unwrap_or(ROW_UNIT);
            if unit != ROW_UNIT && unit.strip_prefix("person:").is_none_or(str::is_empty) {
                return Err(corrupt(path, number, "has a unit that is neither row nor person:COLUMN"));
            }
            // dpstat never writes a charge in another unit than its dataset's: one that is
            // there was written by hand.
            if account.unit.as_deref().is_some_and(|first| first != unit) {
                return Err(corrupt(
                    path,
                    number,
                    "charges its dataset in another privacy unit than the charges before it",
                ));
            }
            account.unit.get_or_insert_with(|| unit.to_string());
            add_spend(account, &spend);
            account.history.add(&spend);
            // A running total that is 0 so far is left out of the record.
            let follows = |written: Option<&String>, running: &BigRational| match written {
                Some(w) => parse_exact(w).as_ref() == Some(running),
                None => running.is_zero(),
            };
            if !follows(Some(spent), &account.spent)
                || !follows(spent_rho.as_ref(), &account.spent_rho)
                || !follows(spent_delta.as_ref(), &account.spent_delta)
            {
                return Err(corrupt(
                    path,
                    number,
                    "has a running total that does not follow from the records before it: a record was changed",
                ));
            }
            ledger.open.insert(*seq, dataset.clone());
            if keep {
                listed.insert(*seq, (dataset.clone(), account.releases.len()));
                account.releases.push(Entry {
                    seq: *seq,
                    time: time.clone(),
                    query: query.clone(),
                    column: column.clone(),
                    neighbours: neighbours.clone(),
                    unit: unit.to_string(),
                    epsilon: epsilon.clone(),
                    epsilon_decimal: *epsilon_decimal,
                    rho: rho.clone(),
                    rho_decimal: *rho_decimal,
                    delta: delta.clone(),
                    delta_decimal: *delta_decimal,
                    fingerprint: None,
                });
            }
        }
        Record::Released { charge, fingerprint, .. } => {
            if ledger.open.remove(charge).is_none() {
                return Err(corrupt(path, number, "completes a charge that is not an earlier, open one"));
            }
            if let Some((dataset, i)) = listed.get(charge) {
                if let Some(entry) = ledger.accounts.get_mut(dataset).and_then(|a| a.releases.get_mut(*i)) {
                    entry.fingerprint = Some(fingerprint.clone());
                }
            }
        }
    }
    Ok(())
}

/// The spend a charge record states: ε alone, ρ alone, or ε and δ, each a valid exact n/d.
fn charged(epsilon: Option<&str>, rho: Option<&str>, delta: Option<&str>) -> Option<Spend> {
    let eps = |e: &str| Epsilon::from_rational(parse_exact(e)?).ok();
    Some(match (epsilon, rho, delta) {
        (Some(e), None, None) => Spend::Pure(eps(e)?),
        (None, Some(r), None) => Spend::Zcdp(Rho::from_rational(parse_exact(r)?).ok()?),
        (Some(e), None, Some(d)) => {
            Spend::Approx { eps: eps(e)?, delta: Delta::from_rational(parse_exact(d)?).ok()? }
        }
        _ => return None,
    })
}

fn corrupt(path: &Path, line: usize, what: &str) -> anyhow::Error {
    bad_input(format!(
        "ledger {} is corrupt: line {line} {what}; fix or restore the file (it is never reset)",
        path.display()
    ))
}

/// A record before it has its place in the chain.
#[allow(clippy::large_enum_variant)] // a handful per run
enum Draft {
    Budget {
        dataset: String,
        total: BigRational,
        delta: Option<Delta>,
        delta_for: DeltaUse,
    },
    /// A charge with the dataset's running totals after it.
    Charge {
        dataset: String,
        charge: Charge,
        spent: BigRational,
        spent_rho: BigRational,
        spent_delta: BigRational,
    },
    Released {
        charge: u64,
        fingerprint: String,
    },
}

/// Appends the records in one write and fsyncs, then brings the header up to date and fsyncs
/// again. A crash in between leaves a header that counts fewer records than the file holds,
/// which is read as it is (the records are there) and mended by the next write.
///
/// With a key, the links are HMACs and, last, the key's state file is brought up to date: a
/// crash before that leaves a state older than the ledger, which the ledger still extends.
fn append(
    file: &File,
    path: &Path,
    ledger: &mut Ledger,
    drafts: &[Draft],
    key: Option<&LedgerKey>,
) -> Result<Vec<u64>> {
    let chain = key.map_or(Chain::Sha256, Chain::Keyed);
    let header_line = |records: u64, link: &[u8; 32]| {
        let head = chain.head(records, link);
        match key {
            None => (Header::line(records, &head), head),
            Some(key) => (Header::keyed_line(records, &head, key), head),
        }
    };
    let mut bytes = Vec::new();
    let mut at = ledger.len;
    if at == 0 {
        bytes.extend_from_slice(header_line(0, &ledger.head).0.as_bytes());
    }
    let mut seqs = Vec::new();
    for draft in drafts {
        let seq = ledger.records + 1;
        let prev = hex(&ledger.head);
        let time = now();
        let record = match draft {
            Draft::Budget { dataset, total, delta, delta_for } => Record::Budget {
                seq,
                time,
                dataset: dataset.clone(),
                total: exact_string(total),
                total_decimal: rational_to_f64_down(total),
                delta: delta.as_ref().map(Delta::exact_string),
                delta_decimal: delta.as_ref().map(Delta::to_f64_up),
                delta_for: delta.as_ref().map(|_| delta_for.name().to_string()),
                prev,
            },
            Draft::Charge { dataset, charge, spent, spent_rho, spent_delta } => {
                let (eps, rho, delta) = match &charge.spend {
                    Spend::Pure(e) => (Some(e), None, None),
                    Spend::Zcdp(r) => (None, Some(r), None),
                    Spend::Approx { eps, delta } => (Some(eps), None, Some(delta)),
                };
                let running = |r: &BigRational| (!r.is_zero()).then(|| exact_string(r));
                Record::Charge {
                    seq,
                    time,
                    dataset: dataset.clone(),
                    query: charge.query.clone(),
                    column: charge.column.clone(),
                    neighbours: charge.neighbours.clone(),
                    unit: (charge.unit != ROW_UNIT).then(|| charge.unit.clone()),
                    epsilon: eps.map(Epsilon::exact_string),
                    epsilon_decimal: eps.map(Epsilon::to_f64_up),
                    rho: rho.map(Rho::exact_string),
                    rho_decimal: rho.map(Rho::to_f64_up),
                    delta: delta.map(Delta::exact_string),
                    delta_decimal: delta.map(Delta::to_f64_up),
                    spent: exact_string(spent),
                    spent_rho: running(spent_rho),
                    spent_delta: running(spent_delta),
                    prev,
                }
            }
            Draft::Released { charge, fingerprint } => {
                Record::Released { seq, time, charge: *charge, fingerprint: fingerprint.clone(), prev }
            }
        };
        let line = serde_json::to_string(&record)?;
        ledger.head = chain.link(&line);
        ledger.records = seq;
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        seqs.push(seq);
    }
    let writing =
        |e: std::io::Error| anyhow::Error::new(e).context(format!("writing ledger {}", path.display()));
    write_at(file, &bytes, at).and_then(|()| file.sync_data()).map_err(writing)?;
    at += bytes.len() as u64;
    ledger.len = at;
    // One sector at offset 0, so it is written whole or not at all.
    let (header, head) = header_line(ledger.records, &ledger.head);
    write_at(file, header.as_bytes(), 0).and_then(|()| file.sync_data()).map_err(writing)?;
    ledger.shown_head = hex(&head);
    if let Some(key) = key {
        ledger_key::write_state(key, &State { records: ledger.records, head: Some(hex(&head)) })?;
    }
    Ok(seqs)
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(not(unix))]
fn write_at(mut file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(bytes)
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
            budget_delta: None,
            budget_delta_for: None,
            change_budget: false,
            dataset: DEFAULT_DATASET.into(),
            key: None,
        }
    }

    fn named(dir: &tempfile::TempDir, budget: Option<&str>, dataset: &str) -> LedgerSpec {
        LedgerSpec { dataset: dataset.into(), ..spec(dir, budget) }
    }

    fn release(eps: &str) -> Charge {
        spending(Spend::Pure(eps.parse().unwrap()))
    }

    fn spending(spend: Spend) -> Charge {
        Charge {
            query: "count".into(),
            column: None,
            neighbours: "add-remove".into(),
            unit: ROW_UNIT.into(),
            spend,
        }
    }

    fn remaining(path: &Path, dataset: &str) -> Option<BigRational> {
        read(path).unwrap().account(dataset).remaining()
    }

    #[test]
    fn ten_tenths_spend_exactly_one() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(&dir, Some("1"));
        for _ in 0..10 {
            reserve(&s, &release("0.1")).unwrap();
        }
        assert_eq!(remaining(&s.path, DEFAULT_DATASET), Some(BigRational::zero()));
        let before = std::fs::read(&s.path).unwrap();
        let err = reserve(&s, &release("0.1")).unwrap_err();
        assert!(matches!(err.downcast_ref::<Error>(), Some(Error::Budget(_))));
        assert_eq!(std::fs::read(&s.path).unwrap(), before, "a refusal writes nothing");
    }

    #[test]
    fn a_refused_first_charge_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let no_budget = spec(&dir, None);
        assert!(reserve(&no_budget, &release("0.1")).is_err());
        assert!(!no_budget.path.exists(), "no budget: the file it created is removed");
        let too_much = spec(&dir, Some("1"));
        assert!(reserve(&too_much, &release("2")).is_err());
        assert!(!too_much.path.exists(), "over budget: the file it created is removed");
        let gaussian = spending(Spend::Zcdp("0.01".parse().unwrap()));
        assert!(reserve(&too_much, &gaussian).is_err(), "no --budget-delta");
        assert!(!too_much.path.exists());
        // An empty file the run did not create is left as it was.
        std::fs::write(&too_much.path, b"").unwrap();
        assert!(reserve(&too_much, &release("2")).is_err());
        assert_eq!(std::fs::read(&too_much.path).unwrap(), b"");
    }

    /// A run that opened the file a refused first charge created, and waited for its lock,
    /// must not write into the removed file: it opens the path again.
    #[cfg(unix)]
    #[test]
    fn a_charge_waiting_on_a_removed_file_opens_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(&dir, Some("1"));
        let (holder, created) = open_locked(&s.path).unwrap();
        assert!(created);
        let waiter = {
            let s = s.clone();
            std::thread::spawn(move || reserve(&s, &release("0.25")))
        };
        // Let the waiter open the file and block on the lock, then remove it as a refusal does.
        std::thread::sleep(std::time::Duration::from_millis(200));
        remove_if_empty(&holder, &s.path);
        assert!(!s.path.exists());
        drop(holder);
        waiter.join().unwrap().unwrap();
        assert_eq!(
            remaining(&s.path, DEFAULT_DATASET),
            Some("3/4".parse().unwrap()),
            "the charge is on disk"
        );
    }

    #[test]
    fn datasets_are_separate_and_budget_must_be_set() {
        let dir = tempfile::tempdir().unwrap();
        reserve(&named(&dir, Some("0.5"), "a"), &release("0.5")).unwrap();
        assert!(reserve(&named(&dir, None, "a"), &release("0.1")).is_err());
        let err = reserve(&named(&dir, None, "b"), &release("0.1")).unwrap_err();
        assert!(err.to_string().contains("--budget"), "{err}");
        reserve(&named(&dir, Some("1"), "b"), &release("1")).unwrap();
        let ledger = read(&dir.path().join("ledger.jsonl")).unwrap();
        assert_eq!(ledger.accounts.keys().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn a_different_budget_needs_change_budget() {
        let dir = tempfile::tempdir().unwrap();
        reserve(&spec(&dir, Some("1")), &release("1")).unwrap();
        let err = reserve(&spec(&dir, Some("2")), &release("0.5")).unwrap_err();
        assert!(err.to_string().contains("--change-budget"), "{err}");
        let mut raise = spec(&dir, Some("2"));
        raise.change_budget = true;
        reserve(&raise, &release("0.5")).unwrap();
        assert_eq!(remaining(&raise.path, DEFAULT_DATASET), Some(BigRational::new(1.into(), 2.into())));
    }

    #[test]
    fn completion_records_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(&dir, Some("1"));
        let first = reserve(&s, &release("0.25")).unwrap();
        let second = reserve(&s, &release("0.25")).unwrap();
        complete(&first, "csv-sha256:aa").unwrap();
        let ledger = read(&s.path).unwrap();
        let releases = &ledger.account(DEFAULT_DATASET).releases;
        assert_eq!(releases[0].fingerprint.as_deref(), Some("csv-sha256:aa"));
        assert_eq!(releases[1].fingerprint, None, "charged, not completed: still spent");
        assert_eq!(ledger.account(DEFAULT_DATASET).spent, BigRational::new(1.into(), 2.into()));
        complete(&second, "csv-sha256:bb").unwrap();
        assert!(complete(&second, "csv-sha256:bb").is_err(), "a charge completes once");
    }

    /// Every way of rolling the spend back is refused, and the file is left as it was.
    #[test]
    fn cuts_edits_and_deletions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(&dir, Some("1"));
        for _ in 0..3 {
            let r = reserve(&s, &release("0.25")).unwrap();
            complete(&r, "csv-sha256:aa").unwrap();
        }
        let good = std::fs::read_to_string(&s.path).unwrap();
        let lines: Vec<&str> = good.lines().collect();
        let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
        let mut dropped = lines.clone();
        dropped.remove(3);
        let cases = [
            (join(&lines[..lines.len() - 2]), "cut short"),
            (join(&lines[..1]), "cut short"),
            (join(&dropped), "record 4 where record 3 belongs"),
            (good.replacen("\"1/4\"", "\"1/8\"", 1), "running total"),
            (good.replacen("\"spent\":\"3/4\"", "\"spent\":\"1/2\"", 1), "running total"),
            (good.replacen("csv-sha256:aa", "csv-sha256:ab", 1), "prev hash"),
            (good.replace("csv-sha256:aa\",\"prev", "csv-sha256:ab\",\"prev"), "prev hash"),
            (format!("{good}{{\"type\":\"charge\""), "truncated"),
            (format!("{good}not json\n"), "not a valid record"),
        ];
        for (bad, needle) in cases {
            std::fs::write(&s.path, &bad).unwrap();
            let err = reserve(&s, &release("0.1")).unwrap_err();
            assert!(err.to_string().contains(needle), "{needle}: {err}");
            assert_eq!(std::fs::read_to_string(&s.path).unwrap(), bad, "never reset");
            assert!(read(&s.path).is_err());
        }
        // The last record edited (nothing after it to break): the header names its hash.
        let last = lines.last().unwrap();
        let edited = good.replace(last, &last.replace("csv-sha256:aa", "csv-sha256:ab"));
        std::fs::write(&s.path, &edited).unwrap();
        let err = reserve(&s, &release("0.1")).unwrap_err();
        assert!(err.to_string().contains("line 1 names a last record"), "{err}");
    }

    /// Two charges of 0.25, then the header put back as it was after the first: what a run
    /// that stopped between its append and the header's update leaves.
    fn stale_header_after_two_charges(s: &LedgerSpec) -> (String, String) {
        reserve(s, &release("0.25")).unwrap();
        let header_then = std::fs::read_to_string(&s.path).unwrap().lines().next().unwrap().to_string();
        reserve(s, &release("0.25")).unwrap();
        let text = std::fs::read_to_string(&s.path).unwrap();
        let rest: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
        std::fs::write(&s.path, format!("{header_then}\n{rest}")).unwrap();
        (header_then, rest)
    }

    /// A run that stopped between its append and the header's update left a consistent file
    /// with a stale header: it is read with every record, and the next write mends the header.
    #[test]
    fn a_stale_header_is_read_and_mended() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(&dir, Some("1"));
        stale_header_after_two_charges(&s);
        assert_eq!(remaining(&s.path, DEFAULT_DATASET), Some(BigRational::new(1.into(), 2.into())));
        reserve(&s, &release("0.25")).unwrap();
        let ledger = read(&s.path).unwrap();
        assert_eq!(ledger.records, 4);
        let header = std::fs::read_to_string(&s.path).unwrap().lines().next().unwrap().to_string();
        assert!(header.contains(&hex(&ledger.head)), "{header}");
    }

    #[test]
    fn the_header_keeps_its_length() {
        let head = genesis();
        assert_eq!(Header::line(0, &head).len(), Header::line(u64::MAX, &head).len());
        let parsed: Header = serde_json::from_str(Header::line(7, &head).trim_end()).unwrap();
        assert_eq!((parsed.records, parsed.head), (7, hex(&head)));
    }

    #[test]
    fn old_ledgers_are_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(&dir, Some("1"));
        let old = "{\"type\":\"budget\",\"time\":\"2026-11-21T05:23:57Z\",\"dataset\":\"sha256:c448\",\"total\":\"1/1\",\"total_decimal\":1.0}\n";
        std::fs::write(&s.path, old).unwrap();
        let err = reserve(&s, &release("0.1")).unwrap_err().to_string();
        assert!(err.contains("earlier dpstat (format 1") && err.contains("new ledger file"), "{err}");
        assert_eq!(std::fs::read_to_string(&s.path).unwrap(), old);
    }

    /// A ledger keyed with a new key in the same directory.
    fn keyed(dir: &tempfile::TempDir, budget: Option<&str>) -> LedgerSpec {
        let key = dir.path().join("ledger.key");
        if !key.exists() {
            ledger_key::generate(&key).unwrap();
        }
        LedgerSpec { key: Some(key), ..spec(dir, budget) }
    }

    /// Three charged and completed releases of 0.25 each.
    fn three_releases(s: &LedgerSpec) -> String {
        for _ in 0..3 {
            let r = reserve(s, &release("0.25")).unwrap();
            complete(&r, "csv-sha256:aa").unwrap();
        }
        std::fs::read_to_string(&s.path).unwrap()
    }

    /// What whoever can write the ledger but not read the key can do to its chain: give every
    /// record after the first a `prev` that is the SHA-256 of the line before it (a record whose
    /// `prev` is that already is kept as it is), then a header as [`with_header`] writes it.
    fn rechained(header: &str, records: &[&str]) -> String {
        let mut lines: Vec<String> = Vec::new();
        for record in records {
            let mut line = record.to_string();
            if let Some(previous) = lines.last() {
                let link = hex(&Sha256::digest(previous.as_bytes()));
                let mut value: serde_json::Value = serde_json::from_str(record).unwrap();
                if value["prev"] != link.as_str() {
                    value["prev"] = link.into();
                    line = serde_json::to_string(&value).unwrap();
                }
            }
            lines.push(line);
        }
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        with_header(header, &lines, None)
    }

    /// `records` as they are under a header recomputed without the key: it counts them and
    /// names `head`, else the SHA-256 of the last, as a keyless header does.
    fn with_header(header: &str, records: &[&str], head: Option<&str>) -> String {
        let head = match head {
            Some(h) => h.to_string(),
            None => hex(&Sha256::digest(records.last().unwrap_or(&"").as_bytes())),
        };
        // In the header's fixed width, as dpstat rewrites it in place.
        let start = header.find("\"records\":").unwrap() + 10;
        let mut text = format!("{}{:<20},\"head\":\"{head}\"}}\n", &header[..start], records.len());
        assert_eq!(text.len(), header.len() + 1);
        for line in records {
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    /// The finding of issue 24: records cut (or edited) and the chain and header recomputed
    /// with SHA-256 pass a keyless ledger, and are refused when it is keyed, also with the
    /// head taken from the `prev` of the first record cut.
    #[test]
    fn a_recomputed_chain_passes_a_keyless_ledger_and_not_a_keyed_one() {
        for keyed_ledger in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let s = if keyed_ledger { keyed(&dir, Some("1")) } else { spec(&dir, Some("1")) };
            let good = three_releases(&s);
            let lines: Vec<&str> = good.lines().collect();
            let next_prev = serde_json::from_str::<serde_json::Value>(lines[5]).unwrap()["prev"]
                .as_str()
                .unwrap()
                .to_string();
            let edited = lines[6].replace("csv-sha256:aa", "csv-sha256:ab");
            let mut changed = lines[1..].to_vec();
            changed[5] = &edited;
            let forgeries = [
                ("cut, header recomputed", with_header(lines[0], &lines[1..5], None)),
                ("cut, head read from the next prev", with_header(lines[0], &lines[1..5], Some(&next_prev))),
                ("edited, chain recomputed", rechained(lines[0], &changed)),
            ];
            for (what, forged) in forgeries {
                std::fs::write(&s.path, &forged).unwrap();
                if keyed_ledger {
                    let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
                    assert!(
                        err.contains("does not follow") || err.contains("names a last record"),
                        "{what}: {err}"
                    );
                    assert_eq!(std::fs::read_to_string(&s.path).unwrap(), forged, "{what}: never reset");
                    assert!(read_keyed(&s.path, s.key.as_deref()).is_err(), "{what}");
                    // Without the key it is listed, but as not verified, and not charged.
                    let unverified = read(&s.path).unwrap();
                    assert!(!unverified.verified && unverified.key_id.is_some(), "{what}");
                    let no_key = LedgerSpec { key: None, ..s.clone() };
                    let err = reserve(&no_key, &release("0.25")).unwrap_err().to_string();
                    assert!(err.contains("a charge needs its key"), "{what}: {err}");
                } else {
                    let ledger = read(&s.path).unwrap();
                    assert!(ledger.verified && ledger.key_id.is_none());
                    reserve(&s, &release("0.25"))
                        .unwrap_or_else(|e| panic!("{what}: accepted as today: {e}"));
                }
            }
        }
    }

    /// A whole older copy verifies with the key: the key's state file refuses it, and a ledger
    /// put in place of the key's one (deleted, or another ledger) too.
    #[test]
    fn the_state_file_refuses_an_older_copy() {
        let dir = tempfile::tempdir().unwrap();
        let s = keyed(&dir, Some("2"));
        let key = ledger_key::load(s.key.as_deref().unwrap()).unwrap();
        let old = three_releases(&s);
        three_releases(&s);
        let state = ledger_key::read_state(&key).unwrap().unwrap();
        let ledger = read_keyed(&s.path, s.key.as_deref()).unwrap();
        assert_eq!((state.records, state.head.as_deref()), (13, Some(ledger.head_hex().as_str())));
        assert!(ledger.verified && ledger.state_checked);
        let full = std::fs::read_to_string(&s.path).unwrap();
        std::fs::write(&s.path, &old).unwrap();
        let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
        assert!(err.contains("fewer than the 13 that the key's state file"), "{err}");
        assert!(read_keyed(&s.path, s.key.as_deref()).is_err(), "dpstat budget with the key too");
        std::fs::remove_file(&s.path).unwrap();
        let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
        assert!(err.contains("holds 0 records"), "{err}");
        // Another ledger of the same key, as long as the first: another head at that count.
        let other = LedgerSpec { path: dir.path().join("other.jsonl"), dataset: "other".into(), ..s.clone() };
        let saved = ledger_key::read_state(&key).unwrap().unwrap();
        ledger_key::write_state(&key, &State { records: 0, head: None }).unwrap();
        three_releases(&other);
        three_releases(&other);
        ledger_key::write_state(&key, &saved).unwrap();
        std::fs::write(&s.path, std::fs::read_to_string(&other.path).unwrap()).unwrap();
        let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
        assert!(err.contains("another ledger"), "{err}");
        // The real one back: charged again.
        std::fs::write(&s.path, &full).unwrap();
        reserve(&s, &release("0.25")).unwrap();
    }

    /// A run that stopped after its header and before the state file leaves a state older than
    /// the ledger, which the ledger extends: accepted, and brought up to date by the next write.
    /// A missing state file is refused for a charge once the ledger has records.
    #[test]
    fn a_state_behind_the_ledger_is_caught_up_and_a_missing_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = keyed(&dir, Some("2"));
        let key = ledger_key::load(s.key.as_deref().unwrap()).unwrap();
        three_releases(&s);
        let behind = ledger_key::read_state(&key).unwrap().unwrap();
        three_releases(&s);
        ledger_key::write_state(&key, &behind).unwrap();
        reserve(&s, &release("0.25")).unwrap();
        assert_eq!(ledger_key::read_state(&key).unwrap().unwrap().records, 14);
        std::fs::remove_file(key.state_path()).unwrap();
        let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
        assert!(err.contains("state file") && err.contains("is missing"), "{err}");
        let listed = read_keyed(&s.path, s.key.as_deref()).unwrap();
        assert!(listed.verified && !listed.state_checked, "listed, with the state not checked");
    }

    /// A keyed ledger whose run stopped before its header's update is read and mended as a
    /// plain one is: the stale header's head is the keyed head after the records it counts.
    #[test]
    fn a_stale_keyed_header_is_read_and_mended() {
        let dir = tempfile::tempdir().unwrap();
        let s = keyed(&dir, Some("1"));
        let (header_then, rest) = stale_header_after_two_charges(&s);
        let ledger = read_keyed(&s.path, s.key.as_deref()).unwrap();
        assert_eq!((ledger.records, ledger.verified, ledger.state_checked), (3, true, true));
        reserve(&s, &release("0.25")).unwrap();
        let header = std::fs::read_to_string(&s.path).unwrap().lines().next().unwrap().to_string();
        assert!(header.contains(&read_keyed(&s.path, s.key.as_deref()).unwrap().head_hex()), "{header}");
        // A stale header with its count raised by hand names a head the key never wrote.
        let forged = header_then.replacen("\"records\":2 ", "\"records\":3 ", 1);
        assert_ne!(forged, header_then);
        std::fs::write(&s.path, format!("{forged}\n{rest}")).unwrap();
        let err = read_keyed(&s.path, s.key.as_deref()).unwrap_err().to_string();
        assert!(err.contains("names a last record"), "{err}");
    }

    /// A key belongs to its ledger: another key, or a key with a keyless ledger, is refused; a
    /// keyed header is as fixed in length as a keyless one.
    #[test]
    fn keys_and_ledgers_must_match() {
        let dir = tempfile::tempdir().unwrap();
        let s = keyed(&dir, Some("1"));
        reserve(&s, &release("0.25")).unwrap();
        let header = std::fs::read_to_string(&s.path).unwrap().lines().next().unwrap().to_string();
        assert!(header.contains("\"format\":3,\"keyed\":true,\"key_id\":"), "{header}");
        let other = dir.path().join("other.key");
        ledger_key::generate(&other).unwrap();
        let wrong = LedgerSpec { key: Some(other.clone()), ..s.clone() };
        let err = reserve(&wrong, &release("0.25")).unwrap_err().to_string();
        assert!(err.contains("not with the key in"), "{err}");
        let plain_dir = tempfile::tempdir().unwrap();
        let plain = spec(&plain_dir, Some("1"));
        reserve(&plain, &release("0.25")).unwrap();
        let err = reserve(&LedgerSpec { key: Some(other), ..plain.clone() }, &release("0.25")).unwrap_err();
        assert!(err.to_string().contains("is not keyed (format 2)"), "{err}");
        let key = ledger_key::load(s.key.as_deref().unwrap()).unwrap();
        let head = genesis();
        assert_eq!(Header::keyed_line(0, &head, &key).len(), Header::keyed_line(u64::MAX, &head, &key).len());
    }

    fn with_delta(dir: &tempfile::TempDir, budget: &str, delta: &str) -> LedgerSpec {
        LedgerSpec { budget_delta: Some(delta.parse().unwrap()), ..spec(dir, Some(budget)) }
    }

    fn zcdp(rho: &str) -> Charge {
        spending(Spend::Zcdp(rho.parse().unwrap()))
    }

    fn approx(eps: &str, delta: &str) -> Charge {
        spending(Spend::Approx { eps: eps.parse().unwrap(), delta: delta.parse().unwrap() })
    }

    fn refusal(spec: &LedgerSpec, charge: &Charge) -> String {
        let before = std::fs::read(&spec.path).unwrap_or_default();
        let err = reserve(spec, charge).unwrap_err();
        assert!(matches!(err.downcast_ref::<Error>(), Some(Error::Budget(_))), "exit 3: {err}");
        assert_eq!(std::fs::read(&spec.path).unwrap_or_default(), before, "a refusal writes nothing");
        err.to_string()
    }

    /// ρ charges compose with the pure ones at the budget's Rényi order α* (23 for (1, 1e-6), all
    /// of δ for zCDP): charges are admitted while R(α*) = Σ min(ε, α*ε²/2) + α*Σρ <= B, the next
    /// that would pass B is refused, and the spend is R(α*) converted at α* and δ_total.
    #[test]
    fn rho_charges_compose_with_pure_ones_at_the_budget_order() {
        let dir = tempfile::tempdir().unwrap();
        let s = LedgerSpec { budget_delta_for: Some(DeltaUse::Zcdp), ..with_delta(&dir, "1", "1e-6") };
        let d: Delta = "1e-6".parse().unwrap();
        reserve(&s, &release("0.2")).unwrap();
        reserve(&s, &zcdp("0.001")).unwrap();
        let account = read(&s.path).unwrap().account(DEFAULT_DATASET);
        let m = account.measure().unwrap();
        let Rule::Renyi { order, limit } = &m.rule else { panic!("the Rényi rule: {m:?}") };
        let alpha = BigRational::from_integer(23.into());
        assert_eq!(order.alpha, alpha);
        // min(0.2, 23·0.02) + 23·0.001 = 0.223.
        assert_eq!(m.value, BigRational::new(223.into(), 1000.into()));
        assert_eq!(account.spent_epsilon(), Some(order.epsilon(&m.value)));
        assert_eq!(account.spent_rho_total(), Some(BigRational::new(21.into(), 1000.into())));
        assert_eq!(account.spent, BigRational::new(1.into(), 5.into()), "Σε keeps the pure part");
        assert_eq!(account.spent_rho, BigRational::new(1.into(), 1000.into()));
        // The largest ρ that still fits: (B − 0.223)/23; a little more is refused.
        let room = (limit - &m.value) / &alpha;
        let tiny = BigRational::new(1.into(), 1_000_000_000.into());
        let asked = Rho::from_rational(&room - &tiny).unwrap();
        let over = Rho::from_rational(&room + &tiny).unwrap();
        let message = refusal(&s, &spending(Spend::Zcdp(over)));
        assert!(message.contains("budget exhausted") && message.contains("at order 23 is"), "{message}");
        // R prints exactly (0.223 + 23·1 = 23.223).
        let big = refusal(&s, &spending(Spend::Zcdp("1".parse().unwrap())));
        assert!(big.contains("Renyi divergence at order 23 is 23.223,"), "{big}");
        reserve(&s, &spending(Spend::Zcdp(asked))).unwrap();
        // Then a pure charge, too, is counted at α* and refused.
        assert!(refusal(&s, &release("0.01")).contains("budget exhausted"));
        let summary = BudgetSummary::new(DEFAULT_DATASET, &read(&s.path).unwrap().account(DEFAULT_DATASET));
        assert!(
            summary.spent <= 1.0 && summary.spent_rho.is_some() && summary.total_delta == Some(d.to_f64_up())
        );
        assert_eq!(summary.renyi_order_exact.as_deref(), Some("23/1"));
        // The rule records nothing (no order, no R), so the spend is re-derived from the charges
        // on every read and ledgers written under the zCDP rule read as they are.
        let text = std::fs::read_to_string(&s.path).unwrap();
        assert!(text.contains("\"rho\":\"1/1000\"") && text.contains("\"spent_rho\":\"1/1000\""), "{text}");
        assert!(!text.contains("renyi") && !text.contains("order"), "{text}");
    }

    #[test]
    fn rho_needs_a_budget_delta_and_never_mixes_with_epsilon_delta() {
        let dir = tempfile::tempdir().unwrap();
        let pure = spec(&dir, Some("1"));
        let message = refusal(&pure, &zcdp("0.01"));
        assert!(message.contains("delta 0") && message.contains("--budget-delta"), "{message}");
        // Recording a δ needs --change-budget once a budget exists.
        reserve(&pure, &release("0.1")).unwrap();
        let err = reserve(&with_delta(&dir, "1", "1e-6"), &zcdp("0.01")).unwrap_err();
        assert!(err.to_string().contains("--change-budget"), "{err}");
        let change = LedgerSpec { change_budget: true, ..with_delta(&dir, "1", "1e-6") };
        reserve(&change, &zcdp("0.01")).unwrap();
        // The δ stays when later runs give --budget alone.
        reserve(&spec(&dir, Some("1")), &zcdp("0.001")).unwrap();
        let message = refusal(&spec(&dir, None), &approx("0.1", "1e-9"));
        assert!(message.contains("cannot share a budget"), "{message}");
        let ledger = read(&pure.path).unwrap();
        assert_eq!(ledger.account(DEFAULT_DATASET).delta, Some("1e-6".parse().unwrap()));
    }

    /// (ε, δ) charges compose basically with pure ones: Σε <= ε_total and Σδ <= δ_total (all of
    /// it theirs under `--budget-delta-for thresholds`).
    #[test]
    fn epsilon_delta_charges_add_both() {
        let dir = tempfile::tempdir().unwrap();
        let s = LedgerSpec { budget_delta_for: Some(DeltaUse::Thresholds), ..with_delta(&dir, "1", "2e-7") };
        reserve(&s, &approx("0.5", "1e-7")).unwrap();
        reserve(&s, &release("0.25")).unwrap();
        assert!(refusal(&s, &approx("0.5", "1e-7")).contains("spent 0.75 of 1"));
        assert!(refusal(&s, &approx("0.1", "2e-7")).contains("deltas add up to"));
        reserve(&s, &approx("0.25", "1e-7")).unwrap();
        let account = read(&s.path).unwrap().account(DEFAULT_DATASET);
        assert_eq!(account.remaining(), Some(BigRational::zero()));
        assert_eq!(account.spent_delta, BigRational::new(1.into(), 5_000_000.into()));
        let summary = BudgetSummary::new(DEFAULT_DATASET, &account);
        assert_eq!(summary.spent_delta_exact.as_deref(), Some("1/5000000"));
        // Without a δ in the budget, no (ε, δ) charge fits.
        let other = named(&dir, Some("1"), "other");
        assert!(refusal(&other, &approx("0.1", "1e-9")).contains("budget's delta 0"));
    }

    /// Running totals per currency are checked like Σε: an edited ρ or δ is refused, and a
    /// format-2 ledger written before the new fields reads as pure ε.
    #[test]
    fn running_totals_per_currency_are_checked_and_old_records_read() {
        let dir = tempfile::tempdir().unwrap();
        let s = with_delta(&dir, "1", "1e-6");
        reserve(&s, &zcdp("0.001")).unwrap();
        reserve(&s, &zcdp("0.002")).unwrap();
        let good = std::fs::read_to_string(&s.path).unwrap();
        assert!(good.contains("\"spent_rho\":\"3/1000\"") && good.contains("\"rho\":\"1/500\""), "{good}");
        for bad in [
            good.replacen("\"spent_rho\":\"3/1000\"", "\"spent_rho\":\"1/500\"", 1),
            good.replacen("\"rho\":\"1/500\"", "\"rho\":\"1/1000\"", 1),
        ] {
            std::fs::write(&s.path, &bad).unwrap();
            let err = read(&s.path).unwrap_err().to_string();
            assert!(err.contains("running total") || err.contains("prev hash"), "{err}");
        }
        // A record as an earlier format-2 dpstat wrote it (no delta, rho or spent_rho fields).
        let old = "{\"type\":\"charge\",\"seq\":2,\"time\":\"2026-01-01T00:00:00Z\",\"dataset\":\"default\",\"query\":\"count\",\"neighbours\":\"add-remove\",\"epsilon\":\"1/10\",\"epsilon_decimal\":0.1,\"spent\":\"1/10\",\"prev\":\"x\"}";
        let record: Record = serde_json::from_str(old).unwrap();
        let Record::Charge { epsilon, rho, spent_rho, .. } = record else { panic!("a charge") };
        assert_eq!((epsilon.as_deref(), rho, spent_rho), (Some("1/10"), None, None));
        assert_eq!(charged(Some("1/10"), None, None), Some(Spend::Pure("0.1".parse().unwrap())));
        assert_eq!(charged(Some("1/10"), Some("1/10"), None), None);
        assert_eq!(charged(None, None, Some("1/10")), None);
    }

    fn per(unit: &str, eps: &str) -> Charge {
        Charge { unit: unit.into(), ..release(eps) }
    }

    /// A dataset is spent in the unit of its first charge: a charge in another (row after
    /// person, person after row, or another id column) is refused with exit 3 and nothing
    /// written, whatever budget is left; other datasets keep their own unit.
    #[test]
    fn a_dataset_is_spent_in_one_privacy_unit() {
        let dir = tempfile::tempdir().unwrap();
        let people = named(&dir, Some("1"), "people");
        reserve(&people, &per("person:patient", "0.1")).unwrap();
        reserve(&people, &per("person:patient", "0.1")).unwrap();
        let message = refusal(&people, &release("0.1"));
        assert!(
            message.contains("dataset people in ledger")
                && message.contains(
                    "is spent per person:patient; this release is per row: add --privacy-id patient"
                ),
            "{message}"
        );
        let message = refusal(&people, &per("person:visit", "0.1"));
        assert!(message.contains("this release is per person:visit: give --privacy-id patient"), "{message}");
        let rows = named(&dir, Some("1"), "rows");
        reserve(&rows, &release("0.1")).unwrap();
        let message = refusal(&rows, &per("person:patient", "0.1"));
        assert!(
            message.contains("is spent per row; this release is per person:patient: drop --privacy-id"),
            "{message}"
        );
        // Refused before the budget is looked at: even a charge it could not pay says the unit.
        assert!(refusal(&rows, &per("person:patient", "5")).contains("spent per row"));
        let ledger = read(&people.path).unwrap();
        let units = |name: &str| {
            let account = ledger.account(name);
            (account.unit.clone(), account.releases.iter().map(|e| e.unit.clone()).collect::<Vec<_>>())
        };
        let patient = "person:patient".to_string();
        assert_eq!(units("people"), (Some(patient.clone()), vec![patient.clone(), patient]));
        assert_eq!(units("rows"), (Some("row".into()), vec!["row".into()]));
        assert_eq!(ledger.account("none").unit, None, "no charge, no unit yet");
    }

    /// A row-level charge is written without a `unit` (as before the field existed) and a record
    /// without one reads as row; a person-level one names its unit.
    #[test]
    fn a_record_without_a_unit_is_row_level() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(&dir, Some("1"));
        reserve(&s, &release("0.1")).unwrap();
        let text = std::fs::read_to_string(&s.path).unwrap();
        assert!(!text.contains("unit"), "{text}");
        // A record as dpstat wrote it before the field existed.
        let old = "{\"type\":\"charge\",\"seq\":2,\"time\":\"2026-01-01T00:00:00Z\",\"dataset\":\"default\",\"query\":\"count\",\"neighbours\":\"add-remove\",\"epsilon\":\"1/10\",\"epsilon_decimal\":0.1,\"spent\":\"1/10\",\"prev\":\"x\"}";
        let Record::Charge { unit, .. } = serde_json::from_str(old).unwrap() else { panic!("a charge") };
        assert_eq!(unit, None);
        assert_eq!(read(&s.path).unwrap().account(DEFAULT_DATASET).unit.as_deref(), Some(ROW_UNIT));
        let message = refusal(&s, &per("person:id", "0.1"));
        assert!(message.contains("spent per row"), "{message}");
        let other = named(&dir, Some("1"), "other");
        reserve(&other, &per("person:id", "0.1")).unwrap();
        let text = std::fs::read_to_string(&s.path).unwrap();
        assert!(text.contains("\"neighbours\":\"add-remove\",\"unit\":\"person:id\","), "{text}");
    }

    /// The unit is chained like every field: edited anywhere (renamed, removed so that the
    /// charge reads as row, or the last record's) the ledger is refused, plain or keyed; and a
    /// charge in another unit than its dataset's, chain recomputed, is refused as written by hand.
    #[test]
    fn an_edited_unit_is_refused() {
        for keyed_ledger in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let s = if keyed_ledger { keyed(&dir, Some("1")) } else { spec(&dir, Some("1")) };
            for _ in 0..2 {
                let r = reserve(&s, &per("person:patient", "0.25")).unwrap();
                complete(&r, "csv-sha256:aa").unwrap();
            }
            let good = std::fs::read_to_string(&s.path).unwrap();
            let read_back = || read_keyed(&s.path, s.key.as_deref());
            let lines: Vec<&str> = good.lines().collect();
            let last_charge = lines[4];
            assert!(last_charge.contains("\"unit\":\"person:patient\""), "{last_charge}");
            let edits = [
                (good.replacen("person:patient", "person:visit", 1), "prev hash"),
                (good.replacen(",\"unit\":\"person:patient\"", "", 1), "prev hash"),
                (good.replacen("person:patient", "row", 1), "prev hash"),
            ];
            for (bad, needle) in edits {
                assert_ne!(bad, good);
                std::fs::write(&s.path, &bad).unwrap();
                let err = reserve(&s, &per("person:patient", "0.1")).unwrap_err().to_string();
                assert!(err.contains(needle), "{keyed_ledger}: {err}");
                assert!(read_back().is_err());
                assert_eq!(std::fs::read_to_string(&s.path).unwrap(), bad, "never reset");
            }
            // The unit of the last record, which no `prev` names: the header's head does.
            let fresh = tempfile::tempdir().unwrap();
            let one = if keyed_ledger { keyed(&fresh, Some("1")) } else { spec(&fresh, Some("1")) };
            reserve(&one, &per("person:patient", "0.25")).unwrap();
            let text = std::fs::read_to_string(&one.path).unwrap();
            let ours: Vec<&str> = text.lines().collect();
            let renamed = ours[2].replace("person:patient", "person:visit");
            let mut forged = vec![text.replacen(ours[2], &renamed, 1)];
            if keyed_ledger {
                // Also with the header recomputed without the key (a keyless one would pass).
                forged.push(with_header(ours[0], &[ours[1], &renamed], None));
            }
            for bad in forged {
                std::fs::write(&one.path, &bad).unwrap();
                let err = read_keyed(&one.path, one.key.as_deref()).unwrap_err().to_string();
                assert!(err.contains("line 1 names a last record"), "{keyed_ledger}: {err}");
            }
            let edited = lines[4].replace("person:patient", "person:visit");
            if !keyed_ledger {
                // Without a key the chain can be recomputed (docs/DESIGN.md §5.3): the reader
                // still refuses a dataset charged in two units.
                let mixed = rechained(lines[0], &[lines[1], lines[2], lines[3], &edited]);
                std::fs::write(&s.path, &mixed).unwrap();
                let err = read_back().unwrap_err().to_string();
                assert!(err.contains("line 5 charges its dataset in another privacy unit"), "{err}");
                let nonsense =
                    rechained(lines[0], &[lines[1], &lines[2].replace("person:patient", "person:")]);
                std::fs::write(&s.path, &nonsense).unwrap();
                let err = read_back().unwrap_err().to_string();
                assert!(err.contains("neither row nor person:COLUMN"), "{err}");
            }
        }
    }
}
