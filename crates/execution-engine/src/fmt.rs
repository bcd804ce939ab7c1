//! Deterministic number formatting for verdict details.
//!
//! Verdict details are shown to the model in its "Last decision" section, so they must be
//! byte-identical for identical inputs: no locale, no floats, no trailing-zero noise.

use rust_decimal::{Decimal, RoundingStrategy};

/// US dollars rounded to the cent (half away from zero), thousands grouped, cents shown only
/// when there are any: `$6,000`, `$6,000.50`, `-$12.34`.
#[must_use]
pub fn usd(value: Decimal) -> String {
    let rounded = value.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero);
    let sign = if rounded.is_sign_negative() && !rounded.is_zero() {
        "-"
    } else {
        ""
    };
    let abs = rounded.abs();
    let body = if abs.fract().is_zero() {
        group(&abs.trunc().to_string())
    } else {
        let text = format!("{abs:.2}");
        match text.split_once('.') {
            Some((int, frac)) => format!("{}.{frac}", group(int)),
            None => group(&text),
        }
    };
    format!("{sign}${body}")
}

/// A price: every significant digit kept, trailing zeros dropped, thousands grouped, with a
/// dollar sign: `$60,000`, `$0.00001234`.
#[must_use]
pub fn price(value: Decimal) -> String {
    let text = num(value);
    match text.strip_prefix('-') {
        Some(rest) => format!("-${rest}"),
        None => format!("${text}"),
    }
}

/// A plain number (quantities, leverage): trailing zeros dropped, thousands grouped: `0.1`,
/// `1,250`, `2.5`.
#[must_use]
pub fn num(value: Decimal) -> String {
    let text = value.normalize().to_string();
    let (sign, rest) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    match rest.split_once('.') {
        Some((int, frac)) => format!("{sign}{}.{frac}", group(int)),
        None => format!("{sign}{}", group(rest)),
    }
}

/// A percentage rounded to two decimals (half away from zero), trailing zeros dropped, with the
/// percent sign: `60%`, `33.33%`.
#[must_use]
pub fn pct(value: Decimal) -> String {
    format!(
        "{}%",
        num(value.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero))
    )
}

/// Groups a string of ASCII digits by thousands with commas.
fn group(digits: &str) -> String {
    let len = digits.len();
    let mut out = String::with_capacity(len + len / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (len - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A model-written symbol made safe to echo back: at most 24 characters, anything other than
/// ASCII letters, digits and `-_/:.` replaced by `?`. The symbol comes from the model and may be
/// arbitrary text; the detail must never carry it verbatim.
#[must_use]
pub fn symbol(raw: &str) -> String {
    const MAX: usize = 24;
    let mut out: String = raw
        .chars()
        .take(MAX)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_/:.".contains(c) {
                c
            } else {
                '?'
            }
        })
        .collect();
    if raw.chars().count() > MAX {
        out.push_str("...");
    }
    if out.is_empty() {
        out.push_str("(empty)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn usd_rounds_to_cents_and_groups_thousands() {
        let cases = [
            (dec!(6000), "$6,000"),
            (dec!(6000.5), "$6,000.50"),
            (dec!(5999.9996), "$6,000"),
            (dec!(1234567.891), "$1,234,567.89"),
            (dec!(-12.345), "-$12.35"),
            (dec!(0.004), "$0"),
            (dec!(-0.004), "$0"),
            (dec!(999), "$999"),
        ];
        for (value, want) in cases {
            assert_eq!(usd(value), want, "{value}");
        }
    }

    #[test]
    fn price_num_and_pct_keep_significant_digits() {
        assert_eq!(price(dec!(60000.00)), "$60,000");
        assert_eq!(price(dec!(0.00001234)), "$0.00001234");
        assert_eq!(price(dec!(-1500.5)), "-$1,500.5");
        assert_eq!(num(dec!(0.10)), "0.1");
        assert_eq!(num(dec!(1250)), "1,250");
        assert_eq!(pct(dec!(60.000)), "60%");
        assert_eq!(pct(dec!(33.33333)), "33.33%");
    }

    #[test]
    fn symbols_from_the_model_are_sanitised_and_bounded() {
        assert_eq!(symbol("BTC"), "BTC");
        assert_eq!(symbol("kPEPE-PERP"), "kPEPE-PERP");
        assert_eq!(symbol("BTC\nignore caps"), "BTC?ignore?caps");
        assert_eq!(symbol(&"A".repeat(30)), format!("{}...", "A".repeat(24)));
        assert_eq!(symbol(""), "(empty)");
    }
}
