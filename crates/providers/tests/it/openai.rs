//! The OpenAI-compatible provider against a wiremock server speaking the chat-completions wire
//! format. No test touches the internet or the process environment.

use crate::common;

use std::time::{Duration, Instant};

use common::{conversation, env, fast, hello};
use model::{FinishReason, LanguageModel, ModelError, ToolCall, Usage};
use providers::{
    MaxTokensField, OpenAiCompatConfig, OpenAiCompatible, OpenAiFlavor, RetryPolicy,
    TransportOptions, no_builtins, resolve_model_with,
};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn model(server: &MockServer, options: TransportOptions) -> OpenAiCompatible {
    OpenAiCompatible::new(OpenAiCompatConfig {
        provider: "openai".into(),
        model: "gpt-5".into(),
        base_url: format!("{}/v1/", server.uri()),
        api_key: "sk-test".into(),
        max_tokens_field: MaxTokensField::MaxCompletionTokens,
        transport: options,
    })
    .unwrap()
}

/// A plain text answer in OpenAI's wire format.
fn text_answer() -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": "gpt-5-2025-08-07",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": "Hold.", "refusal": null},
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": 2,
            "total_tokens": 52,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    })
}

async fn mount_ok(server: &MockServer, answer: Value) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(server)
        .await;
}

async fn request_count(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

#[tokio::test]
async fn sends_the_exact_chat_completions_request() {
    let server = MockServer::start().await;
    mount_ok(&server, text_answer()).await;

    model(&server, fast())
        .generate(&conversation())
        .await
        .unwrap();

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.url.path(), "/v1/chat/completions", "no double slash");
    assert_eq!(sent.headers["authorization"], "Bearer sk-test");
    assert_eq!(sent.headers["content-type"], "application/json");
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "gpt-5",
            "max_completion_tokens": 1024,
            "messages": [
                {"role": "system", "content": "You trade BTC."},
                {"role": "user", "content": "Tick at 2026-01-01T00:00:00Z."},
                {"role": "assistant", "content": "Looking at the bars.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_bars", "arguments": "{\"symbol\":\"BTC\",\"limit\":3}"}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "get_bars", "arguments": "{\"symbol\":\"ETH\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "close 100.5, 101.25, 99.75"},
                {"role": "tool", "tool_call_id": "call_2", "content": "close 3000"},
                {"role": "user", "content": "Decide."},
            ],
            "tools": [
                {"type": "function", "function": {
                    "name": "get_bars",
                    "description": "Recent OHLCV bars for a symbol.",
                    "parameters": {
                        "type": "object",
                        "properties": {"symbol": {"type": "string"}, "limit": {"type": "integer"}},
                        "required": ["symbol"],
                    },
                }},
                {"type": "function", "function": {
                    "name": "propose_order",
                    "description": "Propose one order.",
                    "parameters": {
                        "type": "object",
                        "properties": {"side": {"type": "string", "enum": ["buy", "sell"]}},
                        "required": ["side"],
                    },
                }},
            ],
        })
    );
}

#[tokio::test]
async fn call_only_assistant_turn_sends_null_content_and_no_tools_key_when_empty() {
    let server = MockServer::start().await;
    mount_ok(&server, text_answer()).await;
    let mut request = hello();
    request.system = String::new();
    request.messages.push(model::Message::Assistant {
        text: None,
        tool_calls: vec![ToolCall {
            id: "c".into(),
            name: "n".into(),
            arguments: "{}".into(),
        }],
    });
    request.messages.push(model::Message::Assistant {
        text: Some("plain".into()),
        tool_calls: vec![],
    });

    model(&server, fast()).generate(&request).await.unwrap();

    let body: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "gpt-5",
            "max_completion_tokens": 16,
            "messages": [
                // Empty system prompt: no system message.
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "n", "arguments": "{}"}},
                ]},
                // No calls: no tool_calls key (OpenAI rejects an empty array).
                {"role": "assistant", "content": "plain"},
            ],
        })
    );
}

#[tokio::test]
async fn parses_text_multiple_tool_calls_and_cached_usage() {
    let server = MockServer::start().await;
    mount_ok(
        &server,
        json!({
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "created": 1_767_225_600,
            "model": "gpt-5",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Checking two markets.",
                    "tool_calls": [
                        {"id": "call_a", "type": "function",
                         "function": {"name": "get_bars", "arguments": "{\"symbol\":\"BTC\"}"}},
                        {"id": "call_b", "type": "function",
                         "function": {"name": "get_bars", "arguments": "{\"symbol\":\"ETH\"}"}},
                    ],
                },
                "finish_reason": "tool_calls",
            }],
            "usage": {
                "prompt_tokens": 2006,
                "completion_tokens": 300,
                "total_tokens": 2306,
                "prompt_tokens_details": {"cached_tokens": 1920},
            },
        }),
    )
    .await;

    let response = model(&server, fast()).generate(&hello()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("Checking two markets."));
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall {
                id: "call_a".into(),
                name: "get_bars".into(),
                arguments: r#"{"symbol":"BTC"}"#.into(),
            },
            ToolCall {
                id: "call_b".into(),
                name: "get_bars".into(),
                arguments: r#"{"symbol":"ETH"}"#.into(),
            },
        ]
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    // input = prompt − cached = 2006 − 1920 = 86; cache_read = 1920.
    assert_eq!(
        response.usage,
        Usage {
            input: 86,
            output: 300,
            cache_read: 1920,
            cache_write: 0,
        }
    );
}

#[tokio::test]
async fn openrouter_cache_writes_are_split_out_of_input() {
    let server = MockServer::start().await;
    let mut answer = text_answer();
    answer["usage"] = json!({
        "prompt_tokens": 194,
        "completion_tokens": 2,
        "total_tokens": 196,
        "prompt_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 100},
    });
    mount_ok(&server, answer).await;

    let response = model(&server, fast()).generate(&hello()).await.unwrap();

    // input = 194 − 40 read − 100 written = 54.
    assert_eq!(
        response.usage,
        Usage {
            input: 54,
            output: 2,
            cache_read: 40,
            cache_write: 100,
        }
    );
}

#[tokio::test]
async fn finish_reasons_map_to_the_runtime_enum() {
    // (finish_reason, has tool calls, expected)
    let table = [
        (json!("stop"), false, FinishReason::Stop),
        (json!("length"), false, FinishReason::Length),
        (json!("tool_calls"), true, FinishReason::ToolCalls),
        (json!("function_call"), true, FinishReason::ToolCalls),
        (json!("content_filter"), false, FinishReason::Error),
        // Local servers that say "stop" after a tool call.
        (json!("stop"), true, FinishReason::ToolCalls),
        (Value::Null, false, FinishReason::Stop),
        (json!("something_new"), false, FinishReason::Stop),
    ];
    for (reason, with_calls, expected) in table {
        let server = MockServer::start().await;
        let mut answer = text_answer();
        answer["choices"][0]["finish_reason"] = reason.clone();
        if with_calls {
            answer["choices"][0]["message"]["tool_calls"] = json!([
                {"id": "c1", "type": "function", "function": {"name": "n", "arguments": "{}"}},
            ]);
        }
        mount_ok(&server, answer).await;
        let response = model(&server, fast()).generate(&hello()).await.unwrap();
        assert_eq!(
            response.finish, expected,
            "{reason} with calls: {with_calls}"
        );
    }
}

#[tokio::test]
async fn malformed_tool_call_arguments_come_back_untouched() {
    let server = MockServer::start().await;
    let mut answer = text_answer();
    answer["choices"][0]["message"] = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{"id": "call_x", "type": "function",
                        "function": {"name": "propose_order", "arguments": "{\"side\": \"buy\", "}}],
    });
    answer["choices"][0]["finish_reason"] = json!("tool_calls");
    mount_ok(&server, answer).await;

    let response = model(&server, fast()).generate(&hello()).await.unwrap();

    assert_eq!(response.text, None);
    assert_eq!(response.tool_calls[0].arguments, r#"{"side": "buy", "#);
}

#[tokio::test]
async fn lenient_servers_object_arguments_missing_ids_and_content_parts() {
    let server = MockServer::start().await;
    let mut answer = text_answer();
    answer["choices"][0]["message"] = json!({
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "tool_calls": [{"function": {"name": "get_bars", "arguments": {"symbol": "BTC"}}}],
    });
    answer.as_object_mut().unwrap().remove("usage");
    mount_ok(&server, answer).await;

    let response = model(&server, fast()).generate(&hello()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("ab"));
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "call_0".into(),
            name: "get_bars".into(),
            arguments: r#"{"symbol":"BTC"}"#.into(),
        }]
    );
    assert_eq!(response.usage, Usage::default());
}

#[tokio::test]
async fn rate_limit_is_retried_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({
            "error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"},
        })))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    mount_ok(&server, text_answer()).await;

    let response = model(&server, fast()).generate(&hello()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("Hold."));
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn retry_after_is_honoured_over_a_long_backoff() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    mount_ok(&server, text_answer()).await;
    // Without the header the backoff would be 30-60 s; retry-after: 0 makes it immediate.
    let options = TransportOptions {
        timeout: Duration::from_secs(2),
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_secs(60),
            max_delay: Duration::from_secs(60),
        },
    };

    let started = Instant::now();
    model(&server, options).generate(&hello()).await.unwrap();

    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn server_errors_exhaust_the_attempts_and_report_status_and_body() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("upstream exploded"))
        .mount(&server)
        .await;

    let err = model(&server, fast()).generate(&hello()).await.unwrap_err();

    assert_eq!(
        err,
        ModelError::Http {
            provider: "openai".into(),
            status: 500,
            body: "upstream exploded".into(),
        }
    );
    assert_eq!(request_count(&server).await, 3, "max_attempts = 3");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_string("bad key"))
        .mount(&server)
        .await;

    let err = model(&server, fast()).generate(&hello()).await.unwrap_err();

    assert!(
        matches!(err, ModelError::Http { status: 401, .. }),
        "{err:?}"
    );
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn slow_server_times_out_after_retries() {
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
        timeout: Duration::from_millis(200),
        retry: RetryPolicy {
            max_attempts: 2,
            ..fast().retry
        },
    };

    let err = model(&server, options)
        .generate(&hello())
        .await
        .unwrap_err();

    // 200 ms rounds up to 1 s in the message.
    assert_eq!(
        err,
        ModelError::Timeout {
            provider: "openai".into(),
            seconds: 1,
        }
    );
    assert_eq!(request_count(&server).await, 2, "a timeout is retried");
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error() {
    // Bind then drop to get a local port with nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OpenAiCompatible::new(OpenAiCompatConfig {
        provider: "openrouter".into(),
        model: "x".into(),
        base_url: format!("http://127.0.0.1:{port}/api/v1"),
        api_key: "k".into(),
        max_tokens_field: MaxTokensField::MaxTokens,
        transport: fast(),
    })
    .unwrap();

    let err = model.generate(&hello()).await.unwrap_err();

    assert!(
        matches!(&err, ModelError::Connection { provider, .. } if provider == "openrouter"),
        "{err:?}"
    );
}

#[tokio::test]
async fn error_inside_a_200_answer_is_a_decode_error() {
    let server = MockServer::start().await;
    mount_ok(
        &server,
        json!({"error": {"message": "Provider returned error", "code": 502}}),
    )
    .await;

    let err = model(&server, fast()).generate(&hello()).await.unwrap_err();

    match err {
        ModelError::Decode { provider, message } => {
            assert_eq!(provider, "openai");
            assert!(message.contains("Provider returned error"), "{message}");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
}

#[tokio::test]
async fn non_json_200_is_a_decode_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>gateway</html>"))
        .mount(&server)
        .await;

    let err = model(&server, fast()).generate(&hello()).await.unwrap_err();

    assert!(matches!(err, ModelError::Decode { .. }), "{err:?}");
    assert_eq!(
        request_count(&server).await,
        1,
        "decode errors are not retried"
    );
}

#[tokio::test]
async fn resolved_flavors_use_their_base_url_key_and_max_tokens_field() {
    // (flavor, model string, key var, base var, expected wire model, expected limit field)
    let table = [
        (
            OpenAiFlavor::OpenAi,
            "openai/gpt-5-mini",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "gpt-5-mini",
            "max_completion_tokens",
        ),
        (
            OpenAiFlavor::OpenRouter,
            "openrouter/anthropic/claude-sonnet-4.5",
            "OPENROUTER_API_KEY",
            "OPENROUTER_BASE_URL",
            "anthropic/claude-sonnet-4.5",
            "max_tokens",
        ),
        (
            OpenAiFlavor::Gateway,
            "gateway/openai/gpt-4.1",
            "AI_GATEWAY_API_KEY",
            "AI_GATEWAY_BASE_URL",
            "openai/gpt-4.1",
            "max_tokens",
        ),
        (
            OpenAiFlavor::Google,
            "google/gemini-2.5-flash",
            "GEMINI_API_KEY",
            "GEMINI_BASE_URL",
            "gemini-2.5-flash",
            "max_tokens",
        ),
    ];
    for (flavor, id, key_var, base_var, wire_model, field) in table {
        assert_eq!(flavor.key_var(), key_var);
        assert_eq!(flavor.base_url_var(), base_var);
        let server = MockServer::start().await;
        mount_ok(&server, text_answer()).await;
        let base = format!("{}/v1", server.uri());
        let lookup = env(&[(key_var, "secret-1"), (base_var, &base)]);

        let model = resolve_model_with(id, &lookup, &no_builtins, fast()).unwrap();
        model.generate(&hello()).await.unwrap();

        assert_eq!(model.id(), id);
        let sent = &server.received_requests().await.unwrap()[0];
        assert_eq!(sent.headers["authorization"], "Bearer secret-1");
        let body: Value = serde_json::from_slice(&sent.body).unwrap();
        assert_eq!(body["model"], wire_model, "{id}");
        assert_eq!(body[field], 16, "{id}");
        let other = if field == "max_tokens" {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        assert!(body.get(other).is_none(), "{id} must not send {other}");
    }
}

#[tokio::test]
async fn max_tokens_field_can_be_overridden_from_the_environment() {
    let server = MockServer::start().await;
    mount_ok(&server, text_answer()).await;
    let base = format!("{}/v1", server.uri());
    let lookup = env(&[
        ("OPENAI_API_KEY", "k"),
        ("OPENAI_BASE_URL", &base),
        ("OPENAI_MAX_TOKENS_FIELD", "max_tokens"),
    ]);

    let model = resolve_model_with("openai/llama3", &lookup, &no_builtins, fast()).unwrap();
    model.generate(&hello()).await.unwrap();

    let body: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(body["max_tokens"], 16);
    assert!(body.get("max_completion_tokens").is_none());
}

#[test]
fn bad_max_tokens_field_names_the_variable() {
    let lookup = env(&[
        ("OPENROUTER_API_KEY", "k"),
        ("OPENROUTER_MAX_TOKENS_FIELD", "maxTokens"),
    ]);

    let err =
        OpenAiCompatConfig::from_env(OpenAiFlavor::OpenRouter, "m", &lookup, fast()).unwrap_err();

    assert_eq!(
        err.to_string(),
        r#"openrouter: OPENROUTER_MAX_TOKENS_FIELD must be max_tokens or max_completion_tokens, not "maxTokens""#
    );
}

#[test]
fn defaults_apply_when_only_the_key_is_set() {
    let lookup = env(&[("AI_GATEWAY_API_KEY", "k"), ("AI_GATEWAY_BASE_URL", "  ")]);

    let config =
        OpenAiCompatConfig::from_env(OpenAiFlavor::Gateway, "openai/gpt-5", &lookup, fast())
            .unwrap();

    assert_eq!(config.base_url, "https://ai-gateway.vercel.sh/v1");
    assert_eq!(config.max_tokens_field, MaxTokensField::MaxTokens);
    assert_eq!(config.provider, "gateway");
    assert_eq!(
        OpenAiFlavor::OpenAi.default_base_url(),
        "https://api.openai.com/v1"
    );
    assert_eq!(
        OpenAiFlavor::OpenRouter.default_base_url(),
        "https://openrouter.ai/api/v1"
    );
}

#[tokio::test]
async fn request_timeout_and_unavailable_statuses_are_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(408))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).insert_header("retry-after-ms", "5"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    mount_ok(&server, text_answer()).await;

    let response = model(&server, fast()).generate(&hello()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("Hold."));
    assert_eq!(request_count(&server).await, 3, "408, 503, then 200");
}

#[tokio::test]
async fn an_implausible_token_count_is_a_decode_error_not_a_stored_number() {
    let server = MockServer::start().await;
    let mut answer = text_answer();
    answer["usage"]["completion_tokens"] = json!(u64::MAX);
    mount_ok(&server, answer).await;
    let err = model(&server, fast())
        .generate(&conversation())
        .await
        .unwrap_err();
    let message = common::decode_message(err);
    assert!(message.contains("output tokens"), "{message}");
}

/// Gemini through Google's OpenAI-compatible endpoint: the default root is
/// `…/v1beta/openai`, requests go to `{root}/chat/completions` with the key as a bearer token
/// and the bare model name, and an answer with a tool call (Gemini's shape: `content: null`,
/// an id per call) comes back as a tool call, priced from the rate table.
#[tokio::test]
async fn google_models_speak_the_openai_wire_under_googles_path() {
    assert_eq!(
        OpenAiFlavor::Google.default_base_url(),
        "https://generativelanguage.googleapis.com/v1beta/openai"
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/openai/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "gemini-1",
            "object": "chat.completion",
            "created": 1_767_225_600,
            "model": "gemini-2.5-flash",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [{
                        "id": "function-call-1",
                        "type": "function",
                        "function": {"name": "propose_order", "arguments": "{\"side\":\"buy\"}"},
                    }],
                },
                "finish_reason": "tool_calls",
            }],
            "usage": {"prompt_tokens": 1_000, "completion_tokens": 100, "total_tokens": 1_100},
        })))
        .mount(&server)
        .await;
    let base = format!("{}/v1beta/openai/", server.uri());
    let lookup = env(&[("GEMINI_API_KEY", "gm-key"), ("GEMINI_BASE_URL", &base)]);

    let model =
        resolve_model_with("google/gemini-2.5-flash", &lookup, &no_builtins, fast()).unwrap();
    let answer = model.generate(&hello()).await.unwrap();

    assert_eq!(model.id(), "google/gemini-2.5-flash");
    assert_eq!(answer.finish, FinishReason::ToolCalls);
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].name, "propose_order");
    assert_eq!(answer.tool_calls[0].arguments, "{\"side\":\"buy\"}");
    assert_eq!(answer.usage.input, 1_000);
    assert_eq!(answer.usage.output, 100);
    let sent = &server.received_requests().await.unwrap()[0];
    assert_eq!(sent.headers["authorization"], "Bearer gm-key");
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["model"], "gemini-2.5-flash");
    // $0.30 in and $2.50 out per million tokens: 1,000 × 0.30 + 100 × 2.50 = 550 µ$.
    let cost = model::estimate_cost(model.id(), &answer.usage);
    assert!(cost.known);
    assert_eq!(cost.usd, rust_decimal::Decimal::new(55, 5));
}
