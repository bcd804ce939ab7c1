//! One chat turn: the system prompt with the caller's facts, the turn's data, the model loop of
//! `agent-runtime` over the chat registry, and the fact changes applied at the end.

use std::sync::Arc;

use agent_runtime::{
    LanguageModel, Message, RunOptions, RunResult, Step, ToolOutcome, run_tool_loop,
};
use chrono::{DateTime, Utc};
use db::{FactStore, Forget, NewFact};
use prompt_compose::{ChatFact, ChatMode, ChatSystemInput, Focus, MAX_INJECTED_FACTS, Tier};
use serde_json::json;
use tools::{MarketData, RunMode};
use types::{FactSource, UserFact};
use uuid::Uuid;

use crate::ChatError;
use crate::catalog::{CHAT_ACTOR, ChatToolContext, FactOp, Journal, chat_registry};
use crate::data::{ChatStore, load_chat_data};
use crate::exposure::MoveWindow;

/// Model calls of one turn unless the caller says otherwise.
pub const DEFAULT_CHAT_MAX_STEPS: u32 = 6;

/// The chat system prompt of `user_id` at `now`: the top [`MAX_INJECTED_FACTS`] active facts
/// (by `last_referenced_at` — a fact is referenced when it is written, edited, or shown in a
/// turn that completed —, then newest, then id; user-wide ones plus, when the focus is a skill,
/// that skill's) read with [`FactStore::top_facts`] without marking them, each rendered with its
/// handle ([`types::FactHandle`]) by [`prompt_compose::compose_chat_system`]. Returns the prompt
/// and the facts it shows; [`run_chat_turn`] marks them referenced once the turn completed.
///
/// # Errors
/// [`ChatError::Store`] when the read fails, [`ChatError::Compose`] for a template bug.
pub async fn chat_system_prompt<S: FactStore + Sync>(
    store: &S,
    user_id: Uuid,
    tier: Tier,
    mode: ChatMode,
    focus: Option<Focus>,
    now: DateTime<Utc>,
) -> Result<(String, Vec<UserFact>), ChatError> {
    let skill = focus.as_ref().filter(|f| f.kind == "skill").map(|f| f.id);
    let k = u32::try_from(MAX_INJECTED_FACTS).unwrap_or(types::MAX_MEMORY_K);
    let facts = store.top_facts(user_id, skill, k, None).await?;
    let input = ChatSystemInput {
        tier,
        facts: facts.iter().map(chat_fact).collect(),
        mode,
        focus,
        now,
    };
    Ok((prompt_compose::compose_chat_system(&input)?, facts))
}

fn chat_fact(f: &UserFact) -> ChatFact {
    ChatFact {
        topic: f.topic.clone(),
        text: f.fact.clone(),
        confidence: f.confidence,
        handle: f.handle().to_string(),
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone)]
pub struct ChatTurn {
    /// Names the turn: remembered facts get UUID v5 ids of it.
    pub turn_id: Uuid,
    /// The caller; every read and write is theirs.
    pub user_id: Uuid,
    /// The caller's plan (the prompt's TIER segment).
    pub tier: Tier,
    /// How the chat was opened: authoring, coach or ops (the MODE segment).
    pub mode: ChatMode,
    /// The skill or deployment the chat is about, if any; a skill focus also injects that
    /// skill's facts.
    pub focus: Option<Focus>,
    /// The conversation before this turn (as a previous [`ChatTurnOutput::messages`]).
    pub history: Vec<Message>,
    /// What the user wrote this turn (data for the model, never instructions to the runtime).
    pub user_message: String,
    /// The turn's time (UTC): reads are as of it; facts the turn writes, and those it showed
    /// once it completed, are referenced at it.
    pub now: DateTime<Utc>,
    /// Most model calls in the turn (at least 1 is made; [`DEFAULT_CHAT_MAX_STEPS`] is the usual).
    pub max_steps: u32,
    /// [`RunMode::ReadOnly`] refuses `remember` and `forget` (the registry's guard).
    pub run_mode: RunMode,
    /// Knobs of the model loop (output-token budget per call).
    pub options: RunOptions,
}

/// What a turn did.
#[derive(Debug, Clone)]
pub struct ChatTurnOutput {
    /// The chat system prompt the model got, byte for byte.
    pub system_prompt: String,
    /// The facts the prompt showed; when the run completed, marked referenced at the turn's
    /// time (in the store and here), else as they were read.
    pub facts_injected: Vec<UserFact>,
    /// The loop: steps, text, usage and cost (`agent_runtime::cost`'s rate table).
    pub run: RunResult,
    /// The conversation after this turn: the history, the user's message, then each step's
    /// assistant turn and tool results.
    pub messages: Vec<Message>,
    /// The fact changes applied to the store, in call order (none when the run ended in error).
    pub applied: Vec<FactOp>,
}

/// Runs one chat turn for `turn.user_id`: the system prompt (its facts read, not yet marked),
/// the caller's data, the chat registry in `turn.run_mode`, `agent_runtime::run_tool_loop` over
/// the history plus the user's message; then, when the run completed, the turn's `remember` /
/// `forget` calls written to the store in call order (each through the store's audit trail;
/// a remembered fact is referenced at the turn's time) and the facts the prompt showed marked
/// referenced at the turn's time ([`FactStore::mark_referenced`]). A run that ends in error
/// writes no fact change and marks nothing: a failed turn leaves the facts as they were.
///
/// # Errors
/// [`ChatError::Store`] when a read or a fact write fails, [`ChatError::Compose`] for a template
/// bug. A model or tool failure is not an error here: it is the run's `error`.
pub async fn run_chat_turn<S: ChatStore>(
    store: &S,
    model: &dyn LanguageModel,
    market: Arc<dyn MarketData>,
    turn: ChatTurn,
) -> Result<ChatTurnOutput, ChatError> {
    let (system_prompt, facts_injected) = chat_system_prompt(
        store,
        turn.user_id,
        turn.tier,
        turn.mode,
        turn.focus.clone(),
        turn.now,
    )
    .await?;
    let data = load_chat_data(store, turn.user_id, turn.now).await?;
    let ctx = ChatToolContext {
        data: Arc::new(data),
        journal: Arc::new(Journal::default()),
        market,
        window: MoveWindow::default(),
        turn_id: turn.turn_id,
    };
    let registry = chat_registry(&ctx, turn.run_mode);
    let mut messages = turn.history;
    messages.push(Message::User {
        content: turn.user_message,
    });
    let run = run_tool_loop(
        &registry,
        model,
        &system_prompt,
        messages.clone(),
        turn.max_steps,
        turn.options,
    )
    .await;
    let ops = ctx.journal.take();
    let mut facts_injected = facts_injected;
    let applied = if run.error.is_some() {
        Vec::new()
    } else {
        apply(store, turn.user_id, turn.now, &ops).await?;
        let shown: Vec<Uuid> = facts_injected.iter().map(|f| f.id).collect();
        store
            .mark_referenced(turn.user_id, &shown, turn.now)
            .await?;
        let forgotten = |id: Uuid| {
            ops.iter()
                .any(|op| matches!(op, FactOp::Forget { id: f, .. } if *f == id))
        };
        for f in facts_injected.iter_mut().filter(|f| !forgotten(f.id)) {
            f.last_referenced_at = f.last_referenced_at.max(Some(turn.now));
        }
        ops
    };
    messages.extend(transcript(&run.steps));
    Ok(ChatTurnOutput {
        system_prompt,
        facts_injected,
        run,
        messages,
        applied,
    })
}

async fn apply<S: FactStore + Sync>(
    store: &S,
    user_id: Uuid,
    at: DateTime<Utc>,
    ops: &[FactOp],
) -> Result<(), ChatError> {
    for op in ops {
        match op {
            FactOp::Remember {
                id,
                fact,
                topic,
                confidence,
            } => {
                let new = NewFact {
                    id: *id,
                    user_id,
                    skill_id: None,
                    fact: fact.clone(),
                    source: FactSource::Chat,
                    confidence: *confidence,
                    topic: topic.clone(),
                    actor: CHAT_ACTOR.to_owned(),
                };
                store.remember(&new, at).await?;
            }
            FactOp::Forget { id, reason } => {
                let forget = Forget {
                    reason: *reason,
                    at,
                    actor: CHAT_ACTOR.to_owned(),
                };
                store.forget(user_id, *id, &forget).await?;
            }
        }
    }
    Ok(())
}

/// The messages a run's steps add to the conversation, as the loop sent them to the model:
/// each step's assistant turn, then its tool results (a refused call as `{"error": ...}`).
#[must_use]
pub fn transcript(steps: &[Step]) -> Vec<Message> {
    let mut out = Vec::new();
    for step in steps {
        out.push(Message::Assistant {
            text: step.text.clone(),
            tool_calls: step
                .tool_calls
                .iter()
                .map(|c| agent_runtime::ToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
        });
        for c in &step.tool_calls {
            let content = match &c.outcome {
                ToolOutcome::Ok { result } => result.as_str().to_owned(),
                ToolOutcome::Error {
                    message,
                    recoverable: true,
                } => json!({ "error": message }).to_string(),
                ToolOutcome::Error { .. } => continue,
            };
            out.push(Message::Tool {
                call_id: c.id.clone(),
                name: c.name.clone(),
                content,
            });
        }
    }
    out
}
