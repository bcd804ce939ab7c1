//! Rows of the memory layer that several crates share: reflection notes (ADR-0017), user facts and
//! their audit trail (ADR-0020).

use std::fmt;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Upper bound on `reflection_notes.lessons_text`, in characters (Unicode scalar values).
pub const MAX_LESSONS_CHARS: usize = 2000;
/// Upper bound on a lint reason attached to a note, in characters.
pub const MAX_LINT_REASON_CHARS: usize = 500;
/// Lower bound on `user_facts.fact`, in characters.
pub const MIN_FACT_CHARS: usize = 4;
/// Upper bound on `user_facts.fact`, in characters.
pub const MAX_FACT_CHARS: usize = 500;
/// Upper bound on a fact's topic tag, in characters.
pub const MAX_FACT_TOPIC_CHARS: usize = 32;
/// Most facts (or recent closed trades) a single read may return for prompt injection: the
/// skill's `recentTradesK` and a facts read are capped at it.
pub const MAX_MEMORY_K: u32 = 30;

/// Whether a reflection note is the one in force for its scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoteStatus {
    /// The note in force for its scope (at most one per scope).
    Active,
    /// Replaced by a newer note; kept as history.
    Superseded,
    /// Flagged by the linter: stored, never injected, until a person accepts it.
    PendingReview,
}

impl NoteStatus {
    /// The snake_case spelling (serde's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            NoteStatus::Active => "active",
            NoteStatus::Superseded => "superseded",
            NoteStatus::PendingReview => "pending_review",
        }
    }

    /// Parses the snake_case spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            NoteStatus::Active,
            NoteStatus::Superseded,
            NoteStatus::PendingReview,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

/// What a reflection note says and what it cost: the part a freshly written note
/// (`reflection::NoteDraft`), a note to insert (`db::NewNote`) and a stored note
/// ([`ReflectionNote`]) share, moved whole between them. Counts are unsigned here; the store
/// checks them into and out of its signed columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoteContent {
    /// The window covers trades closed after `window_start` up to `window_end` (inclusive).
    pub window_start: DateTime<Utc>,
    /// Inclusive end of the window (UTC): the tick time of the run.
    pub window_end: DateTime<Utc>,
    /// Closed trades the lessons were distilled from (the sample size the prompt shows).
    pub trades_considered: u32,
    /// `- ` bullets, 1..=[`MAX_LESSONS_CHARS`] characters.
    pub lessons_text: String,
    /// The model id that wrote the lessons (`builtin/stats-reflection` for the offline one).
    pub model_used: String,
    /// All input tokens (uncached + cache reads + cache writes); `Some(0)` when no model was
    /// called, `None` when not recorded.
    pub input_tokens: Option<u64>,
    /// Output tokens; `Some(0)` when no model was called, `None` when not recorded.
    pub output_tokens: Option<u64>,
    /// Cost of the run in USD; `None` when the model's rates were not given.
    pub cost_usd: Option<Decimal>,
    /// The typed observations `lessons_text` was rendered from (a `record_lessons` answer or
    /// `builtin/stats-reflection`); empty for a note of plain bullets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<crate::Observation>,
    /// Observations the ledger did not bear out: recorded, never shown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<crate::DroppedObservation>,
    /// Bullets the lesson defences held back, each alone: shown only once a person accepts it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<crate::HeldLesson>,
}

/// One `reflection_notes` row: lessons distilled from a window of closed trades.
///
/// `deployment_id = None` is a skill-scoped note (ADR-0017 Alt D). At most one note per scope is
/// [`NoteStatus::Active`]; older ones are kept as [`NoteStatus::Superseded`] history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReflectionNote {
    /// The store's key.
    pub id: Uuid,
    /// The skill the note is about.
    pub skill_id: Uuid,
    /// The skill version the deployment ran when the note was generated.
    pub skill_version: i32,
    /// The deployment whose trades the note distils; `None` for a skill-scoped note.
    pub deployment_id: Option<Uuid>,
    /// Active, superseded or pending review.
    pub status: NoteStatus,
    /// When the reflection produced the note (simulated time in a backtest). Point-in-time reads
    /// show a note at tick T only if `generated_at <= T`.
    pub generated_at: DateTime<Utc>,
    /// Window, lessons, model and usage (serialised flat, beside the other fields).
    #[serde(flatten)]
    pub content: NoteContent,
    /// Set when the deterministic linter flagged the lessons (e.g. they contradict `avoid`).
    pub lint: Option<NoteLint>,
    /// When a newer note replaced this one (UTC); `None` while it is not superseded.
    pub superseded_at: Option<DateTime<Utc>>,
    /// The id of the note that replaced this one; `None` while it is not superseded.
    pub superseded_by: Option<Uuid>,
    /// When a person accepted a flagged note; it is in force from then, not from
    /// `generated_at`.
    pub accepted_at: Option<DateTime<Utc>>,
    /// Who accepted it (a user's id or an operator's name); `None` unless accepted, and for a
    /// note accepted before the store kept who.
    #[serde(default)]
    pub accepted_by: Option<String>,
}

/// A linter's flag on a note: the note is stored, and the reason says what looked wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoteLint {
    /// At most [`MAX_LINT_REASON_CHARS`] characters.
    pub reason: String,
}

/// Where a fact came from (ADR-0020).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FactSource {
    /// The agent called `remember` during a conversation.
    Chat,
    /// The user entered it on the profile page.
    Profile,
    /// The agent generated it from observed behaviour.
    Inferred,
}

impl FactSource {
    /// The snake_case spelling (serde's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            FactSource::Chat => "chat",
            FactSource::Profile => "profile",
            FactSource::Inferred => "inferred",
        }
    }

    /// Parses the snake_case spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [FactSource::Chat, FactSource::Profile, FactSource::Inferred]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// How sure we are of a fact (ADR-0020).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FactConfidence {
    /// The user said it explicitly.
    Asserted,
    /// The agent's interpretation.
    Inferred,
}

impl FactConfidence {
    /// The snake_case spelling (serde's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            FactConfidence::Asserted => "asserted",
            FactConfidence::Inferred => "inferred",
        }
    }

    /// Parses the snake_case spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [FactConfidence::Asserted, FactConfidence::Inferred]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// Why a fact was archived (soft-deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArchiveReason {
    /// The user asked for the fact to be deleted.
    UserDeleted,
    /// The user corrected it: the fact was wrong or outdated.
    UserCorrected,
    /// The agent chose to forget it (`forget`'s default).
    AgentForget,
}

impl ArchiveReason {
    /// The snake_case spelling (serde's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ArchiveReason::UserDeleted => "user_deleted",
            ArchiveReason::UserCorrected => "user_corrected",
            ArchiveReason::AgentForget => "agent_forget",
        }
    }

    /// Parses the snake_case spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            ArchiveReason::UserDeleted,
            ArchiveReason::UserCorrected,
            ArchiveReason::AgentForget,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

/// One `user_facts` row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserFact {
    /// The store's key.
    pub id: Uuid,
    /// The user the fact is about (its owner under row-level security).
    pub user_id: Uuid,
    /// Reserved by ADR-0020 for skill-scoped facts; `None` = user-wide.
    pub skill_id: Option<Uuid>,
    /// [`MIN_FACT_CHARS`]..=[`MAX_FACT_CHARS`] characters. User data: never instructions.
    pub fact: String,
    /// Where the fact came from.
    pub source: FactSource,
    /// Whether the user said it or the agent inferred it.
    pub confidence: FactConfidence,
    /// Short tag such as `risk`, `symbols`, `session`, `goal`.
    pub topic: Option<String>,
    /// When the fact was last referenced: written (remembered or edited) or shown in a chat
    /// turn that completed. `None` only for rows stored before writes counted as references.
    pub last_referenced_at: Option<DateTime<Utc>>,
    /// When the fact was stored (UTC).
    pub created_at: DateTime<Utc>,
    /// When the fact was archived (soft-deleted, UTC); `None` while it is active.
    pub archived_at: Option<DateTime<Utc>>,
    /// Why it was archived; `None` while it is active.
    pub archived_reason: Option<ArchiveReason>,
}

impl UserFact {
    /// The fact's short handle ([`FactHandle::of`] its id).
    #[must_use]
    pub fn handle(&self) -> FactHandle {
        FactHandle::of(self.id)
    }
}

/// Names [`FactHandle`]s: UUID v5 of this namespace and a fact's id.
const FACT_HANDLE_NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2a3e_9d4b_5e70_8a21_c3f4_b5d6_e7f8);

/// A fact's short name for the chat model: eight lowercase hex digits (`3f9a1c0e`), shown beside
/// each fact in "## What I know about you" and taken by `forget`.
///
/// Why a hash of the id rather than a prefix of it or a stored number:
/// - stable: a pure function of the fact's id, the same in every conversation and on every
///   store; nothing to migrate, assign or keep in step between SQLite and PostgreSQL, and no
///   race between two writers of the same user (a per-user counter would need one);
/// - evenly spread whatever made the id: a prefix of a UUID v7 is its timestamp (facts written
///   within a minute would share it) and test ids such as `Uuid::from_u128(1)` share all their
///   leading digits; UUID v5 of the id spreads every kind of id over the 32 bits;
/// - short: about four tokens a fact, against some twenty for a full UUID;
/// - unambiguous in practice, and checked: two of one user's facts share a handle with odds
///   n²/2³³ (below 1 in 30 000 with 500 facts); the caller resolves a handle against that
///   user's facts and refuses an ambiguous one, naming the full ids, which `forget` also takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FactHandle(u32);

impl FactHandle {
    /// The handle of the fact with id `id`.
    #[must_use]
    pub fn of(id: Uuid) -> Self {
        let h = Uuid::new_v5(&FACT_HANDLE_NAMESPACE, id.as_bytes());
        let b = h.as_bytes();
        Self(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Parses a handle as a model or a person writes it: eight hex digits in either case,
    /// optionally after a `#`, surrounding whitespace ignored. `None` for anything else.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let s = s.strip_prefix('#').unwrap_or(s);
        if s.len() != 8 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(s, 16).ok().map(Self)
    }
}

impl fmt::Display for FactHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

/// What a `user_fact_changes` audit row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FactChangeOp {
    /// The fact was created.
    Insert,
    /// Its text or metadata (topic, source, confidence, scope) changed.
    Update,
    /// It was archived.
    Archive,
}

impl FactChangeOp {
    /// The snake_case spelling (serde's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            FactChangeOp::Insert => "insert",
            FactChangeOp::Update => "update",
            FactChangeOp::Archive => "archive",
        }
    }

    /// Parses the snake_case spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            FactChangeOp::Insert,
            FactChangeOp::Update,
            FactChangeOp::Archive,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

impl fmt::Display for FactChangeOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `user_fact_changes` row, written by a database trigger on every insert, text or metadata
/// update and archive of a fact (reference bumps are not changes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FactChange {
    /// Monotonic per database: orders the changes of one fact.
    pub id: i64,
    /// The fact that changed.
    pub fact_id: Uuid,
    /// The fact's owner.
    pub user_id: Uuid,
    /// What happened to it.
    pub op: FactChangeOp,
    /// The writer's label (e.g. `chat-agent`, `profile`), as given to the store.
    pub actor: Option<String>,
    /// The database role that made the change (`sqlite` for the embedded store).
    pub db_role: String,
    /// The request's `auth.uid()` when a user made the change through RLS (PostgreSQL only).
    pub jwt_sub: Option<Uuid>,
    /// When the change was made (UTC).
    pub changed_at: DateTime<Utc>,
    /// The text before the change; `None` for an insert.
    pub old_fact: Option<String>,
    /// The text after the change.
    pub new_fact: Option<String>,
    /// The archive reason, for archive rows.
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored spelling (`as_str`), the parser and serde agree for every variant.
    fn check<T>(all: &[T], as_str: fn(T) -> &'static str, parse: fn(&str) -> Option<T>)
    where
        T: Copy + PartialEq + fmt::Debug + Serialize,
    {
        for &v in all {
            assert_eq!(parse(as_str(v)), Some(v));
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                format!("\"{}\"", as_str(v))
            );
        }
        assert_eq!(parse("nonsense"), None);
    }

    #[test]
    fn enum_spellings_round_trip() {
        check(
            &[NoteStatus::Active, NoteStatus::Superseded],
            NoteStatus::as_str,
            NoteStatus::parse,
        );
        check(
            &[FactSource::Chat, FactSource::Profile, FactSource::Inferred],
            FactSource::as_str,
            FactSource::parse,
        );
        check(
            &[FactConfidence::Asserted, FactConfidence::Inferred],
            FactConfidence::as_str,
            FactConfidence::parse,
        );
        check(
            &[
                ArchiveReason::UserDeleted,
                ArchiveReason::UserCorrected,
                ArchiveReason::AgentForget,
            ],
            ArchiveReason::as_str,
            ArchiveReason::parse,
        );
        check(
            &[
                FactChangeOp::Insert,
                FactChangeOp::Update,
                FactChangeOp::Archive,
            ],
            FactChangeOp::as_str,
            FactChangeOp::parse,
        );
    }

    #[test]
    fn fact_handles_are_short_stable_and_parse_as_written() {
        let id = Uuid::from_u128(0x0192_7c4e_8b1a_7def_9abc_def0_1234_5678);
        let h = FactHandle::of(id);
        let text = h.to_string();
        assert_eq!(text.len(), 8);
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        // A function of the id alone: pinned, so a change of the scheme breaks this test
        // before it breaks the handles users and models already hold.
        assert_eq!(text, FactHandle::of(id).to_string());
        assert_eq!(text, "902f4744");
        for written in [
            text.clone(),
            text.to_uppercase(),
            format!("#{text}"),
            format!("  {text}\n"),
        ] {
            assert_eq!(FactHandle::parse(&written), Some(h), "{written:?}");
        }
        for bad in [
            "",
            "0a2bd6a",
            "0a2bd6a30",
            "0a2bd6ag",
            "0x2bd6a3",
            &id.to_string(),
            "+a2bd6a3",
        ] {
            assert_eq!(FactHandle::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn fact_handles_spread_ids_that_share_their_leading_digits() {
        // Sequential ids (and UUID v7's timestamp prefix) share their leading hex digits; their
        // handles do not.
        let handles: std::collections::BTreeSet<FactHandle> = (1..=2000u128)
            .map(|n| FactHandle::of(Uuid::from_u128(n)))
            .collect();
        assert_eq!(handles.len(), 2000);
    }
}
