//! The command line as the user typed it (clap derive), and nothing else: the only module
//! that knows clap's types. Domain checks run in the value parsers of the domain types
//! (`Epsilon`, `Finite`, `Level`, … implement `FromStr`), so a parsed `Cli` already holds a
//! valid ε, finite bounds and so on; each subcommand's flags then become the request its
//! `cmd` module validates across flags ([`request`]).

pub mod help;
pub mod plan;
pub mod request;
pub mod usage;
pub mod values;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::cli::help::{COUNT_HELP, HISTOGRAM_HELP, LONG_VERSION, MEAN_HELP, PLAN_HELP, SUM_HELP};
use crate::cli::plan::PlanArgs;
use crate::cli::values::{Delimiter, Format, Neighbours, Threads};
use crate::cmd::release::InputFlags;
use crate::data::cell::InvalidPolicy;
use crate::data::source::{CsvOptions, Filter, Source};
use crate::numeric::bins::{Categories, Keys};
use crate::numeric::bounds::Finite;
use crate::privacy::accuracy::Confidence;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::ledger::{Budget, LedgerFlags};
use crate::query::options::{Level, Options};

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
    #[command(after_help = "Examples:\n  dpstat budget --ledger budget.jsonl\n  \
        dpstat budget --ledger budget.jsonl --dataset people-2026 --format json\n  \
        dpstat budget --ledger budget.jsonl fixtures/people.csv")]
    Budget(BudgetArgs),
    /// Check a file before releasing from it: every ragged row, non-UTF-8 cell and non-numeric
    /// cell of a numeric column, by row and column. Its report is NOT private: it describes the
    /// rows themselves; it never touches a ledger and releases nothing.
    #[command(after_help = "Exit status: 0 when no problem was found, 4 when some were (the report is on \
        standard output), 2 when the file cannot be read.\n\n\
        The report names rows, columns and cell contents: it is for whoever may read the file \
        anyway (the data custodian), never for an analyst who may only see releases.\n\n\
        Example:\n  dpstat check fixtures/bad_cells.csv")]
    Check(CheckArgs),
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

/// `dpstat check`: only where the file is and how to read it.
#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
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
    /// Number of threads that read the rows (of a file, standard input or compressed input);
    /// default all cores. Reading the bytes takes one more thread.
    /// Standard input and gzip files are always read by one thread.
    #[arg(long, value_name = "N")]
    pub threads: Option<Threads>,
    /// CSV file (plain, gzip or zstd); - or absent reads standard input.
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
    /// Budget ledger (JSON lines): every release is charged to it before its data are read, and
    /// refused (exit 3) when the dataset's budget cannot pay.
    #[arg(long, value_name = "PATH", env = "DPSTAT_LEDGER")]
    pub ledger: Option<PathBuf>,
    /// Total ε for this dataset; the first release with --budget records it.
    #[arg(long, value_name = "TOTAL", allow_negative_numbers = true)]
    pub budget: Option<Budget>,
    /// Allow --budget to change a total already recorded in the ledger.
    #[arg(long)]
    pub change_budget: bool,
    /// Name of the dataset in the ledger whose budget this release draws on; default: "default",
    /// the ledger's one budget. Name the population, not the file: every file of it draws on it.
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
    /// Only this dataset; default: every dataset in the ledger.
    #[arg(long, value_name = "NAME")]
    pub dataset: Option<String>,
    /// Output format (text or json).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Field delimiter of FILE.
    #[arg(long, value_name = "CHAR", default_value = ",")]
    pub delimiter: Delimiter,
    /// A data file to compare with the data each release read (its fingerprint); - reads
    /// standard input. Without it no data is read.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// A release subcommand: the statistic's kind, its own options, and the flags every release
/// shares.
pub struct ReleaseFlags<'a> {
    pub kind: &'static str,
    pub options: Options,
    pub common: &'a Common,
    /// `--plot` (histograms).
    pub plot: Option<PathBuf>,
}

impl Query {
    /// The release this subcommand asks for; None for the subcommands that release nothing.
    pub fn release(&self) -> Option<ReleaseFlags<'_>> {
        let (kind, options, common, plot) = match self {
            Query::Count(a) => ("count", Options::default(), &a.common, None),
            Query::Sum(a) => ("sum", a.options(), &a.common, None),
            Query::Mean(a) => ("mean", a.options(), &a.common, None),
            Query::Variance(a) => ("variance", a.options(), &a.common, None),
            Query::Histogram(a) => ("histogram", a.options(), &a.common, a.plot.clone()),
            Query::Quantile(a) => ("quantile", a.rank.options(a.levels.clone()), &a.rank.common, None),
            Query::Median(a) => ("median", a.rank.options(vec![]), &a.rank.common, None),
            Query::Budget(_)
            | Query::Check(_)
            | Query::Plan(_)
            | Query::Completions(_)
            | Query::Man
            | Query::Run(_) => return None,
        };
        Some(ReleaseFlags { kind, options, common, plot })
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

impl NumericArgs {
    pub fn options(&self) -> Options {
        Options {
            column: Some(self.col.clone()),
            lower: self.lower,
            upper: self.upper,
            bounds_eps: self.bounds_eps.clone(),
            invalid: self.invalid,
            ..Options::default()
        }
    }
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

impl HistogramArgs {
    pub fn options(&self) -> Options {
        Options {
            column: Some(self.col.clone()),
            lower: self.lower,
            upper: self.upper,
            bounds_eps: self.bounds_eps.clone(),
            bins: self.bins,
            categories: self.categories.clone(),
            invalid: self.invalid,
            ..Options::default()
        }
    }
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

impl RankArgs {
    pub fn options(&self, levels: Vec<Level>) -> Options {
        Options {
            column: Some(self.col.clone()),
            lower: self.lower,
            upper: self.upper,
            resolution: self.resolution,
            invalid: self.invalid,
            levels,
            ..Options::default()
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }
}
