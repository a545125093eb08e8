//! The queries. Each one turns a column scan into its exact aggregate *together with* the
//! most one neighbouring change can move it (its sensitivity), in integer grid units, so the
//! mechanism never has to be told a scale by hand.

pub mod bounds;
pub mod count;
pub mod histogram;
pub mod mean;
pub mod quantile;
pub mod sum;

use crate::clamp::Grid;

/// An exact aggregate in units of `grid` and its sensitivity in the same units.
/// For a vector (histogram) the sensitivity is the L1 sensitivity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregate<T> {
    pub value: T,
    /// Δ in grid units, >= 1: the largest change of `value` between neighbouring datasets.
    pub sensitivity: i128,
    pub grid: Grid,
}
