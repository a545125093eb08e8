//! `dpstat plan`: accuracy planning without data. Given a query's flags and either `--eps`
//! (print the error bound) or a target `--error` (print the smallest ε that reaches it), it
//! states what a release would state, and nothing else happens: no input is opened, no random
//! generator is built, no ledger is touched.
//!
//! One source of truth: the planned query is validated by the same `plan.rs` code as a real
//! one (so the grid and the snapped bounds are the same), its Δ comes from the same
//! `query::*::aggregate` functions (with no data: only Δ and the grid are read), the noise
//! scale Δ/ε from [`Calibration::of`] as `mechanism::laplace` computes it, and the bound from
//! the same `accuracy` functions a `Release` calls. For count, sum, histogram and the mean
//! under replace the planned bound is therefore exactly the release's `accuracy.error_bound`.
//! The add-remove mean's bound depends on its noisy parts; the plan assumes the noisy count
//! comes out at `--rows` and the sum at its worst case, which is the widest bound such a
//! release can state.
//!
//! Solving for ε: the bound shrinks as ε grows, so the planner bisects over exact decimals
//! with three significant digits (1.00e-9, 1.01e-9, …, 9.99e5, 1.00e6), keeping the invariant
//! that the upper end meets the target. The printed ε is the smallest such decimal whose bound,
//! computed exactly as a release would, is at most the target.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::accuracy;
use crate::clamp::Finite;
use crate::cli::{Confidence, Format, Neighbours, PlanArgs, PlanQuery, PlanTarget};
use crate::epsilon::Epsilon;
use crate::error::InputError;
use crate::mechanism::Calibration;
use crate::output::format_number;
use crate::plan::{BinSpec, Clamp, QueryArgs, QueryPlan};
use crate::query::mean::MeanAggregate;
use crate::query::{count, histogram};
use crate::release::{self, Accuracy, BoundsInfo, GridInfo, Number};

/// Three significant digits: mantissas 100..=999.
const MANTISSAS: u64 = 900;
/// The smallest candidate is 100e-11 = 1e-9, the smallest ε dpstat accepts.
const LOWEST_EXPONENT: i64 = -11;
/// The largest candidate, 100e4 = 1e6: far beyond any ε that protects anything.
const HIGHEST_CANDIDATE: u64 = (4 - LOWEST_EXPONENT) as u64 * MANTISSAS;

/// What the planner was asked.
#[derive(Clone, Debug)]
pub struct Request {
    query: QueryArgs,
    column: Option<String>,
    neighbours: Neighbours,
    confidence: Confidence,
    rows: Option<u64>,
    target: Target,
}

#[derive(Clone, Debug)]
enum Target {
    Epsilon(Epsilon),
    Error(f64),
}

/// What a release at one ε would state about its noise, without data.
#[derive(Clone, Debug)]
pub struct Evaluation {
    pub eps: Epsilon,
    pub error_bound: f64,
    pub scope: &'static str,
    pub sensitivity: Option<f64>,
    pub scale: Option<f64>,
    pub grid: Option<GridInfo>,
    pub bounds: Option<BoundsInfo>,
    pub bins: Option<usize>,
    pub parts: Vec<PlannedPart>,
}

/// One noisy part of a multi-part release (mean under add-remove).
#[derive(Clone, Debug, Serialize)]
pub struct PlannedPart {
    pub name: &'static str,
    pub epsilon: f64,
    pub epsilon_exact: String,
    pub sensitivity: f64,
    pub scale: f64,
    pub grid: GridInfo,
    /// This part's own bound at β/2 (the two together give the mean's bound at β).
    pub error_bound: f64,
}

/// The plan as printed (`--format json` serialises this).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub plan: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    pub neighbours: &'static str,
    /// "error_bound" (given --eps) or "epsilon" (given --error).
    pub solved_for: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_error: Option<f64>,
    /// ε of the planned release, rounded up to the next f64.
    pub epsilon: f64,
    /// ε exactly, as numerator/denominator.
    pub epsilon_exact: String,
    /// ε as the exact decimal to pass to --eps.
    pub epsilon_decimal: String,
    pub mechanism: &'static str,
    pub sensitivity: Option<f64>,
    pub scale: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<GridInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<BoundsInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<usize>,
    /// The assumed row count (--rows), for a mean.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    pub accuracy: Accuracy,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PlannedPart>,
    /// How ε was found (only when solving for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    pub assumptions: Vec<String>,
    /// What the ε means for protection when it is large (> 10), as a release warns on stderr.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub reads_data: bool,
    pub draws_noise: bool,
    pub charges_ledger: bool,
}

/// `dpstat plan …`: plans, renders in full, then writes once.
pub fn run(args: &PlanArgs, out: &mut dyn Write) -> Result<()> {
    let (request, format) = Request::from_cli(args)?;
    let report = request.solve()?;
    let bytes = match format {
        Format::Json => {
            let mut bytes = serde_json::to_vec(&report)?;
            bytes.push(b'\n');
            bytes
        }
        Format::Text => render_text(&report).into_bytes(),
        Format::Chart => unreachable!("refused in Request::from_cli"),
    };
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

impl Request {
    pub fn from_cli(args: &PlanArgs) -> Result<(Request, Format), InputError> {
        use crate::cli::InvalidPolicy::Error as NoPolicy;
        let (query, column, rows, target) = match &args.query {
            PlanQuery::Count(t) => (QueryArgs::Count, None, None, t),
            PlanQuery::Sum(a) => (
                QueryArgs::Sum(a.col.clone().unwrap_or_default(), a.lower, a.upper, NoPolicy),
                a.col.clone(),
                None,
                &a.target,
            ),
            PlanQuery::Mean(a) => {
                let n = &a.numeric;
                (
                    QueryArgs::Mean(n.col.clone().unwrap_or_default(), n.lower, n.upper, NoPolicy),
                    n.col.clone(),
                    a.rows,
                    &n.target,
                )
            }
            PlanQuery::Histogram(a) => (
                QueryArgs::Histogram(
                    a.col.clone().unwrap_or_default(),
                    a.bins,
                    a.categories.clone(),
                    a.lower,
                    a.upper,
                    NoPolicy,
                ),
                a.col.clone(),
                None,
                &a.target,
            ),
        };
        let PlanTarget { eps, error, neighbours, confidence, format } = target;
        if *format == Format::Chart {
            return Err(InputError(
                "--format chart draws a histogram release; dpstat plan prints --format text or json".into(),
            ));
        }
        let target = match (eps, error) {
            (Some(e), _) => Target::Epsilon(e.clone()),
            (None, Some(e)) => Target::Error(positive_error(*e)?),
            (None, None) => {
                return Err(InputError(
                    "dpstat plan needs --eps E (to print the error bound at that ε) or --error E \
                     (to print the smallest ε whose bound is at most E)"
                        .into(),
                ))
            }
        };
        if rows == Some(0) {
            return Err(InputError("--rows must be at least 1: a mean over 0 rows has no value".into()));
        }
        let request =
            Request { query, column, neighbours: *neighbours, confidence: *confidence, rows, target };
        Ok((request, *format))
    }

    /// The bound a release at `eps` would state, computed by the release's own code.
    pub fn evaluate(&self, eps: &Epsilon) -> Result<Evaluation, InputError> {
        let plan = self.query.clone().validate(eps, self.neighbours, true, false)?;
        let confidence = self.confidence;
        let single = |noise: Calibration| Evaluation {
            eps: eps.clone(),
            error_bound: accuracy::single(&noise, confidence),
            scope: release::VALUE,
            sensitivity: Some(noise.sensitivity_value()),
            scale: Some(noise.scale_value()),
            grid: None,
            bounds: None,
            bins: None,
            parts: vec![],
        };
        Ok(match &plan {
            QueryPlan::Count => single(Calibration::of(&count::aggregate(0), eps)),
            QueryPlan::Sum { spec: Clamp::Private { .. }, .. }
            | QueryPlan::Mean { spec: Clamp::Private { .. }, .. }
            | QueryPlan::Quantile { .. } => return Err(unplannable()),
            QueryPlan::Variance { .. } => {
                return Err(InputError(
                    "dpstat plan covers count, sum, mean and histogram; not variance".into(),
                ))
            }
            QueryPlan::Sum { spec: Clamp::Given(spec), .. } => {
                let noise = Calibration::of(&spec.aggregate(0), eps);
                Evaluation {
                    grid: Some(GridInfo::of(noise.grid)),
                    bounds: Some(BoundsInfo::of(&spec.bounds)),
                    ..single(noise)
                }
            }
            QueryPlan::Histogram { bins, .. } => {
                let k = match bins {
                    BinSpec::Numeric(b) => b.len(),
                    BinSpec::Categories(c) => c.names().len() + 1,
                    BinSpec::NumericPrivate { .. } => return Err(unplannable()),
                };
                let noise = Calibration::of(&histogram::aggregate(vec![], self.neighbours), eps);
                Evaluation { scope: release::PER_BIN, bins: Some(k), ..single(noise) }
            }
            QueryPlan::Mean { spec: Clamp::Given(spec), .. } => {
                let rows = self.rows.ok_or_else(|| {
                    InputError(
                        "dpstat plan mean needs --rows N: a mean's error depends on the number of rows \
                         (the public n under replace, the noisy count under add-remove); give the size \
                         you expect, e.g. --rows 1000"
                            .into(),
                    )
                })?;
                let parts_eps = spec.epsilon_parts(eps);
                let bounds = Some(BoundsInfo::of(spec.bounds()));
                match spec.aggregate(0, rows) {
                    MeanAggregate::Replace { sum, n } => {
                        let noise = Calibration::of(&sum, &parts_eps[0]);
                        Evaluation {
                            error_bound: accuracy::mean_replace(&noise, n, confidence),
                            sensitivity: Some(accuracy::per_row(noise.sensitivity_value(), n)),
                            scale: Some(accuracy::per_row(noise.scale_value(), n)),
                            grid: Some(GridInfo::of(noise.grid)),
                            bounds,
                            ..single(noise)
                        }
                    }
                    MeanAggregate::AddRemove { shifted_sum, count, .. } => {
                        let shifted = Calibration::of(&shifted_sum, &parts_eps[0]);
                        let count = Calibration::of(&count, &parts_eps[1]);
                        let width = spec.bounds().width_units();
                        let half_beta = confidence.beta() / 2.0;
                        let part = |name, noise: &Calibration| PlannedPart {
                            name,
                            epsilon: noise.eps.to_f64_up(),
                            epsilon_exact: noise.eps.exact_string(),
                            sensitivity: noise.sensitivity_value(),
                            scale: noise.scale_value(),
                            grid: GridInfo::of(noise.grid),
                            error_bound: noise.error_bound(half_beta),
                        };
                        Evaluation {
                            eps: eps.clone(),
                            error_bound: accuracy::mean_add_remove_planned(
                                &shifted, &count, rows, width, confidence,
                            ),
                            scope: release::VALUE,
                            sensitivity: None,
                            scale: None,
                            grid: Some(GridInfo::of(shifted.grid)),
                            bounds,
                            bins: None,
                            parts: vec![part("shifted_sum", &shifted), part("count", &count)],
                        }
                    }
                }
            }
        })
    }

    /// Plans at the given ε, or finds the smallest 3-digit decimal ε that meets the target.
    pub fn solve(&self) -> Result<Report, InputError> {
        match &self.target {
            Target::Epsilon(eps) => Ok(self.report(self.evaluate(eps)?, None, None)),
            Target::Error(target) => {
                let target = *target;
                let meets = |i: u64| -> Result<Option<Evaluation>, InputError> {
                    let e = self.evaluate(&candidate(i))?;
                    Ok((e.error_bound <= target).then_some(e))
                };
                if let Some(e) = meets(0)? {
                    let method = format!(
                        "the smallest ε dpstat accepts (1e-9) already gives a bound of at most {}",
                        show(target)
                    );
                    return Ok(self.report(e, Some(target), Some(method)));
                }
                let Some(mut best) = meets(HIGHEST_CANDIDATE)? else {
                    let at_most = self.evaluate(&candidate(HIGHEST_CANDIDATE))?.error_bound;
                    return Err(InputError(format!(
                        "no ε up to 1e6 brings the {} error bound down to {} at confidence {} (at ε = 1e6 \
                         it is {}); raise --error or lower --confidence",
                        self.query_name(),
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
                Ok(self.report(best, Some(target), Some(method)))
            }
        }
    }

    fn query_name(&self) -> &'static str {
        match self.query {
            QueryArgs::Count => "count",
            QueryArgs::Sum(..) => "sum",
            QueryArgs::Mean(..) => "mean",
            QueryArgs::Variance(..) => "variance",
            QueryArgs::Histogram(..) => "histogram",
        }
    }

    fn report(&self, e: Evaluation, target: Option<f64>, method: Option<String>) -> Report {
        let mut assumptions = vec![];
        if let (QueryArgs::Mean(..), Some(n)) = (&self.query, self.rows) {
            assumptions.push(match self.neighbours {
                Neighbours::Replace => format!(
                    "n = {n} rows (--rows); under replace n is public and the release divides by the \
                     file's own row count"
                ),
                Neighbours::AddRemove => format!(
                    "the noisy count comes out at {n} (--rows) and the sum at its worst case (every value \
                     at a bound); a release states its own bound from its noisy parts, for most data a \
                     little smaller"
                ),
            });
        }
        if let Some(k) = e.bins {
            assumptions.push(format!(
                "the bound holds for each of the {k} bins on its own; for all of them at once plan with \
                 --confidence {}",
                show(1.0 - self.confidence.beta() / k as f64)
            ));
        }
        let warnings = if e.eps.is_large() { vec![crate::large_epsilon_warning(&e.eps)] } else { vec![] };
        Report {
            warnings,
            plan: self.query_name(),
            column: self.column.clone().filter(|c| !c.is_empty()),
            neighbours: self.neighbours.name(),
            solved_for: if target.is_some() { "epsilon" } else { "error_bound" },
            target_error: target,
            epsilon: e.eps.to_f64_up(),
            epsilon_exact: e.eps.exact_string(),
            epsilon_decimal: e.eps.to_string(),
            mechanism: release::MECHANISM,
            sensitivity: e.sensitivity,
            scale: e.scale,
            grid: e.grid,
            bounds: e.bounds,
            bins: e.bins,
            rows: self.rows.filter(|_| matches!(self.query, QueryArgs::Mean(..))),
            accuracy: Accuracy {
                confidence: self.confidence.level(),
                error_bound: e.error_bound,
                scope: e.scope,
            },
            parts: e.parts,
            method,
            assumptions,
            reads_data: false,
            draws_noise: false,
            charges_ledger: false,
        }
    }
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

fn positive_error(e: Finite) -> Result<f64, InputError> {
    if e.get() > 0.0 {
        Ok(e.get())
    } else {
        Err(InputError(format!(
            "--error {} must be greater than 0: it is the largest |release − true value| you can accept",
            e.get()
        )))
    }
}

fn show(x: f64) -> String {
    format_number(Number::Real(x))
}

fn render_text(r: &Report) -> String {
    let mut lines: Vec<(&str, String)> = vec![];
    let what = match (&r.column, r.plan) {
        (Some(c), q) => format!("{q} of {c}"),
        (None, q) => q.to_string(),
    };
    lines.push((
        "plan",
        format!("{what}, {} (no data read, no noise drawn, no budget charged)", r.neighbours),
    ));
    if let Some(t) = r.target_error {
        lines.push(("target", format!("error at most {} at confidence {}", show(t), r.accuracy.confidence)));
    }
    lines.push(("epsilon", r.epsilon_decimal.clone()));
    if let Some(m) = &r.method {
        lines.push(("", m.clone()));
    }
    if let Some(b) = &r.bounds {
        lines.push(("bounds", format!("[{}, {}] as snapped to the grid", show(b.lower), show(b.upper))));
    }
    if let Some(k) = r.bins {
        lines.push(("bins", k.to_string()));
    }
    if let Some(n) = r.rows {
        lines.push(("rows", format!("{n} (assumed, --rows)")));
    }
    if let Some(s) = r.sensitivity {
        lines.push(("sensitivity", show(s)));
    }
    if let Some(s) = r.scale {
        let grid = r.grid.as_ref().map_or(String::new(), |g| format!(" on a 2^{} grid", g.exponent));
        lines.push(("noise scale", format!("{} = sensitivity / epsilon, discrete Laplace{grid}", show(s))));
    }
    for p in &r.parts {
        lines.push((
            "part",
            format!(
                "{}: epsilon {}, sensitivity {}, scale {}, bound ±{} at β/2",
                p.name,
                show(p.epsilon),
                show(p.sensitivity),
                show(p.scale),
                show(p.error_bound)
            ),
        ));
    }
    let per_bin = if r.accuracy.scope == release::PER_BIN { " per bin" } else { "" };
    lines.push((
        "error bound",
        format!(
            "±{}{per_bin}: |release − true value| <= {} with probability >= {}",
            show(r.accuracy.error_bound),
            show(r.accuracy.error_bound),
            r.accuracy.confidence
        ),
    ));
    for a in &r.assumptions {
        lines.push(("assumes", a.clone()));
    }
    for w in &r.warnings {
        lines.push(("warning", w.clone()));
    }
    let mut text = String::new();
    for (key, value) in lines {
        text.push_str(&format!("{key:<12} {value}\n"));
    }
    text
}

/// Only flag-given bounds can be planned: bounds found privately depend on the data.
fn unplannable() -> InputError {
    InputError(
        "dpstat plan needs --lower L --upper U: accuracy with bounds found privately depends on the data"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn request(args: &str) -> Request {
        let cli = Cli::try_parse_from(format!("dpstat plan {args}").split_whitespace()).unwrap();
        let crate::cli::Query::Plan(plan) = cli.query else { panic!("a plan") };
        Request::from_cli(&plan).unwrap().0
    }

    fn eps(s: &str) -> Epsilon {
        s.parse().unwrap()
    }

    #[test]
    fn count_bound_is_the_discrete_laplace_tail() {
        // scale 10, β = 0.05: the smallest t with 2p^(t+1)/(1+p) <= 0.05 is 30.
        let e = request("count --eps 0.1").evaluate(&eps("0.1")).unwrap();
        assert_eq!((e.error_bound, e.sensitivity, e.scale), (30.0, Some(1.0), Some(10.0)));
        let replace = request("histogram --categories a,b --neighbours replace --eps 1");
        let e = replace.evaluate(&eps("1")).unwrap();
        assert_eq!((e.sensitivity, e.scale, e.bins, e.scope), (Some(2.0), Some(2.0), Some(3), "per bin"));
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
        ] {
            let r = request(&format!("{args} --error {target}"));
            let report = r.solve().unwrap();
            assert!(report.accuracy.error_bound <= target, "{args}: {}", report.accuracy.error_bound);
            let e: Epsilon = report.epsilon_decimal.parse().unwrap();
            // The next smaller 3-digit decimal misses the target.
            let i = (0..=HIGHEST_CANDIDATE).find(|&i| candidate(i) == e).unwrap();
            let below = r.evaluate(&candidate(i - 1)).unwrap();
            assert!(below.error_bound > target, "{args}: ε {} is not the smallest", report.epsilon_decimal);
        }
    }

    #[test]
    fn unreachable_targets_and_missing_flags_teach() {
        let err = request("sum --lower 0 --upper 1e12 --error 1e-9").solve().unwrap_err();
        assert!(err.0.contains("raise --error"), "{err}");
        let err = request("mean --lower 0 --upper 1 --eps 1").solve().unwrap_err();
        assert!(err.0.contains("--rows N"), "{err}");
        let err = request("sum --lower 0 --eps 1").solve().unwrap_err();
        assert!(err.0.contains("--upper U is missing"), "{err}");
        let large = request("count --error 0.5").solve().unwrap();
        assert!(large.epsilon > 3.0 && large.warnings.is_empty(), "{large:?}");
        let large = request("count --eps 11").solve().unwrap();
        assert!(large.warnings[0].contains("protects little"), "{:?}", large.warnings);
        let report = request("mean --lower 0 --upper 1 --rows 10 --error 1").solve().unwrap();
        assert_eq!(report.epsilon_decimal, "0.000000001", "the width caps the mean's bound");
    }
}
