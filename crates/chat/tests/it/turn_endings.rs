//! How a chat turn ends when the model stumbles: an unknown tool or bad arguments go back to
//! the model and the turn goes on; a turn that runs out of steps answers with what it did. And
//! how the tools print money: the prompt's styles, a per-trade Sharpe ratio and open positions
//! marked to market, every figure below computed by hand.

use std::sync::Arc;

use agent_runtime::{Message, ModelResponse, ScriptedModel, ToolOutcome};
use chat::{
    ChatData, ChatToolContext, DeploymentData, FactOp, NotesData, chat_registry, sharpe_per_trade,
    summarize,
};
use chrono::{DateTime, Duration, TimeZone, Utc};
use db::FactStore;
use model::test_support::{tool_call, tool_turn};
use prompt_compose::ChatMode;
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use serde_json::json;
use tools::{Preloaded, RunMode};
use types::{Bar, Interval, TradeRecord, TradeStatus, Uuid};

use crate::memory::{answer, run, turn};

const FACT: &str = "You never take leverage above 3x.";

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 8, 14, 32, 0).unwrap()
}

fn calls(calls: &[(&str, &str, &str)]) -> ModelResponse {
    tool_turn(
        calls
            .iter()
            .map(|(id, name, args)| tool_call(*id, *name, *args))
            .collect(),
    )
}

fn tool_results(m: &[Message]) -> Vec<(&str, &str)> {
    m.iter()
        .filter_map(|m| match m {
            Message::Tool { name, content, .. } => Some((name.as_str(), content.as_str())),
            _ => None,
        })
        .collect()
}

async fn store() -> (db::Store, Uuid) {
    let store = db::connect("sqlite::memory:").await.unwrap();
    let fx = db::test_support::seed(&store).await.expect("seed");
    (store, fx.user.id)
}

#[tokio::test]
async fn an_unknown_tool_beside_a_valid_remember_keeps_the_remember_and_goes_on() {
    let (store, user) = store().await;
    let remember = json!({"fact": FACT, "topic": "risk", "confidence": "asserted"}).to_string();
    let model = ScriptedModel::new(vec![
        calls(&[("c1", "no_such_tool", "{}"), ("c2", "remember", &remember)]),
        answer("Noted: never above 3x."),
    ]);
    let out = run(
        &store,
        &model,
        turn(user, 1, Vec::new(), "I never go above 3x.", now()),
    )
    .await;
    assert!(out.run.error.is_none(), "{:?}", out.run.error);
    assert!(!out.out_of_steps);
    assert_eq!(out.answer, "Noted: never above 3x.");
    // The model was told: the unknown tool's error, then remember's result.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1].messages);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "no_such_tool");
    assert!(
        results[0].1.contains("unknown tool") && results[0].1.contains("remember"),
        "{}",
        results[0].1
    );
    assert!(results[1].1.contains("\"remembered\""), "{}", results[1].1);
    let recorded = &out.run.steps[0].tool_calls[0].outcome;
    assert!(
        matches!(
            recorded,
            ToolOutcome::Error {
                recoverable: true,
                ..
            }
        ),
        "{recorded:?}"
    );
    // The remember landed.
    assert!(matches!(&out.applied[..], [FactOp::Remember { fact, .. }] if fact == FACT));
    let facts = store.list_facts(user, false).await.unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].fact, FACT);
}

#[tokio::test]
async fn bad_arguments_go_back_to_the_model_which_corrects_them() {
    let (store, user) = store().await;
    let good = json!({"fact": FACT}).to_string();
    let model = ScriptedModel::new(vec![
        // Not JSON, then a field the tool does not take.
        calls(&[("c1", "remember", "{\"fact\": ")]),
        calls(&[(
            "c2",
            "remember",
            r#"{"fact": "You never take leverage above 3x.", "importance": 5}"#,
        )]),
        calls(&[("c3", "remember", &good)]),
        answer("Noted."),
    ]);
    let out = run(
        &store,
        &model,
        turn(user, 2, Vec::new(), "I never go above 3x.", now()),
    )
    .await;
    assert!(out.run.error.is_none(), "{:?}", out.run.error);
    assert_eq!(out.answer, "Noted.");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let results = tool_results(&requests[3].messages);
    assert!(
        results[0].1.contains("not valid JSON") && results[0].1.contains("\"error\""),
        "{}",
        results[0].1
    );
    assert!(
        results[1].1.contains("invalid arguments") && results[1].1.contains("importance"),
        "{}",
        results[1].1
    );
    assert!(results[2].1.contains("\"remembered\""), "{}", results[2].1);
    assert_eq!(out.applied.len(), 1);
    assert_eq!(store.list_facts(user, false).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_turn_that_runs_out_of_steps_says_what_it_did() {
    let (store, user) = store().await;
    let remember = json!({"fact": FACT, "confidence": "asserted"}).to_string();
    let model = ScriptedModel::new(vec![
        ModelResponse {
            text: Some("Let me look at your deployments.".into()),
            ..calls(&[
                ("c1", "get_my_deployments", "{}"),
                ("c2", "remember", &remember),
            ])
        },
        calls(&[
            ("c3", "get_my_deployments", r#"{"detail": "trades"}"#),
            ("c4", "nope", "{}"),
        ]),
        answer("never sent: the turn stops after two calls"),
    ]);
    let mut t = turn(user, 3, Vec::new(), "How am I doing?", now());
    t.max_steps = 2;
    let out = run(&store, &model, t).await;
    assert!(out.run.error.is_none(), "{:?}", out.run.error);
    assert_eq!(model.requests().len(), 2);
    assert!(out.out_of_steps);
    insta::assert_snapshot!("out_of_steps_answer", out.answer);
    // The turn completed: its remember is written; the answer closes the conversation.
    assert_eq!(store.list_facts(user, false).await.unwrap().len(), 1);
    assert!(matches!(
        out.messages.last(),
        Some(Message::Assistant { text: Some(t), tool_calls }) if *t == out.answer && tool_calls.is_empty()
    ));
}

// ---------------------------------------------------------------------------------------------
// The summary: styles, Sharpe, mark to market

fn t(hour: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap() + Duration::hours(hour)
}

fn fixture() -> db::test_support::Fixture {
    let user = db::test_support::sample_user();
    let mut skill = db::test_support::sample_skill(user.id);
    skill.id = Uuid::from_u128(0x5c);
    let mut deployment = db::test_support::sample_deployment(user.id, skill.id, 1);
    deployment.id = Uuid::from_u128(0xde);
    db::test_support::Fixture {
        version: db::test_support::sample_skill_version(skill.id, 1),
        user,
        skill,
        deployment,
    }
}

/// Three closed BTC trades of $1,000 each: net +$100, −$50, +$200 (returns 0.1, −0.05, 0.2),
/// and an open BTC long of 0.01 at 65,200 (fee $0.2934).
fn trades(fx: &db::test_support::Fixture) -> Vec<TradeRecord> {
    let open = db::test_support::sample_open_trade(fx, t(30));
    let closed = |n: u128, gross: Decimal, exit: i64| TradeRecord {
        id: Uuid::from_u128(n),
        entry_size_usd: dec!(1000),
        opened_qty: dec!(0.015),
        realized_pnl_usd: gross,
        fees_usd: dec!(10),
        ..db::test_support::sample_closed_trade(
            &TradeRecord {
                entry_tick_at: t(exit - 5),
                ..open.clone()
            },
            t(exit),
        )
    };
    vec![
        closed(1, dec!(110), 10),
        closed(2, dec!(-40), 20),
        closed(3, dec!(210), 25),
        TradeRecord {
            id: Uuid::from_u128(4),
            ..open
        },
    ]
}

fn btc_bars(last_close: Decimal) -> Preloaded {
    let bars = (0..40)
        .map(|h| Bar {
            time: t(h),
            open: dec!(65000),
            high: dec!(66500),
            low: dec!(64000),
            close: if h == 39 { last_close } else { dec!(65000) },
            volume: dec!(3),
        })
        .collect();
    Preloaded::new().with_bars("BTC", Interval::H1, bars)
}

fn ctx(market: Preloaded) -> ChatToolContext {
    let fx = fixture();
    let trades = trades(&fx);
    let mut recent: Vec<TradeRecord> = trades
        .iter()
        .filter(|r| r.status == TradeStatus::Closed)
        .cloned()
        .collect();
    recent.reverse();
    let data = ChatData {
        user_id: fx.user.id,
        now: t(40),
        deployments: vec![DeploymentData {
            deployment: fx.deployment.clone(),
            skill_name: fx.skill.name.clone(),
            trades,
            recent_closed: recent,
            notes: NotesData {
                active: None,
                superseded: 0,
            },
        }],
        skill_notes: Vec::new(),
        skills: Vec::new(),
        facts: Vec::new(),
        upcoming: Vec::new(),
        past: Vec::new(),
    };
    ChatToolContext {
        market: Arc::new(market),
        ..ChatToolContext::new(data, Uuid::from_u128(7))
    }
}

#[test]
fn the_sharpe_ratio_is_per_trade_in_decimal() {
    // mean 0.083333…, sample sd √(0.0316667 / 2) = 0.125831, ratio 0.6623 → 0.66.
    assert_eq!(
        sharpe_per_trade(&[dec!(0.1), dec!(-0.05), dec!(0.2)]),
        Some(dec!(0.66))
    );
    assert_eq!(sharpe_per_trade(&[dec!(0.1)]), None);
    assert_eq!(sharpe_per_trade(&[dec!(0.1), dec!(0.1)]), None);
}

#[test]
fn the_summary_marks_open_positions_at_the_latest_close() {
    let fx = fixture();
    let rows = trades(&fx);
    let marks = |s: &str| (s == "BTC").then_some(dec!(66000));
    let s = summarize(&rows, &marks, dec!(10000));
    assert_eq!(s.closed_trades, 3);
    assert_eq!(s.win_rate, Some(dec!(0.6667)));
    assert_eq!(s.net_pnl_usd, dec!(250));
    assert_eq!(s.max_drawdown_usd, dec!(50));
    assert_eq!(s.sharpe_per_trade, Some(dec!(0.66)));
    // 0.01 BTC at 66,000; (66,000 − 65,200) × 0.01 = 8.
    assert_eq!(s.open_notional_usd, Some(dec!(660)));
    assert_eq!(s.unrealized_pnl_usd, Some(dec!(8)));
    // 10,000 + 250 − 0.2934 (the open row's entry fee) + 8.
    assert_eq!(s.equity_usd, Some(dec!(10257.7066)));
    // No bar for the open position: the marked figures are unknown, the realized ones stay.
    let s = summarize(&rows, &|_: &str| None, dec!(10000));
    assert_eq!(s.open_notional_usd, None);
    assert_eq!(s.equity_usd, None);
    assert_eq!(s.net_pnl_usd, dec!(250));
}

#[test]
fn tool_answers_print_money_prices_and_percentages_in_the_prompt_styles() {
    let ctx = ctx(btc_bars(dec!(66000)));
    let registry = chat_registry(&ctx, ChatMode::Coach, RunMode::ReadOnly);
    let list = registry
        .call("get_my_deployments", json!({"detail": "full"}))
        .unwrap();
    insta::assert_snapshot!(
        "deployments_full",
        serde_json::to_string_pretty(&list).unwrap()
    );
    let summary = &list["deployments"][0]["summary"];
    assert_eq!(summary["equity_usd"], "$10,257.71");
    assert_eq!(summary["unrealized_pnl_usd"], "+$8.00");
    assert_eq!(summary["sharpe_per_trade"], "0.66");
    assert_eq!(summary["win_rate"], "66.67%");
    let skill = registry
        .call(
            "get_skill_performance",
            json!({"skill_id": Uuid::from_u128(0x5c)}),
        )
        .unwrap();
    assert_eq!(skill["summary"], *summary);
    // No decimal in any answer carries more digits than its style.
    let text = list.to_string();
    assert!(
        !text.contains("0.2934") && !text.contains("10257.7066"),
        "{text}"
    );
    // Without bars the marked figures are null, never entry price × quantity.
    let bare = chat_registry(
        &self::ctx(Preloaded::new()),
        ChatMode::Coach,
        RunMode::ReadOnly,
    )
    .call("get_my_deployments", json!({}))
    .unwrap();
    let dep = &bare["deployments"][0];
    assert_eq!(dep["summary"]["equity_usd"], serde_json::Value::Null);
    assert_eq!(
        dep["open_positions"][0]["notional_usd"],
        serde_json::Value::Null
    );
    assert_eq!(dep["open_positions"][0]["entry_price"], "65,200");
}
