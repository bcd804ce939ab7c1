//! Proptest over random windows of the EURUSD bars and random costs: every fill is the close of
//! the bar that closed at its tick, moved against the taker by exactly the slippage, and pays
//! exactly the fee; equity always equals initial + net realized + unrealized.

use std::path::PathBuf;
use std::sync::Arc;

use agent_runtime::{ModelError, builtin_model};
use execution_engine::{PRICE_DP, PaperBrokerConfig, USD_DP};
use proptest::prelude::*;
use reflection::resolve_reflection_model;
use rust_decimal::{Decimal, RoundingStrategy};
use tick::Deployment;
use tick::backtest::{BacktestInput, Summary, register, run_backtest};
use tools::Preloaded;
use types::{Bar, Interval, OrderSide, Uuid};

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn all_bars() -> Vec<Bar> {
    market_data::load_bars(&repo("examples/data/EURUSD.csv")).expect("bars")
}

fn backtest(bars: &[Bar], fee: Decimal, slip: Decimal) -> tick::backtest::BacktestResult {
    let skill = skill_schema::load_skill(&repo("examples/skills/eurusd-sma-cross.yaml"))
        .expect("skill")
        .skill;
    let mut market = Preloaded::new().with_bars("EURUSD", Interval::H1, bars.to_vec());
    for h in skill.context.effective_higher_timeframes() {
        market.insert_bars("EURUSD", h, market_data::resample(bars, h));
    }
    let reflector = resolve_reflection_model(&skill.context.memory.reflection.model, |id| {
        builtin_model(id, &skill).ok_or_else(|| ModelError::UnknownModel(id.to_owned()))
    })
    .map_err(|e| e.to_string());
    let model = builtin_model(&skill.model, &skill).expect("model");
    let mut broker = PaperBrokerConfig::new(Decimal::from(10_000));
    broker.taker_fee_bps = fee;
    broker.slippage_bps = slip;
    let input = BacktestInput {
        deployment: Deployment {
            user_id: Uuid::from_u128(1),
            deployment_id: Uuid::from_u128(2),
            skill_id: Uuid::from_u128(3),
            skill_version: 1,
            skill: Arc::new(skill),
            reflector,
        },
        market: Arc::new(market),
        news: None,
        events: None,
        from: None,
        to: None,
        broker,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let store = db::connect("sqlite::memory:").await.expect("store");
        register(&store, &input, serde_json::json!({}), bars[0].time)
            .await
            .expect("register");
        run_backtest(&input, model.as_ref(), &store, |_, _| {})
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
