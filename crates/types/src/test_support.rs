//! Builders for tests of this crate and its users (feature `test-support`): values with the
//! defaults a test does not care about, so a new field is filled in here once.
//!
//! A test overrides what it checks with struct update syntax:
//! `PortfolioSnapshot { positions, ..flat_portfolio(at, equity) }`.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use crate::PortfolioSnapshot;

/// An account holding nothing at `at`: `equity` of equity, all of it available as margin, no
/// positions, nothing realized, no fees paid.
#[must_use]
pub fn flat_portfolio(at: DateTime<Utc>, equity: Decimal) -> PortfolioSnapshot {
    PortfolioSnapshot {
        at,
        equity_usd: equity,
        available_margin_usd: equity,
        positions: Vec::new(),
        realized_pnl_usd: Decimal::ZERO,
        fees_paid_usd: Decimal::ZERO,
    }
}
