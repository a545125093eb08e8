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

use std::io::Write;

use anyhow::Result;
use rand::RngCore;

use crate::column::Selection;
use crate::input::Input;
use crate::plan::{BinSpec, Plan, QueryPlan};
use crate::query::mean::{MeanAggregate, MeanSpec};
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
    let mut input = Input::open(&plan.source, &plan.csv, fingerprint)?;
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
    let column_name = |c: &plan::ColumnRef| c.label();
    let mut selection = Selection {
        column: None,
        filters: plan
            .filters
            .iter()
            .map(|f| Ok((input.resolve(&f.column, "--where")?, f.value.as_bytes().to_vec())))
            .collect::<Result<_>>()?,
    };
    Ok(match &plan.query {
        QueryPlan::Count => {
            let rows = column::scan_cells(input, &selection, |_| Ok(()))?;
            let noisy = mechanism::laplace(&count::aggregate(rows), &plan.eps, rng);
            Release::count(plan, &noisy)
        }
        QueryPlan::Sum {
            column,
            spec,
            invalid,
        } => {
            selection.column = Some((input.resolve(column, "--col")?, column_name(column)));
            let mut total: i128 = 0;
            column::scan_numbers(input, &selection, *invalid, |x| total += spec.units(x))?;
            let noisy = mechanism::laplace(&spec.aggregate(total), &plan.eps, rng);
            Release::sum(plan, column_name(column), &noisy, &spec.bounds)
        }
        QueryPlan::Mean {
            column,
            spec,
            invalid,
        } => {
            selection.column = Some((input.resolve(column, "--col")?, column_name(column)));
            let mut total: i128 = 0;
            let n = column::scan_numbers(input, &selection, *invalid, |x| total += spec.units(x))?;
            mean_release(plan, column_name(column), spec, spec.aggregate(total, n), rng)?
        }
        QueryPlan::Histogram {
            column,
            bins,
            invalid,
        } => {
            selection.column = Some((input.resolve(column, "--col")?, column_name(column)));
            let counts = match bins {
                BinSpec::Numeric(b) => {
                    let mut counts = vec![0u64; b.len()];
                    column::scan_numbers(input, &selection, *invalid, |x| counts[b.index(x)] += 1)?;
                    counts
                }
                BinSpec::Categories(c) => {
                    let mut counts = vec![0u64; c.names().len() + 1];
                    column::scan_cells(input, &selection, |cell| {
                        counts[c.index(cell)] += 1;
                        Ok(())
                    })?;
                    counts
                }
            };
            let aggregate = histogram::aggregate(counts, plan.neighbours);
            let noisy = mechanism::laplace_each(&aggregate, &plan.eps, rng);
            Release::histogram(plan, column_name(column), bins, &noisy)
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
        MeanAggregate::AddRemove {
            shifted_sum,
            count,
            midpoint,
        } => {
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
