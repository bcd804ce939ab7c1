//! [`Store`]: the backend chosen at run time, behind one concrete type.
//!
//! Why an enum rather than `Arc<dyn …>`: the traits use native `async fn` (no `async-trait`
//! boxing, no extra dependency), which makes them not object-safe. Binaries hold a `Store` (cheap
//! to clone: both variants wrap a pool) and call trait methods on it; library code that should
//! not care takes `S: Storage` (or the one trait it needs), and tests can pass either backend.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use types::{FactChange, MarketEvent, ReflectionNote, TradeRecord, UserFact};
use uuid::Uuid;

use crate::model::{Annotation, MemoryScope, NewAnnotation, NewsRecord};
use crate::model::{
    ChatTurnRecord, DecisionSnapshot, Deployment, DeploymentStatus, FactEdit, Forget, NewFact,
    NewNote, NoteScope, RecordOutcome, ReflectionRun, SkillRecord, SkillVersion, StoredFill,
    StoredRunnerState, StoredTick, TickAttempt, TickQuery, TickRecord, User,
};
use crate::traits::{
    ActionStore, AlertOutbox, AlertStore, ChatTurnStore, ControlStore, ConversationStore,
    EventStore, FactStore, JobQueue, JobStore, LeaseStore, LedgerStore, NewsStore, NoteStore,
    OutcomeStore, RegistryStore, TickStore,
};
use crate::{
    Conversation, ConversationTurn, DbError, HeldReview, HeldStatus, NewConversation, PgStore,
    PlannedTicks, SqliteStore, StoredHeldLesson,
};

/// A connected store: SQLite (embedded) or PostgreSQL (production).
#[derive(Debug, Clone)]
pub enum Store {
    /// The embedded SQLite store.
    Sqlite(SqliteStore),
    /// The PostgreSQL store.
    Postgres(PgStore),
}

impl Store {
    /// `"sqlite"` or `"postgres"`.
    #[must_use]
    pub fn backend_name(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }

    /// The second half of [`connect_lazy`](crate::connect_lazy): the schema of this build on
    /// the store's database (what [`connect`](crate::connect) applies before it returns).
    ///
    /// # Errors
    /// As [`connect`](crate::connect).
    pub async fn migrate(&self) -> Result<(), DbError> {
        match self {
            Store::Sqlite(s) => s.migrate().await,
            Store::Postgres(s) => s.migrate().await,
        }
    }

    /// Closes every connection (see [`SqliteStore::close`], [`PgStore::close`]); calls made
    /// afterwards fail.
    ///
    /// # Errors
    /// As the backend's `close`.
    pub async fn close(&self) -> Result<(), DbError> {
        match self {
            Store::Sqlite(s) => s.close().await,
            Store::Postgres(s) => s.close().await,
        }
    }
}

/// `impl $trait for Store`, each method forwarded to the variant's store. A macro because each
/// method is a different call: with no `dyn` (see the module docs), a function cannot be
/// generic over "this method of whichever variant".
macro_rules! delegate {
    ($trait:ident { $( fn $name:ident(&self $(, $arg:ident : $ty:ty)*) -> $ret:ty; )* }) => {
        impl $trait for Store {
            $(
                async fn $name(&self $(, $arg: $ty)*) -> Result<$ret, DbError> {
                    match self {
                        Store::Sqlite(s) => s.$name($($arg),*).await,
                        Store::Postgres(s) => s.$name($($arg),*).await,
                    }
                }
            )*
        }
    };
}

delegate!(RegistryStore {
    fn upsert_user(&self, user: &User) -> ();
    fn create_skill(&self, skill: &SkillRecord) -> ();
    fn get_skill(&self, id: Uuid) -> SkillRecord;
    fn add_skill_version(&self, version: &SkillVersion) -> ();
    fn ensure_skill(&self, skill: &SkillRecord) -> ();
    fn ensure_skill_version(&self, version: &SkillVersion) -> ();
    fn get_skill_version(&self, skill_id: Uuid, version: i32) -> SkillVersion;
    fn latest_skill_version(&self, skill_id: Uuid) -> SkillVersion;
    fn create_deployment(&self, deployment: &Deployment) -> ();
    fn get_deployment(&self, id: Uuid) -> Deployment;
    fn list_deployments(&self, status: Option<DeploymentStatus>) -> Vec<Deployment>;
    fn user_deployments(&self, user_id: Uuid) -> Vec<Deployment>;
    fn user_skills(&self, user_id: Uuid) -> Vec<SkillRecord>;
    fn set_next_tick_at(&self, id: Uuid, next_tick_at: Option<DateTime<Utc>>) -> ();
});

delegate!(LeaseStore {
    fn claim_due_deployments(&self, owner: &str, now: DateTime<Utc>, lease_for: chrono::Duration, limit: u32) -> Vec<Deployment>;
    fn release_deployment(&self, id: Uuid, owner: &str, next_tick_at: Option<DateTime<Utc>>) -> ();
    fn extend_lease(&self, id: Uuid, owner: &str, until: DateTime<Utc>) -> bool;
    fn claimable_count(&self, now: DateTime<Utc>) -> u64;
    fn mark_attempt(&self, deployment_id: Uuid, owner: &str, tick_at: DateTime<Utc>) -> Option<TickAttempt>;
    fn start_ticks(&self, owner: &str, starts: &[crate::TickStart]) -> Vec<crate::StartedTick>;
    fn claim_reflection(&self, deployment_id: Uuid, owner: &str, now: DateTime<Utc>, until: DateTime<Utc>) -> bool;
    fn release_reflection(&self, deployment_id: Uuid, owner: &str) -> ();
    fn claim_flattens(&self, owner: &str, now: DateTime<Utc>, lease_for: chrono::Duration, limit: u32) -> Vec<Deployment>;
    fn finish_flatten(&self, id: Uuid, owner: &str, at: DateTime<Utc>) -> ();
    fn retry_flatten(&self, id: Uuid, owner: &str, error: &str, retry_at: DateTime<Utc>) -> u32;
});

delegate!(ControlStore {
    fn control_deployment(&self, request: &crate::ControlRequest) -> crate::DeploymentControl;
    fn deployment_controls(&self, deployment_id: Uuid, limit: u32) -> Vec<crate::DeploymentControl>;
    fn flatten_state(&self, deployment_id: Uuid) -> Option<crate::FlattenState>;
});

delegate!(ActionStore {
    fn create_pending_action(&self, action: &crate::NewPendingAction) -> crate::PendingAction;
    fn pending_actions(&self, user_id: Uuid, now: DateTime<Utc>, limit: u32) -> Vec<crate::PendingAction>;
    fn actions(&self, user_id: Uuid, limit: u32) -> Vec<crate::PendingAction>;
    fn action(&self, user_id: Uuid, id: Uuid) -> crate::PendingAction;
    fn confirm_action(&self, user_id: Uuid, id: Uuid, at: DateTime<Utc>) -> crate::PendingAction;
    fn discard_action(&self, user_id: Uuid, id: Uuid, at: DateTime<Utc>) -> crate::PendingAction;
    fn expire_actions(&self, now: DateTime<Utc>) -> u64;
});

delegate!(TickStore {
    fn record_tick(&self, tick: &TickRecord) -> RecordOutcome;
    fn record_tick_alerting(&self, tick: &TickRecord, alerts: &crate::TickAlerts) -> RecordOutcome;
    fn record_ticks(&self, batch: &PlannedTicks, reflections: &[(Option<NewNote>, ReflectionRun)]) -> Vec<RecordOutcome>;
    fn get_snapshot(&self, id: Uuid) -> DecisionSnapshot;
    fn last_snapshot_before(&self, deployment_id: Uuid, before: DateTime<Utc>) -> Option<DecisionSnapshot>;
    fn runner_state(&self, deployment_id: Uuid) -> Option<StoredRunnerState>;
    fn list_snapshots(&self, deployment_id: Uuid, limit: u32) -> Vec<DecisionSnapshot>;
    fn ticks(&self, query: &TickQuery) -> Vec<StoredTick>;
});

delegate!(AlertStore {
    fn add_alert_channel(&self, channel: &crate::NewAlertChannel) -> crate::AlertChannel;
    fn alert_channels(&self, user_id: Uuid) -> Vec<crate::AlertChannel>;
    fn delete_alert_channel(&self, user_id: Uuid, id: Uuid) -> ();
    fn queue_test_alert(&self, user_id: Uuid, channel_id: Uuid, at: DateTime<Utc>) -> Uuid;
    fn alert_deliveries(&self, user_id: Uuid, limit: u32) -> Vec<crate::AlertDelivery>;
});

delegate!(AlertOutbox {
    fn claim_alert_deliveries(&self, owner: &str, now: DateTime<Utc>, lease_for: chrono::Duration, limit: u32) -> Vec<crate::ClaimedDelivery>;
    fn finish_alert_delivery(&self, id: Uuid, owner: &str, at: DateTime<Utc>) -> bool;
    fn retry_alert_delivery(&self, id: Uuid, owner: &str, error: &str, retry_at: Option<DateTime<Utc>>) -> bool;
});

delegate!(JobStore {
    fn submit_jobs(&self, jobs: &[crate::NewJob], bars: &[crate::NewBars], limits: crate::JobLimits) -> crate::Submitted;
    fn job(&self, id: Uuid) -> crate::Job;
    fn jobs(&self, filter: &crate::JobFilter) -> Vec<crate::Job>;
    fn job_report(&self, id: Uuid) -> Option<String>;
    fn job_bars(&self, user_id: Uuid, sha256: &str) -> crate::StoredBars;
    fn cancel_job(&self, user_id: Uuid, id: Uuid, at: DateTime<Utc>) -> crate::Job;
});

delegate!(JobQueue {
    fn claim_jobs(&self, owner: &str, now: DateTime<Utc>, lease_for: chrono::Duration, limit: u32) -> Vec<crate::Job>;
    fn begin_job_run(&self, id: Uuid, owner: &str, deployment_id: Uuid, ticks_total: u32) -> bool;
    fn heartbeat_job(&self, id: Uuid, owner: &str, now: DateTime<Utc>, until: DateTime<Utc>, progress: crate::JobProgress) -> bool;
    fn finish_job(&self, id: Uuid, owner: &str, at: DateTime<Utc>, result: &crate::JobResult) -> bool;
    fn fail_job(&self, id: Uuid, owner: &str, at: DateTime<Utc>, error: &str) -> bool;
    fn release_job(&self, id: Uuid, owner: &str) -> bool;
    fn open_jobs(&self, batch_id: Option<Uuid>) -> u64;
});

delegate!(LedgerStore {
    fn get_trade(&self, id: Uuid) -> TradeRecord;
    fn open_trades(&self, deployment_id: Uuid) -> Vec<TradeRecord>;
    fn all_trades(&self, deployment_id: Uuid) -> Vec<TradeRecord>;
    fn count_closed_between(&self, deployment_id: Uuid, after: DateTime<Utc>, as_of: DateTime<Utc>) -> u64;
    fn closed_trades_exited_after(&self, deployment_id: Uuid, after: DateTime<Utc>, as_of: DateTime<Utc>) -> Vec<TradeRecord>;
    fn closed_trades(&self, deployment_id: Uuid, as_of: DateTime<Utc>, limit: u32) -> Vec<TradeRecord>;
    fn closed_trades_for_skill(&self, skill_id: Uuid, skill_version: i32, as_of: DateTime<Utc>, limit: u32) -> Vec<TradeRecord>;
    fn count_closed_trades(&self, deployment_id: Uuid, as_of: DateTime<Utc>) -> u64;
    fn applied_fill_ids(&self, deployment_id: Uuid) -> BTreeSet<String>;
    fn applied_fill_ids_since(&self, deployment_id: Uuid, since: DateTime<Utc>) -> BTreeSet<String>;
    fn list_fills(&self, deployment_id: Uuid, since: Option<DateTime<Utc>>) -> Vec<StoredFill>;
});

delegate!(NoteStore {
    fn insert_note(&self, note: &NewNote) -> ReflectionNote;
    fn accept_note(&self, id: Uuid, by: &str, at: DateTime<Utc>) -> ReflectionNote;
    fn get_note(&self, id: Uuid) -> ReflectionNote;
    fn active_note(&self, scope: NoteScope, as_of: DateTime<Utc>) -> Option<ReflectionNote>;
    fn note_history(&self, scope: NoteScope, limit: u32) -> Vec<ReflectionNote>;
    fn record_reflection_run(&self, run: &ReflectionRun) -> ();
    fn reflection_runs(&self, scope: NoteScope, limit: u32) -> Vec<ReflectionRun>;
    fn held_lessons(&self, scope: NoteScope, status: Option<HeldStatus>, limit: u32) -> Vec<StoredHeldLesson>;
    fn held_lessons_by_prefix(&self, prefix: &str, limit: u32) -> Vec<StoredHeldLesson>;
    fn review_held_lesson(&self, id: Uuid, review: &HeldReview) -> StoredHeldLesson;
});

delegate!(FactStore {
    fn remember(&self, fact: &NewFact, at: DateTime<Utc>) -> UserFact;
    fn edit_fact(&self, user_id: Uuid, fact_id: Uuid, edit: &FactEdit, actor: &str, at: DateTime<Utc>) -> UserFact;
    fn forget(&self, user_id: Uuid, fact_id: Uuid, forget: &Forget) -> ();
    fn top_facts(&self, user_id: Uuid, skill_id: Option<Uuid>, k: u32, bump_at: Option<DateTime<Utc>>) -> Vec<UserFact>;
    fn mark_referenced(&self, user_id: Uuid, fact_ids: &[Uuid], at: DateTime<Utc>) -> u64;
    fn list_facts(&self, user_id: Uuid, include_archived: bool) -> Vec<UserFact>;
    fn fact_changes(&self, fact_id: Uuid) -> Vec<FactChange>;
});

delegate!(EventStore {
    fn upsert_event(&self, event: &MarketEvent) -> ();
    fn upsert_events(&self, events: &[MarketEvent]) -> ();
    fn events_between(&self, from: DateTime<Utc>, to: DateTime<Utc>, min_importance: Option<Decimal>) -> Vec<MarketEvent>;
});

delegate!(NewsStore {
    fn insert_news(&self, items: &[NewsRecord]) -> u64;
    fn news_window(&self, symbols: &[String], from: DateTime<Utc>, to: DateTime<Utc>, as_of: DateTime<Utc>, limit: u32) -> Vec<NewsRecord>;
});

delegate!(ChatTurnStore {
    fn record_chat_turn(&self, turn: &ChatTurnRecord) -> ();
    fn chat_turns(&self, user_id: Uuid, limit: u32) -> Vec<ChatTurnRecord>;
});

delegate!(ConversationStore {
    fn start_conversation(&self, conversation: &NewConversation) -> ();
    fn conversation(&self, user_id: Uuid, id: Uuid) -> Conversation;
    fn conversations(&self, user_id: Uuid, limit: u32) -> Vec<Conversation>;
    fn add_conversation_turn(&self, turn: &ConversationTurn) -> u32;
    fn conversation_turns(&self, user_id: Uuid, id: Uuid, limit: u32) -> Vec<ConversationTurn>;
    fn delete_conversation(&self, user_id: Uuid, id: Uuid) -> bool;
    fn purge_conversations(&self, idle_before: DateTime<Utc>) -> u64;
});

delegate!(OutcomeStore {
    fn unscored_outcomes(&self, now: DateTime<Utc>, limit: u32) -> Vec<outcomes::TradeOutcome>;
    fn score_outcomes(&self, scores: &[(Uuid, outcomes::OutcomeScore)]) -> u64;
    fn outcomes(&self, deployment_id: Uuid, limit: u32) -> Vec<outcomes::TradeOutcome>;
    fn symbol_outcomes(&self, deployment_id: Option<Uuid>, symbol: &str, from: DateTime<Utc>, until: DateTime<Utc>, limit: u32) -> Vec<outcomes::TradeOutcome>;
    fn outcome(&self, id: Uuid) -> outcomes::TradeOutcome;
    fn outcome_ids_by_prefix(&self, scope: MemoryScope, prefix: &str, limit: u32) -> Vec<Uuid>;
    fn market_snapshot(&self, id: Uuid) -> outcomes::MarketSnapshot;
    fn annotate(&self, annotation: &NewAnnotation) -> Annotation;
    fn annotations(&self, deployment_id: Uuid, limit: u32) -> Vec<Annotation>;
    fn recall_outcomes(&self, scope: MemoryScope, query: &outcomes::RecallQuery) -> Vec<outcomes::RecalledOutcome>;
    fn search_memory(&self, scope: MemoryScope, query: &outcomes::SearchQuery) -> outcomes::SearchHits;
    fn regrade_outcomes(&self) -> crate::Regraded;
});
