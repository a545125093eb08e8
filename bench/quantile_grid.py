#!/usr/bin/env python3
"""Accuracy of bounded medians and 0.9 quantiles on integer data (issue 24, item 6).

    bench/quantile_grid.py DPSTAT [RUNS [ARG ...]]

DPSTAT is the path of a dpstat binary (build it with `cargo build --release`); RUNS is the
number of seeded runs per cell (default 100); further ARGs are passed to every run (e.g.
`--resolution 73`). Two integer columns are generated with a fixed
seed (Python's `random`, so the data are the same for every binary):

- ages 18-90, skewed: 18 + a gamma(2.2, 11) draw, truncated to 90 and rounded down;
- uniform integers 0-100;

at n = 200, 1000 and 10000. For each column, n, eps in {0.1, 1} and level (`median`, and
`quantile --q 0.9`) the binary runs RUNS times with DPSTAT_INSECURE_SEED = 1..RUNS (the releases
are NOT private), bounds [18, 90] for ages and [0, 100] for the uniform column, `--format json`,
default candidates. Printed per cell: P(exact), the share of releases that are a valid
q-quantile (#(x < c) <= q*n <= #(x <= c)), and the mean absolute error in value, the distance
from the release to the set of valid q-quantiles (0 when exact); then the candidate count.
Standard library only.
"""

import csv
import json
import os
import random
import subprocess
import sys
import tempfile

SIZES = (200, 1000, 10000)
EPSILONS = ("0.1", "1")
LEVELS = (("median", None, 0.5), ("quantile", "0.9", 0.9))


def ages(rng, n):
    return [min(90, int(18 + rng.gammavariate(2.2, 11.0))) for _ in range(n)]


def uniform(rng, n):
    return [rng.randint(0, 100) for _ in range(n)]


COLUMNS = (("ages 18-90", ages, 18, 90), ("uniform 0-100", uniform, 0, 100))


def valid_interval(values, q):
    """The valid q-quantiles form [x_(k), x_(m+1)] (1-based order statistics) with m = floor(q*n)
    and k = ceil(q*n): #(x <= c) >= q*n needs c >= x_(k), #(x < c) <= q*n needs c <= x_(m+1)."""
    xs = sorted(values)
    n = len(xs)
    # q*n exactly: q is 0.5 or 0.9, so 10*q*n is an integer.
    tenths = round(q * 10) * n
    m, k = tenths // 10, -(-tenths // 10)
    return xs[k - 1], xs[min(m, n - 1)]


def release(binary, path, seed, eps, kind, level, lower, upper, extra):
    args = [binary, kind, "--col", "x", "--lower", str(lower), "--upper", str(upper), "--eps", eps, *extra]
    if level is not None:
        args += ["--q", level]
    args += ["--format", "json", path]
    env = dict(os.environ, DPSTAT_INSECURE_SEED=str(seed))
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout
    doc = json.loads(out.splitlines()[0])
    return doc["quantiles"][0]["value"], doc["candidates"]["count"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    extra = sys.argv[3:]
    rng = random.Random(24)
    print(f"binary {binary}, {runs} seeded runs per cell {' '.join(extra)}".rstrip())
    print("| data | n | eps | level | P(exact) | mean abs error | candidates |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, draw, lower, upper in COLUMNS:
            for n in SIZES:
                values = draw(rng, n)
                path = os.path.join(tmp, f"{name.split()[0]}_{n}.csv")
                with open(path, "w", newline="") as f:
                    w = csv.writer(f)
                    w.writerow(["x"])
                    w.writerows([v] for v in values)
                for eps in EPSILONS:
                    for kind, level, q in LEVELS:
                        lo, hi = valid_interval(values, q)
                        exact, error, count = 0, 0.0, None
                        for seed in range(1, runs + 1):
                            value, count = release(binary, path, seed, eps, kind, level, lower, upper, extra)
                            distance = max(0.0, lo - value, value - hi)
                            exact += distance == 0
                            error += distance
                        label = "median" if q == 0.5 else "q0.9"
                        print(
                            f"| {name} | {n} | {eps} | {label} (true {fmt(lo, hi)}) | "
                            f"{exact / runs:.2f} | {error / runs:.3f} | {count} |",
                            flush=True,
                        )


def fmt(lo, hi):
    return f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"


if __name__ == "__main__":
    main()
