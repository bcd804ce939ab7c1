//! The review queue's routes: `GET /api/lessons/held` (the caller's held bullets across their
//! deployments, optionally one deployment's, pending by default) and `POST
//! /api/lessons/{id}/accept|reject` (an optional `{"reason": "..."}`), as the caller under
//! row-level security: another user's bullet is a 404, a bullet decided already a 409. A
//! decision is the store method the commands call ([`db::NoteStore::review_held_lesson`]),
//! audited with the caller's id, the time and the reason. The `/lessons` page calls [`list`]
//! and [`review`] too.
//!
//! A note all of whose bullets were held waits for review whole, but its bullets are held rows
//! too: the queue lists them, and accepting them one by one builds the same lessons. Accepting
//! such a note whole at once stays a command (`sim-worker accept-note`).

use std::collections::BTreeMap;

use axum::extract::State;
use db::{
    HeldDecision, HeldReview, HeldStatus, NoteScope, NoteStore, RegistryStore, StoredHeldLesson,
    UserScoped,
};
use serde::Deserialize;
use utoipa::{IntoParams, IntoResponses, ToSchema};
use uuid::Uuid;
use validator::Validate;

use super::error::{ApiError, ApiPath, ApiQuery, OptionalJson};
use super::openapi;
use super::wire::{ErrorBody, WireHeldLesson};
use super::{AppState, Caller};

/// The `status` filter's word for every status.
pub const ALL_STATUSES: &str = "all";
/// Most held bullets one deployment contributes to the queue (the store's read bound).
const PER_DEPLOYMENT: u32 = db::MAX_HELD_READ;
/// Longest reason, in characters (the store's bound, [`db::MAX_REVIEW_REASON_CHARS`]).
const MAX_REASON: u64 = db::MAX_REVIEW_REASON_CHARS as u64;

/// `?deployment=…&status=…` of the list.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HeldQuery {
    /// Only this deployment's bullets.
    #[serde(default)]
    pub deployment: Option<Uuid>,
    /// `pending` (default), `accepted`, `rejected` or `all`.
    #[serde(default)]
    #[param(value_type = Option<openapi::HeldFilter>)]
    pub status: Option<String>,
}

/// Which statuses a `status` value asks for: `None` is every status.
///
/// # Errors
/// 422 naming `status` for any other word.
pub fn parse_status(status: Option<&str>) -> Result<Option<HeldStatus>, ApiError> {
    match status.unwrap_or("pending") {
        ALL_STATUSES => Ok(None),
        other => HeldStatus::parse(other).map(Some).ok_or_else(|| {
            ApiError::invalid(
                "status",
                format!("status: {other:?} is not one of pending, accepted, rejected, all"),
            )
        }),
    }
}

/// The body of a decision (optional: an empty body is `{}`).
#[derive(Debug, Clone, Default, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewBody {
    /// Why, kept with the review (1..=500 characters, one line).
    #[serde(default)]
    #[validate(
        length(min = 1, max = MAX_REASON, message = "must be 1..=500 characters"),
        custom(function = "super::input::one_line")
    )]
    #[schema(min_length = 1, max_length = 500)]
    pub reason: Option<String>,
}

/// The skills' names of `deployments`, by deployment (read once per skill).
async fn skill_names(
    store: &UserScoped,
    deployments: &[db::Deployment],
) -> Result<BTreeMap<Uuid, String>, ApiError> {
    let mut by_skill: BTreeMap<Uuid, String> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for d in deployments {
        let name = match by_skill.get(&d.skill_id) {
            Some(name) => name.clone(),
            None => {
                let name = store.get_skill(d.skill_id).await?.name;
                by_skill.insert(d.skill_id, name.clone());
                name
            }
        };
        out.insert(d.id, name);
    }
    Ok(out)
}

/// The caller's held bullets with `status` (every status when `None`), of `deployment` or of
/// every deployment of theirs: newest reflection first, then by deployment and place.
///
/// # Errors
/// 404 when the caller has no deployment `deployment` (another user's included).
pub async fn list(
    state: &AppState,
    caller: &Caller,
    deployment: Option<Uuid>,
    status: Option<HeldStatus>,
) -> Result<Vec<WireHeldLesson>, ApiError> {
    let store = state.store_for(caller);
    let deployments = match deployment {
        Some(id) => vec![store.get_deployment(id).await?],
        None => store.user_deployments(caller.user_id).await?,
    };
    let names = skill_names(&store, &deployments).await?;
    let mut rows: Vec<(StoredHeldLesson, String)> = Vec::new();
    for d in &deployments {
        let name = names.get(&d.id).cloned().unwrap_or_default();
        for h in store
            .held_lessons(NoteScope::Deployment(d.id), status, PER_DEPLOYMENT)
            .await?
        {
            rows.push((h, name.clone()));
        }
    }
    rows.sort_by(|(a, _), (b, _)| {
        b.held_at
            .cmp(&a.held_at)
            .then(a.deployment_id.cmp(&b.deployment_id))
            .then(a.note_id.cmp(&b.note_id))
            .then(a.position.cmp(&b.position))
    });
    Ok(rows
        .into_iter()
        .map(|(h, name)| WireHeldLesson::new(h, name))
        .collect())
}

/// How many of deployment `id`'s held bullets wait for the caller's review (the memory page's
/// count).
///
/// # Errors
/// A store failure.
pub async fn waiting(state: &AppState, caller: &Caller, id: Uuid) -> Result<usize, ApiError> {
    Ok(state
        .store_for(caller)
        .held_lessons(
            NoteScope::Deployment(id),
            Some(HeldStatus::Pending),
            PER_DEPLOYMENT,
        )
        .await?
        .len())
}

/// The reason of a decision, checked: trimmed, one line, within the store's bound; empty is
/// none.
///
/// # Errors
/// 422 naming `reason`.
pub fn checked_reason(reason: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(reason) = reason.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    super::input::check("reason", reason, super::input::Lines::One)
        .map_err(|message| ApiError::invalid("reason", message))?;
    let n = reason.chars().count();
    if n > db::MAX_REVIEW_REASON_CHARS {
        return Err(ApiError::invalid(
            "reason",
            format!("reason: must be 1..=500 characters (got {n})"),
        ));
    }
    Ok(Some(reason.to_owned()))
}

/// What `accept` and `reject` answer (for the OpenAPI document; the handlers answer a
/// [`WireHeldLesson`] or an [`ApiError`]).
#[derive(IntoResponses)]
pub enum ReviewAnswers {
    /// The held lesson, decided.
    #[response(status = 200)]
    Done(WireHeldLesson),
    /// The caller has no held lesson with this id.
    #[response(status = 404)]
    NotFound(ErrorBody<'static>),
    /// Decided already, or (accept) a newer reflection replaced its note.
    #[response(status = 409)]
    Conflict(ErrorBody<'static>),
}

/// Accepts or rejects the caller's held bullet `id` now, audited as the caller with `reason`.
/// Accepting writes a note — the lessons in force for its window with the bullet appended —
/// in force from now.
///
/// # Errors
/// 422 for a reason with a control character or over 500 characters (naming `reason`); 404
/// when the caller has no held bullet `id`; 409 when it was decided already, or on accept when
/// a newer reflection's note replaced its note (only a rejection is possible then); 422 when
/// the lessons with it would exceed 2000 characters.
pub async fn review(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    decision: HeldDecision,
    reason: Option<&str>,
) -> Result<WireHeldLesson, ApiError> {
    let reason = checked_reason(reason)?;
    let store = state.store_for(caller);
    let review = HeldReview {
        decision,
        by: caller.user_id.to_string(),
        reason,
        at: state.clock.now(),
    };
    let done = store.review_held_lesson(id, &review).await?;
    let skill_id = match done.deployment_id {
        Some(d) => store.get_deployment(d).await?.skill_id,
        None => store.get_note(done.note_id).await?.skill_id,
    };
    let name = store.get_skill(skill_id).await?.name;
    Ok(WireHeldLesson::new(done, name))
}

/// `GET /api/lessons/held[?deployment=ID][&status=pending|accepted|rejected|all]`.
#[utoipa::path(
    get,
    path = "/api/lessons/held",
    operation_id = "listHeldLessons",
    tag = "lessons",
    params(HeldQuery),
    responses(
        (
            status = 200,
            description = "The caller's held lessons, newest reflection first.",
            body = [WireHeldLesson]
        ),
        (
            status = 404,
            description = "`deployment` is not a deployment of the caller's.",
            body = ErrorBody
        ),
        (status = 422, description = "`status` is not one of its words.", body = ErrorBody),
    )
)]
pub(super) async fn held(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<HeldQuery>,
) -> Result<axum::Json<Vec<WireHeldLesson>>, ApiError> {
    let status = parse_status(q.status.as_deref())?;
    Ok(axum::Json(
        list(&state, &caller, q.deployment, status).await?,
    ))
}

/// A decision through the API: a reason sent must say something (a form's empty field is
/// none; a JSON `reason` of spaces is refused).
async fn decide(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    decision: HeldDecision,
    body: ReviewBody,
) -> Result<axum::Json<WireHeldLesson>, ApiError> {
    if body.reason.as_deref().is_some_and(|r| r.trim().is_empty()) {
        return Err(ApiError::invalid(
            "reason",
            "reason: must say why (1..=500 characters), or be left out",
        ));
    }
    Ok(axum::Json(
        review(state, caller, id, decision, body.reason.as_deref()).await?,
    ))
}

optional_body_post!(
    "Accepts a held lesson (`POST /api/lessons/{id}/accept`)."
    accept "/api/lessons/{id}/accept" "acceptHeldLesson"
    "A note with the lessons in force and this bullet appended is in force from now. An empty \
     body is `{}`.",
    tag "lessons", id "The held lesson.",
    ReviewBody -> WireHeldLesson in ReviewAnswers, decide(HeldDecision::Accept)
);
optional_body_post!(
    "Rejects a held lesson (`POST /api/lessons/{id}/reject`)."
    reject "/api/lessons/{id}/reject" "rejectHeldLesson"
    "The bullet never reaches a prompt. An empty body is `{}`.",
    tag "lessons", id "The held lesson.",
    ReviewBody -> WireHeldLesson in ReviewAnswers, decide(HeldDecision::Reject)
);
