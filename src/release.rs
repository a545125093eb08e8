//! What becomes public: the noisy value(s) and the facts a reader needs to interpret them
//! (ε charged, privacy unit, sensitivity, scale, grid, accuracy). Built only from noisy
//! releases and flags; the exact aggregate never reaches this struct, and neither does the
//! true row count under add-remove.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::ToPrimitive;
use serde::Serialize;

use crate::accuracy;
use crate::clamp::{Bins, Categories, Grid, GridBounds, OTHER};
use crate::cli::Confidence;
use crate::epsilon::rational_to_f64_up;
use crate::epsilon::Epsilon;
use crate::ledger::BudgetSummary;
use crate::mechanism::Noisy;
use crate::output::format_number;
use crate::plan::Plan;
use crate::query::bounds::PrivateBounds;
use crate::query::quantile::{self, QuantileSpec};
use crate::query::variance::{self, Interval, VarianceSpec};
use crate::query::{group, mean};
use crate::{epsilon, ledger};

#[derive(Clone, Debug, Serialize)]
pub struct Release {
    pub query: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    #[serde(rename = "where", skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Number>,
    /// The noisy aggregate exactly, in grid units (real-valued queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_units: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<Vec<BinCount>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantiles: Option<Vec<QuantileValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates: Option<CandidateInfo>,
    /// ε charged by this release, rounded up to the next f64.
    pub epsilon: f64,
    /// ε charged, exactly, as numerator/denominator.
    pub epsilon_exact: String,
    pub neighbours: &'static str,
    pub mechanism: &'static str,
    /// Δ of the single noisy aggregate; null for a multi-part release (see `parts`).
    pub sensitivity: Option<f64>,
    /// Δ/ε; null for a multi-part release.
    pub scale: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<GridInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<BoundsInfo>,
    /// The row count n; only under replace, where it is public.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    pub accuracy: Accuracy,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    pub post_processing: Vec<String>,
    /// Lines for stderr, printed only after the release is complete and charged.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// The ledger account after this release was charged (only with --ledger).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSummary>,
}

/// An integer release (counts) or a real one (sums, means).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Number {
    Integer(i128),
    Real(f64),
}

#[derive(Clone, Debug, Serialize)]
pub struct BinCount {
    pub bin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    pub count: i128,
}

#[derive(Clone, Debug, Serialize)]
pub struct GridInfo {
    /// g = 2^exponent.
    pub exponent: i32,
    pub spacing: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BoundsInfo {
    /// The clamping bounds as used: the flags (or the private estimate) snapped outwards
    /// onto the grid.
    pub lower: f64,
    pub upper: f64,
    /// "flags", or "private" when a share of ε found them.
    pub source: &'static str,
    /// ε spent finding the bounds (included in the release's epsilon).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon_exact: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Accuracy {
    pub confidence: f64,
    /// |release − true clamped statistic| <= error_bound with probability >= confidence.
    pub error_bound: f64,
    /// "value", or "per bin" for histograms (a simultaneous bound over K bins uses β/K).
    pub scope: &'static str,
}

/// The bins a histogram release is labelled with.
pub enum BinLabels<'a> {
    Numeric(&'a Bins),
    Categories(&'a Categories),
}

/// One released quantile.
#[derive(Clone, Debug, Serialize)]
pub struct QuantileValue {
    pub q: f64,
    pub q_exact: String,
    pub value: f64,
    pub epsilon: f64,
    pub epsilon_exact: String,
    /// Δu: the most one neighbouring change moves any candidate's score.
    pub score_sensitivity: u128,
    /// With probability >= confidence the released candidate's rank is within this many rows
    /// of the best candidate's.
    pub rank_error_bound: f64,
}

/// The public candidate grid of a quantile release.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateInfo {
    pub count: usize,
    pub lower: f64,
    pub upper: f64,
    /// "linear" (even grid over [L, U]) or "log" (the fixed public log-scale grid).
    pub grid: &'static str,
}

/// One noisy part of a multi-part release.
#[derive(Clone, Debug, Serialize)]
pub struct Part {
    pub name: &'static str,
    pub value: f64,
    pub value_units: String,
    pub epsilon: f64,
    pub epsilon_exact: String,
    pub sensitivity: f64,
    pub scale: f64,
    pub grid: GridInfo,
}

pub const MECHANISM: &str = "discrete-laplace";

impl GridInfo {
    pub fn of(grid: Grid) -> GridInfo {
        GridInfo { exponent: grid.exponent(), spacing: grid.to_f64(&BigInt::from(1)) }
    }
}

fn grid_info(noisy: &Noisy<impl Sized>) -> GridInfo {
    GridInfo::of(noisy.noise.grid)
}

impl BoundsInfo {
    pub fn of(bounds: &GridBounds) -> BoundsInfo {
        BoundsInfo {
            lower: bounds.lower_f64(),
            upper: bounds.upper_f64(),
            source: "flags",
            epsilon: None,
            epsilon_exact: None,
        }
    }
}

fn bounds_info(bounds: &GridBounds) -> BoundsInfo {
    BoundsInfo::of(bounds)
}

fn saturating_i128(v: &BigInt) -> i128 {
    v.to_i128().unwrap_or(if v.sign() == num_bigint::Sign::Minus { i128::MIN } else { i128::MAX })
}

impl Release {
    /// The fields every release shares, from the plan.
    fn base(plan: &Plan, column: Option<String>, accuracy: Accuracy) -> Release {
        Release {
            query: plan.query.name(),
            column,
            filters: plan.filters.iter().map(|f| format!("{}={}", f.column.label(), f.value)).collect(),
            value: None,
            value_units: None,
            bins: None,
            quantiles: None,
            candidates: None,
            epsilon: plan.eps.to_f64_up(),
            epsilon_exact: plan.eps.exact_string(),
            neighbours: plan.neighbours.name(),
            mechanism: MECHANISM,
            sensitivity: None,
            scale: None,
            grid: None,
            bounds: None,
            rows: None,
            accuracy,
            parts: vec![],
            post_processing: vec![],
            budget: None,
            notes: vec![],
        }
    }

    /// A count: the noisy integer.
    pub fn count(plan: &Plan, noisy: &Noisy<BigInt>) -> Release {
        let accuracy = scalar_accuracy(plan.confidence, accuracy::single(&noisy.noise, plan.confidence));
        Release {
            value: Some(Number::Integer(saturating_i128(&noisy.value))),
            sensitivity: Some(noisy.noise.sensitivity_value()),
            scale: Some(noisy.noise.scale_value()),
            ..Release::base(plan, None, accuracy)
        }
    }

    /// A sum: the noisy grid multiple.
    pub fn sum(plan: &Plan, column: String, noisy: &Noisy<BigInt>, bounds: &GridBounds) -> Release {
        let accuracy = scalar_accuracy(plan.confidence, accuracy::single(&noisy.noise, plan.confidence));
        Release {
            value: Some(Number::Real(noisy.noise.grid.to_f64(&noisy.value))),
            value_units: Some(noisy.value.to_string()),
            sensitivity: Some(noisy.noise.sensitivity_value()),
            scale: Some(noisy.noise.scale_value()),
            grid: Some(grid_info(noisy)),
            bounds: Some(bounds_info(bounds)),
            ..Release::base(plan, Some(column), accuracy)
        }
    }

    /// A mean under replace: noisy sum / public n, clamped.
    pub fn mean_replace(
        plan: &Plan,
        column: String,
        noisy_sum: &Noisy<BigInt>,
        n: u64,
        bounds: &GridBounds,
    ) -> Release {
        let (value, clamped) = mean::replace_release(&noisy_sum.value, n, bounds);
        let accuracy =
            scalar_accuracy(plan.confidence, accuracy::mean_replace(&noisy_sum.noise, n, plan.confidence));
        let mut post = vec![format!("noisy sum divided by the public row count n = {n}")];
        post.extend(clamped.then(|| clamp_note(bounds)));
        Release {
            value: Some(Number::Real(value)),
            value_units: Some(noisy_sum.value.to_string()),
            sensitivity: Some(accuracy::per_row(noisy_sum.noise.sensitivity_value(), n)),
            scale: Some(accuracy::per_row(noisy_sum.noise.scale_value(), n)),
            grid: Some(grid_info(noisy_sum)),
            bounds: Some(bounds_info(bounds)),
            rows: Some(n),
            post_processing: post,
            ..Release::base(plan, Some(column), accuracy)
        }
    }

    /// A mean under add-remove: midpoint + noisy shifted sum / max(1, noisy count), clamped.
    pub fn mean_add_remove(
        plan: &Plan,
        column: String,
        shifted: &Noisy<BigInt>,
        count: &Noisy<BigInt>,
        midpoint: i128,
        bounds: &GridBounds,
    ) -> Release {
        let (value, clamped) = mean::add_remove_release(&shifted.value, &count.value, midpoint, bounds);
        let error_bound = accuracy::mean_add_remove(
            &shifted.noise,
            &count.noise,
            &shifted.value,
            &count.value,
            bounds.width_units(),
            plan.confidence,
        );
        let mut post = vec![format!(
            "midpoint {} + noisy shifted sum / max(1, noisy count)",
            shifted.noise.grid.to_f64(&BigInt::from(midpoint))
        )];
        post.extend(clamped.then(|| clamp_note(bounds)));
        Release {
            value: Some(Number::Real(value)),
            grid: Some(grid_info(shifted)),
            bounds: Some(bounds_info(bounds)),
            parts: vec![part("shifted_sum", shifted), part("count", count)],
            post_processing: post,
            ..Release::base(plan, Some(column), scalar_accuracy(plan.confidence, error_bound))
        }
    }

    /// Quantiles chosen by permute-and-flip, each with its share of ε.
    pub fn quantiles(
        plan: &Plan,
        column: String,
        spec: &QuantileSpec,
        eps: &Epsilon,
        chosen: &[f64],
    ) -> Release {
        let beta = plan.confidence.beta();
        let k = spec.candidates.len();
        let quantiles: Vec<QuantileValue> = spec
            .levels
            .iter()
            .zip(chosen)
            .map(|(level, &value)| QuantileValue {
                q: level.to_f64(),
                q_exact: format!("{}/{}", level.numer, level.denom),
                value,
                epsilon: eps.to_f64_up(),
                epsilon_exact: eps.exact_string(),
                score_sensitivity: level.score_sensitivity(plan.neighbours),
                rank_error_bound: quantile::rank_error_bound(level, plan.neighbours, eps, k, beta),
            })
            .collect();
        let worst = quantiles.iter().map(|q| q.rank_error_bound).fold(0.0, f64::max);
        let accuracy = Accuracy {
            confidence: plan.confidence.level(),
            error_bound: worst,
            scope: "rank (rows), per quantile",
        };
        let candidates = &spec.candidates;
        Release {
            value: (chosen.len() == 1).then(|| Number::Real(chosen[0])),
            quantiles: Some(quantiles),
            candidates: Some(CandidateInfo {
                count: k,
                lower: candidates.first(),
                upper: candidates.last(),
                grid: candidates.kind,
            }),
            mechanism: "permute-and-flip",
            ..Release::base(plan, Some(column), accuracy)
        }
    }

    /// Records that the bounds were found privately, in the JSON and in a note for stderr.
    pub fn with_private_bounds(mut self, found: &PrivateBounds) -> Release {
        let (lower, upper) = (found.bounds.lower(), found.bounds.upper());
        let (lo, hi) = (format_number(Number::Real(lower)), format_number(Number::Real(upper)));
        let info = self.bounds.get_or_insert(BoundsInfo {
            lower,
            upper,
            source: "private",
            epsilon: None,
            epsilon_exact: None,
        });
        info.source = "private";
        info.epsilon = Some(found.eps.to_f64_up());
        info.epsilon_exact = Some(found.eps.exact_string());
        self.notes.push(if found.found {
            format!(
                "bounds [{lo}, {hi}] were estimated privately with epsilon {} of {}; \
                 give --lower/--upper to spend all of it on the {}",
                found.eps,
                self.epsilon_exact_decimal(),
                self.query
            )
        } else {
            format!(
                "no range of values was dense enough to find bounds with epsilon {}: used the widest \
                 public bounds [{lo}, {hi}], so the release is very noisy; give --lower/--upper \
                 or a larger --bounds-eps",
                found.eps
            )
        });
        self.post_processing.push(format!("clamping bounds [{lo}, {hi}] chosen privately"));
        self
    }

    fn epsilon_exact_decimal(&self) -> String {
        ledger::parse_exact(&self.epsilon_exact)
            .map_or_else(|| self.epsilon.to_string(), |e| epsilon::decimal(&e))
    }

    /// A variance: (noisy count,) noisy shifted sum and noisy sum of squares, combined and
    /// clamped into [0, h²]; under replace, `count` is None and n is public.
    pub fn variance(
        plan: &Plan,
        column: String,
        spec: &VarianceSpec,
        count: Option<&Noisy<BigInt>>,
        sum: &Noisy<BigInt>,
        squares: &Noisy<BigInt>,
        n: u64,
    ) -> Release {
        let denominator = count.map_or_else(|| BigInt::from(n), |c| c.value.clone());
        let (value, clamped) = spec.release(&sum.value, &squares.value, &denominator);
        // Union bound: each noisy part within its bound at β/parts, all at once with >= 1 − β.
        let beta = plan.confidence.beta() / (2 + count.is_some() as u8) as f64;
        let count_interval = match count {
            Some(c) => Interval::around(
                &c.value,
                c.noise.error_bound_units(beta),
                &BigRational::from_integer(1.into()),
            ),
            None => Interval::point(BigRational::from_integer(BigInt::from(n))),
        };
        let h = BigRational::from_integer(BigInt::from(spec.half_width_units())) * sum.noise.grid.spacing();
        let bound = variance::error_bound(
            &value,
            &count_interval,
            &Interval::around(&sum.value, sum.noise.error_bound_units(beta), &sum.noise.grid.spacing()),
            &Interval::around(
                &squares.value,
                squares.noise.error_bound_units(beta),
                &squares.noise.grid.spacing(),
            ),
            &squares.noise.grid.spacing(),
            &spec.max_variance(),
            &h,
        );
        let midpoint = sum.noise.grid.to_f64(&BigInt::from(spec.midpoint));
        let mut post = vec![match count {
            Some(_) => format!(
                "values shifted by the midpoint {midpoint}; variance = noisy sum of squares / c - \
                 (noisy shifted sum / c)^2 with c = max(1, noisy count)"
            ),
            None => format!(
                "values shifted by the midpoint {midpoint}; variance = noisy sum of squares / n - \
                 (noisy shifted sum / n)^2 with the public row count n = {n}"
            ),
        }];
        post.extend(clamped.then(|| {
            format!(
                "clamped into [0, {}] = [0, ((U-L)/2)^2] (biases a variance near the ends of that range)",
                rational_to_f64_up(&spec.max_variance())
            )
        }));
        let mut parts: Vec<Part> = count.map(|c| part("count", c)).into_iter().collect();
        parts.push(part("shifted_sum", sum));
        parts.push(part("sum_of_squares", squares));
        Release {
            value: Some(Number::Real(value.to_f64().unwrap_or(f64::NAN))),
            grid: Some(grid_info(sum)),
            bounds: Some(bounds_info(&spec.bounds)),
            rows: count.is_none().then_some(n),
            parts,
            post_processing: post,
            ..Release::base(plan, Some(column), scalar_accuracy(plan.confidence, rational_to_f64_up(&bound)))
        }
    }

    /// A histogram: one noisy count per public bin.
    pub fn histogram(plan: &Plan, column: String, bins: BinLabels, noisy: &Noisy<Vec<BigInt>>) -> Release {
        let counts = noisy.value.iter().map(saturating_i128);
        let bins: Vec<BinCount> = match bins {
            BinLabels::Numeric(b) => counts
                .enumerate()
                .map(|(i, count)| {
                    let (lower, upper) = b.edges(i);
                    BinCount { bin: b.label(i), lower: Some(lower), upper: Some(upper), count }
                })
                .collect(),
            BinLabels::Categories(c) => c
                .names()
                .iter()
                .map(String::as_str)
                .chain([OTHER])
                .zip(counts)
                .map(|(name, count)| BinCount { bin: name.to_string(), lower: None, upper: None, count })
                .collect(),
        };
        let accuracy = Accuracy {
            confidence: plan.confidence.level(),
            error_bound: accuracy::single(&noisy.noise, plan.confidence),
            scope: PER_BIN,
        };
        Release {
            bins: Some(bins),
            sensitivity: Some(noisy.noise.sensitivity_value()),
            scale: Some(noisy.noise.scale_value()),
            ..Release::base(plan, Some(column), accuracy)
        }
    }
}

/// The scope of a single value's bound.
pub const VALUE: &str = "value";
/// The scope of a histogram's bound: each bin on its own (a bound for all K at once uses β/K).
pub const PER_BIN: &str = "per bin";

pub fn scalar_accuracy(confidence: Confidence, error_bound: f64) -> Accuracy {
    Accuracy { confidence: confidence.level(), error_bound, scope: VALUE }
}

fn part(name: &'static str, noisy: &Noisy<BigInt>) -> Part {
    Part {
        name,
        value: noisy.noise.grid.to_f64(&noisy.value),
        value_units: noisy.value.to_string(),
        epsilon: noisy.noise.eps.to_f64_up(),
        epsilon_exact: noisy.noise.eps.exact_string(),
        sensitivity: noisy.noise.sensitivity_value(),
        scale: noisy.noise.scale_value(),
        grid: grid_info(noisy),
    }
}

/// One release per public key of `--by`, plus `other`, each with the full ε (parallel
/// composition; see `query::group`).
#[derive(Clone, Debug, Serialize)]
pub struct GroupedRelease {
    pub query: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// The grouping column.
    pub by: String,
    /// ε of every group's release and of the whole (rounded up), and exactly.
    pub epsilon: f64,
    pub epsilon_exact: String,
    pub neighbours: &'static str,
    pub composition: &'static str,
    pub groups: Vec<Group>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSummary>,
}

/// One group's release.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    pub key: String,
    #[serde(flatten)]
    pub release: Release,
}

impl GroupedRelease {
    pub fn new(plan: &Plan, by: String, groups: Vec<Group>) -> GroupedRelease {
        let column = groups.first().and_then(|g| g.release.column.clone());
        GroupedRelease {
            query: plan.query.name(),
            column,
            by,
            epsilon: plan.eps.to_f64_up(),
            epsilon_exact: plan.eps.exact_string(),
            neighbours: plan.neighbours.name(),
            composition: group::composition_note(plan.neighbours),
            groups,
            budget: None,
        }
    }
}

/// What one query publishes: one release, or one per group.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one per query, built once
pub enum Published {
    One(Release),
    Grouped(GroupedRelease),
}

impl Published {
    pub fn query(&self) -> &'static str {
        match self {
            Published::One(r) => r.query,
            Published::Grouped(g) => g.query,
        }
    }
    pub fn column(&self) -> Option<String> {
        match self {
            Published::One(r) => r.column.clone(),
            Published::Grouped(g) => g.column.clone(),
        }
    }
    pub fn set_budget(&mut self, budget: BudgetSummary) {
        match self {
            Published::One(r) => r.budget = Some(budget),
            Published::Grouped(g) => g.budget = Some(budget),
        }
    }
}

fn clamp_note(bounds: &GridBounds) -> String {
    format!(
        "clamped into [{}, {}] (biases the mean towards the bounds)",
        bounds.lower_f64(),
        bounds.upper_f64()
    )
}
