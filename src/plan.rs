//! From what the user typed (`cli.rs`) to a validated plan: every cross-flag rule is
//! checked here, before a single data row is read, so later stages never recheck.

use std::path::PathBuf;

use crate::clamp::{Bins, Bounds, Categories, Finite, MAX_BINS};
use crate::cli::{self, Common, Confidence, Format, InvalidPolicy, Neighbours, Threads};
use crate::epsilon::Epsilon;
use crate::error::InputError;
use crate::ledger::LedgerSpec;
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
    Categories(Categories),
}

/// The query and its validated parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryPlan {
    Count,
    Sum { column: ColumnRef, spec: SumSpec, invalid: InvalidPolicy },
    Mean { column: ColumnRef, spec: MeanSpec, invalid: InvalidPolicy },
    Histogram { column: ColumnRef, bins: BinSpec, invalid: InvalidPolicy },
}

impl QueryPlan {
    pub fn name(&self) -> &'static str {
        match self {
            QueryPlan::Count => "count",
            QueryPlan::Sum { .. } => "sum",
            QueryPlan::Mean { .. } => "mean",
            QueryPlan::Histogram { .. } => "histogram",
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
    /// Threads that may scan a file (`--threads`, default all cores).
    pub threads: usize,
}

impl Plan {
    pub fn from_cli(cli: cli::Cli) -> Result<Plan, InputError> {
        let (common, query) = match cli.query {
            cli::Query::Count(a) => (a.common, QueryArgs::Count),
            cli::Query::Sum(a) => (a.common, QueryArgs::Sum(a.col, a.lower, a.upper, a.invalid)),
            cli::Query::Mean(a) => (a.common, QueryArgs::Mean(a.col, a.lower, a.upper, a.invalid)),
            cli::Query::Histogram(a) => {
                (a.common, QueryArgs::Histogram(a.col, a.bins, a.categories, a.lower, a.upper, a.invalid))
            }
            cli::Query::Budget(_) => unreachable!("`dpstat budget` is not a query; run() dispatches it"),
        };
        let has_header = !common.no_header;
        let query = query.validate(&common, has_header)?;
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
        let ledger = ledger_spec(&common.ledger)?;
        let source = match &common.file {
            None => Source::Stdin,
            Some(p) if p.as_os_str() == "-" => Source::Stdin,
            Some(p) => Source::Path(p.clone()),
        };
        Ok(Plan {
            source,
            csv: CsvOptions { delimiter: common.delimiter.0, has_header },
            filters,
            query,
            eps: common.eps,
            neighbours: common.neighbours,
            format: common.format,
            confidence: common.confidence,
            ledger,
            threads: common.threads.unwrap_or_else(Threads::all_cores).get(),
        })
    }
}

/// Query flags before validation.
enum QueryArgs {
    Count,
    Sum(String, Option<Finite>, Option<Finite>, InvalidPolicy),
    Mean(String, Option<Finite>, Option<Finite>, InvalidPolicy),
    Histogram(String, Option<usize>, Option<Categories>, Option<Finite>, Option<Finite>, InvalidPolicy),
}

impl QueryArgs {
    fn validate(self, common: &Common, has_header: bool) -> Result<QueryPlan, InputError> {
        let neighbours = common.neighbours;
        let column = |text: &str| ColumnRef::parse(text, has_header, "--col");
        Ok(match self {
            QueryArgs::Count => QueryPlan::Count,
            QueryArgs::Sum(col, lower, upper, invalid) => {
                let bounds = require_bounds("sum", lower, upper)?;
                check_invalid_policy(invalid, neighbours)?;
                let spec = SumSpec::new(bounds, neighbours, &common.eps).map_err(InputError)?;
                QueryPlan::Sum { column: column(&col)?, spec, invalid }
            }
            QueryArgs::Mean(col, lower, upper, invalid) => {
                let bounds = require_bounds("mean", lower, upper)?;
                check_invalid_policy(invalid, neighbours)?;
                let spec = MeanSpec::new(bounds, neighbours, &common.eps).map_err(InputError)?;
                QueryPlan::Mean { column: column(&col)?, spec, invalid }
            }
            QueryArgs::Histogram(col, bins, categories, lower, upper, invalid) => {
                let bins = match (bins, categories) {
                    (_, Some(c)) => BinSpec::Categories(c),
                    (Some(0), None) => {
                        return Err(InputError("--bins must be at least 1".into()));
                    }
                    (Some(k), None) if k >= MAX_BINS => {
                        return Err(InputError(format!("--bins must be below {MAX_BINS}")));
                    }
                    (Some(k), None) => {
                        check_invalid_policy(invalid, neighbours)?;
                        BinSpec::Numeric(Bins::new(require_bounds("histogram", lower, upper)?, k))
                    }
                    (None, None) => {
                        return Err(InputError(
                            "histogram needs public bins: --categories a,b,c or --bins K with --lower L --upper U"
                                .into(),
                        ));
                    }
                };
                QueryPlan::Histogram { column: column(&col)?, bins, invalid }
            }
        })
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

fn require_bounds(query: &str, lower: Option<Finite>, upper: Option<Finite>) -> Result<Bounds, InputError> {
    match (lower, upper) {
        (Some(l), Some(u)) => Bounds::new(l, u).map_err(InputError),
        _ => Err(InputError(format!(
            "{query} needs clamping bounds --lower L --upper U: they fix how much one row can \
             change the result, and taking them from the data would leak it"
        ))),
    }
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
