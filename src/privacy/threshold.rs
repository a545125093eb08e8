//! Partition selection: the threshold that lets a release name only keys found in the data
//! (issue 15, item 1): `--discover` (`query::discover`, docs/DESIGN.md §9.5).
//!
//! **Mechanism.** For every key observed in the data (count c_k >= 1), draw c̃_k = c_k + Z_k with
//! Z_k independent discrete Laplace noise of scale s, P(Z = z) ∝ exp(−|z|/s); release the pairs
//! (k, c̃_k) with c̃_k >= τ, sorted by key (so their order says nothing), and nothing about the
//! other keys. [`threshold`] gives s and τ from ε, δ and the privacy unit, never from the data.
//!
//! **Add-remove**, each row contributing 1 to the count of exactly one key; s = 1/ε. Let D' be
//! D plus one row with key k.
//! - If k is observed in D, both datasets have the same keys, the vector of their counts moves
//!   by 1 in L1, and the release is post-processing of a Laplace release: ε-DP.
//! - If k is new, M(D') on the event "k is not released" has exactly the law of M(D) (the other
//!   keys' counts and noise are the same), and that event fails with probability
//!   p = P(1 + Z >= τ). So for every set S of outputs, P[M(D) ∈ S] <= P[M(D') ∈ S] + p and
//!   P[M(D') ∈ S] <= P[M(D) ∈ S] + p.
//!
//!   Both cases are (ε, δ)-DP once p <= δ (Korolova, Kenthapadi, Mishra, Ntoulas 2009, who
//!   introduced thresholded key release; Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo,
//!   Gipson 2020, the form Google's `PartitionSelection` implements).
//!
//! **Replace**, one row's key changed from A to B; s = 2/ε, because when A and B are observed in
//! both datasets two counts move by 1 each (L1 sensitivity 2). If B is new and A stays observed,
//! the shared counts move by 1 in one coordinate (a factor e^(ε/2)) besides B's chance p of
//! appearing: P[M(D) ∈ S] <= e^(ε/2)·(P[M(D') ∈ S] + p), so e^(ε/2)·p <= δ is needed. If B is new
//! and A vanishes (its count was 1), the shared counts are identical and p suffices, as above.
//! So under replace τ is chosen for p <= δ·e^(−ε/2), at twice the noise.
//!
//! **The threshold.** With q = exp(−1/s), P(Z >= m) = q^m/(1 + q) for m >= 0, so p <= δ' holds
//! for τ = 1 + m with the least m >= 0 such that
//!
//! ```text
//! m >= s·(ln(1/δ') − ln(1 + q))
//! ```
//!
//! computed exactly: the right side is bracketed between rationals (ln and exp of rationals,
//! [`crate::numeric::bracket`]) and refined until its ceiling is decided, which always happens
//! because it is never an integer (q is transcendental, so q^(−m)·(1 + q) = 1/δ' has no
//! solution for rational δ'); should the refinement ever stop undecided, the larger candidate
//! is taken, which only raises τ.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};

use super::delta::Delta;
use super::epsilon::Epsilon;
use super::unit::Neighbours;
use crate::numeric::bracket::{self, ceil_of, exp_neg, Bracket};
use crate::numeric::exact::floor_log2;

/// The noise and threshold of a partition selection at (ε, δ).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Threshold {
    /// τ >= 1: a key is released iff its noisy count is at least τ.
    pub tau: BigInt,
    /// The discrete Laplace scale s of each key's count noise: 1/ε (add-remove), 2/ε (replace).
    pub scale: BigRational,
}

/// The threshold τ and noise scale s that make releasing the keys whose noisy count reaches τ
/// (ε, δ)-DP under `unit`, each row contributing to one key (module comment for the proof).
pub fn threshold(eps: &Epsilon, delta: &Delta, unit: Neighbours) -> Threshold {
    let e = eps.as_rational();
    // a = 1/s: the noise's exponent per unit of count.
    let a = match unit {
        Neighbours::AddRemove => e.clone(),
        Neighbours::Replace => e / BigInt::from(2),
    };
    // ln(1/δ') = ln(1/δ) + extra, with extra = ε/2 = a under replace (δ' = δ·e^(−ε/2)).
    let extra = match unit {
        Neighbours::AddRemove => BigRational::zero(),
        Neighbours::Replace => a.clone(),
    };
    let inverse_delta = delta.as_rational().recip();
    // Dividing by a magnifies the numerator's error by 1/a: pay for it in bits.
    let magnify = (-floor_log2(&a)).max(0) as u32;
    let bound = |guard: u32| -> Bracket {
        let bits = 32 + guard + magnify;
        let ln_inv_delta = bracket::ln(&inverse_delta, bits).unwrap_or_else(|| unreachable!("1/δ > 1"));
        let q = exp_neg(&a, bits).unwrap_or_else(|| unreachable!("a > 0"));
        let one = BigRational::one();
        let ln_lo_q = bracket::ln(&(&one + &q.lo), bits).unwrap_or_else(|| unreachable!("1 + q > 0"));
        let ln_hi_q = bracket::ln(&(&one + &q.hi), bits).unwrap_or_else(|| unreachable!("1 + q > 0"));
        // ln(1 + q) is increasing in q: its lower end from q.lo, its upper end from q.hi.
        let lo = (ln_inv_delta.lo + &extra - ln_hi_q.hi) / &a;
        let hi = (ln_inv_delta.hi + &extra - ln_lo_q.lo) / &a;
        Bracket { lo, hi }
    };
    let m = ceil_of(bound).max(BigInt::zero());
    Threshold { tau: m + 1, scale: a.recip() }
}

/// The margin m of a noisy cap test on a count of sensitivity 1 (`query::discover::KeyCap`):
/// the least m >= 0 with e^(−ε_c·m) <= δ_c, that is m = ⌈ln(1/δ_c)/ε_c⌉.
///
/// With Z discrete Laplace of scale 1/ε_c and q = e^(−ε_c), P(Z <= −(m + 1)) = q^(m+1)/(1 + q),
/// and q^(m+1)·(1 + e^(ε_c))/(1 + q) = q^m: so a test "stop iff D + Z > C − m" that is forced to
/// stop whenever D > C differs from the pure Laplace test only on an event of probability p with
/// p·(1 + e^(ε_c)) <= δ_c, which makes the forced test (ε_c, δ_c)-DP (the DESIGN §9.5 argument).
/// ln(1/δ_c) is irrational for rational δ_c ≠ 1, so the quotient is never an integer and its
/// ceiling is decided by refinement; an undecided one takes the larger m, which is safe.
/// For a count of sensitivity g (the keys one person adds), `query::discover::KeyCap` takes
/// this margin at ε_c/g and adds g − 1.
pub fn cap_margin(eps: &Epsilon, delta: &Delta) -> BigInt {
    let a = eps.as_rational().clone();
    let inverse_delta = delta.as_rational().recip();
    let magnify = (-floor_log2(&a)).max(0) as u32;
    let bound = |guard: u32| -> Bracket {
        let bits = 32 + guard + magnify;
        let ln = bracket::ln(&inverse_delta, bits).unwrap_or_else(|| unreachable!("1/δ > 1"));
        Bracket { lo: ln.lo / &a, hi: ln.hi / &a }
    };
    ceil_of(bound).max(BigInt::zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::sampler::discrete_laplace;
    use num_traits::ToPrimitive;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use std::collections::BTreeMap;

    fn eps(s: &str) -> Epsilon {
        s.parse().unwrap()
    }

    fn delta(s: &str) -> Delta {
        s.parse().unwrap()
    }

    /// ln P(Z >= m) for the discrete Laplace with exponent a = 1/s: −a·m − ln(1 + e^(−a)).
    fn ln_tail(a: f64, m: f64) -> f64 {
        -a * m - (-a).exp().ln_1p()
    }

    #[test]
    fn hand_computed_thresholds() {
        // ε = 1, δ = 0.1, add-remove: (ln 10 − ln(1 + e^-1))/1 = 1.989, so m = 2 and τ = 3;
        // P(Z >= 2) = e^-2/(1 + e^-1) = 0.0989 <= 0.1 < P(Z >= 1) = 0.269.
        let t = threshold(&eps("1"), &delta("0.1"), Neighbours::AddRemove);
        assert_eq!(t.tau, BigInt::from(3));
        assert_eq!(t.scale, BigRational::one());
        // Replace at ε = 1, δ = 0.2: s = 2, δ' = 0.2·e^-0.5; (ln 5 + 0.5 − ln(1 + e^-0.5))/0.5
        // = 3.271, so m = 4 and τ = 5.
        let t = threshold(&eps("1"), &delta("0.2"), Neighbours::Replace);
        assert_eq!(t.tau, BigInt::from(5));
        assert_eq!(t.scale, BigRational::from_integer(BigInt::from(2)));
        // The issue's example, ε = 1, δ = 1e-7: (16.118 − 0.313)/1 = 15.80, τ = 17.
        assert_eq!(threshold(&eps("1"), &delta("1e-7"), Neighbours::AddRemove).tau, BigInt::from(17));
        // Replace: (16.118 + 0.5 − ln(1 + e^-0.5))/0.5 = 32.29, τ = 34.
        assert_eq!(threshold(&eps("1"), &delta("1e-7"), Neighbours::Replace).tau, BigInt::from(34));
        // δ so large that m = 0 would do: τ never drops below 1.
        assert_eq!(threshold(&eps("1"), &delta("0.9"), Neighbours::AddRemove).tau, BigInt::from(1));
    }

    /// Over a spread of ε and δ: a new key passes with probability at most δ' at τ, and more
    /// than δ' at τ − 1 (τ is the least safe threshold), checked in f64 log space away from ties.
    #[test]
    fn threshold_is_the_least_safe_one() {
        for e in ["0.01", "0.1", "0.5", "1", "2", "10", "1e-6"] {
            for d in ["0.3", "0.01", "1e-5", "1e-7", "1e-9", "1e-15", "1e-100"] {
                for unit in [Neighbours::AddRemove, Neighbours::Replace] {
                    let t = threshold(&eps(e), &delta(d), unit);
                    let ef: f64 = e.parse().unwrap();
                    let df: f64 = d.parse().unwrap();
                    let (a, ln_target) = match unit {
                        Neighbours::AddRemove => (ef, df.ln()),
                        Neighbours::Replace => (ef / 2.0, df.ln() - ef / 2.0),
                    };
                    assert!((t.scale.to_f64().unwrap() * a - 1.0).abs() < 1e-12);
                    let m = t.tau.to_f64().unwrap() - 1.0;
                    let slack = 1e-9 * ln_target.abs().max(1.0);
                    assert!(ln_tail(a, m) <= ln_target + slack, "ε {e} δ {d} {unit:?}: τ {} unsafe", t.tau);
                    if m >= 1.0 {
                        assert!(
                            ln_tail(a, m - 1.0) > ln_target - slack,
                            "ε {e} δ {d} {unit:?}: τ {} not least",
                            t.tau
                        );
                    }
                }
            }
        }
    }

    /// m = ⌈ln(1/δ)/ε⌉ by hand, and the least safe one over a grid: e^(−εm) <= δ < e^(−ε(m−1)),
    /// checked in f64 away from ties.
    #[test]
    fn cap_margin_is_the_least_safe_one() {
        // ln(1e7)/0.1 = 161.18: m = 162. ln(10)/1 = 2.303: m = 3.
        assert_eq!(cap_margin(&eps("0.1"), &delta("1e-8")), BigInt::from(185));
        assert_eq!(cap_margin(&eps("0.1"), &delta("1e-7")), BigInt::from(162));
        assert_eq!(cap_margin(&eps("1"), &delta("0.1")), BigInt::from(3));
        for e in ["0.001", "0.1", "1", "3"] {
            for d in ["0.5", "1e-3", "1e-9", "1e-40"] {
                let m = cap_margin(&eps(e), &delta(d)).to_f64().unwrap();
                let (ef, ln_d) = (e.parse::<f64>().unwrap(), d.parse::<f64>().unwrap().ln());
                let exact = -ln_d / ef;
                if (exact - exact.round()).abs() < 1e-6 {
                    continue;
                }
                assert!(-ef * m <= ln_d + 1e-9, "ε {e}, δ {d}: m {m} is not safe");
                assert!(-ef * (m - 1.0) > ln_d, "ε {e}, δ {d}: m − 1 would do, m {m}");
            }
        }
    }

    /// The forced cap test's failure event: P(Z <= −(m+1))·(1 + e^ε) equals q^m <= δ, by the
    /// sampler itself (the module's identity, so a wrong m or scale shows here).
    #[test]
    fn cap_margin_tail_matches_the_sampler() {
        let (e, d) = (eps("0.5"), delta("0.05"));
        let m = cap_margin(&e, &d).to_i64().unwrap();
        assert_eq!(m, 6); // ln(20)/0.5 = 5.99
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let scale = e.as_rational().recip();
        let draws = 200_000;
        let below =
            (0..draws).filter(|_| discrete_laplace(&mut rng, &scale) <= BigInt::from(-(m + 1))).count();
        let p = below as f64 / draws as f64;
        let q = (-0.5f64).exp();
        let expected = q.powi(m as i32 + 1) / (1.0 + q);
        // 200k draws of a 0.0237 event: sd 0.00034; 5 sd.
        assert!((p - expected).abs() < 0.0017, "P(Z <= −(m+1)) = {p}, expected {expected}");
        assert!(expected * (1.0 + 0.5f64.exp()) <= 0.05 + 1e-12);
    }

    #[test]
    fn threshold_monotone() {
        let deltas = ["0.5", "0.1", "1e-3", "1e-7", "1e-20"];
        let taus: Vec<BigInt> =
            deltas.iter().map(|d| threshold(&eps("1"), &delta(d), Neighbours::AddRemove).tau).collect();
        assert!(taus.windows(2).all(|w| w[0] <= w[1]), "not monotone in δ: {taus:?}");
        let epsilons = ["10", "2", "1", "0.3", "0.01"];
        let taus: Vec<BigInt> =
            epsilons.iter().map(|e| threshold(&eps(e), &delta("1e-7"), Neighbours::AddRemove).tau).collect();
        assert!(taus.windows(2).all(|w| w[0] <= w[1]), "not monotone in ε: {taus:?}");
        for (e, d) in [("1", "1e-7"), ("0.1", "1e-5")] {
            let ar = threshold(&eps(e), &delta(d), Neighbours::AddRemove).tau;
            let re = threshold(&eps(e), &delta(d), Neighbours::Replace).tau;
            assert!(re > ar, "replace {re} should exceed add-remove {ar}");
        }
    }

    /// The released-key sets of `runs` runs of the mechanism on `counts`.
    fn released_sets(
        counts: &[(&'static str, i64)],
        t: &Threshold,
        runs: usize,
        rng: &mut ChaCha20Rng,
    ) -> BTreeMap<Vec<&'static str>, u64> {
        let mut out = BTreeMap::new();
        for _ in 0..runs {
            let set: Vec<&'static str> = counts
                .iter()
                .filter(|(_, c)| BigInt::from(*c) + discrete_laplace(rng, &t.scale) >= t.tau)
                .map(|(k, _)| *k)
                .collect();
            *out.entry(set).or_insert(0) += 1;
        }
        out
    }

    /// The privacy loss the runs show, in both directions: for outputs partitioned into the
    /// observed key sets, the largest P_x(S) − e^ε·P_y(S) over all unions S of them is
    /// Σ max(0, p_x − e^ε·p_y) over the key sets (the hockey-stick divergence of the
    /// partition). (ε, δ)-DP requires it to be at most δ; returns the excess over δ beyond 4.5
    /// standard errors of sampling noise, one message per direction that shows one.
    fn violations(
        name: &str,
        x: &BTreeMap<Vec<&'static str>, u64>,
        y: &BTreeMap<Vec<&'static str>, u64>,
        runs: usize,
        eps: f64,
        delta: f64,
    ) -> Vec<String> {
        let n = runs as f64;
        let sets: std::collections::BTreeSet<_> = x.keys().chain(y.keys()).collect();
        let mut bad = Vec::new();
        for (from, to, dir) in [(x, y, "D→D'"), (y, x, "D'→D")] {
            let (mut loss, mut var) = (0.0, 0.0);
            for set in &sets {
                let p = *from.get(*set).unwrap_or(&0) as f64 / n;
                let q = *to.get(*set).unwrap_or(&0) as f64 / n;
                if p > eps.exp() * q {
                    loss += p - eps.exp() * q;
                    var += (p * (1.0 - p) + eps.exp().powi(2) * q * (1.0 - q)) / n;
                }
            }
            eprintln!("{name}, {dir}: Σ max(0, p − e^ε·q) = {loss:.4} (δ = {delta}, se {:.4})", var.sqrt());
            if loss > delta + 4.5 * var.sqrt() {
                bad.push(format!("{dir}: {loss:.4} > δ = {delta}"));
            }
        }
        bad
    }

    /// Empirical privacy on neighbours where the differing row creates a new key (and, as a
    /// control, where it joins an existing one), with the seeded generator; and the same check
    /// must catch a threshold one step too low.
    #[test]
    fn empirical_privacy_add_remove() {
        let (e, d) = (eps("1"), delta("0.1"));
        let t = threshold(&e, &d, Neighbours::AddRemove);
        let runs = 60_000;
        let mut rng = ChaCha20Rng::seed_from_u64(15); // INSECURE: test-only seed
        let base = released_sets(&[("a", 3), ("b", 1)], &t, runs, &mut rng);
        let new_key = released_sets(&[("a", 3), ("b", 1), ("c", 1)], &t, runs, &mut rng);
        let old_key = released_sets(&[("a", 3), ("b", 2)], &t, runs, &mut rng);
        let bad = violations("new key", &base, &new_key, runs, 1.0, 0.1);
        assert!(bad.is_empty(), "new key: {bad:?}");
        let bad = violations("existing key", &base, &old_key, runs, 1.0, 0.1);
        assert!(bad.is_empty(), "existing key: {bad:?}");
        // The new key's release rate is the δ-part: p = e^-2/(1 + e^-1) = 0.0989, just under δ.
        let with_c: u64 = new_key.iter().filter(|(k, _)| k.contains(&"c")).map(|(_, n)| n).sum();
        let rate = with_c as f64 / runs as f64;
        eprintln!("add-remove ε 1, δ 0.1: τ {}, new key released in {rate:.4} of runs", t.tau);
        assert!((rate - 0.0989).abs() < 4.5 * (0.0989f64 * 0.9011 / runs as f64).sqrt());

        let low = Threshold { tau: &t.tau - 1, scale: t.scale.clone() };
        let base = released_sets(&[("a", 3), ("b", 1)], &low, runs, &mut rng);
        let new_key = released_sets(&[("a", 3), ("b", 1), ("c", 1)], &low, runs, &mut rng);
        assert!(
            !violations("new key at τ − 1", &base, &new_key, runs, 1.0, 0.1).is_empty(),
            "τ − 1 went unnoticed"
        );
    }

    #[test]
    fn empirical_privacy_replace() {
        let (e, d) = (eps("1"), delta("0.2"));
        let t = threshold(&e, &d, Neighbours::Replace);
        let runs = 60_000;
        let mut rng = ChaCha20Rng::seed_from_u64(16); // INSECURE: test-only seed
        let base = released_sets(&[("a", 3), ("b", 1)], &t, runs, &mut rng);
        // b's only row becomes the new key c (b vanishes, c appears).
        let swap = released_sets(&[("a", 3), ("c", 1)], &t, runs, &mut rng);
        // One of a's rows becomes the new key c (a stays, c appears).
        let split = released_sets(&[("a", 2), ("b", 1), ("c", 1)], &t, runs, &mut rng);
        // One of a's rows moves to b (both observed throughout).
        let shift = released_sets(&[("a", 2), ("b", 2)], &t, runs, &mut rng);
        for (name, other) in [("swap", &swap), ("split", &split), ("shift", &shift)] {
            let bad = violations(name, &base, other, runs, 1.0, 0.2);
            assert!(bad.is_empty(), "{name}: {bad:?}");
        }
        let low = Threshold { tau: &t.tau - 2, scale: t.scale.clone() };
        let base = released_sets(&[("a", 3), ("b", 1)], &low, runs, &mut rng);
        let swap = released_sets(&[("a", 3), ("c", 1)], &low, runs, &mut rng);
        assert!(
            !violations("swap at τ − 2", &base, &swap, runs, 1.0, 0.2).is_empty(),
            "τ − 2 went unnoticed"
        );
    }
}
