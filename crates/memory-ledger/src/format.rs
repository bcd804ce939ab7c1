//! Deterministic number and text formatting for prompt text: no floats, no locale.

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

/// Inserts `,` every three integer digits of a plain decimal string (`-1234.5` → `-1,234.5`).
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

/// `d` with exactly `dp` decimals (half away from zero) and thousands separators.
#[must_use]
pub fn fixed(d: Decimal, dp: u32) -> String {
    let mut r = round(d, dp);
    r.rescale(dp);
    group(&r.to_string())
}

/// A price at its own scale: at least six significant digits (never cutting integer digits),
/// trailing zeros dropped, thousands separators. `65200` → `65,200`; `1.07219` → `1.07219`;
/// `0.078325` → `0.078325`; `3410.456` → `3,410.46`.
#[must_use]
pub fn price(p: Decimal) -> String {
    let abs = p.abs();
    let dp = if abs.is_zero() {
        0
    } else if abs >= Decimal::ONE {
        let int_digits = abs.trunc().to_string().len() as u32;
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
    group(&round(p, dp).normalize().to_string())
}

/// A size in dollars: whole dollars from $100 up, cents below. `$250`, `$12,500`, `$42.50`.
#[must_use]
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

/// A signed dollar amount with cents: `+$28.40`, `-$9.70`; zero (after rounding) is `$0.00`.
#[must_use]
pub fn signed_usd(d: Decimal) -> String {
    let s = fixed(d, 2);
    match s.strip_prefix('-') {
        Some(rest) => format!("-${rest}"),
        None if s == "0.00" => format!("${s}"),
        None => format!("+${s}"),
    }
}

/// `part / whole` in percent with one decimal (`1.1%`, `-0.5%`); `None` when `whole` is zero.
#[must_use]
pub fn percent(part: Decimal, whole: Decimal) -> Option<String> {
    if whole.is_zero() {
        return None;
    }
    let pct = part.checked_mul(Decimal::ONE_HUNDRED)?.checked_div(whole)?;
    Some(format!("{}%", fixed(pct, 1)))
}

/// Whole minutes as `45m` under a day, `1d 3h` from a day on.
#[must_use]
pub fn duration_minutes(minutes: i64) -> String {
    let m = minutes.max(0);
    if m < 1440 {
        format!("{m}m")
    } else {
        format!("{}d {}h", m / 1440, (m % 1440) / 60)
    }
}

/// `text` as a double-quoted string literal: `\` `"` and control characters escaped, so a reason
/// can never break out of its quotes or start a new line of the prompt.
#[must_use]
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

#[cfg(test)]
mod tests {
    use rust_decimal_macros::dec;

    use super::*;

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
