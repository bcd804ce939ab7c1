//! What the outcome memory says, computed from recalled outcomes: statistics, setups, similar
//! conditions, what worked. Pure and deterministic (no map order, no float in a decision that
//! reaches text without a stated rounding); the recall tools, the `<trading_memory>` block and
//! the MCP server all read through these functions.
//!
//! Definitions (the same everywhere):
//! - **graded**: the outcome has a grade as of the reader's time;
//! - **win**: grade A (target first) or B (more than +1 % after 24 h); win rate = wins / graded;
//! - **average PnL**: the mean of the graded outcomes' 24 h PnL % (and, separately, of every
//!   outcome whose 4 h mark has passed, for the 4 h column);
//! - **setup**: the label of the decision's indicators ([`setup_label`]).

use std::collections::BTreeMap;

use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};
use types::{RegimeTag, Side};

use crate::recall::RecalledOutcome;
use crate::score::{Grade, PNL_DP};
use crate::snapshot::{Indicators, MacdState};

/// RSI at or below this is "oversold".
pub const RSI_OVERSOLD: f64 = 30.0;
/// RSI at or above this is "overbought".
pub const RSI_OVERBOUGHT: f64 = 70.0;
/// A volume ratio at or above this is a "volume spike".
pub const VOLUME_SPIKE_RATIO: f64 = 1.5;
/// ADX at or above this is a "strong trend".
pub const STRONG_TREND_ADX: f64 = 25.0;
/// The fewest graded outcomes a group needs before it is ranked (best setup, best direction,
/// confidence threshold, patterns to avoid): fewer is anecdote.
pub const MIN_GROUP: u32 = 3;
/// A setup whose win rate is below this (in %) with at least [`MIN_GROUP`] graded outcomes is a
/// pattern to avoid.
pub const AVOID_BELOW_PCT: u32 = 40;
/// The confidence cut-offs [`what_worked`] tries.
pub const CONFIDENCE_CUTS: [u8; 5] = [50, 60, 70, 80, 90];

/// Counts and averages of a set of outcomes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeStats {
    /// Outcomes in the set.
    pub outcomes: u32,
    /// Of those, graded.
    pub graded: u32,
    /// Of the graded, grade A or B.
    pub wins: u32,
    /// `wins / graded` in %, 1 decimal; `None` without a graded outcome.
    pub win_rate_pct: Option<Decimal>,
    /// Mean 24 h PnL % of the graded outcomes, [`PNL_DP`] decimals ([`stats_dp`]: as asked).
    pub avg_pnl_24h_pct: Option<Decimal>,
    /// Mean 4 h PnL % of the outcomes whose 4 h mark passed, [`PNL_DP`] decimals ([`stats_dp`]:
    /// as asked).
    pub avg_pnl_4h_pct: Option<Decimal>,
    /// Graded outcomes per grade, A to F.
    pub grades: BTreeMap<Grade, u32>,
}

fn mean(values: &[Decimal], dp: u32) -> Option<Decimal> {
    if values.is_empty() {
        return None;
    }
    let sum: Decimal = values.iter().copied().sum();
    Some(
        (sum / Decimal::from(values.len()))
            .round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero),
    )
}

fn rate(part: u32, whole: u32) -> Option<Decimal> {
    (whole > 0).then(|| {
        (Decimal::from(part) * Decimal::ONE_HUNDRED / Decimal::from(whole))
            .round_dp_with_strategy(1, RoundingStrategy::MidpointAwayFromZero)
    })
}

/// Whether an outcome counts as a win (grade A or B).
#[must_use]
pub fn is_win(o: &RecalledOutcome) -> bool {
    matches!(o.outcome.score.outcome_grade, Some(Grade::A | Grade::B))
}

/// The statistics of `rows`, means at [`PNL_DP`] decimals.
#[must_use]
pub fn stats<'a>(rows: impl IntoIterator<Item = &'a RecalledOutcome>) -> OutcomeStats {
    stats_dp(rows, PNL_DP)
}

/// The statistics of `rows`, means rounded once, half away from zero, to `dp` decimals: a
/// reader that shows fewer decimals than [`PNL_DP`] asks for them here rather than rounding a
/// rounded mean again (−0.034968 is −0.03 at 2 decimals, not −0.0350 → −0.04).
#[must_use]
pub fn stats_dp<'a>(rows: impl IntoIterator<Item = &'a RecalledOutcome>, dp: u32) -> OutcomeStats {
    let mut s = OutcomeStats::default();
    let (mut pnl24, mut pnl4) = (Vec::new(), Vec::new());
    for r in rows {
        s.outcomes += 1;
        let score = &r.outcome.score;
        if let Some(p) = score.pnl_percent_4h {
            pnl4.push(p);
        }
        if let Some(g) = score.outcome_grade {
            s.graded += 1;
            *s.grades.entry(g).or_default() += 1;
            if matches!(g, Grade::A | Grade::B) {
                s.wins += 1;
            }
            if let Some(p) = score.pnl_percent_24h {
                pnl24.push(p);
            }
        }
    }
    s.win_rate_pct = rate(s.wins, s.graded);
    s.avg_pnl_24h_pct = mean(&pnl24, dp);
    s.avg_pnl_4h_pct = mean(&pnl4, dp);
    s
}

/// The setup a decision's indicators describe, in words: RSI zone (the 1 h RSI, else the 4 h,
/// else the 15 m), a volume spike, the MACD state and a strong trend, joined with ` + `;
/// `no clear signal` when none applies. E.g. `RSI oversold + volume spike + MACD bearish`.
#[must_use]
pub fn setup_label(ind: &Indicators) -> String {
    let mut parts: Vec<&str> = Vec::new();
    if let Some(rsi) = ind.rsi_1h.or(ind.rsi_4h).or(ind.rsi_15m) {
        if rsi <= RSI_OVERSOLD {
            parts.push("RSI oversold");
        } else if rsi >= RSI_OVERBOUGHT {
            parts.push("RSI overbought");
        }
    }
    if ind.volume_ratio.is_some_and(|v| v >= VOLUME_SPIKE_RATIO) {
        parts.push("volume spike");
    }
    match ind.macd_signal {
        Some(MacdState::Bullish) => parts.push("MACD bullish"),
        Some(MacdState::Bearish) => parts.push("MACD bearish"),
        Some(MacdState::Neutral) | None => {}
    }
    if ind.trend_strength.is_some_and(|a| a >= STRONG_TREND_ADX) {
        parts.push("strong trend");
    }
    if parts.is_empty() {
        "no clear signal".to_owned()
    } else {
        parts.join(" + ")
    }
}

/// One setup's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupRecord {
    /// [`setup_label`].
    pub setup: String,
    /// Its statistics.
    pub stats: OutcomeStats,
}

/// Every setup among `rows` with at least [`MIN_GROUP`] graded outcomes, best first: win rate
/// descending, then more graded, then average 24 h PnL descending, then the label.
#[must_use]
pub fn setups(rows: &[RecalledOutcome]) -> Vec<SetupRecord> {
    let mut groups: BTreeMap<String, Vec<&RecalledOutcome>> = BTreeMap::new();
    for r in rows {
        groups
            .entry(setup_label(&r.indicators))
            .or_default()
            .push(r);
    }
    let mut out: Vec<SetupRecord> = groups
        .into_iter()
        .map(|(setup, rows)| SetupRecord {
            setup,
            stats: stats(rows),
        })
        .filter(|s| s.stats.graded >= MIN_GROUP)
        .collect();
    out.sort_by(|a, b| {
        b.stats
            .win_rate_pct
            .cmp(&a.stats.win_rate_pct)
            .then(b.stats.graded.cmp(&a.stats.graded))
            .then(b.stats.avg_pnl_24h_pct.cmp(&a.stats.avg_pnl_24h_pct))
            .then(a.setup.cmp(&b.setup))
    });
    out
}

/// The best setup among `rows`: the first of [`setups`] that won at least once (a setup that
/// never won is no "best", however the others did).
#[must_use]
pub fn best_setup(rows: &[RecalledOutcome]) -> Option<SetupRecord> {
    setups(rows).into_iter().find(|s| s.stats.wins > 0)
}

/// Which RSI reading [`SetupFilter`] bounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RsiTimeframe {
    /// `rsi_15m`.
    #[serde(rename = "15m")]
    M15,
    /// `rsi_1h` (the default).
    #[default]
    #[serde(rename = "1h")]
    H1,
    /// `rsi_4h`.
    #[serde(rename = "4h")]
    H4,
}

/// A volatility band: the snapshot's volatility percentile in thirds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VolatilityBand {
    /// Percentile below 100/3.
    Low,
    /// Percentile from 100/3 to 200/3.
    Medium,
    /// Percentile above 200/3.
    High,
}

impl VolatilityBand {
    /// The band of a volatility percentile.
    #[must_use]
    pub fn of(percentile: f64) -> Self {
        if percentile * 3.0 < 100.0 {
            Self::Low
        } else if percentile * 3.0 <= 200.0 {
            Self::Medium
        } else {
            Self::High
        }
    }
}

/// Seed 003's filter form of "similar setups": an RSI range on one timeframe, a market
/// condition (the trend) and a volatility band; an absent bound matches everything, and an
/// outcome whose snapshot lacks a bounded reading does not match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupFilter {
    /// Which RSI the range bounds.
    pub rsi_timeframe: RsiTimeframe,
    /// RSI at least this.
    pub rsi_min: Option<f64>,
    /// RSI at most this.
    pub rsi_max: Option<f64>,
    /// The regime tag at the decision.
    pub market_condition: Option<RegimeTag>,
    /// The volatility band at the decision.
    pub volatility: Option<VolatilityBand>,
}

impl SetupFilter {
    /// Whether `ind` matches.
    #[must_use]
    pub fn matches(&self, ind: &Indicators) -> bool {
        let rsi = match self.rsi_timeframe {
            RsiTimeframe::M15 => ind.rsi_15m,
            RsiTimeframe::H1 => ind.rsi_1h,
            RsiTimeframe::H4 => ind.rsi_4h,
        };
        let in_range = |bound: Option<f64>, ok: fn(f64, f64) -> bool| match bound {
            None => true,
            Some(b) => rsi.is_some_and(|r| ok(r, b)),
        };
        in_range(self.rsi_min, |r, b| r >= b)
            && in_range(self.rsi_max, |r, b| r <= b)
            && self
                .market_condition
                .is_none_or(|c| c == ind.market_condition)
            && self.volatility.is_none_or(|band| {
                ind.volatility_percentile
                    .is_some_and(|p| VolatilityBand::of(p) == band)
            })
    }
}

/// What worked under some condition: [`what_worked`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhatWorked {
    /// All the outcomes considered.
    pub overall: OutcomeStats,
    /// Longs.
    pub long: OutcomeStats,
    /// Shorts.
    pub short: OutcomeStats,
    /// The direction with the higher win rate, when both have at least [`MIN_GROUP`] graded
    /// outcomes and the rates differ (or only one side has enough).
    pub best_direction: Option<Side>,
    /// The lowest cut-off of [`CONFIDENCE_CUTS`] whose outcomes at or above it (at least
    /// [`MIN_GROUP`] graded) have the highest win rate, when it beats the overall rate.
    pub confidence_threshold: Option<u8>,
    /// Setups with at least [`MIN_GROUP`] graded outcomes and a win rate below
    /// [`AVOID_BELOW_PCT`] %, worst first.
    pub avoid: Vec<SetupRecord>,
    /// The best setup ([`best_setup`]), if any.
    pub best_setup: Option<SetupRecord>,
}

/// What worked among `rows` (typically the outcomes of one market condition).
#[must_use]
pub fn what_worked(rows: &[RecalledOutcome]) -> WhatWorked {
    let overall = stats(rows);
    let long = stats(rows.iter().filter(|r| r.outcome.direction == Side::Long));
    let short = stats(rows.iter().filter(|r| r.outcome.direction == Side::Short));
    let enough = |s: &OutcomeStats| s.graded >= MIN_GROUP;
    let best_direction = match (enough(&long), enough(&short)) {
        (true, true) => match long.win_rate_pct.cmp(&short.win_rate_pct) {
            std::cmp::Ordering::Greater => Some(Side::Long),
            std::cmp::Ordering::Less => Some(Side::Short),
            std::cmp::Ordering::Equal => None,
        },
        (true, false) => Some(Side::Long),
        (false, true) => Some(Side::Short),
        (false, false) => None,
    };
    let mut confidence_threshold = None;
    let mut best_rate = overall.win_rate_pct;
    for cut in CONFIDENCE_CUTS {
        let s = stats(
            rows.iter()
                .filter(|r| r.outcome.confidence.is_some_and(|c| c >= cut)),
        );
        if enough(&s) && s.win_rate_pct > best_rate {
            best_rate = s.win_rate_pct;
            confidence_threshold = Some(cut);
        }
    }
    let all = setups(rows);
    let mut avoid: Vec<SetupRecord> = all
        .iter()
        .filter(|s| {
            s.stats
                .win_rate_pct
                .is_some_and(|r| r < Decimal::from(AVOID_BELOW_PCT))
        })
        .cloned()
        .collect();
    avoid.reverse();
    WhatWorked {
        overall,
        long,
        short,
        best_direction,
        confidence_threshold,
        best_setup: all.into_iter().find(|s| s.stats.wins > 0),
        avoid,
    }
}
