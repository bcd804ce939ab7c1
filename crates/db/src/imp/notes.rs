//! `NoteStore`: reflection notes (one active per scope, history kept) and reflection runs.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::Transaction;
use sqlx::types::Json;
use types::ReflectionNote;
use uuid::Uuid;

use super::{Affected as _, Backend, Dialect, On, Query, query};
use crate::codec::{self, check_len, check_limit};
use crate::error::ctx;
use crate::model::{NewNote, NoteScope, ReflectionRun, RunOutcome};
use crate::traits::NoteStore;
use crate::{DbError, HeldDecision, HeldReview, HeldStatus, StoredHeldLesson};

/// The held rows with their note's deployment and time (`held_at`): `held_lessons` has no
/// column of those names, so a scope filter over the note's columns reads unqualified.
const HELD_SELECT: &str = "SELECT h.*, n.deployment_id, n.generated_at AS held_at \
     FROM held_lessons h JOIN reflection_notes n ON n.id = h.note_id";

/// A reviewer's name, trimmed and checked (1..=100 characters, no control character).
fn checked_reviewer(by: &str) -> Result<&str, DbError> {
    let by = by.trim();
    check_len("reviewed_by", by, 1, crate::MAX_REVIEWER_CHARS)?;
    if crate::control::has_control_char(by) {
        return Err(DbError::Invalid {
            what: "reviewed_by",
            detail: "a control character (a NUL, a line break, ...) is not allowed".to_owned(),
        });
    }
    Ok(by)
}

/// A review's reason, trimmed and checked (1..=500 characters, no control character).
fn checked_review_reason(reason: Option<&str>) -> Result<Option<&str>, DbError> {
    let Some(reason) = reason.map(str::trim) else {
        return Ok(None);
    };
    check_len("review_reason", reason, 1, crate::MAX_REVIEW_REASON_CHARS)?;
    if crate::control::has_control_char(reason) {
        return Err(DbError::Invalid {
            what: "review_reason",
            detail: "a control character (a NUL, a line break, ...) is not allowed".to_owned(),
        });
    }
    Ok(Some(reason))
}

/// Builds `WHERE`-clause text for a note scope; the next free parameter number is returned.
pub(crate) fn scope_filter(scope: crate::NoteScope) -> (&'static str, u32) {
    match scope {
        crate::NoteScope::Deployment(_) => ("deployment_id = $1", 2),
        crate::NoteScope::Skill { .. } => (
            "deployment_id IS NULL AND skill_id = $1 AND skill_version = $2",
            3,
        ),
    }
}

/// Is this the "second active note" unique violation a concurrent reflection causes?
pub(crate) fn is_active_note_conflict(err: &crate::DbError) -> bool {
    match err {
        crate::DbError::Constraint {
            kind: crate::ConstraintKind::Unique,
            constraint,
            ..
        } => {
            // PostgreSQL names the partial index; SQLite names its columns.
            constraint.starts_with("reflection_notes_active")
                || (constraint.starts_with("reflection_notes.")
                    && constraint != "reflection_notes.id")
        }
        _ => false,
    }
}

pub(crate) const NOTE_INSERT_ATTEMPTS: u32 = 5;

/// The note's counts in the columns' signed widths: `trades_considered`, input and output tokens.
pub(crate) type NoteCounts = (i32, Option<i64>, Option<i64>);

/// Checks a note before any write and converts its counts, once, to the columns' widths.
pub(crate) fn validate_note(note: &crate::NewNote) -> Result<NoteCounts, crate::DbError> {
    crate::codec::check_len(
        "lessons_text",
        &note.content.lessons_text,
        1,
        types::MAX_LESSONS_CHARS,
    )?;
    if let Some(lint) = &note.lint {
        crate::codec::check_len("lint reason", &lint.reason, 0, types::MAX_LINT_REASON_CHARS)?;
    }
    if note.content.window_start > note.content.window_end {
        return Err(crate::DbError::Invalid {
            what: "reflection window",
            detail: format!(
                "starts {} after it ends {}",
                note.content.window_start, note.content.window_end
            ),
        });
    }
    let c = &note.content;
    if c.held.len() > crate::MAX_HELD_PER_NOTE {
        return Err(crate::DbError::Bound {
            field: "held lessons",
            actual: c.held.len(),
            min: 0,
            max: crate::MAX_HELD_PER_NOTE,
        });
    }
    for held in &c.held {
        crate::codec::check_len("held lesson", &held.text, 1, types::MAX_LESSONS_CHARS)?;
        crate::codec::check_len(
            "held lesson reasons",
            &serde_json::Value::from(held.reasons.clone()).to_string(),
            0,
            crate::MAX_HELD_REASONS_CHARS,
        )?;
    }
    crate::codec::observations_json(c)?;
    let tokens = |what, v: Option<u64>| v.map(|v| crate::codec::u64_to_i64(what, v)).transpose();
    Ok((
        crate::codec::to_signed("trades_considered", c.trades_considered)?,
        tokens("input_tokens", c.input_tokens)?,
        tokens("output_tokens", c.output_tokens)?,
    ))
}

/// The note accepting `held` (a bullet of `source`) at `at` writes, given the scope's active
/// note: the text descending from `source` — the active note when it has `source`'s window,
/// none when the active note is older (`source` is pending review) — with the bullet appended.
pub(crate) fn accepted_note(
    held: &crate::StoredHeldLesson,
    source: &types::ReflectionNote,
    active: Option<&types::ReflectionNote>,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<crate::NewNote, crate::DbError> {
    let invalid = |detail: String| crate::DbError::Invalid {
        what: "held lesson",
        detail,
    };
    let src = &source.content;
    if at < source.generated_at {
        return Err(invalid(format!(
            "{} cannot be accepted at {at}, before its note {} was generated at {}",
            held.id, source.id, source.generated_at
        )));
    }
    let base = match active {
        None => None,
        Some(a) => {
            let in_force = a.accepted_at.unwrap_or(a.generated_at);
            let same_window = a.content.window_start == src.window_start
                && a.content.window_end == src.window_end;
            if !same_window
                && (a.content.window_end > src.window_end || a.generated_at > source.generated_at)
            {
                return Err(crate::DbError::Conflict {
                    what: "held lesson",
                    detail: format!(
                        "{}: a newer reflection's note {} (window ending {}) replaced note {}; \
                         the bullet can only be rejected",
                        held.id, a.id, a.content.window_end, source.id
                    ),
                });
            }
            if in_force > at {
                return Err(invalid(format!(
                    "{} cannot be accepted at {at}, before the note in force {} (from {in_force})",
                    held.id, a.id
                )));
            }
            same_window.then_some(a.content.lessons_text.as_str())
        }
    };
    let lessons_text = match base {
        Some(text) => format!("{}\n{}", text.trim_end(), held.text),
        None => held.text.clone(),
    };
    let chars = lessons_text.chars().count();
    if chars > types::MAX_LESSONS_CHARS {
        return Err(invalid(format!(
            "{}: the lessons with it would be {chars} characters, over {}",
            held.id,
            types::MAX_LESSONS_CHARS
        )));
    }
    Ok(crate::NewNote {
        id: crate::accepted_note_id(held.id),
        skill_id: source.skill_id,
        skill_version: source.skill_version,
        deployment_id: source.deployment_id,
        generated_at: at,
        content: types::NoteContent {
            lessons_text,
            // A person's review called no model.
            input_tokens: Some(0),
            output_tokens: Some(0),
            cost_usd: Some(rust_decimal::Decimal::ZERO),
            held: Vec::new(),
            ..src.clone()
        },
        lint: None,
    })
}

/// Binds a note scope's parameters (`$1`, and `$2` for a skill scope; see
/// [`scope_filter`]).
fn bind_scope<D: Dialect>(q: Query<'_, D>, scope: NoteScope) -> Query<'_, D> {
    match scope {
        NoteScope::Deployment(d) => q.bind(D::id(d)),
        NoteScope::Skill {
            skill_id,
            skill_version,
        } => q.bind(D::id(skill_id)).bind(skill_version),
    }
}

/// One attempt at insert-and-supersede; a concurrent winner makes it fail with the
/// active-note unique violation, and the caller retries.
async fn try_insert_note<S: Backend<Db = D>, D: Dialect>(
    store: &S,
    note: &NewNote,
    counts: NoteCounts,
) -> Result<ReflectionNote, DbError> {
    let mut tx = store.begin().await.map_err(ctx("beginning note insert"))?;
    let stored = insert_note_in(&mut tx, note, counts).await?;
    tx.commit()
        .await
        .map_err(ctx("committing reflection note"))?;
    Ok(stored)
}

/// Inserts `note` in `tx`, superseding the scope's active note (see
/// [`NoteStore::insert_note`]); the caller commits.
pub(crate) async fn insert_note_in<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    note: &NewNote,
    counts: NoteCounts,
) -> Result<ReflectionNote, DbError> {
    let (trades_considered, input_tokens, output_tokens) = counts;
    let scope = note.scope();
    let (filter, next) = scope_filter(scope);
    // A flagged note waits for review and displaces nothing.
    let pending = note.lint.is_some();

    // Write first (takes the write lock on SQLite, the row lock on PostgreSQL).
    let supersede = format!(
        "UPDATE reflection_notes SET status = 'superseded', superseded_at = ${next} \
         WHERE {filter} AND status = 'active' AND generated_at <= ${next} RETURNING id"
    );
    let old = if pending {
        Vec::new()
    } else {
        bind_scope(query(&supersede), scope)
            .bind(D::ts(note.generated_at))
            .fetch_all(&mut **tx)
            .await
            .map_err(ctx("superseding active note"))?
    };
    if old.is_empty() && !pending {
        let newer = format!(
            "SELECT id FROM reflection_notes WHERE {filter} AND status = 'active' \
             AND generated_at > ${next}"
        );
        let newer = bind_scope(query(&newer), scope)
            .bind(D::ts(note.generated_at))
            .fetch_optional(&mut **tx)
            .await
            .map_err(ctx("checking for a newer note"))?;
        if let Some(row) = newer {
            return Err(DbError::Invalid {
                what: "reflection note",
                detail: format!(
                    "generated at {} but the active note {} is newer",
                    note.generated_at,
                    codec::RowExt::uuid(&row, "id")?
                ),
            });
        }
    }
    query(
        "INSERT INTO reflection_notes (id, skill_id, skill_version, deployment_id, status, \
         generated_at, window_start, window_end, trades_considered, lessons_text, model_used, \
         input_tokens, output_tokens, cost_usd, lint_flagged, lint_reason, created_at, \
         observations) \
         VALUES ($1, $2, $3, $4, $17, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $18)",
    )
    .bind(D::id(note.id))
    .bind(D::id(note.skill_id))
    .bind(note.skill_version)
    .bind(D::oid(note.deployment_id))
    .bind(D::ts(note.generated_at))
    .bind(D::ts(note.content.window_start))
    .bind(D::ts(note.content.window_end))
    .bind(trades_considered)
    .bind(&note.content.lessons_text)
    .bind(&note.content.model_used)
    .bind(input_tokens)
    .bind(output_tokens)
    .bind(D::odec(note.content.cost_usd))
    .bind(note.lint.is_some())
    .bind(note.lint.as_ref().map(|l| l.reason.as_str()))
    .bind(D::ts(Utc::now()))
    .bind(if pending { "pending_review" } else { "active" })
    .bind(codec::observations_json(&note.content)?.map(Json))
    .execute(&mut **tx)
    .await
    .map_err(ctx("inserting reflection note"))?;
    crate::imp::alerts::write_held_alert(tx, note).await?;
    let created = Utc::now();
    for (position, held) in (0u32..).zip(&note.content.held) {
        query(
            "INSERT INTO held_lessons (id, note_id, position, text, reasons, status, created_at) \
             VALUES ($1, $2, $3, $4, $5, 'pending', $6)",
        )
        .bind(D::id(crate::held_lesson_id(note.id, position)))
        .bind(D::id(note.id))
        .bind(codec::to_signed::<u32, i32>("position", position)?)
        .bind(&held.text)
        .bind(Json(&held.reasons))
        .bind(D::ts(created))
        .execute(&mut **tx)
        .await
        .map_err(ctx("inserting held lesson"))?;
    }

    for row in &old {
        query("UPDATE reflection_notes SET superseded_by = $1 WHERE id = $2")
            .bind(D::id(note.id))
            .bind(D::id(codec::RowExt::uuid(row, "id")?))
            .execute(&mut **tx)
            .await
            .map_err(ctx("linking superseded note"))?;
    }
    Ok(ReflectionNote {
        id: note.id,
        skill_id: note.skill_id,
        skill_version: note.skill_version,
        deployment_id: note.deployment_id,
        status: if pending {
            types::NoteStatus::PendingReview
        } else {
            types::NoteStatus::Active
        },
        generated_at: note.generated_at,
        content: note.content.clone(),
        lint: note.lint.clone(),
        superseded_at: None,
        superseded_by: None,
        accepted_at: None,
        accepted_by: None,
    })
}

/// `notes` with their held bullets (`content.held`, in position order), read in one
/// query.
async fn with_held<S: Backend<Db = D>, D: Dialect>(
    store: &S,
    mut notes: Vec<ReflectionNote>,
) -> Result<Vec<ReflectionNote>, DbError> {
    if notes.is_empty() {
        return Ok(notes);
    }
    let params: Vec<String> = (1..=notes.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "SELECT note_id, text, reasons FROM held_lessons WHERE note_id IN ({}) \
         ORDER BY note_id, position",
        params.join(", ")
    );
    let mut q = query(&sql);
    for n in &notes {
        q = q.bind(D::id(n.id));
    }
    let rows = q
        .fetch_all(store.pool())
        .await
        .map_err(ctx("reading held lessons"))?;
    let mut held: HashMap<Uuid, Vec<types::HeldLesson>> = HashMap::new();
    for row in &rows {
        use codec::RowExt as _;
        held.entry(row.uuid("note_id")?)
            .or_default()
            .push(types::HeldLesson {
                text: row.text("text")?,
                reasons: row.json("reasons")?,
            });
    }
    for n in &mut notes {
        n.content.held = held.remove(&n.id).unwrap_or_default();
    }
    Ok(notes)
}

/// One attempt at [`NoteStore::review_held_lesson`]; a concurrent note of the scope
/// makes it fail with the active-note unique violation, and the caller retries.
async fn try_review_held<S: Backend<Db = D>, D: Dialect>(
    store: &S,
    id: Uuid,
    decision: HeldDecision,
    by: &str,
    reason: Option<&str>,
    at: DateTime<Utc>,
) -> Result<StoredHeldLesson, DbError> {
    let mut tx = store
        .begin()
        .await
        .map_err(ctx("beginning held lesson review"))?;
    let row = query(&format!("{HELD_SELECT} WHERE h.id = $1"))
        .bind(D::id(id))
        .fetch_optional(&mut *tx)
        .await
        .map_err(ctx("reading held lesson"))?
        .ok_or_else(|| DbError::not_found("held lesson", id))?;
    let held = codec::held_from_row(&row)?;
    if held.status != HeldStatus::Pending {
        return Err(DbError::Conflict {
            what: "held lesson",
            detail: format!(
                "{id} was already {} by {} at {}",
                held.status.as_str(),
                held.reviewed_by.as_deref().unwrap_or("?"),
                held.reviewed_at.map(codec::time_text).unwrap_or_default()
            ),
        });
    }
    let status = match decision {
        HeldDecision::Accept => HeldStatus::Accepted,
        HeldDecision::Reject => HeldStatus::Rejected,
    };
    // Claims the row (its row lock on PostgreSQL): a concurrent review finds it done.
    let claimed = query(
        "UPDATE held_lessons SET status = $2, reviewed_at = $3, reviewed_by = $4, \
         review_reason = $5 WHERE id = $1 AND status = 'pending'",
    )
    .bind(D::id(id))
    .bind(status.as_str())
    .bind(D::ts(at))
    .bind(by)
    .bind(reason)
    .execute(&mut *tx)
    .await
    .map_err(ctx("reviewing held lesson"))?;
    if claimed.rows_affected() == 0 {
        return Err(DbError::Conflict {
            what: "held lesson",
            detail: format!("{id} was reviewed meanwhile"),
        });
    }
    let resulting_note_id = match decision {
        HeldDecision::Reject => None,
        HeldDecision::Accept => {
            let row = query("SELECT * FROM reflection_notes WHERE id = $1")
                .bind(D::id(held.note_id))
                .fetch_one(&mut *tx)
                .await
                .map_err(ctx("reading the held lesson's note"))?;
            let source = codec::note_from_row(&row)?;
            let scope = match source.deployment_id {
                Some(d) => NoteScope::Deployment(d),
                None => NoteScope::Skill {
                    skill_id: source.skill_id,
                    skill_version: source.skill_version,
                },
            };
            let (filter, _) = scope_filter(scope);
            let active =
                format!("SELECT * FROM reflection_notes WHERE {filter} AND status = 'active'");
            let active = bind_scope(query(&active), scope)
                .fetch_optional(&mut *tx)
                .await
                .map_err(ctx("reading the active note"))?
                .as_ref()
                .map(codec::note_from_row)
                .transpose()?;
            let note = accepted_note(&held, &source, active.as_ref(), at)?;
            let counts = validate_note(&note)?;
            insert_note_in(&mut tx, &note, counts).await?;
            query("UPDATE held_lessons SET resulting_note_id = $1 WHERE id = $2")
                .bind(D::id(note.id))
                .bind(D::id(id))
                .execute(&mut *tx)
                .await
                .map_err(ctx("linking the accepted note"))?;
            Some(note.id)
        }
    };
    tx.commit()
        .await
        .map_err(ctx("committing held lesson review"))?;
    Ok(StoredHeldLesson {
        status,
        reviewed_at: Some(at),
        reviewed_by: Some(by.to_owned()),
        review_reason: reason.map(str::to_owned),
        resulting_note_id,
        ..held
    })
}

/// Inserts `run` through `conn` (the pool, or a transaction's connection): see
/// [`NoteStore::record_reflection_run`].
pub(crate) async fn insert_run_in<D: Dialect>(
    conn: impl On<D>,
    run: &ReflectionRun,
) -> Result<(), DbError> {
    let (outcome, error, note_id) = match &run.outcome {
        RunOutcome::Succeeded { note_id } => ("succeeded", None, *note_id),
        RunOutcome::Failed { error } => (
            "failed",
            Some(codec::truncate_chars(error, types::MAX_STORED_ERROR_CHARS)),
            None,
        ),
    };
    query(
        "INSERT INTO reflection_runs (id, skill_id, skill_version, deployment_id, started_at, \
         finished_at, outcome, error, note_id, model, input_tokens, output_tokens, cost_usd) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(D::id(run.id))
    .bind(D::id(run.skill_id))
    .bind(run.skill_version)
    .bind(D::oid(run.deployment_id))
    .bind(D::ts(run.started_at))
    .bind(D::ts(run.finished_at))
    .bind(outcome)
    .bind(error)
    .bind(D::oid(note_id))
    .bind(&run.model)
    .bind(run.input_tokens)
    .bind(run.output_tokens)
    .bind(D::odec(run.cost_usd))
    .execute(conn)
    .await
    .map_err(ctx("inserting reflection run"))?;
    Ok(())
}

impl<S: Backend<Db = D>, D: Dialect> NoteStore for S {
    async fn insert_note(&self, note: &NewNote) -> Result<ReflectionNote, DbError> {
        let counts = validate_note(note)?;
        for _ in 0..NOTE_INSERT_ATTEMPTS {
            match try_insert_note(self, note, counts).await {
                Err(e) if is_active_note_conflict(&e) => continue,
                other => return other,
            }
        }
        Err(DbError::Contention {
            context: "inserting reflection note",
            attempts: NOTE_INSERT_ATTEMPTS,
        })
    }

    async fn get_note(&self, id: Uuid) -> Result<ReflectionNote, DbError> {
        let row = query("SELECT * FROM reflection_notes WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading note"))?
            .ok_or_else(|| DbError::not_found("reflection note", id))?;
        with_held(self, vec![codec::note_from_row(&row)?])
            .await?
            .pop()
            .ok_or_else(|| DbError::not_found("reflection note", id))
    }

    async fn accept_note(
        &self,
        id: Uuid,
        by: &str,
        at: DateTime<Utc>,
    ) -> Result<ReflectionNote, DbError> {
        let by = checked_reviewer(by)?;
        let mut tx = self.begin().await.map_err(ctx("beginning note accept"))?;
        let row = query("SELECT * FROM reflection_notes WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(&mut *tx)
            .await
            .map_err(ctx("reading note"))?
            .ok_or_else(|| DbError::not_found("reflection note", id))?;
        let note = codec::note_from_row(&row)?;
        if note.status != types::NoteStatus::PendingReview {
            return Err(DbError::Conflict {
                what: "reflection note",
                detail: format!("{id} is {}, not pending review", note.status.as_str()),
            });
        }
        let scope = match note.deployment_id {
            Some(d) => NoteScope::Deployment(d),
            None => NoteScope::Skill {
                skill_id: note.skill_id,
                skill_version: note.skill_version,
            },
        };
        let (filter, next) = scope_filter(scope);
        let supersede = format!(
            "UPDATE reflection_notes SET status = 'superseded', superseded_at = ${next}, \
             superseded_by = ${} WHERE {filter} AND status = 'active'",
            next + 1
        );
        bind_scope(query(&supersede), scope)
            .bind(D::ts(at))
            .bind(D::id(id))
            .execute(&mut *tx)
            .await
            .map_err(ctx("superseding active note"))?;
        query(
            "UPDATE reflection_notes SET status = 'active', accepted_at = $1, accepted_by = $3 \
             WHERE id = $2",
        )
        .bind(D::ts(at))
        .bind(D::id(id))
        .bind(by)
        .execute(&mut *tx)
        .await
        .map_err(ctx("accepting note"))?;
        // The note carries its held bullets: those still waiting are accepted with it.
        query(
            "UPDATE held_lessons SET status = 'accepted', reviewed_at = $2, reviewed_by = $3, \
             resulting_note_id = $1 WHERE note_id = $1 AND status = 'pending'",
        )
        .bind(D::id(id))
        .bind(D::ts(at))
        .bind(by)
        .execute(&mut *tx)
        .await
        .map_err(ctx("accepting the note's held lessons"))?;
        tx.commit().await.map_err(ctx("committing note accept"))?;
        let mut accepted = with_held(self, vec![note]).await?;
        Ok(ReflectionNote {
            status: types::NoteStatus::Active,
            accepted_at: Some(at),
            accepted_by: Some(by.to_owned()),
            ..accepted.remove(0)
        })
    }

    async fn active_note(
        &self,
        scope: NoteScope,
        as_of: DateTime<Utc>,
    ) -> Result<Option<ReflectionNote>, DbError> {
        let (filter, next) = scope_filter(scope);
        let sql = format!(
            "SELECT * FROM reflection_notes WHERE {filter} AND status <> 'pending_review' \
             AND COALESCE(accepted_at, generated_at) <= ${next} \
             ORDER BY COALESCE(accepted_at, generated_at) DESC, created_at DESC LIMIT 1"
        );
        let row = bind_scope(query(&sql), scope)
            .bind(D::ts(as_of))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading note in force"))?;
        let note = row.as_ref().map(codec::note_from_row).transpose()?;
        Ok(with_held(self, note.into_iter().collect()).await?.pop())
    }

    async fn note_history(
        &self,
        scope: NoteScope,
        limit: u32,
    ) -> Result<Vec<ReflectionNote>, DbError> {
        let (filter, next) = scope_filter(scope);
        let sql = format!(
            "SELECT * FROM reflection_notes WHERE {filter} \
             ORDER BY generated_at DESC, created_at DESC LIMIT ${next}"
        );
        let rows = bind_scope(query(&sql), scope)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(ctx("reading note history"))?;
        let notes = rows
            .iter()
            .map(codec::note_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        with_held(self, notes).await
    }

    async fn record_reflection_run(&self, run: &ReflectionRun) -> Result<(), DbError> {
        insert_run_in(self.pool(), run).await
    }

    async fn held_lessons(
        &self,
        scope: NoteScope,
        status: Option<HeldStatus>,
        limit: u32,
    ) -> Result<Vec<StoredHeldLesson>, DbError> {
        let limit = check_limit("held lessons", limit, crate::MAX_HELD_READ)?;
        let (filter, next) = scope_filter(scope);
        let (status_filter, next) = match status {
            Some(_) => (format!(" AND h.status = ${next}"), next + 1),
            None => (String::new(), next),
        };
        // The scope's columns are the note's: `held_lessons` has none of those names.
        let sql = format!(
            "{HELD_SELECT} WHERE {filter}{status_filter} \
             ORDER BY n.generated_at DESC, n.created_at DESC, h.note_id, h.position LIMIT ${next}"
        );
        let mut q = bind_scope(query(&sql), scope);
        if let Some(status) = status {
            q = q.bind(status.as_str());
        }
        let rows = q
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(ctx("reading held lessons"))?;
        rows.iter().map(codec::held_from_row).collect()
    }

    async fn held_lessons_by_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<StoredHeldLesson>, DbError> {
        let limit = check_limit("held lessons", limit, crate::MAX_HELD_READ)?;
        let uuid_chars = prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if prefix.is_empty() || prefix.len() > 36 || !uuid_chars {
            return Err(DbError::Invalid {
                what: "held lesson id",
                detail: format!("{prefix:?} is not the start of a uuid"),
            });
        }
        let sql = format!("{HELD_SELECT} WHERE CAST(h.id AS TEXT) LIKE $1 ORDER BY h.id LIMIT $2");
        let rows = query(&sql)
            .bind(format!("{}%", prefix.to_ascii_lowercase()))
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(ctx("finding held lessons"))?;
        rows.iter().map(codec::held_from_row).collect()
    }

    async fn review_held_lesson(
        &self,
        id: Uuid,
        review: &HeldReview,
    ) -> Result<StoredHeldLesson, DbError> {
        let by = checked_reviewer(&review.by)?;
        let reason = checked_review_reason(review.reason.as_deref())?;
        for _ in 0..NOTE_INSERT_ATTEMPTS {
            match try_review_held(self, id, review.decision, by, reason, review.at).await {
                Err(e) if is_active_note_conflict(&e) => continue,
                other => return other,
            }
        }
        Err(DbError::Contention {
            context: "reviewing held lesson",
            attempts: NOTE_INSERT_ATTEMPTS,
        })
    }

    async fn reflection_runs(
        &self,
        scope: NoteScope,
        limit: u32,
    ) -> Result<Vec<ReflectionRun>, DbError> {
        let (filter, next) = scope_filter(scope);
        let sql = format!(
            "SELECT * FROM reflection_runs WHERE {filter} ORDER BY started_at DESC, id LIMIT ${next}"
        );
        let rows = bind_scope(query(&sql), scope)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(ctx("reading reflection runs"))?;
        rows.iter().map(codec::run_from_row).collect()
    }
}
