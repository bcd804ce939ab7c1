//! Point in time of every reader of the outcome memory over a real store: the
//! `<trading_memory>` block each tick of a backtest showed is what the final store says as of
//! that tick, and each recall tool at a time T — run against the store after the whole backtest,
//! with outcomes scored after T in it — sees only what was known at T.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;

use agent_runtime::builtin_model;
use agent_runtime::context::closed_bars_window;
use backtest::{BacktestInput, register};
use chrono::{DateTime, Duration, Utc};
use db::{AnnotationTarget, MemoryScope, NewAnnotation, OutcomeStore, SqliteStore, TickStore};
use outcomes::TradeOutcome;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use skill_schema::ToolSpec;
use tick::StoreMemory;
use tools::{RECALL_TOOLS, ToolContext, build_tools};
use types::{Interval, classify_regime};
use uuid::Uuid;

/// Up to 2017-06-28 08:00 (as `outcome_memory.rs`): a few hundred graded outcomes.
const BARS: usize = 1199;

/// The example backtest with the block on, recalling from its own store.
async fn backtest(store: &SqliteStore) -> BacktestInput {
    let bars = common::eurusd(BARS);
    let mut input = common::eurusd_input(&bars, Decimal::ZERO, Decimal::ZERO);
    let mut skill = (*input.deployment.skill).clone();
    skill.context.memory.trading_memory = true;
    input.deployment.skill = Arc::new(skill);
    let first = bars[0].close_time(Interval::H1);
    register(store, &input, json!({"name": "eurusd"}), first)
        .await
        .expect("register");
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    common::run_stored(&input, model.as_ref(), store)
        .await
        .expect("backtest");
    input
}

fn ctx_at(input: &BacktestInput, store: &SqliteStore, at: DateTime<Utc>) -> ToolContext {
    common::trade_ctx(&input.deployment, &input.market, at).with_trade_memory(Arc::new(
        StoreMemory::new(
            store.clone(),
            MemoryScope::Deployment(input.deployment.deployment_id),
        ),
    ))
}

fn block_of(context: &str) -> &str {
    let start = context
        .find("<trading_memory>")
        .expect("the block is shown");
    let end =
        context.find("</trading_memory>").expect("the block ends") + "</trading_memory>".len();
    &context[start..end]
}

#[tokio::test]
async fn every_ticks_block_is_the_final_store_as_of_that_tick() {
    let store = SqliteStore::connect("sqlite::memory:")
        .await
        .expect("store");
    let input = backtest(&store).await;
    let skill = input.deployment.skill.as_ref();
    let mut snapshots = store
        .list_snapshots(input.deployment.deployment_id, 100_000)
        .await
        .expect("snapshots");
    snapshots.sort_by_key(|s| s.tick_at);
    assert_eq!(snapshots.len(), BARS);
    let (mut graded_rows, mut pending_rows) = (0, 0);
    // Every 7th tick (a week of hours and more, every hour of the day in turn).
    for snap in snapshots.iter().step_by(7) {
        let shown = block_of(&snap.context);
        let ctx = ctx_at(&input, &store, snap.tick_at);
        let window = closed_bars_window(
            &ctx,
            "EURUSD",
            Interval::H1,
            skill.context.bars_lookback as usize,
        )
        .expect("bars");
        let regime = (!window.bars.is_empty()).then(|| classify_regime(&window.bars));
        let again = agent_runtime::trading_memory_block(skill, &ctx, &[regime])
            .await
            .expect("block")
            .expect("on");
        assert_eq!(shown, again.trim_end(), "the block of {}", snap.tick_at);
        let table = shown.lines().filter(|l| l.starts_with("| 20"));
        for row in table {
            if row.contains("| pending |") {
                pending_rows += 1;
            } else {
                graded_rows += 1;
            }
        }
    }
    // Not vacuous: blocks showed graded outcomes and outcomes still waiting for their grade.
    assert!(
        graded_rows > 100 && pending_rows > 20,
        "{graded_rows} graded, {pending_rows} pending"
    );
}

async fn call(ctx: &ToolContext, name: &str, args: Value) -> Value {
    let spec = ToolSpec {
        built_in: vec!["propose_order".into(), name.into()],
        ..ToolSpec::default()
    };
    build_tools(&spec, ctx)
        .expect("tools")
        .call_async(name, args)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The short ids (first 8 hex digits) of a result's rows.
fn ids(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|o| {
            o.as_str()
                .expect("a row")
                .split(" | ")
                .next()
                .expect("id")
                .to_owned()
        })
        .collect()
}

fn short(id: Uuid) -> String {
    id.simple().to_string()[..tools::SHORT_ID_CHARS].to_owned()
}

#[tokio::test]
async fn each_recall_tool_at_t_sees_only_what_was_known_at_t() {
    let store = SqliteStore::connect("sqlite::memory:")
        .await
        .expect("store");
    let input = backtest(&store).await;
    let d = input.deployment.deployment_id;
    let mut all: Vec<TradeOutcome> = store.outcomes(d, 1000).await.expect("outcomes");
    all.sort_by_key(|o| o.tick_at);
    assert!(all.len() > 30, "{} outcomes", all.len());
    // T: 12 hours after an outcome in the middle, so that it is decided but not graded at T
    // (its grade came 24h after it), while the store now holds its grade.
    let late = all[all.len() / 2].clone();
    let t = late.tick_at + Duration::hours(12);
    assert!(late.score.scored_at.is_some_and(|s| s > t));
    let known = |o: &&TradeOutcome| o.tick_at < t;
    let graded_by_t = |o: &&TradeOutcome| known(o) && o.score.scored_at.is_some_and(|s| s <= t);
    let ctx = ctx_at(&input, &store, t);

    let history = call(
        &ctx,
        "recall_symbol_history",
        json!({"symbol": "EURUSD", "limit": 50}),
    )
    .await;
    let listed = ids(&history["outcomes"]);
    // The newest rows that fit the ceiling of a 50-row answer; the rest counted.
    let shown = listed.len();
    let read = all.iter().filter(known).count().min(50);
    assert_eq!(history["left_out"], read - shown, "{history}");
    let expected: BTreeSet<String> = all
        .iter()
        .filter(known)
        .rev()
        .take(shown)
        .map(|o| short(o.id))
        .collect();
    assert_eq!(listed, expected);
    let row = history["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .find(|o| o.starts_with(&short(late.id)))
        .expect("the late outcome is listed");
    // pnl_4h, pnl_24h, grade: the 24h PnL and the grade are not known at T.
    assert!(row.contains(" | - | pending | "), "{row}");
    let last_50: Vec<&TradeOutcome> = all.iter().filter(known).rev().take(50).collect();
    assert_eq!(
        history["stats"]["graded"],
        last_50.iter().copied().filter(graded_by_t).count()
    );

    let recent = call(&ctx, "recall_recent_trades", json!({"days": 7})).await;
    let week: Vec<&TradeOutcome> = all
        .iter()
        .filter(known)
        .filter(|o| o.tick_at >= t - Duration::days(7))
        .collect();
    assert_eq!(recent["stats"]["outcomes"], week.len());
    assert_eq!(
        recent["stats"]["graded"],
        week.iter().copied().filter(graded_by_t).count()
    );

    let graded_at_t = all.iter().filter(graded_by_t).count();
    let accuracy = call(
        &ctx,
        "recall_signal_accuracy",
        json!({"confidence_min": 0, "confidence_max": 100}),
    )
    .await;
    assert_eq!(
        accuracy["all_signals"]["outcomes"],
        all.iter().filter(known).count()
    );
    assert_eq!(accuracy["all_signals"]["graded"], graded_at_t);

    let similar = call(&ctx, "recall_similar_setups", json!({})).await;
    assert_eq!(similar["matches"], all.iter().filter(known).count());
    assert_eq!(similar["stats"]["graded"], graded_at_t);

    let condition = late.market_condition;
    let worked = call(
        &ctx,
        "recall_what_worked",
        json!({"market_condition": condition.as_str()}),
    )
    .await;
    assert_eq!(
        worked["overall"]["graded"],
        all.iter()
            .filter(graded_by_t)
            .filter(|o| o.market_condition == condition)
            .count()
    );

    // Search: narratives exist once graded; at T only those graded by T are found.
    let found = call(
        &ctx,
        "search_trade_memory",
        json!({"query": "EURUSD grade", "limit": 20}),
    )
    .await;
    let hits = found["hits"].as_array().expect("hits");
    assert!(!hits.is_empty());
    let graded_ids: BTreeSet<String> = all
        .iter()
        .filter(graded_by_t)
        .map(|o| short(o.id))
        .collect();
    for h in hits {
        assert_eq!(h["kind"], "outcome");
        assert!(graded_ids.contains(h["id"].as_str().unwrap()), "{h}");
    }
    let graded_count = graded_ids.len();
    assert!(
        found["matched"]
            .as_u64()
            .is_some_and(|m| m as usize <= graded_count)
    );
    // An annotation written now (after every backtest time) is invisible at T and found later.
    store
        .annotate(&NewAnnotation {
            id: Uuid::from_u128(77),
            target: AnnotationTarget::Outcome(late.id),
            annotation: "kangaroo reversal after the central bank".into(),
            tags: vec!["news".into()],
            created_at: Utc::now(),
        })
        .await
        .expect("annotate");
    let at_t = call(&ctx, "search_trade_memory", json!({"query": "kangaroo"})).await;
    assert_eq!(at_t["hits"], json!([]));
    let later = ctx_at(&input, &store, Utc::now() + Duration::minutes(1));
    let found = call(&later, "search_trade_memory", json!({"query": "kangaroos"})).await;
    assert_eq!(found["hits"][0]["kind"], "annotation");
    assert_eq!(found["hits"][0]["outcome"], short(late.id));
    assert_eq!(RECALL_TOOLS.len(), 6, "every recall tool is checked above");
}

/// The six recall tools at one tick of the README's example backtest, each called once with the
/// arguments a model writes: every result within its token ceiling (o200k_base), the six
/// together under 3,000 tokens, and asking for more rows stays within the larger ceiling.
#[tokio::test]
async fn the_six_recall_results_of_a_tick_fit_their_token_ceilings() {
    let store = SqliteStore::connect("sqlite::memory:")
        .await
        .expect("store");
    let input = backtest(&store).await;
    let d = input.deployment.deployment_id;
    let all: Vec<TradeOutcome> = store.outcomes(d, 1000).await.expect("outcomes");
    let t = all.iter().map(|o| o.tick_at).max().expect("outcomes");
    let ctx = ctx_at(&input, &store, t);
    let calls = [
        ("recall_symbol_history", json!({"symbol": "EURUSD"})),
        ("recall_recent_trades", json!({"days": 7})),
        (
            "recall_signal_accuracy",
            json!({"confidence_min": 60, "confidence_max": 80}),
        ),
        (
            "recall_similar_setups",
            json!({"rsi_min": 25, "rsi_max": 45, "rsi_timeframe": "1h", "trend": "trending_down", "volatility": "high"}),
        ),
        ("recall_what_worked", json!({"market_condition": "ranging"})),
        ("search_trade_memory", json!({"query": "EURUSD long"})),
    ];
    let mut total = 0;
    let mut report = String::new();
    for (name, args) in calls {
        let v = call(&ctx, name, args).await;
        let n = tools::count_tokens(&v.to_string());
        report.push_str(&format!("{name}: {n} tokens\n"));
        assert!(n <= tools::TOKEN_CEILING, "{name}: {n} tokens\n{v}");
        total += n;
    }
    assert!(total < 3000, "{total} tokens in all\n{report}");
    // Not vacuous: the lists were full enough to need the ceiling.
    let many = call(
        &ctx,
        "recall_symbol_history",
        json!({"symbol": "EURUSD", "limit": 50}),
    )
    .await;
    let n = tools::count_tokens(&many.to_string());
    assert!(n <= tools::MAX_TOKEN_CEILING, "{n}\n{many}");
    assert!(many["left_out"].as_u64().is_some_and(|l| l > 0), "{many}");
    let hits = call(
        &ctx,
        "search_trade_memory",
        json!({"query": "EURUSD", "limit": 20}),
    )
    .await;
    assert!(tools::count_tokens(&hits.to_string()) <= tools::MAX_TOKEN_CEILING);
    println!("{report}total: {total} tokens");
}
