//! **Private clamping bounds** — when `--lower/--upper` are not given, a share ε_b of ε finds
//! them, or finds that the data are too few for it.
//!
//! One pass gathers, per sign and per f64 exponent, the row count and the exact sum of the
//! mantissas (an i128 per exponent cannot overflow: 2^53 per row, fewer than 2^64 rows). From
//! these the exact sum of the values clamped to any bounds that are ±powers of two or 0 follows
//! without a second pass, because every exponent bucket lies wholly below, inside or above such
//! bounds; so do the counts on either side of every cut of the public ladder below.
//!
//! **The search**: AboveThreshold over a geometric ladder, run from both ends (Dwork, Naor,
//! Reingold, Rothblum, Vadhan 2009; Lyu, Su, Li 2017 for monotone queries; the scan is that of
//! Durfee 2023, "Unbounded differentially private quantile and maximum estimation"). The ladder
//! is the public cuts −2^64 < … < −2^-32 < 0⁻ < 0⁺ < 2^-32 < … < 2^64 (0⁻ has the negative rows
//! below it, 0⁺ the rows ≤ 0). With n the rows that hold a value and τ, S public (below):
//! - the upper scan goes up the ladder with the queries S − n (the *sentinel*), then
//!   τ − #(rows above cut j); U is the cut where it stops;
//! - the lower scan goes down it with τ − #(rows at or below cut j); L is the cut where it stops.
//!
//! Privacy unit and sensitivity: every query is a public constant minus the number of rows in
//! a ray of the line (all rows, the rows above a cut, the rows at or below one). Adding or
//! removing a row moves each such count by at most 1, all of one scan's counts the same way;
//! changing a row from x to x' > x moves every count of an upward ray up or not at all, and
//! every count of a downward ray down or not at all (likewise for x' < x); a row that enters or
//! leaves `--where` is an addition or a removal. So under both units Δ = 1 and each scan's
//! queries are monotone, and each scan, with ε_b/4 for its threshold and ε_b/4 for its queries,
//! is ε_b/2-DP (`privacy::above_threshold`, c = 1); the two scans compose to ε_b, and the query
//! then runs with ε − ε_b: ε in total, every part exact.
//!
//! The constants come from ε_b alone: τ is the threshold noise's one-sided bound at β/2
//! (β = [`SEARCH_BETA`]), so once a scan is past every row it stops within a cut or two;
//! S = 3·τ; α is the scan's error bound at β over its queries. With probability ≥ 1 − β per
//! scan: at most τ + α rows lie beyond each bound, U is at most the first cut at or above every
//! row (L likewise), and the sentinel passes when n ≥ S + α (the "rows needed" of the message).
//!
//! **No bounds** is an outcome of the search, decided from the two stopping indices only: the
//! upper scan stopped at its sentinel (too few rows for this ε_b), a scan ran off the ladder
//! (values beyond ±2^64), or the lower stop is not below the upper one. The release is then
//! [`Error::Withheld`], whose message names only flags and numbers computed from them, charged
//! like any release; never a number clamped to meaningless bounds.

use crate::error::Error;
use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, ToPrimitive, Zero};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::data::cell::NumberCell;
use crate::data::row::{BadCell, Fold, Row};
use crate::numeric::bounds::{Bounds, Finite};
use crate::numeric::exact::{decimal, exact};
use crate::numeric::format::real;
use crate::numeric::grid::Grid;
use crate::privacy::above_threshold::AboveThreshold;
use crate::privacy::accountant::Cost;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::sampler::discrete_laplace_error_bound;
use crate::query::per_id::PerIdFold;
use crate::report::release::{BoundsInfo, Guarantee, Release};

/// Smallest and largest exponents of the ladder's cuts ±2^k.
pub const MIN_EXP: i32 = -32;
pub const TOP_EXP: i32 = 64;
/// β of the search's public constants (module comment).
pub const SEARCH_BETA: f64 = 0.05;
/// S = SENTINEL_FACTOR·τ: the sentinel passes when the rows are a few times what a bound may
/// leave beyond itself. 3 releases wherever the former histogram search gave a usable mean and
/// withholds where it fell back to ±2^64 (bench/bounds.py; 10 withheld more, e.g. 1 000 rows at
/// ε = 1, where that search's error was 3 %).
const SENTINEL_FACTOR: i128 = 3;
/// Exponent fields of an f64 (0 = subnormal, 2047 = inf/NaN, never stored).
const EXPONENTS: usize = 2047;
/// Scale of the exact sums: every finite f64 is a multiple of 2^-1074.
const FINEST: i64 = 1074;

/// Count and exact mantissa sum per sign and exponent of one column.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LogFold {
    pub cell: NumberCell,
    /// Indexed by [sign][exponent field]: (rows, Σ mantissa with the implicit bit).
    buckets: Vec<[(u64, i128); 2]>,
    zeros: u64,
}

impl LogFold {
    pub fn new(cell: NumberCell) -> LogFold {
        LogFold { cell, buckets: vec![[(0, 0); 2]; EXPONENTS], zeros: 0 }
    }

    #[inline]
    pub fn add(&mut self, x: f64) {
        let bits = x.to_bits();
        let field = ((bits >> 52) & 0x7ff) as usize;
        let fraction = (bits & ((1u64 << 52) - 1)) as i128;
        if field == 0 && fraction == 0 {
            self.zeros += 1;
            return;
        }
        let mantissa = if field == 0 { fraction } else { fraction | (1i128 << 52) };
        let bucket = &mut self.buckets[field][(bits >> 63) as usize];
        bucket.0 += 1;
        bucket.1 += mantissa;
    }

    /// Rows seen (with a value).
    pub fn rows(&self) -> u64 {
        self.zeros + self.buckets.iter().map(|b| b[0].0 + b[1].0).sum::<u64>()
    }

    /// For every cut of the ladder, ascending, the rows on its low side: at or below −2^k, below
    /// 0 (cut 0⁻), at or below 0 (cut 0⁺), below 2^k. A bucket of exponent e holds magnitudes in
    /// [2^e, 2^(e+1)), so it lies wholly on one side of every cut.
    pub fn cut_counts(&self) -> Vec<u64> {
        let exps = (TOP_EXP - MIN_EXP + 1) as usize;
        // [k]: negative rows with |x| >= 2^(MIN_EXP + k); positive rows with x < 2^(MIN_EXP + k).
        let mut negative_at_least = vec![0u64; exps];
        let mut positive_below = vec![0u64; exps];
        let mut negatives = 0u64;
        for (field, bucket) in self.buckets.iter().enumerate() {
            // Subnormals lie below 2^-1022.
            let e = if field == 0 { -1075 } else { field as i32 - 1023 };
            let (positive, negative) = (bucket[0].0, bucket[1].0);
            negatives += negative;
            for k in 0..exps {
                if e >= MIN_EXP + k as i32 {
                    negative_at_least[k] += negative;
                } else {
                    positive_below[k] += positive;
                }
            }
        }
        let mut below: Vec<u64> = negative_at_least.into_iter().rev().collect();
        below.push(negatives);
        below.push(negatives + self.zeros);
        below.extend(positive_below.into_iter().map(|p| negatives + self.zeros + p));
        below
    }

    /// The exact sum of every value clamped to [L, U] (L, U ±powers of two or 0), rounded once to
    /// the grid (nearest, ties up). Rounding a sum that moves by at most Δ (a whole number of grid
    /// units) moves it by at most Δ units too: rounding is monotone and commutes with adding whole
    /// units, so the sensitivities of the per-row path hold unchanged.
    pub fn clamped_sum_units(&self, bounds: &Bounds, grid: Grid) -> i128 {
        let (lower, upper) = (exact(bounds.lower()), exact(bounds.upper()));
        let zero = BigRational::zero();
        let scaled = |r: &BigRational| (r * BigInt::one().shl_finest()).to_integer();
        let (lower_units, upper_units) = (scaled(&lower), scaled(&upper));
        // The exact sum, in units of 2^-1074.
        let mut sum = BigInt::zero();
        let clamp_point = if lower > zero {
            &lower_units
        } else if upper < zero {
            &upper_units
        } else {
            &sum.clone()
        };
        sum += clamp_point * BigInt::from(self.zeros);
        for (field, bucket) in self.buckets.iter().enumerate() {
            let low_exp = if field == 0 { -FINEST } else { field as i64 - 1023 };
            let scale_shift = if field == 0 { 0 } else { field as i64 - 1 };
            for (sign, &(rows, mantissas)) in bucket.iter().enumerate() {
                if rows == 0 {
                    continue;
                }
                // The bucket's magnitudes lie in [2^low_exp, 2^(low_exp+1)) (subnormals below 2^-1022).
                let (near, far) = (pow2(low_exp), pow2(low_exp + 1));
                let (lo, hi) = if sign == 0 { (near, far) } else { (-far, -near) };
                let rows = BigInt::from(rows);
                if lo >= upper {
                    sum += &upper_units * rows;
                } else if hi <= lower {
                    sum += &lower_units * rows;
                } else {
                    let part = BigInt::from(mantissas) << scale_shift as usize;
                    sum += if sign == 0 { part } else { -part };
                }
            }
        }
        round_shift(&sum, FINEST + grid.exponent() as i64)
    }
}

trait ShlFinest {
    fn shl_finest(self) -> BigInt;
}

impl ShlFinest for BigInt {
    fn shl_finest(self) -> BigInt {
        self << FINEST as usize
    }
}

/// 2^e as an exact rational.
fn pow2(e: i64) -> BigRational {
    if e >= 0 {
        BigRational::from_integer(BigInt::one() << e as usize)
    } else {
        BigRational::new(BigInt::one(), BigInt::one() << (-e) as usize)
    }
}

/// n / 2^s rounded to the nearest integer, ties towards +∞, saturating to i128.
fn round_shift(n: &BigInt, s: i64) -> i128 {
    let rounded = if s <= 0 {
        n << (-s) as usize
    } else {
        let half = BigInt::one() << (s - 1) as usize;
        (n + half).div_floor(&(BigInt::one() << s as usize))
    };
    rounded.to_i128().unwrap_or(if rounded < BigInt::zero() { i128::MIN } else { i128::MAX })
}

impl Fold for LogFold {
    #[inline]
    fn row(&mut self, record: &Row) -> Result<(), BadCell> {
        if let Some(x) = self.cell.read(record)? {
            self.add(x);
        }
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        self.zeros += other.zeros;
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets) {
            for s in 0..2 {
                mine[s].0 += theirs[s].0;
                mine[s].1 += theirs[s].1;
            }
        }
    }
    fn heap_bytes(&self) -> usize {
        self.buckets.len() * std::mem::size_of::<[(u64, i128); 2]>()
    }
    fn widest_column(&self) -> Option<usize> {
        Some(self.cell.index)
    }
}

/// Bounds chosen privately, with what they cost.
#[derive(Clone, Debug)]
pub struct PrivateBounds {
    pub bounds: Bounds,
    pub eps: Epsilon,
}

/// Number of cuts on the ladder: ±2^k for k in MIN_EXP..=TOP_EXP, and zero twice.
pub const CUTS: usize = 2 * (TOP_EXP - MIN_EXP + 1) as usize + 2;

/// The value of cut j (0 = −2^TOP_EXP, ascending): a clamping bound at that cut.
fn cut_value(j: usize) -> f64 {
    let per_sign = (TOP_EXP - MIN_EXP + 1) as usize;
    let p = |k: i32| 2f64.powi(k);
    if j < per_sign {
        -p(TOP_EXP - j as i32)
    } else if j < per_sign + 2 {
        0.0
    } else {
        p(MIN_EXP + (j - per_sign - 2) as i32)
    }
}

/// The public parameters of one search at its share ε_b, fixed before any data is read: each of
/// the two scans is AboveThreshold at ε_b/2 (threshold and queries ε_b/4 each), Δ = 1, monotone.
#[derive(Clone, Debug)]
pub struct Search {
    pub scan: AboveThreshold,
    /// τ: the offset of every ladder query, the threshold noise's one-sided bound at β/2.
    pub offset: i128,
    /// S = SENTINEL_FACTOR·τ: the upper scan's first query is S − n.
    pub sentinel: i128,
    /// α: the scan's error bound at β over its queries.
    pub alpha: i128,
}

impl Search {
    pub fn new(eps: &Epsilon) -> Search {
        let scan = AboveThreshold {
            sensitivity: 1,
            monotone: true,
            threshold_eps: eps.split(4),
            queries_eps: eps.split(4),
        };
        let offset = discrete_laplace_error_bound(&scan.threshold_scale(), SEARCH_BETA);
        let offset = i128::try_from(offset).unwrap_or(i128::MAX / 64);
        let alpha = i128::try_from(scan.error_bound(CUTS + 1, SEARCH_BETA)).unwrap_or(i128::MAX / 64);
        Search { scan, offset, sentinel: offset.saturating_mul(SENTINEL_FACTOR), alpha }
    }

    /// The rows above which the upper scan passes its sentinel with probability at least 1 − β:
    /// S + α, from ε_b alone.
    pub fn rows_needed(&self) -> i128 {
        self.sentinel.saturating_add(self.alpha)
    }
}

/// Runs the two scans (ε_b in total) and picks the bounds; None is the outcome "no bounds":
/// the upper scan stopped at its sentinel or ran off the ladder, the lower scan ran off it, or
/// the two stops crossed. Every branch after the scans is post-processing of their two indices.
pub fn choose(fold: &LogFold, eps: &Epsilon, rng: &mut dyn RngCore) -> Option<PrivateBounds> {
    let search = Search::new(eps);
    let below = fold.cut_counts();
    let n = fold.rows() as i128;
    let tau = search.offset;
    // Upper: ascending, the sentinel S − n first, then τ − #(rows above cut j).
    let upper_queries =
        std::iter::once(search.sentinel - n).chain(below.iter().map(|&b| tau - (n - b as i128)));
    let upper = search.scan.run(upper_queries, rng)?.checked_sub(1)?;
    // Lower: descending, τ − #(rows at or below cut j).
    let lower = CUTS - 1 - search.scan.run(below.iter().rev().map(|&b| tau - b as i128), rng)?;
    Some(PrivateBounds { bounds: outcome(lower, upper)?, eps: eps.clone() })
}

/// The bounds at the lower scan's cut and the upper scan's: None unless lower < upper; the two
/// cuts at zero (every row that counted was 0) give [0, 2^MIN_EXP].
fn outcome(lower: usize, upper: usize) -> Option<Bounds> {
    if lower >= upper {
        return None;
    }
    let (lo, mut hi) = (cut_value(lower), cut_value(upper));
    if lo == hi {
        hi = 2f64.powi(MIN_EXP);
    }
    Bounds::new(Finite::from_f64(lo)?, Finite::from_f64(hi)?).ok()
}

/// The outcome "no bounds" as the release of `query` on `column`: only flags and numbers
/// computed from them (`total` is the statistic's ε, `share` the search's).
pub fn withheld(query: &str, column: &str, total: Option<&Epsilon>, share: &Epsilon) -> Error {
    let needed = roughly(Search::new(share).rows_needed());
    let total = total.map(|t| format!(" {t}")).unwrap_or_default();
    Error::withheld(format!(
        "{query} of {column}: no bounds found privately at epsilon{total} (bounds share {share}): \
         give --lower/--upper, or a larger --eps or --bounds-eps; at this share a column needs \
         roughly {needed} rows"
    ))
}

/// n rounded up to two significant digits.
fn roughly(n: i128) -> i128 {
    let mut step = 1i128;
    while n / step >= 100 {
        step *= 10;
    }
    (n + step - 1) / step * step
}

/// Up to this ε no outcome of the search can fail a sum's or a mean's grid: the grid is finer
/// than Δ/ε by less than 2^41, so the largest bound is below 2^41·ε·max(|L|,|U|)/Δ grid units,
/// and for two cuts of the ladder max(|L|,|U|)/Δ ≤ 4 (a mean on [2^k, 2^(k+1)]); 2^43·2^16
/// is far below the 2^62 limit. Only above it is every outcome tried (a test tries them all at
/// this ε).
const OUTCOMES_SAFE_UP_TO: u64 = 1 << 16;

/// Checks, before any data is read, that the statistic can be built on every pair of bounds
/// the private search can return (`outcome` of any two cuts), so that no choice made from the
/// data can fail afterwards: a failure then would be an output that depends on the data and that
/// nobody was charged for.
pub fn check_every_outcome(
    query: &str,
    rest: &Epsilon,
    mut build: impl FnMut(Bounds) -> Result<(), Error>,
) -> Result<(), Error> {
    if rest.as_rational() <= &BigRational::from_integer(OUTCOMES_SAFE_UP_TO.into()) {
        return Ok(());
    }
    let pairs = (0..CUTS).flat_map(|lo| (lo..CUTS).filter_map(move |hi| outcome(lo, hi)));
    for bounds in pairs {
        if let Err(why) = build(bounds) {
            return Err(Error::usage(format!(
                "with bounds found privately the {query} gets epsilon {rest}, and some bounds the \
                 search can return ([{}, {}]) would fail: {}; give --lower/--upper, or a smaller --eps",
                real(bounds.lower()),
                real(bounds.upper()),
                why.message()
            )));
        }
    }
    Ok(())
}

/// Records in a release that its bounds were found privately and what that cost: in the JSON
/// (`bounds`, `accounting`), in its post-processing, and in a note for stderr. `inner` is what
/// the statistic itself spent with the rest of ε.
pub fn annotate(mut release: Release, found: &PrivateBounds) -> Result<Release, crate::error::Error> {
    let accounting = Cost::sequential(vec![Cost::part("bounds", &found.eps), release.accounting.clone()]);
    let total = accounting.epsilon()?;
    release.noise.guarantee = Guarantee::of(&accounting.total()?, None)?;
    release.accounting = accounting;
    let (lower, upper) = (found.bounds.lower(), found.bounds.upper());
    let (lo, hi) = (real(lower), real(upper));
    let info = release.noise.bounds.get_or_insert(BoundsInfo {
        lower,
        upper,
        source: "private",
        epsilon: None,
        epsilon_exact: None,
    });
    info.source = "private";
    info.epsilon = Some(found.eps.to_f64_up());
    info.epsilon_exact = Some(found.eps.exact_string());
    release.notes.push(format!(
        "bounds [{lo}, {hi}] were estimated privately with epsilon {} of {}; \
         give --lower/--upper to spend all of it on the {}",
        found.eps,
        decimal(total.as_rational()),
        release.query
    ));
    release.post_processing.push(format!("clamping bounds [{lo}, {hi}] chosen privately"));
    Ok(release)
}

/// The fold of a statistic whose bounds are given, or, when they are to be found privately,
/// the log-scale statistics of its column; or, for a value per person (`--total-per-id`,
/// `--average-per-id`), the persons' clamped values ([`PerIdFold`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Clamped<F> {
    Given(F),
    Private(LogFold),
    PerId(PerIdFold),
}

impl<F: Fold> Fold for Clamped<F> {
    #[inline(always)]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        match self {
            Clamped::Given(f) => f.row(row),
            Clamped::Private(f) => f.row(row),
            Clamped::PerId(f) => f.row(row),
        }
    }
    fn merge(&mut self, other: Self) {
        match (self, other) {
            (Clamped::Given(a), Clamped::Given(b)) => a.merge(b),
            (Clamped::Private(a), Clamped::Private(b)) => a.merge(b),
            (Clamped::PerId(a), Clamped::PerId(b)) => a.merge(b),
            // Folds of one scan are cloned from one empty fold: never mixed.
            _ => {}
        }
    }
    fn widest_column(&self) -> Option<usize> {
        match self {
            Clamped::Given(f) => f.widest_column(),
            Clamped::Private(f) => f.widest_column(),
            Clamped::PerId(f) => f.widest_column(),
        }
    }
    fn heap_bytes(&self) -> usize {
        match self {
            Clamped::Given(f) => f.heap_bytes(),
            Clamped::Private(f) => f.heap_bytes(),
            Clamped::PerId(f) => f.heap_bytes(),
        }
    }
    fn part_heap_bytes(&self, rows: usize) -> usize {
        match self {
            Clamped::Given(f) => f.part_heap_bytes(rows),
            Clamped::Private(f) => f.part_heap_bytes(rows),
            Clamped::PerId(f) => f.part_heap_bytes(rows),
        }
    }
    fn part_end(&mut self) {
        match self {
            Clamped::Given(f) => f.part_end(),
            Clamped::Private(f) => f.part_end(),
            Clamped::PerId(f) => f.part_end(),
        }
    }
    fn person_end(&mut self) {
        match self {
            Clamped::Given(f) => f.person_end(),
            Clamped::Private(f) => f.person_end(),
            Clamped::PerId(f) => f.person_end(),
        }
    }
    fn hears_persons(&self) -> bool {
        match self {
            Clamped::Given(f) => f.hears_persons(),
            Clamped::Private(f) => f.hears_persons(),
            Clamped::PerId(_) => true,
        }
    }
}

/// `--bounds-eps` (ε_b) and the rest of ε: ε_b must leave something for the query.
pub fn split(eps: &Epsilon, bounds_eps: Option<&Epsilon>) -> Result<(Epsilon, Epsilon), Error> {
    let share = match bounds_eps {
        Some(b) => b.clone(),
        None => eps.split(10),
    };
    match eps.minus(&share) {
        Some(rest) => Ok((share, rest)),
        None => Err(Error::usage(format!("--bounds-eps ({share}) must be less than --eps ({eps})"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::noise::Mechanism;
    use crate::privacy::unit::Neighbours;

    /// The shortcut of [`check_every_outcome`] is sound: at [`OUTCOMES_SAFE_UP_TO`] every outcome
    /// builds a sum and a mean under both units (the search is forced by calling it just above).
    #[test]
    fn every_outcome_builds_up_to_the_shortcut() {
        use crate::query::mean::MeanSpec;
        use crate::query::sum::SumSpec;
        let at: Epsilon = OUTCOMES_SAFE_UP_TO.to_string().parse().unwrap();
        let mut tried = 0;
        for unit in [Neighbours::AddRemove, Neighbours::Replace] {
            check_every_outcome("test", &"1e9".parse().unwrap(), |_| {
                tried += 1;
                Ok(())
            })
            .unwrap();
            let forced: Epsilon = "65536.000001".parse().unwrap();
            let at = Mechanism::Laplace(at.clone());
            check_every_outcome("sum", &forced, |b| SumSpec::new(b, unit, &at).map(drop)).unwrap();
            check_every_outcome("mean", &forced, |b| MeanSpec::new(b, unit, &at).map(drop)).unwrap();
        }
        // Every pair of cuts lower < upper, twice (one per unit).
        assert_eq!(tried, 2 * CUTS * (CUTS - 1) / 2, "every pair of cuts is tried");
        let huge: Epsilon = "1e7".parse().unwrap();
        let err = check_every_outcome("sum", &huge, |b| {
            SumSpec::new(b, Neighbours::AddRemove, &Mechanism::Laplace(huge.clone())).map(drop)
        });
        assert!(err.unwrap_err().message().contains("give --lower/--upper"));
    }
    use crate::data::cell::InvalidPolicy;
    use crate::numeric::grid::GridBounds;
    use crate::query::sum::tests::awkward_value;
    use num_traits::Signed;
    use proptest::prelude::*;

    fn fold_of(values: &[f64]) -> LogFold {
        let mut f = LogFold::new(NumberCell { index: 0, invalid: InvalidPolicy::Error });
        values.iter().for_each(|&x| f.add(x));
        f
    }

    fn bounds(l: f64, u: f64) -> Bounds {
        Bounds::new(Finite::from_f64(l).unwrap(), Finite::from_f64(u).unwrap()).unwrap()
    }

    /// The low side of cut j, by its definition.
    fn below_by_hand(values: &[f64], j: usize) -> u64 {
        let v = cut_value(j);
        let per_sign = (TOP_EXP - MIN_EXP + 1) as usize;
        let low = |x: f64| match j {
            _ if j < per_sign => x <= v,
            _ if j == per_sign => x < 0.0,
            _ if j == per_sign + 1 => x <= 0.0,
            _ => x < v,
        };
        values.iter().filter(|&&x| low(x)).count() as u64
    }

    #[test]
    fn the_ladder_ascends_through_zero() {
        assert_eq!((cut_value(0), cut_value(CUTS - 1)), (-2f64.powi(64), 2f64.powi(64)));
        assert_eq!(
            (cut_value(96), cut_value(97), cut_value(98), cut_value(99)),
            (-2f64.powi(-32), 0.0, 0.0, 2f64.powi(-32))
        );
        assert!((1..CUTS).all(|j| cut_value(j - 1) <= cut_value(j)));
        let values = [0.0, -0.0, 1.5, 2.0, -4.0, -5.0, 1e300, -1e300, 5e-324, -5e-324];
        let below = fold_of(&values).cut_counts();
        assert_eq!(below.len(), CUTS);
        for (j, &b) in below.iter().enumerate() {
            assert_eq!(b, below_by_hand(&values, j), "cut {j} at {}", cut_value(j));
        }
    }

    proptest! {
        /// The one-pass clamped sum equals clamping and rounding every row (when every row is
        /// on the grid) and is within one unit of the exact clamped sum in general.
        #[test]
        fn clamped_sum_matches_the_exact_sum(
            rows in proptest::collection::vec(awkward_value(), 0..40),
            lo in -40i32..40, hi in -40i32..40, neg_lo in any::<bool>(), exp in -60i32..20,
        ) {
            let (mut l, u) = (2f64.powi(lo), 2f64.powi(hi));
            if neg_lo { l = -l; }
            prop_assume!(l < u);
            let b = bounds(l, u);
            let grid = Grid::for_noise(&exact(2f64.powi(exp + 40)), &BigRational::one());
            let got = fold_of(&rows).clamped_sum_units(&b, grid);
            let exact_sum: BigRational = rows.iter().map(|&x| exact(x.clamp(l, u))).fold(BigRational::zero(), |a, x| a + x);
            let units = exact_sum / grid.spacing();
            let diff = (BigRational::from_integer(BigInt::from(got)) - units).abs();
            prop_assert!(diff <= BigRational::new(1.into(), 2.into()), "{} vs exact", got);
        }

        /// The counts on the low side of every cut are the counts by definition.
        #[test]
        fn cut_counts_match_their_definition(rows in proptest::collection::vec(awkward_value(), 0..40)) {
            let below = fold_of(&rows).cut_counts();
            for (j, &b) in below.iter().enumerate() {
                prop_assert_eq!(b, below_by_hand(&rows, j));
            }
        }

        /// Every query of a scan has Δ = 1 and the queries are monotone (module comment): between
        /// neighbours (a row added, removed or changed) every count of one side of the cuts, and
        /// n, moves by at most 1, and all of them the same way.
        #[test]
        fn scan_queries_are_monotone_with_sensitivity_one(
            rows in proptest::collection::vec(awkward_value(), 1..40),
            other in awkward_value(),
            at in any::<prop::sample::Index>(),
        ) {
            let i = at.index(rows.len());
            let crate::query::statistic::Neighbouring { removed, added, changed } =
                crate::query::statistic::neighbouring(&rows, other, i);
            let counts = |r: &[f64]| {
                let f = fold_of(r);
                let n = f.rows() as i128;
                let below: Vec<i128> = f.cut_counts().into_iter().map(i128::from).collect();
                // The upper scan's counts (n, then the rows above each cut), the lower scan's.
                let upper: Vec<i128> = std::iter::once(n).chain(below.iter().map(|b| n - b)).collect();
                (upper, below)
            };
            let (up, low) = counts(&rows);
            for n in [removed, added, changed] {
                let (up2, low2) = counts(&n);
                for (a, b) in [(&up, &up2), (&low, &low2)] {
                    let moves: Vec<i128> = a.iter().zip(b).map(|(x, y)| y - x).collect();
                    prop_assert!(moves.iter().all(|d| d.abs() <= 1), "{:?}", moves);
                    prop_assert!(moves.iter().all(|&d| d >= 0) || moves.iter().all(|&d| d <= 0), "{:?}", moves);
                }
            }
        }

        /// Neighbouring datasets move the one-pass clamped sum by at most the sum's Δ.
        #[test]
        fn clamped_sum_moves_by_at_most_delta(
            rows in proptest::collection::vec(awkward_value(), 1..30),
            other in awkward_value(),
            hi in -10i32..30,
            at in any::<prop::sample::Index>(),
        ) {
            let b = bounds(-(2f64.powi(hi)), 2f64.powi(hi + 1));
            let eps: Epsilon = "0.5".parse().unwrap();
            let spec = crate::query::sum::SumSpec::new(b, Neighbours::AddRemove, &Mechanism::Laplace(eps)).unwrap();
            let gb: GridBounds = spec.bounds;
            let sum = |r: &[f64]| fold_of(r).clamped_sum_units(&b, gb.grid);
            let base = sum(&rows);
            let mut added = rows.clone();
            added.push(other);
            let mut removed = rows.clone();
            removed.remove(at.index(rows.len()));
            for n in [added, removed] {
                prop_assert!((sum(&n) - base).abs() <= spec.sensitivity());
            }
        }
    }

    #[test]
    fn dense_data_gives_tight_bounds_and_thin_data_none() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5); // INSECURE: test-only seed
        let values: Vec<f64> = (0..20_000).map(|i| 20_000.0 + (i % 1000) as f64 * 40.0).collect();
        let eps: Epsilon = "1".parse().unwrap();
        // At the first cut outside the data's range [20 000, 59 960] or up to two cuts further
        // (each further step needs ν < ρ − τ); never inside it.
        for _ in 0..20 {
            let chosen = choose(&fold_of(&values), &eps, &mut rng).expect("20 000 rows are plenty at 1");
            assert!([4096.0, 8192.0, 16384.0].contains(&chosen.bounds.lower()), "{:?}", chosen.bounds);
            assert!([65536.0, 131072.0, 262144.0].contains(&chosen.bounds.upper()), "{:?}", chosen.bounds);
        }
        // Negative data are bounded from below by a negative cut, and from above by one or 0.
        let negative: Vec<f64> = values.iter().map(|x| -x / 1000.0).collect();
        let chosen = choose(&fold_of(&negative), &eps, &mut rng).unwrap();
        assert!([-64.0, -128.0, -256.0].contains(&chosen.bounds.lower()), "{:?}", chosen.bounds);
        assert!([-16.0, -8.0, -4.0].contains(&chosen.bounds.upper()), "{:?}", chosen.bounds);
        // All zeros: the two cuts at zero, widened.
        let chosen = choose(&fold_of(&[0.0; 20_000]), &eps, &mut rng).unwrap();
        assert_eq!((chosen.bounds.lower(), chosen.bounds.upper()), (0.0, 2f64.powi(MIN_EXP)));
        // Nothing, or far fewer rows than the search needs: no bounds, every time.
        let search = Search::new(&eps);
        let few = (search.sentinel / 4) as usize;
        for _ in 0..50 {
            assert!(choose(&fold_of(&[]), &eps, &mut rng).is_none());
            assert!(choose(&fold_of(&values[..few]), &eps, &mut rng).is_none());
        }
        // Beyond the ladder: no bounds either.
        assert!(choose(&fold_of(&[1e30; 20_000]), &eps, &mut rng).is_none());
    }

    /// The rows needed come from ε_b alone and shrink as it grows; the message names the flags.
    #[test]
    fn withheld_names_flags_and_the_rows_needed() {
        let small = Search::new(&"0.01".parse().unwrap()).rows_needed();
        let large = Search::new(&"0.1".parse().unwrap()).rows_needed();
        assert!(small > 9 * large && small < 11 * large, "{small} {large}");
        assert_eq!((roughly(17_041), roughly(99), roughly(1_704)), (18_000, 99, 1_800));
        let e = withheld("mean", "x", Some(&"0.1".parse().unwrap()), &"0.01".parse().unwrap());
        assert_eq!(e.exit_code(), crate::error::EXIT_WITHHELD);
        let m = e.message();
        assert!(
            m.starts_with("mean of x: no bounds found privately at epsilon 0.1 (bounds share 0.01)"),
            "{m}"
        );
        assert!(
            m.contains("--lower/--upper") && m.contains(&format!("roughly {} rows", roughly(small))),
            "{m}"
        );
    }

    /// Two scans, each a threshold and queries at ε_b/4: exactly ε_b, the `bounds` part.
    #[test]
    fn the_two_scans_spend_exactly_the_share() {
        for share in ["0.01", "0.7", "1/3"] {
            let eps: Epsilon = match share.split_once('/') {
                Some((n, d)) => {
                    Epsilon::from_rational(BigRational::new(n.parse().unwrap(), d.parse().unwrap())).unwrap()
                }
                None => share.parse().unwrap(),
            };
            let scan = Search::new(&eps).scan;
            let one = scan.threshold_eps.as_rational() + scan.queries_eps.as_rational();
            assert_eq!(&(one * BigInt::from(2)), eps.as_rational(), "{share}");
            assert!(scan.monotone && scan.sensitivity == 1);
        }
    }

    #[test]
    fn bounds_share_is_exact() {
        let eps: Epsilon = "0.1".parse().unwrap();
        let (b, rest) = split(&eps, None).unwrap();
        assert_eq!(b.exact_string(), "1/100");
        assert_eq!(rest.exact_string(), "9/100");
        assert!(split(&eps, Some(&"0.1".parse().unwrap())).is_err());
    }
}
