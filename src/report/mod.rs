//! What a run prints: the release schema, and its renderings as text, JSON, a terminal chart,
//! an SVG chart, a workload table and a plan. Nothing here sees data or knows how a statistic
//! is computed; it prints what the statistics built.

pub mod chart;
pub mod describe;
pub mod figure;
pub mod plan;
pub mod release;
pub mod svg;
pub mod table;
pub mod text;
