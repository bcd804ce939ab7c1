//! 1,000,000 fills across 100 symbols through the materializer.
//!
//! Two shapes: the whole stream in one `apply_fills` call (a rebuild from a stored fill
//! stream), and 10,000 tick-sized batches of 100 fills (the live/sim shape). The stream is a
//! deterministic pseudo-random walk (no `rand`): opens, adds, partial closes, full closes and
//! flips all occur. Run with `cargo bench -p memory-ledger --bench materialize`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use memory_ledger::{LedgerScope, LedgerState, Proposals};
use rust_decimal::Decimal;
use types::{Fill, OrderSide};
use uuid::Uuid;

const FILLS: usize = 1_000_000;
const SYMBOLS: usize = 100;
const TICK_BATCH: usize = 100;

/// SplitMix64: a tiny deterministic generator so the stream is identical on every run.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> i64 {
        i64::try_from(self.next() % n).unwrap_or(0)
    }
}

fn stream() -> Vec<Fill> {
    let mut rng = SplitMix(17);
    let symbols: Vec<String> = (0..SYMBOLS).map(|i| format!("SYM{i:03}")).collect();
    // Price in cents per symbol, random walk around 100.00.
    let mut cents: Vec<i64> = vec![10_000; SYMBOLS];
    let start = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let snapshot = Some(Uuid::from_u128(7));
    (0..FILLS)
        .map(|i| {
            let s = i % SYMBOLS;
            cents[s] = (cents[s] + rng.below(201) - 100).max(100);
            Fill {
                id: format!("f{i}"),
                symbol: symbols[s].clone(),
                side: if rng.below(2) == 0 {
                    OrderSide::Buy
                } else {
                    OrderSide::Sell
                },
                qty: Decimal::new(rng.below(50) + 1, 2),
                price: Decimal::new(cents[s], 2),
                fee_usd: Decimal::new(rng.below(100), 3),
                time: start + chrono::Duration::seconds(i64::try_from(i).unwrap_or(0)),
                snapshot_id: snapshot,
                client_order_id: None,
                liquidation: false,
                trigger: None,
            }
        })
        .collect()
}

fn scope() -> LedgerScope {
    LedgerScope {
        deployment_id: Uuid::from_u128(1),
        skill_id: Uuid::from_u128(2),
        skill_version: 1,
    }
}

fn bench(c: &mut Criterion) {
    let fills = stream();
    let proposals = Proposals::new();
    let regimes = BTreeMap::new();
    let mut group = c.benchmark_group("materialize_1M_fills_100_symbols");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(FILLS as u64));

    group.bench_function("one_batch", |b| {
        b.iter_batched(
            || LedgerState::new(scope()),
            |mut state| {
                let changes = state.apply_fills(&fills, &proposals, &regimes).unwrap();
                black_box(changes.rows.len())
            },
            BatchSize::PerIteration,
        );
    });

    group.bench_function("ticks_of_100", |b| {
        b.iter_batched(
            || LedgerState::new(scope()),
            |mut state| {
                let mut written = 0;
                for chunk in fills.chunks(TICK_BATCH) {
                    written += state
                        .apply_fills(chunk, &proposals, &regimes)
                        .unwrap()
                        .rows
                        .len();
                }
                black_box(written)
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
