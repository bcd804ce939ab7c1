//! Sim/live parity tick after tick (#16 item 10): 48 consecutive hourly ticks of a live paper
//! deployment (controlled clock, mock Hyperliquid) and a backtest over the same bars send the
//! model byte-identical system prompts and user messages at every tick — with positions
//! opened, flipped and closed and reflection notes written on the way.

use crate::common;

use agent_runtime::builtin_model;
use backtest::{BacktestInput, RunOptions, register};
use chrono::Duration;
use common::{hyperliquid_mock, mock_bars, postgres, runner, t};
use db::{LedgerStore, NoteScope, NoteStore, TickStore};
use execution_engine::PaperBrokerConfig;
use live_runner::admin::{self, DeployRequest};
use live_runner::test_support::paper_deploy;
use rust_decimal::Decimal;
use tools::Preloaded;
use types::{CloseKind, Interval, TradeStatus};
use uuid::Uuid;

const TICKS: i64 = 48;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_ticks_and_a_backtest_of_the_same_bars_send_identical_prompts() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("skill");
    let first = t("2026-06-04T10:00:00Z");
    let equity = Decimal::from(10_000);
    // Margined as the exchange margins BTC (the recorded `meta`: maxLeverage 50), on both sides.
    let exchange = common::exchange_max_leverage();
    let d = admin::deploy(
        &pg.store,
        &skill,
        &DeployRequest {
            equity_usd: equity,
            id: Some(Uuid::from_u128(0x0dd)),
            exchange_max_leverage: exchange.clone(),
            ..paper_deploy(Uuid::from_u128(0x0a11ce))
        },
        first - Duration::minutes(30),
    )
    .await
    .expect("deploy");
    for h in 0..TICKS {
        let r = runner(&pg, &hl, first + Duration::hours(h), "parity", 1, None).await;
        r.clone().run(std::future::pending()).await.expect("run");
        assert_eq!(r.metrics().ticks("recorded"), 1, "tick {h}");
    }
    let mut live = pg.store.list_snapshots(d.id, 1000).await.expect("live");
    live.sort_by_key(|s| s.tick_at);
    assert_eq!(live.len(), usize::try_from(TICKS).unwrap());

    // Not vacuous: positions opened, flipped and closed, and notes written.
    let trades = pg.store.all_trades(d.id).await.expect("ledger");
    assert!(
        trades.iter().any(|r| r.close_kind == Some(CloseKind::Flip)),
        "a flip"
    );
    assert!(
        trades
            .iter()
            .filter(|r| r.status == TradeStatus::Closed)
            .count()
            >= 4
    );
    let notes = pg
        .store
        .note_history(NoteScope::Deployment(d.id), 100)
        .await
        .expect("notes");
    assert!(!notes.is_empty(), "a reflection note");

    // The backtest: the same skill and paper account over the candles the mock served, at
    // every interval the skill reads, from well before the first tick.
    let from = first - Duration::days(60);
    let to = first + Duration::hours(TICKS);
    let mut market =
        Preloaded::new().with_bars("BTC", Interval::H1, mock_bars(Interval::H1, from, to));
    for h in skill.context.effective_higher_timeframes() {
        market.insert_bars("BTC", h, mock_bars(h, from, to));
    }
    let input = BacktestInput::for_test(skill.clone(), market)
        .with_ids(
            Uuid::from_u128(0x0a11ce),
            Uuid::from_u128(0xb4c),
            Uuid::from_u128(0x5c1),
        )
        .with_offline_reflection()
        .with_range(first, first + Duration::hours(TICKS - 1))
        .with_broker(PaperBrokerConfig::for_skill(equity, &skill, &exchange).expect("broker"));
    let sim = db::connect("sqlite::memory:").await.expect("store");
    register(
        &sim,
        &input,
        serde_json::to_value(&skill).expect("json"),
        first,
    )
    .await
    .expect("register");
    let model = builtin_model(&skill.model, &skill).expect("model");
    backtest::run(&input, model.as_ref(), &sim, RunOptions::default())
        .await
        .expect("backtest")
        .stored()
        .await
        .expect("stored");
    let mut simulated = sim
        .list_snapshots(input.deployment.deployment_id, 1000)
        .await
        .expect("sim");
    simulated.sort_by_key(|s| s.tick_at);
    assert_eq!(simulated.len(), live.len());
    for (l, s) in live.iter().zip(&simulated) {
        assert_eq!(l.tick_at, s.tick_at);
        assert_eq!(
            l.system_prompt, s.system_prompt,
            "system prompt at {}",
            l.tick_at
        );
        assert_eq!(l.context, s.context, "user message at {}", l.tick_at);
    }
}
