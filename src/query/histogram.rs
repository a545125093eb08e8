//! **histogram** — counts over public bins: K equal-width bins over [L, U] (values outside go
//! to the edge bins) or a public category list plus one bin `other`.
//!
//! Every row lands in exactly one bin, so the L1 sensitivity is
//! - add-remove: 1 (one bin gains or loses one row);
//! - replace: 2 (one bin loses a row, another gains it).
//!
//! `--closed` declares the categories the whole domain: there is no `other` bin, and a row whose
//! cell is not listed is invalid input (`--invalid`: refused, dropped, or counted in the listed
//! bin V). The sensitivities do not change: a kept row still lands in exactly one bin (an imputed
//! one in bin V, a function of the row alone), and a dropped row lands in none, which only an
//! added or removed row can do, and `--invalid skip` is add-remove only. Leaving out the bin
//! `other`, which the declaration says is always empty, is post-processing of the domain.
//!
//! Independent discrete Laplace noise of scale Δ/ε on every bin gives ε-DP (the Laplace
//! mechanism with L1 sensitivity, Dwork, McSherry, Nissim, Smith 2006; discrete form after
//! Ghosh, Roughgarden, Sundararajan 2012). Bins and categories come from flags only: bins read
//! off the data would leak which values occur.
//!
//! With `--noise gaussian` every bin gets independent discrete Gaussian noise of variance
//! Δ₂²/(2ρ), ρ-zCDP for the vector (Canonne, Kamath, Steinke 2020, Thm 14 and its vector form):
//! the L2 sensitivity is Δ₂² = 1 (add-remove: one bin ±1) and Δ₂² = 2 (replace: one bin −1,
//! another +1), so Δ₂ = √2 where Δ₁ = 2; the same under `--by`, each row lying in one (group,
//! bin) cell.
//!
//! `--discover` (instead of `--categories`): the categories are the values found in the column,
//! released only where their noisy count reaches a threshold; that release is (ε, δ)-DP, not
//! ε-DP, and is built in `query::discover` (docs/DESIGN.md §9.5).
//!
//! Post-processing options (free, and never reading the data):
//! - `--nonnegative`: every noisy bin below 0 is released as 0. True counts are at least 0, so
//!   no bin moves away from its true count and the per-bin bound still holds; but bins near 0
//!   are biased upwards (E[max(0, c + Z)] > c), and so is their total.
//! - `--normalize` (implies `--nonnegative`): p_i = c'_i / Σ c'_j of the clamped counts c', or
//!   1/K each when every c' is 0. A ratio of noisy counts: biased (a small total inflates every
//!   share's noise, and the clamping lifts empty bins' shares above 0), though consistent as the
//!   counts grow. Its bound holds for every bin at once: each noisy count within its bound t at
//!   β/K (a union bound over the K bins), so each true count within [max(0, c'_i − t), c'_i + t],
//!   and the true share c_i / (c_i + Σ_{j≠i} c_j) lies between its values at the corners of
//!   that box; the bound is the farther corner from p_i, at most 1.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use rand::RngCore;

use crate::data::cell::{InvalidPolicy, NumberCell};
use crate::data::row::{text_cell, BadCell, Fold, Row};
use crate::data::scan::MAX_FOLD_BYTES;
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::bins::{Bins, Categories, NotListed, MAX_BINS, OTHER};
use crate::numeric::grid::Grid;
use crate::privacy::accuracy;
use crate::privacy::laplace::Aggregate;
use crate::privacy::noise::{self, Calibrated, Drawn, Mechanism};
use crate::privacy::epsilon::Epsilon;
use crate::privacy::unit::Neighbours;
use crate::privacy::accountant::Cost;
use crate::privacy::currency::Spend;
use crate::query::bounds::{self, Clamped, LogFold, PrivateBounds};
use crate::query::count::CountFold;
use crate::query::discover::{self, Discovery, Keyed};
use crate::query::options::{self, check_invalid_policy, clamp_bounds, Clamp, Options, Setup};
use crate::query::statistic::{first, add_counts, Context, Measured, PlanContext, Planned, Statistic};
use crate::numeric::exact::rational_to_f64_up;
use crate::report::release::{saturating_i128, Accuracy, BinCount, Noise, Release, EVERY_BIN, PER_BIN};

/// `dpstat histogram`: counts over public bins or categories.
#[derive(Clone, Debug)]
pub struct Histogram {
    column: ColumnRef,
    invalid: InvalidPolicy,
    bins: BinSpec,
    /// `--nonnegative` (also set by `--normalize`).
    nonnegative: bool,
    /// `--normalize`.
    normalize: bool,
}

/// The histogram's public bins.
#[derive(Clone, Debug)]
pub enum BinSpec {
    Numeric(Bins),
    Categories(Arc<Categories>),
    /// K equal-width bins over bounds to be found privately with `bounds_eps`; the bins get
    /// `rest`. Needs a second pass: the bins must be known before the first row is counted.
    NumericPrivate { bins: usize, bounds_eps: Epsilon, rest: Epsilon },
    /// The second pass of [`BinSpec::NumericPrivate`]: bins over the bounds found, at `rest`.
    Found { bins: Bins, found: PrivateBounds, rest: Epsilon },
    /// Categories found in the data (`--discover`), at the whole ε and the discovery's δ.
    Discovered { discovery: Discovery, eps: Epsilon },
}

impl BinSpec {
    /// The number of counts released: the bins, or the categories and `other`.
    fn len(&self) -> usize {
        match self {
            BinSpec::Numeric(b) | BinSpec::Found { bins: b, .. } => b.len(),
            BinSpec::Categories(c) => c.cells(),
            BinSpec::NumericPrivate { bins, .. } => *bins,
            BinSpec::Discovered { .. } => 0,
        }
    }
}

impl Statistic for Histogram {
    const KINDS: &'static [&'static str] = &["histogram"];
    type Fold = Clamped<HistogramFold>;

    fn new(_: &str, options: Options, setup: &Setup) -> Result<Histogram, Error> {
        let bins = match (options.bins, &options.categories) {
            _ if options.discover.is_some() => discovered(&options, setup)?,
            (_, Some(c)) => BinSpec::Categories(Arc::new(c.clone())),
            (Some(k), None) if k == 0 || k >= MAX_BINS => {
                return Err(Error::usage(format!("--bins must be between 1 and {}", MAX_BINS - 1)));
            }
            (Some(k), None) => {
                check_invalid_policy(options.invalid, setup)?;
                match clamp_bounds("histogram", &options, setup)? {
                    Clamp::Given(b) => {
                        // The edges' weighted means multiply a bound by up to K: refuse bounds
                        // that could overflow into an infinite or NaN edge.
                        b.check_printable()?;
                        BinSpec::Numeric(Bins::new(b, k))
                    }
                    Clamp::Private { bounds_eps, rest } => BinSpec::NumericPrivate { bins: k, bounds_eps, rest },
                }
            }
            (None, None) => {
                return Err(Error::usage(
                    "histogram needs public bins: --categories a,b,c or --bins K (with --lower L --upper U, \
                     or without them to find bounds privately)",
                ));
            }
        };
        let cells = bins.len().saturating_mul(setup.groups.max(1));
        let bytes = cells.saturating_mul(std::mem::size_of::<u64>());
        if bytes > MAX_FOLD_BYTES {
            return Err(Error::usage(format!(
                "the bins times the --by groups (keys and other) make {cells} counts, {} MiB in memory, \
                 more than the {} MiB dpstat holds; use fewer bins, categories or keys",
                bytes.div_ceil(1 << 20),
                MAX_FOLD_BYTES >> 20
            )));
        }
        let column = setup.column(&options)?;
        Ok(Histogram {
            column,
            invalid: options.invalid,
            bins,
            nonnegative: options.nonnegative || options.normalize,
            normalize: options.normalize,
        })
    }

    fn workload_keys(options: &Options) -> Option<&'static [&'static str]> {
        Some(match options.categories {
            Some(_) => &["column", "categories"],
            None => &["column", "lower", "upper", "bins", "invalid"],
        })
    }

    fn name(&self) -> &'static str {
        "histogram"
    }

    fn column(&self) -> Option<&ColumnRef> {
        Some(&self.column)
    }

    /// Bins read numbers; categories, given or found, read text.
    fn reads_numbers(&self) -> bool {
        !matches!(self.bins, BinSpec::Categories(_) | BinSpec::Discovered { .. })
    }

    /// A normalized histogram releases proportions, which the count charts do not draw.
    fn draws_bars(&self) -> bool {
        !self.normalize
    }

    fn reads_twice(&self) -> Option<&'static str> {
        matches!(self.bins, BinSpec::NumericPrivate { .. }).then_some(
            "a numeric histogram without --lower/--upper reads the data twice (bounds, then bins), \
             so it needs a regular FILE, not standard input or a pipe; or give --lower L --upper U",
        )
    }

    fn fold(&self, indices: &[usize]) -> Clamped<HistogramFold> {
        let index = first(indices);
        let cell = NumberCell { index, invalid: self.invalid };
        Clamped::Given(HistogramFold::new(match &self.bins {
            BinSpec::Numeric(b) | BinSpec::Found { bins: b, .. } => BinOf::Numeric(cell, b.clone()),
            BinSpec::Categories(c) => BinOf::Category(index, Arc::clone(c)),
            BinSpec::NumericPrivate { .. } => return Clamped::Private(LogFold::new(cell)),
            BinSpec::Discovered { discovery, .. } => {
                BinOf::Discovered(Keyed::new(index, discovery.max_keys, CountFold::default()))
            }
        }))
    }

    fn measure(
        &self,
        fold: Clamped<HistogramFold>,
        cx: &Context,
        rng: &mut dyn RngCore,
    ) -> Result<Measured<Histogram>, Error> {
        match (fold, &self.bins) {
            (Clamped::Private(fold), BinSpec::NumericPrivate { bins, bounds_eps, rest }) => {
                let found = bounds::choose(&fold, bounds_eps, rng).ok_or_else(|| {
                    bounds::withheld("histogram", &self.column.label(), cx.mechanism.epsilon(), bounds_eps)
                })?;
                let bins = BinSpec::Found { bins: Bins::new(found.bounds, *bins), found, rest: rest.clone() };
                Ok(Measured::Again(Histogram { bins, ..self.clone() }))
            }
            (Clamped::Given(HistogramFold { bin_of: BinOf::Discovered(keyed), .. }), BinSpec::Discovered { discovery, eps }) => {
                Ok(Measured::Release(self.discovered_release(cx, keyed, discovery, eps, rng)?))
            }
            (Clamped::Given(fold), BinSpec::Found { found, rest, .. }) => {
                let release = self.release(cx, fold, &Mechanism::Laplace(rest.clone()), rng)?;
                Ok(Measured::Release(bounds::annotate(release, found)?))
            }
            (Clamped::Given(fold), _) => Ok(Measured::Release(self.release(cx, fold, cx.mechanism, rng)?)),
            (Clamped::Private(_) | Clamped::PerId(_), _) => {
                Err(Error::internal("a histogram's fold does not match its bins"))
            }
        }
    }

    fn plan(&self, cx: &PlanContext) -> Result<Planned, Error> {
        if matches!(self.bins, BinSpec::NumericPrivate { .. } | BinSpec::Found { .. }) {
            return Err(options::unplannable());
        }
        if matches!(self.bins, BinSpec::Discovered { .. }) {
            return Err(Error::usage("dpstat plan does not cover --discover: which keys appear depends on the data"));
        }
        let k = self.bins.len();
        let noise = Calibrated::of(&aggregate(vec![], cx.neighbours), cx.mechanism);
        let accuracy = Accuracy { scope: PER_BIN, ..Accuracy::value(cx.confidence, accuracy::single(&noise, cx.confidence)) };
        let assumption = format!(
            "the bound holds for each of the {k} bins on its own; for all of them at once plan with \
             --confidence {}",
            crate::numeric::format::real(1.0 - cx.confidence.beta() / k as f64)
        );
        Ok(Planned {
            noise: Noise::single(&noise, cx.neighbours, accuracy),
            bins: Some(k),
            assumptions: vec![assumption],
        })
    }
}

/// `--discover`: no public bins at all, Laplace noise, and nothing that needs a public total.
fn discovered(options: &Options, setup: &Setup) -> Result<BinSpec, Error> {
    if options.bins.is_some() || options.categories.is_some() || options.lower.is_some() || options.upper.is_some() {
        return Err(Error::usage(
            "--discover finds the categories in the data: leave out --categories, --bins, --lower and --upper",
        ));
    }
    if options.normalize {
        return Err(Error::usage(
            "--normalize divides by the total of every bin, but --discover releases only some keys: \
             leave out one of them",
        ));
    }
    let eps = setup.epsilon("--discover (keys found in the data are (epsilon, delta)-DP with Laplace noise)")?;
    let discovery = options.discover.clone().ok_or_else(|| Error::internal("discovered without a discovery"))?;
    Ok(BinSpec::Discovered { discovery, eps: eps.clone() })
}

impl Histogram {
    /// The categories found in the data: every observed key's noisy count, kept where it
    /// reaches the threshold (`query::discover`).
    fn discovered_release(
        &self,
        cx: &Context,
        keyed: Keyed<CountFold>,
        discovery: &Discovery,
        eps: &Epsilon,
        rng: &mut dyn RngCore,
    ) -> Result<Release, Error> {
        let cap = discover::KeyCap::new(eps, discovery, 1)?;
        let keys = keyed.into_keys(&cap, rng)?;
        let selection = discover::select(keys, &cap.rest_eps, &cap.rest_delta, cx.neighbours, rng)?;
        let bins: Vec<BinCount> = selection
            .kept
            .iter()
            .map(|(key, noisy, _)| BinCount {
                bin: key.clone(),
                lower: None,
                upper: None,
                count: saturating_i128(noisy),
                proportion: None,
            })
            .collect();
        let accuracy = discover::per_bin(&selection.noise, cx);
        let spend = Spend::Approx { eps: cap.rest_eps.clone(), delta: cap.rest_delta.clone() };
        let noise = Noise::single(&selection.noise, cx.neighbours, accuracy);
        let release = cx.release(self, noise, Cost::sequential(vec![cap.cost(), Cost::spent("keys", spend)]))?;
        Ok(Release {
            discovery: Some(discover::info(&selection.threshold, &cap, bins.len())),
            post_processing: vec![discover::selection_note(&selection.threshold.tau)],
            bins: Some(bins),
            ..release
        })
    }

    /// One noisy count per bin, independent noise of `mechanism` on each.
    fn release(&self, cx: &Context, fold: HistogramFold, mechanism: &Mechanism, rng: &mut dyn RngCore) -> Result<Release, Error> {
        let aggregate = aggregate(fold.counts, cx.neighbours);
        let noisy: Drawn<Vec<BigInt>> = noise::draw_each(&aggregate, mechanism, rng);
        let mut counts: Vec<i128> = noisy.value.iter().map(saturating_i128).collect();
        let mut post = vec![];
        if self.nonnegative {
            let clamped = counts.iter().filter(|&&c| c < 0).count();
            counts.iter_mut().for_each(|c| *c = (*c).max(0));
            post.push(format!(
                "nonnegative: noisy bins below 0 are released as 0 ({clamped} of {} were; biases bins near 0 upwards)",
                counts.len()
            ));
        }
        let mut accuracy =
            Accuracy { scope: PER_BIN, ..Accuracy::value(cx.confidence, accuracy::single(&noisy.noise, cx.confidence)) };
        let mut proportions: Vec<Option<f64>> = vec![None; counts.len()];
        if self.normalize {
            let k = counts.len();
            let t = noisy.noise.error_bound_units(cx.confidence.beta() / k as f64);
            let (shares, bound) = normalize(&counts, t);
            proportions = shares.into_iter().map(Some).collect();
            accuracy = Accuracy { scope: EVERY_BIN, ..Accuracy::value(cx.confidence, bound) };
            post.push(if counts.iter().all(|&c| c == 0) {
                format!("normalize: every bin is 0 after clamping, so each is released as 1/{k}")
            } else {
                "normalize: proportions = nonnegative bins / their sum (a ratio of noisy counts: biased on small totals)"
                    .to_string()
            });
        }
        let counts = counts.into_iter().zip(proportions);
        let bins: Vec<BinCount> = match &fold.bin_of {
            BinOf::Discovered(_) => return Err(Error::internal("discovered keys released as public bins")),
            BinOf::Numeric(_, b) => counts
                .enumerate()
                .map(|(i, (count, proportion))| {
                    let (lower, upper) = b.edges(i);
                    BinCount { bin: b.label(i), lower: Some(lower), upper: Some(upper), count, proportion }
                })
                .collect(),
            BinOf::Category(_, c) => c
                .names()
                .iter()
                .map(String::as_str)
                .chain(c.closed().is_none().then_some(OTHER))
                .zip(counts)
                .map(|(name, (count, proportion))| BinCount {
                    bin: name.to_string(),
                    lower: None,
                    upper: None,
                    count,
                    proportion,
                })
                .collect(),
        };
        let release = cx.release(self, Noise::single(&noisy.noise, cx.neighbours, accuracy), mechanism.cost("bins"))?;
        Ok(Release { bins: Some(bins), post_processing: post, ..release })
    }
}

/// The shares of nonnegative counts (1/K each when they are all 0), and a bound on every share's
/// distance from the true one that holds whenever every true count is within `t` of its noisy
/// count (module doc). Exact rationals; the bound is rounded up.
pub fn normalize(counts: &[i128], t: u128) -> (Vec<f64>, f64) {
    let k = counts.len().max(1);
    let big = |x: i128| BigRational::from_integer(BigInt::from(x));
    let t = BigRational::from_integer(BigInt::from(t));
    let zero = BigRational::zero();
    let total: BigRational = counts.iter().map(|&c| big(c)).sum();
    let low_total: BigRational = counts.iter().map(|&c| (big(c) - &t).max(zero.clone())).sum();
    let high_total = &total + &t * BigInt::from(k);
    let mut worst = zero.clone();
    let shares = counts
        .iter()
        .map(|&c| {
            let share = if total.is_zero() { BigRational::new(1.into(), BigInt::from(k)) } else { big(c) / &total };
            let (c_low, c_high) = ((big(c) - &t).max(zero.clone()), big(c) + &t);
            // The others' true total lies in [low_total − c_low, high_total − c_high].
            let (rest_low, rest_high) = (&low_total - &c_low, &high_total - &c_high);
            let ratio = |a: &BigRational, rest: &BigRational| {
                let whole = a + rest;
                if whole.is_zero() { BigRational::one() } else { a / whole }
            };
            let (lo, hi) = (ratio(&c_low, &rest_high), ratio(&c_high, &rest_low));
            let far = (&share - &lo).abs().max((&share - hi).abs()).min(BigRational::one());
            worst = worst.clone().max(far);
            share.to_f64().unwrap_or(0.0)
        })
        .collect();
    (shares, rational_to_f64_up(&worst))
}

/// L1 sensitivity of a histogram for a privacy unit.
pub fn sensitivity(neighbours: Neighbours) -> i128 {
    match neighbours {
        Neighbours::AddRemove => 1,
        Neighbours::Replace => 2,
    }
}

/// Squared L2 sensitivity of a histogram: 1² (add-remove), 1² + 1² (replace).
pub fn l2_squared(neighbours: Neighbours) -> i128 {
    match neighbours {
        Neighbours::AddRemove => 1,
        Neighbours::Replace => 2,
    }
}

/// Per-bin counts with the L1 and L2 sensitivities of the privacy unit.
pub fn aggregate(counts: Vec<u64>, neighbours: Neighbours) -> Aggregate<Vec<i128>> {
    Aggregate {
        value: counts.into_iter().map(i128::from).collect(),
        sensitivity: sensitivity(neighbours),
        l2_squared: l2_squared(neighbours),
        grid: Grid::UNIT,
    }
}

/// How a row finds its bin.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum BinOf {
    Numeric(NumberCell, Bins),
    Category(usize, Arc<Categories>),
    /// Every key found in the column, counted (`--discover`; `counts` stays empty).
    Discovered(Keyed<CountFold>),
}

/// Per-bin counts of one column.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HistogramFold {
    pub bin_of: BinOf,
    pub counts: Vec<u64>,
}

impl HistogramFold {
    pub fn new(bin_of: BinOf) -> HistogramFold {
        let bins = match &bin_of {
            BinOf::Numeric(_, bins) => bins.len(),
            BinOf::Category(_, categories) => categories.cells(),
            BinOf::Discovered(_) => 0,
        };
        HistogramFold { bin_of, counts: vec![0; bins] }
    }
}

impl Fold for HistogramFold {
    #[inline]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        let bin = match &mut self.bin_of {
            BinOf::Numeric(cell, bins) => match cell.read(row)? {
                Some(x) => bins.index(x),
                None => return Ok(()),
            },
            BinOf::Category(index, categories) => {
                let cell = text_cell(row, *index);
                match categories.slot(cell) {
                    Ok(Some(bin)) => bin,
                    Ok(None) => return Ok(()),
                    Err(_) => return Err(BadCell { column: *index, why: NotListed::why(cell, "--categories") }),
                }
            }
            BinOf::Discovered(keyed) => return keyed.row(row),
        };
        self.counts[bin] += 1;
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        if let (BinOf::Discovered(mine), BinOf::Discovered(theirs)) = (&mut self.bin_of, other.bin_of) {
            mine.merge(theirs);
            return;
        }
        add_counts(&mut self.counts, &other.counts);
    }
    fn heap_bytes(&self) -> usize {
        let keys = match &self.bin_of {
            BinOf::Discovered(keyed) => keyed.heap_bytes(),
            _ => 0,
        };
        keys + self.counts.len() * std::mem::size_of::<u64>()
    }
    fn widest_column(&self) -> Option<usize> {
        match &self.bin_of {
            BinOf::Numeric(cell, _) => Some(cell.index),
            BinOf::Category(index, _) => Some(*index),
            BinOf::Discovered(keyed) => keyed.widest_column(),
        }
    }
}

/// Counts rows into `bins` bins through a bin-assignment function.
pub fn count_into<T>(
    bins: usize,
    rows: impl IntoIterator<Item = T>,
    bin_of: impl Fn(T) -> usize,
) -> Vec<u64> {
    let mut counts = vec![0u64; bins];
    for row in rows {
        counts[bin_of(row)] += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::bins::Outside;
    use crate::numeric::bounds::{Bounds, Finite};
    use crate::query::statistic::{neighbouring, Neighbouring};
    use crate::query::sum::tests::awkward_value;
    use proptest::prelude::*;

    fn l1(a: &[i128], b: &[i128]) -> i128 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
    }

    fn l2(a: &[i128], b: &[i128]) -> i128 {
        a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
    }

    #[test]
    fn normalize_gives_shares_and_the_corner_bound() {
        let (shares, bound) = normalize(&[30, 10, 0], 0);
        assert_eq!(shares, vec![0.75, 0.25, 0.0]);
        assert_eq!(bound, 0.0);
        // t = 2: the first share lies in [28/(28 + 14), 32/(32 + 8)] = [2/3, 4/5].
        let (_, bound) = normalize(&[30, 10, 0], 2);
        assert!((bound - (0.75 - 2.0 / 3.0)).abs() < 1e-12, "{bound}");
        let (shares, _) = normalize(&[0, 0], 3);
        assert_eq!(shares, vec![0.5, 0.5]);
    }

    proptest! {
        /// Adding, removing or changing one row moves the histogram by at most Δ₁ in L1 and Δ₂
        /// in L2.
        #[test]
        fn numeric_histogram_l1_sensitivity(
            rows in proptest::collection::vec(awkward_value(), 1..60),
            other in awkward_value(),
            k in 1usize..12,
            at in any::<prop::sample::Index>(),
        ) {
            let bounds = Bounds::new(Finite::from_f64(-100.0).unwrap(), Finite::from_f64(1e6).unwrap()).unwrap();
            let bins = Bins::new(bounds, k);
            let hist = |r: &[f64], n: Neighbours| aggregate(count_into(k, r.iter().copied(), |x| bins.index(x)), n);
            let i = at.index(rows.len());
            let Neighbouring { removed, added, changed } = neighbouring(&rows, other, i);
            let base = hist(&rows, Neighbours::AddRemove);
            for n in [removed, added] {
                prop_assert!(l1(&hist(&n, Neighbours::AddRemove).value, &base.value) <= base.sensitivity);
                prop_assert!(l2(&hist(&n, Neighbours::AddRemove).value, &base.value) <= base.l2_squared);
            }
            let base = hist(&rows, Neighbours::Replace);
            prop_assert!(l1(&hist(&changed, Neighbours::Replace).value, &base.value) <= base.sensitivity);
            prop_assert!(l2(&hist(&changed, Neighbours::Replace).value, &base.value) <= base.l2_squared);
        }

        /// Whenever every noisy count is within t of its true count, every released share is
        /// within the stated bound of the true share (the bound covers the box it claims).
        #[test]
        fn normalized_bound_covers_the_true_shares(
            truth in proptest::collection::vec(0i128..50, 1..8),
            noise in proptest::collection::vec(-6i128..=6, 8),
            t in 6u128..10,
        ) {
            let noisy: Vec<i128> = truth.iter().zip(&noise).map(|(c, z)| (c + z).max(0)).collect();
            let (shares, bound) = normalize(&noisy, t);
            prop_assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            let total: i128 = truth.iter().sum();
            prop_assume!(total > 0);
            for (share, c) in shares.iter().zip(&truth) {
                let true_share = *c as f64 / total as f64;
                prop_assert!((share - true_share).abs() <= bound + 1e-12, "{} vs {}, bound {}", share, true_share, bound);
            }
            prop_assert!(bound <= 1.0);
        }

        #[test]
        fn categorical_histogram_l1_sensitivity(
            rows in proptest::collection::vec("[a-e]", 1..60),
            other in "[a-e]",
            at in any::<prop::sample::Index>(),
        ) {
            let cats: Categories = "a,b,c".parse().unwrap();
            let k = cats.names().len() + 1;
            let hist = |r: &[String]| count_into(k, r.iter(), |c| cats.index(c.as_bytes()))
                .into_iter().map(i128::from).collect::<Vec<_>>();
            let i = at.index(rows.len());
            let mut changed = rows.clone();
            changed[i] = other.clone();
            let mut added = rows.clone();
            added.push(other);
            prop_assert!(l1(&hist(&changed), &hist(&rows)) <= sensitivity(Neighbours::Replace));
            prop_assert!(l1(&hist(&added), &hist(&rows)) <= sensitivity(Neighbours::AddRemove));
            prop_assert!(l2(&hist(&changed), &hist(&rows)) <= l2_squared(Neighbours::Replace));
            prop_assert!(l2(&hist(&added), &hist(&rows)) <= l2_squared(Neighbours::AddRemove));
        }

        /// A closed list (`--closed`) keeps the sensitivities: an imputed row lies in one listed
        /// bin (replace: −1 and +1), and a skipped row (add-remove only) moves no bin.
        #[test]
        fn closed_categories_keep_the_sensitivity(
            rows in proptest::collection::vec("[a-e]", 1..60),
            other in "[a-e]",
            at in any::<prop::sample::Index>(),
            skip in any::<bool>(),
        ) {
            let mut cats: Categories = "a,b,c".parse().unwrap();
            cats.close(if skip { Outside::Skip } else { Outside::Impute(1) });
            let k = cats.cells();
            prop_assert_eq!(k, 3);
            let hist = |r: &[String]| {
                let mut counts = vec![0i128; k];
                for c in r {
                    if let Some(bin) = cats.slot(c.as_bytes()).unwrap() {
                        counts[bin] += 1;
                    }
                }
                counts
            };
            let i = at.index(rows.len());
            let mut changed = rows.clone();
            changed[i] = other.clone();
            let mut removed = rows.clone();
            removed.remove(i);
            let mut added = rows.clone();
            added.push(other);
            for neighbour in [&added, &removed] {
                prop_assert!(l1(&hist(neighbour), &hist(&rows)) <= sensitivity(Neighbours::AddRemove));
                prop_assert!(l2(&hist(neighbour), &hist(&rows)) <= l2_squared(Neighbours::AddRemove));
            }
            if !skip {
                prop_assert!(l1(&hist(&changed), &hist(&rows)) <= sensitivity(Neighbours::Replace));
                prop_assert!(l2(&hist(&changed), &hist(&rows)) <= l2_squared(Neighbours::Replace));
            }
        }
    }
}
