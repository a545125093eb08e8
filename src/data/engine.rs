//! The engine boundary. A statistic's exact, mergeable aggregate is its [`Fold`]: the plan an
//! executor computes. An executor takes the empty fold, feeds it every row of its source (in
//! parts, on as many threads as it likes, merging the parts' folds in input order) and hands
//! back the folded state; the noise, the accountant and the ledger stay with the caller
//! (`cmd`), and no executor imports them (`tests/layers.rs` checks it).
//!
//! Two executors implement [`Executor`]: a dataset of CSV files (each part scanned like one
//! file, its partition values joined to its rows) and Parquet files (`data::parquet`); one CSV
//! file or standard input is the stream scan's (`data::scan::scan_stream`), which [`scan()`]
//! calls when the input is not a dataset. A new engine is one more implementation.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::data::bound::Bounded;
use crate::data::dataset::Listing;
use crate::data::input::{Dataset, Input};
use crate::data::parquet::{ParquetSet, Stop};
use crate::data::row::{BadCell, Cells, Fold, Row};
use crate::data::scan;
use crate::data::source::CsvOptions;
use crate::error::bad_input;
use crate::numeric::format::hex;

/// What computes a fold over a source.
pub trait Executor {
    /// Folds every row into `fold` on up to `threads` threads (0: the calling thread alone);
    /// returns the number of rows.
    fn run<F: Fold>(&mut self, fold: &mut F, threads: usize) -> Result<u64>;
}

/// The Parquet files of an input, reading the columns the flags named.
pub struct ParquetScan<'a> {
    pub input: &'a Input,
    pub set: &'a ParquetSet,
}

impl Executor for ParquetScan<'_> {
    fn run<F: Fold>(&mut self, fold: &mut F, threads: usize) -> Result<u64> {
        let columns = self.input.named_columns();
        self.set.scan(&columns, fold, threads.max(1)).map_err(|stop| stopped(self.input, stop))
    }
}

/// The one-line message of a Parquet scan that stopped.
pub fn stopped(input: &Input, stop: Stop) -> anyhow::Error {
    match stop {
        Stop::Cell { part, row, bad } => {
            let column = input.column_label(bad.column);
            bad_input(format!("{part}: row {row}, column '{column}': {}", bad.why))
        }
        Stop::Read { part, why } if part.is_empty() => bad_input(format!("{}: {why}", input.name())),
        Stop::Read { part, why } => bad_input(format!("{part}: {why}")),
    }
}

/// CSV files read one after the other, each into its own copy of the empty fold, merged in
/// order; the dataset's fingerprint is of the parts' fingerprints in order.
pub struct CsvParts<'a> {
    pub listing: &'a Listing,
    pub options: &'a CsvOptions,
    /// The parts' own columns: the partition columns come after them in every part's rows.
    pub width: usize,
    pub fingerprinted: bool,
    pub tolerant: bool,
    /// The fingerprint, once every part was read.
    pub fingerprint: Option<String>,
}

impl Executor for CsvParts<'_> {
    fn run<F: Fold>(&mut self, fold: &mut F, threads: usize) -> Result<u64> {
        use sha2::{Digest, Sha256};
        let empty = fold.clone();
        let mut rows = 0;
        let mut digest = Sha256::new();
        for part in &self.listing.parts {
            let mut input = Input::open_part(part, self.options, self.fingerprinted, threads)?;
            if self.tolerant {
                input.tolerate_ragged_rows();
            }
            let mut joined =
                Joined { inner: empty.clone(), width: self.width, values: part.partition.clone() };
            rows += scan::scan_stream(&mut input, &mut joined, threads)?;
            fold.merge(joined.inner);
            if let Some(print) = input.fingerprint() {
                part.hash_partition(&mut digest);
                digest.update(print.as_bytes());
                digest.update(b"\n");
            }
        }
        if self.fingerprinted {
            self.fingerprint = Some(format!("csv-parts-sha256:{}", hex(&digest.finalize())));
        }
        Ok(rows)
    }
}

/// A fold that sees a CSV part's rows with the part's partition values after its own fields.
#[derive(Clone, Serialize, Deserialize)]
struct Joined<F> {
    inner: F,
    /// Fields of the part's rows.
    width: usize,
    values: Vec<Vec<u8>>,
}

/// One row of a part and the part's partition values.
struct JoinedRow<'r, 'a> {
    row: &'r Row<'a>,
    width: usize,
    values: &'r [Vec<u8>],
}

impl Cells for JoinedRow<'_, '_> {
    fn text(&self, column: usize, _: usize) -> Option<&[u8]> {
        if column < self.width {
            self.row.get(column)
        } else {
            self.values.get(column - self.width).map(Vec::as_slice)
        }
    }

    fn number(&self, column: usize, _: usize) -> Option<Option<f64>> {
        if column < self.width {
            self.row.typed_number(column)
        } else {
            None
        }
    }

    fn width(&self) -> usize {
        self.width + self.values.len()
    }
}

impl<F: Fold> Fold for Joined<F> {
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        if self.values.is_empty() {
            return self.inner.row(row);
        }
        let joined = JoinedRow { row, width: self.width, values: &self.values };
        self.inner.row(&Row::cells(&joined, 0))
    }

    fn merge(&mut self, other: Self) {
        self.inner.merge(other.inner);
    }

    fn widest_column(&self) -> Option<usize> {
        // The partition columns are not in the part's records.
        self.inner.widest_column().map(|w| w.min(self.width.saturating_sub(1)))
    }

    fn heap_bytes(&self) -> usize {
        self.inner.heap_bytes()
    }

    fn part_heap_bytes(&self, rows: usize) -> usize {
        self.inner.part_heap_bytes(rows)
    }

    fn part_end(&mut self) {
        self.inner.part_end();
    }

    fn person_end(&mut self) {
        self.inner.person_end();
    }

    fn hears_persons(&self) -> bool {
        self.inner.hears_persons()
    }
}

/// Feeds every row of the input to `fold` through its executor; returns the number of rows.
/// Every statistic's scan comes here (`cmd`).
pub fn scan<F: Fold>(input: &mut Input, fold: &mut F) -> Result<u64> {
    // An executor holds the same fold (one per task): the same cap applies there.
    scan::check_memory(input, fold)?;
    #[cfg(feature = "cluster")]
    if let Some(remote) = input.engine() {
        return on_cluster(remote, input, fold);
    }
    let threads = scan::threads_for(input, fold);
    match run_dataset(input, fold, threads) {
        Some(rows) => rows,
        None => scan::scan_stream(input, fold, threads),
    }
}

/// Every record, in order, by the calling thread, with all its fields, its row number and its
/// line (`dpstat check`): for a dataset, rows are numbered on across its parts, and a Parquet
/// row's line is its row after a header line.
pub fn each_record<C: FnMut(&Row, u64, u64)>(input: &mut Input, mut each: C) -> Result<u64> {
    match input.dataset() {
        None => scan::each_record(input, &mut each),
        Some(Dataset::Empty { .. }) => Ok(0),
        Some(Dataset::Parquet { set, .. }) => {
            let columns: Vec<usize> = (0..input.width().unwrap_or(0)).collect();
            let mut n = 0u64;
            set.each(&columns, |row, _, _| {
                n += 1;
                each(row, n, n + 1);
            })
            .map_err(|stop| stopped(input, stop))
        }
        Some(Dataset::Csv { listing, options, .. }) => {
            let (parts, options) = (listing.parts.clone(), options.clone());
            let mut n = 0u64;
            for part in parts {
                let mut one = Input::open_part(&part, &options, false, 1)?;
                scan::each_record(&mut one, &mut |row, _, line| {
                    n += 1;
                    each(row, n, line);
                })?;
            }
            Ok(n)
        }
    }
}

/// Before the charge, with `--engine`: one executor of the cluster must run this build and open
/// every file (one line, exit 2, nothing spent otherwise).
#[cfg(feature = "cluster")]
pub fn probe(input: &Input) -> Result<()> {
    match (input.engine(), input.dataset()) {
        (Some(remote), Some(Dataset::Parquet { set, .. })) => {
            remote.probe(&set.paths()).map_err(|e| bad_input(format!("--engine: {e}")))
        }
        _ => Ok(()),
    }
}

/// Without the cluster engine there is nothing to ask.
#[cfg(not(feature = "cluster"))]
pub fn probe(_: &Input) -> Result<()> {
    Ok(())
}

/// Feeds every row to `bounded` (`--privacy-id`); on a cluster, which also chooses each
/// person's rows there, returns the query's fold of the kept rows and the persons who had rows
/// dropped (what [`Bounded::finish_counted`] returns here); None when the rows were read here
/// and `bounded` holds them.
pub fn scan_bounded<G: Fold>(input: &mut Input, bounded: &mut Bounded<G>) -> Result<Option<(G, u64)>> {
    #[cfg(feature = "cluster")]
    if let Some(remote) = input.engine() {
        scan::check_memory(input, bounded)?;
        let Some(Dataset::Parquet { set, .. }) = input.dataset() else {
            return Err(crate::error::Error::internal("a cluster scan of no Parquet files").into());
        };
        return match remote.scan_persons(set, &input.named_columns(), bounded) {
            Ok((fold, _, truncated)) => Ok(Some((fold, truncated))),
            Err(failure) => Err(cluster_failure(remote, input, failure)),
        };
    }
    scan(input, bounded)?;
    Ok(None)
}

#[cfg(feature = "cluster")]
fn cluster_failure(
    remote: &crate::data::cluster::Remote,
    input: &Input,
    failure: crate::data::cluster::Failure,
) -> anyhow::Error {
    use crate::data::cluster::Failure;
    match failure {
        Failure::Cell(bad) => {
            bad_input(format!("{}: column '{}': {}", input.name(), input.column_label(bad.column), bad.why))
        }
        Failure::Engine(why) => bad_input(format!("the cluster at {remote} failed: {why}")),
    }
}

/// Folds the rows on the cluster (`--engine`), which `Input::set_engine` checked can read them.
#[cfg(feature = "cluster")]
fn on_cluster<F: Fold>(remote: &crate::data::cluster::Remote, input: &Input, fold: &mut F) -> Result<u64> {
    let Some(Dataset::Parquet { set, .. }) = input.dataset() else {
        return Err(crate::error::Error::internal("a cluster scan of no Parquet files").into());
    };
    remote.scan(set, &input.named_columns(), fold).map_err(|failure| cluster_failure(remote, input, failure))
}

/// Runs the executor of an input that is a dataset; None for one CSV stream.
fn run_dataset<F: Fold>(input: &mut Input, fold: &mut F, threads: usize) -> Option<Result<u64>> {
    let shared: &Input = input;
    let (rows, fingerprint) = match shared.dataset()? {
        // That nothing matched is itself data (a partition folder exists because a row has its
        // value): it shows only as the release, over no rows (`cmd::release::note_no_files`
        // says so without a ledger).
        Dataset::Empty { .. } => (Ok(0), None),
        Dataset::Parquet { set, .. } => (ParquetScan { input: shared, set }.run(fold, threads), None),
        Dataset::Csv { listing, options, width } => {
            let mut parts = CsvParts {
                listing,
                options,
                width: *width,
                fingerprinted: shared.fingerprinted(),
                tolerant: shared.tolerant(),
                fingerprint: None,
            };
            let rows = parts.run(fold, threads);
            (rows, parts.fingerprint)
        }
    };
    if let Some(print) = fingerprint {
        input.set_fingerprint(print);
    }
    Some(rows)
}
