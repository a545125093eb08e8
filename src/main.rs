//! Parse, run, map the outcome to an exit code. The only place that prints errors.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use dpstat::cli::Cli;
use dpstat::error::EXIT_USAGE;
use dpstat::ledger::{BudgetExhausted, EXIT_BUDGET};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let stdout = io::stdout();
    match dpstat::run(cli, &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "dpstat: {}", one_line(&format!("{e:#}")));
            match e.downcast_ref::<BudgetExhausted>() {
                Some(_) => ExitCode::from(EXIT_BUDGET),
                None => ExitCode::from(EXIT_USAGE),
            }
        }
    }
}

/// `--help` and `--version` go to stdout with exit 0; usage errors become one `dpstat:` line.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return match e.print() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(EXIT_USAGE),
        };
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return ExitCode::from(EXIT_USAGE);
    }
    let rendered = e.render().to_string();
    // clap's message runs until the first blank line; its continuation lines name the flags.
    let message: Vec<&str> = rendered.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let _ = writeln!(io::stderr(), "dpstat: {message} (see --help)");
    ExitCode::from(EXIT_USAGE)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().filter_map(|c| c.downcast_ref::<io::Error>()).any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}
