//! Builders for tests of this crate and its users (feature `test-support`): deploy requests
//! with the defaults a test does not care about, so a new field of [`DeployRequest`] is filled
//! in here once.
//!
//! A test overrides what it checks with struct update syntax:
//! `DeployRequest { id: Some(id), ..paper_deploy(owner) }`.

use rust_decimal::Decimal;
use uuid::Uuid;

use crate::admin::DeployRequest;
use crate::hl_broker::HyperliquidConfig;

/// A paper deployment of `owner` with $10,000 of starting equity, a fresh id and every symbol
/// on the skill's own `maxLeverage`.
#[must_use]
pub fn paper_deploy(owner: Uuid) -> DeployRequest {
    DeployRequest {
        owner,
        broker: db::BrokerKind::Paper,
        equity_usd: Decimal::from(10_000),
        id: None,
        hyperliquid: None,
        exchange_max_leverage: Default::default(),
    }
}

/// A Hyperliquid deployment of `owner` trading the account `config` names (its equity is the
/// exchange account's), with a fresh id.
#[must_use]
pub fn hyperliquid_deploy(owner: Uuid, config: HyperliquidConfig) -> DeployRequest {
    DeployRequest {
        broker: db::BrokerKind::Hyperliquid,
        equity_usd: Decimal::ZERO,
        hyperliquid: Some(config),
        ..paper_deploy(owner)
    }
}
