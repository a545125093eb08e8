//! Contribution bounding (`--privacy-id`): the transformation between the scan and a query's
//! fold that keeps, of each person's rows, at most G `--by` groups, K_g rows in each and K rows
//! in all (`privacy::contribution` states what that buys).
//!
//! **Which rows are kept** depends only on a per-run key, the person's id and the multiset of
//! the person's rows, never on row order, on how the input was cut into parts, on memory or on
//! the noise: a row's rank is the keyed SipHash-1-3 (128 bits) of (id, the cells the query reads,
//! j), j counting earlier copies of the same cells of that person in sorted order; a group's
//! rank is the hash of (id, group label). A person keeps the G lowest-ranked groups, the K_g
//! lowest-ranked rows in each and the K lowest-ranked of those. With a key unknown to whoever
//! wrote the rows, every R-row person keeps a uniformly random K of them, and adding a person
//! changes no one else's rows. The key is fresh from the operating system each run, or derived
//! from the test seed (never drawn from the noise generator).
//!
//! **Memory.** The scan hands every row that passed `--where` to [`Bounded::row`], which keeps
//! the id and the cells the query reads, encoded, in one of [`BUCKETS`] buckets chosen by a hash
//! of the id, so a person's rows share a bucket. Past [`cap`] bytes held by all copies of the
//! fold together, the buckets are appended to temporary files (hash partitioning), and
//! [`Bounded::finish`] reads them back one at a time, splitting again any file larger than the
//! cap. A bucket is sorted by the keyed hash of the id, each person's rows chosen, and the kept
//! rows fed to the query's own fold, the buckets shared out among the input's threads and their
//! folds merged in bucket order. The in-memory and the spilled path, and any thread count, feed
//! the same rows; the order within a bucket may follow the input's, which the folds (exact sums
//! and counts) do not see. Only one person's rows must fit at once.

use std::io::{Read, Seek, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use siphasher::sip::SipHasher13;
use siphasher::sip128::{Hasher128, SipHasher13 as Sip128};

use serde::{Deserialize, Serialize};

use crate::data::cell::DecimalMark;
use crate::data::filter::passes;
use crate::data::route::{FilterList, GroupBy};
use crate::data::row::{key_of, text_cell, BadCell, Fold, Row};
use crate::data::scan::FOLD_BUDGET;
use crate::numeric::bins::OTHER;
use crate::privacy::unit::Bounds;

/// Hash partitions, in memory and on disk.
pub const BUCKETS: usize = 64;

/// The default for the rows held in memory before they spill, all copies together.
pub const DEFAULT_CAP: usize = 32 << 20;

/// A spilled file smaller than this is read whole whatever the cap (splitting it again would
/// cost more files than it saves memory).
const MIN_SPLIT: usize = 64 << 10;

/// Overrides [`DEFAULT_CAP`], in bytes (tests force the spill with a small one).
pub const CAP_VAR: &str = "DPSTAT_ID_MEMORY";

/// The cap on rows held in memory: [`CAP_VAR`] if it holds a number of bytes, else
/// [`DEFAULT_CAP`].
pub fn cap() -> usize {
    std::env::var(CAP_VAR).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_CAP)
}

/// What every copy of the fold shares: the columns, the bounds, the key and the spill files.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// The id columns (a composite id has several).
    pub ids: Vec<usize>,
    /// The columns the query reads, in increasing order: the only cells kept.
    pub keep: Vec<usize>,
    /// Applied before bounding: a person's kept rows are chosen among those that pass.
    pub filters: FilterList,
    /// `--by`: its column must be in `keep`.
    pub group: Option<GroupBy>,
    pub bounds: Bounds,
    pub key: [u8; 16],
    pub cap: usize,
    /// Threads that choose and replay the buckets after the scan (each holds its own copy of
    /// the inner fold, merged in bucket order).
    pub threads: usize,
    /// The file's decimal mark (`--decimal`): a replayed row's numbers are read with it.
    pub decimal: DecimalMark,
}

#[derive(Debug)]
struct Shared {
    plan: Plan,
    /// The keyed hash of an encoded id, set up once.
    id_hasher: SipHasher13,
    /// Bytes held in the buckets of all copies.
    held: AtomicUsize,
    /// One temporary file per bucket, once anything spilled; the first I/O error.
    spill: Mutex<Spill>,
    /// Keys found in the data (`--by COL --discover`): COL, whose keys ([`key_of`]) are the
    /// groups instead of `plan.group`'s public ones.
    found: Option<usize>,
    /// Persons who had rows dropped by the bounds (counted as they are chosen).
    truncated: AtomicU64,
}

#[derive(Debug, Default)]
struct Spill {
    files: Vec<std::fs::File>,
    error: Option<String>,
}

/// A fold that bounds each person's rows before `inner` sees them.
#[derive(Debug)]
pub struct Bounded<F> {
    shared: Arc<Shared>,
    /// The plan's bounds, or the K chosen after the scan.
    bounds: Bounds,
    buckets: Vec<Vec<u8>>,
    /// Bytes in this copy's buckets; `unreported` of them not yet added to the shared count
    /// (added in batches: one atomic per row would have the threads fight over it).
    held: usize,
    unreported: usize,
    /// The encoded id of the row being read.
    scratch: Vec<u8>,
    inner: F,
}

/// A bounded fold as a cluster executor sends it (`data::cluster`): the plan (with the run's
/// key: executors choose rows, never noise), the bounds, and every bucket's encoded rows, those
/// spilled to the temporary files included.
#[derive(Serialize)]
struct WireRef<'a, F> {
    plan: &'a Plan,
    found: Option<usize>,
    bounds: Bounds,
    buckets: Vec<Vec<u8>>,
    inner: &'a F,
}

#[derive(Deserialize)]
struct Wire<F> {
    plan: Plan,
    found: Option<usize>,
    bounds: Bounds,
    buckets: Vec<Vec<u8>>,
    inner: F,
}

impl<F: Serialize> Serialize for Bounded<F> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let mut buckets: Vec<Vec<u8>> = vec![Vec::new(); BUCKETS];
        {
            let mut spill = self.shared.spill.lock().map_err(|_| S::Error::custom(poisoned()))?;
            if let Some(e) = &spill.error {
                return Err(S::Error::custom(e));
            }
            for (bucket, file) in buckets.iter_mut().zip(&mut spill.files) {
                // Appends go on at the end, where reading leaves the file.
                file.rewind()
                    .and_then(|()| file.read_to_end(bucket))
                    .map_err(|e| S::Error::custom(read_error(&e)))?;
            }
        }
        for (bucket, held) in buckets.iter_mut().zip(&self.buckets) {
            bucket.extend_from_slice(held);
        }
        let wire = WireRef {
            plan: &self.shared.plan,
            found: self.shared.found,
            bounds: self.bounds,
            buckets,
            inner: &self.inner,
        };
        wire.serialize(s)
    }
}

impl<'de, F: Fold> Deserialize<'de> for Bounded<F> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Wire { mut plan, found, bounds, buckets, inner } = Wire::<F>::deserialize(d)?;
        if buckets.len() != BUCKETS {
            return Err(serde::de::Error::custom("a bounded fold of another bucket count"));
        }
        // On an executor the tasks are the parallelism, and a task may hold a fold for each of
        // the buckets: each spills past an eighth of the default cap.
        plan.threads = 1;
        plan.cap = plan.cap.min(DEFAULT_CAP / 8);
        let mut bounded = Bounded::grouping(plan, found, inner);
        bounded.bounds = bounds;
        let bytes = buckets.iter().map(Vec::len).sum();
        bounded.buckets = buckets;
        bounded.add_held(bytes);
        Ok(bounded)
    }
}

/// Bytes a copy holds before it adds them to the shared count.
const REPORT_EVERY: usize = 1 << 20;

impl<F: Clone> Clone for Bounded<F> {
    /// An empty copy for another part of the input (the scan clones only empty folds).
    fn clone(&self) -> Self {
        Bounded {
            shared: self.shared.clone(),
            bounds: self.bounds,
            buckets: vec![Vec::new(); BUCKETS],
            held: 0,
            unreported: 0,
            scratch: Vec::new(),
            inner: self.inner.clone(),
        }
    }
}

impl<F: Fold> Bounded<F> {
    /// `inner` reads full rows by their column numbers; it sees only the kept rows, with the
    /// cells of `plan.keep` and every other cell empty.
    pub fn new(plan: Plan, inner: F) -> Bounded<F> {
        Bounded::grouping(plan, None, inner)
    }

    /// [`Bounded::new`] for keys found in the data: the groups are the keys of column `found`
    /// (each cell's [`key_of`], as `query::discover` counts them), chosen per person by the same
    /// keyed rule as public groups; `plan.group` must be None. The inner fold sees each
    /// person's kept rows together, then [`Fold::person_end`].
    pub fn found_keys(mut plan: Plan, found: usize, inner: F) -> Bounded<F> {
        plan.keep.push(found);
        Bounded::grouping(plan, Some(found), inner)
    }

    fn grouping(mut plan: Plan, found: Option<usize>, inner: F) -> Bounded<F> {
        plan.keep.sort_unstable();
        plan.keep.dedup();
        let bounds = plan.bounds;
        let id_hasher = SipHasher13::new_with_key(&plan.key);
        let shared = Shared {
            plan,
            id_hasher,
            held: AtomicUsize::new(0),
            spill: Mutex::new(Spill::default()),
            found,
            truncated: AtomicU64::new(0),
        };
        Bounded {
            shared: Arc::new(shared),
            bounds,
            buckets: vec![Vec::new(); BUCKETS],
            held: 0,
            unreported: 0,
            scratch: Vec::new(),
            inner,
        }
    }

    /// Chooses every person's rows and folds them into the inner fold; returns it, or a cell
    /// the inner fold refused, or why the temporary files failed.
    pub fn finish(self) -> Result<F, Failure> {
        let inner = self.inner.clone();
        self.finish_into(inner)
    }

    /// As [`Bounded::finish`], into another fold (one built once the bounds were known: the
    /// statistic of `--max-rows-per-id auto` runs at an ε that depends on the K chosen).
    ///
    /// With [`Plan::threads`] above 1 the buckets are cut into that many consecutive runs, each
    /// chosen and replayed by its own thread into its own copy of `inner`, and the copies are
    /// merged in bucket order: the rows each copy sees are the same as in one pass, and a
    /// fold's merge of consecutive parts equals folding them in turn.
    pub fn finish_into<G: Fold>(self, inner: G) -> Result<G, Failure> {
        self.finish_counted(inner).map(|(fold, _)| fold)
    }

    /// [`Bounded::finish_into`], and how many persons had rows dropped by the bounds
    /// (`--count-truncated`).
    pub fn finish_counted<G: Fold>(mut self, inner: G) -> Result<(G, u64), Failure> {
        let threads = self.shared.plan.threads.clamp(1, BUCKETS);
        // Each thread holds a copy of the inner fold: a large one (quantile candidates by
        // groups) is replayed by one thread, as the scan reads it with one.
        let threads = if inner.heap_bytes().saturating_mul(threads) > FOLD_BUDGET { 1 } else { threads };
        let shared = self.shared.clone();
        let bounds = self.bounds;
        let spilled = self.spilled()?;
        if spilled {
            self.spill_all();
        }
        let per = BUCKETS.div_ceil(threads);
        let results = if !spilled {
            let mut buckets = std::mem::take(&mut self.buckets);
            in_parallel(&mut buckets, per, &shared, bounds, &inner, |bucket, chooser, fold| {
                chooser.bucket(bucket, fold).map_err(Failure::Cell)
            })
        } else {
            let mut spill = shared.spill.lock().map_err(|_| Failure::Temp(poisoned()))?;
            if let Some(e) = &spill.error {
                return Err(Failure::Temp(e.clone()));
            }
            in_parallel(&mut spill.files, per, &shared, bounds, &inner, |file, chooser, fold| {
                read_file(file, 1, &shared.plan, &mut |bytes| {
                    chooser.bucket(bytes, fold).map_err(Failure::Cell)
                })
            })
        };
        let mut results = results.into_iter();
        let mut whole = results.next().unwrap_or(Ok(inner))?;
        for part in results {
            whole.merge(part?);
        }
        Ok((whole, shared.truncated.load(Ordering::Relaxed)))
    }

    /// Whether anything went to the temporary files; their first error.
    fn spilled(&self) -> Result<bool, Failure> {
        let spill = self.shared.spill.lock().map_err(|_| Failure::Temp(poisoned()))?;
        match &spill.error {
            Some(e) => Err(Failure::Temp(e.clone())),
            None => Ok(!spill.files.is_empty()),
        }
    }

    /// How many persons have r rows, for r in 1..=`cap` (index r − 1), and more than `cap`
    /// (the last entry): the rows-per-person distribution `--max-rows-per-id auto` reads.
    pub fn rows_per_person(&mut self, cap: usize) -> Result<Vec<u64>, Failure> {
        let ids = self.shared.plan.ids.len();
        let mut counts = vec![0u64; cap + 1];
        self.traverse(&mut |bytes| {
            for_persons(bytes, ids, |rows: &mut [Rec]| {
                counts[rows.len().min(cap + 1) - 1] += 1;
                Ok(())
            })
            .map_err(Failure::Cell)
        })?;
        Ok(counts)
    }

    /// [`Bounded::finish_counted`] into the fold's own inner fold.
    pub fn finish_own(self) -> Result<(F, u64), Failure> {
        let inner = self.inner.clone();
        self.finish_counted(inner)
    }

    /// The plan (a cluster ships it with the fold).
    pub fn plan(&self) -> &Plan {
        &self.shared.plan
    }

    /// Bounds decided after the scan (`--max-rows-per-id auto`), instead of [`Plan::bounds`].
    pub fn set_bounds(&mut self, bounds: Bounds) {
        self.bounds = bounds;
    }

    /// Calls `visit` with the bytes of every bucket, in bucket order: from memory, or once
    /// anything spilled, from the temporary files (read again on every call).
    fn traverse(&mut self, visit: &mut dyn FnMut(&[u8]) -> Result<(), Failure>) -> Result<(), Failure> {
        if !self.spilled()? {
            return self.buckets.iter().try_for_each(|b| visit(b));
        }
        self.spill_all();
        let shared = self.shared.clone();
        let mut spill = shared.spill.lock().map_err(|_| Failure::Temp(poisoned()))?;
        if let Some(e) = &spill.error {
            return Err(Failure::Temp(e.clone()));
        }
        for file in &mut spill.files {
            read_file(file, 1, &shared.plan, visit)?;
        }
        Ok(())
    }

    /// Appends every bucket to its file; an error is kept for [`Bounded::finish`].
    fn spill_all(&mut self) {
        let Ok(mut spill) = self.shared.spill.lock() else { return };
        if spill.error.is_none() {
            if spill.files.is_empty() {
                match (0..BUCKETS).map(|_| tempfile::tempfile()).collect::<std::io::Result<Vec<_>>>() {
                    Ok(files) => spill.files = files,
                    Err(e) => spill.error = Some(temp_error(&e)),
                }
            }
            let mut failed = None;
            for (bucket, file) in self.buckets.iter().zip(&mut spill.files) {
                if let Err(e) = file.write_all(bucket) {
                    failed = Some(temp_error(&e));
                    break;
                }
            }
            if failed.is_some() {
                spill.error = failed;
            }
        }
        // Kept allocated for the next rows: freeing and growing them again fragments the heap
        // (measured: a higher peak at the same cap).
        for bucket in &mut self.buckets {
            bucket.clear();
        }
        self.shared.held.fetch_sub(self.held - self.unreported, Ordering::Relaxed);
        (self.held, self.unreported) = (0, 0);
    }

    fn add_held(&mut self, bytes: usize) {
        self.held += bytes;
        self.unreported += bytes;
        if self.unreported >= REPORT_EVERY.min(self.shared.plan.cap) {
            let all = self.shared.held.fetch_add(self.unreported, Ordering::Relaxed) + self.unreported;
            self.unreported = 0;
            if all > self.shared.plan.cap {
                self.spill_all();
            }
        }
    }
}

/// Runs of `per` consecutive `items` (buckets, or their files), each on its own thread with its
/// own [`Chooser`] and copy of `inner`; the copies in order.
fn in_parallel<T: Send, G: Fold>(
    items: &mut [T],
    per: usize,
    shared: &Shared,
    bounds: Bounds,
    inner: &G,
    each: impl Fn(&mut T, &mut Chooser, &mut G) -> Result<(), Failure> + Sync,
) -> Vec<Result<G, Failure>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks_mut(per)
            .map(|run| {
                let (mut fold, each) = (inner.clone(), &each);
                scope.spawn(move || {
                    let mut chooser = Chooser::new(&shared.plan, &shared.truncated, bounds, shared.found);
                    run.iter_mut().try_for_each(|item| each(item, &mut chooser, &mut fold))?;
                    Ok(fold)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(Failure::Temp(poisoned())))).collect()
    })
}

/// Why [`Bounded::finish`] failed.
#[derive(Debug)]
pub enum Failure {
    /// The inner fold refused a kept row's cell (its row number is not known any more).
    Cell(BadCell),
    /// A temporary file could not be written or read.
    Temp(String),
}

fn poisoned() -> String {
    "internal error: a thread failed while holding the temporary files".to_string()
}

fn temp_error(e: &std::io::Error) -> String {
    format!(
        "writing rows to a temporary file (bounding rows per person past {} MiB; set TMPDIR to a \
         directory with room): {e}",
        cap() >> 20
    )
}

impl<F: Fold> Fold for Bounded<F> {
    #[inline]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        let plan = &self.shared.plan;
        if !passes(row, &plan.filters) {
            return Ok(());
        }
        let mut id = std::mem::take(&mut self.scratch);
        let hash = person_hash(&self.shared.id_hasher, &plan.ids, row, &mut id);
        let out = &mut self.buckets[bucket_at(hash, 0)];
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&hash.to_le_bytes());
        out.extend_from_slice(&id);
        out.extend_from_slice(&(row.width() as u32).to_le_bytes());
        for &i in &plan.keep {
            put(out, row.get(i));
        }
        let len = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        self.scratch = id;
        let bytes = out.len() - start;
        self.add_held(bytes);
        Ok(())
    }

    fn merge(&mut self, mut other: Self) {
        let moved = std::mem::take(&mut other.held);
        self.unreported += std::mem::take(&mut other.unreported);
        for (mine, theirs) in self.buckets.iter_mut().zip(std::mem::take(&mut other.buckets)) {
            if mine.is_empty() {
                *mine = theirs;
            } else {
                mine.extend_from_slice(&theirs);
            }
        }
        // The bytes moved from one copy to another: the shared count holds those reported.
        self.held += moved;
        if self.shared.held.load(Ordering::Relaxed) > self.shared.plan.cap {
            self.spill_all();
        }
    }

    fn widest_column(&self) -> Option<usize> {
        let plan = &self.shared.plan;
        let own = plan.ids.iter().chain(&plan.keep).chain(plan.filters.iter().map(|(i, _)| i)).copied();
        own.chain(self.inner.widest_column()).max()
    }

    fn heap_bytes(&self) -> usize {
        self.inner.heap_bytes()
    }
}

/// The keyed hash of a row's person: of its id cells, encoded into `id` (cleared first).
#[inline]
fn person_hash(hasher: &SipHasher13, ids: &[usize], row: &Row, id: &mut Vec<u8>) -> u64 {
    id.clear();
    for &i in ids {
        put(id, Some(text_cell(row, i)));
    }
    hasher.hash(id)
}

/// The bucket a row's person falls in (of [`BUCKETS`]), for the plan's key: a cluster groups
/// rows by it (`data::cluster`), so that each person's rows meet in one bucket's fold.
pub struct PersonBuckets {
    hasher: SipHasher13,
    ids: Vec<usize>,
    scratch: Vec<u8>,
}

impl PersonBuckets {
    pub fn new(ids: Vec<usize>, key: &[u8; 16]) -> PersonBuckets {
        PersonBuckets { hasher: SipHasher13::new_with_key(key), ids, scratch: Vec::new() }
    }

    pub fn bucket(&mut self, row: &Row) -> usize {
        bucket_at(person_hash(&self.hasher, &self.ids, row, &mut self.scratch), 0)
    }
}

/// Appends a cell: its length (u32, little-endian) and bytes; `u32::MAX` for a cell the row
/// does not have.
#[inline]
fn put(out: &mut Vec<u8>, cell: Option<&[u8]>) {
    match cell {
        Some(c) => {
            out.extend_from_slice(&(c.len() as u32).to_le_bytes());
            out.extend_from_slice(c);
        }
        None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
    }
}

/// The cell at the start of `bytes` and the rest; None for a missing cell.
fn take(bytes: &[u8]) -> (Option<&[u8]>, &[u8]) {
    let len = u32::from_le_bytes(bytes[..4].try_into().unwrap_or_default());
    if len == u32::MAX {
        return (None, &bytes[4..]);
    }
    let end = 4 + len as usize;
    (Some(&bytes[4..end]), &bytes[end..])
}

/// The bucket of a row whose id hashes to `hash`, at split `level`: six other bits of the
/// hash at every level, so that a file split again spreads its persons.
fn bucket_at(hash: u64, level: u8) -> usize {
    ((hash >> (6 * u32::from(level))) % BUCKETS as u64) as usize
}

/// One encoded row inside a bucket.
struct Rec<'a> {
    /// The keyed hash of the id: persons are sorted by it first.
    hash: u64,
    /// The encoded id (prefix-free: equal ids are equal bytes).
    id: &'a [u8],
    /// The row's width and its kept cells, encoded.
    body: &'a [u8],
}

/// Splits a bucket's bytes into its rows.
fn records(bytes: &[u8], ids: usize) -> Vec<Rec<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default()) as usize;
        let record = &bytes[at + 4..at + 4 + len];
        let hash = u64::from_le_bytes(record[..8].try_into().unwrap_or_default());
        let record = &record[8..];
        let mut rest = record;
        for _ in 0..ids {
            rest = take(rest).1;
        }
        let id_len = record.len() - rest.len();
        out.push(Rec { hash, id: &record[..id_len], body: rest });
        at += 4 + len;
    }
    out
}

/// Chooses each person's rows and replays them into a fold.
struct Chooser<'p> {
    plan: &'p Plan,
    /// Where persons with rows dropped are counted.
    truncated: &'p AtomicU64,
    bounds: Bounds,
    /// Where the `--by` column (public keys, or keys found in the data) is among the kept cells.
    by_slot: Option<usize>,
    /// Scratch for one replayed row.
    line: Vec<u8>,
    ends: Vec<usize>,
}

impl<'p> Chooser<'p> {
    fn new(plan: &'p Plan, truncated: &'p AtomicU64, bounds: Bounds, found: Option<usize>) -> Chooser<'p> {
        let by = plan.group.as_ref().map(|g| g.index).or(found);
        let by_slot = by.and_then(|index| plan.keep.iter().position(|&k| k == index));
        Chooser { plan, truncated, bounds, by_slot, line: Vec::new(), ends: Vec::new() }
    }

    /// A bucket's bytes.
    fn bucket<F: Fold>(&mut self, bytes: &[u8], fold: &mut F) -> Result<(), BadCell> {
        for_persons(bytes, self.plan.ids.len(), |rows| self.person(rows, fold))
    }

    /// One person's rows (sorted by their bytes): choose, then replay the kept ones.
    fn person<F: Fold>(&mut self, rows: &mut [Rec], fold: &mut F) -> Result<(), BadCell> {
        let plan = self.plan;
        if self.by_slot.is_none() && rows.len() <= self.bounds.rows as usize {
            // Nothing to choose: every row is kept (most persons, on most data), in the order
            // read; the folds are exact sums and counts, which no order changes.
            for r in rows.iter() {
                self.replay(r.body, fold)?;
            }
            fold.person_end();
            return Ok(());
        }
        // Copies of a row adjacent, so that j counts them whatever order they were read in.
        rows.sort_unstable_by(|a, b| a.body.cmp(b.body));
        let rows: &[Rec] = rows;
        let hasher = Sip128::new_with_key(&plan.key);
        // (rank, index) of every row; j counts the copies of a row before it.
        let mut ranked: Vec<(u128, usize)> = Vec::with_capacity(rows.len());
        let mut j = 0u64;
        for (i, r) in rows.iter().enumerate() {
            j = if i > 0 && rows[i - 1].body == r.body { j + 1 } else { 0 };
            let mut h = hasher;
            std::hash::Hasher::write(&mut h, b"row");
            std::hash::Hasher::write(&mut h, r.id);
            std::hash::Hasher::write(&mut h, r.body);
            std::hash::Hasher::write(&mut h, &j.to_le_bytes());
            ranked.push((h.finish128().as_u128(), i));
        }
        let bounds = &self.bounds;
        if let Some(slot) = self.by_slot {
            // The person's groups, each ranked by (id, label); keep the G lowest. A label is a
            // public key's (or `other`) or, with keys found in the data, the key itself.
            let labels: Vec<&[u8]> = rows.iter().map(|r| group_label(plan, r.body, slot)).collect();
            let mut distinct = labels.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let mut groups: Vec<(u128, &[u8])> = distinct
                .into_iter()
                .map(|label| {
                    let mut h = hasher;
                    std::hash::Hasher::write(&mut h, b"group");
                    std::hash::Hasher::write(&mut h, rows[0].id);
                    std::hash::Hasher::write(&mut h, label);
                    (h.finish128().as_u128(), label)
                })
                .collect();
            groups.sort_unstable();
            groups.truncate(bounds.groups as usize);
            // The kept labels in byte order, for the lookup of each row's.
            let mut kept: Vec<&[u8]> = groups.iter().map(|&(_, label)| label).collect();
            kept.sort_unstable();
            ranked.retain(|&(_, i)| kept.binary_search(&labels[i]).is_ok());
            ranked.sort_unstable();
            let mut taken = vec![0u32; kept.len()];
            ranked.retain(|&(_, i)| {
                let at = kept.binary_search(&labels[i]).unwrap_or_default();
                taken[at] += 1;
                taken[at] <= bounds.rows_per_group
            });
        } else {
            ranked.sort_unstable();
        }
        ranked.truncate(bounds.rows as usize);
        if ranked.len() < rows.len() {
            self.truncated.fetch_add(1, Ordering::Relaxed);
        }
        for &(_, i) in &ranked {
            self.replay(rows[i].body, fold)?;
        }
        fold.person_end();
        Ok(())
    }

    /// Feeds one kept row to `fold`: the kept cells at their columns, every other cell empty.
    fn replay<F: Fold>(&mut self, body: &[u8], fold: &mut F) -> Result<(), BadCell> {
        let width = u32::from_le_bytes(body[..4].try_into().unwrap_or_default()) as usize;
        let mut rest = &body[4..];
        self.line.clear();
        self.ends.clear();
        let mut keep = self.plan.keep.iter().peekable();
        for column in 0..width.min(self.plan.keep.last().map_or(0, |k| k + 1)) {
            if keep.peek() == Some(&&column) {
                keep.next();
                let (cell, after) = take(rest);
                rest = after;
                self.line.extend_from_slice(cell.unwrap_or_default());
            }
            self.ends.push(self.line.len());
            self.line.push(b',');
        }
        let row = Row::line(&self.line, 0, &self.ends, false, width, &[], 0).with_decimal(self.plan.decimal);
        fold.row(&row)
    }
}

/// A spilled bucket: read whole if it fits the cap (or cannot be split further), else split
/// by another hash of the id into files read one at a time.
fn read_file(
    file: &mut std::fs::File,
    level: u8,
    plan: &Plan,
    visit: &mut dyn FnMut(&[u8]) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let io = |e: String| Failure::Temp(e);
    let size = file.seek(std::io::SeekFrom::End(0)).map_err(|e| io(read_error(&e)))? as usize;
    file.rewind().map_err(|e| io(read_error(&e)))?;
    if size <= plan.cap.max(MIN_SPLIT) || level >= 4 {
        let mut bytes = Vec::with_capacity(size);
        file.read_to_end(&mut bytes).map_err(|e| io(read_error(&e)))?;
        return visit(&bytes);
    }
    let mut parts = (0..BUCKETS)
        .map(|_| tempfile::tempfile())
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| io(temp_error(&e)))?;
    let mut reader = std::io::BufReader::new(&mut *file);
    let mut writers: Vec<_> = parts.iter_mut().map(std::io::BufWriter::new).collect();
    let mut head = [0u8; 4];
    let mut record = Vec::new();
    loop {
        match reader.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(io(read_error(&e))),
        }
        let len = u32::from_le_bytes(head) as usize;
        record.resize(len, 0);
        reader.read_exact(&mut record).map_err(|e| io(read_error(&e)))?;
        let hash = u64::from_le_bytes(record[..8].try_into().unwrap_or_default());
        let w = &mut writers[bucket_at(hash, level)];
        w.write_all(&head).and_then(|()| w.write_all(&record)).map_err(|e| io(temp_error(&e)))?;
    }
    for w in writers {
        w.into_inner().map_err(|e| io(temp_error(e.error())))?;
    }
    for part in &mut parts {
        read_file(part, level + 1, plan, visit)?;
    }
    Ok(())
}

/// Calls `each` with every person's rows of a bucket's bytes, persons in the order of the keyed
/// hashes of their ids (then of the ids), each person's rows in the order they were read.
fn for_persons<'b>(
    bytes: &'b [u8],
    ids: usize,
    mut each: impl FnMut(&mut [Rec<'b>]) -> Result<(), BadCell>,
) -> Result<(), BadCell> {
    let mut recs = records(bytes, ids);
    // By the id's hash alone (a cheap key); rows of one hash are one person unless two ids
    // collide, which the id bytes then separate.
    recs.sort_unstable_by_key(|r| r.hash);
    let mut start = 0;
    while start < recs.len() {
        let hash = recs[start].hash;
        let end = start + recs[start..].iter().take_while(|r| r.hash == hash).count();
        let run = &mut recs[start..end];
        let one = run.iter().all(|r| r.id == run[0].id);
        if !one {
            run.sort_unstable_by(|a, b| a.id.cmp(b.id));
        }
        let mut at = 0;
        while at < run.len() {
            let to = if one {
                run.len()
            } else {
                at + run[at..].iter().take_while(|r| r.id == run[at].id).count()
            };
            each(&mut run[at..to])?;
            at = to;
        }
        start = end;
    }
    Ok(())
}

/// The label of the group of an encoded row whose group cell is in `slot`: its public key's
/// (`other` for a cell not listed), or without public keys the key the cell counts under.
fn group_label<'a>(plan: &'a Plan, body: &'a [u8], slot: usize) -> &'a [u8] {
    let cell = cell_at(body, slot).unwrap_or_default().trim_ascii();
    match &plan.group {
        // A closed list's imputed row counts under the key it is imputed to: its person's rows
        // in that group are bounded together. A refused or dropped row keeps `other`, a group
        // no release holds (its rows are then refused or dropped by the route).
        Some(g) => match g.keys.slot(cell) {
            Ok(Some(i)) => g.keys.label(i).as_bytes(),
            _ => OTHER.as_bytes(),
        },
        None => key_of(cell),
    }
}

/// The kept cell in `slot` of an encoded body.
fn cell_at(body: &[u8], slot: usize) -> Option<&[u8]> {
    let mut rest = &body[4..];
    for _ in 0..slot {
        rest = take(rest).1;
    }
    take(rest).0
}

fn read_error(e: &std::io::Error) -> String {
    format!("reading rows back from a temporary file: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::filter::Test;
    use crate::numeric::bins::Keys;
    use csv::ByteRecord;

    /// The rows it is fed, as `column 1, column 2` texts, in order.
    #[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
    struct Seen(Vec<String>);

    impl Fold for Seen {
        fn row(&mut self, row: &Row) -> Result<(), BadCell> {
            let cell = |i| String::from_utf8_lossy(row.get(i).unwrap_or(b"?")).into_owned();
            self.0.push(format!("{} {} {}", cell(0), cell(1), cell(2)));
            Ok(())
        }
        fn merge(&mut self, other: Self) {
            self.0.extend(other.0);
        }
        fn widest_column(&self) -> Option<usize> {
            Some(2)
        }
    }

    fn plan(bounds: Bounds, key: u8, cap: usize, group: bool) -> Plan {
        let group = group.then(|| GroupBy { index: 1, keys: Arc::new("a,b,c,d".parse::<Keys>().unwrap()) });
        Plan {
            ids: vec![0],
            keep: vec![2, 1, 0],
            filters: vec![],
            group,
            bounds,
            key: [key; 16],
            cap,
            threads: 1,
            decimal: Default::default(),
        }
    }

    /// The rows kept of `rows` (id, group, value), fed in `parts` consecutive parts to copies
    /// that are merged in order, as the parallel scan does.
    fn kept(plan: Plan, rows: &[[String; 3]], parts: usize) -> Vec<String> {
        let whole = Bounded::new(plan, Seen::default());
        let size = rows.len().div_ceil(parts.max(1)).max(1);
        let mut copies: Vec<_> = rows
            .chunks(size)
            .map(|chunk| {
                let mut copy = whole.clone();
                for r in chunk {
                    copy.row(&Row::record(&ByteRecord::from(r.to_vec()))).unwrap();
                }
                copy
            })
            .collect();
        let mut first = copies.remove(0);
        for c in copies {
            first.merge(c);
        }
        // The rows kept, in a fixed order: which rows, not the order they were fed in.
        let mut seen = first.finish().unwrap().0;
        seen.sort();
        seen
    }

    fn row(id: &str, group: &str, value: usize) -> [String; 3] {
        [id.to_string(), group.to_string(), value.to_string()]
    }

    /// People with 1 to 40 rows over four groups, some rows repeated.
    fn people(n: usize) -> Vec<[String; 3]> {
        let mut rows = vec![];
        for p in 0..n {
            for r in 0..(1 + (p * 7) % 40) {
                rows.push(row(&format!("p{p}"), ["a", "b", "c", "zz"][(p + r) % 4], (r * 3) % 11));
            }
        }
        rows
    }

    /// A deterministic shuffle.
    fn shuffled(rows: &[[String; 3]], seed: u64) -> Vec<[String; 3]> {
        let mut out = rows.to_vec();
        let mut x = seed | 1;
        for i in (1..out.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.swap(i, (x % (i as u64 + 1)) as usize);
        }
        out
    }

    /// The same rows reach the statistic whatever the row order, the cut into parts, the
    /// threads after the scan, and whether the rows stayed in memory or went through the temporary files (a
    /// cap of 0 spills at every row; 2 KiB spills now and then).
    #[test]
    fn the_rows_kept_depend_on_the_rows_alone() {
        let rows = people(120);
        for (bounds, group) in [
            (Bounds { rows: 3, groups: 1, rows_per_group: 3 }, false),
            (Bounds { rows: 5, groups: 2, rows_per_group: 2 }, true),
        ] {
            let want = kept(plan(bounds, 1, usize::MAX, group), &rows, 1);
            for (seed, parts, cap) in
                [(1, 1, usize::MAX), (2, 3, usize::MAX), (3, 4, 0), (4, 2, 2048), (5, 7, 0)]
            {
                for threads in [1, 2, 5] {
                    let mut p = plan(bounds, 1, cap, group);
                    p.threads = threads;
                    let got = kept(p, &shuffled(&rows, seed), parts);
                    assert_eq!(got, want, "seed {seed}, {parts} parts, cap {cap}, {threads} threads");
                }
            }
            let other_key = kept(plan(bounds, 2, usize::MAX, group), &rows, 1);
            assert_ne!(other_key, want, "another key keeps other rows");
        }
    }

    /// Spilled files larger than the cap are split again by another hash: same rows.
    #[test]
    fn a_large_spilled_bucket_is_split_again() {
        let rows: Vec<_> = (0..40_000).map(|i| row(&format!("person{}", i % 9000), "a", i % 13)).collect();
        let bounds = Bounds { rows: 2, groups: 1, rows_per_group: 2 };
        let want = kept(plan(bounds, 3, usize::MAX, false), &rows, 1);
        assert_eq!(kept(plan(bounds, 3, 1, false), &shuffled(&rows, 9), 3), want);
        let mut two = plan(bounds, 3, 1, false);
        two.threads = 2;
        assert_eq!(kept(two, &shuffled(&rows, 9), 3), want);
        assert_eq!(want.len(), 9000 * 2);
    }

    /// Neighbours: adding one person (1, K or 10,000 rows) adds at most K kept rows, at most
    /// K_g in a group and in at most G groups, and every other person keeps the same rows.
    #[test]
    fn one_person_moves_at_most_the_bounds_and_no_one_else() {
        let rows = people(60);
        let bounds = Bounds { rows: 4, groups: 2, rows_per_group: 3 };
        for group in [false, true] {
            let base = kept(plan(bounds, 5, usize::MAX, group), &rows, 1);
            for extra in [1, 4, 10_000] {
                let mut more = rows.clone();
                more.extend((0..extra).map(|i| row("new", ["a", "b", "c", "d", "q"][i % 5], i)));
                let with = kept(plan(bounds, 5, usize::MAX, group), &shuffled(&more, 3), 3);
                let (new, others): (Vec<String>, Vec<String>) =
                    with.into_iter().partition(|r| r.starts_with("new "));
                assert_eq!(others, base, "another person's rows changed");
                assert!(new.len() <= 4 && !new.is_empty(), "{extra} rows kept {}", new.len());
                if group {
                    let mut per = std::collections::HashMap::<String, u32>::new();
                    for r in &new {
                        // The group as routed: a key not listed is `other`.
                        let g = r.split(' ').nth(1).unwrap_or_default();
                        let g = if ["a", "b", "c", "d"].contains(&g) { g } else { "other" };
                        *per.entry(g.to_string()).or_default() += 1;
                    }
                    assert!(per.len() <= 2 && per.values().all(|&n| n <= 3), "{per:?}");
                }
            }
        }
    }

    /// A person with R distinct rows keeps each with probability K/R, and with repeated rows
    /// each copy counts: χ² over 3,000 keys (p > 0.001 at 3 or 1 degrees of freedom).
    #[test]
    fn each_row_is_kept_with_probability_k_over_r() {
        let rows: Vec<_> = (0..4).map(|v| row("x", "a", v)).collect();
        let bounds = Bounds { rows: 1, groups: 1, rows_per_group: 1 };
        let mut counts = [0f64; 4];
        let trials = 3000;
        for key in 0..trials {
            let mut p = plan(bounds, 0, usize::MAX, false);
            p.key = (key as u128).to_le_bytes();
            let got = kept(p, &rows, 1);
            let v: usize = got[0].split(' ').nth(2).unwrap().parse().unwrap();
            counts[v] += 1.0;
        }
        let expected = trials as f64 / 4.0;
        let chi2: f64 = counts.iter().map(|c| (c - expected).powi(2) / expected).sum();
        assert!(chi2 < 16.27, "chi2 {chi2} over {counts:?}");
        // Three copies of one row and one other: the copies are kept 3/4 of the time.
        let rows = vec![row("x", "a", 1), row("x", "a", 1), row("x", "a", 1), row("x", "a", 2)];
        let mut ones = 0f64;
        for key in 0..trials {
            let mut p = plan(bounds, 0, usize::MAX, false);
            p.key = (key as u128 + 7_000_000).to_le_bytes();
            ones += f64::from(u8::from(kept(p, &rows, 1)[0] == "x a 1"));
        }
        let (e1, e0) = (trials as f64 * 0.75, trials as f64 * 0.25);
        let chi2 = (ones - e1).powi(2) / e1 + (trials as f64 - ones - e0).powi(2) / e0;
        assert!(chi2 < 10.83, "copies kept {ones} of {trials}");
    }

    /// The persons with rows dropped: one person added moves the count by at most 1.
    #[test]
    fn the_count_of_people_cut_moves_by_one_person_at_most() {
        let cut = |rows: &[[String; 3]]| {
            let mut bounded = Bounded::new(
                plan(Bounds { rows: 3, groups: 1, rows_per_group: 3 }, 8, usize::MAX, false),
                Seen::default(),
            );
            for r in rows {
                bounded.row(&Row::record(&ByteRecord::from(r.to_vec()))).unwrap();
            }
            bounded.finish_counted(Seen::default()).unwrap().1
        };
        let rows = people(50);
        let truth = (0..50).filter(|p| 1 + (p * 7) % 40 > 3).count() as u64;
        assert_eq!(cut(&rows), truth);
        for extra in [1, 3, 4, 500] {
            let mut more = rows.clone();
            more.extend((0..extra).map(|i| row("new", "a", i)));
            assert_eq!(cut(&more), truth + u64::from(extra > 3), "{extra} rows");
        }
    }

    /// Filters run before the choice, so a person's kept rows are chosen among those that pass.
    #[test]
    fn filters_apply_before_the_choice() {
        let rows: Vec<_> = (0..50).map(|v| row("x", if v < 45 { "a" } else { "b" }, v)).collect();
        let mut p = plan(Bounds { rows: 3, groups: 1, rows_per_group: 3 }, 4, usize::MAX, false);
        p.filters = vec![(1, Test::Equals(b"b".to_vec().into()))];
        let got = kept(p, &rows, 2);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|r| r.starts_with("x b ")), "{got:?}");
    }
}
