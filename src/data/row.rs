//! One row as every query sees it, whichever reader produced it, and the trait of the per-row
//! state a query folds its rows into.

use csv::ByteRecord;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// A query's per-row state. `row` sees every row that passed the filters; `merge` combines the
/// states of two consecutive parts of the input (for parallel scans), so it must be associative
/// and exact: folding A then B must equal merging the fold of A with the fold of B.
///
/// A fold is also its own wire format: a cluster executor (`data::cluster`) is sent the empty
/// fold as its plan and sends back the folded state, both serialized with serde.
pub trait Fold: Clone + Send + Serialize + DeserializeOwned + 'static {
    fn row(&mut self, row: &Row) -> Result<(), BadCell>;
    fn merge(&mut self, other: Self);
    /// The largest column index `row` reads, checked against the first row's width.
    fn widest_column(&self) -> Option<usize>;

    /// The memory this state holds besides its own size (counts per bin, candidate or group):
    /// the scan bounds how many copies of it exist at once, and refuses one that is too large.
    fn heap_bytes(&self) -> usize {
        0
    }

    /// The most heap a copy that started empty holds after folding at most `rows` rows: the
    /// copies that fold one part of a parallel scan (`data::scan::parallel_fold_bytes`). A
    /// state allocated up front (counts per bin or group) holds [`Fold::heap_bytes`] whatever
    /// its rows, the default; one that grows with its rows may say less. A wrapper passes it on
    /// (one that does not is budgeted at its worst case, [`Fold::heap_bytes`]).
    fn part_heap_bytes(&self, _rows: usize) -> usize {
        self.heap_bytes()
    }

    /// Called by a parallel scan on the copy that folded one part, on the thread that folded it,
    /// before the copy goes to be merged: work done here leaves the merging thread, which is
    /// serial. A quantile puts its part's positions in bucket order (issue 38). A wrapper passes
    /// it on (where one does not, the merging thread does that work).
    fn part_end(&mut self) {}

    /// Called by contribution bounding (`data::bound`) after the last kept row of one person,
    /// which it replays person by person: a fold that counts distinct persons (keys found in
    /// the data, `query::discover`) closes the person here. Nothing else needs it; a wrapper
    /// around such a fold must pass it on.
    fn person_end(&mut self) {}

    /// Whether [`Fold::person_end`] does anything here: a fold holding many (one per `--by`
    /// group) asks its first, so that folds which ignore it are not called once per person
    /// and group.
    fn hears_persons(&self) -> bool {
        false
    }
}

/// `--decimal`: the mark between a number's whole part and its fraction in the file's cells.
/// Flags (bounds, filters, ε) always take a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum DecimalMark {
    /// `228.04`: what `str::parse::<f64>` reads.
    #[default]
    Point,
    /// `228,04`: a cell with a point is refused (it would be a thousands separator there).
    Comma,
}

impl FromStr for DecimalMark {
    type Err = String;
    fn from_str(s: &str) -> Result<DecimalMark, String> {
        match s {
            "." | "point" => Ok(DecimalMark::Point),
            "," | "comma" => Ok(DecimalMark::Comma),
            _ => Err("expected , (comma) or . (point)".into()),
        }
    }
}

/// One row's fields, by 0-based index, as the folds see them: a csv `ByteRecord` (tests), a
/// record found by the scan ([`records`](crate::data::records)) with the spans of its first
/// fields (those the scan reads), their quotes already taken off, or one row of a batch of typed
/// columns ([`Cells`], a Parquet file).
///
/// A row also carries the decimal mark its number cells are read with (`--decimal`, a
/// property of the file like its delimiter): the scan sets it, every reader of a number asks it.
#[derive(Clone, Copy)]
pub struct Row<'a>(Fields<'a>, DecimalMark);

#[derive(Clone, Copy)]
enum Fields<'a> {
    Record(&'a ByteRecord),
    /// A record whose field i ends at `ends[i]` and starts after the one before it; with
    /// `quoted`, a field that starts with a quote is read between its first and last bytes.
    Line {
        bytes: &'a [u8],
        start: usize,
        ends: &'a [usize],
        quoted: bool,
        width: usize,
        memo: &'a [Memo],
        stamp: u64,
    },
    Spans {
        bytes: &'a [u8],
        /// Values rewritten without their quotes (`""` made one quote), for spans marked
        /// [`Span::REWRITTEN`].
        rewritten: &'a [u8],
        spans: &'a [Span],
        /// Fields in the row (also those past `spans`).
        width: usize,
        /// Numbers already parsed in this row, by column: see [`Row::memo`].
        memo: &'a [Memo],
        stamp: u64,
        /// The offset in `bytes` of the record's first byte.
        start: usize,
    },
    Cells {
        cells: &'a dyn Cells,
        row: usize,
    },
}

/// A batch of rows held as columns (a Parquet row group's record batch), as [`Row`] reads it.
///
/// Its contract is the one that makes a CSV file and a Parquet file of the same table give the
/// same release: `text` is the cell as that table's CSV would hold it (empty for a null), and
/// `number`, when the column is numeric, is exactly what
/// [`parse_number`](crate::data::cell::parse_number) returns for that text.
pub trait Cells {
    /// The cell of `column` in `row`; None for a column the batch does not hold (not read).
    fn text(&self, column: usize, row: usize) -> Option<&[u8]>;
    /// The cell's number when its column is typed as a number: Some(None) for a null or a
    /// non-finite value; None when the number must be parsed from the text.
    fn number(&self, column: usize, row: usize) -> Option<Option<f64>>;
    /// Columns in a row (also those the batch does not hold).
    fn width(&self) -> usize;
}

/// Where a field's value lies: `bytes[start..end]`, or `rewritten[..]` with
/// [`Span::REWRITTEN`] set in `start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub const REWRITTEN: usize = 1 << (usize::BITS - 1);
}

/// A number parsed from a cell, marked with the row it was parsed in (`stamp`), so that every
/// query reading the same column of a row parses it once.
pub type Memo = std::cell::Cell<(u64, Option<f64>)>;

impl<'a> Row<'a> {
    pub fn record(record: &'a ByteRecord) -> Row<'a> {
        Row(Fields::Record(record), DecimalMark::Point)
    }

    /// A record of `width` fields that starts at `bytes[start]` and whose first fields lie at
    /// `spans`; `memo` holds numbers parsed in earlier rows under other stamps.
    #[allow(clippy::too_many_arguments)]
    pub fn spans(
        bytes: &'a [u8],
        start: usize,
        rewritten: &'a [u8],
        spans: &'a [Span],
        width: usize,
        memo: &'a [Memo],
        stamp: u64,
    ) -> Row<'a> {
        Row(Fields::Spans { bytes, rewritten, spans, width, memo, stamp, start }, DecimalMark::Point)
    }

    /// A record that starts at `bytes[start]`, whose field i ends at `ends[i]`; with `quoted`,
    /// a field that starts with a quote has its value between its first and last bytes (the
    /// caller checked that it ends with its only other quote).
    #[allow(clippy::too_many_arguments)]
    pub fn line(
        bytes: &'a [u8],
        start: usize,
        ends: &'a [usize],
        quoted: bool,
        width: usize,
        memo: &'a [Memo],
        stamp: u64,
    ) -> Row<'a> {
        Row(Fields::Line { bytes, start, ends, quoted, width, memo, stamp }, DecimalMark::Point)
    }

    /// Row `row` of a batch of columns.
    pub fn cells(cells: &'a dyn Cells, row: usize) -> Row<'a> {
        Row(Fields::Cells { cells, row }, DecimalMark::Point)
    }

    /// This row with its number cells read under `mark`.
    pub fn with_decimal(self, mark: DecimalMark) -> Row<'a> {
        Row(self.0, mark)
    }

    /// The decimal mark of its number cells.
    #[inline(always)]
    pub fn decimal(&self) -> DecimalMark {
        self.1
    }

    /// The offset of the record's first byte in the bytes the scan read it from (0 for a
    /// `ByteRecord` or a row of columns).
    pub fn offset(&self) -> usize {
        match self.0 {
            Fields::Record(_) | Fields::Cells { .. } => 0,
            Fields::Line { start, .. } | Fields::Spans { start, .. } => start,
        }
    }

    /// Field `index`, untrimmed; None past the fields this row holds.
    #[inline(always)]
    pub fn get(&self, index: usize) -> Option<&'a [u8]> {
        match self.0 {
            Fields::Record(record) => record.get(index),
            Fields::Line { bytes, start, ends, quoted, .. } => {
                let end = *ends.get(index)?;
                let from = if index == 0 { start } else { ends[index - 1] + 1 };
                let field = bytes.get(from..end)?;
                match field {
                    [b'"', inner @ .., _] if quoted => Some(inner),
                    _ => Some(field),
                }
            }
            Fields::Spans { bytes, rewritten, spans, .. } => {
                let span = spans.get(index)?;
                if span.start & Span::REWRITTEN == 0 {
                    bytes.get(span.start..span.end)
                } else {
                    rewritten.get(span.start & !Span::REWRITTEN..span.end)
                }
            }
            Fields::Cells { cells, row } => cells.text(index, row),
        }
    }

    /// The number of field `index` when the row holds it typed (a Parquet number column):
    /// Some(None) for a null; None when it is to be parsed from the text.
    #[inline(always)]
    pub fn typed_number(&self, index: usize) -> Option<Option<f64>> {
        match self.0 {
            Fields::Cells { cells, row } => cells.number(index, row),
            _ => None,
        }
    }

    /// The number of fields in the row.
    pub fn width(&self) -> usize {
        match self.0 {
            Fields::Record(record) => record.len(),
            Fields::Line { width, .. } | Fields::Spans { width, .. } => width,
            Fields::Cells { cells, .. } => cells.width(),
        }
    }

    /// The memo slot of column `index` and this row's stamp: a slot holding this stamp holds
    /// the column's number in this row.
    #[inline]
    pub fn memo(&self, index: usize) -> Option<(&'a Memo, u64)> {
        match self.0 {
            Fields::Record(_) | Fields::Cells { .. } => None,
            Fields::Line { memo, stamp, .. } | Fields::Spans { memo, stamp, .. } => {
                memo.get(index).map(|slot| (slot, stamp))
            }
        }
    }
}

/// Why a cell was refused; the scan adds file, row and column name.
#[derive(Debug)]
pub struct BadCell {
    pub column: usize,
    pub why: String,
}

/// The longest key of a grouping found in the data (`--discover`): a longer cell counts under
/// its first this many bytes (a key is a label, not a document), cut back to a character
/// boundary ([`key_of`]).
pub const MAX_KEY_BYTES: usize = 256;

/// The key a cell counts under: its first [`MAX_KEY_BYTES`] bytes, cut back so that it does not
/// end inside a UTF-8 character. A function of the cell alone, so the rows' keys do not depend
/// on each other (`query::discover`); here because contribution bounding (`data::bound`) must
/// group a person's rows under the same keys as the count does.
pub fn key_of(cell: &[u8]) -> &[u8] {
    if cell.len() <= MAX_KEY_BYTES {
        return cell;
    }
    let mut end = MAX_KEY_BYTES;
    // A continuation byte (0b10xx_xxxx) at `end` means the cut would split a character; at most
    // three steps back reach its first byte (in text that is not UTF-8, stop after three).
    while end > MAX_KEY_BYTES - 3 && cell[end] & 0xC0 == 0x80 {
        end -= 1;
    }
    &cell[..end]
}

/// The trimmed bytes of a cell (empty if the row is shorter).
#[inline]
pub fn text_cell<'a>(row: &Row<'a>, index: usize) -> &'a [u8] {
    row.get(index).unwrap_or_default().trim_ascii()
}
