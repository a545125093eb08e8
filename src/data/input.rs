//! Opening the CSV (a file or standard input, plain or gzip) and resolving column flags to
//! indices, once, against the header — before any data row is read.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, IsTerminal, Read, Seek, SeekFrom};
use std::path::Path;
use std::rc::Rc;

use crate::data::fingerprint::Fingerprinter;
use crate::data::parallel::read_at;
use crate::data::source::{ColumnRef, CsvOptions, Source};
use crate::error::{bad_input, shown, shown_list};
use anyhow::Result;
use csv::ByteRecord;
use flate2::read::MultiGzDecoder;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Large reads keep system calls off the per-row path.
const READ_BUFFER: usize = 256 * 1024;
/// Files at least this large show a progress bar (when stderr is a terminal).
const PROGRESS_FROM: u64 = 64 << 20;

/// A message lists at most this many of the header's column names.
const MESSAGE_COLUMNS: usize = 30;

/// A csv reader over any byte stream.
type CsvReader = csv::Reader<Box<dyn Read>>;

/// An open CSV positioned after its header.
pub struct Input {
    name: String,
    options: CsvOptions,
    reader: CsvReader,
    header: Option<ByteRecord>,
    /// Fingerprints the records as the csv reader reads their bytes (after gzip decompression).
    digest: Option<Rc<RefCell<Fingerprinter>>>,
    /// Whether the input is to be fingerprinted at all.
    fingerprinted: bool,
    /// A fingerprint computed apart from the csv reader, by a parallel scan.
    fingerprint: Option<String>,
    /// A plain regular file, which can be read again by position (parallel scan, rescan).
    plain: Option<PlainFile>,
    /// The same regular file (not gzip), read by position to name the physical line of a record
    /// in a message; kept when the scan falls back to the csv reader.
    lines: Option<File>,
    threads: usize,
    progress: Option<ProgressBar>,
    /// Rows of another width than the first are read as they are (missing cells are empty)
    /// instead of stopping the scan: see [`Input::tolerate_ragged_rows`].
    tolerant: bool,
}

struct PlainFile {
    file: File,
    len: u64,
}

impl Input {
    /// Opens the source; with `fingerprint`, the records are also fingerprinted (SHA-256 of their
    /// canonical CSV, [`Fingerprinter`]) in the same pass, standard input included. Gzip input
    /// (recognised by its magic bytes or a `.gz` name) is decompressed as it streams, and the
    /// fingerprint is of the decompressed CSV: the same data is the same dataset either way.
    /// A plain file may be scanned by up to `threads` threads.
    pub fn open(source: &Source, options: &CsvOptions, fingerprint: bool, threads: usize) -> Result<Input> {
        let name = source.display_name();
        let (raw, named_gz, plain, progress): (Box<dyn Read>, bool, Option<PlainFile>, _) = match source {
            Source::Stdin => (Box::new(io::stdin().lock()), false, None, None),
            Source::Path(path) => {
                let file = File::open(path).map_err(|e| bad_input(format!("cannot open {name}: {e}")))?;
                let meta = file.metadata().map_err(|e| bad_input(format!("cannot open {name}: {e}")))?;
                let len = meta.is_file().then_some(meta.len());
                let progress = len.and_then(progress_bar);
                let reader = file.try_clone().map_err(|e| bad_input(format!("cannot open {name}: {e}")))?;
                let raw = Box::new(Counting { inner: reader, progress: progress.clone() });
                let plain = len.map(|len| PlainFile { file, len });
                (raw, has_gz_extension(path), plain, progress)
            }
        };
        let (gzip, raw) = sniff_gzip(raw).map_err(|e| bad_input(format!("{name}: reading: {e}")))?;
        let gzip = gzip || named_gz;
        let mut raw: Box<dyn Read> = if gzip { Box::new(MultiGzDecoder::new(raw)) } else { raw };
        let digest = fingerprint.then(|| Rc::new(RefCell::new(Fingerprinter::new(options.delimiter))));
        if let Some(digest) = &digest {
            raw = Box::new(Hashing { inner: raw, digest: Rc::clone(digest) });
        }
        let mut input = Input::from_reader(name, raw, options)?;
        input.digest = digest;
        input.fingerprinted = fingerprint;
        input.plain = plain.filter(|_| !gzip);
        input.lines = input.plain.as_ref().and_then(|p| p.file.try_clone().ok());
        input.threads = threads.max(1);
        input.progress = progress;
        Ok(input)
    }

    /// Opens the source again for a second pass, keeping the fingerprint of the first (which
    /// read every byte) and the way rows are read.
    pub fn reopen(&mut self, source: &Source, options: &CsvOptions) -> Result<()> {
        let fingerprint = self.fingerprint();
        let tolerant = self.tolerant;
        *self = Input::open(source, options, false, self.threads)?;
        self.fingerprint = fingerprint;
        self.tolerant = tolerant;
        Ok(())
    }

    /// The fingerprint of the whole input's records: after a complete scan, of every record.
    pub fn fingerprint(&mut self) -> Option<String> {
        if let Some(fingerprint) = &self.fingerprint {
            return Some(fingerprint.clone());
        }
        let digest = self.digest.take()?;
        let fingerprinter = digest.replace(Fingerprinter::new(self.options.delimiter));
        self.fingerprint = Some(fingerprinter.finish());
        self.fingerprint.clone()
    }

    /// Under a ledger nothing the scan meets in the rows may stop it (its message, its exit code
    /// or the stop itself would be an answer about the data that nobody paid for): a row with
    /// fewer fields than the first has its missing cells read as empty, which `--invalid` then
    /// decides on like any other invalid cell, and a row with more has the extra ones ignored.
    pub fn tolerate_ragged_rows(&mut self) {
        self.tolerant = true;
        // Nor does a progress bar show how much data there is: its total is the file's size.
        self.finish_progress();
    }

    /// See [`Input::tolerate_ragged_rows`].
    pub fn tolerant(&self) -> bool {
        self.tolerant
    }

    pub fn from_reader(name: String, raw: Box<dyn Read>, options: &CsvOptions) -> Result<Input> {
        let (reader, header) = csv_reader(&name, raw, options)?;
        Ok(Input {
            name,
            options: options.clone(),
            reader,
            header,
            digest: None,
            fingerprinted: false,
            fingerprint: None,
            plain: None,
            lines: None,
            threads: 1,
            progress: None,
            tolerant: false,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn delimiter(&self) -> u8 {
        self.options.delimiter
    }

    /// The file and its length, when it can be scanned in parallel.
    pub fn splittable(&self) -> Option<(&File, u64)> {
        self.plain.as_ref().map(|p| (&p.file, p.len))
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    pub fn progress(&self) -> Option<&ProgressBar> {
        self.progress.as_ref()
    }

    /// Whether a parallel scan must hash the file itself (the csv reader sees only its start).
    pub fn hashes_itself(&self) -> bool {
        self.fingerprinted
    }

    /// Takes the progress bar off the terminal, if there is one: the scan is over.
    pub fn finish_progress(&mut self) {
        if let Some(bar) = self.progress.take() {
            bar.finish_and_clear();
        }
    }

    /// Records the fingerprint of the whole file, computed by a parallel scan.
    pub fn set_fingerprint(&mut self, fingerprint: String) {
        self.fingerprint = Some(fingerprint);
    }

    /// Starts a plain file again from its first byte, hashing it anew if fingerprinted; the
    /// reader is left after the header, and the file is read by the csv reader alone from now on.
    pub fn rewind(&mut self) -> Result<()> {
        let Some(plain) = self.plain.take() else {
            return Err(bad_input(format!("{}: cannot read the input a second time", self.name)));
        };
        let reopen = |e: io::Error| bad_input(format!("{}: reading: {e}", self.name));
        let mut file = plain.file.try_clone().map_err(reopen)?;
        file.seek(SeekFrom::Start(0)).map_err(reopen)?;
        if let Some(bar) = &self.progress {
            bar.set_position(0);
        }
        let mut raw: Box<dyn Read> = Box::new(Counting { inner: file, progress: self.progress.clone() });
        if self.fingerprinted {
            let digest = Rc::new(RefCell::new(Fingerprinter::new(self.options.delimiter)));
            self.digest = Some(Rc::clone(&digest));
            raw = Box::new(Hashing { inner: raw, digest });
        }
        let (reader, header) = csv_reader(&self.name, raw, &self.options)?;
        self.reader = reader;
        self.header = header;
        self.fingerprint = None;
        Ok(())
    }

    /// The physical line of the record that starts at `byte` (as the csv reader reports it): CRLF,
    /// CR and LF each end a line, counted by reading the file again up to the record, on the
    /// error path only. Where the input cannot be read again (standard input, gzip) it is
    /// `fallback`, the csv reader's own count of LF bytes, which is right for LF files.
    pub fn line_of(&self, byte: u64, fallback: u64) -> u64 {
        let Some(file) = &self.lines else { return fallback };
        let mut buf = vec![0u8; 64 << 10];
        let (mut offset, mut line, mut after_cr) = (0u64, 1u64, false);
        // The csv reader reports a record after CRLF at the LF, and a record after empty lines
        // at the first of them: count every line end up to `byte`, and then those right after
        // it, up to the record's first byte.
        loop {
            let read = match read_at(file, &mut buf, offset) {
                Ok(0) | Err(_) => return line,
                Ok(n) => n,
            };
            for (i, &b) in buf[..read].iter().enumerate() {
                let at = offset + i as u64;
                let ends = b == b'\r' || b == b'\n';
                if at >= byte && !ends {
                    return line;
                }
                line += u64::from(b == b'\r' || (b == b'\n' && !after_cr));
                after_cr = b == b'\r';
            }
            offset += read as u64;
        }
    }

    /// The number of fields in the header (None without one).
    pub fn header_len(&self) -> Option<usize> {
        self.header.as_ref().map(ByteRecord::len)
    }

    /// How messages name a column: its header name, or its 1-based number.
    pub fn column_label(&self, index: usize) -> String {
        match self.header.as_ref().and_then(|h| h.get(index)) {
            Some(name) => shown(&header_name(name), 40),
            None => (index + 1).to_string(),
        }
    }

    pub fn reader(&mut self) -> &mut CsvReader {
        &mut self.reader
    }

    /// The 0-based index of a column, named by `flag` in messages. Without a header an index
    /// is checked against the first row's width when the scan starts. With a header, a plain
    /// number N is column N, or the column named N; when those are two different columns the
    /// flag is ambiguous and refused, saying how to write either. A header that is one field
    /// holding `;`, a tab or `|` suggests the delimiter the file probably has.
    pub fn resolve(&self, column: &ColumnRef, flag: &str) -> Result<usize> {
        let (name, number) = match column {
            ColumnRef::Index(i) => return Ok(*i),
            ColumnRef::Name(name) => (name.as_str(), None),
            ColumnRef::Number { index, text } => (text.as_str(), Some(*index)),
        };
        /// A header of one field that holds another likely delimiter: the file is probably
        /// separated by it; says so, with the flag that reads it so.
        fn delimiter_guess(names: &[String], delimiter: u8) -> Option<String> {
            let [only] = names else { return None };
            let (byte, flag, what) =
                [(b';', "-d ';'", "semicolons"), (b'\t', "-d '\\t'", "tabs"), (b'|', "-d '|'", "pipes")]
                    .into_iter()
                    .filter(|(b, _, _)| *b != delimiter)
                    .max_by_key(|(b, _, _)| only.bytes().filter(|c| c == b).count())?;
            only.as_bytes().contains(&byte).then(|| {
                format!(
                    "the header is one field, '{}', that holds {what}: if the file is separated by {what}, add {flag}",
                    shown(only, 40)
                )
            })
        }
        let Some(header) = &self.header else {
            unreachable!("a column name is only planned when the input has a header")
        };
        let names: Vec<String> = header.iter().map(header_name).collect();
        let matches: Vec<usize> = (0..names.len()).filter(|&i| names[i] == *name).collect();
        let source = &self.name;
        match (matches.as_slice(), number) {
            ([i], None) => Ok(*i),
            ([i], Some(n)) if *i == n || n >= names.len() => Ok(*i),
            ([i], Some(n)) => Err(bad_input(format!(
                "{source}: {flag} {name} is ambiguous: column {} is '{}' and column {} is named '{}'; \
                 write {flag} '\"{name}\"' for the column named {name}, or {flag} {} for column {}",
                n + 1,
                shown(&names[n], 40),
                i + 1,
                shown(name, 40),
                shown(&names[n], 40),
                n + 1,
            ))),
            ([], _) if names.iter().all(|n| n.is_empty()) => Err(bad_input(format!(
                "{source}: no column '{}' ({flag}): the input is empty (not even a header row)",
                shown(name, 40)
            ))),
            ([], Some(n)) if n < names.len() => Ok(n),
            ([], _) if delimiter_guess(&names, self.options.delimiter).is_some() => Err(bad_input(format!(
                "{source}: no column '{}' ({flag}): {}",
                shown(name, 40),
                delimiter_guess(&names, self.options.delimiter).unwrap_or_default()
            ))),
            ([], number) => {
                let hint = match (number, nearest(name, &names)) {
                    (Some(_), _) => format!("the header has {} columns; ", names.len()),
                    (None, Some(near)) => format!("did you mean {flag} {}? ", shown(near, 40)),
                    (None, None) => String::new(),
                };
                Err(bad_input(format!(
                    "{source}: no column '{}' ({flag}); {hint}the columns are: {}",
                    shown(name, 40),
                    shown_list(&names, MESSAGE_COLUMNS)
                )))
            }
            _ => Err(bad_input(format!(
                "{source}: column '{}' ({flag}) appears {} times in the header",
                shown(name, 40),
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

/// Passes bytes through while fingerprinting them.
struct Hashing {
    inner: Box<dyn Read>,
    digest: Rc<RefCell<Fingerprinter>>,
}

impl Read for Hashing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.borrow_mut().update(&buf[..n]);
        Ok(n)
    }
}

/// Passes bytes through while advancing the progress bar, if there is one.
struct Counting<R> {
    inner: R,
    progress: Option<ProgressBar>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(bar) = &self.progress {
            bar.inc(n as u64);
        }
        Ok(n)
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        if let Some(bar) = &self.progress {
            bar.finish_and_clear();
        }
    }
}

/// The csv reader every path uses (the parallel scan relies on these settings: quoting on,
/// no escape or comment byte, any of CR, LF, CRLF ends a row), and the header it has read.
/// Rows of unequal width are the scan's to refuse (or, under a ledger, to tolerate).
fn csv_reader(
    name: &str,
    raw: Box<dyn Read>,
    options: &CsvOptions,
) -> Result<(CsvReader, Option<ByteRecord>)> {
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(options.delimiter)
        .has_headers(options.has_header)
        .flexible(true)
        .buffer_capacity(READ_BUFFER)
        .from_reader(raw);
    let header = if options.has_header {
        let header =
            reader.byte_headers().map_err(|e| bad_input(format!("{name}: reading the header: {e}")))?;
        Some(header.clone())
    } else {
        None
    };
    Ok((reader, header))
}

/// Reads the first two bytes to recognise gzip; returns the stream with them put back.
/// (They come back in front of the next read, not alone: csv-core strips a byte-order mark only
/// when its first read holds all three bytes of it.)
fn sniff_gzip(mut raw: Box<dyn Read>) -> io::Result<(bool, Box<dyn Read>)> {
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < magic.len() {
        match raw.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let gzip = magic[..got] == [0x1f, 0x8b];
    Ok((gzip, Box::new(PutBack { front: magic, len: got, inner: raw })))
}

/// A stream with up to two bytes put back in front.
struct PutBack {
    front: [u8; 2],
    len: usize,
    inner: Box<dyn Read>,
}

impl Read for PutBack {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.len == 0 || buf.is_empty() {
            return self.inner.read(buf);
        }
        let n = self.len.min(buf.len());
        buf[..n].copy_from_slice(&self.front[..n]);
        self.front.copy_within(n..self.len, 0);
        self.len -= n;
        if self.len > 0 {
            return Ok(n);
        }
        // Fill the rest of this read too; an error shows again on the next read.
        match self.inner.read(&mut buf[n..]) {
            Ok(more) => Ok(n + more),
            Err(_) => Ok(n),
        }
    }
}

fn has_gz_extension(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// The bytes of a CSV source as dpstat reads them: gzip (by magic bytes or a `.gz` name) is
/// decompressed. `dpstat budget` fingerprints these, as a release does.
pub fn decompressed(raw: Box<dyn Read>, path: Option<&Path>) -> io::Result<Box<dyn Read>> {
    let (gzip, raw) = sniff_gzip(raw)?;
    Ok(if gzip || path.is_some_and(has_gz_extension) { Box::new(MultiGzDecoder::new(raw)) } else { raw })
}

/// A progress bar for reading `len` bytes, only where a person watches: stderr is a terminal,
/// not in CI, and the file is large enough to take a while.
fn progress_bar(len: u64) -> Option<ProgressBar> {
    let ci = std::env::var_os("CI").is_some();
    if !shows_progress(len, io::stderr().is_terminal(), ci) {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("dpstat: reading {bytes}/{total_bytes} {wide_bar} {eta}")
    {
        bar.set_style(style);
    }
    Some(bar)
}

fn shows_progress(len: u64, terminal: bool, ci: bool) -> bool {
    terminal && !ci && len >= PROGRESS_FROM
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
    fn progress_only_for_large_files_on_a_terminal_outside_ci() {
        assert!(shows_progress(PROGRESS_FROM, true, false));
        assert!(!shows_progress(PROGRESS_FROM, false, false));
        assert!(!shows_progress(PROGRESS_FROM, true, true));
        assert!(!shows_progress(PROGRESS_FROM - 1, true, false));
    }

    #[test]
    fn gzip_is_recognised_by_magic_bytes_or_name() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"a,b\n1,2\n").unwrap();
        let gz = gz.finish().unwrap();
        let mut text = String::new();
        decompressed(Box::new(io::Cursor::new(gz)), None).unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "a,b\n1,2\n");
        let mut plain = String::new();
        decompressed(Box::new(&b"x"[..]), None).unwrap().read_to_string(&mut plain).unwrap();
        assert_eq!(plain, "x");
        let named = decompressed(Box::new(&b"a,b\n"[..]), Some(Path::new("t.csv.gz"))).unwrap();
        assert!(io::read_to_string(named).is_err(), "a .gz name means gzip");
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
    fn a_number_is_a_column_index_or_an_unambiguous_name() {
        let number = |n: &str| ColumnRef::parse(n, true, "--col").unwrap();
        let i = input("id,age,income\n1,2,3\n");
        assert_eq!(i.resolve(&number("3"), "--col").unwrap(), 2);
        let err = i.resolve(&number("4"), "--col").unwrap_err().to_string();
        assert_eq!(
            err,
            "t.csv: no column '4' (--col); the header has 3 columns; the columns are: id, age, income"
        );
        // A header named 2020 beyond the last index is that column; one named 2 at column 2 too.
        let i = input("id,2020,2\n1,2,3\n");
        assert_eq!(i.resolve(&number("2020"), "--col").unwrap(), 1);
        let i = input("id,2,x\n1,2,3\n");
        assert_eq!(i.resolve(&number("2"), "--col").unwrap(), 1);
        // Column 2 is `age` but column 3 is named 2: refused, with both ways to say it.
        let i = input("id,age,2\n1,2,3\n");
        let err = i.resolve(&number("2"), "--by").unwrap_err().to_string();
        assert_eq!(
            err,
            "t.csv: --by 2 is ambiguous: column 2 is 'age' and column 3 is named '2'; write --by '\"2\"' \
             for the column named 2, or --by age for column 2"
        );
        assert_eq!(i.resolve(&number("\"2\""), "--col").unwrap(), 2);
        assert_eq!(i.resolve(&number("age"), "--col").unwrap(), 1);
    }

    #[test]
    fn a_header_of_one_field_suggests_its_delimiter() {
        let name = |n: &str| ColumnRef::Name(n.into());
        let i = input("id;amount;label\n1;10;x\n");
        let err = i.resolve(&name("amount"), "--col").unwrap_err().to_string();
        assert_eq!(
            err,
            "t.csv: no column 'amount' (--col): the header is one field, 'id;amount;label', that holds \
             semicolons: if the file is separated by semicolons, add -d ';'"
        );
        let i = input("id\tamount\n1\t2\n");
        let err = i.resolve(&ColumnRef::parse("2", true, "--col").unwrap(), "--col").unwrap_err();
        assert!(
            err.to_string().ends_with("holds tabs: if the file is separated by tabs, add -d '\\t'"),
            "{err}"
        );
        let i = input("a|b\n1|2\n");
        assert!(i.resolve(&name("b"), "--col").unwrap_err().to_string().contains("add -d '|'"));
        // One plain field, or several fields: no guess.
        let i = input("amount\n1\n");
        assert!(!i.resolve(&name("x"), "--col").unwrap_err().to_string().contains("-d"));
        let i = input("a;b,c\n1;2,3\n");
        assert!(!i.resolve(&name("b"), "--col").unwrap_err().to_string().contains("-d"));
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

    /// Physical line numbers of records, whatever ends the lines (LF, CRLF, CR, mixed), with a
    /// byte-order mark, empty lines and a quoted line break: each data row's first field holds
    /// the line it is on.
    #[test]
    fn records_are_named_by_their_physical_line() {
        use proptest::prelude::*;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::default();
        let row = (prop_oneof![Just("\n"), Just("\r\n"), Just("\r")], 0usize..3, any::<bool>());
        runner
            .run(&(proptest::collection::vec(row, 1..12), any::<bool>()), |(rows, bom)| {
                let mut text = String::from(if bom { "\u{feff}h,q\n" } else { "h,q\n" });
                let (mut line, mut after_cr) = (2, false);
                for (end, empty, quoted) in &rows {
                    // An empty LF line right after a CR would make one CRLF, not two line ends.
                    let end = if after_cr && *empty > 0 && *end == "\n" { "\r\n" } else { end };
                    for _ in 0..*empty {
                        text.push_str(end);
                        line += 1;
                    }
                    after_cr = end == "\r";
                    let second = if *quoted { "\"a\nb\"" } else { "x" };
                    text.push_str(&format!("{line},{second}{end}"));
                    line += 1 + usize::from(*quoted);
                }
                let mut file = tempfile::NamedTempFile::new().unwrap();
                std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
                let options = CsvOptions { delimiter: b',', has_header: true };
                let mut input =
                    Input::open(&Source::Path(file.path().to_path_buf()), &options, false, 1).unwrap();
                let mut record = ByteRecord::new();
                while input.reader().read_byte_record(&mut record).unwrap() {
                    let want: u64 = std::str::from_utf8(&record[0]).unwrap().parse().unwrap();
                    let pos = record.position().unwrap();
                    prop_assert_eq!(input.line_of(pos.byte(), pos.line()), want, "{:?}", text);
                }
                Ok(())
            })
            .unwrap();
    }
}
