#!/usr/bin/env bash
# Times dpstat against xan, polars, DuckDB, `cat` and `zcat` on generated CSV files, side by
# side in one run, for every way the data can arrive: the file, standard input (`< file` and
# `cat file |`), the same file with the header and text fields quoted, and gzip (the file, and
# `zcat file |`).
#
#   bench/compare.sh [ROWS ...]        default: 1000000 10000000 50000000
#
# Environment: RUNS (timed rounds, default 5), DATA (where the generated files go,
# default bench/data, git-ignored; 50M rows take 1.7 GB plain, as much quoted, and the gzip),
# ENGINES=0 to skip polars/DuckDB, XAN=0 to skip xan.
# Needs: cargo, rustc, python3, gzip; installs GNU time with apt-get if missing, polars + duckdb
# with pip into bench/.venv and xan with `cargo install --locked` into bench/.xan (both
# git-ignored, both built or fetched once).
#
# What is measured (bench/timing.py): whole-process wall time, page cache warm (every command
# runs once as a warm-up); then RUNS rounds, each running every command once in turn; the median
# and the fastest run are reported, with two ratios: to dpstat's same query on the plain file
# ("vs file"; for dpstat run, to dpstat mean), and to `cat` of the plain file (to `zcat` for
# gzip input). Peak RSS: /usr/bin/time -v, one run. dpstat runs without DPSTAT_INSECURE_SEED,
# as in production (OS randomness).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-5}
DATA=${DATA:-$ROOT/bench/data}
ENGINES=${ENGINES:-1}
XAN=${XAN:-1}
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
XAN_BIN=$ROOT/bench/.xan/bin/xan
if [ "$XAN" = 1 ] && [ ! -x "$XAN_BIN" ]; then
    cargo install xan --locked --quiet --root "$ROOT/bench/.xan"
fi

cargo build --release --locked -q
DPSTAT=$ROOT/target/release/dpstat
rustc -O -o "$DATA/gen" bench/gen.rs
CORES=$(nproc)

echo "# dpstat $(git describe --always --dirty) on $CORES cores, $(uname -sr), $(date -u +%F), load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$ENGINES" = 1 ] && echo "# $($PY -c 'import polars, duckdb; print("polars", polars.__version__, "/ duckdb", duckdb.__version__)')"
[ "$XAN" = 1 ] && echo "# $("$XAN_BIN" --version | sed 's/^/xan /')"
echo "# median and fastest of $RUNS rounds after a warm-up; peak RSS of one run; dpstat default threads = $CORES"
echo
echo "|       rows | command                              |  median |     min | vs file | vs cat | RSS MiB |"
echo "|-----------:|--------------------------------------|--------:|--------:|--------:|-------:|--------:|"

for rows in "${SIZES[@]}"; do
    file=$DATA/people_$rows.csv
    quoted=$DATA/people_${rows}_quoted.csv
    gz=$DATA/people_$rows.csv.gz
    [ -s "$file" ] || "$DATA/gen" "$rows" > "$file"
    [ -s "$quoted" ] || "$DATA/gen" "$rows" quoted > "$quoted"
    [ -s "$gz" ] || gzip -c "$file" > "$gz"
    cat "$file" "$quoted" "$gz" > /dev/null
    mean="mean --col income --lower 0 --upper 250000 --eps 1"
    count="count --where region=north --eps 1"
    histogram="histogram --col region --categories north,south,east,west,central,islands --eps 1"
    workload=$DATA/workload.toml
    cat > "$workload" <<'EOF'
# Four queries on two columns: a mean and a variance of each.
epsilon = 1
neighbours = "add-remove"

[[query]]
name = "income_mean"
kind = "mean"
column = "income"
lower = 0
upper = 250000

[[query]]
name = "income_variance"
kind = "variance"
column = "income"
lower = 0
upper = 250000

[[query]]
name = "age_mean"
kind = "mean"
column = "age"
lower = 0
upper = 100

[[query]]
name = "age_variance"
kind = "variance"
column = "age"
lower = 0
upper = 100
EOF
    args=("cat" "cat $file" "zcat" "sh -c 'zcat $gz > /dev/null'")
    for query in mean count histogram; do
        q=${!query}
        args+=(
            "dpstat $query" "$DPSTAT $q $file"
            "dpstat $query --threads 1" "$DPSTAT $q --threads 1 $file"
            "dpstat $query < file" "sh -c '$DPSTAT $q < $file'"
            "dpstat $query cat file |" "sh -c 'cat $file | $DPSTAT $q'"
            "dpstat $query quoted" "$DPSTAT $q $quoted"
            "dpstat $query gzip" "$DPSTAT $q $gz"
            "dpstat $query zcat file |" "sh -c 'zcat $gz | $DPSTAT $q'"
        )
    done
    args+=("dpstat run (4 queries, 2 columns)" "$DPSTAT run $workload $file")
    if [ "$XAN" = 1 ]; then
        # (timing.py splits commands like a shell: the inner quotes reach xan.)
        xmean="agg -p 'mean(income)'"
        xcount="agg -p 'count(region eq \"north\")'"
        xhistogram="frequency -p -s region"
        for query in mean count histogram; do
            var=x$query
            q=${!var}
            # xan cannot split standard input across threads.
            q_stdin=${q/ -p/}
            args+=(
                "xan $query" "$XAN_BIN $q $file"
                "xan $query < file" "sh -c \"$XAN_BIN ${q_stdin//\"/\\\"} < $file\""
                "xan $query quoted" "$XAN_BIN $q $quoted"
                "xan $query gzip" "$XAN_BIN $q $gz"
            )
        done
    fi
    if [ "$ENGINES" = 1 ]; then
        for query in mean count histogram; do
            for engine in polars duckdb; do
                args+=(
                    "$engine $query" "$PY $ROOT/bench/engines.py $engine $query $file"
                    "$engine $query < file" "sh -c '$PY $ROOT/bench/engines.py $engine $query - < $file'"
                    "$engine $query quoted" "$PY $ROOT/bench/engines.py $engine $query $quoted"
                    "$engine $query gzip" "$PY $ROOT/bench/engines.py $engine $query $gz"
                )
            done
        done
    fi
    python3 bench/timing.py "$RUNS" "$rows" "${args[@]}"
done
