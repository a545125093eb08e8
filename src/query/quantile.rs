//! **quantile / median** — the exponential mechanism (as permute-and-flip) over a public grid
//! of candidates.
//!
//! For a level q = a/b (exact, in lowest terms) the score of candidate c is
//! s(c) = |(b − a)·#(x < c) − a·#(x > c)|, an integer; lower is better, and s(c)/b is how many
//! rows c is away from the q-th quantile in rank. How far one neighbouring change moves any
//! score (Δu):
//! - add-remove: one row enters #(x < c), #(x > c) or neither, so Δu = max(a, b − a);
//! - replace: one row can leave one side and join the other, so Δu = a + (b − a) = b.
//! - with `--by`, each group has its own scores: add-remove as above; replace
//!   2·max(a, b − a), because a changed row can leave one group and join another
//!   (`query::group`).
//!
//! Permute-and-flip with exp(−ε·(s − s_min)/(2Δu)) is ε-DP (McKenna & Sheldon 2020; the
//! exponential mechanism of McSherry & Talwar 2007; quantiles as in Smith 2011). Several levels
//! split ε evenly and exactly (sequential composition). The counts are gathered in one pass,
//! per candidate and per gap between candidates, so memory grows with the number of
//! candidates, never with the rows. Candidates come from flags: an even grid over [L, U]
//! (`--resolution` points), or without bounds a fixed public log-scale grid.

use std::sync::Arc;

use num_traits::ToPrimitive;
use rand::RngCore;

use crate::data::cell::{InvalidPolicy, NumberCell};
use crate::data::row::{BadCell, Fold, Row};
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::bounds::Bounds;
use crate::privacy::accountant::Cost;
use crate::privacy::accuracy::Confidence;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::permute_and_flip::permute_and_flip;
use crate::privacy::unit::Neighbours;
use crate::query::group;
use crate::query::options::{check_invalid_policy, Level, Options, Setup};
use crate::query::statistic::{add_counts, Context, Measured, PlanContext, Planned, Statistic};
use crate::report::release::{Accuracy, CandidateInfo, Noise, Number, QuantileValue, Release, RANK};

/// `dpstat quantile` and `dpstat median`.
#[derive(Clone, Debug)]
pub struct Quantile {
    column: ColumnRef,
    invalid: InvalidPolicy,
    spec: QuantileSpec,
    median: bool,
}

impl Statistic for Quantile {
    const KINDS: &'static [&'static str] = &["quantile", "median"];
    type Fold = QuantileFold;

    fn new(kind: &str, options: Options, setup: &Setup) -> Result<Quantile, Error> {
        let median = kind == "median";
        if median && !options.levels.is_empty() {
            return Err(Error::usage("median is the level 0.5 and takes no other levels; use quantile"));
        }
        if !median && options.levels.is_empty() {
            return Err(Error::usage("quantile needs at least one level in (0, 1), e.g. 0.5"));
        }
        if options.resolution.is_some() && options.lower.is_none() {
            return Err(Error::usage("a resolution spaces candidates over [lower, upper]; give both bounds"));
        }
        let levels = if median { vec![Level::MEDIAN] } else { options.levels.clone() };
        check_invalid_policy(options.invalid, setup.neighbours)?;
        let candidates = match (options.lower, options.upper, options.resolution) {
            (_, _, Some(k)) if !(2..=MAX_RESOLUTION).contains(&k) => {
                return Err(Error::usage(format!(
                    "--resolution must be between 2 and {MAX_RESOLUTION} candidates"
                )));
            }
            (Some(_), None, _) | (None, Some(_), _) => {
                return Err(Error::usage("quantile candidates need both bounds, lower and upper, or neither"));
            }
            (Some(l), Some(u), k) => {
                // The candidates' weighted means multiply a bound by up to the resolution: refuse
                // bounds that could overflow into an infinite or NaN candidate.
                let bounds = Bounds::new(l, u)?;
                bounds.check_printable()?;
                Candidates::linear(bounds, k.unwrap_or(DEFAULT_RESOLUTION))
            }
            _ => Candidates::log_scale(),
        };
        let mut unique = levels.clone();
        unique.sort_by_key(|l| (l.numer * 1_000_000_000_000 / l.denom, l.denom));
        unique.dedup();
        if unique.len() != levels.len() {
            return Err(Error::usage("--q lists the same level twice"));
        }
        let spec = QuantileSpec {
            candidates: Arc::new(candidates),
            levels,
            neighbours: setup.neighbours,
            grouped: setup.grouped(),
        };
        let column = setup.column(&options)?;
        Ok(Quantile { column, invalid: options.invalid, spec, median })
    }

    fn workload_keys(_: &Options) -> Option<&'static [&'static str]> {
        Some(&["column", "lower", "upper", "q", "resolution", "invalid"])
    }

    const BOUNDS_OPTIONAL: bool = true;

    fn name(&self) -> &'static str {
        if self.median {
            "median"
        } else {
            "quantile"
        }
    }

    fn column(&self) -> Option<&ColumnRef> {
        Some(&self.column)
    }

    fn fold(&self, index: Option<usize>) -> QuantileFold {
        let cell = NumberCell { index: index.unwrap_or_default(), invalid: self.invalid };
        QuantileFold::new(Arc::clone(&self.spec.candidates), cell)
    }

    /// One permute-and-flip selection per level, in the order given, each at its exact share.
    fn measure(&self, fold: QuantileFold, cx: &Context, rng: &mut dyn RngCore) -> Result<Measured<Quantile>, Error> {
        let spec = &self.spec;
        let eps = spec.epsilon_per_level(cx.eps);
        let chosen: Vec<f64> = spec
            .levels
            .iter()
            .map(|level| {
                let scores = fold.scores(level);
                let delta = spec.score_sensitivity(level);
                spec.candidates.get(permute_and_flip(&scores, delta, &eps, rng))
            })
            .collect();
        self.release(cx, &eps, &chosen).map(Measured::Release)
    }

    /// The rank bound a release states: it depends only on ε, the levels, the privacy unit and
    /// the number of candidates. How far the released value is from the true quantile depends
    /// on how the data are spread around it, which no plan can know.
    fn plan(&self, cx: &PlanContext) -> Result<Planned, Error> {
        let noise = self.noise(cx.eps, cx.neighbours, cx.confidence);
        let candidates = &self.spec.candidates;
        let assumption = format!(
            "the bound is on rank, over {} {} candidates: the released candidate is within that many \
             rows (in order) of the best candidate; its distance in value from the true quantile \
             depends on how the data are spread around it, which cannot be planned without data",
            candidates.len(),
            candidates.kind
        );
        Ok(Planned { noise, bins: None, assumptions: vec![assumption] })
    }
}

impl Quantile {
    /// The chosen candidates, each with its share of ε and its rank bound.
    fn release(&self, cx: &Context, eps: &Epsilon, chosen: &[f64]) -> Result<Release, Error> {
        let spec = &self.spec;
        let beta = cx.confidence.beta();
        let k = spec.candidates.len();
        let quantiles: Vec<QuantileValue> = spec
            .levels
            .iter()
            .zip(chosen)
            .map(|(level, &value)| QuantileValue {
                q: level.to_f64(),
                q_exact: format!("{}/{}", level.numer, level.denom),
                value,
                epsilon: eps.to_f64_up(),
                epsilon_exact: eps.exact_string(),
                score_sensitivity: spec.score_sensitivity(level),
                rank_error_bound: rank_error_bound(level, spec.score_sensitivity(level), eps, k, beta),
            })
            .collect();
        let cost = Cost::sequential(
            spec.levels.iter().map(|l| Cost::part(format!("q={}", crate::numeric::format::real(l.to_f64())), eps)).collect(),
        );
        let noise = self.noise(cx.eps, cx.neighbours, cx.confidence);
        let release = cx.release(self, noise, cost)?;
        let candidates = &spec.candidates;
        Ok(Release {
            value: (chosen.len() == 1).then(|| Number::Real(chosen[0])),
            quantiles: Some(quantiles),
            candidates: Some(CandidateInfo {
                count: k,
                lower: candidates.first(),
                upper: candidates.last(),
                grid: candidates.kind,
            }),
            ..release
        })
    }
}

impl Quantile {
    /// What a release at `total` ε states about its selections: the worst level's rank bound
    /// (the release lists each level's own).
    fn noise(&self, total: &Epsilon, neighbours: Neighbours, confidence: Confidence) -> Noise {
        let spec = &self.spec;
        let eps = &spec.epsilon_per_level(total);
        let k = spec.candidates.len();
        let worst = spec
            .levels
            .iter()
            .map(|l| rank_error_bound(l, spec.score_sensitivity(l), eps, k, confidence.beta()))
            .fold(0.0, f64::max);
        let accuracy = Accuracy { confidence: confidence.level(), error_bound: worst, scope: RANK };
        Noise { mechanism: "permute-and-flip", ..Noise::multi(total, neighbours, accuracy) }
    }
}

/// Default number of candidates of an even grid over [L, U].
pub const DEFAULT_RESOLUTION: usize = 2001;
/// Most candidates a grid may have (memory and the O(K) selection stay small).
pub const MAX_RESOLUTION: usize = 1_000_000;
/// The public log-scale grid used without bounds: ±2^e·(1 + j/STEPS) for e in
/// LOG_MIN_EXP..=LOG_MAX_EXP, plus 0 — about 3 % relative resolution from 1e-6 to 1.8e19.
const LOG_MIN_EXP: i32 = -20;
const LOG_MAX_EXP: i32 = 63;
const LOG_STEPS_PER_OCTAVE: u32 = 32;

impl Level {
    /// Δu of the score for a privacy unit (see the module doc).
    pub fn score_sensitivity(&self, neighbours: Neighbours) -> u128 {
        match neighbours {
            Neighbours::AddRemove => self.numer.max(self.denom - self.numer),
            Neighbours::Replace => self.denom,
        }
    }
}

/// The public candidates, sorted and distinct.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidates {
    values: Vec<f64>,
    pub kind: &'static str,
}

impl Candidates {
    /// `count` evenly spaced points from L to U inclusive.
    pub fn linear(bounds: Bounds, count: usize) -> Candidates {
        let (l, u) = (bounds.lower(), bounds.upper());
        let last = (count - 1).max(1) as f64;
        // A weighted mean of the ends reads well (0..100 in 2000 steps gives 34.95, not
        // 34.949999999999996); halved first so that it cannot overflow near ±f64::MAX.
        let step = |i: usize| ((l / 2.0) * (last - i as f64) + (u / 2.0) * i as f64) / last * 2.0;
        let mut values: Vec<f64> = (0..count).map(step).map(|c| c.clamp(l, u)).collect();
        values.push(u);
        Candidates::from_sorted(values, "linear")
    }

    /// The fixed log-scale grid used when no bounds are given.
    pub fn log_scale() -> Candidates {
        let mut positive = Vec::new();
        for e in LOG_MIN_EXP..=LOG_MAX_EXP {
            for j in 0..LOG_STEPS_PER_OCTAVE {
                positive.push(2f64.powi(e) * (1.0 + j as f64 / LOG_STEPS_PER_OCTAVE as f64));
            }
        }
        positive.push(2f64.powi(LOG_MAX_EXP + 1));
        let mut values: Vec<f64> = positive.iter().rev().map(|c| -c).collect();
        values.push(0.0);
        values.extend(positive);
        Candidates::from_sorted(values, "log")
    }

    fn from_sorted(mut values: Vec<f64>, kind: &'static str) -> Candidates {
        values.sort_by(f64::total_cmp);
        values.dedup();
        Candidates { values, kind }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn get(&self, i: usize) -> f64 {
        self.values[i]
    }

    pub fn first(&self) -> f64 {
        self.values[0]
    }

    pub fn last(&self) -> f64 {
        self.values[self.values.len() - 1]
    }
}

/// A validated quantile query.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantileSpec {
    pub candidates: Arc<Candidates>,
    pub levels: Vec<Level>,
    pub neighbours: Neighbours,
    /// One selection per `--by` group (the score sensitivity under replace grows).
    pub grouped: bool,
}

impl QuantileSpec {
    /// ε of each level: an exact even split.
    pub fn epsilon_per_level(&self, eps: &Epsilon) -> Epsilon {
        eps.split(self.levels.len() as u32)
    }

    /// Δu of a level's scores for this query's unit, with or without groups.
    pub fn score_sensitivity(&self, level: &Level) -> u128 {
        match self.grouped {
            false => level.score_sensitivity(self.neighbours),
            true => group::score_sensitivity(
                level.score_sensitivity(Neighbours::AddRemove),
                level.score_sensitivity(Neighbours::Replace),
                self.neighbours,
            ),
        }
    }
}

/// Per-candidate counts: `equal[i]` = #(x = c_i), `gaps[i]` = #(c_{i−1} < x < c_i) with
/// `gaps[0]` below every candidate and `gaps[K]` above every one.
#[derive(Clone, Debug)]
pub struct QuantileFold {
    pub candidates: Arc<Candidates>,
    pub cell: NumberCell,
    pub equal: Vec<u64>,
    pub gaps: Vec<u64>,
}

impl QuantileFold {
    pub fn new(candidates: Arc<Candidates>, cell: NumberCell) -> QuantileFold {
        let k = candidates.len();
        QuantileFold { candidates, cell, equal: vec![0; k], gaps: vec![0; k + 1] }
    }

    pub fn add(&mut self, x: f64) {
        let values = &self.candidates.values;
        let i = values.partition_point(|&c| c < x);
        if values.get(i) == Some(&x) {
            self.equal[i] += 1;
        } else {
            self.gaps[i] += 1;
        }
    }

    /// The score of every candidate for a level (lower is better).
    pub fn scores(&self, level: &Level) -> Vec<u128> {
        let n: u128 = self.equal.iter().chain(&self.gaps).map(|&c| c as u128).sum();
        let (a, b) = (level.numer as i128, level.denom as i128);
        let mut below: u128 = 0;
        (0..self.equal.len())
            .map(|i| {
                below += self.gaps[i] as u128;
                let above = n - below - self.equal[i] as u128;
                let score = ((b - a) * below as i128 - a * above as i128).unsigned_abs();
                below += self.equal[i] as u128;
                score
            })
            .collect()
    }
}

impl Fold for QuantileFold {
    #[inline]
    fn row(&mut self, record: &Row) -> Result<(), BadCell> {
        if let Some(x) = self.cell.read(record)? {
            self.add(x);
        }
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        add_counts(&mut self.equal, &other.equal);
        add_counts(&mut self.gaps, &other.gaps);
    }
    fn heap_bytes(&self) -> usize {
        (self.equal.len() + self.gaps.len()) * std::mem::size_of::<u64>()
    }
    fn widest_column(&self) -> Option<usize> {
        Some(self.cell.index)
    }
}

/// The rank error bound (rows) of permute-and-flip at failure probability β: the chosen
/// candidate's score is within (2Δu/ε)·ln(K/β) of the best with probability >= 1 − β, and a
/// score is b times a rank distance.
pub fn rank_error_bound(level: &Level, score_sensitivity: u128, eps: &Epsilon, candidates: usize, beta: f64) -> f64 {
    let delta = score_sensitivity as f64;
    let eps = eps.as_rational().to_f64().unwrap_or(f64::MIN_POSITIVE);
    let score_bound = 2.0 * delta / eps * (candidates as f64 / beta).ln();
    // Rounded up a little so float error never understates the bound.
    (score_bound / level.denom as f64) * (1.0 + 1e-12)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::statistic::{neighbouring, Neighbouring};
    use crate::query::sum::tests::awkward_value;
    use proptest::prelude::*;

    fn fold_of(values: &[f64], candidates: &Arc<Candidates>) -> QuantileFold {
        let cell = NumberCell { index: 0, invalid: InvalidPolicy::Error };
        let mut fold = QuantileFold::new(Arc::clone(candidates), cell);
        values.iter().for_each(|&x| fold.add(x));
        fold
    }

    #[test]
    fn levels_parse_exactly() {
        assert_eq!("0.5".parse::<Level>(), Ok(Level::MEDIAN));
        assert_eq!("0.25".parse::<Level>(), Ok(Level { numer: 1, denom: 4 }));
        for bad in ["0", "1", "-0.5", "1.5", "nan", "x", "0.0000000001"] {
            assert!(bad.parse::<Level>().is_err(), "{bad}");
        }
        assert_eq!("0.9".parse::<Level>().unwrap().score_sensitivity(Neighbours::AddRemove), 9);
        assert_eq!("0.9".parse::<Level>().unwrap().score_sensitivity(Neighbours::Replace), 10);
    }

    #[test]
    fn scores_are_zero_at_the_true_median() {
        let cands = Arc::new(Candidates::linear(
            Bounds::new("0".parse().unwrap(), "10".parse().unwrap()).unwrap(),
            11,
        ));
        let fold = fold_of(&[1.0, 2.0, 3.0, 7.0, 9.0], &cands);
        let scores = fold.scores(&Level::MEDIAN);
        let best = (0..11).min_by_key(|&i| scores[i]).unwrap();
        assert_eq!(cands.get(best), 3.0);
        assert_eq!(scores[3], 0);
        // c = 5: 3 below, 2 above: |1·3 − 1·2| = 1 (half a row each way, times b = 2).
        assert_eq!(scores[5], 1);
    }

    #[test]
    fn log_grid_is_sorted_symmetric_and_covers_zero() {
        let c = Candidates::log_scale();
        assert!(c.values.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(c.first(), -c.last());
        assert!(c.values.contains(&0.0));
        assert!(c.len() > 5000 && c.len() < 6000, "{}", c.len());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Neighbouring datasets move every candidate's score by at most Δu.
        #[test]
        fn scores_move_by_at_most_their_sensitivity(
            rows in proptest::collection::vec(awkward_value(), 1..50),
            other in awkward_value(),
            at in any::<prop::sample::Index>(),
            level in prop_oneof![Just("0.5"), Just("0.9"), Just("0.01"), Just("0.333")],
            log in any::<bool>(),
        ) {
            let level: Level = level.parse().unwrap();
            let cands = Arc::new(if log {
                Candidates::log_scale()
            } else {
                Candidates::linear(Bounds::new("-1000".parse().unwrap(), "1e6".parse().unwrap()).unwrap(), 101)
            });
            let base = fold_of(&rows, &cands).scores(&level);
            let i = at.index(rows.len());
            let Neighbouring { removed, added, changed } = neighbouring(&rows, other, i);
            for (neighbours, others) in [
                (Neighbours::AddRemove, vec![removed, added]),
                (Neighbours::Replace, vec![changed]),
            ] {
                let delta = level.score_sensitivity(neighbours);
                for o in others {
                    for (s, t) in base.iter().zip(fold_of(&o, &cands).scores(&level)) {
                        prop_assert!(s.abs_diff(t) <= delta, "moved {} > Δu {}", s.abs_diff(t), delta);
                    }
                }
            }
        }
    }
}
