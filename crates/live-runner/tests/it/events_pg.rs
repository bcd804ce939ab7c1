//! The event calendar on a real PostgreSQL: `events import` (JSON and CSV, idempotent, a bad
//! row named and nothing stored) and a live tick of a deployment with events enabled, whose
//! stored snapshot shows the imported event under "Upcoming events".

use crate::common;

use std::io::Write;

use common::{hyperliquid_mock, postgres, runner, t};
use db::{EventStore, TickStore};
use live_runner::admin::{self, AdminError, DeployRequest};
use live_runner::test_support::paper_deploy;
use rust_decimal::Decimal;
use uuid::Uuid;

const OWNER: Uuid = Uuid::from_u128(0x0e7e);

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

async fn stored(pg: &common::Pg) -> i64 {
    pg.count("SELECT count(*) FROM market_events").await
}

#[tokio::test]
async fn importing_json_and_csv_is_idempotent_and_a_bad_row_stores_nothing() {
    let pg = postgres().await;
    let dir = tempfile::tempdir().unwrap();
    let json = file(
        &dir,
        "fed.json",
        r#"[{"kind": "fomc", "title": "FOMC rate decision", "symbols": ["BTC"],
             "scheduled_at": "2026-11-02T19:00:00Z", "importance": 1.0},
            {"kind": "cpi", "title": "US CPI", "symbols": [],
             "scheduled_at": "2026-11-03T13:30:00Z", "importance": 0.8, "source": "bls"}]"#,
    );
    let csv = file(
        &dir,
        "more.csv",
        "kind,title,symbols,scheduled_at,importance,source\n\
         token_unlock,ARB unlock,ARB;ETH,2026-11-04T00:00:00Z,0.6,unlocks\n\
         fomc,FOMC rate decision,BTC,2026-11-02T19:00:00Z,0.9,fed\n",
    );

    assert_eq!(
        admin::import_events(&pg.store, &json).await.unwrap().len(),
        2
    );
    assert_eq!(
        admin::import_events(&pg.store, &json).await.unwrap().len(),
        2
    );
    assert_eq!(
        stored(&pg).await,
        2,
        "importing twice stores each event once"
    );
    // The CSV repeats the FOMC event (same kind, time and title): it is updated, not doubled.
    assert_eq!(
        admin::import_events(&pg.store, &csv).await.unwrap().len(),
        2
    );
    assert_eq!(stored(&pg).await, 3);
    let events = pg
        .store
        .events_between(t("2026-11-01T00:00:00Z"), t("2026-11-05T00:00:00Z"), None)
        .await
        .unwrap();
    let fomc = &events[0];
    assert_eq!(fomc.kind, types::EventKind::Fomc);
    assert_eq!(
        fomc.importance,
        Decimal::new(9, 1),
        "the later file's revision"
    );
    assert_eq!(fomc.source, "fed");
    assert_eq!(events[1].source, "bls");
    assert_eq!(events[2].symbols, ["ARB", "ETH"]);

    let bad = file(
        &dir,
        "bad.csv",
        "kind,title,symbols,scheduled_at,importance\n\
         nfp,US payrolls,,2026-11-06T13:30:00Z,0.9\n\
         cpi,US CPI,,not a time,0.8\n",
    );
    let err = admin::import_events(&pg.store, &bad).await.unwrap_err();
    assert!(matches!(err, AdminError::Calendar(_)), "{err}");
    let message = err.to_string();
    assert!(message.contains("bad.csv:3: scheduled_at"), "{message}");
    assert_eq!(stored(&pg).await, 3, "nothing of a bad file is stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_tick_shows_the_imported_events_in_its_snapshot() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");

    let dir = tempfile::tempdir().unwrap();
    let calendar = file(
        &dir,
        "calendar.json",
        r#"[{"kind": "fomc", "title": "FOMC rate decision", "symbols": ["BTC"],
             "scheduled_at": "2026-11-02T19:00:00Z", "importance": 1.0},
            {"kind": "cpi", "title": "Too unimportant", "symbols": [],
             "scheduled_at": "2026-11-02T15:00:00Z", "importance": 0.2},
            {"kind": "nfp", "title": "Beyond the lookahead", "symbols": [],
             "scheduled_at": "2026-11-04T13:30:00Z", "importance": 0.9},
            {"kind": "gdp", "title": "Already out", "symbols": [],
             "scheduled_at": "2026-11-02T11:00:00Z", "importance": 0.9}]"#,
    );
    admin::import_events(&pg.store, &calendar).await.unwrap();

    let mut skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    skill.context.events.enabled = true;
    let req = DeployRequest {
        id: Some(Uuid::from_u128(0xe1)),
        ..paper_deploy(OWNER)
    };
    let d = admin::deploy(
        &pg.store,
        &skill,
        &req,
        first - chrono::Duration::minutes(30),
    )
    .await
    .unwrap();

    let r = runner(
        &pg,
        &hl,
        first + chrono::Duration::seconds(2),
        "events",
        1,
        None,
    )
    .await;
    r.clone().run(std::future::pending()).await.expect("run");
    assert_eq!(r.metrics().ticks("recorded"), 1);

    let snaps = pg.store.list_snapshots(d.id, 10).await.unwrap();
    assert_eq!(snaps.len(), 1);
    let context = &snaps[0].context;
    let section = context
        .split("## Upcoming events (next 24h)")
        .nth(1)
        .unwrap_or_else(|| panic!("no Upcoming events section:\n{context}"));
    let section = section.split("\n## ").next().unwrap();
    assert!(section.contains("fomc importance 1.00"), "{section}");
    assert!(section.contains("FOMC rate decision"), "{section}");
    for absent in [
        "Too unimportant",
        "Beyond the lookahead",
        "Already out",
        "unknown",
    ] {
        assert!(!section.contains(absent), "{absent}: {section}");
    }
}

/// An equity the engine cannot hold (7.9e28, near `Decimal::MAX`) used to be stored and then
/// fail every tick of the deployment; it is refused at deploy and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_equity_the_engine_cannot_hold_is_refused_at_deploy() {
    use db::RegistryStore;
    let pg = postgres().await;
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    for equity in [
        Decimal::from_i128_with_scale(79_000_000_000_000_000_000_000_000_000, 0),
        Decimal::from(-5),
    ] {
        let req = DeployRequest {
            equity_usd: equity,
            id: Some(Uuid::from_u128(0xe9)),
            ..paper_deploy(OWNER)
        };
        let err = admin::deploy(&pg.store, &skill, &req, t("2026-11-02T10:00:00Z"))
            .await
            .unwrap_err();
        assert!(matches!(err, AdminError::Refused(_)), "{err}");
        assert!(err.to_string().contains("initial_equity_usd"), "{err}");
        assert!(pg.store.list_deployments(None).await.unwrap().is_empty());
    }
}

/// Skill names are per owner: a second user deploying a skill of the same name gets a skill of
/// their own, is told nothing about the first user's, and neither deployment sees the other's
/// skill row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_owners_deploy_skills_of_the_same_name_as_two_skills() {
    use db::RegistryStore;
    let pg = postgres().await;
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    assert!(
        skill.id.is_none(),
        "the fixture names its skill, gives no id"
    );
    let mut ids = Vec::new();
    for owner in [Uuid::from_u128(0xa1), Uuid::from_u128(0xb2)] {
        let req = paper_deploy(owner);
        let d = admin::deploy(&pg.store, &skill, &req, t("2026-11-02T10:00:00Z"))
            .await
            .unwrap();
        assert_eq!(pg.store.get_skill(d.skill_id).await.unwrap().user_id, owner);
        ids.push(d.skill_id);
    }
    assert_ne!(ids[0], ids[1]);
    assert_eq!(ids[0], skill.skill_id_for(Uuid::from_u128(0xa1)));
}
