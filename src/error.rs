//! The one error type, and the exit code each kind maps to. Everything below `cmd/` returns
//! it; `main` prints its message ([`printed`]: one line, or a first line of at most 200
//! characters naming the problem with the details indented after it) and exits with
//! [`Error::exit_code`].
//!
//! | exit | kind | meaning |
//! |---|---|---|
//! | 0 | | released (or a report printed) |
//! | 1 | [`Error::Internal`] | the system failed: no entropy from the OS, stdout unwritable, a bug |
//! | 2 | [`Error::Usage`] | bad flags, a bad workload file or bad data; nothing on stdout |
//! | 3 | [`Error::Budget`] | the ledger's budget cannot pay; nothing released, nothing charged |
//! | 4 | [`Error::Problems`] | `dpstat check` found problems in the file (its report is on stdout) |
//! | 5 | [`Error::Withheld`] | the differentially private outcome is "no value": decided from noisy quantities only, charged |

use std::fmt;

/// Exit code for an internal or operating-system failure.
pub const EXIT_INTERNAL: u8 = 1;
/// Exit code for usage errors and bad input.
pub const EXIT_USAGE: u8 = 2;
/// Exit code when the budget cannot pay for a release.
pub const EXIT_BUDGET: u8 = 3;
/// Exit code of `dpstat check` when it found problems in the file.
pub const EXIT_PROBLEMS: u8 = 4;
/// Exit code when the release's own private outcome is that there is no value to print.
pub const EXIT_WITHHELD: u8 = 5;

/// Why a run did not release. The message names the problem and, where there is one, the flag
/// that fixes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Bad flags, a bad workload file or bad data.
    Usage(String),
    /// The dataset's budget cannot pay for the release.
    Budget(String),
    /// The operating system or dpstat itself failed; not the user's input.
    Internal(String),
    /// `dpstat check` found problems in the file.
    Problems(String),
    /// The release decided, from noisy quantities only, that it has no value to print (too many
    /// keys for `--max-keys`, no bounds found privately, a bounds-free quantile too likely
    /// outside the data). This outcome *is* the differentially private release: its message may
    /// name only flags and noisy or public numbers, never a row, and under a ledger it is
    /// charged and recorded as released.
    Withheld(String),
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    pub fn internal(message: impl Into<String>) -> Error {
        Error::Internal(message.into())
    }

    pub fn withheld(message: impl Into<String>) -> Error {
        Error::Withheld(message.into())
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => EXIT_USAGE,
            Error::Budget(_) => EXIT_BUDGET,
            Error::Internal(_) => EXIT_INTERNAL,
            Error::Problems(_) => EXIT_PROBLEMS,
            Error::Withheld(_) => EXIT_WITHHELD,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Error::Usage(m)
            | Error::Budget(m)
            | Error::Internal(m)
            | Error::Problems(m)
            | Error::Withheld(m) => m,
        }
    }

    /// The same kind of error with `prefix: ` in front of its message.
    pub fn context(self, prefix: impl fmt::Display) -> Error {
        match self {
            Error::Usage(m) => Error::Usage(format!("{prefix}: {m}")),
            Error::Budget(m) => Error::Budget(format!("{prefix}: {m}")),
            Error::Internal(m) => Error::Internal(format!("{prefix}: {m}")),
            Error::Problems(m) => Error::Problems(format!("{prefix}: {m}")),
            Error::Withheld(m) => Error::Withheld(format!("{prefix}: {m}")),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// Text from the data (a cell, a header name, a file's name) as a message may show it: control
/// characters escaped (`\x1b`, `\u{9b}`), so no byte of the file can drive the reader's terminal,
/// and so are the characters that reorder or break what a terminal shows (bidirectional
/// overrides and isolates, zero-width marks, line and paragraph separators, `\u{202e}`); cut to
/// `max` characters with `…`.
pub fn shown(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        push_escaped(c, &mut out);
    }
    out
}

/// Printed output (text, CSV, a chart) as it reaches a terminal: every character [`shown`]
/// escapes, but line ends and tabs, which the output's own layout uses. Its own bytes hold no
/// other, so only data in it is changed: a key found in the data, a category, a column name.
/// JSON carries the exact text (it escapes the controls below 0x20; a JSON reader decodes it).
pub fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\n' || c == '\t' {
            out.push(c);
        } else {
            push_escaped(c, &mut out);
        }
    }
    out
}

/// `c`, or its escape (`\x1b`, `\u{202e}`) when it is a control character or [`reorders`].
fn push_escaped(c: char, out: &mut String) {
    if c.is_control() || reorders(c) {
        match u32::from(c) {
            n @ 0..=0xff => out.push_str(&format!("\\x{n:02x}")),
            n => out.push_str(&format!("\\u{{{n:x}}}")),
        }
    } else {
        out.push(c);
    }
}

/// Unicode format characters that change how a line reads on a terminal without being control
/// characters: zero-width marks and the left-to-right/right-to-left marks (U+200B to U+200F),
/// the line and paragraph separators and the bidirectional embeddings and overrides (U+2028 to
/// U+202E), the bidirectional isolates (U+2066 to U+2069), and the byte-order mark (U+FEFF).
fn reorders(c: char) -> bool {
    matches!(u32::from(c), 0x200B..=0x200F | 0x2028..=0x202E | 0x2066..=0x2069 | 0xFEFF)
}

/// A path as a message names it: [`shown`], since a file's name (one a shell glob or a
/// directory listed) is text from outside that can hold bytes that drive a terminal.
pub fn shown_path(path: &std::path::Path) -> String {
    shown(&path.display().to_string(), 160)
}

/// A list of names from the data for a message: each [`shown`], and past `max` names only
/// how many more there are.
pub fn shown_list(names: &[String], max: usize) -> String {
    let mut out: Vec<String> = names.iter().take(max).map(|n| shown(n, 40)).collect();
    if names.len() > max {
        out.push(format!("… ({} columns in all)", names.len()));
    }
    out.join(", ")
}

/// The longest first line of an error as printed, `dpstat: ` included.
pub const FIRST_LINE: usize = 200;
/// Width of the indented lines that follow it.
const DETAIL_WIDTH: usize = 100;

/// An error message as `main` prints it after `dpstat: `: whitespace folded to single spaces;
/// when longer than [`FIRST_LINE`], a first line that names the problem, and what to do or
/// why on indented lines after it. Messages are clauses joined by `; ` (the problem first),
/// so the break falls between clauses; a first clause too long on its own breaks after its
/// last sentence that fits (else its last `: `, else `, `, else a space).
pub fn printed(message: &str) -> String {
    let folded = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let room = FIRST_LINE - "dpstat: ".len();
    if folded.chars().count() <= room {
        return folded;
    }
    let mut clauses = folded.split("; ");
    let mut first = clauses.next().unwrap_or_default().to_string();
    let mut rest: Vec<String> = vec![];
    if first.chars().count() > room {
        let cut = first.char_indices().nth(room).map_or(first.len(), |(i, _)| i);
        let head = &first[..cut];
        let at = [". ", ": ", ", "]
            .iter()
            .filter_map(|sep| head.rfind(sep).map(|i| i + 1).filter(|&i| i > room / 4))
            .next()
            .or_else(|| head.rfind(' '))
            .unwrap_or(cut);
        rest.push(first[at..].trim_start().to_string());
        first.truncate(at);
        first = first.trim_end().to_string();
    }
    let mut clauses = clauses.peekable();
    while rest.is_empty() {
        match clauses.peek() {
            Some(next) if first.chars().count() + 2 + next.chars().count() <= room => {
                first = format!("{first}; {next}");
                clauses.next();
            }
            _ => break,
        }
    }
    rest.extend(clauses.map(str::to_string));
    let mut out = first;
    for line in wrap(&rest.join("; "), DETAIL_WIDTH - 2) {
        out.push_str("\n  ");
        out.push_str(&line);
    }
    out
}

/// Words into lines of at most `width` characters (a longer word has a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Shorthand for a usage error inside a function that returns `anyhow::Result`.
pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    Error::Usage(message.into()).into()
}

/// Whether `error` is a [`Error::Withheld`] outcome: a private release of "no value", which a
/// ledger records as released and which may be shown after the charge.
pub fn is_withheld(error: &anyhow::Error) -> bool {
    error.chain().any(|e| matches!(e.downcast_ref::<Error>(), Some(Error::Withheld(_))))
}

/// The exit code of any error that reaches `main`: a typed [`Error`] anywhere in the chain
/// decides; anything else is a failure of the system, not of the input.
pub fn exit_code(error: &anyhow::Error) -> u8 {
    error.chain().find_map(|e| e.downcast_ref::<Error>()).map_or(EXIT_INTERNAL, Error::exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn each_kind_has_its_exit_code_through_anyhow_and_context() {
        let usage: anyhow::Error = Error::usage("bad flag").into();
        assert_eq!(exit_code(&usage), EXIT_USAGE);
        let budget = anyhow::Error::from(Error::Budget("spent".into())).context("charging");
        assert_eq!(exit_code(&budget), EXIT_BUDGET);
        assert_eq!(exit_code(&Error::internal("no entropy").into()), EXIT_INTERNAL);
        let io: Result<(), std::io::Error> = Err(std::io::Error::other("disk full"));
        assert_eq!(exit_code(&io.context("writing").unwrap_err()), EXIT_INTERNAL);
        assert_eq!(Error::usage("x").context("file.csv").message(), "file.csv: x");
    }

    #[test]
    fn a_long_message_keeps_its_problem_on_a_short_first_line() {
        assert_eq!(printed("a short\n  one;  with a fix"), "a short one; with a fix");
        let problem = format!("dataset default cannot pay {}", "x".repeat(60));
        let fix = format!("add --budget-delta D {}", "y ".repeat(80));
        let out = printed(&format!("{problem}; {fix}; nothing was charged"));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], problem, "{out}");
        assert!(lines[1..].iter().all(|l| l.starts_with("  ") && l.len() <= DETAIL_WIDTH), "{out}");
        // The `; ` at the break is dropped: the line break separates the clauses.
        let words = |t: &str| t.replace(';', " ").split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&out), words(&format!("{problem}; {fix}; nothing was charged")), "nothing lost");
        // A first clause longer than the line breaks after a colon that fits.
        let long = format!("ledger {}: {}", "p".repeat(100), "word ".repeat(40));
        let out = printed(&long);
        let first = out.lines().next().unwrap();
        assert!(first.len() + "dpstat: ".len() <= FIRST_LINE && first.ends_with(':'), "{out}");
        assert_eq!(words(&out), words(&long));
        // Short clauses after the problem stay on its line while they fit.
        let out = printed(&format!("{problem}; short fix; {}", "z".repeat(190)));
        assert!(out.lines().next().unwrap().ends_with("; short fix"), "{out}");
    }

    #[test]
    fn data_in_messages_is_escaped_and_cut() {
        assert_eq!(shown("\u{1b}[31mRED", 40), "\\x1b[31mRED");
        assert_eq!(shown("a\u{1b}]0;pwned\u{7}", 40), "a\\x1b]0;pwned\\x07");
        assert_eq!(shown("tab\there\r\n", 40), "tab\\x09here\\x0d\\x0a");
        assert_eq!(shown("\u{9b}31m", 40), "\\x9b31m");
        assert_eq!(shown("café ½", 40), "café ½", "printable Unicode is kept");
        // What reorders or breaks a terminal's line without being a control character.
        assert_eq!(shown("a\u{202e}ge", 40), "a\\u{202e}ge");
        assert_eq!(shown("x\u{2028}y\u{2066}z\u{200b}", 40), "x\\u{2028}y\\u{2066}z\\u{200b}");
        assert_eq!(shown("abcdef", 3), "abc…");
        let names: Vec<String> = (0..10_000).map(|i| format!("c{i}")).collect();
        assert_eq!(shown_list(&names, 3), "c0, c1, c2, … (10000 columns in all)");
        assert_eq!(shown_list(&names[..2], 3), "c0, c1");
    }
}
