//! The memory sections of the user message: "Recent trades on this skill (closed)" and
//! "Open positions (memory view)". Deterministic text: no floats, no locale, no clock.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use types::{CloseKind, TradeRecord, TradeStatus};

use crate::format;
use crate::materialize::bound_reason;

/// Header of the closed-trades section.
pub const RECENT_TRADES_HEADER: &str = "## Recent trades on this skill (closed)";
/// Header of the open-positions section.
pub const OPEN_POSITIONS_HEADER: &str = "## Open positions (memory view)";
/// Hard cap on the rows of the recent-trades section, whatever K the caller passes.
pub const MAX_RECENT_TRADES_K: usize = 30;

const TIME_FMT: &str = "%Y-%m-%dT%H:%M";

fn reason_text(reason: Option<&str>) -> String {
    match reason.and_then(bound_reason) {
        Some(r) => format::quoted(&r),
        None => "(no reason recorded)".to_owned(),
    }
}

/// "## Recent trades on this skill (closed)": at most `k` (capped at [`MAX_RECENT_TRADES_K`])
/// rows closed at or before `now`, newest entry first (ties: symbol, then id), one line each:
///
/// `- 2026-06-04T10:00 → 12:30 BTC long $250 @ 65,200 → 65,940 +$28.40 (11.4%) 150m "reason"`
///
/// The exit shows its date when it differs from the entry's. PnL is **gross** of fees (the
/// `realized_pnl_usd` convention), the percentage is relative to the entry notional; non-zero
/// fees follow as `fees $0.31`, and a close that was not the agent's signal is tagged
/// (`[flip]`, `[liquidation]`, `[external]`). Reasons are quoted data, escaped.
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

    let mut out = String::from(RECENT_TRADES_HEADER);
    out.push('\n');
    if closed.is_empty() {
        out.push_str("- none: no trade of this skill has closed yet.\n");
        return out;
    }
    out.push_str("(times UTC; newest entry first; PnL gross of fees, % of entry notional)\n");
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
            format::usd(r.entry_size_usd),
            format::price(r.entry_price),
            r.exit_price.map_or_else(|| "?".to_owned(), format::price),
            format::signed_usd(r.realized_pnl_usd),
        );
        if let Some(pct) = format::percent(r.realized_pnl_usd, r.entry_size_usd) {
            let _ = write!(out, " ({pct})");
        }
        if !r.fees_usd.is_zero() {
            let _ = write!(out, " fees {}", format::usd(r.fees_usd));
        }
        let minutes = r
            .holding_minutes
            .map_or(0, |m| m.trunc().try_into().unwrap_or(i64::MAX));
        let _ = write!(out, " {}", format::duration_minutes(minutes));
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

/// "## Open positions (memory view)": every row open at `now` (entered at or before it), by
/// symbol, one line each:
///
/// `- ETH long $200 @ 3,410 mark=3,438 uPnL=+$1.64 MFE=+$22.00 / MAE=-$8.00 held 30m "reason"`
///
/// `$200` is the open quantity at the average entry; `uPnL` is gross at `marks[symbol]` (shown as
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

    let mut out = String::from(OPEN_POSITIONS_HEADER);
    out.push('\n');
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
            format::usd(size),
            format::price(r.entry_price)
        );
        match marks.get(&r.symbol) {
            Some(mark) => {
                let upnl = r
                    .side
                    .sign()
                    .checked_mul(*mark - r.entry_price)
                    .and_then(|d| d.checked_mul(r.open_qty));
                let _ = write!(out, " mark={}", format::price(*mark));
                if let Some(upnl) = upnl {
                    let _ = write!(out, " uPnL={}", format::signed_usd(upnl));
                }
            }
            None => out.push_str(" mark=n/a"),
        }
        let _ = write!(
            out,
            " MFE={} / MAE={}",
            format::signed_usd(r.mfe_usd),
            format::signed_usd(r.mae_usd)
        );
        if !r.realized_pnl_usd.is_zero() {
            let _ = write!(out, " realized={}", format::signed_usd(r.realized_pnl_usd));
        }
        let held = (now - r.entry_tick_at).num_minutes();
        let _ = writeln!(
            out,
            " held {} {}",
            format::duration_minutes(held),
            reason_text(r.entry_reason.as_deref())
        );
    }
    out
}
