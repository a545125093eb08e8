//! The command line as the user typed it (clap derive), and nothing else: the only module
//! that knows clap's types. Domain checks run in the value parsers of the domain types
//! (`Epsilon`, `Finite`, `Level`, … implement `FromStr`), so a parsed `Cli` already holds a
//! valid ε, finite bounds and so on; each subcommand's flags then become the request its
//! `cmd` module validates across flags ([`release_request`], [`plan_request`], …).

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cmd;
use crate::cmd::release::InputFlags;
use crate::data::cell::InvalidPolicy;
use crate::data::source::{CsvOptions, Filter, Source};
use crate::error::Error;
use crate::numeric::bins::{Categories, Keys};
use crate::numeric::bounds::Finite;
use crate::privacy::accuracy::Confidence;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::ledger::{Budget, LedgerFlags};
use crate::privacy::unit;
use crate::query::options::{Level, Options};
use crate::report::text;

/// `dpstat --version`: the version and the build facts a privacy review asks about.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\nrandomness: ChaCha20 seeded from the operating system's CSPRNG, once per run; \
     no entropy is an error, never a fallback",
    "\nnoise:      exact discrete Laplace sampler (Canonne, Kamath, Steinke 2020), integer and \
     rational arithmetic only, no floating point",
    "\nsums:       exact fixed-point on a power-of-two grid chosen from the flags, never from the data",
    "\ntest hook:  DPSTAT_INSECURE_SEED=<u64> makes the noise reproducible and NOT private; \
     every run with it warns on stderr"
);

#[derive(Parser, Debug)]
#[command(
    name = "dpstat",
    version,
    long_version = LONG_VERSION,
    about = "Differentially private statistics from a CSV file, with exact noise",
    long_about = "Differentially private statistics from a CSV file, with exact noise.\n\n\
        Reads a CSV (FILE, or standard input when FILE is - or absent) in one streaming pass, \
        computes the statistic exactly on clamped values, adds discrete Laplace noise scaled to \
        its sensitivity, and prints the noisy release. Every release is pure ε-DP for the \
        privacy unit given by --neighbours.",
    after_help = "Start with `dpstat plan …` to see what error an ε buys (no data read), then run the query.\n\
        `dpstat QUERY --help` shows each query's sensitivity and a worked example.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub query: Query,
}

const COUNT_HELP: &str = "\
Sensitivity (noise: discrete Laplace on the integers, scale Δ/ε):
  add-remove  Δ = 1   one row more or less moves the count by 1
  replace     Δ = 1   a changed row can start or stop matching --where

Worked example:
  dpstat count --where urban_rural=2 --eps 0.1 people.csv
    Δ = 1, scale = 1/0.1 = 10: the printed count is within ±30 of the true count
    with probability 0.95 (`dpstat plan count --eps 0.1` says the same without data).";

const SUM_HELP: &str = "\
Sensitivity (values clamped to [L, U]; noise: discrete Laplace of scale Δ/ε on a 2^k grid):
  add-remove  Δ = max(|L|, |U|)   a row added or removed moves the sum by its clamped value
  replace     Δ = U − L           a row's value changes anywhere within [L, U]

Worked example:
  dpstat sum --col income --lower 0 --upper 200000 --eps 0.5 people.csv
    add-remove: Δ = max(0, 200000) = 200000, scale = 200000/0.5 = 400000: the printed sum
    is within ±1198293 of the true clamped sum with probability 0.95
    (see `dpstat plan sum --lower 0 --upper 200000 --eps 0.5`).";

const MEAN_HELP: &str = "\
Sensitivity (values clamped to [L, U]):
  add-remove  n is private: ε is split in two halves, a sum of values shifted by the midpoint
              (L+U)/2 with Δ = (U − L)/2 and a count with Δ = 1; the release is
              midpoint + noisy sum / max(1, noisy count), clamped to [L, U]. The true n is never used.
  replace     n is public: a noisy sum with Δ = U − L divided by n, i.e. Δ = (U − L)/n for the mean.

Worked example:
  dpstat mean --col age --lower 0 --upper 100 --eps 1 --neighbours replace people.csv
    replace with n = 200 rows: Δ = (100 − 0)/200 = 0.5, scale = 0.5/1 = 0.5: the printed mean
    is within ±1.5 of the true clamped mean with probability 0.95
    (see `dpstat plan mean --lower 0 --upper 100 --eps 1 --neighbours replace --rows 200`).";

const HISTOGRAM_HELP: &str = "\
Sensitivity (L1 over all bins; every bin gets independent discrete Laplace noise of scale Δ/ε):
  add-remove  Δ = 1   one bin gains or loses one row
  replace     Δ = 2   one bin loses a row and another gains it

Worked examples:
  dpstat histogram --col age --bins 8 --lower 0 --upper 80 --eps 0.5 people.csv
    add-remove: Δ = 1, scale = 1/0.5 = 2: each printed count is within ±6 of its bin's true
    count with probability 0.95 (per bin; see `dpstat plan histogram --bins 8 --lower 0 --upper 80 --eps 0.5`).
  dpstat histogram --col region --categories north,south,east,west --eps 0.5 --format chart people.csv
    draws the noisy counts as bars with their ± accuracy band (width from COLUMNS or the terminal).
  dpstat histogram --col region --categories north,south,east,west --eps 0.5 --plot region.svg people.csv
    also writes an SVG bar chart with error bars, after the release (and any ledger charge).";

const PLAN_HELP: &str = "\
Planning never reads data, never draws noise and never charges a ledger. It calls the same
accuracy code as a release, so its bound is the one the release will print.

Examples:
  dpstat plan sum --lower 0 --upper 200000 --eps 0.5
  dpstat plan histogram --bins 8 --lower 0 --upper 80 --error 5
  dpstat plan mean --lower 0 --upper 100 --neighbours replace --rows 200 --error 1 --format json";

#[derive(Subcommand, Debug)]
pub enum Query {
    /// Noisy number of rows (after --where). Sensitivity 1 under both privacy units.
    #[command(after_help = COUNT_HELP)]
    Count(CountArgs),
    /// Noisy sum of a column clamped to [L, U]. Sensitivity max(|L|,|U|) (add-remove), U−L (replace).
    #[command(after_help = SUM_HELP)]
    Sum(NumericArgs),
    /// Noisy mean of a column clamped to [L, U]. Sensitivity: replace (U−L)/n with n public;
    /// add-remove: a midpoint-shifted sum (U−L)/2 over a noisy count (1), ε split in two halves.
    #[command(after_help = MEAN_HELP)]
    Mean(NumericArgs),
    /// Noisy population variance of a column clamped to [L, U], clamped to [0, ((U−L)/2)²].
    /// add-remove: noisy count, shifted sum and sum of squares, ε split in three; replace: noisy
    /// shifted sum and sum of squares over the public n, ε split in two.
    #[command(
        after_help = "Examples:\n  dpstat variance --col age --lower 0 --upper 100 --eps 0.5 people.csv\n  \
        dpstat variance --col income --lower 0 --upper 200000 --eps 1 --by region --keys north,south people.csv"
    )]
    Variance(NumericArgs),
    /// Noisy counts over public bins (--bins K over [L, U]) or public categories (--categories).
    /// L1 sensitivity 1 (add-remove), 2 (replace).
    #[command(after_help = HISTOGRAM_HELP)]
    Histogram(HistogramArgs),
    /// Noisy quantiles by the exponential mechanism (permute-and-flip) over public candidates.
    /// Score sensitivity for level q = a/b: max(a, b−a) (add-remove), b (replace).
    #[command(
        after_help = "Examples:\n  dpstat quantile --col income --q 0.1,0.5,0.9 --lower 0 --upper 200000 --eps 1 people.csv\n  \
        dpstat quantile --col income --q 0.9 --eps 1 people.csv   (no bounds: public log-scale candidates)"
    )]
    Quantile(QuantileArgs),
    /// Noisy median: the quantile at 0.5. Score sensitivity 1 (add-remove), 2 (replace).
    #[command(after_help = "Example:\n  dpstat median --col age --lower 0 --upper 120 --eps 0.5 people.csv")]
    Median(MedianArgs),
    /// Several queries from a workload file (TOML) in one pass over FILE: one total ε split into
    /// exact shares, one privacy unit, one ledger charge.
    #[command(
        after_help = "Example:\n  dpstat run fixtures/compose_two_columns.toml fixtures/people.csv\n\n\
        Workload file:\n  epsilon = \"1\"\n  neighbours = \"add-remove\"\n\n  [[query]]\n  name = \"mean_income\"\n  \
        kind = \"mean\"\n  column = \"income\"\n  lower = 0\n  upper = 200000\n  share = \"0.25\"   # optional; default: even split"
    )]
    Run(RunArgs),
    /// Show a dataset's budget, what has been spent and the releases charged to it.
    #[command(after_help = "Examples:\n  dpstat budget --ledger budget.jsonl people.csv\n  \
        dpstat budget --ledger budget.jsonl --dataset people-2026 --format json")]
    Budget(BudgetArgs),
    /// Accuracy planning without data: the error a query would have at --eps, or the ε it
    /// needs for a target --error.
    #[command(after_help = PLAN_HELP)]
    Plan(PlanArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to standard output.
    #[command(after_help = "Examples:\n  \
        dpstat completions bash > ~/.local/share/bash-completion/completions/dpstat\n  \
        dpstat completions zsh > ~/.zfunc/_dpstat\n  \
        dpstat completions fish > ~/.config/fish/completions/dpstat.fish")]
    Completions(CompletionsArgs),
    /// Print the man page (roff) to standard output.
    #[command(after_help = "Example:\n  dpstat man > dpstat.1 && man ./dpstat.1")]
    Man,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

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
    /// Plan a histogram: the bound is per bin, L1 Δ = 1 (add-remove), 2 (replace).
    #[command(after_help = "Example:\n  dpstat plan histogram --bins 8 --lower 0 --upper 80 --eps 0.5")]
    Histogram(PlanHistogramArgs),
}

/// What to solve for, and how to state it.
#[derive(Args, Debug)]
pub struct PlanTarget {
    /// ε to plan for: prints the error bound a release at this ε would state.
    #[arg(long, value_name = "E")]
    pub eps: Option<Epsilon>,
    /// Target error bound (in the statistic's units): prints the smallest ε, to 3 significant
    /// digits, whose bound is at most this.
    #[arg(long, value_name = "E", conflicts_with = "eps", allow_hyphen_values = true)]
    pub error: Option<Finite>,
    /// Privacy unit: add-remove (one row added or removed) or replace (one row changed; n public).
    #[arg(long, value_enum, value_name = "UNIT", default_value_t)]
    pub neighbours: Neighbours,
    /// Level of the accuracy bound, in (0, 1).
    #[arg(long, value_name = "C", default_value = "0.95")]
    pub confidence: Confidence,
    /// Output format (text or json).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// `dpstat plan sum|mean`: the bounds, as the query takes them.
#[derive(Args, Debug)]
pub struct PlanNumericArgs {
    /// Column name, only to label the plan (no data is read).
    #[arg(long, value_name = "NAME")]
    pub col: Option<String>,
    /// Lower clamping bound L, as the query would take it.
    #[arg(long, value_name = "L", allow_hyphen_values = true)]
    pub lower: Option<Finite>,
    /// Upper clamping bound U, as the query would take it.
    #[arg(long, value_name = "U", allow_hyphen_values = true)]
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
    #[arg(long, value_name = "NAME")]
    pub col: Option<String>,
    /// Numeric histogram: K equal-width bins over [L, U].
    #[arg(long, value_name = "K", conflicts_with = "categories")]
    pub bins: Option<usize>,
    /// Categorical histogram over this public list (plus the bin `other`).
    #[arg(long, value_name = "A,B,...")]
    pub categories: Option<Categories>,
    /// Lower edge of the first bin (numeric histogram).
    #[arg(long, value_name = "L", allow_hyphen_values = true, conflicts_with = "categories")]
    pub lower: Option<Finite>,
    /// Upper edge of the last bin (numeric histogram).
    #[arg(long, value_name = "U", allow_hyphen_values = true, conflicts_with = "categories")]
    pub upper: Option<Finite>,
    #[command(flatten)]
    pub target: PlanTarget,
}

/// The privacy unit: what two neighbouring datasets differ by (`unit::Neighbours`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Neighbours {
    /// One row added or removed; the number of rows is private.
    #[default]
    AddRemove,
    /// One row's values changed; the number of rows n is public.
    Replace,
}

impl From<Neighbours> for unit::Neighbours {
    fn from(n: Neighbours) -> unit::Neighbours {
        match n {
            Neighbours::AddRemove => unit::Neighbours::AddRemove,
            Neighbours::Replace => unit::Neighbours::Replace,
        }
    }
}

/// `--format` (`text::Format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// One number on a line; a histogram as CSV `bin,count`.
    #[default]
    Text,
    /// One JSON object with the release and how to read it.
    Json,
    /// Histograms only: a bar chart of the noisy counts with their ± accuracy band.
    Chart,
}

impl From<Format> for text::Format {
    fn from(f: Format) -> text::Format {
        match f {
            Format::Text => text::Format::Text,
            Format::Json => text::Format::Json,
            Format::Chart => text::Format::Chart,
        }
    }
}

/// Flags every query takes.
#[derive(Args, Debug)]
pub struct Common {
    /// Privacy budget ε of this release, read as an exact decimal (>= 1e-9; > 10 warns).
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    pub eps: Epsilon,
    /// Privacy unit: add-remove (one row added or removed) or replace (one row changed; n public).
    #[arg(long, value_enum, value_name = "UNIT", default_value_t)]
    pub neighbours: Neighbours,
    /// Use only rows whose COL equals VALUE (repeatable; all must hold).
    #[arg(long = "where", value_name = "COL=VALUE")]
    pub filters: Vec<Filter>,
    /// One release per public key of column COL (with --keys), each with the full ε: the groups
    /// are disjoint (parallel composition), so ε is charged once.
    #[arg(long, value_name = "COL", requires = "keys")]
    pub by: Option<String>,
    /// The public keys of --by, comma-separated; rows with any other key form the group `other`.
    #[arg(long, value_name = "K1,K2,...", requires = "by")]
    pub keys: Option<Keys>,
    /// Output format (chart: histograms only).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Level of the printed accuracy bound, in (0, 1).
    #[arg(long, value_name = "C", default_value = "0.95", allow_negative_numbers = true)]
    pub confidence: Confidence,
    #[command(flatten)]
    pub ledger: LedgerArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

/// Where the CSV comes from and how to read it: the same for a single query and a workload.
#[derive(Args, Debug)]
pub struct InputArgs {
    /// Field delimiter: one ASCII character, or \t / tab.
    #[arg(long, value_name = "C", default_value = ",")]
    pub delimiter: Delimiter,
    /// The input has no header row; columns are 1-based indices.
    #[arg(long)]
    pub no_header: bool,
    /// Number of threads that scan a file; default all cores. 1 disables parallel scanning.
    /// Standard input and gzip files are always read by one thread.
    #[arg(long, value_name = "N")]
    pub threads: Option<Threads>,
    /// CSV file; - or absent reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

impl InputArgs {
    /// Where and how to read, as the commands take it.
    pub fn flags(&self) -> InputFlags {
        InputFlags { source: self.source(), csv: self.csv(), threads: self.thread_count() }
    }

    /// The file, or standard input for `-` or no FILE.
    pub fn source(&self) -> Source {
        match &self.file {
            Some(p) if p.as_os_str() != "-" => Source::Path(p.clone()),
            _ => Source::Stdin,
        }
    }

    pub fn csv(&self) -> CsvOptions {
        CsvOptions { delimiter: self.delimiter.0, has_header: !self.no_header }
    }

    /// Threads for the scan: `--threads`, else every core.
    pub fn thread_count(&self) -> usize {
        self.threads.unwrap_or_else(Threads::all_cores).get()
    }
}

/// The persistent budget ledger (sequential composition across invocations).
#[derive(Args, Debug)]
pub struct LedgerArgs {
    /// Budget ledger (JSON lines): every release is charged to it, and refused (exit 3) when the
    /// dataset's budget cannot pay.
    #[arg(long, value_name = "PATH", env = "DPSTAT_LEDGER")]
    pub ledger: Option<PathBuf>,
    /// Total ε for this dataset; the first release with --budget records it.
    #[arg(long, value_name = "TOTAL", allow_negative_numbers = true)]
    pub budget: Option<Budget>,
    /// Allow --budget to change a total already recorded in the ledger.
    #[arg(long)]
    pub change_budget: bool,
    /// Name of the dataset in the ledger; default: the SHA-256 of the input bytes.
    #[arg(long, value_name = "NAME")]
    pub dataset: Option<String>,
}

impl LedgerArgs {
    pub fn flags(&self) -> LedgerFlags {
        LedgerFlags {
            path: self.ledger.clone(),
            budget: self.budget.clone(),
            change_budget: self.change_budget,
            dataset: self.dataset.clone(),
        }
    }
}

#[derive(Args, Debug)]
pub struct BudgetArgs {
    /// Budget ledger (JSON lines).
    #[arg(long, value_name = "PATH", env = "DPSTAT_LEDGER")]
    pub ledger: PathBuf,
    /// Name of the dataset; default: the SHA-256 of FILE (or of standard input).
    #[arg(long, value_name = "NAME", conflicts_with = "file")]
    pub dataset: Option<String>,
    /// Output format (text or json).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// The dataset's file, to identify it by content; - or absent reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

impl Query {
    /// The flags every query shares (None for `budget`).
    pub fn common(&self) -> Option<&Common> {
        match self {
            Query::Count(a) => Some(&a.common),
            Query::Sum(a) | Query::Mean(a) | Query::Variance(a) => Some(&a.common),
            Query::Histogram(a) => Some(&a.common),
            Query::Quantile(a) => Some(&a.rank.common),
            Query::Median(a) => Some(&a.rank.common),
            Query::Budget(_) | Query::Plan(_) | Query::Completions(_) | Query::Man | Query::Run(_) => None,
        }
    }
}

/// `dpstat run`: a workload file and the flags that are not part of it.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Workload file (TOML): total `epsilon`, `neighbours`, and one `[[query]]` table per query.
    #[arg(value_name = "WORKLOAD")]
    pub workload: PathBuf,
    /// Output format: a text table, or JSON lines (one object per query).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Level of the printed accuracy bounds, in (0, 1).
    #[arg(long, value_name = "C", default_value = "0.95", allow_negative_numbers = true)]
    pub confidence: Confidence,
    #[command(flatten)]
    pub ledger: LedgerArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Args, Debug)]
pub struct CountArgs {
    #[command(flatten)]
    pub common: Common,
}

/// Flags of the queries that read one numeric column.
#[derive(Args, Debug)]
pub struct NumericArgs {
    /// Column by header name (with --no-header, a 1-based index).
    #[arg(long, value_name = "NAME", allow_negative_numbers = true)]
    pub col: String,
    /// Lower clamping bound L (public). Without --lower/--upper, part of ε finds bounds privately.
    #[arg(long, value_name = "L", allow_hyphen_values = true)]
    pub lower: Option<Finite>,
    /// Upper clamping bound U (public).
    #[arg(long, value_name = "U", allow_hyphen_values = true)]
    pub upper: Option<Finite>,
    /// ε spent finding bounds privately when --lower/--upper are omitted (default: a tenth of --eps).
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    pub bounds_eps: Option<Epsilon>,
    /// What to do with a missing or non-numeric cell: error, skip (add-remove only), or impute=V.
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidPolicy,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct HistogramArgs {
    /// Column by header name (with --no-header, a 1-based index).
    #[arg(long, value_name = "NAME", allow_negative_numbers = true)]
    pub col: String,
    /// Numeric histogram: K equal-width bins over [L, U]; values outside go to the edge bins.
    #[arg(long, value_name = "K", conflicts_with = "categories", allow_negative_numbers = true)]
    pub bins: Option<usize>,
    /// Categorical histogram over this public list; unlisted values count in the bin `other`.
    #[arg(long, value_name = "A,B,...")]
    pub categories: Option<Categories>,
    /// Lower edge of the first bin (numeric histogram).
    #[arg(long, value_name = "L", allow_hyphen_values = true, conflicts_with = "categories")]
    pub lower: Option<Finite>,
    /// Upper edge of the last bin (numeric histogram).
    #[arg(long, value_name = "U", allow_hyphen_values = true, conflicts_with = "categories")]
    pub upper: Option<Finite>,
    /// ε spent finding bounds privately when --lower/--upper are omitted (default: a tenth of --eps).
    #[arg(long, value_name = "E", conflicts_with = "categories", allow_negative_numbers = true)]
    pub bounds_eps: Option<Epsilon>,
    /// What to do with a missing or non-numeric cell (numeric bins): error, skip (add-remove only), or impute=V.
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidPolicy,
    /// Also write an SVG bar chart of the noisy counts with error bars (the per-bin accuracy
    /// bound) to this file, after the release is complete and any ledger charge is made.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

/// Flags of quantile and median.
#[derive(Args, Debug)]
pub struct RankArgs {
    /// Column by header name (with --no-header, a 1-based index).
    #[arg(long, value_name = "NAME", allow_negative_numbers = true)]
    pub col: String,
    /// Lowest candidate L (public); without --lower/--upper a public log-scale grid is used.
    #[arg(long, value_name = "L", allow_hyphen_values = true, requires = "upper")]
    pub lower: Option<Finite>,
    /// Highest candidate U (public).
    #[arg(long, value_name = "U", allow_hyphen_values = true, requires = "lower")]
    pub upper: Option<Finite>,
    /// Number of evenly spaced candidates over [L, U] (default 2001).
    #[arg(long, value_name = "K", requires = "lower", allow_negative_numbers = true)]
    pub resolution: Option<usize>,
    /// What to do with a missing or non-numeric cell: error, skip (add-remove only), or impute=V.
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidPolicy,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct QuantileArgs {
    /// Quantile level(s) in (0, 1), exact decimals; several (repeat or comma-separate) split ε evenly.
    #[arg(
        long = "q",
        value_name = "Q",
        required = true,
        value_delimiter = ',',
        allow_negative_numbers = true
    )]
    pub levels: Vec<Level>,
    #[command(flatten)]
    pub rank: RankArgs,
}

#[derive(Args, Debug)]
pub struct MedianArgs {
    #[command(flatten)]
    pub rank: RankArgs,
}

/// `--delimiter`: one ASCII byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delimiter(pub u8);

impl FromStr for Delimiter {
    type Err = String;
    fn from_str(s: &str) -> Result<Delimiter, String> {
        match s {
            "\\t" | "tab" | "\t" => Ok(Delimiter(b'\t')),
            _ if s.len() == 1 && s.is_ascii() && s != "\"" && s != "\n" && s != "\r" => {
                Ok(Delimiter(s.as_bytes()[0]))
            }
            _ => {
                Err("the delimiter must be one ASCII character other than a quote or newline (or \\t)".into())
            }
        }
    }
}

/// `--threads`: at least 1, at most [`Threads::MAX`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threads(usize);

impl Threads {
    /// More threads than this would only add buffers and contention.
    pub const MAX: usize = 1024;

    /// All the cores this process may use.
    pub fn all_cores() -> Threads {
        Threads(std::thread::available_parallelism().map_or(1, |n| n.get().min(Threads::MAX)))
    }

    pub fn get(self) -> usize {
        self.0
    }
}

impl FromStr for Threads {
    type Err = String;
    fn from_str(s: &str) -> Result<Threads, String> {
        match s.trim().parse::<usize>() {
            Ok(n) if (1..=Threads::MAX).contains(&n) => Ok(Threads(n)),
            _ => Err(format!("the number of threads must be a whole number from 1 to {}", Threads::MAX)),
        }
    }
}

/// A release subcommand as the request `cmd::release` validates; None for the others.
pub fn release_request(query: &Query) -> Option<cmd::release::Request> {
    let numeric = |a: &NumericArgs| Options {
        column: Some(a.col.clone()),
        lower: a.lower,
        upper: a.upper,
        bounds_eps: a.bounds_eps.clone(),
        invalid: a.invalid,
        ..Options::default()
    };
    let rank = |a: &RankArgs, levels: Vec<Level>| Options {
        column: Some(a.col.clone()),
        lower: a.lower,
        upper: a.upper,
        resolution: a.resolution,
        invalid: a.invalid,
        levels,
        ..Options::default()
    };
    let (kind, options, common, plot) = match query {
        Query::Count(a) => ("count", Options::default(), &a.common, None),
        Query::Sum(a) => ("sum", numeric(a), &a.common, None),
        Query::Mean(a) => ("mean", numeric(a), &a.common, None),
        Query::Variance(a) => ("variance", numeric(a), &a.common, None),
        Query::Histogram(a) => {
            let options = Options {
                column: Some(a.col.clone()),
                lower: a.lower,
                upper: a.upper,
                bounds_eps: a.bounds_eps.clone(),
                bins: a.bins,
                categories: a.categories.clone(),
                invalid: a.invalid,
                ..Options::default()
            };
            ("histogram", options, &a.common, a.plot.clone())
        }
        Query::Quantile(a) => ("quantile", rank(&a.rank, a.levels.clone()), &a.rank.common, None),
        Query::Median(a) => ("median", rank(&a.rank, vec![]), &a.rank.common, None),
        Query::Budget(_) | Query::Plan(_) | Query::Completions(_) | Query::Man | Query::Run(_) => {
            return None
        }
    };
    Some(cmd::release::Request {
        kind,
        options,
        eps: common.eps.clone(),
        neighbours: common.neighbours.into(),
        filters: common.filters.clone(),
        by: common.by.clone().zip(common.keys.clone()),
        format: common.format.into(),
        confidence: common.confidence,
        ledger: common.ledger.flags(),
        input: common.input.flags(),
        plot,
    })
}

/// `dpstat plan QUERY` as the request `cmd::plan` solves.
pub fn plan_request(args: &PlanArgs) -> Result<cmd::plan::Request, Error> {
    let numeric = |a: &PlanNumericArgs| Options {
        column: Some(a.col.clone().unwrap_or_default()),
        lower: a.lower,
        upper: a.upper,
        ..Options::default()
    };
    let (kind, options, rows, target) = match &args.query {
        PlanQuery::Count(t) => ("count", Options::default(), None, t),
        PlanQuery::Sum(a) => ("sum", numeric(a), None, &a.target),
        PlanQuery::Mean(a) => ("mean", numeric(&a.numeric), a.rows, &a.numeric.target),
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
    };
    let PlanTarget { eps, error, neighbours, confidence, format } = target;
    let format: text::Format = (*format).into();
    if format == text::Format::Chart {
        return Err(Error::usage(
            "--format chart draws a histogram release; dpstat plan prints --format text or json",
        ));
    }
    let target = match (eps, error) {
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
    };
    let request = cmd::plan::Request {
        kind,
        options,
        neighbours: (*neighbours).into(),
        confidence: *confidence,
        rows,
        target,
        format,
    };
    request.check()?;
    Ok(request)
}

impl RunArgs {
    pub fn request(&self) -> cmd::run::RunRequest {
        cmd::run::RunRequest {
            workload: self.workload.clone(),
            format: self.format.into(),
            confidence: self.confidence,
            ledger: self.ledger.flags(),
            input: self.input.flags(),
        }
    }
}

impl BudgetArgs {
    pub fn request(&self) -> cmd::budget::Request {
        cmd::budget::Request {
            ledger: self.ledger.clone(),
            dataset: self.dataset.clone(),
            format: self.format.into(),
            file: self.file.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_delimiters_and_threads() {
        assert_eq!("\\t".parse::<Delimiter>(), Ok(Delimiter(b'\t')));
        assert!(";;".parse::<Delimiter>().is_err());
        assert_eq!("4".parse::<Threads>().map(Threads::get), Ok(4));
        assert!("0".parse::<Threads>().is_err());
        assert!("-1".parse::<Threads>().is_err());
        assert!("1025".parse::<Threads>().is_err());
        assert!(Threads::all_cores().get() >= 1);
    }
}
