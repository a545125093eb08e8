//! Contribution bounding (`--privacy-id`): the transformation between the scan and a query's
//! fold that keeps, of each person's rows, at most G `--by` groups, K_g rows in each and K rows
//! in all (`privacy::contribution` states what that buys).
//!
//! **Which rows are kept** depends only on a per-run key, the column names, the person's id and
//! the multiset of the person's values, never on row order, on how cells are spelled, on the
//! order of the columns, on how the input was cut into parts or laid out, on memory or on the
//! noise: a row's rank is the keyed SipHash-1-3 (128 bits) of (id, its values, j), the values
//! being the cells the query reads as every query reads them (`put_value`: a number, else the
//! trimmed text; the `--by` cell as its group's label) in the order of their columns' names, and
//! j counting the person's earlier copies of the same values; a group's rank is the hash of
//! (id, group label). A person keeps the G groups holding most of their rows (of equal counts
//! the lower-ranked; of a person with more groups than [`Plan::max_groups_counted`], the G
//! lowest-ranked), the K_g lowest-ranked rows in each and the K lowest-ranked of those. With
//! a key unknown to whoever wrote the rows, every R-row person keeps a uniformly random K of
//! them, and adding a person changes no one else's rows. The key is fresh from the operating
//! system each run, or derived from the test seed (never drawn from the noise generator). Rows
//! whose id is empty are left out (DESIGN §3.10).
//!
//! **Memory.** The scan hands every row that passed `--where` to [`Bounded::row`], which keeps
//! the id and the cells the query reads, encoded, in one of [`BUCKETS`] buckets chosen by a
//! hash of the id (`person_hash`), so a person's rows share a bucket; nothing is parsed there (a rank's values
//! are read back from the cells, for the persons ranked at all). Past half of [`cap`] bytes held
//! by all copies of the fold together (their room is up to twice that), the buckets are
//! appended to temporary files (hash partitioning), and [`Bounded::finish`] reads them back one
//! at a time; a file larger than a share of the cap is read a few times, each time keeping some
//! of its persons, or past four times split again. A bucket is sorted by
//! the hash of the id, each person's rows chosen (a person with at most K rows, in at most
//! G groups and K_g in each, keeps them all unranked), and the kept rows fed to the query's own
//! fold, the buckets shared out among the input's threads and their folds merged in bucket
//! order. A file that four splits by the id leave too large holds one heavy person (or a few):
//! it is read once to count each person's rows per group (so the groups kept are known), then
//! split by the hash of (id, values) into pieces, each narrowed to the at most K rows it may
//! keep (`narrow`), so no person is ever held whole and a person's state is at most K rows.
//! The in-memory and the spilled path, and any thread count, feed the same rows; the order
//! within a bucket may follow the input's, which the folds (exact sums and counts) do not see.

use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use siphasher::sip::SipHasher13;
use siphasher::sip128::{Hasher128, SipHasher13 as Sip128};
use twox_hash::XxHash3_64;

use serde::{Deserialize, Serialize};

use crate::data::cell::{parse_number_in, DecimalMark};
use crate::data::filter::passes;
use crate::data::parallel::BLOCK;
use crate::data::route::{FilterList, GroupBy};
use crate::data::row::{key_of, text_cell, BadCell, Fold, Row, Span};
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
/// [`DEFAULT_CAP`]; at most [`MAX_CAP`].
pub fn cap() -> usize {
    std::env::var(CAP_VAR).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_CAP).min(MAX_CAP)
}

/// The largest cap: the bytes read or held at once are at most half of it, so fewer than 2^32
/// records (each at least 9 bytes), which `index` numbers in 32 bits.
pub const MAX_CAP: usize = 16 << 30;

/// What every copy of the fold shares: the columns, the bounds, the key and the spill files.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// The id columns (a composite id has several).
    pub ids: Vec<usize>,
    /// The columns the query reads, in increasing order: the only cells kept.
    pub keep: Vec<usize>,
    /// The input's column names by index (the header, or the Parquet schema with the partition
    /// columns); empty without a header. A row's rank reads its kept values in the order of
    /// their columns' names, so a table whose columns come in another order (hive folders put
    /// the partition columns last) keeps the same rows.
    #[serde(default)]
    pub names: Vec<Vec<u8>>,
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
    /// With keys found in the data (`--max-keys`): how many distinct groups of one person are
    /// counted to find the G holding most of their rows. A person with more keeps the G
    /// lowest-ranked instead (`top_groups`), so that one person's counts are bounded by the
    /// flags, not by their rows. None with public groups, whose number the flags bound.
    #[serde(default)]
    pub max_groups_counted: Option<usize>,
}

#[derive(Debug)]
struct Shared {
    plan: Plan,
    /// The seed of an encoded id's hash ([`person_hash`]), derived once from the key.
    id_seed: u64,
    /// Bytes held in the buckets of all copies.
    held: AtomicUsize,
    /// Whether the temporary files exist (rows went to them).
    spilled: AtomicBool,
    /// One temporary file per bucket, once anything spilled; the first I/O error.
    spill: Mutex<Spill>,
    /// Keys found in the data (`--by COL --discover`): COL, whose keys ([`key_of`]) are the
    /// groups instead of `plan.group`'s public ones.
    found: Option<usize>,
    /// Persons who had rows dropped by the bounds (counted as they are chosen).
    truncated: AtomicU64,
    /// The slots of `plan.keep` in the order of their columns' names (then numbers): the order
    /// a row's values are written in for its rank.
    order: Vec<usize>,
    /// Where the `--by` column (public keys, or keys found in the data) is among the kept cells.
    by_slot: Option<usize>,
}

impl Shared {
    /// A row's values as its rank reads them, from its kept cells (`body`): each cell's
    /// [`put_value`], the `--by` cell as its group's label, in the order of their columns'
    /// names; appended to `out`. Only persons whose rows are ranked need them, so they are
    /// read here, not written with every row.
    fn put_values(&self, body: &[u8], out: &mut Vec<u8>) {
        for &slot in &self.order {
            let cell = cell_at(body, slot).unwrap_or_default();
            if Some(slot) == self.by_slot {
                put(out, Some(group_label(&self.plan, cell.trim_ascii())));
            } else {
                put_value(out, cell, self.plan.decimal);
            }
        }
    }
}

#[derive(Debug, Default)]
struct Spill {
    /// A file for each bucket once anything spilled, made when its bucket first spills: a
    /// cluster's fold of one bucket of persons (`data::cluster::persons`) has rows in one of
    /// them, and a task holds such a fold for each of its buckets.
    files: Vec<Option<std::fs::File>>,
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
        let buckets = self.all_rows().map_err(serde::ser::Error::custom)?;
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
        // On an executor the tasks are the parallelism, and a fold holds one bucket of persons
        // (`data::cluster::persons`): a task holds one for each of its buckets, four with
        // Ballista's 16 parts, so at a sixteenth of the cap each they hold about the cap
        // together. At a 64th, they spilled so often that a 4M-row workload took 1.1-2.1 s
        // where it takes 1.0 (docs/PERFORMANCE.md).
        plan.threads = 1;
        plan.cap = plan.cap.min(DEFAULT_CAP) / 16;
        let mut bounded = Bounded::grouping(plan, found, inner);
        bounded.bounds = bounds;
        let bytes = buckets.iter().map(Vec::len).sum();
        bounded.buckets = buckets;
        // Held, not reported: a decoded state is merged into another copy, whose count and cap
        // then decide. Spilled here, its rows would go to files of its own, which the merge
        // would leave behind.
        (bounded.held, bounded.unreported) = (bytes, bytes);
        Ok(bounded)
    }
}

/// The bytes held in the buckets past which they spill: half the cap, because a bucket grows
/// by doubling and is kept allocated, so its room reaches twice its bytes (one heavy person's
/// rows all fill one bucket).
fn spill_at(cap: usize) -> usize {
    cap / 2
}

/// A bucket's first allocation: about what one part of the input ([`BLOCK`]) puts in each.
const FIRST_ROOM: usize = 2 * BLOCK / BUCKETS;

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

impl<F> Bounded<F> {
    /// Every bucket's rows: those in the temporary files, then those held.
    fn all_rows(&self) -> Result<Vec<Vec<u8>>, String> {
        let mut buckets: Vec<Vec<u8>> = vec![Vec::new(); BUCKETS];
        {
            let mut spill = self.shared.spill.lock().map_err(|_| poisoned())?;
            if let Some(e) = &spill.error {
                return Err(e.clone());
            }
            for (bucket, file) in buckets.iter_mut().zip(&mut spill.files) {
                let Some(file) = file else { continue };
                // Appends go on at the end, where reading leaves the file.
                file.rewind().and_then(|()| file.read_to_end(bucket)).map_err(|e| read_error(&e))?;
            }
        }
        for (bucket, held) in buckets.iter_mut().zip(&self.buckets) {
            bucket.extend_from_slice(held);
        }
        Ok(buckets)
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
    pub fn found_keys(mut plan: Plan, found: usize, max_keys: usize, inner: F) -> Bounded<F> {
        plan.keep.push(found);
        plan.max_groups_counted = Some(max_keys);
        Bounded::grouping(plan, Some(found), inner)
    }

    fn grouping(mut plan: Plan, found: Option<usize>, inner: F) -> Bounded<F> {
        plan.keep.sort_unstable();
        plan.keep.dedup();
        let bounds = plan.bounds;
        let id_seed = id_seed(&plan.key);
        let name = |slot: usize| plan.names.get(plan.keep[slot]).map(Vec::as_slice);
        let mut order: Vec<usize> = (0..plan.keep.len()).collect();
        order.sort_by(|&a, &b| name(a).cmp(&name(b)).then(plan.keep[a].cmp(&plan.keep[b])));
        let by = plan.group.as_ref().map(|g| g.index).or(found);
        let by_slot = by.and_then(|index| plan.keep.iter().position(|&k| k == index));
        let shared = Shared {
            plan,
            id_seed,
            held: AtomicUsize::new(0),
            spilled: AtomicBool::new(false),
            spill: Mutex::new(Spill::default()),
            found,
            truncated: AtomicU64::new(0),
            order,
            by_slot,
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
            // The rows are all in the files now: the room kept for more is not needed.
            self.buckets = Vec::new();
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
                let Some(file) = file else { return Ok(()) };
                read_file(file, 1, &shared, &mut Choose::new(chooser, fold))?;
                // Emptied here, on this thread: freeing a file's cached pages when all 64 are
                // closed at the end took one thread a twentieth of the run.
                file.set_len(0).map_err(|e| Failure::Temp(read_error(&e)))
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
        let mut counts = vec![0u64; cap + 1];
        let ids = self.shared.plan.ids.len();
        self.traverse(&mut Count { ids, counts: &mut counts, persons: HashMap::new() })?;
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
    fn traverse(&mut self, visit: &mut dyn Visit) -> Result<(), Failure> {
        if !self.spilled()? {
            return self.buckets.iter().try_for_each(|b| visit.bucket(b));
        }
        self.spill_all();
        let shared = self.shared.clone();
        let mut spill = shared.spill.lock().map_err(|_| Failure::Temp(poisoned()))?;
        if let Some(e) = &spill.error {
            return Err(Failure::Temp(e.clone()));
        }
        for file in spill.files.iter_mut().flatten() {
            read_file(file, 1, &shared, visit)?;
        }
        Ok(())
    }

    /// Makes `other`, a copy of another plan's (decoded from a cluster's state), a copy of
    /// this one's: its rows, held or in its own temporary files, held and not yet counted,
    /// so that the merge moves them here and this copy's cap decides whether they spill.
    fn adopt(&self, other: &mut Self) {
        match other.all_rows() {
            Ok(buckets) => {
                let bytes = buckets.iter().map(Vec::len).sum();
                (other.buckets, other.held, other.unreported) = (buckets, bytes, bytes);
            }
            Err(e) => {
                if let Ok(mut spill) = self.shared.spill.lock() {
                    spill.error.get_or_insert(e);
                }
                (other.buckets, other.held, other.unreported) = (Vec::new(), 0, 0);
            }
        }
        other.shared = self.shared.clone();
    }

    /// Appends every bucket to its file; an error is kept for [`Bounded::finish`].
    fn spill_all(&mut self) {
        let Ok(mut spill) = self.shared.spill.lock() else { return };
        if spill.error.is_none() {
            if spill.files.is_empty() {
                spill.files = (0..BUCKETS).map(|_| None).collect();
                self.shared.spilled.store(true, Ordering::Relaxed);
            }
            let mut failed = None;
            for (bucket, file) in self.buckets.iter().zip(&mut spill.files) {
                if bucket.is_empty() {
                    continue;
                }
                let written = match file {
                    Some(file) => file.write_all(bucket),
                    None => tempfile::tempfile().and_then(|f| file.insert(f).write_all(bucket)),
                };
                if let Err(e) = written {
                    failed = Some(temp_error(&e));
                    break;
                }
            }
            if failed.is_some() {
                spill.error = failed;
            }
        }
        // Kept allocated for the next rows (freeing and growing them again fragments the heap),
        // but only up to this copy's even share of the bytes held: a copy that once held most
        // of them (one heavy person's bucket, or one thread's share before another's) would
        // otherwise keep that room while the other copies fill theirs.
        let share = spill_at(self.shared.plan.cap) / (BUCKETS * self.shared.plan.threads.max(1));
        for bucket in &mut self.buckets {
            bucket.clear();
            bucket.shrink_to(share);
        }
        self.shared.held.fetch_sub(self.held - self.unreported, Ordering::Relaxed);
        (self.held, self.unreported) = (0, 0);
    }

    fn add_held(&mut self, bytes: usize) {
        self.held += bytes;
        self.unreported += bytes;
        self.report();
    }

    /// Adds this copy's unreported bytes to the shared count once they are many, and spills
    /// past [`spill_at`].
    fn report(&mut self) {
        if self.unreported >= REPORT_EVERY.min(self.shared.plan.cap) {
            let all = self.shared.held.fetch_add(self.unreported, Ordering::Relaxed) + self.unreported;
            self.unreported = 0;
            if all > spill_at(self.shared.plan.cap) {
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
                    let mut chooser = Chooser::new(shared, bounds);
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
        let shared = &*self.shared;
        let plan = &shared.plan;
        if !passes(row, &plan.filters) {
            return Ok(());
        }
        let mut id = std::mem::take(&mut self.scratch);
        // A row without an id belongs to no one we can bound: it is left out (DESIGN §3.10).
        let Some((hash, one)) = person_hash(shared.id_seed, &plan.ids, row, &mut id) else {
            self.scratch = id;
            return Ok(());
        };
        let out = &mut self.buckets[bucket_at(hash, 0)];
        if out.capacity() == 0 {
            // A part's copy starts empty: its buckets grown from nothing by doubling took a
            // dozen moves each, and every store to fresh memory missed the cache.
            out.reserve(FIRST_ROOM);
        }
        let start = out.len();
        // The record's length, in one byte when it is under 128 (nearly always): written once
        // the record is, and widened then if it is not.
        out.push(0);
        // The low half of the id's hash: enough to sort persons by (ids that agree on it are
        // told apart by their bytes) and to split files by; four bytes a row fewer to spill.
        out.extend_from_slice(&(hash as u32).to_le_bytes());
        match one {
            Some(cell) => {
                put_len(out, cell.len());
                out.extend_from_slice(cell);
            }
            None => out.extend_from_slice(&id),
        }
        // The values a rank reads are not written: they are read back from the kept cells
        // (`Ranks::values`) for the few persons whose rows are ranked at all.
        put_len(out, row.width());
        for &i in &plan.keep {
            put_cell(out, row.get(i));
        }
        set_len(out, start);
        self.scratch = id;
        let bytes = out.len() - start;
        self.add_held(bytes);
        Ok(())
    }

    /// Once rows go to the temporary files, a part's rows go there from the thread that read
    /// them: left to the merge, one thread wrote every part's rows while the readers waited for
    /// it (about a tenth of a person-level mean's time on 10M rows).
    fn part_end(&mut self) {
        if self.held > 0 && self.shared.spilled.load(Ordering::Relaxed) {
            self.spill_all();
        }
    }

    fn merge(&mut self, mut other: Self) {
        if !Arc::ptr_eq(&self.shared, &other.shared) {
            self.adopt(&mut other);
        } else if other.held > 0 && self.shared.spilled.load(Ordering::Relaxed) {
            // Once rows go to the temporary files, another copy's buckets go straight there:
            // copying them into this one's first would move every row once more.
            other.spill_all();
        }
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
        // Those not yet reported are reported now if many: the scan merges many small copies
        // (each under the batch) into one, whose rows would otherwise never count.
        self.held += moved;
        self.report();
        if self.shared.held.load(Ordering::Relaxed) > spill_at(self.shared.plan.cap) {
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

/// The hash of a row's person, and its id's one cell (trimmed) when the id has one column;
/// None when an id cell is empty (a null in Parquet), for a row of no known person. Of one
/// cell, the hash is of its bytes; of a composite id, of the cells encoded into `id` (cleared
/// first: each cell's length ([`put_len`]) and bytes, so that the encoding is prefix-free),
/// where the one cell is not copied anywhere first.
///
/// XXH3 (64 bits) seeded from the run's key ([`id_seed`]): it decides only a person's bucket
/// and the order persons are read back in, never which rows are kept (ids that agree on it are
/// told apart by their bytes), so it need not be a keyed pseudo-random function like the ranks'
/// SipHash, only fast and the same on every machine of a cluster (its output is specified,
/// whatever the CPU). The seed keeps ids chosen to collide from meeting in one bucket without
/// the key; even then they would cost only time.
#[inline]
fn person_hash<'r>(
    seed: u64,
    ids: &[usize],
    row: &Row<'r>,
    id: &mut Vec<u8>,
) -> Option<(u64, Option<&'r [u8]>)> {
    if let [only] = ids {
        let cell = text_cell(row, *only);
        return (!cell.is_empty()).then(|| (XxHash3_64::oneshot_with_seed(seed, cell), Some(cell)));
    }
    id.clear();
    for &i in ids {
        let cell = text_cell(row, i);
        if cell.is_empty() {
            return None;
        }
        put_len(id, cell.len());
        id.extend_from_slice(cell);
    }
    Some((XxHash3_64::oneshot_with_seed(seed, id), None))
}

/// The seed of [`person_hash`]: the keyed SipHash of a fixed label, so that the seed reveals
/// nothing of the key the ranks use.
fn id_seed(key: &[u8; 16]) -> u64 {
    SipHasher13::new_with_key(key).hash(b"person buckets")
}

/// Writes the length of the record that starts at `start` (after its length byte, a
/// placeholder) into that byte, widening it in place when the length needs more ([`put_len`]).
#[inline]
fn set_len(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start - 1;
    if len < 0x80 {
        out[start] = len as u8;
    } else {
        widen_len(out, start, len);
    }
}

/// [`set_len`] of a record of 128 bytes or more.
#[cold]
fn widen_len(out: &mut Vec<u8>, start: usize, len: usize) {
    let mut head = Vec::with_capacity(5);
    put_len(&mut head, len);
    let extra = head.len() - 1;
    out.resize(out.len() + extra, 0);
    out.copy_within(start + 1..start + 1 + len, start + 1 + extra);
    out[start..start + head.len()].copy_from_slice(&head);
}

/// Appends a kept cell's value as the choice of rows reads it, from the cell's text: the
/// number every query reads from it (the one parser all formats share, under the file's
/// `--decimal` mark), `-0` as `0`; else its trimmed text. So `899`, `899.0`, `899,0` under
/// `--decimal ,` and a Parquet double 899 (whose text is the one that parses to its number:
/// the contract of [`Cells`](crate::data::row::Cells)) are one value, and a row's rank does not
/// depend on how its cells are spelled.
#[inline]
fn put_value(out: &mut Vec<u8>, cell: &[u8], mark: DecimalMark) {
    match value_number(cell, mark) {
        Some(bits) => out.extend_from_slice(&encoded_number(bits)),
        None => {
            out.push(TEXT);
            put(out, Some(cell.trim_ascii()));
        }
    }
}

/// The number a kept cell's value is (see [`put_value`]), as its bits with `-0` as `0`; None
/// when the value is text.
#[inline]
fn value_number(cell: &[u8], mark: DecimalMark) -> Option<u64> {
    parse_number_in(cell.trim_ascii(), mark).map(|x| if x == 0.0 { 0 } else { x.to_bits() })
}

/// [`put_value`]'s bytes for the number whose bits [`value_number`] gave.
#[inline]
fn encoded_number(bits: u64) -> [u8; 9] {
    let mut out = [NUMBER; 9];
    out[1..].copy_from_slice(&bits.to_le_bytes());
    out
}

/// The tags of [`put_value`]'s two kinds of value.
const NUMBER: u8 = 1;
const TEXT: u8 = 2;

/// The bucket a row's person falls in (of [`BUCKETS`]), for the plan's key: a cluster groups
/// rows by it (`data::cluster`), so that each person's rows meet in one bucket's fold.
pub struct PersonBuckets {
    seed: u64,
    ids: Vec<usize>,
    scratch: Vec<u8>,
}

impl PersonBuckets {
    pub fn new(ids: Vec<usize>, key: &[u8; 16]) -> PersonBuckets {
        PersonBuckets { seed: id_seed(key), ids, scratch: Vec::new() }
    }

    /// A row without an id (left out where it is folded) falls in the first bucket.
    pub fn bucket(&mut self, row: &Row) -> usize {
        bucket_at(person_hash(self.seed, &self.ids, row, &mut self.scratch).map_or(0, |(hash, _)| hash), 0)
    }
}

/// Appends a cell: its length (u32, little-endian) and bytes; `u32::MAX` for a cell the row
/// does not have. The encoding the ranks read text values and group labels in
/// ([`put_value`]).
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

/// Appends a number of at most 2^32 in LEB128 (7 bits a byte, the last byte under 128): the
/// lengths in a row's body, most of one byte, where [`put`]'s fixed four would be a sixth of
/// what goes through the temporary files.
#[inline]
fn put_len(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The number [`put_len`] wrote at the start of `bytes`, and the rest.
#[inline]
fn take_len(bytes: &[u8]) -> (usize, &[u8]) {
    // One byte, nearly always: read without the loop.
    if let [b @ 0..0x80, rest @ ..] = bytes {
        return (usize::from(*b), rest);
    }
    let (mut n, mut shift) = (0usize, 0);
    for (i, &b) in bytes.iter().enumerate() {
        n |= usize::from(b & 0x7F) << shift;
        if b < 0x80 {
            return (n, &bytes[i + 1..]);
        }
        shift += 7;
    }
    (n, &[])
}

/// Appends a kept cell to a row's body: 0 for a cell the row does not have, else its length
/// plus one ([`put_len`]) and its bytes.
#[inline]
fn put_cell(out: &mut Vec<u8>, cell: Option<&[u8]>) {
    match cell {
        Some(c) => {
            put_len(out, c.len() + 1);
            out.extend_from_slice(c);
        }
        None => out.push(0),
    }
}

/// The cell [`put_cell`] wrote at the start of `bytes`, and the rest.
#[inline]
fn take_cell(bytes: &[u8]) -> (Option<&[u8]>, &[u8]) {
    match take_len(bytes) {
        (0, rest) => (None, rest),
        (n, rest) => {
            let (cell, rest) = rest.split_at(n - 1);
            (Some(cell), rest)
        }
    }
}

/// The bucket of a row whose id hashes to `hash`, at split `level`: six other bits of the
/// hash at every level, so that a file split again spreads its persons.
fn bucket_at(hash: u64, level: u8) -> usize {
    ((hash >> (6 * u32::from(level))) % BUCKETS as u64) as usize
}

/// One encoded row inside a bucket: its length ([`put_len`]), the low half of its id's hash
/// (4 bytes), its id cells (each its length and bytes), the row's width ([`put_len`]) and its
/// kept cells ([`put_cell`]).
#[derive(Clone, Copy)]
struct Rec<'a> {
    /// The encoded id (prefix-free: equal ids are equal bytes).
    id: &'a [u8],
    /// The row's width and its kept cells, encoded.
    body: &'a [u8],
}

/// A bucket's rows: for each, its id's hash (high half) and its number (low half), and where
/// each starts (at its length) by number.
fn index(bytes: &[u8]) -> (Vec<u64>, Vec<usize>) {
    // Room for records of about 16 bytes (grown from nothing, the two were reallocated a
    // dozen times for each of a bucket's 256 parts).
    let room = bytes.len() / 16;
    let (mut keys, mut starts) = (Vec::with_capacity(room), Vec::with_capacity(room));
    let mut at = 0;
    while at < bytes.len() {
        let (len, rest) = take_len(&bytes[at..]);
        let hash = u64::from(u32::from_le_bytes(head4(rest)));
        keys.push(hash << 32 | starts.len() as u64);
        starts.push(at);
        at = bytes.len() - rest.len() + len;
    }
    (keys, starts)
}

/// The record whose length is at `at`.
fn record_at(bytes: &[u8], at: usize, ids: usize) -> Rec<'_> {
    let (len, rest) = take_len(&bytes[at..]);
    record(&rest[..len], ids)
}

/// One row's record (after its length).
fn record(record: &[u8], ids: usize) -> Rec<'_> {
    // After the id's hash, which [`index`] reads.
    let record = &record[4..];
    let mut rest = record;
    for _ in 0..ids {
        let (len, after) = take_len(rest);
        rest = &after[len..];
    }
    let id = &record[..record.len() - rest.len()];
    Rec { id, body: rest }
}

/// Sorts [`index`]'s keys, which come in the order of their numbers (the low half): by hash,
/// then by number, the order of one sort of the whole. A least-significant-digit radix sort of
/// the hash, a byte a pass and stable, so rows of one hash stay in the order read; a pass
/// whose byte every key shares is skipped (a part of [`for_persons`] shares its top byte, a
/// heavy person's piece all of them). A comparison sort of a part's integers was a fourteenth
/// of a person-level mean's instructions.
fn sort_by_hash(keys: &mut Vec<u64>) {
    if keys.len() < RADIX_FROM {
        keys.sort_unstable();
        return;
    }
    let mut other = vec![0u64; keys.len()];
    for shift in [32, 40, 48, 56] {
        let digit = |k: u64| (k >> shift) as usize & 0xFF;
        let mut at = [0usize; 256];
        for &k in keys.iter() {
            at[digit(k)] += 1;
        }
        if at.contains(&keys.len()) {
            continue;
        }
        let mut sum = 0;
        for slot in at.iter_mut() {
            (*slot, sum) = (sum, sum + *slot);
        }
        for &k in keys.iter() {
            let d = digit(k);
            other[at[d]] = k;
            at[d] += 1;
        }
        std::mem::swap(keys, &mut other);
    }
}

/// The fewest keys [`sort_by_hash`] sorts by radix: each pass clears, counts and sums a table
/// of 256, which costs more than a comparison sort of a few hundred integers (most of
/// [`for_persons`]'s parts hold about 60 rows).
const RADIX_FROM: usize = 512;

/// A row a person may keep: the rank of its group (0 without `--by`), its own rank, its body.
#[derive(Clone, Debug)]
struct Candidate<B> {
    group: u128,
    rank: u128,
    body: B,
}

/// The rows of each group among `cands` (a person's rows, one candidate each), by group rank.
fn group_counts<B>(cands: &[Candidate<B>]) -> Vec<(u128, u64)> {
    let mut groups: Vec<u128> = cands.iter().map(|c| c.group).collect();
    groups.sort_unstable();
    let mut out: Vec<(u128, u64)> = Vec::new();
    for g in groups {
        match out.last_mut() {
            Some((last, n)) if *last == g => *n += 1,
            _ => out.push((g, 1)),
        }
    }
    out
}

/// The groups a person keeps (sorted, for a binary search): the G holding most of the
/// person's rows, of equal counts the lower-ranked; of a person with more than `counted`
/// distinct groups (`None`: no limit), the G lowest-ranked, which [`GroupTally`] finds in
/// bounded memory. A function of the person's own rows and the key only (DESIGN §3.10 shows
/// why the bounds, and so the sensitivities, are unchanged).
fn top_groups(mut counts: Vec<(u128, u64)>, g: u32, counted: Option<usize>) -> Vec<u128> {
    if counted.is_some_and(|m| counts.len() > m) {
        counts.sort_unstable_by_key(|&(rank, _)| rank);
    } else {
        counts.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    }
    let mut top: Vec<u128> = counts.into_iter().take(g as usize).map(|(rank, _)| rank).collect();
    top.sort_unstable();
    top
}

/// One person's rows per group while a heavy person's file is read: each group's rank and
/// count by its label, up to `counted` distinct groups, and always the G lowest ranks seen,
/// which are what [`top_groups`] keeps of a person with more. So it holds at most `counted` + G
/// groups whatever the person's rows, and a group's rank is hashed once, not once a row
/// (until the person is past `counted`).
#[derive(Debug, Default)]
struct GroupTally {
    counts: HashMap<Vec<u8>, (u128, u64)>,
    /// More than `counted` distinct groups were seen: `counts` was dropped.
    past: bool,
    lowest: std::collections::BTreeSet<u128>,
}

impl GroupTally {
    /// One row in the group `label`, whose rank `rank` gives.
    fn add(&mut self, label: &[u8], rank: impl FnOnce() -> u128, g: u32, counted: Option<usize>) {
        if let Some((_, n)) = self.counts.get_mut(label) {
            *n += 1;
            return;
        }
        let rank = rank();
        self.lowest.insert(rank);
        if self.lowest.len() > g as usize {
            self.lowest.pop_last();
        }
        if self.past {
            return;
        }
        self.counts.insert(label.to_vec(), (rank, 1));
        if counted.is_some_and(|m| self.counts.len() > m) {
            self.counts = HashMap::new();
            self.past = true;
        }
    }

    /// The groups kept, as [`top_groups`] finds them from all the counts.
    fn top(self, g: u32, counted: Option<usize>) -> Vec<u128> {
        if self.past {
            return self.lowest.into_iter().collect();
        }
        top_groups(self.counts.into_values().collect(), g, counted)
    }
}

/// Narrows one person's candidates to what they keep: with `top` (their groups kept) those
/// in it, the K'_g lowest-ranked in each; then the K lowest of those, sorted by rank.
///
/// Applied to any part of a person's rows and then to the union of what the parts kept (the
/// same `top`, found from all the rows first), it keeps what it keeps of all the rows at once:
/// a row among the K'_g lowest of its group is so in any part holding it, and a row dropped
/// as past the K lowest has K lower rows each among the lowest of its group so far, which
/// stays true as rows are added (a row displacing one of them in its group is lower still).
fn narrow<B>(cands: &mut Vec<Candidate<B>>, bounds: &Bounds, top: Option<&[u128]>) {
    if let Some(top) = top {
        cands.retain(|c| top.binary_search(&c.group).is_ok());
        cands.sort_unstable_by_key(|c| (c.group, c.rank));
        let per_group = bounds.rows_per_group.min(bounds.rows) as usize;
        let (mut group, mut taken) = (None, 0);
        cands.retain(|c| {
            if group != Some(c.group) {
                (group, taken) = (Some(c.group), 0);
            }
            taken += 1;
            taken <= per_group
        });
    }
    let k = bounds.rows as usize;
    if cands.len() > k {
        // The K lowest found without sorting them all (most persons ranked have many rows).
        cands.select_nth_unstable_by_key(k, |c| c.rank);
        cands.truncate(k);
    }
    cands.sort_unstable_by_key(|c| c.rank);
}

/// Row numbers `0..n` ordered so that the copies of each value (`value(i)`, a row's values as
/// its rank reads them) are adjacent, so that j counts them whatever order they were read in;
/// copies whose bodies differ (in spelling only) by body. Which values come first does not
/// matter: it orders rows by [`short_key`], and sorts by the bytes only a run of one key that
/// holds more than one value or body. On most rows that is a sort of integers, where sorting
/// by the bytes (a call to compare them at every step) was a third of a person-level mean.
/// Written to `order`, with where each value's run ends to `ends` (so that no one compares the
/// values again); both are cleared first, and kept by the caller across persons.
fn copies_adjacent<'v>(
    n: usize,
    value: impl Fn(usize) -> &'v [u8],
    body: impl Fn(usize) -> &'v [u8],
    order: &mut Vec<usize>,
    ends: &mut Vec<usize>,
) {
    copies_adjacent_by(n, value, body, short_key, order, ends)
}

/// [`copies_adjacent`] with the key given (a test gives one that every value shares).
fn copies_adjacent_by<'v>(
    n: usize,
    value: impl Fn(usize) -> &'v [u8],
    body: impl Fn(usize) -> &'v [u8],
    key: impl Fn(&[u8]) -> u64,
    order: &mut Vec<usize>,
    ends: &mut Vec<usize>,
) {
    // Sorted by the key's high half, rows of one high half in the order read (then checked
    // below like rows of one key): both in one integer, a sort of integers and not of pairs.
    // The rows are some of one index's records, which fit its 32-bit numbers ([`MAX_CAP`]).
    const LOW: u64 = u32::MAX as u64;
    debug_assert!(n <= 1 << 32);
    let mut keyed: Vec<u64> = (0..n).map(|i| key(value(i)) & !LOW | i as u64).collect();
    keyed.sort_unstable();
    order.clear();
    order.extend(keyed.iter().map(|&k| (k & LOW) as usize));
    ends.clear();
    let mut start = 0;
    while start < n {
        let high = keyed[start] & !LOW;
        let end = start + keyed[start..].iter().take_while(|&&k| k & !LOW == high).count();
        let run = &mut order[start..end];
        let first = run[0];
        if run[1..].iter().any(|&i| value(i) != value(first) || body(i) != body(first)) {
            run.sort_unstable_by(|&a, &b| value(a).cmp(value(b)).then(body(a).cmp(body(b))));
            // Keys that collide: the run holds several values, each a run of its own.
            ends.extend((1..run.len()).filter(|&w| value(run[w]) != value(run[w - 1])).map(|w| start + w));
        }
        ends.push(end);
        start = end;
    }
}

/// A value's bytes mixed into 64 bits (FxHash's step, eight bytes at a time): not keyed, as it
/// only orders rows so that copies meet; values that share a key are compared byte by byte.
fn short_key(value: &[u8]) -> u64 {
    const MIX: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(MIX);
    let mut chunks = value.chunks_exact(8);
    let mut h = step(0, value.len() as u64);
    for chunk in &mut chunks {
        h = step(h, u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    step(h, u64::from_le_bytes(tail))
}

/// Chooses each person's rows and replays them into a fold.
struct Chooser<'p> {
    shared: &'p Shared,
    plan: &'p Plan,
    /// Where persons with rows dropped are counted.
    truncated: &'p AtomicU64,
    bounds: Bounds,
    by_slot: Option<usize>,
    /// The key and the kept columns' names in the order their values are written: every
    /// row's rank starts from this state.
    row_hasher: Sip128,
    group_hasher: Sip128,
    /// Scratch for one replayed row: where its cells are in its body.
    cells: Vec<Span>,
    scratch: Scratch,
}

/// What [`Chooser::rank_rows`] keeps across persons: the values of one person's rows and where
/// each row's are, the rows in the order of their copies and where each value's run ends, and
/// what a rank hashes.
#[derive(Default)]
struct Scratch {
    values: Vec<u8>,
    spans: Vec<(usize, usize)>,
    order: Vec<usize>,
    ends: Vec<usize>,
    message: Vec<u8>,
    /// [`Chooser::rank_numbers`]: each row's number (its bits), and the rows sorted by it.
    numbers: Vec<u64>,
    keyed: Vec<u64>,
}

impl<'p> Chooser<'p> {
    fn new(shared: &'p Shared, bounds: Bounds) -> Chooser<'p> {
        let plan = &shared.plan;
        let mut row_hasher = Sip128::new_with_key(&plan.key);
        std::hash::Hasher::write(&mut row_hasher, b"row");
        for &slot in &shared.order {
            let name = plan.names.get(plan.keep[slot]).map_or(&[][..], Vec::as_slice);
            std::hash::Hasher::write(&mut row_hasher, &(name.len() as u32).to_le_bytes());
            std::hash::Hasher::write(&mut row_hasher, name);
        }
        let mut group_hasher = Sip128::new_with_key(&plan.key);
        std::hash::Hasher::write(&mut group_hasher, b"group");
        Chooser {
            shared,
            plan,
            truncated: &shared.truncated,
            bounds,
            by_slot: shared.by_slot,
            row_hasher,
            group_hasher,
            cells: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    /// A bucket's bytes.
    fn bucket<F: Fold>(&mut self, bytes: &[u8], fold: &mut F) -> Result<(), BadCell> {
        for_persons(bytes, self.plan.ids.len(), |rows| self.person(rows, fold))
    }

    /// Whether every one of a person's rows is kept, found without ranking them: at most K
    /// rows, and with `--by` at most K'_g in at most G groups.
    fn keeps_all(&self, rows: &[Rec]) -> bool {
        let n = rows.len();
        let Some(slot) = self.by_slot else { return n <= self.bounds.rows as usize };
        if n > self.bounds.rows.min(self.bounds.rows_per_group) as usize {
            return false;
        }
        if n <= self.bounds.groups as usize {
            return true;
        }
        let mut labels: Vec<&[u8]> = rows.iter().map(|r| self.label(r.body, slot)).collect();
        labels.sort_unstable();
        labels.dedup();
        labels.len() <= self.bounds.groups as usize
    }

    /// One person's rows: choose, then replay the kept ones.
    fn person<F: Fold>(&mut self, rows: &mut [Rec], fold: &mut F) -> Result<(), BadCell> {
        if self.keeps_all(rows) {
            // Nothing to choose (most persons, on most data): every row is kept, in the order
            // read; the folds are exact sums and counts, which no order changes.
            for r in rows.iter() {
                self.replay(r.body, fold)?;
            }
            fold.person_end();
            return Ok(());
        }
        if self.by_slot.is_none() {
            let kept = self.lowest(rows, self.bounds.rows as usize);
            if kept.len() < rows.len() {
                self.truncated.fetch_add(1, Ordering::Relaxed);
            }
            for body in kept {
                self.replay(body, fold)?;
            }
            fold.person_end();
            return Ok(());
        }
        let mut cands = self.candidates(rows, None);
        let counted = self.plan.max_groups_counted;
        let top = self.by_slot.map(|_| top_groups(group_counts(&cands), self.bounds.groups, counted));
        narrow(&mut cands, &self.bounds, top.as_deref());
        if cands.len() < rows.len() {
            self.truncated.fetch_add(1, Ordering::Relaxed);
        }
        for c in &cands {
            self.replay(c.body, fold)?;
        }
        fold.person_end();
        Ok(())
    }

    /// The label of the group of a row's kept cells.
    fn label<'b>(&self, body: &'b [u8], slot: usize) -> &'b [u8]
    where
        'p: 'b,
    {
        group_label(self.plan, cell_at(body, slot).unwrap_or_default().trim_ascii())
    }

    /// The rank of a group: the keyed hash of (id, group label), the id encoded as its record
    /// holds it (each cell's length, then its bytes: no id is a prefix of another).
    fn group_rank(&self, id: &[u8], label: &[u8]) -> u128 {
        let mut g = self.group_hasher;
        std::hash::Hasher::write(&mut g, id);
        std::hash::Hasher::write(&mut g, label);
        g.finish128().as_u128()
    }

    /// Every row of one person as a candidate ([`Chooser::rank_rows`]).
    fn candidates<'r>(
        &mut self,
        rows: &[Rec<'r>],
        seen: Option<&mut HashMap<Vec<u8>, u64>>,
    ) -> Vec<Candidate<&'r [u8]>> {
        let mut out = Vec::with_capacity(rows.len());
        self.rank_rows(rows, seen, |group, rank, i| out.push(Candidate { group, rank, body: rows[i].body }));
        out
    }

    /// The `k` lowest-ranked of one person's rows ([`Chooser::rank_rows`]), by rank: what
    /// [`narrow`] keeps of [`Chooser::candidates`] without `--by`, found in a heap of `k` as the
    /// ranks come, not by collecting every row (a ranked person has tens of rows for K of them).
    fn lowest<'r>(&mut self, rows: &[Rec<'r>], k: usize) -> Vec<&'r [u8]> {
        // At most the rows' number: K comes from a flag (and a person ranked has more rows).
        let mut heap = std::collections::BinaryHeap::with_capacity(k.min(rows.len()));
        self.rank_rows(rows, None, |_, rank, i| {
            if heap.len() < k {
                heap.push((rank, i));
            } else if heap.peek().is_some_and(|&(top, _)| rank < top) {
                heap.pop();
                heap.push((rank, i));
            }
        });
        heap.into_sorted_vec().into_iter().map(|(_, i)| rows[i].body).collect()
    }

    /// Ranks every row of one person, handing `each` its group's rank (0 without `--by`), its
    /// own rank and its number in `rows`. A row's rank is the keyed hash of (id, its values,
    /// j), j numbering the copies of the same values from 0, or with `seen` (by id and values)
    /// from the copies counted in earlier pieces of the person's rows; its group's rank is the
    /// hash of (id, group label).
    fn rank_rows(
        &mut self,
        rows: &[Rec<'_>],
        seen: Option<&mut HashMap<Vec<u8>, u64>>,
        mut each: impl FnMut(u128, u128, usize),
    ) {
        let one_value = self.by_slot.is_none() && self.shared.order.len() == 1;
        if seen.is_some() || !one_value || !self.rank_numbers(rows, &mut each) {
            self.rank_encoded(rows, seen, each);
        }
    }

    /// [`Chooser::rank_rows`] of a person each of whose rows holds one value, a number (the
    /// rows of most persons ranked, for a mean or a sum without `--by`): the same ranks of the
    /// same rows, with the copies of a value found by sorting the numbers' bits, where
    /// [`Chooser::rank_encoded`] writes every row's values out, keys them and compares their
    /// bytes. False, having ranked nothing, when a row's value is not a number.
    fn rank_numbers(&mut self, rows: &[Rec<'_>], each: &mut impl FnMut(u128, u128, usize)) -> bool {
        let (slot, mark) = (self.shared.order[0], self.plan.decimal);
        let Scratch { numbers, keyed, order, .. } = &mut self.scratch;
        numbers.clear();
        keyed.clear();
        for (i, r) in rows.iter().enumerate() {
            let Some(bits) = value_number(cell_at(r.body, slot).unwrap_or_default(), mark) else {
                return false;
            };
            numbers.push(bits);
            // A sort of integers that puts equal numbers together (numbers that share the high
            // half are told apart below), each run in the order read.
            keyed.push(bits.wrapping_mul(0x9E37_79B9_7F4A_7C15) & !u64::from(u32::MAX) | i as u64);
        }
        keyed.sort_unstable();
        let mut person = self.row_hasher;
        std::hash::Hasher::write(&mut person, rows[0].id);
        let mut start = 0;
        while start < keyed.len() {
            let high = keyed[start] >> 32;
            let end = start + keyed[start..].iter().take_while(|&&k| k >> 32 == high).count();
            order.clear();
            order.extend(keyed[start..end].iter().map(|&k| k as u32 as usize));
            if order[1..].iter().any(|&i| numbers[i] != numbers[order[0]]) {
                // Numbers that share the high half: each number's copies together.
                order.sort_by_key(|&i| numbers[i]);
            }
            for copies in order.chunk_by_mut(|&a, &b| numbers[a] == numbers[b]) {
                rank_copies(&person, numbers[copies[0]], copies, rows, each);
            }
            start = end;
        }
        true
    }

    /// [`Chooser::rank_rows`] of any rows: each row's values written out as its rank reads them.
    fn rank_encoded(
        &mut self,
        rows: &[Rec<'_>],
        mut seen: Option<&mut HashMap<Vec<u8>, u64>>,
        mut each: impl FnMut(u128, u128, usize),
    ) {
        let mut s = std::mem::take(&mut self.scratch);
        s.values.clear();
        s.spans.clear();
        s.message.clear();
        for r in rows {
            let from = s.values.len();
            self.shared.put_values(r.body, &mut s.values);
            s.spans.push((from, s.values.len()));
        }
        let (arena, spans) = (&s.values, &s.spans);
        let value = |i: usize| &arena[spans[i].0..spans[i].1];
        copies_adjacent(rows.len(), value, |i| rows[i].body, &mut s.order, &mut s.ends);
        let message = &mut s.message;
        // What a rank hashes before j: the id, once for the person, then a run's values (the
        // hash is of the bytes in order, however they are cut).
        message.extend_from_slice(rows[0].id);
        let id_len = message.len();
        let mut person = self.row_hasher;
        std::hash::Hasher::write(&mut person, message);
        let mut last_group: Option<(&[u8], u128)> = None;
        let mut start = 0;
        for &end in &s.ends {
            let values = value(s.order[start]);
            let first = match seen.as_deref() {
                None => 0,
                Some(seen) => {
                    message.truncate(id_len);
                    message.extend_from_slice(values);
                    seen.get(&message[..]).copied().unwrap_or(0)
                }
            };
            let mut h = person;
            std::hash::Hasher::write(&mut h, values);
            for (j, &i) in (first..).zip(&s.order[start..end]) {
                let mut h = h;
                std::hash::Hasher::write(&mut h, &j.to_le_bytes());
                let group = match self.by_slot {
                    None => 0,
                    Some(slot) => {
                        let label = self.label(rows[i].body, slot);
                        match last_group {
                            Some((l, rank)) if l == label => rank,
                            _ => {
                                let rank = self.group_rank(&message[..id_len], label);
                                last_group = Some((label, rank));
                                rank
                            }
                        }
                    }
                };
                each(group, h.finish128().as_u128(), i);
            }
            if let Some(seen) = seen.as_deref_mut() {
                seen.insert(message.clone(), first + (end - start) as u64);
            }
            start = end;
        }
        self.scratch = s;
    }

    /// Feeds one kept row to `fold`: the kept cells at their columns, every other cell empty,
    /// read where they lie in the row's body.
    fn replay<F: Fold>(&mut self, body: &[u8], fold: &mut F) -> Result<(), BadCell> {
        let (width, mut rest) = take_len(body);
        self.cells.clear();
        let mut keep = self.plan.keep.iter().peekable();
        for column in 0..width.min(self.plan.keep.last().map_or(0, |k| k + 1)) {
            let mut span = Span::default();
            if keep.peek() == Some(&&column) {
                keep.next();
                let (cell, after) = take_cell(rest);
                rest = after;
                let end = body.len() - rest.len();
                span = Span { start: end - cell.map_or(0, <[u8]>::len), end };
            }
            self.cells.push(span);
        }
        let row = Row::spans(body, 0, &[], &self.cells, width, &[], 0).with_decimal(self.plan.decimal);
        fold.row(&row)
    }
}

/// The ranks of the copies of one number among a person's rows (`copies`, their numbers in
/// `rows`), from the person's hash state: (id, the number as [`put_value`] encodes it, j), j
/// numbering the copies in the order of their bodies when they are spelled differently.
fn rank_copies(
    person: &Sip128,
    bits: u64,
    copies: &mut [usize],
    rows: &[Rec<'_>],
    each: &mut impl FnMut(u128, u128, usize),
) {
    let first = rows[copies[0]].body;
    if copies[1..].iter().any(|&i| rows[i].body != first) {
        copies.sort_unstable_by(|&a, &b| rows[a].body.cmp(rows[b].body));
    }
    let mut h = *person;
    std::hash::Hasher::write(&mut h, &encoded_number(bits));
    for (j, &i) in (0u64..).zip(copies.iter()) {
        let mut h = h;
        std::hash::Hasher::write(&mut h, &j.to_le_bytes());
        each(0, h.finish128().as_u128(), i);
    }
}

/// What reads the buckets back: each whole, or, for a file too large to hold whose rows are
/// one heavy person's (or a few), in pieces.
trait Visit {
    fn bucket(&mut self, bytes: &[u8]) -> Result<(), Failure>;
    /// Before the pieces of such a file: the whole file, to read once more (the choice counts
    /// each person's rows per group there).
    fn heavy(&mut self, _file: &mut std::fs::File) -> Result<(), Failure> {
        Ok(())
    }
    /// A piece of such a file: all copies of a row of one person (same id and values) are in
    /// one piece, or in consecutive ones of which each but the first comes with `more`.
    fn piece(&mut self, bytes: &[u8], more: bool) -> Result<(), Failure>;
    /// After the last piece of such a file.
    fn pieces_end(&mut self) -> Result<(), Failure>;
}

/// The bytes of a spilled file read whole at most: a bucket's rows take about three times
/// their bytes while they are chosen (their copy in parts, the index by hash, one person's rows
/// at a time), on each thread; a heavy person's piece about nine times (its candidates: some
/// 120 bytes a row beside a row of about 18 bytes), which [`read_pieces`] reads at a third of
/// this.
fn read_limit(plan: &Plan) -> usize {
    (plan.cap / (3 * plan.threads.max(1))).max(MIN_SPLIT)
}

/// A spilled bucket: read whole if it fits [`read_limit`]; a few times larger, read that many
/// times, each time keeping the persons of some of the next hash's buckets ([`read_passes`]);
/// else split by another hash of the id into files read one at a time. Past four splits the
/// persons left are heavy ones, whose rows are read in pieces ([`read_pieces`]), so that no
/// person is ever held whole.
fn read_file(
    file: &mut std::fs::File,
    level: u8,
    shared: &Shared,
    visit: &mut dyn Visit,
) -> Result<(), Failure> {
    let size = file_size(file)?;
    let limit = read_limit(&shared.plan);
    if size <= limit {
        return visit.bucket(&read_all(file, size)?);
    }
    if level >= 4 {
        return read_heavy(file, shared, visit);
    }
    let passes = size.div_ceil(limit);
    if passes <= MAX_PASSES {
        return read_passes(file, (size, limit, passes), level, shared, visit);
    }
    let mut parts = split(file, |record| bucket_at(u64::from(u32::from_le_bytes(head4(record))), level))?;
    for part in &mut parts {
        // A split that moved every row to one part met a single heavy person (or ids whose
        // hashes agree): splitting by the id again would only copy the file again.
        if file_size(part)? == size {
            return read_heavy(part, shared, visit);
        }
        read_file(part, level + 1, shared, visit)?;
    }
    Ok(())
}

/// The most times [`read_file`] reads one file rather than split it: writing every row out
/// again (and reading it back) cost more than reading the file a few more times from the
/// cache; at the default cap a person-level mean of 20M rows spent over a second of system
/// time in that one extra write.
const MAX_PASSES: usize = 4;

/// [`read_file`] of a file of `size` bytes, `passes` times its read `limit`: read `passes`
/// times, the pass p keeping the records whose bucket at `level` (the hash bits a split would
/// use) is p modulo `passes`, so that each person's rows meet in one pass, which is chosen from
/// as a bucket. A pass whose rows pass the limit after all (persons of very unequal sizes) goes
/// to a file of its own, read as a split part is; one that holds every row of the file holds
/// heavy persons.
fn read_passes(
    file: &mut std::fs::File,
    (size, limit, passes): (usize, usize, usize),
    level: u8,
    shared: &Shared,
    visit: &mut dyn Visit,
) -> Result<(), Failure> {
    let io = |e: &std::io::Error| Failure::Temp(temp_error(e));
    for pass in 0..passes {
        file.rewind().map_err(|e| Failure::Temp(read_error(&e)))?;
        let mut held: Vec<u8> = Vec::with_capacity(limit.min(size / passes * 2));
        let mut over: Option<std::io::BufWriter<std::fs::File>> = None;
        each_record(file, &mut |head, record| {
            let hash = u64::from(u32::from_le_bytes(head4(record)));
            if bucket_at(hash, level) % passes != pass {
                return Ok(());
            }
            if over.is_none() && held.len() + head.len() + record.len() > limit {
                let mut out = std::io::BufWriter::new(tempfile::tempfile().map_err(|e| io(&e))?);
                out.write_all(&held).map_err(|e| io(&e))?;
                held = Vec::new();
                over = Some(out);
            }
            match over.as_mut() {
                Some(out) => out.write_all(head).and_then(|()| out.write_all(record)).map_err(|e| io(&e)),
                None => {
                    held.extend_from_slice(head);
                    held.extend_from_slice(record);
                    Ok(())
                }
            }
        })?;
        let Some(out) = over else {
            visit.bucket(&held)?;
            continue;
        };
        let mut part = out.into_inner().map_err(|e| io(e.error()))?;
        part.rewind().map_err(|e| io(&e))?;
        if file_size(&mut part)? == size {
            // Every row in one pass: one heavy person (or ids whose hashes agree), as a split
            // that moves every row to one part.
            return read_heavy(&mut part, shared, visit);
        }
        read_file(&mut part, level + 1, shared, visit)?;
    }
    Ok(())
}

/// A file of heavy persons: read once whole by [`Visit::heavy`], then in pieces.
fn read_heavy(file: &mut std::fs::File, shared: &Shared, visit: &mut dyn Visit) -> Result<(), Failure> {
    visit.heavy(file)?;
    file.rewind().map_err(|e| Failure::Temp(read_error(&e)))?;
    read_pieces(file, 0, shared, visit)?;
    visit.pieces_end()
}

/// A heavy person's file: split by the keyed hash of (id, values), so that the copies of a row
/// stay together, up to three times; a file still too large then holds a row with very many
/// copies, read in consecutive pieces.
fn read_pieces(
    file: &mut std::fs::File,
    level: u8,
    shared: &Shared,
    visit: &mut dyn Visit,
) -> Result<(), Failure> {
    let plan = &shared.plan;
    let size = file_size(file)?;
    let limit = read_limit(plan) / 3;
    if size <= limit {
        return visit.piece(&read_all(file, size)?, false);
    }
    if level < 3 {
        let mut hasher = SipHasher13::new_with_key(&plan.key);
        std::hash::Hasher::write(&mut hasher, b"pieces");
        let ids = plan.ids.len();
        let mut values = Vec::new();
        let mut parts = split(file, |record| {
            let rec = self::record(record, ids);
            values.clear();
            shared.put_values(rec.body, &mut values);
            let mut h = hasher;
            std::hash::Hasher::write(&mut h, rec.id);
            std::hash::Hasher::write(&mut h, &values);
            bucket_at(std::hash::Hasher::finish(&h), level)
        })?;
        for part in &mut parts {
            read_pieces(part, level + 1, shared, visit)?;
        }
        return Ok(());
    }
    let mut more = false;
    let mut piece = Vec::with_capacity(limit);
    each_record(file, &mut |head, record| {
        piece.extend_from_slice(head);
        piece.extend_from_slice(record);
        if piece.len() >= limit {
            visit.piece(&piece, std::mem::replace(&mut more, true))?;
            piece.clear();
        }
        Ok(())
    })?;
    if !piece.is_empty() {
        visit.piece(&piece, more)?;
    }
    Ok(())
}

fn head4(record: &[u8]) -> [u8; 4] {
    record[..4].try_into().unwrap_or_default()
}

fn file_size(file: &mut std::fs::File) -> Result<usize, Failure> {
    let size = file.seek(std::io::SeekFrom::End(0)).map_err(|e| Failure::Temp(read_error(&e)))?;
    file.rewind().map_err(|e| Failure::Temp(read_error(&e)))?;
    Ok(size as usize)
}

fn read_all(file: &mut std::fs::File, size: usize) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::with_capacity(size);
    file.read_to_end(&mut bytes).map_err(|e| Failure::Temp(read_error(&e)))?;
    Ok(bytes)
}

/// What [`each_record`] calls: with a record's length (its [`put_len`] bytes) and its bytes.
type EachRecord<'a> = dyn FnMut(&[u8], &[u8]) -> Result<(), Failure> + 'a;

/// Calls `each` with every record of a file (its length, then its bytes), in order: read a
/// block at a time and handed on where they lie (read a byte at a time and copied out, the
/// records of a file read several times cost more than the file's reads).
fn each_record(file: &mut std::fs::File, each: &mut EachRecord) -> Result<(), Failure> {
    let io = |e: std::io::Error| Failure::Temp(read_error(&e));
    let mut buf = vec![0u8; 1 << 16];
    let (mut start, mut filled) = (0, 0);
    loop {
        while let Some((head, len)) = next_record(&buf[start..filled]) {
            let at = start + head;
            each(&buf[start..at], &buf[at..at + len])?;
            start = at + len;
        }
        buf.copy_within(start..filled, 0);
        (start, filled) = (0, filled - start);
        if filled == buf.len() {
            // A record longer than the block: room for it.
            buf.resize(2 * buf.len(), 0);
        }
        match file.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(()),
            Ok(0) => return Err(io(std::io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
}

/// The length of the length ([`put_len`]) and of the record that start `bytes`, when the whole
/// record is there.
fn next_record(bytes: &[u8]) -> Option<(usize, usize)> {
    let head = bytes.iter().take(5).position(|&b| b < 0x80)? + 1;
    let len = take_len(&bytes[..head]).0;
    (bytes.len() >= head + len).then_some((head, len))
}

/// The records of a file written to [`BUCKETS`] temporary files, each to the one `by` names.
fn split(
    file: &mut std::fs::File,
    mut by: impl FnMut(&[u8]) -> usize,
) -> Result<Vec<std::fs::File>, Failure> {
    let io = |e: &std::io::Error| Failure::Temp(temp_error(e));
    let mut parts = (0..BUCKETS)
        .map(|_| tempfile::tempfile())
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| io(&e))?;
    {
        let mut writers: Vec<_> = parts.iter_mut().map(std::io::BufWriter::new).collect();
        each_record(file, &mut |head, record| {
            let w = &mut writers[by(record)];
            w.write_all(head).and_then(|()| w.write_all(record)).map_err(|e| io(&e))
        })?;
        for w in writers {
            w.into_inner().map_err(|e| io(e.error()))?;
        }
    }
    for part in &mut parts {
        part.rewind().map_err(|e| io(&e))?;
    }
    Ok(parts)
}

/// A heavy person's state while their pieces are read: the rows read, the groups they keep
/// (found by [`Visit::heavy`]), and the candidates kept so far (at most K).
#[derive(Default)]
struct Heavy {
    rows: u64,
    top: Option<Vec<u128>>,
    kept: Vec<Candidate<Vec<u8>>>,
}

/// [`Visit`] for the choice: whole buckets person by person; a heavy person's rows first
/// counted per group (to find the groups kept), then read in pieces, each narrowed to what it
/// may keep ([`narrow`]), so that at most K rows per person are held, and chosen from at the
/// end.
struct Choose<'c, 'p, G> {
    chooser: &'c mut Chooser<'p>,
    fold: &'c mut G,
    /// Per id: the state of each heavy person of the file.
    persons: HashMap<Vec<u8>, Heavy>,
    /// Copies counted per (id, values) in the current leaf of pieces.
    seen: HashMap<Vec<u8>, u64>,
}

impl<'c, 'p, G: Fold> Choose<'c, 'p, G> {
    fn new(chooser: &'c mut Chooser<'p>, fold: &'c mut G) -> Self {
        Choose { chooser, fold, persons: HashMap::new(), seen: HashMap::new() }
    }
}

impl<G: Fold> Visit for Choose<'_, '_, G> {
    fn bucket(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.chooser.bucket(bytes, self.fold).map_err(Failure::Cell)
    }

    /// With `--by`: each person's rows per group (by the group's rank), and the groups each
    /// person keeps; a person's tally holds at most `max_groups_counted` groups' counts.
    fn heavy(&mut self, file: &mut std::fs::File) -> Result<(), Failure> {
        let chooser = &*self.chooser;
        let Some(slot) = chooser.by_slot else { return Ok(()) };
        let ids = chooser.plan.ids.len();
        let (groups, counted) = (chooser.bounds.groups, chooser.plan.max_groups_counted);
        let mut tallies: HashMap<Vec<u8>, GroupTally> = HashMap::new();
        each_record(file, &mut |_, record| {
            let rec = self::record(record, ids);
            let label = chooser.label(rec.body, slot);
            if !tallies.contains_key(rec.id) {
                tallies.insert(rec.id.to_vec(), GroupTally::default());
            }
            if let Some(tally) = tallies.get_mut(rec.id) {
                tally.add(label, || chooser.group_rank(rec.id, label), groups, counted);
            }
            Ok(())
        })?;
        for (id, tally) in tallies {
            self.persons.entry(id).or_default().top = Some(tally.top(groups, counted));
        }
        Ok(())
    }

    fn piece(&mut self, bytes: &[u8], more: bool) -> Result<(), Failure> {
        if !more {
            self.seen.clear();
        }
        let Choose { chooser, persons, seen, .. } = self;
        let bounds = chooser.bounds;
        for_persons(bytes, chooser.plan.ids.len(), |rows| {
            let heavy = persons.entry(rows[0].id.to_vec()).or_default();
            heavy.rows += rows.len() as u64;
            let mut cands = chooser.candidates(rows, Some(&mut *seen));
            narrow(&mut cands, &bounds, heavy.top.as_deref());
            heavy.kept.extend(cands.into_iter().map(|c| Candidate {
                group: c.group,
                rank: c.rank,
                body: c.body.to_vec(),
            }));
            narrow(&mut heavy.kept, &bounds, heavy.top.as_deref());
            Ok(())
        })
        .map_err(Failure::Cell)
    }

    fn pieces_end(&mut self) -> Result<(), Failure> {
        let mut persons: Vec<_> = self.persons.drain().collect();
        persons.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (_, heavy) in persons {
            if (heavy.kept.len() as u64) < heavy.rows {
                self.chooser.truncated.fetch_add(1, Ordering::Relaxed);
            }
            for c in &heavy.kept {
                self.chooser.replay(&c.body, self.fold).map_err(Failure::Cell)?;
            }
            self.fold.person_end();
        }
        self.seen.clear();
        Ok(())
    }
}

/// [`Visit`] for the number of rows of each person (`--max-rows-per-id auto`).
struct Count<'c> {
    ids: usize,
    /// Persons with r rows at r − 1, the last entry past the cap.
    counts: &'c mut [u64],
    /// A heavy person's rows counted so far, per id.
    persons: HashMap<Vec<u8>, u64>,
}

impl Count<'_> {
    fn add(&mut self, rows: u64) {
        let last = self.counts.len() - 1;
        self.counts[(rows.max(1) - 1).min(last as u64) as usize] += 1;
    }
}

impl Visit for Count<'_> {
    fn bucket(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        for_persons(bytes, self.ids, |rows| {
            self.add(rows.len() as u64);
            Ok(())
        })
        .map_err(Failure::Cell)
    }

    fn piece(&mut self, bytes: &[u8], _: bool) -> Result<(), Failure> {
        let Count { ids, persons, .. } = self;
        for_persons(bytes, *ids, |rows| {
            *persons.entry(rows[0].id.to_vec()).or_default() += rows.len() as u64;
            Ok(())
        })
        .map_err(Failure::Cell)
    }

    fn pieces_end(&mut self) -> Result<(), Failure> {
        for (_, rows) in std::mem::take(&mut self.persons) {
            self.add(rows);
        }
        Ok(())
    }
}

/// Calls `each` with every person's rows of a bucket's bytes, persons in the order of the keyed
/// hashes of their ids (then of the ids), each person's rows in the order they were read.
///
/// A large bucket is first copied into 256 parts by the top byte of the hash, each then read on
/// its own: reading a sorted bucket's rows in place jumps about memory, a cache miss a row
/// (a fifth of the time of a person-level mean), where a part fits the cache.
fn for_persons(
    bytes: &[u8],
    ids: usize,
    mut each: impl FnMut(&mut [Rec<'_>]) -> Result<(), BadCell>,
) -> Result<(), BadCell> {
    if bytes.len() <= IN_CACHE {
        return persons_of(bytes, ids, &mut each);
    }
    // A record's part (its hash's top byte) and its length with its own.
    let part = |at: usize| {
        let (len, rest) = take_len(&bytes[at..]);
        (rest[3] as usize, bytes.len() - at - rest.len() + len)
    };
    let mut starts = [0usize; 257];
    let mut at = 0;
    while at < bytes.len() {
        let (b, len) = part(at);
        starts[b + 1] += len;
        at += len;
    }
    for i in 1..257 {
        starts[i] += starts[i - 1];
    }
    let mut parts = vec![0u8; bytes.len()];
    let mut to = starts;
    let mut at = 0;
    while at < bytes.len() {
        let (b, len) = part(at);
        let into = to[b];
        if len <= SHORT && into + SHORT <= starts[b + 1] && at + SHORT <= bytes.len() {
            // A short record copied as SHORT bytes (two moves, where a copy of its own length
            // was a call per record): the bytes past it are its part's next records', which
            // are written after it.
            parts[into..into + SHORT].copy_from_slice(&bytes[at..at + SHORT]);
        } else {
            parts[into..into + len].copy_from_slice(&bytes[at..at + len]);
        }
        to[b] += len;
        at += len;
    }
    (0..256).try_for_each(|b| persons_of(&parts[starts[b]..starts[b + 1]], ids, &mut each))
}

/// Records of at most this many bytes (most) are copied by [`for_persons`] as this many.
const SHORT: usize = 32;

/// The bucket bytes [`for_persons`] reads in place: about what a core's cache holds.
const IN_CACHE: usize = 256 << 10;

/// [`for_persons`] of bytes read in place.
fn persons_of(
    bytes: &[u8],
    ids: usize,
    each: &mut impl FnMut(&mut [Rec<'_>]) -> Result<(), BadCell>,
) -> Result<(), BadCell> {
    let (mut keys, starts) = index(bytes);
    // By the id's hash alone (a cheap key); rows of one hash are one person unless two ids
    // collide, which the id bytes then separate.
    sort_by_hash(&mut keys);
    let mut run: Vec<Rec<'_>> = Vec::new();
    let mut start = 0;
    while start < keys.len() {
        let hash = keys[start] >> 32;
        let end = start + keys[start..].iter().take_while(|&&k| k >> 32 == hash).count();
        run.clear();
        run.extend(keys[start..end].iter().map(|&k| record_at(bytes, starts[k as u32 as usize], ids)));
        let one = run[1..].iter().all(|r| r.id == run[0].id);
        if !one {
            // Stable: each person's rows stay in the order read.
            run.sort_by(|a, b| a.id.cmp(b.id));
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

/// The label of the group of a row whose trimmed group cell is `cell`: its public key's
/// (`other` for a cell not listed), or without public keys the key the cell counts under.
fn group_label<'a>(plan: &'a Plan, cell: &'a [u8]) -> &'a [u8] {
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
    let mut rest = take_len(body).1;
    for _ in 0..slot {
        rest = take_cell(rest).1;
    }
    take_cell(rest).0
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
            names: vec![],
            filters: vec![],
            group,
            bounds,
            key: [key; 16],
            cap,
            threads: 1,
            decimal: Default::default(),
            max_groups_counted: None,
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
                // As the parallel scan does, on the thread that read the part.
                copy.part_end();
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

    /// The rows kept of `rows` as a cluster keeps them (`data::cluster`): each part folded by
    /// a copy decoded from the plan's bytes, sent as bytes, decoded and merged into another
    /// decoded copy. An executor's copies spill past a small cap (the decoded plan's), so a
    /// large state spilled, and a decoded one would have, before it is merged.
    fn kept_on_a_cluster(plan: Plan, rows: &[[String; 3]], parts: usize) -> Vec<String> {
        let bytes = |b: &Bounded<Seen>| serde_json::to_vec(b).unwrap();
        let decoded = |bytes: &[u8]| -> Bounded<Seen> { serde_json::from_slice(bytes).unwrap() };
        let empty = bytes(&Bounded::new(plan, Seen::default()));
        let size = rows.len().div_ceil(parts.max(1)).max(1);
        let mut whole = decoded(&empty);
        for chunk in rows.chunks(size) {
            let mut part = decoded(&empty);
            for r in chunk {
                part.row(&Row::record(&ByteRecord::from(r.to_vec()))).unwrap();
            }
            whole.merge(decoded(&bytes(&part)));
        }
        let mut seen = whole.finish().unwrap().0;
        seen.sort();
        seen
    }

    /// A cluster keeps every row a local run keeps, also when its states are larger than an
    /// executor holds in memory (they used to spill to files of their own, left behind by the
    /// merge: rows were lost).
    #[test]
    fn states_decoded_and_merged_keep_the_same_rows() {
        let rows = shuffled(&people(400), 11);
        // Ungrouped: JSON, the format every build has, has no maps keyed by groups.
        let bounds = Bounds { rows: 5, groups: 1, rows_per_group: 5 };
        let want = kept(plan(bounds, 4, usize::MAX, false), &rows, 1);
        for (parts, cap) in [(1, usize::MAX), (3, usize::MAX), (2, 4096), (5, 0)] {
            let got = kept_on_a_cluster(plan(bounds, 4, cap, false), &rows, parts);
            assert_eq!(got, want, "{parts} parts, cap {cap}");
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

    /// A spilled file a few times its read limit is read that many times, each pass holding
    /// some of the persons (a heavy person's pass, too large after all, going to a file of its
    /// own): the same rows as when everything is held at once, with one and two threads.
    #[test]
    fn a_bucket_a_few_times_too_large_is_read_in_passes() {
        let mut rows: Vec<_> =
            (0..200_000).map(|i| row(&format!("person{}", i % 20_000), "a", i % 13)).collect();
        rows.extend((0..2_500).map(|i| row("heavy", "a", i % 7)));
        let bounds = Bounds { rows: 3, groups: 1, rows_per_group: 3 };
        let want = kept(plan(bounds, 4, usize::MAX, false), &rows, 1);
        // A read limit of 64 KiB, about half of each bucket's file.
        let mut small = plan(bounds, 4, 192 << 10, false);
        assert_eq!(read_limit(&small), 64 << 10);
        assert_eq!(kept(small.clone(), &shuffled(&rows, 5), 4), want);
        small.threads = 2;
        assert_eq!(kept(small, &shuffled(&rows, 6), 4), want);
        assert_eq!(want.len(), 20_000 * 3 + 3);
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

    /// Rows whose id is empty (or blank) are left out, so a person whose rows lack an id adds
    /// nothing: the neighbour with person B's rows added without ids keeps exactly the same rows.
    #[test]
    fn rows_without_an_id_are_left_out() {
        let mut rows = people(40);
        rows.extend((0..10).map(|i| row("", "a", i)));
        let bounds = Bounds { rows: 3, groups: 1, rows_per_group: 3 };
        let base = kept(plan(bounds, 6, usize::MAX, false), &rows, 1);
        assert!(base.iter().all(|r| !r.starts_with(' ')), "an id-less row was kept: {base:?}");
        assert_eq!(base, kept(plan(bounds, 6, usize::MAX, false), &people(40), 1));
        let mut more = rows.clone();
        more.extend((0..10).map(|i| row(if i % 2 == 0 { "" } else { "  " }, "b", 100 + i)));
        for cap in [usize::MAX, 0] {
            assert_eq!(kept(plan(bounds, 6, cap, false), &shuffled(&more, 2), 3), base, "cap {cap}");
        }
        // A composite id with one empty part is no id either.
        let mut two = plan(bounds, 6, usize::MAX, false);
        two.ids = vec![0, 1];
        let mut partial = people(5);
        partial.push(row("p1", "", 7));
        assert_eq!(kept(two.clone(), &partial, 1), kept(two, &people(5), 1));
    }

    /// The rank reads values, not their spelling, in the order of the columns' names: `899`,
    /// `899.0`, ` 899 ` and `8.99e2` keep the same rows, and so does the table with its columns
    /// in another order.
    #[test]
    fn spelling_and_column_order_change_no_rank() {
        let bounds = Bounds { rows: 2, groups: 2, rows_per_group: 2 };
        let rows: Vec<_> =
            (0..300).map(|i| row(&format!("p{}", i % 20), ["a", "b", "c"][i % 3], 890 + i % 13)).collect();
        let respelled: Vec<_> = rows
            .iter()
            .enumerate()
            .map(|(i, [id, g, v])| {
                let v: f64 = v.parse().unwrap();
                let v = match i % 4 {
                    0 => format!("{v:.1}"),
                    1 => format!(" {v} "),
                    2 => format!("{}e2", v / 100.0),
                    _ => v.to_string(),
                };
                [id.clone(), g.clone(), v]
            })
            .collect();
        // Kept rows as (id, group, number): what a fold sees.
        let numbers = |kept: Vec<String>| {
            let mut out: Vec<String> = kept
                .iter()
                .map(|r| {
                    let f: Vec<&str> = r.split(' ').filter(|s| !s.is_empty()).collect();
                    format!("{} {} {}", f[0], f[1], f[2].parse::<f64>().unwrap())
                })
                .collect();
            out.sort();
            out
        };
        let named = |order: [usize; 3]| {
            let mut p = plan(bounds, 9, usize::MAX, true);
            let names = ["id", "ward", "cost"];
            p.names = order.iter().map(|&c| names[c].as_bytes().to_vec()).collect();
            p
        };
        for group in [false, true] {
            let mut p = named([0, 1, 2]);
            if !group {
                p.group = None;
            }
            let want = numbers(kept(p.clone(), &rows, 1));
            assert_eq!(numbers(kept(p.clone(), &respelled, 2)), want, "respelled, grouped {group}");
            // The same table with its columns as (cost, id, ward).
            let moved: Vec<_> = rows.iter().map(|[id, g, v]| [v.clone(), id.clone(), g.clone()]).collect();
            let mut q = named([2, 0, 1]);
            q.ids = vec![1];
            q.keep = vec![0, 1, 2];
            q.group = p.group.clone().map(|g| GroupBy { index: 2, keys: g.keys });
            let back: Vec<String> = kept(q, &moved, 1)
                .iter()
                .map(|r| {
                    let f: Vec<&str> = r.split(' ').collect();
                    format!("{} {} {}", f[1], f[2], f[0])
                })
                .collect();
            assert_eq!(numbers(back), want, "columns moved, grouped {group}");
        }
    }

    /// One person too large for the read-back limit is chosen in pieces (split by the hash of
    /// id and values, a row of many copies read in consecutive pieces): the same rows, the same
    /// count of persons cut and of rows per person as when everything is held at once.
    #[test]
    fn a_heavy_person_is_chosen_in_pieces_with_the_same_rows() {
        let mut rows: Vec<_> =
            (0..24_000).map(|i| row("heavy", ["a", "b", "c", "d", "e"][i % 5], i % 4000)).collect();
        // A row with very many copies, and a few other persons.
        rows.extend((0..30_000).map(|_| row("heavy", "a", 7)));
        rows.extend((0..2_000).map(|i| row(&format!("light{}", i % 300), "b", i % 17)));
        let rows = shuffled(&rows, 11);
        for (bounds, group) in [
            (Bounds { rows: 50, groups: 1, rows_per_group: 50 }, false),
            (Bounds { rows: 40, groups: 3, rows_per_group: 20 }, true),
        ] {
            let counted = |cap: usize| {
                let mut b = Bounded::new(plan(bounds, 4, cap, group), Seen::default());
                for r in &rows {
                    b.row(&Row::record(&ByteRecord::from(r.to_vec()))).unwrap();
                }
                let per = b.rows_per_person(100).unwrap();
                let (mut seen, cut) = b.finish_counted(Seen::default()).unwrap();
                seen.0.sort();
                (seen.0, cut, per)
            };
            let want = counted(usize::MAX);
            assert_eq!(want.1, 1, "only the heavy person is cut");
            if !group {
                // About 50·30/54 of the 50 kept rows are copies of the repeated one.
                let copies = want.0.iter().filter(|r| r.as_str() == "heavy a 7").count();
                assert!((10..45).contains(&copies), "{copies} copies of the repeated row kept");
            }
            assert_eq!(counted(0), want, "grouped {group}");
        }
    }

    /// When G binds, a person keeps the G groups holding most of their rows (every key, in
    /// memory and through the temporary files), equal counts broken by the keyed group rank:
    /// each of three tied groups is kept under some key.
    #[test]
    fn when_g_binds_the_groups_with_most_rows_are_kept() {
        let bounds = Bounds { rows: 100, groups: 2, rows_per_group: 100 };
        let mut rows: Vec<_> = [("a", 10), ("b", 3), ("c", 7), ("d", 1)]
            .iter()
            .flat_map(|&(g, n)| (0..n).map(move |v| row("x", g, v)))
            .collect();
        rows.extend((0..30).map(|i| row(&format!("y{}", i % 6), ["a", "b", "c", "d"][i % 4], i)));
        let groups_of = |kept: &[String], id: &str| {
            let mut g: Vec<String> = kept
                .iter()
                .filter(|r| r.split(' ').next() == Some(id))
                .map(|r| r.split(' ').nth(1).unwrap_or_default().to_string())
                .collect();
            g.sort();
            g.dedup();
            g
        };
        for key in 0..20 {
            // Neighbours: without x, every other person keeps the same rows.
            let others: Vec<_> = rows.iter().filter(|r| r[0] != "x").cloned().collect();
            let without = kept(plan(bounds, key, usize::MAX, true), &others, 1);
            for cap in [usize::MAX, 0] {
                let got = kept(plan(bounds, key, cap, true), &shuffled(&rows, u64::from(key) + 1), 2);
                assert_eq!(groups_of(&got, "x"), ["a", "c"], "key {key}, cap {cap}");
                let (x, rest): (Vec<String>, Vec<String>) =
                    got.into_iter().partition(|r| r.starts_with("x "));
                assert_eq!((x.len(), &rest), (17, &without), "key {key}, cap {cap}");
            }
        }
        let tied: Vec<_> =
            ["a", "b", "c"].iter().flat_map(|&g| (0..5).map(move |v| row("t", g, v))).collect();
        let one = Bounds { rows: 100, groups: 1, rows_per_group: 100 };
        let mut seen = std::collections::BTreeSet::new();
        for key in 0..40 {
            let want = kept(plan(one, key, usize::MAX, true), &tied, 1);
            assert_eq!(kept(plan(one, key, 0, true), &shuffled(&tied, 3), 3), want, "key {key}");
            let g = groups_of(&want, "t");
            assert_eq!((g.len(), want.len()), (1, 5), "key {key}");
            seen.insert(g[0].clone());
        }
        assert_eq!(seen.len(), 3, "the tie is broken by the key: {seen:?}");
    }

    /// A person with more distinct groups than `max_groups_counted` (`--max-keys` with keys
    /// found in the data) keeps the G lowest-ranked, not the G holding most rows: in memory and
    /// through the temporary files alike, each pair under some key; at or under the limit the
    /// rule of counts stands.
    #[test]
    fn past_the_groups_counted_the_lowest_ranked_are_kept() {
        let bounds = Bounds { rows: 100, groups: 2, rows_per_group: 100 };
        // Past the 64 KiB a spilled file is read whole in: a heavy person, whose groups
        // `Visit::heavy` tallies.
        let rows: Vec<_> = [("a", 3000), ("b", 900), ("c", 2100), ("d", 300)]
            .iter()
            .flat_map(|&(g, n)| (0..n).map(move |v| row("x", g, v)))
            .collect();
        let groups_of = |kept: &[String]| {
            let mut g: Vec<String> =
                kept.iter().map(|r| r.split(' ').nth(1).unwrap_or_default().to_string()).collect();
            g.sort();
            g.dedup();
            g
        };
        let limited = |key: u8, cap: usize, counted: usize| {
            let mut p = plan(bounds, key, cap, true);
            p.max_groups_counted = Some(counted);
            kept(p, &shuffled(&rows, u64::from(key) + 1), 2)
        };
        let mut pairs = std::collections::BTreeSet::new();
        for key in 0..12 {
            let counted = limited(key, usize::MAX, 4);
            assert_eq!(groups_of(&counted), ["a", "c"], "key {key}: 4 groups are counted");
            assert_eq!(limited(key, 0, 4), counted, "key {key}: 4 groups through the files");
            let want = limited(key, usize::MAX, 3);
            assert_eq!(limited(key, 0, 3), want, "key {key}: through the files");
            let pair = groups_of(&want);
            assert_eq!(pair.len(), 2, "key {key}: {want:?}");
            pairs.insert(pair);
        }
        assert!(pairs.len() >= 3, "the pair follows the key's ranks, not the counts: {pairs:?}");
    }

    /// A tally holds at most `counted` + G groups however many it is given, and keeps the G
    /// lowest ranks once past `counted`.
    #[test]
    fn a_tally_of_many_groups_stays_bounded() {
        let mut tally = GroupTally::default();
        let ranks: Vec<u128> = (0..10_000u128).map(|i| (i * 7919) % 10_007 + 5).collect();
        for &r in ranks.iter().chain(&ranks) {
            tally.add(&r.to_le_bytes(), || r, 3, Some(100));
            assert!(tally.counts.len() <= 101 && tally.lowest.len() <= 3);
        }
        let mut lowest = ranks.clone();
        lowest.sort_unstable();
        assert_eq!(tally.top(3, Some(100)), lowest[..3]);
    }

    /// A record whose length takes more than one byte (a long id or cell) is read back whole,
    /// beside short ones: held, through the temporary files, and in pieces for a heavy person
    /// (600 rows of about 160 bytes, past the 64 KiB read whole).
    #[test]
    fn long_records_are_read_back_whole() {
        let long = |i: usize| format!("{i}{}", "x".repeat(150 + i % 300));
        // One person whose rows (a long id) fill a file past what is read whole.
        let mut rows: Vec<_> = (0..600).map(|i| row(&long(0), "a", i % 13)).collect();
        rows.extend((0..400).map(|i| [format!("p{}", i % 50), long(i), (i % 5).to_string()]));
        let rows = shuffled(&rows, 3);
        let every = Bounds { rows: 1000, groups: 1, rows_per_group: 1000 };
        let mut all: Vec<String> = rows.iter().map(|[a, b, c]| format!("{a} {b} {c}")).collect();
        all.sort();
        for cap in [usize::MAX, 2048, 0] {
            assert_eq!(kept(plan(every, 1, cap, false), &rows, 3), all, "cap {cap}");
        }
        let few = Bounds { rows: 4, groups: 1, rows_per_group: 4 };
        let want = kept(plan(few, 1, usize::MAX, false), &rows, 1);
        assert_eq!(want.len(), 4 + 50 * 4);
        for cap in [2048, 0] {
            assert_eq!(kept(plan(few, 1, cap, false), &rows, 2), want, "cap {cap}");
        }
    }

    /// The radix sort of an index's keys (numbers in order, hashes with shared bytes or not)
    /// is the sort of the whole.
    #[test]
    fn keys_sort_by_hash_then_number() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (n, mask) in [
            (10, u32::MAX),
            (RADIX_FROM - 1, u32::MAX),
            (RADIX_FROM, u32::MAX),
            (5000, 0xFF),
            (5000, 0x00FF_FF00),
            (3000, 0),
        ] {
            let mut keys: Vec<u64> = (0..n as u64).map(|i| (next() & u64::from(mask)) << 32 | i).collect();
            let mut want = keys.clone();
            want.sort_unstable();
            sort_by_hash(&mut keys);
            assert_eq!(keys, want, "{n} keys, mask {mask:x}");
        }
    }

    /// A length is read back as written, at every width.
    #[test]
    fn a_records_length_is_widened_in_place() {
        for len in [0, 1, 126, 127, 128, 300, 16_383, 16_384, 70_000] {
            let mut out = vec![9, 9];
            out.push(0);
            out.extend((0..len).map(|i| (i % 251) as u8));
            set_len(&mut out, 2);
            let (got, rest) = take_len(&out[2..]);
            assert_eq!((got, rest.len()), (len, len));
            assert!(rest.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            assert_eq!(&out[..2], &[9, 9]);
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

    /// A person whose rows each hold one number is ranked by [`Chooser::rank_numbers`]: the
    /// same ranks of the same rows as the encoded values give, with copies spelled several
    /// ways, -0 beside 0, and two numbers whose sort keys collide; a person with a value that
    /// is not a number is left to the encoded path, with nothing ranked.
    #[test]
    fn numbers_are_ranked_as_their_encoded_values() {
        // Two numbers whose sort keys share their high half (found by a search).
        let high = |x: f64| x.to_bits().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let (a, b) = (621.056331, 314.182827);
        assert_eq!(high(a), high(b));
        let mut rows = vec![];
        let mut add = |id: &str, v: String| rows.push([id.to_string(), "a".to_string(), v]);
        for i in 0..40 {
            add("p1", ["899", "899.0", " 899 ", "8.99e2", "7", "-0", "0", "0.0"][i % 8].to_string());
            add("p2", format!("{}", [a, b][i % 3 % 2]));
            add("p3", (i % 5).to_string());
        }
        add("p4", "12".to_string());
        add("p4", "n/a".to_string());
        let mut p = plan(Bounds { rows: 3, groups: 1, rows_per_group: 3 }, 5, usize::MAX, false);
        p.keep = vec![2];
        let mut bounded = Bounded::new(p, Seen::default());
        for r in &rows {
            bounded.row(&Row::record(&ByteRecord::from(r.to_vec()))).unwrap();
        }
        let mut chooser = Chooser::new(&bounded.shared, bounded.bounds);
        let mut persons = 0;
        for bytes in &bounded.buckets {
            for_persons(bytes, 1, |rows| {
                persons += 1;
                let mut numbers = vec![];
                let ranked =
                    chooser.rank_numbers(rows, &mut |g, rank, i| numbers.push((g, rank, rows[i].body)));
                let mut encoded = vec![];
                chooser.rank_encoded(rows, None, |g, rank, i| encoded.push((g, rank, rows[i].body)));
                if rows[0].id.ends_with(b"p4") {
                    assert!(!ranked && numbers.is_empty(), "{numbers:?}");
                } else {
                    assert!(ranked);
                    numbers.sort();
                    encoded.sort();
                    assert_eq!(numbers, encoded);
                }
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(persons, 4);
    }

    /// Copies of a value end up adjacent, spellings of it ordered by body, whatever the order
    /// read: with the real key and with one every value shares (so the bytes decide).
    #[test]
    fn copies_are_adjacent_even_when_keys_collide() {
        let values: Vec<&[u8]> = vec![b"b", b"a", b"long value past fifteen bytes", b"b", b"a", b"b"];
        let bodies: Vec<&[u8]> = vec![b"2", b"1.0", b"x", b"2", b"1", b"2.0"];
        let want: Vec<(&[u8], &[u8])> = {
            let mut all: Vec<_> = values.iter().copied().zip(bodies.iter().copied()).collect();
            all.sort();
            all
        };
        for constant in [false, true] {
            let key = |v: &[u8]| if constant { 7 } else { short_key(v) };
            let (mut order, mut ends) = (Vec::new(), vec![99]);
            copies_adjacent_by(values.len(), |i| values[i], |i| bodies[i], key, &mut order, &mut ends);
            let got: Vec<_> = order.iter().map(|&i| (values[i], bodies[i])).collect();
            // The ends given are those of the runs of one value.
            let mut from = 0;
            let given: Vec<&[u8]> = ends
                .iter()
                .map(|&end| {
                    assert!(
                        order[from..end].iter().all(|&i| values[i] == values[order[from]]),
                        "{got:?} {ends:?}"
                    );
                    from = end;
                    values[order[end - 1]]
                })
                .collect();
            assert_eq!(from, order.len());
            // Each value's rows are one run, in the order of their bodies.
            let mut runs: Vec<(&[u8], Vec<&[u8]>)> = Vec::new();
            for (v, b) in &got {
                match runs.last_mut() {
                    Some((last, bs)) if last == v => bs.push(b),
                    _ => runs.push((v, vec![b])),
                }
            }
            assert_eq!(runs.len(), 3, "{got:?}");
            assert_eq!(given, runs.iter().map(|(v, _)| *v).collect::<Vec<_>>(), "{ends:?}");
            for (v, bs) in &runs {
                let mine: Vec<&[u8]> = want.iter().filter(|(w, _)| w == v).map(|(_, b)| *b).collect();
                assert_eq!(bs, &mine, "{got:?}");
            }
        }
    }
}
