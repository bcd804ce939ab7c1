//! The `mock` feature: the model loop runs against a `mockall` mock of [`LanguageModel`].
#![cfg(feature = "mock")]

use std::sync::Arc;

use agent_runtime::{FinishReason, MockLanguageModel, ModelResponse, ToolCall, Usage, run_skill};
use chrono::{TimeZone, Utc};
use skill_schema::{Format, parse_skill};
use tools::{Preloaded, RunMode, ToolContext};

const SKILL: &str = include_str!("../../../../examples/skills/eurusd-sma-cross.yaml");

#[tokio::test]
async fn the_loop_takes_the_mocked_proposal() {
    let skill = parse_skill(SKILL, Format::Yaml).unwrap().skill;
    let mut model = MockLanguageModel::new();
    model.expect_id().return_const("mock/model".to_owned());
    let mut calls = 0;
    model.expect_generate().times(2).returning(move |_| {
        calls += 1;
        let tool_calls = if calls == 1 {
            vec![ToolCall {
                id: "1".into(),
                name: "propose_order".into(),
                arguments: r#"{"action":"close","symbol":"EURUSD","reason":"mocked"}"#.into(),
            }]
        } else {
            vec![]
        };
        let finish = if calls == 1 {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        Ok(ModelResponse {
            text: None,
            tool_calls,
            finish,
            usage: Usage::default(),
        })
    });
    let now = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
    let data = Arc::new(Preloaded::new());
    let ctx = ToolContext::new(
        now,
        RunMode::Trade,
        vec!["EURUSD".into()],
        data.clone(),
        data,
    );
    let run = run_skill(&skill, &ctx, &model, "system", "user").await;
    assert_eq!(run.proposed_action.unwrap().reason, "mocked");
}
