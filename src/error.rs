//! The few failures `main` must tell apart, because they map to different exit codes.

use std::fmt;

/// Exit code for usage errors and bad input (CLI.md).
pub const EXIT_USAGE: u8 = 2;

/// Bad flags or bad data: exit 2, nothing on stdout. The message names the problem and,
/// where there is one, the flag that fixes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError(pub String);

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// Shorthand for returning an [`InputError`] from a function that returns `anyhow::Result`.
pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    InputError(message.into()).into()
}
