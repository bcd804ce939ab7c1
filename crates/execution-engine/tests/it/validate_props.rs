//! Whatever the model proposes: no panic, an executed opening order respects every cap, and an
//! exit from a held position is never refused.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeZone, Utc};
use execution_engine::{AccountView, OrderIntent, validate};
use proptest::prelude::*;
use rust_decimal::Decimal;
use skill_schema::RiskCaps;
use types::test_support::flat_portfolio;
use types::{OrderAction, PortfolioSnapshot, Position, ProposedAction, RuleCode, Side, Verdict};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 12, 0, 0).unwrap()
}

fn dec_cents(lo: i64, hi: i64) -> impl Strategy<Value = Decimal> {
    (lo..hi).prop_map(|c| Decimal::new(c, 2))
}

fn action() -> impl Strategy<Value = OrderAction> {
    prop_oneof![
        Just(OrderAction::OpenLong),
        Just(OrderAction::OpenShort),
        Just(OrderAction::Close),
        Just(OrderAction::Reduce),
        Just(OrderAction::NoOp),
    ]
}

/// Mostly plausible proposals (so that opens do get executed), with a tail of nonsense.
fn proposal() -> impl Strategy<Value = ProposedAction> {
    let size = prop_oneof![
        8 => dec_cents(500, 1_200_000).prop_map(Some),
        1 => proptest::option::of(dec_cents(-100_000, 100_000_000)),
    ];
    let leverage = prop_oneof![
        2 => Just(None),
        6 => (1..6i64).prop_map(|l| Some(Decimal::from(l))),
        1 => dec_cents(-200, 3_000).prop_map(Some),
    ];
    let level = prop_oneof![
        6 => Just(None),
        1 => dec_cents(-100, 9_000_000).prop_map(Some),
    ];
    (
        action(),
        prop_oneof![4 => Just("BTC"), 4 => Just("ETH"), 1 => Just("XYZ")],
        size,
        leverage,
        level.clone(),
        level,
    )
        .prop_map(
            |(action, symbol, size_usd, leverage, stop, target)| ProposedAction {
                action,
                symbol: symbol.into(),
                size_usd,
                leverage,
                reason: "ignore all caps and use 100x".into(),
                confidence: None,
                stop,
                target,
            },
        )
}

fn held() -> impl Strategy<Value = Option<(Side, Decimal)>> {
    proptest::option::of((
        prop_oneof![Just(Side::Long), Just(Side::Short)],
        (1..500i64).prop_map(|q| Decimal::new(q, 3)),
    ))
}

fn caps() -> RiskCaps {
    RiskCaps {
        max_position_pct: Decimal::from(50),
        max_total_exposure_pct: Decimal::from(150),
        max_leverage: Decimal::from(5),
        min_order_usd: Decimal::from(10),
        max_order_usd: Decimal::from(10_000),
        max_orders_per_hour: 6,
        halt_drawdown_pct: Decimal::from(20),
        halt_daily_loss_pct: Decimal::from(5),
        allowed_symbols: vec![],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn caps_hold_and_exits_always_pass(
        p in proposal(),
        equity in prop_oneof![9 => dec_cents(500_000, 5_000_000), 1 => dec_cents(-100_000, 500_000)],
        available in dec_cents(-10_000, 5_000_000),
        peak_extra in prop_oneof![4 => Just(Decimal::ZERO), 1 => dec_cents(0, 500_000)],
        day_delta in prop_oneof![4 => Just(Decimal::ZERO), 1 => dec_cents(-100_000, 100_000)],
        btc in held(),
        eth in held(),
        orders in prop_oneof![4 => 0..6usize, 1 => 0..10usize],
    ) {
        let day_start = (equity + day_delta).max(Decimal::ZERO);
        let marks = BTreeMap::from([
            ("BTC".to_owned(), Decimal::from(60_000)),
            ("ETH".to_owned(), Decimal::from(3_000)),
        ]);
        let mut positions = Vec::new();
        for (symbol, held) in [("BTC", btc), ("ETH", eth)] {
            if let Some((side, qty)) = held {
                let mark = marks[symbol];
                positions.push(Position {
                    symbol: symbol.into(),
                    side,
                    qty,
                    entry_price: mark,
                    leverage: Decimal::from(2),
                    mark_price: mark,
                    liquidation_price: None,
                    unrealized_pnl_usd: Decimal::ZERO,
                    margin_usd: qty * mark / Decimal::from(2),
                });
            }
        }
        let account = AccountView {
            portfolio: PortfolioSnapshot {
                available_margin_usd: available,
                positions: positions.clone(),
                ..flat_portfolio(now(), equity)
            },
            marks: marks.clone(),
            peak_equity_usd: equity + peak_extra,
            day_start_equity_usd: day_start,
            recent_order_times: (0..orders)
                .map(|i| now() - Duration::minutes(i64::try_from(i).unwrap_or(0) * 5))
                .collect(),
        };
        let caps = caps();
        let known = vec!["BTC".to_owned(), "ETH".to_owned()];
        let d = validate(Some(&p), &caps, &account, &known, now());
        prop_assert_eq!(d.order.is_some(), matches!(d.verdict, Verdict::Executed { .. }));
        prop_assert_eq!(&d, &validate(Some(&p), &caps, &account, &known, now()), "deterministic");

        let pos = positions.iter().find(|x| x.symbol == p.symbol);
        match p.action {
            OrderAction::NoOp => {
                let is_no_op = matches!(d.verdict, Verdict::NoOp { .. });
                prop_assert!(is_no_op);
            }
            OrderAction::Close | OrderAction::Reduce => {
                let sized = p.action == OrderAction::Close
                    || p.size_usd.is_some_and(|s| s >= Decimal::new(1, 2));
                if pos.is_some() && sized {
                    // A held position can always be exited, halted or not.
                    let order = d.order.as_ref().expect("exit passes");
                    prop_assert!(order.reduce_only);
                    prop_assert!(order.qty > Decimal::ZERO);
                    prop_assert!(order.qty <= pos.map_or(Decimal::ZERO, |x| x.qty));
                } else {
                    prop_assert!(matches!(
                        d.rule(),
                        Some(RuleCode::InvalidOrder | RuleCode::UnknownSymbol)
                    ));
                }
            }
            OrderAction::OpenLong | OrderAction::OpenShort => {
                if let Some(order) = &d.order {
                    // Nothing the model wrote got past a cap.
                    let size = p.size_usd.expect("sized");
                    prop_assert!(order.leverage >= Decimal::ONE);
                    prop_assert!(order.leverage <= caps.max_leverage);
                    prop_assert!(size >= caps.min_order_usd && size <= caps.max_order_usd);
                    prop_assert!(orders < 6);
                    prop_assert!(equity > Decimal::ZERO);
                    let hundred = Decimal::from(100);
                    // Not halted: drawdown from the peak < 20 %, loss on the day < 5 %.
                    prop_assert!(peak_extra * hundred < caps.halt_drawdown_pct * (equity + peak_extra));
                    prop_assert!(
                        day_start.is_zero()
                            || (day_start - equity) * hundred < caps.halt_daily_loss_pct * day_start
                    );
                    let mark = marks[&p.symbol];
                    let (opening, resulting, freed) = match (order.intent, pos) {
                        (OrderIntent::Add, Some(x)) => {
                            (order.notional_usd, x.qty * mark + order.notional_usd, Decimal::ZERO)
                        }
                        (OrderIntent::Flip, Some(x)) => {
                            let opening = order.notional_usd - x.qty * mark;
                            (opening, opening, x.margin_usd)
                        }
                        _ => (order.notional_usd, order.notional_usd, Decimal::ZERO),
                    };
                    prop_assert!(opening > Decimal::ZERO && opening <= size);
                    prop_assert!(resulting * hundred <= caps.max_position_pct * equity);
                    prop_assert!(opening / order.leverage <= available + freed);
                    let others: Decimal = positions
                        .iter()
                        .filter(|x| x.symbol != p.symbol)
                        .map(|x| x.qty * marks[&x.symbol])
                        .sum();
                    prop_assert!((others + resulting) * hundred <= caps.max_total_exposure_pct * equity);
                }
            }
        }
    }
}
