#!/usr/bin/env bash
# The targets of issue 26 (Parquet input): dpstat's mean and histogram on Parquet against DuckDB
# and polars computing the same statistics without noise, on the same files.
#
#   bench/parquet.sh              10M rows
#   bench/parquet.sh --small      1M rows (checks the script in a minute or two)
#   bench/parquet.sh --large      10M and 100M rows (the 100M files take ~7.5 GB, see below)
#   bench/parquet.sh ROWS ...     any sizes
#
# For each size, one interleaved run (RUNS rounds, each running every command once in a rotated
# order; medians, fastest runs and ratios to dpstat in markdown tables):
# 1. start-up alone: `dpstat --version`, a python that only imports duckdb / polars, `cat` of
#    the files (reading the bytes);
# 2. mean of income clamped to [0, 200000] and a 10-bin histogram of age over [0, 100], on one
#    file with 1M-row snappy row groups and on a directory of 64 parts, by dpstat, DuckDB and
#    polars: whole-process wall time timed from outside, and the engines' in-engine query time
#    timed inside python around the query;
# 3. projection: dpstat's (and the engines') mean of income from a 1-column file and from a
#    20-column file with the same rows.
# Peak RSS (GNU time) of every run; the target for dpstat is <= 64 MiB.
# Details in bench/parquet.py, which generates the data with DuckDB (a fixed hash of the row
# number: the same rows on every run) and prints the tables.
#
# Environment: DPSTAT (the binary; default: target/release/dpstat, built with cargo), RUNS
# (rounds, default 5), DATA (generated files and the venv, default bench/data, git-ignored;
# files already there are reused; per 10M rows ~0.75 GB: 73 MB the 3-column file, as much the
# parts, 580 MB the 20-column file, 59 MB the 1-column one, written in about a minute on 2
# cores), PROJECTION=0 to skip the 20-column and 1-column files.
# Needs: python3 (with venv), and cargo unless DPSTAT is given; installs GNU time with apt-get if
# missing and duckdb, polars and pyarrow with pip into DATA/.venv (once).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
case "${1:-}" in
    --small) SIZES=(1000000) ;;
    --large) SIZES=(10000000 100000000) ;;
    "") SIZES=(10000000) ;;
    -*) echo "usage: bench/parquet.sh [--small | --large | ROWS ...]" >&2; exit 2 ;;
    *) SIZES=("$@") ;;
esac
RUNS=${RUNS:-5}
DATA=${DATA:-$ROOT/bench/data}
PROJECTION=${PROJECTION:-1}
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

if [ ! -x /usr/bin/time ]; then
    apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
PY=$DATA/.venv/bin/python
[ -x "$PY" ] || python3 -m venv "$DATA/.venv"
"$PY" -c 'import duckdb, polars, pyarrow' 2>/dev/null || "$DATA/.venv/bin/pip" install -q duckdb polars pyarrow
if [ -z "${DPSTAT:-}" ]; then
    cargo build --release --locked -q
    DPSTAT=$ROOT/target/release/dpstat
fi
[ -x "$DPSTAT" ] || { echo "bench/parquet.sh: DPSTAT=$DPSTAT is not an executable" >&2; exit 2; }

echo "# $("$DPSTAT" --version 2>/dev/null || echo dpstat) ($(git describe --always --dirty)) on $(nproc) cores, $(uname -sr), $(date -u '+%F %H:%M') UTC; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $("$PY" -c 'import duckdb, polars, pyarrow; print("duckdb", duckdb.__version__, "/ polars", polars.__version__, "/ pyarrow", pyarrow.__version__)')"
echo "# free in DATA: $(df -h --output=avail "$DATA" | tail -1 | tr -d ' ')"
echo
for rows in "${SIZES[@]}"; do
    "$PY" bench/parquet.py run "$DPSTAT" "$DATA" "$RUNS" "$PROJECTION" "$rows"
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
