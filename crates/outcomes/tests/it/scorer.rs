//! The scorer over hand-built hourly bar paths. Every outcome enters at 100 at `T0`; the bar
//! opening at `T0 + (i − 1)h` closes at `T0 + i h` (bar `i`, 1 ≤ i ≤ 24). PnL % =
//! sign × (price − 100) × 100 / 100.

use chrono::{DateTime, Duration, TimeZone, Utc};
use outcomes::{
    FirstHit, Grade, Indicators, MacdState, OutcomeScore, OutcomeVerdict, PendingOutcomes,
    TradeOutcome, grade, hit_words, narrative, pnl_percent, regrade, score_outcome,
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

/// The market snapshot's indicators of every outcome here: RSI 28 ≤ 30 (oversold), volume
/// 2.25 × its mean ≥ 1.5 (a spike), MACD bearish, ADX 20 < 25 (no strong trend).
fn indicators() -> Indicators {
    Indicators {
        rsi_15m: None,
        rsi_1h: Some(28.0),
        rsi_4h: None,
        macd_signal: Some(MacdState::Bearish),
        volatility_percentile: Some(50.0),
        volume_ratio: Some(2.25),
        trend_strength: Some(20.0),
        btc_correlation: None,
        market_condition: RegimeTag::Ranging,
    }
}

fn final_score(o: &TradeOutcome, bars: &[Bar]) -> OutcomeScore {
    score_outcome(
        o,
        Some(&indicators()),
        bars,
        Interval::H1,
        t0() + Duration::hours(24),
    )
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
fn stop_first_then_target_is_f() {
    // Bar 1's low 94 ≤ 95: the stop first; bar 3's high 112 ≥ 110 reaches the target later.
    // Bar 24 closes at 104: +4 % > 1 %, but the stop came first → F (not A, not B).
    let bars = path(&[
        (1, dec!(101), dec!(94), dec!(97)),
        (3, dec!(112), dec!(100), dec!(104)),
        (24, dec!(104), dec!(104), dec!(104)),
    ]);
    let s = final_score(&long(), &bars);
    assert_eq!(s.first_hit, Some(FirstHit::Stop));
    assert_eq!((s.hit_target, s.hit_stop), (Some(true), Some(true)));
    assert_eq!(s.outcome_grade, Some(Grade::F));
}

#[test]
fn both_in_one_bar_counts_the_stop_first() {
    // Bar 4 spans 97.5..111 with the stop at 98: both levels inside one bar, the order inside
    // it unknown → the stop (conservative). The worst low 97.5 is −2.5 %, short of the 3 %, and
    // bar 24 closes at 99.5: −0.5 %, within ±1 % — F all the same: the stop came first.
    let tight = outcome(Side::Long, Some(dec!(98)), Some(dec!(110)));
    let bars = path(&[
        (4, dec!(111), dec!(97.5), dec!(100)),
        (24, dec!(99.5), dec!(99.5), dec!(99.5)),
    ]);
    let s = final_score(&tight, &bars);
    assert_eq!(s.first_hit, Some(FirstHit::Stop));
    assert_eq!(s.pnl_percent_24h, Some(dec!(-0.5)));
    assert_eq!(s.outcome_grade, Some(Grade::F));
}

#[test]
fn neither_reached() {
    // The path stays within 97..104 (the worst low 97: (97 − 100) = −3 %, not more than 3 %);
    // bar 24 closes at 100.5: +0.5 % → C.
    let bars = path(&[
        (6, dec!(104), dec!(99), dec!(103)),
        (12, dec!(100), dec!(97), dec!(97)),
        (24, dec!(100.5), dec!(100.5), dec!(100.5)),
    ]);
    let s = final_score(&long(), &bars);
    assert_eq!(s.first_hit, Some(FirstHit::Neither));
    assert_eq!((s.hit_target, s.hit_stop), (Some(false), Some(false)));
    assert_eq!(s.max_favorable, Some(dec!(104)));
    assert_eq!(s.max_adverse, Some(dec!(97)));
    assert_eq!(s.outcome_grade, Some(Grade::C));
}

/// One row of the grade table: an outcome entering at 100 and the path of its 24 hours.
struct GradeRow {
    side: Side,
    stop: Option<Decimal>,
    target: Option<Decimal>,
    /// The bar (1–23) whose high (long) or low (short) reaches the target, if any.
    target_at: Option<i64>,
    /// The bar (1–23) whose low (long) or high (short) reaches the stop, if any.
    stop_at: Option<i64>,
    /// The worst price of the 24 hours and the bar (1–24) that reaches it.
    worst: (Decimal, i64),
    /// The close of bar 24 (the 24h price).
    price_24h: Decimal,
    first: FirstHit,
    /// sign × (price_24h − 100) × 100 / 100.
    pnl_24h: Decimal,
    /// sign × (worst − 100) × 100 / 100.
    adverse: Decimal,
    grade: Grade,
}

impl GradeRow {
    fn outcome(&self) -> TradeOutcome {
        outcome(self.side, self.stop, self.target)
    }

    /// Flat bars at 100 but for the level bars, the worst bar and bar 24 (high = low = close
    /// = the 24h price).
    fn path(&self) -> Vec<Bar> {
        let long = self.side == Side::Long;
        // (high, low) of a bar that goes against the trade to `p`, or with it to `p`.
        let against = |p: Decimal| if long { (dec!(100), p) } else { (p, dec!(100)) };
        let with = |p: Decimal| if long { (p, dec!(100)) } else { (dec!(100), p) };
        let mut over: Vec<(i64, Decimal, Decimal, Decimal)> =
            vec![(24, self.price_24h, self.price_24h, self.price_24h)];
        let mut put = |i: i64, (h, l): (Decimal, Decimal)| {
            if let Some(o) = over.iter_mut().find(|o| o.0 == i) {
                o.1 = o.1.max(h);
                o.2 = o.2.min(l);
            } else {
                over.push((i, h, l, dec!(100)));
            }
        };
        if let (Some(at), Some(t)) = (self.target_at, self.target) {
            put(at, with(t));
        }
        if let (Some(at), Some(s)) = (self.stop_at, self.stop) {
            put(at, against(s));
        }
        put(self.worst.1, against(self.worst.0));
        path(&over)
    }
}

#[test]
fn the_grade_table_a_f_b_c_d() {
    use Side::{Long, Short};
    let neither = FirstHit::Neither;
    #[rustfmt::skip]
    let rows = [
        // A: the target 110 at bar 3, the stop 95 never; 24h (104 − 100) × 100 / 100 = +4;
        // worst 99: (99 − 100) × 100 / 100 = −1.
        GradeRow { side: Long, stop: Some(dec!(95)), target: Some(dec!(110)), target_at: Some(3),
            stop_at: None, worst: (dec!(99), 5), price_24h: dec!(104),
            first: FirstHit::Target, pnl_24h: dec!(4), adverse: dec!(-1), grade: Grade::A },
        // A though the stop came later: target at bar 3, low 94 ≤ 95 at bar 8; 24h
        // (96 − 100) = −4, worst (94 − 100) = −6: the target came first.
        GradeRow { side: Long, stop: Some(dec!(95)), target: Some(dec!(110)), target_at: Some(3),
            stop_at: Some(8), worst: (dec!(94), 8), price_24h: dec!(96),
            first: FirstHit::Target, pnl_24h: dec!(-4), adverse: dec!(-6), grade: Grade::A },
        // A though the price went 4 % against before the target (no stop set): worst 96 at bar
        // 2, (96 − 100) = −4; target 110 at bar 6; 24h (101 − 100) = +1.
        GradeRow { side: Long, stop: None, target: Some(dec!(110)), target_at: Some(6),
            stop_at: None, worst: (dec!(96), 2), price_24h: dec!(101),
            first: FirstHit::Target, pnl_24h: dec!(1), adverse: dec!(-4), grade: Grade::A },
        // F by the stop first although the 24h PnL is small: stop 98 at bar 2 (worst 98:
        // (98 − 100) = −2, not past 3 %); 24h (100.5 − 100) = +0.5, C by PnL alone.
        GradeRow { side: Long, stop: Some(dec!(98)), target: Some(dec!(110)), target_at: None,
            stop_at: Some(2), worst: (dec!(98), 2), price_24h: dec!(100.5),
            first: FirstHit::Stop, pnl_24h: dec!(0.5), adverse: dec!(-2), grade: Grade::F },
        // F by the stop first, the target later: stop 98 at bar 2, target 110 at bar 9; 24h
        // (104 − 100) = +4, B by PnL alone.
        GradeRow { side: Long, stop: Some(dec!(98)), target: Some(dec!(110)), target_at: Some(9),
            stop_at: Some(2), worst: (dec!(98), 2), price_24h: dec!(104),
            first: FirstHit::Stop, pnl_24h: dec!(4), adverse: dec!(-2), grade: Grade::F },
        // F by the adverse move, no stop set: worst 96.9, (96.9 − 100) = −3.1 < −3; 24h
        // (102 − 100) = +2, B by PnL alone.
        GradeRow { side: Long, stop: None, target: Some(dec!(110)), target_at: None,
            stop_at: None, worst: (dec!(96.9), 10), price_24h: dec!(102),
            first: neither, pnl_24h: dec!(2), adverse: dec!(-3.1), grade: Grade::F },
        // B: worst 97, (97 − 100) = −3 exactly (not more than 3 %); 24h (102 − 100) = +2 > 1.
        GradeRow { side: Long, stop: Some(dec!(95)), target: Some(dec!(110)), target_at: None,
            stop_at: None, worst: (dec!(97), 10), price_24h: dec!(102),
            first: neither, pnl_24h: dec!(2), adverse: dec!(-3), grade: Grade::B },
        // C at B's edge: 24h (101 − 100) = +1, not above 1; worst (99.5 − 100) = −0.5.
        GradeRow { side: Long, stop: Some(dec!(95)), target: Some(dec!(110)), target_at: None,
            stop_at: None, worst: (dec!(99.5), 10), price_24h: dec!(101),
            first: neither, pnl_24h: dec!(1), adverse: dec!(-0.5), grade: Grade::C },
        // C at its lower edge: 24h (99 − 100) = −1; worst 99 (bar 24 itself), −1.
        GradeRow { side: Long, stop: Some(dec!(95)), target: Some(dec!(110)), target_at: None,
            stop_at: None, worst: (dec!(99), 24), price_24h: dec!(99),
            first: neither, pnl_24h: dec!(-1), adverse: dec!(-1), grade: Grade::C },
        // D: 24h (98 − 100) = −2 < −1; worst 97.5, (97.5 − 100) = −2.5, the stop 95 not hit.
        GradeRow { side: Long, stop: Some(dec!(95)), target: Some(dec!(110)), target_at: None,
            stop_at: None, worst: (dec!(97.5), 10), price_24h: dec!(98),
            first: neither, pnl_24h: dec!(-2), adverse: dec!(-2.5), grade: Grade::D },
        // D at F's edge, no stop set: worst 97, (97 − 100) = −3 exactly; 24h (98 − 100) = −2.
        GradeRow { side: Long, stop: None, target: Some(dec!(110)), target_at: None,
            stop_at: None, worst: (dec!(97), 10), price_24h: dec!(98),
            first: neither, pnl_24h: dec!(-2), adverse: dec!(-3), grade: Grade::D },
        // Short A: target 90 (low) at bar 3, stop 105 (high) never; 24h −1 × (92 − 100) = +8;
        // worst high 101, −1 × (101 − 100) = −1.
        GradeRow { side: Short, stop: Some(dec!(105)), target: Some(dec!(90)), target_at: Some(3),
            stop_at: None, worst: (dec!(101), 5), price_24h: dec!(92),
            first: FirstHit::Target, pnl_24h: dec!(8), adverse: dec!(-1), grade: Grade::A },
        // Short F by the stop first: stop 102 at bar 2, −1 × (102 − 100) = −2; 24h
        // −1 × (99 − 100) = +1, C by PnL alone.
        GradeRow { side: Short, stop: Some(dec!(102)), target: Some(dec!(90)), target_at: None,
            stop_at: Some(2), worst: (dec!(102), 2), price_24h: dec!(99),
            first: FirstHit::Stop, pnl_24h: dec!(1), adverse: dec!(-2), grade: Grade::F },
        // Short F by the adverse move: no stop; worst high 103.5, −1 × (103.5 − 100) = −3.5;
        // 24h −1 × (100 − 100) = 0.
        GradeRow { side: Short, stop: None, target: Some(dec!(90)), target_at: None,
            stop_at: None, worst: (dec!(103.5), 7), price_24h: dec!(100),
            first: neither, pnl_24h: dec!(0), adverse: dec!(-3.5), grade: Grade::F },
        // Short B: 24h −1 × (97 − 100) = +3 > 1; worst 101, −1.
        GradeRow { side: Short, stop: Some(dec!(105)), target: Some(dec!(90)), target_at: None,
            stop_at: None, worst: (dec!(101), 7), price_24h: dec!(97),
            first: neither, pnl_24h: dec!(3), adverse: dec!(-1), grade: Grade::B },
        // Short D: 24h −1 × (101.5 − 100) = −1.5 < −1; worst 102.5, −2.5; stop 105 not hit.
        GradeRow { side: Short, stop: Some(dec!(105)), target: Some(dec!(90)), target_at: None,
            stop_at: None, worst: (dec!(102.5), 7), price_24h: dec!(101.5),
            first: neither, pnl_24h: dec!(-1.5), adverse: dec!(-2.5), grade: Grade::D },
    ];
    for (n, row) in rows.iter().enumerate() {
        let o = row.outcome();
        let s = final_score(&o, &row.path());
        let adverse = s.max_adverse.and_then(|w| pnl_percent(&o, w));
        assert_eq!(
            (s.first_hit, s.max_adverse, s.price_24h),
            (Some(row.first), Some(row.worst.0), Some(row.price_24h)),
            "row {n}: the path"
        );
        assert_eq!(
            (s.pnl_percent_24h, adverse),
            (Some(row.pnl_24h), Some(row.adverse)),
            "row {n}: the arithmetic"
        );
        assert_eq!(
            (
                s.outcome_grade,
                grade(row.first, row.pnl_24h, Some(row.adverse))
            ),
            (Some(row.grade), row.grade),
            "row {n}: the grade"
        );
        // Re-grading the stored row (whatever grade and text it had) gives the same.
        let mut stored = o.clone();
        stored.score = OutcomeScore {
            outcome_grade: Some(Grade::C),
            narrative: Some("old".into()),
            ..s.clone()
        };
        assert_eq!(
            regrade(&stored, Some(&indicators())),
            s,
            "row {n}: the re-grade"
        );
    }
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
    let ind = indicators();
    let at = |h: i64| {
        score_outcome(
            &long(),
            Some(&ind),
            &bars,
            Interval::H1,
            t0() + Duration::hours(h),
        )
    };
    let early = score_outcome(
        &long(),
        Some(&ind),
        &bars,
        Interval::H1,
        t0() + Duration::minutes(59),
    );
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
    let mut asked = Vec::new();
    let mut due = |h: i64, m: i64| {
        pending
            .score_due(
                t0() + Duration::hours(h) + Duration::minutes(m),
                Interval::H1,
                |_| &bars,
                |o| {
                    asked.push(h);
                    (o.id == long().id).then(indicators)
                },
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
    assert_eq!(
        asked,
        vec![24],
        "the indicators are read for the narrative only"
    );
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
             Hit: target first\n\
             Grade: A\n\
             Conditions: ranging\n\
             Setup: RSI oversold + volume spike + MACD bearish\n\
             Reason: Oversold bounce at support"
        )
    );
    // Before the 24h mark: marks only, no narrative.
    let four = score_outcome(
        &long(),
        Some(&indicators()),
        &bars,
        Interval::H1,
        t0() + Duration::hours(4),
    );
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
        narrative(&o, &scored, None),
        "ETH short - Grade D\n\
         Signal: short at 3,410.46 (conf: none)\n\
         Predicted: TP 65,432.1, SL none\n\
         Actual 24h: 3,450 (-1.2%)\n\
         Hit: none\n\
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
        narrative(&o, &blank, None),
        "ETH short - Grade none\n\
         Signal: short at 3,410.46 (conf: none)\n\
         Predicted: TP 65,432.1, SL none\n\
         Actual 24h: none\n\
         Hit: none\n\
         Grade: none\n\
         Conditions: trending_down"
    );
}

#[test]
fn the_hit_line_names_a_level_only_when_the_price_reached_it() {
    let hits = |first, stop, target| {
        hit_words(&OutcomeScore {
            first_hit: first,
            hit_stop: stop,
            hit_target: target,
            ..OutcomeScore::default()
        })
    };
    let (t, s, n) = (FirstHit::Target, FirstHit::Stop, FirstHit::Neither);
    for (first, stop, target, words) in [
        (Some(t), Some(false), Some(true), "target first"),
        (Some(t), Some(true), Some(true), "target first, stop later"),
        (Some(s), Some(true), Some(false), "stop first"),
        (Some(s), Some(true), Some(true), "stop first, target too"),
        (Some(n), Some(false), Some(false), "neither"),
        (None, None, None, "none"),
    ] {
        assert_eq!(
            hits(first, stop, target),
            words,
            "{first:?} {stop:?} {target:?}"
        );
    }
    // The stop first, the target later in the day: both in the narrative, the stop first.
    let bars = path(&[
        (1, dec!(101), dec!(94), dec!(97)),
        (3, dec!(112), dec!(100), dec!(104)),
        (24, dec!(104), dec!(104), dec!(104)),
    ]);
    let text = final_score(&long(), &bars).narrative.unwrap();
    assert!(
        text.contains("\nHit: stop first, target too\nGrade: F\nConditions: ranging\nSetup: "),
        "{text}"
    );
}
