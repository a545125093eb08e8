//! `dpstat describe --cols income:0:200000,age:0:120 --q 0.5,0.9 --eps 1 FILE`: a private
//! summary of several columns in one pass, under one ε, charged once.
//!
//! It is a workload built from flags and run by the workload's own machinery
//! ([`cmd::run::release_all`](crate::cmd::run::release_all)): one scan feeds every fold, the
//! shares are exact, the accounting must add up to `--eps` exactly, and the ledger is charged
//! once. ε is split between the columns evenly (or as `--shares` says, exact decimals that add
//! up to `--eps`); each column's share is split in two exact halves:
//!
//! - the **mean** (the same release as `dpstat mean`: under add-remove a noisy shifted sum and a
//!   noisy count at a quarter of the column's ε each; under replace the sum over the public n,
//!   which is the count);
//! - the **quantiles** (the same release as `dpstat quantile`: the levels split their half
//!   evenly).
//!
//! Under add-remove with `--invalid error` or `impute=V` every mean is over the same rows, so
//! the counts are one number: a `count` query, first, draws it once at the sum of the means'
//! count shares, and each mean divides by that draw instead of its own (DESIGN §6). With
//! `--invalid skip` the rows differ by column and each mean keeps its own count.
//!
//! By sequential composition the whole is ε-DP for the privacy unit. A column given as
//! `NAME:L:U` has public bounds [L, U] (clamping for the mean, candidates for the quantiles); a
//! bare `NAME` spends a tenth of its mean's ε finding the mean's bounds privately, and its
//! quantiles use the public bounds-free candidates, as the single queries do.
//!
//! With `--privacy-id COL --max-rows-per-id K` it is a person-level workload (`cmd::run`):
//! each person's rows are bounded once, to K, and the whole summary is made as above at ε/K on
//! the bounded rows (the shares, halves and shared count all divided alike), then stated per
//! person, so every query spends its part of `--eps` and the parts add up to it exactly.

use std::io::Write;
use std::str::FromStr;

use anyhow::Result;
use num_bigint::BigInt;
use num_rational::BigRational;

use crate::cmd::release::{filter_specs, note_line, InputFlags, Job, PersonFlags};
use crate::cmd::run::{print_query_notes, release_all, Batch};
use crate::cmd::workload::{person_factor, workload_person, Workload, WorkloadQuery};
use crate::data::cell::InvalidPolicy;
use crate::data::filter::{Filter, FilterSpec};
use crate::error::Error;
use crate::numeric::bounds::Finite;
use crate::numeric::exact::decimal;
use crate::numeric::list;
use crate::privacy::accuracy::Confidence;
use crate::privacy::contribution::{Factor, Unit};
use crate::privacy::currency::Spend;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::laplace::Calibration;
use crate::privacy::ledger::{LedgerFlags, LedgerSpec};
use crate::privacy::noise::Mechanism;
use crate::privacy::rng;
use crate::privacy::unit::Neighbours;
use crate::query::count::{self, Count, SharedCount};
use crate::query::options::{Level, Options, Setup};
use crate::query::statistic::Statistic;
use crate::query::AnyStatistic;
use crate::report::describe::{self, Described};
use crate::report::release::{Number, Published, Release};
use crate::report::table;
use crate::report::text::{self, Format, Style};

/// A column of `--cols`: `NAME` or `NAME:LOWER:UPPER`.
#[derive(Clone, Debug, PartialEq)]
pub struct DescribeColumn {
    pub name: String,
    pub bounds: Option<(Finite, Finite)>,
}

impl FromStr for DescribeColumn {
    type Err = String;

    /// The last two `:`-separated pieces are the bounds when both are numbers; otherwise the
    /// whole text is the column's name (so a name may hold a colon), unless it ends in `:N`,
    /// which is taken for a bound given alone.
    fn from_str(s: &str) -> Result<DescribeColumn, String> {
        let text = s.trim();
        let mut pieces = text.rsplitn(3, ':');
        let (upper, lower, name) = (pieces.next(), pieces.next(), pieces.next());
        let bound_like = format!(
            "'{s}': bounds are written NAME:LOWER:UPPER (both, or neither to find the mean's privately)"
        );
        if let (Some(u), Some(l), Some(name)) = (upper, lower, name) {
            match (l.trim().parse::<Finite>(), u.trim().parse::<Finite>()) {
                (Ok(l), Ok(u)) => {
                    let name = name.trim();
                    if name.is_empty() {
                        return Err(format!("'{s}' has bounds but no column: write NAME:LOWER:UPPER"));
                    }
                    return Ok(DescribeColumn { name: name.to_string(), bounds: Some((l, u)) });
                }
                (Ok(_), Err(_)) => return Err(bound_like),
                _ => {}
            }
        }
        if text.is_empty() {
            return Err("a column is empty: list them like income:0:200000,age:0:120".to_string());
        }
        if text.rsplit_once(':').is_some_and(|(_, last)| last.trim().parse::<Finite>().is_ok()) {
            return Err(bound_like);
        }
        Ok(DescribeColumn { name: text.to_string(), bounds: None })
    }
}

/// `dpstat describe` as the command line asks for it.
#[derive(Clone, Debug)]
pub struct Request {
    pub columns: Vec<DescribeColumn>,
    pub levels: Vec<Level>,
    /// Each column's ε, in the order of `columns`; None for an even split.
    pub shares: Option<Vec<Epsilon>>,
    pub resolution: Option<usize>,
    pub invalid: InvalidPolicy,
    pub eps: Epsilon,
    pub neighbours: Neighbours,
    pub filters: Vec<Filter>,
    /// `--privacy-id` and `--max-rows-per-id`.
    pub person: Option<PersonFlags>,
    pub format: Format,
    pub confidence: Confidence,
    /// How the text table rounds (`--digits`, `--full-precision`); JSON is always in full.
    pub style: Style,
    pub ledger: LedgerFlags,
    pub input: InputFlags,
}

impl Request {
    /// Every column's mean and quantiles as the queries of a workload, each validated as the
    /// same single query would be at its share, before any data is read.
    pub fn workload(&self) -> Result<Workload, Error> {
        self.check_format_and_columns()?;
        let has_header = self.input.csv.has_header;
        let person = match &self.person {
            Some(flags) => Some(workload_person(flags, has_header, self.neighbours, "describe")?),
            None => None,
        };
        let factor = person.as_ref().map_or(Factor::ONE, person_factor);
        // Everything below is made at row level on the bounded rows: each column's share
        // divided by what one person moves it by (describe is Laplace only: ε by the factor).
        let shares: Vec<Epsilon> = self.shares()?.iter().map(|s| s.split(factor.pure)).collect();
        let filters = filter_specs(&self.filters, has_header, "--where")?;
        let mut queries = Vec::with_capacity(2 * self.columns.len() + 1);
        let shared = self.shares_count().then(SharedCount::default);
        // The shared count's ε: the share each column's mean would have given a count of its own.
        let mut count_eps = BigRational::from_integer(BigInt::from(0));
        for (column, share) in self.columns.iter().zip(shares) {
            queries.extend(self.column_queries(column, &share, &filters, shared.as_ref(), &mut count_eps)?);
        }
        if let Some(shared) = shared {
            let eps = Epsilon::from_part(count_eps)
                .ok_or_else(|| Error::internal("the shared count's epsilon is 0"))?;
            // First: a workload measures its queries in order, and the means read this draw.
            let count =
                self.job(&filters, AnyStatistic::Count(Count::shared(shared)), Mechanism::Laplace(eps));
            queries.insert(
                0,
                WorkloadQuery { name: "count".into(), origin: "the shared count".into(), job: count },
            );
        }
        if let Some(person) = &person {
            // What each query spends is its row-level part times the factor: they add up to
            // --eps exactly, as the row-level parts add up to --eps divided by the factor.
            for query in &mut queries {
                query.job.spend = times(&query.job.spend, factor)?;
                query.job.person = Some(person.clone());
            }
        }
        let mechanism = Mechanism::Laplace(self.eps.clone());
        Ok(Workload {
            mechanism,
            epsilon: Some(self.eps.clone()),
            neighbours: self.neighbours,
            person,
            queries,
            decimal: self.input.csv.decimal,
            discovery: None,
            group_bounds: None,
        })
    }

    /// What describe refuses before it makes any query: a chart (it prints no single
    /// histogram) and a column listed twice.
    fn check_format_and_columns(&self) -> Result<(), Error> {
        if self.format == Format::Chart {
            return Err(Error::usage(
                "--format chart draws one histogram; dpstat describe prints text, csv or json",
            ));
        }
        for (i, c) in self.columns.iter().enumerate() {
            if self.columns[..i].iter().any(|d| d.name == c.name) {
                return Err(Error::usage(format!("--cols lists '{}' twice", c.name)));
            }
        }
        Ok(())
    }

    /// A column's two queries, its mean and then its quantiles, at half its share each. With a
    /// shared count, the mean gives the share of its own count to the shared one, adding it to
    /// `count_eps`.
    fn column_queries(
        &self,
        column: &DescribeColumn,
        share: &Epsilon,
        filters: &[FilterSpec],
        shared: Option<&SharedCount>,
        count_eps: &mut BigRational,
    ) -> Result<Vec<WorkloadQuery>, Error> {
        // describe is pure ε-DP (its quantiles have no Gaussian form).
        let half = Mechanism::Laplace(share.split(2));
        let setup = Setup {
            mechanism: &half,
            neighbours: self.neighbours,
            has_header: self.input.csv.has_header,
            groups: 1,
            filtered: !filters.is_empty(),
            private_bounds: true,
            ledger: self.ledger.path.is_some(),
        };
        let options = Options {
            column: Some(column.name.clone()),
            lower: column.bounds.map(|b| b.0),
            upper: column.bounds.map(|b| b.1),
            invalid: self.invalid,
            ..Options::default()
        };
        let quantile_options =
            Options { levels: self.levels.clone(), resolution: self.resolution, ..options.clone() };
        let mut queries = Vec::with_capacity(2);
        for (kind, options) in [("mean", options), ("quantile", quantile_options)] {
            let origin = format!("--cols '{}'", column.name);
            let statistic = AnyStatistic::new(kind, options, &setup)
                .map_err(|e| Error::usage(format!("{origin}: {kind}: {}", e.message())))?;
            let mut job = self.job(filters, statistic, half.clone());
            if let (Some(shared), AnyStatistic::Mean(mean)) = (shared, &job.statistic) {
                // The mean keeps its shifted sum (and its bounds' share) and gives the share
                // of its own count to the shared one: its spend is that much less.
                let part = mean
                    .count_part(&half, self.neighbours)
                    .and_then(|m| m.epsilon().map(|e| e.as_rational().clone()))
                    .ok_or_else(|| Error::internal("an add-remove mean has a count part"))?;
                *count_eps += &part;
                let rest = Epsilon::from_part(share.split(2).as_rational() - part)
                    .ok_or_else(|| Error::internal("a mean's count part is its whole half"))?;
                job.spend = Mechanism::Laplace(rest).spend();
                job.statistic = AnyStatistic::Mean(mean.clone().sharing_count(shared.clone()));
            }
            queries.push(WorkloadQuery { name: format!("{}.{kind}", column.name), origin, job });
        }
        Ok(queries)
    }

    /// One query's job, made at row level: the request's input, filters and output, with no
    /// group, no person (set after, for a person-level workload) and no ledger (the workload is
    /// charged once).
    fn job(&self, filters: &[FilterSpec], statistic: AnyStatistic, mechanism: Mechanism) -> Job {
        Job {
            input: self.input.clone(),
            filter_labels: filters.iter().map(FilterSpec::label).collect(),
            filters: filters.to_vec(),
            group: None,
            statistic,
            discover_by: None,
            spend: mechanism.spend(),
            mechanism,
            person: None,
            neighbours: self.neighbours,
            format: self.format,
            confidence: self.confidence,
            ledger: None,
            plot: None,
            style: Style::default(),
        }
    }

    /// Whether the columns' means divide by one shared noisy count (DESIGN §6): under
    /// add-remove (replace has the public n instead), when every mean is over the same rows,
    /// the rows that pass `--where`. `--invalid error` stops the run at any invalid cell and
    /// `impute=V` keeps every row, so both are; `skip` drops a row from one column's mean
    /// only, so each column's count is its own.
    fn shares_count(&self) -> bool {
        self.neighbours == Neighbours::AddRemove && !matches!(self.invalid, InvalidPolicy::Skip)
    }

    /// Each column's ε: `--shares` (exact, adding up to `--eps` exactly) or an even split.
    fn shares(&self) -> Result<Vec<Epsilon>, Error> {
        let n = self.columns.len();
        let Some(shares) = &self.shares else {
            return Ok(vec![self.eps.split(n as u32); n]);
        };
        if shares.len() != n {
            return Err(Error::usage(format!(
                "--shares gives {} epsilons for {n} columns of --cols; give one per column, in order",
                shares.len()
            )));
        }
        let sum = shares.iter().fold(BigRational::from_integer(BigInt::from(0)), |a, s| a + s.as_rational());
        if &sum != self.eps.as_rational() {
            return Err(Error::usage(format!(
                "--shares add up to {}, not to --eps {}; shares are exact, so write them to add up exactly",
                decimal(&sum),
                self.eps
            )));
        }
        Ok(shares.clone())
    }
}

/// A row-level spend of describe (pure ε) as one person's: ε times the factor, exactly.
fn times(spend: &Spend, factor: Factor) -> Result<Spend, Error> {
    match spend {
        Spend::Pure(eps) => Ok(Spend::Pure(
            Epsilon::from_part(eps.as_rational() * BigInt::from(factor.pure))
                .ok_or_else(|| Error::internal("a spend of 0"))?,
        )),
        other => Err(Error::internal(format!("describe spent {other}, not a pure epsilon"))),
    }
}

/// Validates, reads the data once, releases every column, charges `--eps` once, then prints.
pub fn run(request: &Request, out: &mut dyn Write) -> Result<()> {
    let ledger = LedgerSpec::from_flags(&request.ledger)?;
    rng::refuse_with_ledger(ledger.is_some())?;
    let workload = request.workload()?;
    let names = list::join(&request.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>());
    let batch = Batch { workload: &workload, ledger_query: "describe", ledger_column: names };
    let (queries, guarantee) = release_all(&batch, &request.input, ledger.as_ref())?;
    let bytes = match request.format {
        Format::Text => describe::render_text(&summary(request, &queries)?, request.style),
        Format::Csv => {
            let described = summary(request, &queries)?;
            let bytes = describe::render_csv(&described, request.style)?;
            write_then_notes(bytes, request.format, &queries, out)?;
            if let Some(line) = describe::unit_line(&described) {
                note_line(&format!("unit: {line}"));
            }
            return Ok(());
        }
        _ => {
            let printed = table::Workload {
                total: workload.spend(),
                guarantee,
                confidence: request.confidence,
                queries,
            };
            return write_then_notes(
                table::render(&printed, request.format, request.style)?,
                request.format,
                &printed.queries,
                out,
            );
        }
    };
    write_then_notes(bytes, request.format, &queries, out)
}

/// Writes the output, then the releases' notes (privately found bounds) on stderr.
fn write_then_notes(
    bytes: Vec<u8>,
    format: Format,
    queries: &[table::Query],
    out: &mut dyn Write,
) -> Result<()> {
    out.write_all(&text::for_terminal(bytes, format))?;
    out.flush()?;
    print_query_notes(queries);
    Ok(())
}

/// The table's rows: each column's mean, count and quantiles, from the releases in the order
/// [`Request::workload`] made them (mean, then quantiles, per column).
fn summary(request: &Request, queries: &[table::Query]) -> Result<Described, Error> {
    let one = |q: &table::Query| match &q.release {
        Published::One(r) => Ok(r.clone()),
        Published::Grouped(_) => Err(Error::internal("describe makes no groups")),
    };
    let mut columns = Vec::with_capacity(request.columns.len());
    // The shared count, when there is one, comes first; each mean lists it as a part.
    let shared = match queries.first().map(|q| &q.release) {
        Some(Published::One(r)) if request.shares_count() => Some(r.clone()),
        _ => None,
    };
    let queries = if request.shares_count() { queries.get(1..).unwrap_or_default() } else { queries };
    for ((column, pair), eps) in request.columns.iter().zip(queries.chunks(2)).zip(request.shares()?) {
        let [mean, quantiles] = pair else {
            return Err(Error::internal("describe makes two queries a column"));
        };
        let mean = one(mean)?;
        let count = count_of(&mean, shared.as_ref(), request.confidence)?;
        columns.push(describe::Column {
            name: column.name.clone(),
            eps,
            count,
            mean,
            quantiles: one(quantiles)?,
        });
    }
    Ok(Described { total: request.eps.clone(), confidence: request.confidence, columns })
}

/// The column's count: the mean's noisy count part (add-remove; its own, or the shared one)
/// with the bound of its discrete Laplace noise at the confidence, or the public n (replace).
fn count_of(
    mean: &Release,
    shared: Option<&Release>,
    confidence: Confidence,
) -> Result<describe::Count, Error> {
    if let Some(n) = mean.noise.rows {
        return Ok(describe::Count::Public(n));
    }
    // A mean withheld for want of bounds (`run::measure_all`) drew no count of its own; the
    // shared count, when there is one, is still this column's count (the same rows).
    if mean.value.is_none() {
        return Ok(match shared.map(|r| (&r.value, r.noise.accuracy.error_bound)) {
            Some((Some(Number::Integer(v)), bound)) => describe::Count::Noisy { value: v.to_string(), bound },
            _ => describe::Count::Withheld,
        });
    }
    let part = mean
        .noise
        .parts
        .iter()
        .find(|p| p.name == "count" || p.name == "shared_count")
        .ok_or_else(|| Error::internal("an add-remove mean has a count part"))?;
    let (n, d) = part
        .epsilon_exact
        .as_deref()
        .and_then(|e| e.split_once('/'))
        .ok_or_else(|| Error::internal("a part's epsilon is n/d"))?;
    let parse = |t: &str| t.parse::<BigInt>().map_err(|e| Error::internal(e.to_string()));
    // Stated per person, the part's ε is the factor times the ε its noise was drawn at.
    let factor = match &mean.unit {
        Unit::Person { factor, .. } => *factor,
        Unit::Row => 1,
    };
    let eps = Epsilon::from_part(BigRational::new(parse(n)?, parse(d)? * BigInt::from(factor)))
        .ok_or_else(|| Error::internal("a part's epsilon is 0"))?;
    let bound = Calibration::of(&count::aggregate(0), &eps).error_bound(confidence.beta());
    let value = part.value_units.clone().ok_or_else(|| Error::internal("a drawn part has its value"))?;
    Ok(describe::Count::Noisy { value, bound })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_take_bounds_from_their_last_two_pieces() {
        let c: DescribeColumn = "income:0:200000".parse().unwrap();
        assert_eq!(
            (c.name.as_str(), c.bounds.map(|b| (b.0.get(), b.1.get()))),
            ("income", Some((0.0, 200000.0)))
        );
        let c: DescribeColumn = "temp:-40:1e2".parse().unwrap();
        assert_eq!(c.bounds.map(|b| (b.0.get(), b.1.get())), Some((-40.0, 100.0)));
        let c: DescribeColumn = "time:start".parse().unwrap();
        assert_eq!((c.name.as_str(), c.bounds), ("time:start", None));
        let c: DescribeColumn = "a:b:1:2".parse().unwrap();
        assert_eq!(c.name, "a:b");
        assert!("income:0".parse::<DescribeColumn>().unwrap_err().contains("NAME:LOWER:UPPER"));
        assert!("income:0:x".parse::<DescribeColumn>().is_err());
        assert!(":1:2".parse::<DescribeColumn>().is_err());
        assert!(" ".parse::<DescribeColumn>().is_err());
    }
}
