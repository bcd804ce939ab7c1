//! The HTTP model providers behind [`model::LanguageModel`], and [`resolve_model`], the
//! ONE place a model string (`provider/model`) becomes a model.
//!
//! Owns:
//! - [`OpenAiCompatible`]: OpenAI-compatible chat completions for `openai/…`, `openrouter/…`,
//!   `gateway/…`, `google/…` (Gemini through Google's OpenAI-compatible endpoint) and local
//!   servers through `OPENAI_BASE_URL`;
//! - [`Anthropic`]: the Messages API for `anthropic/…`, with the tools + system prompt marked as
//!   the cached prefix;
//! - the shared transport: per-attempt timeout, bounded retries with exponential backoff and
//!   jitter on 408/429/5xx/connection errors/timeouts, `retry-after` honoured and capped
//!   ([`TransportOptions`], [`RetryPolicy`]);
//! - configuration from an injected environment lookup ([`EnvLookup`], [`process_env`]).
//!
//! Must never: read the process environment by itself (callers pass the lookup), log or echo API
//! keys, rewrite a model's tool-call arguments (the raw text goes to the runtime, which decides),
//! know about `builtin/…` models (the caller passes their resolver), or hold model prices (the
//! cost table lives in `model`).
//!
//! ```
//! use model::ModelError;
//! use providers::{no_builtins, resolve_model};
//!
//! // Binaries pass `&providers::process_env`; tests pass a closure over a map.
//! let env = |name: &str| (name == "OPENROUTER_API_KEY").then(|| "sk-or-…".to_owned());
//!
//! let model = resolve_model("openrouter/anthropic/claude-sonnet-4.5", &env, &no_builtins)?;
//! assert_eq!(model.id(), "openrouter/anthropic/claude-sonnet-4.5");
//!
//! let missing = resolve_model("anthropic/claude-sonnet-4-5", &env, &no_builtins).err();
//! assert_eq!(
//!     missing,
//!     Some(ModelError::MissingKey { provider: "anthropic".into(), var: "ANTHROPIC_API_KEY".into() })
//! );
//! # Ok::<(), ModelError>(())
//! ```

pub mod anthropic;
mod env;
pub mod openai;
mod transport;

use std::sync::Arc;

use model::{LanguageModel, ModelError};

pub use anthropic::{Anthropic, AnthropicConfig};
pub use openai::{MaxTokensField, OpenAiCompatConfig, OpenAiCompatible, OpenAiFlavor};
pub use transport::{DEFAULT_RETRY, RetryPolicy, TransportOptions};
pub use types::{EnvLookup, process_env};

/// Resolves a `builtin/…` model string (the FULL string, prefix included) to an offline model.
pub type BuiltinResolver<'a> = &'a dyn Fn(&str) -> Result<Arc<dyn LanguageModel>, ModelError>;

/// A [`BuiltinResolver`] for callers without offline models: every `builtin/…` string is
/// [`ModelError::UnknownModel`].
///
/// # Errors
/// Always [`ModelError::UnknownModel`] with `model`.
pub fn no_builtins(model: &str) -> Result<Arc<dyn LanguageModel>, ModelError> {
    Err(ModelError::UnknownModel(model.to_owned()))
}

/// The providers [`resolve_model`] knows, in the order its errors list them (`skill-schema`
/// validates a skill's `model` against the same list).
pub const KNOWN_PROVIDERS: [&str; 6] = [
    "anthropic",
    "openai",
    "openrouter",
    "gateway",
    "google",
    "builtin",
];

/// The model for `model` with [`TransportOptions::default`]; see [`resolve_model_with`].
///
/// # Errors
/// As [`resolve_model_with`].
pub fn resolve_model(
    model: &str,
    env: &dyn EnvLookup,
    builtins: BuiltinResolver<'_>,
) -> Result<Arc<dyn LanguageModel>, ModelError> {
    resolve_model_with(model, env, builtins, TransportOptions::default())
}

/// Turns `provider/model` into a model:
/// - `openai/NAME`, `openrouter/NAME`, `gateway/NAME`, `google/NAME` → [`OpenAiCompatible`]
///   (NAME may itself contain `/`, e.g. `openrouter/anthropic/claude-sonnet-4.5`; `google/…` is
///   Gemini, e.g. `google/gemini-2.5-flash`, keyed by `GEMINI_API_KEY`);
/// - `anthropic/NAME` → [`Anthropic`];
/// - `builtin/…` → `builtins(model)` with the full string.
///
/// Nothing is sent over the network here; keys are checked now so a missing key fails before
/// the first tick.
///
/// # Errors
/// [`ModelError::UnknownProvider`] listing [`KNOWN_PROVIDERS`] for a provider not among them;
/// [`ModelError::UnknownModel`] for a string without `/` or an empty name;
/// [`ModelError::MissingKey`] naming the exact variable when the provider's key is unset or
/// blank; [`ModelError::Other`] for a bad `{PREFIX}_MAX_TOKENS_FIELD` or an HTTP client that
/// cannot be built; whatever `builtins` returns for `builtin/…`.
pub fn resolve_model_with(
    model: &str,
    env: &dyn EnvLookup,
    builtins: BuiltinResolver<'_>,
    transport: TransportOptions,
) -> Result<Arc<dyn LanguageModel>, ModelError> {
    let unknown = || ModelError::UnknownModel(model.to_owned());
    let (provider, name) = model.split_once('/').ok_or_else(unknown)?;
    if provider.is_empty() || name.trim().is_empty() {
        return Err(unknown());
    }
    if provider == "builtin" {
        return builtins(model);
    }
    if provider == anthropic::PROVIDER {
        let config = AnthropicConfig::from_env(name, env, transport)?;
        return Ok(Arc::new(Anthropic::new(config)?));
    }
    let flavor =
        OpenAiFlavor::from_prefix(provider).ok_or_else(|| ModelError::UnknownProvider {
            model: model.to_owned(),
            provider: provider.to_owned(),
            known: KNOWN_PROVIDERS.join(", "),
        })?;
    let config = OpenAiCompatConfig::from_env(flavor, name, env, transport)?;
    Ok(Arc::new(OpenAiCompatible::new(config)?))
}
