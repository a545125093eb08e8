//! Estimands of one value per person (`--privacy-id`): each person's kept rows in a group are
//! first reduced to one number, clamped to public bounds, and the sum or the mean is taken over
//! persons instead of rows. Two reductions, one module each:
//!
//! - [`total`]: `--total-per-id L,U` (`total_per_id = [L, U]`): the person's total, clamped to
//!   [L, U] (BigQuery's `contribution_bounds_per_group` for SUM, PipelineDP's
//!   `min/max_sum_per_partition`), for `sum` and `mean`;
//! - [`average`]: `--average-per-id` (`average_per_id = true`): the person's average, clamped
//!   to [`--lower`, `--upper`] (BigQuery's AVG: the average per privacy unit, then the average
//!   of those averages), for `mean`.
//!
//! **How.** [`PerIdFold`] wraps the fold of one group: it adds up the person's values while
//! contribution bounding (`data::bound`) replays that person's kept rows, and closes the person
//! at [`Fold::person_end`], folding one clamped value (and one person) into the sum or the mean.
//! It holds one open person (two numbers) whatever the rows, so memory does not grow.
//!
//! **Why the sensitivity comes from the clamp.** After the reduction every person is one
//! "row" of the statistic in each group they have rows in, its value within the public bounds.
//! Adding or removing one person therefore adds or removes one such value in each of at most
//! min(G, K) groups (G groups kept, each holding at least one of the K kept rows), and changes
//! no other person's value. The statistic's own row-level sensitivity (sum: max(|L|, |U|); mean:
//! (U − L)/2 for the shifted sum, 1 for the count) is then the person-level one, times
//! min(G, K) with `--by` ([`pseudo_bounds`]: the factor of `privacy::contribution` with one
//! row per person in each group). Derivations: docs/DESIGN.md §3.10, "One value per person".

pub mod average;
pub mod total;

use serde::{Deserialize, Serialize};

use crate::data::cell::NumberCell;
use crate::data::row::{BadCell, Fold, Row};
use crate::error::Error;
use crate::numeric::bounds::{Bounds, Finite};
use crate::numeric::grid::GridBounds;
use crate::privacy::unit::Bounds as PersonBounds;

/// Which value a person contributes (the option as flags or workload keys give it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PerId {
    /// `--total-per-id L,U`: the person's total, clamped to these bounds (checked by
    /// [`PerId::total_bounds`]).
    Total(Finite, Finite),
    /// `--average-per-id`: the person's average, clamped to `--lower`/`--upper`.
    Average,
}

/// How [`PerIdFold`] closes a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reduce {
    Total,
    Average,
}

impl Reduce {
    /// As the unit states it (`value_per_id` in JSON).
    pub fn name(self) -> &'static str {
        match self {
            Reduce::Total => "total",
            Reduce::Average => "average",
        }
    }
}

impl PerId {
    /// The flag, as messages name it.
    pub fn flag(&self) -> &'static str {
        match self {
            PerId::Total(..) => "--total-per-id",
            PerId::Average => "--average-per-id",
        }
    }

    pub fn reduce(&self) -> Reduce {
        match self {
            PerId::Total(..) => Reduce::Total,
            PerId::Average => Reduce::Average,
        }
    }

    /// The bounds of `--total-per-id`, L < U; None for `--average-per-id`.
    pub fn total_bounds(&self) -> Result<Option<Bounds>, Error> {
        match *self {
            PerId::Total(l, u) => Bounds::new(l, u)
                .map(Some)
                .map_err(|e| Error::usage(format!("--total-per-id: {}", e.message()))),
            PerId::Average => Ok(None),
        }
    }

    /// Whether statistic `kind` takes this estimand: refused before anything is read.
    pub fn check(&self, kind: &str) -> Result<(), Error> {
        match (self, kind) {
            (PerId::Total(..), "sum" | "mean") | (PerId::Average, "mean") => Ok(()),
            (PerId::Total(..), _) => Err(Error::usage(format!(
                "--total-per-id clamps each person's total for sum and mean; {kind} does not take it"
            ))),
            (PerId::Average, _) => Err(Error::usage(format!(
                "--average-per-id is the mean of per-person averages (dpstat mean); {kind} does not take it"
            ))),
        }
    }
}

/// The bounds each person has as "rows" of a per-person estimand
/// ([`PersonBounds::one_value_each`]): what the release is divided by is their factor, 1
/// ungrouped and min(G, K) with `--by`, instead of the K rows' factor.
pub fn pseudo_bounds(bounds: &PersonBounds, grouped: bool) -> PersonBounds {
    bounds.one_value_each(grouped)
}

/// Rows' units are saturated here before they are added up: K ≤ 10,000 < 2^14 of them stay
/// below 2^114 in i128, and a row this far out (2^38 times beyond any bound, which is at most
/// 2^62 units) moves the person's clamped value only when other rows of the same person cancel it.
const ROW_UNITS_CAP: i128 = 1 << 100;

/// One group's per-person fold: the open person's values, and the closed persons' clamped
/// values added up exactly in grid units.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PerIdFold {
    pub cell: NumberCell,
    pub reduce: Reduce,
    /// The grid and the public bounds each person's value is clamped to.
    pub bounds: GridBounds,
    /// The open person: the sum of their values' units, and how many values.
    open_units: i128,
    open_values: u64,
    /// Σ over closed persons of their clamped value, in grid units.
    pub total: i128,
    /// Persons closed with at least one value.
    pub persons: u64,
}

impl PerIdFold {
    pub fn new(cell: NumberCell, reduce: Reduce, bounds: GridBounds) -> PerIdFold {
        PerIdFold { cell, reduce, bounds, open_units: 0, open_values: 0, total: 0, persons: 0 }
    }

    /// One value of the open person, rounded to the grid (as every sum rounds it), not yet
    /// clamped: the person's value is.
    #[inline]
    pub fn add(&mut self, x: f64) {
        let units = self.bounds.grid.round_to_units(x).clamp(-ROW_UNITS_CAP, ROW_UNITS_CAP);
        self.open_units += units;
        self.open_values += 1;
    }

    /// Closes the open person: one clamped value, one person. A person with no value read
    /// (every cell skipped by `--invalid skip`) contributes nothing.
    fn close(&mut self) {
        if self.open_values == 0 {
            return;
        }
        let value = match self.reduce {
            Reduce::Total => total::person_value(self.open_units, &self.bounds),
            Reduce::Average => average::person_value(self.open_units, self.open_values, &self.bounds),
        };
        self.total += value;
        self.persons += 1;
        (self.open_units, self.open_values) = (0, 0);
    }

    /// The closed totals, with a person still open closed first (a scan that never called
    /// [`Fold::person_end`] after its last row).
    pub fn finish(mut self) -> PerIdFold {
        self.close();
        self
    }

    /// The fold of a list of persons' values, each list closed as one person: what a scan
    /// through contribution bounding computes (tests, and the neighbour checks).
    pub fn of_persons<'a>(
        cell: NumberCell,
        reduce: Reduce,
        bounds: GridBounds,
        persons: impl IntoIterator<Item = &'a [f64]>,
    ) -> PerIdFold {
        let mut fold = PerIdFold::new(cell, reduce, bounds);
        for values in persons {
            values.iter().for_each(|&x| fold.add(x));
            fold.person_end();
        }
        fold
    }
}

impl Fold for PerIdFold {
    #[inline]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        if let Some(x) = self.cell.read(row)? {
            self.add(x);
        }
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        // Parts hold whole persons (bounding replays a person into one fold): a part's open
        // person is closed where it was read.
        let other = other.finish();
        self.close();
        self.total += other.total;
        self.persons += other.persons;
    }
    fn widest_column(&self) -> Option<usize> {
        Some(self.cell.index)
    }
    fn person_end(&mut self) {
        self.close();
    }
    fn hears_persons(&self) -> bool {
        true
    }
}

/// The refusals every per-person estimand shares, before anything is read: `setup_has_person`
/// says whether the release has a `--privacy-id`.
pub fn check_person(per_id: &PerId, has_person: bool, discover: bool) -> Result<(), Error> {
    if !has_person {
        return Err(Error::usage(format!(
            "{} takes one value per person: add --privacy-id COL (privacy_id in a workload)",
            per_id.flag()
        )));
    }
    if discover {
        return Err(Error::usage(format!(
            "{} is not supported with --discover: give the groups with --keys",
            per_id.flag()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::InvalidPolicy;
    use crate::numeric::bounds::Finite;
    use crate::numeric::grid::Grid;

    pub fn grid_bounds(l: f64, u: f64) -> GridBounds {
        let b = Bounds::new(Finite::from_f64(l).unwrap(), Finite::from_f64(u).unwrap()).unwrap();
        GridBounds::snap(
            &b,
            Grid::for_noise(
                &num_rational::BigRational::from_integer(1.into()),
                &num_rational::BigRational::from_integer(1.into()),
            ),
            false,
        )
        .unwrap()
    }

    const CELL: NumberCell = NumberCell { index: 0, invalid: InvalidPolicy::Error };

    #[test]
    fn pseudo_bounds_give_one_value_per_person_and_group() {
        let b = PersonBounds { rows: 5, groups: 3, rows_per_group: 5 };
        assert_eq!(pseudo_bounds(&b, false).factor(false), crate::privacy::unit::Factor::ONE);
        let f = pseudo_bounds(&b, true).factor(true);
        assert_eq!((f.pure, f.rho), (3, 3), "min(G, K) groups, one value in each");
        let few = PersonBounds { rows: 2, groups: 9, rows_per_group: 2 };
        assert_eq!(pseudo_bounds(&few, true).factor(true).pure, 2, "K rows fill at most K groups");
    }

    #[test]
    fn a_person_left_open_is_closed_by_merge_and_finish() {
        let bounds = grid_bounds(0.0, 10.0);
        let mut a = PerIdFold::new(CELL, Reduce::Total, bounds);
        a.add(4.0);
        a.add(9.0);
        let mut b = PerIdFold::new(CELL, Reduce::Total, bounds);
        b.add(3.0);
        b.merge(a.clone());
        let whole = b.finish();
        assert_eq!(whole.persons, 2);
        assert_eq!(whole.total, bounds.grid.round_to_units(13.0));
        assert_eq!(a.finish().total, bounds.grid.round_to_units(10.0), "13 clamped to 10");
    }
}
