//! A backtest of a skill listing the fixture server: the scripted model calls an MCP tool and
//! the tick's decision snapshot holds the call and its result.

use agent_runtime::{FinishReason, ModelResponse, ScriptedModel, ToolCall, Usage};
use backtest::{BacktestInput, RunOptions, register};
use chrono::{Duration, TimeZone, Utc};
use db::TickStore;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use tools::Preloaded;
use types::{Bar, Interval};
use uuid::Uuid;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

fn skill() -> skill_schema::Skill {
    let doc = json!({
        "name": "mcp backtest",
        "version": 1,
        "model": "builtin/scripted",
        "maxSteps": 3,
        "strategy": {"mode": "rules", "leash": "strict",
                     "entry": ["Ask the fixture first."], "exit": ["Never hold."],
                     "riskManagement": ["Stand aside."], "avoid": ["Never trade on a tool error."]},
        "context": {"barsInterval": "1h", "symbols": ["BTC"], "barsLookback": 10},
        "risk": {"maxPositionPct": 25, "maxTotalExposurePct": 50, "maxLeverage": 2,
                 "maxOrderUsd": 1000},
        "tools": {"builtIn": ["propose_order"], "mcpServers": [
            {"name": "fx", "command": FIXTURE, "allowedTools": ["add", "fail"], "timeoutMs": 2000}
        ]}
    });
    skill_schema::parse_skill(&doc.to_string(), skill_schema::Format::Json)
        .unwrap()
        .skill
}

fn bars() -> Vec<Bar> {
    let start = Utc.with_ymd_and_hms(2026, 3, 2, 0, 0, 0).unwrap();
    (0..30)
        .map(|i| {
            let p = Decimal::from(100 + i);
            Bar {
                time: start + Duration::hours(i),
                open: p,
                high: p + Decimal::ONE,
                low: p - Decimal::ONE,
                close: p,
                volume: Decimal::from(10),
            }
        })
        .collect()
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[tokio::test]
async fn a_scripted_model_calls_an_mcp_tool_and_the_snapshot_holds_the_call_and_its_result() {
    let skill = skill();
    let servers = mcp::McpServers::start(&skill.tools.mcp_servers)
        .await
        .unwrap();
    let bars = bars();
    let at = bars[29].close_time(Interval::H1);
    let input =
        BacktestInput::for_test(skill, Preloaded::new().with_bars("BTC", Interval::H1, bars))
            .with_range(at, at)
            .with_external_tools(servers.tools());
    let model = ScriptedModel::new(vec![
        ModelResponse {
            text: None,
            tool_calls: vec![
                call("c1", "mcp__fx__add", r#"{"a": 2, "b": 3}"#),
                call("c2", "mcp__fx__fail", "{}"),
            ],
            finish: FinishReason::ToolCalls,
            usage: Usage::default(),
        },
        ModelResponse {
            text: Some("Sum is 5; no trade.".into()),
            tool_calls: vec![],
            finish: FinishReason::Stop,
            usage: Usage::default(),
        },
    ]);
    let store = db::connect("sqlite::memory:").await.unwrap();
    register(&store, &input, json!({"name": "mcp backtest"}), at)
        .await
        .unwrap();
    let result = backtest::run(&input, &model, &store, RunOptions::default())
        .await
        .unwrap()
        .stored()
        .await
        .unwrap();
    assert_eq!(result.points.len(), 1);
    assert_eq!(result.points[0].verdict, "no_op");

    // The model was offered the MCP tools after the built-in, with the server's schema.
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        offered,
        vec!["propose_order", "mcp__fx__add", "mcp__fx__fail"]
    );

    let snapshot = store
        .get_snapshot(tick::snapshot_id(Uuid::from_u128(2), at))
        .await
        .unwrap();
    assert_eq!(snapshot.error, None);
    let steps: Value = serde_json::from_str(snapshot.steps.as_str()).unwrap();
    let calls = &steps[0]["tool_calls"];
    assert_eq!(calls[0]["name"], "mcp__fx__add");
    assert_eq!(calls[0]["arguments"], r#"{"a": 2, "b": 3}"#);
    assert_eq!(calls[0]["outcome"]["status"], "ok");
    assert_eq!(calls[0]["outcome"]["result"], json!({"sum": 5}));
    // The isError result went back to the model as the call's error.
    assert_eq!(calls[1]["outcome"]["status"], "error");
    assert_eq!(calls[1]["outcome"]["recoverable"], true);
    assert!(
        calls[1]["outcome"]["message"]
            .as_str()
            .unwrap()
            .ends_with("this tool always fails"),
        "{steps}"
    );
    assert_eq!(steps[1]["text"], "Sum is 5; no trade.");
    servers.shutdown().await;
}
