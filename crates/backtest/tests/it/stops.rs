//! A backtest whose scripted model opens a long with a stop: a later bar through the stop closes
//! the position at the stop, and the ledger says so (`close_kind` `stop`) at the hand-computed
//! price and PnL.

use crate::common;

use agent_runtime::{FinishReason, ModelResponse, ScriptedModel, ToolCall, Usage};
use backtest::{BacktestInput, register};
use chrono::{Duration, TimeZone, Utc};
use db::LedgerStore;
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use serde_json::json;
use tools::Preloaded;
use types::{Bar, CloseKind, FillTrigger, Interval, TradeStatus};
use uuid::Uuid;

fn skill() -> skill_schema::Skill {
    let doc = json!({
        "name": "stop test",
        "version": 1,
        "model": "builtin/scripted",
        "maxSteps": 3,
        "strategy": {"mode": "rules", "leash": "strict",
                     "entry": ["Buy with a stop."], "exit": ["Let the stop work."],
                     "riskManagement": ["Always a stop."], "avoid": ["No stop."]},
        "context": {"barsInterval": "1h", "symbols": ["BTC"], "barsLookback": 10},
        "risk": {"maxPositionPct": 25, "maxTotalExposurePct": 50, "maxLeverage": 2,
                 "maxOrderUsd": 1000},
        "tools": {"builtIn": ["propose_order"]}
    });
    skill_schema::parse_skill(&doc.to_string(), skill_schema::Format::Json)
        .unwrap()
        .skill
}

fn bar(i: i64, open: Decimal, high: Decimal, low: Decimal, close: Decimal) -> Bar {
    Bar {
        time: Utc.with_ymd_and_hms(2026, 3, 2, 0, 0, 0).unwrap() + Duration::hours(i),
        open,
        high,
        low,
        close,
        volume: Decimal::from(10),
    }
}

fn text(t: &str) -> ModelResponse {
    ModelResponse {
        text: Some(t.into()),
        tool_calls: vec![],
        finish: FinishReason::Stop,
        usage: Usage::default(),
    }
}

#[tokio::test]
async fn a_proposed_stop_closes_the_position_in_the_ledger_at_the_stop() {
    // Bars 0–25 flat at 100 (high 101, low 99); bar 26 falls to a low of 96, through the stop 97.
    let mut bars: Vec<Bar> = (0..26)
        .map(|i| bar(i, dec!(100), dec!(101), dec!(99), dec!(100)))
        .collect();
    bars.push(bar(26, dec!(99), dec!(99.5), dec!(96), dec!(96.5)));
    let first = bars[24].close_time(Interval::H1);
    let last = bars[26].close_time(Interval::H1);
    // 4.5 bps taker fee, 1 bp slippage.
    let market = Preloaded::new().with_bars("BTC", Interval::H1, bars);
    let input = BacktestInput::for_test(skill(), market).with_range(first, last);
    // Tick 1 (close of bar 24): open long $1,000 with stop 97 and target 110; ticks 2 and 3 hold.
    let model = ScriptedModel::new(vec![
        ModelResponse {
            text: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "propose_order".into(),
                arguments: r#"{"action":"open_long","symbol":"BTC","size_usd":1000,"stop":97,"target":110,"reason":"test"}"#.into(),
            }],
            finish: FinishReason::ToolCalls,
            usage: Usage::default(),
        },
        text("opened"),
        text("hold"),
        text("hold"),
    ]);
    let store = db::connect("sqlite::memory:").await.unwrap();
    register(&store, &input, json!({"name": "stop test"}), first)
        .await
        .unwrap();
    let result = common::run_stored(&input, &model, &store).await.unwrap();
    assert_eq!(result.points.len(), 3);
    assert_eq!(model.remaining(), 0);

    // Entry: qty = 1,000 / 100 = 10; fill = 100 × 1.0001 = 100.01; fee = 1,000.1 × 0.00045
    //        = 0.450045.
    // Bar 25 (99–101) leaves the stop alone. Bar 26's low 96 crosses 97: the stop sells at
    // 97 × 0.9999 = 96.9903, stamped at bar 26's close; fee = 969.903 × 0.00045 = 0.43645635.
    // Realized = (96.9903 − 100.01) × 10 = −30.197; fees = 0.450045 + 0.43645635 = 0.88650135.
    assert_eq!(result.fills.len(), 2);
    let stop = &result.fills[1];
    assert_eq!(stop.trigger, Some(FillTrigger::Stop));
    assert_eq!(
        (stop.price, stop.qty, stop.time),
        (dec!(96.9903), dec!(10), last)
    );
    let trades = store.all_trades(Uuid::from_u128(2)).await.unwrap();
    assert_eq!(trades.len(), 1);
    let r = &trades[0];
    assert_eq!(r.status, TradeStatus::Closed);
    assert_eq!(r.close_kind, Some(CloseKind::Stop));
    assert_eq!(r.entry_price, dec!(100.01));
    assert_eq!(r.exit_price, Some(dec!(96.9903)));
    assert_eq!(r.exit_tick_at, Some(last));
    assert_eq!(r.realized_pnl_usd, dec!(-30.197));
    assert_eq!(r.fees_usd, dec!(0.88650135));
}
