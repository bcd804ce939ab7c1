//! Flattening a stopped deployment through the broker seam, on the paper broker: every open
//! position gets one reduce-only market order of its whole size at the mark, a refusal does not
//! stop the others, and `run_flatten` records the closes as a tick records its orders (the
//! ledger rows closed with the flatten's reason, the fills, a snapshot without a model).

use crate::common;

use agent_runtime::builtin_model;
use chrono::{DateTime, Duration, TimeZone, Utc};
use db::{LedgerStore, TickStore};
use execution_engine::{Order, OrderIntent, OrderTag, PaperBroker, PaperBrokerConfig};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use tick::{
    Broker, BrokerRefusal, BrokerUnavailable, ExecuteError, FLATTEN_MODEL, FLATTEN_REASON,
    TickState, flatten_positions, run_flatten, run_tick,
};
use types::{
    Bar, CloseKind, Fill, Interval, OrderSide, PortfolioSnapshot, RuleCode, Side, TradeStatus,
    Verdict,
};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap()
}

fn bar(at: DateTime<Utc>, close: Decimal) -> Bar {
    Bar {
        time: at - Duration::hours(1),
        open: close,
        high: close,
        low: close,
        close,
        volume: dec!(10),
    }
}

fn open(symbol: &str, side: OrderSide, qty: Decimal, price: Decimal) -> Order {
    Order {
        symbol: symbol.into(),
        side,
        qty,
        leverage: dec!(2),
        reduce_only: false,
        intent: OrderIntent::Open,
        reference_price: price,
        notional_usd: qty * price,
        stop: None,
        target: None,
    }
}

/// A paper account long 0.1 BTC (at 30,000) and short 2 ETH (at 2,000), marked at 31,000 and
/// 1,900 (its opening fills drained).
fn two_positions() -> PaperBroker {
    let mut paper = PaperBroker::new(PaperBrokerConfig::new(dec!(10000))).unwrap();
    paper
        .apply_bar("BTC", &bar(t0(), dec!(30000)), t0())
        .unwrap();
    paper
        .apply_bar("ETH", &bar(t0(), dec!(2000)), t0())
        .unwrap();
    paper
        .execute(
            &open("BTC", OrderSide::Buy, dec!(0.1), dec!(30000)),
            dec!(30000),
            t0(),
            OrderTag::default(),
        )
        .unwrap();
    paper
        .execute(
            &open("ETH", OrderSide::Sell, dec!(2), dec!(2000)),
            dec!(2000),
            t0(),
            OrderTag::default(),
        )
        .unwrap();
    let later = t0() + Duration::hours(1);
    paper
        .apply_bar("BTC", &bar(later, dec!(31000)), later)
        .unwrap();
    paper
        .apply_bar("ETH", &bar(later, dec!(1900)), later)
        .unwrap();
    paper.drain_fills();
    paper
}

#[tokio::test]
async fn every_position_is_closed_with_a_reduce_only_order_at_its_mark() {
    let mut paper = two_positions();
    let at = t0() + Duration::minutes(90);
    let snapshot = uuid::Uuid::from_u128(9);
    let report = flatten_positions(&mut paper, at, Some(snapshot))
        .await
        .unwrap();
    assert_eq!(report.before.positions.len(), 2);
    let closed: Vec<(&str, Side, Decimal, OrderSide, Decimal)> = report
        .positions
        .iter()
        .map(|p| {
            let fill = p.outcome.as_ref().expect("filled");
            (p.symbol.as_str(), p.side, p.qty, fill.side, fill.qty)
        })
        .collect();
    assert_eq!(
        closed,
        vec![
            ("BTC", Side::Long, dec!(0.1), OrderSide::Sell, dec!(0.1)),
            ("ETH", Side::Short, dec!(2), OrderSide::Buy, dec!(2)),
        ],
        "in symbol order, each whole, on the other side"
    );
    assert!(
        report
            .fills()
            .iter()
            .all(|f| f.snapshot_id == Some(snapshot))
    );
    assert_eq!(
        report
            .positions
            .iter()
            .map(|p| p.mark_price)
            .collect::<Vec<_>>(),
        vec![dec!(31000), dec!(1900)]
    );
    // One order a millisecond apart, the first at `at`.
    assert_eq!(
        report.fills().iter().map(|f| f.time).collect::<Vec<_>>(),
        vec![at, at - Duration::milliseconds(1)]
    );
    let after = paper.portfolio(at).await.unwrap();
    assert!(after.positions.is_empty(), "{:?}", after.positions);
    let summary = report.summary();
    assert!(summary.starts_with("BTC long 0.1 closed at $"), "{summary}");
    assert!(summary.contains("; ETH short 2 closed at $"), "{summary}");

    // Again: nothing left, nothing sent.
    let again = flatten_positions(&mut paper, at, None).await.unwrap();
    assert!(again.positions.is_empty());
    assert_eq!(again.summary(), "no open position");
    assert_eq!(paper.drain_fills().len(), 2, "only the two closing fills");
}

/// The paper broker, refusing every order on one symbol or failing to answer.
struct Picky {
    paper: PaperBroker,
    refuse: &'static str,
    unreachable: bool,
}

impl Broker for Picky {
    async fn portfolio(
        &mut self,
        at: DateTime<Utc>,
    ) -> Result<PortfolioSnapshot, BrokerUnavailable> {
        Broker::portfolio(&mut self.paper, at).await
    }

    async fn execute(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: OrderTag,
    ) -> Result<Fill, ExecuteError> {
        assert!(order.reduce_only, "a flatten only reduces");
        if self.unreachable {
            return Err(BrokerUnavailable("the exchange did not answer".into()).into());
        }
        if order.symbol == self.refuse {
            return Err(BrokerRefusal {
                rule: RuleCode::InvalidOrder,
                message: "could not immediately match".into(),
            }
            .into());
        }
        Broker::execute(&mut self.paper, order, price, at, tag).await
    }

    async fn drain_fills(&mut self) -> Result<Vec<Fill>, BrokerUnavailable> {
        Broker::drain_fills(&mut self.paper).await
    }
}

#[tokio::test]
async fn a_refusal_leaves_that_position_open_and_closes_the_others() {
    let mut broker = Picky {
        paper: two_positions(),
        refuse: "BTC",
        unreachable: false,
    };
    let at = t0() + Duration::minutes(90);
    let report = flatten_positions(&mut broker, at, None).await.unwrap();
    let (symbol, refusal) = report.refusal().expect("a refusal");
    assert_eq!((symbol, refusal.rule), ("BTC", RuleCode::InvalidOrder));
    assert!(report.positions[1].outcome.is_ok(), "ETH closed anyway");
    assert!(
        report
            .summary()
            .starts_with("BTC long 0.1: refused (could not immediately match)"),
        "{}",
        report.summary()
    );
    let left = broker.portfolio(at).await.unwrap();
    assert_eq!(
        left.positions
            .iter()
            .map(|p| p.symbol.as_str())
            .collect::<Vec<_>>(),
        vec!["BTC"]
    );

    broker.unreachable = true;
    assert!(flatten_positions(&mut broker, at, None).await.is_err());
}

#[tokio::test]
async fn run_flatten_records_the_closes_as_a_tick_records_its_orders() {
    let bars = common::eurusd(400);
    let example = common::eurusd_example(&bars, Decimal::new(45, 1), Decimal::ONE);
    let d = &example.deployment;
    let model = builtin_model(&d.skill.model, &d.skill).expect("model");
    let store = db::connect("sqlite::memory:").await.expect("store");
    common::register(&store, d).await;
    let mut broker = PaperBroker::new(example.broker.clone()).expect("broker");
    let first = bars[0].close_time(Interval::H1);
    let mut state = TickState::new(d, example.broker.initial_equity_usd, first);
    // Tick until the offline SMA cross holds a position.
    let mut last = first;
    for bar in &bars[40..] {
        last = bar.close_time(Interval::H1);
        broker.apply_bar("EURUSD", bar, last).expect("bar");
        let ctx = common::trade_ctx(d, &example.market, last);
        run_tick(d, &ctx, model.as_ref(), &mut broker, &mut state, &store)
            .await
            .expect("tick");
        if !broker.snapshot(last).positions.is_empty() {
            break;
        }
    }
    let open = store.open_trades(d.deployment_id).await.unwrap();
    assert_eq!(open.len(), 1, "a position to flatten");

    let at = last + Duration::minutes(20);
    let out = run_flatten(d, &mut broker, &mut state, &store, at, None)
        .await
        .expect("flatten");
    assert!(out.recorded && out.is_flat());
    assert!(broker.snapshot(at).positions.is_empty());
    assert!(store.open_trades(d.deployment_id).await.unwrap().is_empty());
    let row = store.get_trade(open[0].id).await.unwrap();
    assert_eq!(row.status, TradeStatus::Closed);
    assert_eq!(row.close_kind, Some(CloseKind::Signal));
    assert_eq!(row.exit_reason.as_deref(), Some(FLATTEN_REASON));
    assert_eq!(row.exit_snapshot_id, Some(out.snapshot_id));

    let snap = store.get_snapshot(out.snapshot_id).await.unwrap();
    assert_eq!((snap.tick_at, snap.model.as_str()), (at, FLATTEN_MODEL));
    assert!(snap.proposal.is_none());
    match &snap.verdict {
        Verdict::Executed { detail } => {
            assert!(detail.starts_with("flatten on stop: EURUSD "), "{detail}");
        }
        other => panic!("expected executed, got {other:?}"),
    }
    let fills = store
        .list_fills(d.deployment_id, Some(at - Duration::minutes(1)))
        .await
        .unwrap();
    assert_eq!(fills.len(), 1, "the closing fill is stored");
    assert_eq!(state.last_tick_at, Some(at));

    // Again later: nothing to close, recorded as a no-op.
    let later = at + Duration::minutes(5);
    let again = run_flatten(d, &mut broker, &mut state, &store, later, None)
        .await
        .expect("flatten again");
    assert!(again.is_flat() && again.report.positions.is_empty());
    assert!(matches!(
        store.get_snapshot(again.snapshot_id).await.unwrap().verdict,
        Verdict::NoOp { .. }
    ));
}
