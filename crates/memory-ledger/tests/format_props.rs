//! The formatting functions print exactly what they printed before they wrote into buffers: each
//! is checked against its former `String` implementation (kept here as the reference).

use memory_ledger::format;
use proptest::prelude::*;
use rust_decimal::Decimal;

mod reference {
    use rust_decimal::{Decimal, RoundingStrategy};

    fn round(d: Decimal, dp: u32) -> Decimal {
        let mut r = d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero);
        if r.is_zero() {
            r.set_sign_positive(true);
        }
        r
    }

    fn group(plain: &str) -> String {
        let (sign, rest) = match plain.strip_prefix('-') {
            Some(r) => ("-", r),
            None => ("", plain),
        };
        let (int, frac) = match rest.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (rest, None),
        };
        let mut out = String::with_capacity(plain.len() + int.len() / 3);
        out.push_str(sign);
        let len = int.len();
        for (i, ch) in int.chars().enumerate() {
            if i > 0 && (len - i) % 3 == 0 {
                out.push(',');
            }
            out.push(ch);
        }
        if let Some(f) = frac {
            out.push('.');
            out.push_str(f);
        }
        out
    }

    pub fn fixed(d: Decimal, dp: u32) -> String {
        let mut r = round(d, dp);
        r.rescale(dp);
        group(&r.to_string())
    }

    pub fn price(p: Decimal) -> String {
        let abs = p.abs();
        let dp = if abs.is_zero() {
            0
        } else if abs >= Decimal::ONE {
            let int_digits = u32::try_from(abs.trunc().to_string().len()).unwrap();
            6_u32.saturating_sub(int_digits)
        } else {
            let mut zeros = 0;
            let mut x = abs;
            while x < Decimal::new(1, 1) && zeros < 10 {
                x *= Decimal::TEN;
                zeros += 1;
            }
            zeros + 6
        }
        .min(10);
        group(&round(p, dp).normalize().to_string())
    }

    pub fn usd(d: Decimal) -> String {
        let dp = if d.abs() >= Decimal::ONE_HUNDRED {
            0
        } else {
            2
        };
        let s = fixed(d, dp);
        match s.strip_prefix('-') {
            Some(rest) => format!("-${rest}"),
            None => format!("${s}"),
        }
    }

    pub fn signed_usd(d: Decimal) -> String {
        let s = fixed(d, 2);
        match s.strip_prefix('-') {
            Some(rest) => format!("-${rest}"),
            None if s == "0.00" => format!("${s}"),
            None => format!("+${s}"),
        }
    }

    pub fn percent(part: Decimal, whole: Decimal) -> Option<String> {
        if whole.is_zero() {
            return None;
        }
        let pct = part.checked_mul(Decimal::ONE_HUNDRED)?.checked_div(whole)?;
        Some(format!("{}%", fixed(pct, 1)))
    }

    pub fn duration_minutes(minutes: i64) -> String {
        let m = minutes.max(0);
        if m < 1440 {
            format!("{m}m")
        } else {
            format!("{}d {}h", m / 1440, (m % 1440) / 60)
        }
    }

    pub fn quoted(text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 2);
        out.push('"');
        for ch in text.chars() {
            match ch {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                    out.push_str(&format!("\\u{{{:x}}}", c as u32));
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }
}

/// Money- and price-like decimals (up to 64-bit mantissas, scales 0..=12, both signs) and a few
/// extreme ones.
fn decimal() -> impl Strategy<Value = Decimal> {
    prop_oneof![
        4 => (any::<i64>(), 0_u32..=12).prop_map(|(m, s)| Decimal::new(m, s)),
        4 => (-10_000_000_i64..10_000_000, 0_u32..=6).prop_map(|(m, s)| Decimal::new(m, s)),
        // Near zero, on rounding midpoints, at high scales.
        2 => (-1000_i64..1000, 0_u32..=28).prop_map(|(m, s)| Decimal::new(m, s)),
        2 => (-1000_i64..1000, 1_u32..=28).prop_map(|(m, s)| Decimal::new(m * 10 + 5, s)),
        1 => (any::<u64>(), any::<bool>(), 0_u32..=28).prop_map(|(m, neg, s)| {
            Decimal::from_parts(m as u32, (m >> 32) as u32, 0, neg, s)
        }),
        1 => (any::<u32>(), any::<u32>(), any::<u32>(), any::<bool>(), 0_u32..=28).prop_map(
            |(lo, mid, hi, neg, s)| Decimal::from_parts(lo, mid, hi, neg, s)
        ),
        1 => Just(Decimal::from_parts(0, 0, 0, true, 3)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn numbers_print_as_before(d in decimal(), whole in decimal(), dp in 0_u32..=30) {
        prop_assert_eq!(format::fixed(d, dp), reference::fixed(d, dp));
        prop_assert_eq!(format::usd(d), reference::usd(d));
        prop_assert_eq!(format::signed_usd(d), reference::signed_usd(d));
        prop_assert_eq!(format::price(d), reference::price(d));
        prop_assert_eq!(format::percent(d, whole), reference::percent(d, whole));
    }

    #[test]
    fn durations_print_as_before(m in any::<i64>()) {
        prop_assert_eq!(format::duration_minutes(m), reference::duration_minutes(m));
    }

    #[test]
    fn quotes_escape_as_before(text in r#"[ a-z"\\\n\r\t\x00-\x1f\x7f\u{80}-\u{9f}\u{2028}\u{2029}é→😀]{0,40}"#) {
        prop_assert_eq!(format::quoted(&text), reference::quoted(&text));
    }
}

/// A few of the documented examples.
#[test]
fn documented_examples_hold() {
    assert_eq!(format::price(Decimal::new(65200, 0)), "65,200");
    assert_eq!(format::usd(Decimal::new(-125_004, 1)), "-$12,500");
    assert_eq!(format::signed_usd(Decimal::new(-1, 3)), "$0.00");
}
