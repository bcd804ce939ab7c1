//! Controls from the command line: `live-runner pause|resume|stop <deployment>` (the API and
//! the pages call the same store method, [`db::ControlStore::control_deployment`], as their user).
//!
//! With `--user` the change is made as that user: on PostgreSQL under row-level security (only
//! their own deployments; the audit row names them), on SQLite by checking the deployment is
//! theirs. Without it, as the operator connecting to the database, named in the audit row as
//! `operator:<login name>`.

use chrono::{DateTime, Utc};
use db::{
    ControlAction, ControlRequest, ControlStore, DbError, DeploymentControl, RegistryStore, Store,
};
use uuid::Uuid;

/// Who asks, for the audit row: the user's id, or `operator:<login>` (`operator` when the
/// login name is unknown or not usable).
#[must_use]
pub fn requester(user: Option<Uuid>, login: Option<&str>) -> String {
    match user {
        Some(user) => user.to_string(),
        None => tick::lessons_cmd::operator_name(login),
    }
}

/// Applies `action` to `deployment` now (`at`), as `user` when given (see the module docs).
///
/// # Errors
/// The store's: [`DbError::NotFound`] for a deployment that does not exist (or is not the
/// user's), [`DbError::Transition`] when its status does not allow the action,
/// [`DbError::Bound`] / [`DbError::Invalid`] for a bad reason.
#[allow(clippy::too_many_arguments)]
pub async fn control(
    store: &Store,
    deployment: Uuid,
    action: ControlAction,
    flatten: bool,
    user: Option<Uuid>,
    login: Option<&str>,
    reason: Option<String>,
    at: DateTime<Utc>,
) -> Result<DeploymentControl, DbError> {
    let request = ControlRequest {
        id: Uuid::new_v4(),
        deployment_id: deployment,
        action,
        flatten,
        requested_by: requester(user, login),
        reason,
        at,
    };
    match (store, user) {
        (Store::Postgres(pg), Some(user)) => pg.as_user(user).control_deployment(&request).await,
        (Store::Sqlite(_), Some(user)) => {
            // One user per embedded file, no row-level security: the owner is checked here.
            let d = store.get_deployment(deployment).await?;
            if d.user_id != user {
                return Err(DbError::NotFound {
                    entity: "deployment of user",
                    id: format!("{deployment} ({user})"),
                });
            }
            store.control_deployment(&request).await
        }
        (_, None) => store.control_deployment(&request).await,
    }
}

/// The command's report of a change: `deployment … paused (was active) by … at …; reason: …`,
/// and for a stop with flatten what happens next.
#[must_use]
pub fn describe(c: &DeploymentControl) -> String {
    let mut out = format!(
        "deployment {} {} (was {}) by {} at ",
        c.deployment_id,
        c.to_status.as_str(),
        c.from_status.as_str(),
        c.requested_by
    );
    types::text::push_timestamp(&mut out, c.requested_at);
    if let Some(reason) = &c.reason {
        out.push_str("; reason: ");
        types::text::push_quoted(&mut out, reason);
    }
    out.push('\n');
    match c.action {
        ControlAction::Pause => out.push_str(
            "no tick until it is resumed; its schedule, state and ledger are kept (a tick \
             already running completes)\n",
        ),
        ControlAction::Resume => out.push_str(
            "it ticks again at its next bar close (at once, at the latest closed bar, if that \
             passed while it was paused)\n",
        ),
        ControlAction::Stop if c.flatten => out.push_str(
            "a runner (`live-runner run`) closes its open positions through its broker with \
             reduce-only market orders, retrying until they are closed; it never ticks again\n",
        ),
        ControlAction::Stop => {
            out.push_str("it never ticks again; its open positions are left as they are\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_requester_is_the_user_or_a_usable_operator_name() {
        let user = Uuid::from_u128(7);
        assert_eq!(requester(Some(user), Some("alice")), user.to_string());
        assert_eq!(requester(None, Some("alice")), "operator:alice");
        assert_eq!(requester(None, Some("  ")), "operator");
        assert_eq!(requester(None, Some("a\nb")), "operator");
        assert_eq!(requester(None, None), "operator");
    }

    #[test]
    fn a_stop_with_flatten_says_what_follows() {
        let c = DeploymentControl {
            id: Uuid::from_u128(1),
            deployment_id: Uuid::from_u128(2),
            action: ControlAction::Stop,
            flatten: true,
            requested_by: "operator:alice".into(),
            reason: Some("kill switch".into()),
            requested_at: DateTime::from_timestamp(1_780_000_000, 0).unwrap(),
            from_status: db::DeploymentStatus::Active,
            to_status: db::DeploymentStatus::Stopped,
        };
        let text = describe(&c);
        assert!(
            text.starts_with(
                "deployment 00000000-0000-0000-0000-000000000002 stopped (was active) by \
                 operator:alice at 2026-05-28T20:26:40Z; reason: \"kill switch\"\n"
            ),
            "{text}"
        );
        assert!(text.contains("closes its open positions"), "{text}");
    }
}
