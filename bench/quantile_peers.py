#!/usr/bin/env python3
"""dpstat's bounded quantiles against OpenDP, Google's python-dp and diffprivlib (issue 38).

    bench/quantile_peers.sh [DPSTAT]     (sets up the venv, then runs this file in it)
    R=30 bench/quantile_peers.sh         (fewer repetitions per cell; default 100)

Not run by `cargo test`: it needs the peers, installed into a venv by quantile_peers.sh.

Four generated datasets (Python's `random`, seed 38, the same for every tool), each with public
bounds given to every tool alike:
- uniform integers 0-100, bounds [0, 100];
- ages 18-90 (18 + a gamma(2.2, 11) draw, rounded down, at most 90), bounds [18, 90];
- lognormal incomes, round(exp(N(10.6, 0.8))) at most 10^6, bounds [0, 10^6];
- heavily tied values on [0, 20] (nine values, one holding 30 % of the rows), bounds [0, 20];
at n = 200, 1000 and 10000, eps = 0.1 and 1 (pure), the median and the 0.9 quantile.

Tools, each at its defaults apart from the bounds and eps:
- dpstat: `median` or `quantile --q 0.9 --lower L --upper U --eps E` (the default candidates),
  one process per release, DPSTAT_INSECURE_SEED = 1..R (the releases are NOT private);
- OpenDP: make_private_quantile (add-remove, max divergence) over every integer of the bounds
  (dpstat's default) but the multiples of 100 on [0, 10^6] (a million candidates take OpenDP
  about 5 s a release), its scale set so that the map gives eps;
- python-dp: Percentile (dtype float), and for medians of integer data Median (dtype int):
  Percentile with dtype int returned 0 for q = 0.9 in every trial (python-dp 1.1.5), so the
  int column is left empty for q = 0.9;
- python-dp QuantileTree (height 4, branching 16, Laplace noise, delta 0);
- diffprivlib: tools.quantile (Smith's mechanism over the intervals between the data).

Per cell and tool, over R releases: P(exact), the share of releases c that are valid
q-quantiles (#(x < c) <= q n <= #(x <= c)); the value error, the mean distance from c to the
valid q-quantiles in percent of their midpoint; the rank error, the mean distance in rows from
q n to [#(x < c), #(x <= c)] (tie-aware); each with its standard error. A peer's cell is marked
with * where it beats dpstat by more than two standard errors of the difference.
"""

import bisect
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")

SIZES = (200, 1000, 10000)
EPSILONS = (0.1, 1.0)
LEVELS = (0.5, 0.9)
TIED_VALUES = (0, 5, 8, 10, 12, 14, 16, 18, 20)
TIED_WEIGHTS = (2, 3, 5, 20, 30, 15, 15, 6, 4)


def uniform(rng, n):
    return [rng.randint(0, 100) for _ in range(n)]


def ages(rng, n):
    return [min(90, int(18 + rng.gammavariate(2.2, 11.0))) for _ in range(n)]


def incomes(rng, n):
    return [min(10**6, round(math.exp(rng.gauss(10.6, 0.8)))) for _ in range(n)]


def tied(rng, n):
    return rng.choices(TIED_VALUES, weights=TIED_WEIGHTS, k=n)


DATASETS = (
    ("uniform 0-100", uniform, 0, 100),
    ("ages 18-90", ages, 18, 90),
    ("incomes 0-1e6", incomes, 0, 10**6),
    ("tied 0-20", tied, 0, 20),
)


class Truth:
    def __init__(self, values, q):
        self.xs = sorted(values)
        self.n = len(self.xs)
        self.qn = q * self.n
        tenths = round(q * 10) * self.n
        m, k = tenths // 10, -(-tenths // 10)
        self.lo, self.hi = self.xs[k - 1], self.xs[min(m, self.n - 1)]
        self.scale = max(abs(self.lo + self.hi) / 2, 1e-9)

    def metrics(self, c):
        below = bisect.bisect_left(self.xs, c)
        at_or_below = bisect.bisect_right(self.xs, c)
        rank = max(0.0, below - self.qn, self.qn - at_or_below)
        distance = max(0.0, self.lo - c, c - self.hi)
        return (1.0 if rank == 0 else 0.0, 100 * distance / self.scale, rank)


def dpstat_release(binary, path, seed, eps, q, lower, upper):
    kind = ["median"] if q == 0.5 else ["quantile", "--q", str(q)]
    args = [binary, *kind, "--col", "x", "--lower", str(lower), "--upper", str(upper), "--eps", str(eps)]
    env = dict(os.environ, DPSTAT_INSECURE_SEED=str(seed))
    env.pop("DPSTAT_LEDGER", None)
    out = subprocess.run([*args, "--format", "json", path], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[0])["quantiles"][0]["value"]


def opendp_tool(values, q, eps, lower, upper):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    # Every integer, as dpstat's default, but on [0, 10^6] the multiples of 100: a million
    # candidates cost OpenDP about 5 s a release, and steps 1 and 100 give the exponential
    # mechanism the same expected error to 0.06 points (bench/quantile_grid_exact.py).
    step = 100 if upper - lower > 10**5 else 1
    candidates = [float(c) for c in range(lower, upper + 1, step)]
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))

    def make(scale):
        return dp.m.make_private_quantile(domain, dp.symmetric_distance(), dp.max_divergence(), candidates, q, scale)

    scale = make(1.0).map(1) / eps
    meas = make(scale)
    assert meas.map(1) <= eps * (1 + 1e-9), meas.map(1)
    data = [float(v) for v in values]
    return lambda seed: meas(data)


def pydp_percentile(values, q, eps, lower, upper):
    from pydp.algorithms.laplacian import Percentile

    data = [float(v) for v in values]
    return lambda seed: Percentile(percentile=q, epsilon=eps, lower_bound=lower, upper_bound=upper, dtype="float").quick_result(data)


def pydp_int(values, q, eps, lower, upper):
    from pydp.algorithms.laplacian import Median

    if q != 0.5:
        return None
    data = [int(v) for v in values]
    return lambda seed: Median(epsilon=eps, lower_bound=lower, upper_bound=upper, dtype="int").quick_result(data)


def pydp_tree(values, q, eps, lower, upper):
    from pydp.algorithms.quantile_tree import QuantileTree

    def run(seed):
        tree = QuantileTree(lower, upper, 4, 16)
        for v in values:
            tree.add_entry(float(v))
        return tree.compute_quantiles(eps, 0.0, 1, 1, [q], "laplace")[0]

    return run


def diffprivlib_tool(values, q, eps, lower, upper):
    from diffprivlib.tools import quantile

    data = [float(v) for v in values]
    return lambda seed: float(quantile(data, q, epsilon=eps, bounds=(lower, upper), random_state=seed))


PEERS = (
    ("OpenDP", opendp_tool),
    ("python-dp", pydp_percentile),
    ("python-dp int", pydp_int),
    ("QuantileTree", pydp_tree),
    ("diffprivlib", diffprivlib_tool),
)
TOOLS = ("dpstat",) + tuple(name for name, _ in PEERS)
METRICS = ("P(exact)", "value error %", "rank error (rows)")
HIGHER_IS_BETTER = (True, False, False)


def summarize(samples):
    """Per metric: (mean, standard error)."""
    r = len(samples)
    out = []
    for j in range(3):
        xs = [s[j] for s in samples]
        mean = sum(xs) / r
        var = sum((x - mean) ** 2 for x in xs) / (r - 1) if r > 1 else 0.0
        out.append((mean, math.sqrt(var / r)))
    return out


def beats(peer, ours, higher):
    """The peer beats dpstat by more than two standard errors of the difference."""
    (pm, ps), (om, os_) = peer, ours
    gap = pm - om if higher else om - pm
    return gap > 2 * math.sqrt(ps * ps + os_ * os_) and gap > 0


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/dpstat"
    reps = int(os.environ.get("R", "100"))
    rng = random.Random(38)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, draw, lower, upper in DATASETS:
            for n in SIZES:
                values = draw(rng, n)
                path = os.path.join(tmp, "x.csv")
                with open(path, "w") as f:
                    f.write("x\n" + "\n".join(str(v) for v in values) + "\n")
                for eps in EPSILONS:
                    for q in LEVELS:
                        truth = Truth(values, q)
                        cell = {"dpstat": summarize([truth.metrics(dpstat_release(binary, path, s, eps, q, lower, upper)) for s in range(1, reps + 1)])}
                        for peer, make in PEERS:
                            run = make(values, q, eps, lower, upper)
                            cell[peer] = None if run is None else summarize([truth.metrics(run(s)) for s in range(1, reps + 1)])
                        label = (name, n, eps, "median" if q == 0.5 else "q0.9", truth)
                        results.append((label, cell))
                        print(f"done {name} n={n} eps={eps} q={q}", file=sys.stderr, flush=True)
    print(f"R = {reps} releases per cell and tool; mean ± standard error; * a peer better than dpstat by more than 2 s.e.\n")
    marks = {peer: [0, 0, 0] for peer, _ in PEERS}
    for j, metric in enumerate(METRICS):
        print(f"### {metric}\n")
        print("| data | n | ε | level | true | " + " | ".join(TOOLS) + " |")
        print("|---|---|---|---|---|" + "---|" * len(TOOLS))
        for (name, n, eps, level, truth), cell in results:
            ours = cell["dpstat"][j]
            row = []
            for tool in TOOLS:
                got = cell[tool]
                if got is None:
                    row.append("–")
                    continue
                mean, se = got[j]
                mark = ""
                if tool != "dpstat" and beats(got[j], ours, HIGHER_IS_BETTER[j]):
                    mark = " *"
                    marks[tool][j] += 1
                row.append(f"{mean:.3g} ± {se:.2g}{mark}")
            true = f"{truth.lo:g}" if truth.lo == truth.hi else f"{truth.lo:g}–{truth.hi:g}"
            print(f"| {name} | {n} | {eps:g} | {level} | {true} | " + " | ".join(row) + " |")
        print()
    print("Cells where a peer beats dpstat by more than 2 s.e. (P(exact), value error, rank error):")
    for peer, m in marks.items():
        print(f"- {peer}: {m[0]}, {m[1]}, {m[2]}")


if __name__ == "__main__":
    main()
