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
    let expected = "\
- Overall: n=6, win rate 66.7% (4 of 6), average net +$11.12, average hold 98m, 2 losses; PnL is net of fees and a win is a net PnL above $0.
- Worst recurring setup: BTC long in ranging regime (n=3, win rate 33.3% (1 of 3), average net -$4.50, average hold 45m). Be stricter before repeating it; the strategy's rules still decide.
- Best recurring setup: ETH short in trending_down regime (n=2, win rate 100.0% (2 of 2), average net +$15.60, average hold 180m). Worth repeating when the strategy's conditions line up again.
- Setup BTC long in ranging regime: n=3, win rate 33.3% (1 of 3), average net -$4.50, average hold 45m.
- Setup ETH long in trending_up regime: n=1, win rate 100.0% (1 of 1), average net +$49.00, average hold 90m.
- Setup ETH short in trending_down regime: n=2, win rate 100.0% (2 of 2), average net +$15.60, average hold 180m.";
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
    let text = stats_lessons(&refs);
    // net: −10.50 and +4.50 → Σ −6.00 / 2 = −3.00
    assert!(
        text.starts_with(
            "- Overall: n=2, win rate 50.0% (1 of 2), average net -$3.00, average hold 30m, 1 loss;"
        ),
        "{text}"
    );
    assert!(
        text.contains("- Tiny sample (n=2): these numbers are anecdotes, not evidence"),
        "{text}"
    );
    assert!(text.contains("- No setup recurred (each symbol × side × entry regime appears once, n=1 each, 2 setups)"), "{text}");
    assert!(!text.contains("Worst recurring"), "{text}");
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
    let text = stats_lessons(&refs);
    assert!(
        text.contains("- No recurring setup (n≥2) lost money on average."),
        "{text}"
    );
    // (2.50 + 1.50) / 2 = 2.00
    assert!(text.contains("- Best recurring setup: BTC long in untagged regime (n=2, win rate 100.0% (2 of 2), average net +$2.00"), "{text}");
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
    let last = text.lines().last().expect("bullets");
    // 80 setups of one trade each; the first 15 fit, the rest is summarised.
    assert_eq!(last, "- (65 more setups not listed, n=65 trades.)");
    // Every bullet, the summary line included, states a sample size.
    assert!(text.lines().all(|l| l.contains("n=")), "{text}");
    assert!(stats_lessons(&[]).is_empty());
}
