//! The scorer over hand-built hourly bar paths. Every outcome enters at 100 at `T0`; the bar
//! opening at `T0 + (i − 1)h` closes at `T0 + i h` (bar `i`, 1 ≤ i ≤ 24). PnL % =
//! sign × (price − 100) × 100 / 100.

use chrono::{DateTime, Duration, TimeZone, Utc};
use outcomes::{
    FirstHit, Grade, OutcomeScore, OutcomeVerdict, PendingOutcomes, TradeOutcome, narrative,
    score_outcome,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use types::{Bar, Interval, RegimeTag, Side};
use uuid::Uuid;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 10, 0, 0).unwrap()
}

fn outcome(direction: Side, stop: Option<Decimal>, target: Option<Decimal>) -> TradeOutcome {
    TradeOutcome {
        id: Uuid::from_u128(1),
        deployment_id: Uuid::from_u128(2),
        decision_snapshot_id: Uuid::from_u128(3),
        snapshot_id: Uuid::from_u128(4),
        tick_at: t0(),
        symbol: "BTC".into(),
        direction,
        confidence: Some(70),
        entry_price: dec!(100),
        predicted_stop: stop,
        predicted_target: target,
        verdict: OutcomeVerdict::Executed,
        reason: Some("Oversold  bounce\nat support".into()),
        market_condition: RegimeTag::Ranging,
        score: OutcomeScore::default(),
    }
}

fn long() -> TradeOutcome {
    outcome(Side::Long, Some(dec!(95)), Some(dec!(110)))
}

/// 24 flat bars at 100, with `(i, high, low, close)` overrides for bar `i` (closing at
/// `T0 + i h`); the bar closing at `T0` (the entry's) is included before them.
fn path(overrides: &[(i64, Decimal, Decimal, Decimal)]) -> Vec<Bar> {
    (0..=24)
        .map(|i| {
            let (high, low, close) = overrides
                .iter()
                .find(|o| o.0 == i)
                .map_or((dec!(100), dec!(100), dec!(100)), |o| (o.1, o.2, o.3));
            Bar {
                time: t0() + Duration::hours(i - 1),
                open: dec!(100),
                high,
                low,
                close,
                volume: Decimal::ONE,
            }
        })
        .collect()
}

fn final_score(o: &TradeOutcome, bars: &[Bar]) -> OutcomeScore {
    score_outcome(o, bars, Interval::H1, t0() + Duration::hours(24))
}

#[test]
fn target_first_then_stop_is_a() {
    // Bar 2 reaches 111 ≥ 110 (target) with its low 99 > 95; bar 5's low 94 ≤ 95 reaches the
    // stop afterwards. Bar 24 closes at 104: +4 %. The target came first → A.
    let bars = path(&[
        (2, dec!(111), dec!(99), dec!(108)),
        (5, dec!(101), dec!(94), dec!(96)),
        (24, dec!(104), dec!(104), dec!(104)),
    ]);
    let s = final_score(&long(), &bars);
    assert_eq!(s.hit_target, Some(true));
    assert_eq!(s.hit_stop, Some(true));
    assert_eq!(s.first_hit, Some(FirstHit::Target));
    assert_eq!(s.max_favorable, Some(dec!(111)));
    assert_eq!(s.max_adverse, Some(dec!(94)));
    assert_eq!(s.price_24h, Some(dec!(104)));
    assert_eq!(s.pnl_percent_24h, Some(dec!(4)));
    assert_eq!(s.outcome_grade, Some(Grade::A));
    assert_eq!(s.scored_at, Some(t0() + Duration::hours(24)));
}

#[test]
fn stop_first_then_target_is_graded_by_the_24h_pnl() {
    // Bar 1's low 94 ≤ 95: the stop first; bar 3's high 112 ≥ 110 reaches the target later.
    // Bar 24 closes at 104: +4 % > 1 % → B (not A: the stop came first).
    let bars = path(&[
        (1, dec!(101), dec!(94), dec!(97)),
        (3, dec!(112), dec!(100), dec!(104)),
        (24, dec!(104), dec!(104), dec!(104)),
    ]);
    let s = final_score(&long(), &bars);
    assert_eq!(s.first_hit, Some(FirstHit::Stop));
    assert_eq!((s.hit_target, s.hit_stop), (Some(true), Some(true)));
    assert_eq!(s.outcome_grade, Some(Grade::B));
}

#[test]
fn both_in_one_bar_counts_the_stop_first() {
    // Bar 4 spans 94..111: both levels inside one bar, the order inside it unknown → the stop
    // (conservative). Bar 24 closes at 99.5: −0.5 %, within ±1 % → C.
    let bars = path(&[
        (4, dec!(111), dec!(94), dec!(100)),
        (24, dec!(99.5), dec!(99.5), dec!(99.5)),
    ]);
    let s = final_score(&long(), &bars);
    assert_eq!(s.first_hit, Some(FirstHit::Stop));
    assert_eq!(s.pnl_percent_24h, Some(dec!(-0.5)));
    assert_eq!(s.outcome_grade, Some(Grade::C));
}

#[test]
fn neither_reached() {
    // The path stays within 96..104; bar 24 closes at 100.5: +0.5 % → C.
    let bars = path(&[
        (6, dec!(104), dec!(99), dec!(103)),
        (12, dec!(100), dec!(96), dec!(97)),
        (24, dec!(100.5), dec!(100.5), dec!(100.5)),
    ]);
    let s = final_score(&long(), &bars);
    assert_eq!(s.first_hit, Some(FirstHit::Neither));
    assert_eq!((s.hit_target, s.hit_stop), (Some(false), Some(false)));
    assert_eq!(s.max_favorable, Some(dec!(104)));
    assert_eq!(s.max_adverse, Some(dec!(96)));
    assert_eq!(s.outcome_grade, Some(Grade::C));
}

#[test]
fn each_grade() {
    let grade = |o: &TradeOutcome, bars: &[Bar]| final_score(o, bars).outcome_grade;
    // A: high 110 reaches the target exactly (≥), the low 99 stays above the stop.
    assert_eq!(
        grade(&long(), &path(&[(7, dec!(110), dec!(99), dec!(101))])),
        Some(Grade::A)
    );
    // B: no level reached, bar 24 closes at 102: (102 − 100) × 100 / 100 = +2 % > 1 %.
    assert_eq!(
        grade(&long(), &path(&[(24, dec!(102), dec!(102), dec!(102))])),
        Some(Grade::B)
    );
    // B's edge: exactly +1 % is not above 1 % → C.
    assert_eq!(
        grade(&long(), &path(&[(24, dec!(101), dec!(101), dec!(101))])),
        Some(Grade::C)
    );
    // C: closes at 99 → −1 %, the lower edge of C.
    assert_eq!(
        grade(&long(), &path(&[(24, dec!(99), dec!(99), dec!(99))])),
        Some(Grade::C)
    );
    // D: closes at 98 → −2 %; the worst low 97.5 is −2.5 % (≥ −3 %) and above the stop 95.
    assert_eq!(
        grade(
            &long(),
            &path(&[
                (10, dec!(100), dec!(97.5), dec!(98)),
                (24, dec!(98), dec!(98), dec!(98))
            ])
        ),
        Some(Grade::D)
    );
    // F by the stop: low 94.9 ≤ 95, closes at 98 → −2 % and the stop was hit.
    assert_eq!(
        grade(
            &long(),
            &path(&[
                (10, dec!(100), dec!(94.9), dec!(98)),
                (24, dec!(98), dec!(98), dec!(98))
            ])
        ),
        Some(Grade::F)
    );
    // F by the adverse move: no stop given; low 96.9 → −3.1 % < −3 %; closes at 98 → −2 %.
    let no_stop = outcome(Side::Long, None, Some(dec!(110)));
    assert_eq!(
        grade(
            &no_stop,
            &path(&[
                (10, dec!(100), dec!(96.9), dec!(98)),
                (24, dec!(98), dec!(98), dec!(98))
            ])
        ),
        Some(Grade::F)
    );
    // … while −3 % exactly (low 97) is still D.
    assert_eq!(
        grade(
            &no_stop,
            &path(&[
                (10, dec!(100), dec!(97), dec!(98)),
                (24, dec!(98), dec!(98), dec!(98))
            ])
        ),
        Some(Grade::D)
    );
}

#[test]
fn short_outcomes_are_signed_the_other_way() {
    let short = outcome(Side::Short, Some(dec!(105)), Some(dec!(90)));
    // A: bar 3's low 89 ≤ 90 reaches the target, its high 101 stays below the stop 105.
    let s = final_score(&short, &path(&[(3, dec!(101), dec!(89), dec!(92))]));
    assert_eq!(s.first_hit, Some(FirstHit::Target));
    assert_eq!(s.max_favorable, Some(dec!(89)));
    assert_eq!(s.max_adverse, Some(dec!(101)));
    assert_eq!(s.outcome_grade, Some(Grade::A));
    // B: closes at 98 → −1 × (98 − 100) = +2 %.
    let s = final_score(&short, &path(&[(24, dec!(98), dec!(98), dec!(98))]));
    assert_eq!(s.pnl_percent_24h, Some(dec!(2)));
    assert_eq!(s.outcome_grade, Some(Grade::B));
    // F: bar 2's high 106 ≥ 105 reaches the stop; closes at 103 → −3 %.
    let s = final_score(
        &short,
        &path(&[
            (2, dec!(106), dec!(100), dec!(103)),
            (24, dec!(103), dec!(103), dec!(103)),
        ]),
    );
    assert_eq!(s.first_hit, Some(FirstHit::Stop));
    assert_eq!(s.outcome_grade, Some(Grade::F));
}

#[test]
fn marks_fill_in_as_time_passes_from_bar_closes_only() {
    // Bar 1 closes at 101 (+1 %), bar 4 at 103 (+3 %), bar 24 at 102 (+2 %).
    let bars = path(&[
        (1, dec!(101), dec!(100), dec!(101)),
        (4, dec!(103), dec!(100), dec!(103)),
        (24, dec!(102), dec!(102), dec!(102)),
    ]);
    let at = |h: i64| score_outcome(&long(), &bars, Interval::H1, t0() + Duration::hours(h));
    let early = score_outcome(&long(), &bars, Interval::H1, t0() + Duration::minutes(59));
    assert_eq!(
        early,
        OutcomeScore::default(),
        "nothing before the first mark"
    );
    let one = at(1);
    assert_eq!(
        (one.price_1h, one.pnl_percent_1h),
        (Some(dec!(101)), Some(dec!(1)))
    );
    assert_eq!(
        (one.price_4h, one.outcome_grade, one.scored_at),
        (None, None, None)
    );
    let four = at(4);
    assert_eq!(
        (four.price_4h, four.pnl_percent_4h),
        (Some(dec!(103)), Some(dec!(3)))
    );
    assert!(!four.is_final());
    // Scored later than the mark: the same prices (the bars at the marks), only scored_at moves.
    let late = at(30);
    assert_eq!(late.price_24h, Some(dec!(102)));
    assert_eq!(late.outcome_grade, Some(Grade::B));
    assert_eq!(late.scored_at, Some(t0() + Duration::hours(30)));
    assert_eq!(
        OutcomeScore {
            scored_at: None,
            ..late
        },
        OutcomeScore {
            scored_at: None,
            ..at(24)
        }
    );
}

#[test]
fn a_gap_in_the_bars_leaves_the_mark_empty() {
    // Bars only from bar 3 on: nothing closed in (T0, T0 + 1h] → no 1h price.
    let bars: Vec<Bar> = path(&[(3, dec!(100), dec!(100), dec!(100.2))])
        .into_iter()
        .filter(|b| b.time >= t0() + Duration::hours(2))
        .collect();
    let s = final_score(&long(), &bars);
    assert_eq!(s.price_1h, None);
    assert_eq!(s.price_4h, Some(dec!(100)));
    assert_eq!(s.outcome_grade, Some(Grade::C));
    // No bar at all in the 24 hours: scored, without a grade.
    let none = final_score(&long(), &[]);
    assert_eq!((none.price_24h, none.outcome_grade), (None, None));
    assert!(none.is_final());
}

#[test]
fn pending_outcomes_score_at_each_mark_then_leave() {
    let bars = path(&[(24, dec!(102), dec!(102), dec!(102))]);
    let mut pending = PendingOutcomes::new();
    pending.push(long());
    let mut due = |h: i64, m: i64| {
        pending
            .score_due(
                t0() + Duration::hours(h) + Duration::minutes(m),
                Interval::H1,
                |_| &bars,
            )
            .len()
    };
    assert_eq!(due(0, 30), 0);
    assert_eq!(due(1, 0), 1);
    assert_eq!(due(2, 0), 0);
    assert_eq!(
        due(5, 0),
        1,
        "the 4h mark, scored at the first call after it"
    );
    assert_eq!(due(23, 0), 0);
    assert_eq!(due(24, 0), 1);
    assert!(pending.is_empty());
}

#[test]
fn the_final_scoring_writes_seed_003s_narrative_and_only_it() {
    // Bar 2 reaches the target 110 first; bar 24 closes at 104.5: +4.5 % → A.
    let bars = path(&[
        (2, dec!(111), dec!(99), dec!(108)),
        (24, dec!(104.5), dec!(104.5), dec!(104.5)),
    ]);
    let s = final_score(&long(), &bars);
    assert_eq!(
        s.narrative.as_deref(),
        Some(
            "BTC long - Grade A\n\
             Signal: long at 100 (conf: 70)\n\
             Predicted: TP 110, SL 95\n\
             Actual 24h: 104.5 (+4.5%)\n\
             Grade: A\n\
             Conditions: ranging\n\
             Reason: Oversold bounce at support"
        )
    );
    // Before the 24h mark: marks only, no narrative.
    let four = score_outcome(&long(), &bars, Interval::H1, t0() + Duration::hours(4));
    assert_eq!((four.narrative, four.scored_at), (None, None));
}

#[test]
fn a_narrative_names_what_is_missing_and_drops_an_absent_reason() {
    let mut o = outcome(Side::Short, None, Some(dec!(65432.123456)));
    o.symbol = "eth".into();
    o.confidence = None;
    o.reason = None;
    o.entry_price = dec!(3410.456);
    o.market_condition = RegimeTag::TrendingDown;
    let scored = OutcomeScore {
        price_24h: Some(dec!(3450)),
        pnl_percent_24h: Some(dec!(-1.1595)),
        outcome_grade: Some(Grade::D),
        scored_at: Some(t0()),
        ..OutcomeScore::default()
    };
    assert_eq!(
        narrative(&o, &scored),
        "ETH short - Grade D\n\
         Signal: short at 3,410.46 (conf: none)\n\
         Predicted: TP 65,432.1, SL none\n\
         Actual 24h: 3,450 (-1.2%)\n\
         Grade: D\n\
         Conditions: trending_down"
    );
    // No bar in the 24 hours: scored without a grade or a price.
    let blank = OutcomeScore {
        scored_at: Some(t0()),
        ..OutcomeScore::default()
    };
    o.reason = Some("   ".into());
    assert_eq!(
        narrative(&o, &blank),
        "ETH short - Grade none\n\
         Signal: short at 3,410.46 (conf: none)\n\
         Predicted: TP 65,432.1, SL none\n\
         Actual 24h: none\n\
         Grade: none\n\
         Conditions: trending_down"
    );
}
