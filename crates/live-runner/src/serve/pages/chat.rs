//! The chat page (issue #46): the coach in plain forms, no JavaScript.
//!
//! - `GET /chat` — the caller's kept conversations (title, mode, deployment, last active,
//!   turns), a form to start one (mode, an optional deployment of theirs, the first message)
//!   and their pending actions with Confirm / Discard.
//! - `GET /chat/{id}` — one conversation: each turn's message and answer (escaped text, line
//!   breaks kept), each tool call in brief (its arguments and result cut to
//!   [`TOOL_TEXT_SHOWN`] characters, in a `<details>`), the actions its turns prepared, and a
//!   form for the next message.
//! - `POST /chat` starts a conversation and `POST /chat/{id}/messages` continues one: one turn
//!   run by [`crate::serve::api::chat_turn`], the function `POST /api/chat` runs, then 303 to
//!   `/chat/{id}#turn-N`. A model failure is the conversation again with the error (502) and
//!   the message back in the form; a refused form the page again with the message (422);
//!   another user's conversation or deployment a 404 page.
//! - `POST /chat/{id}/delete` deletes a conversation as `DELETE /api/conversations/{id}` does.
//! - `POST /chat/actions/{id}/confirm|discard` decides an action through
//!   [`crate::serve::actions::decide`], then 303 back to its conversation (or `/chat`) with a
//!   notice from a fixed set; an expired or decided one is the page again with why (409),
//!   another user's a 404 page.

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use db::{ActionStatus, ActionStore, DeploymentStatus, RegistryStore};
use minijinja::context;
use serde::{Deserialize, Serialize};
use types::Uuid;

use super::forms::ChatForm;
use super::{Page, Viewer, not_found_page, page, see_other, server_error, view};
use crate::serve::actions::{self, Decision, Which, WireAction};
use crate::serve::api::{MAX_CHAT_MESSAGE_CHARS, TurnRun, chat_turn};
use crate::serve::conversations::{self, WireConversation, WireKeptCall, WireKeptTurn};
use crate::serve::{ApiError, AppState, Caller};

/// Most characters of a tool call's arguments or result the page shows (the API has them as
/// kept).
pub(super) const TOOL_TEXT_SHOWN: usize = 300;
/// Most characters of a tool call's arguments on its summary line.
const SUMMARY_CHARS: usize = 80;

const NO_CONVERSATION: &str = "You have no conversation with this id.";
const NO_ACTION: &str = "You have no action with this id.";
const NO_DEPLOYMENT: &str = "You have no deployment with this id.";

/// The page's routes, merged into the pages' router.
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/chat", get(chat_page).post(start))
        .route("/chat/{id}", get(conversation_page))
        .route("/chat/{id}/messages", post(send))
        .route("/chat/{id}/delete", post(delete))
        .route("/chat/actions/{id}/confirm", post(confirm))
        .route("/chat/actions/{id}/discard", post(discard))
}

/// `?done=…`: what was just done, from a fixed set of messages (no text of the request is
/// reflected).
#[derive(Debug, Default, Deserialize)]
struct DoneQuery {
    #[serde(default)]
    done: Option<String>,
}

fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "deleted" => "Conversation deleted.",
        "paused" => "Confirmed: the deployment is paused; no tick until you resume it.",
        "resumed" => "Confirmed: the deployment is active again; it ticks at its next bar close.",
        "stopped" => "Confirmed: the deployment is stopped for good.",
        "flattening" => {
            "Confirmed: the deployment is stopped for good; a runner closes its open positions \
             through the broker."
        }
        "saved" => "Confirmed: the skill's new version is saved.",
        "discarded" => "Discarded: nothing changed.",
        _ => return None,
    })
}

/// The `done` a decided action's page shows.
fn done_of(decision: Decision, a: &WireAction) -> &'static str {
    match (decision, &a.result) {
        (Decision::Discard, _) => "discarded",
        (Decision::Confirm, Some(r)) if r.kind == "skill_version" => "saved",
        (Decision::Confirm, Some(r)) => match r.to_status {
            Some(DeploymentStatus::Paused) => "paused",
            Some(DeploymentStatus::Active) => "resumed",
            _ if a.flatten => "flattening",
            _ => "stopped",
        },
        (Decision::Confirm, None) => "stopped",
    }
}

/// `text` cut to `max` characters, with how many more there were.
fn brief(text: &str, max: usize) -> String {
    let (kept, dropped) = types::cut_chars(text, max);
    if dropped == 0 {
        kept.to_owned()
    } else {
        format!("{kept}… [{dropped} more characters]")
    }
}

/// The caller's deployments as the page names them, by id: `skill vN (status)`.
async fn deployment_names(
    state: &AppState,
    caller: Caller,
) -> Result<BTreeMap<Uuid, String>, db::DbError> {
    let store = state.store_for(&caller);
    let mut skills: BTreeMap<Uuid, String> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for d in store.user_deployments(caller.user_id).await? {
        let skill = match skills.get(&d.skill_id) {
            Some(name) => name.clone(),
            None => {
                let name = store.get_skill(d.skill_id).await?.name;
                skills.insert(d.skill_id, name.clone());
                name
            }
        };
        out.insert(
            d.id,
            format!("{skill} v{} ({})", d.skill_version, d.status.as_str()),
        );
    }
    Ok(out)
}

/// One conversation of the list, as text.
#[derive(Debug, Clone, Serialize)]
struct ConversationView {
    id: String,
    title: String,
    mode: String,
    deployment_id: String,
    deployment: String,
    created: String,
    last_active: String,
    turns: u64,
}

impl ConversationView {
    fn new(c: &WireConversation, names: &BTreeMap<Uuid, String>) -> Self {
        Self {
            id: c.id.to_string(),
            title: c.title.clone(),
            mode: c.mode.clone(),
            deployment_id: c.deployment_id.map(|d| d.to_string()).unwrap_or_default(),
            deployment: c
                .deployment_id
                .map(|d| names.get(&d).cloned().unwrap_or_else(|| d.to_string()))
                .unwrap_or_default(),
            created: view::when(Some(c.created_at)),
            last_active: view::when(Some(c.last_active_at)),
            turns: c.turns,
        }
    }
}

/// One action, as text.
#[derive(Debug, Clone, Serialize)]
struct ActionView {
    id: String,
    summary: String,
    reason: String,
    status: &'static str,
    pending: bool,
    /// Where it stands, one phrase: its expiry, who decided it and when, why it failed.
    status_note: String,
    created: String,
    conversation_id: String,
}

impl From<&WireAction> for ActionView {
    fn from(a: &WireAction) -> Self {
        let decided = a
            .decided_at
            .map(|t| view::when(Some(t)))
            .unwrap_or_default();
        let status_note = match a.status {
            ActionStatus::Pending => format!("until {} UTC", view::when(Some(a.expires_at))),
            ActionStatus::Expired => format!("at {decided} UTC, nothing changed"),
            ActionStatus::Failed => format!(
                "at {decided} UTC: {}",
                a.error.as_deref().unwrap_or("the change was refused")
            ),
            ActionStatus::Confirmed | ActionStatus::Discarded => format!(
                "by {} at {decided} UTC",
                a.decided_by.as_deref().unwrap_or("you")
            ),
        };
        Self {
            id: a.id.to_string(),
            summary: a.summary.clone(),
            reason: a.reason.clone().unwrap_or_default(),
            status: a.status.as_str(),
            pending: a.status == ActionStatus::Pending,
            status_note,
            created: view::when(Some(a.created_at)),
            conversation_id: a.conversation_id.map(|c| c.to_string()).unwrap_or_default(),
        }
    }
}

/// One tool call of a turn, in brief.
#[derive(Debug, Clone, Serialize)]
struct CallView {
    name: String,
    /// Its arguments on one line, cut to [`SUMMARY_CHARS`].
    summary: String,
    arguments: String,
    /// Empty when no result was kept.
    result: String,
}

impl From<&WireKeptCall> for CallView {
    fn from(c: &WireKeptCall) -> Self {
        Self {
            name: c.name.clone(),
            summary: brief(&tools::one_line(&c.arguments), SUMMARY_CHARS),
            arguments: brief(&c.arguments, TOOL_TEXT_SHOWN),
            result: c
                .result
                .as_deref()
                .map(|r| brief(r, TOOL_TEXT_SHOWN))
                .unwrap_or_default(),
        }
    }
}

/// One kept turn, as text.
#[derive(Debug, Clone, Serialize)]
struct TurnView {
    seq: u32,
    at: String,
    user_message: String,
    answer: String,
    calls: Vec<CallView>,
}

impl From<&WireKeptTurn> for TurnView {
    fn from(t: &WireKeptTurn) -> Self {
        Self {
            seq: t.seq,
            at: view::when(Some(t.at)),
            user_message: t.user_message.clone(),
            answer: t.answer.clone(),
            calls: t.tool_calls.iter().map(CallView::from).collect(),
        }
    }
}

/// A choice of the new-conversation form.
#[derive(Debug, Clone, Serialize)]
struct Choice {
    value: String,
    label: String,
}

/// `/chat`: the conversations, the new-conversation form (as submitted, after a refusal) and
/// the pending actions.
async fn chat_view(
    state: &AppState,
    caller: Caller,
    status: StatusCode,
    notice: Option<&str>,
    error: Option<&str>,
    form: &ChatForm,
) -> Page {
    let (names, listed, pending) = match (
        deployment_names(state, caller).await,
        conversations::listed(state, &caller).await,
        actions::list(state, &caller, Which::Pending).await,
    ) {
        (Ok(n), Ok(l), Ok(p)) => (n, l, p),
        (Err(e), _, _) => return server_error("reading your deployments", &e),
        (_, Err(e), _) | (_, _, Err(e)) => return server_error("reading your conversations", &e),
    };
    let rows: Vec<ConversationView> = listed
        .iter()
        .map(|c| ConversationView::new(c, &names))
        .collect();
    let actions: Vec<ActionView> = pending.iter().map(ActionView::from).collect();
    let modes = [
        ("coach", "Coach — your results, lessons and upcoming events"),
        ("authoring", "Authoring — write and check a skill"),
        ("ops", "Ops — run your deployments: rejections, pause, stop"),
    ]
    .map(|(value, label)| Choice {
        value: value.to_owned(),
        label: label.to_owned(),
    });
    let deployments: Vec<Choice> = names
        .iter()
        .map(|(id, name)| Choice {
            value: id.to_string(),
            label: name.clone(),
        })
        .collect();
    let chosen_mode = form.mode.as_deref().unwrap_or("coach");
    let chosen_deployment = form.deployment.as_deref().unwrap_or_default();
    page(
        status,
        "chat.html",
        context! {
            title => "Chat with the coach",
            user => caller.user_id.to_string(),
            rows, actions, modes, deployments, chosen_mode, chosen_deployment, notice, error,
            draft => form.draft(),
            max_message => MAX_CHAT_MESSAGE_CHARS,
            show_conversation => true,
            no_actions => "Nothing waits for your confirmation.",
        },
    )
}

/// `/chat/{id}`: the conversation, its actions, the form for the next message (holding
/// `draft`).
async fn conversation_view(
    state: &AppState,
    caller: Caller,
    id: Uuid,
    status: StatusCode,
    notice: Option<&str>,
    error: Option<&str>,
    draft: &str,
) -> Page {
    let detail = match conversations::detail(state, &caller, id).await {
        Ok(d) => d,
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            return not_found_page(caller.user_id, NO_CONVERSATION);
        }
        Err(e) => return server_error("reading the conversation", &e),
    };
    let (names, all) = match (
        deployment_names(state, caller).await,
        actions::list(state, &caller, Which::All).await,
    ) {
        (Ok(n), Ok(a)) => (n, a),
        (Err(e), _) => return server_error("reading your deployments", &e),
        (_, Err(e)) => return server_error("reading the conversation's actions", &e),
    };
    let actions: Vec<ActionView> = all
        .iter()
        .filter(|a| a.conversation_id == Some(id))
        .map(ActionView::from)
        .collect();
    let turns: Vec<TurnView> = detail.turn_list.iter().map(TurnView::from).collect();
    let conversation = ConversationView::new(&detail.conversation, &names);
    page(
        status,
        "conversation.html",
        context! {
            title => format!("Chat · {}", conversation.title),
            user => caller.user_id.to_string(),
            c => conversation, turns, actions, notice, error, draft,
            max_message => MAX_CHAT_MESSAGE_CHARS,
            brief => TOOL_TEXT_SHOWN,
            show_conversation => false,
            no_actions => "No action prepared in this conversation.",
        },
    )
}

async fn chat_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    query: Result<Query<DoneQuery>, QueryRejection>,
) -> Page {
    let q = query.map(|Query(q)| q).unwrap_or_default();
    chat_view(
        &state,
        caller,
        StatusCode::OK,
        notice(q.done.as_deref()),
        None,
        &ChatForm::default(),
    )
    .await
}

async fn conversation_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    query: Result<Query<DoneQuery>, QueryRejection>,
) -> Page {
    let Ok(id) = Uuid::parse_str(&id) else {
        return not_found_page(caller.user_id, NO_CONVERSATION);
    };
    let q = query.map(|Query(q)| q).unwrap_or_default();
    conversation_view(
        &state,
        caller,
        id,
        StatusCode::OK,
        notice(q.done.as_deref()),
        None,
        "",
    )
    .await
}

/// After a turn: its place in the conversation (303), or, when the model failed (nothing
/// kept), the conversation with the error and the message back in the form (502).
async fn after_turn(state: &AppState, caller: Caller, run: TurnRun, draft: &str) -> Page {
    let Some(kept) = run.kept else {
        return server_error("keeping the chat turn", &"a page turn has a conversation");
    };
    match (kept.seq, &run.out.run.error) {
        (Some(seq), None) => see_other(&format!("/chat/{}#turn-{seq}", kept.conversation_id)),
        (_, error) => {
            let why = error
                .as_ref()
                .map_or_else(|| "the turn was not kept".to_owned(), ToString::to_string);
            let message = format!(
                "The coach's model failed ({why}). Your message was not kept: send it again."
            );
            conversation_view(
                state,
                caller,
                kept.conversation_id,
                StatusCode::BAD_GATEWAY,
                None,
                Some(&message),
                draft,
            )
            .await
        }
    }
}

/// A turn's refusal by the API's rules: another user's (or an unknown) conversation or
/// deployment a 404 page, a failure of the server a 500 page; else `refused`'s page.
fn refusal(caller: Caller, e: &ApiError, missing: &str) -> Option<Page> {
    if e.status == StatusCode::NOT_FOUND {
        return Some(not_found_page(caller.user_id, missing));
    }
    e.status
        .is_server_error()
        .then(|| server_error("running the chat turn", e))
}

async fn start(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    form: Result<Form<ChatForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    let request = match form.request(None) {
        Ok(r) => r,
        Err(message) => {
            return chat_view(
                &state,
                caller,
                StatusCode::UNPROCESSABLE_ENTITY,
                None,
                Some(&message),
                &form,
            )
            .await;
        }
    };
    match chat_turn(&state, caller, request).await {
        Ok(run) => after_turn(&state, caller, run, form.draft()).await,
        Err(e) => match refusal(caller, &e, NO_DEPLOYMENT) {
            Some(page) => page,
            None => chat_view(&state, caller, e.status, None, Some(&e.message), &form).await,
        },
    }
}

async fn send(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    form: Result<Form<ChatForm>, FormRejection>,
) -> Page {
    let Ok(id) = Uuid::parse_str(&id) else {
        return not_found_page(caller.user_id, NO_CONVERSATION);
    };
    let form = form.map(|Form(f)| f).unwrap_or_default();
    let refused = |status, message: String| {
        let state = state.clone();
        let draft = form.draft().to_owned();
        async move { conversation_view(&state, caller, id, status, None, Some(&message), &draft).await }
    };
    let request = match form.request(Some(id)) {
        Ok(r) => r,
        Err(message) => return refused(StatusCode::UNPROCESSABLE_ENTITY, message).await,
    };
    match chat_turn(&state, caller, request).await {
        Ok(run) => after_turn(&state, caller, run, form.draft()).await,
        Err(e) => match refusal(caller, &e, NO_CONVERSATION) {
            Some(page) => page,
            None => refused(e.status, e.message).await,
        },
    }
}

async fn delete(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Page {
    let Ok(id) = Uuid::parse_str(&id) else {
        return not_found_page(caller.user_id, NO_CONVERSATION);
    };
    match conversations::remove(&state, &caller, id).await {
        Ok(()) => see_other("/chat?done=deleted"),
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            not_found_page(caller.user_id, NO_CONVERSATION)
        }
        Err(e) => server_error("deleting the conversation", &e),
    }
}

/// A Confirm or Discard button: the decision as the API makes it, then back to where the
/// action was prepared with a notice; refused (expired, decided, its change no longer
/// allowed), that page again with why.
async fn decide(state: &AppState, caller: Caller, raw_id: &str, decision: Decision) -> Page {
    let Ok(id) = Uuid::parse_str(raw_id) else {
        return not_found_page(caller.user_id, NO_ACTION);
    };
    match actions::decide(state, &caller, id, decision).await {
        Ok(done) => {
            let to = match done.conversation_id {
                Some(c) => format!("/chat/{c}"),
                None => "/chat".to_owned(),
            };
            see_other(&format!("{to}?done={}#actions", done_of(decision, &done)))
        }
        Err(e) if e.status == StatusCode::NOT_FOUND => not_found_page(caller.user_id, NO_ACTION),
        Err(e) if e.status.is_server_error() => server_error("deciding the action", &e),
        Err(e) => {
            let conversation = state
                .store_for(&caller)
                .action(caller.user_id, id)
                .await
                .ok()
                .and_then(|a| a.conversation_id);
            match conversation {
                Some(c) => {
                    conversation_view(state, caller, c, e.status, None, Some(&e.message), "").await
                }
                None => {
                    chat_view(
                        state,
                        caller,
                        e.status,
                        None,
                        Some(&e.message),
                        &ChatForm::default(),
                    )
                    .await
                }
            }
        }
    }
}

async fn confirm(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Page {
    decide(&state, caller, &id, Decision::Confirm).await
}

async fn discard(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Page {
    decide(&state, caller, &id, Decision::Discard).await
}

#[cfg(test)]
mod tests {
    use super::{brief, notice};

    #[test]
    fn a_brief_says_how_much_it_left_out() {
        assert_eq!(brief("short", 300), "short");
        assert_eq!(brief("ééééé", 2), "éé… [3 more characters]");
    }

    #[test]
    fn notices_come_from_a_fixed_set() {
        assert_eq!(notice(Some("deleted")), Some("Conversation deleted."));
        assert_eq!(notice(Some("<script>")), None);
        assert_eq!(notice(None), None);
    }
}
