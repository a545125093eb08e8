//! `dpstat sql "QUERY" [FILE…]`: GoogleSQL's differential-privacy queries (BigQuery's
//! `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(…) …`), translated into the workload `dpstat run`
//! executes ([`translate()`]) and run by it: one planner, one scan, one accountant, one ledger
//! record (query `sql`). `--explain` prints the workload and its ε split without reading data;
//! `dpstat plan sql` the error each aggregate would have.
//!
//! [`clause`] is the one pre-step before `sqlparser`: it cuts the differential-privacy clause,
//! which the crate does not parse, out of the crate's own tokens.

pub mod clause;
pub mod translate;

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cmd::release::{note_line, InputFlags};
use crate::cmd::run::{run_with, RunRequest};
use crate::cmd::workload::{person_unit, Found, Workload, SELECTION};
use crate::error::Error;
use crate::numeric::exact::decimal;
use crate::numeric::format::bound_up;
use crate::privacy::accuracy::Confidence;
use crate::privacy::currency::Spend;
use crate::privacy::threshold::threshold;
use crate::privacy::unit::Neighbours;
use crate::query::statistic::Statistic;
use crate::report::text::{Format, Style};

pub use translate::{translate, Translation};

/// How messages about the translated workload name it (`… line 9: query 'n': …`; the lines
/// are those `--explain` prints below its first).
pub const WORKLOAD_NAME: &str = "the query's workload";

/// `dpstat sql` as the command line asks for it: the query translated, the source its FROM
/// resolved to (in `run.input`), and how to run and print (`run.workload` is unused).
#[derive(Debug)]
pub struct Request {
    pub translation: Translation,
    pub explain: bool,
    pub run: RunRequest,
}

/// Runs the translated workload as `dpstat run` would run its file, or prints it (`--explain`).
pub fn run(request: &Request, out: &mut dyn Write) -> Result<()> {
    let t = &request.translation;
    let settings = (request.run.confidence, request.run.format);
    if request.explain {
        let workload = Workload::parse(WORKLOAD_NAME, &t.workload, &request.run.input, settings, false)?;
        out.write_all(explain(t, &workload).as_bytes())?;
        return Ok(());
    }
    let load = |ledger: bool| {
        Workload::parse(WORKLOAD_NAME, &t.workload, &request.run.input, settings, ledger).map_err(Into::into)
    };
    run_with(&request.run, "sql", load, out)?;
    t.notes.iter().for_each(|n| note_line(n));
    Ok(())
}

/// The workload as a file `dpstat run` takes as it is, and the ε split as comments.
fn explain(t: &Translation, workload: &Workload) -> String {
    let mut text = format!(
        "# dpstat sql --explain: the workload the query runs (FROM {}); dpstat run takes this file as it is\n",
        t.table
    );
    text.push_str(&t.workload);
    let found = workload.discovery.as_ref();
    text.push_str(&format!(
        "\n# {}, {}:\n",
        workload.spend(),
        split(workload.queries.len(), found.is_some())
    ));
    if let Some(found) = found {
        text.push_str(&format!("#   {SELECTION}: {}\n", exact(&found.spend)));
    }
    for q in &workload.queries {
        text.push_str(&format!("#   {}: {}\n", q.name, exact(&q.job.spend)));
    }
    for n in &t.notes {
        text.push_str(&format!("# note: {n}\n"));
    }
    text
}

/// A share as the table prints it: `epsilon 0.25`, `epsilon 1/3` (never rounded).
fn exact(spend: &Spend) -> String {
    match spend {
        Spend::Pure(eps) => {
            let r = eps.as_rational();
            let d = decimal(r);
            format!("epsilon {}", if d.starts_with('~') { r.to_string() } else { d })
        }
        other => other.to_string(),
    }
}

/// How the total is split (BigQuery splits it evenly too), exactly: sequential composition.
/// Groups found in the data take an even part as one more aggregate would (`selection`).
fn split(aggregates: usize, found: bool) -> String {
    match (aggregates, found) {
        (1, false) => "all of it to the one aggregate".to_string(),
        (n, false) => {
            format!("split evenly between the {n} aggregates (exact shares; sequential composition)")
        }
        (n, true) => format!(
            "split evenly between the selection of groups (all of delta) and the {n} aggregate{} (exact \
             shares; sequential composition)",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// `dpstat plan sql "QUERY"`: the query as [`Request`] takes it, without data.
#[derive(Debug)]
pub struct PlanRequest {
    pub translation: Translation,
    /// `--rows`, for the means.
    pub rows: Option<u64>,
    pub confidence: Confidence,
    pub format: Format,
    pub style: Style,
}

/// One aggregate's plan.
#[derive(Serialize)]
struct Planned {
    name: String,
    kind: &'static str,
    spend: String,
    /// In the statistic's units; a quantile's in rows of rank.
    error_bound: Option<f64>,
    not_planned: Option<String>,
}

/// The error bound each aggregate of the query would state, at its share, without reading data
/// or charging anything.
pub fn plan(request: &PlanRequest, out: &mut dyn Write) -> Result<()> {
    // No data is read: the header is assumed, as `dpstat plan run` assumes it.
    let input = InputFlags::planned();
    let settings = (request.confidence, Format::Text);
    let workload = Workload::parse(WORKLOAD_NAME, &request.translation.workload, &input, settings, false)?;
    let planned: Vec<Planned> = workload
        .queries
        .iter()
        .map(|q| {
            let (error_bound, not_planned) = match q.planned_error(request.confidence, request.rows) {
                Ok(bound) => (Some(bound), None),
                Err(why) => (None, Some(why)),
            };
            Planned {
                name: q.name.clone(),
                kind: q.job.statistic.name(),
                spend: exact(&q.job.spend),
                error_bound,
                not_planned,
            }
        })
        .collect();
    let planned: Vec<Planned> = workload
        .discovery
        .as_ref()
        .map(|f| selection_plan(f, workload.person.is_some()))
        .into_iter()
        .chain(planned)
        .collect();
    let bytes = match request.format {
        Format::Json => {
            let mut b = serde_json::to_vec(&planned)?;
            b.push(b'\n');
            b
        }
        Format::Text => plan_text(&workload, &planned, request).into_bytes(),
        _ => return Err(Error::usage("dpstat plan sql prints --format text or json").into()),
    };
    out.write_all(&bytes)?;
    Ok(())
}

/// The selection's row of a plan: its spend, and the threshold a key's noisy count of persons
/// (rows) must reach, in place of an error bound (`query::discover`).
fn selection_plan(found: &Found, persons: bool) -> Planned {
    let shares = &found.shares;
    let tau = threshold(&shares.per_key_eps, &shares.per_key_delta, Neighbours::AddRemove).tau;
    Planned {
        name: SELECTION.to_string(),
        kind: "selection",
        spend: exact(&found.spend),
        error_bound: None,
        not_planned: Some(format!(
            "keys kept when their noisy count of {} reaches {tau}",
            if persons { "persons" } else { "rows" }
        )),
    }
}

fn plan_text(workload: &Workload, planned: &[Planned], request: &PlanRequest) -> String {
    let mut text = format!(
        "plan     dpstat sql (FROM {}), {} (no data read, no noise drawn, no budget charged)\n\
         total    {}, {}\n",
        request.translation.table,
        workload.neighbours.name(),
        workload.spend(),
        split(workload.queries.len(), workload.discovery.is_some())
    );
    if let Some(line) = workload.person.as_ref().and_then(|p| person_unit(p).line()) {
        text.push_str(&format!("unit     {line}\n"));
    }
    let percent = request.confidence.level();
    let mut rows: Vec<[String; 4]> =
        vec![["query".into(), "kind".into(), "spend".into(), format!("error (confidence {percent})")]];
    for p in planned {
        let bound = match (p.error_bound, &p.not_planned) {
            (Some(b), _) if p.kind == "quantile" => {
                format!("±{} rows of rank", bound_up(b, request.style.rounding()))
            }
            (Some(b), _) => format!("±{}", bound_up(b, request.style.rounding())),
            (None, Some(why)) if p.kind == "selection" => why.clone(),
            (None, Some(why)) => format!("not planned: {why}"),
            (None, None) => "-".to_string(),
        };
        rows.push([p.name.clone(), p.kind.to_string(), p.spend.clone(), bound]);
    }
    let widths: Vec<usize> =
        (0..3).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for row in &rows {
        let mut line = String::from(" ");
        for (cell, w) in row.iter().take(3).zip(&widths) {
            line.push_str(&format!(" {cell:<w$} "));
        }
        line.push_str(&format!(" {}", row[3]));
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}
