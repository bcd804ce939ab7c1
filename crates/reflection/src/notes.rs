//! What happens to a note after it is written: how it is injected, which one a tick sees, and
//! the explicit promotion to skill scope.

use chrono::{DateTime, Utc};
use prompt_compose::Lessons;

use crate::job::NoteDraft;

/// A stored note as the point-in-time rule needs it. Implemented for [`NoteDraft`]; the store's
/// row type implements it at integration.
pub trait NoteView {
    /// When the note was generated (UTC): ticks before it must not see it.
    fn generated_at(&self) -> DateTime<Utc>;
    /// Not flagged by the linter, or flagged and accepted by a person.
    fn injectable(&self) -> bool;
}

impl NoteView for NoteDraft {
    fn generated_at(&self) -> DateTime<Utc> {
        self.generated_at
    }

    fn injectable(&self) -> bool {
        NoteDraft::injectable(self)
    }
}

/// The note a tick at `at` sees: the latest injectable note with `generated_at ≤ at` (never a
/// note from the future, never a flagged one). Ties on `generated_at` go to the later element of
/// `notes`, so the store's insertion order decides deterministically.
#[must_use]
pub fn visible_note_at<N: NoteView>(notes: &[N], at: DateTime<Utc>) -> Option<&N> {
    notes
        .iter()
        .filter(|n| n.injectable() && n.generated_at() <= at)
        .fold(None, |best: Option<&N>, n| match best {
            Some(b) if b.generated_at() > n.generated_at() => Some(b),
            _ => Some(n),
        })
}

/// The LESSONS segment's input for `note`.
#[must_use]
pub fn to_lessons(note: &NoteDraft) -> Lessons {
    Lessons {
        text: note.content.lessons_text.clone(),
        trades_considered: note.content.trades_considered,
        generated_at: note.generated_at,
        window_start: note.content.window_start,
        window_end: note.content.window_end,
    }
}

/// A skill-scoped copy of a deployment note (`deployment_id: None`), for a person who decided
/// the lesson should follow the skill into its other deployments. Never called automatically.
///
/// The copy is generated at `promoted_at` (the promotion is a new fact: a backtest of a time
/// before it must not see it); window, sample size, model, text and lint verdict are kept — a
/// flagged note stays flagged. Tokens and cost are zero: promotion calls no model.
#[must_use]
pub fn promote_to_skill_scope(note: &NoteDraft, promoted_at: DateTime<Utc>) -> NoteDraft {
    NoteDraft {
        deployment_id: None,
        generated_at: promoted_at,
        content: types::NoteContent {
            input_tokens: Some(0),
            output_tokens: Some(0),
            cost_usd: Some(rust_decimal::Decimal::ZERO),
            ..note.content.clone()
        },
        ..note.clone()
    }
}
