//! The `mock` feature: a linking service can hand `mockall` mocks to a [`ToolContext`].
#![cfg(feature = "mock")]

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use rust_decimal::Decimal;
use tools::{MockMarketData, MockPortfolioView, RunMode, ToolContext};
use types::test_support::flat_portfolio;
use types::{Bar, Interval};

#[test]
fn mocks_serve_a_context_and_bars_window_defaults_to_bars() {
    let now = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
    let bar = Bar {
        time: now - chrono::Duration::hours(1),
        open: Decimal::ONE,
        high: Decimal::ONE,
        low: Decimal::ONE,
        close: Decimal::ONE,
        volume: Decimal::ZERO,
    };
    let mut market = MockMarketData::new();
    let served = bar.clone();
    market
        .expect_bars()
        .withf(move |symbol, interval, closed_by, limit| {
            symbol == "BTC" && *interval == Interval::H1 && *closed_by == now && *limit == 5
        })
        .times(2)
        .returning(move |_, _, _, _| Ok(vec![served.clone()]));
    let mut portfolio = MockPortfolioView::new();
    portfolio
        .expect_portfolio()
        .returning(move || Ok(flat_portfolio(now, Decimal::from(1_000))));
    let ctx = ToolContext::new(
        now,
        RunMode::ReadOnly,
        vec!["BTC".into()],
        Arc::new(market),
        Arc::new(portfolio),
    );
    let bars = ctx.market.bars("BTC", Interval::H1, now, 5).unwrap();
    assert_eq!(bars, std::slice::from_ref(&bar));
    let window = ctx.market.bars_window("BTC", Interval::H1, now, 5).unwrap();
    assert_eq!(
        (window.bars.as_ref(), window.origin),
        ([bar].as_slice(), None)
    );
    assert_eq!(
        ctx.portfolio.portfolio().unwrap().equity_usd,
        Decimal::from(1_000)
    );
}
