//! Builders shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeZone, Utc};
use memory_ledger::{LedgerScope, ProposalInfo, Proposals, TickInput};
use rust_decimal::Decimal;
use types::{Bar, Fill, Interval, OrderSide, Position, RegimeTag, Side};
use uuid::Uuid;

pub(crate) const DEPLOYMENT: Uuid = Uuid::from_u128(0xd0d0_0000_0000_4000_8000_0000_0000_0001);
pub(crate) const SKILL: Uuid = Uuid::from_u128(0x5c11_0000_0000_4000_8000_0000_0000_0002);

pub(crate) fn scope() -> LedgerScope {
    LedgerScope {
        deployment_id: DEPLOYMENT,
        skill_id: SKILL,
        skill_version: 3,
    }
}

/// 2026-06-04T10:00Z plus `minutes`.
pub(crate) fn t(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap() + Duration::minutes(minutes)
}

pub(crate) fn snap(n: u128) -> Uuid {
    Uuid::from_u128(0x5aa9_0000_0000_4000_8000_0000_0000_0000 + n)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn fill(
    id: &str,
    symbol: &str,
    side: OrderSide,
    qty: Decimal,
    price: Decimal,
    fee: Decimal,
    minute: i64,
    snapshot: Option<Uuid>,
) -> Fill {
    Fill {
        id: id.to_owned(),
        symbol: symbol.to_owned(),
        side,
        qty,
        price,
        fee_usd: fee,
        time: t(minute),
        snapshot_id: snapshot,
        client_order_id: None,
        liquidation: false,
        trigger: None,
    }
}

pub(crate) fn position(
    symbol: &str,
    side: Side,
    qty: Decimal,
    entry: Decimal,
    mark: Decimal,
) -> Position {
    Position {
        symbol: symbol.to_owned(),
        side,
        qty,
        entry_price: entry,
        leverage: Decimal::from(5),
        mark_price: mark,
        liquidation_price: None,
        unrealized_pnl_usd: Decimal::ZERO,
        margin_usd: Decimal::ZERO,
    }
}

/// A 1h bar opening at `t(minute)`.
pub(crate) fn bar(minute: i64, open: Decimal, high: Decimal, low: Decimal, close: Decimal) -> Bar {
    Bar {
        time: t(minute),
        open,
        high,
        low,
        close,
        volume: Decimal::ONE,
    }
}

pub(crate) fn proposal(reason: &str, leverage: Option<Decimal>) -> ProposalInfo {
    ProposalInfo {
        reason: Some(reason.to_owned()),
        leverage,
    }
}

/// Owned data of one tick; `input()` borrows it as a [`TickInput`] (bars are 1h).
#[derive(Default)]
pub(crate) struct Tick {
    pub at_minute: i64,
    pub positions: Vec<Position>,
    pub fills: Vec<Fill>,
    pub bars: BTreeMap<String, Vec<Bar>>,
    pub proposals: Proposals,
    pub regimes: BTreeMap<String, RegimeTag>,
}

impl Tick {
    pub(crate) fn input(&self) -> TickInput<'_> {
        TickInput {
            at: t(self.at_minute),
            positions: &self.positions,
            fills: &self.fills,
            bars: &self.bars,
            bar_interval: Interval::H1,
            proposals: &self.proposals,
            regimes: &self.regimes,
        }
    }
}
