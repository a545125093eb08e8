//! `dpstat cluster`: the credentials, the scheduler and the executors `--engine` runs on, with
//! every fold a command can hand them.

use std::path::Path;

use anyhow::Result;

use crate::cmd::run::WorkloadFold;
use crate::data::cluster::function::Registry;
use crate::data::cluster::serve::{self, ExecutorSetup};
use crate::data::cluster::tls::{self, Credentials, Role, Security};
use crate::error::bad_input;
use crate::query::AnyStatistic;

/// Every fold type `engine::scan` and `engine::scan_bounded` are called with: each
/// statistic's, its keys found, and a workload's, with and without persons.
pub fn registry() -> Registry {
    let mut registry = Registry::default();
    AnyStatistic::cluster_folds(&mut registry);
    registry.add::<WorkloadFold>();
    registry.add_persons::<WorkloadFold>();
    registry
}

/// Makes a new cluster's credentials in `dir`; names the files on stderr.
pub fn init(dir: &Path) -> Result<()> {
    let written = tls::init(dir).map_err(bad_input)?;
    eprintln!(
        "dpstat: note: wrote the credentials of a new cluster to {} ({} files; keep ca.key offline, give each host only ca.crt and its role's .crt and .key)",
        dir.display(),
        written.len()
    );
    Ok(())
}

/// `--credentials DIR` (mutual TLS), or, without it, the insecure loopback clap required
/// `--insecure-loopback` for.
fn security(credentials: Option<&Path>, role: Role) -> Result<Security> {
    match credentials {
        Some(dir) => Ok(Security::Tls(
            Credentials::load(dir, role).map_err(|e| bad_input(format!("--credentials: {e}")))?,
        )),
        None => Ok(Security::InsecureLoopback),
    }
}

/// Runs a scheduler on `bind` until the process is stopped.
pub fn scheduler(bind: std::net::SocketAddr, credentials: Option<&Path>) -> Result<()> {
    serve::scheduler(bind, security(credentials, Role::Scheduler)?)
}

/// An executor's flags (`cli::ExecutorArgs`), as plain values.
pub struct ExecutorFlags<'a> {
    pub scheduler: std::net::SocketAddr,
    pub bind: std::net::SocketAddr,
    pub flight_port: u16,
    pub cores: usize,
    pub stock: bool,
    pub credentials: Option<&'a Path>,
}

/// Runs an executor of every fold until the process is stopped.
pub fn executor(flags: ExecutorFlags) -> Result<()> {
    let setup = ExecutorSetup {
        scheduler: flags.scheduler,
        bind: flags.bind,
        flight_port: flags.flight_port,
        cores: flags.cores,
        stock: flags.stock,
        security: security(flags.credentials, Role::Executor)?,
    };
    serve::executor(setup, registry())
}
