//! Opening the CSV (a file or standard input) and resolving column flags to indices,
//! once, against the header — before any data row is read.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read};
use std::rc::Rc;

use anyhow::Result;
use csv::ByteRecord;
use sha2::{Digest, Sha256};

use crate::error::bad_input;
use crate::plan::{ColumnRef, CsvOptions, Source};

/// Large reads keep system calls off the per-row path.
const READ_BUFFER: usize = 256 * 1024;

/// An open CSV positioned after its header.
pub struct Input {
    name: String,
    reader: csv::Reader<Box<dyn Read>>,
    header: Option<ByteRecord>,
    digest: Option<Rc<RefCell<Sha256>>>,
}

impl Input {
    /// Opens the source; with `fingerprint`, every byte read is also hashed (SHA-256), so the
    /// dataset is identified in the same single pass, standard input included.
    pub fn open(source: &Source, options: &CsvOptions, fingerprint: bool) -> Result<Input> {
        let name = source.display_name();
        let mut raw: Box<dyn Read> = match source {
            Source::Stdin => Box::new(io::stdin()),
            Source::Path(path) => {
                Box::new(File::open(path).map_err(|e| bad_input(format!("cannot open {name}: {e}")))?)
            }
        };
        let digest = fingerprint.then(|| Rc::new(RefCell::new(Sha256::new())));
        if let Some(digest) = &digest {
            raw = Box::new(Hashing { inner: raw, digest: Rc::clone(digest) });
        }
        let mut input = Input::from_reader(name, raw, options)?;
        input.digest = digest;
        Ok(input)
    }

    /// Opens the source again for a second pass, keeping the fingerprint of the first (which
    /// read every byte).
    pub fn reopen(&mut self, source: &Source, options: &CsvOptions) -> Result<()> {
        let digest = self.digest.take();
        *self = Input::open(source, options, false)?;
        self.digest = digest;
        Ok(())
    }

    /// SHA-256 of every byte read so far: after a complete scan, of the whole input.
    pub fn fingerprint(&self) -> Option<String> {
        let digest = self.digest.as_ref()?.borrow().clone().finalize();
        Some(crate::ledger::fingerprint(&digest))
    }

    pub fn from_reader(name: String, raw: Box<dyn Read>, options: &CsvOptions) -> Result<Input> {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(options.delimiter)
            .has_headers(options.has_header)
            .buffer_capacity(READ_BUFFER)
            .from_reader(raw);
        let header = if options.has_header {
            let header =
                reader.byte_headers().map_err(|e| bad_input(format!("{name}: reading the header: {e}")))?;
            Some(header.clone())
        } else {
            None
        };
        Ok(Input { name, reader, header, digest: None })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// How messages name a column: its header name, or its 1-based number.
    pub fn column_label(&self, index: usize) -> String {
        match self.header.as_ref().and_then(|h| h.get(index)) {
            Some(name) => header_name(name),
            None => (index + 1).to_string(),
        }
    }

    pub fn reader(&mut self) -> &mut csv::Reader<Box<dyn Read>> {
        &mut self.reader
    }

    /// The 0-based index of a column, named by `flag` in messages. Without a header an index
    /// is checked against the first row's width when the scan starts.
    pub fn resolve(&self, column: &ColumnRef, flag: &str) -> Result<usize> {
        let name = match column {
            ColumnRef::Index(i) => return Ok(*i),
            ColumnRef::Name(name) => name,
        };
        let Some(header) = &self.header else {
            unreachable!("a column name is only planned when the input has a header")
        };
        let names: Vec<String> = header.iter().map(header_name).collect();
        let matches: Vec<usize> = (0..names.len()).filter(|&i| names[i] == *name).collect();
        match matches.as_slice() {
            [i] => Ok(*i),
            [] if names.iter().all(|n| n.is_empty()) => Err(bad_input(format!(
                "{}: no column '{name}' ({flag}): the input is empty (not even a header row)",
                self.name
            ))),
            [] => {
                let hint = match nearest(name, &names) {
                    Some(near) => format!("did you mean {flag} {near}? "),
                    None => String::new(),
                };
                Err(bad_input(format!(
                    "{}: no column '{name}' ({flag}); {hint}the columns are: {}",
                    self.name,
                    names.join(", ")
                )))
            }
            _ => Err(bad_input(format!(
                "{}: column '{name}' ({flag}) appears {} times in the header",
                self.name,
                matches.len()
            ))),
        }
    }
}

/// The header name closest to a mistyped one: the same name in another case, else the most
/// similar (Jaro-Winkler >= 0.8, as for typos and dropped letters); none when nothing is close.
fn nearest<'a>(name: &str, names: &'a [String]) -> Option<&'a str> {
    let lower = name.to_lowercase();
    if let Some(same) = names.iter().find(|n| n.to_lowercase() == lower) {
        return Some(same);
    }
    names
        .iter()
        .map(|n| (strsim::jaro_winkler(&lower, &n.to_lowercase()), n))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n.as_str())
}

/// Passes bytes through while hashing them.
struct Hashing {
    inner: Box<dyn Read>,
    digest: Rc<RefCell<Sha256>>,
}

impl Read for Hashing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.borrow_mut().update(&buf[..n]);
        Ok(n)
    }
}

/// A header cell as a name: a UTF-8 byte-order mark and surrounding spaces are not part of it.
fn header_name(cell: &[u8]) -> String {
    let cell = cell.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(cell);
    String::from_utf8_lossy(cell.trim_ascii()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(text: &'static str) -> Input {
        let options = CsvOptions { delimiter: b',', has_header: true };
        Input::from_reader("t.csv".into(), Box::new(text.as_bytes()), &options).unwrap()
    }

    #[test]
    fn resolves_names_with_bom_and_spaces() {
        let i = input("\u{feff}id, income ,age\n1,2,3\n");
        assert_eq!(i.resolve(&ColumnRef::Name("id".into()), "--col").unwrap(), 0);
        assert_eq!(i.resolve(&ColumnRef::Name("income".into()), "--col").unwrap(), 1);
        let err = i.resolve(&ColumnRef::Name("incom".into()), "--col").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv: no column 'incom' (--col); did you mean --col income? the columns are: id, income, age"
        );
        let err = i.resolve(&ColumnRef::Name("zzz".into()), "--where").unwrap_err();
        assert_eq!(err.to_string(), "t.csv: no column 'zzz' (--where); the columns are: id, income, age");
    }

    #[test]
    fn suggests_the_nearest_name() {
        let names: Vec<String> = ["id", "age", "income", "urban_rural"].map(String::from).to_vec();
        assert_eq!(nearest("Income", &names), Some("income"));
        assert_eq!(nearest("urban", &names), Some("urban_rural"));
        assert_eq!(nearest("agee", &names), Some("age"));
        assert_eq!(nearest("height", &names), None);
    }

    #[test]
    fn duplicate_header_is_an_error() {
        let i = input("a,a\n1,2\n");
        assert!(i.resolve(&ColumnRef::Name("a".into()), "--col").is_err());
    }
}
