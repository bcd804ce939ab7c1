//! `run_skill`: the model loop of one tick.

use rust_decimal::Decimal;
use serde::{Serialize, Serializer};
use serde_json::{Value, json};
use skill_schema::Skill;
use tools::{PROPOSE_ORDER, ToolContext, ToolError, build_tools, proposal_from_result};
use types::{JsonText, ProposedAction};

use model::{
    FinishReason, LanguageModel, Message, ModelError, ModelRequest, ModelResponse, ToolCall,
    ToolDefinition, Usage, estimate_cost,
};

/// Output-token budget of one model call unless [`RunOptions`] says otherwise.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 2_048;

/// Knobs of the loop that are not part of the skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// Output-token budget of each model call (`max_tokens` of the request).
    pub max_output_tokens: u32,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        }
    }
}

/// What one tool call did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolOutcome {
    /// The tool's result, as sent back to the model (serialised once, for the model and the
    /// record).
    Ok {
        /// The result's JSON text.
        result: JsonText,
    },
    /// The tool refused or failed. `recoverable` errors went back to the model as the tool's
    /// result; the others ended the tick.
    Error {
        /// The error as the model (and the record) sees it ([`ToolError`]'s `Display`).
        message: String,
        /// Whether it went back to the model ([`ToolError::is_recoverable`]).
        recoverable: bool,
    },
}

/// One tool call of a step: the raw arguments exactly as the model sent them, and the outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallRecord {
    /// The call id the model gave (echoed with the tool's result).
    pub id: String,
    /// The tool called.
    pub name: String,
    /// The arguments' JSON text, byte for byte as the model sent it (even when malformed).
    pub arguments: String,
    /// What the call did.
    pub outcome: ToolOutcome,
}

/// One model call and the tool calls it asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// 0-based.
    pub index: u32,
    /// The text the model wrote in this call; `None` when it wrote none.
    pub text: Option<String>,
    /// The tool calls it asked for, in order, with their outcomes.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Tokens this call used.
    pub usage: Usage,
    /// What the model reported for this call.
    pub finish: FinishReason,
}

/// Why a tick ended in `error`. None of these leaves a proposal behind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The model call of a step failed (provider error, timeout, refusal).
    #[error("model call failed at step {step}: {source}")]
    Model {
        /// The step (0-based).
        step: u32,
        /// The model's error.
        #[source]
        source: ModelError,
    },
    /// A tool call's arguments are not valid JSON.
    #[error("step {step}: the arguments of {tool} (call {call_id}) are not valid JSON: {message}")]
    MalformedArguments {
        /// The step (0-based).
        step: u32,
        /// The tool called.
        tool: String,
        /// The call's id.
        call_id: String,
        /// The JSON parser's error.
        message: String,
    },
    /// The model called a tool that is not in its registry.
    #[error("step {step}: the model called {tool:?}, which is not one of its tools ({available})")]
    UnknownTool {
        /// The step (0-based).
        step: u32,
        /// The name called.
        tool: String,
        /// The registered names, comma-separated.
        available: String,
    },
    /// The skill's tool whitelist could not be hydrated ([`build_tools`]): no model call was
    /// made.
    #[error("tools could not be prepared: {0}")]
    Tools(ToolError),
    /// A tool failed with an error that is not recoverable ([`ToolError::is_recoverable`]).
    #[error("step {step}: {source}")]
    Tool {
        /// The step (0-based).
        step: u32,
        /// The tool's error.
        #[source]
        source: ToolError,
    },
}

/// The outcome of one tick's model loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    /// Every text the model wrote this tick, in order, joined by a blank line.
    pub text: String,
    /// Every model call of the tick, in order.
    pub steps: Vec<Step>,
    /// The last successful `propose_order` of the tick; `None` means no-op, and is forced when
    /// the tick ends in error.
    pub proposed_action: Option<ProposedAction>,
    /// Summed over every model call, including those of a tick that ended in error.
    pub usage: Usage,
    /// Estimated cost of `usage` at the model's rates ([`estimate_cost`]), in USD.
    pub cost_usd: Decimal,
    /// False when the model is not in the rate table (`cost_usd` is then 0).
    pub cost_known: bool,
    /// Why the loop ended: the last call's finish reason; [`FinishReason::Error`] when the tick
    /// ended in error; [`FinishReason::ToolCalls`] when the last allowed step still asked for
    /// tools.
    pub finish_reason: FinishReason,
    /// Why the tick ended in error.
    #[serde(serialize_with = "display_opt")]
    pub error: Option<RunError>,
}

fn display_opt<S: Serializer>(e: &Option<RunError>, s: S) -> Result<S::Ok, S::Error> {
    match e {
        Some(e) => s.serialize_some(&e.to_string()),
        None => s.serialize_none(),
    }
}

/// The tool definitions of a registry, as the model is offered them.
#[must_use]
pub fn tool_definitions(registry: &tools::Registry) -> Vec<ToolDefinition> {
    registry
        .tools()
        .iter()
        .map(|t| ToolDefinition {
            name: t.name().to_owned(),
            description: t.description().to_owned(),
            parameters: t.parameters(),
        })
        .collect()
}

/// [`run_skill_with`] with default [`RunOptions`].
pub async fn run_skill(
    skill: &Skill,
    ctx: &ToolContext,
    model: &dyn LanguageModel,
    system_prompt: &str,
    user_message: &str,
) -> RunResult {
    run_skill_with(
        skill,
        ctx,
        model,
        system_prompt,
        user_message,
        RunOptions::default(),
    )
    .await
}

/// Runs the model loop of one tick: hydrate the skill's whitelisted tools with `ctx`, send the
/// system prompt and the user message, and execute tool calls for up to `skill.maxSteps`
/// model calls.
///
/// - The proposal is the **last successful** `propose_order` call (an explicit `no_op` is a
///   proposal too); none means no-op.
/// - Arguments that break a tool's schema or rules, a read-only refusal or missing data go back
///   to the model as the tool's result (`{"error": ...}`), so it can correct itself.
/// - Malformed JSON arguments, an unknown tool, a provider error or a tool set that cannot be
///   built end the tick: `finish_reason` is `error`, `proposed_action` is `None` (even if an
///   earlier call proposed), `error` says why. Never a panic, never an order.
/// - When the last allowed step still asked for tools, those calls run and the tick ends with
///   `tool-calls`.
///
/// The request's model name is the part of `model.id()` after the first `/`; cost is looked up
/// by the full `model.id()`.
pub async fn run_skill_with(
    skill: &Skill,
    ctx: &ToolContext,
    model: &dyn LanguageModel,
    system_prompt: &str,
    user_message: &str,
    options: RunOptions,
) -> RunResult {
    let registry = match build_tools(&skill.tools, ctx) {
        Ok(r) => r,
        Err(e) => {
            return new_loop().finish(model, FinishReason::Error, Some(RunError::Tools(e)));
        }
    };
    // The user message, then an assistant turn and a tool result per tool-calling step.
    let mut messages = Vec::with_capacity(4);
    messages.push(Message::User {
        content: user_message.to_owned(),
    });
    run_tool_loop(
        &registry,
        model,
        system_prompt,
        messages,
        skill.max_steps,
        options,
    )
    .await
}

fn new_loop() -> Loop {
    Loop {
        // A typical tick's steps; `max_steps` is the caller's to set, so it does not size this.
        steps: Vec::with_capacity(2),
        texts: Vec::new(),
        usage: Usage::default(),
        proposal: None,
    }
}

/// The model loop itself, over a registry the caller built (the trading agent's whitelisted
/// built-ins, or another catalog such as the chat coach's) and a conversation so far
/// (`messages`, ending with the user's turn): up to `max_steps` (at least 1) model calls with
/// every tool call dispatched through [`tools::Registry::call`] (so its read-only guard
/// applies), with the rules of [`run_skill_with`]. The proposal is the last successful
/// `propose_order`, if the registry has one.
pub async fn run_tool_loop(
    registry: &tools::Registry,
    model: &dyn LanguageModel,
    system_prompt: &str,
    messages: Vec<Message>,
    max_steps: u32,
    options: RunOptions,
) -> RunResult {
    let max_steps = max_steps.max(1);
    let mut run = new_loop();
    let model_name = model
        .id()
        .split_once('/')
        .map_or(model.id(), |(_, name)| name)
        .to_owned();
    let mut request = ModelRequest {
        model: model_name,
        system: system_prompt.to_owned(),
        messages,
        tools: tool_definitions(registry),
        max_output_tokens: options.max_output_tokens,
    };
    for index in 0..max_steps {
        let response = match model.generate(&request).await {
            Ok(r) => r,
            Err(source) => {
                return run.finish(
                    model,
                    FinishReason::Error,
                    Some(RunError::Model {
                        step: index,
                        source,
                    }),
                );
            }
        };
        let ModelResponse {
            text,
            tool_calls,
            finish,
            usage,
        } = response;
        run.usage += usage;
        if let Some(t) = text.as_deref().map(str::trim)
            && !t.is_empty()
        {
            run.texts.push(t.to_owned());
        }
        let mut step = Step {
            index,
            text,
            tool_calls: Vec::with_capacity(tool_calls.len()),
            usage,
            finish,
        };
        if tool_calls.is_empty() {
            run.steps.push(step);
            return run.finish(model, finish, None);
        }
        // The conversation keeps a copy of the calls; the step's records take the originals.
        request.messages.push(Message::Assistant {
            text: step.text.clone(),
            tool_calls: tool_calls.clone(),
        });
        for call in tool_calls {
            let args = if call.arguments.trim().is_empty() {
                Ok(json!({}))
            } else {
                serde_json::from_str::<Value>(&call.arguments)
            };
            let args = match args {
                Ok(v) => v,
                Err(e) => {
                    let message = e.to_string();
                    let error = RunError::MalformedArguments {
                        step: index,
                        tool: call.name.clone(),
                        call_id: call.id.clone(),
                        message: message.clone(),
                    };
                    step.tool_calls.push(record(
                        call,
                        ToolOutcome::Error {
                            message: format!("arguments are not valid JSON: {message}"),
                            recoverable: false,
                        },
                    ));
                    run.steps.push(step);
                    return run.finish(model, FinishReason::Error, Some(error));
                }
            };
            match registry.call(&call.name, args) {
                Ok(result) => {
                    if call.name == PROPOSE_ORDER
                        && let Some(p) = proposal_from_result(&result)
                    {
                        run.proposal = Some(p);
                    }
                    let result = JsonText::from(&result);
                    request.messages.push(Message::Tool {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: result.as_str().to_owned(),
                    });
                    step.tool_calls
                        .push(record(call, ToolOutcome::Ok { result }));
                }
                Err(e) if e.is_recoverable() => {
                    let message = e.to_string();
                    request.messages.push(Message::Tool {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: json!({ "error": message }).to_string(),
                    });
                    step.tool_calls.push(record(
                        call,
                        ToolOutcome::Error {
                            message,
                            recoverable: true,
                        },
                    ));
                }
                Err(e) => {
                    step.tool_calls.push(record(
                        call,
                        ToolOutcome::Error {
                            message: e.to_string(),
                            recoverable: false,
                        },
                    ));
                    run.steps.push(step);
                    let error = match e {
                        ToolError::UnknownTool { name, available } => RunError::UnknownTool {
                            step: index,
                            tool: name,
                            available: available.join(", "),
                        },
                        other => RunError::Tool {
                            step: index,
                            source: other,
                        },
                    };
                    return run.finish(model, FinishReason::Error, Some(error));
                }
            }
        }
        run.steps.push(step);
    }
    // The last allowed step still asked for tools; they ran, and the tick ends here.
    run.finish(model, FinishReason::ToolCalls, None)
}

fn record(call: ToolCall, outcome: ToolOutcome) -> ToolCallRecord {
    ToolCallRecord {
        id: call.id,
        name: call.name,
        arguments: call.arguments,
        outcome,
    }
}

struct Loop {
    steps: Vec<Step>,
    texts: Vec<String>,
    usage: Usage,
    proposal: Option<ProposedAction>,
}

impl Loop {
    fn finish(
        self,
        model: &dyn LanguageModel,
        finish_reason: FinishReason,
        error: Option<RunError>,
    ) -> RunResult {
        let cost = estimate_cost(model.id(), &self.usage);
        let failed = error.is_some();
        RunResult {
            text: self.texts.join("\n\n"),
            steps: self.steps,
            proposed_action: if failed { None } else { self.proposal },
            usage: self.usage,
            cost_usd: cost.usd,
            cost_known: cost.known,
            finish_reason: if failed {
                FinishReason::Error
            } else {
                finish_reason
            },
            error,
        }
    }
}
