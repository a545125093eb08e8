//! The command line as the user typed it (clap derive). Domain checks run in the value
//! parsers of the newtypes, so a parsed `Cli` already holds a valid ε, finite bounds and
//! so on; cross-flag checks live in `plan.rs`.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::clamp::{Categories, Finite};
use crate::epsilon::Epsilon;
use crate::ledger::Budget;

#[derive(Parser, Debug)]
#[command(
    name = "dpstat",
    version,
    about = "Differentially private statistics from a CSV file, with exact noise",
    long_about = "Differentially private statistics from a CSV file, with exact noise.\n\n\
        Reads a CSV (FILE, or standard input when FILE is - or absent) in one streaming pass, \
        computes the statistic exactly on clamped values, adds discrete Laplace noise scaled to \
        its sensitivity, and prints the noisy release. Every release is pure ε-DP for the \
        privacy unit given by --neighbours.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub query: Query,
}

#[derive(Subcommand, Debug)]
pub enum Query {
    /// Noisy number of rows (after --where). Sensitivity 1 under both privacy units.
    #[command(after_help = "Example:\n  dpstat count --where urban_rural=2 --eps 0.1 people.csv")]
    Count(CountArgs),
    /// Noisy sum of a column clamped to [L, U]. Sensitivity max(|L|,|U|) (add-remove), U−L (replace).
    #[command(
        after_help = "Example:\n  dpstat sum --col income --lower 0 --upper 200000 --eps 0.5 people.csv"
    )]
    Sum(NumericArgs),
    /// Noisy mean of a column clamped to [L, U]. add-remove: noisy shifted sum / noisy count,
    /// ε split in half; replace: Laplace((U−L)/(nε)) with public n.
    #[command(
        after_help = "Example:\n  dpstat mean --col income --lower 0 --upper 200000 --eps 0.1 people.csv"
    )]
    Mean(NumericArgs),
    /// Noisy counts over public bins (--bins K over [L, U]) or public categories (--categories).
    /// L1 sensitivity 1 (add-remove), 2 (replace).
    #[command(
        after_help = "Examples:\n  dpstat histogram --col region --categories north,south,east,west --eps 0.5 people.csv\n  \
        dpstat histogram --col age --bins 8 --lower 0 --upper 80 --eps 0.5 people.csv"
    )]
    Histogram(HistogramArgs),
    /// Show a dataset's budget, what has been spent and the releases charged to it.
    #[command(after_help = "Examples:\n  dpstat budget --ledger budget.jsonl people.csv\n  \
        dpstat budget --ledger budget.jsonl --dataset people-2026 --format json")]
    Budget(BudgetArgs),
}

/// The privacy unit: what two neighbouring datasets differ by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Neighbours {
    /// One row added or removed; the number of rows is private.
    #[default]
    AddRemove,
    /// One row's values changed; the number of rows n is public.
    Replace,
}

impl Neighbours {
    pub fn name(self) -> &'static str {
        match self {
            Neighbours::AddRemove => "add-remove",
            Neighbours::Replace => "replace",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// Flags every query takes.
#[derive(Args, Debug)]
pub struct Common {
    /// Privacy budget ε of this release, read as an exact decimal (>= 1e-9; > 10 warns).
    #[arg(long, value_name = "E")]
    pub eps: Epsilon,
    /// Privacy unit: add-remove (one row added or removed) or replace (one row changed; n public).
    #[arg(long, value_enum, value_name = "UNIT", default_value_t)]
    pub neighbours: Neighbours,
    /// Use only rows whose COL equals VALUE (repeatable; all must hold).
    #[arg(long = "where", value_name = "COL=VALUE")]
    pub filters: Vec<Filter>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Level of the printed accuracy bound, in (0, 1).
    #[arg(long, value_name = "C", default_value = "0.95")]
    pub confidence: Confidence,
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
    #[command(flatten)]
    pub ledger: LedgerArgs,
    /// CSV file; - or absent reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// The persistent budget ledger (sequential composition across invocations).
#[derive(Args, Debug)]
pub struct LedgerArgs {
    /// Budget ledger (JSON lines): every release is charged to it, and refused (exit 3) when the
    /// dataset's budget cannot pay.
    #[arg(long, value_name = "PATH", env = "DPSTAT_LEDGER")]
    pub ledger: Option<PathBuf>,
    /// Total ε for this dataset; the first release with --budget records it.
    #[arg(long, value_name = "TOTAL")]
    pub budget: Option<Budget>,
    /// Allow --budget to change a total already recorded in the ledger.
    #[arg(long)]
    pub change_budget: bool,
    /// Name of the dataset in the ledger; default: the SHA-256 of the input bytes.
    #[arg(long, value_name = "NAME")]
    pub dataset: Option<String>,
}

#[derive(Args, Debug)]
pub struct BudgetArgs {
    /// Budget ledger (JSON lines).
    #[arg(long, value_name = "PATH", env = "DPSTAT_LEDGER")]
    pub ledger: PathBuf,
    /// Name of the dataset; default: the SHA-256 of FILE (or of standard input).
    #[arg(long, value_name = "NAME", conflicts_with = "file")]
    pub dataset: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// The dataset's file, to identify it by content; - or absent reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
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
    #[arg(long, value_name = "NAME")]
    pub col: String,
    /// Lower clamping bound L (public; never taken from the data).
    #[arg(long, value_name = "L", allow_hyphen_values = true)]
    pub lower: Option<Finite>,
    /// Upper clamping bound U (public; never taken from the data).
    #[arg(long, value_name = "U", allow_hyphen_values = true)]
    pub upper: Option<Finite>,
    /// What to do with a missing or non-numeric cell: error, skip (add-remove only), or impute=V.
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidPolicy,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct HistogramArgs {
    /// Column by header name (with --no-header, a 1-based index).
    #[arg(long, value_name = "NAME")]
    pub col: String,
    /// Numeric histogram: K equal-width bins over [L, U]; values outside go to the edge bins.
    #[arg(long, value_name = "K", conflicts_with = "categories")]
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
    /// What to do with a missing or non-numeric cell (numeric bins): error, skip (add-remove only), or impute=V.
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidPolicy,
    #[command(flatten)]
    pub common: Common,
}

/// `--where COL=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub column: String,
    pub value: String,
}

impl FromStr for Filter {
    type Err = String;
    fn from_str(s: &str) -> Result<Filter, String> {
        match s.split_once('=') {
            Some((column, value)) if !column.trim().is_empty() => {
                Ok(Filter { column: column.trim().to_string(), value: value.trim().to_string() })
            }
            _ => Err(format!("'{s}' is not COL=VALUE")),
        }
    }
}

/// `--invalid`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InvalidPolicy {
    Error,
    Skip,
    Impute(Finite),
}

impl FromStr for InvalidPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<InvalidPolicy, String> {
        match s {
            "error" => Ok(InvalidPolicy::Error),
            "skip" => Ok(InvalidPolicy::Skip),
            _ => match s.strip_prefix("impute=") {
                Some(v) => v.parse().map(InvalidPolicy::Impute).map_err(|e| format!("impute value: {e}")),
                None => Err("expected error, skip or impute=V".into()),
            },
        }
    }
}

/// `--confidence`: a level strictly between 0 and 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Confidence(f64);

impl Confidence {
    pub fn level(self) -> f64 {
        self.0
    }
    /// β = 1 − C: the allowed failure probability of the bound.
    pub fn beta(self) -> f64 {
        1.0 - self.0
    }
}

impl FromStr for Confidence {
    type Err = String;
    fn from_str(s: &str) -> Result<Confidence, String> {
        match s.trim().parse::<f64>() {
            Ok(c) if c > 0.0 && c < 1.0 => Ok(Confidence(c)),
            _ => Err("confidence must be a number strictly between 0 and 1, like 0.95".into()),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_policies_and_filters() {
        assert_eq!("skip".parse::<InvalidPolicy>(), Ok(InvalidPolicy::Skip));
        assert!(matches!("impute=3".parse::<InvalidPolicy>(), Ok(InvalidPolicy::Impute(_))));
        assert!("impute=nan".parse::<InvalidPolicy>().is_err());
        assert!("drop".parse::<InvalidPolicy>().is_err());
        let f: Filter = "region=north".parse().unwrap();
        assert_eq!((f.column.as_str(), f.value.as_str()), ("region", "north"));
        assert!("=x".parse::<Filter>().is_err());
        assert!("novalue".parse::<Filter>().is_err());
        assert_eq!("\\t".parse::<Delimiter>(), Ok(Delimiter(b'\t')));
        assert!(";;".parse::<Delimiter>().is_err());
        assert!("1".parse::<Confidence>().is_err());
        assert!("0.9".parse::<Confidence>().is_ok());
        assert_eq!("4".parse::<Threads>().map(Threads::get), Ok(4));
        assert!("0".parse::<Threads>().is_err());
        assert!("-1".parse::<Threads>().is_err());
        assert!("1025".parse::<Threads>().is_err());
        assert!(Threads::all_cores().get() >= 1);
    }
}
