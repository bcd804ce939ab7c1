//! The `mock` feature: a service unit-tests its use of the tick against `mockall` mocks.
#![cfg(feature = "mock")]

use std::sync::Arc;

use agent_runtime::MockLanguageModel;
use chrono::{TimeZone, Utc};
use db::MockTickStore;
use rust_decimal::Decimal;
use tick::{BrokerUnavailable, MockBroker, TickDeployment, TickError, TickState, run_tick};
use tools::{MockMarketData, MockPortfolioView, RunMode, ToolContext};
use types::Uuid;

const SKILL: &str = include_str!("../../../../examples/skills/eurusd-sma-cross.yaml");

#[tokio::test]
async fn an_unreadable_account_fails_the_tick_before_the_model_and_the_store() {
    let skill = skill_schema::parse_skill(SKILL, skill_schema::Format::Yaml)
        .unwrap()
        .skill;
    let id = Uuid::from_u128(1);
    let deployment = TickDeployment {
        user_id: id,
        deployment_id: id,
        skill_id: id,
        skill_version: 1,
        skill: Arc::new(skill),
        reflector: Err("none".into()),
    };
    let now = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
    let mut broker = MockBroker::new();
    broker
        .expect_portfolio()
        .times(1)
        .returning(|_| Box::pin(std::future::ready(Err(BrokerUnavailable("down".into())))));
    broker.expect_execute().never();
    let mut model = MockLanguageModel::new();
    model.expect_generate().never();
    let mut store = MockTickStore::new();
    store.expect_record_tick().never();
    let ctx = ToolContext::new(
        now,
        RunMode::Trade,
        vec!["EURUSD".into()],
        Arc::new(MockMarketData::new()),
        Arc::new(MockPortfolioView::new()),
    );
    let mut state = TickState::new(&deployment, Decimal::from(10_000), now);
    let result = run_tick(&deployment, &ctx, &model, &mut broker, &mut state, &store).await;
    assert!(matches!(result, Err(TickError::Broker(BrokerUnavailable(m))) if m == "down"));
}
