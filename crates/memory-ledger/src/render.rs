//! The memory sections of the user message: "Recent trades on this skill (closed)" and
//! "Open positions (memory view)". Deterministic text: no floats, no locale, no clock.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use types::{CloseKind, TradeRecord, TradeStatus};

use crate::format;
use crate::materialize::{REASON_MAX_CHARS, bound_reason};

/// Header of the closed-trades section.
pub const RECENT_TRADES_HEADER: &str = "## Recent trades on this skill (closed)";
/// Header of the open-positions section.
pub const OPEN_POSITIONS_HEADER: &str = "## Open positions (memory view)";
/// Hard cap on the rows of the recent-trades section, whatever K the caller passes.
pub const MAX_RECENT_TRADES_K: usize = 30;

const TIME_FMT: &str = "%Y-%m-%dT%H:%M";

/// Appends the bounded reason, quoted, or `(no reason recorded)`.
fn push_reason(out: &mut String, reason: Option<&str>) {
    match reason.map(str::trim) {
        None | Some("") => out.push_str("(no reason recorded)"),
        // At most as many chars as bytes: within the bound, nothing to cut.
        Some(r) if r.len() <= REASON_MAX_CHARS => format::push_quoted(out, r),
        Some(r) => match bound_reason(r) {
            Some(r) => format::push_quoted(out, &r),
            None => out.push_str("(no reason recorded)"),
        },
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

    // About one line's worth of bytes a row, so the buffer rarely grows.
    let mut out = String::with_capacity(RECENT_TRADES_HEADER.len() + 96 + closed.len() * 384);
    out.push_str(RECENT_TRADES_HEADER);
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
            "- {} → {} ",
            r.entry_tick_at.format(TIME_FMT),
            exit_at.format(exit_fmt),
        );
        out.push_str(&r.symbol);
        out.push(' ');
        out.push_str(r.side.as_str());
        out.push(' ');
        format::push_usd(&mut out, r.entry_size_usd);
        out.push_str(" @ ");
        format::push_price(&mut out, r.entry_price);
        out.push_str(" → ");
        match r.exit_price {
            Some(p) => format::push_price(&mut out, p),
            None => out.push('?'),
        }
        out.push(' ');
        format::push_signed_usd(&mut out, r.realized_pnl_usd);
        let before = out.len();
        out.push_str(" (");
        if format::push_percent(&mut out, r.realized_pnl_usd, r.entry_size_usd) {
            out.push(')');
        } else {
            out.truncate(before);
        }
        if !r.fees_usd.is_zero() {
            out.push_str(" fees ");
            format::push_usd(&mut out, r.fees_usd);
        }
        let minutes = r
            .holding_minutes
            .map_or(0, |m| m.trunc().try_into().unwrap_or(i64::MAX));
        out.push(' ');
        format::push_duration_minutes(&mut out, minutes);
        match r.close_kind {
            Some(CloseKind::Signal) | None => {}
            Some(kind) => {
                let _ = write!(out, " [{kind}]");
            }
        }
        out.push(' ');
        push_reason(&mut out, r.entry_reason.as_deref());
        out.push('\n');
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

    // About one line's worth of bytes a row, so the buffer rarely grows.
    let mut out = String::with_capacity(OPEN_POSITIONS_HEADER.len() + 32 + open.len() * 384);
    out.push_str(OPEN_POSITIONS_HEADER);
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
        out.push_str("- ");
        out.push_str(&r.symbol);
        out.push(' ');
        out.push_str(r.side.as_str());
        out.push(' ');
        format::push_usd(&mut out, size);
        out.push_str(" @ ");
        format::push_price(&mut out, r.entry_price);
        match marks.get(&r.symbol) {
            Some(mark) => {
                let upnl = r
                    .side
                    .sign()
                    .checked_mul(*mark - r.entry_price)
                    .and_then(|d| d.checked_mul(r.open_qty));
                out.push_str(" mark=");
                format::push_price(&mut out, *mark);
                if let Some(upnl) = upnl {
                    out.push_str(" uPnL=");
                    format::push_signed_usd(&mut out, upnl);
                }
            }
            None => out.push_str(" mark=n/a"),
        }
        out.push_str(" MFE=");
        format::push_signed_usd(&mut out, r.mfe_usd);
        out.push_str(" / MAE=");
        format::push_signed_usd(&mut out, r.mae_usd);
        if !r.realized_pnl_usd.is_zero() {
            out.push_str(" realized=");
            format::push_signed_usd(&mut out, r.realized_pnl_usd);
        }
        let held = (now - r.entry_tick_at).num_minutes();
        out.push_str(" held ");
        format::push_duration_minutes(&mut out, held);
        out.push(' ');
        push_reason(&mut out, r.entry_reason.as_deref());
        out.push('\n');
    }
    out
}
