//! The store traits. Each has a SQLite and a PostgreSQL implementation and is implemented by
//! [`Store`](crate::Store), which dispatches to the backend [`connect`](crate::connect) opened.
//!
//! Methods return `impl Future + Send` (native async traits): generic code can take
//! `S: LedgerStore` and spawn the futures on a multi-threaded runtime.

use std::collections::BTreeSet;
use std::future::Future;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use types::{FactChange, MarketEvent, ReflectionNote, TradeRecord, UserFact};
use uuid::Uuid;

use crate::model::NewsRecord;
use crate::{
    Conversation, ConversationTurn, DbError, HeldReview, HeldStatus, NewConversation, PlannedTicks,
    StoredHeldLesson,
};
use outcomes::{
    MarketSnapshot, OutcomeScore, RecallQuery, RecalledOutcome, SearchQuery, TradeOutcome,
};

use crate::model::{
    Annotation, ChatTurnRecord, DecisionSnapshot, Deployment, DeploymentStatus, FactEdit, Forget,
    MemoryScope, NewAnnotation, NewFact, NewNote, NoteScope, RecordOutcome, ReflectionRun,
    SkillRecord, SkillVersion, StoredFill, StoredRunnerState, StoredTick, TickAttempt, TickQuery,
    TickRecord, User,
};

/// Users, skills, skill versions and deployments.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait RegistryStore {
    /// Inserts the user, or updates its email.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn upsert_user(&self, user: &User) -> impl Future<Output = Result<(), DbError>> + Send;

    /// Inserts a new skill (its content comes with [`add_skill_version`](Self::add_skill_version)).
    ///
    /// # Errors
    /// [`DbError::Bound`] for a name outside 1..=200 characters; [`DbError::Constraint`] for an
    /// unknown user or a duplicate id.
    fn create_skill(&self, skill: &SkillRecord)
    -> impl Future<Output = Result<(), DbError>> + Send;

    /// The skill with this id.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when no skill has this id.
    fn get_skill(&self, id: Uuid) -> impl Future<Output = Result<SkillRecord, DbError>> + Send;

    /// Adds an immutable version. Versions are never overwritten.
    ///
    /// # Errors
    /// [`DbError::Constraint`] (unique) when the version exists, (foreign key) for an unknown
    /// skill; [`DbError::Invalid`] for a version below 1.
    fn add_skill_version(
        &self,
        version: &SkillVersion,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// Inserts the skill unless one of its id is stored: the skill stored already for the same
    /// owner is success (its name stays the first one's), so registrations running at once
    /// never collide (`INSERT … ON CONFLICT DO NOTHING`).
    ///
    /// # Errors
    /// [`DbError::Conflict`] when the id is stored for another owner;
    /// [`DbError::Bound`] for a name outside 1..=200 characters; [`DbError::Constraint`] for an
    /// unknown user.
    fn ensure_skill(&self, skill: &SkillRecord)
    -> impl Future<Output = Result<(), DbError>> + Send;

    /// Adds the version unless it is stored: the same version stored already (same body and
    /// model) is success, so registrations running at once never collide (`INSERT … ON
    /// CONFLICT DO NOTHING`). Versions are never overwritten.
    ///
    /// # Errors
    /// [`DbError::Conflict`] when the version is stored with another body or model;
    /// [`DbError::Constraint`] (foreign key) for an unknown skill; [`DbError::Invalid`] for a
    /// version below 1.
    fn ensure_skill_version(
        &self,
        version: &SkillVersion,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// Version `version` of the skill.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the skill has no such version.
    fn get_skill_version(
        &self,
        skill_id: Uuid,
        version: i32,
    ) -> impl Future<Output = Result<SkillVersion, DbError>> + Send;

    /// The highest version of a skill.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the skill has no version.
    fn latest_skill_version(
        &self,
        skill_id: Uuid,
    ) -> impl Future<Output = Result<SkillVersion, DbError>> + Send;

    /// Inserts a new deployment of a stored skill version.
    ///
    /// # Errors
    /// [`DbError::Constraint`] for an unknown user or skill version or a duplicate id.
    fn create_deployment(
        &self,
        deployment: &Deployment,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// The deployment with this id.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when no deployment has this id.
    fn get_deployment(&self, id: Uuid) -> impl Future<Output = Result<Deployment, DbError>> + Send;

    /// Deployments, optionally only those with `status`, ordered by creation then id.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn list_deployments(
        &self,
        status: Option<DeploymentStatus>,
    ) -> impl Future<Output = Result<Vec<Deployment>, DbError>> + Send;

    /// The deployments `user_id` owns, any status, ordered by creation then id (one indexed
    /// query: a caller never reads other users' rows to filter them out).
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn user_deployments(
        &self,
        user_id: Uuid,
    ) -> impl Future<Output = Result<Vec<Deployment>, DbError>> + Send;

    /// The skills `user_id` owns, oldest first (ties by id).
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn user_skills(
        &self,
        user_id: Uuid,
    ) -> impl Future<Output = Result<Vec<SkillRecord>, DbError>> + Send;

    /// Sets when the deployment should tick next (`None` = unscheduled).
    ///
    /// # Errors
    /// [`DbError::NotFound`] when no deployment has this id.
    fn set_next_tick_at(
        &self,
        id: Uuid,
        next_tick_at: Option<DateTime<Utc>>,
    ) -> impl Future<Output = Result<(), DbError>> + Send;
}

/// Leases of deployments, for many runner processes: a runner claims due deployments, extends
/// its lease while a tick runs and releases the deployment with its next tick time; and which
/// runner last started which tick (to tell a lease takeover of an unfinished tick).
pub trait LeaseStore {
    /// For many runner processes: leases up to `limit` active deployments that are due
    /// (`next_tick_at` unset or ≤ `now`) and not leased (or whose lease expired at or before
    /// `now`) to `owner` until `now + lease_for`, most overdue first. Two concurrent claimers
    /// never get the same deployment.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a non-positive lease or a limit above 1000.
    fn claim_due_deployments(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_for: chrono::Duration,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Deployment>, DbError>> + Send;

    /// Ends `owner`'s lease on the deployment and schedules its next tick.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the deployment is not leased to `owner` (the lease was lost).
    fn release_deployment(
        &self,
        id: Uuid,
        owner: &str,
        next_tick_at: Option<DateTime<Utc>>,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// Extends `owner`'s lease on the deployment to `until` (the heartbeat of a long tick).
    /// Returns false when the lease is no longer `owner`'s.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn extend_lease(
        &self,
        id: Uuid,
        owner: &str,
        until: DateTime<Utc>,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;

    /// How many active deployments are due at `now`, and stopped ones whose flatten is due
    /// ([`claim_flattens`](Self::claim_flattens)), that are not leased (or leased until at most
    /// `now`): what the claims could still get once the concurrent claimers' locks are gone.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn claimable_count(
        &self,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64, DbError>> + Send;

    /// For many runner processes: leases up to `limit` stopped deployments whose flatten is
    /// to do — requested by a stop ([`ControlStore::control_deployment`]), not done, its retry
    /// time (after a failed attempt) unset or ≤ `now` — and not leased (or whose lease expired
    /// at or before `now`) to `owner` until `now + lease_for`, oldest request first. Two
    /// concurrent claimers never get the same deployment, and a deployment whose tick is in
    /// flight (leased) is not claimed before that tick releases it. Never returns an active or
    /// paused deployment.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a non-positive lease or a limit above 1000.
    fn claim_flattens(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_for: chrono::Duration,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Deployment>, DbError>> + Send;

    /// Records that `owner` closed the deployment's positions at `at` (the flatten is done:
    /// no runner claims it again) and ends its lease.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the deployment is not leased to `owner` (the lease was lost).
    fn finish_flatten(
        &self,
        id: Uuid,
        owner: &str,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// Records a failed flatten attempt of `owner` — its error (cut to
    /// [`MAX_FLATTEN_ERROR_CHARS`](crate::MAX_FLATTEN_ERROR_CHARS)) and when to try again —
    /// and ends its lease. Returns how many attempts have failed.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the deployment is not leased to `owner` (the lease was lost).
    fn retry_flatten(
        &self,
        id: Uuid,
        owner: &str,
        error: &str,
        retry_at: DateTime<Utc>,
    ) -> impl Future<Output = Result<u32, DbError>> + Send;

    /// Records that `owner` starts the deployment's tick at `tick_at` (table
    /// `live_runner_state`; its state columns are left to [`TickStore::record_tick`]) and
    /// returns the attempt it replaces, if any.
    ///
    /// # Errors
    /// [`DbError::Constraint`] for an unknown deployment; [`DbError::Backend`] on driver
    /// failure.
    fn mark_attempt(
        &self,
        deployment_id: Uuid,
        owner: &str,
        tick_at: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<TickAttempt>, DbError>> + Send;

    /// The start of a batch of ticks `owner` claimed together, in one statement: for each
    /// start, reads the deployment's status and the runner state its latest recorded tick
    /// committed ([`TickStore::runner_state`](crate::TickStore::runner_state)) and, when the
    /// deployment is active and no recorded tick is at or after the start's `tick_at`, records
    /// the attempt as [`mark_attempt`](Self::mark_attempt) does, returning the attempt it
    /// replaces. The reads see the rows as they were before the marks. One result per start
    /// whose deployment exists, in the order of `starts`; a start of an unknown deployment has
    /// none. Each deployment at most once; at most 1000 starts.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a deployment named twice or more than 1000 starts;
    /// [`DbError::Decode`] when a stored runner state cannot be read back;
    /// [`DbError::Backend`] on driver failure.
    fn start_ticks(
        &self,
        owner: &str,
        starts: &[crate::TickStart],
    ) -> impl Future<Output = Result<Vec<crate::StartedTick>, DbError>> + Send;

    /// Claims the deployment's reflection for `owner` until `until`, in one statement: true when
    /// no other runner holds a live claim (none, expired at or before `now`, or `owner`'s own),
    /// false when another runner's claim is live — it is reflecting, and this one must not call
    /// the model too.
    ///
    /// # Errors
    /// [`DbError::Constraint`] for an unknown deployment; [`DbError::Backend`] on driver
    /// failure.
    fn claim_reflection(
        &self,
        deployment_id: Uuid,
        owner: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;

    /// Ends `owner`'s claim on the deployment's reflection (nothing when the claim is not
    /// `owner`'s any more).
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn release_reflection(
        &self,
        deployment_id: Uuid,
        owner: &str,
    ) -> impl Future<Output = Result<(), DbError>> + Send;
}

/// The firehose: ticks (snapshot + fills + ledger changes, atomically) and snapshot reads.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait TickStore: Sync {
    /// Writes a tick in ONE transaction: the decision snapshot, its fills (a fill already stored
    /// is skipped), the ledger rows (upserted by id, closing rows first; a row's `closed_at` is
    /// this tick's time when it closes), the fill → trade links, the deployment's equity and,
    /// when given, the runner state ([`TickRecord::runner_state`], stored at the snapshot's
    /// `tick_at`). Idempotent: when a snapshot for the same deployment and `tick_at` (or the same
    /// id) exists, nothing is written — the stored runner state included — and
    /// [`RecordOutcome::AlreadyRecorded`] is returned. On any error nothing is written.
    ///
    /// # Errors
    /// [`DbError::Invalid`] when a fill or trade belongs to another deployment, a trade row
    /// would change a row already closed (closed rows are immutable), or a link names a fill
    /// that is not stored; [`DbError::StaleState`] when the tick carries a runner state and the
    /// stored one is of this or a later tick (the state never moves backwards);
    /// [`DbError::Constraint`] when the database rejects a row (unknown deployment, a second
    /// open row for a symbol, ...).
    fn record_tick(
        &self,
        tick: &TickRecord,
    ) -> impl Future<Output = Result<RecordOutcome, DbError>> + Send;

    /// [`TickStore::record_tick`], with the tick's alerts written to the outbox in the same
    /// transaction (a live runner's ticks; see [`crate::alerts`]): the engine's verdict (order
    /// executed, rejection, halt), a model error and, at the tick that makes it
    /// `alerts.model_error_streak` long, the streak of them, each ledger row the tick closed,
    /// and a start later than `alerts.lag_threshold` — each once, for each channel of the
    /// deployment's owner that receives its kind. A replayed tick writes no alert.
    ///
    /// # Errors
    /// As [`TickStore::record_tick`].
    fn record_tick_alerting(
        &self,
        tick: &TickRecord,
        alerts: &crate::TickAlerts,
    ) -> impl Future<Output = Result<RecordOutcome, DbError>> + Send;

    /// Writes a batch of ticks in ONE transaction, each exactly as [`TickStore::record_tick`]
    /// would (one already recorded is skipped and reported [`RecordOutcome::AlreadyRecorded`];
    /// the others are still written), in order — a deployment's equity is the last recorded
    /// tick's —, and after them, in the same transaction, the reflections that ran after them,
    /// in order: each one's note as [`NoteStore::insert_note`] writes it (`None`: the run wrote
    /// none) and its run as [`NoteStore::record_reflection_run`] does. For a writer that owns
    /// its deployment (a backtest): one commit per batch instead of one per tick and per
    /// reflection. The ticks' prompt lines were planned ahead ([`PlannedTicks::new`], on any
    /// thread); the rows are byte for byte those `record_tick` would write. On any error
    /// nothing of the batch is written.
    ///
    /// # Errors
    /// As [`TickStore::record_tick`], for any tick of the batch; as `insert_note` (a note the
    /// store refuses, e.g. a second active note of the scope written by another writer
    /// meanwhile: not retried here) and `record_reflection_run`.
    fn record_ticks(
        &self,
        batch: &PlannedTicks,
        reflections: &[(Option<NewNote>, ReflectionRun)],
    ) -> impl Future<Output = Result<Vec<RecordOutcome>, DbError>> + Send;

    /// The decision snapshot with this id.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when no snapshot has this id.
    fn get_snapshot(
        &self,
        id: Uuid,
    ) -> impl Future<Output = Result<DecisionSnapshot, DbError>> + Send;

    /// The latest snapshot strictly before `before` ("Last decision" at tick `before`).
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn last_snapshot_before(
        &self,
        deployment_id: Uuid,
        before: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<DecisionSnapshot>, DbError>> + Send;

    /// The runner state the deployment's latest tick committed with it (see
    /// [`TickRecord::runner_state`]), if any.
    ///
    /// # Errors
    /// [`DbError::Decode`] when the stored row cannot be read back.
    fn runner_state(
        &self,
        deployment_id: Uuid,
    ) -> impl Future<Output = Result<Option<StoredRunnerState>, DbError>> + Send;

    /// The newest `limit` snapshots of a deployment, newest first.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn list_snapshots(
        &self,
        deployment_id: Uuid,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<DecisionSnapshot>, DbError>> + Send;

    /// A deployment's stored ticks in a window of time, oldest first, a page at a time
    /// ([`TickQuery`]: the next page starts `after` the last tick of this one), each with its
    /// texts decoded from the stored lines when `query.texts` asks for them — the texts
    /// [`get_snapshot`](Self::get_snapshot) reads, byte for byte. An unknown deployment has no
    /// ticks.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit of 0 or above [`MAX_TICKS_READ`](crate::MAX_TICKS_READ)
    /// and for `from` after `to`; [`DbError::Decode`] when a stored text cannot be put back
    /// together; [`DbError::Backend`] on driver failure.
    fn ticks(
        &self,
        query: &TickQuery,
    ) -> impl Future<Output = Result<Vec<StoredTick>, DbError>> + Send;
}

/// Ledger and fill reads. Writes go through [`TickStore::record_tick`].
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait LedgerStore {
    /// The ledger row with this id.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when no row has this id.
    fn get_trade(&self, id: Uuid) -> impl Future<Output = Result<TradeRecord, DbError>> + Send;

    /// Open rows of a deployment, ordered by symbol.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn open_trades(
        &self,
        deployment_id: Uuid,
    ) -> impl Future<Output = Result<Vec<TradeRecord>, DbError>> + Send;

    /// Every row of a deployment, open and closed, oldest entry first (ledger rebuilds and
    /// reports; the prompt reads [`closed_trades`](Self::closed_trades)).
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn all_trades(
        &self,
        deployment_id: Uuid,
    ) -> impl Future<Output = Result<Vec<TradeRecord>, DbError>> + Send;

    /// Rows of a deployment closed by a tick at or before `as_of` whose exit is after `after`,
    /// oldest entry first: a reflection's window (every row closed since the last note), read
    /// without the rows before it.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn closed_trades_exited_after(
        &self,
        deployment_id: Uuid,
        after: DateTime<Utc>,
        as_of: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<TradeRecord>, DbError>> + Send;

    /// Point in time: rows of a deployment recorded as closed by a tick at or before `as_of`,
    /// newest entry first, at most `limit` (≤ [`types::MAX_MEMORY_K`]).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above the cap.
    fn closed_trades(
        &self,
        deployment_id: Uuid,
        as_of: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<TradeRecord>, DbError>> + Send;

    /// As [`closed_trades`](Self::closed_trades), over every deployment of a skill version.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above the cap.
    fn closed_trades_for_skill(
        &self,
        skill_id: Uuid,
        skill_version: i32,
        as_of: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<TradeRecord>, DbError>> + Send;

    /// How many rows of a deployment were closed by a tick after `after` and at or before
    /// `as_of`: the closes since a reflection note (one indexed range, however old the
    /// deployment).
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn count_closed_between(
        &self,
        deployment_id: Uuid,
        after: DateTime<Utc>,
        as_of: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64, DbError>> + Send;

    /// How many rows of a deployment were closed at or before `as_of` (reflection cadence).
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn count_closed_trades(
        &self,
        deployment_id: Uuid,
        as_of: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64, DbError>> + Send;

    /// Broker ids of every fill stored for the deployment (each was applied to the ledger in the
    /// same transaction that stored it).
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn applied_fill_ids(
        &self,
        deployment_id: Uuid,
    ) -> impl Future<Output = Result<BTreeSet<String>, DbError>> + Send;

    /// Broker ids of the deployment's stored fills with `time >= since` (one indexed range): the
    /// fills a broker can still deliver again, which is all a restored ledger needs to skip.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn applied_fill_ids_since(
        &self,
        deployment_id: Uuid,
        since: DateTime<Utc>,
    ) -> impl Future<Output = Result<BTreeSet<String>, DbError>> + Send;

    /// Stored fills of a deployment with `time >= since` (all when `None`), oldest first.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn list_fills(
        &self,
        deployment_id: Uuid,
        since: Option<DateTime<Utc>>,
    ) -> impl Future<Output = Result<Vec<StoredFill>, DbError>> + Send;
}

/// Reflection notes and runs.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait NoteStore {
    /// Inserts the note as the active note of its scope and supersedes the previous active one,
    /// in one transaction (retried when a concurrent reflection wins the race, so exactly one
    /// note stays active). History is kept.
    ///
    /// # Errors
    /// [`DbError::Bound`] for lessons outside 1..=2000 characters or a lint reason over 500;
    /// [`DbError::Invalid`] when the window is reversed or the active note is newer
    /// (`generated_at`) than this one; [`DbError::Contention`] when retries run out.
    fn insert_note(
        &self,
        note: &NewNote,
    ) -> impl Future<Output = Result<ReflectionNote, DbError>> + Send;

    /// A person (`by`) accepts a note the linter flagged, whole: it becomes the active note of
    /// its scope from `at` (superseding the one in force) and is injected from then on, never
    /// earlier. Audited: `accepted_at`, `accepted_by`. Its held bullets still pending are
    /// accepted with it (the note carries them; each records `by`, `at` and this note), so the
    /// review queue does not offer them again.
    ///
    /// # Errors
    /// [`DbError::NotFound`] for an unknown id; [`DbError::Bound`] / [`DbError::Invalid`] for a
    /// reviewer name outside 1..=100 characters or with a control character;
    /// [`DbError::Conflict`] when the note is not pending review.
    fn accept_note(
        &self,
        id: Uuid,
        by: &str,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<ReflectionNote, DbError>> + Send;

    /// One note, whatever its scope and status.
    ///
    /// # Errors
    /// [`DbError::NotFound`] for an unknown id.
    fn get_note(&self, id: Uuid) -> impl Future<Output = Result<ReflectionNote, DbError>> + Send;

    /// Point in time: the note in force at `as_of` — the newest note of the scope in force at or
    /// before `as_of` (the active note when `as_of` is now). A note pending review is never in
    /// force; an accepted one is in force from its `accepted_at`.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn active_note(
        &self,
        scope: NoteScope,
        as_of: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<ReflectionNote>, DbError>> + Send;

    /// Every note of the scope, newest `generated_at` first, at most `limit`.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn note_history(
        &self,
        scope: NoteScope,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ReflectionNote>, DbError>> + Send;

    /// The held bullets of the scope's notes (all statuses when `status` is `None`), newest note
    /// first and in position order within a note, at most `limit` (≤ 1000).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit over 1000; [`DbError::Decode`] for an unreadable row.
    fn held_lessons(
        &self,
        scope: NoteScope,
        status: Option<HeldStatus>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<StoredHeldLesson>, DbError>> + Send;

    /// The held bullets whose id (lowercase, hyphenated) starts with `prefix`, by id, at most
    /// `limit` (≤ 1000): how a person's short id is resolved.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a prefix that is empty, longer than a uuid or not hex digits and
    /// hyphens, or a limit over 1000.
    fn held_lessons_by_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<StoredHeldLesson>, DbError>> + Send;

    /// A person's review of a held bullet, audited (`reviewed_at`, `reviewed_by`, and
    /// `review_reason` when given), in one transaction; a decided review is final (the database
    /// refuses to change it). Rejecting only marks it. Accepting it writes a new note in force
    /// from `review.at` (never earlier; `generated_at = at`, the held note's window, model,
    /// scope and observations) whose lessons are the text descending from the held note — the
    /// scope's active note when it has the held note's window (the note itself or an earlier
    /// acceptance's note), none when the held note is pending review — with the bullet
    /// appended; it supersedes the active note. A note's text never changes once in force.
    ///
    /// As a user under row-level security ([`UserScoped`](crate::UserScoped)) only the bullets
    /// of the user's own notes are found, and `review.by` must be the user's id.
    ///
    /// # Errors
    /// [`DbError::NotFound`] for an unknown id (or another user's); [`DbError::Bound`] /
    /// [`DbError::Invalid`] for a reviewer name outside 1..=100 characters or a reason outside
    /// 1..=500, or either with a control character; [`DbError::Conflict`] when the bullet was
    /// reviewed already (or meanwhile), and on accept when a newer reflection's note is active
    /// (only reject is possible then); [`DbError::Invalid`] on accept when `at` is before the
    /// held note or the note in force, or when the lessons would exceed 2000 characters.
    fn review_held_lesson(
        &self,
        id: Uuid,
        review: &HeldReview,
    ) -> impl Future<Output = Result<StoredHeldLesson, DbError>> + Send;

    /// Records a reflection attempt. A failed run never touches the active note. A failure's
    /// error text is cut to 2000 characters rather than refused.
    ///
    /// # Errors
    /// [`DbError::Constraint`] for an unknown skill version, deployment or note.
    fn record_reflection_run(
        &self,
        run: &ReflectionRun,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// Runs of the scope, newest first, at most `limit`.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn reflection_runs(
        &self,
        scope: NoteScope,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ReflectionRun>, DbError>> + Send;
}

/// User facts (ADR-0020) with their audit trail.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait FactStore {
    /// Stores a new active fact created at `at`. Writing a fact references it:
    /// `last_referenced_at` is `at` too, so a new fact enters the top facts at once.
    ///
    /// # Errors
    /// [`DbError::Bound`] for a fact outside 4..=500 characters or a topic outside 1..=32;
    /// [`DbError::Constraint`] for an unknown user or skill.
    fn remember(
        &self,
        fact: &NewFact,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<UserFact, DbError>> + Send;

    /// Edits an active fact of `user_id` (text, confidence, topic) at `at`. An edit references
    /// the fact: `last_referenced_at` becomes `at` (unless it is already later).
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the user has no active fact with this id; [`DbError::Bound`]
    /// as for [`remember`](Self::remember).
    fn edit_fact(
        &self,
        user_id: Uuid,
        fact_id: Uuid,
        edit: &FactEdit,
        actor: &str,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<UserFact, DbError>> + Send;

    /// Soft-archives a fact of `user_id`. Forgetting an archived fact changes nothing.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the user has no fact with this id.
    fn forget(
        &self,
        user_id: Uuid,
        fact_id: Uuid,
        forget: &Forget,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// The top `k` (≤ [`types::MAX_MEMORY_K`]) active facts of the user — user-wide ones plus,
    /// when `skill_id` is given, that skill's — by `last_referenced_at` desc (never-referenced
    /// last), then newest, then id. When `bump_at` is given their `last_referenced_at` is set
    /// to it in the same transaction and returned updated; the chat turn reads with `None` and
    /// marks what it showed only once the turn completed ([`mark_referenced`](Self::mark_referenced)).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for `k` above the cap.
    fn top_facts(
        &self,
        user_id: Uuid,
        skill_id: Option<Uuid>,
        k: u32,
        bump_at: Option<DateTime<Utc>>,
    ) -> impl Future<Output = Result<Vec<UserFact>, DbError>> + Send;

    /// Marks facts of `user_id` referenced at `at` (they were shown in a chat turn that
    /// completed): `last_referenced_at` becomes `at` for each listed active fact of the user
    /// whose reference is older, in one transaction. Ids of archived facts, of another user's
    /// facts or of none are skipped. Returns how many rows changed. Not an audited change.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for more than [`types::MAX_MEMORY_K`] ids.
    fn mark_referenced(
        &self,
        user_id: Uuid,
        fact_ids: &[Uuid],
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64, DbError>> + Send;

    /// Every fact of the user (archived ones too when asked), newest first.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn list_facts(
        &self,
        user_id: Uuid,
        include_archived: bool,
    ) -> impl Future<Output = Result<Vec<UserFact>, DbError>> + Send;

    /// The audit trail of a fact, oldest first.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn fact_changes(
        &self,
        fact_id: Uuid,
    ) -> impl Future<Output = Result<Vec<FactChange>, DbError>> + Send;
}

/// Scheduled market events.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait EventStore {
    /// Inserts the event or replaces the one with the same id.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for an importance outside 0..=1, [`DbError::Bound`] for an empty or
    /// too long title.
    fn upsert_event(&self, event: &MarketEvent)
    -> impl Future<Output = Result<(), DbError>> + Send;

    /// Upserts every event (as [`EventStore::upsert_event`]) in one transaction: all of them or,
    /// on any error, none. Importing a calendar twice stores each event once (same ids).
    ///
    /// # Errors
    /// As [`EventStore::upsert_event`], for the first event that breaks a bound (checked before
    /// anything is written); [`DbError::Backend`] on driver failure.
    fn upsert_events(
        &self,
        events: &[MarketEvent],
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// Events scheduled in `[from, to]` with importance ≥ `min_importance` (all when `None`),
    /// ordered by time then id.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn events_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        min_importance: Option<Decimal>,
    ) -> impl Future<Output = Result<Vec<MarketEvent>, DbError>> + Send;
}

/// Polled news headlines (global reference data, like market events).
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait NewsStore {
    /// Stores every item whose (feed, guid) is not stored yet, in one transaction, and answers
    /// how many were new. An item already stored keeps its first `fetched_at` (and everything
    /// else): polling a feed again never moves an item later or earlier in time.
    ///
    /// # Errors
    /// [`DbError::Bound`] for a feed, source, guid, title, link or summary outside its bounds,
    /// [`DbError::Invalid`] for a sentiment outside −1..=1, an importance outside 0..=1 or an
    /// empty symbol (checked for every item before anything is written); [`DbError::Backend`] on
    /// driver failure.
    fn insert_news(
        &self,
        items: &[NewsRecord],
    ) -> impl Future<Output = Result<u64, DbError>> + Send;

    /// What a tick at `as_of` may see: items published in `[from, to]` and fetched at or before
    /// `as_of`, about any of `symbols` or market-wide (no symbols), most relevant first
    /// (importance descending, then newest, then title, then id), at most `limit`.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above [`MAX_NEWS_READ`](crate::MAX_NEWS_READ);
    /// [`DbError::Backend`] on driver failure.
    fn news_window(
        &self,
        symbols: &[String],
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        as_of: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<NewsRecord>, DbError>> + Send;
}

/// Kept chat conversations and their turns. Every read and delete is keyed by the owner too, so
/// on SQLite (no row-level security) a wrong owner finds nothing either; on PostgreSQL as a user
/// ([`UserScoped`](crate::UserScoped)) another user's conversation is not visible at all.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait ConversationStore {
    /// Starts a conversation.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a mode other than `authoring` / `coach` / `ops`;
    /// [`DbError::Bound`] for a title outside
    /// 1..=[`MAX_CONVERSATION_TITLE_CHARS`](crate::MAX_CONVERSATION_TITLE_CHARS) characters;
    /// [`DbError::Constraint`] for an unknown user or deployment, or a duplicate id.
    fn start_conversation(
        &self,
        conversation: &NewConversation,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// The owner's conversation `id`.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when it does not exist or is not the owner's.
    fn conversation(
        &self,
        user_id: Uuid,
        id: Uuid,
    ) -> impl Future<Output = Result<Conversation, DbError>> + Send;

    /// The owner's newest `limit` (≤ [`MAX_CONVERSATIONS_READ`](crate::MAX_CONVERSATIONS_READ))
    /// conversations, most recently active first.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above the cap.
    fn conversations(
        &self,
        user_id: Uuid,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Conversation>, DbError>> + Send;

    /// Adds a turn after the conversation's last one; returns the place it was given
    /// (`turn.seq` is ignored). An answer longer than
    /// [`MAX_CONVERSATION_ANSWER_CHARS`](crate::MAX_CONVERSATION_ANSWER_CHARS) is cut.
    ///
    /// # Errors
    /// [`DbError::Bound`] for a user message outside
    /// 1..=[`MAX_CONVERSATION_MESSAGE_CHARS`](crate::MAX_CONVERSATION_MESSAGE_CHARS);
    /// [`DbError::Invalid`] for messages that are not a JSON array or larger than
    /// [`MAX_CONVERSATION_TURN_JSON_BYTES`](crate::MAX_CONVERSATION_TURN_JSON_BYTES);
    /// [`DbError::Constraint`] when the conversation is not the user's (or, as a user, row-level
    /// security refuses it), or two turns raced for the same place.
    fn add_conversation_turn(
        &self,
        turn: &ConversationTurn,
    ) -> impl Future<Output = Result<u32, DbError>> + Send;

    /// The newest `limit` (≤ [`MAX_CONVERSATIONS_READ`](crate::MAX_CONVERSATIONS_READ)) turns
    /// of the owner's conversation `id`, oldest first.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above the cap.
    fn conversation_turns(
        &self,
        user_id: Uuid,
        id: Uuid,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ConversationTurn>, DbError>> + Send;

    /// Deletes the owner's conversation `id` and its turns; whether there was one.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn delete_conversation(
        &self,
        user_id: Uuid,
        id: Uuid,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;

    /// Deletes every conversation last active before `idle_before` (its newest turn, or its
    /// start when it has none) with its turns; how many. As a user, only theirs.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn purge_conversations(
        &self,
        idle_before: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64, DbError>> + Send;
}

/// Chat-coach turns: one row per turn with its model, steps, usage and cost.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait ChatTurnStore {
    /// Records a turn. An error text longer than
    /// [`MAX_CHAT_TURN_ERROR_CHARS`](crate::MAX_CHAT_TURN_ERROR_CHARS) is cut, not refused.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a mode other than `authoring` / `coach` / `ops`, a negative
    /// cost or more steps than the column holds; [`DbError::Bound`] for a model id outside
    /// 1..=200 characters; [`DbError::Constraint`] for an unknown user or a duplicate id (on
    /// PostgreSQL as a user: a row of another user is refused by row-level security).
    fn record_chat_turn(
        &self,
        turn: &ChatTurnRecord,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// The newest `limit` (≤ 1000) turns of the user, newest first.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above 1000.
    fn chat_turns(
        &self,
        user_id: Uuid,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ChatTurnRecord>, DbError>> + Send;
}

/// The outcome memory of seed 003: `trade_outcomes`, `market_snapshots` and
/// `trade_annotations`. Outcomes and snapshots are inserted by [`TickStore::record_tick`] (the
/// tick's [`OutcomeWrites`](crate::OutcomeWrites)); this trait scores and reads them.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait OutcomeStore: Sync {
    /// Outcomes not scored yet (`scored_at` null) whose first mark (`tick_at + 1h`) is at or
    /// before `now`, oldest first, at most `limit` (≤ 1000): what a live scorer looks at.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above 1000; [`DbError::Backend`] on driver failure.
    fn unscored_outcomes(
        &self,
        now: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<TradeOutcome>, DbError>> + Send;

    /// Writes scores in one transaction. A row already scored in full (`scored_at` set) is
    /// left as it is (a second scorer, or a redo, changes nothing). Returns how many rows
    /// changed.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a score whose PnL or prices cannot be stored;
    /// [`DbError::Backend`] on driver failure (nothing is written then).
    fn score_outcomes(
        &self,
        scores: &[(Uuid, OutcomeScore)],
    ) -> impl Future<Output = Result<u64, DbError>> + Send;

    /// A deployment's outcomes, newest tick first, at most `limit` (≤ 1000).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above 1000; [`DbError::Backend`] on driver failure.
    fn outcomes(
        &self,
        deployment_id: Uuid,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<TradeOutcome>, DbError>> + Send;

    /// The outcomes of `symbol` whose tick is in [`from`, `until`), of one deployment or (with
    /// `None`) of every deployment, newest tick first (ties by id), at most `limit` (≤ 1000): a
    /// window of the outcome memory, read in one query. The window is half-open as every
    /// reader's is (`outcomes::recall`'s window convention: the last N days at T are
    /// [T − N d, T), `outcomes::window_start`).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above 1000; [`DbError::Backend`] on driver failure.
    fn symbol_outcomes(
        &self,
        deployment_id: Option<Uuid>,
        symbol: &str,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<TradeOutcome>, DbError>> + Send;

    /// One outcome, as stored (not masked to a time).
    ///
    /// # Errors
    /// [`DbError::NotFound`] when no outcome has this id.
    fn outcome(&self, id: Uuid) -> impl Future<Output = Result<TradeOutcome, DbError>> + Send;

    /// The ids of `scope`'s outcomes whose UUID begins with the hex digits of `prefix` (1 to
    /// 32 of them, any case, hyphens ignored), in id order, at most `limit` (≤ 1000): how a
    /// short id that a recall tool listed resolves. One query on a range of the primary key;
    /// another scope's outcome never matches (on PostgreSQL as a user, row-level security
    /// hides it too).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a prefix without hex digits, with more than 32 or with another
    /// character than a hex digit or a hyphen, and for a limit of 0 or above 1000;
    /// [`DbError::Backend`] on driver failure.
    fn outcome_ids_by_prefix(
        &self,
        scope: MemoryScope,
        prefix: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Uuid>, DbError>> + Send;

    /// One market snapshot.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when no snapshot has this id.
    fn market_snapshot(
        &self,
        id: Uuid,
    ) -> impl Future<Output = Result<MarketSnapshot, DbError>> + Send;

    /// Stores an annotation on an outcome or a ledger row; its deployment is that row's.
    ///
    /// # Errors
    /// [`DbError::Bound`] for a text or tag outside its bounds (see [`NewAnnotation`]);
    /// [`DbError::NotFound`] when the annotated row does not exist; [`DbError::Constraint`]
    /// for a duplicate id.
    fn annotate(
        &self,
        annotation: &NewAnnotation,
    ) -> impl Future<Output = Result<Annotation, DbError>> + Send;

    /// A deployment's annotations, newest first, at most `limit` (≤ 1000).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above 1000; [`DbError::Backend`] on driver failure.
    fn annotations(
        &self,
        deployment_id: Uuid,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Annotation>, DbError>> + Send;

    /// The outcomes of `scope` decided before `query.as_of` (`tick_at < as_of`; and
    /// `tick_at >= since`, the window convention of `outcomes::RecallQuery`; the symbol and the market condition when the query names them),
    /// newest tick first (ties by id), at most `query.limit`, each with its market snapshot's
    /// indicators and masked to what was known at `as_of` ([`TradeOutcome::as_of`]): a
    /// backtest at T never sees a score written after T. One query.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit of 0 or above
    /// [`MAX_RECALL_ROWS`](outcomes::MAX_RECALL_ROWS); [`DbError::Backend`] on driver failure.
    fn recall_outcomes(
        &self,
        scope: MemoryScope,
        query: &RecallQuery,
    ) -> impl Future<Output = Result<Vec<RecalledOutcome>, DbError>> + Send;

    /// Full-text search of `scope`'s memory: the narratives of the outcomes scored by
    /// `query.as_of` and the annotations (text and tags) written by then. Every word of the
    /// text must match, a quoted phrase as a phrase, and the matches are ranked in Rust
    /// ([`outcomes::search`]: words, matching and ranking are defined there), ties by time
    /// (newest first) then id, at most `query.limit`, with the count of every match: the same
    /// hits in the same order on every backend. The backend only reads the candidates (the
    /// newest [`MAX_CANDIDATES`](outcomes::search::MAX_CANDIDATES) whose lowercased text holds
    /// every ASCII word). An annotation on an outcome carries that outcome's symbol.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a text that is blank, longer than
    /// [`MAX_SEARCH_CHARS`](outcomes::MAX_SEARCH_CHARS) or without a word, and for a limit of
    /// 0 or above [`MAX_SEARCH_HITS`](outcomes::MAX_SEARCH_HITS); [`DbError::Backend`] on
    /// driver failure.
    fn search_memory(
        &self,
        scope: MemoryScope,
        query: &SearchQuery,
    ) -> impl Future<Output = Result<outcomes::SearchHits, DbError>> + Send;

    /// Computes the grade and the narrative of every outcome scored in full again from its
    /// stored figures and its market snapshot's indicators ([`outcomes::regrade`]) and writes
    /// those that differ, in one transaction
    /// (the full-text index follows the narrative). Running it twice changes nothing the
    /// second time.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure (nothing is written then).
    fn regrade_outcomes(&self) -> impl Future<Output = Result<crate::Regraded, DbError>> + Send;
}

/// Controls of deployments: pause, resume, stop (optionally flattening the positions), each
/// audited in `deployment_controls` (see [`crate::control`]'s transitions).
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait ControlStore {
    /// Applies `request` to its deployment and writes its audit row, in ONE transaction: the
    /// status moves (pause `active → paused`, resume `paused → active`, stop `active | paused →
    /// stopped`) and, for a stop with `flatten`, the flatten is requested (a runner closes the
    /// positions, [`LeaseStore::claim_flattens`]). A stop with `flatten` is also allowed on a
    /// stopped deployment whose flatten was never requested. Nothing else changes: a paused
    /// deployment keeps its schedule (`next_tick_at`), runner state and ledger, so a resume
    /// picks up where it was (a deployment resumed after its next tick time is due at once
    /// and ticks at the latest closed bar). Returns the audit row.
    ///
    /// # Errors
    /// [`DbError::Transition`] when the status does not allow the action (naming the status);
    /// [`DbError::NotFound`] when no deployment has this id (on PostgreSQL as a user: none of
    /// theirs); [`DbError::Invalid`] for `flatten` with an action other than stop, or a
    /// `requested_by` or reason with a control character; [`DbError::Bound`] for a
    /// `requested_by` outside 1..=100 characters or a reason outside 1..=500;
    /// [`DbError::Constraint`] for a repeated id (or, as a user, a `requested_by` other than
    /// the user's id).
    fn control_deployment(
        &self,
        request: &crate::ControlRequest,
    ) -> impl Future<Output = Result<crate::DeploymentControl, DbError>> + Send;

    /// The deployment's audited controls, newest first (ties by id), at most `limit`
    /// (≤ [`MAX_CONTROLS_READ`](crate::MAX_CONTROLS_READ)).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above the cap.
    fn deployment_controls(
        &self,
        deployment_id: Uuid,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::DeploymentControl>, DbError>> + Send;

    /// Where the deployment's flatten stands; `None` when none was requested.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when no deployment has this id.
    fn flatten_state(
        &self,
        deployment_id: Uuid,
    ) -> impl Future<Output = Result<Option<crate::FlattenState>, DbError>> + Send;
}

/// A user's alert channels (see [`crate::alerts`]). As a [`crate::UserScoped`] store, row-level
/// security keeps every call to the user's own channels, and a channel's URL and secret are
/// never read back.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait AlertStore {
    /// Adds a channel; returns it as its owner sees it (no URL path, no secret).
    ///
    /// # Errors
    /// [`DbError::Invalid`] naming every field that is wrong ([`crate::NewAlertChannel::problems`])
    /// or when the user has [`crate::MAX_CHANNELS_PER_USER`] channels already;
    /// [`DbError::Constraint`] for a repeated id or an unknown user.
    fn add_alert_channel(
        &self,
        channel: &crate::NewAlertChannel,
    ) -> impl Future<Output = Result<crate::AlertChannel, DbError>> + Send;

    /// The user's channels, oldest first.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn alert_channels(
        &self,
        user_id: Uuid,
    ) -> impl Future<Output = Result<Vec<crate::AlertChannel>, DbError>> + Send;

    /// Deletes the user's channel and its deliveries.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the user has no channel with this id.
    fn delete_alert_channel(
        &self,
        user_id: Uuid,
        id: Uuid,
    ) -> impl Future<Output = Result<(), DbError>> + Send;

    /// Queues a test message to the user's channel (an event of kind `test` and its one
    /// delivery, sent by a runner as any other); returns the delivery's id.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the user has no channel with this id; [`DbError::Constraint`]
    /// when a test was queued for the same channel at the same time.
    fn queue_test_alert(
        &self,
        user_id: Uuid,
        channel_id: Uuid,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<Uuid, DbError>> + Send;

    /// The user's deliveries, newest event first, at most `limit`
    /// (≤ [`crate::MAX_DELIVERIES_READ`]).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above the cap.
    fn alert_deliveries(
        &self,
        user_id: Uuid,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::AlertDelivery>, DbError>> + Send;
}

/// The alert outbox's deliveries, leased by runners (the stores of the connecting role, not
/// [`crate::UserScoped`]): at least once, each (event, channel) pair one row.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait AlertOutbox {
    /// Leases up to `limit` pending deliveries due at `now` to `owner` until `now + lease_for`
    /// (on PostgreSQL `FOR UPDATE SKIP LOCKED`: concurrent runners never take the same row);
    /// a lease that expired (its runner died mid-send) is taken again. Returns them with their
    /// event and channel, secrets included.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a non-positive lease or a limit outside 1..=1,000.
    fn claim_alert_deliveries(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_for: chrono::Duration,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::ClaimedDelivery>, DbError>> + Send;

    /// Marks `owner`'s leased delivery delivered at `at`; false when the lease is not
    /// `owner`'s any more.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn finish_alert_delivery(
        &self,
        id: Uuid,
        owner: &str,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;

    /// Counts a failed attempt of `owner`'s leased delivery (its error kept, cut to
    /// [`crate::MAX_DELIVERY_ERROR_CHARS`]) and releases it: due again at `retry_at`, or given
    /// up (`failed`) with `None`. False when the lease is not `owner`'s any more.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn retry_alert_delivery(
        &self,
        id: Uuid,
        owner: &str,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;
}

/// Pending actions (see [`crate::actions`]): a write the chat coach proposes, kept until its
/// owner confirms it (which applies it), discards it, or it expires. Every read and decision is
/// keyed by the owner too, so on SQLite a wrong owner finds nothing; on PostgreSQL as a user
/// ([`UserScoped`](crate::UserScoped)) another user's action is not visible at all.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait ActionStore {
    /// Keeps an action, pending until its expiry; returns the row.
    ///
    /// # Errors
    /// [`DbError::Bound`] for a summary outside
    /// 1..=[`MAX_ACTION_SUMMARY_CHARS`](crate::MAX_ACTION_SUMMARY_CHARS) characters or arguments
    /// larger than [`MAX_ACTION_ARGUMENTS_BYTES`](crate::MAX_ACTION_ARGUMENTS_BYTES) of JSON;
    /// [`DbError::Invalid`] for a summary with a control character, an expiry not after its
    /// creation, a target that does not fit the kind (a deployment for a deployment action, a
    /// skill for a skill version) or arguments of another shape; [`DbError::Constraint`] for an
    /// unknown user, deployment, skill or conversation, or a duplicate id (on PostgreSQL as a
    /// user: a row of another user, or naming another user's deployment, skill or conversation,
    /// is refused by row-level security).
    fn create_pending_action(
        &self,
        action: &crate::NewPendingAction,
    ) -> impl Future<Output = Result<crate::PendingAction, DbError>> + Send;

    /// The owner's actions pending and not expired at `now`, newest first, at most `limit`
    /// (≤ [`MAX_ACTIONS_READ`](crate::MAX_ACTIONS_READ)).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above the cap.
    fn pending_actions(
        &self,
        user_id: Uuid,
        now: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::PendingAction>, DbError>> + Send;

    /// All the owner's actions, whatever their status, newest first, at most `limit`
    /// (≤ [`MAX_ACTIONS_READ`](crate::MAX_ACTIONS_READ)): the audit view. A row still pending
    /// past its expiry reads as stored; [`PendingAction::status_at`](crate::PendingAction::status_at)
    /// tells it expired.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above the cap.
    fn actions(
        &self,
        user_id: Uuid,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::PendingAction>, DbError>> + Send;

    /// The owner's action `id`.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when it does not exist or is not the owner's.
    fn action(
        &self,
        user_id: Uuid,
        id: Uuid,
    ) -> impl Future<Output = Result<crate::PendingAction, DbError>> + Send;

    /// Confirms the owner's action `id` at `at` and applies it, in ONE transaction: the row
    /// must be the owner's, pending and not expired at `at`; a pause, resume or stop goes
    /// through [`ControlStore::control_deployment`]'s transitions with its `deployment_controls`
    /// row (`requested_by` the owner's id, the reason naming the action), a skill version is
    /// saved as the skill's next version (the owner's skill only; the document's `version` set
    /// to it); the row is marked confirmed with its [`ActionResult`](crate::ActionResult) and
    /// returned. A change refused by its own rules (a transition the deployment's status no
    /// longer allows, a deployment or skill that is not the owner's) changes nothing and marks
    /// the row `failed` with the error.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the owner has no action `id` (on PostgreSQL as a user:
    /// another user's); [`DbError::Conflict`] when it expired (a pending row past its expiry is
    /// marked expired then), was decided already, or failed now (naming the refusal); what the
    /// store's statements fail with otherwise (the action stays pending).
    fn confirm_action(
        &self,
        user_id: Uuid,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<crate::PendingAction, DbError>> + Send;

    /// Discards the owner's pending action `id` at `at`; returns the row.
    ///
    /// # Errors
    /// As [`confirm_action`](Self::confirm_action): [`DbError::NotFound`], or
    /// [`DbError::Conflict`] when it expired or was decided already.
    fn discard_action(
        &self,
        user_id: Uuid,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<crate::PendingAction, DbError>> + Send;

    /// Marks every pending action whose expiry is at or before `now` expired (decided at its
    /// expiry); how many. As a user, only theirs.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn expire_actions(
        &self,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64, DbError>> + Send;
}

/// Backtest jobs as their users see them ([`crate::jobs`]): submit (with the bar files,
/// within the user's [`JobLimits`](crate::JobLimits)), read, cancel. As a
/// [`crate::UserScoped`] store, row-level security keeps every call to the user's own jobs and
/// bars.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait JobStore {
    /// Queues `jobs` and stores the bar files among `bars` the user does not have yet, in one
    /// transaction: all or nothing. Each job's bars must be among `bars` or stored for its user
    /// already.
    ///
    /// # Errors
    /// [`DbError::Limit`] when the user's queued and running jobs, with these, would number
    /// more than `limits.max_open_jobs` or have cost limits adding up to more than
    /// `limits.max_open_cost_usd` (nothing is written); [`DbError::Invalid`] for a spec that
    /// names bars the user does not have, a malformed hash, a bar file that is empty or too
    /// large, no job or more than [`MAX_JOBS_PER_SUBMIT`](crate::MAX_JOBS_PER_SUBMIT), jobs
    /// of several users; [`DbError::Bound`] for a label outside its bounds;
    /// [`DbError::Constraint`] (unique) for a job id taken.
    fn submit_jobs(
        &self,
        jobs: &[crate::NewJob],
        bars: &[crate::NewBars],
        limits: crate::JobLimits,
    ) -> impl Future<Output = Result<crate::Submitted, DbError>> + Send;

    /// The job with this id.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when there is none (or it is another user's, as a user).
    fn job(&self, id: Uuid) -> impl Future<Output = Result<crate::Job, DbError>> + Send;

    /// The jobs `filter` selects, newest first (ties by id).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a limit above [`MAX_JOBS_READ`](crate::MAX_JOBS_READ).
    fn jobs(
        &self,
        filter: &crate::JobFilter,
    ) -> impl Future<Output = Result<Vec<crate::Job>, DbError>> + Send;

    /// The job's report (`report.html`), if its run wrote one.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when there is no such job.
    fn job_report(&self, id: Uuid) -> impl Future<Output = Result<Option<String>, DbError>> + Send;

    /// The user's bar file with this hash.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the user has none.
    fn job_bars(
        &self,
        user_id: Uuid,
        sha256: &str,
    ) -> impl Future<Output = Result<crate::StoredBars, DbError>> + Send;

    /// Cancels the user's job that has not finished (a running one's worker stops at its next
    /// heartbeat); returns it as it stands.
    ///
    /// # Errors
    /// [`DbError::NotFound`] when the user has no such job; [`DbError::Conflict`] when it has
    /// finished.
    fn cancel_job(
        &self,
        user_id: Uuid,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<crate::Job, DbError>> + Send;
}

/// The backtest job queue as the workers see it (the stores of the connecting role, not
/// [`crate::UserScoped`]): claim (`FOR UPDATE SKIP LOCKED` on PostgreSQL; a job whose lease
/// expired is taken over), the run's start, heartbeats with progress, and the end. Every call
/// but the claim names the lease's owner and does nothing (returns false) when the job is not
/// leased to it any more: taken over, cancelled or finished.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait JobQueue {
    /// Leases up to `limit` jobs to `owner` until `now + lease_for`, oldest first: queued ones,
    /// and running ones whose lease expired at or before `now` (their worker died). Each is
    /// `running`, its `attempts` counted. Two concurrent claimers never get the same job.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a non-positive lease, a limit outside 1..=1,000 or an owner
    /// name outside 1..=200 characters.
    fn claim_jobs(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_for: chrono::Duration,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::Job>, DbError>> + Send;

    /// The run of `owner`'s job starts over with `ticks_total` ticks, recording into
    /// `deployment_id`: a deployment of that id an earlier attempt left (a worker that died
    /// mid-run) is deleted with everything recorded in it — unless another job records into
    /// it — and the progress is reset. False when the lease is not `owner`'s.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn begin_job_run(
        &self,
        id: Uuid,
        owner: &str,
        deployment_id: Uuid,
        ticks_total: u32,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;

    /// The heartbeat: extends `owner`'s lease to `until` and records `progress` at `now`.
    /// False when the lease is not `owner`'s any more (the worker stops the run).
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn heartbeat_job(
        &self,
        id: Uuid,
        owner: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        progress: crate::JobProgress,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;

    /// `owner`'s job is done at `at` with `result`. False when the lease is not `owner`'s.
    ///
    /// # Errors
    /// [`DbError::Invalid`] for a summary that is not a JSON object.
    fn finish_job(
        &self,
        id: Uuid,
        owner: &str,
        at: DateTime<Utc>,
        result: &crate::JobResult,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;

    /// `owner`'s job failed at `at`: `error` (cut to
    /// [`MAX_JOB_ERROR_CHARS`](crate::MAX_JOB_ERROR_CHARS)) says why. False when the lease is
    /// not `owner`'s.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn fail_job(
        &self,
        id: Uuid,
        owner: &str,
        at: DateTime<Utc>,
        error: &str,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;

    /// `owner` gives its job back (a worker stopping): queued again, for the next claim (which
    /// runs it from its first tick: its ticks done are reset).
    /// False when the lease is not `owner`'s.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn release_job(
        &self,
        id: Uuid,
        owner: &str,
    ) -> impl Future<Output = Result<bool, DbError>> + Send;

    /// How many jobs are queued or running (of `batch_id`, when given): what workers still
    /// have to do, a dead worker's jobs included.
    ///
    /// # Errors
    /// [`DbError::Backend`] on driver failure.
    fn open_jobs(
        &self,
        batch_id: Option<Uuid>,
    ) -> impl Future<Output = Result<u64, DbError>> + Send;
}

/// Every store at once, for code that needs the whole storage layer.
pub trait Storage:
    RegistryStore
    + LeaseStore
    + TickStore
    + LedgerStore
    + NoteStore
    + FactStore
    + EventStore
    + NewsStore
    + ChatTurnStore
    + OutcomeStore
    + ControlStore
    + AlertStore
    + AlertOutbox
    + ActionStore
    + JobStore
    + JobQueue
    + Send
    + Sync
{
}

impl<T> Storage for T where
    T: RegistryStore
        + LeaseStore
        + TickStore
        + LedgerStore
        + NoteStore
        + FactStore
        + EventStore
        + NewsStore
        + ChatTurnStore
        + OutcomeStore
        + ControlStore
        + AlertStore
        + AlertOutbox
        + ActionStore
        + JobStore
        + JobQueue
        + Send
        + Sync
{
}
