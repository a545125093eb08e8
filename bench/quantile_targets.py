#!/usr/bin/env python3
"""The quantile accuracy targets of issue 13, measured over seeded runs of the release binary.

    cargo build --release && bench/quantile_targets.py [RUNS]

1. Bounds-free q0.5 and q0.9 of `age` in fixtures/people.csv (200 rows) at eps = 1: the share
   of runs within +-15 of the true quantile (target >= 90 %) and the number of runs outside
   [0, 200] (target: none).
2. `median --lower 1 --upper 16 --resolution 16` of `years` in fixtures/education_ties.csv (200
   integer rows, many ties) at eps = 1: the share of runs that release the sample median
   exactly (target >= 97 %).

Every run uses DPSTAT_INSECURE_SEED (seeds 1..RUNS), so the figures are reproducible and the
releases are NOT private. RUNS defaults to 500. Set DPSTAT to use another binary.
"""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DPSTAT = os.environ.get("DPSTAT", str(ROOT / "target" / "release" / "dpstat"))


def column(fixture, name):
    with open(ROOT / "fixtures" / fixture, newline="") as f:
        return [float(row[name]) for row in csv.DictReader(f)]


def valid_quantiles(values, q):
    """The values c with #(x < c) <= q*n <= #(x <= c): the valid q-quantiles among the data."""
    n = len(values)
    return sorted({c for c in values if sum(x < c for x in values) <= q * n <= sum(x <= c for x in values)})


def release(seed, args):
    env = dict(os.environ, DPSTAT_INSECURE_SEED=str(seed))
    env.pop("DPSTAT_LEDGER", None)
    out = subprocess.run([DPSTAT, *args, "--format", "json"], env=env, capture_output=True, text=True, check=True)
    warned = any("warning:" in line and "NOT private" not in line for line in out.stderr.splitlines())
    return json.loads(out.stdout), warned


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    ages = column("people.csv", "age")
    truth = {q: valid_quantiles(ages, q) for q in (0.5, 0.9)}
    within = {0.5: 0, 0.9: 0}
    outside = {0.5: 0, 0.9: 0}
    worst = {0.5: 0.0, 0.9: 0.0}
    warned_runs = 0
    args = ["quantile", "--col", "age", "--q", "0.5,0.9", "--eps", "1", str(ROOT / "fixtures" / "people.csv")]
    for seed in range(1, runs + 1):
        json_release, warned = release(seed, args)
        warned_runs += warned
        for level in json_release["quantiles"]:
            q, value = level["q"], level["value"]
            error = min(abs(value - t) for t in truth[q])
            within[q] += error <= 15
            outside[q] += not 0 <= value <= 200
            worst[q] = max(worst[q], error)
    print(f"bounds-free quantiles of age, fixtures/people.csv, eps 1, {runs} seeded runs")
    for q in (0.5, 0.9):
        print(
            f"  q{q}: true {truth[q]}, within +-15 in {within[q]}/{runs} = {100 * within[q] / runs:.1f} % "
            f"(target >= 90 %), outside [0, 200] in {outside[q]} (target 0), largest error {worst[q]:g}"
        )
    print(f"  runs with a too-few-data warning: {warned_runs}")

    years = column("education_ties.csv", "years")
    medians = valid_quantiles(years, 0.5)
    exact = 0
    args = ["median", "--col", "years", "--lower", "1", "--upper", "16", "--resolution", "16", "--eps", "1",
            str(ROOT / "fixtures" / "education_ties.csv")]
    for seed in range(1, runs + 1):
        json_release, _ = release(seed, args)
        exact += json_release["value"] in medians
    print(f"median of years (ties), fixtures/education_ties.csv, --lower 1 --upper 16 --resolution 16, eps 1, {runs} seeded runs")
    print(f"  sample median {medians}: released exactly in {exact}/{runs} = {100 * exact / runs:.1f} % (target >= 97 %)")


if __name__ == "__main__":
    main()
