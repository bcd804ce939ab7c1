//! The model interface, small enough that providers and the reflection job depend on it without
//! the agent runtime.
//!
//! **Owns:**
//! - the [`LanguageModel`] trait (object-safe: callers hold `Arc<dyn LanguageModel>`) and what
//!   one call carries: [`ModelRequest`], [`Message`], [`ToolDefinition`], [`ToolCall`],
//!   [`ModelResponse`], [`FinishReason`], [`ModelError`];
//! - [`Rates`] and the one cost formula ([`Rates::cost`]), the one rate table ([`rates_for`],
//!   [`estimate_cost`]);
//! - [`Metered`]: a decorator adding up what calls actually cost into a shared [`Spend`] (the
//!   cost guard of `sim-worker run --max-cost` reads it).
//!
//! The normalised token [`Usage`] is `types::Usage` (re-exported here), because the store keeps
//! it on every snapshot and `db` depends on `types` only.
//!
//! **Never does:** I/O, HTTP, reading the clock or the environment; it knows no provider (the
//! HTTP providers live in `providers`, the offline `builtin/*` models in
//! `agent-runtime`).
//!
//! The one cost formula, in dollars per million tokens, exact in decimals:
//!
//! ```
//! use model::{Usage, estimate_cost, rates_for};
//! use rust_decimal::Decimal;
//!
//! let rates = rates_for("anthropic/claude-sonnet-4-5").unwrap();
//! let usage = Usage { input: 12_000, output: 800, cache_read: 40_000, cache_write: 0 };
//! // 12,000 × $3 + 800 × $15 + 40,000 × $0.30, per million tokens:
//! // $0.036 + $0.012 + $0.012 = $0.06
//! assert_eq!(rates.cost(&usage), Decimal::new(6, 2));
//! assert!(estimate_cost("anthropic/claude-sonnet-4-5", &usage).known);
//! // An offline model costs nothing; an unknown one is flagged, never guessed.
//! assert_eq!(estimate_cost("builtin/sma-cross:10:20", &usage).usd, Decimal::ZERO);
//! assert!(!estimate_cost("acme/unknown-model", &usage).known);
//! ```

pub mod cost;
pub mod meter;
pub mod model;
#[cfg(feature = "test-support")]
pub mod test_support;

pub use cost::{CostEstimate, estimate_cost, normalise_model_id, rates_for};
pub use meter::{Metered, Spend, SpendTotals};
/// A `mockall` mock of [`LanguageModel`] (feature `mock`).
#[cfg(feature = "mock")]
pub use model::MockLanguageModel;
pub use model::{
    FinishReason, LanguageModel, Message, ModelError, ModelRequest, ModelResponse, Rates, ToolCall,
    ToolDefinition,
};
pub use types::Usage;
