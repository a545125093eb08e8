//! A usage error as one line for stderr, built from clap's structured error (its kind, its
//! context values and its source) rather than from the text clap would render: the wording
//! follows clap's, with its tips (a similar flag, how to pass a value that starts with `-`)
//! joined on, and ` (see --help)` after it.

use std::error::Error as _;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Command;

/// The one line (without the `dpstat: ` prefix) for a clap error that is neither `--help` nor
/// `--version`. `command` is the whole command tree and `args` the command line (for a missing
/// subcommand: which command is missing one).
pub fn message(error: &clap::Error, command: &Command, args: &[String]) -> String {
    if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return missing_subcommand(command, args);
    }
    let mut line = what(error);
    let neighbour = neighbour_tip(error).or_else(|| output_file_tip(error, args));
    let tips = match neighbour {
        Some(tip) => vec![tip.to_string()],
        None => tips(error),
    };
    for tip in tips {
        line.push_str("; tip: ");
        line.push_str(&tip);
    }
    // clap puts a list (required flags, possible values) on lines of its own: one line here.
    let line = line.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    format!("{line} (see --help)")
}

/// What went wrong, in clap's words for each kind.
fn what(error: &clap::Error) -> String {
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let list = |kind| match error.get(kind) {
        Some(ContextValue::Strings(v)) => Some(v.clone()),
        _ => None,
    };
    let (arg, value) = (text(ContextKind::InvalidArg), text(ContextKind::InvalidValue));
    let known = match error.kind() {
        ErrorKind::InvalidValue => arg.zip(value).map(|(arg, value)| {
            let mut line = if value.is_empty() {
                format!("a value is required for '{arg}' but none was supplied")
            } else {
                format!("invalid value '{value}' for '{arg}'")
            };
            if let Some(values) = list(ContextKind::ValidValue).filter(|v| !v.is_empty()) {
                line.push_str(&format!(" [possible values: {}]", values.join(", ")));
            }
            line
        }),
        ErrorKind::ValueValidation => arg.zip(value).map(|(arg, value)| match error.source() {
            Some(why) => format!("invalid value '{value}' for '{arg}': {why}"),
            None => format!("invalid value '{value}' for '{arg}'"),
        }),
        ErrorKind::UnknownArgument => arg.map(|arg| format!("unexpected argument '{arg}' found")),
        ErrorKind::InvalidSubcommand => {
            text(ContextKind::InvalidSubcommand).map(|sub| format!("unrecognized subcommand '{sub}'"))
        }
        ErrorKind::MissingRequiredArgument => list(ContextKind::InvalidArg)
            .map(|args| format!("the following required arguments were not provided: {}", args.join(" "))),
        ErrorKind::TooManyValues => arg.zip(value).map(|(arg, value)| {
            format!("unexpected value '{value}' for '{arg}' found; no more were expected")
        }),
        ErrorKind::NoEquals => {
            arg.map(|arg| format!("equal sign is needed when assigning values to '{arg}'"))
        }
        ErrorKind::ArgumentConflict => arg.map(|arg| {
            let prior = error.get(ContextKind::PriorArg);
            match prior {
                Some(ContextValue::String(p)) if *p == arg => {
                    format!("the argument '{arg}' cannot be used multiple times")
                }
                Some(ContextValue::String(p)) => format!("the argument '{arg}' cannot be used with '{p}'"),
                Some(ContextValue::Strings(ps)) => {
                    format!("the argument '{arg}' cannot be used with: {}", ps.join(" "))
                }
                _ => format!(
                    "the argument '{arg}' cannot be used with one or more of the other specified arguments"
                ),
            }
        }),
        _ => None,
    };
    known
        .or_else(|| error.kind().as_str().map(str::to_string))
        .or_else(|| error.source().map(|s| s.to_string()))
        .unwrap_or_else(|| "the command line is not valid".to_string())
}

/// Flags of the tools next to dpstat in a pipeline (xsv, xan, qsv, csvkit, ripgrep) and what
/// dpstat says instead: clap's nearest spelling is often another flag altogether (`--quiet` came
/// out as `--budget`).
const NEIGHBOURS: &[(&[&str], &str)] = &[
    (&["--group-by", "--groupby", "--group", "--groups"], "dpstat groups with --by COL and --keys K1,K2 (or --discover)"),
    (&["--columns", "--select", "--fields", "-s"], "one column is --col COL; two are --cols X,Y (covariance, describe)"),
    (&["--output", "--out", "--output-file"], "the release goes to standard output (redirect it with > FILE); --plot FILE.svg writes a chart; -f is --format"),
    (&["--csv"], "CSV output is --format csv (-f csv); the input is read as CSV (or Parquet) whatever its name"),
    (&["--quiet", "--silent", "-q"], "stdout holds only the release; notes and warnings go to stderr (2>/dev/null hides them)"),
    (&["--sep", "--separator", "--delim"], "the field separator is --delimiter C (-d)"),
    (&["--filter", "--search", "--regex"], "rows are filtered with --where COL=VALUE (also !=, <, <=, >, >=, in, not in, empty)"),
    (&["--json"], "JSON output is --format json (-f json)"),
    (&["--seed"], "noise is seeded from the operating system; DPSTAT_INSECURE_SEED=N makes it reproducible for tests only (not private)"),
];

/// The warning for `-o`, the short flag of `--format` until 0.2: xsv, xan and qsv use `-o` for
/// the output file, so dpstat's short flag is now `-f` and `-o` is kept, hidden, for one release.
pub const DEPRECATED_O: &str = "-o for --format is deprecated and will be removed in the next \
    release (xsv, xan and qsv use -o for an output file): write -f or --format";

/// Whether the command line uses `-o` (alone, with its value attached, or at the end of a group
/// of short flags such as `-Eo`) before a `--`.
pub fn uses_deprecated_o(args: &[String]) -> bool {
    args.iter().skip(1).take_while(|a| *a != "--").any(|a| match a.strip_prefix('-') {
        Some(shorts) if !shorts.starts_with('-') => {
            shorts.starts_with('o')
                || shorts.ends_with('o') && shorts.chars().all(|c| c.is_ascii_alphabetic())
        }
        _ => false,
    })
}

/// Subcommands of neighbouring tools (xsv stats, SQL's avg) and dpstat's: clap suggests
/// only names spelled alike, and `avg` is spelled like no dpstat subcommand.
const NEIGHBOUR_SUBCOMMANDS: &[(&[&str], &str)] = &[
    (&["avg", "average"], "a similar subcommand exists: 'mean'"),
    (
        &["stats", "summary", "summarize", "summarise"],
        "a similar subcommand exists: 'describe' (a mean, quantiles and their bounds per column)",
    ),
    (
        &["frequency", "freq", "frequencies"],
        "a similar subcommand exists: 'histogram' (counts per category or bin)",
    ),
    (
        &["std", "stddev", "sd", "var"],
        "a similar subcommand exists: 'variance' (the standard deviation is its square root)",
    ),
];

/// dpstat's own tip for an unknown flag or subcommand that a neighbouring tool has.
fn neighbour_tip(error: &clap::Error) -> Option<&'static str> {
    if error.kind() == ErrorKind::InvalidSubcommand {
        let Some(ContextValue::String(sub)) = error.get(ContextKind::InvalidSubcommand) else { return None };
        let sub = sub.to_ascii_lowercase();
        return NEIGHBOUR_SUBCOMMANDS
            .iter()
            .find(|(names, _)| names.contains(&sub.as_str()))
            .map(|(_, tip)| *tip);
    }
    if error.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else { return None };
    let flag = arg.split('=').next().unwrap_or(arg);
    NEIGHBOURS.iter().find(|(names, _)| names.contains(&flag)).map(|(_, tip)| *tip)
}

/// The tip for `-o out.csv` (xsv's output file) read as `--format out.csv`: where the release
/// goes instead.
fn output_file_tip(error: &clap::Error, args: &[String]) -> Option<&'static str> {
    if !matches!(error.kind(), ErrorKind::InvalidValue | ErrorKind::ValueValidation) {
        return None;
    }
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else { return None };
    let Some(ContextValue::String(value)) = error.get(ContextKind::InvalidValue) else { return None };
    let file_like = value.contains(['.', '/', '\\']);
    (arg.starts_with("--format") && (uses_deprecated_o(args) || file_like)).then_some(
        "-o is --format here, not an output file: the release goes to standard output, so redirect it \
         with > FILE (-f csv > FILE for CSV)",
    )
}

/// clap's suggestions: a similar subcommand, flag or value, and its other tips.
fn tips(error: &clap::Error) -> Vec<String> {
    let mut tips = vec![];
    for (kind, noun) in [
        (ContextKind::SuggestedSubcommand, "subcommand"),
        (ContextKind::SuggestedArg, "argument"),
        (ContextKind::SuggestedValue, "value"),
    ] {
        match error.get(kind) {
            Some(ContextValue::String(s)) => tips.push(format!("a similar {noun} exists: '{s}'")),
            Some(ContextValue::Strings(v)) if v.len() == 1 => {
                tips.push(format!("a similar {noun} exists: '{}'", v[0]))
            }
            Some(ContextValue::Strings(v)) if !v.is_empty() => {
                let quoted: Vec<String> = v.iter().map(|s| format!("'{s}'")).collect();
                tips.push(format!("some similar {noun}s exist: {}", quoted.join(", ")));
            }
            _ => {}
        }
    }
    if let Some(ContextValue::StyledStrs(more)) = error.get(ContextKind::Suggested) {
        tips.extend(more.iter().map(|s| s.to_string()));
    }
    tips
}

/// `dpstat` or `dpstat plan` alone: which command needs a subcommand, and its choices.
fn missing_subcommand(command: &Command, args: &[String]) -> String {
    let mut current = command;
    let mut path = vec![command.get_name().to_string()];
    for arg in args.iter().skip(1) {
        match current.find_subcommand(arg) {
            Some(sub) => {
                path.push(sub.get_name().to_string());
                current = sub;
            }
            None => break,
        }
    }
    let path = path.join(" ");
    let choices: Vec<&str> =
        current.get_subcommands().map(Command::get_name).filter(|n| *n != "help").collect();
    format!("{path} needs a subcommand: {} (see {path} --help)", choices.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::{CommandFactory, Parser};

    /// `-o` still means `--format` for one release, and is told apart from values and `-f`.
    #[test]
    fn the_deprecated_o_still_parses_and_is_noticed() {
        let uses = |line: &str| uses_deprecated_o(&line.split(' ').map(String::from).collect::<Vec<_>>());
        for line in ["dpstat count -e 1 -o json", "dpstat count -e 1 -ojson", "dpstat count -e 1 -Eo json"] {
            assert!(uses(line), "{line}");
            assert!(Cli::try_parse_from(line.split(' ')).is_ok(), "{line}");
        }
        for line in
            ["dpstat count -e 1 -f json", "dpstat count --format json -e 1", "dpstat count -e 1 -- -o"]
        {
            assert!(!uses(line), "{line}");
        }
        assert!(!uses("dpstat sum -c x -l -10 -u 0 -e 1"), "a negative value is not a flag group");
    }

    /// Flags of neighbouring tools get dpstat's own answer, not clap's nearest spelling.
    #[test]
    fn neighbours_flags_get_dpstats_answer() {
        for (flag, says) in [
            ("--group-by=region", "--by COL"),
            ("--quiet", "stderr"),
            ("--output", "standard output"),
            ("--json", "--format json"),
        ] {
            let args = ["dpstat", "count", "--eps", "1", flag];
            let err = Cli::try_parse_from(args).unwrap_err();
            let line = message(&err, &Cli::command(), &args.map(String::from));
            assert!(line.contains(says) && !line.contains("similar"), "{flag}: {line}");
        }
        // Anything else keeps clap's suggestion.
        let args = ["dpstat", "count", "--epss", "1"];
        let err = Cli::try_parse_from(args).unwrap_err();
        assert!(message(&err, &Cli::command(), &args.map(String::from)).contains("similar"));
    }

    /// What the binary printed before this module: clap's rendered message up to the first
    /// blank line, `tip:` lines joined on, and ` (see --help)`.
    fn rendered(error: &clap::Error) -> String {
        let rendered = error.render().to_string();
        let message: Vec<&str> =
            rendered.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
        let message = message.join(" ");
        let mut line = message.strip_prefix("error: ").unwrap_or(&message).to_string();
        for tip in rendered.lines().map(str::trim).filter(|l| l.starts_with("tip:")) {
            line.push_str("; ");
            line.push_str(tip);
        }
        format!("{line} (see --help)")
    }

    fn error_of(line: &str) -> (clap::Error, Vec<String>) {
        let args: Vec<String> = line.split(' ').filter(|a| !a.is_empty()).map(String::from).collect();
        (Cli::try_parse_from(&args).expect_err(line), args)
    }

    #[test]
    fn messages_match_what_clap_renders() {
        let lines = [
            "dpstat count --lowr 1",
            "dpstat count --epsilo 1",
            "dpstat count",
            "dpstat mean --col x --lower 5 --eps",
            "dpstat count --eps abc",
            "dpstat count --eps -1",
            "dpstat count --eps 0",
            "dpstat count --neighbours sideways --eps 1",
            "dpstat count --format xml --eps 1",
            "dpstat histogram --col a --bins 3 --categories a,b --eps 1",
            "dpstat completions tcsh",
            "dpstat frobnicate",
            "dpstat cont",
            "dpstat plan frob",
            "dpstat quantile --col x --eps 1",
            "dpstat count --eps 1 --rho 0.1",
            "dpstat count --threads 0 --eps 1",
            "dpstat count --delimiter ;; --eps 1",
            "dpstat --versionx",
            "dpstat count --no-headerz --eps 1",
            "dpstat budget",
            "dpstat run",
            "dpstat sum --col x --lower 1 --upper 2 --eps 1 --invalid drop",
            "dpstat median --col x --resolution 5 --eps 1",
            "dpstat count --confidence 2 --eps 1",
            "dpstat count --eps 1 --eps 2",
            "dpstat mean --col x --lower -5 --upper 1e999 --eps 1",
            "dpstat plan count --eps 1 --error 3",
            "dpstat plan mean --rows x --eps 1",
            "dpstat count --where novalue --eps 1",
            "dpstat histogram --col a --categories a,,b --eps 1",
            "dpstat count --eps 1 --keys a",
            "dpstat count --where a  b --eps 1",
            "dpstat count --eps 1 --no-headers=yes",
            "dpstat sum --col age --lowr 0 --eps 1",
            "dpstat count --eps 1 --format",
        ];
        let command = Cli::command();
        for line in lines {
            let (error, args) = error_of(line);
            assert_eq!(message(&error, &command, &args), rendered(&error), "{line} ({:?})", error.kind());
        }
    }

    #[test]
    fn a_missing_subcommand_lists_the_choices() {
        let command = Cli::command();
        let (error, args) = error_of("dpstat");
        let line = message(&error, &command, &args);
        assert!(line.starts_with("dpstat needs a subcommand: count, sum, mean, "), "{line}");
        // The last choice is `man`, or `cluster` in a build with the cluster engine.
        let last = if cfg!(feature = "cluster") { "man, cluster" } else { "man" };
        assert!(line.ends_with(&format!("{last} (see dpstat --help)")) && !line.contains("help,"), "{line}");
        let (error, args) = error_of("dpstat plan");
        let line = message(&error, &command, &args);
        assert_eq!(
            line,
            "dpstat plan needs a subcommand: count, sum, mean, variance, histogram, quantile, median, covariance, regress, run, sql (see dpstat plan --help)"
        );
    }
}
