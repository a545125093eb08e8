//! **count** — the number of rows (after `--where`).
//!
//! Privacy unit: add-remove changes the count by exactly 1; replace changes it by at most 1
//! (a changed row can start or stop matching `--where`). So Δ = 1 under both units, and the
//! count with discrete Laplace noise of scale 1/ε (the geometric mechanism, Ghosh, Roughgarden,
//! Sundararajan 2012) is ε-DP. With `--by` under replace a changed row can leave one group's
//! count and join another's, so the vector of group counts has L1 sensitivity 2 (see
//! `query::group`). ε is not split: one part.
//!
//! With `--noise gaussian` the count gets discrete Gaussian noise of variance Δ₂²/(2ρ), which is
//! ρ-zCDP (Canonne, Kamath, Steinke 2020, Thm 14): Δ₂ = 1 for one count under both units; with
//! `--by` under replace Δ₂² = 2 (one group −1 and another +1: √2 in L2, where L1 says 2), see
//! `query::group`.
//!
//! `--nonnegative` releases a negative noisy count as 0. Post-processing, so free; the true
//! count is at least 0, so the clamp never moves the release away from it and the accuracy
//! bound still holds, but it biases counts near 0 upwards (E[max(0, c + Z)] > c).

use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};

use num_bigint::BigInt;
use rand::RngCore;

use crate::data::row::{BadCell, Fold, Row};
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::grid::Grid;
use crate::privacy::accuracy;
use crate::privacy::laplace::Aggregate;
use crate::privacy::noise::{self, Calibrated, Drawn};
use crate::privacy::unit::Neighbours;
use crate::query::group;
use crate::query::options::{Options, Setup};
use crate::query::statistic::{Context, Measured, PlanContext, Planned, Statistic};
use crate::report::release::{saturating_i128, Accuracy, Noise, Number};

/// Δ of a count under either privacy unit (L1 and L2 alike: one number moves by 1).
pub const SENSITIVITY: i128 = 1;

/// The count of `rows` matching rows as an aggregate with Δ₁ = Δ₂ = 1 on the integers.
pub fn aggregate(rows: u64) -> Aggregate<i128> {
    Aggregate::scalar(rows as i128, SENSITIVITY, Grid::UNIT)
}

/// `dpstat count`.
#[derive(Clone, Debug, Default)]
pub struct Count {
    /// `--nonnegative`.
    nonnegative: bool,
    /// Where the noisy count is left for the means that divide by it (`dpstat describe`).
    shares: Option<SharedCount>,
}

/// One noisy count drawn once and read by several means (`dpstat describe`, DESIGN §6): the
/// count query leaves its draw here, each mean of the same rows divides by it instead of
/// drawing a count of its own. Reading it is post-processing of the count's release, so it is
/// charged once, to the count. A workload measures its queries in order, so the count is
/// listed before the means; a mean that finds it empty is an internal error, never a release.
#[derive(Clone, Debug, Default)]
pub struct SharedCount(Arc<OnceLock<Drawn<BigInt>>>);

impl SharedCount {
    /// The count's draw, once the count is measured.
    pub fn get(&self) -> Result<&Drawn<BigInt>, Error> {
        self.0.get().ok_or_else(|| Error::internal("a mean read the shared count before it was drawn"))
    }
}

impl Count {
    /// A count (not grouped, no `--nonnegative`) that leaves its draw in `shares`.
    pub fn shared(shares: SharedCount) -> Count {
        Count { nonnegative: false, shares: Some(shares) }
    }

    /// The aggregate of `rows`, with the sensitivity of one group's count when grouped.
    fn aggregate(rows: u64, neighbours: Neighbours, grouped: bool) -> Aggregate<i128> {
        let mut aggregate = aggregate(rows);
        if grouped {
            aggregate.sensitivity = group::count_sensitivity(neighbours);
            aggregate.l2_squared = group::count_l2_squared(neighbours);
        }
        aggregate
    }
}

impl Statistic for Count {
    const KINDS: &'static [&'static str] = &["count"];
    type Fold = CountFold;

    fn new(_: &str, options: Options, _: &Setup) -> Result<Count, Error> {
        Ok(Count { nonnegative: options.nonnegative, shares: None })
    }

    fn workload_keys(_: &Options) -> Option<&'static [&'static str]> {
        Some(&[])
    }

    fn name(&self) -> &'static str {
        "count"
    }

    fn column(&self) -> Option<&ColumnRef> {
        None
    }

    fn fold(&self, _: &[usize]) -> CountFold {
        CountFold::default()
    }

    fn measure(&self, fold: CountFold, cx: &Context, rng: &mut dyn RngCore) -> Result<Measured<Count>, Error> {
        let aggregate = Count::aggregate(fold.rows, cx.neighbours, cx.grouped);
        let noisy = noise::draw(&aggregate, cx.mechanism, rng);
        if let Some(shares) = &self.shares {
            if cx.grouped || shares.0.set(noisy.clone()).is_err() {
                return Err(Error::internal("a shared count is drawn once, for all its rows"));
            }
        }
        let accuracy = Accuracy::value(cx.confidence, accuracy::single(&noisy.noise, cx.confidence));
        let noise = Noise::single(&noisy.noise, cx.neighbours, accuracy);
        let release = cx.release(self, noise, cx.mechanism.cost("count"))?;
        let value = saturating_i128(&noisy.value);
        let (value, post) = match (self.nonnegative, value < 0) {
            (false, _) => (value, vec![]),
            (true, true) => (0, vec![NONNEGATIVE_CLAMPED.to_string()]),
            (true, false) => (value, vec![NONNEGATIVE_KEPT.to_string()]),
        };
        Ok(Measured::Release(crate::report::release::Release {
            value: Some(Number::Integer(value)),
            post_processing: post,
            ..release
        }))
    }

    fn plan(&self, cx: &PlanContext) -> Result<Planned, Error> {
        let noise = Calibrated::of(&Count::aggregate(0, cx.neighbours, cx.grouped), cx.mechanism);
        let accuracy = Accuracy::value(cx.confidence, accuracy::single(&noise, cx.confidence));
        Ok(Planned { noise: Noise::single(&noise, cx.neighbours, accuracy), bins: None, assumptions: vec![] })
    }
}

/// `post_processing` of `--nonnegative`, when it changed the count and when it did not.
pub const NONNEGATIVE_CLAMPED: &str =
    "nonnegative: the noisy count was below 0 and is released as 0 (biases counts near 0 upwards)";
pub const NONNEGATIVE_KEPT: &str = "nonnegative: a noisy count below 0 would be released as 0; this one was not below 0";

/// Counts the rows that passed the filters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
            let declared = aggregate(0);
            // Both norms: the Laplace noise reads Δ₁, the Gaussian Δ₂² (a scalar: Δ₁²).
            let covered = |moved: i128| moved.abs() <= declared.sensitivity && moved * moved <= declared.l2_squared;
            let mut added = rows.clone();
            added.push(extra);
            prop_assert!(covered(count(&added) - base));
            if !rows.is_empty() {
                let i = at.index(rows.len());
                let mut removed = rows.clone();
                removed.remove(i);
                prop_assert!(covered(count(&removed) - base));
                let mut changed = rows.clone();
                changed[i] = extra;
                prop_assert!(covered(count(&changed) - base));
            }
        }
    }
}
