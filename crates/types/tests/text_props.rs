//! The prompt-text writers print exactly what the `String` formatting they replaced printed:
//! `push_decimal` is `Decimal`'s `Display`, `push_fixed` is round + rescale + `Display`, and the
//! grouped styles match their former implementations (kept here as references; money is checked
//! against its one style, cents always).

use proptest::prelude::*;
use rust_decimal::{Decimal, RoundingStrategy};
use types::text::{self, fixed, push_decimal, push_fixed, push_uint};

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

    pub(crate) fn fixed(d: Decimal, dp: u32) -> String {
        let mut r = round(d, dp);
        r.rescale(dp);
        group(&r.to_string())
    }

    pub(crate) fn price(p: Decimal) -> String {
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

    /// The one money style: cents always, thousands grouped.
    pub(crate) fn money(d: Decimal) -> String {
        let s = fixed(d, 2);
        match s.strip_prefix('-') {
            Some(rest) => format!("-${rest}"),
            None => format!("${s}"),
        }
    }

    pub(crate) fn signed_money(d: Decimal) -> String {
        let s = fixed(d, 2);
        match s.strip_prefix('-') {
            Some(rest) => format!("-${rest}"),
            None if s == "0.00" => format!("${s}"),
            None => format!("+${s}"),
        }
    }

    pub(crate) fn percent_of(part: Decimal, whole: Decimal) -> Option<String> {
        if whole.is_zero() {
            return None;
        }
        let pct = part.checked_mul(Decimal::ONE_HUNDRED)?.checked_div(whole)?;
        Some(format!("{}%", fixed(pct, 1)))
    }

    pub(crate) fn duration_minutes(minutes: i64) -> String {
        let m = minutes.max(0);
        if m < 1440 {
            format!("{m}m")
        } else {
            format!("{}d {}h", m / 1440, (m % 1440) / 60)
        }
    }

    pub(crate) fn quoted(text: &str) -> String {
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
fn money_like() -> impl Strategy<Value = Decimal> {
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

/// Any decimal: every mantissa width (32, 64 and 96 bits), every scale, both signs, zeros
/// included (negative zero too), and values on a rounding midpoint (`…5`, `…50`).
fn decimal() -> impl Strategy<Value = Decimal> {
    let mantissa = prop_oneof![
        Just((0_u32, 0_u32, 0_u32)),
        any::<u32>().prop_map(|lo| (lo, 0, 0)),
        (0_u32..1000).prop_map(|lo| (lo, 0, 0)),
        (0_u32..1000).prop_map(|n| (n * 10 + 5, 0, 0)),
        (0_u64..10_000_000).prop_map(|n| {
            let m = n * 100 + 50;
            (m as u32, (m >> 32) as u32, 0)
        }),
        (any::<u32>(), any::<u32>()).prop_map(|(lo, mid)| (lo, mid, 0)),
        Just((u32::MAX, u32::MAX, 0)),
        Just((0x8AC7_2304, 0x8AC7_2304, 0)),
        (any::<u32>(), any::<u32>(), any::<u32>()),
    ];
    (mantissa, any::<bool>(), 0_u32..=28).prop_map(|((lo, mid, hi), negative, scale)| {
        Decimal::from_parts(lo, mid, hi, negative, scale)
    })
}

/// `fixed` as it was written before the buffer writers.
fn reference_fixed(d: Decimal, dp: u32) -> String {
    let mut r = d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero);
    r.rescale(dp);
    r.to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn numbers_print_as_before(d in money_like(), whole in money_like(), dp in 0_u32..=30) {
        prop_assert_eq!(text::grouped_fixed(d, dp), reference::fixed(d, dp));
        prop_assert_eq!(text::money(d), reference::money(d));
        prop_assert_eq!(text::signed_money(d), reference::signed_money(d));
        prop_assert_eq!(text::price(d), reference::price(d));
        prop_assert_eq!(text::percent_of(d, whole), reference::percent_of(d, whole));
    }

    #[test]
    fn durations_print_as_before(m in any::<i64>()) {
        prop_assert_eq!(text::duration_minutes(m), reference::duration_minutes(m));
    }

    #[test]
    fn quotes_escape_as_before(text in r#"[ a-z"\\\n\r\t\x00-\x1f\x7f\u{80}-\u{9f}\u{2028}\u{2029}é→😀]{0,40}"#) {
        prop_assert_eq!(text::quoted(&text), reference::quoted(&text));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn push_decimal_prints_what_display_prints(d in decimal(), prefix in "[a-z]{0,3}") {
        let mut out = prefix.clone();
        push_decimal(&mut out, d);
        prop_assert_eq!(out, format!("{prefix}{d}"));
    }

    #[test]
    fn push_fixed_prints_what_round_rescale_display_printed(d in decimal(), dp in 0_u32..=30) {
        let mut out = String::new();
        push_fixed(&mut out, d, dp);
        prop_assert_eq!(&out, &reference_fixed(d, dp));
        prop_assert_eq!(fixed(d, dp), out);
    }

    #[test]
    fn push_uint_prints_what_display_prints(n in any::<u64>()) {
        let mut out = String::new();
        push_uint(&mut out, n);
        prop_assert_eq!(out, n.to_string());
    }
}

#[test]
fn edge_cases_print_as_display_does() {
    for d in [
        Decimal::ZERO,
        Decimal::NEGATIVE_ONE,
        Decimal::MAX,
        Decimal::MIN,
        Decimal::from_parts(0, 0, 0, true, 2),
        Decimal::from_parts(5, 0, 0, false, 2),
        Decimal::from_parts(5, 0, 0, true, 28),
        Decimal::from_parts(u32::MAX, u32::MAX, u32::MAX, true, 28),
    ] {
        let mut out = String::new();
        push_decimal(&mut out, d);
        assert_eq!(out, d.to_string());
    }
    let mut out = String::new();
    push_uint(&mut out, 0);
    assert_eq!(out, "0");
}
