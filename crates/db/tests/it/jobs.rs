//! Backtest jobs on both backends: a submit stores its bars once and queues its jobs, all or
//! nothing; the user's limits refuse at submit; jobs are claimed oldest first, by one claimer
//! each, and a job whose lease expired is taken over; a run reports progress, finishes with
//! its summary and report, fails, is released or cancelled; a run started over deletes what an
//! earlier attempt recorded. Registering a skill version twice (at once, on PostgreSQL) is
//! idempotent, another body is refused. On PostgreSQL a user submits, reads and cancels only
//! their own jobs and claims none.

pub(crate) mod cases {
    use chrono::Duration;
    use db::test_support::{at, sample_bars, sample_job, sample_skill_version, seed};
    use db::{DbError, JobFilter, JobLimits, JobProgress, JobResult, JobStatus, NewBars, Storage};
    use rust_decimal::Decimal;
    use uuid::Uuid;

    use crate::common::RawSql;

    const LEASE: i64 = 30;

    fn lease() -> Duration {
        Duration::seconds(LEASE)
    }

    fn all(user: Uuid) -> JobFilter {
        JobFilter {
            user_id: Some(user),
            batch_id: None,
            limit: 100,
        }
    }

    pub(crate) async fn a_submit_stores_its_bars_once_and_queues_its_jobs<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let user = fx.user.id;
        let bars = sample_bars(48, 0);
        let batch = Uuid::new_v4();
        let mut first = sample_job(user, &bars, 0);
        first.batch_id = Some(batch);
        first.label = Some("window 1".into());
        let mut second = sample_job(user, &bars, 1);
        second.batch_id = Some(batch);
        let done = s
            .submit_jobs(
                &[first.clone(), second.clone()],
                std::slice::from_ref(&bars),
                JobLimits::default(),
            )
            .await
            .unwrap();
        assert_eq!((done.jobs, done.bars_stored), (2, 1));
        // The same bars again: nothing new stored.
        let third = sample_job(user, &bars, 2);
        let again = s
            .submit_jobs(
                std::slice::from_ref(&third),
                std::slice::from_ref(&bars),
                JobLimits::default(),
            )
            .await
            .unwrap();
        assert_eq!((again.jobs, again.bars_stored), (1, 0));
        assert_eq!(s.count("SELECT count(*) FROM backtest_bars").await, 1);
        // And without the bytes: the stored file is referred to by its hash.
        s.submit_jobs(&[sample_job(user, &bars, 3)], &[], JobLimits::default())
            .await
            .unwrap();

        let job = s.job(first.id).await.unwrap();
        assert_eq!(job.spec, first.spec);
        assert_eq!(job.status, JobStatus::Queued);
        assert_eq!(job.label.as_deref(), Some("window 1"));
        assert_eq!((job.attempts, job.lease_owner.as_deref()), (0, None));
        assert_eq!(job.progress, JobProgress::default());
        assert!(!job.has_report && job.result.is_none());
        let stored = s.job_bars(user, &bars.sha256).await.unwrap();
        assert_eq!(stored.bytes, bars.bytes);
        assert_eq!(stored.format, bars.format);

        let listed = s.jobs(&all(user)).await.unwrap();
        assert_eq!(listed.len(), 4);
        assert_eq!(listed[3].id, first.id, "newest first");
        let in_batch = s
            .jobs(&JobFilter {
                user_id: None,
                batch_id: Some(batch),
                limit: 100,
            })
            .await
            .unwrap();
        assert_eq!(in_batch.len(), 2);
        assert_eq!(s.open_jobs(Some(batch)).await.unwrap(), 2);
        assert_eq!(s.open_jobs(None).await.unwrap(), 4);

        // Bars nobody sent are refused, and nothing of that submit is written.
        let unknown = sample_bars(10, 9);
        let orphan = sample_job(user, &unknown, 5);
        let err = s
            .submit_jobs(std::slice::from_ref(&orphan), &[], JobLimits::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, DbError::Invalid { detail, .. } if detail.contains(&unknown.sha256)),
            "{err}"
        );
        assert!(matches!(
            s.job(orphan.id).await,
            Err(DbError::NotFound { .. })
        ));
        // A file whose bytes are not what its hash says is refused.
        let forged = NewBars {
            bytes: b"other bytes".to_vec(),
            ..unknown.clone()
        };
        let err = s
            .submit_jobs(&[orphan], &[forged], JobLimits::default())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("do not hash"), "{err}");
        // A job id taken is a unique violation.
        let err = s
            .submit_jobs(&[first], &[], JobLimits::default())
            .await
            .unwrap_err();
        assert!(err.is_unique_violation(), "{err}");
    }

    pub(crate) async fn limits_refuse_at_submit<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let user = fx.user.id;
        let bars = sample_bars(24, 0);
        let limits = JobLimits {
            max_open_jobs: 2,
            max_open_cost_usd: Decimal::new(5, 0),
        };
        let jobs: Vec<_> = (0..3).map(|i| sample_job(user, &bars, i)).collect();
        let err = s
            .submit_jobs(&jobs, std::slice::from_ref(&bars), limits)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, DbError::Limit { detail, .. }
                if detail.contains("has 0 jobs queued or running and submits 3 more; at most 2")),
            "{err}"
        );
        assert_eq!(s.count("SELECT count(*) FROM backtest_jobs").await, 0);
        assert_eq!(
            s.count("SELECT count(*) FROM backtest_bars").await,
            0,
            "all or nothing"
        );
        s.submit_jobs(&jobs[..2], std::slice::from_ref(&bars), limits)
            .await
            .unwrap();
        let err = s.submit_jobs(&jobs[2..], &[], limits).await.unwrap_err();
        assert!(matches!(err, DbError::Limit { .. }), "{err}");
        // A finished job makes room.
        s.cancel_job(user, jobs[0].id, at(10)).await.unwrap();
        s.submit_jobs(&jobs[2..], &[], limits).await.unwrap();

        // The cost cap: the open jobs' cost limits add up to at most $5.
        let other = db::test_support::sample_user();
        s.upsert_user(&other).await.unwrap();
        let costly = |minutes, usd| db::NewJob {
            cost_limit_usd: Decimal::new(usd, 0),
            ..sample_job(other.id, &bars, minutes)
        };
        s.submit_jobs(&[costly(0, 3)], std::slice::from_ref(&bars), limits)
            .await
            .unwrap();
        let err = s
            .submit_jobs(&[costly(1, 3)], &[], limits)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, DbError::Limit { detail, .. }
                if detail.contains("up to $3 and these up to $3; together at most $5")),
            "{err}"
        );
        s.submit_jobs(&[costly(2, 2)], &[], limits).await.unwrap();
    }

    pub(crate) async fn jobs_are_claimed_oldest_first_and_taken_over_when_their_lease_expires<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let bars = sample_bars(24, 0);
        let jobs: Vec<_> = (0..3)
            .map(|i| sample_job(fx.user.id, &bars, 2 - i))
            .collect();
        s.submit_jobs(&jobs, std::slice::from_ref(&bars), JobLimits::default())
            .await
            .unwrap();
        let now = at(60);
        let a = s.claim_jobs("worker-a", now, lease(), 2).await.unwrap();
        // Submitted at minutes 2, 1, 0: the oldest first.
        assert_eq!(
            a.iter().map(|j| j.id).collect::<Vec<_>>(),
            vec![jobs[2].id, jobs[1].id]
        );
        assert!(a.iter().all(|j| j.status == JobStatus::Running
            && j.attempts == 1
            && j.lease_owner.as_deref() == Some("worker-a")
            && j.started_at == Some(now)));
        let b = s.claim_jobs("worker-b", now, lease(), 5).await.unwrap();
        assert_eq!(b.iter().map(|j| j.id).collect::<Vec<_>>(), vec![jobs[0].id]);
        assert!(
            s.claim_jobs("worker-c", now, lease(), 5)
                .await
                .unwrap()
                .is_empty()
        );

        // B heartbeats, A does not: once A's lease expired, C takes A's jobs over.
        let later = now + Duration::seconds(LEASE - 1);
        assert!(
            s.heartbeat_job(
                jobs[0].id,
                "worker-b",
                later,
                later + lease(),
                JobProgress::default()
            )
            .await
            .unwrap()
        );
        assert!(
            !s.heartbeat_job(
                jobs[0].id,
                "worker-a",
                later,
                later + lease(),
                JobProgress::default()
            )
            .await
            .unwrap(),
            "not A's"
        );
        let expired = now + lease();
        let c = s.claim_jobs("worker-c", expired, lease(), 5).await.unwrap();
        assert_eq!(
            c.iter().map(|j| (j.id, j.attempts)).collect::<Vec<_>>(),
            vec![(jobs[2].id, 2), (jobs[1].id, 2)]
        );
        assert!(
            c.iter().all(|j| j.started_at == Some(now)),
            "first start kept"
        );
        // A comes back: its lease is gone, nothing it does counts.
        let result = JobResult {
            summary: serde_json::json!({"ticks": 1}),
            report_html: None,
            progress: JobProgress::default(),
        };
        assert!(
            !s.finish_job(jobs[2].id, "worker-a", expired, &result)
                .await
                .unwrap()
        );
        assert!(
            !s.fail_job(jobs[2].id, "worker-a", expired, "late")
                .await
                .unwrap()
        );
        assert!(!s.release_job(jobs[2].id, "worker-a").await.unwrap());
        assert!(
            !s.begin_job_run(jobs[2].id, "worker-a", Uuid::new_v4(), 10)
                .await
                .unwrap()
        );
        assert!(matches!(
            s.claim_jobs("", now, lease(), 1).await,
            Err(DbError::Bound { .. })
        ));
        assert!(matches!(
            s.claim_jobs("w", now, Duration::zero(), 1).await,
            Err(DbError::Invalid { .. })
        ));
    }

    pub(crate) async fn a_run_reports_progress_and_ends_done_failed_released_or_cancelled<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let user = fx.user.id;
        let bars = sample_bars(24, 0);
        let jobs: Vec<_> = (0..4).map(|i| sample_job(user, &bars, i)).collect();
        s.submit_jobs(&jobs, std::slice::from_ref(&bars), JobLimits::default())
            .await
            .unwrap();
        let now = at(60);
        let claimed = s.claim_jobs("w", now, lease(), 3).await.unwrap();
        assert_eq!(claimed.len(), 3);
        let deployment = Uuid::new_v4();
        assert!(
            s.begin_job_run(jobs[0].id, "w", deployment, 120)
                .await
                .unwrap()
        );
        let progress = JobProgress {
            ticks_done: 40,
            ticks_total: Some(120),
            cost_usd: Decimal::new(125, 4),
        };
        let beat = now + Duration::seconds(10);
        assert!(
            s.heartbeat_job(jobs[0].id, "w", beat, beat + lease(), progress)
                .await
                .unwrap()
        );
        let running = s.job(jobs[0].id).await.unwrap();
        assert_eq!(running.progress, progress);
        assert_eq!(running.heartbeat_at, Some(beat));
        assert_eq!(running.lease_expires_at, Some(beat + lease()));

        let result = JobResult {
            summary: serde_json::json!({"ticks": 120, "trades": 3}),
            report_html: Some("<!doctype html><p>report</p>".into()),
            progress: JobProgress {
                ticks_done: 120,
                ..progress
            },
        };
        assert!(
            s.finish_job(jobs[0].id, "w", at(70), &result)
                .await
                .unwrap()
        );
        let done = s.job(jobs[0].id).await.unwrap();
        assert_eq!(done.status, JobStatus::Done);
        assert_eq!(done.result, Some(result.summary.clone()));
        assert_eq!(done.progress.ticks_done, 120);
        assert_eq!((done.finished_at, done.lease_owner), (Some(at(70)), None));
        assert!(done.has_report);
        assert_eq!(
            s.job_report(jobs[0].id).await.unwrap().as_deref(),
            Some("<!doctype html><p>report</p>")
        );
        assert_eq!(s.job_report(jobs[1].id).await.unwrap(), None);
        assert!(matches!(
            s.job_report(Uuid::new_v4()).await,
            Err(DbError::NotFound { .. })
        ));

        let long = "x".repeat(db::MAX_JOB_ERROR_CHARS + 10);
        assert!(s.fail_job(jobs[1].id, "w", at(71), &long).await.unwrap());
        let failed = s.job(jobs[1].id).await.unwrap();
        assert_eq!(failed.status, JobStatus::Failed);
        assert_eq!(
            failed.error.map(|e| e.chars().count()),
            Some(db::MAX_JOB_ERROR_CHARS)
        );

        assert!(s.release_job(jobs[2].id, "w").await.unwrap());
        let released = s.job(jobs[2].id).await.unwrap();
        assert_eq!(
            (released.status, released.lease_owner),
            (JobStatus::Queued, None)
        );
        assert_eq!(s.open_jobs(None).await.unwrap(), 2);

        // Cancelled: queued or running; a finished job stays as it is; another user's is not
        // found.
        let cancelled = s.cancel_job(user, jobs[3].id, at(72)).await.unwrap();
        assert_eq!(cancelled.status, JobStatus::Cancelled);
        assert!(matches!(
            s.cancel_job(user, jobs[0].id, at(72)).await,
            Err(DbError::Conflict { .. })
        ));
        assert!(matches!(
            s.cancel_job(Uuid::new_v4(), jobs[2].id, at(72)).await,
            Err(DbError::NotFound { .. })
        ));
        assert_eq!(s.open_jobs(None).await.unwrap(), 1);
        assert!(matches!(
            s.finish_job(
                jobs[2].id,
                "w",
                at(73),
                &JobResult {
                    summary: serde_json::json!([1]),
                    ..result
                }
            )
            .await,
            Err(DbError::Invalid { .. })
        ));
    }

    pub(crate) async fn a_run_started_over_deletes_what_an_earlier_attempt_recorded<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let bars = sample_bars(24, 0);
        let jobs: Vec<_> = (0..2).map(|i| sample_job(fx.user.id, &bars, i)).collect();
        s.submit_jobs(&jobs, std::slice::from_ref(&bars), JobLimits::default())
            .await
            .unwrap();
        s.claim_jobs("w", at(60), lease(), 2).await.unwrap();
        // The fixture's deployment stands for the run an earlier attempt recorded.
        let d = fx.deployment.id;
        s.record_tick(&db::test_support::tick_record(
            db::test_support::sample_snapshot(d, at(1)),
        ))
        .await
        .unwrap();
        assert!(s.begin_job_run(jobs[0].id, "w", d, 10).await.unwrap());
        assert!(matches!(
            s.get_deployment(d).await,
            Err(DbError::NotFound { .. })
        ));
        assert_eq!(
            s.count("SELECT count(*) FROM decision_snapshots").await,
            0,
            "its ticks went with it"
        );
        let started = s.job(jobs[0].id).await.unwrap();
        assert_eq!(started.progress.ticks_total, Some(10));
        assert_eq!(started.deployment_id, Some(d));
        // A deployment a job records into is never deleted by another job's run.
        s.create_deployment(&fx.deployment).await.unwrap();
        assert!(s.begin_job_run(jobs[1].id, "w", d, 10).await.unwrap());
        assert!(s.get_deployment(d).await.is_ok());
    }

    pub(crate) async fn registering_a_skill_version_twice_is_idempotent<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        s.ensure_skill(&fx.skill).await.unwrap();
        let renamed = db::SkillRecord {
            name: "renamed later".into(),
            ..fx.skill.clone()
        };
        s.ensure_skill(&renamed).await.unwrap();
        assert_eq!(s.get_skill(fx.skill.id).await.unwrap().name, fx.skill.name);
        s.ensure_skill_version(&fx.version).await.unwrap();
        let v2 = sample_skill_version(fx.skill.id, 2);
        s.ensure_skill_version(&v2).await.unwrap();
        s.ensure_skill_version(&v2).await.unwrap();
        assert_eq!(s.latest_skill_version(fx.skill.id).await.unwrap(), v2);

        let edited = db::SkillVersion {
            body: serde_json::json!({"name": "BTC breakout", "edited": true}),
            ..v2.clone()
        };
        let err = s.ensure_skill_version(&edited).await.unwrap_err();
        assert!(
            matches!(&err, DbError::Conflict { detail, .. }
                if detail.contains("version 2 is stored with a different body")
                    && detail.contains("bump `version`")),
            "{err}"
        );
        assert_eq!(s.get_skill_version(fx.skill.id, 2).await.unwrap(), v2);
        let theirs = db::SkillRecord {
            user_id: Uuid::new_v4(),
            ..fx.skill.clone()
        };
        assert!(matches!(
            s.ensure_skill(&theirs).await,
            Err(DbError::Conflict { .. })
        ));
    }
}

crate::common::on_every_backend!(
    jobs;
    a_submit_stores_its_bars_once_and_queues_its_jobs,
    limits_refuse_at_submit,
    jobs_are_claimed_oldest_first_and_taken_over_when_their_lease_expires,
    a_run_reports_progress_and_ends_done_failed_released_or_cancelled,
    a_run_started_over_deletes_what_an_earlier_attempt_recorded,
    registering_a_skill_version_twice_is_idempotent,
);

/// Many claimers at once on PostgreSQL (`FOR UPDATE SKIP LOCKED`): every job goes to exactly
/// one of them.
#[tokio::test]
async fn concurrent_claimers_never_share_a_job() {
    use db::test_support::{at, sample_bars, sample_job, seed};
    use db::{JobLimits, JobQueue, JobStore};
    let h = crate::common::postgres().await;
    let fx = seed(&h.store).await.unwrap();
    let bars = sample_bars(24, 0);
    let jobs: Vec<_> = (0..40).map(|i| sample_job(fx.user.id, &bars, i)).collect();
    h.store
        .submit_jobs(&jobs, std::slice::from_ref(&bars), JobLimits::default())
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for w in 0..6 {
        let store = h.store.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim_jobs(&format!("w{w}"), at(100), chrono::Duration::seconds(30), 3)
                    .await
                    .unwrap();
                if got.is_empty() {
                    break mine;
                }
                mine.extend(got.into_iter().map(|j| j.id));
            }
        }));
    }
    let mut claimed = Vec::new();
    for t in tasks {
        claimed.extend(t.await.unwrap());
    }
    claimed.sort();
    let mut want: Vec<_> = jobs.iter().map(|j| j.id).collect();
    want.sort();
    assert_eq!(claimed, want, "each job claimed exactly once");
}

/// Two registrations of one skill version at once on PostgreSQL — what two `sim-worker run`s of
/// the same skill started together do — never collide on `skill_versions_pkey` (or `skills`'):
/// both succeed, round after round.
#[tokio::test]
async fn concurrent_registrations_of_one_skill_never_collide() {
    use db::RegistryStore;
    use db::test_support::{sample_skill, sample_skill_version, sample_user};
    let h = crate::common::postgres().await;
    let user = sample_user();
    h.store.upsert_user(&user).await.unwrap();
    for _ in 0..25 {
        let skill = sample_skill(user.id);
        let version = sample_skill_version(skill.id, 1);
        let register = |store: db::PgStore, skill: db::SkillRecord, version: db::SkillVersion| {
            tokio::spawn(async move {
                store
                    .upsert_user(&db::User {
                        id: skill.user_id,
                        email: None,
                    })
                    .await?;
                store.ensure_skill(&skill).await?;
                store.ensure_skill_version(&version).await
            })
        };
        let a = register(h.store.clone(), skill.clone(), version.clone());
        let b = register(h.store.clone(), skill.clone(), version.clone());
        a.await.unwrap().unwrap();
        b.await.unwrap().unwrap();
    }
}

/// Row-level security: a user submits jobs of their own only, reads and cancels their own,
/// never another user's, and has no part in a worker's writes.
#[tokio::test]
async fn a_user_submits_reads_and_cancels_only_their_own_jobs() {
    use db::test_support::{at, sample_bars, sample_job, seed};
    use db::{DbError, JobFilter, JobLimits, JobStore, RegistryStore};
    let h = crate::common::postgres().await;
    let fx = seed(&h.store).await.unwrap();
    let other = db::test_support::sample_user();
    h.store.upsert_user(&other).await.unwrap();
    let me = h.store.as_user(fx.user.id);
    let them = h.store.as_user(other.id);
    let bars = sample_bars(24, 0);
    let job = sample_job(fx.user.id, &bars, 0);
    me.submit_jobs(
        std::slice::from_ref(&job),
        std::slice::from_ref(&bars),
        JobLimits::default(),
    )
    .await
    .unwrap();
    assert_eq!(me.job(job.id).await.unwrap().id, job.id);
    let filter = JobFilter {
        user_id: None,
        batch_id: None,
        limit: 10,
    };
    assert_eq!(me.jobs(&filter).await.unwrap().len(), 1);
    assert!(them.jobs(&filter).await.unwrap().is_empty());
    assert!(matches!(
        them.job(job.id).await,
        Err(DbError::NotFound { .. })
    ));
    assert!(matches!(
        them.job_bars(fx.user.id, &bars.sha256).await,
        Err(DbError::NotFound { .. })
    ));
    assert!(matches!(
        them.cancel_job(fx.user.id, job.id, at(5)).await,
        Err(DbError::NotFound { .. })
    ));
    // Submitting for someone else is refused by the policy; so is referring to their bars.
    assert!(
        them.submit_jobs(
            &[sample_job(fx.user.id, &bars, 1)],
            &[],
            JobLimits::default()
        )
        .await
        .is_err()
    );
    let err = them
        .submit_jobs(&[sample_job(other.id, &bars, 1)], &[], JobLimits::default())
        .await
        .unwrap_err();
    assert!(matches!(err, DbError::Invalid { .. }), "{err}");
    // A worker's writes are not the user's.
    let mut tx = me.begin().await.unwrap();
    let claimed = sqlx::query(
        "UPDATE backtest_jobs SET status = 'running', lease_owner = 'me', attempts = 1",
    )
    .execute(&mut *tx)
    .await;
    assert!(claimed.is_err(), "a user claims no job");
    drop(tx);
    let mut tx = me.begin().await.unwrap();
    let done =
        sqlx::query("UPDATE backtest_jobs SET status = 'done', result = '{}', finished_at = now()")
            .execute(&mut *tx)
            .await;
    assert!(done.is_err(), "a user finishes no job");
    drop(tx);
    let cancelled = me.cancel_job(fx.user.id, job.id, at(5)).await.unwrap();
    assert_eq!(cancelled.status, db::JobStatus::Cancelled);
}
