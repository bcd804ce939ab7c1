//! The outcome memory of seed 003 on the tick's side: the rows a directional proposal writes at
//! decision time ([`decision_rows`], inside [`run_tick`](crate::run_tick)), and the live
//! scorer's driver ([`score_due_outcomes`], off the tick path). The backtest (the `backtest`
//! crate) scores inside its loop instead, with the same [`outcomes::score_outcome`].

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use db::{OutcomeStore, TickRecord};
use outcomes::{
    MarketSnapshot, OutcomeScore, OutcomeVerdict, TradeOutcome, bars_needed,
    compute_indicators_with_regime, direction_of, market_snapshot_id, outcome_id, score_outcome,
};
use rust_decimal::Decimal;
use tools::{DataError, MarketData, ToolContext};
use types::{Bar, Interval, ProposedAction, RegimeTag, Verdict, classify_regime};
use uuid::Uuid;

use crate::{TickDeployment, TickError};

// The stored reason is the proposal's: one bound for both.
const _: () = assert!(outcomes::MAX_REASON_CHARS == tools::MAX_REASON_CHARS);

/// The market snapshot and the outcome row of a directional proposal (`open_long`,
/// `open_short`) at the tick, executed or rejected; `None` for any other proposal, a no-op
/// verdict, or a symbol without a mark (no bar of it closed by the tick: there is no entry
/// price to score against).
///
/// The indicators read `bars_needed(interval)` bars of the symbol and of the skill's reference
/// symbol (`context.memory.referenceSymbol`), closed by the tick; `market_condition` is the
/// regime tag the tick computed for the symbol (the one the prompt shows). The symbol's bars
/// are read here, on the tick's path, either way (a failing read fails the tick before any
/// order goes out). With `later`, the indicators are left to [`PendingSnapshot::finish_into`],
/// which reads the same bars again from the same source: nothing the tick or a later one reads
/// depends on them, and the backtest's write-behind computes them on its writer's thread.
#[allow(clippy::too_many_arguments)] // the tick's values it reads, and where the work goes
pub(crate) fn decision_rows(
    deployment: &TickDeployment,
    ctx: &ToolContext,
    decision_snapshot_id: Uuid,
    proposal: Option<&ProposedAction>,
    verdict: &Verdict,
    marks: &BTreeMap<String, Decimal>,
    regimes: &BTreeMap<String, RegimeTag>,
    later: bool,
) -> Result<Option<(PendingSnapshot, TradeOutcome)>, TickError> {
    let Some(p) = proposal else {
        return Ok(None);
    };
    let Some(direction) = direction_of(p) else {
        return Ok(None);
    };
    let verdict = match verdict {
        Verdict::Executed { .. } => OutcomeVerdict::Executed,
        Verdict::Rejected { .. } => OutcomeVerdict::Rejected,
        Verdict::NoOp { .. } => return Ok(None),
    };
    let Some(entry_price) = marks.get(&p.symbol).copied().filter(|m| *m > Decimal::ZERO) else {
        return Ok(None);
    };
    let skill = deployment.skill.as_ref();
    let interval = skill.context.bars_interval;
    let need = bars_needed(interval);
    let bars = agent_runtime::context::closed_bars_window(ctx, &p.symbol, interval, need).map_err(
        |source| TickError::Market {
            symbol: p.symbol.clone(),
            source,
        },
    )?;
    // The regime the tick tagged (the prompt's), not classified again; a symbol the tick did
    // not tag (a position on a symbol the skill no longer lists) is classified here, over the
    // bars `compute_indicators` would classify (the window holds only bars closed by now).
    let market_condition = match regimes.get(&p.symbol) {
        Some(regime) => *regime,
        None => classify_regime(&bars.bars),
    };
    let rows = SnapshotRows {
        id: market_snapshot_id(decision_snapshot_id, &p.symbol),
        deployment_id: deployment.deployment_id,
        decision_snapshot_id,
        tick_at: ctx.now,
        symbol: p.symbol.clone(),
        reference_symbol: skill.context.memory.reference_symbol.clone(),
        interval,
        need,
        market_condition,
    };
    let snapshot_id = rows.id;
    let snapshot = PendingSnapshot(if later {
        Pending::Later(Box::new((rows, Arc::clone(&ctx.market))))
    } else {
        let indicators = rows.indicators(&bars.bars, &*ctx.market);
        Pending::Computed(Box::new(rows.snapshot(indicators)))
    });
    let outcome = TradeOutcome {
        id: outcome_id(decision_snapshot_id),
        deployment_id: deployment.deployment_id,
        decision_snapshot_id,
        snapshot_id,
        tick_at: ctx.now,
        symbol: p.symbol.clone(),
        direction,
        confidence: p.confidence,
        entry_price,
        predicted_stop: p.stop,
        predicted_target: p.target,
        verdict,
        reason: Some(p.reason.clone()).filter(|r| !r.trim().is_empty()),
        market_condition,
        score: OutcomeScore::default(),
    };
    Ok(Some((snapshot, outcome)))
}

/// The market snapshot of a tick's directional decision, as the tick hands it to its
/// [`Recorder`](crate::Recorder) with the tick's record: computed, or — for a recorder that
/// defers them ([`Recorder::DEFER_SNAPSHOTS`](crate::Recorder::DEFER_SNAPSHOTS)) — its
/// indicators still to be computed from the market-data source the tick read. The record is
/// complete once [`PendingSnapshot::finish_into`] has run.
pub struct PendingSnapshot(Pending);

enum Pending {
    /// The snapshot, indicators and all.
    Computed(Box<MarketSnapshot>),
    /// Its rows, and the source to read the same bars from again (an in-memory source's
    /// window is borrowed, not copied: the ≈400 bars a decision reads are not moved to another
    /// thread's memory).
    Later(Box<(SnapshotRows, Arc<dyn MarketData>)>),
}

impl std::fmt::Debug for PendingSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Pending::Computed(s) => f.debug_tuple("Computed").field(s).finish(),
            Pending::Later(later) => f.debug_tuple("Later").field(&later.0).finish(),
        }
    }
}

/// A market snapshot's ids and what its indicators are computed from.
#[derive(Debug, Clone)]
pub(crate) struct SnapshotRows {
    id: Uuid,
    deployment_id: Uuid,
    decision_snapshot_id: Uuid,
    tick_at: DateTime<Utc>,
    symbol: String,
    reference_symbol: String,
    interval: Interval,
    /// Bars read of the symbol and of the reference ([`bars_needed`]).
    need: usize,
    market_condition: RegimeTag,
}

impl SnapshotRows {
    /// The indicators from the symbol's `bars` (closed by the tick) and the reference's bars
    /// read from `market` (absent when the symbol is unknown there or the read fails).
    fn indicators(&self, bars: &[Bar], market: &dyn MarketData) -> outcomes::Indicators {
        let reference = agent_runtime::context::closed_bars_window_in(
            market,
            self.tick_at,
            &self.reference_symbol,
            self.interval,
            self.need,
        )
        .ok()
        .filter(|w| !w.bars.is_empty());
        compute_indicators_with_regime(
            bars,
            self.interval,
            self.tick_at,
            reference.as_ref().map(|w| &*w.bars),
            self.market_condition,
        )
    }

    /// The indicators, the symbol's bars read from `market` as the tick read them.
    fn compute(&self, market: &dyn MarketData) -> Result<outcomes::Indicators, DataError> {
        let bars = agent_runtime::context::closed_bars_window_in(
            market,
            self.tick_at,
            &self.symbol,
            self.interval,
            self.need,
        )?;
        Ok(self.indicators(&bars.bars, market))
    }

    fn snapshot(self, indicators: outcomes::Indicators) -> MarketSnapshot {
        MarketSnapshot {
            id: self.id,
            deployment_id: self.deployment_id,
            decision_snapshot_id: self.decision_snapshot_id,
            tick_at: self.tick_at,
            symbol: self.symbol,
            reference_symbol: self.reference_symbol,
            indicators,
        }
    }
}

impl PendingSnapshot {
    /// The market snapshot, its indicators computed when they were left for later (the
    /// symbol's bars read again from the source the tick read them from).
    ///
    /// # Errors
    /// [`DataError`] when the source fails to serve the bars it served at the tick.
    fn finish(self) -> Result<MarketSnapshot, DataError> {
        match self.0 {
            Pending::Computed(snapshot) => Ok(*snapshot),
            Pending::Later(later) => {
                let (rows, market) = *later;
                let indicators = rows.compute(&*market)?;
                Ok(rows.snapshot(indicators))
            }
        }
    }

    /// Completes `record` (the tick's, whose `outcomes.snapshots` this belongs in) with the
    /// market snapshot of `pending`.
    ///
    /// # Errors
    /// [`db::DbError::Invalid`] naming the snapshot when its bars cannot be read again from the
    /// source the tick read them from: the record is not written.
    pub fn finish_into(pending: Option<Self>, record: &mut TickRecord) -> Result<(), db::DbError> {
        if let Some(pending) = pending {
            let snapshot = pending.finish().map_err(|e| db::DbError::Invalid {
                what: "market snapshot",
                detail: format!(
                    "the bars of the tick at {} could not be read again: {e}",
                    record.snapshot.tick_at
                ),
            })?;
            record.outcomes.snapshots.push(snapshot);
        }
        Ok(())
    }
}

/// The indicators of `outcome`'s market snapshot computed again, as its tick computed them
/// (the same bars from the same source, `reference_symbol` the skill's, `interval` its bars'):
/// what the backtest's scorer gives the narrative at the 24h mark instead of waiting for the
/// snapshot its writer computes. `None` when the source cannot serve those bars.
#[must_use]
pub fn snapshot_indicators(
    outcome: &TradeOutcome,
    reference_symbol: &str,
    interval: Interval,
    market: &dyn MarketData,
) -> Option<outcomes::Indicators> {
    SnapshotRows {
        id: outcome.snapshot_id,
        deployment_id: outcome.deployment_id,
        decision_snapshot_id: outcome.decision_snapshot_id,
        tick_at: outcome.tick_at,
        symbol: outcome.symbol.clone(),
        reference_symbol: reference_symbol.to_owned(),
        interval,
        need: bars_needed(interval),
        market_condition: outcome.market_condition,
    }
    .compute(market)
    .ok()
}

/// What one run of the live scorer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScoreReport {
    /// Unscored outcomes read (their first mark has passed).
    pub pending: usize,
    /// Rows whose scoring columns changed.
    pub updated: u64,
    /// Of those, scored in full (the 24h mark passed: graded).
    pub finished: usize,
    /// Outcomes whose bars could not be read (left for the next run), with the reason.
    pub skipped: Vec<(Uuid, String)>,
}

/// Why the scorer could not run.
#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    /// Reading the unscored outcomes or writing the scores failed.
    #[error("outcome store: {0}")]
    Store(#[from] db::DbError),
}

/// The live scorer, on its own schedule off the tick path: reads the outcomes whose marks have
/// passed by `now` (at most `limit`), scores each from `market`'s bars closed by `now`
/// ([`outcomes::score_outcome`]: the close of the bar at each mark, never the price when this
/// runs; at the 24h mark with its market snapshot's indicators, read from the store, for the
/// narrative), and writes the scores that changed in one transaction. Bars are read once per
/// symbol and interval.
///
/// `intervals` gives each deployment's bar interval (its skill's `barsInterval`): an outcome is
/// scored from the bars its deployment ticks on, as the backtest scores it, so both record the
/// same. An outcome whose deployment is not in `intervals`, or whose bars cannot be read, is
/// skipped (reported) and tried again at the next run.
///
/// # Errors
/// [`ScoreError::Store`] when the store cannot be read or written (nothing is written then).
pub async fn score_due_outcomes<S: OutcomeStore>(
    store: &S,
    market: &dyn MarketData,
    intervals: &BTreeMap<Uuid, Interval>,
    now: DateTime<Utc>,
    limit: u32,
) -> Result<ScoreReport, ScoreError> {
    let pending = store.unscored_outcomes(now, limit).await?;
    let mut report = ScoreReport {
        pending: pending.len(),
        ..ScoreReport::default()
    };
    // Enough bars to cover the oldest pending outcome's 24 hours, per symbol and interval.
    let mut bars: BTreeMap<(&str, Interval), Result<Vec<types::Bar>, DataError>> = BTreeMap::new();
    let mut scores = Vec::new();
    for o in &pending {
        let Some(interval) = intervals.get(&o.deployment_id).copied() else {
            report.skipped.push((
                o.id,
                format!("no bar interval for deployment {}", o.deployment_id),
            ));
            continue;
        };
        let series = bars
            .entry((o.symbol.as_str(), interval))
            .or_insert_with(|| {
                let span = (now - o.tick_at).num_minutes() / interval.minutes().max(1);
                let limit = usize::try_from(span.max(0))
                    .unwrap_or(usize::MAX)
                    .saturating_add(2);
                market.bars(&o.symbol, interval, now, limit)
            });
        match series {
            Ok(series) => {
                // The narrative's setup: the market snapshot's indicators, at the 24h mark.
                let indicators = if now >= outcomes::final_mark(o.tick_at) {
                    Some(store.market_snapshot(o.snapshot_id).await?.indicators)
                } else {
                    None
                };
                let score = score_outcome(o, indicators.as_ref(), series, interval, now);
                if score != o.score {
                    report.finished += usize::from(score.is_final());
                    scores.push((o.id, score));
                }
            }
            Err(e) => report.skipped.push((o.id, e.to_string())),
        }
    }
    report.updated = store.score_outcomes(&scores).await?;
    Ok(report)
}
