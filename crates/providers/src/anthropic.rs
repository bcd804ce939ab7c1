//! The Anthropic Messages API (`POST {base}/v1/messages`, `x-api-key`,
//! `anthropic-version: 2023-06-01`).
//!
//! Wire decisions:
//! - prompt caching: the request prefix is tools → system → messages. The LAST tool and the
//!   (single) system text block both carry `cache_control: {type: ephemeral}`, so the tools alone
//!   and tools + system are both cached prefixes (2 of the 4 breakpoints Anthropic allows). An
//!   empty system prompt is omitted (Anthropic rejects empty text blocks);
//! - an assistant turn becomes a text block (when it had non-empty text) followed by one
//!   `tool_use` block per call. `tool_use.input` must be a JSON object: arguments that parse as
//!   an object are sent as that object; blank arguments are sent as `{}`; anything else
//!   (malformed JSON, or valid JSON that is not an object) is sent as
//!   `{"_raw_arguments": "<the exact text>"}` so the conversation stays sendable and the model
//!   can see what it wrote. An assistant turn with neither text nor calls is dropped, and so is
//!   an empty user text (Anthropic rejects empty text blocks);
//! - consecutive tool results (and a user turn right after them) are merged into ONE user
//!   message, `tool_result` blocks first, as the API requires all results of a turn together;
//! - the response's text blocks are concatenated; other block types (thinking, …) are ignored;
//! - the HTTP body carries the model name this provider was resolved for; `ModelRequest::model`
//!   is not sent.

use model::{
    FinishReason, LanguageModel, Message, ModelError, ModelRequest, ModelResponse, ToolCall, Usage,
};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use types::EnvLookup;

use crate::env::{optional, required_key, trim_base};
use crate::transport::{Transport, TransportOptions};

/// The provider name and model-string prefix.
pub const PROVIDER: &str = "anthropic";
/// The API key variable.
pub const KEY_VAR: &str = "ANTHROPIC_API_KEY";
/// The base-URL override variable.
pub const BASE_URL_VAR: &str = "ANTHROPIC_BASE_URL";
/// The API root used when `ANTHROPIC_BASE_URL` is unset.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header we speak.
pub const API_VERSION: &str = "2023-06-01";
/// The key under which unparseable tool-call arguments are sent back (see the module docs).
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// Everything an [`Anthropic`] model needs. `Debug` shows the key as `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct AnthropicConfig {
    /// The model name sent on the wire (`claude-sonnet-4-5`, …).
    pub model: String,
    /// API root without the `/v1/messages` suffix.
    pub base_url: String,
    /// The API key, sent as `x-api-key`; never printed.
    pub api_key: String,
    /// Timeout and retries of every call.
    pub transport: TransportOptions,
}

impl std::fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("transport", &self.transport)
            .finish()
    }
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic")
            .field("id", &self.id)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl AnthropicConfig {
    /// The config for `model` (the part after `anthropic/`) from the environment.
    ///
    /// # Errors
    /// [`ModelError::MissingKey`] naming `ANTHROPIC_API_KEY` when it is unset or blank.
    pub fn from_env(
        model: &str,
        env: &dyn EnvLookup,
        transport: TransportOptions,
    ) -> Result<Self, ModelError> {
        Ok(Self {
            api_key: required_key(env, PROVIDER, KEY_VAR)?,
            base_url: optional(env, BASE_URL_VAR).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            model: model.to_owned(),
            transport,
        })
    }
}

/// A Messages-API model. Its [`LanguageModel::id`] is `anthropic/{model}`. `Debug` never shows
/// the key.
#[derive(Clone)]
pub struct Anthropic {
    id: String,
    model: String,
    url: String,
    api_key: String,
    transport: Transport,
}

impl Anthropic {
    /// # Errors
    /// [`ModelError::Other`] when the HTTP client cannot be built.
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        Ok(Self {
            id: format!("{PROVIDER}/{}", config.model),
            url: format!("{}/v1/messages", trim_base(&config.base_url)),
            model: config.model,
            api_key: config.api_key,
            transport: Transport::new(PROVIDER, config.transport)?,
        })
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut key = HeaderValue::from_str(&self.api_key).map_err(|_| {
            ModelError::Other(format!(
                "{PROVIDER}: {KEY_VAR} contains characters not allowed in an HTTP header"
            ))
        })?;
        key.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("x-api-key"), key);
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        Ok(headers)
    }
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// `tool_use.input` for the raw argument text (see the module docs).
#[must_use]
pub fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({ RAW_ARGUMENTS_KEY: arguments }),
    }
}

fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut messages: Vec<Value> = Vec::with_capacity(request.messages.len());
    // Blocks of the user message being accumulated (tool results, then user text).
    let mut pending_user: Vec<Value> = Vec::new();
    let flush = |pending: &mut Vec<Value>, messages: &mut Vec<Value>| {
        if !pending.is_empty() {
            messages.push(json!({"role": "user", "content": std::mem::take(pending)}));
        }
    };
    for message in &request.messages {
        match message {
            // Anthropic rejects empty text blocks.
            Message::User { content } if content.is_empty() => {}
            Message::User { content } => {
                pending_user.push(json!({"type": "text", "text": content}));
            }
            Message::Tool {
                call_id, content, ..
            } => {
                // tool_result blocks must precede any text in the user message.
                if pending_user
                    .last()
                    .is_some_and(|b| b["type"] != "tool_result")
                {
                    flush(&mut pending_user, &mut messages);
                }
                pending_user.push(json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                }));
            }
            Message::Assistant { text, tool_calls } => {
                flush(&mut pending_user, &mut messages);
                let mut content = Vec::with_capacity(tool_calls.len() + 1);
                if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                    content.push(json!({"type": "text", "text": text}));
                }
                content.extend(tool_calls.iter().map(|c| {
                    json!({
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": tool_input(&c.arguments),
                    })
                }));
                if !content.is_empty() {
                    messages.push(json!({"role": "assistant", "content": content}));
                }
            }
        }
    }
    flush(&mut pending_user, &mut messages);

    let mut body = json!({
        "model": model,
        "max_tokens": request.max_output_tokens,
        "messages": messages,
    });
    if !request.system.is_empty() {
        body["system"] = json!([{
            "type": "text",
            "text": request.system,
            "cache_control": ephemeral(),
        }]);
    }
    if !request.tools.is_empty() {
        let last = request.tools.len() - 1;
        body["tools"] = request
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut tool = json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                });
                if i == last {
                    tool["cache_control"] = ephemeral();
                }
                tool
            })
            .collect();
    }
    body
}

#[async_trait::async_trait]
impl LanguageModel for Anthropic {
    fn id(&self) -> &str {
        &self.id
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let body = request_body(&self.model, request);
        let answer = self
            .transport
            .post_json(&self.url, self.headers()?, &body, request.deadline)
            .await?;
        parse_response(answer)
    }
}

#[derive(Deserialize)]
struct WireResponse {
    content: Option<Vec<Value>>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

/// Turns a Messages answer into a [`ModelResponse`].
///
/// - `text` blocks are concatenated (None when there are none); `tool_use` blocks become calls
///   whose `arguments` are the JSON text of `input`;
/// - `stop_reason`: `end_turn`/`stop_sequence` → Stop, `max_tokens` → Length, `tool_use` →
///   ToolCalls, `refusal` → Error; anything else → ToolCalls when calls are present, else Stop;
/// - usage maps one to one: Anthropic's `input_tokens` already excludes cache reads and writes.
fn parse_response(answer: Value) -> Result<ModelResponse, ModelError> {
    let decode = |message: String| ModelError::Decode {
        provider: PROVIDER.to_owned(),
        message,
    };
    let wire: WireResponse =
        serde_json::from_value(answer).map_err(|e| decode(format!("not a message: {e}")))?;
    let Some(blocks) = wire.content else {
        return Err(decode(match wire.error {
            Some(error) => format!("error in a 2xx answer: {error}"),
            None => "no content in the answer".to_owned(),
        }));
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
            Some("tool_use") => {
                let field = |name: &str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| decode(format!("content[{index}] tool_use has no {name}")))
                };
                tool_calls.push(ToolCall {
                    id: field("id")?,
                    name: field("name")?,
                    arguments: block.get("input").unwrap_or(&json!({})).to_string(),
                });
            }
            _ => {}
        }
    }
    let finish = match wire.stop_reason.as_deref() {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::Error,
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    };
    let usage = wire.usage.map_or_else(Usage::default, |u| Usage {
        input: u.input_tokens.unwrap_or(0),
        output: u.output_tokens.unwrap_or(0),
        cache_read: u.cache_read_input_tokens.unwrap_or(0),
        cache_write: u.cache_creation_input_tokens.unwrap_or(0),
    });
    if let Some((field, n)) = usage.implausible() {
        return Err(decode(format!(
            "usage reports {n} {field} tokens for one call (at most {} are plausible)",
            types::MAX_CALL_TOKENS
        )));
    }
    Ok(ModelResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        finish,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_input_keeps_objects_and_wraps_everything_else() {
        assert_eq!(tool_input(r#"{"a": 1}"#), json!({"a": 1}));
        assert_eq!(tool_input(""), json!({}));
        assert_eq!(tool_input("  \n"), json!({}));
        assert_eq!(
            tool_input(r#"{"a": 1"#),
            json!({"_raw_arguments": r#"{"a": 1"#})
        );
        assert_eq!(tool_input("[1,2]"), json!({"_raw_arguments": "[1,2]"}));
        assert_eq!(tool_input("42"), json!({"_raw_arguments": "42"}));
    }

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            model: "ignored".into(),
            system: String::new(),
            messages,
            tools: vec![],
            max_output_tokens: 10,
            deadline: None,
        }
    }

    #[test]
    fn tool_results_and_following_user_text_merge_into_one_user_message() {
        let body = request_body(
            "m",
            &request(vec![
                Message::User {
                    content: "go".into(),
                },
                Message::Assistant {
                    text: None,
                    tool_calls: vec![
                        ToolCall {
                            id: "a".into(),
                            name: "x".into(),
                            arguments: "{}".into(),
                        },
                        ToolCall {
                            id: "b".into(),
                            name: "y".into(),
                            arguments: "{}".into(),
                        },
                    ],
                },
                Message::Tool {
                    call_id: "a".into(),
                    name: "x".into(),
                    content: "1".into(),
                },
                Message::Tool {
                    call_id: "b".into(),
                    name: "y".into(),
                    content: "2".into(),
                },
                Message::User {
                    content: String::new(),
                },
                Message::User {
                    content: "and?".into(),
                },
                Message::Tool {
                    call_id: "late".into(),
                    name: "z".into(),
                    content: "3".into(),
                },
                Message::Assistant {
                    text: Some(String::new()),
                    tool_calls: vec![],
                },
            ]),
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "a", "name": "x", "input": {}},
                    {"type": "tool_use", "id": "b", "name": "y", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "1"},
                    {"type": "tool_result", "tool_use_id": "b", "content": "2"},
                    {"type": "text", "text": "and?"},
                ]},
                // A tool result after user text starts a new user message so results stay first.
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "late", "content": "3"},
                ]},
                // The empty assistant turn is dropped.
            ])
        );
        assert!(body.get("system").is_none());
        assert!(body.get("tools").is_none());
    }
}
