#!/bin/sh
# dpstat's bounded quantiles against OpenDP, python-dp and diffprivlib: see quantile_peers.py.
#
#   bench/quantile_peers.sh [DPSTAT]      R=30 bench/quantile_peers.sh
#
# Creates a venv (QUANTILE_PEERS_VENV, default target/quantile-peers-venv) and installs the peers
# into it with pip: the only network this uses. Builds nothing: DPSTAT defaults to
# target/release/dpstat (cargo build --release first). Not run by `cargo test`.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${QUANTILE_PEERS_VENV:-$root/target/quantile-peers-venv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    # scikit-learn below 1.7: diffprivlib 0.6.6 imports names that 1.7 removed.
    "$venv/bin/pip" install -q "opendp==0.16.0" "python-dp==1.1.5" "diffprivlib==0.6.6" "scikit-learn<1.7" numpy
fi
exec "$venv/bin/python" "$root/bench/quantile_peers.py" "${1:-$root/target/release/dpstat}"
