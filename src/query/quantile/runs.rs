//! The rows of a quantile column as positions on the public grid, and the runs of candidates
//! that share a score.
//!
//! A row is kept as one `u32`: 2i + 1 when it equals candidate i, 2i when it lies strictly
//! between candidates i − 1 and i (0 below every candidate, 2K above every one). Every count a
//! score needs, #(x < c_i) and #(x <= c_i), is a count of positions below 2i + 1 or 2i + 2, so
//! sorting the positions is sorting the rows as far as the grid can see. Between two positions
//! held by rows, every candidate has the same counts, hence the same score: a run. There are at
//! most 2·(distinct positions) + 1 runs, whatever the number of candidates.
//!
//! Memory: four bytes a row until a chunk of rows ([`chunk_for`]: eight per candidate, at
//! least 4,096 and at most [`CHUNK`]), then the positions are sorted and packed into
//! (position, count) pairs, at most one per position (2K + 1 of them): bounded by the grid, not
//! by the rows. Once the pairs would be more than half of the grid's positions they become
//! a count per position (four bytes each), to which later rows are added
//! in place: a merge of pairs needs room for its result beside both lists, which near a full
//! grid was more than the fold declared (issue 38). The chunk follows the grid so that a fold
//! per group (`--by`, `--discover`) holds O(K), as the counts per candidate did, not a fixed
//! 4 MiB each.

use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

/// The most positions held unsorted before they are packed.
pub const CHUNK: usize = 1 << 20;

/// The most runs of fresh positions kept apart ([`Positions::end_part`]): one per part of a
/// parallel scan, about 15 per chunk of 10^6 rows of one short column. A merge past it packs
/// first.
const MAX_RUNS: usize = 32;

/// The positions a fold on a grid of `k` candidates holds unsorted before it packs them: eight
/// per candidate, so a pack (a sort of the chunk and a merge with at most 2K + 1 pairs) costs
/// O(log) per row, within [4,096, `CHUNK`].
pub fn chunk_for(k: usize) -> usize {
    k.saturating_add(1).saturating_mul(8).clamp(1 << 12, CHUNK)
}

/// The positions of the rows folded so far.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Positions {
    /// Unsorted until [`Positions::sort`].
    fresh: Vec<u32>,
    /// Sorted by position; a count past `u32::MAX` takes several pairs.
    packed: Vec<(u32, u32)>,
    /// How many fresh positions are packed at once ([`chunk_for`]; 0 reads as [`CHUNK`]).
    #[serde(default)]
    chunk: usize,
    /// Where each run at the start of `fresh` ends, in order; a run is in bucket order
    /// ([`bucket_order`]), the positions past the last end are not. A part's worker puts its
    /// positions in bucket order ([`Positions::end_part`]) so the merging thread packs the runs
    /// by counting, without moving them (issue 38).
    #[serde(default)]
    sorted: Vec<u32>,
    /// The grid's positions, 2K + 1 (0: not known, and the counts stay pairs).
    #[serde(default)]
    slots: usize,
    /// Counts by position, in place of `packed`, once the pairs would be more than half of the
    /// slots (empty before): [`Positions::count_by_position`].
    #[serde(default)]
    dense: Vec<u32>,
    /// A position once for every 2^32 rows its count in `dense` wrapped past (unordered).
    #[serde(default)]
    wrapped: Vec<u32>,
}

/// A run of candidates with the same counts: `first..first + points`, each with `below` rows
/// under it and `equal` rows on it (`equal` > 0 only for a single candidate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub first: usize,
    pub points: usize,
    pub below: u64,
    pub equal: u64,
}

impl Positions {
    /// No positions yet, on a grid of `k` candidates.
    pub fn for_grid(k: usize) -> Positions {
        Positions { chunk: chunk_for(k), slots: k.saturating_mul(2).saturating_add(1), ..Positions::default() }
    }

    /// Whether `pairs` (position, count) pairs are more than this grid keeps as pairs: half of
    /// its slots, so that a pack or merge of pairs (the old list, the new one counted in room
    /// for its positions, their result) holds at most 8 bytes a slot, as the counts by
    /// position (4 bytes a slot) with the pairs they replace do ([`Positions::max_heap_bytes`]).
    fn too_many_pairs(&self, pairs: usize) -> bool {
        self.slots > 0 && pairs > self.slots / 2
    }

    /// Replaces the pairs by counts by position (allocated here, once).
    fn count_by_position(&mut self) {
        self.dense = vec![0u32; self.slots];
        let packed = std::mem::take(&mut self.packed);
        self.add_pairs(packed);
    }

    /// Adds (position, count) pairs to the counts by position.
    fn add_pairs(&mut self, pairs: Vec<(u32, u32)>) {
        for (p, c) in pairs {
            add_count(&mut self.dense, &mut self.wrapped, p, c);
        }
    }

    fn chunk(&self) -> usize {
        if self.chunk == 0 {
            CHUNK
        } else {
            self.chunk
        }
    }

    pub fn push(&mut self, position: u32) {
        self.fresh.push(position);
        if self.fresh.len() >= self.chunk() {
            self.pack();
        }
    }

    /// Puts the positions pushed since the last run in bucket order as one more run: called by
    /// the thread that folded a part of a parallel scan, so that the merging thread, which packs
    /// after the scan, only counts runs.
    pub fn end_part(&mut self) {
        let from = self.sorted_len();
        if from < self.fresh.len() && self.sorted.len() < MAX_RUNS && self.fresh.len() <= u32::MAX as usize {
            bucket_order(&mut self.fresh[from..]);
            self.sorted.push(self.fresh.len() as u32);
        }
    }

    /// How many positions at the start of `fresh` are in runs.
    fn sorted_len(&self) -> usize {
        self.sorted.last().map_or(0, |&end| end as usize)
    }

    pub fn merge(&mut self, other: Positions) {
        let whole_runs = |p: &Positions| p.sorted_len() == p.fresh.len();
        if whole_runs(self) && whole_runs(&other) && !other.sorted.is_empty() {
            if self.sorted.len() + other.sorted.len() > MAX_RUNS {
                self.pack();
            }
            let offset = self.fresh.len();
            let ends = other.sorted.iter().map(|&end| end as usize + offset);
            if ends.clone().all(|end| end <= u32::MAX as usize) {
                self.sorted.extend(ends.map(|end| end as u32));
            }
        }
        self.fresh.extend(other.fresh);
        self.merge_counts(other.packed, other.dense, other.wrapped);
        if self.fresh.len() >= self.chunk() {
            self.pack();
        }
    }

    /// Adds another copy's packed counts (its pairs, or its counts by position) to these.
    fn merge_counts(&mut self, packed: Vec<(u32, u32)>, mut dense: Vec<u32>, wrapped: Vec<u32>) {
        self.wrapped.extend(wrapped);
        if self.dense.is_empty() && !dense.is_empty() {
            // Into the other's counts by position (already as large as the grid), ours added.
            std::mem::swap(&mut self.dense, &mut dense);
            let mine = std::mem::take(&mut self.packed);
            self.add_pairs(mine);
        }
        for (p, &c) in dense.iter().enumerate().filter(|(_, c)| **c > 0) {
            add_count(&mut self.dense, &mut self.wrapped, p as u32, c);
        }
        if packed.is_empty() {
            return;
        }
        if self.dense.is_empty() && self.too_many_pairs(self.packed.len() + packed.len()) {
            self.count_by_position();
        }
        if self.dense.is_empty() {
            self.packed = merge_packed(&std::mem::take(&mut self.packed), &packed);
        } else {
            self.add_pairs(packed);
        }
    }

    /// The rows folded.
    pub fn len(&self) -> u64 {
        let packed = self.packed.iter().map(|&(_, c)| u64::from(c)).sum::<u64>();
        let dense = self.dense.iter().map(|&c| u64::from(c)).sum::<u64>();
        self.fresh.len() as u64 + packed + dense + ((self.wrapped.len() as u64) << 32)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Packs the unpacked positions, which sorts them: needed before
    /// [`Positions::for_each_count`].
    pub fn sort(&mut self) {
        if !self.fresh.is_empty() {
            self.pack();
        }
    }

    /// The most heap this can hold on a grid of `k` candidates: two chunks (a merge of two
    /// copies before it packs), the packed counts and the ends of the sorted runs. Pairs are
    /// kept while the old ones (a) and the positions being counted (n, each a pair at most)
    /// are at most half of the 2K + 1 positions, so a pack or merge holds a + n pairs and their
    /// result, at most (2K + 1)·8 bytes; past that the counts by position take 4·(2K + 1) bytes,
    /// and as much again for the pairs they replace, while these are added to them.
    pub fn max_heap_bytes(k: usize) -> usize {
        2 * chunk_for(k) * 4 + (2 * k + 2) * std::mem::size_of::<(u32, u32)>() + 2 * MAX_RUNS * 4
    }

    /// The most heap a copy that started empty holds after at most `rows` pushes on a grid of
    /// `k` candidates: under a chunk, only the fresh positions, whose capacity doubles as they
    /// come (a power of two at most); from a chunk on, [`Positions::max_heap_bytes`].
    pub fn heap_bytes_for_rows(k: usize, rows: usize) -> usize {
        let worst = Positions::max_heap_bytes(k);
        if rows >= chunk_for(k) {
            return worst;
        }
        // A vector's first allocation holds four positions (the standard library's least); the
        // part's one sorted run takes a first allocation of four ends.
        (rows.next_power_of_two().max(4).saturating_mul(4) + 4 * 4).min(worst)
    }

    fn pack(&mut self) {
        if self.dense.is_empty() && self.too_many_pairs(self.packed.len() + self.fresh.len()) {
            self.count_by_position();
        }
        if !self.dense.is_empty() {
            // Counted in place: no pairs, no sort, whatever order the positions are in.
            let fresh = std::mem::take(&mut self.fresh);
            self.sorted = Vec::new();
            for p in fresh {
                add_count(&mut self.dense, &mut self.wrapped, p, 1);
            }
            return;
        }
        if !self.sorted.is_empty() {
            // The unsorted tail as one more run, unless the runs are full (then all is counted
            // as unsorted).
            self.end_part();
        }
        let mut fresh = std::mem::take(&mut self.fresh);
        let ends = std::mem::take(&mut self.sorted);
        let counted = match ends.last() {
            Some(&end) if end as usize == fresh.len() => count_runs(&mut fresh, &ends),
            _ => count_positions(&mut fresh),
        };
        drop(fresh);
        self.packed = match self.packed.is_empty() {
            true => counted,
            false => merge_packed(&self.packed, &counted),
        };
        if self.packed.len() < self.packed.capacity() / 2 {
            // The room counted for a pair a position, kept while it was needed.
            self.packed.shrink_to_fit();
        }
    }

    /// Every distinct position with its count, ascending. [`Positions::sort`] first (it packs
    /// every position).
    pub fn for_each_count(&self, mut f: impl FnMut(u32, u64)) {
        debug_assert!(self.fresh.is_empty(), "Positions::sort first");
        let _ = self.try_for_each_count(|p, c| {
            f(p, c);
            ControlFlow::Continue(())
        });
    }

    /// [`Positions::for_each_count`] until `f` breaks, from the pairs or the counts by position.
    fn try_for_each_count(&self, mut f: impl FnMut(u32, u64) -> ControlFlow<()>) -> ControlFlow<()> {
        if self.dense.is_empty() {
            return try_for_each_packed(&self.packed, f);
        }
        if self.wrapped.is_empty() {
            // Every draw walks this (up to 2·10^6 slots): nothing but the test for zero.
            for (p, &c) in self.dense.iter().enumerate() {
                if c != 0 {
                    f(p as u32, u64::from(c))?;
                }
            }
            return ControlFlow::Continue(());
        }
        let mut wrapped = self.wrapped.clone();
        wrapped.sort_unstable();
        let mut wrapped = wrapped.iter().peekable();
        for (p, &c) in self.dense.iter().enumerate() {
            let mut count = u64::from(c);
            while wrapped.next_if(|&&w| w as usize == p).is_some() {
                count += 1 << 32;
            }
            if count > 0 {
                f(p as u32, count)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// The runs of a grid of `k` candidates, in order; they cover 0..k.
    pub fn for_each_run(&self, k: usize, mut f: impl FnMut(Run)) {
        let _ = self.try_for_each_run(k, |run| {
            f(run);
            ControlFlow::Continue(())
        });
    }

    /// [`Positions::for_each_run`] until `f` breaks: a draw that has found its run, or the
    /// best score, stops there instead of walking the rest (issue 38).
    pub fn try_for_each_run(&self, k: usize, mut f: impl FnMut(Run) -> ControlFlow<()>) -> ControlFlow<()> {
        debug_assert!(self.fresh.is_empty(), "Positions::sort first");
        let (mut next, mut below) = (0usize, 0u64);
        self.try_for_each_count(|p, count| {
            // Candidates from `next` up to this position's see the rows so far below them.
            let at = (p / 2) as usize;
            let stop = at.min(k);
            if stop > next {
                f(Run { first: next, points: stop - next, below, equal: 0 })?;
                next = stop;
            }
            if p % 2 == 1 && at < k {
                f(Run { first: at, points: 1, below, equal: count })?;
                next = at + 1;
            }
            below += count;
            ControlFlow::Continue(())
        })?;
        if next < k {
            f(Run { first: next, points: k - next, below, equal: 0 })?;
        }
        ControlFlow::Continue(())
    }
}

/// The positions grouped: each distinct one with its count, ascending (`v` is reordered).
/// Past 2^14 positions, one pass moves each into its bucket by its top 11 bits (American flag
/// sort: counts, then swaps along cycles, no second buffer); a bucket then spans at most 2^10
/// positions on any grid up to MAX_RESOLUTION, and is counted in a table of its span rather than
/// sorted. Sorting the buckets was most of the merging thread's work on 10^6 rows (issue 38).
fn count_positions(v: &mut [u32]) -> Vec<(u32, u32)> {
    // Room for a pair a position, at most: grown by doubling, a pack could hold twice the
    // pairs it counts, which [`Positions::max_heap_bytes`] does not allow.
    let mut out = Vec::with_capacity(v.len());
    let Some(&max) = v.iter().max() else { return out };
    let Some(shift) = bucket_shift(v.len(), max) else {
        v.sort_unstable();
        for_each_group(v, |p, c| push_count(&mut out, p, c));
        return out;
    };
    let bucket = |x: u32| (x >> shift) as usize;
    let ends = partition_by(v, bucket, 1 << BUCKET_BITS);
    let mut table = vec![0u32; 1 << shift];
    let mut start = 0;
    for (b, &end) in ends.iter().enumerate() {
        let base = (b as u32) << shift;
        v[start..end].iter().for_each(|&x| table[(x - base) as usize] += 1);
        if end > start {
            for (j, count) in table.iter_mut().enumerate().filter(|(_, c)| **c > 0) {
                out.push((base + j as u32, std::mem::take(count)));
            }
        }
        start = end;
    }
    out
}

/// Puts `v` in bucket order: ascending by the top 11 bits of its largest position (the move of
/// [`count_positions`]), or sorted when that does not apply. A run in bucket order for its own
/// largest position is in bucket order for any larger one (a coarser bucket is a union of
/// consecutive finer ones), so [`count_runs`] can walk runs of different largest positions.
fn bucket_order(v: &mut [u32]) {
    let Some(&max) = v.iter().max() else { return };
    match bucket_shift(v.len(), max) {
        Some(shift) => {
            partition_by(v, |x| (x >> shift) as usize, 1 << BUCKET_BITS);
        }
        None => v.sort_unstable(),
    }
}

/// The buckets of the bucketed count: by the top 11 bits of the largest position.
const BUCKET_BITS: u32 = 11;

/// How far a position is shifted to give its bucket, for `len` positions of which `max` is the
/// largest; None where a plain sort serves instead: below 2^14 positions, or where a bucket
/// would span more than 2^12 positions (a table of 2^12 counts, 16 KiB, stays in the
/// first-level cache), or past `u32::MAX` positions.
fn bucket_shift(len: usize, max: u32) -> Option<u32> {
    let shift = (32 - max.leading_zeros()).saturating_sub(BUCKET_BITS);
    (len >= 1 << 14 && shift <= 12 && len <= u32::MAX as usize).then_some(shift)
}

/// [`count_positions`] of positions in runs in bucket order ([`bucket_order`]; `ends`: where
/// each ends, the last at `v.len()`), without moving them: the runs' positions of each bucket
/// of the top 11 bits are counted in one table, as [`count_positions`] counts a bucket after
/// moving its positions together; that move was most of its cost.
fn count_runs(v: &mut [u32], ends: &[u32]) -> Vec<(u32, u32)> {
    // Room for a pair a position, as in [`count_positions`].
    let mut out = Vec::with_capacity(v.len());
    let starts = std::iter::once(0).chain(ends.iter().map(|&e| e as usize));
    let mut runs: Vec<(usize, usize)> = starts.zip(ends.iter().map(|&e| e as usize)).filter(|(s, e)| e > s).collect();
    let Some(max) = runs.iter().map(|&(_, e)| v[e - 1]).max() else { return out };
    // A run's last position lies in the bucket of its largest, so gives the same shift and last bucket.
    let Some(shift) = bucket_shift(v.len(), max) else { return count_positions(v) };
    let mut table = vec![0u32; 1 << shift];
    for b in 0..=(max >> shift) {
        let base = b << shift;
        let mut any = false;
        for (start, end) in runs.iter_mut() {
            let from = *start;
            while *start < *end && v[*start] >> shift == b {
                table[(v[*start] - base) as usize] += 1;
                *start += 1;
            }
            any |= *start > from;
        }
        if any {
            for (j, count) in table.iter_mut().enumerate().filter(|(_, c)| **c > 0) {
                out.push((base + j as u32, std::mem::take(count)));
            }
        }
    }
    out
}

/// Moves every element of `v` into its bucket (`bucket(x)` < `buckets`) in bucket order, in
/// place; returns where each bucket ends.
fn partition_by(v: &mut [u32], bucket: impl Fn(u32) -> usize, buckets: usize) -> Vec<usize> {
    let mut ends = vec![0usize; buckets];
    v.iter().for_each(|&x| ends[bucket(x)] += 1);
    let mut total = 0;
    for end in ends.iter_mut() {
        total += *end;
        *end = total;
    }
    let mut next: Vec<usize> = std::iter::once(0).chain(ends.iter().copied()).take(buckets).collect();
    for b in 0..buckets {
        while next[b] < ends[b] {
            let d = bucket(v[next[b]]);
            if d == b {
                next[b] += 1;
            } else {
                v.swap(next[b], next[d]);
                next[d] += 1;
            }
        }
    }
    ends
}

/// Every distinct position of a packed list with its count (a count past `u32::MAX` spans
/// several pairs), until `f` breaks: the walk of every draw once the positions are packed as
/// pairs.
fn try_for_each_packed(packed: &[(u32, u32)], mut f: impl FnMut(u32, u64) -> ControlFlow<()>) -> ControlFlow<()> {
    let Some(&(mut at, count)) = packed.first() else { return ControlFlow::Continue(()) };
    let mut count = u64::from(count);
    for &(p, c) in &packed[1..] {
        if p != at {
            f(at, count)?;
            (at, count) = (p, 0);
        }
        count += u64::from(c);
    }
    f(at, count)
}

/// Groups a sorted slice: each distinct value with its count.
fn for_each_group(sorted: &[u32], mut f: impl FnMut(u32, u64)) {
    let mut i = 0;
    while i < sorted.len() {
        let j = i + sorted[i..].partition_point(|&p| p == sorted[i]);
        f(sorted[i], (j - i) as u64);
        i = j;
    }
}

fn push_count(out: &mut Vec<(u32, u32)>, position: u32, mut count: u64) {
    while count > 0 {
        let c = count.min(u64::from(u32::MAX));
        out.push((position, c as u32));
        count -= c;
    }
}

/// Adds `count` rows at position `p` to counts by position, a wrap past `u32::MAX` noted in
/// `wrapped` (2^32 rows each).
fn add_count(dense: &mut [u32], wrapped: &mut Vec<u32>, p: u32, count: u32) {
    let (sum, wrap) = dense[p as usize].overflowing_add(count);
    dense[p as usize] = sum;
    if wrap {
        wrapped.push(p);
    }
}

/// Two sorted packed lists as one, equal positions summed.
fn merge_packed(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    // Room for every pair (a count split in two where a sum passes `u32::MAX` is as rare as
    // that many rows): grown by doubling, the result could hold twice the pairs.
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let p = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) => break,
        };
        let mut count = 0u64;
        while a.get(i).is_some_and(|x| x.0 == p) {
            count += u64::from(a[i].1);
            i += 1;
        }
        while b.get(j).is_some_and(|y| y.0 == p) {
            count += u64::from(b[j].1);
            j += 1;
        }
        push_count(&mut out, p, count);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The runs by brute force: per candidate, the positions below 2i + 1 and at 2i + 1.
    fn brute(positions: &[u32], k: usize) -> Vec<(u64, u64)> {
        (0..k)
            .map(|i| {
                let p = 2 * i as u32 + 1;
                (positions.iter().filter(|&&x| x < p).count() as u64, positions.iter().filter(|&&x| x == p).count() as u64)
            })
            .collect()
    }

    /// The bucketed count agrees with a sort and a grouping on large inputs, spread, clustered,
    /// tied and wide (below 2^14 positions, or spanning more than 2^23, it is that sort).
    #[test]
    fn positions_count_as_a_sort_does() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(38); // INSECURE: test-only seed
        let cases = [(20_000usize, 2_000_001u32), (100_000, 2_000_001), (50_000, 17), (30_000, 1 << 31), (40_000, 1 << 23)];
        for (len, range) in cases {
            let mut v: Vec<u32> = (0..len).map(|_| rng.random_range(0..range)).collect();
            v.extend([0, range - 1, range - 1]);
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let mut want = vec![];
            for_each_group(&sorted, |p, c| want.push((p, c as u32)));
            assert_eq!(count_positions(&mut v), want, "{len} below {range}");
        }
        assert!(count_positions(&mut []).is_empty());
    }

    /// Parts sorted on their own ([`Positions::end_part`]) and merged count as one unsorted
    /// list does: on the bucketed path (wide grid, many positions), past [`MAX_RUNS`] parts
    /// (a merge packs first), with unsorted parts among them, and past a chunk.
    #[test]
    fn sorted_parts_count_as_one_list_does() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(381); // INSECURE: test-only seed
        // (parts, positions a part, range, every how many parts one is left unsorted)
        let cases = [(14usize, 70_000usize, 2_000_001u32, 0usize), (40, 3_000, 2_000_001, 0), (9, 20_000, 2_000_001, 3), (5, 9_000, 41, 0), (6, 5_000, 1 << 31, 2), (8, 30_000, 1 << 23, 0)];
        for (parts, size, range, unsorted) in cases {
            let (mut whole, mut all) = (Positions::for_grid(1_000_000), Vec::new());
            for i in 0..parts {
                let mut part = Positions::for_grid(1_000_000);
                for _ in 0..size {
                    // Parts of different largest positions, so of different buckets.
                    let p = rng.random_range(0..range >> (i % 3));
                    all.push(p);
                    part.push(p);
                }
                if unsorted == 0 || i % unsorted != 0 {
                    part.end_part();
                }
                whole.merge(part);
                assert!(whole.sorted.len() <= MAX_RUNS);
            }
            whole.sort();
            let mut want = vec![];
            all.sort_unstable();
            for_each_group(&all, |p, c| want.push((p, c)));
            let mut got = vec![];
            whole.for_each_count(|p, c| got.push((p, c)));
            assert_eq!(got, want, "{parts} parts of {size} below {range}");
        }
    }

    /// A copy that starts empty and folds `rows` rows holds at most what
    /// `heap_bytes_for_rows` says, which is what a parallel scan budgets for one part.
    #[test]
    fn a_part_holds_at_most_its_rows() {
        let k = 1_000_001;
        for rows in [0usize, 1, 5, 4096, 262_145, 300_000] {
            let mut p = Positions::for_grid(k);
            (0..rows).for_each(|i| p.push((i * 7919 % (2 * k)) as u32));
            p.end_part();
            let held = p.fresh.capacity() * 4 + p.packed.capacity() * 8 + p.sorted.capacity() * 4 + p.dense.capacity() * 4;
            assert!(held <= Positions::heap_bytes_for_rows(k, rows), "{rows} rows: {held}");
        }
        assert_eq!(Positions::heap_bytes_for_rows(k, 262_145), (2 << 20) + 16);
        assert_eq!(Positions::heap_bytes_for_rows(k, CHUNK), Positions::max_heap_bytes(k));
    }

    /// Past half of the grid's positions the pairs become counts by position, and what a
    /// copy holds stays within [`Positions::max_heap_bytes`]; the counts are those of a sort.
    #[test]
    fn a_full_grid_is_counted_by_position_within_the_bound() {
        let k = 100_000;
        let (mut whole, mut all) = (Positions::for_grid(k), Vec::new());
        for part in 0..6u32 {
            let mut p = Positions::for_grid(k);
            // Every position of the grid is hit: far more than half of them as pairs.
            for i in 0..150_000u32 {
                let at = (i.wrapping_mul(7919) + part * 13) % (2 * k as u32 + 1);
                p.push(at);
                all.push(at);
            }
            p.sort();
            assert!(!p.dense.is_empty() && p.packed.is_empty(), "part {part}");
            whole.merge(p);
            let held = whole.fresh.capacity() * 4 + whole.packed.capacity() * 8 + whole.dense.capacity() * 4;
            assert!(held <= Positions::max_heap_bytes(k), "{held}");
        }
        whole.sort();
        assert!(!whole.dense.is_empty() && whole.packed.is_empty());
        all.sort_unstable();
        let (mut want, mut got) = (vec![], vec![]);
        for_each_group(&all, |p, c| want.push((p, c)));
        whole.for_each_count(|p, c| got.push((p, c)));
        assert_eq!(got, want);
        assert_eq!(whole.len(), all.len() as u64);
    }

    /// A count by position past `u32::MAX` wraps into `wrapped` and reads back whole.
    #[test]
    fn a_count_past_u32_max_reads_back_whole() {
        let mut p = Positions::for_grid(3);
        (0..7).for_each(|i| p.push(i % 7));
        p.sort();
        assert!(!p.dense.is_empty());
        p.dense[4] = u32::MAX - 1;
        let mut other = Positions::for_grid(3);
        (0..7).for_each(|_| other.push(4));
        other.sort();
        p.merge(other);
        let mut got = vec![];
        p.for_each_count(|at, c| got.push((at, c)));
        let big = u64::from(u32::MAX) - 1 + 7;
        assert_eq!(got, vec![(0, 1), (1, 1), (2, 1), (3, 1), (4, big), (5, 1), (6, 1)]);
        assert_eq!(p.len(), 6 + big);
    }

    proptest! {
        /// Runs expand to the per-candidate counts, and packing or merging changes nothing.
        #[test]
        fn runs_cover_the_grid_with_the_right_counts(
            positions in proptest::collection::vec(0u32..41, 0..80),
            split in 0usize..80,
            second in 0usize..80,
            sorted in any::<(bool, bool)>(),
            grid in any::<bool>(),
        ) {
            let k = 20;
            // On a known grid, past half of its 41 positions the counts go by position.
            let empty = || if grid { Positions::for_grid(k) } else { Positions::default() };
            let split = split.min(positions.len());
            let second = second.clamp(split, positions.len());
            let mut a = empty();
            positions[..split].iter().for_each(|&p| a.push(p));
            a.pack();
            // Two more parts, each sorted on its own or not ([`Positions::end_part`]).
            for (part, sort) in [(&positions[split..second], sorted.0), (&positions[second..], sorted.1)] {
                let mut b = empty();
                part.iter().for_each(|&p| b.push(p));
                if sort {
                    b.end_part();
                }
                a.merge(b);
            }
            a.sort();
            prop_assert_eq!(a.len(), positions.len() as u64);
            let mut seen = vec![];
            a.for_each_run(k, |r| {
                assert!(r.points >= 1 && (r.equal == 0 || r.points == 1));
                seen.extend((0..r.points).map(|_| (r.below, r.equal)));
            });
            prop_assert_eq!(seen, brute(&positions, k));
        }
    }
}
