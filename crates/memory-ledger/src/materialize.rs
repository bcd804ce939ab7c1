//! The materializer: fills and broker positions → `trade_history` rows.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use rust_decimal::{Decimal, RoundingStrategy};
use serde::Serialize;
use types::{
    Bar, CloseKind, Fill, FillTrigger, Interval, OrderSide, Position, ProposedAction, RegimeTag,
    Side, TradeRecord, TradeStatus,
};
use uuid::Uuid;

use crate::LedgerError;

/// Longest entry/exit reason stored on a row, in Unicode scalar values (`char`s). Longer reasons
/// are cut at a char boundary and end with `…` (which counts towards the bound).
pub const REASON_MAX_CHARS: usize = 280;

/// Decimal places of the closing leg's share of a flip fill's fee; the opening leg takes the
/// remainder so the two legs sum exactly to the fill's fee.
pub const FEE_SPLIT_DP: u32 = 8;

/// Decimal places of `holding_minutes` (rounded half away from zero).
pub const HOLDING_MINUTES_DP: u32 = 2;

/// Who the rows belong to. New rows carry this deployment and skill version; open rows keep the
/// version they opened under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct LedgerScope {
    /// The deployment whose trades these are.
    pub deployment_id: Uuid,
    /// The skill the deployment runs.
    pub skill_id: Uuid,
    /// The skill version new rows are opened under.
    pub skill_version: i32,
}

/// What the materializer needs from the proposal of a decision snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProposalInfo {
    /// `propose_order.reason`; truncated to [`REASON_MAX_CHARS`] when stored.
    pub reason: Option<String>,
    /// The leverage the proposal asked for (stored as `entry_leverage` on the rows it opens).
    pub leverage: Option<Decimal>,
}

impl From<&ProposedAction> for ProposalInfo {
    fn from(p: &ProposedAction) -> Self {
        ProposalInfo {
            reason: Some(p.reason.clone()),
            leverage: p.leverage,
        }
    }
}

/// Proposal info by decision snapshot id (the `snapshot_id` of a fill).
pub type Proposals = BTreeMap<Uuid, ProposalInfo>;

/// Everything one tick hands to [`LedgerState::apply_tick`].
#[derive(Debug, Clone, Copy)]
pub struct TickInput<'a> {
    /// The tick time. Bars count only when closed at or before it.
    pub at: DateTime<Utc>,
    /// Broker-authoritative open positions after the tick (flat symbols absent).
    pub positions: &'a [Position],
    /// Fills since the last tick (already-applied ones are skipped).
    pub fills: &'a [Fill],
    /// Bars per symbol since the last tick (for MFE/MAE and the best known price).
    pub bars: &'a BTreeMap<String, Vec<Bar>>,
    /// The interval of `bars` (a bar is closed at `bar.time + interval`).
    pub bar_interval: Interval,
    /// Proposal info by snapshot id.
    pub proposals: &'a Proposals,
    /// Regime tag per symbol at tick time (stored as `entry_regime_tag` on new rows).
    pub regimes: &'a BTreeMap<String, RegimeTag>,
}

/// One row written by a call: insert it when `inserted`, else update it by id. Each touched row
/// appears once, in its final state for the call, in first-touch order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowWrite {
    /// The row in its final state for the call.
    pub row: TradeRecord,
    /// The row did not exist before this call.
    pub inserted: bool,
}

/// Which part of a fill a row consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FillLeg {
    /// The fill opened or added to the row.
    Open,
    /// The fill reduced or closed the row.
    Close,
}

/// Fill → trade link: which row consumed how much of which fill. A flip fill has two links
/// (close leg on the old row, open leg on the new one) whose quantities and fees sum to the
/// fill's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FillLink {
    /// The broker's fill id.
    pub fill_id: String,
    /// The `trade_history` row that consumed this part of the fill.
    pub trade_id: Uuid,
    /// Whether this part opened/added to or reduced/closed the row.
    pub leg: FillLeg,
    /// The quantity consumed, in base units (unsigned, > 0).
    pub qty: Decimal,
    /// The share of the fill's fee charged to this leg, in USD (pro rata by quantity).
    pub fee_usd: Decimal,
}

/// What one call changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LedgerChanges {
    /// Rows to insert or update, each once, in first-touch order.
    pub rows: Vec<RowWrite>,
    /// The fill → row links created by this call, in application order.
    pub fill_links: Vec<FillLink>,
}

impl LedgerChanges {
    /// Nothing was written.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.fill_links.is_empty()
    }
}

/// The last broker view of a symbol (from the previous tick's positions). In memory only: after
/// a restart it is unknown until the next tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BrokerSeen {
    mark: Decimal,
    liquidation_price: Option<Decimal>,
}

/// The materializer's state for one deployment: the open row per symbol and the ids of every
/// fill already applied.
#[derive(Debug, Clone)]
pub struct LedgerState {
    scope: LedgerScope,
    open: BTreeMap<String, TradeRecord>,
    applied: HashSet<String>,
    broker: BTreeMap<String, BrokerSeen>,
}

/// One execution as the core applies it: a real fill or a reconciliation step.
#[derive(Debug, Clone, Copy)]
struct Exec<'a> {
    /// The broker fill id (none for reconciliation).
    fill_id: Option<&'a str>,
    /// Key that names a row opened by this execution (fill id, or `broker@<tick>`).
    open_key: &'a str,
    side: OrderSide,
    qty: Decimal,
    price: Decimal,
    fee: Decimal,
    time: DateTime<Utc>,
    snapshot_id: Option<Uuid>,
    liquidation: bool,
    /// The resting stop or target that made the fill, if one did.
    trigger: Option<FillTrigger>,
    /// Comes from the broker's position rather than a fill.
    reconciled: bool,
    /// Close kind to use when this execution closes a row (overrides the fill-derived one).
    close_kind: Option<CloseKind>,
    /// Leverage to record on a row this execution opens when no proposal gives one.
    fallback_leverage: Option<Decimal>,
}

/// Accumulates the rows touched during one call. Rows are not copied per touch: open rows are
/// read from the state at the end, closed rows are moved here when they leave the state.
#[derive(Default)]
struct Touched {
    /// First-touch order: (row id, symbol).
    order: Vec<(Uuid, String)>,
    seen: HashSet<Uuid>,
    inserted: HashSet<Uuid>,
    closed: HashMap<Uuid, TradeRecord>,
    links: Vec<FillLink>,
}

impl Touched {
    fn touch(&mut self, row: &TradeRecord, inserted: bool) {
        if self.seen.insert(row.id) {
            self.order.push((row.id, row.symbol.clone()));
        }
        if inserted {
            self.inserted.insert(row.id);
        }
    }

    fn close(&mut self, row: TradeRecord) {
        self.touch(&row, false);
        self.closed.insert(row.id, row);
    }

    fn finish(mut self, open: &BTreeMap<String, TradeRecord>) -> LedgerChanges {
        let mut rows = Vec::with_capacity(self.order.len());
        for (id, symbol) in &self.order {
            let row = match self.closed.remove(id) {
                Some(row) => row,
                None => match open.get(symbol) {
                    Some(row) if row.id == *id => row.clone(),
                    // Unreachable: a touched row is either still open or was closed.
                    _ => continue,
                },
            };
            rows.push(RowWrite {
                row,
                inserted: self.inserted.contains(id),
            });
        }
        LedgerChanges {
            rows,
            fill_links: self.links,
        }
    }
}

fn overflow(symbol: &str, what: &'static str) -> impl FnOnce() -> LedgerError {
    let symbol = symbol.to_owned();
    move || LedgerError::Overflow { symbol, what }
}

/// Cuts `reason` to at most [`REASON_MAX_CHARS`] chars at a char boundary; a cut reason ends
/// with `…`. Leading/trailing whitespace is trimmed; an empty reason becomes `None`.
#[must_use]
pub fn bound_reason(reason: &str) -> Option<String> {
    bounded_reason(reason).map(Cow::into_owned)
}

/// [`bound_reason`], borrowing `reason` when it needs no cut.
pub(crate) fn bounded_reason(reason: &str) -> Option<Cow<'_, str>> {
    cut_reason(reason, REASON_MAX_CHARS)
}

/// `reason` trimmed and cut to at most `max` chars at a char boundary, a cut one ending with
/// `…` (`max − 1` chars and the ellipsis); `None` when empty. Borrows when no cut is needed:
/// the ledger's bound ([`REASON_MAX_CHARS`]) and the memory rows' view
/// ([`crate::VIEW_REASON_CHARS`]) are this one rule at two lengths.
pub(crate) fn cut_reason(reason: &str, max: usize) -> Option<Cow<'_, str>> {
    let trimmed = reason.trim();
    if trimmed.is_empty() {
        return None;
    }
    // At most one char per byte: short text needs no count.
    if trimmed.len() <= max {
        return Some(Cow::Borrowed(trimmed));
    }
    // Where char `max - 1` starts, and whether there is a char `max` at all. Text whose first
    // `max` bytes are ASCII has them as its first `max` chars, and more after them.
    let (cut, longer) = if trimmed.as_bytes()[..max].is_ascii() {
        (max.saturating_sub(1), true)
    } else {
        let mut starts = trimmed.char_indices().map(|(i, _)| i);
        let cut = starts.nth(max.saturating_sub(1)).unwrap_or(trimmed.len());
        (cut, max == 0 || starts.next().is_some())
    };
    if !longer {
        return Some(Cow::Borrowed(trimmed));
    }
    let mut out = String::with_capacity(cut + '…'.len_utf8());
    out.push_str(&trimmed[..cut]);
    out.push('…');
    Some(Cow::Owned(out))
}

/// Deterministic row id: UUID v5 in the deployment's namespace over `symbol` and the key of the
/// execution that opened the row (the opening fill's broker id, or `broker@<tick RFC 3339>` for
/// a row opened from the broker's position).
#[must_use]
pub fn trade_id(deployment_id: Uuid, symbol: &str, open_key: &str) -> Uuid {
    let name = format!("{symbol}\n{open_key}");
    Uuid::new_v5(&deployment_id, name.as_bytes())
}

fn holding_minutes(from: DateTime<Utc>, to: DateTime<Utc>) -> Decimal {
    let ms = Decimal::from((to - from).num_milliseconds());
    (ms / Decimal::from(60_000))
        .round_dp_with_strategy(HOLDING_MINUTES_DP, RoundingStrategy::MidpointAwayFromZero)
}

fn validate_fill(index: usize, f: &Fill) -> Result<(), LedgerError> {
    if f.id.is_empty() {
        return Err(LedgerError::EmptyFillId {
            index,
            symbol: f.symbol.clone(),
        });
    }
    if f.symbol.is_empty() {
        return Err(LedgerError::EmptyFillSymbol {
            fill_id: f.id.clone(),
        });
    }
    if f.qty <= Decimal::ZERO {
        return Err(LedgerError::NonPositiveFillQty {
            fill_id: f.id.clone(),
            symbol: f.symbol.clone(),
            qty: f.qty,
        });
    }
    if f.price <= Decimal::ZERO {
        return Err(LedgerError::NonPositiveFillPrice {
            fill_id: f.id.clone(),
            symbol: f.symbol.clone(),
            price: f.price,
        });
    }
    Ok(())
}

fn validate_positions(positions: &[Position]) -> Result<(), LedgerError> {
    // A few positions (the usual case) are compared pairwise: no set to build.
    const FEW: usize = 16;
    let mut seen = HashSet::new();
    for (i, p) in positions.iter().enumerate() {
        if p.qty <= Decimal::ZERO {
            return Err(LedgerError::NonPositivePositionQty {
                symbol: p.symbol.clone(),
                qty: p.qty,
            });
        }
        for (field, value) in [("entry_price", p.entry_price), ("mark_price", p.mark_price)] {
            if value <= Decimal::ZERO {
                return Err(LedgerError::NonPositivePositionPrice {
                    symbol: p.symbol.clone(),
                    field,
                    value,
                });
            }
        }
        let duplicate = if positions.len() <= FEW {
            positions[..i].iter().any(|q| q.symbol == p.symbol)
        } else {
            !seen.insert(p.symbol.as_str())
        };
        if duplicate {
            return Err(LedgerError::DuplicatePosition {
                symbol: p.symbol.clone(),
            });
        }
    }
    Ok(())
}

/// Bars of `bars` closed at or before `at` and opened at or after `since`.
fn closed_bars_since(
    bars: &[Bar],
    interval: Interval,
    since: DateTime<Utc>,
    at: DateTime<Utc>,
) -> impl Iterator<Item = &Bar> {
    bars.iter()
        .filter(move |b| b.time >= since && b.close_time(interval) <= at)
}

/// The key of rows a reconciliation opens at `at` (`broker@<RFC 3339>`), formatted once.
fn broker_key(cell: &OnceCell<String>, at: DateTime<Utc>) -> &str {
    cell.get_or_init(|| format!("broker@{}", at.to_rfc3339()))
}

/// MFE/MAE update of one open row from one bar, with the row's current entry and open qty.
fn excursions(row: &mut TradeRecord, bar: &Bar) -> Result<(), LedgerError> {
    let sign = row.side.sign();
    let qty = row.open_qty;
    let ov = || overflow(&row.symbol, "computing MFE/MAE");
    let hi = sign
        .checked_mul(bar.high - row.entry_price)
        .and_then(|d| d.checked_mul(qty))
        .ok_or_else(ov())?;
    let lo = sign
        .checked_mul(bar.low - row.entry_price)
        .and_then(|d| d.checked_mul(qty))
        .ok_or_else(ov())?;
    let (fav, adv) = if hi >= lo { (hi, lo) } else { (lo, hi) };
    if fav > row.mfe_usd {
        row.mfe_usd = fav;
    }
    if adv < row.mae_usd {
        row.mae_usd = adv;
    }
    Ok(())
}

impl LedgerState {
    /// A fresh state: no open rows, no applied fills.
    #[must_use]
    pub fn new(scope: LedgerScope) -> Self {
        LedgerState {
            scope,
            open: BTreeMap::new(),
            applied: HashSet::new(),
            broker: BTreeMap::new(),
        }
    }

    /// The state after a restart: the deployment's open rows and the ids of every fill already
    /// applied, both as stored. Continuing from here gives the same rows as never stopping
    /// (except the liquidation-price memory, see the crate docs).
    ///
    /// # Errors
    /// A row of another deployment ([`LedgerError::WrongDeployment`]), a row that is not open
    /// ([`LedgerError::RowNotOpen`]), or two open rows on one symbol
    /// ([`LedgerError::DuplicateOpenRow`]).
    pub fn rebuild(
        scope: LedgerScope,
        open_rows: impl IntoIterator<Item = TradeRecord>,
        applied_fill_ids: impl IntoIterator<Item = String>,
    ) -> Result<Self, LedgerError> {
        let mut state = LedgerState::new(scope);
        for row in open_rows {
            if row.deployment_id != scope.deployment_id {
                return Err(LedgerError::WrongDeployment {
                    trade_id: row.id,
                    expected: scope.deployment_id,
                    found: row.deployment_id,
                });
            }
            if row.status != TradeStatus::Open || row.open_qty <= Decimal::ZERO {
                return Err(LedgerError::RowNotOpen {
                    trade_id: row.id,
                    symbol: row.symbol,
                });
            }
            if let Some(first) = state.open.get(&row.symbol) {
                return Err(LedgerError::DuplicateOpenRow {
                    symbol: row.symbol.clone(),
                    first: first.id,
                    second: row.id,
                });
            }
            state.open.insert(row.symbol.clone(), row);
        }
        state.applied.extend(applied_fill_ids);
        Ok(state)
    }

    /// Who new rows belong to.
    #[must_use]
    pub fn scope(&self) -> LedgerScope {
        self.scope
    }

    /// Switch new rows to another skill version (open rows keep theirs).
    pub fn set_skill_version(&mut self, skill_id: Uuid, skill_version: i32) {
        self.scope.skill_id = skill_id;
        self.scope.skill_version = skill_version;
    }

    /// Open rows, by symbol.
    pub fn open_rows(&self) -> impl Iterator<Item = &TradeRecord> {
        self.open.values()
    }

    /// The open row on `symbol`, if any.
    #[must_use]
    pub fn open_row(&self, symbol: &str) -> Option<&TradeRecord> {
        self.open.get(symbol)
    }

    /// Whether the fill with this broker id was already applied.
    #[must_use]
    pub fn is_applied(&self, fill_id: &str) -> bool {
        self.applied.contains(fill_id)
    }

    /// Every applied fill id, sorted (for persistence and comparisons).
    #[must_use]
    pub fn applied_fill_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.applied.iter().cloned().collect();
        ids.sort_unstable();
        ids
    }

    /// Applies fills without broker positions or bars (e.g. rebuilding from a stored fill
    /// stream). Fills already applied are skipped; the rest are applied oldest first (a stable
    /// sort by `time`, so fills of one instant keep the caller's order).
    ///
    /// # Errors
    /// An invalid fill (empty id or symbol, qty or price ≤ 0), one id twice in the batch with
    /// different content — nothing is applied then — or [`LedgerError::Overflow`].
    pub fn apply_fills(
        &mut self,
        fills: &[Fill],
        proposals: &Proposals,
        regimes: &BTreeMap<String, RegimeTag>,
    ) -> Result<LedgerChanges, LedgerError> {
        let fresh = self.fresh_fills(fills)?;
        let mut touched = Touched::default();
        for f in fresh {
            self.apply_fill(f, proposals, regimes, &mut touched)?;
        }
        Ok(touched.finish(&self.open))
    }

    /// One tick: MFE/MAE from the new bars, the new fills, then reconciliation against the
    /// broker's positions (see the crate docs for every rule).
    ///
    /// # Errors
    /// Invalid fills or positions (nothing is applied then), or [`LedgerError::Overflow`].
    pub fn apply_tick(&mut self, input: TickInput<'_>) -> Result<LedgerChanges, LedgerError> {
        validate_positions(input.positions)?;
        let fresh = self.fresh_fills(input.fills)?;
        let mut touched = Touched::default();

        // 1. Excursions of the rows open before this tick's fills.
        self.bars_pass(false, &input, &mut touched)?;

        // 2. Fills.
        for f in fresh {
            self.apply_fill(f, input.proposals, input.regimes, &mut touched)?;
        }

        // 3. Excursions of the rows opened by this tick's fills (only bars after their entry).
        self.bars_pass(true, &input, &mut touched)?;

        // 4. Reconcile against the broker.
        self.reconcile(&input, &mut touched)?;

        // 5. Remember mark and liquidation price for the next tick (in place when the broker
        // holds the same symbols as last tick; symbols are unique, see `validate_positions`).
        let seen = |p: &Position| BrokerSeen {
            mark: p.mark_price,
            liquidation_price: p.liquidation_price,
        };
        let same_symbols = self.broker.len() == input.positions.len()
            && input
                .positions
                .iter()
                .all(|p| self.broker.contains_key(&p.symbol));
        if same_symbols {
            for p in input.positions {
                if let Some(b) = self.broker.get_mut(&p.symbol) {
                    *b = seen(p);
                }
            }
        } else {
            self.broker = input
                .positions
                .iter()
                .map(|p| (p.symbol.clone(), seen(p)))
                .collect();
        }
        Ok(touched.finish(&self.open))
    }

    /// Validates a batch and returns the fills not applied yet, deduplicated, oldest first.
    fn fresh_fills<'f>(&self, fills: &'f [Fill]) -> Result<Vec<&'f Fill>, LedgerError> {
        let mut seen: HashMap<&str, &Fill> = HashMap::new();
        let mut fresh = Vec::new();
        for (i, f) in fills.iter().enumerate() {
            validate_fill(i, f)?;
            if let Some(prev) = seen.get(f.id.as_str()) {
                if *prev != f {
                    return Err(LedgerError::ConflictingDuplicateFill {
                        fill_id: f.id.clone(),
                    });
                }
                continue;
            }
            seen.insert(f.id.as_str(), f);
            if !self.applied.contains(&f.id) {
                fresh.push(f);
            }
        }
        fresh.sort_by_key(|f| f.time);
        Ok(fresh)
    }

    /// MFE/MAE of the open rows (by symbol) from the tick's bars; `only_inserted`: just the rows
    /// this call opened.
    fn bars_pass(
        &mut self,
        only_inserted: bool,
        input: &TickInput<'_>,
        touched: &mut Touched,
    ) -> Result<(), LedgerError> {
        for (symbol, row) in &mut self.open {
            if only_inserted && !touched.inserted.contains(&row.id) {
                continue;
            }
            let Some(bars) = input.bars.get(symbol) else {
                continue;
            };
            let (mfe, mae) = (row.mfe_usd, row.mae_usd);
            for bar in closed_bars_since(bars, input.bar_interval, row.entry_tick_at, input.at) {
                excursions(row, bar)?;
            }
            if row.mfe_usd != mfe || row.mae_usd != mae {
                touched.touch(row, false);
            }
        }
        Ok(())
    }

    fn apply_fill(
        &mut self,
        f: &Fill,
        proposals: &Proposals,
        regimes: &BTreeMap<String, RegimeTag>,
        touched: &mut Touched,
    ) -> Result<(), LedgerError> {
        let exec = Exec {
            fill_id: Some(&f.id),
            open_key: &f.id,
            side: f.side,
            qty: f.qty,
            price: f.price,
            fee: f.fee_usd,
            time: f.time,
            snapshot_id: f.snapshot_id,
            liquidation: f.liquidation,
            trigger: f.trigger,
            reconciled: false,
            close_kind: None,
            fallback_leverage: None,
        };
        self.execute(&f.symbol, exec, proposals, regimes, touched)?;
        self.applied.insert(f.id.clone());
        Ok(())
    }

    /// The core: applies one execution to the symbol's open row (open / add / reduce / close /
    /// flip).
    fn execute(
        &mut self,
        symbol: &str,
        ex: Exec<'_>,
        proposals: &Proposals,
        regimes: &BTreeMap<String, RegimeTag>,
        touched: &mut Touched,
    ) -> Result<(), LedgerError> {
        let Some(row) = self.open.get_mut(symbol) else {
            return self.open_new(symbol, ex, ex.qty, ex.fee, proposals, regimes, touched);
        };
        if ex.side == row.side.opening_order() {
            add_to(row, &ex, touched)?;
            return Ok(());
        }
        if ex.qty <= row.open_qty {
            let closes = ex.qty == row.open_qty;
            reduce(row, &ex, ex.qty, ex.fee, proposals, touched)?;
            if closes {
                let kind = ex
                    .close_kind
                    .unwrap_or_else(|| fill_close_kind(&ex, CloseKind::External));
                finish_close(row, kind);
                if let Some(closed) = self.open.remove(symbol) {
                    touched.close(closed);
                }
            }
            return Ok(());
        }
        // Flip: the fill crosses zero. Closing leg on the old row, opening leg on a new one.
        let close_qty = row.open_qty;
        let open_qty = ex.qty - close_qty;
        let close_fee = ex
            .fee
            .checked_mul(close_qty)
            .and_then(|x| x.checked_div(ex.qty))
            .ok_or_else(overflow(symbol, "splitting a flip fee"))?
            .round_dp_with_strategy(FEE_SPLIT_DP, RoundingStrategy::MidpointNearestEven);
        let open_fee = ex.fee - close_fee;
        reduce(row, &ex, close_qty, close_fee, proposals, touched)?;
        let kind = ex
            .close_kind
            .unwrap_or_else(|| fill_close_kind(&ex, CloseKind::Flip));
        finish_close(row, kind);
        if let Some(closed) = self.open.remove(symbol) {
            touched.close(closed);
        }
        self.open_new(symbol, ex, open_qty, open_fee, proposals, regimes, touched)
    }

    #[allow(clippy::too_many_arguments)]
    fn open_new(
        &mut self,
        symbol: &str,
        ex: Exec<'_>,
        qty: Decimal,
        fee: Decimal,
        proposals: &Proposals,
        regimes: &BTreeMap<String, RegimeTag>,
        touched: &mut Touched,
    ) -> Result<(), LedgerError> {
        let side = match ex.side {
            OrderSide::Buy => Side::Long,
            OrderSide::Sell => Side::Short,
        };
        let proposal = ex.snapshot_id.and_then(|s| proposals.get(&s));
        let id = trade_id(self.scope.deployment_id, symbol, ex.open_key);
        let notional = qty
            .checked_mul(ex.price)
            .ok_or_else(overflow(symbol, "opening a trade"))?;
        let row = TradeRecord {
            id,
            deployment_id: self.scope.deployment_id,
            skill_id: self.scope.skill_id,
            skill_version: self.scope.skill_version,
            symbol: symbol.to_owned(),
            side,
            status: TradeStatus::Open,
            entry_tick_at: ex.time,
            entry_price: ex.price,
            entry_size_usd: notional,
            entry_leverage: proposal.and_then(|p| p.leverage).or(ex.fallback_leverage),
            entry_reason: proposal
                .and_then(|p| p.reason.as_deref())
                .and_then(bound_reason),
            entry_snapshot_id: ex.snapshot_id,
            entry_regime_tag: regimes.get(symbol).copied(),
            opened_qty: qty,
            open_qty: qty,
            exit_tick_at: None,
            exit_price: None,
            exit_size_usd: Decimal::ZERO,
            exit_reason: None,
            exit_snapshot_id: None,
            close_kind: None,
            holding_minutes: None,
            realized_pnl_usd: Decimal::ZERO,
            fees_usd: fee,
            mfe_usd: Decimal::ZERO,
            mae_usd: Decimal::ZERO,
            broker_reconciled: ex.reconciled,
        };
        if let Some(fill_id) = ex.fill_id {
            touched.links.push(FillLink {
                fill_id: fill_id.to_owned(),
                trade_id: id,
                leg: FillLeg::Open,
                qty,
                fee_usd: fee,
            });
        }
        touched.touch(&row, true);
        self.open.insert(symbol.to_owned(), row);
        Ok(())
    }

    /// Reconciles the open rows against the broker's positions after the fills.
    fn reconcile(
        &mut self,
        input: &TickInput<'_>,
        touched: &mut Touched,
    ) -> Result<(), LedgerError> {
        // By symbol (symbols are unique, see `validate_positions`).
        let mut positions: Vec<&Position> = input.positions.iter().collect();
        positions.sort_unstable_by(|a, b| a.symbol.cmp(&b.symbol));
        let has_position = |symbol: &str| {
            positions
                .binary_search_by(|p| p.symbol.as_str().cmp(symbol))
                .is_ok()
        };
        // Formatted only when a reconciliation step needs it.
        let key = OnceCell::new();
        let no_proposals = Proposals::new();

        // Rows the broker no longer has: vanished without a fill of ours.
        let vanished: Vec<String> = self
            .open
            .keys()
            .filter(|s| !has_position(s))
            .cloned()
            .collect();
        for symbol in vanished {
            let Some(row) = self.open.get(&symbol) else {
                continue;
            };
            let bars: &[Bar] = input.bars.get(&symbol).map_or(&[], Vec::as_slice);
            let closed: Vec<&Bar> = bars
                .iter()
                .filter(|b| b.close_time(input.bar_interval) <= input.at)
                .collect();
            let liq = self
                .broker
                .get(&symbol)
                .and_then(|b| b.liquidation_price)
                .filter(|liq| *liq > Decimal::ZERO)
                .filter(|liq| {
                    closed.iter().any(|b| match row.side {
                        Side::Long => b.low <= *liq,
                        Side::Short => b.high >= *liq,
                    })
                });
            let (price, kind) = match liq {
                Some(liq) => (liq, CloseKind::Liquidation),
                None => {
                    let last_close = closed.iter().max_by_key(|b| b.time).map(|b| b.close);
                    let mark = self.broker.get(&symbol).map(|b| b.mark);
                    (
                        last_close.or(mark).unwrap_or(row.entry_price),
                        CloseKind::External,
                    )
                }
            };
            let ex = Exec {
                fill_id: None,
                open_key: broker_key(&key, input.at),
                side: row.side.opposite().opening_order(),
                qty: row.open_qty,
                price,
                fee: Decimal::ZERO,
                time: input.at,
                snapshot_id: None,
                liquidation: kind == CloseKind::Liquidation,
                trigger: None,
                reconciled: true,
                close_kind: Some(kind),
                fallback_leverage: None,
            };
            self.execute(&symbol, ex, &no_proposals, input.regimes, touched)?;
        }

        // Positions the fills do not explain.
        for pos in positions {
            let symbol = pos.symbol.as_str();
            let row = self.open.get(symbol);
            if row.is_some_and(|row| row.side == pos.side && row.open_qty == pos.qty) {
                continue;
            }
            let opening = Exec {
                fill_id: None,
                open_key: broker_key(&key, input.at),
                side: pos.side.opening_order(),
                qty: pos.qty,
                price: pos.entry_price,
                fee: Decimal::ZERO,
                time: input.at,
                snapshot_id: None,
                liquidation: false,
                trigger: None,
                reconciled: true,
                close_kind: None,
                fallback_leverage: Some(pos.leverage),
            };
            match row {
                None => {
                    self.execute(symbol, opening, &no_proposals, input.regimes, touched)?;
                }
                Some(row) if row.side != pos.side => {
                    // The broker flipped the side without a fill we saw: close at the price the
                    // new side was entered at, then open from the broker's position.
                    let close = Exec {
                        side: row.side.opposite().opening_order(),
                        qty: row.open_qty,
                        price: pos.entry_price,
                        close_kind: Some(CloseKind::External),
                        ..opening
                    };
                    self.execute(symbol, close, &no_proposals, input.regimes, touched)?;
                    self.execute(symbol, opening, &no_proposals, input.regimes, touched)?;
                }
                Some(row) if row.open_qty != pos.qty => {
                    // Same side, different size: add or reduce the difference at the mark.
                    let (side, qty) = if pos.qty > row.open_qty {
                        (pos.side.opening_order(), pos.qty - row.open_qty)
                    } else {
                        (pos.side.opposite().opening_order(), row.open_qty - pos.qty)
                    };
                    let adjust = Exec {
                        side,
                        qty,
                        price: pos.mark_price,
                        ..opening
                    };
                    self.execute(symbol, adjust, &no_proposals, input.regimes, touched)?;
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

fn add_to(row: &mut TradeRecord, ex: &Exec<'_>, touched: &mut Touched) -> Result<(), LedgerError> {
    let ov = || overflow(&row.symbol, "adding to a trade");
    let notional = ex.qty.checked_mul(ex.price).ok_or_else(ov())?;
    let cost = row
        .entry_price
        .checked_mul(row.open_qty)
        .and_then(|c| c.checked_add(notional))
        .ok_or_else(ov())?;
    let new_open = row.open_qty.checked_add(ex.qty).ok_or_else(ov())?;
    row.entry_price = cost.checked_div(new_open).ok_or_else(ov())?;
    row.open_qty = new_open;
    row.opened_qty = row.opened_qty.checked_add(ex.qty).ok_or_else(ov())?;
    row.entry_size_usd = row.entry_size_usd.checked_add(notional).ok_or_else(ov())?;
    row.fees_usd = row.fees_usd.checked_add(ex.fee).ok_or_else(ov())?;
    row.broker_reconciled |= ex.reconciled;
    if let Some(fill_id) = ex.fill_id {
        touched.links.push(FillLink {
            fill_id: fill_id.to_owned(),
            trade_id: row.id,
            leg: FillLeg::Open,
            qty: ex.qty,
            fee_usd: ex.fee,
        });
    }
    touched.touch(row, false);
    Ok(())
}

/// Closes `qty` (≤ open qty) of the row at the execution's price; the row stays open.
fn reduce(
    row: &mut TradeRecord,
    ex: &Exec<'_>,
    qty: Decimal,
    fee: Decimal,
    proposals: &Proposals,
    touched: &mut Touched,
) -> Result<(), LedgerError> {
    let ov = || overflow(&row.symbol, "closing a trade");
    let pnl = row
        .side
        .sign()
        .checked_mul(ex.price - row.entry_price)
        .and_then(|d| d.checked_mul(qty))
        .ok_or_else(ov())?;
    row.realized_pnl_usd = row.realized_pnl_usd.checked_add(pnl).ok_or_else(ov())?;
    row.fees_usd = row.fees_usd.checked_add(fee).ok_or_else(ov())?;
    row.open_qty -= qty;
    let notional = qty.checked_mul(ex.price).ok_or_else(ov())?;
    row.exit_size_usd = row.exit_size_usd.checked_add(notional).ok_or_else(ov())?;
    let closed_qty = row.opened_qty - row.open_qty;
    row.exit_price = Some(row.exit_size_usd.checked_div(closed_qty).ok_or_else(ov())?);
    row.exit_tick_at = Some(ex.time);
    row.exit_snapshot_id = ex.snapshot_id;
    row.exit_reason = ex
        .snapshot_id
        .and_then(|s| proposals.get(&s))
        .and_then(|p| p.reason.as_deref())
        .and_then(bound_reason);
    row.broker_reconciled |= ex.reconciled;
    if let Some(fill_id) = ex.fill_id {
        touched.links.push(FillLink {
            fill_id: fill_id.to_owned(),
            trade_id: row.id,
            leg: FillLeg::Close,
            qty,
            fee_usd: fee,
        });
    }
    touched.touch(row, false);
    Ok(())
}

/// Why a fill closed a row: a liquidation, then the resting level that made it (stop / target),
/// then a proposal's fill (signal; `otherwise` for the closing leg of a flip), else `otherwise`.
fn fill_close_kind(ex: &Exec<'_>, otherwise: CloseKind) -> CloseKind {
    match (ex.liquidation, ex.trigger) {
        (true, _) => CloseKind::Liquidation,
        (false, Some(FillTrigger::Stop)) => CloseKind::Stop,
        (false, Some(FillTrigger::Target)) => CloseKind::Target,
        (false, None) if otherwise == CloseKind::External && ex.snapshot_id.is_some() => {
            CloseKind::Signal
        }
        (false, None) => otherwise,
    }
}

fn finish_close(row: &mut TradeRecord, kind: CloseKind) {
    row.status = TradeStatus::Closed;
    row.open_qty = Decimal::ZERO;
    row.close_kind = Some(kind);
    if let Some(exit) = row.exit_tick_at {
        row.holding_minutes = Some(holding_minutes(row.entry_tick_at, exit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The cut is the one counted char by char: the first `max - 1` chars and `…` when
        /// the trimmed reason has more than `max`, the trimmed reason otherwise.
        #[test]
        fn a_reason_is_cut_as_counted(reason in "[ a-zé€😀\n]{0,40}", max in 0_usize..30) {
            let trimmed = reason.trim();
            let want = (!trimmed.is_empty()).then(|| {
                if trimmed.chars().count() <= max {
                    trimmed.to_owned()
                } else {
                    let mut out: String = trimmed.chars().take(max.saturating_sub(1)).collect();
                    out.push('…');
                    out
                }
            });
            prop_assert_eq!(cut_reason(&reason, max).map(Cow::into_owned), want);
        }
    }
}
