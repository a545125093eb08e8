//! A statistic's options as flags or workload keys give them, what every statistic's
//! validation needs besides them, and the rules several statistics share (bounds from flags,
//! the `--invalid` policy, which combinations of unit, filters and groups keep a sensitivity).

use std::str::FromStr;

use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive};

use crate::data::cell::{InvalidPolicy, NumberCell};
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::bins::{Categories, Keys, Outside};
use crate::numeric::bounds::{Bounds, Finite};
use crate::numeric::exact::parse_decimal;
use crate::privacy::delta::Delta;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::noise::Mechanism;
use crate::privacy::unit::Neighbours;
use crate::query::bounds::{self, Clamped, LogFold};
use crate::query::per_id::PerId;

/// Everything a statistic may be given; each takes what it needs and refuses nothing it does
/// not know (clap and the workload's key check refuse those first).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The column as typed: a header name or a 1-based number (only a number with --no-headers).
    pub column: Option<String>,
    pub lower: Option<Finite>,
    pub upper: Option<Finite>,
    /// `--bounds-eps`: the share of ε that finds bounds privately.
    pub bounds_eps: Option<Epsilon>,
    pub bins: Option<usize>,
    pub categories: Option<Categories>,
    pub invalid: InvalidPolicy,
    /// Quantile levels (`--q`).
    pub levels: Vec<Level>,
    pub resolution: Option<usize>,
    /// The second column of covariance and regress (y; `column` is x), with its bounds.
    pub y_column: Option<String>,
    pub y_lower: Option<Finite>,
    pub y_upper: Option<Finite>,
    /// `--nonnegative`: counts (and bins) below 0 are released as 0.
    pub nonnegative: bool,
    /// `--normalize`: a histogram released as proportions of its (nonnegative) total.
    pub normalize: bool,
    /// `histogram --discover`: categories found in the data (`query::discover`).
    pub discover: Option<Discovery>,
    /// `--closed`: the listed `--keys` / `--categories` are the whole domain ([`close_lists`]).
    pub closed: bool,
    /// `--invalid impute=V` as typed: V is also a key or category of a closed list, which need
    /// not be a number.
    pub impute: Option<Impute>,
    /// `--total-per-id` / `--average-per-id`: one clamped value per person (`query::per_id`).
    pub per_id: Option<PerId>,
}

impl Options {
    /// Whether `--lower`, `--upper` or `--bounds-eps` was given: the clamp of each row.
    pub fn has_row_bounds(&self) -> bool {
        self.lower.is_some() || self.upper.is_some() || self.bounds_eps.is_some()
    }
}

/// `--invalid` as typed: the policy of a number cell, and for `impute=V` the text V, which a
/// closed list (`--closed`) reads as one of its names. A V that is not a number leaves the number
/// policy at `error` (so nothing that reads numbers can take it silently) and is refused for a
/// statistic that reads numbers ([`check_impute`]).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct InvalidFlag {
    pub policy: InvalidPolicy,
    pub impute: Option<Impute>,
}

/// The V of `--invalid impute=V`: its text, and its number or why it is none.
#[derive(Clone, Debug, PartialEq)]
pub struct Impute {
    pub text: String,
    pub number: Result<Finite, String>,
}

impl FromStr for InvalidFlag {
    type Err = String;
    fn from_str(s: &str) -> Result<InvalidFlag, String> {
        match s.strip_prefix("impute=") {
            Some(v) => {
                let number = v.parse::<Finite>().map_err(|e| format!("impute value: {e}"));
                let policy = number.as_ref().map_or(InvalidPolicy::Error, |&n| InvalidPolicy::Impute(n));
                Ok(InvalidFlag { policy, impute: Some(Impute { text: v.to_string(), number }) })
            }
            None => Ok(InvalidFlag { policy: s.parse()?, impute: None }),
        }
    }
}

impl InvalidFlag {
    /// Sets `options`' policy and imputed text.
    pub fn apply(&self, options: &mut Options) {
        options.invalid = self.policy;
        options.impute = self.impute.clone();
    }
}

/// `--invalid impute=V` with a V that is not a number is only for a closed list's key or
/// category: refused for a statistic that reads a number column, with the reason a number
/// column would give.
pub fn check_impute(kind: &str, options: &Options) -> Result<(), Error> {
    let reads_text = kind == "count" || (kind == "histogram" && options.bins.is_none());
    match &options.impute {
        Some(Impute { text, number: Err(why) }) if !reads_text => {
            Err(Error::usage(format!("--invalid impute={}: {why}", crate::error::shown(text, 40))))
        }
        _ => Ok(()),
    }
}

/// `--closed`: the listed `--keys` of `--by` and a histogram's `--categories` (whichever are
/// given) are declared the whole domain. No `other` group or bin is released, and a row whose
/// cell is not listed is invalid input, handled by `--invalid` as an invalid number cell is:
/// `error` refuses it (and is refused under a ledger, [`check_invalid_policy`]), `skip` drops
/// the row (add-remove only), `impute=V` counts it under V, which must be listed. Checked here,
/// before anything is read or charged. The sensitivities stay those of the open lists
/// (`query::group`, `query::histogram`).
pub fn close_lists(
    options: &mut Options,
    keys: Option<&mut Keys>,
    neighbours: Neighbours,
    ledger: bool,
) -> Result<(), Error> {
    if !options.closed {
        return Ok(());
    }
    if options.discover.is_some() {
        return Err(Error::usage(DISCOVER_CLOSED));
    }
    let mut lists: Vec<(&mut Categories, &str)> = vec![];
    if let Some(keys) = keys {
        lists.push((keys.list_mut(), "--keys"));
    }
    if let Some(categories) = options.categories.as_mut() {
        lists.push((categories, "--categories"));
    }
    if lists.is_empty() {
        return Err(Error::usage(
            "--closed declares a listed domain complete: it needs --by COL --keys K1,K2,... or histogram \
             --categories A,B,...",
        ));
    }
    for (list, flag) in lists {
        let outside = match (&options.impute, options.invalid) {
            (Some(v), _) => match list.position(&v.text) {
                Some(i) => Outside::Impute(i),
                None => {
                    return Err(Error::usage(format!(
                        "--invalid impute={0}: '{0}' is not one of the {flag} listed; with --closed a row \
                         outside them is counted under V, so V must be one of them",
                        crate::error::shown(&v.text, 40)
                    )))
                }
            },
            (None, InvalidPolicy::Skip) => Outside::Skip,
            (None, _) => Outside::Error,
        };
        // An imputed row is kept under replace and stops nothing under a ledger.
        let policy = match outside {
            Outside::Error => Some(InvalidPolicy::Error),
            Outside::Skip => Some(InvalidPolicy::Skip),
            Outside::Impute(_) => None,
        };
        if let Some(policy) = policy {
            check_policy(policy, neighbours, ledger)?;
        }
        list.close(outside);
    }
    Ok(())
}

/// Why `--closed` is refused with `--discover`.
pub const DISCOVER_CLOSED: &str =
    "--closed declares the listed --keys or --categories the whole domain; --discover finds \
     the keys in the data and lists none: leave out one of them";

/// What `--discover` asks for (`query::discover`): the δ of the selection and the cap on
/// distinct keys.
#[derive(Clone, Debug, PartialEq)]
pub struct Discovery {
    pub delta: Delta,
    pub max_keys: usize,
}

/// What every statistic's validation needs besides its options.
#[derive(Clone, Copy, Debug)]
pub struct Setup<'a> {
    /// The statistic's noise and its ε or ρ (its share in a workload).
    pub mechanism: &'a Mechanism,
    pub neighbours: Neighbours,
    pub has_header: bool,
    /// How many `--by` groups (the keys and `other`; 1 without `--by`).
    pub groups: usize,
    /// Rows are filtered by `--where`.
    pub filtered: bool,
    /// Bounds may be left out to be found privately (a single release; a workload's queries
    /// and a plan need them).
    pub private_bounds: bool,
    /// The release is charged to a ledger: nothing the rows hold may stop it.
    pub ledger: bool,
}

impl Setup<'_> {
    /// ε of a statistic that only has a Laplace (pure ε-DP) form; `--noise gaussian` is refused
    /// for it, naming why.
    pub fn epsilon(&self, what: &str) -> Result<&Epsilon, Error> {
        self.mechanism.epsilon().ok_or_else(|| {
            Error::usage(format!(
                "{what} has no Gaussian form (--noise gaussian covers count, sum, mean, variance, \
                 covariance, regress and histogram with public bounds and bins); use --noise laplace"
            ))
        })
    }

    /// One release per `--by` group.
    pub fn grouped(&self) -> bool {
        self.groups > 1
    }

    /// The statistic's column, parsed as `--col` takes it; a one-column statistic refuses a
    /// second column or pairs of bounds (a workload can write them as arrays).
    pub fn column(&self, options: &Options) -> Result<ColumnRef, Error> {
        if options.y_column.is_some() || options.y_lower.is_some() || options.y_upper.is_some() {
            return Err(Error::usage(
                "this query reads one column: give column, lower and upper as single values, not pairs",
            ));
        }
        ColumnRef::parse(options.column.as_deref().unwrap_or_default(), self.has_header, "--col")
    }
}

/// Clamping bounds: given by flags, or to be found privately with a share of ε.
#[derive(Clone, Debug, PartialEq)]
pub enum Clamp<S> {
    Given(S),
    Private { bounds_eps: Epsilon, rest: Epsilon },
}

impl<S: Clone> Clamp<S> {
    /// The empty fold: the statistic's own (`given`) when its bounds are given, else the
    /// log-scale statistics that private bounds are chosen from.
    pub fn fold<F>(&self, cell: NumberCell, given: impl FnOnce(S, NumberCell) -> F) -> Clamped<F> {
        match self {
            Clamp::Given(spec) => Clamped::Given(given(spec.clone(), cell)),
            Clamp::Private { .. } => Clamped::Private(LogFold::new(cell)),
        }
    }
}

/// Both bounds, or neither (then a share of ε finds them privately, where the setup allows it);
/// never one.
pub fn clamp_bounds(query: &str, options: &Options, setup: &Setup) -> Result<Clamp<Bounds>, Error> {
    if !setup.private_bounds {
        return require_bounds(query, options.lower, options.upper).map(Clamp::Given);
    }
    match (options.lower, options.upper) {
        (Some(l), Some(u)) if options.bounds_eps.is_none() => Ok(Clamp::Given(Bounds::new(l, u)?)),
        (Some(_), Some(_)) => Err(Error::usage(
            "--bounds-eps pays for finding bounds privately; it has no use with --lower/--upper",
        )),
        // Bounds found privately are one pair for the whole column, not one per group.
        (None, None) if setup.grouped() => {
            Err(Error::usage("--by needs --lower/--upper: bounds found privately are not split by group"))
        }
        (None, None) => {
            let eps = setup.epsilon("finding bounds privately (--lower/--upper left out)")?;
            let (bounds_eps, rest) = bounds::split(eps, options.bounds_eps.as_ref())?;
            Ok(Clamp::Private { bounds_eps, rest })
        }
        (lower, upper) => match require_bounds(query, lower, upper) {
            Err(why) => Err(Error::usage(format!(
                "{why}; or leave out both to spend part of --eps finding them privately"
            ))),
            Ok(_) => Err(Error::internal("one bound is missing here")),
        },
    }
}

/// Bounds are flags, never statistics of the data; the message says why and how to give them.
pub fn require_bounds(query: &str, lower: Option<Finite>, upper: Option<Finite>) -> Result<Bounds, Error> {
    let missing = match (lower, upper) {
        (Some(l), Some(u)) => return Bounds::new(l, u),
        (Some(_), None) => "--upper U is missing",
        (None, Some(_)) => "--lower L is missing",
        (None, None) => "--lower L and --upper U are missing",
    };
    Err(Error::usage(format!(
        "{query} needs public clamping bounds and {missing}: add --lower L --upper U with the range \
         you expect the values to lie in (e.g. --lower 0 --upper 120 for ages). They fix how much one \
         row can change the result; dpstat never takes them from the data, because the column's min \
         or max would reveal the rows that hold them"
    )))
}

/// `--invalid skip` makes the number of rows depend on the data, which `replace` declares public.
/// Under a ledger `--invalid error` is refused: a bad cell would stop the run after its charge
/// with a message, an exit code and a stop that all answer a question about the rows (does a
/// row matching `--where` hold text in this column?) that no noise protects.
pub fn check_invalid_policy(invalid: InvalidPolicy, setup: &Setup) -> Result<(), Error> {
    check_policy(invalid, setup.neighbours, setup.ledger)
}

/// [`check_invalid_policy`] from the unit and whether there is a ledger.
fn check_policy(invalid: InvalidPolicy, neighbours: Neighbours, ledger: bool) -> Result<(), Error> {
    if invalid == InvalidPolicy::Error && ledger {
        // The fix first and short; why after it (a bad cell would stop a charged run, and the
        // stop would answer a question about the rows that no noise protects).
        return Err(Error::usage(
            "with --ledger, add --invalid skip or --invalid impute=V (in a workload: invalid = \"skip\"): \
             under a ledger a bad cell may not stop a charged release; `dpstat check FILE` lists them",
        ));
    }
    if invalid == InvalidPolicy::Skip && neighbours == Neighbours::Replace {
        return Err(Error::usage(
            "--invalid skip is refused with --neighbours replace: dropping rows would make the \
             public row count depend on the data; use --invalid impute=V or --neighbours add-remove",
        ));
    }
    Ok(())
}

/// A statistic whose sensitivity under replace uses the public row count n cannot be filtered:
/// the filtered count would be private.
pub fn refuse_filtered_replace(setup: &Setup, query: &str) -> Result<(), Error> {
    if setup.filtered && setup.neighbours == Neighbours::Replace {
        return Err(Error::usage(format!(
            "--where with --neighbours replace is not supported for {query}: the filtered row count \
             would be private, so the sensitivity would not hold; use --neighbours add-remove"
        )));
    }
    Ok(())
}

/// A statistic that divides by the row count cannot be grouped under replace: group sizes are
/// private there.
pub fn refuse_grouped_replace(setup: &Setup, query: &str) -> Result<(), Error> {
    if setup.grouped() && setup.neighbours == Neighbours::Replace {
        return Err(Error::usage(format!(
            "--by with --neighbours replace is not supported for {query}: each group's size would have to be \
             public, but a changed row can move between groups, so group sizes are private; \
             use --neighbours add-remove (the noisy count of each group is then part of the release)"
        )));
    }
    Ok(())
}

/// Levels are exact decimals with at most this many digits after the point.
const MAX_LEVEL_DIGITS: u32 = 9;

/// A quantile level q = numer/denom in (0, 1), exact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    pub numer: u128,
    pub denom: u128,
}

impl Level {
    pub const MEDIAN: Level = Level { numer: 1, denom: 2 };

    pub fn to_f64(&self) -> f64 {
        self.numer as f64 / self.denom as f64
    }
}

impl FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Level, String> {
        let q = parse_decimal(s).ok_or_else(|| format!("'{s}' is not a decimal number like 0.9"))?;
        let zero = BigRational::from_integer(0.into());
        let one = BigRational::from_integer(1.into());
        if q <= zero || q >= one {
            return Err(format!("the quantile level must be strictly between 0 and 1, not {s}"));
        }
        let limit = 10u128.pow(MAX_LEVEL_DIGITS);
        match (q.numer().abs().to_u128(), q.denom().to_u128()) {
            (Some(numer), Some(denom)) if denom <= limit => Ok(Level { numer, denom }),
            _ => Err(format!("quantile levels take at most {MAX_LEVEL_DIGITS} digits after the point")),
        }
    }
}

/// Only flag-given bounds can be planned: bounds found privately depend on the data.
pub fn unplannable() -> Error {
    Error::usage(
        "dpstat plan needs --lower L --upper U: accuracy with bounds found privately depends on the data",
    )
}
