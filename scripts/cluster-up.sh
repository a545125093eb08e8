#!/usr/bin/env bash
# Starts a Ballista scheduler and executors with dpstat's functions on loopback, from this
# project's own build, speaking mutual TLS with the cluster's credentials (made on the first
# start), and prints the --engine URL. Stop them with scripts/cluster-down.sh.
#
#   cargo build --features cluster && scripts/cluster-up.sh
#
# Environment: DPSTAT (the binary; default target/debug/dpstat), DPSTAT_CLUSTER_DIR (pids and
# logs; default target/cluster), DPSTAT_CLUSTER_CREDENTIALS (the folder of `dpstat cluster
# init`; default $DPSTAT_CLUSTER_DIR/credentials, made there if it holds no ca.crt),
# DPSTAT_CLUSTER_PORT (the scheduler's; executors take the ports after it; default 50050),
# DPSTAT_EXECUTORS (default 2), DPSTAT_EXECUTOR_CORES (default 1), DPSTAT_EXECUTOR_FLAGS (more
# flags for every executor), DPSTAT_CLUSTER_INSECURE=1 (INSECURE: no TLS, no authentication:
# every account and process on this host can then read the data the executors can read).
set -euo pipefail
cd "$(dirname "$0")/.."
dpstat=${DPSTAT:-target/debug/dpstat}
dir=${DPSTAT_CLUSTER_DIR:-target/cluster}
port=${DPSTAT_CLUSTER_PORT:-50050}
executors=${DPSTAT_EXECUTORS:-2}
cores=${DPSTAT_EXECUTOR_CORES:-1}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
credentials=${DPSTAT_CLUSTER_CREDENTIALS:-$dir/credentials}

if ! "$dpstat" cluster --help >/dev/null 2>&1; then
    echo "cluster-up: $dpstat has no cluster engine: cargo build --features cluster" >&2
    exit 2
fi

if [ "${DPSTAT_CLUSTER_INSECURE:-}" = 1 ]; then
    access=(--insecure-loopback)
    query="insecure"
else
    if [ ! -e "$credentials/ca.crt" ]; then
        "$dpstat" cluster init "$credentials"
    fi
    credentials=$(cd "$credentials" && pwd)
    access=(--credentials "$credentials")
    query="credentials=$credentials"
fi

# Waits until something listens on 127.0.0.1:$1, or fails after 60 s naming the log of $2.
listening() {
    for _ in $(seq 600); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "cluster-up: nothing listens on port $1 (see $dir/$2.log)" >&2
    return 1
}

"$dpstat" cluster scheduler --bind "127.0.0.1:$port" "${access[@]}" >"$dir/scheduler.log" 2>&1 &
echo $! >"$dir/scheduler.pid"
listening "$port" scheduler

for i in $(seq "$executors"); do
    grpc=$((port + 2 * i))
    flight=$((port + 2 * i + 1))
    # shellcheck disable=SC2086
    "$dpstat" cluster executor --scheduler "127.0.0.1:$port" --bind "127.0.0.1:$grpc" \
        --flight-port "$flight" --cores "$cores" "${access[@]}" ${DPSTAT_EXECUTOR_FLAGS:-} \
        >"$dir/executor-$i.log" 2>&1 &
    echo $! >"$dir/executor-$i.pid"
done
# Executors pull their tasks: each listens only on its Flight port.
for i in $(seq "$executors"); do
    listening $((port + 2 * i + 1)) "executor-$i"
done
echo "ballista://127.0.0.1:$port?$query"
