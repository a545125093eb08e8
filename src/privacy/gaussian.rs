//! The Gaussian mechanism, exactly: an integer aggregate with squared L2 sensitivity Δ₂² (in grid
//! units²) plus discrete Gaussian noise of variance parameter σ² = Δ₂²/(2ρ) on each coordinate.
//! `--noise gaussian` draws with it through `privacy::noise` (docs/DESIGN.md §9.1–§9.3).
//!
//! **Guarantee.** If no two neighbouring datasets' aggregates differ by more than Δ₂ in L2 norm,
//! releasing aggregate + Z, with Z's coordinates independent and P(Zᵢ = z) ∝ exp(−z²/(2σ²)),
//! is ρ-zCDP with ρ = Δ₂²/(2σ²), for whatever privacy unit Δ₂ was computed under (Canonne,
//! Kamath, Steinke 2020, Thm 14: for a scalar with |q(x) − q(x')| <= Δ, D_α <= αΔ²/(2σ²); for a
//! vector the Rényi divergences of independent coordinates add, Σⱼ α·dⱼ²/(2σ²) <= αΔ₂²/(2σ²),
//! the multivariate form in the same paper). By [`super::zcdp::epsilon_for`] it is then
//! (ε, δ)-DP for every δ. The sampler is exact, so no floating-point artefact can leak the
//! aggregate (Mironov 2012); converting the noisy integer to a decimal is post-processing.
//!
//! **Sensitivity.** The statistic states Δ₂² as an integer, never Δ₂: a histogram's L2
//! sensitivity under replace is √2, and its square 2 is exact. Laplace uses the L1 sensitivity;
//! for a vector that changes in k coordinates by at most d each, Δ₁ = kd but Δ₂ = √k·d, which
//! is where Gaussian noise saves.
//!
//! **Grid.** As for Laplace, values live on g = 2^k chosen from the flags only, here from Δ₂²
//! and ρ so that σ is 2^40 to 2^41 grid units ([`Grid::for_gaussian`]); σ² in grid units is then
//! the exact rational Δ₂²/(2ρ) with Δ₂² taken from the snapped bounds.

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive};
use rand::RngCore;

use super::sampler::discrete_gaussian;
use super::zcdp::Rho;
use crate::numeric::bracket::{exp_neg, ln_ceil, pi, sqrt_ceil, sqrt_floor};
use crate::numeric::exact::{exact, rational_to_f64_up};
use crate::numeric::grid::Grid;

/// An exact aggregate in units of `grid` and its squared L2 sensitivity in grid units²: what a
/// statistic hands the Gaussian mechanism (the analogue of [`super::laplace::Aggregate`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L2Aggregate<T> {
    pub value: T,
    /// Δ₂² in grid units², >= 1: the largest squared L2 distance between neighbours' values.
    pub sensitivity_squared: BigInt,
    pub grid: Grid,
}

/// The noise of one Gaussian release, fixed before any data is read (the analogue of
/// [`super::laplace::Calibration`]): a release draws from it, a plan reads its accuracy off it.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianCalibration {
    /// Δ₂² in grid units².
    pub sensitivity_squared: BigInt,
    pub grid: Grid,
    /// σ² = Δ₂²/(2ρ) in grid units², exact.
    pub variance: BigRational,
    pub rho: Rho,
}

impl GaussianCalibration {
    /// The calibration for an aggregate's Δ₂² and grid at ρ. Only the sensitivity and grid are
    /// read, never the aggregate's value.
    pub fn of<T>(aggregate: &L2Aggregate<T>, rho: &Rho) -> GaussianCalibration {
        GaussianCalibration {
            sensitivity_squared: aggregate.sensitivity_squared.clone(),
            grid: aggregate.grid,
            variance: noise_variance(&aggregate.sensitivity_squared, rho),
            rho: rho.clone(),
        }
    }

    /// Smallest t (grid units) that [`discrete_gaussian_error_bound`] certifies:
    /// P(|noise| > t) <= β (docs/DESIGN.md §9.3).
    pub fn error_bound_units(&self, beta: f64) -> u128 {
        discrete_gaussian_error_bound(&self.variance, beta)
    }

    /// The same bound in the statistic's units, rounded up.
    pub fn error_bound(&self, beta: f64) -> f64 {
        let units = BigRational::from_integer(BigInt::from(self.error_bound_units(beta)));
        rational_to_f64_up(&(units * self.grid.spacing()))
    }

    /// Δ₂ in the statistic's units, rounded up.
    pub fn sensitivity_value(&self) -> f64 {
        let squared = BigRational::from_integer(self.sensitivity_squared.clone());
        rational_to_f64_up(&(sqrt_ceil(&squared, 64) * self.grid.spacing()))
    }

    /// σ in the statistic's units, rounded up.
    pub fn sigma_value(&self) -> f64 {
        rational_to_f64_up(&(sqrt_ceil(&self.variance, 64) * self.grid.spacing()))
    }
}

/// A noisy Gaussian release in grid units with the calibration of its noise.
#[derive(Clone, Debug)]
pub struct NoisyGaussian<T> {
    pub value: T,
    pub noise: GaussianCalibration,
}

/// Releases a scalar aggregate with discrete Gaussian noise of variance parameter Δ₂²/(2ρ).
pub fn gaussian(aggregate: &L2Aggregate<i128>, rho: &Rho, rng: &mut dyn RngCore) -> NoisyGaussian<BigInt> {
    let noise = GaussianCalibration::of(aggregate, rho);
    let value = BigInt::from(aggregate.value) + discrete_gaussian(rng, &noise.variance);
    NoisyGaussian { value, noise }
}

/// Releases every coordinate of a vector aggregate with independent discrete Gaussian noise of
/// variance parameter Δ₂²/(2ρ), Δ₂ being the vector's L2 sensitivity.
pub fn gaussian_each(
    aggregate: &L2Aggregate<Vec<i128>>,
    rho: &Rho,
    rng: &mut dyn RngCore,
) -> NoisyGaussian<Vec<BigInt>> {
    let noise = GaussianCalibration::of(aggregate, rho);
    let value =
        aggregate.value.iter().map(|&v| BigInt::from(v) + discrete_gaussian(rng, &noise.variance)).collect();
    NoisyGaussian { value, noise }
}

/// σ² = Δ₂²/(2ρ) in grid units², exactly.
pub fn noise_variance(sensitivity_squared: &BigInt, rho: &Rho) -> BigRational {
    BigRational::from_integer(sensitivity_squared.clone()) / (rho.as_rational() * BigInt::from(2))
}

/// Precision, in bits, of the brackets in the tail checks: far finer than any β they meet.
const TAIL_BITS: u32 = 64;

/// Whether P(|Z| > t) <= β is certain, by the two bounds of [`discrete_gaussian_error_bound`].
fn tail_at_most(variance: &BigRational, t: u128, beta: &BigRational) -> bool {
    let t = BigRational::from_integer(BigInt::from(t));
    let two = BigInt::from(2);
    let shifted = &t + BigRational::from_integer(BigInt::from(1));
    if let Some(ln_2_over_beta) = ln_ceil(&(BigRational::from_integer(two.clone()) / beta), TAIL_BITS) {
        if &shifted * &shifted / (variance * &two) >= ln_2_over_beta {
            return true;
        }
    }
    normal_tail_at_most(&(&t * &t / variance), &(beta / two))
}

/// Below this x², Q(x) is also bounded through the series of ∫₀ˣ exp(−u²/2) du, where Sampford's
/// bound is loosest (3% at x = 0.67, 0.3% at x = 2); above it Sampford's is within 0.03%.
const SERIES_MAX_X2: i64 = 32;

/// Whether Q(x) <= q is certain, for x = √x2 >= 0 and Q(x) = P(N(0, 1) >= x), by either
///
/// - Sampford's bound on Mills' ratio (Sampford 1953): Q(x) <= φ(x)·4/(3x + √(x² + 8)), i.e.
///   4·exp(−x²/2) <= q·√(2π)·(3x + √(x² + 8)); or
/// - for x² <= 32, Q(x) = 1/2 − I(x)/√(2π) with I(x) = ∫₀ˣ exp(−u²/2) du = x·Σₙ (−y)ⁿ/(n!(2n+1)),
///   y = x²/2: an alternating series whose terms decrease once n > y, so stopping after a
///   negative term past that point bounds it from below. I is increasing, so I(x) >= I(x_lo)
///   for x_lo = √x2 rounded down; terms are summed in fixed point, each rounded the way that
///   keeps the sum a lower bound.
fn normal_tail_at_most(x2: &BigRational, q: &BigRational) -> bool {
    let two = BigInt::from(2);
    let root_two_pi_lo = sqrt_floor(&(pi().lo * &two), TAIL_BITS);
    let x = sqrt_floor(x2, TAIL_BITS);
    if let Some(e) = exp_neg(&(x2 / &two), TAIL_BITS) {
        let root = sqrt_floor(&(x2 + BigRational::from_integer(BigInt::from(8))), TAIL_BITS);
        if e.hi * BigInt::from(4) <= q * &root_two_pi_lo * (&x * BigInt::from(3) + root) {
            return true;
        }
    }
    if *x2 > BigRational::from_integer(BigInt::from(SERIES_MAX_X2)) {
        return false;
    }
    let root_two_pi_hi = sqrt_ceil(&(pi().hi * &two), TAIL_BITS);
    let integral = &x * series_lower(&(&x * &x / &two));
    let half = BigRational::new(BigInt::from(1), two);
    half - integral / root_two_pi_hi <= *q
}

/// A lower bound on Σₙ (−y)ⁿ/(n!(2n+1)) for 0 <= y <= 16, in fixed point with 2^-128 units
/// (the terms reach e^16 < 2^24, so cancellation costs at most 24 of those bits).
fn series_lower(y: &BigRational) -> BigRational {
    const W: u32 = 128;
    let one = BigInt::from(1) << W as usize;
    let scaled = |r: &BigRational, up: bool| {
        let n = r.numer() << W as usize;
        if up {
            -((-n).div_floor(r.denom()))
        } else {
            n.div_floor(r.denom())
        }
    };
    let (y_lo, y_hi) = (scaled(y, false), scaled(y, true));
    // Positive terms use y rounded down, negative ones y rounded up: each term is then on the
    // side that lowers the sum.
    let (mut t_lo, mut t_hi) = (one.clone(), one.clone());
    let mut sum = BigInt::from(0);
    let y_ceiling = y.ceil().to_integer();
    let mut n = 0u64;
    loop {
        let odd = BigInt::from(2 * n + 1);
        if n.is_multiple_of(2) {
            sum += t_lo.div_floor(&odd);
        } else {
            sum -= -((-&t_hi).div_floor(&odd));
            // Past the peak (n >= y, so every later term is smaller than the one before) and
            // the next term is below a unit: stop after this negative term.
            if BigInt::from(n) >= y_ceiling && t_hi <= odd {
                break;
            }
        }
        let k = BigInt::from(n + 1) * &one;
        t_lo = (&t_lo * &y_lo).div_floor(&k);
        t_hi = -((-(&t_hi * &y_hi)).div_floor(&k));
        n += 1;
    }
    BigRational::new(sum, one)
}

/// A starting point for the search: where the two bounds of [`tail_at_most`] meet β, in f64.
/// Only a guess; the answer is decided by the exact checks.
fn tail_candidate(sigma: f64, beta: f64) -> f64 {
    let sub_gaussian = sigma * (2.0 * (2.0 / beta).ln()).sqrt() - 1.0;
    let sampford = |x: f64| {
        8f64.ln()
            - x * x / 2.0
            - (2.0 * std::f64::consts::PI).sqrt().ln()
            - (3.0 * x + (x * x + 8.0).sqrt()).ln()
    };
    let (mut lo, mut hi) = (0.0f64, 100.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if sampford(mid) > beta.ln() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    sub_gaussian.min(sigma * hi).max(0.0)
}

/// The smallest integer t >= 0 for which P(|Z| > t) <= β is certain, Z discrete Gaussian with
/// variance parameter σ² (grid units²), `0 < beta < 1`, by either of two bounds, each evaluated
/// with every bracket on its safe side:
///
/// - **Shifted normal tail.** For m >= 1, P(Z >= m) <= P(N(0, σ²) >= m − 1): the normaliser
///   Σ_z exp(−z²/(2σ²)) equals √(2π)σ·Σ_k exp(−2π²σ²k²) >= √(2π)σ by Poisson summation (the
///   identity CKS 2020 use for the discrete Gaussian's normaliser), and for z >= 1,
///   exp(−z²/(2σ²)) <= ∫_{z−1}^{z} exp(−x²/(2σ²)) dx. So P(|Z| > t) = 2·P(Z >= t + 1) <=
///   2·Q(t/σ), Q the standard normal's upper tail, itself bounded by Sampford's inequality on
///   Mills' ratio (Sampford 1953) or, for t/σ <= √32, by the alternating series of the normal
///   integral stopped on its low side.
/// - **Sub-Gaussian.** The discrete Gaussian is σ-sub-Gaussian, E exp(λZ) <= exp(λ²σ²/2) (CKS
///   2020), so P(Z >= m) <= exp(−m²/(2σ²)) and P(|Z| > t) <= 2·exp(−(t+1)²/(2σ²)): the check is
///   (t + 1)²/(2σ²) >= ln(2/β). This one wins when σ is well below 1.
///
/// A bound you can prove, not the exact quantile: it is the continuous normal's two-sided
/// (1 − β) quantile of σ, rounded up (or the sub-Gaussian bound where that is smaller), and
/// was within one unit of the exact discrete quantile wherever the tests compared them. Every
/// comparison is between rationals with the irrational parts bracketed on the safe side; an f64
/// guess only says where to start looking.
///
/// Out-of-contract inputs do not panic: `beta >= 1` gives 0, `beta <= 0` or NaN gives
/// `u128::MAX`, a non-positive σ² gives 0 (no noise), and an answer beyond `u128` saturates.
pub fn discrete_gaussian_error_bound(variance: &BigRational, beta: f64) -> u128 {
    if beta.is_nan() || beta <= 0.0 {
        return u128::MAX;
    }
    if beta >= 1.0 || !variance.is_positive() {
        return 0;
    }
    let sigma = match variance.to_f64() {
        Some(v) if v.is_finite() => v.sqrt(),
        _ => return u128::MAX,
    };
    let beta_exact = exact(beta);
    let check = |t: u128| tail_at_most(variance, t, &beta_exact);
    let guess = tail_candidate(sigma, beta).ceil();
    if guess >= u128::MAX as f64 {
        return u128::MAX;
    }
    // Gallop up from the guess to a t that passes, then down to one that fails, then bisect.
    // Steps start at one unit: the guess is usually within a unit or two of the answer, and
    // each check is exact rational arithmetic on σ², costly when σ² is large.
    let mut hi = guess as u128;
    let mut step = 1;
    while !check(hi) {
        if hi == u128::MAX {
            return u128::MAX;
        }
        hi = hi.saturating_add(step);
        step = step.saturating_mul(2);
    }
    let mut step = 1;
    let mut lo = hi;
    loop {
        if lo == 0 {
            return 0;
        }
        let next = lo.saturating_sub(step);
        lo = next;
        if !check(next) {
            break;
        }
        hi = next;
        step = step.saturating_mul(2);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if check(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::sampler::discrete_gaussian_pmf;
    use num_traits::One;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use statrs::distribution::{ContinuousCDF, Normal};

    fn ratio(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    fn rho(s: &str) -> Rho {
        s.parse().unwrap()
    }

    /// Smallest t with P(|Z| > t) <= β, summing the pmf directly from the far tail inwards.
    fn brute_force_bound(s2: f64, beta: f64) -> u128 {
        let limit = (40.0 * s2.sqrt()) as i64 + 50;
        let mut tail = 0.0; // P(|Z| > z) while z runs down
        let mut smallest = limit as u128;
        for z in (0..limit).rev() {
            tail += 2.0 * discrete_gaussian_pmf(s2, z + 1);
            if tail <= beta {
                smallest = z as u128;
            } else {
                break;
            }
        }
        smallest
    }

    #[test]
    fn variance_is_sensitivity_squared_over_two_rho() {
        assert_eq!(noise_variance(&BigInt::from(2), &rho("0.25")), ratio(4, 1));
        let agg = L2Aggregate { value: 10i128, sensitivity_squared: BigInt::from(9), grid: Grid::UNIT };
        let mut rng = ChaCha20Rng::seed_from_u64(1); // INSECURE: test-only seed
        let noisy = gaussian(&agg, &rho("0.5"), &mut rng);
        assert_eq!(noisy.noise.variance, ratio(9, 1));
        assert_eq!(noisy.noise.sigma_value(), 3.0);
        assert_eq!(noisy.noise.sensitivity_value(), 3.0);
        // Replace-histogram: Δ₂² = 2, so Δ₂ prints as the f64 just above √2.
        let agg = L2Aggregate { value: (), sensitivity_squared: BigInt::from(2), grid: Grid::UNIT };
        let d = GaussianCalibration::of(&agg, &rho("1")).sensitivity_value();
        assert!(d >= std::f64::consts::SQRT_2 && d <= std::f64::consts::SQRT_2.next_up().next_up());
    }

    #[test]
    fn vector_noise_is_independent_per_cell() {
        let agg =
            L2Aggregate { value: vec![0; 2000], sensitivity_squared: BigInt::from(2), grid: Grid::UNIT };
        let mut rng = ChaCha20Rng::seed_from_u64(7); // INSECURE: test-only seed
                                                     // σ² = 2/(2·0.02) = 50.
        let noisy = gaussian_each(&agg, &rho("0.02"), &mut rng);
        let v: Vec<f64> = noisy.value.iter().map(|b| b.to_f64().unwrap()).collect();
        let var = v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64;
        let lag = v.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / (v.len() - 1) as f64;
        // Var z² = 2σ⁴ for a normal: the sample mean of 2000 has sd 50·√(2/2000) ≈ 1.6.
        assert!((var - 50.0).abs() < 8.0, "variance {var} vs 50");
        assert!((lag / var).abs() < 0.15, "cells correlated: {}", lag / var);
    }

    /// The certified bound is never below the exact discrete quantile (it is a bound) and at most
    /// one unit above it (it is a tight one: the shift by one in P(Z >= m) <= Q((m − 1)/σ)).
    #[test]
    fn error_bound_against_brute_force() {
        for (num, den) in [(1, 100), (1, 4), (1, 1), (7, 3), (10, 1), (100, 1), (12_345, 7)] {
            let s2 = num as f64 / den as f64;
            for beta in [0.5, 0.2, 0.05, 0.01, 1e-3, 1e-6, 1e-9] {
                let got = discrete_gaussian_error_bound(&ratio(num, den), beta);
                let want = brute_force_bound(s2, beta);
                assert!(got >= want, "σ² {num}/{den}, β {beta}: {got} below the exact {want}");
                assert!(got <= want + 1, "σ² {num}/{den}, β {beta}: {got} loose against {want}");
            }
        }
        // Tiny σ: P(Z ≠ 0) ≈ 4e-22 at σ² = 1/100, so 0 is the bound (the sub-Gaussian check).
        assert_eq!(discrete_gaussian_error_bound(&ratio(1, 100), 0.05), 0);
    }

    /// At σ ≈ 2^40 (the size the grid gives) the bound is σ·z₍₁₋β/₂₎ rounded up, within the f64
    /// error of that reference (z is taken as −Φ⁻¹(β/2): Φ⁻¹(1 − β/2) would lose digits).
    #[test]
    fn error_bound_at_grid_scale_is_the_normal_quantile() {
        let num = BigInt::from(3) * (BigInt::one() << 81u32) + 1;
        let variance = BigRational::new(num, BigInt::from(3));
        let sigma = (2f64.powi(81) + 1.0 / 3.0).sqrt();
        let normal = Normal::new(0.0, 1.0).unwrap();
        for beta in [0.2, 0.05, 0.01, 1e-6] {
            let z = -normal.inverse_cdf(beta / 2.0);
            let got = discrete_gaussian_error_bound(&variance, beta) as f64;
            let reference = sigma * z;
            eprintln!("β {beta}: bound {got} units, σz = {reference:.3}");
            assert!(got >= reference * (1.0 - 1e-13), "β {beta}: {got} below σz = {reference}");
            assert!(got <= reference + 2.0 + reference * 1e-13, "β {beta}: {got} above σz = {reference}");
        }
    }

    #[test]
    fn error_bound_monotone() {
        let betas = [0.9, 0.5, 0.2, 0.1, 0.05, 0.01, 1e-3, 1e-6, 1e-12];
        let variances =
            [ratio(1, 10), ratio(1, 1), ratio(9, 2), ratio(1_000, 1), ratio(1_000_000_000_000, 1)];
        for v in &variances {
            let b: Vec<u128> = betas.iter().map(|&beta| discrete_gaussian_error_bound(v, beta)).collect();
            assert!(b.windows(2).all(|w| w[0] <= w[1]), "not monotone in β at {v}: {b:?}");
        }
        for &beta in &betas {
            let b: Vec<u128> = variances.iter().map(|v| discrete_gaussian_error_bound(v, beta)).collect();
            assert!(b.windows(2).all(|w| w[0] <= w[1]), "not monotone in σ² at β {beta}: {b:?}");
        }
    }

    #[test]
    fn error_bound_edge_cases() {
        let one = ratio(1, 1);
        assert_eq!(discrete_gaussian_error_bound(&one, 1.0), 0);
        assert_eq!(discrete_gaussian_error_bound(&one, 0.0), u128::MAX);
        assert_eq!(discrete_gaussian_error_bound(&one, f64::NAN), u128::MAX);
        assert_eq!(discrete_gaussian_error_bound(&ratio(-1, 1), 0.05), 0);
        let huge = BigRational::from_integer(BigInt::one() << 2000u32);
        assert_eq!(discrete_gaussian_error_bound(&huge, 0.05), u128::MAX);
    }

    /// Sampford's inequality, as used: Q(x) <= φ(x)·4/(3x + √(x² + 8)), against statrs' normal
    /// tail over a grid of x (the check would be unsound if this failed anywhere).
    #[test]
    fn sampford_bound_holds() {
        let normal = Normal::new(0.0, 1.0).unwrap();
        for i in 0..=3000 {
            let x = i as f64 / 100.0;
            let q = normal.sf(x);
            let phi = (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
            let bound = phi * 4.0 / (3.0 * x + (x * x + 8.0).sqrt());
            assert!(q <= bound * (1.0 + 1e-12), "x {x}: Q {q:e} > bound {bound:e}");
        }
    }

    /// Coverage of the printed bound by the real mechanism: |noise| <= bound in at least a
    /// fraction 1 − β of draws (four standard errors of slack).
    #[test]
    fn error_bound_covers_the_noise() {
        let mut rng = ChaCha20Rng::seed_from_u64(11); // INSECURE: test-only seed
        for (sens2, r) in [(1, "0.5"), (2, "0.01"), (1, "0.0001")] {
            let agg =
                L2Aggregate { value: 0i128, sensitivity_squared: BigInt::from(sens2), grid: Grid::UNIT };
            let cal = GaussianCalibration::of(&agg, &rho(r));
            let beta = 0.1;
            let bound = cal.error_bound_units(beta);
            let n = 20_000;
            let inside = (0..n)
                .filter(|_| gaussian(&agg, &rho(r), &mut rng).value.magnitude().to_u128().unwrap() <= bound)
                .count() as f64
                / n as f64;
            let se = (beta * (1.0 - beta) / n as f64).sqrt();
            eprintln!("Δ₂² {sens2}, ρ {r}: bound {bound}, coverage {inside:.4}");
            assert!(inside >= 1.0 - beta - 4.0 * se, "coverage {inside} below {}", 1.0 - beta);
        }
    }
}
