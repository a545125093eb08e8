//! Deterministic benchmark data: `gen ROWS [quoted] > people.csv`.
//!
//! Columns id, age, income, region, urban_rural, score, about 34 bytes a row (10M rows ≈ 340 MB).
//! With `quoted`, the header and the text field (region) are in double quotes, as spreadsheets,
//! R's write.csv and pandas with quoting write them.
//! Every value is a hash of the row number (splitmix64), so the same ROWS always gives the same
//! bytes, on any machine. Built by bench/compare.sh with plain `rustc -O`; no dependencies.

use std::io::{self, BufWriter, Write};

pub const REGIONS: [&str; 6] = ["north", "south", "east", "west", "central", "islands"];

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[allow(dead_code)] // benches/column.rs includes this file for `write_rows` alone
fn main() -> io::Result<()> {
    let rows: u64 = match std::env::args().nth(1).map(|a| a.parse()) {
        Some(Ok(n)) => n,
        _ => {
            eprintln!("usage: gen ROWS [quoted] > file.csv");
            std::process::exit(2);
        }
    };
    let quoted = std::env::args().nth(2).as_deref() == Some("quoted");
    write_quoted(BufWriter::with_capacity(1 << 20, io::stdout().lock()), rows, quoted)
}

/// The header and `rows` rows; the same bytes for the same `rows`, on any machine.
#[allow(dead_code)] // the generator itself writes through `write_quoted`
pub fn write_rows(out: impl Write, rows: u64) -> io::Result<()> {
    write_quoted(out, rows, false)
}

/// The same rows, with the header and the text field quoted if `quoted`.
pub fn write_quoted(mut out: impl Write, rows: u64, quoted: bool) -> io::Result<()> {
    let q = if quoted { "\"" } else { "" };
    let header: Vec<String> = ["id", "age", "income", "region", "urban_rural", "score"]
        .iter()
        .map(|h| format!("{q}{h}{q}"))
        .collect();
    writeln!(out, "{}", header.join(","))?;
    for id in 1..=rows {
        let a = splitmix(id);
        let b = splitmix(a);
        let age = 18 + a % 73;
        // Skewed incomes: the square of a uniform spreads most rows below 60k, a few to 250k.
        let u = (b >> 11) as f64 / (1u64 << 53) as f64;
        let cents = 500_000 + (u * u * 24_500_000.0) as u64;
        let region = REGIONS[((a >> 8) % 100 / 17).min(5) as usize];
        let urban = 1 + (a >> 20) % 2;
        let score = (b >> 40) % 1001;
        writeln!(
            out,
            "{id},{age},{}.{:02},{q}{region}{q},{urban},{}.{}",
            cents / 100,
            cents % 100,
            score / 10,
            score % 10
        )?;
    }
    out.flush()
}
