//! What a ledger needs to account in more than one currency: pure ε, zCDP's ρ, and the (ε, δ)
//! of thresholded key discovery. Used by the accountant and the ledger
//! (docs/DESIGN.md §9.7); it states which histories compose into which guarantee, and refuses
//! the one mix it cannot account for soundly.
//!
//! - **Pure only**: ε-DP with ε = Σεᵢ (Dwork & Roth 2014, Thm 3.16).
//! - **Pure and zCDP**: every pure release is (εᵢ²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4) and
//!   zCDP composes by adding ρ (ibid., Lemma 2.3), so a fixed history is ρ-zCDP with
//!   ρ = Σρⱼ + Σεᵢ²/2, and (ε, δ)-DP at any δ by [`super::zcdp::epsilon_for`]
//!   ([`History::approx_dp`]). The ledger, whose charges are chosen adaptively, measures such a
//!   history at one Rényi order fixed by its budget instead ([`History::renyi`],
//!   [`super::renyi`]): a pure εᵢ counts min(εᵢ, αεᵢ²/2) there, not αεᵢ²/2.
//! - **Pure and approximate**: basic composition, (Σεᵢ + Σεₖ, Σδₖ)-DP (Dwork & Roth 2014,
//!   Thm 3.16, which covers (ε, δ) mechanisms chosen adaptively).
//! - **zCDP and approximate together**: refused. Converting the zCDP part to (ε', δ') and then
//!   adding the approximate releases by basic composition is sound only if the zCDP releases,
//!   taken together, are one ρ-zCDP mechanism, and an approximate release made between them,
//!   whose output chose what they measured, breaks that. The likely route is approximate zCDP
//!   (Bun & Steinke 2016, §8: thresholding is δ-approximately (ε²/2)-zCDP, since conditioned on
//!   the new key staying hidden its output is that of the neighbour); it needs checking against
//!   that paper's composition and conversion statements before a ledger relies on it.
//! - **One budget, both kinds**: a ledger's δ_total is shared between the zCDP and the
//!   approximate histories when the budget is recorded ([`super::delta_use`]), since an analyst
//!   may pick the kind after pure releases, and the two kinds' δ then add up.

use num_rational::BigRational;
use num_traits::{Signed, Zero};

use super::delta::Delta;
use super::epsilon::Epsilon;
use super::zcdp::{epsilon_for, Rho};
use crate::error::Error;

/// What one release spends, in the currency of its guarantee.
#[derive(Clone, Debug, PartialEq)]
pub enum Spend {
    /// ε-DP (every Laplace release, the exponential mechanism).
    Pure(Epsilon),
    /// ρ-zCDP (a discrete Gaussian release).
    Zcdp(Rho),
    /// (ε, δ)-DP (thresholded key discovery).
    Approx { eps: Epsilon, delta: Delta },
}

impl std::fmt::Display for Spend {
    /// `epsilon 0.5`, `rho 0.01`, `epsilon 1, delta 0.0000001`: exact decimals, as typed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spend::Pure(eps) => write!(f, "epsilon {eps}"),
            Spend::Zcdp(rho) => write!(f, "rho {rho}"),
            Spend::Approx { eps, delta } => write!(f, "epsilon {eps}, delta {delta}"),
        }
    }
}

/// A guarantee stated as (ε, δ)-DP, both exact; ε rounded up where a conversion was needed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApproxDp {
    pub eps: BigRational,
    pub delta: BigRational,
}

/// The exact totals of a history of spends, kept apart by currency so that every composition
/// rule above can be applied to them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    pure_eps: BigRational,
    /// Σ εᵢ²/2 over the pure spends: their cost in ρ.
    pure_rho: BigRational,
    /// Every pure spend's ε, for their Rényi divergence at an order (min(ε, αε²/2) each).
    pure_each: Vec<BigRational>,
    rho: BigRational,
    approx_eps: BigRational,
    approx_delta: BigRational,
    zcdp_spends: usize,
    approx_spends: usize,
}

impl History {
    pub fn new() -> History {
        History::default()
    }

    /// The history of `spends`, in any order (composition is commutative).
    pub fn of<'a>(spends: impl IntoIterator<Item = &'a Spend>) -> History {
        let mut history = History::new();
        for spend in spends {
            history.add(spend);
        }
        history
    }

    pub fn add(&mut self, spend: &Spend) {
        match spend {
            Spend::Pure(eps) => {
                self.pure_eps += eps.as_rational();
                self.pure_rho += Rho::from_pure(eps).as_rational();
                self.pure_each.push(eps.as_rational().clone());
            }
            Spend::Zcdp(rho) => {
                self.rho += rho.as_rational();
                self.zcdp_spends += 1;
            }
            Spend::Approx { eps, delta } => {
                self.approx_eps += eps.as_rational();
                self.approx_delta += delta.as_rational();
                self.approx_spends += 1;
            }
        }
    }

    /// ε of a history of pure spends only (None otherwise): the exact sum.
    pub fn pure(&self) -> Option<BigRational> {
        (self.zcdp_spends == 0 && self.approx_spends == 0).then(|| self.pure_eps.clone())
    }

    /// ρ of a history without approximate spends (None otherwise): Σρ + Σε²/2, exact.
    pub fn zcdp(&self) -> Option<BigRational> {
        (self.approx_spends == 0).then(|| &self.rho + &self.pure_rho)
    }

    /// The bound on the Rényi divergence of order `alpha` > 1 of a history without approximate
    /// spends (None otherwise), exactly: Σ min(εᵢ, α·εᵢ²/2) over the pure spends (an ε-DP
    /// mechanism has D_α <= D_∞ <= ε, and D_α <= αε²/2 as it is (ε²/2)-zCDP, Bun & Steinke
    /// 2016, Prop. 1.4) plus α·Σρⱼ (ρ-zCDP is D_α <= αρ, ibid., Def. 1.1).
    pub fn renyi(&self, alpha: &BigRational) -> Option<BigRational> {
        if self.approx_spends > 0 {
            return None;
        }
        let two = BigRational::from_integer(2.into());
        let pure = self.pure_each.iter().fold(BigRational::zero(), |acc, e| {
            let square = alpha * e * e / &two;
            acc + if &square < e { square } else { e.clone() }
        });
        Some(pure + alpha * &self.rho)
    }

    /// The history as one (ε, δ)-DP guarantee. Pure only: (Σε, 0). With zCDP: the total ρ
    /// converted at `conversion_delta`, and when there is no zCDP spend at all the pure sum is
    /// used instead of the conversion (it is exact and often smaller). With approximate spends:
    /// basic composition with the pure ones; refused together with zCDP (module comment).
    pub fn approx_dp(&self, conversion_delta: &Delta) -> Result<ApproxDp, Error> {
        if self.zcdp_spends > 0 && self.approx_spends > 0 {
            return Err(Error::usage(
                "this history mixes zCDP releases (Gaussian noise) with (epsilon, delta) releases \
                 (thresholded keys), which dpstat cannot yet compose soundly; keep them in separate \
                 budgets",
            ));
        }
        if self.zcdp_spends > 0 {
            let rho = &self.rho + &self.pure_rho;
            return Ok(ApproxDp {
                eps: epsilon_for(&rho, conversion_delta),
                delta: conversion_delta.as_rational().clone(),
            });
        }
        Ok(ApproxDp { eps: &self.pure_eps + &self.approx_eps, delta: self.approx_delta.clone() })
    }

    /// Whether some spend is in ρ (a Gaussian release).
    pub fn has_zcdp(&self) -> bool {
        self.zcdp_spends > 0
    }

    /// Whether some spend is in (ε, δ) (keys found in the data).
    pub fn has_approx(&self) -> bool {
        self.approx_spends > 0
    }

    /// Σε over the pure and the approximate spends: the ε of basic composition.
    pub fn epsilon_sum(&self) -> BigRational {
        &self.pure_eps + &self.approx_eps
    }

    /// Σδ over the approximate spends.
    pub fn delta_sum(&self) -> &BigRational {
        &self.approx_delta
    }

    /// Σρ over the zCDP spends alone (without the pure spends' ε²/2).
    pub fn rho_sum(&self) -> &BigRational {
        &self.rho
    }

    /// Whether nothing has been spent.
    pub fn is_empty(&self) -> bool {
        !self.pure_eps.is_positive() && self.rho.is_zero() && self.approx_spends == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigInt;

    fn ratio(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    fn pure(s: &str) -> Spend {
        Spend::Pure(s.parse().unwrap())
    }

    fn zcdp(s: &str) -> Spend {
        Spend::Zcdp(s.parse().unwrap())
    }

    fn approx(e: &str, d: &str) -> Spend {
        Spend::Approx { eps: e.parse().unwrap(), delta: d.parse().unwrap() }
    }

    #[test]
    fn pure_history_adds_epsilon() {
        let h = History::of(&[pure("0.1"), pure("0.2"), pure("0.7")]);
        assert_eq!(h.pure(), Some(ratio(1, 1)));
        // ρ of the same: (1/100 + 4/100 + 49/100)/2 = 27/100.
        assert_eq!(h.zcdp(), Some(ratio(27, 100)));
        let d: Delta = "1e-6".parse().unwrap();
        assert_eq!(h.approx_dp(&d).unwrap(), ApproxDp { eps: ratio(1, 1), delta: BigRational::zero() });
        assert!(History::new().is_empty() && !h.is_empty());
    }

    #[test]
    fn pure_and_zcdp_compose_in_rho() {
        let h = History::of(&[pure("0.2"), zcdp("0.01"), zcdp("0.03")]);
        assert_eq!(h.pure(), None);
        // 0.2²/2 + 0.04 = 0.06.
        assert_eq!(h.zcdp(), Some(ratio(6, 100)));
        let d: Delta = "1e-6".parse().unwrap();
        let dp = h.approx_dp(&d).unwrap();
        assert_eq!(dp.eps, epsilon_for(&ratio(6, 100), &d));
        assert_eq!(dp.delta, ratio(1, 1_000_000));
    }

    #[test]
    fn pure_and_approximate_compose_basically() {
        let h = History::of(&[pure("0.5"), approx("1", "1e-7"), approx("0.5", "1e-7")]);
        assert_eq!(h.zcdp(), None);
        let d: Delta = "1e-6".parse().unwrap();
        assert_eq!(h.approx_dp(&d).unwrap(), ApproxDp { eps: ratio(2, 1), delta: ratio(2, 10_000_000) });
    }

    #[test]
    fn zcdp_and_approximate_are_refused() {
        let h = History::of(&[zcdp("0.01"), approx("1", "1e-7")]);
        let d: Delta = "1e-6".parse().unwrap();
        let err = h.approx_dp(&d).unwrap_err();
        assert!(err.to_string().contains("cannot yet compose"), "{err}");
        assert_eq!(h.zcdp(), None);
        assert_eq!(h.pure(), None);
    }
}
