//! Alerts on both backends: a tick writes its alerts in its own transaction, once per event and
//! channel (a replayed tick writes none, a tick without alert settings none); a streak of model
//! errors is one event at the tick that makes it; a held lesson is an event of its reflection;
//! deliveries are leased to one runner, retried, given up or delivered; channels are checked
//! and read back without their secrets. On PostgreSQL a user reads no secret and no other
//! user's channel.

pub(crate) mod cases {
    use db::test_support::{
        at, sample_closed_trade, sample_note, sample_open_trade, sample_snapshot, seed, tick_record,
    };
    use db::{
        AlertKind, ChannelKind, DbError, NewAlertChannel, RecordOutcome, Storage, TickAlerts,
        TickRecord,
    };
    use types::{RuleCode, Verdict};
    use uuid::Uuid;

    use crate::common::RawSql;

    fn alerts() -> TickAlerts {
        TickAlerts {
            start_lag: chrono::Duration::seconds(5),
            lag_threshold: chrono::Duration::minutes(5),
            model_error_streak: 3,
        }
    }

    pub(crate) fn channel(user: Uuid, kind: ChannelKind, events: &[AlertKind]) -> NewAlertChannel {
        NewAlertChannel {
            id: Uuid::new_v4(),
            user_id: user,
            name: format!("{} channel", kind.as_str()),
            kind,
            url: (kind != ChannelKind::Telegram)
                .then(|| "https://hooks.example.com/services/T0/B0/s3cr3tpath".to_owned()),
            secret: matches!(kind, ChannelKind::Webhook | ChannelKind::Telegram)
                .then(|| "123456:sup3r-s3cret".to_owned()),
            chat_id: (kind == ChannelKind::Telegram).then(|| "-1001".to_owned()),
            events: events.to_vec(),
            created_at: at(0),
        }
    }

    async fn kinds<S: RawSql>(s: &S) -> Vec<String> {
        let n = s.count("SELECT count(*) FROM alert_events").await;
        let mut out = Vec::new();
        for kind in AlertKind::all() {
            let k = s
                .count(&format!(
                    "SELECT count(*) FROM alert_events WHERE kind = '{}'",
                    kind.as_str()
                ))
                .await;
            for _ in 0..k {
                out.push(kind.as_str().to_owned());
            }
        }
        assert_eq!(out.len() as i64, n);
        out
    }

    pub(crate) async fn a_tick_writes_its_alerts_once_per_event_and_channel<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let user = fx.user.id;
        let every = s
            .add_alert_channel(&channel(
                user,
                ChannelKind::Webhook,
                &AlertKind::SUBSCRIBABLE,
            ))
            .await
            .unwrap();
        let halts = s
            .add_alert_channel(&channel(user, ChannelKind::Slack, &[AlertKind::Halt]))
            .await
            .unwrap();
        // A tick without alert settings (a backtest) writes none.
        s.record_tick(&tick_record(sample_snapshot(fx.deployment.id, at(0))))
            .await
            .unwrap();
        assert_eq!(s.count("SELECT count(*) FROM alert_events").await, 0);

        // Executed, with a position closed, and started late.
        let open = sample_open_trade(&fx, at(0));
        let closed = sample_closed_trade(&open, at(60));
        let mut late = alerts();
        late.start_lag = chrono::Duration::minutes(7);
        let tick = TickRecord {
            trades: vec![closed.clone()],
            ..tick_record(sample_snapshot(fx.deployment.id, at(60)))
        };
        // The open row first (as the tick that opened it would have written it).
        s.record_tick(&TickRecord {
            trades: vec![open],
            ..tick_record(sample_snapshot(fx.deployment.id, at(30)))
        })
        .await
        .unwrap();
        assert!(matches!(
            s.record_tick_alerting(&tick, &late).await.unwrap(),
            RecordOutcome::Recorded { .. }
        ));
        assert_eq!(
            kinds(s).await,
            vec!["order_executed", "position_closed", "runner_lagging"]
        );
        let text = s
            .count(
                "SELECT count(*) FROM alert_events WHERE kind = 'position_closed' \
                 AND text LIKE '%realized PnL +$7.40, fees $0.59, exit at %'",
            )
            .await;
        assert_eq!(text, 1, "money in the prompts' style");
        // Replayed: nothing more.
        let replay = TickRecord {
            snapshot: db::DecisionSnapshot {
                id: Uuid::new_v4(),
                ..tick.snapshot.clone()
            },
            ..tick.clone()
        };
        assert!(matches!(
            s.record_tick_alerting(&replay, &late).await.unwrap(),
            RecordOutcome::AlreadyRecorded { .. }
        ));
        assert_eq!(s.count("SELECT count(*) FROM alert_events").await, 3);
        assert_eq!(s.count("SELECT count(*) FROM alert_deliveries").await, 3);

        // A halt goes to both channels; a plain rejection to the webhook only.
        let mut halted = sample_snapshot(fx.deployment.id, at(120));
        halted.verdict = Verdict::Rejected {
            rule: RuleCode::HaltDrawdown,
            detail: "equity 20% below its peak".into(),
        };
        s.record_tick_alerting(&tick_record(halted.clone()), &alerts())
            .await
            .unwrap();
        let mut rejected = sample_snapshot(fx.deployment.id, at(180));
        rejected.verdict = Verdict::Rejected {
            rule: RuleCode::PositionCap,
            detail: "60.01% > 60%".into(),
        };
        s.record_tick_alerting(&tick_record(rejected), &alerts())
            .await
            .unwrap();
        let to =
            |c: Uuid| format!("SELECT count(*) FROM alert_deliveries WHERE channel_id = '{c}'");
        assert_eq!(s.count(&to(halts.id)).await, 1);
        assert_eq!(s.count(&to(every.id)).await, 5);
        let halt_event = db::alert_event_id(halted.id, AlertKind::Halt);
        assert_eq!(
            s.count(&format!(
                "SELECT count(*) FROM alert_deliveries WHERE event_id = '{halt_event}' \
                 AND id IN ('{}', '{}')",
                db::alert_delivery_id(halt_event, every.id),
                db::alert_delivery_id(halt_event, halts.id)
            ))
            .await,
            2,
            "delivery ids are derived from the event and the channel"
        );
    }

    pub(crate) async fn a_streak_of_model_errors_is_one_event<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        s.add_alert_channel(&channel(
            fx.user.id,
            ChannelKind::Discord,
            &[AlertKind::ModelErrorStreak],
        ))
        .await
        .unwrap();
        let mut ids = Vec::new();
        for minutes in [0, 60, 120, 180, 240] {
            let mut snap = sample_snapshot(fx.deployment.id, at(minutes));
            snap.proposal = None;
            snap.verdict = Verdict::NoOp {
                detail: "model error".into(),
            };
            snap.model_error = true;
            snap.error = Some("timeout".into());
            ids.push(snap.id);
            s.record_tick_alerting(&tick_record(snap), &alerts())
                .await
                .unwrap();
        }
        // The third error in a row makes the streak; the fourth and fifth do not again.
        assert_eq!(kinds(s).await, vec!["model_error_streak"]);
        assert_eq!(
            s.count(&format!(
                "SELECT count(*) FROM alert_events WHERE id = '{}' AND text LIKE '%last 3 ticks%'",
                db::alert_event_id(ids[2], AlertKind::ModelErrorStreak)
            ))
            .await,
            1
        );
    }

    pub(crate) async fn a_held_lesson_is_an_event_of_its_reflection<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        s.add_alert_channel(&channel(
            fx.user.id,
            ChannelKind::Telegram,
            &[AlertKind::LessonHeld],
        ))
        .await
        .unwrap();
        s.insert_note(&sample_note(&fx, at(60), "- a lesson"))
            .await
            .unwrap();
        assert_eq!(s.count("SELECT count(*) FROM alert_events").await, 0);
        let mut held = sample_note(&fx, at(120), "- a lesson");
        held.lint = Some(db::test_support::lint("unsupported figure"));
        s.insert_note(&held).await.unwrap();
        assert_eq!(kinds(s).await, vec!["lesson_held"]);
        assert_eq!(
            s.count(&format!(
                "SELECT count(*) FROM alert_events WHERE id = '{}'",
                db::alert_event_id(held.id, AlertKind::LessonHeld)
            ))
            .await,
            1
        );
    }

    pub(crate) async fn deliveries_are_leased_retried_and_settled<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let c = s
            .add_alert_channel(&channel(
                fx.user.id,
                ChannelKind::Webhook,
                &[AlertKind::OrderExecuted],
            ))
            .await
            .unwrap();
        s.record_tick_alerting(
            &tick_record(sample_snapshot(fx.deployment.id, at(0))),
            &alerts(),
        )
        .await
        .unwrap();
        let now = chrono::Utc::now();
        let lease = chrono::Duration::minutes(1);
        let claimed = s.claim_alert_deliveries("a", now, lease, 10).await.unwrap();
        assert_eq!(claimed.len(), 1);
        let d = &claimed[0];
        assert_eq!(d.channel_id, c.id);
        assert_eq!(d.kind, AlertKind::OrderExecuted);
        assert_eq!(d.secret.as_deref(), Some("123456:sup3r-s3cret"));
        assert!(
            !format!("{d:?}").contains("s3cr3t"),
            "Debug shows no secret"
        );
        assert!(d.text.starts_with("Order executed: "), "{}", d.text);
        // Leased: nobody else gets it until the lease expires.
        assert!(
            s.claim_alert_deliveries("b", now, lease, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let retry_at = now + chrono::Duration::seconds(30);
        assert!(
            s.retry_alert_delivery(d.id, "a", "could not connect", Some(retry_at))
                .await
                .unwrap()
        );
        assert!(
            !s.retry_alert_delivery(d.id, "a", "twice", Some(retry_at))
                .await
                .unwrap()
        );
        assert!(
            s.claim_alert_deliveries("b", now, lease, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let again = s
            .claim_alert_deliveries("b", retry_at, lease, 10)
            .await
            .unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].attempts, 1);
        // An expired lease is taken over; the first holder can no longer settle it.
        let later = retry_at + chrono::Duration::minutes(2);
        let taken = s
            .claim_alert_deliveries("c", later, lease, 10)
            .await
            .unwrap();
        assert_eq!(taken.len(), 1);
        assert!(!s.finish_alert_delivery(d.id, "b", later).await.unwrap());
        assert!(s.finish_alert_delivery(d.id, "c", later).await.unwrap());
        let rows = s.alert_deliveries(fx.user.id, 10).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].status, db::DeliveryStatus::Delivered);
        assert_eq!(rows[0].attempts, 2);
        // A test message, given up after its last attempt.
        let test = s.queue_test_alert(fx.user.id, c.id, now).await.unwrap();
        let claimed = s
            .claim_alert_deliveries("d", later, lease, 10)
            .await
            .unwrap();
        assert_eq!(claimed.iter().map(|d| d.id).collect::<Vec<_>>(), vec![test]);
        assert_eq!(claimed[0].kind, AlertKind::Test);
        assert!(
            s.retry_alert_delivery(test, "d", &"x".repeat(5000), None)
                .await
                .unwrap()
        );
        let rows = s.alert_deliveries(fx.user.id, 10).await.unwrap();
        let failed = rows.iter().find(|r| r.id == test).unwrap();
        assert_eq!(failed.status, db::DeliveryStatus::Failed);
        assert_eq!(failed.last_error.as_ref().unwrap().chars().count(), 1000);
        assert!(
            s.claim_alert_deliveries("e", later + lease * 10, lease, 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Deleting the channel deletes its deliveries.
        s.delete_alert_channel(fx.user.id, c.id).await.unwrap();
        assert_eq!(s.count("SELECT count(*) FROM alert_deliveries").await, 0);
        assert!(matches!(
            s.delete_alert_channel(fx.user.id, c.id).await,
            Err(DbError::NotFound { .. })
        ));
    }

    pub(crate) async fn channels_are_checked_and_read_back_without_secrets<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let mut bad = channel(fx.user.id, ChannelKind::Slack, &[]);
        bad.secret = Some("k".into());
        match s.add_alert_channel(&bad).await {
            Err(DbError::Invalid { what, detail }) => {
                assert_eq!(what, "alert channel");
                assert!(
                    detail.contains("secret:") && detail.contains("events:"),
                    "{detail}"
                );
            }
            other => panic!("{other:?}"),
        }
        for kind in ChannelKind::ALL {
            s.add_alert_channel(&channel(fx.user.id, kind, &[AlertKind::Halt]))
                .await
                .unwrap();
        }
        let listed = s.alert_channels(fx.user.id).await.unwrap();
        assert_eq!(listed.len(), 4);
        let shown = format!("{listed:?}");
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("sup3r"),
            "{shown}"
        );
        assert!(shown.contains("https://hooks.example.com") && shown.contains("-1001"));
        assert!(s.alert_channels(Uuid::new_v4()).await.unwrap().is_empty());
    }
}

crate::common::on_every_backend!(
    alerts;
    a_tick_writes_its_alerts_once_per_event_and_channel,
    a_streak_of_model_errors_is_one_event,
    a_held_lesson_is_an_event_of_its_reflection,
    deliveries_are_leased_retried_and_settled,
    channels_are_checked_and_read_back_without_secrets,
);

/// Row-level security: a user reads their channels but no URL or secret column, no other user's
/// channel, and queues a test only to a channel of theirs.
#[tokio::test]
async fn a_user_reads_no_secret_and_no_other_users_channel() {
    use db::{AlertKind, AlertStore, ChannelKind, RegistryStore};
    let h = crate::common::postgres().await;
    let fx = db::test_support::seed(&h.store).await.unwrap();
    let other = db::test_support::sample_user();
    h.store.upsert_user(&other).await.unwrap();
    let mine = h
        .store
        .as_user(fx.user.id)
        .add_alert_channel(&cases::channel(
            fx.user.id,
            ChannelKind::Webhook,
            &[AlertKind::Halt],
        ))
        .await
        .unwrap();
    let me = h.store.as_user(fx.user.id);
    assert_eq!(me.alert_channels(fx.user.id).await.unwrap().len(), 1);
    let them = h.store.as_user(other.id);
    assert!(them.alert_channels(fx.user.id).await.unwrap().is_empty());
    assert!(
        them.delete_alert_channel(fx.user.id, mine.id)
            .await
            .is_err()
    );
    assert!(
        them.queue_test_alert(other.id, mine.id, chrono::Utc::now())
            .await
            .is_err()
    );
    // Adding a channel for someone else is refused by the policy.
    assert!(
        them.add_alert_channel(&cases::channel(
            fx.user.id,
            ChannelKind::Slack,
            &[AlertKind::Halt]
        ))
        .await
        .is_err()
    );
    let mut tx = me.begin().await.unwrap();
    let secret = sqlx::query("SELECT secret FROM alert_channels")
        .fetch_all(&mut *tx)
        .await;
    assert!(secret.is_err(), "the user may not read the secret column");
    drop(tx);
    let mut tx = me.begin().await.unwrap();
    let url = sqlx::query("SELECT url FROM alert_channels")
        .fetch_all(&mut *tx)
        .await;
    assert!(url.is_err(), "the user may not read the url column");
    drop(tx);
    me.queue_test_alert(fx.user.id, mine.id, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(me.alert_deliveries(fx.user.id, 10).await.unwrap().len(), 1);
    assert!(
        them.alert_deliveries(fx.user.id, 10)
            .await
            .unwrap()
            .is_empty()
    );
}
