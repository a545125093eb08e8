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

use crate::cli::help::{COUNT_HELP, HISTOGRAM_HELP, LONG_VERSION, MEAN_HELP, PLAN_HELP, SQL_HELP, SUM_HELP};
use crate::cli::plan::PlanArgs;
use crate::cli::values::{
    number, BoundPair, ColumnPair, Delimiter, DescribeColumns, Format, MaxKeys, Neighbours, Noise, Threads,
};
pub use crate::cli::values::{PrecisionArgs, RowsPerId};
use crate::cmd::release::InputFlags;
use crate::cmd::release::PersonFlags;
use crate::cmd::release::PrivacyFlags;
use crate::data::cell::{DecimalMark, InvalidPolicy};
use crate::data::filter::Filter;
use crate::data::source::{CsvOptions, Source};
use crate::numeric::bins::{Categories, Keys};
use crate::numeric::bounds::Finite;
use crate::privacy::accuracy::Confidence;
use crate::privacy::contribution::Bounds;
use crate::privacy::delta::Delta;
use crate::privacy::delta_use::DeltaUse;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::ledger::{Budget, LedgerFlags};
use crate::privacy::zcdp::Rho;
use crate::query::discover::DEFAULT_MAX_KEYS;
use crate::query::options::{InvalidFlag, Level, Options};
use crate::query::per_id::PerId;
use crate::report::text::Style;

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
        privacy unit given by --neighbours, unless it opts in to approximate DP: --noise \
        gaussian (ρ-zCDP, stated as (ε, δ)) or --discover (keys found in the data, (ε, δ)-DP).",
    after_help = "Start with `dpstat plan …` to see what error an ε buys (no data read), then\n\
        run the query. `dpstat QUERY --help` shows each query's sensitivity and a\nworked example.",
    propagate_version = true,
    // Help piped to a file, a pager or a man page has no terminal width: keep it in 80 columns.
    max_term_width = 80
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
        after_help = "Examples:\n  dpstat variance --col age --lower 0 --upper 100 --eps 0.5 fixtures/people.csv\n  \
        dpstat variance -c score -l 0 -u 100 -e 1 -w region=north fixtures/people.csv",
        // The flags it shares with sum and mean but refuses: it needs public bounds, and a
        // person's total or average is a sum's or a mean's.
        mut_arg("lower", |a| a.help("Lower clamping bound L (public; required)")),
        mut_arg("upper", |a| a.help("Upper clamping bound U (public; required)")),
        mut_arg("bounds_eps", |a| a.hide(true)),
        mut_arg("total_per_id", |a| a.hide(true)),
        mut_arg("average_per_id", |a| a.hide(true))
    )]
    Variance(NumericArgs),
    /// Noisy population covariance of two columns clamped to [Lx, Ux] × [Ly, Uy].
    /// add-remove: noisy count, shifted sums of x and y and sum of products, ε split in four;
    /// replace: the sums and products over the public n, ε split in three.
    #[command(after_help = "Bounds are pairs, x's first: --lower LX,LY --upper UX,UY.\n\n\
        Example:\n  dpstat covariance --cols age,income -l 0,0 -u 100,2e5 -e 1 fixtures/people.csv")]
    Covariance(CovarianceArgs),
    /// Noisy least-squares slope of y on x, cov(x, y)/var(x), both clamped to their bounds.
    /// add-remove: noisy count, shifted sums, sum of squares of x and sum of products, ε split
    /// in five; replace: the four sums over the public n, ε split in four.
    #[command(after_help = "Bounds are pairs, x's first: --lower LX,LY --upper UX,UY.\n\n\
        Example:\n  dpstat regress --x age --y income -l 0,0 -u 100,2e5 -e 1 fixtures/people.csv")]
    Regress(RegressArgs),
    /// Noisy counts over public bins (--bins K over [L, U]) or public categories (--categories).
    /// L1 sensitivity 1 (add-remove), 2 (replace).
    #[command(after_help = HISTOGRAM_HELP)]
    Histogram(HistogramArgs),
    /// Noisy quantiles: with --lower/--upper, permute-and-flip over round or evenly
    /// spaced candidates; without, AboveThreshold over a public log-scale grid. Score
    /// sensitivity for level q = a/b: max(a, b−a) (add-remove), b (replace).
    #[command(after_help = "Examples:\n  \
        dpstat quantile -c income -q 0.5,0.9 -l 0 -u 2e5 -e 1 fixtures/incomes_20k.csv\n  \
        dpstat quantile -c income -q 0.9 -e 1 fixtures/incomes_20k.csv\n    \
        no bounds: AboveThreshold over public log-scale candidates")]
    Quantile(QuantileArgs),
    /// Noisy median: the quantile at 0.5. Score sensitivity 1 (add-remove), 2 (replace).
    #[command(
        after_help = "Example:\n  dpstat median --col age --lower 0 --upper 120 --eps 0.5 fixtures/people.csv"
    )]
    Median(MedianArgs),
    /// Several queries from a workload file (TOML) in one pass over FILE: one total ε split into
    /// exact shares, one privacy unit, one ledger charge.
    #[command(
        after_help = "Example:\n  dpstat run fixtures/compose_two_columns.toml fixtures/people.csv\n\n\
        Workload file:\n  epsilon = \"1\"\n  neighbours = \"add-remove\"\n\n  [[query]]\n  name = \"mean_income\"\n  \
        kind = \"mean\"\n  column = \"income\"\n  lower = 0\n  upper = 200000\n  share = \"0.25\"   # optional: the queries without one split the rest\n\n  \
        [[query]]\n  name = \"people\"\n  kind = \"count\"\n  # no share: the remaining 0.75"
    )]
    Run(RunArgs),
    /// A differentially private SQL query, GoogleSQL's (BigQuery's) clause: SELECT WITH
    /// DIFFERENTIAL_PRIVACY OPTIONS(epsilon = E, …) key, COUNT(*), SUM, AVG, PERCENTILE_CONT …
    /// FROM t WHERE … GROUP BY key, run as the workload dpstat run would run (--explain prints it).
    #[command(after_help = SQL_HELP)]
    Sql(SqlArgs),
    /// A private summary of several columns in one pass: each column's count, mean and
    /// quantiles, under one ε split evenly between the columns (or by --shares), charged once.
    #[command(after_help = "Examples:\n  \
        dpstat describe --cols income:0:2e5,age -q 0.5,0.9 -e 1 fixtures/people.csv\n  \
        dpstat describe --cols income,age --shares 0.7,0.3 -e 1 fixtures/people.csv\n\n\
        Each column is NAME:LOWER:UPPER (public bounds: the mean's clamping range and the quantiles' \
        candidates) or NAME (the mean's bounds found privately with a tenth of its ε, the quantiles on \
        public bounds-free candidates). A column's ε is split in two exact halves: the mean and the \
        quantiles (split evenly by level). Under add-remove with --invalid error or impute=V the means \
        divide by one shared noisy count, drawn once with the quarter of each column's ε its own count \
        would have had; with skip each mean keeps its own.",
        // Flags of a --by release that describe, one summary per column, refuses.
        mut_arg("max_groups_per_id", |a| a.hide(true)),
        mut_arg("max_rows_per_group", |a| a.hide(true)),
        mut_arg("count_truncated", |a| a.hide(true))
    )]
    Describe(DescribeArgs),
    /// Show a dataset's budget, what has been spent and the releases charged to it.
    #[command(after_help = "Examples:\n  \
        dpstat count --eps 0.5 --budget 1 --ledger budget.jsonl fixtures/people.csv\n    \
        charges 0.5 of the budget of 1\n  \
        dpstat budget --ledger budget.jsonl\n  \
        dpstat budget --ledger budget.jsonl --format json fixtures/people.csv")]
    Budget(BudgetArgs),
    /// The custodian's ledger tools: `dpstat ledger init --key FILE` makes the key of a keyed
    /// ledger.
    #[command(subcommand)]
    Ledger(LedgerCommand),
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
    /// Print a man page (roff) to standard output: dpstat's, or a subcommand's; or write them all
    /// into a directory with --out.
    #[command(after_help = "Examples:\n  \
        dpstat man | man -l -\n  \
        dpstat man count | man -l -\n  \
        dpstat man plan sum > dpstat-plan-sum.1\n  \
        dpstat man --out ~/.local/share/man/man1   # then: man dpstat-count")]
    Man(ManArgs),
    /// Run a Ballista scheduler or executor with dpstat's functions, for `--engine`, or make a
    /// cluster's credentials (this build has the cluster feature).
    #[cfg(feature = "cluster")]
    #[command(
        subcommand,
        after_help = "Example (one machine, loopback; scripts/cluster-up.sh does this):\n  \
        dpstat cluster init ~/.dpstat-cluster\n  \
        dpstat cluster scheduler --credentials ~/.dpstat-cluster &\n  \
        dpstat cluster executor --credentials ~/.dpstat-cluster --bind 127.0.0.1:50052 --flight-port 50051 &\n  \
        dpstat mean -c income -l 0 -u 2e5 -e 1 \\\n    \
        --engine 'ballista://127.0.0.1:50050?credentials=/home/me/.dpstat-cluster' data/*.parquet"
    )]
    Cluster(ClusterCommand),
}

/// `dpstat cluster init|scheduler|executor`.
#[cfg(feature = "cluster")]
#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Make a new cluster's credentials in DIR: a CA, and a certificate and key each for the
    /// scheduler, the executors and the client (`--engine ...?credentials=DIR`). Keys are
    /// written readable by their owner only; an existing credential file is never overwritten.
    Init(InitArgs),
    /// Start a scheduler; it runs until stopped.
    Scheduler(SchedulerArgs),
    /// Start an executor of dpstat's folds for a scheduler; it runs until stopped.
    Executor(ExecutorArgs),
}

#[cfg(feature = "cluster")]
#[derive(Args, Debug)]
pub struct InitArgs {
    /// The folder to write ca.crt, ca.key, scheduler.crt/.key, executor.crt/.key and
    /// client.crt/.key into (created if missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// How a scheduler or executor proves it belongs to the cluster: its credentials, or nothing
/// on loopback only.
#[cfg(feature = "cluster")]
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
pub struct ClusterAccess {
    /// The folder `dpstat cluster init` made (or a copy holding ca.crt and this role's .crt
    /// and .key): mutual TLS, and only holders of the cluster's certificates can connect.
    #[arg(long, value_name = "DIR")]
    pub credentials: Option<PathBuf>,
    /// INSECURE: no TLS, no authentication, loopback only. Every account and process on this
    /// host can then connect, run queries and read exact data the executors can read.
    #[arg(long)]
    pub insecure_loopback: bool,
}

#[cfg(feature = "cluster")]
#[derive(Args, Debug)]
pub struct SchedulerArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50050")]
    pub bind: std::net::SocketAddr,
    #[command(flatten)]
    pub access: ClusterAccess,
}

#[cfg(feature = "cluster")]
#[derive(Args, Debug)]
pub struct ExecutorArgs {
    /// The scheduler's address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50050")]
    pub scheduler: std::net::SocketAddr,
    /// Address whose host the executor is reached at (its port is not used: executors pull
    /// their tasks).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50052")]
    pub bind: std::net::SocketAddr,
    /// Port for shuffle data and results (Arrow Flight), on --bind's host.
    #[arg(long, value_name = "PORT", default_value_t = 50051)]
    pub flight_port: u16,
    /// Tasks run at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub cores: usize,
    /// Without dpstat's functions, as a stock Ballista executor (for tests).
    #[arg(long, hide = true)]
    pub stock: bool,
    #[command(flatten)]
    pub access: ClusterAccess,
}

/// `dpstat man [COMMAND...] [--out DIR]`.
#[derive(Args, Debug)]
pub struct ManArgs {
    /// The subcommand whose page to print (count, plan sum, ...); none prints dpstat's page.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write every page (dpstat.1, dpstat-count.1, dpstat-plan-sum.1, ...) into DIR, created if
    /// missing, and print nothing; DIR then goes on MANPATH (or is a man1 directory already).
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub out: Option<PathBuf>,
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
    /// Privacy budget ε of this release, read as an exact decimal (>= 1e-9; > 10 warns). With
    /// --noise gaussian, the ε of the (ε, --delta) guarantee: ρ is the largest that meets it.
    #[arg(
        short = 'e',
        long,
        visible_alias = "epsilon",
        value_name = "E",
        allow_negative_numbers = true,
        required_unless_present = "rho"
    )]
    pub eps: Option<Epsilon>,
    /// Noise: laplace (pure ε-DP) or gaussian (ρ-zCDP, stated as (ε, δ); needs --delta).
    #[arg(long, value_enum, value_name = "NOISE", default_value_t)]
    pub noise: Noise,
    /// zCDP budget ρ of a --noise gaussian release, instead of --eps (exact decimal).
    #[arg(long, value_name = "R", conflicts_with = "eps", allow_negative_numbers = true)]
    pub rho: Option<Rho>,
    /// δ: with --noise gaussian, the δ the release states its (ε, δ) at; with --discover, the
    /// probability allowed for a key held by one person to show. Keep it well below 1/rows.
    #[arg(long, value_name = "D", allow_negative_numbers = true)]
    pub delta: Option<Delta>,
    /// Find the keys of --by COL (or a histogram's categories) in the data: only keys whose
    /// noisy count clears a threshold set by ε and --delta are released; (ε, δ)-DP.
    #[arg(long)]
    pub discover: bool,
    /// The most distinct keys --discover holds in memory; a noisy test that is part of the
    /// release (a tenth of ε and δ) withholds it when the data has more (exit 5).
    #[arg(long, value_name = "N", default_value_t = MaxKeys(DEFAULT_MAX_KEYS))]
    pub max_keys: MaxKeys,
    /// Privacy unit: add-remove (one row added or removed) or replace (one row changed; n public).
    #[arg(long, value_enum, value_name = "UNIT", default_value_t)]
    pub neighbours: Neighbours,
    /// Use only rows that pass: COL=V, COL!=V, COL<N, COL<=N, COL>N, COL>=N (numbers),
    /// 'COL in A,B', 'COL not in A,B', 'COL is empty', 'COL is not empty' (repeatable; all must
    /// hold; quote a column holding an operator: '"a<b"=1'). The list of in is CSV: a text with
    /// a comma or a quote goes in double quotes, a quote inside doubled: 'name in "Smith, Ann",Lee'.
    #[arg(short = 'w', long = "where", value_name = "FILTER")]
    pub filters: Vec<Filter>,
    /// One release per public key of column COL (with --keys, or keys found with --discover),
    /// each with the full ε: the groups are disjoint (parallel composition), so ε is charged once.
    #[arg(short = 'b', long, value_name = "COL")]
    pub by: Option<String>,
    /// The public keys of --by, comma-separated; rows with any other key form the group `other`.
    /// A key with a comma or a quote goes in double quotes, a quote inside doubled:
    /// '"Smith, Ann",Lee,"say ""hi"""'.
    #[arg(short = 'k', long, value_name = "K1,K2,...", requires = "by")]
    pub keys: Option<Keys>,
    /// The listed --keys (and a histogram's --categories) are the whole domain: no group or bin
    /// `other`; a row with a key not listed is invalid input, handled by --invalid (error; skip
    /// drops it; impute=K counts it under the listed key K).
    #[arg(long)]
    pub closed: bool,
    #[command(flatten)]
    pub person: PersonArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub ledger: LedgerArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

/// The person as the privacy unit: the id column and how many rows of each person are kept.
#[derive(Args, Debug, Clone, Default)]
pub struct PersonArgs {
    /// Protect people, not rows: COL (or COL1,COL2 for a composite id) names the person each
    /// row belongs to. Each person's rows are bounded (--max-rows-per-id and, with --by,
    /// --max-groups-per-id and --max-rows-per-group), and ε is then one person's, whatever the
    /// number of rows they have.
    #[arg(long, value_name = "COL[,COL]", help_heading = "Privacy unit")]
    pub privacy_id: Option<String>,
    /// With --privacy-id: the most rows of one person a release uses (1 to 10000; default 1),
    /// chosen at random, the same whatever the order of the rows. The noise grows with it.
    /// `auto` spends a tenth of --eps choosing K privately, trading truncation bias for noise:
    /// the smallest K with only a few persons above it (Amin et al. 2019); with too few
    /// persons it says so and uses 1.
    #[arg(long, value_name = "K|auto", requires = "privacy_id", help_heading = "Privacy unit")]
    pub max_rows_per_id: Option<RowsPerId>,
    /// With --privacy-id and --by: the most groups one person's rows count in. Default: every
    /// group of --keys, which costs no noise while --max-rows-per-group is K (the noise
    /// follows K rows however many groups hold them); 1 with --discover, whose selection
    /// grows with it.
    #[arg(long, value_name = "G", requires = "privacy_id", help_heading = "Privacy unit")]
    pub max_groups_per_id: Option<u32>,
    /// With --privacy-id and --by: the most rows of one person in one group (default
    /// --max-rows-per-id).
    #[arg(long, value_name = "K", requires = "privacy_id", help_heading = "Privacy unit")]
    pub max_rows_per_group: Option<u32>,
    /// With --privacy-id: also release a noisy count of the people who had rows dropped by the
    /// bounds (a tenth of --eps, Laplace): what K cost.
    #[arg(long, requires = "privacy_id", help_heading = "Privacy unit")]
    pub count_truncated: bool,
}

impl PersonArgs {
    /// The person flags as a request takes them; None without --privacy-id.
    pub fn flags(&self) -> Option<PersonFlags> {
        let ids = self.privacy_id.clone()?;
        let auto = self.max_rows_per_id == Some(RowsPerId::Auto);
        let rows = match self.max_rows_per_id {
            Some(RowsPerId::Rows(k)) => k,
            _ => 1,
        };
        Some(PersonFlags {
            ids,
            bounds: Bounds {
                rows,
                // Replaced by every group of the release when not given (`Job::new`).
                groups: self.max_groups_per_id.unwrap_or(1),
                rows_per_group: self.max_rows_per_group.unwrap_or(rows),
            },
            grouped_flags: self.max_groups_per_id.is_some() || self.max_rows_per_group.is_some(),
            auto,
            rows_per_group_given: self.max_rows_per_group.is_some(),
            groups_given: self.max_groups_per_id.is_some(),
            count_truncated: self.count_truncated,
        })
    }
}

/// How a release is printed: the same for every query and for a workload.
#[derive(Args, Debug)]
pub struct OutputArgs {
    /// Output format.
    #[arg(short = 'f', short_alias = 'o', long, value_enum, default_value_t)]
    pub format: Format,
    /// Level of the printed accuracy bound, in (0, 1).
    #[arg(long, value_name = "C", default_value = "0.95", allow_negative_numbers = true)]
    pub confidence: Confidence,
    /// Text: print each value as `53920 ± 310 (95%)`, with its error bound at --confidence, or
    /// as a last CSV column `error(95%)` (quantiles: the bound in rows of rank). The bound is
    /// rounded up to two significant digits, and covers the value's rounding.
    #[arg(short = 'E', long)]
    pub with_error: bool,
    #[command(flatten)]
    pub precision: PrecisionArgs,
    /// Also write an SVG bar chart of a release of several numbers (bins, --by groups, --q
    /// levels, a workload) with error bars at the accuracy bound, after the release is complete
    /// and any ledger charge is made. The name must end in .svg.
    #[arg(short = 'p', long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

impl OutputArgs {
    pub fn style(&self) -> Style {
        Style { with_error: self.with_error, ..self.precision.style() }
    }
}

/// Where the CSV comes from and how to read it: the same for a single query and a workload.
#[derive(Args, Clone, Debug)]
pub struct InputArgs {
    /// Field delimiter: one ASCII character, or \t / tab [default: tab for a .tsv or .tab FILE,
    /// else ,].
    #[arg(short = 'd', long, value_name = "C")]
    pub delimiter: Option<Delimiter>,
    /// The input has no header row; columns are 1-based numbers.
    #[arg(short = 'n', long = "no-headers", visible_alias = "no-header")]
    pub no_header: bool,
    /// Decimal mark of the file's number cells: , reads 228,04 as 228.04 exactly (a cell with a
    /// point is then refused: thousands separators are not read). Such files are usually
    /// separated by semicolons (-d ';'); with a , delimiter the cells must be quoted. Flags
    /// always take a point.
    #[arg(long, value_name = "MARK", default_value = ".", hide_default_value = true)]
    pub decimal: DecimalMark,
    /// Number of threads that read the rows (of a file, standard input or compressed input);
    /// default all cores. Reading the bytes takes one more thread.
    /// Standard input and gzip files are always read by one thread.
    #[arg(short = 'j', long, visible_alias = "jobs", value_name = "N")]
    pub threads: Option<Threads>,
    /// CSV file (TSV for a .tsv or .tab name; gzip or zstd by their magic bytes), Parquet file,
    /// directory or glob of either (hive folders name=value are columns); several are one
    /// dataset; - or absent reads standard input. A directory is read recursively: every file
    /// under it is a part but names starting with . or _ (hidden, _SUCCESS); a file of 0 bytes
    /// is an empty part; a file listed twice is refused.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Fold the rows on a Ballista cluster of dpstat executors (ballista://HOST:PORT), from
    /// Parquet files they read at the same paths; the noise and the ledger stay here. Needs a
    /// build with --features cluster (its cluster subcommand starts the scheduler and executors).
    #[arg(long, value_name = "URL")]
    pub engine: Option<String>,
}

impl InputArgs {
    /// Where and how to read, as the commands take it.
    pub fn flags(&self) -> InputFlags {
        InputFlags {
            source: self.source(),
            csv: self.csv(),
            threads: self.thread_count(),
            engine: self.engine.clone(),
        }
    }

    /// The file, or standard input for `-` or no FILE.
    pub fn source(&self) -> Source {
        match self.files.as_slice() {
            [] => Source::Stdin,
            [p] if p.as_os_str() == "-" => Source::Stdin,
            [p] => Source::Path(p.clone()),
            many => Source::Paths(many.to_vec()),
        }
    }

    pub fn csv(&self) -> CsvOptions {
        let delimiter =
            self.delimiter.unwrap_or_else(|| Delimiter::for_file(self.files.first().map(PathBuf::as_path)));
        CsvOptions { delimiter: delimiter.0, has_header: !self.no_header, decimal: self.decimal }
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
    /// δ of this dataset's budget, recorded with --budget (default 0: pure ε-DP only). Needed
    /// before --noise gaussian or --discover releases can be charged.
    #[arg(long, value_name = "D", allow_negative_numbers = true)]
    pub budget_delta: Option<Delta>,
    /// Which releases --budget-delta pays for, fixed with it: zcdp (all for --noise gaussian),
    /// thresholds (all for --discover) or split (half each, the default). Changing it needs
    /// --change-budget.
    #[arg(long, value_name = "USE")]
    pub budget_delta_for: Option<DeltaUse>,
    /// Allow --budget to change a total already recorded in the ledger.
    #[arg(long)]
    pub change_budget: bool,
    /// Name of the dataset in the ledger whose budget this release draws on; default: "default",
    /// the ledger's one budget. Name the population, not the file: every file of it draws on it.
    #[arg(long, value_name = "NAME")]
    pub dataset: Option<String>,
    /// A file made by `dpstat ledger init --key FILE`, readable by the custodian only: the key
    /// of a keyed ledger. Records are chained with HMAC-SHA256 and the ledger is checked against
    /// the key's state file FILE.state. A file, never the key itself, so `ps` cannot show it.
    #[arg(long, value_name = "FILE", env = "DPSTAT_LEDGER_KEY_FILE")]
    pub ledger_key: Option<PathBuf>,
    /// With --budget on a new dataset name: open its budget even though the data were already
    /// released under another dataset of the ledger (refused without it: one table, one budget).
    #[arg(long)]
    pub new_dataset_for_same_data: bool,
}

impl LedgerArgs {
    pub fn flags(&self) -> LedgerFlags {
        LedgerFlags {
            path: self.ledger.clone(),
            budget: self.budget.clone(),
            budget_delta: self.budget_delta.clone(),
            budget_delta_for: self.budget_delta_for,
            change_budget: self.change_budget,
            dataset: self.dataset.clone(),
            key: self.ledger_key.clone(),
            same_data: self.new_dataset_for_same_data,
        }
    }
}

/// `dpstat ledger …`: what the custodian runs, never the analyst.
#[derive(Subcommand, Debug)]
pub enum LedgerCommand {
    /// Create a new random 256-bit ledger key in FILE (mode 0600) and its state file FILE.state;
    /// an existing file is never overwritten.
    #[command(
        after_help = "Keep FILE where analysts cannot read it, and FILE's directory where they cannot \
        write, then charge with --ledger-key FILE (or DPSTAT_LEDGER_KEY_FILE=FILE): the ledger is \
        chained with HMAC-SHA256, so records cannot be forged, edited or cut without the key, and \
        FILE.state refuses an older copy of the ledger put back.\n\n\
        Example:\n  dpstat ledger init --key ledger.key"
    )]
    Init(LedgerInitArgs),
}

#[derive(Args, Debug)]
pub struct LedgerInitArgs {
    /// Where to write the new key (its state goes to FILE.state).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
}

#[derive(Args, Debug)]
pub struct BudgetArgs {
    /// Budget ledger (JSON lines).
    #[arg(long, value_name = "PATH", env = "DPSTAT_LEDGER")]
    pub ledger: PathBuf,
    /// Only this dataset; default: every dataset in the ledger.
    #[arg(long, value_name = "NAME")]
    pub dataset: Option<String>,
    /// The key of a keyed ledger: verify its chain and compare it with the key's state file.
    /// Without it a keyed ledger is listed as not verified.
    #[arg(long, value_name = "FILE", env = "DPSTAT_LEDGER_KEY_FILE")]
    pub ledger_key: Option<PathBuf>,
    /// Output format: text, csv (one header, a row per release; the other lines on stderr) or json.
    #[arg(short = 'f', short_alias = 'o', long, value_enum, default_value_t)]
    pub format: Format,
    /// Field delimiter of FILE, as the releases read it: one ASCII character, or \t / tab
    /// [default: tab for a .tsv or .tab FILE, else ,].
    #[arg(short = 'd', long, value_name = "CHAR")]
    pub delimiter: Option<Delimiter>,
    /// A data file to compare with the data each release read (its fingerprint); - reads
    /// standard input. Without it no data is read.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

impl Common {
    /// The privacy flags as the release's request takes them.
    pub fn privacy(&self) -> PrivacyFlags {
        PrivacyFlags {
            noise: self.noise.into(),
            eps: self.eps.clone(),
            rho: self.rho.clone(),
            delta: self.delta.clone(),
            discover: self.discover,
            max_keys: self.max_keys.0,
        }
    }
}

/// A release subcommand: the statistic's kind, its own options, and the flags every release
/// shares.
pub struct ReleaseFlags<'a> {
    pub kind: &'static str,
    pub options: Options,
    pub common: &'a Common,
}

impl Query {
    /// The release this subcommand asks for; None for the subcommands that release nothing.
    pub fn release(&self) -> Option<ReleaseFlags<'_>> {
        let (kind, options, common) = match self {
            Query::Count(a) => {
                let mut options = Options { nonnegative: a.nonnegative, ..Options::default() };
                a.invalid.apply(&mut options);
                ("count", options, &a.common)
            }
            Query::Covariance(a) => ("covariance", a.options(), &a.common),
            Query::Regress(a) => ("regress", a.options(), &a.common),
            Query::Sum(a) => ("sum", a.options(), &a.common),
            Query::Mean(a) => ("mean", a.options(), &a.common),
            Query::Variance(a) => ("variance", a.options(), &a.common),
            Query::Histogram(a) => ("histogram", a.options(), &a.common),
            Query::Quantile(a) => ("quantile", a.rank.options(a.levels.clone()), &a.rank.common),
            Query::Median(a) => ("median", a.rank.options(vec![]), &a.rank.common),
            Query::Budget(_)
            | Query::Ledger(_)
            | Query::Check(_)
            | Query::Plan(_)
            | Query::Completions(_)
            | Query::Man(_)
            | Query::Describe(_)
            | Query::Run(_)
            | Query::Sql(_) => return None,
            #[cfg(feature = "cluster")]
            Query::Cluster(_) => return None,
        };
        let options = Options { closed: common.closed, ..options };
        Some(ReleaseFlags { kind, options, common })
    }
}

/// `dpstat run`: a workload file and the flags that are not part of it.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Workload file (TOML): total `epsilon`, `neighbours`, optionally `privacy_id` and
    /// `max_rows_per_id` (protect people: each person's rows bounded once, for every query), and
    /// one `[[query]]` table per query.
    #[arg(value_name = "WORKLOAD")]
    pub workload: PathBuf,
    /// How to print: --format text is a table, csv the same rows as CSV, json one line per query.
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub ledger: LedgerArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `dpstat sql "QUERY" [FILE…]`.
#[derive(Args, Debug)]
pub struct SqlArgs {
    /// The query: SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = E, and optionally delta,
    /// privacy_unit_column, max_groups_contributed or max_rows_contributed), then the GROUP BY
    /// column and the aggregates, FROM t, and optionally WHERE … and GROUP BY key.
    #[arg(value_name = "QUERY")]
    pub query: String,
    /// Bind a FROM name to a file, directory or glob: --table professors=data/professors.csv
    /// (repeatable). Without FILE or a binding, FROM names the path itself (`path` in
    /// backticks), or stdin (or `-` in backticks) for standard input.
    #[arg(long = "table", value_name = "NAME=PATH")]
    pub tables: Vec<String>,
    /// The public keys of the GROUP BY column, comma-separated (or WHERE key IN (…) in the query):
    /// only these groups are released.
    #[arg(long, value_name = "K1,K2,...")]
    pub keys: Option<Keys>,
    /// Print the workload the query translates to, and its epsilon split, without reading data.
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub ledger: LedgerArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `dpstat describe`: the columns, the levels, and the flags of a release (no --by).
#[derive(Args, Debug)]
pub struct DescribeArgs {
    /// Columns to describe, comma-separated: NAME:LOWER:UPPER (public bounds) or NAME (bounds
    /// found privately for the mean; bounds-free candidates for the quantiles). An item whose
    /// name holds a comma or a quote goes in double quotes, a quote inside doubled:
    /// '"income, net:0:1e6",age'.
    #[arg(long, value_name = "COL[:L:U],...", required = true, allow_hyphen_values = true)]
    pub cols: Vec<DescribeColumns>,
    /// Quantile levels of every column, in (0, 1), exact decimals; they split the quantiles'
    /// half of a column's ε evenly.
    #[arg(
        short = 'q',
        long = "q",
        value_name = "Q",
        value_delimiter = ',',
        value_parser = number::<Level>,
        default_value = "0.5"
    )]
    pub levels: Vec<Level>,
    /// Total privacy budget ε of the summary, read as an exact decimal.
    #[arg(short = 'e', long, visible_alias = "epsilon", value_name = "E", allow_negative_numbers = true)]
    pub eps: Epsilon,
    /// Each column's ε, in the order of --cols, exact decimals that add up to --eps exactly
    /// (default: an even split).
    #[arg(long, value_name = "E1,E2,...", value_delimiter = ',', value_parser = number::<Epsilon>)]
    pub shares: Option<Vec<Epsilon>>,
    /// Number of evenly spaced quantile candidates over a column's [L, U], 2 to 1000001 (default:
    /// round multiples of a step 1, 2 or 5 times a power of ten, every integer for integer
    /// bounds at least 20 apart).
    #[arg(long, value_name = "K")]
    pub resolution: Option<usize>,
    /// What to do with a missing or non-numeric cell: error, skip (add-remove only), or impute=V.
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidPolicy,
    /// Privacy unit: add-remove (one row added or removed) or replace (one row changed; n public).
    #[arg(long, value_enum, value_name = "UNIT", default_value_t)]
    pub neighbours: Neighbours,
    /// Use only rows that pass the filter (as for every query; repeatable, all must hold).
    #[arg(short = 'w', long = "where", value_name = "FILTER")]
    pub filters: Vec<Filter>,
    /// Output format: an aligned table, csv (its rows, each value and bound in columns of their
    /// own), or JSON lines (one object per query, as a workload prints).
    #[arg(short = 'f', short_alias = 'o', long, value_enum, default_value_t)]
    pub format: Format,
    /// Level of the printed accuracy bounds, in (0, 1).
    #[arg(long, value_name = "C", default_value = "0.95", allow_negative_numbers = true)]
    pub confidence: Confidence,
    #[command(flatten)]
    pub precision: PrecisionArgs,
    /// Taken, as the statistics take it, and changes nothing: the table always prints each
    /// value's error bound.
    #[arg(short = 'E', long)]
    pub with_error: bool,
    #[command(flatten)]
    pub person: PersonArgs,
    #[command(flatten)]
    pub ledger: LedgerArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Args, Debug)]
pub struct CountArgs {
    /// Release a negative noisy count as 0 (post-processing; biases small counts upwards).
    #[arg(long)]
    pub nonnegative: bool,
    /// With --closed: what to do with a row whose --by key is not listed: error, skip
    /// (add-remove only), or impute=K (count it under the listed key K).
    #[arg(long, value_name = "POLICY", default_value = "error", requires = "closed")]
    pub invalid: InvalidFlag,
    #[command(flatten)]
    pub common: Common,
}

/// Flags of the two-column queries' bounds and cells.
#[derive(Args, Debug)]
pub struct PairArgs {
    /// Lower clamping bounds of x and y (public), comma-separated: --lower 0,0.
    #[arg(short = 'l', long, value_name = "LX,LY", allow_hyphen_values = true)]
    pub lower: Option<BoundPair>,
    /// Upper clamping bounds of x and y (public), comma-separated: --upper 100,200000.
    #[arg(short = 'u', long, value_name = "UX,UY", allow_hyphen_values = true)]
    pub upper: Option<BoundPair>,
    /// What to do with a missing or non-numeric cell: error, skip (add-remove only; the row is
    /// dropped), or impute=V (the same V for both columns).
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidFlag,
}

impl PairArgs {
    fn options(&self, x: &str, y: &str) -> Options {
        Options {
            column: Some(x.to_string()),
            y_column: Some(y.to_string()),
            lower: self.lower.map(|p| p.0),
            y_lower: self.lower.map(|p| p.1),
            upper: self.upper.map(|p| p.0),
            y_upper: self.upper.map(|p| p.1),
            invalid: self.invalid.policy,
            impute: self.invalid.impute.clone(),
            ..Options::default()
        }
    }
}

#[derive(Args, Debug)]
pub struct CovarianceArgs {
    /// The two columns, x then y, comma-separated (with --no-header, 1-based indices); a name
    /// with a comma or a quote goes in double quotes: '"income, net",age'.
    #[arg(long, value_name = "X,Y")]
    pub cols: ColumnPair,
    #[command(flatten)]
    pub pair: PairArgs,
    #[command(flatten)]
    pub common: Common,
}

impl CovarianceArgs {
    pub fn options(&self) -> Options {
        self.pair.options(&self.cols.0, &self.cols.1)
    }
}

#[derive(Args, Debug)]
pub struct RegressArgs {
    /// The explanatory column x (with --no-header, a 1-based index).
    #[arg(long, value_name = "NAME", allow_negative_numbers = true)]
    pub x: String,
    /// The response column y, whose slope on x is released.
    #[arg(long, value_name = "NAME", allow_negative_numbers = true)]
    pub y: String,
    #[command(flatten)]
    pub pair: PairArgs,
    #[command(flatten)]
    pub common: Common,
}

impl RegressArgs {
    pub fn options(&self) -> Options {
        self.pair.options(&self.x, &self.y)
    }
}

/// Flags of the queries that read one numeric column.
#[derive(Args, Debug)]
pub struct NumericArgs {
    /// Column: a header name, or a 1-based number ('"2"' is the column named 2).
    #[arg(
        short = 'c',
        long,
        visible_alias = "column",
        visible_short_alias = 's',
        value_name = "COL",
        allow_negative_numbers = true
    )]
    pub col: String,
    /// Lower clamping bound L (public). Without --lower/--upper, part of ε finds bounds privately.
    #[arg(short = 'l', long, value_name = "L", allow_hyphen_values = true)]
    pub lower: Option<Finite>,
    /// Upper clamping bound U (public).
    #[arg(short = 'u', long, value_name = "U", allow_hyphen_values = true)]
    pub upper: Option<Finite>,
    /// ε spent finding bounds privately when --lower/--upper are omitted (default: a tenth of --eps).
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    pub bounds_eps: Option<Epsilon>,
    /// What to do with a missing or non-numeric cell: error, skip (add-remove only), or impute=V.
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidFlag,
    /// sum, mean with --privacy-id: each person's total in a group (over their kept rows)
    /// clamped to [L, U], instead of --lower/--upper on each row. Sensitivity from the clamp:
    /// sum max(|L|,|U|), mean over persons (U−L)/2 and 1, not K times a row's.
    #[arg(
        long,
        value_name = "L,U",
        allow_hyphen_values = true,
        value_parser = values::total_per_id,
        conflicts_with = "average_per_id",
        help_heading = "Privacy unit"
    )]
    pub total_per_id: Option<(Finite, Finite)>,
    /// mean with --privacy-id: the mean of per-person averages (BigQuery's AVG), each clamped
    /// to [--lower, --upper]; a person weighs one whatever their rows.
    #[arg(long, help_heading = "Privacy unit")]
    pub average_per_id: bool,
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
            invalid: self.invalid.policy,
            impute: self.invalid.impute.clone(),
            per_id: self.per_id(),
            ..Options::default()
        }
    }

    /// `--total-per-id` (its bounds checked when the statistic is built) or `--average-per-id`.
    fn per_id(&self) -> Option<PerId> {
        match (self.total_per_id, self.average_per_id) {
            (Some((l, u)), _) => Some(PerId::Total(l, u)),
            (None, true) => Some(PerId::Average),
            (None, false) => None,
        }
    }
}

#[derive(Args, Debug)]
pub struct HistogramArgs {
    /// Column: a header name, or a 1-based number ('"2"' is the column named 2).
    #[arg(
        short = 'c',
        long,
        visible_alias = "column",
        visible_short_alias = 's',
        value_name = "COL",
        allow_negative_numbers = true
    )]
    pub col: String,
    /// Numeric histogram: K equal-width bins over [L, U]; values outside go to the edge bins.
    #[arg(long, value_name = "K", conflicts_with = "categories", allow_negative_numbers = true)]
    pub bins: Option<usize>,
    /// Categorical histogram over this public list; unlisted values count in the bin `other`.
    /// A category with a comma or a quote goes in double quotes, a quote inside doubled:
    /// '"Smith, Ann",Lee'.
    #[arg(long, value_name = "A,B,...")]
    pub categories: Option<Categories>,
    /// Lower edge of the first bin (numeric histogram).
    #[arg(short = 'l', long, value_name = "L", allow_hyphen_values = true, conflicts_with = "categories")]
    pub lower: Option<Finite>,
    /// Upper edge of the last bin (numeric histogram).
    #[arg(short = 'u', long, value_name = "U", allow_hyphen_values = true, conflicts_with = "categories")]
    pub upper: Option<Finite>,
    /// ε spent finding bounds privately when --lower/--upper are omitted (default: a tenth of --eps).
    #[arg(long, value_name = "E", conflicts_with = "categories", allow_negative_numbers = true)]
    pub bounds_eps: Option<Epsilon>,
    /// What to do with a missing or non-numeric cell (numeric bins), or with --closed a category
    /// not listed: error, skip (add-remove only), or impute=V.
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidFlag,
    /// Release negative noisy bin counts as 0 (post-processing; biases small bins upwards).
    #[arg(long)]
    pub nonnegative: bool,
    /// Release proportions of the total instead of counts: bins clamped at 0, then divided by
    /// their sum (post-processing; implies --nonnegative).
    #[arg(long)]
    pub normalize: bool,
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
            invalid: self.invalid.policy,
            impute: self.invalid.impute.clone(),
            nonnegative: self.nonnegative || self.normalize,
            normalize: self.normalize,
            ..Options::default()
        }
    }
}

/// Flags of quantile and median.
#[derive(Args, Debug)]
pub struct RankArgs {
    /// Column: a header name, or a 1-based number ('"2"' is the column named 2).
    #[arg(
        short = 'c',
        long,
        visible_alias = "column",
        visible_short_alias = 's',
        value_name = "COL",
        allow_negative_numbers = true
    )]
    pub col: String,
    /// Lowest candidate L (public); without --lower/--upper, AboveThreshold scans a public
    /// log-scale grid (a tenth of ε then pays for a noisy row count under add-remove).
    #[arg(short = 'l', long, value_name = "L", allow_hyphen_values = true, requires = "upper")]
    pub lower: Option<Finite>,
    /// Highest candidate U (public).
    #[arg(short = 'u', long, value_name = "U", allow_hyphen_values = true, requires = "lower")]
    pub upper: Option<Finite>,
    /// Number of evenly spaced candidates over [L, U], 2 to 1000001 (default: round multiples of a
    /// step 1, 2 or 5 times a power of ten, every integer for integer bounds at least 20
    /// apart).
    #[arg(long, value_name = "K", requires = "lower", allow_negative_numbers = true)]
    pub resolution: Option<usize>,
    /// What to do with a missing or non-numeric cell: error, skip (add-remove only), or impute=V.
    #[arg(long, value_name = "POLICY", default_value = "error")]
    pub invalid: InvalidFlag,
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
            invalid: self.invalid.policy,
            impute: self.invalid.impute.clone(),
            levels,
            ..Options::default()
        }
    }
}

#[derive(Args, Debug)]
pub struct QuantileArgs {
    /// Quantile level(s) in (0, 1), exact decimals; several (repeat or comma-separate) split ε evenly.
    #[arg(
        short = 'q',
        long = "q",
        value_name = "Q",
        required = true,
        value_delimiter = ',',
        value_parser = number::<Level>,
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
