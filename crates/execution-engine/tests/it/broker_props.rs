//! Invariants of the paper broker under arbitrary sequences of orders, marks and bars.

use chrono::{DateTime, Duration, TimeZone, Utc};
use execution_engine::{Order, OrderIntent, OrderTag, PaperBroker, PaperBrokerConfig};
use proptest::prelude::*;
use rust_decimal::Decimal;
use types::{Bar, OrderSide};

#[derive(Debug, Clone)]
enum Op {
    /// Market order: buy?, qty in thousandths, leverage, reduce-only?
    Trade {
        symbol: usize,
        buy: bool,
        qty_milli: u32,
        leverage: u32,
        reduce_only: bool,
    },
    /// Move the price by `bps` basis points and mark.
    Mark { symbol: usize, bps: i32 },
    /// A bar around the current price: low `down` bps below, high `up` bps above, close `close`.
    Bar {
        symbol: usize,
        down: u32,
        up: u32,
        close: i32,
    },
}

const SYMBOLS: [&str; 2] = ["BTC", "ETH"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2usize, any::<bool>(), 1..2_000u32, 1..30u32, any::<bool>()).prop_map(
            |(symbol, buy, qty_milli, leverage, reduce_only)| Op::Trade {
                symbol,
                buy,
                qty_milli,
                leverage,
                reduce_only,
            }
        ),
        2 => (0..2usize, -800..800i32).prop_map(|(symbol, bps)| Op::Mark { symbol, bps }),
        2 => (0..2usize, 0..1_500u32, 0..1_500u32, -1_000..1_000i32).prop_map(
            |(symbol, down, up, close)| Op::Bar { symbol, down, up, close }
        ),
    ]
}

fn bps(price: Decimal, bps: i32) -> Decimal {
    (price * (Decimal::from(10_000 + bps)) / Decimal::from(10_000)).round_dp(6)
}

fn t(i: usize) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
        + Duration::minutes(i64::try_from(i).unwrap_or(0))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn books_always_balance_and_quantities_stay_positive(
        ops in proptest::collection::vec(op(), 1..60),
        fee in 0..20u32,
        slip in 0..30u32,
    ) {
        let initial = Decimal::from(10_000);
        let mut b = PaperBroker::new(PaperBrokerConfig {
            initial_equity_usd: initial,
            taker_fee_bps: Decimal::new(i64::from(fee), 1),
            slippage_bps: Decimal::from(slip),
            maintenance_margin_rate: Decimal::new(5, 3),
            exchange_max_leverage: Default::default(),
        })
        .unwrap();
        let mut prices = [Decimal::from(60_000), Decimal::from(3_000)];
        let mut fee_sum = Decimal::ZERO;

        for (i, op) in ops.into_iter().enumerate() {
            let at = t(i);
            match op {
                Op::Trade { symbol, buy, qty_milli, leverage, reduce_only } => {
                    let qty = Decimal::new(i64::from(qty_milli), 3)
                        / if symbol == 0 { Decimal::from(10) } else { Decimal::ONE };
                    let order = Order {
                        symbol: SYMBOLS[symbol].into(),
                        side: if buy { OrderSide::Buy } else { OrderSide::Sell },
                        qty,
                        leverage: Decimal::from(leverage),
                        reduce_only,
                        intent: OrderIntent::Open,
                        reference_price: prices[symbol],
                        notional_usd: qty * prices[symbol],
                        stop: None,
                        target: None,
                    };
                    let before = b.clone();
                    if b.execute(&order, prices[symbol], at, OrderTag::default()).is_err() {
                        prop_assert_eq!(&b, &before, "a refused order changes nothing");
                    }
                }
                Op::Mark { symbol, bps: m } => {
                    prices[symbol] = bps(prices[symbol], m);
                    b.update_mark(SYMBOLS[symbol], prices[symbol], at).unwrap();
                }
                Op::Bar { symbol, down, up, close } => {
                    let p = prices[symbol];
                    let close = bps(p, close);
                    let low = bps(p, -i32::try_from(down).unwrap()).min(close);
                    let high = bps(p, i32::try_from(up).unwrap()).max(close);
                    let bar = Bar { time: at, open: p, high, low, close, volume: Decimal::ONE };
                    b.apply_bar(SYMBOLS[symbol], &bar, at).unwrap();
                    prices[symbol] = close;
                }
            }

            let s = b.snapshot(at);
            // The snapshot's equity is `equity_usd()`, digit for digit (it is stored and shown).
            prop_assert_eq!(s.equity_usd.to_string(), b.equity_usd().to_string());
            let unrealized: Decimal = s.positions.iter().map(|p| p.unrealized_pnl_usd).sum();
            // equity == initial + realized − fees + unrealized, exactly.
            prop_assert_eq!(
                s.equity_usd,
                initial + s.realized_pnl_usd - s.fees_paid_usd + unrealized
            );
            for p in &s.positions {
                prop_assert!(p.qty > Decimal::ZERO, "qty {} of {}", p.qty, p.symbol);
                prop_assert!(p.margin_usd > Decimal::ZERO);
                // Nothing still open may sit beyond its liquidation price at its mark.
                if let Some(liq) = p.liquidation_price {
                    match p.side {
                        types::Side::Long => prop_assert!(p.mark_price > liq),
                        types::Side::Short => prop_assert!(p.mark_price < liq),
                    }
                }
            }
            let mut symbols: Vec<&str> = s.positions.iter().map(|p| p.symbol.as_str()).collect();
            symbols.sort_unstable();
            prop_assert_eq!(
                symbols,
                s.positions.iter().map(|p| p.symbol.as_str()).collect::<Vec<_>>(),
                "positions are ordered by symbol"
            );
            // Every fee the broker booked is on a reported fill.
            for f in b.drain_fills() {
                prop_assert!(f.qty > Decimal::ZERO);
                fee_sum += f.fee_usd;
            }
            prop_assert_eq!(fee_sum, s.fees_paid_usd);
        }
    }
}
