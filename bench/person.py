"""The targets of issue 25, measured with the release binary (bench/person.sh runs this).

    python3 person.py timing DPSTAT GEN DATA PY ROWS PERSONS RUNS
    python3 person.py rmse DPSTAT GEN DATA SEEDS
    python person.py duckdb FILE K          (run by PY, the venv's python; K = 0: no bound)

Data: bench/gen_person.rs, `id,value`, ROWS rows about PERSONS persons, Zipf rows per person,
values 0..=1000 growing with the person's rows; the rows shuffled (`visits_ROWS.csv`) and the
same rows sorted by id (`visits_ROWS_sorted.csv`).

timing: whole-process wall time, page cache warm: every command runs once as a warm-up, then
RUNS rounds each running every command once in turn (rounds spread a burst of load from other
processes over all commands); the median and the fastest run, the ratios of the medians to
dpstat's row-level mean and to DuckDB's bounded mean, and the peak RSS of one more run
(/usr/bin/time -v). The commands: dpstat `mean --col value --lower 0 --upper 1000 --eps 1`
(row-level), the same with `--privacy-id id --max-rows-per-id 10` on the shuffled file, on the
sorted file, and on the shuffled file with DPSTAT_ID_MEMORY=16 MiB (the spill to temporary files
forced), and DuckDB (python package, default threads) computing avg(value) over all rows and
over the rows with `row_number() over (partition by id order by hash(id, value)) <= 10`, the same
bounded mean without noise (its time includes starting python and importing duckdb, ~0.1 s;
its hash order keeps another sample of each person's rows than dpstat's key, so the values
differ by sampling).
Whether a dpstat run spilled by default is found by one more run with TMPDIR pointing nowhere.
dpstat runs without DPSTAT_INSECURE_SEED (OS randomness, as in production), all cores.

rmse: the person-level mean for K = 1, 2, 5, 10, 20, 50, SEEDS runs each with
DPSTAT_INSECURE_SEED = 1..SEEDS (the seed derives both the noise and the key that chooses each
person's rows, so both vary): at epsilon = 1 on 1M rows / 100k persons (the issue's 10M-row file
is too slow to run 140 times on a small machine; the generator's shape scales with the number of
persons), then on 10k rows / 1k persons at epsilon = 1 and 0.1, where the noise is large enough
to compete with the bias. The target is the mean over ALL rows (what the row-level mean
estimates): truncation moves the kept rows' mean towards the mean of per-person means (K = 1
estimates exactly that), here downwards since heavy persons have larger values. Reported per K:
the rows kept, the truncation bias (exact: a person with R rows keeps a uniform min(R, K) of
them, so the kept mean's expectation is sum min(R, K) * person mean / sum min(R, K), minus the
target), the measured bias^2 and variance over the seeds (population variance, so bias^2 +
variance = MSE), the RMSE, and the median of the 95% noise bound each release states. The
row-level mean (no bound) is the last line: no truncation bias, but epsilon per row is
epsilon * R for a person with R rows.
"""

import json
import os
import statistics
import subprocess
import sys
import time

MEAN = ["mean", "--col", "value", "--lower", "0", "--upper", "1000", "--eps", "1"]


def mean_at(eps):
    return [*MEAN[:-1], eps]
KS = [1, 2, 5, 10, 20, 50]
SPILL_CAP = 16 << 20

for var in ("DPSTAT_INSECURE_SEED", "DPSTAT_LEDGER", "DPSTAT_ID_MEMORY"):
    os.environ.pop(var, None)


def visits(gen, data, rows, persons, sorted_=False):
    path = os.path.join(data, f"visits_{rows}{'_sorted' if sorted_ else ''}.csv")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        with open(path + ".part", "w") as out:
            subprocess.run([gen, str(rows), str(persons), *(["sorted"] if sorted_ else [])], stdout=out, check=True)
        os.replace(path + ".part", path)
    return path


def even(gen, data, rows, persons):
    """ROWS rows split evenly among PERSONS persons, shuffled (`gen_person ROWS PERSONS even`)."""
    path = os.path.join(data, f"even_{rows}_{persons}.csv")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        with open(path + ".part", "w") as out:
            subprocess.run([gen, str(rows), str(persons), "even"], stdout=out, check=True)
        os.replace(path + ".part", path)
    return path


def wall(argv, env=None):
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return time.perf_counter() - start


def measured(argv, env=None):
    """(stdout, peak RSS in MiB) of one run under /usr/bin/time -v."""
    out = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, check=True, env=env)
    rss = next(int(l.rsplit(":", 1)[1]) for l in out.stderr.splitlines() if "Maximum resident set size" in l)
    return out.stdout.strip(), rss / 1024


def spills(argv, env):
    """Whether a dpstat run writes temporary files: with TMPDIR pointing nowhere it then fails."""
    env = dict(env or os.environ, TMPDIR="/nonexistent/dpstat-person-bench")
    out = subprocess.run(argv, capture_output=True, text=True, env=env)
    return out.returncode != 0 and "temporary file" in out.stderr


def timing(dpstat, gen, data, py, rows, persons, runs):
    rows, persons, runs = int(rows), int(persons), int(runs)
    shuffled = visits(gen, data, rows, persons)
    ordered = visits(gen, data, rows, persons, sorted_=True)
    person = [*MEAN, "--privacy-id", "id", "--max-rows-per-id", "10"]
    spill_env = dict(os.environ, DPSTAT_ID_MEMORY=str(SPILL_CAP))
    me = os.path.abspath(__file__)
    # BEFORE=path: another binary's dpstat commands too, in the same rounds (a before/after
    # table from one run), each compared with its own row-level mean.
    binaries = [("", dpstat)] + ([(" [before]", os.environ["BEFORE"])] if os.environ.get("BEFORE") else [])
    commands = [("cat (reading the file)", ["cat", shuffled], None)]
    for tag, binary in binaries:
        commands += [
            (f"dpstat mean, row-level{tag}", [binary, *MEAN, shuffled], None),
            (f"dpstat mean, person K=10{tag}", [binary, *person, shuffled], None),
            (f"dpstat mean, person K=10, sorted file{tag}", [binary, *person, ordered], None),
            (f"dpstat mean, person K=10, spill forced ({SPILL_CAP >> 20} MiB){tag}", [binary, *person, shuffled],
             spill_env),
        ]
    commands += [
        ("duckdb avg, all rows", [py, me, "duckdb", shuffled, "0"], None),
        ("duckdb avg, bounded K=10", [py, me, "duckdb", shuffled, "10"], None),
        ("duckdb avg, bounded K=10, sorted file", [py, me, "duckdb", ordered, "10"], None),
    ]
    for _, argv, env in commands:
        wall(argv, env)
    times = {name: [] for name, _, _ in commands}
    for _ in range(runs):
        for name, argv, env in commands:
            times[name].append(wall(argv, env))
    median = {name: statistics.median(t) for name, t in times.items()}
    row_level, duck = median["dpstat mean, row-level"], median["duckdb avg, bounded K=10"]
    size = os.path.getsize(shuffled) / 1e6
    print(f"## 1. Time and memory: {rows:,} rows, {persons:,} persons, {size:.0f} MB, K = 10")
    print(f"median and fastest of {runs} rounds after a warm-up; peak RSS of one more run\n")
    print("| command | median s | min s | vs row-level | vs duckdb bounded | peak RSS MiB | spilled | value |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    rss = {}
    for name, argv, env in commands:
        value, rss[name] = measured(argv, env)
        spilled = ("yes" if spills(argv, env) else "no") if name.startswith("dpstat mean, person") else "-"
        value = "-" if name.startswith("cat") else f"{float(value):.4f}"
        own = median["dpstat mean, row-level [before]"] if name.endswith("[before]") else row_level
        print(
            f"| {name} | {median[name]:.3f} | {min(times[name]):.3f} | {median[name] / own:.2f} "
            f"| {median[name] / duck:.2f} | {rss[name]:.1f} | {spilled} | {value} |",
            flush=True,
        )
    print()
    print("peak RSS of one run of the person-level mean (K = 10, default memory cap) on rows split")
    print("evenly among persons, shuffled (bench/gen_person.rs `even`):\n")
    print("| file | peak RSS MiB | wall s | spilled |")
    print("|---|---:|---:|---|")
    for persons_even in (1, rows // 10):
        path = even(gen, data, rows, persons_even)
        argv = [dpstat, *person, path]
        start = time.perf_counter()
        _, peak = measured(argv)
        took = time.perf_counter() - start
        spilled = "yes" if spills(argv, None) else "no"
        print(f"| {rows:,} rows of {persons_even:,} person(s) | {peak:.1f} | {took:.2f} | {spilled} |", flush=True)
        rss[f"even {persons_even}"] = peak
    p = median["dpstat mean, person K=10"]
    print()
    print("targets (issues 25 and 36), person-level mean on the shuffled file:")
    print(f"- faster than DuckDB's bounded mean: {p:.3f} s vs {duck:.3f} s: {'met' if p < duck else 'NOT met'}")
    ratio = p / row_level
    print(f"- within 3x (aim 2x) of the row-level mean: {ratio:.2f}x: {'met' if ratio <= 3 else 'NOT met'}")
    peak = max(v for k, v in rss.items() if k.startswith(("dpstat mean, person", "even")) and "[before]" not in k)
    print(f"- peak memory <= 64 MiB (issue 36): largest {peak:.1f} MiB: {'met' if peak <= 64 else 'NOT met'}")
    sorted_ratio = median["dpstat mean, person K=10, sorted file"] / row_level
    duck_sorted = median["duckdb avg, bounded K=10, sorted file"]
    p_sorted = median["dpstat mean, person K=10, sorted file"]
    print(f"- sorted file: {sorted_ratio:.2f}x the row-level mean, {p_sorted:.3f} s vs DuckDB's {duck_sorted:.3f} s: "
          f"{'met' if sorted_ratio <= 3 and p_sorted < duck_sorted else 'NOT met'}")


def person_values(path):
    """Each person's values, from the file."""
    values = {}
    with open(path) as f:
        next(f)
        for line in f:
            pid, v = line.rstrip("\n").split(",")
            values.setdefault(pid, []).append(int(v))
    return list(values.values())


def release(dpstat, args, seed):
    env = dict(os.environ, DPSTAT_INSECURE_SEED=str(seed))
    out = subprocess.run([dpstat, *args, "--format", "json"], capture_output=True, text=True, check=True, env=env)
    r = json.loads(out.stdout)
    return r["value"], r["accuracy"]["error_bound"]


def rmse_table(dpstat, path, seeds, eps):
    people = person_values(path)
    counts = sorted(len(v) for v in people)
    n = sum(counts)
    target = sum(sum(v) for v in people) / n
    per_person = statistics.fmean(sum(v) / len(v) for v in people)
    print(f"file: {n:,} rows, {len(people):,} persons; rows per person: median {counts[len(counts) // 2]}, "
          f"90th percentile {counts[int(0.9 * len(counts))]}, 99th {counts[int(0.99 * len(counts))]}, "
          f"largest {counts[-1]}")
    print(f"target: mean over all rows = {target:.4f} (mean of per-person means = {per_person:.4f}); "
          f"{seeds} seeded runs per line, epsilon = {eps}\n")
    print("| K | rows kept | truncation bias (exact) | bias² | variance | RMSE | 95% noise bound (median) "
          "| ε per person |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in [*KS, None]:
        if k is None:
            args, kept, expected = [*mean_at(eps), path], n, target
        else:
            args = [*mean_at(eps), "--privacy-id", "id", "--max-rows-per-id", str(k), path]
            kept = sum(min(len(v), k) for v in people)
            expected = sum(min(len(v), k) * sum(v) / len(v) for v in people) / kept
        got = [release(dpstat, args, seed) for seed in range(1, seeds + 1)]
        values = [v for v, _ in got]
        bias2 = (statistics.fmean(values) - target) ** 2
        variance = statistics.pvariance(values)
        rmse = statistics.fmean((v - target) ** 2 for v in values) ** 0.5
        bound = statistics.median(b for _, b in got)
        label = "none (row-level)" if k is None else str(k)
        unit = f"{counts[-1] * float(eps):g} (largest person)" if k is None else eps
        print(f"| {label} | {kept:,} | {expected - target:+.3f} | {bias2:.4g} | {variance:.4g} | {rmse:.3f} "
              f"| {bound:.3g} | {unit} |", flush=True)


def rmse(dpstat, gen, data, seeds):
    seeds = int(seeds)
    print("## 2. RMSE of the person-level mean against K\n")
    for rows, persons, eps in [(1_000_000, 100_000, "1"), (10_000, 1_000, "1"), (10_000, 1_000, "0.1")]:
        rmse_table(dpstat, visits(gen, data, rows, persons), seeds, eps)
        print()


def duckdb(path, k):
    import duckdb as db

    k = int(k)
    source = f"read_csv('{path}')"
    if k == 0:
        sql = f"select avg(value) from {source}"
    else:
        sql = (
            "select avg(value) from (select value, row_number() over "
            f"(partition by id order by hash(id, value)) as r from {source}) where r <= {k}"
        )
    print(db.sql(sql).fetchall()[0][0])


if __name__ == "__main__":
    {"timing": timing, "rmse": rmse, "duckdb": duckdb}[sys.argv[1]](*sys.argv[2:])
