//! `AlertStore` (a user's channels, their test message, their recent deliveries) and
//! `AlertOutbox` (a runner's lease of due deliveries), and the outbox writes of a tick and of a
//! reflection that holds a lesson, made in their transactions.

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::Transaction;
use sqlx::types::Json;
use types::text;
use types::{TradeRecord, TradeStatus, Verdict};
use uuid::Uuid;

use super::{Affected as _, Backend, Dialect, Leases, query};
use crate::DbError;
use crate::alerts::{
    AlertChannel, AlertDelivery, AlertKind, ChannelKind, ClaimedDelivery, DeliveryStatus,
    MAX_ALERT_TEXT_CHARS, MAX_CHANNELS_PER_USER, MAX_DELIVERIES_READ, MAX_DELIVERY_ERROR_CHARS,
    NewAlertChannel, TickAlerts, alert_delivery_id, alert_event_id, events_text,
};
use crate::codec::{self, RowExt, check_limit};
use crate::error::ctx;
use crate::imp::prompt_lines::params;
use crate::model::{NewNote, TickRecord};
use crate::traits::{AlertOutbox, AlertStore};

/// An event to write: its id, kind, text and fields.
struct Event {
    id: Uuid,
    kind: AlertKind,
    text: String,
    data: serde_json::Value,
}

/// `s` cut to `max` characters (the last one `…` when cut).
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The channels of `user_id` and the kinds each receives.
async fn channels_of<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    user_id: Uuid,
) -> Result<Vec<(Uuid, Vec<AlertKind>)>, DbError> {
    let rows = query("SELECT id, events FROM alert_channels WHERE user_id = $1 ORDER BY id")
        .bind(D::id(user_id))
        .fetch_all(&mut **tx)
        .await
        .map_err(ctx("reading alert channels"))?;
    rows.iter()
        .map(|r| Ok((r.uuid("id")?, parse_events(&r.text("events")?))))
        .collect()
}

/// The kinds of a stored `events` list (an unknown name, from a later schema, is skipped).
fn parse_events(s: &str) -> Vec<AlertKind> {
    s.split(',').filter_map(AlertKind::parse).collect()
}

/// Writes `events` of `user_id` (about `deployment_id`, at `at`) and one delivery per channel
/// that receives its kind, each once (a row already written is left as it is).
async fn write_events<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    user_id: Uuid,
    deployment_id: Option<Uuid>,
    at: DateTime<Utc>,
    channels: &[(Uuid, Vec<AlertKind>)],
    events: &[Event],
) -> Result<(), DbError> {
    let now = Utc::now();
    for e in events {
        let to: Vec<Uuid> = channels
            .iter()
            .filter(|(_, kinds)| kinds.contains(&e.kind))
            .map(|(id, _)| *id)
            .collect();
        if to.is_empty() {
            continue;
        }
        query(
            "INSERT INTO alert_events (id, user_id, deployment_id, kind, occurred_at, text, data, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
        )
        .bind(D::id(e.id))
        .bind(D::id(user_id))
        .bind(D::oid(deployment_id))
        .bind(e.kind.as_str())
        .bind(D::ts(at))
        .bind(cut(&e.text, MAX_ALERT_TEXT_CHARS))
        .bind(Json(&e.data))
        .bind(D::ts(now))
        .execute(&mut **tx)
        .await
        .map_err(ctx("writing an alert event"))?;
        for channel in to {
            insert_delivery(tx, e.id, channel, user_id, now).await?;
        }
    }
    Ok(())
}

async fn insert_delivery<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    event: Uuid,
    channel: Uuid,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    query(
        "INSERT INTO alert_deliveries (id, event_id, channel_id, user_id, status, attempts, \
         next_attempt_at, created_at) VALUES ($1, $2, $3, $4, 'pending', 0, $5, $5) \
         ON CONFLICT DO NOTHING",
    )
    .bind(D::id(alert_delivery_id(event, channel)))
    .bind(D::id(event))
    .bind(D::id(channel))
    .bind(D::id(user_id))
    .bind(D::ts(now))
    .execute(&mut **tx)
    .await
    .map_err(ctx("queueing an alert delivery"))?;
    Ok(())
}

/// The deployment's owner and how a person names it (its skill's name and the id's first
/// eight characters); `None` for an unknown deployment.
async fn deployment_label<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    deployment_id: Uuid,
) -> Result<Option<(Uuid, String)>, DbError> {
    let row = query(
        "SELECT d.user_id, s.name FROM deployments d JOIN skills s ON s.id = d.skill_id \
         WHERE d.id = $1",
    )
    .bind(D::id(deployment_id))
    .fetch_optional(&mut **tx)
    .await
    .map_err(ctx("reading the deployment of an alert"))?;
    let Some(row) = row else {
        return Ok(None);
    };
    let short: String = deployment_id.simple().to_string().chars().take(8).collect();
    Ok(Some((
        row.uuid("user_id")?,
        format!("{} ({short})", row.text("name")?),
    )))
}

/// How many of the deployment's last ticks up to `at` (this one included) were model errors in
/// a row, counting at most `up_to + 1`.
async fn model_error_run<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    deployment_id: Uuid,
    at: DateTime<Utc>,
    up_to: u32,
) -> Result<u32, DbError> {
    let rows = query(
        "SELECT model_error FROM decision_snapshots WHERE deployment_id = $1 AND tick_at <= $2 \
         ORDER BY tick_at DESC LIMIT $3",
    )
    .bind(D::id(deployment_id))
    .bind(D::ts(at))
    .bind(i64::from(up_to) + 1)
    .fetch_all(&mut **tx)
    .await
    .map_err(ctx("reading the model error streak"))?;
    let mut run = 0;
    for r in &rows {
        if !r.flag("model_error")? {
            break;
        }
        run += 1;
    }
    Ok(run)
}

/// The events of one recorded tick (see [`TickAlerts`]), without the streak.
fn tick_events(tick: &TickRecord, alerts: &TickAlerts, who: &str) -> Vec<Event> {
    let s = &tick.snapshot;
    let mut out = Vec::new();
    let mut event = |kind: AlertKind, subject: Uuid, body: String, data: serde_json::Value| {
        out.push(Event {
            id: alert_event_id(subject, kind),
            kind,
            text: format!("{}: {who}: {body}", kind.label()),
            data,
        });
    };
    match &s.verdict {
        Verdict::Executed { detail } => {
            let mut data = json!({ "detail": detail });
            if let Some(p) = &s.proposal {
                data["symbol"] = json!(p.symbol);
                data["action"] = json!(p.action);
                data["sizeUsd"] = json!(p.size_usd.map(|d| d.to_string()));
            }
            event(AlertKind::OrderExecuted, s.id, detail.clone(), data);
        }
        Verdict::Rejected { rule, detail } => {
            let kind = if matches!(
                rule,
                types::RuleCode::HaltDrawdown | types::RuleCode::HaltDailyLoss
            ) {
                AlertKind::Halt
            } else {
                AlertKind::Rejection
            };
            event(
                kind,
                s.id,
                format!("{}: {detail}", rule.as_str()),
                json!({ "rule": rule.as_str(), "detail": detail }),
            );
        }
        Verdict::NoOp { .. } => {}
    }
    if s.model_error {
        let error = s.error.as_deref().unwrap_or("the model failed");
        event(
            AlertKind::ModelError,
            s.id,
            error.to_owned(),
            json!({ "error": error }),
        );
    }
    for t in tick
        .trades
        .iter()
        .filter(|t| t.status == TradeStatus::Closed)
    {
        let (body, data) = closed_text(t);
        event(AlertKind::PositionClosed, t.id, body, data);
    }
    if alerts.lag_threshold > chrono::Duration::zero() && alerts.start_lag >= alerts.lag_threshold {
        let mut body = format!("the tick of the bar closed at {} started ", s.tick_at);
        push_seconds(&mut body, alerts.start_lag);
        body.push_str(" after the close (threshold ");
        push_seconds(&mut body, alerts.lag_threshold);
        body.push(')');
        event(
            AlertKind::RunnerLagging,
            s.id,
            body,
            json!({
                "lagSeconds": alerts.start_lag.num_seconds(),
                "thresholdSeconds": alerts.lag_threshold.num_seconds(),
            }),
        );
    }
    out
}

/// `d` as whole seconds: `75 s`.
fn push_seconds(out: &mut String, d: chrono::Duration) {
    text::push_uint(out, u64::try_from(d.num_seconds()).unwrap_or(0));
    out.push_str(" s");
}

/// A closed ledger row's message and fields: money in the prompts' style, decimals as text.
fn closed_text(t: &TradeRecord) -> (String, serde_json::Value) {
    let side = codec::side_str(t.side);
    let mut body = format!("{} {side}, realized PnL ", t.symbol);
    text::push_signed_money(&mut body, t.realized_pnl_usd);
    body.push_str(", fees ");
    text::push_money(&mut body, t.fees_usd);
    if let Some(price) = t.exit_price {
        body.push_str(", exit at ");
        text::push_price(&mut body, price);
    }
    let data = json!({
        "tradeId": t.id,
        "symbol": t.symbol,
        "side": side,
        "realizedPnlUsd": t.realized_pnl_usd.to_string(),
        "feesUsd": t.fees_usd.to_string(),
        "entryPrice": t.entry_price.to_string(),
        "exitPrice": t.exit_price.map(|p| p.to_string()),
    });
    (body, data)
}

/// A recorded tick's alerts, in its transaction: nothing when the deployment's owner has no
/// channel.
pub(crate) async fn write_tick_alerts<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    tick: &TickRecord,
    alerts: &TickAlerts,
) -> Result<(), DbError> {
    let s = &tick.snapshot;
    let Some((user_id, who)) = deployment_label(tx, s.deployment_id).await? else {
        return Ok(());
    };
    let channels = channels_of(tx, user_id).await?;
    if channels.is_empty() {
        return Ok(());
    }
    let mut events = tick_events(tick, alerts, &who);
    let n = alerts.model_error_streak;
    if s.model_error && n > 0 && model_error_run(tx, s.deployment_id, s.tick_at, n).await? == n {
        events.push(Event {
            id: alert_event_id(s.id, AlertKind::ModelErrorStreak),
            kind: AlertKind::ModelErrorStreak,
            text: format!(
                "{}: {who}: the model failed at the last {n} ticks",
                AlertKind::ModelErrorStreak.label()
            ),
            data: json!({ "streak": n }),
        });
    }
    write_events(
        tx,
        user_id,
        Some(s.deployment_id),
        s.tick_at,
        &channels,
        &events,
    )
    .await
}

/// A reflection note's alert, in its transaction: a note held whole for review, or with held
/// bullets, is [`AlertKind::LessonHeld`] for the deployment's owner (a skill-scoped note: the
/// skill's owner).
pub(crate) async fn write_held_alert<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    note: &NewNote,
) -> Result<(), DbError> {
    let held = note.content.held.len();
    if note.lint.is_none() && held == 0 {
        return Ok(());
    }
    let owner = match note.deployment_id {
        Some(d) => deployment_label(tx, d).await?,
        None => {
            let row = query("SELECT user_id, name FROM skills WHERE id = $1")
                .bind(D::id(note.skill_id))
                .fetch_optional(&mut **tx)
                .await
                .map_err(ctx("reading the skill of an alert"))?;
            match row {
                Some(r) => Some((r.uuid("user_id")?, r.text("name")?)),
                None => None,
            }
        }
    };
    let Some((user_id, who)) = owner else {
        return Ok(());
    };
    let channels = channels_of(tx, user_id).await?;
    if channels.is_empty() {
        return Ok(());
    }
    let body = match (&note.lint, held) {
        (Some(lint), _) => format!("a reflection note waits for review ({})", lint.reason),
        (None, 1) => "1 lesson waits for review".to_owned(),
        (None, n) => format!("{n} lessons wait for review"),
    };
    let event = Event {
        id: alert_event_id(note.id, AlertKind::LessonHeld),
        kind: AlertKind::LessonHeld,
        text: format!("{}: {who}: {body}", AlertKind::LessonHeld.label()),
        data: json!({
            "noteId": note.id,
            "heldLessons": held,
            "wholeNote": note.lint.is_some(),
        }),
    };
    write_events(
        tx,
        user_id,
        note.deployment_id,
        note.generated_at,
        &channels,
        &[event],
    )
    .await
}

fn channel_from_row<R: RowExt>(r: &R) -> Result<AlertChannel, DbError> {
    Ok(AlertChannel {
        id: r.uuid("id")?,
        user_id: r.uuid("user_id")?,
        name: r.text("name")?,
        kind: channel_kind(r, "kind")?,
        hint: r.text("hint")?,
        events: parse_events(&r.text("events")?),
        created_at: r.ts("created_at")?,
    })
}

fn channel_kind<R: RowExt>(r: &R, c: &str) -> Result<ChannelKind, DbError> {
    let kind = r.text(c)?;
    ChannelKind::parse(&kind)
        .ok_or_else(|| codec::decode_err(c, format!("unknown channel kind {kind}")))
}

fn alert_kind<R: RowExt>(r: &R, c: &str) -> Result<AlertKind, DbError> {
    let kind = r.text(c)?;
    AlertKind::parse(&kind)
        .ok_or_else(|| codec::decode_err(c, format!("unknown alert kind {kind}")))
}

fn attempts<R: RowExt>(r: &R) -> Result<u32, DbError> {
    u32::try_from(r.int("attempts")?).map_err(|e| codec::decode_err("attempts", e))
}

impl<S: Backend<Db = D>, D: Dialect> AlertStore for S {
    async fn add_alert_channel(&self, channel: &NewAlertChannel) -> Result<AlertChannel, DbError> {
        let problems = channel.problems();
        if !problems.is_empty() {
            return Err(DbError::Invalid {
                what: "alert channel",
                detail: problems.join("; "),
            });
        }
        let mut tx = self.begin().await.map_err(ctx("beginning alert channel"))?;
        let row = query("SELECT count(*) AS n FROM alert_channels WHERE user_id = $1")
            .bind(D::id(channel.user_id))
            .fetch_one(&mut *tx)
            .await
            .map_err(ctx("counting alert channels"))?;
        if row.count("n")? >= MAX_CHANNELS_PER_USER as u64 {
            return Err(DbError::Invalid {
                what: "alert channel",
                detail: format!("a user has at most {MAX_CHANNELS_PER_USER} channels"),
            });
        }
        let stored = AlertChannel {
            id: channel.id,
            user_id: channel.user_id,
            name: channel.name.trim().to_owned(),
            kind: channel.kind,
            hint: channel.hint(),
            events: parse_events(&events_text(&channel.events)),
            created_at: channel.created_at,
        };
        query(
            "INSERT INTO alert_channels (id, user_id, name, kind, url, secret, chat_id, hint, \
             events, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(D::id(stored.id))
        .bind(D::id(stored.user_id))
        .bind(stored.name.as_str())
        .bind(stored.kind.as_str())
        .bind(channel.url.as_deref())
        .bind(channel.secret.as_deref())
        .bind(channel.chat_id.as_deref())
        .bind(stored.hint.as_str())
        .bind(events_text(&channel.events))
        .bind(D::ts(stored.created_at))
        .execute(&mut *tx)
        .await
        .map_err(ctx("adding an alert channel"))?;
        tx.commit().await.map_err(ctx("committing alert channel"))?;
        Ok(stored)
    }

    async fn alert_channels(&self, user_id: Uuid) -> Result<Vec<AlertChannel>, DbError> {
        let rows = query(
            "SELECT id, user_id, name, kind, hint, events, created_at FROM alert_channels \
             WHERE user_id = $1 ORDER BY created_at, id",
        )
        .bind(D::id(user_id))
        .fetch_all(self.pool())
        .await
        .map_err(ctx("listing alert channels"))?;
        rows.iter().map(channel_from_row).collect()
    }

    async fn delete_alert_channel(&self, user_id: Uuid, id: Uuid) -> Result<(), DbError> {
        let done = query("DELETE FROM alert_channels WHERE id = $1 AND user_id = $2")
            .bind(D::id(id))
            .bind(D::id(user_id))
            .execute(self.pool())
            .await
            .map_err(ctx("deleting an alert channel"))?;
        if done.rows_affected() == 0 {
            return Err(DbError::not_found("alert channel", id));
        }
        Ok(())
    }

    async fn queue_test_alert(
        &self,
        user_id: Uuid,
        channel_id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Uuid, DbError> {
        let mut tx = self.begin().await.map_err(ctx("beginning test alert"))?;
        let row = query("SELECT name FROM alert_channels WHERE id = $1 AND user_id = $2")
            .bind(D::id(channel_id))
            .bind(D::id(user_id))
            .fetch_optional(&mut *tx)
            .await
            .map_err(ctx("reading the alert channel"))?
            .ok_or_else(|| DbError::not_found("alert channel", channel_id))?;
        let name = row.text("name")?;
        let mut subject = channel_id.hyphenated().to_string();
        subject.push('\n');
        text::push_rfc3339(&mut subject, at, chrono::SecondsFormat::Nanos);
        let event = alert_event_id(
            Uuid::new_v5(&crate::alerts::ALERT_NAMESPACE, subject.as_bytes()),
            AlertKind::Test,
        );
        query(
            "INSERT INTO alert_events (id, user_id, deployment_id, kind, occurred_at, text, data, \
             created_at) VALUES ($1, $2, NULL, 'test', $3, $4, $5, $3)",
        )
        .bind(D::id(event))
        .bind(D::id(user_id))
        .bind(D::ts(at))
        .bind(cut(
            &format!(
                "{}: the channel {name} receives the trading agents' alerts",
                AlertKind::Test.label()
            ),
            MAX_ALERT_TEXT_CHARS,
        ))
        .bind(Json(json!({ "channel": name })))
        .execute(&mut *tx)
        .await
        .map_err(ctx("queueing a test alert"))?;
        insert_delivery(&mut tx, event, channel_id, user_id, at).await?;
        tx.commit().await.map_err(ctx("committing test alert"))?;
        Ok(alert_delivery_id(event, channel_id))
    }

    async fn alert_deliveries(
        &self,
        user_id: Uuid,
        limit: u32,
    ) -> Result<Vec<AlertDelivery>, DbError> {
        let limit = check_limit("alert deliveries limit", limit, MAX_DELIVERIES_READ)?;
        let rows = query(
            "SELECT d.id, d.channel_id, e.kind, e.text, e.occurred_at, d.status, d.attempts, \
             d.last_error, d.delivered_at FROM alert_deliveries d \
             JOIN alert_events e ON e.id = d.event_id \
             WHERE d.user_id = $1 ORDER BY e.occurred_at DESC, d.id LIMIT $2",
        )
        .bind(D::id(user_id))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("listing alert deliveries"))?;
        rows.iter()
            .map(|r| {
                let status = r.text("status")?;
                Ok(AlertDelivery {
                    id: r.uuid("id")?,
                    channel_id: r.uuid("channel_id")?,
                    kind: alert_kind(r, "kind")?,
                    text: r.text("text")?,
                    occurred_at: r.ts("occurred_at")?,
                    status: DeliveryStatus::parse(&status).ok_or_else(|| {
                        codec::decode_err("status", format!("unknown status {status}"))
                    })?,
                    attempts: attempts(r)?,
                    last_error: r.opt_text("last_error")?,
                    delivered_at: r.opt_ts("delivered_at")?,
                })
            })
            .collect()
    }
}

impl<S: Leases<Db = D>, D: Dialect> AlertOutbox for S {
    async fn claim_alert_deliveries(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_for: chrono::Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, DbError> {
        // As the deployments' claim (`lease.rs`): the due rows locked `FOR UPDATE SKIP LOCKED`
        // on PostgreSQL, chosen once in a MATERIALIZED CTE, the availability tested again.
        let sql = format!(
            "WITH due AS MATERIALIZED (SELECT id FROM alert_deliveries WHERE status = 'pending' \
                 AND next_attempt_at <= $2 \
                 AND (lease_expires_at IS NULL OR lease_expires_at <= $2) \
                 ORDER BY next_attempt_at, id LIMIT $4{}\
             ) UPDATE alert_deliveries SET lease_owner = $1, lease_expires_at = $3 \
             WHERE id IN (SELECT id FROM due) AND status = 'pending' \
             AND (lease_expires_at IS NULL OR lease_expires_at <= $2) RETURNING id",
            D::SKIP_LOCKED
        );
        let rows = super::lease::claim_rows(
            self,
            &sql,
            owner,
            now,
            lease_for,
            limit,
            "claiming alert deliveries",
        )
        .await?;
        let ids = rows
            .iter()
            .map(|r| r.uuid("id"))
            .collect::<Result<Vec<_>, _>>()?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT d.id, d.event_id, d.attempts, e.kind, e.user_id, e.deployment_id, \
             e.occurred_at, e.text, e.data, c.id AS channel_id, c.kind AS channel_kind, c.url, \
             c.secret, c.chat_id FROM alert_deliveries d \
             JOIN alert_events e ON e.id = d.event_id \
             JOIN alert_channels c ON c.id = d.channel_id \
             WHERE d.lease_owner = $1 AND d.id IN ({}) ORDER BY d.next_attempt_at, d.id",
            params(2, ids.len(), true)
        );
        let mut q = query(&sql).bind(owner);
        for id in &ids {
            q = q.bind(D::id(*id));
        }
        let rows = q
            .fetch_all(self.pool())
            .await
            .map_err(ctx("reading claimed alert deliveries"))?;
        rows.iter()
            .map(|r| {
                Ok(ClaimedDelivery {
                    id: r.uuid("id")?,
                    event_id: r.uuid("event_id")?,
                    kind: alert_kind(r, "kind")?,
                    user_id: r.uuid("user_id")?,
                    deployment_id: r.opt_uuid("deployment_id")?,
                    occurred_at: r.ts("occurred_at")?,
                    text: r.text("text")?,
                    data: r.json("data")?,
                    channel_id: r.uuid("channel_id")?,
                    channel_kind: channel_kind(r, "channel_kind")?,
                    url: r.opt_text("url")?,
                    secret: r.opt_text("secret")?,
                    chat_id: r.opt_text("chat_id")?,
                    attempts: attempts(r)?,
                })
            })
            .collect()
    }

    async fn finish_alert_delivery(
        &self,
        id: Uuid,
        owner: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, DbError> {
        let done = query(
            "UPDATE alert_deliveries SET status = 'delivered', delivered_at = $3, \
             attempts = attempts + 1, last_error = NULL, lease_owner = NULL, \
             lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2 AND status = 'pending'",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(D::ts(at))
        .execute(self.pool())
        .await
        .map_err(ctx("marking an alert delivered"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn retry_alert_delivery(
        &self,
        id: Uuid,
        owner: &str,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
    ) -> Result<bool, DbError> {
        let error = cut(
            if error.is_empty() { "failed" } else { error },
            MAX_DELIVERY_ERROR_CHARS,
        );
        let sql = if retry_at.is_some() {
            "UPDATE alert_deliveries SET attempts = attempts + 1, last_error = $3, \
             next_attempt_at = $4, lease_owner = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND lease_owner = $2 AND status = 'pending'"
        } else {
            "UPDATE alert_deliveries SET status = 'failed', attempts = attempts + 1, \
             last_error = $3, lease_owner = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND lease_owner = $2 AND status = 'pending'"
        };
        let mut q = query(sql).bind(D::id(id)).bind(owner).bind(error);
        if let Some(at) = retry_at {
            q = q.bind(D::ts(at));
        }
        let done = q
            .execute(self.pool())
            .await
            .map_err(ctx("scheduling an alert retry"))?;
        Ok(done.rows_affected() == 1)
    }
}
