//! The decision-time record (`trade_outcomes`) and the scorer: prices at +1h/+4h/+24h from bars,
//! PnL % at each mark, target/stop hits, excursions and the A–F grade of seed 003.

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use types::{Bar, Interval, OrderAction, ProposedAction, RegimeTag, Side};
use uuid::Uuid;

use crate::snapshot::Indicators;
use crate::stats::setup_label;

/// Decimals of the stored PnL percentages.
pub const PNL_DP: u32 = 4;

/// The longest stored reason, in characters: the bound of the `propose_order` tool's reason
/// (`tools::MAX_REASON_CHARS`; the tick asserts both are equal).
pub const MAX_REASON_CHARS: usize = 280;

/// What the execution engine made of the proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeVerdict {
    /// The engine passed it and the broker filled it.
    Executed,
    /// The engine (or the broker) refused it.
    Rejected,
}

impl OutcomeVerdict {
    /// The stored spelling: `executed`, `rejected`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            OutcomeVerdict::Executed => "executed",
            OutcomeVerdict::Rejected => "rejected",
        }
    }

    /// Parses the stored spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [OutcomeVerdict::Executed, OutcomeVerdict::Rejected]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// Which of target and stop the price reached first within 24 hours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FirstHit {
    /// The target, in a bar where the stop was not reached.
    Target,
    /// The stop (also when both were reached within one bar: the path inside a bar is
    /// unknown, and the conservative reading is that the stop came first).
    Stop,
    /// Neither (or the proposal named neither).
    Neither,
}

impl FirstHit {
    /// The stored spelling: `target`, `stop`, `neither`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            FirstHit::Target => "target",
            FirstHit::Stop => "stop",
            FirstHit::Neither => "neither",
        }
    }

    /// Parses the stored spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [FirstHit::Target, FirstHit::Stop, FirstHit::Neither]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// Seed 003's grade, checked in this order (the first that applies):
///
/// | Grade | Rule here |
/// |-------|-----------|
/// | A | the target was reached before the stop ([`FirstHit::Target`]) |
/// | F | the stop was reached first ([`FirstHit::Stop`]), or the worst price was more than 3 % against the entry |
/// | B | PnL at 24h above +1 % (direction-signed: the direction was right) |
/// | C | PnL at 24h within −1 % … +1 % |
/// | D | the rest: a loss below −1 %, the stop not reached, at most 3 % adverse |
///
/// Seed 003 reads A = "hit target, didn't hit stop", D = "loss but stop wasn't hit" and
/// F = "hit stop loss or >3 % adverse move": a stop reached first is F whatever the price did
/// afterwards, and a target reached first is A whatever it did afterwards (the stop reached
/// later, or more than 3 % against: the position would have been closed at the target) and
/// before (a move against that stayed short of the stop: the plan held).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Grade {
    /// Hit the target before the stop.
    A,
    /// Profitable at 24h (> 1 %), neither the stop first nor > 3 % adverse.
    B,
    /// Small profit or loss (−1 % … +1 %), neither the stop first nor > 3 % adverse.
    C,
    /// A loss below −1 %, the stop not hit, at most 3 % adverse.
    D,
    /// Hit the stop first, or > 3 % adverse.
    F,
}

impl Grade {
    /// The stored spelling: `A` … `F`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Grade::A => "A",
            Grade::B => "B",
            Grade::C => "C",
            Grade::D => "D",
            Grade::F => "F",
        }
    }

    /// Parses the stored spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Grade::A, Grade::B, Grade::C, Grade::D, Grade::F]
            .into_iter()
            .find(|g| g.as_str() == s)
    }
}

/// The scoring columns of a `trade_outcomes` row. Filled in as the marks pass: `price_1h` and
/// its PnL once an hour has passed, `price_4h` after four, and the rest (hits, excursions,
/// grade, `scored_at`) after 24 hours.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeScore {
    /// The close of the last bar that closed at or before `tick_at + 1h` (and after `tick_at`).
    pub price_1h: Option<Decimal>,
    /// As `price_1h`, at `tick_at + 4h`.
    pub price_4h: Option<Decimal>,
    /// As `price_1h`, at `tick_at + 24h`.
    pub price_24h: Option<Decimal>,
    /// Direction-signed % change from the entry to `price_1h`, [`PNL_DP`] decimals.
    pub pnl_percent_1h: Option<Decimal>,
    /// As `pnl_percent_1h`, to `price_4h`.
    pub pnl_percent_4h: Option<Decimal>,
    /// As `pnl_percent_1h`, to `price_24h`.
    pub pnl_percent_24h: Option<Decimal>,
    /// A bar within 24h reached the target (high ≥ target long, low ≤ target short).
    pub hit_target: Option<bool>,
    /// A bar within 24h reached the stop (low ≤ stop long, high ≥ stop short).
    pub hit_stop: Option<bool>,
    /// Which came first.
    pub first_hit: Option<FirstHit>,
    /// The best price in the trade's direction within 24h (highest high long, lowest low
    /// short), the entry included.
    pub max_favorable: Option<Decimal>,
    /// The worst price against it (lowest low long, highest high short), the entry included.
    pub max_adverse: Option<Decimal>,
    /// The grade, once 24 hours have passed and a bar closed in them.
    pub outcome_grade: Option<Grade>,
    /// When the 24h scoring ran (a backtest: the tick time it ran at). Set once, with the
    /// 24h columns.
    pub scored_at: Option<DateTime<Utc>>,
    /// Seed 003's observation text of the scored outcome ([`narrative`]): set exactly when
    /// `scored_at` is, what the full-text search of the memory matches.
    pub narrative: Option<String>,
}

impl OutcomeScore {
    /// No column filled in yet (the state at decision time).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The 24h scoring ran: nothing more will change.
    #[must_use]
    pub fn is_final(&self) -> bool {
        self.scored_at.is_some()
    }
}

/// One `trade_outcomes` row: a directional proposal at decision time, and its score so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TradeOutcome {
    /// [`outcome_id`] of the decision snapshot.
    pub id: Uuid,
    /// The deployment that proposed.
    pub deployment_id: Uuid,
    /// The tick's decision snapshot (the firehose row).
    pub decision_snapshot_id: Uuid,
    /// The `market_snapshots` row of the symbol at the tick.
    pub snapshot_id: Uuid,
    /// The tick's time.
    pub tick_at: DateTime<Utc>,
    /// The proposal's symbol.
    pub symbol: String,
    /// Long for `open_long`, short for `open_short`.
    pub direction: Side,
    /// The proposal's confidence, 0–100.
    pub confidence: Option<u8>,
    /// The mark at the tick (the close of the latest closed bar).
    pub entry_price: Decimal,
    /// The proposal's stop.
    pub predicted_stop: Option<Decimal>,
    /// The proposal's target.
    pub predicted_target: Option<Decimal>,
    /// Executed or rejected.
    pub verdict: OutcomeVerdict,
    /// The proposal's reason at decision time (at most [`MAX_REASON_CHARS`] characters);
    /// `None` when the proposal gave none.
    pub reason: Option<String>,
    /// The regime of the symbol at the decision: its market snapshot's `market_condition`,
    /// copied so the narrative and the condition filter read one row.
    pub market_condition: RegimeTag,
    /// The scoring columns (empty at decision time).
    #[serde(flatten)]
    pub score: OutcomeScore,
}

/// The id of the outcome of the tick whose decision snapshot is `decision_snapshot_id` (a tick
/// proposes at most once): UUID v5, so a replayed tick writes the same id.
#[must_use]
pub fn outcome_id(decision_snapshot_id: Uuid) -> Uuid {
    Uuid::new_v5(&decision_snapshot_id, b"trade_outcome")
}

/// The direction of a proposal that takes a side (`open_long`, `open_short`); `None` for
/// `close`, `reduce` and `no_op`.
#[must_use]
pub fn direction_of(p: &ProposedAction) -> Option<Side> {
    match p.action {
        OrderAction::OpenLong => Some(Side::Long),
        OrderAction::OpenShort => Some(Side::Short),
        OrderAction::Close | OrderAction::Reduce | OrderAction::NoOp => None,
    }
}

/// The three marks after the tick.
pub const MARKS_HOURS: [i64; 3] = [1, 4, 24];

/// The time of the final (24h) mark of an outcome at `tick_at`.
#[must_use]
pub fn final_mark(tick_at: DateTime<Utc>) -> DateTime<Utc> {
    tick_at + Duration::hours(MARKS_HOURS[2])
}

/// The score of `outcome` at `now`, from `bars` (the symbol's bars of `interval`, oldest
/// first; bars outside `(tick_at, tick_at + 24h]` and bars closing after `now` are ignored).
///
/// A mark counts once `now` reaches it: its price is the close of the last bar that closed at
/// or before the mark and after the tick (`None` when no bar closed in between — a gap in the
/// data). Once `now` reaches `tick_at + 24h`, the path of the bars that closed in
/// `(tick_at, tick_at + 24h]` gives the hits, which came first (both in one bar: the stop),
/// the excursions and the grade, and `scored_at` is `now`; without any bar in that span there
/// is no grade. `indicators` are those of the outcome's market snapshot: the narrative's setup
/// ([`narrative`]). The scores already in `outcome.score` are ignored: the result is a function
/// of the outcome's decision-time columns, its indicators, the bars and `now` only.
#[must_use]
pub fn score_outcome(
    outcome: &TradeOutcome,
    indicators: Option<&Indicators>,
    bars: &[Bar],
    interval: Interval,
    now: DateTime<Utc>,
) -> OutcomeScore {
    let start = outcome.tick_at;
    let end = final_mark(start).min(now);
    let lo = bars.partition_point(|b| b.close_time(interval) <= start);
    let hi = bars
        .partition_point(|b| b.close_time(interval) <= end)
        .max(lo);
    let path = &bars[lo..hi];
    let price_at = |hours: i64| -> Option<Decimal> {
        let mark = start + Duration::hours(hours);
        if now < mark {
            return None;
        }
        path.iter()
            .rev()
            .find(|b| b.close_time(interval) <= mark)
            .map(|b| b.close)
    };
    let pnl = |p: Option<Decimal>| p.and_then(|p| pnl_percent(outcome, p));
    let mut score = OutcomeScore {
        price_1h: price_at(MARKS_HOURS[0]),
        price_4h: price_at(MARKS_HOURS[1]),
        price_24h: price_at(MARKS_HOURS[2]),
        ..OutcomeScore::default()
    };
    score.pnl_percent_1h = pnl(score.price_1h);
    score.pnl_percent_4h = pnl(score.price_4h);
    score.pnl_percent_24h = pnl(score.price_24h);
    if now < final_mark(start) {
        return score;
    }

    let long = outcome.direction == Side::Long;
    let reaches_target = |b: &Bar| {
        outcome
            .predicted_target
            .is_some_and(|t| if long { b.high >= t } else { b.low <= t })
    };
    let reaches_stop = |b: &Bar| {
        outcome
            .predicted_stop
            .is_some_and(|s| if long { b.low <= s } else { b.high >= s })
    };
    let mut first = FirstHit::Neither;
    let (mut hit_target, mut hit_stop) = (false, false);
    let (mut favorable, mut adverse) = (outcome.entry_price, outcome.entry_price);
    for b in path {
        let (t, s) = (reaches_target(b), reaches_stop(b));
        if first == FirstHit::Neither {
            if s {
                first = FirstHit::Stop;
            } else if t {
                first = FirstHit::Target;
            }
        }
        hit_target |= t;
        hit_stop |= s;
        if long {
            favorable = favorable.max(b.high);
            adverse = adverse.min(b.low);
        } else {
            favorable = favorable.min(b.low);
            adverse = adverse.max(b.high);
        }
    }
    score.hit_target = Some(hit_target);
    score.hit_stop = Some(hit_stop);
    score.first_hit = Some(first);
    score.max_favorable = Some(favorable);
    score.max_adverse = Some(adverse);
    score.outcome_grade = grade_of(outcome, &score);
    score.scored_at = Some(now);
    score.narrative = Some(narrative(outcome, &score, indicators));
    score
}

/// Seed 003's observation of a scored outcome ("Claude-mem Sync"), one fact a line:
///
/// ```text
/// BTC long - Grade A
/// Signal: long at 65,000 (conf: 70)
/// Predicted: TP 66,500, SL 64,500
/// Actual 24h: 66,000 (+1.5%)
/// Hit: target first
/// Grade: A
/// Conditions: trending_down
/// Setup: RSI oversold + volume spike + MACD bearish
/// Reason: Oversold bounce at support
/// ```
///
/// Prices in the [`types::text::push_price`] style, the 24h PnL with its sign and one decimal;
/// a value the outcome lacks reads `none`, and the `Reason:` line is there only when the
/// proposal gave one (its whitespace runs folded into single spaces, so it stays one line).
/// The `Hit:` line ([`hit_words`]) names the stop and the target only when the price reached
/// them, so a full-text search for "stop" or "target" finds exactly the outcomes that hit it.
/// `Setup:` is [`setup_label`] of the market snapshot's `indicators` (the line is left out
/// without them).
#[must_use]
pub fn narrative(
    outcome: &TradeOutcome,
    score: &OutcomeScore,
    indicators: Option<&Indicators>,
) -> String {
    use types::text::{push_price, push_signed_fixed, push_uint};
    let mut out = String::with_capacity(256);
    let grade = score.outcome_grade.map_or("none", Grade::as_str);
    let direction = match outcome.direction {
        Side::Long => "long",
        Side::Short => "short",
    };
    let price_or_none = |out: &mut String, p: Option<Decimal>| match p {
        Some(p) => push_price(out, p),
        None => out.push_str("none"),
    };
    out.push_str(&outcome.symbol.to_uppercase());
    out.push(' ');
    out.push_str(direction);
    out.push_str(" - Grade ");
    out.push_str(grade);
    out.push_str("\nSignal: ");
    out.push_str(direction);
    out.push_str(" at ");
    push_price(&mut out, outcome.entry_price);
    out.push_str(" (conf: ");
    match outcome.confidence {
        Some(c) => push_uint(&mut out, u64::from(c)),
        None => out.push_str("none"),
    }
    out.push_str(")\nPredicted: TP ");
    price_or_none(&mut out, outcome.predicted_target);
    out.push_str(", SL ");
    price_or_none(&mut out, outcome.predicted_stop);
    out.push_str("\nActual 24h: ");
    price_or_none(&mut out, score.price_24h);
    if let Some(pnl) = score.pnl_percent_24h {
        out.push_str(" (");
        push_signed_fixed(&mut out, pnl, 1);
        out.push_str("%)");
    }
    out.push_str("\nHit: ");
    out.push_str(hit_words(score));
    out.push_str("\nGrade: ");
    out.push_str(grade);
    out.push_str("\nConditions: ");
    out.push_str(outcome.market_condition.as_str());
    if let Some(ind) = indicators {
        out.push_str("\nSetup: ");
        out.push_str(&setup_label(ind));
    }
    if let Some(reason) = outcome.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        out.push_str("\nReason:");
        for word in reason.split_whitespace() {
            out.push(' ');
            out.push_str(word);
        }
    }
    out
}

/// Which of the levels the price reached within 24 hours, first named first: `target first`,
/// `target first, stop later`, `stop first`, `stop first, target too` (later or within the same
/// bar), `neither`; `none` before the 24h scoring or when it found no bar.
#[must_use]
pub fn hit_words(score: &OutcomeScore) -> &'static str {
    match (score.first_hit, score.hit_stop, score.hit_target) {
        (Some(FirstHit::Target), Some(true), _) => "target first, stop later",
        (Some(FirstHit::Target), _, _) => "target first",
        (Some(FirstHit::Stop), _, Some(true)) => "stop first, target too",
        (Some(FirstHit::Stop), _, _) => "stop first",
        (Some(FirstHit::Neither), _, _) => "neither",
        (None, _, _) => "none",
    }
}

/// Seed 003's table, in the order of [`Grade`]: A, F, B, C, D. `adverse_pnl` is the
/// direction-signed PnL % at the worst price (negative when the price went against the trade;
/// `None` when unknown, which never makes an F).
#[must_use]
pub fn grade(first: FirstHit, pnl_24h: Decimal, adverse_pnl: Option<Decimal>) -> Grade {
    let one = Decimal::ONE;
    let three = Decimal::from(3);
    if first == FirstHit::Target {
        Grade::A
    } else if first == FirstHit::Stop || adverse_pnl.is_some_and(|a| a < -three) {
        Grade::F
    } else if pnl_24h > one {
        Grade::B
    } else if pnl_24h >= -one {
        Grade::C
    } else {
        Grade::D
    }
}

/// The grade of a scored outcome from its stored figures: which level came first, the PnL at
/// 24h and the worst price ([`grade`]); `None` before the 24h scoring, or when it found no bar.
#[must_use]
pub fn grade_of(outcome: &TradeOutcome, score: &OutcomeScore) -> Option<Grade> {
    let first = score.first_hit?;
    let pnl_24h = score.pnl_percent_24h?;
    let adverse = score.max_adverse.and_then(|a| pnl_percent(outcome, a));
    Some(grade(first, pnl_24h, adverse))
}

/// `outcome`'s stored score with its grade and narrative computed again from the stored
/// figures and its market snapshot's `indicators` ([`grade_of`], [`narrative`]): what a change
/// of the grade table or of the narrative does to outcomes scored before it. An outcome not
/// scored in full is returned as it is.
#[must_use]
pub fn regrade(outcome: &TradeOutcome, indicators: Option<&Indicators>) -> OutcomeScore {
    let mut score = outcome.score.clone();
    if score.is_final() {
        score.outcome_grade = grade_of(outcome, &score);
        score.narrative = Some(narrative(outcome, &score, indicators));
    }
    score
}

/// Direction-signed % change from the entry to `price`, [`PNL_DP`] decimals; `None` for a
/// non-positive entry.
#[must_use]
pub fn pnl_percent(outcome: &TradeOutcome, price: Decimal) -> Option<Decimal> {
    if outcome.entry_price <= Decimal::ZERO {
        return None;
    }
    let change = (price - outcome.entry_price)
        .checked_mul(Decimal::ONE_HUNDRED)?
        .checked_div(outcome.entry_price)?;
    Some((change * outcome.direction.sign()).round_dp(PNL_DP))
}
