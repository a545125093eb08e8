//! The scan of any input, file or pipe, plain or decompressed: one thread reads blocks and cuts
//! them into parts that end where a record ends; `threads` workers read the parts'
//! records ([`parse`]) into one fold each; the calling thread merges the folds in input
//! order.
//!
//! # Why a cut is never wrong
//! The reader cuts a block after its last line end that an even number of quotes precede
//! (counted from the start of the block, which is itself a cut): for well-formed quoting that
//! is a line end outside quotes, so quoted line breaks and delimiters stay inside their part.
//! That is only the guess that makes cuts good; correctness does not rest on it. Every part is
//! read exactly (csv-core's transitions, [`structure`](mod@crate::data::structure)) from the
//! start of a record, and says whether it ended where a record ends. The merger knows, part
//! by part in order, that a part starts at a record (the first does; the next does when this
//! one ended cleanly). When a part ended inside a record (a stray quote broke the guess), its
//! unfinished record is joined to the next part's bytes and read again from there, by the
//! merger, before that part's own result could be used. So every record is read from its true
//! start, whatever the cuts.
//!
//! # Why the aggregate does not depend on the thread count
//! The folds are exact (integers) and their `merge` is associative; the parts are merged in
//! input order, so folding rows 1..n in one pass or in k consecutive parts gives the same state.
//! The first problem in input order (a ragged row, a refused cell) stops the scan with its row
//! and line numbers counted across parts.
//!
//! Memory: `threads` + 2 read buffers of [`BLOCK`] bytes (a record longer than a block grows
//! its buffer), and one fold per part in flight.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Mutex;

use memchr::{memchr, memrchr2};

use crate::data::fingerprint::Fingerprinter;
use crate::data::records::{parse, Parsed, Part, Problem, Scratch, Shape};
use crate::data::row::{BadCell, Fold, Row};
use crate::data::structure::count_quotes;

/// The size of a part: large enough that handing it over costs nothing next to reading it,
/// small enough that the buffers in flight stay a few MiB.
pub const BLOCK: usize = 512 << 10;

/// Read buffers in flight besides one per worker.
const SPARE_BUFFERS: usize = 2;

/// How many copies of a fold a scan with `threads` threads holds at most: one per buffer in
/// flight, one per worker, the merger's and the caller's.
pub fn copies(threads: usize) -> usize {
    2 * threads.max(1) + SPARE_BUFFERS + 2
}

/// The most rows a part of `bytes` bytes holds: a record takes at least two bytes, a field and
/// its line end (empty lines are skipped, `records`), and the last may lack its line end. A part
/// is one block unless a record outgrows it; then the rows after that record are fewer than
/// its bytes, which the grown buffer holds anyway.
pub fn part_rows(bytes: usize) -> usize {
    bytes / 2 + 1
}

/// The input after its header: the bytes already read and the rest of the stream.
pub struct Stream {
    pub reader: Box<dyn Read + Send>,
    /// Bytes read but not scanned yet; they start where a record starts.
    pub head: Vec<u8>,
    /// Whether the byte before `head` was a CR.
    pub after_cr: bool,
    /// Physical line ends before `head`.
    pub lines: u64,
    /// Fingerprints every byte of the stream, in order (the bytes before `head` are in).
    pub digest: Option<Fingerprinter>,
}

/// How the scan stopped early.
#[derive(Debug)]
pub enum Failure {
    Read(io::Error),
    /// `row` counts data rows from 1; `line` is the physical line where the record starts.
    Stop {
        problem: Problem,
        row: u64,
        line: u64,
    },
}

/// Everything one scan needs.
pub struct Setup {
    pub shape: Shape,
    pub threads: usize,
    pub block: usize,
}

/// The end of a successful scan.
pub struct Done {
    pub kept: u64,
    pub digest: Option<Fingerprinter>,
}

/// A part on its way to a worker.
struct Job {
    id: u64,
    buf: Block,
    last: bool,
    after_cr: bool,
}

/// A part read by a worker.
struct Read_<F> {
    job: Job,
    parsed: Parsed,
    fold: F,
    kept: u64,
}

/// Reads every record of `stream` and folds those that pass `filters` into `fold`.
pub fn scan<F: Fold>(stream: Stream, setup: &Setup, fold: &mut F) -> Result<Done, Failure> {
    let threads = setup.threads.max(1);
    let buffers = threads + SPARE_BUFFERS;
    let (free_tx, free_rx) = mpsc::sync_channel::<Block>(buffers);
    for _ in 0..buffers {
        let _ = free_tx.send(Block::default());
    }
    let (work_tx, work_rx) = mpsc::sync_channel::<Job>(buffers);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<Read_<F>>();
    let stop = AtomicBool::new(false);
    let empty = fold.clone();
    std::thread::scope(|scope| {
        let (stop, work_rx, empty) = (&stop, &work_rx, &empty);
        let Stream { reader, head, after_cr, lines, digest } = stream;
        let block = setup.block;
        let reader =
            scope.spawn(move || read_parts(reader, head, after_cr, digest, block, free_rx, work_tx, stop));
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let empty = empty.clone();
            scope.spawn(move || work(setup, &empty, work_rx, done_tx, stop));
        }
        drop(done_tx);
        let merged = merge(setup, fold, lines, done_rx, free_tx, stop);
        if merged.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let read = reader.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        let kept = merged?;
        let digest = read.map_err(Failure::Read)?;
        Ok(Done { kept, digest })
    })
}

/// The reader: fills free buffers, cuts each after a record's end, hands it on.
#[allow(clippy::too_many_arguments)]
fn read_parts(
    mut reader: Box<dyn Read + Send>,
    mut carry: Vec<u8>,
    mut after_cr: bool,
    mut digest: Option<Fingerprinter>,
    block: usize,
    free: Receiver<Block>,
    work: SyncSender<Job>,
    stop: &AtomicBool,
) -> io::Result<Option<Fingerprinter>> {
    let mut eof = false;
    for id in 0.. {
        let Ok(mut buf) = free.recv() else { break };
        if stop.load(Ordering::Relaxed) {
            break;
        }
        buf.len = 0;
        buf.append(&carry);
        carry.clear();
        let cut = next_cut(&mut reader, &mut buf, block, &mut eof, &mut digest)?;
        carry.extend_from_slice(&buf.data()[cut..]);
        buf.len = cut;
        let next_after_cr = buf.data().last().map_or(after_cr, |&b| b == b'\r');
        if work.send(Job { id, buf, last: eof, after_cr }).is_err() || eof {
            break;
        }
        after_cr = next_after_cr;
    }
    Ok(digest)
}

/// Reads more into `buf` (which starts where a record starts) and says where to cut it: after
/// a record's end, or at its end once the input ended (`eof` is set then).
pub fn next_cut(
    reader: &mut Box<dyn Read + Send>,
    buf: &mut Block,
    block: usize,
    eof: &mut bool,
    digest: &mut Option<Fingerprinter>,
) -> io::Result<usize> {
    let mut target = block.max(buf.len + block / 2);
    loop {
        if !*eof {
            *eof = fill(reader, buf, target, digest)?;
        }
        if *eof {
            return Ok(buf.len);
        }
        if let Some(cut) = cut_after_record(buf.data()) {
            return Ok(cut);
        }
        // No line end at all: one record longer than the buffer.
        target = buf.len * 2;
    }
}

/// A read buffer: `bytes[..len]` holds the data; the rest is memory already initialised, kept
/// for the next fill (so reading never clears memory again).
#[derive(Default)]
pub struct Block {
    bytes: Vec<u8>,
    len: usize,
}

impl Block {
    fn data(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn append(&mut self, more: &[u8]) {
        let end = self.len + more.len();
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        self.bytes[self.len..end].copy_from_slice(more);
        self.len = end;
    }

    /// Drops the first `n` bytes.
    fn consume(&mut self, n: usize) {
        self.bytes.copy_within(n..self.len, 0);
        self.len -= n;
    }
}

/// Where a record read by [`alone`] lies: in `bytes`, a part that starts after `rows` rows and
/// `lines` physical line ends of the input (and after a CR if `after_cr`).
pub struct At<'a> {
    /// The part's number, from 0.
    pub part: u64,
    pub bytes: &'a [u8],
    pub after_cr: bool,
    pub lines: u64,
    pub rows: u64,
}

/// The same scan by the calling thread alone, with no copy of anything `each` holds: for folds
/// too large to copy, and for `dpstat check`, which needs each record's place.
pub fn alone<C>(stream: Stream, shape: &Shape, block: usize, mut each: C) -> Result<Done, Failure>
where
    C: FnMut(&Row, &At) -> Result<(), BadCell>,
{
    let Stream { mut reader, head, mut after_cr, mut lines, mut digest } = stream;
    let mut buf = Block { len: head.len(), bytes: head };
    let mut scratch = Scratch::default();
    let (mut rows, mut kept) = (0u64, 0u64);
    let mut eof = false;
    for number in 0.. {
        let cut = next_cut(&mut reader, &mut buf, block, &mut eof, &mut digest).map_err(Failure::Read)?;
        let at = At { part: number, bytes: &buf.data()[..cut], after_cr, lines, rows };
        let part = Part { bytes: &buf.data()[..cut], last: eof, after_cr };
        let parsed = parse(part, shape, &mut scratch, |row| {
            each(row, &at)?;
            kept += 1;
            Ok(())
        });
        if let Some(stop) = parsed.stop {
            return Err(Failure::Stop {
                problem: stop.problem,
                row: rows + stop.row,
                line: lines + parsed.lines + 1,
            });
        }
        rows += parsed.rows;
        lines += parsed.lines;
        let used = parsed.unfinished.unwrap_or(cut);
        if eof && parsed.unfinished.is_none() {
            return Ok(Done { kept, digest });
        }
        if used > 0 {
            after_cr = buf.data()[used - 1] == b'\r';
        }
        buf.consume(used);
    }
    unreachable!("the input ends")
}

/// Reads into `buf` until it holds `target` bytes or the input ends (true then), fingerprinting
/// what it reads.
fn fill(
    reader: &mut Box<dyn Read + Send>,
    buf: &mut Block,
    target: usize,
    digest: &mut Option<Fingerprinter>,
) -> io::Result<bool> {
    if buf.bytes.len() < target {
        buf.bytes.resize(target, 0);
    }
    let before = buf.len;
    let mut eof = false;
    while buf.len < target {
        match reader.read(&mut buf.bytes[buf.len..target]) {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(n) => buf.len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if let Some(digest) = digest {
        digest.update(&buf.bytes[before..buf.len]);
    }
    Ok(eof)
}

/// Where to cut `buf` (which starts where a record starts): after the last line end preceded by
/// an even number of quotes, else after the last line end; None without a line end.
pub fn cut_after_record(buf: &[u8]) -> Option<usize> {
    let Some(first_quote) = memchr(b'"', buf) else {
        return memrchr2(b'\n', b'\r', buf).map(|i| i + 1);
    };
    let mut odd = count_quotes(&buf[first_quote..]) % 2 == 1;
    for i in memchr::memrchr3_iter(b'"', b'\n', b'\r', buf) {
        if buf[i] == b'"' {
            odd = !odd;
        } else if !odd {
            return Some(i + 1);
        }
    }
    memrchr2(b'\n', b'\r', buf).map(|i| i + 1)
}

/// A worker: reads the records of each part it takes into a fold of its own.
fn work<F: Fold>(
    setup: &Setup,
    empty: &F,
    jobs: &Mutex<Receiver<Job>>,
    done: mpsc::Sender<Read_<F>>,
    stop: &AtomicBool,
) {
    let mut scratch = Scratch::default();
    loop {
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        if stop.load(Ordering::Relaxed) {
            continue;
        }
        let (fold, kept, parsed) =
            read_part(setup, empty, &mut scratch, job.buf.data(), job.last, job.after_cr);
        if done.send(Read_ { job, parsed, fold, kept }).is_err() {
            return;
        }
    }
}

/// The records of one part, folded.
fn read_part<F: Fold>(
    setup: &Setup,
    empty: &F,
    scratch: &mut Scratch,
    bytes: &[u8],
    last: bool,
    after_cr: bool,
) -> (F, u64, Parsed) {
    let mut fold = empty.clone();
    let mut kept = 0u64;
    let part = Part { bytes, last, after_cr };
    let parsed = parse(part, &setup.shape, scratch, |row| {
        fold.row(row)?;
        kept += 1;
        Ok(())
    });
    fold.part_end();
    (fold, kept, parsed)
}

/// The merger: takes the parts in input order, joins an unfinished record to the next part,
/// merges the folds, and returns each buffer to the reader.
fn merge<F: Fold>(
    setup: &Setup,
    fold: &mut F,
    mut lines: u64,
    done: Receiver<Read_<F>>,
    free: SyncSender<Block>,
    stop: &AtomicBool,
) -> Result<u64, Failure> {
    let mut waiting: BTreeMap<u64, Read_<F>> = BTreeMap::new();
    let mut next = 0u64;
    let (mut rows, mut kept) = (0u64, 0u64);
    // An unfinished record's bytes, and whether a CR came before them.
    let mut unfinished: Option<(Vec<u8>, bool)> = None;
    let mut scratch = Scratch::default();
    let empty = fold.clone();
    for part in done.iter() {
        waiting.insert(part.job.id, part);
        while let Some(mut part) = waiting.remove(&next) {
            next += 1;
            let mut joined = None;
            if let Some((mut bytes, after_cr)) = unfinished.take() {
                bytes.extend_from_slice(part.job.buf.data());
                let (f, k, p) = read_part(setup, &empty, &mut scratch, &bytes, part.job.last, after_cr);
                (part.fold, part.kept, part.parsed) = (f, k, p);
                joined = Some((bytes, after_cr));
            }
            if let Some(stop_at) = part.parsed.stop.take() {
                stop.store(true, Ordering::Relaxed);
                return Err(Failure::Stop {
                    problem: stop_at.problem,
                    row: rows + stop_at.row,
                    line: lines + part.parsed.lines + 1,
                });
            }
            let parsed = &part.parsed;
            rows += parsed.rows;
            lines += parsed.lines;
            kept += part.kept;
            if let Some(offset) = parsed.unfinished {
                let (bytes, after_cr) = match &joined {
                    Some((bytes, after_cr)) => (bytes.as_slice(), *after_cr),
                    None => (part.job.buf.data(), part.job.after_cr),
                };
                let before_cr = if offset == 0 { after_cr } else { bytes[offset - 1] == b'\r' };
                unfinished = Some((bytes[offset..].to_vec(), before_cr));
            }
            fold.merge(part.fold);
            let _ = free.send(part.job.buf);
        }
    }
    if unfinished.is_some() || !waiting.is_empty() {
        // The reader stopped early: its error says why.
        stop.store(true, Ordering::Relaxed);
    }
    Ok(kept)
}
