//! The release schema: what becomes public, and the facts a reader needs to interpret it (ε
//! charged and its parts, privacy unit, sensitivity, scale, grid, accuracy). Built only from
//! noisy values and flags by the statistics in `query/`; the exact aggregate never reaches it,
//! and neither does the true row count under add-remove. `dpstat plan` states the same
//! [`Noise`] block without data, and workloads print one release per query.

use num_bigint::BigInt;
use num_traits::ToPrimitive;
use serde::Serialize;

use crate::error::Error;
use crate::numeric::exact::rational_to_f64_up;
use crate::numeric::grid::{Grid, GridBounds};
use crate::privacy::accountant::{Cost, Total};
use crate::privacy::accuracy::Confidence;
use crate::privacy::contribution::{Factor, Unit};
use crate::privacy::delta::Delta;
use crate::privacy::ledger::BudgetSummary;
use crate::privacy::noise::{Calibrated, Drawn, Mechanism};
use crate::privacy::unit::Neighbours;
use crate::privacy::zcdp::epsilon_for;

/// One statistic's release.
#[derive(Clone, Debug, Serialize)]
pub struct Release {
    pub query: &'static str,
    /// The column read (a pair as `x,y`, CSV-quoted where a name holds a comma); `null` for a
    /// count, which reads none, so every release has the key.
    pub column: Option<String>,
    #[serde(rename = "where", skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<String>,
    /// What one neighbour adds or removes: a row, or a person with their bounds.
    #[serde(flatten)]
    pub unit: Unit,
    /// `--count-truncated`: how many persons had rows dropped by the bounds, noisy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<TruncatedInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Number>,
    /// The noisy aggregate exactly, in grid units (real-valued queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_units: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<Vec<BinCount>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantiles: Option<Vec<QuantileValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates: Option<CandidateInfo>,
    #[serde(flatten)]
    pub noise: Noise,
    /// Keys found in the data (`--discover`): the threshold and the δ of the selection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery: Option<DiscoveryInfo>,
    pub post_processing: Vec<String>,
    /// What the release spent, part by part; `noise.epsilon` (or `noise.rho`) is its total.
    pub accounting: Cost,
    /// Lines for stderr, printed only after the release is complete and charged.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// The interval every value of the statistic lies in, from public quantities only (the
    /// bounds; never the data): a mean's [L, U], a variance's [0, ((U − L)/2)²]. An error bound
    /// wider than it makes the release mostly noise, which text output warns about. None where
    /// no public interval exists (a count or sum under add-remove, whose n is private).
    #[serde(skip)]
    pub range: Option<[f64; 2]>,
    /// Warnings for stderr (the release may be far off), printed after the notes.
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// The ledger account after this release was charged (only with --ledger).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSummary>,
    /// True when the noise came from `DPSTAT_INSECURE_SEED`: reproducible, and NOT private.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub insecure_seed: bool,
}

/// What a release states about its noise and accuracy: the same block for a release and for
/// `dpstat plan`, which computes it with no data.
#[derive(Clone, Debug, Serialize)]
pub struct Noise {
    /// What the release guarantees: ε (and δ, and for Gaussian noise ρ) charged.
    #[serde(flatten)]
    pub guarantee: Guarantee,
    pub neighbours: &'static str,
    /// `discrete-laplace` or `discrete-gaussian`.
    pub mechanism: &'static str,
    /// Laplace: Δ₁ of the single noisy aggregate; null for a multi-part or Gaussian release.
    pub sensitivity: Option<f64>,
    /// Laplace: Δ₁/ε; null for a multi-part or Gaussian release.
    pub scale: Option<f64>,
    /// Gaussian: Δ₂ of the single noisy aggregate (the L2 sensitivity), rounded up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_sensitivity: Option<f64>,
    /// Gaussian: σ = Δ₂/√(2ρ), rounded up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<GridInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<BoundsInfo>,
    /// The second column's bounds (covariance, regress: `bounds` are x's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds_y: Option<BoundsInfo>,
    /// The row count n: public under replace; the assumed count in a plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    pub accuracy: Accuracy,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    /// The δ at which a Gaussian release states its ρ as (ε, δ).
    #[serde(skip)]
    pub conversion: Option<Delta>,
}

/// What a release (or a plan, or a group of releases) guarantees, exactly and rounded up:
/// pure ε; (ε, δ) for keys found in the data; for Gaussian noise ρ and the (ε, δ) it converts
/// to at the release's δ (CKS 2020, Cor. 13; `privacy::zcdp::epsilon_for`, rounded up).
#[derive(Clone, Debug, Serialize)]
pub struct Guarantee {
    /// ε charged (pure or approximate) or converted to (Gaussian), rounded up to the next f64.
    pub epsilon: f64,
    /// The same ε exactly, as numerator/denominator.
    pub epsilon_exact: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_exact: Option<String>,
    /// ρ charged (Gaussian noise: ρ-zCDP), rounded up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho_exact: Option<String>,
}

fn exact_text(r: &num_rational::BigRational) -> String {
    format!("{}/{}", r.numer(), r.denom())
}

impl Guarantee {
    /// The guarantee of a total; a zCDP total is converted to (ε, δ) at `conversion`.
    pub fn of(total: &Total, conversion: Option<&Delta>) -> Result<Guarantee, Error> {
        let pure = |e: &num_rational::BigRational| Guarantee {
            epsilon: rational_to_f64_up(e),
            epsilon_exact: exact_text(e),
            delta: None,
            delta_exact: None,
            rho: None,
            rho_exact: None,
        };
        Ok(match total {
            Total::Pure(e) => pure(e),
            Total::Approx { eps, delta } => Guarantee {
                delta: Some(rational_to_f64_up(delta)),
                delta_exact: Some(exact_text(delta)),
                ..pure(eps)
            },
            Total::Zcdp(rho) => {
                let delta = conversion
                    .ok_or_else(|| Error::internal("a zCDP release without the delta to state it at"))?;
                Guarantee {
                    delta: Some(delta.to_f64_up()),
                    delta_exact: Some(delta.exact_string()),
                    rho: Some(rational_to_f64_up(rho)),
                    rho_exact: Some(exact_text(rho)),
                    ..pure(&epsilon_for(rho, delta))
                }
            }
        })
    }

    /// The guarantee of a mechanism's own parameter (before any accounting).
    pub fn of_mechanism(mechanism: &Mechanism) -> Guarantee {
        let total = match mechanism {
            Mechanism::Laplace(eps) => Total::Pure(eps.as_rational().clone()),
            Mechanism::Gaussian { rho, .. } => Total::Zcdp(rho.as_rational().clone()),
        };
        match Guarantee::of(&total, mechanism.delta()) {
            Ok(g) => g,
            Err(_) => unreachable!("a Gaussian mechanism carries its delta"),
        }
    }
}

/// An integer release (counts) or a real one (sums, means).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Number {
    Integer(i128),
    Real(f64),
}

#[derive(Clone, Debug, Serialize)]
pub struct BinCount {
    pub bin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    pub count: i128,
    /// The bin's share of the total (`--normalize`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proportion: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GridInfo {
    /// g = 2^exponent.
    pub exponent: i32,
    pub spacing: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BoundsInfo {
    /// The clamping bounds as used: the flags (or the private estimate) snapped outwards
    /// onto the grid.
    pub lower: f64,
    pub upper: f64,
    /// "flags", or "private" when a share of ε found them.
    pub source: &'static str,
    /// ε spent finding the bounds (included in the release's epsilon).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon_exact: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Accuracy {
    pub confidence: f64,
    /// |release − true clamped statistic| <= error_bound with probability >= confidence.
    pub error_bound: f64,
    /// "value", or "per bin" for histograms (a simultaneous bound over K bins uses β/K).
    pub scope: &'static str,
}

/// `--count-truncated`: the noisy number of persons who had rows dropped by the bounds
/// (discrete Laplace, Δ = 1 per person, at a tenth of the release's ε), so that a user sees
/// what K cost. Persons, not rows: a person's dropped rows are unbounded, their being cut is 0 or 1.
#[derive(Clone, Debug, Serialize)]
pub struct TruncatedInfo {
    pub persons: i128,
    pub epsilon: f64,
    pub epsilon_exact: String,
    /// |persons − true count| <= error_bound at the release's confidence.
    pub error_bound: f64,
}

/// What a release of keys found in the data states about the selection.
#[derive(Clone, Debug, Serialize)]
pub struct DiscoveryInfo {
    /// τ: a key is released when its noisy count is at least this.
    pub threshold: i128,
    /// δ of the selection (its part of the release's δ), rounded up and exactly.
    pub delta: f64,
    pub delta_exact: String,
    /// `--max-keys`: the most distinct keys the run would hold.
    pub max_keys: usize,
    /// The noisy test of the number of keys against `max_keys` (`query::discover::KeyCap`).
    pub key_cap: KeyCapInfo,
    pub keys_released: usize,
    /// With `--privacy-id`: what the selection counts, and its per-key share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_person: Option<PersonSelection>,
}

/// A selection that counts distinct persons per key (`query::discover`): a person's kept rows
/// fall in at most `keys_per_person` keys, so each key's count is thresholded at that share of
/// the selection's ε and δ (`epsilon` and the discovery's `delta`, both per person).
#[derive(Clone, Debug, Serialize)]
pub struct PersonSelection {
    /// `distinct persons`: a person counts once in a key, whatever their rows in it.
    pub counts: &'static str,
    pub keys_per_person: u32,
    /// ε of the selection per person, rounded up and exactly.
    pub epsilon: f64,
    pub epsilon_exact: String,
    /// Each key's share: ε/keys_per_person and δ/keys_per_person.
    pub epsilon_per_key: f64,
    pub epsilon_per_key_exact: String,
    pub delta_per_key: f64,
    pub delta_per_key_exact: String,
}

/// The key cap's test: withheld iff the noisy number of distinct keys exceeds `max_keys − margin`;
/// its share of the release's ε and δ.
#[derive(Clone, Debug, Serialize)]
pub struct KeyCapInfo {
    pub margin: i128,
    pub epsilon: f64,
    pub epsilon_exact: String,
    pub delta: f64,
    pub delta_exact: String,
}

/// One released quantile.
#[derive(Clone, Debug, Serialize)]
pub struct QuantileValue {
    pub q: f64,
    pub q_exact: String,
    pub value: f64,
    pub epsilon: f64,
    pub epsilon_exact: String,
    /// Δu: the most one neighbouring change moves any candidate's score.
    pub score_sensitivity: u128,
    /// With probability >= confidence the released candidate's rank is within this many rows
    /// of the best candidate's (permute-and-flip), or of q·n (AboveThreshold).
    pub rank_error_bound: f64,
    /// The order AboveThreshold scanned the grid in ("ascending" or "descending").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan: Option<&'static str>,
    /// Set when the data look too few for this level's ε (also printed on stderr).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// The public candidate grid of a quantile release.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateInfo {
    pub count: usize,
    pub lower: f64,
    pub upper: f64,
    /// "decimal" (the default: multiples of a round step on [L, U]), "linear" (`--resolution`:
    /// an even grid over [L, U]) or "log" (the fixed public log-scale grid, without bounds).
    pub grid: &'static str,
}

/// One noisy part of a multi-part release (or of its plan, which has no value but states each
/// part's own bound).
#[derive(Clone, Debug, Serialize)]
pub struct Part {
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_units: Option<String>,
    /// Laplace: this part's ε.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon_exact: Option<String>,
    /// Gaussian: this part's ρ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho_exact: Option<String>,
    /// Laplace: Δ₁ and Δ₁/ε.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitivity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// Gaussian: Δ₂ and σ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_sensitivity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    pub grid: GridInfo,
    /// A plan's bound for this part alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_bound: Option<f64>,
}

/// The scope of a single value's bound.
pub const VALUE: &str = "value";
/// The post-processing line of a release whose private outcome was that there is no value (a
/// bounds-free quantile too likely outside the data, no bounds found): tables show it as such.
pub const NO_VALUE: &str = "no value: the private outcome was that there is none";
/// The scope of a quantile's bound: rows of rank (how far the chosen candidate's rank may be
/// from the best candidate's), each level on its own.
pub const RANK: &str = "rank (rows), per quantile";
/// The scope of a histogram's bound: each bin on its own (a bound for all K at once uses β/K).
pub const PER_BIN: &str = "per bin";
/// The scope of a normalized histogram's bound: every bin's proportion at once.
pub const EVERY_BIN: &str = "every bin at once";

impl GridInfo {
    pub fn of(grid: Grid) -> GridInfo {
        GridInfo { exponent: grid.exponent(), spacing: grid.to_f64(&BigInt::from(1)) }
    }
}

impl BoundsInfo {
    /// Bounds given by flags, as snapped to the grid.
    pub fn of(bounds: &GridBounds) -> BoundsInfo {
        BoundsInfo {
            lower: bounds.lower_f64(),
            upper: bounds.upper_f64(),
            source: "flags",
            epsilon: None,
            epsilon_exact: None,
        }
    }
}

impl Accuracy {
    pub fn value(confidence: Confidence, error_bound: f64) -> Accuracy {
        Accuracy { confidence: confidence.level(), error_bound, scope: VALUE }
    }
}

impl Noise {
    /// The block of a release with one noise draw of calibration `noise` (or of its plan): the
    /// sensitivity and the noise's width in the statistic's units (Δ₁ and Δ₁/ε for Laplace, Δ₂
    /// and σ for Gaussian), the mechanism, and `accuracy`.
    pub fn single(noise: &Calibrated, neighbours: Neighbours, accuracy: Accuracy) -> Noise {
        let block = Noise::multi(&noise.mechanism(), neighbours, accuracy);
        match noise {
            Calibrated::Laplace(_) => Noise {
                sensitivity: Some(noise.sensitivity_value()),
                scale: Some(noise.width_value()),
                ..block
            },
            Calibrated::Gaussian { .. } => Noise {
                l2_sensitivity: Some(noise.sensitivity_value()),
                sigma: Some(noise.width_value()),
                ..block
            },
        }
    }

    /// The block of a release whose noise is in several parts (filled in by the caller), or
    /// that is not one Laplace or Gaussian draw at all: no single Δ or scale.
    pub fn multi(mechanism: &Mechanism, neighbours: Neighbours, accuracy: Accuracy) -> Noise {
        Noise {
            guarantee: Guarantee::of_mechanism(mechanism),
            neighbours: neighbours.name(),
            mechanism: mechanism.name(),
            sensitivity: None,
            scale: None,
            l2_sensitivity: None,
            sigma: None,
            grid: None,
            bounds: None,
            bounds_y: None,
            rows: None,
            accuracy,
            parts: vec![],
            conversion: mechanism.delta().cloned(),
        }
    }
}

impl Part {
    /// A drawn part: its noisy value, exactly in grid units and as a real.
    pub fn drawn(name: &'static str, noisy: &Drawn<BigInt>) -> Part {
        Part {
            value: Some(noisy.noise.grid().to_f64(&noisy.value)),
            value_units: Some(noisy.value.to_string()),
            ..Part::planned(name, &noisy.noise, None)
        }
    }

    /// A part before any draw: its calibration, and its own bound when planned.
    pub fn planned(name: &'static str, noise: &Calibrated, error_bound: Option<f64>) -> Part {
        let (sensitivity, width) = (Some(noise.sensitivity_value()), Some(noise.width_value()));
        let part = Part {
            name,
            value: None,
            value_units: None,
            epsilon: None,
            epsilon_exact: None,
            rho: None,
            rho_exact: None,
            sensitivity: None,
            scale: None,
            l2_sensitivity: None,
            sigma: None,
            grid: GridInfo::of(noise.grid()),
            error_bound,
        };
        match noise.mechanism() {
            Mechanism::Laplace(eps) => Part {
                epsilon: Some(eps.to_f64_up()),
                epsilon_exact: Some(eps.exact_string()),
                sensitivity,
                scale: width,
                ..part
            },
            Mechanism::Gaussian { rho, .. } => Part {
                rho: Some(rho.to_f64_up()),
                rho_exact: Some(rho.exact_string()),
                l2_sensitivity: sensitivity,
                sigma: width,
                ..part
            },
        }
    }

    /// The sensitivity this part's mechanism reads: Δ₁ (Laplace) or Δ₂ (Gaussian).
    pub fn sensitivity_read(&self) -> f64 {
        self.sensitivity.or(self.l2_sensitivity).unwrap_or(f64::NAN)
    }
}

impl Release {
    /// A release of `query` that spent `accounting`; its ε is the accounting's total, so the
    /// printed ε, the parts and the ledger's charge cannot disagree.
    pub fn new(
        query: &'static str,
        column: Option<String>,
        filters: Vec<String>,
        mut noise: Noise,
        accounting: Cost,
    ) -> Result<Release, Error> {
        noise.guarantee = Guarantee::of(&accounting.total()?, noise.conversion.as_ref())?;
        Ok(Release {
            query,
            column,
            filters,
            unit: Unit::Row,
            truncated: None,
            value: None,
            value_units: None,
            bins: None,
            quantiles: None,
            candidates: None,
            noise,
            discovery: None,
            post_processing: vec![],
            accounting,
            notes: vec![],
            range: None,
            warnings: vec![],
            budget: None,
            insecure_seed: false,
        })
    }
}

impl Release {
    /// See [`Published::per_person`].
    fn per_person(&mut self, unit: Unit, factor: Factor) -> Result<(), Error> {
        self.accounting =
            std::mem::replace(&mut self.accounting, Cost::sequential(vec![])).per_person(factor);
        self.noise.guarantee = Guarantee::of(&self.accounting.total()?, self.noise.conversion.as_ref())?;
        let (pure, rho) = (factor.pure, factor.rho);
        let l2 = f64::from(rho).sqrt();
        let noise = &mut self.noise;
        scale(&mut noise.sensitivity, f64::from(pure));
        scale(&mut noise.l2_sensitivity, l2);
        for part in &mut noise.parts {
            scale_exact(&mut part.epsilon, &mut part.epsilon_exact, pure);
            scale_exact(&mut part.rho, &mut part.rho_exact, rho);
            scale(&mut part.sensitivity, f64::from(pure));
            scale(&mut part.l2_sensitivity, l2);
        }
        for bounds in noise.bounds.iter_mut().chain(noise.bounds_y.iter_mut()) {
            scale_exact(&mut bounds.epsilon, &mut bounds.epsilon_exact, pure);
        }
        for q in self.quantiles.iter_mut().flatten() {
            let (mut eps, mut exact) = (Some(q.epsilon), Some(std::mem::take(&mut q.epsilon_exact)));
            scale_exact(&mut eps, &mut exact, pure);
            (q.epsilon, q.epsilon_exact) = (eps.unwrap_or(q.epsilon), exact.unwrap_or_default());
            q.score_sensitivity = q.score_sensitivity.saturating_mul(u128::from(pure));
        }
        self.unit = unit;
        Ok(())
    }
}

/// `x·by`, rounded up (these are stated budgets and sensitivities: never understated).
fn scale(x: &mut Option<f64>, by: f64) {
    if let Some(v) = x {
        let product = *v * by;
        // The exact residual of the product: positive means it was rounded down.
        *v = if v.mul_add(by, -product) > 0.0 { product.next_up() } else { product };
    }
}

/// An exact `n/d` text times a whole number, reduced, and its rounded-up value beside it.
fn scale_exact(value: &mut Option<f64>, exact: &mut Option<String>, by: u32) {
    let Some(text) = exact else { return };
    let Some((n, d)) = text.split_once('/') else { return };
    if let (Ok(n), Ok(d)) = (n.parse::<BigInt>(), d.parse::<BigInt>()) {
        let r = num_rational::BigRational::new(n * BigInt::from(by), d);
        *text = format!("{}/{}", r.numer(), r.denom());
        *value = Some(rational_to_f64_up(&r));
    }
}

/// A noisy integer as an i128, saturating (a count beyond ±1.7e38 is noise anyway).
pub fn saturating_i128(v: &BigInt) -> i128 {
    v.to_i128().unwrap_or(if v.sign() == num_bigint::Sign::Minus { i128::MIN } else { i128::MAX })
}

/// One release per public key of `--by`, plus `other`, each with the full ε (parallel
/// composition; see `query::group`).
#[derive(Clone, Debug, Serialize)]
pub struct GroupedRelease {
    pub query: &'static str,
    /// As a single release's: `null` for a count.
    pub column: Option<String>,
    /// The grouping column.
    pub by: String,
    /// ε of every group's release and of the whole (rounded up), and exactly; with ρ and δ
    /// where the releases have them.
    #[serde(flatten)]
    pub guarantee: Guarantee,
    pub neighbours: &'static str,
    #[serde(flatten)]
    pub unit: Unit,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<TruncatedInfo>,
    pub composition: &'static str,
    /// Keys found in the data (`--by COL --discover`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery: Option<DiscoveryInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub post_processing: Vec<String>,
    pub groups: Vec<Group>,
    /// The groups' costs composed in parallel (after the selection's with `--discover`);
    /// `epsilon` is its total.
    pub accounting: Cost,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSummary>,
    /// True when the noise came from `DPSTAT_INSECURE_SEED`: reproducible, and NOT private.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub insecure_seed: bool,
}

/// One group's release.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    pub key: String,
    #[serde(flatten)]
    pub release: Release,
}

impl GroupedRelease {
    /// The groups' releases composed in parallel.
    pub fn new(
        by: String,
        neighbours: Neighbours,
        composition: &'static str,
        groups: Vec<Group>,
    ) -> Result<GroupedRelease, Error> {
        let first = groups.first().ok_or_else(|| Error::internal("a grouped release without groups"))?;
        let (query, column) = (first.release.query, first.release.column.clone());
        let accounting =
            Cost::parallel(groups.iter().map(|g| g.release.accounting.clone().named(&g.key)).collect());
        GroupedRelease::with_accounting(query, column, by, neighbours, composition, groups, accounting)
    }

    /// Groups whose composition the caller states (keys found in the data: the selection, then
    /// the groups); there may be none.
    pub fn with_accounting(
        query: &'static str,
        column: Option<String>,
        by: String,
        neighbours: Neighbours,
        composition: &'static str,
        groups: Vec<Group>,
        accounting: Cost,
    ) -> Result<GroupedRelease, Error> {
        let conversion = groups.first().and_then(|g| g.release.noise.conversion.clone());
        let guarantee = Guarantee::of(&accounting.total()?, conversion.as_ref())?;
        Ok(GroupedRelease {
            query,
            column,
            by,
            guarantee,
            neighbours: neighbours.name(),
            unit: Unit::Row,
            truncated: None,
            composition,
            discovery: None,
            post_processing: vec![],
            groups,
            accounting,
            budget: None,
            insecure_seed: false,
        })
    }
}

/// What one query publishes: one release, or one per group.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one per query, built once
pub enum Published {
    One(Release),
    Grouped(GroupedRelease),
}

impl Published {
    pub fn query(&self) -> &'static str {
        match self {
            Published::One(r) => r.query,
            Published::Grouped(g) => g.query,
        }
    }

    pub fn column(&self) -> Option<String> {
        match self {
            Published::One(r) => r.column.clone(),
            Published::Grouped(g) => g.column.clone(),
        }
    }

    /// What the whole publication spent.
    pub fn accounting(&self) -> &Cost {
        match self {
            Published::One(r) => &r.accounting,
            Published::Grouped(g) => &g.accounting,
        }
    }

    /// Marks a release whose noise came from the test seed, in it and in every group.
    pub fn mark_insecure_seed(&mut self) {
        match self {
            Published::One(r) => r.insecure_seed = true,
            Published::Grouped(g) => {
                g.insecure_seed = true;
                g.groups.iter_mut().for_each(|group| group.release.insecure_seed = true);
            }
        }
    }

    /// Restates a release computed at row level on rows bounded per person as one person's:
    /// its accounting scaled by `factor` (so its ε or ρ is what was charged) and every ε, ρ and
    /// sensitivity it shows multiplied to match; the noise itself (scale, σ, the error bounds)
    /// is what it was. `composition` replaces a grouped release's parallel-composition note.
    pub fn per_person(&mut self, unit: Unit, factor: Factor, composition: &'static str) -> Result<(), Error> {
        match self {
            Published::One(r) => r.per_person(unit, factor),
            Published::Grouped(g) => {
                g.accounting =
                    std::mem::replace(&mut g.accounting, Cost::sequential(vec![])).per_person(factor);
                let conversion = g.groups.first().and_then(|x| x.release.noise.conversion.clone());
                g.guarantee = Guarantee::of(&g.accounting.total()?, conversion.as_ref())?;
                g.composition = composition;
                for group in &mut g.groups {
                    group.release.per_person(unit.clone(), factor)?;
                }
                g.unit = unit;
                Ok(())
            }
        }
    }

    /// The unit the release states.
    pub fn unit(&self) -> &Unit {
        match self {
            Published::One(r) => &r.unit,
            Published::Grouped(g) => &g.unit,
        }
    }

    /// A part spent before the release's own (`--max-rows-per-id auto`'s choice of K), added to
    /// its accounting and guarantee, and the unit that states it.
    pub fn spent_first(&mut self, part: Cost, unit: Option<Unit>) -> Result<(), Error> {
        let prepend = |accounting: &mut Cost| {
            let own = std::mem::replace(accounting, Cost::sequential(vec![]));
            *accounting = Cost::sequential(vec![part.clone(), own]);
        };
        match self {
            Published::One(r) => {
                prepend(&mut r.accounting);
                r.noise.guarantee = Guarantee::of(&r.accounting.total()?, r.noise.conversion.as_ref())?;
                if let Some(unit) = unit {
                    r.unit = unit;
                }
            }
            Published::Grouped(g) => {
                prepend(&mut g.accounting);
                let conversion = g.groups.first().and_then(|x| x.release.noise.conversion.clone());
                g.guarantee = Guarantee::of(&g.accounting.total()?, conversion.as_ref())?;
                if let Some(unit) = unit {
                    for group in &mut g.groups {
                        group.release.unit = unit.clone();
                    }
                    g.unit = unit;
                }
            }
        }
        Ok(())
    }

    /// `--count-truncated`'s noisy count, if asked for.
    pub fn truncated(&self) -> Option<&TruncatedInfo> {
        match self {
            Published::One(r) => r.truncated.as_ref(),
            Published::Grouped(g) => g.truncated.as_ref(),
        }
    }

    /// `--count-truncated`'s noisy count, beside the release.
    pub fn set_truncated(&mut self, info: TruncatedInfo) {
        match self {
            Published::One(r) => r.truncated = Some(info),
            Published::Grouped(g) => g.truncated = Some(info),
        }
    }

    pub fn set_budget(&mut self, budget: BudgetSummary) {
        match self {
            Published::One(r) => r.budget = Some(budget),
            Published::Grouped(g) => g.budget = Some(budget),
        }
    }
}
