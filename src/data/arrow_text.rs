//! The CSV text of an arrow value: what the same table's CSV holds in its cell, and so what a
//! Parquet value means to a query (`data::parquet`, DESIGN §7.7). Dates and times are written
//! with chrono; the rest is a few lines each (a decimal is its digits with a point put in).
//!
//! | type | text |
//! |---|---|
//! | integers, doubles, floats | Rust's shortest decimal (`12`, `0.1`, `-0`, `NaN`, `inf`) |
//! | decimals | the exact digits at the column's scale (`123.45`, `-0.05`, `1200` at scale −2) |
//! | Date32, Date64 | `2025-03-01` |
//! | timestamps | `2025-03-01T12:00:00` with the fraction's digits when not zero (`…:00.5`), in UTC, `Z` after it when the column has a time zone |
//! | Time32, Time64 | `12:00:00`, with the fraction's digits when not zero |
//! | Boolean | `true`, `false` |
//! | strings, binary | their bytes |
//! | dictionaries | their values' text |
//!
//! A null is the empty cell. Other types (lists, structs, maps, unions, durations, intervals)
//! have no cell text: [`readable`] says so before anything is read.

use std::io::Write;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Float16Type,
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_schema::{DataType, TimeUnit};

/// The cells of a column as text, one after the other.
#[derive(Default)]
pub struct Texts {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Texts {
    /// Cell `row`; None past the column's end.
    pub fn get(&self, row: usize) -> Option<&[u8]> {
        let end = *self.ends.get(row)?;
        let start = if row == 0 { 0 } else { self.ends[row - 1] };
        self.bytes.get(start..end)
    }

    fn with_capacity(rows: usize) -> Texts {
        Texts { bytes: Vec::with_capacity(rows * 8), ends: Vec::with_capacity(rows) }
    }

    /// Appends one cell: `write` writes its text (nothing for a null).
    fn push(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.bytes);
        self.ends.push(self.bytes.len());
    }
}

/// Whether a column of this type is read as cells (every type in the table above).
pub fn readable(data_type: &DataType) -> bool {
    match data_type {
        DataType::Dictionary(_, values) => readable(values),
        t => {
            t.is_integer()
                || t.is_floating()
                || matches!(
                    t,
                    DataType::Decimal32(..)
                        | DataType::Decimal64(..)
                        | DataType::Decimal128(..)
                        | DataType::Decimal256(..)
                        | DataType::Date32
                        | DataType::Date64
                        | DataType::Timestamp(..)
                        | DataType::Time32(_)
                        | DataType::Time64(_)
                        | DataType::Boolean
                        | DataType::Utf8
                        | DataType::LargeUtf8
                        | DataType::Utf8View
                        | DataType::Binary
                        | DataType::LargeBinary
                        | DataType::BinaryView
                        | DataType::FixedSizeBinary(_)
                        | DataType::Null
                )
        }
    }
}

/// Pushes onto `$texts` the text of every cell of `$values` (an array with `is_valid` and
/// `value`) as `$write` writes `$v` into `$out`; a null cell is an empty one.
macro_rules! each {
    ($texts:expr, $values:expr, |$out:ident, $v:ident| $write:expr) => {{
        let values = $values;
        for row in 0..values.len() {
            $texts.push(|$out| {
                if values.is_valid(row) {
                    let $v = values.value(row);
                    $write;
                }
            });
        }
    }};
}

/// The text of every cell of `array` (a type [`readable`] accepts; any other reads as empty
/// cells, which `readable` refused before the scan), by family of types.
pub fn texts(array: &dyn Array) -> Texts {
    let mut texts = Texts::with_capacity(array.len());
    let written = match array.as_any_dictionary_opt() {
        Some(dictionary) => {
            let values = self::texts(dictionary.values().as_ref());
            let keys = dictionary.normalized_keys();
            for (row, key) in keys.into_iter().enumerate() {
                texts.push(|out| {
                    if array.is_valid(row) {
                        out.extend_from_slice(values.get(key).unwrap_or_default());
                    }
                });
            }
            true
        }
        // Each family writes the types it knows and says false to the others.
        None => {
            number_texts(array, &mut texts)
                || temporal_texts(array, &mut texts)
                || byte_texts(array, &mut texts)
        }
    };
    if !written {
        texts.ends.resize(array.len(), 0);
    }
    texts
}

/// [`texts`] of numbers: integers and floats as Rust displays them (the shortest text that
/// reads back as the same value), decimals at their scale. False for any other type.
fn number_texts(array: &dyn Array, texts: &mut Texts) -> bool {
    macro_rules! display {
        ($t:ty) => {
            each!(texts, array.as_primitive::<$t>(), |out, v| {
                let _ = write!(out, "{v}");
            })
        };
    }
    match array.data_type() {
        DataType::Int8 => display!(Int8Type),
        DataType::Int16 => display!(Int16Type),
        DataType::Int32 => display!(Int32Type),
        DataType::Int64 => display!(Int64Type),
        DataType::UInt8 => display!(UInt8Type),
        DataType::UInt16 => display!(UInt16Type),
        DataType::UInt32 => display!(UInt32Type),
        DataType::UInt64 => display!(UInt64Type),
        DataType::Float16 => display!(Float16Type),
        DataType::Float32 => display!(Float32Type),
        DataType::Float64 => display!(Float64Type),
        DataType::Decimal32(_, s) => decimals::<Decimal32Type>(array, *s, texts, i128::from),
        DataType::Decimal64(_, s) => decimals::<Decimal64Type>(array, *s, texts, i128::from),
        DataType::Decimal128(_, s) => decimals::<Decimal128Type>(array, *s, texts, |v| v),
        DataType::Decimal256(_, s) => each!(texts, array.as_primitive::<Decimal256Type>(), |out, v| {
            let digits = v.to_string();
            let (negative, digits) = digits.strip_prefix('-').map_or((false, digits.as_str()), |d| (true, d));
            decimal(out, negative, digits, *s)
        }),
        _ => return false,
    }
    true
}

/// [`texts`] of dates, timestamps and times, as a CSV spells them. False for any other type.
fn temporal_texts(array: &dyn Array, texts: &mut Texts) -> bool {
    match array.data_type() {
        DataType::Date32 => {
            each!(texts, array.as_primitive::<Date32Type>(), |out, v| date(out, i64::from(v) * 86_400))
        }
        DataType::Date64 => {
            each!(texts, array.as_primitive::<Date64Type>(), |out, v| date(out, v.div_euclid(1000)))
        }
        DataType::Timestamp(unit, zone) => {
            let z = zone.is_some();
            match unit {
                TimeUnit::Second => {
                    each!(texts, array.as_primitive::<TimestampSecondType>(), |out, v| stamp(out, v, 1, z))
                }
                TimeUnit::Millisecond => {
                    each!(texts, array.as_primitive::<TimestampMillisecondType>(), |out, v| stamp(
                        out, v, 1_000, z
                    ))
                }
                TimeUnit::Microsecond => {
                    each!(texts, array.as_primitive::<TimestampMicrosecondType>(), |out, v| stamp(
                        out, v, 1_000_000, z
                    ))
                }
                TimeUnit::Nanosecond => {
                    each!(texts, array.as_primitive::<TimestampNanosecondType>(), |out, v| stamp(
                        out,
                        v,
                        1_000_000_000,
                        z
                    ))
                }
            }
        }
        DataType::Time32(TimeUnit::Second) => {
            each!(texts, array.as_primitive::<Time32SecondType>(), |out, v| time(out, i64::from(v), 1))
        }
        DataType::Time32(_) => {
            each!(texts, array.as_primitive::<Time32MillisecondType>(), |out, v| time(
                out,
                i64::from(v),
                1_000
            ))
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            each!(texts, array.as_primitive::<Time64MicrosecondType>(), |out, v| time(out, v, 1_000_000))
        }
        DataType::Time64(_) => {
            each!(texts, array.as_primitive::<Time64NanosecondType>(), |out, v| time(out, v, 1_000_000_000))
        }
        _ => return false,
    }
    true
}

/// [`texts`] of booleans, strings and binary cells: their bytes. False for any other type.
fn byte_texts(array: &dyn Array, texts: &mut Texts) -> bool {
    match array.data_type() {
        DataType::Boolean => {
            each!(texts, array.as_boolean(), |out, v| out.extend_from_slice(if v {
                b"true"
            } else {
                b"false"
            }))
        }
        DataType::Utf8 => {
            each!(texts, array.as_string::<i32>(), |out, v| out.extend_from_slice(v.as_bytes()))
        }
        DataType::LargeUtf8 => {
            each!(texts, array.as_string::<i64>(), |out, v| out.extend_from_slice(v.as_bytes()))
        }
        DataType::Utf8View => {
            each!(texts, array.as_string_view(), |out, v| out.extend_from_slice(v.as_bytes()))
        }
        DataType::Binary => each!(texts, array.as_binary::<i32>(), |out, v| out.extend_from_slice(v)),
        DataType::LargeBinary => each!(texts, array.as_binary::<i64>(), |out, v| out.extend_from_slice(v)),
        DataType::BinaryView => each!(texts, array.as_binary_view(), |out, v| out.extend_from_slice(v)),
        DataType::FixedSizeBinary(_) => {
            each!(texts, array.as_fixed_size_binary(), |out, v| out.extend_from_slice(v))
        }
        _ => return false,
    }
    true
}

fn decimals<T: ArrowPrimitiveType>(
    array: &dyn Array,
    scale: i8,
    texts: &mut Texts,
    wide: impl Fn(T::Native) -> i128,
) {
    let values = array.as_primitive::<T>();
    for row in 0..array.len() {
        texts.push(|out| {
            if values.is_valid(row) {
                let v = wide(values.value(row));
                decimal(out, v < 0, &v.unsigned_abs().to_string(), scale);
            }
        });
    }
}

/// The unscaled `digits` with `scale` of them after the point (zeros put after them for a
/// negative scale, before them when there are fewer digits than the scale).
fn decimal(out: &mut Vec<u8>, negative: bool, digits: &str, scale: i8) {
    if negative {
        out.push(b'-');
    }
    if scale <= 0 {
        out.extend_from_slice(digits.as_bytes());
        if digits != "0" {
            out.extend(std::iter::repeat_n(b'0', scale.unsigned_abs() as usize));
        }
        return;
    }
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    let _ = write!(out, "{whole}.{fraction}");
}

/// `YYYY-MM-DD` of the day holding second `seconds` since 1970 (UTC).
fn date(out: &mut Vec<u8>, seconds: i64) {
    if let Some(t) = chrono::DateTime::from_timestamp(seconds, 0) {
        let _ = write!(out, "{}", t.format("%Y-%m-%d"));
    }
}

/// The instant `value` units (`per_second` to a second) after 1970 UTC, with `Z` when the
/// column states a time zone.
fn stamp(out: &mut Vec<u8>, value: i64, per_second: i64, zone: bool) {
    let (seconds, part) = (value.div_euclid(per_second), value.rem_euclid(per_second));
    if let Some(t) = chrono::DateTime::from_timestamp(seconds, 0) {
        let _ = write!(out, "{}", t.format("%Y-%m-%dT%H:%M:%S"));
        fraction(out, part, per_second);
        if zone {
            out.push(b'Z');
        }
    }
}

/// `HH:MM:SS` of `value` units (`per_second` to a second) after midnight.
fn time(out: &mut Vec<u8>, value: i64, per_second: i64) {
    let (seconds, part) = (value.div_euclid(per_second), value.rem_euclid(per_second));
    let _ = write!(out, "{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
    fraction(out, part, per_second);
}

/// `.` and the digits of `part / per_second` without trailing zeros; nothing for 0.
fn fraction(out: &mut Vec<u8>, part: i64, per_second: i64) {
    if part == 0 {
        return;
    }
    let width = per_second.ilog10() as usize;
    let digits = format!("{part:0width$}");
    let _ = write!(out, ".{}", digits.trim_end_matches('0'));
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        BooleanArray, Date32Array, Decimal128Array, DictionaryArray, StringArray, TimestampMicrosecondArray,
    };

    fn all(texts: &Texts, n: usize) -> Vec<String> {
        (0..n).map(|r| String::from_utf8_lossy(texts.get(r).unwrap()).into_owned()).collect()
    }

    #[test]
    fn decimals_are_their_exact_digits() {
        let a = Decimal128Array::from(vec![Some(12345), Some(-5), None, Some(0), Some(i128::MAX)])
            .with_precision_and_scale(38, 2)
            .unwrap();
        let max = format!("{}.{}", &i128::MAX.to_string()[..37], &i128::MAX.to_string()[37..]);
        assert_eq!(all(&texts(&a), 5), ["123.45", "-0.05", "", "0.00", &max]);
        let b = Decimal128Array::from(vec![Some(12), Some(0)]).with_precision_and_scale(10, -2).unwrap();
        assert_eq!(all(&texts(&b), 2), ["1200", "0"]);
    }

    #[test]
    fn dates_times_and_booleans() {
        let d = Date32Array::from(vec![Some(0), Some(-1), Some(20148), None]);
        assert_eq!(all(&texts(&d), 4), ["1970-01-01", "1969-12-31", "2025-03-01", ""]);
        let t = TimestampMicrosecondArray::from(vec![Some(1_740_830_400_500_000), Some(-1)]);
        assert_eq!(all(&texts(&t), 2), ["2025-03-01T12:00:00.5", "1969-12-31T23:59:59.999999"]);
        let tz = t.clone().with_timezone("+02:00");
        assert_eq!(all(&texts(&tz), 1), ["2025-03-01T12:00:00.5Z"]);
        let b = BooleanArray::from(vec![Some(true), None, Some(false)]);
        assert_eq!(all(&texts(&b), 3), ["true", "", "false"]);
    }

    #[test]
    fn dictionaries_are_their_values() {
        let d: DictionaryArray<arrow_array::types::Int8Type> =
            vec![Some("b"), None, Some("a"), Some("b")].into_iter().collect();
        assert_eq!(all(&texts(&d), 4), ["b", "", "a", "b"]);
        let s = StringArray::from(vec![Some(" x "), None]);
        assert_eq!(all(&texts(&s), 2), [" x ", ""]);
    }

    #[test]
    fn nested_types_are_not_readable() {
        assert!(readable(&DataType::Decimal128(10, 2)));
        assert!(readable(&DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))));
        assert!(!readable(&DataType::Duration(TimeUnit::Second)));
        let item = arrow_schema::Field::new("item", DataType::Int64, true);
        assert!(!readable(&DataType::List(std::sync::Arc::new(item))));
    }
}
