//! The one hot loop: stream the rows once, keep those that pass `--where`, and feed each to the
//! query's [`Fold`]. Only the selected cells are parsed, so memory does not grow with the
//! number of rows.
//!
//! Two readers feed the same folds through one [`Row`] view:
//! - the csv crate, one reused `ByteRecord` (standard input, gzip, any file with a quote after
//!   its first row, and every error message: it alone knows rows and lines);
//! - [`parallel`](mod@crate::data::parallel) for a plain file: the bytes after the first row, split into
//!   one range per thread, as long as they hold no quote byte. Anything unusual there (a quote,
//!   a ragged row, a bad cell) discards the parallel result and the csv reader rescans the file
//!   from its start, so results and messages are the csv crate's, whatever the thread count.

use anyhow::Result;
use csv::ByteRecord;

use crate::data::filter::{passes, Filters};
use crate::data::input::Input;
use crate::data::parallel;
use crate::data::row::{BadCell, Fold, Row};
use crate::error::bad_input;

/// The per-row state all copies of a fold may hold together: above it, the file is scanned by
/// one thread, which holds one copy.
pub const FOLD_BUDGET: usize = 64 << 20;
/// The largest single fold (bins × groups, quantile candidates): refused above it, before any
/// data row is read.
pub const MAX_FOLD_BYTES: usize = 256 << 20;

/// Feeds every row that passes the filters to `fold`; returns the number of such rows.
///
/// Memory for the folds is at most max([`FOLD_BUDGET`], one fold) whatever the thread count:
/// a fold too large to copy once per chunk is scanned by the csv reader alone.
pub fn scan<F: Fold>(input: &mut Input, filters: &Filters, fold: &mut F) -> Result<u64> {
    check_memory(input, fold)?;
    let bytes = fold.heap_bytes();
    let block = parallel::block_size(input.threads());
    let scanned = if bytes.saturating_mul(parallel::copies(input.threads())) > FOLD_BUDGET {
        scan_alone(input, filters, fold)
    } else {
        scan_with(input, filters, fold, block)
    };
    input.finish_progress();
    Ok(scanned?.0)
}

/// Refuses a fold larger than [`MAX_FOLD_BYTES`]: a function of the flags alone, so it can (and
/// under a ledger must) be asked before anything is charged or read.
pub fn check_memory<F: Fold>(input: &Input, fold: &F) -> Result<()> {
    let bytes = fold.heap_bytes();
    if bytes > MAX_FOLD_BYTES {
        return Err(bad_input(format!(
            "{}: the flags ask for {} MiB of counts in memory (bins × --by groups, or quantile \
             candidates), more than the {} MiB dpstat allows; use fewer bins, keys or a lower --resolution",
            input.name(),
            bytes.div_ceil(1 << 20),
            MAX_FOLD_BYTES >> 20
        )));
    }
    Ok(())
}

/// The csv reader alone, one copy of the fold.
fn scan_alone<F: Fold>(input: &mut Input, filters: &Filters, fold: &mut F) -> Result<(u64, bool)> {
    let widest = filters.iter().map(|(i, _)| *i).chain(fold.widest_column()).max();
    let mut rows = Rows::new(input, widest);
    while rows.next(input, filters, fold)? {}
    Ok((rows.kept, false))
}

/// [`scan`] with a given read size per thread; also says whether the parallel scan decided.
fn scan_with<F: Fold>(
    input: &mut Input,
    filters: &Filters,
    fold: &mut F,
    block: usize,
) -> Result<(u64, bool)> {
    if input.splittable().is_none() {
        return scan_alone(input, filters, fold);
    }
    let widest = filters.iter().map(|(i, _)| *i).chain(fold.widest_column()).max();
    let mut rows = Rows::new(input, widest);
    // The first row goes through the csv reader: it checks the width and skips the header
    // (a byte-order mark, quotes, anything the csv crate accepts), and leaves the reader at
    // the start of the next row.
    let empty = fold.clone();
    if !rows.next(input, filters, fold)? {
        return Ok((rows.kept, false));
    }
    let start = input.reader().position().byte();
    if let Some((file, len)) = input.splittable() {
        let layout = parallel::Layout {
            delimiter: input.delimiter(),
            fields: rows.record.len(),
            tolerant: input.tolerant(),
            read_fields: widest.map_or(0, |w| w + 1),
            filters,
            threads: input.threads(),
            block,
        };
        if let Ok(done) =
            parallel::scan(file, start..len, &layout, &empty, input.progress(), input.hashes_itself())
        {
            for part in done.folds {
                fold.merge(part);
            }
            if let Some(digest) = done.digest {
                input.set_fingerprint(digest);
            }
            return Ok((rows.kept + done.kept, true));
        }
    }
    // Something the fast path does not decide (a quote, a ragged row, a bad cell, a read
    // error): start again from the first byte with the csv reader, which gives the exact
    // result or the exact message.
    *fold = empty;
    input.rewind()?;
    let mut rows = Rows::new(input, widest);
    while rows.next(input, filters, fold)? {}
    Ok((rows.kept, false))
}

/// The csv reader's loop, one row at a time, with row numbers for messages.
struct Rows {
    name: String,
    widest: Option<usize>,
    record: ByteRecord,
    row: u64,
    kept: u64,
    /// The width every row must have: the header's, else the first row's; None while unknown,
    /// or when rows of other widths are tolerated.
    width: Option<usize>,
    tolerant: bool,
}

impl Rows {
    fn new(input: &Input, widest: Option<usize>) -> Rows {
        Rows {
            name: input.name().to_string(),
            widest,
            record: ByteRecord::new(),
            row: 0,
            kept: 0,
            width: input.header_len(),
            tolerant: input.tolerant(),
        }
    }

    /// Reads and folds one row; false at the end of the input.
    fn next<F: Fold>(&mut self, input: &mut Input, filters: &Filters, fold: &mut F) -> Result<bool> {
        let name = &self.name;
        match input.reader().read_byte_record(&mut self.record) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => return Err(csv_error(name, self.row + 1, e)),
        }
        self.row += 1;
        let record = &self.record;
        if !self.tolerant {
            let width = *self.width.get_or_insert(record.len());
            if record.len() != width {
                let line = record.position().map_or(self.row, |p| input.line_of(p.byte(), p.line()));
                return Err(bad_input(format!(
                    "{name}: row {} (line {line}) has {} fields, but the rows before it have {width} \
                     (is --delimiter right? quote fields that contain it)",
                    self.row,
                    record.len()
                )));
            }
        }
        // Tolerated rows: a column past the first row's width reads as empty cells.
        if self.row == 1 && !self.tolerant {
            if let Some(widest) = self.widest.filter(|&w| w >= record.len()) {
                return Err(bad_input(format!(
                    "{name}: column {} does not exist: rows have {} fields (--col and --where take \
                     1-based numbers with --no-header; check --delimiter)",
                    widest + 1,
                    record.len()
                )));
            }
        }
        let row = Row::record(record);
        if !passes(&row, filters) {
            return Ok(true);
        }
        if let Err(BadCell { column, why }) = fold.row(&row) {
            let line = record.position().map_or(self.row, |p| input.line_of(p.byte(), p.line()));
            let column = input.column_label(column);
            let n = self.row;
            return Err(bad_input(format!("{name}: row {n} (line {line}), column '{column}': {why}")));
        }
        self.kept += 1;
        Ok(true)
    }
}

fn csv_error(name: &str, row: u64, error: csv::Error) -> anyhow::Error {
    match error.kind() {
        csv::ErrorKind::Io(e) => bad_input(format!("{name}: reading: {e}")),
        _ => bad_input(format!("{name}: row {row}: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::{InvalidPolicy, NumberCell};
    use crate::data::filter::Test;
    use crate::data::source::CsvOptions;

    fn input(text: &'static str, has_header: bool) -> Input {
        let options = CsvOptions { delimiter: b',', has_header };
        Input::from_reader("t.csv".into(), Box::new(text.as_bytes()), &options).unwrap()
    }

    /// Collects the numbers of one column, as the numeric queries see them.
    #[derive(Clone)]
    struct Collect(NumberCell, Vec<f64>);

    impl Fold for Collect {
        fn row(&mut self, row: &Row) -> Result<(), BadCell> {
            if let Some(x) = self.0.read(row)? {
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
        let equals = |v: &str| Test::Equals(v.as_bytes().into());
        let kept = scan(&mut input("r,x\nn,1\n s ,2\nn,3\n", true), &[(0, equals("n"))], &mut fold).unwrap();
        assert_eq!((kept, fold.1), (2, vec![1.0, 3.0]));
        let mut fold = Collect(NumberCell { index: 1, invalid: InvalidPolicy::Error }, vec![]);
        scan(&mut input("r,x\nn,1\n s ,2\n", true), &[(0, equals("s"))], &mut fold).unwrap();
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

/// The parallel scan against the csv reader alone, on the same bytes.
#[cfg(test)]
mod parallel_tests {
    use super::*;
    use crate::data::filter::{Filter, Test};
    use crate::data::source::{CsvOptions, Source};
    use proptest::prelude::*;
    use std::io::Write;

    /// The raw fields 0..=upto of every kept row, in order; refuses a cell `BAD`.
    #[derive(Clone, Debug, PartialEq)]
    struct Cells {
        upto: usize,
        rows: Vec<Vec<Vec<u8>>>,
    }

    impl Fold for Cells {
        fn row(&mut self, row: &Row) -> Result<(), BadCell> {
            let cells: Vec<Vec<u8>> =
                (0..=self.upto).map(|i| row.get(i).unwrap_or_default().to_vec()).collect();
            if let Some(column) = cells.iter().position(|c| c == b"BAD") {
                return Err(BadCell { column, why: "refused".into() });
            }
            self.rows.push(cells);
            Ok(())
        }
        fn merge(&mut self, other: Self) {
            self.rows.extend(other.rows);
        }
        fn widest_column(&self) -> Option<usize> {
            Some(self.upto)
        }
    }

    type Outcome = Result<(u64, Vec<Vec<Vec<u8>>>), String>;

    /// The csv reader alone on the same bytes, as a file of its own (messages name `name`).
    fn by_csv(name: &str, bytes: &[u8], how: (&CsvOptions, bool), filters: &Filters, upto: usize) -> Outcome {
        let (options, tolerant) = how;
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        let source = Source::Path(file.path().to_path_buf());
        let own = source.display_name();
        let renamed = |e: anyhow::Error| e.to_string().replace(&own, name);
        let mut input = Input::open(&source, options, false, 1).map_err(renamed)?;
        if tolerant {
            input.tolerate_ragged_rows();
        }
        let mut fold = Cells { upto, rows: vec![] };
        let (kept, _) = scan_alone(&mut input, filters, &mut fold).map_err(renamed)?;
        Ok((kept, fold.rows))
    }

    /// Scans a file holding `bytes`; also says whether the parallel scan decided, and returns
    /// the fingerprint.
    fn by_file(
        bytes: &[u8],
        (options, tolerant): (&CsvOptions, bool),
        filters: &Filters,
        upto: usize,
        threads: usize,
        block: usize,
    ) -> (String, Outcome, bool, Option<String>) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        let source = Source::Path(file.path().to_path_buf());
        let name = source.display_name();
        let mut input = match Input::open(&source, options, true, threads) {
            Ok(input) => input,
            Err(e) => return (name, Err(e.to_string()), false, None),
        };
        if tolerant {
            input.tolerate_ragged_rows();
        }
        let mut fold = Cells { upto, rows: vec![] };
        match scan_with(&mut input, filters, &mut fold, block) {
            Ok((kept, parallel)) => (name, Ok((kept, fold.rows)), parallel, input.fingerprint()),
            Err(e) => (name, Err(e.to_string()), false, None),
        }
    }

    fn records_fingerprint(bytes: &[u8], delimiter: u8) -> String {
        crate::data::fingerprint::fingerprint_of(bytes, delimiter).unwrap()
    }

    /// A CSV text made of awkward pieces: quoted fields (with line ends and delimiters
    /// inside), blank lines, CR, CRLF, a byte-order mark, ragged rows, a last row without a
    /// line end, refused cells.
    fn csv_text() -> impl Strategy<Value = (Vec<u8>, u8, usize)> {
        let field = prop_oneof![
            12 => "[0-9a-c .x-]{0,5}",
            2 => Just("x".to_string()),
            1 => Just("BAD".to_string()),
            1 => Just("\"q\nq\"".to_string()),
            1 => Just("\"a,b;c\"".to_string()),
        ];
        let end = prop_oneof![
            6 => Just("\n"),
            2 => Just("\r\n"),
            1 => Just("\r"),
            1 => Just("\n\n"),
            1 => Just("\r\n\r\n"),
        ];
        let delimiter = prop_oneof![Just(b','), Just(b';'), Just(b'\t')];
        (1usize..5, delimiter, any::<bool>(), any::<bool>()).prop_flat_map(
            move |(columns, delimiter, bom, last_end)| {
                let row = (proptest::collection::vec(field.clone(), columns), end.clone(), 0u8..20);
                (
                    proptest::collection::vec(row, 0..30),
                    Just(delimiter),
                    Just(bom),
                    Just(last_end),
                    0..columns,
                )
                    .prop_map(|(rows, delimiter, bom, last_end, upto)| {
                        let mut text = Vec::new();
                        if bom {
                            text.extend_from_slice("\u{feff}".as_bytes());
                        }
                        let count = rows.len();
                        for (i, (mut fields, end, ragged)) in rows.into_iter().enumerate() {
                            if ragged == 0 {
                                fields.pop();
                            } else if ragged == 1 {
                                fields.push("r".into());
                            }
                            text.extend_from_slice(fields.join(&(delimiter as char).to_string()).as_bytes());
                            if i + 1 < count || last_end {
                                text.extend_from_slice(end.as_bytes());
                            }
                        }
                        (text, delimiter, upto)
                    })
            },
        )
    }

    /// A filter of every kind, parsed from how a user writes it, on values that the generated
    /// cells hold (`x`, short numbers, empty cells, spaces).
    fn filter_test() -> impl Strategy<Value = Test> {
        let written = prop_oneof![
            Just("c=x"),
            Just("c!=x"),
            Just("c=1"),
            Just("c<5"),
            Just("c<=-1"),
            Just("c>0.5"),
            Just("c>=10"),
            Just("c>=-0"),
            Just("c in x,1,a b"),
            Just("c not in x,.5"),
            Just("c is empty"),
            Just("c is not empty"),
        ];
        written.prop_map(|w| w.parse::<Filter>().expect("a valid filter").test)
    }

    fn has_data_row(bytes: &[u8], options: &CsvOptions) -> bool {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(options.delimiter)
            .has_headers(options.has_header)
            .from_reader(bytes);
        reader.byte_records().next().is_some_and(|r| r.is_ok())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Same rows, same order, same count, same message, same fingerprint, for any number of
        /// threads and read size, with ragged rows refused or tolerated; and quote-free files
        /// whose rows are well-formed (or tolerated) are decided in parallel.
        #[test]
        fn parallel_scan_equals_the_csv_reader(
            (bytes, delimiter, upto) in csv_text(),
            has_header in any::<bool>(),
            threads in 1usize..6,
            block in 8usize..80,
            filters in proptest::collection::vec((any::<prop::sample::Index>(), filter_test()), 0..3),
            tolerant in any::<bool>(),
        ) {
            let options = CsvOptions { delimiter, has_header };
            let filters: Vec<(usize, Test)> =
                filters.into_iter().map(|(column, test)| (column.index(upto + 1), test)).collect();
            let (name, got, parallel, fingerprint) = by_file(&bytes, (&options, tolerant), &filters, upto, threads, block);
            let want = by_csv(&name, &bytes, (&options, tolerant), &filters, upto);
            prop_assert_eq!(&got, &want, "{} threads, {}-byte reads: {:?}", threads, block, String::from_utf8_lossy(&bytes));
            if want.is_ok() {
                prop_assert_eq!(fingerprint, Some(records_fingerprint(&bytes, delimiter)));
                if !bytes.contains(&b'"') && has_data_row(&bytes, &options) {
                    prop_assert!(parallel, "a quote-free file is scanned in parallel");
                }
            }
        }
    }

    fn write_and_scan(text: &str, threads: usize, block: usize) -> (Outcome, bool) {
        let options = CsvOptions { delimiter: b',', has_header: true };
        let (_, got, parallel, _) = by_file(text.as_bytes(), (&options, false), &[], 1, threads, block);
        (got, parallel)
    }

    #[test]
    fn rows_are_split_at_every_kind_of_line_end() {
        let text = "\u{feff}a,b\r\n1,2\r\n\r\n3,4\r5,6\n\n7,8";
        let want: Vec<Vec<Vec<u8>>> = [["1", "2"], ["3", "4"], ["5", "6"], ["7", "8"]]
            .iter()
            .map(|r| r.iter().map(|c| c.as_bytes().to_vec()).collect())
            .collect();
        for threads in 1..8 {
            for block in [8, 9, 16, 1024] {
                assert_eq!(
                    write_and_scan(text, threads, block),
                    (Ok((4, want.clone())), true),
                    "{threads} threads, {block}"
                );
            }
        }
    }

    #[test]
    fn a_quote_after_the_first_row_falls_back_to_the_csv_reader() {
        let text = "a,b\n1,2\n3,\"x\ny\"\n5,6\n";
        let (got, parallel) = write_and_scan(text, 3, 8);
        assert!(!parallel);
        assert_eq!(got.unwrap().0, 3);
        // Quotes in the header and the first row are the csv reader's: the rest is still split.
        let (got, parallel) = write_and_scan("\"a\",\"b\"\n\"1\n\",2\n3,4\n", 2, 8);
        assert!(parallel);
        assert_eq!(
            got.unwrap().1,
            vec![vec![b"1\n".to_vec(), b"2".to_vec()], vec![b"3".to_vec(), b"4".to_vec()]]
        );
    }

    #[test]
    fn errors_found_in_parallel_are_reported_as_the_csv_reader_reports_them() {
        let mut text = String::from("a,b\n");
        for i in 0..500 {
            text.push_str(&format!("{i},{i}\n"));
        }
        text.push_str("7,BAD\n8,9\n");
        let (got, _) = write_and_scan(&text, 4, 64);
        let message = got.unwrap_err();
        assert!(message.ends_with("row 501 (line 502), column 'b': refused"), "{message}");
        text.push_str("1,2,3\n");
        let text = text.replace("7,BAD", "7,8");
        let (got, _) = write_and_scan(&text, 4, 64);
        let message = got.unwrap_err();
        assert!(message.ends_with("row 503 (line 504) has 3 fields, but the rows before it have 2 (is --delimiter right? quote fields that contain it)"), "{message}");
    }

    /// Counts rows, claims to hold `bytes` of memory, and notes whether it was ever merged
    /// (only the parallel scan merges folds).
    #[derive(Clone)]
    struct Heavy {
        bytes: usize,
        rows: u64,
        merged: bool,
    }

    impl Fold for Heavy {
        fn row(&mut self, _: &Row) -> Result<(), BadCell> {
            self.rows += 1;
            Ok(())
        }
        fn merge(&mut self, other: Self) {
            self.rows += other.rows;
            self.merged = true;
        }
        fn widest_column(&self) -> Option<usize> {
            None
        }
        fn heap_bytes(&self) -> usize {
            self.bytes
        }
    }

    /// A fold too large to copy once per chunk is scanned by one thread holding one copy,
    /// whatever `--threads` says; one larger than the cap is refused before a row is read.
    #[test]
    fn fold_memory_does_not_multiply_by_threads() {
        let text: String =
            std::iter::once("a,b\n".to_string()).chain((0..5000).map(|i| format!("{i},x\n"))).collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let source = Source::Path(file.path().to_path_buf());
        let options = CsvOptions { delimiter: b',', has_header: true };
        let run = |bytes: usize, threads: usize| {
            let mut input = Input::open(&source, &options, false, threads).unwrap();
            let mut fold = Heavy { bytes, rows: 0, merged: false };
            scan(&mut input, &[], &mut fold).map(|kept| (kept, fold.rows, fold.merged))
        };
        assert_eq!(run(0, 4).unwrap(), (5000, 5000, true), "small folds go parallel");
        let big = FOLD_BUDGET / parallel::copies(4) + 1;
        assert_eq!(run(big, 4).unwrap(), (5000, 5000, false), "one copy, one thread");
        assert_eq!(run(big, 1).unwrap().0, 5000);
        let refused = run(MAX_FOLD_BYTES + 1, 4).unwrap_err().to_string();
        assert!(refused.contains("more than the 256 MiB"), "{refused}");
    }
}
