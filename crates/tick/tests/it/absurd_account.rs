//! A broker that reports an account whose numbers overflow (a corrupt exchange answer) after the
//! order: the tick fails with an error naming the broker's account, records nothing, and never
//! panics (the exposure of such an account used to overflow after the tick was recorded).

use crate::common;

use agent_runtime::builtin_model;
use chrono::{DateTime, Utc};
use db::TickStore;
use execution_engine::{Order, OrderTag};
use rust_decimal::Decimal;
use tick::{Broker, BrokerUnavailable, ExecuteError, TickError, TickState, run_tick};
use types::test_support::flat_portfolio;
use types::{Fill, Interval, PortfolioSnapshot, Position, Side};

/// A flat $10,000 account on the first read; from the second read (the account after the order)
/// one EURUSD position whose size × mark overflows a `Decimal`.
struct Corrupt {
    reads: u32,
}

impl Broker for Corrupt {
    async fn portfolio(
        &mut self,
        at: DateTime<Utc>,
    ) -> Result<PortfolioSnapshot, BrokerUnavailable> {
        self.reads += 1;
        let mut account = PortfolioSnapshot {
            positions: vec![Position {
                symbol: "EURUSD".into(),
                side: Side::Long,
                qty: Decimal::MAX,
                entry_price: Decimal::ONE,
                leverage: Decimal::ONE,
                mark_price: Decimal::TWO,
                liquidation_price: None,
                unrealized_pnl_usd: Decimal::ZERO,
                margin_usd: Decimal::ZERO,
            }],
            ..flat_portfolio(at, Decimal::from(10_000))
        };
        if self.reads == 1 {
            account.positions.clear();
        }
        Ok(account)
    }

    async fn execute(
        &mut self,
        _: &Order,
        _: Decimal,
        _: DateTime<Utc>,
        _: OrderTag,
    ) -> Result<Fill, ExecuteError> {
        Err(ExecuteError::Unavailable(BrokerUnavailable(
            "this test's broker takes no order".into(),
        )))
    }

    async fn drain_fills(&mut self) -> Result<Vec<Fill>, BrokerUnavailable> {
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn an_account_that_overflows_fails_the_tick_and_records_nothing() {
    let bars = common::eurusd(60);
    let example = common::eurusd_example(&bars, Decimal::ZERO, Decimal::ZERO);
    let d = &example.deployment;
    let store = db::connect("sqlite::memory:").await.expect("store");
    common::register(&store, d).await;
    let model = builtin_model(&d.skill.model, &d.skill).expect("model");
    let at = bars[59].close_time(Interval::H1);
    let ctx = common::trade_ctx(d, &example.market, at);
    let mut state = TickState::new(d, Decimal::from(10_000), at);
    let mut broker = Corrupt { reads: 0 };
    let err = run_tick(d, &ctx, model.as_ref(), &mut broker, &mut state, &store)
        .await
        .expect_err("an account out of range");
    let TickError::Broker(BrokerUnavailable(message)) = &err else {
        panic!("expected a broker error, got {err}");
    };
    assert_eq!(
        broker.reads, 2,
        "the account after the order is the one refused"
    );
    assert!(
        message.contains("the broker's account") && message.contains("EURUSD"),
        "{message}"
    );
    assert!(
        store
            .list_snapshots(d.deployment_id, 10)
            .await
            .expect("snapshots")
            .is_empty()
    );
}
