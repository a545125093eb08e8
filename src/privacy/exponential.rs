//! The exponential mechanism in base 2, sampled exactly over runs of equal-scored candidates.
//!
//! **Guarantee.** Over a public, data-independent set of candidates with scores s (lower is
//! better) that move by at most Δ between neighbouring datasets, candidate c is released with
//! probability proportional to 2^(−η·s(c)), η = ε/(2Δ·ln2⁺) with ln2⁺ = 0.69314718055994531
//! (ln 2 rounded up, so η·ln 2 <= ε/(2Δ)). That is the exponential mechanism (McSherry &
//! Talwar 2007) with weights exp(−ε′·s/(2Δ)) for ε′ = 2Δ·η·ln 2 <= ε (ε′ falls short of ε by
//! less than 10^−18 of it), hence ε-DP for the privacy unit Δ was computed under; writing it
//! in base 2 is Ilvento's ("Implementing the Exponential Mechanism with Base-2 Differential
//! Privacy", CCS 2020), which is what lets it be sampled with integers alone.
//!
//! **Runs.** The caller walks its candidates as runs: `(points, score)`, `points` consecutive
//! candidates sharing one score. [`Base2::sample`] returns the run and a uniform point inside
//! it, which is the distribution above over the candidates themselves, so a run of 10^6
//! candidates costs what a run of one does.
//!
//! **Exactness.** No float is on the sampling path. With d = s − s_min and k = min(⌊η·d⌋, 64),
//! a point is proposed with integer weight 2^(64 − k) (a uniform draw below their sum, a
//! `u128`) and accepted with probability 2^−(η·d − k), an exact coin: the integer part as fair
//! bits, the fraction f as Bernoulli(exp(−f·ln 2)) by Canonne, Kamath & Steinke's Algorithm 1
//! with each Bernoulli(f·ln 2/j) drawn as Bernoulli(f/j) and Bernoulli(ln 2), the latter as
//! Bernoulli(1/K) for K geometric with P(K = k) = 2^−k (Σ 2^−k/k = ln 2). A proposal is
//! accepted with probability above 1/2 unless it lies 64 or more halvings from the best
//! (proposed with probability below 2^−44 on 10^6 candidates), so a draw walks the runs about
//! three times: O(runs), whatever the number of candidates. The walk that finds the proposal
//! stops at its run, and a caller that knows where its best score lies passes it
//! ([`Base2::draw_from`]) instead of a whole walk to find it. Every point [`Base2::reach`] or
//! more from the best is proposed at one unit, the least weight, so a caller that lists only
//! the runs nearer than that ([`Base2::draw_near`]) makes the same draw without walking the rest.

use std::ops::ControlFlow;

use num_bigint::{BigInt, BigUint};
use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};
use rand::RngCore;

use super::epsilon::Epsilon;
use super::sampler::{bernoulli_ratio, uniform_below};

/// ln 2 rounded up at the 17th decimal: ln 2 = 0.693147180559945309417…
const LN2_UP_NUMER: u64 = 69_314_718_055_994_531;
const LN2_UP_DENOM: u64 = 100_000_000_000_000_000;
/// The halvings below the best score that get their own proposal weight; past them a point
/// is proposed at the weight of the last, and its coin makes up the difference.
const LEVELS: u32 = 64;

/// A walk over runs: calls its argument with `(points, score)` once per run, in order, until
/// the argument returns `Break` (then it stops; the draw has what it needs).
pub type Walk<'a> = &'a dyn Fn(&mut dyn FnMut(u64, i128) -> ControlFlow<()>);

/// A run as [`Base2::draw_near`] reads it: its first point, its points and its score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Near {
    pub first: u64,
    pub points: u64,
    pub score: i128,
}

/// The base-2 exponential mechanism for one ε and one sensitivity.
#[derive(Clone, Debug)]
pub struct Base2 {
    /// η, halvings per unit of score.
    eta: BigRational,
    /// `thresholds[j]` = ⌈(j + 1)/η⌉, the least d with η·d >= j + 1 (saturated).
    thresholds: Vec<u128>,
}

impl Base2 {
    pub fn new(eps: &Epsilon, sensitivity: u128) -> Base2 {
        let ln2 = BigRational::new(BigInt::from(LN2_UP_NUMER), BigInt::from(LN2_UP_DENOM));
        let two_delta = BigRational::from_integer(BigInt::from(2 * sensitivity.max(1)));
        let eta = eps.as_rational() / (two_delta * ln2);
        let thresholds = (1..=LEVELS)
            .map(|j| {
                let t = (BigRational::from_integer(BigInt::from(j)) / &eta).ceil().to_integer();
                t.to_u128().unwrap_or(u128::MAX)
            })
            .collect();
        Base2 { eta, thresholds }
    }

    /// η·ln 2 as a float, the rate of the equivalent base-e mechanism (for accuracy bounds).
    pub fn rate(&self) -> f64 {
        self.eta.to_f64().unwrap_or(0.0) * std::f64::consts::LN_2
    }

    /// ⌊η·d⌋, capped at [`LEVELS`].
    fn level(&self, d: u128) -> u32 {
        // Most runs lie past the last level: one comparison instead of a search.
        if self.thresholds.last().is_some_and(|&t| t <= d) {
            return LEVELS;
        }
        self.thresholds.partition_point(|&t| t <= d) as u32
    }

    /// The least distance from the best score at which a point is proposed at one unit, the
    /// least weight (every halving level passed; `u128::MAX` when η is too small for that).
    pub fn reach(&self) -> u128 {
        self.thresholds.last().copied().unwrap_or(u128::MAX)
    }

    /// The proposal weight of `points` points `d` from the best score.
    fn weight(&self, points: u64, d: u128) -> u128 {
        (points as u128) << (LEVELS - self.level(d))
    }

    /// The coin of a point proposed `d` from the best: the proposal carried 2^−k of its
    /// 2^(−η·d), k = [`Base2::level`]; the coin is the rest.
    fn accept(&self, d: u128, rng: &mut dyn RngCore) -> bool {
        let rest = &self.eta * BigRational::from_integer(BigInt::from(d))
            - BigRational::from_integer(BigInt::from(self.level(d)));
        bernoulli_pow2(rng, &rest)
    }

    /// Draws a run and a point inside it. `walk` must call its argument once per run, in the
    /// same order and with the same `(points, score)` every time (it is walked several times);
    /// `points` >= 1. Returns (run index, offset in the run), or None if there are no runs.
    pub fn sample(&self, walk: Walk, rng: &mut dyn RngCore) -> Option<(usize, u64)> {
        self.draw(walk, rng).map(|(run, offset, _)| (run, offset))
    }

    /// [`Base2::sample`] with, third, the points of the runs before the chosen one: the chosen
    /// point's index among all points is that plus the offset, with no walk to find it.
    pub fn draw(&self, walk: Walk, rng: &mut dyn RngCore) -> Option<(usize, u64, u64)> {
        let mut best: Option<i128> = None;
        walk(&mut |_, s| {
            best = Some(best.map_or(s, |b| b.min(s)));
            ControlFlow::Continue(())
        });
        self.draw_from(best?, walk, rng)
    }

    /// [`Base2::draw`] given the best (least) score of the runs, which a caller that knows its
    /// scores' shape finds without walking every run (`query::quantile`).
    pub fn draw_from(&self, best: i128, walk: Walk, rng: &mut dyn RngCore) -> Option<(usize, u64, u64)> {
        let mut total: u128 = 0;
        walk(&mut |p, s| {
            total += self.weight(p, s.abs_diff(best));
            ControlFlow::Continue(())
        });
        let total = BigUint::from(total);
        loop {
            let u = uniform_below(rng, &total).to_u128().unwrap_or(0);
            let (run, offset, before, d) = self.propose(best, walk, u)?;
            if self.accept(d, rng) {
                return Some((run, offset, before));
            }
        }
    }

    /// The point of the walk's proposal weights that `u` (below their total) lands on: (run,
    /// offset in it, the points before the run, its distance from the best).
    fn propose(&self, best: i128, walk: Walk, u: u128) -> Option<(usize, u64, u64, u128)> {
        let (mut seen, mut at, mut before, mut found) = (0u128, 0usize, 0u64, None);
        walk(&mut |p, s| {
            let d = s.abs_diff(best);
            let w = self.weight(p, d);
            if u < seen + w {
                let unit = w / p as u128;
                found = Some((at, ((u - seen) / unit) as u64, before, d));
                return ControlFlow::Break(());
            }
            seen += w;
            at += 1;
            before += p;
            ControlFlow::Continue(())
        });
        found
    }

    /// [`Base2::draw_from`] from the runs near the best score alone. `near` holds, in order and
    /// with no gap between them, every run that scores less than `best` + [`Base2::reach`], and
    /// maybe others; the `points` points in all lie in runs covering 0..points, and those
    /// outside `near` weigh one unit each, so their total needs no walk. `score_of(point)`
    /// scores a point outside `near`, and is asked only when one is proposed (below 2^−44 of
    /// the time on 10^6 candidates). The same draw as [`Base2::draw_from`] over every run: the
    /// same total, the same point for the same uniform number, the same coin. Returns the
    /// point's index among all points; None if `near` is empty.
    pub fn draw_near(
        &self,
        best: i128,
        near: &[Near],
        points: u64,
        mut score_of: impl FnMut(u64) -> i128,
        rng: &mut dyn RngCore,
    ) -> Option<u64> {
        let (first, last) = (near.first()?, near.last()?);
        let listed = last.first + last.points - first.first;
        debug_assert_eq!(listed, near.iter().map(|r| r.points).sum::<u64>(), "near runs without gaps");
        let weighed: u128 = near.iter().map(|r| self.weight(r.points, r.score.abs_diff(best))).sum();
        let total = BigUint::from(weighed + u128::from(points - listed));
        loop {
            let u = uniform_below(rng, &total).to_u128().unwrap_or(0);
            let (point, score) = self.propose_near(best, near, u);
            let d = score.unwrap_or_else(|| score_of(point)).abs_diff(best);
            if self.accept(d, rng) {
                return Some(point);
            }
        }
    }

    /// The point `u` lands on in [`Base2::draw_near`], with its score when it lies in a near
    /// run. The points before and after the near runs weigh
    /// one unit each, so the point is `u` itself before them, and as far past their end as `u`
    /// is past the weight up to there after them.
    fn propose_near(&self, best: i128, near: &[Near], u: u128) -> (u64, Option<i128>) {
        let start = near.first().map_or(0, |r| r.first);
        if u < u128::from(start) {
            return (u as u64, None);
        }
        let mut seen = u128::from(start);
        for r in near {
            let w = self.weight(r.points, r.score.abs_diff(best));
            if u < seen + w {
                return (r.first + ((u - seen) / (w / r.points as u128)) as u64, Some(r.score));
            }
            seen += w;
        }
        let end = near.last().map_or(0, |r| r.first + r.points);
        (end + (u - seen) as u64, None)
    }
}

/// Bernoulli(2^−x) for rational x >= 0, exactly.
pub fn bernoulli_pow2(rng: &mut dyn RngCore, x: &BigRational) -> bool {
    let whole = x.floor();
    let frac = x - &whole;
    let mut halvings = whole.to_integer().to_u128().unwrap_or(u128::MAX);
    // 2^−m: m fair bits, all zero; the first one bit settles it.
    while halvings > 0 {
        let take = halvings.min(64) as u32;
        let bits = rng.next_u64() & (u64::MAX >> (64 - take));
        if bits != 0 {
            return false;
        }
        halvings -= u128::from(take);
    }
    if frac.is_zero() {
        return true;
    }
    // CKS 2020, Algorithm 1 with γ = f·ln 2 <= 1: the number K of successes of
    // Bernoulli(γ/1), Bernoulli(γ/2), … before the first failure is even with
    // probability exp(−γ).
    let (Some(p), Some(q)) = (frac.numer().to_biguint(), frac.denom().to_biguint()) else {
        return true;
    };
    let mut k = 1u64;
    loop {
        let success = bernoulli_ratio(rng, &p, &(&q * BigUint::from(k))) && bernoulli_ln2(rng);
        if !success {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// Bernoulli(ln 2): K >= 1 with P(K = k) = 2^−k, then Bernoulli(1/K).
fn bernoulli_ln2(rng: &mut dyn RngCore) -> bool {
    let mut k: u64 = 1;
    loop {
        let word = rng.next_u64();
        if word != 0 {
            k += u64::from(word.trailing_zeros());
            break;
        }
        k += 64;
    }
    uniform_below(rng, &BigUint::from(k)).is_zero()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use statrs::distribution::{ChiSquared, ContinuousCDF};

    fn chi2(observed: &[u64], expected: &[f64]) -> f64 {
        let n: u64 = observed.iter().sum();
        observed.iter().zip(expected).map(|(&o, &p)| (o as f64 - p * n as f64).powi(2) / (p * n as f64)).sum()
    }

    fn critical(cells: usize) -> f64 {
        ChiSquared::new((cells - 1) as f64).unwrap().inverse_cdf(1.0 - 1e-4)
    }

    #[test]
    fn pow2_coins_have_their_probability() {
        let mut rng = ChaCha20Rng::seed_from_u64(5); // INSECURE: test-only seed
        for x in ["0", "1/3", "1/2", "7/10", "5/2"] {
            let x: BigRational = {
                let (a, b) = x.split_once('/').unwrap_or((x, "1"));
                BigRational::new(a.parse().unwrap(), b.parse().unwrap())
            };
            let p = 2f64.powf(-x.to_f64().unwrap());
            let draws = 40_000;
            let heads = (0..draws).filter(|_| bernoulli_pow2(&mut rng, &x)).count() as f64;
            let sd = (p * (1.0 - p) / draws as f64).sqrt().max(1e-9);
            assert!((heads / draws as f64 - p).abs() < 5.0 * sd, "2^-{x}: {} vs {p}", heads / draws as f64);
        }
        let heads = (0..40_000).filter(|_| bernoulli_ln2(&mut rng)).count() as f64 / 40_000.0;
        assert!((heads - std::f64::consts::LN_2).abs() < 5.0 * (0.25f64 / 40_000.0).sqrt(), "{heads}");
    }

    /// Runs of several points with signed scores: the draws over the points match
    /// points·2^(−η·(s − s_min)) (χ², insecure seed).
    #[test]
    fn runs_are_drawn_with_their_exact_weights() {
        let runs: [(u64, i128); 5] = [(3, 4), (1, -2), (2, 0), (5, 9), (1, 1)];
        let eps: Epsilon = "1".parse().unwrap();
        let mech = Base2::new(&eps, 2);
        let walk = |f: &mut dyn FnMut(u64, i128) -> ControlFlow<()>| {
            let _ = runs.iter().try_for_each(|&(p, s)| f(p, s));
        };
        let eta = mech.eta.to_f64().unwrap();
        let points: Vec<(usize, u64, f64)> = runs
            .iter()
            .enumerate()
            .flat_map(|(r, &(p, s))| (0..p).map(move |o| (r, o, 2f64.powf(-eta * (s + 2) as f64))))
            .collect();
        let z: f64 = points.iter().map(|p| p.2).sum();
        let expected: Vec<f64> = points.iter().map(|p| p.2 / z).collect();
        let mut rng = ChaCha20Rng::seed_from_u64(17); // INSECURE: test-only seed
        let mut observed = vec![0u64; points.len()];
        for _ in 0..60_000 {
            let (r, o, before) = mech.draw(&walk, &mut rng).unwrap();
            assert_eq!(before, runs[..r].iter().map(|run| run.0).sum::<u64>(), "the points before run {r}");
            let i = points.iter().position(|p| p.0 == r && p.1 == o).unwrap();
            observed[i] += 1;
        }
        let stat = chi2(&observed, &expected);
        assert!(stat < critical(points.len()), "χ² {stat}; observed {observed:?}");
        // η·ln 2 is ε/(2Δ) to 18 places.
        assert!((mech.rate() - 0.25).abs() < 1e-15);
    }

    /// Every uniform number proposes the same point from the near runs as from the whole walk,
    /// including the one-unit points before and after them, which a draw almost never reaches.
    #[test]
    fn near_proposals_are_the_whole_walks() {
        let mech = Base2::new(&"2".parse().unwrap(), 1);
        let (best, reach) = (-7i128, mech.reach() as i128);
        let runs: Vec<(u64, i128)> = vec![
            (4, best + reach + 90),
            (2, best + reach),
            (3, best + reach - 1),
            (1, best),
            (5, best + 3),
            (2, best + reach),
            (6, best + 4 * reach),
        ];
        let walk = |f: &mut dyn FnMut(u64, i128) -> ControlFlow<()>| {
            let _ = runs.iter().try_for_each(|&(p, s)| f(p, s));
        };
        let near = [
            Near { first: 6, points: 3, score: runs[2].1 },
            Near { first: 9, points: 1, score: best },
            Near { first: 10, points: 5, score: best + 3 },
        ];
        let weighed: u128 = near.iter().map(|r| mech.weight(r.points, r.score.abs_diff(best))).sum();
        let total = weighed + 6 + 8;
        let mut us: Vec<u128> = (0..8).chain(total - 10..total).collect();
        us.extend([6 + weighed / 3, 6 + weighed - 1, 6 + weighed]);
        for u in us {
            let (run, offset, before, d) = mech.propose(best, &walk, u).unwrap();
            let (point, score) = mech.propose_near(best, &near, u);
            assert_eq!(point, before + offset, "u = {u}");
            assert_eq!(score.map_or(d, |s| s.abs_diff(best)), d, "u = {u}");
            assert_eq!(score.is_some(), (2..5).contains(&run), "u = {u}");
        }
    }

    /// A huge gap neither overflows nor is ever chosen; a run far past the 64 levels is still
    /// drawn when it is all there is.
    #[test]
    fn huge_scores_stay_exact() {
        let eps: Epsilon = "10".parse().unwrap();
        let mech = Base2::new(&eps, 1);
        let mut rng = ChaCha20Rng::seed_from_u64(3); // INSECURE: test-only seed
        let runs: [(u64, i128); 3] = [(1_000_000, 10i128.pow(30)), (1, 0), (7, -(10i128.pow(20)))];
        let walk = |f: &mut dyn FnMut(u64, i128) -> ControlFlow<()>| {
            let _ = runs.iter().try_for_each(|&(p, s)| f(p, s));
        };
        for _ in 0..50 {
            assert_eq!(mech.sample(&walk, &mut rng).unwrap().0, 2);
        }
        let none = |_: &mut dyn FnMut(u64, i128) -> ControlFlow<()>| {};
        assert_eq!(mech.sample(&none, &mut rng), None);
    }
}
