//! A broker whose account moves only through its orders (`Broker::ACCOUNT_MOVES_ONLY_ON_EXECUTE`,
//! the paper broker) is read once by a tick that sends no order; any other broker is read again
//! after the order. Both give the same ticks.

use crate::common;

use agent_runtime::builtin_model;
use chrono::{DateTime, Utc};
use db::TickStore;
use execution_engine::{Order, OrderTag, PaperBroker};
use rust_decimal::Decimal;
use tick::{Broker, BrokerUnavailable, ExecuteError, TickState, run_tick};
use types::{Fill, Interval, PortfolioSnapshot};

/// The paper broker, counting its account reads; `ONCE` is what it declares.
struct Counted<const ONCE: bool> {
    paper: PaperBroker,
    reads: usize,
    orders: usize,
}

impl<const ONCE: bool> Broker for Counted<ONCE> {
    const ACCOUNT_MOVES_ONLY_ON_EXECUTE: bool = ONCE;

    async fn portfolio(
        &mut self,
        at: DateTime<Utc>,
    ) -> Result<PortfolioSnapshot, BrokerUnavailable> {
        self.reads += 1;
        self.paper.portfolio(at).await
    }

    async fn execute(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: OrderTag,
    ) -> Result<Fill, ExecuteError> {
        self.orders += 1;
        Broker::execute(&mut self.paper, order, price, at, tag).await
    }

    async fn drain_fills(&mut self) -> Result<Vec<Fill>, BrokerUnavailable> {
        Broker::drain_fills(&mut self.paper).await
    }
}

#[tokio::test]
async fn a_tick_without_an_order_reads_a_paper_account_once_and_ticks_the_same() {
    let bars = common::eurusd(240);
    let example = common::eurusd_example(&bars, Decimal::new(45, 1), Decimal::ONE);
    let d = &example.deployment;
    let first = bars[0].close_time(Interval::H1);
    let model = builtin_model(&d.skill.model, &d.skill).expect("model");
    let paper = || PaperBroker::new(example.broker.clone()).expect("broker");
    let mut once = Counted::<true> {
        paper: paper(),
        reads: 0,
        orders: 0,
    };
    let mut twice = Counted::<false> {
        paper: paper(),
        reads: 0,
        orders: 0,
    };
    let (store_once, store_twice) = (
        db::connect("sqlite::memory:").await.expect("store"),
        db::connect("sqlite::memory:").await.expect("store"),
    );
    for store in [&store_once, &store_twice] {
        common::register(store, d).await;
    }
    let mut state_once = TickState::new(d, example.broker.initial_equity_usd, first);
    let mut state_twice = TickState::new(d, example.broker.initial_equity_usd, first);
    let ticks = 200;
    for bar in &bars[40..40 + ticks] {
        let at = bar.close_time(Interval::H1);
        once.paper.apply_bar("EURUSD", bar, at).expect("bar");
        twice.paper.apply_bar("EURUSD", bar, at).expect("bar");
        let ctx = common::trade_ctx(d, &example.market, at);
        let a = run_tick(
            d,
            &ctx,
            model.as_ref(),
            &mut once,
            &mut state_once,
            &store_once,
        )
        .await
        .expect("tick");
        let b = run_tick(
            d,
            &ctx,
            model.as_ref(),
            &mut twice,
            &mut state_twice,
            &store_twice,
        )
        .await
        .expect("tick");
        assert_eq!(a, b, "tick at {at}");
    }
    assert!(once.orders > 0, "the ticks include orders");
    assert_eq!(once.orders, twice.orders);
    assert_eq!(twice.reads, 2 * ticks, "read before and after every tick");
    assert_eq!(
        once.reads,
        ticks + once.orders,
        "read again only after an order"
    );
    assert_eq!(
        serde_json::to_value(&once.paper).expect("json"),
        serde_json::to_value(&twice.paper).expect("json")
    );
    let stored = |s: &db::Store| {
        let s = s.clone();
        async move {
            s.list_snapshots(d.deployment_id, 1_000)
                .await
                .expect("snapshots")
        }
    };
    assert_eq!(stored(&store_once).await, stored(&store_twice).await);
}
