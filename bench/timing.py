"""Round-robin timing for bench/compare.sh.

    python3 timing.py RUNS ROWS NAME COMMAND [NAME COMMAND ...]

Runs every command once as a warm-up, then RUNS rounds in which every command runs once, in
turn; reports the median (and fastest) whole-process wall time of each, its ratio to dpstat's
same query on the plain file ("dpstat QUERY"; `dpstat run` to `dpstat mean`), its ratio to
`cat` (to `zcat` for gzip input), and its peak RSS from `/usr/bin/time -v` (one more run).
Rounds, rather than all runs of one command in a row, spread a burst of load from other
processes over all commands instead of one, which keeps the ratios fair on a shared machine.
A command that fails stops the benchmark.
"""

import shlex
import statistics
import subprocess
import sys
import time


def wall(argv):
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def peak_rss_kib(argv):
    report = subprocess.run(
        ["/usr/bin/time", "-v", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True
    ).stderr
    for line in report.splitlines():
        if "Maximum resident set size" in line:
            return int(line.rsplit(":", 1)[1])
    raise SystemExit("no peak RSS in the output of /usr/bin/time -v")


def main():
    runs, rows = int(sys.argv[1]), int(sys.argv[2])
    names, commands = sys.argv[3::2], [shlex.split(c) for c in sys.argv[4::2]]
    for argv in commands:
        wall(argv)
    times = {name: [] for name in names}
    for _ in range(runs):
        for name, argv in zip(names, commands):
            times[name].append(wall(argv))
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, argv in zip(names, commands):
        words = name.split()
        query = "mean" if words[:2] == ["dpstat", "run"] else (words[1] if len(words) > 1 else None)
        base = median.get(f"dpstat {query}")
        vs_file = f"{median[name] / base:.2f}" if base and name != f"dpstat {query}" else "-"
        reference = "zcat" if "gzip" in name or "zcat file" in name else "cat"
        vs_cat = f"{median[name] / median[reference]:.1f}" if reference in median else "-"
        rss = peak_rss_kib(argv) / 1024
        print(
            f"| {rows:>10,} | {name:<36} | {median[name]:>7.3f} | {min(times[name]):>7.3f} "
            f"| {vs_file:>7} | {vs_cat:>6} | {rss:>7.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
