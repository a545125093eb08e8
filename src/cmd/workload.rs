//! The workload file of `dpstat run`: read, and every query validated exactly as the same
//! command line would be (same grids, sensitivities and refusals) at its share of the total ε,
//! before any data is read. Every error names the file and the line.
//!
//! The file sets the total ε and the privacy unit; every `[[query]]` has a name, a kind, its
//! column and bounds, and an optional `share` of ε. Shares are exact decimals and must add up to
//! the total exactly; the queries without a share split what is left evenly (all of it when
//! none has one).
//!
//! `noise = "gaussian"` with `delta` makes every query a discrete Gaussian release: the total is
//! then ρ, given as `rho` or derived from `epsilon` and `delta` (`zcdp::rho_for`, rounded down),
//! and each query gets ρ·share/total (shares written in the total's own unit), so the parts add
//! up to ρ exactly; the whole is ρ-zCDP and is stated as (ε, δ) at `delta`.
//!
//! `privacy_id = "COL"` (or a list of columns) makes the unit one person: each person's rows
//! are bounded once for the whole workload, to `max_rows_per_id` (K, default 1) rows, and every
//! query runs at its share divided by [`query_factor`] on the bounded rows. With
//! `max_groups_per_id` (G) or `max_rows_per_group` (K_g) the bounding also keeps a person's rows
//! in at most G groups, K_g in each, of the one `by` column every grouped query shares
//! ([`GroupBounds`]), as a single `--by` release's bounding does.

use std::ops::Range;
use std::path::Path;

use anyhow::Result;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};
use serde::Deserialize;
use toml::{Spanned, Value};

use crate::cmd::release::{filter_specs, group_count, Groups, InputFlags, Job, Person, PersonFlags};
use crate::data::cell::DecimalMark;
use crate::data::filter::{Filter, FilterSpec};
use crate::data::source::{ColumnRef, CsvOptions, GroupSpec};
use crate::error::{bad_input, Error};
use crate::numeric::bins::{Categories, Keys};
use crate::numeric::bounds::Finite;
use crate::numeric::exact::{decimal, parse_decimal};
use crate::numeric::list;
use crate::privacy::accuracy::Confidence;
use crate::privacy::contribution::{Bounds, Factor, Unit, MAX_BOUND};
use crate::privacy::currency::Spend;
use crate::privacy::delta::Delta;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::noise::Mechanism;
use crate::privacy::unit::Neighbours;
use crate::privacy::zcdp::Rho;
use crate::query::discover::{Discovery, Shares, DEFAULT_MAX_KEYS};
use crate::query::options::{close_lists, InvalidFlag, Level, Options, Setup};
use crate::query::per_id::PerId;
use crate::query::statistic::{PlanContext, Statistic};
use crate::query::AnyStatistic;
use crate::report::text::{Format, Style};

/// A validated workload: the total, the unit and each query's plan at its share.
#[derive(Debug)]
pub struct Workload {
    /// The total: the mechanism every query draws with, at the whole ε or ρ.
    pub mechanism: Mechanism,
    /// The total ε as the file writes it (None when it gives rho).
    pub epsilon: Option<Epsilon>,
    pub neighbours: Neighbours,
    /// `privacy_id`: every query's rows bounded once, to K rows per person ([`person_factor`]).
    pub person: Option<Person>,
    pub queries: Vec<WorkloadQuery>,
    /// `decimal = ","`: the file's decimal mark, or `--decimal`'s when the workload gives none.
    pub decimal: DecimalMark,
    /// `discover = true`: the one selection of keys its discovered queries are released on.
    pub discovery: Option<Found>,
    /// `max_groups_per_id` or `max_rows_per_group` below K: the column and filters the
    /// person's rows are bounded by.
    pub group_bounds: Option<GroupBounds>,
}

/// A workload's bounding by group (G groups of one `by` column per person, K_g rows in each,
/// K in all): the column, and the `where` every query has, applied first.
#[derive(Clone, Debug)]
pub struct GroupBounds {
    pub by: ColumnRef,
    /// The keys every grouped query lists; None when they find them (`discover = true`).
    pub keys: Option<Keys>,
    pub filters: Vec<FilterSpec>,
}

/// A workload's bounds as written: K (`max_rows_per_id`), G (`max_groups_per_id`), K_g
/// (`max_rows_per_group`). With K alone (default 1), G = K_g = K: K rows in all, however they
/// fall in groups. With G or K_g, K_g defaults to K (as for a single release) or to 1 without
/// K, G to 1, and K to G·K_g (at most [`MAX_BOUND`]): each person's rows in G groups, K_g in each.
pub fn person_bounds(rows: Option<u32>, groups: Option<u32>, rows_per_group: Option<u32>) -> Bounds {
    if groups.is_none() && rows_per_group.is_none() {
        let k = rows.unwrap_or(1);
        return Bounds { rows: k, groups: k, rows_per_group: k };
    }
    let per_group = rows_per_group.or(rows).unwrap_or(1);
    let groups = groups.unwrap_or(1);
    let rows = rows.unwrap_or_else(|| groups.saturating_mul(per_group).min(MAX_BOUND));
    Bounds { rows, groups, rows_per_group: per_group }
}

/// Whether G or K_g binds: K kept rows fall in at most K groups with at most K in each, so
/// G ≥ K and K_g ≥ K bound nothing beyond K, and the workload bounds rows only.
pub fn by_group(bounds: &Bounds) -> bool {
    bounds.groups < bounds.rows || bounds.rows_per_group < bounds.rows
}

/// The name of a workload's selection part, in its output and accounting.
pub const SELECTION: &str = "selection";

/// The keys of a workload's discovered queries (`by = "COL"` with `discover = true`): one
/// partition selection (`query::discover`) on COL, shared by all of them and charged once at
/// its own part of the total, (ε_sel, δ); then every such query is released on the selected
/// keys only, at its own share. A row (or a person's kept rows) moves the selection's counts and
/// each query's releases in the keys it falls in: ε_sel + Σ ε_q by the module doc of
/// `query::discover` with several statistics instead of one, plus δ for a key that only
/// this row (person) creates being selected.
#[derive(Clone, Debug)]
pub struct Found {
    /// COL.
    pub by: ColumnRef,
    pub discovery: Discovery,
    /// The selection's part of the total, split as a discovery's (`discover::Shares`, the
    /// counts being the selection's own): a tenth to the key cap, the rest to the keys.
    pub shares: Shares,
    /// (ε_sel, δ): what the selection spends.
    pub spend: Spend,
    /// The `where` every discovered query has: the rows the selection counts.
    pub filters: Vec<FilterSpec>,
    /// Where the selection was asked for, as messages about it begin.
    pub origin: String,
    /// `--confidence`, for the accuracy of the selection's counts.
    pub confidence: Confidence,
}

/// What one person moves each query of a workload (or of `describe`) by: K, as rows, whether
/// the query is grouped or not (K² for ρ).
///
/// A workload bounds each person's rows once, to at most K rows in all, before any query's
/// `where` or `by` (`cmd::run`). Adding or removing one person then adds or removes at most K
/// of the rows that every query reads (a query's filter only drops some of them), and changes
/// no one else's. An ungrouped query therefore moves as K rows would move it. A grouped query's
/// groups are disjoint, and the person's r_g rows in group g add up to Σ r_g ≤ K, with no group
/// holding more than K: its releases move by Σ r_g·ε' ≤ K·ε' together, and in ρ by
/// Σ r_g²·ρ' ≤ K·Σ r_g·ρ' ≤ K²·ρ'. That is a single grouped release's argument
/// (`privacy::contribution`) with the bounds G = K groups and K_g = K rows per group, which
/// holds for any spread of K rows over the groups, so its factor is the one computed here.
/// Bounding per group as well (G or K_g below K) needs the one `by` column the bounding groups
/// by: [`query_factor`].
pub fn person_factor(person: &Person) -> Factor {
    let k = person.bounds.rows;
    Bounds { rows: k, groups: k, rows_per_group: k }.factor(true)
}

/// What one person moves a workload query by: [`person_factor`] (or, bounded by group, the
/// factor of a single grouped release with the same G, K_g and K, `privacy::contribution`);
/// for a query of one value per person (`total_per_id`, `average_per_id`) one value in each of
/// their groups (`privacy::unit::Bounds::one_value_each`): 1 ungrouped, min(G, K) grouped.
///
/// Bounded by group ([`GroupBounds`]), every grouped query groups by the column the person's
/// rows were bounded by, after at least the `where` the bounding applied: the person's rows it
/// reads lie in at most G of its groups, at most K_g in each and K in all, which is all a
/// single release's factor assumes. An ungrouped query reads at most K of their rows.
pub fn query_factor(person: &Person, grouped: bool) -> Factor {
    match person.value_per_id {
        Some(_) => person.bounds.one_value_each(grouped).factor(grouped),
        None if by_group(&person.bounds) => person.bounds.factor(grouped),
        None => person_factor(person),
    }
}

/// The unit a workload query states: [`person_unit`], or one value per person's; bounded by
/// group, a grouped query states G and K_g too.
pub fn query_unit(person: &Person, grouped: bool) -> Unit {
    match person.value_per_id {
        Some(_) => person.unit_at(&person.bounds, grouped),
        None if by_group(&person.bounds) => person.unit(grouped),
        None => person_unit(person),
    }
}

/// The composition a grouped query of a person-level workload states.
pub const PER_PERSON: &str = "per person: the workload keeps at most max_rows_per_id rows of each person for all its \
     queries, so a person's kept rows fall in at most that many groups and together move the groups' releases \
     as rows_factor rows would; every group is released at epsilon divided by rows_factor (rho by rho_factor) \
     on the bounded rows, and the whole costs epsilon";

/// The composition a grouped query of a workload bounded by group states.
pub const PER_PERSON_GROUPS: &str = "per person: the workload keeps, of each person, rows in at most max_groups_per_id \
     groups of its by column, at most max_rows_per_group in each and max_rows_per_id in all, for all its queries, so \
     together they move the groups' releases as rows_factor rows would; every group is released at epsilon divided \
     by rows_factor (rho by rho_factor) on the bounded rows, and the whole costs epsilon";

/// The composition a grouped query of a person-level workload states: [`PER_PERSON`], or
/// bounded by group [`PER_PERSON_GROUPS`].
pub fn query_composition(person: &Person) -> &'static str {
    if by_group(&person.bounds) {
        PER_PERSON_GROUPS
    } else {
        PER_PERSON
    }
}

/// The unit every query of a workload states: one person, at most K rows, factor K; bounded
/// by group, with G and K_g.
pub fn person_unit(person: &Person) -> Unit {
    person.unit(by_group(&person.bounds))
}

/// `--privacy-id` and `--max-rows-per-id` of `describe` (and of any workload built from flags)
/// validated as a workload's person: K rows in all, and the per-group bounds refused.
pub fn workload_person(
    flags: &PersonFlags,
    has_header: bool,
    neighbours: Neighbours,
    what: &str,
) -> Result<Person, Error> {
    if flags.grouped_flags {
        return Err(Error::usage(format!(
            "--max-groups-per-id and --max-rows-per-group bound a person's rows across the groups of one \
             --by release; {what} bounds each person's rows once for all its queries, with \
             --max-rows-per-id K alone"
        )));
    }
    if flags.count_truncated {
        return Err(Error::usage(format!(
            "--count-truncated counts the people one release's bounds cut; {what} bounds each person's \
             rows once for all its queries: run the count as a single release"
        )));
    }
    if flags.auto {
        return Err(Error::usage(format!(
            "--max-rows-per-id auto chooses K for one release; {what} bounds each person's rows once for \
             all its queries: give K as a number (dpstat plan --max-rows-per-id 1,2,5,10 shows the noise at each)"
        )));
    }
    let k = flags.bounds.rows;
    let flags = PersonFlags { bounds: Bounds { rows: k, groups: k, rows_per_group: k }, ..flags.clone() };
    Person::new(&flags, has_header, false, neighbours)
}

#[derive(Debug)]
pub struct WorkloadQuery {
    pub name: String,
    /// Where the query was asked for, as messages about it begin: `w.toml line 5: query 'm'`.
    pub origin: String,
    /// The query validated as the same command line would be, at its share.
    pub job: Job,
}

impl WorkloadQuery {
    /// The error bound `dpstat plan` states for this query at its share, with `rows` assumed,
    /// or why the statistic is not planned.
    pub fn planned_error(&self, confidence: Confidence, rows: Option<u64>) -> Result<f64, String> {
        let cx = PlanContext {
            mechanism: &self.job.mechanism,
            neighbours: self.job.neighbours,
            confidence,
            rows,
            grouped: self.job.grouped(),
        };
        let planned = self.job.statistic.plan(&cx).map_err(|e| e.message().to_string())?;
        Ok(planned.noise.accuracy.error_bound)
    }
}

/// The file as written, with spans for messages.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    epsilon: Option<Spanned<Value>>,
    rho: Option<Spanned<Value>>,
    delta: Option<Spanned<Value>>,
    noise: Option<Spanned<String>>,
    neighbours: Option<Spanned<String>>,
    privacy_id: Option<Spanned<Value>>,
    max_rows_per_id: Option<Spanned<Value>>,
    /// Refused with a message of their own (a workload bounds rows only).
    max_groups_per_id: Option<Spanned<Value>>,
    max_rows_per_group: Option<Spanned<Value>>,
    /// The decimal mark of the data's number cells (`--decimal`).
    decimal: Option<Spanned<String>>,
    /// `discover = true` queries: the most distinct keys held (`--max-keys`), and the
    /// selection's share of the total (else an even part, as a query without a share).
    max_keys: Option<Spanned<i64>>,
    selection_share: Option<Spanned<Value>>,
    #[serde(default)]
    query: Vec<Spanned<RawQuery>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuery {
    name: Option<Spanned<String>>,
    kind: Option<Spanned<String>>,
    column: Option<Spanned<Value>>,
    lower: Option<Spanned<Value>>,
    upper: Option<Spanned<Value>>,
    share: Option<Spanned<Value>>,
    bins: Option<Spanned<i64>>,
    categories: Option<Spanned<Value>>,
    #[serde(rename = "where")]
    filters: Option<Spanned<Vec<String>>>,
    by: Option<Spanned<Value>>,
    keys: Option<Spanned<Value>>,
    /// `closed = true`: the keys (and categories) are the whole domain (`--closed`).
    closed: Option<Spanned<bool>>,
    /// `discover = true`: the groups of `by` are found in the data (the workload's selection).
    discover: Option<Spanned<bool>>,
    invalid: Option<Spanned<String>>,
    /// Quantile levels: `q = [0.5, 0.9]`, `q = 0.5` or `q = "0.5,0.9"`.
    q: Option<Spanned<Value>>,
    resolution: Option<Spanned<i64>>,
    /// `total_per_id = [L, U]` (`--total-per-id`).
    total_per_id: Option<Spanned<Value>>,
    /// `average_per_id = true` (`--average-per-id`).
    average_per_id: Option<Spanned<bool>>,
}

impl Workload {
    /// Reads and validates the workload file named by `args`, before any data is read; `ledger`
    /// says whether the release will be charged to one (some options are refused then).
    pub fn load(
        file: &Path,
        input: &InputFlags,
        confidence: Confidence,
        format: Format,
        ledger: bool,
    ) -> Result<Workload> {
        let path = file.display().to_string();
        let text = std::fs::read_to_string(file)
            .map_err(|e| bad_input(format!("cannot read workload {path}: {e}")))?;
        Workload::parse(&path, &text, input, (confidence, format), ledger).map_err(Into::into)
    }

    /// Parses and validates a workload's text. Every error names the file and the line.
    pub fn parse(
        path: &str,
        text: &str,
        input: &InputFlags,
        (confidence, format): (Confidence, Format),
        ledger: bool,
    ) -> Result<Workload, Error> {
        Workload::parse_as(path, text, input, (confidence, format), ledger, None)
    }

    /// As [`Workload::parse`], with the file's total replaced by `total` when given (its
    /// shares still split it in the same proportions): how `dpstat plan run` compares noises.
    pub fn parse_as(
        path: &str,
        text: &str,
        input: &InputFlags,
        (confidence, format): (Confidence, Format),
        ledger: bool,
        total: Option<&Mechanism>,
    ) -> Result<Workload, Error> {
        let file = SourceText { path, text };
        let raw: RawWorkload = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| file.line(s.start));
            file.error_at(line, e.message().trim())
        })?;
        let (mechanism, written, total_line) = file.total(&raw)?;
        let stated = stated_epsilon(&raw, &mechanism, &written);
        let mechanism = total.cloned().unwrap_or(mechanism);
        let neighbours = file.neighbours(&raw)?;
        let person = file.person(&raw, neighbours, input.csv.has_header)?;
        let mark = file.decimal_mark(&raw, input.csv.decimal)?;
        if raw.query.is_empty() {
            return Err(file.error_at(None, "the workload has no queries: add [[query]] tables"));
        }

        // Names and shares first: the shares decide every query's ε.
        let (names, mut shares) = file.names_and_shares(&raw)?;
        let discovery = file.discovery(&raw, &mechanism, neighbours)?;
        if discovery.is_some() {
            shares.push(file.selection_share(&raw, &names)?);
        }
        let unit = if matches!(mechanism, Mechanism::Gaussian { .. }) && raw.rho.is_some() {
            "rho"
        } else {
            "epsilon"
        };
        let mut parts =
            split_shares(&written, unit, &shares).map_err(|e| file.error_at(Some(total_line), &e))?;
        // The selection's part is the last, after every query's.
        let selection_part = discovery.as_ref().and_then(|_| parts.pop());

        let settings = Settings {
            mechanism: &mechanism,
            written: &written,
            total_line,
            person: person.as_ref(),
            discovery: discovery.as_ref().map(|d| &d.0),
            neighbours,
            input,
            output: (confidence, format),
            ledger,
        };
        let queries = file.queries(&raw, names, parts, &shares, &settings)?;
        let discovery = file.selection(discovery, selection_part, confidence, &queries, person.as_ref())?;
        let group_bounds = file.group_bounds(&raw, person.as_ref(), &queries)?;
        Ok(Workload {
            mechanism,
            epsilon: stated,
            neighbours,
            person,
            queries,
            decimal: mark,
            discovery,
            group_bounds,
        })
    }

    /// What the whole workload spends: ε, or ρ with Gaussian noise; (ε, δ) with a selection
    /// of keys, whose δ is the selection's.
    pub fn spend(&self) -> Spend {
        match (&self.discovery, &self.mechanism) {
            (Some(found), Mechanism::Laplace(eps)) => {
                Spend::Approx { eps: eps.clone(), delta: found.discovery.delta.clone() }
            }
            _ => self.mechanism.spend(),
        }
    }

    /// `flags` with the workload's decimal mark: how its data is read.
    pub fn input(&self, flags: &InputFlags) -> InputFlags {
        let csv = CsvOptions { decimal: self.decimal, ..flags.csv.clone() };
        InputFlags { csv, ..flags.clone() }
    }
}

/// The total ε as the file states it, before `dpstat plan run` replaces the total: a Laplace
/// workload's ε, or the epsilon a Gaussian one derives ρ from; None when the file gives rho.
fn stated_epsilon(raw: &RawWorkload, mechanism: &Mechanism, written: &BigRational) -> Option<Epsilon> {
    match mechanism {
        Mechanism::Laplace(eps) => Some(eps.clone()),
        Mechanism::Gaussian { .. } if raw.rho.is_none() => Epsilon::from_rational(written.clone()).ok(),
        Mechanism::Gaussian { .. } => None,
    }
}

/// The line of the i-th query's share, if it has one.
fn shares_line(shares: &[Option<(BigRational, usize)>], i: usize) -> Option<usize> {
    shares.get(i).and_then(|s| s.as_ref()).map(|(_, l)| *l)
}

/// Every query's part of the total (ε or ρ, as written; `unit` names it): its share, or an even
/// part of what the shares leave. With a share on every query, they must add up to the total
/// exactly.
fn split_shares(
    total_r: &BigRational,
    unit: &str,
    shares: &[Option<(BigRational, usize)>],
) -> Result<Vec<BigRational>, String> {
    let given: BigRational = shares.iter().flatten().fold(BigRational::zero(), |acc, (r, _)| acc + r);
    let lines: Vec<String> = shares.iter().flatten().map(|(_, l)| l.to_string()).collect();
    let missing = shares.iter().filter(|s| s.is_none()).count();
    let total = decimal(total_r);
    let rest = total_r - &given;
    if missing == 0 && rest != BigRational::zero() {
        return Err(format!(
            "the shares ({}) add up to {}, not to the total {unit} {}; shares are exact, \
             so write them to add up exactly (or leave some out to split the rest evenly)",
            lines_text(&lines),
            decimal(&given),
            total
        ));
    }
    if missing > 0 && !rest.is_positive() {
        return Err(format!(
            "the shares ({}) add up to {}, which leaves nothing of the total {unit} {} for \
             the {missing} queries without a share",
            lines_text(&lines),
            decimal(&given),
            total
        ));
    }
    let even = (missing > 0).then(|| rest / BigInt::from(missing));
    Ok(shares
        .iter()
        .map(|s| match (s, &even) {
            (Some((r, _)), _) => r.clone(),
            (None, Some(e)) => e.clone(),
            (None, None) => unreachable!("even is set whenever a share is missing"),
        })
        .collect())
}

fn lines_text(lines: &[String]) -> String {
    match lines {
        [one] => format!("line {one}"),
        _ => format!("lines {}", lines.join(", ")),
    }
}

/// Every query's name and its line, and its share as written and its line (None for a query
/// without one, which gets an even part of what the shares leave), in the file's order.
type NamesAndShares = (Vec<(String, usize)>, Vec<Option<(BigRational, usize)>>);

/// What every query of a workload is validated with: the total its part is taken of (the
/// mechanism, the total as written and the line that sets it), the file's person, selection and
/// unit, and the command line's input, output and ledger.
struct Settings<'a> {
    mechanism: &'a Mechanism,
    written: &'a BigRational,
    total_line: usize,
    person: Option<&'a Person>,
    discovery: Option<&'a Discovery>,
    neighbours: Neighbours,
    input: &'a InputFlags,
    output: (Confidence, Format),
    ledger: bool,
}

/// The workload text, for line numbers and exact numbers.
struct SourceText<'a> {
    path: &'a str,
    text: &'a str,
}

impl SourceText<'_> {
    /// The workload's total: its mechanism, the total as written (ε, or ρ when `rho` is given)
    /// that shares are parts of, and the line that sets it.
    fn total(&self, raw: &RawWorkload) -> Result<(Mechanism, BigRational, usize), Error> {
        let gaussian = self.gaussian(raw)?;
        let delta = self.delta(raw)?;
        if !gaussian {
            return self.laplace_total(raw);
        }
        self.gaussian_total(raw, delta)
    }

    /// `noise`, validated: whether the workload draws Gaussian noise (Laplace when the file
    /// names none).
    fn gaussian(&self, raw: &RawWorkload) -> Result<bool, Error> {
        match &raw.noise {
            None => Ok(false),
            Some(n) if n.get_ref() == "laplace" => Ok(false),
            Some(n) if n.get_ref() == "gaussian" => Ok(true),
            Some(n) => Err(self.error(
                n.span(),
                &format!("noise '{}' is not a mechanism: use \"laplace\" or \"gaussian\"", n.get_ref()),
            )),
        }
    }

    /// `delta`, validated with its line whatever the noise, so a bad one is refused before the
    /// total is read; None when the file has none.
    fn delta(&self, raw: &RawWorkload) -> Result<Option<(Delta, usize)>, Error> {
        let Some(d) = &raw.delta else { return Ok(None) };
        let (r, line) = self.exact_at(d, "delta")?;
        let delta = Delta::from_rational(r).map_err(|e| self.error_at(Some(line), &format!("delta: {e}")))?;
        Ok(Some((delta, line)))
    }

    /// A Laplace workload's total: its `epsilon`, which it needs, with neither `rho` nor a
    /// `delta` of its own.
    fn laplace_total(&self, raw: &RawWorkload) -> Result<(Mechanism, BigRational, usize), Error> {
        // A Laplace workload's delta is its selection's (discover = true): `discovery`.
        let delta = raw.delta.as_ref().filter(|_| !discovers(raw));
        if let Some(v) = raw.rho.as_ref().or(delta) {
            return Err(self.error(
                v.span(),
                "rho and delta belong to noise = \"gaussian\" (delta also to queries with discover = \
                 true); a Laplace workload is pure epsilon-DP",
            ));
        }
        let Some(total) = &raw.epsilon else {
            return Err(self.error_at(None, "the workload needs a total: add a line like epsilon = \"1\""));
        };
        let (eps, r, line) = self.epsilon(total)?;
        Ok((Mechanism::Laplace(eps), r, line))
    }

    /// A Gaussian workload's total, at the `delta` it needs: `rho` as given, or the largest ρ
    /// whose conversion at δ is at most `epsilon`.
    fn gaussian_total(
        &self,
        raw: &RawWorkload,
        delta: Option<(Delta, usize)>,
    ) -> Result<(Mechanism, BigRational, usize), Error> {
        let Some((delta, delta_line)) = delta else {
            return Err(self.error_at(
                None,
                "noise = \"gaussian\" needs delta = \"D\": the workload is rho-zCDP and states the (epsilon, \
                 delta) it converts to",
            ));
        };
        match (&raw.rho, &raw.epsilon) {
            (Some(_), Some(e)) => Err(self.error(e.span(), "give the total as rho or as epsilon, not both")),
            (Some(rho), None) => {
                let (r, line) = self.exact_at(rho, "rho")?;
                let rho = Rho::from_rational(r.clone())
                    .map_err(|e| self.error_at(Some(line), &format!("rho: {e}")))?;
                Ok((Mechanism::Gaussian { rho, delta }, r, line))
            }
            (None, Some(total)) => {
                let (eps, r, line) = self.epsilon(total)?;
                let rho = Rho::largest_for(&eps, &delta).map_err(|e| self.error_at(Some(line), &e))?;
                Ok((Mechanism::Gaussian { rho, delta }, r, line))
            }
            (None, None) => Err(self.error_at(
                Some(delta_line),
                "the workload needs a total: epsilon = \"E\" (rho derived at delta) or rho = \"R\"",
            )),
        }
    }

    /// `epsilon`, validated: the total ε, the number as written (what shares are parts of) and
    /// its line.
    fn epsilon(&self, total: &Spanned<Value>) -> Result<(Epsilon, BigRational, usize), Error> {
        let (r, line) = self.exact_at(total, "epsilon")?;
        let eps = Epsilon::from_rational(r.clone())
            .map_err(|e| self.error_at(Some(line), &format!("epsilon: {e}")))?;
        Ok((eps, r, line))
    }

    /// A key's exact decimal and its line; an error names the key.
    fn exact_at(&self, v: &Spanned<Value>, key: &str) -> Result<(BigRational, usize), Error> {
        let line = self.line(v.span().start);
        self.exact(v).map(|r| (r, line)).map_err(|e| self.error_at(Some(line), &format!("{key}: {e}")))
    }

    /// `neighbours`, validated: the privacy unit, add-remove when the file names none.
    fn neighbours(&self, raw: &RawWorkload) -> Result<Neighbours, Error> {
        Ok(match &raw.neighbours {
            None => Neighbours::AddRemove,
            Some(n) => Neighbours::from_name(n.get_ref()).ok_or_else(|| {
                self.error(
                    n.span(),
                    &format!(
                        "neighbours '{}' is not a privacy unit: use \"add-remove\" or \"replace\"",
                        n.get_ref()
                    ),
                )
            })?,
        })
    }

    /// Every query's name and share, read before anything else of the query because the shares
    /// decide every query's ε; a query without a name, with an empty one or one used twice is
    /// refused.
    fn names_and_shares(&self, raw: &RawWorkload) -> Result<NamesAndShares, Error> {
        let mut names: Vec<(String, usize)> = vec![];
        let mut shares: Vec<Option<(BigRational, usize)>> = vec![];
        for q in &raw.query {
            let table_line = self.line(q.span().start);
            let query = q.get_ref();
            let Some(name) = &query.name else {
                return Err(self.error_at(Some(table_line), "this query has no name: add name = \"...\""));
            };
            let line = self.line(name.span().start);
            let name_text = name.get_ref().trim();
            if name_text.is_empty() {
                return Err(self.error_at(Some(line), "a query name must not be empty"));
            }
            if let Some((_, first)) = names.iter().find(|(n, _)| n == name_text) {
                return Err(self.error_at(
                    Some(line),
                    &format!("query name '{name_text}' is used twice (first on line {first})"),
                ));
            }
            names.push((name_text.to_string(), line));
            shares.push(match &query.share {
                None => None,
                Some(share) => Some(self.share(share)?),
            });
        }
        Ok((names, shares))
    }

    /// With queries that discover their groups: the selection's share as written (None: an
    /// even part), once no query takes the name 'selection', which messages give the selection.
    fn selection_share(
        &self,
        raw: &RawWorkload,
        names: &[(String, usize)],
    ) -> Result<Option<(BigRational, usize)>, Error> {
        if let Some((_, line)) = names.iter().find(|(n, _)| n == SELECTION) {
            return Err(self.error_at(
                Some(*line),
                "query name 'selection' names the workload's selection of keys (discover = true): \
                 rename the query",
            ));
        }
        Ok(match &raw.selection_share {
            None => None,
            Some(share) => Some(self.share(share)?),
        })
    }

    /// Every query validated at its part of the total, in the file's order; an error names the
    /// query and the line of the key at fault (its share's, or the total's for an even part).
    fn queries(
        &self,
        raw: &RawWorkload,
        names: Vec<(String, usize)>,
        parts: Vec<BigRational>,
        shares: &[Option<(BigRational, usize)>],
        settings: &Settings,
    ) -> Result<Vec<WorkloadQuery>, Error> {
        let mut queries = Vec::with_capacity(raw.query.len());
        for ((q, (name, line)), part) in raw.query.iter().zip(names).zip(parts) {
            let at = shares_line(shares, queries.len()).unwrap_or(settings.total_line);
            let share = settings
                .mechanism
                .scaled(&(part / settings.written))
                .map_err(|e| self.error_at(Some(at), &format!("query '{name}': its share: {e}")))?;
            let job = self
                .query_job(q.get_ref(), line, share, settings)
                .map_err(|e| self.error_at(Some(e.0), &format!("query '{name}': {}", e.1)))?;
            let origin = format!("{} line {line}: query '{name}'", self.path);
            queries.push(WorkloadQuery { name, origin, job });
        }
        Ok(queries)
    }

    /// The selection of keys at its part of the total, once every query is validated (it needs
    /// their `by` and `where`); None when no query discovers its groups.
    fn selection(
        &self,
        discovery: Option<(Discovery, usize)>,
        part: Option<BigRational>,
        confidence: Confidence,
        queries: &[WorkloadQuery],
        person: Option<&Person>,
    ) -> Result<Option<Found>, Error> {
        Ok(match (discovery, part) {
            (Some((discovery, line)), Some(part)) => {
                let found = self
                    .found(discovery, (line, confidence), &part, queries, person)
                    .map_err(|e| self.error_at(Some(line), &e))?;
                Some(found)
            }
            _ => None,
        })
    }

    /// `decimal`, validated: the data's decimal mark; `flag` (`--decimal`) when the file has
    /// none. A file's `"."` against `--decimal ,` is refused: one of them is wrong.
    fn decimal_mark(&self, raw: &RawWorkload, flag: DecimalMark) -> Result<DecimalMark, Error> {
        let Some(written) = &raw.decimal else { return Ok(flag) };
        let mark: DecimalMark =
            written.get_ref().parse().map_err(|e| self.error(written.span(), &format!("decimal: {e}")))?;
        if flag == DecimalMark::Comma && mark == DecimalMark::Point {
            return Err(self.error(
                written.span(),
                "decimal = \".\" disagrees with --decimal , on the command line: give the mark once",
            ));
        }
        Ok(mark)
    }

    /// A share as written: an exact decimal above 0, and its line.
    fn share(&self, share: &Spanned<Value>) -> Result<(BigRational, usize), Error> {
        let line = self.line(share.span().start);
        let r = self
            .exact(share)
            .and_then(|r| if r.is_positive() { Ok(r) } else { Err("a share must be greater than 0".into()) })
            .map_err(|e| self.error_at(Some(line), &format!("share: {e}")))?;
        Ok((r, line))
    }

    /// `delta` and `max_keys` of a workload whose queries discover their groups, validated,
    /// with the line that asks for the selection; None when no query has `discover = true`.
    fn discovery(
        &self,
        raw: &RawWorkload,
        mechanism: &Mechanism,
        neighbours: Neighbours,
    ) -> Result<Option<(Discovery, usize)>, Error> {
        let first = raw.query.iter().filter_map(|q| q.get_ref().discover.as_ref()).find(|d| *d.get_ref());
        let Some(first) = first else {
            let extra =
                raw.max_keys.as_ref().map(Spanned::span).or(raw.selection_share.as_ref().map(Spanned::span));
            return match extra {
                Some(span) => Err(self.error(
                    span,
                    "max_keys and selection_share belong to queries with discover = true (groups found in the data)",
                )),
                None => Ok(None),
            };
        };
        let line = self.line(first.span().start);
        if matches!(mechanism, Mechanism::Gaussian { .. }) {
            return Err(self.error_at(
                Some(line),
                "discover = true is (epsilon, delta)-DP with Laplace noise on the key counts, not zCDP: \
                 leave out noise = \"gaussian\", or list the groups with keys = [...]",
            ));
        }
        if neighbours == Neighbours::Replace {
            return Err(self.error_at(
                Some(line),
                "discover = true with neighbours = \"replace\" is not supported: a changed row could move a \
                 shared group's release while creating a key; use add-remove (the default), or keys = [...]",
            ));
        }
        let Some(delta) = &raw.delta else {
            return Err(self.error_at(
                Some(line),
                "discover = true needs delta = \"D\" in the workload: the probability that a key held by one \
                 person (or row) is released anyway; e.g. delta = \"1e-6\"",
            ));
        };
        let delta_line = self.line(delta.span().start);
        let delta = self
            .exact(delta)
            .and_then(|r| Delta::from_rational(r).map_err(|e| e.to_string()))
            .map_err(|e| self.error_at(Some(delta_line), &format!("delta: {e}")))?;
        let max_keys = match &raw.max_keys {
            None => DEFAULT_MAX_KEYS,
            Some(k) => usize::try_from(*k.get_ref()).ok().filter(|k| *k > 0).ok_or_else(|| {
                self.error(k.span(), "max_keys: give a whole number of keys above 0 (default 100000)")
            })?,
        };
        Ok(Some((Discovery { delta, max_keys }, line)))
    }

    /// The workload's selection, once its queries are validated: their one `by` column, the
    /// `where` they all have, and the selection's part `eps` split (refused if the key cap's
    /// test would almost surely withhold, before anything is read).
    fn found(
        &self,
        discovery: Discovery,
        (line, confidence): (usize, Confidence),
        eps: &BigRational,
        queries: &[WorkloadQuery],
        person: Option<&Person>,
    ) -> Result<Found, String> {
        let discovered: Vec<(&WorkloadQuery, &ColumnRef)> =
            queries.iter().filter_map(|q| q.job.discover_by.as_ref().map(|(by, _)| (q, by))).collect();
        let Some((first, by)) = discovered.first() else {
            return Err("no query has discover = true".into());
        };
        if let Some((other, theirs)) = discovered.iter().find(|(_, b)| b.label() != by.label()) {
            return Err(format!(
                "query '{}' discovers the groups of by = {:?} and query '{}' those of {:?}: a workload's one \
                 selection finds the keys of one column (run one workload per column)",
                first.name,
                by.label(),
                other.name,
                theirs.label()
            ));
        }
        let filters: Vec<FilterSpec> = first
            .job
            .filters
            .iter()
            .filter(|f| discovered.iter().all(|(q, _)| q.job.filter_labels.contains(&f.label())))
            .cloned()
            .collect();
        let eps = Epsilon::from_rational(eps.clone()).map_err(|e| format!("the selection's share: {e}"))?;
        let per_unit = person.map_or(1, |p| p.persons().keys_each());
        let shares = Shares::new(&eps, &discovery, true, per_unit).map_err(|e| {
            e.message().replace("--max-keys", "max_keys").replace("--eps", "the selection's share")
        })?;
        let spend = Spend::Approx { eps, delta: discovery.delta.clone() };
        let origin = format!("{} line {line}: the selection of keys of by = {:?}", self.path, by.label());
        Ok(Found { by: (*by).clone(), discovery, shares, spend, filters, origin, confidence })
    }

    /// `privacy_id` and `max_rows_per_id`, validated: the person every query's rows are
    /// bounded for, or None for a row-level workload.
    fn person(
        &self,
        raw: &RawWorkload,
        neighbours: Neighbours,
        has_header: bool,
    ) -> Result<Option<Person>, Error> {
        let Some(ids) = &raw.privacy_id else {
            let bound = [&raw.max_rows_per_id, &raw.max_groups_per_id, &raw.max_rows_per_group];
            return match bound.into_iter().flatten().next() {
                Some(k) => Err(self.error(
                    k.span(),
                    "max_rows_per_id, max_groups_per_id and max_rows_per_group bound the rows of each \
                     person named by privacy_id: add privacy_id = \"COL\" (or a list of columns)",
                )),
                None => Ok(None),
            };
        };
        let line = self.line(ids.span().start);
        if neighbours == Neighbours::Replace {
            return Err(self.error_at(
                Some(line),
                "privacy_id with neighbours = \"replace\": replace keeps the number of rows public, but a \
                 person has any number of rows; use add-remove (the default), whose epsilon also covers \
                 replacing one person at twice its value",
            ));
        }
        let bound =
            |value: &Option<Spanned<Value>>, key: &str| -> Result<Option<u32>, Error> {
                match value {
                    None => Ok(None),
                    Some(k) => match k.get_ref() {
                        Value::Integer(v) if (1..=i64::from(MAX_BOUND)).contains(v) => Ok(Some(*v as u32)),
                        _ => Err(self
                            .error(k.span(), &format!("{key}: give a whole number from 1 to {MAX_BOUND}"))),
                    },
                }
            };
        let rows = bound(&raw.max_rows_per_id, "max_rows_per_id")?;
        let groups = bound(&raw.max_groups_per_id, "max_groups_per_id")?;
        let rows_per_group = bound(&raw.max_rows_per_group, "max_rows_per_group")?;
        let bounds = person_bounds(rows, groups, rows_per_group);
        let ids = self.list(ids, "privacy_id").map_err(|(l, e)| self.error_at(Some(l), &e))?;
        let flags = PersonFlags {
            ids,
            bounds,
            grouped_flags: false,
            auto: false,
            rows_per_group_given: false,
            groups_given: false,
            count_truncated: false,
        };
        let person = Person::new(&flags, has_header, false, neighbours)
            .map_err(|e| self.error_at(Some(line), &format!("privacy_id: {}", e.message())))?;
        Ok(Some(person))
    }

    /// With G or K_g binding ([`by_group`]): the one `by` column every grouped query has, which
    /// the person's rows are bounded by, and the `where` every query has (applied before the
    /// bounding, so a person's groups and rows are chosen among the rows some query reads).
    fn group_bounds(
        &self,
        raw: &RawWorkload,
        person: Option<&Person>,
        queries: &[WorkloadQuery],
    ) -> Result<Option<GroupBounds>, Error> {
        let Some(person) = person.filter(|p| by_group(&p.bounds)) else { return Ok(None) };
        // Only G or K_g make the bounds bind by group (without them G = K_g = K).
        let given = raw.max_groups_per_id.as_ref().or(raw.max_rows_per_group.as_ref());
        let line = given.map(|v| self.line(v.span().start));
        let grouped: Vec<(&WorkloadQuery, ColumnRef)> =
            queries.iter().filter_map(|q| grouped_by(q).map(|by| (q, by))).collect();
        let (first, by) = self.one_by(line, person, &grouped)?;
        self.same_keys(line, (first, by), &grouped)?;
        let filters = first
            .job
            .filters
            .iter()
            .filter(|f| queries.iter().all(|q| q.job.filter_labels.contains(&f.label())))
            .cloned()
            .collect();
        Ok(Some(GroupBounds { by: by.clone(), keys: group_keys(first), filters }))
    }

    /// The first grouped query and its `by`, which every other grouped query must share: a
    /// workload bounds each person's groups of one column. `line` is that of G or K_g.
    fn one_by<'g, 'q>(
        &self,
        line: Option<usize>,
        person: &Person,
        grouped: &'g [(&'q WorkloadQuery, ColumnRef)],
    ) -> Result<(&'q WorkloadQuery, &'g ColumnRef), Error> {
        let Some((first, by)) = grouped.first() else {
            return Err(self.error_at(
                line,
                &format!(
                    "max_groups_per_id and max_rows_per_group bound a person's rows in the groups of a query's \
                     by, and no query has one: give max_rows_per_id = K alone (the bounds here are K = {}, G = {}, \
                     K_g = {})",
                    person.bounds.rows, person.bounds.groups, person.bounds.rows_per_group
                ),
            ));
        };
        if let Some((other, theirs)) = grouped.iter().find(|(_, b)| b.label() != by.label()) {
            return Err(self.error_at(
                line,
                &format!(
                    "query '{}' groups by {:?} and query '{}' by {:?}: a workload bounds each person's groups \
                     of one column (max_groups_per_id, max_rows_per_group); run one workload per column",
                    first.name,
                    by.label(),
                    other.name,
                    theirs.label()
                ),
            ));
        }
        Ok((*first, by))
    }

    /// Refuses a grouped query whose keys are not those of `first` (grouped by `by`): one
    /// bounding of each person's groups serves every query.
    fn same_keys(
        &self,
        line: Option<usize>,
        (first, by): (&WorkloadQuery, &ColumnRef),
        grouped: &[(&WorkloadQuery, ColumnRef)],
    ) -> Result<(), Error> {
        // The bounding labels a row's group as every grouped query routes it (an unlisted key
        // to `other`, an imputed one to its key), so that no query's group holds more of a
        // person's rows than K_g: the queries list the same keys, or all find them.
        let Some((other, _)) = grouped.iter().find(|(q, _)| group_keys(q) != group_keys(first)) else {
            return Ok(());
        };
        Err(self.error_at(
            line,
            &format!(
                "queries '{}' and '{}' group by {:?} with other keys (or one lists them and one finds \
                 them): a workload bounds each person's groups (max_groups_per_id, max_rows_per_group) \
                 once for all its queries, so they list the same keys, with the same closed and \
                 invalid, or all find them",
                first.name,
                other.name,
                by.label()
            ),
        ))
    }

    /// 1-based line of a byte offset.
    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
    }

    fn error_at(&self, line: Option<usize>, message: &str) -> Error {
        match line {
            Some(line) => Error::usage(format!("{} line {line}: {message}", self.path)),
            None => Error::usage(format!("{}: {message}", self.path)),
        }
    }

    fn error(&self, span: Range<usize>, message: &str) -> Error {
        self.error_at(Some(self.line(span.start)), message)
    }

    /// The text of a number as written (so 0.1 stays exactly 1/10), or of a string.
    fn number_text(&self, value: &Spanned<Value>) -> Result<String, String> {
        match value.get_ref() {
            Value::String(s) => Ok(s.clone()),
            Value::Integer(_) | Value::Float(_) => {
                let span = value.span();
                let raw = self.text.get(span).ok_or("cannot read the number")?;
                Ok(raw.replace('_', ""))
            }
            other => Err(format!("expected a number, found {}", other.type_str())),
        }
    }

    /// An exact decimal: a TOML number as written, or a string like "0.1".
    fn exact(&self, value: &Spanned<Value>) -> Result<BigRational, String> {
        let text = self.number_text(value)?;
        parse_decimal(&text).ok_or_else(|| format!("'{text}' is not a decimal number (write it like 0.25)"))
    }

    fn finite(&self, value: &Spanned<Value>, key: &str) -> Result<Finite, (usize, String)> {
        let line = self.line(value.span().start);
        let text = self.number_text(value).map_err(|e| (line, format!("{key}: {e}")))?;
        text.parse::<Finite>().map_err(|e| (line, format!("{key}: {e}")))
    }

    /// A column: a header name or a 1-based number (only a number with --no-headers).
    fn column(
        &self,
        value: &Spanned<Value>,
        key: &str,
        has_header: bool,
    ) -> Result<ColumnRef, (usize, String)> {
        let line = self.line(value.span().start);
        let text = match value.get_ref() {
            Value::String(s) => s.clone(),
            Value::Integer(i) => i.to_string(),
            other => {
                return Err((line, format!("{key}: expected a column name, found {}", other.type_str())))
            }
        };
        ColumnRef::parse(&text, has_header, key).map_err(|e| (line, e.message().to_string()))
    }

    /// One value, or an array of two (x's and y's, for two-column kinds), each read by `one`.
    fn pair<T>(
        &self,
        value: &Spanned<Value>,
        one: impl Fn(&Spanned<Value>) -> Result<T, (usize, String)>,
    ) -> Result<(T, Option<T>), (usize, String)> {
        let Value::Array(items) = value.get_ref() else { return Ok((one(value)?, None)) };
        let line = self.line(value.span().start);
        let [x, y] = items.as_slice() else {
            return Err((line, format!("expected one value or a pair [x, y], found {} values", items.len())));
        };
        // Array items carry no span of their own: they are read on the array's, numbers through
        // their shortest text (bounds are doubles, so that text gives back the same value).
        let at = |item: &Value| {
            let item = match item {
                Value::Integer(i) => Value::String(i.to_string()),
                Value::Float(f) => Value::String(f.to_string()),
                other => other.clone(),
            };
            Spanned::new(value.span(), item)
        };
        Ok((one(&at(x))?, Some(one(&at(y))?)))
    }

    /// A list of names: an array of strings (each trimmed, commas and quotes allowed), or one
    /// comma-separated string read as the command line reads it (CSV-quoted items).
    fn list(&self, value: &Spanned<Value>, key: &str) -> Result<String, (usize, String)> {
        let line = self.line(value.span().start);
        match value.get_ref() {
            Value::String(s) => Ok(s.clone()),
            Value::Array(items) => {
                let mut names = vec![];
                for item in items {
                    match item.as_str() {
                        Some(s) => names.push(s.trim().to_string()),
                        None => return Err((line, format!("{key}: every item must be a string"))),
                    }
                }
                // Quoted where a name needs it, so the list reads back as exactly these names.
                Ok(list::join(&names))
            }
            other => Err((line, format!("{key}: expected a list of strings, found {}", other.type_str()))),
        }
    }

    /// Quantile levels as exact decimals: a number, a string "0.5,0.9", or a list of either.
    /// A TOML float is read back by its shortest decimal, which is the one written for any
    /// level with up to 15 digits (levels take at most 9 after the point).
    fn levels(&self, value: &Spanned<Value>) -> Result<Vec<Level>, (usize, String)> {
        let line = self.line(value.span().start);
        let texts: Vec<String> = match value.get_ref() {
            Value::String(s) => s.split(',').map(|l| l.trim().to_string()).collect(),
            Value::Float(_) | Value::Integer(_) => vec![self.number_text(value).map_err(|e| (line, e))?],
            Value::Array(items) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.trim().to_string()),
                    Value::Float(f) => Ok(f.to_string()),
                    Value::Integer(i) => Ok(i.to_string()),
                    other => Err((line, format!("q: expected numbers, found {}", other.type_str()))),
                })
                .collect::<Result<_, _>>()?,
            other => return Err((line, format!("q: expected a list of levels, found {}", other.type_str()))),
        };
        if texts.is_empty() {
            return Err((line, "q: the list of levels is empty".to_string()));
        }
        texts.iter().map(|t| t.parse::<Level>().map_err(|e| (line, format!("q: {e}")))).collect()
    }

    /// One query validated exactly as the same command line would be, at its share, in the
    /// command line's stages: its kind, its options, its filters, its groups, then the
    /// statistic at row level. Errors carry their line.
    fn query_job(
        &self,
        q: &RawQuery,
        name_line: usize,
        mechanism: Mechanism,
        settings: &Settings,
    ) -> Result<Job, (usize, String)> {
        let Settings { person, discovery, neighbours, input, output: (confidence, format), ledger, .. } =
            *settings;
        let kinds = workload_kinds().join(", ");
        let Some(kind) = &q.kind else {
            return Err((name_line, format!("no kind: add kind = \"...\" (one of {kinds})")));
        };
        let kind_line = self.line(kind.span().start);
        let kind = kind.get_ref().as_str();
        let has_header = input.csv.has_header;
        let mut options = self.query_options(q, kind, kind_line, name_line, has_header)?;
        let filters = self.query_filters(q, has_header)?;
        let (mut group, discover_by) = self.query_groups(q, discovery, name_line, has_header)?;
        let closed_line = q.closed.as_ref().map_or(name_line, |c| self.line(c.span().start));
        if options.closed && group.is_none() && options.categories.is_none() {
            return Err((
                closed_line,
                "closed = true declares a listed domain complete: it needs by and keys, or a histogram's \
                 categories"
                    .into(),
            ));
        }
        close_lists(&mut options, group.as_mut().map(|g| &mut g.keys), neighbours, ledger)
            .map_err(|e| (closed_line, e.message().to_string()))?;
        // With a person, the statistic runs on the bounded rows at its share divided by what one
        // person moves it by; the share stays what the query spends.
        let per_id_line = q.total_per_id.as_ref().map(|v| self.line(v.span().start));
        let per_id_line = per_id_line.or(q.average_per_id.as_ref().map(|v| self.line(v.span().start)));
        let mut person = person.cloned();
        Person::take_per_id(person.as_mut(), options.per_id.as_ref(), false)
            .map_err(|e| (per_id_line.unwrap_or(name_line), e.message().to_string()))?;
        let grouped = group.is_some() || discover_by.is_some();
        let row = match &person {
            Some(p) => mechanism.divided(query_factor(p, grouped)),
            None => mechanism.clone(),
        };
        let setup = Setup {
            mechanism: &row,
            neighbours,
            has_header,
            groups: group_count(group.as_ref(), discover_by.as_ref()),
            filtered: !filters.is_empty(),
            private_bounds: false,
            ledger,
        };
        let statistic =
            AnyStatistic::new(kind, options, &setup).map_err(|e| (name_line, e.message().to_string()))?;
        Ok(Job {
            input: input.clone(),
            filter_labels: filters.iter().map(FilterSpec::label).collect(),
            filters,
            group,
            discover_by,
            statistic,
            spend: mechanism.spend(),
            mechanism: row,
            person,
            neighbours,
            format,
            style: Style::default(),
            confidence,
            ledger: None,
            plot: None,
        })
    }

    /// A query's options, each key checked as its flag is: the keys its kind takes, then its
    /// column, bounds, bins, resolution, levels and per-person estimand.
    fn query_options(
        &self,
        q: &RawQuery,
        kind: &str,
        kind_line: usize,
        name_line: usize,
        has_header: bool,
    ) -> Result<Options, (usize, String)> {
        let categories = match &q.categories {
            None => None,
            Some(c) => {
                let line = self.line(c.span().start);
                let list = self.list(c, "categories")?;
                Some(list.parse::<Categories>().map_err(|e| (line, format!("categories: {e}")))?)
            }
        };
        let mut options = Options { categories, ..Options::default() };
        let Some(allowed) = AnyStatistic::workload_keys_of(kind, &options) else {
            let kinds = workload_kinds().join(", ");
            return Err((kind_line, format!("unknown kind '{kind}': use one of {kinds}")));
        };
        options.closed = q.closed.as_ref().is_some_and(|c| *c.get_ref());
        self.refuse_other_keys(q, kind, allowed, options.categories.is_some(), options.closed)?;
        if let Some(v) = &q.invalid {
            let flag: InvalidFlag =
                v.get_ref().parse().map_err(|e| (self.line(v.span().start), format!("invalid: {e}")))?;
            flag.apply(&mut options);
        }
        // Two-column kinds (covariance, regress) take column, lower and upper as pairs [x, y].
        if allowed.contains(&"column") {
            let (x, y) = match &q.column {
                Some(c) => self.pair(c, |v| Ok(self.column(v, "column", has_header)?.label()))?,
                None => return Err((name_line, format!("{kind} needs a column: add column = \"...\""))),
            };
            (options.column, options.y_column) = (Some(x), y);
        }
        let bound = |value: &Option<Spanned<Value>>,
                     key: &str|
         -> Result<(Option<Finite>, Option<Finite>), (usize, String)> {
            match value {
                None => Ok((None, None)),
                Some(v) => self.pair(v, |item| self.finite(item, key)).map(|(x, y)| (Some(x), y)),
            }
        };
        ((options.lower, options.y_lower), (options.upper, options.y_upper)) =
            (bound(&q.lower, "lower")?, bound(&q.upper, "upper")?);
        options.bins = self.whole(&q.bins, "bins")?;
        if allowed.contains(&"bins") && options.bins.is_none() {
            return Err((
                name_line,
                format!("{kind} needs public bins: categories = [...] or bins = K with lower and upper"),
            ));
        }
        options.resolution = self.whole(&q.resolution, "resolution")?;
        if let Some(levels) = &q.q {
            options.levels = self.levels(levels)?;
        } else if kind == "quantile" {
            return Err((
                name_line,
                "quantile needs levels: add q = [0.5] (exact decimals in (0, 1))".into(),
            ));
        }
        options.per_id = self.per_id(q)?;
        self.check_bounds(&options, kind, allowed, name_line)?;
        Ok(options)
    }

    /// `bins = K` or `resolution = K`: a positive whole number.
    fn whole(&self, value: &Option<Spanned<i64>>, key: &str) -> Result<Option<usize>, (usize, String)> {
        let Some(v) = value else { return Ok(None) };
        let n = usize::try_from(*v.get_ref())
            .map_err(|_| (self.line(v.span().start), format!("{key} must be a positive whole number")))?;
        Ok(Some(n))
    }

    /// The clamping bounds a kind needs: both or neither where they are optional (and with a
    /// resolution, both), both where they are not, unless each person's total is clamped.
    fn check_bounds(
        &self,
        options: &Options,
        kind: &str,
        allowed: &[&str],
        name_line: usize,
    ) -> Result<(), (usize, String)> {
        let one_bound = options.lower.is_some() != options.upper.is_some();
        let optional = AnyStatistic::bounds_optional_of(kind);
        if optional && (one_bound || (options.resolution.is_some() && options.lower.is_none())) {
            return Err((
                name_line,
                format!(
                    "{kind} takes both lower and upper (candidates evenly spaced over them, resolution \
                     of them) or neither (public bounds-free candidates)"
                ),
            ));
        }
        let total_per_id = matches!(options.per_id, Some(PerId::Total(..)));
        if allowed.contains(&"lower")
            && !optional
            && !total_per_id
            && (options.lower.is_none() || options.upper.is_none())
        {
            return Err((
                name_line,
                format!(
                    "{kind} needs clamping bounds: add lower = L and upper = U (public; never \
                     taken from the data)"
                ),
            ));
        }
        Ok(())
    }

    /// `where = [...]`, each filter parsed as `--where` is.
    fn query_filters(&self, q: &RawQuery, has_header: bool) -> Result<Vec<FilterSpec>, (usize, String)> {
        let Some(list) = &q.filters else { return Ok(vec![]) };
        let line = self.line(list.span().start);
        let typed = list
            .get_ref()
            .iter()
            .map(|f| f.parse::<Filter>().map_err(|e| (line, format!("where: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        filter_specs(&typed, has_header, "where").map_err(|e| (line, e.message().to_string()))
    }

    /// A query's groups: `by` with its `keys` (listed), or `by` with `discover = true` (found in
    /// the column, under the workload's delta).
    fn query_groups(
        &self,
        q: &RawQuery,
        discovery: Option<&Discovery>,
        name_line: usize,
        has_header: bool,
    ) -> Result<Groups, (usize, String)> {
        let discover = q.discover.as_ref().is_some_and(|d| *d.get_ref());
        match (&q.by, &q.keys) {
            (None, None) if discover => {
                Err((name_line, "discover = true finds the groups of a column: add by = \"COL\"".into()))
            }
            (Some(_), Some(keys)) if discover => Err((
                self.line(keys.span().start),
                "keys lists the groups and discover = true finds them: give one of them".into(),
            )),
            (Some(by), None) if discover => {
                let found = discovery.ok_or((name_line, "discover = true needs delta".to_string()))?;
                Ok((None, Some((self.column(by, "by", has_header)?, found.clone()))))
            }
            (None, None) => Ok((None, None)),
            (Some(by), Some(keys)) => {
                let line = self.line(keys.span().start);
                let keys: Keys =
                    self.list(keys, "keys")?.parse().map_err(|e| (line, format!("keys: {e}")))?;
                Ok((Some(GroupSpec { column: self.column(by, "by", has_header)?, keys }), None))
            }
            (Some(_), None) | (None, Some(_)) => Err((
                name_line,
                "by and keys go together: by = \"COL\", keys = [\"k1\", \"k2\"] (or by = \"COL\" with \
                 discover = true and the workload's delta, to find the groups in the data)"
                    .into(),
            )),
        }
    }

    /// `total_per_id = [L, U]` or `average_per_id = true`, not both.
    fn per_id(&self, q: &RawQuery) -> Result<Option<PerId>, (usize, String)> {
        let average = q.average_per_id.as_ref().filter(|a| *a.get_ref());
        match (&q.total_per_id, average) {
            (Some(t), Some(_)) => Err((
                self.line(t.span().start),
                "total_per_id and average_per_id are two estimands: give one".into(),
            )),
            (Some(t), None) => match self.pair(t, |item| self.finite(item, "total_per_id"))? {
                (l, Some(u)) => Ok(Some(PerId::Total(l, u))),
                (_, None) => {
                    Err((self.line(t.span().start), "total_per_id: expected [L, U], two numbers".into()))
                }
            },
            (None, Some(_)) => Ok(Some(PerId::Average)),
            (None, None) => Ok(None),
        }
    }

    /// A key that the kind does not use is a mistake (a `bins` on a sum, bounds on a
    /// categorical histogram): refused with its line rather than ignored.
    fn refuse_other_keys(
        &self,
        q: &RawQuery,
        kind: &str,
        allowed: &[&str],
        categories: bool,
        closed: bool,
    ) -> Result<(), (usize, String)> {
        let line = |span: Range<usize>| self.line(span.start);
        // A closed list makes a key not listed invalid input: every kind then takes `invalid`.
        let allowed: Vec<&str> = allowed.iter().copied().chain(closed.then_some("invalid")).collect();
        let present: [(&str, Option<usize>); 10] = [
            ("column", q.column.as_ref().map(|v| line(v.span()))),
            ("lower", q.lower.as_ref().map(|v| line(v.span()))),
            ("upper", q.upper.as_ref().map(|v| line(v.span()))),
            ("bins", q.bins.as_ref().map(|v| line(v.span()))),
            ("categories", q.categories.as_ref().map(|v| line(v.span()))),
            ("invalid", q.invalid.as_ref().map(|v| line(v.span()))),
            ("q", q.q.as_ref().map(|v| line(v.span()))),
            ("resolution", q.resolution.as_ref().map(|v| line(v.span()))),
            ("total_per_id", q.total_per_id.as_ref().map(|v| line(v.span()))),
            ("average_per_id", q.average_per_id.as_ref().map(|v| line(v.span()))),
        ];
        for (key, at) in present {
            if let Some(at) = at {
                if !allowed.contains(&key) {
                    let why = if categories { " with categories" } else { "" };
                    return Err((at, format!("{kind}{why} does not take {key}")));
                }
            }
        }
        Ok(())
    }
}

/// Whether some query of the file asks for its groups to be found (`discover = true`).
fn discovers(raw: &RawWorkload) -> bool {
    raw.query.iter().any(|q| q.get_ref().discover.as_ref().is_some_and(|d| *d.get_ref()))
}

/// A grouped query's `by` column: the groups it lists, or those it finds (`discover = true`).
fn grouped_by(q: &WorkloadQuery) -> Option<ColumnRef> {
    q.job.group.as_ref().map(|g| g.column.clone()).or(q.job.discover_by.as_ref().map(|(by, _)| by.clone()))
}

/// The keys a grouped query lists; None when it finds them.
fn group_keys(q: &WorkloadQuery) -> Option<Keys> {
    q.job.group.as_ref().map(|g| g.keys.clone())
}

/// The kinds a workload takes, in registry order.
fn workload_kinds() -> Vec<&'static str> {
    let any = Options::default();
    AnyStatistic::kinds().into_iter().filter(|k| AnyStatistic::workload_keys_of(k, &any).is_some()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Workload, Error> {
        let input = InputFlags {
            source: crate::data::source::Source::Stdin,
            csv: crate::data::source::CsvOptions {
                delimiter: b',',
                has_header: true,
                decimal: Default::default(),
            },
            threads: 1,
            engine: None,
        };
        Workload::parse("w.toml", text, &input, ("0.95".parse().unwrap(), Format::Text), false)
    }

    fn shares(w: &Workload) -> Vec<String> {
        w.queries.iter().map(|q| q.job.spend.to_string()).collect()
    }

    #[test]
    fn numbers_are_read_as_written() {
        let w = parse("epsilon = 1_0e-1\n[[query]]\nname = \"a\"\nkind = \"count\"\nshare = 0.1\n[[query]]\nname = \"b\"\nkind = \"count\"\n")
            .unwrap();
        assert_eq!(w.spend().to_string(), "epsilon 1");
        assert_eq!(shares(&w), ["epsilon 0.1", "epsilon 0.9"]);
        let w = parse("epsilon = \"0.7\"\n[[query]]\nname = \"a\"\nkind = \"count\"\n").unwrap();
        assert_eq!(shares(&w), ["epsilon 0.7"]);
    }

    #[test]
    fn missing_shares_split_the_rest_evenly() {
        let text = "epsilon = 1\n[[query]]\nname = \"a\"\nkind = \"count\"\nshare = \"0.5\"\n\
                    [[query]]\nname = \"b\"\nkind = \"count\"\n[[query]]\nname = \"c\"\nkind = \"count\"\n";
        assert_eq!(shares(&parse(text).unwrap()), ["epsilon 0.5", "epsilon 0.25", "epsilon 0.25"]);
    }

    /// A Gaussian workload splits ρ in the shares' proportions, exactly, whether the total is
    /// written as rho or derived from epsilon at delta.
    #[test]
    fn gaussian_workloads_split_rho_in_proportion() {
        let text = "noise = \"gaussian\"\nrho = \"0.04\"\ndelta = \"1e-6\"\n[[query]]\nname = \"a\"\nkind = \"count\"\n\
                    share = \"0.01\"\n[[query]]\nname = \"b\"\nkind = \"count\"\n";
        let w = parse(text).unwrap();
        assert_eq!(shares(&w), ["rho 0.01", "rho 0.03"]);
        let text = "noise = \"gaussian\"\nepsilon = 1\ndelta = \"1e-6\"\n[[query]]\nname = \"a\"\nkind = \"count\"\n\
                    share = \"0.25\"\n[[query]]\nname = \"b\"\nkind = \"count\"\n";
        let w = parse(text).unwrap();
        let Spend::Zcdp(total) = w.spend() else { panic!("zCDP") };
        let parts: Vec<BigRational> = w
            .queries
            .iter()
            .map(|q| match &q.job.spend {
                Spend::Zcdp(r) => r.as_rational().clone(),
                other => panic!("{other}"),
            })
            .collect();
        assert_eq!(&parts[0] * BigInt::from(3), parts[1]);
        assert_eq!(&parts[0] + &parts[1], *total.as_rational());
        for (bad, needle) in [
            ("noise = \"gaussian\"\nepsilon = 1\n[[query]]\nname = \"a\"\nkind = \"count\"\n", "needs delta"),
            ("epsilon = 1\ndelta = \"1e-6\"\n[[query]]\nname = \"a\"\nkind = \"count\"\n", "belong to noise"),
            ("noise = \"gaussian\"\nrho = 1\nepsilon = 1\ndelta = 0.1\n[[query]]\nname = \"a\"\nkind = \"count\"\n", "not both"),
            ("noise = \"cauchy\"\nepsilon = 1\n[[query]]\nname = \"a\"\nkind = \"count\"\n", "not a mechanism"),
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.message().contains(needle), "{bad}: {err}");
        }
    }

    /// A workload's factor is K (K² in ρ) with or without groups, and it covers every way a
    /// person's K kept rows can fall into groups: Σ r_g ≤ K and Σ r_g² ≤ K².
    #[test]
    fn a_workload_person_moves_every_query_by_k_rows() {
        for k in 1..=40u32 {
            let flags = PersonFlags {
                ids: "id".into(),
                bounds: Bounds { rows: k, groups: 1, rows_per_group: k },
                grouped_flags: false,
                auto: false,
                rows_per_group_given: false,
                groups_given: false,
                count_truncated: false,
            };
            let person = workload_person(&flags, true, Neighbours::AddRemove, "a workload").unwrap();
            let factor = person_factor(&person);
            assert_eq!(factor, Factor { pure: k, rho: k * k });
            assert_eq!(factor, person.bounds.factor(false), "grouped or not");
            // Every spread of k rows over up to 4 groups (the rest in one more group).
            for a in 0..=k {
                for b in 0..=k - a {
                    for c in 0..=k - a - b {
                        let spread = [a, b, c, k - a - b - c];
                        assert!(spread.iter().sum::<u32>() <= factor.pure);
                        assert!(spread.iter().map(|r| r * r).sum::<u32>() <= factor.rho);
                    }
                }
            }
        }
    }

    /// With privacy_id every query's statistic runs at its share divided by K (ρ by K²), what
    /// it spends is the share, and the shares add up to the total exactly.
    #[test]
    fn person_queries_run_at_their_share_divided_by_k() {
        let query = |name: &str| format!("[[query]]\nname = \"{name}\"\nkind = \"count\"\n");
        for (head, total, factor) in [
            ("epsilon = 1\n", Spend::Pure("1".parse().unwrap()), 7u32),
            (
                "noise = \"gaussian\"\nrho = \"0.5\"\ndelta = \"1e-6\"\n",
                Spend::Zcdp(Rho::from_rational(BigRational::new(1.into(), 2.into())).unwrap()),
                49,
            ),
        ] {
            let text = format!(
                "{head}privacy_id = [\"a\", \"b\"]\nmax_rows_per_id = 7\n{}{}{}",
                query("x"),
                query("y"),
                query("z")
            );
            let w = parse(&text).unwrap();
            let person = w.person.as_ref().unwrap();
            assert_eq!(person.ids.len(), 2);
            let mut sum = BigRational::zero();
            for q in &w.queries {
                let (spent, row) = match (&q.job.spend, q.job.mechanism.spend()) {
                    (Spend::Pure(a), Spend::Pure(b)) => (a.as_rational().clone(), b.as_rational().clone()),
                    (Spend::Zcdp(a), Spend::Zcdp(b)) => (a.as_rational().clone(), b.as_rational().clone()),
                    other => panic!("{other:?}"),
                };
                assert_eq!(row * BigInt::from(factor), spent, "{}", q.name);
                assert!(q.job.person.is_some());
                sum += spent;
            }
            assert_eq!(total, w.spend());
            let whole = match w.spend() {
                Spend::Pure(e) => e.as_rational().clone(),
                Spend::Zcdp(r) => r.as_rational().clone(),
                other => panic!("{other}"),
            };
            assert_eq!(sum, whole, "thirds of the total add up to it exactly");
        }
        // Without privacy_id nothing changes.
        let w = parse(&format!("epsilon = 1\n{}", query("x"))).unwrap();
        assert!(w.person.is_none() && w.queries[0].job.person.is_none());
        assert_eq!(w.queries[0].job.mechanism.spend(), w.queries[0].job.spend);
    }

    /// G and K_g: their defaults, when they bind, and the factor a grouped query is divided
    /// by (a single grouped release's, `Bounds::factor`), while an ungrouped one moves by K.
    #[test]
    fn a_workload_bounded_by_group_divides_as_a_grouped_release() {
        let b = |k, g, kg| Bounds { rows: k, groups: g, rows_per_group: kg };
        assert_eq!(person_bounds(None, None, None), b(1, 1, 1));
        assert_eq!(person_bounds(Some(4), None, None), b(4, 4, 4));
        assert_eq!(person_bounds(None, Some(3), None), b(3, 3, 1));
        assert_eq!(person_bounds(None, Some(3), Some(5)), b(15, 3, 5));
        assert_eq!(person_bounds(Some(6), Some(2), None), b(6, 2, 6));
        assert_eq!(person_bounds(None, Some(3), Some(9000)), b(MAX_BOUND, 3, 9000));
        assert!(!by_group(&b(4, 4, 4)) && !by_group(&b(2, 5, 3)));
        assert!(by_group(&b(6, 2, 6)) && by_group(&b(6, 6, 2)));
        let text = "epsilon = 1\nprivacy_id = \"id\"\nmax_groups_per_id = 2\nmax_rows_per_group = 3\n\
                    [[query]]\nname = \"g\"\nkind = \"count\"\nby = \"k\"\nkeys = [\"a\", \"b\", \"c\"]\n\
                    [[query]]\nname = \"all\"\nkind = \"count\"\nwhere = [\"x=1\"]\n";
        let w = parse(text).unwrap();
        let person = w.person.as_ref().unwrap();
        assert_eq!(person.bounds, b(6, 2, 3));
        assert_eq!(query_factor(person, true), Factor { pure: 6, rho: 18 }, "K_g·min(K, G·K_g) for rho");
        assert_eq!(query_factor(person, false), Factor { pure: 6, rho: 36 });
        let bounds = w.group_bounds.as_ref().unwrap();
        assert_eq!(bounds.by.label(), "k");
        assert!(bounds.filters.is_empty(), "x=1 is not every query's");
        for q in &w.queries {
            let factor = query_factor(person, q.job.grouped());
            let Spend::Pure(row) = q.job.mechanism.spend() else { panic!("{}", q.name) };
            let want = BigRational::new(1.into(), BigInt::from(2 * factor.pure));
            assert_eq!(row.as_rational(), &want, "{}: half of epsilon 1, divided by its factor", q.name);
        }
    }

    /// Splitting the rows between two folds and merging gives exactly the one-fold result.
    #[test]
    fn lines_are_one_based_from_byte_offsets() {
        let file = SourceText { path: "w", text: "a\nbb\n\nc" };
        assert_eq!([file.line(0), file.line(2), file.line(5), file.line(6), file.line(99)], [1, 2, 3, 4, 4]);
    }
}
