//! The runs of a walk-forward comparison (`ab --windows`, `arena`): the windows, the backtests
//! a few at a time, and each compared row's equity across the windows.
//!
//! The ticks from the first to the last are split into `N` consecutive windows of equal time
//! span (on the bar grid). Each window is its own backtest of each row, from a fresh account of
//! the same equity, with the bars before the window as lookback, so the windows are independent
//! samples of the same strategy on different market stretches.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use chrono::{DateTime, Duration, Utc};
use clap::Args;
use rust_decimal::Decimal;
use types::Interval;

use crate::Failure;
use crate::run_cmd::{RunArgs, RunOutput, run_full};
use crate::spend::Budget;

/// How a walk-forward comparison runs and resamples (`ab --windows`, `arena`).
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct Walk {
    /// Runs in flight at once across the windows (model calls are the bottleneck).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub concurrency: u32,
    /// Bootstrap resamples of every interval over the windows.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    pub resamples: u32,
    /// Seed of the bootstrap's generator (ChaCha8): the same seed, the same intervals.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
}

/// Writes `body` to `OUT/name`; its path.
pub(crate) fn write_out(out: &Path, name: &str, body: &[u8]) -> Result<PathBuf, Failure> {
    let path = out.join(name);
    std::fs::write(&path, body)
        .map_err(|e| Failure::bad_input(format!("error: {}: cannot write: {e}", path.display())))?;
    Ok(path)
}

/// A window's first and last tick time, inclusive.
pub(crate) type Span = (DateTime<Utc>, DateTime<Utc>);

/// An equity curve: `(tick time, USD)` in time order.
pub(crate) type Curve = Vec<(DateTime<Utc>, Decimal)>;

/// The window boundaries: `(from, to)` tick times, inclusive, on the bar grid of `first`.
pub(crate) fn windows(
    first: DateTime<Utc>,
    last: DateTime<Utc>,
    interval: Interval,
    n: u32,
) -> Vec<Span> {
    let step = interval.minutes();
    let bars = (last - first).num_minutes() / step + 1;
    let n = i64::from(n).min(bars).max(1);
    let start = |i: i64| first + Duration::minutes(bars * i / n * step);
    (0..n)
        .map(|i| {
            let to = if i + 1 == n {
                last
            } else {
                start(i + 1) - Duration::minutes(step)
            };
            (start(i), to)
        })
        .collect()
}

/// A window's name: `w01`, `w02`, …
pub(crate) fn window_name(i: usize) -> String {
    format!("w{:02}", i + 1)
}

/// What one run came to: its output, its failure, or nothing when it was not started (an
/// earlier run failed, or the arena's cost cap was reached).
pub(crate) type Slot = Option<Result<RunOutput, Failure>>;

/// `f(0)`, `f(1)`, … `f(count − 1)` on `threads` threads, each taking the next index as it
/// becomes free; the results in index order.
pub(crate) fn parallel<T: Send>(
    count: usize,
    threads: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let results: Vec<Mutex<Option<T>>> = (0..count).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, count.max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    let r = f(i);
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(r);
                    }
                }
            });
        }
    });
    results
        .into_iter()
        .filter_map(|m| m.into_inner().ok().flatten())
        .collect()
}

/// Runs `jobs`, `concurrency` at a time, in order of their index; calls `done` as each ends.
/// After a run fails, and once `budget` has no room left, no further run starts.
pub(crate) fn run_all(
    jobs: Vec<RunArgs>,
    concurrency: u32,
    budget: Option<&Budget>,
    done: &(dyn Fn(usize, &Result<RunOutput, Failure>) + Sync),
) -> Vec<Slot> {
    let count = jobs.len();
    let jobs: Vec<Mutex<Option<RunArgs>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let halted = AtomicBool::new(false);
    let workers = usize::try_from(concurrency).unwrap_or(1);
    parallel(count, workers, |j| {
        if halted.load(Ordering::Relaxed) || budget.is_some_and(|b| b.stop().is_some()) {
            return None;
        }
        let args = jobs[j].lock().ok().and_then(|mut a| a.take())?;
        let r = run_full(args);
        if r.is_err() {
            halted.store(true, Ordering::Relaxed);
        }
        done(j, &r);
        Some(r)
    })
}

/// A row's equity across the windows, each window's account chained to the last: within a
/// window, the mean over its repeated runs of the equity after each tick, plus what the
/// earlier windows made (their mean equity at their last tick less the initial). The curve
/// thus starts at `initial` and ends at `initial` plus the sum of the windows' mean returns —
/// the net return the arena reports.
pub(crate) fn chained(windows: &[Vec<&Curve>], initial: Decimal) -> Curve {
    let mut out = Vec::new();
    let mut offset = Decimal::ZERO;
    for repeats in windows {
        let Some(len) = repeats.iter().map(|c| c.len()).min() else {
            continue;
        };
        let count = Decimal::from(repeats.len());
        let mut last = initial;
        for i in 0..len {
            let mean = repeats.iter().map(|c| c[i].1).sum::<Decimal>() / count;
            out.push((repeats[0][i].0, mean + offset));
            last = mean;
        }
        offset += last - initial;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use rust_decimal_macros::dec;

    #[test]
    fn windows_tile_the_ticks_on_the_bar_grid() {
        let t = |d, h| Utc.with_ymd_and_hms(2017, 4, d, h, 0, 0).unwrap();
        // 10 hourly ticks 00:00 … 09:00 into 3 windows: bars 0–2, 3–5, 6–9.
        let w = windows(t(1, 0), t(1, 9), Interval::H1, 3);
        assert_eq!(
            w,
            vec![(t(1, 0), t(1, 2)), (t(1, 3), t(1, 5)), (t(1, 6), t(1, 9))]
        );
        // More windows than ticks: one a tick.
        assert_eq!(windows(t(1, 0), t(1, 1), Interval::H1, 8).len(), 2);
    }

    #[test]
    fn a_chained_curve_carries_each_window_s_mean_return_into_the_next() {
        let t = |h| Utc.with_ymd_and_hms(2017, 4, 1, h, 0, 0).unwrap();
        let w1a: Curve = vec![(t(0), dec!(100)), (t(1), dec!(110))];
        let w1b: Curve = vec![(t(0), dec!(100)), (t(1), dec!(90))];
        let w2: Curve = vec![(t(2), dec!(105)), (t(3), dec!(120))];
        let c = chained(&[vec![&w1a, &w1b], vec![&w2]], dec!(100));
        // Window 1's mean: 100, 100; window 2 from an offset of 0 (its mean return was 0).
        assert_eq!(
            c.iter().map(|p| p.1).collect::<Vec<_>>(),
            vec![dec!(100), dec!(100), dec!(105), dec!(120)]
        );
        let c = chained(&[vec![&w2], vec![&w1a]], dec!(100));
        assert_eq!(c[3].1, dec!(130), "window 1 made 20; then +10");
    }
}
