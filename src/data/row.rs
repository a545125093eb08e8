//! One row as every query sees it, whichever reader produced it, and the trait of the per-row
//! state a query folds its rows into.

use csv::ByteRecord;

/// A query's per-row state. `row` sees every row that passed the filters; `merge` combines the
/// states of two consecutive parts of the input (for parallel scans), so it must be associative
/// and exact: folding A then B must equal merging the fold of A with the fold of B.
pub trait Fold: Clone + Send {
    fn row(&mut self, row: &Row) -> Result<(), BadCell>;
    fn merge(&mut self, other: Self);
    /// The largest column index `row` reads, checked against the first row's width.
    fn widest_column(&self) -> Option<usize>;

    /// The memory this state holds besides its own size (counts per bin, candidate or group):
    /// the scan bounds how many copies of it exist at once, and refuses one that is too large.
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// One row's fields, by 0-based index, as the folds see them: a csv `ByteRecord`, or a line
/// of a quote-free file with the end offsets of its first fields (those the scan reads).
#[derive(Clone, Copy)]
pub struct Row<'a>(Fields<'a>);

#[derive(Clone, Copy)]
enum Fields<'a> {
    Record(&'a ByteRecord),
    /// `ends[i]` is the offset in `line` of the byte that ends field i (delimiter or line end).
    Line {
        line: &'a [u8],
        ends: &'a [usize],
    },
}

impl<'a> Row<'a> {
    pub fn record(record: &'a ByteRecord) -> Row<'a> {
        Row(Fields::Record(record))
    }

    /// A line split by [`parallel`](crate::data::parallel): `ends` as in the field ends of a csv record.
    pub fn line(line: &'a [u8], ends: &'a [usize]) -> Row<'a> {
        Row(Fields::Line { line, ends })
    }

    /// Field `index`, untrimmed; None past the fields this row holds.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&'a [u8]> {
        match self.0 {
            Fields::Record(record) => record.get(index),
            Fields::Line { line, ends } => {
                let end = *ends.get(index)?;
                let start = match index {
                    0 => 0,
                    _ => ends[index - 1] + 1,
                };
                line.get(start..end)
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

/// The trimmed bytes of a cell (empty if the row is shorter).
#[inline]
pub fn text_cell<'a>(row: &Row<'a>, index: usize) -> &'a [u8] {
    row.get(index).unwrap_or_default().trim_ascii()
}
