//! Money: US dollars with cents and thousands separators, the one style of every amount in a
//! prompt (sizes, equity, margin, fees, caps, PnL); model costs, which are mostly fractions of a
//! cent, in the same style with the sub-cent digits kept.

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

/// Most decimals a [`cost`] keeps.
const COST_MAX_DP: u32 = 6;

/// A model cost or rate in dollars: [`money`]'s style with the digits below the cent kept up
/// to six decimals (rounded half away from zero, trailing zeros past the cents dropped):
/// `$0.00`, `$2.00`, `$0.000336`, `$0.01008`, `$1,234.50`.
#[must_use]
pub fn cost(d: Decimal) -> String {
    let mut out = String::with_capacity(16);
    push_cost(&mut out, d);
    out
}

/// Appends [`cost`]`(d)`.
pub fn push_cost(out: &mut String, d: Decimal) {
    let rounded = d
        .round_dp_with_strategy(
            COST_MAX_DP,
            rust_decimal::RoundingStrategy::MidpointAwayFromZero,
        )
        .normalize();
    let r = Rounded::of(d, rounded.scale().max(2));
    out.push_str(if r.negative { "-$" } else { "$" });
    r.push_digits(out, true);
}
