//! Invariants of the wire number rules, over many prices and sizes.

use std::str::FromStr;

use hyperliquid::format::{round_perp_price, round_size, to_wire};
use proptest::prelude::*;
use rust_decimal::Decimal;

/// Positive decimals from 10^-7 to ~10^7 with up to 10 decimals.
fn positive_decimal() -> impl Strategy<Value = Decimal> {
    (1i64..100_000_000_000_000_000, 0u32..=10)
        .prop_map(|(m, scale)| Decimal::new(m, scale + 7))
        .prop_filter("not too small", |d| *d >= Decimal::new(1, 7))
}

fn significant_figures(d: Decimal) -> u32 {
    let n = d.normalize();
    let digits = n.mantissa().unsigned_abs().to_string();
    u32::try_from(digits.trim_end_matches('0').len()).unwrap()
}

fn floor_log10(mut x: Decimal) -> i64 {
    let ten = Decimal::TEN;
    let mut e = 0;
    while x >= ten {
        x /= ten;
        e += 1;
    }
    while x < Decimal::ONE {
        x *= ten;
        e -= 1;
    }
    e
}

proptest! {
    #[test]
    fn sizes_never_grow_and_fit_the_lot(size in positive_decimal(), szd in 0u32..=5) {
        let r = round_size(size, szd);
        prop_assert!(r <= size);
        prop_assert!(r.scale() <= szd);
        // less than one lot is lost: size − r < 10^−szd
        prop_assert!(size - r < Decimal::new(1, szd));
    }

    #[test]
    fn prices_obey_tick_rules(px in positive_decimal(), szd in 0u32..=5) {
        if let Ok(r) = round_perp_price(px, szd) {
            prop_assert!(r > Decimal::ZERO);
            prop_assert!(r.scale() <= 6 - szd, "{} has too many decimals", r);
            prop_assert!(r.fract().is_zero() || significant_figures(r) <= 5, "{} has > 5 sig figs", r);
            // the wire string parses back to the same value
            let s = to_wire("price", r).unwrap();
            prop_assert_eq!(Decimal::from_str(&s).unwrap(), r);
            prop_assert!(!s.contains('e') && !s.ends_with('.'));
            // rounding moves the price by at most half a tick, the tick being 10^−dp with
            // dp = min(max(0, 4 − floor(log10 px)), 6 − szd)
            let dp = (4 - floor_log10(px)).max(0).min(i64::from(6 - szd));
            let half_tick = Decimal::new(5, u32::try_from(dp).unwrap() + 1);
            prop_assert!((r - px).abs() <= half_tick, "{} → {} (dp {})", px, r, dp);
        }
    }
}
