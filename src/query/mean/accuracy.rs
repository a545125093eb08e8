//! The mean's accuracy bounds: under replace the sum's bound over the public n; under
//! add-remove the farthest corner of the box that the noisy sum's and the noisy count's bounds
//! span. A release states them from its noisy parts; `dpstat plan` from an assumed row count.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed};

use crate::numeric::exact::rational_to_f64_up;
use crate::privacy::accuracy::{per_row, single, Confidence};
use crate::privacy::noise::Calibrated;

/// Mean under replace: the noisy sum's bound over the public n.
pub fn mean_replace(sum_noise: &Calibrated, n: u64, confidence: Confidence) -> f64 {
    per_row(single(sum_noise, confidence), n)
}

/// Mean under add-remove, from its noisy parts: [`mean_add_remove_bound`] with the sum's and
/// the count's bounds each at β/2, in the statistic's units, rounded up.
pub fn mean_add_remove(
    shifted: &Calibrated,
    count: &Calibrated,
    noisy_sum: &BigInt,
    noisy_count: &BigInt,
    width_units: i128,
    confidence: Confidence,
) -> f64 {
    let half_beta = confidence.beta() / 2.0;
    let units = mean_add_remove_bound(
        noisy_sum,
        noisy_count,
        shifted.error_bound_units(half_beta),
        count.error_bound_units(half_beta),
        width_units,
    );
    rational_to_f64_up(&(units * shifted.grid().spacing()))
}

/// Mean under add-remove before any noise is drawn, for an assumed `rows`: the same
/// combination as a release, with the noisy count taken to be `rows` and the noisy shifted
/// sum at its largest, rows·(U − L)/2 (every value at one bound). For a given count the bound
/// grows with |S̃|, so this is the widest bound a release with that noisy count can state.
pub fn mean_add_remove_planned(
    shifted: &Calibrated,
    count: &Calibrated,
    rows: u64,
    width_units: i128,
    confidence: Confidence,
) -> f64 {
    let rows = BigInt::from(rows);
    let largest_sum = BigInt::from(width_units / 2) * &rows;
    mean_add_remove(shifted, count, &largest_sum, &rows, width_units, confidence)
}

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
    use crate::numeric::grid::Grid;
    use crate::privacy::laplace::Aggregate;
    use crate::privacy::noise::Mechanism;

    fn calibration(sensitivity: i128, eps: &str) -> Calibrated {
        let mechanism = Mechanism::Laplace(eps.parse().unwrap());
        Calibrated::of(&Aggregate::scalar((), sensitivity, Grid::UNIT), &mechanism)
    }

    #[test]
    fn planned_mean_bound_is_the_widest_for_its_count() {
        let confidence: Confidence = "0.9".parse().unwrap();
        let (shifted, count) = (calibration(50, "0.5"), calibration(1, "0.5"));
        let (rows, width) = (400u64, 100i128);
        let planned = mean_add_remove_planned(&shifted, &count, rows, width, confidence);
        assert!(planned > 0.0 && planned < width as f64);
        let n = BigInt::from(rows);
        for s in (-20_000i64..=20_000).step_by(997) {
            let got = mean_add_remove(&shifted, &count, &BigInt::from(s), &n, width, confidence);
            assert!(got <= planned, "S̃ = {s}: {got} > planned {planned}");
        }
        let top = mean_add_remove(&shifted, &count, &BigInt::from(20_000), &n, width, confidence);
        assert_eq!(top, planned);
    }

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
