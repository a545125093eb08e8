#!/usr/bin/env python3
"""`--max-rows-per-id auto` against every fixed K: RMSE of the person-level mean (issue 36, item 3).

    python3 bench/person_auto.py [--persons N] [--seeds S] [--dpstat PATH]

Two generated files (DATA, default bench/data, git-ignored), each N persons (default 20,000):
- skewed: rows per person lognormal with median 3 and 0.9 quantile 55, capped at 500 (the
  issue's shape: median 3, 0.9 quantile 55, max 500);
- light: rows per person 1 + Poisson(2) (median 3, max about 12).
A person's values are normal around 20 + 4·ln(rows) (sd 5, clamped to [0, 100]), so heavy
persons differ and truncation biases the mean. The truth is the mean of all rows. For each K
of a grid reaching the largest K in the data, for `auto`, and for the 0.9 quantile of rows per
person rounded up to a candidate (the old rule, computed here without its selection noise),
S seeded releases (`mean --lower 0 --upper 100 --eps 1 --privacy-id id`) give bias, sd and
RMSE; a markdown table is printed. GRID (environment, comma-separated) narrows the fixed Ks.
Not run by cargo test.
"""
import argparse
import math
import os
import random
import statistics
import subprocess
import sys

CANDIDATES = list(range(1, 11)) + [m * d for d in (1, 10, 100) for m in (12, 15, 20, 25, 30, 40, 50, 60, 80, 100)]


def generate(path, persons, kind, rng):
    rows_of = []
    with open(path, "w") as f:
        f.write("id,x\n")
        lines = []
        for p in range(persons):
            if kind == "skewed":
                rows = min(500, max(1, round(math.exp(rng.gauss(math.log(3), 2.27)))))
            else:
                rows = 1 + poisson(rng, 2.0)
            rows_of.append(rows)
            centre = 20 + 4 * math.log(rows)
            for _ in range(rows):
                lines.append(f"p{p},{min(100.0, max(0.0, rng.gauss(centre, 5))):.3f}\n")
        rng.shuffle(lines)
        f.writelines(lines)
    return rows_of


def poisson(rng, lam):
    l, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= l:
            return k
        k += 1


def truth(path):
    xs = [float(l.split(",")[1]) for l in open(path).read().splitlines()[1:]]
    return sum(xs) / len(xs)


def release(dpstat, path, k, seed):
    env = dict(os.environ, DPSTAT_INSECURE_SEED=str(seed))
    out = subprocess.run(
        [dpstat, "mean", "--col", "x", "--lower", "0", "--upper", "100", "--eps", "1",
         "--privacy-id", "id", "--max-rows-per-id", str(k), path],
        env=env, capture_output=True, text=True, check=True,
    )
    return float(out.stdout.strip())


def chosen_k(dpstat, path, seed):
    import json
    env = dict(os.environ, DPSTAT_INSECURE_SEED=str(seed))
    out = subprocess.run(
        [dpstat, "mean", "--col", "x", "--lower", "0", "--upper", "100", "--eps", "1",
         "--privacy-id", "id", "--max-rows-per-id", "auto", "--format", "json", path],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)["max_rows_per_id"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--persons", type=int, default=20000)
    ap.add_argument("--seeds", type=int, default=10)
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "target", "release", "dpstat")
    if not os.path.exists(default):
        default = os.path.join(here, "..", "target", "debug", "dpstat")
    ap.add_argument("--dpstat", default=default)
    args = ap.parse_args()
    data = os.environ.get("DATA", os.path.join(here, "data"))
    os.makedirs(data, exist_ok=True)
    for kind in ("skewed", "light"):
        path = os.path.join(data, f"auto_{kind}_{args.persons}.csv")
        rows_of = generate(path, args.persons, kind, random.Random(7))
        q90 = sorted(rows_of)[int(0.9 * len(rows_of))]
        old = next(c for c in CANDIDATES if c >= q90)
        top = max(rows_of)
        coarse = [int(c) for c in os.environ.get("GRID", "1,2,3,5,8,10,15,20,30,60,100,200,300,400,500,1000").split(",")]
        grid = sorted({c for c in coarse if c <= top} | {next(c for c in CANDIDATES if c >= top), old})
        true = truth(path)
        print(f"\n### {kind}: {args.persons} persons, {sum(rows_of)} rows; rows per person median "
              f"{statistics.median(rows_of)}, 0.9 quantile {q90}, max {top}; true mean {true:.3f}\n")
        print("| K | bias | sd | RMSE |")
        print("|---|---:|---:|---:|")
        results = {}
        for k in grid + ["auto"]:
            vals = [release(args.dpstat, path, k, s) for s in range(1, args.seeds + 1)]
            bias = statistics.mean(vals) - true
            sd = statistics.pstdev(vals)
            rmse = math.sqrt(statistics.mean([(v - true) ** 2 for v in vals]))
            results[k] = rmse
            label = k
            if k == "auto":
                ks = sorted({chosen_k(args.dpstat, path, s) for s in range(1, args.seeds + 1)})
                label = f"auto (chose {', '.join(map(str, ks))})"
            elif k == old:
                label = f"{k} (old rule: 0.9 quantile)"
            print(f"| {label} | {bias:+.3f} | {sd:.3f} | {rmse:.3f} |")
            sys.stdout.flush()
        best = min((v, k) for k, v in results.items() if k != "auto")
        print(f"\nbest fixed K = {best[1]} (RMSE {best[0]:.3f}); auto / best = {results['auto'] / best[0]:.2f}; "
              f"auto / old rule (K = {old}) = {results['auto'] / results[old]:.2f}")


if __name__ == "__main__":
    main()
