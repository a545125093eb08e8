//! One module per subcommand, each wiring the layers below into a run: validate everything,
//! read, measure, charge, and only then print.
//!
//! - [`release`]: `dpstat count|sum|mean|variance|histogram|quantile|median`;
//! - [`run`]: `dpstat run WORKLOAD.toml`, several statistics in one pass;
//! - [`sql`]: `dpstat sql "QUERY"`, a differentially private SQL query run as a workload;
//! - [`describe`]: `dpstat describe`, several columns' count, mean and quantiles in one pass;
//! - [`plan`]: `dpstat plan`, accuracy without data;
//! - [`budget`]: `dpstat budget`, a dataset's account in the ledger;
//! - [`ledger`]: `dpstat ledger init`, the custodian's key of a keyed ledger;
//! - [`check`]: `dpstat check`, the custodian's pre-flight of a file (not private);
//! - [`generate`]: `dpstat completions` and `dpstat man`.

pub mod budget;
pub mod check;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod describe;
pub mod generate;
pub mod ledger;
pub mod plan;
pub mod release;
pub mod run;
pub mod sql;
pub mod workload;
