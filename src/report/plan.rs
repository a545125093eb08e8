//! `dpstat plan`'s report: the [`Noise`] block a release would state, computed without data,
//! with what was solved for and what the plan assumes.

use serde::Serialize;

use crate::numeric::format::real as show;
use crate::report::release::{Noise, PER_BIN};

/// The plan as printed (`--format json` serialises this).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The planned query.
    pub plan: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// "error_bound" (given --eps) or "epsilon" (given --error).
    pub solved_for: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_error: Option<f64>,
    /// What a release at the planned ε would state.
    #[serde(flatten)]
    pub noise: Noise,
    /// ε as the exact decimal to pass to --eps.
    pub epsilon_decimal: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<usize>,
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

/// The plan as aligned `key value` lines.
pub fn render_text(r: &Report) -> String {
    let mut lines: Vec<(&str, String)> = vec![];
    let what = match (&r.column, r.plan) {
        (Some(c), q) => format!("{q} of {c}"),
        (None, q) => q.to_string(),
    };
    lines.push((
        "plan",
        format!("{what}, {} (no data read, no noise drawn, no budget charged)", r.noise.neighbours),
    ));
    if let Some(t) = r.target_error {
        lines.push((
            "target",
            format!("error at most {} at confidence {}", show(t), r.noise.accuracy.confidence),
        ));
    }
    lines.push(("epsilon", r.epsilon_decimal.clone()));
    if let Some(m) = &r.method {
        lines.push(("", m.clone()));
    }
    if let Some(b) = &r.noise.bounds {
        lines.push(("bounds", format!("[{}, {}] as snapped to the grid", show(b.lower), show(b.upper))));
    }
    if let Some(k) = r.bins {
        lines.push(("bins", k.to_string()));
    }
    if let Some(n) = r.noise.rows {
        lines.push(("rows", format!("{n} (assumed, --rows)")));
    }
    if let Some(s) = r.noise.sensitivity {
        lines.push(("sensitivity", show(s)));
    }
    if let Some(s) = r.noise.scale {
        let grid = r.noise.grid.as_ref().map_or(String::new(), |g| format!(" on a 2^{} grid", g.exponent));
        lines.push(("noise scale", format!("{} = sensitivity / epsilon, discrete Laplace{grid}", show(s))));
    }
    if let (Some(s), Some(sigma)) = (r.noise.l2_sensitivity, r.noise.sigma) {
        lines.push(("sensitivity", format!("{} (L2)", show(s))));
        let grid = r.noise.grid.as_ref().map_or(String::new(), |g| format!(" on a 2^{} grid", g.exponent));
        lines.push((
            "noise sigma",
            format!("{} = L2 sensitivity / sqrt(2 rho), discrete Gaussian{grid}", show(sigma)),
        ));
    }
    for p in &r.noise.parts {
        let spend = match (p.epsilon, p.rho) {
            (Some(e), _) => format!("epsilon {}", show(e)),
            (None, Some(rho)) => format!("rho {}", show(rho)),
            (None, None) => String::new(),
        };
        let width = match (p.scale, p.sigma) {
            (Some(s), _) => format!("scale {}", show(s)),
            (None, Some(s)) => format!("sigma {}", show(s)),
            (None, None) => String::new(),
        };
        lines.push((
            "part",
            format!(
                "{}: {spend}, sensitivity {}, {width}, bound ±{} at β/2",
                p.name,
                show(p.sensitivity_read()),
                show(p.error_bound.unwrap_or(f64::NAN))
            ),
        ));
    }
    let per_bin = if r.noise.accuracy.scope == PER_BIN { " per bin" } else { "" };
    lines.push((
        "error bound",
        format!(
            "±{}{per_bin}: |release − true value| <= {} with probability >= {}",
            show(r.noise.accuracy.error_bound),
            show(r.noise.accuracy.error_bound),
            r.noise.accuracy.confidence
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
