//! dpstat: differentially private statistics from CSV files, with exact noise.
//!
//! The crate is layered; each layer imports only from the layers before it in this list
//! (`tests/layers.rs` keeps it so), and docs/DESIGN.md §7 shows how a release flows through them:
//!
//! - [`error`]: the one error type and its exit codes;
//! - [`numeric`]: exact rationals, bounds, the grid, bins and categories;
//! - [`privacy`]: ε, the privacy unit, samplers, mechanisms, accuracy, the accountant, the ledger;
//! - [`data`]: the input, the scan (parallel for plain files), cells, filters and groups;
//! - [`report`]: the release schema and its text, JSON, chart and SVG renderings;
//! - [`query`]: one module per statistic, behind the [`query::statistic::Statistic`] trait;
//! - [`cmd`]: one module per subcommand, wiring the layers together;
//! - [`cli`]: the clap definition, turned into the commands' requests.
//!
//! This library exists for the binary, tests and benches; it is not a stable API.

pub mod cli;
pub mod cmd;
pub mod data;
pub mod error;
pub mod numeric;
pub mod privacy;
pub mod query;
pub mod report;
