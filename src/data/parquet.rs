//! Parquet parts: their footers read and checked before anything is charged, and the executor
//! that folds their row groups, reading only the columns the query named.
//!
//! A typed value reaches a query through the text the same table's CSV holds (the [`Cells`]
//! contract): integers and doubles are exact and fast (`v as f64` and a finite double are what
//! the parser returns for their decimal text, which a property test checks), and every other
//! type (decimals, dates, timestamps, booleans, floats, dictionaries) is formatted as text by
//! arrow and parsed by the one parser CSV cells go through, so no value can land on another
//! grid unit than its CSV text.
//!
//! arrow-rs still has panics on some corrupt input; every call into it that reads the file runs
//! under [`contained`], which turns a panic into an error without printing it.

use std::cell::{Cell, OnceCell};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use anyhow::Result;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Schema};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::Compression;
use sha2::{Digest, Sha256};

use crate::data::arrow_text::{self, Texts};
use crate::data::dataset::Part;
use crate::data::row::{BadCell, Cells, Fold, Row};
use crate::error::{bad_input, shown};
use crate::numeric::format::hex;

/// Rows per record batch: large enough that a batch's set-up is nothing next to its rows,
/// small enough that the batches of every thread stay a few MiB.
const BATCH_ROWS: usize = 8192;

/// One Parquet file of a dataset, its footer read.
pub struct ParquetPart {
    pub part: Part,
    meta: ArrowReaderMetadata,
    size: u64,
}

/// The Parquet files of a dataset, checked to hold the same columns.
pub struct ParquetSet {
    parts: Vec<ParquetPart>,
    /// The files' columns, then the partition columns.
    names: Vec<String>,
    /// How many of `names` are the files' own columns.
    file_columns: usize,
}

/// How a scan stopped early.
pub enum Stop {
    /// A cell refused by the query; `row` counts from 1 within the part.
    Cell { part: String, row: u64, bad: BadCell },
    /// The file could not be read (an I/O error, a corrupt page).
    Read { part: String, why: String },
}

/// Opens every part and reads its footer: a file that is not Parquet, a corrupt footer, a
/// column type that differs from the first part's or a partition named like a column is
/// refused here, before anything is charged.
pub fn open(parts: &[Part], partitions: &[String]) -> Result<ParquetSet> {
    let mut opened: Vec<ParquetPart> = Vec::with_capacity(parts.len());
    for part in parts {
        let file =
            File::open(&part.path).map_err(|e| bad_input(format!("cannot open {}: {e}", part.shown)))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let meta = contained(|| {
            ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| e.to_string())
        })
        .map_err(|why| {
            bad_input(format!("{}: not a readable Parquet file: {}", part.shown, shown(&why, 160)))
        })?;
        if let Some(first) = opened.first() {
            if let Some(why) = schema_difference(first.meta.schema(), meta.schema()) {
                return Err(bad_input(format!(
                    "{}: its columns differ from those of {}: {why}; every part of a dataset must \
                     declare the same columns and types",
                    part.shown,
                    crate::data::dataset::other(&first.part, part)
                )));
            }
        }
        opened.push(ParquetPart { part: part.clone(), meta, size });
    }
    let mut names: Vec<String> = match opened.first() {
        Some(first) => first.meta.schema().fields().iter().map(|f| f.name().clone()).collect(),
        None => Vec::new(),
    };
    let file_columns = names.len();
    for name in partitions {
        if names.contains(name) {
            return Err(bad_input(format!(
                "the partition folders name a column the files hold too: '{}'",
                shown(name, 40)
            )));
        }
        names.push(name.clone());
    }
    Ok(ParquetSet { parts: opened, names, file_columns })
}

/// A codec's name, when this build decompresses its pages (the `parquet` crate's features in
/// Cargo.toml); Err with its name when it does not.
fn codec(compression: Compression) -> Result<&'static str, &'static str> {
    match compression {
        Compression::UNCOMPRESSED => Ok("uncompressed"),
        Compression::SNAPPY => Ok("snappy"),
        Compression::GZIP(_) => Ok("gzip"),
        Compression::LZ4 => Ok("lz4"),
        Compression::LZ4_RAW => Ok("lz4_raw"),
        Compression::ZSTD(_) => Ok("zstd"),
        Compression::BROTLI(_) => Ok("brotli"),
        // The parquet crate has no LZO codec.
        Compression::LZO => Err("LZO"),
    }
}

/// The first difference between two parts' declared columns, by name and type (not by
/// nullability, which writers set per file).
fn schema_difference(first: &Schema, other: &Schema) -> Option<String> {
    let (a, b) = (first.fields(), other.fields());
    for (x, y) in a.iter().zip(b.iter()) {
        if x.name() != y.name() {
            return Some(format!("column '{}' there is '{}' here", shown(x.name(), 40), shown(y.name(), 40)));
        }
        if x.data_type() != y.data_type() {
            return Some(format!(
                "column '{}' is {} there and {} here",
                shown(x.name(), 40),
                x.data_type(),
                y.data_type()
            ));
        }
    }
    (a.len() != b.len()).then(|| format!("{} columns there, {} here", a.len(), b.len()))
}

impl ParquetSet {
    /// Every part's path, as text.
    pub fn paths(&self) -> Vec<String> {
        self.parts.iter().map(|p| p.part.path.to_string_lossy().into_owned()).collect()
    }

    pub fn file_columns(&self) -> usize {
        self.file_columns
    }

    /// The parts' paths grouped by their partition values, in listing order (a cluster reads
    /// each group as one table and adds the values as constant columns).
    pub fn by_partition(&self) -> Vec<(Vec<&Path>, &[Vec<u8>])> {
        let mut groups: Vec<(Vec<&Path>, &[Vec<u8>])> = Vec::new();
        for part in &self.parts {
            let (path, values) = (part.part.path.as_path(), part.part.partition.as_slice());
            match groups.last_mut() {
                Some((paths, last)) if *last == values => paths.push(path),
                _ => groups.push((vec![path], values)),
            }
        }
        groups
    }

    /// The column names: the files' own, then the partitions'.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The declared type of dataset column `column` when no value of it can be a number: a
    /// Boolean, a list, a struct, a map or a union (or a dictionary of them), which arrow
    /// formats as `true`, `[1, 2]` or `{a: 1}`. Text and binary may hold numbers as text, as a
    /// CSV cell does; dates, times and intervals are left to the cell parser (which reads
    /// dates as numbers); a column of type Null is the empty cells of a column whose every
    /// value is null, which writers infer from the data. None for a partition column (text).
    pub fn never_numeric(&self, column: usize) -> Option<String> {
        fn never(t: &DataType) -> bool {
            match t {
                DataType::Boolean
                | DataType::List(_)
                | DataType::LargeList(_)
                | DataType::ListView(_)
                | DataType::LargeListView(_)
                | DataType::FixedSizeList(..)
                | DataType::Struct(_)
                | DataType::Map(..)
                | DataType::Union(..) => true,
                DataType::Dictionary(_, values) => never(values),
                DataType::RunEndEncoded(_, values) => never(values.data_type()),
                _ => false,
            }
        }
        self.declared(column).filter(|t| never(t)).map(DataType::to_string)
    }

    /// The declared type of a file column that has no cell text (a list, a struct, a
    /// duration: `arrow_text::readable`); None for a readable one or a partition column.
    pub fn unreadable(&self, column: usize) -> Option<String> {
        self.declared(column).filter(|t| !arrow_text::readable(t)).map(DataType::to_string)
    }

    /// A part whose pages of file column `column` are compressed with a codec this build does
    /// not decompress (LZO), named, with the codec: the footer says so, so it is refused before
    /// the charge instead of failing after it. None for a partition column.
    pub fn unread_codec(&self, column: usize) -> Option<(&str, &'static str)> {
        for part in self.parts.iter().filter(|_| column < self.file_columns) {
            let meta = part.meta.metadata();
            let schema = meta.file_metadata().schema_descr();
            for group in meta.row_groups() {
                for (leaf, chunk) in group.columns().iter().enumerate() {
                    let named = leaf < schema.num_columns() && schema.get_column_root_idx(leaf) == column;
                    match codec(chunk.compression()) {
                        Err(name) if named => return Some((&part.part.shown, name)),
                        _ => {}
                    }
                }
            }
        }
        None
    }

    /// The declared type of a file column (None for a partition column, whose values are text,
    /// or an empty set).
    fn declared(&self, column: usize) -> Option<&DataType> {
        let schema = self.parts.first()?.meta.schema();
        schema.fields().get(column).filter(|_| column < self.file_columns).map(|f| f.data_type())
    }

    /// The fingerprint of the parts (§5.2 of DESIGN): SHA-256 over each part's partition
    /// values, size and footer (which holds every column chunk's offsets, sizes and, where the
    /// writer kept them, statistics), in order; read without reading any column.
    pub fn fingerprint(&self) -> Result<String> {
        let mut digest = Sha256::new();
        for part in &self.parts {
            let mut file = File::open(&part.part.path)
                .map_err(|e| bad_input(format!("cannot open {}: {e}", part.part.shown)))?;
            let footer = footer(&mut file, part.size)
                .map_err(|e| bad_input(format!("{}: reading its footer: {e}", part.part.shown)))?;
            part.part.hash_partition(&mut digest);
            digest.update(part.size.to_le_bytes());
            digest.update((footer.len() as u64).to_le_bytes());
            digest.update(&footer);
        }
        Ok(format!("parquet-sha256:{}", hex(&digest.finalize())))
    }

    /// Folds every row of every part into `fold`, in order, reading only the columns in
    /// `columns` (dataset indices) and scanning row groups on `threads` threads: each thread
    /// takes a run of consecutive row groups into its own copy of the empty fold, and the copies
    /// are merged in input order, so the result is that of one thread. The first refused cell in
    /// input order stops the scan. Returns the number of rows.
    pub fn scan<F: Fold>(&self, columns: &[usize], fold: &mut F, threads: usize) -> Result<u64, Stop> {
        let layout = Layout::new(self, columns);
        let units = self.units();
        let threads = threads.clamp(1, units.len().max(1));
        let empties: Vec<F> = (0..threads).map(|_| fold.clone()).collect();
        // A thread that stops marks its index; those after it stop too, those before it go on
        // (one of them may stop earlier in input order).
        let stopped = AtomicUsize::new(usize::MAX);
        let results: Vec<Result<(F, u64), Stop>> = std::thread::scope(|scope| {
            let handles: Vec<_> = empties
                .into_iter()
                .enumerate()
                .map(|(t, mut mine)| {
                    let (units, layout, stopped) = (&units, &layout, &stopped);
                    let run = &units[t * units.len() / threads..(t + 1) * units.len() / threads];
                    scope.spawn(move || {
                        let mut rows = 0u64;
                        for &unit in run {
                            if stopped.load(Ordering::Relaxed) < t {
                                break;
                            }
                            match self.unit(unit, layout, &mut |row, _| mine.row(row)) {
                                Ok(n) => rows += n,
                                Err(stop) => {
                                    stopped.fetch_min(t, Ordering::Relaxed);
                                    return Err(stop);
                                }
                            }
                        }
                        Ok((mine, rows))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Stop::Read { part: String::new(), why: "a reading thread failed".into() })
                    })
                })
                .collect()
        });
        let mut rows = 0;
        for result in results {
            let (part, n) = result?;
            fold.merge(part);
            rows += n;
        }
        Ok(rows)
    }

    /// Every row in order, by the calling thread, with its part and its row number in the part
    /// (`dpstat check`).
    pub fn each(&self, columns: &[usize], mut each: impl FnMut(&Row, &str, u64)) -> Result<u64, Stop> {
        let layout = Layout::new(self, columns);
        let mut rows = 0;
        for unit in self.units() {
            let shown = &self.parts[unit.0].part.shown;
            rows += self.unit(unit, &layout, &mut |row, n| {
                each(row, shown, n);
                Ok(())
            })?;
        }
        Ok(rows)
    }

    /// (part, row group, the group's first row in the part) of every row group, in order.
    fn units(&self) -> Vec<(usize, usize, u64)> {
        let mut units = Vec::new();
        for (p, part) in self.parts.iter().enumerate() {
            let mut first = 0u64;
            for (g, group) in part.meta.metadata().row_groups().iter().enumerate() {
                units.push((p, g, first));
                first += group.num_rows().max(0) as u64;
            }
        }
        units
    }

    /// Feeds every row of row group `g` of part `p` to `each` with its row number in the part
    /// (from 1), the group's first row being row `first + 1`.
    fn unit(
        &self,
        (p, g, first): (usize, usize, u64),
        layout: &Layout,
        each: &mut dyn FnMut(&Row, u64) -> Result<(), BadCell>,
    ) -> Result<u64, Stop> {
        let part = &self.parts[p];
        let shown = || part.part.shown.clone();
        let read = |why: String| Stop::Read { part: shown(), why };
        let constants: Vec<&[u8]> = part.part.partition.iter().map(Vec::as_slice).collect();
        if layout.file_roots.is_empty() {
            // Nothing to read from the file: its rows are counted from the footer.
            let n = part.meta.metadata().row_group(g).num_rows().max(0) as u64;
            let cells = BatchCells::new(layout, None, &constants);
            for r in 1..=n {
                each(&Row::cells(&cells, 0), first + r).map_err(|bad| Stop::Cell {
                    part: shown(),
                    row: first + r,
                    bad,
                })?;
            }
            return Ok(n);
        }
        // Each unit opens the file anew: a `File` shares its offset with its clones, and the
        // reader seeks.
        let file = File::open(&part.part.path).map_err(|e| read(e.to_string()))?;
        let mask = ProjectionMask::roots(part.meta.parquet_schema(), layout.file_roots.iter().copied());
        let mut reader = contained(|| {
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, part.meta.clone())
                .with_projection(mask)
                .with_row_groups(vec![g])
                .with_batch_size(BATCH_ROWS)
                .build()
                .map_err(|e| e.to_string())
        })
        .map_err(read)?;
        let mut at = first;
        loop {
            let batch =
                match contained(|| reader.next().transpose().map_err(|e| e.to_string())).map_err(read)? {
                    Some(batch) => batch,
                    None => break,
                };
            let cells = BatchCells::new(layout, Some(&batch), &constants);
            for r in 0..batch.num_rows() {
                let row = at + r as u64 + 1;
                each(&Row::cells(&cells, r), row).map_err(|bad| Stop::Cell { part: shown(), row, bad })?;
            }
            at += batch.num_rows() as u64;
        }
        Ok(at - first)
    }
}

/// The fingerprint of a dataset of no files.
pub fn empty_fingerprint() -> String {
    format!("dataset-sha256:{}", hex(&Sha256::digest(b"")))
}

/// The last bytes of a Parquet file: its metadata, its length and `PAR1`.
fn footer(file: &mut File, size: u64) -> std::io::Result<Vec<u8>> {
    let invalid = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not a Parquet file");
    if size < 12 {
        return Err(invalid());
    }
    let mut tail = [0u8; 8];
    file.seek(SeekFrom::Start(size - 8))?;
    file.read_exact(&mut tail)?;
    let len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if &tail[4..] != b"PAR1" || len + 8 > size {
        return Err(invalid());
    }
    let mut footer = vec![0u8; len as usize + 8];
    file.seek(SeekFrom::Start(size - 8 - len))?;
    file.read_exact(&mut footer)?;
    Ok(footer)
}

/// Where each dataset column of a row comes from.
struct Layout {
    width: usize,
    /// For dataset column i: its position among the batch's columns, or the partition value
    /// number, or nothing (not read).
    slots: Vec<Slot>,
    /// The file's root columns to read, in file order (the batch holds them so).
    file_roots: Vec<usize>,
}

#[derive(Clone, Copy)]
enum Slot {
    Absent,
    Batch(usize),
    Partition(usize),
}

impl Layout {
    fn new(set: &ParquetSet, columns: &[usize]) -> Layout {
        let width = set.names.len();
        let mut wanted: Vec<usize> = columns.iter().copied().filter(|&c| c < width).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let file_roots: Vec<usize> = wanted.iter().copied().filter(|&c| c < set.file_columns).collect();
        let mut slots = vec![Slot::Absent; width];
        for (k, &c) in file_roots.iter().enumerate() {
            slots[c] = Slot::Batch(k);
        }
        for (slot, c) in slots.iter_mut().zip(0..).skip(set.file_columns) {
            *slot = Slot::Partition(c - set.file_columns);
        }
        Layout { width, slots, file_roots }
    }
}

/// Cells of one column of one batch, as the query reads them.
enum Column<'b> {
    /// Text, without a copy: the value bytes of a string or binary array.
    Utf8(&'b arrow_array::StringArray),
    LargeUtf8(&'b arrow_array::LargeStringArray),
    Utf8View(&'b arrow_array::StringViewArray),
    Binary(&'b arrow_array::BinaryArray),
    LargeBinary(&'b arrow_array::LargeBinaryArray),
    /// Integers and doubles: their numbers now, their text only if a query reads it.
    Numbers {
        values: Vec<Option<f64>>,
        array: &'b ArrayRef,
        text: OnceCell<Texts>,
    },
    /// Everything else, formatted as its CSV text; numbers are parsed from it.
    Formatted(Texts),
}

macro_rules! integers {
    ($array:expr, $($t:ty),*) => {
        match $array.data_type() {
            $(dt if dt == &<$t as arrow_array::types::ArrowPrimitiveType>::DATA_TYPE => {
                Some($array.as_primitive::<$t>().iter().map(|v| v.map(|x| x as f64)).collect::<Vec<_>>())
            })*
            _ => None,
        }
    };
}

impl<'b> Column<'b> {
    fn new(array: &'b ArrayRef) -> Column<'b> {
        match array.data_type() {
            DataType::Utf8 => return Column::Utf8(array.as_string::<i32>()),
            DataType::LargeUtf8 => return Column::LargeUtf8(array.as_string::<i64>()),
            DataType::Utf8View => return Column::Utf8View(array.as_string_view()),
            DataType::Binary => return Column::Binary(array.as_binary::<i32>()),
            DataType::LargeBinary => return Column::LargeBinary(array.as_binary::<i64>()),
            DataType::Float64 => {
                let values =
                    array.as_primitive::<Float64Type>().iter().map(|v| v.filter(|x| x.is_finite())).collect();
                return Column::Numbers { values, array, text: OnceCell::new() };
            }
            DataType::Float32 => {
                // An f32's text is its own shortest decimal, which as a double is another number
                // than the f32 widened: the number is that text's, as CSV would read it.
                return Column::Formatted(arrow_text::texts(array.as_ref()));
            }
            _ => {}
        }
        // Every i64 and u64 converts with `as` to the double nearest it, ties to even: the
        // correctly rounded value the parser returns for its decimal text.
        if let Some(values) = integers!(
            array, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type
        ) {
            return Column::Numbers { values, array, text: OnceCell::new() };
        }
        Column::Formatted(arrow_text::texts(array.as_ref()))
    }

    fn text(&self, row: usize) -> Option<&[u8]> {
        fn or_empty<'x>(present: bool, value: impl FnOnce() -> &'x [u8]) -> Option<&'x [u8]> {
            Some(if present { value() } else { b"" })
        }
        match self {
            Column::Utf8(a) => or_empty(a.is_valid(row), || a.value(row).as_bytes()),
            Column::LargeUtf8(a) => or_empty(a.is_valid(row), || a.value(row).as_bytes()),
            Column::Utf8View(a) => or_empty(a.is_valid(row), || a.value(row).as_bytes()),
            Column::Binary(a) => or_empty(a.is_valid(row), || a.value(row)),
            Column::LargeBinary(a) => or_empty(a.is_valid(row), || a.value(row)),
            Column::Numbers { array, text, .. } => {
                text.get_or_init(|| arrow_text::texts(array.as_ref())).get(row)
            }
            Column::Formatted(texts) => texts.get(row),
        }
    }
}

/// One record batch (or a row group of no columns read) as [`Cells`].
struct BatchCells<'b> {
    width: usize,
    columns: Vec<Option<Column<'b>>>,
    slots: &'b [Slot],
    constants: &'b [&'b [u8]],
}

impl<'b> BatchCells<'b> {
    fn new(layout: &'b Layout, batch: Option<&'b RecordBatch>, constants: &'b [&'b [u8]]) -> BatchCells<'b> {
        BatchCells::of_arrays(layout, batch.map_or(&[], |b| b.columns()), constants)
    }

    fn of_arrays(layout: &'b Layout, arrays: &'b [ArrayRef], constants: &'b [&'b [u8]]) -> BatchCells<'b> {
        let columns = arrays.iter().map(|a| Some(Column::new(a))).collect();
        BatchCells { width: layout.width, columns, slots: &layout.slots, constants }
    }
}

/// Folds the rows of arrays another engine read (a cluster executor's batch): `arrays[k]` holds
/// dataset column `columns[k]` of a dataset `width` columns wide, its values read exactly as a
/// Parquet scan reads them. Returns the rows; a refused cell stops it with the cell and the
/// row's index in the batch.
pub fn fold_arrays<F: Fold>(
    width: usize,
    columns: &[usize],
    arrays: &[ArrayRef],
    rows: usize,
    fold: &mut F,
) -> Result<u64, (usize, BadCell)> {
    each_row_of_arrays(width, columns, arrays, rows, |row| fold.row(row))
}

/// [`fold_arrays`] for any per-row function.
pub fn each_row_of_arrays(
    width: usize,
    columns: &[usize],
    arrays: &[ArrayRef],
    rows: usize,
    mut each: impl FnMut(&Row) -> Result<(), BadCell>,
) -> Result<u64, (usize, BadCell)> {
    let mut slots = vec![Slot::Absent; width];
    for (k, &c) in columns.iter().enumerate() {
        if let Some(slot) = slots.get_mut(c) {
            *slot = Slot::Batch(k);
        }
    }
    let layout = Layout { width, slots, file_roots: Vec::new() };
    let cells = BatchCells::of_arrays(&layout, arrays, &[]);
    for r in 0..rows {
        each(&Row::cells(&cells, r)).map_err(|bad| (r, bad))?;
    }
    Ok(rows as u64)
}

impl Cells for BatchCells<'_> {
    #[inline]
    fn text(&self, column: usize, row: usize) -> Option<&[u8]> {
        match *self.slots.get(column)? {
            Slot::Absent => None,
            Slot::Batch(k) => self.columns.get(k)?.as_ref()?.text(row),
            Slot::Partition(j) => self.constants.get(j).copied(),
        }
    }

    #[inline]
    fn number(&self, column: usize, row: usize) -> Option<Option<f64>> {
        match *self.slots.get(column)? {
            Slot::Batch(k) => match self.columns.get(k)?.as_ref()? {
                Column::Numbers { values, .. } => values.get(row).copied(),
                _ => None,
            },
            _ => None,
        }
    }

    fn width(&self) -> usize {
        self.width
    }
}

thread_local! {
    /// Set while this thread runs [`contained`]: a panic then is the reader's, and not printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs a call into the Parquet reader, turning a panic into an error: arrow-rs has panics on
/// some corrupt input, and no input may make dpstat panic. The panic's own message is not
/// printed (the error says what happened).
pub fn contained<T>(call: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = Arc::new(panic::take_hook());
        panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(call));
    QUIET.with(|q| q.set(false));
    match result {
        Ok(result) => result,
        Err(payload) => {
            let why = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown".into());
            Err(format!("corrupt data (the reader failed: {})", shown(&why, 120)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::parse_number;
    use proptest::prelude::*;

    proptest! {
        /// Integers and doubles skip the parser: what they give must be what it gives for their text.
        #[test]
        fn typed_numbers_equal_their_parsed_text(i in any::<i64>(), u in any::<u64>(), bits in any::<u64>()) {
            prop_assert_eq!(parse_number(i.to_string().as_bytes()).map(f64::to_bits), Some((i as f64).to_bits()));
            prop_assert_eq!(parse_number(u.to_string().as_bytes()).map(f64::to_bits), Some((u as f64).to_bits()));
            let x = f64::from_bits(bits);
            let typed = Some(x).filter(|x| x.is_finite()).map(f64::to_bits);
            prop_assert_eq!(parse_number(x.to_string().as_bytes()).map(f64::to_bits), typed);
        }
    }

    #[test]
    fn panics_in_the_reader_are_errors() {
        let got: Result<(), String> = contained(|| panic!("index out of bounds"));
        assert!(got.unwrap_err().contains("index out of bounds"));
        assert_eq!(contained(|| Ok(3)), Ok(3));
    }
}
