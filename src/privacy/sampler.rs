//! Exact sampling of discrete Laplace and discrete Gaussian noise.
//!
//! These are the exact samplers of Canonne, Kamath and Steinke, "The Discrete
//! Gaussian for Differential Privacy" (NeurIPS 2020): Bernoulli(exp(−γ)) by
//! their Algorithm 1, the geometric / discrete Laplace by their Algorithm 2,
//! and the discrete Gaussian by their Algorithm 3, for rational parameters.
//!
//! No floating point is used anywhere on the sampling path. Mironov ("On
//! Significance of the Least Significant Bits for Differential Privacy",
//! CCS 2012) showed that textbook floating-point Laplace samplers leak the
//! true value through the set of doubles they can and cannot output, which
//! breaks the privacy guarantee entirely. Working with integers and exact
//! rationals means the output distribution is exactly the one the privacy
//! proof is about, not an approximation of it.
//!
//! The only source of randomness is the caller's RNG, consumed solely as
//! uniform random integers: whole `u64`/`u32` words and bytes, turned into
//! a uniform value in `{0, …, q−1}` by masking and rejection, which
//! introduces no bias (a fair sign bit is one bit of a `u32`). The output is therefore exactly as good as the RNG; a
//! cryptographically secure RNG is the caller's responsibility.
//!
//! Sampling time is random and grows with the magnitude of the noise drawn
//! (and with the parameter sizes). That timing side channel is out of scope:
//! an observer who can time individual samples can learn something about the
//! noise.
//!
//! The f64 helpers [`discrete_laplace_error_bound`], [`discrete_laplace_pmf`]
//! and [`discrete_gaussian_pmf`] are public post-processing of the scale only
//! (planning, reporting, tests); they never touch data or noise.

use num_bigint::{BigInt, BigUint, Sign};
use num_integer::Integer;
use num_rational::{BigRational, Ratio};
use num_traits::{One, ToPrimitive, Zero};
use rand::RngCore;

/// Uniform integer in `{0, …, q−1}`.
///
/// Exact: draws just enough random bits for the largest possible value
/// `q − 1`, and rejects draws `>= q`. Because `q − 1` needs exactly that many
/// bits, each draw is accepted with probability more than 1/2, so the
/// expected number of draws is below 2.
///
/// `q = 0` is outside the contract (callers guarantee `q > 0`); it returns 0
/// instead of panicking, like `q = 1`. Neither consumes randomness.
pub fn uniform_below<R: RngCore + ?Sized>(rng: &mut R, q: &BigUint) -> BigUint {
    if let Some(q64) = q.to_u64() {
        return BigUint::from(uniform_below_u64(rng, q64));
    }
    // q > u64::MAX here, so `max` has at least 64 bits and `nbytes >= 8`.
    let max = q - 1u32;
    let bits = max.bits();
    let nbytes = bits.div_ceil(8);
    // Keep only the bits `max` can have in the top byte; without the mask the
    // acceptance rate could drop to 1/256.
    let top_mask = 0xFFu8 >> (nbytes * 8 - bits);
    let mut buf = vec![0u8; nbytes as usize];
    loop {
        rng.fill_bytes(&mut buf);
        if let Some(top) = buf.last_mut() {
            *top &= top_mask;
        }
        let candidate = BigUint::from_bytes_le(&buf);
        if candidate <= max {
            return candidate;
        }
    }
}

/// [`uniform_below`] for a `u64` modulus, without big-integer allocation.
pub fn uniform_below_u64<R: RngCore + ?Sized>(rng: &mut R, q: u64) -> u64 {
    if q <= 1 {
        return 0;
    }
    let max = q - 1;
    let mask = u64::MAX >> max.leading_zeros();
    loop {
        let candidate = rng.next_u64() & mask;
        if candidate <= max {
            return candidate;
        }
    }
}

/// Binomial(m, 2^−k), exactly: a trial succeeds when k fair bits all come up zero, so the trials
/// left after each bit are Binomial(left, 1/2), the ones among that many fair bits. About 2m
/// bits in all however large k is, and none once no trial is left.
pub fn binomial_pow2<R: RngCore + ?Sized>(rng: &mut R, m: u64, k: u32) -> u64 {
    let mut left = m;
    for done in 0..k {
        match left {
            0 => break,
            // One trial left (most runs are one candidate): its remaining bits in one word.
            1 => return u64::from(rng.next_u64() >> (64 - (k - done)) == 0),
            _ => left = ones_among(rng, left),
        }
    }
    left
}

/// How many of `bits` fair bits are one: Binomial(bits, 1/2).
fn ones_among<R: RngCore + ?Sized>(rng: &mut R, bits: u64) -> u64 {
    // Most runs are a few candidates: one word, without a block to fill.
    if bits <= 64 {
        return u64::from((rng.next_u64() & (u64::MAX >> (64 - bits))).count_ones());
    }
    // Drawn a block at a time: a million bits would otherwise be 15,625 calls.
    let mut block = [0u8; 512];
    let (mut ones, mut rest) = (0u64, bits);
    while rest > 0 {
        let take = rest.min(8 * block.len() as u64);
        let bytes = take.div_ceil(8) as usize;
        rng.fill_bytes(&mut block[..bytes]);
        if take % 8 != 0 {
            block[bytes - 1] &= (1u8 << (take % 8)) - 1;
        }
        ones += block[..bytes].iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        rest -= take;
    }
    ones
}

/// Bernoulli(p/q) for `0 <= p <= q`, `q > 0`: a uniform `u` in `{0, …, q−1}`,
/// true iff `u < p`.
///
/// The certain outcomes (`p = 0`, `p >= q`) are answered without drawing:
/// the result is the same with probability one, and the `p = 0` case is the
/// common `u = 0` case of the geometric sampler's inner loop.
pub fn bernoulli_ratio<R: RngCore + ?Sized>(rng: &mut R, p: &BigUint, q: &BigUint) -> bool {
    if p.is_zero() {
        return false;
    }
    if p >= q {
        return true;
    }
    // p < q, so p fits in u64 whenever q does.
    match (p.to_u64(), q.to_u64()) {
        (Some(p64), Some(q64)) => uniform_below_u64(rng, q64) < p64,
        _ => uniform_below(rng, q) < *p,
    }
}

/// Bernoulli(exp(−γ)) for rational `γ >= 0` (CKS 2020, Algorithm 1).
///
/// Callers guarantee `γ >= 0`. A negative γ (or a malformed ratio with a
/// zero denominator, which only `Ratio::new_raw` can build) is treated as 0,
/// i.e. always true, rather than panicking.
pub fn bernoulli_exp<R: RngCore + ?Sized>(rng: &mut R, gamma: &BigRational) -> bool {
    let Some((num, den)) = positive_parts(gamma) else {
        return true;
    };
    if num <= den {
        return bernoulli_exp_unit(rng, &num, &den);
    }
    // The series in `bernoulli_exp_unit` is only a valid probability for
    // γ <= 1, so split exp(−γ) = exp(−1)^⌊γ⌋ · exp(−(γ − ⌊γ⌋)).
    let (whole, frac_num) = num.div_rem(&den);
    let one = BigUint::one();
    let mut done = BigUint::zero();
    while done < whole {
        if !bernoulli_exp_unit(rng, &one, &one) {
            return false;
        }
        done += 1u32;
    }
    bernoulli_exp_unit(rng, &frac_num, &den)
}

/// Bernoulli(exp(−num/den)) for `0 <= num <= den`, `den > 0`.
///
/// The probability that the loop below ends with K = k is
/// γ^(k−1)/(k−1)! − γ^k/k!, so P(K odd) = Σ (−γ)^j/j! = exp(−γ). The
/// Bernoulli(γ/k) draws use the pair (num, den·k) directly: normalising a
/// rational every round would cost a gcd for nothing.
fn bernoulli_exp_unit<R: RngCore + ?Sized>(rng: &mut R, num: &BigUint, den: &BigUint) -> bool {
    if num.is_zero() {
        return true;
    }
    let mut k_is_odd = true;
    let mut den_k = den.clone();
    while bernoulli_ratio(rng, num, &den_k) {
        k_is_odd = !k_is_odd;
        den_k += den;
    }
    k_is_odd
}

/// Geometric on `{0, 1, 2, …}` with `P(m) ∝ exp(−m·x)` for rational `x > 0`
/// (CKS 2020, Algorithm 2).
///
/// # Panics
///
/// If `x <= 0`: the distribution does not exist, and returning anything
/// would silently release data with less noise than promised. Callers
/// validate their parameters before sampling.
pub fn geometric<R: RngCore + ?Sized>(rng: &mut R, x: &BigRational) -> BigUint {
    let Some((n, d)) = positive_parts(x) else {
        panic!("geometric: parameter x must be > 0");
    };
    geometric_parts(rng, &n, &d)
}

/// [`geometric`] for x = n/d given as its parts, `n, d > 0`.
///
/// Writing m·(n/d) = (v·d + u)/d, the pair (u, v) is drawn as u with weight
/// exp(−u/d) on `{0, …, d−1}` and v geometric with ratio exp(−1); together
/// they are geometric in v·d + u with ratio exp(−1/d), and dividing by n
/// (flooring) gives ratio exp(−n/d). This needs only Bernoulli(exp(−γ)) with
/// γ <= 1, and the work does not grow with d or n.
fn geometric_parts<R: RngCore + ?Sized>(rng: &mut R, n: &BigUint, d: &BigUint) -> BigUint {
    let u = loop {
        let u = uniform_below(rng, d);
        // u < d, so u/d < 1: the unit-interval sampler applies directly.
        if bernoulli_exp_unit(rng, &u, d) {
            break u;
        }
    };
    let one = BigUint::one();
    // Accumulate v·d + u directly instead of counting v and multiplying.
    let mut acc = u;
    while bernoulli_exp_unit(rng, &one, &one) {
        acc += d;
    }
    acc / n
}

/// Discrete Laplace with rational scale `s > 0`: `P(Z = z) ∝ exp(−|z|/s)`
/// on the integers.
///
/// A sign and a geometric magnitude are drawn; "negative zero" is rejected
/// and redrawn, because accepting it would give 0 twice the weight it should
/// have relative to every other value.
///
/// # Panics
///
/// If `scale <= 0` (see [`geometric`]).
pub fn discrete_laplace<R: RngCore + ?Sized>(rng: &mut R, scale: &BigRational) -> BigInt {
    let Some((s_num, s_den)) = positive_parts(scale) else {
        panic!("discrete_laplace: scale must be > 0");
    };
    // The geometric parameter is x = 1/s = s_den/s_num; passing the parts
    // swapped avoids building (and normalising) a new rational.
    loop {
        let negative = rng.next_u32() & 1 == 1;
        let magnitude = geometric_parts(rng, &s_den, &s_num);
        if !negative {
            return BigInt::from(magnitude);
        }
        if !magnitude.is_zero() {
            return BigInt::from_biguint(Sign::Minus, magnitude);
        }
    }
}

/// Discrete Gaussian with rational `σ² > 0`: `P(Z = z) ∝ exp(−z²/(2σ²))` on
/// the integers (CKS 2020, Algorithm 3).
///
/// Rejection from a discrete Laplace proposal of integer scale t = ⌊σ⌋ + 1:
/// draw Y with `P(Y = y) ∝ exp(−|y|/t)`, accept it with probability
/// exp(−(|Y| − σ²/t)²/(2σ²)). The two exponents add up to −y²/(2σ²) plus a
/// constant, so an accepted Y has exactly the discrete Gaussian law (CKS 2020,
/// the analysis of Algorithm 3); the acceptance probability is exact too, drawn by
/// [`bernoulli_exp`] with a rational γ. No floating point is involved: ⌊σ⌋ is
/// the integer square root of ⌊σ²⌋ (⌊√x⌋ = ⌊√⌊x⌋⌋ for x ≥ 0), and σ² stays
/// a fraction throughout.
///
/// Running time: with t = ⌊σ⌋ + 1 a round accepts with a probability bounded
/// below by a constant whatever σ is (CKS 2020, ibid.), so the number of rounds
/// is geometric with a small mean; each round costs big-integer arithmetic on
/// numbers of the bit length of σ²'s numerator and denominator and of the
/// proposal. As for the Laplace sampler, the time a draw takes depends on the
/// noise (out of scope: see the module comment).
///
/// # Panics
///
/// If `σ² <= 0` (see [`geometric`]).
pub fn discrete_gaussian<R: RngCore + ?Sized>(rng: &mut R, sigma2: &BigRational) -> BigInt {
    let Some((num, den)) = positive_parts(sigma2) else {
        panic!("discrete_gaussian: sigma^2 must be > 0");
    };
    let t = (&num / &den).sqrt() + 1u32;
    let scale = BigRational::from_integer(BigInt::from(t.clone()));
    // With σ² = num/den: (|Y| − σ²/t)²/(2σ²) = (|Y|·den·t − num)² / (2·num·den·t²).
    // Built unnormalised: `bernoulli_exp` only compares and divides its parts, so a gcd per
    // round would buy nothing.
    let gamma_den = BigInt::from(&num * &den * &t * &t * 2u32);
    let den_t = BigInt::from(&den * &t);
    let num = BigInt::from(num);
    loop {
        let y = discrete_laplace(rng, &scale);
        let a = BigInt::from(y.magnitude().clone()) * &den_t - &num;
        let gamma = Ratio::new_raw(&a * &a, gamma_den.clone());
        if bernoulli_exp(rng, &gamma) {
            return y;
        }
    }
}

/// Probability mass function of the discrete Gaussian with variance parameter
/// σ²: `exp(−z²/(2σ²)) / Σ_k exp(−k²/(2σ²))`.
///
/// For tests and planning only. The normaliser is summed term by term for
/// σ² < 4 and otherwise taken from Poisson summation,
/// `Σ_k exp(−k²/(2σ²)) = √(2π)·σ·Σ_j exp(−2π²σ²j²)`, whose terms beyond j = 0
/// are below 3e-34 relative once σ ≥ 2. A σ² `<= 0` is treated as no noise;
/// NaN gives NaN.
pub fn discrete_gaussian_pmf(sigma2: f64, z: i64) -> f64 {
    if sigma2.is_nan() {
        return f64::NAN;
    }
    if sigma2 <= 0.0 {
        return if z == 0 { 1.0 } else { 0.0 };
    }
    let weight = |k: f64| (-(k * k) / (2.0 * sigma2)).exp();
    let norm = if sigma2 < 4.0 {
        // Terms beyond |k| = 40 are below exp(−200).
        1.0 + 2.0 * (1..=40).map(|k| weight(k as f64)).sum::<f64>()
    } else {
        let pi = std::f64::consts::PI;
        let sigma = sigma2.sqrt();
        (2.0 * pi).sqrt() * sigma * (1.0 + 2.0 * (-2.0 * pi * pi * sigma2).exp())
    };
    weight(z as f64) / norm
}

/// Smallest integer `t >= 0` with `P(|Z| > t) <= beta` for
/// `Z ~ discrete_laplace(scale)`, `0 < beta < 1`.
///
/// With p = exp(−1/s), `P(|Z| > t) = 2·p^(t+1)/(1+p)`. This is public
/// post-processing of the scale, so f64 is acceptable, but the answer is
/// checked rather than trusted: a closed-form candidate is moved up until
/// the tail check holds and down while it still holds one step lower. The
/// check is done in log space (`ln p^(t+1) = −(t+1)/s`) so that large scales
/// do not underflow.
///
/// Out-of-contract inputs do not panic: `beta >= 1` gives 0 (every t
/// qualifies), `beta <= 0` or NaN gives `u128::MAX` (no finite bound), a
/// non-positive scale gives 0 (no noise), and an answer beyond `u128`
/// saturates to `u128::MAX`.
pub fn discrete_laplace_error_bound(scale: &BigRational, beta: f64) -> u128 {
    // Near the true answer the log-space check is accurate to a few ulps, so
    // a handful of steps suffices; the cap only matters once t exceeds 2^53
    // and single steps are no longer visible in f64.
    const MAX_ADJUST_STEPS: u32 = 64;

    if beta.is_nan() || beta <= 0.0 {
        return u128::MAX;
    }
    if beta >= 1.0 {
        return 0;
    }
    if positive_parts(scale).is_none() {
        return 0;
    }
    let s = match scale.to_f64() {
        Some(s) if s.is_finite() => s,
        _ => return u128::MAX,
    };
    if s <= 0.0 {
        // The scale underflowed f64: p = exp(−1/s) is 0 to within f64, the
        // noise is 0 with probability 1 − (less than any f64).
        return 0;
    }
    let p = (-1.0 / s).exp();
    let ln_one_plus_p = p.ln_1p();
    let ln_beta = beta.ln();
    let holds = |t: u128| {
        let ln_tail = std::f64::consts::LN_2 - (t as f64 + 1.0) / s - ln_one_plus_p;
        ln_tail <= ln_beta
    };
    // Solve 2·p^(t+1)/(1+p) <= beta for t: t + 1 >= s·ln(2/(beta·(1+p))).
    let needed = s * (std::f64::consts::LN_2 - ln_beta - ln_one_plus_p);
    let candidate = needed.ceil() - 1.0;
    if candidate >= u128::MAX as f64 {
        return u128::MAX;
    }
    // `as` saturates (and maps a negative candidate to 0).
    let mut t = candidate as u128;
    for _ in 0..MAX_ADJUST_STEPS {
        if holds(t) || t == u128::MAX {
            break;
        }
        t += 1;
    }
    for _ in 0..MAX_ADJUST_STEPS {
        if t == 0 || !holds(t - 1) {
            break;
        }
        t -= 1;
    }
    t
}

/// Probability mass function of the discrete Laplace distribution:
/// `P(Z = z) = (1−p)/(1+p)·p^|z|` with `p = exp(−1/s)`.
///
/// For tests and planning only. `1 − p` and `p^|z|` are computed as
/// `−expm1(−1/s)` and `exp(−|z|/s)` so that large scales keep their
/// precision. A scale `<= 0` is treated as no noise (all mass at 0); NaN
/// gives NaN.
pub fn discrete_laplace_pmf(scale: f64, z: i64) -> f64 {
    if scale.is_nan() {
        return f64::NAN;
    }
    if scale <= 0.0 {
        return if z == 0 { 1.0 } else { 0.0 };
    }
    let inv = 1.0 / scale;
    let p = (-inv).exp();
    let one_minus_p = -(-inv).exp_m1();
    one_minus_p / (1.0 + p) * (-(z.unsigned_abs() as f64) / scale).exp()
}

/// `(|numer|, |denom|)` if `r > 0` with a non-zero denominator, else `None`.
///
/// Looks at both signs because `Ratio::new_raw` can produce a negative or
/// zero denominator.
fn positive_parts(r: &BigRational) -> Option<(BigUint, BigUint)> {
    let positive =
        matches!((r.numer().sign(), r.denom().sign()), (Sign::Plus, Sign::Plus) | (Sign::Minus, Sign::Minus));
    positive.then(|| (r.numer().magnitude().clone(), r.denom().magnitude().clone()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

    /// Significance level of every goodness-of-fit test.
    const ALPHA: f64 = 1e-4;
    /// |z| threshold for normal-approximation tests (two-sided p ≈ 7e-6).
    const Z_MAX: f64 = 4.5;

    fn rng(seed: u64) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(seed) // INSECURE: test-only seed
    }

    fn ratio(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    fn chi2_critical(df: usize) -> f64 {
        ChiSquared::new(df as f64).expect("df > 0").inverse_cdf(1.0 - ALPHA)
    }

    /// Pearson χ² test of `observed` against `probs` (which must sum to 1).
    pub(crate) fn assert_chi2(name: &str, observed: &[u64], probs: &[f64]) {
        assert_eq!(observed.len(), probs.len());
        assert!(observed.len() >= 2, "{name}: need at least 2 bins");
        let total: u64 = observed.iter().sum();
        let prob_sum: f64 = probs.iter().sum();
        assert!((prob_sum - 1.0).abs() < 1e-9, "{name}: probabilities sum to {prob_sum}");
        let n = total as f64;
        let mut stat = 0.0;
        for (&o, &p) in observed.iter().zip(probs) {
            let e = n * p;
            assert!(e >= 5.0, "{name}: expected count {e} < 5");
            stat += (o as f64 - e).powi(2) / e;
        }
        let df = observed.len() - 1;
        let critical = chi2_critical(df);
        // Printed so a run with --nocapture shows how well each fit held, not only that it did.
        let p_value = 1.0 - ChiSquared::new(df as f64).expect("df > 0").cdf(stat);
        eprintln!("{name}: chi2 = {stat:.2}, df {df}, p = {p_value:.3}");
        assert!(
            stat < critical,
            "{name}: chi2 = {stat:.2} >= critical {critical:.2} (df {}), observed {observed:?}",
            observed.len() - 1
        );
    }

    /// z-score of `hits` successes in `n` Bernoulli(p) trials.
    fn binomial_z(hits: u64, n: u64, p: f64) -> f64 {
        let n = n as f64;
        (hits as f64 - n * p) / (n * p * (1.0 - p)).sqrt()
    }

    fn assert_binomial(name: &str, hits: u64, n: u64, p: f64) {
        let z = binomial_z(hits, n, p);
        assert!(z.abs() < Z_MAX, "{name}: {hits}/{n} vs p = {p}: z = {z:.2}");
    }

    /// Bins for a distribution on {0, 1, 2, …} with pmf `pmf` and upper tail
    /// `tail(k) = P(X > k)`: singletons 0..=k and a pooled tail, with k as
    /// large as possible while every expected count stays >= 5.
    fn tail_pooled_probs(n: u64, pmf: impl Fn(u64) -> f64, tail: impl Fn(u64) -> f64) -> Vec<f64> {
        let n = n as f64;
        let mut k = 0;
        while n * pmf(k + 1) >= 5.0 && n * tail(k + 1) >= 5.0 {
            k += 1;
        }
        let mut probs: Vec<f64> = (0..=k).map(&pmf).collect();
        probs.push(tail(k));
        probs
    }

    // ---- uniform_below ----

    #[test]
    fn uniform_below_small_moduli_chi_square() {
        let mut r = rng(1);
        for q in [6u32, 10] {
            let qb = BigUint::from(q);
            let draws = 60_000;
            let mut counts = vec![0u64; q as usize];
            for _ in 0..draws {
                let u = uniform_below(&mut r, &qb).to_usize().expect("u < q");
                counts[u] += 1;
            }
            let probs = vec![1.0 / f64::from(q); q as usize];
            assert_chi2(&format!("uniform_below({q})"), &counts, &probs);
        }
    }

    #[test]
    fn uniform_below_above_u64_chi_square() {
        // Both moduli take the byte path and are multiples of 8, so `u mod 8`
        // (low bits) and `u / (q/8)` (high bits, which exercise the top-byte
        // masking and byte order) are each exactly uniform on 8 classes.
        // q = 2^64 + 8 = 8·(2^61 + 1) is "just above 2^64": 9 bytes, top byte
        // masked to 1 bit. Its values >= 2^64 are too rare to see, so
        // q = 3·2^64 (top byte masked to 2 bits, both of them often set)
        // covers the masking itself.
        let mut r = rng(2);
        let draws = 40_000;
        for (name, q) in
            [("2^64+8", (BigUint::one() << 64u32) + 8u32), ("3·2^64", (BigUint::one() << 64u32) * 3u32)]
        {
            let eighth = &q / 8u32;
            let mut low = [0u64; 8];
            let mut high = [0u64; 8];
            for _ in 0..draws {
                let u = uniform_below(&mut r, &q);
                assert!(u < q);
                low[(&u % 8u32).to_usize().expect("< 8")] += 1;
                high[(&u / &eighth).to_usize().expect("< 8")] += 1;
            }
            assert_chi2(&format!("uniform_below({name}) mod 8"), &low, &[0.125; 8]);
            assert_chi2(&format!("uniform_below({name}) / (q/8)"), &high, &[0.125; 8]);
        }
    }

    #[test]
    fn uniform_below_trivial_and_boundary_moduli() {
        let mut r = rng(3);
        assert!(uniform_below(&mut r, &BigUint::one()).is_zero());
        assert!(uniform_below(&mut r, &BigUint::zero()).is_zero());
        // 2^64 is the smallest modulus on the byte path; its top byte is not
        // masked at all, and every value must still be in range.
        let q = BigUint::one() << 64u32;
        let mut top_bit_set = 0;
        for _ in 0..2_000 {
            let u = uniform_below(&mut r, &q);
            assert!(u < q);
            if u.bit(63) {
                top_bit_set += 1;
            }
        }
        assert_binomial("uniform_below(2^64) bit 63", top_bit_set, 2_000, 0.5);
    }

    // ---- binomial_pow2 ----

    /// Cells for a χ² test of `draws` draws from `probs` (outcomes in order): consecutive
    /// outcomes pooled until a cell expects 5 draws or more, a short last cell joining the one
    /// before. Returns each outcome's cell and each cell's probability.
    pub(crate) fn cells_of_five(probs: &[f64], draws: u64) -> (Vec<usize>, Vec<f64>) {
        let (mut cell_of, mut cells) = (Vec::with_capacity(probs.len()), vec![0.0]);
        for &p in probs {
            if cells.last().is_some_and(|&c| c * draws as f64 >= 5.0) {
                cells.push(0.0);
            }
            *cells.last_mut().unwrap() += p;
            cell_of.push(cells.len() - 1);
        }
        if cells.len() > 1 && cells.last().is_some_and(|&c| c * (draws as f64) < 5.0) {
            let short = cells.pop().unwrap();
            *cells.last_mut().unwrap() += short;
            cell_of.iter_mut().for_each(|c| *c = (*c).min(cells.len() - 1));
        }
        (cell_of, cells)
    }

    fn binomial_pmf(m: u64, p: f64, j: u64) -> f64 {
        let ln_choose = (1..=j).map(|i| ((m - j + i) as f64 / i as f64).ln()).sum::<f64>();
        (ln_choose + j as f64 * p.ln() + (m - j) as f64 * (1.0 - p).ln()).exp()
    }

    /// Binomial(m, 2^−k) against its pmf (χ²), for trial counts inside one word, across words
    /// and across blocks of bits.
    #[test]
    fn binomial_pow2_chi_square() {
        let mut r = rng(41);
        for (m, k) in [(1u64, 3u32), (20, 2), (130, 1), (5000, 9), (9000, 3)] {
            let p = 0.5f64.powi(k as i32);
            let draws = 20_000;
            let pmf: Vec<f64> = (0..=m).map(|j| binomial_pmf(m, p, j)).collect();
            let total: f64 = pmf.iter().sum();
            let pmf: Vec<f64> = pmf.iter().map(|q| q / total).collect();
            let (cell_of, probs) = cells_of_five(&pmf, draws);
            let mut counts = vec![0u64; probs.len()];
            for _ in 0..draws {
                counts[cell_of[binomial_pow2(&mut r, m, k) as usize]] += 1;
            }
            assert_chi2(&format!("binomial_pow2({m}, {k})"), &counts, &probs);
        }
        // No halving: every trial; 2^−64 of a million trials: none.
        assert!((0..100).all(|_| binomial_pow2(&mut r, 100, 0) == 100));
        assert!((0..1000).all(|_| binomial_pow2(&mut r, 1_000_000, 64) == 0));
        assert_eq!(binomial_pow2(&mut r, 0, 64), 0);
    }

    // ---- bernoulli_ratio ----

    #[test]
    fn bernoulli_ratio_one_third() {
        let mut r = rng(4);
        let (p, q) = (BigUint::from(1u32), BigUint::from(3u32));
        let n = 60_000;
        let hits = (0..n).filter(|_| bernoulli_ratio(&mut r, &p, &q)).count() as u64;
        assert_binomial("bernoulli_ratio(1/3)", hits, n, 1.0 / 3.0);

        // Same ratio with q beyond u64 (byte path).
        let big_q = (BigUint::one() << 70u32) * 3u32;
        let big_p = BigUint::one() << 70u32;
        let hits = (0..n).filter(|_| bernoulli_ratio(&mut r, &big_p, &big_q)).count() as u64;
        assert_binomial("bernoulli_ratio(2^70/(3·2^70))", hits, n, 1.0 / 3.0);
    }

    #[test]
    fn bernoulli_ratio_zero_never_one_always() {
        let mut r = rng(5);
        let big = (BigUint::one() << 80u32) + 1u32;
        for q in [BigUint::one(), BigUint::from(7u32), big] {
            for _ in 0..2_000 {
                assert!(!bernoulli_ratio(&mut r, &BigUint::zero(), &q));
                assert!(bernoulli_ratio(&mut r, &q, &q));
            }
        }
    }

    // ---- bernoulli_exp ----

    #[test]
    fn bernoulli_exp_frequencies() {
        let mut r = rng(6);
        let n = 100_000;
        for (num, den) in [(0, 1), (1, 2), (1, 1), (3, 2), (5, 1), (1, 1000)] {
            let gamma = ratio(num, den);
            let hits = (0..n).filter(|_| bernoulli_exp(&mut r, &gamma)).count() as u64;
            let name = format!("bernoulli_exp({num}/{den})");
            if num == 0 {
                // exp(0) = 1: no variance to test against, it must be exact.
                assert_eq!(hits, n, "{name}");
                continue;
            }
            let p = (-(num as f64) / den as f64).exp();
            assert_binomial(&name, hits, n, p);
        }
    }

    #[test]
    fn bernoulli_exp_zero_and_negative_always_true() {
        let mut r = rng(7);
        let zero = BigRational::zero();
        let negative = ratio(-3, 2);
        for _ in 0..10_000 {
            assert!(bernoulli_exp(&mut r, &zero));
            assert!(bernoulli_exp(&mut r, &negative));
        }
    }

    // ---- geometric ----

    #[test]
    fn geometric_chi_square() {
        let mut r = rng(8);
        let n = 60_000;
        for (num, den) in [(1, 3), (2, 1)] {
            let x = ratio(num, den);
            let xf = num as f64 / den as f64;
            let q = (-xf).exp();
            let pmf = |m: u64| (1.0 - q) * q.powi(m as i32);
            let tail = |m: u64| q.powi(m as i32 + 1);
            let probs = tail_pooled_probs(n, pmf, tail);
            let last = probs.len() - 1;
            let mut counts = vec![0u64; probs.len()];
            for _ in 0..n {
                let m = geometric(&mut r, &x).to_usize().unwrap_or(usize::MAX);
                counts[m.min(last)] += 1;
            }
            assert_chi2(&format!("geometric({num}/{den})"), &counts, &probs);
        }
    }

    #[test]
    #[should_panic(expected = "must be > 0")]
    fn geometric_rejects_zero_parameter() {
        geometric(&mut rng(9), &BigRational::zero());
    }

    // ---- discrete_laplace ----

    fn laplace_samples(seed: u64, scale: &BigRational, n: usize) -> Vec<i64> {
        let mut r = rng(seed);
        (0..n).map(|_| discrete_laplace(&mut r, scale).to_i64().expect("fits in i64")).collect()
    }

    /// Parameter p = exp(−1/s) of the discrete Laplace with scale s.
    fn laplace_p(scale: f64) -> f64 {
        (-1.0 / scale).exp()
    }

    #[test]
    fn discrete_laplace_chi_square() {
        let n = 100_000u64;
        for (seed, (num, den)) in [(1, 2), (1, 1), (3, 1), (10, 1)].into_iter().enumerate() {
            let scale = ratio(num, den);
            let s = num as f64 / den as f64;
            let p = laplace_p(s);
            // Bin on |z| with sign: bins −K..=K plus one pooled tail on each
            // side. Both tails have mass P(Z > K) = p^(K+1)/(1+p).
            let one_side = tail_pooled_probs(
                n,
                |k| discrete_laplace_pmf(s, k as i64),
                |k| p.powi(k as i32 + 1) / (1.0 + p),
            );
            let k = (one_side.len() - 2) as i64;
            let tail = one_side[one_side.len() - 1];
            let mut probs = vec![tail];
            probs.extend((-k..=k).map(|z| discrete_laplace_pmf(s, z)));
            probs.push(tail);
            let mut counts = vec![0u64; probs.len()];
            for z in laplace_samples(100 + seed as u64, &scale, n as usize) {
                let bin = z.clamp(-k - 1, k + 1) + k + 1;
                counts[bin as usize] += 1;
            }
            assert_chi2(&format!("discrete_laplace({num}/{den})"), &counts, &probs);
        }
    }

    #[test]
    fn discrete_laplace_zero_not_double_counted() {
        // Accepting "negative zero" would make P(0) = 1 − p instead of
        // (1 − p)/(1 + p), i.e. 1 + p times too large: at scale 1 that is
        // 0.632 vs 0.462, a z-score in the hundreds with this many draws.
        let n = 50_000;
        for (seed, (num, den)) in [(1, 2), (1, 1), (3, 1)].into_iter().enumerate() {
            let s = num as f64 / den as f64;
            let p = laplace_p(s);
            let zeros = laplace_samples(200 + seed as u64, &ratio(num, den), n)
                .into_iter()
                .filter(|&z| z == 0)
                .count() as u64;
            let p0 = (1.0 - p) / (1.0 + p);
            assert_binomial(&format!("P(Z=0) at scale {s}"), zeros, n as u64, p0);
        }
    }

    #[test]
    fn discrete_laplace_symmetric() {
        let samples = laplace_samples(300, &ratio(3, 1), 100_000);
        let positive = samples.iter().filter(|&&z| z > 0).count() as u64;
        let negative = samples.iter().filter(|&&z| z < 0).count() as u64;
        assert_binomial("P(Z>0 | Z≠0)", positive, positive + negative, 0.5);
        // Also per magnitude for the first few values, each well populated.
        for m in 1..=5 {
            let plus = samples.iter().filter(|&&z| z == m).count() as u64;
            let minus = samples.iter().filter(|&&z| z == -m).count() as u64;
            assert_binomial(&format!("P(Z={m} | |Z|={m})"), plus, plus + minus, 0.5);
        }
    }

    #[test]
    fn discrete_laplace_mean_and_variance_scale_3() {
        let s = 3.0;
        let p = laplace_p(s);
        let n = 100_000;
        let samples = laplace_samples(400, &ratio(3, 1), n);
        let nf = n as f64;

        let var_true = 2.0 * p / (1.0 - p).powi(2);
        // Fourth moment from the pmf (terms beyond |z| = 400 are < 1e-50).
        let m4_true: f64 = (-400i64..=400).map(|z| (z as f64).powi(4) * discrete_laplace_pmf(s, z)).sum();

        let mean = samples.iter().map(|&z| z as f64).sum::<f64>() / nf;
        let z_mean = mean / (var_true / nf).sqrt();
        assert!(z_mean.abs() < Z_MAX, "mean {mean}: z = {z_mean:.2}");

        // The mean is known to be 0, so use the raw second moment; its
        // standard error is sqrt((E Z^4 − Var^2)/n).
        let second = samples.iter().map(|&z| (z as f64).powi(2)).sum::<f64>() / nf;
        let se = ((m4_true - var_true * var_true) / nf).sqrt();
        let z_var = (second - var_true) / se;
        assert!(z_var.abs() < Z_MAX, "variance {second} vs {var_true}: z = {z_var:.2}");
    }

    #[test]
    fn discrete_laplace_large_scale_quantile_matches_error_bound() {
        // s = 2^40 as a fraction with a non-trivial denominator, the way a
        // sensitivity/epsilon ratio arrives: (3·2^40)/3 normalises back, so
        // use 2^40 + 1/3 = (3·2^40 + 1)/3 to keep a denominator of 3.
        let num = BigInt::from(3u64 << 40) + 1;
        let scale = BigRational::new(num, BigInt::from(3));
        let s = (1u64 << 40) as f64 + 1.0 / 3.0;
        let beta = 0.05;
        let bound = discrete_laplace_error_bound(&scale, beta) as f64;
        // Continuous-Laplace sanity: |Z| is ≈ exponential, 0.95 quantile ≈ s·ln 20.
        assert!((bound / (s * 20f64.ln()) - 1.0).abs() < 1e-6);

        let n = 20_000;
        let mut r = rng(500);
        let mut magnitudes: Vec<u64> = (0..n)
            .map(|_| discrete_laplace(&mut r, &scale).magnitude().to_u64().expect("fits in u64"))
            .collect();
        magnitudes.sort_unstable();
        let empirical = magnitudes[(0.95 * n as f64) as usize] as f64;
        // The sample quantile's standard error is sqrt(β(1−β)/n)/f(q) with
        // f(q) = β/s the density of |Z| there: ≈ 1.0% of the quantile for
        // n = 20 000, so 5% is about five standard errors.
        let rel = (empirical / bound - 1.0).abs();
        assert!(rel < 0.05, "empirical 0.95 quantile {empirical} vs bound {bound}");

        let covered = magnitudes.iter().filter(|&&m| m as f64 <= bound).count() as f64 / n as f64;
        let se = (beta * (1.0 - beta) / n as f64).sqrt();
        assert!(covered >= 1.0 - beta - 4.0 * se, "coverage {covered} below {}", 1.0 - beta);
    }

    #[test]
    #[should_panic(expected = "must be > 0")]
    fn discrete_laplace_rejects_negative_scale() {
        discrete_laplace(&mut rng(10), &ratio(-1, 1));
    }

    #[test]
    fn discrete_laplace_pmf_sums_to_one() {
        for s in [0.5, 1.0, 3.0, 10.0] {
            let total: f64 = (-2_000i64..=2_000).map(|z| discrete_laplace_pmf(s, z)).sum();
            assert!((total - 1.0).abs() < 1e-12, "scale {s}: sum {total}");
        }
        assert_eq!(discrete_laplace_pmf(0.0, 0), 1.0);
        assert_eq!(discrete_laplace_pmf(0.0, 1), 0.0);
    }

    // ---- discrete_gaussian ----

    fn gaussian_samples(seed: u64, sigma2: &BigRational, n: usize) -> Vec<i64> {
        let mut r = rng(seed);
        (0..n).map(|_| discrete_gaussian(&mut r, sigma2).to_i64().expect("fits in i64")).collect()
    }

    /// P(Z > k) for the discrete Gaussian, summed from the pmf (terms beyond 40σ are < e^-800).
    fn gaussian_upper_tail(sigma2: f64, k: i64) -> f64 {
        let reach = (40.0 * sigma2.sqrt()) as i64 + 50;
        (k + 1..=k + reach).rev().map(|z| discrete_gaussian_pmf(sigma2, z)).sum()
    }

    /// χ² of the sampler against the exact pmf, bins −K..=K and a pooled tail on each side, for a
    /// small σ (the proposal's t = 1), σ = 1, non-integer σ² on both sides of t, and a σ near 42.
    #[test]
    fn discrete_gaussian_chi_square() {
        let n = 60_000u64;
        for (seed, (num, den)) in [(1, 4), (1, 1), (7, 3), (100, 1), (12_345, 7)].into_iter().enumerate() {
            let s2 = num as f64 / den as f64;
            let one_side = tail_pooled_probs(
                n,
                |k| discrete_gaussian_pmf(s2, k as i64),
                |k| gaussian_upper_tail(s2, k as i64),
            );
            let k = (one_side.len() - 2) as i64;
            let tail = one_side[one_side.len() - 1];
            let mut probs = vec![tail];
            probs.extend((-k..=k).map(|z| discrete_gaussian_pmf(s2, z)));
            probs.push(tail);
            let mut counts = vec![0u64; probs.len()];
            for z in gaussian_samples(600 + seed as u64, &ratio(num, den), n as usize) {
                counts[(z.clamp(-k - 1, k + 1) + k + 1) as usize] += 1;
            }
            assert_chi2(&format!("discrete_gaussian(σ² = {num}/{den})"), &counts, &probs);
        }
    }

    /// σ² = 2^80 + 1/3, the size the grid gives (σ ≈ 2^40 units): z/σ is standard normal to
    /// within ~1/σ, so a χ² over 20 equiprobable normal bins must hold, and the second moment
    /// must be σ² (the discrete Gaussian's variance is below σ² by far less than its error here).
    #[test]
    fn discrete_gaussian_large_sigma_is_normal() {
        let num = BigInt::from(3) * (BigInt::one() << 80u32) + 1;
        let sigma2 = BigRational::new(num, BigInt::from(3));
        let sigma = 2f64.powi(40);
        let n = 20_000;
        let mut r = rng(700);
        let std_normal = Normal::new(0.0, 1.0).expect("valid normal");
        let bins = 20;
        let edges: Vec<f64> = (1..bins).map(|i| std_normal.inverse_cdf(i as f64 / bins as f64)).collect();
        let mut counts = vec![0u64; bins];
        let mut second = 0.0;
        for _ in 0..n {
            let z = discrete_gaussian(&mut r, &sigma2).to_f64().expect("finite") / sigma;
            counts[edges.partition_point(|&e| e < z)] += 1;
            second += z * z;
        }
        assert_chi2("discrete_gaussian(σ² = 2^80 + 1/3) / σ", &counts, &vec![1.0 / bins as f64; bins]);
        // E z² = 1, Var z² = 2 for a standard normal.
        let z_score = (second / n as f64 - 1.0) / (2.0 / n as f64).sqrt();
        assert!(z_score.abs() < Z_MAX, "second moment {}: z = {z_score:.2}", second / n as f64);
    }

    #[test]
    fn discrete_gaussian_symmetric_with_known_zero_mass() {
        let (num, den) = (7, 3);
        let s2 = num as f64 / den as f64;
        let n = 100_000;
        let samples = gaussian_samples(800, &ratio(num, den), n);
        let zeros = samples.iter().filter(|&&z| z == 0).count() as u64;
        assert_binomial("P(Z=0) at σ² = 7/3", zeros, n as u64, discrete_gaussian_pmf(s2, 0));
        for m in 1..=4 {
            let plus = samples.iter().filter(|&&z| z == m).count() as u64;
            let minus = samples.iter().filter(|&&z| z == -m).count() as u64;
            assert_binomial(&format!("P(Z={m} | |Z|={m})"), plus, plus + minus, 0.5);
        }
    }

    #[test]
    fn discrete_gaussian_tiny_sigma_is_almost_always_zero() {
        // σ² = 1/100: P(Z ≠ 0) = 2e^-50/(1 + …) ≈ 4e-22.
        assert!(gaussian_samples(900, &ratio(1, 100), 20_000).iter().all(|&z| z == 0));
    }

    #[test]
    #[should_panic(expected = "must be > 0")]
    fn discrete_gaussian_rejects_zero_variance() {
        discrete_gaussian(&mut rng(11), &BigRational::zero());
    }

    #[test]
    fn discrete_gaussian_pmf_sums_to_one() {
        for s2 in [0.01, 0.25, 1.0, 7.0 / 3.0, 4.0, 100.0, 12_345.0 / 7.0] {
            let reach = (40.0 * f64::sqrt(s2)) as i64 + 50;
            let total: f64 = (-reach..=reach).map(|z| discrete_gaussian_pmf(s2, z)).sum();
            assert!((total - 1.0).abs() < 1e-12, "σ² {s2}: sum {total}");
        }
        // The two normaliser methods meet at σ² = 4: both sides of it agree with a direct sum.
        let direct: f64 = (-200i64..=200).map(|k| (-(k * k) as f64 / 8.0).exp()).sum();
        assert!((discrete_gaussian_pmf(4.0, 0) - 1.0 / direct).abs() < 1e-15);
        assert_eq!(discrete_gaussian_pmf(0.0, 0), 1.0);
        assert_eq!(discrete_gaussian_pmf(-1.0, 3), 0.0);
    }

    // ---- discrete_laplace_error_bound ----

    /// Smallest t with Σ_{|z|>t} pmf(z) <= beta, summing the pmf directly.
    fn brute_force_bound(s: f64, beta: f64) -> u128 {
        let limit = (s * 200.0) as i64 + 200;
        // tails[t] = P(|Z| > t), accumulated from the far end for accuracy.
        let mut tail = 0.0;
        let mut tails = vec![0.0; limit as usize + 1];
        for z in (1..=limit).rev() {
            tails[z as usize - 1] = tail + 2.0 * discrete_laplace_pmf(s, z);
            tail = tails[z as usize - 1];
        }
        tails.iter().position(|&t| t <= beta).expect("limit large enough") as u128
    }

    #[test]
    fn error_bound_matches_brute_force() {
        // Hand-checked anchor: s = 1, p = 1/e, P(|Z| > t) = 2p^(t+1)/(1+p)
        // is 0.0728 at t = 2 (> 0.05) and 0.0268 at t = 3.
        assert_eq!(discrete_laplace_error_bound(&ratio(1, 1), 0.05), 3);
        for (num, den) in [(1, 2), (1, 1), (3, 1), (10, 1), (7, 3), (100, 1)] {
            let s = num as f64 / den as f64;
            for beta in [0.5, 0.2, 0.05, 0.01, 1e-3, 1e-6] {
                let got = discrete_laplace_error_bound(&ratio(num, den), beta);
                let want = brute_force_bound(s, beta);
                assert_eq!(got, want, "scale {num}/{den}, beta {beta}");
            }
        }
    }

    #[test]
    fn error_bound_monotone() {
        let betas = [0.9, 0.5, 0.2, 0.1, 0.05, 0.01, 1e-3, 1e-6, 1e-12];
        let scales = [
            ratio(1, 10),
            ratio(1, 2),
            ratio(1, 1),
            ratio(3, 1),
            ratio(1_000, 1),
            ratio(1_000_000_000_000, 1),
        ];
        for scale in &scales {
            let bounds: Vec<u128> = betas.iter().map(|&b| discrete_laplace_error_bound(scale, b)).collect();
            assert!(bounds.windows(2).all(|w| w[0] <= w[1]), "not monotone in beta at {scale}: {bounds:?}");
        }
        for &beta in &betas {
            let bounds: Vec<u128> = scales.iter().map(|s| discrete_laplace_error_bound(s, beta)).collect();
            assert!(
                bounds.windows(2).all(|w| w[0] <= w[1]),
                "not monotone in scale at beta {beta}: {bounds:?}"
            );
        }
    }

    #[test]
    fn error_bound_edge_cases() {
        let one = ratio(1, 1);
        assert_eq!(discrete_laplace_error_bound(&one, 1.0), 0);
        assert_eq!(discrete_laplace_error_bound(&one, 0.0), u128::MAX);
        assert_eq!(discrete_laplace_error_bound(&one, f64::NAN), u128::MAX);
        assert_eq!(discrete_laplace_error_bound(&ratio(-1, 1), 0.05), 0);
        // Tiny scale: P(Z ≠ 0) = 2p/(1+p) with p = exp(−1000) ≈ 0.
        assert_eq!(discrete_laplace_error_bound(&ratio(1, 1000), 1e-9), 0);
        // Huge scale saturates instead of overflowing.
        let huge = BigRational::from_integer(BigInt::one() << 200u32);
        assert_eq!(discrete_laplace_error_bound(&huge, 0.05), u128::MAX);
    }
}
