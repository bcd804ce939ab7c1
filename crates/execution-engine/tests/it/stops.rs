//! Stops and targets executed by the paper broker: hand-computed bar paths and PnL.
//!
//! Every case opens 10 BTC at a mark of 100 on an account with a 10 bps taker fee, 10 bps
//! slippage and 0.5 % maintenance margin, at 2x (liquidation far away) unless it says otherwise:
//! - long entry  = 100 × (1 + 0.001) = 100.1, opening fee = 10 × 100.1 × 0.001 = 1.001;
//! - short entry = 100 × (1 − 0.001) =  99.9, opening fee = 10 ×  99.9 × 0.001 = 0.999.
//!
//! A stop fills with slippage against the taker (a long's stop sells at `level × 0.999`, a
//! short's buys at `level × 1.001`); a target fills at its level (or the better gap open) with
//! no slippage. Both pay the 10 bps taker fee.

use chrono::{DateTime, Duration, TimeZone, Utc};
use execution_engine::{Order, OrderIntent, OrderTag, PaperBroker, PaperBrokerConfig};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use types::{Bar, FillTrigger, OrderSide, Side};

fn t(hours: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 12, 0, 0).unwrap() + Duration::hours(hours)
}

fn broker() -> PaperBroker {
    PaperBroker::new(PaperBrokerConfig {
        initial_equity_usd: dec!(10000),
        taker_fee_bps: dec!(10),
        slippage_bps: dec!(10),
        maintenance_margin_rate: dec!(0.005),
        exchange_max_leverage: Default::default(),
    })
    .unwrap()
}

#[allow(clippy::too_many_arguments)]
fn order(
    side: OrderSide,
    qty: Decimal,
    leverage: Decimal,
    reduce_only: bool,
    stop: Option<Decimal>,
    target: Option<Decimal>,
) -> Order {
    Order {
        symbol: "BTC".into(),
        side,
        qty,
        leverage,
        reduce_only,
        intent: OrderIntent::Open,
        reference_price: dec!(100),
        notional_usd: qty * dec!(100),
        stop,
        target,
    }
}

/// An hourly bar opening at `t(hour)`; applied with `at` = its close, `t(hour + 1)`.
fn bar(hour: i64, open: Decimal, high: Decimal, low: Decimal, close: Decimal) -> Bar {
    Bar {
        time: t(hour),
        open,
        high,
        low,
        close,
        volume: dec!(1),
    }
}

/// Applies `bars` (hour, open, high, low, close) in order; returns every fill they made with the
/// index of the bar that made it.
fn run_bars(
    b: &mut PaperBroker,
    bars: &[(i64, Decimal, Decimal, Decimal, Decimal)],
) -> Vec<(usize, types::Fill)> {
    let mut out = Vec::new();
    for (i, &(h, o, hi, lo, c)) in bars.iter().enumerate() {
        if let Some(f) = b.apply_bar("BTC", &bar(h, o, hi, lo, c), t(h + 1)).unwrap() {
            out.push((i, f));
        }
    }
    out
}

struct Expect {
    bar: usize,
    trigger: FillTrigger,
    price: Decimal,
    realized: Decimal,
    fee: Decimal,
}

struct Case {
    name: &'static str,
    side: Side,
    stop: Option<Decimal>,
    target: Option<Decimal>,
    bars: Vec<(i64, Decimal, Decimal, Decimal, Decimal)>,
    expect: Option<Expect>,
}

#[test]
fn stops_and_targets_close_the_whole_position_at_the_hand_computed_price() {
    let cases = vec![
        Case {
            // Bar 0 stays above 95; bar 1's low 94 crosses it.
            // fill = 95 × 0.999 = 94.905; realized = (94.905 − 100.1) × 10 = −51.95;
            // fee = 94.905 × 10 × 0.001 = 0.94905.
            name: "long stop hit",
            side: Side::Long,
            stop: Some(dec!(95)),
            target: Some(dec!(110)),
            bars: vec![
                (0, dec!(100), dec!(101), dec!(99), dec!(100)),
                (1, dec!(99), dec!(99.5), dec!(94), dec!(96)),
            ],
            expect: Some(Expect {
                bar: 1,
                trigger: FillTrigger::Stop,
                price: dec!(94.905),
                realized: dec!(-51.95),
                fee: dec!(0.94905),
            }),
        },
        Case {
            // Bar 0's high 111 reaches 110. fill = 110 (no slippage);
            // realized = (110 − 100.1) × 10 = 99; fee = 110 × 10 × 0.001 = 1.1.
            name: "long target hit",
            side: Side::Long,
            stop: Some(dec!(95)),
            target: Some(dec!(110)),
            bars: vec![(0, dec!(105), dec!(111), dec!(104), dec!(108))],
            expect: Some(Expect {
                bar: 0,
                trigger: FillTrigger::Target,
                price: dec!(110),
                realized: dec!(99),
                fee: dec!(1.1),
            }),
        },
        Case {
            // Bar 1's high 106 reaches 105. fill = 105 × 1.001 = 105.105;
            // realized = −(105.105 − 99.9) × 10 = −52.05; fee = 105.105 × 10 × 0.001 = 1.05105.
            name: "short stop hit",
            side: Side::Short,
            stop: Some(dec!(105)),
            target: Some(dec!(90)),
            bars: vec![
                (0, dec!(100), dec!(104), dec!(96), dec!(101)),
                (1, dec!(101), dec!(106), dec!(100), dec!(104)),
            ],
            expect: Some(Expect {
                bar: 1,
                trigger: FillTrigger::Stop,
                price: dec!(105.105),
                realized: dec!(-52.05),
                fee: dec!(1.05105),
            }),
        },
        Case {
            // Bar 0's low 89 reaches 90. fill = 90; realized = (99.9 − 90) × 10 = 99;
            // fee = 90 × 10 × 0.001 = 0.9.
            name: "short target hit",
            side: Side::Short,
            stop: Some(dec!(105)),
            target: Some(dec!(90)),
            bars: vec![(0, dec!(95), dec!(96), dec!(89), dec!(90))],
            expect: Some(Expect {
                bar: 0,
                trigger: FillTrigger::Target,
                price: dec!(90),
                realized: dec!(99),
                fee: dec!(0.9),
            }),
        },
        Case {
            // Bar 1 opens at 93, below the stop 95: the stop fills at the open.
            // fill = 93 × 0.999 = 92.907; realized = (92.907 − 100.1) × 10 = −71.93;
            // fee = 92.907 × 10 × 0.001 = 0.92907.
            name: "long gap through the stop fills at the open",
            side: Side::Long,
            stop: Some(dec!(95)),
            target: None,
            bars: vec![
                (0, dec!(100), dec!(101), dec!(99), dec!(100)),
                (1, dec!(93), dec!(94), dec!(92), dec!(93.5)),
            ],
            expect: Some(Expect {
                bar: 1,
                trigger: FillTrigger::Stop,
                price: dec!(92.907),
                realized: dec!(-71.93),
                fee: dec!(0.92907),
            }),
        },
        Case {
            // Opens at 108, above the stop 105: fill = 108 × 1.001 = 108.108;
            // realized = −(108.108 − 99.9) × 10 = −82.08; fee = 1.08108.
            name: "short gap through the stop fills at the open",
            side: Side::Short,
            stop: Some(dec!(105)),
            target: None,
            bars: vec![(0, dec!(108), dec!(109), dec!(107), dec!(108))],
            expect: Some(Expect {
                bar: 0,
                trigger: FillTrigger::Stop,
                price: dec!(108.108),
                realized: dec!(-82.08),
                fee: dec!(1.08108),
            }),
        },
        Case {
            // Opens at 112, above the target 110: the target fills at the better open, no
            // slippage. realized = (112 − 100.1) × 10 = 119; fee = 1.12.
            name: "long gap through the target fills at the open",
            side: Side::Long,
            stop: Some(dec!(95)),
            target: Some(dec!(110)),
            bars: vec![(0, dec!(112), dec!(113), dec!(111), dec!(112))],
            expect: Some(Expect {
                bar: 0,
                trigger: FillTrigger::Target,
                price: dec!(112),
                realized: dec!(119),
                fee: dec!(1.12),
            }),
        },
        Case {
            // One bar reaches both 94 ≤ 95 and 111 ≥ 110: the stop fills (stated order).
            // fill = 94.905, realized −51.95, fee 0.94905 as in the first case.
            name: "long both in one bar: stop first",
            side: Side::Long,
            stop: Some(dec!(95)),
            target: Some(dec!(110)),
            bars: vec![(0, dec!(100), dec!(111), dec!(94), dec!(105))],
            expect: Some(Expect {
                bar: 0,
                trigger: FillTrigger::Stop,
                price: dec!(94.905),
                realized: dec!(-51.95),
                fee: dec!(0.94905),
            }),
        },
        Case {
            // One bar reaches both 106 ≥ 105 and 89 ≤ 90: the stop fills at 105.105.
            name: "short both in one bar: stop first",
            side: Side::Short,
            stop: Some(dec!(105)),
            target: Some(dec!(90)),
            bars: vec![(0, dec!(100), dec!(106), dec!(89), dec!(95))],
            expect: Some(Expect {
                bar: 0,
                trigger: FillTrigger::Stop,
                price: dec!(105.105),
                realized: dec!(-52.05),
                fee: dec!(1.05105),
            }),
        },
        Case {
            // Lows 95.01 > 95 and highs 109.99 < 110: nothing fills, the position stays.
            name: "long no hit",
            side: Side::Long,
            stop: Some(dec!(95)),
            target: Some(dec!(110)),
            bars: vec![
                (0, dec!(100), dec!(109.99), dec!(95.01), dec!(101)),
                (1, dec!(101), dec!(105), dec!(96), dec!(104)),
            ],
            expect: None,
        },
        Case {
            // A bar that opened before the fill (hour −1, closing at the fill's time) is the
            // fill's own bar: its low 90 does not execute the stop.
            name: "the fill's own bar does not execute",
            side: Side::Long,
            stop: Some(dec!(95)),
            target: None,
            bars: vec![(-1, dec!(100), dec!(101), dec!(90), dec!(100))],
            expect: None,
        },
    ];

    for case in cases {
        let mut b = broker();
        let side = case.side.opening_order();
        b.execute(
            &order(side, dec!(10), dec!(2), false, case.stop, case.target),
            dec!(100),
            t(0),
            OrderTag::default(),
        )
        .unwrap();
        b.drain_fills();
        let cash_before = b.cash_usd();
        let fills = run_bars(&mut b, &case.bars);
        match &case.expect {
            None => {
                assert!(fills.is_empty(), "{}: {fills:?}", case.name);
                assert!(b.paper_position("BTC").is_some(), "{}", case.name);
            }
            Some(e) => {
                assert_eq!(fills.len(), 1, "{}: {fills:?}", case.name);
                let (i, f) = &fills[0];
                assert_eq!(*i, e.bar, "{}", case.name);
                assert_eq!(f.trigger, Some(e.trigger), "{}", case.name);
                assert_eq!(f.price, e.price, "{}", case.name);
                assert_eq!(f.fee_usd, e.fee, "{}", case.name);
                assert_eq!(f.qty, dec!(10), "{}", case.name);
                assert_eq!(
                    f.side,
                    case.side.opposite().opening_order(),
                    "{}",
                    case.name
                );
                assert!(!f.liquidation && f.snapshot_id.is_none(), "{}", case.name);
                assert_eq!(f.time, t(case.bars[e.bar].0 + 1), "{}", case.name);
                assert!(b.paper_position("BTC").is_none(), "{}", case.name);
                assert_eq!(
                    b.cash_usd() - cash_before,
                    e.realized - e.fee,
                    "{}",
                    case.name
                );
                assert_eq!(b.drain_fills(), vec![f.clone()], "{}", case.name);
            }
        }
    }
}

#[test]
fn an_add_with_new_levels_replaces_them_and_a_reduce_keeps_them() {
    let mut b = broker();
    // Open long 10 at 100.1 with stop 95 and target 110.
    b.execute(
        &order(
            OrderSide::Buy,
            dec!(10),
            dec!(2),
            false,
            Some(dec!(95)),
            Some(dec!(110)),
        ),
        dec!(100),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    // An add without levels keeps both.
    b.execute(
        &order(OrderSide::Buy, dec!(5), dec!(2), false, None, None),
        dec!(100),
        t(1),
        OrderTag::default(),
    )
    .unwrap();
    let p = b.paper_position("BTC").unwrap();
    assert_eq!((p.stop, p.target), (Some(dec!(95)), Some(dec!(110))));
    // An add with a stop of 98 replaces the stop and keeps the target. Entry stays 100.1 (all
    // three legs filled at 100.1): 20 × 100.1 / 20.
    b.execute(
        &order(
            OrderSide::Buy,
            dec!(5),
            dec!(2),
            false,
            Some(dec!(98)),
            None,
        ),
        dec!(100),
        t(2),
        OrderTag::default(),
    )
    .unwrap();
    let p = b.paper_position("BTC").unwrap();
    assert_eq!((p.stop, p.target), (Some(dec!(98)), Some(dec!(110))));
    assert_eq!(p.entry_price, dec!(100.1));
    // A reduce of 4 (sell at 100 × 0.999 = 99.9) keeps both levels.
    b.execute(
        &order(OrderSide::Sell, dec!(4), dec!(2), true, None, None),
        dec!(100),
        t(2),
        OrderTag::default(),
    )
    .unwrap();
    let p = b.paper_position("BTC").unwrap();
    assert_eq!((p.stop, p.target), (Some(dec!(98)), Some(dec!(110))));
    assert_eq!(p.qty, dec!(16));
    b.drain_fills();
    // Bar 2 low 97.5: above the old stop 95, below the new stop 98.
    // fill = 98 × 0.999 = 97.902; realized = (97.902 − 100.1) × 16 = −35.168;
    // fee = 97.902 × 16 × 0.001 = 1.566432.
    let cash_before = b.cash_usd();
    let f = b
        .apply_bar(
            "BTC",
            &bar(2, dec!(99), dec!(100), dec!(97.5), dec!(98)),
            t(3),
        )
        .unwrap()
        .expect("the replaced stop executes");
    assert_eq!(f.trigger, Some(FillTrigger::Stop));
    assert_eq!(
        (f.qty, f.price, f.fee_usd),
        (dec!(16), dec!(97.902), dec!(1.566432))
    );
    assert_eq!(b.cash_usd() - cash_before, dec!(-35.168) - dec!(1.566432));
    assert!(b.paper_position("BTC").is_none());
}

#[test]
fn a_close_or_a_flip_clears_the_levels() {
    // Closed by a signal: a later bar through the old stop does nothing, even after a new
    // position without levels is opened.
    let mut b = broker();
    b.execute(
        &order(
            OrderSide::Buy,
            dec!(10),
            dec!(2),
            false,
            Some(dec!(95)),
            Some(dec!(110)),
        ),
        dec!(100),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    b.execute(
        &order(OrderSide::Sell, dec!(10), dec!(2), true, None, None),
        dec!(100),
        t(1),
        OrderTag::default(),
    )
    .unwrap();
    assert!(b.paper_position("BTC").is_none());
    b.drain_fills();
    let through_both = bar(1, dec!(100), dec!(120), dec!(80), dec!(100));
    assert_eq!(b.apply_bar("BTC", &through_both, t(2)).unwrap(), None);
    b.execute(
        &order(OrderSide::Buy, dec!(10), dec!(2), false, None, None),
        dec!(100),
        t(2),
        OrderTag::default(),
    )
    .unwrap();
    b.drain_fills();
    let through_both = bar(2, dec!(100), dec!(120), dec!(80), dec!(100));
    assert_eq!(b.apply_bar("BTC", &through_both, t(3)).unwrap(), None);
    assert!(b.drain_fills().is_empty());
    assert_eq!(b.paper_position("BTC").unwrap().stop, None);

    // Flipped by a sell of 20 without levels: the short has none of the long's.
    let mut b = broker();
    b.execute(
        &order(
            OrderSide::Buy,
            dec!(10),
            dec!(2),
            false,
            Some(dec!(95)),
            Some(dec!(110)),
        ),
        dec!(100),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    b.execute(
        &order(OrderSide::Sell, dec!(20), dec!(2), false, None, None),
        dec!(100),
        t(1),
        OrderTag::default(),
    )
    .unwrap();
    let p = b.paper_position("BTC").unwrap();
    assert_eq!((p.side, p.stop, p.target), (Side::Short, None, None));
    b.drain_fills();
    let through_both = bar(1, dec!(100), dec!(120), dec!(80), dec!(100));
    assert_eq!(b.apply_bar("BTC", &through_both, t(2)).unwrap(), None);
}

#[test]
fn liquidation_comes_first_when_the_stop_could_not_fill_before_it() {
    // 10x long: margin = 10 × 100.1 / 10 = 100.1, per unit 10.01;
    // liquidation = (100.1 − 10.01) / (1 − 0.005) = 90.09 / 0.995 = 90.542713567839 (12 dp).
    let open = |stop| {
        let mut b = broker();
        b.execute(
            &order(OrderSide::Buy, dec!(10), dec!(10), false, Some(stop), None),
            dec!(100),
            t(0),
            OrderTag::default(),
        )
        .unwrap();
        b.drain_fills();
        b
    };
    let liq = dec!(90.542713567839);

    // Stop 95 above the liquidation price, low 80: the price passes 95 first → stop at 94.905.
    let mut b = open(dec!(95));
    assert_eq!(b.liquidation_price("BTC"), Some(liq));
    let f = b
        .apply_bar(
            "BTC",
            &bar(0, dec!(100), dec!(100), dec!(80), dec!(85)),
            t(1),
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        (f.trigger, f.liquidation, f.price),
        (Some(FillTrigger::Stop), false, dec!(94.905))
    );

    // Stop 85 below the liquidation price: the account is liquidated first, at its price.
    let mut b = open(dec!(85));
    let f = b
        .apply_bar(
            "BTC",
            &bar(0, dec!(100), dec!(100), dec!(80), dec!(85)),
            t(1),
        )
        .unwrap()
        .unwrap();
    assert_eq!((f.trigger, f.liquidation, f.price), (None, true, liq));

    // Stop 95, but the bar opens at 88, beyond the liquidation price: liquidation.
    let mut b = open(dec!(95));
    let f = b
        .apply_bar("BTC", &bar(0, dec!(88), dec!(89), dec!(80), dec!(85)), t(1))
        .unwrap()
        .unwrap();
    assert_eq!((f.trigger, f.liquidation, f.price), (None, true, liq));
}

#[test]
fn broker_state_with_levels_round_trips_and_old_states_without_them_still_read() {
    let mut b = broker();
    b.execute(
        &order(
            OrderSide::Buy,
            dec!(10),
            dec!(2),
            false,
            Some(dec!(95)),
            Some(dec!(110)),
        ),
        dec!(100),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    let json = serde_json::to_value(&b).unwrap();
    assert_eq!(json["positions"]["BTC"]["stop"], "95");
    let restored: PaperBroker = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(restored, b);

    // A state written before stops existed: the position has no level fields at all.
    let mut old = json;
    let pos = old["positions"]["BTC"].as_object_mut().unwrap();
    for key in ["stop", "target", "levels_since"] {
        pos.remove(key);
    }
    let mut restored: PaperBroker = serde_json::from_value(old).unwrap();
    let p = restored.paper_position("BTC").unwrap();
    assert_eq!((p.stop, p.target, p.levels_since), (None, None, None));
    assert_eq!(
        restored
            .apply_bar(
                "BTC",
                &bar(0, dec!(100), dec!(120), dec!(80), dec!(100)),
                t(1)
            )
            .unwrap(),
        None
    );

    // A position without levels serializes exactly as before (no new keys).
    let mut plain = broker();
    plain
        .execute(
            &order(OrderSide::Buy, dec!(10), dec!(2), false, None, None),
            dec!(100),
            t(0),
            OrderTag::default(),
        )
        .unwrap();
    let text = serde_json::to_string(&plain).unwrap();
    assert!(
        !text.contains("stop") && !text.contains("levels_since"),
        "{text}"
    );

    // A stored level that is not positive is refused on restore, naming it.
    let mut bad = serde_json::to_value(&b).unwrap();
    bad["positions"]["BTC"]["stop"] = serde_json::Value::String("-1".into());
    let err = serde_json::from_value::<PaperBroker>(bad).unwrap_err();
    assert!(
        err.to_string().contains("position BTC has stop -1"),
        "{err}"
    );
}
