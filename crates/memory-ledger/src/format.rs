//! Deterministic number and text formatting for prompt text: no floats, no locale.

use std::fmt::Write as _;

use rust_decimal::{Decimal, RoundingStrategy};

/// Significant digits shown for a price (at least; integer digits are never cut).
const PRICE_SIGNIFICANT: u32 = 6;
/// Never more decimals than this for a price.
const PRICE_MAX_DP: u32 = 10;

fn round(d: Decimal, dp: u32) -> Decimal {
    let mut r = d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero);
    if r.is_zero() {
        r.set_sign_positive(true);
    }
    r
}

/// Writes `|d|` as `Decimal`'s `Display` would (every digit of the mantissa, `d.scale()`
/// decimals, a leading `0` before the point when there is no integer digit), with `,` every
/// three integer digits. The sign is the caller's.
fn push_abs_grouped(out: &mut String, d: &Decimal) {
    // Least significant digit first; a `Decimal` mantissa has at most 29 digits.
    let mut digits = [0u8; 40];
    let mut n = 0;
    let mantissa = d.mantissa().unsigned_abs();
    if let Ok(mut m) = u64::try_from(mantissa) {
        while m != 0 {
            digits[n] = (m % 10) as u8;
            m /= 10;
            n += 1;
        }
    } else {
        let mut m = mantissa;
        while m != 0 {
            digits[n] = (m % 10) as u8;
            m /= 10;
            n += 1;
        }
    }
    let scale = d.scale() as usize;
    // Zero-padded to at least `scale` digits, as `Display` does.
    let len = n.max(scale);
    let int_len = len - scale;
    let digit = |k: usize| char::from(b'0' + digits[len - 1 - k]);
    if int_len == 0 {
        out.push('0');
    }
    for k in 0..int_len {
        if k > 0 && (int_len - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit(k));
    }
    if scale > 0 {
        out.push('.');
        for k in int_len..len {
            out.push(digit(k));
        }
    }
}

/// `d` rounded half away from zero and rescaled to `dp` decimals (a zero is never negative).
fn rounded_fixed(d: Decimal, dp: u32) -> Decimal {
    let mut r = round(d, dp);
    r.rescale(dp);
    r
}

/// `d` with exactly `dp` decimals (half away from zero) and thousands separators.
#[must_use]
pub fn fixed(d: Decimal, dp: u32) -> String {
    let r = rounded_fixed(d, dp);
    let mut out = String::with_capacity(24);
    if r.is_sign_negative() {
        out.push('-');
    }
    push_abs_grouped(&mut out, &r);
    out
}

/// A price at its own scale: at least six significant digits (never cutting integer digits),
/// trailing zeros dropped, thousands separators. `65200` → `65,200`; `1.07219` → `1.07219`;
/// `0.078325` → `0.078325`; `3410.456` → `3,410.46`.
#[must_use]
pub fn price(p: Decimal) -> String {
    let mut out = String::with_capacity(24);
    push_price(&mut out, p);
    out
}

/// [`price`], written into `out`.
pub fn push_price(out: &mut String, p: Decimal) {
    let abs = p.abs();
    let dp = if abs.is_zero() {
        0
    } else if abs >= Decimal::ONE {
        // The digits of the integer part (a truncated `Decimal` has scale 0).
        let mut int = abs.trunc().mantissa().unsigned_abs();
        let mut int_digits = 0;
        while int != 0 {
            int /= 10;
            int_digits += 1;
        }
        PRICE_SIGNIFICANT.saturating_sub(int_digits)
    } else {
        // Count the zeros right after the decimal point.
        let mut zeros = 0;
        let mut x = abs;
        while x < Decimal::new(1, 1) && zeros < PRICE_MAX_DP {
            x *= Decimal::TEN;
            zeros += 1;
        }
        zeros + PRICE_SIGNIFICANT
    }
    .min(PRICE_MAX_DP);
    let r = round(p, dp).normalize();
    if r.is_sign_negative() {
        out.push('-');
    }
    push_abs_grouped(out, &r);
}

/// A size in dollars: whole dollars from $100 up, cents below. `$250`, `$12,500`, `$42.50`.
#[must_use]
pub fn usd(d: Decimal) -> String {
    let mut out = String::with_capacity(24);
    push_usd(&mut out, d);
    out
}

/// [`usd`], written into `out`.
pub fn push_usd(out: &mut String, d: Decimal) {
    let dp = if d.abs() >= Decimal::ONE_HUNDRED {
        0
    } else {
        2
    };
    let r = rounded_fixed(d, dp);
    out.push_str(if r.is_sign_negative() { "-$" } else { "$" });
    push_abs_grouped(out, &r);
}

/// A signed dollar amount with cents: `+$28.40`, `-$9.70`; zero (after rounding) is `$0.00`.
#[must_use]
pub fn signed_usd(d: Decimal) -> String {
    let mut out = String::with_capacity(24);
    push_signed_usd(&mut out, d);
    out
}

/// [`signed_usd`], written into `out`.
pub fn push_signed_usd(out: &mut String, d: Decimal) {
    let r = rounded_fixed(d, 2);
    out.push_str(if r.is_sign_negative() {
        "-$"
    } else if r.is_zero() {
        "$"
    } else {
        "+$"
    });
    push_abs_grouped(out, &r);
}

/// `part / whole` in percent with one decimal (`1.1%`, `-0.5%`); `None` when `whole` is zero.
#[must_use]
pub fn percent(part: Decimal, whole: Decimal) -> Option<String> {
    let mut out = String::with_capacity(12);
    push_percent(&mut out, part, whole).then_some(out)
}

/// [`percent`], written into `out`; false (nothing written) when it is `None`.
pub fn push_percent(out: &mut String, part: Decimal, whole: Decimal) -> bool {
    if whole.is_zero() {
        return false;
    }
    let Some(pct) = part
        .checked_mul(Decimal::ONE_HUNDRED)
        .and_then(|p| p.checked_div(whole))
    else {
        return false;
    };
    let r = rounded_fixed(pct, 1);
    if r.is_sign_negative() {
        out.push('-');
    }
    push_abs_grouped(out, &r);
    out.push('%');
    true
}

/// Whole minutes as `45m` under a day, `1d 3h` from a day on.
#[must_use]
pub fn duration_minutes(minutes: i64) -> String {
    let mut out = String::with_capacity(12);
    push_duration_minutes(&mut out, minutes);
    out
}

/// [`duration_minutes`], written into `out`.
pub fn push_duration_minutes(out: &mut String, minutes: i64) {
    let m = minutes.max(0);
    let _ = if m < 1440 {
        write!(out, "{m}m")
    } else {
        write!(out, "{}d {}h", m / 1440, (m % 1440) / 60)
    };
}

/// `text` as a double-quoted string literal: `\` `"` and control characters escaped, so a reason
/// can never break out of its quotes or start a new line of the prompt.
#[must_use]
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_quoted(&mut out, text);
    out
}

/// [`quoted`], written into `out`. Runs of bytes that need no escape are copied at once.
pub fn push_quoted(out: &mut String, text: &str) {
    out.push('"');
    let bytes = text.as_bytes();
    let mut plain = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !MAY_ESCAPE[usize::from(bytes[i])] {
            i += 1;
            continue;
        }
        // `i` is a char boundary: every byte that may start an escape is ASCII or a lead byte.
        let Some(ch) = text[i..].chars().next() else {
            break;
        };
        let escaped = match ch {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => "",
            _ => {
                i += ch.len_utf8();
                continue;
            }
        };
        out.push_str(&text[plain..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{{{:x}}}", ch as u32);
        } else {
            out.push_str(escaped);
        }
        i += ch.len_utf8();
        plain = i;
    }
    out.push_str(&text[plain..]);
    out.push('"');
}

/// Bytes that may start a char [`push_quoted`] escapes: ASCII controls, `"`, `\`, DEL, and the
/// UTF-8 lead bytes of U+0080..=U+009F (`C2`) and U+2028/U+2029 (`E2`).
const MAY_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[0x7f] = true;
    t[0xc2] = true;
    t[0xe2] = true;
    t
};

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rust_decimal_macros::dec;

    use super::*;

    /// The formatting as first written (through `Decimal`'s `Display` and `format!`): the
    /// functions above must give the same bytes.
    mod reference {
        use rust_decimal::Decimal;

        use super::super::{PRICE_MAX_DP, PRICE_SIGNIFICANT, round};

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
                let int_digits = abs.trunc().to_string().len() as u32;
                PRICE_SIGNIFICANT.saturating_sub(int_digits)
            } else {
                let mut zeros = 0;
                let mut x = abs;
                while x < Decimal::new(1, 1) && zeros < PRICE_MAX_DP {
                    x *= Decimal::TEN;
                    zeros += 1;
                }
                zeros + PRICE_SIGNIFICANT
            }
            .min(PRICE_MAX_DP);
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

    /// Any `Decimal`: every mantissa size (up to 96 bits), scale and sign, negative zero
    /// included, plus the usual shapes of money and prices.
    fn decimal() -> impl Strategy<Value = Decimal> {
        prop_oneof![
            (
                any::<u32>(),
                any::<u32>(),
                any::<u32>(),
                any::<bool>(),
                0u32..=28
            )
                .prop_map(|(lo, mid, hi, neg, scale)| Decimal::from_parts(lo, mid, hi, neg, scale)),
            (any::<u64>(), any::<bool>(), 0u32..=28).prop_map(|(m, neg, scale)| {
                Decimal::from_parts(m as u32, (m >> 32) as u32, 0, neg, scale)
            }),
            (-10_000_000i64..10_000_000, 0u32..=12).prop_map(|(m, scale)| Decimal::new(m, scale)),
            (any::<bool>(), 0u32..=28)
                .prop_map(|(neg, scale)| Decimal::from_parts(0, 0, 0, neg, scale)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn numbers_format_as_the_reference(d in decimal(), whole in decimal(), dp in 0u32..=8) {
            prop_assert_eq!(fixed(d, dp), reference::fixed(d, dp));
            prop_assert_eq!(price(d), reference::price(d));
            prop_assert_eq!(usd(d), reference::usd(d));
            prop_assert_eq!(signed_usd(d), reference::signed_usd(d));
            prop_assert_eq!(percent(d, whole), reference::percent(d, whole));
        }

        #[test]
        fn durations_and_quotes_format_as_the_reference(
            minutes in any::<i64>(),
            // Every escaped char, and neighbours sharing their UTF-8 lead bytes (C2, E2) that are not.
            text in "(\\PC|[\"\\\\\n\r\t\u{0}-\u{1f}\u{7f}-\u{a1}\u{bf}\u{2000}\u{2027}-\u{202a}→\u{2fff}]){0,40}",
        ) {
            prop_assert_eq!(duration_minutes(minutes), reference::duration_minutes(minutes));
            prop_assert_eq!(quoted(&text), reference::quoted(&text));
        }
    }

    #[test]
    fn prices_keep_their_scale() {
        assert_eq!(price(dec!(65200)), "65,200");
        assert_eq!(price(dec!(65940.00)), "65,940");
        assert_eq!(price(dec!(3410.456)), "3,410.46");
        assert_eq!(price(dec!(1.07219)), "1.07219");
        assert_eq!(price(dec!(1.072194)), "1.07219");
        assert_eq!(price(dec!(0.078325)), "0.078325");
        assert_eq!(price(dec!(0.00001234567)), "0.0000123457");
        assert_eq!(price(dec!(1234567.89)), "1,234,568");
        assert_eq!(price(dec!(0)), "0");
    }

    #[test]
    fn money_and_percent() {
        assert_eq!(usd(dec!(250)), "$250");
        assert_eq!(usd(dec!(12500.4)), "$12,500");
        assert_eq!(usd(dec!(42.5)), "$42.50");
        assert_eq!(signed_usd(dec!(28.4)), "+$28.40");
        assert_eq!(signed_usd(dec!(-9.7)), "-$9.70");
        assert_eq!(signed_usd(dec!(-0.001)), "$0.00");
        assert_eq!(signed_usd(dec!(-1234567.891)), "-$1,234,567.89");
        // 28.40 / 250 = 0.1136 → 11.4 %
        assert_eq!(percent(dec!(28.40), dec!(250)).as_deref(), Some("11.4%"));
        assert_eq!(percent(dec!(-9.7), dec!(1800)).as_deref(), Some("-0.5%"));
        assert_eq!(percent(dec!(1), dec!(0)), None);
    }

    #[test]
    fn durations_and_quotes() {
        assert_eq!(duration_minutes(45), "45m");
        assert_eq!(duration_minutes(1439), "1439m");
        assert_eq!(duration_minutes(1440 + 185), "1d 3h");
        assert_eq!(
            quoted("say \"hi\"\nthen \\ go\u{7}"),
            r#""say \"hi\"\nthen \\ go\u{7}""#
        );
    }
}
