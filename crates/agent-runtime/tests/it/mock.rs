//! The `mock` feature: the model loop runs against a `mockall` mock of [`LanguageModel`].
#![cfg(feature = "mock")]

use std::sync::Arc;

use agent_runtime::{MockLanguageModel, run_skill};
use chrono::{TimeZone, Utc};
use model::test_support::{answer, tool_call, tool_turn};
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
        Ok(if calls == 1 {
            tool_turn(vec![tool_call(
                "1",
                "propose_order",
                r#"{"action":"close","symbol":"EURUSD","reason":"mocked"}"#,
            )])
        } else {
            answer("done")
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
