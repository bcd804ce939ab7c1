//! The chat coach (ADR-0020): a conversation with a coach that knows the caller's deployments,
//! trades, lessons and the facts it remembered about them.
//!
//! - [`chat_registry`]: the chat tool catalog (`get_my_deployments`, `get_skill_performance`
//!   with ADR-0020's `detail`, `get_upcoming_events` with `your_exposure`, `remember`,
//!   `forget`) — a [`tools::Registry`] of its own, same [`tools::Tool`] trait, same read-only
//!   guard, at most [`CHAT_TOOL_CAP`] tools;
//! - [`chat_system_prompt`]: the top facts read and bumped in one transaction, rendered under
//!   "## What I know about you" by `prompt-compose`;
//! - [`run_chat_turn`]: one turn over `agent_runtime::run_tool_loop` (the trading agent's loop),
//!   with the conversation history, usage and cost.
//!
//! Storage: generic over `db`'s store traits ([`ChatStore`]), like `tick`. Every read is keyed
//! by the caller's user id or one of the caller's deployments. The tools are synchronous over
//! [`ChatData`], loaded before the turn; `remember` / `forget` queue their change and the turn
//! writes it when the loop ends.

mod catalog;
mod data;
pub mod exposure;
mod turn;

pub use catalog::{
    CHAT_ACTOR, CHAT_TOOL_CAP, ChatToolContext, FORGET, FactOp, GET_MY_DEPLOYMENTS,
    GET_SKILL_PERFORMANCE, GET_UPCOMING_EVENTS, Journal, PerformanceSummary, REMEMBER, TradeRow,
    chat_registry, summarize,
};
pub use data::{
    ChatData, ChatStore, DeploymentData, EXPOSURE_LOOKBACK_DAYS, MAX_LOOKAHEAD_HOURS, NotesData,
    SkillNotes, TRADES_DETAIL_LIMIT, load_chat_data,
};
pub use turn::{
    ChatTurn, ChatTurnOutput, DEFAULT_CHAT_MAX_STEPS, chat_system_prompt, run_chat_turn, transcript,
};

/// Why a chat turn could not run.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("store: {0}")]
    Store(#[from] db::DbError),
    #[error(transparent)]
    Compose(#[from] prompt_compose::ComposeError),
}
