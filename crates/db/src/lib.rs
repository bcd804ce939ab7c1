//! Storage: store traits with one PostgreSQL and one SQLite implementation each, and the
//! migrations for both (`migrations/postgres`, `migrations/sqlite`, one schema in two dialects).
//!
//! What this crate owns:
//! - the schema: skills, deployments, the decision firehose (`decision_snapshots`), `fills`, the
//!   closed-trade ledger (`trade_history`, column for column [`types::TradeRecord`]),
//!   `reflection_notes` + `reflection_runs`, `user_facts` + their audit trail, `market_events`,
//!   `news_items` (polled headlines, deduplicated per feed by guid),
//!   `live_runner_state` (a runner's opaque state between ticks, committed with each tick),
//!   `chat_turns` (each chat-coach turn's model, steps, usage and cost);
//!   the outcome memory of seed 003 (`market_snapshots`, `trade_outcomes` — written with their
//!   tick, scored later — and `trade_annotations`); `deployment_controls` (every pause,
//!   resume and stop, audited; [`control`]); `pending_actions` (what the chat coach proposes,
//!   applied only once its owner confirms it; [`actions`]);
//!   `backtest_jobs` and `backtest_bars` (backtests as jobs that worker processes lease, and
//!   the bar files they run over; [`jobs`]);
//!   on PostgreSQL also the `auth` shim (roles `anon` / `authenticated` / `service_role`,
//!   `auth.uid()`, `auth.role()`) and row-level security;
//! - the store traits ([`RegistryStore`], [`LeaseStore`], [`TickStore`], [`LedgerStore`],
//!   [`NoteStore`], [`FactStore`], [`EventStore`], [`NewsStore`], [`ChatTurnStore`], [`OutcomeStore`],
//!   [`ControlStore`], [`ActionStore`], [`AlertStore`], [`AlertOutbox`], [`JobStore`], [`JobQueue`]; all of
//!   them: [`Storage`]) and their two implementations ([`SqliteStore`], [`PgStore`]), chosen at
//!   run time through [`Store`] / [`connect`];
//! - [`UserScoped`] ([`PgStore::as_user`]): the PostgreSQL store acting as one end user, every
//!   statement in a transaction as role `authenticated` with the user's JWT claims, so row-level
//!   security scopes it (what the chat server's handlers get).
//!
//! Invariants it keeps (in Rust and again in the database):
//! - a tick is written atomically and at most once ([`TickStore::record_tick`]), with the
//!   runner state after it when the caller gives one (never moving backwards); a fill is stored
//!   at most once per deployment; at most one open ledger row per deployment and symbol;
//! - exactly one active reflection note per scope, history kept; lessons ≤ 2000 characters;
//! - facts 4–500 characters, every change audited by a trigger; reads capped at K ≤ 30;
//! - a deployment's status changes only with its audit row, in one transaction; a stopped
//!   deployment is final (a trigger refuses moving it back);
//! - point in time: closed trades and notes are read "as of" a time, never past it; a news item
//!   only once both its publication and its first fetch are at or before that time.
//!
//! Tests: `cargo test -p db` runs one contract suite against SQLite and PostgreSQL (plus
//! RLS tests). The PostgreSQL half needs a server at `TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); without one it fails and says how to start it
//! (`pg_ctlcluster --skip-systemctl-redirect 15 main start`). See `migrations/README.md`.
//!
//! What it must never do: decide anything about trading (it stores what the engine and the
//! materializer computed), read the clock for anything a prompt shows (callers pass times;
//! only bookkeeping columns such as `created_at` use the wall clock), or use floats for money —
//! decimals are `numeric` on PostgreSQL and exact TEXT on SQLite.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use db::{DbError, RegistryStore, SkillRecord, User};
//! use uuid::Uuid;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // An in-memory SQLite store, migrated; `postgres://…` opens PostgreSQL instead.
//! let store = db::connect("sqlite::memory:").await?;
//! let user = User { id: Uuid::from_u128(1), email: None };
//! store.upsert_user(&user).await?;
//! let skill = SkillRecord {
//!     id: Uuid::from_u128(2),
//!     user_id: user.id,
//!     name: "BTC breakout".into(),
//!     created_at: Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap(),
//! };
//! store.create_skill(&skill).await?;
//! assert_eq!(store.get_skill(skill.id).await?, skill);
//!
//! // Bounds are enforced on every write path: a skill needs a name.
//! let nameless = SkillRecord { id: Uuid::from_u128(3), name: String::new(), ..skill };
//! assert!(matches!(store.create_skill(&nameless).await, Err(DbError::Bound { .. })));
//! # Ok::<(), DbError>(())
//! # }).unwrap();
//! ```

pub mod actions;
pub mod alerts;
mod codec;
pub mod control;
mod conversation;
mod error;
mod held;
mod imp;
pub mod jobs;
mod model;
mod postgres;
mod scoped;
mod sqlite;
mod store;
#[cfg(feature = "test-support")]
pub mod test_support;
mod traits;
mod url;

pub use actions::{
    ActionKind, ActionResult, ActionStatus, MAX_ACTION_ARGUMENTS_BYTES, MAX_ACTION_ERROR_CHARS,
    MAX_ACTION_SUMMARY_CHARS, MAX_ACTIONS_READ, NewPendingAction, PendingAction,
};
pub use alerts::{
    AlertChannel, AlertDelivery, AlertKind, ChannelKind, ClaimedDelivery, DeliveryStatus,
    MAX_ALERT_TEXT_CHARS, MAX_CHANNELS_PER_USER, MAX_DELIVERIES_READ, MAX_DELIVERY_ERROR_CHARS,
    NewAlertChannel, TickAlerts, alert_delivery_id, alert_event_id,
};
pub use codec::time_text;
pub use control::{
    ControlAction, ControlRequest, DeploymentControl, FlattenState, MAX_CONTROL_REASON_CHARS,
    MAX_CONTROLS_READ, MAX_FLATTEN_ERROR_CHARS, MAX_REQUESTED_BY_CHARS,
};
pub use conversation::{
    Conversation, ConversationTurn, MAX_CONVERSATION_ANSWER_CHARS, MAX_CONVERSATION_MESSAGE_CHARS,
    MAX_CONVERSATION_TITLE_CHARS, MAX_CONVERSATION_TURN_JSON_BYTES, MAX_CONVERSATIONS_READ,
    NewConversation,
};
pub use error::{ConstraintKind, DbError};
pub use held::{
    HeldDecision, HeldReview, HeldStatus, MAX_HELD_PER_NOTE, MAX_HELD_READ, MAX_HELD_REASONS_CHARS,
    MAX_OBSERVATIONS_JSON_CHARS, MAX_REVIEW_REASON_CHARS, MAX_REVIEWER_CHARS, StoredHeldLesson,
    accepted_note_id, held_lesson_id,
};
pub use imp::tick::PlannedTicks;
pub use jobs::{
    BarsFormat, BarsRef, CassetteRef, Job, JobFilter, JobLimits, JobProgress, JobResult, JobSpec,
    JobStatus, MAX_BARS_BYTES, MAX_JOB_ERROR_CHARS, MAX_JOB_LABEL_CHARS, MAX_JOB_OWNER_CHARS,
    MAX_JOB_SPEC_BYTES, MAX_JOBS_PER_SUBMIT, MAX_JOBS_READ, NewBars, NewJob, StoredBars, Submitted,
};
pub use model::{
    Annotation, AnnotationTarget, BrokerKind, ChatTurnRecord, DecisionSnapshot, Deployment,
    DeploymentStatus, FactEdit, FillTradeLink, Forget, MAX_ANNOTATION_CHARS, MAX_ANNOTATION_TAGS,
    MAX_CHAT_TURN_ERROR_CHARS, MAX_NEWS_KEY_CHARS, MAX_NEWS_READ, MAX_NEWS_SOURCE_CHARS,
    MAX_NEWS_SUMMARY_CHARS, MAX_NEWS_TITLE_CHARS, MAX_TAG_CHARS, MAX_TICKS_READ, MemoryScope,
    NewAnnotation, NewFact, NewNote, NewsRecord, NoteScope, OutcomeWrites, RecordOutcome,
    ReflectionRun, Regraded, RunOutcome, SentimentSource, SkillRecord, SkillVersion, StartedTick,
    StoredFill, StoredRunnerState, StoredTick, TickAttempt, TickQuery, TickRecord, TickStart,
    TickTexts, User,
};
pub use postgres::{POSTGRES_MIGRATOR, PgStore, PoolConfig};
pub use scoped::{USER_ROLE, UserScoped};
pub use sqlite::{
    Durability, SCRATCH_PAGE_SIZE, SQLITE_BASELINE, SQLITE_MIGRATOR, SqliteStore,
    apply_sqlite_baseline,
};
pub use store::Store;
pub use traits::{
    ActionStore, AlertOutbox, AlertStore, ChatTurnStore, ControlStore, ConversationStore,
    EventStore, FactStore, JobQueue, JobStore, LeaseStore, LedgerStore, NewsStore, NoteStore,
    OutcomeStore, RegistryStore, Storage, TickStore,
};
/// `mockall` mocks of the store traits (feature `mock`).
#[cfg(feature = "mock")]
pub use traits::{
    MockActionStore, MockAlertOutbox, MockAlertStore, MockChatTurnStore, MockControlStore,
    MockConversationStore, MockEventStore, MockFactStore, MockJobQueue, MockJobStore,
    MockLedgerStore, MockNewsStore, MockNoteStore, MockOutcomeStore, MockRegistryStore,
    MockTickStore,
};
/// Re-exported from `types`: a snapshot's `steps` are [`JsonText`].
pub use types::JsonText;
pub use url::redact_url;

/// Opens the store `url` names and applies its migrations:
/// `sqlite://path?mode=rwc` (or `sqlite:path`; the file is created on first use),
/// `sqlite::memory:`, or `postgres://…` / `postgresql://…`.
///
/// # Errors
/// [`DbError::UnsupportedUrl`] for another scheme; otherwise what
/// [`SqliteStore::connect`] / [`PgStore::connect`] return.
pub async fn connect(url: &str) -> Result<Store, DbError> {
    connect_with(url, Durability::Normal).await
}

/// Opens a store that already exists with this build's schema, creating and migrating nothing:
/// for the commands that read or amend a recorded run (notes, reflect, accept-note, ledger
/// rebuild, replay, listing deployments). A SQLite file that is missing is an error, not a new
/// empty database; a database without every migration of this build is
/// [`DbError::NotMigrated`].
///
/// # Errors
/// [`DbError::UnsupportedUrl`], [`DbError::Invalid`] for a malformed URL,
/// [`DbError::Backend`] when the file or server cannot be opened (a missing SQLite file
/// included), [`DbError::NotMigrated`].
pub async fn open_existing(url: &str) -> Result<Store, DbError> {
    let scheme = url.split(':').next().unwrap_or_default();
    match scheme {
        "sqlite" => Ok(Store::Sqlite(SqliteStore::open_existing(url).await?)),
        "postgres" | "postgresql" => Ok(Store::Postgres(PgStore::open_existing(url).await?)),
        other => Err(DbError::UnsupportedUrl {
            scheme: other.to_owned(),
        }),
    }
}

/// Whether every migration of `migrator` is applied on `conn`'s database.
async fn check_migrated<'c, E>(
    conn: E,
    migrator: &sqlx::migrate::Migrator,
    backend: &'static str,
) -> Result<(), DbError>
where
    E: sqlx::Executor<'c>,
    i64: sqlx::Type<E::Database> + for<'r> sqlx::Decode<'r, E::Database>,
    for<'q> <E::Database as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, E::Database>,
    usize: sqlx::ColumnIndex<<E::Database as sqlx::Database>::Row>,
{
    // No table: never migrated (the query error is the answer, not a failure to report).
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
            .fetch_all(conn)
            .await
            .unwrap_or_default();
    let missing: Vec<i64> = migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration() && !applied.contains(&m.version))
        .map(|m| m.version)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(DbError::NotMigrated { backend, missing })
    }
}

/// [`connect_with`] for a SQLite URL in two halves ([`SqliteStore::connect_lazy`]): the store at
/// once, with no connection opened and nothing created (no I/O), and [`Store::migrate`], which
/// opens the file and gives it the schema; nothing else may use the store before `migrate` has
/// returned `Ok`. For a backtest that ticks while its new file is being created.
///
/// # Errors
/// [`DbError::UnsupportedUrl`] for a URL that is not SQLite's (PostgreSQL's server creates
/// nothing a run could wait less for), [`DbError::Invalid`] for a malformed one.
pub fn connect_lazy(url: &str, durability: Durability) -> Result<Store, DbError> {
    match url.split(':').next().unwrap_or_default() {
        "sqlite" => Ok(Store::Sqlite(SqliteStore::connect_lazy(url, durability)?)),
        other => Err(DbError::UnsupportedUrl {
            scheme: other.to_owned(),
        }),
    }
}

/// [`connect`] with a PostgreSQL pool of `pool`'s size and acquire timeout (a SQLite store
/// keeps its one connection: SQLite has one writer at a time).
///
/// # Errors
/// As [`connect`]; [`DbError::Invalid`] for a pool of no connections or no timeout.
pub async fn connect_pooled(url: &str, pool: PoolConfig) -> Result<Store, DbError> {
    match url.split(':').next().unwrap_or_default() {
        "postgres" | "postgresql" => Ok(Store::Postgres(PgStore::connect_pooled(url, pool).await?)),
        _ => connect(url).await,
    }
}

/// [`connect`] with a SQLite file's [`Durability`] (PostgreSQL's is the server's).
///
/// # Errors
/// As [`connect`].
pub async fn connect_with(url: &str, durability: Durability) -> Result<Store, DbError> {
    let scheme = url.split(':').next().unwrap_or_default();
    match scheme {
        "sqlite" => Ok(Store::Sqlite(
            SqliteStore::connect_with(url, durability).await?,
        )),
        "postgres" | "postgresql" => Ok(Store::Postgres(PgStore::connect(url).await?)),
        other => Err(DbError::UnsupportedUrl {
            scheme: other.to_owned(),
        }),
    }
}
