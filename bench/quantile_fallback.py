"""Where QuantileTree's one mark in the peer table comes from (issue 38): its release when the
noisy counts tell it little.

python-dp's QuantileTree (height 4, branching 16) at n = 200, eps = 0.1 releases exactly
lower + q (upper - lower) in about a fifth of its releases, whatever the data. On the peer
table's uniform integers 0-100 that value, 90 for q = 0.9, is the true quantile, so the tree is
"exact" there more often than dpstat; on data of the same size and bounds whose 0.9 quantile is
elsewhere it is not. Prints, per dataset, dpstat's and the tree's P(exact) / value error % /
rank error (rows) (quantile_peers.py's metrics, mean ± standard error over R releases) and the
tree's share of releases equal to 90.0.

    R=1000 target/quantile-peers-venv/bin/python bench/quantile_fallback.py [DPSTAT]

Uses the venv bench/quantile_peers.sh makes. Not run by `cargo test`.
"""

import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quantile_peers as peers  # noqa: E402

Q, EPS, LOWER, UPPER, N = 0.9, 0.1, 0, 100, 200


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/dpstat"
    reps = int(os.environ.get("R", "300"))
    rng = random.Random(38)
    datasets = [
        ("uniform 0-100 (the peer table's)", [rng.randint(0, 100) for _ in range(N)]),
        ("uniform 0-50", [rng.randint(0, 50) for _ in range(N)]),
        ("uniform 20-100", [rng.randint(20, 100) for _ in range(N)]),
        ("every row 10", [10] * N),
    ]
    fallback = LOWER + Q * (UPPER - LOWER)
    print(f"q = {Q}, eps = {EPS}, n = {N}, bounds [{LOWER}, {UPPER}], R = {reps}\n")
    print("| data | true | dpstat | QuantileTree | tree's share of releases equal to", fallback, "|")
    print("|---|---:|---|---|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, values in datasets:
            truth = peers.Truth(values, Q)
            path = os.path.join(tmp, "x.csv")
            with open(path, "w") as f:
                f.write("x\n" + "\n".join(str(v) for v in values) + "\n")
            ours = [peers.dpstat_release(binary, path, s, EPS, Q, LOWER, UPPER) for s in range(1, reps + 1)]
            tree = peers.pydp_tree(values, Q, EPS, LOWER, UPPER)
            theirs = [tree(s) for s in range(1, reps + 1)]
            shown = [
                " / ".join(f"{m:.3g} ± {se:.2g}" for m, se in peers.summarize([truth.metrics(c) for c in releases]))
                for releases in (ours, theirs)
            ]
            share = sum(c == fallback for c in theirs) / reps
            true = truth.lo if truth.lo == truth.hi else f"{truth.lo}-{truth.hi}"
            print(f"| {name} | {true} | {shown[0]} | {shown[1]} | {share:.3f} |")


if __name__ == "__main__":
    main()
