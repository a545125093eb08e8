"""bench/cluster.sh's runs: dpstat's mean and histogram on the same Parquet data read locally
(on 1 and 2 threads) and folded on a loopback Ballista cluster of 1 and of 2 executors (one task
at a time each, mutual TLS) and of 2 executors without TLS (the cost of TLS), one interleaved run; medians, fastest runs, ratios to the local scan on 2
threads, the client's peak RSS. Every run uses the insecure seed, so the releases must be equal
byte for byte: the script stops if one differs.

`cluster.py persons DPSTAT DATA RUNS ROWS URL DIR` (issue 36): a person-level workload (`run`
with privacy_id, four queries, with and without a grouped one) against the same statistics run
one by one, locally and on the cluster at URL (whose pid files are in DIR), over one Parquet file
and over its hive folders (by the grouped column); ROWS rows about ROWS/10 persons (skewed: a
few thousand rows for the largest). Each executor's peak RSS over a run is its VmHWM after a
reset (/proc/PID/clear_refs), the largest over the rounds.

`cluster.py memory DPSTAT DATA RUNS ROWS... [-- VAR=VALUE...]` (issue 36): where an executor's
resident memory is. For each size and round, a fresh two-executor cluster (scripts/cluster-up.sh,
one core each, mutual TLS; with the VAR=VALUE settings in the executors' environment too, e.g.
MALLOC_ARENA_MAX=1, in the same rounds) runs the 3-query person-level workload once on the
one-file data of `persons`, while each executor's RssAnon and RssFile are read from
/proc/PID/status every 20 ms: its file pages (the binary's code) apart from its anonymous memory
(what its jobs hold)."""

import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parquet import generate, timed  # noqa: E402

QUERIES = {
    "mean": ["mean", "-c", "income", "-l", "0", "-u", "200000", "-e", "1"],
    "histogram": ["histogram", "-c", "age", "--bins", "10", "-l", "0", "-u", "100", "-e", "1"],
}


PERSON = ["--privacy-id", "id", "--max-rows-per-id", "10"]
WARDS = [f"w{i}" for i in range(8)]
SINGLES = [
    ("count", ["count", "-e", "0.25"]),
    ("mean", ["mean", "-c", "cost", "-l", "0", "-u", "1000", "-e", "0.25"]),
    ("histogram", ["histogram", "-c", "age", "--bins", "9", "-l", "0", "-u", "90", "-e", "0.25"]),
    ("mean by ward", ["mean", "-c", "cost", "-l", "0", "-u", "1000", "-e", "0.25", "--by", "ward",
                      "--keys", ",".join(WARDS)]),
]
WORKLOAD = """epsilon = "1"
privacy_id = "id"
max_rows_per_id = 10
[[query]]
name = "n"
kind = "count"
[[query]]
name = "cost"
kind = "mean"
column = "cost"
lower = 0
upper = 1000
[[query]]
name = "ages"
kind = "histogram"
column = "age"
bins = 9
lower = 0
upper = 90
"""
GROUPED = f"""[[query]]
name = "by_ward"
kind = "mean"
column = "cost"
lower = 0
upper = 1000
by = "ward"
keys = [{", ".join(f'"{w}"' for w in WARDS)}]
"""


def persons_data(data, rows):
    """ROWS rows of id, ward, cost, age as one Parquet file and as hive folders by ward."""
    base = os.path.join(data, f"persons_{rows}")
    files = {"one file": base + ".parquet", "hive folders": base + "_hive"}
    if all(os.path.exists(p) for p in files.values()):
        return files
    import duckdb

    con = duckdb.connect()
    con.execute("set enable_progress_bar = false")
    con.execute(f"""CREATE TABLE t AS SELECT
        'p' || lpad(CAST(CAST(floor({rows // 10} * pow((hash(i) % 1000000000) / 1e9, 2)) AS BIGINT)
            AS VARCHAR), 8, '0') AS id,
        'w' || CAST(hash(i, 1) % 8 AS VARCHAR) AS ward,
        CAST(hash(i, 2) % 1000 AS DOUBLE) AS cost,
        CAST(hash(i, 3) % 90 AS BIGINT) AS age
        FROM range({rows}) r(i) ORDER BY hash(i, 4)""")
    shutil.rmtree(files["hive folders"], ignore_errors=True)
    con.execute(f"COPY t TO '{files['one file']}' (FORMAT parquet, ROW_GROUP_SIZE 131072)")
    con.execute(f"COPY t TO '{files['hive folders']}' (FORMAT parquet, PARTITION_BY (ward))")
    return files


def executors(cluster_dir):
    pids = []
    for name in sorted(os.listdir(cluster_dir)):
        if name.startswith("executor-") and name.endswith(".pid"):
            with open(os.path.join(cluster_dir, name)) as f:
                pids.append(int(f.read()))
    return pids


def executor_peaks(pids, argv):
    """(wall s, client peak MiB, stdout, executors' peak RSS MiB) of one run."""
    for pid in pids:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    wall, peak, out = timed(argv)
    peaks = []
    for pid in pids:
        with open(f"/proc/{pid}/status") as f:
            peaks.append(next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmHWM")))
    return wall, peak, out, peaks


def persons(dpstat, data, runs, rows, url, cluster_dir):
    runs, rows = int(runs), int(rows)
    files = persons_data(data, rows)
    os.environ["DPSTAT_INSECURE_SEED"] = "1"
    pids = executors(cluster_dir)
    print(f"## person-level workload, {rows:,} rows about {rows // 10:,} persons, {runs} rounds\n")
    print("| data | queries | how | median s | / local | executors' peak RSS MiB | client peak RSS MiB |")
    print("|---|---|---|---:|---:|---:|---:|")
    for label, path in files.items():
        for grouped in (False, True):
            singles = SINGLES if grouped else SINGLES[:3]
            toml = os.path.join(data, f"persons_workload{'_by' if grouped else ''}.toml")
            with open(toml, "w") as f:
                f.write(WORKLOAD + (GROUPED if grouped else ""))
            commands = {"workload": [[dpstat, "run", toml, path]]}
            commands["one by one"] = [[dpstat, *args, *PERSON, path] for _, args in singles]
            for how in list(commands):
                commands[f"{how}, cluster"] = [[*argv[:-1], "--engine", url, argv[-1]] for argv in commands[how]]
            walls = {how: [] for how in commands}
            peaks = {how: [0, 0.0] for how in commands}
            released = {}
            order = list(commands)
            for r in range(runs):
                for how in order[r % len(order):] + order[: r % len(order)]:
                    total = 0.0
                    for i, argv in enumerate(commands[how]):
                        wall, client, out, executor = executor_peaks(pids, argv)
                        key = (how.split(",")[0], i)
                        if released.setdefault(key, out) != out:
                            sys.exit(f"{how} released another {key}: {argv}")
                        total += wall
                        peaks[how] = [max(peaks[how][0], *executor), max(peaks[how][1], client)]
                    walls[how].append(total)
            base = statistics.median(walls["workload"])
            queries = ", ".join(name for name, _ in singles)
            for how in commands:
                median = statistics.median(walls[how])
                executor = peaks[how][0] if "cluster" in how else "–"
                print(f"| {label} | {queries} | {how} | {median:.2f} | {median / base:.2f} | {executor} "
                      f"| {peaks[how][1]:.0f} |")
    print()


def sampled(pids, argv):
    """(wall s, stdout, per executor: (peak RSS, peak RssAnon, peak RssFile) MiB) of one run."""
    peaks = {pid: [0, 0, 0] for pid in pids}
    done = threading.Event()

    def sample():
        while not done.is_set():
            for pid in pids:
                with open(f"/proc/{pid}/status") as f:
                    fields = dict(line.split(":", 1) for line in f)
                kib = [int(fields[k].split()[0]) for k in ("VmRSS", "RssAnon", "RssFile")]
                peaks[pid] = [max(a, b) for a, b in zip(peaks[pid], kib)]
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        wall, _, out = timed(argv)
    finally:
        done.set()
        sampler.join()
    return wall, out, [[kib // 1024 for kib in peaks[pid]] for pid in pids]


def memory(dpstat, data, runs, *rest):
    """Each executor's resident memory split, on fresh clusters (see the module's docstring)."""
    sizes = [int(r) for r in rest if r != "--" and "=" not in r]
    settings = [("default", {})] + [(r, dict([r.split("=", 1)])) for r in rest if "=" in r]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cluster_dir = os.path.join(data, "memory-cluster")
    os.environ["DPSTAT_INSECURE_SEED"] = "1"
    toml = os.path.join(data, "persons_workload.toml")
    with open(toml, "w") as f:
        f.write(WORKLOAD)
    released, results = {}, []
    for rows in sizes:
        path = persons_data(data, rows)["one file"]
        for _ in range(int(runs)):
            for label, extra in settings:
                env = dict(os.environ, DPSTAT=dpstat, DPSTAT_CLUSTER_DIR=cluster_dir, DPSTAT_CLUSTER_PORT="51150",
                           DPSTAT_EXECUTORS="2", **extra)
                up = subprocess.run(["bash", "scripts/cluster-up.sh"], cwd=root, env=env, text=True,
                                    stdout=subprocess.PIPE, check=True, start_new_session=True)
                url = up.stdout.strip().splitlines()[-1]
                try:
                    time.sleep(1)
                    pids = executors(cluster_dir)
                    fresh = []
                    for pid in pids:
                        with open(f"/proc/{pid}/status") as f:
                            fresh.append(next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS")))
                    wall, out, peaks = sampled(pids, [dpstat, "run", toml, "--engine", url, path])
                finally:
                    subprocess.run(["bash", "scripts/cluster-down.sh"], cwd=root, env=env, check=False)
                if released.setdefault(rows, out) != out:
                    sys.exit(f"{label} released another workload at {rows} rows")
                results.append((rows, label, wall, fresh, peaks))
    print("| rows | executors' environment | workload s | fresh RSS MiB | peak RSS MiB | peak anonymous MiB "
          "| peak file pages MiB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for rows, label, wall, fresh, peaks in results:
        cells = [", ".join(str(p[i]) for p in peaks) for i in range(3)]
        print(f"| {rows:,} | {label} | {wall:.2f} | {', '.join(map(str, fresh))} | {' | '.join(cells)} |")
    print()


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
    if sys.argv[1] == "persons":
        persons(*sys.argv[2:])
    elif sys.argv[1] == "memory":
        memory(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
