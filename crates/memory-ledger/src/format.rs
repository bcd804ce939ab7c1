//! Deterministic number and text formatting for prompt text: no floats, no locale.
//!
//! Each `String` function has a `push_*` twin that appends the same text to a buffer, without
//! temporary strings (the renderers write a whole section into one buffer).

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

/// Appends `d` as `Display` prints it, with `,` every three integer digits (`-1234.5` →
/// `-1,234.5`).
fn push_grouped(out: &mut String, d: Decimal) {
    let mut buf = [0_u8; 32];
    match types::text::decimal_text(&mut buf, d) {
        Some(text) => group_into(out, text),
        // Only `rescale` beyond the maximum scale makes these; print them the slow way.
        None => group_into(out, &d.to_string()),
    }
}

/// Appends a plain decimal text with `,` every three integer digits.
fn group_into(out: &mut String, plain: &str) {
    let rest = match plain.strip_prefix('-') {
        Some(r) => {
            out.push('-');
            r
        }
        None => plain,
    };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (rest, None),
    };
    let head = match int.len() % 3 {
        0 => 3.min(int.len()),
        n => n,
    };
    out.push_str(&int[..head]);
    let mut at = head;
    while at < int.len() {
        out.push(',');
        out.push_str(&int[at..at + 3]);
        at += 3;
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
}

/// `d` rounded to exactly `dp` decimals (half away from zero; a zero is never `-0`).
fn rounded(d: Decimal, dp: u32) -> Decimal {
    let mut r = round(d, dp);
    r.rescale(dp);
    r
}

/// The text of [`rounded`]`(d, dp)` without its sign, and whether it is negative: in 64-bit
/// integer arithmetic when the mantissa and the result fit 64 bits (prices and money, always;
/// the text is then written into `buf`), else through `Decimal` (written into `spill`).
fn rounded_text<'b>(
    d: Decimal,
    dp: u32,
    buf: &'b mut [u8; 32],
    spill: &'b mut String,
) -> (&'b str, bool) {
    if let Some(m) = types::text::rounded_mantissa(d, dp) {
        // A zero is positive (`round`).
        return (
            types::text::decimal_parts_text(buf, m, dp as usize, false),
            d.is_sign_negative() && m != 0,
        );
    }
    let r = rounded(d, dp);
    push_display(spill, r.abs());
    (spill.as_str(), r.is_sign_negative())
}

/// Appends `d` as `Display` prints it (no grouping).
fn push_display(out: &mut String, d: Decimal) {
    use std::fmt::Write as _;
    let _ = write!(out, "{d}");
}

/// `d` with exactly `dp` decimals (half away from zero) and thousands separators.
#[must_use]
pub fn fixed(d: Decimal, dp: u32) -> String {
    let mut out = String::new();
    push_fixed(&mut out, d, dp);
    out
}

/// Appends [`fixed`]`(d, dp)`.
pub fn push_fixed(out: &mut String, d: Decimal, dp: u32) {
    let (mut buf, mut spill) = ([0_u8; 32], String::new());
    let (text, negative) = rounded_text(d, dp, &mut buf, &mut spill);
    if negative {
        out.push('-');
    }
    group_into(out, text);
}

/// A price at its own scale: at least six significant digits (never cutting integer digits),
/// trailing zeros dropped, thousands separators. `65200` → `65,200`; `1.07219` → `1.07219`;
/// `0.078325` → `0.078325`; `3410.456` → `3,410.46`.
#[must_use]
pub fn price(p: Decimal) -> String {
    let mut out = String::new();
    push_price(&mut out, p);
    out
}

/// Appends [`price`]`(p)`.
pub fn push_price(out: &mut String, p: Decimal) {
    let abs = p.abs();
    let dp = if abs.is_zero() {
        0
    } else if abs >= Decimal::ONE {
        // The length of the integer part as printed (no sign: `abs`).
        let mut buf = [0_u8; 32];
        // The integer part as printed.
        let text = types::text::decimal_text(&mut buf, abs.trunc()).unwrap_or_default();
        let int_digits = u32::try_from(text.len()).unwrap_or(u32::MAX);
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
    push_grouped(out, round(p, dp).normalize());
}

/// A size in dollars: whole dollars from $100 up, cents below. `$250`, `$12,500`, `$42.50`.
#[must_use]
pub fn usd(d: Decimal) -> String {
    let mut out = String::new();
    push_usd(&mut out, d);
    out
}

/// Appends [`usd`]`(d)`.
pub fn push_usd(out: &mut String, d: Decimal) {
    let dp = if d.abs() >= Decimal::ONE_HUNDRED {
        0
    } else {
        2
    };
    let (mut buf, mut spill) = ([0_u8; 32], String::new());
    let (text, negative) = rounded_text(d, dp, &mut buf, &mut spill);
    out.push_str(if negative { "-$" } else { "$" });
    group_into(out, text);
}

/// A signed dollar amount with cents: `+$28.40`, `-$9.70`; zero (after rounding) is `$0.00`.
#[must_use]
pub fn signed_usd(d: Decimal) -> String {
    let mut out = String::new();
    push_signed_usd(&mut out, d);
    out
}

/// Appends [`signed_usd`]`(d)`.
pub fn push_signed_usd(out: &mut String, d: Decimal) {
    let (mut buf, mut spill) = ([0_u8; 32], String::new());
    let (text, negative) = rounded_text(d, 2, &mut buf, &mut spill);
    out.push_str(if negative {
        "-$"
    } else if text == "0.00" {
        "$"
    } else {
        "+$"
    });
    group_into(out, text);
}

/// `part / whole` in percent with one decimal (`1.1%`, `-0.5%`); `None` when `whole` is zero.
#[must_use]
pub fn percent(part: Decimal, whole: Decimal) -> Option<String> {
    let mut out = String::new();
    push_percent(&mut out, part, whole).then_some(out)
}

/// Appends [`percent`]`(part, whole)` when it is defined; returns whether it was.
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
    push_fixed(out, pct, 1);
    out.push('%');
    true
}

/// Whole minutes as `45m` under a day, `1d 3h` from a day on.
#[must_use]
pub fn duration_minutes(minutes: i64) -> String {
    let mut out = String::new();
    push_duration_minutes(&mut out, minutes);
    out
}

/// Appends [`duration_minutes`]`(minutes)`.
pub fn push_duration_minutes(out: &mut String, minutes: i64) {
    let m = minutes.max(0);
    if m < 1440 {
        push_int(out, m);
        out.push('m');
    } else {
        push_int(out, m / 1440);
        out.push_str("d ");
        push_int(out, (m % 1440) / 60);
        out.push('h');
    }
}

/// Appends the digits of a non-negative `n`.
fn push_int(out: &mut String, n: i64) {
    push_u64(out, n.unsigned_abs());
}

fn push_u64(out: &mut String, n: u64) {
    let mut buf = [0_u8; 20];
    let mut at = buf.len();
    let mut m = n;
    loop {
        at -= 1;
        buf[at] = b'0' + u8::try_from(m % 10).unwrap_or(0);
        m /= 10;
        if m == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&buf[at..]).unwrap_or_default());
}

/// `text` as a double-quoted string literal: `\` `"` and control characters escaped, so a reason
/// can never break out of its quotes or start a new line of the prompt.
#[must_use]
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_quoted(&mut out, text);
    out
}

/// Appends [`quoted`]`(text)`.
pub fn push_quoted(out: &mut String, text: &str) {
    out.push('"');
    // Fast path: printable ASCII without `"` or `\\` needs no escape. A fold without early
    // exit, which the compiler vectorizes.
    let plain = text.as_bytes().iter().fold(true, |ok, &c| {
        ok & (c >= b' ') & (c != b'"') & (c != b'\\') & (c < 0x7f)
    });
    if plain {
        out.push_str(text);
        out.push('"');
        return;
    }
    // Runs of characters that need no escape are copied as they are.
    let bytes = text.as_bytes();
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii() {
            if b >= b' ' && b != b'"' && b != b'\\' && b != 0x7f {
                i += 1;
                continue;
            }
        } else {
            // A multi-byte character: escaped only when it is a control or a line/paragraph
            // separator. `i` is at a char boundary (runs advance by whole characters).
            let ch = text[i..].chars().next().unwrap_or_default();
            if !(ch.is_control() || ch == '\u{2028}' || ch == '\u{2029}') {
                i += ch.len_utf8();
                continue;
            }
        }
        out.push_str(&text[run..i]);
        let ch = text[i..].chars().next().unwrap_or_default();
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
        i += ch.len_utf8();
        run = i;
    }
    out.push_str(&text[run..]);
    out.push('"');
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
