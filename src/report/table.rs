//! `dpstat run`'s output: one JSON line per query, or an aligned text table with one row per
//! value (per group and bin where there are several) and a last row with the total.

use anyhow::Result;
use serde::Serialize;

use num_rational::BigRational;

use crate::numeric::exact::decimal;
use crate::privacy::accuracy::Confidence;
use crate::privacy::contribution::Unit;
use crate::privacy::currency::Spend;
use crate::report::chart;
use crate::report::figure::percent;
use crate::report::release::{Guarantee, Number, Published, Release, NO_VALUE};
use crate::report::text::{figure, format_number, quantile_value, rank_rows, Format, Style};

/// A workload's releases as printed.
pub struct Workload {
    /// The total spend: ε, or ρ with Gaussian noise; what the queries' shares add up to.
    pub total: Spend,
    /// The total as a guarantee (with Gaussian noise, ρ and the (ε, δ) it converts to).
    pub guarantee: Guarantee,
    pub confidence: Confidence,
    pub queries: Vec<Query>,
}

/// One query of a workload and what it published.
pub struct Query {
    pub name: String,
    /// This query's share of the total, in the total's currency.
    pub share: Spend,
    pub release: Published,
}

/// One JSON line per query: its name and its release.
#[derive(Serialize)]
struct Line<'a> {
    name: &'a str,
    /// The workload's total ε, exactly (with Gaussian noise, the ε its total ρ converts to);
    /// this query's share is `epsilon_exact` (or `rho_exact`).
    total_epsilon_exact: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_rho_exact: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_delta_exact: Option<&'a str>,
    #[serde(flatten)]
    release: &'a Published,
}

/// Text: an aligned table, one row per value (per group and bin where there are several), and
/// a last row with the total; every row has its error bound, and values and bounds are rounded
/// as for a single release (`style`; in full with `--full-precision`). CSV: the same rows,
/// unpadded. JSON: one line per query.
pub fn render(workload: &Workload, format: Format, style: Style) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match format {
        Format::Json => {
            for query in &workload.queries {
                let g = &workload.guarantee;
                let line = Line {
                    name: &query.name,
                    total_epsilon_exact: &g.epsilon_exact,
                    total_rho_exact: g.rho_exact.as_deref(),
                    total_delta_exact: g.delta_exact.as_deref(),
                    release: &query.release,
                };
                serde_json::to_writer(&mut out, &line)?;
                out.push(b'\n');
            }
        }
        Format::Chart => {
            out.extend_from_slice(chart::render(&chart(workload, style), chart::terminal_width()).as_bytes())
        }
        Format::Text => {
            let rows = rows(workload, style);
            let widths: Vec<usize> =
                (0..9).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
            for row in &rows {
                let cells: Vec<String> =
                    row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}", w = *w)).collect();
                out.extend_from_slice(cells.join("  ").trim_end().as_bytes());
                out.push(b'\n');
            }
            if let Some(line) = unit_line(workload) {
                out.extend_from_slice(format!("unit: {line}\n").as_bytes());
            }
        }
        // The text's rows as CSV, unpadded; the unit line is a note for stderr ([`unit_line`]).
        Format::Csv => {
            let mut writer = csv::Writer::from_writer(&mut out);
            // A cell the text marks `-` (none) is empty in CSV.
            for row in rows(workload, style) {
                writer.write_record(row.iter().map(|c| if c == "-" { "" } else { c.as_str() }))?;
            }
            writer.flush()?;
        }
    }
    Ok(out)
}

/// The text table's rows: the header, one row per value (per group and bin where there are
/// several), and the total. Value and error bound are columns of their own.
fn rows(workload: &Workload, style: Style) -> Vec<[String; 9]> {
    let confidence = workload.confidence.level();
    let mut rows: Vec<[String; 9]> = vec![[
        "name".into(),
        "query".into(),
        "column".into(),
        "group".into(),
        "bin".into(),
        "value".into(),
        if matches!(workload.total, Spend::Zcdp(_)) { "rho" } else { "epsilon" }.into(),
        "sensitivity".into(),
        format!("error({}%)", percent(confidence)),
    ]];
    for query in &workload.queries {
        let eps = shown(&query.share);
        match &query.release {
            Published::One(r) => table_rows(&mut rows, &query.name, "-", r, &eps, style),
            Published::Grouped(g) => {
                for group in &g.groups {
                    table_rows(&mut rows, &query.name, &group.key, &group.release, &eps, style);
                }
            }
        }
    }
    let dash = || "-".to_string();
    rows.push([
        "total".into(),
        dash(),
        dash(),
        dash(),
        dash(),
        dash(),
        shown(&workload.total),
        dash(),
        dash(),
    ]);
    rows
}

/// A person-level workload's queries share one unit: its epsilons and sensitivities are one
/// person's. None at row level.
pub fn unit_line(workload: &Workload) -> Option<String> {
    workload.queries.first().and_then(|q| unit_of(&q.release).line())
}

/// The privacy unit a release states.
fn unit_of(published: &Published) -> &Unit {
    match published {
        Published::One(r) => &r.unit,
        Published::Grouped(g) => &g.unit,
    }
}

/// The workload's chart: one panel per query, each on its own scale.
pub fn chart(workload: &Workload, style: Style) -> chart::Chart {
    let queries: Vec<(&str, &Published)> =
        workload.queries.iter().map(|q| (q.name.as_str(), &q.release)).collect();
    let total = match &workload.total {
        Spend::Zcdp(rho) => format!("rho {}", decimal(rho.as_rational())),
        other => format!("eps {}", exact_decimal(amount(other))),
    };
    chart::of_workload(&queries, &total, workload.confidence.level(), style)
}

fn table_rows(rows: &mut Vec<[String; 9]>, name: &str, group: &str, r: &Release, eps: &str, style: Style) {
    let sensitivity = match r.noise.sensitivity.or(r.noise.l2_sensitivity) {
        Some(s) => format_float(s),
        None => r
            .noise
            .parts
            .iter()
            .map(|p| format!("{}={}", p.name, format_float(p.sensitivity_read())))
            .collect::<Vec<_>>()
            .join(" "),
    };
    let column = r.column.clone().unwrap_or_else(|| "-".into());
    let row = |bin: String, value: String, sensitivity: String, error: String| -> [String; 9] {
        [
            name.into(),
            r.query.into(),
            column.clone(),
            group.into(),
            bin,
            value,
            eps.into(),
            sensitivity,
            error,
        ]
    };
    // A quantile's rows are its levels, each with its score sensitivity and its rank bound.
    if let Some(levels) = &r.quantiles {
        for q in levels {
            let rank =
                if style.round { rank_rows(q.rank_error_bound) } else { format_float(q.rank_error_bound) };
            rows.push(row(
                format!("q={}", format_float(q.q)),
                quantile_value(q.value, style),
                format!("score={}", q.score_sensitivity),
                format!("{rank} rows"),
            ));
        }
        return;
    }
    let shown = |value: Number| -> (String, String) {
        if !r.noise.accuracy.error_bound.is_finite() {
            // A slope whose x variance cannot be told from 0 has no finite bound (null in JSON).
            (format_number(value), "unbounded".into())
        } else if style.round {
            figure(value, &r.noise.accuracy, style)
        } else {
            (format_number(value), format_float(r.noise.accuracy.error_bound))
        }
    };
    if let Some(value) = r.value {
        let (value, error) = shown(value);
        rows.push(row("-".into(), value, sensitivity.clone(), error));
    } else if r.post_processing.iter().any(|p| p == NO_VALUE) {
        // Withheld: its row stays (its share is spent), its reason is a note on stderr.
        let sensitivity = if sensitivity.is_empty() { "-".into() } else { sensitivity.clone() };
        rows.push(row("-".into(), "-".into(), sensitivity, "withheld".into()));
    }
    for bin in r.bins.iter().flatten() {
        let (value, error) = shown(Number::Integer(bin.count));
        rows.push(row(bin.bin.clone(), value, sensitivity.clone(), error));
    }
}

fn format_float(x: f64) -> String {
    format_number(Number::Real(x))
}

/// The ε of a spend as [`exact_decimal`] writes it; a ρ (usually a long binary fraction, as
/// derived from ε and δ) as its decimal to 15 significant digits, marked `~`, when it does not
/// terminate soon.
fn shown(spend: &Spend) -> String {
    match spend {
        Spend::Zcdp(rho) => decimal(rho.as_rational()),
        other => exact_decimal(amount(other)),
    }
}

/// The ε or ρ of a spend.
fn amount(spend: &Spend) -> &BigRational {
    match spend {
        Spend::Pure(eps) | Spend::Approx { eps, .. } => eps.as_rational(),
        Spend::Zcdp(rho) => rho.as_rational(),
    }
}

/// ε or ρ for people: the exact decimal, or the fraction when it does not terminate.
pub fn exact_decimal(r: &BigRational) -> String {
    let d = decimal(r);
    if d.starts_with('~') {
        format!("{}/{}", r.numer(), r.denom())
    } else {
        d
    }
}
