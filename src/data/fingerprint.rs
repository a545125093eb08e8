//! The dataset identity the ledger keys budgets by: the SHA-256 of the CSV's bytes as dpstat
//! reads them (after gzip decompression), written `sha256:<hex>`.

use std::io::Read;

use sha2::{Digest, Sha256};

/// The dataset identity of some bytes: `sha256:<hex>`.
pub fn fingerprint(digest: &[u8]) -> String {
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Hashes a whole reader (for `dpstat budget FILE`).
pub fn fingerprint_of(mut reader: impl Read) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        match reader.read(&mut buffer)? {
            0 => return Ok(fingerprint(&hasher.finalize())),
            n => hasher.update(&buffer[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_sha256() {
        assert_eq!(
            fingerprint_of(&b"abc"[..]).unwrap(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
