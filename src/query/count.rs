//! **count** — the number of rows (after `--where`).
//!
//! Privacy unit: add-remove changes the count by exactly 1; replace changes it by at most 1
//! (a changed row can start or stop matching `--where`). So Δ = 1 under both units, and the
//! count with discrete Laplace noise of scale 1/ε (the geometric mechanism, Ghosh, Roughgarden,
//! Sundararajan 2012) is ε-DP.

use super::Aggregate;
use crate::clamp::Grid;
use crate::column::{BadCell, Fold, Row};

/// Δ of a count under either privacy unit.
pub const SENSITIVITY: i128 = 1;

/// The count of `rows` matching rows as an aggregate with Δ = 1 on the integers.
pub fn aggregate(rows: u64) -> Aggregate<i128> {
    Aggregate { value: rows as i128, sensitivity: SENSITIVITY, grid: Grid::UNIT }
}

/// Counts the rows that passed the filters.
#[derive(Clone, Debug, Default)]
pub struct CountFold {
    pub rows: u64,
}

impl Fold for CountFold {
    #[inline]
    fn row(&mut self, _: &Row) -> Result<(), BadCell> {
        self.rows += 1;
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        self.rows += other.rows;
    }
    fn widest_column(&self) -> Option<usize> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Adding, removing or changing one row moves a (filtered) count by at most Δ.
        #[test]
        fn neighbouring_counts_differ_by_at_most_delta(
            rows in proptest::collection::vec(any::<bool>(), 0..50),
            extra in any::<bool>(),
            at in any::<prop::sample::Index>(),
        ) {
            let count = |r: &[bool]| aggregate(r.iter().filter(|&&m| m).count() as u64).value;
            let base = count(&rows);
            let mut added = rows.clone();
            added.push(extra);
            prop_assert!((count(&added) - base).abs() <= SENSITIVITY);
            if !rows.is_empty() {
                let i = at.index(rows.len());
                let mut removed = rows.clone();
                removed.remove(i);
                prop_assert!((count(&removed) - base).abs() <= SENSITIVITY);
                let mut changed = rows.clone();
                changed[i] = extra;
                prop_assert!((count(&changed) - base).abs() <= SENSITIVITY);
            }
        }
    }
}
