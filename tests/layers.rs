//! The layers of `src/` keep their direction. Each top-level module of the crate is a layer,
//! lowest first:
//!
//!     error  numeric  privacy  data  report  query  cmd  cli
//!
//! A module may name `crate::X` only for X in its own layer or a lower one (privacy arithmetic
//! knows nothing of CSV, the scan nothing of noise, statistics nothing of clap or printing), and
//! no modules may name each other in a cycle. References are read from the source text: every
//! `crate::…` path (grouped `use crate::{…}` expanded) and every `super::…` path, outside
//! comments and `#[cfg(test)]` modules. `lib.rs` only declares the layers and `main.rs` is the
//! binary, so both are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first.
const LAYERS: [&str; 8] = ["error", "numeric", "privacy", "data", "report", "query", "cmd", "cli"];

/// A module path such as `query::sum` for `src/query/sum.rs` or `query` for `src/query/mod.rs`.
fn module_of(path: &str) -> String {
    let path = path.strip_suffix(".rs").unwrap_or(path);
    let mut parts: Vec<&str> = path.split('/').collect();
    if parts.last() == Some(&"mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The text without comments and without `#[cfg(test)] mod … { … }` blocks.
fn code_of(text: &str) -> String {
    let uncommented: String =
        text.lines().map(|l| l.split_once("//").map_or(l, |(code, _)| code)).collect::<Vec<_>>().join("\n");
    let mut out = String::new();
    let mut rest = uncommented.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(open) = after.find('{') else { break };
        let header = &after[..open];
        if !header.contains("mod ") {
            out.push_str("#[cfg(test)]");
            rest = &after["#[cfg(test)]".len()..];
            continue;
        }
        let mut depth = 0;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Every path named from `module`: `crate::a::b` as `a::b`, `super::x` resolved, groups expanded.
fn paths_in(module: &str, code: &str) -> Vec<String> {
    let mut found = vec![];
    for (prefix, base) in [("crate::", String::new()), ("super::", parent(module))] {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // `self::super::`, `foo_crate::`: not a path from this crate's root.
            }
            let mut base = base.clone();
            let mut tail = rest;
            while let Some(more) = tail.strip_prefix("super::") {
                base = parent(&base);
                tail = more;
            }
            for path in expand(tail) {
                found.push(if base.is_empty() { path } else { format!("{base}::{path}") });
            }
        }
    }
    found
}

/// The module one level up (`""` for a top-level module).
fn parent(module: &str) -> String {
    module.rsplit_once("::").map_or(String::new(), |(p, _)| p.to_string())
}

/// `a::b::{c, d::{e, f}}` → `a::b::c`, `a::b::d::e`, `a::b::d::f`; `a::b::C` → `a::b::C`.
fn expand(text: &str) -> Vec<String> {
    let head: String = text.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
    let head = head.trim_end_matches(':').to_string();
    let after = &text[head.len()..].trim_start_matches(':');
    if !after.starts_with('{') {
        return vec![head];
    }
    let mut depth = 0;
    let mut items = vec![];
    let mut item = String::new();
    for c in after.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth > 1 {
                    item.push(c);
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    items.push(item.clone());
                    break;
                }
                item.push(c);
            }
            ',' if depth == 1 => items.push(std::mem::take(&mut item)),
            _ => item.push(c),
        }
    }
    let join = |p: String| if head.is_empty() { p } else { format!("{head}::{p}") };
    items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()).flat_map(expand).map(join).collect()
}

/// The longest prefix of `path` that is a module (None when nothing matches).
fn resolve(path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let segments: Vec<&str> = path.split("::").collect();
    (1..=segments.len()).rev().map(|n| segments[..n].join("::")).find(|m| modules.contains(m))
}

fn layer_of(module: &str) -> Option<usize> {
    let top = module.split("::").next().unwrap_or(module);
    LAYERS.iter().position(|l| *l == top)
}

/// Every violation in a set of files (paths relative to `src/`).
fn violations(files: &[(String, String)]) -> Vec<String> {
    let files: Vec<&(String, String)> =
        files.iter().filter(|(p, _)| p != "lib.rs" && p != "main.rs").collect();
    let modules: BTreeSet<String> = files.iter().map(|(p, _)| module_of(p)).collect();
    let mut found = vec![];
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in &files {
        let module = module_of(path);
        let Some(rank) = layer_of(&module) else {
            found.push(format!(
                "src/{path}: module {module} is in no layer: add it to LAYERS in tests/layers.rs"
            ));
            continue;
        };
        for target in paths_in(&module, &code_of(text)).iter().filter_map(|p| resolve(p, &modules)) {
            if target == module {
                continue;
            }
            if let Some(theirs) = layer_of(&target).filter(|&t| t > rank) {
                found.push(format!(
                    "src/{path} imports crate::{target} (layer {} is above {})",
                    LAYERS[theirs], LAYERS[rank]
                ));
            }
            edges.entry(module.clone()).or_default().insert(target);
        }
    }
    found.extend(cycles(&modules, &edges).into_iter().map(|c| format!("cycle: {}", c.join(", "))));
    found
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(modules: &BTreeSet<String>, edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(v: &'a str, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w.as_str()) {
                visit(w, s);
                let low = s.low[v].min(s.low[w.as_str()]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w.as_str()) {
                let low = s.low[v].min(s.index[w.as_str()]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let at = s.stack.iter().position(|m| *m == v).unwrap_or(0);
            let component: Vec<String> = s.stack.drain(at..).map(String::from).collect();
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut state =
        State { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: vec![], found: vec![] };
    for m in modules {
        if !state.index.contains_key(m.as_str()) {
            visit(m, &mut state);
        }
    }
    state.found
}

fn read_src(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            read_src(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).expect("under src/").to_string_lossy().replace('\\', "/");
            out.push((relative, std::fs::read_to_string(&path).expect("a source file is UTF-8")));
        }
    }
}

#[test]
fn src_has_no_upward_import_and_no_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    read_src(&root, &root, &mut files);
    assert!(files.len() > 20, "src/ was not read: {} files", files.len());
    let found = violations(&files);
    assert!(found.is_empty(), "{} layer violations:\n{}", found.len(), found.join("\n"));
}

fn tree(files: &[(&str, &str)]) -> Vec<String> {
    let files: Vec<(String, String)> = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
    violations(&files)
}

#[test]
fn an_upward_import_is_refused() {
    let found =
        tree(&[("numeric/grid.rs", "use crate::privacy::epsilon::Epsilon;"), ("privacy/epsilon.rs", "")]);
    assert_eq!(
        found,
        ["src/numeric/grid.rs imports crate::privacy::epsilon (layer privacy is above numeric)"]
    );
}

#[test]
fn a_grouped_upward_import_is_refused() {
    let found = tree(&[
        ("data/scan.rs", "use crate::{numeric::grid::Grid, query::{count::Count, sum}};"),
        ("numeric/grid.rs", ""),
        ("query/count.rs", ""),
        ("query/sum.rs", ""),
    ]);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().all(|f| f.contains("layer query is above data")), "{found:?}");
}

#[test]
fn a_super_path_that_closes_a_cycle_is_refused() {
    let found = tree(&[
        ("query/mod.rs", "pub mod sum;\nfn f() { crate::query::sum::g() }"),
        ("query/sum.rs", "use super::Aggregate;"),
    ]);
    assert_eq!(found, ["cycle: query, query::sum"]);
}

#[test]
fn a_cycle_within_one_layer_is_refused() {
    let found = tree(&[
        ("cmd/run.rs", "use crate::cmd::workload::W;"),
        ("cmd/workload.rs", "use crate::cmd::run::R;"),
    ]);
    assert_eq!(found, ["cycle: cmd::run, cmd::workload"]);
}

#[test]
fn a_module_outside_the_layers_is_refused() {
    let found = tree(&[("utils.rs", "")]);
    assert_eq!(found, ["src/utils.rs: module utils is in no layer: add it to LAYERS in tests/layers.rs"]);
}

#[test]
fn test_modules_and_comments_are_not_imports() {
    let found = tree(&[
        (
            "numeric/grid.rs",
            "// see crate::cmd::run\n/// [`crate::query::sum`]\nfn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::query::sum::Sum;\n    fn g() { if true { } }\n}\nfn h() {}",
        ),
        ("query/sum.rs", ""),
        ("cmd/run.rs", ""),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_layered_tree_passes() {
    let found = tree(&[
        ("lib.rs", "pub mod cli; pub mod query;"),
        ("error.rs", ""),
        ("numeric/mod.rs", "pub mod grid;"),
        ("numeric/grid.rs", "use crate::error::Error;"),
        ("query/mod.rs", "pub mod sum;\npub mod statistic;"),
        ("query/statistic.rs", "use crate::numeric::grid::Grid;"),
        ("query/sum.rs", "use crate::query::statistic::Statistic;\nuse super::statistic::Context;"),
        ("cli/mod.rs", "use crate::query::sum::Sum;"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}
