"""Bounds-free means before and after issue 24 (item 4): relative error and withheld outcomes.

    python3 bench/bounds.py BEFORE AFTER [SEEDS] [WORKDIR]

BEFORE and AFTER are dpstat release binaries (e.g. main's, built from a separate worktree, and
this branch's). For each column shape (`uniform`: integers 0..=100; `lognormal`: exp(N(10, 1))
rounded to cents), n in {1k, 10k, 100k} and eps in {0.1, 1}, the script writes the column
(a fixed generator, so the files are the same for both binaries) and runs

    dpstat mean --col x --eps EPS FILE                          (bounds found privately)
    dpstat mean --col x --eps EPS --lower MIN --upper MAX FILE  (the data's true bounds)

with DPSTAT_INSECURE_SEED = 1..SEEDS (default 30). The relative error is |release - mean| / mean
against the exact mean computed here. Reported per cell: the median relative error over the
released runs, and how many runs were withheld (exit 5; AFTER only) or fell back to the widest
bounds (a note on stderr; BEFORE only). Standard library only.
"""

import os
import random
import statistics
import subprocess
import sys

BEFORE, AFTER = sys.argv[1], sys.argv[2]
SEEDS = int(sys.argv[3]) if len(sys.argv) > 3 else 30
WORK = sys.argv[4] if len(sys.argv) > 4 else "/tmp/dpstat-bounds-bench"
SHAPES = ["uniform", "lognormal"]
SIZES = [1_000, 10_000, 100_000]
EPSILONS = ["0.1", "1"]


def column(shape, n):
    rng = random.Random(f"{shape}-{n}")
    if shape == "uniform":
        values = [rng.randint(0, 100) for _ in range(n)]
    else:
        values = [round(rng.lognormvariate(10, 1), 2) for _ in range(n)]
    path = os.path.join(WORK, f"{shape}_{n}.csv")
    with open(path, "w") as f:
        f.write("x\n")
        f.writelines(f"{v}\n" for v in values)
    return path, values


def run(binary, args, seed):
    env = dict(os.environ, DPSTAT_INSECURE_SEED=str(seed))
    env.pop("DPSTAT_LEDGER", None)
    return subprocess.run([binary, *args], capture_output=True, text=True, env=env)


def measure(binary, args, truth):
    """(relative errors of the released runs, withheld runs, fallbacks to the widest bounds)."""
    errors, withheld, fallback = [], 0, 0
    for seed in range(1, SEEDS + 1):
        out = run(binary, args, seed)
        if out.returncode == 5:
            withheld += 1
            continue
        if out.returncode != 0:
            raise SystemExit(f"{binary} {' '.join(args)}: exit {out.returncode}: {out.stderr}")
        if "no range of values was dense enough" in out.stderr:
            fallback += 1
        errors.append(abs(float(out.stdout) - truth) / abs(truth))
    return errors, withheld, fallback


def median(errors):
    return f"{statistics.median(errors):.3g}" if errors else "-"


def main():
    os.makedirs(WORK, exist_ok=True)
    print(f"median relative error of the bounds-free mean over {SEEDS} seeds (released runs only)")
    print()
    print("| column | n | eps | before | before: widest bounds | after | after: withheld | true bounds |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in SHAPES:
        for n in SIZES:
            path, values = column(shape, n)
            truth = sum(values) / n
            lo, hi = min(values), max(values)
            for eps in EPSILONS:
                free = ["mean", "--col", "x", "--eps", eps, path]
                given = ["mean", "--col", "x", "--eps", eps, "--lower", str(lo), "--upper", str(hi), path]
                b_err, _, b_fallback = measure(BEFORE, free, truth)
                a_err, a_withheld, _ = measure(AFTER, free, truth)
                t_err, _, _ = measure(AFTER, given, truth)
                print(
                    f"| {shape} | {n} | {eps} | {median(b_err)} | {b_fallback}/{SEEDS} | "
                    f"{median(a_err)} | {a_withheld}/{SEEDS} | {median(t_err)} |",
                    flush=True,
                )


main()
