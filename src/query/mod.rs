//! The queries. Each one turns a column scan into its exact aggregate *together with* the
//! most one neighbouring change can move it (its sensitivity), in integer grid units, so the
//! mechanism never has to be told a scale by hand.

pub mod bounds;
pub mod count;
pub mod group;
pub mod histogram;
pub mod mean;
pub mod quantile;
pub mod sum;
pub mod variance;

use crate::clamp::Grid;
use crate::column::{BadCell, Fold, Row};

/// Adds per-bin counts of another part of the input (exact, so merging in any order agrees).
pub fn add_counts(mine: &mut [u64], theirs: &[u64]) {
    for (m, t) in mine.iter_mut().zip(theirs) {
        *m += t;
    }
}

/// The neighbours of a dataset for property tests: one row removed, one added, one changed.
#[cfg(test)]
pub(crate) fn neighbouring<T: Clone>(rows: &[T], other: T, at: usize) -> Neighbouring<T> {
    let mut removed = rows.to_vec();
    removed.remove(at);
    let mut added = rows.to_vec();
    added.push(other.clone());
    let mut changed = rows.to_vec();
    changed[at] = other;
    Neighbouring { removed, added, changed }
}

#[cfg(test)]
pub(crate) struct Neighbouring<T> {
    pub removed: Vec<T>,
    pub added: Vec<T>,
    pub changed: Vec<T>,
}

/// An exact aggregate in units of `grid` and its sensitivity in the same units.
/// For a vector (histogram) the sensitivity is the L1 sensitivity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregate<T> {
    pub value: T,
    /// Δ in grid units, >= 1: the largest change of `value` between neighbouring datasets.
    pub sensitivity: i128,
    pub grid: Grid,
}

/// The fold of any one query, for scans that hold several (a workload, `query::group`).
#[derive(Clone, Debug)]
pub enum QueryFold {
    Count(count::CountFold),
    Sum(sum::SumFold),
    Mean(mean::MeanFold),
    Variance(variance::VarianceFold),
    Histogram(histogram::HistogramFold),
}

impl Fold for QueryFold {
    #[inline]
    fn row(&mut self, record: &Row) -> Result<(), BadCell> {
        match self {
            QueryFold::Count(f) => f.row(record),
            QueryFold::Sum(f) => f.row(record),
            QueryFold::Mean(f) => f.row(record),
            QueryFold::Variance(f) => f.row(record),
            QueryFold::Histogram(f) => f.row(record),
        }
    }
    fn merge(&mut self, other: Self) {
        match (self, other) {
            (QueryFold::Count(a), QueryFold::Count(b)) => a.merge(b),
            (QueryFold::Sum(a), QueryFold::Sum(b)) => a.merge(b),
            (QueryFold::Mean(a), QueryFold::Mean(b)) => a.merge(b),
            (QueryFold::Variance(a), QueryFold::Variance(b)) => a.merge(b),
            (QueryFold::Histogram(a), QueryFold::Histogram(b)) => a.merge(b),
            _ => unreachable!("merge joins two parts of the same query's scan"),
        }
    }
    fn widest_column(&self) -> Option<usize> {
        match self {
            QueryFold::Count(f) => f.widest_column(),
            QueryFold::Sum(f) => f.widest_column(),
            QueryFold::Mean(f) => f.widest_column(),
            QueryFold::Variance(f) => f.widest_column(),
            QueryFold::Histogram(f) => f.widest_column(),
        }
    }
}
