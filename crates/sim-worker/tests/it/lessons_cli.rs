//! `sim-worker lessons held|accept|reject` over the store a backtest wrote, with a note whose
//! bullets the lesson defences held back written beside the run's notes.

use chrono::{DateTime, Utc};
use db::{NewNote, NoteScope, NoteStore, RegistryStore};
use types::{HeldLesson, NoteContent, Uuid};

use crate::common::{backtest_to, sim};

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// A note after the run's last one with two held bullets; returns its held ids.
async fn held_note(url: &str, deployment: Uuid) -> (Uuid, [Uuid; 2]) {
    let store = db::open_existing(url).await.unwrap();
    let d = store.get_deployment(deployment).await.unwrap();
    let held = |text: &str, reason: &str| HeldLesson {
        text: text.into(),
        reasons: vec![reason.into()],
    };
    let note = NewNote {
        id: Uuid::new_v4(),
        skill_id: d.skill_id,
        skill_version: d.skill_version,
        deployment_id: Some(d.id),
        generated_at: t("2017-06-30T00:00:00Z"),
        content: NoteContent {
            window_start: t("2017-05-18T00:00:00Z"),
            window_end: t("2017-06-30T00:00:00Z"),
            trades_considered: 3,
            lessons_text: "- Overall: n=3, the stats bullet".into(),
            model_used: "builtin/scripted".into(),
            input_tokens: Some(0),
            output_tokens: Some(0),
            cost_usd: None,
            observations: Vec::new(),
            dropped: Vec::new(),
            held: vec![
                held("- Buy EURUSD under 1.0900", "names a price level"),
                held(
                    "- Ignore the stop loss",
                    "contradicts the strategy's risk rules",
                ),
            ],
        },
        lint: None,
    };
    store.insert_note(&note).await.unwrap();
    store.close().await.unwrap();
    (
        note.id,
        [
            db::held_lesson_id(note.id, 0),
            db::held_lesson_id(note.id, 1),
        ],
    )
}

#[tokio::test]
async fn held_bullets_are_listed_accepted_and_rejected_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let (url, id) = backtest_to(dir.path(), "2017-05-18");
    let deployment: Uuid = id.parse().unwrap();
    let (note, [first, second]) = held_note(&url, deployment).await;
    let short = |id: Uuid| id.simple().to_string()[..8].to_owned();

    let (code, listed, stderr) = sim(&["lessons", "held", "--db", &url, "--deployment", &id]);
    assert_eq!(code, 0, "{stderr}");
    assert!(listed.contains("2 pending lessons"), "{listed}");
    assert!(
        listed.contains(&format!("{} pending note {note} #1", short(first))),
        "{listed}"
    );
    assert!(listed.contains("  - Buy EURUSD under 1.0900\n"), "{listed}");
    assert!(listed.contains("  held back: contradicts the strategy's risk rules\n"));

    let (code, out, stderr) = sim(&[
        "lessons",
        "accept",
        &short(first),
        "--db",
        &url,
        "--by",
        "alice",
        "--at",
        "2017-07-01T00:00:00Z",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let resulting = db::accepted_note_id(first);
    assert_eq!(
        out,
        format!(
            "held lesson {} accepted by alice: note {resulting} is in force from \
             2017-07-01T00:00:00+00:00\n",
            short(first)
        )
    );
    // The full id, hyphens or not, names it as well.
    let (code, out, stderr) = sim(&[
        "lessons",
        "reject",
        &second.simple().to_string(),
        "--db",
        &url,
        "--by",
        "bob",
        "--reason",
        "contradicts the stop rule",
        "--at",
        "2017-07-02T00:00:00Z",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains("rejected by bob"), "{out}");

    let store = db::open_existing(&url).await.unwrap();
    let scope = NoteScope::Deployment(deployment);
    let active = store
        .active_note(scope, t("2017-07-01T00:00:00Z"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(active.id, resulting);
    assert_eq!(
        active.content.lessons_text,
        "- Overall: n=3, the stats bullet\n- Buy EURUSD under 1.0900"
    );
    let before = store
        .active_note(scope, t("2017-06-30T23:59:59Z"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(before.id, note);
    store.close().await.unwrap();

    let (code, all, stderr) = sim(&[
        "lessons",
        "held",
        "--db",
        &url,
        "--deployment",
        &id,
        "--status",
        "all",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        all.contains("accepted note") && all.contains(&format!("→ note {resulting}")),
        "{all}"
    );
    assert!(
        all.contains("rejected note") && all.contains("by bob at 2017-07-02T00:00:00+00:00"),
        "{all}"
    );
    assert!(
        all.contains("  review: \"contradicts the stop rule\"\n"),
        "the reviewer's reason is kept: {all}"
    );
    let (code, pending, _) = sim(&["lessons", "held", "--db", &url, "--deployment", &id]);
    assert_eq!(code, 0);
    assert_eq!(pending, format!("deployment {id}: no pending lessons\n"));

    // Bad input: exit 2, the problem named, nothing on stdout.
    for (args, needle) in [
        (
            vec![
                "lessons",
                "accept",
                &short(first)[..6],
                "--db",
                &url,
                "--by",
                "a",
            ],
            "at least 8 hex digits",
        ),
        (
            vec![
                "lessons",
                "accept",
                &short(first),
                "--db",
                &url,
                "--by",
                "a",
            ],
            "already accepted by alice",
        ),
        (
            vec!["lessons", "reject", "00000000", "--db", &url, "--by", "a"],
            "no held lesson has an id starting with 00000000",
        ),
        (
            vec![
                "lessons",
                "reject",
                &short(second),
                "--db",
                &url,
                "--by",
                " ",
            ],
            "--by",
        ),
        (
            vec![
                "lessons",
                "held",
                "--db",
                &url,
                "--deployment",
                &id,
                "--status",
                "open",
            ],
            "--status: \"open\" is not one of pending, accepted, rejected, all",
        ),
        (
            vec![
                "lessons",
                "accept",
                &short(first),
                "--db",
                &url,
                "--by",
                "a",
                "--at",
                "soon",
            ],
            "--at",
        ),
    ] {
        let (code, stdout, stderr) = sim(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
