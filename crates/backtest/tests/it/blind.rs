//! A blind backtest of two symbols with news (the 30 hostile headlines of
//! `crates/blind/tests/fixtures`), events, funding and open interest, whose scripted model calls
//! every market tool, guesses real symbols and proposes with a stop and a target: the leak
//! scanner finds nothing in any request it receives — system prompt, user message, tool
//! definitions, tool results — and a guessed real symbol is answered as any unknown name; its
//! neutral names and rescaled levels reach the engine, the ledger and the store in real terms.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_runtime::{FinishReason, Message, ModelResponse, ScriptedModel, ToolCall, Usage};
use backtest::{BacktestInput, register};
use chrono::{DateTime, Duration, TimeZone, Utc};
use db::{LedgerStore, TickStore};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use serde_json::json;
use tools::{FundingRate, NewsItem, OpenInterestPoint, Preloaded};
use types::{Bar, EventKind, Interval, MarketEvent};
use uuid::Uuid;

fn skill() -> skill_schema::Skill {
    let doc = json!({
        "name": "BTC and ETH blind test",
        "version": 1,
        "model": "builtin/scripted",
        "maxSteps": 3,
        "strategy": {"mode": "rules", "leash": "strict",
                     "entry": ["Buy BTC above 64,300 when ETH confirms; never in March 2026."],
                     "exit": ["Let the stop or the target work."],
                     "riskManagement": ["Always a stop."], "avoid": ["No trade on a Friday."]},
        "context": {"barsInterval": "1h", "symbols": ["BTC", "ETH"], "barsLookback": 12,
                    "newsLookbackHours": 24,
                    "events": {"enabled": true, "lookaheadHours": 24}},
        "risk": {"maxPositionPct": 25, "maxTotalExposurePct": 50, "maxLeverage": 2,
                 "maxOrderUsd": 1000, "allowedSymbols": ["BTC", "ETH"]},
        "tools": {"builtIn": ["propose_order", "fetch_news_sentiment", "get_position_risk",
                              "get_funding_rate", "get_open_interest"]}
    });
    skill_schema::parse_skill(&doc.to_string(), skill_schema::Format::Json)
        .unwrap()
        .skill
}

fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 0, 0, 0).unwrap()
}

/// Hourly bars from `start()`: `base + 7.25·i` (a rising market), high/low ± 3.5.
fn bars(base: Decimal, n: i64) -> Vec<Bar> {
    (0..n)
        .map(|i| {
            let close = base + Decimal::new(725, 2) * Decimal::from(i);
            Bar {
                time: start() + Duration::hours(i),
                open: close - dec!(1.25),
                high: close + dec!(3.5),
                low: close - dec!(3.5),
                close,
                volume: dec!(12.5),
            }
        })
        .collect()
}

fn call(id: &str, name: &str, args: &serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    }
}

fn calls(calls: Vec<ToolCall>) -> ModelResponse {
    ModelResponse {
        text: None,
        tool_calls: calls,
        finish: FinishReason::ToolCalls,
        usage: Usage::default(),
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
async fn a_blind_run_shows_no_real_market_and_trades_in_real_terms() {
    let btc = bars(dec!(64250.5), 30);
    let eth = bars(dec!(3120.75), 30);
    let mut market = Preloaded::new()
        .with_bars("BTC", Interval::H1, btc.clone())
        .with_bars("ETH", Interval::H1, eth.clone());
    let mut news = vec![NewsItem {
        time: start() + Duration::hours(22),
        headline: "BTC breaks 64,400 on Monday, March 2 2026 (2026-03-02); ETH at 3,280.5".into(),
        source: "wire".into(),
        sentiment: dec!(0.5),
        importance: dec!(0.9),
        symbols: vec!["BTC".into(), "ETH".into()],
    }];
    // The hostile headlines, one a few minutes apart before the first tick.
    for (i, headline) in hostile_headlines().into_iter().enumerate() {
        news.push(NewsItem {
            time: start() + Duration::hours(20) + Duration::minutes(2 * i as i64),
            headline,
            source: "wire".into(),
            sentiment: dec!(0.1),
            importance: dec!(0.5),
            symbols: vec![],
        });
    }
    market.news = news;
    market.events = vec![MarketEvent {
        id: Uuid::from_u128(9),
        kind: EventKind::Fomc,
        title: "FOMC decision, March 2026".into(),
        symbols: vec!["BTC".into(), "USD".into()],
        scheduled_at: start() + Duration::hours(30),
        importance: dec!(1),
        source: "calendar 2026".into(),
    }];
    market.funding = BTreeMap::from([(
        "BTC".into(),
        (0..24)
            .map(|i| FundingRate {
                time: start() + Duration::hours(i),
                rate: dec!(0.0000125),
                period_hours: 1,
            })
            .collect(),
    )]);
    market.open_interest = BTreeMap::from([(
        "ETH".into(),
        (0..24)
            .map(|i| OpenInterestPoint {
                time: start() + Duration::hours(i),
                oi_base: dec!(1000) + Decimal::from(i),
                oi_usd: (dec!(1000) + Decimal::from(i)) * dec!(3120.75),
            })
            .collect(),
    )]);
    let market = Arc::new(market);
    let first = btc[23].close_time(Interval::H1);
    let last = btc[26].close_time(Interval::H1);
    let input = BacktestInput::for_test(skill(), market.clone())
        .with_news(market.clone())
        .with_events(market.clone())
        .with_derivatives(market)
        .with_range(first, last)
        .with_blind(0);
    // The disguise the run builds: factors from each symbol's first close, day 0 the first tick.
    let disguise = blind::Blind::new(
        &["BTC".to_owned(), "ETH".to_owned()],
        &BTreeMap::from([("BTC".into(), btc[0].close), ("ETH".into(), eth[0].close)]),
        first.date_naive(),
        0,
    )
    .unwrap();
    let k = disguise.scale("BTC").unwrap();
    // Tick 1: every market tool, then a long on ASSET_A with a stop and a target written in
    // its shown prices (real 64,000 and 65,000); tick 2: the position's risk; ticks 3, 4: hold.
    let model = ScriptedModel::new(vec![
        calls(vec![
            call(
                "a",
                "fetch_news_sentiment",
                &json!({"symbol": "ASSET_A", "hours": 24, "top_k": 50}),
            ),
            // Guesses: a real symbol, a real name, a nonsense name.
            call("g1", "get_funding_rate", &json!({"symbol": "BTC"})),
            call("g2", "get_funding_rate", &json!({"symbol": "Bitcoin"})),
            call("g3", "get_funding_rate", &json!({"symbol": "XYZ"})),
            call("g4", "fetch_news_sentiment", &json!({"symbol": "ETH"})),
            call("b", "get_funding_rate", &json!({"symbol": "ASSET_A"})),
            call("c", "get_open_interest", &json!({"symbol": "ASSET_B"})),
            call("d", "get_position_risk", &json!({})),
        ]),
        calls(vec![ToolCall {
            id: "e".into(),
            name: "propose_order".into(),
            arguments: format!(
                r#"{{"action":"open_long","symbol":"ASSET_A","size_usd":1000,"stop":{},"target":{},"reason":"ASSET_A trends up"}}"#,
                (dec!(64000) * k).normalize(),
                (dec!(65000) * k).normalize()
            ),
        }]),
        text("opened"),
        calls(vec![call(
            "f",
            "get_position_risk",
            &json!({"symbol": "ASSET_A"}),
        )]),
        text("hold"),
        text("hold"),
        text("hold"),
    ]);
    let store = db::connect("sqlite::memory:").await.unwrap();
    register(&store, &input, json!({"name": "blind test"}), first)
        .await
        .unwrap();
    let result = common::run_stored(&input, &model, &store).await.unwrap();
    assert_eq!(result.points.len(), 4);
    assert_eq!(model.remaining(), 0, "every scripted response was used");

    // The engine and the ledger got the real order: BTC, the real stop and target.
    let snapshots = store.list_snapshots(Uuid::from_u128(2), 10).await.unwrap();
    let steps: Vec<&str> = snapshots.iter().map(|s| s.steps.as_str()).collect();
    let opened = snapshots
        .iter()
        .find_map(|s| s.proposal.as_ref().filter(|p| p.size_usd.is_some()))
        .unwrap_or_else(|| panic!("no proposal: {steps:#?}"));
    assert_eq!(
        (opened.symbol.as_str(), opened.stop, opened.target),
        ("BTC", Some(dec!(64000)), Some(dec!(65000)))
    );
    let trades = store.all_trades(Uuid::from_u128(2)).await.unwrap();
    assert_eq!(trades.len(), 1);
    assert_eq!(trades[0].symbol, "BTC");
    assert!(
        trades[0].entry_price > dec!(64000),
        "{}",
        trades[0].entry_price
    );

    // Everything the model read, tool definitions included.
    let requests = model.requests();
    assert_eq!(requests.len(), 7);
    let mut texts = Vec::new();
    for r in &requests {
        texts.push(r.system.clone());
        texts.push(serde_json::to_string(&r.tools).unwrap());
        for m in &r.messages {
            match m {
                Message::User { content } | Message::Tool { content, .. } => {
                    texts.push(content.clone());
                }
                Message::Assistant { .. } => {}
            }
        }
    }
    let all = texts.join("\n");
    // What the model saw, in its world: its names, relative days, rescaled levels, the news
    // and the event masked, the funding rate as it was, open interest in USD as it was.
    for shown in [
        "ASSET_A",
        "ASSET_B",
        "day -1 23:00",
        "ASSET_A breaks [price] on [weekday], [month] [day] [year] (day -1); ASSET_B at [price]",
        "FOMC decision, [month] [year]",
        "0.0000125",
    ] {
        assert!(all.contains(shown), "{shown} not shown:\n{all}");
    }
    // The position the model holds, at its shown entry.
    assert!(
        texts
            .iter()
            .any(|t| t.contains("\"symbol\":\"ASSET_A\"") && t.contains("entry")),
        "get_position_risk answers about ASSET_A:\n{all}"
    );
    // A guessed real symbol is answered as a nonsense one: the aliases only.
    let answers: Vec<&str> = requests
        .iter()
        .flat_map(|r| &r.messages)
        .filter_map(|m| match m {
            Message::Tool {
                call_id, content, ..
            } if call_id.starts_with('g') => Some((call_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect::<BTreeMap<_, _>>()
        .into_values()
        .collect();
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert_eq!(answers[0], answers[2], "BTC is answered as XYZ");
    assert_eq!(answers[1], answers[2], "Bitcoin is answered as XYZ");
    assert!(answers[2].contains("ASSET_A, ASSET_B"), "{}", answers[2]);
    // Every hostile headline reached the model, and the scanner finds nothing in any request.
    assert!(all.matches("[month]").count() > 10, "{all}");
    let prices = btc
        .iter()
        .chain(&eth)
        .flat_map(|b| [b.open, b.high, b.low, b.close])
        .chain([dec!(64400), dec!(3280.5), dec!(63900)]);
    let scanner =
        blind::LeakScanner::new(&["BTC".to_owned(), "ETH".to_owned()]).with_prices(prices);
    for text in &texts {
        let leaks = scanner.scan(text);
        assert!(leaks.is_empty(), "leaks {leaks:?} in:\n{text}");
    }
}

/// The hostile headlines every blind test reads: every written form of a date, a year, a
/// month, a weekday, a symbol and a price that real wires use.
pub(crate) fn hostile_headlines() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../blind/tests/fixtures/hostile-headlines.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
