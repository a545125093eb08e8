//! Executable documentation: every ```console block of the Markdown docs (README.md, GUIDE.md,
//! CONTRIBUTING.md and docs/*.md but docs/DESIGN.md, which holds no examples), and every example
//! in the `--help` of every subcommand, runs as written; and every relative link in the docs
//! points at a file, and at a heading of it, that exist.
//!
//! Each block runs in a sandbox of its own: a temporary directory, its working directory, that
//! holds `fixtures/` (a link to the repository's), so paths read as from the repository root
//! and files the examples write (ledgers, keys, plots, man pages) stay in the sandbox, which no
//! other block sees; `HOME` is another temporary directory, printed as `~`. That nothing lands
//! in the checkout is asserted: fixtures/, the sandboxes' one way into it, holds the same files
//! with the same sizes and times after the blocks ran as before. `dpstat` is the binary under
//! test, first on `PATH`, and a leading `cargo run --release --` stands for it. A block's
//! commands share its directory and run in order in `sh`, each with `$?` set to the previous
//! one's exit status. What a command prints, standard error merged into standard output as a
//! terminal shows them, must equal the lines under it (trailing spaces aside).
//!
//! How a block is marked, on the line before its opening fence:
//! - nothing: run with `DPSTAT_INSECURE_SEED=1`, so the noise, and the output, are reproducible;
//!   the seed's own warning line is not part of the output;
//! - `<!-- check: unseeded -->`: run without the seed (a run with `--ledger` refuses it); every
//!   number, SHA-256, hex digest of 12 or more digits and timestamp is masked on both sides
//!   before comparing, and the warning
//!   that a bound covers a statistic's whole range, which depends on the noise drawn, is left
//!   out on both sides.
//!
//! A dpstat command in any other code block of the docs (indented, or fenced as anything but
//! `console`) fails the test, so a new example cannot escape it: a line that runs `dpstat`
//! (also after `VAR=value` assignments, or as a path ending in `/dpstat`), `cargo run`, or a
//! script under `bench/` or `scripts/`, which run dpstat. The one exception is an example that
//! cannot run here (a benchmark, a cluster): a fenced block marked
//! `<!-- check: not run (REASON) -->`, where REASON says why and what runs it instead.
//! `README_BLESS=1 cargo test --test integration readme::` rewrites, in every doc, the output of every example
//! that differs with what dpstat prints now (an unseeded one that matches once masked keeps the
//! run it shows, so a bless does not churn noise, digests and times).
//!
//! Unix only: the examples are shell commands.
#![cfg(unix)]

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use clap::CommandFactory;
use dpstat::cli::Cli;

const UNSEEDED: &str = "<!-- check: unseeded -->";
/// `<!-- check: not run (REASON) -->` before a fenced block: its commands are not run, for the
/// reason given.
const NOT_RUN: (&str, &str) = ("<!-- check: not run (", ") -->");
const SEED_WARNING: &str = "DPSTAT_INSECURE_SEED is set:";
/// A warning that an unseeded run may or may not print, depending on the noise it drew.
const NOISE_DEPENDENT: &str = "covers every value it can take";
/// Blocks (or help pages) run at once, each in its own sandbox: each command is a process or
/// two that spend part of their life starting, so a few more than the cores keep them busy.
const WORKERS: usize = 4;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A directory that looks like the repository root to the examples.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::os::unix::fs::symlink(root().join("fixtures"), dir.path().join("fixtures")).unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        Sandbox { dir }
    }

    /// Runs `command` in `sh` with `$?` = `last`; returns its exit status and its output, stderr
    /// merged into stdout.
    fn run(&self, command: &str, last: i32, seeded: bool) -> (i32, String) {
        let home = self.dir.path().join("home");
        // An example that writes under ~ (completions, man pages) needs the directory to exist.
        for target in command.split("> ~/").skip(1) {
            let file = target.split_whitespace().next().unwrap_or_default();
            if let Some(parent) = Path::new(file).parent() {
                std::fs::create_dir_all(home.join(parent)).unwrap();
            }
        }
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_dpstat"));
        let path =
            format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!("exec 2>&1; (exit {last}); {command}"))
            .current_dir(self.dir.path())
            .env("PATH", path)
            .env("HOME", &home)
            .env_remove("DPSTAT_LEDGER")
            .env_remove("DPSTAT_LEDGER_KEY_FILE")
            .env_remove("DPSTAT_INSECURE_SEED")
            .env_remove("COLUMNS");
        if seeded {
            sh.env("DPSTAT_INSECURE_SEED", "1");
        }
        let out = sh.output().expect("sh runs");
        // Paths under the temporary HOME read as the user typed them.
        let text = String::from_utf8_lossy(&out.stdout).replace(&home.display().to_string(), "~");
        let lines: Vec<&str> = text.lines().filter(|l| !l.contains(SEED_WARNING)).collect();
        let mut printed = lines.join("\n");
        if !lines.is_empty() {
            printed.push('\n');
        }
        (out.status.code().unwrap_or(-1), printed)
    }
}

/// One `$ command` of a block and the lines shown under it.
struct Example {
    /// 1-based line of the `$`.
    line: usize,
    /// As written, continuation lines joined with their `\`.
    written: Vec<String>,
    expected: Vec<String>,
}

impl Example {
    /// The command as `sh` runs it.
    fn command(&self) -> String {
        let joined = self.written.join("\n");
        match joined.strip_prefix("cargo run --release -- ") {
            Some(rest) => format!("dpstat {rest}"),
            None => joined,
        }
    }
}

/// A ```console block: lines `open`..`close` (0-based, the fences).
struct Block {
    open: usize,
    close: usize,
    seeded: bool,
    examples: Vec<Example>,
}

/// Whether a line of code runs dpstat: `dpstat …` (after any `VAR=value` assignments, or as a
/// path to the binary), `cargo run …`, or a script of bench/ or scripts/ (they run dpstat).
fn is_dpstat_command(code: &str) -> bool {
    let code = code.trim_start().trim_start_matches("$ ");
    let mut words = code.split_whitespace().skip_while(|w| {
        w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    });
    let Some(first) = words.next() else { return false };
    first == "dpstat"
        || first.ends_with("/dpstat")
        || (first == "cargo" && words.next() == Some("run"))
        || ["bench/", "scripts/"]
            .iter()
            .any(|dir| first.strip_prefix(dir).is_some_and(|script| !script.is_empty()))
}

/// The reason of a `<!-- check: not run (REASON) -->` marker; None for any other line, and for
/// a marker whose reason is too short to say why.
fn not_run_reason(marker: &str) -> Option<&str> {
    let reason = marker.trim().strip_prefix(NOT_RUN.0)?.strip_suffix(NOT_RUN.1)?.trim();
    (reason.split_whitespace().count() >= 3).then_some(reason)
}

/// The console blocks of a Markdown text, and the lines of other code that hold a dpstat
/// command (which would not be checked).
fn parse(text: &str) -> (Vec<Block>, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = vec![];
    let mut unchecked = vec![];
    let mut i = 0;
    let mut previous_blank = true;
    while i < lines.len() {
        let line = lines[i];
        if let Some(info) = line.strip_prefix("```") {
            let open = i;
            let close = (i + 1..lines.len()).find(|&j| lines[j].starts_with("```")).unwrap_or(lines.len());
            let marker =
                lines[..open].iter().rev().find(|l| !l.trim().is_empty()).copied().unwrap_or_default();
            if info.trim() == "console" {
                if marker.contains(NOT_RUN.0) {
                    unchecked
                        .push(format!("line {}: a console block is always run; fence it as `sh`", open + 1));
                }
                let mut examples: Vec<Example> = vec![];
                let mut continued = false;
                for (j, body) in lines.iter().enumerate().take(close).skip(open + 1) {
                    if continued {
                        let last = examples.last_mut().unwrap();
                        last.written.push(body.to_string());
                        continued = body.ends_with('\\');
                    } else if let Some(command) = body.strip_prefix("$ ") {
                        examples.push(Example {
                            line: j + 1,
                            written: vec![command.to_string()],
                            expected: vec![],
                        });
                        continued = command.ends_with('\\');
                    } else if let Some(last) = examples.last_mut() {
                        last.expected.push(body.to_string());
                    } else {
                        unchecked.push(format!("line {}: output before any `$ ` command: {body}", j + 1));
                    }
                }
                blocks.push(Block { open, close, seeded: marker.trim() != UNSEEDED, examples });
            } else if not_run_reason(marker).is_none() {
                for (j, body) in lines.iter().enumerate().take(close).skip(open + 1) {
                    if is_dpstat_command(body) {
                        unchecked.push(format!("line {}: {body}", j + 1));
                    }
                }
            }
            i = close + 1;
            previous_blank = false;
            continue;
        }
        // An indented code block starts after a blank line and goes on while lines are indented.
        if previous_blank && line.starts_with("    ") {
            while i < lines.len() && (lines[i].starts_with("    ") || lines[i].trim().is_empty()) {
                if is_dpstat_command(lines[i]) {
                    unchecked.push(format!("line {}: {}", i + 1, lines[i]));
                }
                i += 1;
            }
            previous_blank = true;
            continue;
        }
        previous_blank = line.trim().is_empty();
        i += 1;
    }
    (blocks, unchecked)
}

/// Numbers, SHA-256 digests and timestamps masked, and noise-dependent warnings left out: what an
/// unseeded run may change.
fn masked(text: &str) -> String {
    let kept: Vec<&str> = text.lines().filter(|l| !l.contains(NOISE_DEPENDENT)).collect();
    let text = kept.join("\n");
    let mut out = String::new();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("sha256:") {
            let hex = after.chars().take_while(char::is_ascii_hexdigit).count();
            out.push_str("sha256:#");
            rest = &after[hex..];
            continue;
        }
        let c = rest.chars().next().unwrap();
        // A digest's prefix (a ledger's head, a data fingerprint), at a word's start.
        let hex = rest.chars().take_while(char::is_ascii_hexdigit).count();
        let word_start = !out.ends_with(|p: char| p.is_ascii_alphanumeric());
        let word_end = !rest[hex..].starts_with(|n: char| n.is_ascii_alphanumeric());
        if hex >= 12 && word_start && word_end {
            out.push('#');
            rest = &rest[hex..];
            continue;
        }
        if c.is_ascii_digit() {
            let number = rest
                .char_indices()
                .find(|&(_, d)| !(d.is_ascii_digit() || ".eE-+:TZ".contains(d)))
                .map_or(rest.len(), |(at, _)| at);
            out.push('#');
            rest = &rest[number..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn trimmed(lines: &str) -> Vec<String> {
    lines.lines().map(|l| l.trim_end().to_string()).collect()
}

/// The Markdown files whose examples run: the README, the guide, CONTRIBUTING.md and every
/// docs/*.md but DESIGN.md (it explains the code and holds no examples), as paths relative to
/// the repository root.
fn doc_files() -> Vec<String> {
    let mut files: Vec<String> = ["README.md", "GUIDE.md", "CONTRIBUTING.md"].map(String::from).to_vec();
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md") && name != "DESIGN.md")
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Every file and directory under fixtures/, with its length and modification time: the one way
/// from a sandbox into the checkout is its link to fixtures/, so an example that wrote into the
/// checkout changed this.
fn fixtures_snapshot() -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    let mut found = vec![];
    let mut pending = vec![root().join("fixtures")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                pending.push(path.clone());
            }
            found.push((path, meta.len(), meta.modified().ok()));
        }
    }
    found.sort();
    found
}

#[test]
fn doc_examples_print_what_the_docs_show() {
    let files = doc_files();
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(root().join(f)).unwrap_or_else(|e| panic!("{f}: {e}")))
        .collect();
    let mut unchecked = vec![];
    // Every block of every file, as (file index, block).
    let mut blocks: Vec<(usize, Block)> = vec![];
    for (f, text) in texts.iter().enumerate() {
        let (found, bad) = parse(text);
        unchecked.extend(bad.into_iter().map(|b| format!("{} {b}", files[f])));
        let count = found.len();
        blocks.extend(found.into_iter().map(|b| (f, b)));
        let least = match files[f].as_str() {
            "README.md" => 5,
            "GUIDE.md" => 40,
            _ => 0,
        };
        assert!(count >= least, "{}: the examples were not found: {count} blocks", files[f]);
    }
    assert!(
        unchecked.is_empty(),
        "dpstat commands outside a ```console block, which this test would not run (write them \
         as ```console blocks with `$ ` and their output; an example that cannot run here, such \
         as a benchmark, goes in a fenced block marked `<!-- check: not run (REASON) -->` on the \
         line before, REASON saying why and what runs it):\n{}",
        unchecked.join("\n")
    );
    let bless = std::env::var_os("README_BLESS").is_some();
    let before = fixtures_snapshot();
    // Blocks are independent (each has its own sandbox), so they run on a few threads; each
    // block's commands still run in order, sharing its directory and `$?`.
    let done = AtomicUsize::new(0);
    let outcomes = common::parallel_map(WORKERS, blocks.len(), |b| {
        let (f, block) = &blocks[b];
        let start = Instant::now();
        let outcome = run_block(&files[*f], block);
        // Past the harness's capture: a slow block (a plan that solves for ε) is not silence.
        let _ = writeln!(
            std::io::stderr().lock(),
            "readme: block {}/{} ({} line {}) ran in {:.1} s",
            done.fetch_add(1, Ordering::Relaxed) + 1,
            blocks.len(),
            files[*f],
            block.open + 1,
            start.elapsed().as_secs_f64()
        );
        outcome
    });
    let after = fixtures_snapshot();
    assert!(
        before == after,
        "the examples changed fixtures/ in the checkout: an example wrote through the sandbox's \
         link to it (write files with a path relative to the sandbox, not under fixtures/)"
    );
    let mut failures = vec![];
    let mut lines: Vec<Vec<String>> =
        texts.iter().map(|text| text.lines().map(String::from).collect()).collect();
    // Back to front, so a blessed block's new length does not move the blocks before it.
    for ((f, block), (failed, rewritten)) in blocks.iter().zip(outcomes).rev() {
        failures.extend(failed);
        if bless {
            lines[*f].splice(block.open + 1..block.close, rewritten);
        }
    }
    if bless {
        for (f, file) in files.iter().enumerate() {
            let text = lines[f].join("\n") + "\n";
            if text != texts[f] {
                std::fs::write(root().join(file), text).unwrap_or_else(|e| panic!("{file}: {e}"));
            }
        }
        return;
    }
    assert!(
        failures.is_empty(),
        "{}\n\n{} example(s) differ from what dpstat prints. Fix the example, or if the new \
         output is right, rewrite the outputs with README_BLESS=1 cargo test --test integration readme:: and read \
         the diff.",
        failures.join("\n\n"),
        failures.len()
    );
}

/// The anchor GitHub gives a heading: lowercase, punctuation dropped (letters of any script,
/// digits, `-` and `_` kept), spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings (outside code blocks), a repeated one numbered
/// `-1`, `-2`, … as GitHub does.
fn anchors(text: &str) -> Vec<String> {
    let mut found: Vec<String> = vec![];
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if fenced || hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while found.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        found.push(anchor);
    }
    found
}

/// The targets of a Markdown text's links and images (`](target)`), outside code blocks and
/// code spans, each with its 1-based line.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut found = vec![];
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.starts_with("    ") {
            continue;
        }
        for (k, span) in line.split('`').enumerate() {
            if k % 2 == 1 {
                continue;
            }
            let mut rest = span;
            while let Some(at) = rest.find("](") {
                rest = &rest[at + 2..];
                let end = rest.find(')').unwrap_or(rest.len());
                found.push((i + 1, rest[..end].trim().to_string()));
                rest = &rest[end..];
            }
        }
    }
    found
}

#[test]
fn relative_links_in_the_docs_point_at_files_and_headings() {
    let mut files = doc_files();
    files.push("docs/DESIGN.md".into());
    let mut broken = vec![];
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        for (line, target) in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() {
                root().join(file)
            } else {
                root().join(file).parent().unwrap().join(path)
            };
            if !resolved.exists() {
                broken.push(format!("{file} line {line}: {target}: no file {}", resolved.display()));
                continue;
            }
            if !anchor.is_empty() {
                let target_text = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !anchors(&target_text).iter().any(|a| a == anchor) {
                    broken.push(format!("{file} line {line}: {target}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} relative links found");
    assert!(broken.is_empty(), "links that lead nowhere:\n{}", broken.join("\n"));
}

/// Runs a block's examples in order in a new sandbox: the failures (as messages), and the
/// block's body as dpstat prints it now (for `README_BLESS`; an example that matches is kept as
/// written).
fn run_block(file: &str, block: &Block) -> (Vec<String>, Vec<String>) {
    let sandbox = Sandbox::new();
    let mut last = 0;
    let mut failures = vec![];
    let mut rewritten = vec![];
    for example in &block.examples {
        let (status, printed) = sandbox.run(&example.command(), last, block.seeded);
        last = status;
        let (want, got) = (example.expected.join("\n"), trimmed(&printed).join("\n"));
        let (want_cmp, got_cmp) =
            if block.seeded { (want.clone(), got.clone()) } else { (masked(&want), masked(&got)) };
        let same = want_cmp.trim_end() == got_cmp.trim_end();
        if !same {
            failures.push(format!(
                "{file} line {}: $ {}\n--- {file} shows:\n{want}\n--- dpstat printed (exit {status}):\n{got}",
                example.line,
                example.written.join("\n")
            ));
        }
        for (k, written) in example.written.iter().enumerate() {
            rewritten.push(if k == 0 { format!("$ {written}") } else { written.clone() });
        }
        // An unseeded example that still matches keeps the run it shows: blessing rewrites what
        // changed, not the noise, digests and times of every run.
        rewritten.extend(if same { example.expected.clone() } else { trimmed(&printed) });
    }
    (failures, rewritten)
}

/// The examples in `--help`: every line that starts with `dpstat `, and every `dpstat …` in
/// backquotes that is a whole command (no `…`, no placeholder such as QUERY), up to a pipe,
/// redirection, `&&` or `#` comment.
fn help_examples(help: &str) -> Vec<String> {
    let mut found = vec![];
    let mut keep = |code: &str| {
        let mut command = code.trim();
        for cut in [" #", " |", " >", " &&"] {
            if let Some(at) = command.find(cut) {
                command = &command[..at];
            }
        }
        let placeholder =
            command.split_whitespace().any(|w| w.len() >= 4 && w.chars().all(|c| c.is_ascii_uppercase()));
        if command.starts_with("dpstat ") && !command.contains('…') && !placeholder {
            found.push(command.trim().to_string());
        }
    };
    for line in help.lines() {
        if line.trim_start().starts_with("dpstat ") {
            keep(line);
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 {
                keep(span);
            }
        }
    }
    found
}

/// Every subcommand path: `count`, …, `plan`, `plan sum`, ….
fn subcommand_paths() -> Vec<Vec<String>> {
    let command = Cli::command();
    let mut paths = vec![vec![]];
    for sub in command.get_subcommands() {
        paths.push(vec![sub.get_name().to_string()]);
        for inner in sub.get_subcommands() {
            paths.push(vec![sub.get_name().to_string(), inner.get_name().to_string()]);
        }
    }
    paths
}

#[test]
fn help_examples_run_from_the_repository_root() {
    // One sandbox per help page, the pages on a few threads; a page's examples run in order.
    let paths = subcommand_paths();
    let pages = common::parallel_map(WORKERS, paths.len(), |p| {
        let path = &paths[p];
        let sandbox = Sandbox::new();
        let (status, help) = sandbox.run(&format!("dpstat {} --help", path.join(" ")), 0, false);
        assert_eq!(status, 0, "dpstat {} --help", path.join(" "));
        let mut ran = 0;
        let mut failures = vec![];
        for example in help_examples(&help) {
            // The test seed is refused with a ledger, by design: those run as in production.
            let seeded = !example.contains("--ledger");
            let (status, printed) = sandbox.run(&example, 0, seeded);
            ran += 1;
            // dpstat check exits 4 when it finds problems, which its example file has.
            let expected = if example.starts_with("dpstat check ") { 4 } else { 0 };
            if status != expected {
                failures
                    .push(format!("dpstat {} --help: {example}\n  exit {status}: {printed}", path.join(" ")));
            }
        }
        (ran, failures)
    });
    let ran: usize = pages.iter().map(|(ran, _)| ran).sum();
    let failures: Vec<String> = pages.into_iter().flat_map(|(_, failures)| failures).collect();
    assert!(ran >= 25, "only {ran} examples found in --help");
    assert!(failures.is_empty(), "--help examples that fail:\n{}", failures.join("\n"));
}

#[test]
fn the_harness_finds_commands_and_masks_noise() {
    let text = "intro\n\n    dpstat count x.csv\n\n```console\n$ dpstat count \\\n  --eps 1 f.csv\n12\n```\n\n\
                <!-- check: unseeded -->\n```console\n$ cargo run --release -- count f.csv\n```\n\n```sh\ndpstat sum\n```\n";
    let (blocks, unchecked) = parse(text);
    assert_eq!(unchecked.len(), 2, "{unchecked:?}");
    assert!(unchecked[0].starts_with("line 3:") && unchecked[1].starts_with("line 17:"), "{unchecked:?}");
    assert_eq!(blocks.len(), 2);
    assert!(blocks[0].seeded && !blocks[1].seeded);
    assert_eq!(blocks[0].examples[0].command(), "dpstat count \\\n  --eps 1 f.csv");
    assert_eq!(blocks[0].examples[0].expected, ["12"]);
    assert_eq!(blocks[1].examples[0].command(), "dpstat count f.csv");
    // Commands a non-console block may hold, and the marker that lets one go unrun.
    let text = "```sh\ncargo build --release\ncargo test --test integration readme::\n```\n\n\
                <!-- check: not run (needs a cluster; tests/cluster.rs runs it) -->\n\
                ```sh\nDPSTAT=target/release/dpstat scripts/cluster-up.sh\ndpstat count f.csv\n```\n\n\
                <!-- check: not run () -->\n```sh\ndpstat mean f.csv\n```\n\n\
                ```sh\nDATA=/tmp/x RUNS=5 bench/compare.sh 10\ntarget/release/dpstat sum\n```\n\n\
                <!-- check: not run (a benchmark; bench/compare.sh runs it) -->\n```console\n$ dpstat count\n```\n";
    let (blocks, unchecked) = parse(text);
    assert_eq!(blocks.len(), 1);
    assert_eq!(unchecked.len(), 4, "{unchecked:?}");
    assert!(unchecked[0].starts_with("line 14: dpstat mean"), "{unchecked:?}");
    assert!(unchecked[1].starts_with("line 18: DATA="), "{unchecked:?}");
    assert!(unchecked[2].starts_with("line 19: target/release/dpstat"), "{unchecked:?}");
    assert!(unchecked[3].starts_with("line 23: a console block is always run"), "{unchecked:?}");
    assert!(
        !is_dpstat_command("    bench/            the benchmarks")
            && is_dpstat_command("$ bench/compare.sh 10")
    );
    assert_eq!(
        not_run_reason("<!-- check: not run (needs a cluster to run) -->"),
        Some("needs a cluster to run")
    );
    assert_eq!(not_run_reason("<!-- check: not run (cluster) -->"), None);
    // Anchors as GitHub makes them, and the links the link test follows.
    assert_eq!(slug(" How much ε do I need? `dpstat plan`"), "how-much-ε-do-i-need-dpstat-plan");
    assert_eq!(slug(" Filters: `--where`"), "filters---where");
    assert_eq!(anchors("# A\n```\n# not a heading\n```\n## A\n### B's"), ["a", "a-1", "bs"]);
    assert_eq!(
        link_targets("see [x](GUIDE.md#a) and `[y](no.md)`, ![i](docs/c.png)\n    [z](indented.md)"),
        [(1, "GUIDE.md#a".to_string()), (1, "docs/c.png".to_string())]
    );
    assert_eq!(
        masked("spent 0.8 of 1 sha256:c4487a8d69 at 2026-11-21T05:23:57Z: -3"),
        masked("spent 0.4 of 2 sha256:ffff at 2027-01-01T00:00:00Z: -12")
    );
    assert_ne!(masked("count 12"), masked("sum 12"));
    assert_eq!(
        masked("4\ndpstat: warning: x: the bound covers every value it can take, [0, 1]"),
        masked("4")
    );
    assert_eq!(
        help_examples(
            "Examples:\n  dpstat man | man -l -\n  x `dpstat plan sum --eps 1` and `dpstat QUERY --help`"
        ),
        ["dpstat man", "dpstat plan sum --eps 1"]
    );
}
