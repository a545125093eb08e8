#!/usr/bin/env python3
"""Which quantile score wins on the peer comparison's cells? Computed exactly, not sampled.

    python3 bench/quantile_score_exact.py       (needs numpy: Debian's python3-numpy, or
                                                 bench/quantile_peers.sh's venv)

On the 48 cells of bench/quantile_peers.py (its four datasets, drawn by its own code with its
seed, n in {200, 1000, 10000}, eps in {0.1, 1}, the median and the 0.9 quantile; every integer
of the bounds a candidate, dpstat's default grid there), this evaluates permute-and-flip
(McKenna & Sheldon 2020), the mechanism dpstat draws exactly (tests/distribution.rs): the
candidates visited in a random order, c stopping the visits with probability
exp(-eps * (s(c) - s_min) / (2 du)); its probabilities are computed by quadrature from its form in
continuous time (`flip_weights`). For q = a/b, n rows, lt = #(x < c), le = #(x <= c), under
add-remove, with each score:

- signed (dpstat's default; docs/DESIGN.md 3.6): max(b lt - a n, a n - b le), du = max(a, b - a);
- opendp (make_quantile_score_candidates): |(b - a) lt - a (n - le)|, du = max(a, b - a);
- unsigned (every valid candidate scores 0, the top; the rank distance to validity outside):
  max(0, signed), du = max(a, b - a);
- sum (signed + opendp: a valid candidate's own run counts, and an invalid one's): du doubled.

and prints, per cell, the expected P(exact), value error (% of the valid quantiles' midpoint)
and rank error (rows), defined as in bench/quantile_peers.py, then how many cell-metrics each
score wins or loses against signed by more than 1 % relative and 0.005 absolute (in the
metric's unit: a probability, percentage points, rows); there is no sampling error. No binary is run. Not run by `cargo test`.

    python3 bench/quantile_score_exact.py neighbours

pairs each cell x with its nearest dataset x' whose valid quantiles are all different: x plus m
rows at one bound, the fewest that do it (m rows at the upper bound move q.n up past the top of
x's valid run, at the lower bound down past its bottom). By group privacy any eps-DP mechanism
has P_x(valid on x) + exp(-m eps) P_x'(valid on x') <= 1, so none can be exact with probability
above p* = 1 / (1 + exp(-m eps)) on both: a mechanism above p* on x is below it on x'. Prints m,
p* and P(exact) on x and on x' of dpstat (signed, permute-and-flip) and of OpenDP's score under
the exponential mechanism, which OpenDP draws (Gumbel noisy max).

    python3 bench/quantile_score_exact.py then

compares, cell by cell, today's default (signed score, every integer a candidate, permute-and-
flip) with the default when issue 38 was filed (the unsigned score, and on the tied data's
[0, 20] the 2,001 multiples of 0.01, every integer elsewhere, as its grid rule gave for bounds
50 or more apart; permute-and-flip, as it drew) and with the exponential mechanism dpstat drew
between them (today's score and grid).
"""

import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quantile_peers as peers  # noqa: E402

KINDS = ("signed", "opendp", "unsigned", "sum")
HIGHER_IS_BETTER = (True, False, False)


def scores(kind, lt, le, n, a, b):
    signed = np.maximum(b * lt - a * n, a * n - b * le)
    opendp = np.abs((b - a) * lt - a * (n - le))
    return {"signed": signed, "opendp": opendp, "unsigned": np.maximum(signed, 0), "sum": signed + opendp}[kind]


def candidates_and_counts(xs, lower, upper, hundredths):
    """Every integer of the bounds (or every multiple of 0.01), with #(x < c) and #(x <= c)."""
    if hundredths:
        candidates = np.arange(lower * 100, upper * 100 + 1, dtype=float) / 100
    else:
        candidates = np.arange(lower, upper + 1, dtype=float)
    lt = np.searchsorted(xs, candidates, "left").astype(np.int64)
    le = np.searchsorted(xs, candidates, "right").astype(np.int64)
    return candidates, lt, le


def runs_of(candidates, lt, le):
    """The runs of equal (lt, le): their first indices and their lengths."""
    cut = np.flatnonzero((np.diff(lt) != 0) | (np.diff(le) != 0)) + 1
    starts = np.concatenate([[0], cut])
    return starts, np.diff(np.concatenate([starts, [len(candidates)]])).astype(float)


GL_X, GL_W = np.polynomial.legendre.leggauss(16)


def flip_weights(s, m, rate):
    """Permute-and-flip's probability of each run of m equal-scored candidates: every candidate
    arrives at a uniform time t in [0, 1] and stops the visits with probability p = exp(-rate d),
    d its score above the best; run j wins when one of its candidates stops first:
    int_0^1 m_j p_j (1 - p_j t)^(m_j - 1) prod_{i != j} (1 - p_i t)^m_i dt, by Gauss-Legendre on
    400 panels up to where the integrand is below e^-120 of its start (runs with p < e^-70 are
    left out: together below 10^-24)."""
    d = s - s.min()
    keep = rate * d < 70
    p, mk = np.exp(-rate * d[keep]), m[keep]
    end = min(1.0, 120.0 / (mk * p).sum())
    edges = np.linspace(0, end, 401)
    out = np.zeros(len(p))
    for a0, a1 in zip(edges[:-1], edges[1:]):
        t = (a1 - a0) / 2 * GL_X + (a1 + a0) / 2
        logs = np.log1p(-np.outer(t, p))
        out += ((a1 - a0) / 2 * GL_W) @ (np.exp((logs @ mk)[:, None] - logs) * (mk * p)[None, :])
    w = np.zeros(len(s))
    w[keep] = out
    return w


def expected(xs, lower, upper, q, eps, kind, hundredths=False, mechanism="flip"):
    """(P(exact), value error %, rank error) of one cell, exactly, by permute-and-flip (dpstat's
    mechanism) or the exponential mechanism (OpenDP's); every integer of the bounds a candidate,
    or with `hundredths` every multiple of 0.01."""
    n = len(xs)
    a, b = (1, 2) if q == 0.5 else (9, 10)
    candidates, lt, le = candidates_and_counts(xs, lower, upper, hundredths)
    starts, m = runs_of(candidates, lt, le)
    s = scores(kind, lt[starts], le[starts], n, a, b).astype(float)
    rate = eps / (2 * max(a, b - a) * (2 if kind == "sum" else 1))
    if mechanism == "flip":
        w = flip_weights(s, m, rate)
    else:
        w = m * np.exp(-rate * (s - s.min()))
        w /= w.sum()
    truth = peers.Truth(list(xs), q)
    rank = np.maximum(0, np.maximum(lt[starts] - truth.qn, truth.qn - le[starts]))
    distance = np.maximum(0, np.maximum(truth.lo - candidates, candidates - truth.hi))
    # A run's mean distance over its candidates: one is drawn uniformly from it.
    mean_distance = np.add.reduceat(distance, starts) / m
    return (w * (rank == 0)).sum(), (w * mean_distance).sum() / truth.scale * 100, (w * rank).sum()


def better_by(x, y, higher):
    """x beats y by more than 1 % relative and 0.005 absolute."""
    gap = x - y if higher else y - x
    return gap > 0.005 and gap > 0.01 * max(abs(x), abs(y))


def cells():
    """The 48 cells, drawn in bench/quantile_peers.py's order from its seed."""
    rng = random.Random(38)
    for name, draw, lower, upper in peers.DATASETS:
        for n in peers.SIZES:
            xs = np.sort(np.asarray(draw(rng, n), dtype=float))
            for eps in peers.EPSILONS:
                for q in peers.LEVELS:
                    yield name, lower, upper, n, xs, eps, q


def nearest_other(xs, lower, upper, q):
    """(m, bound): the fewest rows added at one bound after which no quantile valid on xs is."""
    n = len(xs)
    truth = peers.Truth(list(xs), q)
    options = []
    if truth.hi < upper:
        # Rows at the upper bound leave #(x <= hi) alone and raise q.n by q each.
        le_hi = np.searchsorted(xs, truth.hi, "right")
        options.append((int(np.floor(le_hi / q - n)) + 1, upper))
    if truth.lo > lower:
        # Rows at the lower bound raise #(x < lo) by one each and q.n by q.
        lt_lo = np.searchsorted(xs, truth.lo, "left")
        options.append((int(np.floor((q * n - lt_lo) / (1 - q))) + 1, lower))
    return min(options)


def neighbours():
    print("| data | n | ε | level | m | p* | signed on x | signed on x' | opendp on x | opendp on x' |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    above = {k: 0 for k in ("signed", "opendp")}
    for name, lower, upper, n, xs, eps, q in cells():
        m, at = nearest_other(xs, lower, upper, q)
        other = np.sort(np.concatenate([xs, np.full(m, float(at))]))
        star = 1 / (1 + np.exp(-m * eps))
        shown = []
        for k in above:
            mechanism = "flip" if k == "signed" else "exponential"
            here = expected(xs, lower, upper, q, eps, k, mechanism=mechanism)[0]
            there = expected(other, lower, upper, q, eps, k, mechanism=mechanism)[0]
            above[k] += here > star + 0.005
            shown += [f"{here:.3f}", f"{there:.3f}"]
        level = "median" if q == 0.5 else "q0.9"
        print(f"| {name} | {n} | {eps:g} | {level} | {m} | {star:.3f} | " + " | ".join(shown) + " |", flush=True)
    print("\nm: rows added at one bound to make x'; p* = 1 / (1 + exp(-m eps)), the most any eps-DP")
    print("mechanism can be exact on both. Cells where a score is exact on x with more than p* + 0.005:")
    for k, count in above.items():
        print(f"- {k}: {count}")


def then():
    """Today's default against the issue's (unsigned score; 0.01 apart on the tied data's [0, 20])
    and against the exponential mechanism dpstat drew before permute-and-flip over runs."""
    print("| data | n | ε | level | today | the issue's default | the exponential mechanism |")
    print("|---|---|---|---|---|---|---|")
    worse, better = [0, 0], [0, 0]
    for name, lower, upper, n, xs, eps, q in cells():
        tied = name.startswith("tied")
        now = expected(xs, lower, upper, q, eps, "signed")
        olds = (
            expected(xs, lower, upper, q, eps, "unsigned", hundredths=tied),
            expected(xs, lower, upper, q, eps, "signed", mechanism="exponential"),
        )
        for k, old in enumerate(olds):
            for j, higher in enumerate(HIGHER_IS_BETTER):
                worse[k] += better_by(old[j], now[j], higher)
                better[k] += better_by(now[j], old[j], higher)
        level = "median" if q == 0.5 else "q0.9"
        shown = " | ".join("/".join(f"{v:.3g}" for v in cell) for cell in (now, *olds))
        print(f"| {name} | {n} | {eps:g} | {level} | {shown} |", flush=True)
    print("\nEach cell: P(exact) / value error % / rank error (rows), exactly; all by permute-and-flip")
    print("but the last column.")
    print(f"Cell-metrics (of 144) where today's default is worse than the issue's: {worse[0]}; better: {better[0]}.")
    print(f"Against the exponential mechanism with today's score and grid: worse in {worse[1]}, better in {better[1]}.")


def main():
    if sys.argv[1:] == ["neighbours"]:
        return neighbours()
    if sys.argv[1:] == ["then"]:
        return then()
    tally = {k: [0, 0] for k in KINDS[1:]}
    print("| data | n | ε | level | " + " | ".join(KINDS) + " |")
    print("|---|---|---|---|" + "---|" * len(KINDS))
    for name, lower, upper, n, xs, eps, q in cells():
        cell = {k: expected(xs, lower, upper, q, eps, k) for k in KINDS}
        for k in KINDS[1:]:
            for j, higher in enumerate(HIGHER_IS_BETTER):
                tally[k][0] += better_by(cell[k][j], cell["signed"][j], higher)
                tally[k][1] += better_by(cell["signed"][j], cell[k][j], higher)
        level = "median" if q == 0.5 else "q0.9"
        shown = " | ".join("/".join(f"{v:.3g}" for v in cell[k]) for k in KINDS)
        print(f"| {name} | {n} | {eps:g} | {level} | {shown} |", flush=True)
    print("\nEach cell: P(exact) / value error % / rank error (rows), expected values.")
    print("Cell-metrics (of 144) each score wins / loses against signed:")
    for k, (wins, losses) in tally.items():
        print(f"- {k}: {wins} won, {losses} lost")


if __name__ == "__main__":
    main()
