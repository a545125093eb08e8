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
    parse_with::<C, false>(part, shape, scratch, each)
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
    parse_with::<C, true>(part, shape, scratch, each)
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

/// The one loop behind [`parse`].
#[inline(always)]
fn parse_with<C, const WIDE: bool>(part: Part, shape: &Shape, scratch: &mut Scratch, mut each: C) -> Parsed
where
    C: FnMut(&Row) -> Result<(), BadCell>,
{
    let bytes = part.bytes;
    let delimiter = shape.delimiter;
    let read = shape.read;
    scratch.ends.resize(read, 0);
    scratch.spans.resize(read, Span::default());
    scratch.memo.resize(read, Memo::new((0, None)));
    let Scratch { ends, spans, rewritten, memo, stamp } = scratch;
    let ends = &mut ends[..];
    let mut rest = Rest { spans, rewritten, memo, stamp };
    let mut rows = 0u64;
    let mut lines = 0u64;
    let mut mode = Mode::Start;
    let mut prev_cr = part.after_cr;
    // The current record: its first byte, the delimiters seen in it (the first `read` are in
    // `scratch.ends`), whether it holds a quote.
    let mut start = 0usize;
    let mut separators = 0usize;
    let mut quoted = false;
    // Whether the record so far holds a dirty byte ([`Structure::dirty`]).
    let mut unclean = false;
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
        let mut m = window_masks::<WIDE>(window, delimiter);
        if n < WINDOW {
            let valid = (1u64 << n) - 1;
            m.quote &= valid;
            m.delimiter &= valid;
            m.cr &= valid;
            m.lf &= valid;
        }
        let s = structure(&m, mode, n as u32 - 1, window, delimiter);
        let mut dirty = s.dirty;
        // A closing quote on the last byte of the window before: dirty unless a delimiter or
        // line end follows it.
        if mode == Mode::Closed && (s.separators | s.line_ends) & 1 == 0 {
            dirty |= 1;
        }
        mode = s.mode;
        if m.cr == 0 && !prev_cr {
            lines += u64::from(m.lf.count_ones());
        } else {
            let crlf = m.lf & ((m.cr << 1) | u64::from(prev_cr));
            lines += u64::from((m.cr | m.lf).count_ones() - crlf.count_ones());
            prev_cr = (m.cr >> (n - 1)) & 1 == 1;
        }
        let mut separators_left = s.separators;
        let mut line_ends_left = s.line_ends;
        let mut quotes = m.quote;
        loop {
            // The separators before the next line end (all that are left when there is none)
            // belong to the current record: the first ones up to `read` are located, the rest
            // only counted.
            let next_end = line_ends_left & line_ends_left.wrapping_neg();
            let before = next_end.wrapping_sub(1);
            let mut mine = separators_left & before;
            separators_left &= !before;
            while mine != 0 {
                let Some(end) = ends.get_mut(separators) else { break };
                *end = base + mine.trailing_zeros() as usize;
                mine &= mine - 1;
                separators += 1;
            }
            separators += mine.count_ones() as usize;
            if next_end == 0 {
                break;
            }
            line_ends_left ^= next_end;
            let bit = next_end.trailing_zeros() as usize;
            let at = base + bit;
            let fields = separators + 1;
            let record = start;
            // (A file without quotes has neither quotes nor dirty bytes: one test per record.)
            let (quote_in, dirty_in) = if quotes | dirty == 0 {
                (false, false)
            } else {
                let below = (1u64 << bit) - 1;
                let seen = (quotes & below != 0, dirty & below != 0);
                (quotes, dirty) = (quotes & !below, dirty & !below);
                seen
            };
            (start, separators) = (at + 1, 0);
            if at == record {
                continue;
            }
            rows += 1;
            let row = Record {
                start: record,
                end: at,
                fields,
                quoted: quoted || quote_in,
                clean: !(unclean || dirty_in),
            };
            (quoted, unclean) = (false, false);
            if let Err(problem) = one(row, bytes, shape, ends, &mut rest, &mut each) {
                let lines = line_ends(&bytes[..record], part.after_cr);
                return Parsed {
                    rows,
                    lines,
                    unfinished: None,
                    stop: Some(Stop { problem, row: rows, offset: record }),
                };
            }
        }
        quoted |= quotes != 0;
        unclean |= dirty != 0;
        base += WINDOW;
    }
    let mut parsed = Parsed { rows, lines, unfinished: None, stop: None };
    if start < bytes.len() {
        if part.last {
            parsed.rows += 1;
            // The input's last record may end inside quotes: read field by field.
            let row = Record { start, end: bytes.len(), fields: separators + 1, quoted, clean: false };
            if let Err(problem) = one(row, bytes, shape, ends, &mut rest, &mut each) {
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
        let view = Row::line(bytes, start, &ends[..located], any, fields, scratch.memo, *scratch.stamp);
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
    );
    each(&view).map_err(Problem::Cell)
}
