//! `live-runner serve`: the chat coach's HTTP server (issue #14) — the JSON API under `/api`
//! ([`api`]), the server-rendered pages ([`pages`]) and `/healthz`.
//!
//! - Auth ([`auth`]): every user route takes a [`Caller`], read from `Authorization: Bearer
//!   <JWT>` or the `token` cookie (HS256, secret from [`auth::JWT_SECRET_ENV`], Supabase-style
//!   claims). Missing, invalid or expired: 401 with `{"error": "..."}`.
//! - Row-level security: a handler reaches the database only through
//!   [`AppState::store_for`]`(caller)`, a [`db::UserScoped`] store whose every statement runs in
//!   a transaction as role `authenticated` with the caller's claims, so PostgreSQL's policies —
//!   not handler code — keep other users' rows out. `serve` therefore needs PostgreSQL.
//! - Cross-site requests ([`csrf`]): a state change that the `token` cookie could authenticate
//!   must come from the server's own origin (`Origin` / `Sec-Fetch-Site`); another origin —
//!   another port of the same host included — gets a 403 before any handler runs.
//! - Security headers ([`headers`]): every answer carries a Content-Security-Policy without
//!   inline script or style and with `frame-ancestors 'none'`, `nosniff` and
//!   `Referrer-Policy: no-referrer`.
//! - Controls ([`controls`]): pause, resume and stop a deployment from the API and the pages,
//!   audited as the caller.
//! - Kept conversations ([`conversations`]): `POST /api/chat` with one new `message` continues
//!   a conversation the server keeps; list, read and delete them; idle ones are deleted after
//!   the retention.
//! - The review queue ([`lessons`]): held lessons listed with why they were held, accepted or
//!   rejected from the API and the `/lessons` page, audited as the caller.
//! - Consent before any action ([`actions`]): what the coach prepared (`prepare_action`) is
//!   listed, confirmed — applied and audited as the caller — or discarded; pending actions
//!   expire ([`actions::expire_due`]).
//! - Alerts ([`alerts`]): the caller's alert channels (webhook, Slack, Discord, Telegram) added,
//!   listed, tested and deleted from the API and the `/alerts` page; their secrets never shown.
//! - Backtests ([`backtests`]): backtest jobs submitted as the caller (within their limits: a
//!   429 past them), listed and read with their progress and result from the API and the
//!   `/backtests` page; a job's report served at `/backtests/{id}/report`. Workers
//!   (`sim-worker work`) run them.
//! - Errors ([`error`]): one JSON shape, `{"error": "...", "field": "..."?}`; bad bodies are
//!   400/422 naming the field, unknown (or other users') ids 404, never a 500 for bad input.
//! - The OpenAPI 3.1 document ([`openapi`]): `GET /api/openapi.json`, public, generated from the
//!   handlers and the wire types; every route, parameter, body and status, errors included.
//! - Request text ([`input`]): a control character (a NUL, ...) in any text field of a JSON
//!   body or a form is a 422 naming the field; line breaks and tabs only where text may span
//!   lines.
//!
//! `/healthz` answers here too; `/metrics` stays with `live-runner run` (the counters are the
//! tick loop's, and a `serve` process does not tick).

/// A `POST` route on a resource `{id}` whose JSON body may be left out ([`error::OptionalJson`]:
/// an empty body is `T::default()`), with its OpenAPI operation: `$name` answers a `$answer`,
/// `$handler(&state, &caller, id, $value, body)`'s, documented as `$answers` (an
/// `IntoResponses`). The routes of the controls and of the review queue.
macro_rules! optional_body_post {
    (
        $summary:tt $name:ident $path:tt $operation:tt $description:tt,
        tag $tag:tt, id $id:tt, $body:ident -> $answer:ident in $answers:ident,
        $handler:ident($value:expr)
    ) => {
        #[doc = $summary]
        #[utoipa::path(
                    post,
                    path = $path,
                    operation_id = $operation,
                    tag = $tag,
                    description = $description,
                    params(("id" = Uuid, Path, description = $id)),
                    request_body(content = Option<$body>, content_type = "application/json"),
                    responses($answers)
                )]
        pub(super) async fn $name(
            axum::extract::State(state): axum::extract::State<AppState>,
            caller: Caller,
            ApiPath(id): ApiPath<Uuid>,
            OptionalJson(body): OptionalJson<$body>,
        ) -> Result<axum::Json<$answer>, ApiError> {
            $handler(&state, &caller, id, $value, body).await
        }
    };
}

pub mod actions;
pub mod alerts;
pub mod api;
pub mod auth;
pub mod backtests;
pub mod controls;
pub mod conversations;
pub mod csrf;
pub mod error;
pub mod headers;
pub mod input;
pub mod lessons;
pub mod model;
pub mod openapi;
pub mod pages;
pub mod wire;

use std::future::Future;
use std::sync::Arc;

use agent_runtime::{LanguageModel, RunOptions};
use axum::Router;
use axum::routing::get;
use chat::ChatMarket;
use db::{PgStore, UserScoped};
use prompt_compose::Tier;
use types::Clock;

pub use auth::{Auth, AuthError, Caller};
pub use error::ApiError;

/// How chat turns run on this server.
#[derive(Debug, Clone, Copy)]
pub struct ChatSettings {
    /// The users' plan as the prompt states it (one plan for every user today).
    pub tier: Tier,
    /// Most model calls of one turn.
    pub max_steps: u32,
    /// Per-call options (output-token cap).
    pub options: RunOptions,
    /// Days a kept conversation stays after its last turn (`--conversation-retention-days`).
    pub retention_days: u32,
}

impl Default for ChatSettings {
    fn default() -> Self {
        Self {
            tier: Tier::Pro,
            max_steps: chat::DEFAULT_CHAT_MAX_STEPS,
            options: RunOptions::default(),
            retention_days: conversations::DEFAULT_RETENTION_DAYS,
        }
    }
}

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The PostgreSQL store. Handlers never use it directly: they take
    /// [`AppState::store_for`] their [`Caller`].
    store: PgStore,
    /// The token keys.
    pub auth: Auth,
    /// The chat model, chosen at start (`--model`).
    pub model: Arc<dyn LanguageModel>,
    /// Where a chat turn's bars, funding and open interest come from (`--hl-url` or `--bars`,
    /// [`crate::chat_market`]).
    pub market: Arc<dyn ChatMarket>,
    /// The turn's time and "now" of every read.
    pub clock: Arc<dyn Clock>,
    /// How chat turns run.
    pub chat: ChatSettings,
    /// Whether the pages' session cookie is `Secure` (the server is reached over TLS;
    /// `serve --secure-cookies`).
    pub secure_cookies: bool,
    /// Each user's limits on backtest jobs, checked at submit (`serve --backtest-max-open-jobs`,
    /// `--backtest-cost-cap`).
    pub backtest_limits: db::JobLimits,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("model", &self.model.id())
            .field("chat", &self.chat)
            .field("secure_cookies", &self.secure_cookies)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The state of a server over `store`.
    #[must_use]
    pub fn new(
        store: PgStore,
        auth: Auth,
        model: Arc<dyn LanguageModel>,
        market: Arc<dyn ChatMarket>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            auth,
            model,
            market,
            clock,
            chat: ChatSettings::default(),
            secure_cookies: false,
            backtest_limits: db::JobLimits::default(),
        }
    }

    /// The store as `caller`: every statement in a transaction as role `authenticated` with
    /// the caller's JWT claims (row-level security). The only way a handler reaches the
    /// database.
    #[must_use]
    pub fn store_for(&self, caller: &Caller) -> UserScoped {
        self.store.as_user(caller.user_id)
    }
}

/// Why `serve` could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The token secret is missing or too short.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// `--db` is not PostgreSQL.
    #[error(
        "the chat server needs PostgreSQL (every request runs under row-level security, which \
         SQLite does not have); got a {0} URL"
    )]
    NotPostgres(&'static str),
    /// The database could not be opened or migrated.
    #[error("opening the database: {0}")]
    Db(#[from] db::DbError),
}

/// Opens `url` (migrating it), refusing anything but PostgreSQL.
///
/// # Errors
/// [`ServeError::NotPostgres`] for a SQLite URL, [`ServeError::Db`] when it cannot be opened.
pub async fn connect_postgres(url: &str) -> Result<PgStore, ServeError> {
    let scheme = url.split(':').next().unwrap_or_default();
    if scheme == "sqlite" {
        return Err(ServeError::NotPostgres("SQLite"));
    }
    match db::connect(url).await? {
        db::Store::Postgres(pg) => Ok(pg),
        db::Store::Sqlite(_) => Err(ServeError::NotPostgres("SQLite")),
    }
}

/// The whole application: `/healthz`, the API under `/api`, the pages, and a JSON 404 for
/// anything else; behind the cross-origin guard and with the security headers on every answer.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .nest("/api", api::router())
        .merge(pages::router())
        .fallback(|| async { ApiError::not_found("no such route") })
        .layer(axum::middleware::from_fn(csrf::guard))
        // Outermost: the guard's refusals carry the headers too.
        .layer(axum::middleware::from_fn(headers::set))
        .with_state(state)
}

/// Serves [`router`] on `listener` until `shutdown` resolves (requests in flight finish),
/// deleting the conversations idle past the retention ([`conversations::purge_idle`]) and
/// expiring the pending actions past their expiry ([`actions::expire_due`]) meanwhile.
///
/// # Errors
/// When the listener fails.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let purge = tokio::spawn(conversations::purge_idle(
        state.store.clone(),
        state.clock.clone(),
        state.chat.retention_days,
    ));
    let expire = tokio::spawn(actions::expire_due(
        state.store.clone(),
        state.clock.clone(),
    ));
    let served = axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await;
    purge.abort();
    expire.abort();
    served
}
