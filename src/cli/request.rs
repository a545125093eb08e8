//! Each subcommand's flags turned into the request its `cmd` module validates across flags.

use std::path::PathBuf;

use crate::cli::plan::{
    PlanArgs, PlanNumericArgs, PlanQuery, PlanRankArgs, PlanRunArgs, PlanSqlArgs, PlanTarget,
};
use crate::cli::{BudgetArgs, Delimiter, DescribeArgs, Query, ReleaseFlags, RunArgs, SqlArgs};
use crate::cmd;
use crate::error::Error;
use crate::numeric::bounds::Finite;
use crate::privacy::epsilon::Epsilon;
use crate::query::options::Options;
use crate::report::text;

/// A release subcommand as the request `cmd::release` validates; None for the others.
pub fn release_request(query: &Query) -> Option<cmd::release::Request> {
    let ReleaseFlags { kind, options, common } = query.release()?;
    Some(cmd::release::Request {
        kind,
        options,
        privacy: common.privacy(),
        neighbours: common.neighbours.into(),
        filters: common.filters.clone(),
        by: common.by.clone().map(|by| (by, common.keys.clone())),
        person: common.person.flags(),
        format: common.output.format.into(),
        style: common.output.style(),
        confidence: common.output.confidence,
        ledger: common.ledger.flags(),
        input: common.input.flags(),
        plot: common.output.plot.clone(),
    })
}

/// `dpstat plan run WORKLOAD` as the request `cmd::plan` compares.
pub fn plan_run_request(args: &PlanRunArgs) -> Result<cmd::plan::RunRequest, Error> {
    let format = plan_format(args.format.into())?;
    Ok(cmd::plan::RunRequest {
        workload: args.workload.clone(),
        delta: args.delta.clone(),
        rows: args.rows,
        confidence: args.confidence,
        format,
        style: args.precision.style(),
    })
}

/// `dpstat plan QUERY` as the request `cmd::plan` solves.
pub fn plan_request(args: &PlanArgs) -> Result<cmd::plan::Request, Error> {
    let (kind, options, rows, target) = plan_query(&args.query)?;
    let PlanTarget {
        eps,
        error,
        neighbours,
        noise,
        delta,
        confidence,
        format,
        max_rows_per_id,
        by,
        keys,
        max_groups_per_id,
        max_rows_per_group,
        precision,
    } = target;
    let format = plan_format((*format).into())?;
    let target = plan_target(eps.as_ref(), error.as_ref())?;
    let request = cmd::plan::Request {
        kind,
        options,
        noise: (*noise).into(),
        delta: delta.clone(),
        neighbours: (*neighbours).into(),
        confidence: *confidence,
        rows,
        target,
        format,
        style: precision.style(),
        rows_per_id: max_rows_per_id
            .iter()
            .filter_map(|r| match r {
                crate::cli::values::RowsPerId::Rows(k) => Some(*k),
                crate::cli::values::RowsPerId::Auto => None,
            })
            .collect(),
        auto: max_rows_per_id.contains(&crate::cli::values::RowsPerId::Auto),
        groups: match (by, keys) {
            (Some(by), Some(keys)) => Some(cmd::plan::PlanGroups {
                by: by.clone(),
                groups: keys.groups(),
                max_groups_per_id: *max_groups_per_id,
                max_rows_per_group: *max_rows_per_group,
            }),
            _ => None,
        },
        factor: crate::privacy::contribution::Factor::ONE,
    };
    request.check()?;
    Ok(request)
}

/// The planned query's kind, its options as a release would take them, the `--rows` a mean or
/// variance assumes, and its target flags; the kinds `dpstat plan` cannot plan are refused here.
fn plan_query(query: &PlanQuery) -> Result<(&'static str, Options, Option<u64>, &PlanTarget), Error> {
    let numeric = |a: &PlanNumericArgs| Options {
        column: Some(a.col.clone().unwrap_or_default()),
        lower: a.lower,
        upper: a.upper,
        ..Options::default()
    };
    let rank = |a: &PlanRankArgs, levels| Options {
        column: Some(a.col.clone().unwrap_or_default()),
        lower: a.lower,
        upper: a.upper,
        resolution: a.resolution,
        levels,
        ..Options::default()
    };
    Ok(match query {
        PlanQuery::Count(t) => ("count", Options::default(), None, t),
        PlanQuery::Sum(a) => ("sum", numeric(a), None, &a.target),
        PlanQuery::Mean(a) => ("mean", numeric(&a.numeric), a.rows, &a.numeric.target),
        PlanQuery::Variance(a) => ("variance", numeric(&a.numeric), a.rows, &a.numeric.target),
        PlanQuery::Quantile(a) => ("quantile", rank(&a.rank, a.levels.clone()), None, &a.rank.target),
        PlanQuery::Median(a) => ("median", rank(a, vec![]), None, &a.target),
        PlanQuery::Covariance(_) | PlanQuery::Regress(_) => {
            return Err(Error::usage(
                "dpstat plan does not plan covariance or regress: their error bound depends on the \
                 data through the noisy parts (the count, both columns' means, the mean product and, \
                 for the slope, the variance of x it divides by), not on ε, the bounds and n alone. \
                 Plan the parts instead (dpstat plan mean --lower L --upper U --rows N for each \
                 column), or read the bound each release states in its accuracy",
            ))
        }
        PlanQuery::Histogram(a) => {
            let options = Options {
                column: Some(a.col.clone().unwrap_or_default()),
                bins: a.bins,
                categories: a.categories.clone(),
                lower: a.lower,
                upper: a.upper,
                ..Options::default()
            };
            ("histogram", options, None, &a.target)
        }
        PlanQuery::Run(_) | PlanQuery::Sql(_) => {
            return Err(Error::internal("a workload plan is not a query's"))
        }
    })
}

/// `--format`, which a plan prints in: a chart draws a release, so it is refused.
fn plan_format(format: text::Format) -> Result<text::Format, Error> {
    if format == text::Format::Chart {
        return Err(Error::usage(
            "--format chart draws a release; dpstat plan prints --format text, csv or json",
        ));
    }
    Ok(format)
}

/// What the plan solves for: the error bound at `--eps`, or the smallest ε whose bound is at
/// most `--error`, which must be above 0.
fn plan_target(eps: Option<&Epsilon>, error: Option<&Finite>) -> Result<cmd::plan::Target, Error> {
    Ok(match (eps, error) {
        (Some(e), _) => cmd::plan::Target::Epsilon(e.clone()),
        (None, Some(e)) if e.get() > 0.0 => cmd::plan::Target::Error(e.get()),
        (None, Some(e)) => {
            return Err(Error::usage(format!(
                "--error {} must be greater than 0: it is the largest |release − true value| you can accept",
                e.get()
            )))
        }
        (None, None) => {
            return Err(Error::usage(
                "dpstat plan needs --eps E (to print the error bound at that ε) or --error E \
                 (to print the smallest ε whose bound is at most E)",
            ))
        }
    })
}

impl RunArgs {
    pub fn request(&self) -> cmd::run::RunRequest {
        cmd::run::RunRequest {
            workload: self.workload.clone(),
            format: self.output.format.into(),
            style: self.output.style(),
            plot: self.output.plot.clone(),
            confidence: self.output.confidence,
            ledger: self.ledger.flags(),
            input: self.input.flags(),
        }
    }
}

impl SqlArgs {
    /// The query translated (refused before anything is read when outside the subset), and
    /// its FROM resolved: FILE arguments when given (FROM then only names them), else the
    /// `--table` binding of FROM's name, else FROM as a path (`stdin` and `-`: standard input).
    pub fn request(&self) -> Result<cmd::sql::Request, Error> {
        let keys = self.keys.as_ref().map(|k| k.names().to_vec());
        let translation = cmd::sql::translate(&self.query, keys.as_deref())?;
        let mut bound = None;
        for binding in &self.tables {
            let Some((name, path)) =
                binding.split_once('=').filter(|(n, p)| !n.trim().is_empty() && !p.is_empty())
            else {
                return Err(Error::usage(format!(
                    "--table {}: write NAME=PATH, as --table professors=data/professors.csv",
                    crate::error::shown(binding, 60)
                )));
            };
            if name.trim() != translation.table {
                return Err(Error::usage(format!(
                    "--table {}: the query reads FROM {}, not {}",
                    crate::error::shown(binding, 60),
                    crate::error::shown(&translation.table, 60),
                    crate::error::shown(name.trim(), 60)
                )));
            }
            bound = Some(PathBuf::from(path));
        }
        let mut input = self.input.clone();
        match (input.files.is_empty(), bound) {
            (false, Some(_)) => {
                return Err(Error::usage(
                    "FROM's table is bound by --table and FILE is given too: read it from one of them",
                ))
            }
            (false, None) => {}
            (true, Some(path)) => input.files = vec![path],
            (true, None) => {
                let table = translation.table.as_str();
                input.files =
                    vec![PathBuf::from(if table.eq_ignore_ascii_case("stdin") { "-" } else { table })];
            }
        }
        let run = cmd::run::RunRequest {
            workload: PathBuf::from(cmd::sql::WORKLOAD_NAME),
            format: self.output.format.into(),
            style: self.output.style(),
            plot: self.output.plot.clone(),
            confidence: self.output.confidence,
            ledger: self.ledger.flags(),
            input: input.flags(),
        };
        Ok(cmd::sql::Request { translation, explain: self.explain, run })
    }
}

/// `dpstat plan sql` as the request `cmd::sql::plan` solves.
pub fn plan_sql_request(args: &PlanSqlArgs) -> Result<cmd::sql::PlanRequest, Error> {
    let keys = args.keys.as_ref().map(|k| k.names().to_vec());
    Ok(cmd::sql::PlanRequest {
        translation: cmd::sql::translate(&args.query, keys.as_deref())?,
        rows: args.rows,
        confidence: args.confidence,
        format: args.format.into(),
        style: args.precision.style(),
    })
}

impl DescribeArgs {
    pub fn request(&self) -> cmd::describe::Request {
        cmd::describe::Request {
            columns: self.cols.iter().flat_map(|c| c.0.iter().cloned()).collect(),
            levels: self.levels.clone(),
            shares: self.shares.clone(),
            resolution: self.resolution,
            invalid: self.invalid,
            eps: self.eps.clone(),
            neighbours: self.neighbours.into(),
            filters: self.filters.clone(),
            person: self.person.flags(),
            format: self.format.into(),
            confidence: self.confidence,
            style: self.precision.style(),
            ledger: self.ledger.flags(),
            input: self.input.flags(),
        }
    }
}

impl BudgetArgs {
    pub fn request(&self) -> cmd::budget::Request {
        cmd::budget::Request {
            ledger: self.ledger.clone(),
            key: self.ledger_key.clone(),
            dataset: self.dataset.clone(),
            format: self.format.into(),
            file: self.file.clone(),
            delimiter: self.delimiter.unwrap_or_else(|| Delimiter::for_file(self.file.as_deref())).0,
        }
    }
}
