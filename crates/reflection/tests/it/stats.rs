//! builtin/stats-reflection on hand-made ledgers, numbers written out.

use crate::common;

use common::{at, closed};
use reflection::{LedgerStats, MAX_LESSONS_CHARS, SetupKey, stats_lessons};
use rust_decimal_macros::dec;
use types::{RegimeTag, Side, TradeRecord};

/// Net = gross − fees.
/// BTC long ranging:       −10.00−0.50 = −10.50 (30m), −6.00−0.50 = −6.50 (60m), +4.00−0.50 = +3.50 (45m)
/// ETH short trending_down: +20.00−0.40 = +19.60 (120m), +12.00−0.40 = +11.60 (240m)
/// ETH long trending_up:    +50.00−1.00 = +49.00 (90m), a single trade
fn ledger() -> Vec<TradeRecord> {
    vec![
        closed(
            1,
            "BTC",
            Side::Long,
            Some(RegimeTag::Ranging),
            at(4, 1, 0),
            30,
            dec!(-10.00),
            dec!(0.50),
        ),
        closed(
            2,
            "BTC",
            Side::Long,
            Some(RegimeTag::Ranging),
            at(4, 3, 0),
            60,
            dec!(-6.00),
            dec!(0.50),
        ),
        closed(
            3,
            "BTC",
            Side::Long,
            Some(RegimeTag::Ranging),
            at(4, 5, 0),
            45,
            dec!(4.00),
            dec!(0.50),
        ),
        closed(
            4,
            "ETH",
            Side::Short,
            Some(RegimeTag::TrendingDown),
            at(4, 7, 0),
            120,
            dec!(20.00),
            dec!(0.40),
        ),
        closed(
            5,
            "ETH",
            Side::Short,
            Some(RegimeTag::TrendingDown),
            at(4, 11, 0),
            240,
            dec!(12.00),
            dec!(0.40),
        ),
        closed(
            6,
            "ETH",
            Side::Long,
            Some(RegimeTag::TrendingUp),
            at(4, 13, 0),
            90,
            dec!(50.00),
            dec!(1.00),
        ),
    ]
}

#[test]
fn groups_and_extremes() {
    let rows = ledger();
    let stats = LedgerStats::of(&rows);
    // Overall: Σnet = −10.50 −6.50 +3.50 +19.60 +11.60 +49.00 = 66.70 over n=6 → 11.1166… → +$11.12
    assert_eq!(stats.overall.trades, 6);
    assert_eq!(stats.overall.wins, 4);
    assert_eq!(stats.overall.losses, 2);
    assert_eq!(stats.overall.net_pnl_usd, dec!(66.70));
    assert_eq!(stats.overall.fees_usd, dec!(3.30)); // 3 × 0.50 + 2 × 0.40 + 1.00
    // Σhold = 30 + 60 + 45 + 120 + 240 + 90 = 585 → 97.5 → 98m (half away from zero)
    assert_eq!(stats.overall.avg_hold_minutes(), 98);

    let (worst_key, worst) = stats.worst().expect("a losing recurring setup");
    assert_eq!(
        worst_key,
        &SetupKey {
            symbol: "BTC".into(),
            side: "long",
            regime: "ranging",
            side_value: types::Side::Long,
            regime_value: types::SetupRegime::Ranging,
        }
    );
    // (−10.50 − 6.50 + 3.50) / 3 = −13.50 / 3 = −4.50
    assert_eq!(worst.avg_net_usd(), dec!(-4.50));
    // The best is ETH short (n=2, +15.60), not the single ETH long (+49.00, n=1).
    let (best_key, best) = stats.best().expect("a winning recurring setup");
    assert_eq!(best_key.symbol, "ETH");
    assert_eq!(best_key.side, "short");
    // (19.60 + 11.60) / 2 = 31.20 / 2 = 15.60
    assert_eq!(best.avg_net_usd(), dec!(15.60));
}

#[test]
fn the_stats_note_word_for_word() {
    let rows = ledger();
    let refs: Vec<&TradeRecord> = rows.iter().collect();
    let text = stats_lessons(&refs);
    // Overall: 4 of 6 won, net +$66.70 / 6 = +$11.12. BTC long ranging (the worst recurring
    // setup): nets −10.50, −6.50, +3.50 = −13.50 / 3 = −4.50; MFE 1, 1, 5 (avg 7 / 3 = 2.33),
    // and two of the three closed below half their MFE (−10.50 < 0.50, −6.50 < 0.50; +3.50 ≥
    // 2.50); MAE −11, −7 on the losers (avg −9.00); the window's average hold is 97.5m, half is
    // 48.75m, and one loser of two (30m) closed faster. ETH short trending_down (the best):
    // +19.60 + 11.60 = +31.20 / 2 = +15.60.
    let expected = "\
- All trades of the window: won 4 of 6 (n=6, net +$66.70, average net +$11.12). Worth repeating when the strategy's conditions line up again.
- BTC long in ranging regime: lost 2 of 3 (n=3, net -$13.50, average net -$4.50). Stay out of this setup until it shows better results.
- ETH short in trending_down regime: won 2 of 2 (n=2, net +$31.20, average net +$15.60). Worth repeating when the strategy's conditions line up again.
- BTC long in ranging regime: 2 of 3 trades in profit closed with less than half of their best open profit (n=3, average MFE +$2.33, average net -$4.50). Protect open profit sooner; the strategy's exits still decide.
- BTC long in ranging regime: 1 of 2 losing trades ended on a stop or within 49m (n=3, average MAE -$9.00, net -$13.50). Wait for confirmation before entering; the strategy's rules still decide.";
    assert_eq!(text, expected);
    // Every bullet states its sample size.
    assert!(text.lines().all(|l| l.contains("n=")), "{text}");
}

#[test]
fn a_tiny_sample_says_so() {
    let rows = [
        closed(
            1,
            "BTC",
            Side::Long,
            Some(RegimeTag::Ranging),
            at(4, 1, 0),
            30,
            dec!(-10.00),
            dec!(0.50),
        ),
        closed(
            2,
            "ETH",
            Side::Short,
            None,
            at(4, 2, 0),
            30,
            dec!(5.00),
            dec!(0.50),
        ),
    ];
    let refs: Vec<&TradeRecord> = rows.iter().collect();
    // net: −10.50 and +4.50 → Σ −6.00; no setup recurs, so nothing is said about one.
    assert_eq!(
        stats_lessons(&refs),
        "- All trades of the window: only 2 trades (n=2, net -$6.00), too few to conclude anything. Treat it as an anecdote, not evidence."
    );
}

#[test]
fn no_losing_recurring_setup_is_stated_not_invented() {
    let rows = [
        closed(
            1,
            "BTC",
            Side::Long,
            None,
            at(4, 1, 0),
            30,
            dec!(3.00),
            dec!(0.50),
        ),
        closed(
            2,
            "BTC",
            Side::Long,
            None,
            at(4, 2, 0),
            30,
            dec!(2.00),
            dec!(0.50),
        ),
    ];
    let refs: Vec<&TradeRecord> = rows.iter().collect();
    // (2.50 + 1.50) / 2 = 2.00; no "lost" bullet: no setup lost money.
    assert_eq!(
        stats_lessons(&refs),
        "- All trades of the window: only 2 trades (n=2, net +$4.00), too few to conclude anything. Treat it as an anecdote, not evidence.\n\
         - BTC long in untagged regime: won 2 of 2 (n=2, net +$4.00, average net +$2.00). Worth repeating when the strategy's conditions line up again."
    );
}

#[test]
fn many_setups_stay_within_the_cap() {
    let rows: Vec<TradeRecord> = (0..80u32)
        .map(|i| {
            closed(
                u128::from(i) + 1,
                &format!("SYM{i:02}"),
                Side::Long,
                Some(RegimeTag::Volatile),
                at(4, 1, 0) + chrono::Duration::minutes(i64::from(i)),
                30,
                dec!(1.00),
                dec!(0.10),
            )
        })
        .collect();
    let refs: Vec<&TradeRecord> = rows.iter().collect();
    let text = stats_lessons(&refs);
    assert!(
        text.chars().count() <= MAX_LESSONS_CHARS,
        "{}",
        text.chars().count()
    );
    assert!(text.lines().count() <= types::MAX_OBSERVATIONS, "{text}");
    // 80 setups of one trade each: none recurs, so only the window is spoken of (80 × 0.90).
    assert_eq!(
        text,
        "- All trades of the window: won 80 of 80 (n=80, net +$72.00, average net +$0.90). Worth repeating when the strategy's conditions line up again."
    );
    assert!(text.lines().all(|l| l.contains("n=")), "{text}");
    assert!(stats_lessons(&[]).is_empty());
}
