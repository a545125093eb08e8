//! `dpstat check FILE`: the custodian's pre-flight. It reads the whole file and names every
//! problem a release would stop at or silently work around: rows whose number of fields
//! differs from the header's, cells that are not UTF-8, empty or non-numeric cells in columns
//! that also hold numbers, and line breaks inside quoted fields; and per column, how many
//! cells are numbers, other text, or empty. It never opens a ledger,
//! draws no noise and releases nothing; what it prints is about the rows themselves and is
//! **not private**, so it is for whoever may read the file anyway.
//!
//! Memory does not grow with the rows: per column a few counters and at most [`EXAMPLES`]
//! examples, and at most [`EXAMPLES`] ragged rows.

use std::io::Write;

use anyhow::Result;

use crate::cmd::release::InputFlags;
use crate::data::cell::{parse_number_in, DecimalMark};
use crate::data::engine::each_record;
use crate::data::input::{Dataset, Input};
use crate::error::{shown, Error};

/// Examples kept per column and per kind of problem.
pub const EXAMPLES: usize = 5;

/// What one column held.
#[derive(Clone, Debug, Default)]
struct Column {
    numbers: u64,
    empty: u64,
    text: u64,
    not_utf8: u64,
    /// Text cells that are numbers written with a decimal comma (`--decimal ,` would read them).
    comma: u64,
    /// (row, line, cell) of empty or non-numeric cells, in file order.
    examples: Vec<(u64, u64, String)>,
    not_utf8_rows: Vec<u64>,
}

/// What the scan of every record found: per column, the cells of each kind; the rows whose
/// number of fields is not the expected one; the cells that hold a line break.
#[derive(Default)]
struct Scan {
    rows: u64,
    columns: Vec<Column>,
    ragged: u64,
    ragged_examples: Vec<String>,
    quoted_breaks: u64,
}

/// `dpstat check`: reads everything, prints the report, and exits 0 when nothing was found or
/// exit 4 (`error::EXIT_PROBLEMS`) when something was.
pub fn run(input: &InputFlags, out: &mut dyn Write) -> Result<()> {
    let mut file = Input::open(&input.source, &input.csv, false, 1)?;
    let name = file.name().to_string();
    let scan = scan(&mut file)?;
    let (report, problems) = report(&name, &scan, &file)?;
    out.write_all(&report)?;
    out.flush()?;
    if problems > 0 {
        return Err(
            Error::Problems(format!("{name}: {problems} problem(s) found (see the report above)")).into()
        );
    }
    Ok(())
}

/// Reads the whole file once, keeping counters and a few examples, so memory does not grow
/// with the rows.
fn scan(file: &mut Input) -> Result<Scan> {
    // Every row is measured against the header's width, else the first row's; a CSV dataset's
    // partition columns come from its folders' names, not from its files' records, so its rows
    // are measured against the files' own header and the partition columns are not read.
    let expected_len = match file.dataset() {
        Some(Dataset::Csv { width, .. }) => *width,
        _ => file.width().unwrap_or(0),
    };
    let mut scan = Scan { columns: vec![Column::default(); expected_len], ..Scan::default() };
    let rows = each_record(file, |record, row, line| {
        if record.width() != expected_len {
            scan.ragged += 1;
            if scan.ragged_examples.len() < EXAMPLES {
                scan.ragged_examples
                    .push(format!("row {row} (line {line}): {} fields, not {expected_len}", record.width()));
            }
            return;
        }
        for (i, column) in scan.columns.iter_mut().enumerate() {
            let cell = record.get(i).unwrap_or_default();
            if cell.contains(&b'\n') || cell.contains(&b'\r') {
                scan.quoted_breaks += 1;
            }
            column.count(cell, (row, line), record.decimal());
        }
    })?;
    scan.rows = rows;
    Ok(scan)
}

/// The whole report, written before anything is printed, and how many problems it names
/// (the exit status depends on them).
fn report(name: &str, scan: &Scan, file: &Input) -> Result<(Vec<u8>, u64)> {
    let Scan { rows, columns, ragged, ragged_examples, quoted_breaks } = scan;
    let mut report = Vec::new();
    let mut problems = 0u64;
    writeln!(report, "{name}: {rows} rows, {} columns", columns.len())?;
    if *ragged > 0 {
        problems += ragged;
        writeln!(
            report,
            "problem: {ragged} rows have another number of fields than the first row (is --delimiter right?)"
        )?;
        for example in ragged_examples {
            writeln!(report, "  {example}")?;
        }
    }
    for (i, column) in columns.iter().enumerate() {
        problems += column.report(&file.column_label(i), &mut report)?;
    }
    if *quoted_breaks > 0 {
        writeln!(report, "note: {quoted_breaks} quoted cells hold a line break (they are read as one cell)")?;
    }
    if problems == 0 {
        writeln!(report, "ok: no problems found")?;
    }
    writeln!(report, "note: this report describes the rows themselves and is not private")?;
    Ok((report, problems))
}

impl Column {
    /// Counts one cell of a row that has the expected number of fields; an empty or
    /// non-numeric cell is kept as an example while there are fewer than [`EXAMPLES`].
    fn count(&mut self, cell: &[u8], (row, line): (u64, u64), decimal: DecimalMark) {
        let Ok(text) = std::str::from_utf8(cell) else {
            self.not_utf8 += 1;
            if self.not_utf8_rows.len() < EXAMPLES {
                self.not_utf8_rows.push(row);
            }
            return;
        };
        let text = text.trim_ascii();
        if parse_number_in(text.as_bytes(), decimal).is_some() {
            self.numbers += 1;
            return;
        }
        if text.is_empty() {
            self.empty += 1;
        } else {
            self.text += 1;
            if decimal == DecimalMark::Point && parse_number_in(text.as_bytes(), DecimalMark::Comma).is_some()
            {
                self.comma += 1;
            }
        }
        if self.examples.len() < EXAMPLES {
            self.examples.push((row, line, text.to_string()));
        }
    }

    /// The column's line of counts and its problems, written to `report`; returns the number of
    /// problem cells, which the report's total adds up.
    fn report(&self, label: &str, report: &mut Vec<u8>) -> Result<u64> {
        let mut problems = 0u64;
        writeln!(
            report,
            "column '{label}': {} numbers, {} other, {} empty",
            self.numbers, self.text, self.empty
        )?;
        if self.not_utf8 > 0 {
            problems += self.not_utf8;
            let rows: Vec<String> = self.not_utf8_rows.iter().map(u64::to_string).collect();
            writeln!(
                report,
                "problem: column '{label}': {} cells are not UTF-8 (rows {}{})",
                self.not_utf8,
                rows.join(", "),
                if self.not_utf8 > rows.len() as u64 { ", …" } else { "" }
            )?;
        }
        // A column with numbers and other cells: a numeric query on it stops at the first other
        // cell (or skips or imputes it); a column with no number at all is text.
        if self.numbers > 0 && self.text + self.empty > 0 {
            problems += self.text + self.empty;
            // Skipping decimal commas would keep the whole numbers alone: name the flag that
            // reads them instead.
            let fix = if self.comma > 0 && self.comma == self.text {
                "they are numbers written with a decimal comma: add --decimal ,"
            } else {
                "a numeric query stops there unless --invalid skip or impute=V"
            };
            writeln!(
                report,
                "problem: column '{label}' holds numbers, but {} cells are not numbers and {} are empty \
                 ({fix}):",
                self.text, self.empty
            )?;
            for (row, line, cell) in &self.examples {
                writeln!(report, "  row {row} (line {line}): '{}'", shown(cell, 40))?;
            }
        }
        Ok(problems)
    }
}
