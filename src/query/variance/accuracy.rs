//! The variance's accuracy bound: from intervals that hold the true count, shifted sum and sum
//! of squares at once (a union bound over the parts' noise bounds), the farthest the true
//! variance can be from the released one.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};

/// A closed interval of reals.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    pub lo: BigRational,
    pub hi: BigRational,
}

impl Interval {
    /// [centre − radius, centre + radius] in units of `spacing`, as reals.
    pub fn around(centre: &BigInt, radius: u128, spacing: &BigRational) -> Interval {
        let r = BigInt::from(radius);
        Interval {
            lo: BigRational::from_integer(centre - &r) * spacing,
            hi: BigRational::from_integer(centre + &r) * spacing,
        }
    }
    pub fn point(x: BigRational) -> Interval {
        Interval { lo: x.clone(), hi: x }
    }
}

/// Error bound of a variance release, given intervals that hold the true count C, shifted sum
/// S and sum of squares Q (as reals) simultaneously with probability >= 1 − β (union bound over
/// the parts' noise bounds). Conservative: over the box, Q/C and (S/C)² are bounded separately
/// (as if independent), S/C is cut to [−h, h], the squares' rounding adds G/2 on either side,
/// and the true variance is cut to [0, h²]. The bound is the farthest point of the resulting
/// interval from the released value, and never more than h². Everything here is computed from
/// noisy values and flags, so it is post-processing.
pub fn error_bound(
    released: &BigRational,
    count: &Interval,
    sum: &Interval,
    squares: &Interval,
    squares_grid: &BigRational,
    max_variance: &BigRational,
    half_width: &BigRational,
) -> BigRational {
    let zero = BigRational::zero();
    if !count.lo.is_positive() {
        return max_variance.clone();
    }
    let corners = [&sum.lo / &count.lo, &sum.lo / &count.hi, &sum.hi / &count.lo, &sum.hi / &count.hi];
    let mean_lo = corners.iter().min().cloned().unwrap_or_default().max(-half_width.clone());
    let mean_hi = corners.iter().max().cloned().unwrap_or_default().min(half_width.clone());
    if mean_lo > mean_hi {
        return max_variance.clone();
    }
    let (sq_lo, sq_hi) = (&mean_lo * &mean_lo, &mean_hi * &mean_hi);
    let mean2_hi = sq_lo.clone().max(sq_hi.clone());
    let mean2_lo =
        if !mean_lo.is_positive() && !mean_hi.is_negative() { zero.clone() } else { sq_lo.min(sq_hi) };
    let half_g = squares_grid / BigInt::from(2);
    let q_lo = squares.lo.clone().max(zero.clone());
    let q_hi = squares.hi.clone();
    if q_hi.is_negative() {
        return max_variance.clone();
    }
    let msq_lo = &q_lo / &count.hi - &half_g;
    let msq_hi = &q_hi / &count.lo + &half_g;
    let lo = (msq_lo - mean2_hi).max(zero);
    let hi = (msq_hi - mean2_lo).min(max_variance.clone());
    if lo > hi {
        return max_variance.clone();
    }
    let worst = (released - &lo).abs().max((released - &hi).abs());
    worst.min(max_variance.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bound_covers_the_box_and_is_capped() {
        let r = |n: i64| BigRational::from_integer(n.into());
        let h2 = r(100);
        // Count exactly 10, mean of squares in [4, 6], mean in [−1, 1]: var in [3, 6].
        let b = error_bound(
            &r(5),
            &Interval::point(r(10)),
            &Interval { lo: r(-10), hi: r(10) },
            &Interval { lo: r(40), hi: r(60) },
            &BigRational::zero(),
            &h2,
            &r(10),
        );
        assert_eq!(b, r(2));
        // A count interval reaching 0 says nothing: h².
        let b = error_bound(
            &r(5),
            &Interval { lo: r(0), hi: r(4) },
            &Interval::point(r(0)),
            &Interval::point(r(0)),
            &BigRational::zero(),
            &h2,
            &r(10),
        );
        assert_eq!(b, h2);
    }
}
