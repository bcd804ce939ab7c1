//! The model interface: a provider-agnostic chat-with-tools call.
//!
//! Providers (OpenAI-compatible, Anthropic, the offline `builtin/*` models) implement
//! [`LanguageModel`]; the tick loop only ever sees this trait, as `Arc<dyn LanguageModel>`.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use types::Usage;

/// A tool the model may call: name, description and the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON Schema (an object schema) of the arguments, shared with the tool (not copied per
    /// request).
    pub parameters: std::sync::Arc<serde_json::Value>,
}

/// One tool call the model made. `arguments` is the raw JSON text exactly as the model sent it,
/// so malformed JSON can be reported rather than lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A conversation turn. The system prompt travels separately in [`ModelRequest::system`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        content: String,
    },
    Assistant {
        text: Option<String>,
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, sent back to the model.
    Tool {
        call_id: String,
        name: String,
        content: String,
    },
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The provider's model name (the part after `provider/`).
    pub model: String,
    /// The system prompt; providers that support prompt caching mark it (with the tools) as the
    /// stable, cacheable prefix.
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDefinition>,
    pub max_output_tokens: u32,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The output-token limit cut the answer.
    Length,
    /// The model wants tool results before continuing.
    ToolCalls,
    /// The call or the tick failed.
    Error,
}

impl FinishReason {
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool-calls",
            FinishReason::Error => "error",
        }
    }
}

/// The model's answer to one [`ModelRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish: FinishReason,
    pub usage: Usage,
}

/// Why a model call failed. Every variant ends the tick as `error` with no proposal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("{provider}: environment variable {var} is not set")]
    MissingKey { provider: String, var: String },
    #[error("unknown model {0:?}")]
    UnknownModel(String),
    #[error("{provider}: HTTP {status}: {body}")]
    Http {
        provider: String,
        status: u16,
        body: String,
    },
    #[error("{provider}: request timed out after {seconds}s")]
    Timeout { provider: String, seconds: u64 },
    #[error("{provider}: connection failed: {message}")]
    Connection { provider: String, message: String },
    #[error("{provider}: unexpected response: {message}")]
    Decode { provider: String, message: String },
    #[error("{0}")]
    Other(String),
}

/// A chat model with tool calling. Object-safe: the runtime holds `Arc<dyn LanguageModel>`.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait LanguageModel: Send + Sync {
    /// The full model id, `provider/model`, used for the cost table and snapshots.
    fn id(&self) -> &str;

    /// One call: the conversation so far in, the next assistant turn out.
    ///
    /// # Errors
    /// [`ModelError`] when the provider cannot be reached, refuses, or answers something that
    /// cannot be parsed.
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError>;
}

/// Dollar rates per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates {
    pub input: Decimal,
    pub output: Decimal,
    pub cache_read: Decimal,
    pub cache_write: Decimal,
}

impl Rates {
    /// Zero rates (the offline `builtin/*` models).
    pub const ZERO: Rates = Rates {
        input: Decimal::ZERO,
        output: Decimal::ZERO,
        cache_read: Decimal::ZERO,
        cache_write: Decimal::ZERO,
    };

    /// The one cost formula: the dollar cost of `usage` at these rates, exact decimal
    /// arithmetic, normalised (no trailing zeros, so equal costs have one spelling wherever
    /// they are written: snapshot, note, summary):
    ///
    /// `cost = (input·r_in + output·r_out + cache_read·r_cr + cache_write·r_cw) / 1,000,000`
    ///
    /// A sum beyond `Decimal`'s range (some 10^28 dollars, far past any real bill) saturates at
    /// `Decimal::MAX` instead of panicking.
    #[must_use]
    pub fn cost(&self, usage: &Usage) -> Decimal {
        let term = |tokens: u64, rate: Decimal| Decimal::from(tokens).checked_mul(rate);
        let micro = [
            term(usage.input, self.input),
            term(usage.output, self.output),
            term(usage.cache_read, self.cache_read),
            term(usage.cache_write, self.cache_write),
        ]
        .into_iter()
        .try_fold(Decimal::ZERO, |sum, t| sum.checked_add(t?));
        micro
            .map_or(Decimal::MAX, |m| m / Decimal::from(1_000_000u32))
            .normalize()
    }
}
