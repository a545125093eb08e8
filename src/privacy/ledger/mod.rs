//! The privacy-budget ledger: sequential composition across invocations (docs/DESIGN.md §5).
//!
//! **A ledger is a budget for a population, not for a file.** It holds one budget per dataset
//! name (`--dataset NAME`, else `default`), and every release charged to that name draws on it,
//! whatever bytes the data file has today: re-saving the file, converting its line endings or
//! appending next month's rows never opens a fresh budget. Each release's record also keeps a
//! fingerprint of the records it read ([`crate::data::fingerprint`]), for audit only.
//!
//! **Charged before the data are read.** A release appends its `charge` record (and fsyncs it)
//! after its flags and the header are checked and before the first data row is read, so
//! anything the run shows after that — the release, an error, its exit code — has been paid
//! for. When the release is complete a `released` record names the charge and the fingerprint.
//! A run that dies in between has spent its ε: budget is lost, never under-counted.
//!
//! **A chain, keyless or keyed.** The file is JSON lines. Line 1 is a header rewritten in place
//! (fixed width) after every append: the number of records and the chain's head. Every record
//! carries its sequence number, the link of the record before it (`prev`), and a charge carries
//! its dataset's running total (`spent`). So a record deleted or edited breaks the chain or a
//! running total, and a file cut at a line boundary holds fewer records than its header says:
//! each is refused with the line that is wrong, never rolled back. Who this stops depends on
//! the link (docs/DESIGN.md §5.3):
//! - keyless (format 2): the link is the SHA-256 of the line and the head that of the last
//!   line. Anyone can recompute them: this shows accidents, not an adversary, who can cut the
//!   last records and rewrite the header;
//! - keyed (format 3, `--ledger-key FILE`): the link is an HMAC-SHA256 of the line under the
//!   custodian's key ([`super::ledger_key`]) and the head an HMAC of the count and the last
//!   link, so no record can be forged, edited or cut without the key. Without the key a keyed
//!   ledger may be listed, marked as not verified, but not charged;
//! - keyed with the key's state file: a whole older copy put back is refused too, since the
//!   state file beside the key remembers the count and head of the last append.
//!
//! **Currencies.** A dataset's budget is (ε_total, δ_total), δ_total = 0 unless `--budget-delta`
//! recorded one. A charge states its spend in the currency of its release's guarantee: pure ε
//! (Laplace), ρ (Gaussian, zCDP) or (ε, δ) (keys found in the data); the running totals are kept
//! exactly per currency (`spent` is Σε, `spent_rho` Σρ, `spent_delta` Σδ). A charge is admitted
//! only if the dataset's whole history with it composes within the budget
//! ([`super::currency::History`], docs/DESIGN.md §9.7):
//! - pure only: Σε <= ε_total;
//! - with ρ: at the budget's fixed Rényi order α*, R(α*) = Σ min(ε, α*ε²/2) + α*Σρ is at most
//!   the B whose CKS 2020 Cor. 13 conversion at δ_total is ε_total ([`super::renyi`]); the
//!   spend shown is R(α*) converted, rounded up, re-derived from the charges on every read (no
//!   record states it, so ledgers written under the earlier zCDP rule read unchanged, and that
//!   rule admitted nothing this one refuses); refused while δ_total = 0;
//! - with (ε, δ): Σε <= ε_total and Σδ <= δ_total (basic composition);
//! - ρ together with (ε, δ) in one dataset: refused (no sound composition is implemented).
//!
//! The budget record also fixes how δ_total is used (`--budget-delta-for`,
//! [`super::delta_use`]): all for ρ (the Rényi rule at δ_total; (ε, δ) charges refused), all
//! for (ε, δ) (ρ refused), or half each (the default, and how a δ recorded without the field
//! reads): the rules above then run at δ_total/2, since a choice between the two made after
//! pure releases spends both halves.
//!
//! Ledgers written before these fields existed read unchanged: their charges are pure ε.
//!
//! **One privacy unit per dataset.** A charge records the unit its release protects
//! ([`crate::privacy::contribution::Unit::ledger_name`]): `row`, or `person:COL[,COL]` under
//! `--privacy-id`. The ε of a budget is a guarantee about one unit, and ε spent per row is not
//! ε per person (a person with K rows is only Kε-protected by it), so a dataset's budget is
//! spent in the unit of its first charge, and a charge in another unit is refused (exit 3)
//! before anything is written or read. The field is written only for a person (`"unit":
//! "person:patient"`), so row-level records are as they always were and a record without it
//! reads as `row`; like every field it is covered by the chain, and an older dpstat refuses a
//! record that has it instead of reading a person-level budget as a row-level one.
//!
//! Every change happens under an exclusive lock on the file (`flock`), readers take a shared
//! one; the file must be a regular file and a line may hold at most 64 KiB. With a key, a
//! change also holds the key's lock (`KEYFILE.lock`, taken first), which does not depend on
//! the inode the ledger's path names, and a keyed charge records the id of its run's nonce, by
//! which that run's completion finds it ([`key`], docs/DESIGN.md §5.3, §5.4).
//!
//! The module's files: `record` (the header, the records and the chain's links), `read`
//! (validating a whole ledger), `file` (opening, locking, the key's state, appending),
//! `budget` (budgets, accounts and the admission of a charge), [`key`] (the key and its
//! state file), `charge` (the flags and the two steps of a release, [`reserve`] and
//! [`complete`]); this file declares them and re-exports what the rest of dpstat calls.

mod budget;
mod charge;
mod file;
pub mod key;
mod read;
mod record;
#[cfg(test)]
mod tests;

pub use budget::*;
pub use charge::*;
pub use file::*;
pub use read::*;
pub use record::*;
