//! Randomness enters here and only here: ChaCha20 seeded once per run from the operating
//! system's CSPRNG, or, for tests, from `DPSTAT_INSECURE_SEED`, announced on stderr; and the
//! secret bytes of a ledger key ([`secret_bytes`]), always from the operating system; and the key
//! that chooses each person's rows ([`selection_key`]).

use std::io::Write;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::error::Error;

/// The test-only switch to reproducible (and therefore not private) noise.
pub const INSECURE_SEED_VAR: &str = "DPSTAT_INSECURE_SEED";

/// The generator for all noise: ChaCha20 seeded from the operating system (failure to get
/// entropy is an internal error, exit 1, never a fallback), or from `DPSTAT_INSECURE_SEED` with a warning.
pub fn system_rng() -> Result<ChaCha20Rng, Error> {
    match std::env::var_os(INSECURE_SEED_VAR) {
        None => ChaCha20Rng::try_from_os_rng().map_err(|e| {
            Error::internal(format!("reading the operating system's random number generator: {e}"))
        }),
        Some(seed) => {
            let seed: u64 = seed.to_str().and_then(|s| s.trim().parse().ok()).ok_or_else(|| {
                Error::usage(format!("{INSECURE_SEED_VAR} must be an unsigned 64-bit integer"))
            })?;
            let _ = writeln!(
                std::io::stderr(),
                "dpstat: warning: {INSECURE_SEED_VAR} is set: the noise is reproducible and this release is NOT private (testing only)"
            );
            Ok(ChaCha20Rng::seed_from_u64(seed)) // INSECURE: test hook only
        }
    }
}

/// Secret bytes (a ledger key) straight from the operating system's CSPRNG. Never from
/// `DPSTAT_INSECURE_SEED`: a reproducible key would let anyone who knows the seed forge the
/// ledger it protects, and a key outlives the test that made it.
pub fn secret_bytes<const N: usize>() -> Result<[u8; N], Error> {
    use rand::TryRngCore;
    let mut secret = [0u8; N];
    rand::rngs::OsRng.try_fill_bytes(&mut secret).map_err(|e| {
        Error::internal(format!("reading the operating system's random number generator: {e}"))
    })?;
    Ok(secret)
}

/// The key of this run's choice of rows per person (`data::bound`): from the operating system,
/// or, under `DPSTAT_INSECURE_SEED`, derived from the seed (SHA-256 of a label and the seed), so
/// that seeded runs keep the same rows. Never drawn from the noise generator: the rows kept
/// must not depend on, or use up, the noise.
pub fn selection_key() -> Result<[u8; 16], Error> {
    let Some(seed) = std::env::var_os(INSECURE_SEED_VAR) else { return secret_bytes::<16>() };
    let seed: u64 = seed
        .to_str()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| Error::usage(format!("{INSECURE_SEED_VAR} must be an unsigned 64-bit integer")))?;
    use sha2::Digest;
    let digest =
        sha2::Sha256::new().chain_update(b"dpstat selection key").chain_update(seed.to_le_bytes()).finalize();
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest[..16]);
    Ok(key)
}

/// Whether this run's noise comes from `DPSTAT_INSECURE_SEED` (reproducible, not private).
pub fn is_seeded() -> bool {
    std::env::var_os(INSECURE_SEED_VAR).is_some()
}

/// A seeded run must not spend or record a real budget: its releases are not private, and a
/// ledger that holds them would look like the record of private ones.
pub fn refuse_with_ledger(ledger: bool) -> Result<(), Error> {
    if ledger && is_seeded() {
        return Err(Error::usage(format!(
            "{INSECURE_SEED_VAR} is set, which makes the noise reproducible and the release NOT private; \
             it cannot be used with --ledger (or DPSTAT_LEDGER): unset {INSECURE_SEED_VAR} for a real release"
        )));
    }
    Ok(())
}
