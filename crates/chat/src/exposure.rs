//! `your_exposure` (ADR-0020): how past events of one kind moved one symbol, measured on stored
//! bars, signed against an open position. Pure: bars come through [`tools::MarketData`].

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use serde::Serialize;
use tools::MarketData;
use types::{Interval, Side};

/// Below this many measured past events the median and the worst move are `None` (honest
/// under-reporting: the coach can still warn qualitatively).
pub const MIN_SIMILAR_EVENTS: usize = 3;

/// Decimals kept in a move (a fraction: `0.0125` is 1.25 %).
pub const MOVE_DECIMALS: u32 = 6;

/// Where moves around an event are measured: on bars of `interval`, from the close of the last
/// bar closed at or before the event to the close of the last bar closed at or before the event
/// plus `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveWindow {
    /// The bars' interval.
    pub interval: Interval,
    /// How long after the event the move is measured.
    pub window: Duration,
}

impl Default for MoveWindow {
    /// 1 h bars, the 4 h after the event (stated in `get_upcoming_events`' description).
    fn default() -> Self {
        Self {
            interval: Interval::H1,
            window: Duration::hours(4),
        }
    }
}

/// The statistics of `your_exposure` for one open position and one kind of event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExposureStats {
    /// Past events of this kind for this symbol whose move could be measured on stored bars.
    pub similar_events_back: usize,
    /// Median of the absolute moves, a fraction; `None` below [`MIN_SIMILAR_EVENTS`].
    pub median_abs_move_pct: Option<Decimal>,
    /// The move most against the position (negative = it lost), a fraction; `None` below
    /// [`MIN_SIMILAR_EVENTS`].
    pub worst_move_pct: Option<Decimal>,
}

/// The signed move of `symbol` around an event at `at` (a fraction of the price before it), or
/// `None` when the bars do not cover the whole window: no bar closed within one interval before
/// the event, none within one interval before the window's end, or the window ends after `now`.
#[must_use]
pub fn event_move(
    market: &dyn MarketData,
    symbol: &str,
    at: DateTime<Utc>,
    w: MoveWindow,
    now: DateTime<Utc>,
) -> Option<Decimal> {
    let end = at.checked_add_signed(w.window)?;
    if end > now {
        return None;
    }
    let step = w.interval.duration();
    let close_by = |t: DateTime<Utc>| -> Option<Decimal> {
        let bar = market.bars(symbol, w.interval, t, 1).ok()?.pop()?;
        let closed_at = bar.time + step;
        (closed_at > t - step && closed_at <= t).then_some(bar.close)
    };
    let before = close_by(at)?;
    let after = close_by(end)?;
    if before.is_zero() {
        return None;
    }
    after
        .checked_sub(before)?
        .checked_div(before)
        .map(|m| m.round_dp(MOVE_DECIMALS))
}

/// The statistics over measured `moves` for a position on `side`: a short gains when the price
/// falls, so its moves count negated.
#[must_use]
pub fn exposure_stats(moves: &[Decimal], side: Side) -> ExposureStats {
    let signed: Vec<Decimal> = moves
        .iter()
        .map(|m| match side {
            Side::Long => *m,
            Side::Short => -*m,
        })
        .collect();
    let enough = signed.len() >= MIN_SIMILAR_EVENTS;
    let mut abs: Vec<Decimal> = moves.iter().map(|m| m.abs()).collect();
    abs.sort();
    let median = match abs.len() {
        0 => None,
        n if n % 2 == 1 => Some(abs[n / 2]),
        n => (abs[n / 2 - 1] + abs[n / 2])
            .checked_div(Decimal::TWO)
            .map(|m| m.round_dp(MOVE_DECIMALS)),
    };
    ExposureStats {
        similar_events_back: signed.len(),
        median_abs_move_pct: median.filter(|_| enough),
        worst_move_pct: signed.iter().min().copied().filter(|_| enough),
    }
}
