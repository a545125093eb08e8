//! The integration tests, one test binary: each module runs the real `dpstat` binary on files
//! in fixtures/ (or on tables it writes under the target directory). One binary rather than one
//! per file because every test binary links the whole library: 42 of them filled the disk of a
//! fresh CI machine and spent minutes linking. Run one file's tests with a filter on its module,
//! `cargo test --test integration count::`.

mod common;

mod accounting;
mod approximate;
mod bounds;
mod chart;
mod check;
mod cli;
mod cluster;
mod completions;
mod count;
mod covariance;
mod dates;
mod decimal;
mod describe;
mod distribution;
mod errors;
mod filters;
mod group_by;
mod histogram;
mod layers;
mod ledger;
mod listing;
mod mean;
mod parquet;
mod parquet_errors;
mod parquet_fixtures;
mod person;
mod person_defaults;
mod person_discover;
mod person_layouts;
mod person_values;
mod person_workload;
mod plan;
mod post_processing;
mod quantile;
mod quoted_lists;
mod readme;
mod robustness;
mod sql;
mod sum;
mod text_output;
mod threads;
mod variance;
mod workload;
