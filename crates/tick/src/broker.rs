//! Where orders go: the [`Broker`] trait, its errors, and the paper broker behind it.

use std::future::Future;

use chrono::{DateTime, Utc};
use execution_engine::{BrokerError, Order, OrderTag, PaperBroker};
use rust_decimal::Decimal;
use types::{Fill, PortfolioSnapshot, RuleCode};

/// The broker refused an order the engine passed (fees and slippage on top of the engine's
/// margin check, an exchange rejection, ...). The tick records it as a rejection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BrokerRefusal {
    /// The rule code the rejection is recorded under.
    pub rule: RuleCode,
    /// The broker's reason, for the verdict's detail.
    pub message: String,
}

/// The broker's account could not be read: the tick cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("broker unavailable: {0}")]
pub struct BrokerUnavailable(pub String);

/// Why [`Broker::execute`] did not fill an order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecuteError {
    /// The broker refused it: the tick records a rejection.
    #[error(transparent)]
    Refused(#[from] BrokerRefusal),
    /// The broker could not be reached or did not answer clearly: the order may or may not have
    /// been placed, so the tick fails without recording anything and is retried (a retried tick
    /// sends the same client order id, which the broker must recognise).
    #[error(transparent)]
    Unavailable(#[from] BrokerUnavailable),
}

/// Where orders go: the paper broker in a backtest, an exchange live.
///
/// The tick reads the account through it, sends the engine's order at a price (the mark; the
/// broker applies its own slippage and fees) and collects every fill made since the last call
/// (its own and the ones it caused itself, such as liquidations).
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait Broker: Send {
    /// Whether the account moves only through [`execute`](Broker::execute) (between the
    /// tick's reads of it): then a tick that sent no order reads it once, since a second read
    /// would return the first. `false` (the default) for an exchange, whose account moves on
    /// its own (funding, liquidations, other clients): the tick reads it again after its order.
    const ACCOUNT_MOVES_ONLY_ON_EXECUTE: bool = false;

    /// The broker-authoritative account at `at`.
    ///
    /// # Errors
    /// [`BrokerUnavailable`] when the account cannot be read.
    fn portfolio(
        &mut self,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<PortfolioSnapshot, BrokerUnavailable>> + Send;

    /// Executes `order` as a market order at `price` (the mark).
    ///
    /// # Errors
    /// [`ExecuteError::Refused`] when the broker refuses it (nothing changed then);
    /// [`ExecuteError::Unavailable`] when it cannot tell whether the order was placed.
    fn execute(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: OrderTag,
    ) -> impl Future<Output = Result<Fill, ExecuteError>> + Send;

    /// Every fill made since the last call, in the order they happened.
    ///
    /// # Errors
    /// [`BrokerUnavailable`] when the fills cannot be read.
    fn drain_fills(&mut self) -> impl Future<Output = Result<Vec<Fill>, BrokerUnavailable>> + Send;
}

impl Broker for PaperBroker {
    /// The paper account changes only when an order fills or a new bar is applied (liquidations,
    /// between ticks).
    const ACCOUNT_MOVES_ONLY_ON_EXECUTE: bool = true;

    fn portfolio(
        &mut self,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<PortfolioSnapshot, BrokerUnavailable>> + Send {
        std::future::ready(Ok(self.snapshot(at)))
    }

    fn execute(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: OrderTag,
    ) -> impl Future<Output = Result<Fill, ExecuteError>> + Send {
        let result = PaperBroker::execute(self, order, price, at, tag).map_err(|e| {
            let rule = match e {
                BrokerError::InsufficientMargin { .. } => RuleCode::InsufficientMargin,
                _ => RuleCode::InvalidOrder,
            };
            ExecuteError::Refused(BrokerRefusal {
                rule,
                message: format!("the paper broker refused the order: {e}"),
            })
        });
        std::future::ready(result)
    }

    fn drain_fills(&mut self) -> impl Future<Output = Result<Vec<Fill>, BrokerUnavailable>> + Send {
        std::future::ready(Ok(PaperBroker::drain_fills(self)))
    }
}
