//! The chat server on a real PostgreSQL database and a real socket (127.0.0.1, a free port),
//! driven through reqwest; two users, each with a deployment that has ticked twice (a trade
//! opened then closed), a deployment note and a fact. Every answer under `/api` is checked
//! against the server's OpenAPI document ([`super::openapi`]): a test whose server answered
//! anything the document does not describe fails, naming the route.

use std::sync::Arc;

use agent_runtime::LanguageModel;
use chrono::{Duration, Utc};
use db::test_support::{
    Fixture, at, sample_closed_trade, sample_note, sample_open_trade, sample_snapshot, seed,
    tick_record,
};
use db::{FactStore, NewFact, NoteStore, PgStore, Store, TickRecord, TickStore};
use live_runner::serve::{self, AppState, Auth};
use reqwest::StatusCode;
use serde_json::Value;
use types::{FactConfidence, FactSource, SystemClock, TradeRecord, UserFact};
use uuid::Uuid;

use super::openapi::{self, Conformance};
use super::{Pg, postgres};

/// The tests' HS256 secret.
pub(crate) const SECRET: &str = "serve-tests-secret-0123456789abcdef";

/// A running server over its own database.
pub(crate) struct Server {
    pub pg: Pg,
    pub store: PgStore,
    pub auth: Auth,
    pub base: String,
    pub http: reqwest::Client,
    /// What the answers did to the OpenAPI document.
    pub conformance: Arc<Conformance>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
        // A test failing already says why; else every answer must have conformed.
        if !std::thread::panicking() {
            self.conformance.assert_clean();
        }
    }
}

/// One user of the world: their fixture, fact, closed trade and token.
pub(crate) struct Member {
    pub fx: Fixture,
    pub fact: UserFact,
    pub closed: TradeRecord,
    pub token: String,
}

impl Member {
    pub(crate) fn user(&self) -> Uuid {
        self.fx.user.id
    }
    pub(crate) fn deployment(&self) -> Uuid {
        self.fx.deployment.id
    }
}

/// Users A and B.
pub(crate) struct World {
    pub a: Member,
    pub b: Member,
}

/// A server answering chat turns with `model`.
pub(crate) async fn server(model: Arc<dyn LanguageModel>) -> Server {
    server_with(model, |_| {}).await
}

/// [`server`] with its state changed by `configure` first (e.g. `secure_cookies`).
pub(crate) async fn server_with(
    model: Arc<dyn LanguageModel>,
    configure: impl FnOnce(&mut AppState),
) -> Server {
    server_configured(model, Arc::new(SystemClock), configure).await
}

/// A server answering chat turns with `model` whose "now" is `clock`'s.
pub(crate) async fn server_with_clock(
    model: Arc<dyn LanguageModel>,
    clock: Arc<dyn types::Clock>,
) -> Server {
    server_configured(model, clock, |_| {}).await
}

/// A server whose "now" is `clock`'s and whose chat turns read their market from `market`.
pub(crate) async fn server_with_market(
    model: Arc<dyn LanguageModel>,
    clock: Arc<dyn types::Clock>,
    market: Arc<dyn chat::ChatMarket>,
) -> Server {
    server_configured(model, clock, |state| state.market = market).await
}

async fn server_configured(
    model: Arc<dyn LanguageModel>,
    clock: Arc<dyn types::Clock>,
    configure: impl FnOnce(&mut AppState),
) -> Server {
    let pg = postgres().await;
    let Store::Postgres(store) = pg.store.clone() else {
        panic!("the harness opens PostgreSQL")
    };
    let auth = Auth::new(SECRET).expect("secret");
    let mut state = AppState::new(
        store.clone(),
        auth.clone(),
        model,
        Arc::new(chat::FixedMarket::from(tools::Preloaded::new())),
        clock,
    );
    configure(&mut state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let conformance = Arc::new(Conformance::default());
    let app = serve::router(state).layer(axum::middleware::from_fn_with_state(
        conformance.clone(),
        openapi::layer,
    ));
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    Server {
        pg,
        store,
        auth,
        base,
        http: reqwest::Client::new(),
        conformance,
        task,
    }
}

/// A model that must not be called (routes without chat).
pub(crate) fn no_model() -> Arc<dyn LanguageModel> {
    Arc::new(agent_runtime::ScriptedModel::new(vec![]))
}

async fn member(s: &Server) -> Member {
    let store = &s.store;
    let fx = seed(store).await.expect("seed");
    let open = sample_open_trade(&fx, at(0));
    let closed = sample_closed_trade(&open, at(60));
    for (minutes, trade) in [(0, open), (60, closed.clone())] {
        store
            .record_tick(&TickRecord {
                trades: vec![trade],
                ..tick_record(sample_snapshot(fx.deployment.id, at(minutes)))
            })
            .await
            .expect("tick");
    }
    store
        .insert_note(&sample_note(&fx, at(30), "- first lesson"))
        .await
        .expect("note");
    store
        .insert_note(&sample_note(&fx, at(90), "- second lesson"))
        .await
        .expect("note");
    let fact = store
        .remember(
            &NewFact {
                id: Uuid::new_v4(),
                user_id: fx.user.id,
                skill_id: None,
                fact: format!("Trades BTC only ({}).", fx.user.id),
                source: FactSource::Chat,
                confidence: FactConfidence::Asserted,
                topic: Some("symbols".into()),
                actor: "chat-agent".into(),
            },
            at(0),
        )
        .await
        .expect("fact");
    let token = s
        .auth
        .mint(fx.user.id, Duration::hours(1), Utc::now())
        .expect("token");
    Member {
        fx,
        fact,
        closed,
        token,
    }
}

/// Two users with their data.
pub(crate) async fn world(s: &Server) -> World {
    World {
        a: member(s).await,
        b: member(s).await,
    }
}

/// The keys of `v` with a `_` (the API's keys are camelCase), as JSON paths. A tool call's
/// `arguments` and `result` are the tool's own JSON (its parameters, what the model read) and
/// are not walked.
pub(crate) fn snake_case_keys(v: &Value) -> Vec<String> {
    fn walk(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    let at = format!("{path}.{k}");
                    if k.contains('_') {
                        out.push(at.clone());
                    }
                    if !matches!(k.as_str(), "arguments" | "result") {
                        walk(v, &at, out);
                    }
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, "$", &mut out);
    out
}

/// A response's status and JSON body (`Value::Null` when the body is not JSON). Every JSON body
/// the API tests receive passes here, and each must have camelCase keys only.
pub(crate) async fn answer(r: reqwest::Response) -> (StatusCode, Value) {
    let status = r.status();
    let text = r.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    let snake = snake_case_keys(&body);
    assert!(snake.is_empty(), "snake_case keys {snake:?} in {body}");
    (status, body)
}

/// `event:` / `data:` pairs of a server-sent event stream, in order; every event name and JSON
/// data must be camelCase.
pub(crate) fn events(text: &str) -> Vec<(String, String)> {
    let events = openapi::sse_events(text);
    for (name, data) in &events {
        assert!(!name.contains('_'), "event name {name:?}");
        if let Ok(value) = serde_json::from_str::<Value>(data) {
            let snake = snake_case_keys(&value);
            assert!(
                snake.is_empty(),
                "snake_case keys {snake:?} in event {name}: {data}"
            );
        }
    }
    events
}

impl Server {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(crate) async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        answer(
            self.http
                .get(self.url(path))
                .bearer_auth(token)
                .send()
                .await
                .expect("GET"),
        )
        .await
    }

    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: &Value,
    ) -> (StatusCode, Value) {
        answer(
            self.http
                .request(method, self.url(path))
                .bearer_auth(token)
                .json(body)
                .send()
                .await
                .expect("request"),
        )
        .await
    }

    pub(crate) async fn post(&self, path: &str, token: &str, body: &Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::POST, path, token, body).await
    }

    /// A POST with the bearer token and no body at all.
    pub(crate) async fn post_empty(&self, path: &str, token: &str) -> (StatusCode, Value) {
        answer(
            self.http
                .post(self.url(path))
                .bearer_auth(token)
                .send()
                .await
                .expect("POST"),
        )
        .await
    }

    pub(crate) async fn patch(&self, path: &str, token: &str, body: &Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::PATCH, path, token, body).await
    }
}

/// A client that does not follow redirects.
pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// A page as the user of `token` (the session cookie), not following redirects.
pub(crate) async fn page(s: &Server, path: &str, token: &str) -> (StatusCode, String) {
    let r = http()
        .get(s.url(path))
        .header(reqwest::header::COOKIE, format!("token={token}"))
        .send()
        .await
        .expect("GET");
    (r.status(), r.text().await.expect("body"))
}

/// A form POST as the user of `token` from `origin`, not following redirects.
pub(crate) async fn post_form(
    s: &Server,
    path: &str,
    token: &str,
    form: &[(&str, &str)],
    origin: &str,
) -> reqwest::Response {
    http()
        .post(s.url(path))
        .header(reqwest::header::COOKIE, format!("token={token}"))
        .header("origin", origin)
        .form(form)
        .send()
        .await
        .expect("POST")
}
