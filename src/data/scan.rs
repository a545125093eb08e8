//! The one hot loop: stream the rows once and feed each to the query's [`Fold`] (which applies
//! `--where` and `--by` itself, `data::route`). Only the selected cells are located and parsed,
//! so memory does not grow with the number of rows.
//!
//! Every input takes the same path, file or standard input, plain or decompressed, one thread
//! or many: [`parallel`](mod@crate::data::parallel) reads it in blocks cut where records end,
//! and [`records`](mod@crate::data::records) reads each block's records. The first problem in
//! input order (a ragged row, a refused cell) stops the scan with a message naming its row and
//! physical line.

use anyhow::Result;

use crate::data::input::{Dataset, Input};
use crate::data::parallel::{self, Failure, Setup, BLOCK};
use crate::data::records::{Problem, Shape};
use crate::data::row::{Fold, Row};
use crate::data::structure::line_ends;
use crate::error::bad_input;

/// The per-row state all copies of a fold may hold together: above it, the file is scanned by
/// one thread, which holds one copy.
pub const FOLD_BUDGET: usize = 64 << 20;
/// The largest single fold (bins × groups, quantile candidates): refused above it, before any
/// data row is read.
pub const MAX_FOLD_BYTES: usize = 256 << 20;

/// Feeds every row to `fold`; returns the number of rows.
///
/// Memory for the folds is at most max([`FOLD_BUDGET`], a few copies of one fold) whatever the
/// thread count: a fold too large to copy once per block in flight is scanned by one thread.
pub fn scan<F: Fold>(input: &mut Input, fold: &mut F) -> Result<u64> {
    check_memory(input, fold)?;
    // 0 threads: the calling thread alone, with the one copy.
    let threads = threads_for(input, fold);
    scan_with(input, fold, threads, BLOCK)
}

/// The threads a scan of `fold` uses: the most, up to the input's, whose copies
/// ([`parallel_fold_bytes`]) fit [`FOLD_BUDGET`], or 0 (the calling thread alone, one copy)
/// when not even one does.
pub fn threads_for<F: Fold>(input: &Input, fold: &F) -> usize {
    let parquet = matches!(input.dataset(), Some(Dataset::Parquet { .. }));
    (1..=input.threads()).rev().find(|&t| parallel_fold_bytes(fold, t, parquet) <= FOLD_BUDGET).unwrap_or(0)
}

/// The most heap the copies of `fold` hold together in a scan on `threads` threads.
///
/// Parquet: each thread folds a run of row groups, any number of rows, so every copy may reach
/// [`Fold::heap_bytes`]. CSV: only two copies fold more than one part, the one the parts are
/// merged into and, for a dataset of CSV files, the one holding the files before
/// (`engine::CsvParts`); every other copy (one per worker, one per part in flight,
/// [`parallel::copies`]) starts empty and folds one part, at most
/// [`parallel::part_rows`] rows. A fold whose memory follows its rows (a quantile's positions,
/// [`Fold::part_heap_bytes`]) then fits the budget on every thread where its worst case alone,
/// times the copies, did not (issue 38: the median of 1M rows on [0, 10^6] ran on one thread).
pub fn parallel_fold_bytes<F: Fold>(fold: &F, threads: usize, parquet: bool) -> usize {
    let (full, copies) = (fold.heap_bytes(), parallel::copies(threads));
    if parquet {
        return full.saturating_mul(copies);
    }
    let part = fold.part_heap_bytes(parallel::part_rows(BLOCK)).min(full);
    full.saturating_mul(2).saturating_add(part.saturating_mul(copies - 2))
}

/// [`scan`] of one CSV stream (a part of a dataset of CSV files) on `threads` threads.
pub fn scan_stream<F: Fold>(input: &mut Input, fold: &mut F, threads: usize) -> Result<u64> {
    scan_with(input, fold, threads, BLOCK)
}

/// Refuses a fold larger than [`MAX_FOLD_BYTES`]: a function of the flags alone, so it can (and
/// under a ledger must) be asked before anything is charged or read.
pub fn check_memory<F: Fold>(input: &Input, fold: &F) -> Result<()> {
    let bytes = fold.heap_bytes();
    if bytes > MAX_FOLD_BYTES {
        return Err(bad_input(format!(
            "{}: the flags ask for {} MiB of counts in memory (bins × --by groups, keys found in the \
             data up to --max-keys, or quantile candidates), more than the {} MiB dpstat allows; use \
             fewer bins or keys, a lower --max-keys or a lower --resolution",
            input.name(),
            bytes.div_ceil(1 << 20),
            MAX_FOLD_BYTES >> 20
        )));
    }
    Ok(())
}

/// [`scan`] with a given number of threads (0: the calling thread alone) and block size.
fn scan_with<F: Fold>(input: &mut Input, fold: &mut F, threads: usize, block: usize) -> Result<u64> {
    let Some(stream) = input.take_stream() else {
        return Err(bad_input(format!("{}: cannot read the input a second time", input.name())));
    };
    let widest = fold.widest_column();
    let setup = Setup { shape: shape(input, widest), threads, block };
    let result = match threads {
        0 => parallel::alone(stream, &setup.shape, block, |row, _| fold.row(row)),
        _ => parallel::scan(stream, &setup, fold),
    };
    input.finish_progress();
    match result {
        Ok(done) => {
            input.scanned(done.digest);
            Ok(done.kept)
        }
        Err(failure) => Err(message(input, failure, widest)),
    }
}

/// What the records must look like, for a scan reading columns up to `widest`.
fn shape(input: &Input, widest: Option<usize>) -> Shape {
    let width = input.width().filter(|_| !input.tolerant());
    Shape {
        delimiter: input.delimiter(),
        width,
        read: widest.map_or(0, |w| w + 1),
        missing: matches!((widest, width), (Some(w), Some(n)) if w >= n),
        decimal: input.decimal(),
    }
}

/// "1 field", "3 fields".
fn count_of(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The one-line message of a scan that stopped.
fn message(input: &Input, failure: Failure, widest: Option<usize>) -> anyhow::Error {
    let name = input.name();
    let (problem, n, line) = match failure {
        Failure::Read(e) => return bad_input(format!("{name}: reading: {e}")),
        Failure::Stop { problem, row, line } => (problem, row, line),
    };
    match problem {
        Problem::Ragged { fields } => bad_input(format!(
            "{name}: row {n} (line {line}) has {}, but the rows before it have {} \
             (is --delimiter right? quote fields that contain it)",
            count_of(fields, "field"),
            input.width().unwrap_or(0)
        )),
        Problem::Missing { fields } => bad_input(format!(
            "{name}: column {} does not exist: rows have {} (--col and --where take \
             1-based numbers with --no-header; check --delimiter)",
            widest.map_or(0, |w| w + 1),
            count_of(fields, "field")
        )),
        Problem::Cell(bad) => {
            let column = input.column_label(bad.column);
            bad_input(format!("{name}: row {n} (line {line}), column '{column}': {}", bad.why))
        }
    }
}

/// Every record of one CSV stream, in order, by the calling thread, with all the fields the
/// first record has, its row number and its physical line (`dpstat check`, through
/// `engine::each_record`). Rows of any width are read; `each` sees how wide each one is.
pub fn each_record(input: &mut Input, each: &mut dyn FnMut(&Row, u64, u64)) -> Result<u64> {
    let Some(stream) = input.take_stream() else {
        return Err(bad_input(format!("{}: cannot read the input a second time", input.name())));
    };
    let shape = Shape {
        delimiter: input.delimiter(),
        width: None,
        read: input.width().unwrap_or(0),
        missing: false,
        decimal: input.decimal(),
    };
    // The line of each record, counted on from the one before in the same part.
    let (mut part, mut seen, mut line) = (u64::MAX, 0usize, 0u64);
    let mut row = 0u64;
    let result = parallel::alone(stream, &shape, BLOCK, |record, at| {
        if part != at.part {
            (part, seen, line) = (at.part, 0, at.lines);
        }
        let offset = record.offset();
        let before_cr = if seen == 0 { at.after_cr } else { at.bytes[seen - 1] == b'\r' };
        line += line_ends(&at.bytes[seen..offset], before_cr);
        seen = offset;
        row += 1;
        each(record, row, line + 1);
        Ok(())
    });
    match result {
        Ok(done) => {
            input.scanned(done.digest);
            Ok(done.kept)
        }
        Err(failure) => Err(message(input, failure, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::{InvalidPolicy, NumberCell};
    use crate::data::row::BadCell;
    use crate::data::source::CsvOptions;

    fn input(text: &'static str, has_header: bool) -> Input {
        let options = CsvOptions { delimiter: b',', has_header, decimal: Default::default() };
        Input::from_reader("t.csv".into(), Box::new(text.as_bytes()), &options).unwrap()
    }

    /// Collects the numbers of one column, as the numeric queries see them.
    #[derive(Clone, serde::Serialize, serde::Deserialize)]
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
        scan(&mut input(text, true), &mut fold)?;
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
    fn ragged_rows_and_missing_index_are_errors() {
        let mut fold = Collect(NumberCell { index: 0, invalid: InvalidPolicy::Error }, vec![]);
        let err = scan(&mut input("a,b\n1,2\n3\n", true), &mut fold).unwrap_err();
        assert!(err.to_string().contains("row 2 (line 3) has 1 field, but"), "{err}");
        let mut fold = Collect(NumberCell { index: 4, invalid: InvalidPolicy::Error }, vec![]);
        let err = scan(&mut input("1,2\n", false), &mut fold).unwrap_err();
        assert!(err.to_string().contains("column 5 does not exist"), "{err}");
    }
}

/// The scan, by every source and thread count, against the csv crate on the same bytes.
#[cfg(test)]
mod parallel_tests {
    use super::*;
    use crate::data::records::tests::awkward_field;
    use crate::data::row::BadCell;
    use crate::data::source::{CsvOptions, Source};
    use proptest::prelude::*;
    use std::io::Write;

    /// The raw fields 0..=upto of every row, in order; refuses a cell `BAD`.
    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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

    /// The physical line (CR, LF, CRLF each end one) of the byte at `at`.
    fn line_at(bytes: &[u8], at: usize) -> u64 {
        1 + crate::data::structure::line_ends(&bytes[..at], false)
    }

    /// The first byte of the record the csv reader reports at `byte`: it reports a record after
    /// line ends at the first of them (and the first record before the byte-order mark).
    fn record_start(bytes: &[u8], byte: u64) -> usize {
        let mut at = byte as usize;
        if at == 0 && bytes.starts_with(b"\xEF\xBB\xBF") {
            at = 3;
        }
        while at < bytes.len() && (bytes[at] == b'\r' || bytes[at] == b'\n') {
            at += 1;
        }
        at
    }

    /// What the csv crate reads from `bytes`, with the messages the scan must give.
    fn by_csv(name: &str, bytes: &[u8], (options, tolerant): (&CsvOptions, bool), upto: usize) -> Outcome {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(options.delimiter)
            .has_headers(options.has_header)
            .flexible(true)
            .from_reader(bytes);
        let mut width = if options.has_header { Some(reader.byte_headers().unwrap().len()) } else { None };
        let mut fold = Cells { upto, rows: vec![] };
        let (mut row, mut kept) = (0u64, 0u64);
        let mut record = csv::ByteRecord::new();
        while reader.read_byte_record(&mut record).unwrap() {
            row += 1;
            let line = line_at(bytes, record_start(bytes, record.position().unwrap().byte()));
            let w = *width.get_or_insert(record.len());
            if !tolerant && record.len() != w {
                return Err(format!(
                    "{name}: row {row} (line {line}) has {}, but the rows before it have {w} \
                     (is --delimiter right? quote fields that contain it)",
                    count_of(record.len(), "field")
                ));
            }
            if !tolerant && upto >= w {
                return Err(format!(
                    "{name}: column {} does not exist: rows have {} (--col and --where take \
                     1-based numbers with --no-header; check --delimiter)",
                    upto + 1,
                    count_of(w, "field")
                ));
            }
            if let Err(bad) = fold.row(&Row::record(&record)) {
                let header = reader.byte_headers().unwrap().clone();
                let column = match header.get(bad.column).filter(|_| options.has_header) {
                    Some(name) => String::from_utf8_lossy(name).into_owned(),
                    None => (bad.column + 1).to_string(),
                };
                let column = crate::error::shown(column.trim_start_matches('\u{feff}').trim_ascii(), 40);
                return Err(format!("{name}: row {row} (line {line}), column '{column}': {}", bad.why));
            }
            kept += 1;
        }
        Ok((kept, fold.rows))
    }

    /// How the scan is fed the bytes.
    #[derive(Clone, Copy, Debug)]
    enum Via {
        File,
        Gzip,
        Zstd,
        Pipe,
    }

    /// Scans `bytes` fed as `via`; returns the name messages use, the outcome and the fingerprint.
    fn by_scan(
        bytes: &[u8],
        via: Via,
        (options, tolerant): (&CsvOptions, bool),
        upto: usize,
        threads: usize,
        block: usize,
    ) -> (String, Outcome, Option<String>) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let stored = match via {
            Via::Gzip => {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(bytes).unwrap();
                gz.finish().unwrap()
            }
            Via::Zstd => zstd::stream::encode_all(bytes, 1).unwrap(),
            Via::File | Via::Pipe => bytes.to_vec(),
        };
        file.write_all(&stored).unwrap();
        let source = Source::Path(file.path().to_path_buf());
        let opened = match via {
            Via::Pipe => {
                Input::from_reader("<stdin>".into(), Box::new(std::io::Cursor::new(stored)), options)
            }
            _ => Input::open(&source, options, true, threads),
        };
        let name = match via {
            Via::Pipe => "<stdin>".to_string(),
            _ => source.display_name(),
        };
        let mut input = match opened {
            Ok(input) => input,
            Err(e) => return (name, Err(e.to_string()), None),
        };
        if tolerant {
            input.tolerate_ragged_rows();
        }
        let mut fold = Cells { upto, rows: vec![] };
        match scan_with(&mut input, &mut fold, threads, block) {
            Ok(kept) => (name, Ok((kept, fold.rows)), input.fingerprint()),
            Err(e) => (name, Err(e.to_string()), None),
        }
    }

    fn records_fingerprint(bytes: &[u8], delimiter: u8) -> String {
        crate::data::fingerprint::fingerprint_of(bytes, delimiter).unwrap()
    }

    /// A CSV text made of awkward pieces: quoted fields (with line ends, delimiters and escaped
    /// quotes inside, text after the closing quote), quotes inside unquoted fields, blank
    /// lines, CR, CRLF, a byte-order mark, ragged rows, a last row without a line end, refused
    /// cells.
    fn csv_text() -> impl Strategy<Value = (Vec<u8>, u8, usize)> {
        let field = prop_oneof![
            12 => "[0-9a-c .x-]{0,5}".boxed(),
            2 => Just("x".to_string()).boxed(),
            1 => Just("\"BAD\"".to_string()).boxed(),
            9 => awkward_field().boxed(),
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

    fn via() -> impl Strategy<Value = Via> {
        prop_oneof![4 => Just(Via::File), 2 => Just(Via::Pipe), 1 => Just(Via::Gzip), 1 => Just(Via::Zstd)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Same rows, same order, same count, same message, same fingerprint as the csv crate,
        /// from a file, a pipe, gzip or zstd, for any number of threads and block size (so any
        /// cut, inside quotes too), with ragged rows refused or tolerated.
        #[test]
        fn scan_equals_the_csv_reader(
            (bytes, delimiter, upto) in csv_text(),
            via in via(),
            has_header in any::<bool>(),
            threads in 1usize..5,
            block in 8usize..200,
            tolerant in any::<bool>(),
        ) {
            let options = CsvOptions { delimiter, has_header, decimal: Default::default() };
            let (name, got, fingerprint) = by_scan(&bytes, via, (&options, tolerant), upto, threads, block);
            let want = by_csv(&name, &bytes, (&options, tolerant), upto);
            prop_assert_eq!(&got, &want, "{:?}, {} threads, {}-byte blocks: {:?}", via, threads, block, String::from_utf8_lossy(&bytes));
            if want.is_ok() && !matches!(via, Via::Pipe) {
                prop_assert_eq!(fingerprint, Some(records_fingerprint(&bytes, delimiter)));
            }
        }
    }

    fn write_and_scan(text: &str, threads: usize, block: usize) -> Outcome {
        let options = CsvOptions { delimiter: b',', has_header: true, decimal: Default::default() };
        by_scan(text.as_bytes(), Via::File, (&options, false), 1, threads, block).1
    }

    /// A quoted field read as its bytes between the quotes, or rewritten (`""`, text after the
    /// closing quote), with its quotes on every byte of a window and across window ends.
    #[test]
    fn quoted_values_at_every_offset() {
        let options = CsvOptions { delimiter: b',', has_header: false, decimal: Default::default() };
        for pad in 0..140 {
            for field in ["\"ab\"cd", "\"a\"\"b\"", "\"ab\"", "\"\"", "\"a,b\"", "\"a\nb\"x"] {
                let text = format!("{},{field},z\n{field},1,2\n\"q\",{field},{field}\n", "x".repeat(pad));
                for threads in [1, 2] {
                    let (name, got, _) =
                        by_scan(text.as_bytes(), Via::File, (&options, false), 2, threads, 4096);
                    let want = by_csv(&name, text.as_bytes(), (&options, false), 2);
                    assert_eq!(got, want, "{text:?}, {threads} threads");
                }
            }
        }
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
                    Ok((4, want.clone())),
                    "{threads} threads, {block}"
                );
            }
        }
    }

    /// A stray quote in an unquoted field makes the reader's guess of where records end wrong
    /// for the rest of the input: every cut is still checked and mended.
    #[test]
    fn a_stray_quote_does_not_misplace_records() {
        let mut text = String::from("a,b\n5'10\",x\n");
        for i in 0..300 {
            text.push_str(&format!("\"q{i}\",\"l\nl\"\n"));
        }
        let want = by_csv(
            "t",
            text.as_bytes(),
            (&CsvOptions { delimiter: b',', has_header: true, decimal: Default::default() }, false),
            1,
        );
        for threads in [1, 2, 3] {
            for block in [16, 40, 64, 100, 1000] {
                let got = write_and_scan(&text, threads, block);
                assert_eq!(got.as_ref().map(|g| g.0), Ok(301));
                assert_eq!(got.map(|g| g.1), want.clone().map(|w| w.1), "{threads} threads, {block}");
            }
        }
    }

    #[test]
    fn errors_are_reported_in_input_order_with_their_lines() {
        let mut text = String::from("a,b\n");
        for i in 0..500 {
            text.push_str(&format!("{i},\"{i}\r\n\"\r\n"));
        }
        text.push_str("7,BAD\n8,9\n8,BAD\n");
        let message = write_and_scan(&text, 4, 64).unwrap_err();
        assert!(message.ends_with("row 501 (line 1002), column 'b': refused"), "{message}");
        text.push_str("1,2,3\n");
        let text = text.replace("7,BAD", "7,8").replace("8,BAD", "8,8");
        let message = write_and_scan(&text, 4, 64).unwrap_err();
        assert!(message.ends_with("row 504 (line 1005) has 3 fields, but the rows before it have 2 (is --delimiter right? quote fields that contain it)"), "{message}");
    }

    /// Counts rows, claims to hold `bytes` of memory, and notes whether it was ever merged
    /// (only the parallel scan merges folds).
    #[derive(Clone, serde::Serialize, serde::Deserialize)]
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
        let options = CsvOptions { delimiter: b',', has_header: true, decimal: Default::default() };
        let run = |bytes: usize, threads: usize| {
            let mut input = Input::open(&source, &options, false, threads).unwrap();
            let mut fold = Heavy { bytes, rows: 0, merged: false };
            scan(&mut input, &mut fold).map(|kept| (kept, fold.rows, fold.merged))
        };
        assert_eq!(run(0, 4).unwrap(), (5000, 5000, true), "small folds go parallel");
        let big = FOLD_BUDGET / parallel::copies(1) + 1;
        assert_eq!(run(big, 4).unwrap(), (5000, 5000, false), "one copy, one thread");
        assert_eq!(run(big, 1).unwrap().0, 5000);
        // Too large for four threads' copies, not for three: three threads.
        let threads = |bytes: usize, threads: usize| {
            let input = Input::open(&source, &options, false, threads).unwrap();
            threads_for(&input, &Heavy { bytes, rows: 0, merged: false })
        };
        let big4 = FOLD_BUDGET / parallel::copies(4) + 1;
        assert_eq!((threads(big4, 4), threads(big4, 2), threads(big, 4)), (3, 2, 0));
        let refused = run(MAX_FOLD_BYTES + 1, 4).unwrap_err().to_string();
        assert!(refused.contains("more than the 256 MiB"), "{refused}");
    }
}
