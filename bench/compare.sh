#!/usr/bin/env bash
# Times dpstat against polars, DuckDB and `cat` on generated CSV files, side by side in one run.
#
#   bench/compare.sh [ROWS ...]        default: 1000000 10000000 50000000
#
# Environment: RUNS (timed rounds, default 5), DATA (where the generated files go,
# default bench/data, git-ignored; 50M rows take 1.7 GB), ENGINES=0 to skip polars/DuckDB.
# Needs: cargo, rustc, python3; installs GNU time with apt-get if missing, and polars + duckdb
# with pip into bench/.venv (git-ignored).
#
# What is measured (bench/timing.py): whole-process wall time, page cache warm (the file is read
# once, then every command runs once as a warm-up); then RUNS rounds, each running every command
# once in turn; the median and the fastest run are reported. Peak RSS: /usr/bin/time -v, one run.
# dpstat runs without DPSTAT_INSECURE_SEED, as in production (OS randomness).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-5}
DATA=${DATA:-$ROOT/bench/data}
ENGINES=${ENGINES:-1}
if [ $# -gt 0 ]; then SIZES=("$@"); else SIZES=(1000000 10000000 50000000); fi
mkdir -p "$DATA"

if [ ! -x /usr/bin/time ]; then
    apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
PY=python3
if [ "$ENGINES" = 1 ]; then
    if [ ! -x bench/.venv/bin/python ]; then
        python3 -m venv bench/.venv
    fi
    bench/.venv/bin/python -c 'import polars, duckdb' 2>/dev/null \
        || bench/.venv/bin/pip install -q polars duckdb
    PY=$ROOT/bench/.venv/bin/python
fi

cargo build --release --locked -q
DPSTAT=$ROOT/target/release/dpstat
rustc -O -o "$DATA/gen" bench/gen.rs
CORES=$(nproc)

echo "# dpstat $(git describe --always --dirty) on $(nproc) cores, $(uname -sr), $(date -u +%F)"
[ "$ENGINES" = 1 ] && echo "# $($PY -c 'import polars, duckdb; print("polars", polars.__version__, "/ duckdb", duckdb.__version__)')"
echo "# median and fastest of $RUNS rounds after a warm-up; peak RSS of one run; dpstat default threads = $CORES"
echo
echo "|       rows | command                              |  median |    min | vs polars | vs cat | RSS MiB |"
echo "|-----------:|--------------------------------------|--------:|-------:|----------:|-------:|--------:|"

for rows in "${SIZES[@]}"; do
    file=$DATA/people_$rows.csv
    [ -s "$file" ] || "$DATA/gen" "$rows" > "$file"
    cat "$file" > /dev/null
    mean="mean --col income --lower 0 --upper 250000 --eps 1"
    count="count --where region=north --eps 1"
    histogram="histogram --col region --categories north,south,east,west,central,islands --eps 1"
    args=(
        "cat" "cat $file"
        "dpstat mean" "$DPSTAT $mean $file"
        "dpstat mean --threads 1" "$DPSTAT $mean --threads 1 $file"
        "dpstat mean < stdin (csv reader)" "sh -c '$DPSTAT $mean < $file'"
        "dpstat count --where" "$DPSTAT $count $file"
        "dpstat count --where --threads 1" "$DPSTAT $count --threads 1 $file"
        "dpstat histogram" "$DPSTAT $histogram $file"
        "dpstat histogram --threads 1" "$DPSTAT $histogram --threads 1 $file"
    )
    if [ "$ENGINES" = 1 ]; then
        for query in mean count histogram; do
            args+=("polars $query" "$PY $ROOT/bench/engines.py polars $query $file")
            args+=("duckdb $query" "$PY $ROOT/bench/engines.py duckdb $query $file")
        done
    fi
    python3 bench/timing.py "$RUNS" "$rows" "${args[@]}"
done
