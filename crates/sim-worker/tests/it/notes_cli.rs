//! `sim-worker notes` and `sim-worker reflect` over the store a backtest wrote.

use std::path::Path;

use crate::common::{backtest_to, backtest_with, sim};

/// A month of EURUSD with reflection every 5 closed trades; returns (store url, deployment id).
fn backtest(dir: &Path) -> (String, String) {
    backtest_to(dir, "2017-05-18")
}

#[test]
fn notes_lists_the_history_and_reflect_adds_a_note_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let (url, id) = backtest(dir.path());

    let (code, before, stderr) = sim(&["notes", "--db", &url, "--deployment", &id]);
    assert_eq!(code, 0, "{stderr}");
    let count = |text: &str, status: &str| {
        text.lines()
            .filter(|l| l.contains(&format!(" {status} generated ")))
            .count()
    };
    let notes_before = count(&before, "active") + count(&before, "superseded");
    assert!(notes_before >= 1, "the run wrote notes: {before}");
    assert_eq!(
        count(&before, "active"),
        1,
        "exactly one active note: {before}"
    );
    assert!(
        before.contains("n="),
        "stats lessons state their sample sizes: {before}"
    );

    // A reflection after the run: the stats reflector over the trades closed since the last note.
    let (code, stdout, stderr) = sim(&[
        "reflect",
        "--db",
        &url,
        "--deployment",
        &id,
        "--model",
        "builtin/stats-reflection",
        "--at",
        "2017-06-30T00:00:00Z",
    ]);
    let (_, after, _) = sim(&["notes", "--db", &url, "--deployment", &id]);
    // Three trades closed after the last note of the run (its window ended 2017-05-10 12:00).
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("note ") && stdout.contains("(active)"),
        "{stdout}"
    );
    assert!(stdout.contains("3 closed trades"), "{stdout}");
    assert!(
        stdout.contains("- All trades of the window: lost 3 of 3 (n=3,"),
        "{stdout}"
    );
    assert_eq!(
        count(&after, "active") + count(&after, "superseded"),
        notes_before + 1
    );
    assert_eq!(count(&after, "active"), 1);

    // A reflection cannot be placed before the latest note.
    let (code, _, stderr) = sim(&[
        "reflect",
        "--db",
        &url,
        "--deployment",
        &id,
        "--at",
        "2017-04-20T00:00:00Z",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("is not after the latest note"), "{stderr}");

    let (code, _, stderr) = sim(&[
        "notes",
        "--db",
        &url,
        "--deployment",
        "6f9619ff-8b86-d011-b42d-00c04fc964ff",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
        "{stderr}"
    );
}

#[test]
fn accept_note_refuses_a_note_that_is_not_pending_review() {
    let dir = tempfile::tempdir().unwrap();
    let (url, id) = backtest(dir.path());
    let (_, notes, _) = sim(&["notes", "--db", &url, "--deployment", &id]);
    // The stats reflection is never flagged, so the active note is not pending review.
    let active = notes
        .lines()
        .find(|l| l.contains(" active generated "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    let (code, stdout, stderr) = sim(&["accept-note", "--db", &url, "--note", &active]);
    assert_eq!(code, 2, "{stdout}");
    assert!(stderr.contains("is active, not pending review"), "{stderr}");
    let (code, _, stderr) = sim(&[
        "accept-note",
        "--db",
        &url,
        "--note",
        "6f9619ff-8b86-d011-b42d-00c04fc964ff",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
        "{stderr}"
    );
}

#[test]
fn promote_note_copies_a_deployment_note_to_its_skill_from_the_given_time() {
    let dir = tempfile::tempdir().unwrap();
    let (url, id) = backtest(dir.path());
    let (_, notes, _) = sim(&["notes", "--db", &url, "--deployment", &id]);
    let active = notes
        .lines()
        .find(|l| l.contains(" active generated "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    let at = "2017-06-01T00:00:00Z";
    let (code, stdout, stderr) =
        sim(&["promote-note", "--db", &url, "--note", &active, "--at", at]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with(&format!("note {active} promoted: skill-scoped note ")),
        "{stdout}"
    );
    assert!(
        stdout
            .trim_end()
            .ends_with("in force from 2017-06-01T00:00:00+00:00"),
        "{stdout}"
    );
    // The copy is the skill's note: promoting it again is refused, naming why.
    let copy = stdout.split_whitespace().nth(5).unwrap();
    let (code, _, stderr) = sim(&["promote-note", "--db", &url, "--note", copy]);
    assert_eq!(code, 2);
    assert!(stderr.contains("is already skill-scoped"), "{stderr}");
    let (code, _, stderr) = sim(&[
        "promote-note",
        "--db",
        &url,
        "--note",
        "6f9619ff-8b86-d011-b42d-00c04fc964ff",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--note 6f9619ff-8b86-d011-b42d-00c04fc964ff"),
        "{stderr}"
    );
}

/// The commands that read or amend a recorded run, over `url`.
fn read_only_commands(url: &str) -> Vec<Vec<String>> {
    let id = "6f9619ff-8b86-d011-b42d-00c04fc964ff";
    [
        vec!["notes", "--db", url, "--deployment", id],
        vec![
            "reflect",
            "--db",
            url,
            "--deployment",
            id,
            "--model",
            "builtin/stats-reflection",
        ],
        vec!["accept-note", "--db", url, "--note", id],
        vec!["ledger", "rebuild", "--db", url, "--deployment", id],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(str::to_owned).collect())
    .collect()
}

#[test]
fn a_mistyped_sqlite_path_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mistyped.db");
    for url in [
        format!("sqlite://{}?mode=rwc", path.display()),
        format!("sqlite:{}", path.display()),
    ] {
        for args in read_only_commands(&url) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, stdout, stderr) = sim(&args);
            assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
            assert!(
                stderr.contains("cannot open") || stderr.contains("error"),
                "{stderr}"
            );
            assert!(!path.exists(), "{args:?} created {}", path.display());
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn an_unmigrated_postgres_database_is_not_migrated_by_a_read_only_command() {
    let test_db = db::test_support::pg::TestDatabase::create("sim_worker_readonly_", 1).await;
    let url = test_db.url();
    for args in read_only_commands(&url) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = sim(&args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(
            stderr.contains("has not been migrated"),
            "{args:?}: {stderr}"
        );
    }
    let tables: i64 = sqlx::query_scalar(
        "select count(*) from information_schema.tables where table_schema = 'public'",
    )
    .fetch_one(&test_db.pool)
    .await
    .unwrap();
    assert_eq!(tables, 0, "a read-only command created tables");
}

#[test]
fn without_deployment_the_commands_read_the_only_one_and_name_the_choices_when_there_are_several() {
    let dir = tempfile::tempdir().unwrap();
    let (url, id) = backtest(dir.path());
    // A run's store holds one deployment: `--deployment` may be left out.
    let (code, named, stderr) = sim(&["notes", "--db", &url, "--deployment", &id]);
    assert_eq!(code, 0, "{stderr}");
    let (code, implied, stderr) = sim(&["notes", "--db", &url]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(implied, named);
    for args in [
        &["lessons", "held", "--db", &url][..],
        &["ledger", "rebuild", "--db", &url][..],
    ] {
        let (code, stdout, stderr) = sim(args);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert!(stdout.starts_with(&format!("deployment {id}")), "{stdout}");
    }

    // A second run into the same store: now the commands want to be told which, and say
    // which there are.
    let shared = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("shared.db").display()
    );
    let ids: Vec<String> = [("2017-05-10", "a"), ("2017-05-12", "b")]
        .into_iter()
        .map(|(to, out)| backtest_with(&dir.path().join(out), to, &["--db", &shared]).1)
        .collect();
    assert_ne!(ids[0], ids[1]);
    for args in [
        &["notes", "--db", &shared][..],
        &["reflect", "--db", &shared][..],
        &["lessons", "held", "--db", &shared][..],
        &["ledger", "rebuild", "--db", &shared][..],
    ] {
        let (code, stdout, stderr) = sim(args);
        assert_eq!(code, 2, "{args:?}: {stdout}");
        assert!(
            stderr.contains("--deployment is needed: the store holds 2 deployments"),
            "{args:?}: {stderr}"
        );
        for id in &ids {
            assert!(stderr.contains(id.as_str()), "{args:?}: {stderr}");
        }
    }
}
