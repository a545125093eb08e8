//! Routing rows: the `--where` filters first, then, with `--by`, each remaining row to the fold
//! of its group (the trimmed key cell, listed keys or `other`). A row's group is a deterministic
//! function of the row, so the groups partition the rows (see `query::group` for what that
//! means for privacy).

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::data::filter::{passes, Test};
use crate::data::row::{text_cell, BadCell, Fold, Row};
use crate::numeric::bins::{Keys, NotListed};

/// Resolved filters: column index and the test its trimmed cell must pass.
pub type FilterList = Vec<(usize, Test)>;

/// The rows of column `index` grouped by the public `keys`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupBy {
    pub index: usize,
    pub keys: Arc<Keys>,
}

/// Applies filters, then routes every remaining row to the fold of its group (one fold when
/// there is no `--by`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Routed<F> {
    filters: Arc<[(usize, Test)]>,
    by: Option<GroupBy>,
    pub groups: Vec<F>,
    /// The groups a person's rows went to since the last `person_end`, when the folds listen
    /// for persons: closing only these keeps the work per person in its own rows, not in the
    /// number of groups (10,000 keys times a million persons otherwise).
    #[serde(skip)]
    touched: Vec<usize>,
}

impl<F: Fold> Routed<F> {
    pub fn new(fold: F, filters: FilterList, by: Option<GroupBy>) -> Routed<F> {
        let n = by.as_ref().map_or(1, |b| b.keys.groups());
        Routed { filters: filters.into(), by, groups: vec![fold; n], touched: Vec::new() }
    }

    /// The fold that sees every row, when there are neither filters nor groups: a scan may
    /// then feed it values it has read itself instead of the rows.
    pub fn plain(&mut self) -> Option<&mut F> {
        match (self.filters.is_empty(), &self.by, self.groups.as_mut_slice()) {
            (true, None, [only]) => Some(only),
            _ => None,
        }
    }

    /// The group of a row; None for a row dropped by a closed key list (`--closed`
    /// `--invalid skip`), an error for one it refuses.
    #[inline]
    fn group(&self, record: &Row) -> Result<Option<usize>, BadCell> {
        let Some(b) = &self.by else { return Ok(Some(0)) };
        let cell = text_cell(record, b.index);
        b.keys.slot(cell).map_err(|_| BadCell { column: b.index, why: NotListed::why(cell, "--keys") })
    }
}

impl<F: Fold> Fold for Routed<F> {
    #[inline]
    fn row(&mut self, record: &Row) -> Result<(), BadCell> {
        if !passes(record, &self.filters) {
            return Ok(());
        }
        match self.group(record)? {
            Some(g) => {
                let group = &mut self.groups[g];
                if self.by.is_some() && self.touched.last() != Some(&g) && group.hears_persons() {
                    self.touched.push(g);
                }
                group.row(record)
            }
            None => Ok(()),
        }
    }
    fn merge(&mut self, other: Self) {
        for (mine, theirs) in self.groups.iter_mut().zip(other.groups) {
            mine.merge(theirs);
        }
    }
    fn widest_column(&self) -> Option<usize> {
        let own = self.filters.iter().map(|(i, _)| *i).chain(self.by.as_ref().map(|b| b.index));
        own.chain(self.groups.first().and_then(Fold::widest_column)).max()
    }
    fn heap_bytes(&self) -> usize {
        self.groups.iter().map(|g| std::mem::size_of::<F>() + g.heap_bytes()).sum()
    }
    /// Each group holds at most the part's rows.
    fn part_heap_bytes(&self, rows: usize) -> usize {
        self.groups.iter().map(|g| std::mem::size_of::<F>() + g.part_heap_bytes(rows)).sum()
    }
    fn part_end(&mut self) {
        self.groups.iter_mut().for_each(Fold::part_end);
    }
    /// Each group the person's rows went to hears it (a person's rows may have gone to
    /// several); a group that got none has no open person to close.
    fn person_end(&mut self) {
        if let [only] = self.groups.as_mut_slice() {
            return only.person_end();
        }
        for g in self.touched.drain(..) {
            self.groups[g].person_end();
        }
    }
    fn hears_persons(&self) -> bool {
        self.groups.first().is_some_and(Fold::hears_persons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use csv::ByteRecord;

    /// Counts the rows it is fed.
    #[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
    struct Rows(u64);

    impl Fold for Rows {
        fn row(&mut self, _: &Row) -> Result<(), BadCell> {
            self.0 += 1;
            Ok(())
        }
        fn merge(&mut self, other: Self) {
            self.0 += other.0;
        }
        fn widest_column(&self) -> Option<usize> {
            None
        }
    }

    #[test]
    fn routes_rows_to_their_group_after_filters() {
        let by = GroupBy { index: 0, keys: Arc::new("a,b".parse().unwrap()) };
        let mut fold = Routed::new(Rows::default(), vec![(1, Test::Equals(b"y".to_vec().into()))], Some(by));
        for (key, keep) in [("a", "y"), ("b", "y"), ("b", "n"), ("zz", "y"), (" a ", "y"), ("", "y")] {
            fold.row(&Row::record(&ByteRecord::from(vec![key, keep]))).unwrap();
        }
        let counts: Vec<u64> = fold.groups.iter().map(|c| c.0).collect();
        assert_eq!(counts, vec![2, 1, 2]);
        assert_eq!(fold.widest_column(), Some(1));
    }
}
