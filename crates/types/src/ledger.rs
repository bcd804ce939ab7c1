use std::fmt;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{RegimeTag, Side};

/// Whether a ledger row's round trip is still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TradeStatus {
    Open,
    Closed,
}

impl TradeStatus {
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            TradeStatus::Open => "open",
            TradeStatus::Closed => "closed",
        }
    }
}

/// Why a round trip ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CloseKind {
    /// Closed by an order the agent proposed (close / reduce to zero).
    Signal,
    /// Closed by a fill that crossed zero; a new row opened on the other side.
    Flip,
    /// The broker liquidated the position.
    Liquidation,
    /// The position vanished without a fill of ours (manual close, ADL, another client).
    External,
}

impl CloseKind {
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            CloseKind::Signal => "signal",
            CloseKind::Flip => "flip",
            CloseKind::Liquidation => "liquidation",
            CloseKind::External => "external",
        }
    }
}

impl fmt::Display for CloseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `trade_history` row: a round trip (flat → flat) of one deployment on one symbol.
///
/// PnL convention: `realized_pnl_usd` is **gross** (before fees); `fees_usd` holds the fees of
/// every fill of the round trip (pro rata for a fill split by a flip). Net = gross − fees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TradeRecord {
    pub id: Uuid,
    pub deployment_id: Uuid,
    pub skill_id: Uuid,
    pub skill_version: i32,
    pub symbol: String,
    pub side: Side,
    pub status: TradeStatus,
    // entry
    /// Time of the opening fill (the tick time for a row opened from the broker's position).
    pub entry_tick_at: DateTime<Utc>,
    /// Average cost of the quantity open: every add re-averages it, exits never move it. Equals
    /// `entry_size_usd / opened_qty` unless an add followed a partial close.
    pub entry_price: Decimal,
    /// Notional opened: Σ qty × price over the opening fills.
    pub entry_size_usd: Decimal,
    pub entry_leverage: Option<Decimal>,
    pub entry_reason: Option<String>,
    pub entry_snapshot_id: Option<Uuid>,
    pub entry_regime_tag: Option<RegimeTag>,
    /// Base quantity opened over the round trip.
    pub opened_qty: Decimal,
    /// Base quantity still open (zero once closed).
    pub open_qty: Decimal,
    // exit (set on the first reducing fill; `exit_tick_at`, reason and snapshot follow the latest
    // closing fill; `exit_price` is the quantity-weighted average over every closing fill)
    pub exit_tick_at: Option<DateTime<Utc>>,
    pub exit_price: Option<Decimal>,
    /// Notional closed so far: Σ qty × price over the closing fills (and reconciliation closes).
    /// `exit_price = exit_size_usd / (opened_qty − open_qty)`; kept so the average exit price can
    /// be extended exactly after a restart. Zero while nothing has been closed.
    #[serde(default)]
    pub exit_size_usd: Decimal,
    pub exit_reason: Option<String>,
    pub exit_snapshot_id: Option<Uuid>,
    pub close_kind: Option<CloseKind>,
    // outcome
    pub holding_minutes: Option<Decimal>,
    /// Gross realized PnL on the quantity closed so far.
    pub realized_pnl_usd: Decimal,
    pub fees_usd: Decimal,
    /// Max favourable excursion in $, from bar highs/lows since entry (≥ 0).
    pub mfe_usd: Decimal,
    /// Max adverse excursion in $, from bar highs/lows since entry (≤ 0).
    pub mae_usd: Decimal,
    /// `true` when part of this row comes from the broker's position rather than from a fill: the
    /// row was opened, resized or closed to match a broker size that no fill explained (manual
    /// trades, missed fills, ADL). Such a row cannot be rebuilt from the fill stream alone.
    #[serde(default)]
    pub broker_reconciled: bool,
}
