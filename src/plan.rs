//! From what the user typed (`cli.rs`) to a validated plan: every cross-flag rule is
//! checked here, before a single data row is read, so later stages never recheck.

use std::path::PathBuf;
use std::sync::Arc;

use crate::clamp::{Bins, Bounds, Categories, Finite, MAX_BINS};
use crate::cli::{self, Common, Confidence, Format, InvalidPolicy, Neighbours};
use crate::epsilon::Epsilon;
use crate::error::InputError;
use crate::ledger::LedgerSpec;
use crate::query::bounds;
use crate::query::quantile::{Candidates, Level, QuantileSpec, DEFAULT_RESOLUTION, MAX_RESOLUTION};
use crate::query::{mean::MeanSpec, sum::SumSpec};

/// Where the CSV comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Stdin,
    Path(PathBuf),
}

impl Source {
    /// How messages name the input.
    pub fn display_name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_string(),
            Source::Path(p) => p.display().to_string(),
        }
    }
}

/// A column as given by flag: a header name, or a 1-based index with --no-header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnRef {
    Name(String),
    /// 0-based after validation of the user's 1-based number.
    Index(usize),
}

impl ColumnRef {
    fn parse(text: &str, has_header: bool, flag: &str) -> Result<ColumnRef, InputError> {
        if has_header {
            return Ok(ColumnRef::Name(text.to_string()));
        }
        match text.trim().parse::<usize>() {
            Ok(i) if i >= 1 => Ok(ColumnRef::Index(i - 1)),
            _ => Err(InputError(format!("{flag} '{text}': with --no-header, columns are 1-based numbers"))),
        }
    }

    pub fn label(&self) -> String {
        match self {
            ColumnRef::Name(n) => n.clone(),
            ColumnRef::Index(i) => (i + 1).to_string(),
        }
    }
}

/// How to read the CSV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    pub delimiter: u8,
    pub has_header: bool,
}

/// A `--where` filter with its column resolved to a reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterSpec {
    pub column: ColumnRef,
    pub value: String,
}

/// The histogram's public bins.
#[derive(Clone, Debug, PartialEq)]
pub enum BinSpec {
    Numeric(Bins),
    /// K equal-width bins over bounds found privately with `bounds_eps`; the bins get `rest`.
    NumericPrivate {
        bins: usize,
        bounds_eps: Epsilon,
        rest: Epsilon,
    },
    Categories(Categories),
}

/// The query and its validated parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryPlan {
    Count,
    Sum { column: ColumnRef, spec: Clamp<SumSpec>, invalid: InvalidPolicy },
    Mean { column: ColumnRef, spec: Clamp<MeanSpec>, invalid: InvalidPolicy },
    Histogram { column: ColumnRef, bins: BinSpec, invalid: InvalidPolicy },
    Quantile { column: ColumnRef, spec: QuantileSpec, invalid: InvalidPolicy, median: bool },
}

impl QueryPlan {
    pub fn name(&self) -> &'static str {
        match self {
            QueryPlan::Count => "count",
            QueryPlan::Sum { .. } => "sum",
            QueryPlan::Mean { .. } => "mean",
            QueryPlan::Histogram { .. } => "histogram",
            QueryPlan::Quantile { median: false, .. } => "quantile",
            QueryPlan::Quantile { median: true, .. } => "median",
        }
    }
}

/// Everything `run` needs, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub source: Source,
    pub csv: CsvOptions,
    pub filters: Vec<FilterSpec>,
    pub query: QueryPlan,
    pub eps: Epsilon,
    pub neighbours: Neighbours,
    pub format: Format,
    pub confidence: Confidence,
    pub ledger: Option<LedgerSpec>,
}

/// Clamping bounds: given by flags, or to be found privately with a share of ε.
#[derive(Clone, Debug, PartialEq)]
pub enum Clamp<S> {
    Given(S),
    Private { bounds_eps: Epsilon, rest: Epsilon },
}

impl Plan {
    pub fn from_cli(cli: cli::Cli) -> Result<Plan, InputError> {
        let common = cli.query.common().ok_or_else(|| InputError("not a query".into()))?;
        let has_header = !common.no_header;
        let query = validate_query(&cli.query, common)?;
        let filters = common
            .filters
            .iter()
            .map(|f| {
                Ok(FilterSpec {
                    column: ColumnRef::parse(&f.column, has_header, "--where")?,
                    value: f.value.clone(),
                })
            })
            .collect::<Result<Vec<_>, InputError>>()?;
        if common.neighbours == Neighbours::Replace
            && !filters.is_empty()
            && matches!(query, QueryPlan::Sum { .. } | QueryPlan::Mean { .. })
        {
            return Err(InputError(format!(
                "--where with --neighbours replace is not supported for {}: the filtered row count \
                 would be private, so the sensitivity would not hold; use --neighbours add-remove",
                query.name()
            )));
        }
        let source = match &common.file {
            None => Source::Stdin,
            Some(p) if p.as_os_str() == "-" => Source::Stdin,
            Some(p) => Source::Path(p.clone()),
        };
        if source == Source::Stdin
            && matches!(&query, QueryPlan::Histogram { bins: BinSpec::NumericPrivate { .. }, .. })
        {
            return Err(InputError(
                "a numeric histogram without --lower/--upper reads the data twice (bounds, then bins), \
                 so it needs a FILE, not standard input; or give --lower L --upper U"
                    .into(),
            ));
        }
        Ok(Plan {
            source,
            csv: CsvOptions { delimiter: common.delimiter.0, has_header },
            filters,
            query,
            eps: common.eps.clone(),
            neighbours: common.neighbours,
            format: common.format,
            confidence: common.confidence,
            ledger: ledger_spec(&common.ledger)?,
        })
    }
}

fn validate_query(query: &cli::Query, common: &Common) -> Result<QueryPlan, InputError> {
    let neighbours = common.neighbours;
    let has_header = !common.no_header;
    let column = |text: &str| ColumnRef::parse(text, has_header, "--col");
    Ok(match query {
        cli::Query::Count(_) => QueryPlan::Count,
        cli::Query::Sum(a) => {
            check_invalid_policy(a.invalid, neighbours)?;
            let spec = match clamp_bounds(a.lower, a.upper, a.bounds_eps.as_ref(), &common.eps)? {
                Clamp::Given(b) => {
                    Clamp::Given(SumSpec::new(b, neighbours, &common.eps).map_err(InputError)?)
                }
                Clamp::Private { bounds_eps, rest } => Clamp::Private { bounds_eps, rest },
            };
            QueryPlan::Sum { column: column(&a.col)?, spec, invalid: a.invalid }
        }
        cli::Query::Mean(a) => {
            check_invalid_policy(a.invalid, neighbours)?;
            let spec = match clamp_bounds(a.lower, a.upper, a.bounds_eps.as_ref(), &common.eps)? {
                Clamp::Given(b) => {
                    Clamp::Given(MeanSpec::new(b, neighbours, &common.eps).map_err(InputError)?)
                }
                Clamp::Private { bounds_eps, rest } => Clamp::Private { bounds_eps, rest },
            };
            QueryPlan::Mean { column: column(&a.col)?, spec, invalid: a.invalid }
        }
        cli::Query::Histogram(a) => {
            let bins = match (a.bins, &a.categories) {
                (_, Some(c)) => BinSpec::Categories(c.clone()),
                (Some(k), None) if k == 0 || k >= MAX_BINS => {
                    return Err(InputError(format!("--bins must be between 1 and {}", MAX_BINS - 1)));
                }
                (Some(k), None) => {
                    check_invalid_policy(a.invalid, neighbours)?;
                    match clamp_bounds(a.lower, a.upper, a.bounds_eps.as_ref(), &common.eps)? {
                        Clamp::Given(b) => BinSpec::Numeric(Bins::new(b, k)),
                        Clamp::Private { bounds_eps, rest } => {
                            BinSpec::NumericPrivate { bins: k, bounds_eps, rest }
                        }
                    }
                }
                (None, None) => {
                    return Err(InputError(
                        "histogram needs public bins: --categories a,b,c or --bins K (with --lower L --upper U, \
                         or without them to find bounds privately)"
                            .into(),
                    ));
                }
            };
            QueryPlan::Histogram { column: column(&a.col)?, bins, invalid: a.invalid }
        }
        cli::Query::Quantile(a) => quantile_plan(&a.rank, a.levels.clone(), false, neighbours, has_header)?,
        cli::Query::Median(a) => quantile_plan(&a.rank, vec![Level::MEDIAN], true, neighbours, has_header)?,
        cli::Query::Budget(_) => unreachable!("`dpstat budget` has no Common flags"),
    })
}

fn quantile_plan(
    a: &cli::RankArgs,
    levels: Vec<Level>,
    median: bool,
    neighbours: Neighbours,
    has_header: bool,
) -> Result<QueryPlan, InputError> {
    check_invalid_policy(a.invalid, neighbours)?;
    let candidates = match (a.lower, a.upper, a.resolution) {
        (_, _, Some(k)) if !(2..=MAX_RESOLUTION).contains(&k) => {
            return Err(InputError(format!(
                "--resolution must be between 2 and {MAX_RESOLUTION} candidates"
            )));
        }
        (Some(l), Some(u), k) => {
            Candidates::linear(Bounds::new(l, u).map_err(InputError)?, k.unwrap_or(DEFAULT_RESOLUTION))
        }
        _ => Candidates::log_scale(),
    };
    let mut unique = levels.clone();
    unique.sort_by_key(|l| (l.numer * 1_000_000_000_000 / l.denom, l.denom));
    unique.dedup();
    if unique.len() != levels.len() {
        return Err(InputError("--q lists the same level twice".into()));
    }
    let spec = QuantileSpec { candidates: Arc::new(candidates), levels, neighbours };
    let column = ColumnRef::parse(&a.col, has_header, "--col")?;
    Ok(QueryPlan::Quantile { column, spec, invalid: a.invalid, median })
}

/// Both bounds, or neither (then a share of ε finds them privately); never one.
fn clamp_bounds(
    lower: Option<Finite>,
    upper: Option<Finite>,
    bounds_eps: Option<&Epsilon>,
    eps: &Epsilon,
) -> Result<Clamp<Bounds>, InputError> {
    match (lower, upper) {
        (Some(l), Some(u)) if bounds_eps.is_none() => {
            Ok(Clamp::Given(Bounds::new(l, u).map_err(InputError)?))
        }
        (Some(_), Some(_)) => Err(InputError(
            "--bounds-eps pays for finding bounds privately; it has no use with --lower/--upper".into(),
        )),
        (None, None) => {
            let (bounds_eps, rest) = bounds::split(eps, bounds_eps).map_err(InputError)?;
            Ok(Clamp::Private { bounds_eps, rest })
        }
        _ => Err(InputError(
            "give both --lower and --upper (bounds fix how much one row can change the result), \
             or neither to spend part of --eps finding them privately"
                .into(),
        )),
    }
}

/// The ledger flags make sense only together.
fn ledger_spec(args: &cli::LedgerArgs) -> Result<Option<LedgerSpec>, InputError> {
    let Some(path) = &args.ledger else {
        let stray = [
            (args.budget.is_some(), "--budget"),
            (args.change_budget, "--change-budget"),
            (args.dataset.is_some(), "--dataset"),
        ];
        return match stray.iter().find(|(given, _)| *given) {
            Some((_, flag)) => {
                Err(InputError(format!("{flag} needs a ledger: add --ledger PATH (or set DPSTAT_LEDGER)")))
            }
            None => Ok(None),
        };
    };
    if args.change_budget && args.budget.is_none() {
        return Err(InputError("--change-budget needs the new total: add --budget TOTAL".into()));
    }
    if args.dataset.as_deref().is_some_and(|d| d.trim().is_empty()) {
        return Err(InputError("--dataset must not be empty".into()));
    }
    Ok(Some(LedgerSpec {
        path: path.clone(),
        budget: args.budget.clone(),
        change_budget: args.change_budget,
        dataset: args.dataset.clone(),
    }))
}

/// `--invalid skip` makes the number of rows depend on the data, which `replace` declares public.
fn check_invalid_policy(invalid: InvalidPolicy, neighbours: Neighbours) -> Result<(), InputError> {
    if invalid == InvalidPolicy::Skip && neighbours == Neighbours::Replace {
        return Err(InputError(
            "--invalid skip is refused with --neighbours replace: dropping rows would make the \
             public row count depend on the data; use --invalid impute=V or --neighbours add-remove"
                .into(),
        ));
    }
    Ok(())
}
