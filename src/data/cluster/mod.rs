//! The cluster executor (`--engine ballista://HOST:PORT`, built with `--features cluster`): a
//! query's fold runs on an Apache DataFusion Ballista cluster whose executors are dpstat's own
//! (`dpstat cluster executor`), over Parquet files they read at the same paths as this process.
//!
//! The plan sent is one aggregate, `dpstat_fold`, over the columns the query reads; its
//! definition is the empty fold ([`function`]), so every executor folds its rows with the same
//! per-row code as a local scan and merges partial states with the fold's own exact `merge`.
//! The merged state comes back here, where the noise, the accountant and the ledger stay: no
//! executor is sent the noise generator or the budget. Exact (un-noised) aggregates cross the
//! network between executors and to this process, so the scheduler, the executors and their
//! network are inside the custodian's trust boundary (DESIGN §7.8).
//!
//! Before the charge, [`Remote::probe`] asks one executor for its build and whether it can open every
//! file; an unreachable scheduler, another build or an unreadable path stops the run there.

pub mod function;
pub mod gate;
pub mod guard;
pub mod persons;
pub mod remote;
pub mod serve;
pub mod tls;

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Array, BinaryArray, StringArray};
use datafusion::common::{Column, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::{col, lit, AggregateUDF, Expr, ScalarUDF};
use datafusion::prelude::{DataFrame, ParquetReadOptions, SessionConfig, SessionContext};

use ballista::prelude::SessionContextExt;
use ballista_core::extension::SessionConfigExt;

use crate::data::bound::Bounded;
use crate::data::parquet::ParquetSet;
use crate::data::row::{BadCell, Fold};
use function::{
    BucketFunction, BucketPlan, Finished, FoldFunction, Folded, LogicalCodec, PhysicalCodec, Plan, Probe,
    ProbeFunction, BAD_CELL,
};
pub use remote::{Access, Remote, DEFAULT_PORT};
use tls::{Credentials, Role, Security};

/// How long the probe waits for the cluster's answer (once connected: a scheduler that accepts
/// the connection but runs no executor).
const PROBE_WAIT: Duration = Duration::from_secs(30);

/// The bytes of rows a task of the cluster buffers for the shuffle before it spills them, and
/// that a task reading them holds fetched and not yet folded.
const SHUFFLE_BUFFER: usize = 8 << 20;

/// How a cluster run failed.
#[derive(Debug)]
pub enum Failure {
    /// A refused cell, named by its dataset column (the row's place is the executor's).
    Cell(BadCell),
    /// Anything else, as one line.
    Engine(String),
}

pub(crate) fn one_line(e: impl std::fmt::Display) -> String {
    let text = e.to_string();
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    crate::error::shown(line, 300)
}

fn failure(e: DataFusionError) -> Failure {
    let text = e.to_string();
    if let Some(at) = text.find(BAD_CELL) {
        let rest = text[at + BAD_CELL.len()..].trim_start();
        let (column, why) = rest.split_once(' ').unwrap_or((rest, ""));
        if let Ok(column) = column.parse() {
            let why = why.lines().next().unwrap_or("").to_string();
            return Failure::Cell(BadCell { column, why });
        }
    }
    Failure::Engine(cause(&text).unwrap_or_else(|| one_line(text)))
}

impl Remote {
    fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Failure::Engine(format!("cannot start the cluster client: {e}")))
    }

    fn security(&self) -> Result<Security, String> {
        match &self.access {
            Access::Credentials(dir) => Credentials::load(dir, Role::Client)
                .map(Security::Tls)
                .map_err(|e| format!("the credentials for {self}: {e}")),
            Access::InsecureLoopback => Ok(Security::InsecureLoopback),
        }
    }

    async fn context(&self, security: &Security) -> Result<SessionContext, DataFusionError> {
        let mut config = SessionConfig::new_with_ballista()
            .with_ballista_logical_extension_codec(Arc::new(LogicalCodec::default()))
            .with_ballista_physical_extension_codec(Arc::new(PhysicalCodec::new(None)))
            .with_ballista_use_tls(security.is_tls())
            .with_ballista_override_create_grpc_client_endpoint(security.endpoint_override());
        // The executors read each column with the type its file declares, as the local reader
        // does (a view type would be read the same, but not every type has a view reading).
        config.options_mut().execution.parquet.schema_force_view_types = false;
        // Ballista's static planner: its adaptive one (the default since 55) lost track of a
        // running stage when an executor died after the first stage had finished, and the job
        // never ended ("Can't find active stage", tests/cluster.rs's lost executor).
        let config = config.set_bool("ballista.planner.adaptive.enabled", false);
        // The rows a task writes to the shuffle are buffered up to this before they spill
        // (Ballista's default is 256 MiB): a person-level fold's rows cross it (`persons`).
        let config =
            config.set_usize("ballista.shuffle.sort_based.memory_limit_per_task_bytes", SHUFFLE_BUFFER);
        // And a task reading them holds at most this much fetched and not yet folded (Ballista's
        // default is 48 MiB, which a partition's rows reached at 16M rows).
        let config = config.set_usize("ballista.shuffle.reader.max_bytes_in_flight", SHUFFLE_BUFFER);
        let state = SessionStateBuilder::new().with_config(config).with_default_features().build();
        SessionContext::remote_with_state(&format!("df://{}:{}", self.host, self.port), state).await
    }

    /// Before the charge: one executor's build must be this one's, and it must open every file.
    pub fn probe(&self, paths: &[String]) -> Result<(), String> {
        let paths = paths.iter().map(|p| absolute(p)).collect::<Result<Vec<_>, _>>()?;
        let probe = Probe { build: function::build(), paths };
        let bytes = function::encode(&probe)?;
        let security = self.security()?;
        let runtime = Remote::runtime().map_err(|f| format!("{f:?}"))?;
        let asked = runtime.block_on(async {
            tokio::time::timeout(PROBE_WAIT, async {
                let ctx = self.context(&security).await?;
                let udaf = AggregateUDF::from(ProbeFunction::new(bytes));
                let frame =
                    ctx.read_empty()?.aggregate(vec![], vec![udaf.call(vec![lit(0u8)]).alias("answer")])?;
                frame.collect().await
            })
            .await
        });
        let batches = match asked {
            Err(_) => {
                return Err(format!("the cluster at {self} did not answer in {} s", PROBE_WAIT.as_secs()))
            }
            Ok(Err(e)) => return Err(unreachable(self, e)),
            Ok(Ok(batches)) => batches,
        };
        let answer = batches
            .iter()
            .find_map(|b| b.column(0).as_any().downcast_ref::<StringArray>().map(|a| a.value(0).to_string()))
            .ok_or_else(|| format!("the cluster at {self} gave no answer"))?;
        let mut lines = answer.lines();
        let theirs = lines.next().unwrap_or("");
        if theirs != function::build() {
            return Err(format!(
                "the cluster at {self} runs dpstat {theirs}, this is {}: start it from this build",
                function::build()
            ));
        }
        match lines.next() {
            Some(unreadable) => Err(format!("an executor of {self} cannot read {unreadable}")),
            None => Ok(()),
        }
    }

    /// Folds every row of `set` (dataset columns `columns`) on the cluster into `fold`; returns
    /// the rows.
    pub fn scan<F: Fold>(&self, set: &ParquetSet, columns: &[usize], fold: &mut F) -> Result<u64, Failure> {
        let plan = shipped(std::any::type_name::<F>(), set, columns, fold)?;
        let batches = self.folded(set, columns, plan, None)?;
        let state = batches
            .iter()
            .find_map(|b| {
                let a = b.column(0).as_any().downcast_ref::<BinaryArray>()?;
                (a.len() == 1 && a.is_valid(0)).then(|| a.value(0).to_vec())
            })
            .ok_or_else(|| Failure::Engine("the cluster sent no state".into()))?;
        let folded: Folded<F> = function::decode(&state).map_err(Failure::Engine)?;
        fold.merge(folded.fold);
        Ok(folded.rows)
    }

    /// Folds every row of `set` on the cluster into `bounded`'s persons, grouped by person
    /// bucket so that each person's rows meet on one executor, chosen there with the run's key;
    /// returns the query's fold of the kept rows, the rows, and the persons who had rows
    /// dropped. The same rows are kept as by [`Bounded::finish_counted`] here.
    pub fn scan_persons<G: Fold>(
        &self,
        set: &ParquetSet,
        columns: &[usize],
        bounded: &Bounded<G>,
    ) -> Result<(G, u64, u64), Failure> {
        let plan = shipped(std::any::type_name::<Bounded<G>>(), set, columns, bounded)?;
        let ids = bounded.plan().ids.clone();
        let buckets =
            BucketPlan { width: set.names().len(), columns: columns.to_vec(), ids, key: bounded.plan().key };
        let buckets = function::encode(&buckets).map_err(Failure::Engine)?;
        let batches = self.folded(set, columns, plan, Some(buckets))?;
        let mut states: Vec<(u32, Vec<u8>)> = Vec::new();
        for batch in &batches {
            let (Some(b), Some(s)) = (
                batch.column(0).as_any().downcast_ref::<arrow_array::UInt32Array>(),
                batch.column(1).as_any().downcast_ref::<BinaryArray>(),
            ) else {
                return Err(Failure::Engine("the cluster sent states of another shape".into()));
            };
            for i in 0..batch.num_rows() {
                states.push((b.value(i), s.value(i).to_vec()));
            }
        }
        states.sort_unstable_by_key(|(bucket, _)| *bucket);
        let (mut whole, _) =
            bounded.clone().finish_own().map_err(|_| Failure::Engine("an empty fold".into()))?;
        let (mut rows, mut truncated) = (0, 0);
        for (_, state) in states {
            let finished: Finished<G> = function::decode(&state).map_err(Failure::Engine)?;
            rows += finished.rows;
            truncated += finished.truncated;
            whole.merge(finished.fold);
        }
        Ok((whole, rows, truncated))
    }

    /// Runs `dpstat_fold` with `plan` over the rows, grouped by `dpstat_bucket` with `buckets`
    /// when given; the result's batches (the bucket, then the state).
    fn folded(
        &self,
        set: &ParquetSet,
        columns: &[usize],
        plan: Vec<u8>,
        buckets: Option<Vec<u8>>,
    ) -> Result<Vec<arrow_array::RecordBatch>, Failure> {
        let security = self.security().map_err(Failure::Engine)?;
        Remote::runtime()?
            .block_on(async {
                let ctx = self.context(&security).await?;
                let frame = table(&ctx, set, columns).await?;
                let args: Vec<Expr> = frame.schema().columns().into_iter().map(Expr::Column).collect();
                let group: Vec<Expr> = buckets
                    .map(|b| ScalarUDF::from(BucketFunction::new(b)).call(args.clone()).alias("bucket"))
                    .into_iter()
                    .collect();
                let udaf = AggregateUDF::from(FoldFunction::new(plan, None));
                frame.aggregate(group, vec![udaf.call(args).alias("state")])?.collect().await
            })
            .map_err(failure)
    }
}

/// The plan of `fold` (its type's `tag`) over `columns` of `set`, as `dpstat_fold`'s bytes.
fn shipped<T: serde::Serialize>(
    tag: &str,
    set: &ParquetSet,
    columns: &[usize],
    fold: &T,
) -> Result<Vec<u8>, Failure> {
    let plan = Plan {
        build: function::build(),
        tag: tag.to_string(),
        width: set.names().len(),
        columns: columns.to_vec(),
        fold: function::encode(fold).map_err(Failure::Engine)?,
    };
    function::encode(&plan).map_err(Failure::Engine)
}

fn unreachable(remote: &Remote, e: DataFusionError) -> String {
    let text = e.to_string();
    match cause(&text) {
        Some(why) => format!("cannot use the scheduler at {remote}: {why}"),
        None => format!("cannot run on the cluster at {remote}: {}", one_line(text)),
    }
}

/// What a failed connection's error (tonic's and rustls's debug forms, nested) means, in a
/// few words; None for an error of the query itself.
pub(crate) fn cause(text: &str) -> Option<String> {
    let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    let why = if has(&["Connection refused"]) {
        "connection refused".to_string()
    } else if has(&["InvalidContentType", "corrupt message", "InvalidMessage"]) {
        "it does not speak TLS (not a dpstat cluster's port, or one started with --insecure-loopback)".into()
    } else if has(&["UnknownIssuer", "BadSignature", "invalid peer certificate", "NotValidForName"]) {
        "its certificate is not of this cluster's CA (are these the credentials of another cluster?)".into()
    } else if has(&["UnknownCA", "CertificateRequired", "BadCertificate", "DecryptError", "AlertReceived"]) {
        "it refused this client's certificate (are these the credentials of another cluster?)".into()
    } else if has(&["Unimplemented", "unimplemented"]) {
        "it is not a dpstat scheduler (an executor's Flight port?)".into()
    } else if has(&[
        "HandshakeTimeout",
        "handshake timed out",
        "Elapsed",
        "deadline has elapsed",
        "timed out",
    ]) {
        format!("no answer in {} s (not a dpstat cluster's port?)", tls::CONNECT_WAIT.as_secs())
    } else if has(&[
        "ConnectError",
        "transport error",
        "h2 protocol error",
        "connection closed",
        "Connection reset",
        "Broken pipe",
        "BrokenPipe",
    ]) {
        // tonic's debug form: the operating system's words, if any, are in `message: "…"`.
        let os = text.split("message: \"").nth(1).and_then(|m| m.split('"').next());
        match os {
            Some(words) => words.to_lowercase(),
            None => "the connection was closed (not a dpstat scheduler, or one that requires TLS?)".into(),
        }
    } else {
        return None;
    };
    Some(why)
}

/// `path` as this process means it, for the executors: relative to this process's working
/// directory (an executor's is its own), and the same string for the probe and the scan.
fn absolute(path: &str) -> Result<String, String> {
    let resolved = std::path::absolute(path).map_err(|e| format!("cannot resolve {path}: {e}"))?;
    resolved.into_os_string().into_string().map_err(|p| format!("{} is not UTF-8", p.to_string_lossy()))
}

/// The rows as the fold's arguments: a constant first (its length counts the rows), then each
/// of `columns` (a file's own, or a partition value as a constant).
async fn table(
    ctx: &SessionContext,
    set: &ParquetSet,
    columns: &[usize],
) -> Result<DataFrame, DataFusionError> {
    let names = set.names();
    let mut frames = Vec::new();
    for (paths, values) in set.by_partition() {
        let paths = paths.iter().map(|p| absolute(&p.to_string_lossy())).collect::<Result<Vec<_>, _>>();
        let paths = paths.map_err(DataFusionError::Plan)?;
        let frame = ctx.read_parquet(paths, ParquetReadOptions::default()).await?;
        let mut exprs = vec![lit(0u8).alias("dpstat_rows")];
        for (k, &c) in columns.iter().enumerate() {
            let alias = format!("dpstat_{k}");
            exprs.push(match c.checked_sub(set.file_columns()) {
                None => col(Column::from_name(names[c].clone())).alias(alias),
                Some(j) => lit(ScalarValue::Binary(Some(values[j].clone()))).alias(alias),
            });
        }
        frames.push(frame.select(exprs)?);
    }
    let mut frames = frames.into_iter();
    let first = frames.next().ok_or_else(|| DataFusionError::Plan("a dataset of no files".into()))?;
    frames.try_fold(first, |all, next| all.union(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executor_error_about_a_cell_names_its_column() {
        let error = DataFusionError::Execution(format!("dpstat: {} 3 not a number", BAD_CELL));
        match failure(error) {
            Failure::Cell(bad) => assert_eq!((bad.column, bad.why.as_str()), (3, "not a number")),
            other => panic!("{other:?}"),
        }
        let refused = DataFusionError::Execution(
            r#"tonic::transport::Error(Transport, ConnectError(ConnectError("tcp connect error", 127.0.0.1:1, Os { code: 111, kind: ConnectionRefused, message: "Connection refused" })))"#.into(),
        );
        let remote = Remote { host: "127.0.0.1".into(), port: 1, access: Access::InsecureLoopback };
        assert_eq!(
            unreachable(&remote, refused),
            "cannot use the scheduler at ballista://127.0.0.1:1: connection refused"
        );
        match failure(DataFusionError::Execution("line one\nline two".into())) {
            Failure::Engine(why) => assert!(why.contains("line one") && !why.contains("two"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
