//! dpstat: differentially private statistics from CSV files, with exact noise.
//!
//! The flow reads top to bottom: [`input`] opens the CSV, [`column`] streams the selected
//! cells (a plain file through the [`parallel`] scan), [`clamp`] clamps them onto an exact grid, a [`query`] folds them into an aggregate
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
pub mod parallel;
pub mod plan;
pub mod query;
pub mod release;
pub mod sampler;

use std::io::Write;

use anyhow::Result;
use rand::RngCore;

use std::sync::Arc;

use crate::column::NumberCell;
use crate::input::Input;
use crate::plan::{BinSpec, Plan, QueryPlan};
use crate::query::count::CountFold;
use crate::query::histogram::{BinOf, HistogramFold};
use crate::query::mean::{MeanAggregate, MeanFold, MeanSpec};
use crate::query::sum::SumFold;
use crate::query::{count, histogram};
use crate::release::Release;

/// Validates the command line, reads the data once, releases, charges the ledger if there is
/// one, and only then writes the release to `out`.
pub fn run(cli: cli::Cli, out: &mut dyn Write) -> Result<()> {
    if let cli::Query::Budget(args) = &cli.query {
        return budget::report(args, out);
    }
    let plan = Plan::from_cli(cli)?;
    if plan.eps.is_large() {
        warn(&format!(
            "epsilon {} is large: above 10 a release protects little (an attacker's odds about any one row can change by a factor of e^{})",
            plan.eps, plan.eps
        ));
    }
    let mut rng = mechanism::system_rng()?;
    let fingerprint = plan.ledger.as_ref().is_some_and(|l| l.dataset.is_none());
    let mut input = Input::open(&plan.source, &plan.csv, fingerprint, plan.threads)?;
    let mut release = compute_release(&plan, &mut input, &mut rng)?;
    if let Some(ledger) = &plan.ledger {
        let dataset = match (&ledger.dataset, input.fingerprint()) {
            (Some(name), _) => name.clone(),
            (None, Some(hash)) => hash,
            (None, None) => unreachable!("the input is hashed whenever no --dataset is given"),
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
    out.write_all(&bytes)?;
    out.flush()?;
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
            let mut fold = SumFold::new(spec.clone(), cell);
            column::scan(input, &filters, &mut fold)?;
            let noisy = mechanism::laplace(&fold.aggregate(), &plan.eps, rng);
            Release::sum(plan, column.label(), &noisy, &spec.bounds)
        }
        QueryPlan::Mean { column, spec, invalid } => {
            let cell = NumberCell { index: input.resolve(column, "--col")?, invalid: *invalid };
            let mut fold = MeanFold::new(spec.clone(), cell);
            column::scan(input, &filters, &mut fold)?;
            mean_release(plan, column.label(), spec, fold.aggregate(), rng)?
        }
        QueryPlan::Histogram { column, bins, invalid } => {
            let index = input.resolve(column, "--col")?;
            let bin_of = match bins {
                BinSpec::Numeric(b) => BinOf::Numeric(NumberCell { index, invalid: *invalid }, b.clone()),
                BinSpec::Categories(c) => BinOf::Category(index, Arc::new(c.clone())),
            };
            let mut fold = HistogramFold::new(bin_of);
            column::scan(input, &filters, &mut fold)?;
            let aggregate = histogram::aggregate(fold.counts, plan.neighbours);
            let noisy = mechanism::laplace_each(&aggregate, &plan.eps, rng);
            Release::histogram(plan, column.label(), bins, &noisy)
        }
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

/// A note on stderr; a failure to write it must not stop a release.
pub fn warn(message: &str) {
    let _ = writeln!(std::io::stderr(), "dpstat: warning: {message}");
}
