//! `dpstat cluster`: the scheduler and the executors `--engine` runs on, with every fold a
//! command can hand them.

use anyhow::Result;

use crate::cmd::run::WorkloadFold;
use crate::data::cluster::function::Registry;
use crate::data::cluster::serve::{self, ExecutorSetup};
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

/// Runs a scheduler on `bind` until the process is stopped.
pub fn scheduler(bind: std::net::SocketAddr) -> Result<()> {
    serve::scheduler(bind)
}

/// Runs an executor of every fold until the process is stopped.
pub fn executor(setup: ExecutorSetup) -> Result<()> {
    serve::executor(setup, registry())
}
