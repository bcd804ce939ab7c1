//! Model failures in the live runner on PostgreSQL (#20 items 1 and 6): a failing provider's
//! ticks are recorded as model errors with their text and counted by outcome; a hanging model
//! ends at the tick budget instead of holding its lease; a tick still running at twice the
//! budget is abandoned and its lease released for a retry.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_runtime::{LanguageModel, ModelError, ModelRequest, ModelResponse};
use chrono::{DateTime, Utc};
use common::{hyperliquid_mock, postgres, runner_with_budget, slow_hyperliquid_mock, t};
use db::{RegistryStore, TickStore};
use live_runner::admin::{self, DeployRequest};
use live_runner::runner::ModelResolver;
use live_runner::test_support::paper_deploy;
use uuid::Uuid;

const OWNER: Uuid = Uuid::from_u128(0x0bad_0de1);

async fn deploy(pg: &common::Pg, n: u128, first_tick: DateTime<Utc>) -> Vec<Uuid> {
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("skill");
    let mut ids = Vec::new();
    for i in 0..n {
        let req = DeployRequest {
            id: Some(Uuid::from_u128(0xe000 + i)),
            ..paper_deploy(OWNER)
        };
        let d = admin::deploy(
            &pg.store,
            &skill,
            &req,
            first_tick - chrono::Duration::minutes(30),
        )
        .await
        .expect("deploy");
        ids.push(d.id);
    }
    ids
}

/// A provider that answers every call with an HTTP 500 (after its retries).
struct Failing;

#[async_trait::async_trait]
impl LanguageModel for Failing {
    fn id(&self) -> &str {
        "openai/failing"
    }
    async fn generate(&self, _: &ModelRequest) -> Result<ModelResponse, ModelError> {
        Err(ModelError::Http {
            provider: "openai".into(),
            status: 500,
            body: "upstream exploded".into(),
        })
    }
}

/// A provider that never answers.
struct Hanging;

#[async_trait::async_trait]
impl LanguageModel for Hanging {
    fn id(&self) -> &str {
        "openai/hanging"
    }
    async fn generate(&self, _: &ModelRequest) -> Result<ModelResponse, ModelError> {
        std::future::pending().await
    }
}

fn resolver(model: Arc<dyn LanguageModel>) -> ModelResolver {
    Arc::new(move |_: &str, _: &skill_schema::Skill| Ok(model.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_provider_records_model_errors_with_their_text_and_counts_them() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let ids = deploy(&pg, 3, first).await;
    let r = runner_with_budget(
        &pg,
        &hl,
        first + chrono::Duration::seconds(5),
        "failing",
        resolver(Arc::new(Failing)),
        Duration::from_secs(30),
    )
    .await;
    r.clone().run(std::future::pending()).await.expect("runner");

    assert_eq!(r.metrics().ticks("recorded"), 3);
    assert_eq!(r.metrics().outcomes("model_error"), 3);
    assert_eq!(r.metrics().outcomes("no_op"), 0);
    assert!(
        r.metrics()
            .render()
            .contains("live_runner_tick_outcomes_total{outcome=\"model_error\"} 3\n")
    );
    for id in ids {
        let snaps = pg.store.list_snapshots(id, 10).await.expect("snapshots");
        assert_eq!(snaps.len(), 1);
        let s = &snaps[0];
        assert!(s.model_error);
        assert_eq!(
            s.error.as_deref(),
            Some("model call failed at step 0: openai: HTTP 500: upstream exploded")
        );
        assert_eq!(s.finish_reason.as_deref(), Some("error"));
        // The deployment moves on to the next bar (a model error is a recorded tick).
        let d = pg.store.get_deployment(id).await.expect("deployment");
        assert_eq!(d.next_tick_at, Some(first + chrono::Duration::hours(1)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_model_ends_at_the_tick_budget_as_a_model_error() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let ids = deploy(&pg, 2, first).await;
    let r = runner_with_budget(
        &pg,
        &hl,
        first + chrono::Duration::seconds(5),
        "hanging",
        resolver(Arc::new(Hanging)),
        Duration::from_millis(500),
    )
    .await;
    let started = Instant::now();
    r.clone().run(std::future::pending()).await.expect("runner");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    assert_eq!(r.metrics().ticks("recorded"), 2);
    assert_eq!(r.metrics().outcomes("model_error"), 2);
    for id in ids {
        let snaps = pg.store.list_snapshots(id, 10).await.expect("snapshots");
        let s = &snaps[0];
        assert!(s.model_error);
        let error = s.error.as_deref().unwrap();
        assert!(
            error.starts_with("deadline exceeded at step 0: the model loop's budget of 500 ms"),
            "{error}"
        );
        let d = pg.store.get_deployment(id).await.expect("deployment");
        assert_eq!(d.lease_owner, None, "released");
        assert_eq!(d.next_tick_at, Some(first + chrono::Duration::hours(1)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_still_running_at_twice_the_budget_is_abandoned_and_its_lease_released() {
    let pg = postgres().await;
    // The market data takes 20 s: the tick cannot finish within twice a 300 ms budget.
    let hl = slow_hyperliquid_mock(Duration::from_secs(20)).await;
    let first = t("2026-11-02T12:00:00Z");
    let ids = deploy(&pg, 1, first).await;
    let now = first + chrono::Duration::seconds(5);
    let r = runner_with_budget(
        &pg,
        &hl,
        now,
        "abandon",
        resolver(Arc::new(Hanging)),
        Duration::from_millis(300),
    )
    .await;
    let started = Instant::now();
    r.clone().run(std::future::pending()).await.expect("runner");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "{took:?}");

    assert_eq!(r.metrics().ticks("failed"), 1);
    assert_eq!(pg.count("SELECT count(*) FROM decision_snapshots").await, 0);
    let d = pg.store.get_deployment(ids[0]).await.expect("deployment");
    assert_eq!(d.lease_owner, None, "released, not extended");
    // Retried after the runner's retry delay (30 s), not at the next bar.
    assert_eq!(d.next_tick_at, Some(now + chrono::Duration::seconds(30)));
}
