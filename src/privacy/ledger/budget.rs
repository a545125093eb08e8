//! The budget arithmetic of a ledger: budgets, accounts, the admission of a charge and the
//! summary a release prints (docs/DESIGN.md §5, §9.7).

use std::path::Path;
use std::str::FromStr;

use anyhow::Result;
use num_rational::BigRational;
use num_traits::{Signed, Zero};
use serde::Serialize;

use super::record::{exact_string, Entry, ROW_UNIT};
use crate::error::shown;
use crate::numeric::exact::{decimal, parse_decimal, rational_to_f64_down, rational_to_f64_up};
use crate::privacy::currency::{History, Spend};
use crate::privacy::delta::Delta;
use crate::privacy::delta_use::DeltaUse;
use crate::privacy::renyi::{measure, Measure, Rule};

/// `--budget`: a positive exact decimal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget(pub(super) BigRational);

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
pub(super) const NEEDS_DELTA: &str = "record a delta with --budget TOTAL --budget-delta D --change-budget";
/// and on the budget the same command records (no --change-budget: nothing is changed).
pub(super) const FIRST_DELTA: &str = "add --budget-delta D (e.g. 1e-6, well below 1/rows) beside --budget";

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
    if history.has_zcdp() && history.has_approx() {
        return Err(format!(
            "dataset {dataset} cannot pay {spend}: zCDP releases (--noise gaussian) and releases of keys \
             found in the data (--discover) cannot share a budget, since dpstat cannot yet compose them \
             soundly; charge them to separate datasets (--dataset NAME); {NOTHING}"
        ));
    }
    if let Some(why) = delta.and_then(|_| delta_for.refusal(&history)) {
        return Err(format!("dataset {dataset} cannot pay {spend}: {why}; {NOTHING}"));
    }
    let asked = Asked { spend, total, dataset };
    if history.has_zcdp() {
        return asked.fits_zcdp(&history, delta, delta_for);
    }
    asked.fits_epsilon(before, &history)?;
    let allowed = delta.map_or_else(BigRational::zero, |d| delta_for.thresholds_delta(d));
    if history.delta_sum() > &allowed {
        let share = match (delta, delta_for) {
            (Some(d), DeltaUse::Split) => format!(" (half of its delta {d}, --budget-delta-for split)"),
            _ => String::new(),
        };
        return Err(format!(
            "budget exhausted for dataset {dataset}: with {spend} the deltas add up to {}, above the \
             budget's delta {}{share}; {NOTHING} (record a larger one with --budget TOTAL --budget-delta D \
             --change-budget)",
            decimal(history.delta_sum()),
            decimal(&allowed)
        ));
    }
    Ok(())
}

/// What every refusal of a charge says happened.
const NOTHING: &str = "nothing was read, released or charged";

/// A charge [`admits`] checks: what it spends, against which total, for which dataset.
struct Asked<'a> {
    spend: &'a Spend,
    total: &'a BigRational,
    dataset: &'a str,
}

impl Asked<'_> {
    /// A history with zCDP releases (and no (ε, δ) ones): it fits when its Rényi or zCDP
    /// conversion at the budget's δ for zCDP is within ε_total.
    fn fits_zcdp(&self, history: &History, delta: Option<&Delta>, delta_for: DeltaUse) -> Result<(), String> {
        let Asked { spend, total, dataset } = *self;
        let Some(delta) = delta.and_then(|d| delta_for.zcdp_delta(d)) else {
            return Err(format!(
                "dataset {dataset} cannot pay {spend}: its budget has delta 0 (pure epsilon-DP), which a \
                 zCDP release (--noise gaussian) cannot fit; {NEEDS_DELTA}; {NOTHING}"
            ));
        };
        let delta = &delta;
        let Some(m) = measure(history, total, delta) else {
            // A history with ρ always has a measure; refusing is the safe side if it had none.
            return Err(format!(
                "dataset {dataset} cannot pay {spend}: internal error: no measure of ρ; {NOTHING}"
            ));
        };
        if m.fits {
            return Ok(());
        }
        let raise = "(lower --rho or --eps, or raise the total with --budget TOTAL --change-budget)";
        Err(match &m.rule {
            Rule::Renyi { order, limit } => format!(
                "budget exhausted for dataset {dataset}: with {spend} the history's Renyi divergence at \
                 order {} is {}, above the {} that the budget ({}, {delta} for zCDP) allows there; \
                 {NOTHING} {raise}",
                decimal(&order.alpha),
                decimal(&m.value),
                rational_to_f64_down(limit),
                decimal(total)
            ),
            Rule::Zcdp => format!(
                "budget exhausted for dataset {dataset}: with {spend} the history is rho {}-zCDP, which \
                 is ({}, {delta})-DP, above the total epsilon {}; {NOTHING} {raise}",
                decimal(&m.value),
                rational_to_f64_up(&m.epsilon),
                decimal(total)
            ),
        })
    }

    /// A history of pure and (ε, δ) releases: its ε add up to at most ε_total.
    fn fits_epsilon(&self, before: &History, history: &History) -> Result<(), String> {
        let Asked { spend, total, dataset } = *self;
        let (spent, eps) = (before.epsilon_sum(), history.epsilon_sum());
        if &eps <= total {
            return Ok(());
        }
        let asked = match spend {
            Spend::Pure(e) | Spend::Approx { eps: e, .. } => e.to_string(),
            Spend::Zcdp(_) => spend.to_string(),
        };
        Err(format!(
            "budget exhausted for dataset {dataset}: spent {} of {}, asked {asked}, remaining {}; {NOTHING} \
             (ask for at most the remaining --eps, or raise the total with --budget TOTAL --change-budget)",
            decimal(&spent),
            decimal(total),
            decimal(&(total - &spent).max(BigRational::zero()))
        ))
    }
}

/// Adds a spend to an account's running totals.
pub(super) fn add_spend(account: &mut Account, spend: &Spend) {
    match spend {
        Spend::Pure(eps) => account.spent += eps.as_rational(),
        Spend::Zcdp(rho) => account.spent_rho += rho.as_rational(),
        Spend::Approx { eps, delta } => {
            account.spent += eps.as_rational();
            account.spent_delta += delta.as_rational();
        }
    }
}
