//! The alert channels' routes: `GET /api/alerts/channels` (the caller's channels),
//! `POST /api/alerts/channels` (add one), `DELETE /api/alerts/channels/{id}`,
//! `POST /api/alerts/channels/{id}/test` (queue a test message, sent by a runner's alert
//! worker as any alert) and `GET /api/alerts/deliveries` (the recent deliveries and where each
//! stands), as the caller under row-level security. A channel's URL, HMAC secret and bot token
//! are written, never read back: an answer shows the channel's host or chat id
//! (`target`) and whether a secret is set. The `/alerts` page calls [`add`] too.

use axum::extract::State;
use axum::http::StatusCode;
use db::{AlertChannel, AlertKind, AlertStore, ChannelKind, NewAlertChannel};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

use super::error::{ApiError, ApiJson, ApiPath};
use super::wire::ErrorBody;
use super::{AppState, Caller};

/// Most deliveries `GET /api/alerts/deliveries` returns.
pub const DELIVERIES_SHOWN: u32 = 100;

/// A channel to add. `kind` is `webhook` (with `url` and `secret`), `slack` or `discord`
/// (with `url`: the incoming webhook's URL) or `telegram` (with `botToken` and `chatId`);
/// `events` the kinds it receives.
#[derive(Debug, Clone, Default, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChannelBody {
    /// A name (1..=100 characters).
    pub name: String,
    /// `webhook`, `slack`, `discord` or `telegram`.
    pub kind: String,
    /// The webhook URL (webhook, Slack, Discord).
    #[serde(default)]
    pub url: Option<String>,
    /// The webhook's HMAC-SHA256 key.
    #[serde(default)]
    pub secret: Option<String>,
    /// The Telegram bot token.
    #[serde(default)]
    pub bot_token: Option<String>,
    /// The Telegram chat id.
    #[serde(default)]
    pub chat_id: Option<String>,
    /// The event kinds it receives: `order_executed`, `position_closed`, `rejection`,
    /// `model_error`, `model_error_streak`, `halt`, `lesson_held`, `runner_lagging`.
    pub events: Vec<String>,
}

impl std::fmt::Debug for WireAlertChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireAlertChannel")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// A channel as its owner sees it: no URL path, no secret.
#[derive(Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireAlertChannel {
    /// Its id.
    pub id: Uuid,
    /// Its name.
    pub name: String,
    /// `webhook`, `slack`, `discord` or `telegram`.
    #[schema(value_type = String)]
    pub kind: &'static str,
    /// What can be shown of the target: the webhook's scheme and host, or the chat id.
    pub target: String,
    /// Whether a secret (HMAC key, bot token) is set; its value is never shown.
    pub secret_set: bool,
    /// The event kinds it receives.
    #[schema(value_type = Vec<String>)]
    pub events: Vec<&'static str>,
    /// When it was added.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

impl From<AlertChannel> for WireAlertChannel {
    fn from(c: AlertChannel) -> Self {
        Self {
            id: c.id,
            name: c.name,
            kind: c.kind.as_str(),
            target: c.hint,
            secret_set: matches!(c.kind, ChannelKind::Webhook | ChannelKind::Telegram),
            events: c.events.iter().map(|k| k.as_str()).collect(),
            created_at: c.created_at,
        }
    }
}

/// A delivery as its owner sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireAlertDelivery {
    /// Its id: the idempotency key the channel received.
    pub id: Uuid,
    /// The channel.
    pub channel_id: Uuid,
    /// What it is about.
    #[schema(value_type = String)]
    pub kind: &'static str,
    /// The message.
    pub text: String,
    /// When the event happened.
    pub occurred_at: chrono::DateTime<chrono::Utc>,
    /// `pending`, `delivered` or `failed`.
    #[schema(value_type = String)]
    pub status: &'static str,
    /// Attempts made.
    pub attempts: u32,
    /// The last failed attempt's error.
    pub last_error: Option<String>,
    /// When it was delivered.
    pub delivered_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl From<db::AlertDelivery> for WireAlertDelivery {
    fn from(d: db::AlertDelivery) -> Self {
        Self {
            id: d.id,
            channel_id: d.channel_id,
            kind: d.kind.as_str(),
            text: d.text,
            occurred_at: d.occurred_at,
            status: d.status.as_str(),
            attempts: d.attempts,
            last_error: d.last_error,
            delivered_at: d.delivered_at,
        }
    }
}

/// The answer of a test message.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestQueued {
    /// The delivery queued (its idempotency key).
    pub delivery_id: Uuid,
}

/// `s` trimmed, `None` when empty.
fn given(s: Option<&str>) -> Option<String> {
    s.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The channel `body` describes for `caller`, checked: 422 naming the first field that is
/// wrong (every problem in the message).
///
/// # Errors
/// 422 naming the field.
pub fn checked(
    body: &ChannelBody,
    caller: &Caller,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<NewAlertChannel, ApiError> {
    let kind = ChannelKind::parse(body.kind.trim()).ok_or_else(|| {
        ApiError::invalid(
            "kind",
            format!(
                "kind: {:?} is not one of webhook, slack, discord, telegram",
                body.kind
            ),
        )
    })?;
    let mut events = Vec::new();
    for e in &body.events {
        match AlertKind::parse(e.trim()) {
            Some(k) if k != AlertKind::Test => events.push(k),
            _ => {
                let names: Vec<&str> = AlertKind::SUBSCRIBABLE.iter().map(|k| k.as_str()).collect();
                return Err(ApiError::invalid(
                    "events",
                    format!("events: {e:?} is not one of {}", names.join(", ")),
                ));
            }
        }
    }
    let secret = match kind {
        ChannelKind::Telegram => {
            if given(body.secret.as_deref()).is_some() {
                return Err(ApiError::invalid(
                    "secret",
                    "secret: a Telegram channel takes botToken",
                ));
            }
            given(body.bot_token.as_deref())
        }
        _ => {
            if given(body.bot_token.as_deref()).is_some() {
                return Err(ApiError::invalid(
                    "botToken",
                    "botToken: only a Telegram channel has one",
                ));
            }
            given(body.secret.as_deref())
        }
    };
    let channel = NewAlertChannel {
        id: Uuid::new_v4(),
        user_id: caller.user_id,
        name: body.name.trim().to_owned(),
        kind,
        url: given(body.url.as_deref()),
        secret,
        chat_id: given(body.chat_id.as_deref()),
        events,
        created_at: now,
    };
    let problems = channel.problems();
    if let Some(first) = problems.first() {
        let field = match first.split(':').next().unwrap_or_default() {
            "bot token" => "botToken",
            "chat id" => "chatId",
            "name" => "name",
            "url" => "url",
            "secret" => "secret",
            _ => "events",
        };
        return Err(ApiError::invalid(field, problems.join("; ")));
    }
    Ok(channel)
}

/// Adds the channel `body` describes for the caller.
///
/// # Errors
/// 422 naming the field; 422 when the caller has 20 channels already.
pub async fn add(
    state: &AppState,
    caller: &Caller,
    body: &ChannelBody,
) -> Result<WireAlertChannel, ApiError> {
    let channel = checked(body, caller, state.clock.now())?;
    let stored = state.store_for(caller).add_alert_channel(&channel).await?;
    tracing::info!(user = %caller.user_id, channel = %stored.id, kind = stored.kind.as_str(), "alert channel added");
    Ok(stored.into())
}

/// `GET /api/alerts/channels`.
#[utoipa::path(
    get,
    path = "/api/alerts/channels",
    operation_id = "listAlertChannels",
    tag = "alerts",
    responses((status = 200, description = "The caller's alert channels.", body = [WireAlertChannel]))
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<axum::Json<Vec<WireAlertChannel>>, ApiError> {
    let channels = state
        .store_for(&caller)
        .alert_channels(caller.user_id)
        .await?;
    Ok(axum::Json(channels.into_iter().map(Into::into).collect()))
}

/// `POST /api/alerts/channels`: 201 with the channel (its secret not shown).
#[utoipa::path(
    post,
    path = "/api/alerts/channels",
    operation_id = "addAlertChannel",
    tag = "alerts",
    request_body = ChannelBody,
    responses((status = 201, description = "The channel added; its secret is not shown.", body = WireAlertChannel))
)]
pub(super) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ChannelBody>,
) -> Result<(StatusCode, axum::Json<WireAlertChannel>), ApiError> {
    Ok((
        StatusCode::CREATED,
        axum::Json(add(&state, &caller, &body).await?),
    ))
}

/// `DELETE /api/alerts/channels/{id}`: 204; 404 for a channel that is not the caller's.
#[utoipa::path(
    delete,
    path = "/api/alerts/channels/{id}",
    operation_id = "deleteAlertChannel",
    tag = "alerts",
    params(("id" = Uuid, Path, description = "The channel.")),
    responses(
        (status = 204, description = "Deleted, with its pending deliveries."),
        (status = 404, description = "The caller has no channel with this id.", body = ErrorBody),
    )
)]
pub(super) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<StatusCode, ApiError> {
    state
        .store_for(&caller)
        .delete_alert_channel(caller.user_id, id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/alerts/channels/{id}/test`: 202 with the delivery queued.
#[utoipa::path(
    post,
    path = "/api/alerts/channels/{id}/test",
    operation_id = "testAlertChannel",
    tag = "alerts",
    params(("id" = Uuid, Path, description = "The channel.")),
    responses(
        (status = 202, description = "A test message queued for the alert worker.", body = TestQueued),
        (status = 404, description = "The caller has no channel with this id.", body = ErrorBody),
    )
)]
pub(super) async fn test(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<(StatusCode, axum::Json<TestQueued>), ApiError> {
    let delivery_id = state
        .store_for(&caller)
        .queue_test_alert(caller.user_id, id, state.clock.now())
        .await?;
    Ok((StatusCode::ACCEPTED, axum::Json(TestQueued { delivery_id })))
}

/// `GET /api/alerts/deliveries`: the latest 100, newest event first.
#[utoipa::path(
    get,
    path = "/api/alerts/deliveries",
    operation_id = "listAlertDeliveries",
    tag = "alerts",
    responses((status = 200, description = "The latest 100 deliveries, newest event first.", body = [WireAlertDelivery]))
)]
pub(super) async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<axum::Json<Vec<WireAlertDelivery>>, ApiError> {
    let rows = state
        .store_for(&caller)
        .alert_deliveries(caller.user_id, DELIVERIES_SHOWN)
        .await?;
    Ok(axum::Json(rows.into_iter().map(Into::into).collect()))
}
