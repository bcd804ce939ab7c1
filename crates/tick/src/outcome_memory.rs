//! The outcome memory of seed 003 on the tick's side: the rows a directional proposal writes at
//! decision time ([`decision_rows`], inside [`run_tick`](crate::run_tick)), and the live
//! scorer's driver ([`score_due_outcomes`], off the tick path). The backtest scores inside its
//! loop instead ([`run_backtest`](crate::backtest::run_backtest)), with the same
//! [`outcomes::score_outcome`].

use std::collections::BTreeMap;

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

use crate::{Deployment, TickError};

// The stored reason is the proposal's: one bound for both.
const _: () = assert!(outcomes::MAX_REASON_CHARS == tools::MAX_REASON_CHARS);

/// The market snapshot and the outcome row of a directional proposal (`open_long`,
/// `open_short`) at the tick, executed or rejected; `None` for any other proposal, a no-op
/// verdict, or a symbol without a mark (no bar of it closed by the tick: there is no entry
/// price to score against).
///
/// The indicators read `bars_needed(interval)` bars of the symbol and of the skill's reference
/// symbol (`context.memory.referenceSymbol`), closed by the tick; `market_condition` is the
/// regime tag the tick computed for the symbol (the one the prompt shows). The bars are read
/// here, on the tick's path (a failing read fails the tick before any order goes out); the
/// indicators themselves are computed by [`PendingSnapshot::finish`], which only the store
/// needs: the backtest's write-behind runs it on its writer thread.
pub(crate) fn decision_rows(
    deployment: &Deployment,
    ctx: &ToolContext,
    decision_snapshot_id: Uuid,
    proposal: Option<&ProposedAction>,
    verdict: &Verdict,
    marks: &BTreeMap<String, Decimal>,
    regimes: &BTreeMap<String, RegimeTag>,
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
    let reference_symbol = skill.context.memory.reference_symbol.clone();
    // The reference's bars are optional: an unknown symbol or a failing read is "absent".
    let reference =
        agent_runtime::context::closed_bars_window(ctx, &reference_symbol, interval, need)
            .ok()
            .filter(|w| !w.bars.is_empty())
            .map(|w| w.bars.into_owned());
    // The regime the tick tagged (the prompt's), not classified again; a symbol the tick did
    // not tag (a position on a symbol the skill no longer lists) is classified here, over the
    // bars `compute_indicators` would classify (the window holds only bars closed by now).
    let market_condition = match regimes.get(&p.symbol) {
        Some(regime) => *regime,
        None => classify_regime(&bars.bars),
    };
    let snapshot = PendingSnapshot {
        id: market_snapshot_id(decision_snapshot_id, &p.symbol),
        deployment_id: deployment.deployment_id,
        decision_snapshot_id,
        tick_at: ctx.now,
        symbol: p.symbol.clone(),
        reference_symbol,
        interval,
        bars: bars.bars.into_owned(),
        reference,
        market_condition,
    };
    let outcome = TradeOutcome {
        id: outcome_id(decision_snapshot_id),
        deployment_id: deployment.deployment_id,
        decision_snapshot_id,
        snapshot_id: snapshot.id,
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

/// A tick's market snapshot before its indicators are computed: its ids and the bars they are
/// computed from, owned (the ≈400 bars of the symbol and of the reference a directional
/// decision reads). Nothing the tick or the next one reads depends on the indicators, so they
/// are computed where the snapshot is stored: inline before a store call, or on the backtest's
/// writer thread (≈230k instructions a decision that the tick's thread no longer runs).
#[derive(Debug, Clone)]
pub(crate) struct PendingSnapshot {
    id: Uuid,
    deployment_id: Uuid,
    decision_snapshot_id: Uuid,
    tick_at: DateTime<Utc>,
    symbol: String,
    reference_symbol: String,
    interval: Interval,
    bars: Vec<Bar>,
    reference: Option<Vec<Bar>>,
    market_condition: RegimeTag,
}

impl PendingSnapshot {
    /// The market snapshot, its indicators computed
    /// ([`compute_indicators_with_regime`] over the bars read at the tick).
    pub(crate) fn finish(self) -> MarketSnapshot {
        let indicators = compute_indicators_with_regime(
            &self.bars,
            self.interval,
            self.tick_at,
            self.reference.as_deref(),
            self.market_condition,
        );
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

    /// Completes `record` (the tick's, whose `outcomes.snapshots` this belongs in) with the
    /// market snapshots of `pending`.
    pub(crate) fn finish_into(pending: Option<Self>, record: &mut TickRecord) {
        record
            .outcomes
            .snapshots
            .extend(pending.map(PendingSnapshot::finish));
    }
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
/// runs), and writes the scores that changed in one transaction. Bars are read once per symbol
/// and interval.
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
                let score = score_outcome(o, series, interval, now);
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
