//! The alerts page: `GET /alerts` lists the caller's alert channels (their host or chat id,
//! never a URL path or a secret), a form to add one, and the latest deliveries with where each
//! stands; `POST /alerts/channels` adds a channel as the API does
//! ([`crate::serve::alerts::add`]), `POST /alerts/channels/{id}/test` queues a test message and
//! `POST /alerts/channels/{id}/delete` deletes one; then back to the page (303) with a notice.
//! A refused form is the page again with the message (422), another user's channel a 404
//! message; never a 500 for bad input.

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use db::{AlertKind, AlertStore, ChannelKind};
use minijinja::context;
use serde::{Deserialize, Serialize};
use types::Uuid;

use super::render::render;
use super::{Page, Viewer, html, see_other, server_error, view};
use crate::serve::alerts::{self, ChannelBody, DELIVERIES_SHOWN, WireAlertChannel};
use crate::serve::{AppState, Caller};

/// The page's routes, merged into the pages' router.
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/alerts", get(alerts_page))
        .route("/alerts/channels", post(add_channel))
        .route("/alerts/channels/{id}/test", post(test_channel))
        .route("/alerts/channels/{id}/delete", post(delete_channel))
}

/// `?done=…`: the change just made, from a fixed set of messages (no text of the request is
/// reflected).
#[derive(Debug, Default, Deserialize)]
struct PageQuery {
    #[serde(default)]
    done: Option<String>,
}

fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "added" => "Channel added. Send it a test message to check it.",
        "tested" => "Test message queued: a runner sends it within seconds.",
        "deleted" => "Channel deleted.",
        _ => return None,
    })
}

/// One channel, as text.
#[derive(Debug, Clone, Serialize)]
struct ChannelView {
    id: String,
    name: String,
    kind: &'static str,
    target: String,
    secret: &'static str,
    events: String,
    created_at: String,
}

impl From<WireAlertChannel> for ChannelView {
    fn from(c: WireAlertChannel) -> Self {
        Self {
            id: c.id.to_string(),
            name: c.name,
            kind: c.kind,
            target: c.target,
            secret: if c.secret_set { "set (hidden)" } else { "—" },
            events: c
                .events
                .iter()
                .filter_map(|e| AlertKind::parse(e))
                .map(AlertKind::label)
                .collect::<Vec<_>>()
                .join(", "),
            created_at: view::when(Some(c.created_at)),
        }
    }
}

/// One delivery, as text.
#[derive(Debug, Clone, Serialize)]
struct DeliveryView {
    id: String,
    channel: String,
    kind: &'static str,
    text: String,
    occurred_at: String,
    status: &'static str,
    attempts: u32,
    last_error: String,
}

/// An event kind a channel can choose, for the form's checkboxes.
#[derive(Debug, Clone, Serialize)]
struct KindView {
    value: &'static str,
    label: &'static str,
}

async fn page_view(
    state: &AppState,
    caller: Caller,
    status: StatusCode,
    notice: Option<&str>,
    error: Option<&str>,
) -> Page {
    let store = state.store_for(&caller);
    let channels = match store.alert_channels(caller.user_id).await {
        Ok(c) => c,
        Err(e) => return server_error("reading the alert channels", &e),
    };
    let deliveries = match store
        .alert_deliveries(caller.user_id, DELIVERIES_SHOWN)
        .await
    {
        Ok(d) => d,
        Err(e) => return server_error("reading the alert deliveries", &e),
    };
    let names: std::collections::BTreeMap<Uuid, String> =
        channels.iter().map(|c| (c.id, c.name.clone())).collect();
    let deliveries: Vec<DeliveryView> = deliveries
        .into_iter()
        .map(|d| DeliveryView {
            id: d.id.to_string(),
            channel: names.get(&d.channel_id).cloned().unwrap_or_default(),
            kind: d.kind.label(),
            text: d.text,
            occurred_at: view::when(Some(d.occurred_at)),
            status: d.status.as_str(),
            attempts: d.attempts,
            last_error: d.last_error.unwrap_or_default(),
        })
        .collect();
    let channels: Vec<ChannelView> = channels
        .into_iter()
        .map(|c| WireAlertChannel::from(c).into())
        .collect();
    let kinds: Vec<KindView> = AlertKind::SUBSCRIBABLE
        .iter()
        .map(|k| KindView {
            value: k.as_str(),
            label: k.label(),
        })
        .collect();
    let channel_kinds: Vec<&'static str> = ChannelKind::ALL.iter().map(|k| k.as_str()).collect();
    match render(
        "alerts.html",
        context! {
            title => "Alerts",
            user => caller.user_id.to_string(),
            channels, deliveries, kinds, channel_kinds, notice, error,
        },
    ) {
        Ok(body) => html(status, body),
        Err(e) => server_error("rendering the alerts page", &e),
    }
}

async fn alerts_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Page {
    let q = query.map(|Query(q)| q).unwrap_or_default();
    page_view(
        &state,
        caller,
        StatusCode::OK,
        notice(q.done.as_deref()),
        None,
    )
    .await
}

/// The add form's fields: `name`, `kind`, `url`, `secret` (a webhook's key, or a Telegram bot
/// token), `chat_id` and one `event` per chosen kind. A field may repeat (`event`), so the form
/// is read as pairs.
fn channel_body(pairs: &[(String, String)]) -> ChannelBody {
    let mut body = ChannelBody::default();
    for (k, v) in pairs {
        match k.as_str() {
            "name" => body.name.clone_from(v),
            "kind" => body.kind.clone_from(v),
            "url" => body.url = Some(v.clone()),
            "secret" => body.secret = Some(v.clone()),
            "chat_id" => body.chat_id = Some(v.clone()),
            "event" => body.events.push(v.clone()),
            _ => {}
        }
    }
    // The form has one secret field: for Telegram it is the bot token.
    if body.kind.trim() == ChannelKind::Telegram.as_str() {
        body.bot_token = body.secret.take();
    }
    body
}

async fn add_channel(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    form: Result<Form<Vec<(String, String)>>, FormRejection>,
) -> Page {
    let pairs = form.map(|Form(p)| p).unwrap_or_default();
    match alerts::add(&state, &caller, &channel_body(&pairs)).await {
        Ok(_) => see_other("/alerts?done=added"),
        Err(e) if e.status.is_server_error() => server_error("adding the alert channel", &e),
        Err(e) => page_view(&state, caller, e.status, None, Some(&e.message)).await,
    }
}

/// A channel's POST (test or delete): the id parsed, `act` run as the caller; back to the page.
async fn on_channel<F, Fut>(
    state: &AppState,
    caller: Caller,
    raw_id: &str,
    done: &str,
    act: F,
) -> Page
where
    F: FnOnce(Uuid) -> Fut,
    Fut: std::future::Future<Output = Result<(), db::DbError>>,
{
    let missing = "No such alert channel of yours.";
    let Ok(id) = Uuid::parse_str(raw_id) else {
        return page_view(state, caller, StatusCode::NOT_FOUND, None, Some(missing)).await;
    };
    match act(id).await {
        Ok(()) => see_other(&format!("/alerts?done={done}")),
        Err(db::DbError::NotFound { .. }) => {
            page_view(state, caller, StatusCode::NOT_FOUND, None, Some(missing)).await
        }
        Err(e) => {
            let e = crate::serve::ApiError::from(e);
            if e.status.is_server_error() {
                return server_error("changing the alert channel", &e);
            }
            page_view(state, caller, e.status, None, Some(&e.message)).await
        }
    }
}

async fn test_channel(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Page {
    let store = state.store_for(&caller);
    let (user, now) = (caller.user_id, state.clock.now());
    on_channel(&state, caller, &id, "tested", |id| async move {
        store.queue_test_alert(user, id, now).await.map(|_| ())
    })
    .await
}

async fn delete_channel(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Page {
    let store = state.store_for(&caller);
    let user = caller.user_id;
    on_channel(&state, caller, &id, "deleted", |id| async move {
        store.delete_alert_channel(user, id).await
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::channel_body;

    #[test]
    fn the_form_reads_repeated_events_and_a_telegram_token() {
        let pairs: Vec<(String, String)> = [
            ("name", "phone"),
            ("kind", "telegram"),
            ("secret", "12:tok"),
            ("chat_id", "42"),
            ("event", "halt"),
            ("event", "order_executed"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let body = channel_body(&pairs);
        assert_eq!(body.events, vec!["halt", "order_executed"]);
        assert_eq!(body.bot_token.as_deref(), Some("12:tok"));
        assert_eq!(body.secret, None);
    }
}
