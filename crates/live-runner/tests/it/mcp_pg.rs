//! A skill's MCP servers in the live runner: `deploy` refuses a skill whose server cannot start
//! (nothing stored); a deployment whose server fails to start at its tick fails that tick only
//! (logged with its id, retried later), never the runner.

use crate::common;

use common::{hyperliquid_mock, postgres, runner, t};
use db::{RegistryStore, TickStore};
use live_runner::admin::{self, AdminError, DeployRequest};
use live_runner::test_support::paper_deploy;
use uuid::Uuid;

const OWNER: Uuid = Uuid::from_u128(0x3c9);

fn request(id: u128) -> DeployRequest {
    DeployRequest {
        id: Some(Uuid::from_u128(id)),
        ..paper_deploy(OWNER)
    }
}

fn missing_server() -> serde_json::Value {
    serde_json::json!({
        "builtIn": ["propose_order"],
        "mcpServers": [{"name": "charts", "command": "/nonexistent/charts-mcp"}]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_refuses_a_skill_whose_mcp_server_cannot_start_and_stores_nothing() {
    let pg = postgres().await;
    let mut skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    skill.tools = serde_json::from_value(missing_server()).unwrap();
    let err = admin::deploy(&pg.store, &skill, &request(1), t("2026-11-02T11:30:00Z"))
        .await
        .unwrap_err();
    assert!(matches!(err, AdminError::Mcp(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "tools.mcpServers[0] (charts): cannot start `/nonexistent/charts-mcp`: No such file or \
         directory (os error 2)"
    );
    assert!(pg.store.list_deployments(None).await.unwrap().is_empty());
    assert_eq!(pg.count("SELECT count(*) FROM skill_versions").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_at_the_first_tick_fails_that_tick_and_not_the_runner() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    let broken = admin::deploy(
        &pg.store,
        &skill,
        &request(2),
        first - chrono::Duration::minutes(30),
    )
    .await
    .unwrap();
    // The server went away after the deployment was made (its stored skill now names a
    // command that does not exist), and a second deployment has no MCP server at all.
    let body = serde_json::to_value(&skill).unwrap();
    sqlx::query("UPDATE skill_versions SET body = jsonb_set($1::jsonb, '{tools}', $2::jsonb)")
        .bind(body)
        .bind(missing_server())
        .execute(pg.pool())
        .await
        .unwrap();
    let mut other = skill.clone();
    other.name = "another skill".into();
    let fine = admin::deploy(
        &pg.store,
        &other,
        &request(3),
        first - chrono::Duration::minutes(30),
    )
    .await
    .unwrap();

    let r = runner(
        &pg,
        &hl,
        first + chrono::Duration::seconds(5),
        "mcp",
        2,
        None,
    )
    .await;
    r.clone()
        .run(std::future::pending())
        .await
        .expect("the runner carries on");
    assert_eq!(r.metrics().ticks("failed"), 1);
    assert_eq!(r.metrics().ticks("recorded"), 1);
    assert!(
        pg.store
            .list_snapshots(broken.id, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(pg.store.list_snapshots(fine.id, 10).await.unwrap().len(), 1);
    // The failed tick is retried later, not skipped.
    let d = pg.store.get_deployment(broken.id).await.unwrap();
    assert!(d.next_tick_at.unwrap() < first + chrono::Duration::hours(1));
    assert_eq!(r.deployments_with_mcp_servers(), 0);
}
