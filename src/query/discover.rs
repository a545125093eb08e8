//! **Keys found in the data** (`--discover`): the categories of `histogram --col C --discover`
//! and the groups of `--by COL --discover`, taken from the rows instead of a public list, by
//! partition selection (docs/DESIGN.md §9.5).
//!
//! **Mechanism.** One pass counts the rows of every key observed (after `--where`); every
//! observed key's count gets discrete Laplace noise of scale s, and only the keys whose noisy
//! count reaches τ are released, sorted by their bytes (so their order says nothing), with
//! those noisy counts. s and τ come from [`threshold`] (ε, δ and the privacy unit, never the
//! data): s = 1/ε and P(1 + Z >= τ) <= δ under add-remove; s = 2/ε and that probability at most
//! δ·e^(−ε/2) under replace. Each row counts towards one key, so:
//! - a neighbour whose differing row's key is observed in both datasets moves the vector of
//!   counts by 1 (add-remove) or 2 (replace) in L1, and the release is post-processing of a
//!   Laplace release: ε-DP;
//! - one whose row creates (or removes) a key changes the output only on the event that this
//!   key is released, of probability at most δ (times e^(ε/2) for the shared key that moves
//!   under replace, which τ accounts for).
//!
//! So the release is (ε, δ)-DP (Korolova, Kenthapadi, Mishra, Ntoulas 2009; Wilson et al. 2020,
//! Google's `PartitionSelection`), **not** zCDP, and is charged as (ε, δ).
//!
//! **Other statistics by discovered groups** (`sum --by COL --discover`, …), add-remove only:
//! ε is split in halves, the selection at (ε/2, δ) and the statistic at ε/2 in every released
//! group. A row touches one key: if its key is observed in both neighbours, the selection
//! counts move by 1 and that group's statistic by its own Δ, and releasing only the selected
//! groups is post-processing of both noisy vectors: ε/2 + ε/2. If its key is new, the output
//! differs only when that key is selected (probability <= δ). So the whole is (ε, δ)-DP. Under
//! replace a changed row could move a shared group's statistic while creating a key, which the
//! threshold would have to pay for with more than e^(ε/2): refused (a count by discovered
//! groups, and `histogram --discover`, release the selection's own counts and work under both
//! units).
//!
//! **Memory.** One entry per distinct key: at most `--max-keys` keys (default 100000) of at
//! most [`MAX_KEY_BYTES`] bytes each; the worst case is checked against the fold cap before
//! anything is read or charged (`data::scan::check_memory`), and a file with more distinct keys,
//! or a longer key, stops the run with a message. Under a ledger that stop comes after the
//! charge, so it is a charged failure (one fixed line: `cmd::release::Meter`); run
//! `dpstat check` or the release without `--ledger` first when the number of keys is unknown.

use std::collections::BTreeMap;

use num_bigint::BigInt;
use rand::RngCore;

use crate::data::row::{text_cell, BadCell, Fold, Row};
use crate::error::Error;
use crate::numeric::grid::Grid;
use crate::privacy::accountant::Cost;
use crate::privacy::accuracy;
use crate::privacy::currency::Spend;
use crate::privacy::delta::Delta;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::laplace::Aggregate;
use crate::privacy::noise::{self, Calibrated, Mechanism};
use crate::privacy::threshold::{threshold, Threshold};
use crate::privacy::unit::Neighbours;
pub use crate::query::options::Discovery;
use crate::query::statistic::{Context, Measured, Statistic};
use crate::report::release::{
    saturating_i128, Accuracy, DiscoveryInfo, Group, GroupedRelease, Noise, Number, Release, PER_BIN,
};

/// `--max-keys` when not given.
pub const DEFAULT_MAX_KEYS: usize = 100_000;
/// The longest key kept: a longer one stops the run (a key is a label, not a document).
pub const MAX_KEY_BYTES: usize = 256;
/// What one entry of the key map costs besides its key and fold (tree node share, box, count).
const ENTRY_BYTES: usize = 64;

/// Every observed key (its bytes) with its row count and its own fold, in byte order.
pub type Keys<F> = BTreeMap<Box<[u8]>, (u64, F)>;

/// Per observed key (the trimmed cell of column `index`): its row count and its own fold.
#[derive(Clone, Debug)]
pub struct Keyed<F> {
    index: usize,
    max_keys: usize,
    empty: F,
    keys: Keys<F>,
    /// Two parts of a parallel scan merged into more keys than allowed.
    overflow: bool,
}

impl<F: Fold> Keyed<F> {
    pub fn new(index: usize, max_keys: usize, empty: F) -> Keyed<F> {
        Keyed { index, max_keys, empty, keys: BTreeMap::new(), overflow: false }
    }

    /// The keys observed, each with its row count and fold, in byte order; an error if more
    /// than the cap were observed.
    pub fn into_keys(self) -> Result<Keys<F>, Error> {
        if self.overflow || self.keys.len() > self.max_keys {
            return Err(too_many(self.max_keys));
        }
        Ok(self.keys)
    }
}

fn too_many(max_keys: usize) -> Error {
    Error::usage(too_many_text(max_keys))
}

fn too_many_text(max_keys: usize) -> String {
    format!(
        "more than {max_keys} distinct keys: raise --max-keys (memory grows with it), narrow the rows \
         with --where, or list the keys you need"
    )
}

impl<F: Fold> Fold for Keyed<F> {
    #[inline]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        let key = text_cell(row, self.index);
        if let Some((rows, fold)) = self.keys.get_mut(key) {
            *rows += 1;
            return fold.row(row);
        }
        if key.len() > MAX_KEY_BYTES {
            return Err(BadCell {
                column: self.index,
                why: format!(
                    "a key longer than {MAX_KEY_BYTES} bytes; --discover keeps keys up to that length"
                ),
            });
        }
        if self.keys.len() >= self.max_keys {
            return Err(BadCell { column: self.index, why: too_many_text(self.max_keys) });
        }
        let mut fold = self.empty.clone();
        fold.row(row)?;
        self.keys.insert(key.into(), (1, fold));
        Ok(())
    }

    fn merge(&mut self, other: Self) {
        self.overflow |= other.overflow;
        for (key, (rows, fold)) in other.keys {
            match self.keys.get_mut(&key) {
                Some((mine, own)) => {
                    *mine += rows;
                    own.merge(fold);
                }
                None => {
                    self.keys.insert(key, (rows, fold));
                }
            }
        }
        self.overflow |= self.keys.len() > self.max_keys;
    }

    fn widest_column(&self) -> Option<usize> {
        Some(self.empty.widest_column().map_or(self.index, |w| w.max(self.index)))
    }

    /// The worst case, whatever the data: the cap of keys at the longest key each. The scan
    /// refuses it above its limit before any row is read, and holds one copy only when it is
    /// large.
    fn heap_bytes(&self) -> usize {
        let entry = MAX_KEY_BYTES + ENTRY_BYTES + std::mem::size_of::<F>() + self.empty.heap_bytes();
        self.max_keys.saturating_mul(entry)
    }
}

/// The keys kept by the selection, in byte order, with their noisy counts and folds.
pub struct Selection<F> {
    pub kept: Vec<(String, BigInt, F)>,
    pub threshold: Threshold,
    /// The noise of every count (the Laplace calibration the selection drew with).
    pub noise: Calibrated,
}

/// Draws every observed key's noisy count at `eps` and keeps those at or above τ (module doc).
pub fn select<F>(
    keys: Keys<F>,
    eps: &Epsilon,
    delta: &Delta,
    unit: Neighbours,
    rng: &mut dyn RngCore,
) -> Result<Selection<F>, Error> {
    select_at(keys, eps, threshold(eps, delta, unit), unit, rng)
}

/// [`select`] with its threshold computed already (it is a function of ε, δ and the unit).
fn select_at<F>(
    keys: Keys<F>,
    eps: &Epsilon,
    threshold: Threshold,
    unit: Neighbours,
    rng: &mut dyn RngCore,
) -> Result<Selection<F>, Error> {
    let mut names = Vec::with_capacity(keys.len());
    let (mut counts, mut folds) = (Vec::with_capacity(keys.len()), Vec::with_capacity(keys.len()));
    for (name, (count, fold)) in keys {
        names.push(name);
        counts.push(count);
        folds.push(fold);
    }
    // Each row counts towards one key: Δ₁ = 1 (add-remove) or 2 (replace: one key −1, another
    // +1), so the scale is 1/ε or 2/ε, the threshold's.
    let sensitivity = match unit {
        Neighbours::AddRemove => 1,
        Neighbours::Replace => 2,
    };
    let aggregate = Aggregate {
        value: counts.into_iter().map(i128::from).collect(),
        sensitivity,
        l2_squared: sensitivity,
        grid: Grid::UNIT,
    };
    let drawn = noise::draw_each(&aggregate, &Mechanism::Laplace(eps.clone()), rng);
    match &drawn.noise {
        Calibrated::Laplace(c) if c.scale == threshold.scale => {}
        _ => return Err(Error::internal("the selection's noise is not the threshold's")),
    }
    let kept = names
        .into_iter()
        .zip(drawn.value)
        .zip(folds)
        .filter(|((_, noisy), _)| *noisy >= threshold.tau)
        .map(|((name, noisy), fold)| (String::from_utf8_lossy(&name).into_owned(), noisy, fold))
        .collect();
    Ok(Selection { kept, threshold, noise: drawn.noise })
}

/// The scan fold of `--by COL --discover` (COL at `index`) for `statistic`.
pub fn keyed_fold<S: Statistic>(
    statistic: &S,
    indices: &[usize],
    index: usize,
    discovery: &Discovery,
) -> Keyed<S::Fold> {
    Keyed::new(index, discovery.max_keys, statistic.fold(indices))
}

/// What a discovery release states about itself (JSON `discovery`).
pub fn info(
    selection_threshold: &Threshold,
    delta: &Delta,
    discovery: &Discovery,
    released: usize,
) -> DiscoveryInfo {
    DiscoveryInfo {
        threshold: saturating_i128(&selection_threshold.tau),
        delta: delta.to_f64_up(),
        delta_exact: delta.exact_string(),
        max_keys: discovery.max_keys,
        keys_released: released,
    }
}

/// The post-processing note every discovery release carries.
pub fn selection_note(tau: &BigInt) -> String {
    format!(
        "keys found in the data: only keys whose noisy count reached the threshold {tau} are released, \
         sorted; a released count near the threshold is biased upwards (a key with few rows shows only \
         when its noise was large), and keys with fewer rows may exist unreleased"
    )
}

/// `--by COL --discover`: the selection, then `statistic` in every released group (module doc).
/// `cx` carries the whole ε (Laplace) and the privacy unit.
pub fn publish<S: Statistic>(
    statistic: &S,
    keyed: Keyed<S::Fold>,
    by: String,
    discovery: &Discovery,
    cx: &Context,
    rng: &mut dyn RngCore,
) -> Result<GroupedRelease, Error> {
    let eps = cx.epsilon()?;
    let keys = keyed.into_keys()?;
    let counting = statistic.name() == "count";
    // A count is the selection's own noisy count; anything else gets half of ε.
    let selection_eps = if counting { eps.clone() } else { eps.split(2) };
    let selection = select(keys, &selection_eps, &discovery.delta, cx.neighbours, rng)?;
    let spend = Spend::Approx { eps: selection_eps.clone(), delta: discovery.delta.clone() };
    let tau = selection.threshold.tau.clone();
    let mut groups = Vec::with_capacity(selection.kept.len());
    let rest = Mechanism::Laplace(eps.split(2));
    let inner = Context { mechanism: &rest, grouped: true, ..*cx };
    for (key, noisy, fold) in selection.kept {
        let release = if counting {
            let accuracy = Accuracy::value(cx.confidence, accuracy::single(&selection.noise, cx.confidence));
            let noise = Noise::single(&selection.noise, cx.neighbours, accuracy);
            let release = cx.release(statistic, noise, Cost::spent("count", spend.clone()))?;
            Release { value: Some(Number::Integer(saturating_i128(&noisy))), ..release }
        } else {
            match statistic.measure(fold, &inner, rng)? {
                Measured::Release(release) => release,
                Measured::Again(_) => {
                    return Err(Error::internal("a discovered group asked for a second pass"))
                }
            }
        };
        groups.push(Group { key, release });
    }
    let keys_cost = Cost::spent("keys", spend);
    let accounting = if counting {
        keys_cost
    } else if groups.is_empty() {
        // The statistic's share is spent whether or not a key was kept.
        Cost::sequential(vec![keys_cost, Cost::part("groups", &eps.split(2))])
    } else {
        let each = groups.iter().map(|g| g.release.accounting.clone().named(&g.key)).collect();
        Cost::sequential(vec![keys_cost, Cost::parallel(each).named("groups")])
    };
    let column = statistic.columns().first().map(|(c, _)| c.label());
    let released = groups.len();
    let mut grouped = GroupedRelease::with_accounting(
        statistic.name(),
        column,
        by,
        cx.neighbours,
        COMPOSITION,
        groups,
        accounting,
    )?;
    grouped.discovery = Some(info(&selection.threshold, &discovery.delta, discovery, released));
    grouped.post_processing = vec![selection_note(&tau)];
    Ok(grouped)
}

/// How a discovered grouping composes, in every such release.
pub const COMPOSITION: &str = "keys found in the data by partition selection: each observed key's row count \
     gets discrete Laplace noise and only keys reaching the threshold are released, (epsilon, delta)-DP; \
     for statistics other than count, epsilon is split in halves between the selection and the groups' \
     releases (parallel composition across the disjoint groups)";

/// A histogram's bins from the selection: every released key with its noisy count.
pub fn counts_of<F>(selection: &Selection<F>) -> Vec<(String, i128)> {
    selection.kept.iter().map(|(k, c, _)| (k.clone(), saturating_i128(c))).collect()
}

/// The per-bin accuracy of the selection's counts.
pub fn per_bin(selection_noise: &Calibrated, cx: &Context) -> Accuracy {
    Accuracy {
        scope: PER_BIN,
        ..Accuracy::value(cx.confidence, accuracy::single(selection_noise, cx.confidence))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::count::CountFold;
    use csv::ByteRecord;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn keyed(rows: &[&str], max_keys: usize) -> Result<Keyed<CountFold>, BadCell> {
        let mut fold = Keyed::new(0, max_keys, CountFold::default());
        for r in rows {
            fold.row(&Row::record(&ByteRecord::from(vec![*r])))?;
        }
        Ok(fold)
    }

    #[test]
    fn counts_keys_trimmed_and_in_byte_order() {
        let fold = keyed(&["b", " a ", "b", "", "c"], 10).unwrap();
        let keys = fold.into_keys().unwrap();
        let got: Vec<(&[u8], u64, u64)> = keys.iter().map(|(k, (n, f))| (&k[..], *n, f.rows)).collect();
        assert_eq!(got, vec![(&b""[..], 1, 1), (b"a", 1, 1), (b"b", 2, 2), (b"c", 1, 1)]);
    }

    #[test]
    fn the_cap_on_keys_and_key_length_refuses() {
        let err = keyed(&["a", "b", "c"], 2).err().unwrap();
        assert!(err.why.contains("more than 2 distinct keys"), "{}", err.why);
        assert!(keyed(&["a", "b", "a", "b"], 2).is_ok());
        let long = "x".repeat(MAX_KEY_BYTES + 1);
        assert!(keyed(&[&long], 10).err().unwrap().why.contains("longer than"));
        // Two parts of a scan that each fit can merge into too many.
        let (mut left, right) = (keyed(&["a", "b"], 3).unwrap(), keyed(&["c", "d"], 3).unwrap());
        left.merge(right);
        assert!(left.into_keys().is_err());
        // The worst case grows with the cap, so a huge cap is refused before any row.
        let small = Keyed::new(0, 10, CountFold::default()).heap_bytes();
        assert!(Keyed::new(0, 1_000_000, CountFold::default()).heap_bytes() > 10_000 * small);
    }

    #[test]
    fn merging_parts_equals_one_pass() {
        let rows = ["x", "y", "x", "z", "y", "x"];
        let whole = keyed(&rows, 10).unwrap();
        let mut left = keyed(&rows[..2], 10).unwrap();
        left.merge(keyed(&rows[2..], 10).unwrap());
        let summary = |k: Keyed<CountFold>| -> Vec<(Vec<u8>, u64)> {
            k.into_keys().unwrap().into_iter().map(|(k, (n, _))| (k.to_vec(), n)).collect()
        };
        assert_eq!(summary(left), summary(whole));
    }

    /// The selection keeps a key exactly when its noisy count reaches τ, and its noise has the
    /// threshold's scale: with huge counts every key is kept, with count 1 at a strict δ none.
    #[test]
    fn selection_keeps_keys_above_the_threshold() {
        let mut rng = ChaCha20Rng::seed_from_u64(5); // INSECURE: test-only seed
        let eps: Epsilon = "1".parse().unwrap();
        let delta: Delta = "1e-7".parse().unwrap();
        let mut keys: BTreeMap<Box<[u8]>, (u64, ())> = BTreeMap::new();
        keys.insert(b"big".to_vec().into(), (1_000, ()));
        keys.insert(b"small".to_vec().into(), (1, ()));
        let mut small_kept = 0;
        for _ in 0..200 {
            let s = select(keys.clone(), &eps, &delta, Neighbours::AddRemove, &mut rng).unwrap();
            assert_eq!(s.threshold.tau, BigInt::from(17));
            assert!(s.kept.iter().any(|(k, _, _)| k == "big"));
            small_kept += s.kept.iter().filter(|(k, _, _)| k == "small").count();
            assert!(s.kept.iter().all(|(_, c, _)| *c >= s.threshold.tau));
        }
        assert_eq!(small_kept, 0, "P = e^-16/(1 + e^-1) per draw");
    }

    /// Empirical privacy of the selection as released (keys and their noisy counts reduced to
    /// the set of keys released): on neighbours where the differing row creates a new key (add
    /// under add-remove; a row moved to a new key under replace), the hockey-stick divergence
    /// Σ_S max(0, P(S) − e^ε·P'(S)) of the released key sets stays within δ both ways, up to
    /// sampling error.
    #[test]
    fn a_new_key_moves_the_released_sets_by_at_most_delta() {
        let mut rng = ChaCha20Rng::seed_from_u64(9); // INSECURE: test-only seed
        let eps: Epsilon = "1".parse().unwrap();
        let delta: Delta = "0.01".parse().unwrap();
        let keys = |entries: &[(&str, u64)]| -> Keys<()> {
            entries.iter().map(|(k, n)| (k.as_bytes().to_vec().into_boxed_slice(), (*n, ()))).collect()
        };
        let n = 40_000;
        for (unit, d, neighbour) in [
            (Neighbours::AddRemove, keys(&[("a", 3), ("b", 6)]), keys(&[("a", 3), ("b", 6), ("c", 1)])),
            (Neighbours::Replace, keys(&[("a", 3), ("b", 6)]), keys(&[("a", 2), ("b", 6), ("c", 1)])),
        ] {
            let mut laws = vec![];
            for data in [&d, &neighbour] {
                let mut law: BTreeMap<Vec<String>, f64> = BTreeMap::new();
                let t = threshold(&eps, &delta, unit);
                for _ in 0..n {
                    let s = select_at(data.clone(), &eps, t.clone(), unit, &mut rng).unwrap();
                    *law.entry(s.kept.into_iter().map(|(k, _, _)| k).collect()).or_default() +=
                        1.0 / n as f64;
                }
                laws.push(law);
            }
            let e = std::f64::consts::E;
            let divergence = |p: &BTreeMap<Vec<String>, f64>, q: &BTreeMap<Vec<String>, f64>| {
                p.iter().map(|(s, &ps)| (ps - e * q.get(s).copied().unwrap_or(0.0)).max(0.0)).sum::<f64>()
            };
            let (forward, back) = (divergence(&laws[0], &laws[1]), divergence(&laws[1], &laws[0]));
            let slack = 4.0 * (0.01 / n as f64).sqrt();
            assert!(forward <= 0.01 + slack && back <= 0.01 + slack, "{unit:?}: {forward} {back}");
            // The new key shows with the exact tail probability P(1 + Z >= τ) (add-remove).
            let shown: f64 =
                laws[1].iter().filter(|(s, _)| s.contains(&"c".to_string())).map(|(_, p)| p).sum();
            assert!(shown <= 0.01 + slack, "{unit:?}: the new key shows with probability {shown}");
        }
    }
}
