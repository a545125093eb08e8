//! `dpstat cluster`: the scheduler and the executors `--engine` runs on, with every fold a
//! command can hand them.

use anyhow::Result;

use crate::cli::ClusterCommand;
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

/// Runs the process until it is stopped.
pub fn serve(command: &ClusterCommand) -> Result<()> {
    match command {
        ClusterCommand::Scheduler(args) => serve::scheduler(args.bind),
        ClusterCommand::Executor(args) => serve::executor(
            ExecutorSetup {
                scheduler: args.scheduler,
                bind: args.bind,
                flight_port: args.flight_port,
                cores: args.cores,
                stock: args.stock,
            },
            registry(),
        ),
    }
}
