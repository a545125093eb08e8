//! Parse, dispatch to the subcommand, map the outcome to an exit code. The only place that
//! prints errors.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use dpstat::cli::{request, Cli, Query};
use dpstat::cmd;
use dpstat::error::{exit_code, EXIT_USAGE};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let stdout = io::stdout();
    match dispatch(cli.query, &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "dpstat: {}", one_line(&format!("{e:#}")));
            ExitCode::from(exit_code(&e))
        }
    }
}

/// Runs the subcommand, writing what it prints to `out`.
fn dispatch(query: Query, out: &mut dyn Write) -> anyhow::Result<()> {
    match &query {
        Query::Budget(args) => cmd::budget::report(&args.request(), out),
        Query::Plan(args) => cmd::plan::run(&request::plan_request(args)?, out),
        Query::Completions(args) => cmd::generate::completions(args.shell, Cli::command(), out),
        Query::Man => cmd::generate::man(Cli::command(), out),
        Query::Run(args) => cmd::run::run(&args.request(), out),
        release => match request::release_request(release) {
            Some(request) => cmd::release::run(cmd::release::Job::new(request)?, out),
            None => Err(dpstat::error::Error::internal("a subcommand without a command").into()),
        },
    }
}

/// `--help` and `--version` go to stdout with exit 0; every usage error becomes one
/// `dpstat: …` line on stderr with exit 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return match e.print() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(EXIT_USAGE),
        };
    }
    let rendered = e.render().to_string();
    let message = if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        missing_subcommand(&rendered)
    } else {
        usage_error(&rendered)
    };
    let _ = writeln!(io::stderr(), "dpstat: {message}");
    ExitCode::from(EXIT_USAGE)
}

/// clap's message runs until the first blank line (its continuation lines name the flags);
/// `tip:` lines follow it.
fn usage_error(rendered: &str) -> String {
    let message: Vec<&str> = rendered.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let message = message.join(" ");
    let mut line = message.strip_prefix("error: ").unwrap_or(&message).to_string();
    for tip in rendered.lines().map(str::trim).filter(|l| l.starts_with("tip:")) {
        line.push_str("; ");
        line.push_str(tip);
    }
    format!("{line} (see --help)")
}

/// `dpstat` or `dpstat plan` alone: clap renders the help; say in one line what is missing.
fn missing_subcommand(help: &str) -> String {
    let usage = help.lines().find_map(|l| l.trim().strip_prefix("Usage: ")).unwrap_or("dpstat <COMMAND>");
    let command = usage.split(" <").next().unwrap_or("dpstat");
    let choices: Vec<&str> = help
        .lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    format!("{command} needs a subcommand: {} (see {command} --help)", choices.join(", "))
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().filter_map(|c| c.downcast_ref::<io::Error>()).any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}
