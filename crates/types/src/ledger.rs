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
    /// Some quantity is still open (`open_qty > 0`).
    Open,
    /// The position went back to flat; the row no longer changes.
    Closed,
}

impl TradeStatus {
    /// The snake_case spelling (serde's and the store's).
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
    /// The broker closed the position at the stop the opening proposal set.
    Stop,
    /// The broker closed the position at the target (take-profit) the opening proposal set.
    Target,
}

impl CloseKind {
    /// The snake_case spelling (serde's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            CloseKind::Signal => "signal",
            CloseKind::Flip => "flip",
            CloseKind::Liquidation => "liquidation",
            CloseKind::External => "external",
            CloseKind::Stop => "stop",
            CloseKind::Target => "target",
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
    /// The row's id, deterministic: UUID v5 in the deployment's namespace over the symbol and
    /// the key of the execution that opened the row (the materializer's `trade_id`), so
    /// replaying the same fills gives the same id.
    pub id: Uuid,
    /// The deployment whose round trip this is.
    pub deployment_id: Uuid,
    /// The skill the deployment ran when the row opened.
    pub skill_id: Uuid,
    /// The skill version the row opened under (kept when the deployment moves to a new one).
    pub skill_version: i32,
    /// The traded symbol.
    pub symbol: String,
    /// Long or short for the whole round trip (a flip closes the row and opens a new one).
    pub side: Side,
    /// Open while any quantity is open, then closed.
    pub status: TradeStatus,
    // entry
    /// Time of the opening fill (the tick time for a row opened from the broker's position).
    pub entry_tick_at: DateTime<Utc>,
    /// Average cost of the quantity open: every add re-averages it, exits never move it. Equals
    /// `entry_size_usd / opened_qty` unless an add followed a partial close.
    pub entry_price: Decimal,
    /// Notional opened: Σ qty × price over the opening fills.
    pub entry_size_usd: Decimal,
    /// The leverage the opening proposal asked for; `None` when unknown (no proposal, or one
    /// without leverage).
    pub entry_leverage: Option<Decimal>,
    /// The opening proposal's reason, bounded; `None` when the row did not open from a proposal.
    pub entry_reason: Option<String>,
    /// The decision snapshot whose proposal opened the row; `None` for fills made outside the
    /// agent.
    pub entry_snapshot_id: Option<Uuid>,
    /// The symbol's regime at the opening tick; `None` when it was not known.
    pub entry_regime_tag: Option<RegimeTag>,
    /// Base quantity opened over the round trip.
    pub opened_qty: Decimal,
    /// Base quantity still open (zero once closed).
    pub open_qty: Decimal,
    // exit (set on the first reducing fill; `exit_tick_at`, reason and snapshot follow the latest
    // closing fill; `exit_price` is the quantity-weighted average over every closing fill)
    /// Time (UTC) of the latest closing fill; `None` while nothing has been closed.
    pub exit_tick_at: Option<DateTime<Utc>>,
    /// Quantity-weighted average price of every closing fill; `None` while nothing has been
    /// closed.
    pub exit_price: Option<Decimal>,
    /// Notional closed so far: Σ qty × price over the closing fills (and reconciliation closes).
    /// `exit_price = exit_size_usd / (opened_qty − open_qty)`; kept so the average exit price can
    /// be extended exactly after a restart. Zero while nothing has been closed.
    #[serde(default)]
    pub exit_size_usd: Decimal,
    /// The latest closing proposal's reason, bounded; `None` without one.
    pub exit_reason: Option<String>,
    /// The decision snapshot whose proposal made the latest closing fill; `None` without one.
    pub exit_snapshot_id: Option<Uuid>,
    /// Why the round trip ended; `None` while the row is open.
    pub close_kind: Option<CloseKind>,
    // outcome
    /// Minutes from entry to the final exit (2 decimals); `None` while the row is open.
    pub holding_minutes: Option<Decimal>,
    /// Gross realized PnL on the quantity closed so far.
    pub realized_pnl_usd: Decimal,
    /// Fees of every fill of the round trip, in USD (a flip fill's fee split pro rata).
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
