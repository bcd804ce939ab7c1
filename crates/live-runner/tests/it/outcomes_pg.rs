//! The outcome memory (seed 003) live: a paper deployment's directional proposals are recorded
//! with their ticks (a market snapshot each, over the bars a backtest would use), and
//! `live_runner::outcomes::score_outcomes` scores them later from candles, exactly as the pure
//! scorer does from the bars at the marks.

use crate::common;

use chrono::Duration;
use common::{hyperliquid_mock, postgres, runner, t};
use db::{OutcomeStore, TickStore};
use live_runner::admin::{self, DeployRequest};
use live_runner::test_support::paper_deploy;
use outcomes::{OutcomeScore, TradeOutcome, final_mark, score_outcome};
use types::{Interval, OrderAction};
use uuid::Uuid;

#[tokio::test]
async fn live_ticks_record_outcomes_and_the_scorer_grades_them_from_candles() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("skill");
    let first_tick = t("2026-06-04T10:00:00Z");
    let d = admin::deploy(
        &pg.store,
        &skill,
        &DeployRequest {
            id: Some(Uuid::from_u128(0x0dd)),
            ..paper_deploy(Uuid::from_u128(0x0a11ce))
        },
        first_tick - Duration::minutes(30),
    )
    .await
    .expect("deploy");
    let hours = 30;
    for h in 0..hours {
        let r = runner(
            &pg,
            &hl,
            first_tick + Duration::hours(h),
            "outcomes",
            1,
            None,
        )
        .await;
        r.run(std::future::pending()).await.expect("run");
    }
    let last_tick = first_tick + Duration::hours(hours - 1);

    let snapshots = pg
        .store
        .list_snapshots(d.id, 1000)
        .await
        .expect("snapshots");
    assert_eq!(snapshots.len(), usize::try_from(hours).unwrap());
    let directional = snapshots
        .iter()
        .filter(|s| {
            s.proposal
                .as_ref()
                .is_some_and(|p| matches!(p.action, OrderAction::OpenLong | OrderAction::OpenShort))
        })
        .count();
    let recorded = pg.store.outcomes(d.id, 1000).await.expect("outcomes");
    assert!(directional >= 2, "the zigzag crosses: {directional}");
    assert_eq!(
        recorded.len(),
        directional,
        "one outcome per directional proposal"
    );
    for o in &recorded {
        assert!(o.score.is_empty(), "nothing scored on the tick path");
        let m = pg
            .store
            .market_snapshot(o.snapshot_id)
            .await
            .expect("snapshot");
        // BTC is its own reference: with the indicator window fetched, correlation is 1.
        let c = m
            .indicators
            .btc_correlation
            .expect("correlation over 404 bars");
        assert!((c - 1.0).abs() < 1e-9, "correlation {c}");
        assert!(
            m.indicators.rsi_4h.is_some(),
            "4h RSI from the resampled bars"
        );
    }

    // The scorer, a day after the last tick: everything is past its 24h mark.
    let now = last_tick + Duration::hours(25);
    let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri()))
        .expect("info client");
    let report = live_runner::outcomes::score_outcomes(&pg.store, &info, now, 1000)
        .await
        .expect("score");
    assert_eq!(report.pending, directional);
    assert_eq!(report.finished, directional);
    assert!(report.skipped.is_empty());
    let candles: Vec<types::Bar> = info
        .candle_snapshot("BTC", Interval::H1, first_tick - Duration::hours(2), now)
        .await
        .expect("candles")
        .into_iter()
        .filter(|b| b.close_time(Interval::H1) <= now)
        .collect();
    for o in pg.store.outcomes(d.id, 1000).await.expect("outcomes") {
        let fresh = TradeOutcome {
            score: OutcomeScore::default(),
            ..o.clone()
        };
        let snapshot = pg
            .store
            .market_snapshot(o.snapshot_id)
            .await
            .expect("snapshot");
        assert_eq!(
            o.score,
            score_outcome(
                &fresh,
                Some(&snapshot.indicators),
                &candles,
                Interval::H1,
                now
            )
        );
        assert!(o.score.outcome_grade.is_some() && final_mark(o.tick_at) <= now);
    }
    // Scored in full: a second run finds nothing due.
    let again = live_runner::outcomes::score_outcomes(&pg.store, &info, now, 1000)
        .await
        .expect("score");
    assert_eq!((again.pending, again.updated), (0, 0));
}
