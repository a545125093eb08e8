//! `--where` filters (and a workload query's `where`): how they are written, how they are
//! checked before any data row is read, and the one test every scan path applies to a row,
//! [`passes`].
//!
//! A filter is `COLUMN OPERATOR VALUE`, all filters of a query must hold (AND):
//!
//! | written | a row passes when its trimmed cell … |
//! |---|---|
//! | `COL=V` | equals the text V (trimmed), byte for byte |
//! | `COL!=V` | differs from V (an empty cell differs from any V but the empty one) |
//! | `COL<N`, `COL<=N`, `COL>N`, `COL>=N` | is a number and compares so with N |
//! | `COL in A,B,C` | equals one of the listed texts (`"Smith, Ann",Lee`: CSV quotes) |
//! | `COL not in A,B,C` | equals none of them (empty cells included) |
//! | `COL is empty` (also `COL=`) | is empty (or the row has no such field) |
//! | `COL is not empty` (also `COL!=`) | is not empty |
//!
//! Numbers are read by [`parse_number`], the parser every query uses, on both sides: N when the
//! filter is parsed (a filter whose N is not a finite number is refused), and the cell on every
//! row (with the file's decimal mark, `--decimal`; N is always written with a point), so a date
//! or timestamp compares as its day or second number (`day>=2025-01-01`). A cell
//! that is not a number (text, empty, `NaN`, `inf`, `2025-02-30`) does not match a comparison;
//! it is not an error, whatever `--invalid` says (`--invalid` is about the column a statistic
//! reads). Comparisons are between the two f64 values, so `-0` equals `0`.
//!
//! The column is the text before the first operator: the first of `=`, `!=`, `<`, `<=`, `>`,
//! `>=`, or of the words ` in `, ` not in `, ` is empty`, ` is not empty` (with spaces around
//! them). A column whose name contains one of these is written in double quotes, a quote inside
//! doubled as in CSV: `"a<b"=1`, `"born in"=Paris`, `"say ""hi"""=x`. When a word operator comes
//! before a `=`, `<`, `>` or `!` the filter is refused as ambiguous (`born in city=Paris` could
//! be either), and the message says to quote the column. A value starting with `=`, `<` or `>`
//! after `=` or `!=` is refused too: `age=>65` or `age==65` are typos far more often than
//! filters on such texts (which `"COL" in =65`, the column quoted, still writes).
//!
//! The texts of `in` and `not in` are one CSV record ([`list::items`]): a text that holds a
//! comma or a quote is written in double quotes, a quote inside doubled
//! (`name in "Smith, Ann",Lee`, `quote in "say ""hi""",x`); spaces outside the quotes are
//! trimmed, and a quoted text may not begin or end with a space (no trimmed cell does). The
//! value of `=` and `!=` is the rest of the filter, quotes and all.
//!
//! Filters are public predicates of one row: a row passes or not whatever the other rows hold,
//! so they change no sensitivity (a count of the rows that pass still moves by at most one).

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::str::FromStr;

use crate::data::cell::{parse_number, parse_number_in, DecimalMark};
use crate::data::row::{text_cell, Row};
use crate::data::source::ColumnRef;
use crate::numeric::bins::word;
use crate::numeric::format::real;
use crate::numeric::list;

/// `--where` as typed: a column (as the flag names it) and its test.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    pub column: String,
    pub test: Test,
}

/// A filter with its column parsed (a header name, or a 1-based index with --no-header).
#[derive(Clone, Debug, PartialEq)]
pub struct FilterSpec {
    pub column: ColumnRef,
    pub test: Test,
}

/// Resolved filters: a column index and its test. Every one must pass.
pub type Filters = [(usize, Test)];

/// What a row's trimmed cell must satisfy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Test {
    Equals(Box<[u8]>),
    Differs(Box<[u8]>),
    Less(f64),
    AtMost(f64),
    Greater(f64),
    AtLeast(f64),
    // Boxed: the common tests stay small (a slice), so the filter list is compact to walk.
    In(Box<Members>),
    NotIn(Box<Members>),
    Empty,
    NotEmpty,
}

/// Whether a row passes every filter: the one test of every scan path (the csv reader's loop,
/// the parallel scan, the router of groups and workloads).
#[inline(always)]
pub fn passes(row: &Row, filters: &Filters) -> bool {
    for (i, test) in filters {
        if !test.matches_in(text_cell(row, *i), row.decimal()) {
            return false;
        }
    }
    true
}

/// Whether two byte strings are equal: for up to 8 bytes one word compare rather than a call
/// to memcmp (the filter is tested on every row).
#[inline(always)]
fn same(cell: &[u8], value: &[u8]) -> bool {
    cell.len() == value.len() && if cell.len() <= 8 { word(cell) == word(value) } else { cell == value }
}

impl Test {
    /// Whether a trimmed cell of a file that writes decimals with a point satisfies the test.
    pub fn matches(&self, cell: &[u8]) -> bool {
        self.matches_in(cell, DecimalMark::Point)
    }

    /// Whether a trimmed cell satisfies the test, its number read with the file's mark.
    #[inline(always)]
    pub fn matches_in(&self, cell: &[u8], mark: DecimalMark) -> bool {
        match self {
            // Equality first: the common filter stays one slice comparison.
            Test::Equals(value) => same(cell, value),
            Test::Differs(value) => !same(cell, value),
            Test::Empty => cell.is_empty(),
            Test::NotEmpty => !cell.is_empty(),
            Test::In(members) => members.contains(cell),
            Test::NotIn(members) => !members.contains(cell),
            Test::Less(n) => parse_number_in(cell, mark).is_some_and(|x| x < *n),
            Test::AtMost(n) => parse_number_in(cell, mark).is_some_and(|x| x <= *n),
            Test::Greater(n) => parse_number_in(cell, mark).is_some_and(|x| x > *n),
            Test::AtLeast(n) => parse_number_in(cell, mark).is_some_and(|x| x >= *n),
        }
    }

    /// The operator and value as written back (`>=65`, ` in a,b`).
    fn label(&self) -> String {
        let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
        match self {
            Test::Equals(v) => format!("={}", text(v)),
            Test::Differs(v) => format!("!={}", text(v)),
            Test::Less(n) => format!("<{}", real(*n)),
            Test::AtMost(n) => format!("<={}", real(*n)),
            Test::Greater(n) => format!(">{}", real(*n)),
            Test::AtLeast(n) => format!(">={}", real(*n)),
            Test::In(m) => format!(" in {}", list::join(&m.list.iter().map(|v| text(v)).collect::<Vec<_>>())),
            Test::NotIn(m) => {
                format!(" not in {}", list::join(&m.list.iter().map(|v| text(v)).collect::<Vec<_>>()))
            }
            Test::Empty => " is empty".to_string(),
            Test::NotEmpty => " is not empty".to_string(),
        }
    }
}

/// The texts of `in` / `not in`: searched in order when few (faster than hashing the cell),
/// hashed when many; both give the same answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Members {
    list: Vec<Box<[u8]>>,
    set: Option<HashSet<Box<[u8]>>>,
}

/// Above this many members, a set lookup.
const LINEAR_MEMBERS: usize = 16;

impl Members {
    fn new(list: Vec<Box<[u8]>>) -> Members {
        let set = (list.len() > LINEAR_MEMBERS).then(|| list.iter().cloned().collect());
        Members { list, set }
    }

    #[inline]
    pub fn contains(&self, cell: &[u8]) -> bool {
        match &self.set {
            Some(set) => set.contains(cell),
            None => self.list.iter().any(|m| **m == *cell),
        }
    }
}

impl PartialEq for Members {
    fn eq(&self, other: &Members) -> bool {
        self.list == other.list
    }
}

impl FilterSpec {
    /// How a release lists the filter, in the syntax it was parsed from (`age>=65`,
    /// `region in north,south`, `"a<b"=1`).
    /// The column is in quotes when the filter would not read back as itself without them.
    pub fn label(&self) -> String {
        let (column, test) = (self.column.label(), self.test.label());
        let plain = format!("{column}{test}");
        match plain.parse::<Filter>() {
            Ok(f) if f.column == column && f.test == self.test => plain,
            _ => format!("\"{}\"{test}", column.replace('"', "\"\"")),
        }
    }
}

/// The word operators, longest first where one starts another.
const WORDS: [(&str, Word); 4] =
    [("not in", Word::NotIn), ("in", Word::In), ("is not empty", Word::NotEmpty), ("is empty", Word::Empty)];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Word {
    In,
    NotIn,
    Empty,
    NotEmpty,
}

impl FromStr for Filter {
    type Err = String;

    fn from_str(s: &str) -> Result<Filter, String> {
        let text = s.trim();
        let (column, rest) = match text.strip_prefix('"') {
            Some(quoted) => {
                let (column, rest) = list::close(quoted).ok_or_else(|| {
                    format!("'{s}': the quoted column has no closing quote (a quote inside is doubled: \"a\"\"b\")")
                })?;
                // A word operator right after the closing quote needs no space before it.
                (column, format!(" {}", rest.trim_start()))
            }
            None => {
                let at = operator_at(text).map_err(|why| format!("'{s}' {why}"))?;
                (text[..at].trim().to_string(), text[at..].to_string())
            }
        };
        if column.is_empty() {
            return Err(format!("'{s}' names no column before its operator"));
        }
        let test = test_of(&rest).map_err(|why| format!("'{s}': {why}"))?;
        Ok(Filter { column, test })
    }
}

/// Where the operator starts in an unquoted filter: the first symbol (`=`, `!`, `<`, `>`), or
/// the first word operator when there is no symbol. A word operator before a symbol is
/// ambiguous (`born in city=Paris`).
fn operator_at(text: &str) -> Result<usize, String> {
    let symbol = text.find(['=', '!', '<', '>']);
    let word = text
        .char_indices()
        .filter(|(_, c)| c.is_whitespace())
        .map(|(i, _)| i)
        .find(|&i| word_at(&text[i..]).is_some());
    match (symbol, word) {
        (Some(s), Some(w)) if w < s => Err(format!(
            "is ambiguous: a word operator (in, not in, is empty) comes before a {}; put the column \
             in double quotes, like '\"COL\" in A,B' or '\"COL NAME\"=V'",
            &text[s..s + 1]
        )),
        (Some(at), _) | (None, Some(at)) => Ok(at),
        (None, None) => {
            Err("has no operator: write COL=VALUE, COL!=VALUE, COL<N (or <=, >, >=), 'COL in A,B', \
             'COL not in A,B', 'COL is empty' or 'COL is not empty'"
                .to_string())
        }
    }
}

/// The word operator that `text` starts with (whitespace first, then the words), and the text
/// after it.
fn word_at(text: &str) -> Option<(Word, &str)> {
    let after_space = text.trim_start();
    if after_space.len() == text.len() {
        return None;
    }
    WORDS.iter().find_map(|&(words, word)| {
        let mut rest = after_space;
        for (k, part) in words.split(' ').enumerate() {
            if k > 0 {
                let trimmed = rest.trim_start();
                if trimmed.len() == rest.len() {
                    return None;
                }
                rest = trimmed;
            }
            rest = rest.strip_prefix(part)?;
        }
        // `in` and `not in` are followed by whitespace and a list; the emptiness tests end the filter.
        let ends = match word {
            Word::In | Word::NotIn => rest.starts_with(char::is_whitespace),
            Word::Empty | Word::NotEmpty => rest.trim().is_empty(),
        };
        ends.then_some((word, rest))
    })
}

/// The test from the operator on: `>=65`, ` in a,b`, ` is empty`.
fn test_of(rest: &str) -> Result<Test, String> {
    if let Some((word, after)) = word_at(rest) {
        return match word {
            Word::Empty => Ok(Test::Empty),
            Word::NotEmpty => Ok(Test::NotEmpty),
            Word::In => members(after).map(|m| Test::In(Box::new(m))),
            Word::NotIn => members(after).map(|m| Test::NotIn(Box::new(m))),
        };
    }
    let rest = rest.trim_start();
    let (op, value) = if let Some(v) = rest.strip_prefix("!=") {
        ("!=", v)
    } else if let Some(v) = rest.strip_prefix("<=") {
        ("<=", v)
    } else if let Some(v) = rest.strip_prefix(">=") {
        (">=", v)
    } else if let Some(v) = rest.strip_prefix('=') {
        ("=", v)
    } else if let Some(v) = rest.strip_prefix('<') {
        ("<", v)
    } else if let Some(v) = rest.strip_prefix('>') {
        (">", v)
    } else if rest.starts_with('!') {
        return Err("'!' is only used as != (COL!=VALUE)".to_string());
    } else {
        return Err(format!(
            "expected an operator after the column (=, !=, <, <=, >, >=, in, not in, is empty), found '{}'",
            crate::error::shown(rest, 20)
        ));
    };
    let value = value.trim();
    match op {
        "=" | "!=" => {
            if let Some(c) = value.chars().next().filter(|c| ['=', '<', '>'].contains(c)) {
                return Err(format!(
                    "the value after {op} starts with '{c}': write comparisons as <=, >=, != (for a text \
                     that starts with '{c}': '\"COL\" in {value}')"
                ));
            }
            Ok(match (op, value.is_empty()) {
                ("=", true) => Test::Empty,
                ("=", false) => Test::Equals(value.as_bytes().into()),
                (_, true) => Test::NotEmpty,
                (_, false) => Test::Differs(value.as_bytes().into()),
            })
        }
        _ => {
            let n = parse_number(value.as_bytes()).ok_or_else(|| {
                format!(
                    "{op} compares numbers, and '{}' is not a finite number",
                    crate::error::shown(value, 40)
                )
            })?;
            Ok(match op {
                "<" => Test::Less(n),
                "<=" => Test::AtMost(n),
                ">" => Test::Greater(n),
                _ => Test::AtLeast(n),
            })
        }
    }
}

/// The comma-separated texts of `in`, each trimmed, CSV-quoted where a text holds a comma or a
/// quote ([`list::values`]); none may be empty.
fn members(text: &str) -> Result<Members, String> {
    let items: Vec<Box<[u8]>> = list::values(text)?.into_iter().map(|m| m.into_bytes().into()).collect();
    if items.iter().any(|m| m.is_empty()) {
        return Err(
            "an item of the list is empty: list texts like 'north,south' (for empty cells use 'COL is empty')"
                .to_string(),
        );
    }
    Ok(Members::new(items))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(s: &str) -> Filter {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn refused(s: &str) -> String {
        s.parse::<Filter>().expect_err(s)
    }

    fn bytes(v: &str) -> Box<[u8]> {
        v.as_bytes().into()
    }

    #[test]
    fn operators_are_read_after_the_column() {
        let cases: [(&str, &str, Test); 14] = [
            ("age>=65", "age", Test::AtLeast(65.0)),
            ("age >= 65", "age", Test::AtLeast(65.0)),
            ("age>65", "age", Test::Greater(65.0)),
            ("age<=-1.5", "age", Test::AtMost(-1.5)),
            ("age<1e3", "age", Test::Less(1000.0)),
            ("region=north", "region", Test::Equals(bytes("north"))),
            ("region != north", "region", Test::Differs(bytes("north"))),
            ("comment=he said \"hi\" = ok", "comment", Test::Equals(bytes("he said \"hi\" = ok"))),
            ("x=", "x", Test::Empty),
            ("x!=", "x", Test::NotEmpty),
            ("home region is empty", "home region", Test::Empty),
            ("x is not empty", "x", Test::NotEmpty),
            (
                "region in north, south",
                "region",
                Test::In(Box::new(Members::new(vec![bytes("north"), bytes("south")]))),
            ),
            (
                "region not in a b,c",
                "region",
                Test::NotIn(Box::new(Members::new(vec![bytes("a b"), bytes("c")]))),
            ),
        ];
        for (text, column, test) in cases {
            let f = parse(text);
            assert_eq!((f.column.as_str(), &f.test), (column, &test), "{text}");
        }
    }

    #[test]
    fn quoted_columns_hold_operators_and_quotes() {
        assert_eq!(parse("\"a<b\"=1").column, "a<b");
        assert_eq!(
            parse("\"born in\" in x,y").test,
            Test::In(Box::new(Members::new(vec![bytes("x"), bytes("y")])))
        );
        assert_eq!(parse("\"born in\"in x").column, "born in");
        assert_eq!(parse("\"say \"\"hi\"\"\">=2").column, "say \"hi\"");
        assert_eq!(
            parse("\"region\" in a=b,c").test,
            Test::In(Box::new(Members::new(vec![bytes("a=b"), bytes("c")])))
        );
        assert!(refused("\"a<b=1").contains("closing quote"));
    }

    /// The texts of `in` are a CSV record: a quoted text keeps its commas, quotes and inner
    /// spaces, and matches the cell that holds exactly it.
    #[test]
    fn in_lists_take_quoted_texts() {
        let f = parse("name in \"Smith, Ann\", Lee ,\"say \"\"hi\"\"\"");
        let want = Members::new(vec![bytes("Smith, Ann"), bytes("Lee"), bytes("say \"hi\"")]);
        assert_eq!(f.test, Test::In(Box::new(want)));
        assert!(f.test.matches(b"Smith, Ann") && f.test.matches(b"say \"hi\""));
        assert!(!f.test.matches(b"\"Smith") && !f.test.matches(b"Ann\"") && !f.test.matches(b"Smith"));
        for (text, needle) in [
            ("name in \"Smith, Ann,Lee", "never closed"),
            ("name not in a\"b", "holds a quote"),
            ("name in \" Lee\"", "match no row"),
            ("name in \"\",x", "empty"),
        ] {
            let why = refused(text);
            assert!(why.contains(needle), "{text}: {why}");
        }
    }

    #[test]
    fn mistakes_are_refused_with_what_to_write() {
        for (text, needle) in [
            ("region", "no operator"),
            ("", "no operator"),
            ("=north", "names no column"),
            ("  >= 3", "names no column"),
            ("age>=abc", "compares numbers"),
            ("age<nan", "compares numbers"),
            ("age>inf", "compares numbers"),
            ("age>1e400", "compares numbers"),
            ("age>=", "compares numbers"),
            ("age=>65", "starts with '>'"),
            ("age==65", "starts with '='"),
            ("age!<3", "!="),
            ("born in city=Paris", "ambiguous"),
            ("region in north,,south", "empty"),
            ("region in ", "no operator"),
            ("x is emptyish", "no operator"),
        ] {
            let why = refused(text);
            assert!(why.contains(needle), "{text}: {why}");
        }
    }

    #[test]
    fn labels_read_back_as_the_same_filter() {
        for text in [
            "age>=65",
            "age<0.1",
            "region=north",
            "region!=north",
            "region in north,south",
            "region not in x",
            "x is empty",
            "x is not empty",
            "\"a<b\"=1",
            "\"born in\" in a",
            "\"q\"\"x\"!=2",
            "\" padded \"=1",
            "name in \"Smith, Ann\",Lee",
            "name not in \"say \"\"hi\"\"\",x",
            "name in \"a,b\"",
        ] {
            let f = parse(text);
            let spec = FilterSpec { column: ColumnRef::Name(f.column.clone()), test: f.test.clone() };
            let again = parse(&spec.label());
            assert_eq!(again, f, "{text} → {}", spec.label());
        }
        let label = |t: &str| {
            let f = parse(t);
            FilterSpec { column: ColumnRef::Name(f.column), test: f.test }.label()
        };
        assert_eq!(label("age >= 65.0"), "age>=65");
        assert_eq!(label("home region = a"), "home region=a");
        assert_eq!(label("x="), "x is empty");
        assert_eq!(label("name in  \"Smith, Ann\" , \"Lee\""), "name in \"Smith, Ann\",Lee");
    }

    #[test]
    fn comparisons_read_dates_and_timestamps_as_their_numbers() {
        // 2025-01-01 is day 20089; its midnight UTC is second 1735689600.
        let f = parse("day>=2025-01-01");
        assert_eq!(f.test, Test::AtLeast(20089.0));
        assert!(f.test.matches(b"2025-01-01") && f.test.matches(b"2025-03-01") && f.test.matches(b"20089"));
        assert!(!f.test.matches(b"2024-12-31") && !f.test.matches(b"20088.5"));
        // A cell that only looks like a date is no number: it matches no comparison.
        assert!(!f.test.matches(b"2025-02-30") && !parse("day<2025-01-01").test.matches(b"2025-02-30"));
        let f = parse("at < 2025-01-01T01:00:00+01:00");
        assert_eq!(f.test, Test::Less(1_735_689_600.0));
        assert!(f.test.matches(b"2024-12-31T23:59:59.999Z") && !f.test.matches(b"2025-01-01 00:00"));
        assert!(refused("day>=2025-02-30").contains("not a finite number"));
    }

    #[test]
    fn long_member_lists_are_hashed_and_agree() {
        let list: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        let f = parse(&format!("c in {}", list.join(",")));
        let Test::In(members) = &f.test else { panic!("in") };
        assert!(members.set.is_some());
        assert!(f.test.matches(b"k39") && f.test.matches(b"k0") && !f.test.matches(b"k40"));
    }

    /// The test a filter applies, computed another way: with std's parser and the cell as text.
    fn reference(test: &Test, cell: &str) -> bool {
        let number = cell.parse::<f64>().ok().filter(|x| x.is_finite());
        let text = |v: &[u8]| String::from_utf8(v.to_vec()).unwrap();
        match test {
            Test::Equals(v) => cell == text(v),
            Test::Differs(v) => cell != text(v),
            Test::Less(n) => number.is_some_and(|x| x < *n),
            Test::AtMost(n) => number.is_some_and(|x| x <= *n),
            Test::Greater(n) => number.is_some_and(|x| x > *n),
            Test::AtLeast(n) => number.is_some_and(|x| x >= *n),
            Test::In(m) => m.list.iter().any(|v| text(v) == cell),
            Test::NotIn(m) => !m.list.iter().any(|v| text(v) == cell),
            Test::Empty => cell.is_empty(),
            Test::NotEmpty => !cell.is_empty(),
        }
    }

    proptest! {
        /// Every operator on every kind of cell (numbers in several spellings, text, empty,
        /// NaN and infinities) agrees with the reference; a non-number never compares.
        #[test]
        fn filters_match_what_they_say(
            op in prop_oneof![
                Just("="), Just("!="), Just("<"), Just("<="), Just(">"), Just(">="),
                Just(" in "), Just(" not in "),
            ],
            value in prop_oneof![
                "-?[0-9]{1,3}(\\.[0-9]{0,2})?",
                Just("1e2".to_string()),
                "[a-c]{1,2}",
            ],
            cell in prop_oneof![
                "-?[0-9]{1,3}(\\.[0-9]{0,2})?",
                Just("100".to_string()), Just("1e2".to_string()), Just("+5".to_string()),
                Just("-0".to_string()), Just("NaN".to_string()), Just("inf".to_string()),
                Just("".to_string()), "[a-c]{1,2}",
            ],
        ) {
            let text = format!("c{op}{value}");
            let Ok(filter) = text.parse::<Filter>() else {
                // Only a comparison with a value that is not a number is refused.
                prop_assert!(op.starts_with(['<', '>']) && value.parse::<f64>().is_err(), "{}", text);
                return Ok(());
            };
            prop_assert_eq!(filter.test.matches(cell.as_bytes()), reference(&filter.test, &cell), "{} on '{}'", text, cell);
        }

        /// The word compare of short cells is byte equality, for any bytes and lengths.
        #[test]
        fn same_is_byte_equality(
            a in proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), any::<u8>()], 0..12),
            b in proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), any::<u8>()], 0..12),
        ) {
            prop_assert_eq!(same(&a, &b), a == b);
            prop_assert!(same(&a, &a));
            let mut c = a.clone();
            if let Some(last) = c.last_mut() {
                *last ^= 1;
                prop_assert!(!same(&a, &c));
            }
        }
    }
}
