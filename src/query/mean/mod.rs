//! **mean** — the mean of a column clamped to [L, U].
//!
//! Its accuracy bounds are in [`accuracy`].
//!
//! - replace (n public): the noisy sum with Δ = U − L, divided by the public n. This is the
//!   seeds' mean + Laplace((U − L)/(nε)), computed exactly on the grid before the division.
//!   n = 0 has no mean and is refused.
//! - add-remove (n private): ε is split into two exact halves. Each value is shifted by the
//!   midpoint m = (L + U)/2, so the shifted sum has Δ = (U − L)/2 (one row adds or removes at
//!   most half the width); the count has Δ = 1. The release is m + S̃ / max(1, C̃), clamped to
//!   [L, U]. Both steps are post-processing of two ε/2-DP releases, so the mean is ε-DP by
//!   sequential composition; the true n is never used (unlike `noisy sum / n`, which leaks n).
//!   The clamp and the max(1, ·) bias the mean towards the bounds when C̃ is small.
//!
//! In `dpstat describe` the add-remove count may be shared ([`Mean::sharing_count`]): one
//! count query of the same rows draws it, and every mean divides by that draw, which is
//! post-processing of the count's release, charged to the count; the mean then spends only
//! its shifted sum (DESIGN §6).
//!
//! Bounds are snapped outwards to the grid, the add-remove lower bound one more unit if needed
//! so that the midpoint is itself on the grid.
//!
//! With `--noise gaussian` the same parts get discrete Gaussian noise, ρ instead of ε split the
//! same way (ρ/2 each under add-remove: zCDP composes by adding ρ, Bun & Steinke 2016, Lemma
//! 2.3). Each part is a scalar, so its Δ₂ is its Δ: U − L (replace sum), (U − L)/2 (shifted
//! sum), 1 (count); each part is then ρ_part-zCDP (Canonne, Kamath, Steinke 2020, Thm 14).

pub mod accuracy;

use serde::{Deserialize, Serialize};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, ToPrimitive};
use rand::RngCore;

use crate::data::cell::{InvalidPolicy, NumberCell};
use crate::data::row::{BadCell, Fold, Row};
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::bounds::Bounds;
use crate::numeric::grid::GridBounds;
use crate::privacy::accountant::Cost;
use crate::privacy::accuracy::per_row;
use crate::privacy::laplace::Aggregate;
use crate::privacy::noise::{self, Calibrated, Drawn, Mechanism};
use crate::privacy::unit::Neighbours;
use crate::query::bounds::{self, Clamped};
use crate::query::mean::accuracy::{mean_add_remove, mean_add_remove_planned, mean_replace};
use crate::query::count::{self, SharedCount};
use crate::query::options::{self, check_invalid_policy, clamp_bounds, Clamp, Options, Setup};
use crate::query::per_id::{self, PerIdFold, Reduce};
use crate::query::statistic::{first, Context, Measured, PlanContext, Planned, Statistic};
use crate::query::sum::SumSpec;
use crate::report::release::{Accuracy, BoundsInfo, GridInfo, Noise, Number, Part, Release};

/// `dpstat mean`: a column clamped to bounds given by flags or found privately.
#[derive(Clone, Debug)]
pub struct Mean {
    column: ColumnRef,
    invalid: InvalidPolicy,
    spec: Clamp<MeanSpec>,
    /// Under add-remove, the noisy count of the same rows drawn once by a count query
    /// (`dpstat describe`): divided by instead of a count of the mean's own, and not charged here.
    shared_count: Option<SharedCount>,
    /// `--total-per-id` or `--average-per-id`: the mean over persons of one clamped value each
    /// (`query::per_id`); `spec` then holds the bounds of those values.
    per_id: Option<Reduce>,
}

impl Statistic for Mean {
    const KINDS: &'static [&'static str] = &["mean"];
    type Fold = Clamped<MeanFold>;

    fn new(_: &str, options: Options, setup: &Setup) -> Result<Mean, Error> {
        check_invalid_policy(options.invalid, setup)?;
        let column = setup.column(&options)?;
        if let Some(per_id) = options.per_id {
            let bounds = match per_id.total_bounds()? {
                Some(bounds) => {
                    per_id::total::refuse_row_bounds("mean", options.has_row_bounds())?;
                    bounds
                }
                None => per_id::average::bounds(options.lower, options.upper, options.bounds_eps.is_some())?,
            };
            let spec = Clamp::Given(MeanSpec::new(bounds, setup.neighbours, setup.mechanism)?);
            let per_id = Some(per_id.reduce());
            return Ok(Mean { column, invalid: options.invalid, spec, shared_count: None, per_id });
        }
        let spec = match clamp_bounds("mean", &options, setup)? {
            Clamp::Given(b) => Clamp::Given(MeanSpec::new(b, setup.neighbours, setup.mechanism)?),
            Clamp::Private { bounds_eps, rest } => {
                let laplace = Mechanism::Laplace(rest.clone());
                bounds::check_every_outcome("mean", &rest, |b| MeanSpec::new(b, setup.neighbours, &laplace).map(drop))?;
                Clamp::Private { bounds_eps, rest }
            }
        };
        options::refuse_filtered_replace(setup, "mean")?;
        options::refuse_grouped_replace(setup, "mean")?;
        Ok(Mean { column, invalid: options.invalid, spec, shared_count: None, per_id: None })
    }

    fn workload_keys(_: &Options) -> Option<&'static [&'static str]> {
        Some(&["column", "lower", "upper", "invalid", "total_per_id", "average_per_id"])
    }

    fn name(&self) -> &'static str {
        "mean"
    }

    fn per_id(&self) -> bool {
        self.per_id.is_some()
    }

    fn column(&self) -> Option<&ColumnRef> {
        Some(&self.column)
    }

    fn fold(&self, indices: &[usize]) -> Clamped<MeanFold> {
        let cell = NumberCell { index: first(indices), invalid: self.invalid };
        match (&self.spec, self.per_id) {
            (Clamp::Given(spec), Some(reduce)) => Clamped::PerId(PerIdFold::new(cell, reduce, *spec.bounds())),
            _ => self.spec.fold(cell, MeanFold::new),
        }
    }

    fn measure(&self, fold: Clamped<MeanFold>, cx: &Context, rng: &mut dyn RngCore) -> Result<Measured<Mean>, Error> {
        Ok(Measured::Release(match (fold, &self.spec) {
            (Clamped::Given(fold), Clamp::Given(spec)) => {
                self.release(cx, spec, cx.mechanism, fold.aggregate(), rng)?
            }
            (Clamped::PerId(fold), Clamp::Given(spec)) => {
                let fold = fold.finish();
                let aggregate = spec.aggregate(spec.shift(fold.total, fold.persons), fold.persons);
                let mut release = self.release(cx, spec, cx.mechanism, aggregate, rng)?;
                let note = match fold.reduce {
                    Reduce::Total => per_id::total::NOTE_MEAN,
                    Reduce::Average => per_id::average::NOTE,
                };
                release.post_processing.insert(0, note.into());
                release
            }
            (Clamped::Private(fold), Clamp::Private { bounds_eps, rest }) => {
                let found = bounds::choose(&fold, bounds_eps, rng).ok_or_else(|| {
                    bounds::withheld("mean", &self.column.label(), cx.mechanism.epsilon(), bounds_eps)
                })?;
                let laplace = Mechanism::Laplace(rest.clone());
                let spec = MeanSpec::new(found.bounds, cx.neighbours, &laplace)?;
                let sum = fold.clamped_sum_units(&found.bounds, spec.bounds().grid);
                let aggregate = spec.aggregate(spec.shift(sum, fold.rows()), fold.rows());
                bounds::annotate(self.release(cx, &spec, &laplace, aggregate, rng)?, &found)?
            }
            _ => return Err(Error::internal("a mean's fold does not match its bounds")),
        }))
    }

    fn plan(&self, cx: &PlanContext) -> Result<Planned, Error> {
        let Clamp::Given(spec) = &self.spec else { return Err(options::unplannable()) };
        let rows = cx.rows.ok_or_else(|| {
            Error::usage(
                "dpstat plan mean needs --rows N: a mean's error depends on the number of rows \
                 (the public n under replace, the noisy count under add-remove); give the size \
                 you expect, e.g. --rows 1000",
            )
        })?;
        let parts = spec.parts(cx.mechanism);
        let bounds = Some(BoundsInfo::of(spec.bounds()));
        let noise = match spec.aggregate(0, rows) {
            MeanAggregate::Replace { sum, n } => {
                let noise = Calibrated::of(&sum, &parts[0]);
                let accuracy = Accuracy::value(cx.confidence, mean_replace(&noise, n, cx.confidence));
                Noise {
                    grid: Some(GridInfo::of(noise.grid())),
                    bounds,
                    ..per_row_noise(Noise::single(&noise, cx.neighbours, accuracy), n)
                }
            }
            MeanAggregate::AddRemove { shifted_sum, count, .. } => {
                let shifted = Calibrated::of(&shifted_sum, &parts[0]);
                let count = Calibrated::of(&count, &parts[1]);
                let width = spec.bounds().width_units();
                let half_beta = cx.confidence.beta() / 2.0;
                let bound = mean_add_remove_planned(&shifted, &count, rows, width, cx.confidence);
                Noise {
                    grid: Some(GridInfo::of(shifted.grid())),
                    bounds,
                    parts: vec![
                        Part::planned("shifted_sum", &shifted, Some(shifted.error_bound(half_beta))),
                        Part::planned("count", &count, Some(count.error_bound(half_beta))),
                    ],
                    ..Noise::multi(cx.mechanism, cx.neighbours, Accuracy::value(cx.confidence, bound))
                }
            }
        };
        let assumption = match cx.neighbours {
            Neighbours::Replace => format!(
                "n = {rows} rows (--rows); under replace n is public and the release divides by the \
                 file's own row count"
            ),
            Neighbours::AddRemove => format!(
                "the noisy count comes out at {rows} (--rows) and the sum at its worst case (every value \
                 at a bound); a release states its own bound from its noisy parts, for most data a \
                 little smaller"
            ),
        };
        Ok(Planned { noise: Noise { rows: Some(rows), ..noise }, bins: None, assumptions: vec![assumption] })
    }
}

impl Mean {
    /// The share of `mechanism` (the mean's whole ε) its add-remove noisy count would get: what a
    /// shared count is given for this mean (its bounds' share, when found privately, is kept).
    /// None under replace, which has no count.
    pub fn count_part(&self, mechanism: &Mechanism, neighbours: Neighbours) -> Option<Mechanism> {
        match (&self.spec, neighbours) {
            (_, Neighbours::Replace) => None,
            (Clamp::Given(spec), _) => spec.parts(mechanism).get(1).cloned(),
            (Clamp::Private { rest, .. }, _) => Some(Mechanism::Laplace(rest.clone()).split(2)),
        }
    }

    /// This mean divides by `count`, the noisy count of the same rows drawn once elsewhere, and
    /// spends only its shifted sum (and its bounds' share): [`Mean::count_part`] less.
    pub fn sharing_count(self, count: SharedCount) -> Mean {
        Mean { shared_count: Some(count), ..self }
    }

    /// Draws the noise of the mean's parts with `mechanism` (split as [`MeanSpec::parts`]) and
    /// builds the release.
    fn release(
        &self,
        cx: &Context,
        spec: &MeanSpec,
        mechanism: &Mechanism,
        aggregate: MeanAggregate,
        rng: &mut dyn RngCore,
    ) -> Result<Release, Error> {
        let parts = spec.parts(mechanism);
        let bounds = spec.bounds();
        match aggregate {
            MeanAggregate::Replace { n: 0, .. } => Err(Error::usage(format!(
                "{}: mean under --neighbours replace needs at least one row (n = 0 has no mean)",
                cx.source
            ))),
            MeanAggregate::Replace { sum, n } => {
                let noisy = noise::draw(&sum, &parts[0], rng);
                let (value, clamped) = replace_release(&noisy.value, n, bounds);
                let accuracy = Accuracy::value(cx.confidence, mean_replace(&noisy.noise, n, cx.confidence));
                let mut post = vec![format!("noisy sum divided by the public row count n = {n}")];
                post.extend(clamped.then(|| clamp_note(bounds)));
                let noise = Noise {
                    grid: Some(GridInfo::of(noisy.noise.grid())),
                    bounds: Some(BoundsInfo::of(bounds)),
                    rows: Some(n),
                    ..per_row_noise(Noise::single(&noisy.noise, cx.neighbours, accuracy), n)
                };
                let release = cx.release(self, noise, parts[0].cost("sum"))?;
                Ok(Release {
                    value: Some(Number::Real(value)),
                    value_units: Some(noisy.value.to_string()),
                    post_processing: post,
                    range: Some(range(bounds)),
                    ..release
                })
            }
            MeanAggregate::AddRemove { shifted_sum, count, midpoint } => {
                let shifted = noise::draw(&shifted_sum, &parts[0], rng);
                match &self.shared_count {
                    Some(shared) => {
                        self.add_remove_release(cx, &parts[0], &shifted, shared.get()?, midpoint, bounds, true)
                    }
                    None => {
                        let count = noise::draw(&count, &parts[1], rng);
                        self.add_remove_release(cx, mechanism, &shifted, &count, midpoint, bounds, false)
                    }
                }
            }
        }
    }

    /// midpoint + noisy shifted sum / max(1, noisy count), clamped, with its corner bound. A
    /// `shared` count is listed as the part `shared_count` and left out of the cost (its query
    /// is charged for it); `mechanism` is then the shifted sum's alone.
    #[allow(clippy::too_many_arguments)]
    fn add_remove_release(
        &self,
        cx: &Context,
        mechanism: &Mechanism,
        shifted: &Drawn<BigInt>,
        count: &Drawn<BigInt>,
        midpoint: i128,
        bounds: &GridBounds,
        shared: bool,
    ) -> Result<Release, Error> {
        let (value, clamped) = add_remove_release(&shifted.value, &count.value, midpoint, bounds);
        let error_bound = mean_add_remove(
            &shifted.noise,
            &count.noise,
            &shifted.value,
            &count.value,
            bounds.width_units(),
            cx.confidence,
        );
        let midpoint = shifted.noise.grid().to_f64(&BigInt::from(midpoint));
        let mut post = vec![if shared {
            format!(
                "midpoint {midpoint} + noisy shifted sum / max(1, shared noisy count): the count is \
                 drawn once for every column, released and charged as its own query"
            )
        } else {
            format!("midpoint {midpoint} + noisy shifted sum / max(1, noisy count)")
        }];
        post.extend(clamped.then(|| clamp_note(bounds)));
        let count_part = if shared { "shared_count" } else { "count" };
        let noise = Noise {
            grid: Some(GridInfo::of(shifted.noise.grid())),
            bounds: Some(BoundsInfo::of(bounds)),
            parts: vec![Part::drawn("shifted_sum", shifted), Part::drawn(count_part, count)],
            ..Noise::multi(mechanism, cx.neighbours, Accuracy::value(cx.confidence, error_bound))
        };
        let mut costs = vec![shifted.noise.mechanism().cost("shifted_sum")];
        if !shared {
            costs.push(count.noise.mechanism().cost("count"));
        }
        let cost = Cost::sequential(costs);
        let release = cx.release(self, noise, cost)?;
        Ok(Release { value: Some(Number::Real(value)), post_processing: post, range: Some(range(bounds)), ..release })
    }
}

/// A mean's noise block under replace: the sum's sensitivity and noise width over the public n,
/// rounded up.
fn per_row_noise(noise: Noise, n: u64) -> Noise {
    let over_n = |v: Option<f64>| v.map(|v| per_row(v, n));
    Noise {
        sensitivity: over_n(noise.sensitivity),
        scale: over_n(noise.scale),
        l2_sensitivity: over_n(noise.l2_sensitivity),
        sigma: over_n(noise.sigma),
        ..noise
    }
}

/// Every mean lies in its (public, snapped) clamping bounds: the release is clamped into them.
fn range(bounds: &GridBounds) -> [f64; 2] {
    [bounds.lower_f64(), bounds.upper_f64()]
}

fn clamp_note(bounds: &GridBounds) -> String {
    format!(
        "clamped into [{}, {}] (biases the mean towards the bounds)",
        bounds.lower_f64(),
        bounds.upper_f64()
    )
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MeanSpec {
    /// The plain clamped sum (Δ = U − L) and the public n.
    Replace(SumSpec),
    /// Midpoint-shifted sum with ε/2 (or ρ/2) and noisy count with ε/2 (or ρ/2).
    AddRemove { bounds: GridBounds, midpoint: i128 },
}

/// The exact parts of a mean, each with its sensitivity.
#[derive(Clone, Debug, PartialEq)]
pub enum MeanAggregate {
    Replace { sum: Aggregate<i128>, n: u64 },
    AddRemove { shifted_sum: Aggregate<i128>, count: Aggregate<i128>, midpoint: i128 },
}

impl MeanSpec {
    pub fn new(bounds: Bounds, neighbours: Neighbours, mechanism: &Mechanism) -> Result<MeanSpec, Error> {
        bounds.check_printable()?;
        match neighbours {
            Neighbours::Replace => SumSpec::new(bounds, Neighbours::Replace, mechanism).map(MeanSpec::Replace),
            Neighbours::AddRemove => {
                let half_width = bounds.width() / BigInt::from(2);
                let grid = mechanism.split(2).grid(&half_width);
                let bounds = GridBounds::snap(&bounds, grid, true)?;
                let midpoint = (bounds.lower + bounds.upper) / 2;
                Ok(MeanSpec::AddRemove { bounds, midpoint })
            }
        }
    }

    /// The mechanism of each noisy part with its share of ε or ρ, in the order the parts are
    /// released.
    pub fn parts(&self, mechanism: &Mechanism) -> Vec<Mechanism> {
        match self {
            MeanSpec::Replace(_) => vec![mechanism.clone()],
            MeanSpec::AddRemove { .. } => vec![mechanism.split(2), mechanism.split(2)],
        }
    }

    pub fn bounds(&self) -> &GridBounds {
        match self {
            MeanSpec::Replace(sum) => &sum.bounds,
            MeanSpec::AddRemove { bounds, .. } => bounds,
        }
    }

    /// One row's contribution in grid units (shifted by the midpoint under add-remove).
    #[inline]
    pub fn units(&self, x: f64) -> i128 {
        self.from_grid_units(self.bounds().units(x))
    }

    /// [`MeanSpec::units`] from the value's units on [`MeanSpec::bounds`] (`bounds().units(x)`),
    /// so that a scan can convert a value once for every query with the same grid and bounds.
    #[inline]
    pub fn from_grid_units(&self, units: i128) -> i128 {
        match self {
            MeanSpec::Replace(_) => units,
            MeanSpec::AddRemove { midpoint, .. } => units - midpoint,
        }
    }

    /// The total of [`MeanSpec::units`] from the plain clamped sum (in grid units) of n rows.
    pub fn shift(&self, sum: i128, n: u64) -> i128 {
        match self {
            MeanSpec::Replace(_) => sum,
            MeanSpec::AddRemove { midpoint, .. } => sum - n as i128 * midpoint,
        }
    }

    /// The parts from the accumulated `total` of [`MeanSpec::units`] over `n` rows.
    pub fn aggregate(&self, total: i128, n: u64) -> MeanAggregate {
        match self {
            MeanSpec::Replace(sum) => MeanAggregate::Replace { sum: sum.aggregate(total), n },
            MeanSpec::AddRemove { bounds, midpoint } => MeanAggregate::AddRemove {
                // Shifted values lie in [−h, h] with h = (U − L)/2 (an integer: even span); a
                // scalar, so Δ₂ = Δ₁ = h.
                shifted_sum: Aggregate::scalar(total, bounds.width_units() / 2, bounds.grid),
                count: count::aggregate(n),
                midpoint: *midpoint,
            },
        }
    }

    /// Aggregates a sequence of values, as [`MeanFold`] does row by row.
    pub fn mean(&self, values: impl IntoIterator<Item = f64>) -> MeanAggregate {
        let (mut total, mut n) = (0i128, 0u64);
        for x in values {
            total += self.units(x);
            n += 1;
        }
        self.aggregate(total, n)
    }
}

/// The running exact (shifted) sum and the row count of one column.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MeanFold {
    pub spec: MeanSpec,
    pub cell: NumberCell,
    pub total: i128,
    pub rows: u64,
}

impl MeanFold {
    pub fn new(spec: MeanSpec, cell: NumberCell) -> MeanFold {
        MeanFold { spec, cell, total: 0, rows: 0 }
    }
    pub fn aggregate(&self) -> MeanAggregate {
        self.spec.aggregate(self.total, self.rows)
    }

    /// Folds one value, as [`Fold::row`] does with a row's number.
    #[inline]
    pub fn add(&mut self, x: f64) {
        self.add_grid_units(self.spec.bounds().units(x));
    }

    /// Folds one value given as its units on the spec's bounds (`spec.bounds().units(x)`).
    #[inline]
    pub fn add_grid_units(&mut self, units: i128) {
        self.total += self.spec.from_grid_units(units);
        self.rows += 1;
    }
}

impl Fold for MeanFold {
    #[inline(always)]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        if let Some(x) = self.cell.read(row)? {
            self.add(x);
        }
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        self.total += other.total;
        self.rows += other.rows;
    }
    fn widest_column(&self) -> Option<usize> {
        Some(self.cell.index)
    }
}

/// Post-processing under replace: noisy sum / n, clamped to the bounds. Returns the value and
/// whether the clamp changed it.
pub fn replace_release(noisy_sum: &BigInt, n: u64, bounds: &GridBounds) -> (f64, bool) {
    let sum = BigRational::from_integer(noisy_sum.clone());
    clamp_units(sum / BigInt::from(n.max(1)), bounds)
}

/// Post-processing under add-remove: m + S̃ / max(1, C̃), clamped to the bounds.
pub fn add_remove_release(
    noisy_shifted: &BigInt,
    noisy_count: &BigInt,
    midpoint: i128,
    bounds: &GridBounds,
) -> (f64, bool) {
    let count = noisy_count.clone().max(BigInt::one());
    let mean_units =
        BigRational::from_integer(BigInt::from(midpoint)) + BigRational::new(noisy_shifted.clone(), count);
    clamp_units(mean_units, bounds)
}

fn clamp_units(units: BigRational, bounds: &GridBounds) -> (f64, bool) {
    let lower = BigRational::from_integer(BigInt::from(bounds.lower));
    let upper = BigRational::from_integer(BigInt::from(bounds.upper));
    let clamped = units.clone().max(lower).min(upper);
    let changed = clamped != units;
    let value = (clamped * bounds.grid.spacing()).to_f64().unwrap_or(f64::NAN);
    (value, changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::grid::Grid;
    use crate::numeric::bounds::Finite;
    use crate::query::statistic::{neighbouring, Neighbouring};
    use crate::query::sum::tests::{awkward_value, bounds_and_eps, mechanisms};
    use proptest::prelude::*;

    fn parts(a: &MeanAggregate) -> Vec<(i128, i128, i128)> {
        let of = |p: &Aggregate<i128>| (p.value, p.sensitivity, p.l2_squared);
        match a {
            MeanAggregate::Replace { sum, .. } => vec![of(sum)],
            MeanAggregate::AddRemove { shifted_sum, count, .. } => vec![of(shifted_sum), of(count)],
        }
    }

    proptest! {
        /// Each part of the mean moves by at most its own Δ (and Δ₂) on neighbouring datasets
        /// (add and remove under add-remove; replace under replace, where n is fixed), on the
        /// grids of both mechanisms.
        #[test]
        fn each_part_moves_by_at_most_its_sensitivity(
            (bounds, eps) in bounds_and_eps(),
            rows in proptest::collection::vec(awkward_value(), 1..40),
            other in awkward_value(),
            at in any::<prop::sample::Index>(),
        ) {
            let i = at.index(rows.len());
            let Neighbouring { removed, added, changed } = neighbouring(&rows, other, i);
            for (neighbours, others) in [
                (Neighbours::AddRemove, vec![removed, added]),
                (Neighbours::Replace, vec![changed]),
            ] {
                for mechanism in mechanisms(&eps) {
                    let Ok(spec) = MeanSpec::new(bounds, neighbours, &mechanism) else { continue };
                    let base = parts(&spec.mean(rows.iter().copied()));
                    for other_rows in &others {
                        let moved = parts(&spec.mean(other_rows.iter().copied()));
                        for ((v, delta, delta2), (w, _, _)) in base.iter().zip(moved) {
                            prop_assert!((v - w).abs() <= *delta, "moved {} > Δ {}", (v - w).abs(), delta);
                            prop_assert!((v - w) * (v - w) <= *delta2, "moved {} > Δ₂", (v - w).abs());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn add_remove_shifts_by_midpoint_and_halves_epsilon() {
        let b = Bounds::new(Finite::from_f64(0.0).unwrap(), Finite::from_f64(10.0).unwrap()).unwrap();
        let eps = Mechanism::Laplace("1".parse().unwrap());
        let spec = MeanSpec::new(b, Neighbours::AddRemove, &eps).unwrap();
        let MeanAggregate::AddRemove { shifted_sum, count, midpoint } = spec.mean([0.0, 10.0, 5.0]) else {
            panic!("add-remove gives two parts")
        };
        assert_eq!(shifted_sum.value, 0);
        assert_eq!(count.value, 3);
        assert_eq!(count.sensitivity, 1);
        // (U − L)/2 = 5 over ε/2: Δ/ε = 10, grid 2^(3 − 40); Δ in units 5·2^37.
        assert_eq!(shifted_sum.grid.exponent(), -37);
        assert_eq!(shifted_sum.sensitivity, 5i128 << 37);
        assert_eq!(midpoint, 5i128 << 37);
        let halves = spec.parts(&eps);
        let total = Cost::sequential(halves.iter().map(|m| m.cost("part")).collect());
        assert_eq!(total.spend().unwrap(), eps.spend());
    }

    #[test]
    fn post_processing_clamps_and_never_divides_by_zero() {
        let b = Bounds::new(Finite::from_f64(0.0).unwrap(), Finite::from_f64(8.0).unwrap()).unwrap();
        let gb = GridBounds::snap(&b, Grid::UNIT, true).unwrap();
        assert_eq!(add_remove_release(&BigInt::from(2), &BigInt::from(-5), 4, &gb), (6.0, false));
        assert_eq!(add_remove_release(&BigInt::from(100), &BigInt::from(2), 4, &gb), (8.0, true));
        assert_eq!(replace_release(&BigInt::from(12), 4, &gb), (3.0, false));
        assert_eq!(replace_release(&BigInt::from(-12), 4, &gb), (0.0, true));
    }
}
