//! `ControlStore`: pause, resume and stop a deployment, each change with its audit row in one
//! transaction.
//!
//! A transition is a conditional `UPDATE … WHERE status = <from>` for each status the action may
//! start from ([`ControlAction::from_statuses`]), so two concurrent controls cannot both move
//! the same deployment: the second finds the status changed and is refused with the status it
//! found. On PostgreSQL as a user the update is also filtered by row-level security (another
//! user's deployment is not found) and the audit row must name the user.

use sqlx::Transaction;
use uuid::Uuid;

use super::{Affected as _, Backend, Dialect, query};
use crate::codec::{self, RowExt as _, check_len, check_limit};
use crate::control::has_control_char;
use crate::error::ctx;
use crate::traits::ControlStore;
use crate::{
    ControlAction, ControlRequest, DbError, DeploymentControl, DeploymentStatus, FlattenState,
    MAX_CONTROL_REASON_CHARS, MAX_CONTROLS_READ, MAX_REQUESTED_BY_CHARS,
};

/// The request's own problems, before anything is read.
fn check_request(request: &ControlRequest) -> Result<(), DbError> {
    if request.flatten && request.action != ControlAction::Stop {
        return Err(DbError::Invalid {
            what: "flatten",
            detail: format!(
                "closing the positions goes with a stop, not a {}",
                request.action.as_str()
            ),
        });
    }
    check_len(
        "requested_by",
        &request.requested_by,
        1,
        MAX_REQUESTED_BY_CHARS,
    )?;
    if has_control_char(&request.requested_by) {
        return Err(DbError::Invalid {
            what: "requested_by",
            detail: "a control character (a NUL, a line break, ...) is not allowed".to_owned(),
        });
    }
    if let Some(reason) = &request.reason {
        check_len("reason", reason, 1, MAX_CONTROL_REASON_CHARS)?;
        if has_control_char(reason) {
            return Err(DbError::Invalid {
                what: "reason",
                detail: "a control character (a NUL, a line break, ...) is not allowed".to_owned(),
            });
        }
    }
    Ok(())
}

/// Why `action` is refused on a deployment in `current` (whose flatten was or was not
/// requested).
fn refusal(
    action: ControlAction,
    current: DeploymentStatus,
    flatten_requested: bool,
) -> &'static str {
    use ControlAction::{Pause, Resume, Stop};
    use DeploymentStatus::{Active, Paused, Stopped};
    match (action, current) {
        (_, Stopped) if action != Stop => "a stopped deployment is final",
        (Stop, Stopped) if flatten_requested => "closing its positions was already requested",
        (Stop, Stopped) => {
            "it is already stopped; a stop with flatten may still close its positions"
        }
        (Pause, Paused) => "it is already paused",
        (Resume, Active) => "it is not paused",
        (Pause | Resume, _) | (Stop, Active | Paused) => "its status changed meanwhile; try again",
    }
}

/// Applies `request` in `tx` and writes its audit row (see
/// [`ControlStore::control_deployment`]); the caller commits. What a confirmed pending action
/// runs too, in its own transaction.
pub(crate) async fn control_in<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    request: &ControlRequest,
) -> Result<DeploymentControl, DbError> {
    check_request(request)?;
    let id = request.deployment_id;
    let to = request.action.to_status();
    let flatten_at = request.flatten.then_some(request.at);
    let mut from = None;
    for &status in request.action.from_statuses() {
        let changed = match (request.action, status) {
            // A stopped deployment stays stopped; a stop with flatten may still ask for its
            // positions to be closed, once.
            (ControlAction::Stop, DeploymentStatus::Stopped) if !request.flatten => continue,
            (ControlAction::Stop, DeploymentStatus::Stopped) => query(
                "UPDATE deployments SET flatten_requested_at = $2 \
                 WHERE id = $1 AND status = 'stopped' AND flatten_requested_at IS NULL",
            )
            .bind(D::id(id))
            .bind(D::ts(request.at))
            .execute(&mut **tx)
            .await
            .map_err(ctx("requesting the deployment's flatten"))?,
            (ControlAction::Stop, _) => query(
                "UPDATE deployments SET status = 'stopped', flatten_requested_at = $3 \
                 WHERE id = $1 AND status = $2",
            )
            .bind(D::id(id))
            .bind(status.as_str())
            .bind(D::ots(flatten_at))
            .execute(&mut **tx)
            .await
            .map_err(ctx("stopping the deployment"))?,
            _ => query("UPDATE deployments SET status = $3 WHERE id = $1 AND status = $2")
                .bind(D::id(id))
                .bind(status.as_str())
                .bind(to.as_str())
                .execute(&mut **tx)
                .await
                .map_err(ctx("changing the deployment's status"))?,
        };
        if changed.rows_affected() == 1 {
            from = Some(status);
            break;
        }
    }
    let Some(from) = from else {
        let row = query("SELECT status, flatten_requested_at FROM deployments WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(&mut **tx)
            .await
            .map_err(ctx("reading the deployment's status"))?
            .ok_or_else(|| DbError::not_found("deployment", id))?;
        let current =
            DeploymentStatus::parse(&row.text("status")?).ok_or_else(|| DbError::Decode {
                column: "status".to_owned(),
                detail: "not a deployment status".to_owned(),
            })?;
        let flatten_requested = row.opt_ts("flatten_requested_at")?.is_some();
        return Err(DbError::Transition {
            deployment_id: id,
            action: request.action,
            current,
            why: refusal(request.action, current, flatten_requested),
        });
    };
    query(
        "INSERT INTO deployment_controls (id, deployment_id, action, flatten, requested_by, \
         reason, requested_at, from_status, to_status) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(D::id(request.id))
    .bind(D::id(id))
    .bind(request.action.as_str())
    .bind(request.flatten)
    .bind(request.requested_by.as_str())
    .bind(request.reason.as_deref())
    .bind(D::ts(request.at))
    .bind(from.as_str())
    .bind(to.as_str())
    .execute(&mut **tx)
    .await
    .map_err(ctx("auditing the deployment control"))?;
    Ok(DeploymentControl {
        id: request.id,
        deployment_id: id,
        action: request.action,
        flatten: request.flatten,
        requested_by: request.requested_by.clone(),
        reason: request.reason.clone(),
        requested_at: request.at,
        from_status: from,
        to_status: to,
    })
}

impl<S: Backend<Db = D>, D: Dialect> ControlStore for S {
    async fn control_deployment(
        &self,
        request: &ControlRequest,
    ) -> Result<DeploymentControl, DbError> {
        check_request(request)?;
        let mut tx = self
            .begin()
            .await
            .map_err(ctx("beginning a deployment control"))?;
        let done = control_in(&mut tx, request).await?;
        tx.commit()
            .await
            .map_err(ctx("committing the deployment control"))?;
        Ok(done)
    }

    async fn deployment_controls(
        &self,
        deployment_id: Uuid,
        limit: u32,
    ) -> Result<Vec<DeploymentControl>, DbError> {
        let limit = check_limit("controls limit", limit, MAX_CONTROLS_READ)?;
        let rows = query(
            "SELECT * FROM deployment_controls WHERE deployment_id = $1 \
             ORDER BY requested_at DESC, id LIMIT $2",
        )
        .bind(D::id(deployment_id))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading the deployment's controls"))?;
        rows.iter().map(codec::control_from_row).collect()
    }

    async fn flatten_state(&self, deployment_id: Uuid) -> Result<Option<FlattenState>, DbError> {
        let row = query(
            "SELECT flatten_requested_at, flatten_attempts, flatten_retry_at, flatten_error, \
             flattened_at FROM deployments WHERE id = $1",
        )
        .bind(D::id(deployment_id))
        .fetch_optional(self.pool())
        .await
        .map_err(ctx("reading the deployment's flatten"))?
        .ok_or_else(|| DbError::not_found("deployment", deployment_id))?;
        codec::flatten_from_row(&row)
    }
}
