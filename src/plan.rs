//! From what the user typed (`cli.rs`) to a validated plan: every cross-flag rule is
//! checked here, before a single data row is read, so later stages never recheck.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::clamp::{Bins, Bounds, Categories, Finite, Keys, MAX_BINS};
use crate::cli::{self, Confidence, Format, InvalidPolicy, Neighbours};
use crate::epsilon::Epsilon;
use crate::error::InputError;
use crate::ledger::LedgerSpec;
use crate::query::bounds;
use crate::query::quantile::{Candidates, Level, QuantileSpec, DEFAULT_RESOLUTION, MAX_RESOLUTION};
use crate::query::{mean::MeanSpec, sum::SumSpec, variance::VarianceSpec};

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
    pub fn parse(text: &str, has_header: bool, flag: &str) -> Result<ColumnRef, InputError> {
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

/// `--by COL --keys k1,k2,...`: one release per public key, plus `other`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupSpec {
    pub column: ColumnRef,
    pub keys: Keys,
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
    Variance { column: ColumnRef, spec: VarianceSpec, invalid: InvalidPolicy },
    Histogram { column: ColumnRef, bins: BinSpec, invalid: InvalidPolicy },
    Quantile { column: ColumnRef, spec: QuantileSpec, invalid: InvalidPolicy, median: bool },
}

impl QueryPlan {
    pub fn name(&self) -> &'static str {
        match self {
            QueryPlan::Count => "count",
            QueryPlan::Sum { .. } => "sum",
            QueryPlan::Mean { .. } => "mean",
            QueryPlan::Variance { .. } => "variance",
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
    /// `--by`: one release per public key, each with the full ε.
    pub group: Option<GroupSpec>,
    pub query: QueryPlan,
    pub eps: Epsilon,
    pub neighbours: Neighbours,
    pub format: Format,
    pub confidence: Confidence,
    pub ledger: Option<LedgerSpec>,
    /// `--plot FILE.svg` (histograms): written after the release and any ledger charge.
    pub plot: Option<PathBuf>,
    /// Threads that may scan a file (`--threads`, default all cores).
    pub threads: usize,
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
        let csv = common.input.csv();
        let has_header = csv.has_header;
        let group = match (&common.by, &common.keys) {
            (Some(by), Some(keys)) => {
                Some(GroupSpec { column: ColumnRef::parse(by, has_header, "--by")?, keys: keys.clone() })
            }
            _ => None,
        };
        let query = validate_query(&cli.query, common, group.is_some())?;
        let plot = match &cli.query {
            cli::Query::Histogram(a) => a.plot.clone(),
            _ => None,
        };
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
        check_combination(&query, common.neighbours, !filters.is_empty(), group.is_some())
            .map_err(InputError)?;
        if group.is_some() && (common.format == Format::Chart || plot.is_some()) {
            return Err(InputError(
                "--format chart and --plot draw one histogram; with --by use --format text or json".into(),
            ));
        }
        if common.format == Format::Chart && !matches!(query, QueryPlan::Histogram { .. }) {
            return Err(InputError(format!(
                "--format chart draws the bars of a histogram; {} releases no bins: use --format text or --format json",
                query.name()
            )));
        }
        if let Some(path) = &plot {
            check_plot_path(path)?;
        }
        let source = common.input.source();
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
            csv,
            filters,
            group,
            query,
            eps: common.eps.clone(),
            neighbours: common.neighbours,
            format: common.format,
            confidence: common.confidence,
            ledger: ledger_spec(&common.ledger)?,
            plot,
            threads: common.input.thread_count(),
        })
    }
}

/// Rules across flags that no single flag can check. Shared with workload files.
pub fn check_combination(
    query: &QueryPlan,
    neighbours: Neighbours,
    filtered: bool,
    grouped: bool,
) -> Result<(), String> {
    if grouped {
        let private_bounds = matches!(
            query,
            QueryPlan::Sum { spec: Clamp::Private { .. }, .. }
                | QueryPlan::Mean { spec: Clamp::Private { .. }, .. }
                | QueryPlan::Histogram { bins: BinSpec::NumericPrivate { .. }, .. }
        );
        if private_bounds {
            return Err("--by needs --lower/--upper: bounds found privately are not split by group".into());
        }
        if matches!(query, QueryPlan::Quantile { .. }) {
            return Err(format!(
                "--by is not supported for {}; run it once per --where filter",
                query.name()
            ));
        }
    }
    if neighbours != Neighbours::Replace {
        return Ok(());
    }
    let needs_n =
        matches!(query, QueryPlan::Sum { .. } | QueryPlan::Mean { .. } | QueryPlan::Variance { .. });
    if filtered && needs_n {
        return Err(format!(
            "--where with --neighbours replace is not supported for {}: the filtered row count \
             would be private, so the sensitivity would not hold; use --neighbours add-remove",
            query.name()
        ));
    }
    if grouped && matches!(query, QueryPlan::Mean { .. } | QueryPlan::Variance { .. }) {
        return Err(format!(
            "--by with --neighbours replace is not supported for {}: each group's size would have to be \
             public, but a changed row can move between groups, so group sizes are private; \
             use --neighbours add-remove (the noisy count of each group is then part of the release)",
            query.name()
        ));
    }
    Ok(())
}

/// What every query's validation needs besides its own flags.
#[derive(Clone, Copy)]
struct Context<'a> {
    neighbours: Neighbours,
    eps: &'a Epsilon,
    has_header: bool,
    /// One release per `--by` group (changes a sum's sensitivity under replace).
    grouped: bool,
}

/// Clamping flags as typed.
#[derive(Clone, Copy)]
struct ClampArgs<'a> {
    lower: Option<Finite>,
    upper: Option<Finite>,
    bounds_eps: Option<&'a Epsilon>,
}

fn validate_query(query: &cli::Query, common: &cli::Common, grouped: bool) -> Result<QueryPlan, InputError> {
    let cx = Context {
        neighbours: common.neighbours,
        eps: &common.eps,
        has_header: !common.input.no_header,
        grouped,
    };
    match query {
        cli::Query::Count(_) => Ok(QueryPlan::Count),
        cli::Query::Sum(a) | cli::Query::Mean(a) => {
            let clamp = ClampArgs { lower: a.lower, upper: a.upper, bounds_eps: a.bounds_eps.as_ref() };
            numeric_plan(matches!(query, cli::Query::Mean(_)), &a.col, clamp, a.invalid, cx)
        }
        cli::Query::Variance(a) => {
            require_bounds("variance", a.lower, a.upper)?;
            variance_plan(&a.col, a.lower, a.upper, a.invalid, cx)
        }
        cli::Query::Histogram(a) => {
            let clamp = ClampArgs { lower: a.lower, upper: a.upper, bounds_eps: a.bounds_eps.as_ref() };
            histogram_plan(&a.col, a.bins, a.categories.as_ref(), clamp, a.invalid, cx)
        }
        cli::Query::Quantile(a) => {
            quantile_plan(&a.rank, a.levels.clone(), false, cx.neighbours, cx.has_header)
        }
        cli::Query::Median(a) => {
            quantile_plan(&a.rank, vec![Level::MEDIAN], true, cx.neighbours, cx.has_header)
        }
        _ => unreachable!("not a release; run() dispatches it before planning one"),
    }
}

/// A sum or a mean; its grid depends on ε, so the spec is built here, before any data is read.
fn numeric_plan(
    mean: bool,
    col: &str,
    clamp: ClampArgs,
    invalid: InvalidPolicy,
    cx: Context,
) -> Result<QueryPlan, InputError> {
    check_invalid_policy(invalid, cx.neighbours)?;
    let column = ColumnRef::parse(col, cx.has_header, "--col")?;
    let bounds = clamp_bounds(if mean { "mean" } else { "sum" }, clamp, cx.eps)?;
    Ok(if mean {
        let spec = match bounds {
            Clamp::Given(b) => Clamp::Given(MeanSpec::new(b, cx.neighbours, cx.eps).map_err(InputError)?),
            Clamp::Private { bounds_eps, rest } => Clamp::Private { bounds_eps, rest },
        };
        QueryPlan::Mean { column, spec, invalid }
    } else {
        let spec = match bounds {
            Clamp::Given(b) => {
                Clamp::Given(SumSpec::with_groups(b, cx.neighbours, cx.eps, cx.grouped).map_err(InputError)?)
            }
            Clamp::Private { bounds_eps, rest } => Clamp::Private { bounds_eps, rest },
        };
        QueryPlan::Sum { column, spec, invalid }
    })
}

fn variance_plan(
    col: &str,
    lower: Option<Finite>,
    upper: Option<Finite>,
    invalid: InvalidPolicy,
    cx: Context,
) -> Result<QueryPlan, InputError> {
    let bounds = require_bounds("variance", lower, upper)?;
    check_invalid_policy(invalid, cx.neighbours)?;
    let spec = VarianceSpec::new(bounds, cx.neighbours, cx.eps).map_err(InputError)?;
    Ok(QueryPlan::Variance { column: ColumnRef::parse(col, cx.has_header, "--col")?, spec, invalid })
}

fn histogram_plan(
    col: &str,
    bins: Option<usize>,
    categories: Option<&Categories>,
    clamp: ClampArgs,
    invalid: InvalidPolicy,
    cx: Context,
) -> Result<QueryPlan, InputError> {
    let bins = match (bins, categories) {
        (_, Some(c)) => BinSpec::Categories(c.clone()),
        (Some(k), None) if k == 0 || k >= MAX_BINS => {
            return Err(InputError(format!("--bins must be between 1 and {}", MAX_BINS - 1)));
        }
        (Some(k), None) => {
            check_invalid_policy(invalid, cx.neighbours)?;
            match clamp_bounds("histogram", clamp, cx.eps)? {
                Clamp::Given(b) => BinSpec::Numeric(Bins::new(b, k)),
                Clamp::Private { bounds_eps, rest } => BinSpec::NumericPrivate { bins: k, bounds_eps, rest },
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
    Ok(QueryPlan::Histogram { column: ColumnRef::parse(col, cx.has_header, "--col")?, bins, invalid })
}

/// Query flags as `dpstat plan` and workload files give them. Both validate them exactly as a
/// release would (the planner at every ε it tries). Bounds are required here: bounds found
/// privately depend on the data, so their accuracy cannot be planned, and a workload's queries
/// share one pass.
#[derive(Clone, Debug)]
pub enum QueryArgs {
    Count,
    Sum(String, Option<Finite>, Option<Finite>, InvalidPolicy),
    Mean(String, Option<Finite>, Option<Finite>, InvalidPolicy),
    Variance(String, Option<Finite>, Option<Finite>, InvalidPolicy),
    Histogram(String, Option<usize>, Option<Categories>, Option<Finite>, Option<Finite>, InvalidPolicy),
}

impl QueryArgs {
    /// The validated query at this ε (the grid of a real-valued query depends on ε).
    /// `grouped`: one release per `--by` group (changes sums under replace).
    pub fn validate(
        self,
        eps: &Epsilon,
        neighbours: Neighbours,
        has_header: bool,
        grouped: bool,
    ) -> Result<QueryPlan, InputError> {
        let cx = Context { neighbours, eps, has_header, grouped };
        let given = |lower, upper| ClampArgs { lower, upper, bounds_eps: None };
        match self {
            QueryArgs::Count => Ok(QueryPlan::Count),
            QueryArgs::Sum(col, lower, upper, invalid) => {
                require_bounds("sum", lower, upper)?;
                numeric_plan(false, &col, given(lower, upper), invalid, cx)
            }
            QueryArgs::Mean(col, lower, upper, invalid) => {
                require_bounds("mean", lower, upper)?;
                numeric_plan(true, &col, given(lower, upper), invalid, cx)
            }
            QueryArgs::Variance(col, lower, upper, invalid) => variance_plan(&col, lower, upper, invalid, cx),
            QueryArgs::Histogram(col, bins, categories, lower, upper, invalid) => {
                if bins.is_some() && categories.is_none() {
                    require_bounds("histogram", lower, upper)?;
                }
                histogram_plan(&col, bins, categories.as_ref(), given(lower, upper), invalid, cx)
            }
        }
    }
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
fn clamp_bounds(query: &str, clamp: ClampArgs, eps: &Epsilon) -> Result<Clamp<Bounds>, InputError> {
    match (clamp.lower, clamp.upper) {
        (Some(l), Some(u)) if clamp.bounds_eps.is_none() => {
            Ok(Clamp::Given(Bounds::new(l, u).map_err(InputError)?))
        }
        (Some(_), Some(_)) => Err(InputError(
            "--bounds-eps pays for finding bounds privately; it has no use with --lower/--upper".into(),
        )),
        (None, None) => {
            let (bounds_eps, rest) = bounds::split(eps, clamp.bounds_eps).map_err(InputError)?;
            Ok(Clamp::Private { bounds_eps, rest })
        }
        (lower, upper) => match require_bounds(query, lower, upper) {
            Err(InputError(why)) => Err(InputError(format!(
                "{why}; or leave out both to spend part of --eps finding them privately"
            ))),
            Ok(_) => unreachable!("one bound is missing here"),
        },
    }
}

/// The ledger flags make sense only together.
pub fn ledger_spec(args: &cli::LedgerArgs) -> Result<Option<LedgerSpec>, InputError> {
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

/// `--plot` is written after the release and any ledger charge, so a path that cannot be
/// written is refused now, before any data is read or budget spent.
fn check_plot_path(path: &Path) -> Result<(), InputError> {
    let shown = path.display();
    if path.as_os_str().is_empty() || path.file_name().is_none() {
        return Err(InputError(format!(
            "--plot '{shown}' is not a file name; give one like --plot chart.svg"
        )));
    }
    if path.is_dir() {
        return Err(InputError(format!(
            "--plot '{shown}' is a directory; give a file name like --plot chart.svg"
        )));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(InputError(format!(
            "--plot '{shown}': the directory '{}' does not exist; create it or point --plot elsewhere",
            parent.display()
        )));
    }
    Ok(())
}

/// Bounds are flags, never statistics of the data; the message says why and how to give them.
pub(crate) fn require_bounds(
    query: &str,
    lower: Option<Finite>,
    upper: Option<Finite>,
) -> Result<Bounds, InputError> {
    let missing = match (lower, upper) {
        (Some(l), Some(u)) => return Bounds::new(l, u).map_err(InputError),
        (Some(_), None) => "--upper U is missing",
        (None, Some(_)) => "--lower L is missing",
        (None, None) => "--lower L and --upper U are missing",
    };
    Err(InputError(format!(
        "{query} needs public clamping bounds and {missing}: add --lower L --upper U with the range \
         you expect the values to lie in (e.g. --lower 0 --upper 120 for ages). They fix how much one \
         row can change the result; dpstat never takes them from the data, because the column's min \
         or max would reveal the rows that hold them"
    )))
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
