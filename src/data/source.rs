//! Where the CSV comes from, how to read it, and columns as the flags name them
//! (resolved to indices against the header by [`Input`](crate::data::input::Input)).

use std::path::PathBuf;

use crate::data::cell::DecimalMark;
use crate::error::{shown_path, Error};
use crate::numeric::bins::Keys;

/// Where the CSV comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Stdin,
    Path(PathBuf),
    /// Several FILE arguments, read as one dataset (`data::dataset`).
    Paths(Vec<PathBuf>),
}

impl Source {
    /// How messages name the input: each path escaped as text from the data is (a shell glob
    /// hands dpstat the names it finds, whose bytes could drive a terminal).
    pub fn display_name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_string(),
            Source::Path(p) => shown_path(p),
            Source::Paths(ps) => ps.iter().map(|p| shown_path(p)).collect::<Vec<_>>().join(" "),
        }
    }
}

/// A column as given by flag: a header name, or a 1-based number (xsv's convention). With a
/// header, a plain number is column N unless the header names another column N, which
/// [`Input::resolve`](crate::data::input::Input::resolve) refuses as ambiguous; a name in double
/// quotes (`--col '"2"'`) is always a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnRef {
    Name(String),
    /// 0-based after validation of the user's 1-based number (without a header).
    Index(usize),
    /// A plain number N with a header: column N (0-based `index`), or the column named `text`.
    Number {
        index: usize,
        text: String,
    },
}

impl ColumnRef {
    pub fn parse(text: &str, has_header: bool, flag: &str) -> Result<ColumnRef, Error> {
        let number = match text.trim() {
            t if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => t.parse::<usize>().ok(),
            _ => None,
        };
        if has_header {
            if let Some(name) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                return Ok(ColumnRef::Name(name.to_string()));
            }
            return Ok(match number {
                Some(n) if n >= 1 => ColumnRef::Number { index: n - 1, text: text.to_string() },
                _ => ColumnRef::Name(text.to_string()),
            });
        }
        match number {
            Some(i) if i >= 1 => Ok(ColumnRef::Index(i - 1)),
            _ => Err(Error::usage(format!(
                "{flag} '{}': with --no-headers, columns are 1-based numbers",
                crate::error::shown(text, 40)
            ))),
        }
    }

    pub fn label(&self) -> String {
        match self {
            ColumnRef::Name(n) => n.clone(),
            ColumnRef::Index(i) => (i + 1).to_string(),
            ColumnRef::Number { text, .. } => text.clone(),
        }
    }
}

/// How to read the CSV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    pub delimiter: u8,
    pub has_header: bool,
    /// The mark of decimals in number cells (`--decimal`).
    pub decimal: DecimalMark,
}

/// `--by COL --keys k1,k2,...`: one release per public key, plus `other`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupSpec {
    pub column: ColumnRef,
    pub keys: Keys,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_columns() {
        assert_eq!(ColumnRef::parse("2", false, "--col"), Ok(ColumnRef::Index(1)));
        assert!(ColumnRef::parse("0", false, "--col").is_err());
        assert_eq!(ColumnRef::parse("2", true, "--col").map(|c| c.label()), Ok("2".to_string()));
        assert_eq!(
            ColumnRef::parse("2", true, "--col"),
            Ok(ColumnRef::Number { index: 1, text: "2".into() })
        );
        assert_eq!(ColumnRef::parse("\"2\"", true, "--col"), Ok(ColumnRef::Name("2".into())));
        assert_eq!(ColumnRef::parse("0", true, "--col"), Ok(ColumnRef::Name("0".into())));
        assert_eq!(ColumnRef::parse("+2", true, "--col"), Ok(ColumnRef::Name("+2".into())));
        assert_eq!(ColumnRef::parse("income", true, "--col"), Ok(ColumnRef::Name("income".into())));
        assert!(ColumnRef::parse("\"2\"", false, "--col").is_err());
    }
}
