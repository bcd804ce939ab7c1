//! The chat coach (ADR-0020): a conversation with a coach that knows the caller's deployments,
//! trades, lessons and the facts it remembered about them.
//!
//! - [`chat_registry`]: the chat tool catalog (`get_my_deployments`, `get_skill_performance`
//!   with ADR-0020's `detail`, `get_upcoming_events` with `your_exposure`, `remember`,
//!   `forget`, `prepare_action`) — a [`tools::Registry`] of its own, same [`tools::Tool`]
//!   trait, same read-only guard, at most [`CHAT_TOOL_CAP`] tools;
//! - [`actions`]: consent before any action — the coach changes no deployment or skill; its
//!   `prepare_action` keeps a pending action that only the user's confirmation applies;
//! - [`chat_system_prompt`]: the 10 most recently referenced facts (a write references a fact),
//!   read without marking them and rendered under "## What I know about you" by
//!   `prompt-compose`, each with its handle ([`types::FactHandle`]) for `forget`;
//! - [`run_chat_turn`]: one turn over `agent_runtime::run_tool_loop` (the trading agent's loop),
//!   with the conversation history, usage and cost; only a turn that completed writes its fact
//!   changes, keeps the actions it prepared and marks the facts it showed referenced.
//!
//! Storage: generic over `db`'s store traits ([`ChatStore`]), like `tick`. Every read is keyed
//! by the caller's user id or one of the caller's deployments. The tools are synchronous over
//! [`ChatData`], loaded before the turn; `remember` / `forget` queue their change and the turn
//! writes it when the loop ends.
//!
//! The catalog over a caller's loaded data: `remember` checks its bounds and queues the fact;
//! nothing is written until the turn ends ([`run_chat_turn`] writes the journal's changes).
//!
//! ```
//! use std::sync::Arc;
//! use chat::{ActionJournal, CHAT_TOOL_CAP, ChatData, ChatToolContext, FactOp, Journal, chat_registry};
//! use chat::exposure::MoveWindow;
//! use chrono::{TimeZone, Utc};
//! use tools::{Preloaded, RunMode};
//! use uuid::Uuid;
//!
//! let data = ChatData {
//!     user_id: Uuid::from_u128(7),
//!     now: Utc.with_ymd_and_hms(2026, 6, 4, 12, 0, 0).unwrap(),
//!     deployments: vec![],
//!     skill_notes: vec![],
//!     facts: vec![],
//!     upcoming: vec![],
//!     past: vec![],
//! };
//! let ctx = ChatToolContext {
//!     data: Arc::new(data),
//!     journal: Arc::new(Journal::default()),
//!     actions: Arc::new(ActionJournal::default()),
//!     market: Arc::new(Preloaded::new()),
//!     window: MoveWindow::default(),
//!     turn_id: Uuid::from_u128(1),
//! };
//! let registry = chat_registry(&ctx, RunMode::Trade);
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
mod catalog;
pub mod conversation;
mod data;
pub mod exposure;
mod style;
mod turn;

pub use actions::{ActionJournal, DEFAULT_ACTION_TTL, PREPARE_ACTION};
pub use catalog::{
    CHAT_ACTOR, CHAT_TOOL_CAP, ChatToolContext, FORGET, FactOp, GET_MY_DEPLOYMENTS,
    GET_SKILL_PERFORMANCE, GET_UPCOMING_EVENTS, Journal, Marks, PerformanceSummary, REMEMBER,
    TradeRow, chat_registry, sharpe_per_trade, summarize,
};
pub use data::{
    ChatData, ChatStore, DeploymentData, EXPOSURE_LOOKBACK_DAYS, MAX_LOOKAHEAD_HOURS, NotesData,
    SkillNotes, TRADES_DETAIL_LIMIT, load_chat_data,
};
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
