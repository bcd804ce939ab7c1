//! Kept chat conversations (issue #46): `POST /api/chat` with `message` (and `conversationId`
//! to continue one) runs a turn over the conversation's kept turns and keeps the new one;
//! `GET /api/conversations`, `GET /api/conversations/{id}` and `DELETE
//! /api/conversations/{id}` list, read and delete the caller's, under row-level security
//! (another user's conversation is a 404). What a turn keeps and how the history is bounded is
//! `chat::conversation`'s; idle conversations are deleted by [`purge_idle`] after the
//! retention `serve --conversation-retention-days` sets.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use agent_runtime::Message;
use axum::extract::State;
use axum::http::StatusCode;
use chat::ChatTurnOutput;
use chat::conversation::{MAX_HISTORY_TURNS, history, kept_messages, title};
use chrono::{DateTime, Duration, Utc};
use db::{ConversationStore, ConversationTurn, NewConversation, PgStore, UserScoped};
use prompt_compose::{ChatMode, Focus};
use serde::Serialize;
use types::Clock;
use utoipa::ToSchema;
use uuid::Uuid;

use super::api::{ChatRequest, focus, mode_name};
use super::error::{ApiError, ApiPath};
use super::wire::ErrorBody;
use super::{AppState, Caller};

/// Most conversations `GET /api/conversations` lists.
pub const LIST_LIMIT: u32 = 200;
/// How long an idle conversation is kept unless `--conversation-retention-days` says otherwise.
pub const DEFAULT_RETENTION_DAYS: u32 = 90;
/// How often the server deletes the conversations idle past the retention.
pub const PURGE_EVERY: StdDuration = StdDuration::from_secs(3600);

/// Where a turn is kept once it ran.
#[derive(Debug, Clone)]
pub struct Keep {
    /// The conversation.
    pub conversation_id: Uuid,
    /// Its owner, the caller.
    pub user_id: Uuid,
    /// What the user wrote this turn.
    pub user_message: String,
    /// How many messages of history the turn got (what it added follows them and the user's
    /// message).
    pub history_len: usize,
}

/// A conversation opened for a turn: how it runs and where the turn is kept.
pub(super) struct Opened {
    pub mode: ChatMode,
    pub focus: Option<Focus>,
    pub history: Vec<Message>,
    pub keep: Keep,
}

/// The mode named `name` (`authoring`, `coach`, `ops`), as stored and as the page's form
/// sends it.
pub(super) fn parse_mode(name: &str) -> Option<ChatMode> {
    match name {
        "authoring" => Some(ChatMode::Authoring),
        "coach" => Some(ChatMode::Coach),
        "ops" => Some(ChatMode::Ops),
        _ => None,
    }
}

/// A stored conversation's mode (the store holds one of the three).
fn mode_of(name: &str) -> ChatMode {
    parse_mode(name).unwrap_or(ChatMode::Coach)
}

/// Opens the conversation of `req` for a turn at `now`: the caller's kept conversation
/// `conversationId` (its mode and deployment, its last [`MAX_HISTORY_TURNS`] turns as history),
/// or a new one (titled by the message).
///
/// # Errors
/// 422 for `messages` beside `message` or `conversationId`, a missing `message`, or a `mode` /
/// `deploymentId` other than the conversation's; 404 for a conversation or deployment that is
/// not the caller's.
pub(super) async fn open(
    store: &UserScoped,
    user_id: Uuid,
    req: &ChatRequest,
    now: DateTime<Utc>,
) -> Result<Opened, ApiError> {
    if !req.messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "messages: a kept conversation takes the new message alone, in message",
        ));
    }
    let message = req.message.clone().ok_or_else(|| {
        ApiError::invalid(
            "message",
            "message: required to continue a conversation (conversationId)",
        )
    })?;
    let (id, mode, focus, history) = match req.conversation_id {
        Some(id) => {
            let c = store.conversation(user_id, id).await?;
            let mode = mode_of(&c.mode);
            if req.mode.is_some_and(|m| m != mode) {
                return Err(ApiError::invalid(
                    "mode",
                    format!("mode: the conversation was opened in {} mode", c.mode),
                ));
            }
            if req.deployment_id.is_some() && req.deployment_id != c.deployment_id {
                return Err(ApiError::invalid(
                    "deploymentId",
                    "deploymentId: the conversation is about another deployment (or none)",
                ));
            }
            let focus = focus(store, c.deployment_id).await?;
            let turns = store
                .conversation_turns(user_id, id, MAX_HISTORY_TURNS)
                .await?;
            (id, mode, focus, history(&turns))
        }
        None => {
            let mode = req.mode.unwrap_or(ChatMode::Coach);
            let focus = focus(store, req.deployment_id).await?;
            let id = Uuid::new_v4();
            store
                .start_conversation(&NewConversation {
                    id,
                    user_id,
                    mode: mode_name(mode).to_owned(),
                    deployment_id: req.deployment_id,
                    title: title(&message),
                    at: now,
                })
                .await?;
            (id, mode, focus, Vec::new())
        }
    };
    Ok(Opened {
        mode,
        focus,
        keep: Keep {
            conversation_id: id,
            user_id,
            user_message: message,
            history_len: history.len(),
        },
        history,
    })
}

/// Where a turn was kept: its conversation and, when it completed, its place there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    /// The conversation.
    pub conversation_id: Uuid,
    /// The turn's place in it (`seq`, from 0); `None` for a turn whose model failed, which is
    /// not kept.
    pub seq: Option<u32>,
}

/// Keeps a turn that completed in its conversation (a turn whose model failed is not kept: the
/// user sends the message again); `None` when the request kept nothing.
///
/// # Errors
/// When the store refuses the write.
pub(super) async fn keep(
    store: &UserScoped,
    keep: Option<Keep>,
    turn_id: Uuid,
    at: DateTime<Utc>,
    out: &ChatTurnOutput,
) -> Result<Option<Kept>, ApiError> {
    let Some(k) = keep else {
        return Ok(None);
    };
    let mut seq = None;
    if out.run.error.is_none() {
        let added = out.messages.get(k.history_len + 1..).unwrap_or_default();
        seq = Some(
            store
                .add_conversation_turn(&ConversationTurn {
                    id: turn_id,
                    conversation_id: k.conversation_id,
                    user_id: k.user_id,
                    seq: 0,
                    at,
                    user_message: k.user_message,
                    answer: out.answer.clone(),
                    messages: kept_messages(added, &out.answer),
                })
                .await?,
        );
    }
    Ok(Some(Kept {
        conversation_id: k.conversation_id,
        seq,
    }))
}

/// A kept conversation as listed.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireConversation {
    /// Its id.
    pub id: Uuid,
    /// Its first message, on one line, cut to 120 characters.
    pub title: String,
    /// `authoring`, `coach` or `ops`.
    pub mode: String,
    /// The deployment it is about, if any.
    pub deployment_id: Option<Uuid>,
    /// When it started (UTC).
    pub created_at: DateTime<Utc>,
    /// Its newest turn, else its start (retention counts from it).
    pub last_active_at: DateTime<Utc>,
    /// How many turns it keeps.
    pub turns: u64,
}

impl From<db::Conversation> for WireConversation {
    fn from(c: db::Conversation) -> Self {
        Self {
            last_active_at: c.last_active_at(),
            id: c.id,
            title: c.title,
            mode: c.mode,
            deployment_id: c.deployment_id,
            created_at: c.created_at,
            turns: c.turns,
        }
    }
}

/// One tool call of a kept turn, compact: what was called and what came back (as kept: a long
/// result is cut).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireKeptCall {
    /// The tool.
    pub name: String,
    /// Its arguments as the model wrote them.
    pub arguments: String,
    /// What it returned (or `{"error": ...}`); `None` when no result was kept.
    pub result: Option<String>,
}

/// One kept turn.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireKeptTurn {
    /// The turn's id (its `chat_turns` row).
    pub turn_id: Uuid,
    /// Its place in the conversation, from 0.
    pub seq: u32,
    /// When it ran (UTC).
    pub at: DateTime<Utc>,
    /// What the user wrote.
    pub user_message: String,
    /// The coach's answer.
    pub answer: String,
    /// The tool calls of the turn, in order.
    pub tool_calls: Vec<WireKeptCall>,
}

impl From<db::ConversationTurn> for WireKeptTurn {
    fn from(t: db::ConversationTurn) -> Self {
        let messages: Vec<Message> = serde_json::from_value(t.messages).unwrap_or_default();
        let mut calls: Vec<(String, WireKeptCall)> = Vec::new();
        for m in messages {
            match m {
                Message::Assistant { tool_calls, .. } => {
                    calls.extend(tool_calls.into_iter().map(|c| {
                        (
                            c.id,
                            WireKeptCall {
                                name: c.name,
                                arguments: c.arguments,
                                result: None,
                            },
                        )
                    }));
                }
                Message::Tool {
                    call_id, content, ..
                } => {
                    if let Some((_, call)) = calls
                        .iter_mut()
                        .find(|(id, c)| *id == call_id && c.result.is_none())
                    {
                        call.result = Some(content);
                    }
                }
                Message::User { .. } => {}
            }
        }
        Self {
            turn_id: t.id,
            seq: t.seq,
            at: t.at,
            user_message: t.user_message,
            answer: t.answer,
            tool_calls: calls.into_iter().map(|(_, c)| c).collect(),
        }
    }
}

/// A kept conversation with its turns.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireConversationDetail {
    /// The conversation.
    #[serde(flatten)]
    pub conversation: WireConversation,
    /// Its kept turns, oldest first (the newest 1000).
    pub turn_list: Vec<WireKeptTurn>,
}

/// `GET /api/conversations`: the caller's newest [`LIST_LIMIT`] conversations, most recently
/// active first.
#[utoipa::path(
    get,
    path = "/api/conversations",
    operation_id = "listConversations",
    tag = "chat",
    responses((
        status = 200,
        description = "The caller's kept conversations, most recently active first (200 at most).",
        body = [WireConversation]
    ))
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<axum::Json<Vec<WireConversation>>, ApiError> {
    Ok(axum::Json(listed(&state, &caller).await?))
}

/// The caller's newest [`LIST_LIMIT`] conversations, most recently active first (the list
/// route's body; the chat page shows it).
///
/// # Errors
/// The store's.
pub(super) async fn listed(
    state: &AppState,
    caller: &Caller,
) -> Result<Vec<WireConversation>, ApiError> {
    let store = state.store_for(caller);
    let rows = store.conversations(caller.user_id, LIST_LIMIT).await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// `GET /api/conversations/{id}`: one of the caller's conversations with its turns.
#[utoipa::path(
    get,
    path = "/api/conversations/{id}",
    operation_id = "getConversation",
    tag = "chat",
    params(("id" = Uuid, Path, description = "The conversation.")),
    responses(
        (status = 200, description = "The conversation and its kept turns, oldest first.", body = WireConversationDetail),
        (status = 404, description = "The caller has no conversation with this id.", body = ErrorBody),
    )
)]
pub(super) async fn read(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<axum::Json<WireConversationDetail>, ApiError> {
    Ok(axum::Json(detail(&state, &caller, id).await?))
}

/// The caller's conversation `id` with its kept turns (the read route's body; the
/// conversation's page shows it).
///
/// # Errors
/// 404 when the caller has no conversation `id` (another user's included).
pub(super) async fn detail(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
) -> Result<WireConversationDetail, ApiError> {
    let store = state.store_for(caller);
    let conversation = store.conversation(caller.user_id, id).await?;
    let turns = store
        .conversation_turns(caller.user_id, id, db::MAX_CONVERSATIONS_READ)
        .await?;
    Ok(WireConversationDetail {
        conversation: conversation.into(),
        turn_list: turns.into_iter().map(Into::into).collect(),
    })
}

/// `DELETE /api/conversations/{id}`: deletes one of the caller's conversations (204).
#[utoipa::path(
    delete,
    path = "/api/conversations/{id}",
    operation_id = "deleteConversation",
    tag = "chat",
    params(("id" = Uuid, Path, description = "The conversation.")),
    responses(
        (status = 204, description = "Deleted, with its turns."),
        (status = 404, description = "The caller has no conversation with this id.", body = ErrorBody),
    )
)]
pub(super) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<StatusCode, ApiError> {
    remove(&state, &caller, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes the caller's conversation `id` with its turns (the delete route's; the page's
/// delete button too).
///
/// # Errors
/// 404 when the caller has no conversation `id`.
pub(super) async fn remove(state: &AppState, caller: &Caller, id: Uuid) -> Result<(), ApiError> {
    let store = state.store_for(caller);
    if store.delete_conversation(caller.user_id, id).await? {
        Ok(())
    } else {
        Err(ApiError::not_found(format!("conversation {id} not found")))
    }
}

/// Deletes, every [`PURGE_EVERY`] from now on, the conversations idle for more than
/// `retention_days` days (as the server's own role: every user's). Never returns; a failed
/// purge is logged and tried again at the next.
pub async fn purge_idle(store: PgStore, clock: Arc<dyn Clock>, retention_days: u32) {
    let mut every = tokio::time::interval(PURGE_EVERY);
    loop {
        every.tick().await;
        let before = clock.now() - Duration::days(i64::from(retention_days));
        match store.purge_conversations(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, %before, "idle conversations deleted"),
            Err(e) => tracing::warn!(error = %e, "deleting idle conversations failed"),
        }
    }
}
