//! The chat model of `serve` and `chat`: any model string `providers::resolve_model` knows
//! (`anthropic/…`, `openai/…`, `openrouter/…`, `gateway/…`; keys from the environment), or the
//! offline `builtin/scripted` playing a script file — so the server and the terminal client run
//! and are tested without network or keys.

use std::path::Path;
use std::sync::Arc;

use agent_runtime::builtin::SCRIPTED_ID;
use agent_runtime::{
    FinishReason, LanguageModel, ModelError, ModelResponse, ScriptedModel, ToolCall, Usage,
};
use serde::Deserialize;

/// Why the chat model could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ChatModelError {
    /// `builtin/scripted` without `--script`.
    #[error("{SCRIPTED_ID} plays a script: pass --script FILE (a JSON array of responses)")]
    MissingScript,
    /// `--script` given with another model.
    #[error("--script is for {SCRIPTED_ID} only (got --model {0})")]
    ScriptWithoutScripted(String),
    /// The script file cannot be read or parsed.
    #[error("script {path}: {detail}")]
    Script {
        /// The script file.
        path: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The provider refused the model string (unknown provider, missing key, ...).
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// One scripted model response: optional text and tool calls (arguments as JSON values).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptedResponse {
    /// The assistant's text.
    #[serde(default)]
    pub text: Option<String>,
    /// Tools to call, in order.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
}

/// One scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: serde_json::Value,
}

impl ScriptedResponse {
    /// The model response it plays (`tool_calls` finish when it calls tools, else `stop`).
    #[must_use]
    pub fn into_response(self, index: usize) -> ModelResponse {
        let tool_calls: Vec<ToolCall> = self
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: format!("call_{index}_{i}"),
                name: c.name,
                arguments: c.arguments.to_string(),
            })
            .collect();
        ModelResponse {
            finish: if tool_calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            },
            text: self.text,
            tool_calls,
            usage: Usage::default(),
        }
    }
}

/// A `builtin/scripted` model playing `responses` in order (shared by every turn of the process).
#[must_use]
pub fn scripted(responses: Vec<ScriptedResponse>) -> Arc<dyn LanguageModel> {
    Arc::new(ScriptedModel::new(
        responses
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.into_response(i))
            .collect(),
    ))
}

/// The chat model for `--model` (and `--script`): a provider's model resolved with `env`, or
/// `builtin/scripted` over the script file.
///
/// # Errors
/// [`ChatModelError`] naming what is missing or wrong.
pub fn resolve_chat_model(
    model: &str,
    script: Option<&Path>,
    env: &dyn types::EnvLookup,
) -> Result<Arc<dyn LanguageModel>, ChatModelError> {
    if model == SCRIPTED_ID {
        let path = script.ok_or(ChatModelError::MissingScript)?;
        let err = |detail: String| ChatModelError::Script {
            path: path.display().to_string(),
            detail,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let responses: Vec<ScriptedResponse> =
            serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
        return Ok(scripted(responses));
    }
    if script.is_some() {
        return Err(ChatModelError::ScriptWithoutScripted(model.to_owned()));
    }
    Ok(providers::resolve_model(
        model,
        env,
        &providers::no_builtins,
    )?)
}
