//! Alerts: a user's channels (a signed JSON webhook, a Slack- or Discord-compatible incoming
//! webhook, a Telegram bot and chat) and the outbox the ticks write to.
//!
//! An event is written in the transaction of the tick (or the reflection) it is about — the
//! tick's own commit, so a tick that is not stored sends nothing and a tick redone after a
//! crash writes nothing twice: the event's id is UUID v5 of the snapshot (or the note, or the
//! closed ledger row) and its kind, and each (event, channel) pair is one delivery row whose id
//! is the idempotency key a receiver sees. Deliveries are leased, sent and retried by a runner
//! ([`AlertOutbox`](crate::AlertOutbox)); channels are a user's to add and delete
//! ([`AlertStore`](crate::AlertStore)), and their secrets (the webhook's URL and HMAC key, the
//! bot token) are never read back as the user: [`AlertChannel`] has none of them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The namespace of every alert id (UUID v5 of `alerts`).
pub const ALERT_NAMESPACE: Uuid = Uuid::from_u128(0x3b7e_51d2_0c84_4f6a_9d13_a5e2_77c0_4b19);
/// Longest channel name, in characters.
pub const MAX_CHANNEL_NAME_CHARS: usize = 100;
/// Longest webhook URL, in characters.
pub const MAX_CHANNEL_URL_CHARS: usize = 2000;
/// Longest secret (HMAC key, bot token), in characters.
pub const MAX_CHANNEL_SECRET_CHARS: usize = 500;
/// Longest Telegram chat id, in characters.
pub const MAX_CHAT_ID_CHARS: usize = 100;
/// Most channels a user may have.
pub const MAX_CHANNELS_PER_USER: usize = 20;
/// Longest error text kept from a failed delivery, in characters (longer ones are cut).
pub const MAX_DELIVERY_ERROR_CHARS: usize = 1000;
/// Longest event text, in characters (longer ones are cut).
pub const MAX_ALERT_TEXT_CHARS: usize = 2000;
/// Most deliveries one read or claim returns.
pub const MAX_DELIVERIES_READ: u32 = 1000;

/// Where a channel sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    /// A JSON `POST` signed with HMAC-SHA256 (`X-Signature-256`).
    Webhook,
    /// A Slack-compatible incoming webhook (`{"text": …}`).
    Slack,
    /// A Discord-compatible webhook (`{"content": …}`).
    Discord,
    /// A Telegram bot's `sendMessage` to one chat.
    Telegram,
}

impl ChannelKind {
    /// Every kind.
    pub const ALL: [ChannelKind; 4] = [
        ChannelKind::Webhook,
        ChannelKind::Slack,
        ChannelKind::Discord,
        ChannelKind::Telegram,
    ];

    /// The stored text.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Webhook => "webhook",
            ChannelKind::Slack => "slack",
            ChannelKind::Discord => "discord",
            ChannelKind::Telegram => "telegram",
        }
    }

    /// The kind whose [`as_str`](Self::as_str) is `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What an alert is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// The engine executed an order.
    OrderExecuted,
    /// A position closed (a ledger row closed), with its realized PnL.
    PositionClosed,
    /// The engine rejected a proposal (a rule other than the halts).
    Rejection,
    /// The model failed at a tick.
    ModelError,
    /// The model failed at N ticks in a row.
    ModelErrorStreak,
    /// A drawdown or daily-loss halt refused a proposal.
    Halt,
    /// A reflection's lesson waits for a person's review.
    LessonHeld,
    /// A tick started late: its bar closed longer ago than the threshold.
    RunnerLagging,
    /// A test message a user asked for.
    Test,
}

impl AlertKind {
    /// The kinds a channel can choose (a test message goes to the one channel it is for).
    pub const SUBSCRIBABLE: [AlertKind; 8] = [
        AlertKind::OrderExecuted,
        AlertKind::PositionClosed,
        AlertKind::Rejection,
        AlertKind::ModelError,
        AlertKind::ModelErrorStreak,
        AlertKind::Halt,
        AlertKind::LessonHeld,
        AlertKind::RunnerLagging,
    ];

    /// The stored text.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            AlertKind::OrderExecuted => "order_executed",
            AlertKind::PositionClosed => "position_closed",
            AlertKind::Rejection => "rejection",
            AlertKind::ModelError => "model_error",
            AlertKind::ModelErrorStreak => "model_error_streak",
            AlertKind::Halt => "halt",
            AlertKind::LessonHeld => "lesson_held",
            AlertKind::RunnerLagging => "runner_lagging",
            AlertKind::Test => "test",
        }
    }

    /// Every kind: [`SUBSCRIBABLE`](Self::SUBSCRIBABLE) and [`AlertKind::Test`].
    pub fn all() -> impl Iterator<Item = AlertKind> {
        Self::SUBSCRIBABLE.into_iter().chain([AlertKind::Test])
    }

    /// The kind whose [`as_str`](Self::as_str) is `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::all().find(|k| k.as_str() == s)
    }

    /// A short label a person reads.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            AlertKind::OrderExecuted => "Order executed",
            AlertKind::PositionClosed => "Position closed",
            AlertKind::Rejection => "Order rejected",
            AlertKind::ModelError => "Model error",
            AlertKind::ModelErrorStreak => "Model errors in a row",
            AlertKind::Halt => "Trading halted",
            AlertKind::LessonHeld => "Lesson waiting for review",
            AlertKind::RunnerLagging => "Runner lagging",
            AlertKind::Test => "Test message",
        }
    }
}

/// The stored `events` list of a channel: kinds comma-separated, in [`AlertKind::all`] order.
#[must_use]
pub fn events_text(kinds: &[AlertKind]) -> String {
    let mut sorted: Vec<AlertKind> = kinds.to_vec();
    sorted.sort();
    sorted.dedup();
    sorted
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// A channel to add (see [`AlertStore::add_alert_channel`](crate::AlertStore::add_alert_channel)).
/// `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq)]
pub struct NewAlertChannel {
    /// Its id.
    pub id: Uuid,
    /// Its owner.
    pub user_id: Uuid,
    /// A name its owner gives it (1..=100 characters).
    pub name: String,
    /// Where it sends.
    pub kind: ChannelKind,
    /// The webhook URL (webhook, Slack, Discord; `http://` or `https://`).
    pub url: Option<String>,
    /// The webhook's HMAC key, or the Telegram bot token.
    pub secret: Option<String>,
    /// The Telegram chat id.
    pub chat_id: Option<String>,
    /// The event kinds it receives (at least one; not [`AlertKind::Test`]).
    pub events: Vec<AlertKind>,
    /// When it was added.
    pub created_at: DateTime<Utc>,
}

impl std::fmt::Debug for NewAlertChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewAlertChannel")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("target", &self.hint())
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

impl NewAlertChannel {
    /// What can be shown of where it sends: the webhook's scheme and host, or the chat id —
    /// never a path, a query or a secret.
    #[must_use]
    pub fn hint(&self) -> String {
        match (self.kind, &self.url, &self.chat_id) {
            (ChannelKind::Telegram, _, Some(chat)) => format!("Telegram chat {chat}"),
            (_, Some(url), _) => url_host(url),
            _ => "—".to_owned(),
        }
    }

    /// Every problem of this channel, each naming its field; empty when it can be stored.
    #[must_use]
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let len = |s: &str| s.chars().count();
        if !(1..=MAX_CHANNEL_NAME_CHARS).contains(&len(self.name.trim())) {
            out.push(format!(
                "name: 1 to {MAX_CHANNEL_NAME_CHARS} characters (got {})",
                len(&self.name)
            ));
        }
        let needs_url = self.kind != ChannelKind::Telegram;
        match (&self.url, needs_url) {
            (Some(url), true) => {
                if !(url.starts_with("https://") || url.starts_with("http://"))
                    || url_host(url).is_empty()
                    || url.chars().any(char::is_whitespace)
                {
                    out.push("url: an http:// or https:// URL with a host".to_owned());
                } else if len(url) > MAX_CHANNEL_URL_CHARS {
                    out.push(format!("url: at most {MAX_CHANNEL_URL_CHARS} characters"));
                }
            }
            (None, true) => out.push(format!(
                "url: required for a {} channel",
                self.kind.as_str()
            )),
            (Some(_), false) => out.push("url: a Telegram channel has none".to_owned()),
            (None, false) => {}
        }
        let secret_name = match self.kind {
            ChannelKind::Webhook => Some("secret"),
            ChannelKind::Telegram => Some("bot token"),
            ChannelKind::Slack | ChannelKind::Discord => None,
        };
        match (&self.secret, secret_name) {
            (Some(s), Some(name)) if !(1..=MAX_CHANNEL_SECRET_CHARS).contains(&len(s)) => {
                out.push(format!(
                    "{name}: 1 to {MAX_CHANNEL_SECRET_CHARS} characters"
                ));
            }
            (Some(s), Some(_))
                if self.kind == ChannelKind::Telegram
                    && !s
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == ':' || c == '_' || c == '-') =>
            {
                out.push("bot token: letters, digits, `:`, `_` and `-` only".to_owned());
            }
            (None, Some(name)) => {
                out.push(format!(
                    "{name}: required for a {} channel",
                    self.kind.as_str()
                ));
            }
            (Some(_), None) => out.push(format!(
                "secret: a {} channel has none (its URL is its secret)",
                self.kind.as_str()
            )),
            _ => {}
        }
        match (&self.chat_id, self.kind == ChannelKind::Telegram) {
            (Some(c), true) if !(1..=MAX_CHAT_ID_CHARS).contains(&len(c)) => {
                out.push(format!("chat id: 1 to {MAX_CHAT_ID_CHARS} characters"));
            }
            (None, true) => out.push("chat id: required for a Telegram channel".to_owned()),
            (Some(_), false) => out.push("chat id: only a Telegram channel has one".to_owned()),
            _ => {}
        }
        for (field, value) in [
            ("name", Some(&self.name)),
            ("url", self.url.as_ref()),
            ("secret", self.secret.as_ref()),
            ("chat id", self.chat_id.as_ref()),
        ] {
            if value.is_some_and(|v| v.chars().any(char::is_control)) {
                out.push(format!("{field}: control characters are not allowed"));
            }
        }
        if self.events.is_empty() {
            out.push("events: choose at least one".to_owned());
        }
        if self.events.contains(&AlertKind::Test) {
            out.push("events: `test` is sent on request, not chosen".to_owned());
        }
        out
    }
}

/// `https://host` of `url` (scheme and host, no user info, port kept), empty when it has none.
fn url_host(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return String::new();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    if host.is_empty() {
        return String::new();
    }
    format!("{scheme}://{host}")
}

/// A stored channel as its owner sees it: no URL path, no secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertChannel {
    /// Its id.
    pub id: Uuid,
    /// Its owner.
    pub user_id: Uuid,
    /// Its name.
    pub name: String,
    /// Where it sends.
    pub kind: ChannelKind,
    /// What can be shown of the target ([`NewAlertChannel::hint`]).
    pub hint: String,
    /// The event kinds it receives.
    pub events: Vec<AlertKind>,
    /// When it was added.
    pub created_at: DateTime<Utc>,
}

/// What a tick's alerts need beyond its record: the live runner's measures (a backtest writes
/// no alerts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickAlerts {
    /// How late the tick started after its bar closed.
    pub start_lag: chrono::Duration,
    /// From how late a start is [`AlertKind::RunnerLagging`].
    pub lag_threshold: chrono::Duration,
    /// How many model errors in a row are [`AlertKind::ModelErrorStreak`] (sent once, at the
    /// tick that makes the streak this long; 0: never).
    pub model_error_streak: u32,
}

/// A delivery as the runner sends it: the event, the channel with its secrets, and the attempt.
/// `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    /// The delivery's id: the idempotency key.
    pub id: Uuid,
    /// The event.
    pub event_id: Uuid,
    /// What it is about.
    pub kind: AlertKind,
    /// The owner.
    pub user_id: Uuid,
    /// The deployment it is about, if any.
    pub deployment_id: Option<Uuid>,
    /// When it happened (the tick's bar close).
    pub occurred_at: DateTime<Utc>,
    /// The message a person reads.
    pub text: String,
    /// The event's fields (kind-specific; money as decimal strings).
    pub data: serde_json::Value,
    /// The channel.
    pub channel_id: Uuid,
    /// Where it sends.
    pub channel_kind: ChannelKind,
    /// The webhook URL.
    pub url: Option<String>,
    /// The HMAC key or the bot token.
    pub secret: Option<String>,
    /// The Telegram chat id.
    pub chat_id: Option<String>,
    /// Attempts made before this one.
    pub attempts: u32,
}

impl std::fmt::Debug for ClaimedDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimedDelivery")
            .field("id", &self.id)
            .field("event_id", &self.event_id)
            .field("kind", &self.kind)
            .field("channel_id", &self.channel_id)
            .field("channel_kind", &self.channel_kind)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Not sent yet, or to be tried again.
    Pending,
    /// The channel accepted it.
    Delivered,
    /// Given up after the last attempt.
    Failed,
}

impl DeliveryStatus {
    /// The stored text.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }

    /// The status whose [`as_str`](Self::as_str) is `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Pending, Self::Delivered, Self::Failed]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// A delivery as its owner sees it (the recent ones on the alerts page).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertDelivery {
    /// Its id (the idempotency key).
    pub id: Uuid,
    /// The channel.
    pub channel_id: Uuid,
    /// What it is about.
    pub kind: AlertKind,
    /// The message.
    pub text: String,
    /// When the event happened.
    pub occurred_at: DateTime<Utc>,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Attempts made.
    pub attempts: u32,
    /// The last attempt's error, if it failed.
    pub last_error: Option<String>,
    /// When it was delivered.
    pub delivered_at: Option<DateTime<Utc>>,
}

/// The id of the event of `kind` about `subject` (a snapshot, a note, a closed ledger row):
/// UUID v5 of both, so the same event written again is the same row.
#[must_use]
pub fn alert_event_id(subject: Uuid, kind: AlertKind) -> Uuid {
    let mut name = subject.hyphenated().to_string();
    name.push('\n');
    name.push_str(kind.as_str());
    Uuid::new_v5(&ALERT_NAMESPACE, name.as_bytes())
}

/// The id of the delivery of `event` to `channel`: the idempotency key.
#[must_use]
pub fn alert_delivery_id(event: Uuid, channel: Uuid) -> Uuid {
    let mut name = event.hyphenated().to_string();
    name.push('\n');
    name.push_str(&channel.hyphenated().to_string());
    Uuid::new_v5(&ALERT_NAMESPACE, name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(kind: ChannelKind) -> NewAlertChannel {
        NewAlertChannel {
            id: Uuid::nil(),
            user_id: Uuid::nil(),
            name: "ops".to_owned(),
            kind,
            url: (kind != ChannelKind::Telegram)
                .then(|| "https://hooks.example.com/T000/B000/XXXX?x=1".to_owned()),
            secret: matches!(kind, ChannelKind::Webhook | ChannelKind::Telegram)
                .then(|| "123456:ABC-def_ghi".to_owned()),
            chat_id: (kind == ChannelKind::Telegram).then(|| "-100200".to_owned()),
            events: vec![AlertKind::OrderExecuted],
            created_at: DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_channel_shows_its_host_or_chat_and_never_a_secret() {
        for kind in ChannelKind::ALL {
            let c = channel(kind);
            assert!(c.problems().is_empty(), "{kind:?}: {:?}", c.problems());
            let shown = format!("{c:?} {}", c.hint());
            assert!(
                !shown.contains("XXXX") && !shown.contains("ABC-def"),
                "{shown}"
            );
        }
        assert_eq!(
            channel(ChannelKind::Slack).hint(),
            "https://hooks.example.com"
        );
        assert_eq!(
            channel(ChannelKind::Telegram).hint(),
            "Telegram chat -100200"
        );
        assert_eq!(
            url_host("https://user:pw@h.example:8443/p"),
            "https://h.example:8443"
        );
    }

    #[test]
    fn each_problem_names_its_field() {
        let mut c = channel(ChannelKind::Webhook);
        c.secret = None;
        c.url = Some("ftp://x".to_owned());
        c.events.clear();
        c.name = "a\u{0}".to_owned();
        let p = c.problems().join("; ");
        for field in ["secret:", "url:", "events:", "name: control"] {
            assert!(p.contains(field), "{p}");
        }
        let mut s = channel(ChannelKind::Slack);
        s.secret = Some("k".to_owned());
        assert!(
            s.problems()
                .join(";")
                .contains("secret: a slack channel has none")
        );
    }

    #[test]
    fn ids_are_derived_and_distinct_per_kind_and_channel() {
        let s = Uuid::from_u128(7);
        assert_eq!(
            alert_event_id(s, AlertKind::Halt),
            alert_event_id(s, AlertKind::Halt)
        );
        assert_ne!(
            alert_event_id(s, AlertKind::Halt),
            alert_event_id(s, AlertKind::Rejection)
        );
        let e = alert_event_id(s, AlertKind::Halt);
        assert_ne!(
            alert_delivery_id(e, Uuid::from_u128(1)),
            alert_delivery_id(e, Uuid::from_u128(2))
        );
        assert_eq!(
            events_text(&[AlertKind::Halt, AlertKind::OrderExecuted, AlertKind::Halt]),
            "order_executed,halt"
        );
        for k in AlertKind::all() {
            assert_eq!(AlertKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(AlertKind::all().count(), 9);
    }
}
