//! Funding and open interest in a live tick (PostgreSQL): a paper deployment of a skill that
//! whitelists `get_funding_rate` and `get_open_interest`, ticked by the runner against a mock
//! Hyperliquid info endpoint serving `candleSnapshot`, `fundingHistory` (with a print stamped
//! after the tick, which must not show) and `metaAndAssetCtxs` (the documented-shape fixture).
//! The stored snapshot's Derivatives section holds the served values; when both requests fail
//! the tick still runs and the section says the data is unknown.

use crate::common;

use chrono::Duration;
use common::{hyperliquid_mock, postgres, runner, t};
use db::TickStore;
use live_runner::admin::{self, DeployRequest};
use live_runner::test_support::paper_deploy;
use serde_json::Value;
use uuid::Uuid;

const OWNER: Uuid = Uuid::from_u128(0xde71);

async fn deploy(pg: &common::Pg, id: u128, at: chrono::DateTime<chrono::Utc>) -> db::Deployment {
    let mut skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    skill.tools.built_in = vec![
        "propose_order".into(),
        "get_funding_rate".into(),
        "get_open_interest".into(),
    ];
    let req = DeployRequest {
        id: Some(Uuid::from_u128(id)),
        ..paper_deploy(OWNER)
    };
    admin::deploy(&pg.store, &skill, &req, at - Duration::minutes(30))
        .await
        .unwrap()
}

fn derivatives_section(context: &str) -> &str {
    let section = context
        .split("## Derivatives (perpetual funding and open interest)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no Derivatives section:\n{context}"));
    section.split("\n\n").next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_tick_snapshot_holds_the_served_funding_and_open_interest() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let tick = t("2026-11-02T12:00:00Z");
    common::mount_derivatives(&hl, tick).await;
    let d = deploy(&pg, 0xd1, tick).await;

    let r = runner(
        &pg,
        &hl,
        tick + Duration::seconds(2),
        "derivatives",
        1,
        None,
    )
    .await;
    r.clone().run(std::future::pending()).await.expect("run");
    assert_eq!(r.metrics().ticks("recorded"), 1);

    let snaps = pg.store.list_snapshots(d.id, 10).await.unwrap();
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0].tick_at, tick);
    // 688.11 BTC open interest at the fixture's mark 26,951: $18,545,252.61.
    assert_eq!(
        derivatives_section(&snaps[0].context),
        "- BTC funding +0.0020% per 1h at 11-02T12:00 (annualised +17.52%), mean of last 24 \
         +0.0013% · open interest 688.11 BTC ($18,545,252.61) at 11-02T12:00"
    );
    assert!(
        !snaps[0].context.contains("0.9900%"),
        "a print after the tick"
    );

    // What the runner asked for: a week of funding up to the tick.
    let asked: Vec<Value> = hl
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .filter(|b: &Value| b["type"] == "fundingHistory")
        .collect();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["coin"], "BTC");
    assert_eq!(
        asked[0]["startTime"],
        (tick - Duration::hours(168)).timestamp_millis()
    );
    assert_eq!(asked[0]["endTime"], tick.timestamp_millis());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_derivatives_requests_fail_nothing_and_the_section_says_unknown() {
    let pg = postgres().await;
    // Candles only: fundingHistory and metaAndAssetCtxs answer 404.
    let hl = hyperliquid_mock().await;
    let tick = t("2026-11-02T12:00:00Z");
    let d = deploy(&pg, 0xd2, tick).await;

    let r = runner(
        &pg,
        &hl,
        tick + Duration::seconds(2),
        "derivatives-down",
        1,
        None,
    )
    .await;
    r.clone().run(std::future::pending()).await.expect("run");
    assert_eq!(r.metrics().ticks("recorded"), 1);

    let snaps = pg.store.list_snapshots(d.id, 10).await.unwrap();
    assert_eq!(snaps.len(), 1);
    assert_eq!(
        derivatives_section(&snaps[0].context),
        "No derivatives source is connected to this deployment: funding and open interest are \
         unknown, not absent."
    );
}

/// A skill that whitelists neither tool: no derivatives request is made and the prompt has no
/// Derivatives section.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_without_the_tools_fetches_nothing_and_shows_no_section() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let tick = t("2026-11-02T12:00:00Z");
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    let req = DeployRequest {
        id: Some(Uuid::from_u128(0xd3)),
        ..paper_deploy(OWNER)
    };
    let d = admin::deploy(&pg.store, &skill, &req, tick - Duration::minutes(30))
        .await
        .unwrap();
    let r = runner(
        &pg,
        &hl,
        tick + Duration::seconds(2),
        "no-derivatives",
        1,
        None,
    )
    .await;
    r.clone().run(std::future::pending()).await.expect("run");
    let snaps = pg.store.list_snapshots(d.id, 10).await.unwrap();
    assert_eq!(snaps.len(), 1);
    assert!(!snaps[0].context.contains("## Derivatives"));
    let kinds: Vec<Value> = hl
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["type"].clone())
        .collect();
    assert!(kinds.iter().all(|k| k == "candleSnapshot"), "{kinds:?}");
}
