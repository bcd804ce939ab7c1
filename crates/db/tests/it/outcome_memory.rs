//! The outcome memory (seed 003) on both backends: outcomes and market snapshots recorded with
//! their tick, scored once, annotated; and its row-level security on PostgreSQL.

mod cases {
    use db::test_support::{
        Fixture, at, sample_open_trade, sample_outcome_rows, sample_snapshot, seed, tick_record,
    };
    use db::{
        AnnotationTarget, DbError, NewAnnotation, OutcomeWrites, RecordOutcome, Storage, TickRecord,
    };
    use outcomes::{FirstHit, Grade, OutcomeScore};
    use rust_decimal_macros::dec;
    use uuid::Uuid;

    fn tick_with_outcome(
        fx: &Fixture,
        minutes: i64,
    ) -> (TickRecord, outcomes::MarketSnapshot, outcomes::TradeOutcome) {
        let snapshot = sample_snapshot(fx.deployment.id, at(minutes));
        let (market, outcome) = sample_outcome_rows(&snapshot);
        let record = TickRecord {
            outcomes: OutcomeWrites {
                snapshots: vec![market.clone()],
                outcomes: vec![outcome.clone()],
                scores: vec![],
            },
            ..tick_record(snapshot)
        };
        (record, market, outcome)
    }

    /// The 1h mark only: (65,100.5 − 65,000) × 100 / 65,000 = +0.1546 %.
    fn one_hour() -> OutcomeScore {
        OutcomeScore {
            price_1h: Some(dec!(65100.5)),
            pnl_percent_1h: Some(dec!(0.1546)),
            ..OutcomeScore::default()
        }
    }

    fn full(scored_at: chrono::DateTime<chrono::Utc>) -> OutcomeScore {
        OutcomeScore {
            price_1h: Some(dec!(65100.5)),
            price_4h: Some(dec!(65900)),
            price_24h: Some(dec!(66000)),
            pnl_percent_1h: Some(dec!(0.1546)),
            pnl_percent_4h: Some(dec!(1.3846)),
            pnl_percent_24h: Some(dec!(1.5385)),
            hit_target: Some(true),
            hit_stop: Some(false),
            first_hit: Some(FirstHit::Target),
            max_favorable: Some(dec!(66600)),
            max_adverse: Some(dec!(64900)),
            outcome_grade: Some(Grade::A),
            scored_at: Some(scored_at),
            narrative: Some("BTC long - Grade A".into()),
        }
    }

    pub(super) async fn outcomes_record_with_their_tick_and_score_once<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        let (record, market, outcome) = tick_with_outcome(&fx, 0);
        s.record_tick(&record).await.unwrap();
        assert_eq!(s.outcomes(d, 10).await.unwrap(), vec![outcome.clone()]);
        // Indicators come back bit for bit.
        assert_eq!(s.market_snapshot(market.id).await.unwrap(), market);
        // A replayed tick writes nothing again.
        assert!(matches!(
            s.record_tick(&record).await.unwrap(),
            RecordOutcome::AlreadyRecorded { .. }
        ));
        assert_eq!(s.outcomes(d, 10).await.unwrap().len(), 1);

        // Due for scoring once its first mark (+1h) has passed.
        assert!(s.unscored_outcomes(at(59), 100).await.unwrap().is_empty());
        assert_eq!(
            s.unscored_outcomes(at(60), 100).await.unwrap(),
            vec![outcome.clone()]
        );
        // The 1h mark, then the full score; a full score is never changed again.
        assert_eq!(
            s.score_outcomes(&[(outcome.id, one_hour())]).await.unwrap(),
            1
        );
        assert_eq!(s.outcomes(d, 10).await.unwrap()[0].score, one_hour());
        assert_eq!(
            s.score_outcomes(&[(outcome.id, full(at(24 * 60)))])
                .await
                .unwrap(),
            1
        );
        let mut other = full(at(25 * 60));
        other.outcome_grade = Some(Grade::F);
        assert_eq!(
            s.score_outcomes(&[(outcome.id, other)]).await.unwrap(),
            0,
            "a scored outcome is final"
        );
        let stored = s.outcomes(d, 10).await.unwrap();
        assert_eq!(stored[0].score, full(at(24 * 60)));
        assert!(
            s.unscored_outcomes(at(48 * 60), 100)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(matches!(
            s.unscored_outcomes(at(0), 1001).await,
            Err(DbError::Invalid { .. })
        ));
        assert!(matches!(
            s.market_snapshot(Uuid::new_v4()).await,
            Err(DbError::NotFound { .. })
        ));
    }

    pub(super) async fn a_batch_scores_an_outcome_of_its_own_earlier_tick<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        let scoring = |minutes: i64, scores: Vec<(Uuid, OutcomeScore)>| TickRecord {
            outcomes: OutcomeWrites {
                scores,
                ..OutcomeWrites::default()
            },
            ..tick_record(sample_snapshot(d, at(minutes)))
        };
        // One batch: the outcome, its 1h score, then its full score.
        let (first, _, outcome) = tick_with_outcome(&fx, 0);
        let (second, _, other) = tick_with_outcome(&fx, 30);
        s.record_ticks(
            &db::PlannedTicks::new(vec![
                first,
                second,
                scoring(60, vec![(outcome.id, one_hour())]),
                scoring(24 * 60, vec![(outcome.id, full(at(24 * 60)))]),
            ]),
            &[],
        )
        .await
        .unwrap();
        let stored = s.outcomes(d, 10).await.unwrap();
        assert_eq!(stored.len(), 2);
        let find = |id: Uuid| stored.iter().find(|o| o.id == id).unwrap().score.clone();
        assert_eq!(
            find(outcome.id),
            full(at(24 * 60)),
            "the batch's last score"
        );
        assert!(find(other.id).is_empty());
        // A later batch scores the stored one; the full score of the first stays as it was.
        let mut late = full(at(25 * 60));
        late.outcome_grade = Some(Grade::F);
        s.record_ticks(
            &db::PlannedTicks::new(vec![scoring(
                25 * 60,
                vec![(other.id, one_hour()), (outcome.id, late)],
            )]),
            &[],
        )
        .await
        .unwrap();
        let stored = s.outcomes(d, 10).await.unwrap();
        let find = |id: Uuid| stored.iter().find(|o| o.id == id).unwrap().score.clone();
        assert_eq!(find(outcome.id), full(at(24 * 60)));
        assert_eq!(find(other.id), one_hour());
    }

    pub(super) async fn outcome_rows_of_another_tick_or_out_of_range_are_refused<S: Storage>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        // An outcome of another tick time: refused before anything is written.
        let (mut record, _, _) = tick_with_outcome(&fx, 0);
        record.outcomes.outcomes[0].tick_at = at(5);
        assert!(matches!(
            s.record_tick(&record).await,
            Err(DbError::Invalid {
                what: "tick outcome rows",
                ..
            })
        ));
        // A NaN indicator: refused, naming the column.
        let (mut record, _, _) = tick_with_outcome(&fx, 0);
        record.outcomes.snapshots[0].indicators.volume_ratio = Some(f64::NAN);
        match s.record_tick(&record).await {
            Err(DbError::Invalid { detail, .. }) => assert!(detail.contains("volume_ratio")),
            other => panic!("expected the NaN refused, got {other:?}"),
        }
        // An RSI above 100: the database's check refuses it, and the whole tick with it.
        let (mut record, _, _) = tick_with_outcome(&fx, 0);
        record.outcomes.snapshots[0].indicators.rsi_1h = Some(101.0);
        assert!(matches!(
            s.record_tick(&record).await,
            Err(DbError::Constraint { .. })
        ));
        assert!(s.outcomes(d, 10).await.unwrap().is_empty());
        assert!(s.list_snapshots(d, 10).await.unwrap().is_empty());
    }

    pub(super) async fn symbol_outcomes_read_a_half_open_window_of_one_or_every_deployment<
        S: Storage,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let other = seed(s).await.unwrap();
        let mut mine = Vec::new();
        for minutes in [0, 60, 120] {
            let (record, _, outcome) = tick_with_outcome(&fx, minutes);
            s.record_tick(&record).await.unwrap();
            mine.push(outcome);
        }
        let (record, _, theirs) = tick_with_outcome(&other, 60);
        s.record_tick(&record).await.unwrap();
        let d = Some(fx.deployment.id);
        mine.reverse();

        // [from, until): the tick at `from` is in, the one at `until` out; newest first.
        assert_eq!(
            s.symbol_outcomes(d, "BTC", at(0), at(120), 10)
                .await
                .unwrap(),
            mine[1..].to_vec()
        );
        assert_eq!(
            s.symbol_outcomes(d, "BTC", at(1), at(121), 10)
                .await
                .unwrap(),
            mine[..2].to_vec()
        );
        assert_eq!(
            s.symbol_outcomes(d, "BTC", at(0), at(121), 2)
                .await
                .unwrap(),
            mine[..2].to_vec(),
            "at most `limit`, the newest"
        );
        // One microsecond (the stores' precision) either side of a tick decides.
        let us = chrono::Duration::microseconds(1);
        assert_eq!(
            s.symbol_outcomes(d, "BTC", at(60) - us, at(60) + us, 10)
                .await
                .unwrap(),
            vec![mine[1].clone()]
        );
        assert!(
            s.symbol_outcomes(d, "BTC", at(60) + us, at(120), 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Every deployment: the other deployment's outcome at 60 too (ties by id).
        let all = s
            .symbol_outcomes(None, "BTC", at(60), at(90), 10)
            .await
            .unwrap();
        let mut expected = vec![mine[1].clone(), theirs];
        expected.sort_by_key(|o| o.id);
        assert_eq!(all, expected);
        assert!(
            s.symbol_outcomes(None, "ETH", at(-1), at(121), 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(matches!(
            s.symbol_outcomes(d, "BTC", at(0), at(1), 1001).await,
            Err(DbError::Invalid { .. })
        ));
    }

    pub(super) async fn annotations_attach_to_an_outcome_or_a_ledger_row<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        let (mut record, _, outcome) = tick_with_outcome(&fx, 0);
        let trade = sample_open_trade(&fx, at(0));
        record.trades = vec![trade.clone()];
        s.record_tick(&record).await.unwrap();

        let note = |target, text: &str, tags: &[&str], minutes| NewAnnotation {
            id: Uuid::new_v4(),
            target,
            annotation: text.into(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            created_at: at(minutes),
        };
        let on_outcome = s
            .annotate(&note(
                AnnotationTarget::Outcome(outcome.id),
                "News-driven pump, ignore",
                &["news", "ignore"],
                10,
            ))
            .await
            .unwrap();
        assert_eq!(on_outcome.deployment_id, d);
        let on_trade = s
            .annotate(&note(
                AnnotationTarget::Trade(trade.id),
                "Stop too tight",
                &[],
                20,
            ))
            .await
            .unwrap();
        assert_eq!(
            s.annotations(d, 10).await.unwrap(),
            vec![on_trade, on_outcome],
            "newest first, tags in order"
        );

        // Bounds, checked before the database.
        let bound = |r: Result<_, DbError>, field: &str| match r {
            Err(DbError::Bound { field: f, .. }) => assert_eq!(f, field),
            other => panic!("expected a bound on {field}, got {other:?}"),
        };
        let target = AnnotationTarget::Outcome(outcome.id);
        bound(s.annotate(&note(target, "", &[], 30)).await, "annotation");
        bound(
            s.annotate(&note(target, &"x".repeat(2001), &[], 30)).await,
            "annotation",
        );
        bound(
            s.annotate(&note(target, "ok", &["t"; 17], 30)).await,
            "annotation tags",
        );
        bound(
            s.annotate(&note(target, "ok", &[""], 30)).await,
            "annotation tag",
        );
        assert!(matches!(
            s.annotate(&note(
                AnnotationTarget::Outcome(Uuid::new_v4()),
                "ok",
                &[],
                30
            ))
            .await,
            Err(DbError::NotFound { .. })
        ));
        assert_eq!(s.annotations(d, 10).await.unwrap().len(), 2);
    }

    pub(super) async fn outcome_ids_resolve_by_prefix_within_their_scope<S: Storage>(s: &S) {
        use db::MemoryScope;
        let fx = seed(s).await.unwrap();
        let other = seed(s).await.unwrap();
        // Ids sharing a random 8-digit prefix `p` (another run's rows never match), one of them
        // sharing only its first 7 digits, and the last UUID of the range `p…`.
        let base = Uuid::new_v4().simple().to_string();
        let p = &base[..8];
        let last = if p.ends_with('0') { '1' } else { '0' };
        let p7 = format!("{}{last}", &base[..7]);
        let id = |text: String| Uuid::parse_str(&text).unwrap();
        let first = id(format!("{p}-0000-4000-8000-000000000001"));
        let second = id(format!("{p}-0000-4000-8000-000000000002"));
        let top = id(format!("{p}-ffff-ffff-ffff-ffffffffffff"));
        let near = id(format!("{p7}-0000-4000-8000-000000000001"));
        let theirs = id(format!("{p}-0000-4000-8000-000000000003"));
        for (f, outcome_id, minutes) in [
            (&fx, first, 0),
            (&fx, second, 60),
            (&fx, top, 120),
            (&fx, near, 180),
            (&other, theirs, 0),
        ] {
            let (mut record, _, _) = tick_with_outcome(f, minutes);
            record.outcomes.outcomes[0].id = outcome_id;
            s.record_tick(&record).await.unwrap();
        }
        let mine = MemoryScope::Deployment(fx.deployment.id);
        let resolve =
            async |scope, prefix: &str, limit| s.outcome_ids_by_prefix(scope, prefix, limit).await;

        assert_eq!(
            resolve(mine, p, 10).await.unwrap(),
            vec![first, second, top],
            "the scope's outcomes of the prefix, in id order, the range's ends included"
        );
        assert_eq!(resolve(mine, p, 2).await.unwrap(), vec![first, second]);
        let upper = format!("{}-0000-4000-8000-00000000000", p.to_uppercase());
        assert_eq!(
            resolve(mine, &upper, 10).await.unwrap(),
            vec![first, second],
            "any case, hyphens ignored"
        );
        assert_eq!(
            resolve(mine, &first.simple().to_string(), 10)
                .await
                .unwrap(),
            vec![first]
        );
        assert_eq!(resolve(mine, &p7, 10).await.unwrap(), vec![near]);
        assert_eq!(
            resolve(MemoryScope::User(fx.user.id), p, 10).await.unwrap(),
            vec![first, second, top]
        );
        // Another user's outcome of the same prefix is never listed, and is found in its own
        // scope.
        assert_eq!(
            resolve(mine, &theirs.to_string(), 10).await.unwrap(),
            Vec::<Uuid>::new()
        );
        assert_eq!(
            resolve(MemoryScope::User(other.user.id), p, 10)
                .await
                .unwrap(),
            vec![theirs]
        );
        assert_eq!(
            resolve(MemoryScope::Deployment(other.deployment.id), &p7, 10)
                .await
                .unwrap(),
            Vec::<Uuid>::new()
        );

        for (prefix, limit) in [
            ("", 10),
            ("--", 10),
            ("abcdefg1", 10),
            ("0123456789abcdef0123456789abcdef0", 10),
            (p, 0),
            (p, 1001),
        ] {
            assert!(
                matches!(
                    resolve(mine, prefix, limit).await,
                    Err(DbError::Invalid { .. })
                ),
                "{prefix:?} / {limit}"
            );
        }
    }
}

crate::common::on_every_backend!(
    outcome_memory;
    outcomes_record_with_their_tick_and_score_once,
    a_batch_scores_an_outcome_of_its_own_earlier_tick,
    outcome_rows_of_another_tick_or_out_of_range_are_refused,
    annotations_attach_to_an_outcome_or_a_ledger_row,
    symbol_outcomes_read_a_half_open_window_of_one_or_every_deployment,
    outcome_ids_resolve_by_prefix_within_their_scope,
);

/// PostgreSQL: the owner of a deployment reads its outcome rows and no one else's, and cannot
/// write any (the runner does, as the service role).
#[tokio::test]
async fn postgres_owners_read_only_their_own_outcome_rows() {
    use db::test_support::{at, sample_outcome_rows, sample_snapshot, seed, tick_record};
    use db::{AnnotationTarget, NewAnnotation, OutcomeStore, OutcomeWrites, TickRecord, TickStore};
    use sqlx::Row;
    use uuid::Uuid;

    let h = crate::common::postgres().await;
    let pool = h.store.pool();
    let mut owners = Vec::new();
    for _ in 0..2 {
        let fx = seed(&h.store).await.unwrap();
        let snapshot = sample_snapshot(fx.deployment.id, at(0));
        let (market, outcome) = sample_outcome_rows(&snapshot);
        h.store
            .record_tick(&TickRecord {
                outcomes: OutcomeWrites {
                    snapshots: vec![market.clone()],
                    outcomes: vec![outcome.clone()],
                    scores: vec![],
                },
                ..tick_record(snapshot)
            })
            .await
            .unwrap();
        h.store
            .annotate(&NewAnnotation {
                id: Uuid::new_v4(),
                target: AnnotationTarget::Outcome(outcome.id),
                annotation: "ignore".into(),
                tags: vec!["news".into()],
                created_at: at(5),
            })
            .await
            .unwrap();
        owners.push((fx.user.id, fx.deployment.id));
    }
    let as_user =
        async |user: Uuid, sql: &str| -> Result<Vec<sqlx::postgres::PgRow>, sqlx::Error> {
            let mut tx = pool.begin().await?;
            sqlx::query("SELECT set_config('request.jwt.claims', $1, true)")
                .bind(serde_json::json!({"sub": user, "role": "authenticated"}).to_string())
                .execute(&mut *tx)
                .await?;
            sqlx::query("SET LOCAL ROLE authenticated")
                .execute(&mut *tx)
                .await?;
            let rows = sqlx::query(sql).fetch_all(&mut *tx).await?;
            tx.commit().await?;
            Ok(rows)
        };
    for (user, deployment) in &owners {
        for table in ["market_snapshots", "trade_outcomes", "trade_annotations"] {
            let rows = as_user(*user, &format!("SELECT deployment_id FROM {table}"))
                .await
                .unwrap();
            let seen: Vec<Uuid> = rows.iter().map(|r| r.get("deployment_id")).collect();
            assert_eq!(seen, vec![*deployment], "{table}: only the owner's rows");
        }
        for sql in [
            "UPDATE trade_outcomes SET outcome_grade = 'A'".to_owned(),
            "DELETE FROM market_snapshots".to_owned(),
            format!(
                "INSERT INTO trade_annotations (id, deployment_id, trade_id, annotation, created_at) \
                 VALUES ('{}', '{deployment}', '{}', 'x', now())",
                Uuid::new_v4(),
                Uuid::new_v4()
            ),
        ] {
            match as_user(*user, &sql).await {
                Err(sqlx::Error::Database(e)) => {
                    assert_eq!(e.code().as_deref(), Some("42501"), "{sql}: {e}")
                }
                other => panic!("{sql}: expected permission denied, got {other:?}"),
            }
        }
    }
}
