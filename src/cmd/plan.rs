//! `dpstat plan`: accuracy planning without data. Given a query's flags and either `--eps`
//! (print the error bound) or a target `--error` (print the smallest ε that reaches it), it
//! states what a release would state, and nothing else happens: no input is opened, no random
//! generator is built, no ledger is touched.
//!
//! One source of truth: the planned statistic is validated by its own `Statistic::new`, as a
//! release is (so the grid and the snapped bounds are the same), and `Statistic::plan` builds
//! the release's own `Noise` block from the same aggregate (with no data: only Δ and the grid
//! are read), the same `Calibration::of` the mechanism draws with, and the same accuracy
//! functions the release calls. For count, sum, histogram, the mean under replace and
//! quantiles (a rank bound, in rows: it depends on ε, the levels and the number of candidates
//! only) the planned bound is therefore exactly the release's `accuracy.error_bound`.
//! The add-remove mean's bound depends on its noisy parts; the plan assumes the noisy count
//! comes out at `--rows` and the sum at its worst case, which is the widest bound such a
//! release can state. A variance's bound depends on its noisy sum and sum of squares too; the
//! plan takes the largest over a grid of possible data with that count. How far a quantile's
//! value is from the true quantile depends on the data and is not planned.
//!
//! Solving for ε: the bound shrinks as ε grows, so the planner bisects over exact decimals
//! with three significant digits (1.00e-9, 1.01e-9, …, 9.99e5, 1.00e6), keeping the invariant
//! that the upper end meets the target. The printed ε is the smallest such decimal whose bound,
//! computed exactly as a release would, is at most the target.
//!
//! Laplace or Gaussian: with `--delta D` a plan also states the bound of the other mechanism at
//! the same (ε, D): Laplace at ε (pure, so (ε, D)-DP too) against Gaussian at the largest ρ whose
//! conversion at D is at most ε (`zcdp::rho_for`), each from the release's own code, and says
//! which is smaller. `dpstat plan run WORKLOAD` does that for every query of a workload at its
//! share of the total ([`compare_workload`]): Gaussian noise wins once the workload is large,
//! since ρ of k equal shares is ρ/k and σ grows like √k, where Laplace's scale grows like k.

use std::io::Write;

use anyhow::Result;

use crate::error::Error;
use crate::numeric::format::real as show;
use crate::privacy::accuracy::Confidence;
use crate::privacy::contribution::{Bounds, Factor};
use std::path::PathBuf;

use crate::cmd::release::{note_line, InputFlags, NoiseKind};
use crate::cmd::workload::{person_unit, Workload};
use crate::error::bad_input;
use crate::privacy::delta::Delta;
use crate::privacy::epsilon::{large_epsilon_warning, Epsilon};
use crate::privacy::noise::Mechanism;
use crate::privacy::unit::Neighbours;
use crate::privacy::zcdp::{epsilon_for, Rho};
use crate::query::options::{Options, Setup};
use crate::query::statistic::{PlanContext, Planned, Statistic};
use crate::query::AnyStatistic;
use crate::report::plan::{
    self, render_text, render_workload, Comparison, PerPerson, QueryComparison, Report, WorkloadReport,
};
use crate::report::text::{Format, Style};

/// Three significant digits: mantissas 100..=999.
const MANTISSAS: u64 = 900;
/// The smallest candidate is 100e-11 = 1e-9, the smallest ε dpstat accepts.
const LOWEST_EXPONENT: i64 = -11;
/// The largest candidate, 100e4 = 1e6: far beyond any ε that protects anything.
const HIGHEST_CANDIDATE: u64 = (4 - LOWEST_EXPONENT) as u64 * MANTISSAS;

/// What the planner was asked.
#[derive(Clone, Debug)]
pub struct Request {
    /// The statistic's kind and its flags, as a release would take them.
    pub kind: &'static str,
    pub options: Options,
    /// `--noise`: the mechanism planned.
    pub noise: NoiseKind,
    /// `--delta`: the δ of a Gaussian plan and of the comparison.
    pub delta: Option<Delta>,
    pub neighbours: Neighbours,
    pub confidence: Confidence,
    /// The assumed row count (`--rows`).
    pub rows: Option<u64>,
    pub target: Target,
    pub format: Format,
    /// `--digits`, `--full-precision`: how the text rounds the plan's numbers.
    pub style: Style,
    /// `--max-rows-per-id K1,K2,...`: plan the release per person at each K as well.
    pub rows_per_id: Vec<u32>,
    /// `auto` among them: plan each K at the ε auto leaves the release (nine tenths).
    pub auto: bool,
    /// `--by COL --keys …`: one release per group, and the person's bounds across them.
    pub groups: Option<PlanGroups>,
    /// What one person's rows multiply the row-level budget by (one row: 1).
    pub factor: Factor,
}

/// `dpstat plan … --by COL --keys …`: the groups a person's rows can fall in.
#[derive(Clone, Debug)]
pub struct PlanGroups {
    /// The column, as a label.
    pub by: String,
    /// The keys, and `other` unless closed.
    pub groups: usize,
    pub max_groups_per_id: Option<u32>,
    pub max_rows_per_group: Option<u32>,
}

impl PlanGroups {
    /// The person's bounds at K across these groups, with the release's defaults: G every
    /// group, K_g = K (`cmd::release::PersonFlags::with_default_groups`).
    fn bounds(&self, k: u32) -> Bounds {
        let every =
            u32::try_from(self.groups).unwrap_or(u32::MAX).min(crate::privacy::contribution::MAX_BOUND);
        Bounds {
            rows: k,
            groups: self.max_groups_per_id.unwrap_or(every.max(1)),
            rows_per_group: self.max_rows_per_group.unwrap_or(k),
        }
    }
}

/// The Ks `auto` is planned at when no K is listed beside it.
const AUTO_PLANNED: [u32; 4] = [1, 10, 100, 1000];

/// What to solve for.
#[derive(Clone, Debug)]
pub enum Target {
    /// The bound at this ε.
    Epsilon(Epsilon),
    /// The smallest ε whose bound is at most this.
    Error(f64),
}

/// What a release at one ε would state about its noise, without data.
#[derive(Clone, Debug)]
pub struct Evaluation {
    pub eps: Epsilon,
    pub planned: Planned,
}

impl Evaluation {
    fn error_bound(&self) -> f64 {
        self.planned.noise.accuracy.error_bound
    }
}

/// `dpstat plan …`: plans, renders in full, then writes once.
pub fn run(request: &Request, out: &mut dyn Write) -> Result<()> {
    request.check()?;
    let report = request.solve()?;
    let bytes = match request.format {
        Format::Json => {
            let mut bytes = serde_json::to_vec(&report)?;
            bytes.push(b'\n');
            bytes
        }
        Format::Text => render_text(&report, request.style).into_bytes(),
        Format::Csv => {
            let bytes = plan::render_csv(&report)?;
            out.write_all(&bytes)?;
            out.flush()?;
            plan::csv_notes(&report).iter().for_each(|n| note_line(n));
            return Ok(());
        }
        Format::Chart => return Err(Error::internal("chart refused by Request::check").into()),
    };
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

impl Request {
    /// The checks of the planner's own flags.
    pub fn check(&self) -> Result<(), Error> {
        if self.format == Format::Chart {
            return Err(Error::usage(
                "--format chart draws a release; dpstat plan prints --format text, csv or json",
            ));
        }
        for &k in &self.rows_per_id {
            Bounds { rows: k, ..Bounds::default() }.check().map_err(Error::usage)?;
            if let Some(g) = &self.groups {
                g.bounds(k).check().map_err(Error::usage)?;
            }
        }
        if self.auto && matches!(self.target, Target::Error(_)) {
            return Err(Error::usage(
                "--max-rows-per-id auto plans the release at the epsilon auto leaves it: give --eps                  (with --error, list Ks: --max-rows-per-id 1,10,100)",
            ));
        }
        if self.auto && self.noise == NoiseKind::Gaussian {
            return Err(Error::usage("--max-rows-per-id auto is Laplace only: plan Ks as numbers"));
        }
        if self.groups.is_some() && self.kind == "histogram" && self.options.bins.is_none() {
            // Accepted: a categorical histogram per group is planned per group like any other.
        }
        if !self.rows_per_id.is_empty() && self.neighbours == Neighbours::Replace {
            return Err(Error::usage(
                "--max-rows-per-id plans a release per person, which is add-remove only (the number of \
                 rows is private once rows are grouped by person): leave out --neighbours replace",
            ));
        }
        if self.rows == Some(0) {
            return Err(Error::usage("--rows must be at least 1: a mean over 0 rows has no value"));
        }
        if self.noise == NoiseKind::Gaussian && self.delta.is_none() {
            return Err(Error::usage(
                "--noise gaussian needs --delta D: the plan takes rho as the largest whose (epsilon, D) \
                 conversion is at most --eps",
            ));
        }
        if self.delta.is_some() && matches!(self.kind, "quantile" | "median") {
            return Err(Error::usage(format!(
                "--delta compares Laplace with Gaussian noise, and a {} has no Gaussian form (it is \
                 released by permute-and-flip, pure epsilon-DP); plan it without --delta",
                self.kind
            )));
        }
        Ok(())
    }

    /// The planned mechanism at `eps`: Laplace, or Gaussian at the largest ρ that is
    /// (ε, δ)-DP.
    fn mechanism(&self, eps: &Epsilon) -> Result<Mechanism, Error> {
        match (self.noise, &self.delta) {
            (NoiseKind::Laplace, _) => Ok(Mechanism::Laplace(eps.clone()).divided(self.factor)),
            (NoiseKind::Gaussian, Some(delta)) => Ok(gaussian_at(eps, delta)?.divided(self.factor)),
            (NoiseKind::Gaussian, None) => Err(Error::usage("--noise gaussian needs --delta D")),
        }
    }

    /// The bound a release at `eps` would state, computed by the release's own code: the
    /// statistic is validated at `eps` as a release would be (its grid depends on ε).
    pub fn evaluate(&self, eps: &Epsilon) -> Result<Evaluation, Error> {
        self.evaluate_with(eps, &self.mechanism(eps)?)
    }

    /// As [`Request::evaluate`], with the given mechanism.
    fn evaluate_with(&self, eps: &Epsilon, mechanism: &Mechanism) -> Result<Evaluation, Error> {
        let mechanism = mechanism.clone();
        let setup = Setup {
            mechanism: &mechanism,
            neighbours: self.neighbours,
            has_header: true,
            groups: 1,
            filtered: false,
            private_bounds: false,
            ledger: false,
        };
        let statistic = AnyStatistic::new(self.kind, self.options.clone(), &setup)?;
        let cx = PlanContext {
            mechanism: &mechanism,
            neighbours: self.neighbours,
            confidence: self.confidence,
            rows: self.rows,
            grouped: false,
        };
        Ok(Evaluation { eps: eps.clone(), planned: statistic.plan(&cx)? })
    }

    /// Plans at the given ε, or finds the smallest 3-digit decimal ε that meets the target;
    /// with `--max-rows-per-id`, also at each K per person.
    pub fn solve(&self) -> Result<Report, Error> {
        let mut report = self.solve_rows()?;
        let listed = if self.auto && self.rows_per_id.is_empty() {
            AUTO_PLANNED.to_vec()
        } else {
            self.rows_per_id.clone()
        };
        for k in listed {
            // A person's K rows: the statistic runs at ε/T (ρ/(K'_g·T)) on the bounded rows,
            // T = K ungrouped or min(K, G·K'_g) per group, and its bound is the release's
            // (privacy::contribution); K = 1 is the row-level plan.
            let factor = match &self.groups {
                Some(g) => g.bounds(k).factor(true),
                None => Bounds { rows: k, ..Bounds::default() }.factor(false),
            };
            let mut runs = vec![(false, self.target.clone())];
            if self.auto {
                // What auto leaves the release: nine tenths of ε, at whichever K it chooses.
                if let Target::Epsilon(eps) = &self.target {
                    let (share, whole) = crate::privacy::contribution::AUTO_SHARE;
                    runs = vec![(true, Target::Epsilon(eps.share(whole - share, whole)))];
                    if self.rows_per_id.contains(&k) {
                        runs.insert(0, (false, self.target.clone()));
                    }
                }
            }
            for (auto, target) in runs {
                let per = Request { factor, rows_per_id: vec![], auto: false, target, ..self.clone() };
                let planned = per.solve_rows()?;
                report.per_person.push(PerPerson {
                    max_rows_per_id: k,
                    auto,
                    epsilon_decimal: planned.epsilon_decimal,
                    error_bound: planned.noise.accuracy.error_bound,
                });
            }
        }
        if let Some(g) = &self.groups {
            report.assumptions.push(format!(
                "one release per group of {} ({} groups): each group's bound is the one shown",
                g.by, g.groups
            ));
        }
        Ok(report)
    }

    /// [`Request::solve`] at this request's factor alone.
    fn solve_rows(&self) -> Result<Report, Error> {
        match &self.target {
            Target::Epsilon(eps) => self.report(self.evaluate(eps)?, None, None),
            Target::Error(target) => {
                let target = *target;
                let meets = |i: u64| -> Result<Option<Evaluation>, Error> {
                    // An ε too small for any ρ at δ meets nothing.
                    let Ok(mechanism) = self.mechanism(&candidate(i)) else { return Ok(None) };
                    let e = self.evaluate_with(&candidate(i), &mechanism)?;
                    Ok((e.error_bound() <= target).then_some(e))
                };
                if let Some(e) = meets(0)? {
                    let method = format!(
                        "the smallest ε dpstat accepts (1e-9) already gives a bound of at most {}",
                        show(target)
                    );
                    return self.report(e, Some(target), Some(method));
                }
                let Some(mut best) = meets(HIGHEST_CANDIDATE)? else {
                    let at_most = self.evaluate(&candidate(HIGHEST_CANDIDATE))?.error_bound();
                    return Err(Error::usage(format!(
                        "no ε up to 1e6 brings the {} error bound down to {} at confidence {} (at ε = 1e6 \
                         it is {}); raise --error or lower --confidence",
                        self.kind,
                        show(target),
                        self.confidence.level(),
                        show(at_most)
                    )));
                };
                let (mut fails, mut holds) = (0, HIGHEST_CANDIDATE);
                while holds - fails > 1 {
                    let mid = fails + (holds - fails) / 2;
                    match meets(mid)? {
                        Some(e) => (holds, best) = (mid, e),
                        None => fails = mid,
                    }
                }
                let method = format!(
                    "the smallest ε with 3 significant digits whose bound is at most {}: bisection over \
                     exact decimals, each bound computed as the release computes it",
                    show(target)
                );
                self.report(best, Some(target), Some(method))
            }
        }
    }

    /// Laplace at ε against Gaussian at the same (ε, δ), when `--delta` is given.
    fn comparison(&self, eps: &Epsilon) -> Result<Option<Comparison>, Error> {
        let Some(delta) = &self.delta else { return Ok(None) };
        let laplace = self.evaluate_with(eps, &Mechanism::Laplace(eps.clone()))?.error_bound();
        let gaussian = match gaussian_at(eps, delta) {
            Ok(m) => Some((self.evaluate_with(eps, &m)?.error_bound(), m)),
            Err(_) => None,
        };
        Ok(Some(Comparison::new(eps, delta, laplace, gaussian)))
    }

    fn report(&self, e: Evaluation, target: Option<f64>, method: Option<String>) -> Result<Report, Error> {
        let warnings = if e.eps.is_large() { vec![large_epsilon_warning(&e.eps)] } else { vec![] };
        let comparison = self.comparison(&e.eps)?;
        let Planned { noise, bins, assumptions } = e.planned;
        Ok(Report {
            plan: self.kind,
            column: self.options.column.clone().filter(|c| !c.is_empty()),
            solved_for: if target.is_some() { "epsilon" } else { "error_bound" },
            target_error: target,
            noise,
            epsilon_decimal: e.eps.to_string(),
            bins,
            method,
            assumptions,
            warnings,
            comparison,
            per_person: vec![],
            reads_data: false,
            draws_noise: false,
            charges_ledger: false,
        })
    }
}

/// Gaussian noise at the largest ρ whose conversion at δ is at most ε (rounded down).
fn gaussian_at(eps: &Epsilon, delta: &Delta) -> Result<Mechanism, Error> {
    let rho = Rho::largest_for(eps, delta).map_err(Error::usage)?;
    Ok(Mechanism::Gaussian { rho, delta: delta.clone() })
}

/// `dpstat plan run WORKLOAD`: what it compares at.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub workload: PathBuf,
    /// `--delta`: else the workload's own.
    pub delta: Option<Delta>,
    /// `--rows`, for the workload's means.
    pub rows: Option<u64>,
    pub confidence: Confidence,
    pub format: Format,
    /// `--digits`, `--full-precision`: how the text rounds the bounds.
    pub style: Style,
}

/// Plans every query of a workload twice, with Laplace noise at the workload's ε and with
/// Gaussian noise at the same (ε, δ), each query at its share (the same proportion of ε or of
/// ρ), and says which gives less error, query by query. Reads no data.
pub fn compare_workload(request: &RunRequest, out: &mut dyn Write) -> Result<()> {
    let path = request.workload.display().to_string();
    let text = std::fs::read_to_string(&request.workload)
        .map_err(|e| bad_input(format!("cannot read workload {path}: {e}")))?;
    // No data is read: the header is assumed, as for a file with one.
    let input = InputFlags::planned();
    let settings = (request.confidence, Format::Text);
    let file = Workload::parse(&path, &text, &input, settings, false)?;
    if file.discovery.is_some() {
        return Err(Error::usage(
            "dpstat plan run compares Laplace with Gaussian noise, and a workload with discover = true is \
             Laplace only (its selection of keys has no Gaussian form): there is nothing to compare",
        )
        .into());
    }
    let delta = match (&request.delta, file.mechanism.delta()) {
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => {
            return Err(Error::usage(
                "dpstat plan run needs --delta D: the delta at which Gaussian noise is compared with \
                 the workload's Laplace noise (e.g. --delta 1e-6)",
            )
            .into())
        }
    };
    let eps = match (&file.epsilon, &file.mechanism) {
        (Some(eps), _) => eps.clone(),
        (None, Mechanism::Gaussian { rho, .. }) => {
            Epsilon::from_rational(epsilon_for(rho.as_rational(), &delta))
                .map_err(|e| Error::usage(format!("the workload's rho converts to no valid epsilon: {e}")))?
        }
        (None, Mechanism::Laplace(eps)) => eps.clone(),
    };
    let gaussian = gaussian_at(&eps, &delta)?;
    let laplace =
        Workload::parse_as(&path, &text, &input, settings, false, Some(&Mechanism::Laplace(eps.clone())))?;
    let gauss = Workload::parse_as(&path, &text, &input, settings, false, Some(&gaussian))?;
    let mut queries = vec![];
    for (l, g) in laplace.queries.iter().zip(&gauss.queries) {
        let plan =
            |q: &crate::cmd::workload::WorkloadQuery| q.planned_error(request.confidence, request.rows);
        queries.push(QueryComparison::new(&l.name, l.job.statistic.name(), plan(l), plan(g)));
    }
    let mut report =
        WorkloadReport::new(path, laplace.neighbours, request.confidence, &eps, &gaussian, queries);
    // Each query's statistic was built at its share divided by the person's factor, so the
    // bounds above already are the person-level noise's.
    if let Some(person) = &laplace.person {
        report.unit = person_unit(person);
    }
    let bytes = match request.format {
        Format::Json => {
            let mut bytes = serde_json::to_vec(&report)?;
            bytes.push(b'\n');
            bytes
        }
        Format::Csv => {
            let bytes = plan::render_workload_csv(&report)?;
            out.write_all(&bytes)?;
            out.flush()?;
            plan::workload_notes(&report).iter().for_each(|n| note_line(n));
            return Ok(());
        }
        _ => render_workload(&report, request.style).into_bytes(),
    };
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// The i-th candidate ε: (100 + i mod 900) · 10^(i div 900 − 11), exactly.
fn candidate(i: u64) -> Epsilon {
    let mantissa = 100 + i % MANTISSAS;
    let exponent = LOWEST_EXPONENT + (i / MANTISSAS) as i64;
    match format!("{mantissa}e{exponent}").parse() {
        Ok(e) => e,
        Err(_) => unreachable!("every candidate is a decimal of at least 1e-9"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn request(args: &str) -> Request {
        let cli = Cli::try_parse_from(format!("dpstat plan {args}").split_whitespace()).unwrap();
        let crate::cli::Query::Plan(plan) = cli.query else { panic!("a plan") };
        crate::cli::request::plan_request(&plan).unwrap()
    }

    fn eps(s: &str) -> Epsilon {
        s.parse().unwrap()
    }

    #[test]
    fn count_bound_is_the_discrete_laplace_tail() {
        // scale 10, β = 0.05: the smallest t with 2p^(t+1)/(1+p) <= 0.05 is 30.
        let e = request("count --eps 0.1").evaluate(&eps("0.1")).unwrap();
        let n = &e.planned.noise;
        assert_eq!((e.error_bound(), n.sensitivity, n.scale), (30.0, Some(1.0), Some(10.0)));
        let replace = request("histogram --categories a,b --neighbours replace --eps 1");
        let e = replace.evaluate(&eps("1")).unwrap();
        let n = &e.planned.noise;
        assert_eq!(
            (n.sensitivity, n.scale, e.planned.bins, n.accuracy.scope),
            (Some(2.0), Some(2.0), Some(3), "per bin")
        );
    }

    #[test]
    fn candidates_are_three_digit_decimals() {
        assert_eq!(candidate(0).to_string(), "0.000000001");
        assert_eq!(candidate(1).to_string(), "0.00000000101");
        assert_eq!(candidate(899).to_string(), "0.00000000999");
        assert_eq!(candidate(900).to_string(), "0.00000001");
        assert_eq!(candidate(HIGHEST_CANDIDATE).to_string(), "1000000");
        for i in [0, 5, 899, 900, 7000, HIGHEST_CANDIDATE - 1] {
            assert!(candidate(i) < candidate(i + 1));
        }
    }

    #[test]
    fn solved_epsilon_is_the_smallest_three_digit_decimal_meeting_the_target() {
        for (args, target) in [
            ("count", 10.0),
            ("sum --lower 0 --upper 200000", 500000.0),
            ("sum --lower -5 --upper 3 --neighbours replace", 0.25),
            ("histogram --bins 4 --lower 0 --upper 1", 3.0),
            ("mean --lower 0 --upper 100 --rows 200 --neighbours replace", 1.0),
            ("mean --lower 0 --upper 100 --rows 5000", 0.5),
            ("variance --lower 0 --upper 100 --rows 1000 --neighbours replace", 20.0),
            ("quantile --q 0.5,0.9 --lower 0 --upper 1", 30.0),
            ("median --lower 0 --upper 120", 10.0),
        ] {
            let r = request(&format!("{args} --error {target}"));
            let report = r.solve().unwrap();
            assert!(
                report.noise.accuracy.error_bound <= target,
                "{args}: {}",
                report.noise.accuracy.error_bound
            );
            let e: Epsilon = report.epsilon_decimal.parse().unwrap();
            // The next smaller 3-digit decimal misses the target.
            let i = (0..=HIGHEST_CANDIDATE).find(|&i| candidate(i) == e).unwrap();
            let below = r.evaluate(&candidate(i - 1)).unwrap();
            assert!(below.error_bound() > target, "{args}: ε {} is not the smallest", report.epsilon_decimal);
        }
    }

    #[test]
    fn unreachable_targets_and_missing_flags_teach() {
        let err = request("sum --lower 0 --upper 1e12 --error 1e-9").solve().unwrap_err();
        assert!(err.message().contains("raise --error"), "{err}");
        let err = request("mean --lower 0 --upper 1 --eps 1").solve().unwrap_err();
        assert!(err.message().contains("--rows N"), "{err}");
        let err = request("sum --lower 0 --eps 1").solve().unwrap_err();
        assert!(err.message().contains("--upper U is missing"), "{err}");
        let large = request("count --error 0.5").solve().unwrap();
        assert!(large.noise.guarantee.epsilon > 3.0 && large.warnings.is_empty(), "{large:?}");
        let large = request("count --eps 11").solve().unwrap();
        assert!(large.warnings[0].contains("protects little"), "{:?}", large.warnings);
        let report = request("mean --lower 0 --upper 1 --rows 10 --error 1").solve().unwrap();
        assert_eq!(report.epsilon_decimal, "0.000000001", "the width caps the mean's bound");
        let cli = Cli::try_parse_from(
            "dpstat plan median --lower 0 --upper 100 --eps 1 --delta 1e-6".split_whitespace(),
        );
        let crate::cli::Query::Plan(plan) = cli.unwrap().query else { panic!("a plan") };
        let err = crate::cli::request::plan_request(&plan).unwrap_err();
        assert!(
            err.to_string().contains("no Gaussian form") && err.to_string().contains("without --delta"),
            "{err}"
        );
    }

    /// One count at (1, 1e-6): Laplace's ±3 beats the Gaussian's ±9. Twenty counts sharing
    /// ε = 1: Laplace's scale is 20, the Gaussian's σ only √20 times larger than one count's,
    /// so the Gaussian wins every query; the plan says so from the release's own bounds.
    #[test]
    fn the_comparison_names_the_mechanism_with_the_smaller_bound() {
        let one = request("count --eps 1 --delta 1e-6").solve().unwrap();
        let c = one.comparison.unwrap();
        assert_eq!((c.laplace_error_bound, c.less_error), (3.0, "laplace"));
        assert!(c.gaussian_error_bound.unwrap() > 3.0);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.toml");
        let queries: String =
            (0..20).map(|i| format!("[[query]]\nname = \"c{i}\"\nkind = \"count\"\n")).collect();
        std::fs::write(&path, format!("epsilon = 1\n{queries}")).unwrap();
        let run = |delta: Option<&str>| {
            let request = RunRequest {
                workload: path.clone(),
                delta: delta.map(|d| d.parse().unwrap()),
                rows: None,
                confidence: "0.95".parse().unwrap(),
                format: Format::Json,
                style: Style::default(),
            };
            let mut out = vec![];
            compare_workload(&request, &mut out)
                .map(|()| serde_json::from_slice::<serde_json::Value>(&out).unwrap())
        };
        let json = run(Some("1e-6")).unwrap();
        assert_eq!(
            (json["less_error"].as_str(), json["gaussian_wins"].as_u64()),
            (Some("gaussian"), Some(20))
        );
        let q = &json["queries"][0];
        assert!(q["gaussian_error_bound"].as_f64() < q["laplace_error_bound"].as_f64(), "{q}");
        // Laplace at ε/20 = 1/20 has scale 20: its bound is the single count's at that ε.
        let single = request("count --eps 0.05").solve().unwrap();
        assert_eq!(q["laplace_error_bound"].as_f64(), Some(single.noise.accuracy.error_bound));
        let err = run(None).unwrap_err();
        assert!(err.to_string().contains("--delta"), "{err}");
        // Means without --rows cannot be planned: the verdict says nothing was compared.
        std::fs::write(
            &path,
            "epsilon = 1\n[[query]]\nname = \"m\"\nkind = \"mean\"\ncolumn = \"x\"\nlower = 0\nupper = 1\n",
        )
        .unwrap();
        let request = RunRequest {
            workload: path.clone(),
            delta: Some("1e-6".parse().unwrap()),
            rows: None,
            confidence: "0.95".parse().unwrap(),
            format: Format::Text,
            style: Style::default(),
        };
        let mut out = vec![];
        compare_workload(&request, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("not planned") && text.contains("no query could be planned"), "{text}");
    }
}
