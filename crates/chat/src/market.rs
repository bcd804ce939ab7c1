//! `get_market`: a symbol's recent bars in brief (last close, change, range, regime) with its
//! latest funding and open interest, from the market data the turn was given (the runner's
//! Hyperliquid candles or an offline bar directory on the server).

use std::sync::{Arc, OnceLock};

use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tools::{ArgsSpec, Tool, ToolError};
use types::{Interval, text};

use crate::catalog::{ChatToolContext, spec};
use crate::style;

/// Tool name: a symbol's recent market in brief.
pub const GET_MARKET: &str = "get_market";
/// Bars `get_market` summarises unless asked otherwise.
pub const MARKET_BARS: usize = 48;
/// Most bars `get_market` summarises.
pub const MAX_MARKET_BARS: usize = 200;

/// Arguments of `get_market`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetMarketArgs {
    /// The symbol, e.g. BTC (your deployments' symbols are the ones the server holds bars of).
    pub symbol: String,
    /// Bar interval: 5m, 15m, 1h (default), 4h or 1d.
    #[serde(default)]
    pub interval: Option<Interval>,
    /// How many of the latest closed bars to summarise, 2..=200 (default 48).
    #[serde(default)]
    #[schemars(range(min = 2, max = 200))]
    pub bars: Option<usize>,
}

pub(crate) struct GetMarket(pub ChatToolContext);

impl Tool for GetMarket {
    fn name(&self) -> &'static str {
        GET_MARKET
    }

    fn description(&self) -> &'static str {
        "A symbol's recent market in brief, from the server's market data, as of now: the \
         latest closed bars (default 48 at 1h) summarised — first and last close, change over \
         the window and over the last 24 bars, high and low, mean high-low range, the regime \
         (trending_up, trending_down, ranging or volatile; the same rule that tags trades) — and \
         the latest funding rate (per period, positive: longs pay) and open interest when the \
         server has them. Prices at their own scale, changes as percentages such as -1.25%. \
         About 250 tokens."
    }

    fn parameters(&self) -> Arc<Value> {
        static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
        Arc::clone(&spec::<GetMarketArgs>(&ARGS).schema)
    }

    fn call(&self, args: Value) -> Result<Value, ToolError> {
        static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
        let args: GetMarketArgs = spec::<GetMarketArgs>(&ARGS)
            .parser
            .parse(GET_MARKET, args)?;
        let ctx = &self.0;
        let now = ctx.data.now;
        let symbol = args.symbol.trim().to_uppercase();
        let interval = args.interval.unwrap_or(Interval::H1);
        let n = args.bars.unwrap_or(MARKET_BARS).clamp(2, MAX_MARKET_BARS);
        let bars = ctx
            .market
            .bars(&symbol, interval, now, n)
            .map_err(|source| ToolError::Data {
                tool: GET_MARKET.to_owned(),
                source,
            })?;
        let (Some(first), Some(last)) = (bars.first(), bars.last()) else {
            return Err(ToolError::Data {
                tool: GET_MARKET.to_owned(),
                source: tools::DataError::new(
                    "market data",
                    format!(
                        "no {} bars of {symbol} closed by {}; the server holds bars of your \
                         deployments' symbols",
                        interval.as_str(),
                        text::short_time(now)
                    ),
                ),
            });
        };
        let change = |from: Decimal| {
            (!from.is_zero())
                .then(|| (last.close - from).checked_div(from))
                .flatten()
        };
        let day_ago = bars
            .len()
            .checked_sub(25)
            .and_then(|i| bars.get(i))
            .map(|b| b.close);
        let high = bars.iter().map(|b| b.high).max().unwrap_or(last.high);
        let low = bars.iter().map(|b| b.low).min().unwrap_or(last.low);
        let ranges: Decimal = bars.iter().map(|b| b.high - b.low).sum();
        let mean_range = ranges
            .checked_div(Decimal::from(bars.len()))
            .unwrap_or_default();
        let funding = ctx
            .derivatives
            .funding_rates(&symbol, now, 1)
            .ok()
            .and_then(|mut f| f.pop());
        let open_interest = ctx
            .derivatives
            .open_interest(&symbol, now, 1)
            .ok()
            .and_then(|mut o| o.pop());
        let step = interval.duration();
        Ok(json!({
            "symbol": symbol,
            "interval": interval.as_str(),
            "as_of": now,
            "bars": bars.len(),
            "from": first.time,
            "last_closed_at": last.time + step,
            "first_close": style::price_value(Some(first.close)),
            "last_close": style::price_value(Some(last.close)),
            "change_over_window": style::percent_value(change(first.close)),
            "change_last_24_bars": style::percent_value(day_ago.and_then(change)),
            "high": style::price_value(Some(high)),
            "low": style::price_value(Some(low)),
            "mean_range": style::price_value(Some(mean_range.round_dp(8).normalize())),
            "regime": types::classify_regime(&bars),
            "funding": funding.map(|f| json!({
                "rate_per_period": format!("{}%", text::fixed(f.rate * Decimal::ONE_HUNDRED, 4)),
                "period_hours": f.period_hours,
                "at": f.time,
            })),
            "open_interest": open_interest.map(|o| json!({
                "base": style::num_value(o.oi_base),
                "usd": style::money_value(o.oi_usd),
                "at": o.time,
            })),
        }))
    }
}
