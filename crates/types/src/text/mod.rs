//! Text: the one place where numbers, money, prices, percentages, times and quoted data become
//! text for a model or a person. Every writer that prints them into a prompt (`tools`,
//! `execution-engine`'s verdict details, `memory-ledger`'s sections, `reflection`,
//! `agent-runtime`'s context) and every output a person reads (`sim-worker`'s result lines,
//! tables and `report.html`, `live-runner`'s commands and pages) uses these styles, so one
//! concept reads one way everywhere.
//!
//! Deterministic: no float, no locale, no wall clock. Decimals round half away from zero.
//! Each style is a `push_*` writer appending to a `String` buffer without a temporary string
//! (a backtest tick prints thousands of numbers), with a `String` twin where callers need one.
//!
//! The named styles:
//!
//! | style | writer | examples |
//! | --- | --- | --- |
//! | money | [`push_money`] | `$0.00`, `$42.50`, `$12,500.00`, `-$1,234.50` |
//! | signed money (PnL) | [`push_signed_money`] | `+$28.40`, `-$9.70`, `$0.00` |
//! | model cost, rate | [`push_cost`] | `$0.00`, `$0.000336`, `$2.00` |
//! | price, ≥ 6 significant digits | [`push_price`] | `65,200`, `1.07219`, `3,410.46` |
//! | price, every digit, in dollars | [`push_price_usd`] | `$60,000`, `$0.00001234` |
//! | bar price at a fixed scale | [`push_fixed`] | `1.07219`, `65200.0` (no separators) |
//! | quantity, leverage | [`push_num`] / [`push_plain`] | `1,250` / `1250`, `2.5` |
//! | percentage of a value | [`push_pct`] | `60%`, `33.33%` |
//! | share of a whole | [`push_percent_of`] | `11.4%`, `-0.5%` |
//! | score | [`push_signed_fixed`] | `+0.60`, `-0.30`, `0.00` |
//! | volume | [`push_volume`] | `1235`, `12.35`, `0.0123` |
//! | timestamp (UTC) | [`push_timestamp`] | `2024-06-05T10:15:00Z` |
//! | row times (UTC) | [`push_date_minute`], [`push_short_time`], [`push_date`], [`push_clock`] | `2024-06-05T10:15`, `06-05T10:15`, `2024-06-05`, `10:15` |
//! | durations | [`push_duration_minutes`], [`push_duration`] | `45m`, `1d 3h`; `2h30m` |
//! | holding time for a person | [`push_span`] | `45m`, `23h 0m`, `6d 4h` |
//! | quoted data | [`push_quoted`] | `"say \"hi\""` |

mod digits;
mod money;
mod number;
mod quote;
mod time;

pub use digits::rounded_mantissa;
pub use money::{cost, money, push_cost, push_money, push_signed_money, signed_money};
pub use number::{
    fixed, grouped_fixed, num, pct, percent_of, price, price_usd, push_decimal, push_fixed,
    push_grouped_fixed, push_num, push_pct, push_percent_of, push_plain, push_price,
    push_price_usd, push_signed_fixed, push_uint, push_volume, volume,
};
pub use quote::{push_quoted, quoted};
pub use time::{
    WEEKDAYS, duration_minutes, push_clock, push_date, push_date_minute, push_duration,
    push_duration_minutes, push_rfc3339, push_short_time, push_span, push_timestamp, short_time,
    span,
};

#[cfg(test)]
mod tests;
