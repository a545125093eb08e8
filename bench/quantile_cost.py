#!/usr/bin/env python3
"""Time and peak memory of the default median against the mean of the same column (issue 38).

    cargo build --release && bench/quantile_cost.py [ROWS [RUNS]]

Writes ROWS (default 1,000,000) integer incomes, lognormal(10.5, 0.8) rounded down and capped at
10^6, from a fixed seed (Python's `random`) to a temporary CSV, then runs RUNS times (default 5)
each of

    dpstat median --col x --lower 0 --upper 1000000 --eps 1   (every integer a candidate)
    dpstat mean   --col x --lower 0 --upper 1000000 --eps 1

under `/usr/bin/time -v` with DPSTAT_INSECURE_SEED set (the releases are NOT private), and prints
per command the best and median wall time, user + system CPU, and peak RSS, then the median's
ratios to the mean. Set DPSTAT to use another binary. Standard library only.
"""

import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DPSTAT = os.environ.get("DPSTAT", str(ROOT / "target" / "release" / "dpstat"))


def measure(argv):
    env = dict(os.environ, DPSTAT_INSECURE_SEED="1")
    env.pop("DPSTAT_LEDGER", None)
    report = subprocess.run(
        ["/usr/bin/time", "-v", *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True
    ).stderr
    fields = {}
    for line in report.splitlines():
        key, _, value = line.strip().rpartition(": ")
        fields[key] = value
    wall = fields["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(wall)))
    cpu = float(fields["User time (seconds)"]) + float(fields["System time (seconds)"])
    return seconds, cpu, int(fields["Maximum resident set size (kbytes)"])


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rng = random.Random(38)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "incomes.csv"
        with open(path, "w") as f:
            f.write("x\n")
            for _ in range(rows):
                f.write(f"{min(1_000_000, int(rng.lognormvariate(10.5, 0.8)))}\n")
        flags = ["--col", "x", "--lower", "0", "--upper", "1000000", "--eps", "1", str(path)]
        results = {}
        for name in ("median", "mean"):
            results[name] = [measure([DPSTAT, name, *flags]) for _ in range(runs)]
    print(f"{rows:,} rows on [0, 10^6], {runs} runs each")
    print(f"{'query':<8} {'wall best':>10} {'wall median':>12} {'cpu median':>11} {'peak RSS':>10}")
    summary = {}
    for name, samples in results.items():
        walls, cpus, rss = zip(*samples)
        summary[name] = (statistics.median(walls), statistics.median(cpus), max(rss))
        print(f"{name:<8} {min(walls):>9.3f}s {summary[name][0]:>11.3f}s {summary[name][1]:>10.3f}s {max(rss) / 1024:>8.1f}MB")
    (mw, mc, mr), (aw, ac, ar) = summary["median"], summary["mean"]
    print(f"median / mean: wall {mw / aw:.2f}x, cpu {mc / ac:.2f}x, peak RSS {mr / ar:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
