//! The ledger's format: its header, its records and the chain that links them (docs/DESIGN.md
//! §5, §5.3).

use std::path::Path;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::Zero;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::key::LedgerKey;
use crate::error::bad_input;
use crate::numeric::format::hex;
use crate::privacy::currency::Spend;
use crate::privacy::delta::Delta;
use crate::privacy::delta_use::DeltaUse;
use crate::privacy::epsilon::Epsilon;
use crate::privacy::zcdp::Rho;

/// The dataset a release draws on without `--dataset`.
pub const DEFAULT_DATASET: &str = "default";

/// The unit of a charge record without a `unit` field: every release before `--privacy-id`.
pub const ROW_UNIT: &str = "row";

/// The longest line a ledger may hold: a record is a few hundred bytes, and a line read without
/// a limit could take all memory (`--ledger /dev/zero`).
pub(super) const MAX_LINE: usize = 64 << 10;

/// The format of a keyless ledger (line 1 says which).
pub(super) const FORMAT: u32 = 2;

/// The format of a keyed ledger: links and head are HMACs under the custodian's key. A number
/// of its own, so that an earlier dpstat refuses it by its header instead of failing its chain.
pub(super) const KEYED_FORMAT: u32 = 3;

/// Line 1: what the rest of the file must hold.
#[derive(Debug, Deserialize)]
pub(super) struct Header {
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) format: u32,
    /// Format 3: the chain is keyed, by the key with this id.
    #[serde(default)]
    pub(super) keyed: bool,
    #[serde(default)]
    pub(super) key_id: Option<String>,
    pub(super) records: u64,
    pub(super) head: String,
}

impl Header {
    /// Always the same length, so it can be rewritten in place: JSON allows the spaces after
    /// the number.
    pub(super) fn line(records: u64, head: &[u8; 32]) -> String {
        format!(
            "{{\"type\":\"ledger\",\"format\":{FORMAT},\"records\":{records:<20},\"head\":\"{}\"}}\n",
            hex(head)
        )
    }

    /// The header of a keyed ledger, as fixed in length as [`Header::line`].
    pub(super) fn keyed_line(records: u64, head: &[u8; 32], key: &LedgerKey) -> String {
        format!(
            "{{\"type\":\"ledger\",\"format\":{KEYED_FORMAT},\"keyed\":true,\"key_id\":\"{}\",\"records\":{records:<20},\"head\":\"{}\"}}\n",
            key.id_hex(),
            hex(head)
        )
    }
}

/// What links the records: the SHA-256 of each line (keyless), an HMAC-SHA256 under the
/// custodian's key (keyed), or nothing that can be checked (a keyed ledger read without its key).
#[derive(Clone, Copy)]
pub(super) enum Chain<'a> {
    Sha256,
    Keyed(&'a LedgerKey),
    Unverified,
}

/// The domains of the keyed chain's HMACs: its start, a record's link, the header's head. The
/// head is not a link, so the `prev` of record k + 1, which anyone can read, is not a head that
/// would make the file cut after record k verify.
pub(super) const START: u8 = 0;
pub(super) const LINK: u8 = 1;
pub(super) const HEAD: u8 = 2;

impl Chain<'_> {
    /// What record 1's `prev` names.
    pub(super) fn start(self) -> [u8; 32] {
        match self {
            Chain::Sha256 => genesis(),
            Chain::Keyed(key) => key.mac(START, &[b"dpstat ledger, format 3"]),
            Chain::Unverified => [0; 32],
        }
    }

    /// The link of a record's line: what the next record's `prev` names.
    pub(super) fn link(self, line: &str) -> [u8; 32] {
        match self {
            Chain::Sha256 => Sha256::digest(line.as_bytes()).into(),
            Chain::Keyed(key) => key.mac(LINK, &[line.as_bytes()]),
            Chain::Unverified => [0; 32],
        }
    }

    /// The header's head after `records` records whose last link is `link`.
    pub(super) fn head(self, records: u64, link: &[u8; 32]) -> [u8; 32] {
        match self {
            Chain::Sha256 => *link,
            Chain::Keyed(key) => key.mac(HEAD, &[&records.to_be_bytes(), link]),
            Chain::Unverified => [0; 32],
        }
    }
}

/// One record (line 2 onwards).
#[allow(clippy::large_enum_variant)] // one at a time, as each line is read
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Record {
    /// Sets a dataset's total budget (the latest one counts): ε_total and, if recorded, δ_total.
    Budget {
        seq: u64,
        time: String,
        dataset: String,
        total: String,
        total_decimal: f64,
        /// δ_total exactly (absent: 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta_decimal: Option<f64>,
        /// How δ_total is used (`DeltaUse::name`), written with every δ; a δ without it (written
        /// before the choice existed) reads as `split`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta_for: Option<String>,
        prev: String,
    },
    /// Charges one release, before its data are read: ε (pure), ρ (zCDP) or ε and δ.
    Charge {
        seq: u64,
        time: String,
        dataset: String,
        query: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        column: Option<String>,
        neighbours: String,
        /// The privacy unit, written only when it is not [`ROW_UNIT`] (absent: `row`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unit: Option<String>,
        /// Exact ε as numerator/denominator (pure and (ε, δ) charges).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epsilon: Option<String>,
        /// ε rounded up, for reading.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epsilon_decimal: Option<f64>,
        /// Exact ρ (zCDP charges).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rho: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rho_decimal: Option<f64>,
        /// Exact δ ((ε, δ) charges).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta_decimal: Option<f64>,
        /// The dataset's Σε, this charge included (exact).
        spent: String,
        /// The dataset's Σρ with this charge, once it is above 0 (exact).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spent_rho: Option<String>,
        /// The dataset's Σδ with this charge, once it is above 0 (exact).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spent_delta: Option<String>,
        /// Keyed ledgers: the id of the run that wrote the charge, `run_id` of a nonce only
        /// that run holds, so that its completion finds its own charge and no other (absent in
        /// keyless ledgers and in charges written before it existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run: Option<String>,
        prev: String,
    },
    /// The release charged by record `charge` was completed, from data with this fingerprint.
    Released { seq: u64, time: String, charge: u64, fingerprint: String, prev: String },
}

impl Record {
    pub(super) fn seq(&self) -> u64 {
        match self {
            Record::Budget { seq, .. } | Record::Charge { seq, .. } | Record::Released { seq, .. } => *seq,
        }
    }

    pub(super) fn prev(&self) -> &str {
        match self {
            Record::Budget { prev, .. } | Record::Charge { prev, .. } | Record::Released { prev, .. } => prev,
        }
    }
}

/// What a release would charge.
#[derive(Clone, Debug)]
pub struct Charge {
    pub query: String,
    pub column: Option<String>,
    pub neighbours: String,
    /// The privacy unit of the release: `row` or `person:COL[,COL]` (`Unit::ledger_name`).
    pub unit: String,
    pub spend: Spend,
}

/// One charge as `dpstat budget` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub seq: u64,
    pub time: String,
    pub query: String,
    pub column: Option<String>,
    pub neighbours: String,
    /// `row` or `person:COL[,COL]`.
    pub unit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon_decimal: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho_decimal: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_decimal: Option<f64>,
    /// The fingerprint of the data read, once the release was completed; None when the run
    /// stopped after its charge (the ε is spent all the same).
    pub fingerprint: Option<String>,
}

pub(super) fn exact_string(r: &BigRational) -> String {
    format!("{}/{}", r.numer(), r.denom())
}

/// Reads the exact `n/d` form of the records.
pub fn parse_exact(s: &str) -> Option<BigRational> {
    let (n, d) = s.split_once('/')?;
    let (n, d): (BigInt, BigInt) = (n.parse().ok()?, d.parse().ok()?);
    (!d.is_zero()).then(|| BigRational::new(n, d))
}

/// The chain's start: what record 1's `prev` names.
pub(super) fn genesis() -> [u8; 32] {
    Sha256::digest(b"dpstat ledger, format 2").into()
}

/// The spend a charge record states: ε alone, ρ alone, or ε and δ, each a valid exact n/d.
pub(super) fn charged(epsilon: Option<&str>, rho: Option<&str>, delta: Option<&str>) -> Option<Spend> {
    let eps = |e: &str| Epsilon::from_rational(parse_exact(e)?).ok();
    Some(match (epsilon, rho, delta) {
        (Some(e), None, None) => Spend::Pure(eps(e)?),
        (None, Some(r), None) => Spend::Zcdp(Rho::from_rational(parse_exact(r)?).ok()?),
        (Some(e), None, Some(d)) => {
            Spend::Approx { eps: eps(e)?, delta: Delta::from_rational(parse_exact(d)?).ok()? }
        }
        _ => return None,
    })
}

pub(super) fn corrupt(path: &Path, line: usize, what: &str) -> anyhow::Error {
    bad_input(format!(
        "ledger {} is corrupt: line {line} {what}; fix or restore the file (it is never reset)",
        path.display()
    ))
}

/// A record before it has its place in the chain.
#[allow(clippy::large_enum_variant)] // a handful per run
pub(super) enum Draft {
    Budget {
        dataset: String,
        total: BigRational,
        delta: Option<Delta>,
        delta_for: DeltaUse,
    },
    /// A charge with the dataset's running totals after it.
    Charge {
        dataset: String,
        charge: Charge,
        spent: BigRational,
        spent_rho: BigRational,
        spent_delta: BigRational,
        /// Keyed ledgers: [`run_id`] of the run's nonce.
        run: Option<String>,
    },
    Released {
        charge: u64,
        fingerprint: String,
    },
}

/// The id a charge records for the run that wrote it: a SHA-256 of the run's random nonce,
/// which never leaves the run. The charge's line, and so this id, is under the keyed chain's
/// HMAC: nobody without the key can write a charge with the id of another run, and a charge
/// written by another run (of its own nonce) never has it.
pub(super) fn run_id(nonce: &[u8; 32]) -> String {
    let mut id = Sha256::new();
    id.update(b"dpstat ledger run\n");
    id.update(nonce);
    hex(id.finalize().as_slice())
}
