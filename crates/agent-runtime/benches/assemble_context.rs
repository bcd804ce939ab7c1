//! `assemble_context` on a heavy tick: 4 symbols × 100 1h bars (plus the 4h and 1d ladders),
//! 10 headlines, 30 recent-trade rows and an open position in the memory view.

use std::hint::black_box;
use std::sync::Arc;

use agent_runtime::assemble_context;
use chrono::{DateTime, Duration, TimeZone, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use rust_decimal::Decimal;
use skill_schema::{Format, parse_skill};
use tools::{NewsItem, Preloaded, RunMode, ToolContext};
use types::test_support::flat_portfolio;
use types::{Bar, Interval};

const SKILL: &str = r"
name: bench
version: 1
model: builtin/sma-cross:10:20
strategy:
  mode: rules
  entry: [x]
  exit: [x]
  riskManagement: [x]
context:
  barsLookback: 100
  barsInterval: 1h
  symbols: [BTC, ETH, SOL, EURUSD]
  newsLookbackHours: 24
  newsTopK: 10
  memory:
    recentTradesK: 30
risk:
  maxPositionPct: 40
  maxTotalExposurePct: 70
  maxLeverage: 5
  maxOrderUsd: 5000
";

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 5, 12, 0, 0).unwrap()
}

fn bars(interval: Interval, n: i64, base: Decimal, step: Decimal) -> Vec<Bar> {
    let len = interval.duration();
    let last_open = interval.bucket_start(now()) - len;
    (0..n)
        .map(|i| {
            let close = base + step * Decimal::from((i * 7919) % 41 - 20);
            Bar {
                time: last_open - len * i32::try_from(n - 1 - i).unwrap(),
                open: close - step,
                high: close + step * Decimal::TWO,
                low: close - step * Decimal::TWO,
                close,
                volume: Decimal::from(1000 + i),
            }
        })
        .collect()
}

fn ctx() -> ToolContext {
    let mut d = Preloaded::new();
    for (symbol, base, step) in [
        ("BTC", Decimal::new(670_005, 1), Decimal::new(125, 1)),
        ("ETH", Decimal::new(348_025, 2), Decimal::new(85, 2)),
        ("SOL", Decimal::new(16_412, 2), Decimal::new(7, 2)),
        ("EURUSD", Decimal::new(107_219, 5), Decimal::new(12, 5)),
    ] {
        d.insert_bars(symbol, Interval::H1, bars(Interval::H1, 100, base, step));
        d.insert_bars(symbol, Interval::H4, bars(Interval::H4, 20, base, step));
        d.insert_bars(symbol, Interval::D1, bars(Interval::D1, 20, base, step));
    }
    d.news = (0..10)
        .map(|i| NewsItem {
            time: now() - Duration::minutes(37 * i),
            headline: format!("Headline number {i} about flows, funding and the macro calendar"),
            source: "Wire".into(),
            sentiment: Decimal::new(i - 5, 1),
            importance: Decimal::new(10 - i, 1),
            symbols: vec!["BTC".into()],
        })
        .collect();
    d.portfolio = Some(flat_portfolio(now(), Decimal::from(10_000)));
    d.recent_trades_text = (0..30)
        .map(|i| {
            format!(
                "- 06-0{}T10:00 → 12:30 BTC long $2400.00 @ 66200 → 66940 +$26.83 (1.12%) 150m \"row {i}\"",
                1 + i % 4
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    d.open_positions_text =
        "- ETH long $200.00 @ 3410 mark=3438 MFE=+$22 / MAE=-$8 held 30m \"bounce\"".into();
    let d = Arc::new(d);
    let symbols = ["BTC", "ETH", "SOL", "EURUSD"].map(String::from).to_vec();
    ToolContext::new(now(), RunMode::Trade, symbols, d.clone(), d.clone())
        .with_news(d.clone())
        .with_memory(d)
}

fn bench(c: &mut Criterion) {
    let skill = parse_skill(SKILL, Format::Yaml).expect("bench skill").skill;
    let ctx = ctx();
    let once = assemble_context(&skill, &ctx, None).expect("context");
    eprintln!(
        "user message: {} chars, ~{} tokens (chars/4)",
        once.text.chars().count(),
        once.total_tokens_estimate
    );
    c.bench_function(
        "assemble_context 4x100 bars + 10 news + 30 memory rows",
        |b| b.iter(|| assemble_context(black_box(&skill), black_box(&ctx), None)),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
