//! Reading the data, knowing nothing of noise or of the statistics: the source and its options,
//! the input (file, standard input, gzip), one row's view, cells and their parsing, the scan and
//! its parallel form for plain files, routing rows through filters and groups, bounding each
//! person's rows (`--privacy-id`), and the dataset fingerprint.

pub mod arrow_text;
pub mod bound;
pub mod cell;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod dataset;
pub mod date;
pub mod engine;
pub mod filter;
pub mod fingerprint;
pub mod input;
pub mod parallel;
pub mod parquet;
pub mod records;
pub mod route;
pub mod row;
pub mod scan;
pub mod source;
pub mod structure;
