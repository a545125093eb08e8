//! Shell completions and the man page, generated from the clap definition in `cli.rs`, so
//! they list exactly the subcommands and flags the parser accepts. Rendered in full, then
//! written once to the writer `run` was given.

use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// `dpstat completions SHELL`: the completion script for `shell`.
pub fn completions(shell: Shell, out: &mut dyn Write) -> Result<()> {
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "dpstat", &mut bytes);
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// `dpstat man`: the man page in roff; its SUBCOMMANDS section lists every subcommand, whose
/// flags, sensitivities and examples `dpstat SUBCOMMAND --help` shows.
pub fn man(out: &mut dyn Write) -> Result<()> {
    let mut bytes = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut bytes)?;
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}
