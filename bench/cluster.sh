#!/usr/bin/env bash
# The targets of issue 27 (the cluster engine): the overhead of folding on a loopback Ballista
# cluster against the local scan, on the same 10M-row Parquet data, with 1 and with 2 executors.
#
#   bench/cluster.sh             10M rows
#   bench/cluster.sh ROWS ...    any sizes
#
# Builds the release binary with the cluster feature (about 17 minutes on 2 cores the first
# time) unless DPSTAT is given, starts three clusters with scripts/cluster-up.sh (one executor on
# port 50750, two on 50770, two without TLS on 50790; each executor runs one task at a time), and runs bench/cluster.py:
# every command once per round in a rotated order, RUNS rounds (default 5), medians and ratios
# in a markdown table. The data is bench/parquet.sh's (generated with DuckDB into DATA, default
# bench/data, git-ignored; reused when there). Then (PERSONS=0 skips it) a person-level workload
# against the same statistics one by one, locally and on the two-executor cluster, with each
# executor's peak RSS (bench/cluster.py persons; its own data, ROWS rows about ROWS/10 persons).
# Needs: python3 (with venv), GNU time (installed with apt-get if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(10000000)
RUNS=${RUNS:-5}
DATA=${DATA:-$ROOT/bench/data}
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

if [ ! -x /usr/bin/time ]; then
    apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
PY=$DATA/.venv/bin/python
[ -x "$PY" ] || python3 -m venv "$DATA/.venv"
"$PY" -c 'import duckdb' 2>/dev/null || "$DATA/.venv/bin/pip" install -q duckdb
if [ -z "${DPSTAT:-}" ]; then
    cargo build --release --locked -q --features cluster
    DPSTAT=$ROOT/target/release/dpstat
fi

CLUSTERS=$(mktemp -d)
stop() {
    DPSTAT_CLUSTER_DIR=$CLUSTERS/one scripts/cluster-down.sh
    DPSTAT_CLUSTER_DIR=$CLUSTERS/two scripts/cluster-down.sh
    DPSTAT_CLUSTER_DIR=$CLUSTERS/plain scripts/cluster-down.sh
    rm -rf "$CLUSTERS"
}
trap stop EXIT
ONE=$(DPSTAT=$DPSTAT DPSTAT_CLUSTER_DIR=$CLUSTERS/one DPSTAT_CLUSTER_PORT=50750 DPSTAT_EXECUTORS=1 scripts/cluster-up.sh)
TWO=$(DPSTAT=$DPSTAT DPSTAT_CLUSTER_DIR=$CLUSTERS/two DPSTAT_CLUSTER_PORT=50770 DPSTAT_EXECUTORS=2 scripts/cluster-up.sh)
PLAIN=$(DPSTAT=$DPSTAT DPSTAT_CLUSTER_DIR=$CLUSTERS/plain DPSTAT_CLUSTER_PORT=50790 DPSTAT_EXECUTORS=2 \
    DPSTAT_CLUSTER_INSECURE=1 scripts/cluster-up.sh)

echo "# $("$DPSTAT" --version | head -1) ($(git describe --always --dirty)) on $(nproc) cores, $(uname -sr), $(date -u '+%F %H:%M') UTC; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
for rows in "${SIZES[@]}"; do
    "$PY" bench/cluster.py "$DPSTAT" "$DATA" "$RUNS" "$rows" "$ONE" "$TWO" "$PLAIN"
    if [ "${PERSONS:-1}" != 0 ]; then
        "$PY" bench/cluster.py persons "$DPSTAT" "$DATA" "$RUNS" "$rows" "$TWO" "$CLUSTERS/two"
    fi
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
