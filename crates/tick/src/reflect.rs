//! Reflection around the tick: the cadence check after a tick ([`ReflectionCheck`]), and
//! running a due reflection off the tick path ([`run_due_reflection`], [`store_reflection`]).

use std::sync::Arc;

use agent_runtime::rates_for;
use chrono::{DateTime, Utc};
use db::{NewNote, NoteStore, ReflectionRun, RunOutcome};
use reflection::{
    Due, LastNote, NoteDraft, ReflectionInput, ReflectionOutcome, Reflector, reflect,
    reflection_due,
};
use serde::Serialize;
use types::TradeRecord;
use uuid::Uuid;

use crate::{TickDeployment, TickState, note_id, run_id};

/// What a reflection did ([`run_due_reflection`], [`store_reflection`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReflectionReport {
    /// Not due (or off).
    NotDue,
    /// A reflection of this tick (or a later one) is already stored: nothing ran (a redo after a
    /// restart, or a re-run of a recorded tick).
    AlreadyDone,
    /// A note was written and stored. A `flagged` one is stored as pending review: out of the
    /// store's active slot and out of every prompt until a person accepts it.
    Note {
        /// The stored note's id ([`note_id`](crate::note_id) of the deployment and tick time).
        id: Uuid,
        /// Whether the lesson defences flagged it (stored pending review).
        flagged: bool,
        /// Length of its lessons text, in characters.
        chars: usize,
    },
    /// The run failed; the previous note stays in force.
    Failed {
        /// Why (the model's or the reflection's error, or an unavailable reflection model).
        reason: String,
    },
    /// The run produced an outcome but the store refused it (the tick itself was recorded).
    StoreError {
        /// The store's error.
        message: String,
    },
}

/// What the reflection cadence said after a tick.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReflectionCheck {
    /// Not due (or off, or backing off after a failure).
    NotDue,
    /// Due: run it with [`run_due_reflection`].
    Due(DueReflection),
    /// The skill's reflection settings are invalid: nothing runs (counted as a failure).
    Invalid {
        /// What is wrong with the settings.
        reason: String,
    },
}

/// A reflection the cadence found due at a tick, with what it reads as of that tick, so it can
/// run later (on a worker) and still see exactly what the tick saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DueReflection {
    /// The tick time: the reflection's `now`, its note's `generated_at`, the seed of its ids.
    pub at: DateTime<Utc>,
    /// The deployment's ledger rows after the tick (shared with the tick's state, not copied).
    #[serde(skip)]
    pub trades: Arc<Vec<TradeRecord>>,
    /// The cadence's view of the previous note.
    pub last: Option<LastNote>,
    /// Closed ledger rows after the tick (kept with the new note for the cadence).
    pub closed_total: u32,
    /// A blind run's disguise: the reflection reads the rows as the tick's model did, and a
    /// model reflector is shown its prompt through the lens ([`blind::BlindModel`]).
    #[serde(skip)]
    pub blind: Option<crate::BlindRun>,
}

/// What [`run_due_reflection`] did, and how the caller's [`TickState`] moves on
/// ([`ReflectionDone::apply`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ReflectionDone {
    /// The tick time the reflection ran for.
    pub at: DateTime<Utc>,
    /// What happened.
    pub report: ReflectionReport,
    /// The note the reflection wrote (also when the store then refused it).
    pub note: Option<NoteDraft>,
    closed_total: u32,
    ran: bool,
}

impl ReflectionDone {
    /// Moves `state` on as the reflection did: a note becomes the cadence's last note (and the
    /// note in force when it is injectable); a failed run starts the cadence's back-off. A
    /// reflection that did not run (already done, store unreadable) changes nothing.
    pub fn apply(&self, state: &mut TickState) {
        if !self.ran {
            return;
        }
        match &self.note {
            Some(note) => {
                state.last_note = Some(note.as_last_note(Some(self.closed_total)));
                if note.injectable() {
                    state.notes = vec![note.clone()];
                }
            }
            None => state.last_reflection_failure = Some(self.at),
        }
    }
}

/// The cadence decision after a tick: pure, no store, no model.
pub(crate) fn check_reflection(
    deployment: &TickDeployment,
    state: &TickState,
    now: DateTime<Utc>,
) -> ReflectionCheck {
    // The cadence counts closed rows in `state.trades`; the note's total is moved back by the
    // rows pruned from it (all closed in or before the note's window, so counted in its
    // total), which keeps "closed since the note" exact.
    let last = state.last_note.map(|mut l| {
        l.closed_trades_total = l
            .closed_trades_total
            .map(|t| t.saturating_sub(state.closed_pruned));
        l
    });
    match reflection_due(
        &deployment.skill.context.memory,
        &state.trades,
        last.as_ref(),
        state.last_reflection_failure,
        now,
    ) {
        Ok(Due::Yes(_)) => ReflectionCheck::Due(DueReflection {
            at: now,
            trades: Arc::clone(&state.trades),
            last: state.last_note,
            closed_total: u32::try_from(state.closed_trades()).unwrap_or(u32::MAX),
            blind: state.blind.clone(),
        }),
        Ok(Due::No(_)) => ReflectionCheck::NotDue,
        Err(e) => ReflectionCheck::Invalid {
            reason: e.to_string(),
        },
    }
}

/// Runs a reflection the cadence found due ([`ReflectionCheck::Due`]) and stores its outcome
/// ([`store_reflection`]): what the live runner calls on its reflection worker (a backtest runs
/// the same reflection and stores the same rows behind its ticks). Never fails: a model failure
/// or an unavailable reflection model is recorded as a failed run; a store refusal is reported.
///
/// Idempotent: when the store already holds a reflection run or a note of `due.at` or later (a
/// redo after a restart, or a re-run of a recorded tick), nothing runs
/// ([`ReflectionReport::AlreadyDone`]). Apply the result to the caller's state with
/// [`ReflectionDone::apply`].
pub async fn run_due_reflection<S>(
    deployment: &TickDeployment,
    due: &DueReflection,
    store: &S,
) -> ReflectionDone
where
    S: NoteStore + Sync,
{
    let now = due.at;
    let skipped = |report| ReflectionDone {
        at: now,
        report,
        note: None,
        closed_total: due.closed_total,
        ran: false,
    };
    match already_reflected(store, deployment.deployment_id, now).await {
        Ok(true) => return skipped(ReflectionReport::AlreadyDone),
        Ok(false) => {}
        Err(e) => {
            return skipped(ReflectionReport::StoreError {
                message: e.to_string(),
            });
        }
    }
    let (done, writes) = reflect_due(deployment, due).await;
    let report = stored_report(store, writes).await;
    ReflectionDone { report, ..done }
}

/// Runs a due reflection without the store: what it did (its report as once its writes are
/// stored) and those writes. [`run_due_reflection`] writes them at once; a backtest, which
/// owns a fresh deployment (nothing to be idempotent against), writes them behind its ticks.
pub async fn reflect_due(
    deployment: &TickDeployment,
    due: &DueReflection,
) -> (ReflectionDone, ReflectionWrites) {
    let now = due.at;
    let (writes, note) = match &deployment.reflector {
        Ok(reflector) => {
            let outcome = run_reflector(deployment, due, reflector).await;
            let writes = reflection_writes(deployment, &outcome, now);
            let note = match outcome {
                ReflectionOutcome::Note(note) => Some(note),
                ReflectionOutcome::Failed(_) => None,
            };
            (writes, note)
        }
        Err(message) => {
            let reason = format!("reflection model unavailable: {message}");
            let run = run_row(
                deployment,
                now,
                RunOutcome::Failed {
                    error: reason.clone(),
                },
                &deployment.skill.context.memory.reflection.model,
            );
            let report = ReflectionReport::Failed { reason };
            let writes = ReflectionWrites {
                note: None,
                run,
                report,
            };
            (writes, None)
        }
    };
    let done = ReflectionDone {
        at: now,
        report: writes.report.clone(),
        note,
        closed_total: due.closed_total,
        ran: true,
    };
    (done, writes)
}

/// The reflection itself: `reflector` over the rows `due` saw (a blind run's disguise on them,
/// its skill and, for a model reflector, its prompt).
async fn run_reflector(
    deployment: &TickDeployment,
    due: &DueReflection,
    reflector: &Reflector,
) -> ReflectionOutcome {
    let now = due.at;
    // Blind: the rows, the skill and the prompt as the tick's model read them.
    let (skill, trades, reflector) = match &due.blind {
        None => (deployment.skill.as_ref(), None, reflector.clone()),
        Some(b) => (
            b.skill.as_ref(),
            Some(b.trades(&due.trades)),
            match reflector {
                Reflector::Stats => Reflector::Stats,
                Reflector::Model(m) => Reflector::Model(Arc::new(blind::BlindModel::new(
                    Arc::clone(m),
                    Arc::clone(&b.blind),
                    now,
                ))),
            },
        ),
    };
    reflect(
        ReflectionInput {
            skill,
            skill_id: deployment.skill_id,
            deployment_id: Some(deployment.deployment_id),
            trades: trades.as_deref().unwrap_or(&due.trades),
            last: due.last.as_ref(),
            now,
            rates: rates_for(reflector.id()),
        },
        &reflector,
    )
    .await
}

/// The `reflection_runs` row of a deployment's reflection at `now` (usage added by the caller).
fn run_row(
    deployment: &TickDeployment,
    now: DateTime<Utc>,
    outcome: RunOutcome,
    model: &str,
) -> ReflectionRun {
    ReflectionRun {
        id: run_id(deployment.deployment_id, now),
        skill_id: deployment.skill_id,
        skill_version: deployment.skill_version,
        deployment_id: Some(deployment.deployment_id),
        started_at: now,
        finished_at: now,
        outcome,
        model: model.to_owned(),
        input_tokens: None,
        output_tokens: None,
        cost_usd: None,
    }
}

/// Whether the store holds a reflection run or a note of the deployment at `at` or later.
async fn already_reflected<S>(
    store: &S,
    deployment_id: Uuid,
    at: DateTime<Utc>,
) -> Result<bool, db::DbError>
where
    S: NoteStore + Sync,
{
    let scope = db::NoteScope::Deployment(deployment_id);
    if store
        .reflection_runs(scope, 1)
        .await?
        .first()
        .is_some_and(|r| r.started_at >= at)
    {
        return Ok(true);
    }
    Ok(store
        .note_history(scope, 1)
        .await?
        .first()
        .is_some_and(|n| n.generated_at >= at))
}

/// Persists a reflection's outcome: a note is inserted (a note the linter flagged is stored
/// with its flag as *pending review* — kept, never injected, the note in force unchanged — until
/// a person accepts it with `NoteStore::accept_note`), and every run, failed or not, is recorded
/// in `reflection_runs`. A failure never displaces the note in force.
///
/// Used by [`run_due_reflection`] and by `sim-worker reflect`.
pub async fn store_reflection<S>(
    store: &S,
    deployment: &TickDeployment,
    outcome: &ReflectionOutcome,
    now: DateTime<Utc>,
) -> ReflectionReport
where
    S: NoteStore + Sync,
{
    stored_report(store, reflection_writes(deployment, outcome, now)).await
}

/// Writes a reflection's writes: its report when the store took them, the store's error
/// otherwise.
async fn stored_report<S>(store: &S, writes: ReflectionWrites) -> ReflectionReport
where
    S: NoteStore + Sync,
{
    match write_reflection(store, &writes).await {
        Ok(()) => writes.report,
        Err(e) => ReflectionReport::StoreError {
            message: e.to_string(),
        },
    }
}

/// What a reflection stores — its note, when it wrote one, and its run, failed or not — and
/// what it reports once they are stored. Decided without the store ([`reflect_due`]); the note
/// first, then the run, is the order they are stored in.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflectionWrites {
    /// The note, when the reflection wrote one (stored as [`db::NoteStore::insert_note`]
    /// stores it).
    pub note: Option<NewNote>,
    /// The `reflection_runs` row, failed or not.
    pub run: ReflectionRun,
    /// What the reflection reports once both are stored.
    pub report: ReflectionReport,
}

/// The writes of a reflection's outcome (see [`store_reflection`]).
fn reflection_writes(
    deployment: &TickDeployment,
    outcome: &ReflectionOutcome,
    now: DateTime<Utc>,
) -> ReflectionWrites {
    let run_base = |outcome: RunOutcome, model: &str| run_row(deployment, now, outcome, model);
    match outcome {
        ReflectionOutcome::Note(note) => {
            let id = note_id(deployment.deployment_id, now);
            let flagged = note.lint.flagged;
            let chars = note.content.lessons_text.chars().count();
            let mut run = run_base(
                RunOutcome::Succeeded { note_id: Some(id) },
                &note.content.model_used,
            );
            run.input_tokens = note
                .content
                .input_tokens
                .and_then(|v| i64::try_from(v).ok());
            run.output_tokens = note
                .content
                .output_tokens
                .and_then(|v| i64::try_from(v).ok());
            run.cost_usd = note.content.cost_usd;
            let lint = flagged.then(|| types::NoteLint {
                reason: bounded_lint_reason(&note.lint.reasons),
            });
            let new = NewNote {
                id,
                skill_id: deployment.skill_id,
                skill_version: deployment.skill_version,
                deployment_id: Some(deployment.deployment_id),
                generated_at: note.generated_at,
                content: note.content.clone(),
                lint,
            };
            ReflectionWrites {
                note: Some(new),
                run,
                report: ReflectionReport::Note { id, flagged, chars },
            }
        }
        ReflectionOutcome::Failed(failed) => {
            let reason = failed.reason.to_string();
            let mut run = run_base(
                RunOutcome::Failed {
                    error: reason.clone(),
                },
                &failed.model_used,
            );
            run.input_tokens = i64::try_from(failed.input_tokens).ok();
            run.output_tokens = i64::try_from(failed.output_tokens).ok();
            run.cost_usd = failed.cost_usd;
            ReflectionWrites {
                note: None,
                run,
                report: ReflectionReport::Failed { reason },
            }
        }
    }
}

/// Stores a reflection's writes: the note first, then the run (a refused note records no run).
///
/// # Errors
/// The store's [`db::DbError`].
pub(crate) async fn write_reflection<S>(
    store: &S,
    writes: &ReflectionWrites,
) -> Result<(), db::DbError>
where
    S: NoteStore + Sync,
{
    if let Some(note) = &writes.note {
        store.insert_note(note).await?;
    }
    store.record_reflection_run(&writes.run).await
}

/// The lesson defences' reasons (linter, grounding, judge) as one stored line, within the
/// store's bound.
fn bounded_lint_reason(reasons: &[String]) -> String {
    let joined = reasons.join("; ");
    if joined.chars().count() <= types::MAX_LINT_REASON_CHARS {
        return joined;
    }
    let mut cut: String = joined
        .chars()
        .take(types::MAX_LINT_REASON_CHARS - 1)
        .collect();
    cut.push('…');
    cut
}

/// Why a note could not be promoted to skill scope.
#[derive(Debug, thiserror::Error)]
pub enum PromoteError {
    /// The store could not read or write the note (unknown id: [`db::DbError::NotFound`]).
    #[error(transparent)]
    Store(#[from] db::DbError),
    /// The note is already skill-scoped.
    #[error("note {0} is already skill-scoped")]
    AlreadySkillScoped(Uuid),
    /// The note waits for review: a person accepts it first (`accept-note`).
    #[error("note {0} is pending review: accept it first, then promote it")]
    PendingReview(Uuid),
}

/// What `promote-note` prints (both binaries): the copy's id, its skill version and when it is
/// in force.
#[must_use]
pub fn promoted_note_line(source: Uuid, copy: &types::ReflectionNote) -> String {
    format!(
        "note {source} promoted: skill-scoped note {} of skill {} version {}, in force from {}\n",
        copy.id,
        copy.skill_id,
        copy.skill_version,
        copy.generated_at.to_rfc3339()
    )
}

/// The id of the skill-scoped copy of note `source` (UUID v5: promoting twice writes one row).
#[must_use]
pub fn promoted_note_id(source: Uuid) -> Uuid {
    Uuid::new_v5(&source, b"skill-scope")
}

/// A person promotes a deployment's note to its skill (ADR-0017's trader-curated skill-scoped
/// lessons): a copy with no deployment ([`reflection::promote_to_skill_scope`]: window, sample
/// size, model and text kept, tokens and cost zero) becomes the skill version's active note from
/// `at` — never earlier, so a tick before the promotion does not see it. Every deployment of
/// that skill version without a note of its own in force sees it
/// ([`crate::load_reflection_state`]: the deployment's note first). A note a person accepted after
/// the linter flagged it is promoted as accepted; one still pending review is refused.
///
/// # Errors
/// [`PromoteError`]: an unknown note, a note already skill-scoped or pending review, or the
/// store refusing the copy (e.g. a newer skill note is in force).
pub async fn promote_note<S>(
    store: &S,
    note_id: Uuid,
    at: DateTime<Utc>,
) -> Result<types::ReflectionNote, PromoteError>
where
    S: NoteStore + Sync,
{
    let note = store.get_note(note_id).await?;
    if note.deployment_id.is_none() {
        return Err(PromoteError::AlreadySkillScoped(note_id));
    }
    if note.status == types::NoteStatus::PendingReview {
        return Err(PromoteError::PendingReview(note_id));
    }
    let copy = reflection::promote_to_skill_scope(&crate::state::draft_of(&note), at);
    let new = NewNote {
        id: promoted_note_id(note_id),
        skill_id: note.skill_id,
        skill_version: note.skill_version,
        deployment_id: None,
        generated_at: copy.generated_at,
        content: copy.content,
        // A person reviewed it (accepted, or the linter never flagged it).
        lint: None,
    };
    Ok(store.insert_note(&new).await?)
}
