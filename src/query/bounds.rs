//! **Private clamping bounds** — when `--lower/--upper` are not given, a share of ε finds them.
//!
//! One pass gathers, per sign and per f64 exponent, the row count and the exact sum of the
//! mantissas (an i128 per exponent cannot overflow: 2^53 per row, fewer than 2^64 rows). From
//! these the exact sum of the values clamped to any bounds that are ±powers of two follows
//! without a second pass, because every exponent bucket lies wholly below, inside or above such
//! bounds.
//!
//! The bounds themselves come from a noisy histogram over public log-scale bins: ±[2^k, 2^(k+1))
//! for k in MIN_EXP..=MAX_EXP and one centre bin (−2^MIN_EXP, 2^MIN_EXP) (Google's approximate
//! bounds, simplified). Each row lands in one bin, so its L1 sensitivity is 1 (add-remove) or 2
//! (replace); independent discrete Laplace noise of scale Δ/ε_b makes it ε_b-DP. The bounds are
//! the outer edges of the lowest and highest bins whose noisy count exceeds a threshold that an
//! empty bin passes with probability at most β_b/K — post-processing, so free. The query then
//! runs with ε − ε_b: ε in total by sequential composition. If no bin passes, the widest public
//! bounds ±2^(MAX_EXP+1) are used, and a note says so: nothing is ever read off the data
//! without noise.

use crate::error::Error;
use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, ToPrimitive, Zero};
use rand::RngCore;

use crate::data::cell::NumberCell;
use crate::data::row::{BadCell, Fold, Row};
use crate::numeric::bounds::{Bounds, Finite};
use crate::numeric::exact::{decimal, exact};
use crate::numeric::format::real;
use crate::numeric::grid::Grid;
use crate::privacy::accountant::Cost;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::laplace::{self, Aggregate, Noisy};
use crate::privacy::sampler::discrete_laplace_error_bound;
use crate::privacy::unit::Neighbours;
use crate::report::release::{BoundsInfo, Guarantee, Release};

/// Smallest and largest magnitude exponents of the public bins.
pub const MIN_EXP: i32 = -32;
pub const MAX_EXP: i32 = 63;
/// Chance that some empty bin passes the threshold.
const SPURIOUS_BIN_PROBABILITY: f64 = 0.001;
/// Exponent fields of an f64 (0 = subnormal, 2047 = inf/NaN, never stored).
const EXPONENTS: usize = 2047;
/// Scale of the exact sums: every finite f64 is a multiple of 2^-1074.
const FINEST: i64 = 1074;

/// Count and exact mantissa sum per sign and exponent of one column.
#[derive(Clone, Debug)]
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

    /// Counts per public bin, from the most negative bin to the most positive.
    pub fn public_bins(&self) -> Vec<u64> {
        let per_sign = (MAX_EXP - MIN_EXP + 1) as usize;
        let mut negative = vec![0u64; per_sign];
        let mut positive = vec![0u64; per_sign];
        let mut centre = self.zeros;
        for (field, bucket) in self.buckets.iter().enumerate() {
            // |x| in [2^e, 2^(e+1)); subnormals are below 2^-1022.
            let e = if field == 0 { -1023 } else { field as i32 - 1023 };
            for (sign, &(rows, _)) in bucket.iter().enumerate() {
                if e < MIN_EXP {
                    centre += rows;
                    continue;
                }
                let k = (e.min(MAX_EXP) - MIN_EXP) as usize;
                if sign == 1 {
                    negative[k] += rows;
                } else {
                    positive[k] += rows;
                }
            }
        }
        negative.into_iter().rev().chain([centre]).chain(positive).collect()
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
    /// False when no bin passed the threshold and the widest public bounds were used.
    pub found: bool,
}

/// Lower and upper edge of public bin i (0 = most negative).
fn bin_edges(i: usize) -> (f64, f64) {
    let per_sign = (MAX_EXP - MIN_EXP + 1) as usize;
    let p = |k: i32| 2f64.powi(k);
    if i < per_sign {
        let k = MAX_EXP - i as i32;
        (-p(k + 1), -p(k))
    } else if i == per_sign {
        (-p(MIN_EXP), p(MIN_EXP))
    } else {
        let k = MIN_EXP + (i - per_sign - 1) as i32;
        (p(k), p(k + 1))
    }
}

/// Spends `eps` on a noisy histogram of the public bins and picks the bounds.
pub fn choose(fold: &LogFold, neighbours: Neighbours, eps: &Epsilon, rng: &mut dyn RngCore) -> PrivateBounds {
    let sensitivity = bins_sensitivity(neighbours);
    let aggregate = Aggregate {
        value: fold.public_bins().into_iter().map(i128::from).collect(),
        sensitivity,
        // Unused (Laplace only), but true: one or two bins move by 1.
        l2_squared: sensitivity,
        grid: Grid::UNIT,
    };
    let noisy: Noisy<Vec<BigInt>> = laplace::laplace_each(&aggregate, eps, rng);
    let bins = noisy.value.len();
    // One-sided tail: P(Z > t) <= β/K per empty bin, via the two-sided bound at 2β/K.
    let threshold = BigInt::from(discrete_laplace_error_bound(
        &noisy.noise.scale,
        2.0 * SPURIOUS_BIN_PROBABILITY / bins as f64,
    ));
    let passing: Vec<usize> = (0..bins).filter(|&i| noisy.value[i] > threshold).collect();
    let (lower, upper, found) = match (passing.first(), passing.last()) {
        (Some(&lo), Some(&hi)) => (bin_edges(lo).0, bin_edges(hi).1, true),
        _ => (-2f64.powi(MAX_EXP + 1), 2f64.powi(MAX_EXP + 1), false),
    };
    let finite = |x: f64| Finite::from_f64(x).unwrap_or_else(|| unreachable!("public bin edges are finite"));
    let bounds = Bounds::new(finite(lower), finite(upper)).unwrap_or_else(|_| unreachable!("edges increase"));
    PrivateBounds { bounds, eps: eps.clone(), found }
}

/// Up to this ε no outcome of the search can fail a sum's or a mean's grid: the grid is finer
/// than Δ/ε by less than 2^41, so the largest bound is below 2^41·ε·max(|L|,|U|)/Δ grid units,
/// and for two public edges max(|L|,|U|)/Δ ≤ 4 (a mean of one bin [2^k, 2^(k+1)]); 2^43·2^16
/// is far below the 2^62 limit. Only above it is every outcome tried (a test tries them all at
/// this ε).
const OUTCOMES_SAFE_UP_TO: u64 = 1 << 16;

/// Checks, before any data is read, that the statistic can be built on every pair of bounds
/// the private search can return (the outer edges of any two public bins, or the widest public
/// bounds), so that no choice made from the data can fail afterwards: a failure then would be an
/// output that depends on the data and that nobody was charged for.
pub fn check_every_outcome(
    query: &str,
    rest: &Epsilon,
    mut build: impl FnMut(Bounds) -> Result<(), Error>,
) -> Result<(), Error> {
    if rest.as_rational() <= &BigRational::from_integer(OUTCOMES_SAFE_UP_TO.into()) {
        return Ok(());
    }
    let finite =
        |x: f64| Finite::from_f64(x).ok_or_else(|| Error::internal("a public bin edge is not finite"));
    let bins = 2 * (MAX_EXP - MIN_EXP + 1) as usize + 1;
    let widest = 2f64.powi(MAX_EXP + 1);
    let pairs = (0..bins)
        .flat_map(|lo| (lo..bins).map(move |hi| (bin_edges(lo).0, bin_edges(hi).1)))
        .chain([(-widest, widest)]);
    for (lower, upper) in pairs {
        let bounds = Bounds::new(finite(lower)?, finite(upper)?)?;
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

/// L1 sensitivity of the counts over the public bins: each row lies in exactly one bin, so one
/// bin moves by 1 (add-remove), or one loses a row and another gains it (replace).
fn bins_sensitivity(neighbours: Neighbours) -> i128 {
    match neighbours {
        Neighbours::AddRemove => 1,
        Neighbours::Replace => 2,
    }
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
    release.notes.push(if found.found {
        format!(
            "bounds [{lo}, {hi}] were estimated privately with epsilon {} of {}; \
             give --lower/--upper to spend all of it on the {}",
            found.eps,
            decimal(total.as_rational()),
            release.query
        )
    } else {
        format!(
            "no range of values was dense enough to find bounds with epsilon {}: used the widest \
             public bounds [{lo}, {hi}], so the release is very noisy; give --lower/--upper \
             or a larger --bounds-eps",
            found.eps
        )
    });
    release.post_processing.push(format!("clamping bounds [{lo}, {hi}] chosen privately"));
    Ok(release)
}

/// The fold of a statistic whose bounds are given, or, when they are to be found privately,
/// the log-scale statistics of its column.
#[derive(Clone, Debug)]
pub enum Clamped<F> {
    Given(F),
    Private(LogFold),
}

impl<F: Fold> Fold for Clamped<F> {
    #[inline(always)]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        match self {
            Clamped::Given(f) => f.row(row),
            Clamped::Private(f) => f.row(row),
        }
    }
    fn merge(&mut self, other: Self) {
        match (self, other) {
            (Clamped::Given(a), Clamped::Given(b)) => a.merge(b),
            (Clamped::Private(a), Clamped::Private(b)) => a.merge(b),
            // Folds of one scan are cloned from one empty fold: never mixed.
            _ => {}
        }
    }
    fn widest_column(&self) -> Option<usize> {
        match self {
            Clamped::Given(f) => f.widest_column(),
            Clamped::Private(f) => f.widest_column(),
        }
    }
    fn heap_bytes(&self) -> usize {
        match self {
            Clamped::Given(f) => f.heap_bytes(),
            Clamped::Private(f) => f.heap_bytes(),
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
        assert!(tried > 18_000, "every pair of edges is tried: {tried}");
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

    #[test]
    fn bins_partition_the_line() {
        let per_sign = (MAX_EXP - MIN_EXP + 1) as usize;
        assert_eq!(bin_edges(per_sign), (-2f64.powi(-32), 2f64.powi(-32)));
        assert_eq!(bin_edges(per_sign + 1), (2f64.powi(-32), 2f64.powi(-31)));
        for i in 1..2 * per_sign + 1 {
            assert_eq!(bin_edges(i - 1).1, bin_edges(i).0);
        }
        let f = fold_of(&[0.0, -0.0, 1.5, 3.0, -5.0, 1e300, 5e-324]);
        let bins = f.public_bins();
        assert_eq!(bins.len(), 2 * per_sign + 1);
        assert_eq!(bins.iter().sum::<u64>(), 7);
        assert_eq!(bins[per_sign], 3); // the zeros and the subnormal
        assert_eq!(bins[per_sign + 1 + 32], 1); // 1.5 in [1, 2)
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

        /// The counts over the public bins move by at most their declared L1 Δ on neighbouring
        /// datasets: 1 when a row is added or removed, 2 when one is changed.
        #[test]
        fn public_bins_move_by_at_most_their_l1_sensitivity(
            rows in proptest::collection::vec(awkward_value(), 1..40),
            other in awkward_value(),
            at in any::<prop::sample::Index>(),
        ) {
            let l1 = |a: &[f64], b: &[f64]| -> i128 {
                let (x, y) = (fold_of(a).public_bins(), fold_of(b).public_bins());
                x.iter().zip(&y).map(|(p, q)| (i128::from(*p) - i128::from(*q)).abs()).sum()
            };
            let i = at.index(rows.len());
            let crate::query::statistic::Neighbouring { removed, added, changed } =
                crate::query::statistic::neighbouring(&rows, other, i);
            for n in [removed, added] {
                prop_assert!(l1(&rows, &n) <= bins_sensitivity(Neighbours::AddRemove));
            }
            prop_assert!(l1(&rows, &changed) <= bins_sensitivity(Neighbours::Replace));
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
    fn dense_data_gives_tight_bounds_and_empty_data_the_widest() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5); // INSECURE: test-only seed
        let values: Vec<f64> = (0..20_000).map(|i| 20_000.0 + (i % 1000) as f64 * 40.0).collect();
        let eps: Epsilon = "1".parse().unwrap();
        let chosen = choose(&fold_of(&values), Neighbours::AddRemove, &eps, &mut rng);
        assert!(chosen.found);
        assert_eq!((chosen.bounds.lower(), chosen.bounds.upper()), (16384.0, 65536.0));
        let none = choose(&fold_of(&[]), Neighbours::AddRemove, &eps, &mut rng);
        assert!(!none.found);
        assert_eq!(none.bounds.upper(), 2f64.powi(64));
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
