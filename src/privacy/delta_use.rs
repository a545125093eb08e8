//! How a budget's δ_total is used, fixed when the budget is recorded
//! (`--budget-delta-for zcdp|thresholds|split`; docs/DESIGN.md §9.7).
//!
//! - **Why it is fixed up front** (issue 35, item 3). After pure releases an analyst may choose,
//!   from what they showed, between a ρ continuation (Gaussian noise) and an (ε, δ) one (keys
//!   found in the data). The transcripts with a ρ charge have the δ of the Rényi filter, those
//!   with an (ε, δ) charge the δ of basic composition, and the two add up: a budget that let
//!   each kind use all of δ_total was not (ε_total, δ_total)-DP against that analyst (an exact
//!   computation found 1.04e-6 at δ_total = 1e-6). A choice made from the history would be the
//!   same gap, so the split is a property of the budget.
//! - **Guarantee.** With δ_Z + δ_A = δ_total, a dataset whose ρ charges are admitted by the
//!   Rényi rule at (ε_total, δ_Z) ([`super::renyi`]), whose (ε, δ) charges are admitted with
//!   Σε <= ε_total and Σδ <= δ_A, and which never holds both, is (ε_total, δ_total)-DP for its
//!   privacy unit against an analyst who chooses every charge after the releases before it.
//!   Proof (docs/DESIGN.md §9.7): split the transcripts into those with a ρ charge and the
//!   rest; on the first set the interaction equals one stopped before any (ε, δ) charge, a
//!   Rényi filter that is (ε_total, δ_Z)-DP (Feldman & Zrnic 2021 with Canonne, Kamath, Steinke
//!   2020, Cor. 13); on the rest it equals one stopped before any ρ charge, a basic-composition
//!   filter that is (ε_total, δ_A)-DP (Dwork & Roth 2014, Thm 3.16; with parameters chosen
//!   adaptively, Rogers, Roth, Ullman, Vadhan 2016); for any set S of transcripts,
//!   P(S) − e^ε_total·Q(S) is the sum of the two parts', at most δ_Z + δ_A.
//! - **The uses.** `zcdp`: δ_Z = δ_total, and (ε, δ) charges are refused; `thresholds`:
//!   δ_A = δ_total, and ρ charges are refused; `split`: δ_total/2 each, exactly. `split` is the
//!   default of a new budget with a δ (every kind of release can still be charged), and how a
//!   budget recorded before this choice existed reads (the conservative reading).

use std::fmt;
use std::str::FromStr;

use num_rational::BigRational;
use num_traits::Zero;

use super::currency::History;
use super::delta::Delta;

/// Which releases a budget's δ_total pays for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeltaUse {
    /// All of it for zCDP releases (`--noise gaussian`): (ε, δ) charges are refused.
    Zcdp,
    /// All of it for (ε, δ) releases of thresholded keys (`--discover`): ρ charges are refused.
    Thresholds,
    /// Half for each, exactly.
    #[default]
    Split,
}

impl DeltaUse {
    /// The name in the flag and in the budget record.
    pub fn name(self) -> &'static str {
        match self {
            DeltaUse::Zcdp => "zcdp",
            DeltaUse::Thresholds => "thresholds",
            DeltaUse::Split => "split",
        }
    }

    /// δ_Z: the δ at which the Rényi rule measures ρ histories; None when ρ charges are refused.
    pub fn zcdp_delta(self, total: &Delta) -> Option<Delta> {
        match self {
            DeltaUse::Zcdp => Some(total.clone()),
            DeltaUse::Thresholds => None,
            DeltaUse::Split => Some(total.halved()),
        }
    }

    /// δ_A: the most Σδ of the (ε, δ) charges may reach (0 when they are refused).
    pub fn thresholds_delta(self, total: &Delta) -> BigRational {
        match self {
            DeltaUse::Zcdp => BigRational::zero(),
            DeltaUse::Thresholds => total.as_rational().clone(),
            DeltaUse::Split => total.halved().as_rational().clone(),
        }
    }

    /// Why `history` (with the charge asked for) cannot be admitted under this use, whatever
    /// its amounts: a currency the use gives no δ to.
    pub fn refusal(self, history: &History) -> Option<String> {
        let (kind, other) = match self {
            DeltaUse::Zcdp if history.has_approx() => {
                ("zCDP releases", "keys found in the data (--discover)")
            }
            DeltaUse::Thresholds if history.has_zcdp() => {
                ("keys found in the data", "zCDP releases (--noise gaussian)")
            }
            _ => return None,
        };
        Some(format!(
            "its budget's delta is all for {kind} (--budget-delta-for {}), so {other} cannot be \
             charged to it; charge them to another --dataset, or share the delta with --budget TOTAL \
             --budget-delta D --budget-delta-for split --change-budget",
            self.name()
        ))
    }

    /// How `dpstat budget` states the use of δ_total.
    pub fn describe(self, total: &Delta) -> String {
        match self {
            DeltaUse::Zcdp => "all for zCDP releases (--noise gaussian)".to_string(),
            DeltaUse::Thresholds => "all for keys found in the data (--discover)".to_string(),
            DeltaUse::Split => {
                format!(
                    "{} for zCDP releases and {} for keys found in the data",
                    total.halved(),
                    total.halved()
                )
            }
        }
    }
}

impl fmt::Display for DeltaUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DeltaUse {
    type Err = String;

    fn from_str(s: &str) -> Result<DeltaUse, String> {
        match s {
            "zcdp" => Ok(DeltaUse::Zcdp),
            "thresholds" => Ok(DeltaUse::Thresholds),
            "split" => Ok(DeltaUse::Split),
            _ => Err(format!(
                "'{}' is not a use of the budget's delta: write zcdp (all for --noise gaussian), \
                 thresholds (all for --discover) or split (half each)",
                crate::error::shown(s, 40)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::currency::Spend;

    const USES: [DeltaUse; 3] = [DeltaUse::Zcdp, DeltaUse::Thresholds, DeltaUse::Split];

    /// The two tracks' δ add up to δ_total exactly, for every use (a refused track counts 0).
    #[test]
    fn the_two_shares_add_up_to_the_budget_delta() {
        for d in ["1e-6", "1e-300", "3/7", "0.999"] {
            let total: Delta = d.parse().unwrap();
            for usage in USES {
                let z = usage.zcdp_delta(&total).map_or_else(BigRational::zero, |z| z.as_rational().clone());
                assert_eq!(z + usage.thresholds_delta(&total), *total.as_rational(), "{usage} at {d}");
            }
        }
        let half = DeltaUse::Split.zcdp_delta(&"1e-6".parse().unwrap()).unwrap();
        assert_eq!(half.exact_string(), "1/2000000");
    }

    #[test]
    fn names_read_back_and_others_are_refused() {
        for usage in USES {
            assert_eq!(usage.name().parse::<DeltaUse>(), Ok(usage));
        }
        let err = "gaussian".parse::<DeltaUse>().unwrap_err();
        assert!(err.contains("zcdp") && err.contains("thresholds") && err.contains("split"), "{err}");
        assert_eq!(DeltaUse::default(), DeltaUse::Split);
    }

    /// Each use refuses exactly the currency it gives no δ to.
    #[test]
    fn each_use_refuses_the_currency_it_gives_nothing() {
        let rho = History::of(&[Spend::Pure("0.5".parse().unwrap()), Spend::Zcdp("0.01".parse().unwrap())]);
        let approx = Spend::Approx { eps: "0.1".parse().unwrap(), delta: "1e-7".parse().unwrap() };
        let approx = History::of(&[approx]);
        let pure = History::of(&[Spend::Pure("0.5".parse().unwrap())]);
        assert!(DeltaUse::Zcdp.refusal(&rho).is_none() && DeltaUse::Zcdp.refusal(&approx).is_some());
        assert!(
            DeltaUse::Thresholds.refusal(&approx).is_none() && DeltaUse::Thresholds.refusal(&rho).is_some()
        );
        for usage in USES {
            assert!(usage.refusal(&pure).is_none());
        }
        assert!(DeltaUse::Split.refusal(&rho).is_none() && DeltaUse::Split.refusal(&approx).is_none());
    }

    /// Issue 35's strategy at the admission rule, under (1.3, 1e-6): 42 pure charges of 0.03, then
    /// ρ or (ε 0.04, δ). All of δ for zCDP admits the ρ of 0.0207606 that the review found, and
    /// no (ε, δ) charge; all for thresholds the (0.04, 1e-6) charge and no ρ; split (the default)
    /// measures ρ at δ/2 (α* = 19: ρ 0.0185531 admitted, 0.0185532 refused) and admits Σδ up to
    /// δ/2. tests/accounting.rs runs the same through the binary and bounds the realised loss.
    #[test]
    fn the_review_strategy_fits_each_use_of_delta_alone() {
        use crate::privacy::ledger::admits;
        let total: BigRational = crate::numeric::exact::parse_decimal("1.3").unwrap();
        let delta: Delta = "1e-6".parse().unwrap();
        let pure = vec![Spend::Pure("0.03".parse().unwrap()); 42];
        let before = History::of(&pure);
        let fits = |spend: Spend, usage: DeltaUse| admits(&before, &spend, &total, Some(&delta), usage, "d");
        let rho = |r: &str| Spend::Zcdp(r.parse().unwrap());
        let approx = |d: &str| Spend::Approx { eps: "0.04".parse().unwrap(), delta: d.parse().unwrap() };
        assert!(fits(rho("0.0207606"), DeltaUse::Zcdp).is_ok());
        assert!(fits(rho("0.0207607"), DeltaUse::Zcdp).is_err());
        assert!(fits(approx("1e-6"), DeltaUse::Zcdp).unwrap_err().contains("--budget-delta-for zcdp"));
        assert!(fits(approx("1e-6"), DeltaUse::Thresholds).is_ok());
        assert!(fits(rho("0.0001"), DeltaUse::Thresholds)
            .unwrap_err()
            .contains("--budget-delta-for thresholds"));
        assert!(fits(rho("0.0207606"), DeltaUse::Split).is_err());
        assert!(fits(rho("0.0185531"), DeltaUse::Split).is_ok());
        let over = fits(rho("0.0185532"), DeltaUse::Split).unwrap_err();
        assert!(
            over.contains("at order 19") && over.contains("(1.3, 0.0000005 for zCDP) allows there"),
            "{over}"
        );
        let over = fits(approx("1e-6"), DeltaUse::Split).unwrap_err();
        assert!(over.contains("above the budget's delta 0.0000005 (half of its delta"), "{over}");
        assert!(fits(approx("5e-7"), DeltaUse::Split).is_ok());
        // Without a δ, neither kind: the use of a δ that is not there changes nothing.
        for usage in USES {
            assert!(admits(&before, &rho("0.0001"), &total, None, usage, "d")
                .unwrap_err()
                .contains("delta 0"));
            assert!(admits(&before, &approx("1e-9"), &total, None, usage, "d").is_err());
        }
    }
}
