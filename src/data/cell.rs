//! One cell as a query reads it: its trimmed bytes, or its finite number under the
//! `--invalid` policy. The number parser is exact: it returns what `str::parse::<f64>` returns.

use std::str::FromStr;

use crate::data::row::{located_cell, text_cell, BadCell, CellBytes, Row};
use crate::error::shown;
use crate::numeric::bounds::Finite;

/// `--invalid`: what to do with a missing or non-numeric cell.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum InvalidPolicy {
    /// Refuse it, naming row and column.
    #[default]
    Error,
    /// Drop the row (add-remove only: under replace it would change the public n).
    Skip,
    /// Use this value instead (then clamped like any other).
    Impute(Finite),
}

impl FromStr for InvalidPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<InvalidPolicy, String> {
        match s {
            "error" => Ok(InvalidPolicy::Error),
            "skip" => Ok(InvalidPolicy::Skip),
            _ => match s.strip_prefix("impute=") {
                Some(v) => v.parse().map(InvalidPolicy::Impute).map_err(|e| format!("impute value: {e}")),
                None => Err("expected error, skip or impute=V".into()),
            },
        }
    }
}

/// A numeric cell with its `--invalid` policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NumberCell {
    pub index: usize,
    pub invalid: InvalidPolicy,
}

impl NumberCell {
    /// The cell's finite number, the imputed value, or None for a skipped row. A missing or
    /// non-finite cell ("NaN", "inf", "1e400") is refused under `--invalid error`.
    #[inline(always)]
    pub fn read(&self, row: &Row) -> Result<Option<f64>, BadCell> {
        let parsed = match row.memo(self.index) {
            Some((slot, stamp)) => match slot.get() {
                (seen, x) if seen == stamp => x,
                _ => {
                    let x = parse_cell(located_cell(row, self.index));
                    slot.set((stamp, x));
                    x
                }
            },
            None => self.parse(row),
        };
        self.resolve(parsed, row)
    }

    /// The cell's finite number in `row`, or None, before the `--invalid` policy: what
    /// [`NumberCell::read`] parses (without the row's memo).
    #[inline(always)]
    pub fn parse(&self, row: &Row) -> Option<f64> {
        parse_cell(located_cell(row, self.index))
    }

    /// What [`NumberCell::read`] returns for a cell of `row` that parsed to `parsed`: the
    /// number, or the `--invalid` policy applied.
    #[inline(always)]
    pub fn resolve(&self, parsed: Option<f64>, row: &Row) -> Result<Option<f64>, BadCell> {
        match parsed {
            Some(x) => Ok(Some(x)),
            None => match self.invalid {
                InvalidPolicy::Error => {
                    Err(BadCell { column: self.index, why: describe_invalid(text_cell(row, self.index)) })
                }
                InvalidPolicy::Skip => Ok(None),
                InvalidPolicy::Impute(v) => Ok(Some(v.get())),
            },
        }
    }
}

/// A finite f64, or None: exactly what `str::parse::<f64>` accepts, less NaN and ±inf (which
/// includes overflow such as 1e400).
///
/// Plain decimals (`-12.5`, `007`, `.5`) with at most 19 digits, a value at most 2^53 and at
/// most 22 digits after the point are computed here: the digits form an integer m that an f64 holds
/// exactly, 10^k is exact too, and one IEEE division m / 10^k rounds the exact quotient
/// correctly — the value std returns (Clinger 1990, the fast path of every correct parser).
/// Anything else (exponents, long digit strings, text) goes to std unchanged.
#[inline(always)]
pub fn parse_number(cell: &[u8]) -> Option<f64> {
    parse_cell(CellBytes::of(cell))
}

/// [`parse_number`] of a cell read where it lies: the bytes before it let a short cell be
/// loaded as one 16-byte word (see [`window`]).
#[inline(always)]
pub fn parse_cell(cell: CellBytes) -> Option<f64> {
    match parse_plain_decimal(cell) {
        Some(x) => Some(x),
        None => parse_with_std(cell.bytes()),
    }
}

/// Powers of ten that f64 holds exactly.
const EXACT_POWERS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22,
];

/// A plain decimal of 1 to 16 characters, sign included, in one code path for every length and
/// every place of the point (which length a column's cells have is a coin flip for a branch):
/// the sixteen bytes that end with the cell are read at once, the bytes before the cell count
/// as zeros, the digits and at most one point are checked together, the point is taken out
/// (the digits before it move one place up), and the sixteen digits become an integer in a few
/// multiplications ([`sixteen`]). Longer cells go digit by digit.
#[inline(always)]
fn parse_plain_decimal(cell: CellBytes) -> Option<f64> {
    let (buffer, start, end) = cell.buffer();
    let length = end - start;
    if length.wrapping_sub(1) >= 16 {
        return parse_long_decimal(cell.bytes());
    }
    let mut copy = [b'0'; 16];
    let bytes = window(buffer, start, end, &mut copy);
    let first = bytes[16 - length];
    let negative = first == b'-';
    // The characters after the sign, 0 to 16, at the end of the sixteen bytes.
    let n = length - usize::from(negative | (first == b'+'));
    let (mantissa, scale) = sixteen::decimal(bytes, n)?;
    let magnitude = mantissa as f64 / scale;
    Some(f64::from_bits(magnitude.to_bits() | u64::from(negative) << 63))
}

/// The sixteen bytes that end at `end` in `buffer`, for a cell of 1 to 16 bytes at
/// `buffer[start..end]`; the bytes before the cell may be anything (the caller ignores them).
/// A cell that ends less than sixteen bytes into its buffer (the first of a part, or a cell
/// read alone) is copied to the end of `copy`.
#[inline(always)]
fn window<'a>(buffer: &'a [u8], start: usize, end: usize, copy: &'a mut [u8; 16]) -> &'a [u8; 16] {
    match end.checked_sub(16).and_then(|from| buffer.get(from..end)) {
        Some(bytes) => bytes.try_into().expect("16 bytes"),
        None => {
            copied(&buffer[start..end], copy);
            copy
        }
    }
}

/// `cell` at the end of `copy`.
#[inline(never)]
fn copied(cell: &[u8], copy: &mut [u8; 16]) {
    copy[16 - cell.len()..].copy_from_slice(cell);
}

/// For 0 to 16 characters at the end of 16 bytes, the mask that keeps them (0xff in their bytes).
const CELL_MASKS: [[u8; 16]; 17] = {
    let mut masks = [[0u8; 16]; 17];
    let mut n = 1;
    while n <= 16 {
        let mut i = 16 - n;
        while i < 16 {
            masks[n][i] = 0xff;
            i += 1;
        }
        n += 1;
    }
    masks
};

/// For a point at each of the sixteen places (or none, the 17th), the mask of the bytes before
/// it (0xff), which move one place up when it is taken out.
const BEFORE_POINT: [[u8; 16]; 17] = {
    let mut masks = [[0u8; 16]; 17];
    let mut place = 0;
    while place < 16 {
        let mut i = 0;
        while i < place {
            masks[place][i] = 0xff;
            i += 1;
        }
        place += 1;
    }
    masks
};

/// 10 to the number of digits after a point at each of the sixteen places (1 for none).
const SCALES: [f64; 17] = {
    let mut scales = [1.0; 17];
    let mut place = 0;
    while place < 16 {
        scales[place] = EXACT_POWERS[15 - place];
        place += 1;
    }
    scales
};

/// The digits of the last `n` (0 to 16) of sixteen bytes, with at most one point among them and
/// a digit besides: the integer they form without the point, at most 2^53, and 10 to the number
/// of digits after the point. None for any other byte, two points, a point alone, no digit, or
/// more than 2^53.
mod sixteen {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    pub use super::sse2::decimal;
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    pub use super::words::decimal;
}

/// [`sixteen`] with SSE2 (part of x86-64 itself, so enabled on every x86-64 target unless
/// turned off): the sixteen bytes in one register, the checks as byte compares, the point taken
/// out by one byte shift, and the digits combined in pairs, fours and eights by multiply-adds.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use std::arch::x86_64::*;

    use super::{BEFORE_POINT, CELL_MASKS, SCALES};

    #[inline(always)]
    pub fn decimal(bytes: &[u8; 16], n: usize) -> Option<(u64, f64)> {
        // SAFETY: the module is compiled only where SSE2 is enabled, and the loads read the
        // sixteen bytes of an array (unaligned loads, which SSE2 has).
        unsafe { decimal_sse2(bytes, n) }
    }

    #[inline(always)]
    unsafe fn load(bytes: &[u8; 16]) -> __m128i {
        _mm_loadu_si128(bytes.as_ptr().cast())
    }

    #[inline(always)]
    unsafe fn decimal_sse2(bytes: &[u8; 16], n: usize) -> Option<(u64, f64)> {
        // Each byte less '0' (digits are 0 to 9), and 0 before the cell.
        let t = _mm_and_si128(_mm_sub_epi8(load(bytes), _mm_set1_epi8(b'0' as i8)), load(&CELL_MASKS[n]));
        let nines = _mm_set1_epi8(9);
        let digits = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(t, nines), nines)) as u32;
        let points = _mm_cmpeq_epi8(t, _mm_set1_epi8(b'.'.wrapping_sub(b'0') as i8));
        let point = _mm_movemask_epi8(points) as u32;
        // Every byte a digit but the point, if any; at most one point; a digit besides it.
        if (digits ^ 0xffff) != point || point & point.wrapping_sub(1) != 0 || n <= (point != 0) as usize {
            return None;
        }
        let place = (point | 1 << 16).trailing_zeros() as usize;
        let t = _mm_andnot_si128(points, t);
        let before = load(&BEFORE_POINT[place]);
        let t = _mm_or_si128(_mm_slli_si128::<1>(_mm_and_si128(t, before)), _mm_andnot_si128(before, t));
        // Pairs (first digit × 10 + second), fours, eights, in 16- and 32-bit lanes.
        let zero = _mm_setzero_si128();
        let tens = _mm_set1_epi32(1 << 16 | 10);
        let pairs = _mm_packs_epi32(
            _mm_madd_epi16(_mm_unpacklo_epi8(t, zero), tens),
            _mm_madd_epi16(_mm_unpackhi_epi8(t, zero), tens),
        );
        let fours = _mm_madd_epi16(pairs, _mm_set1_epi32(1 << 16 | 100));
        let fours = _mm_packs_epi32(fours, fours);
        let eights = _mm_madd_epi16(fours, _mm_set1_epi32(1 << 16 | 10_000));
        let both = _mm_cvtsi128_si64(eights) as u64;
        let mantissa = (both & 0xffff_ffff) * 100_000_000 + (both >> 32);
        if mantissa > 1 << 53 {
            return None;
        }
        Some((mantissa, SCALES[place]))
    }
}

/// [`sixteen`] in two 64-bit words, for any target.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
mod words {
    use super::{eight_digits, BEFORE_POINT, CELL_MASKS, SCALES};

    /// 0x01 in each of the sixteen bytes.
    const ONES: u128 = 0x0101_0101_0101_0101_0101_0101_0101_0101;

    #[inline(always)]
    pub fn decimal(bytes: &[u8; 16], n: usize) -> Option<(u64, f64)> {
        // Each byte less '0' (digits are 0 to 9), and 0 before the cell.
        let t = (u128::from_le_bytes(*bytes) ^ ONES * 0x30) & u128::from_le_bytes(CELL_MASKS[n]);
        // 0x80 in each byte that is not a digit: t > 9 there (no carry crosses a byte).
        let other = (((t & (ONES * 0x7f)) + ONES * 0x76) | t) & (ONES * 0x80);
        // The first byte that is not a digit (16: none), which must be the only one, a point.
        let place = (other.trailing_zeros() / 8) as usize;
        let byte = 0xff_u128.checked_shl(8 * place as u32).unwrap_or(0);
        let point = (u128::from(b'.' ^ b'0') * ONES) & byte;
        if other & !byte != 0 || t & byte != point || n <= usize::from(place < 16) {
            return None;
        }
        let before = u128::from_le_bytes(BEFORE_POINT[place]);
        let digits = ((t & before) << 8) | (t & !(before | byte));
        let mantissa = u64::from(eight_digits(digits as u64)) * 100_000_000
            + u64::from(eight_digits((digits >> 64) as u64));
        if mantissa > 1 << 53 {
            return None;
        }
        Some((mantissa, SCALES[place]))
    }
}

/// The value of eight digits (bytes 0 to 9), the first in the lowest byte (Muła's method: pairs,
/// then quadruples, then the eight, by multiplications that keep each partial sum in its own
/// lane).
#[inline(always)]
fn eight_digits(v: u64) -> u32 {
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let lanes = 0x0000_00ff_0000_00ff;
    let v = (v & lanes)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & lanes).wrapping_mul(1 + (10_000 << 32)));
    (v >> 32) as u32
}

/// [`parse_plain_decimal`] for 17 characters and more (and none), a digit at a time.
#[inline(never)]
fn parse_long_decimal(cell: &[u8]) -> Option<f64> {
    let (negative, rest) = match cell.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, cell),
    };
    let (mut mantissa, mut i) = (0u64, 0usize);
    while i < rest.len() {
        let d = rest[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    let mut digits = i;
    let mut after_point = 0usize;
    if i < rest.len() && rest[i] == b'.' {
        i += 1;
        let first = i;
        while i < rest.len() {
            let d = rest[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        after_point = i - first;
        digits += after_point;
    }
    // 19 digits cannot wrap a u64; 2^53 and 10^22 keep both operands exact.
    if i != rest.len() || digits == 0 || digits > 19 || mantissa > 1 << 53 {
        return None;
    }
    let magnitude = mantissa as f64 / *EXACT_POWERS.get(after_point)?;
    Some(if negative { -magnitude } else { magnitude })
}

#[cold]
fn parse_with_std(cell: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(cell).ok()?;
    text.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn describe_invalid(cell: &[u8]) -> String {
    if cell.is_empty() {
        return "the cell is empty; use --invalid skip or --invalid impute=V".to_string();
    }
    let text = shown(&String::from_utf8_lossy(cell), 40);
    format!("'{text}' is not a finite number; use --invalid skip or --invalid impute=V")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// std's answer, as bits (so -0 and 0 differ).
    fn by_std(bytes: &[u8]) -> Option<u64> {
        let text = std::str::from_utf8(bytes).ok()?;
        text.parse::<f64>().ok().filter(|x| x.is_finite()).map(f64::to_bits)
    }

    fn agrees_with_std(bytes: &[u8]) -> bool {
        parse_number(bytes).map(f64::to_bits) == by_std(bytes)
    }

    #[test]
    fn fast_parser_agrees_with_std_on_edge_cases() {
        let cases = [
            "",
            "-",
            "+",
            ".",
            "-.",
            "+.",
            "..",
            "1.",
            ".5",
            "-.5",
            "+.5",
            "5.e3",
            "0",
            "-0",
            "+0",
            "-0.0",
            "00.100",
            "007",
            "1e5",
            "1E-5",
            "1e",
            "1e+",
            "e5",
            "inf",
            "-inf",
            "+inf",
            "infinity",
            "INF",
            "NaN",
            "nan",
            "-nan",
            "1e400",
            "-1e400",
            "1e-400",
            "4.9e-324",
            "2.2250738585072014e-308",
            "1.7976931348623157e308",
            "1.7976931348623159e308",
            "9007199254740992",
            "9007199254740993",
            "-9007199254740993",
            "9007199254740992.5",
            "123456789012345678901234567890",
            "0.1",
            "0.3",
            "1234567890123456789",
            "12345678901234567890",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            "1.0000000000000000000000",
            "1_000",
            " 1",
            "1 ",
            "0x10",
            "1..2",
            "1.2.3",
            "--1",
            "+-1",
            "-+1",
            "١",
            "½",
            "1,5",
            "1;5",
            "\u{feff}1",
            "99999999999999999999",
            "3.141592653589793238462643383279",
            "2.5",
            "-2.5",
            "0.49999999999999994",
        ];
        for case in cases {
            assert!(agrees_with_std(case.as_bytes()), "{case:?}: {:?} vs std", parse_number(case.as_bytes()));
        }
        assert!(agrees_with_std(b"\xff1"));
        assert!(agrees_with_std(b"1\x00"));
    }

    proptest! {
        /// Decimal syntax, including what the fast path hands on to std.
        #[test]
        fn fast_parser_agrees_with_std_on_decimals(
            text in "[+-]?[0-9]{0,22}(\\.[0-9]{0,24})?([eE][+-]?[0-9]{1,3})?"
        ) {
            prop_assert!(agrees_with_std(text.as_bytes()), "{:?}", text);
        }

        /// Digits and points around the 16 characters the word-at-a-time path takes.
        #[test]
        fn fast_parser_agrees_with_std_on_digits_and_points(text in "[+-]?[0-9.]{0,18}") {
            prop_assert!(agrees_with_std(text.as_bytes()), "{:?}", text);
        }

        /// Digits with at most one point anywhere, many of them 9 to 16 characters long (two
        /// overlapping words).
        #[test]
        fn fast_parser_agrees_with_std_on_two_words(text in "[+-]?[0-9]{0,12}\\.?[0-9]{0,12}") {
            prop_assert!(agrees_with_std(text.as_bytes()), "{:?}", text);
        }

        /// Any text at all.
        #[test]
        fn fast_parser_agrees_with_std_on_any_text(text in "\\PC{0,12}", bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            prop_assert!(agrees_with_std(text.as_bytes()), "{:?}", text);
            prop_assert!(agrees_with_std(&bytes), "{:?}", bytes);
        }

        /// Every f64, written the ways programs write numbers.
        #[test]
        fn fast_parser_agrees_with_std_on_printed_floats(x in any::<f64>(), places in 0usize..20) {
            for text in [format!("{x}"), format!("{x:e}"), format!("{x:.places$}"), format!("{x:?}")] {
                prop_assert!(agrees_with_std(text.as_bytes()), "{:?}", text);
            }
        }
    }

    /// Whether `cell` parses as std parses it when read where it lies: after `before` (any
    /// bytes, which the parser may load but must not let count) and, with `after`, before a
    /// delimiter and more bytes; without, at the very end of its buffer. Read through a row, as
    /// the scan reads it, also between quotes and with white space around it.
    fn agrees_with_std_in_place(cell: &[u8], before: &[u8], after: bool) -> Result<(), String> {
        let expected = by_std(cell);
        for (open, close) in [(&b""[..], &b""[..]), (b"\"", b"\""), (b" ", b"  ")] {
            let mut bytes = before.to_vec();
            bytes.extend_from_slice(open);
            bytes.extend_from_slice(cell);
            bytes.extend_from_slice(close);
            let end = bytes.len();
            if after {
                bytes.extend_from_slice(b",123456789.5,x");
            }
            let quoted = open == b"\"";
            let ends = [end];
            let row = Row::line(&bytes, before.len(), &ends, quoted, 1, &[], 0);
            let got = parse_cell(located_cell(&row, 0)).map(f64::to_bits);
            if got != expected {
                return Err(format!("{cell:?} after {before:?} in {:?}: {got:?}, std {expected:?}", bytes));
            }
        }
        Ok(())
    }

    /// A decimal of exactly `n` characters after an optional sign: digits, with a point at
    /// `point` if that is below n.
    fn decimal(sign: &str, digits: &[u8], n: usize, point: usize) -> String {
        let mut text = sign.to_string();
        for (i, d) in digits.iter().cycle().take(n).enumerate() {
            text.push(if i == point { '.' } else { char::from(b'0' + d % 10) });
        }
        text
    }

    /// Every length from 1 to 16 after the sign, every place of the point and none, each sign,
    /// at every offset from the start of its buffer up to 20 bytes in (the first cell of a part
    /// has fewer than 16 bytes before it), at the end of the buffer or not.
    #[test]
    fn parses_every_length_and_point_in_place() {
        let digits = [9u8, 0, 0, 7, 1, 9, 9, 2, 5, 4, 7, 4, 0, 9, 9, 3, 1];
        let junk = b"-9.9.+e,\"\n 0123456789.-";
        for n in 1..=16 {
            for point in 0..=n {
                for sign in ["", "-", "+"] {
                    for rotate in [0, 5, 11] {
                        let digits: Vec<u8> = digits.iter().cycle().skip(rotate).take(17).copied().collect();
                        let text = decimal(sign, &digits, n, point);
                        for offset in 0..=20 {
                            for after in [false, true] {
                                agrees_with_std_in_place(text.as_bytes(), &junk[..offset], after).unwrap();
                            }
                        }
                    }
                }
            }
        }
    }

    proptest! {
        /// Any decimal of 1 to 16 characters after its sign, with or without a point anywhere,
        /// after any bytes, at the end of its buffer or before more.
        #[test]
        fn fast_parser_agrees_with_std_in_place(
            sign in "[+-]?",
            digits in proptest::collection::vec(0u8..10, 17),
            n in 1usize..=16,
            point in 0usize..24,
            before in proptest::collection::vec(any::<u8>(), 0..40),
            after in any::<bool>(),
        ) {
            let text = decimal(&sign, &digits, n, point);
            prop_assert!(agrees_with_std_in_place(text.as_bytes(), &before, after).is_ok(), "{:?}", text);
        }

        /// Any text up to 18 bytes read where it lies, after any bytes.
        #[test]
        fn any_text_agrees_with_std_in_place(
            text in "[+-.0-9eE]{0,18}",
            bytes in proptest::collection::vec(any::<u8>(), 0..18),
            before in proptest::collection::vec(any::<u8>(), 0..40),
            after in any::<bool>(),
        ) {
            let r = agrees_with_std_in_place(text.as_bytes(), &before, after);
            prop_assert!(r.is_ok(), "{:?}", r);
            // Raw bytes might hold a quote or white space, which the row would take off.
            let bytes: Vec<u8> = bytes.into_iter().filter(|b| *b != b'"' && !b.is_ascii_whitespace()).collect();
            let r = agrees_with_std_in_place(&bytes, &before, after);
            prop_assert!(r.is_ok(), "{:?}", r);
        }
    }

    proptest! {
        /// The portable kernel (two 64-bit words) gives what the one in use gives, on bytes
        /// mostly digits, points and signs, for every count of characters.
        #[test]
        fn both_kernels_agree(
            bytes in proptest::collection::vec(prop_oneof![8 => 0x30u8..0x3a, 2 => Just(b'.'), 1 => any::<u8>()], 16),
            n in 0usize..=16,
        ) {
            let bytes: [u8; 16] = bytes.try_into().unwrap();
            let (words, used) = (words::decimal(&bytes, n), sixteen::decimal(&bytes, n));
            prop_assert_eq!(words.map(|(m, s)| (m, s.to_bits())), used.map(|(m, s)| (m, s.to_bits())));
        }
    }

    #[test]
    fn parses_only_finite_numbers() {
        assert_eq!(parse_number(b"1.5"), Some(1.5));
        assert_eq!(parse_number(b"-0"), Some(-0.0));
        for bad in [&b"NaN"[..], b"inf", b"-inf", b"1e400", b"", b"abc", b"1,5", b"\xff"] {
            assert_eq!(parse_number(bad), None);
        }
    }

    #[test]
    fn parses_policies() {
        assert_eq!("skip".parse::<InvalidPolicy>(), Ok(InvalidPolicy::Skip));
        assert!(matches!("impute=3".parse::<InvalidPolicy>(), Ok(InvalidPolicy::Impute(_))));
        assert!("impute=nan".parse::<InvalidPolicy>().is_err());
        assert!("drop".parse::<InvalidPolicy>().is_err());
    }
}
