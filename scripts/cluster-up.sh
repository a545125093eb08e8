#!/usr/bin/env bash
# Starts a Ballista scheduler and executors with dpstat's functions on loopback, from this
# project's own build, and prints the --engine URL. Stop them with scripts/cluster-down.sh.
#
#   cargo build --features cluster && scripts/cluster-up.sh
#
# Environment: DPSTAT (the binary; default target/debug/dpstat), DPSTAT_CLUSTER_DIR (pids and
# logs; default target/cluster), DPSTAT_CLUSTER_PORT (the scheduler's; executors take the
# ports after it; default 50050), DPSTAT_EXECUTORS (default 2), DPSTAT_EXECUTOR_CORES
# (default 1), DPSTAT_EXECUTOR_FLAGS (more flags for every executor).
set -euo pipefail
cd "$(dirname "$0")/.."
dpstat=${DPSTAT:-target/debug/dpstat}
dir=${DPSTAT_CLUSTER_DIR:-target/cluster}
port=${DPSTAT_CLUSTER_PORT:-50050}
executors=${DPSTAT_EXECUTORS:-2}
cores=${DPSTAT_EXECUTOR_CORES:-1}
mkdir -p "$dir"

if ! "$dpstat" cluster --help >/dev/null 2>&1; then
    echo "cluster-up: $dpstat has no cluster engine: cargo build --features cluster" >&2
    exit 2
fi

# Waits until something listens on 127.0.0.1:$1, or fails after 60 s.
listening() {
    for _ in $(seq 600); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "cluster-up: nothing listens on port $1 (see $dir/*.log)" >&2
    return 1
}

"$dpstat" cluster scheduler --bind "127.0.0.1:$port" >"$dir/scheduler.log" 2>&1 &
echo $! >"$dir/scheduler.pid"
listening "$port"

for i in $(seq "$executors"); do
    grpc=$((port + 2 * i))
    flight=$((port + 2 * i + 1))
    # shellcheck disable=SC2086
    "$dpstat" cluster executor --scheduler "127.0.0.1:$port" --bind "127.0.0.1:$grpc" \
        --flight-port "$flight" --cores "$cores" ${DPSTAT_EXECUTOR_FLAGS:-} \
        >"$dir/executor-$i.log" 2>&1 &
    echo $! >"$dir/executor-$i.pid"
done
for i in $(seq "$executors"); do
    listening $((port + 2 * i))
done
echo "ballista://127.0.0.1:$port"
