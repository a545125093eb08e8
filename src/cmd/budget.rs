//! `dpstat budget`: what a ledger holds: every dataset's total, what it has spent and the
//! releases charged to it, with a mark where the data changed between two releases. Reads the
//! ledger read-only under a shared lock, so it never sees half a record, and validates all of it
//! (chain, header, running totals) as a release does. Reads no data unless given a FILE, whose
//! fingerprint it then compares with the releases'. A keyed ledger is verified with
//! `--ledger-key`; without it it is listed, marked as not verified.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use serde::Serialize;

use crate::cmd::release::note_line;
use crate::data::fingerprint::fingerprint_of;
use crate::data::input::decompressed;
use crate::error::{bad_input, shown};
use crate::numeric::exact::decimal;
use crate::privacy::ledger::{self, Account, BudgetSummary, Entry, Ledger};
use crate::privacy::renyi::{Measure, Rule};
use crate::report::text::Format;

/// `dpstat budget` as the command line asks for it.
#[derive(Clone, Debug)]
pub struct Request {
    pub ledger: PathBuf,
    /// `--ledger-key FILE`: the key of a keyed ledger, to verify it.
    pub key: Option<PathBuf>,
    /// `--dataset NAME`: only this one; else every dataset in the ledger.
    pub dataset: Option<String>,
    pub format: Format,
    /// A data file (`-`: standard input) to compare with the releases' fingerprints.
    pub file: Option<PathBuf>,
    /// The delimiter of `file`.
    pub delimiter: u8,
}

#[derive(Serialize)]
struct Report {
    ledger: String,
    records: u64,
    head: String,
    /// How a keyed ledger's chain was checked (absent for a keyless one).
    #[serde(skip_serializing_if = "Option::is_none")]
    chain: Option<ChainReport>,
    datasets: Vec<DatasetReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<FileReport>,
}

#[derive(Serialize)]
struct ChainReport {
    keyed: bool,
    key_id: String,
    /// The HMAC chain was checked with the key; false: its records could be forged.
    verified: bool,
    /// "checked" (not older than the key's state file), "missing" (no state file) or
    /// "not checked" (no key).
    state: &'static str,
}

#[derive(Serialize)]
struct DatasetReport {
    #[serde(flatten)]
    summary: BudgetSummary,
    /// The privacy unit every release of the dataset is charged in: `row` or
    /// `person:COL[,COL]` (None: no release charged yet).
    unit: Option<String>,
    releases: Vec<ReleaseReport>,
}

#[derive(Serialize)]
struct ReleaseReport {
    #[serde(flatten)]
    entry: Entry,
    /// The release read other data than the completed release before it in this dataset.
    data_changed: bool,
}

#[derive(Serialize)]
struct FileReport {
    name: String,
    fingerprint: String,
    /// The releases (by record number) that read exactly these records.
    matches: Vec<u64>,
}

pub fn report(args: &Request, out: &mut dyn Write) -> Result<()> {
    if args.format == Format::Chart {
        return Err(bad_input(
            "--format chart draws histograms; dpstat budget prints --format text, csv or json",
        ));
    }
    let file = match &args.file {
        None => None,
        Some(path) => Some(file_fingerprint(path, args.delimiter)?),
    };
    let ledger = ledger::read_keyed(&args.ledger, args.key.as_deref())?;
    let names = dataset_names(args, &ledger)?;
    let datasets: Vec<DatasetReport> = names.iter().map(|n| dataset_report(n, &ledger.account(n))).collect();
    let file = file.map(|(name, fingerprint)| file_report(name, fingerprint, &datasets));
    let report = Report {
        ledger: args.ledger.display().to_string(),
        records: ledger.records,
        head: ledger.head_hex(),
        chain: chain_report(&ledger),
        datasets,
        file,
    };
    let mut bytes = Vec::new();
    match args.format {
        Format::Json => {
            serde_json::to_writer(&mut bytes, &report)?;
            bytes.push(b'\n');
        }
        Format::Csv => render_csv(&mut bytes, &report, &ledger)?,
        Format::Text | Format::Chart => render_text(&mut bytes, &report, &ledger)?,
    }
    out.write_all(&bytes)?;
    out.flush()?;
    if args.format == Format::Csv {
        // The lines about the ledger and the file are not rows of the CSV: notes on stderr.
        csv_notes(report, &ledger)?;
    }
    Ok(())
}

/// The datasets to list: the one `--dataset` names, refused with the names the ledger has when
/// it holds no such dataset; else every dataset in the ledger.
fn dataset_names(args: &Request, ledger: &Ledger) -> Result<Vec<String>> {
    let Some(name) = &args.dataset else {
        return Ok(ledger.accounts.keys().cloned().collect());
    };
    let name = ledger::check_dataset_name(name)?;
    if !ledger.accounts.contains_key(&name) {
        let known: Vec<String> = ledger.accounts.keys().cloned().collect();
        return Err(bad_input(format!(
            "{}: no dataset '{}' in this ledger; it has: {}",
            args.ledger.display(),
            shown(&name, 40),
            if known.is_empty() { "none yet".to_string() } else { known.join(", ") }
        )));
    }
    Ok(vec![name])
}

/// The data file named `name` with its `fingerprint`, and the listed releases that read
/// exactly its records.
fn file_report(name: String, fingerprint: String, datasets: &[DatasetReport]) -> FileReport {
    let matches = datasets
        .iter()
        .flat_map(|d| &d.releases)
        .filter(|r| r.entry.fingerprint.as_deref() == Some(fingerprint.as_str()))
        .map(|r| r.entry.seq)
        .collect();
    FileReport { name, fingerprint, matches }
}

/// How a keyed ledger's chain was checked; None for a keyless ledger, which has no chain to
/// verify.
fn chain_report(ledger: &Ledger) -> Option<ChainReport> {
    ledger.key_id.as_ref().map(|id| ChainReport {
        keyed: true,
        key_id: id.clone(),
        verified: ledger.verified,
        state: match (ledger.verified, ledger.state_checked) {
            (false, _) => "not checked",
            (true, true) => "checked",
            (true, false) => "missing",
        },
    })
}

/// The text listing's lines about the ledger and the file (the listing without its datasets),
/// each written as a note of one line.
fn csv_notes(report: Report, ledger: &Ledger) -> Result<()> {
    let mut text = Vec::new();
    render_text(&mut text, &Report { datasets: vec![], ..report }, ledger)?;
    for line in String::from_utf8_lossy(&text).lines().filter(|l| !l.is_empty() && !l.starts_with("datasets"))
    {
        note_line(&line.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    Ok(())
}

/// `--format csv`: one row per release (a dataset without releases: one row with its budget
/// only), the dataset's budget, spent and remaining ε on each (rounded as the text rounds
/// them), every spend in a column of its own, and the release's whole data fingerprint (empty
/// for a charge whose run stopped before it released).
fn render_csv(out: &mut Vec<u8>, report: &Report, ledger: &Ledger) -> Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record([
        "dataset",
        "unit",
        "budget",
        "spent",
        "remaining",
        "release",
        "time",
        "query",
        "column",
        "neighbours",
        "epsilon",
        "delta",
        "rho",
        "data",
        "data_changed",
    ])?;
    for dataset in &report.datasets {
        let a = ledger.account(&dataset.summary.dataset);
        let head = [
            dataset.summary.dataset.clone(),
            dataset.unit.clone().unwrap_or_else(|| ledger::ROW_UNIT.to_string()),
            a.total.as_ref().map_or_else(String::new, decimal),
            a.spent_epsilon().map_or_else(String::new, |s| rounded(&s, Round::Up)),
            a.remaining().map_or_else(String::new, |r| rounded(&r, Round::Down)),
        ];
        if dataset.releases.is_empty() {
            let mut row = head.to_vec();
            row.resize(15, String::new());
            writer.write_record(&row)?;
        }
        for release in &dataset.releases {
            let e = &release.entry;
            let exact = |t: &Option<String>| {
                t.as_ref().map_or_else(String::new, |t| {
                    ledger::parse_exact(t).map_or_else(|| t.clone(), |r| decimal(&r))
                })
            };
            let mut row = head.to_vec();
            row.extend([
                e.seq.to_string(),
                e.time.to_string(),
                e.query.clone(),
                e.column.clone().unwrap_or_default(),
                e.neighbours.to_string(),
                exact(&e.epsilon),
                exact(&e.delta),
                exact(&e.rho),
                e.fingerprint.clone().unwrap_or_default(),
                release.data_changed.to_string(),
            ]);
            writer.write_record(&row)?;
        }
    }
    writer.flush()?;
    Ok(())
}

/// The name and fingerprint of the data file to compare; standard input only when asked for
/// with `-` (never read by default: `dpstat budget` is also typed at a terminal).
fn file_fingerprint(path: &PathBuf, delimiter: u8) -> Result<(String, String)> {
    if path.as_os_str() == "-" {
        let reading = |e: io::Error| bad_input(format!("reading <stdin>: {e}"));
        let raw = decompressed("<stdin>", Box::new(io::stdin()), None)?;
        return Ok(("<stdin>".into(), fingerprint_of(raw, delimiter).map_err(reading)?));
    }
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| bad_input(format!("cannot open {name}: {e}")))?;
    let reading = |e: io::Error| bad_input(format!("reading {name}: {e}"));
    let raw = decompressed(&name, Box::new(file), Some(path))?;
    let fingerprint = fingerprint_of(raw, delimiter).map_err(reading)?;
    Ok((name, fingerprint))
}

fn dataset_report(name: &str, account: &Account) -> DatasetReport {
    let mut last: Option<&str> = None;
    let releases = account
        .releases
        .iter()
        .map(|entry| {
            let now = entry.fingerprint.as_deref();
            let data_changed = matches!((last, now), (Some(a), Some(b)) if a != b);
            if now.is_some() {
                last = now;
            }
            ReleaseReport { entry: entry.clone(), data_changed }
        })
        .collect();
    DatasetReport { summary: BudgetSummary::new(name, account), unit: account.unit.clone(), releases }
}

fn render_text(out: &mut Vec<u8>, report: &Report, ledger: &Ledger) -> io::Result<()> {
    writeln!(out, "ledger     {} ({} records, head {})", report.ledger, report.records, &report.head[..16])?;
    if let Some(chain) = &report.chain {
        let id = &chain.key_id[..16];
        let how = match chain.state {
            "not checked" => "NOT verified: no --ledger-key given, so its records could have been forged",
            "checked" => "verified with the key, and not older than the key's state file",
            _ => "verified with the key; the key's state file is missing, so an older copy put back would not show",
        };
        writeln!(out, "chain      keyed (key id {id}), {how}")?;
    }
    if report.datasets.is_empty() {
        writeln!(out, "datasets   none yet: the first release with --budget TOTAL records one")?;
    }
    for dataset in &report.datasets {
        let a = ledger.account(&dataset.summary.dataset);
        let mut total = a.total.as_ref().map_or_else(|| "none recorded".to_string(), decimal);
        if let Some(delta) = &a.delta {
            total.push_str(&format!(" with delta {delta}, {}", a.delta_for.describe(delta)));
        }
        let mut spent = a.spent_epsilon().map_or_else(|| "unknown".to_string(), |s| rounded(&s, Round::Up));
        let renyi = match a.measure() {
            Some(Measure { rule: Rule::Renyi { order, limit }, value, .. }) => Some((order, limit, value)),
            _ => None,
        };
        match (a.spent_rho_total(), &a.zcdp_delta(), renyi) {
            (Some(_), Some(delta), Some((order, limit, value))) => spent.push_str(&format!(
                " as (epsilon, delta) = ({spent}, {delta}): Renyi divergence {} at order {} (the \
                 budget allows {} there)",
                rounded(&value, Round::Up),
                decimal(&order.alpha),
                rounded(&limit, Round::Down)
            )),
            (Some(rho), Some(delta), None) => spent.push_str(&format!(
                " as (epsilon, delta) = ({spent}, {delta}): every release together is rho {}-zCDP",
                rounded(&rho, Round::Up)
            )),
            _ if a.history.has_approx() => {
                spent.push_str(&format!(" with delta {}", decimal(a.history.delta_sum())))
            }
            _ => {}
        }
        let remaining =
            a.remaining().map_or_else(|| "none recorded".to_string(), |r| rounded(&r, Round::Down));
        writeln!(out)?;
        writeln!(out, "dataset    {}", shown(&dataset.summary.dataset, 60))?;
        // A row-level dataset is listed as it always was; a person-level one says so.
        if let Some(unit) = dataset.unit.as_deref().filter(|u| *u != ledger::ROW_UNIT) {
            writeln!(out, "unit       {}", shown(unit, 60))?;
        }
        writeln!(out, "budget     {total}")?;
        writeln!(out, "spent      {spent}")?;
        writeln!(out, "remaining  {remaining}")?;
        writeln!(out, "releases   {}", dataset.releases.len())?;
        let rows: Vec<[String; 7]> = dataset.releases.iter().map(release_cells).collect();
        write_aligned(out, &rows)?;
    }
    if let Some(file) = &report.file {
        writeln!(out)?;
        let matches = if file.matches.is_empty() {
            "read by no release in this listing".to_string()
        } else {
            let seqs: Vec<String> = file.matches.iter().map(|s| format!("#{s}")).collect();
            format!("the data read by {}", seqs.join(", "))
        };
        writeln!(out, "file       {}: {matches}", shown(&file.name, 60))?;
    }
    Ok(())
}

/// One release's line of the text listing, as cells: sequence, time, query, column, unit,
/// spend and data.
fn release_cells(release: &ReleaseReport) -> [String; 7] {
    let e = &release.entry;
    let exact = |t: &String| ledger::parse_exact(t).map_or_else(|| t.clone(), |r| decimal(&r));
    let spend = match (&e.epsilon, &e.rho, &e.delta) {
        (Some(eps), _, None) => format!("eps {}", exact(eps)),
        (Some(eps), _, Some(delta)) => format!("eps {} delta {}", exact(eps), exact(delta)),
        (None, Some(rho), _) => format!("rho {}", exact(rho)),
        (None, None, _) => "-".to_string(),
    };
    let data = match (&e.fingerprint, release.data_changed) {
        (None, _) => "charged, not released (the run stopped after its charge)".to_string(),
        (Some(f), changed) => {
            let short = f.rsplit(':').next().unwrap_or(f);
            let short = &short[..short.len().min(12)];
            if changed {
                format!("data {short}  (changed since the release before)")
            } else {
                format!("data {short}")
            }
        }
    };
    [
        format!("#{}", e.seq),
        e.time.clone(),
        shown(&e.query, 30),
        shown(e.column.as_deref().unwrap_or("-"), 40),
        e.neighbours.clone(),
        spend,
        data,
    ]
}

/// The listing's release lines, each column as wide as its widest cell (and at least as wide
/// as the listing has always printed it), so that a query or column of any length, with spaces
/// or not, keeps the columns after it aligned.
fn write_aligned(out: &mut Vec<u8>, rows: &[[String; 7]]) -> io::Result<()> {
    const AT_LEAST: [usize; 6] = [5, 21, 9, 16, 10, 12];
    let widths: Vec<usize> = AT_LEAST
        .iter()
        .enumerate()
        .map(|(c, least)| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0).max(*least))
        .collect();
    for row in rows {
        let mut line = String::from(" ");
        for (cell, width) in row.iter().zip(&widths) {
            line.push_str(&format!(" {cell:<width$}"));
        }
        line.push(' ');
        line.push_str(&row[6]);
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

enum Round {
    Up,
    Down,
}

/// A spend rounded up, or what is left rounded down, to 9 decimal places where it has more: a
/// printed budget never overstates what is left.
fn rounded(r: &BigRational, direction: Round) -> String {
    let scale = BigInt::from(10u64.pow(9));
    let scaled = r * BigRational::from_integer(scale.clone());
    if scaled.is_integer() {
        return decimal(r);
    }
    let (q, _) = scaled.numer().div_mod_floor(scaled.denom());
    let q = match direction {
        Round::Down => q,
        Round::Up => q + 1,
    };
    decimal(&BigRational::new(q, scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spends_round_up_and_what_is_left_rounds_down() {
        let third = BigRational::new(1.into(), 3.into());
        assert_eq!(rounded(&third, Round::Up), "0.333333334");
        assert_eq!(rounded(&third, Round::Down), "0.333333333");
        let fifth = BigRational::new(1.into(), 5.into());
        assert_eq!(rounded(&fifth, Round::Down), "0.2");
        assert_eq!(rounded(&fifth, Round::Up), "0.2");
    }
}
