//! The backtest input the backtest tests and the `sim` bench share: the tick tests' example (the
//! shipped EURUSD hourly bars with their higher timeframes, the example skill), whose model and
//! reflection model are the offline built-ins.

#![allow(dead_code)] // each test binary uses a different subset

use agent_runtime::LanguageModel;
use backtest::{BacktestError, BacktestInput, BacktestResult, RunOptions};
use db::{OutcomeStore, TickStore};
use rust_decimal::Decimal;
use types::Bar;

#[path = "../../../../tick/tests/it/common/mod.rs"]
mod example;

#[allow(unused_imports)] // the `sim` bench uses `eurusd` only
pub(crate) use example::{eurusd, trade_ctx};

/// The example skill over `bars`, $10,000 of paper equity at these fees and slippage, its
/// reflection model the offline one it names; [`BacktestInput::for_test`]'s ids (user 1,
/// deployment 2, skill 3).
pub(crate) fn eurusd_input(bars: &[Bar], fee_bps: Decimal, slippage_bps: Decimal) -> BacktestInput {
    let example = example::eurusd_example(bars, fee_bps, slippage_bps);
    BacktestInput::for_test(example.deployment.skill, example.market)
        .with_broker(example.broker)
        .with_offline_reflection()
}

/// [`backtest::run`] with the default options, its last write finished: the store holds the
/// whole run.
pub(crate) async fn run_stored<S>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
) -> Result<BacktestResult, BacktestError>
where
    S: TickStore + OutcomeStore + Clone + Send + Sync + 'static,
{
    run_stored_with(input, model, store, RunOptions::default()).await
}

/// [`backtest::run`] with `options`, its last write finished.
pub(crate) async fn run_stored_with<S>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
    options: RunOptions<'_>,
) -> Result<BacktestResult, BacktestError>
where
    S: TickStore + OutcomeStore + Clone + Send + Sync + 'static,
{
    backtest::run(input, model, store, options)
        .await?
        .stored()
        .await
}
