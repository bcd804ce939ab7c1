//! The buffer writers print exactly what the `String` formatting they replace printed:
//! `push_decimal` is `Decimal`'s `Display`, `push_fixed` is round + rescale + `Display`,
//! `push_one_line` is `split_whitespace` joined by one space.

use proptest::prelude::*;
use rust_decimal::{Decimal, RoundingStrategy};
use tools::{fixed, one_line, push_decimal, push_fixed, push_one_line, push_uint};

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

    #[test]
    fn push_one_line_joins_the_words_by_one_space(
        text in r"[ a-zA-Z#\t\n\r\x0b\x0c\x7f\u{85}\u{a0}\u{2028}\u{3000}é→]{0,60}",
    ) {
        let reference = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut out = String::from(">");
        push_one_line(&mut out, &text);
        prop_assert_eq!(&out[1..], reference.as_str());
        prop_assert_eq!(one_line(&text), reference);
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
    for text in ["", " ", "a", " a", "a ", "a  b", "a b", "a\tb", "\u{a0}"] {
        assert_eq!(
            one_line(text),
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }
}
