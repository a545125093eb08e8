//! The layers of `src/`, lowest first:
//!
//! `error` (0) < `numeric` (1) < `privacy` (2) < `data` (3) < `report` (4) < `query` (5) < `cmd` (6)
//! < `cli` (7).
//!
//! The engine boundary: no module of `data` (the executors) may reach, directly or through
//! others, any module of `privacy` but `privacy::unit` (the noise, the accountant and the ledger
//! stay with the caller).
//!
//! A module's layer is its first path segment under `src/` (`src/X.rs` or `src/X/`). A module may
//! refer to its own layer and the layers below it, never above, and no modules may refer to each
//! other in a cycle. Errors and exact numbers know nothing of privacy, the mechanisms know nothing
//! of CSV files, the queries know nothing of the command line: each layer can be read, tested and
//! changed with only the layers below it in mind, and the folder tree shows the order.
//!
//! References are read from the text: `crate::…` paths (grouped `use crate::{a, b::{c, d}}`
//! expanded), `super::…` and `self::…` paths, and paths through a child declared with `mod x;`,
//! each resolved to the longest prefix that is a module. Comments, string literals and
//! `#[cfg(test)]` modules are left out. `src/lib.rs` and `src/main.rs` are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first. A new top-level module under `src/` must be added here.
const LAYERS: [&str; 8] = ["error", "numeric", "privacy", "data", "report", "query", "cmd", "cli"];

/// `src/data/scan.rs` → `data::scan`, `src/query/mod.rs` → `query`; None for the crate roots.
fn module_of(path: &str) -> Option<String> {
    let rel = path.strip_prefix("src/")?.strip_suffix(".rs")?;
    let rel = rel.strip_suffix("/mod").unwrap_or(rel);
    (rel != "lib" && rel != "main").then(|| rel.replace('/', "::"))
}

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| module.split("::").next() == Some(*l))
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// The words, `::` and other punctuation of `text`, without comments, strings and char literals.
fn tokens(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let skip_to =
        |i: usize, end: &str| text[i.min(b.len())..].find(end).map_or(b.len(), |k| i + k + end.len());
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        let (c, start, next) = (b[i], i, b.get(i + 1).copied().unwrap_or(b' '));
        i += 1;
        if c == b'/' && (next == b'/' || next == b'*') {
            i = if next == b'/' { skip_to(i, "\n") } else { skip_to(i + 1, "*/") };
        } else if c == b'"' {
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'\''
            && (next == b'\\'
                || text[i..].chars().next().is_some_and(|x| b.get(i + x.len_utf8()) == Some(&c)))
        {
            // A char literal (`'x'`, `'\''`, `'\u{b5}'`), where `'x` alone is a lifetime.
            i = skip_to(if next == b'\\' { i + 2 } else { i }, "'");
        } else if c == b':' && next == b':' {
            out.push("::".to_string());
            i += 1;
        } else if is_word(c) {
            while i < b.len() && is_word(b[i]) {
                i += 1;
            }
            let hashes = text[i..].len() - text[i..].trim_start_matches('#').len();
            if matches!(&text[start..i], "r" | "br") && b.get(i + hashes) == Some(&b'"') {
                i = skip_to(i + hashes + 1, &format!("\"{}", "#".repeat(hashes)));
            } else {
                out.push(text[start..i].to_string());
            }
        } else if !c.is_ascii_whitespace() {
            out.push((c as char).to_string());
        }
    }
    out
}

/// Whether the tokens from `i` on start with `pattern`.
fn is(t: &[String], i: usize, pattern: &[&str]) -> bool {
    pattern.iter().enumerate().all(|(k, p)| t.get(i + k).is_some_and(|w| w == p))
}

/// The index after the bracket that closes the one at `open`.
fn close(t: &[String], open: usize) -> usize {
    let mut depth = 0;
    for (i, w) in t.iter().enumerate().skip(open) {
        depth += ["(", "[", "{"].contains(&w.as_str()) as i32 - [")", "]", "}"].contains(&w.as_str()) as i32;
        if depth == 0 {
            return i + 1;
        }
    }
    t.len()
}

/// The tokens without `#[cfg(test)] mod x { … }`, attribute to closing brace.
fn strip_test_modules(t: &[String]) -> Vec<String> {
    let (mut out, mut i) = (Vec::new(), 0);
    while i < t.len() {
        if is(t, i, &["#", "[", "cfg", "(", "test", ")", "]"]) {
            let mut j = i + 7;
            while is(t, j, &["#", "["]) || is(t, j, &["pub"]) {
                j = if is(t, j, &["#"]) || is(t, j + 1, &["("]) { close(t, j + 1) } else { j + 1 };
            }
            if is(t, j, &["mod"]) && is(t, j + 2, &["{"]) {
                i = close(t, j + 2);
                continue;
            }
        }
        out.push(t[i].clone());
        i += 1;
    }
    out
}

/// Reads the use tree at `i` after `prefix::`, with `{a, b::{c, d as e}, self, *}` expanded.
fn tree(t: &[String], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    if is(t, *i, &["{"]) {
        *i += 1;
        while *i < t.len() && !is(t, *i, &["}"]) {
            let start = *i;
            tree(t, i, prefix.clone(), out);
            *i += 2 * is(t, *i, &["as"]) as usize;
            *i += is(t, *i, &[","]) as usize;
            if *i == start {
                return;
            }
        }
        *i += 1;
        return;
    }
    let mut path = prefix;
    let word = t.get(*i).filter(|w| w.bytes().all(is_word) || *w == "*");
    *i += word.is_some() as usize;
    path.extend(word.filter(|w| *w != "self" && *w != "*").cloned());
    if is(t, *i, &["::"]) {
        *i += 1;
        tree(t, i, path, out);
    } else {
        out.push(path);
    }
}

/// Every path that starts at `crate`, `super`, `self` or a child declared with `mod x;`, made
/// absolute for code in `module` (without the leading `crate`).
fn paths(module: &str, t: &[String]) -> BTreeSet<Vec<String>> {
    let children: BTreeSet<&str> = (0..t.len())
        .filter(|&k| is(t, k, &["mod"]) && is(t, k + 2, &[";"]))
        .map(|k| t[k + 1].as_str())
        .collect();
    let mut out = BTreeSet::new();
    for i in 0..t.len() {
        let root = ["crate", "super", "self"].contains(&t[i].as_str()) || children.contains(t[i].as_str());
        // Not the middle of a path, nor a method (`.sum::<u64>()`).
        if !root || !is(t, i + 1, &["::"]) || (i > 0 && (t[i - 1] == "::" || t[i - 1] == ".")) {
            continue;
        }
        let (mut raw, mut j) = (Vec::new(), i + 2);
        tree(t, &mut j, vec![t[i].clone()], &mut raw);
        for path in raw {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let mut base: Vec<String> = module.split("::").map(String::from).collect();
            base.truncate(if path[0] == "crate" { 0 } else { base.len().saturating_sub(ups) });
            let skip = if path[0] == "crate" || path[0] == "self" { 1 } else { ups };
            base.extend(path[skip..].iter().cloned());
            out.insert(base);
        }
    }
    out
}

/// The layering and cycle violations of `files` (paths like `src/data/scan.rs` and their text).
fn violations(files: &[(String, String)]) -> Vec<String> {
    let modules: BTreeMap<String, &(String, String)> =
        files.iter().filter_map(|f| Some((module_of(&f.0)?, f))).collect();
    let mut found = Vec::new();
    let unknown: BTreeSet<&str> =
        modules.keys().filter(|m| rank(m).is_none()).map(|m| m.split("::").next().unwrap()).collect();
    for top in unknown {
        found.push(format!("module {top} is in no layer: add it to the list in tests/layers.rs"));
    }
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (module, (path, text)) in &modules {
        for target in paths(module, &strip_test_modules(&tokens(text))) {
            let to =
                (1..=target.len()).rev().map(|k| target[..k].join("::")).find(|m| modules.contains_key(m));
            let why = match (&to, rank(module), to.as_deref().and_then(rank)) {
                (None, _, _) => "not in a module: the crate root is in no layer".to_string(),
                (_, Some(r), Some(t)) if t > r => format!("layer {} is above {}", LAYERS[t], LAYERS[r]),
                _ => String::new(),
            };
            if !why.is_empty() {
                found.push(format!("{path} imports crate::{} ({why})", target.join("::")));
            }
            edges.entry(module).or_default().extend(to.filter(|to| to != module));
        }
    }
    // Two modules are in one cycle when each reaches the other.
    let reach = |from: &str| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from]);
        while let Some(m) = todo.pop() {
            for next in edges.get(m).into_iter().flatten() {
                if seen.insert(next.as_str()) {
                    todo.push(next);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&str, BTreeSet<&str>> = modules.keys().map(|m| (m.as_str(), reach(m))).collect();
    let mut cycles = BTreeSet::new();
    for (m, from_m) in &reached {
        let cycle: Vec<&str> = reached
            .keys()
            .copied()
            .filter(|n| n == m || from_m.contains(n) && reached[n].contains(m))
            .collect();
        if cycle.len() > 1 {
            cycles.insert(cycle.join(", "));
        }
    }
    found.extend(cycles.into_iter().map(|c| format!("cycle: {c}")));
    // The engine boundary (DESIGN §7.7): the executors (`data`) compute exact aggregates and
    // never reach the noise, the accountant or the ledger, directly or through another module;
    // of the privacy layer they may use only the unit and its contribution bounds.
    for (m, from_m) in &reached {
        if rank(m) != rank("data") {
            continue;
        }
        for n in from_m {
            if rank(n) == rank("privacy") && *n != "privacy::unit" {
                found.push(format!(
                    "engine boundary: {m} reaches {n} (an executor may use only privacy::unit)"
                ));
            }
        }
    }
    found
}

fn read_src(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let rel = format!("{rel}/{}", entry.file_name().to_string_lossy());
        if entry.file_type().unwrap().is_dir() {
            read_src(&entry.path(), &rel, out);
        } else if rel.ends_with(".rs") {
            out.push((rel, std::fs::read_to_string(entry.path()).unwrap()));
        }
    }
}

#[test]
fn src_has_no_upward_import_and_no_cycle() {
    let mut files = Vec::new();
    read_src(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), "src", &mut files);
    files.sort();
    let found = violations(&files);
    assert!(found.is_empty(), "{} layering violations in src/:\n  {}", found.len(), found.join("\n  "));
}

/// The violations of a tree of files, each given as its path, then its text from the next line.
fn check(files: &[&str]) -> Vec<String> {
    let split =
        |f: &&str| f.split_once('\n').map_or((f.to_string(), String::new()), |(p, t)| (p.into(), t.into()));
    violations(&files.iter().map(split).collect::<Vec<_>>())
}

fn upward(path: &str, import: &str, above: &str, below: &str) -> String {
    format!("{path} imports crate::{import} (layer {above} is above {below})")
}

#[test]
fn an_executor_reaching_the_noise_is_refused() {
    let scan = "src/data/scan.rs\nuse crate::privacy::unit::Bounds;\nfn f() { crate::data::row::g(); }";
    let row = "src/data/row.rs\nfn g() { crate::privacy::contribution::h(); }";
    let contribution = "src/privacy/contribution.rs\nuse crate::privacy::laplace::laplace;";
    let (unit, laplace) = ("src/privacy/unit.rs\n", "src/privacy/laplace.rs\n");
    let found = check(&[scan, row, contribution, unit, laplace]);
    let reach = |m: &str, n: &str| {
        format!("engine boundary: {m} reaches {n} (an executor may use only privacy::unit)")
    };
    let mut expected = vec![
        reach("data::row", "privacy::contribution"),
        reach("data::row", "privacy::laplace"),
        reach("data::scan", "privacy::contribution"),
        reach("data::scan", "privacy::laplace"),
    ];
    expected.sort();
    let mut found = found;
    found.sort();
    assert_eq!(found, expected);
    assert!(check(&[scan, unit, "src/data/row.rs\nfn g() {}"]).is_empty());
}

#[test]
fn an_upward_import_is_refused() {
    let sum = "src/query/sum.rs\nuse crate::cmd::run;\nfn f() { crate::error::bad(); }";
    let found = check(&["src/cmd.rs", "src/query/mod.rs", sum, "src/error.rs"]);
    assert_eq!(found, [upward("src/query/sum.rs", "cmd::run", "cmd", "query")]);
}

#[test]
fn a_grouped_upward_import_is_refused() {
    let numeric =
        "src/numeric.rs\nuse crate::{\n    error::Error,\n    data::{scan::{self, Fold}, Table as T},\n};";
    let found = check(&[numeric, "src/error.rs", "src/data/mod.rs", "src/data/scan.rs"]);
    let imports = ["data::Table", "data::scan", "data::scan::Fold"];
    assert_eq!(found, imports.map(|i| upward("src/numeric.rs", i, "data", "numeric")));
}

#[test]
fn a_super_import_of_a_parent_that_uses_its_child_is_a_cycle() {
    let query = "src/query/mod.rs\npub mod sum;\npub use crate::query::sum::Sum;\npub struct Aggregate;";
    let sum = "src/query/sum.rs\nuse super::Aggregate;\nuse super::super::error::Error;";
    assert_eq!(check(&[query, sum, "src/error.rs"]), ["cycle: query, query::sum"]);
    // The same through a child declared with `mod x;` (but `.sum::<usize>()` is no reference).
    let query = "src/query/mod.rs\nmod count;\nmod sum;\n\
                 fn f() -> usize { count::rows() + [1].iter().sum::<usize>() }";
    let count = "src/query/count.rs\npub fn rows() -> usize { super::LIMIT }";
    assert_eq!(check(&[query, count, "src/query/sum.rs\nuse super::LIMIT;"]), ["cycle: query, query::count"]);
}

#[test]
fn a_cycle_within_one_layer_is_refused() {
    let scan = "src/data/scan.rs\nuse crate::data::table::Table;";
    let table = "src/data/table.rs\nfn f() { crate::data::scan::run(); }";
    assert_eq!(check(&["src/data/mod.rs", scan, table]), ["cycle: data::scan, data::table"]);
}

#[test]
fn a_module_in_no_layer_and_an_item_of_the_crate_root_are_refused() {
    let found = check(&["src/lib.rs\npub mod plan;", "src/plan.rs", "src/cli.rs\nuse crate::run;"]);
    let root = "src/cli.rs imports crate::run (not in a module: the crate root is in no layer)";
    assert_eq!(found, ["module plan is in no layer: add it to the list in tests/layers.rs", root]);
}

#[test]
fn a_test_module_may_import_from_any_layer() {
    let numeric = "src/numeric.rs\n#[cfg(test)]\nmod tests {\n    use crate::cli::Cli;\n    \
                   fn f() { let _ = \"}\"; if true {} }\n}\n#[cfg(test)]\n#[allow(dead_code)]\n\
                   pub(crate) mod more { use crate::cli::Cli; }\nuse crate::cli::Args;";
    let found = check(&[numeric, "src/cli.rs"]);
    assert_eq!(found, [upward("src/numeric.rs", "cli::Args", "cli", "numeric")]);
}

#[test]
fn comments_and_strings_are_not_imports() {
    let numeric = "src/numeric.rs\n//! Run by crate::cmd.\n/// See [`crate::cmd::run`].\n\
                   fn f() -> &'static str {\n    // crate::cmd\n    /* crate::cmd */ let _ = '\"';\n    \
                   \"crate::cmd::run\"\n}\nconst R: &str = r#\"crate::cmd\"#;";
    assert_eq!(check(&[numeric, "src/cmd.rs"]), Vec::<String>::new());
}

#[test]
fn a_layered_tree_passes() {
    let found = check(&[
        "src/lib.rs\npub mod error;\npub mod numeric;\npub mod query;\npub mod cli;",
        "src/main.rs\nfn main() { dpstat::cli::main(); }",
        "src/error.rs\npub struct Error;",
        "src/numeric.rs\nuse crate::error::Error;",
        "src/query/mod.rs\npub mod sum;\npub mod count;\nuse crate::{error::Error, numeric};",
        "src/query/sum.rs\nuse super::count::rows;\nuse crate::numeric::*;\nuse self::inner::X;",
        "src/query/count.rs\npub(crate) fn f() -> Vec<u8> { [1u8].iter().copied().collect() }",
        "src/cli.rs\nuse crate::query::{sum, count::rows as r};\nfn f() { crate::error::Error; }",
    ]);
    assert_eq!(found, Vec::<String>::new());
}
