//! The parallel scan of a plain file: the bytes after the first row are cut into a few chunks
//! per thread, which the threads claim in order as they become free (so a thread slowed down by
//! another process does not hold up the rest), read with positioned reads into a buffer per
//! thread, split by a word-at-a-time search for delimiters and line ends, and folded into one
//! [`Fold`] per chunk; the chunks' folds are merged in file order.
//!
//! # Why a split is never wrong
//! The scan only ever *decides* a file whose bytes after the first row contain no quote byte
//! (`"`). Each thread checks every byte it reads for one before using it, and any quote aborts
//! the whole parallel scan: the caller then rescans the file with the csv reader. Without
//! quotes, the csv crate (quoting on, no escape, no comments, CRLF terminator, as
//! [`Input`](crate::data::input::Input) builds it) reads a row as a maximal run of bytes that are
//! neither `\n` nor `\r`, split at the delimiter, and skips empty lines. Such runs can be found
//! from any offset: a row starts at offset p exactly when byte p is not a line end and byte p − 1
//! is one (or p is where the scan starts, right after the csv reader's first row). So chunk i
//! takes the rows that *start* in its range [b_i, b_{i+1}): its scan looks at byte b_i − 1, skips
//! to the first line end at or after it (the row in progress there is chunk i − 1's), and reads
//! on past b_{i+1} only to finish its last row.
//!
//! The same goes for anything else the csv reader would treat differently: a row whose number
//! of fields differs from the first row's, a cell a fold refuses, a read error. The thread stops,
//! the scan returns [`Fallback`], and the caller's csv rescan produces the exact result or the
//! exact message (`row N (line M)`). Partial results are never merged.
//!
//! # Why the aggregate does not depend on the thread count
//! The folds are exact (integers) and their `merge` is associative; chunks are merged in file
//! order. Folding rows 1..n in one pass or in k consecutive parts gives the same state.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use indicatif::ProgressBar;
use memchr::{memchr, memchr2};

use crate::data::filter::{passes, Filters};
use crate::data::fingerprint::Fingerprinter;
use crate::data::row::{Fold, Row};

/// Per-thread read buffers share this much memory (so peak RSS does not grow with threads) ...
const BUFFER_BUDGET: usize = 8 << 20;
/// ... within these bounds per thread.
const MIN_BLOCK: usize = 64 << 10;
const MAX_BLOCK: usize = 1 << 20;

/// Chunks per thread: enough for a free thread to take over from a slow one, few enough that
/// the folds waiting to be merged stay small.
const CHUNKS_PER_THREAD: u64 = 4;

/// How many copies of a fold a scan with `threads` threads holds at most: one per chunk, one
/// template per thread, and the caller's two.
pub fn copies(threads: usize) -> usize {
    threads.max(1) * (CHUNKS_PER_THREAD as usize + 1) + 2
}

/// The read size of each thread when `threads` threads scan at once.
pub fn block_size(threads: usize) -> usize {
    (BUFFER_BUDGET / threads.max(1)).clamp(MIN_BLOCK, MAX_BLOCK)
}

/// What the scan needs to know about the rows.
pub struct Layout<'a> {
    pub delimiter: u8,
    /// Fields every row must have: the first row's count (the scan refuses any other) ...
    pub fields: usize,
    /// ... unless rows of other widths are tolerated (under a ledger): then a short row's
    /// missing cells read as empty, like the csv reader's.
    pub tolerant: bool,
    /// How many leading fields to locate in each row: one past the widest column read (at most
    /// `fields`, which the csv reader checked on the first row).
    pub read_fields: usize,
    pub filters: &'a Filters,
    pub threads: usize,
    /// Read size per thread; a row longer than this grows that thread's buffer.
    pub block: usize,
}

/// The folds of a completed scan's chunks, in file order.
pub struct Done<F> {
    pub folds: Vec<F>,
    pub kept: u64,
    /// The fingerprint of the file's records from offset 0, when asked for.
    pub digest: Option<String>,
}

/// The parallel scan cannot decide this file (a quote, a ragged row, a refused cell, a read
/// error); the caller rescans it with the csv reader.
#[derive(Debug, PartialEq, Eq)]
pub struct Fallback;

/// Folds every row that starts in `data` (which begins at a row boundary and ends at the end of
/// the file) into `layout.threads` copies of `empty`. With `hash`, another thread computes the
/// fingerprint of the whole file's records, bytes 0 to `data.end`, in order.
pub fn scan<F: Fold>(
    file: &File,
    data: Range<u64>,
    layout: &Layout,
    empty: &F,
    progress: Option<&ProgressBar>,
    hash: bool,
) -> Result<Done<F>, Fallback> {
    let threads = layout.threads.max(1);
    let chunks = threads as u64 * CHUNKS_PER_THREAD;
    let width = data.end.saturating_sub(data.start);
    let bound = move |i: u64| data.start + (u128::from(width) * u128::from(i) / u128::from(chunks)) as u64;
    let next = AtomicU64::new(0);
    let abort = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (next, abort) = (&next, &abort);
        let hasher = hash.then(|| scope.spawn(move || hash_file(file, data.end, layout, abort)));
        // Each thread claims the next chunk until none is left; its folds come back tagged.
        let thread = |template: F| {
            move || -> Result<Vec<(u64, F, u64)>, Fallback> {
                let mut buf = Vec::new();
                let mut parts = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= chunks || abort.load(Ordering::Relaxed) {
                        return if abort.load(Ordering::Relaxed) { Err(Fallback) } else { Ok(parts) };
                    }
                    let chunk = Worker::new(layout, template.clone(), bound(i)..bound(i + 1), i == 0);
                    match chunk.run(file, data.end, &mut buf, progress, abort) {
                        Ok((fold, kept)) => parts.push((i, fold, kept)),
                        Err(e) => {
                            abort.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                }
            }
        };
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(thread(empty.clone()))).collect();
        let mut results = vec![thread(empty.clone())()];
        results.extend(others.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))));
        if results.iter().any(Result::is_err) {
            abort.store(true, Ordering::Relaxed);
        }
        let digest = match hasher {
            Some(h) => Some(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?),
            None => None,
        };
        let mut parts = Vec::with_capacity(chunks as usize);
        for result in results {
            parts.extend(result?);
        }
        parts.sort_by_key(|(i, _, _)| *i);
        let mut done = Done { folds: Vec::with_capacity(parts.len()), kept: 0, digest };
        for (_, fold, kept) in parts {
            done.folds.push(fold);
            done.kept += kept;
        }
        Ok(done)
    })
}

/// The scan of one chunk: the rows starting in `own`.
struct Worker<'p, F> {
    layout: &'p Layout<'p>,
    fold: F,
    kept: u64,
    own: Range<u64>,
    /// Whether `own.start` is known to start a row (chunk 0); otherwise the scan backs up one
    /// byte and skips the row in progress.
    aligned: bool,
    /// Offset in the buffer of the current row's first byte.
    line: usize,
    /// Delimiters seen so far in the current row.
    field: usize,
    /// Offsets (from `line`) of the bytes that end each of the first `read_fields` fields.
    ends: Vec<usize>,
    /// The current row began before `own`: it is the previous chunk's.
    skip: bool,
}

impl<'p, F: Fold> Worker<'p, F> {
    fn new(layout: &'p Layout<'p>, fold: F, own: Range<u64>, aligned: bool) -> Self {
        let ends = vec![0; layout.read_fields];
        Worker { layout, fold, kept: 0, own, aligned, line: 0, field: 0, ends, skip: !aligned }
    }

    /// Scans the chunk with `buf` as its read buffer (reused from chunk to chunk).
    fn run(
        mut self,
        file: &File,
        eof: u64,
        buf: &mut Vec<u8>,
        progress: Option<&ProgressBar>,
        abort: &AtomicBool,
    ) -> Result<(F, u64), Fallback> {
        if self.own.start >= self.own.end {
            return Ok((self.fold, 0));
        }
        // File offset of buf[0].
        let mut pos = if self.aligned { self.own.start } else { self.own.start - 1 };
        let wanted = (self.own.end - pos).saturating_add(256);
        buf.clear();
        buf.resize(usize::try_from(wanted).unwrap_or(usize::MAX).clamp(16, self.layout.block.max(16)), 0);
        let mut filled = 0;
        // Bytes before this offset in buf have been classified.
        let mut scanned = 0;
        // Whether a `\r` has been seen: until then, only delimiters and `\n` are searched for.
        let mut cr = false;
        loop {
            if abort.load(Ordering::Relaxed) {
                return Err(Fallback);
            }
            let before = filled;
            let want = usize::try_from(eof - pos).map_or(buf.len(), |left| left.min(buf.len()));
            filled = read_full(file, &mut buf[..want], filled, pos)?;
            if let Some(bar) = progress {
                bar.inc((filled - before) as u64);
            }
            let new = &buf[before..filled];
            if memchr2(b'"', b'\r', new).is_some() {
                if memchr(b'"', new).is_some() {
                    return Err(Fallback);
                }
                cr = true;
            }
            let at_eof = pos + filled as u64 == eof;
            let to = if at_eof { filled } else { scanned + (filled - scanned) / 8 * 8 };
            let finished = if cr {
                self.split::<true>(buf, scanned..to, pos)?
            } else {
                self.split::<false>(buf, scanned..to, pos)?
            };
            scanned = to;
            if finished {
                break;
            }
            if at_eof {
                // A last row without a line end.
                if !self.skip && self.line < filled {
                    self.end_row(buf, filled, pos)?;
                }
                break;
            }
            if self.line == 0 && filled == buf.len() {
                // One row fills the whole buffer: make room for the rest of it.
                buf.resize(buf.len() * 2, 0);
            } else {
                let keep = self.line;
                buf.copy_within(keep..filled, 0);
                filled -= keep;
                scanned -= keep;
                pos += keep as u64;
                self.line = 0;
            }
        }
        Ok((self.fold, self.kept))
    }

    /// Handles every delimiter and line end in `buf[range]`, a whole number of 8-byte words
    /// unless it ends at the end of the file. True once a row at or past `own.end` is reached.
    #[inline(always)]
    fn split<const CR: bool>(&mut self, buf: &[u8], range: Range<usize>, pos: u64) -> Result<bool, Fallback> {
        let delimiter = self.layout.delimiter;
        let mut base = range.start;
        while base < range.end {
            let (word, valid) = match buf.get(base..base + 8) {
                Some(bytes) if base + 8 <= range.end => (u64::from_le_bytes(word_of(bytes)), u64::MAX),
                _ => {
                    let tail = &buf[base..range.end];
                    let mut bytes = [0u8; 8];
                    bytes[..tail.len()].copy_from_slice(tail);
                    (u64::from_le_bytes(bytes), (1u64 << (8 * tail.len())) - 1)
                }
            };
            let mut delimiters = bytes_equal(word, delimiter) & valid;
            let mut line_ends = bytes_equal(word, b'\n');
            if CR {
                line_ends |= bytes_equal(word, b'\r');
            }
            line_ends &= valid;
            // Line ends one by one; of the delimiters, only those before each line end.
            while line_ends != 0 {
                let first = line_ends & line_ends.wrapping_neg();
                self.delimiters(base, delimiters & (first - 1));
                delimiters &= !(first | (first - 1));
                line_ends &= line_ends - 1;
                let at = base + (first.trailing_zeros() / 8) as usize;
                if self.end_row(buf, at, pos)? {
                    return Ok(true);
                }
            }
            self.delimiters(base, delimiters);
            base += 8;
        }
        Ok(false)
    }

    /// Takes the delimiters marked in `hits` (0x80 in each byte of the word at `base` that is
    /// one), all in the current row: records where the first `read_fields` fields end, and only
    /// counts the others.
    #[inline(always)]
    fn delimiters(&mut self, base: usize, mut hits: u64) {
        while hits != 0 {
            let Some(end) = self.ends.get_mut(self.field) else { break };
            *end = base + (hits.trailing_zeros() / 8) as usize - self.line;
            self.field += 1;
            hits &= hits - 1;
        }
        // The number of marked bytes (at most 8): the top bits gathered into the top byte.
        self.field += ((hits >> 7).wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize;
    }

    /// The current row ends at `buf[at]` (a line end, or the end of the file): fold it if it is
    /// this thread's. True once the next row would start at or past `own.end`.
    #[inline(always)]
    fn end_row(&mut self, buf: &[u8], at: usize, pos: u64) -> Result<bool, Fallback> {
        let start = self.line;
        let fields = self.field + 1;
        self.line = at + 1;
        self.field = 0;
        let past_end = pos + self.line as u64 >= self.own.end;
        if self.skip {
            self.skip = false;
            return Ok(past_end);
        }
        if at == start {
            // An empty line: the csv reader skips it.
            return Ok(past_end);
        }
        if fields != self.layout.fields && !self.layout.tolerant {
            return Err(Fallback);
        }
        if let Some(end) = self.ends.get_mut(fields - 1) {
            *end = at - start;
        }
        // A short row (tolerated) has only its own fields: the ends after them are stale.
        let row = Row::line(&buf[start..at], &self.ends[..fields.min(self.ends.len())]);
        if passes(&row, self.layout.filters) {
            self.fold.row(&row).map_err(|_| Fallback)?;
            self.kept += 1;
        }
        Ok(past_end)
    }
}

fn word_of(bytes: &[u8]) -> [u8; 8] {
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    word
}

/// 0x80 in each byte of `word` that equals `byte`, 0 in the others. Exact: `(v & 0x7f) + 0x7f`
/// cannot carry into the next byte, and its top bit is set exactly when v & 0x7f ≠ 0.
#[inline(always)]
fn bytes_equal(word: u64, byte: u8) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let v = word ^ (0x0101_0101_0101_0101 * u64::from(byte));
    !(((v & LOW7) + LOW7) | v | LOW7)
}

/// Fills `buf[filled..]` from file offset `pos + filled`; a short file is a [`Fallback`].
fn read_full(file: &File, buf: &mut [u8], mut filled: usize, pos: u64) -> Result<usize, Fallback> {
    while filled < buf.len() {
        match read_at(file, &mut buf[filled..], pos + filled as u64) {
            Ok(0) => return Err(Fallback),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Fallback),
        }
    }
    Ok(filled)
}

/// The fingerprint of the records in the file's first `len` bytes, read in order.
fn hash_file(file: &File, len: u64, layout: &Layout, abort: &AtomicBool) -> Result<String, Fallback> {
    let block = layout.block;
    let mut hasher = Fingerprinter::new(layout.delimiter);
    let mut buf = vec![0u8; block];
    let mut pos = 0;
    while pos < len {
        if abort.load(Ordering::Relaxed) {
            return Err(Fallback);
        }
        let want = usize::try_from(len - pos).map_or(block, |left| left.min(block));
        read_full(file, &mut buf[..want], 0, pos)?;
        hasher.update(&buf[..want]);
        pos += want as u64;
    }
    Ok(hasher.finish())
}

/// A read at a position, which leaves the file's own offset (shared by its clones) alone.
#[cfg(unix)]
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

/// A read at a position, which leaves the file's own offset (shared by its clones) alone.
#[cfg(windows)]
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

/// A read at a position, which leaves the file's own offset (shared by its clones) alone.
#[cfg(not(any(unix, windows)))]
pub fn read_at(_: &File, _: &mut [u8], _: u64) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}
