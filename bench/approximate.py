"""The targets of issue 15, measured with the release binary (bench/approximate.sh runs this).

    python3 approximate.py DPSTAT GEN DATA RUNS

1. A workload of k counts (k = 100, and the k around the crossover) on a generated file
   (bench/gen.rs, 100k rows), equal shares of the total, at (eps = 1, delta = 1e-6): Laplace at
   eps/k per count against Gaussian at rho/k per count, rho = the largest that is (1, 1e-6)-DP
   (dpstat derives it and prints it exactly). Measured: RMSE per release over RUNS runs of the
   whole workload (RUNS * k errors each), against the true counts computed here from the file.
   Exact: the RMSE of the discrete Laplace (scale k/eps) and of the discrete Gaussian
   (sigma^2 = k/(2 rho)) from their pmfs, for k = 1..40; the crossover is the least k where the
   Gaussian's is smaller. `dpstat plan run` gives the same verdict from the 95% bounds.
2. Keys found in the data: a file of 1M rows over 10,000 distinct keys whose counts follow a
   Zipf law (count of the i-th key about N/(i H), H the harmonic number), rows in a fixed
   shuffled order; `histogram --col key --discover --eps 1 --delta 1e-7` under both units:
   keys released (median over RUNS runs), the threshold, wall time and peak RSS
   (/usr/bin/time -v), with a public-categories histogram of the same column for scale.

dpstat runs without DPSTAT_INSECURE_SEED (the operating system's randomness, as in production).
"""

import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from fractions import Fraction

DPSTAT, GEN, DATA, RUNS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
EPS, DELTA = 1, "1e-6"
ROWS = 100_000


def run(args, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("DPSTAT_INSECURE_SEED", "DPSTAT_LEDGER")}
    return subprocess.run([DPSTAT, *args], capture_output=True, text=True, check=True, env=env, **kw).stdout


def people():
    path = os.path.join(DATA, f"people_{ROWS}.csv")
    if not os.path.exists(path):
        with open(path, "w") as out:
            subprocess.run([GEN, str(ROWS)], stdout=out, check=True)
    return path


def filters_and_truths(path):
    """100 distinct equality filters and their true counts, from the file itself."""
    rows = []
    with open(path) as f:
        header = f.readline().strip().split(",")
        for line in f:
            rows.append(dict(zip(header, line.strip().split(","))))
    filters = [f"age={a}" for a in range(18, 91)]
    filters += [f"region={r}" for r in ["north", "south", "east", "west", "central", "islands"]]
    filters += [f"urban_rural={u}" for u in ["1", "2"]]
    filters += [f"score={s / 10:.1f}" for s in range(500, 519)]
    filters = filters[:100]
    truths = []
    for flt in filters:
        col, val = flt.split("=")
        truths.append(sum(1 for r in rows if r[col] == val))
    return filters, truths


def workload(path, filters, noise):
    head = 'epsilon = "1"\n'
    if noise == "gaussian":
        head += f'noise = "gaussian"\ndelta = "{DELTA}"\n'
    body = "".join(f'[[query]]\nname = "q{i}"\nkind = "count"\nwhere = ["{f}"]\n' for i, f in enumerate(filters))
    with open(path, "w") as f:
        f.write(head + body)
    return path


def measured_rmse(data, filters, truths, noise, runs):
    w = workload(os.path.join(DATA, f"w_{noise}_{len(filters)}.toml"), filters, noise)
    squares, n, rho = 0.0, 0, None
    for _ in range(runs):
        for line, truth in zip(run(["run", w, "--format", "json", data]).splitlines(), truths):
            release = json.loads(line)
            squares += (release["value"] - truth) ** 2
            n += 1
            rho = release.get("total_rho_exact", rho)
    return math.sqrt(squares / n), rho


def laplace_rmse(scale):
    """Exact RMSE of the discrete Laplace with P(z) ~ exp(-|z|/scale): Var = 2p/(1-p)^2."""
    p = math.exp(-1 / scale)
    return math.sqrt(2 * p / (1 - p) ** 2)


def gaussian_rmse(sigma2):
    """Exact RMSE of the discrete Gaussian with P(z) ~ exp(-z^2/(2 sigma2)), by summing the pmf."""
    reach = int(40 * math.sqrt(sigma2)) + 40
    w = [math.exp(-z * z / (2 * sigma2)) for z in range(-reach, reach + 1)]
    return math.sqrt(sum(wi * z * z for wi, z in zip(w, range(-reach, reach + 1))) / sum(w))


def part_one():
    data = people()
    filters, truths = filters_and_truths(data)
    print(f"## 1. A workload of k counts at (epsilon = {EPS}, delta = {DELTA}), equal shares")
    print(f"file: bench/gen.rs, {ROWS} rows; {RUNS} runs of each workload; dpstat unseeded\n")
    _, rho_text = measured_rmse(data, filters[:1], truths[:1], "gaussian", 1)
    rho = Fraction(rho_text)
    print(f"rho = rho_for(1, 1e-6) = {rho_text} ~ {float(rho):.6f} (printed by dpstat run)\n")
    exact = []
    for k in range(1, 41):
        exact.append((k, laplace_rmse(k / EPS), gaussian_rmse(k / (2 * float(rho)))))
    crossover = next(k for k, l, g in exact if g < l)
    print("| k | Laplace RMSE (measured) | Gaussian RMSE (measured) | Laplace (exact) | Gaussian (exact) | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for k in sorted({crossover - 1, crossover, crossover + 1, 50, 100}):
        l_meas, _ = measured_rmse(data, filters[:k], truths[:k], "laplace", RUNS)
        g_meas, _ = measured_rmse(data, filters[:k], truths[:k], "gaussian", RUNS)
        l_ex, g_ex = laplace_rmse(k / EPS), gaussian_rmse(k / (2 * float(rho)))
        print(f"| {k} | {l_meas:.2f} | {g_meas:.2f} | {l_ex:.2f} | {g_ex:.2f} | {l_meas / g_meas:.2f} |")
    print(f"\ncrossover (exact RMSE): Gaussian is smaller from k = {crossover} on "
          f"(k = {crossover - 1}: Laplace {exact[crossover - 2][1]:.2f} vs Gaussian {exact[crossover - 2][2]:.2f}; "
          f"k = {crossover}: {exact[crossover - 1][1]:.2f} vs {exact[crossover - 1][2]:.2f})")
    verdicts = {}
    for k in range(1, 41):
        w = workload(os.path.join(DATA, f"plan_{k}.toml"), filters[:k], "laplace")
        verdicts[k] = json.loads(run(["plan", "run", w, "--delta", DELTA, "--format", "json"]))["less_error"]
    first = next(k for k in range(1, 41) if verdicts[k] == "gaussian")
    print(f"crossover (dpstat plan run, 95% bounds): Gaussian gives less error from k = {first} on\n")


def zipf_file(keys=10_000, rows=1_000_000):
    path = os.path.join(DATA, f"zipf_{keys}_{rows}.csv")
    if os.path.exists(path):
        return path
    h = sum(1 / i for i in range(1, keys + 1))
    counts = [max(1, round(rows / (i * h))) for i in range(1, keys + 1)]
    names = [f"k{i:05d}" for i in range(1, keys + 1)]
    column = [name for name, c in zip(names, counts) for _ in range(c)]
    random.Random(15).shuffle(column)
    with open(path, "w") as f:
        f.write("key\n")
        f.write("\n".join(column))
        f.write("\n")
    return path


def timed(args):
    start = time.perf_counter()
    report = subprocess.run(["/usr/bin/time", "-v", DPSTAT, *args], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    rss = next(int(l.split()[-1]) for l in report.stderr.splitlines() if "Maximum resident set size" in l)
    return report.stdout, wall, rss / 1024


def part_two():
    path = zipf_file()
    with open(path) as f:
        rows = sum(1 for _ in f) - 1
    counts = {}
    with open(path) as f:
        next(f)
        for line in f:
            counts[line.strip()] = counts.get(line.strip(), 0) + 1
    print("## 2. Keys found in the data: 10,000 distinct keys, Zipf counts")
    print(f"file: {rows} rows, {len(counts)} distinct keys (largest count {max(counts.values())}, "
          f"smallest {min(counts.values())}); {RUNS} runs each; wall time and peak RSS by /usr/bin/time -v\n")
    print("| unit | threshold | keys with count >= threshold | keys released (median, min-max) | wall s (median) | peak RSS MiB (max) |")
    print("|---|---:|---:|---:|---:|---:|")
    for unit in ["add-remove", "replace"]:
        args = ["histogram", "--col", "key", "--discover", "--eps", "1", "--delta", "1e-7", "--neighbours", unit,
                "--format", "json", path]
        released, walls, rsss, tau = [], [], [], None
        for _ in range(RUNS):
            out, wall, rss = timed(args)
            release = json.loads(out)
            released.append(release["discovery"]["keys_released"])
            tau = release["discovery"]["threshold"]
            walls.append(wall)
            rsss.append(rss)
        above = sum(1 for c in counts.values() if c >= tau)
        print(f"| {unit} | {tau} | {above} | {statistics.median(released):.0f} ({min(released)}-{max(released)}) | "
              f"{statistics.median(walls):.2f} | {max(rsss):.1f} |")
    categories = ",".join(sorted(counts))
    _, wall, rss = timed(["histogram", "--col", "key", "--categories", categories, "--eps", "1", path])
    print(f"\nfor scale, a histogram of the same column over the 10,000 keys as public categories: "
          f"{wall:.2f} s, {rss:.1f} MiB")


if __name__ == "__main__":
    part_one()
    part_two()
