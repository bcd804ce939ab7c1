//! The paper broker's arithmetic, step by step, with every number written out.

use chrono::{DateTime, Duration, TimeZone, Utc};
use execution_engine::{BrokerError, Order, OrderIntent, OrderTag, PaperBroker, PaperBrokerConfig};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use types::{Bar, OrderSide, Side, Uuid};

fn t(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 12, 0, 0).unwrap() + Duration::minutes(minutes)
}

/// $10,000; taker fee 5 bps; slippage 10 bps; maintenance margin 0.5 %.
fn broker() -> PaperBroker {
    PaperBroker::new(PaperBrokerConfig {
        initial_equity_usd: dec!(10000),
        taker_fee_bps: dec!(5),
        slippage_bps: dec!(10),
        maintenance_margin_rate: dec!(0.005),
        exchange_max_leverage: Default::default(),
    })
    .unwrap()
}

fn order(side: OrderSide, qty: Decimal, leverage: Decimal, reduce_only: bool) -> Order {
    Order {
        symbol: "BTC".into(),
        side,
        qty,
        leverage,
        reduce_only,
        // The broker nets by side and quantity; the intent is informational.
        intent: OrderIntent::Open,
        reference_price: dec!(60000),
        notional_usd: qty * dec!(60000),
        stop: None,
        target: None,
    }
}

fn buy(qty: Decimal, leverage: Decimal) -> Order {
    order(OrderSide::Buy, qty, leverage, false)
}

fn sell(qty: Decimal, leverage: Decimal) -> Order {
    order(OrderSide::Sell, qty, leverage, false)
}

fn bar(open: Decimal, high: Decimal, low: Decimal, close: Decimal) -> Bar {
    Bar {
        time: t(0),
        open,
        high,
        low,
        close,
        volume: dec!(1),
    }
}

/// equity == initial + realized − fees + unrealized, and the snapshot agrees with the broker.
#[track_caller]
fn assert_books_balance(b: &PaperBroker) {
    let s = b.snapshot(t(0));
    let unrealized: Decimal = s.positions.iter().map(|p| p.unrealized_pnl_usd).sum();
    assert_eq!(
        s.equity_usd,
        b.config().initial_equity_usd + s.realized_pnl_usd - s.fees_paid_usd + unrealized
    );
    assert_eq!(s.equity_usd, b.equity_usd());
}

#[test]
fn open_add_partial_reduce_and_close_with_fees_slippage_and_average_cost() {
    let mut b = broker();
    let tag = OrderTag {
        snapshot_id: Some(Uuid::nil()),
        client_order_id: Some("tick-1".into()),
    };

    // 1. Buy 0.1 BTC at $60,000, 5x.
    //    fill   = 60,000 × (1 + 10/10,000)          = 60,060
    //    fee    = 0.1 × 60,060 × 5/10,000 = 6,006 × 0.0005 = 3.003
    //    margin = 6,006 / 5                          = 1,201.2
    //    cash   = 10,000 − 3.003                     = 9,996.997
    //    upnl   = (60,000 − 60,060) × 0.1            = −6      (marked at the order's price)
    //    equity = 9,996.997 − 6                      = 9,990.997
    //    avail  = 9,996.997 − 1,201.2                = 8,795.797
    //    liq    = (60,060 − 1,201.2/0.1) / (1 − 0.005) = 48,048 / 0.995
    let fill = b
        .execute(&buy(dec!(0.1), dec!(5)), dec!(60000), t(0), tag.clone())
        .unwrap();
    assert_eq!(fill.id, "paper-1");
    assert_eq!(fill.side, OrderSide::Buy);
    assert_eq!(fill.qty, dec!(0.1));
    assert_eq!(fill.price, dec!(60060));
    assert_eq!(fill.fee_usd, dec!(3.003));
    assert_eq!(fill.time, t(0));
    assert_eq!(fill.snapshot_id, Some(Uuid::nil()));
    assert_eq!(fill.client_order_id.as_deref(), Some("tick-1"));
    assert!(!fill.liquidation);
    let s = b.snapshot(t(0));
    let p = &s.positions[0];
    assert_eq!(
        (p.side, p.qty, p.entry_price),
        (Side::Long, dec!(0.1), dec!(60060))
    );
    assert_eq!(p.leverage, dec!(5));
    assert_eq!(p.margin_usd, dec!(1201.2));
    assert_eq!(p.mark_price, dec!(60000));
    assert_eq!(p.unrealized_pnl_usd, dec!(-6));
    assert_eq!(
        p.liquidation_price,
        Some((dec!(48048) / dec!(0.995)).round_dp(12))
    );
    assert_eq!(p.liquidation_price, Some(dec!(48289.447236180905)));
    assert_eq!(b.cash_usd(), dec!(9996.997));
    assert_eq!(s.equity_usd, dec!(9990.997));
    assert_eq!(s.available_margin_usd, dec!(8795.797));
    assert_eq!(s.fees_paid_usd, dec!(3.003));
    assert_eq!(s.realized_pnl_usd, dec!(0));
    assert_books_balance(&b);

    // 2. Add 0.1 BTC at $62,000, 5x.
    //    fill   = 62,000 × 1.001 = 62,062; notional 6,206.2; fee 3.1031; margin 1,241.24
    //    entry  = (0.1 × 60,060 + 0.1 × 62,062) / 0.2 = 61,061
    //    margin = 1,201.2 + 1,241.24 = 2,442.44
    //    cash   = 9,996.997 − 3.1031 = 9,993.8939
    //    upnl   = (62,000 − 61,061) × 0.2 = 187.8
    //    equity = 9,993.8939 + 187.8 = 10,181.6939; avail = 9,993.8939 − 2,442.44 = 7,551.4539
    let fill = b
        .execute(
            &buy(dec!(0.1), dec!(5)),
            dec!(62000),
            t(1),
            OrderTag::default(),
        )
        .unwrap();
    assert_eq!(fill.id, "paper-2");
    assert_eq!((fill.price, fill.fee_usd), (dec!(62062), dec!(3.1031)));
    assert_eq!(fill.snapshot_id, None);
    let s = b.snapshot(t(1));
    let p = &s.positions[0];
    assert_eq!(
        (p.qty, p.entry_price, p.margin_usd),
        (dec!(0.2), dec!(61061), dec!(2442.44))
    );
    assert_eq!(p.leverage, dec!(5));
    assert_eq!(p.unrealized_pnl_usd, dec!(187.8));
    assert_eq!(s.equity_usd, dec!(10181.6939));
    assert_eq!(s.available_margin_usd, dec!(7551.4539));
    assert_books_balance(&b);

    // 3. Reduce: sell 0.05 at $63,000.
    //    fill     = 63,000 × 0.999 = 62,937; notional 3,146.85; fee 1.573425
    //    realized = (62,937 − 61,061) × 0.05 = 93.8 (on the closed qty; entry stays 61,061)
    //    released = 2,442.44 × 0.05 / 0.2 = 610.61 → margin 1,831.83
    //    cash     = 9,993.8939 + 93.8 − 1.573425 = 10,086.120475
    //    upnl     = (63,000 − 61,061) × 0.15 = 290.85
    //    equity   = 10,376.970475; avail = 10,086.120475 − 1,831.83 = 8,254.290475
    let fill = b
        .execute(
            &order(OrderSide::Sell, dec!(0.05), dec!(5), true),
            dec!(63000),
            t(2),
            OrderTag::default(),
        )
        .unwrap();
    assert_eq!(
        (fill.side, fill.qty, fill.price),
        (OrderSide::Sell, dec!(0.05), dec!(62937))
    );
    assert_eq!(fill.fee_usd, dec!(1.573425));
    let s = b.snapshot(t(2));
    let p = &s.positions[0];
    assert_eq!(
        (p.qty, p.entry_price, p.margin_usd),
        (dec!(0.15), dec!(61061), dec!(1831.83))
    );
    assert_eq!(p.unrealized_pnl_usd, dec!(290.85));
    assert_eq!(s.realized_pnl_usd, dec!(93.8));
    assert_eq!(s.equity_usd, dec!(10376.970475));
    assert_eq!(s.available_margin_usd, dec!(8254.290475));
    assert_books_balance(&b);

    // 4. Close: a reduce-only sell of 1 BTC is clamped to the 0.15 held; price $61,000.
    //    fill     = 61,000 × 0.999 = 60,939; notional 9,140.85; fee 4.570425
    //    realized = (60,939 − 61,061) × 0.15 = −18.3 → total 93.8 − 18.3 = 75.5
    //    fees     = 3.003 + 3.1031 + 1.573425 + 4.570425 = 12.24995
    //    cash     = 10,086.120475 − 18.3 − 4.570425 = 10,063.25005 = 10,000 + 75.5 − 12.24995
    let fill = b
        .execute(
            &order(OrderSide::Sell, dec!(1), dec!(5), true),
            dec!(61000),
            t(3),
            OrderTag::default(),
        )
        .unwrap();
    assert_eq!(
        (fill.qty, fill.price, fill.fee_usd),
        (dec!(0.15), dec!(60939), dec!(4.570425))
    );
    let s = b.snapshot(t(3));
    assert!(s.positions.is_empty());
    assert_eq!(s.realized_pnl_usd, dec!(75.5));
    assert_eq!(s.fees_paid_usd, dec!(12.24995));
    assert_eq!(s.equity_usd, dec!(10063.25005));
    assert_eq!(s.available_margin_usd, dec!(10063.25005));
    assert_books_balance(&b);

    let ids: Vec<String> = b.drain_fills().into_iter().map(|f| f.id).collect();
    assert_eq!(ids, ["paper-1", "paper-2", "paper-3", "paper-4"]);
    assert!(
        b.drain_fills().is_empty(),
        "drained fills are reported once"
    );
}

#[test]
fn a_flip_is_one_fill_that_crosses_zero() {
    let mut b = broker();
    // Long 0.1 at fill 60,060, margin 1,201.2, cash 9,996.997 (as above).
    b.execute(
        &buy(dec!(0.1), dec!(5)),
        dec!(60000),
        t(0),
        OrderTag::default(),
    )
    .unwrap();

    // Sell 0.3 at $59,000, 2x: closes 0.1 and opens 0.2 short, in one fill.
    //    fill     = 59,000 × 0.999 = 58,941; notional 0.3 × 58,941 = 17,682.3; fee 8.84115
    //    realized = (58,941 − 60,060) × 0.1 = −111.9 (on the old qty)
    //    new short: 0.2 at 58,941 (the fill price), margin 0.2 × 58,941 / 2 = 5,894.1
    //    cash     = 9,996.997 − 111.9 − 8.84115 = 9,876.25585
    //    upnl     = −(59,000 − 58,941) × 0.2 = −11.8
    //    equity   = 9,864.45585; avail = 9,876.25585 − 5,894.1 = 3,982.15585
    //    liq      = (58,941 + 5,894.1/0.2) / 1.005 = 88,411.5 / 1.005
    let fill = b
        .execute(
            &sell(dec!(0.3), dec!(2)),
            dec!(59000),
            t(1),
            OrderTag::default(),
        )
        .unwrap();
    assert_eq!(
        (fill.side, fill.qty, fill.price),
        (OrderSide::Sell, dec!(0.3), dec!(58941))
    );
    assert_eq!(fill.fee_usd, dec!(8.84115));
    let s = b.snapshot(t(1));
    assert_eq!(s.positions.len(), 1);
    let p = &s.positions[0];
    assert_eq!(
        (p.side, p.qty, p.entry_price),
        (Side::Short, dec!(0.2), dec!(58941))
    );
    assert_eq!((p.leverage, p.margin_usd), (dec!(2), dec!(5894.1)));
    assert_eq!(p.unrealized_pnl_usd, dec!(-11.8));
    assert_eq!(
        p.liquidation_price,
        Some((dec!(88411.5) / dec!(1.005)).round_dp(12))
    );
    assert_eq!(s.realized_pnl_usd, dec!(-111.9));
    assert_eq!(s.equity_usd, dec!(9864.45585));
    assert_eq!(s.available_margin_usd, dec!(3982.15585));
    assert_books_balance(&b);
    assert_eq!(b.drain_fills().len(), 2, "the open and the flip: two fills");
}

#[test]
fn a_bar_through_the_liquidation_price_liquidates_at_that_price() {
    // No slippage, to keep the numbers round.
    let mut b = PaperBroker::new(PaperBrokerConfig {
        slippage_bps: dec!(0),
        ..broker().config().clone()
    })
    .unwrap();
    // Long 1 BTC at $60,000, 10x: margin 6,000; fee 60,000 × 0.0005 = 30; cash 9,970.
    // liq = (60,000 − 6,000/1) / 0.995 = 54,000 / 0.995 = 54,271.356783919597989…
    //     → 54,271.356783919598 (12 dp)
    b.execute(
        &buy(dec!(1), dec!(10)),
        dec!(60000),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    let liq = dec!(54271.356783919598);
    assert_eq!(b.liquidation_price("BTC"), Some(liq));
    assert_eq!(b.cash_usd(), dec!(9970));

    // A bar whose low stays above the liquidation price only marks: close 55,000,
    // upnl = (55,000 − 60,000) × 1 = −5,000; equity 4,970.
    let none = b
        .apply_bar(
            "BTC",
            &bar(dec!(60000), dec!(60500), dec!(54300), dec!(55000)),
            t(5),
        )
        .unwrap();
    assert_eq!(none, None);
    assert_eq!(b.equity_usd(), dec!(4970));

    // A bar whose low reaches it: sell 1 at the liquidation price, marked `liquidation`.
    //    fee      = 54,271.356783919598 × 0.0005 = 27.135678391959799 → 27.13567839
    //    realized = (54,271.356783919598 − 60,000) × 1 = −5,728.643216080402 → −5,728.64321608
    //    (at that price margin + upnl = 6,000 − 5,728.64 = 271.36 = 0.5 % × 54,271.36)
    //    cash     = 9,970 − 5,728.64321608 − 27.13567839 = 4,214.22110553 = equity, flat
    let fill = b
        .apply_bar(
            "BTC",
            &bar(dec!(55000), dec!(55200), dec!(54000), dec!(54500)),
            t(10),
        )
        .unwrap()
        .expect("liquidated");
    assert!(fill.liquidation);
    assert_eq!(fill.id, "paper-2");
    assert_eq!(
        (fill.side, fill.qty, fill.price),
        (OrderSide::Sell, dec!(1), liq)
    );
    assert_eq!(fill.fee_usd, dec!(27.13567839));
    assert_eq!(fill.time, t(10));
    assert_eq!(
        (fill.snapshot_id, fill.client_order_id.clone()),
        (None, None)
    );
    let s = b.snapshot(t(10));
    assert!(s.positions.is_empty());
    assert_eq!(s.realized_pnl_usd, dec!(-5728.64321608));
    assert_eq!(s.fees_paid_usd, dec!(57.13567839));
    assert_eq!(s.equity_usd, dec!(4214.22110553));
    assert_eq!(s.available_margin_usd, dec!(4214.22110553));
    assert_eq!(b.mark("BTC"), Some(dec!(54500)));
    assert_books_balance(&b);
    let fills = b.drain_fills();
    assert_eq!(fills.last(), Some(&fill));
}

#[test]
fn a_short_is_liquidated_by_a_high_or_a_mark_at_its_liquidation_price() {
    let cfg = PaperBrokerConfig {
        slippage_bps: dec!(0),
        ..broker().config().clone()
    };
    // Short 1 BTC at $60,000, 10x: margin 6,000.
    // liq = (60,000 + 6,000) / 1.005 = 65,671.641791044776119… → 65,671.641791044776
    let liq = dec!(65671.641791044776);
    let mut b = PaperBroker::new(cfg.clone()).unwrap();
    b.execute(
        &sell(dec!(1), dec!(10)),
        dec!(60000),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    assert_eq!(b.liquidation_price("BTC"), Some(liq));
    let mut by_mark = b.clone();

    let fill = b
        .apply_bar(
            "BTC",
            &bar(dec!(60000), dec!(66000), dec!(59000), dec!(65000)),
            t(5),
        )
        .unwrap()
        .expect("liquidated by the high");
    assert!(fill.liquidation);
    assert_eq!(
        (fill.side, fill.qty, fill.price),
        (OrderSide::Buy, dec!(1), liq)
    );
    assert!(b.snapshot(t(5)).positions.is_empty());
    assert_books_balance(&b);

    // A mark below the liquidation price keeps the position; one at it liquidates.
    assert_eq!(by_mark.update_mark("BTC", dec!(65600), t(3)).unwrap(), None);
    let fill = by_mark
        .update_mark("BTC", dec!(65671.641791044776), t(4))
        .unwrap()
        .expect("liquidated by the mark");
    assert_eq!(fill.price, liq);
    assert_books_balance(&by_mark);
}

#[test]
fn a_1x_long_has_no_liquidation_price() {
    // (E − E/1) / (1 − m) = 0: a fully funded long cannot be liquidated.
    let mut b = broker();
    b.execute(
        &buy(dec!(0.1), dec!(1)),
        dec!(60000),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    assert_eq!(b.liquidation_price("BTC"), None);
    assert_eq!(b.snapshot(t(0)).positions[0].liquidation_price, None);
}

#[test]
fn adding_at_another_leverage_blends_it() {
    let mut b = PaperBroker::new(PaperBrokerConfig {
        slippage_bps: dec!(0),
        ..broker().config().clone()
    })
    .unwrap();
    // 0.1 at 60,000, 2x: margin 3,000. Then 0.1 at 60,000, 4x: margin 1,500.
    // leverage = entry notional 12,000 / margin 4,500 = 2.666… → 2.67
    b.execute(
        &buy(dec!(0.1), dec!(2)),
        dec!(60000),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    b.execute(
        &buy(dec!(0.1), dec!(4)),
        dec!(60000),
        t(1),
        OrderTag::default(),
    )
    .unwrap();
    let p = b.snapshot(t(1)).positions[0].clone();
    assert_eq!(
        (p.qty, p.margin_usd, p.leverage),
        (dec!(0.2), dec!(4500), dec!(2.67))
    );
}

#[test]
fn refused_orders_change_nothing() {
    let mut b = broker();
    let before = b.clone();
    let cases: Vec<(Order, Decimal, BrokerError)> = vec![
        (
            order(OrderSide::Sell, dec!(0.1), dec!(1), true),
            dec!(60000),
            BrokerError::NothingToReduce {
                symbol: "BTC".into(),
            },
        ),
        (
            buy(dec!(0), dec!(1)),
            dec!(60000),
            BrokerError::NotPositive {
                what: "qty",
                value: dec!(0),
            },
        ),
        (
            buy(dec!(0.1), dec!(1)),
            dec!(-1),
            BrokerError::NotPositive {
                what: "price",
                value: dec!(-1),
            },
        ),
        (
            // 1 / 0.005 = 200x would be liquidated at once.
            buy(dec!(0.001), dec!(200)),
            dec!(60000),
            BrokerError::InvalidLeverage {
                symbol: "BTC".into(),
                leverage: dec!(200),
                max: dec!(200),
            },
        ),
        (
            // 1 BTC at 60,060 and 5x needs 12,012 of margin; 10,000 − fee 30.03 is available.
            buy(dec!(1), dec!(5)),
            dec!(60000),
            BrokerError::InsufficientMargin {
                symbol: "BTC".into(),
                required: dec!(12012),
                available: dec!(9969.97),
            },
        ),
    ];
    for (o, price, want) in cases {
        let err = b.execute(&o, price, t(0), OrderTag::default()).unwrap_err();
        assert_eq!(err, want);
        assert_eq!(b, before, "{err}");
    }

    // Reduce-only on the same side as the position would add to it.
    b.execute(
        &buy(dec!(0.1), dec!(5)),
        dec!(60000),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    let err = b
        .execute(
            &order(OrderSide::Buy, dec!(0.1), dec!(5), true),
            dec!(60000),
            t(1),
            OrderTag::default(),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "reduce-only order on BTC would add to the long position"
    );

    // A bar with its high below its low is refused with what is wrong.
    let err = b
        .apply_bar("BTC", &bar(dec!(1), dec!(1), dec!(2), dec!(1)), t(2))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid bar for BTC at 2026-03-02 12:00:00 UTC: high 1 is below low 2"
    );
}

#[test]
fn config_is_validated() {
    let bad = |f: fn(&mut PaperBrokerConfig)| {
        let mut c = PaperBrokerConfig::new(dec!(10000));
        f(&mut c);
        PaperBroker::new(c).unwrap_err().to_string()
    };
    assert_eq!(
        bad(|c| c.initial_equity_usd = dec!(0)),
        "invalid paper broker config: initial_equity_usd must be positive and at most 1000000000000000000, got 0"
    );
    assert_eq!(
        bad(|c| c.taker_fee_bps = dec!(-1)),
        "invalid paper broker config: taker_fee_bps must be in [0, 10000), got -1"
    );
    assert_eq!(
        bad(|c| c.maintenance_margin_rate = dec!(1)),
        "invalid paper broker config: maintenance_margin_rate must be in (0, 1), got 1"
    );
    let c = PaperBrokerConfig::new(dec!(1000))
        .with_maintenance_for_max_leverage(dec!(40))
        .unwrap();
    assert_eq!(c.maintenance_margin_rate, dec!(0.0125)); // 0.5 / 40
}

#[test]
fn state_round_trips_through_serde_and_resumes_identically() {
    let mut b = broker();
    b.execute(
        &buy(dec!(0.1), dec!(5)),
        dec!(60000),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    b.drain_fills();
    b.execute(
        &sell(dec!(0.04), dec!(5)),
        dec!(61000),
        t(1),
        OrderTag::default(),
    )
    .unwrap();
    b.update_mark("BTC", dec!(61500), t(2)).unwrap();

    let json = serde_json::to_string(&b).unwrap();
    // Amounts serialize without scale noise. Fees: 6,006 × 0.0005 = 3.003 (not "3.0030") plus
    // 0.04 × 60,939 × 0.0005 = 1.21878 → 4.22178.
    assert!(json.contains(r#""fees_paid_usd":"4.22178""#), "{json}");
    let mut restored: PaperBroker = serde_json::from_str(&json).unwrap();
    assert_eq!(restored, b);
    assert_eq!(restored.snapshot(t(2)), b.snapshot(t(2)));

    // Both continue the same way: same fill ids (the counter was persisted), same books, and the
    // undrained fill is still reported after the restart.
    let next = sell(dec!(0.5), dec!(3));
    let a = b
        .execute(&next, dec!(60500), t(3), OrderTag::default())
        .unwrap();
    let r = restored
        .execute(&next, dec!(60500), t(3), OrderTag::default())
        .unwrap();
    assert_eq!(a, r);
    assert_eq!(a.id, "paper-3");
    assert_eq!(restored.drain_fills(), b.drain_fills());
    assert_eq!(restored, b);
}

#[test]
fn a_corrupt_state_is_refused_on_restore() {
    let mut b = broker();
    b.execute(
        &buy(dec!(0.1), dec!(5)),
        dec!(60000),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    let mut json: serde_json::Value = serde_json::to_value(&b).unwrap();
    json["cash_usd"] = serde_json::Value::String("20000".into());
    let err = serde_json::from_value::<PaperBroker>(json).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid paper broker state: cash_usd 20000 is not initial 10000 + realized 0 − fees 3.003 = 9996.997"
    );

    let mut json: serde_json::Value = serde_json::to_value(&b).unwrap();
    json["positions"]["BTC"]["qty"] = serde_json::Value::String("-0.1".into());
    let err = serde_json::from_value::<PaperBroker>(json).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid paper broker state: position BTC needs qty"),
        "{err}"
    );
}

/// Per-asset margin (#16 item 10): a symbol the exchange publishes a maximum leverage for is
/// margined at `0.5 / max` and refused above it; any other symbol keeps the account's rate.
#[test]
fn an_asset_with_a_published_max_leverage_is_margined_as_the_exchange_margins_it() {
    let mut config = PaperBrokerConfig::new(dec!(10000));
    config.taker_fee_bps = dec!(0);
    config.slippage_bps = dec!(0);
    config.maintenance_margin_rate = dec!(0.25); // the skill's: 0.5 / maxLeverage 2
    config.exchange_max_leverage = [("BTC".to_owned(), dec!(50))].into();
    assert_eq!(config.maintenance_margin_rate_for("BTC"), dec!(0.01)); // 0.5 / 50
    assert_eq!(config.maintenance_margin_rate_for("ETH"), dec!(0.25));
    let mut b = PaperBroker::new(config).unwrap();

    // 0.1 BTC long at 60,000 and 10x: margin 6,000 × 0.1 … = 600.
    // Liquidation: P = (E − M/q) / (1 − m) = (60,000 − 600/0.1) / (1 − 0.01)
    //            = 54,000 / 0.99 = 54,545.4545… (rounded to the price grid).
    b.execute(
        &order(OrderSide::Buy, dec!(0.1), dec!(10), false),
        dec!(60000),
        t(0),
        OrderTag::default(),
    )
    .unwrap();
    assert_eq!(b.liquidation_price("BTC"), Some(dec!(54545.454545454545)));
    // The same position under the account's 25 %: (60,000 − 6,000) / 0.75 = 72,000, above the
    // entry: a 10x long could never be held; the order would be refused as liquidated at once
    // (1 / 0.25 = 4x).
    let mut eth = order(OrderSide::Buy, dec!(0.1), dec!(10), false);
    eth.symbol = "ETH".into();
    assert_eq!(
        b.execute(&eth, dec!(3000), t(1), OrderTag::default())
            .unwrap_err(),
        BrokerError::InvalidLeverage {
            symbol: "ETH".into(),
            leverage: dec!(10),
            max: dec!(4)
        }
    );
    // 50x is the exchange's maximum on BTC: allowed; 51x is refused as the exchange refuses it.
    b.execute(
        &order(OrderSide::Buy, dec!(0.001), dec!(50), false),
        dec!(60000),
        t(2),
        OrderTag::default(),
    )
    .unwrap();
    assert_eq!(
        b.execute(
            &order(OrderSide::Buy, dec!(0.001), dec!(51), false),
            dec!(60000),
            t(3),
            OrderTag::default()
        )
        .unwrap_err(),
        BrokerError::AboveExchangeMaxLeverage {
            symbol: "BTC".into(),
            leverage: dec!(51),
            max: dec!(50)
        }
    );
}
