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
    /// The name the model calls the tool by (e.g. `propose_order`); unique within a request.
    pub name: String,
    /// What the tool does and when to use it, as shown to the model.
    pub description: String,
    /// JSON Schema (an object schema) of the arguments, shared with the tool (not copied per
    /// request).
    pub parameters: std::sync::Arc<serde_json::Value>,
}

/// One tool call the model made. `arguments` is the raw JSON text exactly as the model sent it,
/// so malformed JSON can be reported rather than lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id of this call; the matching [`Message::Tool`] answers it by `call_id`.
    pub id: String,
    /// The name of the tool called (a [`ToolDefinition::name`], unless the model made one up).
    pub name: String,
    /// The arguments as raw JSON text, unparsed and possibly malformed.
    pub arguments: String,
}

/// A conversation turn. The system prompt travels separately in [`ModelRequest::system`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user (or, in a tick, the runtime's assembled context) says.
    User {
        /// The message text.
        content: String,
    },
    /// A turn the model produced earlier, replayed so it sees its own tool calls.
    Assistant {
        /// The assistant's prose; `None` when the turn was tool calls only.
        text: Option<String>,
        /// The tool calls the turn made, in the order the model made them (may be empty).
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, sent back to the model.
    Tool {
        /// The [`ToolCall::id`] this result answers.
        call_id: String,
        /// The name of the tool that produced it.
        name: String,
        /// The tool's result text (JSON or an error message), as the model will read it.
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
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call this round; empty means no tool calling.
    pub tools: Vec<ToolDefinition>,
    /// The cap on tokens the model may generate in this call.
    pub max_output_tokens: u32,
    /// When the tick's budget runs out (a monotonic instant, not a time of day); `None`: no
    /// deadline. A provider neither waits for an answer nor sleeps before a retry past it: a
    /// `retry-after` beyond it ends the call with [`ModelError::Deadline`]. Not part of what is
    /// sent (nor serialised).
    #[serde(skip)]
    pub deadline: Option<std::time::Instant>,
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
    /// The stable kebab-case name (`stop`, `length`, `tool-calls`, `error`), as serialised and
    /// stored.
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
    /// The assistant's prose; `None` when it answered with tool calls only.
    pub text: Option<String>,
    /// The tool calls of this turn, in the order the model made them (may be empty).
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub finish: FinishReason,
    /// The tokens this call consumed, as the provider reported them.
    pub usage: Usage,
}

/// Why a model call failed. Every variant ends the tick as `error` with no proposal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The provider's API key variable is unset or blank.
    #[error("{provider}: environment variable {var} is not set")]
    MissingKey {
        /// The provider that needs the key (e.g. `anthropic`).
        provider: String,
        /// The exact environment variable name (e.g. `ANTHROPIC_API_KEY`).
        var: String,
    },
    /// The model string names no known provider or built-in model; carries the string as given.
    #[error("unknown model {0:?}")]
    UnknownModel(String),
    /// The model string's provider (the part before the first `/`) is not one the resolver
    /// knows.
    #[error("unknown provider {provider:?} in model {model:?} (known: {known})")]
    UnknownProvider {
        /// The model string as given.
        model: String,
        /// Its provider part.
        provider: String,
        /// The known providers, comma-separated, in the resolver's order.
        known: String,
    },
    /// The provider answered with a non-success HTTP status (after retries, when retryable).
    #[error("{provider}: HTTP {status}: {body}")]
    Http {
        /// The provider that answered.
        provider: String,
        /// The HTTP status code.
        status: u16,
        /// The response body, truncated.
        body: String,
    },
    /// The request did not complete within the provider's timeout (after retries).
    #[error("{provider}: request timed out after {seconds}s")]
    Timeout {
        /// The provider called.
        provider: String,
        /// The per-request timeout that elapsed, in whole seconds (rounded up).
        seconds: u64,
    },
    /// The connection failed (DNS, TCP, TLS, a body cut off) before an HTTP status was read.
    #[error("{provider}: connection failed: {message}")]
    Connection {
        /// The provider called.
        provider: String,
        /// The transport error and its sources.
        message: String,
    },
    /// A success response whose body is not the JSON shape the provider's API documents.
    #[error("{provider}: unexpected response: {message}")]
    Decode {
        /// The provider that answered.
        provider: String,
        /// What did not parse, with an excerpt of the body.
        message: String,
    },
    /// The tick's deadline ([`ModelRequest::deadline`]) ran out, or would have before the
    /// provider's `retry-after` wait ended: the call was given up rather than slept through.
    #[error("{provider}: deadline exceeded: {detail}")]
    Deadline {
        /// The provider called (or `runtime` when the model loop's own timer fired).
        provider: String,
        /// What ran out, with the figures (e.g. a `retry-after` of 120 s with 2 s left).
        detail: String,
    },
    /// Anything else (a client that cannot be built, a bad setting, a built-in model's own
    /// failure); the message says what and where.
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
    /// USD per million uncached input tokens.
    pub input: Decimal,
    /// USD per million output tokens.
    pub output: Decimal,
    /// USD per million input tokens read from the provider's prompt cache.
    pub cache_read: Decimal,
    /// USD per million input tokens written to the provider's prompt cache.
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
