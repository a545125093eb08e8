//! `dpstat plan`'s report: the [`Noise`] block a release would state, computed without data,
//! with what was solved for and what the plan assumes.

use serde::Serialize;

use crate::numeric::format::{bound_up, real as show, significant, Rounding};
use crate::privacy::accuracy::Confidence;
use crate::privacy::contribution::Unit;
use crate::privacy::delta::Delta;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::noise::Mechanism;
use crate::privacy::unit::Neighbours;
use crate::report::figure::{percent, rank_rows, Style};
use crate::report::release::{Noise, PER_BIN, RANK};

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
    /// With `--delta`: Laplace at ε against Gaussian at the same (ε, δ).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// With `--max-rows-per-id`: the plan of a release per person at each K.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_person: Vec<PerPerson>,
    pub reads_data: bool,
    pub draws_noise: bool,
    pub charges_ledger: bool,
}

/// A release per person at one K (`--privacy-id` with `--max-rows-per-id K`): its ε (the
/// planned one, or the one solved for) and the error bound of its noise. Rows a person has
/// beyond K are dropped, a bias that depends on the data and that no plan can state.
#[derive(Clone, Debug, Serialize)]
pub struct PerPerson {
    pub max_rows_per_id: u32,
    /// Planned at what `--max-rows-per-id auto` leaves the release (nine tenths of ε), had it
    /// chosen this K.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub auto: bool,
    pub epsilon_decimal: String,
    pub error_bound: f64,
}

/// What a plan per person adds to the text, under its table.
pub const PER_PERSON_NOTE: &str = "the noise alone: a larger K keeps more of the rows of people \
     who have many (less bias, which depends on the data and which no plan can state) and adds noise \
     in proportion; a mean's --rows is the rows kept (at most K per person, so persons at K = 1), \
     taken as the same at every K, which overstates the bound at larger K";

/// Laplace noise at ε against Gaussian noise at the largest ρ that is (ε, δ)-DP: both
/// releases would be (ε, δ)-DP, and the one with the smaller bound gives less error.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub epsilon: f64,
    pub epsilon_exact: String,
    pub delta: f64,
    pub delta_exact: String,
    /// δ as typed (an exact decimal), for text.
    #[serde(skip)]
    pub delta_shown: String,
    /// The Gaussian release's ρ (None when no positive ρ converts to ε at δ).
    pub rho: Option<f64>,
    pub rho_exact: Option<String>,
    pub laplace_error_bound: f64,
    pub gaussian_error_bound: Option<f64>,
    /// "laplace", "gaussian", or "equal".
    pub less_error: &'static str,
}

impl Comparison {
    pub fn new(eps: &Epsilon, delta: &Delta, laplace: f64, gaussian: Option<(f64, Mechanism)>) -> Comparison {
        let rho = gaussian.as_ref().and_then(|(_, m)| match m {
            Mechanism::Gaussian { rho, .. } => Some(rho.clone()),
            Mechanism::Laplace(_) => None,
        });
        let gaussian = gaussian.map(|(bound, _)| bound);
        Comparison {
            epsilon: eps.to_f64_up(),
            epsilon_exact: eps.exact_string(),
            delta: delta.to_f64_up(),
            delta_exact: delta.exact_string(),
            delta_shown: delta.to_string(),
            rho: rho.as_ref().map(|r| r.to_f64_up()),
            rho_exact: rho.as_ref().map(|r| r.exact_string()),
            laplace_error_bound: laplace,
            gaussian_error_bound: gaussian,
            less_error: less_error(Some(laplace), gaussian),
        }
    }
}

/// Which of two bounds is smaller ("laplace", "gaussian", "equal"; "unknown" without both).
fn less_error(laplace: Option<f64>, gaussian: Option<f64>) -> &'static str {
    match (laplace, gaussian) {
        (Some(l), Some(g)) if g < l => "gaussian",
        (Some(l), Some(g)) if l < g => "laplace",
        (Some(_), Some(_)) => "equal",
        (Some(_), None) => "laplace",
        _ => "unknown",
    }
}

/// One workload query's bound under each noise (or why it cannot be planned).
#[derive(Clone, Debug, Serialize)]
pub struct QueryComparison {
    pub name: String,
    pub query: &'static str,
    pub laplace_error_bound: Option<f64>,
    pub gaussian_error_bound: Option<f64>,
    pub less_error: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_planned: Option<String>,
}

impl QueryComparison {
    pub fn new(
        name: &str,
        query: &'static str,
        laplace: Result<f64, String>,
        gaussian: Result<f64, String>,
    ) -> QueryComparison {
        let not_planned = laplace.as_ref().err().or(gaussian.as_ref().err()).cloned();
        let (laplace, gaussian) = (laplace.ok(), gaussian.ok());
        QueryComparison {
            name: name.to_string(),
            query,
            laplace_error_bound: laplace,
            gaussian_error_bound: gaussian,
            less_error: if not_planned.is_some() { "unknown" } else { less_error(laplace, gaussian) },
            not_planned,
        }
    }
}

/// `dpstat plan run`: every query's bound under each noise at the workload's (ε, δ).
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadReport {
    pub plan: &'static str,
    pub workload: String,
    pub neighbours: &'static str,
    /// The workload's privacy unit: with a person, every planned bound is that of the noise
    /// drawn for one person's K rows (its scale K times a row's).
    #[serde(flatten)]
    pub unit: Unit,
    pub confidence: f64,
    pub epsilon: f64,
    pub epsilon_exact: String,
    pub delta: f64,
    pub delta_exact: String,
    #[serde(skip)]
    pub delta_shown: String,
    /// The total ρ of the Gaussian version (split among the queries as ε is).
    pub rho: f64,
    pub rho_exact: String,
    pub queries: Vec<QueryComparison>,
    /// How many planned queries each noise gives less error for.
    pub gaussian_wins: usize,
    pub laplace_wins: usize,
    /// "gaussian" or "laplace" when it wins for every planned query; else "mixed".
    pub less_error: &'static str,
    pub reads_data: bool,
    pub draws_noise: bool,
    pub charges_ledger: bool,
}

impl WorkloadReport {
    pub fn new(
        workload: String,
        neighbours: Neighbours,
        confidence: Confidence,
        eps: &Epsilon,
        gaussian: &Mechanism,
        queries: Vec<QueryComparison>,
    ) -> WorkloadReport {
        let (rho, delta) = match gaussian {
            Mechanism::Gaussian { rho, delta } => (rho.clone(), delta.clone()),
            Mechanism::Laplace(_) => unreachable!("the compared mechanism is Gaussian"),
        };
        let wins = |who: &str| queries.iter().filter(|q| q.less_error == who).count();
        let (gaussian_wins, laplace_wins) = (wins("gaussian"), wins("laplace"));
        let planned = queries.iter().filter(|q| q.not_planned.is_none()).count();
        let less_error = match (gaussian_wins, laplace_wins) {
            (g, _) if planned > 0 && g == planned => "gaussian",
            (_, l) if planned > 0 && l == planned => "laplace",
            _ => "mixed",
        };
        WorkloadReport {
            plan: "workload",
            workload,
            neighbours: neighbours.name(),
            unit: Unit::Row,
            confidence: confidence.level(),
            epsilon: eps.to_f64_up(),
            epsilon_exact: eps.exact_string(),
            delta: delta.to_f64_up(),
            delta_exact: delta.exact_string(),
            delta_shown: delta.to_string(),
            rho: rho.to_f64_up(),
            rho_exact: rho.exact_string(),
            queries,
            gaussian_wins,
            laplace_wins,
            less_error,
            reads_data: false,
            draws_noise: false,
            charges_ledger: false,
        }
    }
}

/// The workload comparison as aligned text: one line per query.
pub fn render_workload(r: &WorkloadReport, style: Style) -> String {
    let shown = Shown(style.rounding());
    let mut text = format!(
        "plan        workload {}, {} (no data read, no noise drawn, no budget charged)\n\
         compare     laplace at epsilon {} against gaussian at rho {} (its (epsilon, delta) = ({}, {})), \
         each query at its share; bounds at confidence {}\n",
        r.workload,
        r.neighbours,
        show(r.epsilon),
        short(r.rho),
        show(r.epsilon),
        r.delta_shown,
        r.confidence
    );
    if let (Some(line), Unit::Person { factor, .. }) = (r.unit.line(), &r.unit) {
        text.push_str(&format!(
            "unit        {line}: each query's noise is for {factor} rows of one person (its scale {factor} \
             times a row's), and its bound with it\n"
        ));
    }
    let bound = |b: Option<f64>| b.map_or("-".to_string(), |b| format!("±{}", shown.bound(b)));
    let mut rows: Vec<[String; 5]> =
        vec![["query".into(), "kind".into(), "laplace".into(), "gaussian".into(), "less error".into()]];
    for q in &r.queries {
        let verdict = match &q.not_planned {
            Some(why) => format!("not planned: {why}"),
            None => q.less_error.to_string(),
        };
        rows.push([
            q.name.clone(),
            q.query.to_string(),
            bound(q.laplace_error_bound),
            bound(q.gaussian_error_bound),
            verdict,
        ]);
    }
    let widths: Vec<usize> =
        (0..4).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for row in &rows {
        let mut line = String::from("  ");
        for (cell, w) in row.iter().zip(&widths) {
            line.push_str(&format!("{cell:<w$}  ", w = *w));
        }
        line.push_str(&row[4]);
        text.push_str(line.trim_end());
        text.push('\n');
    }
    let planned = r.queries.iter().filter(|q| q.not_planned.is_none()).count();
    let verdict = match r.less_error {
        _ if planned == 0 => "no query could be planned (see why above)".to_string(),
        "mixed" => {
            let equal = planned - r.gaussian_wins - r.laplace_wins;
            let ties = if equal > 0 { format!(", both the same for {equal}") } else { String::new() };
            format!(
                "gaussian gives less error for {} and laplace for {}{ties}, of {planned} planned queries",
                r.gaussian_wins, r.laplace_wins
            )
        }
        who => format!("{who} gives less error for every one of the {planned} planned queries"),
    };
    text.push_str(&format!("verdict     {verdict}\n"));
    text
}

/// ρ for text, to 4 significant digits (JSON has it exactly): `0.0243` for 0.024304….
fn short(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return show(x);
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{x:.digits$}");
    let text =
        if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text };
    format!("~{text}")
}

/// How a plan prints the numbers it derives, as a release prints its own (DESIGN §4.1): an
/// error bound rounded up to two significant digits (a rank bound to whole rows), a noise scale
/// or a part's share to four, marked `~` where that moved it; N digits with `--digits N`, every
/// number in full with `--full-precision`. The flags' own numbers (ε, bounds, sensitivities)
/// print as given.
#[derive(Clone, Copy)]
struct Shown(Rounding);

impl Shown {
    /// A bound in the statistic's units.
    fn bound(&self, x: f64) -> String {
        bound_up(x, self.0)
    }

    /// A bound of a plan with accuracy scope `scope`: in rows of rank for a quantile.
    fn of(&self, scope: &str, x: f64) -> String {
        if scope == RANK && self.0 != Rounding::Full {
            rank_rows(x)
        } else {
            self.bound(x)
        }
    }

    /// A number derived from the flags that is not a bound (a scale, a part's ε).
    fn approx(&self, x: f64) -> String {
        let digits = match self.0 {
            Rounding::Full => return show(x),
            Rounding::Significant(n) => n,
            Rounding::Accuracy => 4,
        };
        let (text, moved) = significant(x, digits, false);
        if moved == 0.0 {
            text
        } else {
            format!("~{text}")
        }
    }
}

/// The plan as aligned `key value` lines.
pub fn render_text(r: &Report, style: Style) -> String {
    let shown = Shown(style.rounding());
    let mut lines = head_lines(r);
    lines.extend(input_lines(r));
    lines.extend(noise_lines(r, shown));
    lines.push(("error bound", error_bound_line(r, shown)));
    lines.extend(per_person_lines(r, shown));
    for a in &r.assumptions {
        lines.push(("assumes", a.clone()));
    }
    for w in &r.warnings {
        lines.push(("warning", w.clone()));
    }
    if let Some(c) = &r.comparison {
        lines.push(("compare", compare_line(c, shown)));
    }
    let mut text = String::new();
    for (key, value) in lines {
        text.push_str(&format!("{key:<12} {value}\n"));
    }
    text
}

/// The text's first lines: what is planned, the error it targets when solving for ε, and the ε
/// (with ρ, when it was converted, and how it was found).
fn head_lines(r: &Report) -> Vec<(&'static str, String)> {
    let mut lines = vec![];
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
            format!(
                "error at most {}{} at confidence {}",
                show(t),
                if r.noise.accuracy.scope == RANK { " rows of rank" } else { "" },
                r.noise.accuracy.confidence
            ),
        ));
    }
    lines.push(("epsilon", r.epsilon_decimal.clone()));
    if let (Some(rho), Some(delta)) = (r.noise.guarantee.rho, &r.noise.conversion) {
        lines.push((
            "rho",
            format!(
                "{} (zCDP): the largest whose (epsilon, delta) is at most (epsilon, {delta}); exactly {}",
                short(rho),
                r.noise.guarantee.rho_exact.as_deref().unwrap_or_default()
            ),
        ));
    }
    if let Some(m) = &r.method {
        lines.push(("", m.clone()));
    }
    lines
}

/// The numbers the plan is given or reads off its flags (bounds, bins, rows, sensitivity), in
/// full: only what it derives is rounded ([`Shown`]).
fn input_lines(r: &Report) -> Vec<(&'static str, String)> {
    let mut lines = vec![];
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
    lines
}

/// The noise a release would draw: its scale (Laplace) or σ (Gaussian), and each part's
/// spend, width and bound when the release draws several.
fn noise_lines(r: &Report, shown: Shown) -> Vec<(&'static str, String)> {
    let mut lines = vec![];
    let grid = r.noise.grid.as_ref().map_or(String::new(), |g| format!(" on a 2^{} grid", g.exponent));
    if let Some(s) = r.noise.scale {
        lines.push((
            "noise scale",
            format!("{} = sensitivity / epsilon, discrete Laplace{grid}", shown.approx(s)),
        ));
    }
    if let (Some(s), Some(sigma)) = (r.noise.l2_sensitivity, r.noise.sigma) {
        lines.push(("sensitivity", format!("{} (L2)", show(s))));
        lines.push((
            "noise sigma",
            format!("{} = L2 sensitivity / sqrt(2 rho), discrete Gaussian{grid}", shown.approx(sigma)),
        ));
    }
    let parts = r.noise.parts.len();
    for p in &r.noise.parts {
        let spend = match (p.epsilon, p.rho) {
            (Some(e), _) => format!("epsilon {}", shown.approx(e)),
            (None, Some(rho)) => format!("rho {}", shown.approx(rho)),
            (None, None) => String::new(),
        };
        let width = match (p.scale, p.sigma) {
            (Some(s), _) => format!("scale {}", shown.approx(s)),
            (None, Some(s)) => format!("sigma {}", shown.approx(s)),
            (None, None) => String::new(),
        };
        lines.push((
            "part",
            format!(
                "{}: {spend}, sensitivity {}, {width}, bound ±{} at β/{parts}",
                p.name,
                show(p.sensitivity_read()),
                shown.bound(p.error_bound.unwrap_or(f64::NAN))
            ),
        ));
    }
    lines
}

/// The error bound and what it promises: on the value, or on the rank for a quantile.
fn error_bound_line(r: &Report, shown: Shown) -> String {
    let bound = shown.of(r.noise.accuracy.scope, r.noise.accuracy.error_bound);
    let confidence = r.noise.accuracy.confidence;
    match r.noise.accuracy.scope {
        RANK => format!(
            "±{bound} rows of rank per quantile: the released candidate's rank is within {bound} rows \
             of the best candidate's with probability >= {confidence}"
        ),
        scope => {
            let per_bin = if scope == PER_BIN { " per bin" } else { "" };
            format!("±{bound}{per_bin}: |release − true value| <= {bound} with probability >= {confidence}")
        }
    }
}

/// With `--max-rows-per-id`: one line per K (its bound, and its ε when solving for it), then
/// [`PER_PERSON_NOTE`].
fn per_person_lines(r: &Report, shown: Shown) -> Vec<(&'static str, String)> {
    let mut lines = vec![];
    for p in &r.per_person {
        let bound = shown.of(r.noise.accuracy.scope, p.error_bound);
        let eps =
            if r.target_error.is_some() { format!(", epsilon {}", p.epsilon_decimal) } else { String::new() };
        let rows =
            if p.max_rows_per_id == 1 { "1 row".to_string() } else { format!("{} rows", p.max_rows_per_id) };
        let auto = if p.auto { " (auto's choice, at 9/10 of epsilon)" } else { "" };
        lines.push(("per person", format!("at most {rows} each{auto}{eps}: ±{bound}")));
    }
    if !r.per_person.is_empty() {
        lines.push(("", PER_PERSON_NOTE.to_string()));
    }
    lines
}

/// With `--delta`: both noises' bounds at the same (ε, δ), and which gives less error.
fn compare_line(c: &Comparison, shown: Shown) -> String {
    let gaussian = match (c.gaussian_error_bound, c.rho) {
        (Some(b), Some(rho)) => format!("gaussian ±{} (rho {})", shown.bound(b), short(rho)),
        _ => "gaussian: no positive rho at this (epsilon, delta)".to_string(),
    };
    let verdict = match c.less_error {
        "equal" => "both give the same bound".to_string(),
        who => format!("{who} gives less error"),
    };
    format!(
        "at (epsilon {}, delta {}): laplace ±{}, {gaussian}: {verdict}",
        show(c.epsilon),
        c.delta_shown,
        shown.bound(c.laplace_error_bound)
    )
}

/// `dpstat plan QUERY --format csv`: one header line and the plan as one row, with one more
/// row per K of `--max-rows-per-id` (its ε and bound); every number in full, as JSON has it
/// (the text rounds them, `Shown`).
/// The plan's method, assumptions and warnings are notes for stderr ([`csv_notes`]).
pub fn render_csv(r: &Report) -> anyhow::Result<Vec<u8>> {
    let percent = percent(r.noise.accuracy.confidence);
    let opt = |x: Option<f64>| x.map_or_else(String::new, show);
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record([
        "plan".to_string(),
        "column".into(),
        "neighbours".into(),
        "mechanism".into(),
        "max_rows_per_id".into(),
        "epsilon".into(),
        "rho".into(),
        "lower".into(),
        "upper".into(),
        "bins".into(),
        "rows".into(),
        "sensitivity".into(),
        "scale".into(),
        "l2_sensitivity".into(),
        "sigma".into(),
        "scope".into(),
        format!("error({percent}%)"),
        format!("gaussian_error({percent}%)"),
        "less_error".into(),
    ])?;
    let n = &r.noise;
    let row = |k: String, eps: String, error: f64, compared: bool| -> Vec<String> {
        let c = r.comparison.as_ref().filter(|_| compared);
        vec![
            r.plan.to_string(),
            r.column.clone().unwrap_or_default(),
            n.neighbours.to_string(),
            n.mechanism.to_string(),
            k,
            eps,
            n.guarantee.rho_exact.clone().unwrap_or_default(),
            opt(n.bounds.as_ref().map(|b| b.lower)),
            opt(n.bounds.as_ref().map(|b| b.upper)),
            r.bins.map_or_else(String::new, |b| b.to_string()),
            n.rows.map_or_else(String::new, |rows| rows.to_string()),
            opt(n.sensitivity),
            opt(n.scale),
            opt(n.l2_sensitivity),
            opt(n.sigma),
            n.accuracy.scope.to_string(),
            show(error),
            opt(c.and_then(|c| c.gaussian_error_bound)),
            c.map_or_else(String::new, |c| c.less_error.to_string()),
        ]
    };
    writer.write_record(row(String::new(), r.epsilon_decimal.clone(), n.accuracy.error_bound, true))?;
    for p in &r.per_person {
        let eps =
            if r.target_error.is_some() { p.epsilon_decimal.clone() } else { r.epsilon_decimal.clone() };
        writer.write_record(row(p.max_rows_per_id.to_string(), eps, p.error_bound, false))?;
    }
    writer.into_inner().map_err(|e| anyhow::anyhow!("writing CSV: {e}"))
}

/// The lines of a plan's text that are not its numbers (method, parts, assumptions, warnings),
/// for stderr under `--format csv`.
pub fn csv_notes(r: &Report) -> Vec<String> {
    let mut notes: Vec<String> = r.method.iter().cloned().collect();
    if !r.per_person.is_empty() {
        notes.push(format!("per person: {PER_PERSON_NOTE}"));
    }
    notes.extend(r.assumptions.iter().map(|a| format!("assumes {a}")));
    notes.extend(r.warnings.iter().map(|w| format!("warning: {w}")));
    notes
}

/// `dpstat plan run --format csv`: one row per query with both bounds as numbers (empty where
/// a query could not be planned, and why in `less_error`); the lines around the text's table
/// are notes for stderr ([`workload_notes`]).
pub fn render_workload_csv(r: &WorkloadReport) -> anyhow::Result<Vec<u8>> {
    let percent = percent(r.confidence);
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record([
        "query".to_string(),
        "kind".into(),
        format!("laplace_error({percent}%)"),
        format!("gaussian_error({percent}%)"),
        "less_error".into(),
    ])?;
    let bound = |b: Option<f64>| b.map_or_else(String::new, show);
    for q in &r.queries {
        let verdict = match &q.not_planned {
            Some(why) => format!("not planned: {why}"),
            None => q.less_error.to_string(),
        };
        writer.write_record([
            q.name.clone(),
            q.query.to_string(),
            bound(q.laplace_error_bound),
            bound(q.gaussian_error_bound),
            verdict,
        ])?;
    }
    writer.into_inner().map_err(|e| anyhow::anyhow!("writing CSV: {e}"))
}

/// The lines of the workload plan's text besides its table.
pub fn workload_notes(r: &WorkloadReport) -> Vec<String> {
    render_workload(r, Style::default())
        .lines()
        .filter(|l| !l.starts_with("  "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}
