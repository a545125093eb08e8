//! `dpstat budget`: a dataset's total, what it has spent and the releases charged to it.
//! Reads the ledger under its lock, like a release does, so it never sees half a record.

use std::fs::File;
use std::io::{self, Write};

use anyhow::Result;
use serde::Serialize;

use std::path::PathBuf;

use num_rational::BigRational;

use crate::data::fingerprint::fingerprint_of;
use crate::data::input::decompressed;
use crate::error::bad_input;
use crate::numeric::exact::decimal;
use crate::privacy::ledger::{self, Account, BudgetSummary, Record};
use crate::report::text::Format;

/// `dpstat budget` as the command line asks for it.
#[derive(Clone, Debug)]
pub struct Request {
    pub ledger: PathBuf,
    /// `--dataset NAME`; else the fingerprint of `file`.
    pub dataset: Option<String>,
    pub format: Format,
    /// The dataset's file; None or `-` reads standard input.
    pub file: Option<PathBuf>,
}

#[derive(Serialize)]
struct Report<'a> {
    #[serde(flatten)]
    summary: BudgetSummary,
    releases: &'a [Record],
}

pub fn report(args: &Request, out: &mut dyn Write) -> Result<()> {
    if args.format == Format::Chart {
        return Err(bad_input("--format chart draws histograms; dpstat budget prints --format text or json"));
    }
    let dataset = match (&args.dataset, &args.file) {
        (Some(name), _) => name.clone(),
        (None, Some(path)) if path.as_os_str() != "-" => {
            let file =
                File::open(path).map_err(|e| bad_input(format!("cannot open {}: {e}", path.display())))?;
            let reading = |e: io::Error| bad_input(format!("reading {}: {e}", path.display()));
            fingerprint_of(decompressed(Box::new(file), Some(path)).map_err(reading)?).map_err(reading)?
        }
        _ => {
            let reading = |e: io::Error| bad_input(format!("reading <stdin>: {e}"));
            fingerprint_of(decompressed(Box::new(io::stdin().lock()), None).map_err(reading)?)
                .map_err(reading)?
        }
    };
    let account = ledger::account(&args.ledger, &dataset)?;
    let summary = BudgetSummary::new(&dataset, &account);
    let mut bytes = Vec::new();
    match args.format {
        Format::Json => {
            serde_json::to_writer(&mut bytes, &Report { summary, releases: &account.releases })?;
            bytes.push(b'\n');
        }
        Format::Text | Format::Chart => render_text(&mut bytes, &account, &dataset)?,
    }
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

fn render_text(out: &mut Vec<u8>, account: &Account, dataset: &str) -> io::Result<()> {
    let or_none = |v: &Option<BigRational>| v.as_ref().map_or_else(|| "none recorded".to_string(), decimal);
    writeln!(out, "dataset    {dataset}")?;
    writeln!(out, "budget     {}", or_none(&account.total))?;
    writeln!(out, "spent      {}", decimal(&account.spent))?;
    writeln!(out, "remaining  {}", or_none(&account.remaining()))?;
    writeln!(out, "releases   {}", account.releases.len())?;
    for record in &account.releases {
        if let Record::Release { time, query, column, neighbours, epsilon, .. } = record {
            let column = column.as_deref().unwrap_or("-");
            let eps = ledger::parse_exact(epsilon).map_or_else(|| epsilon.clone(), |e| decimal(&e));
            writeln!(out, "  {time}  {query:<9} {column:<16} {neighbours:<10} eps {eps}")?;
        }
    }
    Ok(())
}
