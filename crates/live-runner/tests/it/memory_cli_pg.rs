//! `live-runner annotate`, `live-runner memory-stats` and `live-runner lessons` over PostgreSQL:
//! the same arguments and output as `sim-worker`'s (one implementation each, `tick::memory_cmd`
//! and `tick::lessons_cmd`).

use std::process::Command;

use db::test_support::{at, record_sample_outcome, seed};
use db::{AnnotationTarget, OutcomeStore};
use outcomes::{FirstHit, Grade, OutcomeScore};
use rust_decimal::Decimal;

use crate::common::postgres;

async fn live(args: Vec<String>) -> (i32, String, String) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_live-runner"))
            .args(&args)
            .env_remove("DATABASE_URL")
            .output()
            .expect("run live-runner")
    })
    .await
    .expect("join");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn annotate_and_memory_stats_work_over_postgres() {
    let pg = postgres().await;
    let url = pg.url();
    let fx = seed(&pg.store).await.unwrap();
    let outcome = record_sample_outcome(&pg.store, fx.deployment.id, at(0))
        .await
        .unwrap();
    let score = OutcomeScore {
        price_1h: Some(d("65100")),
        price_4h: Some(d("65650")),
        price_24h: Some(d("66000")),
        pnl_percent_1h: Some(d("0.1538")),
        pnl_percent_4h: Some(d("1")),
        pnl_percent_24h: Some(d("1.5385")),
        hit_target: Some(true),
        hit_stop: Some(false),
        first_hit: Some(FirstHit::Target),
        max_favorable: Some(d("66600")),
        max_adverse: Some(d("64900")),
        outcome_grade: Some(Grade::A),
        scored_at: Some(at(24 * 60)),
        narrative: Some("BTC long - Grade A".into()),
    };
    pg.store
        .score_outcomes(&[(outcome.id, score)])
        .await
        .unwrap();

    // annotate: prints the stored annotation's id.
    let id = outcome.id.to_string();
    let (code, stdout, stderr) = live(args(&[
        "annotate",
        "--db",
        &url,
        "--outcome",
        &id,
        "--text",
        "News-driven pump",
        "--tag",
        "news",
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    let stored = pg.store.annotations(fx.deployment.id, 10).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stdout, format!("{}\n", stored[0].id));
    assert_eq!(stored[0].target, AnnotationTarget::Outcome(outcome.id));
    assert_eq!(stored[0].tags, vec!["news".to_owned()]);

    // memory-stats: the window ending at the outcome's tick, as it stood 2 days later.
    let when = at(48 * 60).to_rfc3339();
    let (code, stdout, stderr) = live(args(&[
        "memory-stats",
        "--db",
        &url,
        "--symbol",
        "BTC",
        "--days",
        "3",
        "--at",
        &when,
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[1], "outcomes: 1  scored: 1  unscored: 0");
    assert_eq!(lines[2], "grades: A=1 B=0 C=0 D=0 F=0");
    assert_eq!(lines[3], "hit target: 1  hit stop: 0");
    assert_eq!(lines[4], "win rate (grade A or B): 100.0% (1 of 1)");
    assert_eq!(lines[7], "pnl 24h: mean +1.54%  median +1.54%");
    let (code, json, stderr) = live(args(&[
        "memory-stats",
        "--db",
        &url,
        "--symbol",
        "BTC",
        "--days",
        "3",
        "--at",
        &when,
        "--json",
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["count"], 1);
    assert_eq!(v["grades"]["A"], 1);
    assert_eq!(v["pnl_percent"]["24h"]["mean"], "1.5385");

    // Bad input names the flag.
    let (code, _, stderr) = live(args(&[
        "memory-stats",
        "--db",
        &url,
        "--symbol",
        "BTC",
        "--days",
        "0",
    ]))
    .await;
    assert_ne!(code, 0);
    assert!(
        stderr.contains("--days 0: 1 to 3650 days are allowed"),
        "{stderr}"
    );
    let (code, _, stderr) = live(args(&[
        "annotate",
        "--db",
        &url,
        "--outcome",
        &uuid::Uuid::new_v4().to_string(),
        "--text",
        "x",
    ]))
    .await;
    assert_ne!(code, 0);
    assert!(stderr.contains("no trade outcome has this id"), "{stderr}");
}

#[tokio::test]
async fn held_lessons_are_reviewed_over_postgres() {
    use db::test_support::sample_note;
    use db::{HeldStatus, NoteScope, NoteStore};

    let pg = postgres().await;
    let url = pg.url();
    let fx = seed(&pg.store).await.unwrap();
    let mut note = sample_note(&fx, at(10), "- cut losers early");
    note.content.held = ["- buy the dip at 60k", "- double the size"]
        .iter()
        .map(|text| types::HeldLesson {
            text: (*text).into(),
            reasons: vec!["names a price level".into()],
        })
        .collect();
    pg.store.insert_note(&note).await.unwrap();
    let (first, second) = (
        db::held_lesson_id(note.id, 0),
        db::held_lesson_id(note.id, 1),
    );
    let short = |id: uuid::Uuid| id.simple().to_string()[..8].to_owned();
    let deployment = fx.deployment.id.to_string();

    let (code, listed, stderr) = live(args(&[
        "lessons",
        "held",
        "--db",
        &url,
        "--deployment",
        &deployment,
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(listed.contains("2 pending lessons"), "{listed}");
    assert!(listed.contains(&format!("{} pending note {} #2", short(second), note.id)));
    assert!(listed.contains(
        "  - double the size
  held back: names a price level
"
    ));

    let when = at(20).to_rfc3339();
    let (code, out, stderr) = live(args(&[
        "lessons",
        "accept",
        &short(first),
        "--db",
        &url,
        "--by",
        "ops",
        "--at",
        &when,
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains("accepted by ops"), "{out}");
    let scope = NoteScope::Deployment(fx.deployment.id);
    let active = pg.store.active_note(scope, at(20)).await.unwrap().unwrap();
    assert_eq!(active.id, db::accepted_note_id(first));
    assert_eq!(
        active.content.lessons_text,
        "- cut losers early\n- buy the dip at 60k"
    );
    assert_eq!(
        pg.store
            .active_note(scope, at(19))
            .await
            .unwrap()
            .unwrap()
            .id,
        note.id
    );

    let (code, _, stderr) = live(args(&[
        "lessons",
        "reject",
        &short(second),
        "--db",
        &url,
        "--by",
        "ops",
        "--at",
        &when,
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    let rejected = pg
        .store
        .held_lessons(scope, Some(HeldStatus::Rejected), 10)
        .await
        .unwrap();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].reviewed_by.as_deref(), Some("ops"));

    // Bad input exits 2 and names the problem.
    for (a, needle) in [
        (
            args(&[
                "lessons",
                "reject",
                &short(second),
                "--db",
                &url,
                "--by",
                "ops",
            ]),
            "already rejected by ops",
        ),
        (
            args(&["lessons", "accept", "xyz", "--db", &url, "--by", "ops"]),
            "at least 8 hex digits",
        ),
        (
            args(&[
                "lessons",
                "held",
                "--db",
                &url,
                "--deployment",
                &deployment,
                "--status",
                "x",
            ]),
            "--status",
        ),
        (
            args(&[
                "lessons",
                "held",
                "--db",
                &url,
                "--deployment",
                &uuid::Uuid::new_v4().to_string(),
            ]),
            "--deployment",
        ),
    ] {
        let (code, stdout, stderr) = live(a.clone()).await;
        assert_eq!(code, 2, "{a:?}: {stderr}");
        assert!(stdout.is_empty(), "{a:?}: {stdout}");
        assert!(stderr.contains(needle), "{a:?}: {stderr}");
    }
}

/// `live-runner lessons` as a user (`--user`: under row-level security, only their own
/// deployments' bullets, the review naming them) and as the operator (`operator:$USER` when
/// no one is named), with a reason: the same store method and audit as the API's.
#[tokio::test]
async fn held_lessons_are_reviewed_as_a_user_or_as_the_operator() {
    use db::test_support::sample_note;
    use db::{HeldStatus, NoteScope, NoteStore};

    let pg = postgres().await;
    let url = pg.url();
    let mine = seed(&pg.store).await.unwrap();
    let theirs = seed(&pg.store).await.unwrap();
    let held_note = |fx: &db::test_support::Fixture, bullets: &[&str]| {
        let mut note = sample_note(fx, at(10), "- cut losers early");
        note.content.held = bullets
            .iter()
            .map(|text| types::HeldLesson {
                text: (*text).into(),
                reasons: vec!["names a price level".into()],
            })
            .collect();
        note
    };
    let my_note = held_note(&mine, &["- buy the dip at 60k", "- double the size"]);
    let their_note = held_note(&theirs, &["- theirs"]);
    pg.store.insert_note(&my_note).await.unwrap();
    pg.store.insert_note(&their_note).await.unwrap();
    let short = |id: uuid::Uuid| id.simple().to_string()[..8].to_owned();
    let (first, second) = (
        db::held_lesson_id(my_note.id, 0),
        db::held_lesson_id(my_note.id, 1),
    );
    let their_bullet = db::held_lesson_id(their_note.id, 0);
    let me = mine.user.id.to_string();
    let run = |a: Vec<String>| async move {
        let out = tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_live-runner"))
                .args(&a)
                .env_remove("DATABASE_URL")
                .env("USER", "dana")
                .output()
                .expect("run live-runner")
        })
        .await
        .expect("join");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    // As the user: their only deployment needs no --deployment, and only their bullets show.
    let (code, listed, stderr) = run(args(&["lessons", "held", "--db", &url, "--user", &me])).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        listed.starts_with(&format!(
            "deployment {}: 2 pending lessons",
            mine.deployment.id
        )),
        "{listed}"
    );
    assert!(!listed.contains(&short(their_bullet)), "{listed}");

    let (code, out, stderr) = run(args(&[
        "lessons",
        "accept",
        &short(first),
        "--db",
        &url,
        "--user",
        &me,
        "--reason",
        "fits the ledger",
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains(&format!("accepted by {me}")), "{out}");

    // Another user's bullet is not found as this user; the operator (no --user) may decide it.
    let (code, stdout, stderr) = run(args(&[
        "lessons",
        "reject",
        &short(their_bullet),
        "--db",
        &url,
        "--user",
        &me,
    ]))
    .await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains(&format!(
            "no held lesson has an id starting with {}",
            short(their_bullet)
        )),
        "{stderr}"
    );
    assert_eq!(
        pg.store
            .held_lessons(
                NoteScope::Deployment(theirs.deployment.id),
                Some(HeldStatus::Pending),
                10
            )
            .await
            .unwrap()
            .len(),
        1
    );
    let (code, out, stderr) = run(args(&["lessons", "reject", &short(second), "--db", &url])).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains("rejected by operator:dana"), "{out}");

    let rows = pg
        .store
        .held_lessons(NoteScope::Deployment(mine.deployment.id), None, 10)
        .await
        .unwrap();
    assert_eq!(
        (
            rows[0].status,
            rows[0].reviewed_by.as_deref(),
            rows[0].review_reason.as_deref()
        ),
        (
            HeldStatus::Accepted,
            Some(me.as_str()),
            Some("fits the ledger")
        )
    );
    assert_eq!(
        (rows[1].status, rows[1].reviewed_by.as_deref()),
        (HeldStatus::Rejected, Some("operator:dana"))
    );
    let (code, all, _) = run(args(&[
        "lessons", "held", "--db", &url, "--user", &me, "--status", "all",
    ]))
    .await;
    assert_eq!(code, 0);
    assert!(all.contains("  review: \"fits the ledger\"\n"), "{all}");

    // Bad input exits 2: --user with --by, a blank reason.
    for (a, needle) in [
        (
            args(&[
                "lessons",
                "reject",
                &short(second),
                "--db",
                &url,
                "--user",
                &me,
                "--by",
                "x",
            ]),
            "--by",
        ),
        (
            args(&[
                "lessons",
                "reject",
                &short(their_bullet),
                "--db",
                &url,
                "--reason",
                " ",
            ]),
            "--reason",
        ),
    ] {
        let (code, stdout, stderr) = run(a.clone()).await;
        assert_eq!(code, 2, "{a:?}: {stderr}");
        assert!(stdout.is_empty(), "{a:?}: {stdout}");
        assert!(stderr.contains(needle), "{a:?}: {stderr}");
    }
}

/// Reviewing as a user needs row-level security: on a SQLite store `--user` is refused (exit 2)
/// and nothing is read.
#[tokio::test]
async fn a_review_as_a_user_needs_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("run.db").display());
    db::connect(&url).await.unwrap().close().await.unwrap();
    let user = uuid::Uuid::new_v4().to_string();
    for a in [
        args(&["lessons", "held", "--db", &url, "--user", &user]),
        args(&[
            "lessons", "accept", "0123abcd", "--db", &url, "--user", &user,
        ]),
    ] {
        let (code, stdout, stderr) = live(a.clone()).await;
        assert_eq!(code, 2, "{a:?}: {stderr}");
        assert!(stdout.is_empty());
        assert!(stderr.contains("needs PostgreSQL"), "{a:?}: {stderr}");
    }
}
