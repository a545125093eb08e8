//! A floor for issue 36's speed target (a person-level mean within 3× of the row-level one):
//! what keeping at most K rows per person costs on this machine when every row must go through
//! the temporary files, with dpstat's own scan, against dpstat's row-level mean in the same
//! harness. A plain harness: `cargo bench --bench person_floor -- FILE [K] [--ids] [--rank-mix]`,
//! FILE an `id,value` CSV such as bench/gen_person.rs writes; prints medians of 5 runs.
//!
//! This is not dpstat's choice of rows and must not become it: each row keeps 16 bytes only, a
//! 64-bit hash of its id and its value's bits (parsed once, during the scan), so two persons
//! whose ids share the hash would be bounded as one (not private: DESIGN §3.10), and there is no
//! id text, no `--by`, no spelling of a cell and no statistic's fold behind it: a stripped-down
//! version of `data::bound`'s design (hash-partitioned buckets spilled past half the cap, each
//! sorted by person after the scan, a person's rows ranked by the keyed SipHash-1-3 of (person,
//! value, copy) and the K lowest kept in a heap), to show what that design costs at the least.
//! docs/PERFORMANCE.md has its figures.
//!
//! Two options bound what a cheaper version of the same design could reach:
//! - `--ids`: each row also keeps its id's bytes (ids of at most 8 bytes, in one word), and a
//!   person is the rows of one id, not of one hash (what DESIGN §3.10 needs: persons are never
//!   merged), as `data::bound` does, which also reads ids of any length;
//! - `--rank-mix`: a row's rank is an unkeyed multiply-xorshift of (person, value, copy)
//!   instead of SipHash. Not a pseudo-random function (a writer of rows could choose which are
//!   kept): only a lower bound on the cost of any rank.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dpstat::cli::values::Threads;
use dpstat::data::bound::{BUCKETS, DEFAULT_CAP};
use dpstat::data::cell::{parse_number_in, DecimalMark, InvalidPolicy, NumberCell};
use dpstat::data::input::Input;
use dpstat::data::route::Routed;
use dpstat::data::row::{text_cell, BadCell, Fold, Row};
use dpstat::data::scan::scan;
use dpstat::data::source::{ColumnRef, CsvOptions, Source};
use dpstat::numeric::bounds::{Bounds, Finite};
use dpstat::privacy::unit::Neighbours;
use dpstat::query::mean::{MeanFold, MeanSpec};
use serde::{Deserialize, Serialize};
use siphasher::sip128::{Hasher128, SipHasher13};
use twox_hash::XxHash3_64;

const RUNS: usize = 5;
/// A row as this floor keeps it: its id's hash, then its value's bits, little-endian; with
/// `--ids`, then its id's bytes (see [`Floor::row`]).
const RECORD: usize = 16;

/// What the floor keeps and ranks (see the module's comment).
#[derive(Clone, Copy, Debug, Default)]
struct Options {
    ids: bool,
    mix: bool,
}

/// What every copy of the fold shares.
#[derive(Debug, Default)]
struct Shared {
    held: AtomicUsize,
    spilled: AtomicBool,
    files: Mutex<Vec<File>>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Floor {
    #[serde(skip)]
    shared: Arc<Shared>,
    #[serde(skip)]
    buckets: Vec<Vec<u8>>,
    #[serde(skip)]
    unreported: usize,
    #[serde(skip)]
    ids: bool,
}

impl Floor {
    fn copy(&self) -> Floor {
        Floor {
            shared: self.shared.clone(),
            buckets: vec![Vec::new(); BUCKETS],
            unreported: 0,
            ids: self.ids,
        }
    }

    fn spill(&mut self) {
        let mut files = self.shared.files.lock().expect("no thread panicked");
        if files.is_empty() {
            *files = (0..BUCKETS).map(|_| tempfile::tempfile().expect("a temporary file")).collect();
            self.shared.spilled.store(true, Ordering::Relaxed);
        }
        for (bucket, file) in self.buckets.iter_mut().zip(files.iter_mut()) {
            file.write_all(bucket).expect("the temporary file takes the rows");
            bucket.clear();
        }
        self.shared.held.store(0, Ordering::Relaxed);
        self.unreported = 0;
    }

    fn report(&mut self) {
        let all = self.shared.held.fetch_add(self.unreported, Ordering::Relaxed) + self.unreported;
        self.unreported = 0;
        if all > DEFAULT_CAP / 2 {
            self.spill();
        }
    }
}

impl Fold for Floor {
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        let id = text_cell(row, 0);
        let value = parse_number_in(text_cell(row, 1).trim_ascii(), DecimalMark::Point);
        let (false, Some(value)) = (id.is_empty(), value) else { return Ok(()) };
        let hash = XxHash3_64::oneshot_with_seed(7, id);
        if self.buckets.is_empty() {
            self.buckets = vec![Vec::new(); BUCKETS];
        }
        let bucket = &mut self.buckets[(hash % BUCKETS as u64) as usize];
        let before = bucket.len();
        if self.ids {
            // The id in 8 bytes, zero-padded, its length in the hash's low byte (equal ids have
            // equal hashes): three words a row, no copy of a variable length. Longer ids would
            // cost more; the generated files' have a few digits.
            let mut word = [0u8; 8];
            let Some(padded) = word.get_mut(..id.len()) else { panic!("an id over 8 bytes") };
            padded.copy_from_slice(id);
            bucket.extend_from_slice(&(hash & !0xFF | id.len() as u64).to_le_bytes());
            bucket.extend_from_slice(&value.to_bits().to_le_bytes());
            bucket.extend_from_slice(&word);
        } else {
            bucket.extend_from_slice(&hash.to_le_bytes());
            bucket.extend_from_slice(&value.to_bits().to_le_bytes());
        }
        self.unreported += bucket.len() - before;
        if self.unreported >= 1 << 20 {
            self.report();
        }
        Ok(())
    }

    fn part_end(&mut self) {
        if self.shared.spilled.load(Ordering::Relaxed) {
            self.spill();
        }
    }

    fn merge(&mut self, other: Floor) {
        if other.buckets.iter().all(Vec::is_empty) {
            return;
        }
        let mut other = other;
        if self.shared.spilled.load(Ordering::Relaxed) {
            other.spill();
            return;
        }
        if self.buckets.is_empty() {
            self.buckets = vec![Vec::new(); BUCKETS];
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets) {
            mine.extend_from_slice(&theirs);
        }
        self.unreported += other.unreported;
        self.report();
    }

    fn widest_column(&self) -> Option<usize> {
        Some(1)
    }
}

/// Who a row belongs to, as the floor tells persons apart: its id's hash alone, or with
/// `--ids` the hash (the id's length in its low byte) and the id's bytes in a word.
trait Person: Copy + Ord {
    /// What a rank hashes before the value and the copy.
    fn write(self, hasher: &mut SipHasher13);
    /// What `--rank-mix` mixes with the value and the copy.
    fn word(self) -> u64;
}

impl Person for u64 {
    fn write(self, hasher: &mut SipHasher13) {
        std::hash::Hasher::write(hasher, &self.to_le_bytes());
    }
    fn word(self) -> u64 {
        self
    }
}

impl Person for (u64, u64) {
    fn write(self, hasher: &mut SipHasher13) {
        std::hash::Hasher::write(hasher, &self.0.to_le_bytes());
        std::hash::Hasher::write(hasher, &self.1.to_le_bytes());
    }
    fn word(self) -> u64 {
        self.0 ^ self.1.rotate_left(29)
    }
}

/// The sum and count of the rows kept of one bucket's records: every row of a person with at
/// most `k`, else the `k` of lowest rank.
fn choose(bytes: &[u8], k: usize, key: &SipHasher13, options: Options) -> (f64, u64) {
    let word = |r: &[u8], at: usize| u64::from_le_bytes(r[at..at + 8].try_into().expect("eight bytes"));
    if options.ids {
        let rows = bytes.chunks_exact(RECORD + 8).map(|r| ((word(r, 0), word(r, RECORD)), word(r, 8)));
        by_person(rows.collect(), k, key, options.mix)
    } else {
        let rows = bytes.chunks_exact(RECORD).map(|r| (word(r, 0), word(r, 8)));
        by_person(rows.collect(), k, key, options.mix)
    }
}

/// [`choose`] of rows read back as (person, value's bits).
fn by_person<P: Person>(mut rows: Vec<(P, u64)>, k: usize, key: &SipHasher13, mix: bool) -> (f64, u64) {
    rows.sort_unstable_by_key(|r| r.0);
    let (mut sum, mut kept) = (0.0, 0);
    let mut values = Vec::new();
    for person in rows.chunk_by(|a, b| a.0 == b.0) {
        if person.len() <= k {
            sum += person.iter().map(|r| f64::from_bits(r.1).clamp(0.0, 1000.0)).sum::<f64>();
            kept += person.len() as u64;
            continue;
        }
        values.clear();
        values.extend(person.iter().map(|r| r.1));
        values.sort_unstable();
        let (s, n) = lowest(&values, k, person[0].0, key, mix);
        (sum, kept) = (sum + s, kept + n);
    }
    (sum, kept)
}

/// The sum and count of the `k` lowest-ranked of one person's `values` (sorted, so that the
/// copies of a value are together and numbered in turn).
fn lowest(values: &[u64], k: usize, person: impl Person, key: &SipHasher13, mix: bool) -> (f64, u64) {
    let mut state = *key;
    person.write(&mut state);
    let mut heap = std::collections::BinaryHeap::with_capacity(k);
    let mut copy = 0u64;
    for (i, &value) in values.iter().enumerate() {
        copy = if i > 0 && values[i - 1] == value { copy + 1 } else { 0 };
        let rank = if mix {
            let x = (person.word() ^ value.rotate_left(17) ^ copy.rotate_left(43))
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
            u128::from(x ^ (x >> 29))
        } else {
            let mut h = state;
            std::hash::Hasher::write(&mut h, &value.to_le_bytes());
            std::hash::Hasher::write(&mut h, &copy.to_le_bytes());
            h.finish128().as_u128()
        };
        if heap.len() < k {
            heap.push((rank, value));
        } else if heap.peek().is_some_and(|&(top, _)| rank < top) {
            heap.pop();
            heap.push((rank, value));
        }
    }
    (heap.iter().map(|&(_, v)| f64::from_bits(v).clamp(0.0, 1000.0)).sum::<f64>(), heap.len() as u64)
}

fn open(path: &str, threads: usize) -> Input {
    let options = CsvOptions { delimiter: b',', has_header: true, decimal: Default::default() };
    Input::open(&Source::Path(path.into()), &options, false, threads).expect("the file opens")
}

/// One run of the floor: (the scan's time, the whole time, rows kept, their mean).
fn floor(path: &str, threads: usize, k: usize, options: Options) -> (Duration, Duration, u64, f64) {
    let start = Instant::now();
    let mut input = open(path, threads);
    let mut fold = Floor { ids: options.ids, ..Floor::default() }.copy();
    scan(&mut input, &mut fold).expect("the file scans");
    let scanned = start.elapsed();
    let spilled = fold.shared.spilled.load(Ordering::Relaxed);
    if spilled {
        fold.spill();
    }
    let mut files = std::mem::take(&mut *fold.shared.files.lock().expect("no thread panicked"));
    let mut held = std::mem::take(&mut fold.buckets);
    held.resize(BUCKETS, Vec::new());
    let key = SipHasher13::new_with_key(&[7; 16]);
    let per = BUCKETS.div_ceil(threads.max(1));
    let parts: Vec<(f64, u64)> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut files = files.iter_mut();
        for run in held.chunks_mut(per) {
            let mut mine: Vec<&mut File> =
                if spilled { files.by_ref().take(run.len()).collect() } else { Vec::new() };
            let key = &key;
            handles.push(scope.spawn(move || {
                let (mut sum, mut kept) = (0.0, 0);
                for (i, bucket) in run.iter_mut().enumerate() {
                    if let Some(file) = mine.get_mut(i) {
                        file.rewind().expect("the temporary file rewinds");
                        file.read_to_end(bucket).expect("the temporary file reads back");
                    }
                    let (s, n) = choose(bucket, k, key, options);
                    (sum, kept) = (sum + s, kept + n);
                }
                (sum, kept)
            }));
        }
        handles.into_iter().map(|h| h.join().expect("no thread panicked")).collect()
    });
    let (sum, kept) = parts.iter().fold((0.0, 0), |(s, n), &(ps, pn)| (s + ps, n + pn));
    (scanned, start.elapsed(), kept, sum / kept as f64)
}

/// One run of dpstat's row-level mean of the same column, exact (no noise): its time.
fn row_level(path: &str, threads: usize, spec: &MeanSpec) -> Duration {
    let start = Instant::now();
    let mut input = open(path, threads);
    let index = input.resolve(&ColumnRef::Name("value".into()), "--col").expect("a value column");
    let cell = NumberCell { index, invalid: InvalidPolicy::Error };
    let mut fold = Routed::new(MeanFold::new(spec.clone(), cell), vec![], None);
    scan(&mut input, &mut fold).expect("the file scans");
    std::hint::black_box(fold);
    start.elapsed()
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64()
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut options = Options::default();
    args.retain(|a| match a.as_str() {
        "--ids" => {
            options.ids = true;
            false
        }
        "--rank-mix" => {
            options.mix = true;
            false
        }
        _ => true,
    });
    let Some(path) = args.first() else {
        eprintln!(
            "usage: cargo bench --bench person_floor -- FILE [K] [--ids] [--rank-mix]   (FILE: id,value)"
        );
        std::process::exit(2);
    };
    let k = args.get(1).and_then(|k| k.parse().ok()).unwrap_or(10);
    let threads = Threads::all_cores().get();
    let eps = dpstat::privacy::noise::Mechanism::Laplace("1".parse().expect("epsilon"));
    let bounds = Bounds::new(Finite::from_f64(0.0).expect("0"), Finite::from_f64(1000.0).expect("1000"))
        .expect("bounds");
    let spec = MeanSpec::new(bounds, Neighbours::AddRemove, &eps).expect("mean spec");
    let (mut rows, mut scans, mut floors) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = (0, 0.0);
    // Interleaved, after a warm-up of each.
    row_level(path, threads, &spec);
    floor(path, threads, k, options);
    for _ in 0..RUNS {
        rows.push(row_level(path, threads, &spec));
        let (scanned, whole, kept, mean) = floor(path, threads, k, options);
        scans.push(scanned);
        floors.push(whole);
        last = (kept, mean);
    }
    let (row, whole) = (median(rows), median(floors));
    println!(
        "{path}: {threads} threads, K = {k}, {options:?}, median of {RUNS} interleaved runs after a warm-up"
    );
    println!("row-level mean (dpstat's fold)         {row:.3} s");
    println!(
        "floor: {}-byte rows, spilled past {} MiB {whole:.3} s ({:.2}× the row-level mean)",
        if options.ids { RECORD + 8 } else { RECORD },
        DEFAULT_CAP >> 21,
        whole / row
    );
    println!("  of which the scan                    {:.3} s", median(scans));
    println!("  rows kept {}, their mean {:.4}", last.0, last.1);
}
