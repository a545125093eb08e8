//! **sum** — the sum of a column clamped to [L, U], exact on a power-of-two grid.
//!
//! Privacy unit and sensitivity, with L and U snapped outwards to the grid (in grid units):
//! - add-remove: one row added or removed moves the sum by its clamped value, so
//!   Δ = max(|L|, |U|);
//! - replace: one row's value changes within [L, U], so Δ = U − L;
//! - replace with `--by` groups: a changed row can leave one group and enter another, which
//!   removes up to max(|L|, |U|) from one group's sum and adds up to max(|L|, |U|) to another's,
//!   so the L1 sensitivity of the vector of group sums is Δ = 2·max(|L|, |U|) (>= U − L, which
//!   covers a change within one group). See `query::group`.
//!
//! Every value is rounded to the grid and summed in i128, so the aggregate is exact and its
//! sensitivity holds with no floating-point error term (Casacuberta, Shoemate, Vadhan, Wagaman
//! 2022). Discrete Laplace noise of scale Δ/ε in grid units then gives ε-DP (Dwork, McSherry,
//! Nissim, Smith 2006; the exact sampler of Canonne, Kamath, Steinke 2020).
//!
//! With `--noise gaussian`: discrete Gaussian noise of variance Δ₂²/(2ρ) gives ρ-zCDP (Canonne,
//! Kamath, Steinke 2020, Thm 14). One sum is a scalar, so Δ₂ = Δ: max(|L|, |U|) (add-remove),
//! U − L (replace). With `--by` under replace the vector of group sums moves by a removal in one
//! group and an addition in another (L2 at most √2·max(|L|, |U|)) or by a change within one
//! group (at most U − L), so Δ₂² = max(2·max(|L|, |U|)², (U − L)²). The grid is chosen from Δ₂²
//! and ρ ([`Mechanism::grid_l2`]).

use serde::{Deserialize, Serialize};
use num_bigint::BigInt;
use rand::RngCore;

use crate::data::cell::{InvalidPolicy, NumberCell};
use crate::data::row::{BadCell, Fold, Row};
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::bounds::Bounds;
use crate::numeric::grid::GridBounds;
use crate::privacy::accuracy;
use crate::privacy::laplace::Aggregate;
use crate::privacy::noise::{self, Calibrated, Drawn, Mechanism};
use crate::privacy::unit::Neighbours;
use crate::query::bounds::{self, Clamped};
use crate::query::options::{self, check_invalid_policy, clamp_bounds, Clamp, Options, Setup};
use crate::query::per_id::{self, PerIdFold, Reduce};
use crate::query::statistic::{first, Context, Measured, PlanContext, Planned, Statistic};
use crate::report::release::{Accuracy, BoundsInfo, GridInfo, Noise, Number, Release};

/// `dpstat sum`: a column clamped to bounds given by flags or found privately.
#[derive(Clone, Debug)]
pub struct Sum {
    column: ColumnRef,
    invalid: InvalidPolicy,
    spec: Clamp<SumSpec>,
    /// `--total-per-id L,U`: the sum of each person's total clamped to [L, U]
    /// (`query::per_id::total`); `spec` then holds those bounds.
    per_id: bool,
}

impl Statistic for Sum {
    const KINDS: &'static [&'static str] = &["sum"];
    type Fold = Clamped<SumFold>;

    fn new(_: &str, options: Options, setup: &Setup) -> Result<Sum, Error> {
        check_invalid_policy(options.invalid, setup)?;
        let column = setup.column(&options)?;
        if let Some(bounds) = options.per_id.map(|p| p.total_bounds()).transpose()?.flatten() {
            per_id::total::refuse_row_bounds("sum", options.has_row_bounds())?;
            let spec = SumSpec::with_groups(bounds, setup.neighbours, setup.mechanism, setup.grouped())?;
            return Ok(Sum { column, invalid: options.invalid, spec: Clamp::Given(spec), per_id: true });
        }
        let spec = match clamp_bounds("sum", &options, setup)? {
            Clamp::Given(b) => Clamp::Given(
                SumSpec::with_groups(b, setup.neighbours, setup.mechanism, setup.grouped())?,
            ),
            Clamp::Private { bounds_eps, rest } => {
                let laplace = Mechanism::Laplace(rest.clone());
                bounds::check_every_outcome("sum", &rest, |b| SumSpec::new(b, setup.neighbours, &laplace).map(drop))?;
                Clamp::Private { bounds_eps, rest }
            }
        };
        options::refuse_filtered_replace(setup, "sum")?;
        Ok(Sum { column, invalid: options.invalid, spec, per_id: false })
    }

    fn workload_keys(_: &Options) -> Option<&'static [&'static str]> {
        Some(&["column", "lower", "upper", "invalid", "total_per_id"])
    }

    fn name(&self) -> &'static str {
        "sum"
    }

    fn per_id(&self) -> bool {
        self.per_id
    }

    fn column(&self) -> Option<&ColumnRef> {
        Some(&self.column)
    }

    fn fold(&self, indices: &[usize]) -> Clamped<SumFold> {
        let cell = NumberCell { index: first(indices), invalid: self.invalid };
        match &self.spec {
            Clamp::Given(spec) if self.per_id => Clamped::PerId(PerIdFold::new(cell, Reduce::Total, spec.bounds)),
            _ => self.spec.fold(cell, SumFold::new),
        }
    }

    fn measure(&self, fold: Clamped<SumFold>, cx: &Context, rng: &mut dyn RngCore) -> Result<Measured<Sum>, Error> {
        Ok(Measured::Release(match (fold, &self.spec) {
            (Clamped::Given(fold), Clamp::Given(spec)) => {
                let noisy = noise::draw(&fold.aggregate(), cx.mechanism, rng);
                self.release(cx, &noisy, &spec.bounds)?
            }
            (Clamped::PerId(fold), Clamp::Given(spec)) => {
                let noisy = noise::draw(&spec.aggregate(fold.finish().total), cx.mechanism, rng);
                let mut release = self.release(cx, &noisy, &spec.bounds)?;
                release.post_processing.insert(0, per_id::total::NOTE_SUM.into());
                release
            }
            (Clamped::Private(fold), Clamp::Private { bounds_eps, rest }) => {
                let found = bounds::choose(&fold, bounds_eps, rng).ok_or_else(|| {
                    bounds::withheld("sum", &self.column.label(), cx.mechanism.epsilon(), bounds_eps)
                })?;
                let spec = SumSpec::new(found.bounds, cx.neighbours, &Mechanism::Laplace(rest.clone()))?;
                let total = fold.clamped_sum_units(&found.bounds, spec.bounds.grid);
                let noisy = noise::draw(&spec.aggregate(total), &Mechanism::Laplace(rest.clone()), rng);
                bounds::annotate(self.release(cx, &noisy, &spec.bounds)?, &found)?
            }
            _ => return Err(Error::internal("a sum's fold does not match its bounds")),
        }))
    }

    fn plan(&self, cx: &PlanContext) -> Result<Planned, Error> {
        let Clamp::Given(spec) = &self.spec else { return Err(options::unplannable()) };
        let noise = Calibrated::of(&spec.aggregate(0), cx.mechanism);
        let accuracy = Accuracy::value(cx.confidence, accuracy::single(&noise, cx.confidence));
        let noise = Noise {
            grid: Some(GridInfo::of(noise.grid())),
            bounds: Some(BoundsInfo::of(&spec.bounds)),
            ..Noise::single(&noise, cx.neighbours, accuracy)
        };
        Ok(Planned { noise, bins: None, assumptions: vec![] })
    }
}

impl Sum {
    /// The noisy grid multiple, with the noise it was drawn with.
    fn release(&self, cx: &Context, noisy: &Drawn<BigInt>, bounds: &GridBounds) -> Result<Release, Error> {
        let accuracy = Accuracy::value(cx.confidence, accuracy::single(&noisy.noise, cx.confidence));
        let noise = Noise {
            grid: Some(GridInfo::of(noisy.noise.grid())),
            bounds: Some(BoundsInfo::of(bounds)),
            ..Noise::single(&noisy.noise, cx.neighbours, accuracy)
        };
        let release = cx.release(self, noise, noisy.noise.mechanism().cost("sum"))?;
        Ok(Release {
            value: Some(Number::Real(noisy.noise.grid().to_f64(&noisy.value))),
            value_units: Some(noisy.value.to_string()),
            ..release
        })
    }
}

/// A validated sum: bounds on the grid chosen for this Δ and ε.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SumSpec {
    pub bounds: GridBounds,
    pub neighbours: Neighbours,
    /// One sum per `--by` group: under replace, Δ is the L1 sensitivity across the groups.
    pub across_groups: bool,
}

impl SumSpec {
    /// Chooses the grid from the real-valued Δ of the flags and the mechanism's ε or ρ, then
    /// snaps the bounds. Fails (before any data is read) when the bounds do not fit the grid in
    /// 2^62 units.
    pub fn new(bounds: Bounds, neighbours: Neighbours, mechanism: &Mechanism) -> Result<SumSpec, Error> {
        SumSpec::with_groups(bounds, neighbours, mechanism, false)
    }

    /// As [`SumSpec::new`]; with `across_groups`, for one sum per `--by` group.
    pub fn with_groups(
        bounds: Bounds,
        neighbours: Neighbours,
        mechanism: &Mechanism,
        across_groups: bool,
    ) -> Result<SumSpec, Error> {
        bounds.check_printable()?;
        let (max_abs, width) = (bounds.max_abs(), bounds.width());
        let (delta, l2_squared) = match (neighbours, across_groups) {
            (Neighbours::AddRemove, _) => (max_abs.clone(), &max_abs * &max_abs),
            (Neighbours::Replace, false) => (width.clone(), &width * &width),
            (Neighbours::Replace, true) => {
                (&max_abs * BigInt::from(2), (&max_abs * &max_abs * BigInt::from(2)).max(&width * &width))
            }
        };
        let grid = mechanism.grid_l2(&delta, &l2_squared);
        let bounds = GridBounds::snap(&bounds, grid, false)?;
        Ok(SumSpec { bounds, neighbours, across_groups })
    }

    /// Δ in grid units for this privacy unit.
    pub fn sensitivity(&self) -> i128 {
        match (self.neighbours, self.across_groups) {
            (Neighbours::AddRemove, _) => self.bounds.max_abs_units(),
            (Neighbours::Replace, false) => self.bounds.width_units(),
            // <= 2^63: bounds are at most 2^62 units.
            (Neighbours::Replace, true) => 2 * self.bounds.max_abs_units(),
        }
    }

    /// Δ₂² in grid units² (the Gaussian mechanism's): Δ² for one sum; across `--by` groups under
    /// replace, max(2·max(|L|, |U|)², (U − L)²) (module comment). At most 2^126: bounds are at
    /// most 2^62 units.
    pub fn l2_squared(&self) -> i128 {
        let (m, w) = (self.bounds.max_abs_units(), self.bounds.width_units());
        match (self.neighbours, self.across_groups) {
            (Neighbours::AddRemove, _) => m * m,
            (Neighbours::Replace, false) => w * w,
            (Neighbours::Replace, true) => (2 * m * m).max(w * w),
        }
    }

    /// One row's contribution: the value clamped and rounded to the grid, in grid units.
    #[inline]
    pub fn units(&self, x: f64) -> i128 {
        self.bounds.units(x)
    }

    /// The exact sum of `total` grid units with its sensitivity.
    pub fn aggregate(&self, total: i128) -> Aggregate<i128> {
        Aggregate { value: total, sensitivity: self.sensitivity(), l2_squared: self.l2_squared(), grid: self.bounds.grid }
    }

    /// Sums a sequence of values, as [`SumFold`] does row by row.
    pub fn sum(&self, values: impl IntoIterator<Item = f64>) -> Aggregate<i128> {
        self.aggregate(values.into_iter().map(|x| self.units(x)).sum())
    }
}

/// The running exact sum of one column. i128 cannot overflow: each row adds at most 2^62 units.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SumFold {
    pub spec: SumSpec,
    pub cell: NumberCell,
    pub total: i128,
}

impl SumFold {
    pub fn new(spec: SumSpec, cell: NumberCell) -> SumFold {
        SumFold { spec, cell, total: 0 }
    }
    pub fn aggregate(&self) -> Aggregate<i128> {
        self.spec.aggregate(self.total)
    }

    /// Folds one value, as [`Fold::row`] does with a row's number.
    #[inline]
    pub fn add(&mut self, x: f64) {
        self.total += self.spec.units(x);
    }

    /// Folds one value given as its units on the spec's bounds (`spec.bounds.units(x)`, which
    /// is [`SumSpec::units`]).
    #[inline]
    pub fn add_grid_units(&mut self, units: i128) {
        self.total += units;
    }
}

impl Fold for SumFold {
    #[inline(always)]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        if let Some(x) = self.cell.read(row)? {
            self.add(x);
        }
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        self.total += other.total;
    }
    fn widest_column(&self) -> Option<usize> {
        Some(self.cell.index)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::numeric::bounds::Finite;
    use crate::privacy::epsilon::Epsilon;
    use proptest::prelude::*;

    /// Values that break float sums: huge, signed zeros, subnormals, around 2^53.
    pub fn awkward_value() -> impl Strategy<Value = f64> {
        prop_oneof![
            -1e6f64..1e6,
            Just(1e308),
            Just(-1e308),
            Just(f64::MAX),
            Just(0.0),
            Just(-0.0),
            Just(5e-324),
            Just(-2.2250738585072014e-308),
            Just(9007199254740993.0),
            Just(9007199254740992.0),
            Just(-9007199254740991.0),
            any::<f64>().prop_filter("finite", |x| x.is_finite()),
        ]
    }

    /// The two mechanisms at comparable strength: Laplace at ε, Gaussian at ρ = ε²/2.
    pub fn mechanisms(eps: &Epsilon) -> [Mechanism; 2] {
        let rho = crate::privacy::zcdp::Rho::from_pure(eps);
        [Mechanism::Laplace(eps.clone()), Mechanism::Gaussian { rho, delta: "1e-6".parse().unwrap() }]
    }

    pub fn bounds_and_eps() -> impl Strategy<Value = (Bounds, Epsilon)> {
        let bound = prop_oneof![-1e6f64..1e6, Just(0.0), Just(-1e300), Just(1e300), Just(9007199254740993.0)];
        let eps = prop_oneof![Just("0.1"), Just("1"), Just("0.001"), Just("3.7"), Just("1e-9")];
        (bound.clone(), bound, eps).prop_filter_map("L < U", |(a, b, e)| {
            let (l, u) = if a < b { (a, b) } else { (b, a) };
            let b = Bounds::new(Finite::from_f64(l)?, Finite::from_f64(u)?).ok()?;
            Some((b, e.parse().ok()?))
        })
    }

    proptest! {
        /// On neighbouring datasets (add, remove, replace) the exact sum moves by at most Δ,
        /// and its square by at most Δ₂², on the grid of either mechanism.
        #[test]
        fn sum_moves_by_at_most_its_sensitivity(
            (bounds, eps) in bounds_and_eps(),
            rows in proptest::collection::vec(awkward_value(), 0..40),
            other in awkward_value(),
            at in any::<prop::sample::Index>(),
        ) {
            for (neighbours, mechanism) in [Neighbours::AddRemove, Neighbours::Replace]
                .into_iter()
                .flat_map(|n| mechanisms(&eps).map(|m| (n, m)))
            {
                let Ok(spec) = SumSpec::new(bounds, neighbours, &mechanism) else { continue };
                let base = spec.sum(rows.iter().copied()).value;
                let delta = spec.sensitivity();
                let mut neighbours_of: Vec<Vec<f64>> = vec![];
                if !rows.is_empty() {
                    let i = at.index(rows.len());
                    if neighbours == Neighbours::Replace {
                        let mut changed = rows.clone();
                        changed[i] = other;
                        neighbours_of.push(changed);
                    } else {
                        let mut removed = rows.clone();
                        removed.remove(i);
                        neighbours_of.push(removed);
                    }
                }
                if neighbours == Neighbours::AddRemove {
                    let mut added = rows.clone();
                    added.push(other);
                    neighbours_of.push(added);
                }
                for n in neighbours_of {
                    let moved = (spec.sum(n).value - base).abs();
                    prop_assert!(moved <= delta, "moved {} > Δ {}", moved, delta);
                    prop_assert!(moved * moved <= spec.l2_squared(), "moved {} > Δ₂", moved);
                }
            }
        }

        /// The clamped sum lies in [n·L, n·U] and Δ is what the formula says.
        #[test]
        fn sum_stays_within_clamped_range(
            (bounds, eps) in bounds_and_eps(),
            rows in proptest::collection::vec(awkward_value(), 0..40),
        ) {
            let Ok(spec) = SumSpec::new(bounds, Neighbours::AddRemove, &Mechanism::Laplace(eps)) else { return Ok(()) };
            let n = rows.len() as i128;
            let s = spec.sum(rows).value;
            prop_assert!(s >= n * spec.bounds.lower && s <= n * spec.bounds.upper);
            prop_assert_eq!(spec.sensitivity(), spec.bounds.lower.abs().max(spec.bounds.upper.abs()));
        }
    }

    #[test]
    fn sensitivity_formulas() {
        let b = Bounds::new(Finite::from_f64(-3.0).unwrap(), Finite::from_f64(5.0).unwrap()).unwrap();
        let eps = Mechanism::Laplace("1".parse().unwrap());
        let add = SumSpec::new(b, Neighbours::AddRemove, &eps).unwrap();
        // Δ = 5 = 2^2.32, grid 2^(2-40)
        assert_eq!(add.bounds.grid.exponent(), -38);
        assert_eq!(add.sensitivity(), 5i128 << 38);
        let rep = SumSpec::new(b, Neighbours::Replace, &eps).unwrap();
        assert_eq!(rep.bounds.grid.exponent(), -37); // Δ = 8
        assert_eq!(rep.sensitivity(), 8i128 << 37);
        // Gaussian at ρ = 1/2: σ = Δ₂ = 5 = 2^2.32, the same grid as Laplace at ε = 1.
        let gauss = Mechanism::Gaussian { rho: "0.5".parse().unwrap(), delta: "1e-6".parse().unwrap() };
        let add = SumSpec::new(b, Neighbours::AddRemove, &gauss).unwrap();
        assert_eq!((add.bounds.grid.exponent(), add.l2_squared()), (-38, 25i128 << 76));
        // By groups under replace: max(2·5², 8²) = 64 in real units, Δ₂ = 8, grid 2^(3 − 40).
        let grouped = SumSpec::with_groups(b, Neighbours::Replace, &gauss, true).unwrap();
        assert_eq!((grouped.bounds.grid.exponent(), grouped.l2_squared()), (-37, 64i128 << 74));
        assert_eq!(grouped.sensitivity(), 10i128 << 37);
    }
}
