//! A Ballista scheduler and executor with dpstat's functions (`dpstat cluster scheduler` and
//! `dpstat cluster executor`): Ballista's own processes, started with codecs that know
//! `dpstat_fold` and `dpstat_probe`, and on an executor the folds it can run.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;

use super::function::{LogicalCodec, PhysicalCodec, Registry};

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the runtime")
}

/// Runs a scheduler on `bind` until the process is stopped.
pub fn scheduler(bind: SocketAddr) -> Result<()> {
    let config = SchedulerConfig {
        bind_host: bind.ip().to_string(),
        external_host: bind.ip().to_string(),
        bind_port: bind.port(),
        override_logical_codec: Some(Arc::new(LogicalCodec::default())),
        override_physical_codec: Some(Arc::new(PhysicalCodec::new(None))),
        // A lost executor is noticed in seconds, not minutes, so its tasks are run again soon.
        executor_timeout_seconds: 10,
        expire_dead_executor_interval_seconds: 2,
        ..Default::default()
    };
    runtime()?.block_on(async {
        let cluster = BallistaCluster::new_from_config(&config).await?;
        start_server(cluster, bind, Arc::new(config)).await
    })?;
    Ok(())
}

/// Where an executor listens and whom it serves.
pub struct ExecutorSetup {
    pub scheduler: SocketAddr,
    pub bind: SocketAddr,
    /// Ballista's Flight port for shuffle data (the gRPC port is `bind`'s).
    pub flight_port: u16,
    pub cores: usize,
    /// Without dpstat's codecs: a stock Ballista executor, for the tests of a cluster that
    /// lacks them.
    pub stock: bool,
}

/// Runs an executor until the process is stopped.
pub fn executor(setup: ExecutorSetup, registry: Registry) -> Result<()> {
    let mut config = ExecutorProcessConfig {
        bind_host: setup.bind.ip().to_string(),
        external_host: Some(setup.bind.ip().to_string()),
        port: setup.flight_port,
        grpc_port: setup.bind.port(),
        scheduler_host: setup.scheduler.ip().to_string(),
        scheduler_port: setup.scheduler.port(),
        vcores: setup.cores.max(1),
        executor_heartbeat_interval_seconds: 2,
        ..Default::default()
    };
    if !setup.stock {
        config.override_logical_codec = Some(Arc::new(LogicalCodec::default()));
        config.override_physical_codec = Some(Arc::new(PhysicalCodec::new(Some(Arc::new(registry)))));
    }
    runtime()?.block_on(start_executor_process(Arc::new(config)))?;
    Ok(())
}
