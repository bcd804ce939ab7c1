//! The model interface, small enough that providers and the reflection job depend on it without
//! the agent runtime.
//!
//! **Owns:**
//! - the [`LanguageModel`] trait (object-safe: callers hold `Arc<dyn LanguageModel>`) and what
//!   one call carries: [`ModelRequest`], [`Message`], [`ToolDefinition`], [`ToolCall`],
//!   [`ModelResponse`], [`FinishReason`], [`ModelError`];
//! - [`Rates`] and the one cost formula ([`Rates::cost`]), the one rate table ([`rates_for`],
//!   [`estimate_cost`]).
//!
//! The normalised token [`Usage`] is `types::Usage` (re-exported here), because the store keeps
//! it on every snapshot and `db` depends on `types` only.
//!
//! **Never does:** I/O, HTTP, reading the clock or the environment; it knows no provider (the
//! HTTP providers live in `model-providers`, the offline `builtin/*` models in
//! `agent-runtime`).

pub mod cost;
pub mod model;

pub use cost::{CostEstimate, estimate_cost, normalise_model_id, rates_for};
/// A `mockall` mock of [`LanguageModel`] (feature `mock`).
#[cfg(feature = "mock")]
pub use model::MockLanguageModel;
pub use model::{
    FinishReason, LanguageModel, Message, ModelError, ModelRequest, ModelResponse, Rates, ToolCall,
    ToolDefinition,
};
pub use types::Usage;
