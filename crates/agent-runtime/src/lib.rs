//! One tick of the trading agent: assemble the context, run the model loop with tools, extract
//! the proposed action, report usage and cost.
//!
//! - [`assemble_context`] renders the user message (sections in a fixed order, deterministic,
//!   point in time) with per-section token estimates.
//! - [`run_skill`] runs up to `maxSteps` model calls with the skill's whitelisted tools and
//!   returns the text, every step, the last successful `propose_order` as the proposal, usage
//!   and cost.
//! - [`run_agent_tick`] does both around `prompt_compose::compose_system_prompt`.
//! - [`builtin`] holds the offline models (`builtin/scripted`, `builtin/sma-cross:FAST:SLOW`).
//! - The model interface ([`LanguageModel`], messages, [`Usage`], [`Rates`], the rate table
//!   and [`estimate_cost`]) is the `model` crate's, re-exported here for the runtime's
//!   users.
//!
//! What this crate must never do: touch a database, an exchange, an HTTP client or the wall
//! clock (data arrives through the `tools::ToolContext` traits, time as `ctx.now`, the model
//! through [`LanguageModel`]); execute an order (it only extracts a proposal; the
//! execution engine decides); panic on anything a model or a data source sends.
//!
//! ```
//! use std::sync::Arc;
//! use agent_runtime::{FinishReason, ModelResponse, RenderCache, ScriptedModel, ToolCall, run_agent_tick};
//! use chrono::{Duration, TimeZone, Utc};
//! use rust_decimal::Decimal;
//! use tools::{Preloaded, RunMode, ToolContext};
//! use types::{Bar, Interval, PortfolioSnapshot};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/skills/eurusd-sma-cross.yaml");
//! let skill = skill_schema::load_skill(path.as_ref())?.skill;
//! let start = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
//! let bars: Vec<Bar> = (0..30)
//!     .map(|i| {
//!         let close = Decimal::new(10_800 + i, 4);
//!         Bar { time: start + Duration::hours(i), open: close, high: close, low: close, close, volume: Decimal::ONE }
//!     })
//!     .collect();
//! let now = start + Duration::hours(30);
//! let mut data = Preloaded::new().with_bars("EURUSD", Interval::H1, bars);
//! data.portfolio = Some(PortfolioSnapshot {
//!     at: now,
//!     equity_usd: Decimal::from(10_000),
//!     available_margin_usd: Decimal::from(10_000),
//!     positions: vec![],
//!     realized_pnl_usd: Decimal::ZERO,
//!     fees_paid_usd: Decimal::ZERO,
//! });
//! let data = Arc::new(data);
//! let ctx = ToolContext::new(now, RunMode::Trade, skill.context.symbols.clone(), data.clone(), data);
//!
//! // A scripted model: one `propose_order` call, then a final answer.
//! let model = ScriptedModel::new(vec![
//!     ModelResponse {
//!         text: None,
//!         tool_calls: vec![ToolCall {
//!             id: "call-1".into(),
//!             name: "propose_order".into(),
//!             arguments: r#"{"action":"open_long","symbol":"EURUSD","size_usd":1000,"reason":"trend"}"#.into(),
//!         }],
//!         finish: FinishReason::ToolCalls,
//!         usage: Default::default(),
//!     },
//!     ModelResponse { text: Some("Long EURUSD.".into()), tool_calls: vec![], finish: FinishReason::Stop, usage: Default::default() },
//! ]);
//!
//! let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! let out = rt.block_on(run_agent_tick(&skill, &ctx, &model, None, None, &mut RenderCache::default()))?;
//! assert!(out.context.text.contains("## Market context"));
//! assert_eq!(out.run.proposed_action.expect("proposed").symbol, "EURUSD");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod builtin;
pub mod context;
mod run;

pub use builtin::{ScriptedModel, SmaCrossModel, builtin_model};
pub use context::{
    AssembledContext, ContextError, RenderCache, SectionEstimate, SymbolBars, TickView,
    assemble_context, assemble_context_cached, render_context, trading_memory_block,
};
/// A `mockall` mock of [`LanguageModel`] (feature `mock`).
#[cfg(feature = "mock")]
pub use model::MockLanguageModel;
pub use model::{
    CostEstimate, FinishReason, LanguageModel, Message, ModelError, ModelRequest, ModelResponse,
    Rates, ToolCall, ToolDefinition, Usage, estimate_cost, rates_for,
};
pub use run::{
    CallErrors, DEFAULT_MAX_OUTPUT_TOKENS, RunError, RunOptions, RunResult, Step, StepCut,
    ToolCallRecord, ToolOutcome, run_skill, run_skill_with, run_tool_loop, tool_definitions,
};
pub use tools::{LastDecisionSnapshot, to_last_decision_snapshot};

use prompt_compose::{ComposeError, Lessons};
use skill_schema::Skill;
use tools::ToolContext;

/// Everything one tick produced: what the model saw and what it did.
#[derive(Debug, Clone, PartialEq)]
pub struct TickOutput {
    /// The composed system prompt, byte for byte.
    pub system_prompt: String,
    /// The user message with its per-section estimates.
    pub context: AssembledContext,
    /// What the model loop did (steps, proposal, usage, cost).
    pub run: RunResult,
}

/// Why a tick could not start. (Failures once the model loop runs are in [`RunResult`].)
#[derive(Debug, thiserror::Error)]
pub enum AgentTickError {
    /// A data source of the context failed.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// The system prompt could not be composed from the skill and lessons.
    #[error("composing the system prompt: {0}")]
    Compose(#[from] ComposeError),
}

/// One tick: [`assemble_context`], `prompt_compose::compose_system_prompt`, then [`run_skill`].
///
/// `cache` carries what the previous tick of the same deployment (same skill) rendered: bar
/// rows still in the window, and the system prompt, recomposed only when the lessons change.
/// Pass a fresh [`RenderCache`] for a one-off tick; the texts are identical either way.
///
/// # Errors
/// [`AgentTickError`] when the context cannot be assembled (a data source failed) or the system
/// prompt cannot be composed; the model is not called then.
pub async fn run_agent_tick(
    skill: &Skill,
    ctx: &ToolContext,
    model: &dyn LanguageModel,
    lessons: Option<&Lessons>,
    last_decision: Option<&LastDecisionSnapshot>,
    cache: &mut RenderCache,
) -> Result<TickOutput, AgentTickError> {
    let view = TickView::read(skill, ctx)?;
    run_agent_tick_with(
        skill,
        ctx,
        &view,
        model,
        lessons,
        last_decision,
        cache,
        RunOptions::default(),
    )
    .await
}

/// [`run_agent_tick`] over what the caller already read ([`TickView`]): the context renders from
/// `view` ([`context::render_context`]); `ctx` serves the model's tool calls (and the news and
/// events sections); `options` are the model loop's ([`run_skill_with`]: output tokens, the
/// tick's deadline).
///
/// # Errors
/// As [`run_agent_tick`].
// Each input is borrowed from a different owner (the tick's state, its view, the skill).
#[allow(clippy::too_many_arguments)]
pub async fn run_agent_tick_with(
    skill: &Skill,
    ctx: &ToolContext,
    view: &TickView<'_>,
    model: &dyn LanguageModel,
    lessons: Option<&Lessons>,
    last_decision: Option<&LastDecisionSnapshot>,
    cache: &mut RenderCache,
    options: RunOptions,
) -> Result<TickOutput, AgentTickError> {
    let mut context = context::render_context(skill, ctx, view, last_decision, cache)?;
    let mut system_prompt = match &cache.system_prompt {
        Some((cached_lessons, text)) if cached_lessons.as_ref() == lessons => text.clone(),
        _ => {
            let text = prompt_compose::compose_system_prompt(skill, lessons)?;
            cache.system_prompt = Some((lessons.cloned(), text.clone()));
            text
        }
    };
    // A blind run's lens: the texts returned (and stored) are the ones the model reads.
    if let Some(lens) = &ctx.lens {
        system_prompt = lens.show(&system_prompt);
        context.text = lens.show(&context.text);
    }
    // The texts go into the model request and come back for the snapshot, never copied.
    let (run, system_prompt, text) = run::run_skill_owned(
        skill,
        ctx,
        model,
        system_prompt,
        std::mem::take(&mut context.text),
        options,
        Some(&mut cache.steps),
    )
    .await;
    context.text = text;
    Ok(TickOutput {
        system_prompt,
        context,
        run,
    })
}
