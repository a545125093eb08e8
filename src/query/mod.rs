//! The statistics, one module each, behind one trait ([`statistic::Statistic`]). A
//! statistic's module holds everything specific to it: the validation of its own options, its
//! fold over rows, its exact aggregate with its sensitivity per privacy unit, its ε split, the
//! release it builds (value, parts, accuracy) and what `dpstat plan` states for it. The release
//! pipeline, workloads, groups and planning only ever call the trait, through [`AnyStatistic`].
//!
//! Adding a statistic touches its own file, one line of the `registry!` below and its clap
//! variants in `cli/` (the release subcommand in `cli/mod.rs`, `dpstat plan`'s in `cli/plan.rs`
//! and `cli/request.rs`).

pub mod bounds;
pub mod discover;
pub mod group;
pub mod options;
pub mod per_id;
pub mod statistic;

use rand::RngCore;

use crate::data::row::{BadCell, Fold, Row};
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::query::options::{Options, Setup};
use crate::query::statistic::{Context, Measured, PlanContext, Planned, Statistic, Visitor};

/// Declares the statistics: their modules, [`AnyStatistic`] and [`AnyFold`].
macro_rules! registry {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Any one statistic.
        #[derive(Clone, Debug)]
        pub enum AnyStatistic {
            $($ty($module::$ty),)*
        }

        /// The fold of any one statistic, for scans that hold several (a workload).
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        pub enum AnyFold {
            $($ty(<$module::$ty as Statistic>::Fold),)*
        }

        impl Fold for AnyFold {
            #[inline]
            fn row(&mut self, row: &Row) -> Result<(), BadCell> {
                match self {
                    $(AnyFold::$ty(f) => f.row(row),)*
                }
            }
            fn merge(&mut self, other: Self) {
                match (self, other) {
                    $((AnyFold::$ty(a), AnyFold::$ty(b)) => a.merge(b),)*
                    // Folds of one scan are cloned from one statistic: never mixed.
                    #[allow(unreachable_patterns)]
                    _ => {}
                }
            }
            fn widest_column(&self) -> Option<usize> {
                match self {
                    $(AnyFold::$ty(f) => f.widest_column(),)*
                }
            }
            fn heap_bytes(&self) -> usize {
                match self {
                    $(AnyFold::$ty(f) => f.heap_bytes(),)*
                }
            }
            fn part_heap_bytes(&self, rows: usize) -> usize {
                match self {
                    $(AnyFold::$ty(f) => f.part_heap_bytes(rows),)*
                }
            }
            fn part_end(&mut self) {
                match self {
                    $(AnyFold::$ty(f) => f.part_end(),)*
                }
            }
            fn person_end(&mut self) {
                match self {
                    $(AnyFold::$ty(f) => f.person_end(),)*
                }
            }
            fn hears_persons(&self) -> bool {
                match self {
                    $(AnyFold::$ty(f) => f.hears_persons(),)*
                }
            }
        }

        impl AnyStatistic {
            /// Every kind, in registry order.
            pub fn kinds() -> Vec<&'static str> {
                let mut kinds = Vec::new();
                $(kinds.extend_from_slice(<$module::$ty as Statistic>::KINDS);)*
                kinds
            }

            /// The workload keys of a kind; None for a kind workloads do not take.
            pub fn workload_keys_of(kind: &str, options: &Options) -> Option<&'static [&'static str]> {
                $(if <$module::$ty as Statistic>::KINDS.contains(&kind) {
                    return <$module::$ty as Statistic>::workload_keys(options);
                })*
                None
            }

            /// Whether a workload query of `kind` may leave its bounds out.
            pub fn bounds_optional_of(kind: &str) -> bool {
                $(if <$module::$ty as Statistic>::KINDS.contains(&kind) {
                    return <$module::$ty as Statistic>::BOUNDS_OPTIONAL;
                })*
                false
            }

            /// Every fold a statistic's command hands the engine, for a cluster executor to
            /// run (`data::cluster`): one statistic's rows, the keys found for it, and both
            /// with persons' rows bounded.
            #[cfg(feature = "cluster")]
            pub fn cluster_folds(registry: &mut crate::data::cluster::function::Registry) {
                use crate::data::route::Routed;
                $(registry.add::<Routed<<$module::$ty as Statistic>::Fold>>();
                registry.add::<Routed<discover::Keyed<<$module::$ty as Statistic>::Fold>>>();
                registry.add_persons::<Routed<<$module::$ty as Statistic>::Fold>>();
                registry.add_persons::<discover::Keyed<<$module::$ty as Statistic>::Fold>>();)*
            }

            /// Calls `visitor` with the statistic itself, so that what it does is compiled for
            /// that statistic's own fold.
            pub fn visit<V: Visitor>(&self, visitor: V) -> V::Output {
                match self {
                    $(AnyStatistic::$ty(s) => visitor.visit(s),)*
                }
            }
        }

        /// Dispatch to the statistic inside; its fold is [`AnyFold`].
        impl Statistic for AnyStatistic {
            const KINDS: &'static [&'static str] = &[];
            type Fold = AnyFold;

            /// The statistic registered as `kind`, validated.
            fn new(kind: &str, options: Options, setup: &Setup) -> Result<AnyStatistic, Error> {
                options::check_impute(kind, &options)?;
                if let Some(per_id) = &options.per_id {
                    per_id.check(kind)?;
                }
                $(if <$module::$ty as Statistic>::KINDS.contains(&kind) {
                    return <$module::$ty as Statistic>::new(kind, options, setup).map(AnyStatistic::$ty);
                })*
                Err(Error::internal(format!("no statistic is registered as '{kind}'")))
            }

            /// Needs the kind: see [`AnyStatistic::workload_keys_of`].
            fn workload_keys(_: &Options) -> Option<&'static [&'static str]> {
                None
            }

            fn name(&self) -> &'static str {
                match self {
                    $(AnyStatistic::$ty(s) => s.name(),)*
                }
            }

            fn column(&self) -> Option<&ColumnRef> {
                match self {
                    $(AnyStatistic::$ty(s) => s.column(),)*
                }
            }

            fn draws_bars(&self) -> bool {
                match self {
                    $(AnyStatistic::$ty(s) => s.draws_bars(),)*
                }
            }

            fn per_id(&self) -> bool {
                match self {
                    $(AnyStatistic::$ty(s) => s.per_id(),)*
                }
            }

            fn reads_numbers(&self) -> bool {
                match self {
                    $(AnyStatistic::$ty(s) => s.reads_numbers(),)*
                }
            }

            fn reads_twice(&self) -> Option<&'static str> {
                match self {
                    $(AnyStatistic::$ty(s) => s.reads_twice(),)*
                }
            }

            fn columns(&self) -> Vec<(&ColumnRef, &'static str)> {
                match self {
                    $(AnyStatistic::$ty(s) => s.columns(),)*
                }
            }

            fn fold(&self, indices: &[usize]) -> AnyFold {
                match self {
                    $(AnyStatistic::$ty(s) => AnyFold::$ty(s.fold(indices)),)*
                }
            }

            /// Measures a fold made by [`Statistic::fold`] of the same statistic.
            fn measure(
                &self,
                fold: AnyFold,
                cx: &Context,
                rng: &mut dyn RngCore,
            ) -> Result<Measured<AnyStatistic>, Error> {
                match (self, fold) {
                    $((AnyStatistic::$ty(s), AnyFold::$ty(f)) => Ok(match s.measure(f, cx, rng)? {
                        Measured::Release(r) => Measured::Release(r),
                        Measured::Again(next) => Measured::Again(AnyStatistic::$ty(next)),
                    }),)*
                    #[allow(unreachable_patterns)]
                    _ => Err(Error::internal("a fold measured by another statistic")),
                }
            }

            fn plan(&self, cx: &PlanContext) -> Result<Planned, Error> {
                match self {
                    $(AnyStatistic::$ty(s) => s.plan(cx),)*
                }
            }
        }
    };
}

registry! {
    count::Count,
    sum::Sum,
    mean::Mean,
    variance::Variance,
    covariance::Covariance,
    regress::Regress,
    histogram::Histogram,
    quantile::Quantile,
}
