//! **covariance** — the population covariance (1/n) of two columns x and y, clamped to
//! [Lx, Ux] and [Ly, Uy]. The exact products and their sensitivity ([`PairSpec`]) are shared
//! with `regress`, which adds the squares of x.
//!
//! Every value is clamped, rounded to its column's grid (g_x, g_y) and shifted by its midpoint,
//! so x' lies in [−h_x, h_x] and y' in [−h_y, h_y] with h = (U − L)/2; the covariance does not
//! change under a shift. Released parts and their sensitivities (in their own grid units):
//! - add-remove (n private), ε split in four exact quarters:
//!   - count C: Δ = 1;
//!   - shifted sums S_x = Σ x', S_y = Σ y': one row moves them by |x'| <= h_x, |y'| <= h_y;
//!   - sum of products P = Σ p(x', y'), p = x'·y' rounded to the products' grid G: one row
//!     moves it by |p| <= p(h_x, h_y) ≈ h_x·h_y.
//!
//!   Release: cov = P̃/c − (S̃_x/c)(S̃_y/c) with c = max(1, C̃); the true n is never used.
//! - replace (n public), ε split in three exact thirds: S_x (Δ 2h_x = U_x − L_x), S_y (Δ 2h_y),
//!   P (a product moves from −h_x·h_y to h_x·h_y at most: Δ = 2·p(h_x, h_y)). Release with c = n;
//!   n = 0 is refused.
//!
//! Each part gets discrete Laplace noise of scale Δ/ε_part (Dwork, McSherry, Nissim, Smith 2006;
//! exact sampler of Canonne, Kamath, Steinke 2020); the parts' ε add up exactly to ε
//! (sequential composition, Dwork & Roth 2014, Thm 3.16) and the formula is post-processing.
//! So is the final clamp into [−h_x·h_y, h_x·h_y], where the covariance of values in the box
//! lies (|cov| <= σ_x·σ_y <= h_x·h_y): it can only move the release towards the truth, but it
//! biases releases near the ends inwards.
//!
//! Exact products (as the variance's squares; Casacuberta, Shoemate, Vadhan, Wagaman 2022 for
//! why): |x'|, |y'| <= 2^62 units, so x'·y' <= 2^124 is exact in i128. The products' grid
//! G = 2^K is chosen from Δ = h_x·h_y (real) and ε_part, and p = round(x'·y'·2^(k_x + k_y − K)),
//! nearest with ties up: an exact shift of an exact integer, monotone in x'·y', so every p lies
//! in [round(−M), round(M)] ⊆ [−p(h_x, h_y), p(h_x, h_y)] with M = h_x·h_y in those units. That
//! makes p(h_x, h_y) the exact add-remove Δ; it is refused above 2^62 (or below 1) before any
//! data is read, so no accumulator can overflow below 2^64 rows. Rounding moves the mean of the
//! products by at most G/2, which the accuracy bound includes ([`accuracy`]).
//!
//! With `--noise gaussian` each part gets discrete Gaussian noise at ρ/parts, split as ε is
//! (zCDP adds ρ, Bun & Steinke 2016, Lemma 2.3); each part is a scalar, so its Δ₂ is the Δ
//! above and the part is ρ_part-zCDP (Canonne, Kamath, Steinke 2020, Thm 14). The grids are
//! chosen from the same Δ and ρ_part ([`Mechanism::grid`]).

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
use crate::privacy::noise::{self, Mechanism};
use crate::privacy::unit::Neighbours;
use crate::query::count;
use crate::query::covariance::accuracy::{covariance_interval, distance, Box4};
use crate::query::options::{self, check_invalid_policy, Options, Setup};
use crate::query::statistic::{Context, Measured, PlanContext, Planned, Statistic};
use crate::query::variance::accuracy::Interval;
use crate::report::release::{Accuracy, BoundsInfo, Noise, Number, Part, Release};

/// `dpstat covariance --cols X,Y`.
#[derive(Clone, Debug)]
pub struct Covariance {
    columns: Pair<ColumnRef>,
    invalid: InvalidPolicy,
    spec: PairSpec,
}

/// Two of a kind, x first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pair<T> {
    pub x: T,
    pub y: T,
}

impl Statistic for Covariance {
    const KINDS: &'static [&'static str] = &["covariance"];
    type Fold = PairFold;

    fn new(_: &str, options: Options, setup: &Setup) -> Result<Covariance, Error> {
        let (columns, bounds) = pair_options("covariance", &options, setup, ["--cols", "--cols"])?;
        let spec = PairSpec::new(&bounds, setup.neighbours, setup.mechanism, false)?;
        Ok(Covariance { columns, invalid: options.invalid, spec })
    }

    fn workload_keys(_: &Options) -> Option<&'static [&'static str]> {
        Some(&["column", "lower", "upper", "invalid"])
    }

    fn name(&self) -> &'static str {
        "covariance"
    }

    fn column(&self) -> Option<&ColumnRef> {
        Some(&self.columns.x)
    }

    fn columns(&self) -> Vec<(&ColumnRef, &'static str)> {
        vec![(&self.columns.x, "--cols"), (&self.columns.y, "--cols")]
    }

    fn fold(&self, indices: &[usize]) -> PairFold {
        PairFold::new(self.spec.clone(), cells(indices, self.invalid))
    }

    fn measure(&self, fold: PairFold, cx: &Context, rng: &mut dyn RngCore) -> Result<Measured<Covariance>, Error> {
        let drawn = draw(&self.spec, &fold, cx, "covariance", rng)?;
        let spec = &self.spec;
        let (c, sx, sy, products) = (drawn.denominator(), drawn.get("shifted_sum_x"), drawn.get("shifted_sum_y"), drawn.get("sum_of_products"));
        let cap = spec.max_covariance();
        let raw = spec.mean_of(products, &c) - spec.x_mean(sx, &c) * spec.y_mean(sy, &c);
        let value = raw.clone().max(-cap.clone()).min(cap.clone());
        let beta = cx.confidence.beta() / drawn.parts.len() as f64;
        let bound = match covariance_interval(&drawn.box4(spec, beta), &spec.x.half(), &spec.y.half()) {
            Some(interval) => distance(&value, &interval).min(&cap * BigInt::from(2)),
            None => &cap * BigInt::from(2),
        };
        let mut post = vec![drawn.shift_note(spec, "covariance = noisy sum of products / c - (noisy shifted sum x / c)(noisy shifted sum y / c)")];
        if value != raw {
            post.push(format!(
                "clamped into [-{0}, {0}] = ((Ux-Lx)/2)((Uy-Ly)/2) in magnitude (biases a covariance near the ends inwards)",
                rational_to_f64_up(&cap)
            ));
        }
        let release = drawn.release(self, cx, spec, rational_to_f64_up(&bound))?;
        Ok(Measured::Release(Release {
            value: Some(Number::Real(value.to_f64().unwrap_or(0.0))),
            post_processing: post,
            ..release
        }))
    }

    fn plan(&self, _: &PlanContext) -> Result<Planned, Error> {
        Err(Error::usage("dpstat plan covers count, sum, mean and histogram; not covariance"))
    }
}

/// The two columns and their bounds from the options (x in `column`, `lower`, `upper`; y in
/// `y_column`, `y_lower`, `y_upper`), with the rules every two-column statistic shares.
pub fn pair_options(
    query: &str,
    options: &Options,
    setup: &Setup,
    flags: [&str; 2],
) -> Result<(Pair<ColumnRef>, Pair<Bounds>), Error> {
    check_invalid_policy(options.invalid, setup)?;
    let missing = |what: &str| {
        Error::usage(format!(
            "{query} reads two columns and {what} is missing: give both, x first (in a workload, \
             column = [\"x\", \"y\"] with lower = [LX, LY] and upper = [UX, UY])"
        ))
    };
    let x = ColumnRef::parse(options.column.as_deref().ok_or_else(|| missing("x"))?, setup.has_header, flags[0])?;
    let y = ColumnRef::parse(options.y_column.as_deref().ok_or_else(|| missing("y"))?, setup.has_header, flags[1])?;
    let bounds = match (options.lower.zip(options.y_lower), options.upper.zip(options.y_upper)) {
        (Some((lx, ly)), Some((ux, uy))) => Pair { x: Bounds::new(lx, ux)?, y: Bounds::new(ly, uy)? },
        (lower, upper) => {
            let missing = match (lower, upper) {
                (Some(_), None) => "--upper UX,UY is missing",
                (None, Some(_)) => "--lower LX,LY is missing",
                _ => "--lower LX,LY and --upper UX,UY are missing",
            };
            return Err(Error::usage(format!(
                "{query} needs public clamping bounds for both columns and {missing}: add them as pairs, \
                 x's first (e.g. --lower 0,0 --upper 100,200000 for age and income). They fix how much one \
                 row can change the result; dpstat never takes them from the data, because a column's min \
                 or max would reveal the rows that hold them"
            )));
        }
    };
    options::refuse_filtered_replace(setup, query)?;
    options::refuse_grouped_replace(setup, query)?;
    Ok((Pair { x, y }, bounds))
}

/// The two number cells of a two-column statistic.
pub fn cells(indices: &[usize], invalid: InvalidPolicy) -> Pair<NumberCell> {
    let index = |i: usize| indices.get(i).copied().unwrap_or_default();
    Pair { x: NumberCell { index: index(0), invalid }, y: NumberCell { index: index(1), invalid } }
}

/// One column's grid bounds (even span) and midpoint, in its grid's units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub bounds: GridBounds,
    pub midpoint: i128,
}

impl Axis {
    /// The grid from the shifted sum's Δ (h, or 2h under replace) at the part's ε or ρ.
    fn new(bounds: &Bounds, neighbours: Neighbours, part: &Mechanism) -> Result<Axis, Error> {
        let half_width = bounds.width() / BigInt::from(2);
        let sum_delta = match neighbours {
            Neighbours::AddRemove => half_width,
            Neighbours::Replace => bounds.width(),
        };
        let grid = part.grid(&sum_delta);
        let bounds = GridBounds::snap(bounds, grid, true)?;
        let midpoint = (bounds.lower + bounds.upper) / 2;
        Ok(Axis { bounds, midpoint })
    }

    /// h in units: the largest |shifted value|.
    pub fn half_units(&self) -> i128 {
        self.bounds.width_units() / 2
    }

    /// h as an exact real.
    pub fn half(&self) -> BigRational {
        BigRational::from_integer(BigInt::from(self.half_units())) * self.bounds.grid.spacing()
    }

    /// One value's shifted units x' = round(x) clamped − m.
    #[inline]
    pub fn shifted(&self, x: f64) -> i128 {
        self.bounds.units(x) - self.midpoint
    }

    /// Δ of the shifted sum: h (add-remove) or 2h (replace).
    fn sum_sensitivity(&self, neighbours: Neighbours) -> i128 {
        match neighbours {
            Neighbours::AddRemove => self.half_units(),
            Neighbours::Replace => self.bounds.width_units(),
        }
    }
}

/// Products (or squares) of shifted values moved onto their own grid: round(v·2^shift), exact.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rescaled {
    pub grid: Grid,
    /// k_x + k_y − K (or 2k_x − K for squares).
    shift: i32,
    /// The largest |rescaled value|: its add-remove Δ.
    pub max: i128,
}

impl Rescaled {
    /// The grid for a sum with Δ = `delta` (real) at the part's ε or ρ, and the largest
    /// rescaled value `largest` (exact product of the halves in units), refused above 2^62 or
    /// below 1 units.
    fn new(delta: &BigRational, part: &Mechanism, unit_exponent: i32, largest: &BigInt, what: &str) -> Result<Rescaled, Error> {
        let grid = part.grid(delta);
        let shift = unit_exponent - grid.exponent();
        let max = round_shift_big(largest, shift);
        if max > BigInt::from(MAX_GRID_UNITS) || max < BigInt::one() {
            return Err(Error::usage(format!(
                "these bounds are too wide for this epsilon: a {what} would exceed 2^62 units of its grid; \
                 narrow --lower/--upper or lower --eps"
            )));
        }
        let Some(max) = max.to_i128() else { unreachable!("checked against 2^62 above") };
        Ok(Rescaled { grid, shift, max })
    }

    /// round(v·2^shift), nearest with ties up; v = a product of two shifted values (|v| <= 2^124).
    #[inline]
    pub fn of(&self, v: i128) -> i128 {
        if self.shift >= 0 {
            // Only when the unit product is coarser than G; then |v|·2^shift <= max <= 2^62.
            v << self.shift
        } else {
            let down = (-self.shift) as u32;
            if down >= 126 {
                return 0; // |v| <= 2^124 < 2^(down−1): rounds to 0 (max would be 0, refused)
            }
            (v + (1i128 << (down - 1))) >> down
        }
    }
}

/// v·2^shift rounded to nearest, ties up, in big integers (the Δ check before the data).
fn round_shift_big(v: &BigInt, shift: i32) -> BigInt {
    if shift >= 0 {
        v << shift as usize
    } else {
        let down = (-shift) as usize;
        (v + (BigInt::one() << (down - 1))) >> down
    }
}

/// A validated pair of columns: both grids and midpoints, the products' grid and, for
/// regress, the squares of x on theirs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairSpec {
    pub neighbours: Neighbours,
    pub x: Axis,
    pub y: Axis,
    pub products: Rescaled,
    pub squares: Option<Rescaled>,
    parts: u32,
}

impl PairSpec {
    /// Chooses every grid from the flags and ε (never from the data) and refuses, before any
    /// data is read, bounds whose values, products or squares would exceed 2^62 grid units or
    /// whose 2^64 rows would not print as a double.
    pub fn new(bounds: &Pair<Bounds>, neighbours: Neighbours, mechanism: &Mechanism, squares: bool) -> Result<PairSpec, Error> {
        let sums = 2 + u32::from(squares) + 1;
        let parts = sums + u32::from(neighbours == Neighbours::AddRemove);
        let part = mechanism.split(parts);
        let x = Axis::new(&bounds.x, neighbours, &part)?;
        let y = Axis::new(&bounds.y, neighbours, &part)?;
        let widest = x.half().max(y.half());
        if (&widest * &widest) * BigInt::from(u64::MAX) > exact(f64::MAX) {
            return Err(Error::usage(format!(
                "bounds [{}, {}] and [{}, {}] are too wide: 2^64 rows of their products would exceed \
                 the largest floating-point number; narrow --lower/--upper",
                real(bounds.x.lower()),
                real(bounds.x.upper()),
                real(bounds.y.lower()),
                real(bounds.y.upper())
            )));
        }
        let (hx, hy) = (BigInt::from(x.half_units()), BigInt::from(y.half_units()));
        let (kx, ky) = (x.bounds.grid.exponent(), y.bounds.grid.exponent());
        let products = Rescaled::new(&(x.half() * y.half()), &part, kx + ky, &(&hx * &hy), "product")?;
        let squares = if squares {
            Some(Rescaled::new(&(x.half() * x.half()), &part, 2 * kx, &(&hx * &hx), "squared x")?)
        } else {
            None
        };
        Ok(PairSpec { neighbours, x, y, products, squares, parts })
    }

    /// Each part's mechanism: ε or ρ split exactly evenly.
    pub fn part(&self, mechanism: &Mechanism) -> Mechanism {
        mechanism.split(self.parts)
    }

    /// The parts from the accumulated totals, in release order: count (add-remove), shifted
    /// sums of x and y, squares of x (regress), products.
    pub fn aggregate(&self, totals: &Totals) -> Vec<(&'static str, Aggregate<i128>)> {
        let replace = self.neighbours == Neighbours::Replace;
        let mut parts = vec![];
        if !replace {
            parts.push(("count", count::aggregate(totals.rows)));
        }
        let sum = |value, axis: &Axis| Aggregate::scalar(value, axis.sum_sensitivity(self.neighbours), axis.bounds.grid);
        parts.push(("shifted_sum_x", sum(totals.x, &self.x)));
        parts.push(("shifted_sum_y", sum(totals.y, &self.y)));
        if let Some(squares) = &self.squares {
            // Squares lie in [0, max] under both units.
            parts.push(("sum_of_squares_x", Aggregate::scalar(totals.xx, squares.max, squares.grid)));
        }
        let products = self.products;
        // Products lie in [−max, max]: a replaced row moves their sum by up to 2·max.
        let delta = if replace { 2 * products.max } else { products.max };
        parts.push(("sum_of_products", Aggregate::scalar(totals.xy, delta, products.grid)));
        parts
    }

    /// Folds a sequence of (x, y) pairs, as [`PairFold`] does row by row.
    pub fn aggregate_of(&self, rows: impl IntoIterator<Item = (f64, f64)>) -> Vec<(&'static str, Aggregate<i128>)> {
        let mut totals = Totals::default();
        rows.into_iter().for_each(|(x, y)| totals.add(self, x, y));
        self.aggregate(&totals)
    }

    /// h_x·h_y: the largest |covariance| of values in the box.
    pub fn max_covariance(&self) -> BigRational {
        self.x.half() * self.y.half()
    }

    /// A noisy shifted sum of x over c, as a real.
    pub fn x_mean(&self, sum: &BigInt, c: &BigRational) -> BigRational {
        BigRational::from_integer(sum.clone()) * self.x.bounds.grid.spacing() / c
    }

    pub fn y_mean(&self, sum: &BigInt, c: &BigRational) -> BigRational {
        BigRational::from_integer(sum.clone()) * self.y.bounds.grid.spacing() / c
    }

    /// A noisy sum of products over c, as a real.
    pub fn mean_of(&self, products: &BigInt, c: &BigRational) -> BigRational {
        BigRational::from_integer(products.clone()) * self.products.grid.spacing() / c
    }
}

/// The running exact totals of a pair of columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub rows: u64,
    pub x: i128,
    pub y: i128,
    pub xx: i128,
    pub xy: i128,
}

impl Totals {
    #[inline]
    fn add(&mut self, spec: &PairSpec, x: f64, y: f64) {
        let (x, y) = (spec.x.shifted(x), spec.y.shifted(y));
        self.rows += 1;
        self.x += x;
        self.y += y;
        if let Some(squares) = &spec.squares {
            self.xx += squares.of(x * x);
        }
        self.xy += spec.products.of(x * y);
    }
}

/// The fold of a two-column statistic: a row counts only when both cells give a number (a
/// cell skipped under `--invalid skip` drops its row).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PairFold {
    pub spec: PairSpec,
    pub cells: Pair<NumberCell>,
    pub totals: Totals,
}

impl PairFold {
    pub fn new(spec: PairSpec, cells: Pair<NumberCell>) -> PairFold {
        PairFold { spec, cells, totals: Totals::default() }
    }
}

impl Fold for PairFold {
    #[inline]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        let x = self.cells.x.read(row)?;
        let y = self.cells.y.read(row)?;
        if let (Some(x), Some(y)) = (x, y) {
            self.totals.add(&self.spec, x, y);
        }
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        let (a, b) = (&mut self.totals, other.totals);
        a.rows += b.rows;
        a.x += b.x;
        a.y += b.y;
        a.xx += b.xx;
        a.xy += b.xy;
    }
    fn widest_column(&self) -> Option<usize> {
        Some(self.cells.x.index.max(self.cells.y.index))
    }
}

/// The noisy parts of a two-column release, drawn at their exact shares.
pub struct Drawn {
    pub parts: Vec<(&'static str, noise::Drawn<BigInt>)>,
    /// The public n under replace.
    pub n: Option<u64>,
}

/// Draws every part of `fold` at ε/parts or ρ/parts (refusing n = 0 under replace).
pub fn draw(spec: &PairSpec, fold: &PairFold, cx: &Context, query: &str, rng: &mut dyn RngCore) -> Result<Drawn, Error> {
    let n = (spec.neighbours == Neighbours::Replace).then_some(fold.totals.rows);
    if n == Some(0) {
        return Err(Error::usage(format!(
            "{}: {query} under --neighbours replace needs at least one row (n = 0 has none)",
            cx.source
        )));
    }
    let part = spec.part(cx.mechanism);
    let parts = spec.aggregate(&fold.totals).into_iter().map(|(name, a)| (name, noise::draw(&a, &part, rng))).collect();
    Ok(Drawn { parts, n })
}

impl Drawn {
    pub fn get(&self, name: &str) -> &BigInt {
        &self.parts.iter().find(|(n, _)| *n == name).unwrap_or_else(|| unreachable!("every part is drawn")).1.value
    }

    fn noise(&self, name: &str) -> Option<&noise::Drawn<BigInt>> {
        self.parts.iter().find(|(n, _)| *n == name).map(|(_, noisy)| noisy)
    }

    /// c = max(1, noisy count) under add-remove, the public n under replace.
    pub fn denominator(&self) -> BigRational {
        match self.n {
            Some(n) => BigRational::from_integer(BigInt::from(n)),
            None => BigRational::from_integer(self.get("count").clone().max(BigInt::one())),
        }
    }

    /// Intervals that hold the true count, sums, squares and products at once with
    /// probability >= 1 − parts·β (each part's noise bound at β), as reals.
    pub fn box4(&self, spec: &PairSpec, beta: f64) -> Box4 {
        let around = |name: &str| {
            self.noise(name).map(|noisy| {
                Interval::around(&noisy.value, noisy.noise.error_bound_units(beta), &noisy.noise.grid().spacing())
            })
        };
        let count = match self.n {
            Some(n) => Interval::point(BigRational::from_integer(BigInt::from(n))),
            None => around("count").unwrap_or_else(|| Interval::point(BigRational::zero())),
        };
        let point = || Interval::point(BigRational::zero());
        Box4 {
            count,
            x: around("shifted_sum_x").unwrap_or_else(point),
            y: around("shifted_sum_y").unwrap_or_else(point),
            squares: around("sum_of_squares_x"),
            products: around("sum_of_products").unwrap_or_else(point),
            squares_grid: spec.squares.map(|s| s.grid.spacing()),
            products_grid: spec.products.grid.spacing(),
        }
    }

    /// What the post-processing divides by and how the values were shifted.
    pub fn shift_note(&self, spec: &PairSpec, formula: &str) -> String {
        let mx = spec.x.bounds.grid.to_f64(&BigInt::from(spec.x.midpoint));
        let my = spec.y.bounds.grid.to_f64(&BigInt::from(spec.y.midpoint));
        let c = match self.n {
            Some(n) => format!("the public row count n = {n}"),
            None => "max(1, noisy count)".to_string(),
        };
        format!("x shifted by its midpoint {mx}, y by {my}; {formula} with c = {c}")
    }

    /// The release of `statistic` with every part, its bounds and its accuracy.
    pub fn release<S: Statistic>(&self, statistic: &S, cx: &Context, spec: &PairSpec, bound: f64) -> Result<Release, Error> {
        let noise = Noise {
            bounds: Some(BoundsInfo::of(&spec.x.bounds)),
            bounds_y: Some(BoundsInfo::of(&spec.y.bounds)),
            rows: self.n,
            parts: self.parts.iter().map(|(name, noisy)| Part::drawn(name, noisy)).collect(),
            ..Noise::multi(cx.mechanism, cx.neighbours, Accuracy::value(cx.confidence, bound))
        };
        let cost = Cost::sequential(self.parts.iter().map(|(name, noisy)| noisy.noise.mechanism().cost(*name)).collect());
        cx.release(statistic, noise, cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::bounds::Finite;
    use crate::query::sum::tests::{awkward_value, bounds_and_eps, mechanisms};
    use proptest::prelude::*;

    fn bounds(l: f64, u: f64) -> Bounds {
        Bounds::new(Finite::from_f64(l).unwrap(), Finite::from_f64(u).unwrap()).unwrap()
    }

    /// Values at and beyond the extremes of the bounds, where products are largest, besides
    /// the awkward ones.
    fn pair_value() -> impl Strategy<Value = (f64, f64)> {
        let v = prop_oneof![awkward_value(), Just(f64::MAX), Just(-f64::MAX), Just(-1e6), Just(1e6)];
        (v.clone(), v)
    }

    proptest! {
        /// Each part (count, shifted sums, squares, products) moves by at most its own Δ (and
        /// Δ₂) on neighbouring datasets: add and remove under add-remove, replace under replace,
        /// on the grids of both mechanisms.
        #[test]
        fn each_part_moves_by_at_most_its_sensitivity(
            (bx, eps) in bounds_and_eps(),
            (by, _) in bounds_and_eps(),
            rows in proptest::collection::vec(pair_value(), 1..30),
            other in pair_value(),
            at in any::<prop::sample::Index>(),
            squares in any::<bool>(),
        ) {
            let i = at.index(rows.len());
            let crate::query::statistic::Neighbouring { removed, added, changed } =
                crate::query::statistic::neighbouring(&rows, other, i);
            let pair = Pair { x: bx, y: by };
            for (neighbours, others) in [
                (Neighbours::AddRemove, vec![removed, added]),
                (Neighbours::Replace, vec![changed]),
            ] {
                for mechanism in mechanisms(&eps) {
                    let Ok(spec) = PairSpec::new(&pair, neighbours, &mechanism, squares) else { continue };
                    let base = spec.aggregate_of(rows.iter().copied());
                    for o in &others {
                        for ((name, a), (_, b)) in base.iter().zip(spec.aggregate_of(o.iter().copied())) {
                            let moved = a.value - b.value;
                            prop_assert!(a.sensitivity >= 1);
                            prop_assert!(moved.abs() <= a.sensitivity, "{}: moved {} > Δ {}", name, moved.abs(), a.sensitivity);
                            prop_assert!(moved * moved <= a.l2_squared, "{}: moved {} > Δ₂", name, moved.abs());
                        }
                    }
                }
            }
        }

        /// Products and squares stay within ±max (squares within [0, max]) for any values,
        /// and equal the exact rescaled product, rounded.
        #[test]
        fn products_are_exact_and_bounded(
            (bx, eps) in bounds_and_eps(),
            (by, _) in bounds_and_eps(),
            (x, y) in pair_value(),
        ) {
            for neighbours in [Neighbours::AddRemove, Neighbours::Replace] {
                let Ok(spec) = PairSpec::new(&Pair { x: bx, y: by }, neighbours, &Mechanism::Laplace(eps.clone()), true) else { continue };
                let (sx, sy) = (spec.x.shifted(x), spec.y.shifted(y));
                let p = spec.products.of(sx * sy);
                prop_assert!(p.abs() <= spec.products.max);
                prop_assert_eq!(BigInt::from(p), round_shift_big(&(BigInt::from(sx) * BigInt::from(sy)), spec.products.shift));
                let squares = spec.squares.unwrap();
                let q = squares.of(sx * sx);
                prop_assert!(q >= 0 && q <= squares.max);
            }
        }
    }

    /// At the extremes of the box every row contributes ±max: the sensitivity is attained.
    #[test]
    fn extreme_rows_reach_the_sensitivity() {
        let eps = Mechanism::Laplace("1".parse().unwrap());
        let spec = PairSpec::new(&Pair { x: bounds(0.0, 10.0), y: bounds(-4.0, 4.0) }, Neighbours::AddRemove, &eps, true).unwrap();
        let corner = spec.aggregate_of([(10.0, 4.0)]);
        let opposite = spec.aggregate_of([(0.0, 4.0)]);
        let products = |a: &[(&str, Aggregate<i128>)]| a.iter().find(|(n, _)| *n == "sum_of_products").unwrap().1.clone();
        assert_eq!(products(&corner).value, spec.products.max);
        assert_eq!(products(&opposite).value, -spec.products.max);
        assert_eq!(products(&corner).sensitivity, spec.products.max);
        // h_x·h_y = 5·4 = 20 over ε/5 = 100: G = 2^(6 − 40); max = 20·2^34 exactly.
        assert_eq!(spec.products.grid.exponent(), -34);
        assert_eq!(spec.products.max, 20i128 << 34);
        let names: Vec<&str> = corner.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["count", "shifted_sum_x", "shifted_sum_y", "sum_of_squares_x", "sum_of_products"]);
        let replace = PairSpec::new(&Pair { x: bounds(0.0, 10.0), y: bounds(-4.0, 4.0) }, Neighbours::Replace, &eps, false).unwrap();
        let parts = replace.aggregate_of([(10.0, 4.0)]);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].1.sensitivity, 2 * replace.products.max);
        assert_eq!(replace.part(&eps), Mechanism::Laplace("1".parse::<crate::privacy::epsilon::Epsilon>().unwrap().split(3)));
    }

    #[test]
    fn exact_covariance_of_known_values() {
        let eps = Mechanism::Laplace("1".parse().unwrap());
        let spec = PairSpec::new(&Pair { x: bounds(0.0, 10.0), y: bounds(0.0, 100.0) }, Neighbours::AddRemove, &eps, false).unwrap();
        // y = 10x on 1..5 (mean 3, 30): cov = 10·var(x) = 10·2 = 20. 12 and −3 clamp to 10 and 0.
        let rows = [(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (4.0, 40.0), (5.0, 50.0)];
        let parts = spec.aggregate_of(rows);
        let value = |name: &str| BigInt::from(parts.iter().find(|(n, _)| *n == name).unwrap().1.value);
        let c = BigRational::from_integer(BigInt::from(5));
        let cov = spec.mean_of(&value("sum_of_products"), &c) - spec.x_mean(&value("shifted_sum_x"), &c) * spec.y_mean(&value("shifted_sum_y"), &c);
        assert_eq!(cov, BigRational::from_integer(BigInt::from(20)));
        let clamped = spec.aggregate_of([(12.0, -3.0)]);
        assert_eq!(clamped[1].1.value, spec.x.half_units()); // 10 − 5
        assert_eq!(clamped[2].1.value, -spec.y.half_units()); // 0 − 50
    }

    #[test]
    fn refuses_bounds_too_wide() {
        let eps = Mechanism::Laplace("1".parse().unwrap());
        let wide = Pair { x: bounds(-1e300, 1e300), y: bounds(0.0, 1.0) };
        assert!(PairSpec::new(&wide, Neighbours::AddRemove, &eps, false).is_err());
        let huge = Mechanism::Laplace("1e30".parse().unwrap());
        let err = PairSpec::new(&Pair { x: bounds(0.0, 1.0), y: bounds(0.0, 1.0) }, Neighbours::Replace, &huge, false).unwrap_err();
        assert!(err.message().contains("2^62"), "{err}");
    }
}
