//! dpstat: differentially private statistics from CSV files, with exact noise.
//!
//! The flow reads top to bottom: [`input`] opens the CSV, [`column`](mod@column) streams the selected
//! cells (a plain file through the [`parallel`] scan), [`clamp`] clamps them onto an exact grid, a
//! [`query`] folds them into an aggregate
//! with its sensitivity, the [`mechanism`] adds exact discrete Laplace noise, [`release`] holds
//! what becomes public and [`output`] renders it. This library exists for tests and benches;
//! it is not a stable API.

pub mod accuracy;
pub mod budget;
pub mod chart;
pub mod clamp;
pub mod cli;
pub mod column;
pub mod epsilon;
pub mod error;
pub mod generate;
pub mod input;
pub mod ledger;
pub mod mechanism;
pub mod output;
pub mod parallel;
pub mod plan;
pub mod planning;
pub mod query;
pub mod release;
pub mod sampler;
pub mod svg;
pub mod workload;

use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, Result};
use rand::RngCore;

use crate::clamp::Bins;
use crate::column::{Fold, NumberCell};
use crate::input::Input;
use crate::ledger::{BudgetSummary, LedgerSpec};
use crate::plan::{BinSpec, Clamp, Plan, QueryPlan};
use crate::query::bounds::{self, LogFold, PrivateBounds};
use crate::query::count::CountFold;
use crate::query::group::{self as grouping, FilterList, GroupBy, Routed};
use crate::query::histogram::{BinOf, HistogramFold};
use crate::query::mean::{MeanAggregate, MeanFold, MeanSpec};
use crate::query::quantile::QuantileFold;
use crate::query::sum::{SumFold, SumSpec};
use crate::query::variance::{VarianceAggregate, VarianceFold, VarianceSpec};
use crate::query::{count, histogram, QueryFold};
use crate::release::{BinLabels, Group, GroupedRelease, Published, Release};

/// Validates the command line, reads the data once, releases, charges the ledger if there is
/// one, and only then writes the release to `out`.
pub fn run(cli: cli::Cli, out: &mut dyn Write) -> Result<()> {
    match &cli.query {
        cli::Query::Budget(args) => return budget::report(args, out),
        cli::Query::Plan(args) => return planning::run(args, out),
        cli::Query::Completions(args) => return generate::completions(args.shell, out),
        cli::Query::Man => return generate::man(out),
        cli::Query::Run(args) => return workload::run(args, out),
        _ => {}
    }
    let plan = Plan::from_cli(cli)?;
    warn_if_large(&plan.eps);
    let mut rng = mechanism::system_rng()?;
    let fingerprint = plan.ledger.as_ref().is_some_and(|l| l.dataset.is_none());
    let mut input = Input::open(&plan.source, &plan.csv, fingerprint, plan.threads)?;
    let mut published = compute_release(&plan, &mut input, &mut rng)?;
    // Drawn now, so a failure to draw charges nothing; written only after the charge.
    let plot = match (&plan.plot, &published) {
        (Some(path), Published::One(release)) => {
            let svg = svg::render_release(release)
                .ok_or_else(|| error::bad_input("--plot draws histograms; this release has no bins"))??;
            Some((path, svg))
        }
        _ => None,
    };
    if let Some(ledger) = &plan.ledger {
        let query = match &plan.group {
            None => published.query().to_string(),
            Some(g) => format!("{} by {}", published.query(), g.column.label()),
        };
        let charge = ledger::Charge {
            query,
            column: published.column(),
            neighbours: plan.neighbours.name().to_string(),
            eps: plan.eps.clone(),
        };
        published.set_budget(charge_ledger(ledger, &input, &charge)?);
    }
    let bytes = output::render(&published, plan.format)?;
    if let Some((path, svg)) = plot {
        std::fs::write(path, svg).map_err(|e| {
            let charged = if plan.ledger.is_some() { " (the ledger was already charged)" } else { "" };
            error::bad_input(format!("--plot: writing {}: {e}; nothing was printed{charged}", path.display()))
        })?;
    }
    out.write_all(&bytes)?;
    out.flush()?;
    // Notes may carry released values (privately chosen bounds): only after the charge.
    if let Published::One(release) = &published {
        for note in &release.notes {
            note_line(note);
        }
    }
    Ok(())
}

/// Charges the dataset (`--dataset`, else the fingerprint of the input just read) in the ledger.
pub fn charge_ledger(ledger: &LedgerSpec, input: &Input, charge: &ledger::Charge) -> Result<BudgetSummary> {
    let dataset = match &ledger.dataset {
        Some(name) => name.clone(),
        None => input.fingerprint().context("internal error: the input was not fingerprinted")?,
    };
    ledger::charge(ledger, &dataset, charge)
}

/// A warning for ε above 10. A warning, never a refusal: scripts rely on it.
pub fn warn_if_large(eps: &epsilon::Epsilon) {
    if eps.is_large() {
        warn(&large_epsilon_warning(eps));
    }
}

/// Reads the input (in one pass, but for a numeric histogram with bounds found privately) and
/// produces the release, or one release per group with `--by`.
pub fn compute_release(plan: &Plan, input: &mut Input, rng: &mut dyn RngCore) -> Result<Published> {
    let (filters, by) = routing(plan, input)?;
    if let Some(release) = single_release(plan, input, &filters, rng)? {
        return Ok(Published::One(release));
    }
    let fold = new_fold(plan, input)?;
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

/// The empty fold of a query whose parameters are all known before the data (bounds from
/// flags), its columns resolved against the input's header.
pub fn new_fold(plan: &Plan, input: &Input) -> Result<QueryFold> {
    let cell = |column, invalid| -> Result<NumberCell> {
        Ok(NumberCell { index: input.resolve(column, "--col")?, invalid })
    };
    Ok(match &plan.query {
        QueryPlan::Count => QueryFold::Count(CountFold::default()),
        QueryPlan::Sum { column, spec: Clamp::Given(spec), invalid } => {
            QueryFold::Sum(SumFold::new(spec.clone(), cell(column, *invalid)?))
        }
        QueryPlan::Mean { column, spec: Clamp::Given(spec), invalid } => {
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
                BinSpec::NumericPrivate { .. } => unreachable!("released by single_release"),
            };
            QueryFold::Histogram(HistogramFold::new(bin_of))
        }
        QueryPlan::Sum { .. } | QueryPlan::Mean { .. } | QueryPlan::Quantile { .. } => {
            unreachable!("released by single_release")
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
        (QueryFold::Sum(fold), QueryPlan::Sum { column, spec: Clamp::Given(spec), .. }) => {
            let noisy = mechanism::laplace(&fold.aggregate(), &plan.eps, rng);
            Release::sum(plan, label(column), &noisy, &spec.bounds)
        }
        (QueryFold::Mean(fold), QueryPlan::Mean { column, spec: Clamp::Given(spec), .. }) => {
            mean_release(plan, label(column), spec, &plan.eps, fold.aggregate(), rng)?
        }
        (QueryFold::Variance(fold), QueryPlan::Variance { column, spec, .. }) => {
            variance_release(plan, label(column), spec, fold.aggregate(), rng)?
        }
        (QueryFold::Histogram(fold), QueryPlan::Histogram { column, .. }) => {
            histogram_release(plan, label(column), fold, &plan.eps, rng)
        }
        _ => unreachable!("the fold is built from the plan's query"),
    })
}

fn histogram_release(
    plan: &Plan,
    column: String,
    fold: HistogramFold,
    eps: &epsilon::Epsilon,
    rng: &mut dyn RngCore,
) -> Release {
    let labels = match &fold.bin_of {
        BinOf::Numeric(_, b) => BinLabels::Numeric(b),
        BinOf::Category(_, c) => BinLabels::Categories(c),
    };
    let aggregate = histogram::aggregate(fold.counts.clone(), plan.neighbours);
    let noisy = mechanism::laplace_each(&aggregate, eps, rng);
    Release::histogram(plan, column, labels, &noisy)
}

/// The queries that are not a plain fold known before the data: quantiles, and bounds found
/// privately (never with `--by`, see `plan::check_combination`). None for the others.
fn single_release(
    plan: &Plan,
    input: &mut Input,
    filters: &column::Filters,
    rng: &mut dyn RngCore,
) -> Result<Option<Release>> {
    let cell = |column, invalid| -> Result<NumberCell> {
        Ok(NumberCell { index: input.resolve(column, "--col")?, invalid })
    };
    Ok(Some(match &plan.query {
        QueryPlan::Sum { column, spec: Clamp::Private { bounds_eps, rest }, invalid } => {
            let cell = cell(column, *invalid)?;
            let (fold, found) = private_bounds(plan, input, filters, cell, bounds_eps, rng)?;
            let spec = SumSpec::new(found.bounds, plan.neighbours, rest).map_err(error::bad_input)?;
            let total = fold.clamped_sum_units(&found.bounds, spec.bounds.grid);
            let noisy = mechanism::laplace(&spec.aggregate(total), rest, rng);
            Release::sum(plan, column.label(), &noisy, &spec.bounds).with_private_bounds(&found)
        }
        QueryPlan::Mean { column, spec: Clamp::Private { bounds_eps, rest }, invalid } => {
            let cell = cell(column, *invalid)?;
            let (fold, found) = private_bounds(plan, input, filters, cell, bounds_eps, rng)?;
            let spec = MeanSpec::new(found.bounds, plan.neighbours, rest).map_err(error::bad_input)?;
            let sum = fold.clamped_sum_units(&found.bounds, spec.bounds().grid);
            let aggregate = spec.aggregate(spec.shift(sum, fold.rows()), fold.rows());
            mean_release(plan, column.label(), &spec, rest, aggregate, rng)?.with_private_bounds(&found)
        }
        QueryPlan::Histogram {
            column,
            bins: BinSpec::NumericPrivate { bins, bounds_eps, rest },
            invalid,
        } => {
            let cell = cell(column, *invalid)?;
            let (_, found) = private_bounds(plan, input, filters, cell, bounds_eps, rng)?;
            // The bins need the bounds before the first row: read the file again.
            input.reopen(&plan.source, &plan.csv)?;
            let mut fold = HistogramFold::new(BinOf::Numeric(cell, Bins::new(found.bounds, *bins)));
            column::scan(input, filters, &mut fold)?;
            histogram_release(plan, column.label(), fold, rest, rng).with_private_bounds(&found)
        }
        QueryPlan::Quantile { column, spec, invalid, .. } => {
            let mut fold = QuantileFold::new(Arc::clone(&spec.candidates), cell(column, *invalid)?);
            column::scan(input, filters, &mut fold)?;
            let eps = spec.epsilon_per_level(&plan.eps);
            let chosen: Vec<f64> = spec
                .levels
                .iter()
                .map(|level| {
                    let scores = fold.scores(level);
                    let delta = level.score_sensitivity(plan.neighbours);
                    spec.candidates.get(mechanism::permute_and_flip(&scores, delta, &eps, rng))
                })
                .collect();
            Release::quantiles(plan, column.label(), spec, &eps, &chosen)
        }
        _ => return Ok(None),
    }))
}

/// One pass that gathers the log-scale statistics of a column, then bounds chosen privately
/// with `bounds_eps` from them.
fn private_bounds(
    plan: &Plan,
    input: &mut Input,
    filters: &column::Filters,
    cell: NumberCell,
    bounds_eps: &epsilon::Epsilon,
    rng: &mut dyn RngCore,
) -> Result<(LogFold, PrivateBounds)> {
    let mut fold = LogFold::new(cell);
    column::scan(input, filters, &mut fold)?;
    let found = bounds::choose(&fold, plan.neighbours, bounds_eps, rng);
    Ok((fold, found))
}

fn mean_release(
    plan: &Plan,
    column: String,
    spec: &MeanSpec,
    eps: &epsilon::Epsilon,
    aggregate: MeanAggregate,
    rng: &mut dyn RngCore,
) -> Result<Release> {
    let eps = spec.epsilon_parts(eps);
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

/// An informational line on stderr.
pub fn note_line(message: &str) {
    let _ = writeln!(std::io::stderr(), "dpstat: note: {message}");
}

/// What ε > 10 means for the people in the data.
pub fn large_epsilon_warning(eps: &epsilon::Epsilon) -> String {
    let factor = eps.to_f64_up().exp();
    let factor = if factor.is_finite() { format!("{factor:.1e}") } else { "more than 1e308".to_string() };
    format!(
        "--eps {eps} is large: the release still runs, but it protects little. With ε = {eps} an observer's \
         odds about whether any one person's row is in the data (or what it holds) can change by a factor \
         of up to e^{eps} ≈ {factor}; ε of 1 or less is the usual range for meaningful protection (lower --eps)"
    )
}

/// A note on stderr; a failure to write it must not stop a release.
pub fn warn(message: &str) {
    let _ = writeln!(std::io::stderr(), "dpstat: warning: {message}");
}
