//! Deterministic benchmark data for `--privacy-id` (issue 25):
//! `gen_person ROWS PERSONS [sorted|even] > visits.csv`.
//!
//! Columns id, value: ROWS rows about PERSONS persons, every person at least one row.
//!
//! **Rows per person** follow Zipf's law by rank (Zipf–Mandelbrot): the person of rank i
//! (1-based) has 1 + ⌊c·(i + q)^−1.1⌋ rows, q = PERSONS/1000, c found by bisection so that the
//! rows add up to ROWS exactly (the few left over by the floor go one each to the first ranks).
//! q keeps the largest persons at a few thousand rows instead of a tenth of the file; for 1M rows
//! and 100k persons the median person has 3 rows, the 90th percentile 12, the 99th 136, the
//! largest ~1,900, and 61% of the rows are beyond the 10th row of their person.
//!
//! With `even`, every person has ROWS/PERSONS rows instead (the first ROWS mod PERSONS one
//! more), shuffled: `gen_person 10000000 1 even` is one person with 10M rows, and
//! `gen_person 10000000 1000000 even` 1M persons with 10 rows each (the memory checks of
//! bench/person.sh).
//!
//! **Values** are integers 0..=1000 that grow with the person's number of rows, so that keeping
//! at most K rows per person biases a mean over rows (the point of the benchmark): a person with
//! R rows has a level b = 100 + 60·ln R + u, u uniform in [−50, 50), and each row's value is
//! ⌊b·E⌋ capped at 1000, E exponential with mean 1 (a skewed amount).
//!
//! **Order**: ids are a shuffled numbering of the ranks, all of the same width (so numeric and
//! byte order agree); the rows are shuffled, or with `sorted` grouped by person in increasing id
//! order. A person's j-th row has the same value in both files: the two hold the same rows.
//! Every random number is a hash of fixed inputs (splitmix64), so the same arguments give the
//! same bytes on any machine. Built by bench/person.sh with plain `rustc -O`; no dependencies.

use std::io::{self, BufWriter, Write};

const EXPONENT: f64 = 1.1;

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform number in (0, 1] from a hash.
fn unit(h: u64) -> f64 {
    ((h >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// Rows of each person by rank, adding up to `rows`.
fn rows_per_person(rows: u64, persons: u64) -> Vec<u64> {
    let q = (persons / 1000).max(1) as f64;
    let weights: Vec<f64> = (1..=persons).map(|i| (i as f64 + q).powf(-EXPONENT)).collect();
    let extra = rows - persons;
    let total = |c: f64| weights.iter().map(|w| (c * w).floor() as u64).sum::<u64>();
    let (mut lo, mut hi) = (0.0f64, extra as f64 * 2.0 / weights[0].max(f64::MIN_POSITIVE));
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if total(mid) <= extra {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut counts: Vec<u64> = weights.iter().map(|w| 1 + (lo * w).floor() as u64).collect();
    let left = rows - counts.iter().sum::<u64>();
    for c in counts.iter_mut().take(left as usize) {
        *c += 1;
    }
    counts
}

/// The value of person `p`'s `j`-th row (`r` rows in all).
fn value(p: u64, j: u64, r: u64) -> u64 {
    let level = 100.0 + 60.0 * (r as f64).ln() + (unit(splitmix(p ^ 0xA5A5_0000_0000_0000)) * 100.0 - 50.0);
    let e = -unit(splitmix(splitmix(p) ^ j.wrapping_mul(0x2545_F491_4F6C_DD1D))).ln();
    ((level * e).floor() as u64).min(1000)
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let number = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    let (rows, persons) = match (number(1), number(2)) {
        (Some(r), Some(p)) if p >= 1 && r >= p && p < u32::MAX as u64 => (r, p),
        _ => {
            eprintln!("usage: gen_person ROWS PERSONS [sorted|even] > file.csv   (1 <= PERSONS <= ROWS)");
            std::process::exit(2);
        }
    };
    let sorted = args.get(3).map(String::as_str) == Some("sorted");
    let counts = if args.get(3).map(String::as_str) == Some("even") {
        (0..persons).map(|i| rows / persons + u64::from(i < rows % persons)).collect()
    } else {
        rows_per_person(rows, persons)
    };

    // Ids: 10^d + a shuffled number below `persons`, d the digits of persons - 1: one width.
    let base = 10u64.pow((persons - 1).max(1).ilog10() + 1);
    let mut number: Vec<u32> = (0..persons as u32).collect();
    for i in (1..number.len()).rev() {
        number.swap(i, (splitmix(0x1D00 + i as u64) % (i as u64 + 1)) as usize);
    }

    // Every row as (rank << 32 | j), in the order written.
    let mut order: Vec<u64> = Vec::with_capacity(rows as usize);
    if sorted {
        let mut by_id = vec![0u32; persons as usize];
        for (rank, &n) in number.iter().enumerate() {
            by_id[n as usize] = rank as u32;
        }
        for &rank in &by_id {
            order.extend((0..counts[rank as usize]).map(|j| (rank as u64) << 32 | j));
        }
    } else {
        for (rank, &r) in counts.iter().enumerate() {
            order.extend((0..r).map(|j| (rank as u64) << 32 | j));
        }
        for i in (1..order.len()).rev() {
            order.swap(i, (splitmix(0x5EED_0000_0000 + i as u64) % (i as u64 + 1)) as usize);
        }
    }

    let mut out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
    writeln!(out, "id,value")?;
    for row in order {
        let (rank, j) = ((row >> 32) as usize, row & 0xFFFF_FFFF);
        writeln!(out, "{},{}", base + number[rank] as u64, value(rank as u64, j, counts[rank]))?;
    }
    out.flush()
}
