//! One cell as a query reads it: its trimmed bytes, or its finite number under the
//! `--invalid` policy. The number parser is exact: it returns what `str::parse::<f64>` returns,
//! and for a date or timestamp the number it means (DESIGN §2.6). A file that writes decimals
//! with a comma (`--decimal ,`) is read through the same parser, the comma spelled as a point.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

use crate::data::date::{looks_like_date, parse_date_time};
pub use crate::data::row::DecimalMark;
use crate::data::row::{text_cell, BadCell, Row};
use crate::error::shown;
use crate::numeric::bounds::Finite;

/// `--invalid`: what to do with a missing or non-numeric cell.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NumberCell {
    pub index: usize,
    pub invalid: InvalidPolicy,
}

impl NumberCell {
    /// The cell's finite number, the imputed value, or None for a skipped row. A missing or
    /// non-finite cell ("NaN", "inf", "1e400") is refused under `--invalid error`.
    #[inline(always)]
    pub fn read(&self, row: &Row) -> Result<Option<f64>, BadCell> {
        if let Some(typed) = row.typed_number(self.index) {
            return self.resolve(typed, row);
        }
        let parsed = match row.memo(self.index) {
            Some((slot, stamp)) => match slot.get() {
                (seen, x) if seen == stamp => x,
                _ => {
                    let x = parse_number_in(text_cell(row, self.index), row.decimal());
                    slot.set((stamp, x));
                    x
                }
            },
            None => parse_number_in(text_cell(row, self.index), row.decimal()),
        };
        self.resolve(parsed, row)
    }

    /// What [`NumberCell::read`] returns for a cell of `row` that parsed to `parsed`: the
    /// number, or the `--invalid` policy applied.
    #[inline(always)]
    pub fn resolve(&self, parsed: Option<f64>, row: &Row) -> Result<Option<f64>, BadCell> {
        match parsed {
            Some(x) => Ok(Some(x)),
            None => match self.invalid {
                InvalidPolicy::Error => Err(BadCell {
                    column: self.index,
                    why: describe_invalid(text_cell(row, self.index), row.decimal()),
                }),
                InvalidPolicy::Skip => Ok(None),
                InvalidPolicy::Impute(v) => Ok(Some(v.get())),
            },
        }
    }
}

/// A finite f64, or None: exactly what `str::parse::<f64>` accepts, less NaN and ±inf (which
/// includes overflow such as 1e400); and a date (`2025-03-01`: days since 1970-01-01) or a
/// timestamp (`2025-03-01T12:00:00.5+01:00`: seconds since 1970-01-01T00:00:00Z, exact), read by
/// [`parse_date_time`] from text std refuses.
///
/// Plain decimals (`-12.5`, `007`, `.5`) with at most 19 digits, a value at most 2^53 and at
/// most 22 digits after the point are computed here: the digits form an integer m that an f64 holds
/// exactly, 10^k is exact too, and one IEEE division m / 10^k rounds the exact quotient
/// correctly — the value std returns (Clinger 1990, the fast path of every correct parser).
/// Anything else (exponents, long digit strings, text) goes to std unchanged.
#[inline(always)]
pub fn parse_number(cell: &[u8]) -> Option<f64> {
    match parse_plain_decimal(cell) {
        Some(x) => Some(x),
        None => parse_with_std(cell),
    }
}

/// The cell's number with the file's decimal mark: [`parse_number`] for a point; for a comma,
/// [`parse_number`] of the cell with its one comma written as a point, so `228,04` is exactly
/// the f64 of `228.04`. Under a comma a cell holding a point is refused (`1.234,5` writes a
/// thousands separator, and `1.234` would be read a thousand times too small), unless it is a
/// date or timestamp (`12:00:00.5`), which reads as it does under a point.
#[inline(always)]
pub fn parse_number_in(cell: &[u8], mark: DecimalMark) -> Option<f64> {
    match mark {
        DecimalMark::Point => parse_number(cell),
        DecimalMark::Comma => parse_decimal_comma(cell),
    }
}

/// [`parse_number_in`] under a comma.
#[inline(always)]
fn parse_decimal_comma(cell: &[u8]) -> Option<f64> {
    let Some(comma) = cell.iter().position(|&b| b == b',') else {
        if cell.contains(&b'.') && !looks_like_date(cell) {
            return None;
        }
        return parse_number(cell);
    };
    if cell.contains(&b'.') {
        return None;
    }
    let mut spelled = [0u8; 64];
    match spelled.get_mut(..cell.len()) {
        Some(copy) => {
            copy.copy_from_slice(cell);
            copy[comma] = b'.';
            parse_number(copy)
        }
        None => {
            let mut copy = cell.to_vec();
            copy[comma] = b'.';
            parse_number(&copy)
        }
    }
}

/// Powers of ten that f64 holds exactly.
const EXACT_POWERS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22,
];

/// A plain decimal of at most 16 characters after its sign, 8 bytes at once: the digits and at
/// most one point are checked together, the point is taken out, and the digits (zeros in front)
/// become an integer in a few multiplications. Longer ones go digit by digit.
#[inline(always)]
fn parse_plain_decimal(cell: &[u8]) -> Option<f64> {
    let (negative, rest) = match cell.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, cell),
    };
    let n = rest.len();
    if n == 0 || n > 16 {
        return parse_long_decimal(rest, negative);
    }
    if n <= 8 {
        // One half: no work on the other (most cells are this short).
        let (digits, after_point, _) = without_point(right_aligned(rest), n)?;
        let mantissa = eight_digits(digits);
        let magnitude = if after_point == 0 {
            f64::from(mantissa)
        } else {
            f64::from(mantissa) / EXACT_POWERS[after_point]
        };
        return Some(if negative { -magnitude } else { magnitude });
    }
    // The last eight characters and the ones before them, each right-aligned behind zeros:
    // both read as whole words (9 to 16 characters hold two overlapping ones), the first
    // shifted so that only the n − 8 characters before the last eight remain.
    let word_at = |at: usize| u64::from_le_bytes(*rest[at..].first_chunk::<8>().unwrap_or(&[b'0'; 8]));
    let pad = 8 * (16 - n) as u32;
    let high_word = (word_at(0) << pad) | (ZEROS & !(u64::MAX << pad));
    let low = without_point(word_at(n - 8), 8)?;
    let high = without_point(high_word, 8)?;
    let (high_value, low_value) = (u64::from(eight_digits(high.0)), u64::from(eight_digits(low.0)));
    // A half without its point holds seven digits.
    let (mantissa, after_point) = match (high.2, low.2) {
        (false, false) => (high_value * 100_000_000 + low_value, 0),
        (false, true) => (high_value * 10_000_000 + low_value, low.1),
        (true, false) => (high_value * 100_000_000 + low_value, high.1 + 8),
        (true, true) => return None,
    };
    if mantissa > 1 << 53 {
        return None;
    }
    // An integer needs no division (m / 1 is m): it would only wait on the divider.
    let magnitude =
        if after_point == 0 { mantissa as f64 } else { mantissa as f64 / EXACT_POWERS[after_point] };
    Some(if negative { -magnitude } else { magnitude })
}

/// Eight ASCII zeros.
const ZEROS: u64 = 0x3030_3030_3030_3030;

/// One to eight bytes as a word, right-aligned behind ASCII zeros, the first byte lowest: read
/// with overlapping loads from the slice itself (no copy through memory, which would stall the
/// load that follows it).
#[inline(always)]
fn right_aligned(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let x = if n >= 4 {
        let first = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let last = u32::from_le_bytes([bytes[n - 4], bytes[n - 3], bytes[n - 2], bytes[n - 1]]);
        u64::from(first) | u64::from(last) << (8 * (n - 4))
    } else {
        u64::from(bytes[0])
            | u64::from(bytes[n / 2]) << (8 * (n / 2))
            | u64::from(bytes[n - 1]) << (8 * (n - 1))
    };
    let pad = 8 * (8 - n);
    if pad == 0 {
        x
    } else {
        (x << pad) | (ZEROS & ((1u64 << pad) - 1))
    }
}

/// Eight bytes of a decimal, right-aligned behind zeros (the first byte lowest), with at most
/// one point among the last `n`: the eight digits with the point taken out (the bytes before
/// it move one place towards it, a zero comes in front), the number of digits after it, and
/// whether there was one. None for any other byte, two points, or a point alone.
#[inline(always)]
fn without_point(x: u64, n: usize) -> Option<(u64, usize, bool)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let t = x ^ (ONES * 0x30);
    // 0x80 in each byte that is not a digit: t > 9 there (no carry crosses a byte).
    let other = (((t & (ONES * 0x7f)) + ONES * 0x76) | t) & (ONES * 0x80);
    if other == 0 {
        return Some((x, 0, false));
    }
    let point = (other.trailing_zeros() / 8) as usize;
    if other & (other - 1) != 0 || (x >> (8 * point)) as u8 != b'.' || n == 1 {
        return None;
    }
    let before = (1u64 << (8 * point)) - 1;
    let after = !(before | (0xff << (8 * point)));
    Some((((x & before) << 8) | (x & after) | 0x30, 7 - point, true))
}

/// The value of eight ASCII digits, the first in the lowest byte (Muła's method: pairs, then
/// quadruples, then the eight, by multiplications that keep each partial sum in its own lane).
#[inline(always)]
fn eight_digits(v: u64) -> u32 {
    let v = v.wrapping_sub(0x3030_3030_3030_3030);
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let lanes = 0x0000_00ff_0000_00ff;
    let v = (v & lanes)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & lanes).wrapping_mul(1 + (10_000 << 32)));
    (v >> 32) as u32
}

/// [`parse_plain_decimal`] for 17 characters and more, a digit at a time.
#[inline(never)]
fn parse_long_decimal(rest: &[u8], negative: bool) -> Option<f64> {
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

/// std's answer; for text std refuses that looks like a date, the date's number. A number std
/// reads is never a date (no f64 literal has a `-` at bytes 4 and 7), so the order costs the
/// numbers nothing and changes none of them.
#[cold]
fn parse_with_std(cell: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(cell).ok()?;
    match text.parse::<f64>() {
        Ok(x) => Some(x).filter(|x| x.is_finite()),
        Err(_) if looks_like_date(cell) => parse_date_time(cell),
        Err(_) => None,
    }
}

/// Why a cell is not a number, and what reads it: `--decimal ,` for a number written with a
/// decimal comma (skipping it would drop every row with a fraction, and no message would
/// say so), else `--invalid`.
fn describe_invalid(cell: &[u8], mark: DecimalMark) -> String {
    if cell.is_empty() {
        return "the cell is empty; use --invalid skip or --invalid impute=V".to_string();
    }
    let text = shown(&String::from_utf8_lossy(cell), 40);
    match mark {
        DecimalMark::Point if parse_decimal_comma(cell).is_some() => format!(
            "'{text}' is a number only with a decimal comma, which --decimal , reads (a workload: decimal = \",\")"
        ),
        DecimalMark::Comma if cell.contains(&b'.') && cell.iter().all(|b| b"0123456789+-.,".contains(b)) => {
            format!(
                "'{text}' holds a point, which --decimal , refuses: thousands separators are not read \
                 (write the number without them)"
            )
        }
        _ => format!("'{text}' is not a finite number; use --invalid skip or --invalid impute=V"),
    }
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

    /// Whether `cell` parses as std parses it when it is a slice of a longer buffer: after
    /// `before` (any bytes) and, with `after`, before more bytes; without, at the very end of
    /// the buffer (a read past the cell's slice would panic there).
    fn agrees_with_std_in_buffer(cell: &[u8], before: &[u8], after: bool) -> Result<(), String> {
        let mut bytes = before.to_vec();
        bytes.extend_from_slice(cell);
        let end = bytes.len();
        if after {
            bytes.extend_from_slice(b",123456789.5,x");
        }
        let (got, want) = (parse_number(&bytes[before.len()..end]).map(f64::to_bits), by_std(cell));
        if got == want {
            Ok(())
        } else {
            Err(format!("{cell:?} after {before:?}: {got:?}, std {want:?}"))
        }
    }

    /// A sign, then exactly `n` characters: digits (taken in turn from `digits`), with a point
    /// in place `point` if that is below n.
    fn decimal(sign: &str, digits: &[u8], n: usize, point: usize) -> String {
        let mut text = sign.to_string();
        for (i, d) in digits.iter().cycle().take(n).enumerate() {
            text.push(if i == point { '.' } else { char::from(b'0' + d % 10) });
        }
        text
    }

    /// Every length from 1 to 16 after the sign, every place of the point and none, each sign,
    /// at several offsets in a buffer, at its end or not.
    #[test]
    fn parses_every_length_and_point() {
        let digits = [9u8, 0, 0, 7, 1, 9, 9, 2, 5, 4, 7, 4, 0, 9, 9, 3, 1];
        let junk = b"-9.9.+e,\"\n 0123456789.-";
        for n in 1..=16 {
            for point in 0..=n {
                for sign in ["", "-", "+"] {
                    for rotate in [0, 5, 11] {
                        let digits: Vec<u8> = digits.iter().cycle().skip(rotate).take(17).copied().collect();
                        let text = decimal(sign, &digits, n, point);
                        for offset in [0, 1, 7, 8, 9, 15, 16, 17, 20] {
                            for after in [false, true] {
                                agrees_with_std_in_buffer(text.as_bytes(), &junk[..offset], after).unwrap();
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
        fn fast_parser_agrees_with_std_on_every_length(
            sign in "[+-]?",
            digits in proptest::collection::vec(0u8..10, 17),
            n in 1usize..=16,
            point in 0usize..24,
            before in proptest::collection::vec(any::<u8>(), 0..40),
            after in any::<bool>(),
        ) {
            let text = decimal(&sign, &digits, n, point);
            let r = agrees_with_std_in_buffer(text.as_bytes(), &before, after);
            prop_assert!(r.is_ok(), "{:?}", r);
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
    fn dates_and_timestamps_are_their_numbers() {
        // Day and second numbers checked against another calendar (Python's datetime).
        let cases = [
            ("2025-03-01", "20148"),
            ("1969-12-31", "-1"),
            ("2024-02-29", "19782"),
            ("2025-03-01T00:00:00.1Z", "1740787200.1"),
            ("2025-03-01 01:00+01:00", "1740787200"),
            ("1969-12-31T23:59:55.25", "-4.75"),
        ];
        for (cell, number) in cases {
            let want = number.parse::<f64>().unwrap().to_bits();
            assert_eq!(parse_number(cell.as_bytes()).map(f64::to_bits), Some(want), "{cell}");
            // Cells arrive trimmed; a slice of a longer buffer reads the same.
            let buffer = format!("x,{cell},7");
            let slice = &buffer.as_bytes()[2..2 + cell.len()];
            assert_eq!(parse_number(slice).map(f64::to_bits), Some(want), "{cell} in a buffer");
        }
        for cell in ["2025-02-30", "2025-01-01T23:59:60", "2025-01-01T24:00", "1e10-01-01", "2025-01-01x"] {
            assert_eq!(parse_number(cell.as_bytes()), None, "{cell}");
        }
    }

    proptest! {
        /// A decimal comma is exactly the number of the point spelling, and a point is refused
        /// under a comma (outside dates).
        #[test]
        fn decimal_comma_is_the_point_spelling(
            text in "[+-]?[0-9]{0,22}(\\.[0-9]{0,24})?([eE][+-]?[0-9]{1,3})?"
        ) {
            let comma = text.replace('.', ",");
            let (point, read) = (parse_number(text.as_bytes()), parse_number_in(comma.as_bytes(), DecimalMark::Comma));
            prop_assert_eq!(point.map(f64::to_bits), read.map(f64::to_bits), "{:?}", comma);
            prop_assert_eq!(parse_number_in(text.as_bytes(), DecimalMark::Point), point);
            if text.contains('.') {
                prop_assert_eq!(parse_number_in(text.as_bytes(), DecimalMark::Comma), None);
            }
        }
    }

    #[test]
    fn decimal_comma_cells() {
        let comma = |cell: &str| parse_number_in(cell.as_bytes(), DecimalMark::Comma);
        assert_eq!(comma("228,04"), Some(228.04));
        assert_eq!(comma("-0,5"), Some(-0.5));
        assert_eq!(comma("17"), Some(17.0));
        // Longer than the stack copy: the same answer through the heap.
        let long = format!("{},5", "0".repeat(80));
        assert_eq!(comma(&long), Some(0.5));
        for refused in ["1.234,5", "1.234", "1,2,3", "1 234,5", ",", "abc"] {
            assert_eq!(comma(refused), None, "{refused}");
        }
        assert_eq!(comma("2025-03-01"), parse_number(b"2025-03-01"));
        assert_eq!(comma("2025-03-01T00:00:00.5Z"), parse_number(b"2025-03-01T00:00:00.5Z"));
        assert_eq!(parse_number(b"228,04"), None);
    }

    #[test]
    fn refusals_name_the_decimal_mark() {
        let why = describe_invalid(b"228,04", DecimalMark::Point);
        assert!(why.contains("--decimal ,") && !why.contains("--invalid skip"), "{why}");
        let why = describe_invalid(b"1.234,5", DecimalMark::Comma);
        assert!(why.contains("thousands separator") && !why.contains("--invalid skip"), "{why}");
        let why = describe_invalid(b"abc", DecimalMark::Point);
        assert!(why.contains("--invalid skip") && !why.contains("--decimal"), "{why}");
        assert_eq!(",".parse::<DecimalMark>(), Ok(DecimalMark::Comma));
        assert_eq!(".".parse::<DecimalMark>(), Ok(DecimalMark::Point));
        assert!(";".parse::<DecimalMark>().is_err());
    }

    #[test]
    fn parses_policies() {
        assert_eq!("skip".parse::<InvalidPolicy>(), Ok(InvalidPolicy::Skip));
        assert!(matches!("impute=3".parse::<InvalidPolicy>(), Ok(InvalidPolicy::Impute(_))));
        assert!("impute=nan".parse::<InvalidPolicy>().is_err());
        assert!("drop".parse::<InvalidPolicy>().is_err());
    }
}
