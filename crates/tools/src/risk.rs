//! `get_position_risk`: the broker-authoritative positions with the numbers a sizing decision
//! needs (notional, share of equity, distance to liquidation).

use std::sync::{Arc, OnceLock};

use rust_decimal::{Decimal, RoundingStrategy};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use types::{PortfolioSnapshot, Position, Side};

use crate::context::{DataError, ToolContext};
use crate::error::ToolError;
use crate::registry::{ArgsSpec, Tool};
use crate::round2;

pub(crate) const NAME: &str = "get_position_risk";

/// `part / whole × 100`, rounded to 2 decimals half away from zero; `None` when `whole` is 0
/// or the result overflows.
#[must_use]
pub fn pct(part: Decimal, whole: Decimal) -> Option<Decimal> {
    let ratio = part.checked_div(whole)?.checked_mul(Decimal::ONE_HUNDRED)?;
    Some(ratio.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero))
}

/// Checks that the arithmetic the tools and the context do on a broker snapshot cannot overflow
/// `Decimal` (which would panic): every position's notional at mark and at entry, their sum, and
/// equity times the largest cap percentage (5000). Call it before using a snapshot.
///
/// # Errors
/// [`DataError`] from the `broker` naming the position or field that is out of range.
pub fn check_portfolio(p: &PortfolioSnapshot) -> Result<(), DataError> {
    let bad = |what: String| DataError::new("broker", format!("{what} is out of range"));
    let mut gross = Decimal::ZERO;
    for pos in &p.positions {
        let at_mark = pos
            .qty
            .checked_mul(pos.mark_price)
            .ok_or_else(|| bad(format!("position {}: qty × mark", pos.symbol)))?;
        pos.qty
            .checked_mul(pos.entry_price)
            .ok_or_else(|| bad(format!("position {}: qty × entry", pos.symbol)))?;
        gross = gross
            .checked_add(at_mark)
            .ok_or_else(|| bad("gross exposure".to_owned()))?;
    }
    p.equity_usd
        .checked_mul(Decimal::from(5_000))
        .ok_or_else(|| bad("equity".to_owned()))?;
    Ok(())
}

/// How far the mark may move against the position before liquidation, in % of the mark:
/// long `(mark − liq) / mark`, short `(liq − mark) / mark`.
#[must_use]
pub fn distance_to_liquidation_pct(p: &Position) -> Option<Decimal> {
    let liq = p.liquidation_price?;
    let gap = match p.side {
        Side::Long => p.mark_price - liq,
        Side::Short => liq - p.mark_price,
    };
    pct(gap, p.mark_price)
}

/// Arguments of `get_position_risk`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PositionRiskArgs {
    /// Only this symbol; omit for every position.
    #[serde(default)]
    pub symbol: Option<String>,
}

/// The `get_position_risk` tool.
pub struct GetPositionRisk {
    ctx: ToolContext,
    args: &'static ArgsSpec,
}

impl GetPositionRisk {
    /// `get_position_risk` over `ctx`'s broker account (checked with [`check_portfolio`]).
    #[must_use]
    pub fn new(ctx: ToolContext) -> Self {
        static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
        Self {
            ctx,
            args: ARGS.get_or_init(ArgsSpec::of::<PositionRiskArgs>),
        }
    }
}

impl Tool for GetPositionRisk {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Open positions as the broker reports them, with notional, share of equity, unrealized \
         PnL, margin and distance to liquidation, plus account equity and total exposure."
    }

    fn parameters(&self) -> Arc<Value> {
        Arc::clone(&self.args.schema)
    }

    fn call(&self, args: Value) -> Result<Value, ToolError> {
        let args: PositionRiskArgs = self.args.parser.parse(NAME, args)?;
        let portfolio = self
            .ctx
            .portfolio
            .portfolio()
            .and_then(|p| check_portfolio(&p).map(|()| p))
            .map_err(|e| ToolError::data(NAME, e))?;
        let equity = portfolio.equity_usd;
        let positions: Vec<Value> = portfolio
            .positions
            .iter()
            .filter(|p| args.symbol.as_ref().is_none_or(|s| *s == p.symbol))
            .map(|p| {
                let notional = p.notional_usd();
                json!({
                    "symbol": p.symbol,
                    "side": p.side,
                    "qty": p.qty,
                    "entry_price": p.entry_price,
                    "mark_price": p.mark_price,
                    "notional_usd": round2(notional),
                    "pct_of_equity": pct(notional, equity),
                    "leverage": p.leverage,
                    "unrealized_pnl_usd": round2(p.unrealized_pnl_usd),
                    "unrealized_pnl_pct_of_entry": pct(p.unrealized_pnl_usd, p.qty * p.entry_price),
                    "margin_usd": round2(p.margin_usd),
                    "liquidation_price": p.liquidation_price,
                    "distance_to_liquidation_pct": distance_to_liquidation_pct(p),
                })
            })
            .collect();
        let gross = portfolio.gross_exposure_usd();
        Ok(json!({
            "as_of": portfolio.at,
            "equity_usd": round2(equity),
            "available_margin_usd": round2(portfolio.available_margin_usd),
            "gross_exposure_usd": round2(gross),
            "gross_exposure_pct_of_equity": pct(gross, equity),
            "positions": positions,
        }))
    }
}
