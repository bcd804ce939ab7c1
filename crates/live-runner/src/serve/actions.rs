//! Consent before any action (issue #46): what the chat coach prepared (`prepare_action`, see
//! `chat::actions`) waits here for its owner. `GET /api/actions` lists the caller's pending
//! actions, `GET /api/actions/history` all of them (the audit view), `POST
//! /api/actions/{id}/confirm` applies one and `POST /api/actions/{id}/discard` drops it — as the
//! caller under row-level security: another user's action is a 404, an expired or decided one a
//! 409, a confirmation its change refuses (a deployment no longer in a status that allows it) a
//! 409 with the action marked failed. The confirmation is the store's
//! ([`db::ActionStore::confirm_action`]): the change and its audit in one transaction. Pending
//! actions past their expiry are marked expired by [`expire_due`] and read as expired before
//! that.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use axum::extract::State;
use chrono::{DateTime, Utc};
use db::{ActionKind, ActionResult, ActionStatus, ActionStore, DeploymentStatus, PendingAction};
use serde::Serialize;
use types::Clock;
use utoipa::{IntoResponses, ToSchema};
use uuid::Uuid;

use super::error::{ApiError, ApiPath};
use super::openapi;
use super::wire::ErrorBody;
use super::{AppState, Caller};

/// Most actions a list answers.
pub const LIST_LIMIT: u32 = 200;
/// How often the server marks the pending actions past their expiry expired.
pub const EXPIRE_EVERY: StdDuration = StdDuration::from_secs(60);

/// What a confirmed action did: a control (`controlId`, `fromStatus`, `toStatus`) or a skill
/// version (`skillId`, `version`); the other kind's fields are `null`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireActionResult {
    /// `control` or `skill_version`.
    #[schema(value_type = openapi::ActionResultKind)]
    pub kind: &'static str,
    /// The control's audit row (`GET /api/deployments/{id}/controls` lists it).
    pub control_id: Option<Uuid>,
    /// The deployment's status before.
    #[schema(value_type = Option<openapi::DeploymentStatus>)]
    pub from_status: Option<DeploymentStatus>,
    /// The deployment's status after.
    #[schema(value_type = Option<openapi::DeploymentStatus>)]
    pub to_status: Option<DeploymentStatus>,
    /// The skill a version was saved for.
    pub skill_id: Option<Uuid>,
    /// The version number it was saved as.
    pub version: Option<i32>,
}

impl From<ActionResult> for WireActionResult {
    fn from(r: ActionResult) -> Self {
        match r {
            ActionResult::Control {
                control_id,
                from_status,
                to_status,
            } => Self {
                kind: "control",
                control_id: Some(control_id),
                from_status: Some(from_status),
                to_status: Some(to_status),
                skill_id: None,
                version: None,
            },
            ActionResult::SkillVersion { skill_id, version } => Self {
                kind: "skill_version",
                control_id: None,
                from_status: None,
                to_status: None,
                skill_id: Some(skill_id),
                version: Some(version),
            },
        }
    }
}

/// An action the coach prepared, as its owner sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireAction {
    /// Its id (what confirm and discard take).
    pub id: Uuid,
    /// What it does.
    #[schema(value_type = openapi::ActionKind)]
    pub kind: ActionKind,
    /// Where it stands now (a pending action past its expiry is `expired`).
    #[schema(value_type = openapi::ActionStatus)]
    pub status: ActionStatus,
    /// What it does, for a person, on one line.
    pub summary: String,
    /// The deployment a pause, resume or stop acts on.
    pub deployment_id: Option<Uuid>,
    /// The skill a new version is saved for.
    pub skill_id: Option<Uuid>,
    /// A stop that also closes the deployment's open positions.
    pub flatten: bool,
    /// Why the coach prepared it, when it said.
    pub reason: Option<String>,
    /// For a skill version: the whole skill document to save (its `version` becomes the
    /// skill's next when confirmed).
    #[schema(value_type = Option<Object>)]
    pub skill: Option<serde_json::Value>,
    /// The kept conversation whose turn prepared it.
    pub conversation_id: Option<Uuid>,
    /// When it was prepared (UTC).
    pub created_at: DateTime<Utc>,
    /// When it expires unless confirmed or discarded.
    pub expires_at: DateTime<Utc>,
    /// When it was decided (an expired one: its expiry).
    pub decided_at: Option<DateTime<Utc>>,
    /// Who decided it (the owner's id).
    pub decided_by: Option<String>,
    /// What its confirmation did.
    pub result: Option<WireActionResult>,
    /// Why its confirmation failed (nothing changed).
    pub error: Option<String>,
    /// The route that confirms it while it is pending (`POST /api/actions/{id}/confirm`).
    pub confirm_with: String,
}

impl WireAction {
    /// `a` as its owner sees it at `now`.
    #[must_use]
    pub fn at(a: PendingAction, now: DateTime<Utc>) -> Self {
        let status = a.status_at(now);
        let expired_now = status == ActionStatus::Expired && a.status == ActionStatus::Pending;
        Self {
            id: a.id,
            kind: a.kind,
            status,
            flatten: a.flatten(),
            reason: a.reason().map(str::to_owned),
            skill: a.arguments.get("skill").cloned(),
            confirm_with: chat::actions::confirm_route(a.id),
            summary: a.summary,
            deployment_id: a.deployment_id,
            skill_id: a.skill_id,
            conversation_id: a.conversation_id,
            created_at: a.created_at,
            expires_at: a.expires_at,
            decided_at: if expired_now {
                Some(a.expires_at)
            } else {
                a.decided_at
            },
            decided_by: a.decided_by,
            result: a.result.map(Into::into),
            error: a.error,
        }
    }
}

/// Which of the caller's actions a list holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Those waiting for confirmation (pending, not expired).
    Pending,
    /// All of them, whatever their status.
    All,
}

/// The caller's newest [`LIST_LIMIT`] actions of `which`, newest first, as they stand now (the
/// list routes' bodies; the chat pages show them).
///
/// # Errors
/// The store's.
pub async fn list(
    state: &AppState,
    caller: &Caller,
    which: Which,
) -> Result<Vec<WireAction>, ApiError> {
    let now = state.clock.now();
    let store = state.store_for(caller);
    let rows: Vec<PendingAction> = match which {
        Which::Pending => {
            store
                .pending_actions(caller.user_id, now, LIST_LIMIT)
                .await?
        }
        Which::All => store.actions(caller.user_id, LIST_LIMIT).await?,
    };
    Ok(rows.into_iter().map(|a| WireAction::at(a, now)).collect())
}

/// `GET /api/actions`: the caller's pending actions, newest first.
#[utoipa::path(
    get,
    path = "/api/actions",
    operation_id = "listPendingActions",
    tag = "actions",
    responses((
        status = 200,
        description = "The caller's actions waiting for confirmation (pending, not expired), \
                       newest first (200 at most).",
        body = [WireAction]
    ))
)]
pub(super) async fn pending(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<axum::Json<Vec<WireAction>>, ApiError> {
    Ok(axum::Json(list(&state, &caller, Which::Pending).await?))
}

/// `GET /api/actions/history`: every action of the caller's, newest first.
#[utoipa::path(
    get,
    path = "/api/actions/history",
    operation_id = "listActions",
    tag = "actions",
    responses((
        status = 200,
        description = "The caller's actions whatever their status (pending, confirmed, \
                       discarded, expired, failed), newest first (200 at most): the audit view.",
        body = [WireAction]
    ))
)]
pub(super) async fn history(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<axum::Json<Vec<WireAction>>, ApiError> {
    Ok(axum::Json(list(&state, &caller, Which::All).await?))
}

/// What confirm and discard answer (for the OpenAPI document; the handlers answer a
/// [`WireAction`] or an [`ApiError`]).
#[derive(IntoResponses)]
#[allow(clippy::large_enum_variant)] // never built: it only describes the answers
pub enum DecisionAnswers {
    /// The action as decided.
    #[response(status = 200)]
    Done(WireAction),
    /// The caller has no action with this id.
    #[response(status = 404)]
    NotFound(ErrorBody<'static>),
    /// It expired, was decided already, or (confirm) its change was refused and it failed;
    /// nothing changed.
    #[response(status = 409)]
    Conflict(ErrorBody<'static>),
}

/// What the owner decides of a pending action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Apply it ([`db::ActionStore::confirm_action`]).
    Confirm,
    /// Drop it ([`db::ActionStore::discard_action`]).
    Discard,
}

/// Decides the caller's action `id` now, as the caller: a confirmation applies its change
/// (audited), a discard drops it.
///
/// # Errors
/// 404 when the caller has no action `id`; 409 when it expired, was decided already, or (a
/// confirmation) its change was refused — it is then marked failed.
pub async fn decide(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    decision: Decision,
) -> Result<WireAction, ApiError> {
    let now = state.clock.now();
    let store = state.store_for(caller);
    let done = match decision {
        Decision::Confirm => store.confirm_action(caller.user_id, id, now).await?,
        Decision::Discard => store.discard_action(caller.user_id, id, now).await?,
    };
    Ok(WireAction::at(done, now))
}

/// `POST /api/actions/{id}/confirm`.
#[utoipa::path(
    post,
    path = "/api/actions/{id}/confirm",
    operation_id = "confirmAction",
    tag = "actions",
    description = "Applies a pending action as the caller: a pause, resume or stop of their \
                   deployment (audited in its controls), or the next version of their skill. \
                   No body.",
    params(("id" = Uuid, Path, description = "The action.")),
    responses(DecisionAnswers)
)]
pub(super) async fn confirm(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<axum::Json<WireAction>, ApiError> {
    Ok(axum::Json(
        decide(&state, &caller, id, Decision::Confirm).await?,
    ))
}

/// `POST /api/actions/{id}/discard`.
#[utoipa::path(
    post,
    path = "/api/actions/{id}/discard",
    operation_id = "discardAction",
    tag = "actions",
    description = "Drops a pending action: nothing it would change changes. No body.",
    params(("id" = Uuid, Path, description = "The action.")),
    responses(DecisionAnswers)
)]
pub(super) async fn discard(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<axum::Json<WireAction>, ApiError> {
    Ok(axum::Json(
        decide(&state, &caller, id, Decision::Discard).await?,
    ))
}

/// Marks, every [`EXPIRE_EVERY`] from now on, the pending actions past their expiry expired (as
/// the server's own role: every user's). Never returns; a failed sweep is logged and tried
/// again at the next. A confirmation refuses an expired action whether or not the sweep ran.
pub async fn expire_due(store: db::PgStore, clock: Arc<dyn Clock>) {
    let mut every = tokio::time::interval(EXPIRE_EVERY);
    loop {
        every.tick().await;
        match store.expire_actions(clock.now()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(expired = n, "pending actions expired"),
            Err(e) => tracing::warn!(error = %e, "expiring pending actions failed"),
        }
    }
}
