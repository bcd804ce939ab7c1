//! `sim-worker score-outcomes`: the live scorer's path over bar files reproduces the scores the
//! backtest wrote in its loop.

use crate::common::{backtest_to, repo, sim};
use db::OutcomeStore;
use outcomes::OutcomeScore;
use types::Uuid;

#[tokio::test]
async fn score_outcomes_rescores_a_backtest_store_as_its_loop_did() {
    let dir = tempfile::tempdir().unwrap();
    let (url, deployment) = backtest_to(dir.path(), "2017-05-31");
    let d: Uuid = deployment.parse().unwrap();
    let store = db::open_existing(&url).await.unwrap();
    let before = store.outcomes(d, 1000).await.unwrap();
    let touched = before.iter().filter(|o| !o.score.is_empty()).count();
    let graded = before.iter().filter(|o| o.score.is_final()).count();
    assert!(
        graded >= 3 && before.len() > graded,
        "{graded} of {}",
        before.len()
    );
    assert!(
        before
            .iter()
            .filter(|o| o.score.is_final())
            .all(|o| o.score.narrative.is_some())
    );
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let last_tick: String = sqlx::query_scalar("SELECT max(tick_at) FROM decision_snapshots")
        .fetch_one(&pool)
        .await
        .unwrap();
    // Forget every score, then let the command score them again.
    sqlx::query(
        "UPDATE trade_outcomes SET price_1h = NULL, price_4h = NULL, price_24h = NULL, \
         pnl_percent_1h = NULL, pnl_percent_4h = NULL, pnl_percent_24h = NULL, hit_target = NULL, \
         hit_stop = NULL, first_hit = NULL, max_favorable = NULL, max_adverse = NULL, \
         outcome_grade = NULL, scored_at = NULL, narrative = NULL",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let now: chrono::DateTime<chrono::Utc> = last_tick.parse().unwrap();

    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let (code, stdout, stderr) = sim(&[
        "score-outcomes",
        "--db",
        &url,
        "--bars",
        &bars,
        "--at",
        &last_tick,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        format!(
            "scored as of {last_tick}: {} due, {touched} rows changed, {graded} graded, 0 skipped\n",
            before
                .iter()
                .filter(|o| o.tick_at + chrono::Duration::hours(1) <= now)
                .count()
        )
    );
    // The same scores as the backtest's loop (which scored at its own tick times).
    let after = store.outcomes(d, 1000).await.unwrap();
    let without_time = |s: &OutcomeScore| OutcomeScore {
        scored_at: None,
        ..s.clone()
    };
    assert_eq!(after.len(), before.len());
    for (a, b) in after.iter().zip(&before) {
        assert_eq!(a.id, b.id);
        assert_eq!(without_time(&a.score), without_time(&b.score), "{}", a.id);
        assert_eq!(a.score.scored_at.is_some(), b.score.scored_at.is_some());
    }
    // A second run (under the old name of the flag) finds nothing to change.
    let (code, stdout, _) = sim(&[
        "score-outcomes",
        "--db",
        &url,
        "--bars",
        &bars,
        "--now",
        &last_tick,
    ]);
    assert_eq!(code, 0);
    assert!(stdout.contains(" 0 rows changed, 0 graded"), "{stdout}");
}

#[test]
fn score_outcomes_names_a_malformed_bars_flag() {
    let (code, stdout, stderr) = sim(&[
        "score-outcomes",
        "--db",
        "sqlite:///nonexistent.sqlite",
        "--bars",
        "EURUSD",
    ]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("--bars \"EURUSD\": expected SYMBOL=FILE"),
        "{stderr}"
    );
}

#[tokio::test]
async fn score_outcomes_regrade_restores_grades_and_narratives_from_stored_figures() {
    let dir = tempfile::tempdir().unwrap();
    let (url, deployment) = backtest_to(dir.path(), "2017-05-31");
    let d: Uuid = deployment.parse().unwrap();
    let store = db::open_existing(&url).await.unwrap();
    let before = store.outcomes(d, 1000).await.unwrap();
    let graded = before.iter().filter(|o| o.score.is_final()).count();
    assert!(graded >= 3, "{graded} of {}", before.len());
    // What an earlier scorer left: another grade and a text without the hit line.
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query(
        "UPDATE trade_outcomes SET outcome_grade = 'C', narrative = 'EURUSD - Grade C' \
         WHERE scored_at IS NOT NULL",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;

    let (code, stdout, stderr) = sim(&["score-outcomes", "--db", &url, "--regrade"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        format!("regraded {graded} scored outcomes: {graded} changed\n")
    );
    // Exactly what the backtest's scorer wrote, which is `outcomes::regrade` of each row.
    let after = store.outcomes(d, 1000).await.unwrap();
    assert_eq!(after, before);
    for o in &after {
        let snapshot = store.market_snapshot(o.snapshot_id).await.unwrap();
        assert_eq!(outcomes::regrade(o, Some(&snapshot.indicators)), o.score);
        if o.score.is_final() {
            assert!(
                o.score
                    .narrative
                    .as_deref()
                    .is_some_and(|n| n.contains("\nSetup: ")),
                "{:?}",
                o.score.narrative
            );
        }
    }
    let (code, stdout, _) = sim(&["score-outcomes", "--db", &url, "--regrade"]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        format!("regraded {graded} scored outcomes: 0 changed\n")
    );
}

#[test]
fn score_outcomes_regrade_takes_no_bars() {
    let (code, stdout, stderr) = sim(&[
        "score-outcomes",
        "--db",
        "sqlite:///nonexistent.sqlite",
        "--regrade",
        "--bars",
        "EURUSD=x.csv",
    ]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("--regrade") && stderr.contains("--bars"),
        "{stderr}"
    );
}
