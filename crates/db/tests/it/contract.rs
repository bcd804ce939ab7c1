//! One contract suite, run against both backends: every case below is a generic async fn over
//! `S: Storage + RawSql`, and `contract!` generates a `sqlite::<case>`, a `postgres::<case>` and
//! a `sqlite_via_store_enum::<case>` (through the run-time `db::Store`) test for each. PostgreSQL tests need a server (see `common::postgres`): they fail, never skip,
//! when there is none.

mod cases {
    use std::collections::BTreeSet;

    use db::test_support::{
        Fixture, at, lint, sample_closed_trade, sample_fill, sample_note, sample_open_trade,
        sample_skill_version, sample_snapshot, seed, tick_record,
    };
    use db::{
        ConstraintKind, ControlAction, DbError, DeploymentStatus, FactEdit, FillTradeLink, Forget,
        NewFact, NewsRecord, NoteScope, RecordOutcome, ReflectionRun, RunOutcome, SentimentSource,
        Storage, TickAttempt, TickRecord,
    };
    use rust_decimal::Decimal;
    use rust_decimal_macros::dec;
    use types::{
        ArchiveReason, CloseKind, EventKind, FactChangeOp, FactConfidence, FactSource, MarketEvent,
        NoteStatus, OrderSide, Side, TradeRecord, UserFact,
    };
    use uuid::Uuid;

    use crate::common::RawSql;

    fn tick(fx: &Fixture, minutes: i64) -> TickRecord {
        tick_record(sample_snapshot(fx.deployment.id, at(minutes)))
    }

    async fn count_rows<S: RawSql>(s: &S, table: &str, deployment: Uuid) -> i64 {
        s.count(&format!(
            "SELECT COUNT(*) FROM {table} WHERE CAST(deployment_id AS TEXT) = '{deployment}'"
        ))
        .await
    }

    fn assert_bound(err: DbError, field: &str, actual: usize) {
        match err {
            DbError::Bound {
                field: f,
                actual: a,
                ..
            } => {
                assert_eq!(
                    (f, a),
                    (field, actual),
                    "bound error names the field and length"
                )
            }
            other => panic!("expected a Bound error on {field}, got {other:?}"),
        }
    }

    pub(super) async fn registry_round_trip<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        assert_eq!(s.get_skill(fx.skill.id).await.unwrap(), fx.skill);
        assert_eq!(
            s.get_skill_version(fx.skill.id, 1).await.unwrap(),
            fx.version
        );

        let v2 = sample_skill_version(fx.skill.id, 2);
        s.add_skill_version(&v2).await.unwrap();
        assert_eq!(s.latest_skill_version(fx.skill.id).await.unwrap(), v2);
        // Versions are immutable: adding v2 again is a unique violation.
        let err = s.add_skill_version(&v2).await.unwrap_err();
        assert!(err.is_unique_violation(), "{err}");
        assert!(matches!(
            s.add_skill_version(&sample_skill_version(fx.skill.id, 0))
                .await,
            Err(DbError::Invalid { .. })
        ));

        assert_eq!(
            s.get_deployment(fx.deployment.id).await.unwrap(),
            fx.deployment
        );
        crate::controls::cases::control(s, fx.deployment.id, ControlAction::Pause, false, at(4))
            .await
            .unwrap();
        s.set_next_tick_at(fx.deployment.id, Some(at(5)))
            .await
            .unwrap();
        let d = s.get_deployment(fx.deployment.id).await.unwrap();
        assert_eq!(
            (d.status, d.next_tick_at),
            (DeploymentStatus::Paused, Some(at(5)))
        );
        let paused = s
            .list_deployments(Some(DeploymentStatus::Paused))
            .await
            .unwrap();
        assert!(paused.iter().any(|x| x.id == d.id));
        let active = s
            .list_deployments(Some(DeploymentStatus::Active))
            .await
            .unwrap();
        assert!(active.iter().all(|x| x.id != d.id));
        assert!(
            s.list_deployments(None)
                .await
                .unwrap()
                .iter()
                .any(|x| x.id == d.id)
        );

        let own = s.user_deployments(fx.user.id).await.unwrap();
        assert_eq!(own.iter().map(|x| x.id).collect::<Vec<_>>(), vec![d.id]);
        assert!(s.user_deployments(Uuid::new_v4()).await.unwrap().is_empty());

        let missing = Uuid::new_v4();
        match s.get_deployment(missing).await {
            Err(DbError::NotFound { entity, id }) => {
                assert_eq!((entity, id), ("deployment", missing.to_string()))
            }
            other => panic!("expected NotFound, got {other:?}"),
        }
        assert!(matches!(
            s.get_skill(missing).await,
            Err(DbError::NotFound { .. })
        ));
        assert!(matches!(
            crate::controls::cases::control(s, missing, ControlAction::Stop, false, at(4)).await,
            Err(DbError::NotFound { .. })
        ));
        let mut bad = fx.skill.clone();
        bad.id = Uuid::new_v4();
        bad.name = String::new();
        assert_bound(s.create_skill(&bad).await.unwrap_err(), "skill name", 0);
        // A deployment of a skill version that does not exist: the foreign key refuses it.
        let mut orphan = fx.deployment.clone();
        orphan.id = Uuid::new_v4();
        orphan.skill_version = 9;
        match s.create_deployment(&orphan).await {
            Err(DbError::Constraint {
                kind: ConstraintKind::ForeignKey,
                ..
            }) => {}
            other => panic!("expected a foreign key violation, got {other:?}"),
        }
    }

    pub(super) async fn leases_hand_each_due_deployment_to_one_runner<S: Storage + RawSql>(s: &S) {
        let one = seed(s).await.unwrap().deployment.id;
        let two = seed(s).await.unwrap().deployment.id;
        let later = seed(s).await.unwrap().deployment.id;
        s.set_next_tick_at(one, Some(at(0))).await.unwrap();
        s.set_next_tick_at(two, Some(at(1))).await.unwrap();
        s.set_next_tick_at(later, Some(at(60))).await.unwrap();
        let lease = chrono::Duration::minutes(5);

        // Two runners claim at once: each due deployment goes to exactly one of them.
        let (a, b) = tokio::join!(
            s.claim_due_deployments("runner-a", at(2), lease, 10),
            s.claim_due_deployments("runner-b", at(2), lease, 10),
        );
        let mut claimed: Vec<Uuid> = a
            .unwrap()
            .into_iter()
            .chain(b.unwrap())
            .map(|d| d.id)
            .collect();
        claimed.sort();
        let mut due = vec![one, two];
        due.sort();
        assert_eq!(
            claimed, due,
            "both due deployments, once each; the later one is not due"
        );

        // Leased: nobody else gets them until the lease expires at minute 7.
        assert!(
            s.claim_due_deployments("runner-c", at(6), lease, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let d = s.get_deployment(one).await.unwrap();
        let holder = d.lease_owner.clone().unwrap();
        assert_eq!(d.lease_expires_at, Some(at(7)));
        assert!(matches!(
            s.release_deployment(one, "runner-c", Some(at(10))).await,
            Err(DbError::NotFound { .. })
        ));
        s.release_deployment(one, &holder, Some(at(10)))
            .await
            .unwrap();
        let d = s.get_deployment(one).await.unwrap();
        assert_eq!(
            (d.lease_owner, d.lease_expires_at, d.next_tick_at),
            (None, None, Some(at(10)))
        );

        // At minute 7 the other lease has expired: runner-c takes it over (most overdue first).
        let taken = s
            .claim_due_deployments("runner-c", at(7), lease, 1)
            .await
            .unwrap();
        assert_eq!(taken.iter().map(|d| d.id).collect::<Vec<_>>(), vec![two]);
        assert_eq!(taken[0].lease_owner.as_deref(), Some("runner-c"));
        // At minute 100 every lease has expired; paused deployments are never claimed.
        crate::controls::cases::control(s, one, ControlAction::Pause, false, at(99))
            .await
            .unwrap();
        let ids: Vec<Uuid> = s
            .claim_due_deployments("runner-d", at(100), lease, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(ids, vec![two, later], "most overdue first; `one` is paused");
        assert!(matches!(
            s.claim_due_deployments("x", at(0), chrono::Duration::zero(), 1)
                .await,
            Err(DbError::Invalid { .. })
        ));
    }

    /// Eight runners claim at once, in small bites, from 40 due deployments: no claim fails
    /// (PostgreSQL locks `FOR UPDATE SKIP LOCKED`, so claimers never wait on each other and
    /// cannot deadlock) and every deployment goes to exactly one runner.
    pub(super) async fn concurrent_claimers_split_the_due_deployments<S: Storage + RawSql>(s: &S) {
        let mut due = Vec::new();
        for i in 0..40 {
            let id = seed(s).await.unwrap().deployment.id;
            s.set_next_tick_at(id, Some(at(i % 3))).await.unwrap();
            due.push(id);
        }
        let lease = chrono::Duration::minutes(5);
        let mut claimed: Vec<Uuid> = Vec::new();
        // Rounds of eight concurrent claims of 3 until nothing is left.
        for _ in 0..10 {
            let claim = |r: usize| async move {
                s.claim_due_deployments(&format!("runner-{r}"), at(5), lease, 3)
                    .await
            };
            let (c0, c1, c2, c3, c4, c5, c6, c7) = tokio::join!(
                claim(0),
                claim(1),
                claim(2),
                claim(3),
                claim(4),
                claim(5),
                claim(6),
                claim(7)
            );
            let results = [c0, c1, c2, c3, c4, c5, c6, c7];
            let mut round = 0;
            for r in results {
                let got = r.expect("a concurrent claim never fails");
                assert!(got.len() <= 3, "a claim of 3 returned {}", got.len());
                round += got.len();
                claimed.extend(got.into_iter().map(|d| d.id));
            }
            if round == 0 {
                break;
            }
        }
        claimed.sort();
        due.sort();
        assert_eq!(claimed, due, "each due deployment exactly once");
    }

    /// A lease is extended only by its holder; `claimable_count` counts what a claim could get;
    /// `mark_attempt` returns the attempt it replaces and leaves the runner state alone.
    pub(super) async fn leases_extend_count_and_mark_attempts<S: Storage + RawSql>(s: &S) {
        let one = seed(s).await.unwrap().deployment.id;
        let two = seed(s).await.unwrap().deployment.id;
        s.set_next_tick_at(one, Some(at(0))).await.unwrap();
        s.set_next_tick_at(two, Some(at(60))).await.unwrap();
        let lease = chrono::Duration::minutes(5);
        assert_eq!(s.claimable_count(at(1)).await.unwrap(), 1);
        assert_eq!(s.claimable_count(at(60)).await.unwrap(), 2);
        let claimed = s
            .claim_due_deployments("runner-a", at(1), lease, 10)
            .await
            .unwrap();
        assert_eq!(claimed.iter().map(|d| d.id).collect::<Vec<_>>(), vec![one]);
        assert_eq!(s.claimable_count(at(1)).await.unwrap(), 0);

        assert!(!s.extend_lease(one, "runner-b", at(20)).await.unwrap());
        assert!(!s.extend_lease(two, "runner-a", at(20)).await.unwrap());
        assert!(s.extend_lease(one, "runner-a", at(20)).await.unwrap());
        assert_eq!(
            s.get_deployment(one).await.unwrap().lease_expires_at,
            Some(at(20))
        );
        // Past the old expiry the extended lease still holds.
        assert_eq!(s.claimable_count(at(10)).await.unwrap(), 0);
        assert!(
            s.claim_due_deployments("runner-b", at(10), lease, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(s.claimable_count(at(20)).await.unwrap(), 1);

        assert_eq!(s.mark_attempt(one, "runner-a", at(1)).await.unwrap(), None);
        assert_eq!(
            s.mark_attempt(one, "runner-b", at(1)).await.unwrap(),
            Some(TickAttempt {
                owner: "runner-a".into(),
                tick_at: at(1)
            })
        );
        assert_eq!(
            s.mark_attempt(one, "runner-b", at(2)).await.unwrap(),
            Some(TickAttempt {
                owner: "runner-b".into(),
                tick_at: at(1)
            })
        );
        assert_eq!(s.mark_attempt(two, "runner-a", at(2)).await.unwrap(), None);
        // An attempt is not a recorded tick: no runner state.
        assert_eq!(s.runner_state(one).await.unwrap(), None);
        assert!(matches!(
            s.mark_attempt(Uuid::new_v4(), "runner-a", at(1)).await,
            Err(DbError::Constraint { .. })
        ));
    }

    /// `start_ticks` reads each claimed deployment's status and runner state and marks the
    /// attempts of the active ones not yet ticked at their `tick_at`, in one call: the reads
    /// are the rows before the marks (the state `runner_state` returns, the attempt
    /// `mark_attempt` would return), a paused deployment or one whose tick is recorded is not
    /// marked, an unknown one has no result, and the marks are those `mark_attempt` makes.
    pub(super) async fn start_ticks_reads_and_marks_the_claimed_set<S: Storage + RawSql>(s: &S) {
        let fresh = seed(s).await.unwrap().deployment.id;
        let taken = seed(s).await.unwrap().deployment.id;
        let paused = seed(s).await.unwrap().deployment.id;
        let done_fx = seed(s).await.unwrap();
        let done = done_fx.deployment.id;
        let state = serde_json::json!({"n": 1});
        let mut t = tick(&done_fx, 5);
        t.runner_state = Some(state.clone());
        s.record_tick(&t).await.unwrap();
        assert_eq!(
            s.mark_attempt(taken, "runner-a", at(5)).await.unwrap(),
            None
        );
        s.exec(&format!(
            "UPDATE deployments SET status = 'paused' WHERE CAST(id AS TEXT) = '{paused}'"
        ))
        .await
        .unwrap();
        let unknown = Uuid::new_v4();
        let start = |deployment_id| db::TickStart {
            deployment_id,
            tick_at: at(5),
        };
        assert!(s.start_ticks("runner-b", &[]).await.unwrap().is_empty());

        let started = s
            .start_ticks(
                "runner-b",
                &[
                    start(done),
                    start(unknown),
                    start(paused),
                    start(taken),
                    start(fresh),
                ],
            )
            .await
            .unwrap();
        let row = |id, status, state, marked, previous| db::StartedTick {
            deployment_id: id,
            tick_at: at(5),
            status,
            state,
            marked,
            previous,
        };
        assert_eq!(
            started,
            vec![
                row(
                    done,
                    DeploymentStatus::Active,
                    s.runner_state(done).await.unwrap(),
                    false,
                    None
                ),
                row(paused, DeploymentStatus::Paused, None, false, None),
                row(
                    taken,
                    DeploymentStatus::Active,
                    None,
                    true,
                    Some(TickAttempt {
                        owner: "runner-a".into(),
                        tick_at: at(5)
                    })
                ),
                row(fresh, DeploymentStatus::Active, None, true, None),
            ]
        );
        assert_eq!(
            started[0].state.as_ref().map(|st| (st.tick_at, &st.state)),
            Some((at(5), &state))
        );
        // The marks are `mark_attempt`'s; the unmarked keep theirs (none).
        for id in [taken, fresh] {
            assert_eq!(
                s.mark_attempt(id, "runner-c", at(10)).await.unwrap(),
                Some(TickAttempt {
                    owner: "runner-b".into(),
                    tick_at: at(5)
                })
            );
        }
        assert_eq!(
            s.mark_attempt(paused, "runner-c", at(10)).await.unwrap(),
            None
        );
        assert_eq!(
            s.mark_attempt(done, "runner-c", at(10)).await.unwrap(),
            None
        );
        // A later tick of the recorded deployment is marked.
        let later = s
            .start_ticks(
                "runner-b",
                &[db::TickStart {
                    deployment_id: done,
                    tick_at: at(15),
                }],
            )
            .await
            .unwrap();
        assert!(later[0].marked);
        assert_eq!(
            later[0].previous,
            Some(TickAttempt {
                owner: "runner-c".into(),
                tick_at: at(10)
            })
        );
        assert!(matches!(
            s.start_ticks("runner-b", &[start(fresh), start(fresh)])
                .await,
            Err(DbError::Invalid { .. })
        ));
        let many: Vec<_> = (0..1001).map(|_| start(Uuid::new_v4())).collect();
        assert!(matches!(
            s.start_ticks("runner-b", &many).await,
            Err(DbError::Invalid { .. })
        ));
    }

    /// A deployment's reflection is claimed by one runner at a time: a live claim keeps the
    /// others out, its holder may claim again, an expired one is taken over, a release by its
    /// holder frees it (by anyone else, nothing). The tick's runner state is left alone.
    pub(super) async fn reflections_are_leased_one_runner_at_a_time<S: Storage + RawSql>(s: &S) {
        let d = seed(s).await.unwrap().deployment.id;
        assert!(
            s.claim_reflection(d, "runner-a", at(0), at(15))
                .await
                .unwrap()
        );
        assert!(
            !s.claim_reflection(d, "runner-b", at(5), at(20))
                .await
                .unwrap()
        );
        assert!(
            s.claim_reflection(d, "runner-a", at(5), at(20))
                .await
                .unwrap()
        );
        // runner-b cannot free runner-a's claim.
        s.release_reflection(d, "runner-b").await.unwrap();
        assert!(
            !s.claim_reflection(d, "runner-b", at(19), at(34))
                .await
                .unwrap()
        );
        // Expired (at its expiry time): taken over.
        assert!(
            s.claim_reflection(d, "runner-b", at(20), at(35))
                .await
                .unwrap()
        );
        assert!(
            !s.claim_reflection(d, "runner-a", at(21), at(36))
                .await
                .unwrap()
        );
        s.release_reflection(d, "runner-b").await.unwrap();
        assert!(
            s.claim_reflection(d, "runner-c", at(22), at(37))
                .await
                .unwrap()
        );
        assert_eq!(
            s.runner_state(d).await.unwrap(),
            None,
            "a claim is not a tick"
        );
        assert!(matches!(
            s.claim_reflection(Uuid::new_v4(), "runner-a", at(0), at(15))
                .await,
            Err(DbError::Constraint { .. })
        ));
    }

    pub(super) async fn record_tick_writes_snapshot_fills_trades_and_links<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let mut t = tick(&fx, 0);
        let mut fill = sample_fill("f-1", dec!(0.01), dec!(65200), at(0));
        fill.snapshot_id = Some(t.snapshot.id);
        let mut trade = sample_open_trade(&fx, at(0));
        trade.entry_snapshot_id = Some(t.snapshot.id);
        t.fills.push(fill.clone());
        t.trades.push(trade.clone());
        t.links.push(FillTradeLink {
            broker_fill_id: "f-1".into(),
            trade_id: trade.id,
            flip_trade_id: None,
        });
        // 10,000 − 0.2934 fee = 9,999.7066
        t.equity_usd = Some(dec!(9999.7066));

        let out = s.record_tick(&t).await.unwrap();
        assert_eq!(
            out,
            RecordOutcome::Recorded {
                snapshot_id: t.snapshot.id
            }
        );
        assert_eq!(s.get_snapshot(t.snapshot.id).await.unwrap(), t.snapshot);
        assert_eq!(
            s.open_trades(fx.deployment.id).await.unwrap(),
            vec![trade.clone()]
        );
        assert_eq!(s.get_trade(trade.id).await.unwrap(), trade);
        let fills = s.list_fills(fx.deployment.id, None).await.unwrap();
        assert_eq!(fills.len(), 1);
        assert_eq!(fills[0].fill, fill);
        assert_eq!(fills[0].trade_id, Some(trade.id));
        assert_eq!(
            s.applied_fill_ids(fx.deployment.id).await.unwrap(),
            BTreeSet::from(["f-1".to_owned()])
        );
        assert_eq!(
            s.get_deployment(fx.deployment.id).await.unwrap().equity_usd,
            dec!(9999.7066)
        );
        assert!(
            s.list_fills(fx.deployment.id, Some(at(1)))
                .await
                .unwrap()
                .is_empty()
        );
    }

    pub(super) async fn record_tick_replay_is_a_no_op<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let mut t = tick(&fx, 0);
        t.fills
            .push(sample_fill("f-1", dec!(0.01), dec!(65200), at(0)));
        let trade = sample_open_trade(&fx, at(0));
        t.trades.push(trade.clone());
        let first = s.record_tick(&t).await.unwrap();

        // The same tick again: no error, no duplicate.
        let again = s.record_tick(&t).await.unwrap();
        assert_eq!(
            again,
            RecordOutcome::AlreadyRecorded {
                snapshot_id: t.snapshot.id
            }
        );
        // A retried tick that generated a fresh snapshot id: the (deployment, tick_at) key wins.
        let mut retried = t.clone();
        retried.snapshot.id = Uuid::new_v4();
        retried
            .fills
            .push(sample_fill("f-2", dec!(0.01), dec!(65300), at(0)));
        assert_eq!(
            s.record_tick(&retried).await.unwrap(),
            RecordOutcome::AlreadyRecorded {
                snapshot_id: t.snapshot.id
            }
        );
        assert_eq!(
            first,
            RecordOutcome::Recorded {
                snapshot_id: t.snapshot.id
            }
        );
        assert_eq!(
            count_rows(s, "decision_snapshots", fx.deployment.id).await,
            1
        );
        assert_eq!(count_rows(s, "fills", fx.deployment.id).await, 1);
        assert_eq!(count_rows(s, "trade_history", fx.deployment.id).await, 1);

        // The broker reports f-1 again on the next tick: it is skipped, never duplicated.
        let mut next = tick(&fx, 1);
        next.fills
            .push(sample_fill("f-1", dec!(0.01), dec!(65200), at(0)));
        assert!(matches!(
            s.record_tick(&next).await.unwrap(),
            RecordOutcome::Recorded { .. }
        ));
        assert_eq!(count_rows(s, "fills", fx.deployment.id).await, 1);
        assert_eq!(
            s.open_trades(fx.deployment.id).await.unwrap(),
            vec![trade.clone()]
        );
        assert_eq!(s.all_trades(fx.deployment.id).await.unwrap(), vec![trade]);
    }

    pub(super) async fn runner_state_commits_with_its_tick_and_never_moves_back<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        let state_of = |n: i64| serde_json::json!({"broker": {"cash": n.to_string()}, "n": n});
        assert_eq!(s.runner_state(d).await.unwrap(), None);

        // A runner marked its attempt before the first tick (attempt columns only): no state yet.
        s.exec(&format!(
            "INSERT INTO live_runner_state (deployment_id, attempt_owner, attempt_tick_at) \
             VALUES ('{d}', 'runner-a', '{}')",
            db::time_text(at(0))
        ))
        .await
        .unwrap();
        assert_eq!(s.runner_state(d).await.unwrap(), None);

        // Written with the tick, at the snapshot's time.
        let mut t0 = tick(&fx, 0);
        t0.fills
            .push(sample_fill("f-1", dec!(0.01), dec!(65200), at(0)));
        t0.runner_state = Some(state_of(0));
        assert!(matches!(
            s.record_tick(&t0).await.unwrap(),
            RecordOutcome::Recorded { .. }
        ));
        let stored = s.runner_state(d).await.unwrap().expect("state stored");
        assert_eq!(
            (stored.deployment_id, stored.tick_at, &stored.state),
            (d, at(0), &state_of(0))
        );
        // The attempt columns are the runner's own: the tick leaves them alone.
        assert_eq!(
            s.count(&format!(
                "SELECT COUNT(*) FROM live_runner_state WHERE attempt_owner = 'runner-a' \
                 AND CAST(deployment_id AS TEXT) = '{d}'"
            ))
            .await,
            1
        );

        // A re-run of the recorded tick (another state, e.g. a non-deterministic model): the
        // store answers AlreadyRecorded and the committed state stays.
        let mut rerun = tick(&fx, 0);
        rerun.runner_state = Some(state_of(99));
        assert!(matches!(
            s.record_tick(&rerun).await.unwrap(),
            RecordOutcome::AlreadyRecorded { .. }
        ));
        assert_eq!(
            s.runner_state(d).await.unwrap().map(|r| r.state),
            Some(state_of(0))
        );

        // A tick without a state (a backtest) leaves the stored one alone.
        assert!(matches!(
            s.record_tick(&tick(&fx, 60)).await.unwrap(),
            RecordOutcome::Recorded { .. }
        ));
        assert_eq!(
            s.runner_state(d).await.unwrap().map(|r| r.tick_at),
            Some(at(0))
        );

        let mut t120 = tick(&fx, 120);
        t120.runner_state = Some(state_of(120));
        s.record_tick(&t120).await.unwrap();
        assert_eq!(
            s.runner_state(d)
                .await
                .unwrap()
                .map(|r| (r.tick_at, r.state)),
            Some((at(120), state_of(120)))
        );

        // A runner that lost the deployment comes back with an older tick: refused whole, the
        // newer state kept, nothing of the stale tick written.
        let snapshots = count_rows(s, "decision_snapshots", d).await;
        let mut stale = tick(&fx, 30);
        stale
            .fills
            .push(sample_fill("f-stale", dec!(0.01), dec!(65000), at(30)));
        stale.runner_state = Some(state_of(30));
        match s.record_tick(&stale).await {
            Err(DbError::StaleState {
                deployment_id,
                tick_at,
                stored_tick_at,
            }) => assert_eq!(
                (deployment_id, tick_at, stored_tick_at),
                (d, at(30), at(120))
            ),
            other => panic!("expected a stale-state refusal, got {other:?}"),
        }
        // As old as the stored one (a fresh snapshot id at a time whose snapshot is missing):
        // refused too.
        s.exec(&format!(
            "DELETE FROM decision_snapshots WHERE CAST(deployment_id AS TEXT) = '{d}' \
             AND tick_at = '{}'",
            db::time_text(at(120))
        ))
        .await
        .unwrap();
        let mut same = tick(&fx, 120);
        same.runner_state = Some(state_of(121));
        assert!(matches!(
            s.record_tick(&same).await,
            Err(DbError::StaleState { .. })
        ));
        assert_eq!(count_rows(s, "decision_snapshots", d).await, snapshots - 1);
        assert_eq!(count_rows(s, "fills", d).await, 1);
        assert_eq!(
            s.runner_state(d)
                .await
                .unwrap()
                .map(|r| (r.tick_at, r.state)),
            Some((at(120), state_of(120)))
        );

        // A batch moves it to its last tick's state; a stale tick refuses the whole batch.
        let batch: Vec<TickRecord> = [180, 240]
            .into_iter()
            .map(|m| TickRecord {
                runner_state: Some(state_of(m)),
                ..tick(&fx, m)
            })
            .collect();
        s.record_ticks(&db::PlannedTicks::new(batch), &[])
            .await
            .unwrap();
        assert_eq!(
            s.runner_state(d)
                .await
                .unwrap()
                .map(|r| (r.tick_at, r.state)),
            Some((at(240), state_of(240)))
        );
        let mut stale_batch = vec![tick(&fx, 300), tick(&fx, 200)];
        stale_batch[1].runner_state = Some(state_of(200));
        assert!(matches!(
            s.record_ticks(&db::PlannedTicks::new(stale_batch), &[])
                .await,
            Err(DbError::StaleState { .. })
        ));
        assert_eq!(
            s.runner_state(d).await.unwrap().map(|r| r.tick_at),
            Some(at(240))
        );
        assert_eq!(
            s.count(&format!(
                "SELECT COUNT(*) FROM decision_snapshots WHERE CAST(deployment_id AS TEXT) = '{d}' \
                 AND tick_at = '{}'",
                db::time_text(at(300))
            ))
            .await,
            0,
            "nothing of the refused batch"
        );

        // The database itself refuses a time without a state.
        let refused = s
            .exec(&format!(
                "UPDATE live_runner_state SET state = NULL WHERE CAST(deployment_id AS TEXT) = '{d}'"
            ))
            .await;
        assert!(
            matches!(&refused, Err(e) if e.to_string().contains("live_runner_state_complete")),
            "{refused:?}"
        );
    }

    pub(super) async fn record_tick_is_all_or_nothing<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        // A link to a fill that is not stored: the whole tick is refused.
        let mut t = tick(&fx, 0);
        t.fills
            .push(sample_fill("f-1", dec!(0.01), dec!(65200), at(0)));
        let trade = sample_open_trade(&fx, at(0));
        t.trades.push(trade.clone());
        t.links.push(FillTradeLink {
            broker_fill_id: "nope".into(),
            trade_id: trade.id,
            flip_trade_id: None,
        });
        assert!(matches!(
            s.record_tick(&t).await,
            Err(DbError::Invalid {
                what: "fill link",
                ..
            })
        ));
        assert!(matches!(
            s.get_snapshot(t.snapshot.id).await,
            Err(DbError::NotFound { .. })
        ));
        assert_eq!(count_rows(s, "fills", fx.deployment.id).await, 0);
        assert_eq!(count_rows(s, "trade_history", fx.deployment.id).await, 0);

        // Two open rows for one symbol: the database refuses, nothing is written.
        let mut t2 = tick(&fx, 1);
        t2.trades.push(sample_open_trade(&fx, at(1)));
        t2.trades.push(sample_open_trade(&fx, at(1)));
        let err = s.record_tick(&t2).await.unwrap_err();
        assert!(err.is_unique_violation(), "{err}");
        assert_eq!(
            count_rows(s, "decision_snapshots", fx.deployment.id).await,
            0
        );

        // A trade of another deployment is refused before the database sees it.
        let other = seed(s).await.unwrap();
        let mut t3 = tick(&fx, 2);
        t3.trades.push(sample_open_trade(&other, at(2)));
        assert!(matches!(
            s.record_tick(&t3).await,
            Err(DbError::Invalid {
                what: "tick record",
                ..
            })
        ));
    }

    pub(super) async fn record_ticks_is_one_all_or_nothing_batch<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        // Tick 0 alone first: the batch below replays it.
        let t0 = tick(&fx, 0);
        s.record_tick(&t0).await.unwrap();

        // A batch: tick 0 again, tick 1 opens a row, tick 2 closes it; equities 9,990 then 10,020.
        let mut t1 = tick(&fx, 1);
        let mut fill = sample_fill("f-1", dec!(0.01), dec!(65200), at(1));
        fill.snapshot_id = Some(t1.snapshot.id);
        let mut open = sample_open_trade(&fx, at(1));
        open.entry_snapshot_id = Some(t1.snapshot.id);
        t1.fills.push(fill);
        t1.trades.push(open.clone());
        t1.links.push(FillTradeLink {
            broker_fill_id: "f-1".into(),
            trade_id: open.id,
            flip_trade_id: None,
        });
        t1.equity_usd = Some(dec!(9990));
        let mut t2 = tick(&fx, 2);
        t2.equity_usd = Some(dec!(10020));
        let outcomes = s
            .record_ticks(
                &db::PlannedTicks::new(vec![t0.clone(), t1.clone(), t2.clone()]),
                &[],
            )
            .await
            .unwrap();
        assert_eq!(
            outcomes,
            vec![
                RecordOutcome::AlreadyRecorded {
                    snapshot_id: t0.snapshot.id
                },
                RecordOutcome::Recorded {
                    snapshot_id: t1.snapshot.id
                },
                RecordOutcome::Recorded {
                    snapshot_id: t2.snapshot.id
                },
            ]
        );
        assert_eq!(count_rows(s, "decision_snapshots", d).await, 3);
        assert_eq!(s.open_trades(d).await.unwrap(), vec![open.clone()]);
        let fills = s.list_fills(d, None).await.unwrap();
        assert_eq!(fills.len(), 1);
        assert_eq!(fills[0].trade_id, Some(open.id));
        // The last tick's equity, not the first one's.
        assert_eq!(s.get_deployment(d).await.unwrap().equity_usd, dec!(10020));

        // A batch whose second tick is refused writes nothing, not even its valid first tick.
        let t3 = tick(&fx, 3);
        let mut t4 = tick(&fx, 4);
        t4.links.push(FillTradeLink {
            broker_fill_id: "nope".into(),
            trade_id: open.id,
            flip_trade_id: None,
        });
        t4.equity_usd = Some(dec!(1));
        assert!(matches!(
            s.record_ticks(&db::PlannedTicks::new(vec![t3.clone(), t4]), &[])
                .await,
            Err(DbError::Invalid {
                what: "fill link",
                ..
            })
        ));
        assert!(matches!(
            s.get_snapshot(t3.snapshot.id).await,
            Err(DbError::NotFound { .. })
        ));
        assert_eq!(count_rows(s, "decision_snapshots", d).await, 3);
        assert_eq!(s.get_deployment(d).await.unwrap().equity_usd, dec!(10020));
        // An empty batch is a no-op.
        assert_eq!(
            s.record_ticks(&db::PlannedTicks::new(vec![]), &[])
                .await
                .unwrap(),
            vec![]
        );
    }

    /// A backtest's batch: its ticks, then the reflections that ran after them (a note, or none,
    /// and the run), in one transaction; a refused note writes nothing of the batch.
    pub(super) async fn record_ticks_with_reflections_is_one_batch<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        let run = |note_id: Option<Uuid>, started: i64| ReflectionRun {
            id: Uuid::new_v4(),
            skill_id: fx.skill.id,
            skill_version: fx.version.version,
            deployment_id: Some(d),
            started_at: at(started),
            finished_at: at(started),
            outcome: RunOutcome::Succeeded { note_id },
            model: "builtin/stats".into(),
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
        };
        let first = sample_note(&fx, at(1), "- first lesson");
        let second = sample_note(&fx, at(2), "- second lesson");
        let reflections = vec![
            (Some(first.clone()), run(Some(first.id), 1)),
            (None, run(None, 2)),
            (Some(second.clone()), run(Some(second.id), 2)),
        ];
        let outcomes = s
            .record_ticks(
                &db::PlannedTicks::new(vec![tick(&fx, 0), tick(&fx, 1), tick(&fx, 2)]),
                &reflections,
            )
            .await
            .unwrap();
        assert_eq!(outcomes.len(), 3);
        assert_eq!(count_rows(s, "decision_snapshots", d).await, 3);
        // As insert_note would have written them, in order: the second supersedes the first.
        let history = s.note_history(NoteScope::Deployment(d), 10).await.unwrap();
        let by_id = |id: Uuid| history.iter().find(|n| n.id == id).expect("stored note");
        assert_eq!(by_id(first.id).status, NoteStatus::Superseded);
        assert_eq!(by_id(first.id).superseded_by, Some(second.id));
        assert_eq!(by_id(second.id).status, NoteStatus::Active);
        let runs = s
            .reflection_runs(NoteScope::Deployment(d), 10)
            .await
            .unwrap();
        assert_eq!(runs.len(), 3);

        // A note the store refuses (its id is taken): nothing of the batch is written.
        let taken = sample_note(&fx, at(4), "- again");
        let taken = db::NewNote {
            id: first.id,
            ..taken
        };
        let err = s
            .record_ticks(
                &db::PlannedTicks::new(vec![tick(&fx, 3), tick(&fx, 4)]),
                &[(Some(taken), run(Some(first.id), 4))],
            )
            .await
            .expect_err("the note's id is taken");
        assert!(
            err.to_string().contains("inserting reflection note"),
            "{err}"
        );
        assert_eq!(count_rows(s, "decision_snapshots", d).await, 3);
        assert_eq!(
            s.reflection_runs(NoteScope::Deployment(d), 10)
                .await
                .unwrap()
                .len(),
            3
        );
        // A note out of its bounds is refused before anything is written.
        let empty = sample_note(&fx, at(5), "");
        assert!(matches!(
            s.record_ticks(
                &db::PlannedTicks::new(vec![tick(&fx, 5)]),
                &[(Some(empty), run(None, 5))],
            )
            .await,
            Err(DbError::Bound { .. })
        ));
        assert_eq!(count_rows(s, "decision_snapshots", d).await, 3);
    }

    /// A batch planned ahead ([`db::PlannedTicks`], as a backtest plans it on its tick's
    /// thread) stores the texts the same ticks recorded one by one store, its new lines as one
    /// block.
    pub(super) async fn a_planned_batch_stores_what_tick_by_tick_recording_stores<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        // Texts that repeat, slide and change from tick to tick, as a bar table does.
        let script = |fx: &Fixture| -> Vec<TickRecord> {
            (0..40)
                .map(|m| {
                    let mut t = tick(fx, m);
                    let rows: String = (m..m + 6)
                        .map(|r| format!("| {r} | 1.{r:04} |\n"))
                        .collect();
                    t.snapshot.context = format!("## Time\n{m}\n## Bars\n{rows}## Your turn");
                    if m % 7 == 0 {
                        t.snapshot.system_prompt = format!("HEADER\nLESSONS {m}\nFOOTER");
                    }
                    t
                })
                .collect()
        };
        let (a, b) = (seed(s).await.unwrap(), seed(s).await.unwrap());
        let (ticks_a, ticks_b) = (script(&a), script(&b));
        for t in &ticks_a {
            s.record_tick(t).await.unwrap();
        }
        let planned = db::PlannedTicks::new(ticks_b.clone());
        assert_eq!(planned.ticks(), ticks_b.as_slice());
        let outcomes = s.record_ticks(&planned, &[]).await.unwrap();
        assert!(outcomes.iter().zip(&ticks_b).all(|(o, t)| *o
            == RecordOutcome::Recorded {
                snapshot_id: t.snapshot.id
            }));
        let (da, db_) = (a.deployment.id, b.deployment.id);
        let blocks = |d: Uuid| {
            format!(
                "SELECT COUNT(*) FROM prompt_blocks WHERE scope_id = \
                 (SELECT id FROM prompt_scopes WHERE CAST(deployment_id AS TEXT) = '{d}')"
            )
        };
        assert_eq!(s.count(&blocks(db_)).await, 1, "one block for the batch");
        assert!(s.count(&blocks(da)).await > 1, "a block for each tick");
        let read_a = s.list_snapshots(da, 100).await.unwrap();
        let read_b = s.list_snapshots(db_, 100).await.unwrap();
        assert_eq!(read_b.len(), 40);
        for ((x, y), t) in read_a.iter().zip(&read_b).zip(ticks_b.iter().rev()) {
            assert_eq!(
                (&x.system_prompt, &x.context, &x.steps),
                (&y.system_prompt, &y.context, &y.steps)
            );
            assert_eq!(
                (&y.system_prompt, &y.context, &y.steps),
                (
                    &t.snapshot.system_prompt,
                    &t.snapshot.context,
                    &t.snapshot.steps
                )
            );
        }
        // Written again, the same batch is a replay: nothing is written twice.
        let replayed = s.record_ticks(&planned, &[]).await.unwrap();
        assert!(
            replayed
                .iter()
                .all(|o| matches!(o, RecordOutcome::AlreadyRecorded { .. }))
        );
        assert_eq!(count_rows(s, "decision_snapshots", db_).await, 40);
    }

    pub(super) async fn record_ticks_writes_what_tick_by_tick_recording_would<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        // The same five ticks of one position's life, recorded one by one for deployment a and
        // as one batch for deployment b: open at 0, excursions move at 1 and 2, a flip at 3
        // closes the long and opens a short, the short's excursion moves at 4.
        let script = |fx: &Fixture| {
            let long = sample_open_trade(fx, at(0));
            let mut ticks: Vec<TickRecord> = (0..5).map(|m| tick(fx, m)).collect();
            ticks[0].trades.push(long.clone());
            ticks[1].trades.push(TradeRecord {
                mfe_usd: dec!(1.00),
                mae_usd: dec!(-0.50),
                ..long.clone()
            });
            ticks[2].trades.push(TradeRecord {
                mfe_usd: dec!(2.00),
                mae_usd: dec!(-0.50),
                ..long.clone()
            });
            let closed = sample_closed_trade(&long, at(3));
            let short = TradeRecord {
                id: Uuid::new_v4(),
                side: Side::Short,
                entry_tick_at: at(3),
                ..sample_open_trade(fx, at(3))
            };
            // The opening row listed first: the store writes closing rows first anyway.
            ticks[3].trades.extend([short.clone(), closed.clone()]);
            let short_now = TradeRecord {
                mae_usd: dec!(-1.25),
                ..short.clone()
            };
            ticks[4].trades.push(short_now.clone());
            (ticks, closed, short_now)
        };
        let a = seed(s).await.unwrap();
        let b = seed(s).await.unwrap();
        let (ticks_a, closed_a, open_a) = script(&a);
        let (ticks_b, closed_b, open_b) = script(&b);
        for t in &ticks_a {
            s.record_tick(t).await.unwrap();
        }
        let outcomes = s
            .record_ticks(&db::PlannedTicks::new(ticks_b.to_vec()), &[])
            .await
            .unwrap();
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, RecordOutcome::Recorded { .. }))
        );
        for (fx, closed, open) in [(&a, &closed_a, &open_a), (&b, &closed_b, &open_b)] {
            let d = fx.deployment.id;
            assert_eq!(s.open_trades(d).await.unwrap(), vec![open.clone()]);
            assert_eq!(
                s.closed_trades(d, at(10), 10).await.unwrap(),
                vec![closed.clone()]
            );
            // Closed by the tick at minute 3, not by the batch's last tick.
            assert_eq!(
                s.count(&format!(
                    "SELECT COUNT(*) FROM trade_history WHERE CAST(id AS TEXT) = '{}' \
                     AND closed_at = '{}'",
                    closed.id,
                    db::time_text(at(3))
                ))
                .await,
                1
            );
            assert_eq!(count_rows(s, "trade_history", d).await, 2);
        }

        // A batch that writes a row again after one of its ticks closed it writes nothing.
        let c = seed(s).await.unwrap();
        let long = sample_open_trade(&c, at(0));
        let mut t0 = tick(&c, 0);
        t0.trades.push(sample_closed_trade(&long, at(0)));
        let mut t1 = tick(&c, 1);
        t1.trades.push(long);
        let err = s
            .record_ticks(&db::PlannedTicks::new(vec![t0.clone(), t1]), &[])
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                DbError::Invalid {
                    what: "trade_history row",
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(
            count_rows(s, "decision_snapshots", c.deployment.id).await,
            0
        );
        assert_eq!(count_rows(s, "trade_history", c.deployment.id).await, 0);

        // Two ticks of one batch at the same time are refused before the database sees them.
        let mut twin = tick(&c, 0);
        twin.snapshot.id = Uuid::new_v4();
        assert!(matches!(
            s.record_ticks(&db::PlannedTicks::new(vec![t0, twin]), &[])
                .await,
            Err(DbError::Invalid {
                what: "tick batch",
                ..
            })
        ));
        assert_eq!(
            count_rows(s, "decision_snapshots", c.deployment.id).await,
            0
        );

        // More ticks than one INSERT statement carries: every one is stored, in order.
        let many: Vec<TickRecord> = (100..300).map(|m| tick(&c, m)).collect();
        let outcomes = s
            .record_ticks(&db::PlannedTicks::new(many.to_vec()), &[])
            .await
            .unwrap();
        assert_eq!(outcomes.len(), 200);
        assert!(outcomes.iter().zip(&many).all(|(o, t)| *o
            == RecordOutcome::Recorded {
                snapshot_id: t.snapshot.id
            }));
        assert_eq!(
            count_rows(s, "decision_snapshots", c.deployment.id).await,
            200
        );
        let replayed = s
            .record_ticks(&db::PlannedTicks::new(many[150..].to_vec()), &[])
            .await
            .unwrap();
        assert!(replayed.iter().zip(&many[150..]).all(|(o, t)| *o
            == RecordOutcome::AlreadyRecorded {
                snapshot_id: t.snapshot.id
            }));

        // More round trips than one statement carries (64 + 4 + 2 rows, fills and links): every
        // fill links the row it opened and closed.
        let f = seed(s).await.unwrap();
        let mut batch = Vec::new();
        let mut closed = Vec::new();
        for m in 0..70 {
            let mut t = tick(&f, m);
            let row = sample_closed_trade(&sample_open_trade(&f, at(m)), at(m));
            t.fills.push(sample_fill(
                &format!("f-{m}"),
                dec!(0.01),
                dec!(65200),
                at(m),
            ));
            t.trades.push(row.clone());
            t.links.push(FillTradeLink {
                broker_fill_id: format!("f-{m}"),
                trade_id: row.id,
                flip_trade_id: None,
            });
            closed.push(row);
            batch.push(t);
        }
        s.record_ticks(&db::PlannedTicks::new(batch), &[])
            .await
            .unwrap();
        let d = f.deployment.id;
        let fills = s.list_fills(d, None).await.unwrap();
        assert_eq!(fills.len(), 70);
        for stored in &fills {
            let m: usize = stored.fill.id[2..].parse().unwrap();
            assert_eq!(stored.trade_id, Some(closed[m].id), "{}", stored.fill.id);
        }
        assert_eq!(
            s.count(&format!(
                "SELECT COUNT(*) FROM trade_history WHERE CAST(deployment_id AS TEXT) = '{d}' \
                 AND status = 'closed'"
            ))
            .await,
            70
        );
        let mut read = s.closed_trades(d, at(100), 30).await.unwrap();
        read.sort_by_key(|t| t.entry_tick_at);
        assert_eq!(read, closed[40..]);

        // A batch that rewrites a row an earlier write closed is refused as a whole, and the
        // error names that row (not the other row of its statement).
        let g = seed(s).await.unwrap();
        let long = sample_open_trade(&g, at(0));
        let long_closed = sample_closed_trade(&long, at(0));
        let mut t0 = tick(&g, 0);
        t0.trades.push(long_closed.clone());
        s.record_tick(&t0).await.unwrap();
        let mut t1 = tick(&g, 1);
        let other = sample_open_trade(&g, at(1));
        t1.trades.push(other);
        let mut t2 = tick(&g, 2);
        t2.trades.push(TradeRecord {
            realized_pnl_usd: dec!(999),
            ..long_closed.clone()
        });
        let err = s
            .record_ticks(&db::PlannedTicks::new(vec![t1, t2]), &[])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, DbError::Invalid { what: "trade_history row", detail }
                if detail.starts_with(&format!("{} is closed", long.id))),
            "{err}"
        );
        assert_eq!(
            count_rows(s, "decision_snapshots", g.deployment.id).await,
            1
        );
        assert_eq!(
            s.closed_trades(g.deployment.id, at(10), 10).await.unwrap(),
            vec![long_closed]
        );
        assert!(s.open_trades(g.deployment.id).await.unwrap().is_empty());
    }

    /// A round trip closed by the broker's stop (and another by its target): the fills keep
    /// their trigger and the rows their close kind, on both backends (#16 item 4).
    pub(super) async fn stop_and_target_round_trips_round_trip<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        for (n, (kind, trigger)) in [
            (CloseKind::Stop, types::FillTrigger::Stop),
            (CloseKind::Target, types::FillTrigger::Target),
        ]
        .into_iter()
        .enumerate()
        {
            let start = 100 * i64::try_from(n).unwrap();
            let open = sample_open_trade(&fx, at(start));
            let mut t = tick(&fx, start);
            t.fills.push(sample_fill(
                &format!("open-{n}"),
                dec!(0.01),
                dec!(65000),
                at(start),
            ));
            t.trades.push(open.clone());
            s.record_tick(&t).await.unwrap();
            let mut exit = sample_fill(
                &format!("exit-{n}"),
                dec!(0.01),
                dec!(65940),
                at(start + 60),
            );
            exit.side = OrderSide::Sell;
            exit.snapshot_id = None;
            exit.trigger = Some(trigger);
            let mut closed = sample_closed_trade(&open, at(start + 60));
            closed.close_kind = Some(kind);
            let mut t = tick(&fx, start + 60);
            t.fills.push(exit.clone());
            t.trades.push(closed.clone());
            s.record_tick(&t).await.unwrap();
            let fills = s.list_fills(d, Some(at(start + 60))).await.unwrap();
            assert_eq!(fills.len(), 1);
            assert_eq!(fills[0].fill, exit);
            assert_eq!(
                s.closed_trades(d, at(start + 60), 1).await.unwrap(),
                vec![closed]
            );
        }
        // The opening fills were stored without a trigger and read back without one.
        let all = s.list_fills(d, None).await.unwrap();
        assert_eq!(all.iter().filter(|f| f.fill.trigger.is_none()).count(), 2);
    }

    pub(super) async fn ledger_reads_are_point_in_time<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let a = sample_open_trade(&fx, at(0));
        let mut t = tick(&fx, 0);
        t.trades.push(a.clone());
        s.record_tick(&t).await.unwrap();

        // Reduced first at minute 40 (exit_tick_at), closed for good by the tick at 60: the row
        // counts as closed from 60 on, never earlier.
        let mut a_closed = sample_closed_trade(&a, at(60));
        a_closed.exit_tick_at = Some(at(40));
        let mut t = tick(&fx, 60);
        t.trades.push(a_closed.clone());
        s.record_tick(&t).await.unwrap();

        // A flip at tick 90: B (long) closes and C (short) opens on the same symbol in one tick;
        // the open row is listed first to show the store orders closing rows first.
        let b = sample_open_trade(&fx, at(70));
        let mut t = tick(&fx, 70);
        t.trades.push(b.clone());
        s.record_tick(&t).await.unwrap();
        let mut b_closed = sample_closed_trade(&b, at(90));
        b_closed.close_kind = Some(CloseKind::Flip);
        let c = TradeRecord {
            id: Uuid::new_v4(),
            side: Side::Short,
            entry_tick_at: at(90),
            entry_price: dec!(65940),
            ..sample_open_trade(&fx, at(90))
        };
        let mut t = tick(&fx, 90);
        let mut flip_fill = sample_fill("f-flip", dec!(0.02), dec!(65940), at(90));
        flip_fill.side = OrderSide::Sell;
        t.fills.push(flip_fill);
        t.links.push(FillTradeLink {
            broker_fill_id: "f-flip".into(),
            trade_id: b.id,
            flip_trade_id: Some(c.id),
        });
        t.trades.push(c.clone());
        t.trades.push(b_closed.clone());
        s.record_tick(&t).await.unwrap();
        let fills = s.list_fills(fx.deployment.id, Some(at(90))).await.unwrap();
        assert_eq!(
            (fills[0].trade_id, fills[0].flip_trade_id),
            (Some(b.id), Some(c.id)),
            "a flip fill links the row it closed and the row it opened"
        );

        // Closed rows are immutable: a later tick cannot reopen or rewrite B.
        let mut t = tick(&fx, 95);
        t.trades.push(TradeRecord {
            realized_pnl_usd: dec!(999),
            ..b_closed.clone()
        });
        assert!(matches!(
            s.record_tick(&t).await,
            Err(DbError::Invalid {
                what: "trade_history row",
                ..
            })
        ));
        assert!(matches!(
            s.get_snapshot(t.snapshot.id).await,
            Err(DbError::NotFound { .. })
        ));

        let d = fx.deployment.id;
        assert!(
            s.closed_trades(d, at(59), 10).await.unwrap().is_empty(),
            "nothing closed yet at 59"
        );
        assert!(
            s.closed_trades(d, at(40), 10).await.unwrap().is_empty(),
            "a partial exit is not a close"
        );
        assert_eq!(
            s.closed_trades(d, at(60), 10).await.unwrap(),
            vec![a_closed.clone()]
        );
        assert_eq!(
            s.closed_trades(d, at(89), 10).await.unwrap(),
            vec![a_closed.clone()]
        );
        assert_eq!(
            s.closed_trades(d, at(200), 10).await.unwrap(),
            vec![b_closed.clone(), a_closed.clone()],
            "entry-desc"
        );
        assert_eq!(
            s.closed_trades(d, at(200), 1).await.unwrap(),
            vec![b_closed.clone()]
        );
        assert_eq!(s.count_closed_trades(d, at(59)).await.unwrap(), 0);
        assert_eq!(s.count_closed_trades(d, at(200)).await.unwrap(), 2);
        assert_eq!(
            s.closed_trades_for_skill(fx.skill.id, 1, at(200), 30)
                .await
                .unwrap(),
            vec![b_closed, a_closed]
        );
        assert_eq!(s.open_trades(d).await.unwrap(), vec![c]);
        assert!(matches!(
            s.closed_trades(d, at(200), 31).await,
            Err(DbError::Invalid { .. })
        ));
    }

    pub(super) async fn decimals_and_times_round_trip_exactly<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let mut trade = sample_open_trade(&fx, at(0) + chrono::Duration::microseconds(123_456));
        trade.entry_price = dec!(65200.123456789012345);
        trade.entry_size_usd = dec!(0.000000000000000001);
        trade.fees_usd = dec!(-0.00012); // a maker rebate
        trade.entry_leverage = None;
        trade.entry_regime_tag = None;
        let mut t = tick(&fx, 0);
        t.trades.push(trade.clone());
        s.record_tick(&t).await.unwrap();
        let back = s.get_trade(trade.id).await.unwrap();
        assert_eq!(back, trade);
        assert_eq!(back.entry_price.to_string(), "65200.123456789012345");
    }

    pub(super) async fn snapshots_read_back_in_order<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let mut snaps = vec![];
        for m in [0, 5, 10] {
            let mut t = tick(&fx, m);
            if m == 5 {
                t.snapshot.proposal = None;
                t.snapshot.verdict = types::Verdict::Rejected {
                    rule: types::RuleCode::PositionCap,
                    detail: "over cap".into(),
                };
            }
            s.record_tick(&t).await.unwrap();
            snaps.push(t.snapshot);
        }
        let d = fx.deployment.id;
        assert_eq!(
            s.last_snapshot_before(d, at(10)).await.unwrap(),
            Some(snaps[1].clone())
        );
        assert_eq!(
            s.last_snapshot_before(d, at(0)).await.unwrap(),
            None,
            "strictly before"
        );
        assert_eq!(
            s.list_snapshots(d, 2).await.unwrap(),
            vec![snaps[2].clone(), snaps[1].clone()]
        );
    }

    pub(super) async fn notes_supersede_and_read_point_in_time<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let scope = NoteScope::Deployment(fx.deployment.id);
        assert_eq!(s.active_note(scope, at(100)).await.unwrap(), None);

        let n1 = s
            .insert_note(&sample_note(&fx, at(10), "- cut losers early"))
            .await
            .unwrap();
        assert_eq!(n1.status, NoteStatus::Active);
        // A note the linter flagged waits for review: stored, displacing nothing.
        let mut new2 = sample_note(&fx, at(20), "- avoid chop regime longs");
        new2.lint = Some(lint("mentions a symbol outside the strategy"));
        let n2 = s.insert_note(&new2).await.unwrap();
        assert_eq!(n2.status, NoteStatus::PendingReview);
        assert_eq!(
            s.active_note(scope, at(22)).await.unwrap().map(|n| n.id),
            Some(n1.id),
            "a pending note is never in force"
        );

        // A person accepts it at 25: from then on it is the active note, never before.
        let accepted = s.accept_note(n2.id, " alice ", at(25)).await.unwrap();
        assert_eq!(accepted.status, NoteStatus::Active);
        assert_eq!(accepted.accepted_at, Some(at(25)));
        assert_eq!(
            accepted.accepted_by.as_deref(),
            Some("alice"),
            "audited: who"
        );
        let history = s.note_history(scope, 10).await.unwrap();
        assert_eq!(history.len(), 2);
        assert_eq!(history[0], accepted);
        assert_eq!(history[1].id, n1.id);
        assert_eq!(history[1].status, NoteStatus::Superseded);
        assert_eq!(history[1].superseded_by, Some(n2.id));
        assert_eq!(history[1].superseded_at, Some(at(25)));
        assert_eq!(
            history[0].lint,
            Some(lint("mentions a symbol outside the strategy"))
        );
        assert!(matches!(
            s.accept_note(n2.id, "bob", at(26)).await,
            Err(DbError::Conflict { .. })
        ));
        let n2 = accepted;

        assert_eq!(
            s.active_note(scope, at(5)).await.unwrap(),
            None,
            "no lesson before it existed"
        );
        assert_eq!(
            s.active_note(scope, at(20)).await.unwrap().map(|n| n.id),
            Some(n1.id)
        );
        assert_eq!(
            s.active_note(scope, at(25)).await.unwrap(),
            Some(n2.clone())
        );
        assert_eq!(s.note_history(scope, 1).await.unwrap(), vec![n2.clone()]);

        // An older note cannot displace a newer active one.
        let stale = s.insert_note(&sample_note(&fx, at(15), "- stale")).await;
        assert!(
            matches!(
                stale,
                Err(DbError::Invalid {
                    what: "reflection note",
                    ..
                })
            ),
            "{stale:?}"
        );

        // A skill-scoped note is active alongside the deployment's.
        let mut skill_note = sample_note(&fx, at(30), "- skill-wide lesson");
        skill_note.deployment_id = None;
        let sn = s.insert_note(&skill_note).await.unwrap();
        let skill_scope = NoteScope::Skill {
            skill_id: fx.skill.id,
            skill_version: 1,
        };
        assert_eq!(s.active_note(skill_scope, at(30)).await.unwrap(), Some(sn));
        assert_eq!(s.active_note(scope, at(30)).await.unwrap(), Some(n2));
    }

    pub(super) async fn note_bounds_are_enforced<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let over = sample_note(&fx, at(10), &"x".repeat(2001));
        assert_bound(
            s.insert_note(&over).await.unwrap_err(),
            "lessons_text",
            2001,
        );
        let empty = sample_note(&fx, at(10), "");
        assert_bound(s.insert_note(&empty).await.unwrap_err(), "lessons_text", 0);
        let mut long_lint = sample_note(&fx, at(10), "- ok");
        long_lint.lint = Some(lint(&"r".repeat(501)));
        assert_bound(
            s.insert_note(&long_lint).await.unwrap_err(),
            "lint reason",
            501,
        );
        let mut reversed = sample_note(&fx, at(10), "- ok");
        reversed.content.window_start = at(20);
        assert!(matches!(
            s.insert_note(&reversed).await,
            Err(DbError::Invalid { .. })
        ));
        // Exactly 2000 characters (multi-byte) is allowed.
        let max = s
            .insert_note(&sample_note(&fx, at(10), &"é".repeat(2000)))
            .await
            .unwrap();
        assert_eq!(max.content.lessons_text.chars().count(), 2000);
        assert!(
            s.note_history(NoteScope::Deployment(fx.deployment.id), 10)
                .await
                .unwrap()
                .len()
                == 1
        );
    }

    pub(super) async fn concurrent_reflections_leave_exactly_one_active<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let notes: Vec<_> = (0..4)
            .map(|i| sample_note(&fx, at(10), &format!("- lesson {i}")))
            .collect();
        let (a, b, c, d) = tokio::join!(
            s.insert_note(&notes[0]),
            s.insert_note(&notes[1]),
            s.insert_note(&notes[2]),
            s.insert_note(&notes[3]),
        );
        for r in [a, b, c, d] {
            r.unwrap();
        }
        let history = s
            .note_history(NoteScope::Deployment(fx.deployment.id), 10)
            .await
            .unwrap();
        assert_eq!(history.len(), 4);
        assert_eq!(
            history
                .iter()
                .filter(|n| n.status == NoteStatus::Active)
                .count(),
            1
        );
    }

    pub(super) async fn reflection_runs_record_failures_without_touching_the_note<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let note = s
            .insert_note(&sample_note(&fx, at(10), "- keep stops"))
            .await
            .unwrap();
        let run = |outcome, started| ReflectionRun {
            id: Uuid::new_v4(),
            skill_id: fx.skill.id,
            skill_version: 1,
            deployment_id: Some(fx.deployment.id),
            started_at: at(started),
            finished_at: at(started + 1),
            outcome,
            model: "builtin/scripted".into(),
            input_tokens: Some(10),
            output_tokens: None,
            cost_usd: Some(dec!(0.0001)),
        };
        let ok = run(
            RunOutcome::Succeeded {
                note_id: Some(note.id),
            },
            10,
        );
        let failed = run(
            RunOutcome::Failed {
                error: "e".repeat(2500),
            },
            20,
        );
        s.record_reflection_run(&ok).await.unwrap();
        s.record_reflection_run(&failed).await.unwrap();

        let scope = NoteScope::Deployment(fx.deployment.id);
        let runs = s.reflection_runs(scope, 10).await.unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1], ok);
        match &runs[0].outcome {
            RunOutcome::Failed { error } => {
                assert_eq!(error.chars().count(), 2000, "cut, not refused")
            }
            other => panic!("expected a failed run, got {other:?}"),
        }
        assert_eq!(s.active_note(scope, at(100)).await.unwrap(), Some(note));
    }

    fn new_fact(user: Uuid, text: &str) -> NewFact {
        NewFact {
            id: Uuid::new_v4(),
            user_id: user,
            skill_id: None,
            fact: text.into(),
            source: FactSource::Chat,
            confidence: FactConfidence::Asserted,
            topic: Some("risk".into()),
            actor: "chat-agent".into(),
        }
    }

    /// A fact may be scoped only to a skill of its own owner, and a change of who last touched
    /// it (`updated_by`) is audited even when nothing else changed.
    pub(super) async fn facts_keep_to_their_owner_and_audit_every_actor<S: Storage + RawSql>(
        s: &S,
    ) {
        let mine = seed(s).await.unwrap();
        let theirs = seed(s).await.unwrap();
        let mut scoped = new_fact(mine.user.id, "Their skill, my fact.");
        scoped.skill_id = Some(theirs.skill.id);
        match s.remember(&scoped, at(0)).await.unwrap_err() {
            DbError::Constraint {
                kind: ConstraintKind::Check,
                constraint,
                ..
            } => assert_eq!(constraint, "user_facts_skill_owner"),
            other => panic!("expected the owner check, got {other:?}"),
        }
        assert!(s.list_facts(mine.user.id, true).await.unwrap().is_empty());

        scoped.skill_id = Some(mine.skill.id);
        let fact = s.remember(&scoped, at(0)).await.unwrap();
        // Moving it to another user's skill by a direct write is refused too.
        let moved = s
            .exec(&format!(
                "UPDATE user_facts SET skill_id = '{}' WHERE id = '{}'",
                theirs.skill.id, fact.id
            ))
            .await;
        assert!(moved.is_err(), "{moved:?}");

        // Only the actor changes: still a recorded change, with the new actor.
        let touched = s
            .exec(&format!(
                "UPDATE user_facts SET updated_by = 'support-desk' WHERE id = '{}'",
                fact.id
            ))
            .await
            .unwrap();
        assert_eq!(touched, 1);
        let changes = s.fact_changes(fact.id).await.unwrap();
        let ops: Vec<_> = changes.iter().map(|c| c.op).collect();
        assert_eq!(ops, vec![FactChangeOp::Insert, FactChangeOp::Update]);
        assert_eq!(changes[1].actor.as_deref(), Some("support-desk"));
    }

    pub(super) async fn facts_remember_forget_and_rank<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let u = fx.user.id;
        let f1 = s
            .remember(&new_fact(u, "Never above 5x leverage."), at(0))
            .await
            .unwrap();
        let f2 = s
            .remember(&new_fact(u, "Trades BTC and ETH only."), at(1))
            .await
            .unwrap();
        let f3 = s
            .remember(&new_fact(u, "US morning session."), at(2))
            .await
            .unwrap();
        let mut scoped = new_fact(u, "This skill: no weekend trades.");
        scoped.skill_id = Some(fx.skill.id);
        let f4 = s.remember(&scoped, at(3)).await.unwrap();

        // Writing references: each fact's reference is its write; newest first, and
        // skill-scoped facts only for that skill.
        assert_eq!(
            [&f1, &f2, &f3, &f4].map(|f| f.last_referenced_at),
            [Some(at(0)), Some(at(1)), Some(at(2)), Some(at(3))]
        );
        let top = s.top_facts(u, None, 10, None).await.unwrap();
        assert_eq!(
            top.iter().map(|f| f.id).collect::<Vec<_>>(),
            vec![f3.id, f2.id, f1.id]
        );
        assert_eq!(top, vec![f3.clone(), f2.clone(), f1.clone()], "as stored");
        // Inject the top 2 at t=10: they are bumped and now rank above the rest.
        let injected = s.top_facts(u, None, 2, Some(at(10))).await.unwrap();
        assert_eq!(
            injected.iter().map(|f| f.id).collect::<Vec<_>>(),
            vec![f3.id, f2.id]
        );
        assert!(
            injected
                .iter()
                .all(|f| f.last_referenced_at == Some(at(10)))
        );
        s.top_facts(u, None, 1, Some(at(20))).await.unwrap(); // bumps f3 (ties broken newest-first)
        let top = s.top_facts(u, Some(fx.skill.id), 10, None).await.unwrap();
        assert_eq!(
            top.iter().map(|f| f.id).collect::<Vec<_>>(),
            vec![f3.id, f2.id, f4.id, f1.id],
            "last referenced first"
        );
        assert!(matches!(
            s.top_facts(u, None, 31, None).await,
            Err(DbError::Invalid { .. })
        ));

        // Bounds: 4..=500 characters.
        assert_bound(
            s.remember(&new_fact(u, "abc"), at(4)).await.unwrap_err(),
            "fact",
            3,
        );
        assert_bound(
            s.remember(&new_fact(u, &"a".repeat(501)), at(4))
                .await
                .unwrap_err(),
            "fact",
            501,
        );
        s.remember(&new_fact(u, "abcd"), at(4)).await.unwrap();
        s.remember(&new_fact(u, &"a".repeat(500)), at(4))
            .await
            .unwrap();

        // Edit, then forget.
        let edit = FactEdit {
            fact: Some("Never above 3x leverage.".into()),
            confidence: Some(FactConfidence::Inferred),
            topic: None,
        };
        let edited = s
            .edit_fact(u, f1.id, &edit, "profile", at(25))
            .await
            .unwrap();
        assert_eq!(
            (edited.fact.as_str(), edited.confidence),
            ("Never above 3x leverage.", FactConfidence::Inferred)
        );
        // The edit references the fact: the oldest one is now the most recent.
        assert_eq!(edited.last_referenced_at, Some(at(25)));
        let top = s.top_facts(u, None, 1, None).await.unwrap();
        assert_eq!(top, vec![edited.clone()], "as stored");
        // An edit stamped earlier than the fact's last reference keeps the later one.
        let promote = FactEdit {
            fact: None,
            confidence: Some(FactConfidence::Asserted),
            topic: None,
        };
        let promoted = s
            .edit_fact(u, f3.id, &promote, "profile", at(5))
            .await
            .unwrap();
        assert_eq!(promoted.last_referenced_at, Some(at(20)));
        let forget = Forget {
            reason: ArchiveReason::UserCorrected,
            at: at(30),
            actor: "profile".into(),
        };
        s.forget(u, f1.id, &forget).await.unwrap();
        s.forget(u, f1.id, &forget).await.unwrap(); // idempotent
        assert!(
            s.top_facts(u, None, 30, None)
                .await
                .unwrap()
                .iter()
                .all(|f| f.id != f1.id)
        );
        let all = s.list_facts(u, true).await.unwrap();
        let archived = all.iter().find(|f| f.id == f1.id).unwrap();
        assert_eq!(
            (archived.archived_at, archived.archived_reason),
            (Some(at(30)), Some(ArchiveReason::UserCorrected))
        );
        assert!(
            s.list_facts(u, false)
                .await
                .unwrap()
                .iter()
                .all(|f| f.id != f1.id)
        );
        assert!(matches!(
            s.edit_fact(u, f1.id, &edit, "profile", at(31)).await,
            Err(DbError::NotFound { .. })
        ));

        // Another user cannot forget or edit this user's facts through the API either.
        let other = seed(s).await.unwrap().user.id;
        assert!(matches!(
            s.forget(other, f2.id, &forget).await,
            Err(DbError::NotFound { .. })
        ));
        assert!(matches!(
            s.edit_fact(other, f2.id, &edit, "x", at(31)).await,
            Err(DbError::NotFound { .. })
        ));

        // The audit trail: insert, update, archive — reference bumps are not changes.
        let changes = s.fact_changes(f1.id).await.unwrap();
        let ops: Vec<_> = changes.iter().map(|c| c.op).collect();
        assert_eq!(
            ops,
            vec![
                FactChangeOp::Insert,
                FactChangeOp::Update,
                FactChangeOp::Archive
            ]
        );
        assert_eq!(
            changes[0].new_fact.as_deref(),
            Some("Never above 5x leverage.")
        );
        assert_eq!(changes[0].actor.as_deref(), Some("chat-agent"));
        assert_eq!(
            changes[1].old_fact.as_deref(),
            Some("Never above 5x leverage.")
        );
        assert_eq!(
            changes[1].new_fact.as_deref(),
            Some("Never above 3x leverage.")
        );
        assert_eq!(changes[1].actor.as_deref(), Some("profile"));
        assert_eq!(changes[2].reason.as_deref(), Some("user_corrected"));
        assert_eq!(
            s.fact_changes(f3.id).await.unwrap().len(),
            2,
            "two bumps and a promotion: an insert row and an update row"
        );
    }

    /// A chat turn marks what it showed once it completed: only the caller's active facts
    /// move, never backwards, and the store bounds the list.
    pub(super) async fn facts_marked_referenced_move_forward_only<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let u = fx.user.id;
        let other = seed(s).await.unwrap().user.id;
        let old = s
            .remember(&new_fact(u, "Never above 5x leverage."), at(0))
            .await
            .unwrap();
        let later = s
            .remember(&new_fact(u, "Trades BTC and ETH only."), at(50))
            .await
            .unwrap();
        let gone = s
            .remember(&new_fact(u, "US morning session."), at(1))
            .await
            .unwrap();
        let theirs = s
            .remember(&new_fact(other, "Someone else's rule."), at(2))
            .await
            .unwrap();
        let forget = Forget {
            reason: ArchiveReason::AgentForget,
            at: at(3),
            actor: "chat-agent".into(),
        };
        s.forget(u, gone.id, &forget).await.unwrap();

        let ids = [
            old.id,
            later.id,
            gone.id,
            theirs.id,
            Uuid::from_u128(0xDEAD),
        ];
        assert_eq!(s.mark_referenced(u, &ids, at(10)).await.unwrap(), 1);
        let stamp = |all: Vec<UserFact>, id: Uuid| {
            all.into_iter()
                .find(|f| f.id == id)
                .unwrap()
                .last_referenced_at
        };
        let mine = s.list_facts(u, true).await.unwrap();
        assert_eq!(stamp(mine.clone(), old.id), Some(at(10)));
        assert_eq!(
            stamp(mine.clone(), later.id),
            Some(at(50)),
            "never backwards"
        );
        assert_eq!(stamp(mine, gone.id), Some(at(1)), "archived: untouched");
        let theirs_now = s.list_facts(other, false).await.unwrap();
        assert_eq!(
            stamp(theirs_now, theirs.id),
            Some(at(2)),
            "another user's: untouched"
        );
        assert_eq!(s.mark_referenced(u, &[], at(11)).await.unwrap(), 0);
        assert!(matches!(
            s.mark_referenced(u, &[old.id; 31], at(11)).await,
            Err(DbError::Invalid { .. })
        ));
        // A reference is not a change of the fact: the audit trail holds the insert only.
        assert_eq!(s.fact_changes(old.id).await.unwrap().len(), 1);
    }

    fn news(feed: &str, guid: &str, minutes: i64, fetched: i64, symbols: &[&str]) -> NewsRecord {
        NewsRecord {
            id: Uuid::new_v5(&Uuid::NAMESPACE_URL, format!("{feed}\n{guid}").as_bytes()),
            feed: feed.to_owned(),
            source: "Example Wire".into(),
            guid: guid.to_owned(),
            title: format!("Headline {guid}"),
            link: Some(format!("https://example.com/{guid}")),
            summary: None,
            published_at: at(minutes),
            fetched_at: at(fetched),
            symbols: symbols.iter().map(|x| (*x).to_owned()).collect(),
            sentiment: dec!(-0.25),
            sentiment_source: SentimentSource::Lexicon,
            importance: dec!(0.6),
        }
    }

    pub(super) async fn news_dedupes_per_feed_and_reads_point_in_time<S: Storage + RawSql>(s: &S) {
        // A far-future window and a feed of this test's own: other tests cannot interfere.
        let base = 700_000;
        let feed = format!("https://feeds.example/{}", Uuid::new_v4());
        let other = format!("https://other.example/{}", Uuid::new_v4());
        let btc = news(&feed, "a", base, base + 5, &["BTC"]);
        let eth = news(&feed, "b", base + 10, base + 12, &["ETH"]);
        let mut wide = news(&feed, "c", base + 20, base + 21, &[]);
        wide.importance = dec!(0.3);
        wide.summary = Some("Markets & more".into());
        wide.sentiment_source = SentimentSource::Feed;
        // Published before the tick, fetched after it: invisible at the tick.
        let late = news(&feed, "d", base + 25, base + 40, &["BTC"]);
        // The same guid on another feed is another item.
        let same_guid = news(&other, "a", base + 1, base + 2, &["BTC"]);
        assert_eq!(
            s.insert_news(&[
                btc.clone(),
                eth.clone(),
                wide.clone(),
                late.clone(),
                same_guid.clone()
            ])
            .await
            .unwrap(),
            5
        );
        // A second poll: the same items again (one re-fetched later and retitled) add nothing
        // and move nothing.
        let mut again = btc.clone();
        again.fetched_at = at(base + 30);
        again.title = "Retitled".into();
        assert_eq!(s.insert_news(&[again, eth.clone()]).await.unwrap(), 0);

        let btc_only = ["BTC".to_owned()];
        let seen = s
            .news_window(&btc_only, at(base), at(base + 30), at(base + 30), 10)
            .await
            .unwrap();
        assert_eq!(
            seen,
            vec![same_guid.clone(), btc.clone(), wide.clone()],
            "BTC and market-wide items, importance then newest first; ETH and the late fetch not"
        );
        // At T = base + 30 the late item's fetch (base + 40) is still in the future.
        assert!(!seen.contains(&late));
        let later = s
            .news_window(&btc_only, at(base), at(base + 30), at(base + 40), 10)
            .await
            .unwrap();
        assert_eq!(later[0], late, "visible once fetched");
        // Published after `to`: outside the window whatever the fetch time.
        assert_eq!(
            s.news_window(&btc_only, at(base), at(base + 15), at(base + 100), 10)
                .await
                .unwrap(),
            vec![same_guid.clone(), btc.clone()]
        );
        assert_eq!(
            s.news_window(&btc_only, at(base), at(base + 30), at(base + 30), 1)
                .await
                .unwrap(),
            vec![same_guid],
            "top K"
        );
        assert!(matches!(
            s.news_window(&btc_only, at(base), at(base + 30), at(base + 30), 101)
                .await,
            Err(DbError::Invalid {
                what: "news limit",
                ..
            })
        ));
    }

    pub(super) async fn news_bounds_are_refused_before_anything_is_written<S: Storage + RawSql>(
        s: &S,
    ) {
        let base = 710_000;
        let feed = format!("https://feeds.example/{}", Uuid::new_v4());
        let good = news(&feed, "ok", base, base, &[]);
        let mut bad_sentiment = news(&feed, "s", base, base, &[]);
        bad_sentiment.sentiment = dec!(1.01);
        let mut long_title = news(&feed, "t", base, base, &[]);
        long_title.title = "x".repeat(db::MAX_NEWS_TITLE_CHARS + 1);
        let mut bad_importance = news(&feed, "i", base, base, &[]);
        bad_importance.importance = dec!(-0.1);
        let mut empty_guid = news(&feed, "", base, base, &[]);
        empty_guid.guid = String::new();
        for (bad, expect) in [
            (bad_sentiment, "news sentiment"),
            (long_title, "news title"),
            (bad_importance, "news importance"),
            (empty_guid, "news guid"),
        ] {
            let err = s.insert_news(&[good.clone(), bad]).await.unwrap_err();
            assert!(err.to_string().contains(expect), "{expect}: {err}");
        }
        assert_eq!(
            s.count(&format!(
                "SELECT count(*) FROM news_items WHERE feed = '{feed}'"
            ))
            .await,
            0,
            "nothing of a refused batch is stored"
        );
    }

    pub(super) async fn events_in_a_window<S: Storage + RawSql>(s: &S) {
        let ev = |minutes, importance: Decimal, symbols: &[&str]| MarketEvent {
            id: Uuid::new_v4(),
            kind: EventKind::Cpi,
            title: "US CPI".into(),
            symbols: symbols.iter().map(|x| (*x).to_owned()).collect(),
            scheduled_at: at(minutes),
            importance,
            source: "calendar".into(),
        };
        // A far-future window so other tests' events cannot interfere.
        let base = 500_000;
        let e1 = ev(base, dec!(0.9), &["BTC", "ETH"]);
        let e2 = ev(base + 60, dec!(0.3), &[]);
        let mut e3 = ev(base + 120, dec!(0.5), &["SOL"]);
        for e in [&e1, &e2, &e3] {
            s.upsert_event(e).await.unwrap();
        }
        e3.title = "US CPI (revised)".into();
        s.upsert_event(&e3).await.unwrap();

        let all = s
            .events_between(at(base), at(base + 120), None)
            .await
            .unwrap();
        assert_eq!(
            all,
            vec![e1.clone(), e2.clone(), e3.clone()],
            "inclusive window, time order"
        );
        let important = s
            .events_between(at(base), at(base + 120), Some(dec!(0.4)))
            .await
            .unwrap();
        assert_eq!(important, vec![e1.clone(), e3]);
        assert_eq!(
            s.events_between(at(base + 1), at(base + 59), None)
                .await
                .unwrap(),
            vec![]
        );
        assert!(matches!(
            s.upsert_event(&ev(base, dec!(1.5), &[])).await,
            Err(DbError::Invalid { .. })
        ));
    }

    fn lit_ts(minutes: i64) -> String {
        db::time_text(at(minutes))
    }

    pub(super) async fn database_rejects_a_second_active_note<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        s.insert_note(&sample_note(&fx, at(10), "- one"))
            .await
            .unwrap();
        // Straight SQL, past the Rust API: the partial unique index refuses a second active note.
        let sql = format!(
            "INSERT INTO reflection_notes (id, skill_id, skill_version, deployment_id, status, \
             generated_at, window_start, window_end, trades_considered, lessons_text, model_used) \
             VALUES ('{}', '{}', 1, '{}', 'active', '{}', '{}', '{}', 3, '- two', 'm')",
            Uuid::new_v4(),
            fx.skill.id,
            fx.deployment.id,
            lit_ts(20),
            lit_ts(0),
            lit_ts(20),
        );
        let err = s.exec(&sql).await.unwrap_err();
        let kind = err.as_database_error().map(|e| e.kind());
        assert_eq!(kind, Some(sqlx::error::ErrorKind::UniqueViolation), "{err}");
        // The same row as superseded history is fine.
        s.exec(&sql.replace("'active'", "'superseded'"))
            .await
            .unwrap();
        // Two active skill-scoped notes for one skill version: refused too.
        let skill_sql = |id: Uuid| {
            format!(
                "INSERT INTO reflection_notes (id, skill_id, skill_version, status, generated_at, \
                 window_start, window_end, trades_considered, lessons_text, model_used) \
                 VALUES ('{id}', '{}', 1, 'active', '{}', '{}', '{}', 3, '- s', 'm')",
                fx.skill.id,
                lit_ts(20),
                lit_ts(0),
                lit_ts(20),
            )
        };
        s.exec(&skill_sql(Uuid::new_v4())).await.unwrap();
        let err = s.exec(&skill_sql(Uuid::new_v4())).await.unwrap_err();
        assert_eq!(
            err.as_database_error().map(|e| e.kind()),
            Some(sqlx::error::ErrorKind::UniqueViolation)
        );
    }

    pub(super) async fn database_rejects_out_of_bounds_text<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let note = s
            .insert_note(&sample_note(&fx, at(10), "- short"))
            .await
            .unwrap();
        let long = "x".repeat(2001);
        let err = s
            .exec(&format!(
                "UPDATE reflection_notes SET lessons_text = '{long}' WHERE id = '{}'",
                note.id
            ))
            .await
            .unwrap_err();
        let db_err = err.as_database_error().expect("a database error");
        assert_eq!(
            db_err.kind(),
            sqlx::error::ErrorKind::CheckViolation,
            "{err}"
        );
        assert!(
            db_err.message().contains("reflection_notes_lessons_len")
                || db_err.constraint() == Some("reflection_notes_lessons_len"),
            "{err}"
        );

        let fact = s
            .remember(&new_fact(fx.user.id, "A real fact."), at(0))
            .await
            .unwrap();
        for bad in ["abc".to_owned(), "y".repeat(501)] {
            let err = s
                .exec(&format!(
                    "UPDATE user_facts SET fact = '{bad}' WHERE id = '{}'",
                    fact.id
                ))
                .await
                .unwrap_err();
            assert_eq!(
                err.as_database_error().map(|e| e.kind()),
                Some(sqlx::error::ErrorKind::CheckViolation)
            );
        }
        // A closed ledger row without its exit is refused by the database.
        let mut t = tick(&fx, 0);
        let mut bad = sample_closed_trade(&sample_open_trade(&fx, at(0)), at(0));
        bad.exit_price = None;
        t.trades.push(bad);
        match s.record_tick(&t).await {
            Err(DbError::Constraint {
                kind: ConstraintKind::Check,
                constraint,
                ..
            }) => {
                assert_eq!(constraint, "trade_history_closed_complete")
            }
            other => panic!("expected the closed-row check, got {other:?}"),
        }
    }

    pub(super) async fn a_snapshots_model_error_round_trips_and_is_bounded<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        // A model error: its text and flag come back as written (single and batched writes).
        let mut failed = tick(&fx, 0);
        failed.snapshot.error = Some("model call failed at step 0: openai: HTTP 500: é".into());
        failed.snapshot.model_error = true;
        failed.snapshot.finish_reason = Some("error".into());
        s.record_tick(&failed).await.unwrap();
        let mut batched = tick(&fx, 60);
        batched.snapshot.error = Some("x".repeat(types::MAX_STORED_ERROR_CHARS));
        batched.snapshot.model_error = true;
        let plain = tick(&fx, 120);
        s.record_ticks(
            &db::PlannedTicks::new(vec![batched.clone(), plain.clone()]),
            &[],
        )
        .await
        .unwrap();
        for t in [&failed, &batched, &plain] {
            assert_eq!(&s.get_snapshot(t.snapshot.id).await.unwrap(), &t.snapshot);
        }
        // One character over the bound: refused in Rust, naming the field, nothing written.
        let mut long = tick(&fx, 180);
        long.snapshot.error = Some("é".repeat(types::MAX_STORED_ERROR_CHARS + 1));
        assert_bound(
            s.record_tick(&long).await.unwrap_err(),
            "snapshot error",
            types::MAX_STORED_ERROR_CHARS + 1,
        );
        assert_bound(
            s.record_ticks(&db::PlannedTicks::new(vec![long.clone()]), &[])
                .await
                .unwrap_err(),
            "snapshot error",
            types::MAX_STORED_ERROR_CHARS + 1,
        );
        assert_eq!(
            count_rows(s, "decision_snapshots", fx.deployment.id).await,
            3
        );
        // And by the database itself.
        let err = s
            .exec(&format!(
                "UPDATE decision_snapshots SET error = '{}' WHERE id = '{}'",
                "y".repeat(types::MAX_STORED_ERROR_CHARS + 1),
                plain.snapshot.id
            ))
            .await
            .unwrap_err();
        assert_eq!(
            err.as_database_error().map(|e| e.kind()),
            Some(sqlx::error::ErrorKind::CheckViolation),
            "{err}"
        );
    }

    pub(super) async fn chat_turns_record_and_list<S: Storage + RawSql>(s: &S) {
        use db::ChatTurnRecord;
        let fx = seed(s).await.unwrap();
        let other = seed(s).await.unwrap();
        let turn = |minutes: i64, user: Uuid| ChatTurnRecord {
            id: Uuid::new_v4(),
            user_id: user,
            at: at(minutes),
            mode: "coach".into(),
            model: "anthropic/claude-sonnet-4.5".into(),
            steps: 2,
            usage: types::Usage {
                input: 1200,
                output: 80,
                cache_read: 900,
                cache_write: 300,
            },
            cost_usd: Decimal::new(123_456, 8),
            error: None,
        };
        let first = turn(0, fx.user.id);
        let failed = ChatTurnRecord {
            error: Some("é".repeat(db::MAX_CHAT_TURN_ERROR_CHARS + 10)),
            ..turn(5, fx.user.id)
        };
        s.record_chat_turn(&first).await.unwrap();
        s.record_chat_turn(&failed).await.unwrap();
        s.record_chat_turn(&turn(3, other.user.id)).await.unwrap();

        let mine = s.chat_turns(fx.user.id, 10).await.unwrap();
        assert_eq!(mine.len(), 2, "only the user's turns");
        assert_eq!(mine[1], first, "round trip, newest first");
        let cut = mine[0].error.as_deref().unwrap();
        assert_eq!(
            cut.chars().count(),
            db::MAX_CHAT_TURN_ERROR_CHARS,
            "cut, not refused"
        );

        // Bounds: mode, model, cost, limit; a duplicate id.
        let bad_mode = ChatTurnRecord {
            mode: "trade".into(),
            ..turn(9, fx.user.id)
        };
        assert!(matches!(
            s.record_chat_turn(&bad_mode).await,
            Err(DbError::Invalid { .. })
        ));
        let no_model = ChatTurnRecord {
            model: String::new(),
            ..turn(9, fx.user.id)
        };
        assert!(matches!(
            s.record_chat_turn(&no_model).await,
            Err(DbError::Bound { .. })
        ));
        let negative = ChatTurnRecord {
            cost_usd: Decimal::new(-1, 2),
            ..turn(9, fx.user.id)
        };
        assert!(matches!(
            s.record_chat_turn(&negative).await,
            Err(DbError::Invalid { .. })
        ));
        assert!(matches!(
            s.chat_turns(fx.user.id, 1001).await,
            Err(DbError::Invalid { .. })
        ));
        assert!(matches!(
            s.record_chat_turn(&first).await,
            Err(DbError::Constraint {
                kind: ConstraintKind::Unique,
                ..
            })
        ));
        assert_eq!(s.chat_turns(fx.user.id, 10).await.unwrap().len(), 2);
    }
}

crate::common::on_every_backend!(
    contract;
    registry_round_trip,
    leases_hand_each_due_deployment_to_one_runner,
    concurrent_claimers_split_the_due_deployments,
    leases_extend_count_and_mark_attempts,
    start_ticks_reads_and_marks_the_claimed_set,
    reflections_are_leased_one_runner_at_a_time,
    record_tick_writes_snapshot_fills_trades_and_links,
    record_tick_replay_is_a_no_op,
    record_tick_is_all_or_nothing,
    runner_state_commits_with_its_tick_and_never_moves_back,
    record_ticks_is_one_all_or_nothing_batch,
    record_ticks_writes_what_tick_by_tick_recording_would,
    a_planned_batch_stores_what_tick_by_tick_recording_stores,
    record_ticks_with_reflections_is_one_batch,
    ledger_reads_are_point_in_time,
    stop_and_target_round_trips_round_trip,
    decimals_and_times_round_trip_exactly,
    snapshots_read_back_in_order,
    notes_supersede_and_read_point_in_time,
    note_bounds_are_enforced,
    concurrent_reflections_leave_exactly_one_active,
    reflection_runs_record_failures_without_touching_the_note,
    facts_remember_forget_and_rank,
    facts_marked_referenced_move_forward_only,
    facts_keep_to_their_owner_and_audit_every_actor,
    chat_turns_record_and_list,
    events_in_a_window,
    news_dedupes_per_feed_and_reads_point_in_time,
    news_bounds_are_refused_before_anything_is_written,
    database_rejects_a_second_active_note,
    database_rejects_out_of_bounds_text,
    a_snapshots_model_error_round_trips_and_is_bounded,
);

/// PostgreSQL only: a claim skips a due row another transaction holds locked (a runner in the
/// middle of claiming or releasing it) instead of waiting for it — `FOR UPDATE SKIP LOCKED`.
#[tokio::test]
async fn postgres_claim_skips_rows_locked_by_another_transaction() {
    use db::test_support::{at, seed};
    use db::{LeaseStore, RegistryStore};
    use uuid::Uuid;

    let h = crate::common::postgres().await;
    let s = &h.store;
    let locked = seed(s).await.unwrap().deployment.id;
    let free = seed(s).await.unwrap().deployment.id;
    for id in [locked, free] {
        s.set_next_tick_at(id, Some(at(0))).await.unwrap();
    }
    let mut holder = s.pool().begin().await.unwrap();
    sqlx::query("SELECT id FROM deployments WHERE id = $1 FOR UPDATE")
        .bind(locked)
        .execute(&mut *holder)
        .await
        .unwrap();
    let claimed = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        s.claim_due_deployments("runner-a", at(1), chrono::Duration::minutes(5), 10),
    )
    .await
    .expect("the claim does not wait for the locked row")
    .unwrap();
    let ids: Vec<Uuid> = claimed.iter().map(|d| d.id).collect();
    assert_eq!(ids, vec![free]);
    holder.rollback().await.unwrap();
    // Once the lock is gone the row is claimable again.
    let ids: Vec<Uuid> = s
        .claim_due_deployments("runner-b", at(1), chrono::Duration::minutes(5), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(ids, vec![locked]);
}
