//! The chat coach (ADR-0020): a conversation with a coach that knows the caller's deployments,
//! trades, lessons and the facts it remembered about them.
//!
//! - [`chat_registry`]: the chat tool catalog of a mode ([`catalog`]: coach, authoring, ops) —
//!   the ADR-0020 memory reads (`get_my_deployments`, `get_skill_performance` with `detail`,
//!   `get_upcoming_events` with `your_exposure`), `remember` / `forget`, `explain_decision`
//!   and `list_rejections` (stored ticks, read when called), `get_market`, and the authoring
//!   reads `list_my_skills`, `get_skill`, `validate_skill`, `preview_skill`, and in every mode
//!   `prepare_action` — a [`tools::Registry`] of its own, same [`tools::Tool`] trait, same
//!   read-only guard, at most [`CHAT_TOOL_CAP`] tools a mode;
//! - [`actions`]: consent before any action — the coach changes no deployment or skill; its
//!   `prepare_action` keeps a pending action that only the user's confirmation applies;
//! - [`chat_system_prompt`]: the 10 most recently referenced facts (a write references a fact),
//!   read without marking them and rendered under "## What I know about you" by
//!   `prompt-compose`, each with its handle ([`types::FactHandle`]) for `forget`;
//! - [`run_chat_turn`]: one turn over `agent_runtime::run_tool_loop` (the trading agent's loop),
//!   with the conversation history, usage and cost; only a turn that completed writes its fact
//!   changes, keeps the actions it prepared and marks the facts it showed referenced;
//! - [`market`]: which bars a turn needs ([`bar_needs`]: around the past events its open
//!   positions may be asked about, and the recent bars of its symbols) and [`ChatMarket`], the
//!   seam that loads them (and funding and open interest) before the tools run — a source's
//!   failure is logged and the tools say what could not be measured.
//!
//! Storage: generic over `db`'s store traits ([`ChatStore`]), like `tick`. Every read is keyed
//! by the caller's user id or one of the caller's deployments. Most tools are synchronous over
//! [`ChatData`], loaded before the turn; the two tick reads ask the store when called
//! ([`TickReads`]); `remember` / `forget` queue their change and the turn writes it when the
//! loop ends.
//!
//! The catalog over a caller's loaded data: `remember` checks its bounds and queues the fact;
//! nothing is written until the turn ends ([`run_chat_turn`] writes the journal's changes).
//!
//! ```
//! use chat::{CHAT_TOOL_CAP, ChatData, ChatToolContext, FactOp, chat_registry};
//! use chrono::{TimeZone, Utc};
//! use prompt_compose::ChatMode;
//! use tools::RunMode;
//! use uuid::Uuid;
//!
//! let data = ChatData {
//!     user_id: Uuid::from_u128(7),
//!     now: Utc.with_ymd_and_hms(2026, 6, 4, 12, 0, 0).unwrap(),
//!     deployments: vec![],
//!     skill_notes: vec![],
//!     skills: vec![],
//!     facts: vec![],
//!     upcoming: vec![],
//!     past: vec![],
//! };
//! let ctx = ChatToolContext::new(data, Uuid::from_u128(1));
//! let registry = chat_registry(&ctx, ChatMode::Coach, RunMode::Trade);
//! assert!(registry.names().len() <= CHAT_TOOL_CAP);
//!
//! let args = serde_json::json!({ "fact": "Trades only EURUSD, never on Fridays" });
//! registry.call("remember", args).unwrap();
//! assert!(matches!(&ctx.journal.take()[..], [FactOp::Remember { fact, .. }] if fact.starts_with("Trades only")));
//!
//! // Too short a fact is refused at the door, and nothing is queued.
//! assert!(registry.call("remember", serde_json::json!({ "fact": "EU" })).is_err());
//! assert!(ctx.journal.take().is_empty());
//! ```

pub mod actions;
mod authoring;
mod catalog;
pub mod conversation;
mod data;
mod decisions;
pub mod exposure;
pub mod market;
mod market_brief;
mod style;
mod turn;

pub use actions::{ActionJournal, DEFAULT_ACTION_TTL, PREPARE_ACTION};
pub use authoring::{
    GET_SKILL, LIST_MY_SKILLS, PREVIEW_EQUITY_USD, PREVIEW_SKILL, VALIDATE_SKILL, check_draft,
    o200k_tokens,
};
pub use catalog::{
    CHAT_ACTOR, CHAT_TOOL_CAP, ChatToolContext, FORGET, FactOp, GET_MY_DEPLOYMENTS,
    GET_SKILL_PERFORMANCE, GET_UPCOMING_EVENTS, Journal, Marks, PerformanceSummary, REMEMBER,
    TradeRow, catalog, chat_registry, sharpe_per_trade, summarize,
};
pub use data::{
    ChatData, ChatStore, DeploymentData, EXPOSURE_LOOKBACK_DAYS, MAX_LOOKAHEAD_HOURS, NotesData,
    OwnedSkill, SkillNotes, TRADES_DETAIL_LIMIT, load_chat_data,
};
pub use decisions::{
    EXPLAIN_DECISION, LIST_REJECTIONS, MAX_REJECTION_HOURS, NoTicks, REJECTIONS_LISTED, TickFuture,
    TickReads,
};
pub use market::{
    BarNeed, BarsUnavailable, ChatMarket, ChatMarketError, FixedMarket, LoadedBars, RECENT_BARS,
    RECENT_INTERVAL, bar_needs, market_symbols,
};
pub use market_brief::{GET_MARKET, MARKET_BARS, MAX_MARKET_BARS};
pub use turn::{
    ChatTurn, ChatTurnOutput, DEFAULT_CHAT_MAX_STEPS, chat_system_prompt, out_of_steps_answer,
    run_chat_turn, transcript,
};

/// Why a chat turn could not run.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// A store read or write failed.
    #[error("store: {0}")]
    Store(#[from] db::DbError),
    /// The chat system prompt could not be composed.
    #[error(transparent)]
    Compose(#[from] prompt_compose::ComposeError),
}
