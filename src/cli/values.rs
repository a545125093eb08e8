//! The value types of flags that only the command line has: the clap mirrors of the privacy
//! unit and the output format, the delimiter and the thread count.

use std::path::Path;
use std::str::FromStr;

use clap::{Args, ValueEnum};

use crate::cmd::describe::DescribeColumn;
use crate::cmd::release::NoiseKind;
use crate::numeric::bounds::Finite;
use crate::numeric::list;
use crate::privacy::unit;
use crate::report::text::{self, Style};

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

/// `--noise` (`cmd::release::NoiseKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Noise {
    /// Discrete Laplace noise: pure ε-DP (δ = 0).
    #[default]
    Laplace,
    /// Discrete Gaussian noise: ρ-zCDP, stated as (ε, δ) at --delta; less error than Laplace
    /// for large workloads and vectors (histograms, --by) at the same (ε, δ).
    Gaussian,
}

impl From<Noise> for NoiseKind {
    fn from(n: Noise) -> NoiseKind {
        match n {
            Noise::Laplace => NoiseKind::Laplace,
            Noise::Gaussian => NoiseKind::Gaussian,
        }
    }
}

/// `--max-keys`: how many distinct keys `--discover` may hold, 1 to [`MaxKeys::MAX`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxKeys(pub usize);

impl MaxKeys {
    /// A ceiling for the parser only: the memory check before any charge
    /// (`data::scan::check_memory`) refuses a cap whose worst case does not fit, which for a
    /// count by keys found in the data is between 818,000 and 850,000 keys, fewer for a
    /// statistic with a larger fold.
    pub const MAX: usize = 10_000_000;
}

impl std::fmt::Display for MaxKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for MaxKeys {
    type Err = String;
    fn from_str(s: &str) -> Result<MaxKeys, String> {
        match s.trim().parse::<usize>() {
            Ok(n) if (1..=MaxKeys::MAX).contains(&n) => Ok(MaxKeys(n)),
            _ => Err(format!("--max-keys must be a whole number from 1 to {}", MaxKeys::MAX)),
        }
    }
}

/// `--format` (`text::Format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// One number on a line; a histogram as CSV `bin,count`; run, sql and describe an
    /// aligned table.
    #[default]
    Text,
    /// One JSON object with the release and how to read it; run, sql and describe one line
    /// per query.
    Json,
    /// Bars of a release of several numbers (bins, --by groups, --q levels, a workload), each
    /// with its ± accuracy band (not describe, budget or plan).
    Chart,
    /// CSV with one header line, each value and its error bound in columns of their own (the
    /// text's rows, unpadded; a lone number as `value,error(95%)`); notes stay on stderr.
    Csv,
}

impl From<Format> for text::Format {
    fn from(f: Format) -> text::Format {
        match f {
            Format::Text => text::Format::Text,
            Format::Json => text::Format::Json,
            Format::Chart => text::Format::Chart,
            Format::Csv => text::Format::Csv,
        }
    }
}

/// Two comma-separated columns, x first (`--cols age,income`); a name that holds a comma or a
/// quote is CSV-quoted (`--cols '"income, net",age'`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnPair(pub String, pub String);

impl FromStr for ColumnPair {
    type Err = String;
    fn from_str(s: &str) -> Result<ColumnPair, String> {
        match &list::items(s)?[..] {
            [x, y] if !x.text.trim().is_empty() && !y.text.trim().is_empty() => {
                Ok(ColumnPair(x.text.clone(), y.text.clone()))
            }
            _ => Err("give two columns, x then y, separated by a comma: --cols age,income".into()),
        }
    }
}

/// Two comma-separated bounds, x's then y's (`--lower 0,0`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoundPair(pub Finite, pub Finite);

impl FromStr for BoundPair {
    type Err = String;
    fn from_str(s: &str) -> Result<BoundPair, String> {
        let Some((x, y)) = list::refuse_quotes(s)?.split_once(',') else {
            return Err(
                "give two bounds, x's then y's, separated by a comma: --lower 0,0 --upper 100,200000".into(),
            );
        };
        Ok(BoundPair(x.trim().parse()?, y.trim().parse()?))
    }
}

/// `--total-per-id L,U`: two bounds, the lower first.
pub fn total_per_id(s: &str) -> Result<(Finite, Finite), String> {
    let Some((l, u)) = list::refuse_quotes(s)?.split_once(',') else {
        return Err("give the bounds of a person's total as L,U: --total-per-id 0,1000".into());
    };
    Ok((l.trim().parse()?, u.trim().parse()?))
}

/// An item of a numeric list flag (`--q 0.1,0.9`, `--shares`), which clap splits at its
/// commas: a quote is refused by name (numbers need none) rather than read as part of a number.
pub fn number<T: FromStr<Err = String>>(item: &str) -> Result<T, String> {
    list::refuse_quotes(item)?.parse()
}

/// `describe --cols`: columns as one CSV record, each item `NAME` or `NAME:LOWER:UPPER`; a name
/// that holds a comma or a quote is written with its item in double quotes
/// (`--cols '"income, net:0:1e6",age'`). Repeating the flag adds columns.
#[derive(Clone, Debug, PartialEq)]
pub struct DescribeColumns(pub Vec<DescribeColumn>);

impl FromStr for DescribeColumns {
    type Err = String;
    fn from_str(s: &str) -> Result<DescribeColumns, String> {
        list::items(s)?.iter().map(|item| item.text.parse()).collect::<Result<_, _>>().map(DescribeColumns)
    }
}

/// `--delimiter`: one ASCII byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delimiter(pub u8);

impl Delimiter {
    /// The delimiter a file's name implies: a tab for `.tsv` and `.tab` (also gzipped), as
    /// xsv, xan and miller read them; else a comma (standard input included).
    pub fn for_file(file: Option<&Path>) -> Delimiter {
        let name = file.and_then(Path::file_name).map(|n| n.to_string_lossy().to_ascii_lowercase());
        let name = name.as_deref().unwrap_or_default();
        let name = name.strip_suffix(".gz").unwrap_or(name);
        if name.ends_with(".tsv") || name.ends_with(".tab") {
            Delimiter(b'\t')
        } else {
            Delimiter(b',')
        }
    }
}

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

    #[test]
    fn parses_delimiters_and_threads() {
        assert_eq!("\\t".parse::<Delimiter>(), Ok(Delimiter(b'\t')));
        assert!(";;".parse::<Delimiter>().is_err());
        for (name, delimiter) in [
            ("a.tsv", b'\t'),
            ("A.TAB", b'\t'),
            ("a.tsv.gz", b'\t'),
            ("a.csv", b','),
            ("tsv", b','),
            ("-", b','),
        ] {
            assert_eq!(Delimiter::for_file(Some(Path::new(name))), Delimiter(delimiter), "{name}");
        }
        assert_eq!(Delimiter::for_file(None), Delimiter(b','));
        assert_eq!("4".parse::<Threads>().map(Threads::get), Ok(4));
        assert!("0".parse::<Threads>().is_err());
        assert!("-1".parse::<Threads>().is_err());
        assert!("1025".parse::<Threads>().is_err());
        assert!(Threads::all_cores().get() >= 1);
    }

    #[test]
    fn parses_pairs() {
        assert_eq!("age, income".parse::<ColumnPair>(), Ok(ColumnPair("age".into(), "income".into())));
        for bad in ["age", "age,", ",income", "a,b,c"] {
            assert!(bad.parse::<ColumnPair>().is_err(), "{bad}");
        }
        let BoundPair(x, y) = "-5,1e3".parse().unwrap();
        assert_eq!((x.get(), y.get()), (-5.0, 1000.0));
        for bad in ["0", "0,x", "0,inf", "0,1,2"] {
            assert!(bad.parse::<BoundPair>().is_err(), "{bad}");
        }
        assert!("\"0\",1".parse::<BoundPair>().unwrap_err().contains("no quotes"));
        // Column names are a CSV record: a quoted name keeps its comma and its spaces.
        assert_eq!(
            "\"income, net\", \" age\"".parse::<ColumnPair>(),
            Ok(ColumnPair("income, net".into(), " age".into()))
        );
        for bad in ["\"a,b", "\"a,b\"", "\"a\",\"\""] {
            assert!(bad.parse::<ColumnPair>().is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_list_items() {
        assert_eq!(number::<Finite>(" 0.5").map(Finite::get), Ok(0.5));
        assert!(number::<Finite>("\"0.5").unwrap_err().contains("no quotes"));
        let DescribeColumns(columns) = "\"income, net:0:10\", age".parse().unwrap();
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["income, net", "age"]);
        assert_eq!(columns[0].bounds.map(|b| (b.0.get(), b.1.get())), Some((0.0, 10.0)));
        assert!("\"income:0:1,age".parse::<DescribeColumns>().unwrap_err().contains("never closed"));
        assert!("income,,age".parse::<DescribeColumns>().unwrap_err().contains("empty"));
    }
}

/// How many digits text output prints: the same for every query, a workload and `describe`.
/// JSON always has every value in full. Rounding reads only the release (post-processing), so
/// no flag here changes what is private.
#[derive(Args, Debug)]
pub struct PrecisionArgs {
    /// Text: round each value to the decimal place of its error bound's second significant
    /// digit. Kept for scripts: it is the default, so it changes nothing.
    #[arg(short = 'r', long)]
    pub round: bool,
    /// Text: N significant digits (1 to 17) for every printed value, instead of the digits
    /// its accuracy supports; a printed bound still covers the rounding.
    #[arg(long, value_name = "N", value_parser = digits, conflicts_with = "full_precision", allow_negative_numbers = true)]
    pub digits: Option<u8>,
    /// Text: every value in full, the shortest decimal that reads back as the same double; by
    /// default values are rounded to the digits the noise leaves meaningful: the place of their
    /// error bound's second significant digit.
    #[arg(long)]
    pub full_precision: bool,
}

impl PrecisionArgs {
    /// The rounding these flags ask for, without an error column.
    pub fn style(&self) -> Style {
        Style { with_error: false, round: !self.full_precision, digits: self.digits }
    }
}

/// `--digits N`: 1 to 17 (a double has no more significant digits).
fn digits(s: &str) -> Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(n) if (1..=17).contains(&n) => Ok(n),
        _ => Err("a whole number of significant digits from 1 to 17".to_string()),
    }
}

/// `--max-rows-per-id`: a number, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowsPerId {
    Rows(u32),
    Auto,
}

impl std::str::FromStr for RowsPerId {
    type Err = String;

    fn from_str(s: &str) -> Result<RowsPerId, String> {
        match s.trim() {
            "auto" => Ok(RowsPerId::Auto),
            t => t.parse().map(RowsPerId::Rows).map_err(|_| {
                format!(
                    "'{}' is not a whole number of rows from 1 to 10000, or auto",
                    crate::error::shown(t, 20)
                )
            }),
        }
    }
}
