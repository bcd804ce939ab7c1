//! `sim-worker memory-stats` and `sim-worker annotate` over the outcome memory a backtest wrote;
//! the expected figures come from SQL over the store, not from the command's own code.

use std::path::Path;

use crate::common::{backtest_to, sim};
use chrono::{DateTime, Duration, Utc};
use db::{AnnotationTarget, OutcomeStore};
use serde_json::Value;
use types::Uuid;

/// The README backtest up to 2017-05-31; returns (store url, deployment id).
fn backtest(dir: &Path) -> (String, String) {
    backtest_to(dir, "2017-05-31")
}

async fn pool(url: &str) -> sqlx::SqlitePool {
    sqlx::SqlitePool::connect(url).await.unwrap()
}

fn dec(v: &Value) -> f64 {
    v.as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn memory_stats_match_sql_over_the_store_and_annotate_stores_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let (url, deployment) = backtest(dir.path());
    let lite = pool(&url).await;

    // The window: the 10 days [at − 10 d, at) ending just after the latest outcome's tick.
    let latest: String =
        sqlx::query_scalar("SELECT max(tick_at) FROM trade_outcomes WHERE symbol = 'EURUSD'")
            .fetch_one(&lite)
            .await
            .unwrap();
    let latest: DateTime<Utc> = latest.parse().unwrap();
    let at_t = latest + Duration::microseconds(1);
    let at = db::time_text(at_t);
    let from = db::time_text(at_t - Duration::days(10));
    let count: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM trade_outcomes WHERE symbol = 'EURUSD' AND tick_at >= ? AND tick_at < ?",
    )
    .bind(&from)
    .bind(&at)
    .fetch_one(&lite)
    .await
    .unwrap();
    let scored_where = "symbol = 'EURUSD' AND tick_at >= ?1 AND tick_at < ?2 \
                        AND scored_at IS NOT NULL AND scored_at <= ?2";
    let (scored, hit_target, hit_stop, wins, mean_24h): (i64, i64, i64, i64, Option<f64>) =
        sqlx::query_as(&format!(
            "SELECT count(*), coalesce(sum(hit_target), 0), coalesce(sum(hit_stop), 0), \
             coalesce(sum(outcome_grade IN ('A', 'B')), 0), \
             avg(CAST(pnl_percent_24h AS REAL)) FROM trade_outcomes WHERE {scored_where}"
        ))
        .bind(&from)
        .bind(&at)
        .fetch_one(&lite)
        .await
        .unwrap();
    let grades: Vec<(String, i64)> = sqlx::query_as(&format!(
        "SELECT outcome_grade, count(*) FROM trade_outcomes WHERE {scored_where} GROUP BY 1"
    ))
    .bind(&from)
    .bind(&at)
    .fetch_all(&lite)
    .await
    .unwrap();
    let pnl_1h: Vec<f64> = sqlx::query_scalar(&format!(
        "SELECT CAST(pnl_percent_1h AS REAL) FROM trade_outcomes WHERE {scored_where} \
         AND pnl_percent_1h IS NOT NULL ORDER BY 1"
    ))
    .bind(&from)
    .bind(&at)
    .fetch_all(&lite)
    .await
    .unwrap();
    // The window must exercise the figures: scored rows and, at its end, unscored ones.
    assert!(scored >= 3, "scored {scored} of {count}");
    assert!(
        count > scored,
        "the last day's outcomes are unscored at `at`"
    );

    let (code, stdout, stderr) = sim(&[
        "memory-stats",
        "--db",
        &url,
        "--symbol",
        "EURUSD",
        "--days",
        "10",
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let at_out: DateTime<Utc> = v["at"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        at_out, at_t,
        "the default end is just after the latest outcome's tick"
    );
    assert_eq!(v["count"], count);
    assert_eq!(v["scored"], scored);
    assert_eq!(v["hit_target"], hit_target);
    assert_eq!(v["hit_stop"], hit_stop);
    assert_eq!(v["wins"], wins);
    for g in ["A", "B", "C", "D", "F"] {
        let n = grades.iter().find(|(x, _)| x == g).map_or(0, |(_, n)| *n);
        assert_eq!(v["grades"][g], n, "grade {g}: {stdout}");
    }
    let win_rate = dec(&v["win_rate_pct"]);
    assert!((win_rate - 100.0 * wins as f64 / scored as f64).abs() < 0.006);
    assert!((dec(&v["pnl_percent"]["24h"]["mean"]) - mean_24h.unwrap()).abs() < 0.0001);
    let n = pnl_1h.len();
    let median = if n % 2 == 1 {
        pnl_1h[n / 2]
    } else {
        f64::midpoint(pnl_1h[n / 2 - 1], pnl_1h[n / 2])
    };
    assert!((dec(&v["pnl_percent"]["1h"]["median"]) - median).abs() < 0.0001);

    // The text form states the same counts; the deployment filter selects the same rows.
    let (code, text, stderr) = sim(&[
        "memory-stats",
        "--db",
        &url,
        "--deployment",
        &deployment,
        "--symbol",
        "EURUSD",
        "--days",
        "10",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.contains(&format!(
            "outcomes: {count}  scored: {scored}  unscored: {}",
            count - scored
        )),
        "{text}"
    );
    assert!(text.contains(&format!("({wins} of {scored})")), "{text}");
    assert!(text.contains("pnl 24h: mean "), "{text}");

    // Point in time: a day earlier, the outcomes scored since count as unscored.
    let earlier = db::time_text(at_t - Duration::days(1));
    let (scored_then, total_then, scored_since): (i64, i64, i64) = sqlx::query_as(
        "SELECT coalesce(sum(scored_at IS NOT NULL AND scored_at <= ?2), 0), count(*), \
         coalesce(sum(scored_at > ?2), 0) \
         FROM trade_outcomes WHERE symbol = 'EURUSD' AND tick_at >= ?1 AND tick_at < ?2",
    )
    .bind(db::time_text(at_t - Duration::days(4)))
    .bind(&earlier)
    .fetch_one(&lite)
    .await
    .unwrap();
    let (code, stdout, stderr) = sim(&[
        "memory-stats",
        "--db",
        &url,
        "--symbol",
        "EURUSD",
        "--days",
        "3",
        "--at",
        &earlier,
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        scored_since >= 1,
        "the window holds an outcome scored after its end"
    );
    assert_eq!(v["count"], total_then);
    assert_eq!(v["scored"], scored_then);

    // Annotate an outcome; the store holds it on that outcome, with its tags.
    let outcome: String =
        sqlx::query_scalar("SELECT id FROM trade_outcomes ORDER BY tick_at LIMIT 1")
            .fetch_one(&lite)
            .await
            .unwrap();
    let (code, stdout, stderr) = sim(&[
        "annotate",
        "--db",
        &url,
        "--outcome",
        &outcome,
        "--text",
        "entered into the ECB speech",
        "--tag",
        "news",
        "--tag",
        "ecb",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let id: Uuid = stdout.trim().parse().unwrap();
    lite.close().await;
    let store = db::open_existing(&url).await.unwrap();
    let notes = store
        .annotations(deployment.parse().unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].id, id);
    assert_eq!(
        notes[0].target,
        AnnotationTarget::Outcome(outcome.parse().unwrap())
    );
    assert_eq!(notes[0].annotation, "entered into the ECB speech");
    assert_eq!(notes[0].tags, ["news", "ecb"]);
    store.close().await.unwrap();

    // Bad input: exit 2 naming the flag or the id, nothing on stdout, nothing stored.
    let unknown = Uuid::new_v4().to_string();
    let long = "x".repeat(db::MAX_ANNOTATION_CHARS + 1);
    let many: Vec<String> = (0..=db::MAX_ANNOTATION_TAGS)
        .flat_map(|i| ["--tag".to_owned(), format!("t{i}")])
        .collect();
    let mut too_many = vec![
        "annotate",
        "--db",
        &url,
        "--outcome",
        &outcome,
        "--text",
        "t",
    ];
    too_many.extend(many.iter().map(String::as_str));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "annotate",
                "--db",
                &url,
                "--outcome",
                &unknown,
                "--text",
                "t",
            ],
            unknown.as_str(),
        ),
        (
            vec!["annotate", "--db", &url, "--trade", &unknown, "--text", "t"],
            "--trade",
        ),
        (
            vec![
                "annotate",
                "--db",
                &url,
                "--outcome",
                &outcome,
                "--text",
                "",
            ],
            "--text",
        ),
        (
            vec![
                "annotate",
                "--db",
                &url,
                "--outcome",
                &outcome,
                "--text",
                &long,
            ],
            "--text",
        ),
        (too_many, "--tag"),
        (
            vec![
                "annotate",
                "--db",
                &url,
                "--outcome",
                &outcome,
                "--text",
                "t",
                "--tag",
                "",
            ],
            "--tag",
        ),
        (
            vec!["annotate", "--db", &url, "--outcome", "nope", "--text", "t"],
            "--outcome",
        ),
        (
            vec![
                "annotate",
                "--db",
                &url,
                "--outcome",
                &outcome,
                "--trade",
                &outcome,
                "--text",
                "t",
            ],
            "--trade",
        ),
        (
            vec![
                "memory-stats",
                "--db",
                &url,
                "--symbol",
                "EURUSD",
                "--days",
                "0",
            ],
            "--days",
        ),
        (
            vec![
                "memory-stats",
                "--db",
                &url,
                "--symbol",
                "BTC",
                "--days",
                "5",
            ],
            "--symbol",
        ),
        (
            vec![
                "memory-stats",
                "--db",
                &url,
                "--deployment",
                &unknown,
                "--symbol",
                "EURUSD",
                "--days",
                "5",
            ],
            "--deployment",
        ),
    ];
    for (args, named) in &cases {
        let (code, stdout, stderr) = sim(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.contains(named), "{args:?} names {named}: {stderr}");
    }
    let store = db::open_existing(&url).await.unwrap();
    let notes = store
        .annotations(deployment.parse().unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(notes.len(), 1, "bad input stored nothing");
    store.close().await.unwrap();
}

#[test]
fn a_missing_store_is_an_error_and_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.db");
    let url = format!("sqlite://{}", path.display());
    let id = Uuid::new_v4().to_string();
    for args in [
        vec!["annotate", "--db", &url, "--outcome", &id, "--text", "t"],
        vec![
            "memory-stats",
            "--db",
            &url,
            "--symbol",
            "EURUSD",
            "--days",
            "5",
        ],
    ] {
        let (code, stdout, stderr) = sim(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert!(stderr.contains("--db"), "{stderr}");
        assert!(!path.exists(), "{args:?} created the store");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
