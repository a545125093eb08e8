#!/usr/bin/env bash
# Stops what scripts/cluster-up.sh started (the same DPSTAT_CLUSTER_DIR).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${DPSTAT_CLUSTER_DIR:-target/cluster}
for pidfile in "$dir"/executor-*.pid "$dir"/scheduler.pid; do
    [ -f "$pidfile" ] || continue
    kill "$(cat "$pidfile")" 2>/dev/null
    rm -f "$pidfile"
done
exit 0
