//! The tick loop: lease due deployments, tick each one concurrently, release with the next bar
//! close.
//!
//! One loop iteration claims at most as many deployments as there are free slots (a
//! [`Semaphore`](tokio::sync::Semaphore) of `concurrency` permits), so a runner never holds a lease it cannot start.
//! Every claimed deployment ticks in its own task: a slow model delays only its own
//! deployment. While a tick runs, its lease is extended every third of the lease (heartbeat);
//! a runner that dies stops heartbeating, its leases expire and another runner claims them.
//!
//! A tick is executed at most once per (deployment, bar close): the store records a tick and
//! the runner state after it in one transaction, idempotently (`record_tick`), the state only
//! moves forward, and a deployment whose state already holds the due tick is released without
//! running it again.
//!
//! Reflection is off the tick path: a tick only checks the cadence; a due reflection is handed,
//! after the tick released its lease, to a worker of its own (at most
//! [`RunnerConfig::reflection_concurrency`] at once, one per deployment), which calls
//! [`tick::run_due_reflection`]. A slow or failed reflection never delays or fails a tick; a
//! shutdown waits for the reflections in flight; one lost with its process leaves nothing
//! stored, so the cadence finds it due again at the deployment's next tick.
//!
//! Controls: the claim takes active deployments only, and the status is read again just before
//! the tick, so a deployment paused or stopped after it was due does not tick (a tick already
//! running when the change arrives completes). A stop that asked for the positions to be closed
//! is a flatten the runners lease like a tick (`flatten`): one runner closes the positions
//! through the deployment's broker, records it, and a failure is retried with a bounded backoff.
//!
//! Files: the runner's configuration and shared parts (here), the claim loop (`tick_loop`),
//! one deployment's tick (`deployment`), a stopped deployment's flatten (`flatten`), the market
//! data it fetches (`market`), the closed bars every tick shares (`candles`), the parsed
//! skills it keeps (`skills`), the deployments' MCP servers it keeps running (`mcp_servers`),
//! the news feeds it polls (`news`) and the reflection worker (`reflections`).

pub mod candles;
mod deployment;
mod flatten;
pub(crate) mod market;
mod mcp_servers;
mod news;
mod reflections;
pub(crate) mod skills;
mod tick_loop;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_runtime::{LanguageModel, ModelError, builtin_model};
use chrono::{DateTime, Utc};
use db::{DbError, Store};
use execution_engine::BrokerError;
use hyperliquid::{ClientConfig, HlError, InfoClient};
use skill_schema::Skill;
use tick::{BrokerUnavailable, TickOutcome};
use types::Clock;
use uuid::Uuid;

pub use self::candles::{MarketFeed, WsFeed};
pub use self::flatten::flatten_retry_at;
pub use self::news::NewsFeeds;
pub use self::reflections::ReflectionJob;
use self::skills::SkillCache;
use crate::hl_broker::HlBrokerError;
use crate::metrics::Metrics;
use crate::state::StateError;

/// Turns a model id (the skill's `model`, or its reflection model) into a model.
pub type ModelResolver =
    Arc<dyn Fn(&str, &Skill) -> Result<Arc<dyn LanguageModel>, ModelError> + Send + Sync>;

/// The production resolver: providers from the process environment, `builtin/…` offline
/// models.
#[must_use]
pub fn default_resolver() -> ModelResolver {
    Arc::new(|id: &str, skill: &Skill| model_providers_resolve(id, skill))
}

fn model_providers_resolve(id: &str, skill: &Skill) -> Result<Arc<dyn LanguageModel>, ModelError> {
    providers::resolve_model(id, &providers::process_env, &|m: &str| {
        builtin_model(m, skill).ok_or_else(|| ModelError::UnknownModel(m.to_owned()))
    })
}

/// Reads an environment variable (the process environment in production; tests inject one).
pub use types::EnvLookup;

/// The process environment, shared.
#[must_use]
pub fn process_env() -> Arc<dyn EnvLookup> {
    Arc::new(types::process_env)
}

/// How the runner behaves.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// This process's lease owner name (unique per process).
    pub owner: String,
    /// Most ticks in flight at once.
    pub concurrency: usize,
    /// How long a claimed lease lasts without a heartbeat.
    pub lease_for: chrono::Duration,
    /// How often the loop looks for due deployments when idle.
    pub poll: Duration,
    /// When a failed tick is tried again; also the first wait before a failed flatten is tried
    /// again (doubled after each further failure, up to [`RunnerConfig::flatten_retry_max`]).
    pub retry_after: chrono::Duration,
    /// The longest wait between two attempts of a stopped deployment's flatten.
    pub flatten_retry_max: chrono::Duration,
    /// Process what is due now, then return.
    pub once: bool,
    /// Most reflections in flight at once (off the tick path; they never hold a tick slot).
    pub reflection_concurrency: usize,
    /// The tick budget: the model loop's deadline (a tick whose model has not answered by then
    /// ends as a model error, "deadline exceeded"). A tick still running at twice the budget is
    /// abandoned as failed (its lease is released for a retry, never extended past that).
    pub tick_budget: Duration,
    /// From how late a tick's start (after its bar closed) is alerted as `runner_lagging`
    /// (zero: never).
    pub lag_alert_after: chrono::Duration,
    /// How many model errors in a row are alerted as `model_error_streak` (0: never).
    pub model_error_streak: u32,
}

impl RunnerConfig {
    /// Defaults for `owner`: 8 ticks and 2 reflections at once, a 2-minute tick budget, a
    /// 4-minute lease (2× the tick budget), 5 s polling, a failed tick retried after 30 s, a
    /// failed flatten after 30 s, 1, 2, 4, 8 then every 10 minutes; a tick starting 5 minutes
    /// or more after its bar close and 3 model errors in a row alerted.
    #[must_use]
    pub fn new(owner: impl Into<String>) -> Self {
        RunnerConfig {
            owner: owner.into(),
            concurrency: 8,
            lease_for: chrono::Duration::minutes(4),
            poll: Duration::from_secs(5),
            retry_after: chrono::Duration::seconds(30),
            flatten_retry_max: chrono::Duration::minutes(10),
            once: false,
            reflection_concurrency: 2,
            tick_budget: Duration::from_secs(120),
            lag_alert_after: chrono::Duration::minutes(5),
            model_error_streak: 3,
        }
    }
}

/// The most connections a runner's PostgreSQL pool opens when `run --db-pool` is not given.
pub const DEFAULT_POOL_CAP: u32 = 32;

/// The connections a runner's pool opens unless told otherwise: one per tick and per
/// reflection in flight, plus 4 for the claim loop, the alert worker, the news poller and the
/// outcome scorer — at most [`DEFAULT_POOL_CAP`].
///
/// A tick holds a connection only while one of its statements or its record transaction runs,
/// never while its model answers, so ticks waiting on models need none; the cap keeps a few
/// runners, `serve` and the operator's commands within PostgreSQL's default of 100 connections,
/// and past a few connections per database core more connections add contention, not
/// throughput.
#[must_use]
pub fn default_pool_size(concurrency: usize, reflection_concurrency: usize) -> u32 {
    let wanted = concurrency
        .saturating_add(reflection_concurrency)
        .saturating_add(4);
    u32::try_from(wanted).map_or(DEFAULT_POOL_CAP, |n| n.min(DEFAULT_POOL_CAP))
}

/// A lease owner name unique to this process: `hostname:pid:uuid`.
#[must_use]
pub fn process_owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned());
    format!("{host}:{}:{}", std::process::id(), Uuid::new_v4())
}

/// Why a runner cannot start or a tick failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The store is not PostgreSQL (the runner needs its leases and row locks).
    #[error("live-runner needs PostgreSQL (leases, runner state); got a {0} store")]
    NotPostgres(&'static str),
    /// The tick was still running at twice the tick budget and was abandoned (as a crash would
    /// leave it; the retry resumes from the store).
    #[error("the tick was still running after {} s (twice the tick budget) and was abandoned", after.as_secs())]
    Abandoned {
        /// How long it ran.
        after: Duration,
    },
    /// A store read or write failed.
    #[error("store: {0}")]
    Db(#[from] DbError),
    /// The stored runner state could not be decoded.
    #[error(transparent)]
    State(#[from] StateError),
    /// A stored skill version's body does not parse or validate as a skill.
    #[error("skill {skill_id} v{version}: the stored body is not a valid skill: {message}")]
    Skill {
        /// The skill.
        skill_id: Uuid,
        /// The version whose body failed.
        version: i32,
        /// Every problem the loader found.
        message: String,
    },
    /// The skill's model could not be resolved (unknown id, missing API key, ...).
    #[error("model {model}: {source}")]
    Model {
        /// The model id.
        model: String,
        /// The resolver's error.
        #[source]
        source: ModelError,
    },
    /// The tick's bars could not be read from Hyperliquid.
    #[error("Hyperliquid candles of {symbol} {interval}: {source}")]
    Market {
        /// The symbol.
        symbol: String,
        /// The interval, e.g. `1h`.
        interval: &'static str,
        /// The exchange client's error.
        #[source]
        source: HlError,
    },
    /// The deployment's broker config (or the saved broker state) is missing or invalid.
    #[error("deployment {deployment}: broker config: {message}")]
    BrokerConfig {
        /// The deployment.
        deployment: Uuid,
        /// What is wrong.
        message: String,
    },
    /// The deployment's Hyperliquid broker could not be built (key, account, client).
    #[error("deployment {deployment}: Hyperliquid broker: {source}")]
    Exchange {
        /// The deployment.
        deployment: Uuid,
        /// Why.
        #[source]
        source: HlBrokerError,
    },
    /// The broker's account could not be read.
    #[error(transparent)]
    BrokerUnavailable(#[from] BrokerUnavailable),
    /// The paper broker refused its config, a price update or an order.
    #[error("paper broker: {0}")]
    Broker(#[from] BrokerError),
    /// The tick state could not be rebuilt from the store.
    #[error("restoring the tick state: {0}")]
    Restore(#[from] tick::RestoreError),
    /// A MCP server of the deployment's skill could not be started.
    #[error("deployment {deployment}: {source}")]
    Mcp {
        /// The deployment.
        deployment: Uuid,
        /// Which server, its command and why.
        #[source]
        source: mcp::McpError,
    },
    /// The tick itself failed (nothing of it was recorded).
    #[error("tick: {0}")]
    Tick(#[from] tick::TickError),
}

/// What happened to one claimed deployment.
#[derive(Debug)]
pub enum Done {
    /// The tick ran (`outcome.recorded` false: the store already held it). A due reflection
    /// comes with what it needs to run on the reflection worker.
    Ticked {
        /// What the tick did.
        outcome: Box<TickOutcome>,
        /// When the deployment is due next: the next bar close.
        next: DateTime<Utc>,
        /// The reflection the tick found due, if any.
        reflection: Option<Box<ReflectionJob>>,
    },
    /// The runner state already holds the due tick: nothing ran.
    AlreadyDone {
        /// When the deployment is due next: the next bar close.
        next: DateTime<Utc>,
    },
}

/// A runner process's shared parts.
pub struct Runner {
    store: Store,
    info: InfoClient,
    /// The closed bars every tick reads, per (symbol, interval).
    candles: Arc<candles::CandleCache>,
    clock: Arc<dyn Clock>,
    resolver: ModelResolver,
    metrics: Metrics,
    config: RunnerConfig,
    env: Arc<dyn EnvLookup>,
    exchange_http: ClientConfig,
    /// Parsed and validated skills by (skill id, version).
    skills: Mutex<SkillCache>,
    /// The deployments' started MCP servers (their child processes live here).
    mcp: mcp_servers::DeploymentServers,
    /// The news feeds polled, if any ([`Runner::with_news`]).
    news: Option<NewsFeeds>,
}

impl Runner {
    /// A runner over a PostgreSQL `store` (migrated by [`db::connect`]: the runner-state table
    /// is one of the store's).
    ///
    /// # Errors
    /// [`RunError::NotPostgres`] for a SQLite store.
    pub async fn new(
        store: Store,
        info: InfoClient,
        clock: Arc<dyn Clock>,
        resolver: ModelResolver,
        metrics: Metrics,
        config: RunnerConfig,
    ) -> Result<Self, RunError> {
        if let Store::Sqlite(_) = &store {
            return Err(RunError::NotPostgres(store.backend_name()));
        }
        Ok(Runner {
            store,
            candles: candles::CandleCache::rest(info.clone(), metrics.clone()),
            info,
            clock,
            resolver,
            metrics,
            config,
            env: process_env(),
            exchange_http: ClientConfig::new(hyperliquid::MAINNET_URL),
            skills: Mutex::new(SkillCache::new(skills::CAPACITY)),
            mcp: mcp_servers::DeploymentServers::default(),
            news: None,
        })
    }

    /// Reads the exchange deployments' private keys through `env` instead of the process
    /// environment.
    #[must_use]
    pub fn with_env(mut self, env: Arc<dyn EnvLookup>) -> Self {
        self.env = env;
        self
    }

    /// Where the ticks' closed bars come from: `candleSnapshot` alone (the default), or the
    /// WebSocket feed with REST backfill and gap repair. Call within a tokio runtime (the
    /// feed starts on it).
    #[must_use]
    pub fn with_market_feed(mut self, feed: MarketFeed) -> Self {
        self.candles = candles::CandleCache::new(self.info.clone(), self.metrics.clone(), feed);
        self
    }

    /// Timeouts and retries of the exchange deployments' Hyperliquid clients (the base URL
    /// comes from each deployment's config).
    #[must_use]
    pub fn with_exchange_http(mut self, http: ClientConfig) -> Self {
        self.exchange_http = http;
        self
    }

    /// The runner's metrics (shared with its `/metrics` endpoint).
    #[must_use]
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// This process's lease owner name.
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.config.owner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pool_follows_the_work_in_flight_up_to_its_cap() {
        // The defaults: 8 ticks, 2 reflections.
        assert_eq!(default_pool_size(8, 2), 14);
        assert_eq!(default_pool_size(1, 1), 6);
        assert_eq!(default_pool_size(26, 2), DEFAULT_POOL_CAP);
        assert_eq!(default_pool_size(500, 2), DEFAULT_POOL_CAP);
        assert_eq!(default_pool_size(usize::MAX, usize::MAX), DEFAULT_POOL_CAP);
    }
}
