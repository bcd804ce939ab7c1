//! Controls on both backends: pause, resume and stop move a deployment's status with their audit
//! row in one transaction, refuse what the status does not allow (naming it), keep a paused
//! deployment's schedule, and hand a stop's flatten to exactly one runner; the database keeps a
//! stopped deployment stopped. On PostgreSQL, row-level security lets a user control only their
//! own deployments.

pub(crate) mod cases {
    use db::test_support::{at, seed};
    use db::{
        ConstraintKind, ControlAction, ControlRequest, DbError, DeploymentControl,
        DeploymentStatus, Storage,
    };
    use uuid::Uuid;

    use crate::common::RawSql;

    /// `action` on `deployment` at `at` by an operator, with a fresh audit id.
    pub(crate) async fn control<S: Storage>(
        s: &S,
        deployment: Uuid,
        action: ControlAction,
        flatten: bool,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<DeploymentControl, DbError> {
        s.control_deployment(&request(deployment, action, flatten, at))
            .await
    }

    fn request(
        deployment: Uuid,
        action: ControlAction,
        flatten: bool,
        at: chrono::DateTime<chrono::Utc>,
    ) -> ControlRequest {
        ControlRequest {
            id: Uuid::new_v4(),
            deployment_id: deployment,
            action,
            flatten,
            requested_by: "operator:alice".into(),
            reason: None,
            at,
        }
    }

    fn refused(
        result: Result<DeploymentControl, DbError>,
        current: DeploymentStatus,
        needle: &str,
    ) {
        match result {
            Err(e @ DbError::Transition { .. }) => {
                let DbError::Transition {
                    current: found,
                    why,
                    ..
                } = &e
                else {
                    unreachable!()
                };
                assert_eq!(*found, current, "{e}");
                assert!(why.contains(needle), "{needle:?} not in {e}");
                assert!(
                    e.to_string().contains(current.as_str()),
                    "the message names the status: {e}"
                );
            }
            other => panic!("expected a refused transition ({needle}), got {other:?}"),
        }
    }

    async fn audit_rows<S: RawSql>(s: &S, deployment: Uuid) -> i64 {
        s.count(&format!(
            "SELECT COUNT(*) FROM deployment_controls \
             WHERE CAST(deployment_id AS TEXT) = '{deployment}'"
        ))
        .await
    }

    pub(crate) async fn pause_resume_and_stop_move_the_status_with_their_audit_rows<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let id = fx.deployment.id;
        s.set_next_tick_at(id, Some(at(60))).await.unwrap();

        let paused = s
            .control_deployment(&ControlRequest {
                reason: Some("CPI print at 14:30".into()),
                ..request(id, ControlAction::Pause, false, at(1))
            })
            .await
            .unwrap();
        assert_eq!(
            (paused.from_status, paused.to_status),
            (DeploymentStatus::Active, DeploymentStatus::Paused)
        );
        let d = s.get_deployment(id).await.unwrap();
        assert_eq!(d.status, DeploymentStatus::Paused);
        assert_eq!(d.next_tick_at, Some(at(60)), "a pause keeps the schedule");

        let resumed = control(s, id, ControlAction::Resume, false, at(2))
            .await
            .unwrap();
        assert_eq!(
            (resumed.from_status, resumed.to_status),
            (DeploymentStatus::Paused, DeploymentStatus::Active)
        );
        let d = s.get_deployment(id).await.unwrap();
        assert_eq!(
            (d.status, d.next_tick_at),
            (DeploymentStatus::Active, Some(at(60)))
        );
        assert_eq!(s.flatten_state(id).await.unwrap(), None);

        // Paused again, then stopped from paused.
        control(s, id, ControlAction::Pause, false, at(3))
            .await
            .unwrap();
        let stopped = control(s, id, ControlAction::Stop, false, at(4))
            .await
            .unwrap();
        assert_eq!(
            (stopped.from_status, stopped.to_status, stopped.flatten),
            (DeploymentStatus::Paused, DeploymentStatus::Stopped, false)
        );
        assert_eq!(
            s.get_deployment(id).await.unwrap().status,
            DeploymentStatus::Stopped
        );
        assert_eq!(s.flatten_state(id).await.unwrap(), None);

        // The audit trail, newest first, as written.
        let trail = s.deployment_controls(id, 10).await.unwrap();
        assert_eq!(
            trail
                .iter()
                .map(|c| (c.action, c.requested_at))
                .collect::<Vec<_>>(),
            vec![
                (ControlAction::Stop, at(4)),
                (ControlAction::Pause, at(3)),
                (ControlAction::Resume, at(2)),
                (ControlAction::Pause, at(1)),
            ]
        );
        assert_eq!(trail[3], paused);
        assert_eq!(trail[3].reason.as_deref(), Some("CPI print at 14:30"));
        assert_eq!(trail[3].requested_by, "operator:alice");
        assert_eq!(s.deployment_controls(id, 2).await.unwrap().len(), 2);
        assert!(matches!(
            s.deployment_controls(id, 1001).await,
            Err(DbError::Invalid { .. })
        ));
        // Another deployment's trail is its own.
        let other = seed(s).await.unwrap().deployment.id;
        assert!(s.deployment_controls(other, 10).await.unwrap().is_empty());
    }

    pub(crate) async fn a_stop_with_flatten_is_recorded_until_a_runner_does_it<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let id = fx.deployment.id;
        let stop = control(s, id, ControlAction::Stop, true, at(5))
            .await
            .unwrap();
        assert!(stop.flatten);
        let state = s.flatten_state(id).await.unwrap().expect("requested");
        assert_eq!(
            (state.requested_at, state.attempts, state.done_at),
            (at(5), 0, None)
        );

        // A stop without flatten leaves the positions; a later stop with flatten may still ask
        // for them to be closed, once.
        let other = seed(s).await.unwrap().deployment.id;
        control(s, other, ControlAction::Stop, false, at(1))
            .await
            .unwrap();
        refused(
            control(s, other, ControlAction::Stop, false, at(2)).await,
            DeploymentStatus::Stopped,
            "already stopped",
        );
        let late = control(s, other, ControlAction::Stop, true, at(3))
            .await
            .unwrap();
        assert_eq!(
            (late.from_status, late.to_status, late.flatten),
            (DeploymentStatus::Stopped, DeploymentStatus::Stopped, true)
        );
        assert_eq!(
            s.flatten_state(other)
                .await
                .unwrap()
                .map(|f| f.requested_at),
            Some(at(3))
        );
        refused(
            control(s, other, ControlAction::Stop, true, at(4)).await,
            DeploymentStatus::Stopped,
            "already requested",
        );
        assert_eq!(audit_rows(s, other).await, 2);
    }

    pub(crate) async fn refused_controls_name_the_status_and_write_nothing<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let id = fx.deployment.id;
        refused(
            control(s, id, ControlAction::Resume, false, at(1)).await,
            DeploymentStatus::Active,
            "not paused",
        );
        control(s, id, ControlAction::Pause, false, at(2))
            .await
            .unwrap();
        refused(
            control(s, id, ControlAction::Pause, false, at(3)).await,
            DeploymentStatus::Paused,
            "already paused",
        );
        control(s, id, ControlAction::Stop, false, at(4))
            .await
            .unwrap();
        for action in [ControlAction::Pause, ControlAction::Resume] {
            refused(
                control(s, id, action, false, at(5)).await,
                DeploymentStatus::Stopped,
                "final",
            );
        }
        assert_eq!(audit_rows(s, id).await, 2, "only the pause and the stop");

        // The request's own faults, before anything is read.
        let live = seed(s).await.unwrap().deployment.id;
        match control(s, live, ControlAction::Pause, true, at(1)).await {
            Err(DbError::Invalid { what, .. }) => assert_eq!(what, "flatten"),
            other => panic!("flatten with a pause: {other:?}"),
        }
        let bad = |f: fn(&mut ControlRequest)| {
            let mut r = request(live, ControlAction::Pause, false, at(1));
            f(&mut r);
            r
        };
        for (req, field) in [
            (bad(|r| r.requested_by = String::new()), "requested_by"),
            (bad(|r| r.requested_by = "x".repeat(101)), "requested_by"),
            (bad(|r| r.reason = Some(String::new())), "reason"),
            (bad(|r| r.reason = Some("y".repeat(501))), "reason"),
        ] {
            match s.control_deployment(&req).await {
                Err(DbError::Bound { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: expected a bound, got {other:?}"),
            }
        }
        for (req, field) in [
            (bad(|r| r.reason = Some("a\0b".into())), "reason"),
            (bad(|r| r.reason = Some("one\ntwo".into())), "reason"),
            (
                bad(|r| r.requested_by = "op\u{1b}[2J".into()),
                "requested_by",
            ),
        ] {
            match s.control_deployment(&req).await {
                Err(DbError::Invalid { what, .. }) => assert_eq!(what, field),
                other => panic!("{field}: expected invalid, got {other:?}"),
            }
        }
        let missing = Uuid::new_v4();
        match control(s, missing, ControlAction::Pause, false, at(1)).await {
            Err(DbError::NotFound { entity, id }) => {
                assert_eq!((entity, id), ("deployment", missing.to_string()));
            }
            other => panic!("expected NotFound, got {other:?}"),
        }
        assert!(matches!(
            s.flatten_state(missing).await,
            Err(DbError::NotFound { .. })
        ));
        assert_eq!(audit_rows(s, live).await, 0);
        assert_eq!(
            s.get_deployment(live).await.unwrap().status,
            DeploymentStatus::Active
        );

        // The audit row and the status change are one transaction: a refused audit row (a
        // repeated id) leaves the status as it was.
        let first = control(s, live, ControlAction::Pause, false, at(2))
            .await
            .unwrap();
        let again = ControlRequest {
            id: first.id,
            ..request(live, ControlAction::Resume, false, at(3))
        };
        match s.control_deployment(&again).await {
            Err(DbError::Constraint { kind, .. }) => assert_eq!(kind, ConstraintKind::Unique),
            other => panic!("a repeated audit id: {other:?}"),
        }
        assert_eq!(
            s.get_deployment(live).await.unwrap().status,
            DeploymentStatus::Paused,
            "the resume was rolled back with its audit row"
        );
        assert_eq!(audit_rows(s, live).await, 1);
    }

    pub(crate) async fn the_database_keeps_a_stopped_deployment_stopped<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let id = fx.deployment.id;
        // No flatten on a deployment that is not stopped.
        let e = s
            .exec(&format!(
                "UPDATE deployments SET flatten_requested_at = '2026-06-04T10:00:00.000000Z' \
                 WHERE CAST(id AS TEXT) = '{id}'"
            ))
            .await
            .expect_err("a flatten of an active deployment");
        assert!(e.to_string().contains("deployments_flatten_stopped"), "{e}");
        control(s, id, ControlAction::Stop, false, at(1))
            .await
            .unwrap();
        for status in ["active", "paused"] {
            let e = s
                .exec(&format!(
                    "UPDATE deployments SET status = '{status}' WHERE CAST(id AS TEXT) = '{id}'"
                ))
                .await
                .expect_err("a stopped deployment moved back");
            // PostgreSQL names the constraint of the trigger's error; SQLite says it.
            let named = e
                .as_database_error()
                .and_then(|d| d.constraint())
                .is_some_and(|c| c == "deployments_stopped_final")
                || e.to_string().contains("deployments_stopped_final");
            assert!(named, "{e}");
        }
        // An audit row of a transition that does not exist.
        let e = s
            .exec(&format!(
                "INSERT INTO deployment_controls (id, deployment_id, action, flatten, requested_by, \
                 requested_at, from_status, to_status) VALUES ('{}', '{id}', 'pause', false, 'x', \
                 '2026-06-04T10:00:00.000000Z', 'stopped', 'paused')",
                Uuid::new_v4()
            ))
            .await
            .expect_err("pause from stopped");
        assert!(
            e.to_string().contains("deployment_controls_transition"),
            "{e}"
        );
        assert_eq!(
            s.get_deployment(id).await.unwrap().status,
            DeploymentStatus::Stopped
        );
    }

    pub(crate) async fn claims_never_hand_out_a_paused_or_stopped_deployment<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let lease = chrono::Duration::minutes(5);
        let active = seed(s).await.unwrap().deployment.id;
        let paused = seed(s).await.unwrap().deployment.id;
        let stopped = seed(s).await.unwrap().deployment.id;
        let flatten = seed(s).await.unwrap().deployment.id;
        for id in [active, paused, stopped, flatten] {
            s.set_next_tick_at(id, Some(at(0))).await.unwrap();
        }
        control(s, paused, ControlAction::Pause, false, at(1))
            .await
            .unwrap();
        control(s, stopped, ControlAction::Stop, false, at(1))
            .await
            .unwrap();
        control(s, flatten, ControlAction::Stop, true, at(1))
            .await
            .unwrap();
        assert_eq!(
            s.claimable_count(at(2)).await.unwrap(),
            2,
            "a tick, a flatten"
        );

        let ticks: Vec<Uuid> = s
            .claim_due_deployments("runner-a", at(2), lease, 10)
            .await
            .unwrap()
            .iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(ticks, vec![active], "only the active one ticks");
        // Two runners look for flattens at once: one gets it.
        let (a, b) = tokio::join!(
            s.claim_flattens("runner-a", at(2), lease, 10),
            s.claim_flattens("runner-b", at(2), lease, 10),
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        let claimed: Vec<Uuid> = a.iter().chain(&b).map(|d| d.id).collect();
        assert_eq!(
            claimed,
            vec![flatten],
            "the stop with flatten, to one runner"
        );
        assert_eq!(claimed.len(), 1);
        let holder = if a.is_empty() { "runner-b" } else { "runner-a" };
        assert_eq!(
            s.get_deployment(flatten)
                .await
                .unwrap()
                .lease_owner
                .as_deref(),
            Some(holder)
        );
        assert!(
            s.claim_flattens("runner-c", at(3), lease, 10)
                .await
                .unwrap()
                .is_empty(),
            "leased"
        );
        assert!(
            s.claim_due_deployments("runner-c", at(100), lease, 10)
                .await
                .unwrap()
                .iter()
                .all(|d| d.id == active),
            "never a paused or stopped one, leases expired or not"
        );

        // A failed attempt: counted, retried not before its time, by whichever runner.
        assert!(matches!(
            s.retry_flatten(flatten, "runner-c", "x", at(10)).await,
            Err(DbError::NotFound { .. })
        ));
        assert_eq!(
            s.retry_flatten(flatten, holder, "exchange unreachable", at(10))
                .await
                .unwrap(),
            1
        );
        let state = s.flatten_state(flatten).await.unwrap().unwrap();
        assert_eq!(
            (state.attempts, state.retry_at, state.last_error.as_deref()),
            (1, Some(at(10)), Some("exchange unreachable"))
        );
        let d = s.get_deployment(flatten).await.unwrap();
        assert_eq!((d.lease_owner, d.lease_expires_at), (None, None));
        assert!(
            s.claim_flattens("runner-c", at(9), lease, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            s.claim_flattens("runner-c", at(10), lease, 10)
                .await
                .unwrap()
                .iter()
                .map(|d| d.id)
                .collect::<Vec<_>>(),
            vec![flatten]
        );
        assert!(matches!(
            s.finish_flatten(flatten, holder, at(11)).await,
            Err(DbError::NotFound { .. })
        ));
        s.finish_flatten(flatten, "runner-c", at(11)).await.unwrap();
        let state = s.flatten_state(flatten).await.unwrap().unwrap();
        assert_eq!(
            (state.done_at, state.last_error, state.retry_at),
            (Some(at(11)), None, None)
        );
        assert!(
            s.claim_flattens("runner-d", at(200), lease, 10)
                .await
                .unwrap()
                .is_empty(),
            "done: never claimed again"
        );
        assert!(matches!(
            s.claim_flattens("x", at(0), chrono::Duration::zero(), 1)
                .await,
            Err(DbError::Invalid { .. })
        ));
    }

    /// A deployment stopped while its tick runs is flattened only after that tick released it.
    pub(crate) async fn a_flatten_waits_for_the_tick_in_flight<S: Storage + RawSql>(s: &S) {
        let lease = chrono::Duration::minutes(5);
        let id = seed(s).await.unwrap().deployment.id;
        s.set_next_tick_at(id, Some(at(0))).await.unwrap();
        let ticking = s
            .claim_due_deployments("ticker", at(1), lease, 1)
            .await
            .unwrap();
        assert_eq!(ticking.len(), 1);
        control(s, id, ControlAction::Stop, true, at(2))
            .await
            .unwrap();
        assert!(
            s.claim_flattens("flattener", at(3), lease, 1)
                .await
                .unwrap()
                .is_empty(),
            "the tick holds the lease"
        );
        s.release_deployment(id, "ticker", Some(at(60)))
            .await
            .unwrap();
        assert_eq!(
            s.claim_flattens("flattener", at(4), lease, 1)
                .await
                .unwrap()
                .len(),
            1
        );
    }
}

crate::common::on_every_backend!(
    controls;
    pause_resume_and_stop_move_the_status_with_their_audit_rows,
    a_stop_with_flatten_is_recorded_until_a_runner_does_it,
    refused_controls_name_the_status_and_write_nothing,
    the_database_keeps_a_stopped_deployment_stopped,
    claims_never_hand_out_a_paused_or_stopped_deployment,
    a_flatten_waits_for_the_tick_in_flight,
);

/// Row-level security (PostgreSQL): a user pauses, resumes and stops their own deployments
/// (the audit row naming them) and reads their trail; another user's deployment is not found,
/// its trail is empty, and no user writes a runner's columns or forges who asked.
#[tokio::test]
async fn a_user_controls_only_their_own_deployments() {
    use db::test_support::{at, seed};
    use db::{
        ControlAction, ControlRequest, ControlStore, DbError, DeploymentStatus, RegistryStore,
    };
    use uuid::Uuid;

    let h = crate::common::postgres().await;
    let mine = seed(&h.store).await.unwrap();
    let theirs = seed(&h.store).await.unwrap();
    let me = h.store.as_user(mine.user.id);
    let req = |deployment: Uuid, action, by: Uuid| ControlRequest {
        id: Uuid::new_v4(),
        deployment_id: deployment,
        action,
        flatten: false,
        requested_by: by.to_string(),
        reason: Some("as the user".into()),
        at: at(1),
    };

    let paused = me
        .control_deployment(&req(mine.deployment.id, ControlAction::Pause, mine.user.id))
        .await
        .unwrap();
    assert_eq!(paused.to_status, DeploymentStatus::Paused);
    assert_eq!(
        me.deployment_controls(mine.deployment.id, 10)
            .await
            .unwrap(),
        vec![paused]
    );

    // Another user's deployment: not found, nothing changed, its trail not readable.
    match me
        .control_deployment(&req(
            theirs.deployment.id,
            ControlAction::Pause,
            mine.user.id,
        ))
        .await
    {
        Err(DbError::NotFound { .. }) => {}
        other => panic!("pausing another user's deployment: {other:?}"),
    }
    assert_eq!(
        h.store
            .get_deployment(theirs.deployment.id)
            .await
            .unwrap()
            .status,
        DeploymentStatus::Active
    );
    h.store
        .control_deployment(&ControlRequest {
            requested_by: "operator:bob".into(),
            ..req(theirs.deployment.id, ControlAction::Pause, theirs.user.id)
        })
        .await
        .unwrap();
    assert!(
        me.deployment_controls(theirs.deployment.id, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        me.flatten_state(theirs.deployment.id).await,
        Err(DbError::NotFound { .. })
    ));

    // Who asked is the user: a row naming someone else is refused, and the status with it.
    match me
        .control_deployment(&req(
            mine.deployment.id,
            ControlAction::Resume,
            theirs.user.id,
        ))
        .await
    {
        Err(DbError::Backend { .. } | DbError::Constraint { .. }) => {}
        other => panic!("a forged requester: {other:?}"),
    }
    assert_eq!(
        h.store
            .get_deployment(mine.deployment.id)
            .await
            .unwrap()
            .status,
        DeploymentStatus::Paused
    );

    // A stop with flatten as the user; the runner's columns are not the user's to write.
    let stop = ControlRequest {
        flatten: true,
        ..req(mine.deployment.id, ControlAction::Stop, mine.user.id)
    };
    me.control_deployment(&stop).await.unwrap();
    let mut tx = me.begin().await.unwrap();
    for sql in [
        "UPDATE deployments SET flattened_at = now()",
        "UPDATE deployments SET lease_owner = 'me'",
        "UPDATE deployment_controls SET reason = 'rewritten'",
    ] {
        let e = sqlx::query(sql)
            .execute(&mut *tx)
            .await
            .expect_err("not the user's to write");
        match e {
            sqlx::Error::Database(e) => assert_eq!(e.code().as_deref(), Some("42501"), "{sql}"),
            other => panic!("{sql}: {other}"),
        }
        tx.rollback().await.unwrap();
        tx = me.begin().await.unwrap();
    }
    drop(tx);
    assert!(
        h.store
            .flatten_state(mine.deployment.id)
            .await
            .unwrap()
            .is_some_and(|f| f.done_at.is_none())
    );
}
