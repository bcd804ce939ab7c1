//! Tools the trading agent may call: the [`Tool`] trait, the [`Registry`] of built-ins and the
//! whitelist hydration [`build_tools`]; the [`ToolContext`] with the data-source traits every
//! tick reads through; the [`LastDecisionSnapshot`] the next tick shows.
//!
//! What this crate owns:
//! - the data-source traits ([`MarketData`], [`NewsSource`], [`EventCalendar`],
//!   [`PortfolioView`], [`DerivativesData`], [`MemorySections`]) and their value types
//!   ([`NewsItem`], [`types::MarketEvent`], [`OpenOrder`], [`FundingRate`], [`OpenInterestPoint`]);
//! - the five built-ins of [`skill_schema::BUILTIN_TOOLS`]: `propose_order` (validates and
//!   records a proposal), `fetch_news_sentiment`, `get_position_risk`, `get_funding_rate`,
//!   `get_open_interest`.
//!
//! - [`Preloaded`], one in-memory value implementing every data-source trait (the simulator, a
//!   live runner that fetched a tick's data up front, tests).
//!
//! What it must never do: reach a database, an exchange or the network itself (implementations
//! of the traits live with the callers), read the wall clock (the tick time is
//! [`ToolContext::now`]), return anything dated after `now`, or execute an order:
//! `propose_order` only records, the execution engine decides. In [`RunMode::ReadOnly`] every
//! tool that can act refuses.
//!
//! The traits are synchronous by design: sim and live pre-load a tick's data (see
//! [`context`]), and the built-ins never wait ([`Tool::call`]). A tool that waits on something
//! outside the tick implements [`Tool::call_async`]; the model loop calls every tool through
//! [`Registry::call_async`].
//!
//! ```
//! use std::sync::Arc;
//! use chrono::{TimeZone, Utc};
//! use rust_decimal::Decimal;
//! use skill_schema::ToolSpec;
//! use tools::{Preloaded, RunMode, ToolContext, ToolError, build_tools, proposal_from_result};
//!
//! // One in-memory source serves every trait here; a service passes its own implementations.
//! let data = Arc::new(Preloaded::new());
//! let now = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
//! let ctx = ToolContext::new(now, RunMode::Trade, vec!["BTC".into()], data.clone(), data);
//!
//! // The default whitelist is `propose_order` alone.
//! let tools = build_tools(&ToolSpec::default(), &ctx)?;
//! assert_eq!(tools.names(), ["propose_order"]);
//! let args = serde_json::json!({
//!     "action": "open_long", "symbol": "BTC", "size_usd": 500, "reason": "breakout",
//! });
//! let result = tools.call("propose_order", args.clone())?;
//! let proposal = proposal_from_result(&result).expect("recorded");
//! assert_eq!(proposal.size_usd, Some(Decimal::from(500)));
//!
//! // The same tools in a read-only context refuse to act.
//! let read_only = ToolContext { mode: RunMode::ReadOnly, ..ctx };
//! let refused = build_tools(&ToolSpec::default(), &read_only)?.call("propose_order", args);
//! assert!(matches!(refused, Err(ToolError::ReadOnly { .. })));
//! # Ok::<(), ToolError>(())
//! ```

pub mod context;
mod derivatives;
mod error;
mod last_decision;
mod news;
mod preloaded;
mod propose;
mod recall;
mod registry;
mod risk;
mod tokens;

pub use context::{
    BarsWindow, DataError, DerivativesData, EventCalendar, FundingRate, Lens, MarketData,
    MemorySections, NewsItem, NewsSource, NoData, OpenInterestPoint, OpenOrder, PortfolioView,
    RunMode, SeriesOrigin, ToolContext, map_json_strings, rank_news,
};
/// `mockall` mocks of the data-source traits (feature `mock`).
#[cfg(feature = "mock")]
pub use context::{
    MockDerivativesData, MockEventCalendar, MockMarketData, MockMemorySections, MockNewsSource,
    MockPortfolioView,
};
pub use derivatives::{GetFundingRate, GetOpenInterest, PerpDataArgs};
pub use error::ToolError;
pub use last_decision::{
    LastDecisionSnapshot, VerdictStatus, summarize_proposal, to_last_decision_snapshot,
};
pub use news::{
    FetchNewsArgs, FetchNewsSentiment, MAX_HEADLINE_CHARS, mean_sentiment, news_window,
};
pub use preloaded::Preloaded;

pub use propose::{
    MAX_REASON_CHARS, ProposeOrder, ProposeOrderArgs, one_line, proposal_from_result,
    push_one_line, validate_proposal,
};
pub use recall::{
    Condition, MAX_GROUPS, MAX_TOKEN_CEILING, MemoryFuture, RECALL_ROWS, RECALL_TOOLS, RecallRows,
    RecallTool, RecentTradesArgs, RsiFrame, SHORT_ID_CHARS, SearchArgs, SignalAccuracyArgs,
    SimilarSetupsArgs, SymbolHistoryArgs, TOKEN_CEILING, TradeMemory, Volatility, WhatWorkedArgs,
};
pub use registry::{
    ArgsParser, ArgsSpec, Registry, Tool, ToolFuture, ToolOutput, ToolOutputFuture, args_schema,
    build_tools, builtin_names, mcp_tool_prefix,
};
pub use risk::{
    GetPositionRisk, PositionRiskArgs, check_portfolio, distance_to_liquidation_pct, pct,
};
pub use tokens::count_tokens;

/// The name of the proposing tool, whose last successful call is the tick's proposal.
pub const PROPOSE_ORDER: &str = "propose_order";

use rust_decimal::{Decimal, RoundingStrategy};

/// The mean of `values`, `None` when empty or when the sum overflows `Decimal` (data from a
/// source is never trusted to be sane enough to panic on).
#[must_use]
pub fn checked_mean(values: impl IntoIterator<Item = Decimal>) -> Option<Decimal> {
    let mut values = values.into_iter();
    let first = values.next()?;
    // Non-negative values of one scale (a price table's closes) add up exactly as integers:
    // while the mantissas' sum fits `Decimal`'s 96 bits, so does every partial sum, and
    // `checked_add` would have added them exactly too: the same sum, bit for bit. Anything
    // else is added as `Decimal`s from where the integers stopped.
    const MAX_MANTISSA: i128 = (1 << 96) - 1;
    let scale = first.scale();
    let mut wide: i128 = 0;
    let mut n: u32 = 0;
    let mut rest = None;
    for v in std::iter::once(first).chain(values.by_ref()) {
        if v.scale() != scale || v.is_sign_negative() || wide + v.mantissa() > MAX_MANTISSA {
            rest = Some(v);
            break;
        }
        wide += v.mantissa();
        n = n.checked_add(1)?;
    }
    let mut sum = if n == 0 {
        Decimal::ZERO
    } else {
        Decimal::try_from_i128_with_scale(wide, scale).ok()?
    };
    for v in rest.into_iter().chain(values) {
        sum = sum.checked_add(v)?;
        n = n.checked_add(1)?;
    }
    sum.checked_div(Decimal::from(n))
}

/// Rounds to 2 decimals, half away from zero (money in tool results).
#[must_use]
pub fn round2(d: Decimal) -> Decimal {
    d.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
}
