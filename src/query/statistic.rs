//! The trait every statistic implements, and what the pipeline hands it.

use std::fmt;

use rand::RngCore;

use crate::data::row::Fold;
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::list;
use crate::privacy::accountant::Cost;
use crate::privacy::accuracy::Confidence;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::noise::Mechanism;
use crate::privacy::unit::Neighbours;
use crate::query::options::{Options, Setup};
use crate::report::release::{Noise, Release};

/// One statistic: validated before any data is read, folded over the rows in one pass, then
/// measured (noise added) once.
pub trait Statistic: Clone + fmt::Debug + Sized {
    /// The names it answers to, as subcommand and workload `kind` (quantile answers to
    /// "quantile" and "median").
    const KINDS: &'static [&'static str];
    /// Its per-row state.
    type Fold: Fold;

    /// Validates the options at this setup's ε and privacy unit, before any data is read.
    fn new(kind: &str, options: Options, setup: &Setup) -> Result<Self, Error>;

    /// The workload keys `kind` takes besides name, kind, share, where, by and keys; None when
    /// it cannot be part of a workload.
    fn workload_keys(options: &Options) -> Option<&'static [&'static str]>;

    /// Whether a workload query may leave its bounds out without spending ε to find them
    /// (quantiles then use their public bounds-free candidates); otherwise they are required.
    const BOUNDS_OPTIONAL: bool = false;

    /// The kind it was built as.
    fn name(&self) -> &'static str;

    /// The column it reads; None for a count. A two-column statistic answers its first (x).
    fn column(&self) -> Option<&ColumnRef>;

    /// Every column it reads, in the order [`Statistic::fold`] takes their indices, each with
    /// the flag that names it in messages: the one [`Statistic::column`] under `--col`, unless
    /// it reads more (covariance and regress read two).
    fn columns(&self) -> Vec<(&ColumnRef, &'static str)> {
        self.column().map(|c| (c, "--col")).into_iter().collect()
    }

    /// Whether it reads its columns as numbers: every statistic with a column, but a histogram
    /// over categories. A column whose declared type can hold no number (a Parquet Boolean,
    /// list or struct) is then refused before anything is charged.
    fn reads_numbers(&self) -> bool {
        self.column().is_some()
    }

    /// Whether its release (ungrouped) has several numbers that `--format chart` and `--plot`
    /// can draw: bins, several quantile levels. Every grouped release has.
    fn draws_bars(&self) -> bool {
        false
    }

    /// Whether it releases one clamped value per person (`--total-per-id`, `--average-per-id`,
    /// `query::per_id`): then one person moves it as one row in each group would
    /// ([`per_id::pseudo_bounds`](crate::query::per_id::pseudo_bounds)), not as K rows.
    fn per_id(&self) -> bool {
        false
    }

    /// Why it reads the data twice, if it does: then it needs a regular file, and anything else
    /// (standard input, a pipe, `/dev/stdin`) is refused before reading.
    fn reads_twice(&self) -> Option<&'static str> {
        None
    }

    /// The empty fold, its columns resolved to `indices` (as [`Statistic::columns`] lists them;
    /// empty for a count).
    fn fold(&self, indices: &[usize]) -> Self::Fold;

    /// Adds the noise to what was folded: the release, or the statistic to fold a second pass
    /// into (a numeric histogram once its bounds are found).
    fn measure(&self, fold: Self::Fold, cx: &Context, rng: &mut dyn RngCore)
        -> Result<Measured<Self>, Error>;

    /// What a release would state about its noise, computed without data (`dpstat plan`).
    fn plan(&self, cx: &PlanContext) -> Result<Planned, Error>;
}

/// What a measurement needs besides the fold.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// This statistic's noise and its ε or ρ (its share in a workload).
    pub mechanism: &'a Mechanism,
    pub neighbours: Neighbours,
    pub confidence: Confidence,
    /// One release per `--by` group.
    pub grouped: bool,
    /// The `--where` filters as the release lists them.
    pub filters: &'a [String],
    /// How messages name the input.
    pub source: &'a str,
}

impl<'a> Context<'a> {
    /// ε of a Laplace-only statistic (its `new` refused `--noise gaussian`).
    pub fn epsilon(&self) -> Result<&'a Epsilon, Error> {
        self.mechanism
            .epsilon()
            .ok_or_else(|| Error::internal("a Laplace-only statistic was given Gaussian noise"))
    }

    /// A release of `statistic`, its common fields filled in.
    pub fn release<S: Statistic>(&self, statistic: &S, noise: Noise, cost: Cost) -> Result<Release, Error> {
        let labels: Vec<String> = statistic.columns().into_iter().map(|(c, _)| c.label()).collect();
        // Quoted where a name holds a comma, so a pair reads back as its two columns.
        let column = (!labels.is_empty()).then(|| list::join(&labels));
        Release::new(statistic.name(), column, self.filters.to_vec(), noise, cost)
    }
}

/// The outcome of a measurement.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per release
pub enum Measured<S> {
    Release(Release),
    /// Fold the data again into this statistic, then measure it.
    Again(S),
}

/// What a plan needs besides the statistic.
#[derive(Clone, Copy, Debug)]
pub struct PlanContext<'a> {
    pub mechanism: &'a Mechanism,
    pub neighbours: Neighbours,
    pub confidence: Confidence,
    /// The assumed row count (`--rows`).
    pub rows: Option<u64>,
    /// One release per `--by` group (a workload's grouped query): a count's sensitivity under
    /// replace is then the vector's.
    pub grouped: bool,
}

/// A statistic's plan: the noise block its release would state, and its number of bins.
#[derive(Clone, Debug)]
pub struct Planned {
    pub noise: Noise,
    pub bins: Option<usize>,
    /// What the plan takes for granted that a release would know (an assumed row count).
    pub assumptions: Vec<String>,
}

/// Calls a function generic over the statistic, so that the scan loop is compiled for each
/// statistic's own fold.
pub trait Visitor {
    type Output;
    fn visit<S: Statistic>(self, statistic: &S) -> Self::Output;
}

/// The index of a one-column statistic's column (0 if, against the contract, none was given).
pub fn first(indices: &[usize]) -> usize {
    indices.first().copied().unwrap_or_default()
}

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
