//! `run_skill` end to end with each real provider pointed at a local mock server: the same
//! proposal, steps, usage and cost as with the scripted model, and the request the provider
//! actually received.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use agent_runtime::{FinishReason, Usage, run_skill};
use chrono::{Duration, TimeZone, Utc};
use common::{env, fast};
use providers::{no_builtins, resolve_model_with};
use rust_decimal_macros::dec;
use serde_json::{Value, json};
use skill_schema::{Skill, load_skill};
use tools::{Preloaded, RunMode, ToolContext};
use types::test_support::flat_portfolio;
use types::{Bar, Interval, OrderAction};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const PROPOSAL: &str = r#"{"action":"open_long","symbol":"BTC","size_usd":1200,"leverage":2,"reason":"Reclaimed the 4h range low with funding reset","confidence":70}"#;
const SYSTEM: &str = "You are an autonomous trading agent. (test)";

fn skill() -> Skill {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/skills/btc-eth-funding-thesis.yaml");
    load_skill(&p).unwrap().skill
}

fn ctx() -> ToolContext {
    let now = Utc.with_ymd_and_hms(2026, 6, 8, 12, 0, 0).unwrap();
    let bars = |base: i64| -> Vec<Bar> {
        (1..=30)
            .map(|i| {
                let close = rust_decimal::Decimal::from(base + i * 10);
                Bar {
                    time: now - Duration::hours(31 - i),
                    open: close - dec!(5),
                    high: close + dec!(20),
                    low: close - dec!(20),
                    close,
                    volume: dec!(100),
                }
            })
            .collect()
    };
    let mut data = Preloaded::new()
        .with_bars("BTC", Interval::H1, bars(67_000))
        .with_bars("ETH", Interval::H1, bars(3_500));
    data.portfolio = Some(flat_portfolio(now, dec!(10000)));
    let d = Arc::new(data);
    ToolContext::new(
        now,
        RunMode::Trade,
        vec!["BTC".into(), "ETH".into()],
        d.clone(),
        d,
    )
}

async fn mount_in_order(server: &MockServer, route: &str, answers: Vec<Value>) {
    for answer in answers {
        Mock::given(method("POST"))
            .and(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer))
            .up_to_n_times(1)
            .mount(server)
            .await;
    }
}

fn assert_proposal(out: &agent_runtime::RunResult) {
    assert_eq!(out.error, None, "{:?}", out.error);
    assert_eq!(out.finish_reason, FinishReason::Stop);
    let p = out.proposed_action.as_ref().expect("a proposal");
    assert_eq!(p.action, OrderAction::OpenLong);
    assert_eq!(p.symbol, "BTC");
    assert_eq!(p.size_usd, Some(dec!(1200)));
    assert_eq!(p.leverage, Some(dec!(2)));
    assert_eq!(out.steps.len(), 2);
    assert_eq!(out.steps[0].tool_calls[0].name, "propose_order");
    assert!(out.steps[1].tool_calls.is_empty());
}

#[tokio::test]
async fn anthropic_over_a_mock_server() {
    let server = MockServer::start().await;
    mount_in_order(
        &server,
        "/v1/messages",
        vec![
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                "content": [
                    {"type": "text", "text": "BTC reclaimed the range low."},
                    {"type": "tool_use", "id": "toolu_1", "name": "propose_order",
                     "input": serde_json::from_str::<Value>(PROPOSAL).unwrap()}
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 1800, "output_tokens": 90,
                          "cache_read_input_tokens": 0, "cache_creation_input_tokens": 2400}
            }),
            json!({
                "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": "Proposed a 2x BTC long."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 150, "output_tokens": 12,
                          "cache_read_input_tokens": 2400, "cache_creation_input_tokens": 0}
            }),
        ],
    )
    .await;
    let env = env(&[
        ("ANTHROPIC_API_KEY", "sk-test"),
        ("ANTHROPIC_BASE_URL", &server.uri()),
    ]);
    let model =
        resolve_model_with("anthropic/claude-sonnet-4.6", &env, &no_builtins, fast()).unwrap();
    let skill = skill();
    let ctx = ctx();

    let out = run_skill(
        &skill,
        &ctx,
        model.as_ref(),
        SYSTEM,
        "## Your turn\nDecide.",
    )
    .await;

    assert_proposal(&out);
    assert_eq!(
        out.text,
        "BTC reclaimed the range low.\n\nProposed a 2x BTC long."
    );
    // input 1800 + 150; output 90 + 12; cache read 2400; cache write 2400
    assert_eq!(
        out.usage,
        Usage {
            input: 1950,
            output: 102,
            cache_read: 2400,
            cache_write: 2400
        }
    );
    // Sonnet 4.6 at $3 / $15 / $0.30 / $3.75 per Mtok:
    // 1950·3 + 102·15 + 2400·0.30 + 2400·3.75 = 5850 + 1530 + 720 + 9000 = 17100 µ$
    assert_eq!(out.cost_usd, dec!(0.0171));

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(first["system"][0]["text"], SYSTEM);
    assert_eq!(first["system"][0]["cache_control"]["type"], "ephemeral");
    let tools = first["tools"].as_array().unwrap();
    // The whitelisted tools, in the registry's canonical order.
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "propose_order",
            "get_position_risk",
            "get_funding_rate",
            "get_open_interest"
        ]
    );
    assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
    // The second call carries the tool result back.
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"][0]["type"],
        "tool_result"
    );
    assert_eq!(
        messages.last().unwrap()["content"][0]["tool_use_id"],
        "toolu_1"
    );
}

#[tokio::test]
async fn openai_over_a_mock_server() {
    let server = MockServer::start().await;
    mount_in_order(
        &server,
        "/chat/completions",
        vec![
            json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-5",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null,
                    "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "propose_order", "arguments": PROPOSAL}}]}}],
                "usage": {"prompt_tokens": 2000, "completion_tokens": 80,
                          "prompt_tokens_details": {"cached_tokens": 1500}}
            }),
            json!({
                "id": "chatcmpl-2", "object": "chat.completion", "created": 2, "model": "gpt-5",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": "Proposed a 2x BTC long."}}],
                "usage": {"prompt_tokens": 2100, "completion_tokens": 10,
                          "prompt_tokens_details": {"cached_tokens": 2000}}
            }),
        ],
    )
    .await;
    let env = env(&[
        ("OPENAI_API_KEY", "sk-test"),
        ("OPENAI_BASE_URL", &server.uri()),
    ]);
    let model = resolve_model_with("openai/gpt-5", &env, &no_builtins, fast()).unwrap();
    let skill = skill();
    let ctx = ctx();

    let out = run_skill(
        &skill,
        &ctx,
        model.as_ref(),
        SYSTEM,
        "## Your turn\nDecide.",
    )
    .await;

    assert_proposal(&out);
    // input (2000 − 1500) + (2100 − 2000) = 600; output 90; cache read 3500
    assert_eq!(
        out.usage,
        Usage {
            input: 600,
            output: 90,
            cache_read: 3500,
            cache_write: 0
        }
    );
    // gpt-5 at $1.25 / $10 / $0.125 per Mtok: 600·1.25 + 90·10 + 3500·0.125 = 750 + 900 + 437.5
    // = 2087.5 µ$
    assert_eq!(out.cost_usd, dec!(0.0020875));

    let requests = server.received_requests().await.unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(first["model"], "gpt-5");
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(first["messages"][0]["content"], SYSTEM);
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_1");
}
