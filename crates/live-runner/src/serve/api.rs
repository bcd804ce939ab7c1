//! The JSON API under `/api`. Every route takes a [`Caller`] and reaches the database only
//! through [`AppState::store_for`] (row-level security); request bodies are validated with
//! `validator` against the bounds in `types` (the ones the database checks too).
//!
//! | route | what |
//! |---|---|
//! | `GET /api/openapi.json` | this API's OpenAPI 3.1 document (public: no token) |
//! | `GET /api/me` | the caller's user id |
//! | `POST /api/chat` | one chat turn (JSON, or server-sent events with `Accept: text/event-stream`) |
//! | `GET /api/conversations` | the caller's kept conversations, most recently active first |
//! | `GET /api/conversations/{id}` | one kept conversation: each turn's message, answer and tool calls |
//! | `DELETE /api/conversations/{id}` | delete a kept conversation |
//! | `GET /api/facts[?archived=true]` | the caller's facts, newest first |
//! | `POST /api/facts` | add a fact (`source = profile`) |
//! | `PATCH /api/facts/{id}` | edit text / topic, promote / demote confidence |
//! | `POST /api/facts/{id}/archive` | archive with a reason |
//! | `GET /api/facts/{id}/changes` | the fact's audit trail |
//! | `GET /api/deployments` | the caller's deployments |
//! | `GET /api/deployments/{id}/memory` | closed trades, notes history, what the agent sees |
//! | `POST /api/deployments/{id}/pause` | pause (optional body `{"reason": "..."}`) |
//! | `POST /api/deployments/{id}/resume` | resume a paused deployment |
//! | `POST /api/deployments/{id}/stop` | stop for good (`{"flatten": true}` also closes the positions) |
//! | `GET /api/deployments/{id}/controls` | status, flatten, the audit trail of the controls |
//! | `GET /api/lessons/held[?deployment=&status=]` | held lessons waiting for review, with why |
//! | `POST /api/lessons/{id}/accept` | accept a held lesson (optional body `{"reason": "..."}`) |
//! | `POST /api/lessons/{id}/reject` | reject a held lesson |
//! | `GET /api/actions` | the caller's actions the coach prepared, waiting for confirmation |
//! | `GET /api/actions/history` | all the caller's actions, whatever their status (the audit view) |
//! | `POST /api/actions/{id}/confirm` | apply a pending action as the caller |
//! | `POST /api/actions/{id}/discard` | drop a pending action |
//! | `GET /api/alerts/channels`, `POST …`, `DELETE …/{id}`, `POST …/{id}/test` | the caller's alert channels |
//! | `GET /api/alerts/deliveries` | the latest deliveries |
//! | `POST /api/backtests` | queue a backtest job (skill text, bars, model, options) |
//! | `GET /api/backtests` | the caller's backtest jobs, newest first |
//! | `GET /api/backtests/{id}` | one job: status, progress, cost so far, result |
//!
//! Every body and event is one of the camelCase wire types of [`super::wire`], built from the
//! store's rows; a request body accepts one spelling per field and refuses any other field
//! with a 422 naming it. Each handler's `#[utoipa::path]` documents its route for the OpenAPI
//! document ([`super::openapi`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use agent_runtime::{LanguageModel, Message, ModelError, ModelRequest, ModelResponse};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use chat::{ChatError, ChatMarket, ChatStore, ChatTurn, ChatTurnOutput};
use db::{
    ChatTurnRecord, ChatTurnStore, Deployment, FactEdit, FactStore, Forget, LedgerStore, NewFact,
    NoteScope, NoteStore, RegistryStore, TickStore,
};
use futures_util::Stream;
use prompt_compose::{ChatMode, Focus};
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize};
use tokio::sync::mpsc;
use tools::RunMode;
use types::{
    ArchiveReason, FactConfidence, FactSource, MAX_FACT_CHARS, MAX_FACT_TOPIC_CHARS,
    MIN_FACT_CHARS, ReflectionNote, TradeRecord, TradeStatus, Usage,
};
use utoipa::{IntoParams, IntoResponses, ToSchema};
use uuid::Uuid;
use validator::Validate;

use super::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use super::openapi;
use super::wire::{
    CallEvent, ChatResponse, ErrorBody, Fact, FactChangeEntry, Me, Memory, PromptView, StepEvent,
    ToolResultEvent, WireDeployment, WireStep,
};
use super::{AppState, Caller};

/// Most messages one chat request may carry (history + the new one).
pub const MAX_CHAT_MESSAGES: u64 = 100;
/// Longest chat message, in characters.
pub const MAX_CHAT_MESSAGE_CHARS: u64 = 8000;
// The fact bounds of `types` (which the database checks too) as `validator` takes them. usize →
// u64 is lossless on every target Rust supports here (≤ 64-bit).
const MIN_FACT: u64 = MIN_FACT_CHARS as u64;
const MAX_FACT: u64 = MAX_FACT_CHARS as u64;
const MAX_TOPIC: u64 = MAX_FACT_TOPIC_CHARS as u64;
/// The actor the audit trail records for changes made through the API (the profile page).
pub const PROFILE_ACTOR: &str = "profile";
/// Most notes of a deployment the memory route returns.
pub const MEMORY_NOTES_LIMIT: u32 = 200;
/// The tokenizer of the memory route's counts (as `sim-worker preview`).
pub const TOKENIZER: &str = "o200k_base";

/// The `/api` routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/openapi.json", get(super::openapi::openapi_json))
        .route("/me", get(me))
        .route("/chat", post(chat))
        .route("/conversations", get(super::conversations::list))
        .route(
            "/conversations/{id}",
            get(super::conversations::read).delete(super::conversations::delete),
        )
        .route("/facts", get(list_facts).post(add_fact))
        .route("/facts/{id}", patch(edit_fact))
        .route("/facts/{id}/archive", post(archive_fact))
        .route("/facts/{id}/changes", get(fact_changes))
        .route("/deployments", get(deployments))
        .route("/deployments/{id}/memory", get(memory))
        .route("/deployments/{id}/pause", post(super::controls::pause))
        .route("/deployments/{id}/resume", post(super::controls::resume))
        .route("/deployments/{id}/stop", post(super::controls::stop))
        .route("/deployments/{id}/controls", get(super::controls::list))
        .route("/lessons/held", get(super::lessons::held))
        .route("/lessons/{id}/accept", post(super::lessons::accept))
        .route("/lessons/{id}/reject", post(super::lessons::reject))
        .route(
            "/alerts/channels",
            get(super::alerts::list).post(super::alerts::create),
        )
        .route(
            "/alerts/channels/{id}",
            axum::routing::delete(super::alerts::delete),
        )
        .route("/alerts/channels/{id}/test", post(super::alerts::test))
        .route("/alerts/deliveries", get(super::alerts::deliveries))
        .route("/actions", get(super::actions::pending))
        .route("/actions/history", get(super::actions::history))
        .route("/actions/{id}/confirm", post(super::actions::confirm))
        .route("/actions/{id}/discard", post(super::actions::discard))
        .route(
            "/backtests",
            get(super::backtests::list).post(super::backtests::create),
        )
        .route("/backtests/{id}", get(super::backtests::read))
}

/// `GET /api/me`.
#[utoipa::path(
    get,
    path = "/api/me",
    operation_id = "getMe",
    tag = "auth",
    responses((status = 200, description = "The caller.", body = Me))
)]
pub(super) async fn me(caller: Caller) -> axum::Json<Me> {
    axum::Json(Me {
        user_id: caller.user_id,
    })
}

// ---------------------------------------------------------------------------------------------
// Chat

/// Who wrote a message of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    /// The person.
    User,
    /// The coach (an earlier answer).
    Assistant,
}

/// One message of the conversation a client sends.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatMessageIn {
    /// Who wrote it.
    pub role: ChatRole,
    /// What they wrote.
    #[validate(length(
        min = 1,
        max = MAX_CHAT_MESSAGE_CHARS,
        message = "must be 1..=8000 characters"
    ))]
    #[schema(min_length = 1, max_length = 8000)]
    pub content: String,
}

/// `POST /api/chat`: the user's new `message` in a conversation the server keeps (a new one
/// without `conversationId`); or, for a conversation the server does not keep, `messages`: the
/// whole conversation, its last message the user's new one.
#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChatRequest {
    /// The user's new message; the server holds the earlier turns.
    #[serde(default)]
    #[validate(length(
        min = 1,
        max = MAX_CHAT_MESSAGE_CHARS,
        message = "must be 1..=8000 characters"
    ))]
    pub message: Option<String>,
    /// The kept conversation `message` continues; absent: a new one, whose id the answer
    /// carries.
    #[serde(default)]
    pub conversation_id: Option<Uuid>,
    /// Instead of `message`: the conversation, oldest first; the last one is the user's new
    /// message. Nothing of it is kept.
    #[serde(default)]
    #[validate(
        length(max = MAX_CHAT_MESSAGES, message = "must hold 1..=100 messages"),
        nested
    )]
    #[schema(max_items = 100)]
    pub messages: Vec<ChatMessageIn>,
    /// How the chat was opened (default `coach`).
    #[serde(default)]
    #[schema(value_type = Option<openapi::ChatMode>)]
    pub mode: Option<ChatMode>,
    /// A deployment of the caller's the conversation is about.
    #[serde(default)]
    pub deployment_id: Option<Uuid>,
}

impl ChatResponse {
    fn new(
        turn_id: Uuid,
        conversation_id: Option<Uuid>,
        model: &str,
        out: &ChatTurnOutput,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        Self {
            turn_id,
            conversation_id,
            answer: out.answer.clone(),
            out_of_steps: out.out_of_steps,
            steps: out.run.steps.iter().map(WireStep::from).collect(),
            model: model.to_owned(),
            usage: out.run.usage.into(),
            cost_usd: out.run.cost_usd,
            facts_injected: out.facts_injected.len(),
            actions: out
                .actions
                .iter()
                .map(|a| super::actions::WireAction::at(a.clone(), now))
                .collect(),
            error: out.run.error.as_ref().map(ToString::to_string),
        }
    }
}

pub(super) fn mode_name(mode: ChatMode) -> &'static str {
    match mode {
        ChatMode::Authoring => "authoring",
        ChatMode::Coach => "coach",
        ChatMode::Ops => "ops",
    }
}

/// Runs one chat turn as its user and records its usage and cost (`chat_turns`). The store is
/// the user's ([`db::UserScoped`] on PostgreSQL: the turn's reads, fact writes and its record
/// all run under row-level security). `run_chat_turn`'s errors are returned before anything is
/// recorded; a turn whose model failed is recorded with its error.
///
/// # Errors
/// [`ChatError::Store`] when a read, a fact write or the record fails; [`ChatError::Compose`]
/// for a template bug.
pub async fn run_recorded_turn<S: ChatStore + ChatTurnStore>(
    store: &S,
    model: &dyn LanguageModel,
    market: &dyn ChatMarket,
    turn: ChatTurn,
) -> Result<ChatTurnOutput, ChatError> {
    let record = ChatTurnRecord {
        id: turn.turn_id,
        user_id: turn.user_id,
        at: turn.now,
        mode: mode_name(turn.mode).to_owned(),
        model: model.id().to_owned(),
        steps: 0,
        usage: Usage::default(),
        cost_usd: Decimal::ZERO,
        error: None,
    };
    let out = chat::run_chat_turn(store, model, market, turn).await?;
    let record = ChatTurnRecord {
        steps: u32::try_from(out.run.steps.len()).unwrap_or(u32::MAX),
        usage: out.run.usage,
        cost_usd: out.run.cost_usd,
        error: out.run.error.as_ref().map(ToString::to_string),
        ..record
    };
    store.record_chat_turn(&record).await?;
    Ok(out)
}

/// A checked chat request, ready to run.
struct PreparedTurn {
    turn: ChatTurn,
    /// Where the turn is kept, when its conversation is.
    keep: Option<super::conversations::Keep>,
}

async fn prepare_turn(
    state: &AppState,
    store: &db::UserScoped,
    caller: Caller,
    req: ChatRequest,
) -> Result<PreparedTurn, ApiError> {
    if req.message.is_some() || req.conversation_id.is_some() {
        let now = state.clock.now();
        let opened = super::conversations::open(store, caller.user_id, &req, now).await?;
        return Ok(PreparedTurn {
            turn: ChatTurn {
                turn_id: Uuid::new_v4(),
                user_id: caller.user_id,
                conversation_id: Some(opened.keep.conversation_id),
                tier: state.chat.tier,
                mode: opened.mode,
                focus: opened.focus,
                history: opened.history,
                user_message: opened.keep.user_message.clone(),
                now,
                max_steps: state.chat.max_steps,
                run_mode: RunMode::Trade,
                options: state.chat.options,
            },
            keep: Some(opened.keep),
        });
    }
    let mut messages = req.messages;
    let last = messages
        .pop()
        .ok_or_else(|| ApiError::invalid("messages", "messages: must hold 1..=100 messages"))?;
    if last.role != ChatRole::User {
        return Err(ApiError::invalid(
            "messages",
            "messages: the last message must be the user's (role \"user\")",
        ));
    }
    let focus = focus(store, req.deployment_id).await?;
    let history = messages
        .into_iter()
        .map(|m| match m.role {
            ChatRole::User => Message::User { content: m.content },
            ChatRole::Assistant => Message::Assistant {
                text: Some(m.content),
                tool_calls: Vec::new(),
            },
        })
        .collect();
    Ok(PreparedTurn {
        turn: ChatTurn {
            turn_id: Uuid::new_v4(),
            user_id: caller.user_id,
            conversation_id: None,
            tier: state.chat.tier,
            mode: req.mode.unwrap_or(ChatMode::Coach),
            focus,
            history,
            user_message: last.content,
            now: state.clock.now(),
            max_steps: state.chat.max_steps,
            run_mode: RunMode::Trade,
            options: state.chat.options,
        },
        keep: None,
    })
}

/// The chat's focus on the caller's deployment `id`, if any. Under RLS another user's
/// deployment is not found: 404, same as an unknown id.
pub(super) async fn focus(
    store: &db::UserScoped,
    id: Option<Uuid>,
) -> Result<Option<Focus>, ApiError> {
    let Some(id) = id else {
        return Ok(None);
    };
    let deployment = store.get_deployment(id).await?;
    let skill = store.get_skill(deployment.skill_id).await?;
    Ok(Some(Focus {
        kind: "deployment".to_owned(),
        name: skill.name,
        id,
    }))
}

fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

/// `POST /api/chat`: one turn, answered as JSON or, with `Accept: text/event-stream`, as
/// server-sent events.
#[utoipa::path(
    post,
    path = "/api/chat",
    operation_id = "chat",
    tag = "chat",
    request_body = ChatRequest,
    responses(
        (
            status = 200,
            description = "The turn's answer. With `Accept: text/event-stream` the turn is sent \
                           as server-sent events instead: `step` (a `StepEvent`, each model \
                           answer as it happens), `toolResult` (a `ToolResultEvent`, each tool \
                           result sent back to the model), then `answer` (a `ChatResponse`) or \
                           `error` (an `ErrorBody`), then `done` (data `[DONE]`).",
            content(
                (ChatResponse = "application/json"),
                (String = "text/event-stream"),
            )
        ),
        (
            status = 502,
            description = "The model failed: the turn as far as it went, with `error` (JSON \
                           answers only; a stream sends the failure in its `answer` event).",
            body = ChatResponse
        ),
        (
            status = 404,
            description = "`deploymentId` is not a deployment of the caller's.",
            body = ErrorBody
        ),
    )
)]
pub(super) async fn chat(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ChatRequest>,
) -> Result<Response, ApiError> {
    if wants_event_stream(&headers) {
        let store = state.store_for(&caller);
        let prepared = prepare_turn(&state, &store, caller, req).await?;
        return Ok(chat_events(state, store, prepared).into_response());
    }
    let run = chat_turn(&state, caller, req).await?;
    let body = ChatResponse::new(
        run.turn_id,
        run.conversation_id(),
        state.model.id(),
        &run.out,
        run.now,
    );
    let status = if body.error.is_some() {
        StatusCode::BAD_GATEWAY
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(body)).into_response())
}

/// A chat turn that ran — its model may have failed (`out.run.error`) — and where it was kept.
pub(super) struct TurnRun {
    /// The turn's id (its `chat_turns` row).
    pub turn_id: Uuid,
    /// The turn's time.
    pub now: chrono::DateTime<chrono::Utc>,
    /// What the turn did.
    pub out: ChatTurnOutput,
    /// Its kept conversation; `None` for a turn that sent the whole conversation.
    pub kept: Option<super::conversations::Kept>,
}

impl TurnRun {
    /// The kept conversation's id.
    pub(super) fn conversation_id(&self) -> Option<Uuid> {
        self.kept.as_ref().map(|k| k.conversation_id)
    }
}

/// One chat turn of `req` as `caller`, exactly as `POST /api/chat` answers it as JSON: the
/// conversation opened (or started), the turn run and recorded, and kept when it completed. The
/// API and the chat page's forms both run their turns here.
///
/// # Errors
/// 404 for a conversation or deployment that is not the caller's; 422 for a request a kept
/// conversation refuses; the store's errors.
pub(super) async fn chat_turn(
    state: &AppState,
    caller: Caller,
    req: ChatRequest,
) -> Result<TurnRun, ApiError> {
    let store = state.store_for(&caller);
    let prepared = prepare_turn(state, &store, caller, req).await?;
    run_prepared(
        &store,
        state.model.as_ref(),
        state.market.as_ref(),
        prepared,
    )
    .await
}

/// Runs a prepared turn with `model`, records it and keeps it in its conversation.
async fn run_prepared(
    store: &db::UserScoped,
    model: &dyn LanguageModel,
    market: &dyn ChatMarket,
    prepared: PreparedTurn,
) -> Result<TurnRun, ApiError> {
    let turn_id = prepared.turn.turn_id;
    let now = prepared.turn.now;
    let out = run_recorded_turn(store, model, market, prepared.turn).await?;
    let kept = super::conversations::keep(store, prepared.keep, turn_id, now, &out).await?;
    Ok(TurnRun {
        turn_id,
        now,
        out,
        kept,
    })
}

/// The model wrapped so each step is sent as it happens: a `step` event when the model
/// answers, the `toolResult` events of the previous step when the loop calls it again.
struct StreamingModel {
    inner: Arc<dyn LanguageModel>,
    events: mpsc::UnboundedSender<Event>,
    calls: AtomicU32,
}

fn json_event(name: &str, data: &impl Serialize) -> Event {
    Event::default()
        .event(name)
        .json_data(data)
        .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()))
}

#[async_trait::async_trait]
impl LanguageModel for StreamingModel {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let index = self.calls.fetch_add(1, Ordering::Relaxed);
        if index > 0 {
            let results = request
                .messages
                .iter()
                .rev()
                .take_while(|m| matches!(m, Message::Tool { .. }))
                .collect::<Vec<_>>();
            for m in results.into_iter().rev() {
                if let Message::Tool {
                    call_id,
                    name,
                    content,
                } = m
                {
                    let _ = self.events.send(json_event(
                        "toolResult",
                        &ToolResultEvent {
                            call_id,
                            name,
                            content,
                        },
                    ));
                }
            }
        }
        let response = self.inner.generate(request).await?;
        let step = StepEvent {
            index,
            text: response.text.as_deref(),
            tool_calls: response
                .tool_calls
                .iter()
                .map(|c| CallEvent::new(&c.id, &c.name, &c.arguments))
                .collect(),
        };
        let _ = self.events.send(json_event("step", &step));
        Ok(response)
    }
}

/// The turn as server-sent events: `step` (each model answer, as it happens), `toolResult`
/// (each tool result sent back to the model), then `answer` (the [`ChatResponse`]) or `error`
/// (`{"error": ...}`), then `done`.
fn chat_events(
    state: AppState,
    store: db::UserScoped,
    prepared: PreparedTurn,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    let model = StreamingModel {
        inner: state.model.clone(),
        events: tx.clone(),
        calls: AtomicU32::new(0),
    };
    tokio::spawn(async move {
        let model_id = state.model.id().to_owned();
        match run_prepared(&store, &model, state.market.as_ref(), prepared).await {
            Ok(run) => {
                let body = ChatResponse::new(
                    run.turn_id,
                    run.conversation_id(),
                    &model_id,
                    &run.out,
                    run.now,
                );
                let _ = tx.send(json_event("answer", &body));
            }
            Err(e) => {
                let _ = tx.send(json_event(
                    "error",
                    &ErrorBody {
                        error: &e.message,
                        field: None,
                    },
                ));
            }
        }
        let _ = tx.send(Event::default().event("done").data("[DONE]"));
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

// ---------------------------------------------------------------------------------------------
// Facts

/// `?archived=true` lists archived facts too.
#[derive(Debug, Clone, Copy, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FactsQuery {
    /// Include archived facts.
    #[serde(default)]
    pub archived: bool,
}

/// `GET /api/facts`.
#[utoipa::path(
    get,
    path = "/api/facts",
    operation_id = "listFacts",
    tag = "facts",
    params(FactsQuery),
    responses((status = 200, description = "The caller's facts, newest first.", body = [Fact]))
)]
pub(super) async fn list_facts(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<FactsQuery>,
) -> Result<axum::Json<Vec<Fact>>, ApiError> {
    let store = state.store_for(&caller);
    let facts = store.list_facts(caller.user_id, q.archived).await?;
    Ok(axum::Json(facts.into_iter().map(Fact::from).collect()))
}

/// `POST /api/facts`: a fact the user states themselves (`source = profile`).
#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewFactBody {
    /// The fact, 4..=500 characters.
    #[validate(length(
        min = MIN_FACT,
        max = MAX_FACT,
        message = "must be 4..=500 characters"
    ))]
    #[schema(min_length = 4, max_length = 500)]
    pub fact: String,
    /// A short tag (`risk`, `symbols`, ...), 1..=32 characters, one line.
    #[validate(
        length(min = 1, max = MAX_TOPIC, message = "must be 1..=32 characters"),
        custom(function = "super::input::one_line")
    )]
    #[serde(default)]
    #[schema(min_length = 1, max_length = 32)]
    pub topic: Option<String>,
    /// `asserted` (default: the user said it) or `inferred`.
    #[serde(default)]
    #[schema(value_type = Option<openapi::FactConfidence>)]
    pub confidence: Option<FactConfidence>,
}

/// `POST /api/facts`.
#[utoipa::path(
    post,
    path = "/api/facts",
    operation_id = "addFact",
    tag = "facts",
    request_body = NewFactBody,
    responses(
        (status = 201, description = "The fact stored.", body = Fact),
        (status = 409, description = "The store refused a duplicate.", body = ErrorBody),
    )
)]
pub(super) async fn add_fact(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewFactBody>,
) -> Result<(StatusCode, axum::Json<Fact>), ApiError> {
    let store = state.store_for(&caller);
    let new = NewFact {
        id: Uuid::new_v4(),
        user_id: caller.user_id,
        skill_id: None,
        fact: body.fact,
        source: FactSource::Profile,
        confidence: body.confidence.unwrap_or(FactConfidence::Asserted),
        topic: body.topic,
        actor: PROFILE_ACTOR.to_owned(),
    };
    let fact = store.remember(&new, state.clock.now()).await?;
    Ok((StatusCode::CREATED, axum::Json(fact.into())))
}

/// `Some(None)` for an explicit `null`, `None` when the field is absent.
fn explicit_null<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// `PATCH /api/facts/{id}`: any of text, topic (`null` clears it) and confidence (promote to
/// `asserted`, demote to `inferred`).
#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFactBody {
    /// The corrected text, 4..=500 characters.
    #[validate(length(
        min = MIN_FACT,
        max = MAX_FACT,
        message = "must be 4..=500 characters"
    ))]
    #[serde(default)]
    #[schema(min_length = 4, max_length = 500)]
    pub fact: Option<String>,
    /// A new topic (1..=32 characters), or `null` to clear it.
    #[serde(default, deserialize_with = "explicit_null")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 32)]
    pub topic: Option<Option<String>>,
    /// `asserted` or `inferred`.
    #[serde(default)]
    #[schema(value_type = Option<openapi::FactConfidence>)]
    pub confidence: Option<FactConfidence>,
}

/// What editing or archiving a fact answers (for the OpenAPI document; the handlers answer a
/// [`Fact`] or an [`ApiError`]).
#[derive(IntoResponses)]
pub enum FactChangeAnswers {
    /// The fact as changed.
    #[response(status = 200)]
    Done(Fact),
    /// The caller has no fact with this id.
    #[response(status = 404)]
    NotFound(ErrorBody<'static>),
    /// The store refused the change.
    #[response(status = 409)]
    Conflict(ErrorBody<'static>),
}

/// `PATCH /api/facts/{id}`.
#[utoipa::path(
    patch,
    path = "/api/facts/{id}",
    operation_id = "editFact",
    tag = "facts",
    params(("id" = Uuid, Path, description = "The fact.")),
    request_body = EditFactBody,
    responses(FactChangeAnswers)
)]
pub(super) async fn edit_fact(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<EditFactBody>,
) -> Result<axum::Json<Fact>, ApiError> {
    if body.fact.is_none() && body.topic.is_none() && body.confidence.is_none() {
        return Err(ApiError::invalid(
            "body",
            "nothing to change: send fact, topic or confidence",
        ));
    }
    if let Some(Some(topic)) = &body.topic {
        super::input::check("topic", topic, super::input::Lines::One)
            .map_err(|message| ApiError::invalid("topic", message))?;
        let n = topic.chars().count();
        if !(1..=MAX_FACT_TOPIC_CHARS).contains(&n) {
            return Err(ApiError::invalid(
                "topic",
                format!("topic: must be 1..=32 characters (got {n}); null clears it"),
            ));
        }
    }
    let store = state.store_for(&caller);
    let edit = FactEdit {
        fact: body.fact,
        confidence: body.confidence,
        topic: body.topic,
    };
    let fact = store
        .edit_fact(caller.user_id, id, &edit, PROFILE_ACTOR, state.clock.now())
        .await?;
    Ok(axum::Json(fact.into()))
}

/// Why the user archives a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UserArchiveReason {
    /// The user deleted it.
    UserDeleted,
    /// It was wrong.
    UserCorrected,
}

/// `POST /api/facts/{id}/archive`.
#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveBody {
    /// `user_deleted` or `user_corrected`.
    pub reason: UserArchiveReason,
}

/// `POST /api/facts/{id}/archive`.
#[utoipa::path(
    post,
    path = "/api/facts/{id}/archive",
    operation_id = "archiveFact",
    tag = "facts",
    params(("id" = Uuid, Path, description = "The fact.")),
    request_body = ArchiveBody,
    responses(FactChangeAnswers)
)]
pub(super) async fn archive_fact(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<ArchiveBody>,
) -> Result<axum::Json<Fact>, ApiError> {
    let store = state.store_for(&caller);
    let forget = Forget {
        reason: match body.reason {
            UserArchiveReason::UserDeleted => ArchiveReason::UserDeleted,
            UserArchiveReason::UserCorrected => ArchiveReason::UserCorrected,
        },
        at: state.clock.now(),
        actor: PROFILE_ACTOR.to_owned(),
    };
    store.forget(caller.user_id, id, &forget).await?;
    let fact = store
        .list_facts(caller.user_id, true)
        .await?
        .into_iter()
        .find(|f| f.id == id)
        .ok_or_else(|| ApiError::not_found(format!("fact {id} not found")))?;
    Ok(axum::Json(fact.into()))
}

/// `GET /api/facts/{id}/changes`.
#[utoipa::path(
    get,
    path = "/api/facts/{id}/changes",
    operation_id = "listFactChanges",
    tag = "facts",
    params(("id" = Uuid, Path, description = "The fact.")),
    responses(
        (status = 200, description = "The fact's audit trail.", body = [FactChangeEntry]),
        (status = 404, description = "The caller has no fact with this id.", body = ErrorBody),
    )
)]
pub(super) async fn fact_changes(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<axum::Json<Vec<FactChangeEntry>>, ApiError> {
    let store = state.store_for(&caller);
    let changes = store.fact_changes(id).await?;
    // Every fact has at least its insert; none visible means not the caller's (or unknown).
    if changes.is_empty() {
        return Err(ApiError::not_found(format!("fact {id} not found")));
    }
    Ok(axum::Json(
        changes.into_iter().map(FactChangeEntry::from).collect(),
    ))
}

// ---------------------------------------------------------------------------------------------
// Deployment memory

/// A deployment's memory as the server reads it (the route sends it as [`Memory`], the page
/// renders it).
#[derive(Debug, Clone)]
pub struct MemoryView {
    /// The deployment.
    pub deployment: Deployment,
    /// Its skill's name.
    pub skill_name: String,
    /// Closed `trade_history` rows, newest exit first.
    pub closed_trades: Vec<TradeRecord>,
    /// Open rows.
    pub open_trades: Vec<TradeRecord>,
    /// The deployment's reflection notes, newest first: the active one, the superseded ones,
    /// any pending review.
    pub notes: Vec<ReflectionNote>,
    /// What the agent saw at its latest tick; `None` before the first tick.
    pub prompt: Option<PromptView>,
}

impl From<MemoryView> for Memory {
    fn from(m: MemoryView) -> Self {
        Self {
            deployment: m.deployment.into(),
            skill_name: m.skill_name,
            closed_trades: m.closed_trades.into_iter().map(Into::into).collect(),
            open_trades: m.open_trades.into_iter().map(Into::into).collect(),
            notes: m.notes.into_iter().map(Into::into).collect(),
            prompt: m.prompt,
        }
    }
}

/// `GET /api/deployments`.
#[utoipa::path(
    get,
    path = "/api/deployments",
    operation_id = "listDeployments",
    tag = "deployments",
    responses((status = 200, description = "The caller's deployments.", body = [WireDeployment]))
)]
pub(super) async fn deployments(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<axum::Json<Vec<WireDeployment>>, ApiError> {
    let store = state.store_for(&caller);
    let deployments = store.user_deployments(caller.user_id).await?;
    Ok(axum::Json(
        deployments.into_iter().map(WireDeployment::from).collect(),
    ))
}

/// Exact `o200k_base` token count (the tokenizer `sim-worker preview` counts with).
#[must_use]
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

/// `GET /api/deployments/{id}/memory`.
#[utoipa::path(
    get,
    path = "/api/deployments/{id}/memory",
    operation_id = "getDeploymentMemory",
    tag = "deployments",
    params(("id" = Uuid, Path, description = "The deployment.")),
    responses(
        (
            status = 200,
            description = "Closed and open trades, the notes history, what the agent sees.",
            body = Memory
        ),
        (
            status = 404,
            description = "The caller has no deployment with this id.",
            body = ErrorBody
        ),
    )
)]
pub(super) async fn memory(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<axum::Json<Memory>, ApiError> {
    Ok(axum::Json(
        deployment_memory(&state, &caller, id).await?.into(),
    ))
}

/// The memory view of deployment `id` as `caller` (the route's body; the pages render it).
///
/// # Errors
/// 404 when the caller has no deployment `id` (another user's included: RLS hides it).
pub async fn deployment_memory(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
) -> Result<MemoryView, ApiError> {
    let store = state.store_for(caller);
    let deployment = store.get_deployment(id).await?;
    let skill = store.get_skill(deployment.skill_id).await?;
    let mut closed_trades = Vec::new();
    let mut open_trades = Vec::new();
    for t in store.all_trades(id).await? {
        if t.status == TradeStatus::Closed {
            closed_trades.push(t);
        } else {
            open_trades.push(t);
        }
    }
    closed_trades.sort_by(|a, b| b.exit_tick_at.cmp(&a.exit_tick_at).then(b.id.cmp(&a.id)));
    let notes = store
        .note_history(NoteScope::Deployment(id), MEMORY_NOTES_LIMIT)
        .await?;
    let prompt = match store.list_snapshots(id, 1).await?.into_iter().next() {
        None => None,
        Some(s) => {
            let (system, user) = (s.system_prompt.clone(), s.context.clone());
            let (system_tokens, user_tokens) =
                tokio::task::spawn_blocking(move || (count_tokens(&system), count_tokens(&user)))
                    .await
                    .map_err(|e| ApiError::internal("counting tokens", &e))?;
            Some(PromptView {
                source: "latest_decision_snapshot",
                as_of: s.tick_at,
                snapshot_id: s.id,
                model: s.model,
                system_prompt: s.system_prompt,
                system_prompt_tokens: system_tokens,
                user_message: s.context,
                user_message_tokens: user_tokens,
                tokenizer: TOKENIZER,
            })
        }
    };
    Ok(MemoryView {
        deployment,
        skill_name: skill.name,
        closed_trades,
        open_trades,
        notes,
        prompt,
    })
}
