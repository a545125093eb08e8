//! The one hot loop: stream the rows once, keep those that pass `--where`, and feed each to the
//! query's [`Fold`]. One `ByteRecord` is refilled for every row and only the selected cells are
//! parsed, so memory does not grow with the number of rows.

use anyhow::Result;
use csv::ByteRecord;

use crate::cli::InvalidPolicy;
use crate::error::bad_input;
use crate::input::Input;

/// A query's per-row state. `row` sees every row that passed the filters; `merge` combines the
/// states of two parts of the input (for parallel scans), so it must be associative and exact.
pub trait Fold: Clone + Send {
    fn row(&mut self, record: &ByteRecord) -> Result<(), BadCell>;
    fn merge(&mut self, other: Self);
    /// The largest column index `row` reads, checked against the first row's width.
    fn widest_column(&self) -> Option<usize>;
}

/// Why a cell was refused; the scan adds file, row and column name.
#[derive(Debug)]
pub struct BadCell {
    pub column: usize,
    pub why: String,
}

/// `--where` filters: column index and the value the trimmed cell must equal.
pub type Filters = [(usize, Vec<u8>)];

/// A numeric cell with its `--invalid` policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NumberCell {
    pub index: usize,
    pub invalid: InvalidPolicy,
}

impl NumberCell {
    /// The cell's finite number, the imputed value, or None for a skipped row. A missing or
    /// non-finite cell ("NaN", "inf", "1e400") is refused under `--invalid error`.
    #[inline]
    pub fn read(&self, record: &ByteRecord) -> Result<Option<f64>, BadCell> {
        let cell = text_cell(record, self.index);
        match parse_number(cell) {
            Some(x) => Ok(Some(x)),
            None => match self.invalid {
                InvalidPolicy::Error => Err(BadCell { column: self.index, why: describe_invalid(cell) }),
                InvalidPolicy::Skip => Ok(None),
                InvalidPolicy::Impute(v) => Ok(Some(v.get())),
            },
        }
    }
}

/// The trimmed bytes of a cell (empty if the row is shorter).
#[inline]
pub fn text_cell(record: &ByteRecord, index: usize) -> &[u8] {
    record.get(index).unwrap_or_default().trim_ascii()
}

/// Feeds every row that passes the filters to `fold`; returns the number of such rows.
pub fn scan<F: Fold>(input: &mut Input, filters: &Filters, fold: &mut F) -> Result<u64> {
    let name = input.name().to_string();
    let widest = filters.iter().map(|(i, _)| *i).chain(fold.widest_column()).max();
    let mut record = ByteRecord::new();
    let mut row: u64 = 0;
    let mut kept: u64 = 0;
    loop {
        match input.reader().read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(csv_error(&name, row + 1, e)),
        }
        row += 1;
        if row == 1 {
            if let Some(widest) = widest.filter(|&w| w >= record.len()) {
                return Err(bad_input(format!(
                    "{name}: column {} does not exist: rows have {} fields (--col and --where take \
                     1-based numbers with --no-header; check --delimiter)",
                    widest + 1,
                    record.len()
                )));
            }
        }
        if !filters.iter().all(|(i, value)| text_cell(&record, *i) == value.as_slice()) {
            continue;
        }
        if let Err(BadCell { column, why }) = fold.row(&record) {
            let line = record.position().map_or(row, |p| p.line());
            let column = input.column_label(column);
            return Err(bad_input(format!("{name}: row {row} (line {line}), column '{column}': {why}")));
        }
        kept += 1;
    }
    Ok(kept)
}

/// A finite f64, or None.
#[inline]
pub fn parse_number(cell: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(cell).ok()?;
    text.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn describe_invalid(cell: &[u8]) -> String {
    if cell.is_empty() {
        return "the cell is empty; use --invalid skip or --invalid impute=V".to_string();
    }
    let text = String::from_utf8_lossy(cell);
    let shown: String = text.chars().take(40).collect();
    let ellipsis = if text.chars().count() > 40 { "…" } else { "" };
    format!("'{shown}{ellipsis}' is not a finite number; use --invalid skip or --invalid impute=V")
}

fn csv_error(name: &str, row: u64, error: csv::Error) -> anyhow::Error {
    match error.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, pos } => {
            let line = pos.as_ref().map_or(row, |p| p.line());
            bad_input(format!(
                "{name}: row {row} (line {line}) has {len} fields, but the rows before it have {expected_len} \
                 (is --delimiter right? quote fields that contain it)"
            ))
        }
        csv::ErrorKind::Io(e) => bad_input(format!("{name}: reading: {e}")),
        _ => bad_input(format!("{name}: row {row}: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::CsvOptions;

    fn input(text: &'static str, has_header: bool) -> Input {
        let options = CsvOptions { delimiter: b',', has_header };
        Input::from_reader("t.csv".into(), Box::new(text.as_bytes()), &options).unwrap()
    }

    /// Collects the numbers of one column, as the numeric queries see them.
    #[derive(Clone)]
    struct Collect(NumberCell, Vec<f64>);

    impl Fold for Collect {
        fn row(&mut self, record: &ByteRecord) -> Result<(), BadCell> {
            if let Some(x) = self.0.read(record)? {
                self.1.push(x);
            }
            Ok(())
        }
        fn merge(&mut self, other: Self) {
            self.1.extend(other.1);
        }
        fn widest_column(&self) -> Option<usize> {
            Some(self.0.index)
        }
    }

    fn numbers(text: &'static str, invalid: InvalidPolicy) -> Result<Vec<f64>> {
        let mut fold = Collect(NumberCell { index: 1, invalid }, vec![]);
        scan(&mut input(text, true), &[], &mut fold)?;
        Ok(fold.1)
    }

    #[test]
    fn parses_only_finite_numbers() {
        assert_eq!(parse_number(b"1.5"), Some(1.5));
        assert_eq!(parse_number(b"-0"), Some(-0.0));
        for bad in [&b"NaN"[..], b"inf", b"-inf", b"1e400", b"", b"abc", b"1,5", b"\xff"] {
            assert_eq!(parse_number(bad), None);
        }
    }

    #[test]
    fn crlf_quotes_and_newlines_in_fields() {
        let got = numbers("id,x\r\n\"a\nb\",\"1\"\r\n2, 3 \r\n", InvalidPolicy::Error).unwrap();
        assert_eq!(got, vec![1.0, 3.0]);
    }

    #[test]
    fn invalid_cell_names_row_line_and_column() {
        let err = numbers("id,x\n1,2\n\"q\nq\",oops\n", InvalidPolicy::Error).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv: row 2 (line 3), column 'x': 'oops' is not a finite number; \
             use --invalid skip or --invalid impute=V"
        );
    }

    #[test]
    fn skip_and_impute() {
        let text = "id,x\n1,2\n2,NaN\n3,\n";
        assert_eq!(numbers(text, InvalidPolicy::Skip).unwrap(), vec![2.0]);
        let v = "7".parse().unwrap();
        assert_eq!(numbers(text, InvalidPolicy::Impute(v)).unwrap(), vec![2.0, 7.0, 7.0]);
    }

    #[test]
    fn filters_compare_trimmed_cells() {
        let mut fold = Collect(NumberCell { index: 1, invalid: InvalidPolicy::Error }, vec![]);
        let kept =
            scan(&mut input("r,x\nn,1\n s ,2\nn,3\n", true), &[(0, b"n".to_vec())], &mut fold).unwrap();
        assert_eq!((kept, fold.1), (2, vec![1.0, 3.0]));
        let mut fold = Collect(NumberCell { index: 1, invalid: InvalidPolicy::Error }, vec![]);
        scan(&mut input("r,x\nn,1\n s ,2\n", true), &[(0, b"s".to_vec())], &mut fold).unwrap();
        assert_eq!(fold.1, vec![2.0]);
    }

    #[test]
    fn ragged_rows_and_missing_index_are_errors() {
        let mut fold = Collect(NumberCell { index: 0, invalid: InvalidPolicy::Error }, vec![]);
        let err = scan(&mut input("a,b\n1,2\n3\n", true), &[], &mut fold).unwrap_err();
        assert!(err.to_string().contains("row 2 (line 3) has 1 fields"), "{err}");
        let mut fold = Collect(NumberCell { index: 4, invalid: InvalidPolicy::Error }, vec![]);
        let err = scan(&mut input("1,2\n", false), &[], &mut fold).unwrap_err();
        assert!(err.to_string().contains("column 5 does not exist"), "{err}");
    }
}
