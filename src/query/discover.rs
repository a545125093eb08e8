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
//! **Keys too long, keys too many: no stop that the rows decide.** A key is its first
//! [`MAX_KEY_BYTES`] bytes, cut back to the start of a UTF-8 character ([`key_of`]): a public
//! rule applied to each row on its own, so each row still counts towards exactly one key and
//! every argument above holds (two long keys with the same first 256 bytes are one key). Memory
//! holds at most `--max-keys` = C keys, checked against the fold cap before anything is read or
//! charged (`data::scan::check_memory`). Whether the data has more is decided by a noisy test
//! that is part of the release ([`KeyCap`]): with D the number of distinct keys (sensitivity 1
//! under both units: a row added, removed or changed creates or removes at most one key, net),
//! the release is withheld (`Error::Withheld`, exit 5) iff D + Z > C − m, Z discrete Laplace of
//! scale 1/ε_c, m = ⌈ln(1/δ_c)/ε_c⌉ (`privacy::threshold::cap_margin`), and always when D > C
//! (the keys past C were never stored). The always-rule differs from the pure Laplace test only
//! when Z <= −(m + 1), of probability p with p·(1 + e^(ε_c)) = e^(−ε_c·m) <= δ_c, so the test is
//! (ε_c, δ_c)-DP; it takes ε_c = ε/10 and δ_c = δ/10 of the release, the selection (and the
//! statistic) the rest, and the release is (ε, δ)-DP by basic composition (Dwork & Roth 2014,
//! Thm 3.16). A withheld outcome is this release: charged and recorded under a ledger, its line
//! names only flags and m. `--max-keys` <= m is refused before the charge (the test would
//! withhold almost surely). Before this, a file with more keys or a longer key stopped the run
//! after the charge, and the exit code answered a membership question exactly (issue 24).
//!
//! **Per person** (`--privacy-id`, add-remove only). The rows are bounded first
//! (`data::bound`, [`Bounded::found_keys`](crate::data::bound::Bounded::found_keys)): each
//! person keeps at most G keys (the G holding most of that person's rows, equal counts ordered
//! by the keyed hash of (id, key): the rule of public groups; of a person with more than
//! `--max-keys` keys the G lowest-ranked, so that one person's tally is bounded by the flags),
//! K_g rows in each and K in all, so a person's kept rows fall in at most
//! g = min(G, K) keys ([`Persons::keys_each`]). The keys count **distinct persons**, not rows (or
//! τ would have to grow with K): bounding replays each person's kept rows together and then
//! calls `Fold::person_end`, so [`Keyed::per_person`] counts a person once per key holding one
//! number per key, never a set of persons, and the rows wait in bounding's spillable buckets.
//! Adding or removing a person then moves at most g keys' counts by 1 each and D by at most g:
//! - the key cap's test runs at sensitivity g: noise of scale g/ε_c, margin
//!   ⌈g·ln(1/δ_c)/ε_c⌉ + g − 1 ([`KeyCap::new`]), still (ε_c, δ_c)-DP per person;
//! - each key is thresholded at (ε_s/g, δ_s/g), (ε_s, δ_s)-DP per person by basic composition
//!   over the g keys a person touches ([`select_per_key`], with its citations);
//! - the statistic in the kept groups runs on the bounded rows at its share divided by the
//!   factor T = min(K, G·K'_g) (`privacy::contribution`, group privacy), restated per person
//!   (`Published::per_person`), ε_stat-DP per person; releasing only the kept groups is
//!   post-processing of the selection and of the statistic computed in every possible group.
//!
//! So the whole is (ε_c + ε_s + ε_stat, δ_c + δ_s) = (ε, δ)-DP per person; the accounting tree
//! has the parts `key cap` and `keys` as (ε, δ) spent per person directly, and the groups as a
//! per-person node over their row-level costs (group privacy does not scale (ε, δ) parts, which
//! is why the selection counts persons instead). A count of at most one row per person and key
//! (min(K_g, K) = 1, the default) is the selection's own noisy count of persons, which is then
//! its count of kept rows; another count, or any other statistic, takes half of the rest.
//!
//! **In a workload** (`discover = true`, `cmd::workload::Found`) one selection serves several
//! statistics: it is a part of its own, (ε_sel, δ), split by [`Shares`] as a release whose
//! counts are the selection's ([`select_keys`], [`selection_cost`]); each statistic is then
//! measured in the kept keys at its own share ([`measure_groups`]). The argument above holds
//! with the sum of the statistics' ε in place of one statistic's: a unit's rows move, in the
//! keys they fall in, the selection's counts and every statistic's release, and a key only
//! they create changes the output only if selected. [`Keyed`] closes a person in the folds of
//! the keys they touched, so a statistic of one value per person works there too.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::One;
use rand::RngCore;

use crate::data::row::{text_cell, BadCell, Fold, Row};
use crate::error::Error;
use crate::numeric::grid::Grid;
use crate::privacy::accountant::Cost;
use crate::privacy::accuracy;
use crate::privacy::contribution::{Bounds, Factor, Unit};
use crate::privacy::currency::Spend;
use crate::privacy::delta::Delta;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::laplace::Aggregate;
use crate::privacy::noise::{self, Calibrated, Mechanism};
use crate::privacy::sampler::discrete_laplace;
use crate::privacy::threshold::{cap_margin, threshold, Threshold};
use crate::privacy::unit::Neighbours;
pub use crate::query::options::Discovery;
use crate::query::statistic::{Context, Measured, Statistic};
use crate::report::release::{
    saturating_i128, Accuracy, DiscoveryInfo, Group, GroupedRelease, KeyCapInfo, Noise, Number,
    PersonSelection, Published, Release, PER_BIN,
};

/// `--max-keys` when not given.
pub const DEFAULT_MAX_KEYS: usize = 100_000;
/// The longest key, and the key a cell counts under (in `data::row`, which bounding shares).
pub use crate::data::row::{key_of, MAX_KEY_BYTES};

/// The share of a discovery release that pays for the key cap's noisy test (module doc): ε/10
/// and δ/10, and the margin m. Flags only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyCap {
    /// C, `--max-keys`.
    pub max_keys: usize,
    /// g: how many distinct keys one unit can add, the sensitivity of their number D (1 for a
    /// row; for a person, the keys they keep rows in: [`Persons::keys_each`]).
    pub per_unit: u32,
    /// ε_c: the test's share of ε.
    pub eps: Epsilon,
    /// δ_c: the test's share of δ.
    pub delta: Delta,
    /// m = ⌈ln(1/δ_c)/ε_c⌉: the test withholds iff the noisy number of keys exceeds C − m.
    pub margin: BigInt,
    /// What is left for the selection (and the statistic): 9ε/10 and 9δ/10.
    pub rest_eps: Epsilon,
    pub rest_delta: Delta,
}

impl KeyCap {
    /// The test's shares of `eps` and `discovery.delta` when one unit adds at most `per_unit`
    /// keys; refuses a `--max-keys` the test would almost surely exceed (before the charge:
    /// flags only).
    ///
    /// With g = `per_unit`, D has sensitivity g, so the test's noise has scale g/ε_c (ε_c-DP)
    /// and its margin is m = ⌈g·ln(1/δ_c)/ε_c⌉ + g − 1 (`cap_margin` at ε_c/g, plus g − 1): with
    /// q = e^(−ε_c/g) the forced outcome differs from the pure test with probability
    /// p = q^(m+1)/(1 + q), and p·(1 + e^(ε_c)) = q^(m+1)·(1 + q^(−g))/(1 + q) <= q^(m+1−g)
    /// (as q^g <= q) <= δ_c. At g = 1 this is the row-level m = ⌈ln(1/δ_c)/ε_c⌉.
    pub fn new(eps: &Epsilon, discovery: &Discovery, per_unit: u32) -> Result<KeyCap, Error> {
        let per_unit = per_unit.max(1);
        let tenth = BigRational::new(BigInt::one(), BigInt::from(10));
        let delta_of = |r: BigRational| {
            Delta::from_rational(r)
                .map_err(|e| Error::usage(format!("--delta: a tenth of it for the key cap: {e}")))
        };
        let delta = delta_of(discovery.delta.as_rational() * &tenth)?;
        let rest_delta = delta_of(discovery.delta.as_rational() * (BigRational::one() - &tenth))?;
        let cap_eps = eps.share(1, 10);
        let margin = cap_margin(&cap_eps.split(per_unit), &delta) + BigInt::from(per_unit - 1);
        if BigInt::from(discovery.max_keys) <= margin {
            return Err(Error::usage(format!(
                "--max-keys {} leaves no room for the noisy test of the key cap at this --eps and                  --delta: it must exceed {margin}, and exceed the number of keys by about twice that                  for the keys to be released",
                discovery.max_keys
            )));
        }
        Ok(KeyCap {
            max_keys: discovery.max_keys,
            per_unit,
            eps: cap_eps,
            rest_eps: eps.share(9, 10),
            delta,
            rest_delta,
            margin,
        })
    }

    /// The test's own cost, for the accounting tree.
    pub fn cost(&self) -> Cost {
        Cost::spent("key cap", Spend::Approx { eps: self.eps.clone(), delta: self.delta.clone() })
    }

    /// The noisy test on the keys observed (module doc): `Ok` to release, else the withheld
    /// outcome. The noise is drawn whatever the count, so the draw order is the same for every
    /// dataset.
    fn test(&self, observed: usize, overflow: bool, rng: &mut dyn RngCore) -> Result<(), Error> {
        let c = BigInt::from(self.max_keys);
        let d = if overflow { &c + 1 } else { BigInt::from(observed) };
        let scale = BigRational::from_integer(self.per_unit.into()) / self.eps.as_rational();
        let noisy = d.clone() + discrete_laplace(rng, &scale);
        if d > c || noisy > &c - &self.margin {
            return Err(Error::withheld(format!(
                "more distinct keys than --max-keys {} allows, by a noisy test that is part of this release (epsilon {} and delta {} of it); nothing else is released: raise --max-keys to the number of keys plus {}, or narrow the rows with --where",
                self.max_keys,
                self.eps,
                self.delta,
                &self.margin * 2
            )));
        }
        Ok(())
    }
}
/// What one entry of the key map costs besides its key and fold (tree node share, box, count).
const ENTRY_BYTES: usize = 64;

/// Every observed key (its bytes) with its row count (with persons: its number of distinct
/// persons) and its own fold, in byte order.
pub type Keys<F> = BTreeMap<Box<[u8]>, (u64, F)>;

/// Per observed key (the trimmed cell of column `index`): its row count and its own fold.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Keyed<F> {
    index: usize,
    max_keys: usize,
    empty: F,
    keys: Keys<F>,
    /// More distinct keys than the cap were seen (the keys are then dropped: the release is
    /// withheld whatever they hold).
    overflow: bool,
    /// Counting persons ([`Keyed::per_person`]): the keys the current person's rows fell in so
    /// far, and the most one person can have.
    person: Option<(HashSet<Box<[u8]>>, u32)>,
}

impl<F: Fold> Keyed<F> {
    pub fn new(index: usize, max_keys: usize, empty: F) -> Keyed<F> {
        Keyed { index, max_keys, empty, keys: BTreeMap::new(), overflow: false, person: None }
    }

    /// Counts distinct persons per key instead of rows: fed by contribution bounding
    /// (`data::bound`), which replays each person's kept rows together and then calls
    /// [`Fold::person_end`], a key counts a person once, at the person's first row in it. So
    /// what is held is one number per key, never a set of persons; the set held is the keys of
    /// one person, at most `keys_each` of them. Parts are never merged here (bounding replays
    /// into one fold), and merged parts would have to hold disjoint persons.
    pub fn per_person(mut self, keys_each: u32) -> Keyed<F> {
        self.person = Some((HashSet::new(), keys_each));
        self
    }

    /// The keys observed, each with its row count and fold, in byte order, once the key cap's
    /// noisy test lets them through ([`KeyCap`]); else the withheld outcome.
    pub fn into_keys(self, cap: &KeyCap, rng: &mut dyn RngCore) -> Result<Keys<F>, Error> {
        if cap.max_keys != self.max_keys {
            return Err(Error::internal("the key cap tested is not the one the scan kept"));
        }
        cap.test(self.keys.len(), self.overflow, rng)?;
        Ok(self.keys)
    }

    /// Past the cap: the outcome is decided (withheld), so nothing more is kept.
    fn overflowed(&mut self) {
        self.overflow = true;
        self.keys.clear();
    }
}

impl<F: Fold> Fold for Keyed<F> {
    #[inline]
    fn row(&mut self, row: &Row) -> Result<(), BadCell> {
        if self.overflow {
            return Ok(());
        }
        let key = key_of(text_cell(row, self.index));
        // A row counts, or with persons the person's first row in this key.
        let counts = match &mut self.person {
            None => true,
            Some((seen, _)) => !seen.contains(key) && seen.insert(key.into()),
        };
        if let Some((n, fold)) = self.keys.get_mut(key) {
            *n += u64::from(counts);
            return fold.row(row);
        }
        if self.keys.len() >= self.max_keys {
            self.overflowed();
            return Ok(());
        }
        let mut fold = self.empty.clone();
        fold.row(row)?;
        self.keys.insert(key.into(), (u64::from(counts), fold));
        Ok(())
    }

    /// Closes the person in the folds of the keys their rows went to (a fold of one value per
    /// person needs it), and forgets those keys.
    fn person_end(&mut self) {
        if let Some((seen, _)) = &mut self.person {
            if self.empty.hears_persons() {
                for key in seen.iter() {
                    if let Some((_, fold)) = self.keys.get_mut(key) {
                        fold.person_end();
                    }
                }
            }
            seen.clear();
        }
    }

    fn hears_persons(&self) -> bool {
        self.person.is_some()
    }

    fn part_end(&mut self) {
        self.keys.values_mut().for_each(|(_, fold)| fold.part_end());
    }

    fn merge(&mut self, other: Self) {
        if self.overflow || other.overflow {
            return self.overflowed();
        }
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
        if self.keys.len() > self.max_keys {
            self.overflowed();
        }
    }

    fn widest_column(&self) -> Option<usize> {
        Some(self.empty.widest_column().map_or(self.index, |w| w.max(self.index)))
    }

    /// The worst case, whatever the data: the cap of keys at the longest key each. The scan
    /// refuses it above its limit before any row is read, and holds one copy only when it is
    /// large.
    fn heap_bytes(&self) -> usize {
        let entry = MAX_KEY_BYTES + ENTRY_BYTES + std::mem::size_of::<F>() + self.empty.heap_bytes();
        let one_person =
            self.person.as_ref().map_or(0, |(_, each)| *each as usize * (MAX_KEY_BYTES + ENTRY_BYTES));
        self.max_keys.saturating_mul(entry).saturating_add(one_person)
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
pub fn info(selection_threshold: &Threshold, cap: &KeyCap, released: usize) -> DiscoveryInfo {
    DiscoveryInfo {
        threshold: saturating_i128(&selection_threshold.tau),
        delta: cap.rest_delta.to_f64_up(),
        delta_exact: cap.rest_delta.exact_string(),
        max_keys: cap.max_keys,
        key_cap: KeyCapInfo {
            margin: saturating_i128(&cap.margin),
            epsilon: cap.eps.to_f64_up(),
            epsilon_exact: cap.eps.exact_string(),
            delta: cap.delta.to_f64_up(),
            delta_exact: cap.delta.exact_string(),
        },
        keys_released: released,
        per_person: None,
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

/// The person as the unit of a discovery (`--privacy-id`): what the release states, and the
/// bounds each person's rows were cut to before the keys were counted.
#[derive(Clone, Debug)]
pub struct Persons {
    pub unit: Unit,
    pub bounds: Bounds,
}

impl Persons {
    /// g: the most keys one person's kept rows fall in: G (`--max-groups-per-id`), and never
    /// more than K, since every such key holds one of the person's at most K kept rows.
    pub fn keys_each(&self) -> u32 {
        self.bounds.groups.min(self.bounds.rows)
    }

    /// Whether a person keeps at most one row per key (min(K_g, K) = 1): then a key's number of
    /// persons is its number of kept rows, and a count is the selection's own noisy count.
    pub fn one_row_per_key(&self) -> bool {
        self.bounds.rows_per_group.min(self.bounds.rows) == 1
    }
}

/// How a discovery release splits its (ε, δ), from flags only: the key cap's test, the
/// selection and the statistic in the released groups (module doc).
#[derive(Clone, Debug)]
pub struct Shares {
    pub cap: KeyCap,
    /// ε_s of the selection per unit: all that the key cap leaves when the released counts are
    /// the selection's own, else half of it. Its δ_s is `cap.rest_delta`.
    pub selection_eps: Epsilon,
    /// What each key's count is thresholded at, (ε_s/g, δ_s/g) with g = `cap.per_unit`
    /// ([`select_per_key`]).
    pub per_key_eps: Epsilon,
    pub per_key_delta: Delta,
    /// ε of the statistic in the released groups per unit (the other half); None when the
    /// counts are the selection's.
    pub statistic_eps: Option<Epsilon>,
}

impl Shares {
    /// The shares of `eps` and `discovery.delta` for a release whose counts are the selection's
    /// (`counted`) or not, when one unit adds to at most `per_unit` keys.
    pub fn new(eps: &Epsilon, discovery: &Discovery, counted: bool, per_unit: u32) -> Result<Shares, Error> {
        let cap = KeyCap::new(eps, discovery, per_unit)?;
        let (selection_eps, statistic_eps) = if counted {
            (cap.rest_eps.clone(), None)
        } else {
            (cap.rest_eps.split(2), Some(cap.rest_eps.split(2)))
        };
        let per_key_eps = selection_eps.split(cap.per_unit);
        let per_key_delta = Delta::from_rational(cap.rest_delta.as_rational() / BigInt::from(cap.per_unit))
            .map_err(|e| {
            Error::usage(format!("--delta: its share for each of {} keys: {e}", cap.per_unit))
        })?;
        Ok(Shares { cap, selection_eps, per_key_eps, per_key_delta, statistic_eps })
    }

    /// What the selection spends per unit, (ε_s, δ_s).
    pub fn selection_spend(&self) -> Spend {
        Spend::Approx { eps: self.selection_eps.clone(), delta: self.cap.rest_delta.clone() }
    }

    /// What a release states about a selection that counted persons.
    pub fn person_info(&self) -> PersonSelection {
        PersonSelection {
            counts: "distinct persons",
            keys_per_person: self.cap.per_unit,
            epsilon: self.selection_eps.to_f64_up(),
            epsilon_exact: self.selection_eps.exact_string(),
            epsilon_per_key: self.per_key_eps.to_f64_up(),
            epsilon_per_key_exact: self.per_key_eps.exact_string(),
            delta_per_key: self.per_key_delta.to_f64_up(),
            delta_per_key_exact: self.per_key_delta.exact_string(),
        }
    }
}

/// The selection when one unit (a person) adds 1 to the counts of at most g keys (g =
/// `shares.cap.per_unit`): every key's count is thresholded as a row-level selection at
/// (ε_s/g, δ_s/g), and the whole is (ε_s, δ_s)-DP per unit.
///
/// **Proof** (add-remove; the form of Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo,
/// Gipson, "Differentially private SQL with bounded user contribution", PoPETs 2020, and of
/// Google's `PartitionSelection` with `max_partitions_contributed`). Each key's output (nothing,
/// or its noisy count if it reaches τ) depends on its own count and its own independent noise
/// only, and for a count that moves by 1 (a key created or removed included) it is
/// (ε_s/g, δ_s/g)-DP ([`threshold`] with one row per key). A person moves at most g keys'
/// counts by 1 each and no other key's output law, so by basic composition over those keys
/// (Dwork & Roth 2014, Thm 3.16) the release is (ε_s, δ_s)-DP per person. For g = 1 this is
/// the row-level selection applied to persons; the optimum for g = 1 is Desfontaines, Voss,
/// Gipson, Mandayam, "Differentially private partition selection", PoPETs 2022, which
/// releases no counts (here the counts are released with the keys, so Laplace it is).
pub fn select_per_key<F>(
    keys: Keys<F>,
    shares: &Shares,
    rng: &mut dyn RngCore,
) -> Result<Selection<F>, Error> {
    select(keys, &shares.per_key_eps, &shares.per_key_delta, Neighbours::AddRemove, rng)
}

/// The key cap's test on the keys `keyed` observed, then the selection among them at
/// `shares` (module doc): row-level under `neighbours`, or per key at (ε_s/g, δ_s/g) when the
/// keys counted persons ([`select_per_key`]).
pub fn select_keys<F: Fold>(
    keyed: Keyed<F>,
    shares: &Shares,
    persons: bool,
    neighbours: Neighbours,
    rng: &mut dyn RngCore,
) -> Result<Selection<F>, Error> {
    let keys = keyed.into_keys(&shares.cap, rng)?;
    if persons {
        select_per_key(keys, shares, rng)
    } else {
        select(keys, &shares.selection_eps, &shares.cap.rest_delta, neighbours, rng)
    }
}

/// What a selection costs: the key cap's test, then the keys, each (ε, δ) spent directly.
pub fn selection_cost(shares: &Shares) -> Cost {
    Cost::sequential(vec![shares.cap.cost(), Cost::spent("keys", shares.selection_spend())])
}

/// The noise a kept key's count carries when it is the selection's own noisy count.
pub fn counted_noise(selection_noise: &Calibrated, cx: &Context) -> Noise {
    let accuracy = Accuracy::value(cx.confidence, accuracy::single(selection_noise, cx.confidence));
    Noise::single(selection_noise, cx.neighbours, accuracy)
}

/// `statistic` in every kept group (`kept`: key and fold), measured with `inner` (its row-level
/// ε `row_eps`), and what the groups cost together: parallel composition across the disjoint
/// groups, and the share spent whether or not a key was kept (module doc).
pub fn measure_groups<S: Statistic>(
    statistic: &S,
    kept: impl IntoIterator<Item = (String, S::Fold)>,
    inner: &Context,
    row_eps: &Epsilon,
    rng: &mut dyn RngCore,
) -> Result<(Vec<Group>, Cost), Error> {
    let mut groups = vec![];
    for (key, fold) in kept {
        let release = match statistic.measure(fold, inner, rng)? {
            Measured::Release(release) => release,
            Measured::Again(_) => return Err(Error::internal("a discovered group asked for a second pass")),
        };
        groups.push(Group { key, release });
    }
    let cost = if groups.is_empty() {
        Cost::part("groups", row_eps)
    } else {
        Cost::parallel(groups.iter().map(|g| g.release.accounting.clone().named(&g.key)).collect())
            .named("groups")
    };
    Ok((groups, cost))
}

/// `--by COL --discover`: the selection, then `statistic` in every released group (module doc).
/// `cx` carries the whole ε (Laplace) and the privacy unit; with `persons`, the keyed fold
/// counted distinct persons on rows bounded per person (`data::bound`).
pub fn publish<S: Statistic>(
    statistic: &S,
    keyed: Keyed<S::Fold>,
    by: String,
    discovery: &Discovery,
    cx: &Context,
    persons: Option<&Persons>,
    rng: &mut dyn RngCore,
) -> Result<GroupedRelease, Error> {
    let eps = cx.epsilon()?;
    // A count is the selection's own noisy count (with persons, when a person keeps one row per
    // key); anything else gets half of what the key cap leaves.
    let counted = statistic.name() == "count" && persons.is_none_or(Persons::one_row_per_key);
    let shares = Shares::new(eps, discovery, counted, persons.map_or(1, Persons::keys_each))?;
    let selection = select_keys(keyed, &shares, persons.is_some(), cx.neighbours, rng)?;
    let spend = shares.selection_spend();
    let tau = selection.threshold.tau.clone();
    // The statistic runs at row level on the bounded rows: its ε divided by what one person
    // moves the groups' releases by (`privacy::contribution`; 1 for rows).
    let factor = persons.map_or(Factor::ONE, |p| p.bounds.factor(true));
    let statistic_eps = shares.statistic_eps.clone().unwrap_or_else(|| shares.selection_eps.clone());
    let row_eps = statistic_eps.split(factor.pure);
    let rest = Mechanism::Laplace(row_eps.clone());
    let inner = Context { mechanism: &rest, grouped: true, ..*cx };
    let column = statistic.columns().first().map(|(c, _)| c.label());
    let released = selection.kept.len();
    let (groups, groups_cost) = if counted {
        (counted_groups(statistic, selection.kept, &selection.noise, cx, &spend, persons)?, None)
    } else {
        let kept = selection.kept.into_iter().map(|(key, _, fold)| (key, fold));
        let (groups, cost) = measure_groups(statistic, kept, &inner, &row_eps, rng)?;
        match persons {
            None => (groups, Some(cost)),
            Some(p) => {
                let part = GroupedRelease::with_accounting(
                    statistic.name(),
                    column.clone(),
                    by.clone(),
                    cx.neighbours,
                    PER_PERSON_COMPOSITION,
                    groups,
                    cost,
                )?;
                let (groups, cost) = per_person_groups(part, p, factor)?;
                (groups, Some(cost))
            }
        }
    };
    let keys_cost = Cost::spent("keys", spend);
    let accounting =
        Cost::sequential([shares.cap.cost(), keys_cost].into_iter().chain(groups_cost).collect());
    let composition = if persons.is_some() { PER_PERSON_COMPOSITION } else { COMPOSITION };
    let mut grouped = GroupedRelease::with_accounting(
        statistic.name(),
        column,
        by,
        cx.neighbours,
        composition,
        groups,
        accounting,
    )?;
    let mut about = info(&selection.threshold, &shares.cap, released);
    if let Some(p) = persons {
        about.per_person = Some(shares.person_info());
        grouped.unit = p.unit.clone();
    }
    grouped.discovery = Some(about);
    grouped.post_processing = vec![selection_note(&tau)];
    Ok(grouped)
}

/// The released keys of a count: each key's noisy count from the selection itself (its
/// noise and its share of ε, `spend`), stated for the unit.
fn counted_groups<S: Statistic>(
    statistic: &S,
    kept: Vec<(String, BigInt, S::Fold)>,
    noise: &Calibrated,
    cx: &Context,
    spend: &Spend,
    persons: Option<&Persons>,
) -> Result<Vec<Group>, Error> {
    let mut groups = Vec::with_capacity(kept.len());
    for (key, noisy, _) in kept {
        let release = cx.release(statistic, counted_noise(noise, cx), Cost::spent("count", spend.clone()))?;
        let unit = persons.map_or(Unit::Row, |p| p.unit.clone());
        let release = Release { value: Some(Number::Integer(saturating_i128(&noisy))), unit, ..release };
        groups.push(Group { key, release });
    }
    Ok(groups)
}

/// The groups' row-level releases restated per person: their costs × the factor.
fn per_person_groups(
    part: GroupedRelease,
    persons: &Persons,
    factor: Factor,
) -> Result<(Vec<Group>, Cost), Error> {
    let mut part = Published::Grouped(part);
    part.per_person(persons.unit.clone(), factor, PER_PERSON_COMPOSITION)?;
    let Published::Grouped(part) = part else {
        return Err(Error::internal("a grouped release restated as one"));
    };
    Ok((part.groups, part.accounting))
}

/// How a discovered grouping composes, in every such release.
pub const COMPOSITION: &str = "keys found in the data by partition selection: a noisy test of the number \
     of distinct keys against --max-keys takes a tenth of epsilon and delta; each observed key's row count \
     gets discrete Laplace noise and only keys reaching the threshold are released, (epsilon, delta)-DP; \
     for statistics other than count, the rest of epsilon is split in halves between the selection and \
     the groups' releases (parallel composition across the disjoint groups)";

/// How a discovered grouping composes per person (`--privacy-id`).
pub const PER_PERSON_COMPOSITION: &str = "keys found in the data by partition selection, per person: each \
     person's rows are bounded first, so they fall in at most keys_per_person keys; a noisy test of the \
     number of distinct keys (sensitivity keys_per_person) against --max-keys takes a tenth of epsilon and \
     delta; each observed key's number of distinct persons gets discrete Laplace noise at epsilon and delta \
     of the selection divided by keys_per_person, and only keys reaching the threshold are released; for \
     a statistic other than a count of one row per person and key, the rest of epsilon is split in halves \
     between the selection and the groups' releases, which run at their half divided by rows_factor on the \
     bounded rows (group privacy), so the whole is (epsilon, delta)-DP per person";

/// How a workload's query on discovered groups composes (`discover = true` in `dpstat run`).
pub const WORKLOAD_COMPOSITION: &str = "groups found in the data by the workload's one partition selection \
     (its own part, named selection): this query is released at its share in every selected group \
     (parallel composition across the disjoint groups), and a group not selected is not released";

/// How a workload's selection composes: its release is the keys with their noisy counts.
pub const WORKLOAD_SELECTION: &str = "the workload's partition selection: a noisy test of the number of \
     distinct keys against max_keys takes a tenth of its epsilon and delta; each observed key's number of \
     rows (per person: of distinct persons, at the rest divided by keys_per_person) gets discrete Laplace \
     noise and only keys reaching the threshold are released, with those noisy counts, (epsilon, \
     delta)-DP; every query with discover = true is released on these keys only";

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
    use crate::data::bound::{Bounded, Plan};
    use crate::privacy::accountant::Total;
    use crate::query::count::{Count, CountFold};
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

    fn discovery(max_keys: usize) -> Discovery {
        Discovery { delta: "1e-6".parse().unwrap(), max_keys }
    }

    /// A cap far above any test here: its test lets every small key set through.
    fn roomy() -> KeyCap {
        KeyCap::new(&"1".parse().unwrap(), &discovery(10_000), 1).unwrap()
    }

    #[test]
    fn counts_keys_trimmed_and_in_byte_order() {
        let fold = keyed(&["b", " a ", "b", "", "c"], 10_000).unwrap();
        let keys = fold.into_keys(&roomy(), &mut ChaCha20Rng::seed_from_u64(1)).unwrap();
        let got: Vec<(&[u8], u64, u64)> = keys.iter().map(|(k, (n, f))| (&k[..], *n, f.rows)).collect();
        assert_eq!(got, vec![(&b""[..], 1, 1), (b"a", 1, 1), (b"b", 2, 2), (b"c", 1, 1)]);
    }

    /// A long key counts under its first 256 bytes, cut at a character boundary; nothing about
    /// it stops the scan.
    #[test]
    fn long_keys_count_under_their_first_bytes() {
        assert_eq!(key_of(b"short"), b"short");
        let long = "x".repeat(MAX_KEY_BYTES + 44);
        assert_eq!(key_of(long.as_bytes()), &long.as_bytes()[..MAX_KEY_BYTES]);
        // "é" is two bytes: with 255 x's before it, byte 256 is its second byte, so the cut
        // moves back to 255 and the key stays valid UTF-8.
        let accented = format!("{}é{}", "x".repeat(MAX_KEY_BYTES - 1), "y".repeat(10));
        let cut = key_of(accented.as_bytes());
        assert_eq!(cut.len(), MAX_KEY_BYTES - 1);
        assert!(std::str::from_utf8(cut).is_ok());
        let other = format!("{}zzz", &long[..MAX_KEY_BYTES]);
        let fold = keyed(&[&long, &other, "a"], 10_000).unwrap();
        let keys = fold.into_keys(&roomy(), &mut ChaCha20Rng::seed_from_u64(2)).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys.get(&long.as_bytes()[..MAX_KEY_BYTES]).map(|(n, _)| *n), Some(2));
    }

    /// A cap the test would almost surely exceed is refused (flags only); past the cap nothing
    /// is kept, merged parts over the cap too, and the outcome is withheld, never an error of
    /// another kind.
    #[test]
    fn past_the_cap_nothing_is_kept_and_the_release_is_withheld() {
        // ε_c = 0.1, δ_c = 1e-7: m = ⌈16.12/0.1⌉ = 162, so a cap of 162 is refused.
        let err = KeyCap::new(&"1".parse().unwrap(), &discovery(162), 1).unwrap_err();
        assert!(matches!(&err, Error::Usage(m) if m.contains("must exceed 162")), "{err:?}");
        // ε = 10: ε_c = 1, m = ⌈ln(1e7)⌉ = 17; C = 40 withholds iff D + Z > 23.
        let cap = KeyCap::new(&"10".parse().unwrap(), &discovery(40), 1).unwrap();
        assert_eq!(cap.margin, BigInt::from(17));
        assert_eq!(cap.rest_eps.as_rational() + cap.eps.as_rational(), BigRational::from_integer(10.into()));
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let many: Vec<String> = (0..41).map(|i| format!("k{i}")).collect();
        let rows: Vec<&str> = many.iter().map(String::as_str).collect();
        let over = keyed(&rows, 40).unwrap();
        assert!(over.overflow && over.keys.is_empty());
        assert!(matches!(over.into_keys(&cap, &mut rng), Err(Error::Withheld(_))));
        let (mut left, right) = (keyed(&rows[..21], 40).unwrap(), keyed(&rows[21..], 40).unwrap());
        left.merge(right);
        assert!(matches!(left.into_keys(&cap, &mut rng), Err(Error::Withheld(_))));
        let few = keyed(&rows[..5], 40).unwrap();
        assert_eq!(few.into_keys(&cap, &mut rng).unwrap().len(), 5);
        // The worst case grows with the cap, so a huge cap is refused before any row.
        let small = Keyed::new(0, 10, CountFold::default()).heap_bytes();
        assert!(Keyed::new(0, 1_000_000, CountFold::default()).heap_bytes() > 10_000 * small);
    }

    /// The membership attack of issue 24 on the cap, as a neighbour test: two datasets whose
    /// distinct keys differ by one, at the test's boundary, are withheld with frequencies whose
    /// ratio is within e^(ε_c) both ways (the exact laws: P(Z >= 1) and P(Z >= 0)); far below
    /// the cap, a dataset and its neighbour are both released.
    #[test]
    fn the_cap_test_is_private_on_neighbours() {
        let cap = KeyCap::new(&"10".parse().unwrap(), &discovery(40), 1).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(11); // INSECURE: test-only seed
        let draws = 20_000;
        let withheld = |d: usize, rng: &mut ChaCha20Rng| {
            (0..draws).filter(|_| cap.test(d, false, rng).is_err()).count() as f64 / draws as f64
        };
        let (p23, p24) = (withheld(23, &mut rng), withheld(24, &mut rng));
        let q = (-1f64).exp();
        let (exact23, exact24) = (q / (1.0 + q), 1.0 / (1.0 + q));
        // sd of each frequency < 0.0035: 5 sd.
        assert!((p23 - exact23).abs() < 0.018 && (p24 - exact24).abs() < 0.018, "{p23} {p24}");
        let e = std::f64::consts::E;
        assert!(p24 <= e * p23 + 0.05 && (1.0 - p23) <= e * (1.0 - p24) + 0.05, "{p23} {p24}");
        // A wrong margin or scale shows: with no noise the two would be 0 and 1.
        assert!(p23 > 0.2 && p24 < 0.8);
        assert_eq!(withheld(3, &mut rng), 0.0);
    }

    #[test]
    fn merging_parts_equals_one_pass() {
        let rows = ["x", "y", "x", "z", "y", "x"];
        let whole = keyed(&rows, 10_000).unwrap();
        let mut left = keyed(&rows[..2], 10_000).unwrap();
        left.merge(keyed(&rows[2..], 10_000).unwrap());
        let summary = |k: Keyed<CountFold>| -> Vec<(Vec<u8>, u64)> {
            let keys = k.into_keys(&roomy(), &mut ChaCha20Rng::seed_from_u64(3)).unwrap();
            keys.into_iter().map(|(k, (n, _))| (k.to_vec(), n)).collect()
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

    /// Persons' rows (id, key) bounded by `bounds` and counted per person, as the scan does
    /// with `--privacy-id` (a `cap` of 0 forces every row through the temporary files).
    fn person_keys(rows: &[(&str, &str)], bounds: Bounds, cap: usize) -> Keyed<CountFold> {
        let persons = Persons { unit: Unit::Row, bounds };
        let plan = Plan {
            ids: vec![0],
            keep: vec![],
            names: vec![],
            filters: vec![],
            group: None,
            bounds,
            key: [7; 16],
            cap,
            threads: 1,
            decimal: Default::default(),
            max_groups_counted: None,
        };
        let keyed = Keyed::new(1, 10_000, CountFold::default()).per_person(persons.keys_each());
        let mut bounded = Bounded::found_keys(plan, 1, 10_000, keyed);
        for (id, key) in rows {
            bounded.row(&Row::record(&ByteRecord::from(vec![*id, *key]))).unwrap();
        }
        bounded.finish().unwrap()
    }

    /// Key → (distinct persons, kept rows).
    fn tally(keyed: Keyed<CountFold>) -> BTreeMap<String, (u64, u64)> {
        let keys = keyed.into_keys(&roomy(), &mut ChaCha20Rng::seed_from_u64(1)).unwrap();
        keys.into_iter().map(|(k, (n, f))| (String::from_utf8(k.to_vec()).unwrap(), (n, f.rows))).collect()
    }

    /// Five persons in `a` (one with three rows), three in `b`.
    fn base_rows() -> Vec<(String, String)> {
        let mut rows: Vec<(String, String)> = (1..=5).map(|i| (format!("p{i}"), "a".to_string())).collect();
        rows.extend((6..=8).map(|i| (format!("p{i}"), "b".to_string())));
        rows.extend([("p1".to_string(), "a".to_string()), ("p1".to_string(), "a".to_string())]);
        rows
    }

    fn as_refs(rows: &[(String, String)]) -> Vec<(&str, &str)> {
        rows.iter().map(|(i, k)| (i.as_str(), k.as_str())).collect()
    }

    /// Neighbours that differ by one person with 40 rows in one key: that key's count of
    /// persons moves by exactly 1 (its kept rows by at most K_g), and no other key moves; the
    /// spilled path counts the same.
    #[test]
    fn a_heavy_person_raises_their_key_by_one() {
        let bounds = Bounds { rows: 3, groups: 1, rows_per_group: 3 };
        let base = base_rows();
        let mut heavy = base.clone();
        heavy.extend((0..40).map(|_| ("z".to_string(), "a".to_string())));
        let before = tally(person_keys(&as_refs(&base), bounds, 1 << 30));
        let after = tally(person_keys(&as_refs(&heavy), bounds, 1 << 30));
        assert_eq!(before["a"].0, 5, "p1's three rows count once");
        assert_eq!(after["a"].0, before["a"].0 + 1);
        assert_eq!(after["a"].1, before["a"].1 + 3, "the heavy person keeps K_g rows");
        assert_eq!(after["b"], before["b"]);
        assert_eq!(after.len(), before.len());
        assert_eq!(tally(person_keys(&as_refs(&heavy), bounds, 0)), after, "spilled and in memory differ");
    }

    /// A person with rows in six keys adds 1 to exactly g = min(G, K) keys' counts (at most g
    /// new keys), changes nothing else, and the keys chosen do not depend on the row order.
    #[test]
    fn a_person_in_many_keys_counts_in_at_most_g() {
        let base = base_rows();
        let mut wide = base.clone();
        for k in ["a", "b", "k1", "k2", "k3", "k4"] {
            wide.extend([("y".to_string(), k.to_string()), ("y".to_string(), k.to_string())]);
        }
        for (bounds, g) in [
            (Bounds { rows: 5, groups: 2, rows_per_group: 5 }, 2),
            (Bounds { rows: 1, groups: 2, rows_per_group: 1 }, 1),
            (Bounds { rows: 10, groups: 4, rows_per_group: 1 }, 4),
        ] {
            let before = tally(person_keys(&as_refs(&base), bounds, 1 << 30));
            let after = tally(person_keys(&as_refs(&wide), bounds, 1 << 30));
            let keys: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
            let moved: Vec<i64> = keys
                .iter()
                .map(|k| {
                    let (b, a) = (before.get(*k).map_or(0, |c| c.0), after.get(*k).map_or(0, |c| c.0));
                    a as i64 - b as i64
                })
                .filter(|d| *d != 0)
                .collect();
            assert_eq!(moved, vec![1; g], "{bounds:?}: the counts moved by {moved:?}");
            let rows_added: u64 =
                after.values().map(|c| c.1).sum::<u64>() - before.values().map(|c| c.1).sum::<u64>();
            assert!(rows_added <= u64::from(bounds.factor(true).pure), "{bounds:?}: {rows_added} rows");
            let mut reversed = wide.clone();
            reversed.reverse();
            assert_eq!(tally(person_keys(&as_refs(&reversed), bounds, 0)), after, "{bounds:?}");
        }
    }

    /// The parts of a discovery's budget add up to exactly the ε and δ it is charged, and each
    /// key's share times g is the selection's, for every g.
    #[test]
    fn shares_add_up_to_the_charge() {
        let eps: Epsilon = "0.7".parse().unwrap();
        let d = discovery(100_000);
        for g in [1, 2, 7] {
            for counted in [true, false] {
                let s = Shares::new(&eps, &d, counted, g).unwrap();
                let statistic = s.statistic_eps.as_ref().map(|e| e.as_rational().clone()).unwrap_or_default();
                assert_eq!(
                    s.cap.eps.as_rational() + s.selection_eps.as_rational() + statistic,
                    *eps.as_rational()
                );
                assert_eq!(
                    s.cap.delta.as_rational() + s.cap.rest_delta.as_rational(),
                    *d.delta.as_rational()
                );
                let times_g = |r: &BigRational| r * BigInt::from(g);
                assert_eq!(times_g(s.per_key_eps.as_rational()), *s.selection_eps.as_rational());
                assert_eq!(times_g(s.per_key_delta.as_rational()), *s.cap.rest_delta.as_rational());
                assert_eq!(s.statistic_eps.is_none(), counted);
            }
        }
    }

    /// A person-level discovery's accounting: the key cap and the selection are (ε, δ) parts
    /// per person, the statistic a per-person node over its row-level costs, and the whole is
    /// exactly the (ε, δ) charged; the selection's threshold is the per-key one.
    #[test]
    fn person_discovery_accounts_for_exactly_the_charge() {
        let mut rows = base_rows();
        for i in 0..60 {
            rows.push((format!("q{i}"), "big".to_string()));
            rows.push((format!("q{i}"), "big".to_string()));
        }
        let eps: Epsilon = "4".parse().unwrap();
        let d = discovery(10_000);
        let mechanism = Mechanism::Laplace(eps.clone());
        let cx = Context {
            mechanism: &mechanism,
            neighbours: Neighbours::AddRemove,
            confidence: "0.95".parse().unwrap(),
            grouped: true,
            filters: &[],
            source: "test",
        };
        let charged = Total::Approx { eps: eps.as_rational().clone(), delta: d.delta.as_rational().clone() };
        // One row per person and key: the counts are the selection's; else the statistic runs
        // at its share divided by the factor T = min(K, G·K_g).
        for (bounds, counted) in [
            (Bounds { rows: 1, groups: 1, rows_per_group: 1 }, true),
            (Bounds { rows: 4, groups: 2, rows_per_group: 2 }, false),
        ] {
            let persons = Persons { unit: Unit::person(vec!["id".into()], &bounds, true), bounds };
            let keyed = person_keys(&as_refs(&rows), bounds, 1 << 30);
            let mut rng = ChaCha20Rng::seed_from_u64(3); // INSECURE: test-only seed
            let grouped =
                publish(&Count::default(), keyed, "k".into(), &d, &cx, Some(&persons), &mut rng).unwrap();
            assert_eq!(grouped.accounting.total().unwrap(), charged, "{bounds:?}");
            let Cost::Sequential { parts, .. } = &grouped.accounting else {
                panic!("{:?}", grouped.accounting)
            };
            let shares = Shares::new(&eps, &d, counted, persons.keys_each()).unwrap();
            assert_eq!(parts[0], shares.cap.cost());
            assert_eq!(parts[1], Cost::spent("keys", shares.selection_spend()));
            match (counted, &parts[2..]) {
                (true, []) => {}
                (false, [Cost::Person { factor, inner }]) => {
                    assert_eq!(*factor, bounds.factor(true));
                    let row_level = shares.statistic_eps.clone().unwrap().split(factor.pure);
                    assert_eq!(inner.total().unwrap(), Total::Pure(row_level.as_rational().clone()));
                }
                (_, rest) => panic!("{bounds:?}: {rest:?}"),
            }
            let about = grouped.discovery.as_ref().unwrap();
            let per_key = threshold(&shares.per_key_eps, &shares.per_key_delta, Neighbours::AddRemove);
            assert_eq!(about.threshold, saturating_i128(&per_key.tau));
            assert_eq!(about.per_person.as_ref().unwrap().keys_per_person, persons.keys_each());
            assert_eq!(grouped.unit, persons.unit);
            // "big" (60 persons) is released, in the person unit.
            assert!(grouped.groups.iter().any(|g| g.key == "big"), "{bounds:?}");
            assert!(grouped.groups.iter().all(|g| g.release.unit == persons.unit));
        }
    }

    /// The key cap's test when a unit adds up to g = 3 keys: its margin is ⌈3·ln(1/δ_c)/ε_c⌉ + 2
    /// and its failure event within δ_c; on neighbours whose numbers of keys differ by 3 at the
    /// boundary, the withheld frequencies stay within e^(ε_c) both ways (exactly e^(ε_c) apart
    /// in law), which a scale of 1/ε_c would break (e^(3ε_c)).
    #[test]
    fn the_cap_test_for_persons_is_private_on_neighbours() {
        let cap = KeyCap::new(&"10".parse().unwrap(), &discovery(120), 3).unwrap();
        // ε_c = 1, δ_c = 1e-7: 3·16.118 = 48.35, m = 49 + 2.
        assert_eq!(cap.margin, BigInt::from(51));
        let q = (-1f64 / 3.0).exp();
        let m = 51.0;
        assert!(q.powf(m + 1.0) / (1.0 + q) * (1.0 + 1f64.exp()) <= 1e-7);
        for g in [1u32, 2, 5, 40] {
            let c = KeyCap::new(&"2".parse().unwrap(), &discovery(100_000), g).unwrap();
            let (e, qg) = (0.2f64, (-0.2f64 / f64::from(g)).exp());
            let m = c.margin.to_string().parse::<f64>().unwrap();
            assert!(qg.powf(m + 1.0) / (1.0 + qg) * (1.0 + e.exp()) <= 1e-7 * (1.0 + 1e-9), "g {g}");
        }
        // Withheld iff D + Z > 120 − 51 = 69, Z of scale 3.
        let mut rng = ChaCha20Rng::seed_from_u64(12); // INSECURE: test-only seed
        let draws = 20_000;
        let mut withheld = |d: usize| {
            (0..draws).filter(|_| cap.test(d, false, &mut rng).is_err()).count() as f64 / draws as f64
        };
        let (low, high) = (withheld(66), withheld(69));
        let (exact_low, exact_high) = (q.powi(4) / (1.0 + q), q / (1.0 + q));
        // sd of each frequency < 0.0035: 5 sd.
        assert!((low - exact_low).abs() < 0.018 && (high - exact_high).abs() < 0.018, "{low} {high}");
        let e = std::f64::consts::E;
        assert!(high <= e * low + 0.05 && (1.0 - low) <= e * (1.0 - high) + 0.05, "{low} {high}");
        assert_eq!(withheld(10), 0.0);
        assert!(KeyCap::new(&"10".parse().unwrap(), &discovery(51), 3).is_err(), "C <= m is refused");
    }

    /// Empirical privacy of the per-key selection for persons: a person who creates two keys
    /// (g = 2) moves the released key sets by at most δ_s at e^(ε_s) (hockey-stick divergence,
    /// both ways), while thresholding each key at the whole (ε_s, δ_s) instead lets the two new
    /// keys show with about twice δ_s, which the same check catches.
    #[test]
    fn a_person_creating_g_keys_moves_the_released_sets_by_at_most_delta() {
        let mut rng = ChaCha20Rng::seed_from_u64(21); // INSECURE: test-only seed
        let eps: Epsilon = "1".parse().unwrap();
        let delta: Delta = "0.05".parse().unwrap();
        let keys = |entries: &[(&str, u64)]| -> Keys<()> {
            entries.iter().map(|(k, n)| (k.as_bytes().to_vec().into_boxed_slice(), (*n, ()))).collect()
        };
        let (d, neighbour) = (keys(&[("a", 40)]), keys(&[("a", 40), ("c", 1), ("d", 1)]));
        let per_key = (eps.split(2), Delta::from_rational(delta.as_rational() / BigInt::from(2)).unwrap());
        let n = 40_000;
        let e = std::f64::consts::E;
        let mut divergences = vec![];
        for (k_eps, k_delta) in [per_key, (eps.clone(), delta.clone())] {
            let t = threshold(&k_eps, &k_delta, Neighbours::AddRemove);
            let mut laws = vec![];
            for data in [&d, &neighbour] {
                let mut law: BTreeMap<Vec<String>, f64> = BTreeMap::new();
                for _ in 0..n {
                    let s =
                        select_at(data.clone(), &k_eps, t.clone(), Neighbours::AddRemove, &mut rng).unwrap();
                    *law.entry(s.kept.into_iter().map(|(k, _, _)| k).collect()).or_default() +=
                        1.0 / n as f64;
                }
                laws.push(law);
            }
            let divergence = |p: &BTreeMap<Vec<String>, f64>, q: &BTreeMap<Vec<String>, f64>| {
                p.iter().map(|(s, &ps)| (ps - e * q.get(s).copied().unwrap_or(0.0)).max(0.0)).sum::<f64>()
            };
            divergences.push(divergence(&laws[1], &laws[0]).max(divergence(&laws[0], &laws[1])));
        }
        let slack = 4.0 * (0.05 / n as f64).sqrt();
        assert!(divergences[0] <= 0.05 + slack, "per key (ε/2, δ/2): {}", divergences[0]);
        assert!(divergences[1] > 0.05 + slack, "per key (ε, δ) went unnoticed: {}", divergences[1]);
    }
}
