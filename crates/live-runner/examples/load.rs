//! Load test, loopback only and bounded in time: N paper deployments on 5-minute bars, a
//! scripted model that waits 2 s per call, two runners (each with its own connection pool, as
//! two processes would have) over one PostgreSQL on this machine and a local mock of
//! Hyperliquid's info endpoint. Reports ticks/s, tick start lag p50/p99 and proves that no tick
//! ran twice.
//!
//! ```text
//! cargo run -p live-runner --example load -- [DEPLOYMENTS] [CONCURRENCY_PER_RUNNER] [DB_POOL]
//! ```
//! (defaults 2000, 500 and 16 connections per runner; TEST_DATABASE_URL as the tests; a fresh database is created and
//! dropped). "Tick start lag" is the time from the bar close (every deployment is due at once)
//! to the runner resolving the deployment's model, i.e. having claimed it, loaded its state and
//! fetched its candles.
//!
//! Measured on this 2-core machine (release build, defaults): 2,000 ticks in 10.0 s, 200
//! ticks/s, start lag p50 4.9–5.0 s / p99 5.2–5.4 s, no tick twice.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_runtime::{LanguageModel, ModelError, ModelRequest, ModelResponse};
use live_runner::admin::{self, DeployRequest};
use live_runner::runner::ModelResolver;
use live_runner::test_support::paper_deploy;
use uuid::Uuid;

struct Scripted(Arc<dyn LanguageModel>);

#[async_trait::async_trait]
impl LanguageModel for Scripted {
    fn id(&self) -> &str {
        self.0.id()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        tokio::time::sleep(Duration::from_secs(2)).await;
        self.0.generate(request).await
    }
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2000);
    let concurrency: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(500);
    let pool_size: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(16);

    let pg = common::postgres().await;
    let hl = common::hyperliquid_mock().await;
    let mut skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml"))?;
    skill.context.bars_interval = types::Interval::M5;
    skill.context.higher_timeframes = Some(vec![types::Interval::H1]);
    let bar = common::t("2026-11-02T12:00:00Z");
    let deploy_started = Instant::now();
    for i in 0..n {
        let req = DeployRequest {
            id: Some(Uuid::from_u128(0x1_0000 + i as u128)),
            ..paper_deploy(Uuid::from_u128(0x0a11ce))
        };
        admin::deploy(&pg.store, &skill, &req, bar - chrono::Duration::minutes(2)).await?;
    }
    eprintln!("deployed {n} in {:.1?}", deploy_started.elapsed());

    let starts: Arc<Mutex<Vec<Instant>>> = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let resolver = |starts: Arc<Mutex<Vec<Instant>>>| -> ModelResolver {
        Arc::new(move |id: &str, skill: &skill_schema::Skill| {
            if id.starts_with("builtin/sma-cross")
                && let Ok(mut s) = starts.lock()
            {
                s.push(Instant::now());
            }
            let inner = agent_runtime::builtin_model(id, skill)
                .ok_or_else(|| ModelError::UnknownModel(id.to_owned()))?;
            Ok(Arc::new(Scripted(inner)) as Arc<dyn LanguageModel>)
        })
    };
    let url = pg.url();
    let mut runners = Vec::new();
    for name in ["load-a", "load-b"] {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(pool_size)
            .connect(&url)
            .await?;
        let store = db::Store::Postgres(db::PgStore::from_pool(pool).await?);
        let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri()))?;
        let mut config = live_runner::runner::RunnerConfig::new(name);
        config.once = true;
        config.concurrency = concurrency;
        runners.push(Arc::new(
            live_runner::runner::Runner::new(
                store,
                info,
                Arc::new(types::FixedClock(bar + chrono::Duration::seconds(1))),
                resolver(starts.clone()),
                live_runner::metrics::Metrics::default(),
                config,
            )
            .await?,
        ));
    }
    let started = Instant::now();
    let (a, b) = tokio::join!(
        runners[0].clone().run(std::future::pending()),
        runners[1].clone().run(std::future::pending())
    );
    a?;
    b?;
    let wall = started.elapsed();

    let recorded: u64 = runners.iter().map(|r| r.metrics().ticks("recorded")).sum();
    let again: u64 = runners
        .iter()
        .map(|r| r.metrics().ticks("already_recorded"))
        .sum();
    let failed: u64 = runners.iter().map(|r| r.metrics().ticks("failed")).sum();
    let snapshots = pg.count("SELECT count(*) FROM decision_snapshots").await;
    let doubled = pg
        .count(
            "SELECT count(*) FROM (SELECT deployment_id, tick_at FROM decision_snapshots \
             GROUP BY 1, 2 HAVING count(*) > 1) d",
        )
        .await;
    let mut lags: Vec<Duration> = starts
        .lock()
        .map_err(|_| anyhow::anyhow!("lag list poisoned"))?
        .iter()
        .map(|s| s.saturating_duration_since(started))
        .collect();
    lags.sort();
    println!(
        "deployments {n}, 2 runners x {concurrency} in flight x {pool_size} connections, \
         scripted model 2 s/call\n\
         wall {wall:.1?}, ticks recorded {recorded} (a {} / b {}), already recorded {again}, \
         failed {failed}\n\
         ticks/s {:.1}\n\
         tick start lag p50 {:.2?}, p99 {:.2?}, max {:.2?}\n\
         snapshots {snapshots}, (deployment, tick) pairs with more than one snapshot: {doubled}",
        runners[0].metrics().ticks("recorded"),
        runners[1].metrics().ticks("recorded"),
        recorded as f64 / wall.as_secs_f64(),
        percentile(&lags, 50),
        percentile(&lags, 99),
        lags.last().copied().unwrap_or_default(),
    );
    anyhow::ensure!(
        recorded as usize == n && again == 0 && doubled == 0 && snapshots as usize == n,
        "a tick was lost or ran twice"
    );
    Ok(())
}
