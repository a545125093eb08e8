//! Accuracy of two-column releases: from intervals that hold the true count, shifted sums,
//! squares and products at once (a union bound over the parts' noise bounds), the interval the
//! true covariance (and the variance of x, for regress) must lie in. Everything here is computed
//! from noisy values and flags, so it is post-processing. Conservative: means, mean products and
//! products of means are bounded separately over the box, as if independent.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};

use crate::query::variance::accuracy::Interval;

/// Intervals for every part of a two-column release (reals), and the rescaled grids whose
/// rounding moves a mean of products or squares by up to half a unit.
#[derive(Clone, Debug)]
pub struct Box4 {
    pub count: Interval,
    pub x: Interval,
    pub y: Interval,
    pub squares: Option<Interval>,
    pub products: Interval,
    pub squares_grid: Option<BigRational>,
    pub products_grid: BigRational,
}

/// The smallest and largest of some values.
fn hull(values: &[BigRational]) -> Interval {
    let lo = values.iter().min().cloned().unwrap_or_default();
    let hi = values.iter().max().cloned().unwrap_or_default();
    Interval { lo, hi }
}

/// S/C over the box (C > 0), cut to [−cap, cap].
fn ratio(sum: &Interval, count: &Interval, cap: &BigRational) -> Interval {
    let corners = hull(&[&sum.lo / &count.lo, &sum.lo / &count.hi, &sum.hi / &count.lo, &sum.hi / &count.hi]);
    Interval { lo: corners.lo.max(-cap.clone()), hi: corners.hi.min(cap.clone()) }
}

/// The product of two intervals.
fn times(a: &Interval, b: &Interval) -> Interval {
    hull(&[&a.lo * &b.lo, &a.lo * &b.hi, &a.hi * &b.lo, &a.hi * &b.hi])
}

/// The interval of the true covariance, or None when the count interval reaches 0 (then
/// nothing is known beyond the box).
/// `hx`, `hy` are the half-widths of the two boxes' sides.
pub fn covariance_interval(b: &Box4, hx: &BigRational, hy: &BigRational) -> Option<Interval> {
    if !b.count.lo.is_positive() {
        return None;
    }
    let cap = hx * hy;
    let mx = ratio(&b.x, &b.count, hx);
    let my = ratio(&b.y, &b.count, hy);
    let half_g = &b.products_grid / BigInt::from(2);
    let mut mean_products = ratio(&b.products, &b.count, &cap);
    mean_products.lo -= &half_g;
    mean_products.hi += &half_g;
    let means = times(&mx, &my);
    let lo = (mean_products.lo - means.hi).max(-cap.clone());
    let hi = (mean_products.hi - means.lo).min(cap);
    (lo <= hi).then_some(Interval { lo, hi })
}

/// The interval of the true variance of x (half-width `h`), or None when the count interval
/// reaches 0 or there are no squares.
pub fn variance_interval(b: &Box4, h: &BigRational) -> Option<Interval> {
    let (squares, grid) = (b.squares.as_ref()?, b.squares_grid.as_ref()?);
    if !b.count.lo.is_positive() {
        return None;
    }
    let cap = h * h;
    let mx = ratio(&b.x, &b.count, h);
    let mean2 = times(&mx, &mx);
    // A square of an interval containing 0 is at least 0.
    let mean2_lo = if !mx.lo.is_positive() && !mx.hi.is_negative() { BigRational::zero() } else { mean2.lo };
    let half_g = grid / BigInt::from(2);
    let mut mean_squares = ratio(squares, &b.count, &cap);
    mean_squares.lo = (mean_squares.lo - &half_g).max(BigRational::zero());
    mean_squares.hi += &half_g;
    let lo = (mean_squares.lo - mean2.hi).max(BigRational::zero());
    let hi = (mean_squares.hi - mean2_lo).min(cap);
    (lo <= hi).then_some(Interval { lo, hi })
}

/// The farthest point of `interval` from `released`.
pub fn distance(released: &BigRational, interval: &Interval) -> BigRational {
    (released - &interval.lo).abs().max((released - &interval.hi).abs())
}

/// The interval of a ratio c/v over c in `cov` and v in `var` with v > 0, or None when `var`
/// reaches 0 (the slope is then unbounded).
pub fn slope_interval(cov: &Interval, var: &Interval) -> Option<Interval> {
    if !var.lo.is_positive() {
        return None;
    }
    Some(hull(&[&cov.lo / &var.lo, &cov.lo / &var.hi, &cov.hi / &var.lo, &cov.hi / &var.hi]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: i64) -> BigRational {
        BigRational::from_integer(n.into())
    }

    fn iv(lo: i64, hi: i64) -> Interval {
        Interval { lo: r(lo), hi: r(hi) }
    }

    #[test]
    fn ratios_products_and_slopes_cover_their_corners() {
        assert_eq!(ratio(&iv(-10, 20), &iv(5, 10), &r(100)), iv(-2, 4));
        assert_eq!(ratio(&iv(-10, 20), &iv(5, 10), &r(3)), iv(-2, 3));
        assert_eq!(times(&iv(-2, 3), &iv(-5, 1)), iv(-15, 10));
        assert_eq!(slope_interval(&iv(-2, 4), &iv(1, 2)), Some(iv(-2, 4)));
        assert_eq!(slope_interval(&iv(-2, 4), &iv(0, 2)), None);
        assert_eq!(distance(&r(1), &iv(-2, 3)), r(3));
    }
}
