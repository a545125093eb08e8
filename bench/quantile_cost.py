#!/usr/bin/env python3
"""Time and peak memory of the default median against the mean of the same column (issue 38).

    cargo build --release && bench/quantile_cost.py [ROWS [RUNS]]
    DPSTAT_BEFORE=/path/to/old/dpstat bench/quantile_cost.py      (before/after in one run)

Writes ROWS (default 1,000,000) integer incomes, lognormal(10.5, 0.8) rounded down and capped at
10^6, from a fixed seed (Python's `random`) to a temporary CSV, then runs RUNS rounds (default
5) after one warm-up round, each round running once, in turn,

    dpstat median --col x --lower 0 --upper 1000000 --eps 1   (every integer a candidate)
    dpstat mean   --col x --lower 0 --upper 1000000 --eps 1

(and the median of DPSTAT_BEFORE, when set) under `/usr/bin/time -v` with DPSTAT_INSECURE_SEED
set (the releases are NOT private; the median's must be the same for both binaries, which is
checked). Prints per command the median and best wall time, the median user + system CPU, and
the largest peak RSS, the median's ratios to the mean, and the load average before and after.
Set DPSTAT to use another binary. Standard library only.
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
BEFORE = os.environ.get("DPSTAT_BEFORE")


def measure(argv):
    env = dict(os.environ, DPSTAT_INSECURE_SEED="1")
    env.pop("DPSTAT_LEDGER", None)
    done = subprocess.run(["/usr/bin/time", "-v", *argv], env=env, capture_output=True, text=True, check=True)
    fields = {}
    for line in done.stderr.splitlines():
        key, _, value = line.strip().rpartition(": ")
        fields[key] = value
    wall = fields["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(wall)))
    cpu = float(fields["User time (seconds)"]) + float(fields["System time (seconds)"])
    return seconds, cpu, int(fields["Maximum resident set size (kbytes)"]), done.stdout


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rng = random.Random(38)
    commands = {"median": [DPSTAT, "median"], "mean": [DPSTAT, "mean"]}
    if BEFORE:
        commands["median before"] = [BEFORE, "median"]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "incomes.csv"
        with open(path, "w") as f:
            f.write("x\n")
            for _ in range(rows):
                f.write(f"{min(1_000_000, int(rng.lognormvariate(10.5, 0.8)))}\n")
        flags = ["--col", "x", "--lower", "0", "--upper", "1000000", "--eps", "1", str(path)]
        results = {name: [] for name in commands}
        outputs = {name: set() for name in commands}
        for round_ in range(runs + 1):
            for name, argv in commands.items():
                wall, cpu, rss, out = measure([*argv, *flags])
                outputs[name].add(out)
                if round_ > 0:
                    results[name].append((wall, cpu, rss))
    load_after = os.getloadavg()
    print(f"{rows:,} rows on [0, 10^6], {runs} interleaved rounds after a warm-up")
    print(f"load average (1, 5, 15 min): before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"{'query':<14} {'wall median':>12} {'wall best':>10} {'cpu median':>11} {'peak RSS':>10}")
    summary = {}
    for name, samples in results.items():
        walls, cpus, rss = zip(*samples)
        summary[name] = (statistics.median(walls), statistics.median(cpus), max(rss))
        print(f"{name:<14} {summary[name][0]:>11.3f}s {min(walls):>9.3f}s {summary[name][1]:>10.3f}s "
              f"{max(rss) / 1024:>8.1f}MB")
    (aw, ac, ar) = summary["mean"]
    for name in [n for n in summary if n != "mean"]:
        mw, mc, mr = summary[name]
        print(f"{name} / mean: wall {mw / aw:.2f}x, cpu {mc / ac:.2f}x, peak RSS {mr / ar:.2f}x (target <= 1.5x)")
    if BEFORE:
        same = outputs["median"] == outputs["median before"] and len(outputs["median"]) == 1
        print(f"seeded medians identical before and after: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
