//! The memory sections of the user message: "Recent trades on this skill (closed)" and
//! "Open positions (memory view)". Deterministic text: no floats, no locale, no clock.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use std::collections::BTreeMap;
use types::{CloseKind, TradeRecord, TradeStatus};

use crate::materialize::bounded_reason;
use types::text;

/// Hard cap on the rows of the recent-trades section, whatever K the caller passes.
pub const MAX_RECENT_TRADES_K: usize = types::MAX_MEMORY_K as usize;

/// The reason as quoted data, or `(no reason recorded)`.
fn push_reason(out: &mut String, reason: Option<&str>) {
    match reason.and_then(bounded_reason) {
        Some(r) => text::push_quoted(out, &r),
        None => out.push_str("(no reason recorded)"),
    }
}

/// `t` as `%Y-%m-%dT%H:%M` (`with_date`) or `%H:%M`.
fn push_time(out: &mut String, t: DateTime<Utc>, with_date: bool) {
    if with_date {
        text::push_date_minute(out, t);
    } else {
        text::push_clock(out, t);
    }
}

/// The body of the "Recent trades on this skill (closed)" section (the context assembly writes the
/// heading): at most `k` (capped at [`MAX_RECENT_TRADES_K`])
/// rows closed at or before `now`, newest entry first (ties: symbol, then id), one line each:
///
/// `- 2026-06-04T10:00 → 12:30 BTC long $250.00 @ 65,200 → 65,940 +$28.40 (11.4%) 150m "reason"`
///
/// The exit shows its date when it differs from the entry's. PnL is **gross** of fees (the
/// `realized_pnl_usd` convention), the percentage is relative to the entry notional; non-zero
/// fees follow as `fees $0.31`, and a close that was not the agent's signal is tagged
/// (`[flip]`, `[liquidation]`, `[external]`, `[stop]`, `[target]`). Reasons are quoted data, escaped.
#[must_use]
pub fn render_recent_trades(rows: &[TradeRecord], k: usize, now: DateTime<Utc>) -> String {
    let mut closed: Vec<&TradeRecord> = rows
        .iter()
        .filter(|r| r.status == TradeStatus::Closed && r.exit_tick_at.is_some_and(|t| t <= now))
        .collect();
    closed.sort_by(|a, b| {
        b.entry_tick_at
            .cmp(&a.entry_tick_at)
            .then_with(|| a.symbol.cmp(&b.symbol))
            .then_with(|| a.id.cmp(&b.id))
    });
    closed.truncate(k.min(MAX_RECENT_TRADES_K));

    let mut out = String::with_capacity(256 * closed.len() + 128);
    if closed.is_empty() {
        out.push_str("- none: no trade of this skill has closed yet.\n");
        return out;
    }
    out.push_str("(times UTC; newest entry first; PnL gross of fees, % of entry notional)\n");
    for r in closed {
        let exit_at = r.exit_tick_at.unwrap_or(r.entry_tick_at);
        out.push_str("- ");
        push_time(&mut out, r.entry_tick_at, true);
        out.push_str(" → ");
        push_time(
            &mut out,
            exit_at,
            exit_at.date_naive() != r.entry_tick_at.date_naive(),
        );
        out.push(' ');
        out.push_str(&r.symbol);
        out.push(' ');
        out.push_str(r.side.as_str());
        out.push(' ');
        text::push_money(&mut out, r.entry_size_usd);
        out.push_str(" @ ");
        text::push_price(&mut out, r.entry_price);
        out.push_str(" → ");
        match r.exit_price {
            Some(p) => text::push_price(&mut out, p),
            None => out.push('?'),
        }
        out.push(' ');
        text::push_signed_money(&mut out, r.realized_pnl_usd);
        let before = out.len();
        out.push_str(" (");
        if text::push_percent_of(&mut out, r.realized_pnl_usd, r.entry_size_usd) {
            out.push(')');
        } else {
            out.truncate(before);
        }
        if !r.fees_usd.is_zero() {
            out.push_str(" fees ");
            text::push_money(&mut out, r.fees_usd);
        }
        let minutes = r
            .holding_minutes
            .map_or(0, |m| m.trunc().try_into().unwrap_or(i64::MAX));
        out.push(' ');
        text::push_duration_minutes(&mut out, minutes);
        match r.close_kind {
            Some(CloseKind::Signal) | None => {}
            Some(kind) => {
                out.push_str(" [");
                out.push_str(kind.as_str());
                out.push(']');
            }
        }
        out.push(' ');
        push_reason(&mut out, r.entry_reason.as_deref());
        out.push('\n');
    }
    out
}

/// The body of the "Open positions (memory view)" section (the context assembly writes the
/// heading): every row open at `now` (entered at or before it), by
/// symbol, one line each:
///
/// `- ETH long $200.00 @ 3,410 mark=3,438 uPnL=+$1.64 MFE=+$22.00 / MAE=-$8.00 held 30m "reason"`
///
/// `$200.00` is the open quantity at the average entry; `uPnL` is gross at `marks[symbol]` (shown as
/// `mark=n/a` without a mark); realized PnL of partial closes follows when non-zero.
#[must_use]
pub fn render_open_positions(
    rows: &[TradeRecord],
    marks: &BTreeMap<String, Decimal>,
    now: DateTime<Utc>,
) -> String {
    let mut open: Vec<&TradeRecord> = rows
        .iter()
        .filter(|r| r.status == TradeStatus::Open && r.entry_tick_at <= now)
        .collect();
    open.sort_by(|a, b| a.symbol.cmp(&b.symbol).then_with(|| a.id.cmp(&b.id)));

    let mut out = String::with_capacity(320 * open.len() + 128);
    if open.is_empty() {
        out.push_str("- none: flat on every symbol.\n");
        return out;
    }
    for r in open {
        let size = r
            .open_qty
            .checked_mul(r.entry_price)
            .unwrap_or(r.entry_size_usd);
        out.push_str("- ");
        out.push_str(&r.symbol);
        out.push(' ');
        out.push_str(r.side.as_str());
        out.push(' ');
        text::push_money(&mut out, size);
        out.push_str(" @ ");
        text::push_price(&mut out, r.entry_price);
        match marks.get(&r.symbol) {
            Some(mark) => {
                let upnl = r
                    .side
                    .sign()
                    .checked_mul(*mark - r.entry_price)
                    .and_then(|d| d.checked_mul(r.open_qty));
                out.push_str(" mark=");
                text::push_price(&mut out, *mark);
                if let Some(upnl) = upnl {
                    out.push_str(" uPnL=");
                    text::push_signed_money(&mut out, upnl);
                }
            }
            None => out.push_str(" mark=n/a"),
        }
        out.push_str(" MFE=");
        text::push_signed_money(&mut out, r.mfe_usd);
        out.push_str(" / MAE=");
        text::push_signed_money(&mut out, r.mae_usd);
        if !r.realized_pnl_usd.is_zero() {
            out.push_str(" realized=");
            text::push_signed_money(&mut out, r.realized_pnl_usd);
        }
        let held = (now - r.entry_tick_at).num_minutes();
        out.push_str(" held ");
        text::push_duration_minutes(&mut out, held);
        out.push(' ');
        push_reason(&mut out, r.entry_reason.as_deref());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use proptest::prelude::*;
    use rust_decimal_macros::dec;
    use types::{Side, Uuid};

    use super::*;
    use crate::materialize::bound_reason;

    /// The sections as first written (`write!` of the `format` functions' Strings, chrono's
    /// `format`): the functions above must give the same bytes.
    mod reference {
        use std::collections::BTreeMap;
        use std::fmt::Write as _;

        use chrono::{DateTime, Utc};
        use rust_decimal::Decimal;
        use types::{CloseKind, TradeRecord, TradeStatus};

        use super::super::MAX_RECENT_TRADES_K;
        use super::bound_reason;
        use types::text;

        const TIME_FMT: &str = "%Y-%m-%dT%H:%M";

        fn reason_text(reason: Option<&str>) -> String {
            match reason.and_then(bound_reason) {
                Some(r) => text::quoted(&r),
                None => "(no reason recorded)".to_owned(),
            }
        }

        pub(super) fn recent(rows: &[TradeRecord], k: usize, now: DateTime<Utc>) -> String {
            let mut closed: Vec<&TradeRecord> = rows
                .iter()
                .filter(|r| {
                    r.status == TradeStatus::Closed && r.exit_tick_at.is_some_and(|t| t <= now)
                })
                .collect();
            closed.sort_by(|a, b| {
                b.entry_tick_at
                    .cmp(&a.entry_tick_at)
                    .then_with(|| a.symbol.cmp(&b.symbol))
                    .then_with(|| a.id.cmp(&b.id))
            });
            closed.truncate(k.min(MAX_RECENT_TRADES_K));
            let mut out = String::new();
            if closed.is_empty() {
                out.push_str("- none: no trade of this skill has closed yet.\n");
                return out;
            }
            out.push_str(
                "(times UTC; newest entry first; PnL gross of fees, % of entry notional)\n",
            );
            for r in closed {
                let exit_at = r.exit_tick_at.unwrap_or(r.entry_tick_at);
                let exit_fmt = if exit_at.date_naive() == r.entry_tick_at.date_naive() {
                    "%H:%M"
                } else {
                    TIME_FMT
                };
                let _ = write!(
                    out,
                    "- {} → {} {} {} {} @ {} → {} {}",
                    r.entry_tick_at.format(TIME_FMT),
                    exit_at.format(exit_fmt),
                    r.symbol,
                    r.side,
                    text::money(r.entry_size_usd),
                    text::price(r.entry_price),
                    r.exit_price.map_or_else(|| "?".to_owned(), text::price),
                    text::signed_money(r.realized_pnl_usd),
                );
                if let Some(pct) = text::percent_of(r.realized_pnl_usd, r.entry_size_usd) {
                    let _ = write!(out, " ({pct})");
                }
                if !r.fees_usd.is_zero() {
                    let _ = write!(out, " fees {}", text::money(r.fees_usd));
                }
                let minutes = r
                    .holding_minutes
                    .map_or(0, |m| m.trunc().try_into().unwrap_or(i64::MAX));
                let _ = write!(out, " {}", text::duration_minutes(minutes));
                match r.close_kind {
                    Some(CloseKind::Signal) | None => {}
                    Some(kind) => {
                        let _ = write!(out, " [{kind}]");
                    }
                }
                let _ = writeln!(out, " {}", reason_text(r.entry_reason.as_deref()));
            }
            out
        }

        pub(super) fn open(
            rows: &[TradeRecord],
            marks: &BTreeMap<String, Decimal>,
            now: DateTime<Utc>,
        ) -> String {
            let mut open: Vec<&TradeRecord> = rows
                .iter()
                .filter(|r| r.status == TradeStatus::Open && r.entry_tick_at <= now)
                .collect();
            open.sort_by(|a, b| a.symbol.cmp(&b.symbol).then_with(|| a.id.cmp(&b.id)));
            let mut out = String::new();
            if open.is_empty() {
                out.push_str("- none: flat on every symbol.\n");
                return out;
            }
            for r in open {
                let size = r
                    .open_qty
                    .checked_mul(r.entry_price)
                    .unwrap_or(r.entry_size_usd);
                let _ = write!(
                    out,
                    "- {} {} {} @ {}",
                    r.symbol,
                    r.side,
                    text::money(size),
                    text::price(r.entry_price)
                );
                match marks.get(&r.symbol) {
                    Some(mark) => {
                        let upnl = r
                            .side
                            .sign()
                            .checked_mul(*mark - r.entry_price)
                            .and_then(|d| d.checked_mul(r.open_qty));
                        let _ = write!(out, " mark={}", text::price(*mark));
                        if let Some(upnl) = upnl {
                            let _ = write!(out, " uPnL={}", text::signed_money(upnl));
                        }
                    }
                    None => out.push_str(" mark=n/a"),
                }
                let _ = write!(
                    out,
                    " MFE={} / MAE={}",
                    text::signed_money(r.mfe_usd),
                    text::signed_money(r.mae_usd)
                );
                if !r.realized_pnl_usd.is_zero() {
                    let _ = write!(out, " realized={}", text::signed_money(r.realized_pnl_usd));
                }
                let held = (now - r.entry_tick_at).num_minutes();
                let _ = writeln!(
                    out,
                    " held {} {}",
                    text::duration_minutes(held),
                    reason_text(r.entry_reason.as_deref())
                );
            }
            out
        }
    }

    fn money() -> impl Strategy<Value = Decimal> {
        prop_oneof![
            Just(Decimal::ZERO),
            (-10_000_000_000i64..10_000_000_000, 0u32..=10).prop_map(|(m, s)| Decimal::new(m, s)),
            (any::<i64>(), 0u32..=20).prop_map(|(m, s)| Decimal::new(m, s)),
        ]
    }

    /// Minutes around 2026, and a few instants outside chrono's 4-digit years.
    fn instant() -> impl Strategy<Value = DateTime<Utc>> {
        prop_oneof![
            8 => (-2_000_000i64..2_000_000).prop_map(|m| {
                Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap() + chrono::Duration::minutes(m)
            }),
            1 => Just(Utc.with_ymd_and_hms(-12, 1, 2, 3, 4, 0).unwrap()),
            1 => Just(Utc.with_ymd_and_hms(10_001, 12, 31, 23, 59, 0).unwrap()),
            1 => Just(Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap()),
        ]
    }

    fn row() -> impl Strategy<Value = TradeRecord> {
        (
            (
                any::<u128>(),
                prop::sample::select(vec!["BTC", "ETH", "EURUSD", "DOGE"]),
            ),
            (
                any::<bool>(),
                any::<bool>(),
                instant(),
                prop::option::of(instant()),
            ),
            (money(), money(), money(), prop::option::of(money())),
            (
                money(),
                money(),
                money(),
                money(),
                prop::option::of(money()),
            ),
            (
                prop::option::of("(\\PC|[\"\\\\\n\t ]){0,300}"),
                prop::option::of(prop::sample::select(vec![
                    CloseKind::Signal,
                    CloseKind::Flip,
                    CloseKind::Liquidation,
                    CloseKind::External,
                    CloseKind::Stop,
                    CloseKind::Target,
                ])),
            ),
        )
            .prop_map(
                |(
                    (id, symbol),
                    (long, closed, entry, exit),
                    (price, size, qty, exit_price),
                    (pnl, fees, mfe, mae, minutes),
                    (reason, close_kind),
                )| TradeRecord {
                    id: Uuid::from_u128(id),
                    deployment_id: Uuid::nil(),
                    skill_id: Uuid::nil(),
                    skill_version: 1,
                    symbol: symbol.to_owned(),
                    side: if long { Side::Long } else { Side::Short },
                    status: if closed {
                        TradeStatus::Closed
                    } else {
                        TradeStatus::Open
                    },
                    entry_tick_at: entry,
                    entry_price: price,
                    entry_size_usd: size,
                    entry_leverage: None,
                    entry_reason: reason,
                    entry_snapshot_id: None,
                    entry_regime_tag: None,
                    opened_qty: qty,
                    open_qty: qty,
                    exit_tick_at: exit,
                    exit_price,
                    exit_size_usd: Decimal::ZERO,
                    exit_reason: None,
                    exit_snapshot_id: None,
                    close_kind,
                    holding_minutes: minutes,
                    realized_pnl_usd: pnl,
                    fees_usd: fees,
                    mfe_usd: mfe,
                    mae_usd: mae,
                    broker_reconciled: false,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn sections_render_as_the_reference(
            rows in prop::collection::vec(row(), 0..6),
            now in instant(),
            k in 0usize..8,
            mark in money(),
        ) {
            // Every row closed before `now` shows, whatever its times.
            let marks = BTreeMap::from([("BTC".to_owned(), mark), ("EURUSD".to_owned(), dec!(1.0712))]);
            prop_assert_eq!(render_recent_trades(&rows, k, now), reference::recent(&rows, k, now));
            prop_assert_eq!(
                render_open_positions(&rows, &marks, now),
                reference::open(&rows, &marks, now)
            );
        }
    }
}
