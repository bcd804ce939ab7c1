//! `get_funding_rate` and `get_open_interest`: perp data the agent fetches on demand (they are
//! not injected into the context; see the runtime design, 2026-06-10).

use std::sync::{Arc, OnceLock};

use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::registry::{ArgsSpec, Tool};
use crate::risk::pct;

pub(crate) const FUNDING_NAME: &str = "get_funding_rate";
pub(crate) const OI_NAME: &str = "get_open_interest";

/// Hours in a (non-leap) year, for annualising funding: `rate × 8760 / period_hours`.
const HOURS_PER_YEAR: u32 = 8_760;

/// Arguments of `get_funding_rate` and `get_open_interest`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PerpDataArgs {
    /// One of the deployment's symbols.
    #[schemars(length(min = 1, max = 32))]
    pub symbol: String,
    /// How many of the latest observations to return (default 24).
    #[serde(default)]
    #[schemars(range(min = 1, max = 168))]
    pub limit: Option<u32>,
}

fn check_symbol(tool: &str, ctx: &ToolContext, symbol: &str) -> Result<(), ToolError> {
    if ctx.trades_symbol(symbol) {
        Ok(())
    } else {
        Err(ToolError::invalid(tool, vec![ctx.not_traded()]))
    }
}

/// The `get_funding_rate` tool.
pub struct GetFundingRate {
    ctx: ToolContext,
    args: &'static ArgsSpec,
}

impl GetFundingRate {
    /// `get_funding_rate` over `ctx`'s derivatives source, for `ctx`'s symbols only.
    #[must_use]
    pub fn new(ctx: ToolContext) -> Self {
        static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
        Self {
            ctx,
            args: ARGS.get_or_init(ArgsSpec::of::<PerpDataArgs>),
        }
    }
}

impl Tool for GetFundingRate {
    fn name(&self) -> &'static str {
        FUNDING_NAME
    }

    fn description(&self) -> &'static str {
        "Recent funding rates of a perpetual (fraction per funding period; positive = longs pay \
         shorts), the latest one annualised in %, and the mean over the returned window."
    }

    fn parameters(&self) -> Arc<Value> {
        Arc::clone(&self.args.schema)
    }

    fn call(&self, args: Value) -> Result<Value, ToolError> {
        let args: PerpDataArgs = self.args.parser.parse(FUNDING_NAME, args)?;
        check_symbol(FUNDING_NAME, &self.ctx, &args.symbol)?;
        let limit = args.limit.unwrap_or(24) as usize;
        let mut rates = self
            .ctx
            .derivatives
            .funding_rates(&args.symbol, self.ctx.now, limit)
            .map_err(|e| ToolError::data(FUNDING_NAME, e))?;
        rates.retain(|r| r.time <= self.ctx.now);
        rates.sort_by_key(|r| r.time);
        let skip = rates.len().saturating_sub(limit);
        let rates = &rates[skip..];
        let Some(latest) = rates.last() else {
            return Ok(json!({
                "symbol": args.symbol,
                "available": false,
                "note": "no funding data for this symbol up to now (it may not be a perpetual)",
            }));
        };
        let mean = crate::checked_mean(rates.iter().map(|r| r.rate));
        let annualised_pct = latest
            .rate
            .checked_mul(Decimal::from(HOURS_PER_YEAR))
            .and_then(|yearly| pct(yearly, Decimal::from(latest.period_hours)));
        Ok(json!({
            "symbol": args.symbol,
            "available": true,
            "period_hours": latest.period_hours,
            "latest": { "time": latest.time, "rate": latest.rate },
            "latest_annualised_pct": annualised_pct,
            "mean_rate": mean.map(|m| m.round_dp_with_strategy(8, rust_decimal::RoundingStrategy::MidpointAwayFromZero).normalize()),
            "history": rates.iter().map(|r| json!({"time": r.time, "rate": r.rate})).collect::<Vec<_>>(),
        }))
    }
}

/// The `get_open_interest` tool.
pub struct GetOpenInterest {
    ctx: ToolContext,
    args: &'static ArgsSpec,
}

impl GetOpenInterest {
    /// `get_open_interest` over `ctx`'s derivatives source, for `ctx`'s symbols only.
    #[must_use]
    pub fn new(ctx: ToolContext) -> Self {
        static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
        Self {
            ctx,
            args: ARGS.get_or_init(ArgsSpec::of::<PerpDataArgs>),
        }
    }
}

impl Tool for GetOpenInterest {
    fn name(&self) -> &'static str {
        OI_NAME
    }

    fn description(&self) -> &'static str {
        "Recent open interest of a perpetual (base units and USD) and its change in % over the \
         returned window."
    }

    fn parameters(&self) -> Arc<Value> {
        Arc::clone(&self.args.schema)
    }

    fn call(&self, args: Value) -> Result<Value, ToolError> {
        let args: PerpDataArgs = self.args.parser.parse(OI_NAME, args)?;
        check_symbol(OI_NAME, &self.ctx, &args.symbol)?;
        let limit = args.limit.unwrap_or(24) as usize;
        let mut points = self
            .ctx
            .derivatives
            .open_interest(&args.symbol, self.ctx.now, limit)
            .map_err(|e| ToolError::data(OI_NAME, e))?;
        points.retain(|p| p.time <= self.ctx.now);
        points.sort_by_key(|p| p.time);
        let skip = points.len().saturating_sub(limit);
        let points = &points[skip..];
        let (Some(first), Some(latest)) = (points.first(), points.last()) else {
            return Ok(json!({
                "symbol": args.symbol,
                "available": false,
                "note": "no open-interest data for this symbol up to now",
            }));
        };
        Ok(json!({
            "symbol": args.symbol,
            "available": true,
            "latest": latest,
            "change_pct": latest.oi_base.checked_sub(first.oi_base).and_then(|d| pct(d, first.oi_base)),
            "since": first.time,
            "history": points,
        }))
    }
}
