//! The review queue's page: `GET /lessons[?deployment=ID][&status=all]` lists the caller's held
//! lessons — the bullets a reflection's lesson defences held back — with why each was held, and
//! `POST /lessons/{id}/accept|reject` (an optional reason) decides one as the API does
//! ([`crate::serve::lessons::review`]), audited as the caller; then back to the queue (303)
//! with a notice. A refused decision is the queue again with the message (409 decided already,
//! 422 a bad reason), another user's lesson a 404; never a 500 for bad input.

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use db::{HeldDecision, HeldStatus};
use minijinja::context;
use serde::{Deserialize, Serialize};
use types::Uuid;

use super::render::render;
use super::{Page, Viewer, html, not_found_page, see_other, server_error, view};
use crate::serve::lessons;
use crate::serve::wire::WireHeldLesson;
use crate::serve::{AppState, Caller};

/// The queue's routes, merged into the pages' router.
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/lessons", get(queue_page))
        .route("/lessons/{id}/accept", post(accept))
        .route("/lessons/{id}/reject", post(reject))
}

/// `?deployment=…&status=all&done=…` (`done` names the decision just made, from a fixed set of
/// messages: no text of the request is reflected).
#[derive(Debug, Default, Deserialize)]
struct QueueQuery {
    #[serde(default)]
    deployment: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    done: Option<String>,
}

impl QueueQuery {
    fn notice(&self) -> Option<&'static str> {
        Some(match self.done.as_deref()? {
            "accepted" => {
                "Accepted: a new note with this lesson is in force from now (the ticks after \
                 now read it)."
            }
            "rejected" => "Rejected: it never reaches a prompt.",
            _ => return None,
        })
    }
}

/// A decision's form: an optional reason, and the deployment the queue was showing (to go back
/// to it).
#[derive(Debug, Clone, Default, Deserialize)]
struct ReviewForm {
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    deployment: Option<String>,
}

/// One row of the queue, as text.
#[derive(Debug, Clone, Serialize)]
struct HeldView {
    id: String,
    deployment_id: String,
    skill_name: String,
    held_at: String,
    text: String,
    reasons: Vec<String>,
    status: &'static str,
    pending: bool,
    /// `accepted by … at …` once decided.
    decided: String,
    review_reason: String,
    resulting_note: String,
}

impl From<&WireHeldLesson> for HeldView {
    fn from(h: &WireHeldLesson) -> Self {
        let decided = match (&h.reviewed_by, h.reviewed_at) {
            (Some(by), Some(at)) => format!(
                "{} by {by} at {} UTC",
                h.status.as_str(),
                view::when(Some(at))
            ),
            _ => String::new(),
        };
        Self {
            id: h.id.to_string(),
            deployment_id: h.deployment_id.map(|d| d.to_string()).unwrap_or_default(),
            skill_name: h.skill_name.clone(),
            held_at: view::when(Some(h.held_at)),
            text: h.text.clone(),
            reasons: h.reasons.clone(),
            status: h.status.as_str(),
            pending: h.status == HeldStatus::Pending,
            decided,
            review_reason: h.review_reason.clone().unwrap_or_default(),
            resulting_note: h
                .resulting_note_id
                .map(|n| n.to_string())
                .unwrap_or_default(),
        }
    }
}

/// `/lessons` with the filter given.
fn queue_url(deployment: Option<Uuid>, all: bool, done: Option<&str>) -> String {
    let mut params = Vec::new();
    if let Some(d) = deployment {
        params.push(format!("deployment={d}"));
    }
    if all {
        params.push("status=all".to_owned());
    }
    if let Some(done) = done {
        params.push(format!("done={done}"));
    }
    if params.is_empty() {
        "/lessons".to_owned()
    } else {
        format!("/lessons?{}", params.join("&"))
    }
}

/// The queue page: the caller's held lessons (of `deployment`, pending only unless `all`),
/// with a notice of the decision just made or the error of a refused one.
async fn queue_view(
    state: &AppState,
    caller: Caller,
    deployment: Option<Uuid>,
    all: bool,
    status: StatusCode,
    notice: Option<&str>,
    error: Option<&str>,
) -> Page {
    let which = if all { None } else { Some(HeldStatus::Pending) };
    let rows = match lessons::list(state, &caller, deployment, which).await {
        Ok(rows) => rows,
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            return not_found_page(caller.user_id, "You have no deployment with this id.");
        }
        Err(e) => return server_error("reading the held lessons", &e),
    };
    let skill_name = deployment.and_then(|d| {
        rows.iter()
            .find(|r| r.deployment_id == Some(d))
            .map(|r| r.skill_name.clone())
    });
    let rows: Vec<HeldView> = rows.iter().map(HeldView::from).collect();
    match render(
        "lessons.html",
        context! {
            title => "Lessons to review",
            user => caller.user_id.to_string(),
            rows, all, notice, error, skill_name,
            deployment => deployment.map(|d| d.to_string()),
            toggle_url => queue_url(deployment, !all, None),
            every_deployment_url => queue_url(None, all, None),
            max_reason => db::MAX_REVIEW_REASON_CHARS,
        },
    ) {
        Ok(body) => html(status, body),
        Err(e) => server_error("rendering the held lessons", &e),
    }
}

async fn queue_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    query: Result<Query<QueueQuery>, QueryRejection>,
) -> Page {
    let q = query.map(|Query(q)| q).unwrap_or_default();
    let deployment = match q.deployment.as_deref().filter(|d| !d.is_empty()) {
        None => None,
        Some(raw) => match Uuid::parse_str(raw) {
            Ok(id) => Some(id),
            Err(_) => {
                return not_found_page(caller.user_id, "You have no deployment with this id.");
            }
        },
    };
    let (all, error) = match lessons::parse_status(q.status.as_deref()) {
        Ok(None) => (true, None),
        Ok(Some(HeldStatus::Pending)) => (false, None),
        // The page shows the queue (pending) or everything; another status is everything.
        Ok(Some(_)) => (true, None),
        Err(e) => (false, Some(e.message)),
    };
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    queue_view(
        &state,
        caller,
        deployment,
        all,
        status,
        q.notice(),
        error.as_deref(),
    )
    .await
}

/// A decision's POST: as the caller (audited), then back to the queue with a notice; refused,
/// the queue again with the reason.
async fn decide(
    state: &AppState,
    caller: Caller,
    raw_id: &str,
    decision: HeldDecision,
    form: ReviewForm,
) -> Page {
    let back = form
        .deployment
        .as_deref()
        .and_then(|d| Uuid::parse_str(d).ok());
    let missing = "No such held lesson of yours.";
    let Ok(id) = Uuid::parse_str(raw_id) else {
        return queue_view(
            state,
            caller,
            back,
            false,
            StatusCode::NOT_FOUND,
            None,
            Some(missing),
        )
        .await;
    };
    let done = match decision {
        HeldDecision::Accept => "accepted",
        HeldDecision::Reject => "rejected",
    };
    match lessons::review(state, &caller, id, decision, form.reason.as_deref()).await {
        Ok(_) => see_other(&queue_url(back, false, Some(done))),
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            queue_view(state, caller, back, false, e.status, None, Some(missing)).await
        }
        Err(e) if e.status.is_server_error() => server_error("reviewing the held lesson", &e),
        Err(e) => queue_view(state, caller, back, false, e.status, None, Some(&e.message)).await,
    }
}

async fn accept(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    form: Result<Form<ReviewForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    decide(&state, caller, &id, HeldDecision::Accept, form).await
}

async fn reject(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    form: Result<Form<ReviewForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    decide(&state, caller, &id, HeldDecision::Reject, form).await
}

#[cfg(test)]
mod tests {
    use super::queue_url;
    use types::Uuid;

    #[test]
    fn the_queue_url_keeps_the_filter() {
        let d = Uuid::from_u128(1);
        assert_eq!(queue_url(None, false, None), "/lessons");
        assert_eq!(
            queue_url(Some(d), true, Some("accepted")),
            format!("/lessons?deployment={d}&status=all&done=accepted")
        );
    }
}
