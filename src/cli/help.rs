//! The long help texts of the subcommands: sensitivities and worked examples, and the build
//! facts `--version` states.

/// `dpstat --version`: the version and the build facts a privacy review asks about.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\nrandomness: ChaCha20 seeded from the operating system's CSPRNG, once per run; \
     no entropy is an error, never a fallback",
    "\nnoise:      exact discrete Laplace and (--noise gaussian) discrete Gaussian samplers \
     (Canonne, Kamath, Steinke 2020), integer and rational arithmetic only, no floating point",
    "\napprox DP:  --noise gaussian is rho-zCDP, stated as (epsilon, delta) by CKS 2020 Cor. 13 \
     rounded up; --discover is (epsilon, delta)-DP by thresholding; both opt-in",
    "\nsums:       exact fixed-point on a power-of-two grid chosen from the flags, never from the data",
    "\ntest hook:  DPSTAT_INSECURE_SEED=<u64> makes the noise reproducible and NOT private; \
     every run with it warns on stderr, is marked in its JSON and is refused with --ledger; \
     =A..B runs the command once per seed from A to B-1"
);

pub const COUNT_HELP: &str = "\
Sensitivity (noise: discrete Laplace on the integers, scale Δ/ε):
  add-remove  Δ = 1   one row more or less moves the count by 1
  replace     Δ = 1   a changed row can start or stop matching --where

With --noise gaussian: discrete Gaussian noise of variance Δ₂²/(2ρ), Δ₂ = 1
(by groups under replace, Δ₂ = √2): ρ-zCDP, stated as the (ε, δ) it converts to
at --delta.

Worked examples:
  dpstat count --where urban_rural=2 --eps 0.1 fixtures/people.csv
    Δ = 1, scale = 1/0.1 = 10: the printed count is within ±30 of the true
    count with probability 0.95 (`dpstat plan count --eps 0.1` says the same
    without data).
  dpstat count --by region --discover --eps 1 --delta 1e-7 fixtures/people.csv
    one count per region found in the data; a region is shown only if its
    noisy count reaches the threshold that ε and δ set (19 here: a tenth of ε
    and δ tests the number of keys against --max-keys, the rest selects them):
    (ε, δ)-DP.
  dpstat count --noise gaussian --eps 1 --delta 1e-6 fixtures/people.csv
    Gaussian noise at the largest ρ that is (1, 1e-6)-DP; pays off in large
    workloads (`dpstat plan count --eps 1 --delta 1e-6` compares the two).";

pub const SUM_HELP: &str = "\
Sensitivity (values clamped to [L, U]; noise: discrete Laplace of scale Δ/ε
on a 2^k grid):
  add-remove  Δ = max(|L|, |U|)   a row's clamped value is added or removed
  replace     Δ = U − L           a row's value changes anywhere within [L, U]

Worked example:
  dpstat sum --col income --lower 0 --upper 200000 --eps 0.5 fixtures/people.csv
    add-remove: Δ = max(0, 200000) = 200000, scale = 200000/0.5 = 400000: the
    released sum is within ±1198293 of the true clamped sum with probability
    0.95 (the JSON's error_bound, which this plan prints as ±1200000:
    `dpstat plan sum --lower 0 --upper 200000 --eps 0.5`; -E prints it rounded
    up, ±1300000, so that it still covers the printed, rounded sum).";

pub const MEAN_HELP: &str = "\
Sensitivity (values clamped to [L, U]):
  add-remove  n is private: ε is split in two halves, a sum of values shifted
              by the midpoint (L+U)/2 with Δ = (U − L)/2 and a count with
              Δ = 1; the release is midpoint + noisy sum / max(1, noisy count),
              clamped to [L, U]. The true n is never used.
  replace     n is public: a noisy sum with Δ = U − L divided by n, i.e.
              Δ = (U − L)/n for the mean.

Worked examples:
  dpstat mean -c age -l 0 -u 100 -e 1 --neighbours replace fixtures/people.csv
    replace with n = 200 rows: Δ = (100 − 0)/200 = 0.5, scale = 0.5/1 = 0.5:
    the released mean is within ±1.5 of the true clamped mean with probability
    0.95: `dpstat plan mean -l 0 -u 100 -e 1 --neighbours replace --rows 200`.
  dpstat mean -c income -l 0 -u 200000 -e 0.5 -E fixtures/people.csv
    -E prints the mean with its 95% error bound, `V ± E (95%)`, rounded to the
    digits the noise leaves meaningful, the bound rounded up to cover it.";

pub const HISTOGRAM_HELP: &str = "\
Sensitivity (L1 over all bins; every bin gets independent discrete Laplace
noise of scale Δ/ε):
  add-remove  Δ = 1   one bin gains or loses one row
  replace     Δ = 2   one bin loses a row and another gains it

Worked examples:
  dpstat histogram -c age --bins 8 -l 0 -u 80 -e 0.5 fixtures/people.csv
    add-remove: Δ = 1, scale = 1/0.5 = 2: each printed count is within ±6 of
    its bin's true count with probability 0.95, per bin
    (see `dpstat plan histogram --bins 8 --lower 0 --upper 80 --eps 0.5`).
  dpstat histogram -c age --bins 8 -l 0 -u 80 -e 1 -f chart fixtures/people.csv
    draws the noisy counts as bars with their ± accuracy band (width from
    COLUMNS or the terminal).
  dpstat histogram -c age --bins 8 -l 0 -u 80 -e 1 -p a.svg fixtures/people.csv
    also writes an SVG bar chart with error bars, after the release (and any
    ledger charge).
  dpstat histogram -c region --discover -e 1 --delta 1e-7 fixtures/people.csv
    categories found in the data: only those whose noisy count reaches the
    threshold set by ε and δ are released, sorted; (ε, δ)-DP. At most
    --max-keys distinct keys are held: a noisy test, part of the release,
    withholds it (exit 5) when there are more.
  With --noise gaussian --delta 1e-6, the first example draws discrete Gaussian
  noise with the L2 sensitivity (1 add-remove, √2 replace);
  `dpstat plan histogram --bins 8 -l 0 -u 80 -e 0.5 --delta 1e-6` compares.";

pub const PLAN_HELP: &str = "\
Planning never reads data, never draws noise and never charges a ledger. It
calls the same accuracy code as a release, so its bound is the one the release
states (its JSON error_bound); a release printed as text rounds its bound up
so that it still covers the rounded value.

Examples:
  dpstat plan sum --lower 0 --upper 200000 --eps 0.5
  dpstat plan histogram --bins 8 --lower 0 --upper 80 --error 5
  dpstat plan median --lower 0 --upper 120 --error 20   # a rank bound, in rows
  dpstat plan mean -l 0 -u 100 --neighbours replace --rows 200 --error 1 -f json
  dpstat plan count --eps 1 --delta 1e-6
    also compares Laplace at ε with Gaussian noise at the same (ε, δ)
  dpstat plan run fixtures/compose_shares.toml --delta 1e-6
    the same comparison for every query of a workload";

pub const SQL_HELP: &str = "\
Query (GoogleSQL's differential-privacy clause, as BigQuery documents it):
  SELECT WITH DIFFERENTIAL_PRIVACY
    OPTIONS(epsilon = 1, privacy_unit_column = id, max_groups_contributed = 1)
    item, COUNT(*) n, SUM(quantity, contribution_bounds_per_group => (0, 100))
  FROM professors WHERE item IN ('pen', 'pencil') GROUP BY item

Examples (QUERY in double quotes):
  dpstat sql QUERY --table professors=fixtures/professors.csv
  dpstat sql QUERY --explain

The query becomes the workload that dpstat run executes, and --explain prints it: \
epsilon is split evenly between the aggregates; GROUP BY takes its public keys from --keys \
or WHERE key IN (...), or with OPTIONS(delta = D) finds them in the data (that selection \
then takes an even share of epsilon beside the aggregates'); SUM, AVG and PERCENTILE_CONT leave NULL cells out; every bound is \
public (contribution_bounds_per_group). Joins, subqueries, window functions, other \
aggregates and SELECT * are refused before anything is read. GUIDE.md has examples.";
