//! The privacy unit: what two neighbouring datasets differ by. Every sensitivity in dpstat is
//! stated for one of these two, and every release names the one it was computed under.

/// The privacy unit (`--neighbours`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
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
