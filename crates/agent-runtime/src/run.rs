//! `run_skill`: the model loop of one tick.

use std::time::Duration;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};
use skill_schema::Skill;
use tools::{PROPOSE_ORDER, ToolContext, ToolError, ToolOutput, build_tools};
use types::{
    JsonText, MAX_STEP_TEXT_CHARS, MAX_STORED_ARGUMENT_CHARS, MAX_STORED_RESULT_BYTES,
    MAX_STORED_STEPS_BYTES, MAX_TOOL_CALLS_PER_RESPONSE, ProposedAction, cut_chars,
};

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
    /// The whole loop's time budget, from its start (`None`: no deadline). Every model call is
    /// cut off when it runs out (the tick ends with [`RunError::Deadline`]), and providers get
    /// the deadline with the request ([`ModelRequest::deadline`]) so that no retry sleeps past
    /// it. Measured on tokio's monotonic timer, never the wall clock.
    pub deadline: Option<Duration>,
    /// What a call to an unknown tool or with arguments that are not JSON does.
    pub call_errors: CallErrors,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            deadline: None,
            call_errors: CallErrors::EndRun,
        }
    }
}

/// What the loop does with a tool call it cannot run: a tool name that is not in the registry,
/// or arguments that are not JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CallErrors {
    /// The run ends in error ([`RunError::UnknownTool`], [`RunError::MalformedArguments`]): a
    /// trading tick stops at a model that does not follow its tool set.
    #[default]
    EndRun,
    /// The error goes back to the model as the call's result (`{"error": ...}`, recorded as a
    /// recoverable error) and the run goes on: a conversation lets the model correct itself,
    /// and keeps what the other calls of the same response did.
    ToModel,
}

/// What one tool call did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", try_from = "StoredOutcome")]
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

/// A [`ToolOutcome`] as stored, read field by field: serde reads an internally tagged enum
/// through a buffer, which cannot hold a tool result's raw JSON text.
#[derive(Deserialize)]
struct StoredOutcome {
    status: String,
    /// Present (a JSON `null` too) or absent.
    #[serde(default, deserialize_with = "present")]
    result: Option<JsonText>,
    message: Option<String>,
    recoverable: Option<bool>,
}

/// A field that is there, whatever its JSON value.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<JsonText>, D::Error> {
    JsonText::deserialize(d).map(Some)
}

impl TryFrom<StoredOutcome> for ToolOutcome {
    type Error = String;

    fn try_from(o: StoredOutcome) -> Result<Self, String> {
        match (o.status.as_str(), o.result, o.message, o.recoverable) {
            ("ok", Some(result), None, None) => Ok(ToolOutcome::Ok { result }),
            ("error", None, Some(message), Some(recoverable)) => Ok(ToolOutcome::Error {
                message,
                recoverable,
            }),
            (status, ..) => Err(format!(
                "a tool call's outcome is {{\"status\": \"ok\", \"result\"}} or \
                 {{\"status\": \"error\", \"message\", \"recoverable\"}}, not status {status:?} \
                 with these fields"
            )),
        }
    }
}

/// One tool call of a step: the raw arguments exactly as the model sent them, and the outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// One model call and the tool calls it asked for. Serialised, a tick's steps are what its
/// snapshot stores; deserialised, what a reader of the stored ticks gets back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// What of the model's output was not executed or not stored ([`types`]' bounds); absent
    /// (and not serialised) when nothing was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<StepCut>,
}

/// What a step left out, by the bounds of `types` ([`MAX_TOOL_CALLS_PER_RESPONSE`],
/// [`MAX_STEP_TEXT_CHARS`], [`MAX_STORED_ARGUMENT_CHARS`], [`MAX_STORED_RESULT_BYTES`],
/// [`MAX_STORED_STEPS_BYTES`]). Stored with the step as `"cut": {...}`: the marker that the
/// record is not the model's whole output.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCut {
    /// Tool calls of the response that were refused (not executed, not recorded, not sent
    /// back): those after the first [`MAX_TOOL_CALLS_PER_RESPONSE`].
    pub refused_tool_calls: u64,
    /// Characters of the completion text cut (from the record and from the conversation).
    pub text_chars: u64,
    /// Characters of tool call ids, names and arguments cut from the record.
    pub argument_chars: u64,
    /// Bytes of tool results (and error messages) cut from the record (the model read them
    /// whole).
    pub result_bytes: u64,
    /// Tool calls that ran but are not recorded (the step was over the tick's budget).
    pub unrecorded_tool_calls: u64,
    /// True when the tick's steps had reached [`MAX_STORED_STEPS_BYTES`]: this step's text and
    /// tool calls are not stored at all (their sizes are counted above).
    pub over_tick_budget: bool,
}

/// The most bytes a step stripped of its text and calls serialises to (index, usage, finish
/// and a full `cut`, every number at its widest): what is set aside for each step still to
/// come, so the steps' JSON never exceeds [`MAX_STORED_STEPS_BYTES`] (for up to 682 steps).
const STRIPPED_STEP_BYTES: usize = 384;

/// Why a tick ended in `error`. None of these leaves a proposal behind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The loop's time budget ([`RunOptions::deadline`]) ran out while a model call was in
    /// flight.
    #[error("deadline exceeded at step {step}: the model loop's budget of {} ms ran out", budget.as_millis())]
    Deadline {
        /// The step (0-based) whose model call was cut off.
        step: u32,
        /// The budget that ran out.
        budget: Duration,
    },
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

impl RunError {
    /// True when the model failed, not a tool or the tool set: a provider error (HTTP, timeout,
    /// garbage, a retry-after beyond the deadline) or the loop's deadline. A tick ending so is
    /// counted as a model error, not a no-op.
    #[must_use]
    pub const fn is_model_error(&self) -> bool {
        matches!(self, RunError::Model { .. } | RunError::Deadline { .. })
    }
}

/// The outcome of one tick's model loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    /// Every text the model wrote this tick, in order, joined by a blank line.
    pub text: String,
    /// Every model call of the tick, in order.
    pub steps: Vec<Step>,
    /// [`RunResult::steps`] as JSON text, serialised once while the loop ran (what a snapshot
    /// stores); `None` when a step could not be serialised.
    #[serde(skip)]
    pub steps_json: Option<types::JsonText>,
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

impl RunResult {
    /// The error when the tick ended on a model failure ([`RunError::is_model_error`]).
    #[must_use]
    pub fn model_error(&self) -> Option<&RunError> {
        self.error.as_ref().filter(|e| e.is_model_error())
    }
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
    run_skill_owned(
        skill,
        ctx,
        model,
        system_prompt.to_owned(),
        user_message.to_owned(),
        options,
        None,
    )
    .await
    .0
}

/// [`run_skill_with`] over texts the caller owns, its steps serialised through `memo` (a step
/// equal to the one at its index in the memo, the caller's last run, reuses that one's JSON
/// text). The texts become the model request's without a copy, and are handed back after the
/// loop — `(result, system prompt, user message)`, the same texts. A tick keeps them for its
/// snapshot; copying the ≈17 kB into the request and freeing them after every tick was
/// measurable in a backtest (#17).
pub(crate) async fn run_skill_owned(
    skill: &Skill,
    ctx: &ToolContext,
    model: &dyn LanguageModel,
    system_prompt: String,
    user_message: String,
    options: RunOptions,
    memo: Option<&mut StepMemo>,
) -> (RunResult, String, String) {
    let registry = match build_tools(&skill.tools, ctx) {
        Ok(r) => r,
        Err(e) => {
            let run = new_loop(None).finish(model, FinishReason::Error, Some(RunError::Tools(e)));
            return (run, system_prompt, user_message);
        }
    };
    // The user message, then an assistant turn and a tool result per tool-calling step.
    let mut messages = Vec::with_capacity(4);
    messages.push(Message::User {
        content: user_message,
    });
    let (run, request) = run_tool_loop_owned(
        &registry,
        model,
        system_prompt,
        messages,
        skill.max_steps,
        options,
        memo,
    )
    .await;
    // The loop only appends to the conversation: its first message is the user's, as given.
    let mut messages = request.messages.into_iter();
    let user_message = match messages.next() {
        Some(Message::User { content }) => content,
        _ => unreachable_user_message(),
    };
    (run, request.system, user_message)
}

/// Never called: [`drive`] only appends to the conversation it was given.
#[cold]
fn unreachable_user_message() -> String {
    debug_assert!(false, "the model loop removed the user message");
    String::new()
}

fn new_loop(memo: Option<&mut StepMemo>) -> Loop<'_> {
    Loop {
        memo,
        // A typical tick's steps; `max_steps` is the caller's to set, so it does not size this.
        steps: Vec::with_capacity(2),
        texts: Vec::new(),
        usage: Usage::default(),
        proposal: None,
        stored: 0,
        steps_json: Vec::with_capacity(2),
        max_steps: 1,
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
    run_tool_loop_owned(
        registry,
        model,
        system_prompt.to_owned(),
        messages,
        max_steps,
        options,
        None,
    )
    .await
    .0
}

/// [`run_tool_loop`] over a system prompt the caller owns, its steps serialised through
/// `memo`, handing the request back after the loop (its system prompt and conversation, the
/// given messages first).
async fn run_tool_loop_owned(
    registry: &tools::Registry,
    model: &dyn LanguageModel,
    system_prompt: String,
    messages: Vec<Message>,
    max_steps: u32,
    options: RunOptions,
    memo: Option<&mut StepMemo>,
) -> (RunResult, ModelRequest) {
    let model_name = model
        .id()
        .split_once('/')
        .map_or(model.id(), |(_, name)| name)
        .to_owned();
    let mut request = ModelRequest {
        model: model_name,
        system: system_prompt,
        messages,
        tools: tool_definitions(registry),
        max_output_tokens: options.max_output_tokens,
        deadline: None,
    };
    let run = drive(&mut request, registry, model, max_steps, options, memo).await;
    (run, request)
}

/// The loop of [`run_tool_loop_owned`] over its `request`: it only appends to the
/// conversation.
async fn drive(
    request: &mut ModelRequest,
    registry: &tools::Registry,
    model: &dyn LanguageModel,
    max_steps: u32,
    options: RunOptions,
    memo: Option<&mut StepMemo>,
) -> RunResult {
    let max_steps = max_steps.max(1);
    let mut run = new_loop(memo);
    run.max_steps = max_steps;
    let deadline = options
        .deadline
        .map(|budget| (budget, tokio::time::Instant::now() + budget));
    request.deadline = deadline.map(|(_, at)| at.into_std());
    for index in 0..max_steps {
        let generated = match deadline {
            None => model.generate(request).await,
            Some((budget, at)) => {
                if let Ok(r) = tokio::time::timeout_at(at, model.generate(request)).await {
                    r
                } else {
                    return run.finish(
                        model,
                        FinishReason::Error,
                        Some(RunError::Deadline {
                            step: index,
                            budget,
                        }),
                    );
                }
            }
        };
        let response = match generated {
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
            mut tool_calls,
            finish,
            usage,
        } = response;
        run.usage += usage;
        let mut cut = StepCut::default();
        // A completion is kept (recorded, and sent back to the model) up to its bound.
        let text = text.map(|t| {
            let (kept, dropped) = cut_chars(&t, MAX_STEP_TEXT_CHARS);
            if dropped == 0 {
                t
            } else {
                cut.text_chars = dropped as u64;
                kept.to_owned()
            }
        });
        if let Some(t) = text.as_deref().map(str::trim)
            && !t.is_empty()
        {
            run.texts.push(t.to_owned());
        }
        // Only the first calls run; the rest are refused, counted, and left out of the
        // conversation (so every call it holds has its result).
        if tool_calls.len() > MAX_TOOL_CALLS_PER_RESPONSE {
            cut.refused_tool_calls = (tool_calls.len() - MAX_TOOL_CALLS_PER_RESPONSE) as u64;
            tool_calls.truncate(MAX_TOOL_CALLS_PER_RESPONSE);
        }
        let mut step = Step {
            index,
            text,
            tool_calls: Vec::with_capacity(tool_calls.len()),
            usage,
            finish,
            cut: Some(cut),
        };
        if tool_calls.is_empty() {
            run.push(step);
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
                Err(e) if options.call_errors == CallErrors::ToModel => {
                    let message = registry.show(format!(
                        "{}: arguments are not valid JSON: {e}; send one JSON object",
                        call.name
                    ));
                    error_to_model(request, &mut step, call, message);
                    continue;
                }
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
                    run.push(step);
                    return run.finish(model, FinishReason::Error, Some(error));
                }
            };
            match registry.call_output(&call.name, args).await {
                // The text as the model reads it (a blind run's lens; unchanged otherwise).
                Ok(ToolOutput { result, proposal }) => {
                    if call.name == PROPOSE_ORDER
                        && let Some(p) = proposal
                    {
                        run.proposal = Some(p);
                    }
                    request.messages.push(Message::Tool {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: result.as_str().to_owned(),
                    });
                    step.tool_calls
                        .push(record(call, ToolOutcome::Ok { result }));
                }
                Err(e)
                    if e.is_recoverable()
                        || (options.call_errors == CallErrors::ToModel
                            && matches!(e, ToolError::UnknownTool { .. })) =>
                {
                    error_to_model(request, &mut step, call, registry.show(e.to_string()));
                }
                Err(e) => {
                    step.tool_calls.push(record(
                        call,
                        ToolOutcome::Error {
                            message: e.to_string(),
                            recoverable: false,
                        },
                    ));
                    run.push(step);
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
        run.push(step);
    }
    // The last allowed step still asked for tools; they ran, and the tick ends here.
    run.finish(model, FinishReason::ToolCalls, None)
}

/// `call`'s error sent back to the model as its result (`{"error": message}`) and recorded as a
/// recoverable error of `step`.
fn error_to_model(request: &mut ModelRequest, step: &mut Step, call: ToolCall, message: String) {
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

fn record(call: ToolCall, outcome: ToolOutcome) -> ToolCallRecord {
    ToolCallRecord {
        id: call.id,
        name: call.name,
        arguments: call.arguments,
        outcome,
    }
}

/// `text` cut to `max` characters in place; the characters cut.
fn cut_string(text: &mut String, max: usize) -> u64 {
    let (kept, dropped) = cut_chars(text, max);
    if dropped > 0 {
        let end = kept.len();
        text.truncate(end);
    }
    dropped as u64
}

/// A tool call's record cut to the stored bounds; adds what was cut to `cut`.
fn bound_record(call: &mut ToolCallRecord, cut: &mut StepCut) {
    cut.argument_chars += cut_string(&mut call.id, MAX_STORED_ARGUMENT_CHARS)
        + cut_string(&mut call.name, MAX_STORED_ARGUMENT_CHARS)
        + cut_string(&mut call.arguments, MAX_STORED_ARGUMENT_CHARS);
    match &mut call.outcome {
        ToolOutcome::Ok { result } => {
            let len = result.as_str().len();
            if len > MAX_STORED_RESULT_BYTES {
                cut.result_bytes += len as u64;
                *result = JsonText::from(&json!({ "cut": true, "bytes": len }));
            }
        }
        ToolOutcome::Error { message, .. } => {
            let before = message.len();
            if cut_string(message, MAX_STORED_RESULT_BYTES / 4) > 0 {
                cut.result_bytes += (before - message.len()) as u64;
            }
        }
    }
}

/// A step's JSON, serialised once: its length is what the bound counts, and the steps' JSON
/// for the snapshot is these texts joined ([`RunResult::steps_json`]). `None` when the step
/// cannot be serialised.
fn step_json(step: &Step) -> Option<Box<serde_json::value::RawValue>> {
    serde_json::value::to_raw_value(step).ok()
}

/// The JSON text of the steps of a deployment's last run, by step index, kept between its ticks
/// (in [`RenderCache`](crate::RenderCache)): a rule-based model's steps are the same on most
/// ticks, and serialising them was ≈10k instructions a tick.
#[derive(Debug, Clone, Default)]
pub(crate) struct StepMemo(Vec<Option<(Step, Box<serde_json::value::RawValue>)>>);

impl StepMemo {
    /// The JSON text of the remembered step at `step`'s index, when it is the same record.
    fn get(&self, step: &Step) -> Option<&serde_json::value::RawValue> {
        let (remembered, json) = self.0.get(step.index as usize)?.as_ref()?;
        same_record(remembered, step).then_some(&**json)
    }

    /// Keeps `step` and its JSON text for its index, in place of what was there.
    fn remember(&mut self, step: &Step, json: &serde_json::value::RawValue) {
        let at = step.index as usize;
        if self.0.len() <= at {
            self.0.resize(at + 1, None);
        }
        self.0[at] = Some((step.clone(), json.to_owned()));
    }
}

/// Whether `a` and `b` serialise to the same JSON text: every field equal, a tool's result by
/// its text (`JsonText`'s `==` is JSON equality, which different texts share). Written out
/// field by field: a field added to `Step` or `ToolCallRecord` must be added here.
fn same_record(a: &Step, b: &Step) -> bool {
    let Step {
        index,
        text,
        tool_calls,
        usage,
        finish,
        cut,
    } = a;
    *index == b.index
        && *text == b.text
        && *usage == b.usage
        && *finish == b.finish
        && *cut == b.cut
        && tool_calls.len() == b.tool_calls.len()
        && tool_calls.iter().zip(&b.tool_calls).all(|(x, y)| {
            let ToolCallRecord {
                id,
                name,
                arguments,
                outcome,
            } = x;
            *id == y.id
                && *name == y.name
                && *arguments == y.arguments
                && match (outcome, &y.outcome) {
                    (ToolOutcome::Ok { result: r }, ToolOutcome::Ok { result: q }) => {
                        r.as_str() == q.as_str()
                    }
                    (
                        ToolOutcome::Error {
                            message: m,
                            recoverable: r,
                        },
                        ToolOutcome::Error {
                            message: n,
                            recoverable: q,
                        },
                    ) => m == n && r == q,
                    _ => false,
                }
        })
}

/// Bytes of a step's JSON; a step that cannot be serialised counts as huge.
fn json_len(json: Option<&serde_json::value::RawValue>) -> usize {
    json.map_or(usize::MAX, |j| j.get().len())
}

struct Loop<'m> {
    /// The JSON of the steps of the caller's last run (a deployment's last tick), by index.
    memo: Option<&'m mut StepMemo>,
    steps: Vec<Step>,
    texts: Vec<String>,
    usage: Usage,
    proposal: Option<ProposedAction>,
    /// Bytes of the JSON of the steps recorded so far.
    stored: usize,
    /// Each step's JSON (see [`step_json`]).
    steps_json: Vec<Option<Box<serde_json::value::RawValue>>>,
    /// The loop's step limit (room is kept for the steps not run yet).
    max_steps: u32,
}

impl Loop<'_> {
    /// The JSON text of `step`: the memo's when it holds the same record at its index (then
    /// `true`), else serialised.
    fn json_of(&self, step: &Step) -> (Option<Box<serde_json::value::RawValue>>, bool) {
        match self.memo.as_deref().and_then(|m| m.get(step)) {
            Some(json) => (Some(json.to_owned()), true),
            None => (step_json(step), false),
        }
    }

    /// Records `step` within the stored bounds: each call's id, name, arguments and result cut
    /// to theirs, and once the steps reach [`MAX_STORED_STEPS_BYTES`], the step's text,
    /// arguments and results left out. What was cut is in `step.cut` (`None` when nothing).
    fn push(&mut self, mut step: Step) {
        let mut cut = step.cut.take().unwrap_or_default();
        for call in &mut step.tool_calls {
            bound_record(call, &mut cut);
        }
        // Room is kept for the steps still to come, stripped, and for this step's `cut` (not
        // in `len` yet) and the array's separators.
        let to_come = (self.max_steps as usize).saturating_sub(self.steps.len());
        let reserve = to_come.saturating_mul(STRIPPED_STEP_BYTES);
        let (mut json, mut remembered) = self.json_of(&step);
        if self
            .stored
            .saturating_add(json_len(json.as_deref()))
            .saturating_add(reserve)
            > MAX_STORED_STEPS_BYTES
        {
            cut.over_tick_budget = true;
            if let Some(t) = step.text.take() {
                cut.text_chars += t.chars().count() as u64;
            }
            for call in std::mem::take(&mut step.tool_calls) {
                cut.unrecorded_tool_calls += 1;
                cut.argument_chars += call.arguments.chars().count() as u64;
                cut.result_bytes += match &call.outcome {
                    ToolOutcome::Ok { result } => result.as_str().len(),
                    ToolOutcome::Error { message, .. } => message.len(),
                } as u64;
            }
            (json, remembered) = self.json_of(&step);
        }
        if cut != StepCut::default() {
            step.cut = Some(cut);
            (json, remembered) = self.json_of(&step);
        }
        self.stored = self.stored.saturating_add(json_len(json.as_deref()));
        if let (false, Some(memo), Some(json)) =
            (remembered, self.memo.as_deref_mut(), json.as_deref())
        {
            memo.remember(&step, json);
        }
        self.steps.push(step);
        self.steps_json.push(json);
    }

    fn finish(
        self,
        model: &dyn LanguageModel,
        finish_reason: FinishReason,
        error: Option<RunError>,
    ) -> RunResult {
        let cost = estimate_cost(model.id(), &self.usage);
        let failed = error.is_some();
        // The steps' JSON array from each step's JSON, copied, not serialised again.
        let steps_json = self
            .steps_json
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .and_then(|json| types::JsonText::new(&json).ok());
        RunResult {
            text: self.texts.join("\n\n"),
            steps: self.steps,
            steps_json,
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

#[cfg(test)]
mod memo_tests {
    use serde_json::value::RawValue;

    use super::*;

    fn step(result: &str, usage: u64) -> Step {
        Step {
            index: 0,
            text: Some("evaluating".to_owned()),
            tool_calls: vec![ToolCallRecord {
                id: "c1".to_owned(),
                name: "propose_order".to_owned(),
                arguments: r#"{"action":"no_op"}"#.to_owned(),
                outcome: ToolOutcome::Ok {
                    result: JsonText::from_text(result.to_owned()).expect("json"),
                },
            }],
            usage: Usage {
                input: usage,
                ..Usage::default()
            },
            finish: FinishReason::ToolCalls,
            cut: None,
        }
    }

    /// The memo gives a step's own serialisation back only for the same record: a tool result
    /// that is the same JSON written differently (`JsonText`'s `==` holds them equal) or any
    /// other field changed is serialised again.
    #[test]
    fn the_memo_serves_only_the_same_record() {
        let mut memo = StepMemo::default();
        let a = step(r#"{"a":1,"b":2}"#, 5);
        let json = step_json(&a).expect("json");
        memo.remember(&a, &json);
        assert_eq!(memo.get(&a.clone()).map(RawValue::get), Some(json.get()));
        let reordered = step(r#"{"b":2,"a":1}"#, 5);
        assert!(
            matches!(
                (&a.tool_calls[0].outcome, &reordered.tool_calls[0].outcome),
                (ToolOutcome::Ok { result: x }, ToolOutcome::Ok { result: y }) if x == y
            ),
            "JSON-equal results"
        );
        assert!(memo.get(&reordered).is_none());
        assert!(memo.get(&step(r#"{"a":1,"b":2}"#, 6)).is_none());
        let mut other_index = a.clone();
        other_index.index = 1;
        assert!(memo.get(&other_index).is_none());
        // Remembering another record replaces the one at its index.
        let b = step(r#"{"b":2,"a":1}"#, 5);
        let b_json = step_json(&b).expect("json");
        memo.remember(&b, &b_json);
        assert_eq!(memo.get(&b).map(RawValue::get), Some(b_json.get()));
        assert!(memo.get(&a).is_none());
    }

    /// Steps read back from their stored JSON are the steps recorded, and serialise to the same
    /// text: every outcome (a result that is an object, a string, `null`; a recoverable and a
    /// fatal error), a step without text or calls, and one that carries what was cut.
    #[test]
    fn stored_steps_read_back_as_the_steps_recorded() {
        let mut steps = vec![step(r#"{"a":[1,2.50,"x\ny"]}"#, 7), step(r#""text""#, 1)];
        steps[1].index = 1;
        steps[1].text = Some("thinking\naloud".into());
        steps[1].tool_calls.push(ToolCallRecord {
            id: "c2".into(),
            name: "mcp__news__latest".into(),
            arguments: "{not json".into(),
            outcome: ToolOutcome::Error {
                message: "invalid arguments".into(),
                recoverable: true,
            },
        });
        steps[1].tool_calls.push(ToolCallRecord {
            id: "c3".into(),
            name: "fetch_news_sentiment".into(),
            arguments: "{}".into(),
            outcome: ToolOutcome::Ok {
                result: JsonText::from_text("null".into()).expect("json"),
            },
        });
        steps.push(Step {
            index: 2,
            text: None,
            tool_calls: vec![],
            usage: Usage::default(),
            finish: FinishReason::Error,
            cut: Some(StepCut {
                refused_tool_calls: 3,
                over_tick_budget: true,
                ..StepCut::default()
            }),
        });
        steps[0].tool_calls[0].outcome = ToolOutcome::Error {
            message: "the tool failed".into(),
            recoverable: false,
        };
        steps[0].tool_calls.push(ToolCallRecord {
            id: "c4".into(),
            name: PROPOSE_ORDER.into(),
            arguments: r#"{"action":"no_op"}"#.into(),
            outcome: ToolOutcome::Ok {
                result: JsonText::from_text(r#"{"a":[1,2.50,"x\ny"]}"#.into()).expect("json"),
            },
        });
        let text = serde_json::to_string(&steps).expect("json");
        let read: Vec<Step> = serde_json::from_str(&text).expect("read back");
        assert_eq!(read, steps);
        assert_eq!(serde_json::to_string(&read).expect("json"), text);
        // Malformed outcomes are refused, naming the shape.
        for bad in [
            r#"{"status":"ok"}"#,
            r#"{"status":"error","message":"m"}"#,
            r#"{"status":"done","result":1}"#,
        ] {
            let e = serde_json::from_str::<ToolOutcome>(bad).expect_err(bad);
            assert!(
                e.to_string().contains("a tool call's outcome is"),
                "{bad}: {e}"
            );
        }
    }
}
