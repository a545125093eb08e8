//! The ledger's rule for a dataset whose history has ρ (zCDP) charges: Rényi accounting at one
//! order α*, fixed by the budget (docs/DESIGN.md §9.7).
//!
//! - **Guarantee.** A dataset with budget (ε_total, δ_total) whose charges are pure ε and ρ,
//!   each chosen by the analyst after seeing the releases before it, is (ε_total, δ_total)-DP
//!   for its privacy unit as long as every history the ledger admits with a ρ charge has
//!   R(α*) = Σ min(εᵢ, α*·εᵢ²/2) + α*·Σρⱼ <= B, and every history of pure charges only has
//!   Σε <= ε_total. The ledger is a privacy filter: the proof is the fixed-order Rényi filter of
//!   Feldman & Zrnic 2021 (privacy loss L, M_t = exp((α−1)(L_t − Σ rᵢ)) a supermartingale) with
//!   the pointwise inequality behind Canonne, Kamath, Steinke 2020, Prop. 12 / Cor. 13,
//!   (1 − e^(ε−x))₊ <= C_α·e^((α−1)(x−ε)), C_α = (α−1)^(α−1)/α^α; docs/DESIGN.md §9.7 gives it.
//! - **The order** α* is the order of the table of [`super::zcdp`] at which the zCDP rule's
//!   largest ρ, ρ_B = rho_for(ε_total, δ_total), is attained ([`cks_order_for`]): a function of
//!   the budget only, never of the history, because choosing the order after seeing the
//!   history is not covered by a filter theorem. B is the largest RDP value whose CKS
//!   conversion at α* and δ_total is at most ε_total, exactly ([`CksOrder::largest_for`]).
//! - **Never worse than the zCDP rule.** That rule admits iff Σρ + Σε²/2 <= ρ_B; then
//!   R(α*) <= α*·(Σρ + Σε²/2) <= α*·ρ_B <= B. Where Bun–Steinke allows more ρ than any order of
//!   the table (budgets far outside the usual range), there is no α*, and the zCDP rule stays.
//! - **What a history has spent** is the CKS conversion of R(α*) at α* and δ_total, rounded up:
//!   at most ε_total for every admitted history.
//!
//! The δ_total of this module is the budget's share for zCDP releases, δ_Z ([`super::delta_use`]:
//! all of the recorded δ, or half of it when it is split with the (ε, δ) releases of keys found
//! in the data); the ledger passes it in.
//!
//! Everything is exact: ε, ρ and α are rationals, min(ε, αε²/2) is exact, and the conversion's
//! logarithms are bracketed on their safe side (§9.6).

use num_rational::BigRational;

use super::currency::History;
use super::delta::Delta;
use super::zcdp::{cks_order_for, epsilon_for, CksOrder};

/// How a budget (ε_total, δ_total) measures a history with ρ charges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// R(α*) at most `limit` (B).
    Renyi { order: CksOrder, limit: BigRational },
    /// Σρ + Σε²/2 converted by [`epsilon_for`] at most ε_total (no order of the table does
    /// better than Bun–Steinke, or no positive ρ fits at all).
    Zcdp,
}

impl Rule {
    /// The rule of a budget: from (ε_total, δ_total) only.
    pub fn for_budget(total: &BigRational, delta: &Delta) -> Rule {
        cks_order_for(total, delta)
            .and_then(|order| Some(Rule::Renyi { limit: order.largest_for(total)?, order }))
            .unwrap_or(Rule::Zcdp)
    }
}

/// A history with ρ charges as its budget's rule measures it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    pub rule: Rule,
    /// R(α*) under [`Rule::Renyi`], Σρ + Σε²/2 under [`Rule::Zcdp`], exact.
    pub value: BigRational,
    /// What the history has spent as (ε, δ_total)-DP: `value` converted, rounded up.
    pub epsilon: BigRational,
    /// Whether the history fits the budget.
    pub fits: bool,
}

/// The measure of `history` under the budget (ε_total, δ_total); None unless the history has a
/// ρ charge and no (ε, δ) charge (pure-only histories add ε, and ρ never joins (ε, δ)).
pub fn measure(history: &History, total: &BigRational, delta: &Delta) -> Option<Measure> {
    if !history.has_zcdp() || history.has_approx() {
        return None;
    }
    Some(match Rule::for_budget(total, delta) {
        Rule::Renyi { order, limit } => {
            let value = history.renyi(&order.alpha)?;
            let epsilon = order.epsilon(&value);
            let fits = value <= limit;
            Measure { rule: Rule::Renyi { order, limit }, value, epsilon, fits }
        }
        Rule::Zcdp => {
            let value = history.zcdp()?;
            let epsilon = epsilon_for(&value, delta);
            let fits = &epsilon <= total;
            Measure { rule: Rule::Zcdp, value, epsilon, fits }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::bracket;
    use crate::privacy::currency::Spend;
    use num_bigint::BigInt;
    use num_traits::{One, Signed, ToPrimitive, Zero};
    use proptest::prelude::*;

    fn ratio(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    fn pure(s: &str) -> Spend {
        Spend::Pure(s.parse().unwrap())
    }

    fn zcdp(s: &str) -> Spend {
        Spend::Zcdp(s.parse().unwrap())
    }

    fn f(r: &BigRational) -> f64 {
        r.to_f64().unwrap()
    }

    /// ln x to within 2^-bits, by a series unrelated to the crate's (atanh): x = 2^k·m with
    /// m in [3/4, 3/2), ln m = Σ (−1)^(n+1)·u^n/n with u = m − 1, |u| <= 1/2, and
    /// ln 2 = Σ 1/(n·2^n). Returns (low, high), each end from the remainder of its series.
    fn ln_mercator(x: &BigRational, bits: u32) -> (BigRational, BigRational) {
        assert!(x.is_positive());
        let two = ratio(2, 1);
        let (mut m, mut k) = (x.clone(), 0i64);
        while m >= ratio(3, 2) {
            m /= &two;
            k += 1;
        }
        while m < ratio(3, 4) {
            m *= &two;
            k -= 1;
        }
        let eps = BigRational::new(BigInt::one(), BigInt::one() << (bits + 8));
        // ln 2: partial sums from below; the tail after n terms is below 2·2^-(n+1)/(n+1).
        let (mut ln2, mut term, mut n) = (BigRational::zero(), ratio(1, 2), 1i64);
        loop {
            ln2 += &term / BigInt::from(n);
            term /= &two;
            n += 1;
            if &term * ratio(2, n) < eps {
                break;
            }
        }
        let ln2_hi = &ln2 + &term * ratio(2, n);
        // ln m: alternating (or, for u < 0, all negative) terms; |tail| <= 2·|u|^(n)/n.
        let u = &m - BigRational::one();
        let (mut sum, mut power, mut n) = (BigRational::zero(), u.clone(), 1i64);
        loop {
            let t = &power / BigInt::from(n);
            sum += if n % 2 == 1 { t } else { -t };
            power *= &u;
            n += 1;
            if power.abs() * ratio(2, n) < eps {
                break;
            }
        }
        let tail = power.abs() * ratio(2, n);
        let k = BigRational::from_integer(k.into());
        let (l2lo, l2hi) = if k.is_negative() { (&ln2_hi, &ln2) } else { (&ln2, &ln2_hi) };
        (&k * l2lo + &sum - &tail, &k * l2hi + &sum + &tail)
    }

    /// A certified lower bound on the exact conversion R + (ln(1/δ) + (α−1)ln(α−1) − α ln α)/(α−1).
    fn conversion_below(r: &BigRational, alpha: &BigRational, delta: &BigRational) -> BigRational {
        let m = alpha - BigRational::one();
        let (l_lo, _) = ln_mercator(&delta.recip(), 200);
        let (lm_lo, _) = ln_mercator(&m, 200);
        let (_, la_hi) = ln_mercator(alpha, 200);
        // α − 1 > 0 and α > 0: the low end of ln(α − 1) and the high end of ln α bound it below.
        r + (l_lo + &m * lm_lo - alpha * la_hi) / &m
    }

    #[test]
    fn the_mercator_series_brackets_ln() {
        for x in [ratio(1_000_000, 1), ratio(3, 7), ratio(49, 2), ratio(1, 4096)] {
            let (lo, hi) = ln_mercator(&x, 200);
            let b = bracket::ln(&x, 200).unwrap();
            assert!(lo <= b.hi && b.lo <= hi, "{x}");
            assert!(&hi - &lo < BigRational::new(BigInt::one(), BigInt::one() << 190));
        }
    }

    fn delta(s: &str) -> Delta {
        s.parse().unwrap()
    }

    /// Issue 24, item 3: pure 0.5 then ρ 0.01 under (1.3, 1e-6). The zCDP rule turns 0.5 into ρ
    /// 0.125 and says about (2.52, 1e-6); at α* the pure release counts min(0.5, α*·0.125) = 0.5.
    #[test]
    fn the_issue_example_fits() {
        let (total, d) = (ratio(13, 10), delta("1e-6"));
        let h = History::of(&[pure("0.5"), zcdp("0.01")]);
        assert!(f(&epsilon_for(&h.zcdp().unwrap(), &d)) > 2.5, "the zCDP rule refuses it");
        let m = measure(&h, &total, &d).unwrap();
        let Rule::Renyi { order, limit } = &m.rule else { panic!("a Rényi rule: {m:?}") };
        eprintln!("alpha* {}, R {}, B {}, spent {}", f(&order.alpha), f(&m.value), f(limit), f(&m.epsilon));
        assert!(m.fits && m.epsilon <= total);
        assert_eq!(m.value, ratio(1, 2) + &order.alpha * ratio(1, 100), "min(0.5, α*·0.125) = 0.5");
        // Above plain composition's 0.5 + ε(0.01) ≈ 1.12, since α* is fixed by the budget.
        let sequential = 0.5 + f(&epsilon_for(&ratio(1, 100), &d));
        assert!(f(&m.epsilon) > sequential && f(&m.epsilon) < 1.3, "{} vs {sequential}", f(&m.epsilon));
        // One more ρ 0.01 does not fit.
        let more = History::of(&[pure("0.5"), zcdp("0.01"), zcdp("0.01")]);
        assert!(!measure(&more, &total, &d).unwrap().fits);
    }

    /// A history both rules refuse, and one only the zCDP rule refuses.
    #[test]
    fn refused_by_both_and_admitted_only_by_renyi() {
        let (total, d) = (ratio(1, 1), delta("1e-6"));
        let rho_b = crate::privacy::zcdp::rho_for(&total, &d).unwrap();
        // ρ alone just above ρ_B: R = α*·ρ > α*·ρ_B = B up to rounding; both refuse.
        let over = crate::privacy::zcdp::Rho::from_rational(&rho_b * ratio(101, 100)).unwrap();
        let h = History::of(&[Spend::Zcdp(over)]);
        assert!(epsilon_for(&h.zcdp().unwrap(), &d) > total);
        assert!(!measure(&h, &total, &d).unwrap().fits);
        // Two pure 0.2 and ρ 0.001: ρ 0.041 for the zCDP rule (refused, ρ_B ≈ 0.0243), and
        // R = 0.4 + α*/1000 ≈ 0.42 at α* = 23, where B ≈ 0.56.
        let h = History::of(&[pure("0.2"), pure("0.2"), zcdp("0.001")]);
        assert!(epsilon_for(&h.zcdp().unwrap(), &d) > total);
        let m = measure(&h, &total, &d).unwrap();
        assert!(m.fits && m.epsilon <= total, "{m:?}");
    }

    #[test]
    fn pure_only_and_approximate_histories_have_no_measure() {
        let (total, d) = (ratio(1, 1), delta("1e-6"));
        assert_eq!(measure(&History::of(&[pure("0.5")]), &total, &d), None);
        let approx = Spend::Approx { eps: "0.1".parse().unwrap(), delta: "1e-9".parse().unwrap() };
        assert_eq!(measure(&History::of(&[pure("0.5"), approx]), &total, &d), None);
    }

    /// The order is the table's best for ρ_B: against an f64 search of the continuous optimum
    /// of the CKS bound at ρ_B, α* is within the table's step (1/8 of a binade) of it; and B
    /// converts back to at most ε_total, while a little more would not.
    #[test]
    fn the_order_is_the_best_for_the_largest_rho() {
        for (total, d) in [("1", "1e-6"), ("1.3", "1e-6"), ("0.1", "1e-9"), ("5", "1e-5"), ("10", "1e-10")] {
            let total: BigRational = crate::numeric::exact::parse_decimal(total).unwrap();
            let d = delta(d);
            let Rule::Renyi { order, limit } = Rule::for_budget(&total, &d) else { panic!("Rényi") };
            let rho = f(&crate::privacy::zcdp::rho_for(&total, &d).unwrap());
            let l = (1.0 / f(d.as_rational())).ln();
            let eps_at = |a: f64| a * rho + (l + (a - 1.0) * (a - 1.0).ln() - a * a.ln()) / (a - 1.0);
            let best = (0..20000)
                .map(|i| 1.0 + (i as f64 / 400.0 - 20.0).exp())
                .min_by(|a, b| eps_at(*a).total_cmp(&eps_at(*b)))
                .unwrap();
            let ratio_m = (f(&order.alpha) - 1.0) / (best - 1.0);
            assert!((0.85..1.18).contains(&ratio_m), "α* {} vs {best}", f(&order.alpha));
            assert!(order.epsilon(&limit) <= total);
            let above = &limit + BigRational::new(BigInt::one(), BigInt::one() << 60);
            assert!(order.epsilon(&above) > total);
        }
    }

    /// A budget (ε_total from 0.001 to 5, δ from 1e-1 to 1e-12) and a history with at least one
    /// ρ charge, its spends drawn as shares of the budget so that both rules admit some and
    /// refuse some: pure ε up to 0.4·ε_total, ρ up to 0.6·ρ_B, the last ρ up to ρ_B.
    fn case() -> impl Strategy<Value = (BigRational, Delta, Vec<Spend>)> {
        let budget = (1i64..5000, 1u32..13);
        let spends = proptest::collection::vec((any::<bool>(), 1i64..1000), 0..7);
        (budget, spends, 1i64..=1000).prop_map(|((e, k), spends, last)| {
            let total = ratio(e, 1000);
            let d = Delta::from_rational(BigRational::new(1.into(), BigInt::from(10u32).pow(k))).unwrap();
            let rho_b = crate::privacy::zcdp::rho_for(&total, &d).unwrap();
            let rho = |n: i64| {
                Spend::Zcdp(crate::privacy::zcdp::Rho::from_rational(&rho_b * ratio(n * 6, 10_000)).unwrap())
            };
            let mut out: Vec<Spend> = spends
                .into_iter()
                .map(|(is_pure, n)| {
                    if is_pure {
                        Spend::Pure(
                            crate::privacy::epsilon::Epsilon::from_rational(&total * ratio(n * 4, 10_000))
                                .unwrap(),
                        )
                    } else {
                        rho(n)
                    }
                })
                .collect();
            // The last one up to ρ_B itself, so that the zCDP rule's boundary is reached.
            out.push(Spend::Zcdp(
                crate::privacy::zcdp::Rho::from_rational(&rho_b * ratio(last, 1000)).unwrap(),
            ));
            (total, d, out)
        })
    }

    /// The same on a grid of budgets and histories (pure ε and ρ as shares of the budget), which
    /// also shows the property is not vacuous: both rules admit some, only the Rényi rule some,
    /// neither some, and the zCDP rule alone none.
    #[test]
    fn never_worse_on_a_grid() {
        let mut counts = [0usize; 4]; // [both, Rényi only, neither, zCDP only]
        for (total, k) in [(ratio(1, 10), 9u32), (ratio(1, 1), 6), (ratio(13, 10), 6), (ratio(4, 1), 3)] {
            let d = Delta::from_rational(BigRational::new(1.into(), BigInt::from(10u32).pow(k))).unwrap();
            let rho_b = crate::privacy::zcdp::rho_for(&total, &d).unwrap();
            for pure_share in [0i64, 5, 20, 40, 60] {
                for rho_share in [5i64, 30, 60, 90, 99, 100, 101] {
                    let mut spends = vec![Spend::Zcdp(
                        crate::privacy::zcdp::Rho::from_rational(&rho_b * ratio(rho_share, 100)).unwrap(),
                    )];
                    if pure_share > 0 {
                        let e = &total * ratio(pure_share, 100);
                        spends.push(Spend::Pure(crate::privacy::epsilon::Epsilon::from_rational(e).unwrap()));
                    }
                    let h = History::of(&spends);
                    let zcdp_admits = epsilon_for(&h.zcdp().unwrap(), &d) <= total;
                    let m = measure(&h, &total, &d).unwrap();
                    assert!(m.epsilon <= total || !m.fits);
                    counts[match (zcdp_admits, m.fits) {
                        (true, true) => 0,
                        (false, true) => 1,
                        (false, false) => 2,
                        (true, false) => 3,
                    }] += 1;
                }
            }
        }
        eprintln!("both, Rényi only, neither, zCDP only: {counts:?}");
        assert!(counts[0] > 0 && counts[1] > 0 && counts[2] > 0, "{counts:?}");
        assert_eq!(counts[3], 0, "the zCDP rule admitted what the Rényi rule refuses");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Never worse than the zCDP rule: every history it admits, the Rényi rule admits, and
        /// the Rényi rule's spend is at most ε_total whenever it admits.
        #[test]
        fn never_worse_than_the_zcdp_rule((total, d, spends) in case()) {
            let h = History::of(&spends);
            let zcdp_admits = epsilon_for(&h.zcdp().unwrap(), &d) <= total;
            let m = measure(&h, &total, &d).unwrap();
            prop_assert!(!zcdp_admits || m.fits, "{:?} under ({}, {})", spends, f(&total), d);
            if m.fits {
                prop_assert!(m.epsilon <= total);
            }
        }

        /// Every reported spend is at least the exact conversion of R(α*) at α* (computed here
        /// with another series for ln, at 200 bits) and within 2^-60 relative above it.
        #[test]
        fn the_spend_is_never_below_the_exact_conversion((total, d, spends) in case()) {
            let h = History::of(&spends);
            let m = measure(&h, &total, &d).unwrap();
            let Rule::Renyi { order, .. } = &m.rule else { return Ok(()) };
            // R(α*) by hand, from the spends.
            let a = &order.alpha;
            let mut r = BigRational::zero();
            for s in &spends {
                r += match s {
                    Spend::Pure(e) => {
                        let e = e.as_rational();
                        (a * e * e / BigInt::from(2)).min(e.clone())
                    }
                    Spend::Zcdp(p) => a * p.as_rational(),
                    Spend::Approx { .. } => unreachable!(),
                };
            }
            prop_assert_eq!(&m.value, &r);
            let exact_lo = conversion_below(&r, a, d.as_rational());
            if exact_lo.is_positive() {
                prop_assert!(m.epsilon >= exact_lo, "{} < {}", f(&m.epsilon), f(&exact_lo));
                let slack = &exact_lo * (BigRational::one() + BigRational::new(1.into(), BigInt::one() << 60))
                    + BigRational::new(1.into(), BigInt::one() << 100);
                prop_assert!(m.epsilon <= slack, "{} vs {}", f(&m.epsilon), f(&exact_lo));
            }
        }
    }
}
