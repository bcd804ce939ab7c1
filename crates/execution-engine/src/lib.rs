//! The execution engine: the only authority on what trades.
//!
//! It owns two things:
//! - [`validate`]: checks the model's [`ProposedAction`](types::ProposedAction) against the
//!   deployer's [`RiskCaps`](skill_schema::RiskCaps) and the broker-authoritative account, and
//!   answers with a [`Decision`] — a [`Verdict`](types::Verdict) (executed / rejected with a
//!   stable [`RuleCode`](types::RuleCode) and a detail stating the numbers / no-op) plus, when
//!   executed, the concrete [`Order`] to send;
//! - [`PaperBroker`]: a simulated perp account that fills those orders with fees, slippage,
//!   leverage, isolated margin and liquidation, and reports broker-authoritative snapshots and
//!   fills.
//!
//! And [`RiskState`], the small between-ticks bookkeeping (peak equity, the UTC day's starting
//! equity, recent order times) the halts and the order-rate rule read.
//!
//! ```
//! use std::collections::BTreeMap;
//! use chrono::{TimeZone, Utc};
//! use execution_engine::{AccountView, OrderTag, PaperBroker, PaperBrokerConfig, validate};
//! use rust_decimal::Decimal;
//! use skill_schema::RiskCaps;
//! use types::{OrderAction, ProposedAction, RuleCode, Verdict};
//!
//! let now = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
//! let mut broker = PaperBroker::new(PaperBrokerConfig::new(Decimal::from(10_000)))?;
//! let caps = RiskCaps {
//!     max_position_pct: Decimal::from(50),
//!     max_total_exposure_pct: Decimal::from(100),
//!     max_leverage: Decimal::from(2),
//!     min_order_usd: Decimal::TEN,
//!     max_order_usd: Decimal::from(10_000),
//!     max_orders_per_hour: 6,
//!     halt_drawdown_pct: Decimal::from(20),
//!     halt_daily_loss_pct: Decimal::from(5),
//!     allowed_symbols: vec![],
//! };
//! let equity = Decimal::from(10_000);
//! let account = AccountView {
//!     portfolio: broker.snapshot(now),
//!     marks: BTreeMap::from([("BTC".to_owned(), Decimal::from(65_000))]),
//!     peak_equity_usd: equity,
//!     day_start_equity_usd: equity,
//!     recent_order_times: vec![],
//! };
//! let symbols = ["BTC".to_owned()];
//! let mut proposal = ProposedAction {
//!     action: OrderAction::OpenLong,
//!     symbol: "BTC".into(),
//!     size_usd: Some(Decimal::from(2_000)),
//!     leverage: Some(Decimal::from(10)),
//!     reason: "breakout".into(),
//!     confidence: None,
//!     stop: None,
//!     target: None,
//! };
//!
//! // The model asked for 10x; the deployer allows 2x. The model cannot raise a cap.
//! let decision = validate(Some(&proposal), &caps, &account, &symbols, now);
//! assert!(matches!(decision.verdict, Verdict::Rejected { rule: RuleCode::LeverageCap, .. }));
//!
//! proposal.leverage = None; // 1x
//! let decision = validate(Some(&proposal), &caps, &account, &symbols, now);
//! let order = decision.order.expect("executed");
//! let fill = broker.execute(&order, Decimal::from(65_000), now, OrderTag::default())?;
//! assert_eq!(fill.qty, order.qty);
//! assert_eq!(broker.snapshot(now).positions.len(), 1);
//! # Ok::<(), execution_engine::BrokerError>(())
//! ```
//!
//! # What it must never do
//! - No I/O: no database, no network, no files, no logging side channel that changes behaviour.
//! - No clock: every time is passed in (`now`, `at`); the same inputs give the same decision and
//!   the same fills, byte for byte, in a backtest and live.
//! - Nothing the model writes can raise a cap. The caps come only from the deployer's
//!   `RiskCaps`; the proposal's leverage, size, stop and reason are inputs to be checked, never
//!   settings. A missing leverage means [`DEFAULT_LEVERAGE`] (1x), never the cap. The
//!   model-written symbol is sanitised and bounded before it is echoed in a detail
//!   (`validate::symbol`); the model's `reason` is never echoed. Numbers in details are written
//!   in the styles of [`types::text`] (money `$6,000.00`).
//! - No floats: money, prices and sizes are `rust_decimal::Decimal`.
//!
//! # Actions
//! - `None` (no `propose_order` call) and `no_op` → [`Verdict::NoOp`](types::Verdict::NoOp).
//! - `open_long` / `open_short` with `size_usd` = the notional to **add on that side**, sized at
//!   the tick's mark: `qty = size_usd / mark`, rounded toward zero to [`QTY_DP`] places.
//!   - flat symbol → [`OrderIntent::Open`];
//!   - same-side position → [`OrderIntent::Add`] (the resulting position is the existing one plus
//!     the new quantity);
//!   - opposite-side position → [`OrderIntent::Flip`]: one order for `existing qty + new qty`
//!     that closes the old position and opens a new one of `size_usd` on the other side. The
//!     rules check the **resulting** position (`size_usd` of the new side); the flip frees the old
//!     position's margin and settles its unrealized PnL before the margin check.
//! - `close` → a reduce-only order for the whole position; `size_usd` is ignored.
//! - `reduce` with `size_usd` = the notional to take off at the mark. A reduce of at least the
//!   position's notional is **clamped** to a full close (intent `Close`) rather than rejected:
//!   a risk-reducing order must always pass, and the detail says it was clamped.
//! - `stop` / `target` are checked on opens, adds and flips only, and carried on the [`Order`]
//!   for the broker to execute (see *Paper broker accounting*).
//!
//! # Order of the checks
//! The first failing check decides; the order is fixed so that a verdict is deterministic:
//!
//! 1. **R1_UNKNOWN_SYMBOL** — the symbol is not one of `known_symbols` (exact match; for a
//!    close or reduce, a symbol the account holds a position on also counts, so a symbol dropped
//!    from the skill can still be exited), or there is no positive mark price for it. Applies to
//!    every action: nothing can be priced without a mark.
//! 2. *close / reduce* — **R11_INVALID_ORDER** when there is no position, when a reduce has a
//!    missing/zero/negative `size_usd`, or when it is smaller than one unit of [`QTY_DP`]. Nothing
//!    else is checked: **close and reduce are never blocked by R2–R10 or R12** — not by the
//!    halts, not by the order rate, not by the whitelist (a symbol removed from
//!    `allowedSymbols` can still be exited), not by order-size bounds. Risk-reducing orders
//!    always pass.
//! 3. *open / add / flip*, in this order:
//!    1. **R2_SYMBOL_NOT_ALLOWED** — `allowedSymbols` is non-empty and lacks the symbol.
//!    2. **R11_INVALID_ORDER** — missing/zero/negative `size_usd`; leverage below 1x; a stop or
//!       target that is not positive or on the wrong side of the mark (long: stop < mark <
//!       target; short: target < mark < stop).
//!    3. **R9_HALT_DRAWDOWN** — equity is at least `haltDrawdownPct` below the peak equity
//!       (`(peak − equity) / peak`; the peak is at least the current equity).
//!    4. **R10_HALT_DAILY_LOSS** — equity is at least `haltDailyLossPct` below the UTC day's
//!       starting equity. Equity includes unrealized PnL.
//!    5. **R5_LEVERAGE_CAP** — leverage (missing = 1x) above `maxLeverage`.
//!    6. **R6_ORDER_TOO_SMALL** / **R7_ORDER_TOO_LARGE** — `size_usd` (for a flip: the opening
//!       leg) below `minOrderUsd` / above `maxOrderUsd`.
//!    7. **R8_ORDER_RATE** — the orders executed in `(now − 1h, now]` already number
//!       `maxOrdersPerHour`. Every executed order counts, including closes and reduces.
//!    8. **R11_INVALID_ORDER** — `size_usd / mark` rounds to zero base units.
//!    9. **R3_POSITION_CAP** — the resulting position's notional at the mark (existing + added
//!       for an add) above `maxPositionPct` of equity (or equity not positive).
//!    10. **R4_TOTAL_EXPOSURE** — Σ notionals of the other positions (at the tick's marks, else
//!        their own mark) + the resulting position, above `maxTotalExposurePct` of equity.
//!    11. **R12_INSUFFICIENT_MARGIN** — the opening leg's margin (`notional / leverage`) above
//!        the available margin (plus, for a flip, the old position's margin and unrealized PnL).
//!
//! Arithmetic that would overflow is rejected as R11 rather than panicking. Percentages are
//! compared exactly and shown rounded to 2 decimals, except the breaching percentage of an R3 or
//! R4 rejection: it gets as many decimals as it takes to be above the cap, rounded toward zero
//! (`60.00001%` against a 60% cap, never `60% … cap 60%`).
//!
//! An `Executed` verdict means "passed every rule, send this order". The broker may still refuse
//! (e.g. [`BrokerError::InsufficientMargin`] because fees and slippage are on top of the
//! engine's margin check); the runner records that refusal.
//!
//! # Paper broker accounting
//! - Account in USD. **Isolated margin**: each position locks `notional at the fill price /
//!   leverage` from the wallet; reduces release it pro rata by quantity. Available margin =
//!   wallet − Σ locked margins (an isolated position's unrealized profit is not available until
//!   realized). Equity = wallet + Σ unrealized PnL = initial + realized − fees + unrealized.
//! - Market fills only, at the given price with slippage (bps, adverse to the taker) and a taker
//!   fee (bps of the fill's notional) charged on every fill, including liquidations.
//! - Average-cost positions: an add moves the entry to the quantity-weighted average; reduces,
//!   closes and flips never move it. Realized PnL is gross (fees are tracked separately) and is
//!   booked on the closed quantity against the average entry.
//! - A flip is **one** fill whose quantity is the closing quantity plus the opening quantity; the
//!   new position's entry is the fill price. Consumers (the ledger) split it.
//! - Liquidation: when a position's margin + unrealized PnL falls to the maintenance margin
//!   rate × notional (the symbol's rate: `0.5 / max` where the exchange publishes a maximum
//!   leverage for it in `exchange_max_leverage`, else `maintenance_margin_rate`) — long
//!   `P = (E − M/q)/(1 − m)`, short `P = (E + M/q)/(1 + m)`. A bar whose low (long) / high
//!   (short) reaches it, or a mark at or beyond it, closes the whole position at
//!   the liquidation price with a fill marked `liquidation: true` (no slippage, taker fee
//!   charged). The remaining maintenance margin stays in the wallet.
//! - Stops and targets: a position remembers the `stop` / `target` of the order that opened it
//!   (or of a flip's opening leg). An add that carries a level replaces that level (one it
//!   leaves out stays); a reduce keeps them; a close, a flip or a liquidation removes the
//!   position and its levels with it. Only [`PaperBroker::apply_bar`] executes them, on bars
//!   opening at or after the fill that set them: the whole position closes at the level, or at
//!   the bar's open when the bar gaps beyond it. Per bar: liquidation at the open, then stop at
//!   the open, target at the open, stop inside the bar (when it lies before the liquidation
//!   price), liquidation inside the bar, target inside the bar — adverse before favourable, so
//!   a bar that reaches both the stop and the target fills the stop. A stop fills as a
//!   stop-market order (slippage against the taker); a target as a resting take-profit limit
//!   (at its price, no slippage); both pay the taker fee and carry `Fill::trigger`.
//! - Fill ids are `paper-{n}`, `n` counting from 1 in the persisted state; fills carry the
//!   snapshot id / client order id passed with the order.
//! - Money the broker books (fees, realized and unrealized PnL) is rounded to [`USD_DP`]
//!   decimals, prices to [`PRICE_DP`].

mod broker;
mod risk_state;
mod validate;

pub use broker::{
    BrokerError, OrderTag, PRICE_DP, PaperBroker, PaperBrokerConfig, PaperPosition, USD_DP,
};
pub use risk_state::RiskState;
pub use validate::{AccountView, DEFAULT_LEVERAGE, Decision, Order, OrderIntent, QTY_DP, validate};
