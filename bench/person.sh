#!/usr/bin/env bash
# The targets of issues 25 and 36 (protect people, not rows; fast and in bounded memory), measured
# with the release binary:
#
#   bench/person.sh            timings on 10M rows / 1M persons (the issue's file)
#   bench/person.sh --small    timings on 1M rows / 100k persons (checks the script in ~a minute)
#
# 1. Time and peak memory of a person-level mean (--privacy-id id --max-rows-per-id 10) on the
#    shuffled file, on the same rows sorted by id, and with the spill to temporary files forced
#    (DPSTAT_ID_MEMORY=16 MiB), beside dpstat's row-level mean and DuckDB computing the same
#    bounded mean without noise (row_number() over (partition by id order by hash) <= 10); then
#    the peak memory of the person-level mean on ROWS rows of one person and of ROWS/10 persons
#    with 10 rows each (issue 36: at most 64 MiB each).
# 2. RMSE of the person-level mean against K = 1, 2, 5, 10, 20, 50 at epsilon = 1, split into
#    bias^2 and variance, over SEEDS seeded runs per K, always on 1M rows / 100k persons (and on
#    10k rows / 1k persons, where the noise is large enough to matter).
# Data: bench/gen_person.rs (Zipf rows per person, values growing with a person's rows), built
# with rustc -O. Details in bench/person.py, which prints markdown tables.
#
# Environment: RUNS (timed rounds, default 5), SEEDS (seeded runs per K, default 20), DATA
# (generated files and the venv, default bench/data, git-ignored; the 10M files take ~120 MB
# each), RMSE=0 to skip part 2, TIMING=0 to skip part 1, DPSTAT=path to time another binary
# (built elsewhere) instead of this tree's release build, BEFORE=path to time a second binary's
# dpstat commands in the same rounds (a before/after table from one interleaved run).
# Needs: cargo, rustc, python3; installs GNU time with apt-get if missing and duckdb with pip
# into DATA/.venv (once).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROWS=10000000
PERSONS=1000000
case "${1:-}" in
    --small) ROWS=1000000 PERSONS=100000 ;;
    "") ;;
    *) echo "usage: bench/person.sh [--small]" >&2; exit 2 ;;
esac
RUNS=${RUNS:-5}
SEEDS=${SEEDS:-20}
DATA=${DATA:-$ROOT/bench/data}
TIMING=${TIMING:-1}
RMSE=${RMSE:-1}
mkdir -p "$DATA"

if [ ! -x /usr/bin/time ]; then
    apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
PY=$DATA/.venv/bin/python
if [ "$TIMING" = 1 ]; then
    [ -x "$PY" ] || python3 -m venv "$DATA/.venv"
    "$PY" -c 'import duckdb' 2>/dev/null || "$DATA/.venv/bin/pip" install -q duckdb
fi
if [ -z "${DPSTAT:-}" ]; then
    cargo build --release --locked -q
    DPSTAT=$ROOT/target/release/dpstat
fi
rustc -O -o "$DATA/gen_person" bench/gen_person.rs

echo "# dpstat $(git describe --always --dirty) on $(nproc) cores, $(uname -sr), $(date -u '+%F %H:%M') UTC; load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$TIMING" = 1 ] && echo "# $("$PY" -c 'import duckdb; print("duckdb", duckdb.__version__)')"
echo
if [ "$TIMING" = 1 ]; then
    python3 bench/person.py timing "$DPSTAT" "$DATA/gen_person" "$DATA" "$PY" "$ROWS" "$PERSONS" "$RUNS"
    echo
fi
if [ "$RMSE" = 1 ]; then
    python3 bench/person.py rmse "$DPSTAT" "$DATA/gen_person" "$DATA" "$SEEDS"
    echo
fi
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
