//! Held lessons: the bullets a reflection's lesson defences held back, stored one row each
//! (`held_lessons`) beside their note and reviewed one by one by a person.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Longest reviewer name (`held_lessons.reviewed_by`, `reflection_notes.accepted_by`), in
/// characters.
pub const MAX_REVIEWER_CHARS: usize = 100;
/// Longest reason a reviewer gives for a decision (`held_lessons.review_reason`), in characters.
pub const MAX_REVIEW_REASON_CHARS: usize = 500;
/// Longest held bullet's reasons, as their stored JSON array, in characters.
pub const MAX_HELD_REASONS_CHARS: usize = 2000;
/// Longest `reflection_notes.observations` (a note's observations and dropped observations as
/// compact JSON), in characters.
pub const MAX_OBSERVATIONS_JSON_CHARS: usize = 16_000;
/// Most held bullets one note may carry.
pub const MAX_HELD_PER_NOTE: usize = 64;
/// Most held rows one [`NoteStore::held_lessons`](crate::NoteStore::held_lessons) read returns.
pub const MAX_HELD_READ: u32 = 1000;

/// The namespace of the ids derived here (UUID v5 of `held-lessons`).
const HELD_NAMESPACE: Uuid = Uuid::from_u128(0x3b8e_51c2_7d04_4f6a_9e13_c8a2_5f70_d41e);

/// Where a held bullet is in its review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeldStatus {
    /// Waiting for a person.
    Pending,
    /// Accepted: a new note carries it (`resulting_note_id`).
    Accepted,
    /// Rejected: it never reaches a prompt.
    Rejected,
}

impl HeldStatus {
    /// Every status, in review order.
    pub const ALL: [HeldStatus; 3] = [
        HeldStatus::Pending,
        HeldStatus::Accepted,
        HeldStatus::Rejected,
    ];

    /// The snake_case spelling (serde's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            HeldStatus::Pending => "pending",
            HeldStatus::Accepted => "accepted",
            HeldStatus::Rejected => "rejected",
        }
    }

    /// Parses the snake_case spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// A person's decision on a held bullet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeldDecision {
    /// Show it: a new note with the bullet appended is in force from the review.
    Accept,
    /// Keep it out of every prompt.
    Reject,
}

/// One `held_lessons` row with its review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredHeldLesson {
    /// [`held_lesson_id`] of the note and the position.
    pub id: Uuid,
    /// The note whose reflection held it back.
    pub note_id: Uuid,
    /// The note's deployment; `None` for a skill-scoped note.
    pub deployment_id: Option<Uuid>,
    /// When the reflection that held it back ran: its note's `generated_at` (UTC; simulated
    /// time in a backtest).
    pub held_at: DateTime<Utc>,
    /// Its place among the note's held bullets, from 0.
    pub position: u32,
    /// The bullet (`- ` and the text), 1..=2000 characters.
    pub text: String,
    /// Every finding of the defences, one line each.
    pub reasons: Vec<String>,
    /// Where its review stands.
    pub status: HeldStatus,
    /// When a person reviewed it (UTC); `None` while pending.
    pub reviewed_at: Option<DateTime<Utc>>,
    /// Who reviewed it; `None` while pending.
    pub reviewed_by: Option<String>,
    /// Why, when the reviewer said; `None` while pending and when they did not.
    pub review_reason: Option<String>,
    /// The note the acceptance wrote; `None` unless accepted.
    pub resulting_note_id: Option<Uuid>,
}

/// A person's review of a held bullet, as
/// [`NoteStore::review_held_lesson`](crate::NoteStore::review_held_lesson) records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldReview {
    /// Accept or reject.
    pub decision: HeldDecision,
    /// Who decides (1..=100 characters, no control character; trimmed): a user's id when a
    /// user reviews under row-level security, an operator's name otherwise.
    pub by: String,
    /// Why (1..=500 characters, no control character; trimmed), when they say.
    pub reason: Option<String>,
    /// When the decision takes effect (UTC): an accepted bullet's note is in force from then.
    pub at: DateTime<Utc>,
}

/// The id of the held bullet at `position` of note `note_id`: UUID v5 of both, so a re-run
/// writes the same rows.
#[must_use]
pub fn held_lesson_id(note_id: Uuid, position: u32) -> Uuid {
    Uuid::new_v5(&HELD_NAMESPACE, format!("{note_id}\n{position}").as_bytes())
}

/// The id of the note accepting held bullet `held_id` writes (a bullet is accepted at most
/// once).
#[must_use]
pub fn accepted_note_id(held_id: Uuid) -> Uuid {
    Uuid::new_v5(&HELD_NAMESPACE, format!("{held_id}\naccepted").as_bytes())
}
