//! `dpstat run WORKLOAD.toml [FILE]`: several queries on one file in one streaming pass.
//!
//! The workload file sets the total ε and the privacy unit; every `[[query]]` has a name, a
//! kind, its column and bounds, and an optional `share` of ε. Shares are exact decimals and
//! must add up to the total exactly (exact rationals, [`crate::numeric::exact::parse_decimal`]); the
//! queries without a share split what is left evenly (all of it when none has one). The queries
//! run on the same data, so by sequential composition (Dwork & Roth 2014, Thm 3.16) the whole
//! release is ε_total-DP for the workload's privacy unit, and the ledger is charged ε_total once.
//! Each query is validated exactly as the same command line would be (same grids, sensitivities
//! and refusals), at its share: see `cmd::workload`.
//!
//! One scan: a [`WorkloadFold`] holds each query's fold (with its own filters and groups) and
//! feeds every row to all of them. Order of work as for one query: validate everything, read,
//! add all the noise, charge, and only then print.
//!
//! With `privacy_id` the workload bounds each person's rows once for all its queries: one
//! [`Bounded`] wraps the whole [`WorkloadFold`], keeping the cells of every column some query
//! reads (its statistic's, its `by` and its `where` columns). The filters stay in each query's
//! own route and apply to the kept rows, since the queries' filters differ. Each query ran at
//! its share divided by [`query_factor`] (K, or 1 for one value per person ungrouped) and is restated per person after its noise, so the
//! parts still add up exactly to the total.
//!
//! ```toml
//! epsilon = "1"              # total; a number or a string, read as an exact decimal
//! neighbours = "add-remove"  # or "replace"; default add-remove
//! # noise = "gaussian"       # discrete Gaussian, rho-zCDP: with delta = "1e-6", and epsilon
//! #                          # (rho derived) or rho = "0.02"; shares split rho in proportion
//! # privacy_id = "patient"   # protect people: each person's rows bounded once, for every
//! # max_rows_per_id = 10     # query, to K rows (default 1); or privacy_id = ["a", "b"]
//!
//! [[query]]
//! name = "income_mean"
//! kind = "mean"              # count | sum | mean | variance | covariance | regress | histogram | quantile | median
//! column = "income"
//! lower = 0
//! upper = 200000
//! share = "0.25"             # optional
//! # covariance and regress: column = ["x", "y"], lower = [LX, LY], upper = [UX, UY]
//! # where = ["region=north"], by = "urban_rural", keys = ["1", "2"],
//! # or by = "region", discover = true: groups found in the data by one selection shared by
//! # every such query (top level: delta = "1e-6"; max_keys, selection_share optional),
//! # bins = 8 or categories = ["a", "b"], invalid = "error" | "skip" | "impute=V",
//! # q = [0.5, 0.9] and resolution = 2001 (quantile; bounds optional for quantile and median)
//! ```

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::Arc;

use anyhow::Result;

use crate::cmd::release::{
    bound_failure, check_plot_path, context, empty_fold, note_line, note_no_files, person_plan, publish,
    routing, warn, warn_if_large, write_plot, InputFlags, Job, Meter, Outcome, Person,
};
use crate::cmd::workload::{
    person_unit, query_composition, query_factor, query_unit, Found, GroupBounds, Workload, SELECTION,
};
use crate::data::bound::Bounded;
use crate::data::cell::{parse_number_in, InvalidPolicy, NumberCell};
use crate::data::input::Input;
use crate::data::route::{GroupBy, Routed};
use crate::data::row::{text_cell, BadCell, Fold, Row};
use crate::data::{engine, scan};
use crate::error::{bad_input, Error};
use crate::numeric::grid::GridBounds;
use crate::numeric::list;
use crate::privacy::accountant::Cost;
use crate::privacy::accuracy::Confidence;
use crate::privacy::contribution::Factor;
use crate::privacy::currency::Spend;
use crate::privacy::ledger::{self, LedgerFlags, LedgerSpec};
use crate::privacy::noise::Mechanism;
use crate::privacy::rng;
use crate::query::bounds::Clamped;
use crate::query::discover::{self, Keyed, DEFAULT_MAX_KEYS};
use crate::query::mean::MeanFold;
use crate::query::statistic::{Context, Statistic};
use crate::query::sum::SumFold;
use crate::query::variance::VarianceFold;
use crate::query::AnyFold;
use crate::report::release::{
    saturating_i128, Accuracy, Group, GroupedRelease, Guarantee, Noise, Number, Published, Release, NO_VALUE,
};
use crate::report::text::{self, Format, Style};
use crate::report::{svg, table};

/// `dpstat run` as the command line asks for it.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub workload: std::path::PathBuf,
    pub format: Format,
    /// `--with-error` (the table always has its error column), `--digits`, `--full-precision`.
    pub style: Style,
    pub confidence: Confidence,
    pub ledger: LedgerFlags,
    pub input: InputFlags,
    /// `--plot FILE.svg`: one panel per query.
    pub plot: Option<std::path::PathBuf>,
}

/// Reads the workload, validates every query, charges the total once (with a ledger), reads the
/// data once, releases everything, records the release, then prints.
pub fn run(request: &RunRequest, out: &mut dyn Write) -> Result<()> {
    let load = |ledger: bool| {
        Workload::load(&request.workload, &request.input, request.confidence, request.format, ledger)
    };
    run_with(request, "workload", load, out)
}

/// [`run`] with the workload from `load` (given whether a ledger will be charged) instead of
/// `request.workload`'s file, recorded in the ledger as `ledger_query`: how `dpstat sql` runs
/// the workload it translated, through the same checks, pass, charge and output.
pub fn run_with(
    request: &RunRequest,
    ledger_query: &'static str,
    load: impl FnOnce(bool) -> Result<Workload>,
    out: &mut dyn Write,
) -> Result<()> {
    if let Some(path) = &request.plot {
        check_plot_path(path)?;
    }
    let ledger = LedgerSpec::from_flags(&request.ledger)?;
    rng::refuse_with_ledger(ledger.is_some())?;
    let workload = load(ledger.is_some())?;
    let names = workload.queries.iter().map(|q| q.name.as_str()).collect::<Vec<_>>().join(",");
    let batch = Batch { workload: &workload, ledger_query, ledger_column: names };
    let (queries, guarantee) = release_all(&batch, &workload.input(&request.input), ledger.as_ref())?;
    let printed =
        table::Workload { total: workload.spend(), guarantee, confidence: request.confidence, queries };
    // Drawn from the releases alone (post-processing); written only after the output is rendered.
    let plot = match &request.plot {
        Some(path) => Some((path, svg::render(&table::chart(&printed, request.style))?)),
        None => None,
    };
    let bytes = text::for_terminal(table::render(&printed, request.format, request.style)?, request.format);
    if let Some((path, svg)) = plot {
        write_plot(path, &svg, ledger.is_some())?;
    }
    out.write_all(&bytes)?;
    out.flush()?;
    if let (Format::Csv, Some(line)) = (request.format, table::unit_line(&printed)) {
        note_line(&format!("unit: {line}"));
    }
    print_query_notes(&printed.queries);
    for query in &printed.queries {
        for warning in text::warnings(&query.release, Some(&query.name)) {
            warn(&warning);
        }
    }
    Ok(())
}

/// The releases' own notes on stderr, each after its query's name: why a query was withheld,
/// or in `describe` the bounds found privately.
pub fn print_query_notes(queries: &[table::Query]) {
    for query in queries {
        if let Published::One(release) = &query.release {
            for note in &release.notes {
                note_line(&format!("{}: {note}", query.name));
            }
        }
    }
}

/// Validated queries released together: a workload file's, or `dpstat describe`'s.
pub struct Batch<'a> {
    pub workload: &'a Workload,
    /// What the ledger records as the query (`workload`, `describe`) and in its column field.
    pub ledger_query: &'static str,
    pub ledger_column: String,
}

/// One charge of the batch's total before any data row is read (with a ledger), one pass over
/// the data for every query, all the noise, one check that the queries' accounting adds up
/// exactly to the total, and the release recorded in the ledger. Nothing is printed; the
/// releases come back in the batch's order. Callers refuse the test seed with a ledger
/// (`rng::refuse_with_ledger`) before they validate the batch, so that comes first.
pub fn release_all(
    batch: &Batch,
    flags: &InputFlags,
    ledger: Option<&LedgerSpec>,
) -> Result<(Vec<table::Query>, Guarantee)> {
    let workload = batch.workload;
    let mut rng = rng::system_rng()?;
    let mut input = flags.open(ledger.is_some())?;
    let auto = workload.queries.iter().any(|q| q.job.person.as_ref().is_some_and(|p| p.auto.is_some()));
    if input.engine().is_some() && auto {
        return Err(bad_input(crate::cmd::release::AUTO_ON_CLUSTER));
    }
    note_no_files(&input, ledger.is_some());
    let mut folds = Vec::with_capacity(workload.queries.len());
    // The queries on found keys: their folds are held per key, inside the selection's.
    let mut found = Vec::new();
    // Every column some query reads: the cells a bounded scan keeps.
    let mut keep = Vec::new();
    for query in &workload.queries {
        let at = |e: anyhow::Error| bad_input(format!("{}: {e:#}", query.origin));
        let inner = empty_fold(&query.job.statistic, &input).map_err(at)?;
        let (filters, by) = routing(&query.job.filters, query.job.group.as_ref(), &input).map_err(at)?;
        for (column, flag) in query.job.statistic.columns() {
            keep.push(input.resolve(column, flag).map_err(at)?);
        }
        keep.extend(filters.iter().map(|(i, _)| *i));
        keep.extend(by.as_ref().map(|g| g.index));
        match query.job.discover_by {
            Some(_) => found.push(Routed::new(inner, filters, by)),
            None => folds.push(Routed::new(inner, filters, by)),
        }
    }
    let mut fold = WorkloadFold::new(folds);
    if let Some(selection) = &workload.discovery {
        let keyed = keyed_fold(selection, workload.person.as_ref(), found, &input)?;
        keep.extend(keyed_columns(selection, &input)?);
        fold.discovered = Some(Box::new(keyed));
    }
    let fold = match &workload.person {
        None => Pass::Rows(fold),
        Some(person) => Pass::Persons(Box::new(person_pass(person, workload, keep, &input, fold)?)),
    };
    let charge = ledger::Charge {
        query: batch.ledger_query.to_string(),
        column: Some(batch.ledger_column.clone()),
        neighbours: workload.neighbours.name().to_string(),
        unit: workload
            .person
            .as_ref()
            .map_or_else(|| ledger::ROW_UNIT.to_string(), |p| person_unit(p).ledger_name()),
        spend: workload.spend(),
    };
    let mut meter = Meter::new(ledger, charge);
    fold.check_memory(&input)?;
    meter.before_rows(&mut input)?;
    let measured = meter.after_rows(measure_all(workload, fold, &mut input, &mut rng));
    let released = meter.finish_withheld(&mut input, measured)?;
    meter.complete(&mut input)?;
    // Once nothing can refuse the batch any more: a refusal's first line is its problem.
    warn_if_large(&workload.spend(), workload.mechanism.delta());
    Ok(released)
}

/// A person-level workload's bounding: each person's rows, K in all; bounded by group
/// ([`GroupBounds`]), first the `where` every query has, then G groups of the one `by` column
/// (labelled by the keys every query lists, or as `--discover` labels found keys) and K_g rows
/// in each.
fn person_pass(
    person: &Person,
    workload: &Workload,
    keep: Vec<usize>,
    input: &Input,
    fold: WorkloadFold,
) -> Result<Bounded<WorkloadFold>> {
    // Without group bounds, no filters and no groups: each query's route applies its own to
    // the kept rows.
    let mut plan = person_plan(person, keep, input, rng::selection_key()?)?;
    let Some(GroupBounds { by, keys, filters }) = &workload.group_bounds else {
        return Ok(Bounded::new(plan, fold));
    };
    let (filters, _) = routing(filters, None, input)?;
    plan.keep.extend(filters.iter().map(|(i, _)| *i));
    plan.filters = filters;
    let index = input.resolve(by, "by")?;
    match keys {
        // Public keys: labelled as the queries route them, as a single `--by` release's.
        Some(keys) => {
            plan.keep.push(index);
            plan.group = Some(GroupBy { index, keys: Arc::new(keys.clone()) });
            Ok(Bounded::new(plan, fold))
        }
        // Keys found in the data are counted per person up to the selection's cap: past it a
        // person keeps their G lowest-ranked groups, so one person's counts stay bounded.
        None => {
            let max_keys = workload.discovery.as_ref().map_or(DEFAULT_MAX_KEYS, |f| f.discovery.max_keys);
            Ok(Bounded::found_keys(plan, index, max_keys, fold))
        }
    }
}

/// The selection's fold: the key of every row (after the `where` all discovered queries
/// have), its count of rows or persons, and the discovered queries' folds under each key, held
/// for at most `max_keys` keys (`query::discover::Keyed`).
fn keyed_fold(
    selection: &Found,
    person: Option<&Person>,
    queries: Vec<Routed<AnyFold>>,
    input: &Input,
) -> Result<Selecting> {
    let at = |e: anyhow::Error| bad_input(format!("{}: {e:#}", selection.origin));
    let index = input.resolve(&selection.by, "by").map_err(at)?;
    let (filters, _) = routing(&selection.filters, None, input).map_err(at)?;
    let keyed = Keyed::new(index, selection.discovery.max_keys, QueryFolds(queries));
    let keyed = match person {
        Some(_) => keyed.per_person(selection.shares.cap.per_unit),
        None => keyed,
    };
    Ok(Routed::new(keyed, filters, None))
}

/// The columns the selection reads: its key and its filters' (kept by a bounded scan).
fn keyed_columns(selection: &Found, input: &Input) -> Result<Vec<usize>> {
    let (filters, _) = routing(&selection.filters, None, input)?;
    let mut columns = vec![input.resolve(&selection.by, "by")?];
    columns.extend(filters.iter().map(|(i, _)| *i));
    Ok(columns)
}

/// The folds of a workload's queries on found keys, under one key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueryFolds(Vec<Routed<AnyFold>>);

impl Fold for QueryFolds {
    #[inline]
    fn row(&mut self, record: &Row) -> Result<(), BadCell> {
        self.0.iter_mut().try_for_each(|f| f.row(record))
    }
    fn merge(&mut self, other: Self) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            mine.merge(theirs);
        }
    }
    fn widest_column(&self) -> Option<usize> {
        self.0.iter().filter_map(Fold::widest_column).max()
    }
    fn heap_bytes(&self) -> usize {
        self.0.iter().map(|f| std::mem::size_of::<Routed<AnyFold>>() + f.heap_bytes()).sum()
    }
    fn part_heap_bytes(&self, rows: usize) -> usize {
        self.0.iter().map(|f| std::mem::size_of::<Routed<AnyFold>>() + f.part_heap_bytes(rows)).sum()
    }
    fn part_end(&mut self) {
        self.0.iter_mut().for_each(Fold::part_end);
    }
    fn person_end(&mut self) {
        self.0.iter_mut().filter(|f| f.hears_persons()).for_each(Fold::person_end);
    }
    fn hears_persons(&self) -> bool {
        self.0.iter().any(Fold::hears_persons)
    }
}

/// The one pass of a batch: every row to every query, or each person's kept rows.
enum Pass {
    Rows(WorkloadFold),
    Persons(Box<Bounded<WorkloadFold>>),
}

impl Pass {
    fn check_memory(&self, input: &Input) -> Result<()> {
        match self {
            Pass::Rows(fold) => scan::check_memory(input, fold),
            Pass::Persons(fold) => scan::check_memory(input, fold.as_ref()),
        }
    }

    /// Reads the data; every query's fold, and the selection's.
    fn scan(self, input: &mut Input) -> Result<Folds> {
        let fold = match self {
            Pass::Rows(mut fold) => {
                engine::scan(input, &mut fold)?;
                fold
            }
            Pass::Persons(mut bounded) => match engine::scan_bounded(input, bounded.as_mut())? {
                Some((fold, _)) => fold,
                None => bounded.finish().map_err(|f| bound_failure(input, f))?,
            },
        };
        Ok(fold.into_parts())
    }
}

/// What a pass leaves: the folds of the queries on public groups (or none), in order, and the
/// selection's.
type Folds = (Vec<Routed<AnyFold>>, Option<Box<Selecting>>);

/// The one pass and every query's noise; the accountant's total must be exactly the batch's.
/// Returns the queries and the guarantee of their total.
fn measure_all(
    workload: &Workload,
    pass: Pass,
    input: &mut Input,
    rng: &mut dyn rand::RngCore,
) -> Result<(Vec<table::Query>, Guarantee)> {
    let (folds, keyed) = pass.scan(input)?;
    let mut plain = folds.into_iter();
    let mut queries = Vec::with_capacity(workload.queries.len() + 1);
    // The selection first: its part, then each discovered query's folds in the kept keys.
    let mut kept = Vec::new().into_iter();
    if let (Some(selection), Some(keyed)) = (&workload.discovery, keyed) {
        let (part, folds) = select(workload, selection, *keyed, input, rng)?;
        queries.push(part);
        kept = folds.into_iter();
    }
    let missing = || Error::internal("a workload query without its fold");
    for query in &workload.queries {
        let job = &query.job;
        let cx = context(job, input, &job.mechanism);
        let outcome = match &job.discover_by {
            None => {
                let routed = plain.next().ok_or_else(missing)?;
                publish(&job.statistic, routed.groups, job.group.as_ref(), &cx, rng)
            }
            Some(_) => found_release(job, kept.next().ok_or_else(missing)?, &cx, rng).map(Outcome::Published),
        };
        let release = match outcome {
            Ok(Outcome::Published(release)) => release,
            Ok(Outcome::Again(_)) => {
                return Err(Error::internal("a workload query asked for a second pass").into())
            }
            // A query whose private outcome is "no value" (a describe column's mean that found
            // no bounds) is that query's release: no value, its line as a note, its share spent;
            // the other queries release. Nothing in it comes from the rows but that outcome.
            Err(Error::Withheld(line)) => Published::One(withheld(job, &cx, line)?),
            Err(e) => return Err(e.into()),
        };
        let mut release = release;
        if let Some(person) = &job.person {
            // Measured at the share divided by the factor on the bounded rows: stated per
            // person, its accounting is the share again.
            let grouped = job.grouped();
            let (unit, factor) = (query_unit(person, grouped), query_factor(person, grouped));
            release.per_person(unit, factor, query_composition(person))?;
        }
        queries.push(table::Query { name: query.name.clone(), share: job.spend.clone(), release });
    }
    let accounting =
        Cost::sequential(queries.iter().map(|q| q.release.accounting().clone().named(&q.name)).collect());
    accounting.spends_exactly(&workload.spend())?;
    let guarantee = Guarantee::of(&accounting.total()?, workload.mechanism.delta())?;
    Ok((queries, guarantee))
}

/// The workload's selection of keys (`query::discover`): its part of the output (the kept keys
/// with the selection's noisy counts, post-processing of it, at (ε_sel, δ)), and every
/// discovered query's folds in the kept keys, in the queries' order. A withheld outcome of the
/// key cap's test withholds the whole workload (its line names flags only).
fn select(
    workload: &Workload,
    selection: &Found,
    mut keyed: Selecting,
    input: &Input,
    rng: &mut dyn rand::RngCore,
) -> Result<(table::Query, KeptFolds)> {
    let keyed = keyed.groups.pop().ok_or_else(|| Error::internal("an ungrouped scan has one fold"))?;
    let persons = workload.person.as_ref().map(Person::persons);
    let shares = &selection.shares;
    let found = discover::select_keys(keyed, shares, persons.is_some(), workload.neighbours, rng)?;
    let labels: Vec<String> = selection.filters.iter().map(|f| f.label()).collect();
    let mechanism = Mechanism::Laplace(shares.per_key_eps.clone());
    let cx = Context {
        mechanism: &mechanism,
        neighbours: workload.neighbours,
        confidence: selection.confidence,
        grouped: true,
        filters: &labels,
        source: input.name(),
    };
    // The workload's unit, as every query of it states.
    let unit = workload.person.as_ref().map_or(crate::privacy::contribution::Unit::Row, person_unit);
    let discovered = workload.queries.iter().filter(|q| q.job.discover_by.is_some()).count();
    let mut folds: Vec<Vec<(String, AnyFold)>> = (0..discovered).map(|_| vec![]).collect();
    let mut groups = Vec::with_capacity(found.kept.len());
    for (key, noisy, QueryFolds(each)) in found.kept {
        let noise = discover::counted_noise(&found.noise, &cx);
        let cost = Cost::spent("count", shares.selection_spend());
        let release = Release::new("count", None, labels.clone(), noise, cost)?;
        let value = Some(Number::Integer(saturating_i128(&noisy)));
        groups.push(Group { key: key.clone(), release: Release { value, unit: unit.clone(), ..release } });
        for (slot, mut routed) in folds.iter_mut().zip(each) {
            let fold =
                routed.groups.pop().ok_or_else(|| Error::internal("an ungrouped route has one fold"))?;
            slot.push((key.clone(), fold));
        }
    }
    let released = groups.len();
    let mut part = GroupedRelease::with_accounting(
        "count",
        None,
        selection.by.label(),
        workload.neighbours,
        discover::WORKLOAD_SELECTION,
        groups,
        discover::selection_cost(shares),
    )?;
    let mut about = discover::info(&found.threshold, &shares.cap, released);
    if persons.is_some() {
        about.per_person = Some(shares.person_info());
    }
    part.unit = unit;
    part.discovery = Some(about);
    part.post_processing = vec![discover::selection_note(&found.threshold.tau)];
    let mut release = Published::Grouped(part);
    if rng::is_seeded() {
        release.mark_insecure_seed();
    }
    Ok((table::Query { name: SELECTION.to_string(), share: selection.spend.clone(), release }, folds))
}

/// A discovered query released in the kept keys only, at its (row-level) share in each.
fn found_release(
    job: &Job,
    kept: Vec<(String, AnyFold)>,
    cx: &Context,
    rng: &mut dyn rand::RngCore,
) -> Result<Published, Error> {
    let (Some((by, _)), Mechanism::Laplace(row_eps)) = (&job.discover_by, &job.mechanism) else {
        return Err(Error::internal("a discovered query without its column or Laplace noise"));
    };
    let (groups, cost) = discover::measure_groups(&job.statistic, kept, cx, row_eps, rng)?;
    let labels: Vec<String> = job.statistic.columns().into_iter().map(|(c, _)| c.label()).collect();
    let column = (!labels.is_empty()).then(|| list::join(&labels));
    let grouped = GroupedRelease::with_accounting(
        job.statistic.name(),
        column,
        by.label(),
        cx.neighbours,
        discover::WORKLOAD_COMPOSITION,
        groups,
        cost,
    )?;
    let mut published = Published::Grouped(grouped);
    if rng::is_seeded() {
        published.mark_insecure_seed();
    }
    Ok(published)
}

/// The release of a query whose outcome was [`Error::Withheld`]: no value, the whole share in
/// its accounting (the outcome is what the share bought), and the line as a note for stderr.
/// With a person, the accounting is at row level, as a measured query's is before it is stated
/// per person.
fn withheld(job: &crate::cmd::release::Job, cx: &Context, line: String) -> Result<Release, Error> {
    let labels: Vec<String> = job.statistic.columns().into_iter().map(|(c, _)| c.label()).collect();
    let column = (!labels.is_empty()).then(|| labels.join(","));
    let accuracy = Accuracy::value(cx.confidence, f64::INFINITY);
    let noise = Noise::multi(&job.mechanism, cx.neighbours, accuracy);
    let spend = match &job.person {
        Some(person) => row_spend(&job.spend, query_factor(person, job.grouped())),
        None => job.spend.clone(),
    };
    let cost = Cost::spent("withheld", spend);
    let mut release = Release::new(job.statistic.name(), column, cx.filters.to_vec(), noise, cost)?;
    release.post_processing.push(NO_VALUE.to_string());
    release.notes.push(line);
    Ok(release)
}

/// A person-level spend at row level: ε divided by the factor, ρ by its ρ factor (exact).
fn row_spend(spend: &Spend, factor: Factor) -> Spend {
    match spend {
        Spend::Pure(eps) => Spend::Pure(eps.split(factor.pure)),
        Spend::Zcdp(rho) => Spend::Zcdp(rho.split(factor.rho)),
        Spend::Approx { eps, delta } => Spend::Approx { eps: eps.split(factor.pure), delta: delta.clone() },
    }
}

/// Every query's fold, fed the same rows in one pass.
///
/// A sum, a mean with given bounds or a variance with neither `--where` nor `--by` is fed by
/// column instead of by row: each row's cell of its column is parsed once for every such
/// query (not once per query) into a batch of [`BATCH`] rows; a full batch is turned into grid
/// units once for every such query on the same grid and bounds (a mean and a sum of one column
/// share them), and each fold adds the units in a loop of its own (`add_grid_units`, which is
/// its `row` with that conversion done before). Every other query gets the row.
///
/// A row's cells are still checked in query order, each under its query's `--invalid`
/// policy, as the row arrives: a row's first refused cell is the same one, in the same row,
/// either way. The folds' totals are exact integers, so the order in which the batch adds them
/// changes nothing. Readers of the folds take them with [`WorkloadFold::into_folds`], which
/// adds what is still batched; `merge` adds both sides' batches first.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadFold {
    folds: Vec<Routed<AnyFold>>,
    /// How each fold is fed, in the order of `folds`.
    lanes: Arc<[Lane]>,
    /// The columns parsed once per row for the folds fed by column.
    columns: Arc<[usize]>,
    /// The conversions done once per batch: a value of `columns[i]` onto these bounds.
    grids: Arc<[(usize, GridBounds)]>,
    /// How many folds each of `grids` feeds (known when the folds are; not recounted per batch).
    fed: Arc<[usize]>,
    /// Whether some fold is fed rows.
    any_rows: bool,
    /// The batch: `values[c * BATCH + i]` is column `columns[c]` in the batch's row i, NaN
    /// for a cell that is not a finite number (a number never parses to NaN).
    values: Vec<f64>,
    /// Rows in the batch.
    filled: usize,
    /// One grid's units of a batch's column, [`NOT_A_NUMBER`] where the cell was not one.
    units: Vec<i128>,
    /// The selection's fold, holding the queries on found keys (`discover = true`): fed every
    /// row after the other queries.
    pub discovered: Option<Box<Selecting>>,
}

/// The selection's fold (`keyed_fold`): its keys, each with the discovered queries' folds.
pub type Selecting = Routed<Keyed<QueryFolds>>;

/// Each discovered query's folds in the kept keys, key and fold, in the queries' order.
type KeptFolds = Vec<Vec<(String, AnyFold)>>;

/// How a fold of a [`WorkloadFold`] is fed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
enum Lane {
    /// The row itself.
    Row,
    /// The units of `grids[grid]`, a value of `columns[column]`.
    Units { column: usize, grid: usize },
}

/// At most this many shared columns and conversions; further queries are fed their rows.
const SHARED: usize = 8;

/// Rows in a batch: large enough that a fold's loop runs long, small enough that the batch
/// stays in the first-level cache (8 columns of 256 values: 16 KiB).
pub const BATCH: usize = 256;

/// The units of a cell that was not a finite number (units lie within ±2^63).
const NOT_A_NUMBER: i128 = i128::MIN;

impl WorkloadFold {
    /// The batch of parsed values and its sums, allocated up front.
    fn batch_bytes(&self) -> usize {
        self.values.len() * std::mem::size_of::<f64>() + BATCH * std::mem::size_of::<i128>()
    }

    pub fn new(mut folds: Vec<Routed<AnyFold>>) -> WorkloadFold {
        let (mut columns, mut grids, mut lanes) = (Vec::new(), Vec::new(), Vec::new());
        for routed in &mut folds {
            let wanted = routed.plain().and_then(|fold| shared(fold, |f| (f.cell().index, f.bounds())));
            let lane = wanted.and_then(|(column, bounds)| {
                // A column is parsed for every row once it is listed: list it only with a
                // grid that has room, or it would be parsed for no query.
                let at = columns.iter().position(|&c| c == column).unwrap_or(columns.len());
                if at == SHARED {
                    return None;
                }
                let grid = slot(&mut grids, (at, bounds))?;
                if at == columns.len() {
                    columns.push(column);
                }
                Some(Lane::Units { column: at, grid })
            });
            lanes.push(lane.unwrap_or(Lane::Row));
        }
        let fed = (0..grids.len())
            .map(|grid| {
                lanes.iter().filter(|lane| matches!(lane, Lane::Units { grid: g, .. } if *g == grid)).count()
            })
            .collect();
        WorkloadFold {
            folds,
            fed,
            any_rows: lanes.contains(&Lane::Row),
            lanes: lanes.into(),
            values: vec![0.0; columns.len() * BATCH],
            columns: columns.into(),
            grids: grids.into(),
            filled: 0,
            units: Vec::new(),
            discovered: None,
        }
    }

    /// The folds, with every row they were fed.
    pub fn into_folds(self) -> Vec<Routed<AnyFold>> {
        self.into_parts().0
    }

    /// The folds and the selection's, with every row they were fed.
    pub fn into_parts(mut self) -> Folds {
        self.flush();
        (self.folds, self.discovered)
    }

    /// Adds the batch to the folds fed by column, and empties it.
    fn flush(&mut self) {
        let rows = std::mem::take(&mut self.filled);
        if rows == 0 {
            return;
        }
        for (g, (column, bounds)) in self.grids.iter().enumerate() {
            let values = &self.values[column * BATCH..column * BATCH + rows];
            let here = Lane::Units { column: *column, grid: g };
            let fed = self.fed[g];
            if fed > 1 {
                self.units.resize(rows, 0);
                for (units, &x) in self.units.iter_mut().zip(values) {
                    *units = if x.is_nan() { NOT_A_NUMBER } else { bounds.units(x) };
                }
            }
            for (routed, lane) in self.folds.iter_mut().zip(self.lanes.iter()) {
                if *lane != here {
                    continue;
                }
                let Some(fold) = routed.plain() else { continue };
                if fed > 1 {
                    shared(fold, |f| add_all(f, &self.units));
                } else {
                    // One fold on this grid: convert and add in one loop, nothing stored.
                    shared(fold, |f| f.add_all_values(values, bounds));
                }
            }
        }
    }
}

/// Adds a batch's units to `fold`; a cell that was not a number is skipped or imputed by the
/// fold's policy (a refused one stopped the scan at its row).
#[inline(always)]
fn add_all(fold: &mut dyn ByUnits, units: &[i128]) {
    match fold.cell().invalid {
        InvalidPolicy::Impute(v) => {
            for &u in units {
                if u == NOT_A_NUMBER {
                    fold.add(v.get());
                } else {
                    fold.add_grid_units(u);
                }
            }
        }
        InvalidPolicy::Skip | InvalidPolicy::Error => fold.add_all_grid_units(units, NOT_A_NUMBER),
    }
}

/// The position of `item` in `items`, added if new and there is room.
fn slot<T: PartialEq>(items: &mut Vec<T>, item: T) -> Option<usize> {
    match items.iter().position(|i| *i == item) {
        Some(i) => Some(i),
        None if items.len() < SHARED => {
            items.push(item);
            Some(items.len() - 1)
        }
        None => None,
    }
}

/// A fold that can be fed a value's grid units instead of the row.
trait ByUnits {
    fn cell(&self) -> NumberCell;
    /// The bounds `add_grid_units` takes units of.
    fn bounds(&self) -> GridBounds;
    fn add_grid_units(&mut self, units: i128);
    /// One value, as `row` takes a row's number (the fold's own `add`).
    fn add(&mut self, x: f64);
    /// `add_grid_units` of each of `units` but those equal to `skip`.
    #[inline(always)]
    fn add_all_grid_units(&mut self, units: &[i128], skip: i128) {
        for &u in units {
            if u != skip {
                self.add_grid_units(u);
            }
        }
    }
    /// Each of `values` as `row` would take it, NaN being a cell that is not a finite number
    /// (never a refused one: that stopped the scan).
    #[inline(always)]
    fn add_all_values(&mut self, values: &[f64], bounds: &GridBounds) {
        match self.cell().invalid {
            InvalidPolicy::Impute(v) => {
                for &x in values {
                    let x = if x.is_nan() { v.get() } else { x };
                    self.add_grid_units(bounds.units(x));
                }
            }
            InvalidPolicy::Skip | InvalidPolicy::Error => {
                for &x in values {
                    if !x.is_nan() {
                        self.add_grid_units(bounds.units(x));
                    }
                }
            }
        }
    }
}

/// The three number folds read their cell and take units the same way; only where their
/// bounds live differs (the mean's depend on the privacy unit).
macro_rules! by_units {
    ($fold:ident, $bounds:expr) => {
        impl ByUnits for $fold {
            fn cell(&self) -> NumberCell {
                self.cell
            }
            fn bounds(&self) -> GridBounds {
                $bounds(self)
            }
            #[inline]
            fn add_grid_units(&mut self, units: i128) {
                $fold::add_grid_units(self, units)
            }
            #[inline]
            fn add(&mut self, x: f64) {
                $fold::add(self, x)
            }
        }
    };
}
by_units!(MeanFold, |f: &MeanFold| *f.spec.bounds());
by_units!(VarianceFold, |f: &VarianceFold| f.spec.bounds);
by_units!(SumFold, |f: &SumFold| f.spec.bounds);

/// `with` applied to the fold inside, if it can be fed units.
#[inline(always)]
fn shared<T>(fold: &mut AnyFold, with: impl FnOnce(&mut dyn ByUnits) -> T) -> Option<T> {
    match fold {
        AnyFold::Mean(Clamped::Given(f)) => Some(with(f)),
        AnyFold::Variance(f) => Some(with(f)),
        AnyFold::Sum(Clamped::Given(f)) => Some(with(f)),
        _ => None,
    }
}

impl Fold for WorkloadFold {
    #[inline]
    fn row(&mut self, record: &Row) -> Result<(), BadCell> {
        let i = self.filled;
        let mut numbers = true;
        for (c, &column) in self.columns.iter().enumerate() {
            let x = parse_number_in(text_cell(record, column), record.decimal());
            numbers &= x.is_some();
            self.values[c * BATCH + i] = x.unwrap_or(f64::NAN);
        }
        if !numbers || self.any_rows {
            for (routed, lane) in self.folds.iter_mut().zip(self.lanes.iter()) {
                match *lane {
                    Lane::Row => routed.row(record)?,
                    Lane::Units { column, .. } => {
                        if self.values[column * BATCH + i].is_nan() {
                            if let Some(fold) = routed.plain() {
                                // Only a refusal matters now: the rest waits for the batch.
                                shared(fold, |f| f.cell().resolve(None, record).map(drop)).transpose()?;
                            }
                        }
                    }
                }
            }
        }
        if let Some(keyed) = &mut self.discovered {
            keyed.row(record)?;
        }
        self.filled += 1;
        if self.filled == BATCH {
            self.flush();
        }
        Ok(())
    }
    fn merge(&mut self, mut other: Self) {
        self.flush();
        other.flush();
        for (mine, theirs) in self.folds.iter_mut().zip(other.folds) {
            mine.merge(theirs);
        }
        if let (Some(mine), Some(theirs)) = (&mut self.discovered, other.discovered) {
            mine.merge(*theirs);
        }
    }
    fn widest_column(&self) -> Option<usize> {
        self.folds
            .iter()
            .filter_map(Fold::widest_column)
            .chain(self.discovered.as_ref().and_then(|k| k.widest_column()))
            .max()
    }
    fn heap_bytes(&self) -> usize {
        let keyed = self.discovered.as_ref().map_or(0, |k| k.heap_bytes());
        self.batch_bytes() + keyed + self.folds.iter().map(Fold::heap_bytes).sum::<usize>()
    }
    /// The keys found in the data count too: a part may hold as many as its rows, up to the cap
    /// (they were left out, so a part's copy was budgeted below what it can hold).
    fn part_heap_bytes(&self, rows: usize) -> usize {
        let keyed = self.discovered.as_ref().map_or(0, |k| k.part_heap_bytes(rows));
        self.batch_bytes() + keyed + self.folds.iter().map(|f| f.part_heap_bytes(rows)).sum::<usize>()
    }
    fn part_end(&mut self) {
        self.folds.iter_mut().for_each(Fold::part_end);
        if let Some(keyed) = &mut self.discovered {
            keyed.part_end();
        }
    }
    /// A fold that hears persons (`query::per_id`) is fed its rows as they come (it is never
    /// one of the batched lanes, which take plain sums and means only), so the person's rows
    /// are all in it now.
    /// The selection's fold always hears it: it counts each person once per key.
    fn person_end(&mut self) {
        for routed in self.folds.iter_mut().filter(|f| f.hears_persons()) {
            routed.person_end();
        }
        if let Some(keyed) = &mut self.discovered {
            keyed.person_end();
        }
    }
    fn hears_persons(&self) -> bool {
        self.folds.iter().any(Fold::hears_persons)
            || self.discovered.as_ref().is_some_and(|k| k.hears_persons())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::InvalidPolicy;
    use crate::privacy::unit::Neighbours;
    use csv::ByteRecord;

    /// A part's copy is budgeted with the keys it may find in the data, as a whole copy is.
    #[test]
    fn a_parts_budget_counts_the_keys_found() {
        use crate::query::count::CountFold;
        let count = || Routed::new(AnyFold::Count(CountFold::default()), vec![], None);
        let mut fold = WorkloadFold::new(vec![count()]);
        let without = fold.part_heap_bytes(100);
        let keyed = Keyed::new(0, 1000, QueryFolds(vec![count()]));
        let selecting: Selecting = Routed::new(keyed, vec![], None);
        let keys = selecting.part_heap_bytes(100);
        assert!(keys > 1000, "a thousand keys take room: {keys}");
        fold.discovered = Some(Box::new(selecting));
        assert_eq!(fold.part_heap_bytes(100), without + keys);
    }

    #[test]
    fn workload_fold_merges_exactly() {
        use crate::data::cell::NumberCell;
        use crate::data::filter::Test;
        use crate::numeric::bounds::{Bounds, Finite};
        use crate::query::count::CountFold;
        use crate::query::variance::{VarianceFold, VarianceSpec};
        let bounds = Bounds::new(Finite::from_f64(0.0).unwrap(), Finite::from_f64(10.0).unwrap()).unwrap();
        let one = crate::privacy::noise::Mechanism::Laplace("1".parse().unwrap());
        let spec = VarianceSpec::new(bounds, Neighbours::AddRemove, &one).unwrap();
        let cell = NumberCell { index: 1, invalid: InvalidPolicy::Skip };
        let empty = WorkloadFold::new(vec![
            Routed::new(
                AnyFold::Count(CountFold::default()),
                vec![(0, Test::Equals(b"a".to_vec().into()))],
                None,
            ),
            Routed::new(AnyFold::Variance(VarianceFold::new(spec, cell)), vec![], None),
        ]);
        let rows: Vec<ByteRecord> = (0..40)
            .map(|i| {
                ByteRecord::from(vec![if i % 3 == 0 { "a" } else { "b" }, &format!("{}", i as f64 * 0.37)])
            })
            .collect();
        let mut whole = empty.clone();
        let (mut left, mut right) = (empty.clone(), empty);
        for (i, r) in rows.iter().enumerate() {
            whole.row(&Row::record(r)).unwrap();
            if i < 17 {
                left.row(&Row::record(r)).unwrap()
            } else {
                right.row(&Row::record(r)).unwrap()
            }
        }
        left.merge(right);
        let summary = |w: &WorkloadFold| -> Vec<String> {
            w.clone()
                .into_folds()
                .into_iter()
                .flat_map(|r| r.groups)
                .map(|f| match f {
                    AnyFold::Count(c) => c.rows.to_string(),
                    AnyFold::Variance(v) => format!("{:?}", v.aggregate()),
                    _ => unreachable!(),
                })
                .collect()
        };
        assert_eq!(summary(&left), summary(&whole));
        assert_eq!(summary(&whole)[0], "14");
        assert_eq!(whole.widest_column(), Some(1));
    }

    /// One query of the equivalence test: kind (0 mean, 1 variance, 2 sum), column, bounds,
    /// `--invalid` policy, whether it has a `--where` (so it is fed rows), and the unit.
    type Query = (u8, usize, bool, u8, bool, bool);

    fn fold_of(&(kind, column, wide, policy, filtered, replace): &Query) -> Routed<AnyFold> {
        use crate::data::filter::Test;
        use crate::numeric::bounds::{Bounds, Finite};
        use crate::query::mean::MeanSpec;
        use crate::query::sum::SumSpec;
        use crate::query::variance::VarianceSpec;
        let (lower, upper) = if wide { (-50.0, 50.0) } else { (0.0, 100.0) };
        let bounds = Bounds::new(Finite::from_f64(lower).unwrap(), Finite::from_f64(upper).unwrap()).unwrap();
        let unit = if replace { Neighbours::Replace } else { Neighbours::AddRemove };
        let eps = crate::privacy::noise::Mechanism::Laplace("0.7".parse().unwrap());
        let invalid = match policy {
            0 => InvalidPolicy::Skip,
            1 => InvalidPolicy::Impute(Finite::from_f64(3.25).unwrap()),
            _ => InvalidPolicy::Error,
        };
        let cell = NumberCell { index: column, invalid };
        let inner = match kind {
            0 => {
                AnyFold::Mean(Clamped::Given(MeanFold::new(MeanSpec::new(bounds, unit, &eps).unwrap(), cell)))
            }
            1 => AnyFold::Variance(VarianceFold::new(VarianceSpec::new(bounds, unit, &eps).unwrap(), cell)),
            _ => AnyFold::Sum(Clamped::Given(SumFold::new(SumSpec::new(bounds, unit, &eps).unwrap(), cell))),
        };
        let filters = if filtered { vec![(2, Test::Equals(b"a".to_vec().into()))] } else { vec![] };
        Routed::new(inner, filters, None)
    }

    fn aggregates(folds: Vec<Routed<AnyFold>>) -> Vec<String> {
        folds
            .into_iter()
            .flat_map(|r| r.groups)
            .map(|f| match f {
                AnyFold::Mean(Clamped::Given(m)) => format!("{:?}", m.aggregate()),
                AnyFold::Variance(v) => format!("{:?}", v.aggregate()),
                AnyFold::Sum(Clamped::Given(s)) => format!("{:?}", s.aggregate()),
                _ => unreachable!("only these are built"),
            })
            .collect()
    }

    /// The first refusal: row number, column, message.
    type Refusal = (usize, usize, String);

    /// Feeds the rows one by one to each fold through `Fold::row`, in query order: the path
    /// every query took before the batches.
    fn by_rows(queries: &[Query], rows: &[ByteRecord]) -> Result<Vec<String>, Refusal> {
        let mut folds: Vec<_> = queries.iter().map(fold_of).collect();
        for (i, r) in rows.iter().enumerate() {
            for fold in &mut folds {
                fold.row(&Row::record(r)).map_err(|e| (i, e.column, e.why))?;
            }
        }
        Ok(aggregates(folds))
    }

    /// The same rows through a [`WorkloadFold`], cut in two at `cut` and merged.
    fn by_batches(queries: &[Query], rows: &[ByteRecord], cut: usize) -> Result<Vec<String>, Refusal> {
        let empty = WorkloadFold::new(queries.iter().map(fold_of).collect());
        let (mut left, mut right) = (empty.clone(), empty);
        for (i, r) in rows.iter().enumerate() {
            let side = if i < cut { &mut left } else { &mut right };
            side.row(&Row::record(r)).map_err(|e| (i, e.column, e.why))?;
        }
        left.merge(right);
        Ok(aggregates(left.into_folds()))
    }

    fn cell() -> impl Strategy<Value = String> {
        prop_oneof![
            12 => "-?[0-9]{1,3}(\\.[0-9]{1,3})?",
            2 => "[0-9]{4,7}",
            1 => Just(String::new()),
            1 => Just("x".to_string()),
            1 => Just("NaN".to_string()),
            1 => Just("1e400".to_string()),
            1 => Just(" 7.5 ".to_string()),
        ]
    }

    fn query() -> impl Strategy<Value = Query> {
        (0u8..3, 0usize..2, any::<bool>(), 0u8..3, prop::bool::weighted(0.25), prop::bool::weighted(0.2))
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The batches give every fold the same integers as feeding it row by row, and stop at
        /// the same first refused cell (row, then query order within the row) with the same
        /// message: for any mix of kinds, columns, bounds (shared or not), policies and
        /// filtered queries, any number of rows across batch ends, and any cut into two parts.
        #[test]
        fn batches_equal_rows(
            queries in proptest::collection::vec(query(), 1..7),
            rows in proptest::collection::vec(
                (cell(), cell(), prop_oneof![Just("a"), Just("b")]), 0..700),
            cut in any::<prop::sample::Index>(),
        ) {
            let rows: Vec<ByteRecord> =
                rows.iter().map(|(x, y, k)| ByteRecord::from(vec![x.as_str(), y.as_str(), k])).collect();
            let cut = cut.index(rows.len() + 1);
            prop_assert_eq!(by_batches(&queries, &rows, cut), by_rows(&queries, &rows));
        }
    }

    /// Once every shared grid is taken, a query on another column is fed rows, and that
    /// column is not parsed into the batch (it would feed nothing).
    #[test]
    fn a_column_is_batched_only_with_a_grid() {
        use crate::numeric::bounds::{Bounds, Finite};
        use crate::query::sum::SumSpec;
        let sum = |column: usize, upper: f64| {
            let bounds =
                Bounds::new(Finite::from_f64(0.0).unwrap(), Finite::from_f64(upper).unwrap()).unwrap();
            let eps = crate::privacy::noise::Mechanism::Laplace("1".parse().unwrap());
            let spec = SumSpec::new(bounds, Neighbours::AddRemove, &eps).unwrap();
            let cell = NumberCell { index: column, invalid: InvalidPolicy::Error };
            Routed::new(AnyFold::Sum(Clamped::Given(SumFold::new(spec, cell))), vec![], None)
        };
        let mut folds: Vec<_> = (1..=SHARED).map(|k| sum(0, 1000.0 * k as f64)).collect();
        folds.push(sum(1, 10.0));
        folds.push(sum(0, 1000.0));
        let fold = WorkloadFold::new(folds);
        assert_eq!(fold.grids.len(), SHARED);
        assert_eq!(&fold.columns[..], &[0]);
        assert_eq!(fold.lanes[SHARED], Lane::Row);
        assert_eq!(fold.lanes[SHARED + 1], Lane::Units { column: 0, grid: 0 });
    }

    #[test]
    fn the_first_refused_row_is_named_and_within_it_the_first_query() {
        let rows: Vec<ByteRecord> = [["1", "2", "a"], ["3", "x", "a"], ["", "6", "b"]]
            .iter()
            .map(|r| ByteRecord::from(r.to_vec()))
            .collect();
        // Row 1 is refused by the second query (column 1) although the first query (impute)
        // reads a cell that is fine there, and the third refuses row 2 (column 0): row 1 wins.
        let queries =
            [(0, 0, false, 1, false, false), (1, 1, false, 2, false, false), (2, 0, true, 2, false, false)];
        let got = by_batches(&queries, &rows, 2);
        assert_eq!(got, by_rows(&queries, &rows));
        let (row, column, why) = got.unwrap_err();
        assert_eq!((row, column), (1, 1));
        assert!(why.starts_with("'x' is not a finite number"), "{why}");
        // Two refusals in one row: the earlier query names its column.
        let rows: Vec<ByteRecord> = [["", "x", "a"]].iter().map(|r| ByteRecord::from(r.to_vec())).collect();
        for (queries, column) in [
            ([(1, 1, false, 2, false, false), (0, 0, false, 2, false, false)], 1),
            ([(0, 0, false, 2, false, false), (1, 1, false, 2, false, false)], 0),
        ] {
            let got = by_batches(&queries, &rows, 0);
            assert_eq!(got, by_rows(&queries, &rows));
            assert_eq!(got.unwrap_err().1, column);
        }
    }
}
