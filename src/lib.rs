//! dpstat: differentially private statistics from CSV files, with exact noise.
//!
//! The flow reads top to bottom: [`input`] opens the CSV, [`column`](mod@column) streams the selected
//! cells, [`clamp`] clamps them onto an exact grid, a [`query`] folds them into an aggregate
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
pub mod plan;
pub mod planning;
pub mod query;
pub mod release;
pub mod sampler;
pub mod svg;

use std::io::Write;

use anyhow::{Context, Result};
use rand::RngCore;

use std::sync::Arc;

use crate::clamp::Bins;
use crate::column::NumberCell;
use crate::input::Input;
use crate::plan::{BinSpec, Clamp, Plan, QueryPlan};
use crate::query::bounds::{self, LogFold, PrivateBounds};
use crate::query::count::CountFold;
use crate::query::histogram::{BinOf, HistogramFold};
use crate::query::mean::{MeanAggregate, MeanFold, MeanSpec};
use crate::query::quantile::QuantileFold;
use crate::query::sum::{SumFold, SumSpec};
use crate::query::{count, histogram};
use crate::release::{BinLabels, Release};

/// Validates the command line, reads the data once, releases, charges the ledger if there is
/// one, and only then writes the release to `out`.
pub fn run(cli: cli::Cli, out: &mut dyn Write) -> Result<()> {
    match &cli.query {
        cli::Query::Budget(args) => return budget::report(args, out),
        cli::Query::Plan(args) => return planning::run(args, out),
        cli::Query::Completions(args) => return generate::completions(args.shell, out),
        cli::Query::Man => return generate::man(out),
        cli::Query::Count(_)
        | cli::Query::Sum(_)
        | cli::Query::Mean(_)
        | cli::Query::Histogram(_)
        | cli::Query::Quantile(_)
        | cli::Query::Median(_) => {}
    }
    let plan = Plan::from_cli(cli)?;
    if plan.eps.is_large() {
        warn(&large_epsilon_warning(&plan.eps));
    }
    let mut rng = mechanism::system_rng()?;
    let fingerprint = plan.ledger.as_ref().is_some_and(|l| l.dataset.is_none());
    let mut input = Input::open(&plan.source, &plan.csv, fingerprint)?;
    let mut release = compute_release(&plan, &mut input, &mut rng)?;
    // Drawn now, so a failure to draw charges nothing; written only after the charge.
    let plot = match &plan.plot {
        Some(path) => {
            let svg = svg::render_release(&release)
                .ok_or_else(|| error::bad_input("--plot draws histograms; this release has no bins"))??;
            Some((path, svg))
        }
        None => None,
    };
    if let Some(ledger) = &plan.ledger {
        let dataset = match &ledger.dataset {
            Some(name) => name.clone(),
            None => input.fingerprint().context("internal error: the input was not fingerprinted")?,
        };
        let charge = ledger::Charge {
            query: release.query.to_string(),
            column: release.column.clone(),
            neighbours: plan.neighbours.name().to_string(),
            eps: plan.eps.clone(),
        };
        release.budget = Some(ledger::charge(ledger, &dataset, &charge)?);
    }
    let bytes = output::render(&release, plan.format)?;
    if let Some((path, svg)) = plot {
        std::fs::write(path, svg).map_err(|e| {
            let charged = if plan.ledger.is_some() { " (the ledger was already charged)" } else { "" };
            error::bad_input(format!("--plot: writing {}: {e}; nothing was printed{charged}", path.display()))
        })?;
    }
    out.write_all(&bytes)?;
    out.flush()?;
    // Notes may carry released values (privately chosen bounds): only after the charge.
    for note in &release.notes {
        note_line(note);
    }
    Ok(())
}

/// Reads the input in one pass and produces the release.
pub fn compute_release(plan: &Plan, input: &mut Input, rng: &mut dyn RngCore) -> Result<Release> {
    let filters: Vec<(usize, Vec<u8>)> = plan
        .filters
        .iter()
        .map(|f| Ok((input.resolve(&f.column, "--where")?, f.value.as_bytes().to_vec())))
        .collect::<Result<_>>()?;
    Ok(match &plan.query {
        QueryPlan::Count => {
            let mut fold = CountFold::default();
            column::scan(input, &filters, &mut fold)?;
            let noisy = mechanism::laplace(&count::aggregate(fold.rows), &plan.eps, rng);
            Release::count(plan, &noisy)
        }
        QueryPlan::Sum { column, spec, invalid } => {
            let cell = NumberCell { index: input.resolve(column, "--col")?, invalid: *invalid };
            match spec {
                Clamp::Given(spec) => {
                    let mut fold = SumFold::new(spec.clone(), cell);
                    column::scan(input, &filters, &mut fold)?;
                    let noisy = mechanism::laplace(&fold.aggregate(), &plan.eps, rng);
                    Release::sum(plan, column.label(), &noisy, &spec.bounds)
                }
                Clamp::Private { bounds_eps, rest } => {
                    let (fold, found) = private_bounds(plan, input, &filters, cell, bounds_eps, rng)?;
                    let spec = SumSpec::new(found.bounds, plan.neighbours, rest).map_err(error::bad_input)?;
                    let total = fold.clamped_sum_units(&found.bounds, spec.bounds.grid);
                    let noisy = mechanism::laplace(&spec.aggregate(total), rest, rng);
                    Release::sum(plan, column.label(), &noisy, &spec.bounds).with_private_bounds(&found)
                }
            }
        }
        QueryPlan::Mean { column, spec, invalid } => {
            let cell = NumberCell { index: input.resolve(column, "--col")?, invalid: *invalid };
            match spec {
                Clamp::Given(spec) => {
                    let mut fold = MeanFold::new(spec.clone(), cell);
                    column::scan(input, &filters, &mut fold)?;
                    mean_release(plan, column.label(), spec, &plan.eps, fold.aggregate(), rng)?
                }
                Clamp::Private { bounds_eps, rest } => {
                    let (fold, found) = private_bounds(plan, input, &filters, cell, bounds_eps, rng)?;
                    let spec =
                        MeanSpec::new(found.bounds, plan.neighbours, rest).map_err(error::bad_input)?;
                    let sum = fold.clamped_sum_units(&found.bounds, spec.bounds().grid);
                    let aggregate = spec.aggregate(spec.shift(sum, fold.rows()), fold.rows());
                    mean_release(plan, column.label(), &spec, rest, aggregate, rng)?
                        .with_private_bounds(&found)
                }
            }
        }
        QueryPlan::Histogram { column, bins, invalid } => {
            let index = input.resolve(column, "--col")?;
            let cell = NumberCell { index, invalid: *invalid };
            let (bin_of, eps, found) = match bins {
                BinSpec::Numeric(b) => (BinOf::Numeric(cell, b.clone()), &plan.eps, None),
                BinSpec::Categories(c) => (BinOf::Category(index, Arc::new(c.clone())), &plan.eps, None),
                BinSpec::NumericPrivate { bins, bounds_eps, rest } => {
                    let (_, found) = private_bounds(plan, input, &filters, cell, bounds_eps, rng)?;
                    // The bins need the bounds before the first row: read the file again.
                    input.reopen(&plan.source, &plan.csv)?;
                    (BinOf::Numeric(cell, Bins::new(found.bounds, *bins)), rest, Some(found))
                }
            };
            let mut fold = HistogramFold::new(bin_of);
            column::scan(input, &filters, &mut fold)?;
            let aggregate = histogram::aggregate(fold.counts, plan.neighbours);
            let noisy = mechanism::laplace_each(&aggregate, eps, rng);
            let labels = match &fold.bin_of {
                BinOf::Numeric(_, b) => BinLabels::Numeric(b),
                BinOf::Category(_, c) => BinLabels::Categories(c),
            };
            let release = Release::histogram(plan, column.label(), labels, &noisy);
            match &found {
                Some(found) => release.with_private_bounds(found),
                None => release,
            }
        }
        QueryPlan::Quantile { column, spec, invalid, .. } => {
            let cell = NumberCell { index: input.resolve(column, "--col")?, invalid: *invalid };
            let mut fold = QuantileFold::new(Arc::clone(&spec.candidates), cell);
            column::scan(input, &filters, &mut fold)?;
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
    })
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

/// An informational line on stderr.
pub fn note_line(message: &str) {
    let _ = writeln!(std::io::stderr(), "dpstat: note: {message}");
}

/// What ε > 10 means for the people in the data. A warning, never a refusal: scripts rely on it.
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
