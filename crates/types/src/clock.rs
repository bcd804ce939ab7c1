use chrono::{DateTime, Utc};

/// The source of "now". Pure crates never read the wall clock themselves: the live runner passes
/// a [`SystemClock`], the simulator a [`FixedClock`] set to the tick time.
pub trait Clock: Send + Sync {
    /// The current instant, in UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock. Only binaries construct it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that always answers the same instant (backtests, tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedClock(pub DateTime<Utc>);

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}
