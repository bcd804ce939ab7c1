//! Typed lessons and held bullets on both backends: a note's observations and held bullets
//! read back as written (directly and through a backtest's batch write), and a person's review
//! of a held bullet keeps the point-in-time contract (an acceptance is a new note in force from
//! the review; a note's text never changes).

mod cases {
    use chrono::Duration;
    use db::test_support::{Fixture, at, lint, sample_note};
    use db::{
        DbError, HeldDecision, HeldStatus, NewNote, NoteScope, ReflectionRun, RunOutcome, Storage,
        accepted_note_id, held_lesson_id,
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
            .review_held_lesson(b, HeldDecision::Accept, " alice ", at(20))
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
        s.review_held_lesson(c, HeldDecision::Accept, "bob", at(30))
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
        invalid(
            s.review_held_lesson(b, HeldDecision::Reject, "carol", at(40))
                .await,
            "already accepted by alice",
        );
        assert_eq!(s.note_history(scope, 10).await.unwrap().len(), 3);
        match s
            .review_held_lesson(Uuid::new_v4(), HeldDecision::Accept, "alice", at(40))
            .await
        {
            Err(DbError::NotFound { .. }) => {}
            other => panic!("unknown id: {other:?}"),
        }
        assert!(matches!(
            s.review_held_lesson(c, HeldDecision::Accept, "  ", at(40))
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
            s.review_held_lesson(id, HeldDecision::Accept, "alice", at(9))
                .await,
            "before its note",
        );
        s.review_held_lesson(id, HeldDecision::Accept, "alice", at(15))
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
        invalid(
            s.review_held_lesson(one, HeldDecision::Accept, "alice", at(25))
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
            .review_held_lesson(one, HeldDecision::Reject, "alice", at(25))
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
                HeldDecision::Accept,
                "a",
                at(41),
            )
            .await,
            "over 2000",
        );
        invalid(
            s.review_held_lesson(two, HeldDecision::Accept, "alice", at(41))
                .await,
            "can only be rejected",
        );
    }
}

crate::common::on_every_backend!(
    held_lessons;
    typed_lessons_and_held_bullets_read_back_as_written,
    accepting_a_held_bullet_writes_a_note_in_force_from_then,
    a_pending_review_notes_bullet_stands_alone,
    after_a_newer_reflection_a_held_bullet_can_only_be_rejected,
);
