//! `dpstat plan`: accuracy planning without data. Given a query's flags and either `--eps`
//! (print the error bound) or a target `--error` (print the smallest ε that reaches it), it
//! states what a release would state, and nothing else happens: no input is opened, no random
//! generator is built, no ledger is touched.
//!
//! One source of truth: the planned statistic is validated by its own `Statistic::new`, as a
//! release is (so the grid and the snapped bounds are the same), and `Statistic::plan` builds
//! the release's own `Noise` block from the same aggregate (with no data: only Δ and the grid
//! are read), the same `Calibration::of` the mechanism draws with, and the same accuracy
//! functions the release calls. For count, sum, histogram and the mean
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

use crate::error::Error;
use crate::numeric::format::real as show;
use crate::privacy::accuracy::Confidence;
use crate::privacy::epsilon::{large_epsilon_warning, Epsilon};
use crate::privacy::noise::Mechanism;
use crate::privacy::unit::Neighbours;
use crate::query::options::{Options, Setup};
use crate::query::statistic::{PlanContext, Planned, Statistic};
use crate::query::AnyStatistic;
use crate::report::plan::{render_text, Report};
use crate::report::text::Format;

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
    pub neighbours: Neighbours,
    pub confidence: Confidence,
    /// The assumed row count (`--rows`).
    pub rows: Option<u64>,
    pub target: Target,
    pub format: Format,
}

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
        Format::Text => render_text(&report).into_bytes(),
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
                "--format chart draws a release; dpstat plan prints --format text or json",
            ));
        }
        if self.rows == Some(0) {
            return Err(Error::usage("--rows must be at least 1: a mean over 0 rows has no value"));
        }
        Ok(())
    }

    /// The bound a release at `eps` would state, computed by the release's own code: the
    /// statistic is validated at `eps` as a release would be (its grid depends on ε).
    pub fn evaluate(&self, eps: &Epsilon) -> Result<Evaluation, Error> {
        let mechanism = Mechanism::Laplace(eps.clone());
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
        };
        Ok(Evaluation { eps: eps.clone(), planned: statistic.plan(&cx)? })
    }

    /// Plans at the given ε, or finds the smallest 3-digit decimal ε that meets the target.
    pub fn solve(&self) -> Result<Report, Error> {
        match &self.target {
            Target::Epsilon(eps) => Ok(self.report(self.evaluate(eps)?, None, None)),
            Target::Error(target) => {
                let target = *target;
                let meets = |i: u64| -> Result<Option<Evaluation>, Error> {
                    let e = self.evaluate(&candidate(i))?;
                    Ok((e.error_bound() <= target).then_some(e))
                };
                if let Some(e) = meets(0)? {
                    let method = format!(
                        "the smallest ε dpstat accepts (1e-9) already gives a bound of at most {}",
                        show(target)
                    );
                    return Ok(self.report(e, Some(target), Some(method)));
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
                Ok(self.report(best, Some(target), Some(method)))
            }
        }
    }

    fn report(&self, e: Evaluation, target: Option<f64>, method: Option<String>) -> Report {
        let warnings = if e.eps.is_large() { vec![large_epsilon_warning(&e.eps)] } else { vec![] };
        let Planned { noise, bins, assumptions } = e.planned;
        Report {
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
    }
}
