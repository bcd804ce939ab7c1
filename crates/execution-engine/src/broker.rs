//! The paper broker: a simulated perpetual-futures account that fills the engine's orders.
//!
//! See the crate docs for the accounting model (isolated margin, average cost, flips,
//! liquidation). All state is plain data and serializable so a runner can persist it after every
//! tick and restore it after a restart.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};
use types::{Bar, Fill, FillTrigger, OrderSide, PortfolioSnapshot, Position, Side, Uuid};

use crate::Order;

/// Decimal places kept on fill prices, average entry prices and liquidation prices.
pub const PRICE_DP: u32 = 12;
/// Decimal places kept on money amounts the broker books (fees, realized PnL, unrealized PnL,
/// reported margin and available margin).
pub const USD_DP: u32 = 8;

/// Largest price the broker accepts.
const MAX_PRICE: Decimal = Decimal::from_parts(0xD4A5_1000, 0xE8, 0, false, 0); // 1e12
/// Largest position or order quantity the broker accepts.
const MAX_QTY: Decimal = Decimal::from_parts(0xA4C6_8000, 0x38D7E, 0, false, 0); // 1e15
/// Largest fill notional the broker accepts.
const MAX_NOTIONAL: Decimal = Decimal::from_parts(0xA764_0000, 0x0DE0_B6B3, 0, false, 0); // 1e18

const BPS: Decimal = Decimal::from_parts(10_000, 0, 0, false, 0);

/// Rounds to [`USD_DP`] and drops trailing zeros, so the amounts serialize without scale noise
/// (`3.003`, not `3.0030`).
fn round_usd(v: Decimal) -> Decimal {
    v.round_dp_with_strategy(USD_DP, RoundingStrategy::MidpointNearestEven)
        .normalize()
}

fn round_price(v: Decimal) -> Decimal {
    v.round_dp_with_strategy(PRICE_DP, RoundingStrategy::MidpointNearestEven)
        .normalize()
}

/// The broker's refusal of an order, a price update or a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrokerError {
    /// A [`PaperBrokerConfig`] field is out of range.
    #[error("invalid paper broker config: {field} {reason}")]
    InvalidConfig {
        /// The config field, e.g. `taker_fee_bps`.
        field: &'static str,
        /// What is wrong with it, with the value given.
        reason: String,
    },
    /// A price, quantity, notional or margin is zero or negative.
    #[error("{what} must be positive, got {value}")]
    NotPositive {
        /// Which value: `price`, `qty`, `fill notional`, `margin`, `mark price`, ...
        what: &'static str,
        /// The value given.
        value: Decimal,
    },
    /// A price, quantity, notional or margin is above the broker's sanity limit (prices 1e12,
    /// quantities 1e15, notionals and margins 1e18).
    #[error("{what} {value} is above the broker's limit {max}")]
    OutOfRange {
        /// Which value: `price`, `qty`, `fill notional`, `margin`, `mark price`, ...
        what: &'static str,
        /// The value given.
        value: Decimal,
        /// The limit it exceeds.
        max: Decimal,
    },
    /// A reduce-only order on a flat symbol.
    #[error("reduce-only order on {symbol}: there is no position to reduce")]
    NothingToReduce {
        /// The order's symbol.
        symbol: String,
    },
    /// A reduce-only order on the same side as the open position.
    #[error("reduce-only order on {symbol} would add to the {position_side} position")]
    ReduceOnlyWouldIncrease {
        /// The order's symbol.
        symbol: String,
        /// The side of the open position.
        position_side: Side,
    },
    /// The order's leverage is below 1 or at/above `1 / maintenance_margin_rate` (a position
    /// that would be liquidated at once).
    #[error(
        "leverage {leverage} on {symbol} must be at least 1 and below {max} (1 / maintenance margin rate)"
    )]
    InvalidLeverage {
        /// The order's symbol.
        symbol: String,
        /// The leverage asked for.
        leverage: Decimal,
        /// The exclusive upper bound, `1 / maintenance_margin_rate`.
        max: Decimal,
    },
    /// The order's leverage is above the highest the exchange allows on the asset
    /// ([`PaperBrokerConfig::exchange_max_leverage`]).
    #[error("leverage {leverage} on {symbol} is above {max}, the exchange's maximum for the asset")]
    AboveExchangeMaxLeverage {
        /// The order's symbol.
        symbol: String,
        /// The leverage asked for.
        leverage: Decimal,
        /// The exchange's maximum (inclusive).
        max: Decimal,
    },
    /// The opening part of the order needs more margin than is available.
    #[error(
        "insufficient margin on {symbol}: the order needs {required} margin, {available} is available"
    )]
    InsufficientMargin {
        /// The order's symbol.
        symbol: String,
        /// Margin the order needs, in USD.
        required: Decimal,
        /// Margin available, in USD.
        available: Decimal,
    },
    /// A deserialised broker state does not hold together (books unbalanced, a malformed
    /// position, config out of range).
    #[error("invalid paper broker state: {reason}")]
    InvalidState {
        /// What is inconsistent.
        reason: String,
    },
    /// A bar handed to [`PaperBroker::apply_bar`] has a non-positive price or a high below its
    /// low.
    #[error("invalid bar for {symbol} at {time}: {reason}")]
    InvalidBar {
        /// The bar's symbol.
        symbol: String,
        /// The bar's open time (UTC).
        time: DateTime<Utc>,
        /// What is wrong with it.
        reason: String,
    },
}

/// Costs and margin parameters of a paper account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaperBrokerConfig {
    /// Starting wallet balance in USD.
    pub initial_equity_usd: Decimal,
    /// Taker fee in basis points of the fill's notional (`4.5` = 0.045 %).
    pub taker_fee_bps: Decimal,
    /// Slippage in basis points, always adverse to the taker: buys fill at
    /// `price × (1 + bps/10,000)`, sells at `price × (1 − bps/10,000)`.
    pub slippage_bps: Decimal,
    /// Maintenance margin as a fraction of notional (`0.005` = 0.5 %). A position is liquidated
    /// when its isolated margin plus unrealized PnL falls to `rate × qty × price`.
    pub maintenance_margin_rate: Decimal,
    /// The highest leverage the exchange allows per asset, where it publishes one (Hyperliquid
    /// `meta`'s `maxLeverage`). For these symbols the maintenance margin rate is half the
    /// initial margin at that leverage (`0.5 / max`, the exchange's convention for its first
    /// margin tier) and a higher leverage is refused, as the exchange refuses it; every other
    /// symbol uses `maintenance_margin_rate`. Left out of the serialised config when empty, so
    /// configs stored before it read and write unchanged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exchange_max_leverage: BTreeMap<String, Decimal>,
}

impl PaperBrokerConfig {
    /// A config with Hyperliquid-like defaults: 4.5 bps taker fee, 1 bp slippage, 0.5 %
    /// maintenance margin.
    #[must_use]
    pub fn new(initial_equity_usd: Decimal) -> Self {
        PaperBrokerConfig {
            initial_equity_usd,
            taker_fee_bps: Decimal::new(45, 1),
            slippage_bps: Decimal::ONE,
            maintenance_margin_rate: Decimal::new(5, 3),
            exchange_max_leverage: BTreeMap::new(),
        }
    }

    /// The paper account of a deployment of `skill` with `initial_equity_usd`: the defaults of
    /// [`PaperBrokerConfig::new`], the maintenance margin of the skill's `maxLeverage`
    /// ([`PaperBrokerConfig::with_maintenance_for_max_leverage`]) for every symbol, except the
    /// skill's symbols the exchange publishes a maximum leverage for in `exchange_max_leverage`
    /// (Hyperliquid `meta`'s `maxLeverage` by coin; other coins are ignored), which get the
    /// exchange's margin ([`PaperBrokerConfig::exchange_max_leverage`]). The one place both
    /// binaries build a paper broker from: a backtest and a live paper deployment of one skill
    /// given the same exchange metadata liquidate at the same price.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] when `maxLeverage` or a published maximum of one of the
    /// skill's symbols is below 1.
    pub fn for_skill(
        initial_equity_usd: Decimal,
        skill: &skill_schema::Skill,
        exchange_max_leverage: &BTreeMap<String, Decimal>,
    ) -> Result<Self, BrokerError> {
        let mut config = Self::new(initial_equity_usd)
            .with_maintenance_for_max_leverage(skill.risk.max_leverage)?;
        for symbol in &skill.context.symbols {
            if let Some(&max) = exchange_max_leverage.get(symbol) {
                if max < Decimal::ONE {
                    return Err(BrokerError::InvalidConfig {
                        field: "exchange_max_leverage",
                        reason: format!("{symbol}: must be at least 1, got {max}"),
                    });
                }
                config.exchange_max_leverage.insert(symbol.clone(), max);
            }
        }
        Ok(config)
    }

    /// The maintenance margin rate of positions on `symbol`: `0.5 / max` where the exchange
    /// publishes a maximum leverage for it, else `maintenance_margin_rate`.
    #[must_use]
    pub fn maintenance_margin_rate_for(&self, symbol: &str) -> Decimal {
        match self.exchange_max_leverage.get(symbol) {
            Some(&max) if max >= Decimal::ONE => Decimal::new(5, 1) / max,
            _ => self.maintenance_margin_rate,
        }
    }

    /// Sets the maintenance margin rate to half the initial margin at `max_leverage`
    /// (`0.5 / max_leverage`), the convention of Hyperliquid's perps.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] when `max_leverage` is below 1.
    pub fn with_maintenance_for_max_leverage(
        mut self,
        max_leverage: Decimal,
    ) -> Result<Self, BrokerError> {
        if max_leverage < Decimal::ONE {
            return Err(BrokerError::InvalidConfig {
                field: "max_leverage",
                reason: format!("must be at least 1, got {max_leverage}"),
            });
        }
        self.maintenance_margin_rate = Decimal::new(5, 1) / max_leverage;
        Ok(self)
    }

    fn validate(&self) -> Result<(), BrokerError> {
        let bad = |field, reason: String| Err(BrokerError::InvalidConfig { field, reason });
        if self.initial_equity_usd <= Decimal::ZERO || self.initial_equity_usd > MAX_NOTIONAL {
            return bad(
                "initial_equity_usd",
                format!(
                    "must be positive and at most {MAX_NOTIONAL}, got {}",
                    self.initial_equity_usd
                ),
            );
        }
        if self.taker_fee_bps.is_sign_negative() || self.taker_fee_bps >= BPS {
            return bad(
                "taker_fee_bps",
                format!("must be in [0, 10000), got {}", self.taker_fee_bps),
            );
        }
        if self.slippage_bps.is_sign_negative() || self.slippage_bps >= BPS {
            return bad(
                "slippage_bps",
                format!("must be in [0, 10000), got {}", self.slippage_bps),
            );
        }
        if self.maintenance_margin_rate <= Decimal::ZERO
            || self.maintenance_margin_rate >= Decimal::ONE
        {
            return bad(
                "maintenance_margin_rate",
                format!("must be in (0, 1), got {}", self.maintenance_margin_rate),
            );
        }
        if let Some((symbol, max)) = self
            .exchange_max_leverage
            .iter()
            .find(|(_, max)| **max < Decimal::ONE || **max > MAX_QTY)
        {
            return bad(
                "exchange_max_leverage",
                format!("{symbol}: must be at least 1, got {max}"),
            );
        }
        Ok(())
    }
}

/// Identifiers carried from the decision onto the fills of its order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderTag {
    /// The decision snapshot whose proposal caused the order.
    pub snapshot_id: Option<Uuid>,
    /// The runner's client order id.
    pub client_order_id: Option<String>,
}

/// An open paper position (isolated margin).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaperPosition {
    /// Long or short.
    pub side: Side,
    /// Base units, always > 0 (a position that reaches 0 is removed).
    pub qty: Decimal,
    /// Average entry price (average cost): adds move it, exits never do.
    pub entry_price: Decimal,
    /// Isolated margin locked for the position: Σ opened notional / leverage, released pro rata
    /// by quantity on reduces.
    pub margin_usd: Decimal,
    /// Leverage of the position: the order's leverage on open, the notional-weighted blend
    /// (entry notional / margin) after adds at a different leverage.
    pub leverage: Decimal,
    /// The resting protective stop: set by the order that opened the position (or a flip's
    /// opening leg), replaced by an add that carries a stop, kept by reduces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Decimal>,
    /// The resting profit target, with the same lifetime as [`PaperPosition::stop`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Decimal>,
    /// When the stop/target were last set (the fill's time): only bars opening at or after it
    /// can execute them, never the bar the fill happened in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels_since: Option<DateTime<Utc>>,
}

/// A simulated perp account. See the crate docs for its accounting.
///
/// Serialize it after every tick and deserialize it on restart; deserializing checks the state
/// (config in range, books balanced, positions well-formed) and fails with a
/// [`BrokerError::InvalidState`] message rather than resuming from a corrupt account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "UncheckedBroker")]
pub struct PaperBroker {
    config: PaperBrokerConfig,
    /// Wallet balance: initial equity + realized PnL − fees. Includes the locked margins.
    cash_usd: Decimal,
    realized_pnl_usd: Decimal,
    fees_paid_usd: Decimal,
    positions: BTreeMap<String, PaperPosition>,
    marks: BTreeMap<String, Decimal>,
    /// The number of the next fill (`paper-{n}`), starting at 1.
    next_fill_seq: u64,
    /// Fills made since the last [`PaperBroker::drain_fills`].
    unreported_fills: Vec<Fill>,
}

/// The serialized form, checked before it becomes a [`PaperBroker`].
#[derive(Deserialize)]
struct UncheckedBroker {
    config: PaperBrokerConfig,
    cash_usd: Decimal,
    realized_pnl_usd: Decimal,
    fees_paid_usd: Decimal,
    positions: BTreeMap<String, PaperPosition>,
    marks: BTreeMap<String, Decimal>,
    next_fill_seq: u64,
    unreported_fills: Vec<Fill>,
}

impl TryFrom<UncheckedBroker> for PaperBroker {
    type Error = BrokerError;

    fn try_from(s: UncheckedBroker) -> Result<Self, BrokerError> {
        let invalid = |reason: String| Err(BrokerError::InvalidState { reason });
        s.config.validate()?;
        let expected = s.config.initial_equity_usd + s.realized_pnl_usd - s.fees_paid_usd;
        if s.cash_usd != expected {
            return invalid(format!(
                "cash_usd {} is not initial {} + realized {} − fees {} = {expected}",
                s.cash_usd, s.config.initial_equity_usd, s.realized_pnl_usd, s.fees_paid_usd
            ));
        }
        for (symbol, p) in &s.positions {
            if p.qty <= Decimal::ZERO
                || p.entry_price <= Decimal::ZERO
                || p.margin_usd <= Decimal::ZERO
                || p.leverage < Decimal::ONE
            {
                return invalid(format!(
                    "position {symbol} needs qty, entry_price and margin_usd > 0 and leverage ≥ 1; got qty {}, entry_price {}, margin_usd {}, leverage {}",
                    p.qty, p.entry_price, p.margin_usd, p.leverage
                ));
            }
            for (name, level) in [("stop", p.stop), ("target", p.target)] {
                if let Some(v) = level.filter(|v| *v <= Decimal::ZERO || *v > MAX_PRICE) {
                    return invalid(format!(
                        "position {symbol} has {name} {v}; it must be positive and at most {MAX_PRICE}"
                    ));
                }
            }
            if (p.stop.is_some() || p.target.is_some()) && p.levels_since.is_none() {
                return invalid(format!(
                    "position {symbol} has a stop or target but no levels_since"
                ));
            }
        }
        if let Some((symbol, mark)) = s.marks.iter().find(|(_, m)| **m <= Decimal::ZERO) {
            return invalid(format!("mark of {symbol} must be positive, got {mark}"));
        }
        if s.next_fill_seq == 0 {
            return invalid("next_fill_seq must be at least 1".to_owned());
        }
        Ok(PaperBroker {
            config: s.config,
            cash_usd: s.cash_usd,
            realized_pnl_usd: s.realized_pnl_usd,
            fees_paid_usd: s.fees_paid_usd,
            positions: s.positions,
            marks: s.marks,
            next_fill_seq: s.next_fill_seq,
            unreported_fills: s.unreported_fills,
        })
    }
}

fn direction(side: OrderSide) -> Side {
    match side {
        OrderSide::Buy => Side::Long,
        OrderSide::Sell => Side::Short,
    }
}

fn positive(what: &'static str, value: Decimal, max: Decimal) -> Result<(), BrokerError> {
    if value <= Decimal::ZERO {
        return Err(BrokerError::NotPositive { what, value });
    }
    if value > max {
        return Err(BrokerError::OutOfRange { what, value, max });
    }
    Ok(())
}

impl PaperBroker {
    /// Opens a flat account holding `config.initial_equity_usd`.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] naming the field when the config is out of range.
    pub fn new(config: PaperBrokerConfig) -> Result<Self, BrokerError> {
        config.validate()?;
        Ok(PaperBroker {
            cash_usd: config.initial_equity_usd,
            config,
            realized_pnl_usd: Decimal::ZERO,
            fees_paid_usd: Decimal::ZERO,
            positions: BTreeMap::new(),
            marks: BTreeMap::new(),
            next_fill_seq: 1,
            unreported_fills: Vec::new(),
        })
    }

    /// The costs and margin parameters the account runs with.
    #[must_use]
    pub fn config(&self) -> &PaperBrokerConfig {
        &self.config
    }

    /// The price a taker order of `side` at `price` fills at, slippage applied against the taker.
    #[must_use]
    pub fn fill_price(&self, side: OrderSide, price: Decimal) -> Decimal {
        let slip = self.config.slippage_bps / BPS;
        let factor = match side {
            OrderSide::Buy => Decimal::ONE + slip,
            OrderSide::Sell => Decimal::ONE - slip,
        };
        round_price(price * factor)
    }

    /// Books realized PnL and a fee: the wallet moves by `realized − fee`.
    /// Refuses an opening leverage below 1, above the exchange's maximum for `symbol` where it
    /// publishes one, or else at/above `1 / maintenance margin rate` (liquidated at once).
    fn check_leverage(&self, symbol: &str, leverage: Decimal) -> Result<(), BrokerError> {
        if let Some(&max) = self.config.exchange_max_leverage.get(symbol)
            && leverage >= Decimal::ONE
            && leverage > max
        {
            return Err(BrokerError::AboveExchangeMaxLeverage {
                symbol: symbol.to_owned(),
                leverage,
                max: max.normalize(),
            });
        }
        let bound = Decimal::ONE / self.config.maintenance_margin_rate_for(symbol);
        if leverage < Decimal::ONE || leverage >= bound {
            return Err(BrokerError::InvalidLeverage {
                symbol: symbol.to_owned(),
                leverage,
                max: bound.normalize(),
            });
        }
        Ok(())
    }

    fn book(&mut self, realized: Decimal, fee: Decimal) {
        self.cash_usd = (self.cash_usd + realized - fee).normalize();
        self.realized_pnl_usd = (self.realized_pnl_usd + realized).normalize();
        self.fees_paid_usd = (self.fees_paid_usd + fee).normalize();
    }

    fn next_id(&mut self) -> String {
        let id = format!("paper-{}", self.next_fill_seq);
        self.next_fill_seq += 1;
        id
    }

    /// Fills `order` as a market order at `price` (the current price of the symbol; slippage and
    /// the taker fee are applied here) and marks the symbol at `price`.
    ///
    /// An order against the position's side first closes (up to the position's quantity) and
    /// opens the rest on the other side — all in one fill. A reduce-only order never opens: its
    /// quantity is clamped to the position. After the fill the position is checked against its
    /// liquidation price at `price`; a liquidation fill may follow in [`PaperBroker::drain_fills`].
    ///
    /// # Errors
    /// - [`BrokerError::NotPositive`] / [`BrokerError::OutOfRange`] for a quantity or price that
    ///   is not positive or beyond the broker's limits;
    /// - [`BrokerError::NothingToReduce`] / [`BrokerError::ReduceOnlyWouldIncrease`] for a
    ///   reduce-only order that cannot reduce;
    /// - [`BrokerError::InvalidLeverage`] when the opening part's leverage is below 1 or so high
    ///   that the position would be liquidated at once (≥ 1 / maintenance margin rate);
    /// - [`BrokerError::InsufficientMargin`] when the opening part's margin is more than the
    ///   available margin after the closing part and the fee.
    ///
    /// Nothing changes when an error is returned.
    pub fn execute(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: OrderTag,
    ) -> Result<Fill, BrokerError> {
        positive("price", price, MAX_PRICE)?;
        positive("qty", order.qty, MAX_QTY)?;
        let dir = direction(order.side);
        let existing = self.positions.get(&order.symbol).cloned();

        let (closing, mut opening) = match &existing {
            Some(pos) if pos.side != dir => {
                let closing = order.qty.min(pos.qty);
                (closing, order.qty - closing)
            }
            _ => (Decimal::ZERO, order.qty),
        };
        if order.reduce_only {
            match &existing {
                None => {
                    return Err(BrokerError::NothingToReduce {
                        symbol: order.symbol.clone(),
                    });
                }
                Some(pos) if pos.side == dir => {
                    return Err(BrokerError::ReduceOnlyWouldIncrease {
                        symbol: order.symbol.clone(),
                        position_side: pos.side,
                    });
                }
                Some(_) => opening = Decimal::ZERO,
            }
        }
        if !opening.is_zero() {
            self.check_leverage(&order.symbol, order.leverage)?;
        }

        let fill_qty = (closing + opening).normalize();
        let fill_price = self.fill_price(order.side, price);
        let notional = fill_qty * fill_price;
        positive("fill notional", notional, MAX_NOTIONAL)?;
        let fee = round_usd(notional * self.config.taker_fee_bps / BPS);

        // The closing leg: realized PnL on the closed quantity against the average entry, margin
        // released pro rata.
        let (realized, released) = match &existing {
            Some(pos) if !closing.is_zero() => {
                let realized =
                    round_usd(pos.side.sign() * (fill_price - pos.entry_price) * closing);
                let released = if closing == pos.qty {
                    pos.margin_usd
                } else {
                    pos.margin_usd * closing / pos.qty
                };
                (realized, released)
            }
            _ => (Decimal::ZERO, Decimal::ZERO),
        };

        // The opening leg: margin = notional at the fill price / leverage.
        let new_margin = if opening.is_zero() {
            Decimal::ZERO
        } else {
            let available_after = self.available_raw() + released + realized - fee;
            let margin = opening * fill_price / order.leverage;
            positive("margin", margin, MAX_NOTIONAL)?;
            if margin > available_after {
                return Err(BrokerError::InsufficientMargin {
                    symbol: order.symbol.clone(),
                    required: round_usd(margin),
                    available: round_usd(available_after),
                });
            }
            margin
        };
        if let Some(pos) = existing.as_ref().filter(|p| p.side == dir) {
            positive("position qty", pos.qty + opening, MAX_QTY)?;
        }

        // Apply.
        if !closing.is_zero() {
            let remove = match self.positions.get_mut(&order.symbol) {
                Some(pos) => {
                    pos.qty = (pos.qty - closing).normalize();
                    pos.margin_usd -= released;
                    pos.qty.is_zero()
                }
                None => false,
            };
            if remove {
                self.positions.remove(&order.symbol);
            }
        }
        if !opening.is_zero() {
            match self.positions.get_mut(&order.symbol) {
                Some(pos) => {
                    // Average cost: (q₁·e₁ + q₂·e₂) / (q₁ + q₂).
                    let qty = pos.qty + opening;
                    let cost = pos.qty * pos.entry_price + opening * fill_price;
                    pos.entry_price = round_price(cost / qty);
                    pos.qty = qty.normalize();
                    pos.margin_usd += new_margin;
                    // An add that carries a level replaces that level; one it leaves out stays.
                    if order.stop.is_some() || order.target.is_some() {
                        pos.stop = order.stop.or(pos.stop);
                        pos.target = order.target.or(pos.target);
                        pos.levels_since = Some(at);
                    }
                    if pos.leverage != order.leverage {
                        // Blend: entry notional / margin (margin > 0: both legs' are).
                        if let Some(blend) = cost.checked_div(pos.margin_usd) {
                            pos.leverage = blend
                                .round_dp_with_strategy(2, RoundingStrategy::MidpointNearestEven)
                                .normalize();
                        }
                    }
                }
                None => {
                    self.positions.insert(
                        order.symbol.clone(),
                        PaperPosition {
                            side: dir,
                            qty: opening.normalize(),
                            entry_price: fill_price,
                            margin_usd: new_margin,
                            leverage: order.leverage,
                            stop: order.stop,
                            target: order.target,
                            levels_since: (order.stop.is_some() || order.target.is_some())
                                .then_some(at),
                        },
                    );
                }
            }
        }
        self.book(realized, fee);
        self.marks.insert(order.symbol.clone(), price.normalize());

        let fill = Fill {
            id: self.next_id(),
            symbol: order.symbol.clone(),
            side: order.side,
            qty: fill_qty,
            price: fill_price,
            fee_usd: fee,
            time: at,
            snapshot_id: tag.snapshot_id,
            client_order_id: tag.client_order_id,
            liquidation: false,
            trigger: None,
        };
        self.unreported_fills.push(fill.clone());
        self.check_liquidation(&order.symbol, price, price, at);
        Ok(fill)
    }

    /// Marks `symbol` at `price`. A position whose liquidation price the new mark reaches is
    /// liquidated at its liquidation price; the liquidation fill is returned.
    ///
    /// # Errors
    /// [`BrokerError::NotPositive`] / [`BrokerError::OutOfRange`] for a bad price.
    pub fn update_mark(
        &mut self,
        symbol: &str,
        price: Decimal,
        at: DateTime<Utc>,
    ) -> Result<Option<Fill>, BrokerError> {
        positive("mark price", price, MAX_PRICE)?;
        let fill = self.check_liquidation(symbol, price, price, at);
        self.marks.insert(symbol.to_owned(), price.normalize());
        Ok(fill)
    }

    /// Applies a closed bar of `symbol`: the position's liquidation price, stop and target are
    /// checked against the bar (see below), a fill that closes the whole position is stamped `at`
    /// (pass the bar's close time); then the symbol is marked at the bar's close.
    ///
    /// The stop and target are checked only on bars opening at or after the fill that set them
    /// ([`PaperPosition::levels_since`]); the liquidation price on every bar. The bar's path
    /// inside its range is unknown, so the order is fixed (shown for a long; a short mirrors it):
    /// 1. the open at or below the liquidation price: liquidation at the liquidation price;
    /// 2. the open at or below the stop: the stop fills at the open (a gap);
    /// 3. the open at or above the target: the target fills at the open (a gap);
    /// 4. the low at or below a stop that lies above the liquidation price: the stop fills at the
    ///    stop (the price passes it before it can reach the liquidation price);
    /// 5. the low at or below the liquidation price: liquidation (a stop at or below the
    ///    liquidation price could never fill: the account is liquidated first);
    /// 6. the high at or above the target: the target fills at the target.
    ///
    /// Adverse levels (stop, liquidation) come before the target: when one bar reaches both the
    /// stop and the target, the stop fills — the conservative reading of an unknown path.
    /// A stop fills as a stop-market order: slippage adverse to the taker, taker fee. A target
    /// fills as a resting take-profit limit: at its price (or the better gap open) with no
    /// slippage, taker fee. Either fill has `trigger` set and no snapshot or client order id.
    ///
    /// # Errors
    /// [`BrokerError::InvalidBar`] when a price is not positive or the high is below the low.
    pub fn apply_bar(
        &mut self,
        symbol: &str,
        bar: &Bar,
        at: DateTime<Utc>,
    ) -> Result<Option<Fill>, BrokerError> {
        let invalid = |reason: &str| BrokerError::InvalidBar {
            symbol: symbol.to_owned(),
            time: bar.time,
            reason: reason.to_owned(),
        };
        for (name, v) in [
            ("open", bar.open),
            ("high", bar.high),
            ("low", bar.low),
            ("close", bar.close),
        ] {
            if v <= Decimal::ZERO || v > MAX_PRICE {
                return Err(invalid(&format!(
                    "{name} {v} must be positive and at most {MAX_PRICE}"
                )));
            }
        }
        if bar.high < bar.low {
            return Err(invalid(&format!(
                "high {} is below low {}",
                bar.high, bar.low
            )));
        }
        let fill = self.check_bar(symbol, bar, at);
        self.marks.insert(symbol.to_owned(), bar.close.normalize());
        Ok(fill)
    }

    /// The liquidation, stop or target fill `bar` makes on `symbol`'s position, in the order
    /// [`PaperBroker::apply_bar`] documents.
    fn check_bar(&mut self, symbol: &str, bar: &Bar, at: DateTime<Utc>) -> Option<Fill> {
        let pos = self.positions.get(symbol)?;
        let liq = self.liquidation_price_of(symbol, pos);
        let armed = pos.levels_since.is_some_and(|since| bar.time >= since);
        let (stop, target) = if armed {
            (pos.stop, pos.target)
        } else {
            (None, None)
        };
        // `adverse(a, b)`: price a is at or beyond b on the losing side of the position;
        // `favourable(a, b)`: at or beyond b on the winning side.
        let side = pos.side;
        let adverse = |a: Decimal, b: Decimal| match side {
            Side::Long => a <= b,
            Side::Short => a >= b,
        };
        let favourable = |a: Decimal, b: Decimal| match side {
            Side::Long => a >= b,
            Side::Short => a <= b,
        };
        let (worst, best) = match side {
            Side::Long => (bar.low, bar.high),
            Side::Short => (bar.high, bar.low),
        };
        if liq.is_some_and(|l| adverse(bar.open, l)) {
            return self.check_liquidation(symbol, bar.low, bar.high, at);
        }
        if stop.is_some_and(|s| adverse(bar.open, s)) {
            return self.close_at_level(symbol, bar.open, at, FillTrigger::Stop);
        }
        if target.is_some_and(|t| favourable(bar.open, t)) {
            return self.close_at_level(symbol, bar.open, at, FillTrigger::Target);
        }
        if let Some(s) = stop.filter(|s| adverse(worst, *s) && liq.is_none_or(|l| !adverse(*s, l)))
        {
            return self.close_at_level(symbol, s, at, FillTrigger::Stop);
        }
        if liq.is_some_and(|l| adverse(worst, l)) {
            return self.check_liquidation(symbol, bar.low, bar.high, at);
        }
        if let Some(t) = target.filter(|t| favourable(best, *t)) {
            return self.close_at_level(symbol, t, at, FillTrigger::Target);
        }
        None
    }

    /// Closes the whole position on `symbol` at `level` because its stop or target executed:
    /// a stop with slippage adverse to the taker, a target at the level; taker fee on both.
    fn close_at_level(
        &mut self,
        symbol: &str,
        level: Decimal,
        at: DateTime<Utc>,
        trigger: FillTrigger,
    ) -> Option<Fill> {
        let pos = self.positions.remove(symbol)?;
        let side = pos.side.opposite().opening_order();
        let price = match trigger {
            FillTrigger::Stop => self.fill_price(side, level),
            FillTrigger::Target => round_price(level),
        };
        let fee = round_usd(pos.qty * price * self.config.taker_fee_bps / BPS);
        let realized = round_usd(pos.side.sign() * (price - pos.entry_price) * pos.qty);
        self.book(realized, fee);
        let fill = Fill {
            id: self.next_id(),
            symbol: symbol.to_owned(),
            side,
            qty: pos.qty,
            price,
            fee_usd: fee,
            time: at,
            snapshot_id: None,
            client_order_id: None,
            liquidation: false,
            trigger: Some(trigger),
        };
        self.unreported_fills.push(fill.clone());
        Some(fill)
    }

    fn check_liquidation(
        &mut self,
        symbol: &str,
        low: Decimal,
        high: Decimal,
        at: DateTime<Utc>,
    ) -> Option<Fill> {
        let pos = self.positions.get(symbol)?;
        let liq = self.liquidation_price_of(symbol, pos)?;
        let crossed = match pos.side {
            Side::Long => low <= liq,
            Side::Short => high >= liq,
        };
        if !crossed {
            return None;
        }
        let pos = self.positions.remove(symbol)?;
        let notional = pos.qty * liq;
        let fee = round_usd(notional * self.config.taker_fee_bps / BPS);
        let realized = round_usd(pos.side.sign() * (liq - pos.entry_price) * pos.qty);
        self.book(realized, fee);
        let fill = Fill {
            id: self.next_id(),
            symbol: symbol.to_owned(),
            side: pos.side.opposite().opening_order(),
            qty: pos.qty,
            price: liq,
            fee_usd: fee,
            time: at,
            snapshot_id: None,
            client_order_id: None,
            liquidation: true,
            trigger: None,
        };
        self.unreported_fills.push(fill.clone());
        Some(fill)
    }

    /// Where the position is liquidated: the price at which its isolated margin plus unrealized
    /// PnL equals the maintenance margin.
    ///
    /// Long: `M + q·(P − E) = m·q·P` ⇒ `P = (E − M/q) / (1 − m)`.
    /// Short: `M + q·(E − P) = m·q·P` ⇒ `P = (E + M/q) / (1 + m)`.
    /// `None` for a long that cannot be liquidated (the price would be ≤ 0, e.g. at 1x).
    fn liquidation_price_of(&self, symbol: &str, pos: &PaperPosition) -> Option<Decimal> {
        let m = self.config.maintenance_margin_rate_for(symbol);
        let per_unit = pos.margin_usd / pos.qty;
        let price = match pos.side {
            Side::Long => (pos.entry_price - per_unit) / (Decimal::ONE - m),
            Side::Short => (pos.entry_price + per_unit) / (Decimal::ONE + m),
        };
        let price = round_price(price);
        (price > Decimal::ZERO).then_some(price)
    }

    /// The liquidation price of the position on `symbol`, if there is one and it can be
    /// liquidated.
    #[must_use]
    pub fn liquidation_price(&self, symbol: &str) -> Option<Decimal> {
        self.positions
            .get(symbol)
            .and_then(|p| self.liquidation_price_of(symbol, p))
    }

    /// The raw position on `symbol`.
    #[must_use]
    pub fn paper_position(&self, symbol: &str) -> Option<&PaperPosition> {
        self.positions.get(symbol)
    }

    /// The last price `symbol` was marked or traded at.
    #[must_use]
    pub fn mark(&self, symbol: &str) -> Option<Decimal> {
        self.marks.get(symbol).copied()
    }

    fn mark_of(&self, symbol: &str, pos: &PaperPosition) -> Decimal {
        self.marks.get(symbol).copied().unwrap_or(pos.entry_price)
    }

    fn unrealized_of(&self, symbol: &str, pos: &PaperPosition) -> Decimal {
        round_usd(pos.side.sign() * (self.mark_of(symbol, pos) - pos.entry_price) * pos.qty)
    }

    /// Wallet balance: initial equity + realized PnL − fees (locked margins included).
    #[must_use]
    pub fn cash_usd(&self) -> Decimal {
        self.cash_usd
    }

    /// Realized PnL since the account opened, gross of fees.
    #[must_use]
    pub fn realized_pnl_usd(&self) -> Decimal {
        self.realized_pnl_usd
    }

    /// Fees paid since the account opened.
    #[must_use]
    pub fn fees_paid_usd(&self) -> Decimal {
        self.fees_paid_usd
    }

    /// Σ unrealized PnL of the open positions at their marks (each rounded to [`USD_DP`]).
    #[must_use]
    pub fn unrealized_pnl_usd(&self) -> Decimal {
        self.positions
            .iter()
            .map(|(s, p)| self.unrealized_of(s, p))
            .sum::<Decimal>()
            .normalize()
    }

    /// Equity: wallet balance + unrealized PnL
    /// (= initial + realized − fees + unrealized).
    #[must_use]
    pub fn equity_usd(&self) -> Decimal {
        (self.cash_usd + self.unrealized_pnl_usd()).normalize()
    }

    fn available_raw(&self) -> Decimal {
        self.cash_usd
            - self
                .positions
                .values()
                .map(|p| p.margin_usd)
                .sum::<Decimal>()
    }

    /// Margin free for new positions: wallet balance − Σ isolated margins. (Isolated: a
    /// position's unrealized profit is not available until realized; its loss is borne by its
    /// own margin.)
    #[must_use]
    pub fn available_margin_usd(&self) -> Decimal {
        round_usd(self.available_raw())
    }

    /// The broker-authoritative portfolio at `at`, positions ordered by symbol.
    #[must_use]
    pub fn snapshot(&self, at: DateTime<Utc>) -> PortfolioSnapshot {
        let positions: Vec<Position> = self
            .positions
            .iter()
            .map(|(symbol, pos)| Position {
                symbol: symbol.clone(),
                side: pos.side,
                qty: pos.qty,
                entry_price: pos.entry_price,
                leverage: pos.leverage,
                mark_price: self.mark_of(symbol, pos),
                liquidation_price: self.liquidation_price_of(symbol, pos),
                unrealized_pnl_usd: self.unrealized_of(symbol, pos),
                margin_usd: round_usd(pos.margin_usd),
            })
            .collect();
        // `equity_usd()` from the unrealized PnL just computed: the same terms in the same
        // order (by symbol), without pricing every position twice.
        let unrealized = positions
            .iter()
            .map(|p| p.unrealized_pnl_usd)
            .sum::<Decimal>()
            .normalize();
        PortfolioSnapshot {
            at,
            equity_usd: (self.cash_usd + unrealized).normalize(),
            available_margin_usd: self.available_margin_usd(),
            positions,
            realized_pnl_usd: self.realized_pnl_usd,
            fees_paid_usd: self.fees_paid_usd,
        }
    }

    /// The fills made since the last call, in the order they happened.
    pub fn drain_fills(&mut self) -> Vec<Fill> {
        std::mem::take(&mut self.unreported_fills)
    }

    /// The marks the broker holds, per symbol.
    #[must_use]
    pub fn marks(&self) -> &BTreeMap<String, Decimal> {
        &self.marks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_the_powers_of_ten_they_claim() {
        assert_eq!(MAX_PRICE, Decimal::from(1_000_000_000_000_i64));
        assert_eq!(MAX_QTY, Decimal::from(1_000_000_000_000_000_i64));
        assert_eq!(MAX_NOTIONAL, Decimal::from(1_000_000_000_000_000_000_i64));
        assert_eq!(BPS, Decimal::from(10_000));
    }
}
