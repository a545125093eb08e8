use super::*;

use std::path::Path;

use num_rational::BigRational;
use num_traits::Zero;
use sha2::{Digest, Sha256};

use super::key::{self as ledger_key, LedgerKey, State};
use crate::error::Error;
use crate::numeric::format::hex;
use crate::privacy::currency::Spend;
use crate::privacy::delta::Delta;
use crate::privacy::delta_use::DeltaUse;
use crate::privacy::renyi::Rule;
use crate::privacy::zcdp::Rho;

fn spec(dir: &tempfile::TempDir, budget: Option<&str>) -> LedgerSpec {
    LedgerSpec {
        path: dir.path().join("ledger.jsonl"),
        budget: budget.map(|b| b.parse().unwrap()),
        budget_delta: None,
        budget_delta_for: None,
        change_budget: false,
        dataset: DEFAULT_DATASET.into(),
        key: None,
        same_data: false,
    }
}

fn named(dir: &tempfile::TempDir, budget: Option<&str>, dataset: &str) -> LedgerSpec {
    LedgerSpec { dataset: dataset.into(), ..spec(dir, budget) }
}

fn release(eps: &str) -> Charge {
    spending(Spend::Pure(eps.parse().unwrap()))
}

fn spending(spend: Spend) -> Charge {
    Charge {
        query: "count".into(),
        column: None,
        neighbours: "add-remove".into(),
        unit: ROW_UNIT.into(),
        spend,
    }
}

fn remaining(path: &Path, dataset: &str) -> Option<BigRational> {
    read(path).unwrap().account(dataset).remaining()
}

#[test]
fn ten_tenths_spend_exactly_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(&dir, Some("1"));
    for _ in 0..10 {
        reserve(&s, &release("0.1")).unwrap();
    }
    assert_eq!(remaining(&s.path, DEFAULT_DATASET), Some(BigRational::zero()));
    let before = std::fs::read(&s.path).unwrap();
    let err = reserve(&s, &release("0.1")).unwrap_err();
    assert!(matches!(err.downcast_ref::<Error>(), Some(Error::Budget(_))));
    assert_eq!(std::fs::read(&s.path).unwrap(), before, "a refusal writes nothing");
}

#[test]
fn a_refused_first_charge_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let no_budget = spec(&dir, None);
    assert!(reserve(&no_budget, &release("0.1")).is_err());
    assert!(!no_budget.path.exists(), "no budget: the file it created is removed");
    let too_much = spec(&dir, Some("1"));
    assert!(reserve(&too_much, &release("2")).is_err());
    assert!(!too_much.path.exists(), "over budget: the file it created is removed");
    let gaussian = spending(Spend::Zcdp("0.01".parse().unwrap()));
    assert!(reserve(&too_much, &gaussian).is_err(), "no --budget-delta");
    assert!(!too_much.path.exists());
    // An empty file the run did not create is left as it was.
    std::fs::write(&too_much.path, b"").unwrap();
    assert!(reserve(&too_much, &release("2")).is_err());
    assert_eq!(std::fs::read(&too_much.path).unwrap(), b"");
}

/// A run that opened the file a refused first charge created, and waited for its lock,
/// must not write into the removed file: it opens the path again.
#[cfg(unix)]
#[test]
fn a_charge_waiting_on_a_removed_file_opens_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(&dir, Some("1"));
    let (holder, created) = open_locked(&s.path).unwrap();
    assert!(created);
    let waiter = {
        let s = s.clone();
        std::thread::spawn(move || reserve(&s, &release("0.25")))
    };
    // Let the waiter open the file and block on the lock, then remove it as a refusal does.
    std::thread::sleep(std::time::Duration::from_millis(200));
    remove_if_empty(&holder, &s.path);
    assert!(!s.path.exists());
    drop(holder);
    waiter.join().unwrap().unwrap();
    assert_eq!(remaining(&s.path, DEFAULT_DATASET), Some("3/4".parse().unwrap()), "the charge is on disk");
}

#[test]
fn datasets_are_separate_and_budget_must_be_set() {
    let dir = tempfile::tempdir().unwrap();
    reserve(&named(&dir, Some("0.5"), "a"), &release("0.5")).unwrap();
    assert!(reserve(&named(&dir, None, "a"), &release("0.1")).is_err());
    let err = reserve(&named(&dir, None, "b"), &release("0.1")).unwrap_err();
    assert!(err.to_string().contains("--budget"), "{err}");
    reserve(&named(&dir, Some("1"), "b"), &release("1")).unwrap();
    let ledger = read(&dir.path().join("ledger.jsonl")).unwrap();
    assert_eq!(ledger.accounts.keys().collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
fn a_different_budget_needs_change_budget() {
    let dir = tempfile::tempdir().unwrap();
    reserve(&spec(&dir, Some("1")), &release("1")).unwrap();
    let err = reserve(&spec(&dir, Some("2")), &release("0.5")).unwrap_err();
    assert!(err.to_string().contains("--change-budget"), "{err}");
    let mut raise = spec(&dir, Some("2"));
    raise.change_budget = true;
    reserve(&raise, &release("0.5")).unwrap();
    assert_eq!(remaining(&raise.path, DEFAULT_DATASET), Some(BigRational::new(1.into(), 2.into())));
}

#[test]
fn completion_records_the_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(&dir, Some("1"));
    let first = reserve(&s, &release("0.25")).unwrap();
    let second = reserve(&s, &release("0.25")).unwrap();
    complete(&first, "csv-sha256:aa").unwrap();
    let ledger = read(&s.path).unwrap();
    let releases = &ledger.account(DEFAULT_DATASET).releases;
    assert_eq!(releases[0].fingerprint.as_deref(), Some("csv-sha256:aa"));
    assert_eq!(releases[1].fingerprint, None, "charged, not completed: still spent");
    assert_eq!(ledger.account(DEFAULT_DATASET).spent, BigRational::new(1.into(), 2.into()));
    complete(&second, "csv-sha256:bb").unwrap();
    assert!(complete(&second, "csv-sha256:bb").is_err(), "a charge completes once");
}

/// Every way of rolling the spend back is refused, and the file is left as it was.
#[test]
fn cuts_edits_and_deletions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(&dir, Some("1"));
    for _ in 0..3 {
        let r = reserve(&s, &release("0.25")).unwrap();
        complete(&r, "csv-sha256:aa").unwrap();
    }
    let good = std::fs::read_to_string(&s.path).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    let mut dropped = lines.clone();
    dropped.remove(3);
    let cases = [
        (join(&lines[..lines.len() - 2]), "cut short"),
        (join(&lines[..1]), "cut short"),
        (join(&dropped), "record 4 where record 3 belongs"),
        (good.replacen("\"1/4\"", "\"1/8\"", 1), "running total"),
        (good.replacen("\"spent\":\"3/4\"", "\"spent\":\"1/2\"", 1), "running total"),
        (good.replacen("csv-sha256:aa", "csv-sha256:ab", 1), "prev hash"),
        (good.replace("csv-sha256:aa\",\"prev", "csv-sha256:ab\",\"prev"), "prev hash"),
        (format!("{good}{{\"type\":\"charge\""), "truncated"),
        (format!("{good}not json\n"), "not a valid record"),
    ];
    for (bad, needle) in cases {
        std::fs::write(&s.path, &bad).unwrap();
        let err = reserve(&s, &release("0.1")).unwrap_err();
        assert!(err.to_string().contains(needle), "{needle}: {err}");
        assert_eq!(std::fs::read_to_string(&s.path).unwrap(), bad, "never reset");
        assert!(read(&s.path).is_err());
    }
    // The last record edited (nothing after it to break): the header names its hash.
    let last = lines.last().unwrap();
    let edited = good.replace(last, &last.replace("csv-sha256:aa", "csv-sha256:ab"));
    std::fs::write(&s.path, &edited).unwrap();
    let err = reserve(&s, &release("0.1")).unwrap_err();
    assert!(err.to_string().contains("line 1 names a last record"), "{err}");
}

/// Two charges of 0.25, then the header put back as it was after the first: what a run
/// that stopped between its append and the header's update leaves.
fn stale_header_after_two_charges(s: &LedgerSpec) -> (String, String) {
    reserve(s, &release("0.25")).unwrap();
    let header_then = std::fs::read_to_string(&s.path).unwrap().lines().next().unwrap().to_string();
    reserve(s, &release("0.25")).unwrap();
    let text = std::fs::read_to_string(&s.path).unwrap();
    let rest: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&s.path, format!("{header_then}\n{rest}")).unwrap();
    (header_then, rest)
}

/// A run that stopped between its append and the header's update left a consistent file
/// with a stale header: it is read with every record, and the next write mends the header.
#[test]
fn a_stale_header_is_read_and_mended() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(&dir, Some("1"));
    stale_header_after_two_charges(&s);
    assert_eq!(remaining(&s.path, DEFAULT_DATASET), Some(BigRational::new(1.into(), 2.into())));
    reserve(&s, &release("0.25")).unwrap();
    let ledger = read(&s.path).unwrap();
    assert_eq!(ledger.records, 4);
    let header = std::fs::read_to_string(&s.path).unwrap().lines().next().unwrap().to_string();
    assert!(header.contains(&hex(&ledger.head)), "{header}");
}

#[test]
fn the_header_keeps_its_length() {
    let head = genesis();
    assert_eq!(Header::line(0, &head).len(), Header::line(u64::MAX, &head).len());
    let parsed: Header = serde_json::from_str(Header::line(7, &head).trim_end()).unwrap();
    assert_eq!((parsed.records, parsed.head), (7, hex(&head)));
}

#[test]
fn old_ledgers_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(&dir, Some("1"));
    let old = "{\"type\":\"budget\",\"time\":\"2026-11-21T05:23:57Z\",\"dataset\":\"sha256:c448\",\"total\":\"1/1\",\"total_decimal\":1.0}\n";
    std::fs::write(&s.path, old).unwrap();
    let err = reserve(&s, &release("0.1")).unwrap_err().to_string();
    assert!(err.contains("earlier dpstat (format 1") && err.contains("new ledger file"), "{err}");
    assert_eq!(std::fs::read_to_string(&s.path).unwrap(), old);
}

/// A ledger keyed with a new key in the same directory.
fn keyed(dir: &tempfile::TempDir, budget: Option<&str>) -> LedgerSpec {
    let key = dir.path().join("ledger.key");
    if !key.exists() {
        ledger_key::generate(&key).unwrap();
    }
    LedgerSpec { key: Some(key), ..spec(dir, budget) }
}

/// Three charged and completed releases of 0.25 each.
fn three_releases(s: &LedgerSpec) -> String {
    for _ in 0..3 {
        let r = reserve(s, &release("0.25")).unwrap();
        complete(&r, "csv-sha256:aa").unwrap();
    }
    std::fs::read_to_string(&s.path).unwrap()
}

/// What whoever can write the ledger but not read the key can do to its chain: give every
/// record after the first a `prev` that is the SHA-256 of the line before it (a record whose
/// `prev` is that already is kept as it is), then a header as [`with_header`] writes it.
fn rechained(header: &str, records: &[&str]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for record in records {
        let mut line = record.to_string();
        if let Some(previous) = lines.last() {
            let link = hex(&Sha256::digest(previous.as_bytes()));
            let mut value: serde_json::Value = serde_json::from_str(record).unwrap();
            if value["prev"] != link.as_str() {
                value["prev"] = link.into();
                line = serde_json::to_string(&value).unwrap();
            }
        }
        lines.push(line);
    }
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    with_header(header, &lines, None)
}

/// `records` as they are under a header recomputed without the key: it counts them and
/// names `head`, else the SHA-256 of the last, as a keyless header does.
fn with_header(header: &str, records: &[&str], head: Option<&str>) -> String {
    let head = match head {
        Some(h) => h.to_string(),
        None => hex(&Sha256::digest(records.last().unwrap_or(&"").as_bytes())),
    };
    // In the header's fixed width, as dpstat rewrites it in place.
    let start = header.find("\"records\":").unwrap() + 10;
    let mut text = format!("{}{:<20},\"head\":\"{head}\"}}\n", &header[..start], records.len());
    assert_eq!(text.len(), header.len() + 1);
    for line in records {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// The finding of issue 24: records cut (or edited) and the chain and header recomputed
/// with SHA-256 pass a keyless ledger, and are refused when it is keyed, also with the
/// head taken from the `prev` of the first record cut.
#[test]
fn a_recomputed_chain_passes_a_keyless_ledger_and_not_a_keyed_one() {
    for keyed_ledger in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let s = if keyed_ledger { keyed(&dir, Some("1")) } else { spec(&dir, Some("1")) };
        let good = three_releases(&s);
        let lines: Vec<&str> = good.lines().collect();
        let next_prev = serde_json::from_str::<serde_json::Value>(lines[5]).unwrap()["prev"]
            .as_str()
            .unwrap()
            .to_string();
        let edited = lines[6].replace("csv-sha256:aa", "csv-sha256:ab");
        let mut changed = lines[1..].to_vec();
        changed[5] = &edited;
        let forgeries = [
            ("cut, header recomputed", with_header(lines[0], &lines[1..5], None)),
            ("cut, head read from the next prev", with_header(lines[0], &lines[1..5], Some(&next_prev))),
            ("edited, chain recomputed", rechained(lines[0], &changed)),
        ];
        for (what, forged) in forgeries {
            std::fs::write(&s.path, &forged).unwrap();
            if keyed_ledger {
                let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
                assert!(
                    err.contains("does not follow") || err.contains("names a last record"),
                    "{what}: {err}"
                );
                assert_eq!(std::fs::read_to_string(&s.path).unwrap(), forged, "{what}: never reset");
                assert!(read_keyed(&s.path, s.key.as_deref()).is_err(), "{what}");
                // Without the key it is listed, but as not verified, and not charged.
                let unverified = read(&s.path).unwrap();
                assert!(!unverified.verified && unverified.key_id.is_some(), "{what}");
                let no_key = LedgerSpec { key: None, ..s.clone() };
                let err = reserve(&no_key, &release("0.25")).unwrap_err().to_string();
                assert!(err.contains("a charge needs its key"), "{what}: {err}");
            } else {
                let ledger = read(&s.path).unwrap();
                assert!(ledger.verified && ledger.key_id.is_none());
                reserve(&s, &release("0.25")).unwrap_or_else(|e| panic!("{what}: accepted as today: {e}"));
            }
        }
    }
}

/// A whole older copy verifies with the key: the key's state file refuses it, and a ledger
/// put in place of the key's one (deleted, or another ledger) too.
#[test]
fn the_state_file_refuses_an_older_copy() {
    let dir = tempfile::tempdir().unwrap();
    let s = keyed(&dir, Some("2"));
    let key = ledger_key::load(s.key.as_deref().unwrap()).unwrap();
    let old = three_releases(&s);
    three_releases(&s);
    let state = ledger_key::read_state(&key).unwrap().unwrap();
    let ledger = read_keyed(&s.path, s.key.as_deref()).unwrap();
    assert_eq!((state.records, state.head.as_deref()), (13, Some(ledger.head_hex().as_str())));
    assert!(ledger.verified && ledger.state_checked);
    let full = std::fs::read_to_string(&s.path).unwrap();
    std::fs::write(&s.path, &old).unwrap();
    let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
    assert!(err.contains("fewer than the 13 that the key's state file"), "{err}");
    assert!(read_keyed(&s.path, s.key.as_deref()).is_err(), "dpstat budget with the key too");
    std::fs::remove_file(&s.path).unwrap();
    let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
    assert!(err.contains("holds 0 records"), "{err}");
    // Another ledger of the same key, as long as the first: another head at that count.
    let other = LedgerSpec { path: dir.path().join("other.jsonl"), dataset: "other".into(), ..s.clone() };
    let saved = ledger_key::read_state(&key).unwrap().unwrap();
    ledger_key::write_state(&key, &State { records: 0, head: None }).unwrap();
    three_releases(&other);
    three_releases(&other);
    ledger_key::write_state(&key, &saved).unwrap();
    std::fs::write(&s.path, std::fs::read_to_string(&other.path).unwrap()).unwrap();
    let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
    assert!(err.contains("another ledger"), "{err}");
    // The real one back: charged again.
    std::fs::write(&s.path, &full).unwrap();
    reserve(&s, &release("0.25")).unwrap();
}

/// A run that stopped after its header and before the state file leaves a state older than
/// the ledger, which the ledger extends: accepted, and brought up to date by the next write.
/// A missing state file is refused for a charge once the ledger has records.
#[test]
fn a_state_behind_the_ledger_is_caught_up_and_a_missing_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = keyed(&dir, Some("2"));
    let key = ledger_key::load(s.key.as_deref().unwrap()).unwrap();
    three_releases(&s);
    let behind = ledger_key::read_state(&key).unwrap().unwrap();
    three_releases(&s);
    ledger_key::write_state(&key, &behind).unwrap();
    reserve(&s, &release("0.25")).unwrap();
    assert_eq!(ledger_key::read_state(&key).unwrap().unwrap().records, 14);
    std::fs::remove_file(key.state_path()).unwrap();
    let err = reserve(&s, &release("0.25")).unwrap_err().to_string();
    assert!(err.contains("state file") && err.contains("is missing"), "{err}");
    let listed = read_keyed(&s.path, s.key.as_deref()).unwrap();
    assert!(listed.verified && !listed.state_checked, "listed, with the state not checked");
}

/// A keyed ledger whose run stopped before its header's update is read and mended as a
/// plain one is: the stale header's head is the keyed head after the records it counts.
#[test]
fn a_stale_keyed_header_is_read_and_mended() {
    let dir = tempfile::tempdir().unwrap();
    let s = keyed(&dir, Some("1"));
    let (header_then, rest) = stale_header_after_two_charges(&s);
    let ledger = read_keyed(&s.path, s.key.as_deref()).unwrap();
    assert_eq!((ledger.records, ledger.verified, ledger.state_checked), (3, true, true));
    reserve(&s, &release("0.25")).unwrap();
    let header = std::fs::read_to_string(&s.path).unwrap().lines().next().unwrap().to_string();
    assert!(header.contains(&read_keyed(&s.path, s.key.as_deref()).unwrap().head_hex()), "{header}");
    // A stale header with its count raised by hand names a head the key never wrote.
    let forged = header_then.replacen("\"records\":2 ", "\"records\":3 ", 1);
    assert_ne!(forged, header_then);
    std::fs::write(&s.path, format!("{forged}\n{rest}")).unwrap();
    let err = read_keyed(&s.path, s.key.as_deref()).unwrap_err().to_string();
    assert!(err.contains("names a last record"), "{err}");
}

/// A key belongs to its ledger: another key, or a key with a keyless ledger, is refused; a
/// keyed header is as fixed in length as a keyless one.
#[test]
fn keys_and_ledgers_must_match() {
    let dir = tempfile::tempdir().unwrap();
    let s = keyed(&dir, Some("1"));
    reserve(&s, &release("0.25")).unwrap();
    let header = std::fs::read_to_string(&s.path).unwrap().lines().next().unwrap().to_string();
    assert!(header.contains("\"format\":3,\"keyed\":true,\"key_id\":"), "{header}");
    let other = dir.path().join("other.key");
    ledger_key::generate(&other).unwrap();
    let wrong = LedgerSpec { key: Some(other.clone()), ..s.clone() };
    let err = reserve(&wrong, &release("0.25")).unwrap_err().to_string();
    assert!(err.contains("not with the key in"), "{err}");
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = spec(&plain_dir, Some("1"));
    reserve(&plain, &release("0.25")).unwrap();
    let err = reserve(&LedgerSpec { key: Some(other), ..plain.clone() }, &release("0.25")).unwrap_err();
    assert!(err.to_string().contains("is not keyed (format 2)"), "{err}");
    let key = ledger_key::load(s.key.as_deref().unwrap()).unwrap();
    let head = genesis();
    assert_eq!(Header::keyed_line(0, &head, &key).len(), Header::keyed_line(u64::MAX, &head, &key).len());
}

fn with_delta(dir: &tempfile::TempDir, budget: &str, delta: &str) -> LedgerSpec {
    LedgerSpec { budget_delta: Some(delta.parse().unwrap()), ..spec(dir, Some(budget)) }
}

fn zcdp(rho: &str) -> Charge {
    spending(Spend::Zcdp(rho.parse().unwrap()))
}

fn approx(eps: &str, delta: &str) -> Charge {
    spending(Spend::Approx { eps: eps.parse().unwrap(), delta: delta.parse().unwrap() })
}

fn refusal(spec: &LedgerSpec, charge: &Charge) -> String {
    let before = std::fs::read(&spec.path).unwrap_or_default();
    let err = reserve(spec, charge).unwrap_err();
    assert!(matches!(err.downcast_ref::<Error>(), Some(Error::Budget(_))), "exit 3: {err}");
    assert_eq!(std::fs::read(&spec.path).unwrap_or_default(), before, "a refusal writes nothing");
    err.to_string()
}

/// ρ charges compose with the pure ones at the budget's Rényi order α* (23 for (1, 1e-6), all
/// of δ for zCDP): charges are admitted while R(α*) = Σ min(ε, α*ε²/2) + α*Σρ <= B, the next
/// that would pass B is refused, and the spend is R(α*) converted at α* and δ_total.
#[test]
fn rho_charges_compose_with_pure_ones_at_the_budget_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = LedgerSpec { budget_delta_for: Some(DeltaUse::Zcdp), ..with_delta(&dir, "1", "1e-6") };
    let d: Delta = "1e-6".parse().unwrap();
    reserve(&s, &release("0.2")).unwrap();
    reserve(&s, &zcdp("0.001")).unwrap();
    let account = read(&s.path).unwrap().account(DEFAULT_DATASET);
    let m = account.measure().unwrap();
    let Rule::Renyi { order, limit } = &m.rule else { panic!("the Rényi rule: {m:?}") };
    let alpha = BigRational::from_integer(23.into());
    assert_eq!(order.alpha, alpha);
    // min(0.2, 23·0.02) + 23·0.001 = 0.223.
    assert_eq!(m.value, BigRational::new(223.into(), 1000.into()));
    assert_eq!(account.spent_epsilon(), Some(order.epsilon(&m.value)));
    assert_eq!(account.spent_rho_total(), Some(BigRational::new(21.into(), 1000.into())));
    assert_eq!(account.spent, BigRational::new(1.into(), 5.into()), "Σε keeps the pure part");
    assert_eq!(account.spent_rho, BigRational::new(1.into(), 1000.into()));
    // The largest ρ that still fits: (B − 0.223)/23; a little more is refused.
    let room = (limit - &m.value) / &alpha;
    let tiny = BigRational::new(1.into(), 1_000_000_000.into());
    let asked = Rho::from_rational(&room - &tiny).unwrap();
    let over = Rho::from_rational(&room + &tiny).unwrap();
    let message = refusal(&s, &spending(Spend::Zcdp(over)));
    assert!(message.contains("budget exhausted") && message.contains("at order 23 is"), "{message}");
    // R prints exactly (0.223 + 23·1 = 23.223).
    let big = refusal(&s, &spending(Spend::Zcdp("1".parse().unwrap())));
    assert!(big.contains("Renyi divergence at order 23 is 23.223,"), "{big}");
    reserve(&s, &spending(Spend::Zcdp(asked))).unwrap();
    // Then a pure charge, too, is counted at α* and refused.
    assert!(refusal(&s, &release("0.01")).contains("budget exhausted"));
    let summary = BudgetSummary::new(DEFAULT_DATASET, &read(&s.path).unwrap().account(DEFAULT_DATASET));
    assert!(
        summary.spent <= 1.0 && summary.spent_rho.is_some() && summary.total_delta == Some(d.to_f64_up())
    );
    assert_eq!(summary.renyi_order_exact.as_deref(), Some("23/1"));
    // The rule records nothing (no order, no R), so the spend is re-derived from the charges
    // on every read and ledgers written under the zCDP rule read as they are.
    let text = std::fs::read_to_string(&s.path).unwrap();
    assert!(text.contains("\"rho\":\"1/1000\"") && text.contains("\"spent_rho\":\"1/1000\""), "{text}");
    assert!(!text.contains("renyi") && !text.contains("order"), "{text}");
}

#[test]
fn rho_needs_a_budget_delta_and_never_mixes_with_epsilon_delta() {
    let dir = tempfile::tempdir().unwrap();
    let pure = spec(&dir, Some("1"));
    let message = refusal(&pure, &zcdp("0.01"));
    assert!(message.contains("delta 0") && message.contains("--budget-delta"), "{message}");
    // Recording a δ needs --change-budget once a budget exists.
    reserve(&pure, &release("0.1")).unwrap();
    let err = reserve(&with_delta(&dir, "1", "1e-6"), &zcdp("0.01")).unwrap_err();
    assert!(err.to_string().contains("--change-budget"), "{err}");
    let change = LedgerSpec { change_budget: true, ..with_delta(&dir, "1", "1e-6") };
    reserve(&change, &zcdp("0.01")).unwrap();
    // The δ stays when later runs give --budget alone.
    reserve(&spec(&dir, Some("1")), &zcdp("0.001")).unwrap();
    let message = refusal(&spec(&dir, None), &approx("0.1", "1e-9"));
    assert!(message.contains("cannot share a budget"), "{message}");
    let ledger = read(&pure.path).unwrap();
    assert_eq!(ledger.account(DEFAULT_DATASET).delta, Some("1e-6".parse().unwrap()));
}

/// (ε, δ) charges compose basically with pure ones: Σε <= ε_total and Σδ <= δ_total (all of
/// it theirs under `--budget-delta-for thresholds`).
#[test]
fn epsilon_delta_charges_add_both() {
    let dir = tempfile::tempdir().unwrap();
    let s = LedgerSpec { budget_delta_for: Some(DeltaUse::Thresholds), ..with_delta(&dir, "1", "2e-7") };
    reserve(&s, &approx("0.5", "1e-7")).unwrap();
    reserve(&s, &release("0.25")).unwrap();
    assert!(refusal(&s, &approx("0.5", "1e-7")).contains("spent 0.75 of 1"));
    assert!(refusal(&s, &approx("0.1", "2e-7")).contains("deltas add up to"));
    reserve(&s, &approx("0.25", "1e-7")).unwrap();
    let account = read(&s.path).unwrap().account(DEFAULT_DATASET);
    assert_eq!(account.remaining(), Some(BigRational::zero()));
    assert_eq!(account.spent_delta, BigRational::new(1.into(), 5_000_000.into()));
    let summary = BudgetSummary::new(DEFAULT_DATASET, &account);
    assert_eq!(summary.spent_delta_exact.as_deref(), Some("1/5000000"));
    // Without a δ in the budget, no (ε, δ) charge fits.
    let other = named(&dir, Some("1"), "other");
    assert!(refusal(&other, &approx("0.1", "1e-9")).contains("budget's delta 0"));
}

/// Running totals per currency are checked like Σε: an edited ρ or δ is refused, and a
/// format-2 ledger written before the new fields reads as pure ε.
#[test]
fn running_totals_per_currency_are_checked_and_old_records_read() {
    let dir = tempfile::tempdir().unwrap();
    let s = with_delta(&dir, "1", "1e-6");
    reserve(&s, &zcdp("0.001")).unwrap();
    reserve(&s, &zcdp("0.002")).unwrap();
    let good = std::fs::read_to_string(&s.path).unwrap();
    assert!(good.contains("\"spent_rho\":\"3/1000\"") && good.contains("\"rho\":\"1/500\""), "{good}");
    for bad in [
        good.replacen("\"spent_rho\":\"3/1000\"", "\"spent_rho\":\"1/500\"", 1),
        good.replacen("\"rho\":\"1/500\"", "\"rho\":\"1/1000\"", 1),
    ] {
        std::fs::write(&s.path, &bad).unwrap();
        let err = read(&s.path).unwrap_err().to_string();
        assert!(err.contains("running total") || err.contains("prev hash"), "{err}");
    }
    // A record as an earlier format-2 dpstat wrote it (no delta, rho or spent_rho fields).
    let old = "{\"type\":\"charge\",\"seq\":2,\"time\":\"2026-01-01T00:00:00Z\",\"dataset\":\"default\",\"query\":\"count\",\"neighbours\":\"add-remove\",\"epsilon\":\"1/10\",\"epsilon_decimal\":0.1,\"spent\":\"1/10\",\"prev\":\"x\"}";
    let record: Record = serde_json::from_str(old).unwrap();
    let Record::Charge { epsilon, rho, spent_rho, .. } = record else { panic!("a charge") };
    assert_eq!((epsilon.as_deref(), rho, spent_rho), (Some("1/10"), None, None));
    assert_eq!(charged(Some("1/10"), None, None), Some(Spend::Pure("0.1".parse().unwrap())));
    assert_eq!(charged(Some("1/10"), Some("1/10"), None), None);
    assert_eq!(charged(None, None, Some("1/10")), None);
}

fn per(unit: &str, eps: &str) -> Charge {
    Charge { unit: unit.into(), ..release(eps) }
}

/// A dataset is spent in the unit of its first charge: a charge in another (row after
/// person, person after row, or another id column) is refused with exit 3 and nothing
/// written, whatever budget is left; other datasets keep their own unit.
#[test]
fn a_dataset_is_spent_in_one_privacy_unit() {
    let dir = tempfile::tempdir().unwrap();
    let people = named(&dir, Some("1"), "people");
    reserve(&people, &per("person:patient", "0.1")).unwrap();
    reserve(&people, &per("person:patient", "0.1")).unwrap();
    let message = refusal(&people, &release("0.1"));
    assert!(
        message.contains("dataset people in ledger")
            && message
                .contains("is spent per person:patient; this release is per row: add --privacy-id patient"),
        "{message}"
    );
    let message = refusal(&people, &per("person:visit", "0.1"));
    assert!(message.contains("this release is per person:visit: give --privacy-id patient"), "{message}");
    let rows = named(&dir, Some("1"), "rows");
    reserve(&rows, &release("0.1")).unwrap();
    let message = refusal(&rows, &per("person:patient", "0.1"));
    assert!(
        message.contains("is spent per row; this release is per person:patient: drop --privacy-id"),
        "{message}"
    );
    // Refused before the budget is looked at: even a charge it could not pay says the unit.
    assert!(refusal(&rows, &per("person:patient", "5")).contains("spent per row"));
    let ledger = read(&people.path).unwrap();
    let units = |name: &str| {
        let account = ledger.account(name);
        (account.unit.clone(), account.releases.iter().map(|e| e.unit.clone()).collect::<Vec<_>>())
    };
    let patient = "person:patient".to_string();
    assert_eq!(units("people"), (Some(patient.clone()), vec![patient.clone(), patient]));
    assert_eq!(units("rows"), (Some("row".into()), vec!["row".into()]));
    assert_eq!(ledger.account("none").unit, None, "no charge, no unit yet");
}

/// A row-level charge is written without a `unit` (as before the field existed) and a record
/// without one reads as row; a person-level one names its unit.
#[test]
fn a_record_without_a_unit_is_row_level() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(&dir, Some("1"));
    reserve(&s, &release("0.1")).unwrap();
    let text = std::fs::read_to_string(&s.path).unwrap();
    assert!(!text.contains("unit"), "{text}");
    // A record as dpstat wrote it before the field existed.
    let old = "{\"type\":\"charge\",\"seq\":2,\"time\":\"2026-01-01T00:00:00Z\",\"dataset\":\"default\",\"query\":\"count\",\"neighbours\":\"add-remove\",\"epsilon\":\"1/10\",\"epsilon_decimal\":0.1,\"spent\":\"1/10\",\"prev\":\"x\"}";
    let Record::Charge { unit, .. } = serde_json::from_str(old).unwrap() else { panic!("a charge") };
    assert_eq!(unit, None);
    assert_eq!(read(&s.path).unwrap().account(DEFAULT_DATASET).unit.as_deref(), Some(ROW_UNIT));
    let message = refusal(&s, &per("person:id", "0.1"));
    assert!(message.contains("spent per row"), "{message}");
    let other = named(&dir, Some("1"), "other");
    reserve(&other, &per("person:id", "0.1")).unwrap();
    let text = std::fs::read_to_string(&s.path).unwrap();
    assert!(text.contains("\"neighbours\":\"add-remove\",\"unit\":\"person:id\","), "{text}");
}

/// The unit is chained like every field: edited anywhere (renamed, removed so that the
/// charge reads as row, or the last record's) the ledger is refused, plain or keyed; and a
/// charge in another unit than its dataset's, chain recomputed, is refused as written by hand.
#[test]
fn an_edited_unit_is_refused() {
    for keyed_ledger in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let s = if keyed_ledger { keyed(&dir, Some("1")) } else { spec(&dir, Some("1")) };
        for _ in 0..2 {
            let r = reserve(&s, &per("person:patient", "0.25")).unwrap();
            complete(&r, "csv-sha256:aa").unwrap();
        }
        let good = std::fs::read_to_string(&s.path).unwrap();
        let read_back = || read_keyed(&s.path, s.key.as_deref());
        let lines: Vec<&str> = good.lines().collect();
        let last_charge = lines[4];
        assert!(last_charge.contains("\"unit\":\"person:patient\""), "{last_charge}");
        let edits = [
            (good.replacen("person:patient", "person:visit", 1), "prev hash"),
            (good.replacen(",\"unit\":\"person:patient\"", "", 1), "prev hash"),
            (good.replacen("person:patient", "row", 1), "prev hash"),
        ];
        for (bad, needle) in edits {
            assert_ne!(bad, good);
            std::fs::write(&s.path, &bad).unwrap();
            let err = reserve(&s, &per("person:patient", "0.1")).unwrap_err().to_string();
            assert!(err.contains(needle), "{keyed_ledger}: {err}");
            assert!(read_back().is_err());
            assert_eq!(std::fs::read_to_string(&s.path).unwrap(), bad, "never reset");
        }
        // The unit of the last record, which no `prev` names: the header's head does.
        let fresh = tempfile::tempdir().unwrap();
        let one = if keyed_ledger { keyed(&fresh, Some("1")) } else { spec(&fresh, Some("1")) };
        reserve(&one, &per("person:patient", "0.25")).unwrap();
        let text = std::fs::read_to_string(&one.path).unwrap();
        let ours: Vec<&str> = text.lines().collect();
        let renamed = ours[2].replace("person:patient", "person:visit");
        let mut forged = vec![text.replacen(ours[2], &renamed, 1)];
        if keyed_ledger {
            // Also with the header recomputed without the key (a keyless one would pass).
            forged.push(with_header(ours[0], &[ours[1], &renamed], None));
        }
        for bad in forged {
            std::fs::write(&one.path, &bad).unwrap();
            let err = read_keyed(&one.path, one.key.as_deref()).unwrap_err().to_string();
            assert!(err.contains("line 1 names a last record"), "{keyed_ledger}: {err}");
        }
        let edited = lines[4].replace("person:patient", "person:visit");
        if !keyed_ledger {
            // Without a key the chain can be recomputed (docs/DESIGN.md §5.3): the reader
            // still refuses a dataset charged in two units.
            let mixed = rechained(lines[0], &[lines[1], lines[2], lines[3], &edited]);
            std::fs::write(&s.path, &mixed).unwrap();
            let err = read_back().unwrap_err().to_string();
            assert!(err.contains("line 5 charges its dataset in another privacy unit"), "{err}");
            let nonsense = rechained(lines[0], &[lines[1], &lines[2].replace("person:patient", "person:")]);
            std::fs::write(&s.path, &nonsense).unwrap();
            let err = read_back().unwrap_err().to_string();
            assert!(err.contains("neither row nor person:COLUMN"), "{err}");
        }
    }
}

/// Issue 35, item 1: a keyed charge records the id of its run's nonce, under the chain's HMAC,
/// and a completion finds only its own charge. Two runs charged at the same sequence number
/// (one on a copy of the ledger put in place of the other's) no longer complete each other's.
#[test]
fn a_completion_finds_its_own_charge_by_its_run_nonce() {
    let dir = tempfile::tempdir().unwrap();
    let s = keyed(&dir, Some("10"));
    let key = ledger_key::load(s.key.as_deref().unwrap()).unwrap();
    three_releases(&s);
    let (copy, state) = (std::fs::read(&s.path).unwrap(), ledger_key::read_state(&key).unwrap());
    let expensive = reserve(&s, &release("1")).unwrap();
    // What the race left: the copy in place, charged by another run at the same number, and
    // the key's state naming it.
    std::fs::write(&s.path, &copy).unwrap();
    ledger_key::write_state(&key, state.as_ref().unwrap()).unwrap();
    let cheap = reserve(&s, &release("1/10000")).unwrap();
    assert_eq!(cheap.seq, expensive.seq);
    let charges: Vec<serde_json::Value> = std::fs::read_to_string(&s.path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["type"] == "charge")
        .collect();
    let last = charges.last().unwrap();
    assert_eq!(last["run"].as_str(), Some(run_id(cheap.nonce.as_ref().unwrap()).as_str()));
    assert_ne!(last["run"].as_str(), Some(run_id(expensive.nonce.as_ref().unwrap()).as_str()));
    let before = std::fs::read(&s.path).unwrap();
    let err = complete(&expensive, "csv-sha256:aa").unwrap_err().to_string();
    assert!(err.contains("is not in it") && err.contains("nothing was released"), "{err}");
    assert_eq!(std::fs::read(&s.path).unwrap(), before, "nothing appended");
    complete(&cheap, "csv-sha256:aa").unwrap();
    // The id is under the HMAC: one taken from another charge does not verify.
    let text = std::fs::read_to_string(&s.path).unwrap();
    let first_run = charges[0]["run"].as_str().unwrap();
    let edited = text.replacen(last["run"].as_str().unwrap(), first_run, 1);
    assert_ne!(edited, text);
    std::fs::write(&s.path, edited).unwrap();
    let err = read_keyed(&s.path, s.key.as_deref()).unwrap_err().to_string();
    assert!(err.contains("is corrupt"), "{err}");
    // A keyless ledger writes no run id: its records are as before.
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = spec(&plain_dir, Some("1"));
    let r = reserve(&plain, &release("0.5")).unwrap();
    assert!(r.nonce.is_none() && !std::fs::read_to_string(&plain.path).unwrap().contains("\"run\""));
    complete(&r, "csv-sha256:aa").unwrap();
}

/// `records` chained and headed with `key` as a keyed ledger is, and the key's state brought
/// up to date: what an earlier dpstat wrote, for records without the fields added since.
fn written_with_key(key: &LedgerKey, records: &[serde_json::Value]) -> String {
    let chain = Chain::Keyed(key);
    let mut link = chain.start();
    let mut body = String::new();
    for record in records {
        let mut record = record.clone();
        record["prev"] = hex(&link).into();
        let line = serde_json::to_string(&record).unwrap();
        link = chain.link(&line);
        body.push_str(&line);
        body.push('\n');
    }
    let head = chain.head(records.len() as u64, &link);
    ledger_key::write_state(key, &State { records: records.len() as u64, head: Some(hex(&head)) }).unwrap();
    format!("{}{body}", Header::keyed_line(records.len() as u64, &head, key))
}

/// Charges written before the run id existed still verify, are completed by their sequence
/// number when read, and the ledger is charged on as before.
#[test]
fn keyed_charges_from_before_the_run_id_still_verify() {
    let dir = tempfile::tempdir().unwrap();
    let s = keyed(&dir, Some("1"));
    let key = ledger_key::load(s.key.as_deref().unwrap()).unwrap();
    three_releases(&s);
    let old: Vec<serde_json::Value> = std::fs::read_to_string(&s.path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let mut record: serde_json::Value = serde_json::from_str(l).unwrap();
            record.as_object_mut().unwrap().remove("run");
            record
        })
        .collect();
    std::fs::write(&s.path, written_with_key(&key, &old)).unwrap();
    assert!(!std::fs::read_to_string(&s.path).unwrap().contains("\"run\""));
    let ledger = read_keyed(&s.path, s.key.as_deref()).unwrap();
    assert!(ledger.verified && ledger.state_checked);
    assert_eq!(ledger.account(DEFAULT_DATASET).spent, "3/4".parse::<BigRational>().unwrap());
    let r = reserve(&s, &release("0.25")).unwrap();
    complete(&r, "csv-sha256:aa").unwrap();
    assert_eq!(remaining(&s.path, DEFAULT_DATASET), Some(BigRational::zero()));
}

/// Issue 35, item 1: the append refuses when the key's state file is no longer what the run
/// read and checked the ledger against, and writes nothing.
#[test]
fn a_state_changed_since_it_was_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = keyed(&dir, Some("1"));
    three_releases(&s);
    let mut opened = open_to_charge(&s.path, s.key.as_deref()).unwrap();
    let key = ledger_key::load(s.key.as_deref().unwrap()).unwrap();
    let read = ledger_key::read_state(&key).unwrap().unwrap();
    // Written by a run that did not take the key's lock.
    ledger_key::write_state(&key, &State { records: read.records + 1, head: Some("ab".repeat(32)) }).unwrap();
    let before = std::fs::read(&s.path).unwrap();
    let draft = Draft::Released { charge: 2, fingerprint: "csv-sha256:aa".into() };
    let Opened { file, ledger, key, .. } = &mut opened;
    let err = append(file, &s.path, ledger, &[draft], key.as_ref()).unwrap_err().to_string();
    assert!(err.contains("changed while ledger") && err.contains("nothing was appended"), "{err}");
    assert_eq!(std::fs::read(&s.path).unwrap(), before);
    drop(opened);
    ledger_key::write_state(&key_of(&s), &read).unwrap();
    reserve(&s, &release("0.25")).unwrap();
}

fn key_of(s: &LedgerSpec) -> LedgerKey {
    ledger_key::load(s.key.as_deref().unwrap()).unwrap()
}

/// The key's lock serialises the runs that charge with it, whatever inode the ledger's path
/// names: a run holding it keeps another from charging until it is released.
#[test]
fn the_key_lock_is_held_while_a_keyed_ledger_is_charged() {
    let dir = tempfile::tempdir().unwrap();
    let s = keyed(&dir, Some("1"));
    three_releases(&s);
    let opened = open_to_charge(&s.path, s.key.as_deref()).unwrap();
    let lock = std::fs::File::open(key_of(&s).lock_path()).unwrap();
    assert!(lock.try_lock().is_err(), "held while the ledger is open to charge");
    drop(opened);
    lock.try_lock().unwrap();
}

/// Issue 35, item 5: a first budget for data that another dataset's release read is refused,
/// naming that dataset, with nothing written; `data` is asked only when it matters.
#[test]
fn a_new_budget_for_the_data_of_another_dataset_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = named(&dir, Some("1"), "people");
    let mut asked = 0;
    let r = reserve_for(&s, &release("0.1"), &mut || {
        asked += 1;
        Ok(Some("csv-sha256:aa".into()))
    })
    .unwrap();
    assert_eq!(asked, 0, "no release completed yet: nothing to compare with");
    complete(&r, "csv-sha256:aa").unwrap();
    let before = std::fs::read(&s.path).unwrap();
    let second = named(&dir, Some("1"), "peeple");
    let err = reserve_for(&second, &release("0.1"), &mut || Ok(Some("csv-sha256:aa".into())))
        .unwrap_err()
        .to_string();
    assert!(err.contains("dataset people in ledger") && err.contains("--new-dataset-for-same-data"), "{err}");
    assert_eq!(std::fs::read(&s.path).unwrap(), before, "nothing written");
    // Other data, data not known before the charge, and the flag: admitted.
    reserve_for(&second, &release("0.1"), &mut || Ok(None)).unwrap();
    let third = named(&dir, Some("1"), "third");
    reserve_for(&third, &release("0.1"), &mut || Ok(Some("csv-sha256:bb".into()))).unwrap();
    let fourth = LedgerSpec { same_data: true, ..named(&dir, Some("1"), "fourth") };
    reserve_for(&fourth, &release("0.1"), &mut || panic!("not asked with the flag")).unwrap();
    // A budget already recorded is not asked either.
    reserve_for(&s, &release("0.1"), &mut || panic!("not asked for a recorded budget")).unwrap();
    let err = reserve(&named(&dir, None, "peple"), &release("0.1")).unwrap_err().to_string();
    assert!(err.contains("did you mean --dataset people?"), "{err}");
}
