//! Zero-concentrated differential privacy (zCDP) arithmetic: ρ as an exact rational, its
//! composition, the cost of a pure ε-DP release in ρ, and the conversion between ρ and (ε, δ)
//! in both directions, each rounded the safe way (docs/DESIGN.md §9.4): what `--noise
//! gaussian` releases, the accountant and the ledger compose and convert with.
//!
//! - **Definition** (Bun & Steinke 2016, Def. 1.1): M is ρ-zCDP if for all neighbouring x, x'
//!   and all Rényi orders α > 1, D_α(M(x) ‖ M(x')) <= ρα.
//! - **Composition** (ibid., Lemma 2.3): adaptive composition of ρ₁- and ρ₂-zCDP mechanisms is
//!   (ρ₁ + ρ₂)-zCDP; ρ adds exactly, like ε under pure DP. Over disjoint groups of rows under
//!   add-remove, the largest ρ is the cost, as for ε (each neighbour changes one group).
//! - **Pure DP in ρ** (ibid., Prop. 1.4): an ε-DP mechanism is (ε²/2)-zCDP.
//! - **To (ε, δ)** (Canonne, Kamath, Steinke 2020, Cor. 13): ρ-zCDP implies (ε, δ)-DP whenever,
//!   for some order α > 1,
//!
//!   ```text
//!   ε >= αρ + (ln(1/δ) + (α−1)·ln(α−1) − α·ln α) / (α−1)
//!   ```
//!
//!   which is their δ = exp((α−1)(αρ−ε))/(α−1)·(1−1/α)^α solved for ε. Any α gives a valid
//!   bound, so the choice of α affects only how tight it is. The bound of Bun & Steinke 2016
//!   (Prop. 1.3), ε = ρ + 2√(ρ·ln(1/δ)), is also valid; the CKS bound is about 10–20% smaller
//!   near ε = 1 for δ from 1e-5 to 1e-9, and the Bun–Steinke one wins only where the best order
//!   lies outside the table below. [`epsilon_for`] takes the smaller of the two.
//!
//! **Rounding.** Every ln and √ is bracketed between rationals ([`crate::numeric::bracket`]),
//! and each term is taken at the end of its bracket that makes ε larger: ln(1/δ) is rounded up
//! to a multiple of 2^-128, each order's constant (α−1)·ln(α−1) − α·ln α up, √ up. The orders
//! are a fixed public table, α − 1 = (8 + i)/8 · 2^e for i in 0..8 and e in −12..=50 (504
//! orders, within 0.2% of the best α in the range that matters), so the minimum over them is
//! an exact function of ρ and ln(1/δ), monotone in both. The result is rounded up to 64
//! significant bits, which keeps it short enough to store.
//!
//! **The inverse.** Every member of the minimum is increasing in ρ, and the CKS members are
//! affine in ρ, so the set of ρ whose ε is at most a target is an interval [0, ρ*] computed
//! exactly: ρ* is the largest of the members' own solutions. [`rho_for`] returns ρ* rounded down
//! to 64 significant bits: the largest such number whose [`epsilon_for`] is at most the target,
//! so converting a derived ρ back never exceeds the ε it was derived from.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, Zero};

use super::delta::Delta;
use super::epsilon::Epsilon;
use crate::numeric::bracket::{
    self, ln_ceil, next_down_bits, next_up_bits, round_down_bits, round_up_bits, sqrt_ceil,
};
use crate::numeric::exact::{decimal, floor_log2, parse_decimal, pow2, rational_to_f64_up};

/// Smallest ρ accepted: (1e-9)²/2 = 5e-19 is the ρ of the smallest ε, so 1e-20 leaves room.
const MIN_RHO_DECIMALS: u32 = 20;
/// Significant bits of a converted ε or a derived ρ.
pub const SIGNIFICANT_BITS: u32 = 64;
/// ln(1/δ) is rounded up to a multiple of 2^-LN_BITS; order constants are bracketed as finely.
const LN_BITS: u32 = 128;
/// The order table: α − 1 = (ORDER_STEPS + i)/ORDER_STEPS · 2^e for e in ORDER_EXPONENTS.
const ORDER_STEPS: u32 = 8;
const ORDER_EXPONENTS: std::ops::RangeInclusive<i64> = -12..=50;

/// A validated ρ: an exact rational with 1e-20 <= ρ <= f64::MAX.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rho(BigRational);

impl Rho {
    /// An exact rational as a ρ, under the same kind of rule as `--eps`.
    pub fn from_rational(r: BigRational) -> Result<Rho, String> {
        if !r.is_positive() {
            return Err("rho must be greater than 0".into());
        }
        if r > BigRational::from_float(f64::MAX).unwrap_or_default() {
            return Err("rho must be a finite decimal no larger than 1.7e308".into());
        }
        if r < BigRational::new(BigInt::one(), BigInt::from(10u32).pow(MIN_RHO_DECIMALS)) {
            return Err("rho must be at least 1e-20".into());
        }
        Ok(Rho(r))
    }

    /// A pure ε-DP release costs ε²/2 in zCDP (Bun & Steinke 2016, Prop. 1.4), exactly.
    pub fn from_pure(eps: &Epsilon) -> Rho {
        let e = eps.as_rational();
        Rho(e * e / BigInt::from(2))
    }

    pub fn as_rational(&self) -> &BigRational {
        &self.0
    }

    /// ρ divided into `parts` exactly equal shares: they compose back to ρ.
    pub fn split(&self, parts: u32) -> Rho {
        Rho(&self.0 / BigInt::from(parts.max(1)))
    }

    /// Sequential composition: the exact sum (None for no parts).
    pub fn compose<'a>(parts: impl IntoIterator<Item = &'a Rho>) -> Option<Rho> {
        let mut parts = parts.into_iter();
        let first = parts.next()?.0.clone();
        Some(Rho(parts.fold(first, |acc, p| acc + &p.0)))
    }

    /// The ε at which this ρ is (ε, δ)-DP, rounded up ([`epsilon_for`]).
    pub fn epsilon_at(&self, delta: &Delta) -> BigRational {
        epsilon_for(&self.0, delta)
    }

    /// The largest ρ whose conversion at δ is at most ε ([`rho_for`]), if it is a valid ρ.
    pub fn largest_for(eps: &Epsilon, delta: &Delta) -> Result<Rho, String> {
        let r = rho_for(eps.as_rational(), delta).ok_or_else(|| {
            format!("no positive rho converts to epsilon {eps} at delta {delta}: raise --eps or --delta")
        })?;
        Rho::from_rational(r)
    }

    /// The smallest f64 that is >= ρ: a printed cost never understates it.
    pub fn to_f64_up(&self) -> f64 {
        rational_to_f64_up(&self.0)
    }

    /// Exact form for records and audits, e.g. "1/200".
    pub fn exact_string(&self) -> String {
        format!("{}/{}", self.0.numer(), self.0.denom())
    }
}

impl fmt::Display for Rho {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&decimal(&self.0))
    }
}

impl FromStr for Rho {
    type Err = String;

    fn from_str(s: &str) -> Result<Rho, String> {
        let r = parse_decimal(s)
            .ok_or_else(|| format!("'{s}' is not a decimal number (write rho like 0.01 or 5e-3)"))?;
        Rho::from_rational(r)
    }
}

/// One order of the CKS bound: α, α − 1, and an upper bound on (α−1)·ln(α−1) − α·ln α.
struct Order {
    alpha: BigRational,
    minus_one: BigRational,
    constant: BigRational,
}

/// The fixed table of orders, built once per process (a few hundred bracketed logarithms).
fn orders() -> &'static [Order] {
    static ORDERS: OnceLock<Vec<Order>> = OnceLock::new();
    ORDERS.get_or_init(|| {
        let mut table = Vec::new();
        for e in ORDER_EXPONENTS {
            for i in 0..ORDER_STEPS {
                let minus_one =
                    BigRational::new(BigInt::from(ORDER_STEPS + i), BigInt::from(ORDER_STEPS)) * pow2(e);
                let alpha = &minus_one + BigRational::one();
                let ln_m = bracket::ln(&minus_one, LN_BITS).unwrap_or_else(|| unreachable!("α − 1 > 0"));
                let ln_a = bracket::ln(&alpha, LN_BITS).unwrap_or_else(|| unreachable!("α > 1"));
                // α − 1 > 0 and α > 0: the upper end of each log, with its sign, bounds the sum above.
                let constant = &minus_one * ln_m.hi - &alpha * ln_a.lo;
                table.push(Order { alpha, minus_one, constant });
            }
        }
        table
    })
}

/// ⌈ln(1/δ)⌉ on the 2^-128 grid: monotone in δ, never below ln(1/δ).
fn log_inverse(delta: &Delta) -> BigRational {
    ln_ceil(&delta.as_rational().recip(), LN_BITS).unwrap_or_else(|| unreachable!("1/δ > 1"))
}

/// Guard bits for a √ of x, so its error is ~2^-128 relative however small x is.
fn sqrt_bits(x: &BigRational) -> u32 {
    LN_BITS + (-floor_log2(x)).max(0) as u32 / 2 + 8
}

/// Whether ρ + 2√(ρ·l) <= e, decided exactly: e − ρ >= 0 and (e − ρ)² >= 4ρl.
fn bun_steinke_at_most(rho: &BigRational, l: &BigRational, e: &BigRational) -> bool {
    let gap = e - rho;
    !gap.is_negative() && &gap * &gap >= rho * l * BigInt::from(4)
}

/// The smallest 64-significant-bit number >= ρ + 2√(ρ·l) (Bun & Steinke 2016, Prop. 1.3).
fn bun_steinke_epsilon(rho: &BigRational, l: &BigRational) -> BigRational {
    let x = rho * l;
    let mut p = round_up_bits(&(rho + sqrt_ceil(&x, sqrt_bits(&x)) * BigInt::from(2)), SIGNIFICANT_BITS);
    // p is above the bound; the √ was so fine that at most a step or two separate p from the
    // exact rounding. Step down while the number below still bounds it, decided exactly.
    for _ in 0..4 {
        let below = next_down_bits(&p, SIGNIFICANT_BITS);
        if !below.is_positive() || !bun_steinke_at_most(rho, l, &below) {
            break;
        }
        p = below;
    }
    p
}

/// The largest 64-significant-bit ρ with ρ + 2√(ρ·l) <= e, for e > 0: below
/// (√(l + e) − √l)² = e²/(√(l + e) + √l)², found from √ rounded up and checked exactly.
fn bun_steinke_rho(e: &BigRational, l: &BigRational) -> Option<BigRational> {
    let le = l + e;
    let bits = sqrt_bits(e).max(sqrt_bits(l));
    let root_sum = sqrt_ceil(&le, bits) + sqrt_ceil(l, bits);
    let mut r = round_down_bits(&(e * e / (&root_sum * &root_sum)), SIGNIFICANT_BITS)?;
    if !r.is_positive() {
        return None;
    }
    for _ in 0..4 {
        let above = next_up_bits(&r, SIGNIFICANT_BITS);
        if !bun_steinke_at_most(&above, l, e) {
            break;
        }
        r = above;
    }
    Some(r)
}

/// The ε at which a ρ-zCDP mechanism (or composition) is (ε, δ)-DP: the smaller of the CKS 2020
/// Cor. 13 bound minimised over the fixed table of orders and the Bun–Steinke bound, every term
/// rounded up, the result rounded up to 64 significant bits (module comment). Exact and
/// monotone: increasing in ρ, decreasing in δ. A ρ <= 0 gives 0; so can a tiny ρ at a large δ
/// (the bound then says (0, δ)-DP).
pub fn epsilon_for(rho: &BigRational, delta: &Delta) -> BigRational {
    if !rho.is_positive() {
        return BigRational::zero();
    }
    let l = log_inverse(delta);
    let cks = cks_epsilon(rho, &l, orders().iter().map(|o| &o.constant));
    round_up_bits(&cks, SIGNIFICANT_BITS).min(bun_steinke_epsilon(rho, &l))
}

/// The largest ρ (a 64-significant-bit number) with `epsilon_for(ρ, δ) <= eps`, or None if no
/// positive ρ qualifies. Exact: `epsilon_for` of the result is <= eps, and of the next such
/// number above it is > eps (module comment).
pub fn rho_for(eps: &BigRational, delta: &Delta) -> Option<BigRational> {
    // epsilon_for(ρ) <= eps ⟺ the unrounded minimum <= e, with e = eps rounded down to the
    // same 64 significant bits (the rounding up is a ceiling onto that set of numbers).
    let e = round_down_bits(eps, SIGNIFICANT_BITS)?;
    if !e.is_positive() {
        return None;
    }
    let l = log_inverse(delta);
    let cks = cks_rho(&e, &l, orders().iter().map(|o| &o.constant));
    let cks = if cks.is_positive() { round_down_bits(&cks, SIGNIFICANT_BITS) } else { None };
    match (cks, bun_steinke_rho(&e, &l)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// A fraction n/d with d > 0, left unreduced: the order loops below compare hundreds of them,
/// and a gcd per operation (what `BigRational` does) would cost more than all the rest.
struct Fraction {
    n: BigInt,
    d: BigInt,
}

impl Fraction {
    fn of(r: &BigRational) -> Fraction {
        Fraction { n: r.numer().clone(), d: r.denom().clone() }
    }

    fn less_than(&self, other: &Fraction) -> bool {
        &self.n * &other.d < &other.n * &self.d
    }

    fn rational(self) -> BigRational {
        BigRational::new(self.n, self.d)
    }
}

/// (l + c)/(α − 1) for one order, as a fraction.
fn order_offset(l: &Fraction, c: &BigRational, order: &Order) -> Fraction {
    let c = Fraction::of(c);
    let m = Fraction::of(&order.minus_one);
    Fraction { n: (&l.n * &c.d + &c.n * &l.d) * &m.d, d: &l.d * &c.d * &m.n }
}

/// min over the orders of αρ + (l + c_α)/(α − 1), exactly, with one constant c_α per order.
fn cks_epsilon<'a>(
    rho: &BigRational,
    l: &BigRational,
    constants: impl Iterator<Item = &'a BigRational>,
) -> BigRational {
    let (rho, l) = (Fraction::of(rho), Fraction::of(l));
    let mut best: Option<Fraction> = None;
    for (order, c) in orders().iter().zip(constants) {
        let k = order_offset(&l, c, order);
        let a = Fraction::of(&order.alpha);
        let value = Fraction { n: &a.n * &rho.n * &k.d + &k.n * &a.d * &rho.d, d: &a.d * &rho.d * &k.d };
        if best.as_ref().is_none_or(|b| value.less_than(b)) {
            best = Some(value);
        }
    }
    best.map(Fraction::rational).unwrap_or_else(|| unreachable!("the table is not empty"))
}

/// max over the orders of (e − (l + c_α)/(α − 1))/α: the largest ρ some order allows at e.
fn cks_rho<'a>(
    e: &BigRational,
    l: &BigRational,
    constants: impl Iterator<Item = &'a BigRational>,
) -> BigRational {
    cks_rho_at(e, l, constants).0
}

/// [`cks_rho`] and the index in the table of the first order that attains it.
fn cks_rho_at<'a>(
    e: &BigRational,
    l: &BigRational,
    constants: impl Iterator<Item = &'a BigRational>,
) -> (BigRational, usize) {
    let (e, l) = (Fraction::of(e), Fraction::of(l));
    let mut best: Option<(Fraction, usize)> = None;
    for (i, (order, c)) in orders().iter().zip(constants).enumerate() {
        let k = order_offset(&l, c, order);
        let a = Fraction::of(&order.alpha);
        let value = Fraction { n: (&e.n * &k.d - &k.n * &e.d) * &a.d, d: &e.d * &k.d * &a.n };
        if best.as_ref().is_none_or(|(b, _)| b.less_than(&value)) {
            best = Some((value, i));
        }
    }
    best.map(|(b, i)| (b.rational(), i)).unwrap_or_else(|| unreachable!("the table is not empty"))
}

/// One order of the table with its CKS 2020 Cor. 13 offset, rounded up: an (α, R)-RDP
/// mechanism (or adaptive composition, docs/DESIGN.md §9.7) is (R + offset, δ)-DP, with
/// offset = (ln(1/δ) + (α−1)·ln(α−1) − α·ln α)/(α − 1) (the zCDP form above with αρ = R).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CksOrder {
    pub alpha: BigRational,
    pub offset: BigRational,
}

impl CksOrder {
    /// The ε at which RDP value `r` at this order is (ε, δ)-DP: r + offset, rounded up to 64
    /// significant bits as [`epsilon_for`] rounds (0 when that is not positive).
    pub fn epsilon(&self, r: &BigRational) -> BigRational {
        let e = r + &self.offset;
        if e.is_positive() {
            round_up_bits(&e, SIGNIFICANT_BITS)
        } else {
            BigRational::zero()
        }
    }

    /// The largest RDP value at this order whose [`CksOrder::epsilon`] is at most `eps`, exactly:
    /// eps rounded down to 64 significant bits, minus the offset (None if that is not positive).
    pub fn largest_for(&self, eps: &BigRational) -> Option<BigRational> {
        let b = round_down_bits(eps, SIGNIFICANT_BITS)? - &self.offset;
        b.is_positive().then_some(b)
    }
}

/// The order of the table at which [`rho_for`]`(eps, δ)` is attained by a CKS member, with its
/// offset at δ: the α* of the Rényi rule (docs/DESIGN.md §9.7), a function of (ε, δ) alone.
/// None when no positive ρ converts to eps, or when the Bun–Steinke bound allows at least as
/// much ρ as every order of the table (the best order lies outside it): the zCDP rule then stays.
pub fn cks_order_for(eps: &BigRational, delta: &Delta) -> Option<CksOrder> {
    let e = round_down_bits(eps, SIGNIFICANT_BITS)?;
    if !e.is_positive() {
        return None;
    }
    let l = log_inverse(delta);
    let (rho, i) = cks_rho_at(&e, &l, orders().iter().map(|o| &o.constant));
    // Bun–Steinke's set of ρ is an interval [0, ρ_bs]: if it holds the CKS maximum it holds
    // every ρ the table allows, so the zCDP rule admits at least what the order would.
    if !rho.is_positive() || bun_steinke_at_most(&rho, &l, &e) {
        return None;
    }
    let order = &orders()[i];
    let offset = order_offset(&Fraction::of(&l), &order.constant, order).rational();
    Some(CksOrder { alpha: order.alpha.clone(), offset })
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_traits::ToPrimitive;
    use proptest::prelude::*;

    fn ratio(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    fn delta(s: &str) -> Delta {
        s.parse().unwrap()
    }

    /// The table the module doc and DESIGN §9.4 describe: 63 exponents of 8 steps, each order
    /// above the one before (so none is counted twice), from 1 + 2^-12 to 1 + 1.875·2^50.
    #[test]
    fn the_order_table_holds_504_increasing_orders() {
        let table = orders();
        assert_eq!(table.len(), 504);
        assert!(table.windows(2).all(|w| w[0].alpha < w[1].alpha));
        assert_eq!(table[0].minus_one, ratio(1, 4096));
        assert_eq!(table[503].minus_one, ratio(15, 8) * pow2(50));
    }

    fn f(r: &BigRational) -> f64 {
        r.to_f64().unwrap()
    }

    /// The CKS 2020 Cor. 13 bound at the best α, in f64, by bisection on the derivative's sign
    /// (the reference implementation's method): a value to compare against, not to trust.
    fn cks_reference(rho: f64, delta: f64) -> f64 {
        let l = (1.0 / delta).ln();
        let eps_at = |a: f64| a * rho + (l + (a - 1.0) * (a - 1.0).ln() - a * a.ln()) / (a - 1.0);
        // Minimise over log(α − 1) by golden-section search; the function is unimodal there.
        let g = |t: f64| eps_at(1.0 + t.exp());
        let (mut lo, mut hi) = (-40.0f64, 60.0f64);
        let phi = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..300 {
            let a = hi - phi * (hi - lo);
            let b = lo + phi * (hi - lo);
            if g(a) < g(b) {
                hi = b;
            } else {
                lo = a;
            }
        }
        g((lo + hi) / 2.0)
    }

    #[test]
    fn pure_epsilon_costs_half_its_square() {
        let eps: Epsilon = "0.1".parse().unwrap();
        assert_eq!(Rho::from_pure(&eps).as_rational(), &ratio(1, 200));
        let eps: Epsilon = "1e-9".parse().unwrap();
        assert!(Rho::from_rational(Rho::from_pure(&eps).as_rational().clone()).is_ok());
    }

    #[test]
    fn composition_adds_exactly() {
        let r: Rho = "0.01".parse().unwrap();
        let ten = vec![r.clone(); 10];
        assert_eq!(Rho::compose(&ten).unwrap().as_rational(), &ratio(1, 10));
        let third = r.split(3);
        assert_eq!(Rho::compose([&third, &third, &third]).unwrap(), r);
        assert_eq!(Rho::compose(std::iter::empty()), None);
    }

    #[test]
    fn rho_range() {
        assert!("0".parse::<Rho>().is_err());
        assert!("-0.1".parse::<Rho>().is_err());
        assert!("1e-21".parse::<Rho>().is_err());
        assert!("1e-20".parse::<Rho>().is_ok());
        assert!("1e309".parse::<Rho>().is_err());
        assert!("inf".parse::<Rho>().is_err());
        let r: Rho = "0.005".parse().unwrap();
        assert_eq!(r.exact_string(), "1/200");
        assert_eq!(r.to_string(), "0.005");
        assert!(BigRational::from_float(r.to_f64_up()).unwrap() >= *r.as_rational());
    }

    /// Against the f64 optimum of the CKS bound: never below it (the conversion is an upper
    /// bound of a valid bound), within 0.2% above it (the order table is fine enough), and never
    /// above Bun–Steinke. Printed for the record.
    #[test]
    fn conversion_matches_the_cks_optimum() {
        for d in ["1e-5", "1e-6", "1e-9", "1e-12"] {
            let dl = delta(d);
            let df = d.parse::<f64>().unwrap();
            for rho in
                [ratio(1, 100_000), ratio(1, 1000), ratio(1, 100), ratio(1, 20), ratio(1, 2), ratio(5, 1)]
            {
                let got = f(&epsilon_for(&rho, &dl));
                let r = f(&rho);
                let reference = cks_reference(r, df);
                let bs = r + 2.0 * (r * (1.0 / df).ln()).sqrt();
                eprintln!(
                    "rho {r:e}, delta {d}: eps {got:.6} (CKS optimum {reference:.6}, Bun–Steinke {bs:.6})"
                );
                assert!(got >= reference * (1.0 - 1e-12), "below the optimum: {got} < {reference}");
                assert!(got <= reference * 1.002, "table too coarse: {got} vs {reference}");
                assert!(got <= bs * (1.0 + 1e-12), "worse than Bun–Steinke: {got} vs {bs}");
            }
        }
    }

    #[test]
    fn epsilon_one_delta_1e_6() {
        let eps: Epsilon = "1".parse().unwrap();
        let rho = Rho::largest_for(&eps, &delta("1e-6")).unwrap();
        let r = rho.to_f64_up();
        eprintln!("eps 1, delta 1e-6: rho {r:.6}");
        // Bun–Steinke alone would give (√(l + 1) − √l)² ≈ 0.0175; the CKS bound allows more.
        let l = 1e6f64.ln();
        let bs = ((l + 1.0).sqrt() - l.sqrt()).powi(2);
        assert!(r > bs * 1.2, "rho {r} not above Bun–Steinke's {bs}");
        assert!(f(&epsilon_for(rho.as_rational(), &delta("1e-6"))) <= 1.0);
    }

    #[test]
    fn edge_cases() {
        assert!(epsilon_for(&BigRational::zero(), &delta("1e-6")).is_zero());
        assert_eq!(rho_for(&BigRational::zero(), &delta("1e-6")), None);
        // A huge δ and a tiny ρ: the bound may say (0, δ).
        assert!(epsilon_for(&ratio(1, 1_000_000_000_000), &delta("0.5")).is_zero());
        // A huge ρ: Bun–Steinke and the smallest orders still give a finite, sane ε.
        let big = epsilon_for(&ratio(1_000_000_000, 1), &delta("1e-6"));
        assert!(f(&big) >= 1e9 && f(&big) < 1.01e9);
        // A tiny ρ: 1e-18-zCDP keeps the total variation distance below √(ρ/2) ≈ 7e-10 (Pinsker),
        // so (0, 1e-6)-DP is true, and the CKS bound finds it where Bun–Steinke says 7e-9.
        let tiny = ratio(1, 1_000_000_000_000_000_000);
        assert!(epsilon_for(&tiny, &delta("1e-6")).is_zero());
        // At δ = 1e-12 it is not: ε is positive, near the optimum, below Bun–Steinke.
        let e = f(&epsilon_for(&tiny, &delta("1e-12")));
        let reference = cks_reference(1e-18, 1e-12);
        let bs = 1e-18 + 2.0 * (1e-18 * 1e12f64.ln()).sqrt();
        assert!(
            e >= reference * (1.0 - 1e-9) && e <= reference * 1.002 && e < bs,
            "{e} vs {reference}, {bs}"
        );
    }

    /// Each order's constant (α−1)·ln(α−1) − α·ln α bounded from below, at 200 bits.
    fn constants_from_below() -> &'static [BigRational] {
        static LOWER: OnceLock<Vec<BigRational>> = OnceLock::new();
        LOWER.get_or_init(|| {
            orders()
                .iter()
                .map(|o| {
                    let ln_m = bracket::ln(&o.minus_one, 200).unwrap();
                    let ln_a = bracket::ln(&o.alpha, 200).unwrap();
                    &o.minus_one * ln_m.lo - &o.alpha * ln_a.hi
                })
                .collect()
        })
    }

    fn rho_strategy() -> impl Strategy<Value = BigRational> {
        (1u64..1_000_000_000, 1u64..1_000_000_000, -40i64..10)
            .prop_map(|(n, d, e)| BigRational::new(n.into(), d.into()) * pow2(e))
    }

    fn delta_strategy() -> impl Strategy<Value = Delta> {
        (1u64..10, 1u32..60).prop_map(|(n, k)| {
            Delta::from_rational(BigRational::new(n.into(), BigInt::from(10u32).pow(k))).unwrap()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// The rounding is upward: the result is at least a certified lower bound of the exact
        /// minimum (every log taken at the low end of a 200-bit bracket, √ rounded down).
        #[test]
        fn epsilon_is_rounded_up(rho in rho_strategy(), d in delta_strategy()) {
            let got = epsilon_for(&rho, &d);
            let l_lo = bracket::ln(&d.as_rational().recip(), 200).unwrap().lo;
            let cks_lo = cks_epsilon(&rho, &l_lo, constants_from_below().iter());
            let bs_lo = &rho + bracket::sqrt_floor(&(&rho * &l_lo), 200) * BigInt::from(2);
            let exact_lo = cks_lo.min(bs_lo);
            prop_assert!(got >= exact_lo, "{} < {}", f(&got), f(&exact_lo));
            prop_assert!(got.is_zero() || got <= round_up_bits(&(&exact_lo * ratio(1_000_001, 1_000_000)), 64));
        }

        /// ρ → ε is increasing in ρ and decreasing in δ.
        #[test]
        fn epsilon_is_monotone(a in rho_strategy(), b in rho_strategy(), d in delta_strategy(), e in delta_strategy()) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(epsilon_for(&lo, &d) <= epsilon_for(&hi, &d));
            let (small, large) = if d <= e { (d, e) } else { (e, d) };
            prop_assert!(epsilon_for(&lo, &small) >= epsilon_for(&lo, &large));
        }

        /// ε → ρ → ε never exceeds the ε it started from, and one step more ρ would.
        #[test]
        fn inverse_is_the_largest_rho_that_fits(e in rho_strategy(), d in delta_strategy()) {
            let r = rho_for(&e, &d).unwrap();
            prop_assert!(r.is_positive());
            prop_assert!(epsilon_for(&r, &d) <= e);
            prop_assert!(epsilon_for(&next_up_bits(&r, SIGNIFICANT_BITS), &d) > e);
        }

        /// ε → ρ is increasing in ε and in δ.
        #[test]
        fn inverse_is_monotone(a in rho_strategy(), b in rho_strategy(), d in delta_strategy(), e in delta_strategy()) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(rho_for(&lo, &d) <= rho_for(&hi, &d));
            let (small, large) = if d <= e { (d, e) } else { (e, d) };
            prop_assert!(rho_for(&lo, &small) <= rho_for(&lo, &large));
        }
    }
}
