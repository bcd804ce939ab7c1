//! What the tick tests and the `restore` bench share (and the `backtest` crate's tests, which
//! include this file): the shipped EURUSD hourly bars, the example skill's deployment over them
//! (its offline model) and that deployment's rows in a store.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use execution_engine::PaperBrokerConfig;
use rust_decimal::Decimal;
use tick::TickDeployment;
use tools::{Preloaded, RunMode, ToolContext};
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

/// The example skill's deployment over some EURUSD bars, and its paper account.
pub(crate) struct Example {
    /// Fixed ids (user 1, deployment 2, skill 3), version 1, no reflection model.
    pub(crate) deployment: TickDeployment,
    /// The bars at 1h and at the skill's higher timeframes.
    pub(crate) market: Arc<Preloaded>,
    /// $10,000 of paper equity at the fees and slippage asked for.
    pub(crate) broker: PaperBrokerConfig,
}

/// The example skill over `bars` (and their higher timeframes, resampled), $10,000 of paper
/// equity at these fees and slippage.
pub(crate) fn eurusd_example(bars: &[Bar], fee_bps: Decimal, slippage_bps: Decimal) -> Example {
    let skill = skill_schema::load_skill(&repo("examples/skills/eurusd-sma-cross.yaml"))
        .expect("skill")
        .skill;
    let mut market = Preloaded::new().with_bars("EURUSD", Interval::H1, bars.to_vec());
    for h in skill.context.effective_higher_timeframes() {
        market.insert_bars("EURUSD", h, market_data::resample(bars, h));
    }
    let mut broker = PaperBrokerConfig::new(Decimal::from(10_000));
    broker.taker_fee_bps = fee_bps;
    broker.slippage_bps = slippage_bps;
    Example {
        deployment: TickDeployment {
            user_id: Uuid::from_u128(1),
            deployment_id: Uuid::from_u128(2),
            skill_id: Uuid::from_u128(3),
            skill_version: 1,
            skill: Arc::new(skill),
            reflector: Err("no reflection in these tests".into()),
        },
        market: Arc::new(market),
        broker,
    }
}

/// A trading tick's context at `at` for `d`'s symbols over `market` (market data and portfolio
/// view both).
pub(crate) fn trade_ctx(
    d: &TickDeployment,
    market: &Arc<Preloaded>,
    at: DateTime<Utc>,
) -> ToolContext {
    ToolContext::new(
        at,
        RunMode::Trade,
        d.skill.context.symbols.clone(),
        market.clone(),
        market.clone(),
    )
}

/// Stores `d`'s user, skill, skill version and an active paper deployment under its ids (the
/// `db` test fixtures' rows otherwise): what a tick needs stored before it records.
pub(crate) async fn register<S: db::RegistryStore>(store: &S, d: &TickDeployment) {
    use db::test_support::{sample_deployment, sample_skill, sample_skill_version, sample_user};
    let user = db::User {
        id: d.user_id,
        ..sample_user()
    };
    let skill = db::SkillRecord {
        id: d.skill_id,
        ..sample_skill(d.user_id)
    };
    let deployment = db::Deployment {
        id: d.deployment_id,
        ..sample_deployment(d.user_id, d.skill_id, d.skill_version)
    };
    store.upsert_user(&user).await.expect("user");
    store.create_skill(&skill).await.expect("skill");
    store
        .add_skill_version(&sample_skill_version(d.skill_id, d.skill_version))
        .await
        .expect("skill version");
    store
        .create_deployment(&deployment)
        .await
        .expect("deployment");
}
