//! Statistical tests of the noise (docs/DESIGN.md §8), in two layers. The real binary is run with
//! different `DPSTAT_INSECURE_SEED` values (sections 1–9) and its releases are tested against the
//! distribution that docs/PRIVACY.md and docs/DESIGN.md declare — χ² for integer (discrete Laplace)
//! noise, Kolmogorov–Smirnov plus a scale test for real-valued noise — and against the accuracy
//! bound and the grid it prints; a few hundred runs per configuration, which check the wiring
//! and the law at a coarse resolution (each test prints its power). The same laws are tested at
//! full power on draws made in-process through the library's mechanisms (section 10: thousands
//! of draws a second where a run of the binary is a process), each test asserting its power.
//!
//! Every test has a fixed significance level (`ALPHA`), fixed seeds and hand-computed truths
//! (checked against the fixtures by `fixtures_hold_the_stated_truth`). The runs of one
//! configuration are made once and shared by the tests that need them (`OnceLock`), spread over
//! a few threads; each run is one process.
//!
//! Exactness: serde_json (without its `float_roundtrip` feature) may parse a float one ulp off,
//! so every real number compared exactly is taken from the JSON text as printed
//! (`number_tokens`) and parsed by the standard library, which rounds correctly.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::OnceLock;
use std::time::Instant;

use common::{fixture, json_of, seeded, stdout_of};
use dpstat::numeric::grid::Grid;
use dpstat::privacy::above_threshold::AboveThreshold;
use dpstat::privacy::laplace::Aggregate;
use dpstat::privacy::noise::{draw, draw_each, Calibrated, Mechanism};
use dpstat::privacy::sampler::discrete_laplace_pmf;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::Value;
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

/// Significance level of every goodness-of-fit test in this file.
const ALPHA: f64 = 0.001;
/// Coverage may fall short of the stated confidence by at most this many standard errors.
const COVERAGE_SE: f64 = 3.0;
/// Processes in flight at once (the machine has 2 cores; spawning waits on I/O).
const WORKERS: usize = 4;

// ---------------------------------------------------------------------------------------------
// Fixtures and their truths (hand-computed; `fixtures_hold_the_stated_truth` re-derives them).

/// dist_count.csv: 23 rows; 8 of them have group = a.
const COUNT_ROWS: i64 = 23;
const COUNT_GROUP_A: i64 = 8;

/// dist_mean.csv, column x: 40 rows, halves in (0, 10) except one −3 and one 14.
const MEAN_ROWS: u64 = 40;
/// Σ clamp(x, 0, 10) = 200 (−3 → 0, 14 → 10), so the clamped mean is 5.
const SUM_0_10: i64 = 200;
const MEAN_0_10: i64 = 5;
/// Σ clamp(x, −20, 10) = 197 (−3 stays, 14 → 10).
const SUM_M20_10: i64 = 197;
/// Numeric histogram of x over [0, 10] in 4 bins (no value sits on an edge).
const HIST_0_10_4: [i64; 4] = [12, 7, 11, 10];

/// dist_pairs.csv: 40 (x, y) rows, halves and integers, one x of 12.5 and one pair (−1.5, 11)
/// outside [0, 10]². Clamped and shifted by the midpoint 5: Σx' = 12, Σy' = −39, Σx'y' = 222,
/// so the covariance is 222/40 − (12/40)(−39/40) = 2337/400.
const PAIR_ROWS: i64 = 40;
const PAIR_SUM_X: i64 = 12;
const PAIR_SUM_Y: i64 = -39;
const PAIR_PRODUCTS: i64 = 222;
const PAIR_COVARIANCE: (i64, i64) = (2337, 400);

// ---------------------------------------------------------------------------------------------
// Configurations: one set of flags on one fixture, run with seeds seed_base..seed_base+runs.

struct Config {
    fixture: &'static str,
    args: &'static [&'static str],
    seed_base: u64,
    runs: usize,
}

/// count, ε = 1/2: discrete Laplace with scale 1/ε = 2.
const COUNT: Config =
    Config { fixture: "dist_count.csv", args: &["count", "--eps", "0.5"], seed_base: 100_000, runs: 400 };

/// count with --where under replace, ε = 3/10: discrete Laplace with scale 10/3.
const COUNT_WHERE: Config = Config {
    fixture: "dist_count.csv",
    args: &["count", "--eps", "0.3", "--where", "group=a", "--neighbours", "replace"],
    seed_base: 200_000,
    runs: 150,
};

/// sum add-remove over [−20, 10], ε = 1: Δ = max(|L|, |U|) = 20, Laplace(20);
/// grid 2^(floor(log2 20) − 40) = 2^−36.
const SUM_ADD_REMOVE: Config = Config {
    fixture: "dist_mean.csv",
    args: &["sum", "--col", "x", "--lower", "-20", "--upper", "10", "--eps", "1"],
    seed_base: 300_000,
    runs: 400,
};

/// sum replace over [0, 10], ε = 1/4: Δ = U − L = 10, Laplace(40); grid 2^(5 − 40) = 2^−35.
const SUM_REPLACE: Config = Config {
    fixture: "dist_mean.csv",
    args: &["sum", "--col", "x", "--lower", "0", "--upper", "10", "--eps", "0.25", "--neighbours", "replace"],
    seed_base: 400_000,
    runs: 150,
};

/// mean replace over [0, 10], ε = 1, n = 40: Laplace((U − L)/(nε)) = Laplace(1/4); the mean is 5,
/// so the release is clamped only if |noise| > 5 = 20 scales (probability e^−20/… ≈ 1e−9 a run).
/// Grid of the sum: Δ/ε = 10, 2^(3 − 40) = 2^−37.
const MEAN_REPLACE: Config = Config {
    fixture: "dist_mean.csv",
    args: &["mean", "--col", "x", "--lower", "0", "--upper", "10", "--eps", "1", "--neighbours", "replace"],
    seed_base: 500_000,
    runs: 150,
};

/// mean add-remove over [0, 10], ε = 1: shifted sum (midpoint 5, Δ = 5) at ε/2 → Laplace(10),
/// true shifted sum 0; count (Δ = 1) at ε/2 → discrete Laplace(2), true count 40.
/// Grid: (5)/(1/2) = 10, 2^−37.
const MEAN_ADD_REMOVE: Config = Config {
    fixture: "dist_mean.csv",
    args: &["mean", "--col", "x", "--lower", "0", "--upper", "10", "--eps", "1"],
    seed_base: 600_000,
    runs: 150,
};

/// numeric histogram, 4 bins over [0, 10], replace (L1 Δ = 2), ε = 1: discrete Laplace(2) per bin.
const HISTOGRAM: Config = Config {
    fixture: "dist_mean.csv",
    args: &[
        "histogram",
        "--col",
        "x",
        "--bins",
        "4",
        "--lower",
        "0",
        "--upper",
        "10",
        "--eps",
        "1",
        "--neighbours",
        "replace",
    ],
    seed_base: 700_000,
    runs: 150,
};

/// covariance add-remove over [0, 10]², ε = 1: four parts at ε/4. Count Δ 1 → discrete
/// Laplace(4); shifted sums Δ h = 5 → Laplace(20); products Δ h² = 25 → Laplace(100). Every
/// true part is a multiple of 1/2, exact on every grid used.
const COVARIANCE: Config = Config {
    fixture: "dist_pairs.csv",
    args: &["covariance", "--cols", "x,y", "--lower", "0,0", "--upper", "10,10", "--eps", "1"],
    seed_base: 1_000_000,
    runs: 150,
};

/// Bounds-free quantiles of age in people.csv under replace (n = 200 public, monotone queries),
/// levels 1/4 and 1/2 at ε/2 = 1 each, halves for threshold and queries: AboveThreshold over the
/// log grid, 1/4 scanned descending with scales Δ/ε₁ = 4/(1/2) = 8, 1/2 ascending with
/// 2/(1/2) = 4.
const QUANTILE_AT: Config = Config {
    fixture: "people.csv",
    args: &["quantile", "--col", "age", "--q", "0.25,0.5", "--eps", "2", "--neighbours", "replace"],
    seed_base: 1_100_000,
    runs: 250,
};

// ---------------------------------------------------------------------------------------------
// Running the binary.

/// One JSON release of one seeded run.
struct Run {
    seed: u64,
    json: Value,
    /// Every number token exactly as printed, by JSON pointer ("/value", "/parts/0/value").
    numbers: BTreeMap<String, String>,
}

impl Run {
    /// A printed real number, parsed exactly (std rounds correctly; serde_json may not).
    fn f64(&self, pointer: &str) -> f64 {
        let token = self
            .numbers
            .get(pointer)
            .unwrap_or_else(|| panic!("seed {}: no number at {pointer} in {}", self.seed, self.json));
        token.parse().unwrap_or_else(|e| panic!("seed {}: {pointer} = {token}: {e}", self.seed))
    }

    /// The exact rational value of a printed real number.
    fn exact(&self, pointer: &str) -> BigRational {
        exact(self.f64(pointer))
    }

    fn int(&self, pointer: &str) -> i64 {
        self.json
            .pointer(pointer)
            .and_then(Value::as_i64)
            .unwrap_or_else(|| panic!("seed {}: no integer at {pointer} in {}", self.seed, self.json))
    }

    fn str(&self, pointer: &str) -> &str {
        self.json
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("seed {}: no string at {pointer} in {}", self.seed, self.json))
    }

    /// A `value_units` field: must be an integer written as a string of decimal digits.
    fn units(&self, pointer: &str) -> BigInt {
        let s = self.str(pointer);
        let digits = s.strip_prefix('-').unwrap_or(s);
        assert!(
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
            "seed {}: {pointer} = {s:?} is not an integer string",
            self.seed
        );
        s.parse().expect("digits parse")
    }
}

/// `common::parallel_map` on `WORKERS` threads.
fn parallel_map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    common::parallel_map(WORKERS, n, f)
}

/// stdout of `dpstat <args> <fixture> [extra]` with a given seed.
fn output(seed: u64, args: &[&str], fixture_name: &str, extra: &[&str]) -> String {
    stdout_of(seeded(seed).args(args).arg(fixture(fixture_name)).args(extra))
}

fn json_run(seed: u64, args: &[&str], fixture_name: &str) -> Run {
    let text = output(seed, args, fixture_name, &["--format", "json"]);
    let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    Run { seed, json, numbers: number_tokens(&text) }
}

fn run_all(config: &Config) -> Vec<Run> {
    let start = Instant::now();
    let what = format!("dpstat {} {}", config.args.join(" "), config.fixture);
    progress(format_args!("{what}: {} seeded runs of the binary…", config.runs));
    let path = fixture(config.fixture);
    let mut args: Vec<&std::ffi::OsStr> = config.args.iter().map(std::ffi::OsStr::new).collect();
    args.extend([path.as_os_str(), "--format".as_ref(), "json".as_ref()]);
    let docs = common::seeded_json_runs(config.seed_base, config.runs, WORKERS, &args);
    let runs = docs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let json: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
            Run { seed: config.seed_base + i as u64, json, numbers: number_tokens(text) }
        })
        .collect();
    progress(format_args!("{what}: {} runs in {:.1} s", config.runs, start.elapsed().as_secs_f64()));
    runs
}

/// One process making the runs of a seed range prints what a process per seed prints, byte for
/// byte: the noise, the keyed choice of a person's rows (from the seed), and the
/// once-per-process tables (the zCDP orders of a Gaussian release). What lets the
/// configurations above draw their runs a range per process.
#[test]
fn seeded_ranges_equal_separate_runs() {
    let cases = [
        ("count --noise gaussian --rho 0.125 --delta 1e-6", "dist_mean.csv"),
        ("mean --col x --lower 0 --upper 10 --eps 1", "dist_mean.csv"),
        (
            "mean --col cost --lower 0 --upper 500 --eps 1 --privacy-id patient --max-rows-per-id 2",
            "visits.csv",
        ),
    ];
    for (args, name) in cases {
        let file = fixture(name);
        let mut all: Vec<&std::ffi::OsStr> = args.split(' ').map(std::ffi::OsStr::new).collect();
        all.extend([file.as_os_str(), "--format".as_ref(), "json".as_ref()]);
        let ranged = common::seeded_json_runs(40, 6, 2, &all);
        for (j, text) in ranged.iter().enumerate() {
            let alone = stdout_of(seeded(40 + j as u64).args(&all));
            assert_eq!(text, alone.trim(), "seed {} of {args}", 40 + j);
        }
        assert_ne!(ranged[0], ranged[1], "each run of a range has its own seed");
    }
}

/// The runs of a configuration, made once per test process.
fn cached(cell: &'static OnceLock<Vec<Run>>, config: &Config) -> &'static [Run] {
    cell.get_or_init(|| run_all(config))
}

macro_rules! runs_of {
    ($name:ident, $config:expr) => {
        fn $name() -> &'static [Run] {
            static CELL: OnceLock<Vec<Run>> = OnceLock::new();
            cached(&CELL, &$config)
        }
    };
}

runs_of!(count_runs, COUNT);
runs_of!(count_where_runs, COUNT_WHERE);
runs_of!(sum_add_remove_runs, SUM_ADD_REMOVE);
runs_of!(sum_replace_runs, SUM_REPLACE);
runs_of!(mean_replace_runs, MEAN_REPLACE);
runs_of!(mean_add_remove_runs, MEAN_ADD_REMOVE);
runs_of!(histogram_runs, HISTOGRAM);
runs_of!(covariance_runs, COVARIANCE);
runs_of!(quantile_at_runs, QUANTILE_AT);

// ---------------------------------------------------------------------------------------------
// Number tokens as printed.

/// Every number token of a (valid) JSON text, exactly as printed, keyed by JSON pointer.
fn number_tokens(text: &str) -> BTreeMap<String, String> {
    let mut scanner = Scanner { text, at: 0, numbers: BTreeMap::new() };
    scanner.value(String::new());
    scanner.numbers
}

struct Scanner<'a> {
    text: &'a str,
    at: usize,
    numbers: BTreeMap<String, String>,
}

impl Scanner<'_> {
    fn peek(&self) -> u8 {
        self.text.as_bytes()[self.at]
    }

    fn skip_space(&mut self) {
        while self.at < self.text.len() && self.peek().is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) {
        self.skip_space();
        assert_eq!(self.peek(), byte, "JSON scanner at {}: {}", self.at, self.text);
        self.at += 1;
    }

    /// A string token; escapes are kept as written (our keys have none).
    fn string(&mut self) -> String {
        self.expect(b'"');
        let start = self.at;
        while self.peek() != b'"' {
            self.at += if self.peek() == b'\\' { 2 } else { 1 };
        }
        self.at += 1;
        self.text[start..self.at - 1].to_string()
    }

    fn value(&mut self, pointer: String) {
        self.skip_space();
        match self.peek() {
            b'{' => {
                self.at += 1;
                self.skip_space();
                if self.peek() == b'}' {
                    self.at += 1;
                    return;
                }
                loop {
                    let key = self.string();
                    self.expect(b':');
                    self.value(format!("{pointer}/{key}"));
                    self.skip_space();
                    self.at += 1;
                    if self.text.as_bytes()[self.at - 1] == b'}' {
                        return;
                    }
                }
            }
            b'[' => {
                self.at += 1;
                self.skip_space();
                if self.peek() == b']' {
                    self.at += 1;
                    return;
                }
                for index in 0.. {
                    self.value(format!("{pointer}/{index}"));
                    self.skip_space();
                    self.at += 1;
                    if self.text.as_bytes()[self.at - 1] == b']' {
                        return;
                    }
                }
            }
            b'"' => {
                self.string();
            }
            b't' | b'f' | b'n' => {
                while self.at < self.text.len() && self.peek().is_ascii_alphabetic() {
                    self.at += 1;
                }
            }
            _ => {
                let start = self.at;
                while self.at < self.text.len()
                    && matches!(self.peek(), b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.at += 1;
                }
                self.numbers.insert(pointer, self.text[start..self.at].to_string());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Exact arithmetic.

fn exact(x: f64) -> BigRational {
    BigRational::from_float(x).unwrap_or_else(|| panic!("{x} is not finite"))
}

fn int(n: i64) -> BigRational {
    BigRational::from_integer(BigInt::from(n))
}

fn rational(numer: i64, denom: i64) -> BigRational {
    BigRational::new(BigInt::from(numer), BigInt::from(denom))
}

fn pow2(k: i64) -> BigRational {
    if k >= 0 {
        BigRational::from_integer(BigInt::one() << k as usize)
    } else {
        BigRational::new(BigInt::one(), BigInt::one() << (-k) as usize)
    }
}

/// Whether x is a nearest f64 to r (no f64 is closer): for a representable r, x == r exactly.
fn is_nearest_f64(x: f64, r: &BigRational) -> bool {
    let gap = |y: f64| (exact(y) - r).abs();
    let here = gap(x);
    here <= gap(x.next_up()) && here <= gap(x.next_down())
}

/// "a/b" as printed in `epsilon_exact`.
fn exact_fraction(s: &str) -> BigRational {
    let (n, d) = s.split_once('/').unwrap_or_else(|| panic!("{s:?} is not a/b"));
    BigRational::new(n.parse().expect("numerator"), d.parse().expect("denominator"))
}

// ---------------------------------------------------------------------------------------------
// Statistics.

/// The coarser deviation the end-to-end tests are stated against (their runs are few): a
/// scale off by half, what a wrong share of ε or a wrong sensitivity does. Each test prints its
/// power against it and against `DEVIATION`.
const COARSE: f64 = 1.5;

/// A line on the process's stderr, past the test harness's capture, so that a long run is
/// never silent (`eprintln!` in a test is captured and shown only if the test fails).
fn progress(args: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr().lock(), "distribution: {args}");
}

/// The power of a z-test of `n` draws built on `moments(scale)` against a scale off by
/// `DEVIATION` and by `COARSE` (the smaller of too wide and too narrow), as text.
fn powers(n: usize, scale: f64, moments: impl Fn(f64) -> Moments) -> String {
    let null = moments(scale);
    let power = |f: f64| z_power(null, moments(scale * f), n).min(z_power(null, moments(scale / f), n));
    format!(
        "power {:.4} against scale x{DEVIATION}, {:.4} against x{COARSE}",
        power(DEVIATION),
        power(COARSE)
    )
}

/// Cells for a χ² test of `n` draws from `probs`: every outcome expected at least 5 times has
/// its own cell, the rest share a last one. The outcomes with a cell, and every cell's
/// expected count.
fn chi2_cells(probs: &[f64], n: usize) -> (Vec<usize>, Vec<f64>) {
    let total = n as f64;
    let cells: Vec<usize> = (0..probs.len()).filter(|&k| probs[k] * total >= 5.0).collect();
    let mut expected: Vec<f64> = cells.iter().map(|&k| probs[k] * total).collect();
    expected.push(total - expected.iter().sum::<f64>());
    (cells, expected)
}

/// `probs` gathered into `chi2_cells`' cells.
fn pooled_cells(probs: &[f64], cells: &[usize]) -> Vec<f64> {
    let mut q: Vec<f64> = cells.iter().map(|&k| probs[k]).collect();
    q.push((1.0 - q.iter().sum::<f64>()).max(0.0));
    q
}

/// Pearson's χ² test at `ALPHA` of `outcomes` (indices into the probabilities `chi2_cells`
/// split) against the cells' expected counts. A pooled cell expected less than once still
/// counts (an outcome there is evidence), but not as a degree of freedom.
fn assert_chi2_cells(name: &str, outcomes: &[usize], cells: &[usize], expected: &[f64]) {
    let mut observed = vec![0u64; cells.len() + 1];
    for &k in outcomes {
        observed[cells.iter().position(|&c| c == k).unwrap_or(cells.len())] += 1;
    }
    let stat: f64 = observed
        .iter()
        .zip(expected)
        .filter(|(_, &e)| e > 0.0)
        .map(|(&o, &e)| (o as f64 - e).powi(2) / e)
        .sum();
    let df = (cells.len() - usize::from(expected[cells.len()] < 1.0)) as f64;
    let critical = ChiSquared::new(df).expect("df > 0").inverse_cdf(1.0 - ALPHA);
    eprintln!("{name}: chi2 {stat:.2} (critical {critical:.2}, {} cells)", cells.len() + 1);
    assert!(
        stat < critical,
        "{name}: chi2 {stat:.2} >= {critical:.2}; observed {observed:?}, expected {expected:?}"
    );
}

/// Pearson's χ² test at `ALPHA` of counts `observed` against cell probabilities `probs`.
fn assert_chi2(name: &str, observed: &[u64], probs: &[f64]) {
    let n = observed.iter().sum::<u64>() as f64;
    let stat: f64 = observed.iter().zip(probs).map(|(&o, &q)| (o as f64 - n * q).powi(2) / (n * q)).sum();
    let critical = ChiSquared::new((probs.len() - 1) as f64).unwrap().inverse_cdf(1.0 - ALPHA);
    eprintln!("{name}: chi2 {stat:.2} (critical {critical:.2}); observed {observed:?}");
    assert!(
        stat < critical,
        "{name}: chi2 {stat:.2} >= {critical:.2}; observed {observed:?}, probs {probs:?}"
    );
}

/// Continuous Laplace(0, b) CDF.
fn laplace_cdf(x: f64, b: f64) -> f64 {
    if x < 0.0 {
        0.5 * (x / b).exp()
    } else {
        1.0 - 0.5 * (-x / b).exp()
    }
}

/// Two-sided one-sample Kolmogorov–Smirnov statistic of `samples` against `cdf`.
fn ks_statistic(samples: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    sorted
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            ((i + 1) as f64 / n - f).max(f - i as f64 / n)
        })
        .fold(0.0, f64::max)
}

/// Critical value of the KS statistic at `ALPHA` from the asymptotic Kolmogorov distribution,
/// P(√N·D > x) ≈ 2·exp(−2x²) (the first term of the series; conservative for finite N).
fn ks_critical(n: usize) -> f64 {
    (-(ALPHA / 2.0).ln() / 2.0).sqrt() / (n as f64).sqrt()
}

/// `noise` is a sample of Laplace(0, scale): a KS test of the whole distribution (shape and
/// location) and, as KS is weak on the scale, a z-test of the mean absolute value (|X| is
/// exponential with mean and standard deviation `scale`), both at `ALPHA`.
fn assert_laplace(name: &str, noise: &[f64], scale: f64) {
    let n = noise.len();
    let d = ks_statistic(noise, |x| laplace_cdf(x, scale));
    let critical = ks_critical(n);
    let mean_abs = noise.iter().map(|x| x.abs()).sum::<f64>() / n as f64;
    let z = (mean_abs - scale) / (scale / (n as f64).sqrt());
    let z_critical = Normal::standard().inverse_cdf(1.0 - ALPHA / 2.0);
    let power = powers(n, scale, laplace_abs_moments);
    eprintln!(
        "{name}: N = {n}, KS D = {d:.4} (critical {critical:.4}), mean |noise| z = {z:.2} \
         (critical {z_critical:.2}); {power}"
    );
    assert!(
        d < critical,
        "{name}: KS D = {d:.4} >= critical {critical:.4} (N = {n}, alpha = {ALPHA}) against Laplace({scale})"
    );
    assert!(
        z.abs() < z_critical,
        "{name}: mean |noise| = {mean_abs:.5} vs scale {scale}: z = {z:.2}, critical {z_critical:.2} (N = {n})"
    );
}

/// Pearson χ² test at `ALPHA` of integer `noise` against the discrete Laplace pmf of `scale`:
/// one bin per z in −K..=K and one pooled tail on each side, K as large as keeps every expected
/// count >= 5. Plus, as for `assert_laplace`, a z-test of the mean |noise| (E|Z| = 2p/(1 − p²),
/// E Z² = 2p/(1 − p)²), which is far more sensitive to a wrong scale than χ².
fn assert_discrete_laplace(name: &str, noise: &[i64], scale: f64) {
    let n = noise.len() as f64;
    let p = (-1.0 / scale).exp();
    // P(Z > k) = p^(k+1)/(1+p).
    let tail = |k: i64| (-(k + 1) as f64 / scale).exp() / (1.0 + p);
    let mut k = 0;
    while n * discrete_laplace_pmf(scale, k + 1) >= 5.0 && n * tail(k + 1) >= 5.0 {
        k += 1;
    }
    assert!(n * tail(k) >= 5.0, "{name}: too few samples to pool the tails");
    let mut probs = vec![tail(k)];
    probs.extend((-k..=k).map(|z| discrete_laplace_pmf(scale, z)));
    probs.push(tail(k));
    let total: f64 = probs.iter().sum();
    assert!((total - 1.0).abs() < 1e-9, "{name}: probabilities sum to {total}");
    let mut observed = vec![0u64; probs.len()];
    for &z in noise {
        observed[(z.clamp(-k - 1, k + 1) + k + 1) as usize] += 1;
    }
    let stat: f64 = observed.iter().zip(&probs).map(|(&o, &q)| (o as f64 - n * q).powi(2) / (n * q)).sum();
    let df = probs.len() - 1;
    let critical = ChiSquared::new(df as f64).expect("df > 0").inverse_cdf(1.0 - ALPHA);
    let one_minus_p = -(-1.0 / scale).exp_m1();
    let mean_abs_true = 2.0 * p / (one_minus_p * (1.0 + p));
    let sd_abs = (2.0 * p / one_minus_p.powi(2) - mean_abs_true.powi(2)).sqrt();
    let mean_abs = noise.iter().map(|z| z.unsigned_abs() as f64).sum::<f64>() / n;
    let z = (mean_abs - mean_abs_true) / (sd_abs / n.sqrt());
    let z_critical = Normal::standard().inverse_cdf(1.0 - ALPHA / 2.0);
    let power = powers(noise.len(), scale, discrete_laplace_abs_moments);
    eprintln!(
        "{name}: N = {n}, chi2 = {stat:.2} (critical {critical:.2}, df {df}), mean |noise| z = {z:.2} \
         (critical {z_critical:.2}); {power}"
    );
    assert!(
        stat < critical,
        "{name}: chi2 = {stat:.2} >= critical {critical:.2} (df {df}, alpha = {ALPHA}) against discrete \
         Laplace({scale}); observed {observed:?}, expected {:?}",
        probs.iter().map(|q| (n * q).round()).collect::<Vec<_>>()
    );
    assert!(
        z.abs() < z_critical,
        "{name}: mean |noise| = {mean_abs:.4} vs {mean_abs_true:.4} for discrete Laplace({scale}): z = {z:.2}, \
         critical {z_critical:.2} (N = {n})"
    );
}

/// At least `confidence` of the releases fall within their printed bound, up to `COVERAGE_SE`
/// standard errors of a binomial share.
fn assert_coverage(name: &str, covered: usize, total: usize, confidence: f64) {
    let share = covered as f64 / total as f64;
    let se = (confidence * (1.0 - confidence) / total as f64).sqrt();
    let floor = confidence - COVERAGE_SE * se;
    eprintln!("{name}: coverage {covered}/{total} = {share:.4} (floor {floor:.4})");
    assert!(
        share >= floor,
        "{name}: only {covered}/{total} = {share:.4} of releases within the printed error_bound; \
         stated confidence {confidence}, floor {floor:.4}"
    );
}

/// The bound is also not loose where the noise is continuous-like: its coverage is the
/// confidence itself up to 4 standard errors (the bound is the exact quantile, docs/DESIGN.md §4).
fn assert_coverage_tight(name: &str, covered: usize, total: usize, confidence: f64) {
    let share = covered as f64 / total as f64;
    let se = (confidence * (1.0 - confidence) / total as f64).sqrt();
    assert!(confidence + 4.0 * se < 1.0, "{name}: {total} draws are too few for this test to fail");
    assert!(
        share <= confidence + 4.0 * se,
        "{name}: {covered}/{total} = {share:.4} within the printed bound: bound looser than confidence {confidence}"
    );
}

fn assert_close(name: &str, got: f64, want: f64) {
    assert!((got - want).abs() <= want.abs() * 1e-12, "{name}: {got} != {want}");
}

/// The printed confidence of every run.
fn confidence_of(runs: &[Run]) -> f64 {
    let c = runs[0].f64("/accuracy/confidence");
    assert_eq!(c, 0.95, "default confidence");
    assert!(runs.iter().all(|r| r.f64("/accuracy/confidence") == c));
    c
}

// ---------------------------------------------------------------------------------------------
// The fixtures hold what the constants say.

fn column(name: &str, col: &str) -> Vec<String> {
    let mut reader = csv::Reader::from_path(fixture(name)).expect("fixture opens");
    let index = reader.headers().expect("header").iter().position(|h| h == col).expect("column exists");
    reader.records().map(|r| r.expect("record")[index].to_string()).collect()
}

#[test]
fn fixtures_hold_the_stated_truth() {
    let groups = column("dist_count.csv", "group");
    assert_eq!(groups.len() as i64, COUNT_ROWS);
    assert_eq!(groups.iter().filter(|g| *g == "a").count() as i64, COUNT_GROUP_A);

    let xs: Vec<f64> = column("dist_mean.csv", "x").iter().map(|s| s.parse().expect("number")).collect();
    assert_eq!(xs.len() as u64, MEAN_ROWS);
    // Halves and small integers: every f64 sum below is exact.
    let clamped_sum = |l: f64, u: f64| xs.iter().map(|x| x.clamp(l, u)).sum::<f64>();
    assert_eq!(clamped_sum(0.0, 10.0), SUM_0_10 as f64);
    assert_eq!(clamped_sum(-20.0, 10.0), SUM_M20_10 as f64);
    assert_eq!(SUM_0_10, MEAN_0_10 * MEAN_ROWS as i64);
    let mut bins = [0i64; 4];
    for x in &xs {
        let c = x.clamp(0.0, 10.0);
        assert!(![2.5, 5.0, 7.5].contains(&c), "{x} sits on a bin edge");
        bins[((c / 2.5) as usize).min(3)] += 1;
    }
    assert_eq!(bins, HIST_0_10_4);

    let pairs: Vec<(f64, f64)> = column("dist_pairs.csv", "x")
        .iter()
        .zip(column("dist_pairs.csv", "y"))
        .map(|(x, y)| {
            (
                x.parse::<f64>().unwrap().clamp(0.0, 10.0) - 5.0,
                y.parse::<f64>().unwrap().clamp(0.0, 10.0) - 5.0,
            )
        })
        .collect();
    assert_eq!(pairs.len() as i64, PAIR_ROWS);
    assert_eq!(pairs.iter().map(|p| p.0).sum::<f64>(), PAIR_SUM_X as f64);
    assert_eq!(pairs.iter().map(|p| p.1).sum::<f64>(), PAIR_SUM_Y as f64);
    assert_eq!(pairs.iter().map(|p| p.0 * p.1).sum::<f64>(), PAIR_PRODUCTS as f64);
    let n = int(PAIR_ROWS);
    let cov = rational(PAIR_PRODUCTS, 1) / &n - rational(PAIR_SUM_X, 1) / &n * (rational(PAIR_SUM_Y, 1) / &n);
    assert_eq!(cov, rational(PAIR_COVARIANCE.0, PAIR_COVARIANCE.1));
}

// ---------------------------------------------------------------------------------------------
// 1. count: discrete Laplace, p = exp(−ε/Δ), Δ = 1.

fn check_count(name: &str, runs: &[Run], truth: i64, scale: f64, eps_exact: &str) {
    for run in runs {
        assert_eq!(run.str("/query"), "count");
        assert_eq!(run.str("/epsilon_exact"), eps_exact);
        assert_eq!(run.f64("/sensitivity"), 1.0);
        assert_close("count scale", run.f64("/scale"), scale);
    }
    let noise: Vec<i64> = runs.iter().map(|r| r.int("/value") - truth).collect();
    assert_discrete_laplace(name, &noise, scale);
}

#[test]
fn count_noise_fits_discrete_laplace() {
    check_count("count --eps 0.5", count_runs(), COUNT_ROWS, 2.0, "1/2");
}

#[test]
fn count_with_where_noise_fits_discrete_laplace() {
    let runs = count_where_runs();
    assert!(runs.iter().all(|r| r.json["where"] == serde_json::json!(["group=a"])));
    check_count("count --eps 0.3 --where group=a", runs, COUNT_GROUP_A, 10.0 / 3.0, "3/10");
}

// ---------------------------------------------------------------------------------------------
// 2. sum and mean: continuous Laplace to far below KS resolution (grid ≈ 2^−40 of the scale).

/// release − truth for every run, exactly, then as f64.
fn real_noise(runs: &[Run], truth: &BigRational) -> Vec<f64> {
    runs.iter().map(|r| (r.exact("/value") - truth).to_f64().expect("finite")).collect()
}

#[test]
fn mean_replace_noise_fits_laplace() {
    let runs = mean_replace_runs();
    for run in runs {
        assert_eq!(run.int("/rows"), MEAN_ROWS as i64);
        assert_eq!(run.str("/neighbours"), "replace");
        // Only the division by n: a clamp into [L, U] would change the distribution.
        assert_eq!(run.json["post_processing"].as_array().map(Vec::len), Some(1), "{}", run.json);
        assert_close("mean replace scale", run.f64("/scale"), 0.25);
    }
    // (U − L)/(nε) = 10/(40·1).
    assert_laplace("mean --neighbours replace [0,10] eps 1 n 40", &real_noise(runs, &int(MEAN_0_10)), 0.25);
}

#[test]
fn sum_add_remove_noise_fits_laplace() {
    let runs = sum_add_remove_runs();
    for run in runs {
        assert_close("sum add-remove scale", run.f64("/scale"), 20.0);
        assert_eq!(run.f64("/sensitivity"), 20.0);
    }
    // max(|L|, |U|)/ε = max(20, 10)/1.
    assert_laplace("sum [-20,10] eps 1", &real_noise(runs, &int(SUM_M20_10)), 20.0);
}

#[test]
fn sum_replace_noise_fits_laplace() {
    let runs = sum_replace_runs();
    for run in runs {
        assert_close("sum replace scale", run.f64("/scale"), 40.0);
        assert_eq!(run.f64("/sensitivity"), 10.0);
    }
    // (U − L)/ε = 10/(1/4).
    assert_laplace("sum --neighbours replace [0,10] eps 0.25", &real_noise(runs, &int(SUM_0_10)), 40.0);
}

// ---------------------------------------------------------------------------------------------
// 5. mean add-remove: ε halves add up exactly; each part has its declared distribution.

#[test]
fn mean_add_remove_parts_fit_their_distributions() {
    let runs = mean_add_remove_runs();
    for run in runs {
        assert_eq!(run.str("/parts/0/name"), "shifted_sum");
        assert_eq!(run.str("/parts/1/name"), "count");
        let total = exact_fraction(run.str("/parts/0/epsilon_exact"))
            + exact_fraction(run.str("/parts/1/epsilon_exact"));
        assert_eq!(total, int(1), "seed {}: halves of eps 1", run.seed);
        assert_eq!(exact_fraction(run.str("/epsilon_exact")), int(1));
        assert_close("shifted sum scale", run.f64("/parts/0/scale"), 10.0);
        assert_close("count part scale", run.f64("/parts/1/scale"), 2.0);
    }
    // Count: Δ = 1 at ε/2 = 1/2, discrete Laplace with scale 2/ε = 2 around n = 40.
    let count_noise: Vec<i64> = runs
        .iter()
        .map(|r| r.units("/parts/1/value_units").to_i64().expect("count fits in i64") - MEAN_ROWS as i64)
        .collect();
    assert_discrete_laplace("mean add-remove: count part", &count_noise, 2.0);
    // Shifted sum: Σ(clamp(x) − 5) = 0 with Δ = (U − L)/2 = 5 at ε/2: Laplace(10).
    assert_laplace(
        "mean add-remove: shifted-sum part",
        &real_noise_at(runs, "/parts/0/value", &BigRational::zero()),
        10.0,
    );
}

fn real_noise_at(runs: &[Run], pointer: &str, truth: &BigRational) -> Vec<f64> {
    runs.iter().map(|r| (r.exact(pointer) - truth).to_f64().expect("finite")).collect()
}

#[test]
fn mean_add_remove_epsilon_halves_add_up_exactly() {
    // ε as typed, and its exact value by hand.
    let cases = [
        ("0.3", rational(3, 10)),
        ("0.7", rational(7, 10)),
        ("2.5", rational(5, 2)),
        ("1e-3", rational(1, 1000)),
        ("0.123456789", rational(123_456_789, 1_000_000_000)),
    ];
    for (i, (eps, want)) in cases.iter().enumerate() {
        let args = ["mean", "--col", "x", "--lower", "0", "--upper", "10", "--eps", eps];
        let run = json_run(900 + i as u64, &args, "dist_mean.csv");
        let halves: Vec<BigRational> =
            (0..2).map(|p| exact_fraction(run.str(&format!("/parts/{p}/epsilon_exact")))).collect();
        assert_eq!(&halves[0] + &halves[1], *want, "eps {eps}: {}", run.json);
        assert_eq!(halves[0], halves[1], "eps {eps}: equal halves");
        assert_eq!(exact_fraction(run.str("/epsilon_exact")), *want, "eps {eps}");
        // The printed float ε of each part is the exact half rounded up.
        for (p, half) in halves.iter().enumerate() {
            let printed = run.exact(&format!("/parts/{p}/epsilon"));
            assert!(printed >= *half, "eps {eps}: part {p} epsilon rounded down");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Accuracy coverage: |release − truth| <= printed error_bound in >= confidence of the runs.

/// How many runs have |value − truth| <= error_bound, exactly.
fn covered(runs: &[Run], pointer: &str, truth: &BigRational) -> usize {
    runs.iter().filter(|r| (r.exact(pointer) - truth).abs() <= r.exact("/accuracy/error_bound")).count()
}

#[test]
fn accuracy_coverage_count() {
    for (name, runs, truth) in
        [("count", count_runs(), COUNT_ROWS), ("count --where", count_where_runs(), COUNT_GROUP_A)]
    {
        let c = confidence_of(runs);
        assert_coverage(name, covered(runs, "/value", &int(truth)), runs.len(), c);
    }
}

#[test]
fn accuracy_coverage_sum() {
    for (name, runs, truth) in
        [("sum add-remove", sum_add_remove_runs(), SUM_M20_10), ("sum replace", sum_replace_runs(), SUM_0_10)]
    {
        let c = confidence_of(runs);
        let hits = covered(runs, "/value", &int(truth));
        assert_coverage(name, hits, runs.len(), c);
    }
    // Tightness needs many draws: `library_real_sums_fit_laplace` tests it for every sum; here
    // the configuration with enough runs for it to fail.
    let runs = sum_add_remove_runs();
    assert_coverage_tight("sum add-remove", covered(runs, "/value", &int(SUM_M20_10)), runs.len(), 0.95);
}

#[test]
fn accuracy_coverage_mean_replace() {
    let runs = mean_replace_runs();
    let c = confidence_of(runs);
    let hits = covered(runs, "/value", &int(MEAN_0_10));
    // Tightness: `library_real_sums_fit_laplace` (too few runs here for it to fail).
    assert_coverage("mean replace", hits, runs.len(), c);
}

#[test]
fn accuracy_coverage_mean_add_remove() {
    // The bound combines the sum and count bounds at β/2 each: conservative, so only the floor.
    let runs = mean_add_remove_runs();
    let c = confidence_of(runs);
    let hits = covered(runs, "/value", &int(MEAN_0_10));
    assert_coverage("mean add-remove", hits, runs.len(), c);
}

#[test]
fn accuracy_coverage_histogram_per_bin() {
    let runs = histogram_runs();
    let c = confidence_of(runs);
    for run in runs {
        assert_eq!(run.str("/accuracy/scope"), "per bin");
        assert_close("histogram scale", run.f64("/scale"), 2.0);
        assert_eq!(run.f64("/sensitivity"), 2.0);
    }
    let mut all = 0;
    for (bin, truth) in HIST_0_10_4.iter().enumerate() {
        let pointer = format!("/bins/{bin}/count");
        let hits = runs
            .iter()
            .filter(|r| (r.int(&pointer) - truth).abs() as f64 <= r.f64("/accuracy/error_bound"))
            .count();
        assert_coverage(&format!("histogram bin {bin}"), hits, runs.len(), c);
        all += hits;
    }
    assert_coverage("histogram, all bins", all, runs.len() * HIST_0_10_4.len(), c);
}

#[test]
fn histogram_noise_fits_discrete_laplace() {
    // Replace: L1 Δ = 2, ε = 1, so every bin gets discrete Laplace(2), independently.
    let runs = histogram_runs();
    let noise: Vec<i64> = runs
        .iter()
        .flat_map(|r| {
            HIST_0_10_4
                .iter()
                .enumerate()
                .map(move |(bin, truth)| r.int(&format!("/bins/{bin}/count")) - truth)
        })
        .collect();
    assert_discrete_laplace("histogram --neighbours replace eps 1, all bins", &noise, 2.0);
}

// ---------------------------------------------------------------------------------------------
// 4. Grid: value_units are integers, values are exactly value_units · 2^exponent, and the
//    exponent depends on the flags only.

fn exponent_of(run: &Run, pointer: &str) -> i64 {
    let k = run.int(&format!("{pointer}/exponent"));
    let spacing = run.exact(&format!("{pointer}/spacing"));
    assert_eq!(spacing, pow2(k), "seed {}: spacing is not 2^{k}", run.seed);
    k
}

/// value == value_units · 2^k exactly (the noisy aggregate is below 2^53 units, so the product is
/// an f64); `expected_k` is the exponent computed by hand for the configuration.
fn assert_on_grid(name: &str, run: &Run, value: &str, units: &str, grid: &str, expected_k: i64) {
    let k = exponent_of(run, grid);
    assert_eq!(k, expected_k, "{name}: grid exponent");
    let u = run.units(units);
    assert!(u.abs() < BigInt::one() << 53, "{name}: seed {}: {u} units", run.seed);
    assert_eq!(
        run.exact(value),
        BigRational::from_integer(u.clone()) * pow2(k),
        "{name}: seed {}: value {} is not {u} · 2^{k}",
        run.seed,
        run.f64(value)
    );
}

#[test]
fn sum_values_are_exact_grid_multiples() {
    for (name, runs, k) in
        [("sum add-remove", sum_add_remove_runs(), -36), ("sum replace", sum_replace_runs(), -35)]
    {
        for run in runs {
            assert_on_grid(name, run, "/value", "/value_units", "/grid", k);
        }
    }
}

#[test]
fn mean_replace_values_are_grid_sums_over_n() {
    for run in mean_replace_runs() {
        let k = exponent_of(run, "/grid");
        assert_eq!(k, -37);
        // value_units is the noisy sum; the mean is that sum · 2^k / n (no clamp happened), printed
        // as the nearest f64.
        let sum = BigRational::from_integer(run.units("/value_units")) * pow2(k);
        let mean = sum / int(run.int("/rows"));
        assert!(
            is_nearest_f64(run.f64("/value"), &mean),
            "seed {}: value {} is not the nearest f64 to {mean}",
            run.seed,
            run.f64("/value")
        );
    }
}

#[test]
fn mean_add_remove_values_are_built_from_grid_parts() {
    for run in mean_add_remove_runs() {
        let k = exponent_of(run, "/grid");
        assert_on_grid("shifted sum", run, "/parts/0/value", "/parts/0/value_units", "/parts/0/grid", k);
        assert_on_grid("count part", run, "/parts/1/value", "/parts/1/value_units", "/parts/1/grid", 0);
        assert_eq!(k, -37);
        // value = clamp(m + S̃·2^k / max(1, C̃), L, U), printed as the nearest f64.
        let (lower, upper) = (run.exact("/bounds/lower"), run.exact("/bounds/upper"));
        let midpoint = (&lower + &upper) / int(2);
        let sum = BigRational::from_integer(run.units("/parts/0/value_units")) * pow2(k);
        let count = run.units("/parts/1/value_units").max(BigInt::one());
        let mean = (midpoint + sum / BigRational::from_integer(count)).clamp(lower, upper);
        assert!(
            is_nearest_f64(run.f64("/value"), &mean),
            "seed {}: value {} is not the nearest f64 to {mean}",
            run.seed,
            run.f64("/value")
        );
    }
}

#[test]
fn text_output_parses_to_the_json_value() {
    const PER_CONFIG: usize = 20;
    let configs: [(&Config, &[Run]); 5] = [
        (&COUNT, count_runs()),
        (&SUM_ADD_REMOVE, sum_add_remove_runs()),
        (&SUM_REPLACE, sum_replace_runs()),
        (&MEAN_REPLACE, mean_replace_runs()),
        (&MEAN_ADD_REMOVE, mean_add_remove_runs()),
    ];
    for (config, runs) in configs {
        let texts = parallel_map(PER_CONFIG, |i| {
            output(runs[i].seed, config.args, config.fixture, &["--full-precision"])
        });
        for (run, text) in runs.iter().zip(texts) {
            let line = text.strip_suffix('\n').unwrap_or_else(|| panic!("no newline: {text:?}"));
            assert!(!line.contains('\n'), "one line expected: {text:?}");
            let parsed: f64 = line.parse().unwrap_or_else(|e| panic!("{line:?}: {e}"));
            let json = run.f64("/value");
            assert_eq!(
                parsed.to_bits(),
                json.to_bits(),
                "{:?} seed {}: text {line} vs JSON {}",
                config.args,
                run.seed,
                run.numbers["/value"]
            );
        }
    }
}

/// grid.exponent of one JSON release.
fn grid_exponent(seed: u64, args: &[&str], fixture_name: &str) -> i64 {
    let json = json_of(seeded(seed).args(args).arg(fixture(fixture_name)));
    json["grid"]["exponent"].as_i64().unwrap_or_else(|| panic!("no grid exponent: {json}"))
}

#[test]
fn grid_exponent_is_the_same_on_different_data() {
    // dist_mean.csv (40 rows in (−3, 14)) and dist_other.csv (7 rows, from −250.25 to 1e6).
    for config in [&SUM_ADD_REMOVE, &SUM_REPLACE, &MEAN_REPLACE, &MEAN_ADD_REMOVE] {
        let here = grid_exponent(1, config.args, "dist_mean.csv");
        let there = grid_exponent(2, config.args, "dist_other.csv");
        assert_eq!(here, there, "{:?}: grid depends on the data", config.args);
    }
}

#[test]
fn grid_exponent_follows_the_design_formula() {
    // k = floor(log2(Δ/ε)) − 40, worked out by hand (docs/DESIGN.md §2.2).
    let cases: [(&[&str], i64); 14] = [
        // sum add-remove, Δ = max(|L|, |U|)
        (&["sum", "--lower", "0", "--upper", "100", "--eps", "1"], 6 - 40), // 100
        (&["sum", "--lower", "0", "--upper", "100", "--eps", "0.1"], 9 - 40), // 1000
        (&["sum", "--lower", "-50", "--upper", "50", "--eps", "1"], 5 - 40), // 50
        (&["sum", "--lower", "0", "--upper", "10", "--eps", "0.3"], 5 - 40), // 33.3
        (&["sum", "--lower", "0", "--upper", "8", "--eps", "1"], 3 - 40),   // exactly 8
        (&["sum", "--lower", "0", "--upper", "8", "--eps", "0.999"], 3 - 40), // 8.008
        (&["sum", "--lower", "0", "--upper", "8", "--eps", "1.001"], 2 - 40), // 7.992
        (&["sum", "--lower", "-1e6", "--upper", "1e6", "--eps", "0.01"], 26 - 40), // 1e8
        // sum replace, Δ = U − L
        (&["sum", "--lower", "-50", "--upper", "50", "--eps", "1", "--neighbours", "replace"], 6 - 40), // 100
        (&["sum", "--lower", "0.5", "--upper", "0.75", "--eps", "2", "--neighbours", "replace"], -3 - 40), // 1/8
        // mean replace: the sum's grid, Δ = U − L
        (&["mean", "--lower", "0", "--upper", "10", "--eps", "1", "--neighbours", "replace"], 3 - 40), // 10
        // mean add-remove: Δ = (U − L)/2 at ε/2
        (&["mean", "--lower", "0", "--upper", "10", "--eps", "1"], 3 - 40), // 5/(1/2) = 10
        (&["mean", "--lower", "0", "--upper", "10", "--eps", "0.1"], 6 - 40), // 5/(1/20) = 100
        (&["mean", "--lower", "-1", "--upper", "1", "--eps", "4"], -1 - 40), // 1/2
    ];
    for (i, (flags, want)) in cases.iter().enumerate() {
        let mut args = vec![flags[0], "--col", "x"];
        args.extend(&flags[1..]);
        let got = grid_exponent(800 + i as u64, &args, "dist_other.csv");
        assert_eq!(got, *want, "{args:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// 6. covariance: each of its four parts has its declared distribution; the bound covers.

#[test]
fn covariance_parts_fit_their_distributions() {
    let runs = covariance_runs();
    let names = ["count", "shifted_sum_x", "shifted_sum_y", "sum_of_products"];
    for run in runs {
        for (i, name) in names.iter().enumerate() {
            assert_eq!(run.str(&format!("/parts/{i}/name")), *name);
            assert_eq!(run.str(&format!("/parts/{i}/epsilon_exact")), "1/4");
        }
        assert_close("count scale", run.f64("/parts/0/scale"), 4.0);
        assert_close("x sum scale", run.f64("/parts/1/scale"), 20.0);
        assert_close("y sum scale", run.f64("/parts/2/scale"), 20.0);
        assert_close("products scale", run.f64("/parts/3/scale"), 100.0);
    }
    let count_noise: Vec<i64> =
        runs.iter().map(|r| r.units("/parts/0/value_units").to_i64().expect("fits") - PAIR_ROWS).collect();
    assert_discrete_laplace("covariance: count part", &count_noise, 4.0);
    for (i, truth, scale) in [(1, PAIR_SUM_X, 20.0), (2, PAIR_SUM_Y, 20.0), (3, PAIR_PRODUCTS, 100.0)] {
        let noise = real_noise_at(runs, &format!("/parts/{i}/value"), &int(truth));
        assert_laplace(&format!("covariance: part {}", names[i]), &noise, scale);
    }
}

#[test]
fn accuracy_coverage_covariance() {
    // A union bound over four parts and an interval over their box: conservative, so the floor.
    let runs = covariance_runs();
    let c = confidence_of(runs);
    let truth = rational(PAIR_COVARIANCE.0, PAIR_COVARIANCE.1);
    assert_coverage("covariance add-remove", covered(runs, "/value", &truth), runs.len(), c);
}

// ---------------------------------------------------------------------------------------------
// 7. Bounds-free quantiles: the released candidates follow AboveThreshold's exact distribution.

/// The public log grid, ascending: ±2^e·(1 + j/32) for e in −20..=63, ±2^64 and 0.
fn log_grid() -> Vec<f64> {
    let mut positive: Vec<f64> =
        (-20..=63).flat_map(|e| (0..32).map(move |j| 2f64.powi(e) * (1.0 + j as f64 / 32.0))).collect();
    positive.push(2f64.powi(64));
    let mut grid: Vec<f64> = positive.iter().rev().map(|c| -c).collect();
    grid.push(0.0);
    grid.extend(positive);
    grid
}

/// P(release = candidate) for AboveThreshold with queries `g` (in scan order) and threshold and
/// query noise of the given scales: Σ_z P(ρ = z)·Π_{j<k} P(ν < z − g_j)·P(ν >= z − g_k); a run
/// with no stop releases the last candidate.
fn above_threshold_distribution(queries: &[i64], threshold_scale: f64, query_scale: f64) -> Vec<f64> {
    let p = (-1.0 / query_scale).exp();
    // P(ν <= t) for discrete Laplace.
    let cdf = |t: i64| {
        if t >= 0 {
            1.0 - (-((t + 1) as f64) / query_scale).exp() / (1.0 + p)
        } else {
            (t as f64 / query_scale).exp() / (1.0 + p)
        }
    };
    let reach = (40.0 * threshold_scale) as i64;
    let mut probs = vec![0.0; queries.len()];
    for z in -reach..=reach {
        let mut alive = discrete_laplace_pmf(threshold_scale, z);
        for (k, &g) in queries.iter().enumerate() {
            let below = cdf(z - g - 1);
            probs[k] += alive * (1.0 - below);
            alive *= below;
            if alive < 1e-300 {
                break;
            }
        }
        if let Some(last) = probs.last_mut() {
            *last += alive;
        }
    }
    probs
}

#[test]
fn bounds_free_quantiles_follow_above_threshold() {
    let runs = quantile_at_runs();
    let xs: Vec<f64> = column("people.csv", "age").iter().map(|s| s.parse().unwrap()).collect();
    let grid = log_grid();
    // (level index, a, b, ascending, threshold and query scale)
    for (level, a, b, ascending, scale) in [(0usize, 1i64, 4i64, false, 8.0), (1, 1, 2, true, 4.0)] {
        for run in runs {
            assert_eq!(
                run.str(&format!("/quantiles/{level}/scan")),
                if ascending { "ascending" } else { "descending" }
            );
            assert_eq!(run.str(&format!("/quantiles/{level}/epsilon_exact")), "1/1");
        }
        let (order, queries) = scan_queries(&xs, &grid, a, b, ascending);
        let probs = above_threshold_distribution(&queries, scale, scale);
        assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let (cells, expected) = chi2_cells(&probs, runs.len());
        let stops: Vec<usize> = runs
            .iter()
            .map(|run| {
                let value = run.f64(&format!("/quantiles/{level}/value"));
                order
                    .iter()
                    .position(|&i| grid[i] == value)
                    .unwrap_or_else(|| panic!("{value} is no candidate"))
            })
            .collect();
        let power = [COARSE, 1.0 / COARSE]
            .map(|f| {
                let alt = above_threshold_distribution(&queries, scale * f, scale * f);
                chi2_power(&pooled_cells(&probs, &cells), &pooled_cells(&alt, &cells), runs.len())
            })
            .into_iter()
            .fold(1.0, f64::min);
        eprintln!("quantile level {level}: power {power:.4} against scales x{COARSE}");
        assert_chi2_cells(&format!("quantile level {level}"), &stops, &cells, &expected);
    }
}

/// Bounded quantiles: 0.5 and 0.9 of age in people.csv on [0, 100] with 41 candidates (steps of
/// 2.5, so most runs of equal score span several candidates) at ε = 0.2, ε/2 a level.
const QUANTILE_BOUNDED: Config = Config {
    fixture: "people.csv",
    args: &[
        "quantile",
        "--col",
        "age",
        "--q",
        "0.5,0.9",
        "--lower",
        "0",
        "--upper",
        "100",
        "--resolution",
        "41",
        "--eps",
        "0.2",
    ],
    seed_base: 1_150_000,
    runs: 400,
};

runs_of!(quantile_bounded_runs, QUANTILE_BOUNDED);

/// Permute-and-flip's probabilities over `grid`, from its definition in continuous time: each
/// candidate arrives at a uniform time in [0, 1] and stops the visits with probability
/// p(c) = exp(−ε·(s(c) − s_min)/(2Δu)), s(c) = max(b·#(x < c) − a·n, a·n − b·#(x <= c)); c is
/// chosen when it stops at t and no other has stopped before: ∫₀¹ p(c)·Π_{c′≠c} (1 − p(c′)·t) dt
/// (Simpson's rule).
fn flip_distribution(xs: &[f64], grid: &[f64], a: i64, b: i64, eps: f64, delta: f64) -> Vec<f64> {
    let n = xs.len() as i64;
    let scores: Vec<i64> = grid
        .iter()
        .map(|&c| {
            let below = xs.iter().filter(|&&x| x < c).count() as i64;
            let at_or_below = xs.iter().filter(|&&x| x <= c).count() as i64;
            (b * below - a * n).max(a * n - b * at_or_below)
        })
        .collect();
    let best = *scores.iter().min().unwrap();
    let coins: Vec<f64> = scores.iter().map(|&s| (-eps * (s - best) as f64 / (2.0 * delta)).exp()).collect();
    let steps = 4_000;
    let h = 1.0 / steps as f64;
    let mut probs = vec![0.0; grid.len()];
    for i in 0..=steps {
        let t = i as f64 * h;
        let weight = if i == 0 || i == steps {
            1.0
        } else if i % 2 == 1 {
            4.0
        } else {
            2.0
        };
        for (c, &p) in coins.iter().enumerate() {
            let others: f64 =
                coins.iter().enumerate().filter(|&(j, _)| j != c).map(|(_, &q)| 1.0 - q * t).product();
            probs[c] += weight * h / 3.0 * p * others;
        }
    }
    probs
}

#[test]
fn bounded_quantiles_follow_permute_and_flip() {
    let runs = quantile_bounded_runs();
    let xs: Vec<f64> = column("people.csv", "age").iter().map(|s| s.parse().unwrap()).collect();
    let grid: Vec<f64> = (0..41).map(|i| i as f64 * 2.5).collect();
    for (level, a, b) in [(0usize, 1i64, 2i64), (1, 9, 10)] {
        let delta =
            runs[0].json.pointer(&format!("/quantiles/{level}/score_sensitivity")).unwrap().as_f64().unwrap();
        assert_eq!(delta, a.max(b - a) as f64, "add-remove Δu");
        let probs = flip_distribution(&xs, &grid, a, b, 0.1, delta);
        let (cells, expected) = chi2_cells(&probs, runs.len());
        let chosen: Vec<usize> = runs
            .iter()
            .map(|run| {
                assert_eq!(run.str("/mechanism"), "permute-and-flip");
                let value = run.f64(&format!("/quantiles/{level}/value"));
                grid.iter().position(|&c| c == value).unwrap_or_else(|| panic!("{value} is no candidate"))
            })
            .collect();
        let power = [COARSE, 1.0 / COARSE]
            .map(|f| {
                let alt = flip_distribution(&xs, &grid, a, b, 0.1 * f, delta);
                chi2_power(&pooled_cells(&probs, &cells), &pooled_cells(&alt, &cells), runs.len())
            })
            .into_iter()
            .fold(1.0, f64::min);
        eprintln!("bounded quantile level {level}: power {power:.4} against ε x{COARSE}");
        assert_chi2_cells(&format!("bounded quantile level {level}"), &chosen, &cells, &expected);
    }
}

/// Bounded quantiles on heavily tied integers with the default grid: years in
/// education_ties.csv (200 rows, 56 of them 12, 50 of them 16) on [1, 16], whose default
/// candidates are the 31 halves (issue 38): each half between two integers is a run of its
/// own, and the signed score credits a valid candidate with the depth of q·n in its ties. ε =
/// 0.1, ε/2 a level.
const QUANTILE_TIES: Config = Config {
    fixture: "education_ties.csv",
    args: &["quantile", "--col", "years", "--q", "0.5,0.9", "--lower", "1", "--upper", "16", "--eps", "0.1"],
    seed_base: 1_160_000,
    runs: 400,
};

runs_of!(quantile_ties_runs, QUANTILE_TIES);

#[test]
fn tied_quantiles_on_the_default_grid_follow_permute_and_flip() {
    let runs = quantile_ties_runs();
    let xs: Vec<f64> = column("education_ties.csv", "years").iter().map(|s| s.parse().unwrap()).collect();
    let grid: Vec<f64> = (0..31).map(|i| 1.0 + f64::from(i) / 2.0).collect();
    assert_eq!(runs[0].json.pointer("/candidates/count").unwrap().as_u64(), Some(31));
    for (level, a, b) in [(0usize, 1i64, 2i64), (1, 9, 10)] {
        let delta =
            runs[0].json.pointer(&format!("/quantiles/{level}/score_sensitivity")).unwrap().as_f64().unwrap();
        assert_eq!(delta, a.max(b - a) as f64, "add-remove Δu");
        let probs = flip_distribution(&xs, &grid, a, b, 0.05, delta);
        let (cells, expected) = chi2_cells(&probs, runs.len());
        let chosen: Vec<usize> = runs
            .iter()
            .map(|run| {
                let value = run.f64(&format!("/quantiles/{level}/value"));
                grid.iter().position(|&c| c == value).unwrap_or_else(|| panic!("{value} is no candidate"))
            })
            .collect();
        let power = [COARSE, 1.0 / COARSE]
            .map(|f| {
                let alt = flip_distribution(&xs, &grid, a, b, 0.05 * f, delta);
                chi2_power(&pooled_cells(&probs, &cells), &pooled_cells(&alt, &cells), runs.len())
            })
            .into_iter()
            .fold(1.0, f64::min);
        eprintln!("tied quantile level {level}: power {power:.4} against ε x{COARSE}");
        assert!(power > 0.9, "level {level}: power {power} against ε x{COARSE}");
        assert_chi2_cells(&format!("tied quantile level {level}"), &chosen, &cells, &expected);
    }
}

// ---------------------------------------------------------------------------------------------
// 9. Gaussian noise (--noise gaussian, docs/DESIGN.md §9.2): the discrete Gaussian of variance
//    Δ₂²/(2ρ) on the statistic's grid, and keys found in the data (--discover, §9.5).

/// count, ρ = 1/8: Δ₂ = 1, σ² = 1/(2ρ) = 4.
const GAUSS_COUNT: Config = Config {
    fixture: "dist_count.csv",
    args: &["count", "--noise", "gaussian", "--rho", "0.125", "--delta", "1e-6"],
    seed_base: 1_200_000,
    runs: 150,
};

/// categorical histogram of group over [a, b] (c falls in `other`) under replace, ρ = 1/4:
/// Δ₂² = 2, σ² = 2/(2ρ) = 4 in every bin.
const GAUSS_HISTOGRAM: Config = Config {
    fixture: "dist_count.csv",
    args: &[
        "histogram",
        "--col",
        "group",
        "--categories",
        "a,b",
        "--neighbours",
        "replace",
        "--noise",
        "gaussian",
        "--rho",
        "0.25",
        "--delta",
        "1e-6",
    ],
    seed_base: 1_300_000,
    runs: 40,
};

/// sum add-remove over [−20, 10], ρ = 1/2: Δ₂ = 20, σ = 20; grid 2^(⌊⌊log2 400⌋/2⌋ − 40) = 2^−36.
const GAUSS_SUM: Config = Config {
    fixture: "dist_mean.csv",
    args: &[
        "sum", "--col", "x", "--lower", "-20", "--upper", "10", "--noise", "gaussian", "--rho", "0.5",
        "--delta", "1e-6",
    ],
    seed_base: 1_400_000,
    runs: 60,
};

/// count by group under replace with --keys a: the vector (a, other) moves by −1 and +1, so
/// Δ₂² = 2; ρ = 1/4 gives σ² = 4 in each group.
const GAUSS_BY_REPLACE: Config = Config {
    fixture: "dist_count.csv",
    args: &[
        "count",
        "--by",
        "group",
        "--keys",
        "a",
        "--neighbours",
        "replace",
        "--noise",
        "gaussian",
        "--rho",
        "0.25",
        "--delta",
        "1e-6",
    ],
    seed_base: 1_500_000,
    runs: 40,
};

/// Keys of group found in the data at ε = 1/2, δ = 1/10, add-remove: the selection runs at
/// 9/10 of both (a tenth pays for the key cap's test), scale 1/0.45, τ = 6 (a = 8, b = 11, c = 4
/// rows).
const DISCOVER: Config = Config {
    fixture: "dist_count.csv",
    args: &["histogram", "--col", "group", "--discover", "--eps", "0.5", "--delta", "0.1"],
    seed_base: 1_600_000,
    runs: 800,
};

runs_of!(gauss_count_runs, GAUSS_COUNT);
runs_of!(gauss_histogram_runs, GAUSS_HISTOGRAM);
runs_of!(gauss_sum_runs, GAUSS_SUM);
runs_of!(gauss_by_replace_runs, GAUSS_BY_REPLACE);
runs_of!(discover_runs, DISCOVER);

/// Pearson χ² test at `ALPHA` of integer `noise` against the discrete Gaussian pmf of variance
/// parameter `sigma2`, tails pooled as for the discrete Laplace; plus a z-test of the sample
/// variance against the exact E Z² (from the pmf), which a wrong σ fails first.
fn assert_discrete_gaussian(name: &str, noise: &[i64], sigma2: f64) {
    use dpstat::privacy::sampler::discrete_gaussian_pmf;
    let n = noise.len() as f64;
    let pmf = |z: i64| discrete_gaussian_pmf(sigma2, z);
    let reach = (40.0 * sigma2.sqrt()) as i64 + 40;
    let tail = |k: i64| (k + 1..=reach).map(pmf).sum::<f64>();
    let mut k = 0;
    while n * pmf(k + 1) >= 5.0 && n * tail(k + 1) >= 5.0 {
        k += 1;
    }
    let mut probs = vec![tail(k)];
    probs.extend((-k..=k).map(pmf));
    probs.push(tail(k));
    let total: f64 = probs.iter().sum();
    assert!((total - 1.0).abs() < 1e-9, "{name}: probabilities sum to {total}");
    let mut observed = vec![0u64; probs.len()];
    for &z in noise {
        observed[(z.clamp(-k - 1, k + 1) + k + 1) as usize] += 1;
    }
    let stat: f64 = observed.iter().zip(&probs).map(|(&o, &q)| (o as f64 - n * q).powi(2) / (n * q)).sum();
    let df = probs.len() - 1;
    let critical = ChiSquared::new(df as f64).expect("df > 0").inverse_cdf(1.0 - ALPHA);
    let second = |p: u32| (-reach..=reach).map(|z| (z as f64).powi(p as i32) * pmf(z)).sum::<f64>();
    let (var_true, fourth) = (second(2), second(4));
    let var = noise.iter().map(|&z| (z * z) as f64).sum::<f64>() / n;
    let z = (var - var_true) / ((fourth - var_true * var_true) / n).sqrt();
    let z_critical = Normal::standard().inverse_cdf(1.0 - ALPHA / 2.0);
    let power = powers(noise.len(), sigma2.sqrt(), |s| discrete_gaussian_square_moments(s * s));
    eprintln!(
        "{name}: N = {n}, chi2 = {stat:.2} (critical {critical:.2}, df {df}), variance {var:.3} vs \
         {var_true:.3}: z = {z:.2}; {power}"
    );
    assert!(
        stat < critical,
        "{name}: chi2 = {stat:.2} >= critical {critical:.2} (df {df}) against the discrete Gaussian \
         (sigma² {sigma2}); observed {observed:?}, expected {:?}",
        probs.iter().map(|q| (n * q).round()).collect::<Vec<_>>()
    );
    assert!(z.abs() < z_critical, "{name}: variance {var:.4} vs {var_true:.4}: z = {z:.2}");
}

/// The fields every Gaussian release states: the mechanism, ρ exactly, δ, the ε its ρ converts
/// to (`zcdp::epsilon_for`, as the library computes it), σ and Δ₂.
fn check_gaussian_fields(run: &Run, pointer: &str, rho: (i64, i64), sigma: f64, l2_squared: i64) {
    use dpstat::privacy::zcdp::epsilon_for;
    let at = |field: &str| format!("{pointer}/{field}");
    assert_eq!(run.str(&at("mechanism")), "discrete-gaussian");
    assert_eq!(exact_fraction(run.str(&at("rho_exact"))), rational(rho.0, rho.1));
    assert_eq!(run.str(&at("delta_exact")), "1/1000000");
    let delta = "1e-6".parse().unwrap();
    assert_eq!(exact_fraction(run.str(&at("epsilon_exact"))), epsilon_for(&rational(rho.0, rho.1), &delta));
    let up = |x: f64| BigRational::from_float(x).unwrap();
    assert_eq!(run.f64(&at("sigma")), sigma, "σ = Δ₂/√(2ρ)");
    // Δ₂ is printed rounded up: never below the exact √(Δ₂²), and the next double down is.
    let printed = run.f64(&at("l2_sensitivity"));
    let below = printed.next_down();
    assert!(up(printed) * up(printed) >= int(l2_squared), "{printed}² < {l2_squared}");
    assert!(up(below) * up(below) < int(l2_squared), "{printed} is not the least double above");
}

#[test]
fn gaussian_count_noise_fits_the_discrete_gaussian() {
    let runs = gauss_count_runs();
    for run in runs {
        check_gaussian_fields(run, "", (1, 8), 2.0, 1);
        assert_eq!(run.str("/accounting/rho_exact"), "1/8");
    }
    let noise: Vec<i64> = runs.iter().map(|r| r.int("/value") - COUNT_ROWS).collect();
    assert_discrete_gaussian("count --noise gaussian --rho 0.125", &noise, 4.0);
    // The printed bound (the discrete Gaussian's certified tail) covers the noise.
    let within = |r: &&Run| ((r.int("/value") - COUNT_ROWS) as f64).abs() <= r.f64("/accuracy/error_bound");
    let covered = runs.iter().filter(within).count();
    assert_coverage("gaussian count", covered, runs.len(), confidence_of(runs));
}

#[test]
fn gaussian_histogram_under_replace_uses_the_l2_sensitivity() {
    let runs = gauss_histogram_runs();
    let truth = [COUNT_GROUP_A, 11, 4];
    let mut noise = vec![];
    for run in runs {
        check_gaussian_fields(run, "", (1, 4), 2.0, 2);
        assert_eq!(run.str("/accuracy/scope"), "per bin");
        for (i, t) in truth.iter().enumerate() {
            noise.push(run.int(&format!("/bins/{i}/count")) - t);
        }
    }
    // Δ₂² = 2 (not Δ₁² = 4): σ² = 2/(2·1/4) = 4.
    assert_discrete_gaussian("histogram replace --noise gaussian --rho 0.25", &noise, 4.0);
}

#[test]
fn gaussian_sum_noise_is_normal_on_its_grid() {
    let runs = gauss_sum_runs();
    for run in runs {
        check_gaussian_fields(run, "", (1, 2), 20.0, 400);
        assert_eq!(run.int("/grid/exponent"), -36);
        assert_eq!(BigRational::from_integer(run.units("/value_units")) * pow2(-36), run.exact("/value"));
    }
    let noise = real_noise(runs, &int(SUM_M20_10));
    let normal = Normal::new(0.0, 20.0).unwrap();
    let d = ks_statistic(&noise, |x| normal.cdf(x));
    let critical = ks_critical(noise.len());
    eprintln!("gaussian sum: KS D = {d:.4} (critical {critical:.4})");
    assert!(d < critical, "gaussian sum: KS D = {d:.4} >= {critical:.4} against N(0, 20²)");
    let var = noise.iter().map(|x| x * x).sum::<f64>() / noise.len() as f64;
    // Var of the sample variance of a normal: 2σ⁴/N.
    let z = (var - 400.0) / (2.0 * 400.0f64.powi(2) / noise.len() as f64).sqrt();
    assert!(z.abs() < Normal::standard().inverse_cdf(1.0 - ALPHA / 2.0), "variance {var} vs 400: z = {z:.2}");
}

#[test]
fn gaussian_groups_under_replace_use_the_vector_l2_sensitivity() {
    let runs = gauss_by_replace_runs();
    let mut noise = vec![];
    for run in runs {
        assert_eq!(run.str("/accounting/composition"), "parallel");
        assert_eq!(run.str("/rho_exact"), "1/4");
        for (g, truth) in [(0, COUNT_GROUP_A), (1, COUNT_ROWS - COUNT_GROUP_A)] {
            check_gaussian_fields(run, &format!("/groups/{g}"), (1, 4), 2.0, 2);
            noise.push(run.int(&format!("/groups/{g}/value")) - truth);
        }
    }
    assert_discrete_gaussian("count by group replace --noise gaussian --rho 0.25", &noise, 4.0);
}

/// Keys found in the data: key c (4 rows) is released exactly when 4 + Z >= τ, Z discrete
/// Laplace of scale 1/0.45, and then with the count 4 + Z. The joint law of (released, count) is
/// tested cell by cell against those exact probabilities; keys come sorted; τ is the library's.
#[test]
fn discovered_keys_follow_the_thresholded_laplace_law() {
    use dpstat::privacy::threshold::threshold;
    use dpstat::privacy::unit::Neighbours;
    let runs = discover_runs();
    let t = threshold(&"0.45".parse().unwrap(), &"0.09".parse().unwrap(), Neighbours::AddRemove);
    let tau = t.tau.to_i64().unwrap();
    assert_eq!(tau, 6, "(ln(1/0.09) − ln(1 + e^−0.45))/0.45 = 4.25, so m = 5");
    let scale = 1.0 / 0.45;
    let (probs, last) = discover_cells(tau, 4, scale, runs.len());
    let power = [COARSE, 1.0 / COARSE]
        .map(|f| chi2_power(&probs, &discover_probs(tau, last, 4, scale * f), runs.len()))
        .into_iter()
        .fold(1.0, f64::min);
    eprintln!("discover key c: power {power:.4} against scale x{COARSE}");
    let mut observed = vec![0u64; probs.len()];
    for run in runs {
        assert_eq!(run.int("/discovery/threshold"), tau);
        assert_eq!(run.str("/accounting/delta_exact"), "1/10");
        let bins = run.json["bins"].as_array().unwrap();
        let keys: Vec<&str> = bins.iter().map(|b| b["bin"].as_str().unwrap()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "released keys are sorted");
        assert!(bins.iter().all(|b| b["count"].as_i64().unwrap() >= tau), "{}", run.json);
        let cell = match bins.iter().find(|b| b["bin"] == "c") {
            None => 0,
            Some(b) => (b["count"].as_i64().unwrap().min(last) - tau + 1) as usize,
        };
        observed[cell] += 1;
    }
    assert_chi2("discover key c", &observed, &probs);
}

/// The law of key c (`rows` rows) under partition selection with threshold `tau` and noise of
/// `scale`, in the cells of a χ² test of `n` runs: not released, then released with count tau,
/// tau + 1, …, the last cell (count >= `last`) pooled so every cell expects at least 5.
fn discover_cells(tau: i64, rows: i64, scale: f64, n: usize) -> (Vec<f64>, i64) {
    let mut last = tau;
    while n as f64 * discrete_laplace_pmf(scale, last + 1 - rows) >= 5.0 {
        last += 1;
    }
    (discover_probs(tau, last, rows, scale), last)
}

/// The probabilities of `discover_cells`' cells for a given noise scale.
fn discover_probs(tau: i64, last: i64, rows: i64, scale: f64) -> Vec<f64> {
    let released_at = |v: i64| discrete_laplace_pmf(scale, v - rows);
    let released: f64 = (tau..tau + 400).map(released_at).sum();
    let mut probs = vec![1.0 - released];
    probs.extend((tau..last).map(released_at));
    probs.push(released - (tau..last).map(released_at).sum::<f64>());
    probs
}

// ---------------------------------------------------------------------------------------------
// 10. Library draws: the noise distributions themselves, drawn in-process through the library's
//     public mechanisms (the ones the statistics call: `noise::draw`, `noise::draw_each`,
//     `AboveThreshold::run`, `threshold`) from one seeded ChaCha20 stream per configuration,
//     with the sensitivity, ε or ρ, and grid of each end-to-end configuration above. Thousands
//     of draws cost a fraction of a second here, where each end-to-end run is a process; so the
//     power is here, and the end-to-end tests above check the wiring (fields, grid, exactness,
//     a printed bound that covers) and the distribution at a coarser resolution.
//
//     Power: every test here states the deviation it must detect, a scale (or σ) off by
//     `DEVIATION`, and asserts, before drawing, that its sample size gives the test at `ALPHA`
//     at least `POWER` probability to reject that deviation (`z_power`, `chi2_power`).

/// The deviation every library-draw test must detect: the noise's scale (or σ) off by 10%.
const DEVIATION: f64 = 1.1;
/// The least probability with which each library-draw test rejects a `DEVIATION`.
const POWER: f64 = 0.99;

/// Mean and standard deviation of the per-draw statistic whose average a z-test compares.
#[derive(Clone, Copy, Debug)]
struct Moments {
    mean: f64,
    sd: f64,
}

/// Power of the two-sided z-test at `ALPHA` of the mean of `n` draws, built for `null`, when
/// the draws follow `alt` (normal approximation of the sample mean).
fn z_power(null: Moments, alt: Moments, n: usize) -> f64 {
    let standard = Normal::standard();
    let z_critical = standard.inverse_cdf(1.0 - ALPHA / 2.0);
    let shift = (alt.mean - null.mean) * (n as f64).sqrt() / alt.sd;
    let spread = z_critical * null.sd / alt.sd;
    standard.cdf(shift - spread) + standard.cdf(-shift - spread)
}

/// Power of Pearson's χ² test at `ALPHA` on cells of probabilities `null`, with `n` draws that
/// follow `alt` (same cells): the noncentral χ² with λ = n·Σ(alt − null)²/null, in Patnaik's
/// approximation c·χ²(ν), c = (k + 2λ)/(k + λ), ν = (k + λ)²/(k + 2λ), k the degrees of freedom.
fn chi2_power(null: &[f64], alt: &[f64], n: usize) -> f64 {
    let k = (null.len() - 1) as f64;
    let lambda = n as f64 * null.iter().zip(alt).map(|(p, q)| (q - p).powi(2) / p).sum::<f64>();
    let critical = ChiSquared::new(k).expect("k > 0").inverse_cdf(1.0 - ALPHA);
    let c = (k + 2.0 * lambda) / (k + lambda);
    let nu = (k + lambda).powi(2) / (k + 2.0 * lambda);
    1.0 - ChiSquared::new(nu).expect("nu > 0").cdf(critical / c)
}

/// |X| for X ~ Laplace(0, b) is exponential: mean and standard deviation b.
fn laplace_abs_moments(scale: f64) -> Moments {
    Moments { mean: scale, sd: scale }
}

/// |Z| for the discrete Laplace of `scale`: E|Z| = 2p/((1 − p)(1 + p)), E Z² = 2p/(1 − p)².
fn discrete_laplace_abs_moments(scale: f64) -> Moments {
    let p = (-1.0 / scale).exp();
    let one_minus_p = -(-1.0 / scale).exp_m1();
    let mean = 2.0 * p / (one_minus_p * (1.0 + p));
    Moments { mean, sd: (2.0 * p / one_minus_p.powi(2) - mean * mean).sqrt() }
}

/// Z² for the discrete Gaussian of variance parameter `sigma2`, from its pmf.
fn discrete_gaussian_square_moments(sigma2: f64) -> Moments {
    use dpstat::privacy::sampler::discrete_gaussian_pmf;
    let reach = (40.0 * sigma2.sqrt()) as i64 + 40;
    let moment =
        |p: i32| (-reach..=reach).map(|z| (z as f64).powi(p) * discrete_gaussian_pmf(sigma2, z)).sum::<f64>();
    let (second, fourth) = (moment(2), moment(4));
    Moments { mean: second, sd: (fourth - second * second).sqrt() }
}

/// Asserts that `n` draws give the z-test of `moments(scale)` power >= `POWER` against
/// `moments(scale · DEVIATION)` and against `moments(scale / DEVIATION)`; returns the smaller.
fn assert_z_power(name: &str, n: usize, scale: f64, moments: impl Fn(f64) -> Moments) -> f64 {
    let null = moments(scale);
    let power =
        z_power(null, moments(scale * DEVIATION), n).min(z_power(null, moments(scale / DEVIATION), n));
    assert!(
        power >= POWER,
        "{name}: {n} draws detect a scale off by {DEVIATION} with probability {power:.4} only"
    );
    power
}

/// A seeded stream for in-process draws (INSECURE: test only, like `DPSTAT_INSECURE_SEED`).
fn stream(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// Δ (a real number) in units of `grid`, exactly: the grids here divide every Δ used.
fn units(real: &BigRational, grid: Grid) -> i128 {
    let u = real / grid.spacing();
    assert!(u.is_integer(), "{real} is not a whole number of 2^{} units", grid.exponent());
    u.to_integer().to_i128().expect("fits")
}

/// `n` releases of a scalar aggregate of true value 0 with Δ₁ = Δ₂ = `sensitivity` units:
/// the noise in grid units, and the calibration the library drew it with.
fn scalar_draws(
    n: usize,
    seed: u64,
    sensitivity: i128,
    grid: Grid,
    mechanism: &Mechanism,
) -> (Vec<BigInt>, Calibrated) {
    let aggregate = Aggregate::scalar(0i128, sensitivity, grid);
    let mut rng = stream(seed);
    let noise = Calibrated::of(&aggregate, mechanism);
    let draws = (0..n)
        .map(|_| {
            let drawn = draw(&aggregate, mechanism, &mut rng);
            assert_eq!(drawn.noise, noise, "the calibration depends on the flags only");
            drawn.value
        })
        .collect();
    (draws, noise)
}

/// `n / width` releases of a vector aggregate of `width` zeros with Δ₁ = `l1`, Δ₂² =
/// `l2_squared` (units of `Grid::UNIT`): every coordinate's noise, flattened.
fn vector_draws(
    n: usize,
    seed: u64,
    width: usize,
    l1: i128,
    l2_squared: i128,
    mechanism: &Mechanism,
) -> Vec<i64> {
    let aggregate = Aggregate { value: vec![0i128; width], sensitivity: l1, l2_squared, grid: Grid::UNIT };
    let mut rng = stream(seed);
    (0..n / width)
        .flat_map(|_| draw_each(&aggregate, mechanism, &mut rng).value)
        .map(|z| z.to_i64().expect("small"))
        .collect()
}

fn laplace_mechanism(eps: &str) -> Mechanism {
    Mechanism::Laplace(eps.parse().expect("epsilon"))
}

fn gaussian_mechanism(rho: &str) -> Mechanism {
    Mechanism::Gaussian { rho: rho.parse().expect("rho"), delta: "1e-6".parse().expect("delta") }
}

/// Counts: Δ = 1 on the integers at the ε of each count configuration above (and of the count
/// parts of mean and covariance): discrete Laplace of scale 1/ε, and the bound the library
/// states covers at least the confidence (floor only: the noise is discrete, the bound an
/// integer, so coverage may exceed it).
#[test]
fn library_counts_fit_discrete_laplace() {
    const DRAWS: usize = 5000;
    // (what it stands for, ε, scale 1/ε)
    let cases = [
        ("count --eps 0.5 (and the count part of mean at eps 1)", "0.5", 2.0),
        ("count --eps 0.3", "0.3", 10.0 / 3.0),
        ("covariance count part, eps 1/4", "0.25", 4.0),
    ];
    parallel_map(cases.len(), |i| {
        let (name, eps, scale) = cases[i];
        let power = assert_z_power(name, DRAWS, scale, discrete_laplace_abs_moments);
        progress(format_args!(
            "library draws: {name}: {DRAWS} draws, power {power:.4} against scale x{DEVIATION}"
        ));
        let (draws, noise) = scalar_draws(DRAWS, 10_000 + i as u64, 1, Grid::UNIT, &laplace_mechanism(eps));
        assert_close(name, noise.width_value(), scale);
        let bound = BigInt::from(noise.error_bound_units(0.05));
        let hits = draws.iter().filter(|z| z.abs() <= bound).count();
        assert_coverage(name, hits, DRAWS, 0.95);
        let noise: Vec<i64> = draws.iter().map(|z| z.to_i64().expect("small")).collect();
        assert_discrete_laplace(name, &noise, scale);
    });
}

/// Real-valued statistics: Δ (real) on the grid `Mechanism::grid` picks from the flags, which
/// is the one the end-to-end runs print; discrete Laplace of Δ/ε units, read as a real, is
/// Laplace(Δ/ε) far below the resolution of KS (units are 2^−40 of the scale). The bound is
/// the exact quantile here, so coverage is the confidence itself, up to the stated slack.
#[test]
fn library_real_sums_fit_laplace() {
    const DRAWS: usize = 5000;
    // (what it stands for, Δ, ε, grid exponent by hand, divided by, scale of the result)
    let cases = [
        ("sum add-remove [-20,10] eps 1", 20, "1", -36, 1, 20.0),
        ("sum replace [0,10] eps 0.25", 10, "0.25", -35, 1, 40.0),
        ("mean replace [0,10] eps 1 n 40", 10, "1", -37, 40, 0.25),
        ("mean add-remove shifted sum, eps 1/2", 5, "0.5", -37, 1, 10.0),
        ("covariance shifted sums, eps 1/4", 5, "0.25", -36, 1, 20.0),
        ("covariance products, eps 1/4", 25, "0.25", -34, 1, 100.0),
    ];
    parallel_map(cases.len(), |i| {
        let (name, delta, eps, exponent, n, scale): (&str, i64, &str, i32, i64, f64) = cases[i];
        let power = assert_z_power(name, DRAWS, scale, laplace_abs_moments);
        progress(format_args!(
            "library draws: {name}: {DRAWS} draws, power {power:.4} against scale x{DEVIATION}"
        ));
        let mechanism = laplace_mechanism(eps);
        let sensitivity = int(delta);
        let grid = mechanism.grid(&sensitivity);
        assert_eq!(grid.exponent(), exponent, "{name}: grid");
        let (draws, noise) =
            scalar_draws(DRAWS, 20_000 + i as u64, units(&sensitivity, grid), grid, &mechanism);
        assert_close(name, noise.width_value() / n as f64, scale);
        let bound = BigInt::from(noise.error_bound_units(0.05));
        let hits = draws.iter().filter(|z| z.abs() <= bound).count();
        assert_coverage(name, hits, DRAWS, 0.95);
        assert_coverage_tight(name, hits, DRAWS, 0.95);
        let real: Vec<f64> = draws.iter().map(|z| grid.to_f64(z) / n as f64).collect();
        assert_laplace(name, &real, scale);
    });
}

/// A numeric histogram under replace (Δ₁ = 2, ε = 1): every bin gets discrete Laplace(2), the
/// bins independently (a lag-one correlation test besides: a shared draw would fail it).
#[test]
fn library_histogram_bins_fit_discrete_laplace() {
    const DRAWS: usize = 8000;
    let name = "histogram replace eps 1, 4 bins";
    let power = assert_z_power(name, DRAWS, 2.0, discrete_laplace_abs_moments);
    progress(format_args!(
        "library draws: {name}: {DRAWS} draws, power {power:.4} against scale x{DEVIATION}"
    ));
    let noise = vector_draws(DRAWS, 30_000, 4, 2, 2, &laplace_mechanism("1"));
    assert_discrete_laplace(name, &noise, 2.0);
    let var = noise.iter().map(|&z| (z * z) as f64).sum::<f64>() / noise.len() as f64;
    let lag = noise.chunks(4).flat_map(|v| v.windows(2).map(|w| (w[0] * w[1]) as f64)).collect::<Vec<_>>();
    let correlation = lag.iter().sum::<f64>() / lag.len() as f64 / var;
    // Under independence the correlation estimate has standard error about 1/√(pairs).
    let z = correlation * (lag.len() as f64).sqrt();
    assert!(
        z.abs() < Normal::standard().inverse_cdf(1.0 - ALPHA / 2.0),
        "{name}: neighbouring bins correlate: {correlation:.4}, z = {z:.2}"
    );
}

/// The Gaussian mechanism at the ρ and Δ₂² of each Gaussian configuration above: the
/// discrete Gaussian of σ² = Δ₂²/(2ρ) (χ² and a variance z-test, whose power is checked),
/// and the certified bound covers at least the confidence.
#[test]
fn library_gaussian_noise_fits_the_discrete_gaussian() {
    const DRAWS: usize = 4000;
    // (what it stands for, width, Δ₂², ρ, σ²)
    let cases: [(&str, usize, i128, &str, f64); 2] = [
        ("count --noise gaussian --rho 0.125", 1, 1, "0.125", 4.0),
        ("histogram and groups under replace --rho 0.25 (Δ₂² = 2)", 2, 2, "0.25", 4.0),
    ];
    parallel_map(cases.len(), |i| {
        let (name, width, l2_squared, rho, sigma2) = cases[i];
        // σ off by DEVIATION is σ² off by DEVIATION².
        let power = assert_z_power(name, DRAWS, sigma2.sqrt(), |s| discrete_gaussian_square_moments(s * s));
        progress(format_args!(
            "library draws: {name}: {DRAWS} draws, power {power:.4} against sigma x{DEVIATION}"
        ));
        let mechanism = gaussian_mechanism(rho);
        let noise = vector_draws(DRAWS, 40_000 + i as u64, width, l2_squared, l2_squared, &mechanism);
        let calibrated = Calibrated::of(
            &Aggregate { value: (), sensitivity: l2_squared, l2_squared, grid: Grid::UNIT },
            &mechanism,
        );
        assert_close(name, calibrated.width_value(), sigma2.sqrt());
        let bound = calibrated.error_bound_units(0.05) as i64;
        let hits = noise.iter().filter(|z| z.abs() <= bound).count();
        assert_coverage(name, hits, noise.len(), 0.95);
        assert_discrete_gaussian(name, &noise, sigma2);
    });
}

/// The Gaussian mechanism on a real statistic (sum over [−20, 10] at ρ = 1/2, σ = 20) on the
/// grid the library picks: normal to KS resolution, with the variance z-test.
#[test]
fn library_gaussian_sum_is_normal_on_its_grid() {
    const DRAWS: usize = 4000;
    let name = "sum [-20,10] --noise gaussian --rho 0.5";
    let sigma = 20.0;
    let power = assert_z_power(name, DRAWS, sigma, |s| Moments { mean: s * s, sd: 2f64.sqrt() * s * s });
    progress(format_args!(
        "library draws: {name}: {DRAWS} draws, power {power:.4} against sigma x{DEVIATION}"
    ));
    let mechanism = gaussian_mechanism("0.5");
    let grid = mechanism.grid(&int(20));
    assert_eq!(grid.exponent(), -36);
    let (draws, noise) = scalar_draws(DRAWS, 50_000, units(&int(20), grid), grid, &mechanism);
    assert_close(name, noise.width_value(), sigma);
    let real: Vec<f64> = draws.iter().map(|z| grid.to_f64(z)).collect();
    let normal = Normal::new(0.0, sigma).unwrap();
    let d = ks_statistic(&real, |x| normal.cdf(x));
    let critical = ks_critical(real.len());
    assert!(d < critical, "{name}: KS D = {d:.4} >= {critical:.4} against N(0, 20²)");
    let var = real.iter().map(|x| x * x).sum::<f64>() / real.len() as f64;
    let z = (var - sigma * sigma) / (2.0 * sigma.powi(4) / real.len() as f64).sqrt();
    assert!(
        z.abs() < Normal::standard().inverse_cdf(1.0 - ALPHA / 2.0),
        "{name}: variance {var} vs 400: z = {z:.2}"
    );
    let bound = BigInt::from(noise.error_bound_units(0.05));
    assert_coverage(name, draws.iter().filter(|z| z.abs() <= bound).count(), DRAWS, 0.95);
}

/// The bounds-free quantiles' AboveThreshold at each level's scales (section 7), on the
/// people.csv queries around where it stops (from 12 scales below the threshold to 12 above:
/// the scan stops outside that window with probability below e^−12, and the window's exact
/// law, `above_threshold_distribution`, is what the draws are tested against, so cutting it
/// changes nothing the test relies on).
#[test]
fn library_above_threshold_follows_its_law() {
    const DRAWS: usize = 8000;
    let xs: Vec<f64> = column("people.csv", "age").iter().map(|s| s.parse().unwrap()).collect();
    let grid = log_grid();
    let levels = [(0u64, 1i64, 4i64, false, 8.0), (1, 1, 2, true, 4.0)];
    parallel_map(levels.len(), |l| {
        let (seed, a, b, ascending, scale) = levels[l];
        let name = format!("AboveThreshold, level {a}/{b}, scales {scale}");
        let (_, all) = scan_queries(&xs, &grid, a, b, ascending);
        let reach = (12.0 * scale) as i64;
        let start = all.iter().position(|&g| g >= -reach).expect("the queries reach the threshold");
        let end = all.iter().position(|&g| g > reach).expect("and pass it");
        let queries = &all[start..=end];
        let probs = above_threshold_distribution(queries, scale, scale);
        let alt_up = above_threshold_distribution(queries, scale * DEVIATION, scale * DEVIATION);
        let alt_down = above_threshold_distribution(queries, scale / DEVIATION, scale / DEVIATION);
        let (cells, expected) = chi2_cells(&probs, DRAWS);
        let pooled = |p: &[f64]| -> Vec<f64> {
            let mut q: Vec<f64> = cells.iter().map(|&k| p[k]).collect();
            q.push(1.0 - q.iter().sum::<f64>());
            q
        };
        let null = pooled(&probs);
        let power =
            chi2_power(&null, &pooled(&alt_up), DRAWS).min(chi2_power(&null, &pooled(&alt_down), DRAWS));
        assert!(
            power >= POWER,
            "{name}: {DRAWS} runs detect scales off by {DEVIATION} with probability {power:.4} only"
        );
        progress(format_args!(
            "library draws: {name}: {DRAWS} runs of {} queries, power {power:.4} against scales x{DEVIATION}",
            queries.len()
        ));
        let at = AboveThreshold {
            sensitivity: b as u128,
            monotone: true,
            threshold_eps: "0.5".parse().unwrap(),
            queries_eps: "0.5".parse().unwrap(),
        };
        assert_eq!(at.threshold_scale().to_f64(), Some(scale));
        assert_eq!(at.query_scale().to_f64(), Some(scale));
        let mut rng = stream(60_000 + seed);
        let stops: Vec<usize> = (0..DRAWS)
            .map(|_| at.run(queries.iter().map(|&g| g as i128), &mut rng).unwrap_or(queries.len() - 1))
            .collect();
        assert_chi2_cells(&name, &stops, &cells, &expected);
    });
}

/// Partition selection at ε = 1/2, δ = 1/10 (add-remove) on the counts of dist_count.csv
/// (a 8, b 11, c 4): the library's noise (`draw_each`, the selection's) at the threshold's
/// scale, and its τ, give key c the law of section 9's end-to-end test.
#[test]
fn library_discovery_follows_the_thresholded_laplace_law() {
    use dpstat::privacy::threshold::threshold;
    use dpstat::privacy::unit::Neighbours;
    const DRAWS: usize = 30_000;
    let name = "discovery eps 0.5 delta 0.1, key c";
    let t = threshold(&"0.5".parse().unwrap(), &"0.1".parse().unwrap(), Neighbours::AddRemove);
    let tau = t.tau.to_i64().unwrap();
    assert_eq!(tau, 5);
    let (probs, last) = discover_cells(tau, 4, 2.0, DRAWS);
    let alt = |scale: f64| discover_probs(tau, last, 4, scale);
    let power = chi2_power(&probs, &alt(2.0 * DEVIATION), DRAWS).min(chi2_power(
        &probs,
        &alt(2.0 / DEVIATION),
        DRAWS,
    ));
    assert!(
        power >= POWER,
        "{name}: {DRAWS} draws detect a scale off by {DEVIATION} with probability {power:.4} only"
    );
    progress(format_args!(
        "library draws: {name}: {DRAWS} draws, power {power:.4} against scale x{DEVIATION}"
    ));
    let aggregate = Aggregate { value: vec![8i128, 11, 4], sensitivity: 1, l2_squared: 1, grid: Grid::UNIT };
    let mechanism = laplace_mechanism("0.5");
    let mut rng = stream(70_000);
    let mut observed = vec![0u64; probs.len()];
    for _ in 0..DRAWS {
        let drawn = draw_each(&aggregate, &mechanism, &mut rng);
        let Calibrated::Laplace(c) = &drawn.noise else { panic!("laplace") };
        assert_eq!(c.scale, t.scale, "the selection's noise is the threshold's");
        let count = drawn.value[2].to_i64().expect("small");
        observed[if count < tau { 0 } else { (count.min(last) - tau + 1) as usize }] += 1;
    }
    assert_chi2(name, &observed, &probs);
}

/// The AboveThreshold queries of a bounds-free quantile at level a/b over `grid`, in scan order
/// (DESIGN §3.6): b·#(x <= c) − a·n ascending, b·#(x >= c) − (b − a)·n descending; with the
/// grid indices in that order.
fn scan_queries(xs: &[f64], grid: &[f64], a: i64, b: i64, ascending: bool) -> (Vec<usize>, Vec<i64>) {
    let n = xs.len() as i64;
    let order: Vec<usize> =
        if ascending { (0..grid.len()).collect() } else { (0..grid.len()).rev().collect() };
    let queries = order
        .iter()
        .map(|&i| {
            let c = grid[i];
            if ascending {
                b * xs.iter().filter(|&&x| x <= c).count() as i64 - a * n
            } else {
                b * xs.iter().filter(|&&x| x >= c).count() as i64 - (b - a) * n
            }
        })
        .collect();
    (order, queries)
}
