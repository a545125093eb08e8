//! `dpstat QUERY`: one statistic's release. The order of work is the guarantee's: validate
//! everything (the [`Job`]), open the input and resolve its header, charge the ledger (if any)
//! before the first data row, read the data once (twice only for a numeric histogram whose
//! bounds are found privately, and only from a file), add all the noise, check that the
//! accountant's total is exactly what was charged, record the release, and only then print.
//!
//! Under a ledger, everything a run shows after its charge is the release or independent of the
//! rows ([`Meter`]): rows of the wrong width and invalid cells are handled by `--invalid` (and
//! `--invalid error` is refused before anything is read), and any failure after the charge
//! prints one fixed message, naming no row, line, cell or count.
//!
//! The scan and the measurement are generic over the statistic (`Scan` is visited through
//! [`AnyStatistic::visit`]), so the per-row loop is compiled for each statistic's own fold.
//! Workloads (`cmd::run`) reuse [`publish`] on folds of [`AnyStatistic`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use rand::RngCore;

use crate::data::bound::{self, Bounded, Plan};
use crate::data::filter::{Filter, FilterSpec};
use crate::data::input::{Dataset, Input};
use crate::data::route::{FilterList, GroupBy, Routed};
use crate::data::source::{ColumnRef, CsvOptions, GroupSpec, Source};
use crate::data::{engine, scan};
use crate::error::{bad_input, is_withheld, Error};
use crate::numeric::bins::Keys;
use crate::numeric::list;
use crate::privacy::accountant::Cost;
use crate::privacy::accuracy::Confidence;
use crate::privacy::contribution::{self, Bounds, Factor, Unit};
use crate::privacy::currency::Spend;
use crate::privacy::delta::Delta;
use crate::privacy::epsilon::{large_epsilon_warning, Epsilon};
use crate::privacy::ledger::{self, BudgetSummary, LedgerFlags, LedgerSpec, Reservation};
use crate::privacy::noise::Mechanism;
use crate::privacy::rng;
use crate::privacy::unit::Neighbours;
use crate::privacy::zcdp::{epsilon_for, Rho};
use crate::query::discover::{self, Discovery};
use crate::query::group;
use crate::query::options::{self, Options, Setup};
use crate::query::per_id::{self, PerId};
use crate::query::statistic::{Context, Measured, Statistic, Visitor};
use crate::query::AnyStatistic;
use crate::report::release::{saturating_i128, Group, GroupedRelease, Published, TruncatedInfo};
use crate::report::text::{self, Format, Style};
use crate::report::{chart, svg};

/// Where the CSV comes from and how to read it: the same for a single query and a workload.
#[derive(Clone, Debug)]
pub struct InputFlags {
    pub source: Source,
    pub csv: CsvOptions,
    /// Threads that may scan a file.
    pub threads: usize,
    /// `--engine`: the cluster that folds the rows.
    pub engine: Option<String>,
}

impl InputFlags {
    /// What a plan assumes when it reads no data: a comma-separated file with a header, read
    /// on one thread (`plan run`, `plan sql`).
    pub fn planned() -> InputFlags {
        InputFlags {
            source: Source::Stdin,
            csv: CsvOptions { delimiter: b',', has_header: true, decimal: Default::default() },
            threads: 1,
            engine: None,
        }
    }

    /// Opens the input for a release; with `--engine`, checks the cluster can run it (before
    /// anything is charged).
    pub fn open(&self, ledger: bool) -> Result<Input> {
        let mut input = Input::open(&self.source, &self.csv, ledger, self.threads)?;
        if let Some(engine) = &self.engine {
            input.set_engine(engine)?;
            engine::probe(&input)?;
        }
        Ok(input)
    }
}

/// `--max-rows-per-id auto` reads every person's row count before it chooses K, a second pass
/// the cluster does not make.
pub const AUTO_ON_CLUSTER: &str = "--max-rows-per-id auto does not run on a cluster (--engine): give K";

/// Which noise the flags ask for (`--noise`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NoiseKind {
    /// Discrete Laplace: pure ε-DP.
    #[default]
    Laplace,
    /// Discrete Gaussian: ρ-zCDP, stated as (ε, δ).
    Gaussian,
}

/// The privacy flags as given: `--eps`, `--noise`, `--rho`, `--delta`, `--discover`,
/// `--max-keys`.
#[derive(Clone, Debug, Default)]
pub struct PrivacyFlags {
    pub noise: NoiseKind,
    pub eps: Option<Epsilon>,
    pub rho: Option<Rho>,
    pub delta: Option<Delta>,
    pub discover: bool,
    pub max_keys: usize,
}

impl PrivacyFlags {
    /// The mechanism these flags ask for, and the discovery (`--discover`), refusing every
    /// combination that does not name one guarantee:
    /// - Laplace: `--eps E`; no `--rho`, and `--delta` only with `--discover`;
    /// - Gaussian: `--delta D` and either `--rho R` or `--eps E` (then ρ is the largest whose
    ///   conversion at D is at most E: `zcdp::rho_for`, rounded down);
    /// - `--discover`: Laplace at `--eps E` with `--delta D`.
    pub fn resolve(&self) -> Result<(Mechanism, Option<Discovery>), Error> {
        match (self.noise, self.discover) {
            (NoiseKind::Gaussian, true) => Err(Error::usage(
                "--discover is (epsilon, delta)-DP with Laplace noise on the key counts, not zCDP: \
                 leave out --noise gaussian",
            )),
            (NoiseKind::Laplace, discover) => {
                if self.rho.is_some() {
                    return Err(Error::usage(
                        "--rho is the budget of --noise gaussian (zCDP); with Laplace noise give --eps",
                    ));
                }
                let eps = self.eps.clone().ok_or_else(|| Error::usage("give the privacy budget --eps E"))?;
                let discovery = match (discover, &self.delta) {
                    (true, Some(delta)) => {
                        let discovery = Discovery { delta: delta.clone(), max_keys: self.max_keys };
                        // The key cap's test is part of the release: a cap it cannot pass is
                        // refused now, before anything is read or charged.
                        discover::KeyCap::new(&eps, &discovery, 1)?;
                        Some(discovery)
                    }
                    (true, None) => {
                        return Err(Error::usage(
                            "--discover needs --delta D: the probability that a key held by one person \
                             shows, which the threshold is set from (e.g. --delta 1e-7, well below 1/rows)",
                        ))
                    }
                    (false, Some(_)) => {
                        return Err(Error::usage(
                            "--delta is for --noise gaussian or --discover; a Laplace release is pure \
                             epsilon-DP (delta = 0): leave it out",
                        ))
                    }
                    (false, None) => None,
                };
                Ok((Mechanism::Laplace(eps), discovery))
            }
            (NoiseKind::Gaussian, false) => {
                let delta = self.delta.clone().ok_or_else(|| {
                    Error::usage(
                        "--noise gaussian needs --delta D: the release is rho-zCDP and states the \
                         (epsilon, delta) it converts to (e.g. --delta 1e-6, well below 1/rows)",
                    )
                })?;
                let rho = match (&self.rho, &self.eps) {
                    (Some(rho), _) => rho.clone(),
                    (None, Some(eps)) => Rho::largest_for(eps, &delta).map_err(|e| {
                        Error::usage(format!("--eps {eps} at --delta {delta}: {e}; raise --eps or --delta"))
                    })?,
                    (None, None) => {
                        return Err(Error::usage("--noise gaussian needs --rho R, or --eps E with --delta D"))
                    }
                };
                Ok((Mechanism::Gaussian { rho, delta }, None))
            }
        }
    }
}

/// `--privacy-id` and the contribution bounds, as given.
#[derive(Clone, Debug)]
pub struct PersonFlags {
    /// The id column, or a CSV list of them.
    pub ids: String,
    pub bounds: Bounds,
    /// Whether --max-groups-per-id or --max-rows-per-group was given (they need --by).
    pub grouped_flags: bool,
    /// `--max-rows-per-id auto`.
    pub auto: bool,
    /// Whether --max-rows-per-group was given (else it follows K, chosen or not).
    pub rows_per_group_given: bool,
    /// Whether --max-groups-per-id was given (else every group of the release, or 1 with
    /// `--discover`: [`PersonFlags::with_default_groups`]).
    pub groups_given: bool,
    /// `--count-truncated`.
    pub count_truncated: bool,
}

impl PersonFlags {
    /// The flags with G as given, or its default for a release over `groups` public groups
    /// (None with `--discover` or without `--by`).
    ///
    /// The default costs nothing: a grouped release is divided by T = min(K, G·K'_g) (ρ by
    /// K'_g·T, `privacy::contribution`), and while K_g = K (its default) T = K for every G ≥ 1,
    /// so a bound on the groups adds no protection and only drops rows. A person cannot count
    /// in more groups than the release has, so G = their number is no bound at all, and each
    /// person keeps K rows chosen among all of theirs. (With K_g < K a G below ⌈K/K_g⌉ would
    /// lower T; the default still keeps every group and T = K, the noise of K rows.) For one
    /// value per person (`query::per_id`) T = min(G, K), at most the number of groups. With
    /// `--discover` the keys a person can add, min(G, K), set the selection's cost (§9.5), so
    /// G stays 1 there unless given.
    pub fn with_default_groups(&self, groups: Option<usize>) -> PersonFlags {
        let mut flags = self.clone();
        if !flags.groups_given {
            let every =
                groups.map_or(1, |g| u32::try_from(g).unwrap_or(u32::MAX).min(contribution::MAX_BOUND));
            flags.bounds.groups = every.max(1);
        }
        flags
    }
}

/// `--max-rows-per-id auto`: what choosing K privately, then rebuilding the statistic at the
/// ε that K leaves it, needs.
#[derive(Clone, Debug)]
pub struct AutoRows {
    /// ε spent choosing K (a tenth of the release's).
    pub epsilon: Epsilon,
    /// The release's own mechanism, at the nine tenths left, before the person's factor.
    pub release: Mechanism,
    pub kind: &'static str,
    pub options: Options,
    pub neighbours: Neighbours,
    pub has_header: bool,
    pub groups: usize,
    pub filtered: bool,
    pub ledger: bool,
    /// Whether --max-rows-per-group was given (else K_g follows the K chosen).
    pub rows_per_group_given: bool,
}

impl AutoRows {
    /// The statistic's setup at `mechanism`, as `Job::new` validated it.
    pub fn setup<'m>(&self, mechanism: &'m Mechanism) -> Setup<'m> {
        Setup {
            mechanism,
            neighbours: self.neighbours,
            has_header: self.has_header,
            groups: self.groups,
            filtered: self.filtered,
            private_bounds: true,
            ledger: self.ledger,
        }
    }
}

/// The person as the privacy unit, validated: the id columns and the bounds.
#[derive(Clone, Debug)]
pub struct Person {
    pub ids: Vec<ColumnRef>,
    pub bounds: Bounds,
    /// `--max-rows-per-id auto` (then `bounds.rows` is set once K is chosen).
    pub auto: Option<AutoRows>,
    /// `--count-truncated`: the ε of the noisy count of persons with rows dropped.
    pub truncated: Option<Epsilon>,
    /// The release's own mechanism when a share of ε went to the above (before the factor).
    pub release: Option<Mechanism>,
    /// `--total-per-id` (`total`) or `--average-per-id` (`average`): the statistic takes one
    /// clamped value per person (`query::per_id`), so one person moves it as one row per group.
    pub value_per_id: Option<&'static str>,
}

impl Person {
    /// Validates `flags` for a release of `kind`, grouped or not.
    pub fn new(
        flags: &PersonFlags,
        has_header: bool,
        grouped: bool,
        neighbours: Neighbours,
    ) -> Result<Person, Error> {
        flags.bounds.check().map_err(Error::usage)?;
        if flags.grouped_flags && !grouped {
            return Err(Error::usage(
                "--max-groups-per-id and --max-rows-per-group bound a person's rows across --by groups: \
                 add --by COL, or bound the rows with --max-rows-per-id alone",
            ));
        }
        if neighbours == Neighbours::Replace {
            return Err(Error::usage(
                "--privacy-id with --neighbours replace: replace keeps the number of rows public, but a \
                 person has any number of rows; use add-remove (the default), whose epsilon also covers \
                 replacing one person at twice its value",
            ));
        }
        let items = list::values(&flags.ids).map_err(|e| Error::usage(format!("--privacy-id: {e}")))?;
        if items.is_empty() || items.iter().any(|i| i.trim().is_empty()) {
            return Err(Error::usage("--privacy-id needs a column (or COL1,COL2 for an id made of several)"));
        }
        let ids = items
            .iter()
            .map(|i| ColumnRef::parse(i, has_header, "--privacy-id"))
            .collect::<Result<_, _>>()?;
        Ok(Person {
            ids,
            bounds: flags.bounds,
            auto: None,
            truncated: None,
            release: None,
            value_per_id: None,
        })
    }

    /// The bounds once K is `rows` (K_g follows K unless it was given).
    pub fn with_rows(&self, rows: u32, rows_per_group_given: bool) -> Bounds {
        let rows_per_group = if rows_per_group_given { self.bounds.rows_per_group } else { rows };
        Bounds { rows, rows_per_group, ..self.bounds }
    }

    /// The unit a release states.
    pub fn unit(&self, grouped: bool) -> Unit {
        self.unit_at(&self.bounds, grouped)
    }

    /// The unit under `bounds` (K as chosen by `--max-rows-per-id auto`).
    pub fn unit_at(&self, bounds: &Bounds, grouped: bool) -> Unit {
        let ids = self.ids.iter().map(ColumnRef::label).collect();
        match self.value_per_id {
            Some(value) => Unit::person_values(ids, bounds, grouped, value),
            None => Unit::person(ids, bounds, grouped),
        }
    }

    /// What one person moves the release by under `bounds`, as rows: K rows' factor, or, for
    /// one value per person, one row in each of their groups (`privacy::unit::Bounds::one_value_each`).
    pub fn factor_at(&self, bounds: &Bounds, grouped: bool) -> Factor {
        match self.value_per_id {
            Some(_) => bounds.one_value_each(grouped).factor(grouped),
            None => bounds.factor(grouped),
        }
    }

    /// Takes a statistic's `--total-per-id`/`--average-per-id`, refused without a person and
    /// with keys found in the data.
    pub fn take_per_id(
        person: Option<&mut Person>,
        per_id: Option<&PerId>,
        discover: bool,
    ) -> Result<(), Error> {
        let Some(per_id) = per_id else { return Ok(()) };
        per_id::check_person(per_id, person.is_some(), discover)?;
        if let Some(p) = person {
            p.value_per_id = Some(per_id.reduce().name());
        }
        Ok(())
    }

    /// The person as a discovery's unit (`query::discover`): its unit and bounds.
    pub fn persons(&self) -> discover::Persons {
        discover::Persons { unit: self.unit(true), bounds: self.bounds }
    }
}

/// A release as the command line asks for it, before validation.
#[derive(Clone, Debug)]
pub struct Request {
    /// The statistic's kind (`count`, `median`, …).
    pub kind: &'static str,
    pub options: Options,
    pub privacy: PrivacyFlags,
    pub neighbours: Neighbours,
    pub filters: Vec<Filter>,
    /// `--by COL` with its `--keys` (None with `--discover`).
    pub by: Option<(String, Option<Keys>)>,
    /// `--privacy-id` and its bounds.
    pub person: Option<PersonFlags>,
    pub format: Format,
    /// `--with-error`, and how text rounds (`--digits`, `--full-precision`).
    pub style: Style,
    pub confidence: Confidence,
    pub ledger: LedgerFlags,
    pub input: InputFlags,
    /// `--plot FILE.svg`.
    pub plot: Option<PathBuf>,
}

/// A validated release: every rule across flags is checked here, before a single data row is
/// read, so later stages never recheck.
#[derive(Clone, Debug)]
pub struct Job {
    pub input: InputFlags,
    pub filters: Vec<FilterSpec>,
    /// The filters as the release lists them.
    pub filter_labels: Vec<String>,
    /// `--by`: one release per public key, each with the full ε.
    pub group: Option<GroupSpec>,
    /// `--by COL --discover`: one release per key found in COL.
    pub discover_by: Option<(ColumnRef, Discovery)>,
    pub statistic: AnyStatistic,
    /// The noise and its ε or ρ; with `--privacy-id`, at row level on the bounded rows (the
    /// release's divided by the person's factor, [`Mechanism::divided`]), except with `--discover`,
    /// whose publication divides the whole ε itself.
    pub mechanism: Mechanism,
    /// `--privacy-id`: bound each person's rows, and state the release per person.
    pub person: Option<Person>,
    /// What the release spends: ε, ρ, or (ε, δ) with `--discover`.
    pub spend: Spend,
    pub neighbours: Neighbours,
    pub format: Format,
    pub style: Style,
    pub confidence: Confidence,
    pub ledger: Option<LedgerSpec>,
    /// Written after the release and any ledger charge.
    pub plot: Option<PathBuf>,
}

impl Job {
    /// One release per group: listed (`--by` with `--keys`) or found (`--discover`).
    pub fn grouped(&self) -> bool {
        self.group.is_some() || self.discover_by.is_some()
    }

    /// Every rule across the flags, in stages: the groups, the person, the budget's shares
    /// and the statistic at row level, then what the output needs. Each stage refuses what it
    /// checks before the next runs, so a command line with two problems names the first.
    pub fn new(request: Request) -> Result<Job, Error> {
        let has_header = request.input.csv.has_header;
        let (mechanism, discovery) = request.privacy.resolve()?;
        let mut options = request.options.clone();
        let (mut group, discover_by) = groups_of(&request, discovery, &mut options)?;
        options::close_lists(
            &mut options,
            group.as_mut().map(|g: &mut GroupSpec| &mut g.keys),
            request.neighbours,
            request.ledger.path.is_some(),
        )?;
        if discover_by.is_some() && request.neighbours == Neighbours::Replace && request.kind != "count" {
            return Err(Error::usage(format!(
                "--by with --discover under --neighbours replace covers count only: for {} a changed row \
                 could create a key and move a released group at once, which the threshold does not pay \
                 for; use --neighbours add-remove",
                request.kind
            )));
        }
        let mut person = person_of(&request, &options, group.as_ref(), discover_by.as_ref(), &mechanism)?;
        Person::take_per_id(person.as_mut(), options.per_id.as_ref(), discover_by.is_some())?;
        let spend = match (&mechanism, discover_by.as_ref().map(|d| &d.1).or(options.discover.as_ref())) {
            (Mechanism::Laplace(eps), Some(d)) => Spend::Approx { eps: eps.clone(), delta: d.delta.clone() },
            (m, _) => m.spend(),
        };
        let groups = group_count(group.as_ref(), discover_by.as_ref());
        if let (Some(p), Some(flags)) = (person.as_mut(), &request.person) {
            let at = Extras { request: &request, options: &options, groups, keyed: group.is_some() };
            at.take_extras(p, flags, &mechanism, discover_by.is_some())?;
        }
        let mechanism = row_mechanism(mechanism, person.as_ref(), group.is_some(), discover_by.is_some());
        let setup = Setup {
            mechanism: &mechanism,
            neighbours: request.neighbours,
            has_header,
            groups,
            filtered: !request.filters.is_empty(),
            private_bounds: true,
            ledger: request.ledger.path.is_some(),
        };
        let statistic = AnyStatistic::new(request.kind, options, &setup)?;
        let filters = filter_specs(&request.filters, has_header, "--where")?;
        check_output(&request, &statistic, group.is_some() || discover_by.is_some())?;
        Ok(Job {
            input: request.input,
            filter_labels: filters.iter().map(FilterSpec::label).collect(),
            filters,
            group,
            discover_by,
            statistic,
            mechanism,
            person,
            spend,
            neighbours: request.neighbours,
            format: request.format,
            style: request.style,
            confidence: request.confidence,
            ledger: LedgerSpec::from_flags(&request.ledger)?,
            plot: request.plot,
        })
    }
}

/// A release's groups: listed (`--by` with `--keys`), or the column whose keys are found
/// (`--by --discover`); neither for one release.
pub type Groups = (Option<GroupSpec>, Option<(ColumnRef, Discovery)>);

/// The release's groups: `--by` with its `--keys` (listed), `--by --discover` (found in a
/// column), or a histogram's `--discover` (its categories found, moved into `options`).
fn groups_of(
    request: &Request,
    discovery: Option<Discovery>,
    options: &mut Options,
) -> Result<Groups, Error> {
    let has_header = request.input.csv.has_header;
    if options.closed && discovery.is_some() {
        return Err(Error::usage(options::DISCOVER_CLOSED));
    }
    match (&request.by, discovery) {
        (Some((by, Some(keys))), None) => {
            let column = ColumnRef::parse(by, has_header, "--by")?;
            Ok((Some(GroupSpec { column, keys: keys.clone() }), None))
        }
        (Some((_, None)), None) => Err(Error::usage(
            "--by COL needs its public keys: --keys K1,K2,... (or --discover --delta D to find \
             them in the data)",
        )),
        (Some((_, Some(_))), Some(_)) => {
            Err(Error::usage("--keys lists the groups and --discover finds them: give one of them"))
        }
        (Some((by, None)), Some(discovery)) => {
            Ok((None, Some((ColumnRef::parse(by, has_header, "--by")?, discovery))))
        }
        (None, Some(discovery)) if request.kind == "histogram" => {
            options.discover = Some(discovery);
            Ok((None, None))
        }
        (None, Some(_)) => Err(Error::usage(
            "--discover finds the groups of --by COL (or a histogram's categories): add --by COL",
        )),
        (None, None) => Ok((None, None)),
    }
}

/// The groups a release may hold, as the memory checks count them: the listed keys, or every
/// key a discovery may find (at least two), or one.
pub fn group_count(group: Option<&GroupSpec>, discover_by: Option<&(ColumnRef, Discovery)>) -> usize {
    match (group, discover_by) {
        (Some(g), _) => g.keys.groups(),
        (None, Some((_, d))) => d.max_keys.max(2),
        (None, None) => 1,
    }
}

/// `--privacy-id` and its bounds, checked against the groups; with `--discover`, the key cap's
/// margin and each key's δ (which grow with the keys a person adds) are refused now if they do
/// not fit, before anything is read or charged.
fn person_of(
    request: &Request,
    options: &Options,
    group: Option<&GroupSpec>,
    discover_by: Option<&(ColumnRef, Discovery)>,
    mechanism: &Mechanism,
) -> Result<Option<Person>, Error> {
    let Some(flags) = &request.person else { return Ok(None) };
    if options.discover.is_some() {
        return Err(Error::usage(
            "histogram --discover with --privacy-id is not supported yet: count --by COL \
             --discover --privacy-id ID releases the same keys with their counts per person",
        ));
    }
    let grouped = group.is_some() || discover_by.is_some();
    let flags = flags.with_default_groups(group.map(|g| g.keys.groups()));
    let person = Person::new(&flags, request.input.csv.has_header, grouped, request.neighbours)?;
    if let (Some((_, discovery)), Mechanism::Laplace(eps)) = (discover_by, mechanism) {
        let persons = person.persons();
        let counted = request.kind == "count" && persons.one_row_per_key();
        discover::Shares::new(eps, discovery, counted, persons.keys_each())?;
    }
    Ok(Some(person))
}

/// What the person-level extras (`--max-rows-per-id auto`, `--count-truncated`) are checked
/// against: the request, its options, its groups and whether they are listed.
struct Extras<'r> {
    request: &'r Request,
    options: &'r Options,
    groups: usize,
    keyed: bool,
}

impl Extras<'_> {
    /// Gives each extra its tenth of ε and the release the rest. The statistic runs at row
    /// level on the bounded rows: what it is given and checks its options against is the
    /// release's budget divided by what one person moves it by. A discovery divides its budget
    /// itself (`query::discover::publish`), as without persons, so it takes no extras.
    fn take_extras(
        &self,
        p: &mut Person,
        flags: &PersonFlags,
        mechanism: &Mechanism,
        discovers: bool,
    ) -> Result<(), Error> {
        let extras = u32::from(flags.auto) + u32::from(flags.count_truncated);
        if extras == 0 {
            return Ok(());
        }
        if discovers {
            return Err(Error::usage(
                "--max-rows-per-id auto and --count-truncated are not supported with --discover: give \
                 K as a number",
            ));
        }
        let Mechanism::Laplace(eps) = mechanism else {
            return Err(Error::usage(
                "--max-rows-per-id auto and --count-truncated spend a tenth of --eps (pure epsilon) \
                 each; with --noise gaussian give K as a number and leave out --count-truncated \
                 (dpstat plan --max-rows-per-id 1,2,5,10 shows the noise at each K)",
            ));
        };
        let (share, whole) = contribution::AUTO_SHARE;
        let release = Mechanism::Laplace(eps.share(whole - extras * share, whole));
        if flags.count_truncated {
            p.truncated = Some(eps.share(share, whole));
        }
        p.release = Some(release.clone());
        if flags.auto {
            self.take_auto(p, flags, eps.share(share, whole), release)?;
        }
        Ok(())
    }

    /// `--max-rows-per-id auto`: K is known only after the scan, and nothing the rows decide
    /// may stop the run after the charge, so the statistic must take the ε of the smallest and
    /// of the largest K now; until the choice, the bounds are those of K = 1.
    fn take_auto(
        &self,
        p: &mut Person,
        flags: &PersonFlags,
        epsilon: Epsilon,
        release: Mechanism,
    ) -> Result<(), Error> {
        let request = self.request;
        let auto = AutoRows {
            epsilon,
            release,
            kind: request.kind,
            options: self.options.clone(),
            neighbours: request.neighbours,
            has_header: request.input.csv.has_header,
            groups: self.groups,
            filtered: !request.filters.is_empty(),
            ledger: request.ledger.path.is_some(),
            rows_per_group_given: flags.rows_per_group_given,
        };
        for k in [contribution::MAX_BOUND, 1] {
            let bounds = p.with_rows(k, flags.rows_per_group_given);
            let m = auto.release.divided(p.factor_at(&bounds, self.keyed));
            AnyStatistic::new(request.kind, self.options.clone(), &auto.setup(&m))?;
        }
        p.bounds = p.with_rows(1, flags.rows_per_group_given);
        p.auto = Some(auto);
        Ok(())
    }
}

/// The mechanism the statistic runs at row level: with a person (and no discovery, which
/// divides its budget itself), the release's share divided by what one person moves it by.
fn row_mechanism(mechanism: Mechanism, person: Option<&Person>, keyed: bool, discovers: bool) -> Mechanism {
    match person {
        Some(Person { auto: Some(auto), bounds, .. }) => {
            auto.release.divided(person.map_or(Factor::ONE, |p| p.factor_at(bounds, keyed)))
        }
        Some(p) if !discovers => {
            p.release.as_ref().unwrap_or(&mechanism).divided(p.factor_at(&p.bounds, keyed))
        }
        _ => mechanism,
    }
}

/// What the output asks of the statistic: a chart needs several numbers (bins, groups or
/// quantile levels, known from the flags), a `--plot` path must be writable, and a statistic
/// that reads its input twice needs a file.
fn check_output(request: &Request, statistic: &AnyStatistic, grouped: bool) -> Result<(), Error> {
    let charted = request.format == Format::Chart || request.plot.is_some();
    if charted && statistic.name() == "histogram" && !statistic.draws_bars() {
        return Err(Error::usage(
            "--format chart and --plot draw noisy counts; histogram --normalize releases \
             proportions: use --format text or --format json",
        ));
    }
    if charted && !grouped && !statistic.draws_bars() {
        return Err(Error::usage(format!(
            "{} ({} releases one number)",
            chart::ONE_NUMBER,
            statistic.name()
        )));
    }
    if let Some(path) = &request.plot {
        check_plot_path(path)?;
    }
    if let Some(why) = statistic.reads_twice() {
        if !rereadable(&request.input.source) {
            return Err(Error::usage(why));
        }
    }
    Ok(())
}

/// Whether the source can be read a second time from its start: a regular file, decided by its
/// metadata and not by its name (`/dev/stdin`, a FIFO or a process substitution cannot). A path
/// that cannot be examined is left to fail when it is opened.
fn rereadable(source: &Source) -> bool {
    match source {
        Source::Stdin => false,
        Source::Path(path) => std::fs::metadata(path).map_or(true, |m| m.is_file() || m.is_dir()),
        Source::Paths(_) => true,
    }
}

/// `--where` filters with their columns parsed (`flag` names them in messages).
pub fn filter_specs(filters: &[Filter], has_header: bool, flag: &str) -> Result<Vec<FilterSpec>, Error> {
    filters
        .iter()
        .map(|f| {
            Ok(FilterSpec { column: ColumnRef::parse(&f.column, has_header, flag)?, test: f.test.clone() })
        })
        .collect()
}

/// Charges the ledger if there is one, reads the data, releases, records the release, and only
/// then writes it to `out`.
pub fn run(job: Job, out: &mut dyn Write) -> Result<()> {
    rng::refuse_with_ledger(job.ledger.is_some())?;
    let mut rng = rng::system_rng()?;
    let mut input = job.input.open(job.ledger.is_some())?;
    if input.engine().is_some() && job.person.as_ref().is_some_and(|p| p.auto.is_some()) {
        return Err(bad_input(AUTO_ON_CLUSTER));
    }
    note_no_files(&input, job.ledger.is_some());
    let mut meter = Meter::new(job.ledger.as_ref(), charge_of(&job));
    let scanned =
        job.statistic.visit(Scan { job: &job, input: &mut input, rng: &mut rng, meter: &mut meter });
    let measured = meter.after_rows(scanned.and_then(|published| {
        published.accounting().spends_exactly(&job.spend)?;
        Ok(published)
    }));
    let mut published = meter.finish_withheld(&mut input, measured)?;
    // Once nothing can refuse the run any more: a refusal's first line is its problem.
    warn_if_large(&job.spend, job.mechanism.delta());
    // Drawn now, so a failure to draw charges nothing; written only after the charge.
    let plot = match &job.plot {
        Some(path) => {
            let svg = chart::of_published(&published, job.style)
                .ok_or_else(|| bad_input(chart::ONE_NUMBER))
                .and_then(|chart| svg::render(&chart));
            Some((path, meter.after_rows(svg)?))
        }
        None => None,
    };
    if let Some(summary) = meter.complete(&mut input)? {
        published.set_budget(summary);
    }
    let bytes = text::for_terminal(text::render(&published, job.format, job.style)?, job.format);
    if let Some((path, svg)) = plot {
        write_plot(path, &svg, job.ledger.is_some())?;
    }
    out.write_all(&bytes)?;
    out.flush()?;
    print_notes(&published, job.confidence);
    Ok(())
}

/// What the ledger records of a release: the query as it names it, the column, the neighbours,
/// the unit and the spend.
fn charge_of(job: &Job) -> ledger::Charge {
    let query = match (&job.group, &job.discover_by) {
        (Some(g), _) => format!("{} by {}", job.statistic.name(), g.column.label()),
        (None, Some((by, _))) => format!("{} by {} (keys found)", job.statistic.name(), by.label()),
        (None, None) => job.statistic.name().to_string(),
    };
    ledger::Charge {
        query,
        column: job.statistic.column().map(ColumnRef::label),
        neighbours: job.neighbours.name().to_string(),
        unit: job
            .person
            .as_ref()
            .map_or_else(|| ledger::ROW_UNIT.to_string(), |p| p.unit(job.group.is_some()).ledger_name()),
        spend: job.spend.clone(),
    }
}

/// The notes and warnings on stderr once the release is printed: its unit, the persons with
/// rows dropped, and its own notes, which may carry released values (privately chosen
/// bounds), so only after the charge.
fn print_notes(published: &Published, confidence: Confidence) {
    if let Some(line) = published.unit().line() {
        note_line(&format!("privacy unit: {line}"));
    }
    if let Some(t) = published.truncated() {
        note_line(&format!(
            "about {} people (± {} at {}%) had rows dropped by the bounds (--count-truncated, epsilon {})",
            t.persons,
            t.error_bound,
            confidence.level() * 100.0,
            t.epsilon
        ));
    }
    if let Published::One(release) = published {
        for note in &release.notes {
            note_line(note);
        }
        for warning in &release.warnings {
            warn(warning);
        }
    }
    for warning in text::warnings(published, None) {
        warn(&warning);
    }
}

/// The ledger's side of a run. [`Meter::before_rows`] charges the release once its flags and
/// the header are checked and before the first data row is read; from then on
/// [`Meter::after_rows`] lets nothing out but the release: any error becomes one fixed message,
/// the same whatever the rows hold. [`Meter::complete`] records the finished release with the
/// fingerprint of the data it read. Without a ledger the meter does nothing.
pub struct Meter<'a> {
    spec: Option<&'a LedgerSpec>,
    charge: ledger::Charge,
    reservation: Option<Reservation>,
}

impl<'a> Meter<'a> {
    pub fn new(spec: Option<&'a LedgerSpec>, charge: ledger::Charge) -> Meter<'a> {
        Meter { spec, charge, reservation: None }
    }

    /// Charges the ledger (once, whatever the number of passes), and from now on reads rows of
    /// any width: nothing in them may stop the run.
    pub fn before_rows(&mut self, input: &mut Input) -> Result<()> {
        let Some(spec) = self.spec else { return Ok(()) };
        input.tolerate_ragged_rows();
        if self.reservation.is_none() {
            // Only a run that opens a new budget reads the data for it (docs/DESIGN.md §5.2).
            let data = &mut || Ok(input.fingerprint_before_rows());
            self.reservation = Some(ledger::reserve_for(spec, &self.charge, data)?);
        }
        Ok(())
    }

    /// After the charge, an error says only that the release failed after it was charged: its
    /// own message could name a row, a line or a cell, and even its kind could depend on them.
    /// A [`Error::Withheld`] outcome passes: it is the release itself, decided from noisy
    /// numbers only.
    pub fn after_rows<T>(&self, result: Result<T>) -> Result<T> {
        match (result, &self.reservation) {
            (Err(e), Some(_)) if is_withheld(&e) => Err(e),
            (Err(_), Some(reservation)) => Err(Error::internal(format!(
                "the release failed after {} was charged to dataset {} in ledger {}; nothing \
                 was released, and the reason is not shown because under a ledger it could reveal \
                 the data: the custodian can see it with `dpstat check FILE` or by running the \
                 same release without --ledger",
                self.charge.spend,
                reservation.summary.dataset,
                reservation.path.display()
            ))
            .into()),
            (result, _) => result,
        }
    }

    /// A withheld outcome is a completed release: recorded as released before its line is
    /// printed, like any other release. Anything else passes unchanged.
    pub fn finish_withheld<T>(&self, input: &mut Input, result: Result<T>) -> Result<T> {
        match result {
            Err(e) if is_withheld(&e) => {
                self.complete(input)?;
                Err(e)
            }
            other => other,
        }
    }

    /// Records the completed release with the fingerprint of its data; the budget summary that
    /// the release prints.
    pub fn complete(&self, input: &mut Input) -> Result<Option<BudgetSummary>> {
        let Some(reservation) = &self.reservation else { return Ok(None) };
        let fingerprint = input.fingerprint().context("internal error: the input was not fingerprinted")?;
        ledger::complete(reservation, &fingerprint)?;
        Ok(Some(reservation.summary.clone()))
    }
}

/// Writes a drawn `--plot`; a failure says whether the ledger was already charged. Charged, it
/// is the system's failure (exit 1), as every failure after the charge is: exit 2 says nothing
/// was charged.
pub fn write_plot(path: &Path, svg: &str, charged: bool) -> Result<()> {
    std::fs::write(path, svg).map_err(|e| {
        let message = format!("--plot: writing {}: {e}; nothing was printed", path.display());
        if charged {
            Error::internal(format!("{message} (the ledger was already charged)")).into()
        } else {
            bad_input(message)
        }
    })
}

/// The scan and measurement of one statistic, compiled for its own fold.
struct Scan<'a, 'm> {
    job: &'a Job,
    input: &'a mut Input,
    rng: &'a mut dyn RngCore,
    meter: &'a mut Meter<'m>,
}

impl Visitor for Scan<'_, '_> {
    type Output = Result<Published>;

    fn visit<S: Statistic>(self, statistic: &S) -> Result<Published> {
        let Scan { job, input, rng, meter } = self;
        let mut statistic = statistic.clone();
        if let Some((by, discovery)) = &job.discover_by {
            return discovered(job, &statistic, by, discovery, input, rng, meter);
        }
        // One key for every pass: a second pass keeps the same rows of each person.
        let key = job.person.as_ref().map(|_| rng::selection_key()).transpose()?;
        let mut pass =
            Passes { job, chosen: None, mechanism: job.mechanism.clone(), auto_choice: None, truncated: 0 };
        loop {
            let (filters, by) = routing(&job.filters, job.group.as_ref(), input)?;
            let fold = empty_fold(&statistic, input)?;
            let folds = match (&job.person, key) {
                (Some(person), Some(key)) => {
                    let plan = bound_plan(person, &statistic, filters, by.clone(), input, key)?;
                    let bounded = Bounded::new(plan, Routed::new(fold, vec![], by.clone()));
                    scan::check_memory(input, &bounded)?;
                    meter.before_rows(input)?;
                    pass.bounded_folds(person, bounded, by, &mut statistic, input, rng)?
                }
                _ => {
                    let mut routed = Routed::new(fold, filters, by);
                    scan::check_memory(input, &routed)?;
                    meter.before_rows(input)?;
                    engine::scan(input, &mut routed)?;
                    routed.groups
                }
            };
            let cx = context(job, input, &pass.mechanism);
            match publish(&statistic, folds, job.group.as_ref(), &cx, rng)? {
                Outcome::Published(mut published) => {
                    if let Some(person) = &job.person {
                        pass.per_person(person, &mut published, rng)?;
                    }
                    return Ok(published);
                }
                Outcome::Again(next) => {
                    // The second pass of a statistic that needed the first one's release.
                    input.reopen(&job.input.source, &job.input.csv)?;
                    statistic = next;
                }
            }
        }
    }
}

/// What a person-level release carries from one pass over the rows to the next.
struct Passes<'j> {
    job: &'j Job,
    /// With `--max-rows-per-id auto`: K, once chosen (on the first pass).
    chosen: Option<u32>,
    /// The mechanism the statistic runs at row level (the one K leaves it, once chosen).
    mechanism: Mechanism,
    /// How `auto` chose K, as the unit states it.
    auto_choice: Option<contribution::AutoChoice>,
    /// `--count-truncated`: persons with rows dropped, counted on the last pass.
    truncated: u64,
}

impl Passes<'_> {
    /// The folds of the rows each person keeps, after the scan (the charge is made): chosen
    /// by the cluster that read them, or here, with K chosen first when it is `auto` (on the
    /// first pass, which then builds the statistic at that K).
    fn bounded_folds<S: Statistic>(
        &mut self,
        person: &Person,
        mut bounded: Bounded<Routed<S::Fold>>,
        by: Option<GroupBy>,
        statistic: &mut S,
        input: &mut Input,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<S::Fold>> {
        // A cluster chose the rows already (never with `auto`: refused there).
        if let Some((fold, cut)) = engine::scan_bounded(input, &mut bounded)? {
            self.truncated = cut;
            return Ok(fold.groups);
        }
        let grouped = self.job.group.is_some();
        if let (Some(auto), None) = (&person.auto, self.chosen) {
            let counts = bounded
                .rows_per_person(contribution::MAX_BOUND as usize)
                .map_err(|f| bound_failure(input, f))?;
            let release_eps = auto
                .release
                .epsilon()
                .ok_or_else(|| Error::internal("--max-rows-per-id auto without a Laplace release"))?;
            let target = contribution::auto_target(release_eps, statistic.per_id());
            let choice = contribution::choose_rows(&counts, &auto.epsilon, target, rng);
            (self.chosen, self.auto_choice) = (Some(choice.rows), Some(choice));
            self.mechanism = auto.release.divided(person.factor_at(&bounds_at(person, self.chosen), grouped));
            // Validated at every K before the charge (`Job::new`).
            *statistic = S::new(statistic.name(), auto.options.clone(), &auto.setup(&self.mechanism))?;
        }
        bounded.set_bounds(bounds_at(person, self.chosen));
        let fold = Routed::new(empty_fold(statistic, input)?, vec![], by);
        let (fold, cut) = bounded.finish_counted(fold).map_err(|f| bound_failure(input, f))?;
        self.truncated = cut;
        Ok(fold.groups)
    }

    /// States the release per person: its unit and factor, `auto`'s choice and share, and
    /// with `--count-truncated` the noisy count of persons with rows dropped and its share.
    fn per_person(&self, person: &Person, published: &mut Published, rng: &mut dyn RngCore) -> Result<()> {
        let grouped = self.job.group.is_some();
        let bounds = bounds_at(person, self.chosen);
        let mut unit = person.unit_at(&bounds, grouped);
        published.per_person(unit.clone(), person.factor_at(&bounds, grouped), group::PER_PERSON)?;
        if let (Some(auto), Unit::Person { auto: chosen_by, .. }) = (&person.auto, &mut unit) {
            let choice = self.auto_choice.as_ref().ok_or_else(|| Error::internal("auto chose no K"))?;
            *chosen_by = Some(contribution::AutoRows {
                rule: AUTO_RULE,
                threshold: choice.threshold,
                too_few_persons: choice.too_few,
                epsilon_exact: auto.epsilon.exact_string(),
            });
            published.spent_first(Cost::part("max_rows_per_id auto", &auto.epsilon), Some(unit))?;
        }
        if let Some(eps) = &person.truncated {
            let noisy = contribution::noisy_truncated(self.truncated, eps, rng);
            let info = TruncatedInfo {
                persons: saturating_i128(&noisy.value),
                epsilon: eps.to_f64_up(),
                epsilon_exact: eps.exact_string(),
                error_bound: noisy.noise.error_bound(self.job.confidence.beta()),
            };
            published.spent_first(Cost::part("persons truncated", eps), None)?;
            published.set_truncated(info);
        }
        Ok(())
    }
}

/// `auto`'s rule as the unit's JSON states it.
const AUTO_RULE: &str = "bias-variance (Amin et al. 2019): the smallest K with at most `threshold` persons \
     above it, by AboveThreshold over the round candidates 1 to 10000";

/// A person's bounds with K as chosen by `--max-rows-per-id auto` (K_g following it unless
/// given), or as given.
fn bounds_at(person: &Person, chosen: Option<u32>) -> Bounds {
    match (chosen, &person.auto) {
        (Some(k), Some(auto)) => person.with_rows(k, auto.rows_per_group_given),
        _ => person.bounds,
    }
}

/// What bounding needs: the id columns, the columns the statistic and `--by` read (the only
/// cells kept), the filters (applied first), the groups, the bounds and the key.
pub fn bound_plan<S: Statistic>(
    person: &Person,
    statistic: &S,
    filters: FilterList,
    group: Option<GroupBy>,
    input: &Input,
    key: [u8; 16],
) -> Result<Plan> {
    let mut keep = statistic_columns(statistic, input)?;
    keep.extend(group.as_ref().map(|g| g.index));
    let plan = person_plan(person, keep, input, key)?;
    Ok(Plan { filters, group, ..plan })
}

/// What bounding `person` needs whatever the release: the id columns resolved, the columns
/// `keep`, the input's names, threads and decimal mark, the bounds, the key and the memory cap;
/// no filters and no groups (a caller that has them sets them).
pub fn person_plan(person: &Person, keep: Vec<usize>, input: &Input, key: [u8; 16]) -> Result<Plan> {
    let ids = person.ids.iter().map(|c| input.resolve(c, "--privacy-id")).collect::<Result<Vec<_>>>()?;
    Ok(Plan {
        ids,
        keep,
        names: input.column_names(),
        filters: vec![],
        group: None,
        bounds: person.bounds,
        key,
        cap: bound::cap(),
        threads: input.threads(),
        decimal: input.decimal(),
        max_groups_counted: None,
    })
}

/// The message of a bounded scan that failed after the rows were read: a cell the statistic
/// refused (its row is not known any more), or the temporary files.
pub fn bound_failure(input: &Input, failure: bound::Failure) -> anyhow::Error {
    match failure {
        bound::Failure::Cell(bad) => bad_input(format!(
            "{}: column '{}': {} (in a row kept for its person; `dpstat check` names its line)",
            input.name(),
            input.column_label(bad.column),
            bad.why
        )),
        bound::Failure::Temp(why) => Error::internal(why).into(),
    }
}

/// `--by COL --discover`: one pass counting every key of COL (and folding the statistic per
/// key), then the selection and the statistic in every key kept (`query::discover`). With
/// `--privacy-id`, the rows are bounded per person first and replayed person by person, so the
/// keys count distinct persons without holding any set of persons.
fn discovered<S: Statistic>(
    job: &Job,
    statistic: &S,
    by: &ColumnRef,
    discovery: &Discovery,
    input: &mut Input,
    rng: &mut dyn RngCore,
    meter: &mut Meter,
) -> Result<Published> {
    let (filters, _) = routing(&job.filters, None, input)?;
    let indices = statistic_columns(statistic, input)?;
    let column = input.resolve(by, "--by")?;
    let keyed = discover::keyed_fold(statistic, &indices, column, discovery);
    let persons = job.person.as_ref().map(Person::persons);
    let keyed = match (&job.person, &persons) {
        (Some(person), Some(persons)) => {
            let key = rng::selection_key()?;
            let plan = bound_plan(person, statistic, filters, None, input, key)?;
            let mut bounded =
                Bounded::found_keys(plan, column, discovery.max_keys, keyed.per_person(persons.keys_each()));
            scan::check_memory(input, &bounded)?;
            meter.before_rows(input)?;
            match engine::scan_bounded(input, &mut bounded)? {
                Some((keyed, _)) => keyed,
                None => bounded.finish().map_err(|f| bound_failure(input, f))?,
            }
        }
        _ => {
            let mut routed = Routed::new(keyed, filters, None);
            scan::check_memory(input, &routed)?;
            meter.before_rows(input)?;
            engine::scan(input, &mut routed)?;
            routed.groups.pop().ok_or_else(|| Error::internal("an ungrouped scan has one fold"))?
        }
    };
    let cx = context(job, input, &job.mechanism);
    let release = discover::publish(statistic, keyed, by.label(), discovery, &cx, persons.as_ref(), rng)?;
    let mut published = Published::Grouped(release);
    if rng::is_seeded() {
        published.mark_insecure_seed();
    }
    Ok(published)
}

/// What every measurement of `job` needs, with `mechanism`.
pub fn context<'a>(job: &'a Job, input: &'a Input, mechanism: &'a Mechanism) -> Context<'a> {
    Context {
        mechanism,
        neighbours: job.neighbours,
        confidence: job.confidence,
        grouped: job.grouped(),
        filters: &job.filter_labels,
        source: input.name(),
    }
}

/// The empty fold of a statistic, its column resolved against the input's header.
pub fn empty_fold<S: Statistic>(statistic: &S, input: &Input) -> Result<S::Fold> {
    Ok(statistic.fold(&statistic_columns(statistic, input)?))
}

/// The columns a statistic reads, resolved against the input's header or schema; one declared
/// of a type that holds no numbers is refused, before the charge, for a statistic of numbers.
pub fn statistic_columns<S: Statistic>(statistic: &S, input: &Input) -> Result<Vec<usize>> {
    statistic
        .columns()
        .into_iter()
        .map(|(c, flag)| {
            let index = input.resolve(c, flag)?;
            if statistic.reads_numbers() {
                input.refuse_never_numeric(index, flag, statistic.name())?;
            }
            Ok(index)
        })
        .collect()
}

/// Filters and grouping, resolved against the input's header.
pub fn routing(
    filters: &[FilterSpec],
    group: Option<&GroupSpec>,
    input: &Input,
) -> Result<(FilterList, Option<GroupBy>)> {
    let filters = filters
        .iter()
        .map(|f| Ok((input.resolve(&f.column, "--where")?, f.test.clone())))
        .collect::<Result<_>>()?;
    let by = match group {
        None => None,
        Some(g) => Some(GroupBy { index: input.resolve(&g.column, "--by")?, keys: Arc::new(g.keys.clone()) }),
    };
    Ok((filters, by))
}

/// What one statistic's measurement came to.
#[allow(clippy::large_enum_variant)] // one per release
pub enum Outcome<S> {
    Published(Published),
    /// Fold the data again into this statistic.
    Again(S),
}

/// Adds the noise to the folded groups: one release, or one per group, each with the full ε of
/// `cx` (parallel composition: the groups are disjoint). A second pass is asked for only by an
/// ungrouped statistic (bounds found privately are refused with `--by`).
pub fn publish<S: Statistic>(
    statistic: &S,
    folds: Vec<S::Fold>,
    group: Option<&GroupSpec>,
    cx: &Context,
    rng: &mut dyn RngCore,
) -> Result<Outcome<S>, Error> {
    let mut published = match group {
        None => {
            let fold =
                folds.into_iter().next().ok_or_else(|| Error::internal("an ungrouped scan has one fold"))?;
            match statistic.measure(fold, cx, rng)? {
                Measured::Release(release) => Published::One(release),
                Measured::Again(next) => return Ok(Outcome::Again(next)),
            }
        }
        Some(g) => {
            let mut groups = Vec::with_capacity(folds.len());
            for (i, fold) in folds.into_iter().enumerate() {
                let Measured::Release(release) = statistic.measure(fold, cx, rng)? else {
                    return Err(Error::internal("a grouped statistic asked for a second pass"));
                };
                groups.push(Group { key: g.keys.label(i).to_string(), release });
            }
            let grouped = GroupedRelease::new(
                g.column.label(),
                cx.neighbours,
                group::composition_note(cx.neighbours),
                groups,
            )?;
            Published::Grouped(grouped)
        }
    };
    // Every release whose noise came from the test seed says so, wherever it was made.
    if rng::is_seeded() {
        published.mark_insecure_seed();
    }
    Ok(Outcome::Published(published))
}

/// A warning for ε above 10 (the ε a Gaussian release converts to at its δ). A warning, never
/// a refusal: scripts rely on it.
pub fn warn_if_large(spend: &Spend, conversion: Option<&Delta>) {
    let eps = match (spend, conversion) {
        (Spend::Pure(eps) | Spend::Approx { eps, .. }, _) => Some(eps.clone()),
        (Spend::Zcdp(rho), Some(delta)) => Epsilon::from_rational(epsilon_for(rho.as_rational(), delta)).ok(),
        (Spend::Zcdp(_), None) => None,
    };
    if let Some(eps) = eps.filter(Epsilon::is_large) {
        warn(&large_epsilon_warning(&eps));
    }
}

/// An informational line on stderr.
pub fn note_line(message: &str) {
    let _ = writeln!(std::io::stderr(), "dpstat: note: {message}");
}

/// Without a ledger, says that a directory or glob held no file (a mistyped glob reads as a
/// dataset of no rows). Under a ledger what the file system holds is data, released like any
/// other: no note tells it apart from a file of no rows.
pub fn note_no_files(input: &Input, ledger: bool) {
    match input.dataset() {
        Some(Dataset::Empty { files: 0 }) if !ledger => {
            note_line(&format!("{} holds no file: the release is over no rows", input.name()))
        }
        Some(Dataset::Empty { files }) if !ledger => note_line(&format!(
            "{} holds only empty files ({files}): the release is over no rows",
            input.name()
        )),
        _ => {}
    }
}

/// A note on stderr; a failure to write it must not stop a release.
pub fn warn(message: &str) {
    let _ = writeln!(std::io::stderr(), "dpstat: warning: {message}");
}

/// `--plot` is written after the release and any ledger charge, so a path that cannot be
/// written, or a name that is not `.svg`, is refused now, before any data is read or budget
/// spent. A `.png` is refused rather than filled with SVG bytes: rasterizing needs a renderer
/// and fonts that dpstat does not carry; any browser shows the SVG, and converts it.
pub fn check_plot_path(path: &Path) -> Result<(), Error> {
    let shown = path.display();
    if path.as_os_str().is_empty() || path.file_name().is_none() {
        return Err(Error::usage(format!(
            "--plot '{shown}' is not a file name; give one like --plot chart.svg"
        )));
    }
    if path.is_dir() {
        return Err(Error::usage(format!(
            "--plot '{shown}' is a directory; give a file name like --plot chart.svg"
        )));
    }
    let svg = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if !svg {
        let stem = path.file_stem().map_or("chart".into(), |s| s.to_string_lossy().into_owned());
        return Err(Error::usage(format!(
            "--plot '{shown}': dpstat writes SVG only, so the name must end in .svg (--plot {stem}.svg); \
             a browser shows it, and converts it to PNG (print or screenshot), as does rsvg-convert"
        )));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Error::usage(format!(
            "--plot '{shown}': the directory '{}' does not exist; create it or point --plot elsewhere",
            parent.display()
        )));
    }
    Ok(())
}
