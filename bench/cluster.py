"""bench/cluster.sh's runs: dpstat's mean and histogram on the same Parquet data read locally
(on 1 and 2 threads) and folded on a loopback Ballista cluster of 1 and of 2 executors (one task
at a time each, mutual TLS) and of 2 executors without TLS (the cost of TLS), one interleaved run; medians, fastest runs, ratios to the local scan on 2
threads, the client's peak RSS. Every run uses the insecure seed, so the releases must be equal
byte for byte: the script stops if one differs."""

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parquet import generate, timed  # noqa: E402

QUERIES = {
    "mean": ["mean", "-c", "income", "-l", "0", "-u", "200000", "-e", "1"],
    "histogram": ["histogram", "-c", "age", "--bins", "10", "-l", "0", "-u", "100", "-e", "1"],
}


def main(dpstat, data, runs, rows, one, two, plain):
    runs, rows = int(runs), int(rows)
    files = generate(data, rows, False)
    os.environ["DPSTAT_INSECURE_SEED"] = "1"
    commands = []
    for query, args in QUERIES.items():
        for shape, label in (("file", "one file, 1M-row groups"), ("parts", "64 parts")):
            path = files[shape]
            for how, extra in (
                ("local, 2 threads", ["-j", "2"]),
                ("local, 1 thread", ["-j", "1"]),
                ("cluster, 1 executor", ["--engine", one]),
                ("cluster, 2 executors", ["--engine", two]),
                ("cluster, 2 executors, no TLS", ["--engine", plain]),
            ):
                commands.append(((query, label), how, [dpstat, *args, *extra, path]))
    released = {}
    for key, how, argv in commands:
        _, _, stdout = timed(argv)
        if released.setdefault(key, stdout) != stdout:
            sys.exit(f"{how} released {stdout!r} for {key}, not {released[key]!r}")
    walls = {(key, how): [] for key, how, _ in commands}
    peaks = {(key, how): 0.0 for key, how, _ in commands}
    for r in range(runs):
        for key, how, argv in commands[r % len(commands):] + commands[: r % len(commands)]:
            wall, peak, _ = timed(argv)
            walls[(key, how)].append(wall)
            peaks[(key, how)] = max(peaks[(key, how)], peak)
    print(f"## {rows:,} rows, {runs} rounds\n")
    print("| query | data | how | median s | fastest s | / local 2 threads | client peak RSS MiB |")
    print("|---|---|---|---:|---:|---:|---:|")
    for key, how, _ in commands:
        median = statistics.median(walls[(key, how)])
        base = statistics.median(walls[(key, "local, 2 threads")])
        print(
            f"| {key[0]} | {key[1]} | {how} | {median:.3f} | {min(walls[(key, how)]):.3f} "
            f"| {median / base:.2f} | {peaks[(key, how)]:.1f} |"
        )
    print()


if __name__ == "__main__":
    main(*sys.argv[1:])
