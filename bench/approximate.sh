#!/usr/bin/env bash
# The targets of issue 15 (opt-in approximate DP), measured with the release binary:
#
#   bench/approximate.sh            RUNS (default 30) runs of each configuration
#
# 1. RMSE per release of a workload of k counts under Gaussian noise (zCDP) and under Laplace
#    noise at the same (epsilon = 1, delta = 1e-6), measured and exact, and the crossover k;
# 2. key discovery on 1M rows over 10,000 Zipf-distributed keys at epsilon = 1, delta = 1e-7:
#    keys released, wall time and peak memory (/usr/bin/time -v).
# Details in bench/approximate.py. Data go to DATA (default bench/data, git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-${1:-30}}
DATA=${DATA:-$ROOT/bench/data}
mkdir -p "$DATA"
if [ ! -x /usr/bin/time ]; then
    apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
cargo build --release --locked -q
rustc -O -o "$DATA/gen" bench/gen.rs
echo "# dpstat $(git describe --always --dirty) on $(nproc) cores, $(uname -sr), $(date -u +%F); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 bench/approximate.py "$ROOT/target/release/dpstat" "$DATA/gen" "$DATA" "$RUNS"
echo
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
