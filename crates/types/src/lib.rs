//! Plain value types shared by every crate of the workspace.
//!
//! Nothing here does I/O. Money, prices and sizes are [`rust_decimal::Decimal`], times are
//! [`chrono::DateTime<Utc>`], ids are [`uuid::Uuid`]. The types are the vocabulary of the
//! tick: market data ([`Bar`], [`Interval`], [`RegimeTag`]), broker state ([`Position`],
//! [`Fill`], [`PortfolioSnapshot`]), the model's proposal ([`ProposedAction`]) and the
//! execution engine's answer ([`Verdict`], [`RuleCode`]), and a model call's token [`Usage`].
//!
//! ```
//! use types::{Bar, Decimal, Interval, RegimeTag, Utc, classify_regime};
//! use chrono::{Duration, TimeZone};
//!
//! let interval: Interval = "1h".parse()?;
//! let start = Utc.with_ymd_and_hms(2026, 6, 4, 0, 0, 0).unwrap();
//! // Twenty hourly bars, each closing one dollar higher: a clean up-trend.
//! let bars: Vec<Bar> = (0..20)
//!     .map(|i| {
//!         let close = Decimal::from(100 + i);
//!         Bar {
//!             time: start + Duration::hours(i),
//!             open: close - Decimal::ONE,
//!             high: close,
//!             low: close - Decimal::ONE,
//!             close,
//!             volume: Decimal::from(10),
//!         }
//!     })
//!     .collect();
//! assert_eq!(bars[0].close_time(interval), start + interval.duration());
//! assert_eq!(classify_regime(&bars), RegimeTag::TrendingUp);
//! # Ok::<(), types::ParseIntervalError>(())
//! ```

pub mod cli;
mod clock;
mod decimal;
mod env;
mod event;
mod exit;
mod interval;
mod json;
mod ledger;
mod lessons;
mod market;
mod memory;
mod model_output;
mod retry;
mod swar;
#[cfg(feature = "test-support")]
pub mod test_support;
pub mod text;
mod trading;
mod usage;

pub use clock::{Clock, FixedClock, SystemClock};
pub use decimal::{mantissa_at, parse_plain_decimal};
pub use env::{EnvLookup, process_env};
pub use event::{EventKind, InvalidEvent, MAX_EVENT_TITLE_CHARS, MarketEvent};
pub use exit::{BadInput, EXIT_BAD_INPUT};
pub use interval::{Interval, ParseIntervalError};
pub use json::{JsonText, push_json_string};
pub use ledger::{CloseKind, TradeRecord, TradeStatus};
pub use lessons::{
    DroppedObservation, Finding, HeldLesson, LessonDirection, LessonSetup,
    MAX_OBSERVATION_NOTE_CHARS, MAX_OBSERVATIONS, Observation, SetupRegime,
};
pub use market::{Bar, RegimeTag, classify_regime};
pub use memory::{
    ArchiveReason, FactChange, FactChangeOp, FactConfidence, FactHandle, FactSource,
    MAX_FACT_CHARS, MAX_FACT_TOPIC_CHARS, MAX_LESSONS_CHARS, MAX_LINT_REASON_CHARS, MAX_MEMORY_K,
    MIN_FACT_CHARS, NoteContent, NoteLint, NoteStatus, ReflectionNote, UserFact,
};
pub use trading::{
    Fill, FillTrigger, OrderAction, OrderSide, PortfolioSnapshot, Position, ProposedAction,
    RuleCode, Side, Verdict,
};

pub use model_output::{
    MAX_STEP_TEXT_CHARS, MAX_STORED_ARGUMENT_CHARS, MAX_STORED_ERROR_CHARS,
    MAX_STORED_RESULT_BYTES, MAX_STORED_STEPS_BYTES, MAX_TOOL_CALLS_PER_RESPONSE, cut_chars,
};
pub use retry::RetryPolicy;
pub use swar::zero_bytes;
pub use usage::{MAX_CALL_TOKENS, Usage};

pub use chrono::{DateTime, Utc};
pub use rust_decimal::Decimal;
pub use uuid::Uuid;
