//! The closed-trade ledger of ADR-0017: the materializer that turns broker-authoritative
//! positions and fills into `trade_history` rows ([`types::TradeRecord`]), and the two memory
//! sections of the prompt ([`render_recent_trades`], [`render_open_positions`]).
//!
//! **Owns:** the ledger semantics below, the row ids, and the text of the two sections.
//! **Never does:** I/O of any kind, reading the clock (time comes in as data), sqlx, reqwest,
//! floats. The store persists what [`LedgerChanges`] says; live and sim call the same functions,
//! so identical inputs give identical rows and byte-identical text.
//!
//! # API
//! - [`LedgerState::new`] / [`LedgerState::rebuild`]`(scope, open_rows, applied_fill_ids)` — the
//!   open row per symbol and the set of applied broker fill ids; `rebuild` restarts from the store.
//! - [`LedgerState::apply_tick`]`(TickInput)` — fills since the last tick, bars since the last
//!   tick, the broker's positions after the tick → [`LedgerChanges`]: the rows to insert/update
//!   ([`RowWrite`]) and, for every applied fill, which row consumed which part ([`FillLink`]).
//! - [`LedgerState::apply_fills`] — fills only (no positions, no bars): rebuild from a stored
//!   fill stream.
//!
//! ```
//! use std::collections::BTreeMap;
//! use chrono::{TimeZone, Utc};
//! use memory_ledger::{LedgerScope, LedgerState, ProposalInfo, Proposals, TickInput};
//! use rust_decimal::Decimal;
//! use types::{Fill, Interval, OrderSide, Position, Side, Uuid};
//!
//! let scope = LedgerScope { deployment_id: Uuid::from_u128(1), skill_id: Uuid::from_u128(2), skill_version: 1 };
//! let mut ledger = LedgerState::new(scope);
//! let at = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
//! let snapshot = Uuid::from_u128(3);
//! let proposals = Proposals::from([(
//!     snapshot,
//!     ProposalInfo { reason: Some("breakout above prior swing high".into()), leverage: None },
//! )]);
//! let fill = Fill {
//!     id: "fill-1".into(), symbol: "BTC".into(), side: OrderSide::Buy,
//!     qty: Decimal::new(4, 3), price: Decimal::from(65_200), fee_usd: Decimal::new(12, 2),
//!     time: at, snapshot_id: Some(snapshot), client_order_id: None, liquidation: false, trigger: None,
//! };
//! let position = Position {
//!     symbol: "BTC".into(), side: Side::Long, qty: Decimal::new(4, 3),
//!     entry_price: Decimal::from(65_200), leverage: Decimal::from(3),
//!     mark_price: Decimal::from(65_210), liquidation_price: None,
//!     unrealized_pnl_usd: Decimal::ZERO, margin_usd: Decimal::ZERO,
//! };
//! let changes = ledger.apply_tick(TickInput {
//!     at,
//!     positions: &[position],
//!     fills: &[fill],
//!     bars: &BTreeMap::new(),
//!     bar_interval: Interval::H1,
//!     proposals: &proposals,
//!     regimes: &BTreeMap::new(),
//! })?;
//! assert!(changes.rows[0].inserted);
//! assert_eq!(changes.rows[0].row.entry_size_usd, Decimal::new(2608, 1)); // 0.004 × 65,200
//! let rows: Vec<_> = changes.rows.into_iter().map(|w| w.row).collect();
//! let text = memory_ledger::render_open_positions(&rows, at);
//! assert!(text.starts_with("- BTC long @65,200 held 0m MFE $0.00 MAE $0.00"));
//! # Ok::<(), memory_ledger::LedgerError>(())
//! ```
//!
//! # Ledger semantics
//! - **One row per round trip** (flat → flat) per deployment and symbol. The row id is a UUID v5
//!   in the deployment's namespace over `"{symbol}\n{opening fill id}"` ([`trade_id`]), so a
//!   rebuild gives the same ids.
//! - **Times** come from the data, never a clock: `entry_tick_at` is the opening fill's time,
//!   `exit_tick_at` the latest closing fill's; reconciliation steps use the tick time.
//! - **Fill order.** New fills of a batch are applied oldest first: a *stable* sort by `time`,
//!   so fills of the same instant keep the order the caller gave.
//! - **Open / add** — average cost. `entry_price` is the average cost of the quantity currently
//!   open: an add of `q @ p` makes it `(entry × open_qty + p × q) / (open_qty + q)`.
//!   `entry_size_usd` is Σ opening notional (qty × price of every opening fill) and `opened_qty`
//!   Σ opening quantity. The two agree (`entry_price = entry_size_usd / opened_qty`) unless an
//!   add follows a partial close; then `entry_price` stays the broker's average cost, which is
//!   what realized PnL is measured against (as exchanges do).
//! - **Partial close** — realized PnL on the closed quantity against the average entry:
//!   `sign × (price − entry_price) × qty` (sign +1 long, −1 short). The row stays open; exits
//!   never move `entry_price`. `exit_price` is the quantity-weighted average of every closing
//!   fill (`exit_size_usd / (opened_qty − open_qty)`); `exit_tick_at`, `exit_reason` and
//!   `exit_snapshot_id` follow the latest closing fill.
//! - **Full close** — `status = closed`, `open_qty = 0`, `holding_minutes` = exit − entry in
//!   minutes rounded to 2 dp (half away from zero), and `close_kind`: `liquidation` when the
//!   fill is a liquidation, `signal` when it carries the snapshot of a proposal of ours,
//!   `external` otherwise (a fill we did not cause: manual close, another client).
//! - **Flip** (a fill crosses zero) — split into a closing leg (the open quantity) and an
//!   opening leg (the rest). The fee is split pro rata by quantity: the closing leg gets
//!   `fee × close_qty / qty` rounded to [`FEE_SPLIT_DP`] = 8 dp (half to even), the opening leg
//!   the remainder, so the legs sum exactly to the fill's fee. The old row closes with
//!   `close_kind = flip` (or `liquidation` for a liquidation fill); a new row opens at the fill
//!   price with fresh MFE/MAE, named after the same fill id.
//! - **Duplicates** — a fill id already applied (or repeated within a batch) changes nothing.
//!   The same id with different content inside one batch is an error.
//! - **PnL convention** — `realized_pnl_usd` is **gross** of fees; `fees_usd` holds the fees of
//!   every fill (leg) of the row. Net = gross − fees.
//! - **MFE/MAE** — in $, with the row's current open quantity and average entry: per bar,
//!   `sign × (high − entry) × open_qty` and `sign × (low − entry) × open_qty`; MFE is the max of
//!   the favourable one and MAE the min of the adverse one, both seeded at 0 (the entry price),
//!   so MFE ≥ 0 ≥ MAE. Only bars **opened at or after the entry and closed at or before the
//!   tick** count (the entry bar's pre-entry range never leaks in). On a tick, rows open before
//!   the tick's fills see the new bars first (with their pre-fill quantity); rows opened by the
//!   tick's fills see only bars after their entry. A flip's new row starts at zero.
//! - **Reasons** — `entry_reason`/`entry_leverage`/`entry_snapshot_id` come from the proposal of
//!   the opening fill's snapshot (`exit_*` from the closing fill's); reasons are trimmed and cut
//!   to [`REASON_MAX_CHARS`] = 280 chars at a char boundary (ending with `…`). Liquidation and
//!   external fills carry no snapshot, hence no reason. `entry_regime_tag` is the regime of the
//!   symbol given with the call that opened the row.
//! - **Vanished position** (open row, broker flat, no fill of ours explains it) — the whole open
//!   quantity is closed at tick time, `broker_reconciled = true`, no fee:
//!   `liquidation` at the liquidation price when the previous tick's broker position had a
//!   liquidation price and a bar closed by this tick reached it (low ≤ liq for a long, high ≥ liq
//!   for a short); otherwise `external` at the best known price: the latest closed bar's close,
//!   else the previous tick's mark, else the entry price (PnL 0). The liquidation price and
//!   mark are remembered in memory only: right after a restart a vanished position closes as
//!   `external` at the last bar close.
//! - **Unexplained size** (the broker's position differs from the row after the fills) — never
//!   dropped, always made to match the broker and flagged `broker_reconciled = true`:
//!   no row → a row opens from the position (entry = broker entry price, at tick time, id named
//!   `broker@<tick>`, leverage from the position, no snapshot/reason); opposite side → the row
//!   closes `external` at the broker's new entry price and a row opens from the position; same
//!   side, larger → the difference is added at the mark; smaller → the difference is closed at
//!   the mark (realized against the average entry; the row stays open). Reconciliation steps
//!   produce no fill links. A later-arriving fill for an already reconciled change is applied
//!   as a normal fill (and the next tick reconciles again): fills should reach the
//!   materializer in the tick they happen.
//! - **Restart** — [`LedgerState::rebuild`] from the stored open rows and applied fill ids, then
//!   continuing, gives exactly the rows of never stopping: every quantity the math needs is a
//!   stored column (`entry_price`, `open_qty`, `opened_qty`, `exit_size_usd`, ...).
//! - **Errors** are typed ([`LedgerError`]); invalid input refuses the whole batch before
//!   anything changes. Decimal overflow (values beyond ~7.9e28) is reported, never a panic; the
//!   state may then be partially updated and should be rebuilt from the store.
//!
//! # Prompt sections
//! [`render_recent_trades`] and [`render_open_positions`] (see their docs for the line format)
//! render a section's body; the context assembly (`agent-runtime`) writes the headings.
//! Numbers are written in the styles of [`types::text`]: prices keep their own scale (six
//! significant digits, `1.07219` stays `1.07219`), money is `$12,500.00`, reasons are quoted and
//! escaped: data, never instructions.

mod error;
mod materialize;
mod render;

pub use error::LedgerError;
pub use materialize::{
    FEE_SPLIT_DP, FillLeg, FillLink, HOLDING_MINUTES_DP, LedgerChanges, LedgerScope, LedgerState,
    ProposalInfo, Proposals, REASON_MAX_CHARS, RowWrite, TickInput, bound_reason, trade_id,
};
pub use render::{
    MAX_RECENT_TRADES_K, VIEW_REASON_CHARS, render_open_positions, render_recent_trades,
};
