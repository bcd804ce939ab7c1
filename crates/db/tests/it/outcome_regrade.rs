//! Re-grading stored outcomes (`OutcomeStore::regrade_outcomes`) on both backends: grades and
//! narratives written under an earlier grade table are computed again from the stored figures,
//! the full-text index follows the new narratives, and a second run changes nothing.

mod cases {
    use db::test_support::{at, record_sample_outcome, seed};
    use db::{MemoryScope, Regraded, Storage};
    use outcomes::{FirstHit, Grade, OutcomeScore, SearchQuery, TradeOutcome};
    use rust_decimal_macros::dec;

    /// What the scorer stored before seed 003's order: entry 65,000 long, stop 64,500, target
    /// 66,500; `old` the grade and narrative of that time (no `Hit:` line).
    fn stored(first: FirstHit, price_24h: rust_decimal::Decimal, old: Grade) -> OutcomeScore {
        OutcomeScore {
            price_24h: Some(price_24h),
            // (price_24h − 65,000) × 100 / 65,000, four decimals.
            pnl_percent_24h: Some(
                ((price_24h - dec!(65000)) * dec!(100) / dec!(65000)).round_dp(4),
            ),
            hit_target: Some(first == FirstHit::Target),
            hit_stop: Some(first == FirstHit::Stop),
            first_hit: Some(first),
            max_favorable: Some(dec!(66600)),
            max_adverse: Some(if first == FirstHit::Stop {
                dec!(64500)
            } else {
                dec!(64900)
            }),
            outcome_grade: Some(old),
            scored_at: Some(at(24 * 60)),
            narrative: Some(format!(
                "BTC long - Grade {g}\nSignal: long at 65,000 (conf: 70)\n\
                 Predicted: TP 66,500, SL 64,500\nGrade: {g}\nConditions: trending_down",
                g = old.as_str()
            )),
            ..OutcomeScore::default()
        }
    }

    fn search(text: &str) -> SearchQuery {
        SearchQuery {
            as_of: at(48 * 60),
            text: text.into(),
            limit: 10,
        }
    }

    pub(crate) async fn regrading_rewrites_grades_narratives_and_their_search<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        let record = async |minutes: i64| -> TradeOutcome {
            record_sample_outcome(s, d, at(minutes)).await.unwrap()
        };
        let (stopped, target, pending) = (record(0).await, record(60).await, record(120).await);
        // The stop first, 24h at 65,325: (65,325 − 65,000) × 100 / 65,000 = +0.5 % — graded C
        // when B, C, D came before F; F now.
        // The target first, 24h at 66,000: +1.5385 % — A then and now; only its text changes.
        // The third has its 1h mark only: not scored in full, left alone.
        s.score_outcomes(&[
            (stopped.id, stored(FirstHit::Stop, dec!(65325), Grade::C)),
            (target.id, stored(FirstHit::Target, dec!(66000), Grade::A)),
            (
                pending.id,
                OutcomeScore {
                    price_1h: Some(dec!(65100)),
                    pnl_percent_1h: Some(dec!(0.1538)),
                    ..OutcomeScore::default()
                },
            ),
        ])
        .await
        .unwrap();
        let scope = MemoryScope::Deployment(d);
        assert!(
            s.search_memory(scope, &search("stop"))
                .await
                .unwrap()
                .hits
                .is_empty(),
            "the old narratives never say stop"
        );

        assert_eq!(
            s.regrade_outcomes().await.unwrap(),
            Regraded {
                scored: 2,
                changed: 2
            }
        );
        let now_stopped = s.outcome(stopped.id).await.unwrap();
        assert_eq!(now_stopped.score.outcome_grade, Some(Grade::F));
        assert_eq!(
            now_stopped.score.narrative.as_deref(),
            Some(
                outcomes::narrative(
                    &now_stopped,
                    &now_stopped.score,
                    Some(
                        &s.market_snapshot(now_stopped.snapshot_id)
                            .await
                            .unwrap()
                            .indicators
                    )
                )
                .as_str()
            )
        );
        assert_eq!(
            now_stopped.score.narrative.as_deref(),
            Some(
                "BTC long - Grade F\nSignal: long at 65,000 (conf: 70)\n\
                 Predicted: TP 66,500, SL 64,500\nActual 24h: 65,325 (+0.5%)\n\
                 Hit: stop first\nGrade: F\nConditions: trending_down\n\
                 Setup: RSI oversold + volume spike + MACD bearish + strong trend\n\
                 Reason: Oversold bounce at support"
            )
        );
        let now_target = s.outcome(target.id).await.unwrap();
        assert_eq!(now_target.score.outcome_grade, Some(Grade::A));
        assert!(
            now_target
                .score
                .narrative
                .as_deref()
                .is_some_and(|n| n.contains("\nHit: target first\n")),
            "{:?}",
            now_target.score.narrative
        );
        // Everything but the grade and the narrative is as stored.
        let mut figures = stored(FirstHit::Stop, dec!(65325), Grade::F);
        figures.narrative.clone_from(&now_stopped.score.narrative);
        assert_eq!(now_stopped.score, figures);
        assert_eq!(s.outcome(pending.id).await.unwrap().score.scored_at, None);

        // The full-text index follows: "stop" finds the outcome that hit its stop, "target"
        // the one that hit its target, each alone.
        let ids = |hits: Vec<outcomes::MemoryHit>| hits.iter().map(|h| h.id).collect::<Vec<_>>();
        assert_eq!(
            ids(s.search_memory(scope, &search("stop")).await.unwrap().hits),
            vec![stopped.id]
        );
        assert_eq!(
            ids(s
                .search_memory(scope, &search("target"))
                .await
                .unwrap()
                .hits),
            vec![target.id]
        );

        // A second run finds nothing to change.
        assert_eq!(
            s.regrade_outcomes().await.unwrap(),
            Regraded {
                scored: 2,
                changed: 0
            }
        );
    }
}

crate::common::on_every_backend!(
    outcome_regrade;
    regrading_rewrites_grades_narratives_and_their_search,
);
