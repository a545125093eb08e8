//! **variance** — the population variance (1/n) of a column clamped to [L, U].
//!
//! Every value x is clamped, rounded to the grid g and shifted by the midpoint m = (L + U)/2,
//! so y = x − m lies in [−h, h] with h = (U − L)/2 (in units: |y| <= h_u). The variance is
//! shift-invariant, so it is computed from the shifted values.
//!
//! Released parts and their sensitivities (in their own grid units):
//! - add-remove (n private), ε split in three exact thirds:
//!   - count C: Δ = 1;
//!   - shifted sum S = Σ y: one row added or removed moves it by |y| <= h, so Δ = h;
//!   - sum of squares Q = Σ q(y), with q(y) = y² rounded to the squares' grid G: one row moves
//!     it by q(y) ∈ [0, q(h)], so Δ = q(h) ≈ h².
//!
//!   Release: var = Q̃/C̃ − (S̃/C̃)² with C̃ replaced by max(1, C̃); the exact n is never used.
//! - replace (n public), ε split in two exact halves:
//!   - S: a changed row moves y from −h to h at most, so Δ = 2h = U − L;
//!   - Q: q(y) moves within [0, q(h)], so Δ = q(h) ≈ h².
//!
//!   Release: var = Q̃/n − (S̃/n)²; n = 0 has no variance and is refused.
//!
//! Each part gets discrete Laplace noise of scale Δ/ε_part in its grid units (Dwork, McSherry,
//! Nissim, Smith 2006; exact sampler of Canonne, Kamath, Steinke 2020); the parts' ε add up
//! exactly to ε, so the release is ε-DP (pure) by sequential composition (Dwork & Roth 2014,
//! Thm 3.16), and the formula above is post-processing. So is the final clamp into [0, h²]
//! (the variance of values in [−h, h] lies there): it can only move the release towards the
//! true value, but it biases a release near 0 or h² upwards or downwards respectively.
//!
//! Exact squares and overflow (Casacuberta, Shoemate, Vadhan, Wagaman 2022 for why this
//! matters): the values' grid g = 2^k is chosen from the sum's Δ and ε_part (docs/DESIGN.md §2.2) and
//! the bounds are refused unless |L|, |U| <= 2^62 units, so |y| <= 2^62 and y² <= 2^124 fits
//! an i128 exactly. The squares get their own grid G = 2^K chosen the same way from their own
//! Δ = (h_u·g)² and ε_part, and q(y) = round(y² · g²/G) = round(y² · 2^(2k−K)), ties up: an
//! exact shift of an exact integer. Rounding is monotone in y², so q(y) <= q(h_u) for every
//! |y| <= h_u, which makes q(h_u) the exact integer Δ. q(h_u) is refused above 2^62 before any
//! data is read (it is about 2^40·ε_part, so only absurd ε hit this), so each row adds at most
//! 2^62 units to S and to Q and the i128 accumulators cannot overflow below 2^64 rows.
//! Rounding the squares to G (about 2^-40 of their noise scale) moves the mean of squares by at
//! most G/2; the accuracy bound includes that.

pub mod accuracy;

use serde::{Deserialize, Serialize};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, ToPrimitive, Zero};
use rand::RngCore;

use crate::data::cell::{InvalidPolicy, NumberCell};
use crate::data::row::{BadCell, Fold, Row};
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::bounds::Bounds;
use crate::numeric::exact::{exact, rational_to_f64_up};
use crate::numeric::grid::{Grid, GridBounds, MAX_GRID_UNITS};
use crate::numeric::format::real;
use crate::privacy::accountant::Cost;
use crate::privacy::laplace::Aggregate;
use crate::privacy::noise::{self, Calibrated, Drawn, Mechanism};
use crate::privacy::unit::Neighbours;
use crate::query::count;
use crate::query::variance::accuracy::{error_bound, Interval};
use crate::query::options::{self, check_invalid_policy, require_bounds, Options, Setup};
use crate::query::statistic::{first, Context, Measured, PlanContext, Planned, Statistic};
use crate::report::release::{Accuracy, BoundsInfo, GridInfo, Noise, Number, Part, Release};

/// `dpstat variance`: a column clamped to bounds given by flags.
#[derive(Clone, Debug)]
pub struct Variance {
    column: ColumnRef,
    invalid: InvalidPolicy,
    spec: VarianceSpec,
}

impl Statistic for Variance {
    const KINDS: &'static [&'static str] = &["variance"];
    type Fold = VarianceFold;

    fn new(_: &str, options: Options, setup: &Setup) -> Result<Variance, Error> {
        let bounds = require_bounds("variance", options.lower, options.upper)?;
        check_invalid_policy(options.invalid, setup)?;
        let spec = VarianceSpec::new(bounds, setup.neighbours, setup.mechanism)?;
        let column = setup.column(&options)?;
        options::refuse_filtered_replace(setup, "variance")?;
        options::refuse_grouped_replace(setup, "variance")?;
        Ok(Variance { column, invalid: options.invalid, spec })
    }

    fn workload_keys(_: &Options) -> Option<&'static [&'static str]> {
        Some(&["column", "lower", "upper", "invalid"])
    }

    fn name(&self) -> &'static str {
        "variance"
    }

    fn column(&self) -> Option<&ColumnRef> {
        Some(&self.column)
    }

    fn fold(&self, indices: &[usize]) -> VarianceFold {
        VarianceFold::new(self.spec.clone(), NumberCell { index: first(indices), invalid: self.invalid })
    }

    /// Noise for each part in release order (count, shifted sum, squares), each at its exact
    /// share of ε, then the variance by post-processing.
    fn measure(&self, fold: VarianceFold, cx: &Context, rng: &mut dyn RngCore) -> Result<Measured<Variance>, Error> {
        let parts = self.spec.parts(cx.mechanism);
        let VarianceAggregate { count, shifted_sum, squares, n } = fold.aggregate();
        if count.is_none() && n == 0 {
            return Err(Error::usage(format!(
                "{}: variance under --neighbours replace needs at least one row (n = 0 has no variance)",
                cx.source
            )));
        }
        let noisy_count = count.map(|c| noise::draw(&c, &parts[0], rng));
        let noisy_sum = noise::draw(&shifted_sum, &parts[parts.len() - 2], rng);
        let noisy_squares = noise::draw(&squares, &parts[parts.len() - 1], rng);
        self.release(cx, noisy_count.as_ref(), &noisy_sum, &noisy_squares, n).map(Measured::Release)
    }

    /// The bound a release with `--rows` as its (noisy or public) count would state, at its
    /// worst over data in [L, U]: the bound depends on the noisy sum and sum of squares too, so
    /// it is computed, by the release's own function, for a grid of possible values of both
    /// (mean and mean square of the shifted values, `PLAN_GRID` steps each) and the largest
    /// is stated.
    fn plan(&self, cx: &PlanContext) -> Result<Planned, Error> {
        let rows = cx.rows.ok_or_else(|| {
            Error::usage(
                "dpstat plan variance needs --rows N: a variance's error depends on the number of rows \
                 (the public n under replace, the noisy count under add-remove); give the size you \
                 expect, e.g. --rows 1000",
            )
        })?;
        let spec = &self.spec;
        let mechanisms = spec.parts(cx.mechanism);
        let parts = spec.aggregate(0, 0, rows);
        let count = parts.count.as_ref().map(|c| Calibrated::of(c, &mechanisms[0]));
        let sum = Calibrated::of(&parts.shifted_sum, &mechanisms[mechanisms.len() - 2]);
        let squares = Calibrated::of(&parts.squares, &mechanisms[mechanisms.len() - 1]);
        let n = BigInt::from(rows);
        let h = spec.half_width_units();
        let radii = Radii::of(count.as_ref(), &sum, &squares, cx.confidence.beta());
        let mut worst = BigRational::zero();
        for i in 0..=PLAN_GRID {
            // A mean of the shifted values from −h to h, and a mean square from its square to h².
            let mean = -h + (2 * h * i as i128) / PLAN_GRID as i128;
            let (least, most) = (spec.square(mean), spec.square(h));
            for j in 0..=PLAN_GRID {
                let mean_square = least + (most - least) * j as i128 / PLAN_GRID as i128;
                let (s, q) = (&n * BigInt::from(mean), &n * BigInt::from(mean_square));
                let (value, _) = spec.release(&s, &q, &n);
                let bound = spec.error_bound(
                    &value,
                    count.as_ref().map(|c| (&n, c)),
                    rows,
                    (&s, &sum),
                    (&q, &squares),
                    &radii,
                );
                worst = worst.max(bound);
            }
        }
        let beta = cx.confidence.beta() / mechanisms.len() as f64;
        let planned = |name, c: &Calibrated| Part::planned(name, c, Some(c.error_bound(beta)));
        let noise = Noise {
            grid: Some(GridInfo::of(sum.grid())),
            bounds: Some(BoundsInfo::of(&spec.bounds)),
            rows: Some(rows),
            parts: count
                .as_ref()
                .map(|c| planned("count", c))
                .into_iter()
                .chain([planned("shifted_sum", &sum), planned("sum_of_squares", &squares)])
                .collect(),
            ..Noise::multi(cx.mechanism, cx.neighbours, Accuracy::value(cx.confidence, rational_to_f64_up(&worst)))
        };
        let count_text = match cx.neighbours {
            Neighbours::Replace => format!("n = {rows} rows (--rows), public under replace"),
            Neighbours::AddRemove => format!("the noisy count comes out at {rows} (--rows)"),
        };
        let assumption = format!(
            "{count_text}; the bound is the largest a release with that count states over a grid of \
             {g} x {g} means and mean squares of values in [L, U]; a release states its own, from its \
             noisy parts (each part's bound here is at β/{parts})",
            g = PLAN_GRID + 1,
            parts = mechanisms.len()
        );
        Ok(Planned { noise, bins: None, assumptions: vec![assumption] })
    }
}

/// Steps of the grid of possible means and mean squares over which a plan takes the widest
/// bound (PLAN_GRID + 1 values of each).
const PLAN_GRID: u32 = 20;

impl Variance {
    /// A variance: (noisy count,) noisy shifted sum and noisy sum of squares, combined and
    /// clamped into [0, h²]; under replace, `count` is None and n is public.
    #[allow(clippy::too_many_arguments)]
    fn release(
        &self,
        cx: &Context,
        count: Option<&Drawn<BigInt>>,
        sum: &Drawn<BigInt>,
        squares: &Drawn<BigInt>,
        n: u64,
    ) -> Result<Release, Error> {
        let spec = &self.spec;
        let denominator = count.map_or_else(|| BigInt::from(n), |c| c.value.clone());
        let (value, clamped) = spec.release(&sum.value, &squares.value, &denominator);
        let bound = spec.error_bound(
            &value,
            count.map(|c| (&c.value, &c.noise)),
            n,
            (&sum.value, &sum.noise),
            (&squares.value, &squares.noise),
            &Radii::of(count.map(|c| &c.noise), &sum.noise, &squares.noise, cx.confidence.beta()),
        );
        let midpoint = sum.noise.grid().to_f64(&BigInt::from(spec.midpoint));
        let mut post = vec![match count {
            Some(_) => format!(
                "values shifted by the midpoint {midpoint}; variance = noisy sum of squares / c - \
                 (noisy shifted sum / c)^2 with c = max(1, noisy count)"
            ),
            None => format!(
                "values shifted by the midpoint {midpoint}; variance = noisy sum of squares / n - \
                 (noisy shifted sum / n)^2 with the public row count n = {n}"
            ),
        }];
        post.extend(clamped.then(|| {
            format!(
                "clamped into [0, {}] = [0, ((U-L)/2)^2] (biases a variance near the ends of that range)",
                rational_to_f64_up(&spec.max_variance())
            )
        }));
        let drawn: Vec<(&'static str, &Drawn<BigInt>)> = count
            .map(|c| ("count", c))
            .into_iter()
            .chain([("shifted_sum", sum), ("sum_of_squares", squares)])
            .collect();
        let accuracy = Accuracy::value(cx.confidence, rational_to_f64_up(&bound));
        let noise = Noise {
            grid: Some(GridInfo::of(sum.noise.grid())),
            bounds: Some(BoundsInfo::of(&spec.bounds)),
            rows: count.is_none().then_some(n),
            parts: drawn.iter().map(|(name, noisy)| Part::drawn(name, noisy)).collect(),
            ..Noise::multi(cx.mechanism, cx.neighbours, accuracy)
        };
        let cost = Cost::sequential(drawn.iter().map(|(name, noisy)| noisy.noise.mechanism().cost(*name)).collect());
        let release = cx.release(self, noise, cost)?;
        // Every variance lies in [0, h²], the public bounds' own: the release is clamped into it.
        let range = Some([0.0, rational_to_f64_up(&spec.max_variance())]);
        Ok(Release {
            value: Some(Number::Real(value.to_f64().unwrap_or(f64::NAN))),
            post_processing: post,
            range,
            ..release
        })
    }

}

/// A validated variance: the values' grid and bounds, the midpoint, and the squares' grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VarianceSpec {
    pub neighbours: Neighbours,
    /// Bounds on the values' grid g, with an even span so the midpoint is on the grid.
    pub bounds: GridBounds,
    /// m in units of g.
    pub midpoint: i128,
    /// The squares' grid G.
    pub squares_grid: Grid,
    /// 2k − K: q(y) = y² · 2^shift, rounded (a right shift when negative).
    shift: i32,
    /// Half of 2^−shift when that is a right shift of fewer than 126 places (what rounding
    /// adds before it), else 0: the 128-bit shift is not redone for every row.
    half: u128,
    /// q(h_u): the largest square of a shifted value, in units of G.
    max_square: i128,
}

/// The exact parts of a variance, each with its sensitivity.
#[derive(Clone, Debug, PartialEq)]
pub struct VarianceAggregate {
    /// The noisy count's aggregate under add-remove; None under replace (n is public).
    pub count: Option<Aggregate<i128>>,
    pub shifted_sum: Aggregate<i128>,
    pub squares: Aggregate<i128>,
    /// The rows folded: public under replace, never released under add-remove.
    pub n: u64,
}

impl VarianceSpec {
    /// Chooses both grids from the flags and ε (never from the data) and refuses, before any
    /// data is read, bounds whose values or squares would exceed 2^62 grid units.
    pub fn new(bounds: Bounds, neighbours: Neighbours, mechanism: &Mechanism) -> Result<VarianceSpec, Error> {
        let part = mechanism.split(parts(neighbours));
        let half_width = bounds.width() / BigInt::from(2);
        let sum_delta = match neighbours {
            Neighbours::AddRemove => half_width,
            Neighbours::Replace => bounds.width(),
        };
        let grid = part.grid(&sum_delta);
        let bounds_on_grid = GridBounds::snap(&bounds, grid, true)?;
        let half_units = bounds_on_grid.width_units() / 2;
        let h = BigRational::from_integer(BigInt::from(half_units)) * grid.spacing();
        // Up to 2^64 rows of h² each must still print as a double.
        if (&h * &h) * BigInt::from(u64::MAX) > exact(f64::MAX) {
            return Err(Error::usage(format!(
                "bounds [{}, {}] are too wide for a variance: 2^64 rows of ((U-L)/2)^2 would exceed \
                 the largest floating-point number; narrow --lower/--upper",
                real(bounds.lower()),
                real(bounds.upper())
            )));
        }
        let squares_grid = part.grid(&(&h * &h));
        let shift = 2 * grid.exponent() - squares_grid.exponent();
        let max_square = square_units(&BigInt::from(half_units), shift);
        if max_square > BigInt::from(MAX_GRID_UNITS) || max_square < BigInt::one() {
            return Err(Error::usage(format!(
                "bounds [{}, {}] are too wide for this epsilon: a squared value would exceed 2^62 \
                 units of its grid; narrow --lower/--upper or lower --eps",
                bounds.lower(),
                bounds.upper()
            )));
        }
        let Some(max_square) = max_square.to_i128() else { unreachable!("checked against 2^62 above") };
        let midpoint = (bounds_on_grid.lower + bounds_on_grid.upper) / 2;
        let half = if (-125..0).contains(&shift) { 1 << (-shift - 1) } else { 0 };
        Ok(VarianceSpec { neighbours, bounds: bounds_on_grid, midpoint, squares_grid, shift, half, max_square })
    }

    /// The mechanism of each noisy part with its share of ε or ρ, in release order: (count,)
    /// shifted sum, sum of squares.
    pub fn parts(&self, mechanism: &Mechanism) -> Vec<Mechanism> {
        let n = parts(self.neighbours);
        vec![mechanism.split(n); n as usize]
    }

    /// h in units of g: the largest |shifted value|.
    pub fn half_width_units(&self) -> i128 {
        self.bounds.width_units() / 2
    }

    /// Δ of the shifted sum in units of g: h (add-remove) or 2h = U − L (replace).
    pub fn sum_sensitivity(&self) -> i128 {
        match self.neighbours {
            Neighbours::AddRemove => self.half_width_units(),
            Neighbours::Replace => self.bounds.width_units(),
        }
    }

    /// Δ of the sum of squares in units of G: q(h) under both units (each square is in [0, q(h)]).
    pub fn squares_sensitivity(&self) -> i128 {
        self.max_square
    }

    /// One row's shifted value y in units of g.
    #[inline]
    pub fn shifted(&self, x: f64) -> i128 {
        self.from_grid_units(self.bounds.units(x))
    }

    /// [`VarianceSpec::shifted`] from the value's units on `bounds` (`bounds.units(x)`), so
    /// that a scan can convert a value once for every query with the same grid and bounds.
    #[inline]
    pub fn from_grid_units(&self, units: i128) -> i128 {
        units - self.midpoint
    }

    /// q(y): y² on the squares' grid, rounded to nearest with ties up; exact, in [0, q(h)].
    #[inline]
    pub fn square(&self, y: i128) -> i128 {
        // |y| <= 2^62, so y² <= 2^124: one 64 × 64-bit multiplication.
        debug_assert!(y.unsigned_abs() <= 1 << 62);
        let a = (y as i64).unsigned_abs();
        let s = u128::from(a) * u128::from(a);
        if self.shift >= 0 {
            // Only reached if g² is coarser than G; s · 2^shift <= q(h) <= 2^62 then.
            (s << self.shift) as i128
        } else {
            let down = (-self.shift) as u32;
            if down >= 126 {
                return 0; // s < 2^125 <= half of 2^down: rounds to 0 (then q(h) = 0 is refused)
            }
            // s + half < 2^125: no overflow, and the quotient is at most q(h) <= 2^62.
            ((s + self.half) >> down) as i128
        }
    }

    /// The parts from the accumulated totals of `n` rows.
    pub fn aggregate(&self, sum: i128, squares: i128, n: u64) -> VarianceAggregate {
        VarianceAggregate {
            count: (self.neighbours == Neighbours::AddRemove).then(|| count::aggregate(n)),
            shifted_sum: Aggregate::scalar(sum, self.sum_sensitivity(), self.bounds.grid),
            squares: Aggregate::scalar(squares, self.squares_sensitivity(), self.squares_grid),
            n,
        }
    }

    /// Aggregates a sequence of values, as [`VarianceFold`] does row by row.
    pub fn variance(&self, values: impl IntoIterator<Item = f64>) -> VarianceAggregate {
        let mut fold = VarianceTotals::default();
        for x in values {
            fold.add(self, x);
        }
        self.aggregate(fold.sum, fold.squares, fold.rows)
    }

    /// The release's error bound from its noisy parts (`count` under add-remove, else the
    /// public `n`): [`Radii`] puts each part within its own bound at β/parts, all at once with
    /// probability >= 1 − β, and [`error_bound`] takes the farthest the true variance can be
    /// from `value` over that box.
    pub fn error_bound(
        &self,
        value: &BigRational,
        count: Option<(&BigInt, &Calibrated)>,
        n: u64,
        sum: (&BigInt, &Calibrated),
        squares: (&BigInt, &Calibrated),
        radii: &Radii,
    ) -> BigRational {
        let count_interval = match (count, radii.count) {
            (Some((c, _)), Some(r)) => Interval::around(c, r, &BigRational::from_integer(1.into())),
            _ => Interval::point(BigRational::from_integer(BigInt::from(n))),
        };
        let around = |(v, noise): (&BigInt, &Calibrated), r| Interval::around(v, r, &noise.grid().spacing());
        let h = BigRational::from_integer(BigInt::from(self.half_width_units())) * sum.1.grid().spacing();
        error_bound(
            value,
            &count_interval,
            &around(sum, radii.sum),
            &around(squares, radii.squares),
            &squares.1.grid().spacing(),
            &self.max_variance(),
            &h,
        )
    }

    /// h² as an exact real.
    pub fn max_variance(&self) -> BigRational {
        let h = BigRational::from_integer(BigInt::from(self.half_width_units())) * self.bounds.grid.spacing();
        &h * &h
    }

    /// Post-processing: Q̃·G/c − (S̃·g/c)² with c = max(1, C̃) (add-remove) or n (replace),
    /// clamped into [0, h²]. Returns the exact value and whether the clamp changed it.
    pub fn release(&self, sum: &BigInt, squares: &BigInt, denominator: &BigInt) -> (BigRational, bool) {
        let c = BigRational::from_integer(denominator.clone().max(BigInt::one()));
        let mean = BigRational::from_integer(sum.clone()) * self.bounds.grid.spacing() / &c;
        let mean_square = BigRational::from_integer(squares.clone()) * self.squares_grid.spacing() / &c;
        let raw = mean_square - &mean * &mean;
        let clamped = raw.clone().max(BigRational::zero()).min(self.max_variance());
        let changed = clamped != raw;
        (clamped, changed)
    }
}

fn parts(neighbours: Neighbours) -> u32 {
    match neighbours {
        Neighbours::AddRemove => 3,
        Neighbours::Replace => 2,
    }
}

/// y² · 2^shift rounded to nearest, ties up, in big integers (for the Δ check before the data).
fn square_units(y: &BigInt, shift: i32) -> BigInt {
    let s = y * y;
    if shift >= 0 {
        s << shift as usize
    } else {
        let down = (-shift) as usize;
        (s + (BigInt::one() << (down - 1))) >> down
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
struct VarianceTotals {
    sum: i128,
    squares: i128,
    rows: u64,
}

impl VarianceTotals {
    #[inline(always)]
    fn add(&mut self, spec: &VarianceSpec, x: f64) {
        self.add_shifted(spec, spec.shifted(x));
    }

    /// One shifted value y = units − midpoint.
    #[inline(always)]
    fn add_shifted(&mut self, spec: &VarianceSpec, y: i128) {
        self.sum += y;
        self.squares += spec.square(y);
        self.rows += 1;
    }
}

/// The running exact shifted sum, sum of squares and row count of one column.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VarianceFold {
    pub spec: VarianceSpec,
    pub cell: NumberCell,
    totals: VarianceTotals,
}

impl VarianceFold {
    pub fn new(spec: VarianceSpec, cell: NumberCell) -> VarianceFold {
        VarianceFold { spec, cell, totals: VarianceTotals::default() }
    }
    pub fn aggregate(&self) -> VarianceAggregate {
        self.spec.aggregate(self.totals.sum, self.totals.squares, self.totals.rows)
    }

    /// Folds one value, as [`Fold::row`] does with a row's number.
    #[inline]
    pub fn add(&mut self, x: f64) {
        self.totals.add(&self.spec, x);
    }

    /// Folds one value given as its units on the spec's bounds (`spec.bounds.units(x)`).
    #[inline]
    pub fn add_grid_units(&mut self, units: i128) {
        self.totals.add_shifted(&self.spec, self.spec.from_grid_units(units));
    }
}

impl Fold for VarianceFold {
    #[inline(always)]
    fn row(&mut self, record: &Row) -> Result<(), BadCell> {
        if let Some(x) = self.cell.read(record)? {
            self.add(x);
        }
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        self.totals.sum += other.totals.sum;
        self.totals.squares += other.totals.squares;
        self.totals.rows += other.totals.rows;
    }
    fn widest_column(&self) -> Option<usize> {
        Some(self.cell.index)
    }
}

/// Each noisy part's error bound, in its grid units, at an equal share of β (a union bound
/// over the parts: all hold at once with probability >= 1 − β). They depend on the noise
/// alone, not on the values drawn, so a plan computes them once for every value it tries.
pub struct Radii {
    /// None under replace (the count is the public n).
    count: Option<u128>,
    sum: u128,
    squares: u128,
}

impl Radii {
    pub fn of(count: Option<&Calibrated>, sum: &Calibrated, squares: &Calibrated, beta: f64) -> Radii {
        let beta = beta / (2 + count.is_some() as u8) as f64;
        Radii {
            count: count.map(|c| c.error_bound_units(beta)),
            sum: sum.error_bound_units(beta),
            squares: squares.error_bound_units(beta),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::bounds::Finite;
    use crate::query::statistic::{neighbouring, Neighbouring};
    use crate::query::sum::tests::{awkward_value, bounds_and_eps, mechanisms};
    use proptest::prelude::*;

    fn parts_of(a: &VarianceAggregate) -> Vec<(i128, i128, i128)> {
        let of = |p: &Aggregate<i128>| (p.value, p.sensitivity, p.l2_squared);
        a.count.iter().chain([&a.shifted_sum, &a.squares]).map(of).collect()
    }

    fn laplace(eps: &str) -> Mechanism {
        Mechanism::Laplace(eps.parse().unwrap())
    }

    fn bounds(l: f64, u: f64) -> Bounds {
        Bounds::new(Finite::from_f64(l).unwrap(), Finite::from_f64(u).unwrap()).unwrap()
    }

    proptest! {
        /// Each part of the variance moves by at most its own Δ (and Δ₂) on neighbouring
        /// datasets: add and remove under add-remove; replace under replace (n fixed). Extreme
        /// values included, on the grids of both mechanisms.
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
                    let Ok(spec) = VarianceSpec::new(bounds, neighbours, &mechanism) else { continue };
                    let base = parts_of(&spec.variance(rows.iter().copied()));
                    for other_rows in &others {
                        let moved = parts_of(&spec.variance(other_rows.iter().copied()));
                        prop_assert_eq!(base.len(), moved.len());
                        for ((v, delta, delta2), (w, _, _)) in base.iter().zip(moved) {
                            prop_assert!(*delta >= 1);
                            prop_assert!((v - w).abs() <= *delta, "moved {} > Δ {}", (v - w).abs(), delta);
                            prop_assert!((v - w) * (v - w) <= *delta2, "moved {} > Δ₂", (v - w).abs());
                        }
                    }
                }
            }
        }

        /// Squares are exact and monotone: q(y) = round(y²·2^shift) lies in [0, q(h)], and the
        /// shifted values lie in [−h, h], for any value, extreme ones included.
        #[test]
        fn squares_are_bounded_by_their_sensitivity(
            (bounds, eps) in bounds_and_eps(),
            x in awkward_value(),
        ) {
            for neighbours in [Neighbours::AddRemove, Neighbours::Replace] {
                let Ok(spec) = VarianceSpec::new(bounds, neighbours, &Mechanism::Laplace(eps.clone())) else { continue };
                let y = spec.shifted(x);
                prop_assert!(y.abs() <= spec.half_width_units());
                let q = spec.square(y);
                prop_assert!(q >= 0 && q <= spec.squares_sensitivity());
                prop_assert_eq!(BigInt::from(q), square_units(&BigInt::from(y), spec.shift));
                prop_assert!(spec.squares_sensitivity() <= MAX_GRID_UNITS);
            }
        }
    }

    #[test]
    fn grids_and_sensitivities() {
        let eps = laplace("1");
        let spec = VarianceSpec::new(bounds(0.0, 10.0), Neighbours::AddRemove, &eps).unwrap();
        // h = 5 over ε/3: 15, floor(log2) = 3, g = 2^-37; h² = 25 over ε/3: 75, G = 2^(6 − 40).
        assert_eq!(spec.bounds.grid.exponent(), -37);
        assert_eq!(spec.squares_grid.exponent(), -34);
        assert_eq!(spec.sum_sensitivity(), 5i128 << 37);
        // q(h) = (5·2^37)² · 2^(−74 + 34) = 25 · 2^34 exactly.
        assert_eq!(spec.squares_sensitivity(), 25i128 << 34);
        assert_eq!(spec.parts(&eps).len(), 3);
        let rep = VarianceSpec::new(bounds(0.0, 10.0), Neighbours::Replace, &eps).unwrap();
        // 2h = 10 over ε/2: 20, g = 2^(4 − 40); h² = 25 over ε/2: 50, G = 2^(5 − 40).
        assert_eq!(rep.bounds.grid.exponent(), -36);
        assert_eq!(rep.sum_sensitivity(), 10i128 << 36);
        assert_eq!(rep.squares_sensitivity(), 25i128 << 35);
        let halves = rep.parts(&eps);
        let total = Cost::sequential(halves.iter().map(|m| m.cost("part")).collect());
        assert_eq!(total.spend().unwrap(), eps.spend());
        // Gaussian at ρ = 3/2 over three parts (ρ/3 = 1/2 each, so σ = Δ): h = 5, σ² = 25,
        // g = 2^(⌊4/2⌋ − 40).
        let gauss = Mechanism::Gaussian { rho: "1.5".parse().unwrap(), delta: "1e-6".parse().unwrap() };
        let spec = VarianceSpec::new(bounds(0.0, 10.0), Neighbours::AddRemove, &gauss).unwrap();
        assert_eq!(spec.bounds.grid.exponent(), -38);
        // Squares: Δ = h² = 25, σ² = 625 = 2^9.3, G = 2^(⌊9/2⌋ − 40).
        assert_eq!(spec.squares_grid.exponent(), -36);
    }

    #[test]
    fn exact_variance_of_known_values() {
        let eps = laplace("1");
        let spec = VarianceSpec::new(bounds(0.0, 10.0), Neighbours::AddRemove, &eps).unwrap();
        let a = spec.variance([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0, 100.0, -3.0]);
        // Clamped: 2,4,4,4,5,5,7,9,10,0: mean 5, squares of deviations 9+1+1+1+0+0+4+16+25+25 = 82.
        let (v, clamped) = spec.release(
            &BigInt::from(a.shifted_sum.value),
            &BigInt::from(a.squares.value),
            &BigInt::from(a.n),
        );
        assert!(!clamped);
        assert_eq!(v, BigRational::new(82.into(), 10.into()));
    }

    #[test]
    fn release_is_clamped_into_zero_to_h_squared() {
        let eps = laplace("1");
        let spec = VarianceSpec::new(bounds(0.0, 2.0), Neighbours::AddRemove, &eps).unwrap();
        let g = |x: i64| BigInt::from(x) << 36usize; // far above the grid's h
        let (v, clamped) = spec.release(&BigInt::zero(), &(g(1) << 60usize), &BigInt::from(1));
        assert!(clamped);
        assert_eq!(v, spec.max_variance());
        let (v, clamped) = spec.release(&(g(1) << 10usize), &BigInt::zero(), &BigInt::from(-4));
        assert!(clamped);
        assert_eq!(v, BigRational::zero());
    }

    #[test]
    fn refuses_bounds_too_wide_for_the_grid() {
        let eps = laplace("1");
        let err = VarianceSpec::new(bounds(-1e308, 1e308), Neighbours::AddRemove, &eps).unwrap_err();
        assert!(err.message().contains("largest floating-point number"), "{err}");
        assert!(VarianceSpec::new(bounds(-1e150, 1e150), Neighbours::AddRemove, &eps).is_err());
        assert!(VarianceSpec::new(bounds(-1e140, 1e140), Neighbours::AddRemove, &eps).is_ok());
        let huge = laplace("1e30");
        let err = VarianceSpec::new(bounds(0.0, 1.0), Neighbours::Replace, &huge).unwrap_err();
        assert!(err.message().contains("2^62"), "{err}");
    }
}
