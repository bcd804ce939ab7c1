//! Outcome-scored trading memory (seed 003), the pure part: what the market looked like when a
//! directional proposal was made ([`MarketSnapshot`], [`compute_indicators`]), the proposal
//! itself as a `trade_outcomes` row ([`TradeOutcome`]), and the scorer that fills in what the
//! price did over the next 1, 4 and 24 hours ([`score_outcome`], graded A–F by [`grade`]).
//!
//! **Owns:** the indicator formulas and their parameters, the row ids (UUID v5 of the decision
//! snapshot), the scoring rules and the grade table; what a reader asks of the memory and gets
//! back ([`RecallQuery`], [`RecalledOutcome`], [`SearchQuery`], [`MemoryHit`]) with
//! point-in-time masking ([`TradeOutcome::as_of`]); the statistics every reader computes the same
//! way ([`stats`]: win rate, setups, similar setups, what worked) and the `<trading_memory>`
//! block's text ([`block`]).
//! **Never does:** I/O, reading the clock (time comes in as data), sqlx, reqwest. Prices and PnL
//! are `Decimal`; indicators are statistics and are `f64` (stored as such, never formatted into a
//! prompt: the block writes only decimals, counts, times and labels, with `types::text`).
//!
//! Both the tick (records at decision time) and the scorers (the backtest loop at the right
//! simulated times, the live runner's driver off the tick path) call these functions, so a
//! backtest's outcomes are what live would record: every price comes from a bar's close at the
//! mark, never from "the price when the job ran".
//!
//! ```
//! use chrono::{Duration, TimeZone, Utc};
//! use outcomes::{Grade, OutcomeScore, OutcomeVerdict, TradeOutcome, score_outcome};
//! use rust_decimal::Decimal;
//! use types::{Bar, Interval, RegimeTag, Side};
//! use uuid::Uuid;
//!
//! let at = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
//! let outcome = TradeOutcome {
//!     id: Uuid::from_u128(1), deployment_id: Uuid::from_u128(2),
//!     decision_snapshot_id: Uuid::from_u128(3), snapshot_id: Uuid::from_u128(4),
//!     tick_at: at, symbol: "BTC".into(), direction: Side::Long, confidence: Some(70),
//!     entry_price: Decimal::from(100), predicted_stop: Some(Decimal::from(95)),
//!     predicted_target: Some(Decimal::from(110)), verdict: OutcomeVerdict::Executed,
//!     reason: Some("Breakout over 100".into()), market_condition: RegimeTag::TrendingUp,
//!     score: OutcomeScore::default(),
//! };
//! // 24 hourly bars after the tick, drifting up by 0.1 a bar; the target is never reached.
//! let bars: Vec<Bar> = (0..24).map(|i| {
//!     let close = Decimal::from(100) + Decimal::new(i + 1, 1);
//!     Bar { time: at + Duration::hours(i), open: close, high: close, low: close, close,
//!           volume: Decimal::ONE }
//! }).collect();
//! // Without the market snapshot's indicators the narrative has no `Setup:` line.
//! let score = score_outcome(&outcome, None, &bars, Interval::H1, at + Duration::hours(24));
//! assert_eq!(score.price_24h, Some(Decimal::new(1024, 1)));
//! assert_eq!(score.pnl_percent_24h, Some(Decimal::new(24, 1))); // +2.4 % > 1 %: B
//! assert_eq!(score.outcome_grade, Some(Grade::B));
//! assert!(score.narrative.unwrap().starts_with("BTC long - Grade B\nSignal: long at 100"));
//! ```

pub mod block;
pub mod indicators;
mod pending;
mod recall;
mod score;
pub mod search;
mod snapshot;
pub mod stats;

pub use pending::PendingOutcomes;
pub use recall::{
    HitKind, MAX_RECALL_ROWS, MAX_SEARCH_CHARS, MAX_SEARCH_HITS, MemoryHit, RecallQuery,
    RecalledOutcome, SearchQuery, window_start,
};
pub use score::{
    FirstHit, Grade, MARKS_HOURS, MAX_REASON_CHARS, OutcomeScore, OutcomeVerdict, PNL_DP,
    TradeOutcome, direction_of, final_mark, grade, grade_of, hit_words, narrative, outcome_id,
    pnl_percent, regrade, score_outcome,
};
pub use search::{SearchHits, SearchTerms, SearchTextError};
pub use snapshot::{
    ADX_PERIOD, CORRELATION_WINDOW, DEFAULT_REFERENCE_SYMBOL, Indicators, MACD_PERIODS, MAX_BARS,
    MacdState, MarketSnapshot, RSI_BARS, RSI_PERIOD, VOLATILITY_LOOKBACK, VOLATILITY_WINDOW,
    VOLUME_PERIOD, bars_needed, compute_indicators, compute_indicators_with_regime,
    market_snapshot_id,
};
