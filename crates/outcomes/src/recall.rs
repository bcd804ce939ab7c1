//! What a reader of the outcome memory asks and gets back: the queries of the recall tools,
//! the `<trading_memory>` block and the MCP server, and point-in-time masking.
//!
//! Point in time: a reader at `as_of` sees the outcomes decided before `as_of`
//! (`tick_at < as_of`), each as it stood at `as_of` ([`TradeOutcome::as_of`]): a mark's price
//! and PnL only once the mark has passed, the 24h columns (hits, excursions, grade, narrative)
//! only when `scored_at ≤ as_of`. A backtest at T therefore never sees an outcome scored after
//! T, and a live reader sees what the scorer has written.
//!
//! **The window convention** (one for every reader: the `<trading_memory>` block, the recall
//! tools, the MCP server and `memory-stats`, whose store read `symbol_outcomes` is half-open
//! too): "the last N days" at T are the outcomes whose tick is in
//! **[T − N d, T)**. An outcome is a decision, and the decision of the tick at T is made after
//! its prompt was shown: at T it does not exist yet, so it is out of every window ending at T,
//! and a prompt recomputed later from the store as of T is the prompt the tick showed (the
//! DESIGN's point in time: only what was known at T). A window's start is inclusive
//! ([`RecallQuery::since`]), its end exclusive ([`RecallQuery::as_of`]); [`window_start`] is
//! the one place the start is computed.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use types::RegimeTag;
use uuid::Uuid;

use crate::score::{MARKS_HOURS, OutcomeScore, TradeOutcome};
use crate::snapshot::Indicators;

/// The most rows one recall query returns.
pub const MAX_RECALL_ROWS: u32 = 1000;
/// The most hits one search returns.
pub const MAX_SEARCH_HITS: u32 = 50;
/// The longest search text accepted, in characters.
pub const MAX_SEARCH_CHARS: usize = 200;

/// The start of the window of the last `days` days at `as_of` (inclusive: the window is
/// `[as_of − days, as_of)`, see the module's window convention).
#[must_use]
pub fn window_start(as_of: DateTime<Utc>, days: i64) -> DateTime<Utc> {
    as_of - Duration::days(days)
}

/// A window of the outcome memory: outcomes decided before `as_of` and at or after `since`,
/// newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecallQuery {
    /// The reader's time (the tick time; the wall clock for an MCP client).
    pub as_of: DateTime<Utc>,
    /// Only this symbol.
    pub symbol: Option<String>,
    /// Only outcomes decided at or after this time (inclusive; [`window_start`]).
    pub since: Option<DateTime<Utc>>,
    /// Only outcomes whose market snapshot had this regime.
    pub market_condition: Option<RegimeTag>,
    /// At most this many rows (≤ [`MAX_RECALL_ROWS`]).
    pub limit: u32,
}

impl RecallQuery {
    /// Every outcome decided before `as_of`, newest first, at most `limit`.
    #[must_use]
    pub const fn new(as_of: DateTime<Utc>, limit: u32) -> Self {
        Self {
            as_of,
            symbol: None,
            since: None,
            market_condition: None,
            limit,
        }
    }
}

/// One outcome as a reader at `as_of` sees it, with the market snapshot taken at its decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecalledOutcome {
    /// The outcome, masked to what was known at the query's `as_of` ([`TradeOutcome::as_of`]).
    pub outcome: TradeOutcome,
    /// The indicators at the decision.
    pub indicators: Indicators,
}

/// A full-text search of the outcome memory: the narratives of scored outcomes and the
/// annotations, ranked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchQuery {
    /// The reader's time: outcomes scored and annotations written after it are not searched.
    pub as_of: DateTime<Utc>,
    /// Free text (1..=[`MAX_SEARCH_CHARS`] characters): every word must match, a quoted phrase
    /// as a phrase; ranked in Rust the same on every store ([`crate::search`]).
    pub text: String,
    /// At most this many hits (≤ [`MAX_SEARCH_HITS`]).
    pub limit: u32,
}

/// What a search hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HitKind {
    /// A scored outcome's narrative.
    Outcome,
    /// An annotation's text and tags.
    Annotation,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryHit {
    /// Outcome or annotation.
    pub kind: HitKind,
    /// The outcome's or the annotation's id.
    pub id: Uuid,
    /// The deployment it belongs to.
    pub deployment_id: Uuid,
    /// The outcome it is (or is about), when it is about one.
    pub outcome_id: Option<Uuid>,
    /// The ledger row an annotation is about.
    pub trade_id: Option<Uuid>,
    /// The outcome's symbol (annotations on an outcome: that outcome's).
    pub symbol: Option<String>,
    /// The outcome's tick time, or when the annotation was written.
    pub at: DateTime<Utc>,
    /// The text matched: the narrative, or the annotation with its tags.
    pub text: String,
    /// Relevance, higher is better ([`crate::search::rank`]: the same on every store);
    /// comparable within one result list only.
    pub rank: f64,
}

impl TradeOutcome {
    /// This outcome as a reader at `as_of` saw it: the price and PnL of each mark only once the
    /// mark (`tick_at + 1h`, `+4h`, `+24h`) is at or before `as_of`, and the 24h scoring (hits,
    /// first hit, excursions, grade, narrative, `scored_at`) only when `scored_at ≤ as_of`.
    #[must_use]
    pub fn as_of(mut self, as_of: DateTime<Utc>) -> Self {
        let passed = |hours: i64| self.tick_at + Duration::hours(hours) <= as_of;
        let s = &mut self.score;
        let (h1, h4, h24) = (
            passed(MARKS_HOURS[0]),
            passed(MARKS_HOURS[1]),
            passed(MARKS_HOURS[2]),
        );
        if !h1 {
            s.price_1h = None;
            s.pnl_percent_1h = None;
        }
        if !h4 {
            s.price_4h = None;
            s.pnl_percent_4h = None;
        }
        if !h24 {
            s.price_24h = None;
            s.pnl_percent_24h = None;
        }
        if s.scored_at.is_none_or(|at| at > as_of) {
            let marks = OutcomeScore {
                price_1h: s.price_1h,
                price_4h: s.price_4h,
                price_24h: None,
                pnl_percent_1h: s.pnl_percent_1h,
                pnl_percent_4h: s.pnl_percent_4h,
                pnl_percent_24h: None,
                ..OutcomeScore::default()
            };
            *s = marks;
        }
        self
    }
}
