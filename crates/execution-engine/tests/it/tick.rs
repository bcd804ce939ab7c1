//! The engine's pieces together, the way a runner uses them each tick: the broker's snapshot and
//! the risk bookkeeping make the account view, the engine decides, the broker fills.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use execution_engine::{Decision, OrderTag, PaperBroker, PaperBrokerConfig, RiskState, validate};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use skill_schema::RiskCaps;
use types::{OrderAction, ProposedAction, RuleCode, Verdict};

struct Runner {
    broker: PaperBroker,
    risk: RiskState,
    caps: RiskCaps,
}

impl Runner {
    fn tick(&mut self, at: DateTime<Utc>, btc: Decimal, p: &ProposedAction) -> Decision {
        self.broker.update_mark("BTC", btc, at).unwrap();
        let snapshot = self.broker.snapshot(at);
        self.risk.observe_equity(snapshot.equity_usd, at);
        let view = self
            .risk
            .account_view(snapshot, BTreeMap::from([("BTC".to_owned(), btc)]));
        let decision = validate(Some(p), &self.caps, &view, &["BTC".to_owned()], at);
        if let Some(order) = &decision.order {
            self.broker
                .execute(order, btc, at, OrderTag::default())
                .unwrap();
            self.risk.record_order(at);
        }
        decision
    }
}

fn action(action: OrderAction, size: Option<Decimal>, leverage: Option<Decimal>) -> ProposedAction {
    ProposedAction {
        action,
        symbol: "BTC".into(),
        size_usd: size,
        leverage,
        reason: "r".into(),
        confidence: None,
        stop: None,
        target: None,
    }
}

#[test]
fn a_daily_loss_halt_blocks_opening_allows_closing_and_lifts_the_next_utc_day() {
    let start = Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap();
    let mut r = Runner {
        broker: PaperBroker::new(PaperBrokerConfig {
            initial_equity_usd: dec!(10000),
            taker_fee_bps: dec!(0),
            slippage_bps: dec!(0),
            maintenance_margin_rate: dec!(0.005),
            exchange_max_leverage: Default::default(),
        })
        .unwrap(),
        risk: RiskState::new(dec!(10000), start),
        caps: RiskCaps {
            max_position_pct: dec!(100),
            max_total_exposure_pct: dec!(100),
            max_leverage: dec!(5),
            min_order_usd: dec!(10),
            max_order_usd: dec!(10000),
            max_orders_per_hour: 6,
            halt_drawdown_pct: dec!(20),
            halt_daily_loss_pct: dec!(5),
            allowed_symbols: vec![],
        },
    };
    let open = action(OrderAction::OpenLong, Some(dec!(6000)), Some(dec!(3)));

    // 09:00 open 0.1 BTC at $60,000, 3x.
    let d = r.tick(start, dec!(60000), &open);
    assert!(matches!(d.verdict, Verdict::Executed { .. }), "{d:?}");

    // 10:00 BTC $54,000: equity 10,000 − 0.1 × 6,000 = 9,400, 6 % below the day's start.
    let at = start + chrono::Duration::hours(1);
    let d = r.tick(at, dec!(54000), &open);
    assert_eq!(d.rule(), Some(RuleCode::HaltDailyLoss), "{}", d.detail());
    // Closing passes the halt.
    let d = r.tick(at, dec!(54000), &action(OrderAction::Close, None, None));
    assert!(matches!(d.verdict, Verdict::Executed { .. }), "{d:?}");
    assert_eq!(r.broker.equity_usd(), dec!(9400));
    assert!(r.broker.snapshot(at).positions.is_empty());

    // Next UTC day: the day starts at 9,400; the drawdown from 10,000 is 6 % < 20 %.
    let next_day = Utc.with_ymd_and_hms(2026, 3, 3, 0, 5, 0).unwrap();
    let small = action(OrderAction::OpenLong, Some(dec!(1000)), None);
    let d = r.tick(next_day, dec!(54000), &small);
    assert!(matches!(d.verdict, Verdict::Executed { .. }), "{d:?}");
    assert_eq!(r.risk.day_start_equity_usd, dec!(9400));
    assert_eq!(r.broker.drain_fills().len(), 3);
}
