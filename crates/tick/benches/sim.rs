//! The whole backtest of the README: EURUSD, 5,000 hourly bars, `builtin/sma-cross:10:20`,
//! reflection every 5 trades, every tick persisted to a SQLite file. Reported as ticks/s
//! (criterion's element throughput).

use std::path::PathBuf;
use std::sync::Arc;

use agent_runtime::{ModelError, builtin_model};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use execution_engine::PaperBrokerConfig;
use reflection::resolve_reflection_model;
use rust_decimal::Decimal;
use tick::Deployment;
use tick::backtest::{BacktestInput, register, run_backtest};
use tools::Preloaded;
use types::{Interval, Uuid};

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn input() -> BacktestInput {
    let bars = market_data::load_bars(&repo("examples/data/EURUSD.csv")).expect("bars");
    let skill = skill_schema::load_skill(&repo("examples/skills/eurusd-sma-cross.yaml"))
        .expect("skill")
        .skill;
    let mut market = Preloaded::new().with_bars("EURUSD", Interval::H1, bars.clone());
    for h in skill.context.effective_higher_timeframes() {
        market.insert_bars("EURUSD", h, market_data::resample(&bars, h));
    }
    let reflector = resolve_reflection_model(&skill.context.memory.reflection.model, |id| {
        builtin_model(id, &skill).ok_or_else(|| ModelError::UnknownModel(id.to_owned()))
    })
    .map_err(|e| e.to_string());
    BacktestInput {
        deployment: Deployment {
            user_id: Uuid::from_u128(1),
            deployment_id: Uuid::from_u128(2),
            skill_id: Uuid::from_u128(3),
            skill_version: 1,
            skill: Arc::new(skill),
            reflector,
        },
        market: Arc::new(market),
        news: None,
        events: None,
        from: None,
        to: None,
        broker: PaperBrokerConfig::new(Decimal::from(10_000)),
    }
}

fn full_sim(c: &mut Criterion) {
    let input = input();
    let ticks = input.market.all_bars("EURUSD", Interval::H1).len() as u64;
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("sim");
    group.sample_size(10);
    group.throughput(Throughput::Elements(ticks));
    group.bench_function("eurusd_5000_bars_sma_cross_sqlite", |b| {
        b.iter(|| {
            rt.block_on(async {
                let dir = tempfile::tempdir().expect("tempdir");
                let url = format!("sqlite://{}?mode=rwc", dir.path().join("sim.db").display());
                let store = db::connect(&url).await.expect("store");
                let first =
                    input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
                register(&store, &input, serde_json::json!({}), first)
                    .await
                    .expect("register");
                let result = run_backtest(&input, model.as_ref(), &store, |_, _| {})
                    .await
                    .expect("backtest");
                assert_eq!(result.points.len() as u64, ticks);
            });
        });
    });
    group.finish();
}

criterion_group!(benches, full_sim);
criterion_main!(benches);
