//! The privacy arithmetic, knowing nothing of CSV or of the statistics: ε as an exact rational,
//! the privacy unit, the exact samplers, the Laplace, permute-and-flip and AboveThreshold mechanisms, the one
//! random generator, accuracy bounds, the ε accountant and the persistent ledger.

pub mod above_threshold;
pub mod accountant;
pub mod accuracy;
pub mod epsilon;
pub mod laplace;
pub mod ledger;
pub mod permute_and_flip;
pub mod rng;
pub mod sampler;
pub mod unit;
