//! A query of GoogleSQL's differential-privacy subset, translated into the workload file that
//! `dpstat run` executes: the one planner. Everything outside the subset is refused here, before
//! any data is read or budget charged, with one line naming the construct and what to write
//! instead.
//!
//! | SQL | workload |
//! |---|---|
//! | `OPTIONS(epsilon = E)` | `epsilon = "E"`, split evenly between the aggregates (no `share`) |
//! | `privacy_unit_column = ID` | `privacy_id = "ID"` |
//! | `max_groups_contributed = G` | with GROUP BY `max_groups_per_id = G` (default 1) and `max_rows_per_group = K_g` (`rows_per_group`: a public rule on the select list); without, `max_rows_per_id = K_g` |
//! | `max_rows_contributed = K` (ZetaSQL's) | `max_rows_per_id = K` (K rows of each person in all) |
//! | `delta = D` | with public groups, not spent (pure ε-DP); without, `delta`: the selection's |
//! | `COUNT(*)`, `COUNT(col)` | `kind = "count"` (`col`: `where` `col is not empty`); `(0, U)` bounds are K_g = U |
//! | `SUM(col, contribution_bounds_per_group => (L, U))` | `kind = "sum"`; per person `total_per_id = [L, U]` (each person's total in a group clamped), else `lower`, `upper` (each row) |
//! | `AVG(col, … => (L, U))` | `kind = "mean"`, `lower`, `upper`; per person `average_per_id = true` (the mean of per-person averages) |
//! | `PERCENTILE_CONT(col, q[, … => (L, U)])` | `kind = "quantile"`, `q`, bounds if given |
//! | `WHERE a AND b` | `where = ["a", "b"]` |
//! | `GROUP BY key` with `--keys` or `WHERE key IN (…)` | `by`, `keys`, `closed = true` and the filter `key in …` |
//! | `GROUP BY key` without public keys (needs `delta`) | `by`, `discover = true`: the workload's one selection of keys |
//!
//! SUM, AVG and PERCENTILE_CONT skip what SQL's do (NULL, NaN: `invalid = "skip"`), and the
//! group key's list is closed, as BigQuery releases only the public groups it is given.
//! Without public keys the groups are found in the data, as BigQuery does by default.

use sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr,
    ObjectNamePart, Select, SelectItem, SetExpr, Statement, TableFactor, UnaryOperator, Value,
};
use sqlparser::dialect::BigQueryDialect;
use sqlparser::parser::Parser;

use crate::cmd::sql::clause::{self, RECURSION_LIMIT};
use crate::error::{shown, Error};
use crate::numeric::list;
use crate::privacy::contribution::MAX_BOUND;

/// A query translated: its FROM, the workload file's text, and notes for stderr.
#[derive(Debug)]
pub struct Translation {
    /// The FROM table as written (its parts joined by `.`): a path, `stdin`, `-`, or a name
    /// bound by `--table` or by FILE arguments.
    pub table: String,
    /// The workload, as `dpstat run` reads it.
    pub workload: String,
    pub notes: Vec<String>,
}

/// A refusal: the construct, and what to write instead.
fn refuse(construct: &str, instead: &str) -> Error {
    Error::usage(format!("{construct} is outside dpstat sql's subset: {instead}"))
}

/// contribution_bounds_per_group's (L, U), as written.
type Bounds = (String, String);

/// One aggregate of the select list.
struct Aggregate {
    name: String,
    kind: &'static str,
    column: Option<String>,
    bounds: Option<Bounds>,
    level: Option<String>,
    /// COUNT's contribution_bounds_per_group (0, U): U, the rows a person counts in a group.
    count_rows: Option<u32>,
}

/// The clause's options, validated.
#[derive(Default)]
struct Privacy {
    epsilon: Option<String>,
    delta: Option<String>,
    groups: Option<String>,
    /// `max_rows_contributed` (ZetaSQL's, exclusive with `max_groups_contributed`).
    rows: Option<String>,
    unit: Option<String>,
}

/// Translates `query`; `keys` are `--keys`, the GROUP BY column's public keys.
pub fn translate(query: &str, keys: Option<&[String]>) -> Result<Translation, Error> {
    let (options, rest) = clause::split(query)?;
    let privacy = privacy(&options)?;
    let dialect = BigQueryDialect {};
    let statements = Parser::new(&dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .with_tokens_with_locations(rest)
        .parse_statements()
        .map_err(|e| Error::usage(format!("the query: {}", clause::message(&e))))?;
    let select = the_select(&statements)?;
    let (table, alias) = from(select)?;
    // What a column may be qualified with: the table's name, its last part, its alias.
    let mut quals = vec![table.clone(), table.rsplit('.').next().unwrap_or_default().to_string()];
    quals.extend(alias);
    let quals = quals.as_slice();
    let group = group_by(&select.group_by, quals)?;
    let mut aggregates = vec![];
    for item in &select.projection {
        if let Some(a) = select_item(item, group.as_deref(), quals)? {
            aggregates.push(a);
        }
    }
    if aggregates.is_empty() {
        return Err(refuse(
            "a select list without aggregates",
            "select COUNT(*), COUNT(col), SUM, AVG or PERCENTILE_CONT",
        ));
    }
    unique_names(&mut aggregates);
    let mut filters = vec![];
    let mut where_keys = None;
    if let Some(e) = &select.selection {
        conditions(e, quals, group.as_deref(), true, &mut filters, &mut where_keys)?;
    }
    let group = groups(group, keys, where_keys, &mut filters, privacy.delta.is_some())?;
    let mut notes = vec![];
    if let (Some(delta), false) = (&privacy.delta, matches!(group, Some(Groups::Found(_)))) {
        notes.push(format!(
            "delta {delta} is not spent: with public groups every aggregate is pure epsilon-DP (Laplace noise)"
        ));
    }
    let person = PersonRows::of(&privacy, &aggregates, group.is_some())?;
    let workload = workload(&privacy, person.as_ref(), &aggregates, &filters, group.as_ref());
    notes.extend(person.and_then(|p| p.note(&aggregates)));
    Ok(Translation { table, workload, notes })
}

/// The one SELECT of the statements, with nothing around or inside it that the subset lacks.
fn the_select(statements: &[Statement]) -> Result<&Select, Error> {
    let [Statement::Query(q)] = statements else {
        return Err(refuse("more than one statement", "give one SELECT"));
    };
    if q.with.is_some() {
        return Err(refuse("WITH … AS (a subquery)", "query the table itself"));
    }
    if !q.pipe_operators.is_empty() {
        return Err(refuse("the pipe syntax (|>)", "write one SELECT … FROM t WHERE … GROUP BY key"));
    }
    if !q.locks.is_empty() || q.for_clause.is_some() || q.settings.is_some() || q.format_clause.is_some() {
        return Err(refuse("FOR, SETTINGS or FORMAT", "write one SELECT … FROM t WHERE … GROUP BY key"));
    }
    if q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return Err(refuse(
            "ORDER BY, LIMIT or FETCH",
            "dpstat prints every public group, in the order of the keys; sort or cut the output",
        ));
    }
    let select = match q.body.as_ref() {
        SetExpr::Select(s) => s,
        SetExpr::SetOperation { op, .. } => {
            return Err(refuse(
                &format!("{op}"),
                "run each SELECT as its own query (each spends its epsilon)",
            ))
        }
        _ => return Err(refuse("this query form", "write SELECT WITH DIFFERENTIAL_PRIVACY … FROM t")),
    };
    if select.value_table_mode.is_some() || select.exclude.is_some() || select.top.is_some() {
        return Err(refuse(
            "SELECT AS STRUCT, AS VALUE, EXCEPT or TOP",
            "select the GROUP BY column and DP aggregates",
        ));
    }
    if select.distinct.is_some() {
        return Err(refuse("SELECT DISTINCT", "list the groups with GROUP BY and public keys"));
    }
    if select.having.is_some() || select.qualify.is_some() {
        return Err(refuse("HAVING or QUALIFY (a filter on released values)", "filter the output instead"));
    }
    if !select.named_window.is_empty() {
        return Err(refuse("WINDOW", "window functions are not differentially private aggregates"));
    }
    if select.into.is_some() || !select.lateral_views.is_empty() || select.prewhere.is_some() {
        return Err(refuse("INTO, LATERAL VIEW or PREWHERE", "write SELECT … FROM t WHERE … GROUP BY key"));
    }
    Ok(select)
}

/// The groups of GROUP BY key.
enum Groups {
    /// Public: the column and its keys (`--keys` or `WHERE key IN (…)`).
    Public(String, Vec<String>),
    /// Found in the data by the workload's selection (`discover = true`), at the query's delta.
    Found(String),
}

/// The GROUP BY column with its public keys (`--keys` or `WHERE key IN (…)`), whose filter
/// `key in …` joins `filters`; without keys, the groups are found in the data (BigQuery's
/// default), which needs `delta` (`has_delta`): refused without it.
fn groups(
    group: Option<String>,
    keys: Option<&[String]>,
    where_keys: Option<Vec<String>>,
    filters: &mut Vec<String>,
    has_delta: bool,
) -> Result<Option<Groups>, Error> {
    let keys: Option<Vec<String>> = match (keys, where_keys) {
        (Some(_), Some(_)) => {
            return Err(Error::usage(
                "--keys and WHERE key IN (…) both list the public groups: give them once",
            ))
        }
        (Some(k), None) => Some(k.to_vec()),
        (None, w) => w,
    };
    match (group, keys) {
        (Some(by), Some(keys)) => {
            filters.push(format!("{} in {}", filter_column(&by), list::join(&keys)));
            Ok(Some(Groups::Public(by, keys)))
        }
        (Some(by), None) if has_delta => Ok(Some(Groups::Found(by))),
        (Some(by), None) => Err(Error::usage(format!(
            "GROUP BY {0} without public groups finds them in the data, which needs delta: add \
             OPTIONS(…, delta = 1e-6) (BigQuery requires it too), or give the groups with --keys K1,K2,… \
             or WHERE {0} IN ('K1', 'K2', …)",
            shown(&by, 40)
        ))),
        (None, Some(_)) => Err(Error::usage("--keys lists the groups of GROUP BY key: add GROUP BY")),
        (None, None) => Ok(None),
    }
}

/// OPTIONS(…), each known once; BigQuery's names.
fn privacy(options: &clause::Options) -> Result<Privacy, Error> {
    let mut p = Privacy::default();
    for (name, value) in options {
        let slot = match name.as_str() {
            "epsilon" => &mut p.epsilon,
            "delta" => &mut p.delta,
            "max_groups_contributed" | "kappa" => &mut p.groups,
            "max_rows_contributed" => &mut p.rows,
            "privacy_unit_column" => &mut p.unit,
            "group_selection_strategy" => {
                return Err(refuse(
                    "OPTIONS(group_selection_strategy)",
                    "give the public groups with --keys or WHERE key IN (…)",
                ))
            }
            other => {
                return Err(refuse(
                    &format!("the option {}", shown(other, 40)),
                    "OPTIONS takes epsilon, delta, max_groups_contributed (or max_rows_contributed) and \
                     privacy_unit_column",
                ))
            }
        };
        if slot.is_some() {
            return Err(Error::usage(format!("OPTIONS gives {name} twice")));
        }
        let text = if name == "privacy_unit_column" {
            column_name(value, None)
                .ok_or_else(|| Error::usage("privacy_unit_column names a column: privacy_unit_column = id"))?
        } else {
            number(value).ok_or_else(|| {
                Error::usage(format!("OPTIONS {name} takes a number, as in {name} = 1, not {value}"))
            })?
        };
        *slot = Some(text);
    }
    if p.epsilon.is_none() {
        return Err(Error::usage(
            "OPTIONS needs epsilon: OPTIONS(epsilon = 1, …), the total the aggregates split",
        ));
    }
    if p.groups.is_some() && p.rows.is_some() {
        return Err(Error::usage(
            "OPTIONS gives max_groups_contributed and max_rows_contributed: they are two ways to bound a \
             person (G groups, or K rows in all); give one",
        ));
    }
    if (p.groups.is_some() || p.rows.is_some()) && p.unit.is_none() {
        return Err(Error::usage(
            "max_groups_contributed and max_rows_contributed bound each person's rows: add \
             privacy_unit_column = ID (without it each row is the unit and contributes to one group)",
        ));
    }
    Ok(p)
}

/// FROM one table, no joins: its name as written, and its alias.
fn from(select: &Select) -> Result<(String, Option<String>), Error> {
    let [t] = select.from.as_slice() else {
        return Err(if select.from.is_empty() {
            Error::usage("the query has no FROM: name the file, directory, glob or --table NAME it reads")
        } else {
            refuse("a join (FROM a, b)", "join the tables before dpstat; it reads one table")
        });
    };
    if !t.joins.is_empty() {
        return Err(refuse(
            "JOIN",
            "join the tables before dpstat (public groups: --keys or WHERE key IN (…))",
        ));
    }
    match &t.relation {
        TableFactor::Table { version: Some(_), .. } | TableFactor::Table { sample: Some(_), .. } => {
            Err(refuse("FOR SYSTEM_TIME AS OF or TABLESAMPLE", "FROM the table as it is"))
        }
        TableFactor::Table { name, alias, args: None, .. } => {
            let parts: Option<Vec<&str>> = name
                .0
                .iter()
                .map(|p| match p {
                    ObjectNamePart::Identifier(i) => Some(i.value.as_str()),
                    _ => None,
                })
                .collect();
            let alias = alias.as_ref().map(|a| a.name.value.clone());
            parts
                .map(|p| (p.join("."), alias))
                .ok_or_else(|| refuse("this FROM", "write FROM `path` or FROM name"))
        }
        TableFactor::Derived { .. } => Err(refuse("a subquery in FROM", "query the table itself")),
        _ => Err(refuse("this FROM (a table function or unnest)", "write FROM `path` or FROM name")),
    }
}

/// GROUP BY: none, or one column.
fn group_by(group: &GroupByExpr, table: &[String]) -> Result<Option<String>, Error> {
    match group {
        GroupByExpr::All(_) => Err(refuse("GROUP BY ALL", "name the group column: GROUP BY key")),
        GroupByExpr::Expressions(exprs, modifiers) => {
            if !modifiers.is_empty() {
                return Err(refuse("ROLLUP, CUBE or GROUPING SETS", "one GROUP BY column"));
            }
            match exprs.as_slice() {
                [] => Ok(None),
                [e] => column_name(e, Some(table))
                    .map(Some)
                    .ok_or_else(|| refuse(&format!("GROUP BY {e}"), "group by a column: GROUP BY key")),
                _ => Err(refuse(
                    "GROUP BY several columns",
                    "a workload groups by one column: make one key column (or run one query per column)",
                )),
            }
        }
    }
}

/// One select item: the group column (nothing to release by itself) or an aggregate.
fn select_item(item: &SelectItem, group: Option<&str>, table: &[String]) -> Result<Option<Aggregate>, Error> {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(e) => (e, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
            return Err(refuse("SELECT *", "select the GROUP BY column and DP aggregates"))
        }
        _ => return Err(refuse("this select item", "select the GROUP BY column and DP aggregates")),
    };
    if let Some(c) = column_name(expr, Some(table)) {
        return match group {
            Some(g) if g == c => Ok(None),
            _ => Err(refuse(
                &format!("the column {} outside an aggregate", shown(&c, 40)),
                "select only the GROUP BY column and COUNT, SUM, AVG or PERCENTILE_CONT",
            )),
        };
    }
    let Expr::Function(f) = expr else {
        return Err(refuse(
            &format!("the expression {}", shown(&expr.to_string(), 60)),
            "select the GROUP BY column and COUNT, SUM, AVG or PERCENTILE_CONT of a column",
        ));
    };
    aggregate(f, alias, table).map(Some)
}

/// The workload kind of a DP aggregate's name; other aggregates are refused.
fn kind_of(name: &str) -> Result<&'static str, Error> {
    match name {
        "COUNT" => Ok("count"),
        "SUM" => Ok("sum"),
        "AVG" => Ok("mean"),
        "PERCENTILE_CONT" => Ok("quantile"),
        "MIN" | "MAX" | "ANY_VALUE" | "ARRAY_AGG" | "STRING_AGG" | "MEDIAN" | "APPROX_QUANTILES" => {
            Err(refuse(
                &format!("{name} (not a differentially private aggregate)"),
                "use PERCENTILE_CONT(col, q, contribution_bounds_per_group => (L, U)), COUNT, SUM or AVG",
            ))
        }
        "VARIANCE" | "VAR_POP" | "VAR_SAMP" | "STDDEV" | "STDDEV_POP" | "STDDEV_SAMP" => Err(refuse(
            &format!("{name} (not one of BigQuery's DP aggregates)"),
            "dpstat variance, or kind = \"variance\" in a dpstat run workload",
        )),
        _ => Err(refuse(
            &format!("{} (not a differentially private aggregate)", shown(name, 40)),
            "use COUNT, SUM, AVG or PERCENTILE_CONT",
        )),
    }
}

/// An aggregate call's positional arguments and its contribution_bounds_per_group, with no
/// window, filter, DISTINCT or other named argument.
fn arguments<'f>(f: &'f Function, name: &str) -> Result<(Vec<&'f FunctionArgExpr>, Option<Bounds>), Error> {
    if f.over.is_some() {
        return Err(refuse(&format!("{name}(…) OVER (a window function)"), "aggregate by GROUP BY instead"));
    }
    if f.filter.is_some() || f.null_treatment.is_some() || !matches!(f.parameters, FunctionArguments::None) {
        return Err(refuse(&format!("{name}(…) FILTER or a modifier"), "filter the rows with WHERE"));
    }
    let FunctionArguments::List(list) = &f.args else {
        return Err(refuse(&format!("{name} without arguments"), &format!("{name}(col, …)")));
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return Err(refuse(
            &format!("{name}(DISTINCT …) or a clause inside {name}(…)"),
            "aggregate every row: COUNT(DISTINCT id) is not in the subset (a person-level COUNT(*) with \
             privacy_unit_column counts people)",
        ));
    }
    let mut positional = vec![];
    let mut bounds = None;
    for arg in &list.args {
        match arg {
            FunctionArg::Unnamed(a) => positional.push(a),
            FunctionArg::Named { name: n, arg, .. }
                if n.value.eq_ignore_ascii_case("contribution_bounds_per_group")
                    || (name == "PERCENTILE_CONT"
                        && n.value.eq_ignore_ascii_case("contribution_bounds_per_row")) =>
            {
                // A percentile clamps each row whichever name its bounds have (BigQuery
                // documents PERCENTILE_CONT's as per row).
                bounds = Some(bounds_of(arg, name)?)
            }
            _ => {
                return Err(refuse(
                    &format!("the argument {arg} of {name}"),
                    "the only named argument is contribution_bounds_per_group => (L, U) \
                     (contribution_bounds_per_row for PERCENTILE_CONT)",
                ))
            }
        }
    }
    Ok((positional, bounds))
}

/// COUNT, SUM, AVG or PERCENTILE_CONT, with its bounds.
fn aggregate(f: &Function, alias: Option<String>, table: &[String]) -> Result<Aggregate, Error> {
    let name = f.name.to_string().to_ascii_uppercase();
    let kind = kind_of(&name)?;
    let (positional, bounds) = arguments(f, &name)?;
    let column = |a: &FunctionArgExpr| match a {
        FunctionArgExpr::Expr(e) => column_name(e, Some(table)).ok_or_else(|| {
            refuse(
                &format!("{name}({})", shown(&e.to_string(), 40)),
                &format!("{name} takes a column; compute expressions before dpstat"),
            )
        }),
        _ => Err(refuse(&format!("{name}(*)"), &format!("{name} takes a column"))),
    };
    let (col, level) = match (kind, positional.as_slice()) {
        ("count", [FunctionArgExpr::Wildcard]) => (None, None),
        ("count", [a]) => (Some(column(a)?), None),
        ("sum" | "mean", [a]) => (Some(column(a)?), None),
        ("quantile", [a, FunctionArgExpr::Expr(q)]) => {
            let level = number(q).ok_or_else(|| {
                Error::usage(format!("PERCENTILE_CONT's level is a number in (0, 1), not {q}"))
            })?;
            (Some(column(a)?), Some(level))
        }
        ("quantile", _) => {
            return Err(Error::usage(
                "PERCENTILE_CONT takes a column and a level: PERCENTILE_CONT(col, 0.5, contribution_bounds_per_group \
                 => (L, U))",
            ))
        }
        _ => return Err(Error::usage(format!("{name} takes one column: {name}(col, …)"))),
    };
    let count_rows = match (kind, &bounds) {
        ("sum" | "mean", None) => {
            return Err(refuse(
                &format!("{name} without contribution_bounds_per_group"),
                &format!(
                    "give public bounds, {name}({}, contribution_bounds_per_group => (L, U)); dpstat never takes \
                     them from the data",
                    col.as_deref().unwrap_or("col")
                ),
            ))
        }
        ("count", Some((lower, upper))) => {
            let whole = upper.parse::<u32>().ok().filter(|u| (1..=MAX_BOUND).contains(u));
            if lower.parse::<f64>() != Ok(0.0) || whole.is_none() {
                return Err(Error::usage(format!(
                    "COUNT's contribution_bounds_per_group is (0, U) with U a whole number of rows from 1 to \
                     {MAX_BOUND}, not ({lower}, {upper})"
                )));
            }
            whole
        }
        _ => None,
    };
    let default = match (&col, &level) {
        (None, _) => "count".to_string(),
        (Some(c), None) => format!("{}_{c}", name.to_ascii_lowercase()),
        (Some(c), Some(q)) => format!("percentile_cont_{c}_{q}"),
    };
    Ok(Aggregate {
        name: alias.unwrap_or(default),
        kind,
        column: col,
        // COUNT's bounds are the rows a person counts in a group: the workload's K_g.
        bounds: if kind == "count" { None } else { bounds },
        level,
        count_rows,
    })
}

/// `(L, U)` of contribution_bounds_per_group.
fn bounds_of(arg: &FunctionArgExpr, name: &str) -> Result<Bounds, Error> {
    let pair = match arg {
        FunctionArgExpr::Expr(Expr::Tuple(items)) => match items.as_slice() {
            [l, u] => number(l).zip(number(u)),
            _ => None,
        },
        _ => None,
    };
    pair.ok_or_else(|| {
        Error::usage(format!(
            "{name}'s contribution_bounds_per_group is a pair of numbers: contribution_bounds_per_group => (0, 100)"
        ))
    })
}

/// Makes the aggregates' names unique: the second `count` becomes `count_2`.
fn unique_names(aggregates: &mut [Aggregate]) {
    let mut seen: Vec<String> = vec![];
    for a in aggregates.iter_mut() {
        let mut name = a.name.clone();
        let mut k = 2;
        while seen.contains(&name) {
            name = format!("{}_{k}", a.name);
            k += 1;
        }
        seen.push(name.clone());
        a.name = name;
    }
}

/// WHERE, as filters joined by AND; a top-level `key IN (…)` on the group column also gives
/// the public groups.
fn conditions(
    e: &Expr,
    table: &[String],
    group: Option<&str>,
    top: bool,
    out: &mut Vec<String>,
    keys: &mut Option<Vec<String>>,
) -> Result<(), Error> {
    match e {
        Expr::Nested(inner) => conditions(inner, table, group, top, out, keys),
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conditions(left, table, group, top, out, keys)?;
            conditions(right, table, group, top, out, keys)
        }
        Expr::InList { expr, list, negated } => {
            let c = column_name(expr, Some(table)).ok_or_else(|| unsupported(&e.to_string()))?;
            let items: Option<Vec<String>> = list.iter().map(|v| number(v).or_else(|| text(v))).collect();
            let items = items.ok_or_else(|| unsupported(&e.to_string()))?;
            if top && !negated && group == Some(c.as_str()) && keys.is_none() {
                *keys = Some(items);
                return Ok(());
            }
            let word = if *negated { "not in" } else { "in" };
            out.push(format!("{} {word} {}", filter_column(&c), list::join(&items)));
            Ok(())
        }
        other => {
            out.extend(condition(other, table)?);
            Ok(())
        }
    }
}

/// One condition of WHERE other than AND and IN, as the filters it becomes (BETWEEN is two);
/// what is outside the subset is refused.
fn condition(e: &Expr, table: &[String]) -> Result<Vec<String>, Error> {
    let col = |x: &Expr| column_name(x, Some(table));
    match e {
        Expr::BinaryOp { op: BinaryOperator::Or, .. } => Err(refuse(
            "OR in WHERE",
            "filters are joined by AND; for one column's alternatives write col IN ('a', 'b')",
        )),
        Expr::BinaryOp { left, op, right } => {
            let (c, lit, op) = match (col(left), col(right)) {
                (Some(c), None) => (c, right.as_ref(), op.clone()),
                (None, Some(c)) => (c, left.as_ref(), flipped(op)),
                _ => return Err(unsupported(&e.to_string())),
            };
            comparison(&c, &op, lit).ok_or_else(|| unsupported(&e.to_string()))?
        }
        Expr::Between { expr, negated: false, low, high } => {
            let c = col(expr).ok_or_else(|| unsupported(&e.to_string()))?;
            let (Some(l), Some(h)) = (number(low).or_else(|| text(low)), number(high).or_else(|| text(high))) else {
                return Err(unsupported(&e.to_string()));
            };
            Ok(vec![format!("{}>={l}", filter_column(&c)), format!("{}<={h}", filter_column(&c))])
        }
        Expr::IsNull(x) | Expr::IsNotNull(x) => {
            let c = col(x).ok_or_else(|| unsupported(&e.to_string()))?;
            let test = if matches!(e, Expr::IsNull(_)) { "is empty" } else { "is not empty" };
            Ok(vec![format!("{} {test}", filter_column(&c))])
        }
        Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. } => {
            Err(refuse("a subquery", "query the table itself; list public groups with --keys"))
        }
        Expr::UnaryOp { op: UnaryOperator::Not, .. } | Expr::Between { .. } => Err(refuse(
            "NOT in WHERE",
            "write the opposite comparison (!=, NOT IN, IS NOT NULL, < and > for NOT BETWEEN is not one filter)",
        )),
        other => Err(unsupported(&shown(&other.to_string(), 60))),
    }
}

/// The refusal of a condition outside the subset (`what`, as written), with the conditions
/// dpstat takes.
fn unsupported(what: &str) -> Error {
    refuse(
        &format!("{what} in WHERE"),
        "dpstat filters are comparisons of a column with a literal (=, !=, <, <=, >, >=, IN, BETWEEN, IS \
         [NOT] NULL) joined by AND",
    )
}

/// `column op literal` as filters; None when it is no comparison of the subset.
fn comparison(column: &str, op: &BinaryOperator, lit: &Expr) -> Option<Result<Vec<String>, Error>> {
    let column = filter_column(column);
    Some(Ok(match (op, number(lit), text(lit)) {
        // SQL compares numbers as numbers: = is both bounds, never the text.
        (BinaryOperator::Eq, Some(n), _) => vec![format!("{column}>={n}"), format!("{column}<={n}")],
        (BinaryOperator::Eq, None, Some(t)) => vec![format!("{column}={t}")],
        (BinaryOperator::NotEq, None, Some(t)) => vec![format!("{column}!={t}")],
        (BinaryOperator::NotEq, Some(_), _) => return Some(Err(refuse(
            "!= with a number",
            "dpstat compares numbers with <, <=, >, >= (and = as both); != compares text: write col != '5'",
        ))),
        (BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq, n, t) => {
            vec![format!("{column}{op}{}", n.or(t)?)]
        }
        _ => return None,
    }))
}

/// `5 < x` is `x > 5`.
fn flipped(op: &BinaryOperator) -> BinaryOperator {
    match op {
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        other => other.clone(),
    }
}

/// A column: `col`, `` `col` ``, or `t.col` for the FROM table `t` (its name or alias).
fn column_name(e: &Expr, table: Option<&[String]>) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [t, c] if table.is_some_and(|quals| quals.contains(&t.value)) => Some(c.value.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// A number literal as written (`-` applied, `.5` as `0.5`), so the workload reads it exactly.
fn number(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(s, _) if s.starts_with('.') => Some(format!("0{s}")),
            Value::Number(s, _) => Some(s.clone()),
            _ => None,
        },
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => {
            number(expr)
                .map(|s| if let Some(p) = s.strip_prefix('-') { p.to_string() } else { format!("-{s}") })
        }
        Expr::UnaryOp { op: UnaryOperator::Plus, expr } | Expr::Nested(expr) => number(expr),
        _ => None,
    }
}

/// A string literal.
fn text(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// A column as a filter writes it: quoted (a quote inside doubled) unless it is a plain word.
fn filter_column(c: &str) -> String {
    if !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_') {
        c.to_string()
    } else {
        format!("\"{}\"", c.replace('"', "\"\""))
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn toml_list(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|s| toml_string(s)).collect::<Vec<_>>().join(", "))
}

/// A whole number from 1 to [`MAX_BOUND`] of an option.
fn bound(name: &str, text: &str) -> Result<u32, Error> {
    text.parse().ok().filter(|k| (1..=MAX_BOUND).contains(k)).ok_or_else(|| {
        Error::usage(format!("{name} is a whole number from 1 to {MAX_BOUND}, not {}", shown(text, 20)))
    })
}

/// A person's bounds as the query gives them.
enum PersonRows {
    /// `max_rows_contributed = K` (ZetaSQL's option): K rows of each person in all.
    Given(u32),
    /// As BigQuery, G = `max_groups_contributed` (default 1) groups of the GROUP BY column per
    /// person (one group without GROUP BY), and in each the K_g rows of [`rows_per_group`].
    Groups { groups: u32, per_group: u32, grouped: bool },
}

impl PersonRows {
    /// The bounds of a query with `privacy_unit_column` (None without).
    fn of(privacy: &Privacy, aggregates: &[Aggregate], grouped: bool) -> Result<Option<PersonRows>, Error> {
        if privacy.unit.is_none() {
            return Ok(None);
        }
        if let Some(rows) = &privacy.rows {
            return Ok(Some(PersonRows::Given(bound("max_rows_contributed", rows)?)));
        }
        let groups = bound("max_groups_contributed", privacy.groups.as_deref().unwrap_or("1"))?;
        let groups = if grouped { groups } else { 1 };
        Ok(Some(PersonRows::Groups { groups, per_group: rows_per_group(aggregates, groups)?, grouped }))
    }

    /// The workload's lines: K rows in all, or G groups and K_g rows in each (K = G·K_g).
    fn workload_lines(&self) -> String {
        match *self {
            PersonRows::Given(k) => format!("max_rows_per_id = {k}\n"),
            PersonRows::Groups { per_group, grouped: false, .. } => {
                format!("max_rows_per_id = {per_group}\n")
            }
            PersonRows::Groups { groups, per_group, .. } => format!(
                "max_groups_per_id = {groups}\nmax_rows_per_group = {per_group}\nmax_rows_per_id = {}\n",
                groups * per_group
            ),
        }
    }

    /// A note when SUM or AVG total fewer of a person's rows in a group than BigQuery would,
    /// because a COUNT or a PERCENTILE_CONT beside them set K_g ([`rows_per_group`]).
    fn note(&self, aggregates: &[Aggregate]) -> Option<String> {
        let PersonRows::Groups { groups, per_group, .. } = *self else { return None };
        if per_group >= MAX_BOUND / groups || !aggregates.iter().any(|a| matches!(a.kind, "sum" | "mean")) {
            return None;
        }
        let why = match aggregates.iter().find_map(|a| a.count_rows) {
            Some(u) => format!("COUNT's contribution_bounds_per_group (0, {u}) keeps {u} of them"),
            None => {
                "a COUNT without contribution_bounds_per_group or a PERCENTILE_CONT keeps one".to_string()
            }
        };
        Some(format!(
            "SUM and AVG total at most {per_group} row{} of each person in a group: one bounding serves every \
             aggregate, and {why}; a query of SUM and AVG alone totals all of a person's rows (up to {MAX_BOUND})",
            if per_group == 1 { "" } else { "s" }
        ))
    }
}

/// Why COUNTs with other bounds are refused: their U is the workload's one K_g.
const ONE_COUNT_BOUND: &str =
    "every COUNT gives the same contribution_bounds_per_group => (0, U), or none does: \
     U is the number of rows kept of each person in a group, one number for the whole query";

/// K_g, the rows of a person kept in each of their G groups, by a public rule on the select
/// list (one bounding serves every aggregate):
/// - COUNT with contribution_bounds_per_group (0, U): U, so the count of a person's rows in a
///   group is clamped to U as BigQuery clamps it (every COUNT gives the same U);
/// - else, with a COUNT without bounds or a PERCENTILE_CONT, whose noise grows with K_g: 1;
/// - else (SUM and AVG only, which clamp each person's total or average, so their noise does
///   not depend on K_g): as many as the bounds allow, ⌊10,000 / G⌋: all of a person's rows in
///   their groups, as BigQuery keeps them, up to 10,000 rows a person.
fn rows_per_group(aggregates: &[Aggregate], groups: u32) -> Result<u32, Error> {
    let counts: Vec<Option<u32>> =
        aggregates.iter().filter(|a| a.kind == "count").map(|a| a.count_rows).collect();
    if let Some(&Some(u)) = counts.first() {
        if counts.iter().any(|c| *c != Some(u)) {
            return Err(Error::usage(ONE_COUNT_BOUND));
        }
        if u.saturating_mul(groups) > MAX_BOUND {
            return Err(Error::usage(format!(
                "COUNT's bound U = {u} times max_groups_contributed = {groups} rows of one person is above \
                 {MAX_BOUND}: lower one of them"
            )));
        }
        return Ok(u);
    }
    if counts.iter().any(Option::is_some) {
        return Err(Error::usage(ONE_COUNT_BOUND));
    }
    let per_row = !counts.is_empty() || aggregates.iter().any(|a| a.kind == "quantile");
    Ok(if per_row { 1 } else { MAX_BOUND / groups })
}

/// The workload file's text.
fn workload(
    privacy: &Privacy,
    person: Option<&PersonRows>,
    aggregates: &[Aggregate],
    filters: &[String],
    group: Option<&Groups>,
) -> String {
    let mut w = String::new();
    let epsilon = privacy.epsilon.as_deref().unwrap_or_default();
    w.push_str(&format!("epsilon = {}\n", toml_string(epsilon)));
    // Groups found in the data spend delta (the selection's); public groups spend none.
    if let (Some(Groups::Found(_)), Some(delta)) = (group, &privacy.delta) {
        w.push_str(&format!("delta = {}\n", toml_string(delta)));
    }
    if let Some(unit) = &privacy.unit {
        w.push_str(&format!("privacy_id = {}\n", toml_string(unit)));
        w.push_str(&person.map(PersonRows::workload_lines).unwrap_or_default());
    }
    for a in aggregates {
        w.push_str(&format!(
            "\n[[query]]\nname = {}\nkind = {}\n",
            toml_string(&a.name),
            toml_string(a.kind)
        ));
        let mut filters = filters.to_vec();
        match (a.kind, &a.column) {
            ("count", Some(c)) => filters.push(format!("{} is not empty", filter_column(c))),
            (_, Some(c)) => w.push_str(&format!("column = {}\n", toml_string(c))),
            _ => {}
        }
        // Per person, BigQuery's bounds clamp each person's total in a group (SUM) or each
        // person's average (AVG); per row (no privacy unit) they clamp each row.
        match (&a.bounds, a.kind, privacy.unit.is_some()) {
            (Some((l, u)), "sum", true) => {
                w.push_str(&format!("total_per_id = [{}, {}]\n", toml_string(l), toml_string(u)))
            }
            (Some((l, u)), kind, person) => {
                w.push_str(&format!("lower = {}\nupper = {}\n", toml_string(l), toml_string(u)));
                if kind == "mean" && person {
                    w.push_str("average_per_id = true\n");
                }
            }
            (None, ..) => {}
        }
        if let Some(q) = &a.level {
            w.push_str(&format!("q = {}\n", toml_string(q)));
        }
        if !filters.is_empty() {
            w.push_str(&format!("where = {}\n", toml_list(&filters)));
        }
        match group {
            Some(Groups::Public(by, keys)) => {
                w.push_str(&format!("by = {}\nkeys = {}\nclosed = true\n", toml_string(by), toml_list(keys)))
            }
            Some(Groups::Found(by)) => w.push_str(&format!("by = {}\ndiscover = true\n", toml_string(by))),
            None => {}
        }
        // SQL's aggregates leave NULL and NaN out; a closed list leaves the filtered rows out.
        if a.kind != "count" || matches!(group, Some(Groups::Public(..))) {
            w.push_str("invalid = \"skip\"\n");
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml(query: &str) -> String {
        translate(query, None).unwrap_or_else(|e| panic!("{query}: {e}")).workload
    }

    /// Without public keys the groups are found in the data: delta becomes the workload's
    /// (the selection's), every aggregate discovers the groups of the key, and no note says
    /// delta is unspent.
    #[test]
    fn group_by_without_keys_finds_the_groups_with_delta() {
        let t = translate(
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1, delta = 1e-6) k, COUNT(*) n, \
             SUM(x, contribution_bounds_per_group => (0, 5)) s FROM t WHERE a = 1 GROUP BY k",
            None,
        )
        .unwrap();
        assert!(t.workload.starts_with("epsilon = \"1\"\ndelta = \"1e-6\"\n"), "{}", t.workload);
        assert_eq!(t.workload.matches("by = \"k\"\ndiscover = true\n").count(), 2, "{}", t.workload);
        assert!(!t.workload.contains("keys ="), "{}", t.workload);
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }

    #[test]
    fn bigquerys_avg_example_becomes_a_grouped_mean() {
        let t = translate(
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=10, delta=.01, max_groups_contributed=1, \
             privacy_unit_column=id) item, AVG(quantity, contribution_bounds_per_group => (0,100)) average_quantity \
             FROM professors GROUP BY item",
            Some(&["pen".to_string(), "pencil".to_string()]),
        )
        .unwrap();
        assert_eq!(t.table, "professors");
        assert_eq!(
            t.workload,
            "epsilon = \"10\"\nprivacy_id = \"id\"\nmax_groups_per_id = 1\nmax_rows_per_group = 10000\n\
             max_rows_per_id = 10000\n\n[[query]]\nname = \"average_quantity\"\n\
             kind = \"mean\"\ncolumn = \"quantity\"\nlower = \"0\"\nupper = \"100\"\naverage_per_id = true\n\
             where = [\"item in pen,pencil\"]\n\
             by = \"item\"\nkeys = [\"pen\", \"pencil\"]\nclosed = true\ninvalid = \"skip\"\n"
        );
        assert!(t.notes[0].contains("delta 0.01 is not spent"), "{:?}", t.notes);
    }

    /// The person's bounds by the rule of `person_bounds` and `rows_per_group`.
    #[test]
    fn a_persons_groups_and_rows_follow_the_select_list() {
        let person = |options: &str, select: &str, group: bool| {
            let (by, tail) = if group { ("k, ", " WHERE k IN ('a', 'b') GROUP BY k") } else { ("", "") };
            let query = format!(
                "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1, privacy_unit_column = id{options}) \
                 {by}{select} FROM t{tail}"
            );
            let w = toml(&query);
            w.lines().filter(|l| l.starts_with("max_")).collect::<Vec<_>>().join(" ")
        };
        let sum = "SUM(x, contribution_bounds_per_group => (0, 5))";
        let avg = "AVG(x, contribution_bounds_per_group => (0, 5))";
        let count = "COUNT(*, contribution_bounds_per_group => (0, 3))";
        for (options, select, group, want) in [
            ("", sum, true, "max_groups_per_id = 1 max_rows_per_group = 10000 max_rows_per_id = 10000"),
            (
                ", max_groups_contributed = 4",
                avg,
                true,
                "max_groups_per_id = 4 max_rows_per_group = 2500 max_rows_per_id = 10000",
            ),
            (
                ", kappa = 2",
                &format!("{count}, {sum}"),
                true,
                "max_groups_per_id = 2 max_rows_per_group = 3 max_rows_per_id = 6",
            ),
            (
                ", max_groups_contributed = 2",
                &format!("COUNT(*), {sum}"),
                true,
                "max_groups_per_id = 2 max_rows_per_group = 1 max_rows_per_id = 2",
            ),
            (
                "",
                "PERCENTILE_CONT(x, 0.5, contribution_bounds_per_row => (0, 5))",
                true,
                "max_groups_per_id = 1 max_rows_per_group = 1 max_rows_per_id = 1",
            ),
            (", max_groups_contributed = 3", sum, false, "max_rows_per_id = 10000"),
            ("", count, false, "max_rows_per_id = 3"),
            (", max_rows_contributed = 7", &format!("COUNT(*), {sum}"), true, "max_rows_per_id = 7"),
        ] {
            assert_eq!(person(options, select, group), want, "{options} {select}");
        }
        // SUM beside a COUNT totals what the COUNT keeps, and says so; alone it says nothing.
        let notes = |select: &str| {
            let query = format!(
                "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1, privacy_unit_column = id) \
                 k, {select} FROM t WHERE k IN ('a') GROUP BY k"
            );
            translate(&query, None).unwrap().notes
        };
        assert!(notes(sum).is_empty());
        let mixed = notes(&format!("COUNT(*), {sum}"));
        assert!(mixed.len() == 1 && mixed[0].contains("at most 1 row of each person"), "{mixed:?}");
        let counted = notes(&format!("{count}, {avg}"));
        assert!(counted.len() == 1 && counted[0].contains("(0, 3) keeps 3"), "{counted:?}");
        for (options, select, needle) in [
            (", max_groups_contributed = 2, max_rows_contributed = 2", sum, "give one"),
            ("", &format!("{count}, COUNT(x)"), "same contribution_bounds_per_group"),
            ("", &format!("COUNT(x), {count}"), "same contribution_bounds_per_group"),
            (
                ", max_groups_contributed = 2",
                "COUNT(*, contribution_bounds_per_group => (0, 6000))",
                "above 10000",
            ),
            (", max_rows_contributed = 0", sum, "from 1 to"),
        ] {
            let query = format!(
                "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1, privacy_unit_column = id{options}) \
                 k, {select} FROM t WHERE k IN ('a') GROUP BY k"
            );
            let e = translate(&query, None).unwrap_err();
            assert!(e.message().contains(needle), "{query}: {e}");
        }
    }

    #[test]
    fn where_becomes_filters_and_in_on_the_key_the_groups() {
        let w = toml(
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1) region, COUNT(*) n, COUNT(income), \
             PERCENTILE_CONT(age, 0.5) FROM `fixtures/people.csv` AS p \
             WHERE (p.age >= 18 AND 65 > age) AND region IN ('north', 'south') AND income BETWEEN 0 AND 1e5 \
             AND score = 3 AND name != 'a b' AND x IS NULL AND `y z` NOT IN (1, 2) GROUP BY region",
        );
        assert!(w.contains(
            "where = [\"age>=18\", \"age<65\", \"income>=0\", \"income<=1e5\", \"score>=3\", \"score<=3\", \
             \"name!=a b\", \"x is empty\", \"\\\"y z\\\" not in 1,2\", \"region in north,south\"]"
        ), "{w}");
        assert!(w.contains("name = \"count_income\""), "{w}");
        assert!(w.contains("\"income is not empty\"]"), "{w}");
        assert!(
            w.contains(
                "name = \"percentile_cont_age_0.5\"\nkind = \"quantile\"\ncolumn = \"age\"\nq = \"0.5\""
            ),
            "{w}"
        );
    }

    #[test]
    fn outside_the_subset_is_refused_with_what_to_write() {
        let dp = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1)";
        for (rest, needle) in [
            ("* FROM t", "SELECT *"),
            ("COUNT(*) FROM a JOIN b ON a.x = b.x", "JOIN"),
            ("COUNT(*) FROM a, b", "join"),
            ("COUNT(*) FROM (SELECT * FROM t)", "subquery"),
            ("COUNT(*) OVER () FROM t", "window"),
            ("MAX(x) FROM t", "MAX (not a differentially private"),
            ("SUM(x) FROM t", "without contribution_bounds_per_group"),
            ("AVG(x) FROM t", "without contribution_bounds_per_group"),
            ("x, COUNT(*) FROM t", "outside an aggregate"),
            ("k, COUNT(*) FROM t GROUP BY k", "needs delta"),
            ("COUNT(*) FROM t WHERE a = 1 OR b = 2", "OR in WHERE"),
            ("COUNT(*) FROM t WHERE a IN (SELECT a FROM u)", "subquery"),
            ("COUNT(DISTINCT id) FROM t", "DISTINCT"),
            ("SUM(a + b, contribution_bounds_per_group => (0, 1)) FROM t", "takes a column"),
            ("COUNT(*) FROM t GROUP BY a, b", "several columns"),
            ("COUNT(*) FROM t ORDER BY 1", "ORDER BY"),
            ("COUNT(*) FROM t |> WHERE a = 1", "pipe"),
            ("AS STRUCT COUNT(*) FROM t", "AS STRUCT"),
            ("COUNT(*) FROM t TABLESAMPLE SYSTEM (10 PERCENT)", "TABLESAMPLE"),
            ("COUNT(*) FROM t UNION ALL SELECT COUNT(*) FROM u", "UNION"),
            ("k, COUNT(*) FROM t GROUP BY k HAVING COUNT(*) > 5", "HAVING"),
            ("COUNT(*, contribution_bounds_per_group => (1, 5)) FROM t", "(0, U)"),
            ("SUM(x, bounds => (0, 1)) FROM t", "only named argument"),
        ] {
            let query = format!("{dp} {rest}");
            let e = translate(&query, None).unwrap_err();
            assert!(e.message().contains(needle), "{query}: {e}");
        }
        for (options, needle) in [
            ("OPTIONS(delta = 1e-6)", "needs epsilon"),
            ("OPTIONS(epsilon = 1, epsilon = 2)", "twice"),
            ("OPTIONS(epsilon = 1, noise = 2)", "the option noise"),
            ("OPTIONS(epsilon = 1, max_groups_contributed = 2)", "privacy_unit_column"),
            ("OPTIONS(epsilon = 'a')", "takes a number"),
            ("OPTIONS(epsilon = 1, privacy_unit_column = id, max_groups_contributed = 0)", "from 1 to"),
        ] {
            let query = format!("SELECT WITH DIFFERENTIAL_PRIVACY {options} COUNT(*) FROM t");
            let e = translate(&query, None).unwrap_err();
            assert!(e.message().contains(needle), "{query}: {e}");
        }
    }

    #[test]
    fn names_are_made_unique_and_strings_escaped() {
        let w = toml(
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1) COUNT(*), COUNT(*), \
             SUM(`a \"b\"`, contribution_bounds_per_group => (-1, .5)) FROM t",
        );
        assert!(w.contains("name = \"count\"\n") && w.contains("name = \"count_2\"\n"), "{w}");
        assert!(w.contains("column = \"a \\\"b\\\"\"\nlower = \"-1\"\nupper = \"0.5\""), "{w}");
        assert!(!w.contains("invalid") || w.matches("invalid").count() == 1, "{w}");
    }
}
