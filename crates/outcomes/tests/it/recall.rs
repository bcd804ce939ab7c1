//! Point-in-time masking, the statistics (arithmetic written out) and the `<trading_memory>`
//! block's text.

use chrono::{DateTime, Duration, TimeZone, Utc};
use outcomes::block::{SymbolMemory, write_trading_memory};
use outcomes::stats::{
    RsiTimeframe, SetupFilter, VolatilityBand, setup_label, setups, stats, what_worked,
};
use outcomes::{
    FirstHit, Grade, Indicators, MacdState, OutcomeScore, OutcomeVerdict, RecalledOutcome,
    TradeOutcome,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use types::{RegimeTag, Side};
use uuid::Uuid;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 10, 0, 0).unwrap()
}

fn indicators() -> Indicators {
    Indicators {
        rsi_15m: None,
        rsi_1h: Some(50.0),
        rsi_4h: Some(50.0),
        macd_signal: Some(MacdState::Neutral),
        volatility_percentile: Some(50.0),
        volume_ratio: Some(1.0),
        trend_strength: Some(15.0),
        btc_correlation: None,
        market_condition: RegimeTag::Ranging,
    }
}

/// An outcome decided at `t0 + hours_ago`, graded `grade` with 24h PnL `pnl24` (and 4h PnL
/// `pnl24 / 2`), scored 24h after its decision; `grade: None` leaves it unscored.
fn outcome(
    n: u128,
    at: DateTime<Utc>,
    direction: Side,
    confidence: u8,
    grade: Option<(Grade, Decimal)>,
) -> RecalledOutcome {
    let mut score = OutcomeScore::default();
    if let Some((g, pnl)) = grade {
        score = OutcomeScore {
            price_1h: Some(dec!(100)),
            price_4h: Some(dec!(100)),
            price_24h: Some(dec!(100) + pnl),
            pnl_percent_1h: Some(pnl / dec!(4)),
            pnl_percent_4h: Some(pnl / dec!(2)),
            pnl_percent_24h: Some(pnl),
            hit_target: Some(g == Grade::A),
            hit_stop: Some(g == Grade::F),
            first_hit: Some(match g {
                Grade::A => FirstHit::Target,
                Grade::F => FirstHit::Stop,
                _ => FirstHit::Neither,
            }),
            max_favorable: Some(dec!(103)),
            max_adverse: Some(dec!(98)),
            outcome_grade: Some(g),
            scored_at: Some(at + Duration::hours(24)),
            narrative: Some(format!("EURUSD - Grade {}", g.as_str())),
        };
    }
    RecalledOutcome {
        outcome: TradeOutcome {
            id: Uuid::from_u128(n),
            deployment_id: Uuid::from_u128(1000),
            decision_snapshot_id: Uuid::from_u128(2000 + n),
            snapshot_id: Uuid::from_u128(3000 + n),
            tick_at: at,
            symbol: "EURUSD".into(),
            direction,
            confidence: Some(confidence),
            entry_price: dec!(100),
            predicted_stop: Some(dec!(98)),
            predicted_target: Some(dec!(103)),
            verdict: OutcomeVerdict::Executed,
            reason: None,
            market_condition: RegimeTag::Ranging,
            score,
        },
        indicators: indicators(),
    }
}

#[test]
fn as_of_shows_each_mark_once_it_passed_and_the_grade_once_scored() {
    let at = t0();
    let mut full = outcome(1, at, Side::Long, 70, Some((Grade::B, dec!(1.5)))).outcome;
    // The live scorer ran five minutes after the 24h mark.
    full.score.scored_at = Some(at + Duration::minutes(24 * 60 + 5));
    let seen = |minutes: i64| full.clone().as_of(at + Duration::minutes(minutes)).score;

    assert!(seen(59).is_empty(), "before +1h nothing is known");
    let h1 = seen(60);
    assert_eq!(
        (h1.price_1h, h1.pnl_percent_1h),
        (Some(dec!(100)), Some(dec!(0.375)))
    );
    assert_eq!((h1.price_4h, h1.outcome_grade), (None, None));
    let h4 = seen(4 * 60);
    assert_eq!(h4.pnl_percent_4h, Some(dec!(0.75)));
    assert_eq!(h4.price_24h, None);
    // The 24h mark passed but the scorer had not run: still the marks only.
    let before_scoring = seen(24 * 60 + 4);
    assert_eq!(before_scoring.pnl_percent_4h, Some(dec!(0.75)));
    assert_eq!(
        (
            before_scoring.price_24h,
            before_scoring.outcome_grade,
            before_scoring.scored_at
        ),
        (None, None, None)
    );
    assert_eq!(seen(24 * 60 + 5), full.score);
}

#[test]
fn stats_count_wins_as_a_or_b_and_average_the_graded_pnl() {
    let at = t0();
    let rows = vec![
        outcome(1, at, Side::Long, 80, Some((Grade::A, dec!(2.5)))),
        outcome(2, at, Side::Long, 60, Some((Grade::B, dec!(1.5)))),
        outcome(3, at, Side::Short, 55, Some((Grade::C, dec!(-0.5)))),
        outcome(4, at, Side::Short, 90, Some((Grade::F, dec!(-4.0)))),
        outcome(5, at, Side::Long, 70, None),
    ];
    let s = stats(&rows);
    assert_eq!((s.outcomes, s.graded, s.wins), (5, 4, 2));
    // wins / graded = 2 / 4 = 50.0 %
    assert_eq!(s.win_rate_pct, Some(dec!(50.0)));
    // (2.5 + 1.5 − 0.5 − 4.0) / 4 = −0.5 / 4 = −0.125
    assert_eq!(s.avg_pnl_24h_pct, Some(dec!(-0.125)));
    // 4h: (1.25 + 0.75 − 0.25 − 2.0) / 4 = −0.25 / 4 = −0.0625 (the unscored one has no 4h PnL)
    assert_eq!(s.avg_pnl_4h_pct, Some(dec!(-0.0625)));
    assert_eq!(s.grades.get(&Grade::C), Some(&1));
    assert_eq!(s.grades.get(&Grade::D), None);

    // Rounding: 1 of 3 = 33.333… % → 33.3 %; (1 + 1 + 0) / 3 = 0.6666… → 0.6667 (4 decimals).
    let thirds = vec![
        outcome(1, at, Side::Long, 80, Some((Grade::B, dec!(1)))),
        outcome(2, at, Side::Long, 80, Some((Grade::C, dec!(1)))),
        outcome(3, at, Side::Long, 80, Some((Grade::C, dec!(0)))),
    ];
    let s = stats(&thirds);
    assert_eq!(s.win_rate_pct, Some(dec!(33.3)));
    assert_eq!(s.avg_pnl_24h_pct, Some(dec!(0.6667)));
    assert_eq!(stats(&[]).win_rate_pct, None);
}

#[test]
fn setups_are_labelled_from_the_indicators() {
    let mut i = indicators();
    assert_eq!(setup_label(&i), "no clear signal");
    i.rsi_1h = Some(28.0);
    i.volume_ratio = Some(1.8);
    i.macd_signal = Some(MacdState::Bearish);
    i.trend_strength = Some(31.0);
    assert_eq!(
        setup_label(&i),
        "RSI oversold + volume spike + MACD bearish + strong trend"
    );
    // Without a 1h RSI the 4h one decides.
    i.rsi_1h = None;
    i.rsi_4h = Some(75.0);
    assert!(setup_label(&i).starts_with("RSI overbought"));
}

#[test]
fn the_seed_filter_form_matches_rsi_range_trend_and_volatility_band() {
    let mut i = indicators();
    i.rsi_1h = Some(28.0);
    i.market_condition = RegimeTag::TrendingDown;
    i.volatility_percentile = Some(80.0);
    let filter = SetupFilter {
        rsi_timeframe: RsiTimeframe::H1,
        rsi_min: Some(25.0),
        rsi_max: Some(35.0),
        market_condition: Some(RegimeTag::TrendingDown),
        volatility: Some(VolatilityBand::High),
    };
    assert!(filter.matches(&i));
    assert!(
        !SetupFilter {
            rsi_max: Some(27.9),
            ..filter.clone()
        }
        .matches(&i)
    );
    assert!(
        !SetupFilter {
            market_condition: Some(RegimeTag::Ranging),
            ..filter.clone()
        }
        .matches(&i)
    );
    assert!(
        !SetupFilter {
            volatility: Some(VolatilityBand::Medium),
            ..filter.clone()
        }
        .matches(&i)
    );
    // A bound on a reading the snapshot lacks does not match; no bound matches anything.
    assert!(
        !SetupFilter {
            rsi_timeframe: RsiTimeframe::M15,
            ..filter.clone()
        }
        .matches(&i)
    );
    assert!(SetupFilter::default().matches(&i));
    // Thirds: 33.3 is low, 33.4 medium, 66.7 high.
    assert_eq!(VolatilityBand::of(33.3), VolatilityBand::Low);
    assert_eq!(VolatilityBand::of(33.4), VolatilityBand::Medium);
    assert_eq!(VolatilityBand::of(66.7), VolatilityBand::High);
}

#[test]
fn what_worked_ranks_directions_confidence_and_setups() {
    let at = t0();
    let mut rows = Vec::new();
    // Longs: 3 of 4 win (75 %); shorts: 1 of 3 (33.3 %).
    for (n, (g, conf)) in [
        (Grade::A, 85),
        (Grade::B, 80),
        (Grade::B, 75),
        (Grade::D, 55),
    ]
    .into_iter()
    .enumerate()
    {
        rows.push(outcome(n as u128, at, Side::Long, conf, Some((g, dec!(1)))));
    }
    for (n, (g, conf)) in [(Grade::A, 90), (Grade::F, 60), (Grade::F, 65)]
        .into_iter()
        .enumerate()
    {
        let mut r = outcome(10 + n as u128, at, Side::Short, conf, Some((g, dec!(-1))));
        r.indicators.rsi_1h = Some(75.0); // "RSI overbought"
        rows.push(r);
    }
    let w = what_worked(&rows);
    assert_eq!(w.long.win_rate_pct, Some(dec!(75.0)));
    assert_eq!(w.short.win_rate_pct, Some(dec!(33.3)));
    assert_eq!(w.best_direction, Some(Side::Long));
    // Overall 4 of 7 = 57.1 %; confidence ≥ 70: 4 of 4 (85, 80, 75, 90) = 100 %, the best rate,
    // first reached at the 70 cut (≥ 50 and ≥ 60 include the losers).
    assert_eq!(w.overall.win_rate_pct, Some(dec!(57.1)));
    assert_eq!(w.confidence_threshold, Some(70));
    // Setups with ≥ 3 graded: "no clear signal" 3 of 4 (75 %), "RSI overbought" 1 of 3 (33.3 %,
    // below 40 %: avoid).
    let all = setups(&rows);
    assert_eq!(all.len(), 2);
    assert_eq!(
        w.best_setup.as_ref().map(|s| s.setup.as_str()),
        Some("no clear signal")
    );
    assert_eq!(w.avoid.len(), 1);
    assert_eq!(w.avoid[0].setup, "RSI overbought");
}

fn block(symbols: &[SymbolMemory]) -> String {
    let mut out = String::new();
    write_trading_memory(&mut out, symbols);
    out
}

#[test]
fn the_block_in_seed_003s_shape() {
    let now = t0() + Duration::days(10);
    let mut recent = Vec::new();
    // Newest first: one pending (decided 2h ago), then graded ones a day apart.
    let mut pending = outcome(1, now - Duration::hours(2), Side::Long, 72, None);
    pending.outcome.score.price_1h = Some(dec!(100.2));
    pending.outcome.score.pnl_percent_1h = Some(dec!(0.2));
    recent.push(pending);
    let grades = [
        (Grade::B, dec!(2.1), Side::Long, 80),
        (Grade::D, dec!(-1.8), Side::Short, 65),
        (Grade::A, dec!(3.05), Side::Long, 90),
        (Grade::C, dec!(0.4), Side::Short, 55),
        (Grade::F, dec!(-3.2), Side::Long, 78),
    ];
    for (n, (g, pnl, side, conf)) in grades.into_iter().enumerate() {
        let at = now - Duration::days(n as i64 + 1);
        let mut r = outcome(10 + n as u128, at, side, conf, Some((g, pnl)));
        if n == 1 {
            r.outcome.verdict = OutcomeVerdict::Rejected;
        }
        if n % 2 == 0 {
            r.indicators.rsi_1h = Some(27.0);
            r.indicators.volume_ratio = Some(2.0);
        }
        recent.push(r);
    }
    let last_30_days = recent.clone();
    // In the condition: the five graded ones and an older short of another symbol.
    let mut in_condition: Vec<RecalledOutcome> = recent[1..].to_vec();
    let mut older = outcome(
        30,
        now - Duration::days(15),
        Side::Short,
        50,
        Some((Grade::D, dec!(-0.6))),
    );
    older.outcome.symbol = "GBPUSD".into();
    in_condition.push(older);
    let memory = SymbolMemory {
        symbol: "EURUSD".into(),
        recent: recent.clone(),
        last_30_days,
        condition: Some(RegimeTag::Ranging),
        in_condition,
    };
    let empty = SymbolMemory {
        symbol: "GBPUSD".into(),
        recent: Vec::new(),
        last_30_days: Vec::new(),
        condition: None,
        in_condition: Vec::new(),
    };
    insta::assert_snapshot!("trading_memory_block", block(&[memory, empty]));
}

#[test]
fn the_block_rounds_a_mean_once() {
    // Three graded outcomes whose 24h mean is −0.034968 %: at 2 decimals −0.03 %. Rounding the
    // 4-decimal mean (−0.0350) again would show −0.04 %.
    let now = t0() + Duration::days(10);
    let pnls = [dec!(-0.1049), dec!(0.0), dec!(-0.000004)];
    let rows: Vec<RecalledOutcome> = pnls
        .into_iter()
        .enumerate()
        .map(|(n, p)| {
            let at = now - Duration::days(n as i64 + 1);
            outcome(40 + n as u128, at, Side::Long, 60, Some((Grade::C, p)))
        })
        .collect();
    assert_eq!(stats(&rows).avg_pnl_24h_pct, Some(dec!(-0.0350)));
    assert_eq!(
        outcomes::stats::stats_dp(&rows, 2).avg_pnl_24h_pct,
        Some(dec!(-0.03))
    );
    let memory = SymbolMemory {
        symbol: "EURUSD".into(),
        recent: rows.clone(),
        last_30_days: rows.clone(),
        condition: Some(RegimeTag::Ranging),
        in_condition: rows,
    };
    let text = block(&[memory]);
    assert!(text.contains("Avg P&L 24h: -0.03%"), "{text}");
    assert!(!text.contains("-0.04%"), "{text}");
}
