//! The power-of-two grid that makes real-valued sums exact: values are rounded to multiples of
//! g = 2^k, with k chosen from the flags' Δ and ε only (docs/DESIGN.md §2.2), and summed as integers.

use serde::{Deserialize, Serialize};
use std::fmt;

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive};

use super::bounds::Bounds;
use super::exact::{exact, floor_log2, pow2};
use crate::error::Error;

/// Grid units are at most this in absolute value, so any row fits in i64 and an i128
/// accumulator cannot overflow below 2^64 rows (docs/DESIGN.md §2.3).
pub const MAX_GRID_UNITS: i128 = 1 << 62;
/// Noise resolution: the grid is about 2^-40 of the noise scale (docs/DESIGN.md §2.2).
const GRID_BITS_BELOW_SCALE: i64 = 40;

/// A grid of spacing g = 2^exp. Real values are rounded to multiples of g and summed as integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grid {
    exp: i32,
}

impl Grid {
    /// Counts live on the integers.
    pub const UNIT: Grid = Grid { exp: 0 };

    /// g = 2^k with k = floor(log2(Δ/ε)) − 40. Depends only on flags (Δ from the bounds, ε).
    pub fn for_noise(sensitivity: &BigRational, eps: &BigRational) -> Grid {
        let exp = floor_log2(&(sensitivity / eps)) - GRID_BITS_BELOW_SCALE;
        Grid { exp: exp.clamp(i32::MIN as i64 / 2, i32::MAX as i64 / 2) as i32 }
    }

    /// The Gaussian analogue of [`Grid::for_noise`]: g = 2^k with k = ⌊log2 σ⌋ − 40 for the noise
    /// σ = Δ₂/√(2ρ), so σ lies in [2^40, 2^41) grid units before the bounds are snapped. Takes
    /// Δ₂² (real, from the flags) and ρ. Exact without a square root: with L = ⌊log2 σ²⌋,
    /// σ ∈ [2^(L/2), 2^((L+1)/2)), so ⌊log2 σ⌋ = ⌊L/2⌋ (docs/DESIGN.md §9.2).
    pub fn for_gaussian(sensitivity_squared: &BigRational, rho: &BigRational) -> Grid {
        let variance = sensitivity_squared / (rho * BigInt::from(2));
        let exp = floor_log2(&variance).div_euclid(2) - GRID_BITS_BELOW_SCALE;
        Grid { exp: exp.clamp(i32::MIN as i64 / 2, i32::MAX as i64 / 2) as i32 }
    }

    pub fn exponent(&self) -> i32 {
        self.exp
    }

    /// g as an exact rational.
    pub fn spacing(&self) -> BigRational {
        pow2(self.exp as i64)
    }

    /// units · g as the nearest f64 (post-processing for display).
    pub fn to_f64(&self, units: &BigInt) -> f64 {
        (BigRational::from_integer(units.clone()) * self.spacing()).to_f64().unwrap_or(f64::NAN)
    }

    /// x / g rounded to the nearest integer, ties towards +∞; saturates far outside i128.
    /// Exact: works on the bits of x, never on a rounded quotient.
    pub fn round_to_units(&self, x: f64) -> i128 {
        let (negative, mantissa, exp2) = decompose(x);
        if mantissa == 0 {
            return 0;
        }
        // |x| / g = mantissa · 2^shift
        let shift = exp2 - self.exp as i64;
        let magnitude: i128 = if shift >= 0 {
            if shift > 126 - 53 {
                return if negative { i128::MIN } else { i128::MAX };
            }
            (mantissa as i128) << shift
        } else {
            let down = -shift;
            if down > 54 {
                // |x| / g < 2^53 / 2^55 < 1/2: nearest is 0 for either sign.
                return 0;
            }
            let down = down as u32;
            let quotient = (mantissa >> down) as i128;
            let remainder = mantissa & ((1u64 << down) - 1);
            let half = 1u64 << (down - 1);
            // Ties go towards +∞: up for positive values, towards zero for negative ones.
            let round_away = if negative { remainder > half } else { remainder >= half };
            quotient + round_away as i128
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }
}

/// Bounds snapped outwards onto a grid, as integers of grid units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridBounds {
    pub grid: Grid,
    pub lower: i128,
    pub upper: i128,
}

/// x as its sign, integer mantissa and power of two: |x| = mantissa · 2^exp2, exactly.
#[inline]
fn decompose(x: f64) -> (bool, u64, i64) {
    let bits = x.to_bits();
    let exp_field = ((bits >> 52) & 0x7ff) as i64;
    let fraction = bits & ((1u64 << 52) - 1);
    let (mantissa, exp2) =
        if exp_field == 0 { (fraction, -1074) } else { (fraction | (1u64 << 52), exp_field - 1075) };
    (bits >> 63 == 1, mantissa, exp2)
}

impl GridBounds {
    /// L snapped down and U up to multiples of g. With `even_span`, L moves one more unit
    /// down if needed so the midpoint is itself on the grid (mean under add-remove shifts by it).
    /// Refused when a bound exceeds 2^62 units: checked here, before any data is read.
    pub fn snap(bounds: &Bounds, grid: Grid, even_span: bool) -> Result<GridBounds, Error> {
        let g = grid.spacing();
        let mut lower = (exact(bounds.lower()) / &g).floor().to_integer();
        let upper = (exact(bounds.upper()) / &g).ceil().to_integer();
        if even_span && (&upper - &lower).is_odd() {
            lower -= 1;
        }
        let limit = BigInt::from(MAX_GRID_UNITS);
        if lower.abs() > limit || upper.abs() > limit {
            return Err(Error::usage(format!(
                "bounds [{}, {}] are too wide for this epsilon's grid (2^{}): \
                 a bound would exceed 2^62 grid units; narrow --lower/--upper or lower --eps",
                bounds.lower(),
                bounds.upper(),
                grid.exp
            )));
        }
        let (Some(lower), Some(upper)) = (lower.to_i128(), upper.to_i128()) else {
            unreachable!("bounds checked against 2^62 above")
        };
        Ok(GridBounds { grid, lower, upper })
    }

    /// The clamped value of x in grid units: round to the grid, then clamp (the two commute
    /// because the bounds are grid multiples).
    ///
    /// Computed in 64 bits, as [`Grid::round_to_units`] but saturating at 2^63 instead of 2^127:
    /// the bounds are at most 2^62 units, so every value the saturation changes lies beyond
    /// them and clamps to the same bound (shown against the 128-bit form by a test).
    #[inline]
    pub fn units(&self, x: f64) -> i128 {
        let (negative, mantissa, exp2) = decompose(x);
        let shift = exp2 - self.grid.exp as i64;
        let value: i64 = if shift >= 0 {
            // mantissa << shift reaches 2^63 exactly when shift reaches its leading zeros.
            let magnitude = if mantissa == 0 {
                0
            } else if shift >= i64::from(mantissa.leading_zeros()) {
                i64::MAX
            } else {
                (mantissa << shift) as i64
            };
            if negative {
                -magnitude
            } else {
                magnitude
            }
        } else {
            // x / g = ±mantissa / 2^down, and ⌊x / g + 1/2⌋ (nearest, ties towards +∞ for
            // either sign) is the signed mantissa plus half of 2^down, shifted down
            // arithmetically; beyond 54 places that is 0, as it is at 63 (|mantissa| < 2^53).
            let down = (-shift).min(63) as u32;
            let signed = if negative { -(mantissa as i64) } else { mantissa as i64 };
            (signed + (1 << (down - 1))) >> down
        };
        i128::from(value.clamp(self.lower as i64, self.upper as i64))
    }

    /// max(|L|, |U|) in grid units: what one added or removed row can change a sum by.
    pub fn max_abs_units(&self) -> i128 {
        self.lower.abs().max(self.upper.abs())
    }

    /// U − L in grid units: what replacing one row can change a sum by.
    pub fn width_units(&self) -> i128 {
        self.upper - self.lower
    }

    pub fn lower_f64(&self) -> f64 {
        self.grid.to_f64(&BigInt::from(self.lower))
    }

    pub fn upper_f64(&self) -> f64 {
        self.grid.to_f64(&BigInt::from(self.upper))
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "2^{}", self.exp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::bounds::Finite;
    use num_traits::One;
    use proptest::prelude::*;

    fn bounds(l: f64, u: f64) -> Bounds {
        Bounds::new(Finite::from_f64(l).unwrap(), Finite::from_f64(u).unwrap()).unwrap()
    }

    #[test]
    fn rounding_to_units_is_nearest_ties_up() {
        let g = Grid { exp: -1 }; // g = 0.5
        assert_eq!(g.round_to_units(1.0), 2);
        assert_eq!(g.round_to_units(0.25), 1); // tie 0.5 -> up
        assert_eq!(g.round_to_units(-0.25), 0); // tie -0.5 -> up (towards +inf)
        assert_eq!(g.round_to_units(0.3), 1);
        assert_eq!(g.round_to_units(-0.3), -1);
        assert_eq!(g.round_to_units(0.2), 0);
        assert_eq!(g.round_to_units(-0.0), 0);
        assert_eq!(g.round_to_units(5e-324), 0);
        assert_eq!(Grid { exp: -1074 }.round_to_units(5e-324), 1);
        assert_eq!(Grid { exp: 0 }.round_to_units(1e308), i128::MAX);
        assert_eq!(Grid { exp: 0 }.round_to_units(-1e308), i128::MIN);
        assert_eq!(Grid { exp: 0 }.round_to_units(9007199254740993.0), 9007199254740992);
    }

    proptest! {
        /// The 64-bit clamped rounding equals the 128-bit rounding then the clamp, for any f64
        /// (subnormals, huge values, ±0, ties and their neighbours) and any bounds within ±2^62
        /// units, the widest included.
        #[test]
        fn units_equal_rounding_then_clamping(
            bits in any::<u64>(),
            near in -3000.0f64..3000.0,
            exp in -1100i32..1100,
            a in -(1i128 << 62)..=(1i128 << 62),
            b in -(1i128 << 62)..=(1i128 << 62),
            small in -5000i128..5000,
        ) {
            let grid = Grid { exp };
            let wide = 1i128 << 62;
            let pairs = [
                (a.min(b), a.max(b)),
                (small.min(a), small.max(a)),
                (-small.abs(), small.abs()),
                (-wide, wide),
                (0, 1 << 53),
                (small.min(0), wide),
                (-(1 << 53) - 1, small.max(0)),
            ];
            for (lower, upper) in pairs {
                let bounds = GridBounds { grid, lower, upper };
                let halfway = (near.round() + 0.5) * 2f64.powi(exp.clamp(-1000, 1000));
                let big = f64::from_bits(bits) * 2f64.powi(exp.clamp(-1000, 1000));
                for x in [
                    f64::from_bits(bits),
                    big,
                    near,
                    near * 2f64.powi(exp.clamp(-1000, 1000)),
                    halfway,
                    -halfway,
                    halfway.next_up(),
                    halfway.next_down(),
                    -halfway.next_up(),
                    -halfway.next_down(),
                    0.0,
                    -0.0,
                ] {
                    if x.is_finite() {
                        prop_assert_eq!(bounds.units(x), grid.round_to_units(x).clamp(lower, upper), "{} on 2^{}", x, exp);
                    }
                }
            }
        }
    }

    #[test]
    fn grid_depends_on_delta_over_eps() {
        let one = BigRational::one();
        assert_eq!(Grid::for_noise(&one, &one).exponent(), -40);
        let tenth = BigRational::new(1.into(), 10.into());
        // 200000 / 0.1 = 2e6, floor(log2) = 20
        let g = Grid::for_noise(&exact(200000.0), &tenth);
        assert_eq!(g.exponent(), 20 - 40);
    }

    #[test]
    fn gaussian_grid_puts_sigma_in_2_40_to_2_41_units() {
        let r = |n: i64, d: i64| BigRational::new(n.into(), d.into());
        // Δ₂ = 1, ρ = 1/2: σ = 1, k = −40.
        assert_eq!(Grid::for_gaussian(&r(1, 1), &r(1, 2)).exponent(), -40);
        // σ² = Δ₂²/(2ρ) over many magnitudes and odd/even log2: σ/g ∈ [2^40, 2^41), checked by
        // squaring (σ/g)² = σ²/g² ∈ [2^80, 2^82).
        for (d2, rho) in [
            (r(1, 1), r(1, 10)),
            (r(200_000 * 200_000, 1), r(1, 1000)),
            (r(3, 7), r(5, 1)),
            (r(2, 1), r(1, 8)),
        ] {
            let g = Grid::for_gaussian(&d2, &rho);
            let var_units = &d2 / (&rho * BigInt::from(2)) / (g.spacing() * g.spacing());
            assert!(var_units >= exact(2f64.powi(80)) && var_units < exact(2f64.powi(82)), "{d2} {rho}: {g}");
        }
    }

    #[test]
    fn snapping_widens_and_refuses_huge_ranges() {
        let gb = GridBounds::snap(&bounds(0.3, 0.7), Grid { exp: -2 }, false).unwrap();
        assert_eq!((gb.lower, gb.upper), (1, 3)); // 0.25, 0.75
        let even = GridBounds::snap(&bounds(0.3, 1.0), Grid { exp: -2 }, true).unwrap();
        assert_eq!((even.upper - even.lower) % 2, 0);
        assert!(GridBounds::snap(&bounds(-1e308, 1e308), Grid { exp: 0 }, false).is_err());
    }

    proptest! {
        /// Rounding is monotone and never moves a value by more than half a grid step.
        #[test]
        fn rounding_is_within_half_a_step(x in -1e6f64..1e6, exp in -30i32..10) {
            let g = Grid { exp };
            let u = g.round_to_units(x);
            let back = exact(x) / g.spacing();
            let err = (BigRational::from_integer(u.into()) - back).abs();
            prop_assert!(err <= BigRational::new(1.into(), 2.into()));
            prop_assert!(g.round_to_units(x.next_up()) >= u);
        }
    }
}
