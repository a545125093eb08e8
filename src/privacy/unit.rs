//! The privacy unit: what two neighbouring datasets differ by. Every sensitivity in dpstat is
//! stated for one of these two, and every release names the one it was computed under.

use serde::{Deserialize, Serialize};

/// The privacy unit (`--neighbours`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Neighbours {
    /// One row added or removed; the number of rows is private.
    #[default]
    AddRemove,
    /// One row's values changed; the number of rows n is public.
    Replace,
}

impl Neighbours {
    pub fn name(self) -> &'static str {
        match self {
            Neighbours::AddRemove => "add-remove",
            Neighbours::Replace => "replace",
        }
    }

    /// The unit named `name`, as flags and workload files spell it.
    pub fn from_name(name: &str) -> Option<Neighbours> {
        [Neighbours::AddRemove, Neighbours::Replace].into_iter().find(|n| n.name() == name)
    }
}

// The contribution bounds of one person live here, with the unit they define, and not with the
// mechanisms in `contribution`: the executors (`data::bound`) apply them, and no executor may
// reach the noise (tests/layers.rs).

/// The largest value of each bound: K² must fit the factor of ρ (a `u32`).
pub const MAX_BOUND: u32 = 10_000;

/// The contribution bounds of one person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// K: rows per person, in all.
    pub rows: u32,
    /// G: `--by` groups per person.
    pub groups: u32,
    /// K_g: rows per person in one group.
    pub rows_per_group: u32,
}

impl Default for Bounds {
    /// One row per person, in one group: a release then counts people, as BigQuery's
    /// defaults do.
    fn default() -> Bounds {
        Bounds { rows: 1, groups: 1, rows_per_group: 1 }
    }
}

/// By how much the row-level budget of a release is multiplied for one person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Factor {
    /// T: for ε (and for every Δ₁ the release states).
    pub pure: u32,
    /// K'_g·T: for ρ (and, square-rooted, for every Δ₂).
    pub rho: u32,
}

impl Factor {
    /// Row level: nothing changes.
    pub const ONE: Factor = Factor { pure: 1, rho: 1 };
}

impl Bounds {
    /// The factor for a release that is one statistic over all kept rows (`grouped` false) or
    /// one per `--by` group.
    pub fn factor(&self, grouped: bool) -> Factor {
        let k = self.rows;
        if !grouped {
            return Factor { pure: k, rho: k * k };
        }
        let per_group = self.rows_per_group.min(k);
        let total = k.min(self.groups.saturating_mul(per_group));
        Factor { pure: total, rho: per_group * total }
    }

    /// The bounds a person has as "rows" of a release of one value per person and group
    /// (`query::per_id`: `--total-per-id`, `--average-per-id`): one value in each group they
    /// appear in, so in at most min(G, K) groups (K kept rows fill at most K groups); one value
    /// in all without `--by`. Its factor is 1 ungrouped; T = min(G, K) for ε and for ρ grouped
    /// (each group moves by one value: Σ r_g² = Σ r_g = T).
    pub fn one_value_each(&self, grouped: bool) -> Bounds {
        let rows = if grouped { self.rows.min(self.groups) } else { 1 };
        Bounds { rows, groups: self.groups, rows_per_group: 1 }
    }

    /// An error naming the flag whose value is out of 1..=[`MAX_BOUND`].
    pub fn check(&self) -> Result<(), String> {
        for (value, flag) in [
            (self.rows, "--max-rows-per-id"),
            (self.groups, "--max-groups-per-id"),
            (self.rows_per_group, "--max-rows-per-group"),
        ] {
            if value == 0 || value > MAX_BOUND {
                return Err(format!("{flag} {value}: give a whole number from 1 to {MAX_BOUND}"));
            }
        }
        Ok(())
    }
}
