//! The outcomes a backtest still has to score, and when.

use chrono::{DateTime, Duration, Utc};
use types::{Bar, Interval};
use uuid::Uuid;

use crate::{Indicators, MARKS_HOURS, OutcomeScore, TradeOutcome, score_outcome};

/// Outcomes waiting for their marks, in the order recorded. [`PendingOutcomes::score_due`]
/// scores each one when a mark (+1h, +4h, +24h) has passed, and drops it after the 24h one: a
/// backtest calls it at every tick time, so each outcome is scored at the first tick at or
/// after each mark — the simulated time a live scorer running every bar would score it.
#[derive(Debug, Clone, Default)]
pub struct PendingOutcomes {
    /// Each outcome with the number of marks already scored.
    items: Vec<(TradeOutcome, usize)>,
}

impl PendingOutcomes {
    /// No outcome pending.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an outcome recorded at decision time (its score is ignored).
    pub fn push(&mut self, outcome: TradeOutcome) {
        self.items.push((outcome, 0));
    }

    /// How many outcomes still wait for their 24h mark.
    #[must_use]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// No outcome waits.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The scores due at `now`: for every outcome a mark of which passed since the last call,
    /// its score at `now` ([`score_outcome`] over `bars(symbol)`, the symbol's bars of
    /// `interval`, oldest first; at the 24h mark with `indicators(outcome)`, its market
    /// snapshot's, for the narrative). Outcomes scored at their 24h mark leave the list.
    pub fn score_due<'b>(
        &mut self,
        now: DateTime<Utc>,
        interval: Interval,
        mut bars: impl FnMut(&str) -> &'b [Bar],
        mut indicators: impl FnMut(&TradeOutcome) -> Option<Indicators>,
    ) -> Vec<(Uuid, OutcomeScore)> {
        let mut due = Vec::new();
        self.items.retain_mut(|(outcome, done)| {
            let reached = MARKS_HOURS
                .iter()
                .filter(|h| outcome.tick_at + Duration::hours(**h) <= now)
                .count();
            if reached > *done {
                *done = reached;
                let ind = (reached == MARKS_HOURS.len())
                    .then(|| indicators(outcome))
                    .flatten();
                let score =
                    score_outcome(outcome, ind.as_ref(), bars(&outcome.symbol), interval, now);
                due.push((outcome.id, score));
            }
            reached < MARKS_HOURS.len()
        });
        due
    }
}
