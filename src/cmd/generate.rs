//! Shell completions and the man pages, generated from the clap definition (which `cli` passes
//! in as a `clap::Command`), so they list exactly the subcommands and flags the parser accepts.
//! Rendered in full, then written once.
//!
//! A page is clap_mangen's NAME, SYNOPSIS, DESCRIPTION, OPTIONS and SUBCOMMANDS, then the
//! command's long help split into NOTES and EXAMPLES, and EXIT STATUS, ENVIRONMENT, FILES and
//! SEE ALSO, chosen from the flags the command has (a page mentions DPSTAT_LEDGER only if its
//! command takes --ledger).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Command;
use clap_complete::Shell;
use roff::{bold, italic, roman, Roff};

use crate::error::{bad_input, EXIT_BUDGET, EXIT_INTERNAL, EXIT_PROBLEMS, EXIT_USAGE};

/// `dpstat completions SHELL`: the completion script for `shell`.
pub fn completions(shell: Shell, mut command: Command, out: &mut dyn Write) -> Result<()> {
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut command, "dpstat", &mut bytes);
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// `dpstat man [COMMAND...]`: the page of `dpstat`, or of the subcommand `path` names
/// (`count`, `plan sum`), in roff.
pub fn man(command: Command, path: &[String], out: &mut dyn Write) -> Result<()> {
    let root = built(command);
    let mut page = &root;
    for (depth, name) in path.iter().enumerate() {
        page = page.find_subcommand(name).ok_or_else(|| {
            let parent =
                std::iter::once("dpstat").chain(path[..depth].iter().map(String::as_str)).collect::<Vec<_>>();
            let choices: Vec<&str> = page.get_subcommands().map(Command::get_name).collect();
            let pages = match choices.as_slice() {
                [] => "it has one page, its own".to_string(),
                _ => format!("its pages are: {}", choices.join(", ")),
            };
            bad_input(format!(
                "dpstat man: {} has no subcommand '{}'; {pages}",
                parent.join(" "),
                crate::error::shown(name, 40),
            ))
        })?;
    }
    let bytes = render(page, &root);
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// `dpstat man --out DIR`: every page, `dpstat.1`, `dpstat-count.1`, `dpstat-plan-sum.1`, …,
/// written into `dir` (created if missing). Returns the files written.
pub fn man_pages(command: Command, dir: &Path) -> Result<Vec<PathBuf>> {
    let root = built(command);
    std::fs::create_dir_all(dir).with_context(|| format!("dpstat man --out: creating {}", dir.display()))?;
    let mut written = vec![];
    let mut pending = vec![&root];
    while let Some(page) = pending.pop() {
        let path = dir.join(format!("{}.1", page_name(page)));
        std::fs::write(&path, render(page, &root))
            .with_context(|| format!("dpstat man --out: writing {}", path.display()))?;
        written.push(path);
        pending.extend(pages_below(page).into_iter().rev());
    }
    Ok(written)
}

/// The command with every display name and bin name set (`dpstat-count`, `dpstat count`).
fn built(command: Command) -> Command {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    command
}

/// The subcommands that have pages of their own.
fn pages_below(command: &Command) -> Vec<&Command> {
    command.get_subcommands().filter(|c| !c.is_hide_set()).collect()
}

/// `dpstat`, `dpstat-count`, `dpstat-plan-sum`.
fn page_name(command: &Command) -> String {
    command.get_display_name().unwrap_or_else(|| command.get_name()).to_string()
}

/// One of clap_mangen's section renderers.
type Section = fn(&clap_mangen::Man, &mut dyn Write) -> std::io::Result<()>;

/// One page in roff.
fn render(page: &Command, root: &Command) -> Vec<u8> {
    let man = clap_mangen::Man::new(page.clone()).source(format!("dpstat {}", env!("CARGO_PKG_VERSION")));
    // Each clap_mangen section starts with the same preamble (how to print an apostrophe): keep
    // the first only.
    let preamble = Roff::new().render();
    let mut sections: Vec<Section> = vec![
        clap_mangen::Man::render_title,
        clap_mangen::Man::render_name_section,
        clap_mangen::Man::render_synopsis_section,
        clap_mangen::Man::render_description_section,
        clap_mangen::Man::render_options_section,
    ];
    if page.has_subcommands() {
        sections.push(clap_mangen::Man::render_subcommands_section);
    }
    let mut text = preamble.clone();
    for section in sections {
        let mut bytes = vec![];
        // Writing to a Vec cannot fail.
        let _ = section(&man, &mut bytes);
        let rendered = String::from_utf8_lossy(&bytes).into_owned();
        text.push_str(rendered.strip_prefix(&preamble).unwrap_or(&rendered));
    }
    let mut roff = Roff::new();
    help_sections(&mut roff, page);
    exit_status(&mut roff, page);
    environment(&mut roff, page);
    files(&mut roff, page);
    see_also(&mut roff, page, root);
    roff.control("SH", ["VERSION"]).text([roman(format!("v{}", env!("CARGO_PKG_VERSION")))]);
    let rendered = roff.render();
    text.push_str(rendered.strip_prefix(&preamble).unwrap_or(&rendered));
    text.into_bytes()
}

/// Whether the command takes a flag or argument with this id.
fn has(page: &Command, id: &str) -> bool {
    page.get_arguments().any(|a| a.get_id() == id)
}

/// The long help after the options, as written (no filling): what comes before the first
/// example under NOTES, the examples under EXAMPLES.
fn help_sections(roff: &mut Roff, page: &Command) {
    let Some(help) = page.get_after_long_help().or_else(|| page.get_after_help()) else { return };
    let help = help.to_string();
    let lines: Vec<&str> = help.lines().collect();
    let first_example = lines.iter().position(|l| {
        let l = l.trim_start();
        l.starts_with("Example") || l.starts_with("Worked example")
    });
    let (notes, examples) = lines.split_at(first_example.unwrap_or(lines.len()));
    for (heading, block) in [("NOTES", notes), ("EXAMPLES", examples)] {
        if block.iter().all(|l| l.trim().is_empty()) {
            continue;
        }
        roff.control("SH", [heading]).control("nf", []);
        if heading == "EXAMPLES" {
            // An installed page has no checkout beside it: name the files without their folder.
            roff.text([roman(
                "(The files the examples read, such as people.csv, are in the fixtures/ folder of dpstat's source.)",
            )]);
        }
        for line in block {
            let line = if heading == "EXAMPLES" { line.replace("fixtures/", "") } else { line.to_string() };
            roff.text([roman(line)]);
        }
        roff.control("fi", []);
    }
}

fn exit_status(roff: &mut Roff, page: &Command) {
    roff.control("SH", ["EXIT STATUS"]);
    let mut codes = vec![
        (0, "released (or help, version or a page printed); also when the reader of standard output went away"),
        (EXIT_INTERNAL, "the system failed, not the input: no entropy from the operating system, standard output or the ledger unwritable"),
        (EXIT_USAGE, "usage error or bad input: one line on standard error names the problem and the flag that fixes it; nothing on standard output, nothing charged"),
    ];
    if has(page, "ledger") {
        codes.push((
            EXIT_BUDGET,
            "budget exhausted: the ledger cannot pay for the release; nothing released, nothing charged",
        ));
    }
    if page.get_name() == "check" || page.get_name() == "dpstat" {
        codes.push((
            EXIT_PROBLEMS,
            "dpstat check found problems in the file (its report is on standard output)",
        ));
    }
    for (code, meaning) in codes {
        roff.control("TP", []).text([bold(code.to_string())]).text([roman(meaning)]);
    }
}

fn environment(roff: &mut Roff, page: &Command) {
    let root = page.get_name() == "dpstat";
    let mut vars = vec![];
    if root || has(page, "ledger") {
        vars.push(("DPSTAT_LEDGER", "the budget ledger when --ledger is not given"));
        vars.push((
            "DPSTAT_LEDGER_KEY_FILE",
            "the key file of a keyed ledger when --ledger-key is not given",
        ));
    }
    if root || has(page, "eps") && has(page, "file") || page.get_name() == "run" {
        vars.push((
            "DPSTAT_INSECURE_SEED",
            "an unsigned 64-bit integer that makes the noise reproducible, for tests only: every release made with it is NOT private, warns on standard error, is marked \"insecure_seed\": true in its JSON and is refused together with a ledger; A..B runs the command once per seed from A to B-1",
        ));
    }
    if root || has(page, "format") && has(page, "file") {
        vars.push(("COLUMNS", "the width of --format chart (else the terminal's, else 80)"));
    }
    if root || has(page, "file") {
        vars.push((
            "CI",
            "when set, no progress bar is drawn (it is drawn on a terminal for files of 64 MiB or more)",
        ));
    }
    if vars.is_empty() {
        return;
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in vars {
        roff.control("TP", []).text([bold(name)]).text([roman(meaning)]);
    }
}

fn files(roff: &mut Roff, page: &Command) {
    let root = page.get_name() == "dpstat";
    let mut entries = vec![];
    if root || has(page, "file") && !has(page, "dataset") || has(page, "eps") && has(page, "file") {
        entries.push((
            "FILE",
            "the CSV to read: comma-separated with a header row by default; a name ending in .tsv or .tab is read as tab-separated, gzip is recognised by its magic bytes; - or no FILE reads standard input",
        ));
    }
    if root || page.get_name() == "run" {
        entries.push((
            "WORKLOAD.toml",
            "dpstat run's workload: the total epsilon, the privacy unit and one [[query]] table per query",
        ));
    }
    if root || has(page, "ledger") {
        entries.push(("--ledger PATH", "the budget ledger, JSON lines, append-only: one record per release, charged under an exclusive lock before anything is printed"));
        entries.push(("--ledger-key FILE", "the custodian's key of a keyed ledger (made by dpstat ledger init), and FILE.state beside it: the count and head of the ledger's last append"));
    }
    if root || has(page, "plot") {
        entries.push(("--plot FILE.svg", "an SVG chart written after the release and any ledger charge"));
    }
    if entries.is_empty() {
        return;
    }
    roff.control("SH", ["FILES"]);
    for (name, meaning) in entries {
        roff.control("TP", []).text([italic(name)]).text([roman(meaning)]);
    }
}

fn see_also(roff: &mut Roff, page: &Command, root: &Command) {
    let name = page_name(page);
    let mut pages: Vec<String> = std::iter::once(root)
        .chain(pages_below(root))
        .chain(pages_below(page))
        .map(page_name)
        .filter(|p| *p != name)
        .collect();
    pages.dedup();
    let refs: Vec<String> = pages.iter().map(|p| format!("{p}(1)")).collect();
    roff.control("SH", ["SEE ALSO"]).text([roman(refs.join(", "))]);
}
