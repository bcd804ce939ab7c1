//! The outcome memory of seed 003 on the tick's side: the rows a directional proposal writes at
//! decision time ([`decision_rows`], inside [`run_tick`](crate::run_tick)), and the live
//! scorer's driver ([`score_due_outcomes`], off the tick path). The backtest scores inside its
//! loop instead ([`run_backtest`](crate::backtest::run_backtest)), with the same
//! [`outcomes::score_outcome`].

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use db::OutcomeStore;
use outcomes::{
    Indicators, MarketSnapshot, OutcomeScore, OutcomeVerdict, TradeOutcome, bars_needed,
    compute_indicators, compute_indicators_with_regime, direction_of, market_snapshot_id,
    outcome_id, score_outcome,
};
use rust_decimal::Decimal;
use tools::{DataError, MarketData, SeriesOrigin, ToolContext};
use types::{Interval, ProposedAction, RegimeTag, Verdict};
use uuid::Uuid;

use crate::{Deployment, TickError};

// The stored reason is the proposal's: one bound for both.
const _: () = assert!(outcomes::MAX_REASON_CHARS == tools::MAX_REASON_CHARS);

/// A directional proposal's outcome-memory rows ([`decision_rows`]): the outcome row, and its
/// market snapshot, computed or to be computed where the tick is written.
pub(crate) struct DecisionRows {
    pub(crate) snapshot: SnapshotRow,
    pub(crate) outcome: TradeOutcome,
}

/// A tick's market snapshot.
pub(crate) enum SnapshotRow {
    /// Computed on the tick's thread.
    Computed(MarketSnapshot),
    /// Its indicators computed when the tick is written ([`DeferredSnapshot::compute`]).
    Deferred(DeferredSnapshot),
}

/// A market snapshot whose indicators are computed after the tick, where a writer that buffers
/// ticks writes it ([`db::TickStore::record_tick_completing`]): they are ≈280k instructions a
/// directional proposal (≈745 bars each) that only the store reads, and the tick's thread is a
/// backtest's longer one. Made only when the market-data source vouches for the windows it
/// served ([`tools::SeriesOrigin`]: a series' bars never change under its id), so the bars
/// read again later are the tick's, bit for bit; [`compute`](DeferredSnapshot::compute)
/// checks it.
pub(crate) struct DeferredSnapshot {
    market: Arc<dyn MarketData>,
    interval: Interval,
    need: usize,
    regime: RegimeTag,
    /// The symbol's window as the tick read it: where it starts in its series, and its length.
    window: (SeriesOrigin, usize),
    /// The reference symbol's window, `None` when the tick found it absent.
    reference: Option<(SeriesOrigin, usize)>,
    head: SnapshotHead,
}

/// A market snapshot's fields but its indicators.
struct SnapshotHead {
    id: Uuid,
    deployment_id: Uuid,
    decision_snapshot_id: Uuid,
    tick_at: DateTime<Utc>,
    symbol: String,
    reference_symbol: String,
}

impl SnapshotHead {
    fn with(self, indicators: Indicators) -> MarketSnapshot {
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

impl DeferredSnapshot {
    /// The market snapshot, its indicators computed from the bars the tick read.
    ///
    /// # Errors
    /// When the source no longer serves the same windows (a source that breaks the
    /// [`tools::SeriesOrigin`] contract), naming the symbol and the tick.
    pub(crate) fn compute(self) -> Result<MarketSnapshot, String> {
        let DeferredSnapshot {
            market,
            interval,
            need,
            regime,
            window,
            reference,
            head,
        } = self;
        let read = |symbol: &str, (origin, len): (SeriesOrigin, usize)| {
            let w = agent_runtime::context::closed_bars_window_in(
                &*market,
                head.tick_at,
                symbol,
                interval,
                need,
            )
            .map_err(|e| e.to_string())?;
            if w.origin == Some(origin) && w.bars.len() == len {
                Ok(w.bars)
            } else {
                Err(format!(
                    "the bars of {symbol} at {} changed between the tick and its write \
                     (series {} from bar {}, {len} bars, then {:?}, {} bars)",
                    head.tick_at,
                    origin.series,
                    origin.start,
                    w.origin,
                    w.bars.len()
                ))
            }
        };
        let bars = read(&head.symbol, window)?;
        let reference_bars = match reference {
            Some(r) => Some(read(&head.reference_symbol, r)?),
            None => None,
        };
        let indicators = compute_indicators_with_regime(
            &bars,
            interval,
            head.tick_at,
            reference_bars.as_deref(),
            regime,
        );
        Ok(head.with(indicators))
    }
}

/// The market snapshot and the outcome row of a directional proposal (`open_long`,
/// `open_short`) at the tick, executed or rejected; `None` for any other proposal, a no-op
/// verdict, or a symbol without a mark (no bar of it closed by the tick: there is no entry
/// price to score against).
///
/// The indicators read `bars_needed(interval)` bars of the symbol and of the skill's reference
/// symbol (`context.memory.referenceSymbol`), closed by the tick; `market_condition` is the
/// regime tag the tick computed for the symbol (the one the prompt shows). With `defer`, the
/// indicators are left to [`DeferredSnapshot::compute`] when the source vouches for both
/// windows and the tick tagged the symbol's regime; otherwise they are computed here.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decision_rows(
    deployment: &Deployment,
    ctx: &ToolContext,
    decision_snapshot_id: Uuid,
    proposal: Option<&ProposedAction>,
    verdict: &Verdict,
    marks: &BTreeMap<String, Decimal>,
    regimes: &BTreeMap<String, RegimeTag>,
    defer: bool,
) -> Result<Option<DecisionRows>, TickError> {
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
            .filter(|w| !w.bars.is_empty());
    let regime = regimes.get(&p.symbol).copied();
    let head = SnapshotHead {
        id: market_snapshot_id(decision_snapshot_id, &p.symbol),
        deployment_id: deployment.deployment_id,
        decision_snapshot_id,
        tick_at: ctx.now,
        symbol: p.symbol.clone(),
        reference_symbol,
    };
    // Deferred only when both windows can be found again as they are: vouched for by the
    // source (the reference's, when present), and the regime known without the bars.
    let vouched = |w: &tools::BarsWindow<'_>| w.origin.map(|o| (o, w.bars.len()));
    let deferred = match (defer, regime, vouched(&bars)) {
        (true, Some(regime), Some(window)) => match &reference {
            None => Some((regime, window, None)),
            Some(r) => vouched(r).map(|r| (regime, window, Some(r))),
        },
        _ => None,
    };
    let snapshot = match deferred {
        Some((regime, window, reference)) => SnapshotRow::Deferred(DeferredSnapshot {
            market: Arc::clone(&ctx.market),
            interval,
            need,
            regime,
            window,
            reference,
            head,
        }),
        None => {
            // The regime the tick tagged (the prompt's), not classified again.
            let reference = reference.as_ref().map(|w| &*w.bars);
            let indicators = match regime {
                Some(regime) => {
                    compute_indicators_with_regime(&bars.bars, interval, ctx.now, reference, regime)
                }
                None => compute_indicators(&bars.bars, interval, ctx.now, reference),
            };
            SnapshotRow::Computed(head.with(indicators))
        }
    };
    let (snapshot_id, market_condition) = match &snapshot {
        SnapshotRow::Computed(s) => (s.id, s.indicators.market_condition),
        SnapshotRow::Deferred(d) => (d.head.id, d.regime),
    };
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
    Ok(Some(DecisionRows { snapshot, outcome }))
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rust_decimal_macros::dec;
    use tools::{BarsWindow, Preloaded, RunMode};
    use types::{Bar, OrderAction};

    use super::*;

    /// The example skill's deployment, the shipped EURUSD bars up to bar 1,200, and a tick at
    /// the close of bar 1,000 proposing to open long.
    struct Case {
        deployment: Deployment,
        bars: Vec<Bar>,
        now: DateTime<Utc>,
        proposal: ProposedAction,
        marks: BTreeMap<String, Decimal>,
    }

    fn case() -> Case {
        let skill = skill_schema::parse_skill(
            include_str!("../../../examples/skills/eurusd-sma-cross.yaml"),
            skill_schema::Format::Yaml,
        )
        .expect("skill")
        .skill;
        let mut bars = market_data::load_bars(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/data/EURUSD.csv"
        )))
        .expect("bars");
        bars.truncate(1_200);
        let now = bars[1_000].close_time(Interval::H1);
        let marks = BTreeMap::from([("EURUSD".to_owned(), bars[1_000].close)]);
        Case {
            deployment: Deployment {
                user_id: Uuid::from_u128(1),
                deployment_id: Uuid::from_u128(2),
                skill_id: Uuid::from_u128(3),
                skill_version: 1,
                skill: Arc::new(skill),
                reflector: Err("none".into()),
            },
            bars,
            now,
            proposal: ProposedAction {
                action: OrderAction::OpenLong,
                symbol: "EURUSD".into(),
                size_usd: Some(dec!(1000)),
                leverage: None,
                reason: "fast above slow".into(),
                confidence: Some(60),
                stop: None,
                target: None,
            },
            marks,
        }
    }

    fn rows(
        c: &Case,
        market: Arc<dyn MarketData>,
        regime: Option<RegimeTag>,
        defer: bool,
    ) -> DecisionRows {
        let ctx = ToolContext::new(
            c.now,
            RunMode::Trade,
            vec!["EURUSD".into()],
            market,
            Arc::new(Preloaded::new()),
        );
        let regimes = regime
            .map(|r| BTreeMap::from([("EURUSD".to_owned(), r)]))
            .unwrap_or_default();
        decision_rows(
            &c.deployment,
            &ctx,
            Uuid::from_u128(9),
            Some(&c.proposal),
            &Verdict::Executed {
                detail: "filled".into(),
            },
            &c.marks,
            &regimes,
            defer,
        )
        .expect("rows")
        .expect("a directional proposal has rows")
    }

    fn computed(rows: DecisionRows) -> (MarketSnapshot, TradeOutcome) {
        match rows.snapshot {
            SnapshotRow::Computed(s) => (s, rows.outcome),
            SnapshotRow::Deferred(_) => panic!("deferred"),
        }
    }

    /// A source that serves the same bars as its series but, from its `honest`-th read on,
    /// under another series id: it breaks the `SeriesOrigin` contract.
    struct Shifting {
        inner: Preloaded,
        reads: AtomicUsize,
        honest: usize,
    }

    impl MarketData for Shifting {
        fn bars(
            &self,
            symbol: &str,
            interval: Interval,
            closed_by: DateTime<Utc>,
            limit: usize,
        ) -> Result<Vec<Bar>, DataError> {
            self.inner.bars(symbol, interval, closed_by, limit)
        }

        fn bars_window(
            &self,
            symbol: &str,
            interval: Interval,
            closed_by: DateTime<Utc>,
            limit: usize,
        ) -> Result<BarsWindow<'_>, DataError> {
            let mut w = self.inner.bars_window(symbol, interval, closed_by, limit)?;
            if self.reads.fetch_add(1, Ordering::Relaxed) >= self.honest {
                w.origin = w.origin.map(|o| SeriesOrigin {
                    series: o.series + 1_000,
                    ..o
                });
            }
            Ok(w)
        }
    }

    /// Without the `bars_window` override: no origin, nothing vouched for.
    struct Unvouched(Preloaded);

    impl MarketData for Unvouched {
        fn bars(
            &self,
            symbol: &str,
            interval: Interval,
            closed_by: DateTime<Utc>,
            limit: usize,
        ) -> Result<Vec<Bar>, DataError> {
            self.0.bars(symbol, interval, closed_by, limit)
        }
    }

    #[test]
    fn a_deferred_snapshot_computes_what_the_tick_would_have() {
        let c = case();
        let market: Arc<dyn MarketData> =
            Arc::new(Preloaded::new().with_bars("EURUSD", Interval::H1, c.bars.clone()));
        let (now_snapshot, now_outcome) = computed(rows(
            &c,
            Arc::clone(&market),
            Some(RegimeTag::Ranging),
            false,
        ));
        let deferred = rows(&c, market, Some(RegimeTag::Ranging), true);
        assert_eq!(
            deferred.outcome, now_outcome,
            "the outcome row is the tick's"
        );
        let SnapshotRow::Deferred(d) = deferred.snapshot else {
            panic!("a vouched source with a tagged regime defers");
        };
        let later = d.compute().expect("the same windows");
        assert_eq!(later, now_snapshot);
        // Real indicators over 745 bars, the tick's tag kept.
        assert!(later.indicators.rsi_1h.is_some() && later.indicators.trend_strength.is_some());
        assert_eq!(later.indicators.market_condition, RegimeTag::Ranging);
        assert_eq!(now_outcome.snapshot_id, later.id);
    }

    #[test]
    fn a_snapshot_is_computed_on_the_tick_when_its_bars_cannot_be_found_again() {
        let c = case();
        let preloaded = Preloaded::new().with_bars("EURUSD", Interval::H1, c.bars.clone());
        let vouched: Arc<dyn MarketData> = Arc::new(preloaded.clone());
        let (expected, _) = computed(rows(
            &c,
            Arc::clone(&vouched),
            Some(RegimeTag::Ranging),
            false,
        ));
        // No origin: computed now, the same row.
        let unvouched: Arc<dyn MarketData> = Arc::new(Unvouched(preloaded));
        let (snapshot, _) = computed(rows(&c, unvouched, Some(RegimeTag::Ranging), true));
        assert_eq!(snapshot, expected);
        // No regime tagged by the tick: it is classified from the bars, now.
        let (snapshot, outcome) = computed(rows(&c, vouched, None, true));
        assert_eq!(
            outcome.market_condition,
            snapshot.indicators.market_condition
        );
    }

    #[test]
    fn a_source_that_changes_its_bars_under_an_id_fails_the_write_with_the_symbol() {
        let c = case();
        // The tick reads the symbol and the (absent) reference; the write's read is shifted.
        let market = Arc::new(Shifting {
            inner: Preloaded::new().with_bars("EURUSD", Interval::H1, c.bars.clone()),
            reads: AtomicUsize::new(0),
            honest: 2,
        });
        let SnapshotRow::Deferred(d) = rows(&c, market, Some(RegimeTag::Ranging), true).snapshot
        else {
            panic!("deferred");
        };
        let err = d.compute().expect_err("a changed window");
        assert!(
            err.contains("the bars of EURUSD")
                && err.contains("changed between the tick and its write"),
            "{err}"
        );
    }
}
