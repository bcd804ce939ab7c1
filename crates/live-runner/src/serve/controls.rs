//! The controls' routes: `POST /api/deployments/{id}/pause|resume|stop` and
//! `GET /api/deployments/{id}/controls`, as the caller under row-level security (another user's
//! deployment is a 404), each change audited with the caller's id
//! ([`db::ControlStore::control_deployment`]). The pages' buttons call [`apply`] too.

use axum::extract::State;
use db::{ControlAction, ControlRequest, ControlStore, RegistryStore};
use serde::Deserialize;
use utoipa::{IntoResponses, ToSchema};
use uuid::Uuid;
use validator::Validate;

use super::error::{ApiError, ApiPath, OptionalJson};
use super::wire::{DeploymentControls, ErrorBody, WireControl};
use super::{AppState, Caller};

/// Most audit rows the controls route and the page list.
pub const CONTROLS_LIMIT: u32 = 200;
/// Longest reason, in characters (the store's bound, [`db::MAX_CONTROL_REASON_CHARS`]).
const MAX_REASON: u64 = db::MAX_CONTROL_REASON_CHARS as u64;

/// The body of a control (optional: an empty body is `{}`).
#[derive(Debug, Clone, Default, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControlBody {
    /// Why, kept in the audit trail (1..=500 characters, one line).
    #[serde(default)]
    #[validate(
        length(min = 1, max = MAX_REASON, message = "must be 1..=500 characters"),
        custom(function = "super::input::one_line")
    )]
    #[schema(min_length = 1, max_length = 500)]
    pub reason: Option<String>,
    /// Stop only: also close every open position through the deployment's broker.
    #[serde(default)]
    pub flatten: Option<bool>,
}

/// What `pause`, `resume` and `stop` answer (for the OpenAPI document; the handlers answer a
/// [`WireControl`] or an [`ApiError`]).
#[derive(IntoResponses)]
pub enum ControlAnswers {
    /// The control, as audited.
    #[response(status = 200)]
    Done(WireControl),
    /// The caller has no deployment with this id.
    #[response(status = 404)]
    NotFound(ErrorBody<'static>),
    /// The deployment's status does not allow it (the message names the status).
    #[response(status = 409)]
    Conflict(ErrorBody<'static>),
}

/// Applies `action` to the caller's deployment `id` now, audited as the caller.
///
/// # Errors
/// 422 for `flatten` with an action other than stop, or a reason out of bounds or with a
/// control character (naming the field); 404 when the caller has no deployment `id`; 409 when
/// its status does not allow the action (the message names the status).
pub async fn apply(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    action: ControlAction,
    reason: Option<String>,
    flatten: bool,
) -> Result<WireControl, ApiError> {
    if flatten && action != ControlAction::Stop {
        return Err(ApiError::invalid(
            "flatten",
            format!(
                "flatten: closing the positions goes with a stop, not a {}",
                action.as_str()
            ),
        ));
    }
    let request = ControlRequest {
        id: Uuid::new_v4(),
        deployment_id: id,
        action,
        flatten,
        requested_by: caller.user_id.to_string(),
        reason,
        at: state.clock.now(),
    };
    let done = state.store_for(caller).control_deployment(&request).await?;
    Ok(done.into())
}

async fn control(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    action: ControlAction,
    body: ControlBody,
) -> Result<axum::Json<WireControl>, ApiError> {
    let flatten = body.flatten.unwrap_or(false);
    Ok(axum::Json(
        apply(state, caller, id, action, body.reason, flatten).await?,
    ))
}

optional_body_post!(
    "Pauses a deployment (`POST /api/deployments/{id}/pause`)."
    pause "/api/deployments/{id}/pause" "pauseDeployment"
    "An active deployment keeps its state and ticks no more until resumed. An empty body is \
     `{}`.",
    tag "deployments", id "The deployment.",
    ControlBody -> WireControl in ControlAnswers, control(ControlAction::Pause)
);
optional_body_post!(
    "Resumes a deployment (`POST /api/deployments/{id}/resume`)."
    resume "/api/deployments/{id}/resume" "resumeDeployment"
    "A paused deployment ticks again from where it was. An empty body is `{}`.",
    tag "deployments", id "The deployment.",
    ControlBody -> WireControl in ControlAnswers, control(ControlAction::Resume)
);
optional_body_post!(
    "Stops a deployment (`POST /api/deployments/{id}/stop`)."
    stop "/api/deployments/{id}/stop" "stopDeployment"
    "An active or paused deployment stops for good; with `flatten` true a runner also closes its \
     open positions through its broker. An empty body is `{}`.",
    tag "deployments", id "The deployment.",
    ControlBody -> WireControl in ControlAnswers, control(ControlAction::Stop)
);

/// The caller's deployment `id`'s status, flatten and audit trail (the route's body; the page
/// shows it).
///
/// # Errors
/// 404 when the caller has no deployment `id`.
pub async fn deployment_controls(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
) -> Result<DeploymentControls, ApiError> {
    let store = state.store_for(caller);
    let deployment = store.get_deployment(id).await?;
    let flatten = store.flatten_state(id).await?;
    let controls = store.deployment_controls(id, CONTROLS_LIMIT).await?;
    Ok(DeploymentControls {
        deployment_id: id,
        status: deployment.status,
        flatten: flatten.map(Into::into),
        controls: controls.into_iter().map(Into::into).collect(),
    })
}

/// `GET /api/deployments/{id}/controls`.
#[utoipa::path(
    get,
    path = "/api/deployments/{id}/controls",
    operation_id = "getDeploymentControls",
    tag = "deployments",
    params(("id" = Uuid, Path, description = "The deployment.")),
    responses(
        (
            status = 200,
            description = "The status, the flatten if one was asked for, the audit trail.",
            body = DeploymentControls
        ),
        (
            status = 404,
            description = "The caller has no deployment with this id.",
            body = ErrorBody
        ),
    )
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<axum::Json<DeploymentControls>, ApiError> {
    Ok(axum::Json(deployment_controls(&state, &caller, id).await?))
}
