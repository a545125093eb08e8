//! Generated from the clap definition: shell completions, the man page, `--help` with
//! sensitivities and worked examples, and `--version` with the privacy-relevant build facts.

use crate::common;

use clap::CommandFactory;
use common::{dpstat, fails_with, stdout_of};
use dpstat::cli::Cli;

/// Every subcommand the parser knows, from the definition itself.
fn subcommands() -> Vec<String> {
    Cli::command().get_subcommands().map(|c| c.get_name().to_string()).collect()
}

#[test]
fn completions_for_bash_zsh_and_fish_mention_every_subcommand() {
    let names = subcommands();
    assert!(names.len() >= 8, "{names:?}");
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout_of(dpstat().args(["completions", shell]));
        assert!(script.len() > 500, "{shell}: a script, not a stub");
        for name in &names {
            assert!(script.contains(name.as_str()), "{shell} completions do not mention {name}");
        }
        // Flags of the queries complete too.
        for flag in ["eps", "neighbours", "plot", "rows"] {
            assert!(script.contains(flag), "{shell} completions do not mention {flag}");
        }
    }
    fails_with(dpstat().args(["completions", "tcsh"]), &["invalid value 'tcsh'"]);
}

#[test]
fn man_page_mentions_every_subcommand() {
    let page = stdout_of(dpstat().arg("man"));
    assert!(page.starts_with(".ie") || page.contains(".TH"), "roff: {}", &page[..80.min(page.len())]);
    assert!(page.contains(".TH dpstat 1"), "title header");
    for name in subcommands() {
        assert!(
            page.contains(&format!("dpstat\\-{name}(1)")),
            "the man page does not refer to dpstat-{name}(1)"
        );
    }
}

/// Every page a subcommand (or a subcommand of plan) has, with the path `dpstat man` takes.
fn pages() -> Vec<Vec<String>> {
    let mut command = Cli::command();
    command.build();
    let mut pages = vec![];
    for sub in command.get_subcommands().filter(|c| c.get_name() != "help") {
        pages.push(vec![sub.get_name().to_string()]);
        for inner in sub.get_subcommands().filter(|c| c.get_name() != "help") {
            pages.push(vec![sub.get_name().to_string(), inner.get_name().to_string()]);
        }
    }
    pages
}

/// `dpstat man COMMAND`: the subcommand's own page, with every flag it shows (not those hidden
/// because the subcommand refuses them, such as variance's `--bounds-eps`), its examples, exit
/// status, environment and files.
#[test]
fn every_subcommand_has_a_page_with_its_flags() {
    let command = Cli::command();
    for path in pages() {
        let page = stdout_of(dpstat().arg("man").args(&path));
        let name = format!("dpstat-{}", path.join("-"));
        assert!(page.contains(&format!(".TH {name} 1")), "{name}: title header");
        let mut sub = &command;
        for p in &path {
            sub = sub.find_subcommand(p).unwrap();
        }
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(long) = arg.get_long() {
                let roff = format!("\\-\\-{}", long.replace('-', "\\-"));
                assert!(page.contains(&roff), "{name} lacks --{long}");
            }
        }
        for section in ["NAME", "SYNOPSIS", "OPTIONS", "EXIT STATUS", "SEE ALSO"] {
            let heading =
                |h: &str| page.contains(&format!(".SH {h}\n")) || page.contains(&format!(".SH \"{h}\"\n"));
            assert!(heading(section), "{name} lacks {section}");
        }
        let takes = |id: &str| sub.get_arguments().any(|a| a.get_id() == id);
        if takes("ledger") {
            assert!(page.contains("DPSTAT_LEDGER") && page.contains(".SH FILES"), "{name}: ledger");
            assert!(page.contains("budget exhausted"), "{name}: exit 3");
        }
        if takes("eps") && takes("file") {
            assert!(page.contains("DPSTAT_INSECURE_SEED") && page.contains(".SH EXAMPLES"), "{name}");
            // The examples name files an installed page can find, not the checkout's folder.
            let examples = &page[page.find(".SH EXAMPLES").unwrap_or(0)..];
            let examples = &examples[..examples.find(".SH EXIT").unwrap_or(examples.len())];
            let commands = examples.lines().filter(|l| l.trim_start().starts_with("dpstat "));
            assert!(
                commands.clone().count() > 0 && commands.clone().all(|l| !l.contains("fixtures/")),
                "{name}: {examples}"
            );
        }
    }
    fails_with(dpstat().args(["man", "frobnicate"]), &["no subcommand 'frobnicate'", "count"]);
    fails_with(dpstat().args(["man", "plan", "frobnicate"]), &["dpstat plan has no subcommand 'frobnicate'"]);
}

#[test]
fn man_out_installs_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("man1");
    let out = dpstat().args(["man", "--out"]).arg(&target).output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let mut written: Vec<String> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut want: Vec<String> = pages().iter().map(|p| format!("dpstat-{}.1", p.join("-"))).collect();
    want.push("dpstat.1".into());
    want.sort();
    assert_eq!(written, want);
    let count = std::fs::read_to_string(target.join("dpstat-count.1")).unwrap();
    assert_eq!(count, stdout_of(dpstat().args(["man", "count"])), "the installed page is the printed one");
}

#[test]
fn query_help_shows_the_sensitivity_per_unit_and_a_worked_example() {
    for (query, formula) in
        [("count", "Δ = 1"), ("sum", "Δ = max(|L|, |U|)"), ("mean", "Δ = (U − L)/2"), ("histogram", "Δ = 2")]
    {
        let help = stdout_of(dpstat().args([query, "--help"]));
        for needle in ["Sensitivity", "add-remove", "replace", "Worked example", formula, "dpstat plan"] {
            assert!(help.contains(needle), "{query} --help lacks {needle:?}:\n{help}");
        }
    }
}

/// The numbers in the worked examples are what `dpstat plan` computes (rounded up for print).
#[test]
fn worked_examples_agree_with_plan() {
    for (query, plan, printed) in [
        ("count", "plan count --eps 0.1", "±30 "),
        ("sum", "plan sum --lower 0 --upper 200000 --eps 0.5", "±1198293 "),
        ("mean", "plan mean --lower 0 --upper 100 --eps 1 --neighbours replace --rows 200", "±1.5 "),
        ("histogram", "plan histogram --bins 8 --lower 0 --upper 80 --eps 0.5", "±6 "),
    ] {
        let help = stdout_of(dpstat().args([query, "--help"]));
        assert!(help.contains(printed), "{query} --help lacks {printed}");
        let json = common::json_of(dpstat().args(plan.split_whitespace()));
        let bound = json["accuracy"]["error_bound"].as_f64().unwrap();
        let shown: f64 = printed.trim().trim_start_matches('±').parse().unwrap();
        assert!(bound <= shown && shown - bound < 0.1, "{plan}: help says {shown}, plan says {bound}");
    }
}

#[test]
fn version_states_the_randomness_source_and_the_test_hook() {
    let version = stdout_of(dpstat().arg("--version"));
    assert!(version.starts_with(&format!("dpstat {}", env!("CARGO_PKG_VERSION"))), "{version}");
    for needle in ["ChaCha20", "operating system's CSPRNG", "exact discrete Laplace", "DPSTAT_INSECURE_SEED"]
    {
        assert!(version.contains(needle), "--version lacks {needle}:\n{version}");
    }
}
