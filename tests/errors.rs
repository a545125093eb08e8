//! Errors that teach: each names the flag that fixes it, on one `dpstat:` line, exit 2.

use crate::common;

use common::{dpstat, fails_with, fixture, json_of, stdout_of};

#[test]
fn unknown_column_suggests_the_nearest_and_lists_all() {
    let line = fails_with(
        dpstat()
            .args(["sum", "--col", "incom", "--lower", "0", "--upper", "1", "--eps", "1"])
            .arg(fixture("people.csv")),
        &["no column 'incom'", "did you mean --col income?", "the columns are: id, age, income, region"],
    );
    assert!(line.contains("people.csv"), "{line}");
    fails_with(
        dpstat().args(["count", "--where", "Region=north", "--eps", "1"]).arg(fixture("people.csv")),
        &["did you mean --where region?"],
    );
    let line = fails_with(
        dpstat().args(["count", "--where", "height=2", "--eps", "1"]).arg(fixture("people.csv")),
        &["no column 'height'", "the columns are"],
    );
    assert!(!line.contains("did you mean"), "nothing is close to 'height': {line}");
}

#[test]
fn missing_bounds_explain_why_they_are_flags() {
    for query in ["sum", "mean"] {
        fails_with(
            dpstat().args([query, "--col", "age", "--eps", "1", "--lower", "0"]).arg(fixture("people.csv")),
            &["--upper U is missing", "never takes them from the data", "would reveal", "privately"],
        );
    }
    fails_with(
        dpstat()
            .args(["histogram", "--col", "age", "--bins", "4", "--lower", "0", "--eps", "1"])
            .arg(fixture("people.csv")),
        &["--upper U is missing"],
    );
}

#[test]
fn large_epsilon_warns_about_protection_and_still_releases() {
    let out = dpstat().args(["count", "--eps", "20"]).arg(fixture("people.csv")).output().unwrap();
    assert!(out.status.success(), "a large ε is never refused");
    assert!(!out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warning = stderr.lines().find(|l| l.contains("is large")).expect("a warning");
    for needle in ["dpstat: warning: --eps 20", "protects little", "e^20", "4.9e8", "lower --eps"] {
        assert!(warning.contains(needle), "warning lacks {needle:?}: {warning}");
    }
    let quiet = dpstat().args(["count", "--eps", "10"]).arg(fixture("people.csv")).output().unwrap();
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("is large"));
}

#[test]
fn clap_usage_errors_are_one_line() {
    fails_with(&mut dpstat(), &["dpstat needs a subcommand", "count", "plan", "see dpstat --help"]);
    fails_with(dpstat().arg("plan"), &["dpstat plan needs a subcommand", "histogram"]);
    fails_with(
        dpstat().args(["sum", "--col", "age", "--lowr", "0"]),
        &["unexpected argument '--lowr'", "tip: a similar argument exists: '--lower'"],
    );
    fails_with(dpstat().args(["count", "--eps", "zero"]), &["--eps", "not a number"]);
    fails_with(dpstat().args(["count", "--eps", "1/0"]), &["--eps", "not a number"]);
    // ε and δ are exact rationals inside, so a fraction is taken as written.
    let json = json_of(dpstat().args(["count", "-e", "1/4"]).arg(fixture("people.csv")));
    assert_eq!(json["epsilon_exact"], "1/4");
    fails_with(
        dpstat().args(["count", "--eps", "1", "--neighbours", "swap"]),
        &["--neighbours", "add-remove"],
    );
    // --help still prints in full, to stdout, exit 0.
    assert!(stdout_of(dpstat().arg("--help")).contains("Usage: dpstat"));
}

#[test]
fn bad_cells_and_field_counts_name_the_fixing_flag() {
    fails_with(
        dpstat()
            .args(["sum", "--col", "region", "--lower", "0", "--upper", "1", "--eps", "1"])
            .arg(fixture("people.csv")),
        &["row 1", "column 'region'", "--invalid skip", "--invalid impute=V"],
    );
    fails_with(
        dpstat()
            .args(["sum", "--no-header", "--col", "9", "--lower", "0", "--upper", "1", "--eps", "1"])
            .arg(fixture("people.csv")),
        &["column 9 does not exist", "--delimiter"],
    );
}

/// A failure of the system rather than of the input exits 1, not 2: here standard output
/// refuses the release (`/dev/full`), after the release was made.
#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_stdout_is_a_system_failure_exit_1() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full exists on Linux");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dpstat"))
        .args(["count", "--eps", "1"])
        .arg(fixture("people.csv"))
        .env("DPSTAT_INSECURE_SEED", "1")
        .env_remove("DPSTAT_LEDGER")
        .stdout(full)
        .output()
        .expect("dpstat runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| !l.contains("warning:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].starts_with("dpstat: ") && errors[0].contains("No space left"), "{stderr}");
}

/// Data quoted in a message cannot drive the terminal of whoever reads stderr: control bytes in
/// a bad cell or a header name arrive escaped, and a wide header is abbreviated.
#[test]
fn data_in_messages_is_escaped_and_short() {
    let dir = tempfile::TempDir::new().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "name,x\nann,1\nbob,\x1b[31mRED\x07\n").unwrap();
    let line = fails_with(
        dpstat().args(["sum", "--col", "x", "--lower", "0", "--upper", "9", "--eps", "1"]).arg(&bad),
        &["\\x1b[31mRED\\x07", "is not a finite number"],
    );
    assert!(!line.contains('\x1b') && !line.contains('\x07'), "{line:?}");

    let header = dir.path().join("header.csv");
    std::fs::write(&header, "a\x1b]0;pwned\x07,b\n1,2\n").unwrap();
    let line =
        fails_with(dpstat().args(["sum", "--col", "c", "--eps", "1"]).arg(&header), &["\\x1b]0;pwned\\x07"]);
    assert!(!line.contains('\x1b'), "{line:?}");

    let wide = dir.path().join("wide.csv");
    let names: Vec<String> = (0..10_000).map(|i| format!("column_{i}")).collect();
    std::fs::write(&wide, format!("{}\n", names.join(","))).unwrap();
    let line = fails_with(
        dpstat().args(["count", "--where", "nope=1", "--eps", "1"]).arg(&wide),
        &["10000 columns in all"],
    );
    assert!(line.len() < 2_000, "{} bytes", line.len());
}

/// Line numbers in messages are the file's physical lines whatever ends them (CRLF, CR, LF),
/// with empty lines and a quoted line break before the bad cell.
#[test]
fn line_numbers_are_right_for_crlf_and_cr_files() {
    let dir = tempfile::TempDir::new().unwrap();
    for (name, text, line) in [
        ("lf.csv", "a,b\n1,2\n3,x\n", 3),
        ("crlf.csv", "a,b\r\n1,2\r\n3,x\r\n", 3),
        ("cr.csv", "a,b\r1,2\r3,x\r", 3),
        ("empty_lines.csv", "\u{feff}a,b\r\n1,2\r\n\r\n\r\n3,x\r\n", 5),
        ("quoted.csv", "a,b\r\n\"q\r\nq\",2\r\n3,x\r\n", 4),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        for threads in ["1", "2"] {
            let mut cmd = dpstat();
            cmd.args([
                "sum",
                "--col",
                "b",
                "--lower",
                "0",
                "--upper",
                "9",
                "--eps",
                "1",
                "--threads",
                threads,
            ]);
            fails_with(cmd.arg(&path), &[&format!("row 2 (line {line}), column 'b'")]);
        }
    }
}

/// A file that is not CSV text is named as what it is, exit 2, before anything is read past its
/// first record; a header-less data row is never judged under a ledger (it would be an uncharged
/// refusal that depends on a row).
#[test]
fn binary_input_is_named_not_parsed() {
    let dir = tempfile::TempDir::new().unwrap();
    let cases: [(&str, &[u8], &str); 3] = [
        ("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"),
        ("blob.bin", b"ab\x00cd\nx,y\n", "NUL byte"),
        ("wide.csv", b"\xff\xfea\x00,\x00b\x00\n\x00", "UTF-16"),
    ];
    for (name, bytes, says) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let line = fails_with(dpstat().args(["count", "--eps", "1"]).arg(&path), &["is not CSV text", says]);
        assert_eq!(line.trim_end().lines().count(), 1, "{line}");
    }
    // Parquet's magic bytes are read as Parquet (tests/parquet_errors.rs has the rest).
    let path = dir.path().join("table.parquet");
    std::fs::write(&path, b"PAR1\x15\x04\x15\x10").unwrap();
    fails_with(
        dpstat().args(["count", "--eps", "1"]).arg(&path),
        &["table.parquet: not a readable Parquet file"],
    );
    let path = dir.path().join("rows.csv");
    std::fs::write(&path, b"a\x00b,1\nc,2\n").unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let out = common::unseeded()
        .args(["count", "--no-headers", "--eps", "1", "--budget", "2", "--ledger"])
        .arg(&ledger)
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Flags and subcommands of the neighbouring tools (xsv's `-o FILE`, `--csv`, `-q`, `-s`; SQL's
/// `avg`, xsv's `stats`) get dpstat's own words, not clap's `use '-- --csv'`.
#[test]
fn neighbouring_tools_flags_and_subcommands_get_dpstats_words() {
    let people = fixture("people.csv");
    fails_with(
        dpstat().args(["count", "--eps", "1", "-o", "out.csv"]).arg(&people),
        &["'out.csv'", "--format", "redirect it with > FILE"],
    );
    for (flag, says) in [("--csv", "--format csv"), ("-q", "stderr"), ("-s", "--col COL")] {
        let error = fails_with(dpstat().args(["count", "--eps", "1", flag]).arg(&people), &[flag, says]);
        assert!(!error.contains("use '--"), "{error}");
    }
    fails_with(dpstat().args(["avg", "--col", "age"]).arg(&people), &["'avg'", "'mean'"]);
    fails_with(dpstat().args(["stats"]).arg(&people), &["'stats'", "'describe'"]);
    // A flag that exists in some subcommand still parses there.
    assert!(stdout_of(dpstat().args(["mean", "-s", "age", "-l", "0", "-u", "100", "-e", "1"]).arg(&people))
        .trim()
        .parse::<f64>()
        .is_ok());
}
