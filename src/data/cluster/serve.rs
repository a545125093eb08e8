//! A Ballista scheduler and executor with dpstat's functions (`dpstat cluster scheduler` and
//! `dpstat cluster executor`): Ballista's own scheduler and executor, with codecs that know
//! `dpstat_fold` and `dpstat_probe`, servers this module builds so that they speak mutual TLS
//! with the cluster's credentials ([`super::tls`]), and on an executor the folds it can run and
//! the check that it runs nothing else ([`super::guard`]).
//!
//! Tasks are pulled: each executor asks the scheduler for work over its own TLS channel, so the
//! only ports are the scheduler's gRPC port and each executor's Flight port (shuffle data and
//! results), both TLS servers that require a client certificate of the cluster's CA.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_flight::flight_service_server::FlightServiceServer;
use ballista_core::config::TaskSchedulingPolicy;
use ballista_core::error::BallistaError;
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::protobuf::scheduler_grpc_server::SchedulerGrpcServer;
use ballista_core::utils::{create_grpc_server, GrpcServerConfig};
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_executor::flight_service::BallistaFlightService;
use ballista_executor::shutdown::Shutdown;
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::create_scheduler;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionConfig;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};

use super::function::{LogicalCodec, PhysicalCodec, Registry};
use super::gate::Gate;
use super::guard::{Guarded, Stages};
use super::persons::PersonShuffle;
use super::tls::Security;

/// Ballista's message limit (its servers' default).
const MESSAGE: usize = 16 << 20;

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the runtime")
}

/// Plain gRPC only on loopback: anywhere else every host that reaches the port could use it.
fn allowed(bind: SocketAddr, security: &Security, flag: &str) -> Result<()> {
    if !security.is_tls() && !bind.ip().is_loopback() {
        return Err(crate::error::bad_input(format!(
            "{flag}: {bind} is not a loopback address; without credentials (--insecure-loopback) the cluster listens on loopback only"
        )));
    }
    Ok(())
}

/// Runs a scheduler on `bind` until the process is stopped.
pub fn scheduler(bind: SocketAddr, security: Security) -> Result<()> {
    allowed(bind, &security, "--bind")?;
    log_to_stderr();
    let config = SchedulerConfig {
        bind_host: bind.ip().to_string(),
        external_host: bind.ip().to_string(),
        bind_port: bind.port(),
        scheduling_policy: TaskSchedulingPolicy::PullStaged,
        override_logical_codec: Some(Arc::new(LogicalCodec::default())),
        override_physical_codec: Some(Arc::new(PhysicalCodec::new(None))),
        override_create_grpc_client_endpoint: Some(security.endpoint_override()),
        // Ballista's session, planned with dpstat's rule last: a person-level fold's rows cross
        // the shuffle as rows (`persons`), not as partial states.
        override_session_builder: Some(Arc::new(|config| {
            let state = ballista_core::utils::default_session_builder(config)?;
            Ok(SessionStateBuilder::new_from_existing(state)
                .with_physical_optimizer_rule(Arc::new(PersonShuffle))
                .build())
        })),
        use_tls: security.is_tls(),
        // A lost executor is noticed in seconds, not minutes, so its tasks are run again soon.
        executor_timeout_seconds: 10,
        expire_dead_executor_interval_seconds: 2,
        // With no executor left, a running job fails this soon after (one line at the client),
        // rather than waiting for one to join.
        no_executors_grace_period_seconds: 5,
        ..Default::default()
    };
    runtime()?.block_on(async {
        let cluster = BallistaCluster::new_from_config(&config).await?;
        let scheduler =
            create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, Arc::new(config)).await?;
        let service = SchedulerGrpcServer::new(scheduler)
            .max_decoding_message_size(MESSAGE)
            .max_encoding_message_size(MESSAGE);
        let mut server = create_grpc_server(&GrpcServerConfig::default());
        if let Security::Tls(credentials) = &security {
            server = server.tls_config(credentials.server()).context("the scheduler's TLS")?;
        }
        log::info!(
            "dpstat scheduler {} listening on {bind} ({})",
            super::function::build(),
            if security.is_tls() { "mutual TLS" } else { "INSECURE: plain gRPC on loopback" }
        );
        server.add_service(service).serve(bind).await.with_context(|| format!("the scheduler on {bind}"))
    })
}

/// Where an executor listens and whom it serves.
pub struct ExecutorSetup {
    pub scheduler: SocketAddr,
    pub bind: SocketAddr,
    /// Ballista's Flight port for shuffle data and results, on `bind`'s host.
    pub flight_port: u16,
    pub cores: usize,
    /// Without dpstat's codecs: a stock Ballista executor, for the tests of a cluster that
    /// lacks them.
    pub stock: bool,
    pub security: Security,
}

/// Runs an executor until the process is stopped.
pub fn executor(setup: ExecutorSetup, registry: Registry) -> Result<()> {
    allowed(setup.bind, &setup.security, "--bind")?;
    log_to_stderr();
    let security = setup.security.clone();
    let endpoint = security.endpoint_override();
    let tls = security.is_tls();
    // What the guard accepted, for the gate of the Flight port to serve by.
    let stages = Arc::new(Stages::default());
    let accepted = stages.clone();
    let mut config = ExecutorProcessConfig {
        bind_host: setup.bind.ip().to_string(),
        external_host: Some(setup.bind.ip().to_string()),
        port: setup.flight_port,
        grpc_port: setup.bind.port(),
        scheduler_host: setup.scheduler.ip().to_string(),
        scheduler_port: setup.scheduler.port(),
        vcores: setup.cores.max(1),
        executor_heartbeat_interval_seconds: 2,
        task_scheduling_policy: TaskSchedulingPolicy::PullStaged,
        // One attempt: `join` has reached the scheduler already (Ballista's own retry loop
        // never ends: it measures its timeout with `Instant::now().elapsed()`).
        scheduler_connect_timeout_seconds: 0,
        override_create_grpc_client_endpoint: Some(endpoint.clone()),
        // Every task's session reaches other executors' Flight ports with the same TLS.
        override_config_producer: Some(Arc::new(move || {
            SessionConfig::new_with_ballista()
                .with_ballista_use_tls(tls)
                .with_ballista_override_create_grpc_client_endpoint(endpoint.clone())
        })),
        override_arrow_flight_service: Some(Arc::new(
            move |dir: String, address: SocketAddr, shutdown: Shutdown, grpc: GrpcServerConfig| {
                flight(dir, address, shutdown, grpc, security.clone(), stages.clone())
            },
        )),
        override_execution_engine: Some(Arc::new(Guarded::new(accepted))),
        // The shuffle files of a person-level job are persons' rows: a job's are removed a day
        // after they were last written, and all of them when the executor is stopped (without
        // a cleaner, Ballista removes none: every stopped executor left its jobs' rows behind).
        job_data_clean_up_interval_seconds: 600,
        job_data_ttl_seconds: 24 * 3600,
        ..Default::default()
    };
    if !setup.stock {
        config.override_logical_codec = Some(Arc::new(LogicalCodec::default()));
        config.override_physical_codec = Some(Arc::new(PhysicalCodec::new(Some(Arc::new(registry)))));
    }
    log::info!(
        "dpstat executor {} for the scheduler at {}, Flight on {}:{} ({})",
        super::function::build(),
        setup.scheduler,
        setup.bind.ip(),
        setup.flight_port,
        if tls { "mutual TLS" } else { "INSECURE: plain gRPC on loopback" }
    );
    runtime()?.block_on(async {
        join(setup.scheduler, &config).await?;
        start_executor_process(Arc::new(config)).await.map_err(anyhow::Error::from)
    })
}

/// How long an executor tries to reach its scheduler before it stops.
const JOIN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Connects to the scheduler as Ballista will (the same endpoint override), retrying for
/// [`JOIN_WAIT`] with each failure logged, and stops with one line naming the cause if it
/// never connects (credentials of another cluster, no scheduler, a port of something else).
async fn join(scheduler: SocketAddr, config: &ExecutorProcessConfig) -> Result<()> {
    let started = std::time::Instant::now();
    loop {
        let mut endpoint = tonic::transport::Endpoint::from_shared(format!("http://{scheduler}"))?;
        if let Some(secure) = &config.override_create_grpc_client_endpoint {
            endpoint = secure(endpoint).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let why = match endpoint.connect().await {
            Ok(channel) => {
                // The server checks the client's certificate after the handshake (TLS 1.3):
                // only a call shows that it was accepted.
                let mut client =
                    ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient::new(channel);
                let asked = client
                    .get_job_status(ballista_core::serde::protobuf::GetJobStatusParams::default())
                    .await;
                match asked {
                    Err(status)
                        if status.code() == tonic::Code::Unknown
                            || status.code() == tonic::Code::Unavailable =>
                    {
                        format!("{status:?}")
                    }
                    _ => return Ok(()),
                }
            }
            Err(e) => format!("{e:?}"),
        };
        let said = super::cause(&why).unwrap_or_else(|| super::one_line(&why));
        log::warn!("cannot reach the scheduler at {scheduler}: {said}");
        if started.elapsed() >= JOIN_WAIT {
            return Err(crate::error::bad_input(format!(
                "cannot join the scheduler at {scheduler} in {} s: {said}",
                JOIN_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// The executor's Flight server (Ballista's service behind dpstat's [`Gate`]), over TLS when the
/// cluster has credentials.
fn flight(
    dir: String,
    address: SocketAddr,
    mut shutdown: Shutdown,
    grpc: GrpcServerConfig,
    security: Security,
    stages: Arc<Stages>,
) -> tokio::task::JoinHandle<std::result::Result<(), BallistaError>> {
    tokio::spawn(async move {
        let mut server = create_grpc_server(&grpc);
        let mut executors = None;
        if let Security::Tls(credentials) = &security {
            server = server.tls_config(credentials.server()).map_err(BallistaError::TonicError)?;
            executors = Some(credentials.certificate().to_vec());
        }
        let gate = Gate::new(BallistaFlightService::new(dir), stages, executors);
        let service = FlightServiceServer::new(gate)
            .max_decoding_message_size(MESSAGE)
            .max_encoding_message_size(MESSAGE);
        server
            .add_service(service)
            .serve_with_shutdown(address, shutdown.recv())
            .await
            .map_err(BallistaError::TonicError)
    })
}

/// Ballista's and dpstat's log lines (info and above; other crates' warnings) on standard
/// error, which scripts/cluster-up.sh sends to the process's log file.
fn log_to_stderr() {
    struct Stderr;
    impl log::Log for Stderr {
        fn enabled(&self, meta: &log::Metadata) -> bool {
            let ours = ["ballista", "dpstat"].iter().any(|p| meta.target().starts_with(p));
            meta.level() <= if ours { log::Level::Info } else { log::Level::Warn }
        }
        fn log(&self, record: &log::Record) {
            if self.enabled(record.metadata()) {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0);
                eprintln!("{now:.3} {} {}: {}", record.level(), record.target(), record.args());
            }
        }
        fn flush(&self) {}
    }
    static LOGGER: Stderr = Stderr;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
}
