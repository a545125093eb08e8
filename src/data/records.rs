//! The records of one part of the input (a chunk that starts where a record starts), each
//! handed to a callback as a [`Row`]: the one loop every scan runs, whatever the source and the
//! number of threads.
//!
//! The part is read a [`WINDOW`] at a time ([`structure`](mod@crate::data::structure): exact
//! quote state, structural delimiters and line ends as bit masks). A record ends at each
//! structural line end; an empty one (an empty line, or the LF of a CRLF) is skipped, as the
//! csv crate skips it. Only the first `read` fields of a record are located; the others are
//! counted, so a ragged row is still seen. A field that starts with a quote has its value
//! taken out: between the quotes when that is all it is, else rewritten ([`unescape`]).

use crate::data::row::{BadCell, Memo, Row, Span};
use crate::data::structure::{line_ends, masks, structure, unescape, unquoted, Mode, Unquoted, WINDOW};

/// What the scan must know about the records.
#[derive(Clone, Debug)]
pub struct Shape {
    pub delimiter: u8,
    /// The number of fields every record must have; None when rows of another width are
    /// tolerated (their missing cells read as empty, extra ones ignored).
    pub width: Option<usize>,
    /// Fields located in each record: one past the widest column read.
    pub read: usize,
    /// A column read that lies past `width` (not tolerated): every record stops the scan.
    pub missing: bool,
}

/// One part of the input.
#[derive(Clone, Copy)]
pub struct Part<'a> {
    pub bytes: &'a [u8],
    /// Whether the input ends with this part (its last record may lack a line end).
    pub last: bool,
    /// Whether the byte before the part was a CR (so a first LF ends no line of its own).
    pub after_cr: bool,
}

/// Why the scan stopped at a record.
#[derive(Debug)]
pub enum Problem {
    /// A record with another number of fields than `width`.
    Ragged { fields: usize },
    /// A record without the widest column read.
    Missing { fields: usize },
    /// The callback refused a cell.
    Cell(BadCell),
}

/// Where the scan stopped: the record's number (1-based, within the part) and first byte.
#[derive(Debug)]
pub struct Stop {
    pub problem: Problem,
    pub row: u64,
    pub offset: usize,
}

/// What a part held.
#[derive(Debug)]
pub struct Parsed {
    /// Records read (whether the callback kept them or not), up to the stop if any.
    pub rows: u64,
    /// Physical line ends in the bytes read: up to `unfinished` if set, else the whole part.
    pub lines: u64,
    /// The part ended inside a record (its cut was inside quotes): the record that starts at
    /// this offset was not read, and belongs with the next part's bytes.
    pub unfinished: Option<usize>,
    pub stop: Option<Stop>,
}

/// Buffers reused from part to part.
#[derive(Default)]
pub struct Scratch {
    ends: Vec<usize>,
    spans: Vec<Span>,
    rewritten: Vec<u8>,
    memo: Vec<Memo>,
    stamp: u64,
}

/// The record being read.
struct Current {
    start: usize,
    /// Delimiters seen so far (the first `read` of them are in `ends`).
    separators: usize,
    quoted: bool,
}

/// Reads every record that starts in `part`, in order, calling `each` on each; stops at the
/// first problem.
#[inline(never)]
pub fn parse<C>(part: Part, shape: &Shape, scratch: &mut Scratch, mut each: C) -> Parsed
where
    C: FnMut(&Row) -> Result<(), BadCell>,
{
    let bytes = part.bytes;
    let delimiter = shape.delimiter;
    let read = shape.read;
    scratch.ends.resize(read, 0);
    scratch.spans.resize(read, Span::default());
    scratch.memo.resize(read, Memo::new((0, None)));
    let mut parsed = Parsed { rows: 0, lines: 0, unfinished: None, stop: None };
    let mut mode = Mode::Start;
    let mut prev_cr = part.after_cr;
    let mut row = Current { start: 0, separators: 0, quoted: false };
    let mut base = 0;
    let mut padded;
    while base < bytes.len() {
        let n = (bytes.len() - base).min(WINDOW);
        let window: &[u8; WINDOW] = match bytes[base..].first_chunk::<WINDOW>() {
            Some(w) => w,
            None => {
                padded = [0u8; WINDOW];
                padded[..n].copy_from_slice(&bytes[base..]);
                &padded
            }
        };
        let mut m = masks(window, delimiter);
        if n < WINDOW {
            let valid = (1u64 << n) - 1;
            m.quote &= valid;
            m.delimiter &= valid;
            m.cr &= valid;
            m.lf &= valid;
        }
        let s = structure(&m, mode, n as u32 - 1, window, delimiter);
        mode = s.mode;
        let crlf = m.lf & ((m.cr << 1) | u64::from(prev_cr));
        parsed.lines += u64::from((m.cr | m.lf).count_ones() - crlf.count_ones());
        prev_cr = (m.cr >> (n - 1)) & 1 == 1;
        let mut separators = s.separators;
        let mut ends = s.line_ends;
        let mut quotes = m.quote;
        while ends != 0 {
            let bit = ends.trailing_zeros();
            let below = (1u64 << bit) - 1;
            take(&mut row, &mut scratch.ends, separators & below, base);
            separators &= !below;
            row.quoted |= quotes & below != 0;
            quotes &= !below;
            ends &= ends - 1;
            if let Err(stop) =
                end_row(&mut row, base + bit as usize, bytes, shape, scratch, &mut parsed, &mut each)
            {
                parsed.stop = Some(stop);
                parsed.lines = line_ends(&bytes[..parsed_offset(&parsed)], part.after_cr);
                return parsed;
            }
        }
        take(&mut row, &mut scratch.ends, separators, base);
        row.quoted |= quotes != 0;
        base += WINDOW;
    }
    if row.start < bytes.len() {
        if part.last {
            if let Err(stop) = end_row(&mut row, bytes.len(), bytes, shape, scratch, &mut parsed, &mut each) {
                parsed.stop = Some(stop);
                parsed.lines = line_ends(&bytes[..parsed_offset(&parsed)], part.after_cr);
            }
        } else {
            parsed.unfinished = Some(row.start);
            parsed.lines = line_ends(&bytes[..row.start], part.after_cr);
        }
    }
    parsed
}

fn parsed_offset(parsed: &Parsed) -> usize {
    parsed.stop.as_ref().map_or(0, |s| s.offset)
}

/// Takes the delimiters marked in `bits` (bit i: byte `base + i`), all in the current record.
#[inline(always)]
fn take(row: &mut Current, ends: &mut [usize], mut bits: u64, base: usize) {
    while bits != 0 {
        let Some(end) = ends.get_mut(row.separators) else { break };
        *end = base + bits.trailing_zeros() as usize;
        row.separators += 1;
        bits &= bits - 1;
    }
    row.separators += bits.count_ones() as usize;
}

/// The current record ends at `bytes[at]` (a line end, or the end of the input): check it and
/// hand it to `each`.
#[inline(always)]
fn end_row<C>(
    row: &mut Current,
    at: usize,
    bytes: &[u8],
    shape: &Shape,
    scratch: &mut Scratch,
    parsed: &mut Parsed,
    each: &mut C,
) -> Result<(), Stop>
where
    C: FnMut(&Row) -> Result<(), BadCell>,
{
    let start = row.start;
    let fields = row.separators + 1;
    let quoted = row.quoted;
    *row = Current { start: at + 1, separators: 0, quoted: false };
    if at == start {
        return Ok(());
    }
    parsed.rows += 1;
    let stop = |problem| Stop { problem, row: parsed.rows, offset: start };
    if let Some(width) = shape.width {
        if fields != width {
            return Err(stop(Problem::Ragged { fields }));
        }
        if shape.missing {
            return Err(stop(Problem::Missing { fields }));
        }
    }
    let located = fields.min(shape.read);
    if let Some(last) = scratch.ends.get_mut(fields - 1) {
        *last = at;
    }
    let mut from = start;
    for (span, &end) in scratch.spans.iter_mut().zip(&scratch.ends[..located]) {
        *span = Span { start: from, end };
        from = end + 1;
    }
    if quoted {
        scratch.rewritten.clear();
        for span in &mut scratch.spans[..located] {
            let raw = &bytes[span.start..span.end];
            match unquoted(raw) {
                None => {}
                Some(Unquoted::Inner) => *span = Span { start: span.start + 1, end: span.end - 1 },
                Some(Unquoted::Rewritten) => {
                    let from = scratch.rewritten.len();
                    unescape(raw, &mut scratch.rewritten);
                    *span = Span { start: from | Span::REWRITTEN, end: scratch.rewritten.len() };
                }
            }
        }
    }
    scratch.stamp += 1;
    let view = Row::spans(
        bytes,
        start,
        &scratch.rewritten,
        &scratch.spans[..located],
        fields,
        &scratch.memo,
        scratch.stamp,
    );
    each(&view).map_err(|bad| stop(Problem::Cell(bad)))
}
