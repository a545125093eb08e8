//! The Laplace mechanism, exactly: an integer aggregate with integer sensitivity Δ (in grid
//! units) plus discrete Laplace noise of scale Δ/ε.
//!
//! Guarantee: if no neighbouring datasets' aggregates differ by more than Δ (in L1 for
//! vectors), releasing aggregate + Z with P(Z = z) ∝ exp(−ε|z|/Δ) per coordinate is ε-DP
//! (pure, δ = 0), for whatever privacy unit Δ was computed under (Dwork, McSherry, Nissim,
//! Smith 2006; discrete form: Ghosh, Roughgarden, Sundararajan 2012). The sampler is exact
//! (Canonne, Kamath, Steinke 2020), so no floating-point artefact can leak the aggregate
//! (Mironov 2012). Converting the noisy integer to a decimal is post-processing.
//!
//! Randomness enters here and only here: [`system_rng`] reads the operating system's CSPRNG,
//! or, for tests, a seeded generator announced on stderr.

use std::io::Write;

use anyhow::{Context, Result};
use num_bigint::{BigInt, BigUint};
use num_rational::BigRational;
use num_traits::ToPrimitive;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::clamp::Grid;
use crate::epsilon::{rational_to_f64_up, Epsilon};
use crate::error::bad_input;
use crate::query::Aggregate;
use crate::sampler::{bernoulli_exp, discrete_laplace, discrete_laplace_error_bound, uniform_below};

/// The test-only switch to reproducible (and therefore not private) noise.
pub const INSECURE_SEED_VAR: &str = "DPSTAT_INSECURE_SEED";

/// The noise of one release, fixed before any data is read: Δ and the grid come from the
/// query's spec (through its aggregate), ε from the flags. A release draws its noise from this;
/// `dpstat plan` reads its accuracy off it without drawing anything, so both state the same
/// scale and the same bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Δ in grid units.
    pub sensitivity: i128,
    pub grid: Grid,
    /// Δ/ε in grid units.
    pub scale: BigRational,
    pub eps: Epsilon,
}

impl Calibration {
    /// The calibration of discrete Laplace noise for an aggregate's Δ and grid at ε. Only the
    /// sensitivity and grid are read, never the aggregate's value.
    pub fn of<T>(aggregate: &Aggregate<T>, eps: &Epsilon) -> Calibration {
        Calibration {
            sensitivity: aggregate.sensitivity,
            grid: aggregate.grid,
            scale: noise_scale(aggregate.sensitivity, eps),
            eps: eps.clone(),
        }
    }

    /// Smallest t (grid units) with P(|noise| > t) <= β (DESIGN.md §4).
    pub fn error_bound_units(&self, beta: f64) -> u128 {
        discrete_laplace_error_bound(&self.scale, beta)
    }

    /// The same bound in the statistic's units, rounded up.
    pub fn error_bound(&self, beta: f64) -> f64 {
        let units = BigRational::from_integer(BigInt::from(self.error_bound_units(beta)));
        rational_to_f64_up(&(units * self.grid.spacing()))
    }

    /// Δ in the statistic's units.
    pub fn sensitivity_value(&self) -> f64 {
        rational_to_f64_up(&(BigRational::from_integer(BigInt::from(self.sensitivity)) * self.grid.spacing()))
    }

    /// Δ/ε in the statistic's units.
    pub fn scale_value(&self) -> f64 {
        rational_to_f64_up(&(&self.scale * self.grid.spacing()))
    }
}

/// A noisy release in grid units with the calibration of its noise.
#[derive(Clone, Debug)]
pub struct Noisy<T> {
    pub value: T,
    pub noise: Calibration,
}

/// Releases a scalar aggregate with discrete Laplace noise of scale Δ/ε.
pub fn laplace(aggregate: &Aggregate<i128>, eps: &Epsilon, rng: &mut dyn RngCore) -> Noisy<BigInt> {
    let noise = Calibration::of(aggregate, eps);
    let value = BigInt::from(aggregate.value) + discrete_laplace(rng, &noise.scale);
    Noisy { value, noise }
}

/// Releases every coordinate of a vector aggregate with independent noise of scale Δ₁/ε,
/// Δ₁ being its L1 sensitivity.
pub fn laplace_each(
    aggregate: &Aggregate<Vec<i128>>,
    eps: &Epsilon,
    rng: &mut dyn RngCore,
) -> Noisy<Vec<BigInt>> {
    let noise = Calibration::of(aggregate, eps);
    let value =
        aggregate.value.iter().map(|&v| BigInt::from(v) + discrete_laplace(rng, &noise.scale)).collect();
    Noisy { value, noise }
}

/// Scale of the noise in grid units: Δ/ε, exactly.
pub fn noise_scale(sensitivity: i128, eps: &Epsilon) -> BigRational {
    BigRational::from_integer(BigInt::from(sensitivity)) / eps.as_rational()
}

/// Permute-and-flip (McKenna & Sheldon 2020): picks index r of `scores` (lower is better) with
/// the exponential mechanism's guarantee. Visit the candidates in a uniformly random order and
/// stop at r with probability exp(−ε·(s_r − s_min)/(2Δ)), where Δ bounds how much any score
/// moves between neighbouring datasets. That is ε-DP for the privacy unit Δ was computed under,
/// and never less accurate in expectation than the exponential mechanism. The best candidate
/// stops with probability 1, so the loop ends within one pass. Every coin is an exact
/// Bernoulli(exp(−γ)) with rational γ: no float can underflow, however many candidates tie.
///
/// Utility: P(s_chosen − s_min >= (2Δ/ε)·ln(K/β)) <= β for K candidates (a union bound over
/// the candidates that far from the best, each stopping with probability at most β/K).
pub fn permute_and_flip(scores: &[u128], sensitivity: u128, eps: &Epsilon, rng: &mut dyn RngCore) -> usize {
    let best = scores.iter().copied().min().unwrap_or(0);
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // Fisher–Yates with exact uniform draws.
    for i in (1..order.len()).rev() {
        let j = uniform_below(rng, &BigUint::from(i as u64 + 1));
        order.swap(i, j.to_usize().unwrap_or(i));
    }
    let two_delta = BigRational::from_integer(BigInt::from(2 * sensitivity.max(1)));
    let rate = eps.as_rational() / two_delta;
    for &r in &order {
        let gamma = &rate * BigInt::from(scores[r] - best);
        if bernoulli_exp(rng, &gamma) {
            return r;
        }
    }
    unreachable!("the best candidate stops with probability 1")
}

/// The generator for all noise: ChaCha20 seeded from the operating system (failure to get
/// entropy is an error, never a fallback), or from `DPSTAT_INSECURE_SEED` with a warning.
pub fn system_rng() -> Result<ChaCha20Rng> {
    match std::env::var_os(INSECURE_SEED_VAR) {
        None => {
            ChaCha20Rng::try_from_os_rng().context("reading the operating system's random number generator")
        }
        Some(seed) => {
            let seed: u64 = seed.to_str().and_then(|s| s.trim().parse().ok()).ok_or_else(|| {
                bad_input(format!("{INSECURE_SEED_VAR} must be an unsigned 64-bit integer"))
            })?;
            let _ = writeln!(
                std::io::stderr(),
                "dpstat: warning: {INSECURE_SEED_VAR} is set: the noise is reproducible and this release is NOT private (testing only)"
            );
            Ok(ChaCha20Rng::seed_from_u64(seed)) // INSECURE: test hook only
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_is_sensitivity_over_epsilon() {
        let eps: Epsilon = "0.25".parse().unwrap();
        assert_eq!(noise_scale(3, &eps), BigRational::from_integer(BigInt::from(12)));
        let agg = Aggregate { value: 10, sensitivity: 2, grid: Grid::UNIT };
        let mut rng = ChaCha20Rng::seed_from_u64(1); // INSECURE: test-only seed
        let noisy = laplace(&agg, &eps, &mut rng);
        assert_eq!(noisy.noise.scale, BigRational::from_integer(BigInt::from(8)));
        assert_eq!(noisy.noise.scale_value(), 8.0);
        assert_eq!(noisy.noise.sensitivity_value(), 2.0);
    }

    /// χ² test of permute-and-flip frequencies against its exact selection probabilities,
    /// computed by brute force over all orders of a small score vector.
    #[test]
    fn permute_and_flip_matches_its_distribution() {
        use statrs::distribution::{ChiSquared, ContinuousCDF};
        let scores = [0u128, 1, 1, 3, 6];
        let eps: Epsilon = "1".parse().unwrap();
        let (delta, n) = (1u128, 60_000);
        // p_r = exp(−ε(s_r − s_min)/(2Δ)); P(choose r) = Σ over orders of
        // Π_{before r} (1 − p) · p_r, averaged over all 5! orders.
        let p: Vec<f64> = scores.iter().map(|&s| (-(s as f64) / 2.0).exp()).collect();
        let mut expected = [0.0f64; 5];
        let mut perm = [0usize, 1, 2, 3, 4];
        let mut orders = 0;
        permutations(&mut perm, 0, &mut |order| {
            orders += 1;
            let mut reach = 1.0;
            for &r in order {
                expected[r] += reach * p[r];
                reach *= 1.0 - p[r];
            }
        });
        let mut rng = ChaCha20Rng::seed_from_u64(11); // INSECURE: test-only seed
        let mut observed = [0u64; 5];
        for _ in 0..n {
            observed[permute_and_flip(&scores, delta, &eps, &mut rng)] += 1;
        }
        let chi2: f64 = observed
            .iter()
            .zip(expected)
            .map(|(&o, e)| {
                let e = e / orders as f64 * n as f64;
                (o as f64 - e).powi(2) / e
            })
            .sum();
        let critical = ChiSquared::new(4.0).unwrap().inverse_cdf(1.0 - 1e-4);
        assert!(chi2 < critical, "χ² {chi2} >= {critical}; observed {observed:?}");
        // The exponential mechanism's ordering holds: better scores are chosen more often.
        assert!(observed[0] > observed[1] && observed[1] > observed[3] && observed[3] > observed[4]);
    }

    fn permutations(items: &mut [usize; 5], k: usize, visit: &mut dyn FnMut(&[usize])) {
        if k == items.len() {
            return visit(items);
        }
        for i in k..items.len() {
            items.swap(k, i);
            permutations(items, k + 1, visit);
            items.swap(k, i);
        }
    }

    #[test]
    fn permute_and_flip_never_underflows_on_huge_gaps() {
        let scores = [10u128.pow(30), 0, 10u128.pow(30)];
        let eps: Epsilon = "10".parse().unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(3); // INSECURE: test-only seed
        for _ in 0..100 {
            assert_eq!(permute_and_flip(&scores, 1, &eps, &mut rng), 1);
        }
    }

    #[test]
    fn vector_noise_is_independent_per_bin() {
        let eps: Epsilon = "0.5".parse().unwrap();
        let agg = Aggregate { value: vec![0; 2000], sensitivity: 1, grid: Grid::UNIT };
        let mut rng = ChaCha20Rng::seed_from_u64(7); // INSECURE: test-only seed
        let noisy = laplace_each(&agg, &eps, &mut rng);
        // Lag-1 products of independent zero-mean draws average near 0.
        let v: Vec<f64> = noisy.value.iter().map(|b| b.to_string().parse().unwrap()).collect();
        let var = v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64;
        let lag = v.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / (v.len() - 1) as f64;
        assert!(var > 4.0, "variance {var} too small for scale 2");
        assert!((lag / var).abs() < 0.15, "bins correlated: {}", lag / var);
    }
}
