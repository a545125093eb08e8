//! `dpstat run`: a workload file.
use std::io::Write;

use anyhow::Result;

use crate::cli::RunArgs;

pub fn run(_args: &RunArgs, _out: &mut dyn Write) -> Result<()> {
    Ok(())
}
