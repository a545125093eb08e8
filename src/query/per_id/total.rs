//! **total per person** (`--total-per-id L,U`, workload `total_per_id = [L, U]`): each
//! person's total in a group, over their kept rows, clamped to [L, U]; then `sum` releases the
//! sum of those totals and `mean` their mean over persons (the average total per person).
//!
//! Privacy unit: one person (add-remove; `--privacy-id` refuses replace). Guarantee: ε-DP
//! (ρ-zCDP with `--noise gaussian`) per person.
//!
//! Sensitivity, in grid units of the bounds snapped outwards (derived in docs/DESIGN.md
//! §3.10, "One value per person"): a person is one clamped total t ∈ [L, U] in each group they have kept rows in,
//! and no one else's total depends on their rows (bounding chooses a person's rows from their
//! own, `data::bound`). Adding or removing them moves
//! - the sum of totals by |t| ≤ max(|L|, |U|) per group: Δ₁ = Δ₂ = max(|L|, |U|), with no
//!   factor K: the clamp, not the rows, bounds it (unlike `--max-rows-per-id` alone, whose sum
//!   moves by K·max(|L|, |U|));
//! - the mean's midpoint-shifted sum Σ (t − m), m = (L + U)/2, by at most (U − L)/2, and its
//!   count of persons by 1: the mean is m + S̃ / max(1, C̃) with ε split in two halves, the
//!   add-remove mean of `query::mean` over persons instead of rows.
//!
//! With `--by`, one person moves at most min(G, K) groups, each by the above: the release is
//! divided by that factor ([`super::pseudo_bounds`]; Dwork & Roth 2014, Thm 2.2, group privacy
//! over the groups one person's values fall in, as for rows). Noise: discrete Laplace of scale
//! Δ/ε (Canonne, Kamath & Steinke 2020), or discrete Gaussian of variance Δ₂²/(2ρ) (ibid.,
//! Thm 14). The same clamp as BigQuery's `contribution_bounds_per_group` for SUM and
//! PipelineDP's `min_sum_per_partition`/`max_sum_per_partition` (Wilson et al. 2020, §3).

use crate::error::Error;
use crate::numeric::grid::GridBounds;

/// What a sum of totals states it did, first among its post-processing.
pub const NOTE_SUM: &str =
    "each person's total (over their kept rows) clamped to --total-per-id, then summed";

/// What a mean of totals states it did.
pub const NOTE_MEAN: &str =
    "each person's total (over their kept rows) clamped to --total-per-id: the mean is over persons";

/// `--total-per-id` clamps each person's total, and `--lower`/`--upper` would clamp each row:
/// one clamp, stated once.
/// `row_bounds`: whether `--lower`, `--upper` or `--bounds-eps` was given.
pub fn refuse_row_bounds(kind: &str, row_bounds: bool) -> Result<(), Error> {
    if row_bounds {
        return Err(Error::usage(format!(
            "{kind} --total-per-id L,U clamps each person's total and takes the place of              --lower/--upper (and --bounds-eps): give one of them"
        )));
    }
    Ok(())
}

/// A person's value: the sum of their values' units, clamped to the bounds.
#[inline]
pub fn person_value(units: i128, bounds: &GridBounds) -> i128 {
    units.clamp(bounds.lower, bounds.upper)
}

#[cfg(test)]
mod tests {
    use super::super::{PerIdFold, Reduce};
    use crate::data::cell::{InvalidPolicy, NumberCell};
    use crate::numeric::bounds::{Bounds, Finite};
    use crate::privacy::noise::Mechanism;
    use crate::privacy::unit::Neighbours;
    use crate::query::mean::{MeanAggregate, MeanSpec};
    use crate::query::sum::SumSpec;
    use proptest::prelude::*;

    const CELL: NumberCell = NumberCell { index: 0, invalid: InvalidPolicy::Error };

    fn persons() -> impl Strategy<Value = Vec<Vec<f64>>> {
        let value = prop_oneof![-1e4f64..1e4, Just(0.0), Just(1e300), Just(-1e300), Just(5e-324)];
        proptest::collection::vec(proptest::collection::vec(value, 1..30), 0..12)
    }

    fn bounds() -> impl Strategy<Value = Bounds> {
        (-500.0f64..500.0, 0.5f64..800.0).prop_map(|(l, w)| {
            Bounds::new(Finite::from_f64(l).unwrap(), Finite::from_f64(l + w).unwrap()).unwrap()
        })
    }

    /// The dataset and every neighbour: one person removed, or one person (any rows) added.
    fn neighbours_of(persons: &[Vec<f64>], extra: &[f64]) -> Vec<Vec<Vec<f64>>> {
        let mut out: Vec<Vec<Vec<f64>>> = (0..persons.len())
            .map(|i| persons.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, p)| p.clone()).collect())
            .collect();
        let mut added = persons.to_vec();
        added.push(extra.to_vec());
        out.push(added);
        out
    }

    fn fold(bounds: &crate::numeric::grid::GridBounds, persons: &[Vec<f64>]) -> PerIdFold {
        PerIdFold::of_persons(CELL, Reduce::Total, *bounds, persons.iter().map(Vec::as_slice)).finish()
    }

    proptest! {
        /// Adding or removing one person, however many rows and however large, moves the exact
        /// sum of clamped totals by at most Δ = max(|L|, |U|), whatever K.
        #[test]
        fn the_sum_of_totals_moves_by_at_most_the_clamp(
            b in bounds(), data in persons(), extra in proptest::collection::vec(-1e6f64..1e6, 1..200),
        ) {
            let spec = SumSpec::new(b, Neighbours::AddRemove, &Mechanism::Laplace("1".parse().unwrap())).unwrap();
            let base = spec.aggregate(fold(&spec.bounds, &data).total);
            for n in neighbours_of(&data, &extra) {
                let moved = (spec.aggregate(fold(&spec.bounds, &n).total).value - base.value).abs();
                prop_assert!(moved <= base.sensitivity, "moved {} > Δ {}", moved, base.sensitivity);
                prop_assert!(moved * moved <= base.l2_squared);
            }
        }

        /// The mean's parts: the shifted sum moves by at most (U − L)/2 and the count of
        /// persons by at most 1.
        #[test]
        fn the_mean_of_totals_parts_move_by_their_sensitivities(
            b in bounds(), data in persons(), extra in proptest::collection::vec(-1e6f64..1e6, 1..200),
        ) {
            let spec = MeanSpec::new(b, Neighbours::AddRemove, &Mechanism::Laplace("1".parse().unwrap())).unwrap();
            let parts = |p: &[Vec<f64>]| {
                let f = fold(spec.bounds(), p);
                match spec.aggregate(spec.shift(f.total, f.persons), f.persons) {
                    MeanAggregate::AddRemove { shifted_sum, count, .. } => (shifted_sum, count),
                    MeanAggregate::Replace { .. } => unreachable!("add-remove"),
                }
            };
            let (s, c) = parts(&data);
            for n in neighbours_of(&data, &extra) {
                let (s2, c2) = parts(&n);
                prop_assert!((s2.value - s.value).abs() <= s.sensitivity);
                prop_assert!((c2.value - c.value).abs() <= c.sensitivity);
                prop_assert_eq!(c.sensitivity, 1);
            }
        }
    }

    /// A heavy person counts once, clamped: the total per person is not K times the row bound.
    #[test]
    fn a_heavy_person_is_one_clamped_total() {
        let b = Bounds::new(Finite::from_f64(0.0).unwrap(), Finite::from_f64(100.0).unwrap()).unwrap();
        let spec = SumSpec::new(b, Neighbours::AddRemove, &Mechanism::Laplace("1".parse().unwrap())).unwrap();
        let heavy = vec![60.0; 500];
        let f = fold(&spec.bounds, &[vec![10.0, 20.0], heavy, vec![-5.0]]);
        let g = spec.bounds.grid;
        assert_eq!(f.total, g.round_to_units(30.0) + g.round_to_units(100.0));
        assert_eq!(f.persons, 3);
        assert_eq!(spec.sensitivity(), g.round_to_units(100.0));
    }
}
