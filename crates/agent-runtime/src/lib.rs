//! One tick of the trading agent: assemble the context, run the model loop with tools, extract
//! the proposed action, report usage and cost. Pure: no database, no exchange, no HTTP client,
//! no wall clock — data arrives through the `tools::ToolContext` traits, time through a
//! `types::Clock`, the model through [`model::LanguageModel`].

pub mod model;

pub use model::{
    FinishReason, LanguageModel, Message, ModelError, ModelRequest, ModelResponse, Rates, ToolCall,
    ToolDefinition, Usage,
};
