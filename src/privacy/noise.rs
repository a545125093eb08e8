//! Which noise a release draws, and its privacy parameter: discrete Laplace at ε (pure ε-DP,
//! the default) or, with `--noise gaussian`, discrete Gaussian at ρ (ρ-zCDP), stated as the
//! (ε, δ) it converts to at the release's δ (docs/DESIGN.md §9).
//!
//! A statistic builds its exact aggregates ([`Aggregate`]: value, L1 sensitivity Δ₁, squared L2
//! sensitivity Δ₂², grid) and hands them to [`draw`] or [`draw_each`] with the [`Mechanism`] of
//! its part; it never picks a scale itself. The Laplace mechanism reads Δ₁
//! ([`super::laplace`]), the Gaussian one Δ₂² ([`super::gaussian`]); both draw exactly on the
//! integers of the aggregate's grid, and the grid is chosen from the flags by
//! [`Mechanism::grid`] so that the noise is 2^40 to 2^41 grid units wide either way.

use num_bigint::BigInt;
use num_rational::BigRational;
use rand::RngCore;

use super::accountant::Cost;
use super::contribution::Factor;
use super::currency::Spend;
use super::delta::Delta;
use super::epsilon::Epsilon;
use super::gaussian::{self, GaussianCalibration, L2Aggregate};
use super::laplace::{self, Aggregate, Calibration};
use super::zcdp::Rho;
use crate::numeric::grid::Grid;

/// The mechanism of a release (or of one of its parts) with its privacy parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Mechanism {
    /// Discrete Laplace noise of scale Δ₁/ε: ε-DP.
    Laplace(Epsilon),
    /// Discrete Gaussian noise of variance Δ₂²/(2ρ): ρ-zCDP, stated as (ε(ρ, δ), δ)-DP at `delta`.
    Gaussian { rho: Rho, delta: Delta },
}

/// The name each mechanism prints as (`mechanism` in JSON).
pub const LAPLACE: &str = "discrete-laplace";
pub const GAUSSIAN: &str = "discrete-gaussian";

impl Mechanism {
    /// The mechanism one statistic runs at on rows bounded per person: ε divided by
    /// [`Factor::pure`], ρ by [`Factor::rho`] (group privacy, `privacy::contribution`).
    pub fn divided(&self, factor: Factor) -> Mechanism {
        match self {
            Mechanism::Laplace(_) => self.split(factor.pure),
            Mechanism::Gaussian { .. } => self.split(factor.rho),
        }
    }

    /// The same mechanism with its parameter divided into `parts` exactly equal shares: they
    /// compose back to the whole (ε and ρ both add up under sequential composition).
    pub fn split(&self, parts: u32) -> Mechanism {
        match self {
            Mechanism::Laplace(eps) => Mechanism::Laplace(eps.split(parts)),
            Mechanism::Gaussian { rho, delta } => {
                Mechanism::Gaussian { rho: rho.split(parts), delta: delta.clone() }
            }
        }
    }

    /// The same mechanism with its parameter multiplied by an exact fraction in (0, 1] (a
    /// workload query's share); an error if the result leaves the parameter's range.
    pub fn scaled(&self, fraction: &BigRational) -> Result<Mechanism, String> {
        Ok(match self {
            Mechanism::Laplace(eps) => {
                Mechanism::Laplace(Epsilon::from_rational(eps.as_rational() * fraction)?)
            }
            Mechanism::Gaussian { rho, delta } => Mechanism::Gaussian {
                rho: Rho::from_rational(rho.as_rational() * fraction)?,
                delta: delta.clone(),
            },
        })
    }

    /// The grid of a scalar part whose real-valued sensitivity is Δ (its L1 and L2 sensitivity
    /// are the same): Δ/ε or Δ/√(2ρ) at 2^40 to 2^41 units (docs/DESIGN.md §2.2, §9.2).
    pub fn grid(&self, sensitivity: &BigRational) -> Grid {
        self.grid_l2(sensitivity, &(sensitivity * sensitivity))
    }

    /// The grid of a part with real-valued L1 sensitivity Δ₁ and squared L2 sensitivity Δ₂²:
    /// each mechanism reads its own.
    pub fn grid_l2(&self, l1: &BigRational, l2_squared: &BigRational) -> Grid {
        match self {
            Mechanism::Laplace(eps) => Grid::for_noise(l1, eps.as_rational()),
            Mechanism::Gaussian { rho, .. } => Grid::for_gaussian(l2_squared, rho.as_rational()),
        }
    }

    /// What the mechanism spends, in its own currency.
    pub fn spend(&self) -> Spend {
        match self {
            Mechanism::Laplace(eps) => Spend::Pure(eps.clone()),
            Mechanism::Gaussian { rho, .. } => Spend::Zcdp(rho.clone()),
        }
    }

    /// One part of the accounting tree: what one draw of this mechanism spent.
    pub fn cost(&self, name: impl Into<String>) -> Cost {
        Cost::spent(name, self.spend())
    }

    /// ε of a Laplace mechanism; None for the Gaussian one.
    pub fn epsilon(&self) -> Option<&Epsilon> {
        match self {
            Mechanism::Laplace(eps) => Some(eps),
            Mechanism::Gaussian { .. } => None,
        }
    }

    /// The δ a Gaussian release states its (ε, δ) at; None for Laplace (δ = 0).
    pub fn delta(&self) -> Option<&Delta> {
        match self {
            Mechanism::Laplace(_) => None,
            Mechanism::Gaussian { delta, .. } => Some(delta),
        }
    }

    /// `discrete-laplace` or `discrete-gaussian`.
    pub fn name(&self) -> &'static str {
        match self {
            Mechanism::Laplace(_) => LAPLACE,
            Mechanism::Gaussian { .. } => GAUSSIAN,
        }
    }
}

/// The noise of one draw, fixed before any data is read: a release draws from it, a plan reads
/// its accuracy off it.
#[derive(Clone, Debug, PartialEq)]
pub enum Calibrated {
    Laplace(Calibration),
    Gaussian { noise: GaussianCalibration, delta: Delta },
}

impl Calibrated {
    /// The calibration of `mechanism`'s noise for an aggregate's sensitivities and grid. Only
    /// those are read, never the aggregate's value.
    pub fn of<T>(aggregate: &Aggregate<T>, mechanism: &Mechanism) -> Calibrated {
        match mechanism {
            Mechanism::Laplace(eps) => Calibrated::Laplace(Calibration::of(aggregate, eps)),
            Mechanism::Gaussian { rho, delta } => {
                let l2 = L2Aggregate {
                    value: (),
                    sensitivity_squared: BigInt::from(aggregate.l2_squared),
                    grid: aggregate.grid,
                };
                Calibrated::Gaussian { noise: GaussianCalibration::of(&l2, rho), delta: delta.clone() }
            }
        }
    }

    /// Smallest t (grid units) certified to have P(|noise| > t) <= β (docs/DESIGN.md §4, §9.3).
    pub fn error_bound_units(&self, beta: f64) -> u128 {
        match self {
            Calibrated::Laplace(n) => n.error_bound_units(beta),
            Calibrated::Gaussian { noise, .. } => noise.error_bound_units(beta),
        }
    }

    /// The same bound in the statistic's units, rounded up.
    pub fn error_bound(&self, beta: f64) -> f64 {
        match self {
            Calibrated::Laplace(n) => n.error_bound(beta),
            Calibrated::Gaussian { noise, .. } => noise.error_bound(beta),
        }
    }

    pub fn grid(&self) -> Grid {
        match self {
            Calibrated::Laplace(n) => n.grid,
            Calibrated::Gaussian { noise, .. } => noise.grid,
        }
    }

    /// The mechanism and parameter this noise was calibrated with.
    pub fn mechanism(&self) -> Mechanism {
        match self {
            Calibrated::Laplace(n) => Mechanism::Laplace(n.eps.clone()),
            Calibrated::Gaussian { noise, delta } => {
                Mechanism::Gaussian { rho: noise.rho.clone(), delta: delta.clone() }
            }
        }
    }

    /// The sensitivity the mechanism reads, in the statistic's units, rounded up: Δ₁ for
    /// Laplace, Δ₂ for Gaussian.
    pub fn sensitivity_value(&self) -> f64 {
        match self {
            Calibrated::Laplace(n) => n.sensitivity_value(),
            Calibrated::Gaussian { noise, .. } => noise.sensitivity_value(),
        }
    }

    /// How wide the noise is, in the statistic's units, rounded up: the Laplace scale Δ₁/ε, or
    /// the Gaussian σ = Δ₂/√(2ρ).
    pub fn width_value(&self) -> f64 {
        match self {
            Calibrated::Laplace(n) => n.scale_value(),
            Calibrated::Gaussian { noise, .. } => noise.sigma_value(),
        }
    }

    /// The Laplace calibration, for what only Laplace has (AboveThreshold, private bounds).
    pub fn laplace(&self) -> Option<&Calibration> {
        match self {
            Calibrated::Laplace(n) => Some(n),
            Calibrated::Gaussian { .. } => None,
        }
    }
}

/// A noisy value in grid units with the calibration of its noise.
#[derive(Clone, Debug)]
pub struct Drawn<T> {
    pub value: T,
    pub noise: Calibrated,
}

/// Releases a scalar aggregate with `mechanism`'s noise.
pub fn draw(aggregate: &Aggregate<i128>, mechanism: &Mechanism, rng: &mut dyn RngCore) -> Drawn<BigInt> {
    match mechanism {
        Mechanism::Laplace(eps) => {
            let noisy = laplace::laplace(aggregate, eps, rng);
            Drawn { value: noisy.value, noise: Calibrated::Laplace(noisy.noise) }
        }
        Mechanism::Gaussian { rho, delta } => {
            let noisy = gaussian::gaussian(&l2(aggregate, aggregate.value), rho, rng);
            Drawn {
                value: noisy.value,
                noise: Calibrated::Gaussian { noise: noisy.noise, delta: delta.clone() },
            }
        }
    }
}

/// Releases every coordinate of a vector aggregate with independent noise of `mechanism`,
/// calibrated to the vector's L1 (Laplace) or L2 (Gaussian) sensitivity.
pub fn draw_each(
    aggregate: &Aggregate<Vec<i128>>,
    mechanism: &Mechanism,
    rng: &mut dyn RngCore,
) -> Drawn<Vec<BigInt>> {
    match mechanism {
        Mechanism::Laplace(eps) => {
            let noisy = laplace::laplace_each(aggregate, eps, rng);
            Drawn { value: noisy.value, noise: Calibrated::Laplace(noisy.noise) }
        }
        Mechanism::Gaussian { rho, delta } => {
            let noisy = gaussian::gaussian_each(&l2(aggregate, aggregate.value.clone()), rho, rng);
            Drawn {
                value: noisy.value,
                noise: Calibrated::Gaussian { noise: noisy.noise, delta: delta.clone() },
            }
        }
    }
}

fn l2<T, V>(aggregate: &Aggregate<T>, value: V) -> L2Aggregate<V> {
    L2Aggregate { value, sensitivity_squared: BigInt::from(aggregate.l2_squared), grid: aggregate.grid }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn gaussian(rho: &str, delta: &str) -> Mechanism {
        Mechanism::Gaussian { rho: rho.parse().unwrap(), delta: delta.parse().unwrap() }
    }

    #[test]
    fn each_mechanism_reads_its_own_sensitivity() {
        // A replace histogram: Δ₁ = 2, Δ₂² = 2.
        let agg = Aggregate { value: (), sensitivity: 2, l2_squared: 2, grid: Grid::UNIT };
        let Calibrated::Laplace(l) = Calibrated::of(&agg, &Mechanism::Laplace("1".parse().unwrap())) else {
            panic!("laplace")
        };
        assert_eq!(l.scale, BigRational::from_integer(2.into()));
        let Calibrated::Gaussian { noise, .. } = Calibrated::of(&agg, &gaussian("0.5", "1e-6")) else {
            panic!("gaussian")
        };
        assert_eq!(noise.variance, BigRational::from_integer(2.into())); // 2/(2·0.5)
    }

    #[test]
    fn splits_compose_back_and_grids_follow_the_mechanism() {
        let g = gaussian("0.03", "1e-6");
        let Mechanism::Gaussian { rho, .. } = g.split(3) else { panic!() };
        assert_eq!(rho.as_rational() * BigInt::from(3), *"0.03".parse::<Rho>().unwrap().as_rational());
        let d = BigRational::from_integer(1000.into());
        // σ = 1000/√(2·0.03) ≈ 4082: 2^11.99, so g = 2^(11 − 40).
        assert_eq!(g.grid(&d).exponent(), -29);
        // Δ/ε = 1000: 2^9.97, so g = 2^(9 − 40).
        assert_eq!(Mechanism::Laplace("1".parse().unwrap()).grid(&d).exponent(), -31);
    }

    #[test]
    fn draws_are_centred_on_the_aggregate() {
        let mut rng = ChaCha20Rng::seed_from_u64(3); // INSECURE: test-only seed
        let agg = Aggregate { value: 1000i128, sensitivity: 1, l2_squared: 1, grid: Grid::UNIT };
        let m = gaussian("0.5", "1e-6"); // σ = 1
        let total: BigInt = (0..2000).map(|_| draw(&agg, &m, &mut rng).value).sum();
        let mean = total / BigInt::from(2000);
        assert!(mean >= BigInt::from(999) && mean <= BigInt::from(1001), "{mean}");
    }
}
