//! The person as the privacy unit (`--privacy-id`): how far bounding each person's rows lets a
//! row-level mechanism protect a person, and what a release states about it.
//!
//! **The transformation.** `data::bound` keeps, of each person's rows (those that passed
//! `--where`), at most `groups` (G) of the `--by` groups they appear in, at most
//! `rows_per_group` (K_g) rows in each, and at most `rows` (K) rows in all, chosen by a keyed
//! hash of the person's id and rows only. Adding or removing one person (with any number of
//! rows) therefore adds or removes at most K of the kept rows, at most K_g of them in any one
//! group and in at most G groups, and changes no other person's kept rows.
//!
//! **The guarantee** (group privacy; Dwork & Roth 2014, Thm 2.2 for ε; Bun & Steinke 2016,
//! Prop. 1.9 for ρ). A release whose mechanisms are ε'-DP (ρ'-zCDP) under one row added or
//! removed is, on the bounded rows, Kε'-DP (K²ρ'-zCDP) under one person added or removed. For
//! one release per `--by` group (each ε'-DP on its own group's rows, the groups disjoint) a
//! person with r_g kept rows in group g moves the whole by Σ r_g·ε' ≤ T·ε', T = min(K, G·K'_g),
//! K'_g = min(K_g, K); in ρ by Σ r_g²·ρ' ≤ K'_g·T·ρ'. So a release of budget ε runs its
//! mechanisms at ε' = ε/[`Factor::pure`] and a Gaussian one at ρ' = ρ/[`Factor::rho`], and every
//! sensitivity it states is the row-level one times that factor (Laplace: Δ₁·T; Gaussian:
//! Δ₂·√(K'_g·T)). The argument holds for every pure or zCDP mechanism in dpstat without
//! looking inside it, which is why the statistics need no person-level code of their own.
//!
//! Under `--neighbours replace` the number of rows is public; with persons it is not (a person
//! has any number of rows), so person-level releases are add-remove only.

use rand::RngCore;
use serde::Serialize;

use num_bigint::BigInt;

use super::epsilon::Epsilon;
use super::laplace::{laplace, Aggregate, Noisy};
use super::permute_and_flip::permute_and_flip;
use crate::numeric::grid::Grid;
use crate::numeric::list;

pub use super::unit::{Bounds, Factor, MAX_BOUND};

/// `--max-rows-per-id auto`: the share of ε spent choosing K, as numerator/denominator.
pub const AUTO_SHARE: (u32, u32) = (1, 10);
/// The quantile of the rows-per-person distribution that K is chosen at, as a/b.
pub const AUTO_QUANTILE: (u128, u128) = (9, 10);

/// The values `--max-rows-per-id auto` chooses among: 1 to 10, then 12, 15, 20, 25, 30, 40,
/// 50, 60, 80, 100 times each power of ten up to [`MAX_BOUND`] (40 values). Few round
/// candidates keep the choice's error small (it grows with the log of their number) and lose
/// little: K = 47 and K = 50 give nearly the same release.
pub fn auto_candidates() -> Vec<u32> {
    let mut out: Vec<u32> = (1..=10).collect();
    let mut decade = 1;
    while decade * 100 <= MAX_BOUND {
        out.extend([12, 15, 20, 25, 30, 40, 50, 60, 80, 100].map(|m| m * decade));
        decade *= 10;
    }
    out
}

/// K for `--max-rows-per-id auto`: a private 0.9-quantile of how many rows each person has
/// (`counts[r − 1]` persons have r rows, the last entry those with more than
/// [`MAX_BOUND`]), so that about nine persons in ten keep all their rows.
///
/// Permute-and-flip (McKenna & Sheldon 2020) over [`auto_candidates`] with the quantile score
/// of Smith (2011): for K, s(K) = |b·c(K) − a·n| where c(K) is the number of persons with at
/// most K rows, n the number of persons and a/b = 9/10. One person added or removed moves c(K)
/// by at most 1 and n by 1, so s by at most max(a, b − a) = 9: the choice is ε-DP with the
/// person as the unit, each person counted once whatever their rows (the rows are grouped by
/// person before this is read, `data::bound`). The same approach as Tumult Analytics' and
/// Google's contribution-bound tuning; its ε is a stated share of the release's. Its rank error
/// is (2·9/ε)·ln(40/β)/10 persons at confidence 1 − β, so it needs many persons to be useful.
pub fn choose_rows(counts: &[u64], eps: &Epsilon, rng: &mut dyn RngCore) -> u32 {
    let (a, b) = AUTO_QUANTILE;
    let n: u128 = counts.iter().map(|&c| u128::from(c)).sum();
    let candidates = auto_candidates();
    let scores: Vec<u128> = candidates
        .iter()
        .map(|&k| {
            let at_most: u128 = counts.iter().take(k as usize).map(|&c| u128::from(c)).sum();
            (b * at_most).abs_diff(a * n)
        })
        .collect();
    let sensitivity = a.max(b - a);
    candidates[permute_and_flip(&scores, sensitivity, eps, rng)]
}

/// `--count-truncated`: the number of persons who had rows dropped by the bounds, with
/// discrete Laplace noise of scale 1/ε (`privacy::laplace`; Canonne, Kamath, Steinke 2020).
///
/// Guarantee: ε-DP with the person as the unit. Sensitivity 1: whether a person's rows were
/// cut depends on that person's rows alone (`data::bound` chooses each person's rows from their
/// own), so adding or removing one person moves the count by at most 1 and changes no one
/// else's term. Persons and not rows: the rows a person loses are unbounded.
pub fn noisy_truncated(persons: u64, eps: &Epsilon, rng: &mut dyn RngCore) -> Noisy<BigInt> {
    laplace(&Aggregate::scalar(i128::from(persons), TRUNCATED_SENSITIVITY, Grid::UNIT), eps, rng)
}

/// Δ of [`noisy_truncated`].
pub const TRUNCATED_SENSITIVITY: i128 = 1;

/// How K was chosen with `--max-rows-per-id auto` (`auto` in the unit's JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AutoRows {
    /// The quantile of rows per person K was chosen at.
    pub quantile: String,
    /// The ε spent choosing (part of the release's), exactly.
    pub epsilon_exact: String,
}

/// What a release states about its privacy unit (`unit` in JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "unit", rename_all = "lowercase")]
pub enum Unit {
    /// One row: what every release protected before `--privacy-id`.
    Row,
    /// One person, named by the values of `privacy_id`, with at most the bounds' rows kept.
    Person {
        privacy_id: Vec<String>,
        max_rows_per_id: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_groups_per_id: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_rows_per_group: Option<u32>,
        /// The factor the row-level budget was multiplied by (see the module).
        factor: u32,
        /// Set for a release of one clamped value per person (`--total-per-id`: `total`,
        /// `--average-per-id`: `average`): one person moves it as one row in each of their
        /// groups, whatever K (`query::per_id`), and `factor` is that.
        #[serde(skip_serializing_if = "Option::is_none")]
        value_per_id: Option<&'static str>,
        /// Set when K was chosen privately (`--max-rows-per-id auto`).
        #[serde(skip_serializing_if = "Option::is_none")]
        auto: Option<AutoRows>,
        /// What became of rows whose id is empty or null: always [`WITHOUT_ID`], a policy
        /// stated, never a count (how many such rows there were is data, and uncharged).
        rows_without_id: &'static str,
    },
}

/// The policy for rows whose id (any of its columns) is empty or null: they are left out,
/// before bounding (`data::bound`). Taken together they would be one pseudo-person whom any
/// real person's id-less rows join, and who would then be protected at a multiple of ε; each
/// row as its own person would protect a person with R id-less rows at Rε. Leaving them out
/// is a public rule of one row (like a filter), so it changes no sensitivity.
pub const WITHOUT_ID: &str = "left out";

impl Unit {
    /// A person-level unit of a release (grouped or not) under `bounds`.
    pub fn person(privacy_id: Vec<String>, bounds: &Bounds, grouped: bool) -> Unit {
        Unit::Person {
            privacy_id,
            max_rows_per_id: bounds.rows,
            max_groups_per_id: grouped.then_some(bounds.groups),
            max_rows_per_group: grouped.then_some(bounds.rows_per_group),
            factor: bounds.factor(grouped).pure,
            value_per_id: None,
            auto: None,
            rows_without_id: WITHOUT_ID,
        }
    }

    /// The unit of a release of one clamped value per person (`value`: `total` or `average`)
    /// under `bounds`: its factor is [`Bounds::one_value_each`]'s.
    pub fn person_values(
        privacy_id: Vec<String>,
        bounds: &Bounds,
        grouped: bool,
        value: &'static str,
    ) -> Unit {
        match Unit::person(privacy_id, bounds, grouped) {
            Unit::Person {
                value_per_id: _,
                factor: _,
                privacy_id,
                max_rows_per_id,
                max_groups_per_id,
                max_rows_per_group,
                auto,
                rows_without_id,
            } => Unit::Person {
                privacy_id,
                max_rows_per_id,
                max_groups_per_id,
                max_rows_per_group,
                factor: bounds.one_value_each(grouped).factor(grouped).pure,
                value_per_id: Some(value),
                auto,
                rows_without_id,
            },
            Unit::Row => Unit::Row,
        }
    }

    /// How the ledger and `dpstat budget` name the unit: `row`, or `person:ID` (the id columns
    /// CSV-joined). A dataset's budget is spent in one unit only.
    pub fn ledger_name(&self) -> String {
        match self {
            Unit::Row => "row".to_string(),
            Unit::Person { privacy_id, .. } => {
                // The same person whatever order the id columns are named in.
                let mut ids = privacy_id.clone();
                ids.sort();
                format!("person:{}", list::join(&ids))
            }
        }
    }

    /// The unit as a title states it after ε and the neighbours (`eps 1, add-remove, per
    /// person (patient), K=5`): None for a row. With `--by` it adds G and K_g, for one value
    /// per person what that value is.
    pub fn title(&self) -> Option<String> {
        let mut title = self.person_title()?;
        if let Unit::Person { value_per_id: Some(value), .. } = self {
            title.push_str(&format!(", one {value} each"));
        }
        Some(title)
    }

    /// [`Unit::title`] without the value per person: what the queries of a workload share.
    pub fn person_title(&self) -> Option<String> {
        let Unit::Person { privacy_id, max_rows_per_id, max_groups_per_id, max_rows_per_group, auto, .. } =
            self
        else {
            return None;
        };
        let mut title = format!("per person ({}), K={max_rows_per_id}", privacy_id.join(", "));
        if auto.is_some() {
            title.push_str(" (auto)");
        }
        if let (Some(g), Some(k)) = (max_groups_per_id, max_rows_per_group) {
            title.push_str(&format!(", G={g}, K_g={k}"));
        }
        Some(title)
    }

    /// One line for text output: None for a row, whose releases look as they always did.
    pub fn line(&self) -> Option<String> {
        match self {
            Unit::Row => None,
            Unit::Person {
                privacy_id, max_rows_per_id, max_groups_per_id, max_rows_per_group, auto, ..
            } => {
                let mut line = format!(
                    "one person (by {}), at most {max_rows_per_id} row{} each{}",
                    privacy_id.join(", "),
                    if *max_rows_per_id == 1 { "" } else { "s" },
                    if auto.is_some() { " (chosen privately: --max-rows-per-id auto)" } else { "" }
                );
                if let (Some(g), Some(k)) = (max_groups_per_id, max_rows_per_group) {
                    line.push_str(&format!(
                        ", in at most {g} group{}, {k} per group",
                        if *g == 1 { "" } else { "s" }
                    ));
                }
                if let Unit::Person { value_per_id: Some(value), .. } = self {
                    line.push_str(&format!(
                        "; one {value} per person{}, clamped: a person moves it as one row",
                        if max_groups_per_id.is_some() { " and group" } else { "" }
                    ));
                }
                line.push_str("; rows without an id are left out");
                Some(line)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_follow_the_three_bounds() {
        let b = |rows, groups, rows_per_group| Bounds { rows, groups, rows_per_group };
        assert_eq!(b(10, 1, 1).factor(false), Factor { pure: 10, rho: 100 });
        // Grouped: T = min(K, G·K'_g), ρ factor K'_g·T.
        assert_eq!(b(10, 3, 2).factor(true), Factor { pure: 6, rho: 12 });
        assert_eq!(b(5, 3, 4).factor(true), Factor { pure: 5, rho: 20 });
        assert_eq!(b(3, 2, 9).factor(true), Factor { pure: 3, rho: 9 }, "K_g above K counts as K");
        assert_eq!(Bounds::default().factor(true), Factor::ONE);
        assert_eq!(b(MAX_BOUND, MAX_BOUND, MAX_BOUND).factor(true).rho, MAX_BOUND * MAX_BOUND);
    }

    /// The ρ factor bounds Σ r_g² over every way a person can spread rows within the bounds.
    #[test]
    fn the_rho_factor_bounds_every_spread_of_rows() {
        for rows in 1..8u32 {
            for groups in 1..5u32 {
                for per in 1..6u32 {
                    let f = Bounds { rows, groups, rows_per_group: per }.factor(true);
                    let per = per.min(rows);
                    // The worst spread fills groups with K'_g rows until K runs out.
                    let (mut left, mut squares, mut total) = (rows, 0, 0);
                    for _ in 0..groups {
                        let r = per.min(left);
                        (left, squares, total) = (left - r, squares + r * r, total + r);
                    }
                    assert_eq!(f.pure, total, "{rows} {groups} {per}");
                    assert!(squares <= f.rho, "{rows} {groups} {per}");
                }
            }
        }
    }

    #[test]
    fn bounds_out_of_range_name_their_flag() {
        let zero = Bounds { rows: 0, ..Bounds::default() };
        assert!(zero.check().unwrap_err().contains("--max-rows-per-id 0"));
        let big = Bounds { groups: MAX_BOUND + 1, ..Bounds::default() };
        assert!(big.check().unwrap_err().contains("--max-groups-per-id"));
    }

    /// The choice lands near the 0.9 quantile on data with many persons, and moves by at most
    /// e^ε in probability between neighbours (one person with 10,000 rows added).
    #[test]
    fn auto_k_is_a_private_quantile_of_rows_per_person() {
        use rand::SeedableRng;
        let mut counts = vec![0u64; MAX_BOUND as usize + 1];
        // 10,000 persons: 1 row (5,000), 2 (3,000), 7 (1,000), 30 (1,000): the 0.9 quantile is 7.
        for (r, c) in [(1, 5000), (2, 3000), (7, 1000), (30, 1000)] {
            counts[r - 1] = c;
        }
        let eps: Epsilon = "1".parse().unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let picks: Vec<u32> = (0..40).map(|_| choose_rows(&counts, &eps, &mut rng)).collect();
        let near = picks.iter().filter(|&&k| (7..30).contains(&k)).count();
        assert!(near >= 38, "{near} of 40 in 7..30: {picks:?}");
        assert_eq!(auto_candidates().len(), 40);
        assert_eq!(auto_candidates().last(), Some(&MAX_BOUND));
        // Neighbours: P(K = k) within e^ε both ways for a few k, estimated on a small dataset.
        let small = |extra: bool| {
            let mut c = vec![0u64; MAX_BOUND as usize + 1];
            c[0] = 6;
            c[2] = 3;
            if extra {
                c[MAX_BOUND as usize] += 1;
            }
            c
        };
        let (a, b) = (small(false), small(true));
        let eps: Epsilon = "0.5".parse().unwrap();
        let trials = 4_000;
        let freq = |c: &[u64], rng: &mut rand_chacha::ChaCha20Rng| {
            let mut f = std::collections::HashMap::<u32, f64>::new();
            for _ in 0..trials {
                *f.entry(choose_rows(c, &eps, rng)).or_default() += 1.0 / trials as f64;
            }
            f
        };
        let (fa, fb) = (freq(&a, &mut rng), freq(&b, &mut rng));
        for k in [1, 2, 3] {
            let (pa, pb) = (fa.get(&k).copied().unwrap_or(0.0), fb.get(&k).copied().unwrap_or(0.0));
            if pa > 0.02 && pb > 0.02 {
                // e^0.5 ≈ 1.65, with room for sampling error.
                assert!(pa / pb < 1.65 * 1.3 && pb / pa < 1.65 * 1.3, "k {k}: {pa} vs {pb}");
            }
        }
    }

    #[test]
    fn units_name_themselves() {
        assert_eq!(serde_json::to_value(Unit::Row).unwrap(), serde_json::json!({"unit": "row"}));
        let person = Unit::person(vec!["id".into()], &Bounds { rows: 3, groups: 2, rows_per_group: 1 }, true);
        let json = serde_json::to_value(&person).unwrap();
        assert_eq!(json["unit"], "person");
        assert_eq!(json["factor"], 2);
        assert_eq!(person.ledger_name(), "person:id");
        let both = |ids: [&str; 2]| Unit::person(ids.map(String::from).to_vec(), &Bounds::default(), false);
        assert_eq!(both(["b", "a"]).ledger_name(), both(["a", "b"]).ledger_name());
        assert!(person.line().unwrap().contains("at most 3 rows each, in at most 2 groups, 1 per group"));
        assert_eq!(json["rows_without_id"], "left out", "the policy, never a count");
        assert!(person.line().unwrap().ends_with("; rows without an id are left out"));
    }
}
