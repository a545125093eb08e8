//! The ledger's file: opening and locking it, comparing it with the key's state, appending
//! (docs/DESIGN.md §5.4).

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result};
use num_rational::BigRational;
use num_traits::Zero;

use super::key::{self as ledger_key, LedgerKey, State};
use super::read::{read_ledger, Ledger};
use super::record::{exact_string, Chain, Draft, Header, Record, ROW_UNIT};
use crate::error::{bad_input, Error};
use crate::numeric::exact::rational_to_f64_down;
use crate::numeric::format::hex;
use crate::privacy::currency::Spend;
use crate::privacy::delta::Delta;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::zcdp::Rho;

/// Opens a ledger to append to it, locked, read and validated: with the key a keyed ledger
/// needs (a keyless one refuses a key: its chain cannot show a forgery), and not older than
/// the key's state file. Everything refused here is refused before anything is written.
pub(super) fn open_to_charge(path: &Path, key: Option<&Path>) -> Result<Opened> {
    let key = key.map(ledger_key::load).transpose()?;
    // Taken before the ledger's: every run that charges with the key takes the two in this order.
    let key_lock = key.as_ref().map(|k| k.lock(true)).transpose()?;
    let (file, created) = open_locked(path)?;
    let checked = check_opened(&file, path, key.as_ref());
    match checked {
        Ok(ledger) => Ok(Opened { file, ledger, key, created, _key_lock: key_lock }),
        Err(e) => {
            if created {
                remove_if_empty(&file, path);
            }
            Err(e)
        }
    }
}

/// A ledger opened to charge, under its exclusive lock (released when this is dropped), and
/// with a key under the key's exclusive lock too.
pub(super) struct Opened {
    pub(super) file: File,
    pub(super) ledger: Ledger,
    pub(super) key: Option<LedgerKey>,
    /// Whether this run created the file: a refused first charge then removes it again.
    pub(super) created: bool,
    /// The lock on `KEYFILE.lock`, held as long as the ledger's.
    pub(super) _key_lock: Option<File>,
}

impl Opened {
    /// After a refusal: a ledger file this run created and left empty is removed, so a refused
    /// first command leaves no 0-byte ledger behind.
    pub(super) fn discard_if_new(self, path: &Path) {
        if self.created {
            remove_if_empty(&self.file, path);
        }
    }
}

/// Removes `path` if it is still the (locked) `file` and empty. Called under the exclusive
/// lock; a run waiting for that lock on the same inode sees the path gone or replaced when it
/// gets the lock, and opens it again ([`open_locked`]), so no charge lands in a removed file.
pub(super) fn remove_if_empty(file: &File, path: &Path) {
    if cfg!(unix) && file.metadata().is_ok_and(|m| m.len() == 0) && same_file(file, path) {
        // Best effort: a leftover empty file is only untidy, and reads as a new ledger.
        let _ = std::fs::remove_file(path);
    }
}

/// Whether `path` names the opened `file` now (same device and inode).
#[cfg(unix)]
pub(super) fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Without inodes to compare, a file this run created is never removed (see [`remove_if_empty`]).
#[cfg(not(unix))]
pub(super) fn same_file(_: &File, path: &Path) -> bool {
    path.is_file()
}

pub(super) fn check_opened(file: &File, path: &Path, key: Option<&LedgerKey>) -> Result<Ledger> {
    // Read under the key's lock, which every writer of the state file holds.
    let state = key.map(ledger_key::read_state).transpose()?.flatten();
    let mut ledger = read_ledger(file, path, false, key, state.as_ref().map(|s| s.records))?;
    if let (Some(id), false) = (&ledger.key_id, ledger.verified) {
        return Err(bad_input(format!(
            "ledger {} is keyed (key id {}): a charge needs its key: give --ledger-key FILE (or set \
             DPSTAT_LEDGER_KEY_FILE); nothing was read or charged",
            path.display(),
            &id[..16]
        )));
    }
    if let Some(key) = key {
        check_state(path, &ledger, key, state.as_ref(), true)?;
    }
    ledger.state = state;
    Ok(ledger)
}

/// Compares the ledger with what the key's state file remembers of the last append: fewer
/// records, or another head at that count, is an older copy put back or another ledger. A
/// missing state file is refused for a charge (`strict`) once the ledger has records.
pub(super) fn check_state(
    path: &Path,
    ledger: &Ledger,
    key: &LedgerKey,
    state: Option<&State>,
    strict: bool,
) -> Result<()> {
    let state_file = key.state_path();
    let Some(state) = state else {
        if strict && ledger.records > 0 {
            return Err(bad_input(format!(
                "the key's state file {} is missing, so an older copy of ledger {} put back could not be \
                 told; restore it from a copy (or, only if you trust the ledger as it is, write into it \
                 {{\"records\":N,\"head\":\"…\"}} as dpstat budget --format json --ledger-key {} prints them); nothing was \
                 read or charged",
                state_file.display(),
                path.display(),
                key.path().display()
            )));
        }
        return Ok(());
    };
    if ledger.records < state.records {
        return Err(bad_input(format!(
            "ledger {} holds {} records, fewer than the {} that the key's state file {} counts: an older \
             copy was put back or records were removed; a spend is never rolled back: restore the ledger \
             as it was last written",
            path.display(),
            ledger.records,
            state.records,
            state_file.display()
        )));
    }
    if state.records > 0 && ledger.head_at_state.map(|h| hex(&h)) != state.head {
        return Err(bad_input(format!(
            "ledger {} does not hold the record {} that the key's state file {} names (its head differs): \
             it is another ledger or a replaced one; one key belongs to one ledger",
            path.display(),
            state.records,
            state_file.display()
        )));
    }
    Ok(())
}

/// Reads and validates a whole ledger under a shared lock (for `dpstat budget`), opening it
/// read-only: a ledger the reader may not write can still be read. A keyed ledger read without
/// its key is listed with `verified` false.
pub fn read(path: &Path) -> Result<Ledger> {
    read_keyed(path, None)
}

/// [`read`], with the key of a keyed ledger: its chain is verified, and it is compared with the
/// key's state file when there is one (`state_checked`).
pub fn read_keyed(path: &Path, key: Option<&Path>) -> Result<Ledger> {
    let key = key.map(ledger_key::load).transpose()?;
    match std::fs::metadata(path) {
        Err(_) => return Err(bad_input(format!("{}: no such ledger", path.display()))),
        // Opening a FIFO to read would block until a writer comes: refuse it unopened.
        Ok(meta) if !meta.is_file() => return Err(not_regular(path)),
        Ok(_) => {}
    }
    let file =
        File::open(path).map_err(|e| bad_input(format!("cannot open ledger {}: {e}", path.display())))?;
    check_regular(&file, path)?;
    // A reader who may not create the lock file still reads: the state file is replaced whole.
    let _key_lock = key.as_ref().and_then(|k| k.lock(false).ok());
    file.lock_shared().with_context(|| format!("locking ledger {}", path.display()))?;
    let state = key.as_ref().map(ledger_key::read_state).transpose()?.flatten();
    let mut ledger = read_ledger(&file, path, true, key.as_ref(), state.as_ref().map(|s| s.records))?;
    if let Some(key) = &key {
        check_state(path, &ledger, key, state.as_ref(), false)?;
        ledger.state_checked = state.is_some();
    }
    Ok(ledger)
}

/// Opens the ledger to read and write, under an exclusive lock. Not in append mode: the header
/// is rewritten at offset 0, which append mode would turn into an append.
/// Also says whether this call created the file.
pub(super) fn open_locked(path: &Path) -> Result<(File, bool)> {
    let cannot = |e: std::io::Error| bad_input(format!("cannot open ledger {}: {e}", path.display()));
    loop {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(not_regular(path));
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        let (file, created) = match options.clone().create_new(true).open(path) {
            Ok(file) => (file, true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => match options.open(path) {
                Ok(file) => (file, false),
                // Removed in between (a refused first charge): try again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(cannot(e)),
            },
            Err(e) => return Err(cannot(e)),
        };
        check_regular(&file, path)?;
        file.lock().with_context(|| format!("locking ledger {}", path.display()))?;
        // While this run waited for the lock, the run holding it may have removed the empty
        // file it created (a refused first charge): a charge written to that removed file
        // would be lost, so the path is opened again until it names the locked file.
        if same_file(&file, path) {
            return Ok((file, created));
        }
    }
}

/// A ledger is a regular file: a FIFO would block the run forever, a device would never end.
/// Checked on the opened handle, so nothing can swap the file in between.
pub(super) fn check_regular(file: &File, path: &Path) -> Result<()> {
    let meta =
        file.metadata().map_err(|e| bad_input(format!("cannot open ledger {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    Ok(())
}

pub(super) fn not_regular(path: &Path) -> anyhow::Error {
    bad_input(format!("ledger {} is not a regular file; give --ledger the path of a file", path.display()))
}

/// Appends the records in one write and fsyncs, then brings the header up to date and fsyncs
/// again. A crash in between leaves a header that counts fewer records than the file holds,
/// which is read as it is (the records are there) and mended by the next write.
///
/// With a key, the links are HMACs and, last, the key's state file is brought up to date: a
/// crash before that leaves a state older than the ledger, which the ledger still extends.
pub(super) fn append(
    file: &File,
    path: &Path,
    ledger: &mut Ledger,
    drafts: &[Draft],
    key: Option<&LedgerKey>,
) -> Result<Vec<u64>> {
    let chain = key.map_or(Chain::Sha256, Chain::Keyed);
    let header_line = |records: u64, link: &[u8; 32]| {
        let head = chain.head(records, link);
        match key {
            None => (Header::line(records, &head), head),
            Some(key) => (Header::keyed_line(records, &head, key), head),
        }
    };
    if let Some(key) = key {
        unchanged_state(path, ledger, key)?;
    }
    let mut bytes = Vec::new();
    let mut at = ledger.len;
    if at == 0 {
        bytes.extend_from_slice(header_line(0, &ledger.head).0.as_bytes());
    }
    let mut seqs = Vec::new();
    for draft in drafts {
        let seq = ledger.records + 1;
        let prev = hex(&ledger.head);
        let time = now();
        let record = match draft {
            Draft::Budget { dataset, total, delta, delta_for } => Record::Budget {
                seq,
                time,
                dataset: dataset.clone(),
                total: exact_string(total),
                total_decimal: rational_to_f64_down(total),
                delta: delta.as_ref().map(Delta::exact_string),
                delta_decimal: delta.as_ref().map(Delta::to_f64_up),
                delta_for: delta.as_ref().map(|_| delta_for.name().to_string()),
                prev,
            },
            Draft::Charge { dataset, charge, spent, spent_rho, spent_delta, run } => {
                let (eps, rho, delta) = match &charge.spend {
                    Spend::Pure(e) => (Some(e), None, None),
                    Spend::Zcdp(r) => (None, Some(r), None),
                    Spend::Approx { eps, delta } => (Some(eps), None, Some(delta)),
                };
                let running = |r: &BigRational| (!r.is_zero()).then(|| exact_string(r));
                Record::Charge {
                    seq,
                    time,
                    dataset: dataset.clone(),
                    query: charge.query.clone(),
                    column: charge.column.clone(),
                    neighbours: charge.neighbours.clone(),
                    unit: (charge.unit != ROW_UNIT).then(|| charge.unit.clone()),
                    epsilon: eps.map(Epsilon::exact_string),
                    epsilon_decimal: eps.map(Epsilon::to_f64_up),
                    rho: rho.map(Rho::exact_string),
                    rho_decimal: rho.map(Rho::to_f64_up),
                    delta: delta.map(Delta::exact_string),
                    delta_decimal: delta.map(Delta::to_f64_up),
                    spent: exact_string(spent),
                    spent_rho: running(spent_rho),
                    spent_delta: running(spent_delta),
                    run: run.clone(),
                    prev,
                }
            }
            Draft::Released { charge, fingerprint } => {
                Record::Released { seq, time, charge: *charge, fingerprint: fingerprint.clone(), prev }
            }
        };
        let line = serde_json::to_string(&record)?;
        ledger.head = chain.link(&line);
        ledger.records = seq;
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        seqs.push(seq);
    }
    let writing =
        |e: std::io::Error| anyhow::Error::new(e).context(format!("writing ledger {}", path.display()));
    write_at(file, &bytes, at).and_then(|()| file.sync_data()).map_err(writing)?;
    at += bytes.len() as u64;
    ledger.len = at;
    // One sector at offset 0, so it is written whole or not at all.
    let (header, head) = header_line(ledger.records, &ledger.head);
    write_at(file, header.as_bytes(), 0).and_then(|()| file.sync_data()).map_err(writing)?;
    ledger.shown_head = hex(&head);
    if let Some(key) = key {
        let state = State { records: ledger.records, head: Some(hex(&head)) };
        ledger_key::write_state(key, &state)?;
        ledger.state = Some(state);
    }
    Ok(seqs)
}

/// Refuses to append when the key's state file is no longer what this run read and checked
/// the ledger against: another run charged with the key in between (one that did not take the
/// key's lock, or a state file put back by hand), so the ledger read may not be the key's.
fn unchanged_state(path: &Path, ledger: &Ledger, key: &LedgerKey) -> Result<()> {
    let now = ledger_key::read_state(key)?;
    if now != ledger.state {
        return Err(Error::internal(format!(
            "the key's state file {} changed while ledger {} was being charged (another run wrote it); \
             nothing was appended",
            key.state_path().display(),
            path.display()
        ))
        .into());
    }
    Ok(())
}

#[cfg(unix)]
pub(super) fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(not(unix))]
pub(super) fn write_at(mut file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(bytes)
}

pub(super) fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
