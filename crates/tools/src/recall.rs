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

use outcomes::stats::{
    OutcomeStats, RsiTimeframe, SetupFilter, VolatilityBand, setup_label, setups, stats_dp,
    what_worked,
};
use outcomes::{
    MAX_RECALL_ROWS, MAX_SEARCH_CHARS, MemoryHit, RecallQuery, RecalledOutcome, SearchHits,
    SearchQuery,
};
use rust_decimal::Decimal;
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

    /// Full-text search over scored narratives and annotations, best first, ranked by
    /// [`outcomes::search::rank`] (so every implementation answers the same), with the count of
    /// every match.
    ///
    /// # Errors
    /// [`DataError`] when the memory cannot be read or refuses the query text.
    fn search<'a>(&'a self, query: &'a SearchQuery) -> MemoryFuture<'a, SearchHits>;
}

impl TradeMemory for NoData {
    fn recall<'a>(&'a self, _: &'a RecallQuery) -> MemoryFuture<'a, Vec<RecalledOutcome>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    fn search<'a>(&'a self, _: &'a SearchQuery) -> MemoryFuture<'a, SearchHits> {
        Box::pin(std::future::ready(Ok(SearchHits::default())))
    }
}

pub use skill_schema::RECALL_TOOLS;

pub(crate) const SYMBOL_HISTORY: &str = "recall_symbol_history";
pub(crate) const RECENT_TRADES: &str = "recall_recent_trades";
pub(crate) const SIGNAL_ACCURACY: &str = "recall_signal_accuracy";
pub(crate) const SIMILAR_SETUPS: &str = "recall_similar_setups";
pub(crate) const WHAT_WORKED: &str = "recall_what_worked";
pub(crate) const SEARCH: &str = "search_trade_memory";

/// The token ceiling of a recall result at its default rows: the compact JSON text the model
/// reads is at most this many `o200k_base` tokens ([`crate::count_tokens`]).
pub const TOKEN_CEILING: usize = 600;
/// The token ceiling of a recall result whose arguments ask for more rows than the default.
pub const MAX_TOKEN_CEILING: usize = 1500;

/// The rows one recall tool lists: how many by default, how many an argument may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecallRows {
    /// The tool.
    pub tool: &'static str,
    /// Rows listed without an argument (0: the tool lists no outcomes).
    pub default_rows: u32,
    /// The most rows an argument may ask for.
    pub max_rows: u32,
}

impl RecallRows {
    /// The token ceiling of a result listing `asked` rows: [`TOKEN_CEILING`] up to the default
    /// rows, [`MAX_TOKEN_CEILING`] above.
    #[must_use]
    pub const fn ceiling(&self, asked: u32) -> usize {
        if asked <= self.default_rows {
            TOKEN_CEILING
        } else {
            MAX_TOKEN_CEILING
        }
    }
}

/// Every recall tool's rows, in [`RECALL_TOOLS`]' order (the README's table).
pub const RECALL_ROWS: [RecallRows; 6] = [
    RecallRows {
        tool: SYMBOL_HISTORY,
        default_rows: 10,
        max_rows: 50,
    },
    RecallRows {
        tool: RECENT_TRADES,
        default_rows: 8,
        max_rows: 30,
    },
    RecallRows {
        tool: SIGNAL_ACCURACY,
        default_rows: 0,
        max_rows: 0,
    },
    RecallRows {
        tool: SIMILAR_SETUPS,
        default_rows: 8,
        max_rows: 30,
    },
    RecallRows {
        tool: WHAT_WORKED,
        default_rows: 0,
        max_rows: 0,
    },
    RecallRows {
        tool: SEARCH,
        default_rows: 5,
        max_rows: 20,
    },
];

/// The most groups (symbols, setups, setups to avoid) a result lists; the rest are counted.
pub const MAX_GROUPS: usize = 5;

/// Characters of an outcome id in a result: the first 8 hex digits of its UUID.
pub const SHORT_ID_CHARS: usize = 8;

/// The short id of a row: the first [`SHORT_ID_CHARS`] hex digits of its UUID.
fn short_id(id: uuid::Uuid) -> String {
    let mut s = id.simple().to_string();
    s.truncate(SHORT_ID_CHARS);
    s
}

/// A PnL % at 2 decimals, signed: `+1.54%`, `-0.03%`, `0.00%`; `-` for none.
fn signed_pct(p: Option<Decimal>) -> String {
    let mut out = String::with_capacity(8);
    match p {
        Some(p) => {
            types::text::push_signed_fixed(&mut out, p, PCT_DP);
            out.push('%');
        }
        None => out.push('-'),
    }
    out
}

/// Decimals of every PnL % in a result; means are rounded to them once ([`stats_dp`]).
const PCT_DP: u32 = 2;

fn time(t: chrono::DateTime<chrono::Utc>) -> String {
    let mut out = String::with_capacity(16);
    types::text::push_date_minute(&mut out, t);
    out
}

/// The header of [`row`]'s lines.
const COLUMNS: &str = "id | at | symbol | dir | conf | verdict | pnl_4h | pnl_24h | grade | first_hit | regime | setup";

/// One outcome as a tool lists it: one line, the fields of [`COLUMNS`] joined by ` | `, `-`
/// for a missing value.
fn row(r: &RecalledOutcome) -> String {
    let o = &r.outcome;
    let s = &o.score;
    let mut out = String::with_capacity(128);
    let sep = |out: &mut String| out.push_str(" | ");
    out.push_str(&short_id(o.id));
    sep(&mut out);
    types::text::push_date_minute(&mut out, o.tick_at);
    sep(&mut out);
    out.push_str(&o.symbol);
    sep(&mut out);
    out.push_str(side(o.direction));
    sep(&mut out);
    match o.confidence {
        Some(c) => types::text::push_uint(&mut out, u64::from(c)),
        None => out.push('-'),
    }
    sep(&mut out);
    out.push_str(o.verdict.as_str());
    sep(&mut out);
    out.push_str(&signed_pct(s.pnl_percent_4h));
    sep(&mut out);
    out.push_str(&signed_pct(s.pnl_percent_24h));
    sep(&mut out);
    out.push_str(s.outcome_grade.map_or("pending", |g| g.as_str()));
    sep(&mut out);
    out.push_str(s.first_hit.map_or("-", |h| h.as_str()));
    sep(&mut out);
    out.push_str(r.indicators.market_condition.as_str());
    sep(&mut out);
    out.push_str(&setup_label(&r.indicators));
    out
}

const fn side(s: Side) -> &'static str {
    match s {
        Side::Long => "long",
        Side::Short => "short",
    }
}

fn stats_json(s: &OutcomeStats) -> Value {
    let mut grades = String::new();
    for (g, n) in &s.grades {
        if !grades.is_empty() {
            grades.push(' ');
        }
        grades.push_str(g.as_str());
        grades.push(':');
        types::text::push_uint(&mut grades, u64::from(*n));
    }
    json!({
        "outcomes": s.outcomes,
        "graded": s.graded,
        "wins": s.wins,
        "win_rate": s.win_rate_pct.map(types::text::pct),
        "avg_pnl_24h": s.avg_pnl_24h_pct.map(|p| signed_pct(Some(p))),
        "avg_pnl_4h": s.avg_pnl_4h_pct.map(|p| signed_pct(Some(p))),
        "grades": grades,
    })
}

/// The statistics of `rows`, means at the results' decimals (rounded once).
fn stats_of<'a>(rows: impl IntoIterator<Item = &'a RecalledOutcome>) -> OutcomeStats {
    stats_dp(rows, PCT_DP)
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
        .map(|(p, r)| json!({"id": short_id(r.outcome.id), "pnl_24h": signed_pct(Some(p))}))
}

/// The most groups of `groups` [`MAX_GROUPS`] allows, and how many were left out.
fn first_groups<T>(groups: &[T], f: impl Fn(&T) -> Value) -> (Vec<Value>, usize) {
    let shown: Vec<Value> = groups.iter().take(MAX_GROUPS).map(f).collect();
    let left_out = groups.len() - shown.len();
    (shown, left_out)
}

fn setup_json(x: &outcomes::stats::SetupRecord) -> Value {
    json!({"setup": x.setup, "stats": stats_json(&x.stats)})
}

/// `result` with as many of `rows` as fit in `ceiling` tokens: `make(rows listed, rows left
/// out)` is called with fewer and fewer of the first rows until its compact JSON text is within
/// the ceiling (rows are cut from the end: the newest or best stay). `unlisted` rows were left
/// out before (beyond what was read or asked for) and count as left out too. A result without
/// a row over the ceiling is returned as it is: every tool's fixed part is bounded well below
/// it (tested per tool).
fn fit(
    ceiling: usize,
    rows: &[Value],
    unlisted: usize,
    make: impl Fn(&[Value], usize) -> Value,
) -> Value {
    let mut n = rows.len();
    loop {
        let v = make(&rows[..n], rows.len() - n + unlisted);
        if n == 0 || crate::count_tokens(&v.to_string()) <= ceiling {
            return v;
        }
        n -= 1;
    }
}

/// What every recall result means, said once in the tools' descriptions rather than in each
/// result.
macro_rules! definitions {
    () => {
        " Outcomes are your directional proposals (executed or rejected), each graded 24h after \
         the decision: A target hit first, B more than +1% after 24h, C within ±1%, D a loss \
         without the stop, F the rest; win = A or B; win rate = wins / graded; PnL in % of the \
         entry, direction-signed. Windows are [now − N days, now). Rows are one line each, \
         fields as `columns` names them (`-`: none), newest first, ids the first 8 hex digits \
         of the outcome's id; `left_out` counts rows not listed (the answer stays under its \
         token ceiling)."
    };
}

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
    /// How many of the window's outcomes to list, newest first (default 8; the statistics
    /// cover the whole window).
    #[serde(default)]
    #[schemars(range(min = 1, max = 30))]
    pub limit: Option<u32>,
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
    /// How many of the matches to list, newest first (default 8; the statistics cover every
    /// match).
    #[serde(default)]
    #[schemars(range(min = 1, max = 30))]
    pub limit: Option<u32>,
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
    /// Words to look for in the outcomes' narratives and the annotations: every word must
    /// match (whole words, any case, a plural `s` ignored), a "quoted phrase" as a phrase.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
    /// How many hits (default 5).
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

    /// The rows of this tool ([`RECALL_ROWS`]).
    fn rows(&self) -> &'static RecallRows {
        let name = self.name();
        RECALL_ROWS
            .iter()
            .find(|r| r.tool == name)
            .unwrap_or(&RECALL_ROWS[0])
    }

    async fn run(&self, args: Value) -> Result<Value, ToolError> {
        let name = self.name();
        let as_of = self.ctx.now;
        let now = time(as_of);
        let rows_of = self.rows();
        match self.kind {
            Kind::SymbolHistory => {
                let a: SymbolHistoryArgs = self.args.parser.parse(name, args)?;
                let limit = a.limit.unwrap_or(rows_of.default_rows);
                let rs = self
                    .recall(RecallQuery {
                        symbol: Some(a.symbol.clone()),
                        limit,
                        ..self.query()
                    })
                    .await?;
                let lines: Vec<Value> = rs.iter().map(|r| Value::String(row(r))).collect();
                let (stats, best, worst) = (
                    stats_json(&stats_of(&rs)),
                    extreme(&rs, true),
                    extreme(&rs, false),
                );
                Ok(fit(
                    rows_of.ceiling(limit),
                    &lines,
                    0,
                    |listed, left_out| {
                        json!({
                            "symbol": a.symbol,
                            "as_of": now,
                            "stats": stats,
                            "best": best,
                            "worst": worst,
                            "columns": COLUMNS,
                            "outcomes": listed,
                            "left_out": left_out,
                        })
                    },
                ))
            }
            Kind::RecentTrades => {
                let a: RecentTradesArgs = self.args.parser.parse(name, args)?;
                let days = a.days.unwrap_or(7);
                let limit = a.limit.unwrap_or(rows_of.default_rows);
                let rs = self
                    .recall(RecallQuery {
                        since: Some(outcomes::window_start(as_of, i64::from(days))),
                        ..self.query()
                    })
                    .await?;
                let mut by_symbol: BTreeMap<&str, Vec<&RecalledOutcome>> = BTreeMap::new();
                for r in &rs {
                    by_symbol.entry(&r.outcome.symbol).or_default().push(r);
                }
                let mut per_symbol: Vec<(String, OutcomeStats)> = by_symbol
                    .into_iter()
                    .map(|(s, v)| (s.to_owned(), stats_of(v)))
                    .collect();
                // Top performers first: average 24h PnL, then win rate, then the symbol.
                per_symbol.sort_by(|a, b| {
                    b.1.avg_pnl_24h_pct
                        .cmp(&a.1.avg_pnl_24h_pct)
                        .then(b.1.win_rate_pct.cmp(&a.1.win_rate_pct))
                        .then(a.0.cmp(&b.0))
                });
                let (symbols, symbols_left_out) = first_groups(
                    &per_symbol,
                    |(s, st)| json!({"symbol": s, "stats": stats_json(st)}),
                );
                let take = (limit as usize).min(rs.len());
                let lines: Vec<Value> = rs[..take].iter().map(|r| Value::String(row(r))).collect();
                let stats = stats_json(&stats_of(&rs));
                Ok(fit(
                    rows_of.ceiling(limit),
                    &lines,
                    rs.len() - take,
                    |listed, left_out| {
                        json!({
                            "days": days,
                            "as_of": now,
                            "stats": stats,
                            "by_symbol": symbols,
                            "symbols_left_out": symbols_left_out,
                            "columns": COLUMNS,
                            "outcomes": listed,
                            "left_out": left_out,
                        })
                    },
                ))
            }
            Kind::SignalAccuracy => {
                let a: SignalAccuracyArgs = self.args.parser.parse(name, args)?;
                if a.confidence_min > a.confidence_max {
                    return Err(ToolError::invalid(
                        name,
                        vec![format!(
                            "confidence_min ({}) is above confidence_max ({}): give the lower \
                             bound first",
                            a.confidence_min, a.confidence_max
                        )],
                    ));
                }
                let rs = self.recall(self.query()).await?;
                let band = stats_of(rs.iter().filter(|r| {
                    r.outcome
                        .confidence
                        .is_some_and(|c| (a.confidence_min..=a.confidence_max).contains(&c))
                }));
                let value = json!({
                    "confidence_min": a.confidence_min,
                    "confidence_max": a.confidence_max,
                    "as_of": now,
                    "band": stats_json(&band),
                    "sample_size": band.graded,
                    "all_signals": stats_json(&stats_of(&rs)),
                });
                Ok(fit(rows_of.ceiling(0), &[], 0, |_, _| value.clone()))
            }
            Kind::SimilarSetups => {
                let a: SimilarSetupsArgs = self.args.parser.parse(name, args)?;
                if let (Some(lo), Some(hi)) = (a.rsi_min, a.rsi_max)
                    && lo > hi
                {
                    return Err(ToolError::invalid(
                        name,
                        vec![format!(
                            "rsi_min ({}) is above rsi_max ({}): give the lower bound first",
                            rsi_text(lo),
                            rsi_text(hi)
                        )],
                    ));
                }
                let limit = a.limit.unwrap_or(rows_of.default_rows);
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
                let (groups, setups_left_out) = first_groups(&setups(&matched), setup_json);
                let take = (limit as usize).min(matched.len());
                let lines: Vec<Value> = matched[..take]
                    .iter()
                    .map(|r| Value::String(row(r)))
                    .collect();
                let stats = stats_json(&stats_of(&matched));
                Ok(fit(
                    rows_of.ceiling(limit),
                    &lines,
                    matched.len() - take,
                    |listed, left_out| {
                        json!({
                            "as_of": now,
                            "matches": matched.len(),
                            "stats": stats,
                            "setups": groups,
                            "setups_left_out": setups_left_out,
                            "columns": COLUMNS,
                            "outcomes": listed,
                            "left_out": left_out,
                        })
                    },
                ))
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
                let (avoid, avoid_left_out) = first_groups(&w.avoid, setup_json);
                let value = json!({
                    "market_condition": condition.as_str(),
                    "as_of": now,
                    "overall": stats_json(&stats_of(&rs)),
                    "long": stats_json(&stats_of(rs.iter().filter(|r| r.outcome.direction == Side::Long))),
                    "short": stats_json(&stats_of(rs.iter().filter(|r| r.outcome.direction == Side::Short))),
                    "best_direction": w.best_direction.map(side),
                    "confidence_threshold": w.confidence_threshold,
                    "best_setup": w.best_setup.as_ref().map(setup_json),
                    "avoid": avoid,
                    "avoid_left_out": avoid_left_out,
                });
                Ok(fit(rows_of.ceiling(0), &[], 0, |_, _| value.clone()))
            }
            Kind::Search => {
                let a: SearchArgs = self.args.parser.parse(name, args)?;
                if a.query.trim().is_empty() || a.query.chars().count() > MAX_SEARCH_CHARS {
                    return Err(ToolError::invalid(
                        name,
                        vec![format!(
                            "query: 1 to {MAX_SEARCH_CHARS} characters, not blank"
                        )],
                    ));
                }
                let limit = a.limit.unwrap_or(rows_of.default_rows);
                let q = SearchQuery {
                    as_of,
                    text: a.query.clone(),
                    limit,
                };
                let found = self
                    .ctx
                    .trade_memory
                    .search(&q)
                    .await
                    .map_err(|e| ToolError::data(name, e))?;
                let hits: Vec<Value> = found.hits.iter().map(hit).collect();
                let unlisted = found.matched.saturating_sub(found.hits.len());
                Ok(fit(
                    rows_of.ceiling(limit),
                    &hits,
                    unlisted,
                    |listed, left_out| {
                        json!({
                            "query": a.query,
                            "as_of": now,
                            "matched": found.matched,
                            "hits": listed,
                            "left_out": left_out,
                        })
                    },
                ))
            }
        }
    }
}

/// An RSI bound as the model wrote it, through `types::text` (no float formatting).
fn rsi_text(x: f64) -> String {
    Decimal::try_from(x).map_or_else(|_| "?".to_owned(), types::text::num)
}

/// One search hit as a tool lists it.
fn hit(h: &MemoryHit) -> Value {
    json!({
        "kind": h.kind,
        "id": short_id(h.id),
        "outcome": match (h.kind, h.outcome_id) {
            (outcomes::HitKind::Annotation, Some(o)) => Some(short_id(o)),
            _ => None,
        },
        "symbol": h.symbol,
        "at": time(h.at),
        "text": h.text,
    })
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
            Kind::SymbolHistory => concat!(
                "Your latest signals on one symbol (as of now): win rate, average PnL, best and \
                 worst, and the outcomes (default 10, up to 50 with `limit`). At most 600 tokens \
                 (1,500 with a larger `limit`).",
                definitions!()
            ),
            Kind::RecentTrades => concat!(
                "Your signals of the last N days (default 7) across symbols: overall stats, \
                 stats of the top 5 symbols (best average PnL first) and the newest outcomes \
                 (default 8, up to 30 with `limit`). At most 600 tokens (1,500 with a larger \
                 `limit`).",
                definitions!()
            ),
            Kind::SignalAccuracy => concat!(
                "How accurate your signals in a confidence band have been: win rate, average \
                 PnL and sample size, beside the same for all signals. At most 600 tokens.",
                definitions!()
            ),
            Kind::SimilarSetups => concat!(
                "Past signals whose market snapshot matched a setup: an RSI range (15m, 1h or \
                 4h; rsi_min ≤ rsi_max), the trend (market condition) and a volatility band; \
                 their stats, the top 5 setups and the newest matches (default 8, up to 30 \
                 with `limit`). At most 600 tokens (1,500 with a larger `limit`).",
                definitions!()
            ),
            Kind::WhatWorked => concat!(
                "What worked in one market condition: stats by direction, the best direction, \
                 the confidence threshold that did best, the best setup and up to 5 setups to \
                 avoid. At most 600 tokens.",
                definitions!()
            ),
            Kind::Search => concat!(
                "Full-text search of your graded signals' narratives and the annotations on \
                 them: every word must match (whole words, any case, a plural `s` ignored), a \
                 \"quoted phrase\" as a phrase; best first (more occurrences in a shorter text), \
                 then newest. Default 5 hits, up to 20 with `limit`; `matched` counts every \
                 match. At most 600 tokens (1,500 with a larger `limit`).",
                definitions!()
            ),
        }
    }

    fn parameters(&self) -> Arc<Value> {
        Arc::clone(&self.args.schema)
    }

    fn call_async(&self, args: Value) -> ToolFuture<'_> {
        Box::pin(self.run(args))
    }
}
