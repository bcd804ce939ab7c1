//! Shared test helpers: ledger rows, skills, and a scripted model.
#![allow(dead_code)]

use std::sync::Mutex;

use chrono::{DateTime, TimeZone, Utc};
use model::test_support::answer;
use model::{FinishReason, LanguageModel, ModelError, ModelRequest, ModelResponse, Usage};
use rust_decimal::Decimal;
use skill_schema::{Format, Skill, parse_skill};
use types::{CloseKind, RegimeTag, Side, TradeRecord, TradeStatus, Uuid};

pub(crate) const DEPLOYMENT: Uuid = Uuid::from_u128(0xd0);

pub(crate) fn at(day: u32, hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, day, hour, minute, 0)
        .single()
        .expect("a valid test time")
}

/// A closed round trip: entered `hold` minutes before `exit`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn closed(
    n: u128,
    symbol: &str,
    side: Side,
    regime: Option<RegimeTag>,
    exit: DateTime<Utc>,
    hold: i64,
    gross: Decimal,
    fees: Decimal,
) -> TradeRecord {
    let entry = exit - chrono::Duration::minutes(hold);
    TradeRecord {
        id: Uuid::from_u128(n),
        deployment_id: DEPLOYMENT,
        skill_id: Uuid::from_u128(0x5c),
        skill_version: 3,
        symbol: symbol.to_owned(),
        side,
        status: TradeStatus::Closed,
        entry_tick_at: entry,
        entry_price: Decimal::from(100),
        entry_size_usd: Decimal::from(1000),
        entry_leverage: Some(Decimal::from(2)),
        entry_reason: Some(format!("entry reason {n}")),
        entry_snapshot_id: None,
        entry_regime_tag: regime,
        opened_qty: Decimal::from(10),
        open_qty: Decimal::ZERO,
        exit_tick_at: Some(exit),
        exit_price: Some(Decimal::from(100) + gross / Decimal::from(10) * side.sign()),
        exit_size_usd: Decimal::from(1000) + gross * side.sign(),
        exit_reason: Some(format!("exit reason {n}")),
        exit_snapshot_id: None,
        close_kind: Some(CloseKind::Signal),
        holding_minutes: Some(Decimal::from(hold)),
        realized_pnl_usd: gross,
        fees_usd: fees,
        mfe_usd: gross.max(Decimal::ZERO) + Decimal::ONE,
        mae_usd: gross.min(Decimal::ZERO) - Decimal::ONE,
        broker_reconciled: false,
    }
}

/// A simple closed BTC long closing at `exit` (for cadence tests).
pub(crate) fn closed_at(n: u128, exit: DateTime<Utc>) -> TradeRecord {
    closed(
        n,
        "BTC",
        Side::Long,
        Some(RegimeTag::Ranging),
        exit,
        30,
        Decimal::ONE,
        Decimal::ZERO,
    )
}

/// The funding-thesis example skill (a copy of examples/skills/btc-eth-funding-thesis.yaml).
pub(crate) fn thesis_skill() -> Skill {
    parse_skill(
        include_str!("../../fixtures/btc-eth-funding-thesis.yaml"),
        Format::Yaml,
    )
    .expect("the fixture skill parses")
    .skill
}

/// A model that answers from a script and records every request.
pub(crate) struct ScriptedModel {
    pub id: String,
    pub replies: Mutex<Vec<Result<ModelResponse, ModelError>>>,
    pub requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    pub(crate) fn new(id: &str, replies: Vec<Result<ModelResponse, ModelError>>) -> Self {
        Self {
            id: id.to_owned(),
            replies: Mutex::new(replies.into_iter().rev().collect()),
            requests: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn text(id: &str, text: &str) -> Self {
        Self::new(id, vec![Ok(reply(text, FinishReason::Stop))])
    }

    pub(crate) fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().expect("not poisoned").clone()
    }
}

pub(crate) fn reply(text: &str, finish: FinishReason) -> ModelResponse {
    ModelResponse {
        finish,
        usage: Usage {
            input: 1200,
            output: 150,
            cache_read: 0,
            cache_write: 0,
        },
        ..answer(text)
    }
}

#[async_trait::async_trait]
impl LanguageModel for ScriptedModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.requests
            .lock()
            .expect("not poisoned")
            .push(request.clone());
        self.replies
            .lock()
            .expect("not poisoned")
            .pop()
            .unwrap_or_else(|| Err(ModelError::Other("script exhausted".to_owned())))
    }
}
