//! Reading a ledger: every line validated against the chain, the sequence and the running
//! totals (docs/DESIGN.md §5.3).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::Result;
use num_rational::BigRational;
use num_traits::{Signed, Zero};
use serde::Deserialize;

use super::budget::{add_spend, Account};
use super::key::{LedgerKey, State};
use super::record::{
    charged, corrupt, parse_exact, Chain, Entry, Header, Record, FORMAT, KEYED_FORMAT, MAX_LINE, ROW_UNIT,
};
use crate::error::bad_input;
use crate::numeric::format::hex;
use crate::privacy::delta::Delta;
use crate::privacy::delta_use::DeltaUse;

/// A whole ledger, validated.
#[derive(Debug, Default)]
pub struct Ledger {
    pub accounts: BTreeMap<String, Account>,
    /// Records in the file and the link of the last one (what the next record's `prev` names;
    /// for a keyless ledger also the header's head).
    pub records: u64,
    pub head: [u8; 32],
    /// The id of the key of a keyed ledger.
    pub key_id: Option<String>,
    /// The chain was checked: false only for a keyed ledger read without its key.
    pub verified: bool,
    /// The ledger was compared with its key's state file (not older than the last append).
    pub state_checked: bool,
    /// The header's head as it should read (as it reads, when not verified).
    pub(super) shown_head: String,
    /// The header's head after the record the key's state file counts.
    pub(super) head_at_state: Option<[u8; 32]>,
    /// Bytes in the file.
    pub(super) len: u64,
    /// Charges not yet completed, by sequence number: their dataset and run id (keyed charges).
    pub(super) open: HashMap<u64, (String, Option<String>)>,
    /// The key's state as read and checked before an append, and as written after it.
    pub(super) state: Option<State>,
    /// The fingerprint of every completed release, with the dataset it was charged to first.
    pub(super) data: HashMap<String, String>,
}

impl Ledger {
    pub fn account(&self, dataset: &str) -> Account {
        self.accounts.get(dataset).cloned().unwrap_or_default()
    }

    /// The chain's head, as the header states it: worth keeping elsewhere, since without the
    /// key's state file it alone shows that the whole file was not replaced by an older copy.
    pub fn head_hex(&self) -> String {
        self.shown_head.clone()
    }
}

/// Validates every line: the header, the chain (with `key`, if the ledger is keyed), the
/// sequence numbers, the running totals. With `keep`, every charge is kept for listing; with
/// `state_at`, the head after that many records is kept for the key's state file.
pub(super) fn read_ledger(
    file: &File,
    path: &Path,
    keep: bool,
    key: Option<&LedgerKey>,
    state_at: Option<u64>,
) -> Result<Ledger> {
    let mut ledger = Ledger { verified: true, ..Ledger::default() };
    let mut chain = Chain::Sha256;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    let mut number = 0usize;
    let mut header: Option<Header> = None;
    // The hash of the record the header names, once passed.
    let mut named: Option<[u8; 32]> = None;
    let mut listed: HashMap<u64, (String, usize)> = HashMap::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_line(&mut line)
            .map_err(|e| corrupt(path, number + 1, &format!("cannot be read: {e}")))?;
        if read == 0 {
            break;
        }
        number += 1;
        ledger.len += read as u64;
        if read > MAX_LINE {
            return Err(corrupt(path, number, &format!("is longer than {MAX_LINE} bytes")));
        }
        if !line.ends_with('\n') {
            return Err(corrupt(
                path,
                number,
                "is truncated (no newline at its end; a run stopped while writing it: that \
                 release was never printed, so the line can be deleted)",
            ));
        }
        let text = line.trim_end_matches('\n');
        if number == 1 {
            let parsed = parse_header(text, path)?;
            chain = chain_of(&parsed, key, path, &mut ledger)?;
            ledger.head = chain.start();
            if parsed.records == 0 {
                named = Some(chain.head(0, &ledger.head));
            }
            if state_at == Some(0) {
                ledger.head_at_state = Some(chain.head(0, &ledger.head));
            }
            header = Some(parsed);
            continue;
        }
        let record: Record = serde_json::from_str(text)
            .map_err(|e| corrupt(path, number, &format!("is not a valid record: {e}")))?;
        let seq = ledger.records + 1;
        if record.seq() != seq {
            return Err(corrupt(
                path,
                number,
                &format!(
                    "is record {} where record {seq} belongs: a record was removed or moved",
                    record.seq()
                ),
            ));
        }
        if !matches!(chain, Chain::Unverified) && record.prev() != hex(&ledger.head) {
            return Err(corrupt(
                path,
                number,
                "does not follow from the record before it (its prev hash differs): a record was changed or removed",
            ));
        }
        apply(&mut ledger, &record, path, number, keep, &mut listed)?;
        ledger.records = seq;
        ledger.head = chain.link(text);
        if header.as_ref().is_some_and(|h| h.records == seq) {
            named = Some(chain.head(seq, &ledger.head));
        }
        if state_at == Some(seq) {
            ledger.head_at_state = Some(chain.head(seq, &ledger.head));
        }
    }
    let Some(header) = header else {
        // An empty file: a new ledger, keyed if a key was given.
        let chain = key.map_or(Chain::Sha256, Chain::Keyed);
        ledger.key_id = key.map(LedgerKey::id_hex);
        ledger.head = chain.start();
        ledger.shown_head = hex(&chain.head(0, &ledger.head));
        if state_at == Some(0) {
            ledger.head_at_state = Some(chain.head(0, &ledger.head));
        }
        return Ok(ledger);
    };
    if ledger.records < header.records {
        return Err(bad_input(format!(
            "ledger {} is cut short: its header counts {} records but the file holds {}; records were \
             removed (a spend is never rolled back): restore the file from a copy",
            path.display(),
            header.records,
            ledger.records
        )));
    }
    if ledger.verified && named.map(|h| hex(&h)) != Some(header.head.clone()) {
        return Err(corrupt(
            path,
            1,
            &format!(
                "names a last record (record {}) that the file does not hold: records were changed",
                header.records
            ),
        ));
    }
    // A header counting fewer records than the file holds (a run stopped between its append
    // and the header's update) is read as it is: the records are there, the next write mends it.
    ledger.shown_head =
        if ledger.verified { hex(&chain.head(ledger.records, &ledger.head)) } else { header.head.clone() };
    Ok(ledger)
}

/// The chain a header announces, checked against the key given: a keyed ledger needs its own
/// key to be verified, and a keyless one is refused with a key, since a key that silently
/// accepted a keyless ledger would accept one forged in place of a keyed ledger.
pub(super) fn chain_of<'k>(
    header: &Header,
    key: Option<&'k LedgerKey>,
    path: &Path,
    ledger: &mut Ledger,
) -> Result<Chain<'k>> {
    let Some(id) = &header.key_id else {
        return match key {
            None => Ok(Chain::Sha256),
            Some(key) => Err(bad_input(format!(
                "ledger {} is not keyed (format 2), so --ledger-key {} cannot protect it: its SHA-256 chain \
                 shows accidents, not forgeries; keep it for audit and start a new ledger with the key, \
                 its budget lowered by what this one records as spent",
                path.display(),
                key.path().display()
            ))),
        };
    };
    ledger.key_id = Some(id.clone());
    match key {
        None => {
            ledger.verified = false;
            Ok(Chain::Unverified)
        }
        Some(key) if key.id_hex() == *id => Ok(Chain::Keyed(key)),
        Some(key) => Err(bad_input(format!(
            "ledger {} is keyed with key id {}, not with the key in {} (id {}): give --ledger-key the \
             ledger's own key",
            path.display(),
            &id[..16],
            key.path().display(),
            &key.id_hex()[..16]
        ))),
    }
}

pub(super) fn parse_header(text: &str, path: &Path) -> Result<Header> {
    let hex64 = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    match serde_json::from_str::<Header>(text) {
        Ok(h)
            if h.kind == "ledger"
                && h.format == FORMAT
                && !h.keyed
                && h.key_id.is_none()
                && hex64(&h.head) =>
        {
            Ok(h)
        }
        Ok(h)
            if h.kind == "ledger"
                && h.format == KEYED_FORMAT
                && h.keyed
                && h.key_id.as_deref().is_some_and(hex64)
                && hex64(&h.head) =>
        {
            Ok(h)
        }
        Ok(h) if h.kind == "ledger" && (h.format == FORMAT || h.format == KEYED_FORMAT) => {
            Err(corrupt(path, 1, "is a ledger header whose fields do not go together"))
        }
        Ok(h) if h.kind == "ledger" => Err(corrupt(
            path,
            1,
            &format!("is a header of ledger format {}, which this dpstat does not read", h.format),
        )),
        _ => Err(old_format(text, path)),
    }
}

/// Ledgers written before format 2 kept one budget per SHA-256 of the file's bytes, which a
/// re-saved file could reset: their spend cannot be carried over to one budget soundly without
/// the custodian saying which datasets are one population, so they are refused.
pub(super) fn old_format(first: &str, path: &Path) -> anyhow::Error {
    #[derive(Deserialize)]
    struct Old {
        #[serde(rename = "type")]
        kind: String,
        dataset: String,
    }
    match serde_json::from_str::<Old>(first) {
        Ok(old) if old.kind == "budget" || old.kind == "release" => bad_input(format!(
            "ledger {} was written by an earlier dpstat (format 1, one budget per file content, \
             starting with dataset {}), whose budgets a re-saved file could reset; it cannot be \
             charged any more. Keep it for audit and start a new ledger file with --budget TOTAL, \
             lowered by what the old one records as spent on the same people",
            path.display(),
            crate::error::shown(&old.dataset, 24)
        )),
        _ => corrupt(path, 1, "is not a ledger header"),
    }
}

/// Checks one record against the state before it and applies it.
pub(super) fn apply(
    ledger: &mut Ledger,
    record: &Record,
    path: &Path,
    number: usize,
    keep: bool,
    listed: &mut HashMap<u64, (String, usize)>,
) -> Result<()> {
    match record {
        Record::Budget { dataset, total, delta, delta_for, .. } => {
            let total = parse_exact(total)
                .filter(|t| t.is_positive())
                .ok_or_else(|| corrupt(path, number, "has a budget that is not a positive n/d"))?;
            let delta = match delta {
                None => None,
                Some(d) => {
                    Some(parse_exact(d).and_then(|d| Delta::from_rational(d).ok()).ok_or_else(|| {
                        corrupt(path, number, "has a budget delta that is not an n/d in (0, 1)")
                    })?)
                }
            };
            let delta_for = match (&delta, delta_for.as_deref().map(str::parse::<DeltaUse>)) {
                (None, None) => DeltaUse::default(),
                (Some(_), None) => DeltaUse::Split,
                (Some(_), Some(Ok(usage))) => usage,
                _ => {
                    return Err(corrupt(
                        path,
                        number,
                        "has a delta_for that is not zcdp, thresholds or split beside a delta",
                    ))
                }
            };
            let account = ledger.accounts.entry(dataset.clone()).or_default();
            account.total = Some(total);
            account.delta = delta;
            account.delta_for = delta_for;
        }
        Record::Charge {
            seq,
            time,
            dataset,
            query,
            column,
            neighbours,
            unit,
            epsilon,
            epsilon_decimal,
            rho,
            rho_decimal,
            delta,
            delta_decimal,
            spent,
            spent_rho,
            spent_delta,
            run,
            ..
        } => {
            let spend = charged(epsilon.as_deref(), rho.as_deref(), delta.as_deref())
                .ok_or_else(|| corrupt(
                    path,
                    number,
                    "has an epsilon, rho or delta that is not a valid n/d, or not one of: epsilon; rho; epsilon and delta",
                ))?;
            let account = ledger.accounts.entry(dataset.clone()).or_default();
            if account.total.is_none() {
                return Err(corrupt(path, number, "charges a dataset with no budget recorded before it"));
            }
            let unit = unit.as_deref().unwrap_or(ROW_UNIT);
            if unit != ROW_UNIT && unit.strip_prefix("person:").is_none_or(str::is_empty) {
                return Err(corrupt(path, number, "has a unit that is neither row nor person:COLUMN"));
            }
            // dpstat never writes a charge in another unit than its dataset's: one that is
            // there was written by hand.
            if account.unit.as_deref().is_some_and(|first| first != unit) {
                return Err(corrupt(
                    path,
                    number,
                    "charges its dataset in another privacy unit than the charges before it",
                ));
            }
            account.unit.get_or_insert_with(|| unit.to_string());
            add_spend(account, &spend);
            account.history.add(&spend);
            // A running total that is 0 so far is left out of the record.
            let follows = |written: Option<&String>, running: &BigRational| match written {
                Some(w) => parse_exact(w).as_ref() == Some(running),
                None => running.is_zero(),
            };
            if !follows(Some(spent), &account.spent)
                || !follows(spent_rho.as_ref(), &account.spent_rho)
                || !follows(spent_delta.as_ref(), &account.spent_delta)
            {
                return Err(corrupt(
                    path,
                    number,
                    "has a running total that does not follow from the records before it: a record was changed",
                ));
            }
            ledger.open.insert(*seq, (dataset.clone(), run.clone()));
            if keep {
                listed.insert(*seq, (dataset.clone(), account.releases.len()));
                account.releases.push(Entry {
                    seq: *seq,
                    time: time.clone(),
                    query: query.clone(),
                    column: column.clone(),
                    neighbours: neighbours.clone(),
                    unit: unit.to_string(),
                    epsilon: epsilon.clone(),
                    epsilon_decimal: *epsilon_decimal,
                    rho: rho.clone(),
                    rho_decimal: *rho_decimal,
                    delta: delta.clone(),
                    delta_decimal: *delta_decimal,
                    fingerprint: None,
                });
            }
        }
        Record::Released { charge, fingerprint, .. } => {
            let Some((dataset, _)) = ledger.open.remove(charge) else {
                return Err(corrupt(path, number, "completes a charge that is not an earlier, open one"));
            };
            ledger.data.entry(fingerprint.clone()).or_insert(dataset);
            if let Some((dataset, i)) = listed.get(charge) {
                if let Some(entry) = ledger.accounts.get_mut(dataset).and_then(|a| a.releases.get_mut(*i)) {
                    entry.fingerprint = Some(fingerprint.clone());
                }
            }
        }
    }
    Ok(())
}
