//! Coins of probability 2^(−η·d), exactly: the base 2 in which dpstat's quantiles score their
//! candidates (Ilvento, "Implementing the Exponential Mechanism with Base-2 Differential
//! Privacy", CCS 2020), which is what lets them be drawn with integers alone.
//!
//! For ε and a score sensitivity Δ, η = ε/(2Δ·ln2⁺) with ln2⁺ = 0.69314718055994531 (ln 2
//! rounded up, so η·ln 2 <= ε/(2Δ)): a candidate d above the best score gets the coin
//! 2^(−η·d) = exp(−ε′·d/(2Δ)) for ε′ = 2Δ·η·ln 2 <= ε (ε′ falls short of ε by less than
//! 10^−18 of it). The mechanism that flips these coins, and its guarantee, is
//! [`super::permute_and_flip`].
//!
//! **Exactness.** No float is on the sampling path. With k = `Base2::level` = min(⌊η·d⌋, 64),
//! the coin splits into a dyadic part 2^−k, k fair bits all zero, and the rest 2^−(η·d − k)
//! (`Base2::rest_coin`): the integer part as fair bits, the fraction f as
//! Bernoulli(exp(−f·ln 2)) by Canonne, Kamath & Steinke's Algorithm 1 with each
//! Bernoulli(f·ln 2/j) drawn as Bernoulli(f/j) and Bernoulli(ln 2), the latter as Bernoulli(1/K)
//! for K geometric with P(K = k) = 2^−k (Σ 2^−k/k = ln 2). The rest is above 1/2 for a point
//! under the last level; every point [`Base2::reach`] or more from the best is at the last
//! level, where the dyadic part alone is 2^−64.

use num_bigint::{BigInt, BigUint};
use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};
use rand::RngCore;

use super::epsilon::Epsilon;
use super::sampler::{bernoulli_ratio, uniform_below};

/// ln 2 rounded up at the 17th decimal: ln 2 = 0.693147180559945309417…
const LN2_UP_NUMER: u64 = 69_314_718_055_994_531;
const LN2_UP_DENOM: u64 = 100_000_000_000_000_000;
/// The halvings of a coin drawn as fair bits, its dyadic part; past them the rest of the coin
/// makes up the difference.
pub(super) const LEVELS: u32 = 64;

/// The base-2 coins for one ε and one score sensitivity.
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

    /// η as a float: tests compare draws with probabilities computed from it.
    #[cfg(test)]
    pub(crate) fn eta(&self) -> f64 {
        self.eta.to_f64().unwrap_or(0.0)
    }

    /// ⌊η·d⌋, capped at [`LEVELS`]: a point's coin 2^(−η·d) is 2^−level times the rest.
    pub(super) fn level(&self, d: u128) -> u32 {
        // Most runs lie past the last level: one comparison instead of a search.
        if self.thresholds.last().is_some_and(|&t| t <= d) {
            return LEVELS;
        }
        self.thresholds.partition_point(|&t| t <= d) as u32
    }

    /// The least distance from the best score at which a point's coin is at the last level,
    /// its dyadic part 2^−64 (`u128::MAX` when η is too small for that).
    pub fn reach(&self) -> u128 {
        self.thresholds.last().copied().unwrap_or(u128::MAX)
    }

    /// The rest of the coin of a point `d` from the best score, after its dyadic part
    /// 2^−level: Bernoulli(2^−(η·d − level)), exactly. Above 1/2 for a point under
    /// the last level (the rest is below one halving).
    pub(super) fn rest_coin(&self, d: u128, rng: &mut dyn RngCore) -> bool {
        let rest = &self.eta * BigRational::from_integer(BigInt::from(d))
            - BigRational::from_integer(BigInt::from(self.level(d)));
        bernoulli_pow2(rng, &rest)
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
}
