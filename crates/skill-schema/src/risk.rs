use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Hard ceilings the execution engine enforces on every proposal. They are shown to the model so
/// it can size correctly the first time; nothing the model writes can raise them.
///
/// Percentages are of account equity and written as percent (`25` = 25 %). Notional caps count
/// leverage: a 5x position of $1,000 margin is $5,000 of notional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RiskCaps {
    /// Largest notional of one position, % of equity.
    #[serde(with = "rust_decimal::serde::float")]
    #[schemars(with = "f64", range(min = 0.01, max = 1000))]
    pub max_position_pct: Decimal,
    /// Largest sum of all positions' notionals, % of equity.
    #[serde(with = "rust_decimal::serde::float")]
    #[schemars(with = "f64", range(min = 0.01, max = 5000))]
    pub max_total_exposure_pct: Decimal,
    /// Highest leverage an order may use.
    #[serde(with = "rust_decimal::serde::float")]
    #[schemars(with = "f64", range(min = 1, max = 50))]
    pub max_leverage: Decimal,
    /// Smallest order notional in USD. Default 10.
    #[serde(default = "default_min_order_usd", with = "rust_decimal::serde::float")]
    #[schemars(with = "f64", range(min = 0))]
    pub min_order_usd: Decimal,
    /// Largest order notional in USD.
    #[serde(with = "rust_decimal::serde::float")]
    #[schemars(with = "f64", range(min = 1))]
    pub max_order_usd: Decimal,
    /// Most orders executed in any rolling hour. Default 6.
    #[serde(default = "default_max_orders_per_hour")]
    #[schemars(range(min = 1, max = 120))]
    pub max_orders_per_hour: u32,
    /// Stop opening or adding when equity is this % below its peak. Default 20.
    #[serde(
        default = "default_halt_drawdown_pct",
        with = "rust_decimal::serde::float"
    )]
    #[schemars(with = "f64", range(min = 0.1, max = 100))]
    pub halt_drawdown_pct: Decimal,
    /// Stop opening or adding when today's (UTC) loss reaches this % of the day's starting
    /// equity. Default 5.
    #[serde(
        default = "default_halt_daily_loss_pct",
        with = "rust_decimal::serde::float"
    )]
    #[schemars(with = "f64", range(min = 0.1, max = 100))]
    pub halt_daily_loss_pct: Decimal,
    /// The engine's authoritative symbol whitelist; empty = unrestricted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_symbols: Vec<String>,
}

fn default_min_order_usd() -> Decimal {
    Decimal::TEN
}
const fn default_max_orders_per_hour() -> u32 {
    6
}
fn default_halt_drawdown_pct() -> Decimal {
    Decimal::from(20)
}
fn default_halt_daily_loss_pct() -> Decimal {
    Decimal::from(5)
}
