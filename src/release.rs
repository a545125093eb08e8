//! What becomes public: the noisy value(s) and the facts a reader needs to interpret them
//! (ε charged, privacy unit, sensitivity, scale, grid, accuracy). Built only from noisy
//! releases and flags; the exact aggregate never reaches this struct, and neither does the
//! true row count under add-remove.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::ToPrimitive;
use serde::Serialize;

use crate::accuracy;
use crate::clamp::{GridBounds, OTHER};
use crate::cli::Confidence;
use crate::epsilon::rational_to_f64_up;
use crate::ledger::BudgetSummary;
use crate::mechanism::Noisy;
use crate::plan::{BinSpec, Plan};
use crate::query::variance::{self, Interval, VarianceSpec};
use crate::query::{group, mean};

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
    /// The clamping bounds as used: the flags snapped outwards onto the grid.
    pub lower: f64,
    pub upper: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Accuracy {
    pub confidence: f64,
    /// |release − true clamped statistic| <= error_bound with probability >= confidence.
    pub error_bound: f64,
    /// "value", or "per bin" for histograms (a simultaneous bound over K bins uses β/K).
    pub scope: &'static str,
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

const MECHANISM: &str = "discrete-laplace";

fn grid_info(noisy: &Noisy<impl Sized>) -> GridInfo {
    GridInfo { exponent: noisy.grid.exponent(), spacing: noisy.grid.to_f64(&BigInt::from(1)) }
}

fn bounds_info(bounds: &GridBounds) -> BoundsInfo {
    BoundsInfo { lower: bounds.lower_f64(), upper: bounds.upper_f64() }
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
        }
    }

    /// A count: the noisy integer.
    pub fn count(plan: &Plan, noisy: &Noisy<BigInt>) -> Release {
        let accuracy = scalar_accuracy(plan.confidence, noisy.error_bound(plan.confidence.beta()));
        Release {
            value: Some(Number::Integer(saturating_i128(&noisy.value))),
            sensitivity: Some(noisy.sensitivity_value()),
            scale: Some(noisy.scale_value()),
            ..Release::base(plan, None, accuracy)
        }
    }

    /// A sum: the noisy grid multiple.
    pub fn sum(plan: &Plan, column: String, noisy: &Noisy<BigInt>, bounds: &GridBounds) -> Release {
        let accuracy = scalar_accuracy(plan.confidence, noisy.error_bound(plan.confidence.beta()));
        Release {
            value: Some(Number::Real(noisy.grid.to_f64(&noisy.value))),
            value_units: Some(noisy.value.to_string()),
            sensitivity: Some(noisy.sensitivity_value()),
            scale: Some(noisy.scale_value()),
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
        let n_rational = BigRational::from_integer(BigInt::from(n));
        let per_row = |units: f64| {
            rational_to_f64_up(&(BigRational::from_float(units).unwrap_or_default() / &n_rational))
        };
        let accuracy =
            scalar_accuracy(plan.confidence, per_row(noisy_sum.error_bound(plan.confidence.beta())));
        let mut post = vec![format!("noisy sum divided by the public row count n = {n}")];
        post.extend(clamped.then(|| clamp_note(bounds)));
        Release {
            value: Some(Number::Real(value)),
            value_units: Some(noisy_sum.value.to_string()),
            sensitivity: Some(per_row(noisy_sum.sensitivity_value())),
            scale: Some(per_row(noisy_sum.scale_value())),
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
        let half_beta = plan.confidence.beta() / 2.0;
        let bound_units = accuracy::mean_add_remove_bound(
            &shifted.value,
            &count.value,
            shifted.error_bound_units(half_beta),
            count.error_bound_units(half_beta),
            bounds.width_units(),
        );
        let error_bound = rational_to_f64_up(&(bound_units * shifted.grid.spacing()));
        let mut post = vec![format!(
            "midpoint {} + noisy shifted sum / max(1, noisy count)",
            shifted.grid.to_f64(&BigInt::from(midpoint))
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
            Some(c) => {
                Interval::around(&c.value, c.error_bound_units(beta), &BigRational::from_integer(1.into()))
            }
            None => Interval::point(BigRational::from_integer(BigInt::from(n))),
        };
        let h = BigRational::from_integer(BigInt::from(spec.half_width_units())) * sum.grid.spacing();
        let bound = variance::error_bound(
            &value,
            &count_interval,
            &Interval::around(&sum.value, sum.error_bound_units(beta), &sum.grid.spacing()),
            &Interval::around(&squares.value, squares.error_bound_units(beta), &squares.grid.spacing()),
            &squares.grid.spacing(),
            &spec.max_variance(),
            &h,
        );
        let midpoint = sum.grid.to_f64(&BigInt::from(spec.midpoint));
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
    pub fn histogram(plan: &Plan, column: String, bins: &BinSpec, noisy: &Noisy<Vec<BigInt>>) -> Release {
        let counts = noisy.value.iter().map(saturating_i128);
        let bins: Vec<BinCount> = match bins {
            BinSpec::Numeric(b) => counts
                .enumerate()
                .map(|(i, count)| {
                    let (lower, upper) = b.edges(i);
                    BinCount { bin: b.label(i), lower: Some(lower), upper: Some(upper), count }
                })
                .collect(),
            BinSpec::Categories(c) => c
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
            error_bound: noisy.error_bound(plan.confidence.beta()),
            scope: "per bin",
        };
        Release {
            bins: Some(bins),
            sensitivity: Some(noisy.sensitivity_value()),
            scale: Some(noisy.scale_value()),
            ..Release::base(plan, Some(column), accuracy)
        }
    }
}

fn part(name: &'static str, noisy: &Noisy<BigInt>) -> Part {
    Part {
        name,
        value: noisy.grid.to_f64(&noisy.value),
        value_units: noisy.value.to_string(),
        epsilon: noisy.eps.to_f64_up(),
        epsilon_exact: noisy.eps.exact_string(),
        sensitivity: noisy.sensitivity_value(),
        scale: noisy.scale_value(),
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

fn scalar_accuracy(confidence: Confidence, error_bound: f64) -> Accuracy {
    Accuracy { confidence: confidence.level(), error_bound, scope: "value" }
}

fn clamp_note(bounds: &GridBounds) -> String {
    format!(
        "clamped into [{}, {}] (biases the mean towards the bounds)",
        bounds.lower_f64(),
        bounds.upper_f64()
    )
}
