//! Numbers that are not money: prices, quantities, percentages, scores, volumes.

use rust_decimal::{Decimal, RoundingStrategy};

use super::digits::{push_parts, rounded_mantissa};

/// Significant digits shown for a [`price`] (at least; integer digits are never cut).
const PRICE_SIGNIFICANT: u32 = 6;
/// Never more decimals than this for a [`price`].
const PRICE_MAX_DP: u32 = 10;

/// `d` rounded half away from zero to `dp` decimals; a zero is never `-0`.
fn round(d: Decimal, dp: u32) -> Decimal {
    let mut r = d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero);
    if r.is_zero() {
        r.set_sign_positive(true);
    }
    r
}

/// Appends `d` exactly as its `Display` prints it (`d.to_string()`: the mantissa's digits with
/// the point `scale` digits from the right, `0.05`, `-0.00` for a negative zero) without the
/// formatting machinery or a temporary string.
pub fn push_decimal(out: &mut String, d: Decimal) {
    if !push_as_display(out, d, false) {
        push_display(out, d);
    }
}

/// Appends `d` as `Display` prints it (its sign, `-0.00` included, then its mantissa's digits
/// at its scale), with `,` every three integer digits when `grouped`; false (nothing written)
/// for a scale above 28, which only `rescale` makes.
fn push_as_display(out: &mut String, d: Decimal, grouped: bool) -> bool {
    let scale = d.scale() as usize;
    if scale > 28 {
        return false;
    }
    if d.is_sign_negative() {
        out.push('-');
    }
    let mantissa = d.mantissa().unsigned_abs();
    match u64::try_from(mantissa) {
        Ok(m) => push_parts(out, m, scale, grouped),
        Err(_) => push_parts(out, mantissa, scale, grouped),
    }
    true
}

/// Appends `d` as `Display` prints it, through the formatting machinery.
fn push_display(out: &mut String, d: Decimal) {
    use std::fmt::Write as _;
    let _ = write!(out, "{d}");
}

/// Appends a decimal without trailing zeros, no separators (`3`, `65000.5`).
pub fn push_plain(out: &mut String, d: Decimal) {
    push_decimal(out, d.normalize());
}

/// Appends the decimal digits of `n` (as `n.to_string()`).
pub fn push_uint(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// `d` rounded half away from zero to exactly `dp` decimals, zero-padded, no separators
/// (`fixed(5, 2)` is `"5.00"`): bar prices at their symbol's scale, scores. As `Decimal` does,
/// a result that rounded to zero is positive and a zero that needed no rounding keeps its sign.
#[must_use]
pub fn fixed(d: Decimal, dp: u32) -> String {
    let mut out = String::with_capacity(16);
    push_fixed(&mut out, d, dp);
    out
}

/// Appends [`fixed`]`(d, dp)`.
pub fn push_fixed(out: &mut String, d: Decimal, dp: u32) {
    // 64-bit integer arithmetic when it suffices (prices and money, always).
    if let Some(mantissa) = rounded_mantissa(d, dp) {
        if d.is_sign_negative() && (mantissa != 0 || d.is_zero()) {
            out.push('-');
        }
        push_parts(out, mantissa, dp as usize, false);
    } else {
        let mut r = d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero);
        r.rescale(dp);
        push_decimal(out, r);
    }
}

/// Appends `d` as `Display` prints it, with `,` every three integer digits (`-1234.5` →
/// `-1,234.5`).
fn push_grouped(out: &mut String, d: Decimal) {
    if !push_as_display(out, d, true) {
        // Only `rescale` beyond the maximum scale makes these; print them the slow way.
        group_into(out, &d.to_string());
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

/// `d` rounded to exactly `dp` decimals (half away from zero; a zero is positive), its sign
/// apart: in 64-bit integer arithmetic when the result fits 64 bits (prices and money, always),
/// else through `Decimal`.
pub(super) struct Rounded {
    /// The magnitude: the mantissa at scale `dp`, or the rounded decimal.
    magnitude: Result<u64, Decimal>,
    dp: u32,
    /// Negative (never for a zero).
    pub(super) negative: bool,
}

impl Rounded {
    pub(super) fn of(d: Decimal, dp: u32) -> Self {
        if let Some(m) = rounded_mantissa(d, dp) {
            return Rounded {
                magnitude: Ok(m),
                dp,
                negative: d.is_sign_negative() && m != 0,
            };
        }
        let mut r = round(d, dp);
        r.rescale(dp);
        Rounded {
            negative: r.is_sign_negative(),
            magnitude: Err(r.abs()),
            dp,
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        match self.magnitude {
            Ok(m) => m == 0,
            Err(r) => r.is_zero(),
        }
    }

    /// Appends the magnitude's digits, with `,` every three integer digits when `grouped`.
    pub(super) fn push_digits(&self, out: &mut String, grouped: bool) {
        match self.magnitude {
            Ok(m) => push_parts(out, m, self.dp as usize, grouped),
            Err(r) if grouped => push_grouped(out, r),
            Err(r) => push_decimal(out, r),
        }
    }
}

/// `d` with exactly `dp` decimals (half away from zero; a zero is positive) and thousands
/// separators: `1,234.5` at 1.
#[must_use]
pub fn grouped_fixed(d: Decimal, dp: u32) -> String {
    let mut out = String::with_capacity(16);
    push_grouped_fixed(&mut out, d, dp);
    out
}

/// Appends [`grouped_fixed`]`(d, dp)`.
pub fn push_grouped_fixed(out: &mut String, d: Decimal, dp: u32) {
    let r = Rounded::of(d, dp);
    if r.negative {
        out.push('-');
    }
    r.push_digits(out, true);
}

/// A price at its own scale: at least six significant digits (never cutting integer digits),
/// trailing zeros dropped, thousands separators. `65200` → `65,200`; `1.07219` → `1.07219`;
/// `0.078325` → `0.078325`; `3410.456` → `3,410.46`.
#[must_use]
pub fn price(p: Decimal) -> String {
    let mut out = String::with_capacity(16);
    push_price(&mut out, p);
    out
}

/// Appends [`price`]`(p)`.
pub fn push_price(out: &mut String, p: Decimal) {
    let abs = p.abs();
    let dp = if abs.is_zero() {
        0
    } else if abs >= Decimal::ONE {
        // The length of the integer part as printed (no sign: `abs`; scale 0: its mantissa's
        // digits).
        let int = abs.trunc().mantissa().unsigned_abs();
        let int_digits = u32::try_from(itoa::Buffer::new().format(int).len()).unwrap_or(u32::MAX);
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

/// A quantity or leverage: every significant digit, trailing zeros dropped, thousands
/// separators: `0.1`, `1,250`, `2.5`.
#[must_use]
pub fn num(d: Decimal) -> String {
    let mut out = String::with_capacity(16);
    push_num(&mut out, d);
    out
}

/// Appends [`num`]`(d)`.
pub fn push_num(out: &mut String, d: Decimal) {
    push_grouped(out, d.normalize());
}

/// A price in dollars with every significant digit: [`num`] after a dollar sign (`$60,000`,
/// `$0.00001234`, `-$1,500.5`).
#[must_use]
pub fn price_usd(p: Decimal) -> String {
    let mut out = String::with_capacity(16);
    push_price_usd(&mut out, p);
    out
}

/// Appends [`price_usd`]`(p)`.
pub fn push_price_usd(out: &mut String, p: Decimal) {
    let start = out.len();
    push_num(out, p);
    let at = if out[start..].starts_with('-') {
        start + 1
    } else {
        start
    };
    out.insert(at, '$');
}

/// A percentage value rounded to two decimals (half away from zero), trailing zeros dropped,
/// with the percent sign: `60%`, `33.33%`.
#[must_use]
pub fn pct(value: Decimal) -> String {
    let mut out = String::with_capacity(8);
    push_pct(&mut out, value);
    out
}

/// Appends [`pct`]`(value)`.
pub fn push_pct(out: &mut String, value: Decimal) {
    push_num(
        out,
        value.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero),
    );
    out.push('%');
}

/// `part / whole` in percent with one decimal (`1.1%`, `-0.5%`); `None` when `whole` is zero.
#[must_use]
pub fn percent_of(part: Decimal, whole: Decimal) -> Option<String> {
    let mut out = String::with_capacity(8);
    push_percent_of(&mut out, part, whole).then_some(out)
}

/// Appends [`percent_of`]`(part, whole)` when it is defined; returns whether it was.
pub fn push_percent_of(out: &mut String, part: Decimal, whole: Decimal) -> bool {
    if whole.is_zero() {
        return false;
    }
    let Some(pct) = part
        .checked_mul(Decimal::ONE_HUNDRED)
        .and_then(|p| p.checked_div(whole))
    else {
        return false;
    };
    push_grouped_fixed(out, pct, 1);
    out.push('%');
    true
}

/// Appends a score with `dp` decimals and its sign always shown: `+0.60`, `-0.30`; a score that
/// rounds to zero is `0.00`.
pub fn push_signed_fixed(out: &mut String, d: Decimal, dp: u32) {
    let r = d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero);
    if r.is_zero() {
        push_fixed(out, Decimal::ZERO, dp);
    } else {
        if r.is_sign_positive() {
            out.push('+');
        }
        push_fixed(out, r, dp);
    }
}

/// Volume, token-frugal: whole units from 100 up, 2 decimals from 1, else up to 4 decimals;
/// trailing zeros dropped, no separators (`1235`, `12.35`, `0.0123`).
#[must_use]
pub fn volume(v: Decimal) -> String {
    let mut out = String::with_capacity(12);
    push_volume(&mut out, v);
    out
}

/// Appends [`volume`]`(v)`.
pub fn push_volume(out: &mut String, v: Decimal) {
    let dp = if v.abs() >= Decimal::ONE_HUNDRED {
        0
    } else if v.abs() >= Decimal::ONE {
        2
    } else {
        4
    };
    push_decimal(
        out,
        v.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero)
            .normalize(),
    );
}
