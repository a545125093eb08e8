//! Where the fields and records of CSV bytes are, 64 bytes at a time, exactly as the csv crate
//! reads them (csv-core: quoting on, `""` inside quotes for a quote, no escape byte, no comments,
//! each of CR, LF and CRLF ending a record, empty lines skipped).
//!
//! # The window
//! Each 64-byte window becomes four bit masks (quote, delimiter, CR, LF: SSE2 compares on x86-64,
//! a plain loop elsewhere). Which delimiters and line ends are *structural* depends on the quote
//! state, which is carried from window to window as a [`Mode`]:
//! - a window without a quote byte, outside quotes, is structural throughout;
//! - otherwise the parity of the quotes so far says which bytes are inside quotes (a prefix XOR
//!   of the quote mask). Parity is csv-core's state exactly as long as every quote that parity
//!   takes for an opening one stands at the start of a field (after a delimiter, a line end, the
//!   start, or right after a closing quote, which makes the `""` of an escaped quote). A quote in
//!   the middle of an unquoted field (`5'10"`) is a literal byte for csv-core but would flip the
//!   parity: a window holding one is run through [`exact_window`], csv-core's own transitions
//!   byte by byte, and parity starts again from the state it leaves.
//!
//! So the structural masks are exact for any bytes, well-formed or not; nothing is guessed.

/// Bytes per window.
pub const WINDOW: usize = 64;

/// csv-core's state between two bytes, as far as structure goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// At the start of a field (or of a record): a quote here opens a quoted field.
    Start,
    /// Inside an unquoted field: quotes are literal.
    Field,
    /// Inside quotes: delimiters and line ends are data.
    Quoted,
    /// Right after a quote that closed a quoted field: another quote is an escaped one.
    Closed,
}

/// One window's bytes of interest, bit i for byte i.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Masks {
    pub quote: u64,
    pub delimiter: u64,
    pub cr: u64,
    pub lf: u64,
}

/// The masks of a 64-byte window.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn masks(window: &[u8; WINDOW], delimiter: u8) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let ptr = window.as_ptr().cast::<__m128i>();
    // SAFETY: SSE2 is part of every x86-64 CPU (the build enables it); the four 16-byte loads
    // stay inside `window`.
    unsafe {
        let lanes = [
            _mm_loadu_si128(ptr),
            _mm_loadu_si128(ptr.add(1)),
            _mm_loadu_si128(ptr.add(2)),
            _mm_loadu_si128(ptr.add(3)),
        ];
        let equal = |byte: u8| {
            let byte = _mm_set1_epi8(byte as i8);
            lanes.map(|lane| _mm_cmpeq_epi8(lane, byte))
        };
        let bits = |e: [__m128i; 4]| {
            let bits = |i: usize| u64::from(_mm_movemask_epi8(e[i]) as u16);
            bits(0) | bits(1) << 16 | bits(2) << 32 | bits(3) << 48
        };
        // Quotes and CRs are rare in many files: one test for the whole window first.
        let rare = |e: [__m128i; 4]| {
            let any = _mm_or_si128(_mm_or_si128(e[0], e[1]), _mm_or_si128(e[2], e[3]));
            if _mm_movemask_epi8(any) == 0 {
                0
            } else {
                bits(e)
            }
        };
        Masks {
            quote: rare(equal(b'"')),
            delimiter: bits(equal(delimiter)),
            cr: rare(equal(b'\r')),
            lf: bits(equal(b'\n')),
        }
    }
}

/// [`masks`] with 32-byte compares: half the compares, moves and mask extractions.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn wide_masks(window: &[u8; WINDOW], delimiter: u8) -> Masks {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8,
    };
    let ptr = window.as_ptr().cast::<__m256i>();
    // SAFETY: the caller guarantees AVX2; the two 32-byte loads stay inside `window`.
    unsafe {
        let lanes = [_mm256_loadu_si256(ptr), _mm256_loadu_si256(ptr.add(1))];
        let equal = |byte: u8| {
            let byte = _mm256_set1_epi8(byte as i8);
            lanes.map(|lane| _mm256_cmpeq_epi8(lane, byte))
        };
        let bits = |e: [__m256i; 2]| {
            u64::from(_mm256_movemask_epi8(e[0]) as u32) | u64::from(_mm256_movemask_epi8(e[1]) as u32) << 32
        };
        // Quotes and CRs are rare in many files: one test for the whole window first.
        let rare = |e: [__m256i; 2]| {
            if _mm256_movemask_epi8(_mm256_or_si256(e[0], e[1])) == 0 {
                0
            } else {
                bits(e)
            }
        };
        Masks {
            quote: rare(equal(b'"')),
            delimiter: bits(equal(delimiter)),
            cr: rare(equal(b'\r')),
            lf: bits(equal(b'\n')),
        }
    }
}

/// The masks of a 64-byte window.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn masks(window: &[u8; WINDOW], delimiter: u8) -> Masks {
    scalar_masks(window, delimiter)
}

/// The masks, one byte at a time (the reference the SIMD version is tested against).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
pub fn scalar_masks(window: &[u8; WINDOW], delimiter: u8) -> Masks {
    let mut m = Masks::default();
    for (i, &b) in window.iter().enumerate() {
        let bit = 1u64 << i;
        m.quote |= bit * u64::from(b == b'"');
        m.delimiter |= bit * u64::from(b == delimiter);
        m.cr |= bit * u64::from(b == b'\r');
        m.lf |= bit * u64::from(b == b'\n');
    }
    m
}

/// The structural delimiters and line ends of a window, and the mode after its byte `top`
/// (the last one that belongs to the input).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Structure {
    pub separators: u64,
    pub line_ends: u64,
    pub mode: Mode,
    /// Bytes that may make a quoted field's value other than the bytes between its quotes: a
    /// closing quote that a structural byte does not follow (`""`, text after the quote), or
    /// every byte of a window read by [`exact_window`]. A closing quote on the window's last
    /// byte is not marked: its follower is in the next window (see `records`).
    pub dirty: u64,
}

/// Bit i set when an odd number of bits 0..=i of `x` are set.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// The structure of a window in `mode`, from its masks; `top` is the index of its last byte.
/// `bytes` is only read when the window holds a quote that parity cannot explain.
#[inline(always)]
pub fn structure(m: &Masks, mode: Mode, top: u32, bytes: &[u8; WINDOW], delimiter: u8) -> Structure {
    let ends = m.cr | m.lf;
    let top_bit = |mask: u64| (mask >> top) & 1 == 1;
    if m.quote == 0 && mode != Mode::Quoted {
        let mode = if top_bit(m.delimiter | ends) { Mode::Start } else { Mode::Field };
        return Structure { separators: m.delimiter, line_ends: ends, mode, dirty: 0 };
    }
    let inside = prefix_xor(m.quote) ^ if mode == Mode::Quoted { u64::MAX } else { 0 };
    let opening = m.quote & inside;
    let closing = m.quote & !inside;
    let outside_structural = (m.delimiter | ends) & !inside;
    let may_open =
        ((outside_structural | closing) << 1) | u64::from(matches!(mode, Mode::Start | Mode::Closed));
    if opening & !may_open != 0 {
        return exact_window(bytes, top as usize + 1, delimiter, mode);
    }
    let mode = if top_bit(inside) {
        Mode::Quoted
    } else if top_bit(closing) {
        Mode::Closed
    } else if top_bit(outside_structural) {
        Mode::Start
    } else {
        Mode::Field
    };
    // Every quote opens at a field's start (checked above), so a quoted field whose closing
    // quote a delimiter or line end follows is its quotes around a value without quotes.
    let followed = (outside_structural >> 1) | (1u64 << top);
    let dirty = closing & !followed;
    Structure { separators: m.delimiter & !inside, line_ends: ends & !inside, mode, dirty }
}

/// csv-core's transitions, one byte at a time, over the first `len` bytes of a window.
#[cold]
pub fn exact_window(bytes: &[u8; WINDOW], len: usize, delimiter: u8, mut mode: Mode) -> Structure {
    let (mut separators, mut line_ends) = (0u64, 0u64);
    for (i, &b) in bytes[..len].iter().enumerate() {
        let (next, structural) = step(mode, b, delimiter);
        mode = next;
        match structural {
            Some(Structural::Separator) => separators |= 1 << i,
            Some(Structural::LineEnd) => line_ends |= 1 << i,
            None => {}
        }
    }
    Structure { separators, line_ends, mode, dirty: u64::MAX }
}

/// What a byte did, when it ended a field or a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structural {
    Separator,
    LineEnd,
}

/// One csv-core transition.
#[inline]
pub fn step(mode: Mode, b: u8, delimiter: u8) -> (Mode, Option<Structural>) {
    let ends = |b: u8| b == b'\r' || b == b'\n';
    match mode {
        Mode::Quoted if b == b'"' => (Mode::Closed, None),
        Mode::Quoted => (Mode::Quoted, None),
        Mode::Start if b == b'"' => (Mode::Quoted, None),
        Mode::Closed if b == b'"' => (Mode::Quoted, None),
        Mode::Start | Mode::Field | Mode::Closed if b == delimiter => {
            (Mode::Start, Some(Structural::Separator))
        }
        Mode::Start | Mode::Field | Mode::Closed if ends(b) => (Mode::Start, Some(Structural::LineEnd)),
        Mode::Start | Mode::Field | Mode::Closed => (Mode::Field, None),
    }
}

/// The value of a field whose raw bytes (between its delimiters) are `raw`, as csv-core reads
/// it: a leading quote opens a quoted part, `""` in it is one quote, and bytes after its
/// closing quote are kept as they are. None when the raw bytes are the value.
#[inline]
pub fn unquoted(raw: &[u8]) -> Option<Unquoted> {
    if raw.first() != Some(&b'"') {
        return None;
    }
    // Cells are short: a plain loop beats the call to a searcher that `contains` makes.
    #[allow(clippy::manual_contains)]
    let inner =
        raw.len() >= 2 && raw[raw.len() - 1] == b'"' && !raw[1..raw.len() - 1].iter().any(|&b| b == b'"');
    Some(if inner { Unquoted::Inner } else { Unquoted::Rewritten })
}

/// How a quoted field's value is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unquoted {
    /// The bytes between the first and last (the only) quotes.
    Inner,
    /// Written out by [`unescape`].
    Rewritten,
}

/// Appends the value of a field's raw bytes to `out` (see [`unquoted`]).
pub fn unescape(raw: &[u8], out: &mut Vec<u8>) {
    let mut mode = Mode::Start;
    for &b in raw {
        mode = match mode {
            Mode::Start if b == b'"' => Mode::Quoted,
            Mode::Quoted if b == b'"' => Mode::Closed,
            Mode::Quoted => {
                out.push(b);
                Mode::Quoted
            }
            Mode::Closed if b == b'"' => {
                out.push(b'"');
                Mode::Quoted
            }
            _ => {
                out.push(b);
                Mode::Field
            }
        };
    }
}

/// The first record of `bytes` (after any empty lines): its fields, and the bytes it takes up
/// to and including the line end that closes it. None when it is not complete yet and more
/// bytes may come (`eof` false); at the end of the input the rest is the record, and an input
/// without one gives no fields.
pub fn first_record(bytes: &[u8], delimiter: u8, eof: bool) -> Option<(Vec<Vec<u8>>, usize)> {
    let skipped = bytes.iter().take_while(|&&b| b == b'\r' || b == b'\n').count();
    if skipped == bytes.len() {
        return eof.then(|| (Vec::new(), bytes.len()));
    }
    let mut mode = Mode::Start;
    let mut start = skipped;
    let mut fields = Vec::new();
    let field = |raw: &[u8]| {
        let mut value = Vec::new();
        match unquoted(raw) {
            None => value.extend_from_slice(raw),
            Some(Unquoted::Inner) => value.extend_from_slice(&raw[1..raw.len() - 1]),
            Some(Unquoted::Rewritten) => unescape(raw, &mut value),
        }
        value
    };
    for (i, &b) in bytes.iter().enumerate().skip(skipped) {
        let (next, structural) = step(mode, b, delimiter);
        mode = next;
        match structural {
            Some(Structural::Separator) => {
                fields.push(field(&bytes[start..i]));
                start = i + 1;
            }
            Some(Structural::LineEnd) => {
                fields.push(field(&bytes[start..i]));
                return Some((fields, i + 1));
            }
            None => {}
        }
    }
    if !eof {
        return None;
    }
    fields.push(field(&bytes[start..]));
    Some((fields, bytes.len()))
}

/// Physical line ends in `bytes`: CR, LF and CRLF each end one (also inside quoted fields);
/// `after_cr` says whether the byte before them was a CR.
pub fn line_ends(bytes: &[u8], after_cr: bool) -> u64 {
    let mut prev_cr = after_cr;
    let mut n = 0;
    for &b in bytes {
        n += u64::from(b == b'\r' || (b == b'\n' && !prev_cr));
        prev_cr = b == b'\r';
    }
    n
}

/// The number of quote bytes in `bytes`, 64 at a time.
pub fn count_quotes(bytes: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has POPCNT (checked just above).
        return unsafe { count_quotes_popcnt(bytes) };
    }
    count_quotes_with(bytes)
}

/// [`count_quotes`] with one instruction per bit count.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_quotes_popcnt(bytes: &[u8]) -> usize {
    count_quotes_with(bytes)
}

#[inline(always)]
fn count_quotes_with(bytes: &[u8]) -> usize {
    let mut chunks = bytes.chunks_exact(WINDOW);
    let mut n = 0;
    for chunk in &mut chunks {
        let window: &[u8; WINDOW] = chunk.try_into().expect("64 bytes");
        n += masks(window, b'"').quote.count_ones() as usize;
    }
    n + chunks.remainder().iter().filter(|&&b| b == b'"').count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// CR, LF and CRLF each end one line, wherever they are; an LF right after a CR (also the
    /// CR before `bytes`, with `after_cr`) is the end of that CR's line.
    #[test]
    fn line_ends_counts_cr_lf_and_crlf_once_each() {
        for (bytes, after_cr, want) in [
            (&b""[..], false, 0),
            (b"a,b", false, 0),
            (b"a\nb\n", false, 2),
            (b"a\r\nb\r\n", false, 2),
            (b"a\rb\r", false, 2),
            (b"\n\n\r\r", false, 4),
            (b"\r\n\n", false, 2),
            (b"\n", true, 0),
            (b"\nx\n", true, 1),
            (b"\rx", true, 1),
            (b"\"a\nb\"\r\n", false, 2),
        ] {
            assert_eq!(line_ends(bytes, after_cr), want, "{bytes:?} after CR {after_cr}");
        }
    }

    /// The structure of every 64-byte window of `bytes` (the last one zero-padded), each read
    /// by `read(window, length, mode)` in the mode the one before it ended in.
    fn windows(bytes: &[u8], read: impl Fn(&[u8; WINDOW], usize, Mode) -> Structure) -> Vec<Structure> {
        let mut mode = Mode::Start;
        bytes
            .chunks(WINDOW)
            .map(|chunk| {
                let mut window = [0u8; WINDOW];
                window[..chunk.len()].copy_from_slice(chunk);
                let s = read(&window, chunk.len(), mode);
                mode = s.mode;
                s
            })
            .collect()
    }

    /// csv-core's structure, byte by byte, over windows of any content.
    fn by_steps(bytes: &[u8], delimiter: u8) -> Vec<Structure> {
        windows(bytes, |window, len, mode| exact_window(window, len, delimiter, mode))
    }

    fn by_masks(bytes: &[u8], delimiter: u8) -> Vec<Structure> {
        windows(bytes, |window, len, mode| {
            let m = masks(window, delimiter);
            assert_eq!(m, scalar_masks(window, delimiter));
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked above).
                assert_eq!(unsafe { wide_masks(window, delimiter) }, m);
            }
            structure(&m, mode, len as u32 - 1, window, delimiter)
        })
    }

    proptest! {
        /// Parity with its exact fallback equals csv-core's transitions on any mix of quotes,
        /// delimiters, line ends and other bytes.
        #[test]
        fn masks_equal_the_transitions(bytes in proptest::collection::vec(
            prop_oneof![Just(b'"'), Just(b','), Just(b'\n'), Just(b'\r'), Just(b'a'), Just(b' ')], 0..300)
        ) {
            let shape = |v: Vec<Structure>| -> Vec<(u64, u64, Mode)> {
                v.into_iter().map(|s| (s.separators, s.line_ends, s.mode)).collect()
            };
            prop_assert_eq!(shape(by_masks(&bytes, b',')), shape(by_steps(&bytes, b',')));
        }
    }

    #[test]
    fn values_of_quoted_fields() {
        let value = |raw: &[u8]| {
            let mut out = Vec::new();
            match unquoted(raw) {
                None => return raw.to_vec(),
                Some(Unquoted::Inner) => return raw[1..raw.len() - 1].to_vec(),
                Some(Unquoted::Rewritten) => unescape(raw, &mut out),
            }
            out
        };
        for (raw, want) in [
            (&b"ab"[..], &b"ab"[..]),
            (b"\"ab\"", b"ab"),
            (b"\"a\"\"b\"", b"a\"b"),
            (b"\"ab\"cd", b"abcd"),
            (b"\"ab\"c\"d", b"abc\"d"),
            (b"\"ab", b"ab"),
            (b"\"", b""),
            (b"\"\"", b""),
            (b"\"\"\"\"", b"\""),
            (b"a\"b", b"a\"b"),
        ] {
            assert_eq!(value(raw), want, "{:?}", String::from_utf8_lossy(raw));
            let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(raw);
            let record = reader.byte_records().next().unwrap().unwrap();
            assert_eq!(&record[0], want, "csv-core agrees on {:?}", String::from_utf8_lossy(raw));
        }
    }
}
