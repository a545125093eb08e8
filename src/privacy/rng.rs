//! Randomness enters here and only here: ChaCha20 seeded once per run from the operating
//! system's CSPRNG, or, for tests, from `DPSTAT_INSECURE_SEED`, announced on stderr (and
//! generators seeded from it that a draw restarts, [`Replay`]); and the
//! secret bytes of a ledger key ([`secret_bytes`]), always from the operating system; and the key
//! that chooses each person's rows ([`selection_key`]).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::error::Error;

/// The test-only switch to reproducible (and therefore not private) noise.
pub const INSECURE_SEED_VAR: &str = "DPSTAT_INSECURE_SEED";

/// The generator for all noise: ChaCha20 seeded from the operating system (failure to get
/// entropy is an internal error, exit 1, never a fallback), or from `DPSTAT_INSECURE_SEED` with a warning.
pub fn system_rng() -> Result<ChaCha20Rng, Error> {
    match insecure_seed()? {
        None => ChaCha20Rng::try_from_os_rng().map_err(|e| {
            Error::internal(format!("reading the operating system's random number generator: {e}"))
        }),
        Some(seed) => {
            let _ = writeln!(
                std::io::stderr(),
                "dpstat: warning: {INSECURE_SEED_VAR} is set: the noise is reproducible and this release is NOT private (testing only)"
            );
            Ok(ChaCha20Rng::seed_from_u64(seed)) // INSECURE: test hook only
        }
    }
}

/// A generator that a draw can start again from the same point: its seed is drawn from the
/// noise generator `rng`, so it is as unpredictable, and each [`Replay::start`] gives the same
/// numbers. For a draw that must see the same random numbers on every walk over data it cannot
/// keep (`privacy::permute_and_flip`).
pub struct Replay([u8; 32]);

impl Replay {
    pub fn new(rng: &mut dyn rand::RngCore) -> Replay {
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        Replay(seed)
    }

    pub fn start(&self) -> ChaCha20Rng {
        ChaCha20Rng::from_seed(self.0)
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
    let Some(seed) = insecure_seed()? else { return secret_bytes::<16>() };
    use sha2::Digest;
    let digest =
        sha2::Sha256::new().chain_update(b"dpstat selection key").chain_update(seed.to_le_bytes()).finalize();
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest[..16]);
    Ok(key)
}

/// The seed of the run under way when `DPSTAT_INSECURE_SEED` names a range (see
/// [`insecure_seeds`]), set by the binary before each run.
static RUN_SEED: AtomicU64 = AtomicU64::new(0);

/// `DPSTAT_INSECURE_SEED`'s seed for this run: the number it holds, or, when it names a range
/// `A..B`, the seed [`set_run_seed`] set for the run under way.
fn insecure_seed() -> Result<Option<u64>, Error> {
    Ok(seed_setting()?.map(|seeds| match seeds {
        Seeds::One(seed) => seed,
        Seeds::Range(_) => RUN_SEED.load(Ordering::SeqCst),
    }))
}

/// What `DPSTAT_INSECURE_SEED` holds, if it is set.
enum Seeds {
    One(u64),
    Range(std::ops::Range<u64>),
}

/// `DPSTAT_INSECURE_SEED` read and checked: the one place that parses it.
fn seed_setting() -> Result<Option<Seeds>, Error> {
    let Some(value) = std::env::var_os(INSECURE_SEED_VAR) else { return Ok(None) };
    let value = value.to_str().map(str::trim).unwrap_or("");
    let seeds = match value.split_once("..") {
        None => value.parse().ok().map(Seeds::One),
        Some((a, b)) => match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(a), Ok(b)) if b > a => Some(Seeds::Range(a..b)),
            _ => None,
        },
    };
    seeds.map(Some).ok_or_else(|| {
        Error::usage(format!(
            "{INSECURE_SEED_VAR} must be an unsigned 64-bit integer, or a range A..B of them (B > A)"
        ))
    })
}

/// The seeds of `DPSTAT_INSECURE_SEED=A..B` (B excluded), a test hook like the single seed: one
/// process makes the same release once per seed, as many runs of it would, so that the tests
/// that draw thousands of seeded releases to check a distribution do not pay a process (and its
/// tables: the zCDP orders, ln 2) per draw. None for a single seed or none.
pub fn insecure_seeds() -> Result<Option<std::ops::Range<u64>>, Error> {
    Ok(match seed_setting()? {
        Some(Seeds::Range(seeds)) => Some(seeds),
        _ => None,
    })
}

/// The seed of the next run under `DPSTAT_INSECURE_SEED=A..B`.
pub fn set_run_seed(seed: u64) {
    RUN_SEED.store(seed, Ordering::SeqCst);
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
