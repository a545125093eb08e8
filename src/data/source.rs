//! Where the CSV comes from, how to read it, and columns as the flags name them
//! (resolved to indices against the header by [`Input`](crate::data::input::Input)).

use std::path::PathBuf;

use crate::error::Error;
use crate::numeric::bins::Keys;

/// Where the CSV comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Stdin,
    Path(PathBuf),
}

impl Source {
    /// How messages name the input.
    pub fn display_name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_string(),
            Source::Path(p) => p.display().to_string(),
        }
    }
}

/// A column as given by flag: a header name, or a 1-based index with --no-header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnRef {
    Name(String),
    /// 0-based after validation of the user's 1-based number.
    Index(usize),
}

impl ColumnRef {
    pub fn parse(text: &str, has_header: bool, flag: &str) -> Result<ColumnRef, Error> {
        if has_header {
            return Ok(ColumnRef::Name(text.to_string()));
        }
        match text.trim().parse::<usize>() {
            Ok(i) if i >= 1 => Ok(ColumnRef::Index(i - 1)),
            _ => Err(Error::usage(format!("{flag} '{text}': with --no-header, columns are 1-based numbers"))),
        }
    }

    pub fn label(&self) -> String {
        match self {
            ColumnRef::Name(n) => n.clone(),
            ColumnRef::Index(i) => (i + 1).to_string(),
        }
    }
}

/// How to read the CSV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    pub delimiter: u8,
    pub has_header: bool,
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
    }
}
