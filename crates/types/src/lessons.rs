//! Typed lessons: what a reflection observed about a setup of its window, before any text.
//!
//! A reflection (a model's `record_lessons` call, or `builtin/stats-reflection`) chooses *which*
//! setups matter and *what* it sees there — a [`Finding`] from a closed set and a
//! [`LessonDirection`] — and may add a short free-text note. The figures of a lesson are never
//! the reflection's: the reflection crate computes them from the ledger and renders the bullet.
//! A bullet the lesson defences hold back (a model's plain bullet, or an observation's note)
//! is kept as a [`HeldLesson`] for a person's review.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{RegimeTag, Side};

/// Longest free-text note an observation may carry, in characters; a longer note is dropped.
pub const MAX_OBSERVATION_NOTE_CHARS: usize = 200;
/// Most observations one reflection may record; the rest are dropped and recorded.
pub const MAX_OBSERVATIONS: usize = 8;

/// What the ledger can show about a setup. Each finding has one test on the ledger's figures
/// (the reflection crate's `supports`); a finding the figures do not support is dropped.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// The setup made money: net PnL above zero and more wins than losses.
    Wins,
    /// The setup lost money: net PnL below zero and more losses than wins.
    Loses,
    /// Exits came late: at least half of the trades that were ever in profit closed with less
    /// than half of their best open profit (MFE).
    GivesBackGains,
    /// Losers ended fast: at least half of the losing trades closed on a stop, a liquidation,
    /// or within half of the window's average holding time.
    StoppedQuickly,
    /// Losers were held longer on average than the window's winners.
    HeldTooLong,
    /// Fees took at least half of a positive gross PnL.
    FeesEatEdge,
    /// Fewer than three trades: too few to conclude anything.
    SmallSample,
    /// Neither side dominates: the trades neither clearly won nor clearly lost.
    Mixed,
}

impl Finding {
    /// Every finding, in declaration order.
    pub const ALL: [Finding; 8] = [
        Finding::Wins,
        Finding::Loses,
        Finding::GivesBackGains,
        Finding::StoppedQuickly,
        Finding::HeldTooLong,
        Finding::FeesEatEdge,
        Finding::SmallSample,
        Finding::Mixed,
    ];

    /// The snake_case spelling (serde's, the tool schema's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Finding::Wins => "wins",
            Finding::Loses => "loses",
            Finding::GivesBackGains => "gives_back_gains",
            Finding::StoppedQuickly => "stopped_quickly",
            Finding::HeldTooLong => "held_too_long",
            Finding::FeesEatEdge => "fees_eat_edge",
            Finding::SmallSample => "small_sample",
            Finding::Mixed => "mixed",
        }
    }

    /// Parses the snake_case spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

/// What the agent should make of a finding. None of them can raise risk: the most a lesson
/// asks is to repeat a setup the strategy already allows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LessonDirection {
    /// Worth repeating when the strategy's conditions line up again.
    Repeat,
    /// Stay out of the setup until it shows better results.
    Avoid,
    /// Be more selective before taking the setup again.
    Caution,
}

impl LessonDirection {
    /// The snake_case spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            LessonDirection::Repeat => "repeat",
            LessonDirection::Avoid => "avoid",
            LessonDirection::Caution => "caution",
        }
    }
}

/// The trades an observation speaks about: every dimension given narrows the window's closed
/// trades (symbol, side, entry regime); none given is the whole window.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct LessonSetup {
    /// A traded symbol of the window, as the ledger spells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// `long` or `short`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// The entry regime: a [`RegimeTag`], or `None` inside [`SetupRegime::Untagged`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<SetupRegime>,
}

impl LessonSetup {
    /// Whether no dimension is given (the whole window).
    #[must_use]
    pub fn is_whole_window(&self) -> bool {
        self.symbol.is_none() && self.side.is_none() && self.regime.is_none()
    }
}

/// An entry regime as a lesson names it: a tag, or the rows that carry none.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SetupRegime {
    /// `trending_up`.
    TrendingUp,
    /// `trending_down`.
    TrendingDown,
    /// `ranging`.
    Ranging,
    /// `volatile`.
    Volatile,
    /// `unknown` (too few bars to classify).
    Unknown,
    /// The row carries no regime tag.
    Untagged,
}

impl SetupRegime {
    /// The ledger row's regime as a lesson names it.
    #[must_use]
    pub const fn of(tag: Option<RegimeTag>) -> Self {
        match tag {
            Some(RegimeTag::TrendingUp) => SetupRegime::TrendingUp,
            Some(RegimeTag::TrendingDown) => SetupRegime::TrendingDown,
            Some(RegimeTag::Ranging) => SetupRegime::Ranging,
            Some(RegimeTag::Volatile) => SetupRegime::Volatile,
            Some(RegimeTag::Unknown) => SetupRegime::Unknown,
            None => SetupRegime::Untagged,
        }
    }

    /// The snake_case spelling (as prompts show regimes).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            SetupRegime::TrendingUp => "trending_up",
            SetupRegime::TrendingDown => "trending_down",
            SetupRegime::Ranging => "ranging",
            SetupRegime::Volatile => "volatile",
            SetupRegime::Unknown => "unknown",
            SetupRegime::Untagged => "untagged",
        }
    }
}

/// One typed observation, as accepted: the bullet the prompt shows is rendered from it and the
/// ledger's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Observation {
    /// The trades it speaks about.
    #[serde(default)]
    pub setup: LessonSetup,
    /// What the ledger shows there.
    pub finding: Finding,
    /// What the agent should make of it.
    pub direction: LessonDirection,
    /// The reflection's own words, at most [`MAX_OBSERVATION_NOTE_CHARS`]; kept only when the
    /// lesson defences passed it (otherwise it is a [`HeldLesson`] and this is `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// An observation the ledger did not bear out (or that broke the format), recorded, never shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DroppedObservation {
    /// The observation as the reflection gave it (its note cut to
    /// [`MAX_OBSERVATION_NOTE_CHARS`]).
    pub observation: Observation,
    /// Why it was dropped, e.g. `loses: the setup's net PnL is +$1.20`.
    pub reason: String,
}

/// A bullet the lesson defences held back: a model's plain bullet, or an observation's note.
/// It reaches the prompt only when a person accepts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HeldLesson {
    /// The bullet as it would be shown (`- ` and the text), at most
    /// [`crate::MAX_LESSONS_CHARS`] characters.
    pub text: String,
    /// Every finding of the defences, one line each.
    pub reasons: Vec<String>,
}
