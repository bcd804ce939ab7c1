//! `get_my_deployments(detail: "trades")` over a deployment backtested on the example data
//! returns exactly its ledger rows.

use std::path::PathBuf;
use std::sync::Arc;

use agent_runtime::{ModelError, builtin_model};
use chat::{
    ChatToolContext, Journal, TradeRow, chat_registry, exposure::MoveWindow, load_chat_data,
};
use db::LedgerStore;
use execution_engine::PaperBrokerConfig;
use reflection::resolve_reflection_model;
use rust_decimal::Decimal;
use tick::TickDeployment;
use tick::backtest::{BacktestInput, register, run_backtest};
use tools::{Preloaded, RunMode};
use types::{Interval, TradeStatus, Uuid};

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

#[tokio::test]
async fn trades_detail_is_the_ledger() {
    let mut bars = market_data::load_bars(&repo("examples/data/EURUSD.csv")).expect("bars");
    bars.truncate(1500);
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
    let input = BacktestInput {
        deployment: TickDeployment {
            user_id: Uuid::from_u128(1),
            deployment_id: Uuid::from_u128(2),
            skill_id: Uuid::from_u128(3),
            skill_version: 1,
            skill: Arc::new(skill.clone()),
            reflector,
        },
        market: Arc::new(market),
        news: None,
        events: None,
        derivatives: None,
        from: None,
        to: None,
        broker: PaperBrokerConfig::new(Decimal::from(10_000)),
        external_tools: std::sync::Arc::new([]),
        blind: None,
    };
    let store = db::connect("sqlite::memory:").await.expect("store");
    let first = bars[0].close_time(Interval::H1);
    register(&store, &input, serde_json::json!({"name": "eurusd"}), first)
        .await
        .expect("register");
    let model = builtin_model(&skill.model, &skill).expect("builtin model");
    run_backtest(&input, model.as_ref(), &store, |_, _| {})
        .await
        .expect("backtest");
    let end = bars.last().unwrap().close_time(Interval::H1);

    // The ledger, read back independently: every closed row, newest entry first, the last 30.
    let mut ledger: Vec<_> = store
        .all_trades(Uuid::from_u128(2))
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.status == TradeStatus::Closed)
        .collect();
    assert!(
        ledger.len() > 30,
        "the fixture closes more than 30 trades: {}",
        ledger.len()
    );
    ledger.sort_by_key(|r| std::cmp::Reverse((r.entry_tick_at, r.id)));
    ledger.truncate(30);
    let expected: Vec<TradeRow> = ledger.iter().map(TradeRow::from).collect();

    let data = load_chat_data(&store, Uuid::from_u128(1), end)
        .await
        .unwrap();
    let ctx = ChatToolContext {
        data: Arc::new(data),
        journal: Arc::new(Journal::default()),
        market: Arc::new(Preloaded::new()),
        window: MoveWindow::default(),
        turn_id: Uuid::from_u128(9),
    };
    let out = chat_registry(&ctx, RunMode::ReadOnly)
        .call(
            "get_my_deployments",
            serde_json::json!({"deployment_id": Uuid::from_u128(2), "detail": "trades"}),
        )
        .unwrap();
    assert_eq!(
        out["deployments"][0]["trades"],
        serde_json::to_value(&expected).unwrap()
    );
    // Every field of the row as stored, net = gross − fees.
    let row = &out["deployments"][0]["trades"][0];
    let stored = &ledger[0];
    assert_eq!(row["id"], serde_json::json!(stored.id));
    assert_eq!(
        row["gross_pnl_usd"],
        serde_json::json!(stored.realized_pnl_usd)
    );
    assert_eq!(
        row["net_pnl_usd"],
        serde_json::json!(stored.realized_pnl_usd - stored.fees_usd)
    );
    assert_eq!(row["mfe_usd"], serde_json::json!(stored.mfe_usd));
    assert_eq!(
        row["regime_tag"],
        serde_json::json!(stored.entry_regime_tag)
    );

    // Another user sees none of it.
    let data = load_chat_data(&store, Uuid::from_u128(99), end)
        .await
        .unwrap();
    assert!(data.deployments.is_empty());
}
