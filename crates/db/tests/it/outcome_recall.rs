//! The recall memory (seed 003, #15) on both backends: `recall_outcomes` (filters, order,
//! limits, point in time, scope) and `search_memory` (full text over narratives and
//! annotations: stemming, ranking, point in time, scope, hostile texts); and on PostgreSQL,
//! row-level security under both.

mod cases {
    use chrono::{DateTime, Utc};
    use db::test_support::{
        Fixture, at, sample_deployment, sample_open_trade, sample_outcome_rows, sample_snapshot,
        seed, tick_record,
    };
    use db::{
        AnnotationTarget, DbError, MemoryScope, NewAnnotation, OutcomeWrites, Storage, TickRecord,
    };
    use outcomes::{
        FirstHit, Grade, HitKind, MemoryHit, OutcomeScore, RecallQuery, SearchQuery, TradeOutcome,
    };
    use rust_decimal_macros::dec;
    use types::RegimeTag;
    use uuid::Uuid;

    /// Records a tick of `deployment` at `minutes` with a `symbol` outcome in `condition`
    /// (its snapshot's and its own), and an open trade when `trade` is given.
    async fn outcome<S: Storage>(
        s: &S,
        deployment: Uuid,
        minutes: i64,
        symbol: &str,
        condition: RegimeTag,
        trade: Option<&Fixture>,
    ) -> (outcomes::MarketSnapshot, TradeOutcome, Option<Uuid>) {
        let snapshot = sample_snapshot(deployment, at(minutes));
        let (mut market, mut outcome) = sample_outcome_rows(&snapshot);
        market.symbol = symbol.into();
        market.indicators.market_condition = condition;
        outcome.symbol = symbol.into();
        outcome.market_condition = condition;
        let trades: Vec<_> = trade
            .map(|fx| sample_open_trade(fx, at(minutes)))
            .into_iter()
            .collect();
        let trade_id = trades.first().map(|t| t.id);
        s.record_tick(&TickRecord {
            trades,
            outcomes: OutcomeWrites {
                snapshots: vec![market.clone()],
                outcomes: vec![outcome.clone()],
                scores: vec![],
            },
            ..tick_record(snapshot)
        })
        .await
        .unwrap();
        (market, outcome, trade_id)
    }

    /// A full score written at `scored_at`, with `narrative`.
    fn full(scored_at: DateTime<Utc>, narrative: &str) -> OutcomeScore {
        OutcomeScore {
            price_1h: Some(dec!(65100.5)),
            price_4h: Some(dec!(65900)),
            price_24h: Some(dec!(66000)),
            pnl_percent_1h: Some(dec!(0.1546)),
            pnl_percent_4h: Some(dec!(1.3846)),
            pnl_percent_24h: Some(dec!(1.5385)),
            hit_target: Some(true),
            hit_stop: Some(false),
            first_hit: Some(FirstHit::Target),
            max_favorable: Some(dec!(66600)),
            max_adverse: Some(dec!(64900)),
            outcome_grade: Some(Grade::A),
            scored_at: Some(scored_at),
            narrative: Some(narrative.into()),
        }
    }

    /// A second deployment of the fixture's user.
    async fn second_deployment<S: Storage>(s: &S, fx: &Fixture) -> Uuid {
        let d = sample_deployment(fx.user.id, fx.skill.id, 1);
        s.create_deployment(&d).await.unwrap();
        d.id
    }

    fn ids(rows: &[outcomes::RecalledOutcome]) -> Vec<Uuid> {
        rows.iter().map(|r| r.outcome.id).collect()
    }

    fn invalid<T: std::fmt::Debug>(r: Result<T, DbError>, what: &str) {
        match r {
            Err(DbError::Invalid { what: w, .. }) => assert_eq!(w, what),
            other => panic!("expected {what} refused, got {other:?}"),
        }
    }

    pub(super) async fn recall_filters_orders_limits_and_masks_to_its_time<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let other = seed(s).await.unwrap();
        let d = fx.deployment.id;
        let d2 = second_deployment(s, &fx).await;
        let (market, btc0, _) = outcome(s, d, 0, "BTC", RegimeTag::TrendingDown, None).await;
        let (_, eth60, _) = outcome(s, d, 60, "ETH", RegimeTag::Ranging, None).await;
        let (_, btc120, _) = outcome(s, d, 120, "BTC", RegimeTag::Ranging, None).await;
        let (_, mine_elsewhere, _) = outcome(s, d2, 60, "BTC", RegimeTag::Volatile, None).await;
        let (_, theirs, _) =
            outcome(s, other.deployment.id, 60, "BTC", RegimeTag::Ranging, None).await;
        let scored_at = at(24 * 60);
        s.score_outcomes(&[(btc0.id, full(scored_at, "BTC long - Grade A"))])
            .await
            .unwrap();
        let q = |minutes: i64, limit: u32| RecallQuery::new(at(minutes), limit);
        let scope = MemoryScope::Deployment(d);

        // Decided before as_of only (the tick at as_of is out), newest first.
        let rows = s.recall_outcomes(scope, &q(120, 10)).await.unwrap();
        assert_eq!(ids(&rows), vec![eth60.id, btc0.id]);
        assert_eq!(
            rows[1].indicators, market.indicators,
            "the snapshot's indicators"
        );
        assert_eq!(rows[1].outcome.market_condition, RegimeTag::TrendingDown);
        assert_eq!(
            rows[1].outcome.reason.as_deref(),
            Some("Oversold bounce at support")
        );
        let all = ids(&s.recall_outcomes(scope, &q(121, 10)).await.unwrap());
        assert_eq!(all, vec![btc120.id, eth60.id, btc0.id]);
        assert_eq!(
            ids(&s.recall_outcomes(scope, &q(121, 2)).await.unwrap()),
            vec![btc120.id, eth60.id],
            "at most `limit`, the newest"
        );
        // Filters.
        let mut by_symbol = q(121, 10);
        by_symbol.symbol = Some("BTC".into());
        assert_eq!(
            ids(&s.recall_outcomes(scope, &by_symbol).await.unwrap()),
            vec![btc120.id, btc0.id]
        );
        let mut by_condition = q(121, 10);
        by_condition.market_condition = Some(RegimeTag::Ranging);
        assert_eq!(
            ids(&s.recall_outcomes(scope, &by_condition).await.unwrap()),
            vec![btc120.id, eth60.id]
        );
        let mut since = q(121, 10);
        since.since = Some(at(60));
        assert_eq!(
            ids(&s.recall_outcomes(scope, &since).await.unwrap()),
            vec![btc120.id, eth60.id],
            "since is inclusive: the window is [since, as_of)"
        );
        since.symbol = Some("ETH".into());
        since.market_condition = Some(RegimeTag::Ranging);
        assert_eq!(
            ids(&s.recall_outcomes(scope, &since).await.unwrap()),
            vec![eth60.id]
        );

        // Point in time: scored at 24h; a minute before, the marks that had passed only.
        let before = s.recall_outcomes(scope, &q(24 * 60 - 1, 10)).await.unwrap();
        let seen = &before
            .iter()
            .find(|r| r.outcome.id == btc0.id)
            .unwrap()
            .outcome;
        assert_eq!(
            seen.score,
            OutcomeScore {
                price_1h: Some(dec!(65100.5)),
                price_4h: Some(dec!(65900)),
                pnl_percent_1h: Some(dec!(0.1546)),
                pnl_percent_4h: Some(dec!(1.3846)),
                ..OutcomeScore::default()
            },
            "unscored (no grade, no narrative) before scored_at"
        );
        let after = s.recall_outcomes(scope, &q(24 * 60, 10)).await.unwrap();
        let seen = &after
            .iter()
            .find(|r| r.outcome.id == btc0.id)
            .unwrap()
            .outcome;
        assert_eq!(seen.score, full(scored_at, "BTC long - Grade A"));

        // A user's scope: every deployment of theirs (ties by id), no one else's.
        let mut expected_60 = vec![eth60.id, mine_elsewhere.id];
        expected_60.sort();
        let users = ids(&s
            .recall_outcomes(MemoryScope::User(fx.user.id), &q(121, 10))
            .await
            .unwrap());
        assert_eq!(
            users,
            [vec![btc120.id], expected_60, vec![btc0.id]].concat()
        );
        assert!(!users.contains(&theirs.id));
        assert!(
            s.recall_outcomes(MemoryScope::Deployment(Uuid::new_v4()), &q(121, 10))
                .await
                .unwrap()
                .is_empty()
        );
        // Limits.
        invalid(s.recall_outcomes(scope, &q(121, 0)).await, "recall limit");
        invalid(
            s.recall_outcomes(scope, &q(121, 1001)).await,
            "recall limit",
        );
        assert_eq!(
            s.recall_outcomes(scope, &q(121, 1000)).await.unwrap().len(),
            3
        );
    }

    fn search(minutes: i64, text: &str, limit: u32) -> SearchQuery {
        SearchQuery {
            as_of: at(minutes),
            text: text.into(),
            limit,
        }
    }

    fn hit_ids(hits: &[MemoryHit]) -> Vec<Uuid> {
        hits.iter().map(|h| h.id).collect()
    }

    pub(super) async fn search_ranks_narratives_and_annotations_in_scope_and_time<S: Storage>(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let other = seed(s).await.unwrap();
        let d = fx.deployment.id;
        let d2 = second_deployment(s, &fx).await;
        let (_, two, trade) = outcome(s, d, 0, "BTC", RegimeTag::TrendingUp, Some(&fx)).await;
        let (_, one, _) = outcome(s, d, 60, "ETH", RegimeTag::Ranging, None).await;
        let (_, elsewhere, _) = outcome(s, d2, 30, "SOL", RegimeTag::Ranging, None).await;
        let (_, theirs, _) =
            outcome(s, other.deployment.id, 0, "BTC", RegimeTag::Ranging, None).await;
        let day = 24 * 60;
        s.score_outcomes(&[
            (
                two.id,
                full(at(day), "BTC long - Grade A\nBreakout with strong momentum"),
            ),
            (
                one.id,
                full(at(day + 60), "ETH long - Grade A\nBreakout failed"),
            ),
            (elsewhere.id, full(at(day), "SOL long - Grade A\nBreakout")),
            (
                theirs.id,
                full(at(day), "BTC long - Grade A\nBreakout with momentum"),
            ),
        ])
        .await
        .unwrap();
        let note = |target, text: &str, tags: &[&str], minutes| NewAnnotation {
            id: Uuid::new_v4(),
            target,
            annotation: text.into(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            created_at: at(minutes),
        };
        let on_outcome = s
            .annotate(&note(
                AnnotationTarget::Outcome(two.id),
                "Funding squeeze reversal",
                &["news", "funding"],
                100,
            ))
            .await
            .unwrap();
        let on_trade = s
            .annotate(&note(
                AnnotationTarget::Trade(trade.unwrap()),
                "Stop was too tight",
                &[],
                day + 120,
            ))
            .await
            .unwrap();
        let scope = MemoryScope::Deployment(d);
        let later = day + 180;

        // Every word must match, any case, a plural `s` ignored ("breakouts" finds
        // "Breakout"); a quoted phrase as a phrase.
        let hits = s
            .search_memory(scope, &search(later, "breakouts MOMENTUM", 10))
            .await
            .unwrap();
        assert_eq!(hits.matched, 1);
        let hits = hits.hits;
        assert_eq!(hit_ids(&hits), vec![two.id]);
        let phrase = |text: &'static str| async move {
            hit_ids(
                &s.search_memory(scope, &search(later, text, 10))
                    .await
                    .unwrap()
                    .hits,
            )
        };
        assert_eq!(phrase("\"strong momentum\"").await, vec![two.id]);
        assert_eq!(phrase("\"momentum strong\"").await, Vec::<Uuid>::new());
        // Ranking: the same word once in a shorter text first.
        let both = s
            .search_memory(scope, &search(later, "breakout", 10))
            .await
            .unwrap()
            .hits;
        assert_eq!(hit_ids(&both), vec![one.id, two.id]);
        assert!(both[0].rank > both[1].rank, "{both:?}");
        assert_eq!(hits[0].kind, HitKind::Outcome);
        assert_eq!(hits[0].outcome_id, Some(two.id));
        assert_eq!(hits[0].symbol.as_deref(), Some("BTC"));
        assert_eq!(hits[0].at, at(0));
        assert_eq!(
            hits[0].text,
            "BTC long - Grade A\nBreakout with strong momentum"
        );
        let one_hit = s
            .search_memory(scope, &search(later, "breakout", 1))
            .await
            .unwrap();
        assert_eq!(
            (hit_ids(&one_hit.hits), one_hit.matched),
            (vec![one.id], 2),
            "at most `limit`, every match counted"
        );
        // An annotation on an outcome: its symbol; matched by text or tag.
        let hits = s
            .search_memory(scope, &search(later, "Squeeze", 10))
            .await
            .unwrap()
            .hits;
        assert_eq!(
            hits,
            vec![MemoryHit {
                kind: HitKind::Annotation,
                id: on_outcome.id,
                deployment_id: d,
                outcome_id: Some(two.id),
                trade_id: None,
                symbol: Some("BTC".into()),
                at: at(100),
                text: "Funding squeeze reversal\nTags: news, funding".into(),
                rank: hits[0].rank,
            }]
        );
        assert!(hits[0].rank > 0.0);
        assert_eq!(
            hit_ids(
                &s.search_memory(scope, &search(later, "news", 10))
                    .await
                    .unwrap()
                    .hits
            ),
            vec![on_outcome.id]
        );
        let on_trade_hits = s
            .search_memory(scope, &search(later, "tight stops", 10))
            .await
            .unwrap()
            .hits;
        assert_eq!(hit_ids(&on_trade_hits), vec![on_trade.id]);
        assert_eq!(
            (on_trade_hits[0].trade_id, on_trade_hits[0].symbol.clone()),
            (trade, None)
        );

        // Point in time: before its scoring a narrative is not searched; an annotation
        // written after as_of is invisible; ties of equal rank: newest first.
        assert_eq!(
            hit_ids(
                &s.search_memory(scope, &search(day, "breakout", 10))
                    .await
                    .unwrap()
                    .hits
            ),
            vec![two.id],
            "ETH scored at 25h"
        );
        assert!(
            s.search_memory(scope, &search(day - 1, "breakout", 10))
                .await
                .unwrap()
                .hits
                .is_empty()
        );
        assert!(
            s.search_memory(scope, &search(day + 119, "tight", 10))
                .await
                .unwrap()
                .hits
                .is_empty()
        );
        assert!(
            s.search_memory(scope, &search(99, "funding", 10))
                .await
                .unwrap()
                .hits
                .is_empty()
        );

        // Scope: the user's deployments, never another user's.
        let users = hit_ids(
            &s.search_memory(
                MemoryScope::User(fx.user.id),
                &search(later, "breakout", 10),
            )
            .await
            .unwrap()
            .hits,
        );
        assert_eq!(users.len(), 3);
        assert!(users.contains(&elsewhere.id) && !users.contains(&theirs.id));
        assert_eq!(
            hit_ids(
                &s.search_memory(
                    MemoryScope::Deployment(other.deployment.id),
                    &search(later, "breakout", 10)
                )
                .await
                .unwrap()
                .hits
            ),
            vec![theirs.id]
        );
        // Limits.
        invalid(
            s.search_memory(scope, &search(later, "x", 0)).await,
            "search limit",
        );
        invalid(
            s.search_memory(scope, &search(later, "x", 51)).await,
            "search limit",
        );
    }

    pub(super) async fn hostile_search_texts_are_words_or_refused<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let d = fx.deployment.id;
        let (_, o, _) = outcome(s, d, 0, "BTC", RegimeTag::TrendingUp, None).await;
        s.score_outcomes(&[(
            o.id,
            full(at(60), "BTC long near the drop table of trade_outcomes"),
        )])
        .await
        .unwrap();
        let scope = MemoryScope::Deployment(d);
        for text in [
            "\"",
            "NEAR(a b)",
            "*",
            "a:b",
            "'; drop table trade_outcomes; --",
            "breakout AND OR NOT momentum",
            "narrative:btc",
            "\"unterminated",
            "^btc",
            "btc*",
            "(btc",
            "!btc & | <-> :*",
            "\\",
            "%_",
            "½ ²³ Ⅻ 日本語 ١٢٣ café x_y",
            "the a of",
        ] {
            match s.search_memory(scope, &search(120, text, 10)).await {
                Ok(_) | Err(DbError::Invalid { .. }) => {}
                Err(e) => panic!("{text:?}: a backend error {e:?}"),
            }
        }
        // The SQL in the text is words: it finds the narrative with them, and drops nothing.
        let hits = s
            .search_memory(scope, &search(120, "'; drop table trade_outcomes; --", 10))
            .await
            .unwrap()
            .hits;
        assert_eq!(hit_ids(&hits), vec![o.id]);
        assert_eq!(
            hit_ids(
                &s.search_memory(scope, &search(120, "NEAR(the table)", 10))
                    .await
                    .unwrap()
                    .hits
            ),
            vec![o.id],
            "NEAR is a word here"
        );
        assert_eq!(s.outcomes(d, 10).await.unwrap().len(), 1);
        // Refused texts name the problem.
        for (text, needle) in [
            ("", "empty"),
            ("   \n", "empty"),
            ("*", "no word"),
            ("\"", "no word"),
            (":: -- ;", "no word"),
        ] {
            match s.search_memory(scope, &search(120, text, 10)).await {
                Err(DbError::Invalid { what, detail }) => {
                    assert_eq!(what, "search text");
                    assert!(detail.contains(needle), "{text:?}: {detail}");
                }
                other => panic!("{text:?}: expected Invalid, got {other:?}"),
            }
        }
        let long = "a".repeat(outcomes::MAX_SEARCH_CHARS + 1);
        match s.search_memory(scope, &search(120, &long, 10)).await {
            Err(DbError::Invalid { what, detail }) => {
                assert_eq!(what, "search text");
                assert!(detail.contains("201 characters"), "{detail}");
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
        // At most 16 words: a 17th word is ignored.
        let many = (1..=16)
            .map(|i| format!("w{i}"))
            .chain(["btc".to_owned()])
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            s.search_memory(scope, &search(120, &many, 10))
                .await
                .unwrap()
                .hits
                .is_empty()
        );
    }
}

crate::common::on_every_backend!(
    outcome_recall;
    recall_filters_orders_limits_and_masks_to_its_time,
    search_ranks_narratives_and_annotations_in_scope_and_time,
    hostile_search_texts_are_words_or_refused,
);

/// PostgreSQL as a user (`PgStore::as_user`, row-level security): recall and search return the
/// user's own rows only, whatever scope the caller names.
#[tokio::test]
async fn postgres_users_recall_and_search_only_their_own_rows() {
    use db::test_support::{at, record_sample_outcome, seed};
    use db::{AnnotationTarget, MemoryScope, NewAnnotation, OutcomeStore};
    use outcomes::{RecallQuery, SearchQuery};
    use uuid::Uuid;

    let h = crate::common::postgres().await;
    let mut owners = Vec::new();
    for _ in 0..2 {
        let fx = seed(&h.store).await.unwrap();
        let outcome = record_sample_outcome(&h.store, fx.deployment.id, at(0))
            .await
            .unwrap();
        let mut score = outcomes::OutcomeScore {
            scored_at: Some(at(24 * 60)),
            ..outcomes::OutcomeScore::default()
        };
        score.narrative = Some("BTC long - Grade none\nBreakout".into());
        h.store
            .score_outcomes(&[(outcome.id, score)])
            .await
            .unwrap();
        h.store
            .annotate(&NewAnnotation {
                id: Uuid::new_v4(),
                target: AnnotationTarget::Outcome(outcome.id),
                annotation: "Breakout on news".into(),
                tags: vec![],
                created_at: at(5),
            })
            .await
            .unwrap();
        owners.push((fx.user.id, fx.deployment.id, outcome.id));
    }
    let search = SearchQuery {
        as_of: at(48 * 60),
        text: "breakout".into(),
        limit: 10,
    };
    let recall = RecallQuery::new(at(48 * 60), 10);
    for (i, (user, deployment, outcome)) in owners.iter().enumerate() {
        let (other_user, other_deployment, _) = owners[1 - i];
        let me = h.store.as_user(*user);
        for scope in [
            MemoryScope::User(*user),
            MemoryScope::Deployment(*deployment),
        ] {
            let hits = me.search_memory(scope, &search).await.unwrap().hits;
            assert_eq!(hits.len(), 2, "the narrative and the annotation");
            assert!(hits.iter().all(|h| h.deployment_id == *deployment));
            let rows = me.recall_outcomes(scope, &recall).await.unwrap();
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].outcome.id, *outcome);
        }
        for scope in [
            MemoryScope::User(other_user),
            MemoryScope::Deployment(other_deployment),
        ] {
            assert!(
                me.search_memory(scope, &search)
                    .await
                    .unwrap()
                    .hits
                    .is_empty()
            );
            assert!(me.recall_outcomes(scope, &recall).await.unwrap().is_empty());
        }
    }
}

use db::test_support::at;
use db::{MemoryScope, OutcomeStore};
use outcomes::SearchQuery;
use types::RegimeTag;
use uuid::Uuid;

/// Writes the same outcome memory, ids included, into `s`: a user, a deployment and 48 hourly
/// outcomes whose narratives follow the scorer's template (many alike, so ranks tie), scored
/// 24h after their tick, and two annotations.
async fn same_memory<S: db::Storage>(s: &S) -> MemoryScope {
    use db::test_support::{
        sample_deployment, sample_outcome_rows, sample_skill, sample_skill_version,
        sample_snapshot, sample_user, tick_record,
    };
    use db::{AnnotationTarget, NewAnnotation, OutcomeWrites, TickRecord};
    use outcomes::{FirstHit, Grade, OutcomeScore};
    let mut user = sample_user();
    user.id = Uuid::from_u128(1);
    let mut skill = sample_skill(user.id);
    skill.id = Uuid::from_u128(2);
    let version = sample_skill_version(skill.id, 1);
    let mut deployment = sample_deployment(user.id, skill.id, 1);
    deployment.id = Uuid::from_u128(4);
    s.upsert_user(&user).await.unwrap();
    s.create_skill(&skill).await.unwrap();
    s.add_skill_version(&version).await.unwrap();
    s.create_deployment(&deployment).await.unwrap();
    let grades = [Grade::A, Grade::B, Grade::C, Grade::D, Grade::F, Grade::B];
    let conditions = [
        RegimeTag::Ranging,
        RegimeTag::TrendingUp,
        RegimeTag::Volatile,
    ];
    let mut scores = Vec::new();
    let mut ids = Vec::new();
    for n in 0..48_u32 {
        let mut snapshot = sample_snapshot(deployment.id, at(i64::from(n) * 60));
        snapshot.id = Uuid::from_u128(1000 + u128::from(n));
        let (mut market, mut outcome) = sample_outcome_rows(&snapshot);
        let condition = conditions[(n % 3) as usize];
        let (symbol, long) = (if n % 4 == 0 { "GBPUSD" } else { "EURUSD" }, n % 5 != 1);
        market.symbol = symbol.into();
        market.indicators.market_condition = condition;
        outcome.symbol = symbol.into();
        outcome.market_condition = condition;
        let g = grades[(n % 6) as usize];
        let first = match g {
            Grade::A => "target",
            Grade::F => "stop",
            _ => "neither",
        };
        let dir = if long { "long" } else { "short" };
        let reason = if n % 7 == 0 {
            "\nReason: Breakout over the Asian range high, stop hit risk low"
        } else {
            ""
        };
        let narrative = format!(
            "{symbol} {dir} - Grade {g}\nSignal: {dir} at 1.0850 (conf: 70)\nPredicted: TP 1.0900, \
             SL 1.0820\nActual 24h: 1.0875 (+0.23%)\nFirst hit: {first}\nGrade: {g}\n\
             Conditions: {}{reason}",
            condition.as_str(),
            g = g.as_str()
        );
        scores.push((
            outcome.id,
            OutcomeScore {
                outcome_grade: Some(g),
                first_hit: Some(match g {
                    Grade::A => FirstHit::Target,
                    Grade::F => FirstHit::Stop,
                    _ => FirstHit::Neither,
                }),
                scored_at: Some(at(i64::from(n) * 60 + 24 * 60)),
                narrative: Some(narrative),
                ..OutcomeScore::default()
            },
        ));
        ids.push(outcome.id);
        s.record_tick(&TickRecord {
            outcomes: OutcomeWrites {
                snapshots: vec![market],
                outcomes: vec![outcome],
                scores: vec![],
            },
            ..tick_record(snapshot)
        })
        .await
        .unwrap();
    }
    s.score_outcomes(&scores).await.unwrap();
    for (n, (text, tags)) in [
        (
            "EURUSD long stopped out by the ECB headline",
            vec!["news", "stop"],
        ),
        ("Grade B long: the breakout held", vec![]),
    ]
    .into_iter()
    .enumerate()
    {
        s.annotate(&NewAnnotation {
            id: Uuid::from_u128(5000 + n as u128),
            target: AnnotationTarget::Outcome(ids[n * 7]),
            annotation: text.into(),
            tags: tags.into_iter().map(str::to_owned).collect(),
            created_at: at(30 * 60),
        })
        .await
        .unwrap();
    }
    MemoryScope::Deployment(deployment.id)
}

/// A search answers the same on SQLite and PostgreSQL: the same ids in the same order, the same
/// ranks and match counts, for the searches a model writes.
#[tokio::test]
async fn search_answers_the_same_on_sqlite_and_postgres() {
    let lite = crate::common::sqlite().await;
    let pg = crate::common::postgres().await;
    let scope = same_memory(&lite.store).await;
    assert_eq!(same_memory(&pg.store).await, scope);
    let mut nonempty = 0;
    for text in [
        "EURUSD long",
        "eurusd LONG grade",
        "Grade B",
        "\"first hit: stop\"",
        "\"grade a\" ranging",
        "short trending_up",
        "breakout stop",
        "stops",
        "news",
        "ECB",
        "GBPUSD volatile",
        "\"asian range\" breakout",
        "nothing like this",
    ] {
        for as_of in [at(30 * 60), at(80 * 60)] {
            let q = SearchQuery {
                as_of,
                text: text.into(),
                limit: 20,
            };
            let a = lite.store.search_memory(scope, &q).await.unwrap();
            let b = pg.store.search_memory(scope, &q).await.unwrap();
            assert_eq!(a, b, "{text:?} as of {as_of}");
            if a.hits.len() > 1 {
                nonempty += 1;
            }
        }
    }
    assert!(nonempty >= 8, "{nonempty} searches with several hits");
}
