//! Dates and timestamps in cells, as the numbers every query reads (DESIGN §2.6): a date is its
//! day number since 1970-01-01, a timestamp its seconds since 1970-01-01T00:00:00Z. A CSV cell and
//! a typed column of another format (formatted as this text) then mean the same number, to the
//! bit.
//!
//! The format is fixed-width ISO 8601 / RFC 3339, read here; the calendar (month lengths, leap
//! years, the proleptic Gregorian day count) is chrono's.

use chrono::{NaiveDate, NaiveTime};

/// Whether a cell could be a date: the only cells [`parse_date_time`] is tried on, so that text
/// columns pay three byte comparisons and numbers nothing.
#[inline(always)]
pub fn looks_like_date(cell: &[u8]) -> bool {
    cell.len() >= 10 && cell[4] == b'-' && cell[7] == b'-'
}

/// The number a date or timestamp cell means, or None for any other text:
///
/// - `YYYY-MM-DD`: days since 1970-01-01 (negative before), an integer;
/// - `YYYY-MM-DDTHH:MM[:SS[.f]][zone]`, `T` or one space between date and time, 1 to 9 digits of
///   fraction (only after seconds), zone `Z`, `±HH:MM`, `±HHMM` or `±HH` (none: UTC): seconds
///   since 1970-01-01T00:00:00Z.
///
/// The year has exactly four digits (0000 to 9999, proleptic Gregorian), the date must exist,
/// hours run to 23, minutes and seconds to 59 (a leap second `:60` is refused, as POSIX time has
/// none), zone hours to 23 and minutes to 59. A timestamp is exact: its whole seconds are an
/// integer (|s| < 2^53, held exactly by an f64), and with a fraction the value is the f64 nearest
/// to the exact decimal s + f (one correctly rounded parse of that decimal's text), never a sum
/// rounded twice.
#[cold]
#[inline(never)]
pub fn parse_date_time(cell: &[u8]) -> Option<f64> {
    if !looks_like_date(cell) {
        return None;
    }
    let year = digits(cell, 0, 4)?;
    let date = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, digits(cell, 5, 2)?, digits(cell, 8, 2)?)?;
    let rest = &cell[10..];
    let Some((&separator, rest)) = rest.split_first() else {
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
        // Below 10^7 in magnitude: exact.
        return Some(date.signed_duration_since(epoch).num_days() as f64);
    };
    if separator != b'T' && separator != b' ' {
        return None;
    }
    let (hour, minute) = (digits(rest, 0, 2)?, digits(rest, 3, 2)?);
    if rest.get(2) != Some(&b':') {
        return None;
    }
    let mut rest = &rest[5..];
    let mut second = 0;
    let mut fraction: &[u8] = &[];
    if let Some(after) = rest.strip_prefix(b":") {
        second = digits(after, 0, 2)?;
        rest = &after[2..];
        if let Some(after) = rest.strip_prefix(b".") {
            let n = after.iter().take_while(|b| b.is_ascii_digit()).count();
            if !(1..=9).contains(&n) {
                return None;
            }
            (fraction, rest) = after.split_at(n);
        }
    }
    let offset = zone(rest)?;
    // from_hms_opt refuses hour 24, minute 60 and second 60 (chrono writes a leap second as
    // nanoseconds past 10^9, which this never asks for).
    let time = NaiveTime::from_hms_opt(hour, minute, second)?;
    let seconds = date.and_time(time).and_utc().timestamp() - offset;
    exact(seconds, fraction)
}

/// The value of the `n` ASCII digits at `at`, or None if any is missing or not a digit.
fn digits(bytes: &[u8], at: usize, n: usize) -> Option<u32> {
    bytes
        .get(at..at + n)?
        .iter()
        .try_fold(0u32, |value, &b| b.is_ascii_digit().then(|| value * 10 + u32::from(b - b'0')))
}

/// A zone's offset east of UTC in seconds: 0 for none or `Z`, else `±HH`, `±HHMM` or `±HH:MM`.
fn zone(text: &[u8]) -> Option<i64> {
    let (sign, rest) = match text.split_first() {
        None => return Some(0),
        Some((b'Z', [])) => return Some(0),
        Some((b'+', rest)) => (1, rest),
        Some((b'-', rest)) => (-1, rest),
        _ => return None,
    };
    let minutes = match rest.len() {
        2 => 0,
        4 => digits(rest, 2, 2)?,
        5 if rest[2] == b':' => digits(rest, 3, 2)?,
        _ => return None,
    };
    let hours = digits(rest, 0, 2)?;
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some(sign * i64::from(hours * 3600 + minutes * 60))
}

/// The f64 nearest to `seconds` + 0.`fraction` (its decimal digits), exactly: the decimal is
/// written out as one number, in units of the fraction's last digit, and parsed by std's
/// correctly rounded parser. Before 1970 the sum is negative (−5 s and .25 are −4.75).
fn exact(seconds: i64, fraction: &[u8]) -> Option<f64> {
    if fraction.is_empty() {
        // |seconds| < 2^53 for four-digit years: the f64 holds it exactly.
        return Some(seconds as f64);
    }
    let places = fraction.len();
    let scale = 10i128.pow(places as u32);
    let units = fraction.iter().fold(0i128, |value, &b| value * 10 + i128::from(b - b'0'));
    // Negative exactly when seconds is (seconds ≤ −1 and units < scale), so never −0.
    let total = i128::from(seconds) * scale + units;
    let magnitude = total.unsigned_abs();
    let sign = if total < 0 { "-" } else { "" };
    let text =
        format!("{sign}{}.{:0places$}", magnitude / scale.unsigned_abs(), magnitude % scale.unsigned_abs());
    text.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Datelike, TimeDelta, Timelike};
    use proptest::prelude::*;

    fn number(text: &str) -> Option<f64> {
        parse_date_time(text.as_bytes())
    }

    /// The f64 std reads from a decimal text.
    fn decimal(text: &str) -> f64 {
        text.parse().unwrap()
    }

    #[test]
    fn dates_are_days_since_1970() {
        let cases = [
            ("1970-01-01", 0.0),
            ("1970-01-02", 1.0),
            ("1969-12-31", -1.0),
            ("1969-01-01", -365.0),
            ("2000-03-01", 11_017.0),
            ("2024-02-29", 19_782.0),
            ("2024-03-01", 19_783.0),
            ("2025-03-01", 20_148.0),
            ("0000-01-01", -719_528.0),
            ("9999-12-31", 2_932_896.0),
        ];
        for (text, days) in cases {
            assert_eq!(number(text).map(f64::to_bits), Some(f64::to_bits(days)), "{text}");
        }
    }

    #[test]
    fn timestamps_are_seconds_since_1970_utc() {
        let cases = [
            ("1970-01-01T00:00:00", 0.0),
            ("1970-01-01T00:00:00Z", 0.0),
            ("1970-01-01 00:00:01", 1.0),
            ("1970-01-01T00:01", 60.0),
            ("1969-12-31T23:59:59Z", -1.0),
            ("2025-03-01T00:00:00Z", 1_740_787_200.0),
            ("2025-03-01 00:00:00+00:00", 1_740_787_200.0),
            ("2025-03-01T01:00:00+01:00", 1_740_787_200.0),
            ("2025-03-01T01:00:00+0100", 1_740_787_200.0),
            ("2025-03-01T01:00:00+01", 1_740_787_200.0),
            ("2025-02-28T18:30:00-05:30", 1_740_787_200.0),
            ("2025-02-28T18:30-0530", 1_740_787_200.0),
            ("2025-03-01T00:00:00-00:00", 1_740_787_200.0),
            ("2024-02-29T12:00:00Z", 1_709_208_000.0),
            // A zone can move the day across a month, a year and 1970.
            ("1970-01-01T00:30:00+01:00", -1800.0),
            ("2024-12-31T23:00:00-01:00", 1_735_689_600.0),
        ];
        for (text, seconds) in cases {
            assert_eq!(number(text).map(f64::to_bits), Some(f64::to_bits(seconds)), "{text}");
        }
    }

    #[test]
    fn fractions_are_exact_decimals() {
        let cases = [
            // The f64 nearest 1740787200.1, not 1740787200.0 + 0.1 rounded twice.
            ("2025-03-01T00:00:00.1Z", "1740787200.1"),
            ("2025-03-01T00:00:00.123456789Z", "1740787200.123456789"),
            ("2025-03-01T00:00:00.000000001", "1740787200.000000001"),
            ("2025-03-01T00:00:00.5+01:00", "1740783600.5"),
            ("1970-01-01T00:00:00.25", "0.25"),
            ("1970-01-01T00:00:00.000", "0"),
            // Before 1970 the fraction counts up from the negative second: −5 + 0.25.
            ("1969-12-31T23:59:55.25Z", "-4.75"),
            ("1969-12-31T23:59:59.9", "-0.1"),
            ("1969-12-31T23:59:59.999999999", "-0.000000001"),
            ("1900-01-01T00:00:00.1", "-2208988799.9"),
        ];
        for (text, want) in cases {
            assert_eq!(number(text).map(f64::to_bits), Some(decimal(want).to_bits()), "{text}");
        }
        // Where adding the parts would round twice, the exact decimal is what comes out.
        let twice = [
            ("1970-01-01T00:00:01.118", 1.0f64, 0.118, "1.118"),
            ("1969-12-31T23:59:55.137", -5.0, 0.137, "-4.863"),
            ("1970-01-01T00:01:40.023339", 100.0, 0.023339, "100.023339"),
        ];
        for (text, seconds, fraction, want) in twice {
            assert_ne!(
                (seconds + fraction).to_bits(),
                decimal(want).to_bits(),
                "{text} rounds once either way"
            );
            assert_eq!(number(text).map(f64::to_bits), Some(decimal(want).to_bits()), "{text}");
        }
    }

    #[test]
    fn other_text_is_refused() {
        let refused = [
            "2025-02-30",
            "2025-02-29",
            "1900-02-29",
            "2025-13-01",
            "2025-00-10",
            "2025-01-00",
            "2025-1-01",
            "2025-01-1",
            "20250-01-01",
            "+2025-01-01",
            "-2025-01-01",
            "2025-01-01Z",
            "2025-01-01T",
            "2025-01-01 ",
            "2025-01-01t12:00",
            "2025-01-01_12:00",
            "2025-01-01T12",
            "2025-01-01T12:0",
            "2025-01-01T12-00",
            "2025-01-01T24:00",
            "2025-01-01T23:60",
            "2025-01-01T23:59:60",
            "2016-12-31T23:59:60Z",
            "2025-01-01T12:00:5",
            "2025-01-01T12:00.5",
            "2025-01-01T12:00:00.",
            "2025-01-01T12:00:00.1234567890",
            "2025-01-01T12:00:00,5",
            "2025-01-01T12:00:00z",
            "2025-01-01T12:00:00 Z",
            "2025-01-01T12:00:00ZZ",
            "2025-01-01T12:00:00+1",
            "2025-01-01T12:00:00+123",
            "2025-01-01T12:00:00+12:3",
            "2025-01-01T12:00:00+12:300",
            "2025-01-01T12:00:00+24:00",
            "2025-01-01T12:00:00+12:60",
            "2025-01-01T12:00:00+12;00",
            "2025-01-01T12:00:00UTC",
            "2025-01-01T12:00:00.5.5",
            "2025-01-01T1２:00",
            "２025-01-01",
            "2025-01-0\u{663}",
            "1234-56-78",
            "abcd-ef-gh",
        ];
        for text in refused {
            assert_eq!(number(text), None, "{text}");
        }
        assert_eq!(parse_date_time(b"2025-01-01T12:00:00\xff"), None);
    }

    /// chrono's own fields of a UTC instant, shifted into a zone, written back as text.
    fn written(
        seconds: i64,
        offset: i64,
        fraction: &str,
        space: bool,
        zone_form: u8,
        drop_seconds: bool,
    ) -> String {
        let local = DateTime::from_timestamp(seconds, 0).unwrap().naive_utc() + TimeDelta::seconds(offset);
        let mut text = format!(
            "{:04}-{:02}-{:02}{}{:02}:{:02}",
            local.year(),
            local.month(),
            local.day(),
            if space { ' ' } else { 'T' },
            local.hour(),
            local.minute()
        );
        if !(drop_seconds && local.second() == 0 && fraction.is_empty()) {
            text += &format!(":{:02}", local.second());
            if !fraction.is_empty() {
                text += &format!(".{fraction}");
            }
        }
        let (sign, hours, minutes) =
            (if offset < 0 { '-' } else { '+' }, offset.abs() / 3600, offset.abs() % 3600 / 60);
        text += &match zone_form {
            _ if offset == 0 && zone_form == 0 => String::new(),
            _ if offset == 0 && zone_form == 1 => "Z".to_string(),
            _ if minutes == 0 && zone_form == 2 => format!("{sign}{hours:02}"),
            3 => format!("{sign}{hours:02}{minutes:02}"),
            _ => format!("{sign}{hours:02}:{minutes:02}"),
        };
        text
    }

    proptest! {
        /// Any instant of the four-digit years, in any zone and format: the seconds chrono counts,
        /// and with a fraction the f64 std reads from the decimal written with a borrow below
        /// 1970 (−5 and .25 as "-4.75"), not by this module's arithmetic.
        #[test]
        fn timestamps_agree_with_chrono_and_std(
            seconds in -62_167_132_800i64..253_402_214_400,
            places in 0usize..=9,
            nanos in 0u32..1_000_000_000,
            offset_minutes in -1439i64..=1439,
            whole_hours in any::<bool>(),
            space in any::<bool>(),
            zone_form in 0u8..4,
            drop_seconds in any::<bool>(),
        ) {
            let offset = if whole_hours { offset_minutes / 60 * 3600 } else { offset_minutes * 60 };
            let digits = format!("{nanos:09}")[..places].to_string();
            let text = written(seconds, offset, &digits, space, zone_form, drop_seconds);
            let units: u64 = if places == 0 { 0 } else { digits.parse().unwrap() };
            let want = if units == 0 {
                seconds as f64
            } else if seconds < 0 {
                let scale = 10u64.pow(places as u32);
                decimal(&format!("-{}.{:0places$}", -seconds - 1, scale - units))
            } else {
                decimal(&format!("{seconds}.{digits}"))
            };
            prop_assert_eq!(number(&text).map(f64::to_bits), Some(want.to_bits()), "{}", text);
        }

        /// Any date of the four-digit years: its day number.
        #[test]
        fn dates_agree_with_chrono(days in -719_528i64..=2_932_896) {
            let date = DateTime::from_timestamp(days * 86_400, 0).unwrap().date_naive();
            let text = format!("{:04}-{:02}-{:02}", date.year(), date.month(), date.day());
            prop_assert_eq!(number(&text), Some(days as f64), "{}", text);
        }
    }
}
