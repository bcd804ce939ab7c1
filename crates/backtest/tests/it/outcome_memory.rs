//! The outcome memory (seed 003) in a backtest over the shipped EURUSD bars: every directional
//! proposal gets a market snapshot and an outcome at decision time, scored inside the loop at
//! the first tick at or after each mark; the live scorer's driver records the same scores.

use crate::common;

use agent_runtime::builtin_model;
use backtest::{BacktestInput, register};
use chrono::{DateTime, Duration, Utc};
use db::{OutcomeStore, SqliteStore, TickStore};
use outcomes::{
    OutcomeScore, TradeOutcome, bars_needed, compute_indicators_with_regime, final_mark,
    score_outcome,
};
use rust_decimal::Decimal;
use tick::score_due_outcomes;
use types::{Interval, OrderAction, Verdict};

/// Up to 2017-06-28 08:00: the proposal of 2017-06-27 09:00 is within 24h of the last tick.
const BARS: usize = 1199;

async fn run(input: &BacktestInput, store: &SqliteStore) -> Vec<DateTime<Utc>> {
    let first = input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
    register(store, input, serde_json::json!({"name": "eurusd"}), first)
        .await
        .expect("register");
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let result = common::run_stored(input, model.as_ref(), store)
        .await
        .expect("backtest");
    result.points.iter().map(|p| p.tick_at).collect()
}

fn unscored(o: &TradeOutcome) -> TradeOutcome {
    TradeOutcome {
        score: OutcomeScore::default(),
        ..o.clone()
    }
}

#[tokio::test]
async fn every_directional_proposal_gets_an_outcome_scored_unless_within_24h_of_the_end() {
    let bars = common::eurusd(BARS);
    let input = common::eurusd_input(&bars, Decimal::ZERO, Decimal::ZERO);
    let store = SqliteStore::connect("sqlite::memory:")
        .await
        .expect("store");
    let ticks = run(&input, &store).await;
    let last_tick = *ticks.last().expect("ticks");
    let d = input.deployment.deployment_id;

    let mut snapshots = store.list_snapshots(d, 100_000).await.expect("snapshots");
    snapshots.sort_by_key(|s| s.tick_at);
    let directional: Vec<_> = snapshots
        .iter()
        .filter(|s| {
            s.proposal
                .as_ref()
                .is_some_and(|p| matches!(p.action, OrderAction::OpenLong | OrderAction::OpenShort))
        })
        .collect();
    let mut outcomes = store.outcomes(d, 1000).await.expect("outcomes");
    outcomes.sort_by_key(|o| o.tick_at);
    assert!(
        directional.len() > 20,
        "the example trades: {}",
        directional.len()
    );
    assert_eq!(
        outcomes
            .iter()
            .map(|o| o.decision_snapshot_id)
            .collect::<Vec<_>>(),
        directional.iter().map(|s| s.id).collect::<Vec<_>>(),
        "one outcome per directional proposal, none for any other tick"
    );

    let all = input.market.all_bars("EURUSD", Interval::H1);
    let (mut scored, mut pending) = (0, 0);
    for (o, s) in outcomes.iter().zip(&directional) {
        let p = s.proposal.as_ref().expect("proposal");
        assert_eq!(o.confidence, p.confidence);
        assert_eq!((o.predicted_stop, o.predicted_target), (p.stop, p.target));
        let executed = matches!(s.verdict, Verdict::Executed { .. });
        assert_eq!(
            o.verdict.as_str(),
            if executed { "executed" } else { "rejected" }
        );
        // The entry is the mark: the close of the bar that closed at the tick.
        let bar = all
            .iter()
            .find(|b| b.close_time(Interval::H1) == o.tick_at)
            .expect("the tick's bar");
        assert_eq!(o.entry_price, bar.close);
        let market = store
            .market_snapshot(o.snapshot_id)
            .await
            .expect("market snapshot");
        assert_eq!(
            (market.tick_at, market.symbol.as_str()),
            (o.tick_at, "EURUSD")
        );
        assert_eq!(market.reference_symbol, "BTC");
        assert_eq!(
            market.indicators.btc_correlation, None,
            "no BTC bars in this run"
        );
        // Computed by the tick from the bars it read: those closed by the tick, the latest
        // `bars_needed`.
        let closed = all.partition_point(|b| b.close_time(Interval::H1) <= o.tick_at);
        let window = &all[closed.saturating_sub(bars_needed(Interval::H1))..closed];
        assert_eq!(
            market.indicators,
            compute_indicators_with_regime(
                window,
                Interval::H1,
                o.tick_at,
                None,
                o.market_condition
            ),
            "indicators at {}",
            o.tick_at
        );
        assert!(market.indicators.rsi_1h.is_some());

        if final_mark(o.tick_at) <= last_tick {
            // Scored at the first tick at or after its 24h mark, exactly as the pure scorer
            // scores it from the bars at that time.
            let at = *ticks
                .iter()
                .find(|t| **t >= final_mark(o.tick_at))
                .expect("a tick after the mark");
            assert_eq!(o.score.scored_at, Some(at), "outcome at {}", o.tick_at);
            // The narrative's setup from the stored snapshot's indicators: the backtest's
            // scorer computed the same ones again.
            assert_eq!(
                o.score,
                score_outcome(
                    &unscored(o),
                    Some(&market.indicators),
                    all,
                    Interval::H1,
                    at
                )
            );
            assert!(
                o.score
                    .narrative
                    .as_deref()
                    .is_some_and(|n| n.contains("\nSetup: ")),
                "{:?}",
                o.score.narrative
            );
            assert!(o.score.outcome_grade.is_some());
            scored += 1;
        } else {
            assert_eq!(
                o.score.scored_at, None,
                "outcome at {} is within 24h of the end",
                o.tick_at
            );
            assert!(o.tick_at > last_tick - Duration::hours(24));
            pending += 1;
        }
    }
    assert!(scored > 20, "{scored} scored");
    assert!(pending >= 1, "the run ends within 24h of a proposal");
    eprintln!(
        "{} outcomes: {scored} scored, {pending} within 24h of the end",
        outcomes.len()
    );
}

#[tokio::test]
async fn the_live_scorer_records_what_the_backtest_scored() {
    let bars = common::eurusd(BARS);
    let input = common::eurusd_input(&bars, Decimal::ZERO, Decimal::ZERO);
    let store = SqliteStore::connect("sqlite::memory:")
        .await
        .expect("store");
    let ticks = run(&input, &store).await;
    let last_tick = *ticks.last().expect("ticks");
    let d = input.deployment.deployment_id;
    let by_backtest = store.outcomes(d, 1000).await.expect("outcomes");

    // Forget every score, then let the live driver score at the last tick's time.
    sqlx::query(
        "UPDATE trade_outcomes SET price_1h = NULL, price_4h = NULL, price_24h = NULL, \
         pnl_percent_1h = NULL, pnl_percent_4h = NULL, pnl_percent_24h = NULL, hit_target = NULL, \
         hit_stop = NULL, first_hit = NULL, max_favorable = NULL, max_adverse = NULL, \
         outcome_grade = NULL, scored_at = NULL",
    )
    .execute(store.pool())
    .await
    .expect("reset scores");
    let intervals = std::collections::BTreeMap::from([(d, Interval::H1)]);
    let report = score_due_outcomes(&store, input.market.as_ref(), &intervals, last_tick, 1000)
        .await
        .expect("live scorer");
    assert_eq!(report.pending, by_backtest.len());
    assert!(report.skipped.is_empty());
    let by_live = store.outcomes(d, 1000).await.expect("outcomes");
    assert_eq!(by_live.len(), by_backtest.len());
    for (live, sim) in by_live.iter().zip(&by_backtest) {
        assert_eq!(live.id, sim.id);
        // Same prices, hits, excursions and grade; only the time the scorer ran differs.
        let strip = |s: &OutcomeScore| OutcomeScore {
            scored_at: None,
            ..s.clone()
        };
        assert_eq!(
            strip(&live.score),
            strip(&sim.score),
            "outcome at {}",
            live.tick_at
        );
        assert_eq!(
            live.score.scored_at.is_some(),
            sim.score.scored_at.is_some()
        );
    }
    assert_eq!(
        report.finished,
        by_backtest.iter().filter(|o| o.score.is_final()).count()
    );
    // A second run changes nothing it already scored in full.
    let again = score_due_outcomes(&store, input.market.as_ref(), &intervals, last_tick, 1000)
        .await
        .expect("live scorer");
    assert_eq!(again.finished, 0);
}

/// A tick recorded straight to a store computes its market snapshots itself; the backtest's
/// write-behind leaves them to its writer's thread, which reads the same bars again. Both
/// store the same snapshots for the same decisions.
#[tokio::test]
async fn a_ticks_market_snapshots_are_the_same_computed_by_the_tick_or_by_the_writer() {
    use execution_engine::PaperBroker;
    use tick::{TickState, run_tick};

    let bars = common::eurusd(700);
    let input = common::eurusd_input(&bars, Decimal::ZERO, Decimal::ZERO);
    let d = &input.deployment;
    let by_writer = SqliteStore::connect("sqlite::memory:")
        .await
        .expect("store");
    run(&input, &by_writer).await;

    let by_tick = SqliteStore::connect("sqlite::memory:")
        .await
        .expect("store");
    let first = bars[0].close_time(Interval::H1);
    register(
        &by_tick,
        &input,
        serde_json::json!({"name": "eurusd"}),
        first,
    )
    .await
    .expect("register");
    let model = builtin_model(&d.skill.model, &d.skill).expect("model");
    let mut broker = PaperBroker::new(input.broker.clone()).expect("broker");
    let mut state = TickState::new(d, input.broker.initial_equity_usd, first);
    for bar in &bars {
        let at = bar.close_time(Interval::H1);
        broker.apply_bar("EURUSD", bar, at).expect("bar");
        let ctx = common::trade_ctx(&input.deployment, &input.market, at);
        run_tick(d, &ctx, model.as_ref(), &mut broker, &mut state, &by_tick)
            .await
            .expect("tick");
    }

    let snapshots = |store: SqliteStore| async move {
        let mut all = Vec::new();
        for o in store
            .outcomes(d.deployment_id, 1000)
            .await
            .expect("outcomes")
        {
            all.push(
                store
                    .market_snapshot(o.snapshot_id)
                    .await
                    .expect("snapshot"),
            );
        }
        all.sort_by_key(|s| s.tick_at);
        all
    };
    let (tick, writer) = (snapshots(by_tick).await, snapshots(by_writer).await);
    let common: Vec<_> = writer
        .iter()
        .filter_map(|w| tick.iter().find(|t| t.id == w.id).map(|t| (t, w)))
        .collect();
    assert!(
        common.len() > 10 && common.len() + 2 >= writer.len(),
        "the same decisions on both paths: {} of {} and {}",
        common.len(),
        writer.len(),
        tick.len()
    );
    for (t, w) in common {
        assert_eq!(t, w, "the snapshot of the tick at {}", w.tick_at);
    }
}
