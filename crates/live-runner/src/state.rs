//! The runner's per-deployment state between ticks (`live_runner_state`, in the store's
//! migrations).
//!
//! What a restart needs that the store's other tables do not hold: the paper broker (cash,
//! positions, liquidation prices, marks) of a paper deployment, the fill watermark of a
//! Hyperliquid one ([`crate::hl_broker::FillCursor`]; the exchange holds the account itself), the
//! engine's risk state (peak equity, the day's start, recent order times) and the last decision.
//! The ledger is NOT copied here: it is rebuilt from `trade_history` and `fills` on every tick
//! ([`tick::restore_state_carried`]); nor are the reflection notes and runs, read back
//! with [`tick::load_reflection_state`] (a reflection runs off the tick path and may finish after
//! the tick's state was committed).
//!
//! One row per deployment: `tick_at` and `state` (JSON of [`RunnerState`]) are written by
//! `record_tick` in the tick's own transaction (`tick::run_tick_carrying`), only forward, so a
//! tick and the state after it commit together and a runner that lost its lease cannot
//! overwrite a newer state; `attempt_owner` / `attempt_tick_at` (which runner last started which
//! tick, to count lease takeovers) are this module's. RLS: the service role's only.

use chrono::{DateTime, Utc};
use db::StoredRunnerState;
use execution_engine::{PaperBroker, RiskState};
use serde::{Deserialize, Serialize};
use tick::TickState;
use tools::LastDecisionSnapshot;
use uuid::Uuid;

use crate::hl_broker::{FillCursor, HyperliquidBroker};

/// Errors reading the runner state.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The stored state JSON does not parse as a [`RunnerState`].
    #[error(
        "live_runner_state of deployment {deployment}: the stored JSON does not parse: {source}"
    )]
    Decode {
        /// The deployment whose state it is.
        deployment: Uuid,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
}

/// Everything carried from one tick to the next besides the ledger and the reflection notes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunnerState {
    /// The paper broker of a paper deployment (`None` for an exchange deployment).
    #[serde(default)]
    pub broker: Option<PaperBroker>,
    /// Where a Hyperliquid deployment's next fill read starts, with its realized PnL and fee
    /// totals (`None` for a paper deployment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyperliquid: Option<FillCursor>,
    /// The engine's risk state (drawdown peak, the day's start equity, recent order times).
    pub risk: RiskState,
    /// What the next tick shows under "Last decision"; `None` before the first tick.
    pub last_decision: Option<LastDecisionSnapshot>,
    /// The tick this state is the result of; `None` before the first tick.
    pub last_tick_at: Option<DateTime<Utc>>,
}

/// The part of a broker the runner state keeps.
pub trait CarriedBroker {
    /// Puts the broker's part into `state`.
    fn carry_into(&self, state: &mut RunnerState);
}

impl CarriedBroker for PaperBroker {
    fn carry_into(&self, state: &mut RunnerState) {
        state.broker = Some(self.clone());
    }
}

impl CarriedBroker for HyperliquidBroker {
    fn carry_into(&self, state: &mut RunnerState) {
        state.hyperliquid = Some(self.cursor().clone());
    }
}

impl RunnerState {
    /// The state after a tick: the broker's part as it stands and the carried parts of `tick`.
    #[must_use]
    pub fn after<B: CarriedBroker>(broker: &B, tick: &TickState) -> Self {
        let mut state = RunnerState {
            broker: None,
            hyperliquid: None,
            risk: tick.risk.clone(),
            last_decision: tick.last_decision.clone(),
            last_tick_at: tick.last_tick_at,
        };
        broker.carry_into(&mut state);
        state
    }

    /// Reads a state `record_tick` committed. Fields of older runner versions (the reflection
    /// drafts and cadence, now read from the store) are ignored.
    ///
    /// # Errors
    /// [`StateError::Decode`] when the JSON is not a runner state.
    pub fn decode(stored: &StoredRunnerState) -> Result<Self, StateError> {
        serde_json::from_value(stored.state.clone()).map_err(|source| StateError::Decode {
            deployment: stored.deployment_id,
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use execution_engine::{Order, OrderIntent, OrderTag, PaperBrokerConfig};
    use rust_decimal::Decimal;
    use types::OrderSide;

    use super::*;

    /// A state a runner wrote before stops and targets existed still decodes (its position gets
    /// no levels), and a position without levels still encodes to exactly that JSON.
    #[test]
    fn a_state_written_before_stops_existed_decodes_and_re_encodes_unchanged() {
        let at = Utc.with_ymd_and_hms(2026, 3, 2, 12, 0, 0).unwrap();
        let mut broker = PaperBroker::new(PaperBrokerConfig::new(Decimal::from(10_000))).unwrap();
        let mut order = Order {
            symbol: "BTC".into(),
            side: OrderSide::Buy,
            qty: Decimal::ONE,
            leverage: Decimal::ONE,
            reduce_only: false,
            intent: OrderIntent::Open,
            reference_price: Decimal::from(100),
            notional_usd: Decimal::from(100),
            stop: Some(Decimal::from(95)),
            target: None,
        };
        broker
            .execute(&order, Decimal::from(100), at, OrderTag::default())
            .unwrap();
        let state = RunnerState {
            broker: Some(broker),
            hyperliquid: None,
            risk: RiskState::new(Decimal::from(10_000), at),
            last_decision: None,
            last_tick_at: Some(at),
        };
        let mut old = serde_json::to_value(&state).unwrap();
        assert_eq!(old["broker"]["positions"]["BTC"]["stop"], "95");
        let position = old["broker"]["positions"]["BTC"].as_object_mut().unwrap();
        position.remove("stop");
        position.remove("levels_since");
        let stored = StoredRunnerState {
            deployment_id: Uuid::nil(),
            tick_at: at,
            state: old.clone(),
        };
        let decoded = RunnerState::decode(&stored).unwrap();
        let p = decoded
            .broker
            .as_ref()
            .and_then(|b| b.paper_position("BTC"))
            .unwrap();
        assert_eq!((p.stop, p.target, p.levels_since), (None, None, None));
        assert_eq!(serde_json::to_value(&decoded).unwrap(), old);

        // The same order without levels writes the old form itself.
        order.stop = None;
        let mut plain = PaperBroker::new(PaperBrokerConfig::new(Decimal::from(10_000))).unwrap();
        plain
            .execute(&order, Decimal::from(100), at, OrderTag::default())
            .unwrap();
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            old["broker"],
            "no new keys for a position without levels"
        );
    }
}
