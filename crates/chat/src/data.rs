//! What one chat turn may read, loaded before the turn (the tools are synchronous, as the
//! trading agent's are: only the model call is async) and scoped to the caller: every row comes
//! from a read keyed by the caller's user id or by one of the caller's deployments.

use chrono::{DateTime, Duration, Utc};
use db::{Deployment, FactStore, LedgerStore, NoteScope, NoteStore, RegistryStore};
use types::{MarketEvent, NoteStatus, ReflectionNote, TradeRecord, UserFact};
use uuid::Uuid;

use crate::ChatError;

/// Most closed ledger rows a `trades` detail returns (ADR-0020: the last 30).
pub const TRADES_DETAIL_LIMIT: u32 = types::MAX_MEMORY_K;
/// The longest look-ahead `get_upcoming_events` accepts, in hours (ADR-0020).
pub const MAX_LOOKAHEAD_HOURS: u32 = 72;
/// How far back past events are read for `your_exposure`, in days.
pub const EXPOSURE_LOOKBACK_DAYS: i64 = 3650;
/// Most notes of one scope read to count the superseded ones.
const NOTE_HISTORY_LIMIT: u32 = 1000;

/// The store a chat turn reads and writes: the registry, the ledger, notes, facts and events.
pub trait ChatStore:
    RegistryStore + LedgerStore + NoteStore + FactStore + db::EventStore + Sync
{
}

impl<T> ChatStore for T where
    T: RegistryStore + LedgerStore + NoteStore + FactStore + db::EventStore + Sync
{
}

/// The active note of a scope and how many notes it superseded.
#[derive(Debug, Clone, PartialEq)]
pub struct NotesData {
    pub active: Option<ReflectionNote>,
    pub superseded: usize,
}

/// One of the caller's deployments with its ledger and notes.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentData {
    pub deployment: Deployment,
    pub skill_name: String,
    /// Every ledger row, oldest entry first (summaries and open positions).
    pub trades: Vec<TradeRecord>,
    /// The last [`TRADES_DETAIL_LIMIT`] closed rows as of the turn, newest entry first
    /// (`LedgerStore::closed_trades`).
    pub recent_closed: Vec<TradeRecord>,
    pub notes: NotesData,
}

/// A skill-scoped note of one of the caller's own skills.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillNotes {
    pub skill_id: Uuid,
    pub skill_version: i32,
    pub notes: NotesData,
}

/// Everything the chat tools read during one turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatData {
    pub user_id: Uuid,
    pub now: DateTime<Utc>,
    pub deployments: Vec<DeploymentData>,
    pub skill_notes: Vec<SkillNotes>,
    /// The caller's active facts (what `forget` may archive).
    pub facts: Vec<UserFact>,
    /// Events in `[now, now + MAX_LOOKAHEAD_HOURS]`.
    pub upcoming: Vec<MarketEvent>,
    /// Events in `[now - EXPOSURE_LOOKBACK_DAYS, now)`.
    pub past: Vec<MarketEvent>,
}

impl ChatData {
    /// The caller's deployment `id`.
    #[must_use]
    pub fn deployment(&self, id: Uuid) -> Option<&DeploymentData> {
        self.deployments.iter().find(|d| d.deployment.id == id)
    }
}

async fn notes<S: NoteStore>(
    store: &S,
    scope: NoteScope,
    now: DateTime<Utc>,
) -> Result<NotesData, ChatError> {
    let active = store.active_note(scope, now).await?;
    let superseded = store
        .note_history(scope, NOTE_HISTORY_LIMIT)
        .await?
        .iter()
        .filter(|n| n.status == NoteStatus::Superseded && n.generated_at <= now)
        .count();
    Ok(NotesData { active, superseded })
}

/// Loads what the caller `user_id` may read at `now`: their deployments (with ledger rows and
/// notes), their own skills' skill-scoped notes, their active facts, and the event calendar.
///
/// # Errors
/// [`ChatError::Store`] when a read fails.
pub async fn load_chat_data<S: ChatStore>(
    store: &S,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> Result<ChatData, ChatError> {
    let mut deployments = Vec::new();
    let mut skill_notes: Vec<SkillNotes> = Vec::new();
    for deployment in store.user_deployments(user_id).await? {
        let skill = store.get_skill(deployment.skill_id).await?;
        if skill.user_id == user_id
            && !skill_notes.iter().any(|s| {
                s.skill_id == deployment.skill_id && s.skill_version == deployment.skill_version
            })
        {
            let scope = NoteScope::Skill {
                skill_id: deployment.skill_id,
                skill_version: deployment.skill_version,
            };
            skill_notes.push(SkillNotes {
                skill_id: deployment.skill_id,
                skill_version: deployment.skill_version,
                notes: notes(store, scope, now).await?,
            });
        }
        let id = deployment.id;
        deployments.push(DeploymentData {
            skill_name: skill.name,
            trades: store.all_trades(id).await?,
            recent_closed: store.closed_trades(id, now, TRADES_DETAIL_LIMIT).await?,
            notes: notes(store, NoteScope::Deployment(id), now).await?,
            deployment,
        });
    }
    let facts = store.list_facts(user_id, false).await?;
    let ahead = now + Duration::hours(i64::from(MAX_LOOKAHEAD_HOURS));
    let upcoming = store.events_between(now, ahead, None).await?;
    let back = now - Duration::days(EXPOSURE_LOOKBACK_DAYS);
    let past = store
        .events_between(back, now, None)
        .await?
        .into_iter()
        .filter(|e| e.scheduled_at < now)
        .collect();
    Ok(ChatData {
        user_id,
        now,
        deployments,
        skill_notes,
        facts,
        upcoming,
        past,
    })
}
