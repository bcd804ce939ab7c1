//! The tick's deadline reaches the provider (#20 item 6): no attempt waits past it, and a
//! `retry-after` longer than the time left ends the call at once instead of sleeping through it.

use crate::common;

use std::time::{Duration, Instant};

use agent_runtime::{RunError, RunOptions, run_skill_with};
use common::hello;
use model::{LanguageModel, ModelError};
use providers::{
    MaxTokensField, OpenAiCompatConfig, OpenAiCompatible, RetryPolicy, TransportOptions,
};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Patient settings: 30 s per attempt, 4 attempts, waits of up to 120 s (a server's hint
/// included) — only the deadline can cut a call short.
fn patient() -> TransportOptions {
    TransportOptions {
        timeout: Duration::from_secs(30),
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(120),
        },
    }
}

fn model(server: &MockServer) -> OpenAiCompatible {
    OpenAiCompatible::new(OpenAiCompatConfig {
        provider: "openai".into(),
        model: "gpt-5".into(),
        base_url: format!("{}/v1", server.uri()),
        api_key: "sk-test".into(),
        max_tokens_field: MaxTokensField::MaxCompletionTokens,
        transport: patient(),
    })
    .unwrap()
}

fn answer() -> serde_json::Value {
    json!({
        "choices": [{"message": {"role": "assistant", "content": "Hold."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1},
    })
}

#[tokio::test]
async fn a_retry_after_beyond_the_time_left_ends_the_call_instead_of_sleeping() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "60"))
        .mount(&server)
        .await;
    let mut request = hello();
    let started = Instant::now();
    request.deadline = Some(started + Duration::from_secs(2));
    let err = model(&server).generate(&request).await.unwrap_err();

    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let ModelError::Deadline { provider, detail } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(provider, "openai");
    assert!(
        detail.starts_with("retry-after of 60000 ms after attempt 1 (openai: HTTP 429"),
        "{detail}"
    );
    assert!(
        err.to_string().starts_with("openai: deadline exceeded: "),
        "{err}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_retry_after_within_the_time_left_is_still_honoured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after-ms", "50"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer()))
        .with_priority(2)
        .mount(&server)
        .await;
    let mut request = hello();
    request.deadline = Some(Instant::now() + Duration::from_secs(5));
    let out = model(&server).generate(&request).await.unwrap();
    assert_eq!(out.text.as_deref(), Some("Hold."));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_server_slower_than_the_deadline_is_given_up_at_the_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(answer())
                .set_delay(Duration::from_secs(10)),
        )
        .mount(&server)
        .await;
    let mut request = hello();
    let started = Instant::now();
    request.deadline = Some(started + Duration::from_millis(300));
    let err = model(&server).generate(&request).await.unwrap_err();

    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(matches!(err, ModelError::Deadline { .. }), "{err:?}");
    // One attempt: there was no time left for a second.
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_hanging_provider_ends_the_tick_as_a_model_error_at_the_budget() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(answer())
                .set_delay(Duration::from_secs(10)),
        )
        .mount(&server)
        .await;
    let skill_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/skills/btc-eth-funding-thesis.yaml");
    let skill = skill_schema::load_skill(&skill_path).unwrap().skill;
    let data = std::sync::Arc::new(tools::Preloaded::new());
    let ctx = tools::ToolContext::new(
        chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 6, 8, 12, 0, 0).unwrap(),
        tools::RunMode::Trade,
        skill.context.symbols.clone(),
        data.clone(),
        data,
    );
    let options = RunOptions {
        deadline: Some(Duration::from_millis(400)),
        ..RunOptions::default()
    };
    let started = Instant::now();
    let out = run_skill_with(
        &skill,
        &ctx,
        &model(&server),
        "system",
        "## Your turn",
        options,
    )
    .await;
    let took = started.elapsed();

    assert!(took < Duration::from_secs(3), "{took:?}");
    let error = out.model_error().expect("a model error");
    assert!(
        matches!(
            error,
            RunError::Deadline { step: 0, .. }
                | RunError::Model {
                    step: 0,
                    source: ModelError::Deadline { .. }
                }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("deadline exceeded"), "{error}");
    assert_eq!(out.proposed_action, None);
}
