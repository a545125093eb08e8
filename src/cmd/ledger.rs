//! `dpstat ledger init --key FILE`: the custodian makes the key of a keyed ledger
//! (docs/DESIGN.md §5.3). It touches no ledger and reads no data: the first charge with
//! `--ledger-key FILE` on a new ledger file makes that ledger keyed.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use crate::privacy::ledger_key;

pub fn init(path: &Path, out: &mut dyn Write) -> Result<()> {
    let key = ledger_key::generate(path)?;
    writeln!(
        out,
        "key        {} (key id {}, readable by its owner only)\nstate      {}\nuse        --ledger-key {} (or DPSTAT_LEDGER_KEY_FILE) on a new ledger; keep both files where analysts can neither read nor write",
        path.display(),
        &key.id_hex()[..16],
        key.state_path().display(),
        path.display()
    )?;
    out.flush()?;
    Ok(())
}
