//! Content-addressed snapshot text (#17 item 1): a snapshot's system prompt, user message and
//! steps are stored as lists of lines, each distinct line once per
//! deployment (the new lines of a write in one compressed block), and read back byte for byte;
//! the migration converts snapshots an older build wrote.

mod cases {
    use db::test_support::{Fixture, at, sample_snapshot, seed, tick_record};
    use db::{DecisionSnapshot, Storage, TickRecord};

    use crate::common::RawSql;

    /// A user message whose bar table shifts by one row per tick, as the real one does.
    fn context(n: i64) -> String {
        let mut s =
            format!("## Time\n2026-06-05T{n:02}:00:00Z\n\n## Market context\ntime o h l c v\n");
        for row in n..n + 24 {
            s.push_str(&format!("row {row} 1.0{row} 1.1 0.9 1.0\n"));
        }
        s.push_str("## Your turn\nDecide.");
        s
    }

    fn snapshot(fx: &Fixture, n: i64) -> DecisionSnapshot {
        let mut s = sample_snapshot(fx.deployment.id, at(60 * n));
        s.system_prompt = if n % 3 == 0 {
            "HEADER\nLEASH\n\nLESSONS: é ✓ 🙂\nFOOTER\n".into()
        } else {
            "HEADER\nLEASH\n\nFOOTER\n".into()
        };
        s.context = context(n);
        s
    }

    /// The lines stored for `fx`'s deployment.
    async fn scope_lines<S: RawSql>(s: &S, fx: &Fixture) -> i64 {
        s.count(&format!(
            "SELECT CAST(COALESCE(SUM(b.line_count), 0) AS BIGINT) FROM prompt_blocks b \
             JOIN prompt_scopes p ON p.id = b.scope_id \
             WHERE CAST(p.deployment_id AS TEXT) = '{}'",
            fx.deployment.id
        ))
        .await
    }

    /// Every line of a snapshot's texts, as the store splits them.
    fn all_lines(x: &DecisionSnapshot) -> Vec<String> {
        [
            x.system_prompt.as_str(),
            x.context.as_str(),
            x.steps.as_str(),
        ]
        .into_iter()
        .flat_map(|t| {
            t.split_inclusive('\n')
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
    }

    pub(crate) async fn texts_read_back_byte_for_byte_and_lines_are_stored_once<
        S: Storage + RawSql,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        // A batch, then single ticks (these reuse the lines the batch stored), then another
        // batch.
        let first: Vec<TickRecord> = (0..10).map(|n| tick_record(snapshot(&fx, n))).collect();
        s.record_ticks(&db::PlannedTicks::new(first.to_vec()), &[])
            .await
            .unwrap();
        let after_batch = scope_lines(s, &fx).await;
        for n in 10..12 {
            s.record_tick(&tick_record(snapshot(&fx, n))).await.unwrap();
        }
        assert_eq!(
            scope_lines(s, &fx).await,
            after_batch + 2 * 2,
            "a tick adds its time line and its newest bar row, nothing else"
        );
        let second: Vec<TickRecord> = (12..20).map(|n| tick_record(snapshot(&fx, n))).collect();
        s.record_ticks(&db::PlannedTicks::new(second.to_vec()), &[])
            .await
            .unwrap();

        let mut listed = s.list_snapshots(fx.deployment.id, 100).await.unwrap();
        listed.sort_by_key(|x| x.tick_at);
        assert_eq!(listed.len(), 20);
        for (n, got) in (0..20).zip(&listed) {
            let want = snapshot(&fx, n);
            assert_eq!(
                got.system_prompt, want.system_prompt,
                "system prompt of tick {n}"
            );
            assert_eq!(got.context, want.context, "user message of tick {n}");
            assert_eq!(
                got,
                &DecisionSnapshot {
                    id: got.id,
                    ..want.clone()
                },
                "the whole snapshot of tick {n}"
            );
            let one = s.get_snapshot(got.id).await.unwrap();
            assert_eq!(&one, got, "get_snapshot equals list_snapshots");
        }
        let last = s
            .last_snapshot_before(fx.deployment.id, at(60 * 19))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(last.context, context(18));

        // 20 ticks × (30 context + 4 or 5 system + 1 steps) lines, far fewer stored.
        let stored = scope_lines(s, &fx).await;
        let distinct = {
            let mut all = std::collections::BTreeSet::new();
            for n in 0..20 {
                all.extend(all_lines(&snapshot(&fx, n)));
            }
            all.len() as i64
        };
        assert_eq!(stored, distinct, "each distinct line stored once");
        // No text is kept in the snapshot rows themselves.
        assert_eq!(
            s.count(&format!(
                "SELECT COUNT(*) FROM decision_snapshots WHERE CAST(deployment_id AS TEXT) = '{}' \
                 AND (system_prompt IS NOT NULL OR context IS NOT NULL OR steps IS NOT NULL)",
                fx.deployment.id
            ))
            .await,
            0
        );
    }

    pub(crate) async fn edge_texts_round_trip<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let texts = [
            ("", ""),
            ("\n", "\n\n\n"),
            ("no newline", "a\r\nb\r\n"),
            ("same\nsame\nsame\n", "x\n\nx\n\n"),
            (
                "tab\tand 'quotes' \"\"\n",
                "\u{1} control, no NUL (PostgreSQL text refuses it)\n",
            ),
        ];
        let ticks: Vec<TickRecord> = texts
            .iter()
            .enumerate()
            .map(|(i, (sp, cx))| {
                let mut x = sample_snapshot(fx.deployment.id, at(i as i64));
                x.system_prompt = (*sp).to_owned();
                x.context = (*cx).to_owned();
                tick_record(x)
            })
            .collect();
        s.record_ticks(&db::PlannedTicks::new(ticks.to_vec()), &[])
            .await
            .unwrap();
        for (t, (sp, cx)) in ticks.iter().zip(texts) {
            let got = s.get_snapshot(t.snapshot.id).await.unwrap();
            assert_eq!((got.system_prompt.as_str(), got.context.as_str()), (sp, cx));
            assert_eq!(got, t.snapshot);
        }
    }

    /// A snapshot with and without a proposal, and steps that span lines: each reads back as
    /// it was written.
    pub(crate) async fn steps_proposal_and_verdict_round_trip<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let mut with = sample_snapshot(fx.deployment.id, at(0));
        with.steps =
            types::JsonText::from_text("[\n {\"a\": \"x\\ny\"},\n 1\n]".to_owned()).unwrap();
        let mut without = sample_snapshot(fx.deployment.id, at(1));
        without.proposal = None;
        s.record_ticks(
            &db::PlannedTicks::new(vec![
                tick_record(with.clone()),
                tick_record(without.clone()),
            ]),
            &[],
        )
        .await
        .unwrap();
        assert_eq!(s.get_snapshot(with.id).await.unwrap(), with);
        assert_eq!(s.get_snapshot(without.id).await.unwrap(), without);
        assert_eq!(
            s.get_snapshot(with.id).await.unwrap().steps.as_str(),
            with.steps.as_str(),
            "the steps' JSON byte for byte"
        );
    }

    /// Each deployment numbers its own lines: the same text in two deployments is stored in
    /// both (no table is shared across deployments, so none across users), and deleting a
    /// deployment deletes its lines.
    pub(crate) async fn deployments_keep_their_own_lines<S: Storage + RawSql>(s: &S) {
        let a = seed(s).await.unwrap();
        let b = seed(s).await.unwrap();
        for fx in [&a, &b] {
            s.record_tick(&tick_record(snapshot(fx, 0))).await.unwrap();
        }
        let one = scope_lines(s, &a).await;
        assert!(one > 0);
        assert_eq!(scope_lines(s, &b).await, one);
        let got = s.list_snapshots(b.deployment.id, 10).await.unwrap();
        assert_eq!(got[0].context, context(0));
        s.exec(&format!(
            "DELETE FROM deployments WHERE CAST(id AS TEXT) = '{}'",
            a.deployment.id
        ))
        .await
        .unwrap();
        assert_eq!(scope_lines(s, &a).await, 0, "cascaded");
        assert_eq!(
            s.count("SELECT CAST(COALESCE(SUM(line_count), 0) AS BIGINT) FROM prompt_blocks")
                .await,
            one,
            "only b's lines are left"
        );
    }
}

crate::common::on_every_backend!(prompt_lines;
    texts_read_back_byte_for_byte_and_lines_are_stored_once,
    edge_texts_round_trip,
    steps_proposal_and_verdict_round_trip,
    deployments_keep_their_own_lines,
);

/// A store that starts with an empty line cache on a file that already holds lines (a restart):
/// what it writes reads back exactly, its lines are stored again once (a second copy, never a
/// wrong one), and after that it reuses them.
#[tokio::test]
async fn a_restarted_writer_stores_its_lines_again_once_and_reads_every_text() {
    use db::test_support::{at, sample_snapshot, seed, tick_record};
    use db::{SqliteStore, TickStore};

    use crate::common::RawSql;

    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("lines.sqlite").display()
    );
    let tick = |n: i64, d| {
        let mut s = sample_snapshot(d, at(60 * n));
        s.system_prompt = "SYSTEM\nRULES\n".into();
        s.context = format!("## Time\n{n}\n## Bars\nbar {n}\nbar {}\n", n + 1);
        tick_record(s)
    };
    let lines = "SELECT CAST(COALESCE(SUM(line_count), 0) AS BIGINT) FROM prompt_blocks";
    let first = SqliteStore::connect(&url).await.unwrap();
    let fx = seed(&first).await.unwrap();
    let d = fx.deployment.id;
    let mut written = Vec::new();
    for n in 0..3 {
        let t = tick(n, d);
        first.record_tick(&t).await.unwrap();
        written.push(t.snapshot);
    }
    let before = first.count(lines).await;
    first.close().await.unwrap();

    let again = SqliteStore::connect(&url).await.unwrap();
    for n in 3..6 {
        let t = tick(n, d);
        again.record_tick(&t).await.unwrap();
        written.push(t.snapshot);
    }
    let mut read = again.list_snapshots(d, 100).await.unwrap();
    read.sort_by_key(|s| s.tick_at);
    assert_eq!(read, written, "every snapshot, byte for byte");
    // Tick 3 stored all its lines again (2 system, 5 context, 1 steps); ticks 4 and 5 only their
    // time and newest bar.
    assert_eq!(again.count(lines).await, before + 8 + 2 + 2);
}

mod migration {
    //! A database the previous schema wrote: its snapshots hold their texts; opening the store
    //! converts them to line lists and every reader returns the same text.

    use db::test_support::at;
    use db::{PgStore, SqliteStore, TickStore};
    use uuid::Uuid;

    /// The migration that introduced line storage.
    const LINES_MIGRATION: i64 = 20261125000100;

    /// The lines stored, all deployments.
    const LINES: &str = "SELECT CAST(COALESCE(SUM(line_count), 0) AS BIGINT) FROM prompt_blocks";

    struct Old {
        deployment: Uuid,
        user: Uuid,
        snapshots: Vec<(Uuid, String, String)>,
    }

    fn old_rows(users_table: &str) -> (Old, Vec<String>) {
        let (user, skill, d) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let mut sql = vec![
            format!("INSERT INTO {users_table} (id) VALUES ('{user}')"),
            format!("INSERT INTO skills (id, user_id, name) VALUES ('{skill}', '{user}', 'old')"),
            format!(
                "INSERT INTO skill_versions (skill_id, version, body, model) \
                 VALUES ('{skill}', 1, '{{}}', 'builtin/scripted')"
            ),
            format!(
                "INSERT INTO deployments (id, user_id, skill_id, skill_version, broker, \
                 initial_equity_usd, equity_usd) VALUES ('{d}', '{user}', '{skill}', 1, 'paper', '10000', '10000')"
            ),
        ];
        let mut snapshots = Vec::new();
        // More than one conversion batch (256), so the conversion resumes where it stopped.
        for n in 0..300i64 {
            let id = Uuid::new_v4();
            let system = if n % 2 == 0 {
                "HEADER\nit's\n".to_owned()
            } else {
                "HEADER\nFOOTER".to_owned()
            };
            let mut context = format!("## Time\n{n}\n## Bars\n");
            for row in n..n + 10 {
                context.push_str(&format!("bar {row}\n"));
            }
            let t = db::time_text(at(60 * n));
            sql.push(format!(
                "INSERT INTO decision_snapshots (id, deployment_id, tick_at, system_prompt, context, \
                 verdict, model) VALUES ('{id}', '{d}', '{t}', '{}', '{}', '{{\"status\": \"no_op\", \"detail\": \"old\"}}', \
                 'builtin/scripted')",
                system.replace('\'', "''"),
                context
            ));
            snapshots.push((id, system, context));
        }
        (
            Old {
                deployment: d,
                user,
                snapshots,
            },
            sql,
        )
    }

    async fn check<S: TickStore>(store: &S, old: &Old) {
        let mut listed = store.list_snapshots(old.deployment, 1000).await.unwrap();
        listed.sort_by_key(|s| s.tick_at);
        assert_eq!(listed.len(), old.snapshots.len());
        for (got, (id, system, context)) in listed.iter().zip(&old.snapshots) {
            assert_eq!(got.id, *id);
            assert_eq!(&got.system_prompt, system);
            assert_eq!(&got.context, context);
            assert_eq!(got.steps.as_str(), "[]");
            assert_eq!(
                got.verdict,
                types::Verdict::NoOp {
                    detail: "old".into()
                }
            );
        }
        let (id, system, context) = &old.snapshots[7];
        let one = store.get_snapshot(*id).await.unwrap();
        assert_eq!((&one.system_prompt, &one.context), (system, context));
    }

    #[tokio::test]
    async fn sqlite_old_snapshots_are_converted_to_lines_and_read_the_same() {
        use crate::common::RawSql;
        let dir = tempfile::tempdir().unwrap();
        let url = format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("old.sqlite").display()
        );
        let (old, sql) = old_rows("users");
        {
            let mut conn = crate::common::sqlite_before(&url, LINES_MIGRATION).await;
            for s in &sql {
                sqlx::query(s)
                    .execute(&mut conn)
                    .await
                    .unwrap_or_else(|e| panic!("{s}: {e}"));
            }
        }
        let store = SqliteStore::connect(&url).await.unwrap();
        assert_eq!(
            store
                .count("SELECT COUNT(*) FROM decision_snapshots WHERE context_lines IS NULL")
                .await,
            0,
            "every old row converted"
        );
        assert_eq!(
            store
                .count(
                    "SELECT COUNT(*) FROM decision_snapshots \
                     WHERE system_prompt IS NOT NULL OR context IS NOT NULL"
                )
                .await,
            0,
            "no text left in the rows"
        );
        // 300 ticks × 13 context lines; 3 system lines; 2 headings, 300 times and 309 bars (the
        // steps and verdict stay in their JSON columns).
        assert_eq!(store.count(LINES).await, 614);
        check(&store, &old).await;
        let check_row: (String,) = sqlx::query_as("PRAGMA integrity_check")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(check_row.0, "ok");
        // The NOT NULL constraints are gone, the others kept.
        let err = store
            .exec(&format!(
                "UPDATE decision_snapshots SET input_tokens = -1 WHERE id = '{}'",
                old.snapshots[0].0
            ))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("tokens_nonneg"), "{err}");
        // Opening again converts nothing more and reads the same.
        store.close().await.unwrap();
        let again = SqliteStore::connect(&url).await.unwrap();
        check(&again, &old).await;
    }

    #[tokio::test]
    async fn postgres_old_snapshots_are_converted_to_lines_and_read_the_same() {
        use crate::common::RawSql;
        let test_db = db::test_support::pg::TestDatabase::create("agent_db_test_", 4).await;
        let pool = &test_db.pool;
        let (old, sql) = old_rows("auth.users");
        crate::common::postgres_before(pool, LINES_MIGRATION).await;
        for s in &sql {
            sqlx::query(s)
                .execute(pool)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        let store = PgStore::from_pool(pool.clone()).await.unwrap();
        assert_eq!(
            store
                .count(
                    "SELECT COUNT(*) FROM decision_snapshots \
                     WHERE context_lines IS NULL OR system_prompt IS NOT NULL OR context IS NOT NULL"
                )
                .await,
            0,
            "every old row converted"
        );
        assert_eq!(store.count(LINES).await, 614);
        check(&store, &old).await;
        // The owner reads the same under row-level security; a stranger reads nothing.
        check(&store.as_user(old.user), &old).await;
        let stranger = store.as_user(Uuid::new_v4());
        assert!(
            stranger
                .list_snapshots(old.deployment, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
}
