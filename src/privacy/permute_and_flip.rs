//! Permute-and-flip over runs of equal-scored candidates, drawn exactly with base-2 coins.
//!
//! **Guarantee.** Over a public, data-independent set of candidates with scores s (lower is
//! better) that move by at most Δ between neighbouring datasets, visit the candidates in a
//! uniformly random order and release the first whose coin comes up, a candidate d = s − s_min
//! above the best holding the coin 2^(−η·d) = exp(−ε′·d/(2Δ)) ([`Base2`]: ε′ <= ε). That is
//! permute-and-flip (McKenna & Sheldon, "Permute-and-Flip: A new mechanism for differentially
//! private selection", NeurIPS 2020), ε′-DP, hence ε-DP, for the privacy unit Δ was computed
//! under; never worse in expected score than the exponential mechanism at the same ε, and often
//! better (both shown there). It is report-noisy-max with exponential noise (Ding, Kifer, Wang &
//! Wei, "The permute-and-flip mechanism is identical to report-noisy-max with exponential
//! noise", 2021). A candidate is released with probability at most its coin, which bounds how
//! far from the best a release lies as for the exponential mechanism.
//!
//! **Runs, exactly.** The coins can be flipped before the order is drawn: the release is then
//! the first candidate of a uniformly random order among those whose coin came up, a uniform
//! one of them. Split each coin into its dyadic part 2^−k (`Base2::level`) and the rest, above
//! 1/2 (`Base2::rest_coin`): the candidates whose dyadic part came up number Binomial(points,
//! 2^−k) in a run, drawn from fair bits ([`binomial_pow2`]); visiting those in a uniformly random
//! order and stopping at the first whose rest comes up releases a uniform one of the candidates
//! whose whole coin came up, which is the mechanism. The candidates of a run are alike, so the
//! one released from a run is a uniform point of it. A visit stops with probability above 1/2,
//! and the best run's candidates always stop it, so a draw takes under two visits on average;
//! the binomials take about two fair bits a candidate in all (a quarter of a megabyte of
//! ChaCha20 output for 10^6 candidates), and no float is on the path.

use std::ops::ControlFlow;

use rand::RngCore;

use super::base2::{Base2, LEVELS};
use super::rng::Replay;
use super::sampler::{binomial_pow2, uniform_below_u64};

/// A walk over runs of equal-scored candidates: calls its argument with `(points, score)` once
/// per run, in order, until the argument returns `Break` (then it stops; the draw has what it
/// needs).
pub type Walk<'a> = &'a dyn Fn(&mut dyn FnMut(u64, i128) -> ControlFlow<()>);

/// A run as [`Base2::flip_near`] reads it: its first point, its points and its score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Near {
    pub first: u64,
    pub points: u64,
    pub score: i128,
}

/// The candidates of a draw whose coins' dyadic parts came up, not yet visited: `runs[j]` of
/// the j-th run (listed or walked), and `far` of the points beyond the runs listed.
struct Held {
    runs: Vec<u64>,
    far: u64,
}

impl Held {
    fn total(&self) -> u64 {
        self.runs.iter().sum::<u64>() + self.far
    }
}

impl Base2 {
    /// Permute-and-flip from the runs near the best score alone. `near` holds, in order and
    /// with no gap between them, every run that scores less than `best` + [`Base2::reach`], and
    /// maybe others; the `points` points in all lie in runs covering 0..points. A point outside
    /// `near` is at the last level, so its coin's dyadic part is 2^−64, the same for all: how
    /// many of them came up is one binomial, and which are uniform among them. `score_of(point)`
    /// scores such a point, asked only when one is visited (about 2^−44 of draws on 10^6
    /// candidates). Returns the point's index among all; None if `near` is empty.
    pub fn flip_near(
        &self,
        best: i128,
        near: &[Near],
        points: u64,
        score_of: impl FnMut(u64) -> i128,
        rng: &mut dyn RngCore,
    ) -> Option<u64> {
        let span = span_of(near)?;
        let runs =
            near.iter().map(|r| binomial_pow2(rng, r.points, self.level(r.score.abs_diff(best)))).collect();
        let far = binomial_pow2(rng, points.saturating_sub(span.end - span.start), LEVELS);
        self.visit_near(best, near, points, Held { runs, far }, score_of, rng)
    }

    /// The visits of [`Base2::flip_near`], given how many of each listed run's candidates, and
    /// of the points outside them, hold a coin whose dyadic part came up.
    fn visit_near(
        &self,
        best: i128,
        near: &[Near],
        points: u64,
        mut held: Held,
        mut score_of: impl FnMut(u64) -> i128,
        rng: &mut dyn RngCore,
    ) -> Option<u64> {
        let span = span_of(near)?;
        let outside = points.saturating_sub(span.end - span.start);
        let mut visited: Vec<u64> = Vec::new();
        loop {
            let total = held.total();
            if total == 0 {
                return None;
            }
            let mut u = uniform_below_u64(rng, total);
            let mut run = None;
            for (j, &h) in held.runs.iter().enumerate() {
                if u < h {
                    run = Some(j);
                    break;
                }
                u -= h;
            }
            if let Some(j) = run {
                let r = &near[j];
                if self.rest_coin(r.score.abs_diff(best), rng) {
                    return Some(r.first + uniform_below_u64(rng, r.points));
                }
                held.runs[j] -= 1;
                continue;
            }
            // A point outside the runs listed, uniform among those not visited yet.
            let point = loop {
                let i = uniform_below_u64(rng, outside);
                let point = if i < span.start { i } else { span.end + (i - span.start) };
                if !visited.contains(&point) {
                    break point;
                }
            };
            if self.rest_coin(score_of(point).abs_diff(best), rng) {
                return Some(point);
            }
            visited.push(point);
            held.far -= 1;
        }
    }

    /// Permute-and-flip over every run of `walk`, whose least score is `best`, for when too many
    /// runs lie near the best to list. Each run's binomial is drawn from a [`Replay`] generator,
    /// so a walk draws them again the same instead of keeping one a run. Returns (run index,
    /// offset in the run, the points of the runs before it), or None if there are no runs.
    pub fn flip_walk(&self, best: i128, walk: Walk, rng: &mut dyn RngCore) -> Option<(usize, u64, u64)> {
        let replay = Replay::new(rng);
        // (run, points, distance from the best, points before, candidates held) per run.
        let held_runs = |visit: &mut dyn FnMut(usize, u64, u128, u64, u64) -> ControlFlow<()>| {
            let mut parts = replay.start();
            let (mut at, mut before) = (0usize, 0u64);
            walk(&mut |p, s| {
                let d = s.abs_diff(best);
                let held = binomial_pow2(&mut parts, p, self.level(d));
                let flow = visit(at, p, d, before, held);
                at += 1;
                before += p;
                flow
            });
        };
        let mut total = 0u64;
        held_runs(&mut |_, _, _, _, held| {
            total += held;
            ControlFlow::Continue(())
        });
        // The visits that did not stop, by run: at most a few.
        let mut spent: Vec<(usize, u64)> = Vec::new();
        while total > 0 {
            let u = uniform_below_u64(rng, total);
            let (mut seen, mut found) = (0u64, None);
            held_runs(&mut |at, p, d, before, held| {
                let left = held - spent.iter().find(|s| s.0 == at).map_or(0, |s| s.1);
                if u < seen + left {
                    found = Some((at, p, d, before));
                    return ControlFlow::Break(());
                }
                seen += left;
                ControlFlow::Continue(())
            });
            let (at, p, d, before) = found?;
            if self.rest_coin(d, rng) {
                return Some((at, uniform_below_u64(rng, p), before));
            }
            match spent.iter_mut().find(|s| s.0 == at) {
                Some(s) => s.1 += 1,
                None => spent.push((at, 1)),
            }
            total -= 1;
        }
        None
    }
}

/// The points the runs listed cover, from the first's to the last's end (they have no gaps).
fn span_of(near: &[Near]) -> Option<std::ops::Range<u64>> {
    let (first, last) = (near.first()?, near.last()?);
    Some(first.first..last.first + last.points)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::privacy::epsilon::Epsilon;
    use crate::privacy::sampler::tests::assert_chi2;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Permute-and-flip's probability of each run, from its definition in continuous time: each
    /// point arrives at a uniform time in [0, 1] and stops the visits with probability p; run j
    /// wins when one of its points stops at t and no other point has stopped before t:
    /// ∫₀¹ m_j·p_j·(1 − p_j·t)^(m_j − 1)·Π_{i≠j} (1 − p_i·t)^(m_i) dt (Simpson's rule).
    pub(crate) fn flip_probabilities(runs: &[(u64, f64)]) -> Vec<f64> {
        let steps = 20_000;
        let density = |j: usize, t: f64| {
            let (m, p) = runs[j];
            let others: f64 = runs
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != j)
                .map(|(_, &(mi, pi))| (1.0 - pi * t).powi(mi as i32))
                .product();
            m as f64 * p * (1.0 - p * t).powi(m as i32 - 1) * others
        };
        (0..runs.len())
            .map(|j| {
                let h = 1.0 / steps as f64;
                let inner: f64 =
                    (1..steps).map(|i| density(j, i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 }).sum();
                (density(j, 0.0) + inner + density(j, 1.0)) * h / 3.0
            })
            .collect()
    }

    const RUNS: [(u64, i128); 5] = [(3, 4), (1, -2), (2, 0), (5, 9), (1, 1)];

    fn walk_of(runs: &[(u64, i128)]) -> impl Fn(&mut dyn FnMut(u64, i128) -> ControlFlow<()>) + '_ {
        move |f| {
            let _ = runs.iter().try_for_each(|&(p, s)| f(p, s));
        }
    }

    /// The runs' probabilities and each point's (a point of a run is uniform in it).
    fn expected(mech: &Base2, runs: &[(u64, i128)]) -> (Vec<f64>, Vec<f64>) {
        let best = runs.iter().map(|r| r.1).min().unwrap();
        let eta = mech.eta();
        let coins: Vec<(u64, f64)> =
            runs.iter().map(|&(p, s)| (p, 2f64.powf(-eta * (s - best) as f64))).collect();
        let by_run = flip_probabilities(&coins);
        let by_point =
            runs.iter().zip(&by_run).flat_map(|(&(p, _), &q)| (0..p).map(move |_| q / p as f64)).collect();
        (by_run, by_point)
    }

    /// Both draws over runs of several points with signed scores follow permute-and-flip
    /// point by point (χ², insecure seed); the walk's points before a run are the runs'.
    #[test]
    fn runs_flip_as_permute_and_flip() {
        let mech = Base2::new(&"1".parse::<Epsilon>().unwrap(), 2);
        let (by_run, by_point) = expected(&mech, &RUNS);
        assert!((by_run.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{by_run:?}");
        let near: Vec<Near> = RUNS
            .iter()
            .scan(0u64, |first, &(points, score)| {
                let run = Near { first: *first, points, score };
                *first += points;
                Some(run)
            })
            .collect();
        let mut rng = ChaCha20Rng::seed_from_u64(17); // INSECURE: test-only seed
        let (mut walked, mut listed) = (vec![0u64; by_point.len()], vec![0u64; by_point.len()]);
        for _ in 0..60_000 {
            let (r, o, before) = mech.flip_walk(-2, &walk_of(&RUNS), &mut rng).unwrap();
            assert_eq!(before, RUNS[..r].iter().map(|run| run.0).sum::<u64>(), "the points before run {r}");
            walked[(before + o) as usize] += 1;
            let point = mech.flip_near(-2, &near, 12, |_| unreachable!("every run is listed"), &mut rng);
            listed[point.unwrap() as usize] += 1;
        }
        for (name, observed) in [("walked", &walked), ("listed", &listed)] {
            assert_chi2(name, observed, &by_point);
        }
        // The best run wins 0.3155 of the draws (by the trapezoid rule outside this code), where
        // the exponential mechanism gives it 1/Σ points·coin = 0.2721.
        assert!((by_run[1] - 0.3155).abs() < 1e-3, "{by_run:?}");
    }

    /// A point outside the runs listed is visited uniformly among those not visited yet, and
    /// released or not by its own score: with its runs' dyadic parts forced to have come up.
    #[test]
    fn points_outside_the_runs_listed_are_visited_uniformly() {
        let mech = Base2::new(&"1".parse::<Epsilon>().unwrap(), 1);
        let near = [Near { first: 5, points: 2, score: 0 }];
        // Points 0..5 and 7..10 lie outside; 3 and 8 score so badly that they never stop a visit.
        let score_of = |p: u64| if p == 3 || p == 8 { 1 << 90 } else { 0 };
        let mut rng = ChaCha20Rng::seed_from_u64(23); // INSECURE: test-only seed
        let mut counts = [0u64; 10];
        for _ in 0..16_000 {
            let held = Held { runs: vec![0], far: 3 };
            let point = mech.visit_near(0, &near, 10, held, score_of, &mut rng).unwrap();
            counts[point as usize] += 1;
        }
        assert_eq!(counts[3] + counts[8] + counts[5] + counts[6], 0, "{counts:?}");
        let observed: Vec<u64> = [0, 1, 2, 4, 7, 9].iter().map(|&p| counts[p]).collect();
        assert_chi2("points outside the runs listed", &observed, &[1.0 / 6.0; 6]);
        // Nothing held: nothing to release.
        let held = Held { runs: vec![0], far: 0 };
        assert_eq!(mech.visit_near(0, &near, 10, held, score_of, &mut rng), None);
    }

    /// A huge gap neither overflows nor is ever chosen; a run far past the 64 levels is still
    /// drawn when it is all there is.
    #[test]
    fn huge_scores_stay_exact() {
        let mech = Base2::new(&"10".parse::<Epsilon>().unwrap(), 1);
        let mut rng = ChaCha20Rng::seed_from_u64(3); // INSECURE: test-only seed
        let runs: [(u64, i128); 3] = [(1_000_000, 10i128.pow(30)), (1, 0), (7, -(10i128.pow(20)))];
        let best = -(10i128.pow(20));
        let near = [Near { first: 1_000_001, points: 7, score: best }];
        for _ in 0..50 {
            assert_eq!(mech.flip_walk(best, &walk_of(&runs), &mut rng).map(|d| d.0), Some(2));
            let point = mech.flip_near(best, &near, 1_000_008, |_| 10i128.pow(30), &mut rng).unwrap();
            assert!(point >= 1_000_001, "{point}");
        }
        let none = |_: &mut dyn FnMut(u64, i128) -> ControlFlow<()>| {};
        assert_eq!(mech.flip_walk(0, &none, &mut rng), None);
        assert_eq!(mech.flip_near(0, &[], 10, |_| 0, &mut rng), None);
    }
}
