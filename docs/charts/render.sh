#!/usr/bin/env bash
# Draws every kind of chart dpstat makes (terminal and SVG) from the shipped fixtures, and
# screenshots each SVG in headless Chromium, as a browser shows it.
#
#   docs/charts/render.sh            # from the repository root; needs chromium on PATH
#
# Writes docs/charts/NAME.svg, NAME.png (the browser's rendering) and NAME.txt (--format
# chart at 80 columns). The releases use the test seed so that the pictures are reproducible:
# their values are NOT private. Not part of `cargo test` (CI has no browser): run it after
# changing src/report/chart.rs or src/report/svg.rs, look at the PNGs, and commit them.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=docs/charts
cargo build --release --locked -q
DPSTAT=$PWD/target/release/dpstat
export DPSTAT_INSECURE_SEED=1 COLUMNS=80

chart() { # NAME ARGS...: the SVG, its terminal twin, and the browser's screenshot
  local name=$1; shift
  "$DPSTAT" "$@" --plot "$OUT/$name.svg" > /dev/null 2>&1
  "$DPSTAT" "$@" --format chart > "$OUT/$name.txt" 2> /dev/null
  local size
  size=$(sed -n 's/^<svg width="\([0-9]*\)" height="\([0-9]*\)".*/\1,\2/p' "$OUT/$name.svg")
  local profile
  profile=$(mktemp -d)
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$profile" --window-size="$size" \
    --screenshot="$PWD/$OUT/$name.png" "file://$PWD/$OUT/$name.svg" > /dev/null 2>&1
  rm -rf "$profile"
  echo "$OUT/$name.png ($size)"
}

chart histogram histogram --col age --bins 8 --lower 0 --upper 80 --eps 0.5 fixtures/people.csv
chart count-by count --by region --keys north,south,east,west --eps 0.5 fixtures/people.csv
chart mean-by mean --col income --lower 0 --upper 200000 --by region --keys north,south,east,west \
  --eps 1 fixtures/people.csv
chart histogram-by histogram --col region --categories north,south,east,west --by urban_rural \
  --keys 1,2 --eps 1 fixtures/people.csv
chart quantiles quantile --col income --q 0.1,0.25,0.5,0.75,0.9 --lower 0 --upper 200000 --eps 1 \
  fixtures/incomes_20k.csv
chart workload run fixtures/compose_grouped.toml fixtures/people.csv
