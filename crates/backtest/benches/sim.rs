//! The whole backtest of the README: EURUSD, 5,000 hourly bars, `builtin/sma-cross:10:20`,
//! reflection every 5 trades, every tick persisted to a SQLite file, opened as scratch (no
//! fsyncs) and closed as `sim-worker run` does. Reported as ticks/s
//! (criterion's element throughput). With `sim-worker`'s allocator (mimalloc), so the figure is
//! the binary's.

#[path = "../tests/it/common/mod.rs"]
mod common;

use agent_runtime::builtin_model;
use backtest::{BacktestInput, RunOptions, register};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rust_decimal::Decimal;
use types::Interval;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn input() -> BacktestInput {
    // The paper broker's default fees and slippage.
    common::eurusd_input(
        &common::eurusd(usize::MAX),
        Decimal::new(45, 1),
        Decimal::ONE,
    )
}

fn full_sim(c: &mut Criterion) {
    let input = input();
    let ticks = input.market.all_bars("EURUSD", Interval::H1).len() as u64;
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    // sim-worker's runtime: the calling thread ticks, one worker writes the store's batches.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("sim");
    group.sample_size(10);
    group.throughput(Throughput::Elements(ticks));
    // The temporary directory is made before and removed after the timed part: deleting the
    // file is not part of a backtest.
    group.bench_function("eurusd_5000_bars_sma_cross_sqlite", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("tempdir"),
            |dir| {
                rt.block_on(async {
                    let url = format!("sqlite://{}?mode=rwc", dir.path().join("sim.db").display());
                    let store = db::connect_with(&url, db::Durability::Scratch)
                        .await
                        .expect("store");
                    let first =
                        input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
                    register(&store, &input, serde_json::json!({}), first)
                        .await
                        .expect("register");
                    let result =
                        backtest::run(&input, model.as_ref(), &store, RunOptions::default())
                            .await
                            .expect("backtest")
                            .stored()
                            .await
                            .expect("stored");
                    assert_eq!(result.points.len() as u64, ticks);
                    store.close().await.expect("close");
                });
                dir
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, full_sim);
criterion_main!(benches);
