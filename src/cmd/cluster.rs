//! `dpstat cluster`: the credentials, the scheduler and the executors `--engine` runs on, with
//! every fold a command can hand them.

use std::path::Path;

use anyhow::Result;

use crate::cli::{ClusterAccess, ExecutorArgs};
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

fn security(access: &ClusterAccess, role: Role) -> Result<Security> {
    match &access.credentials {
        Some(dir) => Ok(Security::Tls(
            Credentials::load(dir, role).map_err(|e| bad_input(format!("--credentials: {e}")))?,
        )),
        None => Ok(Security::InsecureLoopback),
    }
}

/// Runs a scheduler on `bind` until the process is stopped.
pub fn scheduler(bind: std::net::SocketAddr, access: &ClusterAccess) -> Result<()> {
    serve::scheduler(bind, security(access, Role::Scheduler)?)
}

/// Runs an executor of every fold until the process is stopped.
pub fn executor(args: &ExecutorArgs) -> Result<()> {
    let setup = ExecutorSetup {
        scheduler: args.scheduler,
        bind: args.bind,
        flight_port: args.flight_port,
        cores: args.cores,
        stock: args.stock,
        security: security(&args.access, Role::Executor)?,
    };
    serve::executor(setup, registry())
}
