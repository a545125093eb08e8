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
//! cap. A bucket is sorted, each person's rows chosen, and the kept rows fed to the query's own
//! fold, in an order fixed by the hashes: the in-memory and the spilled path feed the same rows
//! in the same order. Only one person's rows must fit at once.

use std::io::{Read, Seek, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use siphasher::sip::SipHasher13;
use siphasher::sip128::{Hasher128, SipHasher13 as Sip128};

use crate::data::filter::passes;
use crate::data::route::{FilterList, GroupBy};
use crate::data::row::{key_of, text_cell, BadCell, Fold, Row};
use crate::numeric::list;
use crate::privacy::contribution::Bounds;

/// Hash partitions, in memory and on disk.
pub const BUCKETS: usize = 64;

/// The default for the rows held in memory before they spill, all copies together.
pub const DEFAULT_CAP: usize = 128 << 20;

/// Overrides [`DEFAULT_CAP`], in bytes (tests force the spill with a small one).
pub const CAP_VAR: &str = "DPSTAT_ID_MEMORY";

/// The cap on rows held in memory: [`CAP_VAR`] if it holds a number of bytes, else
/// [`DEFAULT_CAP`].
pub fn cap() -> usize {
    std::env::var(CAP_VAR).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_CAP)
}

/// What every copy of the fold shares: the columns, the bounds, the key and the spill files.
#[derive(Debug)]
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
}

#[derive(Debug)]
struct Shared {
    plan: Plan,
    /// Bytes held in the buckets of all copies.
    held: AtomicUsize,
    /// One temporary file per bucket, once anything spilled; the first I/O error.
    spill: Mutex<Spill>,
    /// Keys found in the data (`--by COL --discover`): COL, whose keys ([`key_of`]) are the
    /// groups instead of `plan.group`'s public ones.
    found: Option<usize>,
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
    buckets: Vec<Vec<u8>>,
    held: usize,
    inner: F,
}

impl<F: Clone> Clone for Bounded<F> {
    /// An empty copy for another part of the input (the scan clones only empty folds).
    fn clone(&self) -> Self {
        Bounded {
            shared: self.shared.clone(),
            buckets: vec![Vec::new(); BUCKETS],
            held: 0,
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
        let shared = Shared { plan, held: AtomicUsize::new(0), spill: Mutex::new(Spill::default()), found };
        Bounded { shared: Arc::new(shared), buckets: vec![Vec::new(); BUCKETS], held: 0, inner }
    }

    /// Chooses every person's rows and folds them into the inner fold; returns it, or a cell
    /// the inner fold refused, or why the temporary files failed.
    pub fn finish(mut self) -> Result<F, Failure> {
        let spilled = {
            let spill = self.shared.spill.lock().map_err(|_| Failure::Temp(poisoned()))?;
            if let Some(e) = &spill.error {
                return Err(Failure::Temp(e.clone()));
            }
            !spill.files.is_empty()
        };
        let shared = self.shared.clone();
        let mut chooser = Chooser::new(&shared.plan, shared.found);
        if !spilled {
            for bucket in std::mem::take(&mut self.buckets) {
                chooser.bucket(&bucket, &mut self.inner).map_err(Failure::Cell)?;
            }
            return Ok(self.inner);
        }
        self.spill_all();
        let mut spill =
            std::mem::take(&mut *self.shared.spill.lock().map_err(|_| Failure::Temp(poisoned()))?);
        if let Some(e) = spill.error {
            return Err(Failure::Temp(e));
        }
        for file in &mut spill.files {
            chooser.file(file, 1, &mut self.inner)?;
        }
        Ok(self.inner)
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
        for bucket in &mut self.buckets {
            *bucket = Vec::new();
        }
        self.shared.held.fetch_sub(self.held, Ordering::Relaxed);
        self.held = 0;
    }

    fn add_held(&mut self, bytes: usize) {
        self.held += bytes;
        let all = self.shared.held.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if all > self.shared.plan.cap {
            self.spill_all();
        }
    }
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
        let mut id = Vec::with_capacity(32);
        for &i in &plan.ids {
            put(&mut id, Some(text_cell(row, i)));
        }
        let b = bucket_of(&plan.key, 0, &id);
        let out = &mut self.buckets[b];
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&id);
        out.extend_from_slice(&(row.width() as u32).to_le_bytes());
        for &i in &plan.keep {
            put(out, row.get(i));
        }
        let len = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        let bytes = out.len() - start;
        self.add_held(bytes);
        Ok(())
    }

    fn merge(&mut self, mut other: Self) {
        let moved = std::mem::take(&mut other.held);
        for (mine, theirs) in self.buckets.iter_mut().zip(std::mem::take(&mut other.buckets)) {
            if mine.is_empty() {
                *mine = theirs;
            } else {
                mine.extend_from_slice(&theirs);
            }
        }
        // The bytes moved from one copy to another: the shared count already holds them.
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

/// The bucket of an encoded id at split `level` (a different hash at every level, so that a
/// file split again spreads its persons).
fn bucket_of(key: &[u8; 16], level: u8, id: &[u8]) -> usize {
    let mut k = *key;
    k[15] ^= level.wrapping_add(0x5a);
    (SipHasher13::new_with_key(&k).hash(id) % BUCKETS as u64) as usize
}

/// One encoded row inside a bucket.
struct Rec<'a> {
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
        let mut rest = record;
        for _ in 0..ids {
            rest = take(rest).1;
        }
        let id_len = record.len() - rest.len();
        out.push(Rec { id: &record[..id_len], body: rest });
        at += 4 + len;
    }
    out
}

/// Chooses each person's rows and replays them into a fold.
struct Chooser<'p> {
    plan: &'p Plan,
    /// Where the `--by` column (public keys, or keys found in the data) is among the kept cells.
    by_slot: Option<usize>,
    /// Scratch for one replayed row.
    line: Vec<u8>,
    ends: Vec<usize>,
}

impl<'p> Chooser<'p> {
    fn new(plan: &'p Plan, found: Option<usize>) -> Chooser<'p> {
        let by = plan.group.as_ref().map(|g| g.index).or(found);
        let by_slot = by.and_then(|index| plan.keep.iter().position(|&k| k == index));
        Chooser { plan, by_slot, line: Vec::new(), ends: Vec::new() }
    }

    /// A bucket held in memory.
    fn bucket<F: Fold>(&mut self, bytes: &[u8], fold: &mut F) -> Result<(), BadCell> {
        let mut recs = records(bytes, self.plan.ids.len());
        // Persons together, each person's rows in the order of their bytes (for j).
        recs.sort_unstable_by(|a, b| a.id.cmp(b.id).then_with(|| a.body.cmp(b.body)));
        let mut start = 0;
        while start < recs.len() {
            let end = start + recs[start..].iter().take_while(|r| r.id == recs[start].id).count();
            self.person(&recs[start..end], fold)?;
            start = end;
        }
        Ok(())
    }

    /// A spilled bucket: read whole if it fits the cap (or cannot be split further), else split
    /// by another hash of the id into files read one at a time.
    fn file<F: Fold>(&mut self, file: &mut std::fs::File, level: u8, fold: &mut F) -> Result<(), Failure> {
        let io = |e: String| Failure::Temp(e);
        let size = file.seek(std::io::SeekFrom::End(0)).map_err(|e| io(read_error(&e)))? as usize;
        file.rewind().map_err(|e| io(read_error(&e)))?;
        if size <= self.plan.cap.max(1 << 20) || level >= 4 {
            let mut bytes = Vec::with_capacity(size);
            file.read_to_end(&mut bytes).map_err(|e| io(read_error(&e)))?;
            return self.bucket(&bytes, fold).map_err(Failure::Cell);
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
            let id_len = records_id_len(&record, self.plan.ids.len());
            let w = &mut writers[bucket_of(&self.plan.key, level, &record[..id_len])];
            w.write_all(&head).and_then(|()| w.write_all(&record)).map_err(|e| io(temp_error(&e)))?;
        }
        for w in writers {
            w.into_inner().map_err(|e| io(temp_error(e.error())))?;
        }
        for part in &mut parts {
            self.file(part, level + 1, fold)?;
        }
        Ok(())
    }

    /// One person's rows (sorted by their bytes): choose, then replay the kept ones.
    fn person<F: Fold>(&mut self, rows: &[Rec], fold: &mut F) -> Result<(), BadCell> {
        let plan = self.plan;
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
        let bounds = &plan.bounds;
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
        let row = Row::line(&self.line, 0, &self.ends, false, width, &[], 0);
        fold.row(&row)
    }
}

/// The label of the group of an encoded row whose group cell is in `slot`: its public key's
/// (`other` for a cell not listed), or without public keys the key the cell counts under.
fn group_label<'a>(plan: &'a Plan, body: &'a [u8], slot: usize) -> &'a [u8] {
    let cell = cell_at(body, slot).unwrap_or_default().trim_ascii();
    match &plan.group {
        Some(g) => g.keys.label(g.keys.index(cell)).as_bytes(),
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

fn records_id_len(record: &[u8], ids: usize) -> usize {
    let mut rest = record;
    for _ in 0..ids {
        rest = take(rest).1;
    }
    record.len() - rest.len()
}

fn read_error(e: &std::io::Error) -> String {
    format!("reading rows back from a temporary file: {e}")
}

/// How the id columns read in messages.
pub fn id_label(names: &[String]) -> String {
    list::join(names)
}
