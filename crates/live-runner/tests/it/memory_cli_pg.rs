//! `live-runner annotate` and `live-runner memory-stats` over PostgreSQL: the same arguments and
//! output as `sim-worker`'s (one implementation, `tick::memory_cmd`).

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
