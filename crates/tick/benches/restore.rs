//! #16 item 6: a live tick's state read does not grow with a deployment's age. A live runner
//! rebuilds the deployment's `TickState` from the store before every tick
//! (`tick::restore_state_carried`); this measures that read for a deployment with 100 and with
//! 100,000 closed trades (SQLite in memory; a reflection note in force, as a reflecting
//! deployment has), each round trip with its two fills: the restore reads the ledger rows a tick
//! needs and the applied fill ids of the last week (`tick::APPLIED_FILLS_WINDOW`), not the whole
//! history.
//!
//! `cargo bench -p tick --bench restore`

#[path = "../tests/it/common/mod.rs"]
mod common;

use chrono::Duration;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use db::test_support::{sample_snapshot, tick_record};
use db::{NewNote, NoteStore, PlannedTicks, TickRecord, TickStore};
use rust_decimal::Decimal;
use types::{CloseKind, RegimeTag, Side, TradeRecord, TradeStatus, Uuid};

/// `n` closed round trips of the example deployment, one hour apart, and a note whose window
/// ends after the last; returns the store and the time after them.
fn store_with(
    rt: &tokio::runtime::Runtime,
    example: &common::Example,
    n: usize,
) -> (db::Store, chrono::DateTime<chrono::Utc>) {
    // On the benchmark's runtime: the in-memory database lives as long as its connection.
    rt.block_on(async {
        let store = db::connect("sqlite::memory:").await.unwrap();
        let d = &example.deployment;
        let start = example.market.all_bars("EURUSD", types::Interval::H1)[0]
            .close_time(types::Interval::H1);
        common::register(&store, d).await;
        let row = |i: usize| {
            let entry = start + Duration::hours(i as i64);
            TradeRecord {
                id: Uuid::from_u128(i as u128 + 1),
                deployment_id: d.deployment_id,
                skill_id: d.skill_id,
                skill_version: d.skill_version,
                symbol: "EURUSD".into(),
                side: Side::Long,
                status: TradeStatus::Closed,
                entry_tick_at: entry,
                entry_price: Decimal::ONE,
                entry_size_usd: Decimal::from(1000),
                entry_leverage: Some(Decimal::ONE),
                entry_reason: Some("a cross".into()),
                entry_snapshot_id: None,
                entry_regime_tag: Some(RegimeTag::Ranging),
                opened_qty: Decimal::from(1000),
                open_qty: Decimal::ZERO,
                exit_tick_at: Some(entry + Duration::minutes(30)),
                exit_price: Some(Decimal::ONE),
                exit_reason: Some("the opposite cross".into()),
                exit_snapshot_id: None,
                close_kind: Some(CloseKind::Signal),
                holding_minutes: Some(Decimal::from(30)),
                realized_pnl_usd: Decimal::ZERO,
                fees_usd: Decimal::ONE,
                mfe_usd: Decimal::ZERO,
                mae_usd: Decimal::ZERO,
                exit_size_usd: Decimal::from(1000),
                broker_reconciled: true,
            }
        };
        // Over 100 recorded ticks whatever `n`: both deployments have more than the 64 snapshots a
        // restore reads for its last decision, so only the ledger's size differs.
        let mut records = Vec::new();
        for (k, chunk) in (0..n)
            .collect::<Vec<_>>()
            .chunks(n.div_ceil(100))
            .enumerate()
        {
            let at = start + Duration::minutes(k as i64);
            records.push(TickRecord {
                // Each round trip's two fills (opening and closing), as a broker's.
                fills: chunk
                    .iter()
                    .flat_map(|i| {
                        let entry = start + Duration::hours(*i as i64);
                        [
                            db::test_support::sample_fill(
                                &format!("o{i}"),
                                Decimal::ONE,
                                Decimal::ONE,
                                entry,
                            ),
                            db::test_support::sample_fill(
                                &format!("c{i}"),
                                Decimal::ONE,
                                Decimal::ONE,
                                entry + Duration::minutes(30),
                            ),
                        ]
                    })
                    .collect(),
                trades: chunk.iter().map(|i| row(*i)).collect(),
                ..tick_record(sample_snapshot(d.deployment_id, at))
            });
        }
        store
            .record_ticks(&PlannedTicks::new(records), &[])
            .await
            .unwrap();
        let end = start + Duration::hours(n as i64 + 1);
        store
            .insert_note(&NewNote {
                id: Uuid::from_u128(u128::MAX),
                skill_id: d.skill_id,
                skill_version: d.skill_version,
                deployment_id: Some(d.deployment_id),
                generated_at: end,
                content: types::NoteContent {
                    window_start: start,
                    window_end: end,
                    trades_considered: u32::try_from(n).unwrap(),
                    lessons_text: "- Entries right after a cross paid (n=5).".into(),
                    model_used: "builtin/stats-reflection".into(),
                    input_tokens: Some(0),
                    output_tokens: Some(0),
                    cost_usd: Some(Decimal::ZERO),
                    observations: Vec::new(),
                    dropped: Vec::new(),
                    held: Vec::new(),
                },
                lint: None,
            })
            .await
            .unwrap();
        (store, end)
    })
}

fn restore(c: &mut Criterion) {
    let example = common::eurusd_example(&common::eurusd(200), Decimal::new(45, 1), Decimal::ONE);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("restore_state");
    for n in [100_usize, 100_000] {
        let (store, at) = store_with(&rt, &example, n);
        group.bench_function(format!("{n} closed trades"), |b| {
            b.iter_batched(
                || (),
                |()| {
                    rt.block_on(tick::restore_state_carried(
                        &store,
                        &example.deployment,
                        Decimal::from(10_000),
                        at,
                        None,
                    ))
                    .unwrap()
                },
                BatchSize::SmallInput,
            );
        });
        let state = rt
            .block_on(tick::restore_state_carried(
                &store,
                &example.deployment,
                Decimal::from(10_000),
                at,
                None,
            ))
            .unwrap();
        // The 30 newest closed rows, however many the ledger holds (the note covers them all).
        assert_eq!(state.trades.len(), n.min(tick::RECENT_CLOSED_KEPT));
    }
    group.finish();
}

criterion_group!(benches, restore);
criterion_main!(benches);
