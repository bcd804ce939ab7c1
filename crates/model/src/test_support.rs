//! Builders for tests of this crate and its users (feature `test-support`): model turns with
//! the defaults a test does not care about, so a new field of [`ModelResponse`] or
//! [`ToolCall`] is filled in here once.
//!
//! A test overrides what it checks with struct update syntax:
//! `ModelResponse { usage, ..answer("done") }`.

use crate::model::{FinishReason, ModelResponse, ToolCall};

/// The model's final answer: `text`, no tool calls, finish `stop`, no tokens counted.
#[must_use]
pub fn answer(text: impl Into<String>) -> ModelResponse {
    ModelResponse {
        text: Some(text.into()),
        tool_calls: Vec::new(),
        finish: FinishReason::Stop,
        usage: types::Usage::default(),
    }
}

/// A turn of tool calls without prose, finish `tool-calls`, no tokens counted.
#[must_use]
pub fn tool_turn(calls: Vec<ToolCall>) -> ModelResponse {
    ModelResponse {
        text: None,
        tool_calls: calls,
        finish: FinishReason::ToolCalls,
        usage: types::Usage::default(),
    }
}

/// One tool call: the provider's call id, the tool's name and the raw JSON arguments.
#[must_use]
pub fn tool_call(
    id: impl Into<String>,
    name: impl Into<String>,
    arguments: impl Into<String>,
) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}
