//! Alerts end to end on a real PostgreSQL: ticks of the real runner (a scripted model, a mock
//! Hyperliquid) write their alerts, and the alert worker delivers them to a local receiver that
//! speaks each channel's wire format — a signed webhook (its HMAC recomputed here with the
//! `hmac` crate), a Slack- and a Discord-compatible webhook and the Telegram Bot API. The
//! receiver down for a minute (refusing connections, then answering 503) delays delivery, never
//! loses or doubles it; a runner killed mid-tick sends nothing twice; a channel that accepts and
//! never answers does not hold up the ticks; a `live-runner run` process killed with SIGKILL
//! mid-delivery, started again, delivers each alert once and logs no secret.

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_runtime::{LanguageModel, ModelError, ModelRequest, ModelResponse, ScriptedModel};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use chrono::{DateTime, Utc};
use common::{hyperliquid_mock, postgres, t};
use db::{
    AlertKind, AlertStore, ChannelKind, LedgerStore, NewAlertChannel, NoteStore, RegistryStore,
    TickStore,
};
use hmac::Mac as _;
use live_runner::admin::{self, DeployRequest};
use live_runner::alerts::{AlertConfig, AlertWorker};
use live_runner::runner::ModelResolver;
use live_runner::test_support::paper_deploy;
use model::test_support::{answer, tool_call, tool_turn};
use serde_json::Value;
use types::{SystemClock, TradeStatus, Verdict};
use uuid::Uuid;

const OWNER: Uuid = Uuid::from_u128(0xa1e7_0001);
const WEBHOOK_SECRET: &str = "whsec-0123456789-s3cret";
const BOT_TOKEN: &str = "123456:AAbot-t0ken_s3cret";
const SLACK_PATH: &str = "/services/T000/B000/slack-s3cret";
const DISCORD_PATH: &str = "/api/webhooks/42/discord-s3cret";
const CHAT: &str = "-100123";

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Up,
    Unavailable,
    Hang,
}

/// One request the receiver accepted (answered 200).
#[derive(Debug, Clone)]
struct Received {
    channel: &'static str,
    key: String,
    body: Value,
    /// For the webhook: whether the signature is the HMAC-SHA256 of `t.body` under the secret.
    signed: bool,
}

#[derive(Default)]
struct Inbox {
    mode: Option<Mode>,
    accepted: Vec<Received>,
    refused: usize,
    hanging: usize,
}

type Shared = Arc<Mutex<Inbox>>;

/// A local receiver for every channel kind: `POST /hook` (webhook), the Slack and Discord
/// paths, `POST /bot<token>/sendMessage` (Telegram).
struct Receiver {
    inbox: Shared,
    addr: SocketAddr,
    task: Option<tokio::task::JoinHandle<()>>,
}

fn verify(headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(sig) = headers.get("x-signature-256").and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some((t, v1)) = sig
        .strip_prefix("t=")
        .and_then(|rest| rest.split_once(",v1="))
    else {
        return false;
    };
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(WEBHOOK_SECRET.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    hex::encode(mac.finalize().into_bytes()) == v1
}

async fn take(
    inbox: &Shared,
    channel: &'static str,
    headers: &HeaderMap,
    body: &Bytes,
) -> StatusCode {
    let mode = inbox.lock().unwrap().mode.unwrap_or(Mode::Up);
    match mode {
        Mode::Unavailable => {
            inbox.lock().unwrap().refused += 1;
            StatusCode::SERVICE_UNAVAILABLE
        }
        Mode::Hang => {
            inbox.lock().unwrap().hanging += 1;
            std::future::pending::<()>().await;
            StatusCode::OK
        }
        Mode::Up => {
            let key = headers
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            inbox.lock().unwrap().accepted.push(Received {
                channel,
                key,
                body: value,
                signed: channel == "webhook" && verify(headers, body),
            });
            StatusCode::OK
        }
    }
}

impl Receiver {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut r = Receiver {
            inbox: Shared::default(),
            addr,
            task: None,
        };
        r.serve(listener);
        r
    }

    fn serve(&mut self, listener: tokio::net::TcpListener) {
        use axum::routing::post;
        let app =
            axum::Router::new()
                .route(
                    "/hook",
                    post(
                        |State(i): State<Shared>, h: HeaderMap, b: Bytes| async move {
                            take(&i, "webhook", &h, &b).await
                        },
                    ),
                )
                .route(
                    SLACK_PATH,
                    post(
                        |State(i): State<Shared>, h: HeaderMap, b: Bytes| async move {
                            take(&i, "slack", &h, &b).await
                        },
                    ),
                )
                .route(
                    DISCORD_PATH,
                    post(
                        |State(i): State<Shared>, h: HeaderMap, b: Bytes| async move {
                            take(&i, "discord", &h, &b).await
                        },
                    ),
                )
                .route(
                    "/{bot}/sendMessage",
                    post(
                        |State(i): State<Shared>,
                         Path(bot): Path<String>,
                         h: HeaderMap,
                         b: Bytes| async move {
                            if bot != format!("bot{BOT_TOKEN}") {
                                return StatusCode::UNAUTHORIZED;
                            }
                            take(&i, "telegram", &h, &b).await
                        },
                    ),
                )
                .with_state(self.inbox.clone());
        self.task = Some(tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        }));
    }

    /// Stops listening: connections are refused.
    fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    /// Listens again on the same address.
    async fn restart(&mut self) {
        let mut listener = None;
        for _ in 0..50 {
            match tokio::net::TcpListener::bind(self.addr).await {
                Ok(l) => {
                    listener = Some(l);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        self.serve(listener.expect("rebind the receiver"));
    }

    fn set(&self, mode: Mode) {
        self.inbox.lock().unwrap().mode = Some(mode);
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn accepted(&self) -> Vec<Received> {
        self.inbox.lock().unwrap().accepted.clone()
    }

    /// Waits (at most `limit`) until `n` requests were accepted.
    async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Received> {
        let until = std::time::Instant::now() + limit;
        loop {
            let got = self.accepted();
            if got.len() >= n || std::time::Instant::now() > until {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The user's four channels, every event kind each, at `r`.
async fn channels(pg: &common::Pg, r: &Receiver) -> Vec<db::AlertChannel> {
    let base = r.base();
    let mut out = Vec::new();
    for (kind, url, secret, chat) in [
        (
            ChannelKind::Webhook,
            Some(format!("{base}/hook")),
            Some(WEBHOOK_SECRET),
            None,
        ),
        (
            ChannelKind::Slack,
            Some(format!("{base}{SLACK_PATH}")),
            None,
            None,
        ),
        (
            ChannelKind::Discord,
            Some(format!("{base}{DISCORD_PATH}")),
            None,
            None,
        ),
        (ChannelKind::Telegram, None, Some(BOT_TOKEN), Some(CHAT)),
    ] {
        let c = NewAlertChannel {
            id: Uuid::new_v4(),
            user_id: OWNER,
            name: kind.as_str().to_owned(),
            kind,
            url,
            secret: secret.map(str::to_owned),
            chat_id: chat.map(str::to_owned),
            events: AlertKind::SUBSCRIBABLE.to_vec(),
            created_at: Utc::now(),
        };
        out.push(pg.store.add_alert_channel(&c).await.expect("channel"));
    }
    out
}

/// A worker delivering to `r` (Telegram's API at it too): retries after 1 s, 2 s, then every
/// 4 s; `timeout` per request.
fn worker(pg: &common::Pg, r: &Receiver, timeout: Duration) -> Arc<AlertWorker> {
    let mut config = AlertConfig::new(format!("alerts:{}", Uuid::new_v4()));
    config.timeout = timeout;
    config.retry_first = Duration::from_secs(1);
    config.retry_max = Duration::from_secs(4);
    config.max_attempts = 1000;
    config.poll = Duration::from_millis(100);
    config.telegram_api = r.base();
    Arc::new(AlertWorker::new(pg.store.clone(), Arc::new(SystemClock), config).expect("worker"))
}

fn skill() -> skill_schema::Skill {
    admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("test skill")
}

async fn deploy(pg: &common::Pg, id: u128, first: DateTime<Utc>) -> Uuid {
    let req = DeployRequest {
        id: Some(Uuid::from_u128(id)),
        ..paper_deploy(OWNER)
    };
    admin::deploy(
        &pg.store,
        &skill(),
        &req,
        first - chrono::Duration::minutes(30),
    )
    .await
    .expect("deploy")
    .id
}

/// What the scripted model does at a tick.
#[derive(Debug, Clone, Copy)]
enum Step {
    Propose(&'static str),
    Fail,
    Stuck,
}

struct Failing;

#[async_trait::async_trait]
impl LanguageModel for Failing {
    fn id(&self) -> &str {
        "test/failing"
    }
    async fn generate(&self, _: &ModelRequest) -> Result<ModelResponse, ModelError> {
        Err(ModelError::Http {
            provider: "openai".into(),
            status: 500,
            body: "upstream exploded".into(),
        })
    }
}

/// The skill's model doing `step` (its reflection model stays the builtin one).
fn resolver(step: Step) -> ModelResolver {
    Arc::new(move |id: &str, skill: &skill_schema::Skill| {
        if id != skill.model {
            return agent_runtime::builtin_model(id, skill)
                .ok_or_else(|| ModelError::UnknownModel(id.to_owned()));
        }
        Ok(match step {
            Step::Propose(args) => Arc::new(ScriptedModel::new(vec![
                tool_turn(vec![tool_call("c1", "propose_order", args)]),
                answer("done"),
            ])) as Arc<dyn LanguageModel>,
            Step::Fail => Arc::new(Failing) as Arc<dyn LanguageModel>,
            Step::Stuck => Arc::new(common::Stuck) as Arc<dyn LanguageModel>,
        })
    })
}

const OPEN_BTC: &str =
    r#"{"action":"open_long","symbol":"BTC","size_usd":1000,"leverage":1,"reason":"scripted"}"#;
const CLOSE_BTC: &str = r#"{"action":"close","symbol":"BTC","reason":"scripted exit"}"#;
const TOO_SMALL: &str = r#"{"action":"open_long","symbol":"BTC","size_usd":50,"leverage":1,"reason":"below the minimum"}"#;

/// One `once` runner at `now` doing `step`; returns how many ticks it recorded.
async fn tick(pg: &common::Pg, hl: &wiremock::MockServer, now: DateTime<Utc>, step: Step) -> u64 {
    let r = common::runner(pg, hl, now, "alerts", 2, Some(resolver(step))).await;
    r.clone().run(std::future::pending()).await.expect("run");
    r.metrics().ticks("recorded")
}

async fn deliveries(pg: &common::Pg) -> i64 {
    pg.count("SELECT count(*) FROM alert_deliveries").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_event_kind_reaches_each_channel_in_its_wire_format_once() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let r = Receiver::start().await;
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy(&pg, 0xa1e7_d001, first).await;
    let chans = channels(&pg, &r).await;
    let hour = |h: i64| first + chrono::Duration::hours(h) + chrono::Duration::seconds(2);

    // Open, close (a position closed with its PnL), an order below the skill's minimum (a
    // rejection), then a drawdown halt: the equity's recorded peak is raised far above the
    // equity, as a losing run would leave it, and the engine refuses the next opening.
    for (h, step) in [
        (0, Step::Propose(OPEN_BTC)),
        (1, Step::Propose(CLOSE_BTC)),
        (2, Step::Propose(TOO_SMALL)),
    ] {
        assert_eq!(tick(&pg, &hl, hour(h), step).await, 1, "bar {h}");
    }
    sqlx::query(
        "UPDATE live_runner_state SET state = jsonb_set(state, '{risk,peak_equity_usd}', \
         '\"100000\"') WHERE deployment_id = $1",
    )
    .bind(id)
    .execute(pg.pool())
    .await
    .unwrap();
    assert_eq!(tick(&pg, &hl, hour(3), Step::Propose(OPEN_BTC)).await, 1);
    // Three model errors in a row (the third also starts ten minutes late).
    for h in [4, 5] {
        assert_eq!(tick(&pg, &hl, hour(h), Step::Fail).await, 1);
    }
    let late = first + chrono::Duration::hours(6) + chrono::Duration::minutes(10);
    assert_eq!(tick(&pg, &hl, late, Step::Fail).await, 1);
    // A reflection that holds its note for review (stored as the reflection worker stores it).
    let d = pg.store.get_deployment(id).await.unwrap();
    let mut note = db::NewNote {
        id: Uuid::new_v4(),
        skill_id: d.skill_id,
        skill_version: d.skill_version,
        deployment_id: Some(id),
        generated_at: late,
        content: types::NoteContent {
            window_start: first,
            window_end: late,
            trades_considered: 1,
            lessons_text: "- a lesson".into(),
            model_used: "builtin/stats-reflection".into(),
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
            observations: Vec::new(),
            dropped: Vec::new(),
            held: Vec::new(),
        },
        lint: None,
    };
    note.lint = Some(db::test_support::lint("names a price level"));
    pg.store.insert_note(&note).await.expect("held note");

    let snaps = pg.store.list_snapshots(id, 20).await.unwrap();
    assert_eq!(snaps.len(), 7);
    let by_hour = |h: i64| {
        snaps
            .iter()
            .find(|s| s.tick_at == first + chrono::Duration::hours(h))
            .unwrap()
    };
    assert!(matches!(by_hour(0).verdict, Verdict::Executed { .. }));
    assert!(matches!(by_hour(1).verdict, Verdict::Executed { .. }));
    let Verdict::Rejected { rule, .. } = &by_hour(2).verdict else {
        panic!("{:?}", by_hour(2).verdict)
    };
    let rejected_rule = rule.as_str();
    assert!(matches!(
        by_hour(3).verdict,
        Verdict::Rejected {
            rule: types::RuleCode::HaltDrawdown,
            ..
        }
    ));
    let closed: Vec<_> = pg
        .store
        .all_trades(id)
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.status == TradeStatus::Closed)
        .collect();
    assert_eq!(closed.len(), 1);

    // 2 orders executed, 1 position closed, 1 rejection, 1 halt, 3 model errors, 1 streak,
    // 1 lag, 1 held lesson: 11 events, each to the 4 channels.
    assert_eq!(pg.count("SELECT count(*) FROM alert_events").await, 11);
    assert_eq!(deliveries(&pg).await, 44);

    let w = worker(&pg, &r, Duration::from_secs(5));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(w.clone().run(async move {
        let _ = stopped.await;
    }));
    let got = r.wait_for(44, Duration::from_secs(60)).await;
    // Nothing more arrives: every delivery is settled.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = stop.send(());
    running.await.unwrap();
    let got_after = r.accepted();
    assert_eq!(got_after.len(), 44, "{got:#?}");

    // Each delivery once: its idempotency key (header; the webhook's body too) is unique.
    let mut keys: BTreeMap<&str, usize> = BTreeMap::new();
    for g in &got_after {
        *keys.entry(g.key.as_str()).or_default() += 1;
    }
    assert_eq!(keys.len(), 44);
    assert!(keys.values().all(|n| *n == 1));

    let per_channel = |c: &str| {
        got_after
            .iter()
            .filter(|g| g.channel == c)
            .collect::<Vec<_>>()
    };
    let hooks = per_channel("webhook");
    assert_eq!(hooks.len(), 11);
    let mut kinds: Vec<&str> = hooks
        .iter()
        .map(|g| g.body["kind"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        vec![
            "halt",
            "lesson_held",
            "model_error",
            "model_error",
            "model_error",
            "model_error_streak",
            "order_executed",
            "order_executed",
            "position_closed",
            "rejection",
            "runner_lagging"
        ]
    );
    for h in &hooks {
        assert!(h.signed, "HMAC over t.body under the secret: {:?}", h.body);
        assert_eq!(h.body["idempotencyKey"].as_str(), Some(h.key.as_str()));
        assert_eq!(h.body["id"].as_str(), Some(h.key.as_str()));
    }
    let text_of = |kind: &str| -> String {
        hooks.iter().find(|h| h.body["kind"] == kind).unwrap().body["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // The PnL as the ledger has it, in the prompts' money style; the rejection's rule code.
    let pnl = types::text::signed_money(closed[0].realized_pnl_usd);
    assert!(
        text_of("position_closed").contains(&format!("realized PnL {pnl}")),
        "{}",
        text_of("position_closed")
    );
    let closed_hook = hooks
        .iter()
        .find(|h| h.body["kind"] == "position_closed")
        .unwrap();
    assert_eq!(
        closed_hook.body["data"]["realizedPnlUsd"].as_str(),
        Some(closed[0].realized_pnl_usd.to_string().as_str())
    );
    assert!(
        text_of("rejection").contains(rejected_rule),
        "{}",
        text_of("rejection")
    );
    assert!(text_of("halt").contains("R9_HALT_DRAWDOWN"));
    assert!(text_of("model_error_streak").contains("last 3 ticks"));
    assert!(
        text_of("runner_lagging").contains("started 600 s after"),
        "{}",
        text_of("runner_lagging")
    );
    // Slack, Discord and Telegram: their own bodies, the same texts.
    let texts: Vec<String> = hooks
        .iter()
        .map(|h| h.body["text"].as_str().unwrap().to_owned())
        .collect();
    for (channel, field) in [
        ("slack", "text"),
        ("discord", "content"),
        ("telegram", "text"),
    ] {
        let got = per_channel(channel);
        assert_eq!(got.len(), 11, "{channel}");
        for g in got {
            let obj = g.body.as_object().unwrap();
            let expected_keys: Vec<&str> = if channel == "telegram" {
                vec!["chat_id", "text"]
            } else {
                vec![field]
            };
            assert_eq!(
                obj.keys().map(String::as_str).collect::<Vec<_>>(),
                expected_keys
            );
            let shown = g.body[field].as_str().unwrap();
            // Slack's body escapes `&`, `<` and `>` (Slack shows them as written).
            let shown = if channel == "slack" {
                shown
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&amp;", "&")
            } else {
                shown.to_owned()
            };
            assert!(texts.contains(&shown), "{channel}: {shown}");
            if channel == "telegram" {
                assert_eq!(g.body["chat_id"], CHAT);
            }
        }
    }
    // Settled in the store, and nothing left to send.
    assert_eq!(
        pg.count(
            "SELECT count(*) FROM alert_deliveries WHERE status = 'delivered' AND attempts = 1"
        )
        .await,
        44
    );
    assert_eq!(chans.len(), 4);
}

/// The receiver down for a real minute — 30 s refusing connections, 30 s answering 503 — while
/// the worker retries every few seconds: each event arrives once, after it is up again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn alerts_survive_the_receiver_down_for_a_minute() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let mut r = Receiver::start().await;
    let first = t("2026-11-02T12:00:00Z");
    deploy(&pg, 0xa1e7_d002, first).await;
    channels(&pg, &r).await;
    r.stop();
    let w = worker(&pg, &r, Duration::from_secs(5));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(w.clone().run(async move {
        let _ = stopped.await;
    }));
    let now = first + chrono::Duration::seconds(2);
    assert_eq!(tick(&pg, &hl, now, Step::Propose(OPEN_BTC)).await, 1);
    assert_eq!(deliveries(&pg).await, 4);

    tokio::time::sleep(Duration::from_secs(30)).await;
    let failed_attempts = pg
        .count("SELECT coalesce(sum(attempts), 0)::bigint FROM alert_deliveries WHERE status = 'pending'")
        .await;
    assert!(
        failed_attempts >= 4 * 3,
        "retried while refused: {failed_attempts}"
    );
    let errors: Vec<String> = sqlx::query_scalar("SELECT last_error FROM alert_deliveries")
        .fetch_all(pg.pool())
        .await
        .unwrap();
    for e in &errors {
        assert!(e.contains("could not connect"), "{e}");
        for secret in ["s3cret", BOT_TOKEN, SLACK_PATH, DISCORD_PATH] {
            assert!(!e.contains(secret), "a secret in the stored error: {e}");
        }
    }
    r.set(Mode::Unavailable);
    r.restart().await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(r.accepted().is_empty());
    assert!(
        r.inbox.lock().unwrap().refused >= 4,
        "answered 503 meanwhile"
    );
    r.set(Mode::Up);
    let got = r.wait_for(4, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = stop.send(());
    running.await.unwrap();
    let got = if got.len() == 4 { r.accepted() } else { got };
    assert_eq!(w.metrics().alerts("delivered"), 4);
    assert!(
        w.metrics().alerts("retry") >= 4 * 6,
        "{}",
        w.metrics().render()
    );
    assert_eq!(got.len(), 4, "each channel once: {got:#?}");
    let mut keys: Vec<&str> = got.iter().map(|g| g.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 4);
    assert_eq!(
        pg.count(
            "SELECT count(*) FROM alert_deliveries WHERE status = 'delivered' AND attempts > 5"
        )
        .await,
        4
    );
}

/// A runner killed mid-tick (its task aborted: no release, nothing committed) writes no alert;
/// the runner that takes the tick over writes them once, and a runner started again at the
/// same bar finds the tick done and writes nothing: the receiver gets each event once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_runner_killed_mid_tick_sends_nothing_twice() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let r = Receiver::start().await;
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy(&pg, 0xa1e7_d003, first).await;
    channels(&pg, &r).await;
    let w = worker(&pg, &r, Duration::from_secs(5));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(w.clone().run(async move {
        let _ = stopped.await;
    }));

    let now = first + chrono::Duration::seconds(2);
    let doomed = common::runner(&pg, &hl, now, "doomed", 2, Some(resolver(Step::Stuck))).await;
    let owner = doomed.owner().to_owned();
    let task = tokio::spawn(doomed.clone().run(std::future::pending()));
    for _ in 0..200 {
        if pg
            .count(&format!(
                "SELECT count(*) FROM live_runner_state WHERE attempt_owner = '{owner}'"
            ))
            .await
            == 1
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    task.abort(); // kill -9, as far as the database can tell
    let _ = task.await;
    assert_eq!(pg.count("SELECT count(*) FROM decision_snapshots").await, 0);
    assert_eq!(pg.count("SELECT count(*) FROM alert_events").await, 0);

    // After the lease expired (4 minutes), the tick is taken over and completed once.
    let later = now + chrono::Duration::minutes(5);
    assert_eq!(tick(&pg, &hl, later, Step::Propose(OPEN_BTC)).await, 1);
    // Started again at the same bar: done already, nothing written.
    assert_eq!(
        tick(
            &pg,
            &hl,
            later + chrono::Duration::minutes(1),
            Step::Propose(OPEN_BTC)
        )
        .await,
        0
    );
    assert_eq!(pg.store.list_snapshots(id, 10).await.unwrap().len(), 1);
    // One order executed and the late start (5 minutes after the close): 2 events, 4 channels.
    assert_eq!(pg.count("SELECT count(*) FROM alert_events").await, 2);
    assert_eq!(deliveries(&pg).await, 8);
    let got = r.wait_for(8, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _ = stop.send(());
    running.await.unwrap();
    assert_eq!(got.len(), 8);
    let all = r.accepted();
    assert_eq!(all.len(), 8, "nothing sent twice");
    let mut keys: Vec<&str> = all.iter().map(|g| g.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 8);
}

/// A channel that accepts connections and never answers: the ticks are recorded bar after bar
/// while its deliveries stay leased and pending (the worker is not on the tick path).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hanging_channel_does_not_hold_up_the_ticks() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let r = Receiver::start().await;
    r.set(Mode::Hang);
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy(&pg, 0xa1e7_d004, first).await;
    channels(&pg, &r).await;
    // Requests time out only after an hour: they hang for the whole test.
    let w = worker(&pg, &r, Duration::from_secs(3600));
    let running = tokio::spawn(w.clone().run(std::future::pending()));

    assert_eq!(
        tick(
            &pg,
            &hl,
            first + chrono::Duration::seconds(2),
            Step::Propose(OPEN_BTC)
        )
        .await,
        1
    );
    // Wait until the worker is stuck on the bar's four deliveries.
    for _ in 0..200 {
        if r.inbox.lock().unwrap().hanging == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(r.inbox.lock().unwrap().hanging, 4);
    for h in 1..=3 {
        let now = first + chrono::Duration::hours(h) + chrono::Duration::seconds(2);
        let step = if h == 1 {
            Step::Propose(CLOSE_BTC)
        } else {
            Step::Propose(OPEN_BTC)
        };
        assert_eq!(
            tick(&pg, &hl, now, step).await,
            1,
            "bar {h} ticked on schedule"
        );
    }
    assert_eq!(pg.store.list_snapshots(id, 10).await.unwrap().len(), 4);
    // 4 + 8 + 4 + 4 deliveries, none settled: the requests in flight still hang.
    assert_eq!(deliveries(&pg).await, 20);
    assert_eq!(
        pg.count("SELECT count(*) FROM alert_deliveries WHERE status = 'pending' AND attempts = 0")
            .await,
        20
    );
    assert!(
        pg.count("SELECT count(*) FROM alert_deliveries WHERE lease_owner IS NOT NULL")
            .await
            >= 4
    );
    assert!(r.accepted().is_empty());
    running.abort();
}

/// `live-runner run` as a process of its own, alerting to `r` (every alert of a tick that
/// starts a second or more after its bar closed is `runner_lagging`), its log in `log`.
fn run_process(
    pg: &common::Pg,
    hl: &wiremock::MockServer,
    r: &Receiver,
    log: &std::path::Path,
) -> std::process::Child {
    let log = std::fs::File::create(log).expect("log file");
    std::process::Command::new(env!("CARGO_BIN_EXE_live-runner"))
        .args([
            "run",
            "--db",
            &pg.url(),
            "--hl-url",
            &hl.uri(),
            "--poll",
            "1s",
        ])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--alert-lag",
            "1s",
            "--alert-timeout",
            "2s",
        ])
        .args(["--alert-retry-first", "1s", "--alert-retry-max", "2s"])
        .args(["--telegram-api", &r.base()])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn live-runner run")
}

/// A runner process killed with SIGKILL while its alerts are in flight (the receiver holds
/// every request without answering): the process started again does not tick the bar again
/// and delivers each alert once, after the dead process's leases expire — and neither
/// process logs a channel's URL path, secret or bot token.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_runner_process_killed_with_sigkill_mid_delivery_sends_each_alert_once() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let r = Receiver::start().await;
    r.set(Mode::Hang);
    let now = Utc::now();
    let id = deploy(&pg, 0xa1e7_d005, now + chrono::Duration::hours(2)).await;
    channels(&pg, &r).await;
    sqlx::query("UPDATE deployments SET next_tick_at = now() - interval '1 minute' WHERE id = $1")
        .bind(id)
        .execute(pg.pool())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (first_log, second_log) = (dir.path().join("first.log"), dir.path().join("second.log"));

    let mut first = run_process(&pg, &hl, &r, &first_log);
    for _ in 0..600 {
        if r.inbox.lock().unwrap().hanging >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        r.inbox.lock().unwrap().hanging >= 4,
        "the four channels' requests are in flight"
    );
    first.kill().expect("SIGKILL"); // `Child::kill` is SIGKILL on Unix
    first.wait().expect("reaped");
    assert_eq!(pg.store.list_snapshots(id, 10).await.unwrap().len(), 1);
    let events = pg.count("SELECT count(*) FROM alert_events").await;
    assert!(events >= 1, "at least the late start");
    assert_eq!(deliveries(&pg).await, events * 4);
    assert!(r.accepted().is_empty());

    r.set(Mode::Up);
    let mut second = run_process(&pg, &hl, &r, &second_log);
    let expected = usize::try_from(events * 4).unwrap();
    let got = r.wait_for(expected, Duration::from_secs(90)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &second.id().to_string()])
        .status();
    second.wait().expect("second runner stops");
    assert_eq!(got.len(), expected, "{got:#?}");
    let all = r.accepted();
    assert_eq!(all.len(), expected, "nothing sent twice");
    let mut keys: Vec<&str> = all.iter().map(|g| g.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), expected);
    assert_eq!(
        pg.store.list_snapshots(id, 10).await.unwrap().len(),
        1,
        "the bar is not ticked again"
    );
    assert_eq!(pg.count("SELECT count(*) FROM alert_events").await, events);
    let delivered = std::fs::read_to_string(&second_log).unwrap();
    assert!(delivered.contains("alert delivered"), "{delivered}");
    for log in [&first_log, &second_log] {
        let text = std::fs::read_to_string(log).unwrap();
        for secret in [
            WEBHOOK_SECRET,
            BOT_TOKEN,
            SLACK_PATH,
            DISCORD_PATH,
            "s3cret",
        ] {
            assert!(!text.contains(secret), "{secret} logged: {text}");
        }
    }
}
