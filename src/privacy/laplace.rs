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
//! The noise is drawn from the generator [`crate::privacy::rng`] builds once per run.

use num_bigint::BigInt;
use num_rational::BigRational;
use rand::RngCore;

use super::epsilon::Epsilon;
use super::sampler::{discrete_laplace, discrete_laplace_error_bound};
use crate::numeric::exact::rational_to_f64_up;
use crate::numeric::grid::Grid;

/// An exact aggregate in units of `grid` and its sensitivity in the same units: what every
/// statistic hands the mechanism, so the mechanism is never told a scale by hand. For a vector
/// (histogram) the sensitivity is the L1 sensitivity; the squared L2 sensitivity beside it is
/// what the Gaussian mechanism reads (`privacy::noise`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregate<T> {
    pub value: T,
    /// Δ₁ in grid units, >= 1: the largest L1 change of `value` between neighbouring datasets.
    pub sensitivity: i128,
    /// Δ₂² in grid units², >= 1: the largest squared L2 change. For a scalar, Δ₁²; for a
    /// vector that changes in k coordinates by at most d each, k·d² (while Δ₁ = k·d).
    pub l2_squared: i128,
    pub grid: Grid,
}

impl<T> Aggregate<T> {
    /// A scalar aggregate: its L2 sensitivity is its L1 sensitivity. Δ <= 2^63 units (bounds
    /// are at most 2^62 units), so Δ² fits an i128.
    pub fn scalar(value: T, sensitivity: i128, grid: Grid) -> Aggregate<T> {
        Aggregate { value, sensitivity, l2_squared: sensitivity.saturating_mul(sensitivity), grid }
    }
}

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

    /// Smallest t (grid units) with P(|noise| > t) <= β (docs/DESIGN.md §4).
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn scale_is_sensitivity_over_epsilon() {
        let eps: Epsilon = "0.25".parse().unwrap();
        assert_eq!(noise_scale(3, &eps), BigRational::from_integer(BigInt::from(12)));
        let agg = Aggregate::scalar(10, 2, Grid::UNIT);
        let mut rng = ChaCha20Rng::seed_from_u64(1); // INSECURE: test-only seed
        let noisy = laplace(&agg, &eps, &mut rng);
        assert_eq!(noisy.noise.scale, BigRational::from_integer(BigInt::from(8)));
        assert_eq!(noisy.noise.scale_value(), 8.0);
        assert_eq!(noisy.noise.sensitivity_value(), 2.0);
    }

    /// χ² test of permute-and-flip frequencies against its exact selection probabilities,
    /// computed by brute force over all orders of a small score vector.
    #[test]
    fn vector_noise_is_independent_per_bin() {
        let eps: Epsilon = "0.5".parse().unwrap();
        let agg = Aggregate { value: vec![0; 2000], sensitivity: 1, l2_squared: 1, grid: Grid::UNIT };
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
