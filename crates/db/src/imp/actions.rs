//! `ActionStore`: pending actions kept for their owner's decision; a confirmation applies the
//! change in the transaction that marks the action confirmed.
//!
//! A decision first claims the row with a conditional `UPDATE … WHERE status = 'pending' AND
//! expires_at > at` (its row lock on PostgreSQL; SQLite's write lock is the transaction's), so
//! two concurrent decisions of one action cannot both apply it: the second finds it decided.
//! Every read and decision is keyed by the owner too, so on SQLite a wrong owner finds nothing;
//! on PostgreSQL as a user row-level security hides another user's actions as well.

use chrono::{DateTime, Utc};
use sqlx::Transaction;
use sqlx::types::Json;
use uuid::Uuid;

use super::controls::control_in;
use super::{Affected as _, Backend, Dialect, query};
use crate::codec::{RowExt, check_len, check_limit, enum_col, time_text, truncate_chars};
use crate::control::has_control_char;
use crate::error::ctx;
use crate::traits::ActionStore;
use crate::{
    ActionKind, ActionResult, ActionStatus, ControlRequest, DbError, MAX_ACTION_ARGUMENTS_BYTES,
    MAX_ACTION_ERROR_CHARS, MAX_ACTION_SUMMARY_CHARS, MAX_ACTIONS_READ, MAX_CONTROL_REASON_CHARS,
    NewPendingAction, PendingAction,
};

/// Longest model id a saved skill version may name (the skill document's `model`), in
/// characters.
const MAX_MODEL_CHARS: usize = 200;

fn action_from_row<R: RowExt>(r: &R) -> Result<PendingAction, DbError> {
    Ok(PendingAction {
        id: r.uuid("id")?,
        user_id: r.uuid("user_id")?,
        conversation_id: r.opt_uuid("conversation_id")?,
        kind: enum_col(r, "kind", ActionKind::parse)?,
        deployment_id: r.opt_uuid("deployment_id")?,
        skill_id: r.opt_uuid("skill_id")?,
        arguments: r.json("arguments")?,
        summary: r.text("summary")?,
        created_at: r.ts("created_at")?,
        expires_at: r.ts("expires_at")?,
        status: enum_col(r, "status", ActionStatus::parse)?,
        decided_at: r.opt_ts("decided_at")?,
        decided_by: r.opt_text("decided_by")?,
        result: r.opt_json("result")?,
        error: r.opt_text("error")?,
    })
}

fn invalid(what: &'static str, detail: impl Into<String>) -> DbError {
    DbError::Invalid {
        what,
        detail: detail.into(),
    }
}

/// A one-line text of 1..=`max` characters without control characters.
fn check_line(what: &'static str, s: &str, max: usize) -> Result<(), DbError> {
    check_len(what, s, 1, max)?;
    if has_control_char(s) {
        return Err(invalid(
            what,
            "a control character (a NUL, a line break, ...) is not allowed",
        ));
    }
    Ok(())
}

/// The arguments' shape for `kind` (see [`NewPendingAction::arguments`]).
fn check_arguments(kind: ActionKind, arguments: &serde_json::Value) -> Result<(), DbError> {
    let Some(object) = arguments.as_object() else {
        return Err(invalid("action arguments", "not a JSON object"));
    };
    let bytes = arguments.to_string().len();
    if bytes > MAX_ACTION_ARGUMENTS_BYTES {
        return Err(DbError::Bound {
            field: "action arguments (bytes of JSON)",
            actual: bytes,
            min: 2,
            max: MAX_ACTION_ARGUMENTS_BYTES,
        });
    }
    for (key, value) in object {
        match (key.as_str(), kind) {
            ("reason", _) => {
                let reason = value
                    .as_str()
                    .ok_or_else(|| invalid("action arguments", "reason: not a string"))?;
                check_line("action reason", reason, MAX_CONTROL_REASON_CHARS)?;
            }
            ("flatten", ActionKind::StopDeployment) => {
                if !value.is_boolean() {
                    return Err(invalid("action arguments", "flatten: not a boolean"));
                }
            }
            ("skill", ActionKind::SaveSkillVersion) => {
                let model = value
                    .as_object()
                    .and_then(|skill| skill.get("model"))
                    .and_then(serde_json::Value::as_str)
                    .ok_or_else(|| {
                        invalid(
                            "action arguments",
                            "skill: not a skill document (an object with a model)",
                        )
                    })?;
                check_len("skill model", model, 1, MAX_MODEL_CHARS)?;
            }
            (other, _) => {
                return Err(invalid(
                    "action arguments",
                    format!("{other:?} is not an argument of {}", kind.as_str()),
                ));
            }
        }
    }
    if kind == ActionKind::SaveSkillVersion && !object.contains_key("skill") {
        return Err(invalid(
            "action arguments",
            "save_skill_version needs the skill document in skill",
        ));
    }
    Ok(())
}

/// A new action's own problems, before anything is written.
fn check_new(a: &NewPendingAction) -> Result<(), DbError> {
    check_line("action summary", &a.summary, MAX_ACTION_SUMMARY_CHARS)?;
    if a.expires_at <= a.created_at {
        return Err(invalid(
            "action expiry",
            format!(
                "expires at {}, not after it was prepared ({})",
                time_text(a.expires_at),
                time_text(a.created_at)
            ),
        ));
    }
    match (a.kind, a.deployment_id, a.skill_id) {
        (ActionKind::SaveSkillVersion, None, Some(_)) => {}
        (ActionKind::SaveSkillVersion, _, _) => {
            return Err(invalid(
                "action target",
                "save_skill_version names a skill and no deployment",
            ));
        }
        (_, Some(_), None) => {}
        (kind, _, _) => {
            return Err(invalid(
                "action target",
                format!("{} names a deployment and no skill", kind.as_str()),
            ));
        }
    }
    check_arguments(a.kind, &a.arguments)
}

/// The reason a confirmed control is audited with: the action's id, then the reason it was
/// prepared with, on one line, cut to the control's bound.
fn control_reason(action: &PendingAction) -> String {
    let mut reason = format!("chat action {}", action.id);
    if let Some(why) = action.reason() {
        reason.push_str(": ");
        reason.extend(why.chars().map(|c| if c.is_control() { ' ' } else { c }));
    }
    truncate_chars(&reason, MAX_CONTROL_REASON_CHARS)
}

/// Saves the action's skill document as the next version of its skill, which must be
/// `user_id`'s; the version number given.
async fn save_version_in<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    user_id: Uuid,
    skill_id: Uuid,
    action: &PendingAction,
    at: DateTime<Utc>,
) -> Result<i32, DbError> {
    let owner = query("SELECT user_id FROM skills WHERE id = $1")
        .bind(D::id(skill_id))
        .fetch_optional(&mut **tx)
        .await
        .map_err(ctx("reading the action's skill"))?;
    match owner {
        Some(row) if row.uuid("user_id")? == user_id => {}
        _ => return Err(DbError::not_found("skill of the user", skill_id)),
    }
    let next = query(
        "SELECT coalesce(max(version), 0) + 1 AS next FROM skill_versions WHERE skill_id = $1",
    )
    .bind(D::id(skill_id))
    .fetch_one(&mut **tx)
    .await
    .map_err(ctx("numbering the skill's next version"))?
    .int("next")?;
    let mut body = action
        .arguments
        .get("skill")
        .cloned()
        .ok_or_else(|| invalid("action arguments", "no skill document"))?;
    let model = body
        .get("model")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| invalid("action arguments", "the skill document names no model"))?;
    if let Some(doc) = body.as_object_mut() {
        doc.insert("version".to_owned(), serde_json::Value::from(next));
    }
    query(
        "INSERT INTO skill_versions (skill_id, version, body, model, created_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(D::id(skill_id))
    .bind(next)
    .bind(Json(&body))
    .bind(model)
    .bind(D::ts(at))
    .execute(&mut **tx)
    .await
    .map_err(ctx("saving the skill version"))?;
    Ok(next)
}

/// Applies `action` for `user_id` at `at` in `tx`: its control (with its audit row) or its
/// skill version.
async fn apply_in<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    user_id: Uuid,
    action: &PendingAction,
    at: DateTime<Utc>,
) -> Result<ActionResult, DbError> {
    let Some(control) = action.kind.control() else {
        let skill_id = action
            .skill_id
            .ok_or_else(|| invalid("action target", "no skill to save a version of"))?;
        let version = save_version_in(tx, user_id, skill_id, action, at).await?;
        return Ok(ActionResult::SkillVersion { skill_id, version });
    };
    let deployment_id = action
        .deployment_id
        .ok_or_else(|| invalid("action target", "no deployment to control"))?;
    // The owner's deployment only (on PostgreSQL as a user, row-level security hides the others
    // too).
    let owner = query("SELECT user_id FROM deployments WHERE id = $1")
        .bind(D::id(deployment_id))
        .fetch_optional(&mut **tx)
        .await
        .map_err(ctx("reading the action's deployment"))?;
    match owner {
        Some(row) if row.uuid("user_id")? == user_id => {}
        _ => return Err(DbError::not_found("deployment of the user", deployment_id)),
    }
    let request = ControlRequest {
        id: Uuid::new_v5(&action.id, b"deployment_control"),
        deployment_id,
        action: control,
        flatten: action.kind == ActionKind::StopDeployment && action.flatten(),
        requested_by: user_id.to_string(),
        reason: Some(control_reason(action)),
        at,
    };
    let done = control_in(tx, &request).await?;
    Ok(ActionResult::Control {
        control_id: done.id,
        from_status: done.from_status,
        to_status: done.to_status,
    })
}

/// Whether a confirmation's error is the change refusing itself (the action is then marked
/// failed), rather than the store failing (the action stays pending, to be tried again).
fn refused(e: &DbError) -> bool {
    matches!(
        e,
        DbError::Transition { .. }
            | DbError::NotFound { .. }
            | DbError::Invalid { .. }
            | DbError::Bound { .. }
    )
}

/// Why the owner's action `id` cannot be decided at `at` (the claim found it not pending or
/// expired): not found, expired (marked so now if the sweep has not run), or decided already.
async fn undecidable<S: Backend<Db = D>, D: Dialect>(
    store: &S,
    user_id: Uuid,
    id: Uuid,
    at: DateTime<Utc>,
) -> DbError {
    let row = match store.action(user_id, id).await {
        Ok(row) => row,
        Err(e) => return e,
    };
    if row.status_at(at) == ActionStatus::Expired {
        if row.status == ActionStatus::Pending
            && let Err(e) = mark_expired(store, Some(id), at).await
        {
            return e;
        }
        return DbError::Conflict {
            what: "action",
            detail: format!(
                "{id} expired at {} before it was confirmed or discarded; nothing changed",
                time_text(row.expires_at)
            ),
        };
    }
    DbError::Conflict {
        what: "action",
        detail: match row.decided_at {
            Some(decided) => format!(
                "{id} was already {} at {}",
                row.status.as_str(),
                time_text(decided)
            ),
            None => format!("{id} is being decided meanwhile; try again"),
        },
    }
}

/// Marks the pending actions past their expiry at `now` (only `id` when given) expired, each at
/// its expiry; how many.
async fn mark_expired<S: Backend<Db = D>, D: Dialect>(
    store: &S,
    id: Option<Uuid>,
    now: DateTime<Utc>,
) -> Result<u64, DbError> {
    let (sql, what) = match id {
        Some(_) => (
            "UPDATE pending_actions SET status = 'expired', decided_at = expires_at \
             WHERE status = 'pending' AND expires_at <= $1 AND id = $2",
            "expiring the action",
        ),
        None => (
            "UPDATE pending_actions SET status = 'expired', decided_at = expires_at \
             WHERE status = 'pending' AND expires_at <= $1",
            "expiring pending actions",
        ),
    };
    let mut q = query(sql).bind(D::ts(now));
    if let Some(id) = id {
        q = q.bind(D::id(id));
    }
    let done = q.execute(store.pool()).await.map_err(ctx(what))?;
    Ok(done.rows_affected())
}

/// A transaction that holds the owner's action `id` for a decision at `at` (its row locked on
/// PostgreSQL, the write lock on SQLite), or why it cannot be decided ([`undecidable`]): not
/// the owner's, not pending, or expired.
async fn begin_decision<S: Backend<Db = D>, D: Dialect>(
    store: &S,
    user_id: Uuid,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Transaction<'static, D>, DbError> {
    let mut tx = store
        .begin()
        .await
        .map_err(ctx("beginning an action's decision"))?;
    let claimed = query(
        "UPDATE pending_actions SET status = status \
         WHERE id = $1 AND user_id = $2 AND status = 'pending' AND expires_at > $3",
    )
    .bind(D::id(id))
    .bind(D::id(user_id))
    .bind(D::ts(at))
    .execute(&mut *tx)
    .await
    .map_err(ctx("claiming the action"))?;
    if claimed.rows_affected() == 1 {
        return Ok(tx);
    }
    tx.rollback()
        .await
        .map_err(ctx("ending the refused decision"))?;
    Err(undecidable(store, user_id, id, at).await)
}

impl<S: Backend<Db = D>, D: Dialect> ActionStore for S {
    async fn create_pending_action(&self, a: &NewPendingAction) -> Result<PendingAction, DbError> {
        check_new(a)?;
        query(
            "INSERT INTO pending_actions (id, user_id, conversation_id, kind, deployment_id, \
             skill_id, arguments, summary, created_at, expires_at, status) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending')",
        )
        .bind(D::id(a.id))
        .bind(D::id(a.user_id))
        .bind(D::oid(a.conversation_id))
        .bind(a.kind.as_str())
        .bind(D::oid(a.deployment_id))
        .bind(D::oid(a.skill_id))
        .bind(Json(&a.arguments))
        .bind(&a.summary)
        .bind(D::ts(a.created_at))
        .bind(D::ts(a.expires_at))
        .execute(self.pool())
        .await
        .map_err(ctx("keeping a pending action"))?;
        Ok(PendingAction {
            id: a.id,
            user_id: a.user_id,
            conversation_id: a.conversation_id,
            kind: a.kind,
            deployment_id: a.deployment_id,
            skill_id: a.skill_id,
            arguments: a.arguments.clone(),
            summary: a.summary.clone(),
            created_at: a.created_at,
            expires_at: a.expires_at,
            status: ActionStatus::Pending,
            decided_at: None,
            decided_by: None,
            result: None,
            error: None,
        })
    }

    async fn pending_actions(
        &self,
        user_id: Uuid,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<PendingAction>, DbError> {
        let limit = check_limit("actions limit", limit, MAX_ACTIONS_READ)?;
        let rows = query(
            "SELECT * FROM pending_actions \
             WHERE user_id = $1 AND status = 'pending' AND expires_at > $2 \
             ORDER BY created_at DESC, id LIMIT $3",
        )
        .bind(D::id(user_id))
        .bind(D::ts(now))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("listing pending actions"))?;
        rows.iter().map(action_from_row).collect()
    }

    async fn actions(&self, user_id: Uuid, limit: u32) -> Result<Vec<PendingAction>, DbError> {
        let limit = check_limit("actions limit", limit, MAX_ACTIONS_READ)?;
        let rows = query(
            "SELECT * FROM pending_actions WHERE user_id = $1 \
             ORDER BY created_at DESC, id LIMIT $2",
        )
        .bind(D::id(user_id))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("listing actions"))?;
        rows.iter().map(action_from_row).collect()
    }

    async fn action(&self, user_id: Uuid, id: Uuid) -> Result<PendingAction, DbError> {
        let row = query("SELECT * FROM pending_actions WHERE id = $1 AND user_id = $2")
            .bind(D::id(id))
            .bind(D::id(user_id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading an action"))?
            .ok_or_else(|| DbError::not_found("action", id))?;
        action_from_row(&row)
    }

    async fn confirm_action(
        &self,
        user_id: Uuid,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<PendingAction, DbError> {
        let mut tx = begin_decision(self, user_id, id, at).await?;
        let row = query("SELECT * FROM pending_actions WHERE id = $1")
            .bind(D::id(id))
            .fetch_one(&mut *tx)
            .await
            .map_err(ctx("reading the action"))?;
        let action = action_from_row(&row)?;
        let decided_by = user_id.to_string();
        match apply_in(&mut tx, user_id, &action, at).await {
            Ok(result) => {
                query(
                    "UPDATE pending_actions SET status = 'confirmed', decided_at = $2, \
                     decided_by = $3, result = $4 WHERE id = $1 AND status = 'pending'",
                )
                .bind(D::id(id))
                .bind(D::ts(at))
                .bind(decided_by.as_str())
                .bind(Json(&result))
                .execute(&mut *tx)
                .await
                .map_err(ctx("confirming the action"))?;
                tx.commit()
                    .await
                    .map_err(ctx("committing the action's confirmation"))?;
                Ok(PendingAction {
                    status: ActionStatus::Confirmed,
                    decided_at: Some(at),
                    decided_by: Some(decided_by),
                    result: Some(result),
                    ..action
                })
            }
            Err(e) if refused(&e) => {
                tx.rollback()
                    .await
                    .map_err(ctx("undoing the refused change"))?;
                let error = truncate_chars(&e.to_string(), MAX_ACTION_ERROR_CHARS);
                query(
                    "UPDATE pending_actions SET status = 'failed', decided_at = $3, \
                     decided_by = $4, error = $5 \
                     WHERE id = $1 AND user_id = $2 AND status = 'pending'",
                )
                .bind(D::id(id))
                .bind(D::id(user_id))
                .bind(D::ts(at))
                .bind(decided_by.as_str())
                .bind(error)
                .execute(self.pool())
                .await
                .map_err(ctx("marking the action failed"))?;
                Err(DbError::Conflict {
                    what: "action",
                    detail: format!("{id} failed and changed nothing: {e}"),
                })
            }
            Err(e) => Err(e),
        }
    }

    async fn discard_action(
        &self,
        user_id: Uuid,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<PendingAction, DbError> {
        let mut tx = begin_decision(self, user_id, id, at).await?;
        let decided_by = user_id.to_string();
        let row = query(
            "UPDATE pending_actions SET status = 'discarded', decided_at = $2, decided_by = $3 \
             WHERE id = $1 AND status = 'pending' RETURNING *",
        )
        .bind(D::id(id))
        .bind(D::ts(at))
        .bind(decided_by.as_str())
        .fetch_one(&mut *tx)
        .await
        .map_err(ctx("discarding the action"))?;
        let action = action_from_row(&row)?;
        tx.commit()
            .await
            .map_err(ctx("committing the action's discard"))?;
        Ok(action)
    }

    async fn expire_actions(&self, now: DateTime<Utc>) -> Result<u64, DbError> {
        mark_expired(self, None, now).await
    }
}
