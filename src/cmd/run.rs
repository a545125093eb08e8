//! `dpstat run WORKLOAD.toml [FILE]`: several queries on one file in one streaming pass.
//!
//! The workload file sets the total ε and the privacy unit; every `[[query]]` has a name, a
//! kind, its column and bounds, and an optional `share` of ε. Shares are exact decimals and
//! must add up to the total exactly (exact rationals, [`crate::numeric::exact::parse_decimal`]); the
//! queries without a share split what is left evenly (all of it when none has one). The queries
//! run on the same data, so by sequential composition (Dwork & Roth 2014, Thm 3.16) the whole
//! release is ε_total-DP for the workload's privacy unit, and the ledger is charged ε_total once.
//! Each query is validated exactly as the same command line would be (same grids, sensitivities
//! and refusals), at its share: see `cmd::workload`.
//!
//! One scan: a [`WorkloadFold`] holds each query's fold (with its own filters and groups) and
//! feeds every row to all of them. Order of work as for one query: validate everything, read,
//! add all the noise, charge, and only then print.
//!
//! ```toml
//! epsilon = "1"              # total; a number or a string, read as an exact decimal
//! neighbours = "add-remove"  # or "replace"; default add-remove
//! # noise = "gaussian"       # discrete Gaussian, rho-zCDP: with delta = "1e-6", and epsilon
//! #                          # (rho derived) or rho = "0.02"; shares split rho in proportion
//!
//! [[query]]
//! name = "income_mean"
//! kind = "mean"              # count | sum | mean | variance | covariance | regress | histogram | quantile | median
//! column = "income"
//! lower = 0
//! upper = 200000
//! share = "0.25"             # optional
//! # covariance and regress: column = ["x", "y"], lower = [LX, LY], upper = [UX, UY]
//! # where = ["region=north"], by = "urban_rural", keys = ["1", "2"],
//! # bins = 8 or categories = ["a", "b"], invalid = "error" | "skip" | "impute=V",
//! # q = [0.5, 0.9] and resolution = 2001 (quantile; bounds optional for quantile and median)
//! ```

use std::io::Write;

use anyhow::Result;

use crate::cmd::release::{
    check_plot_path, context, empty_fold, publish, routing, warn, warn_if_large, write_plot, InputFlags,
    Meter, Outcome,
};
use crate::cmd::workload::Workload;
use crate::data::input::Input;
use crate::data::route::Routed;
use crate::data::row::{BadCell, Fold, Row};
use crate::data::scan;
use crate::error::{bad_input, Error};
use crate::privacy::accountant::Cost;
use crate::privacy::accuracy::Confidence;
use crate::privacy::ledger::{self, LedgerFlags, LedgerSpec};
use crate::privacy::rng;
use crate::query::AnyFold;
use crate::report::release::Guarantee;
use crate::report::text::{self, Format, Style};
use crate::report::{svg, table};

/// `dpstat run` as the command line asks for it.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub workload: std::path::PathBuf,
    pub format: Format,
    /// `--with-error` (the table always has its error column), `--round`.
    pub style: Style,
    pub confidence: Confidence,
    pub ledger: LedgerFlags,
    pub input: InputFlags,
    /// `--plot FILE.svg`: one panel per query.
    pub plot: Option<std::path::PathBuf>,
}

/// Reads the workload, validates every query, charges the total once (with a ledger), reads the
/// data once, releases everything, records the release, then prints.
pub fn run(request: &RunRequest, out: &mut dyn Write) -> Result<()> {
    if let Some(path) = &request.plot {
        check_plot_path(path)?;
    }
    let ledger = LedgerSpec::from_flags(&request.ledger)?;
    rng::refuse_with_ledger(ledger.is_some())?;
    let workload = Workload::load(
        &request.workload,
        &request.input,
        request.confidence,
        request.format,
        ledger.is_some(),
    )?;
    let names = workload.queries.iter().map(|q| q.name.as_str()).collect::<Vec<_>>().join(",");
    let batch = Batch { workload: &workload, ledger_query: "workload", ledger_column: names };
    let (queries, guarantee) = release_all(&batch, &request.input, ledger.as_ref())?;
    let printed =
        table::Workload { total: workload.spend(), guarantee, confidence: request.confidence, queries };
    // Drawn from the releases alone (post-processing); written only after the output is rendered.
    let plot = match &request.plot {
        Some(path) => Some((path, svg::render(&table::chart(&printed, request.style))?)),
        None => None,
    };
    let bytes = table::render(&printed, request.format, request.style)?;
    if let Some((path, svg)) = plot {
        write_plot(path, &svg, ledger.is_some())?;
    }
    out.write_all(&bytes)?;
    out.flush()?;
    for query in &printed.queries {
        for warning in text::warnings(&query.release, Some(&query.name)) {
            warn(&warning);
        }
    }
    Ok(())
}

/// Validated queries released together: a workload file's, or `dpstat describe`'s.
pub struct Batch<'a> {
    pub workload: &'a Workload,
    /// What the ledger records as the query (`workload`, `describe`) and in its column field.
    pub ledger_query: &'static str,
    pub ledger_column: String,
}

/// One charge of the batch's total before any data row is read (with a ledger), one pass over
/// the data for every query, all the noise, one check that the queries' accounting adds up
/// exactly to the total, and the release recorded in the ledger. Nothing is printed; the
/// releases come back in the batch's order. Callers refuse the test seed with a ledger
/// (`rng::refuse_with_ledger`) before they validate the batch, so that comes first.
pub fn release_all(
    batch: &Batch,
    flags: &InputFlags,
    ledger: Option<&LedgerSpec>,
) -> Result<(Vec<table::Query>, Guarantee)> {
    let workload = batch.workload;
    warn_if_large(&workload.spend(), workload.mechanism.delta());
    let mut rng = rng::system_rng()?;
    let mut input = Input::open(&flags.source, &flags.csv, ledger.is_some(), flags.threads)?;
    let mut fold = WorkloadFold(Vec::with_capacity(workload.queries.len()));
    for query in &workload.queries {
        let at = |e: anyhow::Error| bad_input(format!("{}: {e:#}", query.origin));
        let inner = empty_fold(&query.job.statistic, &input).map_err(at)?;
        let (filters, by) = routing(&query.job.filters, query.job.group.as_ref(), &input).map_err(at)?;
        fold.0.push(Routed::new(inner, filters, by));
    }
    let charge = ledger::Charge {
        query: batch.ledger_query.to_string(),
        column: Some(batch.ledger_column.clone()),
        neighbours: workload.neighbours.name().to_string(),
        spend: workload.spend(),
    };
    let mut meter = Meter::new(ledger, charge);
    scan::check_memory(&input, &fold)?;
    meter.before_rows(&mut input)?;
    let released = meter.after_rows(measure_all(workload, fold, &mut input, &mut rng))?;
    meter.complete(&mut input)?;
    Ok(released)
}

/// The one pass and every query's noise; the accountant's total must be exactly the batch's.
/// Returns the queries and the guarantee of their total.
fn measure_all(
    workload: &Workload,
    mut fold: WorkloadFold,
    input: &mut Input,
    rng: &mut dyn rand::RngCore,
) -> Result<(Vec<table::Query>, Guarantee)> {
    scan::scan(input, &mut fold)?;
    let mut queries = Vec::with_capacity(workload.queries.len());
    for (query, routed) in workload.queries.iter().zip(fold.0) {
        let job = &query.job;
        let cx = context(job, input, &job.mechanism);
        let Outcome::Published(release) =
            publish(&job.statistic, routed.groups, job.group.as_ref(), &cx, rng)?
        else {
            return Err(Error::internal("a workload query asked for a second pass").into());
        };
        queries.push(table::Query { name: query.name.clone(), share: job.spend.clone(), release });
    }
    let accounting =
        Cost::sequential(queries.iter().map(|q| q.release.accounting().clone().named(&q.name)).collect());
    accounting.spends_exactly(&workload.spend())?;
    let guarantee = Guarantee::of(&accounting.total()?, workload.mechanism.delta())?;
    Ok((queries, guarantee))
}

/// Every query's fold, fed the same rows in one pass.
#[derive(Clone, Debug)]
pub struct WorkloadFold(pub Vec<Routed<AnyFold>>);

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
    fn heap_bytes(&self) -> usize {
        self.0.iter().map(Fold::heap_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::InvalidPolicy;
    use crate::privacy::unit::Neighbours;
    use csv::ByteRecord;

    #[test]
    fn workload_fold_merges_exactly() {
        use crate::data::cell::NumberCell;
        use crate::data::filter::Test;
        use crate::numeric::bounds::{Bounds, Finite};
        use crate::query::count::CountFold;
        use crate::query::variance::{VarianceFold, VarianceSpec};
        let bounds = Bounds::new(Finite::from_f64(0.0).unwrap(), Finite::from_f64(10.0).unwrap()).unwrap();
        let one = crate::privacy::noise::Mechanism::Laplace("1".parse().unwrap());
        let spec = VarianceSpec::new(bounds, Neighbours::AddRemove, &one).unwrap();
        let cell = NumberCell { index: 1, invalid: InvalidPolicy::Skip };
        let empty = WorkloadFold(vec![
            Routed::new(
                AnyFold::Count(CountFold::default()),
                vec![(0, Test::Equals(b"a".to_vec().into()))],
                None,
            ),
            Routed::new(AnyFold::Variance(VarianceFold::new(spec, cell)), vec![], None),
        ]);
        let rows: Vec<ByteRecord> = (0..40)
            .map(|i| {
                ByteRecord::from(vec![if i % 3 == 0 { "a" } else { "b" }, &format!("{}", i as f64 * 0.37)])
            })
            .collect();
        let mut whole = empty.clone();
        let (mut left, mut right) = (empty.clone(), empty);
        for (i, r) in rows.iter().enumerate() {
            whole.row(&Row::record(r)).unwrap();
            if i < 17 {
                left.row(&Row::record(r)).unwrap()
            } else {
                right.row(&Row::record(r)).unwrap()
            }
        }
        left.merge(right);
        let summary = |w: &WorkloadFold| -> Vec<String> {
            w.0.iter()
                .flat_map(|r| &r.groups)
                .map(|f| match f {
                    AnyFold::Count(c) => c.rows.to_string(),
                    AnyFold::Variance(v) => format!("{:?}", v.aggregate()),
                    _ => unreachable!(),
                })
                .collect()
        };
        assert_eq!(summary(&left), summary(&whole));
        assert_eq!(summary(&whole)[0], "14");
        assert_eq!(whole.widest_column(), Some(1));
    }
}
