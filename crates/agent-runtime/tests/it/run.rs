//! The model loop with the scripted test double over the recorded context.

use crate::common;

use agent_runtime::{
    FinishReason, Message, ModelError, ModelResponse, RunError, ScriptedModel, ToolCall,
    ToolOutcome, Usage, assemble_context, run_skill,
};
use common::{ctx, ctx_from, data, last_decision, skill};
use model::test_support::{answer, tool_call as call, tool_turn};
use rust_decimal_macros::dec;
use tools::RunMode;
use types::{OrderAction, ProposedAction};

const SYSTEM: &str = "You are an autonomous trading agent. (test system prompt)";

fn tools_turn(text: Option<&str>, calls: Vec<ToolCall>, usage: Usage) -> ModelResponse {
    ModelResponse {
        text: text.map(str::to_owned),
        usage,
        ..tool_turn(calls)
    }
}

fn final_turn(text: &str, usage: Usage) -> ModelResponse {
    ModelResponse {
        usage,
        ..answer(text)
    }
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    Usage {
        input,
        output,
        cache_read,
        cache_write,
    }
}

const SHORT_ETH: &str = r#"{"action":"open_short","symbol":"ETH","size_usd":1500,"leverage":2,"reason":"Funding at a three-week high while price fails at the 4h range top","confidence":64,"stop":3700,"target":3540}"#;

fn short_eth() -> ProposedAction {
    ProposedAction {
        action: OrderAction::OpenShort,
        symbol: "ETH".into(),
        size_usd: Some(dec!(1500)),
        leverage: Some(dec!(2)),
        reason: "Funding at a three-week high while price fails at the 4h range top".into(),
        confidence: Some(64),
        stop: Some(dec!(3700)),
        target: Some(dec!(3540)),
    }
}

#[tokio::test]
async fn a_recorded_tick_yields_the_proposal_steps_usage_and_cost() {
    let skill = skill();
    let ctx = ctx();
    let user = assemble_context(&skill, &ctx, Some(&last_decision()))
        .unwrap()
        .text;
    let model = ScriptedModel::new(vec![
        tools_turn(
            Some("Checking ETH funding before fading."),
            vec![call("c1", "get_funding_rate", r#"{"symbol":"ETH"}"#)],
            usage(3200, 85, 0, 2900),
        ),
        tools_turn(
            None,
            vec![call("c2", "propose_order", SHORT_ETH)],
            usage(450, 120, 2900, 0),
        ),
        final_turn("Proposed a small ETH short.", usage(300, 20, 2900, 0)),
    ])
    .with_id("anthropic/claude-sonnet-4.6");

    let out = run_skill(&skill, &ctx, &model, SYSTEM, &user).await;

    assert_eq!(out.error, None);
    assert_eq!(out.finish_reason, FinishReason::Stop);
    assert_eq!(out.proposed_action, Some(short_eth()));
    assert_eq!(
        out.text,
        "Checking ETH funding before fading.\n\nProposed a small ETH short."
    );
    assert_eq!(out.steps.len(), 3);
    assert_eq!(out.steps[0].tool_calls[0].name, "get_funding_rate");
    assert!(matches!(&out.steps[0].tool_calls[0].outcome,
        ToolOutcome::Ok { result } if result.to_value().unwrap()["available"] == false));
    assert_eq!(out.steps[1].tool_calls[0].arguments, SHORT_ETH);
    assert!(out.steps[2].tool_calls.is_empty());
    // input 3200 + 450 + 300 = 3950; output 85 + 120 + 20 = 225; cache read 2·2900 = 5800;
    // cache write 2900.
    assert_eq!(out.usage, usage(3950, 225, 5800, 2900));
    // Sonnet 4.6 at $3 / $15 / $0.30 / $3.75 per Mtok:
    // 3950·3 + 225·15 + 5800·0.30 + 2900·3.75 = 11850 + 3375 + 1740 + 10875 = 27840 µ$ = $0.02784
    assert_eq!(out.cost_usd, dec!(0.02784));
    assert!(out.cost_known);

    // What the model was sent.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].model, "claude-sonnet-4.6");
    assert_eq!(requests[0].system, SYSTEM);
    assert_eq!(
        requests[0].messages,
        vec![Message::User {
            content: user.clone()
        }]
    );
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    // The skill lists every built-in but the (opt-in) recall tools.
    assert_eq!(names, skill_schema::BUILTIN_TOOLS[..5].to_vec());
    assert_eq!(requests[2].messages.len(), 5); // user, assistant, tool, assistant, tool
    let Message::Tool {
        call_id, content, ..
    } = &requests[2].messages[4]
    else {
        panic!()
    };
    assert_eq!(call_id, "c2");
    assert!(content.contains("\"status\":\"recorded\""));
}

#[tokio::test]
async fn invalid_arguments_go_back_to_the_model_and_a_corrected_call_succeeds() {
    let model = ScriptedModel::new(vec![
        tools_turn(
            None,
            vec![call(
                "c1",
                "propose_order",
                r#"{"action":"open_short","symbol":"ETH","leverage":2,"reason":"fade"}"#,
            )],
            Usage::default(),
        ),
        tools_turn(
            None,
            vec![call("c2", "propose_order", SHORT_ETH)],
            Usage::default(),
        ),
        final_turn("Fixed the size.", Usage::default()),
    ]);
    let out = run_skill(&skill(), &ctx(), &model, SYSTEM, "context").await;
    assert_eq!(out.finish_reason, FinishReason::Stop);
    assert_eq!(out.proposed_action, Some(short_eth()));
    let ToolOutcome::Error {
        message,
        recoverable,
    } = &out.steps[0].tool_calls[0].outcome
    else {
        panic!("{:?}", out.steps[0]);
    };
    assert!(recoverable);
    assert_eq!(
        message,
        "propose_order: invalid arguments: size_usd: required for open_short"
    );
    // The error went back as the tool's result.
    let Message::Tool { content, .. } = &model.requests()[1].messages[2] else {
        panic!()
    };
    assert_eq!(
        content,
        r#"{"error":"propose_order: invalid arguments: size_usd: required for open_short"}"#
    );
    assert_eq!(out.cost_usd, dec!(0));
}

#[tokio::test]
async fn the_last_successful_proposal_wins() {
    let no_op = r#"{"action":"no_op","symbol":"BTC","reason":"wait"}"#;
    let model = ScriptedModel::new(vec![
        tools_turn(
            None,
            vec![
                call("c1", "propose_order", SHORT_ETH),
                call("c2", "propose_order", no_op),
            ],
            Usage::default(),
        ),
        final_turn("done", Usage::default()),
    ]);
    let out = run_skill(&skill(), &ctx(), &model, SYSTEM, "context").await;
    assert_eq!(out.proposed_action.unwrap().action, OrderAction::NoOp);
}

async fn ends_in_error(script: Vec<Result<ModelResponse, ModelError>>) -> agent_runtime::RunResult {
    let model = ScriptedModel::with_results(script);
    let out = run_skill(&skill(), &ctx(), &model, SYSTEM, "context").await;
    assert_eq!(out.finish_reason, FinishReason::Error);
    assert_eq!(out.proposed_action, None, "an errored tick never proposes");
    out
}

#[tokio::test]
async fn malformed_json_ends_the_tick_without_a_proposal() {
    // A valid proposal first: the error later in the tick still leaves no proposal.
    let out = ends_in_error(vec![
        Ok(tools_turn(
            None,
            vec![call("c1", "propose_order", SHORT_ETH)],
            usage(10, 5, 0, 0),
        )),
        Ok(tools_turn(
            None,
            vec![call("c2", "propose_order", r#"{"action":"open_long","#)],
            usage(10, 5, 0, 0),
        )),
    ])
    .await;
    let Some(RunError::MalformedArguments {
        step,
        tool,
        call_id,
        ..
    }) = &out.error
    else {
        panic!("{:?}", out.error)
    };
    assert_eq!(
        (*step, tool.as_str(), call_id.as_str()),
        (1, "propose_order", "c2")
    );
    assert_eq!(out.steps.len(), 2);
    assert!(matches!(
        out.steps[1].tool_calls[0].outcome,
        ToolOutcome::Error {
            recoverable: false,
            ..
        }
    ));
    assert_eq!(
        out.usage,
        usage(20, 10, 0, 0),
        "tokens spent before the error are still counted"
    );
}

#[tokio::test]
async fn an_unknown_or_unwhitelisted_tool_ends_the_tick() {
    let out = ends_in_error(vec![Ok(tools_turn(
        None,
        vec![call("c1", "place_market_order", "{}")],
        Usage::default(),
    ))])
    .await;
    assert!(
        matches!(&out.error, Some(RunError::UnknownTool { tool, .. }) if tool == "place_market_order")
    );

    // get_open_interest exists but this skill does not whitelist it.
    let mut s = skill();
    s.tools.built_in = vec!["propose_order".into()];
    let model = ScriptedModel::new(vec![tools_turn(
        None,
        vec![call("c1", "get_open_interest", r#"{"symbol":"BTC"}"#)],
        Usage::default(),
    )]);
    let out = run_skill(&s, &ctx(), &model, SYSTEM, "context").await;
    assert_eq!(out.finish_reason, FinishReason::Error);
    assert!(
        out.error
            .unwrap()
            .to_string()
            .contains("not one of its tools (propose_order)")
    );
}

#[tokio::test]
async fn a_provider_error_or_an_exhausted_script_ends_the_tick() {
    let out = ends_in_error(vec![Err(ModelError::Http {
        provider: "anthropic".into(),
        status: 529,
        body: "overloaded".into(),
    })])
    .await;
    assert_eq!(
        out.error.unwrap().to_string(),
        "model call failed at step 0: anthropic: HTTP 529: overloaded"
    );

    let out = ends_in_error(vec![Ok(tools_turn(
        None,
        vec![call("c1", "propose_order", SHORT_ETH)],
        Usage::default(),
    ))])
    .await;
    let msg = out.error.unwrap().to_string();
    assert!(
        msg.contains("script is exhausted: all 1 scripted responses were played"),
        "{msg}"
    );
}

#[tokio::test]
async fn read_only_mode_refuses_propose_order() {
    let model = ScriptedModel::new(vec![
        tools_turn(
            None,
            vec![call("c1", "propose_order", SHORT_ETH)],
            Usage::default(),
        ),
        final_turn("Understood, read-only.", Usage::default()),
    ]);
    let ctx = ctx_from(data(), RunMode::ReadOnly);
    let out = run_skill(&skill(), &ctx, &model, SYSTEM, "context").await;
    assert_eq!(out.proposed_action, None);
    assert_eq!(out.finish_reason, FinishReason::Stop);
    let ToolOutcome::Error { message, .. } = &out.steps[0].tool_calls[0].outcome else {
        panic!()
    };
    assert!(message.contains("read-only"), "{message}");
}

#[tokio::test]
async fn max_steps_bounds_the_loop() {
    let mut s = skill();
    s.max_steps = 2;
    let risk = || {
        tools_turn(
            None,
            vec![call("c", "get_position_risk", "")],
            Usage::default(),
        )
    };
    let model = ScriptedModel::new(vec![
        tools_turn(
            None,
            vec![call("c0", "propose_order", SHORT_ETH)],
            Usage::default(),
        ),
        risk(),
        risk(),
    ]);
    let out = run_skill(&s, &ctx(), &model, SYSTEM, "context").await;
    // Two model calls, their tools ran, and the loop stopped with tools still wanted.
    assert_eq!(model.requests().len(), 2);
    assert_eq!(model.remaining(), 1);
    assert_eq!(out.finish_reason, FinishReason::ToolCalls);
    assert_eq!(out.proposed_action, Some(short_eth()));
    // Empty argument text means "no arguments".
    assert!(matches!(
        out.steps[1].tool_calls[0].outcome,
        ToolOutcome::Ok { .. }
    ));
}

#[tokio::test]
async fn an_mcp_server_that_was_not_started_ends_the_tick_before_any_model_call() {
    let mut s = skill();
    s.tools.mcp_servers = vec![skill_schema::McpServer {
        name: "charts".into(),
        command: "charts-mcp".into(),
        args: vec![],
        env: std::collections::BTreeMap::new(),
        allowed_tools: vec![],
        timeout_ms: skill_schema::DEFAULT_MCP_TIMEOUT_MS,
    }];
    let model = ScriptedModel::new(vec![]);
    let out = run_skill(&s, &ctx(), &model, SYSTEM, "context").await;
    assert_eq!(out.finish_reason, FinishReason::Error);
    assert!(matches!(out.error, Some(RunError::Tools(_))));
    assert!(model.requests().is_empty());
}
