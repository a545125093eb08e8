//! The public bins, categories and group keys of histograms and `--by`: from flags, never from
//! the data (keys or bins read off a column would reveal which values occur).

use std::collections::HashMap;
use std::str::FromStr;

use super::bounds::Bounds;
use super::format::real;

/// K equal-width public bins over [L, U]; values outside land in the edge bins.
#[derive(Clone, Debug, PartialEq)]
pub struct Bins {
    /// K + 1 edges, from L to U. Bin i is [edges[i], edges[i+1]) (the last one closed).
    edges: Vec<f64>,
}

/// The largest number of numeric bins or categories a histogram may have.
pub const MAX_BINS: usize = 1_000_000;

impl Bins {
    pub fn new(bounds: Bounds, count: usize) -> Bins {
        let (l, u) = (bounds.lower(), bounds.upper());
        let k = count as f64;
        // A weighted mean of the ends puts integer edges on integers (0..100 in 100 bins gives
        // 28, not 28.000000000000004); halved first so it cannot overflow near ±f64::MAX.
        let edge = |i: usize| ((l / 2.0) * (k - i as f64) + (u / 2.0) * i as f64) / k * 2.0;
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

/// A public category list for a categorical histogram, plus the implicit bin `other`.
#[derive(Clone, Debug, PartialEq)]
pub struct Categories {
    names: Vec<String>,
    index: HashMap<Vec<u8>, usize>,
    /// Each name's length and, for names of at most 8 bytes, its bytes as one word ([`word`]).
    words: Vec<(usize, u64)>,
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

impl Categories {
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Index of a (trimmed) cell: its category, or `names.len()` for `other`. A short list is
    /// searched in order (faster than hashing the cell); both give the same answer.
    #[inline]
    pub fn index(&self, cell: &[u8]) -> usize {
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
    /// A comma-separated public list; `noun`, `role` (of `other`) and `example` word the messages.
    fn parse_list(s: &str, noun: &str, role: &str, example: &str) -> Result<Categories, String> {
        let names: Vec<String> = s.split(',').map(|c| c.trim().to_string()).collect();
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
        Ok(Categories { names, index, words })
    }
}

/// The public group keys of `--by COL --keys k1,k2,...`: rows whose (trimmed) key is not
/// listed form one more group, `other`. Keys come from the flag, never from the data: keys
/// read off the column would reveal which values occur.
#[derive(Clone, Debug, PartialEq)]
pub struct Keys(Categories);

impl Keys {
    /// The listed keys, without `other`.
    pub fn names(&self) -> &[String] {
        self.0.names()
    }

    /// Number of groups: the keys and `other`.
    pub fn groups(&self) -> usize {
        self.0.names().len() + 1
    }

    /// Name of group i (`other` for the last).
    pub fn label(&self, i: usize) -> &str {
        self.0.names().get(i).map_or(OTHER, String::as_str)
    }

    /// The group of a (trimmed) cell.
    #[inline]
    pub fn index(&self, cell: &[u8]) -> usize {
        self.0.index(cell)
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
