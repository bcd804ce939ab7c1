//! A stopped deployment's flatten: a runner leases it (`LeaseStore::claim_flattens`, so two
//! runners never flatten one deployment at once), closes its open positions through its broker
//! (`tick::run_flatten`: reduce-only market orders, recorded like a tick with the runner state
//! after it), and records it done — or, when the broker failed or a position is left, records
//! the failure and tries again after a backoff (doubling from [`RunnerConfig::retry_after`] up to
//! [`RunnerConfig::flatten_retry_max`]), for as long as it takes.
//!
//! The request lives in the database (`deployments.flatten_requested_at`) from the stop until a
//! runner has done it: a runner killed before or during a flatten leaves it to the next one
//! (after the lease expires).

use std::time::Instant;

use chrono::{DateTime, DurationRound, Utc};
use db::{ControlStore, DbError, LeaseStore, TickStore};
use tick::{Broker, FlattenOutcome, TickState};

use super::deployment::paper_broker;
use super::market::fetch_market;
use super::{RunError, Runner, RunnerConfig};
use crate::schedule::last_close_at_or_before;
use crate::state::{CarriedBroker, RunnerState};

/// When the next attempt after `failures` failed ones (≥ 1) runs: [`RunnerConfig::retry_after`]
/// doubled per earlier failure, at most [`RunnerConfig::flatten_retry_max`].
#[must_use]
pub fn flatten_retry_at(config: &RunnerConfig, now: DateTime<Utc>, failures: u32) -> DateTime<Utc> {
    let doublings = failures.saturating_sub(1).min(20);
    let delay = config
        .retry_after
        .checked_mul(1 << doublings)
        .map_or(config.flatten_retry_max, |d| {
            d.min(config.flatten_retry_max)
        });
    now + delay
}

impl Runner {
    /// Flattens one claimed stopped deployment and records the result (done, or a failure to
    /// retry), ending its lease.
    pub(super) async fn process_flatten(&self, d: db::Deployment) {
        let started = Instant::now();
        let result = match tokio::time::timeout(
            self.config.tick_budget,
            self.flatten_deployment(&d),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(RunError::Abandoned {
                after: self.config.tick_budget,
            }),
        };
        let now = self.clock.now();
        let failure = match &result {
            Ok(out) if out.is_flat() => None,
            Ok(out) => Some(format!(
                "a position is still open after the closing orders: {}",
                out.report.summary()
            )),
            Err(e) => Some(e.to_string()),
        };
        let Some(failure) = failure else {
            match self
                .store
                .finish_flatten(d.id, &self.config.owner, now)
                .await
            {
                Ok(()) => {
                    self.metrics.flatten("done");
                    let summary = result.map(|o| o.report.summary()).unwrap_or_default();
                    tracing::info!(deployment = %d.id, took_ms = started.elapsed().as_millis(), %summary, "flattened the stopped deployment");
                }
                Err(DbError::NotFound { .. }) => {
                    self.metrics.flatten("lease_lost");
                    tracing::warn!(deployment = %d.id, "flattened, but the lease was taken over before it was recorded done");
                }
                Err(e) => {
                    tracing::error!(deployment = %d.id, error = %e, "flattened, but recording it done failed; the next attempt finds the account flat");
                }
            }
            return;
        };
        let failures = match self.store.flatten_state(d.id).await {
            Ok(Some(f)) => f.attempts.saturating_add(1),
            Ok(None) | Err(_) => 1,
        };
        let retry_at = flatten_retry_at(&self.config, now, failures);
        self.metrics
            .flatten(if result.is_ok() { "retry" } else { "failed" });
        tracing::error!(deployment = %d.id, attempt = failures, %retry_at, error = %failure, "flattening the stopped deployment failed; will retry");
        match self
            .store
            .retry_flatten(d.id, &self.config.owner, &failure, retry_at)
            .await
        {
            Ok(_) => {}
            Err(DbError::NotFound { .. }) => {
                self.metrics.flatten("lease_lost");
                tracing::warn!(deployment = %d.id, "the flatten's lease was taken over before its failure was recorded");
            }
            Err(e) => {
                tracing::error!(deployment = %d.id, error = %e, "recording the failed flatten failed; its lease expires and another attempt follows")
            }
        }
    }

    /// Closes every open position of the stopped deployment `d` through its broker and records
    /// it (`tick::run_flatten`) at now, to the millisecond — after the last recorded tick.
    ///
    /// # Errors
    /// [`RunError`] when the skill, the state, the market data (paper: the bars since the last
    /// tick) or the broker cannot be read, or the flatten cannot be recorded.
    pub async fn flatten_deployment(&self, d: &db::Deployment) -> Result<FlattenOutcome, RunError> {
        let skill = self.skill(d).await?;
        let stored = self.store.runner_state(d.id).await?;
        let saved = stored.as_ref().map(RunnerState::decode).transpose()?;
        let now = self.clock.now();
        let mut at = now
            .duration_trunc(chrono::Duration::milliseconds(1))
            .unwrap_or(now);
        if let Some(s) = &stored
            && s.tick_at >= at
        {
            at = s.tick_at + chrono::Duration::milliseconds(1);
        }
        let deployment = tick::TickDeployment::for_row(
            d,
            skill.clone(),
            Err("no reflection while flattening a stopped deployment".to_owned()),
        );
        match d.broker {
            db::BrokerKind::Paper => {
                // The bars closed since the last tick move the paper account (stops, targets,
                // liquidations) and its marks: the closing orders go out at the latest close.
                let interval = skill.context.bars_interval;
                let closed = last_close_at_or_before(now, interval);
                let last_tick_at = saved.as_ref().and_then(|s| s.last_tick_at);
                let market = fetch_market(&self.candles, &skill, closed, last_tick_at, now).await?;
                let mut broker = paper_broker(
                    d,
                    saved.as_ref(),
                    &market,
                    &skill.context.symbols,
                    interval,
                    closed,
                )?;
                self.flatten_with(&deployment, &mut broker, saved, d.initial_equity_usd, at)
                    .await
            }
            db::BrokerKind::Hyperliquid => {
                let mut broker = self.hyperliquid_broker(d, saved.as_ref()).await?;
                let equity = match &saved {
                    Some(_) => rust_decimal::Decimal::ZERO,
                    None => broker.portfolio(at).await?.equity_usd,
                };
                self.flatten_with(&deployment, &mut broker, saved, equity, at)
                    .await
            }
        }
    }

    async fn flatten_with<B: Broker + CarriedBroker + Sync>(
        &self,
        deployment: &tick::TickDeployment,
        broker: &mut B,
        saved: Option<RunnerState>,
        equity: rust_decimal::Decimal,
        at: DateTime<Utc>,
    ) -> Result<FlattenOutcome, RunError> {
        let carried = saved.map(|s| tick::Carried {
            risk: s.risk,
            last_decision: s.last_decision,
            last_tick_at: s.last_tick_at,
        });
        let mut state =
            tick::restore_state_carried(&self.store, deployment, equity, at, carried).await?;
        let carry =
            |broker: &B, after: &TickState| serde_json::to_value(RunnerState::after(broker, after));
        Ok(tick::run_flatten(
            deployment,
            broker,
            &mut state,
            &self.store,
            at,
            Some(&carry),
        )
        .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_backoff_doubles_up_to_its_cap() {
        let mut config = RunnerConfig::new("t");
        config.retry_after = chrono::Duration::seconds(30);
        config.flatten_retry_max = chrono::Duration::minutes(10);
        let now = DateTime::<Utc>::UNIX_EPOCH;
        let delays: Vec<i64> = [1, 2, 3, 5, 6, 50, u32::MAX]
            .into_iter()
            .map(|n| (flatten_retry_at(&config, now, n) - now).num_seconds())
            .collect();
        assert_eq!(delays, vec![30, 60, 120, 480, 600, 600, 600]);
    }
}
