//! The memory sections of the user message: "Recent trades on this skill (closed)" and
//! "Open positions (memory view)". Deterministic text: no floats, no locale, no clock.

use chrono::{DateTime, Datelike, Utc};
use types::{CloseKind, TradeRecord, TradeStatus};

use crate::materialize::cut_reason;
use types::text;

/// Hard cap on the rows of the recent-trades section, whatever K the caller passes.
pub const MAX_RECENT_TRADES_K: usize = types::MAX_MEMORY_K as usize;

/// Characters of a reason a memory row shows (#18 item 5: a row is the agent's memory of a
/// trade, not its whole argument; the ledger keeps the reason whole). A longer reason is cut at
/// a char boundary to `VIEW_REASON_CHARS − 1` chars and `…`.
pub const VIEW_REASON_CHARS: usize = 32;

/// The reason as quoted data cut to [`VIEW_REASON_CHARS`], or `(no reason recorded)`.
fn push_reason(out: &mut String, reason: Option<&str>) {
    match reason.and_then(|r| cut_reason(r, VIEW_REASON_CHARS)) {
        Some(r) => text::push_quoted(out, &r),
        None => out.push_str("(no reason recorded)"),
    }
}

/// `t` as `MM-DDTHH:MM`, with the year in front (`%Y-%m-%dT%H:%M`) when it is not `now`'s.
fn push_time(out: &mut String, t: DateTime<Utc>, now: DateTime<Utc>) {
    if t.year() == now.year() {
        text::push_short_time(out, t);
    } else {
        text::push_date_minute(out, t);
    }
}

/// The body of the "Recent trades on this skill (closed)" section (the context assembly writes the
/// heading): at most `k` (capped at [`MAX_RECENT_TRADES_K`])
/// rows closed at or before `now`, newest entry first (ties: symbol, then id), one line each:
///
/// `- 06-04T10:00 150m BTC long @65,200 +$28.40 "breakout above prior swing high"`
///
/// The entry time (the year shown only when it is not `now`'s), the holding time, the entry
/// price and the PnL **gross** of fees (the `realized_pnl_usd` convention); a close that was not
/// the agent's signal is named (`flip`, `liquidation`, `external`, `stop`, `target`). Reasons
/// are quoted data, escaped, cut to [`VIEW_REASON_CHARS`]. Exit time and price, size, fees and
/// the whole reason stay in the ledger: on the README's example a row costs ≈38 tokens (o200k,
/// the section's tokens over its rows) where the full row cost ≈118.
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

    let mut out = String::with_capacity(96 * closed.len() + 160);
    if closed.is_empty() {
        out.push_str("- none: no trade of this skill has closed yet.\n");
        return out;
    }
    out.push_str(RECENT_LEGEND);
    for r in closed {
        out.push_str("- ");
        push_time(&mut out, r.entry_tick_at, now);
        let minutes = r
            .holding_minutes
            .map_or(0, |m| m.trunc().try_into().unwrap_or(i64::MAX));
        out.push(' ');
        text::push_duration_minutes(&mut out, minutes);
        out.push(' ');
        out.push_str(&r.symbol);
        out.push(' ');
        out.push_str(r.side.as_str());
        out.push_str(" @");
        text::push_price(&mut out, r.entry_price);
        out.push(' ');
        text::push_signed_money(&mut out, r.realized_pnl_usd);
        match r.close_kind {
            Some(CloseKind::Signal) | None => {}
            Some(kind) => {
                out.push(' ');
                out.push_str(kind.as_str());
            }
        }
        out.push(' ');
        push_reason(&mut out, r.entry_reason.as_deref());
        out.push('\n');
    }
    out
}

/// The legend line of the recent-trades rows.
const RECENT_LEGEND: &str = "(entry UTC, held, entry price, PnL gross of fees, close if not your \
     signal; newest first; reasons cut at 32 chars)\n";

/// The body of the "Open positions (memory view)" section (the context assembly writes the
/// heading): every row open at `now` (entered at or before it), by
/// symbol, one line each:
///
/// `- ETH long @3,410 held 30m MFE +$22.00 MAE -$8.00 "BB lower-band bounce"`
///
/// What the Portfolio section does not say: the entry, how long it has been held, the best and
/// worst unrealized PnL so far (MFE / MAE) and why it was opened (the mark, size, margin and
/// unrealized PnL are the Portfolio section's). Realized PnL of partial closes follows when
/// non-zero. The reason is cut as in [`render_recent_trades`].
#[must_use]
pub fn render_open_positions(rows: &[TradeRecord], now: DateTime<Utc>) -> String {
    let mut open: Vec<&TradeRecord> = rows
        .iter()
        .filter(|r| r.status == TradeStatus::Open && r.entry_tick_at <= now)
        .collect();
    open.sort_by(|a, b| a.symbol.cmp(&b.symbol).then_with(|| a.id.cmp(&b.id)));

    let mut out = String::with_capacity(112 * open.len() + 32);
    if open.is_empty() {
        out.push_str("- none: flat on every symbol.\n");
        return out;
    }
    for r in open {
        out.push_str("- ");
        out.push_str(&r.symbol);
        out.push(' ');
        out.push_str(r.side.as_str());
        out.push_str(" @");
        text::push_price(&mut out, r.entry_price);
        out.push_str(" held ");
        text::push_duration_minutes(&mut out, (now - r.entry_tick_at).num_minutes());
        out.push_str(" MFE ");
        text::push_signed_money(&mut out, r.mfe_usd);
        out.push_str(" MAE ");
        text::push_signed_money(&mut out, r.mae_usd);
        if !r.realized_pnl_usd.is_zero() {
            out.push_str(" realized ");
            text::push_signed_money(&mut out, r.realized_pnl_usd);
        }
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
    use rust_decimal::Decimal;
    use types::{Side, Uuid};

    use super::*;

    /// The sections as first written (`write!` of the `format` functions' Strings, chrono's
    /// `format`): the functions above must give the same bytes.
    mod reference {
        use std::fmt::Write as _;

        use chrono::{DateTime, Datelike, Utc};
        use types::{CloseKind, TradeRecord, TradeStatus};

        use super::super::{MAX_RECENT_TRADES_K, RECENT_LEGEND, VIEW_REASON_CHARS};
        use types::text;

        fn reason_text(reason: Option<&str>) -> String {
            match reason.map(str::trim).filter(|r| !r.is_empty()) {
                Some(r) if r.chars().count() > VIEW_REASON_CHARS => {
                    let cut: String = r.chars().take(VIEW_REASON_CHARS - 1).collect();
                    text::quoted(&format!("{cut}…"))
                }
                Some(r) => text::quoted(r),
                None => "(no reason recorded)".to_owned(),
            }
        }

        fn time(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
            let fmt = if t.year() == now.year() {
                "%m-%dT%H:%M"
            } else {
                "%Y-%m-%dT%H:%M"
            };
            t.format(fmt).to_string()
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
            out.push_str(RECENT_LEGEND);
            for r in closed {
                let minutes = r
                    .holding_minutes
                    .map_or(0, |m| m.trunc().try_into().unwrap_or(i64::MAX));
                let _ = write!(
                    out,
                    "- {} {} {} {} @{} {}",
                    time(r.entry_tick_at, now),
                    text::duration_minutes(minutes),
                    r.symbol,
                    r.side,
                    text::price(r.entry_price),
                    text::signed_money(r.realized_pnl_usd),
                );
                match r.close_kind {
                    Some(CloseKind::Signal) | None => {}
                    Some(kind) => {
                        let _ = write!(out, " {kind}");
                    }
                }
                let _ = writeln!(out, " {}", reason_text(r.entry_reason.as_deref()));
            }
            out
        }

        pub(super) fn open(rows: &[TradeRecord], now: DateTime<Utc>) -> String {
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
                let _ = write!(
                    out,
                    "- {} {} @{} held {} MFE {} MAE {}",
                    r.symbol,
                    r.side,
                    text::price(r.entry_price),
                    text::duration_minutes((now - r.entry_tick_at).num_minutes()),
                    text::signed_money(r.mfe_usd),
                    text::signed_money(r.mae_usd),
                );
                if !r.realized_pnl_usd.is_zero() {
                    let _ = write!(out, " realized {}", text::signed_money(r.realized_pnl_usd));
                }
                let _ = writeln!(out, " {}", reason_text(r.entry_reason.as_deref()));
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
        ) {
            // Every row closed before `now` shows, whatever its times.
            prop_assert_eq!(render_recent_trades(&rows, k, now), reference::recent(&rows, k, now));
            prop_assert_eq!(render_open_positions(&rows, now), reference::open(&rows, now));
        }
    }
}
