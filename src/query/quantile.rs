//! **quantile / median** — over public candidates, by one of two mechanisms.
//!
//! **The utility.** For a level q = a/b (exact, in lowest terms) and n rows, candidate c is a
//! valid q-quantile when #(x < c) <= q·n <= #(x <= c). Its score is b times the signed
//! distance, in rows, from q·n to the interval [#(x < c), #(x <= c)] of ranks c stands for:
//!
//!   s(c) = max(b·#(x < c) − a·n, a·n − b·#(x <= c))     (an integer; lower is better)
//!
//! so an invalid candidate scores b times its distance to validity, a valid one 0 or less:
//! minus b times the depth of q·n inside its run of ties. When several candidates are valid,
//! q·n sits on the edge of each one's interval and all score 0, the top score. The depth
//! doubles the margin of a tied median over its neighbours where q·n is near the middle of
//! the ties (issue 38), and never costs a valid candidate anything. How far one neighbouring
//! change moves any score (Δu, `Level::score_sensitivity`; with `--by`,
//! `QuantileSpec::score_sensitivity`):
//! - add-remove: a row added below c moves b·#(x < c) − a·n by b − a and a·n − b·#(x <= c) by
//!   a − b; one added at c moves them by −a and a − b; one added above c by −a and +a. The
//!   maximum of two terms moves by at most the larger move of a term: Δu = max(a, b − a);
//! - replace (n fixed): #(x < c) and #(x <= c) each move by at most one, so each term by at
//!   most b: Δu = b. With `--where` a changed row can also leave or join the filter, which moves
//!   the terms as a removal or an addition does, within b.
//! - with `--by` (the bounded form only), each group's selection runs at the full ε; under
//!   replace a changed row can leave one group and join another, so each group's Δu is
//!   2·max(a, b − a) (`query::group::score_sensitivity`).
//!
//! **With bounds** (`--lower/--upper`): permute-and-flip with this score (McKenna & Sheldon
//! 2020; quantiles by selection as in Smith 2011), with base-2 coins (Ilvento 2020,
//! [`Base2`]): the candidates are visited in a uniformly random order and c stops the visits
//! with probability 2^(−η·(s(c) − s_min)), η·ln 2 <= ε/(2Δu); ε-DP for the unit Δu was computed
//! under ([`crate::privacy::permute_and_flip`]), and never worse in expected score than the
//! exponential mechanism, which dpstat drew from issue 38 until permute-and-flip could be drawn
//! over runs. The candidates are public, on [L, U]: by default the multiples of a round step
//! (1, 2 or 5 times a power of ten), every integer for integer bounds at least 20 apart
//! ([`Candidates::round`]); `--resolution K` evenly spaced points. Values outside [L, U] count
//! as below or above every candidate. The score is constant on each run of candidates between
//! two rows' positions ([`runs`]), so the draw counts, run by run, the candidates whose coins
//! can come up and visits those: the same distribution as over the candidates one by one, in
//! O(n log n) whatever the grid.
//!
//! **Without bounds**: AboveThreshold over the fixed public log-scale grid (Durfee 2023), in
//! [`unbounded`]: the release stays within the data's range unless the data are too few for ε,
//! and then a warning says so. A selection over that grid (the exponential mechanism) did not: thousands of
//! candidates beyond the data, each only a few rows of score from the best, outweighed it on
//! small files.
//!
//! Several levels split ε evenly and exactly (sequential composition). Each row is kept as its
//! position on the grid, four bytes, until a million rows, then packed into counts per
//! position: memory grows with the rows up to that, then with the candidates only.
//! Candidates come from flags or the fixed grid, never from the data.

pub mod runs;
pub mod unbounded;

use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;
use std::sync::Arc;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::ToPrimitive;
use rand::RngCore;

use crate::data::cell::{InvalidPolicy, NumberCell};
use crate::data::row::{BadCell, Fold, Row};
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::bounds::Bounds;
use crate::numeric::exact::rational_to_f64_up;
use crate::numeric::format::real;
use crate::privacy::accountant::Cost;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::noise::{self, Drawn, Mechanism};
use crate::privacy::base2::Base2;
use crate::privacy::permute_and_flip::Near;
use crate::privacy::unit::Neighbours;
use crate::query::count;
use crate::query::group;
use crate::query::options::{check_invalid_policy, Level, Options, Setup};
use crate::query::quantile::runs::{Positions, Run};
use crate::query::quantile::unbounded::{Scan, Split};
use crate::query::statistic::{first, Context, Measured, PlanContext, Planned, Statistic};
use crate::report::release::{Accuracy, CandidateInfo, Noise, Number, Part, QuantileValue, Release, RANK};

/// `dpstat quantile` and `dpstat median`.
#[derive(Clone, Debug)]
pub struct Quantile {
    column: ColumnRef,
    invalid: InvalidPolicy,
    spec: QuantileSpec,
    median: bool,
}

impl Statistic for Quantile {
    const KINDS: &'static [&'static str] = &["quantile", "median"];
    type Fold = QuantileFold;

    fn new(kind: &str, options: Options, setup: &Setup) -> Result<Quantile, Error> {
        let median = kind == "median";
        if median && !options.levels.is_empty() {
            return Err(Error::usage("median is the level 0.5 and takes no other levels; use quantile"));
        }
        if !median && options.levels.is_empty() {
            return Err(Error::usage("quantile needs at least one level in (0, 1), e.g. 0.5"));
        }
        if options.resolution.is_some() && options.lower.is_none() {
            return Err(Error::usage("a resolution spaces candidates over [lower, upper]; give both bounds"));
        }
        let levels = if median { vec![Level::MEDIAN] } else { options.levels.clone() };
        check_invalid_policy(options.invalid, setup)?;
        let (candidates, method) = match (options.lower, options.upper, options.resolution) {
            (_, _, Some(k)) if !(2..=MAX_RESOLUTION).contains(&k) => {
                return Err(Error::usage(format!(
                    "--resolution must be between 2 and {MAX_RESOLUTION} candidates"
                )));
            }
            (Some(_), None, _) | (None, Some(_), _) => {
                return Err(Error::usage("quantile candidates need both bounds, lower and upper, or neither"));
            }
            (Some(l), Some(u), k) => {
                // The candidates' weighted means multiply a bound by up to the resolution: refuse
                // bounds that could overflow into an infinite or NaN candidate.
                let bounds = Bounds::new(l, u)?;
                bounds.check_printable()?;
                let candidates = match k {
                    Some(k) => Candidates::linear(bounds, k),
                    None => Candidates::round(bounds, default_cap(setup.groups)),
                };
                (candidates, Method::PermuteAndFlip)
            }
            _ => {
                // n is public only under replace without filters.
                let n_public = setup.neighbours == Neighbours::Replace && !setup.filtered;
                (Candidates::log_scale(), Method::AboveThreshold { n_public, filtered: setup.filtered })
            }
        };
        let mut unique = levels.clone();
        unique.sort_by_key(|l| (l.numer * 1_000_000_000_000 / l.denom, l.denom));
        unique.dedup();
        if unique.len() != levels.len() {
            return Err(Error::usage("--q lists the same level twice"));
        }
        setup.epsilon(kind)?;
        // Without bounds each group would need its own row count, and under replace a group's
        // size is private: --by takes the bounded (permute-and-flip) form only.
        if setup.grouped() && method != Method::PermuteAndFlip {
            return Err(Error::usage(format!(
                "{kind} --by needs --lower/--upper: without bounds the release relies on a row count, \
                 and group sizes are not public"
            )));
        }
        let spec = QuantileSpec {
            candidates: Arc::new(candidates),
            levels,
            neighbours: setup.neighbours,
            method,
            grouped: setup.grouped(),
        };
        let column = setup.column(&options)?;
        Ok(Quantile { column, invalid: options.invalid, spec, median })
    }

    fn workload_keys(_: &Options) -> Option<&'static [&'static str]> {
        Some(&["column", "lower", "upper", "q", "resolution", "invalid"])
    }

    const BOUNDS_OPTIONAL: bool = true;

    fn name(&self) -> &'static str {
        if self.median {
            "median"
        } else {
            "quantile"
        }
    }

    fn column(&self) -> Option<&ColumnRef> {
        Some(&self.column)
    }

    fn draws_bars(&self) -> bool {
        self.spec.levels.len() > 1
    }

    fn fold(&self, indices: &[usize]) -> QuantileFold {
        let cell = NumberCell { index: first(indices), invalid: self.invalid };
        QuantileFold::new(Arc::clone(&self.spec.candidates), cell)
    }

    /// One selection per level, in the order given, each at its exact share.
    fn measure(&self, fold: QuantileFold, cx: &Context, rng: &mut dyn RngCore) -> Result<Measured<Quantile>, Error> {
        let spec = &self.spec;
        match spec.method {
            Method::PermuteAndFlip => {
                let eps = spec.epsilon_per_level(cx.epsilon()?);
                let fold = fold.sorted();
                let chosen: Vec<f64> = spec
                    .levels
                    .iter()
                    .map(|level| {
                        let mechanism = Base2::new(&eps, spec.score_sensitivity(level));
                        spec.candidates.get(fold.select(level, &mechanism, rng))
                    })
                    .collect();
                self.flip_release(cx, &eps, &chosen).map(Measured::Release)
            }
            Method::AboveThreshold { n_public, filtered } => {
                let fold = fold.sorted();
                let split = Split::new(cx.epsilon()?, spec.levels.len(), n_public);
                let count = split
                    .count
                    .as_ref()
                    .map(|e| noise::draw(&count::aggregate(fold.rows()), &Mechanism::Laplace(e.clone()), rng));
                let chosen: Vec<f64> = spec
                    .levels
                    .iter()
                    .map(|level| {
                        let at = unbounded::mechanism(level, cx.neighbours, filtered, &split.per_level);
                        let queries = fold.threshold_queries(level, Scan::of(level));
                        // No stop at all: the last candidate of the scan (post-processing).
                        let stop = at.run(queries.iter().map(|&(_, g)| g), rng).unwrap_or(queries.len() - 1);
                        spec.candidates.get(queries[stop].0)
                    })
                    .collect();
                let rows = match &count {
                    None => Rows::Public(fold.rows()),
                    Some(noisy) => Rows::Noisy(noisy),
                };
                self.threshold_release(cx, &split, rows, &chosen).map(Measured::Release)
            }
        }
    }

    /// The rank bound a release with bounds states: it depends only on ε, the levels, the
    /// privacy unit and the number of candidates. How far the released value is from the true
    /// quantile depends on how the data are spread around it, which no plan can know.
    fn plan(&self, cx: &PlanContext) -> Result<Planned, Error> {
        if self.spec.method != Method::PermuteAndFlip {
            return Err(Error::usage(
                "dpstat plan needs --lower/--upper for a quantile: without bounds the release scans a \
                 public log-scale grid with AboveThreshold, whose result depends on how many rows there \
                 are and where they lie, which cannot be planned without data",
            ));
        }
        let spec = &self.spec;
        // Statistic::new refused Gaussian noise: a quantile is pure ε-DP only.
        let total = cx.mechanism.epsilon().ok_or_else(|| Error::internal("a quantile's plan has an epsilon"))?;
        let eps = spec.epsilon_per_level(total);
        let k = spec.candidates.len();
        let worst = spec
            .levels
            .iter()
            .map(|l| rank_error_bound(l, spec.score_sensitivity(l), &eps, k, cx.confidence.beta()))
            .fold(0.0, f64::max);
        let accuracy = Accuracy { confidence: cx.confidence.level(), error_bound: worst, scope: RANK };
        let noise = Noise { mechanism: "permute-and-flip", ..Noise::multi(cx.mechanism, cx.neighbours, accuracy) };
        let assumption = format!(
            "the bound is on rank, over {} {} candidates: the released candidate is within that many \
             rows (in order) of the best candidate; its distance in value from the true quantile \
             depends on how the data are spread around it, which cannot be planned without data",
            k,
            spec.candidates.kind
        );
        Ok(Planned { noise, bins: None, assumptions: vec![assumption] })
    }
}

/// What a bounds-free release knows of the row count.
enum Rows<'a> {
    /// n itself, public under replace without filters.
    Public(u64),
    /// The noisy count, when n is private.
    Noisy(&'a Drawn<BigInt>),
}

impl Quantile {
    /// Permute-and-flip's candidates, each level with its share of ε and rank bound.
    fn flip_release(&self, cx: &Context, eps: &Epsilon, chosen: &[f64]) -> Result<Release, Error> {
        let spec = &self.spec;
        let beta = cx.confidence.beta();
        let k = spec.candidates.len();
        let quantiles: Vec<QuantileValue> = spec
            .levels
            .iter()
            .zip(chosen)
            .map(|(level, &value)| QuantileValue {
                rank_error_bound: rank_error_bound(level, spec.score_sensitivity(level), eps, k, beta),
                score_sensitivity: spec.score_sensitivity(level),
                ..level_value(level, value, eps, cx.neighbours)
            })
            .collect();
        let cost = Cost::sequential(spec.levels.iter().map(|l| Cost::part(level_name(l), eps)).collect());
        self.release(cx, "permute-and-flip", quantiles, cost, vec![])
    }

    /// AboveThreshold's candidates, each level with its rank bound and, when the row count
    /// (public, or the noisy count's lower bound) is too small for its ε, a warning.
    fn threshold_release(&self, cx: &Context, split: &Split, rows: Rows, chosen: &[f64]) -> Result<Release, Error> {
        let spec = &self.spec;
        let Method::AboveThreshold { filtered, .. } = spec.method else {
            return Err(Error::internal("a bounded quantile released by AboveThreshold"));
        };
        let beta = cx.confidence.beta();
        let k = spec.candidates.len();
        let (rows_low, rows_said) = rows_at_least(&rows, beta);
        let per_level = &split.per_level;
        // A level that would more likely than not land outside the data's range carries no
        // information: the whole release is withheld (its outcome, from the noisy count and
        // public scales only, is post-processing of what was drawn).
        let judged: Vec<_> = spec
            .levels
            .iter()
            .map(|level| {
                let at = unbounded::mechanism(level, cx.neighbours, filtered, per_level);
                let wild = unbounded::wild_probability(&at, level, rows_low, k);
                (level, at, wild)
            })
            .collect();
        if let Some((level, _, wild)) = judged.iter().find(|(_, _, wild)| *wild >= WITHHELD_WILD) {
            return Err(Error::withheld(format!(
                "q={} of {}: too few rows for epsilon {per_level} per level without bounds: with \
                 {rows_said}, the release would lie outside the range of the data with \
                 probability up to {}; give --lower/--upper, a larger --eps or more rows",
                real(level.to_f64()),
                self.column.label(),
                real((wild * 1000.0).ceil() / 1000.0)
            )));
        }
        let mut warnings = vec![];
        let quantiles: Vec<QuantileValue> = judged
            .iter()
            .zip(chosen)
            .map(|((level, at, wild), &value)| {
                let (level, wild) = (*level, *wild);
                let warning = (wild > beta / 2.0).then(|| {
                    format!(
                        "q={}: the data look too few for epsilon {per_level} per level: with {rows_said}, \
                         the release may lie outside the range of the data (probability up to {}); give \
                         --lower/--upper, a larger --eps or more rows",
                        real(level.to_f64()),
                        real((wild * 1000.0).ceil() / 1000.0)
                    )
                });
                warnings.extend(warning.clone());
                let alpha = BigRational::new(BigInt::from(at.error_bound(k, beta)), BigInt::from(level.denom));
                let bound = rational_to_f64_up(&alpha);
                QuantileValue {
                    rank_error_bound: bound,
                    scan: Some(Scan::of(level).name()),
                    warning,
                    ..level_value(level, value, per_level, cx.neighbours)
                }
            })
            .collect();
        let levels = judged.iter().map(|(l, at, _)| {
            Cost::sequential(vec![Cost::part("threshold", &at.threshold_eps), Cost::part("queries", &at.queries_eps)])
                .named(level_name(l))
        });
        let cost = Cost::sequential(split.count.iter().map(|e| Cost::part("count", e)).chain(levels).collect());
        let parts = match rows {
            Rows::Noisy(noisy) => vec![Part::drawn("count", noisy)],
            Rows::Public(_) => vec![],
        };
        let mut release = self.release(cx, "above-threshold", quantiles, cost, parts)?;
        if let Rows::Public(n) = rows {
            release.noise.rows = Some(n);
        }
        release.warnings = warnings;
        Ok(release)
    }

    fn release(
        &self,
        cx: &Context,
        mechanism: &'static str,
        quantiles: Vec<QuantileValue>,
        cost: Cost,
        parts: Vec<Part>,
    ) -> Result<Release, Error> {
        let worst = quantiles.iter().map(|q| q.rank_error_bound).fold(0.0, f64::max);
        let accuracy =
            Accuracy { confidence: cx.confidence.level(), error_bound: worst, scope: RANK };
        let noise = Noise { mechanism, parts, ..Noise::multi(cx.mechanism, cx.neighbours, accuracy) };
        let release = cx.release(self, noise, cost)?;
        let candidates = &self.spec.candidates;
        Ok(Release {
            value: (quantiles.len() == 1).then(|| Number::Real(quantiles[0].value)),
            quantiles: Some(quantiles),
            candidates: Some(CandidateInfo {
                count: candidates.len(),
                lower: candidates.first(),
                upper: candidates.last(),
                grid: candidates.kind,
            }),
            ..release
        })
    }
}

/// A level's name in the accounting: `q=0.5`.
fn level_name(level: &Level) -> String {
    format!("q={}", real(level.to_f64()))
}

/// A released level with its ε share and score sensitivity; the bound is filled in by the
/// mechanism that chose it.
fn level_value(level: &Level, value: f64, eps: &Epsilon, neighbours: Neighbours) -> QuantileValue {
        QuantileValue {
            q: level.to_f64(),
            q_exact: format!("{}/{}", level.numer, level.denom),
            value,
            epsilon: eps.to_f64_up(),
            epsilon_exact: eps.exact_string(),
            score_sensitivity: level.score_sensitivity(neighbours),
            rank_error_bound: 0.0,
            scan: None,
            warning: None,
        }
}

/// Most candidates a grid may have: every integer of [0, 10^6]. The counts take 16 bytes a
/// candidate (16 MB at the cap), per copy of the fold.
pub const MAX_RESOLUTION: usize = 1_000_001;
/// A bounds-free level whose release may lie outside the data's range with probability (bounded
/// above) this large is withheld rather than released with a warning (issue 24, item 4).
const WITHHELD_WILD: f64 = 0.5;
/// The default grid's coarsest step leaves at least this many steps on non-integer [L, U].
const DEFAULT_STEPS: f64 = 1000.0;
/// Integer bounds get at least this many steps, and at least [`INTEGER_AREA`]/(U − L): the
/// integers alone from U − L = 20 on, finer steps on narrower bounds.
const INTEGER_STEPS: f64 = 20.0;
/// See [`INTEGER_STEPS`]: 400/(U − L) steps gives [0, 1] steps of 0.002.
const INTEGER_AREA: f64 = 400.0;
/// With `--by`, the default grids of all groups share [`MAX_RESOLUTION`] candidates, but a
/// group's grid may always have this many (the even default grid before issue 24 had 2001).
const GROUP_FLOOR: usize = 2001;
/// Candidates of the even grid used when the bounds are too small or too large for a power-of-ten
/// step that f64 holds exactly (10^-22 to 10^22).
const FALLBACK_RESOLUTION: usize = 2001;

/// The most candidates the default grid of a query with `groups` groups (1 without `--by`)
/// may have: from the flags alone, so the memory check before any charge sees it.
pub fn default_cap(groups: usize) -> usize {
    (MAX_RESOLUTION / groups.max(1)).max(GROUP_FLOOR)
}
/// The public log-scale grid used without bounds: ±2^e·(1 + j/STEPS) for e in
/// LOG_MIN_EXP..=LOG_MAX_EXP, plus 0 — about 3 % relative resolution from 1e-6 to 1.8e19.
const LOG_MIN_EXP: i32 = -20;
const LOG_MAX_EXP: i32 = 63;
const LOG_STEPS_PER_OCTAVE: u32 = 32;

impl Level {
    /// Δu of the score for a privacy unit (see the module doc).
    pub fn score_sensitivity(&self, neighbours: Neighbours) -> u128 {
        match neighbours {
            Neighbours::AddRemove => self.numer.max(self.denom - self.numer),
            Neighbours::Replace => self.denom,
        }
    }
}

/// The public candidates, sorted and distinct: a list, or the default decimal grid held as
/// its rule (a million doubles would be most of a median's memory).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidates {
    values: Vec<f64>,
    decimal: Option<Decimal>,
    pub kind: &'static str,
}

/// The multiples m·s·10^k (s the stride, 1, 2 or 5) for m in `first..first + count`, with L
/// before them when L is not one (`lead`) and U after them when U is not one (`trail`). Built
/// only where those doubles rise strictly, so the i-th candidate is computed, never stored.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Decimal {
    lower: f64,
    upper: f64,
    k: i32,
    /// 1, 2 or 5 (absent on the wire before issue 38: 1).
    #[serde(default = "one")]
    stride: i64,
    first: i64,
    count: usize,
    lead: bool,
    trail: bool,
}

fn one() -> i64 {
    1
}

/// A default grid step, s·10^k for a stride s of 1, 2 or 5: the steps in order of size are
/// `Step::nth(j)` for rising j (j = 3k, 3k + 1, 3k + 2 for s = 1, 2, 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Step {
    k: i32,
    stride: i64,
}

impl Step {
    /// The steps 10^−22 (j = −66) to 5·10^22 (j = 68): 10^|k| is exact in f64 up to 22.
    const FINEST: i32 = -66;
    const COARSEST: i32 = 68;

    fn nth(j: i32) -> Step {
        Step { k: j.div_euclid(3), stride: [1, 2, 5][j.rem_euclid(3) as usize] }
    }

    /// x in steps (10^k exact, then a division by 1, 2 or 5: rounded at most twice).
    fn units(self, x: f64) -> f64 {
        scaled(x, self.k) / self.stride as f64
    }

    /// The multiple m of the step as the double nearest the decimal m·s·10^k (m·s exact).
    fn at(self, m: i64) -> f64 {
        unscaled((m * self.stride) as f64, self.k)
    }
}

/// [`Candidates`] as a cluster executor reads them: the kind as text, read back as the one name
/// it stands for.
#[derive(Deserialize)]
struct CandidatesWire {
    values: Vec<f64>,
    #[serde(default)]
    decimal: Option<Decimal>,
    kind: String,
}

impl<'de> Deserialize<'de> for Candidates {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Candidates, D::Error> {
        let wire = CandidatesWire::deserialize(d)?;
        let kind = ["linear", "decimal", "log"]
            .into_iter()
            .find(|k| *k == wire.kind)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown candidate grid {:?}", wire.kind)))?;
        Ok(Candidates { values: wire.values, decimal: wire.decimal, kind })
    }
}

impl Decimal {
    fn len(&self) -> usize {
        usize::from(self.lead) + self.count + usize::from(self.trail)
    }

    fn get(&self, i: usize) -> f64 {
        let lead = usize::from(self.lead);
        if i < lead {
            return self.lower;
        }
        if i - lead >= self.count {
            return self.upper;
        }
        self.step().at(self.first + (i - lead) as i64)
    }

    fn step(&self) -> Step {
        Step { k: self.k, stride: self.stride }
    }

    /// [`Candidates::place`] on a grid of step 1 (every integer: the default for integer bounds
    /// at least 20 apart), the quantile's per-row cost on 10^6 candidates: no division, no call
    /// to `ceil` and no walk (issue 38). Its multiples are the integers `first..first + count`,
    /// each computed exactly (below 2^53), so the first candidate >= x is L when x <= L, U past
    /// the last multiple, and else x rounded up, which a truncation and one comparison give.
    /// None on other grids, for NaN, and for a grid read off the wire that breaks the rule.
    #[inline]
    fn unit_place(&self, x: f64) -> Option<u32> {
        if self.k != 0 || self.stride != 1 || x.is_nan() {
            return None;
        }
        // Candidate 0 is L, whether L is a multiple or the lead.
        if x <= self.lower {
            return Some(u32::from(x == self.lower));
        }
        let len = self.len();
        if x > self.upper {
            return Some(2 * len as u32);
        }
        // L < x <= U, so |x| < 2^53: the truncation is x's integer part exactly; it rounds a
        // negative x up already, a positive one down unless x is whole.
        let t = x as i64;
        let whole = t as f64 == x;
        let up = t + i64::from((t as f64) < x);
        let m = usize::try_from(up - self.first).ok()?;
        let (i, on) = match m < self.count {
            true => (usize::from(self.lead) + m, whole),
            // Past the last multiple but not past U: U is the trail.
            false if self.trail => (len - 1, x == self.upper),
            false => return None,
        };
        Some((2 * i + usize::from(on)) as u32)
    }

    /// The multiples in [L, U] and the bounds, if the multiples rise strictly between them.
    fn new(lower: f64, upper: f64, step: Step, first: i64, last: i64) -> Option<Decimal> {
        let count = usize::try_from(last - first + 1).ok()?;
        let at = |m: i64| step.at(m);
        let (lead, trail) = (at(first) != lower, at(last) != upper);
        // Whole steps between bounds below 2^53 are exact integers, which rise: no walk over a
        // million multiples before the scan starts (issue 38).
        let whole = step.k >= 0 && lower.abs().max(upper.abs()) < 2f64.powi(53);
        let rising = whole || (first..last).all(|m| at(m) < at(m + 1));
        let inside = lower <= at(first) && at(last) <= upper;
        let Step { k, stride } = step;
        (count >= 1 && rising && inside)
            .then_some(Decimal { lower, upper, k, stride, first, count, lead, trail })
    }
}

impl Candidates {
    /// `count` evenly spaced points from L to U inclusive.
    pub fn linear(bounds: Bounds, count: usize) -> Candidates {
        let (l, u) = (bounds.lower(), bounds.upper());
        let last = (count - 1).max(1) as f64;
        // A weighted mean of the ends reads well (0..100 in 2000 steps gives 34.95, not
        // 34.949999999999996); halved first so that it cannot overflow near ±f64::MAX.
        let step = |i: usize| ((l / 2.0) * (last - i as f64) + (u / 2.0) * i as f64) / last * 2.0;
        let mut values: Vec<f64> = (0..count).map(step).map(|c| c.clamp(l, u)).collect();
        values.push(u);
        Candidates::from_sorted(values, "linear")
    }

    /// The default candidates on [L, U]: L, U and every multiple of a round step between
    /// them, the step s·10^k (s = 1, 2 or 5) chosen from the bounds alone:
    /// - for integer bounds, the coarsest step of at most 1 that leaves at least
    ///   max(20, 400/(U − L)) steps: every integer and nothing between once U − L >= 20, so
    ///   whole-number data (ages, counts, incomes, tied scores on [0, 20]) have their quantiles
    ///   among the candidates and no run of candidates between two integers outweighs them;
    ///   narrower integer bounds get halves, fifths, tenths, … down to 0.002 on [0, 1];
    /// - for other bounds, the coarsest step that leaves at least 1000 steps;
    /// - then the next coarser step, as often as needed for at most `cap` candidates (and for
    ///   multiples below 2^53 steps from 0, which f64 holds exactly).
    ///
    /// With steps 1, 2 and 5 apart, the count never drops by more than 2.5 times when a bound
    /// moves out (the rule before issue 38 went from 4,901 candidates on [0, 49] to 51 on
    /// [0, 50]). A multiple m·s·10^k is m·s·10^k or m·s/10^−k, the double nearest the decimal
    /// (10^±22 and m·s are exact). Bounds whose step would lie outside 10^±22 get 2001 even
    /// points.
    pub fn round(bounds: Bounds, cap: usize) -> Candidates {
        let (l, u) = (bounds.lower(), bounds.upper());
        let integers = l.fract() == 0.0 && u.fract() == 0.0;
        let (least, coarsest) = if integers {
            (INTEGER_STEPS.max(INTEGER_AREA / (u - l)), 0)
        } else {
            (DEFAULT_STEPS, Step::COARSEST)
        };
        let steps = |j: i32| Step::nth(j).units(u) - Step::nth(j).units(l);
        let Some(mut j) = (Step::FINEST..=coarsest).rev().find(|&j| steps(j) >= least) else {
            return Candidates::linear(bounds, FALLBACK_RESOLUTION.min(cap));
        };
        let count = |j: i32| {
            let step = Step::nth(j);
            let (lo, hi) = (step.units(l), step.units(u));
            let (first, last) = (lo.ceil(), hi.floor());
            let ends = usize::from(first != lo) + usize::from(last != hi);
            let exact = lo.abs().max(hi.abs()) * (step.stride as f64) < 2f64.powi(53);
            exact.then(|| (last - first + 1.0).max(0.0) as usize + ends)
        };
        while count(j).is_none_or(|c| c > cap) {
            j += 1;
            if j > Step::COARSEST {
                return Candidates::linear(bounds, FALLBACK_RESOLUTION.min(cap));
            }
        }
        let step = Step::nth(j);
        let (first, last) = (step.units(l).ceil() as i64, step.units(u).floor() as i64);
        if let Some(decimal) = Decimal::new(l, u, step, first, last) {
            return Candidates { values: vec![], decimal: Some(decimal), kind: "decimal" };
        }
        let mut values: Vec<f64> = (first..=last).map(|m| step.at(m).clamp(l, u)).collect();
        values.extend([l, u]);
        Candidates::from_sorted(values, "decimal")
    }

    /// The fixed log-scale grid used when no bounds are given.
    pub fn log_scale() -> Candidates {
        let mut positive = Vec::new();
        for e in LOG_MIN_EXP..=LOG_MAX_EXP {
            for j in 0..LOG_STEPS_PER_OCTAVE {
                positive.push(2f64.powi(e) * (1.0 + j as f64 / LOG_STEPS_PER_OCTAVE as f64));
            }
        }
        positive.push(2f64.powi(LOG_MAX_EXP + 1));
        let mut values: Vec<f64> = positive.iter().rev().map(|c| -c).collect();
        values.push(0.0);
        values.extend(positive);
        Candidates::from_sorted(values, "log")
    }

    /// The index of the first candidate >= x (`len()` if none), as `partition_point` finds it.
    /// On the even grids (`linear`, `decimal`: evenly spaced but for the bounds) a guess from
    /// x's place in [L, U] is corrected by a walk, which ends at the same index from any start;
    /// a binary search over 10^6 candidates cost the scan a cache miss per step.
    pub fn position(&self, x: f64) -> usize {
        let k = self.len();
        if self.kind == "log" || !x.is_finite() || k < 2 {
            return self.values.partition_point(|&c| c < x);
        }
        let (first, last) = (self.first(), self.last());
        let guess = match &self.decimal {
            // Saturating casts: a NaN or negative guess is 0, a huge one k.
            Some(d) => (d.step().units(x).ceil() - d.first as f64 + f64::from(u8::from(d.lead))).max(0.0) as usize,
            None => ((x - first) / (last - first) * (k - 1) as f64).ceil() as usize,
        };
        let mut i = guess.min(k);
        while i > 0 && self.get(i - 1) >= x {
            i -= 1;
        }
        while i < k && self.get(i) < x {
            i += 1;
        }
        i
    }

    /// x's position among the candidates ([`runs`]): 2i + 1 when x is candidate i, else 2i
    /// for the first candidate i above x (2·len above them all). At most 2·MAX_RESOLUTION + 1:
    /// a u32.
    #[inline]
    pub fn place(&self, x: f64) -> u32 {
        if let Some(p) = self.decimal.as_ref().and_then(|d| d.unit_place(x)) {
            return p;
        }
        let i = self.position(x);
        let on = i < self.len() && self.get(i) == x;
        (2 * i + usize::from(on)) as u32
    }

    fn from_sorted(mut values: Vec<f64>, kind: &'static str) -> Candidates {
        values.sort_by(f64::total_cmp);
        values.dedup();
        Candidates { values, decimal: None, kind }
    }

    pub fn len(&self) -> usize {
        self.decimal.as_ref().map_or(self.values.len(), Decimal::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> f64 {
        match &self.decimal {
            Some(d) => d.get(i),
            None => self.values[i],
        }
    }

    /// The candidates in order.
    pub fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    pub fn first(&self) -> f64 {
        self.get(0)
    }

    pub fn last(&self) -> f64 {
        self.get(self.len() - 1)
    }
}

/// 10^0 to 10^22, each exact in f64 (a table: `powi` is a loop on every candidate looked at).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22,
];

/// 10^|k| from the table (a grid read off the wire could hold a k beyond it: then `powi`).
fn pow10(k: i32) -> f64 {
    let e = k.unsigned_abs();
    POW10.get(e as usize).copied().unwrap_or_else(|| 10f64.powi(e as i32))
}

/// x / 10^k, rounded once (10^|k| is exact for |k| <= 22).
fn scaled(x: f64, k: i32) -> f64 {
    if k >= 0 {
        x / pow10(k)
    } else {
        x * pow10(k)
    }
}

/// m·10^k, the double nearest the decimal when m and 10^|k| are exact.
fn unscaled(m: f64, k: i32) -> f64 {
    if k >= 0 {
        m * pow10(k)
    } else {
        m / pow10(k)
    }
}

/// A validated quantile query.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantileSpec {
    pub candidates: Arc<Candidates>,
    pub levels: Vec<Level>,
    pub neighbours: Neighbours,
    pub method: Method,
    /// One selection per `--by` group (the score sensitivity under replace grows).
    pub grouped: bool,
}

/// How the candidates are chosen from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Permute-and-flip over the candidates on bounds given by flags.
    PermuteAndFlip,
    /// AboveThreshold over the public log-scale grid ([`unbounded`]). `n_public`: n may be
    /// used (replace without filters); otherwise a noisy count is drawn. `filtered`: rows pass
    /// `--where`, which makes the queries non-monotone under replace.
    AboveThreshold { n_public: bool, filtered: bool },
}

impl QuantileSpec {
    /// ε of each level: an exact even split.
    pub fn epsilon_per_level(&self, eps: &Epsilon) -> Epsilon {
        eps.split(self.levels.len() as u32)
    }

    /// Δu of a level's scores for this query's unit, with or without groups.
    pub fn score_sensitivity(&self, level: &Level) -> u128 {
        match self.grouped {
            false => level.score_sensitivity(self.neighbours),
            true => group::score_sensitivity(
                level.score_sensitivity(Neighbours::AddRemove),
                level.score_sensitivity(Neighbours::Replace),
                self.neighbours,
            ),
        }
    }
}

/// The rows as positions on the candidates ([`runs`]): memory grows with the rows up to
/// a chunk of eight rows per candidate ([`runs::chunk_for`], at most [`runs::CHUNK`]), then with
/// the candidates only.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QuantileFold {
    pub candidates: Arc<Candidates>,
    pub cell: NumberCell,
    pub positions: Positions,
}

impl QuantileFold {
    pub fn new(candidates: Arc<Candidates>, cell: NumberCell) -> QuantileFold {
        let positions = Positions::for_grid(candidates.len());
        QuantileFold { candidates, cell, positions }
    }

    pub fn add(&mut self, x: f64) {
        self.positions.push(self.candidates.place(x));
    }

    /// Sorts the positions, which walking the runs needs.
    pub fn sorted(mut self) -> QuantileFold {
        self.positions.sort();
        self
    }

    /// Per candidate, the rows equal to it, and per gap (K + 1 of them, the first below every
    /// candidate) the rows inside it: what AboveThreshold's scan reads. Needs [`Self::sorted`].
    pub fn counts(&self) -> (Vec<u64>, Vec<u64>) {
        let k = self.candidates.len();
        let (mut equal, mut gaps) = (vec![0; k], vec![0; k + 1]);
        self.positions.for_each_count(|p, c| match p % 2 {
            1 => equal[(p / 2) as usize] += c,
            _ => gaps[(p / 2) as usize] += c,
        });
        (equal, gaps)
    }

    /// The AboveThreshold queries of a level, in scan order ([`unbounded::threshold_queries`]).
    pub fn threshold_queries(&self, level: &Level, scan: Scan) -> Vec<(usize, i128)> {
        let (equal, gaps) = self.counts();
        unbounded::threshold_queries(&equal, &gaps, level, scan)
    }

    /// The rows folded.
    pub fn rows(&self) -> u64 {
        self.positions.len()
    }

    /// Calls `f` with every run of candidates and its score for `level`, in order.
    /// Generic, not `dyn`: a walk of some 10^5 runs through a vtable per run per layer spent
    /// most of its time in the calls (issue 38).
    pub fn for_each_scored_run(&self, level: &Level, mut f: impl FnMut(Run, i128)) {
        let n = self.rows() as i128;
        self.positions.for_each_run(self.candidates.len(), |run| f(run, score(level, n, run)))
    }

    /// The score of every candidate for a level (lower is better; tests and small grids).
    /// Needs [`Self::sorted`].
    pub fn scores(&self, level: &Level) -> Vec<i128> {
        let mut scores = Vec::with_capacity(self.candidates.len());
        self.for_each_scored_run(level, |run, s| scores.extend(std::iter::repeat_n(s, run.points)));
        scores
    }

    /// The least score of the runs for `level`, without walking past its run: a run's score
    /// is max(f₁, f₂) (`score`), f₁ = b·#(x < c) − a·n, which never falls along the runs
    /// (#(x < c) only grows), and f₂ = a·n − b·#(x ≤ c), which never rises. Once f₁ exceeds the
    /// least score so far, every later run scores at least its own f₁ ≥ this f₁, so none is
    /// lower. None without runs.
    pub fn best_score(&self, level: &Level) -> Option<i128> {
        let n = self.rows() as i128;
        let (a, b) = (level.numer as i128, level.denom as i128);
        let mut best: Option<i128> = None;
        let _ = self.positions.try_for_each_run(self.candidates.len(), |run| {
            let s = score(level, n, run);
            let least = best.map_or(s, |m| m.min(s));
            best = Some(least);
            match b * run.below as i128 - a * n > least {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        });
        best
    }

    /// One permute-and-flip draw for `level` ([`Base2::flip_near`]): the index of a candidate.
    /// One walk lists the runs near the best score (`QuantileFold::near_runs`) and stops past
    /// them; every other candidate's coin has the same dyadic part, 2^−64, so the draw walks no
    /// further. Where too many runs are near (a small ε), it walks them all
    /// (`QuantileFold::select_by_walks`): the same distribution either way.
    pub fn select(&self, level: &Level, mechanism: &Base2, rng: &mut dyn RngCore) -> usize {
        let Some((best, near)) = self.near_runs(level, mechanism.reach(), NEAR_RUNS) else {
            return self.select_by_walks(level, mechanism, rng);
        };
        let k = self.candidates.len() as u64;
        mechanism.flip_near(best, &near, k, |point| self.score_at(level, point), rng).unwrap_or(0) as usize
    }

    /// [`QuantileFold::select`] by walking every run ([`Base2::flip_walk`]): the best score
    /// found by [`Self::best_score`], then a walk to count the candidates held and one a visit.
    fn select_by_walks(&self, level: &Level, mechanism: &Base2, rng: &mut dyn RngCore) -> usize {
        let n = self.rows() as i128;
        let walk = |f: &mut dyn FnMut(u64, i128) -> ControlFlow<()>| {
            let _ = self
                .positions
                .try_for_each_run(self.candidates.len(), |run| f(run.points as u64, score(level, n, run)));
        };
        // The runs cover the candidates in order: the points before the run are its first.
        let drawn = self.best_score(level).and_then(|best| mechanism.flip_walk(best, &walk, rng));
        let Some((_, offset, first)) = drawn else {
            return 0;
        };
        (first + offset) as usize
    }

    /// The best (least) score for `level` and the runs scoring less than it + `reach`, in order,
    /// from one walk that stops past them; None where there are no runs or more than `most`
    /// would be listed ([`NEAR_RUNS`] for a draw). The scores fall and then rise along the runs (max(f₁,
    /// f₂), [`Self::best_score`]), so the runs near the best are consecutive: a run listed
    /// while falling leaves the front once the least so far is `reach` below it, and the walk
    /// stops at the first run whose f₁ is `reach` past the least, since no later run scores
    /// lower than its own f₁.
    fn near_runs(&self, level: &Level, reach: u128, most: usize) -> Option<(i128, Vec<Near>)> {
        let n = self.rows() as i128;
        let (a, b) = (level.numer as i128, level.denom as i128);
        let far = |s: i128, least: i128| s.abs_diff(least) >= reach;
        let (mut least, mut near, mut full) = (None::<i128>, std::collections::VecDeque::new(), false);
        let _ = self.positions.try_for_each_run(self.candidates.len(), |run| {
            let s = score(level, n, run);
            let m = least.map_or(s, |m| m.min(s));
            least = Some(m);
            while near.front().is_some_and(|r: &Near| far(r.score, m)) {
                near.pop_front();
            }
            let f1 = b * run.below as i128 - a * n;
            if f1 > m && far(f1, m) {
                return ControlFlow::Break(());
            }
            if !far(s, m) {
                if near.len() == most {
                    full = true;
                    return ControlFlow::Break(());
                }
                near.push_back(Near { first: run.first as u64, points: run.points as u64, score: s });
            }
            ControlFlow::Continue(())
        });
        match full {
            true => None,
            false => least.map(|m| (m, near.into())),
        }
    }

    /// The score for `level` of the candidate at index `point`, by a walk to its run.
    fn score_at(&self, level: &Level, point: u64) -> i128 {
        let n = self.rows() as i128;
        let mut found = 0;
        let _ = self.positions.try_for_each_run(self.candidates.len(), |run| {
            if ((run.first + run.points) as u64) <= point {
                return ControlFlow::Continue(());
            }
            found = score(level, n, run);
            ControlFlow::Break(())
        });
        found
    }
}

/// The most runs [`QuantileFold::select`] lists near the best score (32 bytes each, 512 KiB)
/// before it walks every run instead. The runs listed lie within reach/b rows either side of
/// q·n, two runs a row at most: 44/ε rows for a median, so a median of distinct rows walks
/// every run below ε ≈ 0.01.
const NEAR_RUNS: usize = 1 << 14;

/// The score of a run's candidates (lower is better): b times the signed distance in rows from
/// q·n to the rows the candidate can stand for, [#(x < c), #(x <= c)]:
///
///   s(c) = max(b·#(x < c) − a·n, a·n − b·#(x <= c))
///
/// positive outside (the distance to validity), zero on the edge, and minus the depth inside a
/// run of ties.
fn score(level: &Level, n: i128, run: Run) -> i128 {
    let (a, b) = (level.numer as i128, level.denom as i128);
    let below = run.below as i128;
    let at_or_below = below + run.equal as i128;
    (b * below - a * n).max(a * n - b * at_or_below)
}

impl Fold for QuantileFold {
    #[inline]
    fn row(&mut self, record: &Row) -> Result<(), BadCell> {
        if let Some(x) = self.cell.read(record)? {
            self.add(x);
        }
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        self.positions.merge(other.positions);
    }
    fn heap_bytes(&self) -> usize {
        Positions::max_heap_bytes(self.candidates.len())
    }
    /// One part's rows, four bytes each: 2 MiB for a 512 KiB block, where the worst case of a
    /// grid of 10^6 candidates is 24 MiB (issue 38: that worst case per copy kept the scan on one
    /// thread).
    fn part_heap_bytes(&self, rows: usize) -> usize {
        Positions::heap_bytes_for_rows(self.candidates.len(), rows)
    }
    fn widest_column(&self) -> Option<usize> {
        Some(self.cell.index)
    }
    /// The part's positions sorted on its worker ([`Positions::end_part`]).
    fn part_end(&mut self) {
        self.positions.end_part();
    }
}

/// The rank error bound (rows) of permute-and-flip at failure probability β: the chosen
/// candidate's score is within (2Δu/ε)·ln(K/β) of the best with probability >= 1 − β (a
/// candidate is chosen with probability at most its coin, and those that far from the best
/// hold coins of at most β/K each), the best scores
/// at most 0, and a positive score is b times a rank distance to the valid quantiles.
pub fn rank_error_bound(level: &Level, score_sensitivity: u128, eps: &Epsilon, candidates: usize, beta: f64) -> f64 {
    let delta = score_sensitivity as f64;
    let eps = eps.as_rational().to_f64().unwrap_or(f64::MIN_POSITIVE);
    let score_bound = 2.0 * delta / eps * (candidates as f64 / beta).ln();
    // Rounded up a little so float error never understates the bound.
    (score_bound / level.denom as f64) * (1.0 + 1e-12)
}

/// The rows a quantile's warnings reason from, and how they say it: the public count, or the
/// noisy count's lower bound at half the failure probability (the other half is the levels').
fn rows_at_least(rows: &Rows, beta: f64) -> (f64, String) {
    match rows {
        Rows::Public(n) => (*n as f64, format!("{n} rows")),
        Rows::Noisy(noisy) => {
            let value = noisy.value.to_f64().unwrap_or(0.0);
            let low = (value - noisy.noise.error_bound_units(beta / 2.0) as f64).max(0.0);
            let sure = real(1.0 - beta / 2.0);
            (low, format!("a noisy count of {} rows (at least {low} with probability {sure})", noisy.value))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::statistic::{neighbouring, Neighbouring};
    use crate::query::sum::tests::awkward_value;
    use proptest::prelude::*;

    fn fold_of(values: &[f64], candidates: &Arc<Candidates>) -> QuantileFold {
        let cell = NumberCell { index: 0, invalid: InvalidPolicy::Error };
        let mut fold = QuantileFold::new(Arc::clone(candidates), cell);
        values.iter().for_each(|&x| fold.add(x));
        fold.sorted()
    }

    /// The default median on [0, 10^6] (a million candidates) fits the fold budget on two
    /// threads of a CSV scan, whose copies but two hold one part each; its worst case per copy
    /// (a Parquet scan's) does not.
    #[test]
    fn a_million_candidates_scan_csv_in_parallel() {
        use crate::data::scan::{parallel_fold_bytes, FOLD_BUDGET};
        let candidates = Arc::new(round("0", "1000000", MAX_RESOLUTION));
        assert_eq!(candidates.len(), 1_000_001);
        let fold = QuantileFold::new(candidates, NumberCell { index: 0, invalid: InvalidPolicy::Error });
        assert!(parallel_fold_bytes(&fold, 2, false) <= FOLD_BUDGET);
        assert!(parallel_fold_bytes(&fold, 2, true) > FOLD_BUDGET);
    }

    #[test]
    fn levels_parse_exactly() {
        assert_eq!("0.5".parse::<Level>(), Ok(Level::MEDIAN));
        assert_eq!("0.25".parse::<Level>(), Ok(Level { numer: 1, denom: 4 }));
        for bad in ["0", "1", "-0.5", "1.5", "nan", "x", "0.0000000001"] {
            assert!(bad.parse::<Level>().is_err(), "{bad}");
        }
        assert_eq!("0.9".parse::<Level>().unwrap().score_sensitivity(Neighbours::AddRemove), 9);
        assert_eq!("0.9".parse::<Level>().unwrap().score_sensitivity(Neighbours::Replace), 10);
    }

    fn linear(l: &str, u: &str, k: usize) -> Arc<Candidates> {
        Arc::new(Candidates::linear(Bounds::new(l.parse().unwrap(), u.parse().unwrap()).unwrap(), k))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The best score found by a walk that stops past it is the least of every candidate's,
        /// for any rows (ties, rows outside the grid, none) and level.
        #[test]
        fn the_best_score_is_the_least(
            values in proptest::collection::vec(-3i32..25, 0..60),
            numer in 1u128..20,
        ) {
            let cands = linear("0", "20", 21);
            let rows: Vec<f64> = values.iter().map(|&v| f64::from(v) / 2.0).collect();
            let fold = fold_of(&rows, &cands);
            let level = Level { numer, denom: 20 };
            let least = fold.scores(&level).into_iter().min();
            prop_assert_eq!(fold.best_score(&level), least);
        }

        /// The runs listed near the best are every run nearer the best than the coins' reach,
        /// in order, for any rows, level and ε.
        #[test]
        fn the_runs_near_the_best_are_listed(
            values in proptest::collection::vec(-3i32..205, 0..300),
            numer in 1u128..20,
            eps in proptest::sample::select(vec!["0.001", "0.05", "1", "8", "200"]),
        ) {
            let cands = linear("0", "100", 201);
            let rows: Vec<f64> = values.iter().map(|&v| f64::from(v) / 2.0).collect();
            let fold = fold_of(&rows, &cands);
            let level = Level { numer, denom: 20 };
            let mech = Base2::new(&eps.parse().unwrap(), level.score_sensitivity(Neighbours::AddRemove));
            let mut runs = Vec::new();
            fold.for_each_scored_run(&level, |run, s| runs.push((run.first as u64, run.points as u64, s)));
            let best = runs.iter().map(|r| r.2).min();
            let wanted: Vec<Near> = runs
                .iter()
                .filter(|r| best.is_some_and(|b| r.2.abs_diff(b) < mech.reach()))
                .map(|&(first, points, score)| Near { first, points, score })
                .collect();
            let listed = fold.near_runs(&level, mech.reach(), NEAR_RUNS);
            prop_assert_eq!(listed, best.map(|b| (b, wanted)));
        }
    }

    /// Both ways of drawing a fold's candidate, from the runs near the best and by walking
    /// every run, follow permute-and-flip over the candidates (χ², insecure seed), for a
    /// median and a 0.9 quantile over ties, rows off the grid and rows outside it.
    #[test]
    fn a_fold_draws_by_permute_and_flip() {
        use crate::privacy::permute_and_flip::tests::flip_probabilities;
        use crate::privacy::sampler::tests::{assert_chi2, cells_of_five};
        use rand::SeedableRng;
        let cands = linear("0", "20", 41);
        let rows = [-1.0, 2.0, 3.0, 3.0, 3.0, 3.3, 7.0, 8.5, 8.5, 9.0, 12.0, 15.0, 19.0, 25.0];
        let fold = fold_of(&rows, &cands);
        for (level, eps) in [(Level::MEDIAN, "0.8"), ("0.9".parse().unwrap(), "2")] {
            let mech = Base2::new(&eps.parse().unwrap(), level.score_sensitivity(Neighbours::AddRemove));
            let eta = mech.eta();
            let best = fold.best_score(&level).unwrap();
            let mut coins = Vec::new();
            fold.for_each_scored_run(&level, |run, s| coins.push((run.points as u64, 2f64.powf(-eta * (s - best) as f64))));
            let expected: Vec<f64> = flip_probabilities(&coins)
                .iter()
                .zip(&coins)
                .flat_map(|(&q, &(points, _))| (0..points).map(move |_| q / points as f64))
                .collect();
            let draws = 30_000;
            let (cell, probs) = cells_of_five(&expected, draws);
            let cells = probs.len();
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(29); // INSECURE: test-only seed
            let (mut listed, mut walked) = (vec![0u64; cells], vec![0u64; cells]);
            for _ in 0..draws {
                listed[cell[fold.select(&level, &mech, &mut rng)]] += 1;
                walked[cell[fold.select_by_walks(&level, &mech, &mut rng)]] += 1;
            }
            for (name, observed) in [("listed", &listed), ("walked", &walked)] {
                assert_chi2(&format!("{level:?} {name}"), observed, &probs);
            }
        }
    }

    /// Past [`NEAR_RUNS`] runs near the best (a tiny ε on many distinct rows) a draw walks every
    /// run: what `select` draws is what the walk draws from the same seed.
    #[test]
    fn too_many_runs_near_the_best_are_walked() {
        use rand::SeedableRng;
        let cands = linear("0", "40000", 40_001);
        let rows: Vec<f64> = (0..20_000).map(|i| f64::from(i * 2)).collect();
        let fold = fold_of(&rows, &cands);
        let mech = Base2::new(&"0.0001".parse().unwrap(), 1);
        assert!(fold.near_runs(&Level::MEDIAN, mech.reach(), NEAR_RUNS).is_none());
        for seed in 0..5 {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed); // INSECURE: test-only seed
            let mut again = rand_chacha::ChaCha20Rng::seed_from_u64(seed); // INSECURE: test-only seed
            let drawn = fold.select(&Level::MEDIAN, &mech, &mut rng);
            assert_eq!(drawn, fold.select_by_walks(&Level::MEDIAN, &mech, &mut again));
            assert!(drawn < cands.len());
        }
    }

    #[test]
    fn scores_are_distances_in_rows_to_the_valid_quantiles() {
        let cands = linear("0", "10", 11);
        let fold = fold_of(&[1.0, 2.0, 3.0, 7.0, 9.0], &cands);
        let scores = fold.scores(&Level::MEDIAN);
        // n = 5, q·n = 2.5: only 3 has #(x < c) = 2 <= 2.5 <= 3 = #(x <= c), half a row
        // inside: b·(−1/2) = −1.
        assert_eq!(scores[3], -1);
        // c = 5: #(x < 5) = 3, half a row above 2.5: b·3 − a·n = 6 − 5 = 1.
        assert_eq!(scores[5], 1);
        // c = 0: #(x <= 0) = 0, 2.5 rows below: a·n − 0 = 5.
        assert_eq!(scores[0], 5);
        // 0.9 of 5 rows is 4.5: 9 is valid (#(x < 9) = 4, #(x <= 9) = 5), 10 is half a row off.
        let q9: Level = "0.9".parse().unwrap();
        let scores = fold.scores(&q9);
        assert_eq!((scores[9], scores[10]), (-5, 5));
        // Between two rows' values with q·n a whole number of rows, every candidate is valid
        // and scores 0: 2 rows of 4 below the median of [1, 2, 7, 9] on all of 2..=7.
        let scores = fold_of(&[1.0, 2.0, 7.0, 9.0], &cands).scores(&Level::MEDIAN);
        assert_eq!(&scores[2..=7], &[0; 6]);
        assert!(scores[1] > 0 && scores[8] > 0);
    }

    /// On tied data the value whose run of ties covers q·n scores 0. On this sample the old
    /// score |#below − #above| preferred 13 (|110 − 85| = 25) to the median 12 (|50 − 90| = 40).
    #[test]
    fn ties_are_credited() {
        let cands = linear("1", "16", 16);
        let runs = [(9.0, 50), (12.0, 60), (13.0, 5), (16.0, 85)];
        let rows: Vec<f64> = runs.iter().flat_map(|&(x, k)| std::iter::repeat_n(x, k)).collect();
        let scores = fold_of(&rows, &cands).scores(&Level::MEDIAN);
        // q·n = 100 lies within [#(x < 12), #(x <= 12)] = [50, 110], 10 rows from its top.
        assert_eq!(scores[11], -20, "12 is the median");
        assert_eq!(scores.iter().filter(|&&s| s <= 0).count(), 1);
        // 13: #(x < 13) = 110, 10 rows above 100: 2·110 − 200 = 20.
        assert_eq!(scores[12], 20);
        // 11: #(x <= 11) = 50, 50 rows below: 200 − 2·50 = 100.
        assert_eq!(scores[10], 100);
    }

    fn round(l: &str, u: &str, cap: usize) -> Candidates {
        Candidates::round(Bounds::new(l.parse().unwrap(), u.parse().unwrap()).unwrap(), cap)
    }

    fn assert_grid(c: &Candidates, l: f64, u: f64) {
        let values: Vec<f64> = c.iter().collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
        assert_eq!((c.first(), c.last()), (l, u));
    }

    /// With integer bounds every integer of [L, U] is a candidate, whatever the width, up to
    /// the cap; from U − L = 20 on nothing else is, below it steps of 1, 2 or 5 times a power
    /// of ten, so round decimals are candidates too.
    #[test]
    fn default_grid_holds_every_integer_of_integer_bounds() {
        let cap = default_cap(1);
        for (l, u, count) in [
            (18, 90, 73),       // 20 steps or more: the integers alone
            (0, 100, 101),
            (0, 50, 51),
            (0, 49, 50),
            (0, 20, 21),
            (0, 19, 39),        // fewer: halves (at least 400/19 = 21.05 steps)
            (1, 16, 31),
            (0, 1, 501),        // steps of 0.002: at least 400 steps
            (-5, 3, 81),        // tenths: at least 50 steps
            (0, 200_000, 200_001),
            (-1000, 1000, 2_001),
            (0, 1_000_000, 1_000_001),
        ] {
            let c = round(&l.to_string(), &u.to_string(), cap);
            assert_grid(&c, l as f64, u as f64);
            assert_eq!(c.len(), count, "[{l}, {u}]");
            assert_eq!(c.kind, "decimal");
            let values: std::collections::HashSet<u64> = c.iter().map(|v| v.to_bits()).collect();
            for i in l..=u {
                assert!(values.contains(&(i as f64).to_bits()), "[{l}, {u}] lacks {i}");
            }
        }
        // Decimals are the doubles the decimal text parses to.
        let c = round("0", "1", cap);
        for text in ["0.002", "0.1", "0.37", "0.998"] {
            assert!(c.iter().any(|v| v == text.parse::<f64>().unwrap()), "{text}");
        }
        let c = round("0", "19", cap);
        assert!(c.iter().any(|v| v == 7.5) && !c.iter().any(|v| v == 7.2));
    }

    /// No cliff (issue 38, item 3): as the upper bound moves out one integer at a time, or
    /// one tenth at a time from a non-integer lower bound, the count of default candidates
    /// never falls by more than 2.5 times. The rule before gave [0, 49] 4,901 candidates and
    /// [0, 50] 51.
    #[test]
    fn default_grid_counts_have_no_cliff() {
        let cap = default_cap(1);
        assert_eq!(round("0", "49", cap).len(), 50);
        assert_eq!(round("0", "50", cap).len(), 51);
        let counts = |lower: &str, uppers: &mut dyn Iterator<Item = String>| -> Vec<(String, usize)> {
            uppers.map(|u| { let n = round(lower, &u, cap).len(); (u, n) }).collect()
        };
        let integer = counts("0", &mut (1..=2_000).map(|u| u.to_string()));
        let decimal = counts("0.5", &mut (1..=3_000).map(|t| format!("{}", 0.5 + f64::from(t) / 10.0)));
        for series in [&integer, &decimal] {
            for w in series.windows(2) {
                let ((u0, n0), (u1, n1)) = (&w[0], &w[1]);
                assert!(*n1 as f64 * 2.5 >= *n0 as f64, "{u0}: {n0} candidates, {u1}: {n1}");
            }
        }
        // From U − L = 20 on, integer bounds give the integers: the count rises with U.
        assert!(integer[19..].iter().all(|(u, n)| *n == u.parse::<usize>().unwrap() + 1));
        // Non-integer bounds stay within 1000 to 2500 steps (plus the bounds).
        assert!(decimal.iter().all(|&(_, n)| (1_001..=2_502).contains(&n)));
    }

    /// The decimal grid held as its rule is the list the rule gives, sorted and deduplicated.
    #[test]
    fn decimal_grids_are_their_materialized_lists() {
        for (l, u) in [
            ("0", "1000000"),
            ("0.1", "3.7"),
            ("-0.25", "1234.5"),
            ("1", "16"),
            ("-5", "3"),
            ("18", "90"),
            ("0", "1"),
            ("0", "19"),
            ("0.3", "12.7"),
        ] {
            let c = round(l, u, default_cap(1));
            let d = c.decimal.expect("held as a rule");
            let (lo, hi) = (l.parse::<f64>().unwrap(), u.parse::<f64>().unwrap());
            let last = d.first + d.count as i64 - 1;
            let mut list: Vec<f64> = (d.first..=last).map(|m| d.step().at(m).clamp(lo, hi)).collect();
            list.extend([lo, hi]);
            let list = Candidates::from_sorted(list, "decimal");
            assert_eq!(c.len(), list.len(), "[{l}, {u}]");
            assert!(c.iter().zip(list.iter()).all(|(a, b)| a == b), "[{l}, {u}]");
        }
    }

    /// One integer past [0, 10^6] does not fit the cap: the step becomes 2, and the bounds
    /// stay candidates.
    #[test]
    fn default_grid_is_coarsened_past_the_cap() {
        let c = round("0", "1000001", default_cap(1));
        assert_grid(&c, 0.0, 1_000_001.0);
        assert_eq!(c.len(), 500_002);
        assert!(c.iter().take(c.len() - 1).all(|v| v % 2.0 == 0.0));
        assert!(c.len() <= MAX_RESOLUTION);
        // Integer bounds far from 0: coarsened until the multiples are exact in f64.
        let c = round("1e15", "1000000000000001", default_cap(1));
        assert_grid(&c, 1e15, 1e15 + 1.0);
    }

    /// Non-integer bounds: the coarsest step of 1, 2 or 5 times a power of ten with at least
    /// 1000 steps, plus the bounds.
    #[test]
    fn default_grid_steps_are_round() {
        let c = round("0.5", "3.7", default_cap(1));
        assert_grid(&c, 0.5, 3.7);
        assert_eq!(c.len(), 1_601); // 0.500, 0.502, …, 3.700
        assert!(c.iter().any(|v| v == 1.234));
        let c = round("-0.25", "1234.5", default_cap(1));
        assert_grid(&c, -0.25, 1234.5);
        // Step 1 (1234.75 steps >= 1000): the integers 0..=1234, and both bounds.
        assert_eq!(c.len(), 1_235 + 2);
        // Too narrow for 10^-22 steps: the even grid.
        let c = round("0", "1e-25", default_cap(1));
        assert_eq!((c.kind, c.len()), ("linear", FALLBACK_RESOLUTION));
    }

    /// With `--by`, the groups share the cap (never below the floor): the grid is coarsened by
    /// the number of groups, which the flags give.
    #[test]
    fn grouped_default_grids_share_the_cap() {
        assert_eq!(default_cap(1), 1_000_001);
        assert_eq!(default_cap(11), 90_909);
        assert_eq!(default_cap(100_000), 2_001);
        assert_eq!(round("0", "1000000", default_cap(11)).len(), 50_001);
        assert_eq!(round("1", "16", default_cap(11)).len(), 31);
        assert_eq!(round("0", "1000000", default_cap(100_000)).len(), 2_001);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The guessed-and-walked position is the binary search's on every grid.
        #[test]
        fn positions_match_a_binary_search(
            x in prop_oneof![awkward_value(), -100.0..1100.0f64, (-2000i32..2000).prop_map(|i| f64::from(i) / 2.0)],
            grid in 0..5usize,
        ) {
            let c = match grid {
                0 => round("0", "1000", default_cap(1)),
                1 => round("-0.25", "1234.5", default_cap(1)),
                2 => round("0.5", "3.7", default_cap(1)),
                3 => Candidates::linear(Bounds::new("-1000".parse().unwrap(), "1e6".parse().unwrap()).unwrap(), 101),
                _ => Candidates::log_scale(),
            };
            let values: Vec<f64> = c.iter().collect();
            prop_assert_eq!(c.position(x), values.partition_point(|&v| v < x));
            for &v in values.iter().step_by(97) {
                prop_assert_eq!(c.position(v), values.partition_point(|&w| w < v));
            }
        }
    }

    /// 2i + 1 when x is candidate i, else 2i for the first candidate i above x: a binary search
    /// over the candidates, one `get` a step.
    fn searched_place(c: &Candidates, x: f64) -> usize {
        let (mut lo, mut hi) = (0, c.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if c.get(mid) < x {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        2 * lo + usize::from(lo < c.len() && c.get(lo) == x)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// A row's position, by the unit grid's integer arithmetic (grids 0 to 2, with and
        /// without a lead and a trail) or by the walk, is the binary search's.
        #[test]
        fn places_match_a_binary_search(
            x in prop_oneof![
                awkward_value(),
                -2000.0..1_000_100.0f64,
                (-4000i32..4000).prop_map(|i| f64::from(i) / 2.0),
                (-1i64..1_000_002).prop_map(|i| i as f64),
            ],
            grid in 0..6usize,
            near in 0..1_000_001usize,
        ) {
            let c = match grid {
                0 => round("0", "1000000", default_cap(1)),
                1 => round("-0.25", "1234.5", default_cap(1)),
                2 => round("-1500.5", "-0.5", default_cap(1)),
                3 => round("0.5", "3.7", default_cap(1)),
                4 => round("0", "1000001", default_cap(1)),
                _ => Candidates::log_scale(),
            };
            let unit = c.decimal.and_then(|d| d.unit_place(x));
            prop_assert_eq!(unit.is_some(), grid < 3);
            prop_assert_eq!(c.place(x) as usize, searched_place(&c, x));
            // Each candidate near a drawn index, and the points around it.
            let v = c.get(near % c.len());
            for y in [v, v - 0.5, v + 0.25, v.next_up(), v.next_down()] {
                prop_assert_eq!(c.place(y) as usize, searched_place(&c, y), "{}", y);
            }
        }
    }

    #[test]
    fn log_grid_is_sorted_symmetric_and_covers_zero() {
        let c = Candidates::log_scale();
        assert!(c.values.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(c.first(), -c.last());
        assert!(c.iter().any(|v| v == 0.0));
        assert!(c.len() > 5000 && c.len() < 6000, "{}", c.len());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Neighbouring datasets move every candidate's score by at most Δu.
        #[test]
        fn scores_move_by_at_most_their_sensitivity(
            rows in proptest::collection::vec(awkward_value(), 1..50),
            other in awkward_value(),
            at in any::<prop::sample::Index>(),
            level in prop_oneof![Just("0.5"), Just("0.9"), Just("0.01"), Just("0.333")],
            log in any::<bool>(),
        ) {
            let level: Level = level.parse().unwrap();
            let cands = Arc::new(if log {
                Candidates::log_scale()
            } else {
                Candidates::linear(Bounds::new("-1000".parse().unwrap(), "1e6".parse().unwrap()).unwrap(), 101)
            });
            let base = fold_of(&rows, &cands).scores(&level);
            let i = at.index(rows.len());
            let Neighbouring { removed, added, changed } = neighbouring(&rows, other, i);
            for (neighbours, others) in [
                (Neighbours::AddRemove, vec![removed, added]),
                (Neighbours::Replace, vec![changed]),
            ] {
                let delta = level.score_sensitivity(neighbours);
                for o in others {
                    for (s, t) in base.iter().zip(fold_of(&o, &cands).scores(&level)) {
                        prop_assert!(s.abs_diff(t) <= delta, "moved {} > Δu {}", s.abs_diff(t), delta);
                    }
                }
            }
        }

        /// The same on heavily tied data with the candidates on the tied values, where the
        /// tie-crediting terms switch most often; a replaced row may also leave a `--where`
        /// filter (a removal), which must stay within the replace Δu.
        #[test]
        fn tied_scores_move_by_at_most_their_sensitivity(
            rows in proptest::collection::vec(0u8..18, 1..60),
            other in 0u8..18,
            at in any::<prop::sample::Index>(),
            level in prop_oneof![Just("0.5"), Just("0.9"), Just("0.25"), Just("0.1")],
        ) {
            let level: Level = level.parse().unwrap();
            let cands = linear("1", "16", 16);
            let rows: Vec<f64> = rows.into_iter().map(f64::from).collect();
            let base = fold_of(&rows, &cands).scores(&level);
            let i = at.index(rows.len());
            let Neighbouring { removed, added, changed } = neighbouring(&rows, f64::from(other), i);
            let add_remove = level.score_sensitivity(Neighbours::AddRemove);
            let replace = level.score_sensitivity(Neighbours::Replace);
            for (delta, o) in [(add_remove, &removed), (add_remove, &added), (replace, &changed), (replace, &removed)] {
                for (s, t) in base.iter().zip(fold_of(o, &cands).scores(&level)) {
                    prop_assert!(s.abs_diff(t) <= delta, "moved {} > Δu {}", s.abs_diff(t), delta);
                }
            }
        }

        /// Per person (DESIGN §3.10): a person adds or removes at most T kept rows and changes
        /// no one else's, so every score moves by at most T·Δu, the sensitivity a person-level
        /// quantile states; the person's rows may all sit on one value, where Δu alone is
        /// exceeded as soon as T > 1.
        #[test]
        fn a_persons_rows_move_scores_by_at_most_t_times_their_sensitivity(
            rows in proptest::collection::vec(0u8..18, 0..60),
            person in proptest::collection::vec(0u8..18, 1..12),
            tied in any::<bool>(),
            level in prop_oneof![Just("0.5"), Just("0.9"), Just("0.25"), Just("0.1")],
        ) {
            let level: Level = level.parse().unwrap();
            let cands = linear("1", "16", 16);
            let rows: Vec<f64> = rows.into_iter().map(f64::from).collect();
            let person: Vec<f64> =
                person.iter().map(|&v| f64::from(if tied { person[0] } else { v })).collect();
            let with: Vec<f64> = rows.iter().chain(&person).copied().collect();
            let delta = person.len() as u128 * level.score_sensitivity(Neighbours::AddRemove);
            for (s, t) in fold_of(&rows, &cands).scores(&level).iter().zip(fold_of(&with, &cands).scores(&level)) {
                prop_assert!(s.abs_diff(t) <= delta, "moved {} > T·Δu {}", s.abs_diff(t), delta);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// The score's shape (issue 38, item 2): the candidates with the top (lowest) score are
        /// exactly the valid q-quantiles, an invalid candidate scores b times its distance in
        /// rows to validity, and the scores fall towards the valid ones from both sides.
        #[test]
        fn valid_candidates_and_only_they_score_best(
            // On the candidates' values, so that some candidate is valid.
            rows in proptest::collection::vec(1u8..17, 1..80),
            level in prop_oneof![Just("0.5"), Just("0.9"), Just("0.25"), Just("0.1"), Just("0.333")],
        ) {
            let level: Level = level.parse().unwrap();
            let (a, b) = (level.numer as i128, level.denom as i128);
            let cands = linear("1", "16", 16);
            let rows: Vec<f64> = rows.into_iter().map(f64::from).collect();
            let scores = fold_of(&rows, &cands).scores(&level);
            let best = *scores.iter().min().unwrap();
            let n = rows.len() as i128;
            for (i, c) in cands.iter().enumerate() {
                let below = rows.iter().filter(|&&x| x < c).count() as i128;
                let at_or_below = rows.iter().filter(|&&x| x <= c).count() as i128;
                let valid = b * below <= a * n && a * n <= b * at_or_below;
                prop_assert_eq!(scores[i] == best, valid, "candidate {}", c);
                if !valid {
                    // b·(distance in rows from q·n to [below, at_or_below]).
                    let distance = (b * below - a * n).max(a * n - b * at_or_below);
                    prop_assert!(distance > 0);
                    prop_assert_eq!(scores[i], distance);
                }
            }
            let first = scores.iter().position(|&s| s == best).unwrap();
            let last = scores.iter().rposition(|&s| s == best).unwrap();
            prop_assert!(scores[..=first].windows(2).all(|w| w[0] >= w[1]), "{:?}", scores);
            prop_assert!(scores[last..].windows(2).all(|w| w[0] <= w[1]), "{:?}", scores);
        }
    }

    fn log_fold(values: &[f64]) -> QuantileFold {
        fold_of(values, &Arc::new(Candidates::log_scale()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Every query moves by at most Δ on neighbouring datasets; under replace (n public)
        /// all of them move the same way, which is what halves their noise.
        #[test]
        fn queries_move_by_at_most_delta_and_monotonely_under_replace(
            rows in proptest::collection::vec(awkward_value(), 1..40),
            other in awkward_value(),
            at in any::<prop::sample::Index>(),
            q in prop_oneof![Just("0.5"), Just("0.9"), Just("0.1"), Just("0.333")],
        ) {
            let level: Level = q.parse().unwrap();
            let scan = Scan::of(&level);
            let base = log_fold(&rows).threshold_queries(&level, scan);
            let Neighbouring { removed, added, changed } = neighbouring(&rows, other, at.index(rows.len()));
            for (neighbours, others) in [
                (Neighbours::AddRemove, vec![removed, added]),
                (Neighbours::Replace, vec![changed]),
            ] {
                let delta = level.score_sensitivity(neighbours) as i128;
                for o in others {
                    let moved: Vec<i128> = log_fold(&o)
                        .threshold_queries(&level, scan)
                        .iter()
                        .zip(&base)
                        .map(|((i, g), (j, h))| { assert_eq!(i, j); g - h })
                        .collect();
                    prop_assert!(moved.iter().all(|m| m.abs() <= delta), "Δ {} exceeded", delta);
                    if neighbours == Neighbours::Replace {
                        let up = moved.iter().any(|&m| m > 0);
                        let down = moved.iter().any(|&m| m < 0);
                        prop_assert!(!(up && down), "replace moved queries both ways");
                    }
                }
            }
        }
    }

    #[test]
    fn queries_reach_zero_at_the_quantile() {
        let data: Vec<f64> = (1..=10).map(f64::from).collect();
        let fold = log_fold(&data);
        let grid = Candidates::log_scale();
        // Median, ascending: the first candidate with #(x <= c) >= 5 is 5.
        let queries = fold.threshold_queries(&Level::MEDIAN, Scan::Ascending);
        let (i, _) = queries.iter().find(|(_, g)| *g >= 0).unwrap();
        assert_eq!(grid.get(*i), 5.0);
        // 0.2, descending: the first candidate from the top with #(x >= c) >= 8 is 3.
        let queries = fold.threshold_queries(&"0.2".parse().unwrap(), Scan::Descending);
        let (i, _) = queries.iter().find(|(_, g)| *g >= 0).unwrap();
        assert_eq!(grid.get(*i), 3.0);
        assert_eq!(Scan::of(&"0.2".parse().unwrap()), Scan::Descending);
        assert_eq!(Scan::of(&Level::MEDIAN), Scan::Ascending);
    }
}
