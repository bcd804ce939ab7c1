//! Reflection (ADR-0017 Phase 2): distils a deployment's recent closed trades into a short,
//! bounded "lessons" note that the LESSONS segment of the system prompt shows as signal, never
//! as strategy.
//!
//! **Owns:**
//! - the cadence decision ([`reflection_due`]): `off`, `per_n_trades`, `daily` at a UTC hour;
//! - the reflection request ([`REFLECTION_SYSTEM_PROMPT`], [`reflection_request`], with the
//!   [`record_lessons_tool`]) and the job ([`reflect`]) that turns a model's answer into a
//!   bounded [`NoteDraft`] or a recorded [`FailedReflection`];
//! - typed lessons: a model's observations (setup, finding, direction, optional note) checked
//!   against the ledger ([`scope_of`], [`Figures`], [`supports`]) and rendered with the
//!   ledger's figures ([`render`]) — no figure of a lesson is the model's;
//! - `builtin/stats-reflection` ([`stats_observations`], [`stats_lessons`],
//!   [`Reflector::Stats`]): the same observations computed from the ledger without any model;
//! - the bounds every lessons text obeys ([`bound_lessons`]: `- ` bullets, ≤ 2,000 characters);
//! - the lesson defences, run by [`reflect`] on every plain bullet of a model's answer, one
//!   bullet at a time — a failing bullet is held for a person's review alone, a passing one is
//!   read as the observation it makes ([`observation_of`]) and rendered: no text of the model's
//!   reaches a prompt without a person (an observation's note is always held, [`NOTE_HELD`]):
//!   1. [`normalise`]: hidden characters removed, NFKC, TR39 confusables folded — every check
//!      reads this text; headings and tags that are not plain lesson headings hold the bullets
//!      under them;
//!   2. the linter ([`lint_lessons`]): lessons contradicting the strategy's `avoid` rules (also
//!      in other words: "averaging down" is adding) or carrying hostile patterns;
//!   3. the grounding check ([`ground_bullet`]): each bullet must be English, name a setup of
//!      the window and state only figures the ledger shows;
//!   4. a deny layer: raised risk, undone safeguards, standing orders, avoid-rule words, a
//!      sentence split across bullets;
//!   5. for a real model (not `builtin/…`, [`is_real_model`]), a second, separate call
//!      ([`judge_request`], [`JUDGE_SYSTEM_PROMPT`], [`judge_verdicts`]) that must clear each
//!      bullet the other layers passed;
//! - the point-in-time choice of the visible note ([`visible_note_at`]), its mapping to
//!   [`prompt_compose::Lessons`] ([`to_lessons`]) and the explicit promotion to skill scope
//!   ([`promote_to_skill_scope`]).
//!
//! **Never does:** I/O, sqlx, HTTP, reading the clock (`now` is an argument), floats in money
//! or prompt text. It decides and computes; the caller persists: it stores the note, marks the
//! previous active note superseded (only when the new note is not flagged), records failed runs,
//! and keeps a flagged note inactive until a person accepts it. A reflection never blocks a
//! tick: [`reflect`] returns an outcome, never an error, and never panics.
//!
//! # The caller's loop (runner or simulator), after the ledger step of a tick at `now`
//! 1. `reflection_due(&skill.context.memory, &ledger_rows, last.as_ref(), last_failure, now)`,
//!    where `last` is the deployment's latest stored note (flagged or not, see [`LastNote`]) and
//!    `last_failure` the `attempted_at` of its latest failed run.
//! 2. When due: `resolve_reflection_model(&config.model, |id| providers::resolve_model(id, …))`
//!    (a resolve error is a failed run, like a model error) and
//!    `reflect(ReflectionInput { skill, skill_id, deployment_id, trades: &ledger_rows, last, now, rates }, &reflector)`.
//! 3. [`ReflectionOutcome::Note`]: store it with its held bullets; if `lint.flagged` is false (at
//!    least one bullet passed every layer) it becomes the active note (the previous one is
//!    superseded), otherwise (every bullet was held) it is stored inactive until a person
//!    accepts it.
//!    [`ReflectionOutcome::Failed`]: record the attempt; the previous note stays active.
//! 4. Each tick's prompt: `visible_note_at(&notes, tick_time).map(to_lessons)` → the LESSONS
//!    segment of `prompt_compose::compose_system_prompt_segments`.
//!
//! Conventions: PnL shown and aggregated is **net** (`realized_pnl_usd` is gross, minus
//! `fees_usd`); a win is a net PnL above zero; times are UTC minutes (`2026-06-04T10:00Z`).
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use reflection::{Due, LastNote, NotDue, reflection_due};
//! use skill_schema::{ReflectionCadence, SkillMemoryConfig};
//!
//! let mut memory = SkillMemoryConfig::default();
//! memory.reflection.cadence = ReflectionCadence::Daily;
//! memory.reflection.hour = 21;
//! let now = Utc.with_ymd_and_hms(2026, 6, 4, 20, 0, 0).unwrap();
//! let last = LastNote {
//!     generated_at: Utc.with_ymd_and_hms(2026, 6, 3, 21, 0, 0).unwrap(),
//!     window_end: Utc.with_ymd_and_hms(2026, 6, 3, 21, 0, 0).unwrap(),
//!     closed_trades_total: None,
//! };
//! // Yesterday's 21:00 note is the latest slot's; today's slot is at 21:00.
//! let due = reflection_due(&memory, &[], Some(&last), None, now)?;
//! assert_eq!(
//!     due,
//!     Due::No(NotDue::AlreadyRan { next_slot: Utc.with_ymd_and_hms(2026, 6, 4, 21, 0, 0).unwrap() })
//! );
//! # Ok::<(), reflection::ReflectionError>(())
//! ```

mod bounds;
mod bullets;
mod cadence;
mod deny;
mod grounding;
mod job;
mod judge;
mod lint;
mod normalise;
mod notes;
mod observe;
mod prompt;
mod stats;

pub use bounds::{Bounded, ELLIPSIS, bound_lessons};
pub use cadence::{
    Due, LastNote, NotDue, RETRY_BACKOFF_MINUTES, ReflectionWindow, reflection_due, window_trades,
};
pub use grounding::{BulletGrounding, SANCTIONED_DEFERRALS, ground_bullet, ground_lessons};
pub use job::{
    FailedReflection, NOTE_HELD, NoteDraft, REFLECTION_MAX_OUTPUT_TOKENS, ReflectionFailure,
    ReflectionInput, ReflectionOutcome, Reflector, reflect, reflection_request,
    resolve_reflection_model,
};
pub use judge::{
    JUDGE_MAX_OUTPUT_TOKENS, JUDGE_SYSTEM_PROMPT, is_real_model, judge_request, judge_verdicts,
    parse_judge_reply, render_judge_user,
};
pub use lint::{LintResult, lint_lessons};
pub use normalise::{Normalised, is_hidden, normalise};
pub use notes::{NoteView, promote_to_skill_scope, to_lessons, visible_note_at};
pub use observe::{
    Figures, ParsedAnswer, RECORD_LESSONS_TOOL, SMALL_SAMPLE, observation_of, parse_answer,
    record_lessons_tool, render, scope_of, setup_label, supports,
};
pub use prompt::{MAX_WINDOW_TRADES, REFLECTION_SYSTEM_PROMPT, render_reflection_user};
pub use stats::{
    LedgerStats, MIN_RECURRING, STATS_REFLECTION_MODEL, SetupKey, SetupStats, TINY_SAMPLE,
    stats_lessons, stats_observations,
};
pub use types::MAX_LESSONS_CHARS;

/// Bad input to the reflection decisions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReflectionError {
    /// A reflection setting is out of range (the skill loader normally rejects it first).
    #[error("{field}: {message}")]
    InvalidConfig {
        /// The skill-document path of the setting, e.g. `context.memory.reflection.hour`.
        field: &'static str,
        /// The allowed range and the value given.
        message: String,
    },
}
