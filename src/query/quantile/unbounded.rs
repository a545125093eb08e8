//! Quantiles without bounds: AboveThreshold over the public log-scale grid (Durfee 2023,
//! "Unbounded differentially private quantile and maximum estimation", NeurIPS), with exact
//! noise (`privacy::above_threshold`).
//!
//! For a level q = a/b the grid is scanned in a public order, and the first candidate whose
//! noisy query reaches the noisy threshold 0 is released:
//! - ascending when a >= b − a (q >= 1/2): g(c) = b·#(x <= c) − a·n, which first reaches 0 at
//!   the lowest valid q-quantile;
//! - descending when a < b − a: h(c) = b·#(x >= c) − (b − a)·n, the mirror image.
//!
//! The direction puts the long run of candidates that lie before the data (thousands of log
//! grid points, where a false stop would release a wild value) on the side where the margin is
//! the larger one, max(a, b − a)·n; the candidates past the data, where the margin is only
//! min(a, b − a)·n, are few before the scan meets a stop.
//!
//! Sensitivity of every query, for Δ = `Level::score_sensitivity`:
//! - add-remove: a row added below c moves g by b − a, one at or above c by −a (h likewise), so
//!   Δ = max(a, b − a); the moves differ in sign across candidates, so the queries are not
//!   monotone (query noise 2Δ/ε₂);
//! - replace (n public): a row moving from x to x' > x lowers #(x <= c) by one for c in
//!   [x, x') and changes nothing else, so Δ = b and every query moves the same way: monotone
//!   (query noise Δ/ε₂). With `--where` a changed row can leave the filter, which moves n like a
//!   removal: Δ = b still, but not monotone.
//!
//! ε of the release: when n is private (add-remove, or `--where`), a tenth pays for a noisy row
//! count, used only to judge whether the data are too few (below); the rest is split evenly
//! between the levels, and each level's share in two halves, threshold and queries. Every
//! share is exact and is a part of the release's accounting.

use num_traits::ToPrimitive;

use crate::privacy::above_threshold::AboveThreshold;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::unit::Neighbours;
use crate::query::options::Level;

/// The count's share of ε when n is private.
pub const COUNT_SHARE: u32 = 10;
/// Grid steps past the data's extreme value that a release must run to count as wild: one
/// octave of the log grid, a factor of 2.
const WILD_STEPS: i32 = 32;

/// Scan order of the grid for a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scan {
    Ascending,
    Descending,
}

impl Scan {
    pub fn of(level: &Level) -> Scan {
        if level.numer >= level.denom - level.numer {
            Scan::Ascending
        } else {
            Scan::Descending
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scan::Ascending => "ascending",
            Scan::Descending => "descending",
        }
    }
}

/// The ε of one bounds-free quantile release: the count's (when n is private) and each level's.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    pub count: Option<Epsilon>,
    pub per_level: Epsilon,
}

impl Split {
    pub fn new(eps: &Epsilon, levels: usize, n_public: bool) -> Split {
        let (count, rest) = if n_public {
            (None, eps.clone())
        } else {
            (Some(eps.split(COUNT_SHARE)), eps.share(COUNT_SHARE - 1, COUNT_SHARE))
        };
        Split { count, per_level: rest.split(levels as u32) }
    }
}

/// The AboveThreshold run of one level at its share of ε.
pub fn mechanism(level: &Level, neighbours: Neighbours, filtered: bool, eps: &Epsilon) -> AboveThreshold {
    AboveThreshold {
        sensitivity: level.score_sensitivity(neighbours),
        monotone: neighbours == Neighbours::Replace && !filtered,
        threshold_eps: eps.split(2),
        queries_eps: eps.split(2),
    }
}

/// The queries of one level in scan order, each with the index of its candidate, from the
/// per-candidate counts of a quantile fold: `equal[i]` = #(x = c_i), `gaps[i]` = #(c_{i−1} < x
/// < c_i) (`gaps` has one more entry, above the last candidate).
pub fn threshold_queries(equal: &[u64], gaps: &[u64], level: &Level, scan: Scan) -> Vec<(usize, i128)> {
    let n: i128 = equal.iter().chain(gaps).map(|&c| c as i128).sum();
    let (a, b) = (level.numer as i128, level.denom as i128);
    let k = equal.len();
    match scan {
        Scan::Ascending => {
            let mut at_or_below: i128 = 0;
            (0..k)
                .map(|i| {
                    at_or_below += (gaps[i] + equal[i]) as i128;
                    (i, b * at_or_below - a * n)
                })
                .collect()
        }
        Scan::Descending => {
            let mut at_or_above: i128 = 0;
            (0..k)
                .rev()
                .map(|i| {
                    at_or_above += (gaps[i + 1] + equal[i]) as i128;
                    (i, b * at_or_above - (b - a) * n)
                })
                .collect()
        }
    }
}

/// The probability, bounded from above, that a release of `at` over `candidates` lies outside
/// the range of data with at least `rows` rows: a false stop among the candidates before the
/// data (union bound over all of them, margin max(a, b − a)·rows), plus no stop within
/// `WILD_STEPS` (32) candidates past them (margin min(a, b − a)·rows). Uses only public scales and
/// a row count that is public or a noisy lower bound. f64; it only decides a warning.
pub fn wild_probability(at: &AboveThreshold, level: &Level, rows: f64, candidates: usize) -> f64 {
    let d = level.score_sensitivity(Neighbours::AddRemove) as f64;
    let (big, small) = (d * rows, (level.denom as f64 - d) * rows);
    let s1 = at.threshold_scale().to_f64().unwrap_or(f64::MAX);
    let s2 = at.query_scale().to_f64().unwrap_or(f64::MAX);
    // P(ν − ρ >= big): ν must reach big + ρ; the tail decreases in ρ.
    let start = expect_over(s1, true, |r| tail_at_least(s2, big + r));
    // P(every one of WILD_STEPS queries stays below ρ − small): increases in ρ.
    let end = expect_over(s1, false, |r| (1.0 - tail_at_least(s2, r - small)).powi(WILD_STEPS));
    (candidates as f64 * start + end).min(1.0)
}

/// P(Z >= x) for Z discrete Laplace of scale s, x real (rounded up to an integer).
fn tail_at_least(s: f64, x: f64) -> f64 {
    let k = x.ceil();
    let p = (-1.0 / s).exp();
    if k >= 1.0 {
        (-k / s).exp() / (1.0 + p)
    } else {
        1.0 - (-(1.0 - k) / s).exp() / (1.0 + p)
    }
}

/// An upper bound on E[f(ρ)] for ρ discrete Laplace of scale s and f in [0, 1] monotone
/// (`decreasing`, or increasing): ρ's range within ±40 scales is cut into 4000 slices, each
/// taken at the end where f is largest, and the mass beyond (below 1e-17) is counted as f = 1.
fn expect_over(s: f64, decreasing: bool, f: impl Fn(f64) -> f64) -> f64 {
    const SLICES: i32 = 4000;
    let span = 40.0 * s;
    let width = (2.0 * span / SLICES as f64).max(1.0);
    let cdf_below = |x: f64| 1.0 - tail_at_least(s, x); // P(ρ < x)
    let mut total = 2.0 * tail_at_least(s, span);
    let mut lo = -span;
    while lo < span {
        let hi = lo + width;
        let mass = cdf_below(hi) - cdf_below(lo);
        total += mass * if decreasing { f(lo) } else { f(hi) };
        lo = hi;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(s: &str) -> Level {
        s.parse().unwrap()
    }

    #[test]
    fn the_split_is_exact() {
        let eps: Epsilon = "1".parse().unwrap();
        let split = Split::new(&eps, 2, false);
        assert_eq!(split.count.as_ref().map(Epsilon::exact_string), Some("1/10".into()));
        assert_eq!(split.per_level.exact_string(), "9/20");
        let at = mechanism(&level("0.9"), Neighbours::AddRemove, false, &split.per_level);
        let total = split.count.unwrap().as_rational()
            + (at.threshold_eps.as_rational() + at.queries_eps.as_rational()) * num_bigint::BigInt::from(2);
        assert_eq!(&total, eps.as_rational());
        assert_eq!(Split::new(&eps, 3, true).per_level.exact_string(), "1/3");
        // Halved query noise only where the queries are monotone: replace without filters.
        let monotone = |n, f| mechanism(&level("0.5"), n, f, &eps).monotone;
        assert!(monotone(Neighbours::Replace, false));
        assert!(!monotone(Neighbours::Replace, true) && !monotone(Neighbours::AddRemove, false));
    }

    /// Few rows make a wild release likely, many rows unlikely.
    #[test]
    fn wild_probability_falls_with_the_rows() {
        let eps: Epsilon = "0.45".parse().unwrap();
        let k = 5379; // the log grid's candidates
        for q in ["0.5", "0.9", "0.1"] {
            let at = mechanism(&level(q), Neighbours::AddRemove, false, &eps);
            let p = |rows: f64| wild_probability(&at, &level(q), rows, k);
            assert!(p(20.0) > 0.5, "{q}: {}", p(20.0));
            assert!(p(170.0) < 0.001, "{q}: {}", p(170.0));
            assert!(p(60.0) >= p(100.0) && p(100.0) >= p(140.0));
        }
    }

    #[test]
    fn tails_match_the_pmf() {
        use crate::privacy::sampler::discrete_laplace_pmf;
        for s in [0.7, 3.0, 40.0] {
            for k in [-5i64, 0, 1, 6] {
                let direct: f64 = (k..k + 4000).map(|z| discrete_laplace_pmf(s, z)).sum();
                assert!((tail_at_least(s, k as f64) - direct).abs() < 1e-9, "s {s} k {k}");
            }
        }
    }
}
