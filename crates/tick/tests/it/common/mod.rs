//! The backtest input the tick tests and the `sim` bench share: the shipped EURUSD hourly bars
//! (with their higher timeframes resampled) and the example skill, whose model and reflection
//! model are the offline built-ins.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::sync::Arc;

use agent_runtime::{ModelError, builtin_model};
use chrono::{DateTime, Utc};
use execution_engine::PaperBrokerConfig;
use reflection::resolve_reflection_model;
use rust_decimal::Decimal;
use tick::TickDeployment;
use tick::backtest::BacktestInput;
use tools::Preloaded;
use tools::{RunMode, ToolContext};
use types::{Bar, Interval, Uuid};

/// A path relative to the repository root.
pub(crate) fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// The first `n` bars of `examples/data/EURUSD.csv` (all of them with `usize::MAX`).
pub(crate) fn eurusd(n: usize) -> Vec<Bar> {
    let mut bars = market_data::load_bars(&repo("examples/data/EURUSD.csv")).expect("bars");
    bars.truncate(n);
    bars
}

/// The example skill over `bars`, $10,000 of paper equity at these fees and slippage; fixed ids
/// (user 1, deployment 2, skill 3).
pub(crate) fn eurusd_input(bars: &[Bar], fee_bps: Decimal, slippage_bps: Decimal) -> BacktestInput {
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
    let mut broker = PaperBrokerConfig::new(Decimal::from(10_000));
    broker.taker_fee_bps = fee_bps;
    broker.slippage_bps = slippage_bps;
    BacktestInput {
        deployment: TickDeployment {
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
        derivatives: None,
        from: None,
        to: None,
        broker,
        external_tools: std::sync::Arc::new([]),
        blind: None,
    }
}

/// A trading tick's context at `at` over `input`'s bars (market data and portfolio view both
/// the preloaded bars), for the skill's symbols.
pub(crate) fn trade_ctx(input: &BacktestInput, at: DateTime<Utc>) -> ToolContext {
    ToolContext::new(
        at,
        RunMode::Trade,
        input.deployment.skill.context.symbols.clone(),
        input.market.clone(),
        input.market.clone(),
    )
}
