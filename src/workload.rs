//! `dpstat run WORKLOAD.toml [FILE]`: several queries on one file in one streaming pass.
//!
//! The workload file sets the total ε and the privacy unit; every `[[query]]` has a name, a
//! kind, its column and bounds, and an optional `share` of ε. Shares are exact decimals and
//! must add up to the total exactly (exact rationals, [`crate::epsilon::parse_decimal`]); the
//! queries without a share split what is left evenly (all of it when none has one). The queries
//! run on the same data, so by sequential composition (Dwork & Roth 2014, Thm 3.16) the whole
//! release is ε_total-DP for the workload's privacy unit, and the ledger is charged ε_total once.
//! Each query is planned exactly as the same command line would be (same grids, sensitivities
//! and refusals), at its share.
//!
//! One scan: a [`WorkloadFold`] holds each query's fold (with its own filters and groups) and
//! feeds every row to all of them. Order of work as for one query: validate everything, read,
//! add all the noise, charge, and only then print.
//!
//! ```toml
//! epsilon = "1"              # total; a number or a string, read as an exact decimal
//! neighbours = "add-remove"  # or "replace"; default add-remove
//!
//! [[query]]
//! name = "income_mean"
//! kind = "mean"              # count | sum | mean | variance | histogram
//! column = "income"
//! lower = 0
//! upper = 200000
//! share = "0.25"             # optional
//! # where = ["region=north"], by = "urban_rural", keys = ["1", "2"],
//! # bins = 8 or categories = ["a", "b"], invalid = "error" | "skip" | "impute=V"
//! ```

use std::io::Write;
use std::ops::Range;

use anyhow::Result;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};
use serde::{Deserialize, Serialize};
use toml::{Spanned, Value};

use crate::clamp::{Categories, Finite, Keys};
use crate::cli::{Confidence, Filter, Format, InvalidPolicy, Neighbours, RunArgs};
use crate::column::{self, BadCell, Fold, Row};
use crate::epsilon::{decimal, parse_decimal, Epsilon};
use crate::error::{bad_input, InputError};
use crate::input::Input;
use crate::plan::{self, ColumnRef, CsvOptions, FilterSpec, GroupSpec, Plan, QueryArgs, Source};
use crate::query::group::Routed;
use crate::query::QueryFold;
use crate::release::{Number, Published, Release};
use crate::{charge_ledger, ledger, mechanism, new_fold, publish, routing, warn_if_large};

/// Reads the workload, plans every query, reads the data once, releases everything, charges the
/// total once, then prints.
pub fn run(args: &RunArgs, out: &mut dyn Write) -> Result<()> {
    let workload = Workload::load(args)?;
    warn_if_large(&workload.total);
    let ledger = plan::ledger_spec(&args.ledger)?;
    let mut rng = mechanism::system_rng()?;
    let fingerprint = ledger.as_ref().is_some_and(|l| l.dataset.is_none());
    let first = &workload.queries[0].plan;
    let threads = args.input.thread_count();
    let mut input = Input::open(&first.source, &first.csv, fingerprint, threads)?;
    let mut fold = WorkloadFold(Vec::with_capacity(workload.queries.len()));
    for query in &workload.queries {
        let at = |e: anyhow::Error| workload.error(query.line, &format!("query '{}': {e:#}", query.name));
        let inner = new_fold(&query.plan, &input).map_err(at)?;
        let (filters, by) = routing(&query.plan, &input).map_err(at)?;
        fold.0.push(Routed::new(inner, filters, by));
    }
    column::scan(&mut input, &[], &mut fold)?;
    let mut releases = Vec::with_capacity(workload.queries.len());
    for (query, routed) in workload.queries.iter().zip(fold.0) {
        releases.push(publish(&query.plan, routed.groups, &mut rng)?);
    }
    if let Some(ledger) = &ledger {
        let charge = ledger::Charge {
            query: "workload".to_string(),
            column: Some(workload.queries.iter().map(|q| q.name.as_str()).collect::<Vec<_>>().join(",")),
            neighbours: workload.neighbours.name().to_string(),
            eps: workload.total.clone(),
        };
        charge_ledger(ledger, &input, &charge)?;
    }
    let bytes = render(&workload, &releases, args.format)?;
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// Every query's fold, fed the same rows in one pass.
#[derive(Clone, Debug)]
pub struct WorkloadFold(pub Vec<Routed<QueryFold>>);

impl Fold for WorkloadFold {
    #[inline]
    fn row(&mut self, record: &Row) -> Result<(), BadCell> {
        for fold in &mut self.0 {
            fold.row(record)?;
        }
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            mine.merge(theirs);
        }
    }
    fn widest_column(&self) -> Option<usize> {
        self.0.iter().filter_map(Fold::widest_column).max()
    }
}

/// A validated workload: the total, the unit and each query's plan at its share.
#[derive(Debug)]
pub struct Workload {
    path: String,
    pub total: Epsilon,
    pub neighbours: Neighbours,
    pub queries: Vec<WorkloadQuery>,
}

#[derive(Debug)]
pub struct WorkloadQuery {
    pub name: String,
    /// Line of the query's `name` (messages point here).
    pub line: usize,
    pub plan: Plan,
}

/// The file as written, with spans for messages.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    epsilon: Option<Spanned<Value>>,
    neighbours: Option<Spanned<String>>,
    #[serde(default)]
    query: Vec<Spanned<RawQuery>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuery {
    name: Option<Spanned<String>>,
    kind: Option<Spanned<String>>,
    column: Option<Spanned<Value>>,
    lower: Option<Spanned<Value>>,
    upper: Option<Spanned<Value>>,
    share: Option<Spanned<Value>>,
    bins: Option<Spanned<i64>>,
    categories: Option<Spanned<Value>>,
    #[serde(rename = "where")]
    filters: Option<Spanned<Vec<String>>>,
    by: Option<Spanned<Value>>,
    keys: Option<Spanned<Value>>,
    invalid: Option<Spanned<String>>,
}

const KINDS: &str = "count, sum, mean, variance, histogram";

impl Workload {
    /// Reads and validates the workload file named by `args`, before any data is read.
    pub fn load(args: &RunArgs) -> Result<Workload> {
        let path = args.workload.display().to_string();
        let text = std::fs::read_to_string(&args.workload)
            .map_err(|e| bad_input(format!("cannot read workload {path}: {e}")))?;
        let (source, csv) = (args.input.source(), args.input.csv());
        Workload::parse(&path, &text, &source, &csv, args.confidence, args.format).map_err(Into::into)
    }

    /// Parses and validates a workload's text. Every error names the file and the line.
    pub fn parse(
        path: &str,
        text: &str,
        source: &Source,
        csv: &CsvOptions,
        confidence: Confidence,
        format: Format,
    ) -> Result<Workload, InputError> {
        let file = SourceText { path, text };
        let raw: RawWorkload = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| file.line(s.start));
            file.error_at(line, e.message().trim())
        })?;
        let Some(total) = &raw.epsilon else {
            return Err(file.error_at(None, "the workload needs a total: add a line like epsilon = \"1\""));
        };
        let total_line = file.line(total.span().start);
        let total = file
            .exact(total)
            .and_then(Epsilon::from_rational)
            .map_err(|e| file.error_at(Some(total_line), &format!("epsilon: {e}")))?;
        let neighbours = match &raw.neighbours {
            None => Neighbours::AddRemove,
            Some(n) => match n.get_ref().as_str() {
                "add-remove" => Neighbours::AddRemove,
                "replace" => Neighbours::Replace,
                other => {
                    return Err(file.error(
                        n.span(),
                        &format!(
                            "neighbours '{other}' is not a privacy unit: use \"add-remove\" or \"replace\""
                        ),
                    ))
                }
            },
        };
        if raw.query.is_empty() {
            return Err(file.error_at(None, "the workload has no queries: add [[query]] tables"));
        }

        // Names, kinds and shares first: the shares decide every query's ε.
        let mut names: Vec<(String, usize)> = vec![];
        let mut shares: Vec<Option<(BigRational, usize)>> = vec![];
        for q in &raw.query {
            let table_line = file.line(q.span().start);
            let query = q.get_ref();
            let Some(name) = &query.name else {
                return Err(file.error_at(Some(table_line), "this query has no name: add name = \"...\""));
            };
            let line = file.line(name.span().start);
            let name_text = name.get_ref().trim();
            if name_text.is_empty() {
                return Err(file.error_at(Some(line), "a query name must not be empty"));
            }
            if let Some((_, first)) = names.iter().find(|(n, _)| n == name_text) {
                return Err(file.error_at(
                    Some(line),
                    &format!("query name '{name_text}' is used twice (first on line {first})"),
                ));
            }
            names.push((name_text.to_string(), line));
            shares.push(match &query.share {
                None => None,
                Some(share) => {
                    let share_line = file.line(share.span().start);
                    let r = file
                        .exact(share)
                        .and_then(|r| Epsilon::from_rational(r.clone()).map(|_| r))
                        .map_err(|e| file.error_at(Some(share_line), &format!("share: {e}")))?;
                    Some((r, share_line))
                }
            });
        }
        let eps = split_shares(&total, &shares).map_err(|e| file.error_at(Some(total_line), &e))?;

        let mut queries = Vec::with_capacity(raw.query.len());
        for ((q, (name, line)), eps) in raw.query.iter().zip(names).zip(eps) {
            let plan = file
                .query_plan(q.get_ref(), line, eps, neighbours, source, csv, confidence, format)
                .map_err(|e| file.error_at(Some(e.0), &format!("query '{name}': {}", e.1)))?;
            queries.push(WorkloadQuery { name, line, plan });
        }
        Ok(Workload { path: path.to_string(), total, neighbours, queries })
    }

    fn error(&self, line: usize, message: &str) -> anyhow::Error {
        bad_input(format!("{} line {line}: {message}", self.path))
    }
}

/// Every query's ε: its share, or an even part of what the shares leave. With a share on every
/// query, they must add up to the total exactly.
fn split_shares(total: &Epsilon, shares: &[Option<(BigRational, usize)>]) -> Result<Vec<Epsilon>, String> {
    let given: BigRational = shares.iter().flatten().fold(BigRational::zero(), |acc, (r, _)| acc + r);
    let lines: Vec<String> = shares.iter().flatten().map(|(_, l)| l.to_string()).collect();
    let missing = shares.iter().filter(|s| s.is_none()).count();
    let total_r = total.as_rational();
    let rest = total_r - &given;
    if missing == 0 && rest != BigRational::zero() {
        return Err(format!(
            "the shares ({}) add up to {}, not to the total epsilon {}; shares are exact, \
             so write them to add up exactly (or leave some out to split the rest evenly)",
            lines_text(&lines),
            decimal(&given),
            total
        ));
    }
    if missing > 0 && !rest.is_positive() {
        return Err(format!(
            "the shares ({}) add up to {}, which leaves nothing of the total epsilon {} for \
             the {missing} queries without a share",
            lines_text(&lines),
            decimal(&given),
            total
        ));
    }
    let even = if missing > 0 {
        Some(
            Epsilon::from_rational(rest / BigInt::from(missing))
                .map_err(|e| format!("the even split: {e}"))?,
        )
    } else {
        None
    };
    shares
        .iter()
        .map(|s| match (s, &even) {
            (Some((r, _)), _) => Epsilon::from_rational(r.clone()),
            (None, Some(e)) => Ok(e.clone()),
            (None, None) => unreachable!("even is set whenever a share is missing"),
        })
        .collect::<Result<_, _>>()
}

fn lines_text(lines: &[String]) -> String {
    match lines {
        [one] => format!("line {one}"),
        _ => format!("lines {}", lines.join(", ")),
    }
}

/// The workload text, for line numbers and exact numbers.
struct SourceText<'a> {
    path: &'a str,
    text: &'a str,
}

impl SourceText<'_> {
    /// 1-based line of a byte offset.
    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
    }

    fn error_at(&self, line: Option<usize>, message: &str) -> InputError {
        match line {
            Some(line) => InputError(format!("{} line {line}: {message}", self.path)),
            None => InputError(format!("{}: {message}", self.path)),
        }
    }

    fn error(&self, span: Range<usize>, message: &str) -> InputError {
        self.error_at(Some(self.line(span.start)), message)
    }

    /// The text of a number as written (so 0.1 stays exactly 1/10), or of a string.
    fn number_text(&self, value: &Spanned<Value>) -> Result<String, String> {
        match value.get_ref() {
            Value::String(s) => Ok(s.clone()),
            Value::Integer(_) | Value::Float(_) => {
                let span = value.span();
                let raw = self.text.get(span).ok_or("cannot read the number")?;
                Ok(raw.replace('_', ""))
            }
            other => Err(format!("expected a number, found {}", other.type_str())),
        }
    }

    /// An exact decimal: a TOML number as written, or a string like "0.1".
    fn exact(&self, value: &Spanned<Value>) -> Result<BigRational, String> {
        let text = self.number_text(value)?;
        parse_decimal(&text).ok_or_else(|| format!("'{text}' is not a decimal number (write it like 0.25)"))
    }

    fn finite(&self, value: &Spanned<Value>, key: &str) -> Result<Finite, (usize, String)> {
        let line = self.line(value.span().start);
        let text = self.number_text(value).map_err(|e| (line, format!("{key}: {e}")))?;
        text.parse::<Finite>().map_err(|e| (line, format!("{key}: {e}")))
    }

    /// A column: a header name, or a 1-based number with --no-header.
    fn column(
        &self,
        value: &Spanned<Value>,
        key: &str,
        has_header: bool,
    ) -> Result<ColumnRef, (usize, String)> {
        let line = self.line(value.span().start);
        let text = match value.get_ref() {
            Value::String(s) => s.clone(),
            Value::Integer(i) => i.to_string(),
            other => {
                return Err((line, format!("{key}: expected a column name, found {}", other.type_str())))
            }
        };
        ColumnRef::parse(&text, has_header, key).map_err(|e| (line, e.0))
    }

    /// A list of names: an array of strings, or one comma-separated string.
    fn list(&self, value: &Spanned<Value>, key: &str) -> Result<String, (usize, String)> {
        let line = self.line(value.span().start);
        match value.get_ref() {
            Value::String(s) => Ok(s.clone()),
            Value::Array(items) => {
                let mut names = vec![];
                for item in items {
                    match item.as_str() {
                        Some(s) if !s.contains(',') => names.push(s.to_string()),
                        Some(s) => return Err((line, format!("{key}: '{s}' contains a comma"))),
                        None => return Err((line, format!("{key}: every item must be a string"))),
                    }
                }
                Ok(names.join(","))
            }
            other => Err((line, format!("{key}: expected a list of strings, found {}", other.type_str()))),
        }
    }

    /// A key that the kind does not use is a mistake (a `bins` on a sum, bounds on a
    /// categorical histogram): refused with its line rather than ignored.
    fn refuse_keys_of_other_kinds(&self, q: &RawQuery, kind: &str) -> Result<(), (usize, String)> {
        let line = |span: Range<usize>| self.line(span.start);
        let present: [(&str, Option<usize>); 6] = [
            ("column", q.column.as_ref().map(|v| line(v.span()))),
            ("lower", q.lower.as_ref().map(|v| line(v.span()))),
            ("upper", q.upper.as_ref().map(|v| line(v.span()))),
            ("bins", q.bins.as_ref().map(|v| line(v.span()))),
            ("categories", q.categories.as_ref().map(|v| line(v.span()))),
            ("invalid", q.invalid.as_ref().map(|v| line(v.span()))),
        ];
        let allowed: &[&str] = match kind {
            "count" => &[],
            "sum" | "mean" | "variance" => &["column", "lower", "upper", "invalid"],
            "histogram" if q.categories.is_some() => &["column", "categories"],
            "histogram" => &["column", "lower", "upper", "bins", "invalid"],
            _ => return Ok(()),
        };
        for (key, at) in present {
            if let Some(at) = at {
                if !allowed.contains(&key) {
                    let why = if kind == "histogram" { " with categories" } else { "" };
                    return Err((at, format!("{kind}{why} does not take {key}")));
                }
            }
        }
        Ok(())
    }

    /// One query's plan at ε, checked like the same command line. Errors carry their line.
    #[allow(clippy::too_many_arguments)]
    fn query_plan(
        &self,
        q: &RawQuery,
        name_line: usize,
        eps: Epsilon,
        neighbours: Neighbours,
        source: &Source,
        csv: &CsvOptions,
        confidence: Confidence,
        format: Format,
    ) -> Result<Plan, (usize, String)> {
        let Some(kind) = &q.kind else {
            return Err((name_line, format!("no kind: add kind = \"...\" (one of {KINDS})")));
        };
        let kind_line = self.line(kind.span().start);
        let kind = kind.get_ref().as_str();
        let has_header = csv.has_header;
        self.refuse_keys_of_other_kinds(q, kind)?;
        let invalid = match &q.invalid {
            None => InvalidPolicy::Error,
            Some(v) => {
                v.get_ref().parse().map_err(|e| (self.line(v.span().start), format!("invalid: {e}")))?
            }
        };
        let column_name = |needed_by: &str| -> Result<String, (usize, String)> {
            match &q.column {
                Some(c) => Ok(self.column(c, "column", has_header)?.label()),
                None => Err((name_line, format!("{needed_by} needs a column: add column = \"...\""))),
            }
        };
        let bound = |value: &Option<Spanned<Value>>, key: &str| -> Result<Option<Finite>, (usize, String)> {
            value.as_ref().map(|v| self.finite(v, key)).transpose()
        };
        let (lower, upper) = (bound(&q.lower, "lower")?, bound(&q.upper, "upper")?);
        let needs_bounds = |kind: &str| -> Result<(), (usize, String)> {
            match (lower, upper) {
                (Some(_), Some(_)) => Ok(()),
                _ => Err((
                    name_line,
                    format!(
                        "{kind} needs clamping bounds: add lower = L and upper = U (public; never \
                         taken from the data)"
                    ),
                )),
            }
        };
        let args = match kind {
            "count" => QueryArgs::Count,
            "sum" | "mean" | "variance" => {
                let column = column_name(kind)?;
                needs_bounds(kind)?;
                match kind {
                    "sum" => QueryArgs::Sum(column, lower, upper, invalid),
                    "mean" => QueryArgs::Mean(column, lower, upper, invalid),
                    _ => QueryArgs::Variance(column, lower, upper, invalid),
                }
            }
            "histogram" => {
                let column = column_name(kind)?;
                let categories = match &q.categories {
                    None => None,
                    Some(c) => {
                        let line = self.line(c.span().start);
                        let list = self.list(c, "categories")?;
                        Some(list.parse::<Categories>().map_err(|e| (line, format!("categories: {e}")))?)
                    }
                };
                let bins = match &q.bins {
                    None => None,
                    Some(b) => Some(usize::try_from(*b.get_ref()).map_err(|_| {
                        (self.line(b.span().start), "bins must be a positive whole number".to_string())
                    })?),
                };
                match (&categories, bins) {
                    (Some(_), Some(_)) => {
                        return Err((name_line, "give either bins or categories, not both".to_string()))
                    }
                    (None, None) => return Err((
                        name_line,
                        "histogram needs public bins: categories = [...] or bins = K with lower and upper"
                            .to_string(),
                    )),
                    (None, Some(_)) => needs_bounds(kind)?,
                    (Some(_), None) => {}
                }
                QueryArgs::Histogram(column, bins, categories, lower, upper, invalid)
            }
            other => return Err((kind_line, format!("unknown kind '{other}': use one of {KINDS}"))),
        };
        let filters = match &q.filters {
            None => vec![],
            Some(list) => {
                let line = self.line(list.span().start);
                list.get_ref()
                    .iter()
                    .map(|f| {
                        let f: Filter = f.parse().map_err(|e| (line, format!("where: {e}")))?;
                        let column =
                            ColumnRef::parse(&f.column, has_header, "where").map_err(|e| (line, e.0))?;
                        Ok(FilterSpec { column, value: f.value })
                    })
                    .collect::<Result<Vec<_>, (usize, String)>>()?
            }
        };
        let group = match (&q.by, &q.keys) {
            (None, None) => None,
            (Some(by), Some(keys)) => {
                let line = self.line(keys.span().start);
                let keys: Keys =
                    self.list(keys, "keys")?.parse().map_err(|e| (line, format!("keys: {e}")))?;
                Some(GroupSpec { column: self.column(by, "by", has_header)?, keys })
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err((
                    name_line,
                    "by and keys go together: by = \"COL\", keys = [\"k1\", \"k2\"]".into(),
                ))
            }
        };
        let query =
            args.validate(&eps, neighbours, has_header, group.is_some()).map_err(|e| (name_line, e.0))?;
        plan::check_combination(&query, neighbours, !filters.is_empty(), group.is_some())
            .map_err(|e| (name_line, e))?;
        Ok(Plan {
            source: source.clone(),
            csv: csv.clone(),
            filters,
            group,
            query,
            eps,
            neighbours,
            format,
            confidence,
            ledger: None,
            plot: None,
            threads: 1,
        })
    }
}

/// One JSON line per query: its name and its release.
#[derive(Serialize)]
struct Line<'a> {
    name: &'a str,
    /// The workload's total ε, exactly; this query's share is `epsilon_exact`.
    total_epsilon_exact: String,
    #[serde(flatten)]
    release: &'a Published,
}

/// Text: an aligned table, one row per value (per group and bin where there are several), and
/// a last row with the total. JSON: one line per query.
fn render(workload: &Workload, releases: &[Published], format: Format) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match format {
        Format::Json => {
            for (query, release) in workload.queries.iter().zip(releases) {
                let line =
                    Line { name: &query.name, total_epsilon_exact: workload.total.exact_string(), release };
                serde_json::to_writer(&mut out, &line)?;
                out.push(b'\n');
            }
        }
        Format::Chart => {
            return Err(bad_input(
                "--format chart draws one histogram; dpstat run prints --format text or json",
            ))
        }
        Format::Text => {
            let confidence = workload.queries[0].plan.confidence.level();
            let mut rows: Vec<[String; 9]> = vec![[
                "name".into(),
                "query".into(),
                "column".into(),
                "group".into(),
                "bin".into(),
                "value".into(),
                "epsilon".into(),
                "sensitivity".into(),
                format!("error({}%)", (confidence * 1e6).round() / 1e4),
            ]];
            for (query, release) in workload.queries.iter().zip(releases) {
                let eps = exact_decimal(&query.plan.eps);
                match release {
                    Published::One(r) => table_rows(&mut rows, &query.name, "-", r, &eps),
                    Published::Grouped(g) => {
                        for group in &g.groups {
                            table_rows(&mut rows, &query.name, &group.key, &group.release, &eps);
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
                exact_decimal(&workload.total),
                dash(),
                dash(),
            ]);
            let widths: Vec<usize> =
                (0..9).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
            for row in &rows {
                let cells: Vec<String> =
                    row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}", w = *w)).collect();
                out.extend_from_slice(cells.join("  ").trim_end().as_bytes());
                out.push(b'\n');
            }
        }
    }
    Ok(out)
}

fn table_rows(rows: &mut Vec<[String; 9]>, name: &str, group: &str, r: &Release, eps: &str) {
    let sensitivity = match r.sensitivity {
        Some(s) => format_float(s),
        None => r
            .parts
            .iter()
            .map(|p| format!("{}={}", p.name, format_float(p.sensitivity)))
            .collect::<Vec<_>>()
            .join(" "),
    };
    let error = format_float(r.accuracy.error_bound);
    let column = r.column.clone().unwrap_or_else(|| "-".into());
    let row = |bin: String, value: String| -> [String; 9] {
        [
            name.into(),
            r.query.into(),
            column.clone(),
            group.into(),
            bin,
            value,
            eps.into(),
            sensitivity.clone(),
            error.clone(),
        ]
    };
    if let Some(value) = r.value {
        rows.push(row("-".into(), crate::output::format_number(value)));
    }
    for bin in r.bins.iter().flatten() {
        rows.push(row(bin.bin.clone(), bin.count.to_string()));
    }
}

fn format_float(x: f64) -> String {
    crate::output::format_number(Number::Real(x))
}

/// ε for people: the exact decimal, or the fraction when it does not terminate.
fn exact_decimal(eps: &Epsilon) -> String {
    let d = decimal(eps.as_rational());
    if d.starts_with('~') {
        let r = eps.as_rational();
        format!("{}/{}", r.numer(), r.denom())
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use csv::ByteRecord;

    fn parse(text: &str) -> Result<Workload, InputError> {
        let csv = CsvOptions { delimiter: b',', has_header: true };
        Workload::parse("w.toml", text, &Source::Stdin, &csv, "0.95".parse().unwrap(), Format::Text)
    }

    fn shares(w: &Workload) -> Vec<String> {
        w.queries.iter().map(|q| q.plan.eps.exact_string()).collect()
    }

    #[test]
    fn numbers_are_read_as_written() {
        let w = parse("epsilon = 1_0e-1\n[[query]]\nname = \"a\"\nkind = \"count\"\nshare = 0.1\n[[query]]\nname = \"b\"\nkind = \"count\"\n")
            .unwrap();
        assert_eq!(w.total.exact_string(), "1/1");
        assert_eq!(shares(&w), ["1/10", "9/10"]);
        let w = parse("epsilon = \"0.7\"\n[[query]]\nname = \"a\"\nkind = \"count\"\n").unwrap();
        assert_eq!(shares(&w), ["7/10"]);
    }

    #[test]
    fn missing_shares_split_the_rest_evenly() {
        let text = "epsilon = 1\n[[query]]\nname = \"a\"\nkind = \"count\"\nshare = \"0.5\"\n\
                    [[query]]\nname = \"b\"\nkind = \"count\"\n[[query]]\nname = \"c\"\nkind = \"count\"\n";
        assert_eq!(shares(&parse(text).unwrap()), ["1/2", "1/4", "1/4"]);
    }

    /// Splitting the rows between two folds and merging gives exactly the one-fold result.
    #[test]
    fn workload_fold_merges_exactly() {
        use crate::clamp::{Bounds, Finite};
        use crate::column::NumberCell;
        use crate::query::count::CountFold;
        use crate::query::variance::{VarianceFold, VarianceSpec};
        let bounds = Bounds::new(Finite::from_f64(0.0).unwrap(), Finite::from_f64(10.0).unwrap()).unwrap();
        let spec = VarianceSpec::new(bounds, Neighbours::AddRemove, &"1".parse().unwrap()).unwrap();
        let cell = NumberCell { index: 1, invalid: InvalidPolicy::Skip };
        let empty = WorkloadFold(vec![
            Routed::new(QueryFold::Count(CountFold::default()), vec![(0, b"a".to_vec())], None),
            Routed::new(QueryFold::Variance(VarianceFold::new(spec, cell)), vec![], None),
        ]);
        let rows: Vec<ByteRecord> = (0..40)
            .map(|i| {
                ByteRecord::from(vec![if i % 3 == 0 { "a" } else { "b" }, &format!("{}", i as f64 * 0.37)])
            })
            .collect();
        let mut whole = empty.clone();
        let (mut left, mut right) = (empty.clone(), empty);
        for (i, r) in rows.iter().enumerate() {
            whole.row(&crate::column::Row::record(r)).unwrap();
            if i < 17 {
                left.row(&crate::column::Row::record(r)).unwrap()
            } else {
                right.row(&crate::column::Row::record(r)).unwrap()
            }
        }
        left.merge(right);
        let summary = |w: &WorkloadFold| -> Vec<String> {
            w.0.iter()
                .flat_map(|r| &r.groups)
                .map(|f| match f {
                    QueryFold::Count(c) => c.rows.to_string(),
                    QueryFold::Variance(v) => format!("{:?}", v.aggregate()),
                    _ => unreachable!(),
                })
                .collect()
        };
        assert_eq!(summary(&left), summary(&whole));
        assert_eq!(summary(&whole)[0], "14");
        assert_eq!(whole.widest_column(), Some(1));
    }

    #[test]
    fn lines_are_one_based_from_byte_offsets() {
        let file = SourceText { path: "w", text: "a\nbb\n\nc" };
        assert_eq!([file.line(0), file.line(2), file.line(5), file.line(6), file.line(99)], [1, 2, 3, 4, 4]);
    }
}
