//! Money: US dollars with cents and thousands separators, the one style of every amount in a
//! prompt (sizes, equity, margin, fees, caps, PnL).

use rust_decimal::Decimal;

use super::number::{group_into, rounded_text};

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
    let (mut buf, mut spill) = ([0_u8; 32], String::new());
    let (text, negative) = rounded_text(d, 2, &mut buf, &mut spill);
    out.push_str(if negative { "-$" } else { "$" });
    group_into(out, text);
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
