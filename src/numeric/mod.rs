//! Numbers before any privacy: exact rationals, irrationals bracketed between rationals (ln, exp,
//! √), finite bounds, the power-of-two grid, public bins and categories, and how a real is printed.
//! Nothing here knows of ε, noise or CSV.

pub mod bins;
pub mod bounds;
pub mod bracket;
pub mod exact;
pub mod format;
pub mod grid;
pub mod list;
