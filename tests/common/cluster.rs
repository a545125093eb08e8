//! A Ballista cluster of dpstat's own scheduler and executors on loopback, started with
//! scripts/cluster-up.sh from the binary under test (mutual TLS, with credentials it makes in
//! the cluster's folder) and stopped with scripts/cluster-down.sh.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A running cluster; dropping it stops its processes.
pub struct Cluster {
    pub dir: PathBuf,
    pub url: String,
    /// The scheduler's port; executor `i` (from 1) has Flight port `port + 2i + 1`.
    pub port: u16,
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(name)
}

impl Cluster {
    /// Starts a scheduler on `port` and `executors` executors on the ports after it, with
    /// `flags` for every executor; `name` keeps its logs apart from other clusters'.
    pub fn start(name: &str, port: u16, executors: usize, flags: &str) -> Cluster {
        Cluster::start_with(name, port, executors, flags, &[])
    }

    /// As `start`, with more environment for the script (DPSTAT_CLUSTER_INSECURE=1). A port
    /// taken by someone else (the kernel hands the 50000s to outgoing connections too, so a
    /// client of another test can hold one for a moment) moves the cluster 1,000 ports up, at
    /// most twice; any other failure fails the test.
    pub fn start_with(
        name: &str,
        port: u16,
        executors: usize,
        flags: &str,
        more: &[(&str, &str)],
    ) -> Cluster {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cluster-{name}"));
        for attempt in 0..3u16 {
            let port = port + 1000 * attempt;
            match Cluster::up(&dir, port, executors, flags, more) {
                Ok(url) => return Cluster { dir, url, port },
                Err(why) if why.contains("Address already in use") && attempt < 2 => continue,
                Err(why) => panic!("cluster-up failed: {why}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// One try of cluster-up.sh on `port`: the URL, or its error and the processes' logs.
    fn up(
        dir: &Path,
        port: u16,
        executors: usize,
        flags: &str,
        more: &[(&str, &str)],
    ) -> Result<String, String> {
        let env = |cmd: &mut Command| {
            cmd.env("DPSTAT", env!("CARGO_BIN_EXE_dpstat"))
                .env("DPSTAT_CLUSTER_DIR", dir)
                .env("DPSTAT_CLUSTER_PORT", port.to_string())
                .env("DPSTAT_EXECUTORS", executors.to_string())
                .env("DPSTAT_EXECUTOR_FLAGS", flags)
                .envs(more.iter().copied());
        };
        // A cluster left by an interrupted run (or a failed try) would hold the ports.
        let mut down = Command::new("bash");
        down.arg(script("cluster-down.sh"));
        env(&mut down);
        let _ = down.status();
        let mut up = Command::new("bash");
        up.arg(script("cluster-up.sh"));
        env(&mut up);
        let out = up.output().expect("bash runs");
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).trim().to_string());
        }
        let mut why = String::from_utf8_lossy(&out.stderr).to_string();
        for i in 0..=executors {
            let process = if i == 0 { "scheduler".to_string() } else { format!("executor-{i}") };
            why.push_str(&std::fs::read_to_string(dir.join(format!("{process}.log"))).unwrap_or_default());
        }
        Err(why)
    }

    /// The folder of the cluster's credentials (ca.crt, client.crt, client.key, ...).
    pub fn credentials(&self) -> PathBuf {
        self.dir.join("credentials")
    }

    /// The log of `process` (scheduler, executor-1, ...).
    pub fn log(&self, process: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{process}.log"))).unwrap_or_default()
    }

    /// Stops executor `i` (from 1) at once, as a crash would.
    pub fn kill_executor(&self, i: usize) {
        let pid = std::fs::read_to_string(self.dir.join(format!("executor-{i}.pid"))).expect("its pid");
        Command::new("kill").args(["-9", pid.trim()]).status().expect("kill runs");
    }

    pub fn stop(&self) {
        let _ =
            Command::new("bash").arg(script("cluster-down.sh")).env("DPSTAT_CLUSTER_DIR", &self.dir).status();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}
