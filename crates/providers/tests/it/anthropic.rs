//! The Anthropic provider against a wiremock server speaking the Messages API wire format.
//! No test touches the internet or the process environment.

use crate::common;

use std::time::Duration;

use common::{conversation, env, fast, hello};
use model::{FinishReason, LanguageModel, Message, ModelError, ToolCall, Usage};
use providers::{
    Anthropic, AnthropicConfig, RetryPolicy, TransportOptions, no_builtins, resolve_model_with,
};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn model(server: &MockServer, options: TransportOptions) -> Anthropic {
    Anthropic::new(AnthropicConfig {
        model: "claude-sonnet-4-5".into(),
        base_url: format!("{}/", server.uri()),
        api_key: "sk-ant-test".into(),
        transport: options,
    })
    .unwrap()
}

/// A plain text answer in the Messages API wire format.
fn text_answer() -> Value {
    json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "Hold."}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {
            "input_tokens": 12,
            "output_tokens": 3,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    })
}

async fn mount_ok(server: &MockServer, answer: Value) {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(server)
        .await;
}

async fn request_count(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

fn rate_limited() -> ResponseTemplate {
    ResponseTemplate::new(429).set_body_json(json!({
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit."},
    }))
}

#[tokio::test]
async fn sends_the_exact_messages_request_with_the_cached_prefix_marked() {
    let server = MockServer::start().await;
    mount_ok(&server, text_answer()).await;

    model(&server, fast())
        .generate(&conversation())
        .await
        .unwrap();

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.url.path(), "/v1/messages");
    assert_eq!(sent.headers["x-api-key"], "sk-ant-test");
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    assert_eq!(sent.headers["content-type"], "application/json");
    assert!(sent.headers.get("authorization").is_none());
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": [
                {"type": "text", "text": "You trade BTC.", "cache_control": {"type": "ephemeral"}},
            ],
            "tools": [
                {
                    "name": "get_bars",
                    "description": "Recent OHLCV bars for a symbol.",
                    "input_schema": {
                        "type": "object",
                        "properties": {"symbol": {"type": "string"}, "limit": {"type": "integer"}},
                        "required": ["symbol"],
                    },
                },
                {
                    "name": "propose_order",
                    "description": "Propose one order.",
                    "input_schema": {
                        "type": "object",
                        "properties": {"side": {"type": "string", "enum": ["buy", "sell"]}},
                        "required": ["side"],
                    },
                    // Only the LAST tool carries the breakpoint.
                    "cache_control": {"type": "ephemeral"},
                },
            ],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "Tick at 2026-01-01T00:00:00Z."},
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Looking at the bars."},
                    {"type": "tool_use", "id": "call_1", "name": "get_bars",
                     "input": {"symbol": "BTC", "limit": 3}},
                    {"type": "tool_use", "id": "call_2", "name": "get_bars",
                     "input": {"symbol": "ETH"}},
                ]},
                // Both results and the next user text in ONE user message, results first.
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1",
                     "content": "close 100.5, 101.25, 99.75"},
                    {"type": "tool_result", "tool_use_id": "call_2", "content": "close 3000"},
                    {"type": "text", "text": "Decide."},
                ]},
            ],
        })
    );
}

#[tokio::test]
async fn malformed_arguments_in_history_are_sent_back_wrapped() {
    let server = MockServer::start().await;
    mount_ok(&server, text_answer()).await;
    let mut request = hello();
    request.messages.push(Message::Assistant {
        text: None,
        tool_calls: vec![ToolCall {
            id: "toolu_bad".into(),
            name: "propose_order".into(),
            arguments: r#"{"side": "buy", "#.into(),
        }],
    });
    request.messages.push(Message::Tool {
        call_id: "toolu_bad".into(),
        name: "propose_order".into(),
        content: "error: arguments are not valid JSON".into(),
    });

    model(&server, fast()).generate(&request).await.unwrap();

    let body: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_bad", "name": "propose_order",
             "input": {"_raw_arguments": "{\"side\": \"buy\", "}},
        ]})
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 3);
    // No tools: no tools key, and the system block alone carries the breakpoint.
    assert!(body.get("tools").is_none());
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
    );
}

#[tokio::test]
async fn parses_text_multiple_tool_uses_and_cache_usage() {
    let server = MockServer::start().await;
    mount_ok(
        &server,
        json!({
            "id": "msg_02",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [
                {"type": "text", "text": "I'll check both."},
                {"type": "tool_use", "id": "toolu_01A", "name": "get_bars",
                 "input": {"symbol": "BTC", "limit": 3}},
                {"type": "tool_use", "id": "toolu_01B", "name": "get_bars",
                 "input": {"symbol": "ETH"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": {
                "input_tokens": 21,
                "output_tokens": 95,
                "cache_creation_input_tokens": 1800,
                "cache_read_input_tokens": 2400,
            },
        }),
    )
    .await;

    let response = model(&server, fast()).generate(&hello()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("I'll check both."));
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall {
                id: "toolu_01A".into(),
                name: "get_bars".into(),
                // serde_json without preserve_order writes object keys sorted.
                arguments: r#"{"limit":3,"symbol":"BTC"}"#.into(),
            },
            ToolCall {
                id: "toolu_01B".into(),
                name: "get_bars".into(),
                arguments: r#"{"symbol":"ETH"}"#.into(),
            },
        ]
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    // Anthropic's input_tokens already excludes cache reads and writes: mapped one to one.
    assert_eq!(
        response.usage,
        Usage {
            input: 21,
            output: 95,
            cache_read: 2400,
            cache_write: 1800,
        }
    );
}

#[tokio::test]
async fn stop_reasons_map_to_the_runtime_enum() {
    let table = [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("max_tokens", FinishReason::Length),
        ("tool_use", FinishReason::ToolCalls),
        ("refusal", FinishReason::Error),
        ("pause_turn", FinishReason::Stop),
    ];
    for (reason, expected) in table {
        let server = MockServer::start().await;
        let mut answer = text_answer();
        answer["stop_reason"] = json!(reason);
        mount_ok(&server, answer).await;
        let response = model(&server, fast()).generate(&hello()).await.unwrap();
        assert_eq!(response.finish, expected, "{reason}");
    }
}

#[tokio::test]
async fn unknown_blocks_are_ignored_and_text_blocks_concatenated() {
    let server = MockServer::start().await;
    let mut answer = text_answer();
    answer["content"] = json!([
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Part one. "},
        {"type": "text", "text": "Part two."},
    ]);
    mount_ok(&server, answer).await;

    let response = model(&server, fast()).generate(&hello()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("Part one. Part two."));
    assert!(response.tool_calls.is_empty());
}

#[tokio::test]
async fn rate_limit_is_retried_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(rate_limited().insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    mount_ok(&server, text_answer()).await;

    let response = model(&server, fast()).generate(&hello()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("Hold."));
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn overloaded_exhausts_the_attempts_and_reports_status_and_body() {
    let server = MockServer::start().await;
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(529).set_body_string(body))
        .mount(&server)
        .await;
    let options = TransportOptions {
        retry: RetryPolicy {
            max_attempts: 4,
            ..fast().retry
        },
        ..fast()
    };

    let err = model(&server, options)
        .generate(&hello())
        .await
        .unwrap_err();

    assert_eq!(
        err,
        ModelError::Http {
            provider: "anthropic".into(),
            status: 529,
            body: body.into(),
        }
    );
    assert_eq!(request_count(&server).await, 4);
}

#[tokio::test]
async fn slow_server_times_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(text_answer())
                .set_delay(Duration::from_secs(3)),
        )
        .mount(&server)
        .await;
    let options = TransportOptions {
        timeout: Duration::from_millis(150),
        retry: RetryPolicy {
            max_attempts: 1,
            ..fast().retry
        },
    };

    let err = model(&server, options)
        .generate(&hello())
        .await
        .unwrap_err();

    assert_eq!(
        err,
        ModelError::Timeout {
            provider: "anthropic".into(),
            seconds: 1,
        }
    );
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn error_body_in_a_200_is_a_decode_error() {
    let server = MockServer::start().await;
    mount_ok(
        &server,
        json!({"type": "error", "error": {"type": "api_error", "message": "Internal"}}),
    )
    .await;

    let err = model(&server, fast()).generate(&hello()).await.unwrap_err();

    match err {
        ModelError::Decode { provider, message } => {
            assert_eq!(provider, "anthropic");
            assert!(message.contains("api_error"), "{message}");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
}

#[tokio::test]
async fn resolved_from_the_environment() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "from-env"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer()))
        .mount(&server)
        .await;
    let base = server.uri();
    let lookup = env(&[
        ("ANTHROPIC_API_KEY", "from-env"),
        ("ANTHROPIC_BASE_URL", &base),
    ]);

    let model =
        resolve_model_with("anthropic/claude-haiku-4-5", &lookup, &no_builtins, fast()).unwrap();
    let response = model.generate(&hello()).await.unwrap();

    assert_eq!(model.id(), "anthropic/claude-haiku-4-5");
    assert_eq!(response.text.as_deref(), Some("Hold."));
    let body: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(body["model"], "claude-haiku-4-5");
}

#[test]
fn default_base_url_is_anthropic() {
    let lookup = env(&[("ANTHROPIC_API_KEY", "k")]);
    let config = AnthropicConfig::from_env("claude-opus-4-1", &lookup, fast()).unwrap();
    assert_eq!(config.base_url, "https://api.anthropic.com");
    assert_eq!(config.model, "claude-opus-4-1");
}

#[tokio::test]
async fn an_implausible_token_count_is_a_decode_error_not_a_stored_number() {
    let server = MockServer::start().await;
    let mut answer = text_answer();
    // 2^63: one past i64::MAX, which used to abort a whole backtest when the tick was stored.
    answer["usage"]["input_tokens"] = json!(9_223_372_036_854_775_808_u64);
    mount_ok(&server, answer).await;
    let err = model(&server, fast())
        .generate(&conversation())
        .await
        .unwrap_err();
    let message = common::decode_message(err);
    assert!(
        message.contains("9223372036854775808 input tokens"),
        "{message}"
    );
}
