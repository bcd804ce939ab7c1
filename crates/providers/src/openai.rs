//! OpenAI-compatible chat completions (`POST {base}/chat/completions`, bearer auth): OpenAI
//! itself, OpenRouter, the Vercel AI gateway, Gemini through Google's OpenAI-compatible
//! endpoint, and any server speaking the same dialect (vLLM, Ollama, llama.cpp) through
//! `OPENAI_BASE_URL`.
//!
//! Wire decisions:
//! - the system prompt is the first message (`role: system`), omitted when empty;
//! - an assistant turn sends `content: null` when it had no text, and `tool_calls` only when it
//!   made calls (OpenAI rejects an empty `tool_calls` array); arguments go back as the raw text
//!   the model produced, untouched;
//! - a tool result is `{role: tool, tool_call_id, content}`;
//! - `tools` is omitted when empty (OpenAI rejects `[]`);
//! - the output limit is sent as `max_completion_tokens` to OpenAI (its current name, and the
//!   only one its reasoning models such as gpt-5 accept) and as `max_tokens` to OpenRouter,
//!   the AI gateway and Google (the name every OpenAI-compatible server accepts); `{PREFIX}_MAX_TOKENS_FIELD`
//!   (`OPENAI_MAX_TOKENS_FIELD`, …) overrides it, e.g. for a local server behind
//!   `OPENAI_BASE_URL` that only knows `max_tokens`.
//! - the HTTP body carries the model name this provider was resolved for; `ModelRequest::model`
//!   is not sent.

use model::{
    FinishReason, LanguageModel, Message, ModelError, ModelRequest, ModelResponse, ToolCall, Usage,
};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use types::EnvLookup;

use crate::env::{optional, required_key, trim_base};
use crate::transport::{Transport, TransportOptions};

/// Which OpenAI-compatible service a model string names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpenAiFlavor {
    /// `openai/…`: `OPENAI_API_KEY`, `OPENAI_BASE_URL` (default `https://api.openai.com/v1`).
    OpenAi,
    /// `openrouter/…`: `OPENROUTER_API_KEY`, `OPENROUTER_BASE_URL`
    /// (default `https://openrouter.ai/api/v1`).
    OpenRouter,
    /// `gateway/…`: `AI_GATEWAY_API_KEY`, `AI_GATEWAY_BASE_URL`
    /// (default `https://ai-gateway.vercel.sh/v1`).
    Gateway,
    /// `google/…`: Gemini through Google's OpenAI-compatible endpoint; `GEMINI_API_KEY`,
    /// `GEMINI_BASE_URL` (default `https://generativelanguage.googleapis.com/v1beta/openai`).
    Google,
}

impl OpenAiFlavor {
    /// The model-string prefix and provider name: `openai`, `openrouter`, `gateway`, `google`.
    #[must_use]
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::OpenRouter => "openrouter",
            Self::Gateway => "gateway",
            Self::Google => "google",
        }
    }

    /// The API key variable.
    #[must_use]
    pub const fn key_var(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_API_KEY",
            Self::OpenRouter => "OPENROUTER_API_KEY",
            Self::Gateway => "AI_GATEWAY_API_KEY",
            Self::Google => "GEMINI_API_KEY",
        }
    }

    /// The base-URL override variable.
    #[must_use]
    pub const fn base_url_var(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_BASE_URL",
            Self::OpenRouter => "OPENROUTER_BASE_URL",
            Self::Gateway => "AI_GATEWAY_BASE_URL",
            Self::Google => "GEMINI_BASE_URL",
        }
    }

    /// The output-limit field-name override variable.
    #[must_use]
    pub const fn max_tokens_field_var(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_MAX_TOKENS_FIELD",
            Self::OpenRouter => "OPENROUTER_MAX_TOKENS_FIELD",
            Self::Gateway => "AI_GATEWAY_MAX_TOKENS_FIELD",
            Self::Google => "GEMINI_MAX_TOKENS_FIELD",
        }
    }

    /// The API root used when the base-URL variable is unset.
    #[must_use]
    pub const fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com/v1",
            Self::OpenRouter => "https://openrouter.ai/api/v1",
            Self::Gateway => "https://ai-gateway.vercel.sh/v1",
            Self::Google => "https://generativelanguage.googleapis.com/v1beta/openai",
        }
    }

    /// The output-limit field used when the override variable is unset: OpenAI's
    /// `max_completion_tokens` for `openai`, `max_tokens` for the others.
    #[must_use]
    pub const fn default_max_tokens_field(self) -> MaxTokensField {
        match self {
            Self::OpenAi => MaxTokensField::MaxCompletionTokens,
            Self::OpenRouter | Self::Gateway | Self::Google => MaxTokensField::MaxTokens,
        }
    }

    /// Every flavor, in the order error messages list them.
    pub const ALL: [Self; 4] = [Self::OpenAi, Self::OpenRouter, Self::Gateway, Self::Google];

    /// The flavor for a model-string prefix.
    #[must_use]
    pub fn from_prefix(prefix: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.prefix() == prefix)
    }
}

/// The JSON name of the output-token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MaxTokensField {
    /// `max_tokens`: the original name, accepted by every OpenAI-compatible server, rejected by
    /// OpenAI's reasoning models.
    MaxTokens,
    /// `max_completion_tokens`: OpenAI's current name.
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The JSON field name, as sent and as accepted in the override variable.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "max_tokens" => Some(Self::MaxTokens),
            "max_completion_tokens" => Some(Self::MaxCompletionTokens),
            _ => None,
        }
    }
}

/// Everything an [`OpenAiCompatible`] model needs. `Debug` shows the key as `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiCompatConfig {
    /// Provider name used in the model id and in errors (`openai`, `openrouter`, `gateway`).
    pub provider: String,
    /// The model name sent on the wire (`gpt-5`, `anthropic/claude-sonnet-4.5`, …).
    pub model: String,
    /// API root without the `/chat/completions` suffix.
    pub base_url: String,
    /// The API key, sent as a bearer token; never printed.
    pub api_key: String,
    /// The JSON name the output-token limit is sent under.
    pub max_tokens_field: MaxTokensField,
    /// Timeout and retries of every call.
    pub transport: TransportOptions,
}

impl std::fmt::Debug for OpenAiCompatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatConfig")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("max_tokens_field", &self.max_tokens_field)
            .field("transport", &self.transport)
            .finish()
    }
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("id", &self.id)
            .field("url", &self.url)
            .field("max_tokens_field", &self.max_tokens_field)
            .finish_non_exhaustive()
    }
}

impl OpenAiCompatConfig {
    /// The config for `flavor` and `model` (the part after `flavor/`) from the environment.
    ///
    /// # Errors
    /// [`ModelError::MissingKey`] naming the flavor's key variable when it is unset or blank;
    /// [`ModelError::Other`] naming the variable when `{PREFIX}_MAX_TOKENS_FIELD` holds something
    /// other than `max_tokens` or `max_completion_tokens`.
    pub fn from_env(
        flavor: OpenAiFlavor,
        model: &str,
        env: &dyn EnvLookup,
        transport: TransportOptions,
    ) -> Result<Self, ModelError> {
        let provider = flavor.prefix();
        let api_key = required_key(env, provider, flavor.key_var())?;
        let base_url = optional(env, flavor.base_url_var())
            .unwrap_or_else(|| flavor.default_base_url().to_owned());
        let max_tokens_field = match optional(env, flavor.max_tokens_field_var()) {
            None => flavor.default_max_tokens_field(),
            Some(text) => MaxTokensField::parse(&text).ok_or_else(|| {
                ModelError::Other(format!(
                    "{provider}: {} must be max_tokens or max_completion_tokens, not {text:?}",
                    flavor.max_tokens_field_var()
                ))
            })?,
        };
        Ok(Self {
            provider: provider.to_owned(),
            model: model.to_owned(),
            base_url,
            api_key,
            max_tokens_field,
            transport,
        })
    }
}

/// A chat-completions model. Its [`LanguageModel::id`] is `{provider}/{model}`. `Debug` never
/// shows the key.
#[derive(Clone)]
pub struct OpenAiCompatible {
    id: String,
    model: String,
    url: String,
    api_key: String,
    max_tokens_field: MaxTokensField,
    transport: Transport,
}

impl OpenAiCompatible {
    /// # Errors
    /// [`ModelError::Other`] when the HTTP client cannot be built.
    pub fn new(config: OpenAiCompatConfig) -> Result<Self, ModelError> {
        let transport = Transport::new(&config.provider, config.transport)?;
        Ok(Self {
            id: format!("{}/{}", config.provider, config.model),
            url: format!("{}/chat/completions", trim_base(&config.base_url)),
            model: config.model,
            api_key: config.api_key,
            max_tokens_field: config.max_tokens_field,
            transport,
        })
    }

    fn request_body(&self, request: &ModelRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for message in &request.messages {
            messages.push(match message {
                Message::User { content } => json!({"role": "user", "content": content}),
                Message::Assistant { text, tool_calls } => {
                    let mut m = json!({"role": "assistant", "content": text});
                    if !tool_calls.is_empty() {
                        m["tool_calls"] = tool_calls
                            .iter()
                            .map(|c| {
                                json!({
                                    "id": c.id,
                                    "type": "function",
                                    "function": {"name": c.name, "arguments": c.arguments},
                                })
                            })
                            .collect();
                    }
                    m
                }
                Message::Tool {
                    call_id, content, ..
                } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
            });
        }
        let mut body = json!({"model": self.model, "messages": messages});
        body[self.max_tokens_field.as_str()] = json!(request.max_output_tokens);
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.parameters,
                        },
                    })
                })
                .collect();
        }
        body
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        let mut auth =
            HeaderValue::from_str(&format!("Bearer {}", self.api_key)).map_err(|_| {
                ModelError::Other(format!(
                    "{}: the API key contains characters not allowed in an HTTP header",
                    self.transport.provider()
                ))
            })?;
        auth.set_sensitive(true);
        headers.insert(AUTHORIZATION, auth);
        Ok(headers)
    }
}

#[async_trait::async_trait]
impl LanguageModel for OpenAiCompatible {
    fn id(&self) -> &str {
        &self.id
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let body = self.request_body(request);
        let answer = self
            .transport
            .post_json(&self.url, self.headers()?, &body, request.deadline)
            .await?;
        parse_response(self.transport.provider(), answer)
    }
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Option<Vec<WireChoice>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    content: Option<Value>,
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<WirePromptDetails>,
}

#[derive(Deserialize)]
struct WirePromptDetails {
    cached_tokens: Option<u64>,
    /// OpenRouter reports cache writes (e.g. for Anthropic models) here.
    cache_write_tokens: Option<u64>,
}

/// Turns a chat-completions answer into a [`ModelResponse`].
///
/// - `content` may be a string, null, or (some servers) an array of `{type: text, text}` parts;
/// - tool-call `arguments` are kept as the exact text received (a server that sends an object
///   instead of a string gets it serialised); a call without an `id` gets `call_{index}`;
/// - `finish_reason`: `stop` → Stop, `length` → Length, `tool_calls`/`function_call` →
///   ToolCalls, `content_filter` → Error; `stop` or a missing/unknown reason with tool calls
///   present → ToolCalls (several local servers say `stop` after a tool call), otherwise Stop;
/// - usage: `input = prompt − cached − cache_write`, `cache_read = cached`,
///   `cache_write = prompt_tokens_details.cache_write_tokens` (OpenRouter); absent usage → zeros.
fn parse_response(provider: &str, answer: Value) -> Result<ModelResponse, ModelError> {
    let decode = |message: String| ModelError::Decode {
        provider: provider.to_owned(),
        message,
    };
    let wire: WireResponse = serde_json::from_value(answer)
        .map_err(|e| decode(format!("not a chat completion: {e}")))?;
    let choice = match wire.choices.and_then(|c| c.into_iter().next()) {
        Some(choice) => choice,
        None => {
            return Err(decode(match wire.error {
                Some(error) => format!("error in a 2xx answer: {error}"),
                None => "no choices in the answer".to_owned(),
            }));
        }
    };
    let message = choice
        .message
        .ok_or_else(|| decode("choices[0] has no message".to_owned()))?;
    let text = content_text(message.content);
    let tool_calls: Vec<ToolCall> = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, call)| ToolCall {
            id: call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{index}")),
            name: call.function.name,
            arguments: match call.function.arguments {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(raw)) => raw,
                Some(other) => other.to_string(),
            },
        })
        .collect();
    let finish = match choice.finish_reason.as_deref() {
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::Error,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    };
    let usage = wire.usage.map_or_else(Usage::default, |u| {
        let prompt = u.prompt_tokens.unwrap_or(0);
        let (cached, written) = u.prompt_tokens_details.map_or((0, 0), |d| {
            (
                d.cached_tokens.unwrap_or(0),
                d.cache_write_tokens.unwrap_or(0),
            )
        });
        Usage {
            input: prompt.saturating_sub(cached).saturating_sub(written),
            output: u.completion_tokens.unwrap_or(0),
            cache_read: cached,
            cache_write: written,
        }
    });
    if let Some((field, n)) = usage.implausible() {
        return Err(decode(format!(
            "usage reports {n} {field} tokens for one call (at most {} are plausible)",
            types::MAX_CALL_TOKENS
        )));
    }
    Ok(ModelResponse {
        text,
        tool_calls,
        finish,
        usage,
    })
}

fn content_text(content: Option<Value>) -> Option<String> {
    match content? {
        Value::String(text) if !text.is_empty() => Some(text),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!text.is_empty()).then_some(text)
        }
        _ => None,
    }
}
