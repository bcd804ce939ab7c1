//! The percentile bootstrap of a mean over walk-forward windows, for `ab --windows` and
//! `arena`: is B − A more than noise?
//!
//! The sample is clustered: a window holds the values of its repeated runs (one each for a
//! deterministic model), and a paired comparison holds both sides' repeats of the window. A
//! resample draws the windows with replacement, then, inside each window drawn, each side's
//! repeats with replacement (the nested bootstrap: windows are the independent samples, repeats
//! only measure the model's noise within one). A side with a single run in a window draws
//! nothing for it, so with one run everywhere this is the plain bootstrap of the windows.
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

/// One window of a clustered sample: the values of its repeated runs, and for a paired
/// difference the other side's (empty for a single sample). Each side has at least one value
/// when not empty.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cluster<'a> {
    /// This side's runs in the window.
    pub values: &'a [Decimal],
    /// The side subtracted (the reference's runs in the window); empty for no subtraction.
    pub minus: &'a [Decimal],
}

/// A nested bootstrap's interval and where its resampled statistics fell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Nested {
    /// The statistic and its interval.
    pub interval: Interval,
    /// Resamples whose statistic is above 0, below 0 and exactly 0.
    pub above: u32,
    pub below: u32,
    pub zero: u32,
}

impl Nested {
    /// The share of resamples whose statistic lies on the side of 0 that `higher` names (above
    /// when true), ties counted half: the bootstrap's probability that the statistic is on that
    /// side.
    pub(crate) fn share(&self, higher: bool) -> Decimal {
        let side = if higher { self.above } else { self.below };
        let total = u64::from(self.above) + u64::from(self.below) + u64::from(self.zero);
        if total == 0 {
            return Decimal::ZERO;
        }
        Decimal::from(2 * u64::from(side) + u64::from(self.zero)) / Decimal::from(2 * total)
    }
}

/// The mean of `sample` times `scale` (1 for the mean, `n` for the sum) and its percentile
/// bootstrap interval at `confidence_pct` (e.g. 95): `resamples` samples of `n` values drawn
/// with replacement, their statistics sorted, the interval the `(100 − c)/2` and
/// `100 − (100 − c)/2` percentiles (nearest rank). `None` for an empty sample or no resamples.
/// (What `ab --windows` computed before the nested bootstrap: kept as its reference.)
#[cfg(test)]
pub(crate) fn mean_interval(
    sample: &[Decimal],
    scale: Decimal,
    resamples: u32,
    seed: u64,
    confidence_pct: u32,
) -> Option<Interval> {
    let clusters: Vec<Cluster<'_>> = sample
        .iter()
        .map(|v| Cluster {
            values: std::slice::from_ref(v),
            minus: &[],
        })
        .collect();
    nested_interval(&clusters, scale, resamples, seed, confidence_pct).map(|n| n.interval)
}

/// The statistic [`nested_interval`] bootstraps, on the sample itself (no resampling): the mean
/// over the windows of each window's mean of `values` less its mean of `minus`, times `scale`.
/// `None` for no window, or a window without values.
pub(crate) fn nested_estimate(sample: &[Cluster<'_>], scale: Decimal) -> Option<Decimal> {
    if sample.is_empty() || sample.iter().any(|c| c.values.is_empty()) {
        return None;
    }
    let mean = |v: &[Decimal]| match v.len() {
        0 => Decimal::ZERO,
        1 => v[0],
        m => v.iter().sum::<Decimal>() / Decimal::from(m as u64),
    };
    let sum: Decimal = sample.iter().map(|c| mean(c.values) - mean(c.minus)).sum();
    Some(sum * scale / Decimal::from(sample.len() as u64))
}

/// The mean over the windows of each window's statistic — the mean of its `values` less the
/// mean of its `minus` — times `scale`, and its nested percentile bootstrap interval (see the
/// [module](self)): per resample, `n` windows drawn with replacement and, in each, `values` and
/// then `minus` redrawn with replacement where they hold more than one run; the statistics
/// sorted, the interval the `(100 − c)/2` and `100 − (100 − c)/2` percentiles at
/// `confidence_pct` (nearest rank). With one value per window and nothing subtracted, this is
/// the plain percentile bootstrap of a mean. `None` for no window or no resamples.
pub(crate) fn nested_interval(
    sample: &[Cluster<'_>],
    scale: Decimal,
    resamples: u32,
    seed: u64,
    confidence_pct: u32,
) -> Option<Nested> {
    let n = sample.len();
    if resamples == 0 {
        return None;
    }
    let estimate = nested_estimate(sample, scale)?;
    let count = Decimal::from(n as u64);
    // Scaled before dividing, so a sum over the windows (scale n) is exact.
    let stat = |sum: Decimal| sum * scale / count;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // One side's runs in a drawn window, redrawn: the mean of as many draws as it has runs.
    let redraw = |rng: &mut ChaCha8Rng, v: &[Decimal]| match v.len() {
        0 => Decimal::ZERO,
        1 => v[0],
        m => {
            let sum: Decimal = (0..m).map(|_| v[index(rng, m)]).sum();
            sum / Decimal::from(m as u64)
        }
    };
    let mut stats: Vec<Decimal> = (0..resamples)
        .map(|_| {
            let sum: Decimal = (0..n)
                .map(|_| {
                    let c = sample[index(&mut rng, n)];
                    let values = redraw(&mut rng, c.values);
                    values - redraw(&mut rng, c.minus)
                })
                .sum();
            stat(sum)
        })
        .collect();
    let (mut above, mut below, mut zero) = (0, 0, 0);
    for s in &stats {
        match s.cmp(&Decimal::ZERO) {
            std::cmp::Ordering::Greater => above += 1,
            std::cmp::Ordering::Less => below += 1,
            std::cmp::Ordering::Equal => zero += 1,
        }
    }
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
    Some(Nested {
        interval: Interval {
            estimate,
            low: rank(tail),
            high: rank(1.0 - tail),
        },
        above,
        below,
        zero,
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

    /// Two windows, each with two runs: window 1 holds 0 and 2, window 2 holds 4 and 4. The
    /// estimate is the mean of the window means (1 and 4). A resample's window mean is 0, 1 or
    /// 2 for window 1 (1/4, 1/2, 1/4) and 4 for window 2, so its statistic ranges from 0 (window
    /// 1 twice, both redrawn to 0: 1/4 × 1/4 × 1/4) to 4 (window 2 twice: 1/4).
    #[test]
    fn repeats_are_redrawn_inside_the_windows_drawn() {
        let (w1, w2) = ([dec!(0), dec!(2)], [dec!(4), dec!(4)]);
        let sample = [
            Cluster {
                values: &w1,
                minus: &[],
            },
            Cluster {
                values: &w2,
                minus: &[],
            },
        ];
        let n = nested_interval(&sample, Decimal::ONE, 20_000, 3, 99).unwrap();
        assert_eq!(n.interval.estimate, dec!(2.5));
        assert_eq!((n.interval.low, n.interval.high), (dec!(0), dec!(4)));
        // P(statistic = 0) = 1/64: both draws window 1, both redrawn to 0.
        let zero = f64::from(n.zero) / 20_000.0;
        assert!((zero - 1.0 / 64.0).abs() < 0.004, "{zero}");
        assert_eq!(
            n.share(true),
            Decimal::from(2 * u64::from(n.above) + u64::from(n.zero)) / dec!(40000)
        );
    }

    /// A paired difference with one run a side is the bootstrap of the differences.
    #[test]
    fn a_paired_difference_with_single_runs_is_the_plain_bootstrap() {
        let (a, b) = ([dec!(3), dec!(-1), dec!(7)], [dec!(1), dec!(1), dec!(2)]);
        let sample: Vec<Cluster<'_>> = (0..3)
            .map(|i| Cluster {
                values: &a[i..=i],
                minus: &b[i..=i],
            })
            .collect();
        let diffs = [dec!(2), dec!(-2), dec!(5)];
        let n = nested_interval(&sample, dec!(3), 5_000, 9, 95).unwrap();
        assert_eq!(
            Some(n.interval),
            mean_interval(&diffs, dec!(3), 5_000, 9, 95)
        );
    }
}
