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
    /// Profits when the price rises.
    Long,
    /// Profits when the price falls.
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

    /// The snake_case spelling (`long`, `short`), as in prompts and storage.
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
    /// Buys base units: opens or adds to a long, reduces a short.
    Buy,
    /// Sells base units: opens or adds to a short, reduces a long.
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
    /// The symbol held.
    pub symbol: String,
    /// Long or short.
    pub side: Side,
    /// Size in base units, always positive.
    pub qty: Decimal,
    /// Average entry price.
    pub entry_price: Decimal,
    /// The position's leverage as the broker reports it (1 = none).
    pub leverage: Decimal,
    /// The broker's current mark price, in USD per base unit.
    pub mark_price: Decimal,
    /// The mark price at which the broker liquidates the position; `None` when the broker
    /// reports none (e.g. no liquidation risk).
    pub liquidation_price: Option<Decimal>,
    /// Profit or loss at the mark, in USD, before fees.
    pub unrealized_pnl_usd: Decimal,
    /// Margin locked by the position, in USD.
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
    /// The broker's fill id, unique per account.
    pub id: String,
    /// The traded symbol.
    pub symbol: String,
    /// Buy or sell.
    pub side: OrderSide,
    /// Quantity in base units, always positive.
    pub qty: Decimal,
    /// Execution price, in USD per base unit.
    pub price: Decimal,
    /// Fee paid in USD (negative for a rebate).
    pub fee_usd: Decimal,
    /// When the fill happened (UTC).
    pub time: DateTime<Utc>,
    /// The decision snapshot whose proposal caused this fill (none for liquidations and fills
    /// made outside the agent).
    pub snapshot_id: Option<Uuid>,
    /// The client order id the fill belongs to, when known.
    pub client_order_id: Option<String>,
    /// The broker forced this fill (liquidation, auto-deleveraging).
    #[serde(default)]
    pub liquidation: bool,
    /// The resting stop or target of the position that made this fill, when it was one (`None`
    /// for market orders and liquidations). Absent in the serialized form when `None`, so fills
    /// written before it existed read back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<FillTrigger>,
}

/// Which resting protective level of a position a fill executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FillTrigger {
    /// The protective stop.
    Stop,
    /// The profit target (take-profit).
    Target,
}

impl FillTrigger {
    /// The snake_case spelling (serde's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            FillTrigger::Stop => "stop",
            FillTrigger::Target => "target",
        }
    }
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
    /// When the broker reported this state (UTC).
    pub at: DateTime<Utc>,
    /// Wallet balance plus unrealized PnL.
    pub equity_usd: Decimal,
    /// Margin free to open new positions, in USD.
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
// The JSON Schema is written out by hand (`order_action_schema`) as the plain string enum the
// `propose_order` tool publishes: derived from the documented variants it would become a
// `oneOf`, changing the tool definition the model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(schema_with = "order_action_schema")]
pub enum OrderAction {
    /// Open a long, or add to one; against a short, flip it to long.
    OpenLong,
    /// Open a short, or add to one; against a long, flip it to short.
    OpenShort,
    /// Exit the whole position on the symbol.
    Close,
    /// Exit `size_usd` of notional of the position.
    Reduce,
    /// Stand aside: no order this tick.
    NoOp,
}

/// Every [`OrderAction`], in declaration order (the order of the schema's `enum`).
const ORDER_ACTIONS: [OrderAction; 5] = [
    OrderAction::OpenLong,
    OrderAction::OpenShort,
    OrderAction::Close,
    OrderAction::Reduce,
    OrderAction::NoOp,
];

/// `{"type": "string", "enum": [...]}` with the snake_case spellings: exactly what the derive
/// produces for variants without docs.
fn order_action_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = ORDER_ACTIONS.iter().map(|a| a.as_str()).collect();
    schemars::json_schema!({ "type": "string", "enum": names })
}

impl OrderAction {
    /// The snake_case spelling, as the model writes it.
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
    /// What the model asked for.
    pub action: OrderAction,
    /// The symbol, as the model wrote it (the engine checks it).
    pub symbol: String,
    /// Notional in USD; required for opens and reduces.
    pub size_usd: Option<Decimal>,
    /// Leverage for an open; `None` means 1x (never the cap).
    pub leverage: Option<Decimal>,
    /// The model's one- or two-sentence justification (data, never instructions).
    pub reason: String,
    /// 0–100.
    pub confidence: Option<u8>,
    /// Protective stop price, in USD per base unit (opens only); `None` = no stop.
    pub stop: Option<Decimal>,
    /// Take-profit price, in USD per base unit (opens only); `None` = no target.
    pub target: Option<Decimal>,
}

impl ProposedAction {
    /// Whether the two serialise to the same text: every field equal and each decimal at the
    /// same scale (`Decimal`'s `==` holds `1.50 == 1.5`, whose texts differ). What lets a
    /// serialisation of one stand for the other's. Written out field by field: a field added
    /// to `ProposedAction` fails to compile here.
    #[must_use]
    pub fn same_text(&self, other: &Self) -> bool {
        let Self {
            action,
            symbol,
            size_usd,
            leverage,
            reason,
            confidence,
            stop,
            target,
        } = self;
        let exact = |x: &Option<Decimal>, y: &Option<Decimal>| {
            x.map(|d| d.serialize()) == y.map(|d| d.serialize())
        };
        *action == other.action
            && *symbol == other.symbol
            && exact(size_usd, &other.size_usd)
            && exact(leverage, &other.leverage)
            && *reason == other.reason
            && *confidence == other.confidence
            && exact(stop, &other.stop)
            && exact(target, &other.target)
    }
}

/// Stable codes for the execution engine's rejections. The code is what the agent sees in its
/// "Last decision" section and what metrics count by; never renumber one.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum RuleCode {
    /// The symbol is not one the deployment trades, or has no positive mark price.
    #[serde(rename = "R1_UNKNOWN_SYMBOL")]
    UnknownSymbol,
    /// `allowedSymbols` is set and lacks the symbol (opens only).
    #[serde(rename = "R2_SYMBOL_NOT_ALLOWED")]
    SymbolNotAllowed,
    /// The resulting position's notional is above `maxPositionPct` of equity.
    #[serde(rename = "R3_POSITION_CAP")]
    PositionCap,
    /// All positions' notionals together would be above `maxTotalExposurePct` of equity.
    #[serde(rename = "R4_TOTAL_EXPOSURE")]
    TotalExposure,
    /// The leverage asked for is above `maxLeverage`.
    #[serde(rename = "R5_LEVERAGE_CAP")]
    LeverageCap,
    /// The order's notional is below `minOrderUsd`.
    #[serde(rename = "R6_ORDER_TOO_SMALL")]
    OrderTooSmall,
    /// The order's notional is above `maxOrderUsd`.
    #[serde(rename = "R7_ORDER_TOO_LARGE")]
    OrderTooLarge,
    /// `maxOrdersPerHour` orders already executed in the last hour.
    #[serde(rename = "R8_ORDER_RATE")]
    OrderRate,
    /// Equity is `haltDrawdownPct` or more below its peak: no opens or adds.
    #[serde(rename = "R9_HALT_DRAWDOWN")]
    HaltDrawdown,
    /// Today's (UTC) loss reached `haltDailyLossPct` of the day's starting equity: no opens or adds.
    #[serde(rename = "R10_HALT_DAILY_LOSS")]
    HaltDailyLoss,
    /// The proposal is malformed: no position to exit, a missing or non-positive size, leverage below 1x, a stop or target on the wrong side, a size that rounds to zero.
    #[serde(rename = "R11_INVALID_ORDER")]
    InvalidOrder,
    /// The opening leg needs more margin than is available.
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
    Executed {
        /// What was sent, in words and numbers, as the model will read it in "Last decision".
        detail: String,
    },
    /// A rule refused the order; nothing was sent.
    Rejected {
        /// The first rule that failed.
        rule: RuleCode,
        /// The numbers that broke the rule, as the model will read them.
        detail: String,
    },
    /// Nothing to do: no proposal, or an explicit `no_op`.
    NoOp {
        /// Why nothing was done.
        detail: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_holds_only_for_the_same_decimals_at_the_same_scale() {
        let d = |s: &str| Some(s.parse::<Decimal>().unwrap());
        let a = ProposedAction {
            action: OrderAction::OpenLong,
            symbol: "BTC".into(),
            size_usd: d("100.5"),
            leverage: None,
            reason: "cross".into(),
            confidence: Some(60),
            stop: None,
            target: d("2"),
        };
        assert!(a.same_text(&a.clone()));
        let wider = ProposedAction {
            size_usd: d("100.50"),
            ..a.clone()
        };
        // Equal by value, not by text.
        assert_eq!(wider, a);
        assert!(!a.same_text(&wider));
        assert_ne!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&wider).unwrap()
        );
        assert!(!a.same_text(&ProposedAction {
            target: None,
            ..a.clone()
        }));
        assert!(!a.same_text(&ProposedAction {
            reason: "cross!".into(),
            ..a.clone()
        }));
    }

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
