use std::fmt;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Direction of a position or a trade.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Long,
    Short,
}

impl Side {
    /// `+1` for long, `-1` for short: PnL = sign × (exit − entry) × qty.
    #[must_use]
    pub fn sign(self) -> Decimal {
        match self {
            Side::Long => Decimal::ONE,
            Side::Short => Decimal::NEGATIVE_ONE,
        }
    }

    /// The other side.
    #[must_use]
    pub const fn opposite(self) -> Side {
        match self {
            Side::Long => Side::Short,
            Side::Short => Side::Long,
        }
    }

    /// The order side that opens or adds to a position of this side.
    #[must_use]
    pub const fn opening_order(self) -> OrderSide {
        match self {
            Side::Long => OrderSide::Buy,
            Side::Short => OrderSide::Sell,
        }
    }

    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Side::Long => "long",
            Side::Short => "short",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Side of an order or fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderSide {
    Buy,
    Sell,
}

impl OrderSide {
    /// `+1` for a buy, `-1` for a sell: the signed change to a position's size.
    #[must_use]
    pub fn sign(self) -> Decimal {
        match self {
            OrderSide::Buy => Decimal::ONE,
            OrderSide::Sell => Decimal::NEGATIVE_ONE,
        }
    }
}

/// An open position as the broker reports it (broker-authoritative).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Position {
    pub symbol: String,
    pub side: Side,
    /// Size in base units, always positive.
    pub qty: Decimal,
    /// Average entry price.
    pub entry_price: Decimal,
    pub leverage: Decimal,
    pub mark_price: Decimal,
    pub liquidation_price: Option<Decimal>,
    pub unrealized_pnl_usd: Decimal,
    pub margin_usd: Decimal,
}

impl Position {
    /// Notional value at the mark price.
    #[must_use]
    pub fn notional_usd(&self) -> Decimal {
        self.qty * self.mark_price
    }

    /// Signed size: positive for long, negative for short.
    #[must_use]
    pub fn signed_qty(&self) -> Decimal {
        self.side.sign() * self.qty
    }
}

/// One execution reported by a broker. `id` is unique per broker account: applying the same fill
/// twice must change nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Fill {
    pub id: String,
    pub symbol: String,
    pub side: OrderSide,
    /// Quantity in base units, always positive.
    pub qty: Decimal,
    pub price: Decimal,
    /// Fee paid in USD (negative for a rebate).
    pub fee_usd: Decimal,
    pub time: DateTime<Utc>,
    /// The decision snapshot whose proposal caused this fill (none for liquidations and fills
    /// made outside the agent).
    pub snapshot_id: Option<Uuid>,
    /// The client order id the fill belongs to, when known.
    pub client_order_id: Option<String>,
    /// The broker forced this fill (liquidation, auto-deleveraging).
    #[serde(default)]
    pub liquidation: bool,
}

impl Fill {
    /// Signed quantity: positive for a buy, negative for a sell.
    #[must_use]
    pub fn signed_qty(&self) -> Decimal {
        self.side.sign() * self.qty
    }
}

/// The broker-authoritative account state after a tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PortfolioSnapshot {
    pub at: DateTime<Utc>,
    /// Wallet balance plus unrealized PnL.
    pub equity_usd: Decimal,
    pub available_margin_usd: Decimal,
    /// Positions ordered by symbol.
    pub positions: Vec<Position>,
    /// Realized PnL since the account started, gross of fees.
    pub realized_pnl_usd: Decimal,
    /// Fees paid since the account started.
    pub fees_paid_usd: Decimal,
}

impl PortfolioSnapshot {
    /// The open position on `symbol`, if any.
    #[must_use]
    pub fn position(&self, symbol: &str) -> Option<&Position> {
        self.positions.iter().find(|p| p.symbol == symbol)
    }

    /// Sum of the notionals of every open position.
    #[must_use]
    pub fn gross_exposure_usd(&self) -> Decimal {
        self.positions.iter().map(Position::notional_usd).sum()
    }
}

/// What the model asked for through `propose_order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderAction {
    OpenLong,
    OpenShort,
    Close,
    Reduce,
    NoOp,
}

impl OrderAction {
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            OrderAction::OpenLong => "open_long",
            OrderAction::OpenShort => "open_short",
            OrderAction::Close => "close",
            OrderAction::Reduce => "reduce",
            OrderAction::NoOp => "no_op",
        }
    }
}

impl fmt::Display for OrderAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A proposed order, as validated from the `propose_order` tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposedAction {
    pub action: OrderAction,
    pub symbol: String,
    /// Notional in USD; required for opens and reduces.
    pub size_usd: Option<Decimal>,
    pub leverage: Option<Decimal>,
    pub reason: String,
    /// 0–100.
    pub confidence: Option<u8>,
    pub stop: Option<Decimal>,
    pub target: Option<Decimal>,
}

/// Stable codes for the execution engine's rejections. The code is what the agent sees in its
/// "Last decision" section and what metrics count by; never renumber one.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum RuleCode {
    #[serde(rename = "R1_UNKNOWN_SYMBOL")]
    UnknownSymbol,
    #[serde(rename = "R2_SYMBOL_NOT_ALLOWED")]
    SymbolNotAllowed,
    #[serde(rename = "R3_POSITION_CAP")]
    PositionCap,
    #[serde(rename = "R4_TOTAL_EXPOSURE")]
    TotalExposure,
    #[serde(rename = "R5_LEVERAGE_CAP")]
    LeverageCap,
    #[serde(rename = "R6_ORDER_TOO_SMALL")]
    OrderTooSmall,
    #[serde(rename = "R7_ORDER_TOO_LARGE")]
    OrderTooLarge,
    #[serde(rename = "R8_ORDER_RATE")]
    OrderRate,
    #[serde(rename = "R9_HALT_DRAWDOWN")]
    HaltDrawdown,
    #[serde(rename = "R10_HALT_DAILY_LOSS")]
    HaltDailyLoss,
    #[serde(rename = "R11_INVALID_ORDER")]
    InvalidOrder,
    #[serde(rename = "R12_INSUFFICIENT_MARGIN")]
    InsufficientMargin,
}

impl RuleCode {
    /// Every code, in number order.
    pub const ALL: [RuleCode; 12] = [
        RuleCode::UnknownSymbol,
        RuleCode::SymbolNotAllowed,
        RuleCode::PositionCap,
        RuleCode::TotalExposure,
        RuleCode::LeverageCap,
        RuleCode::OrderTooSmall,
        RuleCode::OrderTooLarge,
        RuleCode::OrderRate,
        RuleCode::HaltDrawdown,
        RuleCode::HaltDailyLoss,
        RuleCode::InvalidOrder,
        RuleCode::InsufficientMargin,
    ];

    /// The stable code, e.g. `R3_POSITION_CAP`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            RuleCode::UnknownSymbol => "R1_UNKNOWN_SYMBOL",
            RuleCode::SymbolNotAllowed => "R2_SYMBOL_NOT_ALLOWED",
            RuleCode::PositionCap => "R3_POSITION_CAP",
            RuleCode::TotalExposure => "R4_TOTAL_EXPOSURE",
            RuleCode::LeverageCap => "R5_LEVERAGE_CAP",
            RuleCode::OrderTooSmall => "R6_ORDER_TOO_SMALL",
            RuleCode::OrderTooLarge => "R7_ORDER_TOO_LARGE",
            RuleCode::OrderRate => "R8_ORDER_RATE",
            RuleCode::HaltDrawdown => "R9_HALT_DRAWDOWN",
            RuleCode::HaltDailyLoss => "R10_HALT_DAILY_LOSS",
            RuleCode::InvalidOrder => "R11_INVALID_ORDER",
            RuleCode::InsufficientMargin => "R12_INSUFFICIENT_MARGIN",
        }
    }
}

impl fmt::Display for RuleCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The execution engine's answer to a proposal. The engine is the only authority on what trades.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// The order passed every rule and was sent to the broker.
    Executed { detail: String },
    /// A rule refused the order; nothing was sent.
    Rejected { rule: RuleCode, detail: String },
    /// Nothing to do: no proposal, or an explicit `no_op`.
    NoOp { detail: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_codes_serialize_as_their_stable_code() {
        for code in RuleCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn verdict_is_tagged_by_status() {
        let v = Verdict::Rejected {
            rule: RuleCode::PositionCap,
            detail: "x".into(),
        };
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"status":"rejected","rule":"R3_POSITION_CAP","detail":"x"}"#
        );
    }
}
