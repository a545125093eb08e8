//! dpstat: differentially private statistics from CSV files, with exact noise.
//!
//! The flow reads top to bottom: [`input`] opens the CSV, [`column`] streams the selected
//! cells, [`clamp`] clamps them onto an exact grid, a [`query`] folds them into an aggregate
//! with its sensitivity, the [`mechanism`] adds exact discrete Laplace noise, [`release`] holds
//! what becomes public and [`output`] renders it. This library exists for tests and benches;
//! it is not a stable API.

pub mod accuracy;
pub mod budget;
pub mod clamp;
pub mod cli;
pub mod column;
pub mod epsilon;
pub mod error;
pub mod input;
pub mod ledger;
pub mod mechanism;
pub mod output;
pub mod plan;
pub mod query;
pub mod release;
pub mod sampler;
pub mod workload;

use std::io::Write;
use std::sync::Arc;

use anyhow::Result;
use rand::RngCore;

use crate::column::{Fold, NumberCell};
use crate::input::Input;
use crate::ledger::{BudgetSummary, LedgerSpec};
use crate::plan::{BinSpec, Plan, QueryPlan};
use crate::query::count::CountFold;
use crate::query::group::{self as grouping, FilterList, GroupBy, Routed};
use crate::query::histogram::{BinOf, HistogramFold};
use crate::query::mean::{MeanAggregate, MeanFold, MeanSpec};
use crate::query::sum::SumFold;
use crate::query::variance::{VarianceAggregate, VarianceFold, VarianceSpec};
use crate::query::{count, histogram, QueryFold};
use crate::release::{Group, GroupedRelease, Published, Release};

/// Validates the command line, reads the data once, releases, charges the ledger if there is
/// one, and only then writes the release to `out`.
pub fn run(cli: cli::Cli, out: &mut dyn Write) -> Result<()> {
    match &cli.query {
        cli::Query::Budget(args) => return budget::report(args, out),
        cli::Query::Run(args) => return workload::run(args, out),
        _ => {}
    }
    let plan = Plan::from_cli(cli)?;
    warn_if_large(&plan.eps);
    let mut rng = mechanism::system_rng()?;
    let fingerprint = plan.ledger.as_ref().is_some_and(|l| l.dataset.is_none());
    let mut input = Input::open(&plan.source, &plan.csv, fingerprint)?;
    let mut release = compute_release(&plan, &mut input, &mut rng)?;
    if let Some(ledger) = &plan.ledger {
        let query = match &plan.group {
            None => release.query().to_string(),
            Some(g) => format!("{} by {}", release.query(), g.column.label()),
        };
        let charge = ledger::Charge {
            query,
            column: release.column(),
            neighbours: plan.neighbours.name().to_string(),
            eps: plan.eps.clone(),
        };
        release.set_budget(charge_ledger(ledger, &input, &charge)?);
    }
    let bytes = output::render(&release, plan.format)?;
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// Charges the dataset (`--dataset`, else the fingerprint of the input just read) in the ledger.
pub fn charge_ledger(ledger: &LedgerSpec, input: &Input, charge: &ledger::Charge) -> Result<BudgetSummary> {
    let dataset = match (&ledger.dataset, input.fingerprint()) {
        (Some(name), _) => name.clone(),
        (None, Some(hash)) => hash,
        (None, None) => unreachable!("the input is hashed whenever no --dataset is given"),
    };
    ledger::charge(ledger, &dataset, charge)
}

/// A warning for ε above 10.
pub fn warn_if_large(eps: &epsilon::Epsilon) {
    if eps.is_large() {
        warn(&format!(
            "epsilon {eps} is large: above 10 a release protects little (an attacker's odds about any one row can change by a factor of e^{eps})"
        ));
    }
}

/// Reads the input in one pass and produces the release (one per group with `--by`).
pub fn compute_release(plan: &Plan, input: &mut Input, rng: &mut dyn RngCore) -> Result<Published> {
    let fold = new_fold(plan, input)?;
    let (filters, by) = routing(plan, input)?;
    // One match so that the scan loop is compiled for each query's own fold.
    let groups = match fold {
        QueryFold::Count(f) => scan_routed(input, f, filters, by, QueryFold::Count)?,
        QueryFold::Sum(f) => scan_routed(input, f, filters, by, QueryFold::Sum)?,
        QueryFold::Mean(f) => scan_routed(input, f, filters, by, QueryFold::Mean)?,
        QueryFold::Variance(f) => scan_routed(input, f, filters, by, QueryFold::Variance)?,
        QueryFold::Histogram(f) => scan_routed(input, f, filters, by, QueryFold::Histogram)?,
    };
    publish(plan, groups, rng)
}

fn scan_routed<F: Fold>(
    input: &mut Input,
    fold: F,
    filters: FilterList,
    by: Option<GroupBy>,
    wrap: fn(F) -> QueryFold,
) -> Result<Vec<QueryFold>> {
    let mut routed = Routed::new(fold, filters, by);
    column::scan(input, &[], &mut routed)?;
    Ok(routed.groups.into_iter().map(wrap).collect())
}

/// The plan's filters and grouping, resolved against the input's header.
pub fn routing(plan: &Plan, input: &Input) -> Result<(FilterList, Option<GroupBy>)> {
    let filters = plan
        .filters
        .iter()
        .map(|f| Ok((input.resolve(&f.column, "--where")?, f.value.as_bytes().to_vec())))
        .collect::<Result<_>>()?;
    let by = match &plan.group {
        None => None,
        Some(g) => Some(GroupBy { index: input.resolve(&g.column, "--by")?, keys: Arc::new(g.keys.clone()) }),
    };
    Ok((filters, by))
}

/// The empty fold of the plan's query, its columns resolved against the input's header.
pub fn new_fold(plan: &Plan, input: &Input) -> Result<QueryFold> {
    let cell = |column, invalid| -> Result<NumberCell> {
        Ok(NumberCell { index: input.resolve(column, "--col")?, invalid })
    };
    Ok(match &plan.query {
        QueryPlan::Count => QueryFold::Count(CountFold::default()),
        QueryPlan::Sum { column, spec, invalid } => {
            QueryFold::Sum(SumFold::new(spec.clone(), cell(column, *invalid)?))
        }
        QueryPlan::Mean { column, spec, invalid } => {
            QueryFold::Mean(MeanFold::new(spec.clone(), cell(column, *invalid)?))
        }
        QueryPlan::Variance { column, spec, invalid } => {
            QueryFold::Variance(VarianceFold::new(spec.clone(), cell(column, *invalid)?))
        }
        QueryPlan::Histogram { column, bins, invalid } => {
            let index = input.resolve(column, "--col")?;
            let bin_of = match bins {
                BinSpec::Numeric(b) => BinOf::Numeric(NumberCell { index, invalid: *invalid }, b.clone()),
                BinSpec::Categories(c) => BinOf::Category(index, Arc::new(c.clone())),
            };
            QueryFold::Histogram(HistogramFold::new(bin_of))
        }
    })
}

/// Adds the noise to the folded aggregates: one release, or one per group, each with the
/// plan's full ε.
pub fn publish(plan: &Plan, groups: Vec<QueryFold>, rng: &mut dyn RngCore) -> Result<Published> {
    match &plan.group {
        None => {
            let Some(fold) = groups.into_iter().next() else {
                unreachable!("an ungrouped scan has one fold")
            };
            Ok(Published::One(release_of(plan, fold, rng)?))
        }
        Some(g) => {
            let groups = groups
                .into_iter()
                .enumerate()
                .map(|(i, fold)| {
                    Ok(Group { key: g.keys.label(i).to_string(), release: release_of(plan, fold, rng)? })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Published::Grouped(GroupedRelease::new(plan, g.column.label(), groups)))
        }
    }
}

fn release_of(plan: &Plan, fold: QueryFold, rng: &mut dyn RngCore) -> Result<Release> {
    let label = |c: &plan::ColumnRef| c.label();
    Ok(match (fold, &plan.query) {
        (QueryFold::Count(fold), _) => {
            let mut aggregate = count::aggregate(fold.rows);
            if plan.group.is_some() {
                aggregate.sensitivity = grouping::count_sensitivity(plan.neighbours);
            }
            let noisy = mechanism::laplace(&aggregate, &plan.eps, rng);
            Release::count(plan, &noisy)
        }
        (QueryFold::Sum(fold), QueryPlan::Sum { column, spec, .. }) => {
            let noisy = mechanism::laplace(&fold.aggregate(), &plan.eps, rng);
            Release::sum(plan, label(column), &noisy, &spec.bounds)
        }
        (QueryFold::Mean(fold), QueryPlan::Mean { column, spec, .. }) => {
            mean_release(plan, label(column), spec, fold.aggregate(), rng)?
        }
        (QueryFold::Variance(fold), QueryPlan::Variance { column, spec, .. }) => {
            variance_release(plan, label(column), spec, fold.aggregate(), rng)?
        }
        (QueryFold::Histogram(fold), QueryPlan::Histogram { column, bins, .. }) => {
            let aggregate = histogram::aggregate(fold.counts, plan.neighbours);
            let noisy = mechanism::laplace_each(&aggregate, &plan.eps, rng);
            Release::histogram(plan, label(column), bins, &noisy)
        }
        _ => unreachable!("the fold is built from the plan's query"),
    })
}

fn mean_release(
    plan: &Plan,
    column: String,
    spec: &MeanSpec,
    aggregate: MeanAggregate,
    rng: &mut dyn RngCore,
) -> Result<Release> {
    let eps = spec.epsilon_parts(&plan.eps);
    Ok(match aggregate {
        MeanAggregate::Replace { n: 0, .. } => {
            return Err(error::bad_input(format!(
                "{}: mean under --neighbours replace needs at least one row (n = 0 has no mean)",
                plan.source.display_name()
            )));
        }
        MeanAggregate::Replace { sum, n } => {
            let noisy = mechanism::laplace(&sum, &eps[0], rng);
            Release::mean_replace(plan, column, &noisy, n, spec.bounds())
        }
        MeanAggregate::AddRemove { shifted_sum, count, midpoint } => {
            let noisy_sum = mechanism::laplace(&shifted_sum, &eps[0], rng);
            let noisy_count = mechanism::laplace(&count, &eps[1], rng);
            Release::mean_add_remove(plan, column, &noisy_sum, &noisy_count, midpoint, spec.bounds())
        }
    })
}

fn variance_release(
    plan: &Plan,
    column: String,
    spec: &VarianceSpec,
    aggregate: VarianceAggregate,
    rng: &mut dyn RngCore,
) -> Result<Release> {
    let eps = spec.epsilon_parts(&plan.eps);
    let VarianceAggregate { count, shifted_sum, squares, n } = aggregate;
    if count.is_none() && n == 0 {
        return Err(error::bad_input(format!(
            "{}: variance under --neighbours replace needs at least one row (n = 0 has no variance)",
            plan.source.display_name()
        )));
    }
    let noisy_count = count.map(|c| mechanism::laplace(&c, &eps[0], rng));
    let noisy_sum = mechanism::laplace(&shifted_sum, &eps[eps.len() - 2], rng);
    let noisy_squares = mechanism::laplace(&squares, &eps[eps.len() - 1], rng);
    Ok(Release::variance(plan, column, spec, noisy_count.as_ref(), &noisy_sum, &noisy_squares, n))
}

/// A note on stderr; a failure to write it must not stop a release.
pub fn warn(message: &str) {
    let _ = writeln!(std::io::stderr(), "dpstat: warning: {message}");
}
