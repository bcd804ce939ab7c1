//! The bookkeeping the halts and the order-rate rule need between ticks.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use types::PortfolioSnapshot;

use crate::AccountView;

/// Peak equity, the UTC day's starting equity and recent order times, kept by the runner across
/// ticks (serializable, so it survives a restart) and turned into an [`AccountView`] each tick.
///
/// Time is always passed in; nothing here reads the clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RiskState {
    /// Highest equity observed.
    pub peak_equity_usd: Decimal,
    /// The UTC day `day_start_equity_usd` belongs to.
    pub day: NaiveDate,
    /// Equity at the first observation of `day`.
    pub day_start_equity_usd: Decimal,
    /// Times of executed orders within the last hour of the latest observation, oldest first.
    pub order_times: Vec<DateTime<Utc>>,
}

impl RiskState {
    /// Starts tracking an account whose equity is `equity` at `at`.
    #[must_use]
    pub fn new(equity: Decimal, at: DateTime<Utc>) -> Self {
        RiskState {
            peak_equity_usd: equity,
            day: at.date_naive(),
            day_start_equity_usd: equity,
            order_times: Vec::new(),
        }
    }

    /// Records the equity seen at `at`: raises the peak, and on the first observation of a new
    /// UTC day makes this equity the day's starting equity. Call it once per tick, with the
    /// broker's equity, before validating.
    pub fn observe_equity(&mut self, equity: Decimal, at: DateTime<Utc>) {
        if equity > self.peak_equity_usd {
            self.peak_equity_usd = equity;
        }
        let day = at.date_naive();
        if day > self.day {
            self.day = day;
            self.day_start_equity_usd = equity;
        }
        self.prune(at);
    }

    /// Records an executed order at `at` (every action counts toward the rate, including closes
    /// and reduces, though the rate never blocks those).
    pub fn record_order(&mut self, at: DateTime<Utc>) {
        self.order_times.push(at);
        self.order_times.sort_unstable();
        self.prune(at);
    }

    fn prune(&mut self, at: DateTime<Utc>) {
        let since = at - Duration::hours(1);
        self.order_times.retain(|t| *t > since);
    }

    /// The engine's view of the account for a tick.
    #[must_use]
    pub fn account_view(
        &self,
        portfolio: PortfolioSnapshot,
        marks: BTreeMap<String, Decimal>,
    ) -> AccountView {
        AccountView {
            portfolio,
            marks,
            peak_equity_usd: self.peak_equity_usd,
            day_start_equity_usd: self.day_start_equity_usd,
            recent_order_times: self.order_times.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use rust_decimal_macros::dec;

    #[test]
    fn peak_rises_day_start_resets_at_utc_midnight_and_old_orders_drop() {
        let t0 = Utc.with_ymd_and_hms(2026, 3, 1, 22, 0, 0).unwrap();
        let mut s = RiskState::new(dec!(10000), t0);
        s.observe_equity(dec!(10500), t0 + Duration::hours(1));
        assert_eq!(s.peak_equity_usd, dec!(10500));
        assert_eq!(s.day_start_equity_usd, dec!(10000));
        s.observe_equity(dec!(9800), t0 + Duration::minutes(90));
        assert_eq!(
            s.peak_equity_usd,
            dec!(10500),
            "a drop never lowers the peak"
        );
        assert_eq!(s.day_start_equity_usd, dec!(10000));
        // 00:10 UTC the next day: the first observation of the day sets its start.
        s.observe_equity(dec!(9700), t0 + Duration::minutes(130));
        assert_eq!(s.day_start_equity_usd, dec!(9700));
        s.observe_equity(dec!(9600), t0 + Duration::minutes(140));
        assert_eq!(s.day_start_equity_usd, dec!(9700));

        s.record_order(t0);
        s.record_order(t0 + Duration::minutes(30));
        s.record_order(t0 + Duration::minutes(61));
        // At t0+61m the order at t0 is more than an hour old.
        assert_eq!(
            s.order_times,
            vec![t0 + Duration::minutes(30), t0 + Duration::minutes(61)]
        );
    }
}
