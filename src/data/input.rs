//! Opening the input (a CSV file or standard input, plain, gzip or zstd; a Parquet file; a
//! dataset of many files, `data::dataset`) and resolving column flags to indices, once, against
//! the header or the schema — before any data row is read.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, IsTerminal, Read};
use std::path::{Path, PathBuf};

use crate::data::cell::DecimalMark;
#[cfg(feature = "cluster")]
use crate::data::cluster::remote::Remote;
use crate::data::dataset::{self, Format, Listing, Naming, Part};
use crate::data::fingerprint::Fingerprinter;
use crate::data::parallel::Stream;
use crate::data::parquet::{self, ParquetSet};
use crate::data::source::{ColumnRef, CsvOptions, Source};
use crate::data::structure::{first_record, line_ends};
use crate::error::{bad_input, shown, shown_list, Error};
use anyhow::Result;
use flate2::read::MultiGzDecoder;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Files at least this large show a progress bar (when stderr is a terminal).
const PROGRESS_FROM: u64 = 64 << 20;

/// A message lists at most this many of the header's column names.
const MESSAGE_COLUMNS: usize = 30;

/// A UTF-8 byte-order mark, which the csv crate drops at the start of the input.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An open CSV positioned after its header.
pub struct Input {
    name: String,
    options: CsvOptions,
    /// The rest of the input, until a scan takes it.
    stream: Option<Stream>,
    header: Option<Vec<Vec<u8>>>,
    /// The number of fields of the first record (the header, or the first data row).
    first_width: Option<usize>,
    /// Whether the input is to be fingerprinted at all.
    fingerprinted: bool,
    fingerprint: Option<String>,
    threads: usize,
    progress: Option<ProgressBar>,
    /// Rows of another width than the first are read as they are (missing cells are empty)
    /// instead of stopping the scan: see [`Input::tolerate_ragged_rows`].
    tolerant: bool,
    /// Set for anything but one CSV stream: the files to read instead of `stream`.
    dataset: Option<Dataset>,
    /// The columns the flags named ([`Input::resolve`]): all a query reads, and all a Parquet
    /// file's reader decodes.
    named: RefCell<Vec<usize>>,
    /// `--engine`: the cluster that folds the rows instead of this process.
    #[cfg(feature = "cluster")]
    engine: Option<Remote>,
    /// The columns named so far of an empty dataset, by index.
    empty_names: RefCell<Vec<String>>,
    /// One CSV file that can be read again (a regular file): see [`Input::fingerprint_before_rows`].
    path: Option<PathBuf>,
}

/// The files of an input that is not one CSV stream.
pub enum Dataset {
    /// Parquet files (one, a directory, a glob, or standard input spooled to a temporary file,
    /// kept here until the input is dropped).
    Parquet { set: ParquetSet, _spool: Option<tempfile::NamedTempFile> },
    /// Several CSV files with the same header, read one after the other; `width` is the first
    /// part's (the header's), after which the partition columns are numbered.
    Csv { listing: Listing, options: CsvOptions, width: usize },
    /// A directory or glob that holds no file, or only empty ones (`files` of them): no rows,
    /// and any column (its schema is unknown, and that it is empty is data).
    Empty { files: usize },
}

impl Input {
    /// Opens the source; with `fingerprint`, the records are also fingerprinted (SHA-256 of their
    /// canonical CSV, [`Fingerprinter`]) in the same pass, standard input included. Compressed
    /// input is recognised by its first bytes (or a `.gz` name): gzip and zstd are decompressed
    /// as they stream, and the fingerprint is of the decompressed CSV (the same data is the same
    /// dataset either way); bzip2, xz, lz4 and zip are refused with a message that says how to
    /// decompress them. The rows are scanned by `threads` threads.
    pub fn open(source: &Source, options: &CsvOptions, fingerprint: bool, threads: usize) -> Result<Input> {
        let name = source.display_name();
        let (raw, path, progress): (Box<dyn Read + Send>, Option<&Path>, Option<ProgressBar>) = match source {
            Source::Stdin => {
                if io::stdin().is_terminal() {
                    // Someone typed `dpstat mean --col x` and forgot the file: say why it waits.
                    eprintln!(
                        "dpstat: reading CSV from the terminal (standard input): type rows and end with \
                         Ctrl-D, or give a FILE (Ctrl-C to stop)"
                    );
                }
                widen_pipe();
                (Box::new(io::stdin()), None, None)
            }
            Source::Paths(paths) => return Input::open_dataset(name, paths, options, fingerprint, threads),
            Source::Path(path) if is_listing(path)? => {
                return Input::open_dataset(name, std::slice::from_ref(path), options, fingerprint, threads)
            }
            Source::Path(path) => return Input::open_file(path, name, options, fingerprint, threads),
        };
        Input::from_stream(name, raw, path, progress, options, fingerprint, threads)
    }

    /// One file read as one CSV stream (or a Parquet one that reached here), named `name` in
    /// messages: the FILE argument, or a dataset's part as its listing names it.
    fn open_file(
        path: &Path,
        name: String,
        options: &CsvOptions,
        fingerprint: bool,
        threads: usize,
    ) -> Result<Input> {
        let file = File::open(path).map_err(|e| bad_input(format!("cannot open {name}: {e}")))?;
        let meta = file.metadata().map_err(|e| bad_input(format!("cannot open {name}: {e}")))?;
        let progress = meta.is_file().then_some(meta.len()).and_then(progress_bar);
        let raw = Box::new(Counting { inner: file, progress: progress.clone() });
        Input::from_stream(name, raw, Some(path), progress, options, fingerprint, threads)
    }

    /// A byte stream: Parquet by its magic bytes (spooled), else CSV, decompressed as its first
    /// bytes (or its `.gz` name) say.
    fn from_stream(
        name: String,
        raw: Box<dyn Read + Send>,
        path: Option<&Path>,
        progress: Option<ProgressBar>,
        options: &CsvOptions,
        fingerprint: bool,
        threads: usize,
    ) -> Result<Input> {
        // A pipe may carry Parquet: its footer is at its end, so it is spooled to a temporary
        // file first (on disk, whatever its size).
        let mut raw = raw;
        let mut magic = Vec::with_capacity(4);
        (&mut raw).take(4).read_to_end(&mut magic).map_err(|e| bad_input(format!("{name}: reading: {e}")))?;
        if magic == b"PAR1" {
            return Input::spooled(name, magic, raw, options, fingerprint, threads);
        }
        let raw: Box<dyn Read + Send> = Box::new(io::Cursor::new(magic).chain(raw));
        let raw = decompressed(&name, raw, path)?;
        let mut input = Input::start(name, raw, options, fingerprint)?;
        input.threads = threads.max(1);
        input.path = path.and_then(rereadable_path);
        input.progress = progress;
        Ok(input)
    }

    /// An input read from any byte stream, by one thread (tests, and `Input::open`).
    pub fn from_reader(name: String, raw: Box<dyn Read + Send>, options: &CsvOptions) -> Result<Input> {
        Input::start(name, raw, options, false)
    }

    /// Reads up to the end of the first record, and the header from it.
    fn start(
        name: String,
        mut raw: Box<dyn Read + Send>,
        options: &CsvOptions,
        fingerprint: bool,
    ) -> Result<Input> {
        let mut digest = fingerprint.then(|| Fingerprinter::new(options.delimiter));
        let reading = |e: io::Error| bad_input(format!("{name}: reading: {e}"));
        let mut head = Vec::new();
        let mut eof = false;
        // The first record is the header, a public schema; without a header it is a data row,
        // which under a ledger (`fingerprint`) nothing may refuse uncharged.
        let may_refuse = options.has_header || !fingerprint;
        let binary = |first: &[u8]| match binary_kind(first) {
            Some(kind) if may_refuse => Err(bad_input(format!(
                "{name} is not CSV text: it looks like {kind}; dpstat reads CSV (plain, gzip or zstd)"
            ))),
            _ => Ok(()),
        };
        let (fields, used, bom) = loop {
            if !eof {
                // Each read as large as what is held: a first record of n bytes is scanned
                // about 2n bytes in all, where reads of one block each scanned it n/BLOCK times.
                let want = head.len().max(64 << 10);
                let got = (&mut raw).take(want as u64).read_to_end(&mut head).map_err(reading)?;
                eof = got < want;
            }
            let bom = if head.starts_with(BOM) { BOM.len() } else { 0 };
            if head.len() < BOM.len() && BOM.starts_with(&head) && !eof {
                continue;
            }
            if let Some((fields, used)) = first_record(&head[bom..], options.delimiter, eof) {
                break (fields, used, bom);
            }
            // No line end yet, so all of it is the first record: a binary stream may have none
            // (a gzip of zeros, /dev/zero), so it is refused now, not once it has all been read.
            binary(&head[bom..])?;
        };
        binary(&head[bom..bom + used])?;
        if let Some(digest) = &mut digest {
            digest.update(&head);
        }
        let width = (!fields.is_empty()).then_some(fields.len());
        let (header, skip) = if options.has_header { (Some(fields), bom + used) } else { (None, bom) };
        let after_cr = skip > 0 && head[skip - 1] == b'\r';
        let lines = line_ends(&head[..skip], false);
        head.drain(..skip);
        Ok(Input {
            name,
            options: options.clone(),
            stream: Some(Stream { reader: raw, head, after_cr, lines, digest }),
            header,
            first_width: width,
            fingerprinted: fingerprint,
            fingerprint: None,
            threads: 1,
            progress: None,
            tolerant: false,
            dataset: None,
            named: RefCell::new(Vec::new()),
            empty_names: RefCell::new(Vec::new()),
            path: None,
            #[cfg(feature = "cluster")]
            engine: None,
        })
    }

    /// An input of the files the FILE arguments list (`data::dataset::list`). Under a ledger
    /// (`fingerprint`) its refusals name the FILE arguments, never a path below them
    /// (`dataset::Naming`).
    fn open_dataset(
        name: String,
        paths: &[PathBuf],
        options: &CsvOptions,
        fingerprint: bool,
        threads: usize,
    ) -> Result<Input> {
        let naming = if fingerprint { Naming::Arguments } else { Naming::Paths };
        let listing = dataset::list(paths, naming)?;
        let empty = Dataset::Empty { files: listing.empty };
        let (dataset, header) = match listing.format {
            None => (empty, None),
            Some(Format::Parquet) => {
                let set = parquet::open(&listing.parts, &listing.partitions)?;
                let header = set.names().iter().map(|n| n.as_bytes().to_vec()).collect();
                (Dataset::Parquet { set, _spool: None }, Some(header))
            }
            Some(Format::Csv) => match csv_header(&listing, options, fingerprint)? {
                // No part holds a record: no rows, and no header to name the columns.
                None => (Dataset::Empty { files: listing.empty + listing.parts.len() }, None),
                Some(mut header) => {
                    let width = header.len();
                    header.extend(listing.partitions.iter().map(|p| p.as_bytes().to_vec()));
                    (Dataset::Csv { listing, options: options.clone(), width }, Some(header))
                }
            },
        };
        Input::with_dataset(name, dataset, header, options, fingerprint, threads)
    }

    /// A dataset's part, read as one CSV stream and named as its listing names it.
    pub fn open_part(part: &Part, options: &CsvOptions, fingerprint: bool, threads: usize) -> Result<Input> {
        Input::open_file(&part.path, part.shown.clone(), options, fingerprint, threads)
    }

    /// Standard input (or a pipe) that starts with Parquet's magic bytes, copied to a temporary
    /// file and read from there.
    fn spooled(
        name: String,
        magic: Vec<u8>,
        raw: Box<dyn Read + Send>,
        options: &CsvOptions,
        fingerprint: bool,
        threads: usize,
    ) -> Result<Input> {
        let failed = |e: io::Error| bad_input(format!("{name}: copying Parquet to a temporary file: {e}"));
        let mut spool = tempfile::NamedTempFile::new().map_err(failed)?;
        io::copy(&mut io::Cursor::new(magic).chain(raw), spool.as_file_mut()).map_err(failed)?;
        let part = Part { path: spool.path().to_path_buf(), shown: name.clone(), partition: Vec::new() };
        let set = parquet::open(std::slice::from_ref(&part), &[])?;
        let header = set.names().iter().map(|n| n.as_bytes().to_vec()).collect();
        let dataset = Dataset::Parquet { set, _spool: Some(spool) };
        Input::with_dataset(name, dataset, Some(header), options, fingerprint, threads)
    }

    fn with_dataset(
        name: String,
        dataset: Dataset,
        header: Option<Vec<Vec<u8>>>,
        options: &CsvOptions,
        fingerprint: bool,
        threads: usize,
    ) -> Result<Input> {
        if matches!(dataset, Dataset::Parquet { .. }) && options.decimal == DecimalMark::Comma {
            return Err(bad_input(format!(
                "{name}: --decimal , reads the number cells of CSV text; Parquet holds its numbers typed \
                 (drop --decimal)"
            )));
        }
        // A Parquet file's fingerprint is of its footers: known before any row is read.
        let fingerprint_now = match &dataset {
            Dataset::Parquet { set, .. } if fingerprint => Some(set.fingerprint()?),
            Dataset::Empty { .. } if fingerprint => Some(parquet::empty_fingerprint()),
            _ => None,
        };
        let first_width = header.as_ref().map(Vec::len);
        Ok(Input {
            name,
            options: CsvOptions { has_header: true, ..options.clone() },
            stream: None,
            header,
            first_width,
            fingerprinted: fingerprint,
            fingerprint: fingerprint_now,
            threads: threads.max(1),
            progress: None,
            tolerant: false,
            dataset: Some(dataset),
            named: RefCell::new(Vec::new()),
            empty_names: RefCell::new(Vec::new()),
            path: None,
            #[cfg(feature = "cluster")]
            engine: None,
        })
    }

    /// The files to read, for anything but one CSV stream.
    pub fn dataset(&self) -> Option<&Dataset> {
        self.dataset.as_ref()
    }

    /// Sends the scan to the cluster at `url` (`--engine`): Parquet files only (`engine::probe`
    /// then asks the cluster, before the charge, whether it can read them).
    #[cfg(feature = "cluster")]
    pub fn set_engine(&mut self, url: &str) -> Result<()> {
        let remote = Remote::parse(url).map_err(|e| bad_input(format!("--engine: {e}")))?;
        match &self.dataset {
            Some(Dataset::Parquet { _spool: None, .. }) => self.engine = Some(remote),
            // No file, no row: nothing for a cluster to read.
            Some(Dataset::Empty { .. }) => {}
            Some(Dataset::Parquet { .. }) => {
                return Err(bad_input("--engine: the cluster reads files, not standard input"))
            }
            _ => {
                return Err(bad_input(format!(
                    "--engine: the cluster reads Parquet files; {} is CSV",
                    self.name
                )))
            }
        }
        Ok(())
    }

    /// Without the cluster engine built in, `--engine` is refused.
    #[cfg(not(feature = "cluster"))]
    pub fn set_engine(&mut self, _: &str) -> Result<()> {
        Err(bad_input(
            "--engine: this dpstat was built without the cluster engine (cargo build --features cluster)",
        ))
    }

    /// The cluster that folds the rows (`--engine`).
    #[cfg(feature = "cluster")]
    pub fn engine(&self) -> Option<&Remote> {
        self.engine.as_ref()
    }

    #[cfg(not(feature = "cluster"))]
    pub fn engine(&self) -> Option<&()> {
        None
    }

    /// The columns the flags named so far, in the order they were named.
    pub fn named_columns(&self) -> Vec<usize> {
        self.named.borrow().clone()
    }

    /// Records a dataset's fingerprint once its scan read every part.
    pub fn set_fingerprint(&mut self, fingerprint: String) {
        self.fingerprint = Some(fingerprint);
    }

    /// Opens the source again for a second pass, keeping the fingerprint of the first (which
    /// read every byte) and the way rows are read.
    pub fn reopen(&mut self, source: &Source, options: &CsvOptions) -> Result<()> {
        if self.dataset.is_some() {
            // A dataset's executors read its files anew on every scan, from the listing and
            // footers of the first pass (and the columns it named): nothing to reopen, and no
            // file added since can join the second pass.
            return Ok(());
        }
        let fingerprint = self.fingerprint();
        let tolerant = self.tolerant;
        *self = Input::open(source, options, false, self.threads)?;
        self.fingerprint = fingerprint;
        self.tolerant = tolerant;
        Ok(())
    }

    /// The fingerprint the input's records will have, when it can be known before a row is
    /// read for the release: a Parquet dataset's (of its footers, already read), or one CSV
    /// file's, read through once more for it. None otherwise (standard input, several CSV
    /// files) and when that extra read fails: it only serves a check before a new budget
    /// (`ledger::reserve_for`), which then does not refuse.
    pub fn fingerprint_before_rows(&self) -> Option<String> {
        if self.fingerprint.is_some() {
            return self.fingerprint.clone();
        }
        let path = self.path.as_ref().filter(|_| self.dataset.is_none())?;
        let file = File::open(path).ok()?;
        let raw = decompressed(&self.name, Box::new(file), Some(path)).ok()?;
        crate::data::fingerprint::fingerprint_of(raw, self.options.delimiter).ok()
    }

    /// The fingerprint of the whole input's records: after a complete scan, of every record.
    pub fn fingerprint(&mut self) -> Option<String> {
        if self.fingerprint.is_none() {
            let digest = self.stream.as_mut().and_then(|s| s.digest.take())?;
            self.fingerprint = Some(digest.finish());
        }
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

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn delimiter(&self) -> u8 {
        self.options.delimiter
    }

    /// The decimal mark of the cells (`--decimal`).
    pub fn decimal(&self) -> DecimalMark {
        self.options.decimal
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Whether the input is fingerprinted as it is read.
    pub fn fingerprinted(&self) -> bool {
        self.fingerprinted
    }

    /// Takes the rest of the input for a scan; None if a scan already took it.
    pub fn take_stream(&mut self) -> Option<Stream> {
        self.stream.take()
    }

    /// Gives back what a scan leaves of the input: the fingerprint of every byte it read, when
    /// it was fingerprinted (a second pass keeps the first one's).
    pub fn scanned(&mut self, digest: Option<Fingerprinter>) {
        if let Some(digest) = digest {
            self.fingerprint = Some(digest.finish());
        }
    }

    /// Takes the progress bar off the terminal, if there is one: the scan is over.
    pub fn finish_progress(&mut self) {
        if let Some(bar) = self.progress.take() {
            bar.finish_and_clear();
        }
    }

    /// The number of fields in the header (None without one).
    pub fn header_len(&self) -> Option<usize> {
        self.header.as_ref().map(Vec::len)
    }

    /// The number of fields every row must have: the header's, else the first row's (None for
    /// an input without any record).
    pub fn width(&self) -> Option<usize> {
        self.header_len().or(self.first_width)
    }

    /// The columns' names by index, trimmed and without a byte-order mark (the partition
    /// columns' after the parts' own); empty without a header.
    pub fn column_names(&self) -> Vec<Vec<u8>> {
        let name = |n: &Vec<u8>| {
            let n = n.strip_prefix(BOM).unwrap_or(n);
            n.trim_ascii().to_vec()
        };
        self.header.as_ref().map(|h| h.iter().map(name).collect()).unwrap_or_default()
    }

    /// How messages name a column: its header name, or its 1-based number.
    pub fn column_label(&self, index: usize) -> String {
        match self.header.as_ref().and_then(|h| h.get(index)) {
            Some(name) => shown(&header_name(name), 40),
            None => (index + 1).to_string(),
        }
    }

    /// A refusal for a column that a query reads as numbers when its declared type can hold
    /// none (a Parquet Boolean, list or struct, `ParquetSet::never_numeric`): the schema is
    /// public, like a header, so this comes before anything is charged. CSV declares no types.
    pub fn refuse_never_numeric(&self, index: usize, flag: &str, query: &str) -> Result<()> {
        let Some(Dataset::Parquet { set, .. }) = &self.dataset else { return Ok(()) };
        match set.never_numeric(index) {
            Some(declared) => Err(bad_input(format!(
                "{}: column '{}' ({flag}) is declared {declared}, which holds no numbers, and {query} \
                 reads numbers",
                self.name,
                self.column_label(index)
            ))),
            None => Ok(()),
        }
    }

    /// The 0-based index of a column, named by `flag` in messages. Without a header an index
    /// is checked against the first row's width when the scan starts. With a header, a plain
    /// number N is column N, or the column named N; when those are two different columns the
    /// flag is ambiguous and refused, saying how to write either. A header that is one field
    /// holding `;`, a tab or `|` suggests the delimiter the file probably has.
    pub fn resolve(&self, column: &ColumnRef, flag: &str) -> Result<usize> {
        let index = self.resolve_index(column, flag)?;
        if let Some(Dataset::Parquet { set, .. }) = &self.dataset {
            if let Some(kind) = set.unreadable(index) {
                return Err(bad_input(format!(
                    "{}: column '{}' ({flag}) is declared {kind}, which has no cell to read: dpstat \
                     reads numbers, decimals, dates, times, Booleans and text",
                    self.name,
                    self.column_label(index)
                )));
            }
            if let Some((part, codec)) = set.unread_codec(index) {
                return Err(bad_input(format!(
                    "{part}: column '{}' ({flag}) is compressed with {codec}, which dpstat does not \
                     read; write it with zstd, snappy, gzip, lz4 or brotli",
                    self.column_label(index)
                )));
            }
        }
        let mut named = self.named.borrow_mut();
        if !named.contains(&index) {
            named.push(index);
        }
        Ok(index)
    }

    fn resolve_index(&self, column: &ColumnRef, flag: &str) -> Result<usize> {
        if let Some(Dataset::Empty { .. }) = &self.dataset {
            return Ok(self.empty_index(column));
        }
        // A Parquet schema is public, like a header; the width of CSV parts without one is their
        // first row's (data): a column past it reads as empty cells, as for one CSV file.
        let schema_width = match &self.dataset {
            Some(Dataset::Parquet { .. }) => self.header_len(),
            _ => None,
        };
        if let (ColumnRef::Index(i), Some(width)) = (column, schema_width) {
            if *i >= width {
                return Err(bad_input(format!(
                    "{}: column {} does not exist ({flag}): the files have {width} columns",
                    self.name,
                    i + 1
                )));
            }
        }
        match column {
            ColumnRef::Index(i) => Ok(*i),
            ColumnRef::Name(name) => self.header_index(name, None, flag),
            ColumnRef::Number { index, text } => self.header_index(text, Some(*index), flag),
        }
    }

    /// With no file, so no schema: every name is a column of no rows, numbered as named.
    fn empty_index(&self, column: &ColumnRef) -> usize {
        let mut names = self.empty_names.borrow_mut();
        let label = column.label();
        match names.iter().position(|n| *n == label) {
            Some(i) => i,
            None => {
                names.push(label);
                names.len() - 1
            }
        }
    }

    /// The column of the header named `name` (or, for a name that is also a number, the
    /// column of that `number` when no column has the name); an unknown, repeated or
    /// ambiguous name is refused with what the header holds.
    fn header_index(&self, name: &str, number: Option<usize>, flag: &str) -> Result<usize> {
        let Some(header) = &self.header else {
            return Err(Error::internal("a column name was planned for an input without a header").into());
        };
        let names: Vec<String> = header.iter().map(|h| header_name(h)).collect();
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
            ([], _) => Err(bad_input(self.no_column(name, number, &names, flag))),
            _ => Err(bad_input(format!(
                "{source}: column '{}' ({flag}) appears {} times in the header",
                shown(name, 40),
                matches.len()
            ))),
        }
    }

    /// Why no column is named `name`: the header is one field that another delimiter would
    /// split, or the name nearest to it, or the header's width, with the columns there are.
    fn no_column(&self, name: &str, number: Option<usize>, names: &[String], flag: &str) -> String {
        let source = &self.name;
        if let Some(guess) = delimiter_guess(names, self.options.delimiter) {
            return format!("{source}: no column '{}' ({flag}): {guess}", shown(name, 40));
        }
        let hint = match (number, nearest(name, names)) {
            (Some(_), _) => format!("the header has {} columns; ", names.len()),
            (None, Some(near)) => format!("did you mean {flag} {}? ", shown(near, 40)),
            (None, None) => String::new(),
        };
        format!(
            "{source}: no column '{}' ({flag}); {hint}the columns are: {}",
            shown(name, 40),
            shown_list(names, MESSAGE_COLUMNS)
        )
    }
}

/// A header of one field that holds another likely delimiter: the file is probably separated
/// by it; says so, with the flag that reads it so.
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

/// The path of an input that is one regular file, which can be read again.
fn rereadable_path(path: &Path) -> Option<PathBuf> {
    std::fs::metadata(path).is_ok_and(|m| m.is_file()).then(|| path.to_path_buf())
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

/// The header of a dataset of CSV parts (without one, as many empty names as the first row has
/// fields), every part's checked to be the same; None when no part holds a record. A part
/// without a record (no bytes after decompression, or only line ends) is an empty part, as a
/// part of 0 bytes is (`dataset::list`): writers leave one for a partition of no rows.
fn csv_header(listing: &Listing, options: &CsvOptions, fingerprint: bool) -> Result<Option<Vec<Vec<u8>>>> {
    let mut header: Option<(Vec<Vec<u8>>, &Part)> = None;
    for part in &listing.parts {
        // Opened as the dataset is: under a ledger without a header, the first record is a
        // data row, which nothing may refuse uncharged.
        let input = Input::open_part(part, options, fingerprint, 1)?;
        let Some(width) = input.first_width else { continue };
        let this = input.header.clone().unwrap_or_else(|| vec![Vec::new(); width]);
        match &header {
            None => header = Some((this, part)),
            Some((first, first_part)) if *first != this && options.has_header => {
                return Err(bad_input(format!(
                    "{}: its header differs from that of {}; every file of a dataset must have the \
                     same columns",
                    part.shown,
                    dataset::other(first_part, part)
                )))
            }
            Some(_) => {}
        }
    }
    Ok(header.map(|(header, _)| header))
}

/// Passes bytes through while advancing the progress bar, if there is one.
/// Whether a path is read as a dataset: a directory, a glob no file is named like, or a Parquet
/// file (a regular file: the magic bytes of a pipe are read where it is opened).
fn is_listing(path: &Path) -> Result<bool> {
    let meta = std::fs::metadata(path);
    Ok(match meta {
        Ok(m) if m.is_dir() => true,
        Ok(m) if m.is_file() => dataset::is_parquet(path, &path.display().to_string())?,
        Ok(_) => false,
        Err(_) => dataset::is_glob(path),
    })
}

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

/// What a first record that no CSV starts with is: a known binary format by its magic bytes,
/// else any file with a NUL byte in it (text has none). None for text.
fn binary_kind(first: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"PAR1", "a compressed Parquet file (decompress it first: Parquet compresses its own pages)"),
        (b"\xff\xfe", "UTF-16 text (convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8)"),
        (b"\xfe\xff", "UTF-16 text (convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8)"),
        (b"\x89PNG", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (b"\x7fELF", "a program (ELF)"),
        (b"SQLite format 3\x00", "an SQLite database"),
    ];
    MAGIC
        .iter()
        .find(|(magic, _)| first.starts_with(magic))
        .map(|(_, kind)| *kind)
        .or_else(|| memchr::memchr(0, first).map(|_| "a binary file (it holds a NUL byte)"))
}

/// How a compressed input is recognised by its first bytes, and what to do with it.
struct Compression {
    magic: &'static [u8],
    name: &'static str,
    /// The command that decompresses it to standard output, for a refused format.
    command: Option<&'static str>,
}

const COMPRESSIONS: &[Compression] = &[
    Compression { magic: b"\x1f\x8b", name: "gzip", command: None },
    Compression { magic: b"\x28\xb5\x2f\xfd", name: "zstd", command: None },
    Compression { magic: b"\xfd7zXZ\x00", name: "xz", command: Some("xz -dc") },
    Compression { magic: b"\x04\x22\x4d\x18", name: "lz4", command: Some("lz4 -dc") },
    Compression { magic: b"PK\x03\x04", name: "zip", command: Some("unzip -p") },
    Compression { magic: b"7z\xbc\xaf\x27\x1c", name: "7z", command: Some("7z x -so") },
];

/// The compression of a stream that starts with `head`, if any: bzip2 by its signature and the
/// magic of its first block (or of its end, when empty), the others by their magic bytes.
fn compression(head: &[u8]) -> Option<&'static Compression> {
    const BZIP2: Compression = Compression { magic: b"BZh", name: "bzip2", command: Some("bzip2 -dc") };
    let bzip2 = head.len() >= 10
        && head.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&head[3])
        && (head[4..10] == *b"\x31\x41\x59\x26\x53\x59" || head[4..10] == *b"\x17\x72\x45\x38\x50\x90");
    if bzip2 {
        return Some(&BZIP2);
    }
    COMPRESSIONS.iter().find(|c| head.starts_with(c.magic))
}

/// The bytes of a CSV source as dpstat reads them: gzip (by magic bytes or a `.gz` name) and
/// zstd (by magic bytes) are decompressed; other compressed formats are refused with a message
/// that says how to decompress them. `dpstat budget` fingerprints these bytes, as a release does.
pub fn decompressed(
    name: &str,
    mut raw: Box<dyn Read + Send>,
    path: Option<&Path>,
) -> Result<Box<dyn Read + Send>> {
    let mut head = Vec::with_capacity(16);
    (&mut raw).take(10).read_to_end(&mut head).map_err(|e| bad_input(format!("{name}: reading: {e}")))?;
    let found = compression(&head);
    let named_gz = path.is_some_and(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz")));
    let raw: Box<dyn Read + Send> = Box::new(io::Cursor::new(head).chain(raw));
    match found {
        Some(c) if c.name == "zstd" => {
            let decoder =
                zstd::stream::read::Decoder::new(raw).map_err(|e| bad_input(format!("{name}: zstd: {e}")))?;
            Ok(Box::new(decoder))
        }
        Some(c) if c.name == "gzip" => Ok(Box::new(MultiGzDecoder::new(raw))),
        None if named_gz => Ok(Box::new(MultiGzDecoder::new(raw))),
        None => Ok(raw),
        Some(c) => {
            let file = if path.is_some() { name } else { "FILE" };
            Err(bad_input(format!(
                "{name} is compressed with {}, which dpstat does not read; decompress it first \
                 (e.g. {} {file} | dpstat …)",
                c.name,
                c.command.unwrap_or("")
            )))
        }
    }
}

/// When standard input is a pipe, asks for a 1 MiB pipe buffer instead of the usual 64 KiB:
/// the writer (`cat`, `zcat`) and the reader then switch in and out far less often per byte. A
/// refusal (a lower system limit) leaves the pipe as it is.
#[cfg(target_os = "linux")]
fn widen_pipe() {
    use std::os::fd::AsRawFd;
    let fd = io::stdin().as_raw_fd();
    // SAFETY: fcntl on our own standard input descriptor, with an integer argument; it changes
    // nothing but the pipe's buffer size, and fails harmlessly on anything that is not a pipe.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
    }
}

#[cfg(not(target_os = "linux"))]
fn widen_pipe() {}

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
        let options = CsvOptions { delimiter: b',', has_header: true, decimal: Default::default() };
        Input::from_reader("t.csv".into(), Box::new(text.as_bytes()), &options).unwrap()
    }

    #[test]
    fn progress_only_for_large_files_on_a_terminal_outside_ci() {
        assert!(shows_progress(PROGRESS_FROM, true, false));
        assert!(!shows_progress(PROGRESS_FROM, false, false));
        assert!(!shows_progress(PROGRESS_FROM, true, true));
        assert!(!shows_progress(PROGRESS_FROM - 1, true, false));
    }

    fn read_all(bytes: Vec<u8>, path: Option<&Path>) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        decompressed("t", Box::new(io::Cursor::new(bytes)), path)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn compression_is_recognised_by_magic_bytes_or_name() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"a,b\n1,2\n").unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(read_all(gz.clone(), None).unwrap(), b"a,b\n1,2\n");
        // Concatenated members and frames are one stream.
        assert_eq!(read_all([gz.clone(), gz].concat(), None).unwrap(), b"a,b\n1,2\na,b\n1,2\n");
        let zst = zstd::stream::encode_all(&b"a,b\n"[..], 3).unwrap();
        assert_eq!(read_all([zst.clone(), zst].concat(), None).unwrap(), b"a,b\na,b\n");
        assert_eq!(read_all(b"x".to_vec(), None).unwrap(), b"x");
        assert_eq!(read_all(b"BZh9 is a header".to_vec(), None).unwrap(), b"BZh9 is a header");
        assert!(read_all(b"a,b\n".to_vec(), Some(Path::new("t.csv.gz"))).is_err(), "a .gz name means gzip");
    }

    /// Formats dpstat does not decompress are named, with the command that does.
    #[test]
    fn other_compressions_are_refused_by_name() {
        let cases: [(&[u8], &str); 5] = [
            (b"BZh91AY&SY\x00\x00", "bzip2 -dc"),
            (b"\xfd7zXZ\x00\x00\x04", "xz -dc"),
            (b"\x04\x22\x4d\x18\x64\x40", "lz4 -dc"),
            (b"PK\x03\x04\x14\x00", "unzip -p"),
            (b"7z\xbc\xaf\x27\x1c\x00", "7z x -so"),
        ];
        for (bytes, command) in cases {
            let err = read_all(bytes.to_vec(), Some(Path::new("d.csv"))).unwrap_err().to_string();
            let name = command.split(' ').next().unwrap().replace("unzip", "zip");
            assert_eq!(
                err,
                format!(
                    "t is compressed with {name}, which dpstat does not read; decompress it first (e.g. {command} t | dpstat …)"
                )
            );
        }
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
    /// byte-order mark, empty lines and a quoted line break, from a file, a pipe and gzip: each
    /// data row's first field holds the line it is on.
    #[test]
    fn records_are_named_by_their_physical_line() {
        use crate::data::scan::each_record;
        use proptest::prelude::*;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::default();
        let row = (prop_oneof![Just("\n"), Just("\r\n"), Just("\r")], 0usize..3, any::<bool>());
        runner
            .run(&(proptest::collection::vec(row, 1..12), any::<bool>(), 0..3), |(rows, bom, via)| {
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
                let options = CsvOptions { delimiter: b',', has_header: true, decimal: Default::default() };
                let file = tempfile::NamedTempFile::new().unwrap();
                let mut input = match via {
                    0 => {
                        std::fs::write(file.path(), text.as_bytes()).unwrap();
                        Input::open(&Source::Path(file.path().to_path_buf()), &options, false, 1).unwrap()
                    }
                    1 => Input::from_reader("-".into(), Box::new(io::Cursor::new(text.clone())), &options)
                        .unwrap(),
                    _ => {
                        use std::io::Write;
                        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                        gz.write_all(text.as_bytes()).unwrap();
                        std::fs::write(file.path(), gz.finish().unwrap()).unwrap();
                        Input::open(&Source::Path(file.path().to_path_buf()), &options, false, 1).unwrap()
                    }
                };
                let mut seen = Vec::new();
                each_record(&mut input, &mut |record: &crate::data::row::Row, _, line| {
                    let want: u64 = std::str::from_utf8(record.get(0).unwrap()).unwrap().parse().unwrap();
                    seen.push((want, line));
                })
                .unwrap();
                for (want, got) in seen {
                    prop_assert_eq!(got, want, "{:?}", text);
                }
                Ok(())
            })
            .unwrap();
    }
}
