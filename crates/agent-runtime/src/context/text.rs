//! The context's own text writers: bar-table rows, whose prices carry their symbol's decimals
//! ([`price_dp`]), and small joins. Every other number, money amount and time is written in the
//! styles of [`types::text`].

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use tools::pct;
use types::text;
use types::{Bar, Interval};

use super::MAX_PRICE_DP;

/// Decimals needed to print every price of `bars` without loss (trailing zeros ignored),
/// capped at [`MAX_PRICE_DP`].
#[must_use]
pub fn price_dp<'a>(bars: impl IntoIterator<Item = &'a Bar>) -> u32 {
    bars.into_iter()
        .flat_map(|b| [b.open, b.high, b.low, b.close])
        .map(|d| d.normalize().scale())
        .max()
        .unwrap_or(0)
        .min(MAX_PRICE_DP)
}

pub(super) fn push_bar_time(out: &mut String, t: DateTime<Utc>, interval: Interval) {
    match interval {
        Interval::D1 | Interval::W1 => text::push_date(out, t),
        _ => text::push_short_time(out, t),
    }
}

/// `\n<time> <open> <high> <low> <close> <volume>`: one row of a bar table.
pub(super) fn push_bar_row(out: &mut String, b: &Bar, interval: Interval, dp: u32) {
    out.push('\n');
    push_bar_time(out, b.time, interval);
    for price in [b.open, b.high, b.low, b.close] {
        out.push(' ');
        text::push_fixed(out, price, dp);
    }
    out.push(' ');
    text::push_volume(out, b.volume);
}

/// `market-wide`, or the symbols joined by `, `.
pub(super) fn push_about(out: &mut String, symbols: &[String]) {
    if symbols.is_empty() {
        out.push_str("market-wide");
    }
    for (i, s) in symbols.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(s);
    }
}

/// ` (12.50% of equity)` when the share is defined.
pub(super) fn push_share_of_equity(out: &mut String, part: Decimal, equity: Decimal) {
    if let Some(share) = pct(part, equity) {
        out.push_str(" (");
        text::push_fixed(out, share, 2);
        out.push_str("% of equity)");
    }
}
