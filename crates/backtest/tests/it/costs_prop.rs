//! Proptest over random windows of the EURUSD bars and random costs: every fill is the close of
//! the bar that closed at its tick, moved against the taker by exactly the slippage, and pays
//! exactly the fee; equity always equals initial + net realized + unrealized.

use crate::common;

use agent_runtime::builtin_model;
use backtest::{Summary, register};
use execution_engine::{PRICE_DP, USD_DP};
use proptest::prelude::*;
use rust_decimal::{Decimal, RoundingStrategy};
use types::{Bar, Interval, OrderSide};

fn all_bars() -> Vec<Bar> {
    common::eurusd(usize::MAX)
}

fn backtest(bars: &[Bar], fee: Decimal, slip: Decimal) -> backtest::BacktestResult {
    let input = common::eurusd_input(bars, fee, slip);
    let skill = &input.deployment.skill;
    let model = builtin_model(&skill.model, skill).expect("model");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let store = db::connect("sqlite::memory:").await.expect("store");
        register(&store, &input, serde_json::json!({}), bars[0].time)
            .await
            .expect("register");
        common::run_stored(&input, model.as_ref(), &store)
            .await
            .expect("backtest")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn fills_are_the_close_moved_by_slippage_and_pay_the_fee(
        start in 0_usize..4_500,
        len in 60_usize..160,
        fee_tenths in 0_i64..100,
        slip_tenths in 0_i64..50,
    ) {
        let bars: Vec<Bar> = all_bars().into_iter().skip(start).take(len).collect();
        let fee = Decimal::new(fee_tenths, 1);
        let slip = Decimal::new(slip_tenths, 1);
        let r = backtest(&bars, fee, slip);
        let bps = Decimal::from(10_000);
        for f in &r.fills {
            let bar = bars.iter().find(|b| b.close_time(Interval::H1) == f.time).expect("bar");
            // buy: close × (1 + slip / 10,000); sell: close × (1 − slip / 10,000)
            let factor = match f.side {
                OrderSide::Buy => Decimal::ONE + slip / bps,
                OrderSide::Sell => Decimal::ONE - slip / bps,
            };
            let price = (bar.close * factor)
                .round_dp_with_strategy(PRICE_DP, RoundingStrategy::MidpointNearestEven);
            prop_assert_eq!(f.price.normalize(), price.normalize());
            // fee = qty × price × fee / 10,000, booked at 8 decimals
            let fee_usd = (f.qty * f.price * fee / bps)
                .round_dp_with_strategy(USD_DP, RoundingStrategy::MidpointNearestEven);
            prop_assert_eq!(f.fee_usd.normalize(), fee_usd.normalize());
        }
        let s = Summary::of(&r);
        prop_assert_eq!(
            s.final_equity_usd.round_dp(6),
            (s.initial_equity_usd + s.pnl.net_usd + s.unrealized_pnl_usd).round_dp(6)
        );
    }
}
