//! Tools the trading agent may call: the [`Tool`] trait, the [`Registry`] of built-ins and the
//! whitelist hydration [`build_tools`]; the [`ToolContext`] with the data-source traits every
//! tick reads through; the [`LastDecisionSnapshot`] the next tick shows.
//!
//! What this crate owns:
//! - the data-source traits ([`MarketData`], [`NewsSource`], [`EventCalendar`],
//!   [`PortfolioView`], [`DerivativesData`], [`MemorySections`]) and their value types
//!   ([`NewsItem`], [`UpcomingEvent`], [`OpenOrder`], [`FundingRate`], [`OpenInterestPoint`]);
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
//! [`context`]). Tool calls are synchronous too.
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
mod registry;
mod risk;

pub use context::{
    BarsWindow, DataError, DerivativesData, EventCalendar, FundingRate, MarketData, MemorySections,
    NewsItem, NewsSource, NoData, OpenInterestPoint, OpenOrder, PortfolioView, RunMode,
    SeriesOrigin, ToolContext, UpcomingEvent, rank_news,
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
pub use registry::{Registry, Tool, args_schema, build_tools, builtin_names};
pub use risk::{
    GetPositionRisk, PositionRiskArgs, check_portfolio, distance_to_liquidation_pct, pct,
};

/// The name of the proposing tool, whose last successful call is the tick's proposal.
pub const PROPOSE_ORDER: &str = "propose_order";

use rust_decimal::{Decimal, RoundingStrategy};

/// The mean of `values`, `None` when empty or when the sum overflows `Decimal` (data from a
/// source is never trusted to be sane enough to panic on).
#[must_use]
pub fn checked_mean(values: impl IntoIterator<Item = Decimal>) -> Option<Decimal> {
    let mut sum = Decimal::ZERO;
    let mut n: u32 = 0;
    for v in values {
        sum = sum.checked_add(v)?;
        n = n.checked_add(1)?;
    }
    if n == 0 {
        return None;
    }
    sum.checked_div(Decimal::from(n))
}

/// Rounds to 2 decimals, half away from zero (money as shown).
#[must_use]
pub fn round2(d: Decimal) -> Decimal {
    d.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
}

/// `d` rounded half away from zero to exactly `dp` decimals, zero-padded (`fixed(5, 2)` is
/// `"5.00"`). Deterministic: no float, no locale.
#[must_use]
pub fn fixed(d: Decimal, dp: u32) -> String {
    let mut out = String::with_capacity(16);
    push_fixed(&mut out, d, dp);
    out
}

/// Appends [`fixed`]`(d, dp)` to `out` (no temporary string).
pub fn push_fixed(out: &mut String, d: Decimal, dp: u32) {
    if !push_fixed_u64(out, d, dp) {
        let mut r = d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero);
        r.rescale(dp);
        push_decimal(out, r);
    }
}

/// [`push_fixed`] in 64-bit integer arithmetic ([`types::text::rounded_mantissa`]); `false`,
/// with nothing written, when that does not suffice. As `Decimal` does, a result that rounded to
/// zero is positive and a zero that needed no rounding keeps its sign.
fn push_fixed_u64(out: &mut String, d: Decimal, dp: u32) -> bool {
    let Some(mantissa) = types::text::rounded_mantissa(d, dp) else {
        return false;
    };
    let negative = d.is_sign_negative() && (mantissa != 0 || d.is_zero());
    push_parts(out, mantissa, dp as usize, negative);
    true
}

/// Appends `d` exactly as its `Display` prints it (`d.to_string()`: the mantissa's digits with
/// the point `scale` digits from the right, `0.05`, `-0.00` for a negative zero) without the
/// formatting machinery or a temporary string.
pub fn push_decimal(out: &mut String, d: Decimal) {
    let mut buf = [0_u8; 32];
    match types::text::decimal_text(&mut buf, d) {
        Some(text) => out.push_str(text),
        None => {
            use std::fmt::Write as _;
            let _ = write!(out, "{d}");
        }
    }
}

/// Appends a decimal given by its parts as `Display` prints it (see
/// [`types::text::decimal_parts_text`]).
fn push_parts(out: &mut String, mantissa: u64, scale: usize, negative: bool) {
    let mut buf = [0_u8; 32];
    out.push_str(types::text::decimal_parts_text(
        &mut buf, mantissa, scale, negative,
    ));
}

/// Appends the decimal digits of `n` (as `n.to_string()`).
pub fn push_uint(out: &mut String, n: u64) {
    let mut buf = [0_u8; 20];
    let mut at = buf.len();
    let mut m = n;
    loop {
        at -= 1;
        buf[at] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&buf[at..]).unwrap_or_default());
}
