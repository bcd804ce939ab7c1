//! The alert worker: delivers the outbox the ticks write (see [`db::alerts`]) to each user's
//! channels, off the tick path — a task of its own, its own HTTP client with a request timeout,
//! leases on the deliveries (`FOR UPDATE SKIP LOCKED`), retries with exponential backoff, at
//! least once, each request carrying the delivery's id as its idempotency key.
//!
//! The wire formats ([`request`]):
//! - `webhook`: `POST` of a JSON object (`id`, `idempotencyKey`, `eventId`, `kind`,
//!   `deploymentId`, `occurredAt`, `text`, `data`) with `Idempotency-Key: <id>` and
//!   `X-Signature-256: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the secret>`;
//! - `slack`: `POST {"text": …}` (a Slack-compatible incoming webhook; `&`, `<`, `>` escaped
//!   as Slack asks);
//! - `discord`: `POST {"content": …}` (a Discord-compatible webhook);
//! - `telegram`: `POST {base}/bot<token>/sendMessage` with `{"chat_id", "text"}`.
//!
//! Every request carries `Idempotency-Key`. A 2xx answer is delivered; anything else (a refused
//! connection, a timeout, another status) is retried. Errors are kept and logged without the
//! URL (a Slack or Discord URL and a bot token are secrets) and without the answer's body.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use db::{AlertOutbox, ChannelKind, ClaimedDelivery, Store};
use hmac::Mac as _;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use types::Clock;

use crate::metrics::Metrics;

/// The default Telegram Bot API base URL.
pub const TELEGRAM_API: &str = "https://api.telegram.org";

/// How the worker delivers.
#[derive(Debug, Clone)]
pub struct AlertConfig {
    /// This process's lease owner name.
    pub owner: String,
    /// A request's timeout (connect, send, answer).
    pub timeout: Duration,
    /// The wait before the second attempt; doubled after each further failure.
    pub retry_first: Duration,
    /// The longest wait between two attempts.
    pub retry_max: Duration,
    /// Attempts before a delivery is given up (`failed`).
    pub max_attempts: u32,
    /// Most requests in flight at once.
    pub concurrency: usize,
    /// How often to look for due deliveries when idle.
    pub poll: Duration,
    /// The Telegram Bot API base URL (overridable for tests and proxies).
    pub telegram_api: String,
}

impl AlertConfig {
    /// Defaults for `owner`: a 10 s timeout, retries after 5 s, 10 s, 20 s … up to 10 minutes,
    /// 20 attempts (about two hours), 8 requests at once, 2 s polling.
    #[must_use]
    pub fn new(owner: impl Into<String>) -> Self {
        AlertConfig {
            owner: owner.into(),
            timeout: Duration::from_secs(10),
            retry_first: Duration::from_secs(5),
            retry_max: Duration::from_secs(600),
            max_attempts: 20,
            concurrency: 8,
            poll: Duration::from_secs(2),
            telegram_api: TELEGRAM_API.to_owned(),
        }
    }

    /// The wait after the `failed`-th failed attempt (1-based): `retry_first · 2^(failed−1)`,
    /// at most `retry_max`.
    #[must_use]
    pub fn backoff(&self, failed: u32) -> Duration {
        let doublings = failed.saturating_sub(1).min(30);
        self.retry_first
            .saturating_mul(1u32 << doublings)
            .min(self.retry_max)
    }

    /// How long a claimed delivery is leased: longer than any request can take.
    fn lease_for(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.timeout.saturating_mul(3) + Duration::from_secs(10))
            .unwrap_or(chrono::Duration::minutes(1))
    }
}

/// Why an alert worker cannot start.
#[derive(Debug, thiserror::Error)]
pub enum AlertError {
    /// The HTTP client could not be built.
    #[error("alert HTTP client: {0}")]
    Client(String),
    /// The store is not PostgreSQL.
    #[error("alert delivery needs PostgreSQL (leases); got a {0} store")]
    NotPostgres(&'static str),
}

/// One HTTP request of a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertRequest {
    /// Where it goes (holds a secret for Slack, Discord and Telegram: never logged).
    pub url: String,
    /// Its headers besides `Content-Type: application/json`.
    pub headers: Vec<(&'static str, String)>,
    /// Its JSON body.
    pub body: Vec<u8>,
}

/// The request delivering `d` at `now` (the signature's time), Telegram's at `telegram_api`.
///
/// # Errors
/// A text naming what the channel lacks (a stored channel always has it: the schema checks).
pub fn request(
    d: &ClaimedDelivery,
    telegram_api: &str,
    now: DateTime<Utc>,
) -> Result<AlertRequest, String> {
    let key = d.id.to_string();
    let missing = |what: &str| format!("the {} channel has no {what}", d.channel_kind.as_str());
    let (url, body, signed) = match d.channel_kind {
        ChannelKind::Webhook => {
            let body = json!({
                "id": d.id,
                "idempotencyKey": d.id,
                "eventId": d.event_id,
                "kind": d.kind.as_str(),
                "deploymentId": d.deployment_id,
                "occurredAt": d.occurred_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "text": d.text,
                "data": d.data,
            });
            let url = d.url.clone().ok_or_else(|| missing("URL"))?;
            let secret = d.secret.as_deref().ok_or_else(|| missing("secret"))?;
            (url, body, Some(secret))
        }
        ChannelKind::Slack => (
            d.url.clone().ok_or_else(|| missing("URL"))?,
            json!({ "text": slack_escaped(&d.text) }),
            None,
        ),
        ChannelKind::Discord => (
            d.url.clone().ok_or_else(|| missing("URL"))?,
            json!({ "content": d.text }),
            None,
        ),
        ChannelKind::Telegram => {
            let token = d.secret.as_deref().ok_or_else(|| missing("bot token"))?;
            let chat = d.chat_id.as_deref().ok_or_else(|| missing("chat id"))?;
            (
                format!(
                    "{}/bot{token}/sendMessage",
                    telegram_api.trim_end_matches('/')
                ),
                json!({ "chat_id": chat, "text": d.text }),
                None,
            )
        }
    };
    let body = serde_json::to_vec(&body).map_err(|e| format!("serialising the body: {e}"))?;
    let mut headers = vec![("Idempotency-Key", key)];
    if let Some(secret) = signed {
        headers.push(("X-Signature-256", signature(secret, now.timestamp(), &body)));
    }
    Ok(AlertRequest { url, headers, body })
}

/// `text` with the three characters Slack's message formatting reads as markup escaped (`&`,
/// `<`, `>`), so a rule's `60.01% > 60%` shows as written.
#[must_use]
pub fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `t=<unix>,v1=<hex HMAC-SHA256 of "<unix>.<body>" under secret>`.
#[must_use]
pub fn signature(secret: &str, unix: i64, body: &[u8]) -> String {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut mac = match hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(e) => unreachable!("HMAC accepts any key length: {e}"),
    };
    mac.update(unix.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("t={unix},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// What one pass of the worker did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    /// Accepted by their channel.
    pub delivered: u32,
    /// Failed and scheduled again.
    pub retried: u32,
    /// Failed for the last time.
    pub given_up: u32,
}

/// The alert worker (see the module docs).
pub struct AlertWorker {
    store: Store,
    clock: Arc<dyn Clock>,
    config: AlertConfig,
    http: reqwest::Client,
    metrics: Metrics,
}

/// How one attempt ended.
enum Sent {
    Delivered,
    Failed(String),
}

impl AlertWorker {
    /// A worker over a PostgreSQL `store`; `clock` stamps the attempts and their retries.
    ///
    /// # Errors
    /// [`AlertError`] for a SQLite store or an HTTP client that cannot be built.
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        config: AlertConfig,
    ) -> Result<Self, AlertError> {
        if let Store::Sqlite(_) = &store {
            return Err(AlertError::NotPostgres(store.backend_name()));
        }
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| AlertError::Client(e.without_url().to_string()))?;
        Ok(AlertWorker {
            store,
            clock,
            config,
            http,
            metrics: Metrics::default(),
        })
    }

    /// Counts the attempts into `metrics` (the runner's, served on its `/metrics`).
    #[must_use]
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// The worker's metrics.
    #[must_use]
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Sends one delivery; never longer than the request timeout.
    async fn send(&self, d: &ClaimedDelivery) -> Sent {
        let req = match request(d, &self.config.telegram_api, self.clock.now()) {
            Ok(r) => r,
            Err(e) => return Sent::Failed(e),
        };
        let mut builder = self
            .http
            .post(&req.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in &req.headers {
            builder = builder.header(*name, value);
        }
        match builder.body(req.body).send().await {
            Ok(answer) if answer.status().is_success() => Sent::Delivered,
            Ok(answer) => Sent::Failed(format!("the channel answered {}", answer.status())),
            // Without the URL: it may hold the channel's secret.
            Err(e) => Sent::Failed(describe(&e)),
        }
    }

    /// Records how `d`'s attempt ended: delivered, or retried after the backoff, or given up.
    async fn settle(&self, d: &ClaimedDelivery, sent: Sent, report: &mut DeliveryReport) {
        let owner = &self.config.owner;
        let now = self.clock.now();
        let result = match sent {
            Sent::Delivered => {
                report.delivered += 1;
                self.metrics.alert("delivered");
                tracing::info!(delivery = %d.id, channel = %d.channel_id, kind = d.kind.as_str(), "alert delivered");
                self.store.finish_alert_delivery(d.id, owner, now).await
            }
            Sent::Failed(error) => {
                let failed = d.attempts + 1;
                let retry_at = (failed < self.config.max_attempts).then(|| {
                    now + chrono::Duration::from_std(self.config.backoff(failed))
                        .unwrap_or(chrono::Duration::minutes(10))
                });
                if retry_at.is_some() {
                    report.retried += 1;
                    self.metrics.alert("retry");
                } else {
                    report.given_up += 1;
                    self.metrics.alert("failed");
                }
                tracing::warn!(
                    delivery = %d.id,
                    channel = %d.channel_id,
                    kind = d.kind.as_str(),
                    attempts = failed,
                    gave_up = retry_at.is_none(),
                    error = %error,
                    "alert delivery failed"
                );
                self.store
                    .retry_alert_delivery(d.id, owner, &error, retry_at)
                    .await
            }
        };
        match result {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(delivery = %d.id, "the alert's lease was lost before its result was stored");
            }
            Err(e) => {
                tracing::warn!(delivery = %d.id, error = %e, "storing the alert's result failed");
            }
        }
    }

    /// Leases up to `limit` (1 to 1,000) due deliveries to this worker.
    async fn claim(&self, limit: usize) -> Result<Vec<ClaimedDelivery>, db::DbError> {
        let limit = u32::try_from(limit.clamp(1, 1000)).unwrap_or(1);
        self.store
            .claim_alert_deliveries(
                &self.config.owner,
                self.clock.now(),
                self.config.lease_for(),
                limit,
            )
            .await
    }

    /// One pass: claims what is due now (up to the concurrency), sends it all at once and
    /// records each result; returns when every request of the pass ended.
    ///
    /// # Errors
    /// The store's error when the claim fails.
    pub async fn deliver_due(self: &Arc<Self>) -> Result<DeliveryReport, db::DbError> {
        let claimed = self.claim(self.config.concurrency).await?;
        let mut set = JoinSet::new();
        for d in claimed {
            let me = self.clone();
            set.spawn(async move {
                let sent = me.send(&d).await;
                let mut report = DeliveryReport::default();
                me.settle(&d, sent, &mut report).await;
                report
            });
        }
        let mut total = DeliveryReport::default();
        while let Some(joined) = set.join_next().await {
            if let Ok(r) = joined {
                total.delivered += r.delivered;
                total.retried += r.retried;
                total.given_up += r.given_up;
            }
        }
        Ok(total)
    }

    /// Delivers until `shutdown` resolves (then waits for the requests in flight, each at most
    /// the timeout). Requests run concurrently up to the configured number: a channel that
    /// hangs holds one slot until its timeout, never the others, and never a tick.
    pub async fn run(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        let slots = Arc::new(Semaphore::new(self.config.concurrency.max(1)));
        let mut set: JoinSet<()> = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            let free = slots.available_permits();
            let mut claimed_any = false;
            if free > 0 {
                match self.claim(free).await {
                    Ok(claimed) => {
                        claimed_any = !claimed.is_empty();
                        for d in claimed {
                            let Ok(permit) = slots.clone().acquire_owned().await else {
                                break;
                            };
                            let me = self.clone();
                            set.spawn(async move {
                                let _slot = permit;
                                let sent = me.send(&d).await;
                                me.settle(&d, sent, &mut DeliveryReport::default()).await;
                            });
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "claiming alert deliveries failed"),
                }
            }
            while set.try_join_next().is_some() {}
            if claimed_any && slots.available_permits() > 0 {
                // More may be due: claim again at once.
                continue;
            }
            tokio::select! {
                () = &mut shutdown => break,
                Some(_) = set.join_next(), if !set.is_empty() => {}
                () = tokio::time::sleep(self.config.poll) => {}
            }
        }
        while set.join_next().await.is_some() {}
    }
}

/// A request's error without its URL: what failed (connect, timeout, …) and why.
fn describe(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_request() {
        "the request failed"
    } else {
        "failed"
    };
    let mut out = what.to_owned();
    let mut source = std::error::Error::source(e);
    // The causes below reqwest's own error (hyper, the OS) name no URL.
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use db::AlertKind;
    use uuid::Uuid;

    fn delivery(kind: ChannelKind) -> ClaimedDelivery {
        ClaimedDelivery {
            id: Uuid::from_u128(1),
            event_id: Uuid::from_u128(2),
            kind: AlertKind::Halt,
            user_id: Uuid::from_u128(3),
            deployment_id: Some(Uuid::from_u128(4)),
            occurred_at: DateTime::UNIX_EPOCH,
            text: "Trading halted".to_owned(),
            data: json!({}),
            channel_id: Uuid::from_u128(5),
            channel_kind: kind,
            url: (kind != ChannelKind::Telegram).then(|| "https://h.example/s3cret".to_owned()),
            secret: matches!(kind, ChannelKind::Webhook | ChannelKind::Telegram)
                .then(|| "12:tok".to_owned()),
            chat_id: (kind == ChannelKind::Telegram).then(|| "42".to_owned()),
            attempts: 0,
        }
    }

    #[test]
    fn each_channel_speaks_its_wire_format() {
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let slack = request(&delivery(ChannelKind::Slack), TELEGRAM_API, at).unwrap();
        assert_eq!(slack.body, br#"{"text":"Trading halted"}"#);
        assert_eq!(slack_escaped("a < b & c > d"), "a &lt; b &amp; c &gt; d");
        let discord = request(&delivery(ChannelKind::Discord), TELEGRAM_API, at).unwrap();
        assert_eq!(discord.body, br#"{"content":"Trading halted"}"#);
        let tg = request(&delivery(ChannelKind::Telegram), "http://t.test/", at).unwrap();
        assert_eq!(tg.url, "http://t.test/bot12:tok/sendMessage");
        assert_eq!(tg.body, br#"{"chat_id":"42","text":"Trading halted"}"#);
        let hook = request(&delivery(ChannelKind::Webhook), TELEGRAM_API, at).unwrap();
        let sig = &hook
            .headers
            .iter()
            .find(|(n, _)| *n == "X-Signature-256")
            .unwrap()
            .1;
        assert_eq!(sig, &signature("12:tok", 1_700_000_000, &hook.body));
        assert!(sig.starts_with("t=1700000000,v1="), "{sig}");
        for r in [slack, discord, tg, hook] {
            assert!(
                r.headers
                    .contains(&("Idempotency-Key", Uuid::from_u128(1).to_string()))
            );
        }
    }

    /// RFC 4231 test case 2 (key "Jefe"), over "<t>.<body>" written whole.
    #[test]
    fn the_signature_is_hmac_sha256_of_time_dot_body() {
        let sig = signature("Jefe", 0, b"what do ya want for nothing?");
        // HMAC-SHA256("Jefe", "0.what do ya want for nothing?") differs from the RFC's vector
        // by the prefix; the prefix-free vector checks the primitive itself.
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(sig.starts_with("t=0,v1=") && sig.len() == "t=0,v1=".len() + 64);
    }

    #[test]
    fn backoff_doubles_up_to_its_ceiling() {
        let mut c = AlertConfig::new("o");
        c.retry_first = Duration::from_secs(5);
        c.retry_max = Duration::from_secs(60);
        let waits: Vec<u64> = (1..=6).map(|n| c.backoff(n).as_secs()).collect();
        assert_eq!(waits, vec![5, 10, 20, 40, 60, 60]);
        assert_eq!(c.backoff(u32::MAX).as_secs(), 60);
    }
}
