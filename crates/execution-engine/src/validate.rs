//! Validation of a proposed action against the deployer's [`RiskCaps`].
//!
//! See the crate docs for the order of the checks and the semantics of every action.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};
use skill_schema::RiskCaps;
use types::{
    OrderAction, OrderSide, PortfolioSnapshot, Position, ProposedAction, RuleCode, Side, Verdict,
};

use types::text;

/// Decimal places of an order's quantity in base units. `size_usd / mark` is rounded toward
/// zero to this many places, so an order's notional never exceeds what was validated. Exchange
/// lot sizes are the adapter's business.
pub const QTY_DP: u32 = 8;

/// The leverage of an open or add whose proposal names none. Documented and shown to the model:
/// a missing leverage means 1x, never the cap.
pub const DEFAULT_LEVERAGE: Decimal = Decimal::ONE;

/// Everything the engine needs to know about the account, supplied by the caller. The portfolio
/// is broker-authoritative; the rest is bookkeeping the runner keeps (see
/// [`RiskState`](crate::RiskState)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountView {
    /// The broker's portfolio at tick time.
    pub portfolio: PortfolioSnapshot,
    /// Mark price per symbol at tick time. Orders are sized and checked at these prices; an
    /// open position whose symbol has no entry here is valued at its own `mark_price`.
    pub marks: BTreeMap<String, Decimal>,
    /// Highest equity the account has had (the drawdown halt measures from it). A value below
    /// the current equity is treated as the current equity.
    pub peak_equity_usd: Decimal,
    /// Equity at the start of the current UTC day (the daily-loss halt measures from it).
    pub day_start_equity_usd: Decimal,
    /// When recent orders were executed (any action). Only those in `(now − 1h, now]` count
    /// toward `maxOrdersPerHour`; older ones may be left in.
    pub recent_order_times: Vec<DateTime<Utc>>,
}

/// What an executed order does to the position on its symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderIntent {
    /// Opens a position on a flat symbol.
    Open,
    /// Adds to a position of the same side.
    Add,
    /// Closes the opposite-side position and opens the new one in a single fill.
    Flip,
    /// Reduces a position, leaving part of it open.
    Reduce,
    /// Closes the whole position.
    Close,
}

impl OrderIntent {
    /// The snake_case spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            OrderIntent::Open => "open",
            OrderIntent::Add => "add",
            OrderIntent::Flip => "flip",
            OrderIntent::Reduce => "reduce",
            OrderIntent::Close => "close",
        }
    }
}

/// The concrete market order the engine lets through, to be sent to the broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    /// The symbol to trade, as the account knows it.
    pub symbol: String,
    /// Buy or sell.
    pub side: OrderSide,
    /// Base units, always positive. For a flip: the closing quantity plus the opening quantity.
    pub qty: Decimal,
    /// Leverage of the opening part (opens, adds, flips); the position's leverage for reduces and
    /// closes.
    pub leverage: Decimal,
    /// True for reduces and closes: the order may only shrink the position.
    pub reduce_only: bool,
    /// What the order does to the position on its symbol.
    pub intent: OrderIntent,
    /// The mark price the order was sized and checked at.
    pub reference_price: Decimal,
    /// `qty × reference_price`.
    pub notional_usd: Decimal,
    /// The protective stop the model proposed (opens, adds, flips only), checked to be on the
    /// right side of the mark.
    pub stop: Option<Decimal>,
    /// The profit target the model proposed (opens, adds, flips only), checked likewise.
    pub target: Option<Decimal>,
}

/// The engine's answer: the verdict, and the order to send when it is `Executed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Executed, rejected (with its rule code and numbers) or no-op.
    pub verdict: Verdict,
    /// `Some` exactly when the verdict is [`Verdict::Executed`].
    pub order: Option<Order>,
}

impl Decision {
    fn no_op(detail: impl Into<String>) -> Self {
        Decision {
            verdict: Verdict::NoOp {
                detail: detail.into(),
            },
            order: None,
        }
    }

    /// The rule code when the proposal was rejected.
    #[must_use]
    pub fn rule(&self) -> Option<RuleCode> {
        match &self.verdict {
            Verdict::Rejected { rule, .. } => Some(*rule),
            _ => None,
        }
    }

    /// The verdict's detail text.
    #[must_use]
    pub fn detail(&self) -> &str {
        match &self.verdict {
            Verdict::Executed { detail }
            | Verdict::Rejected { detail, .. }
            | Verdict::NoOp { detail } => detail,
        }
    }
}

struct Reject {
    rule: RuleCode,
    detail: String,
}

type Check<T> = Result<T, Reject>;

fn reject<T>(rule: RuleCode, detail: String) -> Check<T> {
    Err(Reject { rule, detail })
}

fn out_of_range() -> Reject {
    Reject {
        rule: RuleCode::InvalidOrder,
        detail: "the order's amounts are out of the representable range".to_owned(),
    }
}

fn mul(a: Decimal, b: Decimal) -> Check<Decimal> {
    a.checked_mul(b).ok_or_else(out_of_range)
}

fn div(a: Decimal, b: Decimal) -> Check<Decimal> {
    a.checked_div(b).ok_or_else(out_of_range)
}

fn add(a: Decimal, b: Decimal) -> Check<Decimal> {
    a.checked_add(b).ok_or_else(out_of_range)
}

fn sub(a: Decimal, b: Decimal) -> Check<Decimal> {
    a.checked_sub(b).ok_or_else(out_of_range)
}

/// `value` (a percentage above `cap`) written with as many decimals as it takes to show that it
/// is above: at least 2, rounded toward zero so it is never overstated (`60.00001%` against a
/// 60% cap, never `60%`).
fn pct_above(value: Decimal, cap: Decimal) -> String {
    for dp in 2..=Decimal::MAX_SCALE {
        let shown = value.round_dp_with_strategy(dp, RoundingStrategy::ToZero);
        if shown > cap {
            return format!("{}%", text::num(shown));
        }
    }
    format!("{}%", text::num(value))
}

/// `part` as a percentage of `whole` (`whole` > 0).
fn percent_of(part: Decimal, whole: Decimal) -> Check<Decimal> {
    div(mul(part, Decimal::ONE_HUNDRED)?, whole)
}

/// Validates one proposal. Pure: the same inputs always give the same decision, byte for byte.
///
/// `known_symbols` are the symbols the skill trades / the market data knows; `now` is the tick
/// time (the rolling order-rate hour ends at it). The checks run in the fixed order documented
/// in the crate docs and the first failing one decides the verdict.
#[must_use]
pub fn validate(
    proposal: Option<&ProposedAction>,
    caps: &RiskCaps,
    account: &AccountView,
    known_symbols: &[String],
    now: DateTime<Utc>,
) -> Decision {
    let Some(proposal) = proposal else {
        return Decision::no_op("no proposal this tick (propose_order was not called)");
    };
    if proposal.action == OrderAction::NoOp {
        return Decision::no_op("the agent proposed no_op");
    }
    match check(proposal, caps, account, known_symbols, now) {
        Ok((order, detail)) => Decision {
            verdict: Verdict::Executed { detail },
            order: Some(order),
        },
        Err(Reject { rule, detail }) => Decision {
            verdict: Verdict::Rejected { rule, detail },
            order: None,
        },
    }
}

fn check(
    p: &ProposedAction,
    caps: &RiskCaps,
    account: &AccountView,
    known_symbols: &[String],
    now: DateTime<Utc>,
) -> Check<(Order, String)> {
    let sym = symbol(&p.symbol);

    // R1: the symbol must be one the skill trades — or, for a close or reduce, one the account
    // holds a position on (a symbol dropped from the skill can still be exited) — and must have
    // a mark price.
    let exiting_held = matches!(p.action, OrderAction::Close | OrderAction::Reduce)
        && account.portfolio.position(&p.symbol).is_some();
    if !exiting_held && !known_symbols.iter().any(|s| s == &p.symbol) {
        let mut known: Vec<&str> = known_symbols.iter().map(String::as_str).collect();
        known.sort_unstable();
        known.dedup();
        return reject(
            RuleCode::UnknownSymbol,
            format!(
                "unknown symbol {sym}: the skill trades [{}]",
                known.join(", ")
            ),
        );
    }
    let mark = match account.marks.get(&p.symbol) {
        Some(m) if *m > Decimal::ZERO => *m,
        _ => {
            return reject(
                RuleCode::UnknownSymbol,
                format!("no mark price for {sym}: the order cannot be priced"),
            );
        }
    };

    let position = account.portfolio.position(&p.symbol);
    match p.action {
        OrderAction::Close => close(&sym, position, mark),
        OrderAction::Reduce => reduce(p, &sym, position, mark),
        OrderAction::OpenLong => open(p, Side::Long, &sym, position, mark, caps, account, now),
        OrderAction::OpenShort => open(p, Side::Short, &sym, position, mark, caps, account, now),
        // Handled by `validate`; kept total for the type checker.
        OrderAction::NoOp => reject(RuleCode::InvalidOrder, "no_op is not an order".to_owned()),
    }
}

fn closing_side(position: &Position) -> OrderSide {
    position.side.opposite().opening_order()
}

fn close(sym: &str, position: Option<&Position>, mark: Decimal) -> Check<(Order, String)> {
    let Some(pos) = position else {
        return reject(
            RuleCode::InvalidOrder,
            format!("close {sym}: there is no open position to close"),
        );
    };
    let notional = mul(pos.qty, mark)?.normalize();
    let order = Order {
        symbol: pos.symbol.clone(),
        side: closing_side(pos),
        qty: pos.qty,
        leverage: pos.leverage,
        reduce_only: true,
        intent: OrderIntent::Close,
        reference_price: mark,
        notional_usd: notional,
        stop: None,
        target: None,
    };
    let detail = format!(
        "close {sym} {}: {} {} at mark {} = {} notional (reduce-only)",
        pos.side,
        side_word(order.side),
        text::num(order.qty),
        text::price_usd(mark),
        text::money(notional),
    );
    Ok((order, detail))
}

fn reduce(
    p: &ProposedAction,
    sym: &str,
    position: Option<&Position>,
    mark: Decimal,
) -> Check<(Order, String)> {
    let Some(pos) = position else {
        return reject(
            RuleCode::InvalidOrder,
            format!("reduce {sym}: there is no open position to reduce"),
        );
    };
    let size = positive_size(p, sym)?;
    let position_notional = mul(pos.qty, mark)?;
    let qty = to_qty(size, mark)?;
    if qty.is_zero() {
        return reject(
            RuleCode::InvalidOrder,
            format!(
                "reduce {sym} by {}: at mark {} that is less than 0.{:0>width$} base units",
                text::money(size),
                text::price_usd(mark),
                1,
                width = QTY_DP as usize
            ),
        );
    }
    let (qty, intent, clamp_note) = if qty >= pos.qty {
        (
            pos.qty,
            OrderIntent::Close,
            format!(
                " (requested {} is not less than the position's {} notional; clamped to a full close)",
                text::money(size),
                text::money(position_notional)
            ),
        )
    } else {
        (qty, OrderIntent::Reduce, String::new())
    };
    let notional = mul(qty, mark)?.normalize();
    let order = Order {
        symbol: pos.symbol.clone(),
        side: closing_side(pos),
        qty,
        leverage: pos.leverage,
        reduce_only: true,
        intent,
        reference_price: mark,
        notional_usd: notional,
        stop: None,
        target: None,
    };
    let detail = format!(
        "reduce {sym} {}: {} {} of {} at mark {} = {} notional (reduce-only){clamp_note}",
        pos.side,
        side_word(order.side),
        text::num(qty),
        text::num(pos.qty),
        text::price_usd(mark),
        text::money(notional),
    );
    Ok((order, detail))
}

fn side_word(side: OrderSide) -> &'static str {
    match side {
        OrderSide::Buy => "buy",
        OrderSide::Sell => "sell",
    }
}

/// `size_usd / mark`, rounded toward zero to [`QTY_DP`] places.
fn to_qty(size: Decimal, mark: Decimal) -> Check<Decimal> {
    Ok(div(size, mark)?
        .round_dp_with_strategy(QTY_DP, RoundingStrategy::ToZero)
        .normalize())
}

fn positive_size(p: &ProposedAction, sym: &str) -> Check<Decimal> {
    match p.size_usd {
        None => reject(
            RuleCode::InvalidOrder,
            format!("{} {sym} needs size_usd > 0; none was given", p.action),
        ),
        Some(size) if size <= Decimal::ZERO => reject(
            RuleCode::InvalidOrder,
            format!(
                "{} {sym} needs size_usd > 0; got {}",
                p.action,
                text::money(size)
            ),
        ),
        Some(size) => Ok(size),
    }
}

/// Checks that a stop or target price sits on the right side of the mark for a position of
/// `side`: a long's stop below the mark and its target above; a short's the other way round.
fn check_level(
    what: &str,
    level: Option<Decimal>,
    side: Side,
    mark: Decimal,
    sym: &str,
) -> Check<()> {
    let Some(level) = level else { return Ok(()) };
    if level <= Decimal::ZERO {
        return reject(
            RuleCode::InvalidOrder,
            format!(
                "{what} {} for {sym} must be a positive price",
                text::price_usd(level)
            ),
        );
    }
    // For a long: stop must be below the mark, target above. For a short: the reverse.
    let below_required = matches!((what, side), ("stop", Side::Long) | ("target", Side::Short));
    let wrong = if below_required {
        level >= mark
    } else {
        level <= mark
    };
    if wrong {
        let (is, must) = if below_required {
            ("at or above", "below")
        } else {
            ("at or below", "above")
        };
        return reject(
            RuleCode::InvalidOrder,
            format!(
                "{what} {} is {is} the mark {} of {sym}; a {side}'s {what} must be {must} the mark",
                text::price_usd(level),
                text::price_usd(mark),
            ),
        );
    }
    Ok(())
}

/// Valuation of an existing position: at the tick's mark for its symbol when there is one, else
/// at the position's own mark.
fn position_notional(pos: &Position, marks: &BTreeMap<String, Decimal>) -> Check<Decimal> {
    let mark = marks.get(&pos.symbol).copied().unwrap_or(pos.mark_price);
    mul(pos.qty, mark)
}

#[allow(clippy::too_many_arguments)]
fn open(
    p: &ProposedAction,
    side: Side,
    sym: &str,
    position: Option<&Position>,
    mark: Decimal,
    caps: &RiskCaps,
    account: &AccountView,
    now: DateTime<Utc>,
) -> Check<(Order, String)> {
    let action = p.action;

    // R2: the deployer's whitelist (empty = unrestricted). Only opening is refused; a position
    // on a symbol that was removed from the list can still be reduced and closed.
    if !caps.allowed_symbols.is_empty() && !caps.allowed_symbols.iter().any(|s| s == &p.symbol) {
        return reject(
            RuleCode::SymbolNotAllowed,
            format!(
                "{sym} is not in the deployer's allowed symbols [{}]",
                caps.allowed_symbols.join(", ")
            ),
        );
    }

    // R11: the shape of the order itself.
    let size = positive_size(p, sym)?;
    let leverage = p.leverage.unwrap_or(DEFAULT_LEVERAGE);
    if leverage < Decimal::ONE {
        return reject(
            RuleCode::InvalidOrder,
            format!(
                "{action} {sym}: leverage {}x is below 1x",
                text::num(leverage)
            ),
        );
    }
    check_level("stop", p.stop, side, mark, sym)?;
    check_level("target", p.target, side, mark, sym)?;

    // R9 / R10: halts block opening and adding (never closing or reducing).
    let equity = account.portfolio.equity_usd;
    let peak = account.peak_equity_usd.max(equity);
    if peak > Decimal::ZERO {
        let drawdown = percent_of(sub(peak, equity)?, peak)?;
        if drawdown >= caps.halt_drawdown_pct {
            return reject(
                RuleCode::HaltDrawdown,
                format!(
                    "trading halted: equity {} is {} below its peak {}; halt at {}; only close and reduce are accepted",
                    text::money(equity),
                    text::pct(drawdown),
                    text::money(peak),
                    text::pct(caps.halt_drawdown_pct),
                ),
            );
        }
    }
    let day_start = account.day_start_equity_usd;
    if day_start > Decimal::ZERO {
        let loss = percent_of(sub(day_start, equity)?, day_start)?;
        if loss >= caps.halt_daily_loss_pct {
            return reject(
                RuleCode::HaltDailyLoss,
                format!(
                    "trading halted for the day: equity {} is {} below the day's starting equity {}; halt at {}; only close and reduce are accepted",
                    text::money(equity),
                    text::pct(loss),
                    text::money(day_start),
                    text::pct(caps.halt_daily_loss_pct),
                ),
            );
        }
    }

    // R5: leverage.
    if leverage > caps.max_leverage {
        let given = if p.leverage.is_some() {
            ""
        } else {
            " (default)"
        };
        return reject(
            RuleCode::LeverageCap,
            format!(
                "leverage {}x{given} is above the cap {}x",
                text::num(leverage),
                text::num(caps.max_leverage)
            ),
        );
    }

    // R6 / R7: the order's size as proposed (the opening leg for a flip).
    if size < caps.min_order_usd {
        return reject(
            RuleCode::OrderTooSmall,
            format!(
                "order {} is below the minimum {}",
                text::money(size),
                text::money(caps.min_order_usd)
            ),
        );
    }
    if size > caps.max_order_usd {
        return reject(
            RuleCode::OrderTooLarge,
            format!(
                "order {} is above the maximum {}",
                text::money(size),
                text::money(caps.max_order_usd)
            ),
        );
    }

    // R8: orders executed in the rolling hour ending now.
    let since = now - Duration::hours(1);
    let recent = account
        .recent_order_times
        .iter()
        .filter(|t| **t > since && **t <= now)
        .count();
    if recent >= usize::try_from(caps.max_orders_per_hour).unwrap_or(usize::MAX) {
        return reject(
            RuleCode::OrderRate,
            format!(
                "{recent} orders executed in the hour since {}; cap {} per hour",
                since.format("%Y-%m-%d %H:%M:%S UTC"),
                caps.max_orders_per_hour
            ),
        );
    }

    let new_qty = to_qty(size, mark)?;
    if new_qty.is_zero() {
        return reject(
            RuleCode::InvalidOrder,
            format!(
                "{action} {sym} {}: at mark {} that rounds to 0 base units",
                text::money(size),
                text::price_usd(mark)
            ),
        );
    }
    let (intent, resulting_qty, order_qty) = match position {
        None => (OrderIntent::Open, new_qty, new_qty),
        Some(pos) if pos.side == side => (OrderIntent::Add, add(pos.qty, new_qty)?, new_qty),
        Some(pos) => (
            OrderIntent::Flip,
            new_qty,
            add(pos.qty, new_qty)?.normalize(),
        ),
    };
    let opening_notional = mul(new_qty, mark)?;
    let resulting_notional = mul(resulting_qty, mark)?;
    let position_word = match intent {
        OrderIntent::Add => "the position after adding",
        OrderIntent::Flip => "the position after the flip",
        _ => "the position",
    };

    // R3: the resulting position, counting what is already held on this side.
    if equity <= Decimal::ZERO {
        return reject(
            RuleCode::PositionCap,
            format!(
                "{position_word} would be {} notional but equity is {}; cap {} of equity",
                text::money(resulting_notional),
                text::money(equity),
                text::pct(caps.max_position_pct)
            ),
        );
    }
    let position_pct = percent_of(resulting_notional, equity)?;
    if position_pct > caps.max_position_pct {
        return reject(
            RuleCode::PositionCap,
            format!(
                "{position_word} would be {} notional = {} of equity {}; cap {}",
                text::money(resulting_notional),
                pct_above(position_pct, caps.max_position_pct),
                text::money(equity),
                text::pct(caps.max_position_pct)
            ),
        );
    }

    // R4: every position's notional after the order.
    let mut others = Decimal::ZERO;
    for pos in &account.portfolio.positions {
        if pos.symbol != p.symbol {
            others = add(others, position_notional(pos, &account.marks)?)?;
        }
    }
    let total = add(others, resulting_notional)?;
    let total_pct = percent_of(total, equity)?;
    if total_pct > caps.max_total_exposure_pct {
        return reject(
            RuleCode::TotalExposure,
            format!(
                "total exposure would be {} notional ({} in other positions + {} in {sym}) = {} of equity {}; cap {}",
                text::money(total),
                text::money(others),
                text::money(resulting_notional),
                pct_above(total_pct, caps.max_total_exposure_pct),
                text::money(equity),
                text::pct(caps.max_total_exposure_pct)
            ),
        );
    }

    // R12: margin for the opening leg; a flip first frees the closed position's margin and
    // settles its unrealized PnL.
    let mut available = account.portfolio.available_margin_usd;
    let mut freed_note = String::new();
    if let (OrderIntent::Flip, Some(pos)) = (intent, position) {
        let freed = add(pos.margin_usd, pos.unrealized_pnl_usd)?;
        available = add(available, freed)?;
        freed_note = format!(
            " after the flip frees {} from the {} position",
            text::money(freed),
            pos.side
        );
    }
    let required = div(opening_notional, leverage)?;
    if required > available {
        return reject(
            RuleCode::InsufficientMargin,
            format!(
                "order needs {} margin ({} notional at {}x); available {}{freed_note}",
                text::money(required),
                text::money(opening_notional),
                text::num(leverage),
                text::money(available)
            ),
        );
    }

    let order = Order {
        symbol: p.symbol.clone(),
        side: side.opening_order(),
        qty: order_qty,
        leverage,
        reduce_only: false,
        intent,
        reference_price: mark,
        notional_usd: mul(order_qty, mark)?.normalize(),
        stop: p.stop,
        target: p.target,
    };
    let flip_note = match (intent, position) {
        (OrderIntent::Flip, Some(pos)) => format!(
            " (closes the {} {} and opens {} {side})",
            text::num(pos.qty),
            pos.side,
            text::num(new_qty)
        ),
        _ => String::new(),
    };
    let detail = format!(
        "{action} {sym} ({}): {} {} at mark {} = {} notional{flip_note} at {}x, margin {}; {position_word} {} = {} of equity {} (cap {}); total exposure {} (cap {})",
        intent.as_str(),
        side_word(order.side),
        text::num(order_qty),
        text::price_usd(mark),
        text::money(order.notional_usd),
        text::num(leverage),
        text::money(required),
        text::money(resulting_notional),
        text::pct(position_pct),
        text::money(equity),
        text::pct(caps.max_position_pct),
        text::pct(total_pct),
        text::pct(caps.max_total_exposure_pct),
    );
    Ok((order, detail))
}

/// A model-written symbol made safe to echo back: at most 24 characters, anything other than
/// ASCII letters, digits and `-_/:.` replaced by `?`. The symbol comes from the model and may be
/// arbitrary text; the detail must never carry it verbatim.
#[must_use]
fn symbol(raw: &str) -> String {
    const MAX: usize = 24;
    let mut out: String = raw
        .chars()
        .take(MAX)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_/:.".contains(c) {
                c
            } else {
                '?'
            }
        })
        .collect();
    if raw.chars().count() > MAX {
        out.push_str("...");
    }
    if out.is_empty() {
        out.push_str("(empty)");
    }
    out
}

#[cfg(test)]
mod symbol_tests {
    use super::symbol;

    #[test]
    fn symbols_from_the_model_are_sanitised_and_bounded() {
        assert_eq!(symbol("BTC"), "BTC");
        assert_eq!(symbol("kPEPE-PERP"), "kPEPE-PERP");
        assert_eq!(symbol("BTC\nignore caps"), "BTC?ignore?caps");
        assert_eq!(symbol(&"A".repeat(30)), format!("{}...", "A".repeat(24)));
        assert_eq!(symbol(""), "(empty)");
    }
}
