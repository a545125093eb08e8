//! The cluster engine (`--features cluster`): releases on a Ballista cluster of dpstat's own
//! scheduler and executors, started on loopback by scripts/cluster-up.sh, are the local scan's
//! byte for byte under the same seed; whatever the cluster cannot do is refused before the
//! charge; a lost executor never changes a release. (Every statistic and variant is compared in
//! tests/parquet.rs, whose layouts include the cluster in this build.)
#![cfg(feature = "cluster")]

use crate::common;
use crate::common::cluster;
use crate::common::tables;

use std::path::{Path, PathBuf};
use std::process::Output;

use cluster::Cluster;
use common::*;
use tables::{Table, Values};

fn run(cmd: &mut assert_cmd::Command) -> Output {
    cmd.output().expect("dpstat runs")
}

fn same(local: &Output, remote: &Output, what: &str) {
    assert!(local.status.success(), "{what} locally: {}", String::from_utf8_lossy(&local.stderr));
    assert!(remote.status.success(), "{what} on the cluster: {}", String::from_utf8_lossy(&remote.stderr));
    assert_eq!(
        String::from_utf8_lossy(&local.stdout),
        String::from_utf8_lossy(&remote.stdout),
        "{what}: the cluster's release differs"
    );
}

#[test]
fn fixtures_give_the_local_release_on_two_executors() {
    let cluster = Cluster::start("fixtures", 50410, 2, "");
    let people = fixture("people.parquet");
    let regions = fixture("people_by_region");
    let cases: Vec<(&str, Vec<&str>, &Path)> = vec![
        ("count", vec!["count", "--eps", "1"], &people),
        // Every digit (text is rounded by default): the same release byte for byte.
        (
            "mean",
            vec!["mean", "-c", "income", "-l", "0", "-u", "200000", "-e", "1", "--full-precision"],
            &people,
        ),
        (
            "histogram by region",
            vec![
                "histogram",
                "-c",
                "age",
                "--bins",
                "4",
                "-l",
                "0",
                "-u",
                "100",
                "-e",
                "1",
                "--by",
                "region",
                "--discover",
                "--delta",
                "1e-6",
            ],
            &regions,
        ),
        (
            "quantile where",
            vec![
                "quantile",
                "-c",
                "income",
                "-q",
                "0.5",
                "-l",
                "0",
                "-u",
                "2e5",
                "-e",
                "1",
                "-w",
                "region=north",
            ],
            &regions,
        ),
        ("run", vec!["run", "fixtures/compose_two_columns.toml", "--full-precision"], &people),
    ];
    for (what, args, file) in cases {
        let local = run(dpstat().args(&args).arg(file));
        let remote = run(dpstat().args(&args).args(["--engine", &cluster.url]).arg(file));
        same(&local, &remote, what);
    }
}

/// Persons' rows past what an executor holds in memory (a small `DPSTAT_ID_MEMORY`, which the
/// plan carries to the executors) spill there, in the folds of each bucket that read them from
/// the shuffle: the release is still the local one (rows were once lost where a fold's state
/// past that memory was merged).
#[test]
fn persons_past_the_executors_memory_keep_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let rows: u64 = 30_000;
    let table = Table {
        columns: vec![
            ("id".into(), Values::Text((0..rows).map(|i| Some(format!("p{}", (i * 7919) % 3001))).collect())),
            ("x".into(), Values::Float((0..rows).map(|i| Some(((i * 104_729) % 1000) as f64)).collect())),
            ("k".into(), Values::Text((0..rows).map(|i| Some(format!("k{}", (i * 31) % 5))).collect())),
        ],
    };
    let file = dir.path().join("persons.parquet");
    table.write_parquet(&file, 4_000);
    let cluster = Cluster::start("persons", 50610, 2, "");
    let person = ["--privacy-id", "id", "--max-rows-per-id", "4"];
    // A query whose workload bounds each person by group (max_groups_per_id, all of their
    // rows in two groups): the bounding groups by k on the executors as it does here.
    let by_group = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1, privacy_unit_column = id, \
                    max_groups_contributed = 2) k, SUM(x, contribution_bounds_per_group => (0, 3000)) s \
                    FROM t WHERE k IN ('k0', 'k1', 'k2') GROUP BY k";
    let cases: [(&str, Vec<&str>); 3] =
        [
            ("count", [&["count", "--eps", "1"][..], &person].concat()),
            (
                "mean by k",
                [
                    &[
                        "mean", "-c", "x", "-l", "0", "-u", "1000", "-e", "1", "--by", "k", "--keys",
                        "k0,k1,k2",
                    ][..],
                    &person,
                ]
                .concat(),
            ),
            ("sql by k, two groups a person", vec!["sql", by_group]),
        ];
    for (what, args) in cases {
        let local = run(dpstat().env("DPSTAT_ID_MEMORY", "2048").args(&args).arg(&file));
        let remote = run(dpstat()
            .env("DPSTAT_ID_MEMORY", "2048")
            .args(&args)
            .args(["--engine", &cluster.url])
            .arg(&file));
        same(&local, &remote, what);
    }
}

/// Runs a release under a fresh ledger and expects exit 2 with `needle` on its one line, and
/// nothing charged.
fn refused_uncharged(args: &[String], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let out = run(unseeded().args(args).arg("--ledger").arg(&ledger).args(["--budget", "2"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} printed {}", String::from_utf8_lossy(&out.stdout));
    assert!(common::the_error(&stderr).contains(needle), "{args:?}: {stderr}");
    let budget = run(unseeded().args(["budget", "--ledger"]).arg(&ledger).args(["--format", "json"]));
    let text = String::from_utf8_lossy(&budget.stdout);
    assert!(!text.contains("\"count\""), "{args:?} charged the ledger: {text}");
}

#[test]
fn what_the_cluster_cannot_run_is_refused_before_the_charge() {
    let cluster = Cluster::start("refusals", 50430, 1, "");
    let people = fixture("people.parquet");
    let people = people.to_str().unwrap();
    let url = cluster.url.clone();
    let count = |more: &[&'static str]| -> Vec<String> {
        ["count", "--eps", "1"]
            .iter()
            .chain(more)
            .map(|s| s.to_string())
            .chain(["--engine".into(), url.clone()])
            .collect()
    };
    let with = |args: Vec<String>, file: &str| -> Vec<String> {
        args.into_iter().chain([file.to_string()]).collect()
    };
    let unreachable = ["count", "--eps", "1", "--engine", "ballista://127.0.0.1:1", people];
    refused_uncharged(&unreachable.map(String::from), "--engine");
    refused_uncharged(&with(count(&[]), fixture("people.csv").to_str().unwrap()), "CSV");
    refused_uncharged(&with(count(&["--privacy-id", "id", "--max-rows-per-id", "auto"]), people), "auto");
    // The file is there for this process, not for the executor: /proc/self/cwd is each
    // process's own directory.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("people.parquet"), dir.path().join("mine.parquet")).unwrap();
    let mut cmd = unseeded();
    cmd.current_dir(dir.path());
    let ledger = dir.path().join("ledger.jsonl");
    let out = run(cmd
        .args(count(&[]))
        .arg("/proc/self/cwd/mine.parquet")
        .arg("--ledger")
        .arg(&ledger)
        .args(["--budget", "2"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot read") && stderr.contains("mine.parquet"), "{stderr}");
}

#[test]
fn an_executor_without_dpstat_functions_is_refused_before_the_charge() {
    let cluster = Cluster::start("stock", 50450, 1, "--stock");
    let people = fixture("people.parquet");
    let args = ["count", "--eps", "1", "--engine", &cluster.url, people.to_str().unwrap()];
    refused_uncharged(&args.map(String::from), "--engine");
}

/// A Parquet file of enough rows that a query is still running when an executor dies.
fn big_file(dir: &Path) -> std::path::PathBuf {
    let rows: u64 = 400_000;
    let table = Table {
        columns: vec![
            (
                "x".into(),
                Values::Float((0..rows).map(|i| Some(((i * 7919) % 100_003) as f64 / 3.0)).collect()),
            ),
            ("k".into(), Values::Text((0..rows).map(|i| Some(format!("k{}", i % 7))).collect())),
        ],
    };
    let file = dir.join("big.parquet");
    table.write_parquet(&file, 20_000);
    file
}

const SLOW: [&str; 17] = [
    "quantile",
    "-c",
    "x",
    "-q",
    "0.5",
    "-l",
    "0",
    "-u",
    "40000",
    "-e",
    "1",
    "--resolution",
    "200",
    "--by",
    "k",
    "--keys",
    "k0,k1,k2,k3",
];

/// Starts the slow query on `cluster`, kills executor `which` once it runs, and returns the
/// run's output.
fn killed_mid_run(cluster: &Cluster, file: &Path, which: usize) -> Output {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_dpstat"))
        .env("DPSTAT_INSECURE_SEED", "1")
        .args(SLOW)
        .args(["--engine", &cluster.url])
        .arg(file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    // Once the executor has taken a task of the query (its second task: the probe's one task
    // may be its first), while the others wait: a stage's task takes tens of milliseconds and
    // the query's first stage has 16.
    let process = format!("executor-{which}");
    let tasks = |log: String| log.matches("Received task").count();
    let before = tasks(cluster.log(&process));
    let waited = std::time::Instant::now();
    while tasks(cluster.log(&process)) < before + 2 {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before the executor took a task");
        assert!(waited.elapsed() < std::time::Duration::from_secs(60), "the executor took no task in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let started = std::time::Instant::now();
    cluster.kill_executor(which);
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "the run ended {:?} after the kill: {:?} {}",
        started.elapsed(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_lost_executor_never_changes_a_release() {
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path());
    let local = run(dpstat().args(SLOW).arg(&file));
    assert!(local.status.success(), "{}", String::from_utf8_lossy(&local.stderr));
    let cluster = Cluster::start("lost", 50470, 2, "");
    let out = killed_mid_run(&cluster, &file, 2);
    // The lost executor's tasks run again on the other: the release is the local one.
    same(&local, &out, "after an executor was lost");
    let log = cluster.log("scheduler");
    assert!(
        log.contains("lost") || log.contains("dead"),
        "the scheduler's log says nothing of the loss: {log}"
    );
}

#[test]
fn a_run_with_no_executor_left_fails_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path());
    let cluster = Cluster::start("none-left", 50590, 1, "");
    let out = killed_mid_run(&cluster, &file, 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "a failed run printed: {}", String::from_utf8_lossy(&out.stdout));
    let error = common::the_error(&stderr);
    assert!(error.contains("cluster") && error.contains("executor"), "{error}");
}

/// What a stock Ballista client (Ballista's and DataFusion's code, no dpstat code) gets from a
/// cluster at `url`: the rows of `sql` over `file` as table `t`, or the error. With `tls`, it
/// shows that folder's client certificate and trusts its CA, as any TLS client of the cluster
/// would have to (Ballista names the scheduler `http://…`; the endpoint is moved to `https`).
fn stock_client(
    scheduler: &str,
    tls: Option<&Path>,
    codecs: bool,
    sql: &str,
    file: &Path,
) -> Result<usize, String> {
    use ballista::prelude::SessionContextExt;
    use ballista_core::extension::SessionConfigExt;
    use datafusion::execution::SessionStateBuilder;
    use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
    use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

    let mut config = SessionConfig::new_with_ballista();
    if let Some(dir) = tls {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let client = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(read("ca.crt")))
            .identity(Identity::from_pem(read("client.crt"), read("client.key")))
            .domain_name("dpstat-cluster");
        config = config.with_ballista_use_tls(true).with_ballista_override_create_grpc_client_endpoint(
            std::sync::Arc::new(move |e: Endpoint| {
                let https = e.uri().to_string().replacen("http://", "https://", 1);
                Ok(Endpoint::from_shared(https)?
                    .connect_timeout(std::time::Duration::from_secs(5))
                    .tls_config(client.clone())?)
            }),
        );
    }
    if codecs {
        use dpstat::data::cluster::function::{LogicalCodec, PhysicalCodec};
        config = config
            .with_ballista_logical_extension_codec(std::sync::Arc::new(LogicalCodec::default()))
            .with_ballista_physical_extension_codec(std::sync::Arc::new(PhysicalCodec::new(None)));
    }
    let state = SessionStateBuilder::new().with_config(config).with_default_features().build();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let asked = async {
            let ctx = SessionContext::remote_with_state(scheduler, state).await?;
            ctx.register_parquet("t", file.to_str().unwrap(), ParquetReadOptions::default()).await?;
            let batches = ctx.sql(sql).await?.collect().await?;
            Ok::<_, datafusion::error::DataFusionError>(batches.iter().map(|b| b.num_rows()).sum())
        };
        match tokio::time::timeout(std::time::Duration::from_secs(60), asked).await {
            Err(_) => Err("no answer in 60 s".to_string()),
            Ok(answer) => answer.map_err(|e| e.to_string()),
        }
    })
}

#[test]
fn a_client_without_the_cluster_credentials_gets_nothing() {
    let cluster = Cluster::start("strangers", 50490, 1, "");
    let people = fixture("people.parquet");
    let scheduler = format!("df://127.0.0.1:{}", cluster.port);
    // The cluster works for its own client (so the refusals below are the credentials').
    let ours = run(dpstat().args(["count", "--eps", "1", "--engine", &cluster.url]).arg(&people));
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    // A plain (unencrypted, unauthenticated) Ballista client.
    let plain = stock_client(&scheduler, None, false, "SELECT * FROM t", &people);
    eprintln!("a plain client: {plain:?}");
    assert!(plain.is_err(), "a plain client read {plain:?} rows");
    // A TLS client whose certificate (and trusted CA) is another cluster's.
    let other = tempfile::tempdir().unwrap();
    stdout_of(dpstat().args(["cluster", "init"]).arg(other.path()));
    let stranger = stock_client(&scheduler, Some(other.path()), false, "SELECT * FROM t", &people);
    eprintln!("another CA's client: {stranger:?}");
    assert!(stranger.is_err(), "another CA's client read {stranger:?} rows");
    // dpstat itself, with another cluster's credentials or none.
    for url in [
        format!("ballista://127.0.0.1:{}?credentials={}", cluster.port, other.path().display()),
        format!("ballista://127.0.0.1:{}?insecure", cluster.port),
    ] {
        refused_uncharged(
            &["count", "--eps", "1", "--engine", &url, people.to_str().unwrap()].map(String::from),
            "--engine",
        );
    }
    // An executor with another cluster's credentials never serves this one: it stops.
    let started = std::time::Instant::now();
    let rogue = std::process::Command::new(env!("CARGO_BIN_EXE_dpstat"))
        .args(["cluster", "executor", "--scheduler", &format!("127.0.0.1:{}", cluster.port)])
        .args(["--bind", "127.0.0.1:50498", "--flight-port", "50499", "--credentials"])
        .arg(other.path())
        .output()
        .expect("dpstat runs");
    let said = String::from_utf8_lossy(&rogue.stderr);
    assert!(!rogue.status.success(), "an executor of another CA ran: {said}");
    assert!(said.contains("scheduler"), "{said}");
    eprintln!("the rogue executor stopped after {:?}", started.elapsed());
}

#[test]
fn a_holder_of_the_credentials_cannot_have_rows_returned() {
    let cluster = Cluster::start("select", 50530, 1, "");
    let people = fixture("people.parquet");
    let scheduler = format!("df://127.0.0.1:{}", cluster.port);
    let creds = cluster.credentials();
    for (sql, codecs) in [
        ("SELECT * FROM t", false),
        ("SELECT * FROM t", true),
        ("SELECT region, count(*) FROM t GROUP BY region", true),
        ("SELECT sum(income) FROM t", true),
    ] {
        let got = stock_client(&scheduler, Some(&creds), codecs, sql, &people);
        assert!(got.is_err(), "{sql}: {got:?} rows returned");
    }
    let log = cluster.log("executor-1");
    assert!(log.contains("refused"), "the executor's log does not record the refusal: {log}");
    // The cluster still releases dpstat's folds.
    let local = run(dpstat().args(["mean", "-c", "income", "-l", "0", "-u", "2e5", "-e", "1"]).arg(&people));
    let remote = run(dpstat()
        .args(["mean", "-c", "income", "-l", "0", "-u", "2e5", "-e", "1", "--engine", &cluster.url])
        .arg(&people));
    same(&local, &remote, "mean after the refusals");
}

/// The rows an executor's Flight port (on loopback) serves to a peer showing `role`'s
/// certificate from `dir` for one shuffle file, or the error; as Ballista's own client fetches.
fn fetched(
    port: u16,
    dir: &Path,
    role: &str,
    job: &str,
    stage: usize,
    partition: usize,
    file: (Option<u64>, bool),
) -> Result<usize, String> {
    use ballista_core::client::BallistaClient;
    use ballista_core::extension::BallistaConfigGrpcEndpoint;
    use ballista_core::serde::scheduler::{PartitionId, ShuffleLayout};
    use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read("ca.crt")))
        .identity(Identity::from_pem(read(&format!("{role}.crt")), read(&format!("{role}.key"))))
        .domain_name("dpstat-cluster");
    let endpoint = BallistaConfigGrpcEndpoint::new(std::sync::Arc::new(move |e: Endpoint| {
        Ok(e.tls_config(tls.clone())?)
    }));
    let layout = if file.1 { ShuffleLayout::Sort } else { ShuffleLayout::Passthrough };
    let id = PartitionId { job_id: job.into(), stage_id: stage, partition_id: partition };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut client = BallistaClient::try_new(
            "127.0.0.1",
            port,
            16 << 20,
            true,
            Some(std::sync::Arc::new(endpoint)),
            1,
            0,
            0,
            0,
        )
        .await
        .map_err(|e| e.to_string())?;
        let stream =
            client.fetch_partition("e", &id, file.0, layout, true).await.map_err(|e| e.to_string())?;
        let batches = datafusion::physical_plan::common::collect(stream).await.map_err(|e| e.to_string())?;
        Ok(batches.iter().map(|b| b.num_rows()).sum())
    })
}

/// Runs a person-level mean on the cluster's one executor, whose first stage hands the persons'
/// rows to its second; returns that executor's work directory (named in its log).
fn person_level_work(cluster: &Cluster) -> PathBuf {
    let people = fixture("people.parquet");
    let mean = ["mean", "-c", "income", "-l", "0", "-u", "2e5", "-e", "1", "--privacy-id", "region"];
    let out = run(dpstat().args(mean).args(["--engine", &cluster.url]).arg(&people));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = cluster.log("executor-1");
    let work =
        log.lines().find_map(|l| l.split("Executor working directory: ").nth(1)).expect("the work directory");
    PathBuf::from(work.trim())
}

/// The folders in `dir` (none when it is gone).
fn listed(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries.map(|e| e.path()).filter(|p| p.is_dir()).collect()
}

#[test]
fn a_client_cannot_fetch_what_one_stage_hands_the_next() {
    let cluster = Cluster::start("gate", 50570, 1, "");
    let work = person_level_work(&cluster);
    let jobs = listed(&work);
    assert!(!jobs.is_empty(), "no job in {}", work.display());
    let creds = cluster.credentials();
    let flight = cluster.port + 3;
    let (mut refused, mut served_to_client) = (0, 0);
    for job in jobs {
        let name = job.file_name().unwrap().to_str().unwrap().to_string();
        let number = |p: &Path| p.file_name().unwrap().to_str().unwrap().parse::<usize>().unwrap();
        let Some(last) = listed(&job).iter().map(|s| number(s)).max() else { continue };
        let fetch = |role: &str, stage: usize, partition: usize, file: (Option<u64>, bool)| {
            fetched(flight, &creds, role, &name, stage, partition, file)
        };
        // The last stage's output, the fold's results, is what the client fetches. Ballista's two
        // layouts: a sort shuffle's one file of every partition (named by its file id), or one
        // file per partition.
        for part in listed(&job.join(last.to_string())) {
            let n = number(&part);
            let sort = part.join("data.arrow").exists();
            for p in if sort { (0..16).collect() } else { vec![n] } {
                let got = fetch("client", last, p, (Some(n as u64), sort));
                served_to_client += got.unwrap_or_else(|e| panic!("job {name} stage {last}: {e}"));
            }
        }
        // The stages before it hand on states (their files may be gone by now: the gate decides
        // before it looks for one): never to the client, and the gate lets the executors by.
        for stage in 0..last {
            for (p, file) in [(0, (Some(0), false)), (1, (Some(0), true))] {
                let error = fetch("client", stage, p, file).expect_err("a client fetched a stage's states");
                assert!(error.contains("dpstat executor"), "{error}");
                refused += usize::from(error.contains("executors only"));
                if let Err(e) = fetch("executor", stage, p, file) {
                    assert!(!e.contains("dpstat executor"), "the gate refused an executor: {e}");
                }
            }
        }
    }
    assert!(refused > 0 && served_to_client > 0, "{refused} {served_to_client}");
    assert!(
        cluster.log("executor-1").contains("refused a fetch"),
        "the refusals are not in the executor's log"
    );
}

#[test]
fn a_stopped_executor_leaves_no_shuffle_files() {
    let cluster = Cluster::start("cleanup", 50650, 1, "");
    let work = person_level_work(&cluster);
    assert!(!listed(&work).is_empty(), "the person-level job wrote no shuffle files in {}", work.display());
    cluster.stop();
    // The executor removes its jobs' files as it stops (a SIGTERM), within a few seconds.
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        listed(&work).is_empty()
    });
    assert!(gone, "{} still holds shuffle files after the executor stopped", work.display());
}

/// Serves `answer` to every connection on a loopback port (None: accepts and stays silent);
/// returns the port.
fn listener(answer: Option<&'static [u8]>) -> u16 {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in socket.incoming().flatten() {
            let mut stream = stream;
            if let Some(bytes) = answer {
                use std::io::{Read, Write};
                let mut buffer = [0u8; 1024];
                let _ = stream.read(&mut buffer);
                let _ = stream.write_all(bytes);
            }
            held.push(stream);
        }
    });
    port
}

#[test]
fn an_endpoint_that_is_not_a_dpstat_scheduler_is_one_line_in_seconds() {
    let cluster = Cluster::start("endpoints", 50550, 1, "");
    let people = fixture("people.parquet");
    let creds = cluster.credentials();
    let http = listener(Some(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"));
    let silent = listener(None);
    let flight = cluster.port + 3;
    for (what, port) in
        [("an HTTP server", http), ("a silent listener", silent), ("an executor's Flight port", flight)]
    {
        let url = format!("ballista://127.0.0.1:{port}?credentials={}", creds.display());
        let started = std::time::Instant::now();
        let out = run(unseeded().args(["count", "--eps", "1", "--engine", &url]).arg(&people));
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(out.stdout.is_empty(), "{what}");
        assert_eq!(stderr.lines().count(), 1, "{what}: not one line: {stderr}");
        let error = common::the_error(&stderr);
        assert!(error.contains(&format!("127.0.0.1:{port}")), "{what}: {error}");
        assert!(!error.contains("Status {") && !error.contains("MetadataMap"), "{what}: {error}");
        // A hang guard (the connect and handshake waits are 5 s each), not a speed test.
        assert!(took < std::time::Duration::from_secs(20), "{what}: {took:?}");
        eprintln!("{what}: {took:?}: {error}");
    }
}

#[test]
fn a_relative_path_means_the_clients_file() {
    let cluster = Cluster::start("relative", 50570, 1, "");
    let args = ["mean", "-c", "income", "-l", "0", "-u", "2e5", "-e", "1", "--full-precision"];
    let local = run(dpstat().args(args).arg(fixture("people.parquet")));
    let mut cmd = dpstat();
    cmd.current_dir(fixture("people.parquet").parent().unwrap());
    let remote = run(cmd.args(args).args(["--engine", &cluster.url]).arg("people.parquet"));
    same(&local, &remote, "a relative path");
}
