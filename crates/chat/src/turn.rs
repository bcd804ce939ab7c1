//! One chat turn: the system prompt with the caller's facts, the turn's data, the model loop of
//! `agent-runtime` over the chat registry, and the fact changes applied and the prepared actions
//! kept at the end.

use std::sync::Arc;

use agent_runtime::{
    CallErrors, FinishReason, LanguageModel, Message, RunOptions, RunResult, Step, ToolOutcome,
    run_tool_loop,
};
use chrono::{DateTime, Utc};
use db::{FactStore, Forget, NewFact, NewPendingAction, PendingAction};
use prompt_compose::{ChatFact, ChatMode, ChatSystemInput, Focus, MAX_INJECTED_FACTS, Tier};
use serde_json::json;
use tools::RunMode;
use types::{FactSource, UserFact};
use uuid::Uuid;

use crate::ChatError;
use crate::catalog::{CHAT_ACTOR, ChatToolContext, FactOp, chat_registry};
use crate::data::{ChatStore, load_chat_data};
use crate::exposure::MoveWindow;
use crate::market::{ChatMarket, load_turn_market};

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
    /// The kept conversation the turn belongs to, if any (the actions it prepares name it).
    pub conversation_id: Option<Uuid>,
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
    /// Knobs of the model loop (output-token budget per call). Whatever its `call_errors`, a
    /// chat turn sends a call to an unknown tool, or arguments that are not JSON, back to the
    /// model as the call's error ([`CallErrors::ToModel`]).
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
    /// The coach's answer: the model's text; when the turn ran out of steps, that text followed
    /// by what the turn did and that it stopped ([`out_of_steps_answer`]).
    pub answer: String,
    /// The last allowed model call still asked for tools: the turn stopped before the model
    /// wrote its answer.
    pub out_of_steps: bool,
    /// The conversation after this turn: the history, the user's message, then each step's
    /// assistant turn and tool results (and, when the turn ran out of steps, the answer as the
    /// assistant's last message).
    pub messages: Vec<Message>,
    /// The fact changes applied to the store, in call order (none when the run ended in error).
    pub applied: Vec<FactOp>,
    /// The actions `prepare_action` prepared, as kept in the store (pending, waiting for the
    /// user's confirmation), in call order (none when the run ended in error).
    pub actions: Vec<PendingAction>,
}

/// Runs one chat turn for `turn.user_id`: the system prompt (its facts read, not yet marked),
/// the caller's data, the market data it needs from `market` ([`crate::bar_needs`]; a load
/// that fails is logged and the turn runs without those bars, its tools saying so), the chat
/// registry in `turn.run_mode`, `agent_runtime::run_tool_loop` over
/// the history plus the user's message; then, when the run completed, the turn's `remember` /
/// `forget` calls written to the store in call order (each through the store's audit trail;
/// a remembered fact is referenced at the turn's time) and the facts the prompt showed marked
/// referenced at the turn's time ([`FactStore::mark_referenced`]), and the actions
/// `prepare_action` prepared kept pending ([`db::ActionStore::create_pending_action`], naming the
/// turn's conversation): nothing they would change changes until the user confirms them. A run
/// that ends in error writes no fact change, marks nothing and keeps no action: a failed turn
/// leaves the facts as they were.
///
/// A call to an unknown tool, or with arguments that are not JSON or break the tool's schema,
/// goes back to the model as that call's error and the turn goes on (the other calls of the
/// same response keep their effect). A turn whose last allowed step still asked for tools
/// completed: its fact changes are written and its answer says what it did and that it
/// stopped.
///
/// # Errors
/// [`ChatError::Store`] when a read or a fact write fails, [`ChatError::Compose`] for a template
/// bug. A model or tool failure is not an error here: it is the run's `error`.
pub async fn run_chat_turn<S: ChatStore>(
    store: &S,
    model: &dyn LanguageModel,
    market: &dyn ChatMarket,
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
    let window = MoveWindow::default();
    let (bars, derivatives) = load_turn_market(market, &data, window).await;
    let ctx = ChatToolContext {
        market: bars.market,
        derivatives,
        bars_unavailable: bars.unavailable.into(),
        window,
        ticks: Arc::new(store.clone()),
        ..ChatToolContext::new(data, turn.turn_id)
    };
    let registry = chat_registry(&ctx, turn.mode, turn.run_mode);
    let options = RunOptions {
        call_errors: CallErrors::ToModel,
        ..turn.options
    };
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
        options,
    )
    .await;
    let ops = ctx.journal.take();
    let prepared = ctx.actions.take();
    let mut facts_injected = facts_injected;
    let mut actions = Vec::new();
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
        for action in prepared {
            let action = NewPendingAction {
                conversation_id: turn.conversation_id,
                ..action
            };
            actions.push(store.create_pending_action(&action).await?);
        }
        ops
    };
    messages.extend(transcript(&run.steps));
    let out_of_steps = run.error.is_none() && run.finish_reason == FinishReason::ToolCalls;
    let answer = if out_of_steps {
        let answer = out_of_steps_answer(&run, &applied, &actions);
        messages.push(Message::Assistant {
            text: Some(answer.clone()),
            tool_calls: Vec::new(),
        });
        answer
    } else {
        run.text.clone()
    };
    Ok(ChatTurnOutput {
        system_prompt,
        facts_injected,
        run,
        answer,
        out_of_steps,
        messages,
        applied,
        actions,
    })
}

/// The answer of a turn that ran out of steps: the model's text so far, then a paragraph that
/// says the turn stopped at its limit of model calls and lists what it did — each tool read
/// with its number of calls, each fact remembered (quoted) or forgotten (by handle), each
/// action prepared (its summary, waiting for the user's confirmation), and how many calls were
/// refused.
#[must_use]
pub fn out_of_steps_answer(
    run: &RunResult,
    applied: &[FactOp],
    actions: &[PendingAction],
) -> String {
    let mut out = String::new();
    let text = run.text.trim();
    if !text.is_empty() {
        out.push_str(text);
        out.push_str("\n\n");
    }
    out.push_str("I stopped before finishing my answer: this turn's limit of ");
    types::text::push_uint(&mut out, run.steps.len() as u64);
    out.push_str(if run.steps.len() == 1 {
        " model call ran out."
    } else {
        " model calls ran out."
    });
    let mut reads: Vec<(&str, u64)> = Vec::new();
    let mut refused = 0u64;
    for call in run.steps.iter().flat_map(|s| &s.tool_calls) {
        match &call.outcome {
            ToolOutcome::Error { .. } => refused += 1,
            ToolOutcome::Ok { .. }
                if call.name == crate::REMEMBER
                    || call.name == crate::FORGET
                    || call.name == crate::PREPARE_ACTION => {}
            ToolOutcome::Ok { .. } => match reads.iter_mut().find(|(n, _)| *n == call.name) {
                Some((_, n)) => *n += 1,
                None => reads.push((call.name.as_str(), 1)),
            },
        }
    }
    let mut did: Vec<String> = Vec::new();
    for (name, n) in reads {
        let mut line = format!("read {name} (");
        types::text::push_uint(&mut line, n);
        line.push_str(if n == 1 { " call)" } else { " calls)" });
        did.push(line);
    }
    for op in applied {
        did.push(match op {
            FactOp::Remember { fact, .. } => {
                format!("remembered {}", types::text::quoted(fact))
            }
            FactOp::Forget { id, .. } => {
                format!("forgot the fact {}", types::FactHandle::of(*id))
            }
        });
    }
    for action in actions {
        did.push(format!(
            "prepared {} (nothing changes until you confirm it)",
            types::text::quoted(&action.summary)
        ));
    }
    if refused > 0 {
        let mut line = String::new();
        types::text::push_uint(&mut line, refused);
        line.push_str(if refused == 1 {
            " call was refused"
        } else {
            " calls were refused"
        });
        did.push(line);
    }
    if did.is_empty() {
        out.push_str(" I did nothing else.");
    } else {
        out.push_str(" What I did: ");
        out.push_str(&did.join("; "));
        out.push('.');
    }
    out.push_str(" Ask me to go on and I will pick up from there.");
    out
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
