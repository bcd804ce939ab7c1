//! The pages (issue #14 item 6): server-rendered HTML from the same server as the JSON API,
//! usable without JavaScript.
//!
//! - `GET /static/pages.css` — the pages' stylesheet (no page holds inline style or script:
//!   [`super::headers`]).
//! - `GET /login` — a form to paste a token; `POST /login` (the token in the form's body) checks
//!   it and sets it as the `token` cookie — HttpOnly, SameSite=Lax, `Secure` with `serve
//!   --secure-cookies` — then redirects to `/profile/facts`. A token is never taken from a URL
//!   (it would stay in the history, the logs and `Referer` headers): `GET /login?token=…` is a
//!   400 that sets nothing. `POST /logout` clears the cookie.
//! - `GET /profile/facts[?archived=true]` — the caller's facts; `POST /profile/facts` adds one
//!   (source `profile`), `POST /profile/facts/{id}/edit` (text, topic), `…/confidence`
//!   (promote / demote), `…/archive` (a reason).
//! - `GET /lessons` — the review queue: the caller's held lessons with why each was held;
//!   `POST /lessons/{id}/accept|reject` decides one as the API does ([`super::lessons`]).
//! - `GET /alerts` — the caller's alert channels (host or chat id only, never a secret), a
//!   form to add one and the latest deliveries; `POST /alerts/channels` adds one as the API
//!   does ([`super::alerts`]), `…/{id}/test` queues a test message, `…/{id}/delete` deletes it.
//! - `GET /backtests` — the caller's backtest jobs with their progress (a progress bar, the
//!   cost so far) and results, reloading itself while one runs (`pages/backtests.rs`);
//!   `GET /backtests/{id}/report` a job's report, its style sheet at `…/report.css`.
//! - `GET /deployments/{id}/memory` — the deployment's status and controls (pause, resume,
//!   stop with or without closing its positions, the audit trail), closed trades, lessons
//!   history (and how many held lessons wait) and the prompt the agent sees now, the same data as `GET
//!   /api/deployments/{id}/memory` and `…/controls`; `POST /deployments/{id}/pause|resume|stop`
//!   (a reason, and for stop a `flatten` checkbox) change it as the API does.
//! - `GET /chat`, `GET /chat/{id}` — the chat coach (`pages/chat.rs`): the caller's kept
//!   conversations, one conversation with its answers and tool calls in brief, the actions the
//!   coach prepared with Confirm / Discard; `POST /chat`, `POST /chat/{id}/messages` run a turn
//!   as `POST /api/chat` does, `POST /chat/actions/{id}/confirm|discard` decide an action as
//!   the API does.
//! - `GET /deployments`, `/deployments/{id}`, `/deployments/{id}/ticks`,
//!   `/deployments/{id}/ticks/{tick}` — the dashboard (`pages/dashboard.rs`): the deployments list, a
//!   deployment's summary and equity curve, its decision timeline and what one tick's model saw.
//!
//! Every page reads and writes through the caller's row-level-security scope and the same
//! audited `FactStore` methods as the API. Every change is a plain form POST answered by a 303
//! redirect (post/redirect/get); a refused one re-renders the page with the message (422),
//! never a 500. A page without a valid token redirects to `/login` (the API answers 401).
//! Another user's deployment or fact is a 404 page: row-level security hides it. Templates
//! escape everything they print; values are formatted in `pages/view.rs` (money in `types::text`'s
//! style, times in UTC).
//!
//! Cross-site requests: every POST is checked by the server's guard ([`super::csrf`]): one from
//! another origin (another site, or another port of this host) is refused with a 403 before
//! its handler runs — the login form's included, so another site cannot log a browser in as
//! someone else. The cookie is also `SameSite=Lax`.

mod alerts;
mod backtests;
mod chart;
mod chat;
mod dashboard;
mod forms;
mod lessons;
mod render;
mod view;

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, FromRef, FromRequestParts, Path, Query, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use db::{ControlAction, ControlStore, DbError, FactStore, NewFact, RegistryStore};
use minijinja::context;
use serde::Deserialize;
use types::{
    FactConfidence, FactSource, MAX_FACT_CHARS, MAX_FACT_TOPIC_CHARS, MIN_FACT_CHARS, Uuid,
};

use super::api::{PROFILE_ACTOR, deployment_memory};
use super::auth::{Caller, TOKEN_COOKIE, caller_of};
use super::{ApiError, AppState};

use self::forms::{AddForm, ArchiveForm, ConfidenceForm, ControlForm, EditForm, LoginForm};
use self::render::render;
use self::view::{ControlsView, FactView, NoteView, TradeView};

/// A page response: HTML with a status, or a redirect.
type Page = Response;

fn html(status: StatusCode, body: String) -> Page {
    (status, Html(body)).into_response()
}

/// Template `template` rendered with `ctx` as a page with `status`; a template that fails is a
/// 500 page.
fn page(status: StatusCode, template: &str, ctx: minijinja::Value) -> Page {
    match render(template, ctx) {
        Ok(body) => html(status, body),
        Err(e) => server_error("rendering the page", &e),
    }
}

/// 303 See Other to `to` (post/redirect/get; a GET after a POST).
fn see_other(to: &str) -> Page {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(LOCATION, v);
    }
    r
}

/// A page that could not be rendered or a store that failed: a plain 500 page, the detail
/// logged (never shown).
fn server_error(what: &str, detail: &dyn std::fmt::Display) -> Page {
    tracing::error!(error = %detail, "page: {what}");
    let body = render(
        "error.html",
        context! { title => "Error", user => Option::<String>::None,
        message => format!("{what} failed on the server; try again.") },
    )
    .unwrap_or_else(|_| format!("{what} failed on the server"));
    html(StatusCode::INTERNAL_SERVER_ERROR, body)
}

fn not_found_page(user: Uuid, what: &str) -> Page {
    match render(
        "not_found.html",
        context! { title => "Not found", user => user.to_string(), what },
    ) {
        Ok(body) => html(StatusCode::NOT_FOUND, body),
        Err(e) => server_error("rendering the page", &e),
    }
}

/// `?archived=true` on the facts page; `?done=…` names the change just made (a fixed set of
/// messages: no text of the request is reflected).
#[derive(Debug, Default, Deserialize)]
struct FactsQuery {
    #[serde(default)]
    archived: Option<String>,
    #[serde(default)]
    done: Option<String>,
}

impl FactsQuery {
    fn archived(&self) -> bool {
        matches!(self.archived.as_deref(), Some("true" | "1" | "on"))
    }

    fn notice(&self) -> Option<&'static str> {
        Some(match self.done.as_deref()? {
            "added" => "Fact added.",
            "edited" => "Fact saved.",
            "promoted" => "Fact promoted to asserted.",
            "demoted" => "Fact demoted to inferred.",
            "archived" => "Fact archived.",
            _ => return None,
        })
    }
}

/// `?token=` on `/login`: refused, never used.
#[derive(Debug, Default, Deserialize)]
struct LoginQuery {
    #[serde(default)]
    token: Option<String>,
}

/// Why `GET /login?token=…` logs no one in.
const TOKEN_IN_URL: &str = "token: a token in the address is refused (it would stay in the \
    browser's history, the server's logs and Referer headers); paste it in the form below, and \
    mint a new one if that address was shared";

/// The caller of a page, or a redirect to `/login` (pages never answer 401 JSON).
#[derive(Debug, Clone, Copy)]
pub struct Viewer(
    /// Whom the page is for.
    pub Caller,
);

impl<S> FromRequestParts<S> for Viewer
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let app = AppState::from_ref(state);
        caller_of(parts, &app.auth)
            .map(Viewer)
            .map_err(|_| see_other("/login"))
    }
}

/// The pages' routes, merged into the server's router by [`super::router`].
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { see_other("/profile/facts") }))
        .route("/static/pages.css", get(stylesheet))
        .route("/login", get(login_page).post(login_submit))
        .route("/logout", post(logout))
        .route("/profile/facts", get(facts_page).post(add_fact))
        .route("/profile/facts/{id}/edit", post(edit_fact))
        .route("/profile/facts/{id}/confidence", post(set_confidence))
        .route("/profile/facts/{id}/archive", post(archive_fact))
        .route("/deployments/{id}/memory", get(memory_page))
        .route("/deployments/{id}/pause", post(pause_deployment))
        .route("/deployments/{id}/resume", post(resume_deployment))
        .route("/deployments/{id}/stop", post(stop_deployment))
        .merge(dashboard::router())
        .merge(lessons::router())
        .merge(alerts::router())
        .merge(chat::router())
        .merge(backtests::router())
}

/// The pages' one stylesheet (the Content-Security-Policy allows no inline style).
const STYLESHEET: &str = include_str!("../../templates/pages/pages.css");

async fn stylesheet() -> Page {
    (
        [
            (CONTENT_TYPE, "text/css; charset=utf-8"),
            (CACHE_CONTROL, "public, max-age=300"),
        ],
        STYLESHEET,
    )
        .into_response()
}

// ---------------------------------------------------------------------------------------------
// login

fn login_form(status: StatusCode, error: Option<&str>) -> Page {
    match render(
        "login.html",
        context! { title => "Log in", user => Option::<String>::None, error },
    ) {
        Ok(body) => html(status, body),
        Err(e) => server_error("rendering the login page", &e),
    }
}

/// The `Set-Cookie` value that keeps `token` (empty: clears it): HttpOnly (no script reads
/// it), SameSite=Lax (not sent with another site's POSTs), Path=/, and Secure when the server
/// is reached over TLS ([`AppState::secure_cookies`]).
fn session_cookie(state: &AppState, token: &str) -> String {
    let mut cookie = format!("{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax");
    if state.secure_cookies {
        cookie.push_str("; Secure");
    }
    if token.is_empty() {
        cookie.push_str("; Max-Age=0");
    }
    cookie
}

/// Checks `token`; a good one becomes the cookie and the browser goes to its facts.
fn log_in(state: &AppState, token: &str) -> Page {
    let token = token.trim();
    if token.is_empty() {
        return login_form(
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("token: paste a token"),
        );
    }
    // A JWT is base64url and dots: anything else (a `;`, a control character) is not one, and
    // must not reach the cookie.
    if !token
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'='))
    {
        return login_form(
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("token: not a token (a JWT holds letters, digits, `-`, `_` and dots only)"),
        );
    }
    match state.auth.verify(token) {
        Ok(_) => {
            let mut r = see_other("/profile/facts");
            match HeaderValue::from_str(&session_cookie(state, token)) {
                Ok(v) => {
                    r.headers_mut().insert(SET_COOKIE, v);
                    r
                }
                Err(_) => login_form(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    Some("token: not a token (unexpected characters)"),
                ),
            }
        }
        Err(e) => login_form(StatusCode::UNAUTHORIZED, Some(&e.message)),
    }
}

async fn login_page(query: Result<Query<LoginQuery>, QueryRejection>) -> Page {
    match query.ok().and_then(|Query(q)| q.token) {
        // Not even checked: a GET must not log anyone in (a link or an image of another site
        // could), and the token is already where it should not be.
        Some(_) => login_form(StatusCode::BAD_REQUEST, Some(TOKEN_IN_URL)),
        None => login_form(StatusCode::OK, None),
    }
}

async fn login_submit(
    State(state): State<AppState>,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    match form.check() {
        Ok(token) => log_in(&state, &token),
        Err(message) => login_form(StatusCode::UNPROCESSABLE_ENTITY, Some(&message)),
    }
}

async fn logout(State(state): State<AppState>) -> Page {
    let mut r = see_other("/login");
    if let Ok(v) = HeaderValue::from_str(&session_cookie(&state, "")) {
        r.headers_mut().insert(SET_COOKIE, v);
    }
    r
}

// ---------------------------------------------------------------------------------------------
// facts

/// Renders the facts page: the list (archived ones too when asked), a message, and the add
/// form as it was submitted (after a refused add) or empty.
async fn facts_view(
    state: &AppState,
    caller: Caller,
    archived: bool,
    status: StatusCode,
    error: Option<&str>,
    notice: Option<&str>,
    form: &AddForm,
) -> Page {
    let store = state.store_for(&caller);
    let facts = match store.list_facts(caller.user_id, archived).await {
        Ok(f) => f,
        Err(e) => return server_error("reading your facts", &e),
    };
    let facts: Vec<FactView> = facts.iter().map(FactView::from).collect();
    // Links to the memory pages of the caller's deployments.
    let deployments = match store.user_deployments(caller.user_id).await {
        Ok(d) => d,
        Err(e) => return server_error("reading your deployments", &e),
    };
    let deployments: Vec<_> = deployments
        .iter()
        .map(|d| {
            context! {
                id => d.id.to_string(),
                broker => d.broker.as_str(),
                status => d.status.as_str(),
                created => view::when(Some(d.created_at)),
            }
        })
        .collect();
    // The add form as submitted (after a refusal) or empty; a fresh form says `asserted`.
    let form = context! {
        fact => form.fact.as_deref().unwrap_or_default(),
        topic => form.topic.as_deref().unwrap_or_default(),
        confidence => form.confidence.as_deref().unwrap_or("asserted"),
    };
    match render(
        "facts.html",
        context! {
            title => "What I know about you",
            user => caller.user_id.to_string(),
            facts, archived, error, notice, form, deployments,
            min_fact => MIN_FACT_CHARS, max_fact => MAX_FACT_CHARS, max_topic => MAX_FACT_TOPIC_CHARS,
        },
    ) {
        Ok(body) => html(status, body),
        Err(e) => server_error("rendering your facts", &e),
    }
}

async fn facts_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    query: Result<Query<FactsQuery>, QueryRejection>,
) -> Page {
    let q = query.map(|Query(q)| q).unwrap_or_default();
    facts_view(
        &state,
        caller,
        q.archived(),
        StatusCode::OK,
        None,
        q.notice(),
        &AddForm::default(),
    )
    .await
}

/// A refused change: the page again with the message, 422 (or 404 for a fact the caller does
/// not have).
async fn refused(
    state: &AppState,
    caller: Caller,
    status: StatusCode,
    message: &str,
    form: &AddForm,
) -> Page {
    facts_view(state, caller, false, status, Some(message), None, form).await
}

/// What a store error on a page change becomes, by the API's own mapping (`ApiError`'s
/// `From<DbError>`): a fact the caller does not have is a 404 page, a refused write (a bound, a
/// check, a row it refers to that does not exist) the page again with the message, and only a
/// failure of the server a 500 page.
async fn store_refusal(state: &AppState, caller: Caller, e: DbError, form: &AddForm) -> Page {
    let e = ApiError::from(e);
    if e.status == StatusCode::NOT_FOUND {
        return refused(
            state,
            caller,
            StatusCode::NOT_FOUND,
            "No such fact (it may have been archived).",
            form,
        )
        .await;
    }
    if e.status.is_server_error() {
        return server_error("saving your change", &e);
    }
    refused(state, caller, e.status, &e.message, form).await
}

async fn add_fact(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    form: Result<Form<AddForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    let input = match form.check() {
        Ok(i) => i,
        Err(message) => {
            return refused(
                &state,
                caller,
                StatusCode::UNPROCESSABLE_ENTITY,
                &message,
                &form,
            )
            .await;
        }
    };
    let fact = NewFact {
        id: Uuid::new_v4(),
        user_id: caller.user_id,
        skill_id: None,
        fact: input.fact,
        source: FactSource::Profile,
        confidence: input.confidence,
        topic: input.topic,
        actor: PROFILE_ACTOR.to_owned(),
    };
    match state
        .store_for(&caller)
        .remember(&fact, state.clock.now())
        .await
    {
        Ok(_) => see_other("/profile/facts?done=added"),
        Err(e) => store_refusal(&state, caller, e, &form).await,
    }
}

/// The fact id of a row form's path and the form's checked value, or the facts page refusing
/// them: a malformed id is "no such fact" (404), a refused form its message (422).
async fn checked_row<T>(
    state: &AppState,
    caller: Caller,
    raw_id: &str,
    checked: Result<T, String>,
) -> Result<(Uuid, T), Page> {
    let empty = AddForm::default();
    let Ok(id) = Uuid::parse_str(raw_id) else {
        return Err(refused(
            state,
            caller,
            StatusCode::NOT_FOUND,
            "No such fact.",
            &empty,
        )
        .await);
    };
    match checked {
        Ok(value) => Ok((id, value)),
        Err(message) => Err(refused(
            state,
            caller,
            StatusCode::UNPROCESSABLE_ENTITY,
            &message,
            &empty,
        )
        .await),
    }
}

async fn edit_fact(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    form: Result<Form<EditForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    let empty = AddForm::default();
    let (id, edit) = match checked_row(&state, caller, &id, form.check()).await {
        Ok(row) => row,
        Err(page) => return page,
    };
    match state
        .store_for(&caller)
        .edit_fact(caller.user_id, id, &edit, PROFILE_ACTOR, state.clock.now())
        .await
    {
        Ok(_) => see_other("/profile/facts?done=edited"),
        Err(e) => store_refusal(&state, caller, e, &empty).await,
    }
}

async fn set_confidence(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    form: Result<Form<ConfidenceForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    let empty = AddForm::default();
    let (id, edit) = match checked_row(&state, caller, &id, form.check()).await {
        Ok(row) => row,
        Err(page) => return page,
    };
    let done = match edit.confidence {
        Some(FactConfidence::Asserted) => "/profile/facts?done=promoted",
        _ => "/profile/facts?done=demoted",
    };
    match state
        .store_for(&caller)
        .edit_fact(caller.user_id, id, &edit, PROFILE_ACTOR, state.clock.now())
        .await
    {
        Ok(_) => see_other(done),
        Err(e) => store_refusal(&state, caller, e, &empty).await,
    }
}

async fn archive_fact(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    form: Result<Form<ArchiveForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    let empty = AddForm::default();
    let (id, reason) = match checked_row(&state, caller, &id, form.check()).await {
        Ok(row) => row,
        Err(page) => return page,
    };
    let forget = forms::forget(reason, state.clock.now());
    match state
        .store_for(&caller)
        .forget(caller.user_id, id, &forget)
        .await
    {
        Ok(()) => see_other("/profile/facts?archived=true&done=archived"),
        Err(e) => store_refusal(&state, caller, e, &empty).await,
    }
}

// ---------------------------------------------------------------------------------------------
// deployment memory

/// `?done=…` on a deployment's page: the control just made (a fixed set of messages: no text of
/// the request is reflected).
#[derive(Debug, Default, Deserialize)]
struct DoneQuery {
    #[serde(default)]
    done: Option<String>,
}

impl DoneQuery {
    fn notice(&self) -> Option<&'static str> {
        Some(match self.done.as_deref()? {
            "paused" => "Paused: no tick until you resume it.",
            "resumed" => "Resumed: it ticks again at its next bar close.",
            "stopped" => "Stopped for good.",
            "flattening" => {
                "Stopped for good; a runner closes its open positions through the broker."
            }
            _ => return None,
        })
    }
}

async fn memory_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    query: Result<Query<DoneQuery>, QueryRejection>,
) -> Page {
    let Ok(id) = Uuid::parse_str(&id) else {
        return not_found_page(caller.user_id, "You have no deployment with this id.");
    };
    let notice = query.ok().and_then(|Query(q)| q.notice());
    memory_view(&state, caller, id, StatusCode::OK, notice, None).await
}

/// A deployment's page: its controls (status, buttons, audit trail) and its memory, with a
/// notice of the change just made or the error of a refused one.
async fn memory_view(
    state: &AppState,
    caller: Caller,
    id: Uuid,
    status: StatusCode,
    notice: Option<&str>,
    error: Option<&str>,
) -> Page {
    let memory = match deployment_memory(state, &caller, id).await {
        Ok(m) => m,
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            return not_found_page(caller.user_id, "You have no deployment with this id.");
        }
        Err(e) => return server_error("reading the deployment's memory", &e),
    };
    let store = state.store_for(&caller);
    let (flatten, trail) = match (
        store.flatten_state(id).await,
        store
            .deployment_controls(id, super::controls::CONTROLS_LIMIT)
            .await,
    ) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return server_error("reading the deployment's controls", &e),
    };
    let controls = ControlsView::new(memory.deployment.status, flatten.as_ref(), &trail);
    let waiting = match super::lessons::waiting(state, &caller, id).await {
        Ok(0) => None,
        Ok(1) => Some("1 held lesson waits for your review".to_owned()),
        Ok(n) => Some(format!("{n} held lessons wait for your review")),
        Err(e) => return server_error("reading the deployment's held lessons", &e),
    };
    let trades: Vec<TradeView> = memory.closed_trades.iter().map(TradeView::from).collect();
    let notes: Vec<NoteView> = memory.notes.iter().map(NoteView::from).collect();
    let prompt = memory.prompt.as_ref().map(|p| {
        context! {
            at => view::when(Some(p.as_of)),
            model => &p.model,
            system => &p.system_prompt,
            user => &p.user_message,
            system_tokens => p.system_prompt_tokens,
            user_tokens => p.user_message_tokens,
            tokenizer => p.tokenizer,
        }
    });
    match render(
        "memory.html",
        context! {
            title => format!("Memory · {}", memory.skill_name),
            user => caller.user_id.to_string(),
            deployment_id => id.to_string(),
            skill_name => &memory.skill_name,
            open_positions => memory.open_trades.len(),
            trades, notes, prompt, controls, notice, error, waiting,
            max_reason => db::MAX_CONTROL_REASON_CHARS,
            prompt_missing => "No tick recorded yet: the prompt appears after the deployment's first tick.",
        },
    ) {
        Ok(body) => html(status, body),
        Err(e) => server_error("rendering the deployment's memory", &e),
    }
}

// ---------------------------------------------------------------------------------------------
// deployment controls

/// A control button's POST: the change as the caller (audited), then back to the deployment's
/// page (303) with a notice; a refused one is the page again with the reason (409 for a status
/// that does not allow it, 422 for a bad reason), another user's deployment a 404 page.
async fn control_form(
    state: &AppState,
    caller: Caller,
    raw_id: &str,
    action: ControlAction,
    form: ControlForm,
) -> Page {
    let Ok(id) = Uuid::parse_str(raw_id) else {
        return not_found_page(caller.user_id, "You have no deployment with this id.");
    };
    let (reason, flatten) = match form.check() {
        Ok(checked) => checked,
        Err(message) => {
            return memory_view(
                state,
                caller,
                id,
                StatusCode::UNPROCESSABLE_ENTITY,
                None,
                Some(&message),
            )
            .await;
        }
    };
    let done = match (action, flatten) {
        (ControlAction::Pause, _) => "paused",
        (ControlAction::Resume, _) => "resumed",
        (ControlAction::Stop, false) => "stopped",
        (ControlAction::Stop, true) => "flattening",
    };
    match super::controls::apply(state, &caller, id, action, reason, flatten).await {
        Ok(_) => see_other(&format!("/deployments/{id}/memory?done={done}")),
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            not_found_page(caller.user_id, "You have no deployment with this id.")
        }
        Err(e) if e.status.is_server_error() => server_error("changing the deployment", &e),
        Err(e) => memory_view(state, caller, id, e.status, None, Some(&e.message)).await,
    }
}

async fn pause_deployment(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    form: Result<Form<ControlForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    control_form(&state, caller, &id, ControlAction::Pause, form).await
}

async fn resume_deployment(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    form: Result<Form<ControlForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    control_form(&state, caller, &id, ControlAction::Resume, form).await
}

async fn stop_deployment(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    form: Result<Form<ControlForm>, FormRejection>,
) -> Page {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    control_form(&state, caller, &id, ControlAction::Stop, form).await
}
