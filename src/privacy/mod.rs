//! The privacy arithmetic, knowing nothing of CSV or of the statistics: ε as an exact rational,
//! the privacy unit, the exact samplers, the Laplace, permute-and-flip (with base-2 coins) and AboveThreshold mechanisms, the one
//! random generator, accuracy bounds, the accountant and the persistent ledger.
//!
//! Opt-in approximate DP (docs/DESIGN.md §9): δ (`delta`), zCDP's ρ and its conversion to
//! (ε, δ) (`zcdp`), the discrete Gaussian mechanism (`gaussian`), which noise a release draws
//! (`noise`: `--noise gaussian`), the partition-selection threshold of keys found in the data
//! (`threshold`: `--discover`), the composition of histories in several currencies
//! (`currency`, used by the accountant and the ledger), and how a budget's δ is shared between
//! them (`delta_use`).

pub mod above_threshold;
pub mod accountant;
pub mod accuracy;
pub mod base2;
pub mod contribution;
pub mod currency;
pub mod delta;
pub mod delta_use;
pub mod epsilon;
pub mod gaussian;
pub mod laplace;
pub mod ledger;
pub use ledger::key as ledger_key;
pub mod noise;
pub mod permute_and_flip;
pub mod renyi;
pub mod rng;
pub mod sampler;
pub mod threshold;
pub mod unit;
pub mod zcdp;
