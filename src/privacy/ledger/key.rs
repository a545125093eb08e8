//! The custodian's key of a keyed ledger, and the state file beside it (docs/DESIGN.md §5.3).
//!
//! A SHA-256 chain can be recomputed by anyone who can write the ledger: it shows accidents,
//! not an adversary. A keyed ledger links its records with HMAC-SHA256 (RFC 2104) under a
//! 256-bit key that the custodian keeps where the analyst cannot read it, so a record forged,
//! edited or cut away cannot be given a chain and a header that verify. The key is given as a
//! file (`--ledger-key FILE` or `DPSTAT_LEDGER_KEY_FILE`), never on the command line, where
//! `ps` would show it. The ledger names the key only by its id, a SHA-256 of the key.
//!
//! A whole older copy of a keyed ledger still verifies. The state file `KEYFILE.state`, beside
//! the key, holds the record count and head of the key's ledger as last written; a ledger with
//! fewer records, or another head at that count, is refused. One key belongs to one ledger.
//!
//! Every run that charges with the key holds an exclusive lock on `KEYFILE.lock`, beside the
//! key, from before it opens the ledger until its state file is written ([`LedgerKey::lock`]):
//! the ledger's own lock is on whatever inode its path names, and a ledger renamed over the
//! path between two runs would let them read and write the state file in turn, each on a
//! ledger of its own.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{bad_input, Error};
use crate::numeric::format::hex;
use crate::privacy::rng;

type HmacSha256 = hmac::Hmac<Sha256>;

/// What a key file holds: the key as 64 hex digits and a newline.
const KEY_HEX: usize = 64;

/// The custodian's key, read from its file. Its bytes are never printed, not even by `Debug`.
pub struct LedgerKey {
    /// HMAC keyed once (its inner and outer pads hashed), cloned for every message.
    keyed: HmacSha256,
    id: [u8; 32],
    path: PathBuf,
}

impl std::fmt::Debug for LedgerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerKey").field("path", &self.path).field("id", &hex(&self.id)).finish()
    }
}

impl LedgerKey {
    fn from_secret(secret: [u8; 32], path: &Path) -> LedgerKey {
        let mut id = Sha256::new();
        id.update(b"dpstat ledger key id\n");
        id.update(secret);
        let keyed = <HmacSha256 as KeyInit>::new_from_slice(&secret).expect("HMAC takes any key length");
        LedgerKey { keyed, id: id.finalize().into(), path: path.to_path_buf() }
    }

    /// The key's id as the ledger's header records it: a hash of the key, which does not reveal it.
    pub fn id_hex(&self) -> String {
        hex(&self.id)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// HMAC-SHA256 under the key of `domain` followed by `parts`: the domain byte keeps the
    /// chain's start, its links and the header's head from ever standing for one another.
    pub fn mac(&self, domain: u8, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.keyed.clone();
        mac.update(&[domain]);
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    /// `KEYFILE.state`, where the key's ledger's count and head are kept.
    pub fn state_path(&self) -> PathBuf {
        state_path(&self.path)
    }

    /// `KEYFILE.lock`, the file whose lock serialises the runs that use the key.
    pub fn lock_path(&self) -> PathBuf {
        beside(&self.path, ".lock")
    }

    /// Locks `KEYFILE.lock` (created, owner only, if missing): exclusively to charge, shared
    /// to read. Held until the file returned is dropped. It lives beside the key, in the
    /// directory the analyst cannot write, so it cannot be swapped for another inode.
    pub fn lock(&self, exclusive: bool) -> Result<File> {
        let path = self.lock_path();
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let failed = |e: std::io::Error| {
            bad_input(format!("--ledger-key: cannot lock {} beside the key: {e}", path.display()))
        };
        let file = options.open(&path).map_err(failed)?;
        match exclusive {
            true => file.lock(),
            false => file.lock_shared(),
        }
        .map_err(failed)?;
        Ok(file)
    }
}

fn beside(key: &Path, suffix: &str) -> PathBuf {
    let mut name = key.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn state_path(key: &Path) -> PathBuf {
    beside(key, ".state")
}

/// `dpstat ledger init --key FILE`: a new random key in FILE (mode 0600) and its state file
/// (no records yet). Neither may exist: a key overwritten would orphan its ledger.
pub fn generate(path: &Path) -> Result<LedgerKey> {
    let state = state_path(path);
    for existing in [path, state.as_path()] {
        if std::fs::symlink_metadata(existing).is_ok() {
            return Err(bad_input(format!(
                "--key: {} already exists; a key is never overwritten (its ledger could no longer be \
                 charged): choose another path",
                existing.display()
            )));
        }
    }
    let secret = rng::secret_bytes::<32>()?;
    let key = LedgerKey::from_secret(secret, path);
    write_new(path, format!("{}\n", hex(&secret)).as_bytes())?;
    write_new(&state, state_line(&State { records: 0, head: None }).as_bytes())?;
    Ok(key)
}

/// Creates a file readable by its owner only, failing if it exists, and syncs it.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file =
        options.open(path).map_err(|e| bad_input(format!("--key: cannot create {}: {e}", path.display())))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::internal(format!("writing {}: {e}", path.display())))?;
    Ok(())
}

/// Reads a key file: a regular file that only its owner may read, holding 64 hex digits.
pub fn load(path: &Path) -> Result<LedgerKey> {
    let shown = path.display();
    let unreadable =
        |e: std::io::Error| bad_input(format!("--ledger-key: cannot read the key file {shown}: {e}"));
    let file = File::open(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(bad_input(format!("--ledger-key: {shown} is not a regular file")));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(bad_input(format!(
                "--ledger-key: the key file {shown} may be read or written by others (mode {mode:03o}); \
                 whoever can read it can forge the ledger: chmod 600 {shown}"
            )));
        }
    }
    let mut text = String::new();
    file.take(4096).read_to_string(&mut text).map_err(unreadable)?;
    let digits = text.trim();
    let secret = (digits.len() == KEY_HEX).then(|| parse_hex32(digits)).flatten().ok_or_else(|| {
        bad_input(format!(
            "--ledger-key: {shown} does not hold a ledger key (64 hex digits); make one with \
                 dpstat ledger init --key FILE"
        ))
    })?;
    Ok(LedgerKey::from_secret(secret, path))
}

fn parse_hex32(digits: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(digits.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// What the state file remembers of the key's ledger: the number of records and the head its
/// header had after the last append (none before the first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub records: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
}

fn state_line(state: &State) -> String {
    format!("{}\n", serde_json::to_string(state).expect("a state serialises"))
}

/// The key's state, or None when its file is missing.
pub fn read_state(key: &LedgerKey) -> Result<Option<State>> {
    let path = key.state_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(bad_input(format!(
                "--ledger-key: cannot read the state file {}: {e}",
                path.display()
            )))
        }
    };
    let state: State = serde_json::from_str(text.trim()).map_err(|e| {
        bad_input(format!(
            "--ledger-key: the state file {} is not a ledger state ({e}); restore it from a copy",
            path.display()
        ))
    })?;
    Ok(Some(state))
}

/// Replaces the state file atomically (a new file renamed over it, then the directory synced),
/// so a crash leaves the old state or the new one. Called under the key's exclusive lock.
pub fn write_state(key: &LedgerKey, state: &State) -> Result<()> {
    let path = key.state_path();
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".new");
    let temporary = PathBuf::from(temporary);
    let failed =
        |e: std::io::Error| Error::internal(format!("writing the state file {}: {e}", path.display()));
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary).map_err(failed)?;
    file.write_all(state_line(state).as_bytes()).and_then(|()| file.sync_all()).map_err(failed)?;
    std::fs::rename(&temporary, &path).map_err(failed)?;
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        File::open(dir).and_then(|d| d.sync_all()).map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_created_private_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.key");
        let key = generate(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for file in [&path, &key.state_path()] {
                assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600, "{file:?}");
            }
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.trim().len(), 64);
        assert_eq!(read_state(&key).unwrap(), Some(State { records: 0, head: None }));
        let err = generate(&path).unwrap_err().to_string();
        assert!(err.contains("already exists"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "the key is kept");
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.id_hex(), key.id_hex());
        assert_eq!(loaded.mac(1, &[b"x"]), key.mac(1, &[b"x"]));
        assert!(!format!("{loaded:?}").contains(text.trim()), "Debug never shows the key");
        assert_ne!(generate(&dir.path().join("other.key")).unwrap().id_hex(), key.id_hex());
    }

    #[test]
    fn the_mac_is_hmac_sha256_with_a_domain_byte() {
        // RFC 4231, test case 2: key "Jefe", data "what do ya want for nothing?" (the domain
        // byte is the data's first byte, 'w').
        let mut secret = [0u8; 32];
        secret[..4].copy_from_slice(b"Jefe");
        let padded = LedgerKey::from_secret(secret, Path::new("k"));
        let expected = {
            let mut mac = <HmacSha256 as KeyInit>::new_from_slice(b"Jefe").unwrap();
            mac.update(b"what do ya want for nothing?");
            mac.finalize().into_bytes()
        };
        assert_eq!(
            hex(&expected),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            "the crate computes RFC 4231's value"
        );
        // A key shorter than the block is zero-padded by HMAC itself: "Jefe" and "Jefe\0…\0" agree.
        assert_eq!(padded.mac(b'w', &[b"hat do ya want for nothing?"]).as_slice(), expected.as_slice());
        assert_ne!(padded.mac(1, &[b"a"]), padded.mac(2, &[b"a"]), "domains differ");
    }

    #[test]
    fn bad_key_files_are_refused_with_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        write_new(&path, b"not a key\n").unwrap();
        assert!(load(&path).unwrap_err().to_string().contains("64 hex digits"));
        assert!(load(&dir.path().join("missing")).unwrap_err().to_string().contains("--ledger-key"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let open = dir.path().join("open.key");
            std::fs::write(&open, format!("{}\n", "ab".repeat(32))).unwrap();
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(load(&open).unwrap_err().to_string().contains("chmod 600"));
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o600)).unwrap();
            load(&open).unwrap();
        }
    }

    #[test]
    fn the_state_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let key = generate(&dir.path().join("k")).unwrap();
        let state = State { records: 7, head: Some("ab".repeat(32)) };
        write_state(&key, &state).unwrap();
        assert_eq!(read_state(&key).unwrap(), Some(state));
        std::fs::remove_file(key.state_path()).unwrap();
        assert_eq!(read_state(&key).unwrap(), None);
    }
}
