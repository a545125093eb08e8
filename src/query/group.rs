//! **`--by COL --keys k1,k2,…`** — one release per public key, plus one for `other` (rows whose
//! key is not listed), each at the full ε, charged once.
//!
//! The keys come from the flag, never from the data. A row's group is a deterministic function
//! of the row (its trimmed key cell), so the groups partition the rows.
//!
//! - add-remove: a row added or removed belongs to exactly one group, so only that group's
//!   aggregate changes, by at most the query's own Δ (count 1; sum max(|L|, |U|); histogram 1;
//!   each part of mean and variance its own Δ). Releasing every group with the noise of the full
//!   ε is ε-DP for the whole set of groups: parallel composition (McSherry 2009, "Privacy
//!   Integrated Queries", Thm 4; Dwork & Roth 2014, §2.3).
//! - replace: a changed row can change its key, leaving group A (a removal, for A) and entering
//!   group B (an addition, for B). With each group's single-query replace Δ the release would
//!   cost 2ε, not ε. dpstat keeps the charge at ε and accounts for the move in the sensitivity
//!   instead: every group's noise has scale Δ₁/ε, where Δ₁ is the L1 sensitivity of the vector
//!   of all groups' aggregates (the Laplace mechanism on that vector, Dwork, McSherry, Nissim,
//!   Smith 2006):
//!   - count: Δ₁ = 2 (one group −1, another +1; a change within a group moves no count);
//!   - sum: Δ₁ = 2·max(|L|, |U|) (a removal and an addition; >= U − L, a change within a group);
//!   - histogram: Δ₁ = 2, as without groups: each row lies in exactly one (group, bin) cell;
//!   - quantile and median, level q = a/b: permute-and-flip is not a Laplace vector,
//!     but the same accounting holds. Each group's selection with score sensitivity Δu at ε is
//!     (ε·d/Δu)-DP against a change that moves that group's scores by at most d (the mechanism
//!     only sees ε/(2Δu)), and the groups' selections are independent, so their losses add. A
//!     row moving from A to B moves A's scores by at most max(a, b − a) (a removal) and B's by
//!     as much (an addition), and a change inside one group moves its scores by at most b. So
//!     each group's Δu is max(b, 2·max(a, b − a)) = 2·max(a, b − a): 2 for the median (as
//!     without groups), 18 for q = 0.9 (against 10 without groups);
//!   - mean, variance, covariance and regress: refused. They divide by the group's size, which
//!     is private under replace (rows move between groups), so the public-n construction does
//!     not apply; use `--neighbours add-remove`, where the noisy per-group count is part of the
//!     release.
//!
//! With `--noise gaussian` the same vector of all groups' aggregates gets discrete Gaussian
//! noise scaled to its **L2** sensitivity Δ₂ (ρ-zCDP, Canonne, Kamath, Steinke 2020, Thm 14;
//! parallel composition under add-remove holds for ρ too, each neighbour changing one group):
//! - add-remove: one group's own Δ₂ (count 1; sum max(|L|, |U|); histogram 1; each part of mean,
//!   variance, covariance and regress its own scalar Δ);
//! - replace: count Δ₂² = 2 (−1 and +1 in two groups); sum Δ₂² = max(2·max(|L|, |U|)², (U − L)²)
//!   (a removal and an addition, or a change within one group, which can move its sum by
//!   U − L > √2·max(|L|, |U|) when L < 0 < U); histogram Δ₂² = 2 (two (group, bin) cells).
//!
//! `--closed` declares the keys the whole domain: there is no group `other`, and a row whose key
//! is not listed is invalid input (`--invalid`: refused, dropped, or counted under the listed
//! key V). None of the sensitivities above changes. A kept row still lies in exactly one group
//! (an imputed one in V's, a function of the row alone), so a row added or removed moves one
//! group and a changed row leaves at most one group and enters at most one; a dropped row lies in
//! no group, which only an added or removed row can do (`--invalid skip` is refused under
//! replace). The group `other` that is no longer released is one the declaration says is always
//! empty: leaving it out is post-processing of the domain, not a change to any released group.
//!
//! Filters (`--where` and a workload query's `where`) are applied first, by the same fold
//! (`data::route`). The groups' costs compose in parallel in the accountant
//! (`privacy::accountant`): the whole costs the largest group's ε, which is ε.

use crate::privacy::unit::Neighbours;

/// Δ of one group's count: 1 under add-remove; 2 under replace (the L1 sensitivity across the
/// groups, see the module docs).
pub fn count_sensitivity(neighbours: Neighbours) -> i128 {
    match neighbours {
        Neighbours::AddRemove => 1,
        Neighbours::Replace => 2,
    }
}

/// Δu of one group's quantile scores, from the statistic's own Δu without groups under each
/// unit: the same under add-remove; under replace the larger of a change inside a group and a
/// row moving between two (a removal and an addition), see the module docs.
pub fn score_sensitivity(add_remove: u128, replace: u128, neighbours: Neighbours) -> u128 {
    match neighbours {
        Neighbours::AddRemove => add_remove,
        Neighbours::Replace => replace.max(2 * add_remove),
    }
}

/// Δ₂² of one group's count: 1 under add-remove; 2 under replace (the vector of group counts
/// moves by −1 in one group and +1 in another).
pub fn count_l2_squared(neighbours: Neighbours) -> i128 {
    match neighbours {
        Neighbours::AddRemove => 1,
        Neighbours::Replace => 2,
    }
}

/// The wording of the composition in every grouped release.
/// The composition of a grouped release per person (`--privacy-id`).
pub const PER_PERSON: &str = "per person: a person's kept rows fall in at most --max-groups-per-id groups, at most \
     --max-rows-per-group in each and --max-rows-per-id in all, so together they move the groups' releases as \
     rows_factor rows would; every group is released at epsilon divided by rows_factor (rho by rho_factor) on the \
     bounded rows, and the whole costs epsilon, charged once";

pub fn composition_note(neighbours: Neighbours) -> &'static str {
    match neighbours {
        Neighbours::AddRemove => {
            "parallel composition: the groups are disjoint (each row is in exactly one), so every group is \
             released with the full epsilon and the total cost is epsilon, charged once"
        }
        Neighbours::Replace => {
            "parallel composition: the groups are disjoint, so every group is released with the full epsilon \
             and the total cost is epsilon, charged once; under replace a changed row can leave one group \
             and enter another, so each group's sensitivity is the L1 sensitivity across all groups \
             (count 2, sum 2*max(|L|,|U|), histogram 2, quantile scores 2*max(a, b-a) for q = a/b), or with \
             Gaussian noise the L2 sensitivity (count sqrt(2), sum max(sqrt(2)*max(|L|,|U|), U-L), histogram \
             sqrt(2))"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::{InvalidPolicy, NumberCell};
    use crate::numeric::bins::Keys;
    use crate::numeric::bounds::{Bounds, Finite};
    use crate::query::histogram;
    use crate::query::mean::{MeanAggregate, MeanSpec};
    use crate::query::options::Level;
    use crate::query::quantile::{Candidates, QuantileFold};
    use crate::query::sum::tests::{awkward_value, bounds_and_eps, mechanisms};
    use crate::query::sum::SumSpec;
    use crate::query::variance::VarianceSpec;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A row: its key (0..4; keys "0","1","2" are listed, the rest go to `other`) and value.
    type Row = (usize, f64);

    fn keys() -> Keys {
        "0,1,2".parse().unwrap()
    }

    fn group_of(k: &Keys, key: usize) -> usize {
        k.index(key.to_string().as_bytes())
    }

    /// Per-group vectors of aggregates (one entry per group), from the rows.
    fn by_group<T>(rows: &[Row], f: impl Fn(&[f64]) -> T) -> Vec<T> {
        let k = keys();
        (0..k.groups())
            .map(|g| {
                let values: Vec<f64> =
                    rows.iter().filter(|(key, _)| group_of(&k, *key) == g).map(|(_, x)| *x).collect();
                f(&values)
            })
            .collect()
    }

    fn l1(a: &[i128], b: &[i128]) -> i128 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
    }

    /// Squared L2 distance, exact (each difference is at most 2^64 units here).
    fn l2_squared(a: &[i128], b: &[i128]) -> i128 {
        a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
    }

    fn row() -> impl Strategy<Value = Row> {
        (0usize..5, awkward_value())
    }

    /// Neighbouring datasets: (add-remove neighbours, replace neighbours). The replacement
    /// changes the key too, so the row can move between groups.
    fn neighbours_of(rows: &[Row], other: Row, i: usize) -> (Vec<Vec<Row>>, Vec<Row>) {
        let mut removed = rows.to_vec();
        removed.remove(i);
        let mut added = rows.to_vec();
        added.push(other);
        let mut changed = rows.to_vec();
        changed[i] = other;
        (vec![removed, added], changed)
    }

    proptest! {
        /// Count, sum and histogram by group: under replace a row moved between groups moves
        /// the vector of group aggregates by at most the declared Δ in L1, so one noise of
        /// scale Δ/ε per group is ε-DP; under add-remove only one group changes, by at most Δ.
        #[test]
        fn a_row_moved_between_groups_is_covered_by_the_declared_sensitivity(
            (bounds, eps) in bounds_and_eps(),
            rows in proptest::collection::vec(row(), 1..40),
            other in row(),
            at in any::<prop::sample::Index>(),
        ) {
            let i = at.index(rows.len());
            let (add_remove, changed) = neighbours_of(&rows, other, i);

            // Counts.
            let counts = |r: &[Row]| by_group(r, |v| v.len() as i128);
            prop_assert!(l1(&counts(&changed), &counts(&rows)) <= count_sensitivity(Neighbours::Replace));
            prop_assert!(l2_squared(&counts(&changed), &counts(&rows)) <= count_l2_squared(Neighbours::Replace));
            for n in &add_remove {
                let (a, b) = (counts(n), counts(&rows));
                prop_assert!(a.iter().zip(&b).filter(|(x, y)| x != y).count() <= 1);
                prop_assert!(l1(&a, &b) <= count_sensitivity(Neighbours::AddRemove));
                prop_assert!(l2_squared(&a, &b) <= count_l2_squared(Neighbours::AddRemove));
            }

            // Sums.
            for mechanism in mechanisms(&eps) {
                if let Ok(spec) = SumSpec::with_groups(bounds, Neighbours::Replace, &mechanism, true) {
                    let sums = |r: &[Row]| by_group(r, |v| spec.sum(v.iter().copied()).value);
                    prop_assert!(l1(&sums(&changed), &sums(&rows)) <= spec.sensitivity());
                    prop_assert!(l2_squared(&sums(&changed), &sums(&rows)) <= spec.l2_squared());
                    prop_assert!(spec.sensitivity() >= spec.bounds.width_units());
                }
                if let Ok(spec) = SumSpec::with_groups(bounds, Neighbours::AddRemove, &mechanism, true) {
                    let sums = |r: &[Row]| by_group(r, |v| spec.sum(v.iter().copied()).value);
                    for n in &add_remove {
                        let (a, b) = (sums(n), sums(&rows));
                        prop_assert!(a.iter().zip(&b).filter(|(x, y)| x != y).count() <= 1);
                        prop_assert!(l1(&a, &b) <= spec.sensitivity());
                        prop_assert!(l2_squared(&a, &b) <= spec.l2_squared());
                    }
                }
            }

            // Histograms (3 bins) by group: the concatenated vector of all groups' bins.
            let b = Bounds::new(Finite::from_f64(-100.0).unwrap(), Finite::from_f64(1e6).unwrap()).unwrap();
            let bins = crate::numeric::bins::Bins::new(b, 3);
            let hist = |r: &[Row], n: Neighbours| -> (Vec<i128>, i128, i128) {
                let per_group = by_group(r, |v| {
                    histogram::aggregate(histogram::count_into(3, v.iter().copied(), |x| bins.index(x)), n)
                });
                let (delta, delta2) = (per_group[0].sensitivity, per_group[0].l2_squared);
                (per_group.into_iter().flat_map(|a| a.value).collect(), delta, delta2)
            };
            let (base, delta, delta2) = hist(&rows, Neighbours::Replace);
            prop_assert!(l1(&hist(&changed, Neighbours::Replace).0, &base) <= delta);
            prop_assert!(l2_squared(&hist(&changed, Neighbours::Replace).0, &base) <= delta2);
            let (base, delta, delta2) = hist(&rows, Neighbours::AddRemove);
            for n in &add_remove {
                prop_assert!(l1(&hist(n, Neighbours::AddRemove).0, &base) <= delta);
                prop_assert!(l2_squared(&hist(n, Neighbours::AddRemove).0, &base) <= delta2);
            }
        }

        /// Mean and variance by group (add-remove only): adding or removing a row changes the
        /// parts of one group only, each by at most its own Δ.
        #[test]
        fn mean_and_variance_parts_change_in_one_group_only(
            (bounds, eps) in bounds_and_eps(),
            rows in proptest::collection::vec(row(), 1..30),
            other in row(),
            at in any::<prop::sample::Index>(),
        ) {
            let (add_remove, _) = neighbours_of(&rows, other, at.index(rows.len()));
            for mechanism in mechanisms(&eps) {
            if let Ok(spec) = MeanSpec::new(bounds, Neighbours::AddRemove, &mechanism) {
                let parts = |r: &[Row]| by_group(r, |v| match spec.mean(v.iter().copied()) {
                    MeanAggregate::AddRemove { shifted_sum, count, .. } => vec![shifted_sum, count],
                    MeanAggregate::Replace { sum, .. } => vec![sum],
                });
                check_one_group(&parts(&rows), &add_remove.iter().map(|n| parts(n)).collect::<Vec<_>>())?;
            }
            if let Ok(spec) = VarianceSpec::new(bounds, Neighbours::AddRemove, &mechanism) {
                let parts = |r: &[Row]| by_group(r, |v| {
                    let a = spec.variance(v.iter().copied());
                    a.count.into_iter().chain([a.shifted_sum, a.squares]).collect::<Vec<_>>()
                });
                check_one_group(&parts(&rows), &add_remove.iter().map(|n| parts(n)).collect::<Vec<_>>())?;
            }
            }
        }
    }

    proptest! {
        /// Quantile scores by group. Add-remove: one group's scores change, by at most the
        /// ungrouped Δu. Replace: the groups' selections are independent, so their privacy losses
        /// add; the largest change of each group's scores, summed over the groups, is at most
        /// the grouped Δu.
        #[test]
        fn quantile_scores_by_group_move_by_at_most_the_grouped_sensitivity(
            rows in proptest::collection::vec(row(), 1..40),
            other in row(),
            at in any::<prop::sample::Index>(),
            level in prop_oneof![Just("0.5"), Just("0.9"), Just("0.01"), Just("0.333")],
        ) {
            let level: Level = level.parse().unwrap();
            let b = Bounds::new(Finite::from_f64(-1000.0).unwrap(), Finite::from_f64(1e6).unwrap()).unwrap();
            let candidates = Arc::new(Candidates::linear(b, 51));
            let scores = |r: &[Row]| by_group(r, |v| {
                let cell = NumberCell { index: 0, invalid: InvalidPolicy::Error };
                let mut fold = QuantileFold::new(Arc::clone(&candidates), cell);
                v.iter().for_each(|&x| fold.add(x));
                fold.sorted().scores(&level)
            });
            let moved = |a: &[Vec<i128>], b: &[Vec<i128>]| -> Vec<u128> {
                a.iter().zip(b).map(|(x, y)| x.iter().zip(y).map(|(s, t)| s.abs_diff(*t)).max().unwrap_or(0)).collect()
            };
            let (add_remove, changed) = neighbours_of(&rows, other, at.index(rows.len()));
            let base = scores(&rows);
            let ar = level.score_sensitivity(Neighbours::AddRemove);
            let rep = level.score_sensitivity(Neighbours::Replace);
            for n in &add_remove {
                let m = moved(&scores(n), &base);
                prop_assert!(m.iter().filter(|&&d| d > 0).count() <= 1);
                prop_assert!(m.iter().sum::<u128>() <= score_sensitivity(ar, rep, Neighbours::AddRemove));
            }
            let total: u128 = moved(&scores(&changed), &base).iter().sum();
            prop_assert!(total <= score_sensitivity(ar, rep, Neighbours::Replace), "{} > grouped Δu", total);
        }
    }

    fn check_one_group(
        base: &[Vec<crate::privacy::laplace::Aggregate<i128>>],
        others: &[Vec<Vec<crate::privacy::laplace::Aggregate<i128>>>],
    ) -> Result<(), TestCaseError> {
        for other in others {
            let mut changed_groups = 0;
            for (b, o) in base.iter().zip(other) {
                let mut changed = false;
                for (pb, po) in b.iter().zip(o) {
                    let moved = pb.value - po.value;
                    prop_assert!(moved.abs() <= pb.sensitivity);
                    prop_assert!(moved * moved <= pb.l2_squared);
                    changed |= pb.value != po.value;
                }
                changed_groups += changed as usize;
            }
            prop_assert!(changed_groups <= 1, "{} groups changed", changed_groups);
        }
        Ok(())
    }
}
