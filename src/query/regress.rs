//! **regress** — the least-squares slope of y on x, cov(x, y)/var(x), for two columns clamped
//! to [Lx, Ux] and [Ly, Uy].
//!
//! The parts are those of `covariance` ([`PairSpec`]) plus the sum of squares of x, with the
//! same exact grids:
//! - add-remove, ε split in five exact fifths: count (Δ 1), shifted sums of x and y (Δ h_x,
//!   h_y), squares of x (Δ q(h_x) ≈ h_x², each square in [0, q(h_x)]), products (Δ p(h_x, h_y)
//!   ≈ h_x·h_y);
//! - replace (n public), four exact quarters: the sums (Δ 2h_x, 2h_y), the squares (Δ q(h_x))
//!   and the products (Δ 2·p(h_x, h_y)).
//!
//! Sequential composition makes the parts ε-DP together, and the slope is post-processing:
//! with c = max(1, noisy count) (or the public n), cov = P̃/c − (S̃_x/c)(S̃_y/c) clamped into
//! [−h_x·h_y, h_x·h_y], var = Q̃/c − (S̃_x/c)² clamped into [G, h_x²], where G, one unit of the
//! squares' grid, is the smallest positive variance the release can state; slope = cov/var.
//! The floor keeps the slope finite when the noisy variance is 0 or negative, which happens when
//! the data are too few for ε (then a warning says the slope is meaningless), and it biases such
//! slopes towards 0 from an undefined value. The accuracy bound ([`accuracy::slope_interval`])
//! is unbounded (null) whenever the variance of x cannot be told apart from 0.
//!
//! [`accuracy::slope_interval`]: crate::query::covariance::accuracy::slope_interval

use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive};
use rand::RngCore;

use crate::data::cell::InvalidPolicy;
use crate::data::source::ColumnRef;
use crate::error::Error;
use crate::numeric::exact::rational_to_f64_up;
use crate::query::covariance::accuracy::{covariance_interval, distance, slope_interval, variance_interval};
use crate::query::covariance::{cells, draw, pair_options, Pair, PairFold, PairSpec};
use crate::query::options::{Options, Setup};
use crate::query::statistic::{Context, Measured, PlanContext, Planned, Statistic};
use crate::report::release::{Number, Release};

/// `dpstat regress --x X --y Y`.
#[derive(Clone, Debug)]
pub struct Regress {
    columns: Pair<ColumnRef>,
    invalid: InvalidPolicy,
    spec: PairSpec,
}

impl Statistic for Regress {
    const KINDS: &'static [&'static str] = &["regress"];
    type Fold = PairFold;

    fn new(_: &str, options: Options, setup: &Setup) -> Result<Regress, Error> {
        let (columns, bounds) = pair_options("regress", &options, setup, ["--x", "--y"])?;
        let spec = PairSpec::new(&bounds, setup.neighbours, setup.mechanism, true)?;
        check_slope_printable(&spec)?;
        Ok(Regress { columns, invalid: options.invalid, spec })
    }

    fn workload_keys(_: &Options) -> Option<&'static [&'static str]> {
        Some(&["column", "lower", "upper", "invalid"])
    }

    fn name(&self) -> &'static str {
        "regress"
    }

    fn column(&self) -> Option<&ColumnRef> {
        Some(&self.columns.x)
    }

    fn columns(&self) -> Vec<(&ColumnRef, &'static str)> {
        vec![(&self.columns.x, "--x"), (&self.columns.y, "--y")]
    }

    fn fold(&self, indices: &[usize]) -> PairFold {
        PairFold::new(self.spec.clone(), cells(indices, self.invalid))
    }

    fn measure(&self, fold: PairFold, cx: &Context, rng: &mut dyn RngCore) -> Result<Measured<Regress>, Error> {
        let spec = &self.spec;
        let drawn = draw(spec, &fold, cx, "regress", rng)?;
        let c = drawn.denominator();
        let (sx, sy) = (drawn.get("shifted_sum_x"), drawn.get("shifted_sum_y"));
        let mx = spec.x_mean(sx, &c);
        let cap = spec.max_covariance();
        let cov = (spec.mean_of(drawn.get("sum_of_products"), &c) - &mx * spec.y_mean(sy, &c))
            .max(-cap.clone())
            .min(cap);
        let Some(squares) = spec.squares else {
            return Err(Error::internal("a regression without the squares of x"));
        };
        let floor = squares.grid.spacing();
        let raw_var = BigRational::from_integer(drawn.get("sum_of_squares_x").clone()) * &floor / &c - &mx * &mx;
        let h = spec.x.half();
        let var = raw_var.clone().max(floor.clone()).min(&h * &h);
        let slope = &cov / &var;
        let beta = cx.confidence.beta() / drawn.parts.len() as f64;
        let box4 = drawn.box4(spec, beta);
        let bound = covariance_interval(&box4, &h, &spec.y.half())
            .zip(variance_interval(&box4, &h))
            .and_then(|(c, v)| slope_interval(&c, &v))
            .map_or(f64::INFINITY, |interval| rational_to_f64_up(&distance(&slope, &interval)));
        let mut post = vec![drawn.shift_note(
            spec,
            "slope = cov / var, cov = noisy sum of products / c - (noisy shifted sum x / c)(noisy shifted sum y / c) \
             clamped into [-((Ux-Lx)/2)((Uy-Ly)/2), ((Ux-Lx)/2)((Uy-Ly)/2)], var = noisy sum of squares x / c - \
             (noisy shifted sum x / c)^2",
        )];
        let mut warnings = vec![];
        if raw_var < floor {
            post.push(format!(
                "the noisy variance of x was below one unit of its grid ({}) and was raised to it",
                rational_to_f64_up(&floor)
            ));
            warnings.push(
                "the noisy variance of x is not positive: the data are too few for this epsilon (or x \
                 barely varies within its bounds), so the slope says nothing; give a larger --eps or more rows"
                    .to_string(),
            );
        } else if raw_var > &h * &h {
            post.push("the noisy variance of x was clamped to ((Ux-Lx)/2)^2".to_string());
        }
        let release = drawn.release(self, cx, spec, bound)?;
        let value = slope.to_f64().filter(|v| v.is_finite()).unwrap_or(if slope.is_negative() { f64::MIN } else { f64::MAX });
        Ok(Measured::Release(Release {
            value: Some(Number::Real(value)),
            post_processing: post,
            warnings,
            ..release
        }))
    }

    fn plan(&self, _: &PlanContext) -> Result<Planned, Error> {
        Err(Error::usage("dpstat plan covers count, sum, mean and histogram; not regress"))
    }
}

/// The slope is at most max|cov| / (the variance's floor G) = h_x·h_y/G in magnitude, and G
/// follows h_x² (its grid), so a range of x far narrower than y's makes that quotient pass
/// f64::MAX: the release would be ±f64::MAX, a number that says nothing. Refused before any
/// data is read, naming the flags; the bound is public (flags and ε only).
fn check_slope_printable(spec: &PairSpec) -> Result<(), Error> {
    let Some(squares) = &spec.squares else { return Ok(()) };
    let largest = spec.max_covariance() / squares.grid.spacing();
    let limit = BigRational::from_float(crate::numeric::bounds::MAX_PRINTABLE_BOUND)
        .ok_or_else(|| Error::internal("the printable limit is finite"))?;
    if largest > limit {
        return Err(Error::usage(format!(
            "regress: with these --lower/--upper the slope could reach ±{:e}, beyond ±{:e} (so that \
             every release fits in a double): the range of --x is too narrow next to that of --y; \
             give x wider bounds, or rescale a column",
            rational_to_f64_up(&largest),
            crate::numeric::bounds::MAX_PRINTABLE_BOUND
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigInt;
    use crate::numeric::bounds::{Bounds, Finite};
    use crate::privacy::noise::Mechanism;
    use crate::privacy::unit::Neighbours;

    fn bounds(l: f64, u: f64) -> Bounds {
        Bounds::new(Finite::from_f64(l).unwrap(), Finite::from_f64(u).unwrap()).unwrap()
    }

    /// The exact parts give the least-squares slope: y = 3x + 1 on x = 1..5.
    #[test]
    fn exact_parts_give_the_slope() {
        let eps = Mechanism::Laplace("1".parse().unwrap());
        let spec = PairSpec::new(&Pair { x: bounds(0.0, 10.0), y: bounds(0.0, 20.0) }, Neighbours::AddRemove, &eps, true)
            .unwrap();
        let parts = spec.aggregate_of((1..=5).map(|x| (x as f64, 3.0 * x as f64 + 1.0)));
        let value = |name: &str| BigInt::from(parts.iter().find(|(n, _)| *n == name).unwrap().1.value);
        let c = BigRational::from_integer(BigInt::from(5));
        let mx = spec.x_mean(&value("shifted_sum_x"), &c);
        let cov = spec.mean_of(&value("sum_of_products"), &c) - &mx * spec.y_mean(&value("shifted_sum_y"), &c);
        let squares = spec.squares.unwrap();
        let var = BigRational::from_integer(value("sum_of_squares_x")) * squares.grid.spacing() / &c - &mx * &mx;
        assert_eq!(var, BigRational::from_integer(BigInt::from(2)));
        assert_eq!(cov / var, BigRational::from_integer(BigInt::from(3)));
    }

    /// Issue 24, item 4: x in [0, 1e-300] next to y in [0, 200000] would release ±f64::MAX;
    /// refused from the bounds alone. Ordinary bounds, and narrow ones on y, pass.
    #[test]
    fn slopes_beyond_a_double_are_refused_from_the_bounds() {
        let eps = Mechanism::Laplace("1".parse().unwrap());
        let spec = |x: Bounds, y: Bounds| PairSpec::new(&Pair { x, y }, Neighbours::AddRemove, &eps, true);
        let wide = spec(bounds(0.0, 1e-300), bounds(0.0, 200000.0)).unwrap();
        let err = check_slope_printable(&wide).unwrap_err();
        assert!(err.message().contains("--x") && err.message().contains("--lower/--upper"), "{err}");
        assert!(check_slope_printable(&spec(bounds(0.0, 100.0), bounds(0.0, 200000.0)).unwrap()).is_ok());
        assert!(check_slope_printable(&spec(bounds(0.0, 100.0), bounds(0.0, 1e-300)).unwrap()).is_ok());
    }
}
