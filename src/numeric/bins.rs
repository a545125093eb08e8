//! The public bins, categories and group keys of histograms and `--by`: from flags, never from
//! the data (keys or bins read off a column would reveal which values occur).

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::str::FromStr;

use num_rational::BigRational;
use num_traits::ToPrimitive;

use super::bounds::Bounds;
use super::exact::parse_decimal;
use super::format::real;
use super::list;

/// K equal-width public bins over [L, U]; values outside land in the edge bins.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bins {
    /// K + 1 edges, from L to U. Bin i is [edges[i], edges[i+1]) (the last one closed).
    edges: Vec<f64>,
}

/// The largest number of numeric bins or categories a histogram may have.
pub const MAX_BINS: usize = 1_000_000;

impl Bins {
    /// Edge i is L + i·(U − L)/K, computed exactly from the decimals L and U print as (what
    /// the flags said, or privately found bounds, powers of two) and rounded once to the
    /// nearest double: 0..0.7 in 5 bins has the edge 0.42, not 0.41999999999999993, so every
    /// edge prints as the grid value it is and a value on it falls in the bin its label says.
    pub fn new(bounds: Bounds, count: usize) -> Bins {
        let (l, u) = (bounds.lower(), bounds.upper());
        let k = count as f64;
        // Beyond i128 (bounds of very different magnitudes), a weighted mean of the ends,
        // halved first so it cannot overflow near ±f64::MAX.
        let weighted = |i: usize| ((l / 2.0) * (k - i as f64) + (u / 2.0) * i as f64) / k * 2.0;
        let ends = common_decimal(l, u);
        let edge = |i: usize| {
            ends.and_then(|(a, b, e)| decimal_edge(a, b, e, count, i)).unwrap_or_else(|| weighted(i))
        };
        let mut edges: Vec<f64> = (0..=count).map(edge).collect();
        edges[0] = l;
        edges[count] = u;
        Bins { edges }
    }

    pub fn len(&self) -> usize {
        self.edges.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bin of a finite value: the one whose printed edges hold it. Any deterministic map of a
    /// row to one bin keeps the L1 sensitivity at 1 / 2; this one also agrees with the labels.
    #[inline]
    pub fn index(&self, x: f64) -> usize {
        let interior = &self.edges[1..self.edges.len() - 1];
        interior.partition_point(|&e| e <= x)
    }

    /// Lower and upper edge of bin i.
    pub fn edges(&self, i: usize) -> (f64, f64) {
        (self.edges[i], self.edges[i + 1])
    }

    pub fn label(&self, i: usize) -> String {
        let (lo, hi) = self.edges(i);
        let show = real;
        format!("{}..{}", show(lo), show(hi))
    }
}

/// L and U as a·10^e and b·10^e with one exponent, from the shortest decimals they print as;
/// None when a or b would pass 10^30 (a·K + b·K must fit in an i128 for K up to a million).
fn common_decimal(l: f64, u: f64) -> Option<(i128, i128, i32)> {
    let parts = |x: f64| -> Option<(i128, i32)> {
        let text = format!("{x:e}");
        let (mantissa, exponent) = text.split_once('e')?;
        let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
        let digits: i128 = mantissa.replace('.', "").parse().ok()?;
        Some((digits, exponent.parse::<i32>().ok()? - decimals))
    };
    let ((ml, el), (mu, eu)) = (parts(l)?, parts(u)?);
    let e = el.min(eu);
    let scale = |m: i128, from: i32| -> Option<i128> {
        let shift = u32::try_from(from - e).ok().filter(|&s| s <= 30)?;
        m.checked_mul(10i128.pow(shift)).filter(|v| v.unsigned_abs() <= 10u128.pow(30))
    };
    Some((scale(ml, el)?, scale(mu, eu)?, e))
}

/// (a·(K − i) + b·i)·10^e / K, the double nearest it: one IEEE division, correctly rounded,
/// when numerator and denominator (10^e moved to whichever side) are exact doubles, else the
/// exact rational rounded to nearest.
fn decimal_edge(a: i128, b: i128, e: i32, count: usize, i: usize) -> Option<f64> {
    let k = count as i128;
    let n = a.checked_mul(k - i as i128)?.checked_add(b.checked_mul(i as i128)?)?;
    const EXACT: i128 = 1 << 53;
    let power = (e.unsigned_abs() <= 22).then(|| 10i128.pow(e.unsigned_abs()));
    let fraction =
        power.and_then(|p| if e >= 0 { Some((n.checked_mul(p)?, k)) } else { Some((n, k.checked_mul(p)?)) });
    if let Some((num, den)) = fraction.filter(|&(num, den)| num.abs() < EXACT && den < EXACT) {
        return Some(num as f64 / den as f64);
    }
    let exact = parse_decimal(&format!("{n}e{e}"))? / BigRational::from_integer(k.into());
    exact.to_f64().filter(|x| x.is_finite())
}

/// A public category list for a categorical histogram, plus the implicit bin `other` unless the
/// list is closed (`--closed`, [`Categories::close`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Categories {
    names: Vec<String>,
    /// `--closed`: the names are the whole domain; no `other`, and what a cell outside them is.
    closed: Option<Outside>,
    index: HashMap<Vec<u8>, usize>,
    /// Each name's length and, for names of at most 8 bytes, its bytes as one word ([`word`]).
    words: Vec<(usize, u64)>,
    /// When every name has at most 8 bytes (and there are not too many): a table in which each
    /// name has a slot of its own, so a cell is found with one hash and one compare.
    table: Option<Table>,
}

/// A perfect hash of short names: slot [`Table::slot`] of a name holds that name and its
/// index, and no two names share a slot. A cell is its name's only candidate: it is that name
/// exactly when the slot holds its length and word, else it is none of them (any other name
/// sits in another slot). Built by trying fixed multipliers, so the same list always gives
/// the same table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Table {
    multiplier: u64,
    /// 64 − log2 of the number of slots.
    shift: u32,
    slots: Box<[Slot]>,
}

/// A name as its [`word`] and length (an empty slot has a length no cell of at most 8 bytes
/// has), and its index.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Slot {
    word: u64,
    len: u64,
    index: u64,
}

/// Largest list hashed into a [`Table`], and its largest size in slots (16 bytes each).
const TABLE_NAMES: usize = 64;
const TABLE_SLOTS: usize = 4096;

impl Table {
    /// A table for `names` (each at most 8 bytes, all different), or None if none of the
    /// multipliers tried spreads them over at most [`TABLE_SLOTS`] slots.
    fn new(names: &[String]) -> Option<Table> {
        if names.len() > TABLE_NAMES || names.iter().any(|n| n.len() > 8) {
            return None;
        }
        let keys: Vec<(u64, u64)> = names.iter().map(|n| (word(n.as_bytes()), n.len() as u64)).collect();
        let mut slots = (2 * names.len()).next_power_of_two().max(16);
        // Multipliers from a fixed splitmix64 sequence (odd, so no input bit is lost).
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        while slots <= TABLE_SLOTS {
            let shift = 64 - slots.trailing_zeros();
            for _ in 0..64 {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                let multiplier = (z ^ (z >> 31)) | 1;
                let empty = Slot { word: 0, len: u64::MAX, index: names.len() as u64 };
                let mut table = Table { multiplier, shift, slots: vec![empty; slots].into_boxed_slice() };
                let mut clash = false;
                for (index, &(word, len)) in keys.iter().enumerate() {
                    let slot = &mut table.slots[table.slot(word, len)];
                    if slot.len != u64::MAX {
                        clash = true;
                        break;
                    }
                    *slot = Slot { word, len, index: index as u64 };
                }
                if !clash {
                    return Some(table);
                }
            }
            slots *= 2;
        }
        None
    }

    /// The slot of a word and length: the top bits of a multiplicative hash. The length goes
    /// in the top byte, which a word of fewer than 8 bytes leaves zero, so short names of
    /// different lengths never hash alike ("a" and "b\0" would under a plain xor).
    #[inline(always)]
    fn slot(&self, word: u64, len: u64) -> usize {
        ((word ^ (len << 56)).wrapping_mul(self.multiplier) >> self.shift) as usize
    }

    /// The index of the name a cell is, or `other` for none.
    #[inline(always)]
    fn find(&self, cell: &[u8], other: usize) -> usize {
        if cell.len() > 8 {
            return other;
        }
        let (word, len) = (word(cell), cell.len() as u64);
        let slot = self.slots[self.slot(word, len)];
        if slot.word == word && slot.len == len {
            slot.index as usize
        } else {
            other
        }
    }
}

/// At most 8 bytes as one word: the bytes, lowest first, then zeros (so two such words are
/// equal exactly when the bytes are, given the same length). Read with overlapping loads.
#[inline(always)]
pub fn word(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    debug_assert!(n <= 8);
    match n {
        0 => 0,
        1..=3 => {
            u64::from(bytes[0])
                | u64::from(bytes[n / 2]) << (8 * (n / 2))
                | u64::from(bytes[n - 1]) << (8 * (n - 1))
        }
        _ => {
            let first = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let last = u32::from_le_bytes([bytes[n - 4], bytes[n - 3], bytes[n - 2], bytes[n - 1]]);
            u64::from(first) | u64::from(last) << (8 * (n - 4))
        }
    }
}

/// Name of the bin that collects values not in the public list.
pub const OTHER: &str = "other";

/// What a closed list (`--closed`) does with a cell it does not list: such a cell is invalid
/// input, handled as `--invalid` says.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Outside {
    /// Refuse the row (`--invalid error`).
    Error,
    /// Drop the row (`--invalid skip`).
    Skip,
    /// Count the row under the listed name of this index (`--invalid impute=NAME`).
    Impute(usize),
}

/// A cell of a closed list that is not listed: the caller names the column and the row.
#[derive(Debug)]
pub struct NotListed;

impl NotListed {
    /// Why the cell is refused, in the words of an invalid number cell (`data::cell`); `flag`
    /// is the list's (`--keys`, `--categories`).
    pub fn why(cell: &[u8], flag: &str) -> String {
        let text = crate::error::shown(&String::from_utf8_lossy(cell), 40);
        format!(
            "'{text}' is not one of the {flag} listed, which --closed declares the whole domain; use \
             --invalid skip or --invalid impute=V (V one of the {flag})"
        )
    }
}

impl Categories {
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Declares the names the whole domain: no `other` bin, and a cell outside them handled by
    /// `outside` ([`Categories::slot`]).
    pub fn close(&mut self, outside: Outside) {
        self.closed = Some(outside);
    }

    pub fn closed(&self) -> Option<Outside> {
        self.closed
    }

    /// The counts released: the names, and `other` unless the list is closed.
    pub fn cells(&self) -> usize {
        self.names.len() + usize::from(self.closed.is_none())
    }

    /// The cell a (trimmed) cell counts in: its name's, `other` (`names.len()`) for one not
    /// listed, or with a closed list what [`Outside`] says (None: the row is dropped).
    #[inline]
    pub fn slot(&self, cell: &[u8]) -> Result<Option<usize>, NotListed> {
        let i = self.index(cell);
        match self.closed {
            Some(outside) if i == self.names.len() => match outside {
                Outside::Error => Err(NotListed),
                Outside::Skip => Ok(None),
                Outside::Impute(v) => Ok(Some(v)),
            },
            _ => Ok(Some(i)),
        }
    }

    /// The index of a listed name, for `--invalid impute=NAME`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name.as_bytes()).copied()
    }

    /// Index of a (trimmed) cell: its category, or `names.len()` for `other`. Names of at most
    /// 8 bytes are found in their table (one hash, one compare); otherwise a short list is
    /// searched in order (faster than hashing the cell), a long one hashed. All give the same
    /// answer.
    #[inline]
    pub fn index(&self, cell: &[u8]) -> usize {
        if let Some(table) = &self.table {
            return table.find(cell, self.names.len());
        }
        if self.names.len() <= 16 {
            if cell.len() <= 8 {
                // One word compare per name instead of a call to memcmp, and all of them: which
                // name a row holds is random, so stopping at the first match mispredicts.
                let key = (cell.len(), word(cell));
                let found = self
                    .words
                    .iter()
                    .enumerate()
                    .fold(0u32, |found, (i, &w)| found | u32::from(w == key) << i);
                return if found == 0 { self.names.len() } else { found.trailing_zeros() as usize };
            }
            return self.names.iter().position(|n| n.as_bytes() == cell).unwrap_or(self.names.len());
        }
        self.index.get(cell).copied().unwrap_or(self.names.len())
    }
}

impl FromStr for Categories {
    type Err = String;
    fn from_str(s: &str) -> Result<Categories, String> {
        Categories::parse_list(s, "category", "bin", "north,south,east")
    }
}

impl Categories {
    /// A comma-separated public list, CSV-quoted where a name holds a comma or a quote
    /// ([`list::values`]); `noun`, `role` (of `other`) and `example` word the messages.
    fn parse_list(s: &str, noun: &str, role: &str, example: &str) -> Result<Categories, String> {
        let names = list::values(s)?;
        let mut index = HashMap::new();
        for (i, name) in names.iter().enumerate() {
            if name.is_empty() {
                return Err(format!("a {noun} is empty; list them like {example}"));
            }
            if name == OTHER {
                return Err(format!(
                    "'{OTHER}' names the {role} for values not listed; it cannot be a {noun}"
                ));
            }
            if index.insert(name.as_bytes().to_vec(), i).is_some() {
                return Err(format!("{noun} '{name}' is listed twice"));
            }
        }
        if names.len() >= MAX_BINS {
            return Err(format!("at most {} {noun} values", MAX_BINS - 1));
        }
        let words =
            names.iter().map(|n| (n.len(), if n.len() <= 8 { word(n.as_bytes()) } else { 0 })).collect();
        let table = Table::new(&names);
        Ok(Categories { names, closed: None, index, words, table })
    }
}

/// The public group keys of `--by COL --keys k1,k2,...`: rows whose (trimmed) key is not
/// listed form one more group, `other`. Keys come from the flag, never from the data: keys
/// read off the column would reveal which values occur.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Keys(Categories);

impl Keys {
    /// The listed keys, without `other`.
    pub fn names(&self) -> &[String] {
        self.0.names()
    }

    /// Number of groups: the keys and `other` (none with `--closed`).
    pub fn groups(&self) -> usize {
        self.0.cells()
    }

    /// Name of group i (`other` for the last).
    pub fn label(&self, i: usize) -> &str {
        self.0.names().get(i).map_or(OTHER, String::as_str)
    }

    /// The index of a (trimmed) cell: its key's, or `names.len()` for one not listed.
    #[inline]
    pub fn index(&self, cell: &[u8]) -> usize {
        self.0.index(cell)
    }

    /// The group of a (trimmed) cell: [`Categories::slot`].
    #[inline]
    pub fn slot(&self, cell: &[u8]) -> Result<Option<usize>, NotListed> {
        self.0.slot(cell)
    }

    /// The list itself (to close it, or to look a key up).
    pub fn list(&self) -> &Categories {
        &self.0
    }

    pub fn list_mut(&mut self) -> &mut Categories {
        &mut self.0
    }
}

impl FromStr for Keys {
    type Err = String;
    fn from_str(s: &str) -> Result<Keys, String> {
        Categories::parse_list(s, "key", "group", "urban,rural").map(Keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::bounds::Finite;

    fn bounds(l: f64, u: f64) -> Bounds {
        Bounds::new(Finite::from_f64(l).unwrap(), Finite::from_f64(u).unwrap()).unwrap()
    }

    #[test]
    fn bins_cover_edges() {
        let b = Bins::new(bounds(0.0, 10.0), 5);
        assert_eq!(b.index(-3.0), 0);
        assert_eq!(b.index(0.0), 0);
        assert_eq!(b.index(1.99), 0);
        assert_eq!(b.index(2.0), 1);
        assert_eq!(b.index(9.99), 4);
        assert_eq!(b.index(10.0), 4);
        assert_eq!(b.index(1e308), 4);
        assert_eq!(b.label(1), "2..4");
        let wide = Bins::new(bounds(-f64::MAX, f64::MAX), 2);
        assert_eq!(wide.index(-1e307), 0);
        assert_eq!(wide.index(1e307), 1);
        let hundred = Bins::new(bounds(0.0, 100.0), 100);
        for k in 0..100 {
            assert_eq!(hundred.index(k as f64), k, "value {k}");
            assert_eq!(hundred.label(k), format!("{k}..{}", k + 1));
        }
        let tenths = Bins::new(bounds(-1.0, 1.0), 10);
        assert_eq!(tenths.index(-0.8), 1);
        assert_eq!(tenths.label(1), "-0.8..-0.6");
    }

    /// Edges are the grid values L + i·(U − L)/K with no binary noise: decimal bounds give
    /// decimal edges (a weighted mean in doubles gave 0.41999999999999993 for 0..0.7 in 5 bins),
    /// and a value on an edge is in the bin that edge opens.
    #[test]
    fn edges_are_the_grid_values_they_are() {
        let five = Bins::new(bounds(0.0, 0.7), 5);
        let labels: Vec<String> = (0..5).map(|i| five.label(i)).collect();
        assert_eq!(labels, ["0..0.14", "0.14..0.28", "0.28..0.42", "0.42..0.56", "0.56..0.7"]);
        assert_eq!(five.index(0.42), 3);
        let tenths = Bins::new(bounds(0.1, 0.7), 6);
        assert_eq!(tenths.label(2), "0.3..0.4");
        assert_eq!(Bins::new(bounds(-1.1, 2.2), 3).label(1), "0..1.1");
        // Privately found bounds are powers of two: their edges are exact decimals too.
        let private = Bins::new(bounds(8192.0, 262144.0), 5);
        assert_eq!(private.label(1), "58982.4..109772.8");
        // A third is no decimal: the double nearest it.
        assert_eq!(Bins::new(bounds(0.0, 1.0), 3).edges(1).0, 1.0 / 3.0);
        assert_eq!(Bins::new(bounds(0.0, 1.0), 3).edges(1).1, 2.0 / 3.0);
        // Every edge is the double nearest the exact decimal: checked against exact rationals.
        use crate::numeric::exact::parse_decimal;
        use num_traits::ToPrimitive;
        // (The last two are past one exact division: they take the 40-place decimal.)
        for (l, u) in [
            ("0", "0.7"),
            ("-3", "7.9"),
            ("0.001", "1000000"),
            ("-0.7", "0.2"),
            ("2.5", "100"),
            ("0.123456789012345", "987654321.5"),
            ("-987654321.25", "-0.000123456789"),
        ] {
            let (lr, ur) = (parse_decimal(l).unwrap(), parse_decimal(u).unwrap());
            for k in [1usize, 3, 7, 10, 12, 37, 100] {
                let b = Bins::new(bounds(l.parse().unwrap(), u.parse().unwrap()), k);
                for i in 0..=k {
                    let exact = &lr + (&ur - &lr) * num_rational::BigRational::new(i.into(), k.into());
                    let edge = if i < k { b.edges(i).0 } else { b.edges(k - 1).1 };
                    assert_eq!(edge, exact.to_f64().unwrap(), "{l}..{u} in {k}: edge {i}");
                }
            }
        }
        // Bounds too far apart in magnitude for one exponent keep the weighted mean.
        let wide = Bins::new(bounds(-f64::MAX, f64::MAX), 2);
        assert_eq!(wide.edges(0).1, 0.0);
    }

    /// The word compare finds the same category as comparing bytes, for names and cells of
    /// any length around 8 and bytes that differ anywhere.
    #[test]
    fn categories_are_found_by_their_bytes() {
        use proptest::prelude::*;
        let mut runner = proptest::test_runner::TestRunner::default();
        let names = proptest::collection::hash_set("[ab\\x00é]{1,10}", 1..8);
        runner
            .run(&(names, "[ab\\x00é]{0,10}"), |(names, cell)| {
                let names: Vec<String> = names.into_iter().collect();
                let categories: Categories = names.join(",").parse().unwrap();
                let names = categories.names().to_vec();
                let want = names.iter().position(|n| n.as_bytes() == cell.as_bytes()).unwrap_or(names.len());
                prop_assert_eq!(categories.index(cell.as_bytes()), want);
                for name in &names {
                    prop_assert_eq!(
                        categories.names()[categories.index(name.as_bytes())].as_str(),
                        name.as_str()
                    );
                }
                Ok(())
            })
            .unwrap();
    }

    /// The perfect hash finds the same category as comparing bytes, for lists of up to
    /// [`TABLE_NAMES`] short names (NUL bytes included: "a" and "a\0" share a word) and cells
    /// of any length around 8.
    #[test]
    fn categories_are_found_by_their_slot() {
        use proptest::prelude::*;
        let mut runner = proptest::test_runner::TestRunner::default();
        let names = proptest::collection::hash_set("[ab\\x00]{1,8}", 1..TABLE_NAMES + 1);
        runner
            .run(&(names, proptest::collection::vec("[ab\\x00]{0,10}", 1..20)), |(names, cells)| {
                let names: Vec<String> = names.into_iter().collect();
                let categories: Categories = names.join(",").parse().unwrap();
                prop_assert!(categories.table.is_some());
                let names = categories.names().to_vec();
                for cell in cells.iter().chain(&names) {
                    let want =
                        names.iter().position(|n| n.as_bytes() == cell.as_bytes()).unwrap_or(names.len());
                    prop_assert_eq!(categories.index(cell.as_bytes()), want, "{:?} in {:?}", cell, names);
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn short_names_get_a_table_and_others_do_not() {
        let table = |list: &str| list.parse::<Categories>().unwrap().table.is_some();
        assert!(table("north,south,east,west,central,islands"));
        assert!(table("a,a\0,\0,\0\0,abcdefgh"));
        assert!(table("a,b\0"));
        let many: Vec<String> = (0..TABLE_NAMES + 1).map(|i| format!("c{i}")).collect();
        assert!(table(&many[..TABLE_NAMES].join(",")));
        assert!(!table(&many.join(",")));
        assert!(!table("north,abcdefghi"));
        let c: Categories = "a,a\0,abcdefgh".parse().unwrap();
        for (cell, want) in
            [(&b"a"[..], 0), (b"a\0", 1), (b"abcdefgh", 2), (b"abcdefghi", 3), (b"", 3), (b"a\0\0", 3)]
        {
            assert_eq!(c.index(cell), want, "{cell:?}");
        }
    }

    #[test]
    fn categories_are_validated() {
        assert!("a,b".parse::<Categories>().is_ok());
        assert!("a,,b".parse::<Categories>().is_err());
        assert!("a,a".parse::<Categories>().is_err());
        assert!("a,other".parse::<Categories>().is_err());
        assert_eq!("x,,y".parse::<Keys>().unwrap_err(), "a key is empty; list them like urban,rural");
        let k: Keys = "u, r".parse().unwrap();
        assert_eq!((k.groups(), k.index(b"r"), k.index(b"z"), k.label(2)), (3, 1, 2, "other"));
        let c: Categories = "north, south".parse().unwrap();
        assert_eq!(c.index(b"south"), 1);
        // CSV-quoted names keep their commas and quotes: the keys asked for, not their pieces.
        let k: Keys = "\"Smith, Ann\",Lee, \"say \"\"hi\"\"\"".parse().unwrap();
        assert_eq!(k.names(), ["Smith, Ann", "Lee", "say \"hi\""]);
        assert_eq!((k.index(b"Smith, Ann"), k.index(b"say \"hi\""), k.index(b"\"Smith")), (0, 2, 3));
        assert!("\"Smith, Ann,Lee".parse::<Keys>().unwrap_err().contains("never closed"));
        assert!("\"a,b\",\"a,b\"".parse::<Categories>().unwrap_err().contains("listed twice"));
        assert!("\"\",b".parse::<Categories>().unwrap_err().contains("empty"));
        assert_eq!(c.index(b"west"), 2);
        // Short lists are searched in order, long ones hashed: the same bins.
        let many: Vec<String> = (0..40).map(|i| format!("c{i}")).collect();
        let long: Categories = many.join(",").parse().unwrap();
        let short: Categories = many[..16].join(",").parse().unwrap();
        for cell in ["c0", "c15", "c16", "c39", "c40", "", "c"] {
            let want = many.iter().position(|m| m == cell);
            assert_eq!(long.index(cell.as_bytes()), want.unwrap_or(40), "{cell}");
            assert_eq!(short.index(cell.as_bytes()), want.filter(|&i| i < 16).unwrap_or(16), "{cell}");
        }
    }
}
