//! Rows owned by the storage layer (the shared memory rows live in `types`).

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use types::{
    ArchiveReason, FactConfidence, FactSource, Fill, JsonText, NoteContent, NoteLint,
    ProposedAction, TradeRecord, Usage, Verdict,
};
use uuid::Uuid;

/// An account: `auth.users` on PostgreSQL, `users` on SQLite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The user's id (`auth.users.id` on PostgreSQL: the JWT's `sub`).
    pub id: Uuid,
    /// Contact address, when known; never used for lookups.
    pub email: Option<String>,
}

/// A skill (the strategy a user authors) as its `skills` row; its content, the skill document
/// (`skill_schema::Skill`), lives in [`SkillVersion`]s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillRecord {
    /// The skill's id.
    pub id: Uuid,
    /// The author who owns it.
    pub user_id: Uuid,
    /// 1..=200 characters.
    pub name: String,
    /// When it was created (UTC).
    pub created_at: DateTime<Utc>,
}

/// One immutable version of a skill document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillVersion {
    /// The skill this is a version of.
    pub skill_id: Uuid,
    /// ≥ 1.
    pub version: i32,
    /// The skill document as JSON (skill-schema's `Skill`); stored as given.
    pub body: serde_json::Value,
    /// The model id the version runs with, e.g. `builtin/sma-cross:5:20` or
    /// `anthropic/claude-sonnet-4-5`.
    pub model: String,
    /// When the version was added (UTC).
    pub created_at: DateTime<Utc>,
}

/// Where a deployment trades.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrokerKind {
    /// The in-process paper broker (simulated fills, fees and slippage; no exchange).
    Paper,
    /// A Hyperliquid account: the exchange's fills and positions are authoritative.
    Hyperliquid,
}

impl BrokerKind {
    /// The stored text: `"paper"` or `"hyperliquid"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            BrokerKind::Paper => "paper",
            BrokerKind::Hyperliquid => "hyperliquid",
        }
    }

    /// The kind whose [`as_str`](Self::as_str) is `s`; `None` for any other text.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [BrokerKind::Paper, BrokerKind::Hyperliquid]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// Lifecycle of a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentStatus {
    /// Ticks at every bar close (the runner claims it when due).
    Active,
    /// Not ticked until set active again; its state and ledger are kept.
    Paused,
    /// Retired by its owner: not ticked; its rows stay readable.
    Stopped,
}

impl DeploymentStatus {
    /// The stored text: `"active"`, `"paused"` or `"stopped"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            DeploymentStatus::Active => "active",
            DeploymentStatus::Paused => "paused",
            DeploymentStatus::Stopped => "stopped",
        }
    }

    /// The status whose [`as_str`](Self::as_str) is `s`; `None` for any other text.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            DeploymentStatus::Active,
            DeploymentStatus::Paused,
            DeploymentStatus::Stopped,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

/// A skill version running against a broker for a user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deployment {
    /// The deployment's id (the namespace of its tick, note and run ids).
    pub id: Uuid,
    /// The user who deployed it and owns its rows.
    pub user_id: Uuid,
    /// The skill it runs.
    pub skill_id: Uuid,
    /// The skill version it runs (fixed for the deployment's life).
    pub skill_version: i32,
    /// Where it trades.
    pub broker: BrokerKind,
    /// Whether the runner ticks it.
    pub status: DeploymentStatus,
    /// Equity at deployment, in USD.
    pub initial_equity_usd: Decimal,
    /// Last equity the runner recorded (see [`TickRecord::equity_usd`]).
    pub equity_usd: Decimal,
    /// Deployer settings (risk caps, symbols, ...) as JSON.
    pub config: serde_json::Value,
    /// When it was deployed (UTC).
    pub created_at: DateTime<Utc>,
    /// Scheduling and leasing for a multi-process runner; `None` until one uses them.
    pub next_tick_at: Option<DateTime<Utc>>,
    /// The runner (its owner id) holding the lease; `None` when not leased.
    pub lease_owner: Option<String>,
    /// When that lease ends (UTC); an expired lease may be claimed by another runner.
    pub lease_expires_at: Option<DateTime<Utc>>,
}

/// One `decision_snapshots` row: everything the agent saw and did on one tick (the firehose).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionSnapshot {
    /// The snapshot's id (UUID v5 of the deployment and tick time when `tick` writes it).
    pub id: Uuid,
    /// The deployment that ticked.
    pub deployment_id: Uuid,
    /// The tick's time; unique per deployment.
    pub tick_at: DateTime<Utc>,
    /// The system prompt the model got, byte for byte.
    pub system_prompt: String,
    /// The user message (assembled context).
    pub context: String,
    /// The model loop's steps (tool calls and results) as the runtime serialises them.
    pub steps: JsonText,
    /// The last successful `propose_order` of the tick; `None` when the model proposed nothing.
    pub proposal: Option<ProposedAction>,
    /// The execution engine's verdict (executed, rejected with its rule code, or no-op).
    pub verdict: Verdict,
    /// The model id that ran the tick.
    pub model: String,
    /// Why the model's last response ended, as `FinishReason::as_str` writes it (`"stop"`,
    /// `"length"`, `"tool-calls"`, `"error"`); `tick` always sets it.
    pub finish_reason: Option<String>,
    /// Tokens used by every model call of the tick, summed.
    pub usage: Usage,
    /// Estimated cost of those calls, in USD.
    pub cost_usd: Decimal,
    /// Why the tick's model loop failed, when it did (at most
    /// [`MAX_STORED_ERROR_CHARS`](types::MAX_STORED_ERROR_CHARS) characters: the tick cuts it,
    /// the store refuses a longer one).
    pub error: Option<String>,
    /// True when the tick ended on a model failure (a provider error or the tick's deadline):
    /// the outcome is a model error, not a no-op, whatever `verdict` says (no-op: nothing was
    /// proposed).
    pub model_error: bool,
}

/// Most ticks one [`TickStore::ticks`](crate::TickStore::ticks) read returns.
pub const MAX_TICKS_READ: u32 = 1000;

/// Which stored ticks of a deployment [`TickStore::ticks`](crate::TickStore::ticks) reads: those
/// whose time is in [`from`, `to`] (both ends included, as `sim-worker run --from/--to` count
/// them; `None` leaves that end open) and strictly after `after`, oldest first, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickQuery {
    /// The deployment.
    pub deployment_id: Uuid,
    /// The first tick time read, included.
    pub from: Option<DateTime<Utc>>,
    /// The last tick time read, included.
    pub to: Option<DateTime<Utc>>,
    /// Only ticks strictly after this time: the last tick of the previous page.
    pub after: Option<DateTime<Utc>>,
    /// At most this many ticks, 1..=[`MAX_TICKS_READ`].
    pub limit: u32,
    /// Whether the texts (system prompt, user message, steps) are read and decoded too; without
    /// them a tick is its row alone (no line block is read).
    pub texts: bool,
}

impl TickQuery {
    /// Every tick of `deployment_id` from the first, [`MAX_TICKS_READ`] at a time, without
    /// texts: set the fields to narrow it.
    #[must_use]
    pub const fn of(deployment_id: Uuid) -> Self {
        Self {
            deployment_id,
            from: None,
            to: None,
            after: None,
            limit: MAX_TICKS_READ,
            texts: false,
        }
    }
}

/// A stored tick as [`TickStore::ticks`](crate::TickStore::ticks) reads it: the
/// [`DecisionSnapshot`], its texts only when asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTick {
    /// The snapshot's id.
    pub id: Uuid,
    /// The deployment that ticked.
    pub deployment_id: Uuid,
    /// The tick's time (the bar close it ran at).
    pub tick_at: DateTime<Utc>,
    /// The last successful `propose_order` of the tick; `None` when the model proposed nothing.
    pub proposal: Option<ProposedAction>,
    /// The execution engine's verdict.
    pub verdict: Verdict,
    /// The model id that ran the tick.
    pub model: String,
    /// Why the model's last response ended (`stop`, `length`, `tool-calls`, `error`).
    pub finish_reason: Option<String>,
    /// Tokens used by every model call of the tick, summed.
    pub usage: Usage,
    /// Estimated cost of those calls, in USD.
    pub cost_usd: Decimal,
    /// Why the tick's model loop failed, when it did.
    pub error: Option<String>,
    /// True when the tick ended on a model failure (see [`DecisionSnapshot::model_error`]).
    pub model_error: bool,
    /// What the model saw and did, decoded from the stored lines; `None` unless
    /// [`TickQuery::texts`] asked for it.
    pub texts: Option<TickTexts>,
}

/// What the model of a tick saw and did, byte for byte as it was recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TickTexts {
    /// The system prompt ([`DecisionSnapshot::system_prompt`]).
    pub system_prompt: String,
    /// The user message, the assembled context ([`DecisionSnapshot::context`]).
    pub user_message: String,
    /// The model loop's steps as the runtime serialised them ([`DecisionSnapshot::steps`]).
    pub steps: JsonText,
}

impl From<DecisionSnapshot> for StoredTick {
    /// The snapshot with its texts.
    fn from(s: DecisionSnapshot) -> Self {
        Self {
            id: s.id,
            deployment_id: s.deployment_id,
            tick_at: s.tick_at,
            proposal: s.proposal,
            verdict: s.verdict,
            model: s.model,
            finish_reason: s.finish_reason,
            usage: s.usage,
            cost_usd: s.cost_usd,
            error: s.error,
            model_error: s.model_error,
            texts: Some(TickTexts {
                system_prompt: s.system_prompt,
                user_message: s.context,
                steps: s.steps,
            }),
        }
    }
}

/// A recorded broker fill with the ledger rows it was applied to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredFill {
    /// The deployment the fill belongs to.
    pub deployment_id: Uuid,
    /// The fill as the broker reported it.
    pub fill: Fill,
    /// The ledger row the fill applied to (for a fill that crossed zero: the row it closed).
    pub trade_id: Option<Uuid>,
    /// For a fill that crossed zero: the row its opening leg started.
    pub flip_trade_id: Option<Uuid>,
}

/// Links a fill (by broker id) to the ledger rows it changed. See [`StoredFill`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FillTradeLink {
    /// The fill's broker id ([`types::Fill::id`]).
    pub broker_fill_id: String,
    /// The ledger row it applied to (for a fill that crossed zero: the row it closed).
    pub trade_id: Uuid,
    /// For a fill that crossed zero: the row its opening leg started.
    pub flip_trade_id: Option<Uuid>,
}

/// Everything one tick persists, written atomically by
/// [`TickStore::record_tick`](crate::TickStore::record_tick).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TickRecord {
    /// The decision snapshot of the tick.
    pub snapshot: DecisionSnapshot,
    /// Broker fills seen this tick. A fill already stored (same deployment and broker id) is
    /// skipped, never duplicated.
    pub fills: Vec<Fill>,
    /// Ledger rows inserted or updated this tick (full rows, upserted by id). Rows that close are
    /// written before rows that open, so a flip never has two open rows for a symbol.
    pub trades: Vec<TradeRecord>,
    /// Fill → ledger row links (fills of this tick or of earlier ones).
    pub links: Vec<FillTradeLink>,
    /// The broker-authoritative equity after the tick, stored on the deployment when given.
    pub equity_usd: Option<Decimal>,
    /// The caller's own state after this tick (opaque JSON: a live runner's paper broker, risk
    /// state, last decision), written to `live_runner_state` in the same transaction as the tick,
    /// at the snapshot's `tick_at`, and only forward. `None` writes nothing (a backtest).
    #[serde(default)]
    pub runner_state: Option<serde_json::Value>,
    /// The tick's outcome-memory rows (seed 003), written in the same transaction.
    #[serde(default)]
    pub outcomes: OutcomeWrites,
}

/// What a tick writes to the outcome memory (seed 003): the market snapshots and the
/// `trade_outcomes` rows of its directional proposal, and scores of earlier outcomes that came
/// due by this tick (a backtest scores inside its loop; live scoring goes through
/// [`OutcomeStore::score_outcomes`](crate::OutcomeStore::score_outcomes) instead).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomeWrites {
    /// `market_snapshots` rows (this tick's, this deployment's).
    pub snapshots: Vec<outcomes::MarketSnapshot>,
    /// `trade_outcomes` rows at decision time (this tick's; each names one of `snapshots` or a
    /// stored snapshot).
    pub outcomes: Vec<outcomes::TradeOutcome>,
    /// Scores of stored outcomes (or outcomes of earlier ticks of the same batch), by id.
    pub scores: Vec<(Uuid, outcomes::OutcomeScore)>,
}

impl OutcomeWrites {
    /// Nothing to write.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.snapshots.is_empty() && self.outcomes.is_empty() && self.scores.is_empty()
    }
}

/// Whose memory a read of the outcome memory covers
/// ([`OutcomeStore::recall_outcomes`](crate::OutcomeStore::recall_outcomes),
/// [`OutcomeStore::search_memory`](crate::OutcomeStore::search_memory)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "id")]
pub enum MemoryScope {
    /// One deployment's rows.
    Deployment(Uuid),
    /// The rows of every deployment whose `deployments.user_id` is this user.
    User(Uuid),
}

/// What a [`NewAnnotation`] is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "id")]
pub enum AnnotationTarget {
    /// A `trade_outcomes` row.
    Outcome(Uuid),
    /// A `trade_history` (ledger) row.
    Trade(Uuid),
}

/// At most this many characters in an annotation.
pub const MAX_ANNOTATION_CHARS: usize = 2000;
/// At most this many tags on an annotation.
pub const MAX_ANNOTATION_TAGS: usize = 16;
/// At most this many characters in a tag.
pub const MAX_TAG_CHARS: usize = 40;

/// A free-text note on an outcome or a ledger row (`trade_annotations`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewAnnotation {
    /// The row's id (callers derive it, e.g. UUID v4 in a CLI).
    pub id: Uuid,
    /// What it annotates (that row's deployment is the annotation's).
    pub target: AnnotationTarget,
    /// 1..=[`MAX_ANNOTATION_CHARS`] characters.
    pub annotation: String,
    /// At most [`MAX_ANNOTATION_TAGS`], each 1..=[`MAX_TAG_CHARS`] characters.
    pub tags: Vec<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

/// A stored annotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotation {
    /// The row's id.
    pub id: Uuid,
    /// The deployment of the annotated row.
    pub deployment_id: Uuid,
    /// What it annotates.
    pub target: AnnotationTarget,
    /// The text.
    pub annotation: String,
    /// The tags, in the order given.
    pub tags: Vec<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

/// The runner state a deployment's latest recorded tick committed (see
/// [`TickRecord::runner_state`]); read back by [`TickStore::runner_state`](crate::TickStore::runner_state).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRunnerState {
    /// The deployment whose state this is.
    pub deployment_id: Uuid,
    /// The tick this state is the result of.
    pub tick_at: DateTime<Utc>,
    /// The caller's state, as the caller serialised it.
    pub state: serde_json::Value,
}

/// The runner that last started a deployment's tick, and which tick
/// ([`LeaseStore::mark_attempt`](crate::LeaseStore::mark_attempt)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickAttempt {
    /// The runner that started it (its lease owner id).
    pub owner: String,
    /// The tick it started (the bar close, UTC).
    pub tick_at: DateTime<Utc>,
}

/// A tick a runner is about to start ([`LeaseStore::start_ticks`](crate::LeaseStore::start_ticks)):
/// the claimed deployment and the bar close it ticks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickStart {
    /// The deployment, leased to the runner.
    pub deployment_id: Uuid,
    /// The tick's bar close (UTC).
    pub tick_at: DateTime<Utc>,
}

/// What [`LeaseStore::start_ticks`](crate::LeaseStore::start_ticks) read and did for one
/// [`TickStart`].
#[derive(Debug, Clone, PartialEq)]
pub struct StartedTick {
    /// The deployment.
    pub deployment_id: Uuid,
    /// The tick asked for.
    pub tick_at: DateTime<Utc>,
    /// The deployment's status as read by the statement.
    pub status: DeploymentStatus,
    /// The runner state its latest recorded tick committed, as read by the statement (before
    /// the mark), as [`TickStore::runner_state`](crate::TickStore::runner_state) returns it.
    pub state: Option<StoredRunnerState>,
    /// Whether the attempt was marked: the deployment is active and no recorded tick is at or
    /// after `tick_at`.
    pub marked: bool,
    /// The attempt the mark replaced (as [`LeaseStore::mark_attempt`](crate::LeaseStore::mark_attempt)
    /// returns it); `None` when there was none or nothing was marked.
    pub previous: Option<TickAttempt>,
}

/// What [`TickStore::record_tick`](crate::TickStore::record_tick) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordOutcome {
    /// The tick was written.
    Recorded {
        /// The id of the snapshot written.
        snapshot_id: Uuid,
    },
    /// A snapshot for this deployment and tick time (or with this id) already existed: nothing
    /// was written. `snapshot_id` is the stored one.
    AlreadyRecorded {
        /// The id of the snapshot already stored.
        snapshot_id: Uuid,
    },
}

/// Whose reflection notes: a deployment's, or a skill version's skill-scoped ones
/// (`deployment_id IS NULL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoteScope {
    /// The notes of one deployment.
    Deployment(Uuid),
    /// The skill-scoped notes of one skill version (shared by its deployments).
    Skill {
        /// The skill.
        skill_id: Uuid,
        /// Its version.
        skill_version: i32,
    },
}

/// A note to insert; it becomes the active note of its scope and supersedes the previous one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewNote {
    /// The note's id (UUID v5 of the deployment and generation time when `tick` writes it).
    pub id: Uuid,
    /// The skill the note is about.
    pub skill_id: Uuid,
    /// The skill version the note is about.
    pub skill_version: i32,
    /// `None` = a skill-scoped note.
    pub deployment_id: Option<Uuid>,
    /// When the reflection generated it (UTC); the note is in force from then, never earlier.
    pub generated_at: DateTime<Utc>,
    /// Counts must fit the signed columns (`trades_considered` an `i32`, tokens an `i64`);
    /// `insert_note` rejects the note otherwise.
    #[serde(flatten)]
    pub content: NoteContent,
    /// The linter's flag; `Some` stores the note pending review (never injected until accepted).
    pub lint: Option<NoteLint>,
}

impl NewNote {
    /// The scope the note belongs to.
    #[must_use]
    pub fn scope(&self) -> NoteScope {
        match self.deployment_id {
            Some(d) => NoteScope::Deployment(d),
            None => NoteScope::Skill {
                skill_id: self.skill_id,
                skill_version: self.skill_version,
            },
        }
    }
}

/// How a reflection run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RunOutcome {
    /// A note was produced (and inserted, when `note_id` is set).
    Succeeded {
        /// The note inserted; `None` when the run produced no note to store.
        note_id: Option<Uuid>,
    },
    /// The run failed; the active note is untouched. The error is cut to 2000 characters.
    Failed {
        /// What went wrong (at most 2000 characters).
        error: String,
    },
}

/// One reflection attempt (`reflection_runs`), successful or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReflectionRun {
    /// The run's id (UUID v5 of the deployment and tick time when `tick` writes it).
    pub id: Uuid,
    /// The skill reflected on.
    pub skill_id: Uuid,
    /// Its version.
    pub skill_version: i32,
    /// The deployment reflected on; `None` for a skill-scoped run.
    pub deployment_id: Option<Uuid>,
    /// When the run started (UTC).
    pub started_at: DateTime<Utc>,
    /// When it ended (UTC).
    pub finished_at: DateTime<Utc>,
    /// Whether it produced a note or failed, and why.
    pub outcome: RunOutcome,
    /// The reflection model's id.
    pub model: String,
    /// Input tokens the reflection model used; `None` when no model call was made or it reported none.
    pub input_tokens: Option<i64>,
    /// Output tokens; `None` as for `input_tokens`.
    pub output_tokens: Option<i64>,
    /// Estimated cost in USD; `None` when unknown.
    pub cost_usd: Option<Decimal>,
}

/// A fact to remember (ADR-0020 `remember`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewFact {
    /// The fact's id.
    pub id: Uuid,
    /// The user the fact is about (and who owns it).
    pub user_id: Uuid,
    /// The skill it is about; `None` for a user-wide fact.
    pub skill_id: Option<Uuid>,
    /// [`types::MIN_FACT_CHARS`]..=[`types::MAX_FACT_CHARS`] characters.
    pub fact: String,
    /// Where the fact came from (a chat `remember`, the profile page, inferred).
    pub source: FactSource,
    /// How sure the writer is.
    pub confidence: FactConfidence,
    /// 1..=[`types::MAX_FACT_TOPIC_CHARS`] characters.
    pub topic: Option<String>,
    /// Who writes it (recorded in the audit trail), e.g. `chat-agent`, `profile`.
    pub actor: String,
}

/// A fact edit (profile page: correct the text, promote or demote confidence).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactEdit {
    /// New text; `None` keeps it.
    pub fact: Option<String>,
    /// New confidence; `None` keeps it.
    pub confidence: Option<FactConfidence>,
    /// New topic: `None` keeps it, `Some(None)` clears it, `Some(Some(t))` sets it.
    pub topic: Option<Option<String>>,
}

/// Why and by whom a fact is forgotten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forget {
    /// Why it is archived.
    pub reason: ArchiveReason,
    /// When it was forgotten (UTC).
    pub at: DateTime<Utc>,
    /// Who forgot it (recorded in the audit trail), e.g. `chat-agent`, `profile`.
    pub actor: String,
}

/// One chat-coach turn's bookkeeping (table `chat_turns`): which model answered, in how many
/// steps, with what token usage and cost. Written by whoever ran the turn (the HTTP server, the
/// terminal client), as the user on PostgreSQL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatTurnRecord {
    /// The turn's id (`chat::ChatTurn::turn_id`).
    pub id: Uuid,
    /// Whose turn it was.
    pub user_id: Uuid,
    /// The turn's time.
    pub at: DateTime<Utc>,
    /// `authoring`, `coach` or `ops`.
    pub mode: String,
    /// The model id that answered (1..=200 characters).
    pub model: String,
    /// Model calls the turn made.
    pub steps: u32,
    /// Tokens of every model call of the turn, summed.
    pub usage: Usage,
    /// What the turn cost, in USD (the rate table's estimate; zero for offline models).
    pub cost_usd: Decimal,
    /// Why the turn ended in error, if it did (cut to [`MAX_CHAT_TURN_ERROR_CHARS`]).
    pub error: Option<String>,
}

/// Longest error text a [`ChatTurnRecord`] keeps; longer ones are cut, not refused. The one
/// bound of stored error texts, [`types::MAX_STORED_ERROR_CHARS`].
pub const MAX_CHAT_TURN_ERROR_CHARS: usize = types::MAX_STORED_ERROR_CHARS;

// ---- news (#16 item 2) -----------------------------------------------------------------------

/// Longest stored headline, in characters.
pub const MAX_NEWS_TITLE_CHARS: usize = 500;
/// Longest stored summary, in characters.
pub const MAX_NEWS_SUMMARY_CHARS: usize = 2000;
/// Longest feed URL, guid or link, in characters.
pub const MAX_NEWS_KEY_CHARS: usize = 2000;
/// Longest source (feed) name, in characters.
pub const MAX_NEWS_SOURCE_CHARS: usize = 200;
/// Most rows one [`NewsStore::news_window`](crate::NewsStore::news_window) answers.
pub const MAX_NEWS_READ: u32 = 100;

/// Where a stored headline's sentiment came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SentimentSource {
    /// The feed's own field.
    Feed,
    /// The poller's deterministic word-list score.
    Lexicon,
}

impl SentimentSource {
    /// `"feed"` or `"lexicon"`, as stored.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SentimentSource::Feed => "feed",
            SentimentSource::Lexicon => "lexicon",
        }
    }

    /// The inverse of [`SentimentSource::as_str`].
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "feed" => Some(SentimentSource::Feed),
            "lexicon" => Some(SentimentSource::Lexicon),
            _ => None,
        }
    }
}

/// One polled headline (table `news_items`). News is global: no user owns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewsRecord {
    /// The row id (the poller derives it from `feed` and `guid`).
    pub id: Uuid,
    /// The feed's URL.
    pub feed: String,
    /// The feed's name as shown to the model (its title, else its host).
    pub source: String,
    /// The dedupe key, unique per feed: the item's guid (Atom id).
    pub guid: String,
    /// The headline, 1..=[`MAX_NEWS_TITLE_CHARS`] characters.
    pub title: String,
    /// The item's link, if it has one.
    pub link: Option<String>,
    /// Plain-text summary, at most [`MAX_NEWS_SUMMARY_CHARS`] characters.
    pub summary: Option<String>,
    /// When the feed says it was published (the fetch time for an undated item).
    pub published_at: DateTime<Utc>,
    /// When this runner first fetched it: the item is visible to a tick at T only when both
    /// times are ≤ T.
    pub fetched_at: DateTime<Utc>,
    /// The deployments' symbols it names (empty: market-wide).
    pub symbols: Vec<String>,
    /// Sentiment in −1..=1.
    pub sentiment: Decimal,
    /// Where `sentiment` came from.
    pub sentiment_source: SentimentSource,
    /// Importance in 0..=1.
    pub importance: Decimal,
}

/// What [`OutcomeStore::regrade_outcomes`](crate::OutcomeStore::regrade_outcomes) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Regraded {
    /// Outcomes scored in full, each read and graded again.
    pub scored: u64,
    /// Those whose grade or narrative changed (and were written).
    pub changed: u64,
}
