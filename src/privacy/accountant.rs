//! The one accountant. Every measurement reports what it spent as exact parts, each in the
//! currency of its mechanism's guarantee (`currency::Spend`: pure ε, zCDP's ρ, or (ε, δ)), and
//! the parts compose here and nowhere else:
//! - **sequential** (parts of one release, the queries of a workload): ε add up (Dwork & Roth
//!   2014, Thm 3.16, which also covers (ε, δ) parts: (Σε, Σδ)); ρ add up (Bun & Steinke 2016,
//!   Lemma 2.3); where pure and zCDP parts meet, a pure node of total ε counts as ε²/2 in ρ
//!   (ibid., Prop. 1.4);
//! - **parallel** (the `--by` groups, which are disjoint sets of rows): the largest ε, ρ, or ε
//!   and δ each, counts (McSherry 2009, Thm 4; the same argument for ρ and for (ε, δ), since a
//!   neighbour changes one group only);
//! - zCDP and (ε, δ) parts in one tree are refused (docs/DESIGN.md §9.7);
//! - post-processing costs nothing and is not a part.
//!
//! The ledger charges the [`Total`] of the whole run, the release prints that same total, and
//! its JSON prints the tree under `accounting`, so what is printed, what is charged and what the
//! mechanisms drew with are one value (docs/DESIGN.md §6).

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::Zero;
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::contribution::Factor;
use super::currency::Spend;
use super::epsilon::Epsilon;
use super::zcdp::Rho;
use crate::error::Error;
use crate::numeric::exact::rational_to_f64_up;

/// What a measurement cost: one mechanism's spend, or parts composed by a rule.
#[derive(Clone, Debug, PartialEq)]
pub enum Cost {
    /// One mechanism's draw (a noisy sum, a noisy count, one quantile's selection).
    Part { name: String, spend: Spend },
    /// Parts computed on the same rows: they add up.
    Sequential { name: Option<String>, parts: Vec<Cost> },
    /// Parts computed on disjoint rows: the largest is the cost of all of them.
    Parallel { name: Option<String>, parts: Vec<Cost> },
    /// A row-level cost on rows bounded per person (`privacy::contribution`): one person moves
    /// it as `factor` rows would, so its ε counts `factor.pure` times and its ρ `factor.rho`
    /// times (group privacy).
    Person { factor: Factor, inner: Box<Cost> },
}

/// What a tree of costs adds up to, exactly, in the currency of its guarantee.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Total {
    /// ε-DP.
    Pure(BigRational),
    /// ρ-zCDP.
    Zcdp(BigRational),
    /// (ε, δ)-DP.
    Approx { eps: BigRational, delta: BigRational },
}

impl Total {
    fn of(spend: &Spend) -> Total {
        match spend {
            Spend::Pure(e) => Total::Pure(e.as_rational().clone()),
            Spend::Zcdp(r) => Total::Zcdp(r.as_rational().clone()),
            Spend::Approx { eps, delta } => {
                Total::Approx { eps: eps.as_rational().clone(), delta: delta.as_rational().clone() }
            }
        }
    }

    /// ρ of a pure or zCDP total: a pure total ε is (ε²/2)-zCDP.
    fn rho(&self) -> Option<BigRational> {
        match self {
            Total::Pure(e) => Some(e * e / BigInt::from(2)),
            Total::Zcdp(r) => Some(r.clone()),
            Total::Approx { .. } => None,
        }
    }

    /// (ε, δ) of a pure or approximate total.
    fn approx(&self) -> Option<(BigRational, BigRational)> {
        match self {
            Total::Pure(e) => Some((e.clone(), BigRational::zero())),
            Total::Approx { eps, delta } => Some((eps.clone(), delta.clone())),
            Total::Zcdp(_) => None,
        }
    }

    /// Composes two totals, adding (sequential) or taking the larger (parallel) in their
    /// common currency.
    fn compose(self, other: Total, sequential: bool) -> Result<Total, Error> {
        let pick = |a: BigRational, b: BigRational| if sequential { a + b } else { a.max(b) };
        Ok(match (self, other) {
            (Total::Pure(a), Total::Pure(b)) => Total::Pure(pick(a, b)),
            (a @ (Total::Zcdp(_) | Total::Pure(_)), b @ (Total::Zcdp(_) | Total::Pure(_))) => {
                Total::Zcdp(pick(a.rho().unwrap_or_default(), b.rho().unwrap_or_default()))
            }
            (a @ (Total::Approx { .. } | Total::Pure(_)), b @ (Total::Approx { .. } | Total::Pure(_))) => {
                let ((ea, da), (eb, db)) = (a.approx().unwrap_or_default(), b.approx().unwrap_or_default());
                Total::Approx { eps: pick(ea, eb), delta: pick(da, db) }
            }
            _ => return Err(mixed()),
        })
    }

    /// The total as one spend, if it is a valid one (a positive ε, ρ or δ in range).
    pub fn spend(&self) -> Result<Spend, Error> {
        let bad = |e: String| Error::internal(format!("a release's cost is not a valid spend: {e}"));
        Ok(match self {
            Total::Pure(e) => Spend::Pure(Epsilon::from_rational(e.clone()).map_err(bad)?),
            Total::Zcdp(r) => Spend::Zcdp(Rho::from_rational(r.clone()).map_err(bad)?),
            Total::Approx { eps, delta } => Spend::Approx {
                eps: Epsilon::from_rational(eps.clone()).map_err(bad)?,
                delta: super::delta::Delta::from_rational(delta.clone()).map_err(bad)?,
            },
        })
    }
}

fn mixed() -> Error {
    Error::usage(
        "zCDP releases (Gaussian noise) and (epsilon, delta) releases (keys found with --discover) \
         cannot be composed in one release or workload; run them separately",
    )
}

impl Cost {
    /// One pure ε-DP draw.
    pub fn part(name: impl Into<String>, eps: &Epsilon) -> Cost {
        Cost::Part { name: name.into(), spend: Spend::Pure(eps.clone()) }
    }

    /// One draw of any currency.
    pub fn spent(name: impl Into<String>, spend: Spend) -> Cost {
        Cost::Part { name: name.into(), spend }
    }

    pub fn sequential(parts: Vec<Cost>) -> Cost {
        Cost::Sequential { name: None, parts }
    }

    pub fn parallel(parts: Vec<Cost>) -> Cost {
        Cost::Parallel { name: None, parts }
    }

    /// The same cost, labelled (a group's key, a workload query's name).
    pub fn named(self, label: impl Into<String>) -> Cost {
        let label = label.into();
        match self {
            Cost::Part { spend, .. } => Cost::Part { name: label, spend },
            Cost::Sequential { parts, .. } => Cost::Sequential { name: Some(label), parts },
            Cost::Parallel { parts, .. } => Cost::Parallel { name: Some(label), parts },
            Cost::Person { factor, inner } => Cost::Person { factor, inner: Box::new(inner.named(label)) },
        }
    }

    /// A row-level cost as one person's (the identity at [`Factor::ONE`]).
    pub fn per_person(self, factor: Factor) -> Cost {
        if factor == Factor::ONE {
            return self;
        }
        Cost::Person { factor, inner: Box::new(self) }
    }

    /// The exact total of the whole: a sum over sequential parts, a maximum over parallel ones,
    /// in the currency the parts share (pure parts count in ρ next to zCDP ones, and in (ε, 0)
    /// next to approximate ones); an error for zCDP and (ε, δ) parts together.
    pub fn total(&self) -> Result<Total, Error> {
        match self {
            Cost::Part { spend, .. } => Ok(Total::of(spend)),
            Cost::Person { factor, inner } => match inner.total()? {
                Total::Pure(e) => Ok(Total::Pure(e * BigInt::from(factor.pure))),
                Total::Zcdp(r) => Ok(Total::Zcdp(r * BigInt::from(factor.rho))),
                // Group privacy costs (ε, δ) more than a factor (δ grows by k·e^((k−1)ε)):
                // keys found in the data count persons instead (query::discover).
                Total::Approx { .. } => Err(Error::internal("an (epsilon, delta) cost scaled per person")),
            },
            Cost::Sequential { parts, .. } | Cost::Parallel { parts, .. } => {
                let sequential = matches!(self, Cost::Sequential { .. });
                let mut totals = parts.iter().map(Cost::total);
                let Some(first) = totals.next() else { return Ok(Total::Pure(BigRational::zero())) };
                totals.try_fold(first?, |acc, t| acc.compose(t?, sequential))
            }
        }
    }

    /// The total as a spend; a measurement that spent nothing is a bug, not a release.
    pub fn spend(&self) -> Result<Spend, Error> {
        self.total()?.spend()
    }

    /// The total ε of a tree of pure parts (an error otherwise, or if it spent nothing).
    pub fn epsilon(&self) -> Result<Epsilon, Error> {
        match self.spend()? {
            Spend::Pure(e) => Ok(e),
            other => Err(Error::internal(format!("a pure release's cost is {other}"))),
        }
    }

    /// Checks that a measurement spent exactly what it was given, in the same currency.
    pub fn spends_exactly(&self, spend: &Spend) -> Result<(), Error> {
        let total = self.total()?;
        if total == Total::of(spend) {
            return Ok(());
        }
        Err(Error::internal(format!(
            "the parts of a release add up to {}, not to what it was given, {spend}",
            describe(&total)
        )))
    }
}

/// A total as exact n/d text, for messages.
fn describe(total: &Total) -> String {
    let exact = |r: &BigRational| format!("{}/{}", r.numer(), r.denom());
    match total {
        Total::Pure(e) => format!("epsilon {}", exact(e)),
        Total::Zcdp(r) => format!("rho {}", exact(r)),
        Total::Approx { eps, delta } => format!("epsilon {}, delta {}", exact(eps), exact(delta)),
    }
}

/// `{"name", "composition", "epsilon", "epsilon_exact", "parts"}` for pure totals; `rho` and
/// `rho_exact` instead for zCDP ones; `epsilon`, `delta` and their exact forms for (ε, δ). The
/// printed numbers are rounded up, the exact ones numerator/denominator.
impl Serialize for Cost {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let total = self.total().map_err(serde::ser::Error::custom)?;
        let mut map = serializer.serialize_map(None)?;
        let (name, composition, parts) = match self {
            Cost::Person { factor, inner } => {
                // The inner tree, one level down, after the person's total and its factor.
                let exact = |r: &BigRational| format!("{}/{}", r.numer(), r.denom());
                map.serialize_entry("composition", "per person")?;
                map.serialize_entry("rows_factor", &factor.pure)?;
                match &total {
                    Total::Pure(e) => {
                        map.serialize_entry("epsilon", &rational_to_f64_up(e))?;
                        map.serialize_entry("epsilon_exact", &exact(e))?;
                    }
                    Total::Zcdp(r) => {
                        map.serialize_entry("rho_factor", &factor.rho)?;
                        map.serialize_entry("rho", &rational_to_f64_up(r))?;
                        map.serialize_entry("rho_exact", &exact(r))?;
                    }
                    Total::Approx { .. } => {}
                }
                map.serialize_entry("row_level", inner)?;
                return map.end();
            }
            Cost::Part { name, .. } => (Some(name), None, None),
            Cost::Sequential { name, parts } => (name.as_ref(), Some("sequential"), Some(parts)),
            Cost::Parallel { name, parts } => (name.as_ref(), Some("parallel"), Some(parts)),
        };
        if let Some(name) = name {
            map.serialize_entry("name", name)?;
        }
        if let Some(composition) = composition {
            map.serialize_entry("composition", composition)?;
        }
        let exact = |r: &BigRational| format!("{}/{}", r.numer(), r.denom());
        match &total {
            Total::Pure(e) => {
                map.serialize_entry("epsilon", &rational_to_f64_up(e))?;
                map.serialize_entry("epsilon_exact", &exact(e))?;
            }
            Total::Zcdp(r) => {
                map.serialize_entry("rho", &rational_to_f64_up(r))?;
                map.serialize_entry("rho_exact", &exact(r))?;
            }
            Total::Approx { eps, delta } => {
                map.serialize_entry("epsilon", &rational_to_f64_up(eps))?;
                map.serialize_entry("epsilon_exact", &exact(eps))?;
                map.serialize_entry("delta", &rational_to_f64_up(delta))?;
                map.serialize_entry("delta_exact", &exact(delta))?;
            }
        }
        if let Some(parts) = parts {
            map.serialize_entry("parts", parts)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eps(s: &str) -> Epsilon {
        s.parse().unwrap()
    }

    #[test]
    fn sequential_adds_and_parallel_takes_the_largest() {
        let third = eps("1").split(3);
        let release = Cost::sequential(vec![
            Cost::part("count", &third),
            Cost::part("shifted_sum", &third),
            Cost::part("sum_of_squares", &third),
        ]);
        assert_eq!(release.epsilon().unwrap(), eps("1"));
        let groups = Cost::parallel(vec![release.clone().named("a"), Cost::part("b", &eps("0.5"))]);
        assert_eq!(groups.epsilon().unwrap(), eps("1"));
        let workload = Cost::sequential(vec![groups, Cost::part("q", &eps("0.1"))]);
        assert_eq!(workload.epsilon().unwrap(), eps("1.1"));
        assert!(workload.spends_exactly(&Spend::Pure(eps("1.1"))).is_ok());
        assert!(workload.spends_exactly(&Spend::Pure(eps("1"))).is_err());
        assert!(Cost::sequential(vec![]).epsilon().is_err());
    }

    fn rho(s: &str) -> Spend {
        Spend::Zcdp(s.parse().unwrap())
    }

    /// ρ parts add up and parallel ones take the largest; a pure node next to ρ counts as
    /// ε²/2 (its own total, so the printed tree composes from the printed numbers).
    #[test]
    fn rho_composes_and_pure_parts_count_as_half_their_square() {
        let half = Cost::sequential(vec![Cost::spent("a", rho("0.01")), Cost::spent("b", rho("0.01"))]);
        let groups = Cost::parallel(vec![half.clone().named("x"), Cost::spent("y", rho("0.015"))]);
        assert_eq!(groups.spend().unwrap(), rho("0.02"));
        assert!(groups.spends_exactly(&rho("0.02")).is_ok());
        assert!(groups.spends_exactly(&Spend::Pure(eps("0.02"))).is_err(), "the currency counts too");
        // A pure node of total 0.2 (two parts of 0.1) next to ρ: 0.2²/2 = 0.02.
        let pure = Cost::sequential(vec![Cost::part("p", &eps("0.1")), Cost::part("q", &eps("0.1"))]);
        let mixed = Cost::sequential(vec![pure, groups]);
        assert_eq!(mixed.total().unwrap(), Total::Zcdp(BigRational::new(4.into(), 100.into())));
        let json = serde_json::to_value(&mixed).unwrap();
        assert_eq!(
            (json["rho_exact"].as_str(), json["parts"][0]["epsilon_exact"].as_str()),
            (Some("1/25"), Some("1/5"))
        );
    }

    #[test]
    fn approximate_parts_add_epsilon_and_delta_and_refuse_rho() {
        let keys = Cost::spent("keys", Spend::Approx { eps: eps("0.5"), delta: "1e-7".parse().unwrap() });
        let release = Cost::sequential(vec![keys.clone(), Cost::part("groups", &eps("0.5"))]);
        let want = Spend::Approx { eps: eps("1"), delta: "1e-7".parse().unwrap() };
        assert_eq!(release.spend().unwrap(), want);
        let both = Cost::parallel(vec![keys.clone(), keys.clone()]);
        assert_eq!(both.spend().unwrap(), Spend::Approx { eps: eps("0.5"), delta: "1e-7".parse().unwrap() });
        let refused = Cost::sequential(vec![keys, Cost::spent("g", rho("0.1"))]);
        assert!(refused.total().is_err());
        assert!(serde_json::to_value(&refused).is_err());
    }

    #[test]
    fn serialises_the_tree_with_exact_totals() {
        let cost =
            Cost::sequential(vec![Cost::part("bounds", &eps("0.01")), Cost::part("sum", &eps("0.09"))]);
        let json = serde_json::to_value(&cost).unwrap();
        assert_eq!(json["composition"], "sequential");
        assert_eq!(json["epsilon_exact"], "1/10");
        assert_eq!(json["parts"][0]["name"], "bounds");
        assert_eq!(json["parts"][1]["epsilon_exact"], "9/100");
    }
}
