//! **histogram** — counts over public bins: K equal-width bins over [L, U] (values outside go
//! to the edge bins) or a public category list plus one bin `other`.
//!
//! Every row lands in exactly one bin, so the L1 sensitivity is
//! - add-remove: 1 (one bin gains or loses one row);
//! - replace: 2 (one bin loses a row, another gains it).
//!
//! Independent discrete Laplace noise of scale Δ/ε on every bin gives ε-DP (the Laplace
//! mechanism with L1 sensitivity, Dwork, McSherry, Nissim, Smith 2006; discrete form after
//! Ghosh, Roughgarden, Sundararajan 2012). Bins and categories come from flags only: bins read
//! off the data would leak which values occur.

use std::sync::Arc;

use super::{add_counts, Aggregate};
use crate::clamp::{Bins, Categories, Grid};
use crate::cli::Neighbours;
use crate::column::{text_cell, BadCell, Fold, NumberCell, Row};

/// L1 sensitivity of a histogram for a privacy unit.
pub fn sensitivity(neighbours: Neighbours) -> i128 {
    match neighbours {
        Neighbours::AddRemove => 1,
        Neighbours::Replace => 2,
    }
}

/// Per-bin counts with the L1 sensitivity of the privacy unit.
pub fn aggregate(counts: Vec<u64>, neighbours: Neighbours) -> Aggregate<Vec<i128>> {
    Aggregate {
        value: counts.into_iter().map(i128::from).collect(),
        sensitivity: sensitivity(neighbours),
        grid: Grid::UNIT,
    }
}

/// How a row finds its bin.
#[derive(Clone, Debug)]
pub enum BinOf {
    Numeric(NumberCell, Bins),
    Category(usize, Arc<Categories>),
}

/// Per-bin counts of one column.
#[derive(Clone, Debug)]
pub struct HistogramFold {
    pub bin_of: BinOf,
    pub counts: Vec<u64>,
}

impl HistogramFold {
    pub fn new(bin_of: BinOf) -> HistogramFold {
        let bins = match &bin_of {
            BinOf::Numeric(_, bins) => bins.len(),
            BinOf::Category(_, categories) => categories.names().len() + 1,
        };
        HistogramFold { bin_of, counts: vec![0; bins] }
    }
}

impl Fold for HistogramFold {
    #[inline]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        let bin = match &self.bin_of {
            BinOf::Numeric(cell, bins) => match cell.read(row)? {
                Some(x) => bins.index(x),
                None => return Ok(()),
            },
            BinOf::Category(index, categories) => categories.index(text_cell(row, *index)),
        };
        self.counts[bin] += 1;
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        add_counts(&mut self.counts, &other.counts);
    }
    fn widest_column(&self) -> Option<usize> {
        Some(match &self.bin_of {
            BinOf::Numeric(cell, _) => cell.index,
            BinOf::Category(index, _) => *index,
        })
    }
}

/// Counts rows into `bins` bins through a bin-assignment function.
pub fn count_into<T>(
    bins: usize,
    rows: impl IntoIterator<Item = T>,
    bin_of: impl Fn(T) -> usize,
) -> Vec<u64> {
    let mut counts = vec![0u64; bins];
    for row in rows {
        counts[bin_of(row)] += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clamp::{Bounds, Finite};
    use crate::query::sum::tests::awkward_value;
    use crate::query::{neighbouring, Neighbouring};
    use proptest::prelude::*;

    fn l1(a: &[i128], b: &[i128]) -> i128 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
    }

    proptest! {
        /// Adding, removing or changing one row moves the histogram by at most Δ in L1.
        #[test]
        fn numeric_histogram_l1_sensitivity(
            rows in proptest::collection::vec(awkward_value(), 1..60),
            other in awkward_value(),
            k in 1usize..12,
            at in any::<prop::sample::Index>(),
        ) {
            let bounds = Bounds::new(Finite::from_f64(-100.0).unwrap(), Finite::from_f64(1e6).unwrap()).unwrap();
            let bins = Bins::new(bounds, k);
            let hist = |r: &[f64], n: Neighbours| aggregate(count_into(k, r.iter().copied(), |x| bins.index(x)), n);
            let i = at.index(rows.len());
            let Neighbouring { removed, added, changed } = neighbouring(&rows, other, i);
            let base = hist(&rows, Neighbours::AddRemove);
            for n in [removed, added] {
                prop_assert!(l1(&hist(&n, Neighbours::AddRemove).value, &base.value) <= base.sensitivity);
            }
            let base = hist(&rows, Neighbours::Replace);
            prop_assert!(l1(&hist(&changed, Neighbours::Replace).value, &base.value) <= base.sensitivity);
        }

        #[test]
        fn categorical_histogram_l1_sensitivity(
            rows in proptest::collection::vec("[a-e]", 1..60),
            other in "[a-e]",
            at in any::<prop::sample::Index>(),
        ) {
            let cats: Categories = "a,b,c".parse().unwrap();
            let k = cats.names().len() + 1;
            let hist = |r: &[String]| count_into(k, r.iter(), |c| cats.index(c.as_bytes()))
                .into_iter().map(i128::from).collect::<Vec<_>>();
            let i = at.index(rows.len());
            let mut changed = rows.clone();
            changed[i] = other.clone();
            let mut added = rows.clone();
            added.push(other);
            prop_assert!(l1(&hist(&changed), &hist(&rows)) <= sensitivity(Neighbours::Replace));
            prop_assert!(l1(&hist(&added), &hist(&rows)) <= sensitivity(Neighbours::AddRemove));
        }
    }
}
