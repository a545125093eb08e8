//! Accuracy bounds that need more than one noise bound (DESIGN.md §4). The single-noise bound
//! (discrete Laplace tail) lives beside the sampler; this combines them.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed};

/// Error bound (grid units) of the add-remove mean m + S̃ / max(1, C̃) with |S̃ − S| <= a and
/// |C̃ − C| <= c (each at β/2, so both hold with probability >= 1 − β).
///
/// The true shifted mean S/C lies in the box S ∈ [S̃ − a, S̃ + a], C ∈ [C̃ − c, C̃ + c]; S/C is
/// monotone in each coordinate when C > 0, so the farthest point is a corner. If the box
/// reaches C <= 0 nothing better than the width U − L can be said. Clamping the release into
/// [L, U] (where the true mean also lies) can only shrink the error, so the bound is capped by
/// the width. Everything here is computed from noisy values, so it is post-processing.
pub fn mean_add_remove_bound(
    noisy_sum: &BigInt,
    noisy_count: &BigInt,
    sum_bound: u128,
    count_bound: u128,
    width: i128,
) -> BigRational {
    let width = BigRational::from_integer(BigInt::from(width));
    let (a, c) = (BigInt::from(sum_bound), BigInt::from(count_bound));
    let lowest_count = noisy_count - &c;
    if !lowest_count.is_positive() {
        return width;
    }
    let released = BigRational::new(noisy_sum.clone(), noisy_count.clone().max(BigInt::one()));
    let mut worst = BigRational::from_integer(BigInt::from(0));
    for s in [noisy_sum - &a, noisy_sum + &a] {
        for n in [lowest_count.clone(), noisy_count + &c] {
            let gap = (&released - BigRational::new(s.clone(), n)).abs();
            worst = worst.max(gap);
        }
    }
    worst.min(width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corner_bound_and_width_cap() {
        let r = |n: i64, d: i64| BigRational::new(n.into(), d.into());
        // S̃ = 100, C̃ = 10, a = 10, c = 2: released 10; corners 110/8 = 13.75 is the farthest.
        assert_eq!(mean_add_remove_bound(&100.into(), &10.into(), 10, 2, 1000), r(15, 4));
        // Count bound reaching zero: only the width is safe.
        assert_eq!(mean_add_remove_bound(&100.into(), &2.into(), 10, 2, 1000), r(1000, 1));
        assert_eq!(mean_add_remove_bound(&100.into(), &3.into(), 1000, 2, 50), r(50, 1));
    }
}
