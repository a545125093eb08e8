//! The one ε accountant. Every measurement reports what it spent as exact parts, and the parts
//! compose here and nowhere else:
//! - **sequential** (parts of one release, the queries of a workload): the ε add up (Dwork &
//!   Roth 2014, Thm 3.16);
//! - **parallel** (the `--by` groups, which are disjoint sets of rows): the largest ε counts
//!   (McSherry 2009, Thm 4);
//! - post-processing costs nothing and is not a part.
//!
//! The ledger charges [`Cost::total`] of the whole run, the release's `epsilon` is that same
//! total, and its JSON prints the tree under `accounting`, so what is printed, what is charged
//! and what the mechanisms drew with are one value (docs/DESIGN.md §6).

use num_rational::BigRational;
use num_traits::Zero;
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::epsilon::Epsilon;
use crate::error::Error;
use crate::numeric::exact::rational_to_f64_up;

/// What a measurement cost: one mechanism's ε, or parts composed by a rule.
#[derive(Clone, Debug, PartialEq)]
pub enum Cost {
    /// One mechanism's draw (a noisy sum, a noisy count, one quantile's selection).
    Part { name: String, eps: Epsilon },
    /// Parts computed on the same rows: their ε add up.
    Sequential { name: Option<String>, parts: Vec<Cost> },
    /// Parts computed on disjoint rows: the largest ε is the cost of all of them.
    Parallel { name: Option<String>, parts: Vec<Cost> },
}

impl Cost {
    pub fn part(name: impl Into<String>, eps: &Epsilon) -> Cost {
        Cost::Part { name: name.into(), eps: eps.clone() }
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
            Cost::Part { eps, .. } => Cost::Part { name: label, eps },
            Cost::Sequential { parts, .. } => Cost::Sequential { name: Some(label), parts },
            Cost::Parallel { parts, .. } => Cost::Parallel { name: Some(label), parts },
        }
    }

    /// The exact ε of the whole: a sum over sequential parts, a maximum over parallel ones.
    pub fn total(&self) -> BigRational {
        match self {
            Cost::Part { eps, .. } => eps.as_rational().clone(),
            Cost::Sequential { parts, .. } => {
                parts.iter().fold(BigRational::zero(), |acc, p| acc + p.total())
            }
            Cost::Parallel { parts, .. } => {
                parts.iter().map(Cost::total).max().unwrap_or_else(BigRational::zero)
            }
        }
    }

    /// The total as a budget; a measurement that spent nothing is a bug, not a release.
    pub fn epsilon(&self) -> Result<Epsilon, Error> {
        Epsilon::from_rational(self.total())
            .map_err(|e| Error::internal(format!("a release's cost is not a valid epsilon: {e}")))
    }

    /// Checks that a measurement spent exactly the ε it was given.
    pub fn spends_exactly(&self, eps: &Epsilon) -> Result<(), Error> {
        let total = self.total();
        if &total == eps.as_rational() {
            return Ok(());
        }
        Err(Error::internal(format!(
            "the parts of a release add up to {}/{}, not to its epsilon {}",
            total.numer(),
            total.denom(),
            eps.exact_string()
        )))
    }
}

/// `{"name", "composition", "epsilon", "epsilon_exact", "parts"}`: the printed ε rounded up, the
/// exact one as numerator/denominator.
impl Serialize for Cost {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let total = self.total();
        let mut map = serializer.serialize_map(None)?;
        let (name, composition, parts) = match self {
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
        map.serialize_entry("epsilon", &rational_to_f64_up(&total))?;
        map.serialize_entry("epsilon_exact", &format!("{}/{}", total.numer(), total.denom()))?;
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
        assert!(workload.spends_exactly(&eps("1.1")).is_ok());
        assert!(workload.spends_exactly(&eps("1")).is_err());
        assert!(Cost::sequential(vec![]).epsilon().is_err());
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
