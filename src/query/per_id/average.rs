//! **average per person** (`mean --average-per-id`, workload `average_per_id = true`): the mean
//! over persons of each person's average in a group, over their kept rows, clamped to
//! [`--lower`, `--upper`] — BigQuery's `AVG` under differential privacy (the average per
//! privacy unit, then the average of those averages), where a row-level mean weighs a person
//! by their rows.
//!
//! Privacy unit: one person (add-remove). Guarantee: ε-DP (ρ-zCDP with `--noise gaussian`)
//! per person, ε split in two exact halves.
//!
//! Sensitivity (docs/DESIGN.md §3.10, "One value per person"): a person is one value a ∈ [L, U] in each group they
//! have kept rows in — their average, computed exactly in grid units (the sum of their values'
//! units over their count, rounded to the nearest unit, ties up), then clamped — and no one
//! else's average depends on their rows. The release is the add-remove mean of `query::mean`
//! over these values: m + S̃ / max(1, C̃) with m = (L + U)/2, S = Σ (a − m) and C the number of
//! persons. Adding or removing one person moves S by |a − m| ≤ (U − L)/2 and C by 1, so each
//! half is ε/2-DP (Laplace, Dwork, McSherry, Nissim & Smith 2006, on the exact discrete
//! sampler of Canonne, Kamath & Steinke 2020) and the mean ε-DP by sequential composition. A
//! sum of averages with one count per person: the person's number of rows never enters a
//! sensitivity, so the noise does not grow with K. With `--by`, at most min(G, K) groups move:
//! the release is divided by that factor ([`super::pseudo_bounds`]).

use crate::error::Error;
use crate::numeric::bounds::{Bounds, Finite};
use crate::numeric::grid::GridBounds;

/// What the mean states it did, first among its post-processing.
pub const NOTE: &str =
    "each person's average (over their kept rows) clamped to [lower, upper]: the mean is over persons";

/// The bounds each person's average is clamped to: `--lower`/`--upper`, public, never found
/// from the data (a value per person has no private-bounds path, so `--bounds-eps`,
/// `bounds_eps`, is refused).
pub fn bounds(lower: Option<Finite>, upper: Option<Finite>, bounds_eps: bool) -> Result<Bounds, Error> {
    match (lower, upper, bounds_eps) {
        (Some(l), Some(u), false) => Bounds::new(l, u),
        _ => Err(Error::usage(
            "mean --average-per-id clamps each person's average to --lower/--upper: give both (public              bounds; --bounds-eps does not apply)",
        )),
    }
}

/// A person's value: the average of their `values` values' units (`units` in all), rounded
/// to the nearest unit (ties towards +∞), clamped to the bounds.
#[inline]
pub fn person_value(units: i128, values: u64, bounds: &GridBounds) -> i128 {
    let n = i128::from(values.max(1));
    // ⌊units/n + 1/2⌋ = ⌊(2·units + n) / 2n⌋; |units| < 2^114, so 2·units fits.
    let average = (2 * units + n).div_euclid(2 * n);
    average.clamp(bounds.lower, bounds.upper)
}

#[cfg(test)]
mod tests {
    use super::super::{PerIdFold, Reduce};
    use super::*;
    use crate::data::cell::{InvalidPolicy, NumberCell};
    use crate::numeric::bounds::{Bounds, Finite};
    use crate::privacy::noise::Mechanism;
    use crate::privacy::unit::Neighbours;
    use crate::query::mean::{MeanAggregate, MeanSpec};
    use proptest::prelude::*;

    const CELL: NumberCell = NumberCell { index: 0, invalid: InvalidPolicy::Error };

    fn spec(l: f64, u: f64) -> MeanSpec {
        let b = Bounds::new(Finite::from_f64(l).unwrap(), Finite::from_f64(u).unwrap()).unwrap();
        MeanSpec::new(b, Neighbours::AddRemove, &Mechanism::Laplace("1".parse().unwrap())).unwrap()
    }

    fn parts(spec: &MeanSpec, persons: &[Vec<f64>]) -> (i128, i128, i128, i128) {
        let f =
            PerIdFold::of_persons(CELL, Reduce::Average, *spec.bounds(), persons.iter().map(Vec::as_slice))
                .finish();
        match spec.aggregate(spec.shift(f.total, f.persons), f.persons) {
            MeanAggregate::AddRemove { shifted_sum, count, .. } => {
                (shifted_sum.value, shifted_sum.sensitivity, count.value, count.sensitivity)
            }
            MeanAggregate::Replace { .. } => unreachable!("add-remove"),
        }
    }

    proptest! {
        /// Adding or removing one person (any number of rows, any values) moves the shifted
        /// sum of averages by at most (U − L)/2 and the count of persons by at most 1.
        #[test]
        fn averages_move_by_at_most_half_the_width_and_one_person(
            (l, w) in (-500.0f64..500.0, 0.5f64..800.0),
            data in proptest::collection::vec(proptest::collection::vec(-1e4f64..1e4, 1..30), 0..12),
            extra in proptest::collection::vec(prop_oneof![-1e6f64..1e6, Just(1e300)], 1..200),
        ) {
            let spec = spec(l, l + w);
            let (s, ds, c, dc) = parts(&spec, &data);
            prop_assert_eq!(dc, 1);
            let mut neighbours: Vec<Vec<Vec<f64>>> = (0..data.len())
                .map(|i| data.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, p)| p.clone()).collect())
                .collect();
            neighbours.push(data.iter().cloned().chain([extra.clone()]).collect());
            for n in neighbours {
                let (s2, _, c2, _) = parts(&spec, &n);
                prop_assert!((s2 - s).abs() <= ds, "moved {} > {}", (s2 - s).abs(), ds);
                prop_assert!((c2 - c).abs() <= dc);
            }
        }
    }

    /// Each person weighs one, whatever their rows: the mean of averages, not of rows.
    #[test]
    fn each_person_weighs_one() {
        let spec = spec(0.0, 100.0);
        let g = spec.bounds().grid;
        let f = PerIdFold::of_persons(CELL, Reduce::Average, *spec.bounds(), [&[10.0][..], &[50.0; 99][..]])
            .finish();
        assert_eq!((f.total, f.persons), (g.round_to_units(60.0), 2));
        // Rounded to the nearest unit, ties up; clamped.
        let b = GridBounds { grid: g, lower: -10, upper: 10 };
        assert_eq!(person_value(3, 2, &b), 2);
        assert_eq!(person_value(-3, 2, &b), -1);
        assert_eq!(person_value(-5, 3, &b), -2);
        assert_eq!(person_value(100, 3, &b), 10);
    }
}
