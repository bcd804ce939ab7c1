//! One window convention for every reader of the outcome memory: "the last N days at T" are the
//! ticks in [T − N d, T). The `<trading_memory>` block, a recall tool and `memory-stats` count
//! the same outcomes at the same T — an outcome exactly at T − N d in, one exactly at T out — on
//! SQLite and on PostgreSQL.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use db::test_support::{at, pg::TestDatabase, record_sample_outcome, seed};
use db::{MemoryScope, Store};
use serde_json::{Value, json};
use skill_schema::ToolSpec;
use tick::StoreMemory;
use tick::memory_cmd::{StatsRequest, memory_stats};
use tools::{Preloaded, RunMode, ToolContext, build_tools};

const SKILL: &str = include_str!("../../../../examples/skills/eurusd-sma-cross.yaml");

/// The block's window (`outcomes::block::STATS_DAYS`), used by all three readers.
const DAYS: i64 = outcomes::block::STATS_DAYS;

fn ctx(store: &Store, deployment: types::Uuid, now: DateTime<Utc>) -> ToolContext {
    let empty = Arc::new(Preloaded::new());
    ToolContext::new(
        now,
        RunMode::Trade,
        vec!["BTC".into()],
        empty.clone(),
        empty,
    )
    .with_trade_memory(Arc::new(StoreMemory::new(
        store.clone(),
        MemoryScope::Deployment(deployment),
    )))
}

/// How many outcomes the block counts in its stats window at `now`.
async fn block_count(store: &Store, deployment: types::Uuid, now: DateTime<Utc>) -> u64 {
    let mut skill = skill_schema::parse_skill(SKILL, skill_schema::Format::Yaml)
        .expect("skill")
        .skill;
    skill.context.memory.enabled = true;
    skill.context.memory.trading_memory = true;
    let block = agent_runtime::trading_memory_block(&skill, &ctx(store, deployment, now), &[None])
        .await
        .expect("block")
        .expect("on");
    // Every sample outcome is unscored: the stats line counts them as pending.
    let (_, rest) = block
        .split_once("No graded outcomes yet (")
        .unwrap_or_else(|| panic!("a stats line of pending outcomes: {block}"));
    rest.split_once(" pending")
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("a count: {block}"))
}

/// How many outcomes `recall_recent_trades` counts over the last `DAYS` days at `now`.
async fn recall_count(store: &Store, deployment: types::Uuid, now: DateTime<Utc>) -> u64 {
    let name = "recall_recent_trades";
    let spec = ToolSpec {
        built_in: vec!["propose_order".into(), name.into()],
        ..ToolSpec::default()
    };
    let v: Value = build_tools(&spec, &ctx(store, deployment, now))
        .expect("tools")
        .call_async(name, json!({"days": DAYS}))
        .await
        .expect("recall");
    v["stats"]["outcomes"].as_u64().expect("a count")
}

/// How many outcomes `memory-stats` counts over the last `DAYS` days at `at` (`None`: its
/// default end).
async fn stats_count(store: &Store, deployment: types::Uuid, at: Option<DateTime<Utc>>) -> u64 {
    let request = StatsRequest {
        deployment: Some(deployment),
        symbol: "BTC".into(),
        days: u32::try_from(DAYS).expect("days"),
        at,
        json: true,
    };
    let out = memory_stats(store, &request).await.expect("memory-stats");
    let v: Value = serde_json::from_str(&out).expect("json");
    v["count"].as_u64().expect("a count")
}

async fn every_reader_counts_the_same_half_open_window(store: &Store) {
    let fx = seed(store).await.expect("seed");
    let d = fx.deployment.id;
    let t = at(40 * 24 * 60);
    let start = t - Duration::days(DAYS);
    let us = Duration::microseconds(1);
    // Just before the window, its first instant (in) and inside it.
    for tick in [start - us, start, t - Duration::hours(1)] {
        record_sample_outcome(store, d, tick)
            .await
            .expect("outcome");
    }
    all_count(store, d, t, 2).await;
    // An outcome exactly at T changes none of the counts at T.
    record_sample_outcome(store, d, t).await.expect("outcome");
    all_count(store, d, t, 2).await;
    // One microsecond later the outcome at T is in and the one at T − N d out: all agree.
    all_count(store, d, t + us, 2).await;
    // memory-stats without --at ends just after the latest outcome: the same window.
    assert_eq!(stats_count(store, d, None).await, 2);
    // One microsecond earlier the outcome just before the window is in, the one at T − 1 h too.
    all_count(store, d, t - us, 3).await;
}

/// The block, `recall_recent_trades` and `memory-stats` all count `n` outcomes at `now`.
async fn all_count(store: &Store, d: types::Uuid, now: DateTime<Utc>, n: u64) {
    assert_eq!(block_count(store, d, now).await, n, "the block at {now}");
    assert_eq!(
        recall_count(store, d, now).await,
        n,
        "recall_recent_trades at {now}"
    );
    assert_eq!(
        stats_count(store, d, Some(now)).await,
        n,
        "memory-stats --at {now}"
    );
}

#[tokio::test]
async fn sqlite_every_reader_counts_the_same_half_open_window() {
    let store = db::connect("sqlite::memory:").await.expect("store");
    every_reader_counts_the_same_half_open_window(&store).await;
}

#[tokio::test]
async fn postgres_every_reader_counts_the_same_half_open_window() {
    let tdb = TestDatabase::create("tick_test_", 4).await;
    let store = db::connect(&tdb.url()).await.expect("store");
    every_reader_counts_the_same_half_open_window(&store).await;
}
