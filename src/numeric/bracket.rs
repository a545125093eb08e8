//! Irrational reals pinned between rationals: ln, exp and √ of exact rationals, each as an
//! interval whose rational ends are certain to hold the true value, and the correctly rounded
//! floor or ceiling where a caller needs one number on a known side of it (docs/DESIGN.md §9.6).
//!
//! A privacy figure that is irrational (ε converted from ρ, a threshold, a noise level) is
//! only sound if it is rounded the safe way, and f64 cannot promise that: its functions are
//! not correctly rounded, and a result one ulp on the unsafe side is a wrong guarantee. Here
//! every step works on integers in fixed point with an explicit rounding direction, so the
//! interval is a proof, not an estimate.
//!
//! Widths are absolute (a few units of 2^-bits) for ln and √, relative for e^(−x).

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, Zero};

use super::exact::{floor_log2, pow2};

/// A closed interval [lo, hi] with rational ends that holds a real number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bracket {
    pub lo: BigRational,
    pub hi: BigRational,
}

impl Bracket {
    /// The one-point bracket of a rational.
    pub fn exact(x: BigRational) -> Bracket {
        Bracket { lo: x.clone(), hi: x }
    }
}

/// `e^{-x}` is below 2^-1024 for x ≥ [`EXP_CUTOFF`]; beyond it no caller needs more.
const EXP_CUTOFF: i64 = 1024;

/// Guard bits added to a request before rounding, and the refinement steps of
/// [`ceil_of`]: each try quadruples the guard bits.
const GUARD_BITS: u32 = 16;
const REFINEMENTS: u32 = 6;

/// floor(x · 2^w).
fn scaled_floor(x: &BigRational, w: u32) -> BigInt {
    (x.numer() << w as usize).div_floor(x.denom())
}

/// ceil(x · 2^w).
fn scaled_ceil(x: &BigRational, w: u32) -> BigInt {
    -((-(x.numer() << w as usize)).div_floor(x.denom()))
}

fn div_ceil(a: &BigInt, b: &BigInt) -> BigInt {
    -((-a).div_floor(b))
}

fn unscaled(v: BigInt, w: u32) -> BigRational {
    BigRational::new(v, BigInt::one() << w as usize)
}

/// Bound on ln(m) · 2^w for the fixed-point m = `m_scaled` / 2^w in [1, 2], from below
/// (`upper` false) or above: ln m = 2·atanh(y) = 2·Σ y^(2j+1)/(2j+1) with y = (m−1)/(m+1) ≤ 1/3.
/// Every step rounds towards the requested side, so the result is a bound, never an estimate.
fn ln_mantissa(m_scaled: &BigInt, w: u32, upper: bool) -> BigInt {
    let one = BigInt::one() << w as usize;
    let (num, den) = ((m_scaled - &one) * &one, m_scaled + &one);
    let y = if upper { div_ceil(&num, &den) } else { num.div_floor(&den) };
    if !y.is_positive() {
        // m ≤ 1 at this precision: ln m ≤ 0 (an upper bound) and, as m ≥ 1, ln m ≥ 0.
        return BigInt::zero();
    }
    let square = |p: &BigInt, q: &BigInt| {
        let prod = p * q;
        if upper {
            div_ceil(&prod, &one)
        } else {
            prod.div_floor(&one)
        }
    };
    let y2 = square(&y, &y);
    let mut power = y; // y^(2j+1) · 2^w
    let mut sum = BigInt::zero();
    let mut j = 0u32;
    loop {
        let odd = BigInt::from(2 * j + 1);
        if upper {
            sum += div_ceil(&power, &odd);
            let next = square(&power, &y2);
            if next <= BigInt::one() {
                // What is left, Σ_{i>j} y^(2i+1)/(2i+1), is at most next/(2j+3)·1/(1−y²)
                // ≤ 1·(9/8)/3 < 1 unit, since y ≤ 1/3 (next ≤ 1 is an upper bound already).
                sum += 1;
                break;
            }
            power = next;
        } else {
            sum += power.div_floor(&odd);
            power = square(&power, &y2);
            if power.is_zero() {
                break;
            }
        }
        j += 1;
    }
    sum * 2
}

/// Bounds on ln 2 · 2^w, (lower, upper), computed once per w: every ln needs them, and a table
/// of a few hundred logarithms (the zCDP orders) would otherwise redo the same two series each
/// time. The same integers as computing them afresh.
fn ln2_scaled(w: u32) -> (BigInt, BigInt) {
    static CACHE: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<u32, (BigInt, BigInt)>>> =
        std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&w).cloned()) {
        return hit;
    }
    let two = BigInt::from(2) << w as usize;
    let bounds = (ln_mantissa(&two, w, false), ln_mantissa(&two, w, true));
    if let Ok(mut c) = cache.lock() {
        c.insert(w, bounds.clone());
    }
    bounds
}

/// Bounds on ln(x) · 2^w, x > 0, as (lower, upper) integers.
fn ln_scaled(x: &BigRational, w: u32) -> (BigInt, BigInt) {
    let k = floor_log2(x);
    let m = x / pow2(k); // in [1, 2)
    let (ln2_lo, ln2_hi) = ln2_scaled(w);
    let lm_lo = ln_mantissa(&scaled_floor(&m, w), w, false);
    let lm_hi = ln_mantissa(&scaled_ceil(&m, w), w, true);
    let k = BigInt::from(k);
    if k.is_negative() {
        (&k * ln2_hi + lm_lo, &k * ln2_lo + lm_hi)
    } else {
        (&k * ln2_lo + lm_lo, &k * ln2_hi + lm_hi)
    }
}

/// A bracket of ln(x), at most a few units of 2^-bits wide; None unless x > 0.
pub fn ln(x: &BigRational, bits: u32) -> Option<Bracket> {
    if !x.is_positive() {
        return None;
    }
    if x.is_one() {
        return Some(Bracket::exact(BigRational::zero()));
    }
    // |k|·ln 2 multiplies the error of ln 2 by |k|: pay for it in guard bits.
    let k_bits = floor_log2(x).unsigned_abs().max(1).ilog2() + 1;
    let w = bits + GUARD_BITS + k_bits;
    let (lo, hi) = ln_scaled(x, w);
    Some(Bracket { lo: unscaled(lo, w), hi: unscaled(hi, w) })
}

/// A bracket of e^(−x) for x ≥ 0 whose ends differ by a few parts in 2^bits of e^(−x) (a
/// relative width, unlike the other brackets here); None if x < 0.
///
/// e^y for y = x/2^s ≤ 1/2 by its Taylor series (lower: the partial sum; upper: the partial sum
/// plus a bound on the rest), squared s times, inverted. For x ≥ 1024 the bracket is
/// [0, 2^-1024], which is all any caller here needs of so small a number.
pub fn exp_neg(x: &BigRational, bits: u32) -> Option<Bracket> {
    if x.is_negative() {
        return None;
    }
    if x.is_zero() {
        return Some(Bracket::exact(BigRational::one()));
    }
    if *x >= BigRational::from_integer(BigInt::from(EXP_CUTOFF)) {
        return Some(Bracket { lo: BigRational::zero(), hi: pow2(-EXP_CUTOFF) });
    }
    // x < 2^(floor_log2 + 1), so x / 2^(floor_log2 + 2) < 1/2.
    let s = (floor_log2(x) + 2).max(0) as u32;
    // Each squaring doubles the relative error; e^x < 2^1478 adds integer bits, not error.
    let w = bits + GUARD_BITS + 2 * s + 8;
    let y = x / pow2(s as i64);
    let one = BigInt::one() << w as usize;
    let series = |upper: bool| {
        let y = if upper { scaled_ceil(&y, w) } else { scaled_floor(&y, w) };
        let mut term = one.clone();
        let mut sum = one.clone();
        let mut j = 1u32;
        loop {
            let num = &term * &y;
            let den = &one * j;
            term = if upper { div_ceil(&num, &den) } else { num.div_floor(&den) };
            sum += &term;
            if upper && term <= BigInt::one() {
                // The rest, Σ_{i>j} y^i/i!, is below term·(y/(j+1))/(1 − y/(j+2)) < term ≤ 1.
                sum += 1;
                break;
            }
            if !upper && term.is_zero() {
                break;
            }
            j += 1;
        }
        for _ in 0..s {
            let sq = &sum * &sum;
            sum = if upper { div_ceil(&sq, &one) } else { sq.div_floor(&one) };
        }
        sum
    };
    // e^x ∈ [lo, hi] / 2^w, so e^(−x) ∈ [2^w/hi, 2^w/lo], rounded outwards to a few more
    // significant bits than asked for (a relative precision: e^(−x) may be far below 2^-bits).
    let (e_lo, e_hi) = (series(false), series(true));
    let sig = bits + GUARD_BITS;
    let lo = round_down_bits(&BigRational::new(one.clone(), e_hi), sig).unwrap_or_default();
    let hi = round_up_bits(&BigRational::new(one, e_lo), sig);
    Some(Bracket { lo, hi })
}

/// ⌊√x · 2^bits⌋ / 2^bits exactly: the largest multiple of 2^-bits whose square is ≤ x.
/// A negative x is treated as 0.
pub fn sqrt_floor(x: &BigRational, bits: u32) -> BigRational {
    if !x.is_positive() {
        return BigRational::zero();
    }
    // ⌊√y⌋ = ⌊√⌊y⌋⌋ for y ≥ 0, and y = x·4^bits.
    unscaled(scaled_floor(x, 2 * bits).sqrt(), bits)
}

/// ⌈√x · 2^bits⌉ / 2^bits exactly: the smallest multiple of 2^-bits whose square is ≥ x.
/// A negative x is treated as 0.
pub fn sqrt_ceil(x: &BigRational, bits: u32) -> BigRational {
    if !x.is_positive() {
        return BigRational::zero();
    }
    // n² ≥ y ⟺ n² ≥ ⌈y⌉ for an integer n.
    let c = scaled_ceil(x, 2 * bits);
    let s = c.sqrt();
    let s = if &s * &s < c { s + 1 } else { s };
    unscaled(s, bits)
}

/// The least integer ≥ a real known only through brackets: `bracket(g)` must hold the real at
/// every g, and narrow as g (guard bits, 16, 64, 256, …) grows. The brackets are refined until
/// their ends round up to the same integer. That always happens for an irrational real; if it
/// has not after the last refinement (the real is an integer, or extraordinarily close to one),
/// the upper end's ceiling is returned, which is still ≥ the real: the safe side for an upper
/// bound.
pub fn ceil_of(bracket: impl Fn(u32) -> Bracket) -> BigInt {
    let mut guard = GUARD_BITS;
    let mut last = BigInt::zero();
    for _ in 0..REFINEMENTS {
        let b = bracket(guard);
        let (lo, hi) = (b.lo.ceil().to_integer(), b.hi.ceil().to_integer());
        if lo == hi {
            return hi;
        }
        last = hi;
        guard *= 4;
    }
    last
}

/// ⌈ln(x) · 2^bits⌉ / 2^bits, the smallest multiple of 2^-bits that is ≥ ln x, for x > 0
/// (None otherwise). Monotone in x; exact whenever [`ceil_of`] decides, else one step above.
pub fn ln_ceil(x: &BigRational, bits: u32) -> Option<BigRational> {
    ln(x, 0)?;
    let scale = pow2(bits as i64);
    let n = ceil_of(|guard| {
        let b = ln(x, bits + guard).unwrap_or_else(|| Bracket::exact(BigRational::zero()));
        Bracket { lo: b.lo * &scale, hi: b.hi * &scale }
    });
    Some(BigRational::from_integer(n) / scale)
}

/// ⌊ln(x) · 2^bits⌋ / 2^bits, for x > 0 (None otherwise): −⌈ln(1/x) · 2^bits⌉ / 2^bits.
pub fn ln_floor(x: &BigRational, bits: u32) -> Option<BigRational> {
    if !x.is_positive() {
        return None;
    }
    ln_ceil(&x.recip(), bits).map(|r| -r)
}

/// The spacing of the numbers with `sig` significant bits around x > 0: 2^(⌊log2 x⌋ − sig + 1).
fn quantum(x: &BigRational, sig: u32) -> BigRational {
    pow2(floor_log2(x) - sig as i64 + 1)
}

/// The smallest number ≥ x of the form m·2^e with m < 2^sig (and 0 for x ≤ 0): x rounded up to
/// `sig` significant bits. Monotone in x, and ≥ x; keeps a bound short enough to print and store.
pub fn round_up_bits(x: &BigRational, sig: u32) -> BigRational {
    if !x.is_positive() {
        return BigRational::zero();
    }
    let q = quantum(x, sig);
    (x / &q).ceil() * q
}

/// The largest number ≤ x of the form m·2^e with m < 2^sig, for x ≥ 0 (None for x < 0): x
/// rounded down to `sig` significant bits. Monotone in x, and ≤ x.
pub fn round_down_bits(x: &BigRational, sig: u32) -> Option<BigRational> {
    if x.is_negative() {
        return None;
    }
    if x.is_zero() {
        return Some(BigRational::zero());
    }
    let q = quantum(x, sig);
    Some((x / &q).floor() * q)
}

/// The next number above x > 0 with `sig` significant bits, for x already of that form.
pub fn next_up_bits(x: &BigRational, sig: u32) -> BigRational {
    x + quantum(x, sig)
}

/// The next number below x > 0 with `sig` significant bits, for x already of that form (0 below
/// the smallest positive one is not reached: the caller stops at positive values).
pub fn next_down_bits(x: &BigRational, sig: u32) -> BigRational {
    // Just below a power of two the spacing halves.
    let below = x - quantum(x, sig);
    let finer = x - quantum(x, sig) / BigInt::from(2);
    if floor_log2(&finer) < floor_log2(x) {
        finer
    } else {
        below
    }
}

/// π bracketed by its first 35 decimals and that truncation plus 10^-35.
pub fn pi() -> Bracket {
    let ten35 = BigInt::from(10).pow(35);
    let digits: BigInt =
        "314159265358979323846264338327950288".parse().unwrap_or_else(|_| BigInt::from(3) * &ten35);
    let lo = BigRational::new(digits.clone(), ten35.clone());
    let hi = BigRational::new(digits + 1, ten35);
    Bracket { lo, hi }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_traits::ToPrimitive;
    use proptest::prelude::*;

    fn ratio(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    fn f(r: &BigRational) -> f64 {
        r.to_f64().unwrap()
    }

    #[test]
    fn ln_brackets_known_values() {
        let two = ln(&ratio(2, 1), 100).unwrap();
        let ln2 = std::f64::consts::LN_2;
        assert!(f(&two.lo) <= ln2 + 1e-16 && f(&two.hi) >= ln2 - 1e-16);
        assert!(&two.hi - &two.lo < pow2(-95), "ln 2 bracket too wide");
        assert_eq!(ln(&ratio(1, 1), 50), Some(Bracket::exact(BigRational::zero())));
        assert_eq!(ln(&ratio(0, 1), 50), None);
        assert_eq!(ln(&ratio(-1, 2), 50), None);
        for (n, d) in [(1, 3), (10, 1), (1_000_000, 7), (1, 1_000_000_000), (3, 2)] {
            let x = ratio(n, d);
            let b = ln(&x, 80).unwrap();
            let want = (n as f64 / d as f64).ln();
            assert!(b.lo <= b.hi);
            assert!(
                (f(&b.lo) - want).abs() < 1e-14 * want.abs().max(1.0),
                "ln {n}/{d}: {} vs {want}",
                f(&b.lo)
            );
            assert!(&b.hi - &b.lo < pow2(-75), "ln {n}/{d} too wide");
        }
        // Far from 1, the k·ln 2 term dominates.
        let tiny = BigRational::new(BigInt::one(), BigInt::from(10).pow(300));
        let b = ln(&tiny, 64).unwrap();
        assert!((f(&b.lo) + 300.0 * std::f64::consts::LN_10).abs() < 1e-12);
        assert!(&b.hi - &b.lo < pow2(-60));
    }

    #[test]
    fn exp_neg_brackets_known_values() {
        assert_eq!(exp_neg(&BigRational::zero(), 40), Some(Bracket::exact(BigRational::one())));
        assert_eq!(exp_neg(&ratio(-1, 1), 40), None);
        for (n, d) in [(1, 1), (1, 3), (5, 2), (100, 1), (1, 1_000_000), (700, 1)] {
            let x = ratio(n, d);
            let b = exp_neg(&x, 80).unwrap();
            let want = (-(n as f64) / d as f64).exp();
            assert!(b.lo <= b.hi);
            assert!((f(&b.lo) - want).abs() <= 1e-15 * want, "exp(-{n}/{d}): {} vs {want}", f(&b.lo));
            assert!((&b.hi - &b.lo) / &b.lo < pow2(-75));
        }
        let far = exp_neg(&ratio(5000, 1), 80).unwrap();
        assert!(far.lo.is_zero() && far.hi == pow2(-1024));
    }

    #[test]
    fn sqrt_is_exactly_rounded() {
        assert_eq!(sqrt_floor(&ratio(4, 1), 10), ratio(2, 1));
        assert_eq!(sqrt_ceil(&ratio(4, 1), 10), ratio(2, 1));
        assert_eq!(sqrt_floor(&ratio(2, 1), 0), ratio(1, 1));
        assert_eq!(sqrt_ceil(&ratio(2, 1), 0), ratio(2, 1));
        assert_eq!(sqrt_ceil(&ratio(-3, 1), 8), BigRational::zero());
        assert_eq!(sqrt_floor(&BigRational::zero(), 8), BigRational::zero());
    }

    #[test]
    fn significant_bits_rounding() {
        let x = ratio(1, 3);
        let up = round_up_bits(&x, 8);
        let down = round_down_bits(&x, 8).unwrap();
        assert!(down < x && x < up);
        assert_eq!(next_up_bits(&down, 8), up);
        assert_eq!(next_down_bits(&up, 8), down);
        assert_eq!(round_up_bits(&ratio(-1, 1), 8), BigRational::zero());
        assert_eq!(round_down_bits(&ratio(-1, 1), 8), None);
        // Exactly representable values stay.
        assert_eq!(round_up_bits(&ratio(3, 4), 8), ratio(3, 4));
        assert_eq!(round_down_bits(&ratio(3, 4), 8), Some(ratio(3, 4)));
        // Below a power of two the spacing halves.
        assert_eq!(next_down_bits(&ratio(1, 1), 4), ratio(15, 16));
        assert_eq!(next_up_bits(&ratio(15, 16), 4), ratio(1, 1));
        // Rounding up can carry into the next binade, which is still a 4-bit number.
        assert_eq!(round_up_bits(&ratio(31, 16), 4), ratio(2, 1));
    }

    #[test]
    fn pi_bracket_holds_pi() {
        let p = pi();
        assert!(f(&p.lo) <= std::f64::consts::PI && f(&p.hi) >= std::f64::consts::PI);
        assert!(p.lo < p.hi);
    }

    fn positive_rational() -> impl Strategy<Value = BigRational> {
        (1u64..u64::MAX, 1u64..u64::MAX, -200i64..200)
            .prop_map(|(n, d, e)| BigRational::new(BigInt::from(n), BigInt::from(d)) * pow2(e))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The square roots are exact floors and ceilings: checked by squaring, exactly.
        #[test]
        fn sqrt_floor_and_ceil_bracket_exactly(x in positive_rational(), bits in 0u32..200) {
            let step = pow2(-(bits as i64));
            let lo = sqrt_floor(&x, bits);
            let hi = sqrt_ceil(&x, bits);
            prop_assert!(&lo * &lo <= x);
            prop_assert!(&hi * &hi >= x);
            let above = &lo + &step;
            prop_assert!(&above * &above > x);
            let below = &hi - &step;
            prop_assert!(below.is_negative() || &below * &below < x);
        }

        /// ln and exp are computed by unrelated series; each bracket must be consistent with the
        /// other: e^(−ln_lo) ≥ 1/x... i.e. e^(ln_lo) ≤ x ≤ e^(ln_hi), decided with exp brackets.
        #[test]
        fn ln_agrees_with_exp(x in positive_rational()) {
            let b = ln(&x, 90).unwrap();
            prop_assert!(b.lo <= b.hi);
            prop_assert!(&b.hi - &b.lo < pow2(-80));
            // e^(lo) ≤ x: with t = −lo, e^(−t) ≤ x. Only negative arguments are bracketed here,
            // so compare through whichever sign applies.
            let le = |a: &BigRational, x: &BigRational| -> bool {
                // true if e^a ≤ x is certain
                if a.is_negative() || a.is_zero() {
                    exp_neg(&-a, 120).unwrap().hi <= *x
                } else {
                    // e^a ≤ x ⟺ e^(−a) ≥ 1/x
                    exp_neg(a, 120).unwrap().lo >= x.recip()
                }
            };
            let ge = |a: &BigRational, x: &BigRational| -> bool {
                if a.is_negative() || a.is_zero() {
                    exp_neg(&-a, 120).unwrap().lo >= *x
                } else {
                    exp_neg(a, 120).unwrap().hi <= x.recip()
                }
            };
            if (f(&b.lo)).abs() < 1000.0 {
                prop_assert!(le(&b.lo, &x), "e^lo > x for x = {}", x);
                prop_assert!(ge(&b.hi, &x), "e^hi < x for x = {}", x);
            }
            let want = f(&x).ln();
            prop_assert!((f(&b.lo) - want).abs() <= 1e-13 * want.abs().max(1.0));
        }

        /// The correctly rounded ln: its ceiling is ≥ the bracket's top end and one step below it
        /// is < the bracket's bottom end; the floor mirrors it; both are monotone.
        #[test]
        fn ln_ceil_and_floor_are_the_roundings(x in positive_rational(), y in positive_rational(), bits in 1u32..100) {
            let step = pow2(-(bits as i64));
            let fine = ln(&x, bits + 60).unwrap();
            let c = ln_ceil(&x, bits).unwrap();
            prop_assert!(c >= fine.hi);
            prop_assert!(&c - &step < fine.lo);
            let fl = ln_floor(&x, bits).unwrap();
            prop_assert!(fl <= fine.lo);
            prop_assert!(&fl + &step > fine.hi);
            let (a, b) = if x <= y { (&x, &y) } else { (&y, &x) };
            prop_assert!(ln_ceil(a, bits).unwrap() <= ln_ceil(b, bits).unwrap());
            prop_assert!(ln_floor(a, bits).unwrap() <= ln_floor(b, bits).unwrap());
        }

        /// exp brackets are ordered, narrow and monotone in x (larger x, smaller e^(−x)).
        #[test]
        fn exp_neg_is_monotone(a in 0u64..2_000_000, b in 0u64..2_000_000, d in 1u64..1000) {
            let (a, b) = (a.min(b), a.max(b));
            let xa = BigRational::new(a.into(), d.into());
            let xb = BigRational::new(b.into(), d.into());
            let ea = exp_neg(&xa, 80).unwrap();
            let eb = exp_neg(&xb, 80).unwrap();
            prop_assert!(ea.lo <= ea.hi);
            prop_assert!(ea.lo.is_zero() || (&ea.hi - &ea.lo) / &ea.lo < pow2(-75));
            prop_assert!(eb.lo <= ea.hi);
            let want = (-(a as f64) / d as f64).exp();
            // f64's own argument is off by up to an ulp of x, so its relative error grows with x.
            let x = a as f64 / d as f64;
            if x < 700.0 {
                prop_assert!((f(&ea.lo) - want).abs() <= (1e-15 + 4e-16 * x) * want);
            }
        }

        /// Rounding to significant bits: on the right side, monotone, and one step from x.
        #[test]
        fn significant_bit_rounding_is_tight(x in positive_rational(), y in positive_rational(), sig in 2u32..80) {
            let up = round_up_bits(&x, sig);
            let down = round_down_bits(&x, sig).unwrap();
            prop_assert!(down <= x && x <= up);
            prop_assert!(up == down || next_up_bits(&down, sig) == up);
            prop_assert!(next_down_bits(&up, sig) < x || up == x);
            let (a, b) = if x <= y { (&x, &y) } else { (&y, &x) };
            prop_assert!(round_up_bits(a, sig) <= round_up_bits(b, sig));
            prop_assert!(round_down_bits(a, sig) <= round_down_bits(b, sig));
        }
    }
}
