//! AboveThreshold (the sparse vector technique with one positive answer), with exact discrete
//! Laplace noise.
//!
//! Given a sequence of integer queries g_1, g_2, … (chosen before any data is read) and the
//! threshold 0, draw ρ ~ DLap(Δ/ε₁) once, then for i = 1, 2, … draw ν_i ~ DLap(c·Δ/ε₂) and stop
//! at the first i with g_i + ν_i >= ρ. Only that index is released. Here Δ bounds how far any
//! one query moves between neighbouring datasets.
//!
//! Guarantee: (ε₁ + ε₂)-DP, pure, with
//! - c = 2 for arbitrary queries (Dwork, Naor, Reingold, Rothblum, Vadhan 2009; Dwork & Roth
//!   2014, AboveThreshold, Alg. 1 and Thm 3.23, which is ε₁ = ε₂ = ε/2; Lyu, Su, Li 2017,
//!   "Understanding the sparse vector technique", for unequal shares);
//! - c = 1 when the queries are *monotone*: between any two neighbours either every query moves
//!   up or stays, or every query moves down or stays (Lyu, Su, Li 2017, monotonic queries; used
//!   for quantiles by Durfee 2023). The proof below covers both.
//!
//! The proof carries over from continuous to discrete noise unchanged: every shift it makes is
//! by an integer (Δ or 2Δ), a bijection of the integers, and the discrete Laplace pmf satisfies
//! P(Z = z) <= exp(|k|/s)·P(Z = z + k) for all integers z, k. With D, D' neighbours and output
//! k, P_D(k) = Σ_z P(ρ = z)·Π_{i<k} P(g_i(D) + ν_i < z)·P(g_k(D) + ν_k >= z). Substituting
//! z' = z + Δ costs exp(ε₁) and makes every "below" factor of D at most that of D' (since
//! g_i(D') <= g_i(D) + Δ); the last factor then costs exp(ε₂) by shifting ν_k by 2Δ (c = 2).
//! For monotone queries, if g(D') >= g(D) everywhere the same substitution is needed but ν_k
//! moves by Δ only; if g(D') <= g(D) everywhere no substitution is needed and ν_k moves by Δ
//! (c = 1). Every draw is exact (Canonne, Kamath, Steinke 2020), so no float can leak anything.

use num_bigint::BigInt;
use num_rational::BigRational;
use rand::RngCore;

use super::epsilon::Epsilon;
use super::laplace::noise_scale;
use super::sampler::{discrete_laplace, discrete_laplace_error_bound};

/// The noise of one AboveThreshold run, fixed before any data is read.
#[derive(Clone, Debug, PartialEq)]
pub struct AboveThreshold {
    /// Δ of every query.
    pub sensitivity: u128,
    /// Whether the queries are monotone (then the query noise is halved).
    pub monotone: bool,
    /// ε₁, spent on the threshold's noise.
    pub threshold_eps: Epsilon,
    /// ε₂, spent on the queries' noise.
    pub queries_eps: Epsilon,
}

impl AboveThreshold {
    /// Scale of the threshold's noise: Δ/ε₁.
    pub fn threshold_scale(&self) -> BigRational {
        noise_scale(self.delta(), &self.threshold_eps)
    }

    /// Scale of each query's noise: c·Δ/ε₂ with c = 1 (monotone) or 2.
    pub fn query_scale(&self) -> BigRational {
        let c = if self.monotone { 1 } else { 2 };
        noise_scale(self.delta() * c, &self.queries_eps)
    }

    fn delta(&self) -> i128 {
        i128::try_from(self.sensitivity.max(1)).unwrap_or(i128::MAX)
    }

    /// The index of the first query whose noisy value reaches the noisy threshold 0, or None
    /// when none does. Queries are evaluated lazily, one noise draw each, in order.
    pub fn run(&self, queries: impl IntoIterator<Item = i128>, rng: &mut dyn RngCore) -> Option<usize> {
        let rho = discrete_laplace(rng, &self.threshold_scale());
        let scale = self.query_scale();
        queries.into_iter().position(|g| BigInt::from(g) + discrete_laplace(rng, &scale) >= rho)
    }

    /// α such that, with probability at least 1 − β, the run stops at a query with g >= −α and
    /// every query before it has g < α: |ρ| <= t₁ at β/2 and every |ν_i| <= t₂ at β/(2K)
    /// (a union bound over the K queries that can be asked), α = t₁ + t₂. Saturates.
    pub fn error_bound(&self, queries: usize, beta: f64) -> u128 {
        let t1 = discrete_laplace_error_bound(&self.threshold_scale(), beta / 2.0);
        let t2 = discrete_laplace_error_bound(&self.query_scale(), beta / (2.0 * queries.max(1) as f64));
        t1.saturating_add(t2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::sampler::discrete_laplace_pmf;
    use num_traits::ToPrimitive;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use statrs::distribution::{ChiSquared, ContinuousCDF};

    fn at(monotone: bool) -> AboveThreshold {
        AboveThreshold {
            sensitivity: 1,
            monotone,
            threshold_eps: "0.5".parse().unwrap(),
            queries_eps: "0.5".parse().unwrap(),
        }
    }

    /// P(stop at k) = Σ_z P(ρ = z)·Π_{i<k} P(g_i + ν < z)·P(g_k + ν >= z), summed over z, with
    /// the last entry the probability that no query fires.
    fn exact_distribution(at: &AboveThreshold, queries: &[i128]) -> Vec<f64> {
        let s1 = at.threshold_scale().to_f64().unwrap();
        let s2 = at.query_scale().to_f64().unwrap();
        let cdf_below = |x: i64| -> f64 { (-400..x).map(|v| discrete_laplace_pmf(s2, v)).sum() };
        let mut p = vec![0.0; queries.len() + 1];
        for z in -200i64..=200 {
            let pz = discrete_laplace_pmf(s1, z);
            let mut reach = pz;
            for (k, &g) in queries.iter().enumerate() {
                let below = cdf_below(z - g as i64);
                p[k] += reach * (1.0 - below);
                reach *= below;
            }
            p[queries.len()] += reach;
        }
        p
    }

    /// The stopping index follows the distribution the mechanism defines, monotone or not.
    #[test]
    fn stops_follow_their_exact_distribution() {
        let queries = [-6i128, -3, -1, 0, 2, 5];
        for monotone in [false, true] {
            let at = at(monotone);
            let expected = exact_distribution(&at, &queries);
            let mut rng = ChaCha20Rng::seed_from_u64(17); // INSECURE: test-only seed
            let n = 40_000;
            let mut observed = vec![0u64; queries.len() + 1];
            for _ in 0..n {
                observed[at.run(queries.iter().copied(), &mut rng).unwrap_or(queries.len())] += 1;
            }
            let (mut chi2, mut cells) = (0.0, 0);
            for (o, e) in observed.iter().zip(&expected) {
                let e = e * n as f64;
                if e >= 5.0 {
                    chi2 += (*o as f64 - e).powi(2) / e;
                    cells += 1;
                }
            }
            let critical = ChiSquared::new((cells - 1) as f64).unwrap().inverse_cdf(1.0 - 1e-4);
            assert!(
                chi2 < critical,
                "monotone {monotone}: χ² {chi2} >= {critical}; {observed:?} vs {expected:?}"
            );
        }
    }

    /// Monotone queries get half the query noise of arbitrary ones.
    #[test]
    fn scales_follow_the_sensitivity_and_the_split() {
        let general = at(false);
        assert_eq!(general.threshold_scale(), BigRational::from_integer(2.into()));
        assert_eq!(general.query_scale(), BigRational::from_integer(4.into()));
        assert_eq!(at(true).query_scale(), BigRational::from_integer(2.into()));
        let bound = general.error_bound(100, 0.05);
        assert!(bound > general.error_bound(1, 0.05));
        // Far below the threshold nothing fires; far above, the first query does.
        let mut rng = ChaCha20Rng::seed_from_u64(2); // INSECURE: test-only seed
        for _ in 0..50 {
            assert_eq!(general.run([-1000i128; 10], &mut rng), None);
            assert_eq!(general.run([1000i128, -1000], &mut rng), Some(0));
        }
    }
}
