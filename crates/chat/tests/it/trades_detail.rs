//! `get_my_deployments(detail: "trades")` over a deployment backtested on the example data
//! returns exactly its ledger rows.

use std::path::PathBuf;

use agent_runtime::builtin_model;
use backtest::{BacktestInput, RunOptions, register};
use chat::{ChatToolContext, TradeRow, chat_registry, load_chat_data};
use db::LedgerStore;
use prompt_compose::ChatMode;
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
    let input = BacktestInput::for_test(skill.clone(), market).with_offline_reflection();
    let store = db::connect("sqlite::memory:").await.expect("store");
    let first = bars[0].close_time(Interval::H1);
    register(&store, &input, serde_json::json!({"name": "eurusd"}), first)
        .await
        .expect("register");
    let model = builtin_model(&skill.model, &skill).expect("builtin model");
    backtest::run(&input, model.as_ref(), &store, RunOptions::default())
        .await
        .expect("backtest")
        .stored()
        .await
        .expect("stored");
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
    let ctx = ChatToolContext::new(data, Uuid::from_u128(9));
    let out = chat_registry(&ctx, ChatMode::Coach, RunMode::ReadOnly)
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
    // Amounts in the prompt's money style, prices at their own scale.
    assert_eq!(
        row["gross_pnl_usd"],
        types::text::signed_money(stored.realized_pnl_usd)
    );
    assert_eq!(
        row["net_pnl_usd"],
        types::text::signed_money(stored.realized_pnl_usd - stored.fees_usd)
    );
    assert_eq!(row["fees_usd"], types::text::money(stored.fees_usd));
    assert_eq!(row["mfe_usd"], types::text::signed_money(stored.mfe_usd));
    assert_eq!(row["entry_price"], types::text::price(stored.entry_price));
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
