#!/usr/bin/env bash
# Times dpstat against polars, DuckDB and `cat` on generated CSV files, side by side in one run.
#
#   bench/compare.sh [ROWS ...]        default: 1000000 10000000 50000000
#
# Environment: RUNS (timed runs per command, default 5), DATA (where the generated files go,
# default bench/data, git-ignored; 50M rows take 1.7 GB), ENGINES=0 to skip polars/DuckDB.
# Needs: cargo, rustc, python3; installs hyperfine and GNU time with apt-get if missing, and
# polars + duckdb with pip into bench/.venv (git-ignored).
#
# What is measured: whole-process wall time (hyperfine, one warm-up run so the page cache is
# warm, then RUNS runs; the median is reported) and peak RSS (/usr/bin/time -f %M, one run).
# dpstat runs without DPSTAT_INSECURE_SEED, as in production (OS randomness).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-5}
DATA=${DATA:-$ROOT/bench/data}
ENGINES=${ENGINES:-1}
if [ $# -gt 0 ]; then SIZES=("$@"); else SIZES=(1000000 10000000 50000000); fi
mkdir -p "$DATA"

if ! command -v hyperfine >/dev/null || [ ! -x /usr/bin/time ]; then
    apt-get update -qq && apt-get install -y -qq hyperfine time >/dev/null
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
echo "# medians of $RUNS runs after one warm-up; peak RSS of one run"
printf '%-10s %-44s %10s %10s %10s %10s\n' rows command "wall (s)" "vs polars" "vs cat" "RSS (MiB)"

for rows in "${SIZES[@]}"; do
    file=$DATA/people_$rows.csv
    [ -s "$file" ] || "$DATA/gen" "$rows" > "$file"
    cat "$file" > /dev/null
    names=() commands=()
    add() { names+=("$1"); commands+=("$2"); }
    add "cat" "cat $file"
    add "dpstat mean" "$DPSTAT mean --col income --lower 0 --upper 250000 --eps 1 $file"
    add "dpstat mean --threads 1" "$DPSTAT mean --col income --lower 0 --upper 250000 --eps 1 --threads 1 $file"
    add "dpstat count --where" "$DPSTAT count --where region=north --eps 1 $file"
    add "dpstat count --where --threads 1" "$DPSTAT count --where region=north --eps 1 --threads 1 $file"
    add "dpstat histogram" "$DPSTAT histogram --col region --categories north,south,east,west,central,islands --eps 1 $file"
    add "dpstat histogram --threads 1" "$DPSTAT histogram --col region --categories north,south,east,west,central,islands --eps 1 --threads 1 $file"
    if [ "$ENGINES" = 1 ]; then
        for query in mean count histogram; do
            add "polars $query" "$PY $ROOT/bench/engines.py polars $query $file"
            add "duckdb $query" "$PY $ROOT/bench/engines.py duckdb $query $file"
        done
    fi
    json=$DATA/hyperfine_$rows.json
    hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$json" "${commands[@]}" > /dev/null 2>&1
    rss=()
    for command in "${commands[@]}"; do
        # shellcheck disable=SC2086 # the command is split into words on purpose
        /usr/bin/time -f '%M' -o "$DATA/rss" $command > /dev/null 2>&1
        rss+=("$(tail -n 1 "$DATA/rss")")
    done
    python3 - "$json" "$rows" "${names[@]}" -- "${rss[@]}" <<'PY'
import json, statistics, sys
path, rows, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
cut = rest.index("--")
names, rss = rest[:cut], rest[cut + 1:]
medians = [statistics.median(r["times"]) for r in json.load(open(path))["results"]]
by_name = dict(zip(names, medians))
for name, median, kb in zip(names, medians, rss):
    query = name.split()[1] if name.startswith(("dpstat", "polars", "duckdb")) else None
    polars = by_name.get(f"polars {query}") if query else None
    vs_polars = f"{median / polars:.2f}" if polars else "-"
    vs_cat = f"{median / by_name['cat']:.1f}"
    print(f"{int(rows):<10,} {name:<44} {median:>10.3f} {vs_polars:>10} {vs_cat:>10} {int(kb) / 1024:>10.1f}")
PY
done
