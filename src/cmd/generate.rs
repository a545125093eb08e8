//! Shell completions and the man page, generated from the clap definition (which `cli.rs`
//! passes in as a `clap::Command`), so they list exactly the subcommands and flags the parser
//! accepts. Rendered in full, then written once.

use std::io::Write;

use anyhow::Result;
use clap::Command;
use clap_complete::Shell;

/// `dpstat completions SHELL`: the completion script for `shell`.
pub fn completions(shell: Shell, mut command: Command, out: &mut dyn Write) -> Result<()> {
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut command, "dpstat", &mut bytes);
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// `dpstat man`: the man page in roff; its SUBCOMMANDS section lists every subcommand, whose
/// flags, sensitivities and examples `dpstat SUBCOMMAND --help` shows.
pub fn man(command: Command, out: &mut dyn Write) -> Result<()> {
    let mut bytes = Vec::new();
    clap_mangen::Man::new(command).render(&mut bytes)?;
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}
