//! Invariants over arbitrary input: the bounds hold on every path.

use crate::common;

use common::{at, closed};
use proptest::prelude::*;
use reflection::{ELLIPSIS, MAX_LESSONS_CHARS, bound_lessons, stats_lessons};
use rust_decimal::Decimal;
use types::{RegimeTag, Side, TradeRecord};

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-*•]? ?[a-zA-Z ,.()$=0-9]{0,300}",
        "[0-9]{1,2}[.)] [a-z ]{0,120}",
        "[ \t]*",
        "```",
        "# [A-Za-z ]{0,20}",
        "[a-z]{1,2600}",
    ]
}

proptest! {
    #[test]
    fn bounded_lessons_are_short_bullets(lines in prop::collection::vec(line(), 0..40), truncated in any::<bool>()) {
        let reply = lines.join("\n");
        let b = bound_lessons(&reply, truncated);
        prop_assert!(b.text.chars().count() <= MAX_LESSONS_CHARS);
        for l in b.text.lines() {
            prop_assert!(l.starts_with("- "), "{l:?}");
            prop_assert!(l.len() > 2, "empty bullet");
            prop_assert!(!l.ends_with(' '));
        }
        // Bounding is idempotent: a stored note re-bounded does not change.
        let again = bound_lessons(&b.text, false);
        prop_assert_eq!(&again.text, &b.text);
        prop_assert!(!again.cut);
        // Only a cut single bullet ends with the ellipsis it did not have.
        if b.text.ends_with(ELLIPSIS) && !reply.contains(ELLIPSIS) {
            prop_assert!(b.cut);
            prop_assert_eq!(b.text.lines().count(), 1);
        }
    }

    #[test]
    fn stats_lessons_fit_for_any_ledger(
        rows in prop::collection::vec((0u8..30, any::<bool>(), 0u8..5, -50_000i64..50_000, 0i64..500, 1i64..3000), 1..150)
    ) {
        let trades: Vec<TradeRecord> = rows
            .iter()
            .enumerate()
            .map(|(i, (sym, long, regime, cents, fee_cents, hold))| {
                let regime = [RegimeTag::TrendingUp, RegimeTag::TrendingDown, RegimeTag::Ranging, RegimeTag::Volatile, RegimeTag::Unknown][usize::from(*regime)];
                closed(
                    i as u128 + 1,
                    &format!("S{sym}"),
                    if *long { Side::Long } else { Side::Short },
                    Some(regime),
                    at(4, 1, 0) + chrono::Duration::minutes(i as i64),
                    *hold,
                    Decimal::new(*cents, 2),
                    Decimal::new(*fee_cents, 2),
                )
            })
            .collect();
        let refs: Vec<&TradeRecord> = trades.iter().collect();
        let text = stats_lessons(&refs);
        prop_assert!(text.chars().count() <= MAX_LESSONS_CHARS);
        prop_assert!(text.starts_with("- All trades of the window: "), "{}", text);
        prop_assert!(text.lines().all(|l| l.starts_with("- ") && l.contains("n=")), "{}", text);
        prop_assert_eq!(bound_lessons(&text, false).text, text);
    }
}
