//! Money: US dollars with cents and thousands separators, the one style of every amount in a
//! prompt (sizes, equity, margin, fees, caps, PnL).

use rust_decimal::Decimal;

use super::number::Rounded;

/// `d` in dollars, rounded to the cent: `$0.00`, `$42.50`, `$12,500.00`, `-$1,234.50`. An
/// amount that rounds to zero is `$0.00`, never `-$0.00`.
#[must_use]
pub fn money(d: Decimal) -> String {
    let mut out = String::with_capacity(16);
    push_money(&mut out, d);
    out
}

/// Appends [`money`]`(d)`.
pub fn push_money(out: &mut String, d: Decimal) {
    let r = Rounded::of(d, 2);
    out.push_str(if r.negative { "-$" } else { "$" });
    r.push_digits(out, true);
}

/// A gain or loss in [`money`]'s style with its sign always shown: `+$28.40`, `-$9.70`; an
/// amount that rounds to zero is `$0.00`.
#[must_use]
pub fn signed_money(d: Decimal) -> String {
    let mut out = String::with_capacity(16);
    push_signed_money(&mut out, d);
    out
}

/// Appends [`signed_money`]`(d)`.
pub fn push_signed_money(out: &mut String, d: Decimal) {
    let r = Rounded::of(d, 2);
    out.push_str(if r.negative {
        "-$"
    } else if r.is_zero() {
        "$"
    } else {
        "+$"
    });
    r.push_digits(out, true);
}
