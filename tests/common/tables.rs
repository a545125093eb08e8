//! Tables written both as CSV and as Parquet (one file, or hive-partitioned parts), for the tests
//! that compare the two (`common::tables`).
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, Float32Array, Float64Array,
    Int32Array, Int64Array, LargeStringArray, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

/// One column's values; None is a null (an empty CSV cell).
#[derive(Clone, Debug)]
pub enum Values {
    Int(Vec<Option<i64>>),
    Int32(Vec<Option<i32>>),
    Float(Vec<Option<f64>>),
    Float32(Vec<Option<f32>>),
    Text(Vec<Option<String>>),
    /// Text as a LargeUtf8 column.
    LargeText(Vec<Option<String>>),
    /// Text as a dictionary-encoded column (Int32 keys, Utf8 values).
    Dictionary(Vec<Option<String>>),
    /// Unscaled values, precision and scale.
    Decimal(Vec<Option<i128>>, u8, i8),
    /// Days since 1970-01-01.
    Date(Vec<Option<i32>>),
    /// Microseconds since 1970-01-01T00:00:00Z, without a time zone.
    Timestamp(Vec<Option<i64>>),
    Bool(Vec<Option<bool>>),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Int(v) => v.len(),
            Values::Int32(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Float32(v) => v.len(),
            Values::Text(v) | Values::LargeText(v) | Values::Dictionary(v) => v.len(),
            Values::Decimal(v, _, _) => v.len(),
            Values::Date(v) => v.len(),
            Values::Timestamp(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    fn array(&self, rows: &[usize]) -> ArrayRef {
        fn pick<T: Clone>(v: &[Option<T>], rows: &[usize]) -> Vec<Option<T>> {
            rows.iter().map(|&r| v[r].clone()).collect()
        }
        match self {
            Values::Int(v) => Arc::new(Int64Array::from(pick(v, rows))),
            Values::Int32(v) => Arc::new(Int32Array::from(pick(v, rows))),
            Values::Float(v) => Arc::new(Float64Array::from(pick(v, rows))),
            Values::Float32(v) => Arc::new(Float32Array::from(pick(v, rows))),
            Values::Text(v) => Arc::new(StringArray::from(pick(v, rows))),
            Values::LargeText(v) => Arc::new(LargeStringArray::from(pick(v, rows))),
            Values::Dictionary(v) => {
                let picked = pick(v, rows);
                Arc::new(picked.iter().map(Option::as_deref).collect::<DictionaryArray<Int32Type>>())
            }
            Values::Decimal(v, p, s) => {
                Arc::new(Decimal128Array::from(pick(v, rows)).with_precision_and_scale(*p, *s).unwrap())
            }
            Values::Date(v) => Arc::new(Date32Array::from(pick(v, rows))),
            Values::Timestamp(v) => Arc::new(TimestampMicrosecondArray::from(pick(v, rows))),
            Values::Bool(v) => Arc::new(BooleanArray::from(pick(v, rows))),
        }
    }

    /// The cell as the table's CSV holds it: integers, doubles and floats in Rust's shortest
    /// decimal form, decimals with their scale's digits, dates and timestamps as arrow displays them
    /// (`2025-03-01`, `2025-03-01T12:00:00.5`), text as it is.
    fn cell(&self, row: usize) -> String {
        match self {
            Values::Int(v) => v[row].map(|x| x.to_string()).unwrap_or_default(),
            Values::Int32(v) => v[row].map(|x| x.to_string()).unwrap_or_default(),
            Values::Float(v) => v[row].map(|x| x.to_string()).unwrap_or_default(),
            Values::Float32(v) => v[row].map(|x| x.to_string()).unwrap_or_default(),
            Values::Text(v) | Values::LargeText(v) | Values::Dictionary(v) => {
                v[row].clone().unwrap_or_default()
            }
            Values::Decimal(v, _, s) => v[row].map(|x| decimal_text(x, *s)).unwrap_or_default(),
            Values::Date(_) | Values::Timestamp(_) | Values::Bool(_) => {
                let array = self.array(&[row]);
                let options = FormatOptions::new().with_null("");
                let text = ArrayFormatter::try_new(array.as_ref(), &options).unwrap().value(0).to_string();
                text
            }
        }
    }
}

/// An unscaled decimal as text with `scale` digits after the point.
pub fn decimal_text(unscaled: i128, scale: i8) -> String {
    if scale <= 0 {
        return (unscaled * 10i128.pow(scale.unsigned_abs() as u32)).to_string();
    }
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, frac) = padded.split_at(padded.len() - scale);
    format!("{}{whole}.{frac}", if unscaled < 0 { "-" } else { "" })
}

/// A table of named columns of equal length.
#[derive(Clone, Debug)]
pub struct Table {
    pub columns: Vec<(String, Values)>,
}

impl Table {
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, v)| v.len())
    }

    /// The table as CSV text, header first, a cell quoted when it holds a comma, a quote, a
    /// line break or spaces at its ends.
    pub fn csv(&self) -> String {
        self.csv_rows(&(0..self.rows()).collect::<Vec<_>>())
    }

    fn csv_rows(&self, rows: &[usize]) -> String {
        let quote = |c: &str| {
            if c.contains([',', '"', '\n', '\r']) || c.starts_with(' ') || c.ends_with(' ') {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.to_string()
            }
        };
        let mut out = self.columns.iter().map(|(n, _)| quote(n)).collect::<Vec<_>>().join(",");
        out.push('\n');
        for &r in rows {
            let cells: Vec<String> = self.columns.iter().map(|(_, v)| quote(&v.cell(r))).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    fn batch(&self, rows: &[usize], leave_out: Option<&str>) -> RecordBatch {
        let columns: Vec<(String, ArrayRef)> = self
            .columns
            .iter()
            .filter(|(n, _)| Some(n.as_str()) != leave_out)
            .map(|(n, v)| (n.clone(), v.array(rows)))
            .collect();
        RecordBatch::try_from_iter(columns).unwrap()
    }

    /// Writes rows `rows` as one Parquet file with row groups of `group_rows` rows (snappy).
    fn write_rows(&self, path: &Path, rows: &[usize], group_rows: usize, leave_out: Option<&str>) {
        let batch = self.batch(rows, leave_out);
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(group_rows.max(1)))
            .build();
        let file = std::fs::File::create(path).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }

    /// The whole table as one Parquet file.
    pub fn write_parquet(&self, path: &Path, group_rows: usize) {
        self.write_rows(path, &(0..self.rows()).collect::<Vec<_>>(), group_rows, None);
    }

    /// The table as `parts` Parquet files of consecutive rows under `dir` (part-000.parquet, …).
    pub fn write_parts(&self, dir: &Path, parts: usize, group_rows: usize) {
        std::fs::create_dir_all(dir).unwrap();
        let n = self.rows();
        for p in 0..parts {
            let rows: Vec<usize> = (p * n / parts..(p + 1) * n / parts).collect();
            self.write_rows(&dir.join(format!("part-{p:03}.parquet")), &rows, group_rows, None);
        }
    }

    /// The table partitioned hive-style by its LAST column (a text column): one folder
    /// `name=value` per value (hive's null name for a null), the rows of each value in one
    /// Parquet file without that column. Returns the CSV of the same rows in the order the
    /// folders list them (by folder name), which is the order dpstat reads the parts.
    pub fn write_hive(&self, dir: &Path, group_rows: usize) -> String {
        let (name, values) = self.columns.last().unwrap();
        let Values::Text(texts) = values else { panic!("partition by a text column") };
        let folder = |v: &Option<String>| match v {
            Some(v) => format!("{name}={v}"),
            None => format!("{name}=__HIVE_DEFAULT_PARTITION__"),
        };
        let mut folders: Vec<String> = texts.iter().map(folder).collect();
        folders.sort();
        folders.dedup();
        let mut order = Vec::new();
        for f in &folders {
            let rows: Vec<usize> = (0..self.rows()).filter(|&r| folder(&texts[r]) == *f).collect();
            std::fs::create_dir_all(dir.join(f)).unwrap();
            self.write_rows(&dir.join(f).join("part-0.parquet"), &rows, group_rows, Some(name));
            order.extend(rows);
        }
        self.csv_rows(&order)
    }
}
