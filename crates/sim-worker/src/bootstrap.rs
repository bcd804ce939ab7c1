//! The percentile bootstrap of a mean, for `ab --windows`: is B − A more than noise?
//!
//! Resampling uses ChaCha8 seeded with the given seed (`rand_chacha`, whose output for a seed
//! is fixed across platforms and versions), so an interval is reproducible from its stated
//! resamples and seed. Values are exact decimals; only the random indices are drawn.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rust_decimal::Decimal;

/// A statistic and its bootstrap confidence interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interval {
    /// The statistic on the sample itself.
    pub estimate: Decimal,
    /// The lower percentile of the resampled statistics.
    pub low: Decimal,
    /// The upper percentile.
    pub high: Decimal,
}

impl Interval {
    /// Whether 0 lies inside `[low, high]`.
    pub(crate) fn includes_zero(&self) -> bool {
        self.low <= Decimal::ZERO && Decimal::ZERO <= self.high
    }
}

/// The mean of `sample` times `scale` (1 for the mean, `n` for the sum) and its percentile
/// bootstrap interval at `confidence_pct` (e.g. 95): `resamples` samples of `n` values drawn
/// with replacement, their statistics sorted, the interval the `(100 − c)/2` and
/// `100 − (100 − c)/2` percentiles (nearest rank). `None` for an empty sample or no resamples.
pub(crate) fn mean_interval(
    sample: &[Decimal],
    scale: Decimal,
    resamples: u32,
    seed: u64,
    confidence_pct: u32,
) -> Option<Interval> {
    let n = sample.len();
    if n == 0 || resamples == 0 {
        return None;
    }
    let count = Decimal::from(n as u64);
    let stat = |sum: Decimal| sum / count * scale;
    let estimate = stat(sample.iter().sum());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut stats: Vec<Decimal> = (0..resamples)
        .map(|_| {
            let sum: Decimal = (0..n).map(|_| sample[index(&mut rng, n)]).sum();
            stat(sum)
        })
        .collect();
    stats.sort_unstable();
    let tail = f64::from(100 - confidence_pct.min(100)) / 200.0;
    let r = stats.len();
    // Nearest rank: the smallest value with at least p·r values at or below it.
    let rank = |p: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let k = (p * r as f64).ceil() as usize;
        stats[k.clamp(1, r) - 1]
    };
    Some(Interval {
        estimate,
        low: rank(tail),
        high: rank(1.0 - tail),
    })
}

/// A uniform index below `n` (rejection sampling: no modulo bias).
fn index(rng: &mut ChaCha8Rng, n: usize) -> usize {
    let n = n as u64;
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let v = rng.next_u64();
        if v < zone {
            #[allow(clippy::cast_possible_truncation)]
            return (v % n) as usize;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn a_constant_sample_has_a_point_interval() {
        let i = mean_interval(&[dec!(2); 5], Decimal::ONE, 1000, 7, 95).unwrap();
        assert_eq!((i.estimate, i.low, i.high), (dec!(2), dec!(2), dec!(2)));
        assert!(!i.includes_zero());
    }

    /// Two values, 1 and 3: a resample of two is (1,1), (1,3), (3,1) or (3,3), so its mean is 1
    /// with probability 1/4, 2 with 1/2 and 3 with 1/4. The 2.5th percentile is therefore 1 and
    /// the 97.5th 3 (each extreme holds ≈25 % of the resamples); the 20 % interval (40th and
    /// 60th percentiles) lies in the half of the mass at 2.
    #[test]
    fn two_values_hand_checked() {
        let s = [dec!(1), dec!(3)];
        let i = mean_interval(&s, Decimal::ONE, 10_000, 42, 95).unwrap();
        assert_eq!((i.estimate, i.low, i.high), (dec!(2), dec!(1), dec!(3)));
        let i = mean_interval(&s, Decimal::ONE, 10_000, 42, 20).unwrap();
        assert_eq!((i.low, i.high), (dec!(2), dec!(2)));
        // The sum over two windows: twice the mean.
        let i = mean_interval(&s, dec!(2), 10_000, 42, 95).unwrap();
        assert_eq!((i.estimate, i.low, i.high), (dec!(4), dec!(2), dec!(6)));
        assert!(!i.includes_zero());
    }

    #[test]
    fn the_same_seed_gives_the_same_interval_and_zero_is_detected() {
        let s = [
            dec!(-5),
            dec!(1),
            dec!(2),
            dec!(-1),
            dec!(4),
            dec!(-3),
            dec!(0.5),
            dec!(1),
        ];
        let a = mean_interval(&s, Decimal::ONE, 2000, 1, 95).unwrap();
        assert_eq!(a, mean_interval(&s, Decimal::ONE, 2000, 1, 95).unwrap());
        assert!(a.includes_zero(), "{a:?}");
        assert_eq!(a.estimate, dec!(-0.0625)); // (−5 + 1 + 2 − 1 + 4 − 3 + 0.5 + 1) / 8
        assert!(mean_interval(&[], Decimal::ONE, 10, 1, 95).is_none());
    }
}
