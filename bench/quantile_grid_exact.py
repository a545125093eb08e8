#!/usr/bin/env python3
"""Does a finer default grid cost accuracy at small n*eps? Computed exactly, not sampled.

    python3 bench/quantile_grid_exact.py        (needs numpy; bench/quantile_peers.sh's venv has it)

For lognormal incomes on [0, 10^6] (exp(N(10.6, 0.8)) in cents, clamped; numpy seed 38) at
n = 200, 1000 and 10000, the median and the 0.9 quantile, eps = 0.1 and 1, this evaluates
dpstat's exponential mechanism -- candidate c with probability proportional to
exp(-eps * s(c) / (2 du)), s(c) = max(b #(x < c) - a n, a n - b #(x <= c)) for q = a/b,
du = max(a, b - a) (add-remove; docs/DESIGN.md 3.6) -- over the multiples of 1, 10, 100, 1000
and 10^4 and over the 2001 even points of the grid before issue 24, and prints the expected
value error: the mean distance from the release to the valid q-quantiles, in percent of their
midpoint. No dpstat binary is run: the probabilities are the mechanism's definition, which
tests/distribution.rs checks the binary against. Not run by `cargo test`.
"""

import numpy as np

STEPS = (1, 10, 100, 1000, 10_000)


def incomes(rng, n):
    return np.clip(np.round(np.exp(rng.normal(10.6, 0.8, n)), 2), 0, 1e6)


def expected_error(xs, candidates, q, eps):
    xs = np.sort(xs)
    n = len(xs)
    a, b = (1, 2) if q == 0.5 else (9, 10)
    below = np.searchsorted(xs, candidates, "left")
    at_or_below = np.searchsorted(xs, candidates, "right")
    score = np.maximum(b * below - a * n, a * n - b * at_or_below)
    du = max(a, b - a)
    weight = np.exp(-eps * (score - score.min()) / (2 * du))
    weight /= weight.sum()
    qn = q * n
    lo, hi = xs[int(np.ceil(qn)) - 1], xs[min(int(np.floor(qn)), n - 1)]
    distance = np.maximum(0, np.maximum(lo - candidates, candidates - hi))
    return (weight * distance).sum() / ((lo + hi) / 2) * 100


def main():
    rng = np.random.default_rng(38)
    print("| n | level | eps | " + " | ".join(f"step {s}" for s in STEPS) + " | 2001 even |")
    print("|---|---|---|" + "---|" * (len(STEPS) + 1))
    for n in (200, 1000, 10_000):
        xs = incomes(rng, n)
        for q in (0.5, 0.9):
            for eps in (0.1, 1.0):
                grids = [np.arange(0, 1e6 + 1, s) for s in STEPS] + [np.linspace(0, 1e6, 2001)]
                cells = [expected_error(xs, g, q, eps) for g in grids]
                label = "median" if q == 0.5 else "q0.9"
                print(f"| {n} | {label} | {eps:g} | " + " | ".join(f"{c:.3f} %" for c in cells) + " |")


if __name__ == "__main__":
    main()
