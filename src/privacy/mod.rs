//! The privacy arithmetic, knowing nothing of CSV or of the statistics: ε as an exact rational,
//! the privacy unit, the exact samplers, the Laplace, permute-and-flip and AboveThreshold mechanisms, the one
//! random generator, accuracy bounds, the ε accountant and the persistent ledger.
//!
//! Library only, not yet exposed (docs/DESIGN.md §9): δ (`delta`), zCDP's ρ and its conversion
//! to (ε, δ) (`zcdp`), the discrete Gaussian mechanism (`gaussian`), the partition-selection
//! threshold (`threshold`), and the composition of histories in several currencies (`currency`).

pub mod above_threshold;
pub mod accountant;
pub mod accuracy;
pub mod currency;
pub mod delta;
pub mod epsilon;
pub mod gaussian;
pub mod laplace;
pub mod ledger;
pub mod noise;
pub mod permute_and_flip;
pub mod rng;
pub mod sampler;
pub mod threshold;
pub mod unit;
pub mod zcdp;
