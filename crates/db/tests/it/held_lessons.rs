//! Typed lessons and held bullets on both backends: a note's observations and held bullets
//! read back as written (directly and through a backtest's batch write), and a person's review
//! of a held bullet keeps the point-in-time contract (an acceptance is a new note in force from
//! the review; a note's text never changes).

mod cases {
    use chrono::Duration;
    use db::test_support::{Fixture, at, lint, sample_note};
    use db::{
        DbError, HeldDecision, HeldReview, HeldStatus, NewNote, NoteScope, ReflectionRun,
        RunOutcome, Storage, accepted_note_id, held_lesson_id,
    };
    use types::{
        DroppedObservation, Finding, HeldLesson, LessonDirection, LessonSetup, NoteStatus,
        Observation, Side,
    };
    use uuid::Uuid;

    use crate::common::RawSql;

    fn observation(finding: Finding, note: Option<&str>) -> Observation {
        Observation {
            setup: LessonSetup {
                symbol: Some("BTC".into()),
                side: Some(Side::Long),
                regime: None,
            },
            finding,
            direction: LessonDirection::Caution,
            note: note.map(str::to_owned),
        }
    }

    fn held(text: &str) -> HeldLesson {
        HeldLesson {
            text: text.into(),
            reasons: vec![
                "names a price level".into(),
                format!("{} characters", text.len()),
            ],
        }
    }

    /// A note of `fx` at `minutes` with typed observations, one dropped, and `bullets` held.
    fn typed_note(fx: &Fixture, minutes: i64, lessons: &str, bullets: &[&str]) -> NewNote {
        let mut note = sample_note(fx, at(minutes), lessons);
        note.content.observations = vec![
            observation(Finding::Loses, Some("entries chased the move")),
            observation(Finding::SmallSample, None),
        ];
        note.content.dropped = vec![DroppedObservation {
            observation: observation(Finding::Wins, None),
            reason: "wins: the setup's net PnL is -$1.20".into(),
        }];
        note.content.held = bullets.iter().map(|b| held(b)).collect();
        note
    }

    /// A review without a reason.
    pub(crate) fn review(
        decision: HeldDecision,
        by: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> HeldReview {
        HeldReview {
            decision,
            by: by.into(),
            reason: None,
            at,
        }
    }

    fn conflict(result: Result<impl std::fmt::Debug, DbError>, needle: &str) {
        match result {
            Err(DbError::Conflict { detail, .. }) => {
                assert!(detail.contains(needle), "{needle:?} not in {detail:?}")
            }
            other => panic!("expected Conflict ({needle}), got {other:?}"),
        }
    }

    fn invalid(result: Result<impl std::fmt::Debug, DbError>, needle: &str) {
        match result {
            Err(DbError::Invalid { detail, .. }) => {
                assert!(detail.contains(needle), "{needle:?} not in {detail:?}")
            }
            other => panic!("expected Invalid ({needle}), got {other:?}"),
        }
    }

    pub(super) async fn typed_lessons_and_held_bullets_read_back_as_written<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = db::test_support::seed(s).await.unwrap();
        let scope = NoteScope::Deployment(fx.deployment.id);
        let plain = s
            .insert_note(&sample_note(&fx, at(5), "- plain bullet"))
            .await
            .unwrap();
        let new = typed_note(
            &fx,
            10,
            "- rendered bullet",
            &["- buy at 65k", "- trust me"],
        );
        let stored = s.insert_note(&new).await.unwrap();
        assert_eq!(stored.content, new.content);
        let read = s.get_note(new.id).await.unwrap();
        assert_eq!(read, stored, "a note reads back equal to what was inserted");
        assert_eq!(s.active_note(scope, at(10)).await.unwrap(), Some(read));
        let history = s.note_history(scope, 10).await.unwrap();
        assert_eq!(history[0].content, new.content);
        assert_eq!(history[1].content, plain.content, "a note of plain bullets");
        assert!(history[1].content.observations.is_empty() && history[1].content.held.is_empty());

        let pending = s
            .held_lessons(scope, Some(HeldStatus::Pending), 100)
            .await
            .unwrap();
        assert_eq!(pending.len(), 2);
        for (i, h) in pending.iter().enumerate() {
            let i = u32::try_from(i).unwrap();
            assert_eq!(
                h.id,
                held_lesson_id(new.id, i),
                "derived from note and position"
            );
            assert_eq!(h.note_id, new.id);
            assert_eq!(h.position, i);
            assert_eq!(h.status, HeldStatus::Pending);
            assert_eq!((h.reviewed_at, h.reviewed_by.as_deref()), (None, None));
        }
        assert_eq!(pending[0].text, "- buy at 65k");
        assert_eq!(pending[1].reasons, held("- trust me").reasons);
        assert!(
            s.held_lessons(scope, Some(HeldStatus::Accepted), 100)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(s.held_lessons(scope, None, 1).await.unwrap().len(), 1);
        // A short id finds its row, in either case; a non-hex prefix is refused.
        let id = pending[1].id.to_string();
        let found = s
            .held_lessons_by_prefix(&id[..8].to_uppercase(), 10)
            .await
            .unwrap();
        assert_eq!(found, vec![pending[1].clone()]);
        assert_eq!(s.held_lessons_by_prefix(&id, 10).await.unwrap().len(), 1);
        assert!(matches!(
            s.held_lessons_by_prefix("abc%", 10).await,
            Err(DbError::Invalid { .. })
        ));
        assert!(matches!(
            s.held_lessons(scope, None, 1001).await,
            Err(DbError::Invalid { .. })
        ));

        // A backtest's batch write stores them the same way.
        let batched = typed_note(&fx, 20, "- batched bullet", &["- held in a batch"]);
        let run = ReflectionRun {
            id: Uuid::new_v4(),
            skill_id: fx.skill.id,
            skill_version: fx.version.version,
            deployment_id: Some(fx.deployment.id),
            started_at: at(20),
            finished_at: at(20),
            outcome: RunOutcome::Succeeded {
                note_id: Some(batched.id),
            },
            model: "builtin/stats".into(),
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
        };
        s.record_ticks(
            &db::PlannedTicks::new(vec![]),
            &[(Some(batched.clone()), run)],
        )
        .await
        .unwrap();
        assert_eq!(
            s.get_note(batched.id).await.unwrap().content,
            batched.content
        );
        assert_eq!(s.held_lessons(scope, None, 100).await.unwrap().len(), 3);

        // Bounds: a held bullet over 2000 characters, or blank, is refused with the note.
        let long = "x".repeat(2001);
        let over = typed_note(&fx, 30, "- fine", &[long.as_str()]);
        assert!(matches!(
            s.insert_note(&over).await,
            Err(DbError::Bound {
                field: "held lesson",
                actual: 2001,
                ..
            })
        ));
        let blank = typed_note(&fx, 30, "- fine", &[""]);
        assert!(matches!(
            s.insert_note(&blank).await,
            Err(DbError::Bound {
                field: "held lesson",
                ..
            })
        ));
    }

    pub(super) async fn accepting_a_held_bullet_writes_a_note_in_force_from_then<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = db::test_support::seed(s).await.unwrap();
        let scope = NoteScope::Deployment(fx.deployment.id);
        let n = typed_note(&fx, 10, "- cut losers early", &["- b", "- c"]);
        s.insert_note(&n).await.unwrap();
        let (b, c) = (held_lesson_id(n.id, 0), held_lesson_id(n.id, 1));

        let reviewed = s
            .review_held_lesson(b, &review(HeldDecision::Accept, " alice ", at(20)))
            .await
            .unwrap();
        assert_eq!(reviewed.status, HeldStatus::Accepted);
        assert_eq!(reviewed.reviewed_at, Some(at(20)));
        assert_eq!(reviewed.reviewed_by.as_deref(), Some("alice"));
        assert_eq!(reviewed.resulting_note_id, Some(accepted_note_id(b)));
        let listed = s
            .held_lessons(scope, Some(HeldStatus::Accepted), 10)
            .await
            .unwrap();
        assert_eq!(listed, vec![reviewed.clone()], "the review is audited");

        let active = s.active_note(scope, at(20)).await.unwrap().unwrap();
        assert_eq!(Some(active.id), reviewed.resulting_note_id);
        assert_eq!(active.status, NoteStatus::Active);
        assert_eq!(active.content.lessons_text, "- cut losers early\n- b");
        assert_eq!(active.generated_at, at(20));
        assert_eq!(
            (active.content.window_start, active.content.window_end),
            (n.content.window_start, n.content.window_end)
        );
        assert_eq!(active.content.observations, n.content.observations);
        assert_eq!(active.content.dropped, n.content.dropped);
        assert!(active.content.held.is_empty());
        assert_eq!(active.content.model_used, n.content.model_used);
        assert_eq!(
            s.active_note(scope, at(20) - Duration::seconds(1))
                .await
                .unwrap()
                .map(|x| x.id),
            Some(n.id),
            "never in force before the review"
        );
        let old = s.get_note(n.id).await.unwrap();
        assert_eq!(old.status, NoteStatus::Superseded);
        assert_eq!(old.superseded_by, Some(active.id));
        assert_eq!(old.content, n.content, "the held note's text never changes");

        // The second bullet builds on the first acceptance's note.
        s.review_held_lesson(c, &review(HeldDecision::Accept, "bob", at(30)))
            .await
            .unwrap();
        let active = s.active_note(scope, at(30)).await.unwrap().unwrap();
        assert_eq!(active.content.lessons_text, "- cut losers early\n- b\n- c");
        assert_eq!(
            s.active_note(scope, at(25))
                .await
                .unwrap()
                .unwrap()
                .content
                .lessons_text,
            "- cut losers early\n- b"
        );
        assert!(
            s.held_lessons(scope, Some(HeldStatus::Pending), 10)
                .await
                .unwrap()
                .is_empty()
        );

        // Reviewed twice: refused, nothing changes.
        conflict(
            s.review_held_lesson(b, &review(HeldDecision::Reject, "carol", at(40)))
                .await,
            "already accepted by alice",
        );
        assert_eq!(s.note_history(scope, 10).await.unwrap().len(), 3);
        match s
            .review_held_lesson(
                Uuid::new_v4(),
                &review(HeldDecision::Accept, "alice", at(40)),
            )
            .await
        {
            Err(DbError::NotFound { .. }) => {}
            other => panic!("unknown id: {other:?}"),
        }
        assert!(matches!(
            s.review_held_lesson(c, &review(HeldDecision::Accept, "  ", at(40)))
                .await,
            Err(DbError::Bound {
                field: "reviewed_by",
                ..
            })
        ));
    }

    pub(super) async fn a_pending_review_notes_bullet_stands_alone<S: Storage + RawSql>(s: &S) {
        let fx = db::test_support::seed(s).await.unwrap();
        let scope = NoteScope::Deployment(fx.deployment.id);
        let older = s
            .insert_note(&sample_note(&fx, at(5), "- older lesson"))
            .await
            .unwrap();
        let mut n = typed_note(&fx, 10, "- flagged bullet", &["- the only good bullet"]);
        n.lint = Some(lint("every bullet was held back"));
        s.insert_note(&n).await.unwrap();
        let id = held_lesson_id(n.id, 0);
        invalid(
            s.review_held_lesson(id, &review(HeldDecision::Accept, "alice", at(9)))
                .await,
            "before its note",
        );
        s.review_held_lesson(id, &review(HeldDecision::Accept, "alice", at(15)))
            .await
            .unwrap();
        let active = s.active_note(scope, at(15)).await.unwrap().unwrap();
        assert_eq!(active.content.lessons_text, "- the only good bullet");
        assert_eq!(active.content.window_end, n.content.window_end);
        assert_eq!(
            s.active_note(scope, at(14)).await.unwrap().map(|x| x.id),
            Some(older.id)
        );
        assert_eq!(
            s.get_note(n.id).await.unwrap().status,
            NoteStatus::PendingReview,
            "the flagged note itself stays pending"
        );
    }

    pub(super) async fn after_a_newer_reflection_a_held_bullet_can_only_be_rejected<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = db::test_support::seed(s).await.unwrap();
        let scope = NoteScope::Deployment(fx.deployment.id);
        let n = typed_note(&fx, 10, "- first window", &["- held one", "- held two"]);
        s.insert_note(&n).await.unwrap();
        let newer = s
            .insert_note(&sample_note(&fx, at(20), "- second window"))
            .await
            .unwrap();
        let (one, two) = (held_lesson_id(n.id, 0), held_lesson_id(n.id, 1));
        conflict(
            s.review_held_lesson(one, &review(HeldDecision::Accept, "alice", at(25)))
                .await,
            "can only be rejected",
        );
        assert_eq!(
            s.held_lessons(scope, Some(HeldStatus::Pending), 10)
                .await
                .unwrap()
                .len(),
            2,
            "a refused acceptance changes nothing"
        );
        let rejected = s
            .review_held_lesson(one, &review(HeldDecision::Reject, "alice", at(25)))
            .await
            .unwrap();
        assert_eq!(rejected.status, HeldStatus::Rejected);
        assert_eq!(rejected.reviewed_at, Some(at(25)));
        assert_eq!(rejected.resulting_note_id, None);
        assert_eq!(
            s.active_note(scope, at(30)).await.unwrap(),
            Some(newer.clone())
        );
        assert_eq!(s.note_history(scope, 10).await.unwrap().len(), 2);
        assert_eq!(
            s.held_lessons(scope, Some(HeldStatus::Rejected), 10)
                .await
                .unwrap(),
            vec![rejected]
        );

        // Over 2000 characters with the bullet: refused.
        let mut full = sample_note(&fx, at(40), &format!("- {}", "y".repeat(1990)));
        full.content.held = vec![held("- twelve chars")];
        s.insert_note(&full).await.unwrap();
        invalid(
            s.review_held_lesson(
                held_lesson_id(full.id, 0),
                &review(HeldDecision::Accept, "a", at(41)),
            )
            .await,
            "over 2000",
        );
        conflict(
            s.review_held_lesson(two, &review(HeldDecision::Accept, "alice", at(41)))
                .await,
            "can only be rejected",
        );
    }

    /// A raw statement that must be refused (the database's own checks, not the store's).
    async fn refused<S: RawSql>(s: &S, sql: &str) {
        assert!(s.exec(sql).await.is_err(), "the database took {sql}");
    }

    pub(super) async fn a_review_keeps_who_when_and_why_and_is_final<S: Storage + RawSql>(s: &S) {
        let fx = db::test_support::seed(s).await.unwrap();
        let scope = NoteScope::Deployment(fx.deployment.id);
        let n = typed_note(&fx, 10, "- cut losers early", &["- b", "- c"]);
        s.insert_note(&n).await.unwrap();
        let (b, c) = (held_lesson_id(n.id, 0), held_lesson_id(n.id, 1));
        let pending = s
            .held_lessons(scope, Some(HeldStatus::Pending), 10)
            .await
            .unwrap();
        for h in &pending {
            assert_eq!(h.deployment_id, Some(fx.deployment.id));
            assert_eq!(h.held_at, at(10), "held when its reflection ran");
            assert_eq!(h.review_reason, None);
        }

        // Refused reviews name the field and change nothing.
        let with = |by: &str, reason: Option<&str>| HeldReview {
            reason: reason.map(str::to_owned),
            ..review(HeldDecision::Reject, by, at(20))
        };
        for (bad, field) in [
            (with("alice", Some("  ")), "review_reason"),
            (with("alice", Some(&"x".repeat(501))), "review_reason"),
            (with("alice", Some("two\nlines")), "review_reason"),
            (with("al\u{0}ice", None), "reviewed_by"),
            (with(&"a".repeat(101), None), "reviewed_by"),
        ] {
            match s.review_held_lesson(b, &bad).await {
                Err(DbError::Bound { field: f, .. } | DbError::Invalid { what: f, .. }) => {
                    assert_eq!(f, field, "{bad:?}");
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert_eq!(
            s.held_lessons(scope, Some(HeldStatus::Pending), 10)
                .await
                .unwrap(),
            pending
        );

        let rejected = s
            .review_held_lesson(b, &with(" bob ", Some(" repeats the stop rule ")))
            .await
            .unwrap();
        assert_eq!(
            (
                rejected.status,
                rejected.reviewed_by.as_deref(),
                rejected.reviewed_at,
                rejected.review_reason.as_deref()
            ),
            (
                HeldStatus::Rejected,
                Some("bob"),
                Some(at(20)),
                Some("repeats the stop rule")
            )
        );
        let accepted = s
            .review_held_lesson(
                c,
                &HeldReview {
                    reason: Some("fair".into()),
                    ..review(HeldDecision::Accept, "carol", at(21))
                },
            )
            .await
            .unwrap();
        assert_eq!(accepted.review_reason.as_deref(), Some("fair"));
        let listed = s.held_lessons(scope, None, 10).await.unwrap();
        assert_eq!(
            listed,
            vec![rejected.clone(), accepted.clone()],
            "read back"
        );

        // A decided review is final in the database too: no statement rewrites it.
        // A later note, with a bullet of its own still waiting.
        let other = s
            .insert_note(&typed_note(&fx, 30, "- another note", &["- d"]))
            .await
            .unwrap();
        for (id, set) in [
            (b, "reviewed_by = 'mallory'".to_owned()),
            (b, "review_reason = 'rewritten'".to_owned()),
            (b, "status = 'accepted'".to_owned()),
            (
                b,
                "status = 'pending', reviewed_at = NULL, reviewed_by = NULL, \
                 review_reason = NULL"
                    .to_owned(),
            ),
            (c, format!("resulting_note_id = '{}'", other.id)),
        ] {
            refused(
                s,
                &format!("UPDATE held_lessons SET {set} WHERE CAST(id AS TEXT) = '{id}'"),
            )
            .await;
        }
        refused(
            s,
            &format!(
                "UPDATE held_lessons SET review_reason = 'why' WHERE CAST(id AS TEXT) = '{}'",
                held_lesson_id(other.id, 0)
            ),
        )
        .await;
        let rows = s.held_lessons(scope, None, 10).await.unwrap();
        assert_eq!(rows[1..], [rejected, accepted], "unchanged");
        assert_eq!(
            rows[0].status,
            HeldStatus::Pending,
            "no reason without a review"
        );
        assert_eq!(rows[0].review_reason, None);
    }

    pub(super) async fn accepting_a_note_whole_accepts_its_waiting_bullets<S: Storage + RawSql>(
        s: &S,
    ) {
        let fx = db::test_support::seed(s).await.unwrap();
        let scope = NoteScope::Deployment(fx.deployment.id);
        s.insert_note(&sample_note(&fx, at(5), "- older lesson"))
            .await
            .unwrap();
        let mut n = typed_note(&fx, 10, "- one\n- two", &["- one", "- two"]);
        n.lint = Some(lint("every bullet was held back"));
        s.insert_note(&n).await.unwrap();
        let (one, two) = (held_lesson_id(n.id, 0), held_lesson_id(n.id, 1));
        s.review_held_lesson(one, &review(HeldDecision::Reject, "bob", at(12)))
            .await
            .unwrap();
        assert!(matches!(
            s.accept_note(n.id, "  ", at(15)).await,
            Err(DbError::Bound {
                field: "reviewed_by",
                ..
            })
        ));

        let accepted = s.accept_note(n.id, "alice", at(15)).await.unwrap();
        assert_eq!(
            (accepted.accepted_at, accepted.accepted_by.as_deref()),
            (Some(at(15)), Some("alice"))
        );
        assert_eq!(
            s.get_note(n.id).await.unwrap().accepted_by.as_deref(),
            Some("alice")
        );
        assert!(
            s.held_lessons(scope, Some(HeldStatus::Pending), 10)
                .await
                .unwrap()
                .is_empty(),
            "nothing of the note waits any more"
        );
        let rows = s.held_lessons(scope, None, 10).await.unwrap();
        assert_eq!(rows[0].id, one);
        assert_eq!(
            (rows[0].status, rows[0].reviewed_by.as_deref()),
            (HeldStatus::Rejected, Some("bob")),
            "a bullet decided before keeps its decision"
        );
        assert_eq!(rows[1].id, two);
        assert_eq!(
            (
                rows[1].status,
                rows[1].reviewed_by.as_deref(),
                rows[1].reviewed_at,
                rows[1].resulting_note_id
            ),
            (
                HeldStatus::Accepted,
                Some("alice"),
                Some(at(15)),
                Some(n.id)
            )
        );
    }
}

crate::common::on_every_backend!(
    held_lessons;
    typed_lessons_and_held_bullets_read_back_as_written,
    accepting_a_held_bullet_writes_a_note_in_force_from_then,
    a_pending_review_notes_bullet_stands_alone,
    after_a_newer_reflection_a_held_bullet_can_only_be_rejected,
    a_review_keeps_who_when_and_why_and_is_final,
    accepting_a_note_whole_accepts_its_waiting_bullets,
);

/// Row-level security (PostgreSQL): a user lists and reviews the held bullets of their own
/// deployments only, naming themselves; another user's bullet is not found and stays as it
/// was; a user writes no note but an acceptance's, and leaves no acceptance without its note.
#[tokio::test]
async fn a_user_reviews_only_their_own_held_lessons() {
    use db::test_support::{at, sample_note, seed};
    use db::{DbError, HeldDecision, HeldReview, HeldStatus, NoteScope, NoteStore, held_lesson_id};
    use types::HeldLesson;

    let h = crate::common::postgres().await;
    let mine = seed(&h.store).await.unwrap();
    let theirs = seed(&h.store).await.unwrap();
    let held = |fx: &db::test_support::Fixture, bullets: &[&str]| {
        let mut n = sample_note(fx, at(10), "- cut losers early");
        n.content.held = bullets
            .iter()
            .map(|b| HeldLesson {
                text: (*b).into(),
                reasons: vec!["names a price level".into()],
            })
            .collect();
        n
    };
    let my_note = held(&mine, &["- one", "- two", "- three"]);
    let their_note = held(&theirs, &["- theirs"]);
    h.store.insert_note(&my_note).await.unwrap();
    h.store.insert_note(&their_note).await.unwrap();
    let (one, two, three) = (
        held_lesson_id(my_note.id, 0),
        held_lesson_id(my_note.id, 1),
        held_lesson_id(my_note.id, 2),
    );
    let their_bullet = held_lesson_id(their_note.id, 0);
    let me = h.store.as_user(mine.user.id);
    let uid = mine.user.id.to_string();
    let as_me = |decision| HeldReview {
        decision,
        by: uid.clone(),
        reason: Some("read it".into()),
        at: at(20),
    };

    // Listing: mine, never theirs.
    let my_scope = NoteScope::Deployment(mine.deployment.id);
    let their_scope = NoteScope::Deployment(theirs.deployment.id);
    assert_eq!(me.held_lessons(my_scope, None, 10).await.unwrap().len(), 3);
    assert!(
        me.held_lessons(their_scope, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        me.held_lessons_by_prefix(&their_bullet.to_string(), 10)
            .await
            .unwrap()
            .is_empty()
    );

    // Another user's bullet: not found, and it stays pending.
    for decision in [HeldDecision::Accept, HeldDecision::Reject] {
        match me.review_held_lesson(their_bullet, &as_me(decision)).await {
            Err(DbError::NotFound { .. }) => {}
            other => panic!("reviewing another user's bullet: {other:?}"),
        }
    }
    let theirs_now = h.store.held_lessons(their_scope, None, 10).await.unwrap();
    assert_eq!(theirs_now[0].status, HeldStatus::Pending);

    // A review naming someone else is refused, nothing written.
    let forged = HeldReview {
        by: "operator:mallory".into(),
        ..as_me(HeldDecision::Reject)
    };
    assert!(me.review_held_lesson(one, &forged).await.is_err());
    assert_eq!(
        h.store
            .held_lessons(my_scope, Some(HeldStatus::Pending), 10)
            .await
            .unwrap()
            .len(),
        3
    );

    // Mine: accepted as me, the note in force carries it; rejected as me.
    let accepted = me
        .review_held_lesson(one, &as_me(HeldDecision::Accept))
        .await
        .unwrap();
    assert_eq!(accepted.reviewed_by.as_deref(), Some(uid.as_str()));
    assert_eq!(accepted.review_reason.as_deref(), Some("read it"));
    let active = h
        .store
        .active_note(my_scope, at(20))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(Some(active.id), accepted.resulting_note_id);
    assert_eq!(active.content.lessons_text, "- cut losers early\n- one");
    let rejected = me
        .review_held_lesson(two, &as_me(HeldDecision::Reject))
        .await
        .unwrap();
    assert_eq!(rejected.status, HeldStatus::Rejected);

    // Statements of the user's own: no rewritten review, no note of their own making, no
    // acceptance without its note, no other column.
    let statements = [
        format!("UPDATE held_lessons SET review_reason = 'rewritten' WHERE id = '{two}'"),
        format!("UPDATE held_lessons SET text = '- edited' WHERE id = '{three}'"),
        format!(
            "INSERT INTO reflection_notes (id, skill_id, skill_version, deployment_id, status, \
             generated_at, window_start, window_end, trades_considered, lessons_text, \
             model_used) VALUES (gen_random_uuid(), '{}', 1, '{}', 'active', now(), now(), \
             now(), 0, '- injected', 'me')",
            mine.skill.id, mine.deployment.id
        ),
        format!(
            "UPDATE reflection_notes SET status = 'superseded', superseded_at = now() \
             WHERE id = '{}'",
            active.id
        ),
    ];
    for sql in &statements {
        let mut tx = me.begin().await.unwrap();
        let done = sqlx::query(sql).execute(&mut *tx).await;
        match done {
            Err(sqlx::Error::Database(e)) => {
                let code = e.code().unwrap_or_default().into_owned();
                assert!(["42501", "23514"].contains(&code.as_str()), "{sql}: {e}");
            }
            Ok(r) => panic!("{sql}: took it ({} rows)", r.rows_affected()),
            Err(e) => panic!("{sql}: {e}"),
        }
    }
    let mut tx = me.begin().await.unwrap();
    let claimed = sqlx::query(&format!(
        "UPDATE held_lessons SET status = 'accepted', reviewed_at = now(), \
         reviewed_by = '{uid}' WHERE id = '{three}'"
    ))
    .execute(&mut *tx)
    .await
    .unwrap();
    assert_eq!(claimed.rows_affected(), 1);
    match tx.commit().await {
        Err(sqlx::Error::Database(e)) => {
            assert_eq!(e.constraint(), Some("held_lessons_accepted_note"), "{e}");
        }
        other => panic!("an acceptance without its note committed: {other:?}"),
    }
    let rows = h.store.held_lessons(my_scope, None, 10).await.unwrap();
    assert_eq!(
        rows.iter().map(|r| r.status).collect::<Vec<_>>(),
        [
            HeldStatus::Accepted,
            HeldStatus::Rejected,
            HeldStatus::Pending
        ]
    );
    assert_eq!(rows[1], rejected, "the decided review is unchanged");
    assert_eq!(
        h.store
            .active_note(my_scope, at(30))
            .await
            .unwrap()
            .unwrap()
            .id,
        active.id,
        "the note in force is the acceptance's"
    );
}
