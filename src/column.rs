//! The one hot loop: stream the rows once, keep those that pass `--where`, hand the selected
//! cell on. One `ByteRecord` is refilled for every row and only the selected cells are looked
//! at, so memory does not grow with the number of rows.

use anyhow::Result;
use csv::ByteRecord;

use crate::cli::InvalidPolicy;
use crate::error::bad_input;
use crate::input::Input;

/// The columns a query reads, as indices resolved against the header.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// The query's column (none for `count`) and its name for messages.
    pub column: Option<(usize, String)>,
    /// `--where` filters: column index and the value the trimmed cell must equal.
    pub filters: Vec<(usize, Vec<u8>)>,
}

/// Why a cell was refused; the scan adds file, row and column.
pub struct BadCell(pub String);

/// Visits the selected (trimmed) cell of every row that passes the filters; returns how many
/// rows were visited. With no column, the cell is empty.
pub fn scan_cells(
    input: &mut Input,
    selection: &Selection,
    mut visit: impl FnMut(&[u8]) -> Result<(), BadCell>,
) -> Result<u64> {
    let name = input.name().to_string();
    let widest = selection
        .filters
        .iter()
        .map(|(i, _)| *i)
        .chain(selection.column.as_ref().map(|(i, _)| *i))
        .max();
    let mut record = ByteRecord::new();
    let mut row: u64 = 0;
    let mut visited: u64 = 0;
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
                    "{name}: column {} does not exist: rows have {} fields",
                    widest + 1,
                    record.len()
                )));
            }
        }
        let keep = selection
            .filters
            .iter()
            .all(|(i, value)| record.get(*i).map(<[u8]>::trim_ascii) == Some(value.as_slice()));
        if !keep {
            continue;
        }
        let cell = match &selection.column {
            Some((i, _)) => record.get(*i).unwrap_or_default().trim_ascii(),
            None => &[],
        };
        if let Err(BadCell(why)) = visit(cell) {
            let line = record.position().map_or(row, |p| p.line());
            let column = selection.column.as_ref().map_or("", |(_, n)| n.as_str());
            return Err(bad_input(format!(
                "{name}: row {row} (line {line}), column '{column}': {why}"
            )));
        }
        visited += 1;
    }
    Ok(visited)
}

/// Visits the finite numbers of the selected column, applying `--invalid` to every cell that
/// is missing or not a finite number ("NaN", "inf" and overflowing "1e400" are not numbers).
/// Returns how many values were visited (imputed ones included, skipped ones not).
pub fn scan_numbers(
    input: &mut Input,
    selection: &Selection,
    invalid: InvalidPolicy,
    mut visit: impl FnMut(f64),
) -> Result<u64> {
    let mut skipped: u64 = 0;
    let visited = scan_cells(input, selection, |cell| {
        match parse_number(cell) {
            Some(x) => visit(x),
            None => match invalid {
                InvalidPolicy::Error => return Err(BadCell(describe_invalid(cell))),
                InvalidPolicy::Skip => skipped += 1,
                InvalidPolicy::Impute(v) => visit(v.get()),
            },
        }
        Ok(())
    })?;
    Ok(visited - skipped)
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
        csv::ErrorKind::UnequalLengths {
            expected_len,
            len,
            pos,
        } => {
            let line = pos.as_ref().map_or(row, |p| p.line());
            bad_input(format!(
                "{name}: row {row} (line {line}) has {len} fields, but the first row has {expected_len}"
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
        let options = CsvOptions {
            delimiter: b',',
            has_header,
        };
        Input::from_reader("t.csv".into(), Box::new(text.as_bytes()), &options).unwrap()
    }

    fn numbers(text: &'static str, invalid: InvalidPolicy) -> Result<Vec<f64>> {
        let mut i = input(text, true);
        let sel = Selection {
            column: Some((1, "x".into())),
            filters: vec![],
        };
        let mut out = vec![];
        scan_numbers(&mut i, &sel, invalid, |x| out.push(x))?;
        Ok(out)
    }

    #[test]
    fn parses_only_finite_numbers() {
        assert_eq!(parse_number(b"1.5"), Some(1.5));
        assert_eq!(parse_number(b"-0"), Some(-0.0));
        for bad in [
            &b"NaN"[..],
            b"inf",
            b"-inf",
            b"1e400",
            b"",
            b"abc",
            b"1,5",
            b"\xff",
        ] {
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
        assert_eq!(
            numbers(text, InvalidPolicy::Impute(v)).unwrap(),
            vec![2.0, 7.0, 7.0]
        );
    }

    #[test]
    fn filters_compare_trimmed_cells() {
        let mut i = input("r,x\nn,1\n s ,2\nn,3\n", true);
        let sel = Selection {
            column: None,
            filters: vec![(0, b"n".to_vec())],
        };
        assert_eq!(scan_cells(&mut i, &sel, |_| Ok(())).unwrap(), 2);
        let mut i = input("r,x\nn,1\n s ,2\n", true);
        let sel = Selection {
            column: None,
            filters: vec![(0, b"s".to_vec())],
        };
        assert_eq!(scan_cells(&mut i, &sel, |_| Ok(())).unwrap(), 1);
    }

    #[test]
    fn ragged_rows_and_missing_index_are_errors() {
        let mut i = input("a,b\n1,2\n3\n", true);
        let err = scan_cells(&mut i, &Selection::default(), |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("row 2 (line 3) has 1 fields"), "{err}");
        let mut i = input("1,2\n", false);
        let sel = Selection {
            column: Some((4, "5".into())),
            filters: vec![],
        };
        let err = scan_cells(&mut i, &sel, |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("column 5 does not exist"), "{err}");
    }
}
