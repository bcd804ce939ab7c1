//! Bounded model output and the loop's deadline (#20 items 5 and 6): what a model's answer can
//! make a tick execute and store is bounded, the record says what was cut, and a model that does
//! not answer within the budget ends the tick as a model error.

use std::time::{Duration, Instant};

use agent_runtime::{
    FinishReason, LanguageModel, ModelError, ModelRequest, ModelResponse, RunError, RunOptions,
    ScriptedModel, ToolCall, ToolOutcome, run_skill, run_skill_with,
};
use model::test_support::{answer, tool_call, tool_turn};
use types::{
    MAX_STEP_TEXT_CHARS, MAX_STORED_ARGUMENT_CHARS, MAX_STORED_STEPS_BYTES,
    MAX_TOOL_CALLS_PER_RESPONSE,
};

use crate::common::{ctx, skill};

const SYSTEM: &str = "You are an autonomous trading agent. (test system prompt)";

fn propose(id: usize, size: usize, reason: &str) -> ToolCall {
    tool_call(
        format!("c{id}"),
        "propose_order",
        format!(r#"{{"action":"open_long","symbol":"ETH","size_usd":{size},"reason":"{reason}"}}"#),
    )
}

#[tokio::test]
async fn a_20_mb_completion_with_2000_tool_calls_runs_8_and_stores_under_the_bound() {
    let huge = "x".repeat(20 * 1024 * 1024);
    // First call: a 10,000-character reason (refused by propose_order, back to the model);
    // then 1,999 valid proposals of growing size.
    let mut calls = vec![propose(0, 100, &"r".repeat(10_000))];
    calls.extend((1..2000).map(|i| propose(i, 100 + i, "trend")));
    let model = ScriptedModel::new(vec![
        ModelResponse {
            text: Some(huge),
            ..tool_turn(calls)
        },
        answer("done"),
    ]);
    let out = run_skill(&skill(), &ctx(), &model, SYSTEM, "## Your turn").await;

    assert_eq!(out.error, None);
    // Only the first 8 calls ran: the last successful one of them is the proposal.
    let proposal = out.proposed_action.expect("a proposal");
    assert_eq!(
        proposal.size_usd,
        Some((100 + MAX_TOOL_CALLS_PER_RESPONSE - 1).into())
    );
    let step = &out.steps[0];
    assert_eq!(step.tool_calls.len(), MAX_TOOL_CALLS_PER_RESPONSE);
    let cut = step.cut.as_ref().expect("the cut is recorded");
    assert_eq!(cut.refused_tool_calls, 2000 - 8);
    assert_eq!(
        cut.text_chars,
        (20 * 1024 * 1024 - MAX_STEP_TEXT_CHARS) as u64
    );
    assert!(cut.argument_chars >= 10_000 - MAX_STORED_ARGUMENT_CHARS as u64);
    assert_eq!(
        step.text.as_deref().map(|t| t.chars().count()),
        Some(MAX_STEP_TEXT_CHARS)
    );
    let rejected = &step.tool_calls[0];
    assert_eq!(
        rejected.arguments.chars().count(),
        MAX_STORED_ARGUMENT_CHARS
    );
    assert!(matches!(
        rejected.outcome,
        ToolOutcome::Error {
            recoverable: true,
            ..
        }
    ));
    // The model was sent back only what ran: 8 calls, the cut text.
    let second = &model.requests()[1];
    let Some(agent_runtime::Message::Assistant { text, tool_calls }) = second.messages.get(1)
    else {
        panic!("the assistant turn follows the user message");
    };
    assert_eq!(tool_calls.len(), MAX_TOOL_CALLS_PER_RESPONSE);
    assert_eq!(text.as_deref().map(str::len), Some(MAX_STEP_TEXT_CHARS));
    assert_eq!(second.messages.len(), 2 + MAX_TOOL_CALLS_PER_RESPONSE);
    // What the snapshot stores, and it says it was cut.
    let stored = serde_json::to_string(&out.steps).unwrap();
    assert!(stored.len() <= MAX_STORED_STEPS_BYTES, "{}", stored.len());
    assert!(
        stored.contains(r#""cut":{"refused_tool_calls":1992"#),
        "{}",
        &stored[..200]
    );
    // A step with nothing cut has no marker.
    assert!(out.steps[1].cut.is_none());
    assert!(
        !serde_json::to_string(&out.steps[1])
            .unwrap()
            .contains("\"cut\"")
    );
}

#[tokio::test]
async fn a_tick_of_many_large_steps_stores_at_most_the_tick_bound_and_marks_the_rest() {
    let mut s = skill();
    s.max_steps = 40;
    // Every step: a text at its bound and 8 refused proposals with 5,000-character reasons
    // (about 50 KB stored per step), until the last step stops.
    let mut script: Vec<ModelResponse> = (0..39)
        .map(|step| ModelResponse {
            text: Some("t".repeat(MAX_STEP_TEXT_CHARS)),
            ..tool_turn(
                (0..8)
                    .map(|i| propose(step * 8 + i, 100, &"r".repeat(5_000)))
                    .collect(),
            )
        })
        .collect();
    script.push(answer("done"));
    let model = ScriptedModel::new(script);
    let out = run_skill(&s, &ctx(), &model, SYSTEM, "## Your turn").await;

    assert_eq!(out.error, None);
    assert_eq!(out.steps.len(), 40, "every step ran");
    let stored = serde_json::to_string(&out.steps).unwrap();
    assert!(stored.len() <= MAX_STORED_STEPS_BYTES, "{}", stored.len());
    // The JSON the loop kept for the snapshot (each step serialised once, after its cuts) is
    // the steps' JSON, byte for byte.
    assert_eq!(
        out.steps_json.as_ref().map(types::JsonText::as_str),
        Some(stored.as_str())
    );
    let over: Vec<_> = out
        .steps
        .iter()
        .filter(|s| s.cut.as_ref().is_some_and(|c| c.over_tick_budget))
        .collect();
    assert!(!over.is_empty(), "the later steps are marked");
    for step in &over {
        assert_eq!(step.text, None);
        assert!(step.tool_calls.is_empty());
        let cut = step.cut.as_ref().unwrap();
        assert_eq!(cut.unrecorded_tool_calls, 8);
        assert!(cut.text_chars > 0 && cut.argument_chars > 0);
    }
    // The first step is stored (cut only at the per-call bound).
    assert!(!out.steps[0].cut.as_ref().unwrap().over_tick_budget);
    assert!(out.steps[0].text.is_some());
}

/// A model that never answers (a hanging provider), and remembers the deadline it was given.
struct Hanging(std::sync::Mutex<Option<Option<std::time::Instant>>>);

#[async_trait::async_trait]
impl LanguageModel for Hanging {
    fn id(&self) -> &str {
        "test/hanging"
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        *self.0.lock().unwrap() = Some(request.deadline);
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_model_that_hangs_past_the_deadline_ends_the_tick_as_a_model_error() {
    let model = Hanging(std::sync::Mutex::new(None));
    let options = RunOptions {
        deadline: Some(Duration::from_millis(150)),
        ..RunOptions::default()
    };
    let started = Instant::now();
    let out = run_skill_with(&skill(), &ctx(), &model, SYSTEM, "## Your turn", options).await;
    let took = started.elapsed();

    assert!(took >= Duration::from_millis(150), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let error = out.error.as_ref().expect("the tick failed");
    assert!(
        matches!(error, RunError::Deadline { step: 0, budget } if *budget == Duration::from_millis(150)),
        "{error:?}"
    );
    assert!(error.is_model_error());
    assert_eq!(out.model_error(), Some(error));
    assert!(
        error.to_string().starts_with("deadline exceeded at step 0"),
        "{error}"
    );
    assert_eq!(out.finish_reason, FinishReason::Error);
    assert_eq!(out.proposed_action, None);
    // The provider was told the deadline (to bound its own retries).
    let given = model
        .0
        .lock()
        .unwrap()
        .expect("called")
        .expect("a deadline");
    assert!(given > started && given <= started + Duration::from_secs(1));
}

#[tokio::test]
async fn without_a_deadline_the_request_carries_none_and_a_provider_error_is_a_model_error() {
    let model = ScriptedModel::with_results(vec![Err(ModelError::Http {
        provider: "openai".into(),
        status: 500,
        body: "boom".into(),
    })]);
    let out = run_skill(&skill(), &ctx(), &model, SYSTEM, "## Your turn").await;
    assert_eq!(model.requests()[0].deadline, None);
    let error = out.model_error().expect("a model error");
    assert!(error.to_string().contains("HTTP 500: boom"), "{error}");
}
