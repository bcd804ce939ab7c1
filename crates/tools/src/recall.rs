//! The recall tools of seed 003 over the outcome memory ([`TradeMemory`]): opt-in built-ins a
//! skill lists in `tools.builtIn` (never on otherwise, ADR-0017 "Alternative A").
//!
//! Every recall is as of the tick ([`ToolContext::now`](crate::ToolContext)): the memory returns
//! the outcomes decided before it, each as it stood then ([`outcomes::TradeOutcome::as_of`]), and
//! searches only narratives scored and annotations written by then. Statistics come from
//! [`outcomes::stats`], so the tools, the `<trading_memory>` block and the MCP server agree.
//!
//! `recall_similar_setups` uses seed 003's **filter form** (an RSI range on one timeframe, the
//! market condition, a volatility band), not nearest neighbours: the model states the setup it
//! sees in the terms of its prompt, and a filter's answer is explainable ("12 setups with RSI
//! 25–35 in a falling market").

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use chrono::Duration;
use outcomes::stats::{
    OutcomeStats, RsiTimeframe, SetupFilter, VolatilityBand, setup_label, setups, stats,
    what_worked,
};
use outcomes::{
    MAX_RECALL_ROWS, MAX_SEARCH_CHARS, MemoryHit, RecallQuery, RecalledOutcome, SearchQuery,
};
use rust_decimal::{Decimal, RoundingStrategy};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use types::{RegimeTag, Side};

use crate::context::{DataError, NoData, ToolContext};
use crate::error::ToolError;
use crate::registry::{ArgsSpec, Tool, ToolFuture};

/// A boxed future of a memory read.
pub type MemoryFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, DataError>> + Send + 'a>>;

/// The outcome memory of one deployment (or one user), read on demand: the one data source that
/// is not pre-loaded with the tick, because what a recall asks is only known when the model
/// asks. Implementations (the `tick` crate's over `db::OutcomeStore`) must honour `as_of` as
/// [`outcomes`]' `recall` module states it.
pub trait TradeMemory: Send + Sync {
    /// The outcomes matching `query`, newest first, each masked as of `query.as_of`.
    ///
    /// # Errors
    /// [`DataError`] when the memory cannot be read.
    fn recall<'a>(&'a self, query: &'a RecallQuery) -> MemoryFuture<'a, Vec<RecalledOutcome>>;

    /// Full-text search over scored narratives and annotations, best first.
    ///
    /// # Errors
    /// [`DataError`] when the memory cannot be read or refuses the query text.
    fn search<'a>(&'a self, query: &'a SearchQuery) -> MemoryFuture<'a, Vec<MemoryHit>>;
}

impl TradeMemory for NoData {
    fn recall<'a>(&'a self, _: &'a RecallQuery) -> MemoryFuture<'a, Vec<RecalledOutcome>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    fn search<'a>(&'a self, _: &'a SearchQuery) -> MemoryFuture<'a, Vec<MemoryHit>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
}

pub use skill_schema::RECALL_TOOLS;

pub(crate) const SYMBOL_HISTORY: &str = "recall_symbol_history";
pub(crate) const RECENT_TRADES: &str = "recall_recent_trades";
pub(crate) const SIGNAL_ACCURACY: &str = "recall_signal_accuracy";
pub(crate) const SIMILAR_SETUPS: &str = "recall_similar_setups";
pub(crate) const WHAT_WORKED: &str = "recall_what_worked";
pub(crate) const SEARCH: &str = "search_trade_memory";

/// The most outcomes a tool lists in its answer (statistics cover every row it read).
pub const MAX_LISTED: usize = 20;

fn dec1(x: f64) -> Option<Decimal> {
    Decimal::try_from(x)
        .ok()
        .map(|d| d.round_dp_with_strategy(1, RoundingStrategy::MidpointAwayFromZero))
}

/// One outcome as a tool lists it.
fn row(r: &RecalledOutcome) -> Value {
    let o = &r.outcome;
    let s = &o.score;
    json!({
        "id": o.id,
        "symbol": o.symbol,
        "tick_at": o.tick_at,
        "direction": match o.direction { Side::Long => "long", Side::Short => "short" },
        "confidence": o.confidence,
        "verdict": o.verdict.as_str(),
        "entry_price": o.entry_price,
        "predicted_stop": o.predicted_stop,
        "predicted_target": o.predicted_target,
        "pnl_1h_pct": s.pnl_percent_1h,
        "pnl_4h_pct": s.pnl_percent_4h,
        "pnl_24h_pct": s.pnl_percent_24h,
        "first_hit": s.first_hit.map(|h| h.as_str()),
        "grade": s.outcome_grade.map(|g| g.as_str()).unwrap_or("pending"),
        "market_condition": r.indicators.market_condition.as_str(),
        "rsi_1h": r.indicators.rsi_1h.and_then(dec1),
        "volatility_percentile": r.indicators.volatility_percentile.and_then(dec1),
        "setup": setup_label(&r.indicators),
    })
}

fn rows<'a>(rs: impl IntoIterator<Item = &'a RecalledOutcome>) -> Vec<Value> {
    rs.into_iter().take(MAX_LISTED).map(row).collect()
}

fn stats_json(s: &OutcomeStats) -> Value {
    json!({
        "outcomes": s.outcomes,
        "graded": s.graded,
        "wins": s.wins,
        "win_rate_pct": s.win_rate_pct,
        "avg_pnl_24h_pct": s.avg_pnl_24h_pct,
        "avg_pnl_4h_pct": s.avg_pnl_4h_pct,
        "grades": s.grades.iter().map(|(g, n)| (g.as_str().to_owned(), json!(n))).collect::<serde_json::Map<_, _>>(),
    })
}

/// The graded outcome with the highest (`best`) or lowest 24 h PnL; ties: the newer.
fn extreme(rs: &[RecalledOutcome], best: bool) -> Option<Value> {
    rs.iter()
        .filter_map(|r| r.outcome.score.pnl_percent_24h.map(|p| (p, r)))
        .filter(|(_, r)| r.outcome.score.outcome_grade.is_some())
        .reduce(|a, b| {
            let better = if best { b.0 > a.0 } else { b.0 < a.0 };
            if better { b } else { a }
        })
        .map(|(_, r)| row(r))
}

const DEFINITIONS: &str = "win = grade A (target hit first) or B (more than +1% after 24h); \
     win rate = wins / graded; pnl in % of the entry, direction-signed; outcomes are directional \
     proposals, executed or rejected; grades appear 24h after the decision";

/// Arguments of `recall_symbol_history`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymbolHistoryArgs {
    /// The symbol.
    #[schemars(length(min = 1, max = 32))]
    pub symbol: String,
    /// How many of its latest outcomes (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
}

/// Arguments of `recall_recent_trades`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentTradesArgs {
    /// How many days back from now (default 7).
    #[serde(default)]
    #[schemars(range(min = 1, max = 90))]
    pub days: Option<u32>,
}

/// Arguments of `recall_signal_accuracy`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalAccuracyArgs {
    /// Lowest confidence of the band, 0–100.
    #[schemars(range(min = 0, max = 100))]
    pub confidence_min: u8,
    /// Highest confidence of the band, 0–100, at least `confidence_min`.
    #[schemars(range(min = 0, max = 100))]
    pub confidence_max: u8,
}

/// A market condition (the regime tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// Trending up.
    TrendingUp,
    /// Trending down.
    TrendingDown,
    /// Ranging.
    Ranging,
    /// Volatile.
    Volatile,
}

impl From<Condition> for RegimeTag {
    fn from(c: Condition) -> Self {
        match c {
            Condition::TrendingUp => RegimeTag::TrendingUp,
            Condition::TrendingDown => RegimeTag::TrendingDown,
            Condition::Ranging => RegimeTag::Ranging,
            Condition::Volatile => RegimeTag::Volatile,
        }
    }
}

/// Which RSI an RSI range bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum RsiFrame {
    /// 15-minute RSI.
    #[serde(rename = "15m")]
    M15,
    /// 1-hour RSI.
    #[serde(rename = "1h")]
    H1,
    /// 4-hour RSI.
    #[serde(rename = "4h")]
    H4,
}

/// A volatility band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Volatility {
    /// The lowest third of the volatility percentile.
    Low,
    /// The middle third.
    Medium,
    /// The top third.
    High,
}

/// Arguments of `recall_similar_setups`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarSetupsArgs {
    /// Lowest RSI of the range (0–100).
    #[serde(default)]
    #[schemars(range(min = 0, max = 100))]
    pub rsi_min: Option<f64>,
    /// Highest RSI of the range (0–100).
    #[serde(default)]
    #[schemars(range(min = 0, max = 100))]
    pub rsi_max: Option<f64>,
    /// Which RSI the range is about (default 1h).
    #[serde(default)]
    pub rsi_timeframe: Option<RsiFrame>,
    /// The market condition (trend) at the decision.
    #[serde(default)]
    pub trend: Option<Condition>,
    /// The volatility band at the decision.
    #[serde(default)]
    pub volatility: Option<Volatility>,
    /// Only this symbol.
    #[serde(default)]
    #[schemars(length(min = 1, max = 32))]
    pub symbol: Option<String>,
}

/// Arguments of `recall_what_worked`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WhatWorkedArgs {
    /// The market condition to learn about.
    pub market_condition: Condition,
}

/// Arguments of `search_trade_memory`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words to look for in the outcomes' narratives and the annotations (any of them; the
    /// documents matching more, and rarer, words first).
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
    /// How many hits (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 20))]
    pub limit: Option<u32>,
}

/// Which recall tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    SymbolHistory,
    RecentTrades,
    SignalAccuracy,
    SimilarSetups,
    WhatWorked,
    Search,
}

/// One recall tool over a context's [`TradeMemory`].
pub struct RecallTool {
    kind: Kind,
    ctx: ToolContext,
    args: &'static ArgsSpec,
}

macro_rules! spec {
    ($t:ty) => {{
        static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
        ARGS.get_or_init(ArgsSpec::of::<$t>)
    }};
}

impl RecallTool {
    /// The recall tool `name` (one of [`RECALL_TOOLS`]) over `ctx`; `None` for another name.
    #[must_use]
    pub fn new(name: &str, ctx: ToolContext) -> Option<Self> {
        let kind = match name {
            SYMBOL_HISTORY => Kind::SymbolHistory,
            RECENT_TRADES => Kind::RecentTrades,
            SIGNAL_ACCURACY => Kind::SignalAccuracy,
            SIMILAR_SETUPS => Kind::SimilarSetups,
            WHAT_WORKED => Kind::WhatWorked,
            SEARCH => Kind::Search,
            _ => return None,
        };
        Some(Self::of(kind, ctx))
    }

    pub(crate) fn of(kind: Kind, ctx: ToolContext) -> Self {
        let args = match kind {
            Kind::SymbolHistory => spec!(SymbolHistoryArgs),
            Kind::RecentTrades => spec!(RecentTradesArgs),
            Kind::SignalAccuracy => spec!(SignalAccuracyArgs),
            Kind::SimilarSetups => spec!(SimilarSetupsArgs),
            Kind::WhatWorked => spec!(WhatWorkedArgs),
            Kind::Search => spec!(SearchArgs),
        };
        Self { kind, ctx, args }
    }

    async fn recall(&self, query: RecallQuery) -> Result<Vec<RecalledOutcome>, ToolError> {
        self.ctx
            .trade_memory
            .recall(&query)
            .await
            .map_err(|e| ToolError::data(self.name(), e))
    }

    fn query(&self) -> RecallQuery {
        RecallQuery::new(self.ctx.now, MAX_RECALL_ROWS)
    }

    async fn run(&self, args: Value) -> Result<Value, ToolError> {
        let name = self.name();
        let as_of = self.ctx.now;
        match self.kind {
            Kind::SymbolHistory => {
                let a: SymbolHistoryArgs = self.args.parser.parse(name, args)?;
                let limit = a.limit.unwrap_or(10);
                let rs = self
                    .recall(RecallQuery {
                        symbol: Some(a.symbol.clone()),
                        limit,
                        ..self.query()
                    })
                    .await?;
                Ok(json!({
                    "symbol": a.symbol,
                    "as_of": as_of,
                    "stats": stats_json(&stats(&rs)),
                    "best": extreme(&rs, true),
                    "worst": extreme(&rs, false),
                    "outcomes": rows(&rs),
                    "definitions": DEFINITIONS,
                }))
            }
            Kind::RecentTrades => {
                let a: RecentTradesArgs = self.args.parser.parse(name, args)?;
                let days = a.days.unwrap_or(7);
                let rs = self
                    .recall(RecallQuery {
                        since: Some(as_of - Duration::days(i64::from(days))),
                        ..self.query()
                    })
                    .await?;
                let mut by_symbol: BTreeMap<&str, Vec<&RecalledOutcome>> = BTreeMap::new();
                for r in &rs {
                    by_symbol.entry(&r.outcome.symbol).or_default().push(r);
                }
                let mut per_symbol: Vec<(String, OutcomeStats)> = by_symbol
                    .into_iter()
                    .map(|(s, v)| (s.to_owned(), stats(v)))
                    .collect();
                // Top performers first: average 24h PnL, then win rate, then the symbol.
                per_symbol.sort_by(|a, b| {
                    b.1.avg_pnl_24h_pct
                        .cmp(&a.1.avg_pnl_24h_pct)
                        .then(b.1.win_rate_pct.cmp(&a.1.win_rate_pct))
                        .then(a.0.cmp(&b.0))
                });
                Ok(json!({
                    "days": days,
                    "as_of": as_of,
                    "stats": stats_json(&stats(&rs)),
                    "by_symbol": per_symbol.iter().map(|(s, st)| json!({"symbol": s, "stats": stats_json(st)})).collect::<Vec<_>>(),
                    "outcomes": rows(&rs),
                    "definitions": DEFINITIONS,
                }))
            }
            Kind::SignalAccuracy => {
                let a: SignalAccuracyArgs = self.args.parser.parse(name, args)?;
                if a.confidence_min > a.confidence_max {
                    return Err(ToolError::InvalidArguments {
                        tool: name.to_owned(),
                        problems: vec![format!(
                            "confidence_min ({}) is above confidence_max ({})",
                            a.confidence_min, a.confidence_max
                        )],
                    });
                }
                let rs = self.recall(self.query()).await?;
                let band = stats(rs.iter().filter(|r| {
                    r.outcome
                        .confidence
                        .is_some_and(|c| (a.confidence_min..=a.confidence_max).contains(&c))
                }));
                Ok(json!({
                    "confidence_min": a.confidence_min,
                    "confidence_max": a.confidence_max,
                    "as_of": as_of,
                    "band": stats_json(&band),
                    "sample_size": band.graded,
                    "all_signals": stats_json(&stats(&rs)),
                    "definitions": DEFINITIONS,
                }))
            }
            Kind::SimilarSetups => {
                let a: SimilarSetupsArgs = self.args.parser.parse(name, args)?;
                let filter = SetupFilter {
                    rsi_timeframe: match a.rsi_timeframe {
                        Some(RsiFrame::M15) => RsiTimeframe::M15,
                        Some(RsiFrame::H1) | None => RsiTimeframe::H1,
                        Some(RsiFrame::H4) => RsiTimeframe::H4,
                    },
                    rsi_min: a.rsi_min,
                    rsi_max: a.rsi_max,
                    market_condition: a.trend.map(RegimeTag::from),
                    volatility: a.volatility.map(|v| match v {
                        Volatility::Low => VolatilityBand::Low,
                        Volatility::Medium => VolatilityBand::Medium,
                        Volatility::High => VolatilityBand::High,
                    }),
                };
                let rs = self
                    .recall(RecallQuery {
                        symbol: a.symbol.clone(),
                        market_condition: filter.market_condition,
                        ..self.query()
                    })
                    .await?;
                let matched: Vec<RecalledOutcome> = rs
                    .into_iter()
                    .filter(|r| filter.matches(&r.indicators))
                    .collect();
                let s = stats(&matched);
                Ok(json!({
                    "as_of": as_of,
                    "matches": matched.len(),
                    "stats": stats_json(&s),
                    "setups": setups(&matched).iter().map(|x| json!({"setup": x.setup, "stats": stats_json(&x.stats)})).collect::<Vec<_>>(),
                    "outcomes": rows(&matched),
                    "definitions": DEFINITIONS,
                }))
            }
            Kind::WhatWorked => {
                let a: WhatWorkedArgs = self.args.parser.parse(name, args)?;
                let condition = RegimeTag::from(a.market_condition);
                let rs = self
                    .recall(RecallQuery {
                        market_condition: Some(condition),
                        ..self.query()
                    })
                    .await?;
                let w = what_worked(&rs);
                let setup = |x: &outcomes::stats::SetupRecord| json!({"setup": x.setup, "stats": stats_json(&x.stats)});
                Ok(json!({
                    "market_condition": condition.as_str(),
                    "as_of": as_of,
                    "overall": stats_json(&w.overall),
                    "long": stats_json(&w.long),
                    "short": stats_json(&w.short),
                    "best_direction": w.best_direction.map(|d| match d { Side::Long => "long", Side::Short => "short" }),
                    "confidence_threshold": w.confidence_threshold,
                    "best_setup": w.best_setup.as_ref().map(setup),
                    "avoid": w.avoid.iter().map(setup).collect::<Vec<_>>(),
                    "definitions": DEFINITIONS,
                }))
            }
            Kind::Search => {
                let a: SearchArgs = self.args.parser.parse(name, args)?;
                if a.query.trim().is_empty() || a.query.chars().count() > MAX_SEARCH_CHARS {
                    return Err(ToolError::InvalidArguments {
                        tool: name.to_owned(),
                        problems: vec![format!(
                            "query: 1 to {MAX_SEARCH_CHARS} characters, not blank"
                        )],
                    });
                }
                let q = SearchQuery {
                    as_of,
                    text: a.query.clone(),
                    limit: a.limit.unwrap_or(10),
                };
                let hits = self
                    .ctx
                    .trade_memory
                    .search(&q)
                    .await
                    .map_err(|e| ToolError::data(name, e))?;
                Ok(json!({
                    "query": a.query,
                    "as_of": as_of,
                    "hits": hits.iter().map(|h| json!({
                        "kind": h.kind,
                        "id": h.id,
                        "outcome_id": h.outcome_id,
                        "trade_id": h.trade_id,
                        "symbol": h.symbol,
                        "at": h.at,
                        "text": h.text,
                    })).collect::<Vec<_>>(),
                }))
            }
        }
    }
}

impl Tool for RecallTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::SymbolHistory => SYMBOL_HISTORY,
            Kind::RecentTrades => RECENT_TRADES,
            Kind::SignalAccuracy => SIGNAL_ACCURACY,
            Kind::SimilarSetups => SIMILAR_SETUPS,
            Kind::WhatWorked => WHAT_WORKED,
            Kind::Search => SEARCH,
        }
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::SymbolHistory => {
                "Your latest graded signals on one symbol (as of now): each outcome with its \
                 1h/4h/24h PnL and grade, win rate, average PnL, best and worst."
            }
            Kind::RecentTrades => {
                "Your signals of the last N days across symbols: overall stats, stats per \
                 symbol (top performers first) and the latest outcomes."
            }
            Kind::SignalAccuracy => {
                "How accurate your signals in a confidence band have been: win rate, average \
                 PnL and sample size, beside the same for all signals."
            }
            Kind::SimilarSetups => {
                "Past signals whose market snapshot matched a setup: an RSI range (15m, 1h or \
                 4h), the trend (market condition) and a volatility band; their stats and \
                 setups."
            }
            Kind::WhatWorked => {
                "What worked in one market condition: stats by direction, the best direction, \
                 the confidence threshold that did best, the best setup and setups to avoid."
            }
            Kind::Search => {
                "Full-text search of your graded signals' narratives and the annotations on \
                 them, best matches first (any of the words; stemmed)."
            }
        }
    }

    fn parameters(&self) -> Arc<Value> {
        Arc::clone(&self.args.schema)
    }

    fn call_async(&self, args: Value) -> ToolFuture<'_> {
        Box::pin(self.run(args))
    }
}
