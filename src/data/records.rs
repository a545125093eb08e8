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
//!
//! The masks of a block of 64 windows (`BLOCK`) are found first; then its records are read from
//! 64-bit views of the masks that start where each record starts, and each view's separators
//! are written out a fixed number at a time (`locate`). So the branches of the record loop
//! do not depend on how records fall across windows or how many separators a window holds:
//! the loop ends once per block, and takes another step for a record only when it is longer
//! than 64 bytes or crosses the block's end. (A loop over each window's line ends and each
//! record's separators there missed a branch prediction about once per row.)

use crate::data::cell::DecimalMark;
use crate::data::row::{BadCell, Memo, Row, Span};
#[cfg(doc)]
use crate::data::structure::Structure;
use crate::data::structure::{
    line_ends, masks, structure, unescape, unquoted, Masks, Mode, Unquoted, WINDOW,
};

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
    /// How the rows' number cells are read (`--decimal`).
    pub decimal: DecimalMark,
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

/// Reads every record that starts in `part`, in order, calling `each` on each; stops at the
/// first problem.
pub fn parse<C>(part: Part, shape: &Shape, scratch: &mut Scratch, each: C) -> Parsed
where
    C: FnMut(&Row) -> Result<(), BadCell>,
{
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("avx2")
    {
        // SAFETY: the CPU has the features `parse_modern` is compiled for (checked above).
        return unsafe { parse_modern(part, shape, scratch, each) };
    }
    parse_with::<C, false>(part, shape, scratch, each, BLOCK)
}

/// [`parse_with`] compiled for CPUs from about 2013 on: one instruction for each bit count,
/// lowest-bit search and reset (the x86-64 baseline has none of them), 32-byte compares
/// ([`wide_masks`](crate::data::structure::wide_masks)).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,bmi1,avx2")]
unsafe fn parse_modern<C>(part: Part, shape: &Shape, scratch: &mut Scratch, each: C) -> Parsed
where
    C: FnMut(&Row) -> Result<(), BadCell>,
{
    parse_with::<C, true>(part, shape, scratch, each, BLOCK)
}

/// The masks of a window: with `WIDE` (set only by `parse_modern`, which runs only where
/// AVX2 is), 32 bytes at a time.
#[inline(always)]
fn window_masks<const WIDE: bool>(window: &[u8; WINDOW], delimiter: u8) -> Masks {
    #[cfg(target_arch = "x86_64")]
    if WIDE {
        // SAFETY: `WIDE` is set only inside `parse_modern`, which `parse` calls only after
        // checking that the CPU has AVX2.
        return unsafe { crate::data::structure::wide_masks(window, delimiter) };
    }
    masks(window, delimiter)
}

/// The one loop behind [`parse`], reading the masks of `windows` windows (at most [`BLOCK`];
/// fewer only in tests, to cross many blocks' ends) before their records.
#[inline(always)]
fn parse_with<C, const WIDE: bool>(
    part: Part,
    shape: &Shape,
    scratch: &mut Scratch,
    mut each: C,
    windows: usize,
) -> Parsed
where
    C: FnMut(&Row) -> Result<(), BadCell>,
{
    let bytes = part.bytes;
    let delimiter = shape.delimiter;
    let read = shape.read;
    scratch.ends.resize(read + STEP, 0);
    scratch.spans.resize(read, Span::default());
    scratch.memo.resize(read, Memo::new((0, None)));
    let Scratch { ends, spans, rewritten, memo, stamp } = scratch;
    let ends = &mut ends[..];
    let mut rest = Rest { spans, rewritten, memo, stamp };
    let mut carry = Carry { mode: Mode::Start, prev_cr: part.after_cr, lines: 0 };
    let mut at = Cursor { start: 0, separators: 0, quoted: false, unclean: false, rows: 0 };
    // The masks of a block of windows (and a window of zeros past it, so that a view of 64
    // bits may start anywhere in the block).
    let mut masks = [[0u64; BLOCK + 1]; 4];
    let windows = windows.clamp(1, BLOCK);
    let mut block_base = 0;
    while block_base < bytes.len() {
        let block_len = (bytes.len() - block_base).min(windows * WINDOW);
        // Stage 1: the structure of each window, in order (the quote state runs through them).
        let any_quote_or_dirty =
            block_masks::<WIDE>(bytes, block_base, windows, delimiter, &mut carry, &mut masks);
        // Stage 2: the records.
        let block = Block { masks: &masks, base: block_base, len: block_len, any_quote_or_dirty };
        if let Err(stop) = block_records(block, bytes, shape, ends, &mut rest, &mut each, &mut at) {
            let lines = line_ends(&bytes[..stop.offset], part.after_cr);
            return Parsed { rows: at.rows, lines, unfinished: None, stop: Some(stop) };
        }
        block_base += windows * WINDOW;
    }
    let Cursor { start, separators, quoted, rows, .. } = at;
    let mut parsed = Parsed { rows, lines: carry.lines, unfinished: None, stop: None };
    if start < bytes.len() {
        if part.last {
            parsed.rows += 1;
            // The input's last record may end inside quotes: read field by field.
            let row = Record { start, end: bytes.len(), fields: separators + 1, quoted, clean: false };
            if let Err(problem) = one(row, bytes, shape, &mut ends[..read], &mut rest, &mut each) {
                parsed.stop = Some(Stop { problem, row: parsed.rows, offset: start });
                parsed.lines = line_ends(&bytes[..start], part.after_cr);
            }
        } else {
            parsed.unfinished = Some(start);
            parsed.lines = line_ends(&bytes[..start], part.after_cr);
        }
    }
    parsed
}

/// The record stage 2 of [`parse_with`] is in: its first byte, the delimiters seen in it (the
/// first `read` are in `scratch.ends`), whether it holds a quote or a dirty byte
/// ([`Structure::dirty`]); and the rows read so far.
struct Cursor {
    start: usize,
    separators: usize,
    quoted: bool,
    unclean: bool,
    rows: u64,
}

/// A block's masks (stage 1's), where it starts in the part, its length, and whether any of
/// its windows holds a quote or a dirty byte (a file without quotes has neither: one test per
/// block).
#[derive(Clone, Copy)]
struct Block<'m> {
    masks: &'m [[u64; BLOCK + 1]; 4],
    base: usize,
    len: usize,
    any_quote_or_dirty: u64,
}

/// Stage 2 of [`parse_with`]: the records of one block, 64 bytes at a time from where each
/// starts, so that the branches do not depend on how records fall across windows; each
/// complete record is handed to [`one`]. The first problem stops the part.
#[inline(always)]
fn block_records<C>(
    block: Block,
    bytes: &[u8],
    shape: &Shape,
    ends: &mut [usize],
    rest: &mut Rest,
    each: &mut C,
    at: &mut Cursor,
) -> Result<(), Stop>
where
    C: FnMut(&Row) -> Result<(), BadCell>,
{
    let read = shape.read;
    let mut p = 0;
    while p < block.len {
        let ending = view(&block.masks[LINE_ENDS], p);
        // The bytes up to the record's line end, or the next 64 (to the block's end) when it
        // ends further on.
        let (len, ends_here) =
            if ending != 0 { (ending.trailing_zeros() as usize, true) } else { (64, false) };
        let below = if ends_here { (1u64 << len) - 1 } else { u64::MAX };
        let mine = view(&block.masks[SEPARATORS], p) & below;
        locate(ends, at.separators.min(read), read, block.base + p, mine);
        at.separators += mine.count_ones() as usize;
        if block.any_quote_or_dirty != 0 {
            at.quoted |= view(&block.masks[QUOTES], p) & below != 0;
            at.unclean |= view(&block.masks[DIRTY], p) & below != 0;
        }
        if !ends_here {
            p = (p + 64).min(block.len);
            continue;
        }
        let end = block.base + p + len;
        let fields = at.separators + 1;
        let record = at.start;
        (at.start, at.separators) = (end + 1, 0);
        p += len + 1;
        if end == record {
            continue;
        }
        at.rows += 1;
        let row = Record { start: record, end, fields, quoted: at.quoted, clean: !at.unclean };
        (at.quoted, at.unclean) = (false, false);
        if let Err(problem) = one(row, bytes, shape, &mut ends[..read], rest, each) {
            return Err(Stop { problem, row: at.rows, offset: record });
        }
    }
    Ok(())
}

/// What runs from one window to the next in stage 1 of [`parse_with`]: the quote state, whether
/// the last byte was a CR (a CRLF split across windows is one line end), and the lines so far.
struct Carry {
    mode: Mode,
    prev_cr: bool,
    lines: u64,
}

/// Stage 1 of [`parse_with`]: the structure of each of the `windows` windows of the block at
/// `block_base`, in order, into `block` (a window past the input's end is all zeros); whether
/// any of them holds a quote or a dirty byte.
#[inline(always)]
fn block_masks<const WIDE: bool>(
    bytes: &[u8],
    block_base: usize,
    windows: usize,
    delimiter: u8,
    carry: &mut Carry,
    block: &mut [[u64; BLOCK + 1]; 4],
) -> u64 {
    let mut any_quote_or_dirty = 0u64;
    let mut padded;
    for w in 0..windows {
        let base = block_base + w * WINDOW;
        if base >= bytes.len() {
            for masks in block.iter_mut() {
                masks[w] = 0;
            }
            continue;
        }
        let n = (bytes.len() - base).min(WINDOW);
        let window: &[u8; WINDOW] = match bytes[base..].first_chunk::<WINDOW>() {
            Some(w) => w,
            None => {
                padded = [0u8; WINDOW];
                padded[..n].copy_from_slice(&bytes[base..]);
                &padded
            }
        };
        let mut m = window_masks::<WIDE>(window, delimiter);
        if n < WINDOW {
            let valid = (1u64 << n) - 1;
            m.quote &= valid;
            m.delimiter &= valid;
            m.cr &= valid;
            m.lf &= valid;
        }
        let s = structure(&m, carry.mode, n as u32 - 1, window, delimiter);
        let mut dirty = s.dirty;
        // A closing quote on the last byte of the window before: dirty unless a delimiter
        // or line end follows it.
        if carry.mode == Mode::Closed && (s.separators | s.line_ends) & 1 == 0 {
            dirty |= 1;
        }
        carry.mode = s.mode;
        if m.cr == 0 && !carry.prev_cr {
            carry.lines += u64::from(m.lf.count_ones());
        } else {
            let crlf = m.lf & ((m.cr << 1) | u64::from(carry.prev_cr));
            carry.lines += u64::from((m.cr | m.lf).count_ones() - crlf.count_ones());
            carry.prev_cr = (m.cr >> (n - 1)) & 1 == 1;
        }
        block[SEPARATORS][w] = s.separators;
        block[LINE_ENDS][w] = s.line_ends;
        block[QUOTES][w] = m.quote;
        block[DIRTY][w] = dirty;
        any_quote_or_dirty |= m.quote | dirty;
    }
    any_quote_or_dirty
}

/// Windows whose masks are found before their records are read.
const BLOCK: usize = 64;

/// The masks kept for a block: which row of it holds which.
const SEPARATORS: usize = 0;
const LINE_ENDS: usize = 1;
const QUOTES: usize = 2;
const DIRTY: usize = 3;

/// Bits `p..p + 64` of a block's mask (bit i of window w is bit 64w + i), zeros past its end.
#[inline(always)]
fn view(masks: &[u64; BLOCK + 1], p: usize) -> u64 {
    let (w, o) = (p / 64, p % 64);
    (masks[w] >> o) | ((masks[w + 1] << 1) << (63 - o))
}

/// Positions [`locate`] writes at a time: as many as the fields most queries read, so that
/// one step is all a record's view takes.
const STEP: usize = 4;

/// Writes the positions (`base` + bit index) of the separators in `mine`, lowest first, into
/// `ends[at..]`, up to index `read` (`at` ≤ `read`; `ends` holds `read` + [`STEP`] entries).
///
/// Written [`STEP`] at a time, whether or not `mine` holds that many: the entries past the
/// last separator get a position past the window, and whatever lies at or past the record's
/// separator count is never read as a field end (`one` writes the record's end at its field
/// count, and reads only the fields located). So a step has no branch on how many separators
/// the view holds, which varies from record to record and cost a misprediction each; the
/// loop takes another step only for a view with more than [`STEP`] separators when more than
/// [`STEP`] are still wanted.
#[inline(always)]
fn locate(ends: &mut [usize], mut at: usize, read: usize, base: usize, mut mine: u64) {
    loop {
        let Some(slots) = ends[at..].first_chunk_mut::<STEP>() else {
            unreachable!("ends holds STEP entries past read")
        };
        for slot in slots {
            *slot = base + mine.trailing_zeros() as usize;
            mine &= mine.wrapping_sub(1);
        }
        at += STEP;
        if at >= read || mine == 0 {
            return;
        }
    }
}

/// A complete record: `bytes[start..end]`, with `fields` fields.
#[derive(Clone, Copy)]
struct Record {
    start: usize,
    end: usize,
    fields: usize,
    quoted: bool,
    /// No quoted field in it has a value other than the bytes between its quotes.
    clean: bool,
}

/// The scratch buffers besides the field ends.
struct Rest<'s> {
    spans: &'s mut Vec<Span>,
    rewritten: &'s mut Vec<u8>,
    memo: &'s mut Vec<Memo>,
    stamp: &'s mut u64,
}

/// Checks a record and hands it to `each`.
#[inline(always)]
fn one<C>(
    record: Record,
    bytes: &[u8],
    shape: &Shape,
    ends: &mut [usize],
    scratch: &mut Rest,
    each: &mut C,
) -> Result<(), Problem>
where
    C: FnMut(&Row) -> Result<(), BadCell>,
{
    let Record { start, end: at, fields, quoted, clean } = record;
    if let Some(width) = shape.width {
        if fields != width {
            return Err(Problem::Ragged { fields });
        }
        if shape.missing {
            return Err(Problem::Missing { fields });
        }
    }
    let located = fields.min(shape.read);
    if let Some(last) = ends.get_mut(fields - 1) {
        *last = at;
    }
    *scratch.stamp += 1;
    // Only a field that starts with a quote has a value other than its bytes; most are just
    // quoted, and read between their quotes (`Row::line` with `quoted`). In a clean record
    // every one is (the masks showed it); otherwise each is looked at.
    let mut rewrite = false;
    let mut any = false;
    if quoted && clean {
        any = true;
    } else if quoted {
        for (i, &end) in ends[..located].iter().enumerate() {
            let from = if i == 0 { start } else { ends[i - 1] + 1 };
            if from < end && bytes[from] == b'"' {
                any = true;
                if unquoted(&bytes[from..end]) != Some(Unquoted::Inner) {
                    rewrite = true;
                    break;
                }
            }
        }
    }
    if !rewrite {
        let view = Row::line(bytes, start, &ends[..located], any, fields, scratch.memo, *scratch.stamp)
            .with_decimal(shape.decimal);
        return each(&view).map_err(Problem::Cell);
    }
    let mut from = start;
    for (span, &end) in scratch.spans.iter_mut().zip(&ends[..located]) {
        *span = Span { start: from, end };
        from = end + 1;
    }
    scratch.rewritten.clear();
    for span in &mut scratch.spans[..located] {
        let raw = &bytes[span.start..span.end];
        match unquoted(raw) {
            None => {}
            Some(Unquoted::Inner) => *span = Span { start: span.start + 1, end: span.end - 1 },
            Some(Unquoted::Rewritten) => {
                let from = scratch.rewritten.len();
                unescape(raw, scratch.rewritten);
                *span = Span { start: from | Span::REWRITTEN, end: scratch.rewritten.len() };
            }
        }
    }
    let view = Row::spans(
        bytes,
        start,
        scratch.rewritten,
        &scratch.spans[..located],
        fields,
        scratch.memo,
        *scratch.stamp,
    )
    .with_decimal(shape.decimal);
    each(&view).map_err(Problem::Cell)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One field of a reference record: its raw bytes `bytes[start..end]` and its value.
    #[derive(Clone, Debug, PartialEq)]
    struct Field {
        start: usize,
        end: usize,
        value: Vec<u8>,
    }

    /// A record as the byte-by-byte reference splits it: its first byte and its fields.
    #[derive(Clone, Debug, PartialEq)]
    struct Reference {
        start: usize,
        fields: Vec<Field>,
    }

    /// Splits `bytes` one byte at a time with csv-core's rules (a quote at a field's start
    /// opens quotes, `""` inside them is a quote, bytes after the closing quote are kept, CR,
    /// LF and CRLF each end a record, empty records are skipped). Returns the records that
    /// end in `bytes` (and, with `last`, the one the input ends inside), and where the record
    /// that is not finished starts.
    fn reference(bytes: &[u8], delimiter: u8, last: bool) -> (Vec<Reference>, Option<usize>) {
        #[derive(Clone, Copy, PartialEq)]
        enum State {
            Start,
            Field,
            Quoted,
            Closed,
        }
        let mut records = vec![];
        let mut fields = vec![];
        let (mut record, mut from, mut value) = (0, 0, vec![]);
        let mut state = State::Start;
        for (i, &b) in bytes.iter().enumerate() {
            let (next, push) = match (state, b) {
                (State::Quoted, b'"') => (State::Closed, None),
                (State::Quoted, _) => (State::Quoted, Some(b)),
                (State::Start, b'"') => (State::Quoted, None),
                (State::Closed, b'"') => (State::Quoted, Some(b'"')),
                (_, b) if b == delimiter || b == b'\r' || b == b'\n' => {
                    fields.push(Field { start: from, end: i, value: std::mem::take(&mut value) });
                    from = i + 1;
                    if b != delimiter {
                        if i > record {
                            records.push(Reference { start: record, fields: std::mem::take(&mut fields) });
                        }
                        fields.clear();
                        record = i + 1;
                    }
                    (State::Start, None)
                }
                (_, b) => (State::Field, Some(b)),
            };
            state = next;
            value.extend(push);
        }
        if record == bytes.len() {
            return (records, None);
        }
        if !last {
            return (records, Some(record));
        }
        fields.push(Field { start: from, end: bytes.len(), value });
        records.push(Reference { start: record, fields });
        (records, None)
    }

    /// What `parse` handed the callback for one record.
    #[derive(Debug, PartialEq)]
    struct Seen {
        start: usize,
        width: usize,
        /// Fields 0..read + a few: the value, and where it lies in the part when it is not
        /// rewritten.
        cells: Vec<Cell>,
    }

    /// A field's value, and where it lies in the part when it is there as it is (not
    /// rewritten) and not empty; None past the fields located.
    type Cell = Option<(Vec<u8>, Option<(usize, usize)>)>;

    /// Everything `parse` hands over and returns: the records, rows, lines, the unfinished
    /// record, and the stop as (problem, row, offset).
    #[derive(Debug, PartialEq)]
    struct Outcome {
        seen: Vec<Seen>,
        rows: u64,
        lines: u64,
        unfinished: Option<usize>,
        stop: Option<(usize, u64, usize)>,
    }

    /// What the reference says `parse` must return and hand over.
    fn expected(part: Part, shape: &Shape, probe: usize) -> Outcome {
        let (records, unfinished) = reference(part.bytes, shape.delimiter, part.last);
        let mut seen = vec![];
        for (n, record) in records.iter().enumerate() {
            let (row, width) = (n as u64 + 1, record.fields.len());
            // The problem this record stops the part with: 0 ragged, 1 a refused cell.
            let problem = if shape.width.is_some_and(|w| w != width) {
                Some(0)
            } else {
                let (cells, bad) = cells_of(part, record, width.min(shape.read), probe);
                seen.push(Seen { start: record.start, width, cells });
                bad.then_some(1)
            };
            if let Some(problem) = problem {
                let lines = line_ends(&part.bytes[..record.start], part.after_cr);
                return Outcome {
                    seen,
                    rows: row,
                    lines,
                    unfinished: None,
                    stop: Some((problem, row, record.start)),
                };
            }
        }
        let upto = unfinished.unwrap_or(part.bytes.len());
        let lines = line_ends(&part.bytes[..upto], part.after_cr);
        Outcome { seen, rows: records.len() as u64, lines, unfinished, stop: None }
    }

    /// The first `probe` cells the reference says `parse` hands over for `record` (its first
    /// `located` fields), and whether one of them is refused (`BAD`).
    fn cells_of(part: Part, record: &Reference, located: usize, probe: usize) -> (Vec<Cell>, bool) {
        let cells = (0..probe)
            .map(|i| {
                let field = record.fields.get(i).filter(|_| i < located)?;
                let raw = &part.bytes[field.start..field.end];
                let at = if field.value.is_empty() {
                    None
                } else if raw == field.value.as_slice() {
                    Some((field.start, field.end))
                } else if raw.len() >= 2
                    && raw[0] == b'"'
                    && raw[1..raw.len() - 1] == field.value[..]
                    && !field.value.contains(&b'"')
                {
                    // Read between its quotes only when that is all it is: a value that holds
                    // a quote came from `""` and was rewritten, even where (in a field the
                    // input ends inside) the bytes between the outer quotes happen to equal it.
                    Some((field.start + 1, field.end - 1))
                } else {
                    None
                };
                Some((field.value.clone(), at))
            })
            .collect::<Vec<_>>();
        let bad = cells.iter().flatten().any(|(value, _)| value == b"BAD");
        (cells, bad)
    }

    /// What `parse` returns and hands over, in the terms of [`expected`]; with `windows` the
    /// instantiation for every x86-64 CPU reading blocks of that many windows, else `parse` (the
    /// instantiation the CPU picks, whole blocks).
    fn parsed(part: Part, shape: &Shape, probe: usize, windows: Option<usize>) -> Outcome {
        let mut seen = vec![];
        let mut scratch = Scratch::default();
        let each = |row: &Row| {
            let cells = (0..probe)
                .map(|i| {
                    let value = row.get(i)?;
                    let offset = (value.as_ptr() as usize).wrapping_sub(part.bytes.as_ptr() as usize);
                    let inside = !value.is_empty() && offset < part.bytes.len();
                    let at = inside.then_some((offset, offset + value.len()));
                    Some((value.to_vec(), at))
                })
                .collect::<Vec<_>>();
            let bad = cells.iter().flatten().position(|(value, _)| value == b"BAD");
            seen.push(Seen { start: row.offset(), width: row.width(), cells });
            match bad {
                Some(column) => Err(BadCell { column, why: "refused".into() }),
                None => Ok(()),
            }
        };
        let got = match windows {
            None => parse(part, shape, &mut scratch, each),
            Some(windows) => parse_with::<_, false>(part, shape, &mut scratch, each, windows),
        };
        let stop = got.stop.map(|stop| {
            let problem = match stop.problem {
                Problem::Ragged { .. } => 0,
                Problem::Cell(_) => 1,
                Problem::Missing { .. } => 2,
            };
            (problem, stop.row, stop.offset)
        });
        Outcome { seen, rows: got.rows, lines: got.lines, unfinished: got.unfinished, stop }
    }

    /// One of the fields that make CSV hard, equally likely: a refused cell (`BAD`), quoted
    /// fields holding a line end (LF, CRLF), every delimiter and escaped quotes, text after a
    /// closing quote, a quote inside an unquoted field, a lone quote, an empty quoted field.
    /// Shared with the scan's proptests (`data::scan`).
    pub(crate) fn awkward_field() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("BAD".to_string()),
            Just("\"q\nq\"".to_string()),
            Just("\"a,b;c\tz\"".to_string()),
            Just("\"r\r\nq\"".to_string()),
            Just("\"say \"\"hi\"\"\"".to_string()),
            Just("\"ab\"cd".to_string()),
            Just("5'10\"".to_string()),
            Just("\"".to_string()),
            Just("\"\"".to_string()),
        ]
    }

    /// CSV text with fields of every kind: short and empty ones (so that a window holds many
    /// more separators than [`STEP`]), quoted ones holding delimiters, line ends and escaped
    /// quotes, text after a closing quote, quotes inside unquoted fields, a lone quote; rows
    /// of 1 to 40 fields ending in LF, CRLF, CR or blank lines, the last with or without one.
    fn csv_text() -> impl Strategy<Value = (Vec<u8>, u8)> {
        let field = prop_oneof![
            10 => "[0-9a-c]{0,3}".boxed(),
            4 => Just(String::new()).boxed(),
            1 => "[0-9a-z]{10,70}".boxed(),
            9 => awkward_field().boxed(),
        ];
        let end = prop_oneof![6 => Just("\n"), 2 => Just("\r\n"), 1 => Just("\r"), 1 => Just("\n\n"), 1 => Just("\r\n\r\n")];
        let row = (proptest::collection::vec(field, 1..40), end);
        let delimiter = prop_oneof![Just(b','), Just(b';'), Just(b'\t')];
        (proptest::collection::vec(row, 0..30), delimiter, any::<bool>()).prop_map(
            |(rows, delimiter, last_end)| {
                let mut text = vec![];
                let count = rows.len();
                for (i, (fields, end)) in rows.into_iter().enumerate() {
                    text.extend_from_slice(fields.join(&(delimiter as char).to_string()).as_bytes());
                    if i + 1 < count || last_end {
                        text.extend_from_slice(end.as_bytes());
                    }
                }
                (text, delimiter)
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The records `parse` hands over, their fields (values and where they lie, so every
        /// located field end), widths and offsets, and the counts, unfinished record and stop
        /// it returns, are those of the byte-by-byte reference: for any number of fields read
        /// (more than the rows hold too), rows of one width required or not, a part that is the
        /// end of the input or is cut anywhere, blocks of any size (so records across their
        /// ends).
        #[test]
        fn parse_equals_a_byte_by_byte_split(
            (text, delimiter) in csv_text(),
            read in 0usize..48,
            width in prop_oneof![Just(None), (1usize..8).prop_map(Some)],
            cut in any::<prop::sample::Index>(),
            last in any::<bool>(),
            after_cr in any::<bool>(),
            windows in 1usize..4,
        ) {
            let bytes = if last { &text[..] } else { &text[..cut.index(text.len() + 1)] };
            let part = Part { bytes, last, after_cr };
            let shape = Shape { delimiter, width, read, missing: false, decimal: DecimalMark::Point };
            let probe = read + STEP + 2;
            let want = expected(part, &shape, probe);
            prop_assert_eq!(&parsed(part, &shape, probe, Some(windows)), &want);
            prop_assert_eq!(parsed(part, &shape, probe, None), want);
        }

        /// `locate` writes the positions of the separators it is given, lowest first, from
        /// `at` up to `read`, and nothing before `at`.
        #[test]
        fn locate_writes_the_separators_in_order(
            read in 0usize..80,
            at in any::<prop::sample::Index>(),
            (mine, sparse) in (any::<u64>(), any::<u64>()),
            thin in any::<bool>(),
            base in 0usize..1 << 20,
        ) {
            let mine = if thin { mine & sparse } else { mine };
            let at = at.index(read + 1);
            let mut ends = vec![usize::MAX; read + STEP];
            locate(&mut ends, at, read, base, mine);
            let positions = (0..64).filter(|i| mine >> i & 1 == 1).map(|i| base + i);
            let written = positions.take(read - at).collect::<Vec<_>>();
            prop_assert_eq!(&ends[at..at + written.len()], &written[..]);
            prop_assert!(ends[..at].iter().all(|&e| e == usize::MAX));
        }
    }
}
