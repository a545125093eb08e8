//! Clamping bounds, the power-of-two grid that makes real-valued sums exact, and the
//! public bins and categories of histograms. Everything here comes from flags, never
//! from the data (DESIGN.md §1): a bound read off the column would leak it.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive};

/// Grid units are at most this in absolute value, so any row fits in i64 and an i128
/// accumulator cannot overflow below 2^64 rows (DESIGN.md §2.3).
pub const MAX_GRID_UNITS: i128 = 1 << 62;
/// Noise resolution: the grid is about 2^-40 of the noise scale (DESIGN.md §2.2).
const GRID_BITS_BELOW_SCALE: i64 = 40;

/// Largest bound magnitude of a sum or mean: 2^64 rows of it, plus noise, stay below f64::MAX.
pub const MAX_PRINTABLE_BOUND: f64 = 1e288;

/// A finite bound value given by flag (`--lower`, `--upper`, `impute=V`).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Finite(f64);

impl Finite {
    pub fn from_f64(x: f64) -> Option<Finite> {
        x.is_finite().then_some(Finite(x))
    }
    pub fn get(self) -> f64 {
        self.0
    }
}

impl FromStr for Finite {
    type Err = String;
    fn from_str(s: &str) -> Result<Finite, String> {
        match s.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Finite(v)),
            _ => Err(format!("'{s}' is not a finite number")),
        }
    }
}

/// Clamping bounds with L < U, both finite: made once, so nothing later can hold NaN or L >= U.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    lower: f64,
    upper: f64,
}

impl Bounds {
    pub fn new(lower: Finite, upper: Finite) -> Result<Bounds, String> {
        if lower.0 < upper.0 {
            Ok(Bounds { lower: lower.0, upper: upper.0 })
        } else {
            Err(format!("--lower ({}) must be less than --upper ({})", lower.0, upper.0))
        }
    }
    pub fn lower(&self) -> f64 {
        self.lower
    }
    pub fn upper(&self) -> f64 {
        self.upper
    }
    /// Refuses bounds so large that a sum of up to 2^64 clamped rows plus its noise could exceed
    /// the largest f64, so that every release prints as a finite number.
    pub fn check_printable(&self) -> Result<(), String> {
        if self.lower.abs() > MAX_PRINTABLE_BOUND || self.upper.abs() > MAX_PRINTABLE_BOUND {
            return Err(format!(
                "--lower/--upper must lie within ±{MAX_PRINTABLE_BOUND:e}, so that every release fits in a double"
            ));
        }
        Ok(())
    }

    /// max(|L|, |U|), exactly.
    pub fn max_abs(&self) -> BigRational {
        exact(self.lower).abs().max(exact(self.upper).abs())
    }
    /// U − L, exactly (an f64 subtraction could round or overflow).
    pub fn width(&self) -> BigRational {
        exact(self.upper) - exact(self.lower)
    }
}

/// The exact rational value of a finite f64.
pub fn exact(x: f64) -> BigRational {
    BigRational::from_float(x).unwrap_or_else(|| BigRational::from_integer(BigInt::from(0)))
}

/// A grid of spacing g = 2^exp. Real values are rounded to multiples of g and summed as integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
        let bits = x.to_bits();
        let negative = bits >> 63 == 1;
        let exp_field = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1u64 << 52) - 1);
        let (mantissa, exp2) =
            if exp_field == 0 { (fraction, -1074) } else { (fraction | (1u64 << 52), exp_field - 1075) };
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridBounds {
    pub grid: Grid,
    pub lower: i128,
    pub upper: i128,
}

impl GridBounds {
    /// L snapped down and U up to multiples of g. With `even_span`, L moves one more unit
    /// down if needed so the midpoint is itself on the grid (mean under add-remove shifts by it).
    /// Refused when a bound exceeds 2^62 units: checked here, before any data is read.
    pub fn snap(bounds: &Bounds, grid: Grid, even_span: bool) -> Result<GridBounds, String> {
        let g = grid.spacing();
        let mut lower = (exact(bounds.lower) / &g).floor().to_integer();
        let upper = (exact(bounds.upper) / &g).ceil().to_integer();
        if even_span && (&upper - &lower).is_odd() {
            lower -= 1;
        }
        let limit = BigInt::from(MAX_GRID_UNITS);
        if lower.abs() > limit || upper.abs() > limit {
            return Err(format!(
                "bounds [{}, {}] are too wide for this epsilon's grid (2^{}): \
                 a bound would exceed 2^62 grid units; narrow --lower/--upper or lower --eps",
                bounds.lower, bounds.upper, grid.exp
            ));
        }
        let (Some(lower), Some(upper)) = (lower.to_i128(), upper.to_i128()) else {
            unreachable!("bounds checked against 2^62 above")
        };
        Ok(GridBounds { grid, lower, upper })
    }

    /// The clamped value of x in grid units: round to the grid, then clamp (the two commute
    /// because the bounds are grid multiples).
    #[inline]
    pub fn units(&self, x: f64) -> i128 {
        self.grid.round_to_units(x).clamp(self.lower, self.upper)
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

fn pow2(exp: i64) -> BigRational {
    let two = BigInt::from(2u32);
    if exp >= 0 {
        BigRational::from_integer(two.pow(exp as u32))
    } else {
        BigRational::new(BigInt::one(), two.pow((-exp) as u32))
    }
}

/// floor(log2(r)) for r > 0, exactly.
pub fn floor_log2(r: &BigRational) -> i64 {
    let (n, d) = (r.numer().abs(), r.denom().abs());
    let estimate = n.bits() as i64 - d.bits() as i64;
    // n/d lies in [2^(estimate−1), 2^(estimate+1)); one comparison settles which side.
    let at_least =
        if estimate >= 0 { n >= (d << estimate as usize) } else { (n << (-estimate) as usize) >= d };
    if at_least {
        estimate
    } else {
        estimate - 1
    }
}

/// K equal-width public bins over [L, U]; values outside land in the edge bins.
#[derive(Clone, Debug, PartialEq)]
pub struct Bins {
    /// K + 1 edges, from L to U. Bin i is [edges[i], edges[i+1]) (the last one closed).
    edges: Vec<f64>,
}

/// The largest number of numeric bins or categories a histogram may have.
pub const MAX_BINS: usize = 1_000_000;

impl Bins {
    pub fn new(bounds: Bounds, count: usize) -> Bins {
        let (l, u) = (bounds.lower, bounds.upper);
        let k = count as f64;
        // A weighted mean of the ends puts integer edges on integers (0..100 in 100 bins gives
        // 28, not 28.000000000000004); halved first so it cannot overflow near ±f64::MAX.
        let edge = |i: usize| ((l / 2.0) * (k - i as f64) + (u / 2.0) * i as f64) / k * 2.0;
        let mut edges: Vec<f64> = (0..=count).map(edge).collect();
        edges[0] = l;
        edges[count] = u;
        Bins { edges }
    }

    pub fn len(&self) -> usize {
        self.edges.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bin of a finite value: the one whose printed edges hold it. Any deterministic map of a
    /// row to one bin keeps the L1 sensitivity at 1 / 2; this one also agrees with the labels.
    #[inline]
    pub fn index(&self, x: f64) -> usize {
        let interior = &self.edges[1..self.edges.len() - 1];
        interior.partition_point(|&e| e <= x)
    }

    /// Lower and upper edge of bin i.
    pub fn edges(&self, i: usize) -> (f64, f64) {
        (self.edges[i], self.edges[i + 1])
    }

    pub fn label(&self, i: usize) -> String {
        let (lo, hi) = self.edges(i);
        let show = |x: f64| crate::output::format_number(crate::release::Number::Real(x));
        format!("{}..{}", show(lo), show(hi))
    }
}

/// A public category list for a categorical histogram, plus the implicit bin `other`.
#[derive(Clone, Debug, PartialEq)]
pub struct Categories {
    names: Vec<String>,
    index: HashMap<Vec<u8>, usize>,
}

/// Name of the bin that collects values not in the public list.
pub const OTHER: &str = "other";

impl Categories {
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Index of a (trimmed) cell: its category, or `names.len()` for `other`. A short list is
    /// searched in order (faster than hashing the cell); both give the same answer.
    #[inline]
    pub fn index(&self, cell: &[u8]) -> usize {
        if self.names.len() <= 16 {
            return self.names.iter().position(|n| n.as_bytes() == cell).unwrap_or(self.names.len());
        }
        self.index.get(cell).copied().unwrap_or(self.names.len())
    }
}

impl FromStr for Categories {
    type Err = String;
    fn from_str(s: &str) -> Result<Categories, String> {
        Categories::parse_list(s, "category", "bin", "north,south,east")
    }
}

impl Categories {
    /// A comma-separated public list; `noun`, `role` (of `other`) and `example` word the messages.
    fn parse_list(s: &str, noun: &str, role: &str, example: &str) -> Result<Categories, String> {
        let names: Vec<String> = s.split(',').map(|c| c.trim().to_string()).collect();
        let mut index = HashMap::new();
        for (i, name) in names.iter().enumerate() {
            if name.is_empty() {
                return Err(format!("a {noun} is empty; list them like {example}"));
            }
            if name == OTHER {
                return Err(format!(
                    "'{OTHER}' names the {role} for values not listed; it cannot be a {noun}"
                ));
            }
            if index.insert(name.as_bytes().to_vec(), i).is_some() {
                return Err(format!("{noun} '{name}' is listed twice"));
            }
        }
        if names.len() >= MAX_BINS {
            return Err(format!("at most {} {noun} values", MAX_BINS - 1));
        }
        Ok(Categories { names, index })
    }
}

/// The public group keys of `--by COL --keys k1,k2,...`: rows whose (trimmed) key is not
/// listed form one more group, `other`. Keys come from the flag, never from the data: keys
/// read off the column would reveal which values occur.
#[derive(Clone, Debug, PartialEq)]
pub struct Keys(Categories);

impl Keys {
    /// The listed keys, without `other`.
    pub fn names(&self) -> &[String] {
        self.0.names()
    }

    /// Number of groups: the keys and `other`.
    pub fn groups(&self) -> usize {
        self.0.names().len() + 1
    }

    /// Name of group i (`other` for the last).
    pub fn label(&self, i: usize) -> &str {
        self.0.names().get(i).map_or(OTHER, String::as_str)
    }

    /// The group of a (trimmed) cell.
    #[inline]
    pub fn index(&self, cell: &[u8]) -> usize {
        self.0.index(cell)
    }
}

impl FromStr for Keys {
    type Err = String;
    fn from_str(s: &str) -> Result<Keys, String> {
        Categories::parse_list(s, "key", "group", "urban,rural").map(Keys)
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
    use proptest::prelude::*;

    fn bounds(l: f64, u: f64) -> Bounds {
        Bounds::new(Finite(l), Finite(u)).unwrap()
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
    fn floor_log2_exact() {
        let r = |n: i64, d: i64| BigRational::new(n.into(), d.into());
        assert_eq!(floor_log2(&r(1, 1)), 0);
        assert_eq!(floor_log2(&r(2, 1)), 1);
        assert_eq!(floor_log2(&r(3, 1)), 1);
        assert_eq!(floor_log2(&r(4, 1)), 2);
        assert_eq!(floor_log2(&r(1, 2)), -1);
        assert_eq!(floor_log2(&r(1, 3)), -2);
        assert_eq!(floor_log2(&r(7, 8)), -1);
    }

    #[test]
    fn snapping_widens_and_refuses_huge_ranges() {
        let gb = GridBounds::snap(&bounds(0.3, 0.7), Grid { exp: -2 }, false).unwrap();
        assert_eq!((gb.lower, gb.upper), (1, 3)); // 0.25, 0.75
        let even = GridBounds::snap(&bounds(0.3, 1.0), Grid { exp: -2 }, true).unwrap();
        assert_eq!((even.upper - even.lower) % 2, 0);
        assert!(GridBounds::snap(&bounds(-1e308, 1e308), Grid { exp: 0 }, false).is_err());
    }

    #[test]
    fn bins_cover_edges() {
        let b = Bins::new(bounds(0.0, 10.0), 5);
        assert_eq!(b.index(-3.0), 0);
        assert_eq!(b.index(0.0), 0);
        assert_eq!(b.index(1.99), 0);
        assert_eq!(b.index(2.0), 1);
        assert_eq!(b.index(9.99), 4);
        assert_eq!(b.index(10.0), 4);
        assert_eq!(b.index(1e308), 4);
        assert_eq!(b.label(1), "2..4");
        let wide = Bins::new(bounds(-f64::MAX, f64::MAX), 2);
        assert_eq!(wide.index(-1e307), 0);
        assert_eq!(wide.index(1e307), 1);
        let hundred = Bins::new(bounds(0.0, 100.0), 100);
        for k in 0..100 {
            assert_eq!(hundred.index(k as f64), k, "value {k}");
            assert_eq!(hundred.label(k), format!("{k}..{}", k + 1));
        }
        let tenths = Bins::new(bounds(-1.0, 1.0), 10);
        assert_eq!(tenths.index(-0.8), 1);
        assert_eq!(tenths.label(1), "-0.8..-0.6");
    }

    #[test]
    fn categories_are_validated() {
        assert!("a,b".parse::<Categories>().is_ok());
        assert!("a,,b".parse::<Categories>().is_err());
        assert!("a,a".parse::<Categories>().is_err());
        assert!("a,other".parse::<Categories>().is_err());
        assert_eq!("x,,y".parse::<Keys>().unwrap_err(), "a key is empty; list them like urban,rural");
        let k: Keys = "u, r".parse().unwrap();
        assert_eq!((k.groups(), k.index(b"r"), k.index(b"z"), k.label(2)), (3, 1, 2, "other"));
        let c: Categories = "north, south".parse().unwrap();
        assert_eq!(c.index(b"south"), 1);
        assert_eq!(c.index(b"west"), 2);
        // Short lists are searched in order, long ones hashed: the same bins.
        let many: Vec<String> = (0..40).map(|i| format!("c{i}")).collect();
        let long: Categories = many.join(",").parse().unwrap();
        let short: Categories = many[..16].join(",").parse().unwrap();
        for cell in ["c0", "c15", "c16", "c39", "c40", "", "c"] {
            let want = many.iter().position(|m| m == cell);
            assert_eq!(long.index(cell.as_bytes()), want.unwrap_or(40), "{cell}");
            assert_eq!(short.index(cell.as_bytes()), want.filter(|&i| i < 16).unwrap_or(16), "{cell}");
        }
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
