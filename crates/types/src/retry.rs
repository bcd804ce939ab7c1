//! How failed HTTP calls are retried: plain data and the backoff computation, shared by the
//! model providers' and the exchange adapter's transports (each keeps its own defaults and its
//! own reading of a server's `retry-after` hint).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// Bounded retries with exponential backoff and "equal jitter".
///
/// The wait after failed attempt `n` (1-based), before attempt `n + 1`, is drawn uniformly from
/// `[d/2, d]` with `d = min(base_delay × 2^(n−1), max_delay)`: half of it fixed, the other half
/// random, so concurrent callers do not retry in lockstep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts including the first one; `0` is treated as `1`.
    pub max_attempts: u32,
    /// The backoff before the second attempt (before jitter). Tests set this to a few ms.
    pub base_delay: Duration,
    /// No wait is ever longer than this.
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// No retries: one attempt.
    #[must_use]
    pub const fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
        }
    }

    /// The attempts to make: `max_attempts`, at least 1.
    #[must_use]
    pub const fn attempts(&self) -> u32 {
        if self.max_attempts == 0 {
            1
        } else {
            self.max_attempts
        }
    }

    /// The wait after failed attempt `attempt` (1-based), with the jitter drawn from `random`
    /// (any `u64`: it is reduced into the jitter window).
    #[must_use]
    pub fn backoff(&self, attempt: u32, random: u64) -> Duration {
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        let full = self
            .base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay);
        let half = full / 2;
        let span = u64::try_from((full - half).as_nanos()).unwrap_or(u64::MAX);
        let jitter = if span == 0 {
            0
        } else {
            random % span.saturating_add(1)
        };
        half + Duration::from_nanos(jitter)
    }

    /// [`RetryPolicy::backoff`] with fresh randomness (std's randomly keyed hasher: jitter needs
    /// no cryptographic quality, and this keeps a random-number crate out of the tree).
    #[must_use]
    pub fn jittered_backoff(&self, attempt: u32) -> Duration {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(0x9e37_79b9_7f4a_7c15);
        self.backoff(attempt, hasher.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_half_to_full_and_caps() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
        };
        for (attempt, full) in [(1u32, 100u64), (2, 200), (3, 350), (4, 350), (40, 350)] {
            for r in [0u64, 1, 12_345, u64::MAX] {
                let w = p.backoff(attempt, r);
                assert!(w >= Duration::from_millis(full / 2), "{attempt} {r} {w:?}");
                assert!(w <= Duration::from_millis(full), "{attempt} {r} {w:?}");
            }
        }
        assert_eq!(p.backoff(1, 0), Duration::from_millis(50));
        for _ in 0..100 {
            let w = p.jittered_backoff(2);
            assert!(w >= Duration::from_millis(100) && w <= Duration::from_millis(200));
        }
    }

    #[test]
    fn no_retries_is_one_attempt_without_waits() {
        assert_eq!(RetryPolicy::none().attempts(), 1);
        assert_eq!(RetryPolicy::none().backoff(3, 99), Duration::ZERO);
        let zero = RetryPolicy {
            max_attempts: 0,
            ..RetryPolicy::none()
        };
        assert_eq!(zero.attempts(), 1);
    }
}
