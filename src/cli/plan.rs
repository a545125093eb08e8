//! `dpstat plan QUERY`: each planned query's flags, less the ones about data.

use clap::{Args, Subcommand};

use std::path::PathBuf;

use crate::cli::values::{number, Format, Neighbours, Noise, PrecisionArgs};
use crate::numeric::bins::{Categories, Keys};
use crate::numeric::bounds::Finite;
use crate::privacy::accuracy::Confidence;
use crate::privacy::delta::Delta;
use crate::privacy::epsilon::Epsilon;
use crate::query::options::Level;

/// `dpstat plan QUERY`: the query's own flags, less the ones about data.
#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(subcommand)]
    pub query: PlanQuery,
}

#[derive(Subcommand, Debug)]
pub enum PlanQuery {
    /// Plan a count: Δ = 1 under both privacy units.
    #[command(after_help = "Example:\n  dpstat plan count --eps 0.1\n  dpstat plan count --error 10")]
    Count(PlanTarget),
    /// Plan a sum over [L, U]: Δ = max(|L|,|U|) (add-remove), U − L (replace).
    #[command(after_help = "Example:\n  dpstat plan sum --lower 0 --upper 200000 --error 500000")]
    Sum(PlanNumericArgs),
    /// Plan a mean over [L, U]; the bound depends on the row count, so give --rows N.
    #[command(after_help = "Examples:\n  \
        dpstat plan mean --lower 0 --upper 100 --neighbours replace --rows 200 --eps 1\n  \
        dpstat plan mean --lower 0 --upper 100 --rows 5000 --error 0.5")]
    Mean(PlanMeanArgs),
    /// Plan a variance over [L, U]; the bound depends on the row count (give --rows N) and on the
    /// data: the plan states the largest bound a release with that count can state.
    #[command(after_help = "Example:\n  dpstat plan variance --lower 0 --upper 100 --rows 10000 --eps 1")]
    Variance(PlanMeanArgs),
    /// Plan a histogram: the bound is per bin, L1 Δ = 1 (add-remove), 2 (replace).
    #[command(after_help = "Example:\n  dpstat plan histogram --bins 8 --lower 0 --upper 80 --eps 0.5")]
    Histogram(PlanHistogramArgs),
    /// Plan quantiles: the rank bound (in rows) a release states. How far the value is from the
    /// true quantile depends on the data and cannot be planned.
    #[command(
        after_help = "Examples:\n  dpstat plan quantile --q 0.5,0.9 --lower 0 --upper 200000 --eps 1\n  \
        dpstat plan quantile --q 0.9 --lower 0 --upper 120 --error 10"
    )]
    Quantile(PlanQuantileArgs),
    /// Plan a median: the rank bound (in rows) a release states, as for quantile --q 0.5.
    #[command(after_help = "Example:\n  dpstat plan median --lower 0 --upper 120 --eps 0.5")]
    Median(PlanRankArgs),
    /// Not planned: a covariance's error bound depends on the data (its noisy count, both
    /// means and the mean product), not on ε, bounds and n alone. Says so, and what to plan.
    Covariance(PlanTarget),
    /// Not planned: a slope's error bound depends on the data (the noisy variance of x divides
    /// it). Says so, and what to plan.
    Regress(PlanTarget),
    /// Compare Laplace and Gaussian noise for every query of a workload file at the same
    /// (ε, δ): the workload's total ε, and --delta (or the file's delta).
    #[command(after_help = "Example:\n  dpstat plan run fixtures/compose_shares.toml --delta 1e-6")]
    Run(PlanRunArgs),
    /// The error bound each aggregate of a dpstat sql query would state, at its share of the
    /// query's epsilon (no data read).
    #[command(after_help = "Example (QUERY in double quotes, as dpstat sql takes it; its groups' keys \
        from WHERE key IN (...) or --keys, not both):\n  \
        dpstat plan sql QUERY --rows 1000")]
    Sql(PlanSqlArgs),
}

/// `dpstat plan sql "QUERY"`: the query, its public keys, and how to print.
#[derive(Args, Debug)]
pub struct PlanSqlArgs {
    /// The query, as dpstat sql takes it (FROM is not read).
    #[arg(value_name = "QUERY")]
    pub query: String,
    /// The public keys of the GROUP BY column, as dpstat sql --keys.
    #[arg(long, value_name = "K1,K2,...")]
    pub keys: Option<Keys>,
    /// Assumed row count for the means (as for a mean's plan, --rows).
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,
    /// Level of the accuracy bounds, in (0, 1).
    #[arg(long, value_name = "C", default_value = "0.95")]
    pub confidence: Confidence,
    /// Output format: text or json.
    #[arg(short = 'f', short_alias = 'o', long, value_enum, default_value_t)]
    pub format: Format,
    /// How the text rounds the bounds, as a release's.
    #[command(flatten)]
    pub precision: PrecisionArgs,
}

/// `dpstat plan run WORKLOAD`: the workload, the δ to compare at, and how to print.
#[derive(Args, Debug)]
pub struct PlanRunArgs {
    /// Workload file (TOML), the same as a workload run takes.
    #[arg(value_name = "WORKLOAD")]
    pub workload: PathBuf,
    /// δ of the comparison (default: the workload's own delta, if it has noise = "gaussian").
    #[arg(long, value_name = "D")]
    pub delta: Option<Delta>,
    /// Assumed row count for the workload's means (as for a mean's plan, --rows).
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,
    /// Level of the accuracy bounds, in (0, 1).
    #[arg(long, value_name = "C", default_value = "0.95")]
    pub confidence: Confidence,
    /// Output format: text, csv (one header and the plan as a row, a row per query for plan run;
    /// the other lines on stderr) or json.
    #[arg(short = 'f', short_alias = 'o', long, value_enum, default_value_t)]
    pub format: Format,
    /// How the text rounds the bounds, as a release's (csv and json have them in full).
    #[command(flatten)]
    pub precision: PrecisionArgs,
}

/// What to solve for, and how to state it.
#[derive(Args, Debug)]
pub struct PlanTarget {
    /// ε to plan for: prints the error bound a release at this ε would state.
    #[arg(short = 'e', long, visible_alias = "epsilon", value_name = "E")]
    pub eps: Option<Epsilon>,
    /// Target error bound (in the statistic's units): prints the smallest ε, to 3 significant
    /// digits, whose bound is at most this.
    #[arg(long, value_name = "E", conflicts_with = "eps", allow_hyphen_values = true)]
    pub error: Option<Finite>,
    /// Privacy unit: add-remove (one row added or removed) or replace (one row changed; n public).
    #[arg(long, value_enum, value_name = "UNIT", default_value_t)]
    pub neighbours: Neighbours,
    /// Noise to plan: laplace (pure ε-DP) or gaussian (ρ from --eps and --delta, rounded down).
    #[arg(long, value_enum, value_name = "NOISE", default_value_t)]
    pub noise: Noise,
    /// δ: with it, the plan also compares Laplace at ε with Gaussian at the same (ε, δ) and says
    /// which gives less error; --noise gaussian needs it.
    #[arg(long, value_name = "D")]
    pub delta: Option<Delta>,
    /// Level of the accuracy bound, in (0, 1).
    #[arg(long, value_name = "C", default_value = "0.95")]
    pub confidence: Confidence,
    /// Output format: text, csv (one header and the plan as a row, a row per query for plan run;
    /// the other lines on stderr) or json.
    #[arg(short = 'f', short_alias = 'o', long, value_enum, default_value_t)]
    pub format: Format,
    /// Plan a release per person (--privacy-id) keeping at most K rows each, for every K listed
    /// (e.g. 1,2,5,10): the error bound (or, with --error, the ε) at each K. `auto` (with --eps)
    /// plans the release left after auto's tenth of ε at each K listed (or 1,10,100,1000).
    /// A mean's --rows is then the rows kept (at most K per person), taken as the same at
    /// every K.
    #[arg(long, value_name = "K1,K2,...|auto", value_delimiter = ',')]
    pub max_rows_per_id: Vec<crate::cli::values::RowsPerId>,
    /// Plan one release per group of --by COL (a label) over --keys: each group's bound, with
    /// --max-rows-per-id at the factor of the person's bounds across groups.
    #[arg(long, value_name = "COL", requires = "keys")]
    pub by: Option<String>,
    /// The public keys of --by (the plan counts them, and `other`).
    #[arg(long, value_name = "K1,K2,...", requires = "by")]
    pub keys: Option<crate::numeric::bins::Keys>,
    /// With --by and --max-rows-per-id: the most groups one person counts in (default: every
    /// group, which costs no noise while --max-rows-per-group is K).
    #[arg(long, value_name = "G", requires = "by")]
    pub max_groups_per_id: Option<u32>,
    /// With --by and --max-rows-per-id: the most rows of one person in one group (default K).
    #[arg(long, value_name = "K", requires = "by")]
    pub max_rows_per_group: Option<u32>,
    /// How the text rounds the bounds and scales, as a release's (csv and json have them in
    /// full).
    #[command(flatten)]
    pub precision: PrecisionArgs,
}

/// `dpstat plan sum|mean`: the bounds, as the query takes them.
#[derive(Args, Debug)]
pub struct PlanNumericArgs {
    /// Column name, only to label the plan (no data is read).
    #[arg(short = 'c', long, visible_alias = "column", visible_short_alias = 's', value_name = "COL")]
    pub col: Option<String>,
    /// Lower clamping bound L, as the query would take it.
    #[arg(short = 'l', long, value_name = "L", allow_hyphen_values = true)]
    pub lower: Option<Finite>,
    /// Upper clamping bound U, as the query would take it.
    #[arg(short = 'u', long, value_name = "U", allow_hyphen_values = true)]
    pub upper: Option<Finite>,
    #[command(flatten)]
    pub target: PlanTarget,
}

#[derive(Args, Debug)]
pub struct PlanMeanArgs {
    #[command(flatten)]
    pub numeric: PlanNumericArgs,
    /// Assumed row count n: public under replace; under add-remove the plan assumes the noisy
    /// count comes out at n.
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,
}

#[derive(Args, Debug)]
pub struct PlanHistogramArgs {
    /// Column name, only to label the plan (no data is read).
    #[arg(short = 'c', long, visible_alias = "column", visible_short_alias = 's', value_name = "COL")]
    pub col: Option<String>,
    /// Numeric histogram: K equal-width bins over [L, U].
    #[arg(long, value_name = "K", conflicts_with = "categories")]
    pub bins: Option<usize>,
    /// Categorical histogram over this public list (plus the bin `other`); a category with a
    /// comma or a quote goes in double quotes: '"Smith, Ann",Lee'.
    #[arg(long, value_name = "A,B,...")]
    pub categories: Option<Categories>,
    /// Lower edge of the first bin (numeric histogram).
    #[arg(short = 'l', long, value_name = "L", allow_hyphen_values = true, conflicts_with = "categories")]
    pub lower: Option<Finite>,
    /// Upper edge of the last bin (numeric histogram).
    #[arg(short = 'u', long, value_name = "U", allow_hyphen_values = true, conflicts_with = "categories")]
    pub upper: Option<Finite>,
    #[command(flatten)]
    pub target: PlanTarget,
}

/// `dpstat plan median`: the candidates, as the query takes them.
#[derive(Args, Debug)]
pub struct PlanRankArgs {
    /// Column name, only to label the plan (no data is read).
    #[arg(short = 'c', long, visible_alias = "column", visible_short_alias = 's', value_name = "NAME")]
    pub col: Option<String>,
    /// Lowest candidate L, as the query would take it (required: the bounds-free candidates'
    /// accuracy depends on the data, so they cannot be planned).
    #[arg(short = 'l', long, value_name = "L", allow_hyphen_values = true, requires = "upper")]
    pub lower: Option<Finite>,
    /// Highest candidate U.
    #[arg(short = 'u', long, value_name = "U", allow_hyphen_values = true, requires = "lower")]
    pub upper: Option<Finite>,
    /// Number of evenly spaced candidates over [L, U], 2 to 1000001 (default: round multiples of a
    /// step 1, 2 or 5 times a power of ten, every integer for integer bounds at least 20
    /// apart).
    #[arg(long, value_name = "K", requires = "lower")]
    pub resolution: Option<usize>,
    #[command(flatten)]
    pub target: PlanTarget,
}

/// `dpstat plan quantile`: the levels and the candidates.
#[derive(Args, Debug)]
pub struct PlanQuantileArgs {
    /// Quantile level(s) in (0, 1), exact decimals; several split ε evenly.
    #[arg(short = 'q', long = "q", value_name = "Q", required = true, value_delimiter = ',', value_parser = number::<Level>)]
    pub levels: Vec<Level>,
    #[command(flatten)]
    pub rank: PlanRankArgs,
}
