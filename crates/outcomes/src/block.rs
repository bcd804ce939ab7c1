//! The `<trading_memory>` block (seed 003's "Auto-Injected Context"): per traded symbol, its
//! last outcomes, its 30-day statistics and how trades did in the market condition it is in now.
//! Written into the caller's buffer with `types::text`'s styles; nothing here reads a clock or a
//! store (the tick recalls the rows as of its time and passes them).

use rust_decimal::Decimal;
use types::text::{push_date_minute, push_signed_fixed, push_uint};
use types::{RegimeTag, Side};

use crate::recall::RecalledOutcome;
use crate::score::Grade;
use crate::stats::{MIN_GROUP, OutcomeStats, best_setup, stats_dp};

/// Outcomes listed per symbol.
pub const RECENT_ROWS: u32 = 5;
/// The window of the per-symbol statistics.
pub const STATS_DAYS: i64 = 30;
/// Graded outcomes (any symbol) the "Similar Market Conditions" line summarises.
pub const CONDITION_ROWS: u32 = 10;
/// Decimals of every PnL % the block shows; means are rounded to them once ([`stats_dp`]).
pub const BLOCK_PNL_DP: u32 = 2;
/// Above this confidence a signal is "HIGH confidence" in the block's note.
pub const HIGH_CONFIDENCE: u8 = 75;

/// The rows recalled for one traded symbol, as of the tick.
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolMemory {
    /// The symbol.
    pub symbol: String,
    /// Its newest outcomes, newest first (at most [`RECENT_ROWS`] are shown).
    pub recent: Vec<RecalledOutcome>,
    /// Its outcomes decided in the last [`STATS_DAYS`] days: ticks in [T − 30 d, T), the
    /// window convention of [`crate::RecallQuery`].
    pub last_30_days: Vec<RecalledOutcome>,
    /// The regime of its bars now (`None` without bars: the section is left out).
    pub condition: Option<RegimeTag>,
    /// The newest graded outcomes of any symbol decided in `condition`, newest first (at most
    /// [`CONDITION_ROWS`] count).
    pub in_condition: Vec<RecalledOutcome>,
}

fn push_pnl(out: &mut String, pnl: Option<Decimal>) {
    match pnl {
        Some(p) => {
            push_signed_fixed(out, p, BLOCK_PNL_DP);
            out.push('%');
        }
        None => out.push_str("pending"),
    }
}

fn push_rate(out: &mut String, s: &OutcomeStats) {
    match s.win_rate_pct {
        Some(r) => {
            types::text::push_num(out, r);
            out.push('%');
        }
        None => out.push_str("n/a"),
    }
}

/// Writes the whole block (`<trading_memory>` … `</trading_memory>`, one line each) for
/// `symbols`, in their order.
pub fn write_trading_memory(out: &mut String, symbols: &[SymbolMemory]) {
    out.push_str("<trading_memory>\n");
    for m in symbols {
        write_symbol(out, m);
    }
    out.push_str("</trading_memory>\n");
}

fn write_symbol(out: &mut String, m: &SymbolMemory) {
    let sym = m.symbol.as_str();
    out.push_str("## Recent ");
    out.push_str(sym);
    out.push_str(" History (Last ");
    push_uint(out, u64::from(RECENT_ROWS));
    out.push_str(" trades)\n");
    if m.recent.is_empty() {
        out.push_str("No outcomes recorded on ");
        out.push_str(sym);
        out.push_str(" yet.\n");
    } else {
        out.push_str("| Date | Direction | Conf | Outcome | P&L 4h |\n");
        out.push_str("|------|-----------|------|---------|--------|\n");
        for r in m.recent.iter().take(RECENT_ROWS as usize) {
            let o = &r.outcome;
            out.push_str("| ");
            push_date_minute(out, o.tick_at);
            out.push_str(" | ");
            out.push_str(match o.direction {
                Side::Long => "LONG",
                Side::Short => "SHORT",
            });
            if o.verdict == crate::OutcomeVerdict::Rejected {
                out.push_str(" (rejected)");
            }
            out.push_str(" | ");
            match o.confidence {
                Some(c) => push_uint(out, u64::from(c)),
                None => out.push('-'),
            }
            out.push_str(" | ");
            out.push_str(o.score.outcome_grade.map_or("pending", Grade::as_str));
            out.push_str(" | ");
            push_pnl(out, o.score.pnl_percent_4h);
            out.push_str(" |\n");
        }
    }

    out.push_str("## ");
    out.push_str(sym);
    out.push_str(" Stats (");
    push_uint(out, STATS_DAYS.unsigned_abs());
    out.push_str(" days)\n");
    let s = stats_dp(&m.last_30_days, BLOCK_PNL_DP);
    if s.outcomes == 0 {
        out.push_str("No outcomes in the last ");
        push_uint(out, STATS_DAYS.unsigned_abs());
        out.push_str(" days.\n");
    } else if s.graded == 0 {
        out.push_str("No graded outcomes yet (");
        push_uint(out, u64::from(s.outcomes));
        out.push_str(" pending: a grade comes 24h after the decision).\n");
    } else {
        out.push_str("Win rate: ");
        push_rate(out, &s);
        out.push_str(" (");
        push_uint(out, u64::from(s.wins));
        out.push_str(" of ");
        push_uint(out, u64::from(s.graded));
        out.push_str(" graded) | Avg P&L 24h: ");
        push_pnl(out, s.avg_pnl_24h_pct);
        if let Some(best) = best_setup(&m.last_30_days) {
            out.push_str(" | Best setup: ");
            out.push_str(&best.setup);
        }
        out.push('\n');
    }

    let Some(condition) = m.condition else {
        return;
    };
    out.push_str("## Similar Market Conditions (");
    out.push_str(condition.as_str());
    out.push_str(")\n");
    let rows: Vec<&RecalledOutcome> = m
        .in_condition
        .iter()
        .filter(|r| r.outcome.score.outcome_grade.is_some())
        .take(CONDITION_ROWS as usize)
        .collect();
    if rows.is_empty() {
        out.push_str("No graded trades in these conditions yet.\n");
        return;
    }
    let s = stats_dp(rows.iter().copied(), BLOCK_PNL_DP);
    out.push_str("Past ");
    push_uint(out, u64::from(s.graded));
    out.push_str(" graded trades in these conditions: ");
    push_rate(out, &s);
    out.push_str(" win rate | Avg P&L 24h: ");
    push_pnl(out, s.avg_pnl_24h_pct);
    out.push('\n');
    let high = stats_dp(
        rows.iter()
            .copied()
            .filter(|r| r.outcome.confidence.is_some_and(|c| c > HIGH_CONFIDENCE)),
        BLOCK_PNL_DP,
    );
    let rest = stats_dp(
        rows.iter()
            .copied()
            .filter(|r| r.outcome.confidence.is_none_or(|c| c <= HIGH_CONFIDENCE)),
        BLOCK_PNL_DP,
    );
    if high.graded >= MIN_GROUP
        && rest.graded >= MIN_GROUP
        && high.win_rate_pct != rest.win_rate_pct
    {
        out.push_str("Note: HIGH confidence (>");
        push_uint(out, u64::from(HIGH_CONFIDENCE));
        out.push_str(if high.win_rate_pct > rest.win_rate_pct {
            ") signals performed best here ("
        } else {
            ") signals underperformed here ("
        });
        push_rate(out, &high);
        out.push_str(" vs ");
        push_rate(out, &rest);
        out.push_str(" win rate)\n");
    }
}
