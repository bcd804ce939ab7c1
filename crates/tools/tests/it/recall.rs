//! The recall tools over an in-memory [`TradeMemory`] that keeps the store's contract
//! (decided before `as_of`, masked as of it): opt-in, as of the tick, and their arithmetic.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, TimeZone, Utc};
use outcomes::{
    Grade, HitKind, Indicators, MacdState, MemoryHit, OutcomeScore, OutcomeVerdict, RecallQuery,
    RecalledOutcome, SearchHits, SearchQuery, TradeOutcome,
};
use rust_decimal_macros::dec;
use serde_json::{Value, json};
use skill_schema::ToolSpec;
use tools::{
    MemoryFuture, Preloaded, RECALL_TOOLS, RunMode, ToolContext, ToolError, TradeMemory,
    build_tools,
};
use types::{RegimeTag, Side};
use uuid::Uuid;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 20, 12, 0, 0).unwrap()
}

/// The store's contract, in memory: outcomes decided in [`since`, `as_of`), filtered, newest first,
/// masked with `TradeOutcome::as_of`.
#[derive(Default)]
struct Memory {
    rows: Vec<RecalledOutcome>,
    hits: Vec<MemoryHit>,
    queries: Mutex<Vec<RecallQuery>>,
    searches: Mutex<Vec<SearchQuery>>,
}

impl TradeMemory for Memory {
    fn recall<'a>(&'a self, q: &'a RecallQuery) -> MemoryFuture<'a, Vec<RecalledOutcome>> {
        self.queries.lock().unwrap().push(q.clone());
        let mut rows: Vec<RecalledOutcome> = self
            .rows
            .iter()
            .filter(|r| r.outcome.tick_at < q.as_of)
            .filter(|r| q.since.is_none_or(|s| r.outcome.tick_at >= s))
            .filter(|r| q.symbol.as_ref().is_none_or(|s| *s == r.outcome.symbol))
            .filter(|r| {
                q.market_condition
                    .is_none_or(|c| c == r.indicators.market_condition)
            })
            .cloned()
            .map(|mut r| {
                r.outcome = r.outcome.as_of(q.as_of);
                r
            })
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.outcome.tick_at));
        rows.truncate(q.limit as usize);
        Box::pin(std::future::ready(Ok(rows)))
    }

    fn search<'a>(&'a self, q: &'a SearchQuery) -> MemoryFuture<'a, SearchHits> {
        self.searches.lock().unwrap().push(q.clone());
        let hits = self.hits.clone();
        Box::pin(std::future::ready(Ok(SearchHits {
            matched: hits.len(),
            hits,
        })))
    }
}

fn ind(condition: RegimeTag, rsi_1h: f64) -> Indicators {
    Indicators {
        rsi_15m: None,
        rsi_1h: Some(rsi_1h),
        rsi_4h: None,
        macd_signal: Some(MacdState::Neutral),
        volatility_percentile: Some(80.0),
        volume_ratio: Some(1.0),
        trend_strength: Some(10.0),
        btc_correlation: None,
        market_condition: condition,
    }
}

/// An outcome decided `hours_ago` before [`now`], graded `grade` with 24h PnL `pnl`, scored 24h
/// after its decision.
///
/// The id of outcome `n`: `n` in its first and last hex digit (`1000…0001`), as distinct in
/// its first 8 digits as real ids.
fn id(n: u128) -> Uuid {
    Uuid::from_u128(n << 124 | n)
}

#[allow(clippy::too_many_arguments)] // one row of the table below per call
fn row(
    n: u128,
    symbol: &str,
    hours_ago: i64,
    side: Side,
    confidence: u8,
    grade: Grade,
    pnl: rust_decimal::Decimal,
    indicators: Indicators,
) -> RecalledOutcome {
    let at = now() - Duration::hours(hours_ago);
    RecalledOutcome {
        outcome: TradeOutcome {
            id: id(n),
            deployment_id: Uuid::from_u128(99),
            decision_snapshot_id: Uuid::from_u128(100 + n),
            snapshot_id: Uuid::from_u128(200 + n),
            tick_at: at,
            symbol: symbol.into(),
            direction: side,
            confidence: Some(confidence),
            entry_price: dec!(100),
            predicted_stop: None,
            predicted_target: None,
            verdict: OutcomeVerdict::Executed,
            reason: None,
            market_condition: indicators.market_condition,
            score: OutcomeScore {
                price_1h: Some(dec!(100)),
                price_4h: Some(dec!(100)),
                price_24h: Some(dec!(100) + pnl),
                pnl_percent_1h: Some(dec!(0)),
                pnl_percent_4h: Some(pnl),
                pnl_percent_24h: Some(pnl),
                outcome_grade: Some(grade),
                scored_at: Some(at + Duration::hours(24)),
                ..OutcomeScore::default()
            },
        },
        indicators,
    }
}

fn memory() -> Arc<Memory> {
    let ranging = |rsi| ind(RegimeTag::Ranging, rsi);
    Arc::new(Memory {
        rows: vec![
            // Graded long before now.
            row(
                1,
                "BTC",
                100,
                Side::Long,
                80,
                Grade::A,
                dec!(3),
                ranging(28.0),
            ),
            row(
                2,
                "BTC",
                80,
                Side::Long,
                70,
                Grade::B,
                dec!(1.5),
                ranging(30.0),
            ),
            row(
                3,
                "BTC",
                60,
                Side::Short,
                60,
                Grade::F,
                dec!(-3.5),
                ranging(60.0),
            ),
            row(
                4,
                "ETH",
                50,
                Side::Short,
                90,
                Grade::C,
                dec!(0.5),
                ind(RegimeTag::TrendingDown, 40.0),
            ),
            // Decided 10h ago: its grade (scored 24h after the decision) is in the future.
            row(
                5,
                "BTC",
                10,
                Side::Long,
                75,
                Grade::A,
                dec!(4),
                ranging(29.0),
            ),
            // Decided after now: invisible.
            row(
                6,
                "BTC",
                -2,
                Side::Long,
                75,
                Grade::A,
                dec!(4),
                ranging(29.0),
            ),
        ],
        hits: vec![MemoryHit {
            kind: HitKind::Annotation,
            id: Uuid::from_u128(7),
            deployment_id: Uuid::from_u128(99),
            outcome_id: Some(id(3)),
            trade_id: None,
            symbol: Some("BTC".into()),
            at: now() - Duration::hours(30),
            text: "news reversal".into(),
            rank: 1.5,
        }],
        ..Memory::default()
    })
}

fn ctx(memory: Arc<Memory>) -> ToolContext {
    let data = Arc::new(Preloaded::new());
    ToolContext::new(
        now(),
        RunMode::Trade,
        vec!["BTC".into()],
        data.clone(),
        data,
    )
    .with_trade_memory(memory)
}

fn spec(names: &[&str]) -> ToolSpec {
    ToolSpec {
        built_in: std::iter::once("propose_order")
            .chain(names.iter().copied())
            .map(str::to_owned)
            .collect(),
        ..ToolSpec::default()
    }
}

async fn call(memory: &Arc<Memory>, name: &str, args: Value) -> Result<Value, ToolError> {
    build_tools(&spec(&[name]), &ctx(memory.clone()))
        .unwrap()
        .call_async(name, args)
        .await
}

#[test]
fn recall_tools_are_opt_in() {
    let m = memory();
    let default = build_tools(&ToolSpec::default(), &ctx(m.clone())).unwrap();
    assert_eq!(default.names(), ["propose_order"]);
    let one = build_tools(&spec(&["recall_what_worked"]), &ctx(m.clone())).unwrap();
    assert_eq!(one.names(), ["propose_order", "recall_what_worked"]);
    let all = build_tools(&spec(&RECALL_TOOLS), &ctx(m)).unwrap();
    assert_eq!(all.names()[1..], RECALL_TOOLS);
    // They wait on the store: the synchronous path refuses, naming the asynchronous one.
    assert!(matches!(
        all.call("recall_what_worked", json!({"market_condition": "ranging"})),
        Err(ToolError::AsyncOnly { .. })
    ));
}

#[tokio::test]
async fn symbol_history_is_as_of_the_tick() {
    let m = memory();
    let out = call(&m, "recall_symbol_history", json!({"symbol": "BTC"}))
        .await
        .unwrap();
    // Every query is as of the tick.
    assert!(m.queries.lock().unwrap().iter().all(|q| q.as_of == now()));
    let columns: Vec<&str> = out["columns"].as_str().unwrap().split(" | ").collect();
    let rows: Vec<Vec<&str>> = out["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().split(" | ").collect())
        .collect();
    assert!(rows.iter().all(|r| r.len() == columns.len()), "{rows:?}");
    let field =
        |r: &Vec<&str>, name: &str| r[columns.iter().position(|c| *c == name).unwrap()].to_owned();
    // Newest first; the one decided after now is absent; ids are 8 hex digits.
    let ids: Vec<String> = rows.iter().map(|r| field(r, "id")).collect();
    assert_eq!(
        ids,
        [5_u128, 3, 2, 1].map(|n| id(n).simple().to_string()[..8].to_owned())
    );
    // Outcome 5 was graded after now: pending, its 24h PnL hidden.
    assert_eq!(field(&rows[0], "grade"), "pending");
    assert_eq!(field(&rows[0], "pnl_24h"), "-");
    assert_eq!(field(&rows[1], "pnl_24h"), "-3.50%");
    assert_eq!(out["left_out"], 0);
    // 4 outcomes, 3 graded (A, B, F): 2 wins of 3 = 66.7 %; avg 24h PnL (3 + 1.5 − 3.5) / 3 =
    // 1 / 3 = +0.33 %.
    assert_eq!(out["stats"]["outcomes"], 4);
    assert_eq!(out["stats"]["graded"], 3);
    assert_eq!(out["stats"]["win_rate"], "66.7%");
    assert_eq!(out["stats"]["avg_pnl_24h"], "+0.33%");
    assert_eq!(out["stats"]["grades"], "A:1 B:1 F:1");
    assert_eq!(out["best"]["id"], ids[3]);
    assert_eq!(out["worst"]["id"], ids[1]);
    // No definitions in the result: they are in the description.
    assert!(out.get("definitions").is_none());
}

#[tokio::test]
async fn recent_trades_signal_accuracy_similar_setups_and_what_worked() {
    let m = memory();
    // The last 3 days (72h): outcomes 5, 4 and 3 (10h, 50h, 60h ago).
    let recent = call(&m, "recall_recent_trades", json!({"days": 3}))
        .await
        .unwrap();
    assert_eq!(recent["stats"]["outcomes"], 3);
    // Top performer first: ETH (avg 0.5) before BTC (avg −3.5; outcome 5 is not graded yet).
    assert_eq!(recent["by_symbol"][0]["symbol"], "ETH");

    // Confidence 70–80: outcomes 1 (A), 2 (B), 5 (pending) → 2 of 2 graded.
    let acc = call(
        &m,
        "recall_signal_accuracy",
        json!({"confidence_min": 70, "confidence_max": 80}),
    )
    .await
    .unwrap();
    assert_eq!(acc["sample_size"], 2);
    assert_eq!(acc["band"]["win_rate"], "100%");
    let bad = call(
        &m,
        "recall_signal_accuracy",
        json!({"confidence_min": 80, "confidence_max": 70}),
    )
    .await;
    assert!(
        matches!(bad, Err(ToolError::InvalidArguments { ref problems, .. }) if problems[0].contains("confidence_min (80)"))
    );

    // RSI 25–35 in a ranging market, high volatility: outcomes 1, 2 (graded) and 5 (pending).
    let similar = call(
        &m,
        "recall_similar_setups",
        json!({"rsi_min": 25, "rsi_max": 35, "trend": "ranging", "volatility": "high"}),
    )
    .await
    .unwrap();
    assert_eq!(similar["matches"], 3);
    assert_eq!(similar["stats"]["wins"], 2);
    // An inverted range is refused, naming both arguments, as a model wrote it.
    let bad = call(
        &m,
        "recall_similar_setups",
        json!({"rsi_min": 70, "rsi_max": 30.5, "rsi_timeframe": "1h"}),
    )
    .await;
    match bad {
        Err(ToolError::InvalidArguments { ref problems, .. }) => assert_eq!(
            problems,
            &["rsi_min (70) is above rsi_max (30.5): give the lower bound first"]
        ),
        other => panic!("{other:?}"),
    }
    assert!(
        call(
            &m,
            "recall_similar_setups",
            json!({"rsi_min": 30, "rsi_max": 30})
        )
        .await
        .is_ok(),
        "an empty-width range is a range"
    );

    // Ranging: longs 1 (A), 2 (B) → 2 of 2; shorts 3 (F) → 0 of 1 (too few to rank).
    let worked = call(
        &m,
        "recall_what_worked",
        json!({"market_condition": "ranging"}),
    )
    .await
    .unwrap();
    assert_eq!(worked["long"]["wins"], 2);
    assert_eq!(
        worked["best_direction"],
        Value::Null,
        "no side has 3 graded outcomes"
    );
    let bad = call(
        &m,
        "recall_what_worked",
        json!({"market_condition": "sideways"}),
    )
    .await;
    assert!(matches!(bad, Err(ToolError::InvalidArguments { .. })));
}

#[tokio::test]
async fn search_is_as_of_the_tick_and_refuses_blank_text() {
    let m = memory();
    let out = call(
        &m,
        "search_trade_memory",
        json!({"query": "news reversal", "limit": 5}),
    )
    .await
    .unwrap();
    assert_eq!(out["hits"][0]["kind"], "annotation");
    assert_eq!(out["hits"][0]["symbol"], "BTC");
    assert_eq!(out["hits"][0]["outcome"], "30000000");
    assert_eq!(out["matched"], 1);
    let q = m.searches.lock().unwrap()[0].clone();
    assert_eq!(
        (q.as_of, q.text.as_str(), q.limit),
        (now(), "news reversal", 5)
    );
    let blank = call(&m, "search_trade_memory", json!({"query": "   "})).await;
    assert!(matches!(blank, Err(ToolError::InvalidArguments { .. })));
}

#[tokio::test]
async fn without_a_memory_every_recall_finds_nothing() {
    let data = Arc::new(Preloaded::new());
    let ctx = ToolContext::new(
        now(),
        RunMode::Trade,
        vec!["BTC".into()],
        data.clone(),
        data,
    );
    let reg = build_tools(&spec(&["recall_symbol_history"]), &ctx).unwrap();
    let out = reg
        .call_async("recall_symbol_history", json!({"symbol": "BTC"}))
        .await
        .unwrap();
    assert_eq!(out["stats"]["outcomes"], 0);
    assert_eq!(out["stats"]["win_rate"], Value::Null);
}
