//! `live-runner chat`: the chat coach in a terminal — a read-eval loop over lines of input,
//! each one a turn of [`chat::run_chat_turn`] (through
//! [`serve::api::run_recorded_turn`](crate::serve::api::run_recorded_turn), so its usage and
//! cost are recorded as the server's are), the conversation kept between turns. `/quit` or the
//! end of input ends it; it works on a pipe as on a terminal.
//!
//! On PostgreSQL the binary hands it the store as the user ([`db::PgStore::as_user`]): row-level
//! security applies exactly as for an HTTP request.

use agent_runtime::{LanguageModel, Message, RunOptions, ToolOutcome};
use chat::{ChatMarket, ChatStore, ChatTurn};
use db::ChatTurnStore;
use prompt_compose::{ChatMode, Focus, Tier};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tools::RunMode;
use types::Clock;
use uuid::Uuid;

/// The command that ends the conversation.
pub const QUIT: &str = "/quit";

/// Who is talking, and how.
#[derive(Debug, Clone)]
pub struct Session {
    /// The user every turn runs as.
    pub user_id: Uuid,
    /// How the chat was opened.
    pub mode: ChatMode,
    /// A deployment (or skill) the conversation is about.
    pub focus: Option<Focus>,
    /// The user's plan as the prompt states it.
    pub tier: Tier,
    /// Most model calls of one turn.
    pub max_steps: u32,
}

/// What a conversation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Turns run (each recorded in `chat_turns`).
    pub turns: u32,
    /// Turns whose model failed.
    pub failed: u32,
}

/// Reads lines from `input` until [`QUIT`] or its end; each non-blank line is the user's next
/// message. Writes each answer (and one line per tool call) to `output`.
///
/// # Errors
/// A store failure (the conversation cannot go on without its data) or an I/O error. A model
/// failure is printed and the conversation goes on.
pub async fn converse<S, R, W>(
    store: &S,
    model: &dyn LanguageModel,
    market: &dyn ChatMarket,
    clock: &dyn Clock,
    session: &Session,
    input: R,
    mut output: W,
) -> anyhow::Result<Summary>
where
    S: ChatStore + ChatTurnStore,
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = input.lines();
    let mut history: Vec<Message> = Vec::new();
    let mut summary = Summary::default();
    output
        .write_all(
            format!(
                "chat coach ({}) — type a message, {QUIT} to leave\n",
                model.id()
            )
            .as_bytes(),
        )
        .await?;
    while let Some(line) = lines.next_line().await? {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == QUIT {
            break;
        }
        let turn = ChatTurn {
            turn_id: Uuid::new_v4(),
            user_id: session.user_id,
            conversation_id: None,
            tier: session.tier,
            mode: session.mode,
            focus: session.focus.clone(),
            history: history.clone(),
            user_message: line.to_owned(),
            now: clock.now(),
            max_steps: session.max_steps,
            run_mode: RunMode::Trade,
            options: RunOptions::default(),
        };
        let out = crate::serve::api::run_recorded_turn(store, model, market, turn).await?;
        summary.turns += 1;
        let mut text = String::new();
        for step in &out.run.steps {
            for call in &step.tool_calls {
                let verdict = match &call.outcome {
                    ToolOutcome::Ok { .. } => "ok".to_owned(),
                    ToolOutcome::Error { message, .. } => format!("refused: {message}"),
                };
                text.push_str(&format!(
                    "  · {} {} → {verdict}\n",
                    call.name, call.arguments
                ));
            }
        }
        if let Some(e) = &out.run.error {
            summary.failed += 1;
            text.push_str(&format!("(the model failed: {e})\n"));
        } else {
            text.push_str(&format!("coach: {}\n", out.answer.trim_end()));
            for action in &out.actions {
                text.push_str(&format!(
                    "  ⧗ waiting for your confirmation until {}: {} ({})\n",
                    db::time_text(action.expires_at),
                    action.summary,
                    chat::actions::confirm_route(action.id)
                ));
            }
            // Only a turn that worked joins the conversation.
            history = out.messages;
        }
        output.write_all(text.as_bytes()).await?;
        output.flush().await?;
    }
    output.flush().await?;
    Ok(summary)
}
